/*
 * The user's record of recently streamed files, shared by all their
 * processes (record.c says how and why).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_RECORD_H
#define UO_RECORD_H

#include <stdbool.h>

#include "sys.h"

/* Notes the stream of f; true if it was streamed within USEONCE_REUSE before. */
bool uo_record_streamed_again(const struct uo_file *f);

#endif /* UO_RECORD_H */
