/*
 * Trace lines and warnings, built on the stack and written with one raw
 * write(2): no malloc, no stdio, no locks, so a line can be written from
 * any hook, in a signal handler or a vfork child.  A leaf: it reads where
 * the trace goes from the config (config.h) and calls nothing of ours but
 * system calls.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_TRACE_H
#define UO_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "policy.h"

struct uo_line {
	char buf[320];
	size_t len;
};

/* Is there a trace to write to?  (Asked before building a line.) */
bool uo_tracing(void);

/* "useonce[PID]: fd N: " (no fd part for fd < 0). */
void uo_line_start(struct uo_line *l, int fd);
void uo_line_str(struct uo_line *l, const char *s);
void uo_line_num(struct uo_line *l, uint64_t v);
void uo_line_range(struct uo_line *l, struct uo_range r);
void uo_line_bytes(struct uo_line *l, uint64_t v);	/* 1.5 GiB */
void uo_line_value(struct uo_line *l, const char *s);	/* printable bytes only, cut short */
bool uo_line_write(struct uo_line *l, int fd);		/* with a newline, one write: all written? */
void uo_line_trace(struct uo_line *l);			/* to the trace, if there is one */

/*
 * A descriptor named in USEONCE_TRACE or USEONCE_STATS, checked at start:
 * fd -1 (nothing is written) if it was not open then, as the number would
 * name whatever the program opens next; else what file it names is noted,
 * and a line is written only while the number still names that file (a
 * program that closed it and opened its output there keeps its output).
 * Not duplicated: that would take one of the program's descriptors.
 */
void uo_dest_keep(struct uo_dest *d);
/* Standard error kept the same way, at start (config.c)... */
void uo_stderr_keep(void);
/* ...and whether descriptor 2 still names it, open for writing: our notices go only there. */
bool uo_stderr_same(void);
/*
 * Writes the line (with its newline) to the descriptor if it still names
 * the file it named at start, or appends it to the file, opened as safely
 * as the config file is read: no symbolic link followed, nothing that could
 * block (O_NONBLOCK; only a regular file is written), only the user's own.
 */
void uo_dest_write(const struct uo_dest *d, struct uo_line *l);

/* "useonce: fd N: WHAT[: DETAIL]" to the trace. */
void uo_trace(int fd, const char *what, const char *detail);

/*
 * Warnings, built to be written by the caller (the constructor writes one
 * line for everything it ignored):
 * "useonce: NAME=VALUE: why; ignored", and
 * "useonce: FILE:LINE: KEY = VALUE: why; ignored" (line 0: the file as a whole).
 */
void uo_line_warning(struct uo_line *l, const char *what, const char *value, const char *why);
void uo_line_warning_at(struct uo_line *l, const char *file, unsigned line, const char *key,
			const char *value, const char *why);
void uo_line_path(struct uo_line *l, const char *path);	/* printable bytes only, up to 200 */

#endif /* UO_TRACE_H */
