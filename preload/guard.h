/*
 * The guard: from what a hook saw to advice applied.  The hooks call only
 * this; it runs the policy, asks the kernel what the policy wants to know
 * and hands the advice to advise.c.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_GUARD_H
#define UO_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "fdtab.h"
#include "policy.h"

/* A window of bytes moved, or bytes at a known offset the fast path could not settle. */
void uo_note_slow(int fd, unsigned dir, uint64_t at, uint64_t len);
/* The program is about to close fd: advise its stream's tail (and print the stats if fd is theirs). */
void uo_note_closing(int fd);
/* fd now names another open file (dup2, dup3). */
void uo_note_forget(int fd);
/* fd was just opened for reading while the process streams a tree. */
void uo_note_opened(int fd);
/*
 * Before a descriptor's first read (or copy) of UO_HEAD_PROBE_MIN or more:
 * what is cached at the file's start, seen before the stream touches it.
 * 'off' is the read's offset, -1 for the file position.
 */
#define UO_HEAD_PROBE_MIN	(64u * 1024u)
void uo_note_head(int fd, int64_t off);
static inline bool uo_head_unprobed(const struct uo_slot *s)
{
	return !s || !atomic_load_explicit(&s->head_probed, memory_order_relaxed);
}

/* Is the process streaming a tree of files?  Opens matter only then. */
bool uo_tree_streaming(void);

/*
 * Called by every hook that moved bytes, so it must cost next to nothing:
 * a read of cached data is a few hundred nanoseconds.  Bytes moved at the
 * cursor are only counted here; the policy hears of them once a window of
 * them has passed.  Touches no errno and makes no system call.
 */
static inline void uo_note_slot(struct uo_slot *s, int fd, unsigned dir, uint64_t at,
				uint64_t len)
{
	/* /dev/null, a pipe, a tty, a file streamed again: nothing to do, ever. */
	if (s && atomic_load_explicit(&s->quiet, memory_order_relaxed))
		return;
	if (at == UO_UNKNOWN) {
		/*
		 * A plain add, not a locked one (which cost a cached 4 KiB read
		 * 2-3% of its time): two threads racing on one descriptor may
		 * lose or revive a count, which only moves the next look at the
		 * cursor by a window.  The count is a hint; the policy works on
		 * positions.
		 */
		if (s) {
			uint64_t n = atomic_load_explicit(&s->counted[dir], memory_order_relaxed) + len;

			atomic_store_explicit(&s->counted[dir], n, memory_order_relaxed);
			if (n < uo_config.tuning.window)
				return;
		}
	} else if (s && uo_slot_lock(s)) {
		struct uo_event ev = { .end = at + len, .len = len, .dir = (uint8_t)dir };
		bool quiet = uo_observe_quiet(&s->st, &uo_config.tuning, &ev);

		uo_slot_unlock(s);
		if (quiet)
			return;
	}
	/* Bytes already counted in the slot are not passed again. */
	uo_note_slow(fd, dir, at, at == UO_UNKNOWN && s ? 0 : len);
}

/*
 * Before the call: can the hook hand it to libc whole (a tail call, with
 * nothing left to do after it)?  Yes when the guard ignores the descriptor
 * (/dev/null, a pipe, a tty: marked quiet at its first window).  Calls on
 * files are counted after the call, by what they moved: a count made from
 * what was asked (reads at the end of a file, calls that failed) put a
 * run's start before where the program began, and dropped pages nobody
 * read.
 */
static inline bool uo_pass(int fd)
{
	struct uo_slot *s = uo_slot_peek(fd);

	return s && atomic_load_explicit(&s->quiet, memory_order_relaxed);
}

static inline void uo_note(int fd, unsigned dir, uint64_t at, uint64_t len)
{
	uo_note_slot(uo_slot_peek(fd), fd, dir, at, len);
}

#endif /* UO_GUARD_H */
