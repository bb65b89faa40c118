/*
 * The user's private directory (userdir.c says which, and how it is
 * trusted), and what lives there besides the record of streams: the note
 * that a warning was already said on this terminal in this session.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_USERDIR_H
#define UO_USERDIR_H

#include <stdbool.h>
#include <stddef.h>

/* A descriptor of the user's private directory (O_DIRECTORY), or -1; the caller closes it. */
int uo_userdir_open(void);

/*
 * True if the same text was already said on this terminal (stderr) in this
 * session; else notes that it is being said now and returns false.  Always
 * false when stderr is not a terminal or nothing can be known safely.
 */
bool uo_said_in_session(const char *text, size_t len);

#endif /* UO_USERDIR_H */
