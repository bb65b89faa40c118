/*
 * Tree mode, the plumbing: many files moved whole, one after the other,
 * are one stream (the rule is the policy's uo_tree_file_closed).  Called
 * by the guard only.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_TREE_H
#define UO_TREE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "fdtab.h"

/* Bit (1 << dir) set while the process streams a tree in that direction. */
extern _Atomic unsigned uo_tree_on;

/*
 * A file opened while the process streams a tree in 'dir' (slot held):
 * for reading, was any of it cached?  For writing, 'fresh' says the open
 * created or truncated it (O_TRUNC, O_CREAT | O_EXCL); otherwise an
 * O_CREAT that found it empty is as new.
 */
void uo_tree_opened(int fd, struct uo_slot *s, unsigned dir, bool fresh);
/*
 * The tuning for the descriptor: its threshold 1/32 of the memory it may use
 * (once known), and inside a tree, files past a window are streams.
 */
const struct uo_tuning *uo_tree_tuning(const struct uo_slot *s, struct uo_tuning *buf);
/*
 * A descriptor is being closed (slot held), before the program's close:
 * one more file of a tree?  If it is, what its pages need is done now, on
 * the program's descriptor.  'streamed': it was a stream, whose own
 * closing advice has just been applied.
 */
void uo_tree_closing(int fd, struct uo_slot *s, bool streamed);

/*
 * The process exits, after the deferred drop's last look: its runs and the
 * written files still in flight are left for its parent's next process.
 */
void uo_tree_exit(void);

#endif /* UO_TREE_H */
