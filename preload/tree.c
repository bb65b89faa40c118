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
 *   ends first they are forgotten (policy.h, UO_TREE_EARLY_*); so is one
 *   read whole and cold before it, dropped at once when the run becomes a
 *   tree within UO_TREE_GAP_MS of its close (behind.c says with what checks);
 * - a file opened inside a tree becomes a stream after a window instead of
 *   the stream threshold (uo_tree_threshold), so no size from UO_TREE_MIN
 *   up is left to nobody;
 * - the processes of one parent share their run (find -exec cp, xargs -n1,
 *   a shell loop over files: each process moves one file and exits), and
 *   what the deferred drop could not finish before a process exited is
 *   handed to the next: see "Siblings" below.
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
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "advise.h"
#include "behind.h"
#include "classify.h"
#include "config.h"
#include "fdtab.h"
#include "policy.h"
#include "record.h"
#include "sys.h"
#include "trace.h"
#include "tree.h"
#include "userdir.h"

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

/*
 * The memory the process may use, asked once a run passes a window: a
 * process that moves less reads no cgroup file.  A reader is asked no
 * other way before its threshold (a writer at its first look, 2 MiB in),
 * and cat, cp's source and tar's in a 256 MiB cgroup kept 32 MiB each
 * before they were streams.
 */
static uint64_t uo_tree_memory(const struct uo_slot *s, const struct uo_tuning *t)
{
	uint64_t mem = uo_memory_known();

	if (!mem && s->st.state == UO_TRACKING && s->st.positioned &&
	    s->st.next - s->st.run_start >= t->window)
		mem = uo_memory_size();
	return mem;
}

const struct uo_tuning *uo_tree_tuning(const struct uo_slot *s, struct uo_tuning *buf)
{
	const struct uo_tuning *t = &uo_config.tuning;
	uint64_t threshold = uo_memory_threshold(t, uo_tree_memory(s, t));

	/*
	 * A window inside a tree: reads only, since a write stream's close
	 * waits for its tail (advise.c), which many files of a tree would
	 * each pay; written files of a tree below the threshold get their
	 * writeback started at close instead.
	 */
	if (s->tree_dir == UO_READ + 1 && t->window && t->window < threshold)
		threshold = t->window;
	if (threshold == t->threshold)
		return t;
	*buf = *t;
	buf->threshold = threshold;
	return buf;
}

/*
 * Siblings.  A process that copies one file and exits never builds a run
 * of its own, and the one file it wrote is still being written back at
 * its exit, where its deferred drop leaves it.  So the processes of one
 * parent (known by its pid and start time: a pid used again is another
 * parent) share, through the per-user record (record.c):
 * - at the first close of a file moved whole (UO_TREE_MIN or more), the
 *   run the parent's last process left, both directions, is continued
 *   (policy.h, uo_tree_share_get: within UO_TREE_GAP_MS, checked), and the
 *   written files it handed over join this process's deferred drop, to be
 *   looked at again with every check of behind.c (same inode and size,
 *   not held, not locked, not read since written, on a local disk, clean,
 *   no writeback error on a description of our own);
 * - at exit, after the deferred drop's last look, this process's runs and
 *   the written files still in flight are left there for the next one, if
 *   it is a short process (policy.h, UO_SIBLING_FILES: tar x followed by
 *   a build is two runs, not one).
 * A process that sees a writeback fail hands a mark instead of files: its
 * siblings then drop no written page and ask for no error (advise.c), as
 * one process would.  A process that moves no file of UO_TREE_MIN whole
 * pays nothing for this; one that does pays about 35 system calls, at its
 * first such close (the parent's start time, the record's block) and at
 * exit (the block written back).
 *
 * Writeback errors across processes: the error check opens a description
 * after the writer's descriptor is gone.  The kernel reports an error no
 * one has seen to a description opened after it, so a failure nobody
 * asked about is found, and the pages kept.  One that someone else saw
 * (an fsync from another process between the writer's exit and the look)
 * is not reported to a new description: the pages are then dropped as the
 * kernel's own reclaim may drop them at any time (they are clean), and
 * the error went to whoever asked.  That window was there already inside
 * one process; here it is as long as the gap to the next sibling, at most
 * UO_TREE_GAP_MS.
 */
static struct {
	uint64_t owner;		/* the parent, hashed; 0: none, or not asked yet */
	int32_t pid;		/* the process that asked: a forked child shares nothing */
	bool asked;
	_Atomic unsigned taken;	/* sound entries at the front of 'block', not taken yet */
	struct uo_record_sibling block;	/* static: 8 KiB is too much for the program's stack */
} uo_sib;

/*
 * The parent, by pid and start time (/proc/PPID/stat), or the shell's
 * parent for a shell run for one command (policy.h, uo_sib_through_shell:
 * its cmdline read too, for a shell only); 0 if it cannot be told.
 */
static uint64_t uo_sib_parent(void)
{
	long ppid = uo_sys(SYS_getppid), grand, sid, up, usid, n;
	uint64_t start, gstart, h;
	char comm[UO_COMM_MAX], cmd[256];

	/* Orphans and the children of init have no siblings worth a run. */
	if (ppid <= 1 || !uo_proc_stat_comm((uint32_t)ppid, &grand, &sid, &start, comm))
		return 0;
	if (grand > 1 && uo_is_shell(comm)) {
		n = uo_proc_cmdline((uint32_t)ppid, cmd, sizeof(cmd));
		if (n > 0 && uo_sib_through_shell(comm, cmd, (size_t)n) &&
		    uo_proc_stat((uint32_t)grand, &up, &usid, &gstart)) {
			ppid = grand;
			start = gstart;
		}
	}
	h = uo_mix(uo_mix(0x7369626c696e6773ULL, (uint64_t)ppid), start);
	return h ? h : 1;
}

/*
 * Lock held: the first file of UO_TREE_MIN moved whole continues the run
 * the parent's last process left.  The files it handed are taken after
 * the lock is released (uo_sib_take).
 */
static void uo_sib_ask(uint64_t now_ms)
{
	struct uo_record_sibling *b = &uo_sib.block;
	bool failed = false;
	unsigned dir, i, n;

	uo_sib.asked = true;
	uo_sib.pid = (int32_t)uo_sys(SYS_getpid);
	uo_sib.owner = uo_sib_parent();
	if (!uo_sib.owner || !uo_record_sibling_take(uo_sib.owner, b))
		return;
	for (dir = UO_READ; dir <= UO_WRITE; dir++) {
		if (!(uo_config.tuning.guard & (1u << dir)) ||
		    !uo_tree_share_get(&uo_trees.run[dir], &uo_config.tuning, &b->run[dir], dir,
				       uo_sib.owner, now_ms) || !uo_trees.run[dir].on)
			continue;
		atomic_fetch_or_explicit(&uo_tree_on, 1u << dir, memory_order_relaxed);
	}
	/* Sound entries are packed at the front of the block, for uo_sib_take. */
	for (i = 0, n = 0; i < UO_HANDOFF_FILES; i++) {
		if (!uo_handoff_sound(&b->files[i], uo_sib.owner, now_ms))
			continue;
		if (b->files[i].flags & UO_HANDOFF_FAILED)
			failed = true;
		else
			b->files[n++] = b->files[i];
	}
	if (failed)
		uo_writeback_failure_heard();
	else if (uo_config.tuning.guard & (1u << UO_WRITE))
		atomic_store_explicit(&uo_sib.taken, n, memory_order_relaxed);
}

static void uo_sib_take(int fd)
{
	/* Once, by whichever thread closes a file first after the ask. */
	unsigned n = atomic_load_explicit(&uo_sib.taken, memory_order_relaxed) ?
		     atomic_exchange_explicit(&uo_sib.taken, 0, memory_order_relaxed) : 0;

	if (!n)
		return;
	uo_trace(fd, "written files of the parent's last process join the deferred drop", NULL);
	uo_behind_take(uo_sib.block.files, n);
	/* The run is a tree already: the candidates handed are files of it (writeback started). */
	if (atomic_load_explicit(&uo_tree_on, memory_order_relaxed) & (1u << UO_WRITE))
		uo_behind_adopt();
}

void uo_tree_exit(void)
{
	struct uo_record_sibling *b = &uo_sib.block;
	uint64_t now;
	unsigned n, i, dir;

	/* A vfork child calling exit() must not act for its parent. */
	if (!uo_sib.owner || uo_config.disabled || uo_fdtab_borrowed() ||
	    (int32_t)uo_sys(SYS_getpid) != uo_sib.pid || !uo_clock_ms(CLOCK_MONOTONIC, &now))
		return;
	memset(b, 0, sizeof(*b));
	if (!uo_try_own(&uo_tree_owner))
		return;
	for (dir = UO_READ; dir <= UO_WRITE; dir++)
		uo_tree_share_put(&b->run[dir], &uo_trees.run[dir], dir, uo_sib.owner);
	uo_release(&uo_tree_owner);
	if (uo_writeback_failure_seen()) {
		n = 1;
		b->files[0].flags = UO_HANDOFF_FAILED;
	} else if (b->run[UO_WRITE].owner) {
		/* Only a short process's run is shared, and with it its files. */
		n = uo_behind_hand(b->files, UO_HANDOFF_FILES, now);
	} else {
		n = 0;
	}
	for (i = 0; i < n; i++) {
		b->files[i].owner = uo_sib.owner;
		b->files[i].handed_ms = now;
		uo_handoff_seal(&b->files[i]);
	}
	uo_record_sibling_put(uo_sib.owner, b);
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
 * kernel's cache (policy.h, uo_behind_room; only for a process under no
 * memory limit, advise.c uo_memory_free): a sysinfo per file, where the
 * deferred drop would cost a dozen system calls.  Its writeback was started all the same.  Once memory was
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

/* The files read before the run was a tree: remembered, forgotten, or dropped now. */
static void uo_tree_first_reads(int fd, const struct uo_file *f, uint8_t opened,
				const struct uo_tree_advice *adv, uint64_t now_ms)
{
	/*
	 * A candidate the program read again, from the cache: it uses the
	 * file, and where access times move once a day (relatime) nothing
	 * else would tell.
	 */
	if (opened != UO_OPEN_COLD)
		uo_behind_early_read_again(f);
	if (adv->early == UO_TREE_EARLY_KEEP && !uo_path_rule(fd))
		uo_behind_early_read(fd, f, adv->early_forget, now_ms);
	else if (adv->early_forget)
		uo_behind_early_reads_forget();
	if (adv->early == UO_TREE_EARLY_ADOPT)
		uo_behind_adopt_reads(now_ms);
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
	/* Opened before the run was a tree (find -exec cp's one source): the head probe tells. */
	if (tf.dir == UO_READ && !s->tree_dir && tf.opened == UO_OPEN_UNKNOWN)
		tf.opened = (uint8_t)uo_opened_by_head_probe(&s->st, f.size);
	tf.streamed = streamed;
	if (!uo_try_own(&uo_tree_owner))
		return;
	/* Asked at the first step of a run only: a file read in part asks nothing. */
	if (!uo_sib.asked && !uo_config.dryrun && tf.whole && tf.moved == tf.size)
		uo_sib_ask(tf.now_ms);
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
	uo_sib_take(fd);
	/* A write run that ended, or begins: memory is asked again. */
	if (tf.dir == UO_WRITE && (adv.early_forget || (adv.changed && !on)))
		atomic_store_explicit(&uo_tree_short, 0, memory_order_relaxed);
	if (tf.dir == UO_READ) {
		uo_tree_first_reads(fd, &f, tf.opened, &adv, tf.now_ms);
	} else if (adv.early == UO_TREE_EARLY_KEEP) {
		/* The files written before the run was a tree: forgotten, or to be dropped too. */
		/* (A path rule's readlink is paid only where the config has rules.) */
		if (!uo_path_rule(fd))
			uo_behind_early(fd, &f, adv.early_forget);
		else if (adv.early_forget)
			uo_behind_early_forget();
		return;
	}
	if (adv.early_forget && tf.dir == UO_WRITE)
		uo_behind_early_forget();
	if (adv.early == UO_TREE_EARLY_ADOPT && tf.dir == UO_WRITE) {
		/* Written into memory nobody used: they stay, as the file closed now. */
		if (adv.verdict == UO_TREE_BEHIND && uo_tree_room(fd, &f))
			uo_behind_early_forget();
		else
			uo_behind_adopt();
	}
	/*
	 * A stream's pages were advised as it moved and at its close.  But a
	 * new file of a written tree that was a stream (past a window or the
	 * threshold: cp of a big file in find -exec cp, cp -r) leaves its tail
	 * still being written back at its close, where nothing can drop it:
	 * it waits in the deferred drop too (its closing advice, just after
	 * this, starts that writeback).  Its other pages went as it moved,
	 * whatever memory was free, so its tail goes too.
	 */
	if (streamed && adv.verdict == UO_TREE_BEHIND && !uo_path_rule(fd)) {
		uo_behind_closing(fd, &f);
		return;
	}
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
