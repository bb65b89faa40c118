/*
 * In-kernel copies (copy_file_range, sendfile, splice), made one window at
 * a time so the guard can drop behind both ends as they go: cp copies a
 * whole file in one call.  The kernel may always copy less than asked, so
 * stopping early changes nothing a correct program relies on; what was
 * copied is reported, and an error after progress is left for the next
 * call, as the kernel does.
 *
 * A wrapper runs:
 *	uo_copy_begin(&c, ...);
 *	do
 *		uo_ret = real(..., c.len, ...);
 *	while (uo_copy_next(&c, uo_ret));
 *	return uo_copy_result(&c, uo_ret);
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_COPY_H
#define UO_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How a copy may be cut: the kernel refuses one whose end overflows an offset. */
#define UO_SPLIT_NONE	0	/* never cut */
#define UO_SPLIT_WRAP	1	/* refused when either offset + length wraps 2^64 (copy_file_range) */
#define UO_SPLIT_SIGNED	2	/* refused when the input offset + length passes 2^63 - 1 (sendfile) */

/* The largest count one read/write/copy system call moves on Linux. */
#define UO_MAX_RW_COUNT	0x7ffff000ULL

/* One end of a copy. */
struct uo_copy_end {
	int fd;
	const void *off;	/* the program's offset (off_t or off64_t); NULL: the file position */
	unsigned width;		/* sizeof(*off) */
	uint64_t at;		/* where the next call starts; UO_UNKNOWN: at the cursor */
};

struct uo_copy {
	struct uo_copy_end in, out;
	size_t want;		/* what the program asked for */
	size_t len;		/* what the next call asks for */
	size_t total;		/* moved so far */
	bool known;		/* 'at' of both ends can be told: the guard may hear of the copy */
	int saved_errno;
};

void uo_copy_begin(struct uo_copy *c, int in, const void *in_off, unsigned in_width, int out,
		   const void *out_off, unsigned out_width, size_t len, int split);
/* Notes what the call moved; true if another window is to be copied. */
bool uo_copy_next(struct uo_copy *c, ssize_t ret);
/* What the program gets: the total moved, or the first call's failure. */
ssize_t uo_copy_result(const struct uo_copy *c, ssize_t ret);

#endif /* UO_COPY_H */
