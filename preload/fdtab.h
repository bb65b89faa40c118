/*
 * Descriptor -> what the guard knows of it, without locks or malloc in the
 * I/O path (fdtab.c says how).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_FDTAB_H
#define UO_FDTAB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy.h"
#include "sys.h"

#define UO_LIKELY(x)	__builtin_expect(!!(x), 1)
#define UO_UNLIKELY(x)	__builtin_expect(!!(x), 0)

/* Descriptors at or above this are passed through untouched. */
#define UO_FDTAB_MAX	(1u << 20)
#define UO_FDTAB_CHUNK	256u

/*
 * A descriptor's first look comes after UO_FIRST_LOOK bytes at the cursor
 * (then after every window): few enough that /dev/null or a pipe written
 * by dd bs=4k is known after 16 calls, enough that a shell's redirected
 * builtins (a dup2, a write of a few bytes) never get there.
 */
#define UO_FIRST_LOOK	(64u * 1024u)

/*
 * A read stream whose cached pages we cannot see (another user's file) is
 * read with RWF_DONTCACHE (Linux 6.14): the kernel itself keeps what was
 * cached before and drops the rest.  Only for reads of 64 KiB or more:
 * 4 KiB reads ran at 250 MB/s with it against 348 MB/s without.
 */
#define UO_UNCACHED_OFF		0u
#define UO_UNCACHED_ON		1u
#define UO_UNCACHED_REFUSED	2u	/* the filesystem or kernel said no: never again here */
#define UO_UNCACHED_MIN		(64u * 1024u)

struct uo_slot {
	_Atomic uint64_t counted[2];	/* per uo_dir: bytes moved at the cursor, not yet given to the policy */
	_Atomic uint64_t look;	/* the guard looks when counted[] reaches UO_FIRST_LOOK + this */
	_Atomic uint32_t owner;	/* 1 while a hook works on the slot */
	_Atomic uint32_t stale;	/* closed while held: the next holder clears it */
	_Atomic uint32_t uncached; /* UO_UNCACHED_*: reads go through RWF_DONTCACHE */
	uint32_t kind_known;	/* its file type was checked (not a regular file: ignored) */
	uint8_t opened;		/* enum uo_opened: what the file was when opened in a tree */
	uint8_t tree_dir;	/* 1 + the enum uo_dir of the tree it was opened in; 0: none */
	uint8_t temp;		/* enum uo_temp: made as a temporary file (mkstemp, tmpfile...) */
	uint8_t temp_said;	/* the trace said it was left to the kernel */
	_Atomic uint32_t head_probed;	/* the file's head was probed before the first read */
	struct uo_file file;	/* what the file was when the descriptor became a stream */
	struct uo_stream st;
	uint64_t counted_to;	/* statistics: the stream's bytes are counted up to here */
	uint64_t drops_counted;	/* statistics: its drops are counted up to here */
	uint64_t unclean;	/* 1 + start of written ranges not dropped yet (uo_apply); 0: none */
	uint64_t step;		/* a writer's window beside others (uo_guard_step); 0: the window */
	uint8_t early_look;	/* a writer's first look comes a folio in (uo_guard_first) */
	uint8_t appends;	/* at that look it wrote at the file's end: may step a folio */
	/* The temporary file's inode and birth time: the number may name another file since. */
	uint64_t temp_ino;
	uint64_t temp_btime_ns;
};

extern _Atomic(struct uo_slot *) uo_fdtab_chunks[UO_FDTAB_MAX / UO_FDTAB_CHUNK];

/* The descriptor's slot, its chunk mapped if need be (NULL if that fails). */
struct uo_slot *uo_slot_get(int fd);
void uo_slot_clear(struct uo_slot *s);
/* Clear it now, or, if a hook holds it, when the next one takes it. */
void uo_slot_forget(struct uo_slot *s);
void uo_fdtab_forget_range(unsigned first, unsigned last);

/*
 * One byte per descriptor, apart from the slots: set while the guard
 * ignores the descriptor (/dev/null, a pipe, a tty, a file left to the
 * cache), so that its hooks pass it by after a load and a branch.  In
 * zeroed memory (.bss), touched a page at a time: 4096 descriptors a page.
 * Descriptors from UO_QUIET_MAX on are never quiet: their hooks count
 * every call, a few dozen instructions, and the guard looks once a window.
 * Unlike the slots it is kept in a forked child, whose descriptors name
 * the same files.  Cleared when the descriptor is closed, replaced or
 * opened again: by every hook that closes one (close, fclose, pclose,
 * close_range, closefrom, freopen) or makes one (the opens, dup, dup2,
 * dup3, fcntl F_DUPFD, creat, mkstemp and its kin, tmpfile, freopen), so
 * that a number closed behind the hooks' back (a raw system call, libc's
 * own close) is cleared when a new file takes it.  Calls that can only
 * make pipes, sockets or events are not hooked: those are ignored anyway.
 */
#define UO_QUIET_MAX	65536u
extern _Atomic uint8_t uo_fdtab_quiet[UO_QUIET_MAX];
/* Has any descriptor been quiet in this process (or the one it was forked from)? */
extern _Atomic uint8_t uo_fdtab_any_quiet;

static inline bool uo_fd_quiet(int fd)
{
	return (unsigned)fd < UO_QUIET_MAX &&
	       atomic_load_explicit(&uo_fdtab_quiet[(unsigned)fd], memory_order_relaxed);
}

static inline void uo_fd_set_quiet(int fd)
{
	if ((unsigned)fd < UO_QUIET_MAX) {
		atomic_store_explicit(&uo_fdtab_any_quiet, 1, memory_order_relaxed);
		atomic_store_explicit(&uo_fdtab_quiet[(unsigned)fd], 1, memory_order_relaxed);
	}
}

/*
 * The descriptor is closed or replaced (its slot is forgotten too), or new:
 * not quiet.  Called by every close, dup2 and open: a load and a branch in
 * a process where no descriptor was ever quiet.  Otherwise looked at only
 * where slots were made (only those can be quiet, but in a process the
 * guard leaves alone, where all are and stay so), so that no page of the
 * bytes is touched for nothing.  Returns its slot if it was quiet.
 */
static inline struct uo_slot *uo_fd_quiet_slot(int fd)
{
	struct uo_slot *chunk;

	if (UO_LIKELY(!atomic_load_explicit(&uo_fdtab_any_quiet, memory_order_relaxed)) ||
	    (unsigned)fd >= UO_QUIET_MAX)
		return NULL;
	chunk = atomic_load_explicit(&uo_fdtab_chunks[(unsigned)fd / UO_FDTAB_CHUNK],
				     memory_order_relaxed);
	if (!chunk || !atomic_load_explicit(&uo_fdtab_quiet[(unsigned)fd], memory_order_relaxed))
		return NULL;
	return &chunk[(unsigned)fd % UO_FDTAB_CHUNK];
}

static inline struct uo_slot *uo_fd_unquiet(int fd)
{
	struct uo_slot *s = uo_fd_quiet_slot(fd);

	if (s)
		atomic_store_explicit(&uo_fdtab_quiet[(unsigned)fd], 0, memory_order_relaxed);
	return s;
}

/*
 * A vfork child shares our memory, the table with it, but not our
 * descriptors: its close, dup2 or close_range end its own copies, while
 * ours go on naming the same files.  Those of its hooks that forget slots
 * or quiet marks (and the tree state, the statistics) must then leave them
 * alone, or every program that runs a command mid-copy (CPython's
 * subprocess closes all of its child's descriptors before exec) would
 * start its streams afresh each time.  True in such a child: the pid the
 * table was recorded for is not ours.  One system call, made only where a
 * hook is about to change the table, never in the read and write paths,
 * and, where vfork is hooked (UO_VFORK_HOOK), only in a process that has
 * called vfork.  Where nothing was recorded (the constructor's map failed,
 * a forked child that has not yet claimed the table), it cannot tell and
 * says false.  A child made by a raw clone(CLONE_VM) that runs our hooks is
 * not seen where vfork is hooked (posix_spawn's children run none).
 */
bool uo_fdtab_borrowed(void);

/*
 * x86-64: vfork is interposed by a stub (vfork.c) that tells the table,
 * then jumps to libc's vfork.  Elsewhere every check makes its system call.
 */
#if defined(__x86_64__)
#define UO_VFORK_HOOK	1
/* The process is about to vfork: called by the stub, in the parent. */
void uo_fdtab_vforking(void);
#endif
/* Maps the owner's page, this process's: called by the constructor. */
void uo_fdtab_start(void);
/*
 * In a forked child, records it as the table's owner (one system call,
 * once): called where the process cannot be a vfork child borrowing the
 * table, at a descriptor's first look.
 */
void uo_fdtab_claim(void);

/* uo_fd_opened's rare case, out of line. */
void uo_fdtab_reopened(int fd);

/*
 * A descriptor was just opened: a quiet one of that number was closed
 * behind the hooks' back (a raw system call, or inside libc), and what its
 * slot says of the old file is forgotten with it.
 */
static inline void uo_fd_opened(int fd)
{
	if (UO_UNLIKELY(uo_fd_quiet_slot(fd) != NULL))
		uo_fdtab_reopened(fd);
}

/* The slot of a descriptor that has moved data before, without creating one. */
static inline struct uo_slot *uo_slot_peek(int fd)
{
	struct uo_slot *chunk;

	if ((unsigned)fd >= UO_FDTAB_MAX)
		return NULL;
	chunk = atomic_load_explicit(&uo_fdtab_chunks[(unsigned)fd / UO_FDTAB_CHUNK],
				     memory_order_acquire);
	return chunk ? &chunk[(unsigned)fd % UO_FDTAB_CHUNK] : NULL;
}

/*
 * A try-lock that never waits: a hook that finds its slot busy (another
 * thread, or a signal handler that interrupted us) skips its bookkeeping.
 */
static inline bool uo_slot_lock(struct uo_slot *s)
{
	uint32_t free_ = 0;

	if (atomic_load_explicit(&s->owner, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong_explicit(&s->owner, &free_, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return false;
	if (UO_UNLIKELY(atomic_load_explicit(&s->stale, memory_order_relaxed))) {
		/* Closed while another hook held it: start afresh. */
		atomic_store_explicit(&s->stale, 0, memory_order_relaxed);
		uo_slot_clear(s);
	}
	return true;
}

static inline void uo_slot_unlock(struct uo_slot *s)
{
	atomic_store_explicit(&s->owner, 0, memory_order_release);
}

#endif /* UO_FDTAB_H */
