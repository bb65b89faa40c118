/*
 * Is a descriptor worth guarding?  What the kernel says of its file: its
 * type and filesystem, how it was opened, and what the config files' path
 * rules say of it.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_CLASSIFY_H
#define UO_CLASSIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "sys.h"

/* NULL if the descriptor is worth guarding (*f then describes its file), else why not. */
const char *uo_classify(int fd, struct uo_file *f);
/*
 * NULL if a written file may be dropped later by the deferred drop
 * (behind.c): on a local disk filesystem (ext4, xfs, btrfs..., not tmpfs,
 * FUSE, NFS, overlay) mounted with access times, else why not.
 */
const char *uo_not_for_later(int fd);
/* NULL if the config's never/always rules let the file be guarded, else why not. */
const char *uo_path_rule(int fd);
/* Does fd still name the file 'was'?  (A raw close and a reuse make it another.) */
bool uo_same_file(int fd, const struct uo_file *was, uint64_t *size);

#endif /* UO_CLASSIFY_H */
