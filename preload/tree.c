/*
 * Tree mode, the plumbing.  Many files read whole one after the other
 * (tar c, rsync, cp -r) are each too small to be a stream and together
 * flood the cache as surely; the policy's uo_tree_closed says when a
 * process is doing that.  Then each such file is dropped when closed,
 * unless some of it was cached when it was opened.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "advise.h"
#include "classify.h"
#include "config.h"
#include "policy.h"
#include "record.h"
#include "sys.h"
#include "trace.h"
#include "tree.h"

static struct uo_tree uo_tree;
/*
 * Who is updating uo_tree: 0 or a process id.  A pid, not a flag: a process
 * forked while one of its parent's threads held it finds the parent's pid
 * there, which no thread of its own will ever clear, and takes it over.
 */
static _Atomic int32_t uo_tree_owner;
_Atomic bool uo_tree_on;

static bool uo_tree_lock(void)
{
	int32_t self = uo_getpid(), seen = 0;

	if (atomic_compare_exchange_strong_explicit(&uo_tree_owner, &seen, self,
						    memory_order_acquire, memory_order_relaxed))
		return true;
	/* Busy in this process (another thread, or the code a signal interrupted). */
	if (seen == self)
		return false;
	return atomic_compare_exchange_strong_explicit(&uo_tree_owner, &seen, self,
						       memory_order_acquire, memory_order_relaxed);
}

/* The descriptor is new, whatever its slot remembers. */
void uo_tree_opened(int fd, struct uo_slot *s)
{
	int64_t pages;

	uo_slot_clear(s);
	pages = uo_cached_pages(fd);
	s->opened = pages == 0 ? UO_OPENED_COLD : pages > 0 ? UO_OPENED_CACHED : UO_OPENED_UNKNOWN;
}

/*
 * A descriptor that read a small file whole, front to back, and nothing
 * else: one more file of a tree?  Costs two system calls, only for files
 * of 64 KiB or more read at the cursor.
 */
void uo_tree_closing(int fd, struct uo_slot *s)
{
	uint64_t reads = atomic_load_explicit(&s->counted[UO_READ], memory_order_relaxed);
	struct uo_file f;
	const char *why;
	uint64_t now;
	bool on;

	if (!(uo_config.tuning.guard & UO_GUARD_READ) || s->st.state != UO_NEW ||
	    reads < UO_TREE_MIN || reads >= uo_config.tuning.window ||
	    atomic_load_explicit(&s->counted[UO_WRITE], memory_order_relaxed))
		return;
	if (uo_fstat(fd, &f) != 0 || !S_ISREG(f.mode) || f.size != reads ||
	    uo_cursor(fd) != (int64_t)f.size || !uo_clock_ms(CLOCK_MONOTONIC, &now))
		return;
	if (!uo_tree_lock())
		return;
	on = uo_tree_closed(&uo_tree, now);
	atomic_store_explicit(&uo_tree_owner, 0, memory_order_release);
	if (on != atomic_load_explicit(&uo_tree_on, memory_order_relaxed)) {
		atomic_store_explicit(&uo_tree_on, on, memory_order_relaxed);
		uo_trace(fd, on ? "tree mode: many files read whole, one after the other"
			 : "tree mode over", NULL);
	}
	if (!on || s->opened != UO_OPENED_COLD)
		return;
	why = uo_path_rule(fd);
	if (why) {
		uo_trace(fd, "tree file left alone", why);
		return;
	}
	/* A data loader reads the same files on every pass: the second time, they stay. */
	if (uo_record_streamed_again(&f)) {
		uo_trace(fd, "tree file left to the kernel's cache", "read again within USEONCE_REUSE");
		return;
	}
	uo_drop_tree_file(fd, f.size);
}
