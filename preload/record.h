/*
 * The user's record of recently streamed files, shared by all their
 * processes (record.c says how and why).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_RECORD_H
#define UO_RECORD_H

#include <stdbool.h>

#include "policy.h"
#include "sys.h"

/* Notes the stream of f; true if it was streamed within USEONCE_REUSE before. */
bool uo_record_streamed_again(const struct uo_file *f);

/*
 * The runs of trees the processes of one parent ('owner', hashed) left,
 * both directions (policy.h's uo_tree_share): false if there is no record
 * or nothing there yet.  Checked by the caller.
 */
bool uo_record_tree_get(uint64_t owner, struct uo_tree_share sh[2]);
/* Leaves the runs of the directions 'put' for the next process of the same parent. */
void uo_record_tree_put(uint64_t owner, const struct uo_tree_share sh[2], const bool put[2]);

#endif /* UO_RECORD_H */
