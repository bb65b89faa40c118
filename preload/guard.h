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

/*
 * A descriptor's first call, a window of bytes moved, or bytes at a known
 * offset the fast path could not settle.
 */
void uo_note_slow(int fd, unsigned dir, uint64_t at, uint64_t len);
/*
 * The program is about to close fd: advise its stream's tail (and print
 * the stats if fd is theirs); its slot and quiet mark are forgotten.
 */
void uo_note_closing(int fd);
/* fd now names another open file (dup2, dup3): its slot and quiet mark are forgotten. */
void uo_note_forget(int fd);
/*
 * fd was just opened while the process streams a tree in 'dir' (read only
 * for UO_READ; for UO_WRITE, with O_CREAT or O_TRUNC, 'fresh' when the open
 * itself made it new: O_TRUNC, or O_CREAT | O_EXCL).
 */
void uo_note_opened(int fd, unsigned dir, bool fresh);
/* fd was made as a temporary file (mkstemp and its kin, tmpfile, O_TMPFILE). */
void uo_note_temp(int fd);
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

/* Bit (1 << dir): is the process streaming a tree of files that way?  Opens matter only then. */
unsigned uo_tree_streaming(void);

/*
 * Called by every hook that moved bytes, so it must cost next to nothing:
 * a read of cached data is a few hundred nanoseconds.  Bytes moved at the
 * cursor are only counted here, in one pass: the slot is found, the count
 * added and compared with where the guard looks next (UO_FIRST_LOOK bytes
 * in, then a window of bytes later each time: uo_note_slow).  Touches no
 * errno and makes no system call.  Descriptors the guard ignores seldom
 * come here: their hooks pass them by (uo_pass).
 */
static inline bool uo_note_fast(int fd, unsigned dir, uint64_t at, uint64_t *len)
{
	struct uo_slot *s = uo_slot_peek(fd);

	if (at == UO_UNKNOWN) {
		if (UO_LIKELY(s != NULL)) {
			/*
			 * A plain add, not a locked one (which cost a cached 4 KiB
			 * read 2-3% of its time): two threads racing on one
			 * descriptor may lose or revive a count, which only moves
			 * the next look at the cursor by a window.  The count is a
			 * hint; the policy works on positions.
			 */
			uint64_t n = atomic_load_explicit(&s->counted[dir], memory_order_relaxed) + *len;

			atomic_store_explicit(&s->counted[dir], n, memory_order_relaxed);
			if (UO_LIKELY(n < atomic_load_explicit(&s->look, memory_order_relaxed) +
					  UO_FIRST_LOOK))
				return false;
			/* Bytes already counted in the slot are not passed again. */
			*len = 0;
		}
	} else if (s && uo_slot_lock(s)) {
		struct uo_event ev = { .end = at + *len, .len = *len, .dir = (uint8_t)dir };
		bool quiet = uo_observe_quiet(&s->st, &uo_config.tuning, &ev);

		uo_slot_unlock(s);
		if (quiet)
			return false;
	}
	return true;
}

static inline void uo_note(int fd, unsigned dir, uint64_t at, uint64_t len)
{
	if (uo_note_fast(fd, dir, at, &len))
		uo_note_slow(fd, dir, at, len);
}

/*
 * The same for a hook about to return r: the slow path is its last call,
 * so that it keeps no frame to hold r across it.
 */
int64_t uo_note_slow_ret(int fd, unsigned dir, uint64_t at, uint64_t len, int64_t r);

#define UO_NOTE_RET(ret, fd, dir, at, len, r)					\
	do {									\
		uint64_t uo_len_ = (len);					\
		if (uo_note_fast((fd), (dir), (at), &uo_len_))			\
			return (ret)uo_note_slow_ret((fd), (dir), (at), uo_len_, (int64_t)(r)); \
		return (r);							\
	} while (0)

/*
 * Before the call: can the hook hand it to libc whole (a tail call, with
 * nothing left to do after it)?  Yes when the guard ignores the descriptor
 * (/dev/null, a pipe, a tty: known after UO_FIRST_LOOK bytes for
 * descriptors 0, 1 and 2, at their first window for others).  Calls on files are counted
 * after the call, by what they moved: a count made from what was asked
 * (reads at the end of a file, calls that failed) put a run's start before
 * where the program began, and dropped pages nobody read.
 */
static inline bool uo_pass(int fd)
{
	return uo_fd_quiet(fd);
}

#endif /* UO_GUARD_H */
