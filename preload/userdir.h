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
#include <stdint.h>

/* A descriptor of the user's private directory (O_DIRECTORY), or -1; the caller closes it. */
int uo_userdir_open(void);

/*
 * Of /proc/PID/stat: the parent (field 4), the session (6) and the start
 * time (22).  False if the process is gone or the line is not understood.
 */
bool uo_proc_stat(uint32_t pid, long *ppid, long *sid, uint64_t *start);
/* The same, and its name (field 2, cut to UO_COMM_MAX - 1 bytes) into comm. */
#define UO_COMM_MAX	16
bool uo_proc_stat_comm(uint32_t pid, long *ppid, long *sid, uint64_t *start, char *comm);
/* /proc/PID/cmdline (arguments ended by NULs) into buf: its length, or <= 0. */
long uo_proc_cmdline(uint32_t pid, char *buf, size_t size);

/* Longer lines are never taken for said in a regular file. */
#define UO_SAID_LINE_MAX	512

/*
 * What uo_said_in_session leaves to be noted once the line is written: the
 * notes' file (-1: nothing to note) and the entry, in its place.
 */
struct uo_said_note {
	int fd;
	unsigned slot;
	uint64_t entry[4];
};

/*
 * True if the same text was already said in this session where stderr goes
 * now (the same terminal, anonymous pipe or socket; the same regular file,
 * which still holds it where it was written).  Else false, and 'note'
 * holds what uo_said_done notes once the line ('len' bytes and a newline)
 * was written.  Always false, with nothing to note, for other destinations
 * (/dev/null, a named FIFO) or when nothing can be known safely.
 */
bool uo_said_in_session(const char *text, size_t len, struct uo_said_note *note);
/*
 * After the line was written, whole ('written') or not: noted as said
 * only if it was, so a line that never arrived is said by the next process.
 */
void uo_said_done(struct uo_said_note *note, bool written);

#endif /* UO_USERDIR_H */
