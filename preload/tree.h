/*
 * Tree mode, the plumbing: many files read whole, one after the other, are
 * one stream (the rule is the policy's uo_tree_closed).  Called by the
 * guard only.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_TREE_H
#define UO_TREE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "fdtab.h"

extern _Atomic bool uo_tree_on;

/* A file opened for reading in tree mode: was any of it cached? (slot held) */
void uo_tree_opened(int fd, struct uo_slot *s);
/* A descriptor that never became a stream is being closed (slot held). */
void uo_tree_closing(int fd, struct uo_slot *s);

#endif /* UO_TREE_H */
