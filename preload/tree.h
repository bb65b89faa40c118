/*
 * Trees, the plumbing: a process (or a run of short processes of one
 * parent) that moves many files whole, one after the other, reading or
 * writing, is one stream (the rule is the policy's uo_tree_file_closed).
 * Called by the guard only.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_TREE_H
#define UO_TREE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "config.h"
#include "fdtab.h"
#include "policy.h"

/*
 * The tuning a descriptor moving data in 'dir' is judged with: the
 * config's, but for the stream threshold, a window inside a tree.  NULL:
 * the config's.  Read in the hooks' inline path: one load.
 */
extern _Atomic(const struct uo_tuning *) uo_tree_tuned[2];

static inline const struct uo_tuning *uo_tree_tuning(unsigned dir)
{
	const struct uo_tuning *t = atomic_load_explicit(&uo_tree_tuned[dir & 1],
							 memory_order_acquire);

	return t ? t : &uo_config.tuning;
}

/* fd was just opened with 'flags' (the slot is not held). */
void uo_tree_opened(int fd, int flags);
/* A descriptor is being closed (slot held, before it is cleared): one more file of a tree? */
void uo_tree_closing(int fd, struct uo_slot *s);
/*
 * A write stream was closed, its closing advice applied (slot held): what
 * its writeback had not ended for stays cached.  Of a file the descriptor
 * created (zstd -o: 6% of an archive of a tree), it is dropped once
 * written, at the latest at exit.  From where is asked before the closing
 * advice (which forgets the stream).
 */
uint64_t uo_tree_tail_from(const struct uo_slot *s);	/* UO_EOF: not to be */
void uo_tree_tail(int fd, struct uo_slot *s, uint64_t from);
/*
 * A file the descriptor created, written from its start, not a stream
 * yet (slot held): its writeback starts at each window.  Dirty pages
 * cannot be reclaimed, so the kernel took the hot set instead: tar c |
 * zstd -o in a 128 MiB cgroup kept 98.7% of it with the output's first
 * 32 MiB dirty.  Nothing is dropped: a small output read back stays.
 */
void uo_tree_new_file(int fd, struct uo_slot *s, const struct uo_tuning *t);
/* The process ends (exit, _exit): written files waiting are dropped, the run is shared. */
void uo_tree_exit(void);

#endif /* UO_TREE_H */
