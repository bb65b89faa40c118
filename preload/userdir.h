/*
 * The user's private directory (userdir.c says which, and how it is
 * trusted), and what lives there besides the record of streams: the note
 * that a warning was already said where stderr goes, in this session.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_USERDIR_H
#define UO_USERDIR_H

#include <stdbool.h>
#include <stddef.h>

/* A descriptor of the user's private directory (O_DIRECTORY), or -1; the caller closes it. */
int uo_userdir_open(void);

/* Longer lines are never taken for said in a regular file. */
#define UO_SAID_LINE_MAX	512

/*
 * True if the same text was already said in this session where stderr goes
 * now (the same terminal, anonymous pipe or socket; the same regular file,
 * which still holds it where it was written); else notes that it is being
 * said now, 'len' bytes and a newline, and returns false.  Always false for
 * other destinations (/dev/null, a named FIFO) or when nothing can be known
 * safely.
 */
bool uo_said_in_session(const char *text, size_t len);

#endif /* UO_USERDIR_H */
