/*
 * Tree mode's deferred drop: written files of a tree remembered at their
 * close and dropped later, once written back (behind.c says how, and why
 * with descriptors of our own).  Called by tree.c and the guard only.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_BEHIND_H
#define UO_BEHIND_H

#include <stdbool.h>

#include "policy.h"
#include "sys.h"

/*
 * A file of a tree the program created or wrote whole, its writeback
 * started, is being closed ('fd' is still the program's, 'f' its file):
 * remember it, after a look at the oldest waiting.
 */
void uo_behind_closing(int fd, const struct uo_file *f);
/*
 * A file the program created or truncated and wrote whole is being closed
 * before its run is known to be a tree (policy.h, UO_TREE_EARLY_KEEP):
 * remember it as a candidate, by path (one readlink), nothing more;
 * 'forget': the candidates of the run before it are forgotten first.
 */
void uo_behind_early(int fd, const struct uo_file *f, bool forget);
/* The run just became a tree: the candidates join the deferred drop, oldest first. */
void uo_behind_adopt(void);
/* The run ended before it was a tree: its candidates are forgotten undropped. */
void uo_behind_early_forget(void);
/*
 * A file read whole and cold is being closed before its run is known to
 * be a tree (policy.h, UO_TREE_EARLY_KEEP, reads): remembered by path and
 * identity, its change and access times, and when ('now_ms'); 'forget':
 * the candidates of the run before it are forgotten first.
 */
void uo_behind_early_read(int fd, const struct uo_file *f, bool forget, uint64_t now_ms);
/* The read run just became a tree at now_ms: its candidates are dropped, if still due. */
void uo_behind_adopt_reads(uint64_t now_ms);
/* A file read before the tree was read again from the cache: no longer a candidate. */
void uo_behind_early_read_again(const struct uo_file *f);
/* The read run ended before it was a tree: its candidates are forgotten. */
void uo_behind_early_reads_forget(void);
/* Another file of a tree was closed: a look at the oldest waiting. */
void uo_behind_tick(void);
/* The process exits: a look at all waiting, without waiting for any. */
void uo_behind_exit(void);

/*
 * The process exits with written files still being written back (a short
 * process of a tree, find -exec cp): up to 'max' of them, newest first,
 * and its candidates (read ones closed within UO_TREE_GAP_MS of 'now_ms',
 * with their age), as entries for the next process of the same parent
 * (owner, time and seal are the caller's).  Their number.
 */
unsigned uo_behind_hand(struct uo_handoff_file *out, unsigned max, uint64_t now_ms);
/*
 * Files an earlier process of the same parent handed, checked sound by the
 * caller: they join the deferred drop (candidates: the candidates), with
 * every check made again at their look.
 */
void uo_behind_take(const struct uo_handoff_file *in, unsigned n);

#endif /* UO_BEHIND_H */
