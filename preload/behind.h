/*
 * Tree mode's deferred drop: written files of a tree remembered at their
 * close and dropped later, once written back (behind.c says how, and why
 * with descriptors of our own).  Called by tree.c and the guard only.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_BEHIND_H
#define UO_BEHIND_H

#include "sys.h"

/*
 * A file of a tree the program created or wrote whole, its writeback
 * started, is being closed ('fd' is still the program's, 'f' its file):
 * remember it, after a look at the oldest waiting.
 */
void uo_behind_closing(int fd, const struct uo_file *f);
/* Another file of a tree was closed: a look at the oldest waiting. */
void uo_behind_tick(void);
/* The process exits: a look at all waiting, without waiting for any. */
void uo_behind_exit(void);

#endif /* UO_BEHIND_H */
