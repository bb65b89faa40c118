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

/* What a process of a parent leaves to the next (record.c). */
struct uo_record_sibling {
	struct uo_tree_share run[2];	/* per enum uo_dir */
	struct uo_handoff_file files[UO_HANDOFF_FILES];
};

/*
 * The block of parent 'owner' (hashed), its handed files taken out of the
 * record (a failure's mark stays): false if there is no record or another
 * sibling has the block just now.  Checked by the caller, which holds the
 * tree's lock (tree.c): one thread at a time.
 */
bool uo_record_sibling_take(uint64_t owner, struct uo_record_sibling *out);
/* Leaves the block for the parent's next process. */
void uo_record_sibling_put(uint64_t owner, const struct uo_record_sibling *in);

#endif /* UO_RECORD_H */
