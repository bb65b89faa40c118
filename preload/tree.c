/*
 * Tree mode, the plumbing.  Many files moved whole one after the other
 * (cp -r, rsync, tar c, tar x) are each too small to be a stream and
 * together flood the cache as surely; the policy's uo_tree_file_closed
 * says when a process is doing that, per direction.  Then:
 * - a file read whole that was cold when opened is dropped when the
 *   program closes it, on the program's own descriptor, just before the
 *   real close;
 * - a file the program created or truncated and wrote whole has its
 *   writeback started at that close, again on the program's descriptor,
 *   without waiting and without dropping anything (advise.c says why);
 *   it is remembered by path, and dropped at a later close once written
 *   back (behind.c, the deferred drop);
 * - a file created or truncated and written whole before the run is known
 *   to be a tree is remembered too, by path (one readlink at its close);
 *   when the run becomes a tree those join the deferred drop, and when it
 *   ends first they are forgotten (policy.h, UO_TREE_EARLY_*);
 * - a file opened inside a tree becomes a stream after a window instead of
 *   the stream threshold (uo_tree_threshold), so no size from UO_TREE_MIN
 *   up is left to nobody.
 * Up to the program's close the library opens no descriptor of its own
 * here: one of ours, closed while the program's is open, would release the
 * program's POSIX locks on the file, and one kept would count against its
 * RLIMIT_NOFILE, clash with its dup2, keep unlinked files' space and keep
 * a filesystem busy (what took an earlier write-behind queue out again).
 * The deferred drop opens two, after the program closed the file, and
 * closes them before returning: behind.c says why that is different, and
 * what risks remain (watchers see the open, a dup2 racing in another
 * thread, a lease broken).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "advise.h"
#include "behind.h"
#include "classify.h"
#include "config.h"
#include "policy.h"
#include "record.h"
#include "sys.h"
#include "trace.h"
#include "tree.h"

static struct uo_trees uo_trees;
/* Who is updating uo_trees (sys.h, uo_try_own): never waited for, a busy rule skips one file. */
static _Atomic int32_t uo_tree_owner;
_Atomic unsigned uo_tree_on;

/* The descriptor is new, whatever its slot remembers. */
void uo_tree_opened(int fd, struct uo_slot *s, unsigned dir, bool fresh)
{
	struct uo_file f;
	int64_t pages;

	uo_slot_clear(s);
	s->tree_dir = (uint8_t)(dir + 1);
	if (dir == UO_WRITE) {
		/* Whatever was cached of an empty file, nobody's data is in it. */
		if (fresh || (uo_fstat(fd, &f) == 0 && S_ISREG(f.mode) && f.size == 0))
			s->opened = UO_OPEN_NEW;
		return;
	}
	pages = uo_cached_pages(fd);
	s->opened = pages == 0 ? UO_OPEN_COLD : pages > 0 ? UO_OPEN_CACHED : UO_OPEN_UNKNOWN;
}

const struct uo_tuning *uo_tree_tuning(const struct uo_slot *s, struct uo_tuning *buf)
{
	const struct uo_tuning *t = &uo_config.tuning;

	/*
	 * Reads only: a write stream's close waits for its tail (advise.c),
	 * which many files of a tree would each pay; written files of a tree
	 * below the threshold get their writeback started at close instead.
	 */
	if (s->tree_dir != UO_READ + 1 || !t->window || t->window >= t->threshold)
		return t;
	*buf = *t;
	buf->threshold = t->window;
	return buf;
}

/*
 * What the descriptor did, as the rule wants it: false if it moved data
 * both ways or not enough to be worth a system call.  Costs nothing for
 * descriptors that moved less than UO_TREE_MIN.
 */
static bool uo_tree_moved(const struct uo_slot *s, struct uo_tree_file *tf)
{
	uint64_t r = atomic_load_explicit(&s->counted[UO_READ], memory_order_relaxed);
	uint64_t w = atomic_load_explicit(&s->counted[UO_WRITE], memory_order_relaxed);

	if (s->st.state == UO_IGNORED)
		return false;
	if (s->st.state == UO_NEW) {
		if (r && w)
			return false;
		tf->dir = w ? UO_WRITE : UO_READ;
		tf->moved = w ? w : r;
		/* Nothing at known offsets reached the policy: only the cursor moved. */
		tf->whole = 1;
	} else {
		tf->dir = s->st.dir;
		if (tf->dir > UO_WRITE || (tf->dir == UO_READ ? w : r))
			return false;
		tf->moved = s->st.next + s->st.pending + (tf->dir == UO_READ ? r : w);
		/* One run from the file's start, front to back. */
		tf->whole = s->st.positioned && s->st.run_start == 0;
	}
	return tf->moved >= UO_TREE_MIN && (uo_config.tuning.guard & (1u << tf->dir));
}

/* Said in the trace; uo_tree_on was set with the rule's state, under its lock. */
static void uo_tree_mode(int fd, unsigned dir, bool on)
{
	if (dir == UO_READ)
		uo_trace(fd, on ? "tree mode: many files read whole, one after the other"
			 : "tree mode over (reads)", NULL);
	else
		uo_trace(fd, on ? "tree mode: many new files written whole, one after the other"
			 : "tree mode over (writes)", NULL);
}

/*
 * A written file of a tree that leaves memory mostly free is left to the
 * kernel's cache (policy.h, uo_behind_room): a sysinfo (and a read of the
 * cgroup's usage) per file, where the deferred drop would cost a dozen
 * system calls.  Its writeback was started all the same.  Once memory was
 * short in a write run it is not asked again until the run ends: the
 * tree's drops keep it about where it was, and a file dropped when room
 * came back meanwhile only costs a read from disk.
 */
static _Atomic unsigned uo_tree_short;

static bool uo_tree_room(int fd, const struct uo_file *f)
{
	if (atomic_load_explicit(&uo_tree_short, memory_order_relaxed))
		return false;
	if (!uo_behind_room(uo_memory_free(), uo_memory_size(), f->size)) {
		atomic_store_explicit(&uo_tree_short, 1, memory_order_relaxed);
		return false;
	}
	uo_trace(fd, "tree file left to the kernel's cache", "memory is mostly free");
	return true;
}

void uo_tree_closing(int fd, struct uo_slot *s, bool streamed)
{
	struct uo_tree_file tf = { 0 };
	struct uo_tree_advice adv;
	struct uo_file f;
	const char *why;
	int64_t pos;
	bool on;

	if (!uo_tree_moved(s, &tf))
		return;
	if (uo_fstat(fd, &f) != 0 || !S_ISREG(f.mode) || !uo_clock_ms(CLOCK_MONOTONIC, &tf.now_ms))
		return;
	/* Read or written at the cursor, it must have ended at the end: no seek back. */
	if (s->st.state == UO_NEW && ((pos = uo_cursor(fd)) < 0 || (uint64_t)pos != f.size))
		tf.whole = 0;
	tf.size = f.size;
	tf.opened = s->opened;
	tf.streamed = streamed;
	if (!uo_try_own(&uo_tree_owner))
		return;
	adv = uo_tree_file_closed(&uo_trees, &uo_config.tuning, &tf);
	on = uo_trees.run[tf.dir].on;
	/* Under the lock: two threads' changes reach the opens in the rule's order. */
	if (adv.changed) {
		if (on)
			atomic_fetch_or_explicit(&uo_tree_on, 1u << tf.dir, memory_order_relaxed);
		else
			atomic_fetch_and_explicit(&uo_tree_on, ~(1u << tf.dir), memory_order_relaxed);
	}
	uo_release(&uo_tree_owner);
	if (adv.changed)
		uo_tree_mode(fd, tf.dir, on);
	/* A write run that ended, or begins: memory is asked again. */
	if (tf.dir == UO_WRITE && (adv.early_forget || (adv.changed && !on)))
		atomic_store_explicit(&uo_tree_short, 0, memory_order_relaxed);
	/* The files written before the run was a tree: forgotten, or to be dropped too. */
	if (adv.early == UO_TREE_EARLY_KEEP) {
		/* (A path rule's readlink is paid only where the config has rules.) */
		if (!uo_path_rule(fd))
			uo_behind_early(fd, &f, adv.early_forget);
		else if (adv.early_forget)
			uo_behind_early_forget();
		return;
	}
	if (adv.early_forget)
		uo_behind_early_forget();
	if (adv.early == UO_TREE_EARLY_ADOPT) {
		/* Written into memory nobody used: they stay, as the file closed now. */
		if (adv.verdict == UO_TREE_BEHIND && uo_tree_room(fd, &f))
			uo_behind_early_forget();
		else
			uo_behind_adopt();
	}
	/* A stream's pages were advised as it moved and at its close. */
	if (adv.verdict == UO_TREE_LEAVE || streamed) {
		uo_behind_tick();
		return;
	}
	why = uo_path_rule(fd);
	if (why) {
		uo_trace(fd, "tree file left alone", why);
		return;
	}
	if (adv.verdict == UO_TREE_DROP) {
		/* A data loader reads the same files on every pass: the second time, they stay. */
		if (uo_record_streamed_again(&f)) {
			uo_trace(fd, "tree file left to the kernel's cache",
				 "read again within USEONCE_REUSE");
			return;
		}
		uo_drop_tree_file(fd, f.size);
		uo_behind_tick();
	} else if (adv.verdict == UO_TREE_BEHIND) {
		/* The rule's write-behind: started now, the drop once written is behind.c's. */
		uo_flush_tree_file(fd, f.size);
		if (!uo_tree_room(fd, &f))
			uo_behind_closing(fd, &f);
	}
}
