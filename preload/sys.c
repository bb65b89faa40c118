/*
 * System calls made directly rather than through libc.  The loader checks
 * every libc symbol version a library needs, in every process it starts;
 * fstat (GLIBC_2.33) and sync_file_range (GLIBC_2.6) alone added two such
 * checks to each exec of a desktop session.  statx also gives the same
 * layout on every architecture.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <linux/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uo_internal.h"

int uo_fstat(int fd, struct uo_file *f)
{
	struct statx stx;

	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC,
		    STATX_TYPE | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_UID, &stx) != 0)
		return -1;
	f->dev = (uint64_t)stx.stx_dev_major << 32 | stx.stx_dev_minor;
	f->ino = stx.stx_ino;
	f->mode = stx.stx_mode;
	f->uid = stx.stx_uid;
	f->size = stx.stx_size;
	f->mtime_ns = (uint64_t)stx.stx_mtime.tv_sec * 1000000000ULL + stx.stx_mtime.tv_nsec;
	return 0;
}

int uo_sync_file_range(int fd, uint64_t off, uint64_t len, unsigned flags)
{
#if defined(__x86_64__) || defined(__aarch64__) || defined(__riscv) || defined(__s390x__)
	/* 64-bit arguments in single registers, in the generic order. */
	return (int)syscall(SYS_sync_file_range, fd, (long)off, (long)len, flags);
#else
	return sync_file_range(fd, (off64_t)off, (off64_t)len, flags);
#endif
}
