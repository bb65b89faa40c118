/*
 * What check_threads and check_life share: files whose every 8-byte word
 * says where it lies and in which file, so any read, at any offset, from any
 * thread or process, can be checked on its own, and a read at a shared
 * cursor tells where the cursor was.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UOT_PATTERN_H
#define UOT_PATTERN_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testlib.h"

#define UOT_PAT_K	0x9e3779b97f4a7c15ULL	/* odd: multiplying by it is invertible */

static inline uint64_t uot_pat_word(uint32_t seed, uint64_t off)
{
	return ((off >> 3) ^ ((uint64_t)seed << 40)) * UOT_PAT_K;
}

/* The offset a word of file 'seed' came from (the word's own claim). */
static inline uint64_t uot_pat_where(uint32_t seed, uint64_t word)
{
	uint64_t inv = UOT_PAT_K;
	int i;

	for (i = 0; i < 5; i++)		/* Newton: each step doubles the correct bits */
		inv *= 2 - UOT_PAT_K * inv;
	return ((word * inv) ^ ((uint64_t)seed << 40)) << 3;
}

static inline void uot_pat_fill(uint32_t seed, uint64_t off, void *buf, size_t len)
{
	uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = uot_pat_word(seed, off + 8 * i);
}

/* 'len' bytes read at 'off' (both multiples of 8) are file 'seed's bytes there. */
static inline bool uot_pat_ok(uint32_t seed, uint64_t off, const void *buf, size_t len)
{
	const uint64_t *w = buf;
	size_t i;

	if ((off | len) & 7)
		return false;
	for (i = 0; i < len / 8; i++)
		if (w[i] != uot_pat_word(seed, off + 8 * i))
			return false;
	return true;
}

/*
 * A file of 'size' bytes of pattern 'seed', written with raw system calls
 * (the library, when preloaded, does not see it) and written out; 0 or -1.
 * This and uot_pat_check_file use one static buffer: not for threads.
 */
static inline int uot_pat_make(const char *path, uint32_t seed, uint64_t size)
{
	static uint64_t buf[(1 << 20) / 8];
	uint64_t off;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			      0600);

	if (fd < 0)
		return -1;
	for (off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);

		uot_pat_fill(seed, off, buf, n);
		if (syscall(SYS_pwrite64, fd, buf, n, off) != (long)n) {
			syscall(SYS_close, fd);
			return -1;
		}
	}
	if (syscall(SYS_fdatasync, fd) != 0) {
		syscall(SYS_close, fd);
		return -1;
	}
	return (int)syscall(SYS_close, fd);
}

/* The whole file is pattern 'seed' over 'size' bytes, read with raw system calls. */
static inline bool uot_pat_check_file(const char *path, uint32_t seed, uint64_t size)
{
	static uint64_t buf[(1 << 20) / 8];
	uint64_t off = 0;
	long n;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	while ((n = syscall(SYS_pread64, fd, buf, sizeof(buf), off)) > 0) {
		if (!uot_pat_ok(seed, off, buf, (size_t)n))
			break;
		off += (uint64_t)n;
	}
	syscall(SYS_close, fd);
	return n == 0 && off == size;
}

#endif /* UOT_PATTERN_H */
