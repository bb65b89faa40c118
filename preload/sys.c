/*
 * The system calls that need more than a register each: statx's layout is
 * the same on every architecture, and offsets are 64-bit everywhere (a
 * 32-bit build must not truncate a drop range above 4 GiB).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <sys/mman.h>
#include <time.h>

#include "sys.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451	/* the same number on every architecture */
#endif

/* Large-file offsets in every unit but hooks.c (which defines pread itself). */
_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

#if !defined(__x86_64__) && !defined(__aarch64__)
long uo_syscall_libc(long n, long a, long b, long c, long d, long e, long f)
{
	int saved = errno;
	long ret = syscall(n, a, b, c, d, e, f);

	if (ret == -1) {
		ret = -errno;
		errno = saved;
	}
	return ret;
}
#endif

static int uo_statx_times(int dir, const char *path, int flags, struct uo_file *f,
			  int64_t *atime_ns, int64_t *ctime_ns)
{
	struct statx stx;
	long err = uo_sys(SYS_statx, dir, path, flags | AT_STATX_DONT_SYNC,
			  STATX_TYPE | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_UID |
			  STATX_ATIME | STATX_CTIME | STATX_BTIME, &stx);

	if (err)
		return (int)err;
	f->dev = (uint64_t)stx.stx_dev_major << 32 | stx.stx_dev_minor;
	f->ino = stx.stx_ino;
	f->mode = stx.stx_mode;
	f->uid = stx.stx_uid;
	f->size = stx.stx_size;
	f->mtime_ns = (uint64_t)stx.stx_mtime.tv_sec * 1000000000ULL + stx.stx_mtime.tv_nsec;
	/* Asked for in the same call; a filesystem without one leaves its bit clear. */
	f->btime_ns = (stx.stx_mask & STATX_BTIME) ?
		      (uint64_t)stx.stx_btime.tv_sec * 1000000000ULL + stx.stx_btime.tv_nsec : 0;
	*atime_ns = stx.stx_atime.tv_sec * 1000000000LL + stx.stx_atime.tv_nsec;
	*ctime_ns = stx.stx_ctime.tv_sec * 1000000000LL + stx.stx_ctime.tv_nsec;
	return 0;
}

int uo_fstat_times(int fd, struct uo_file *f, int64_t *atime_ns, int64_t *ctime_ns)
{
	return uo_statx_times(fd, "", AT_EMPTY_PATH, f, atime_ns, ctime_ns);
}

int uo_lstat_times(const char *path, struct uo_file *f, int64_t *atime_ns, int64_t *ctime_ns)
{
	return uo_statx_times(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, f, atime_ns, ctime_ns);
}

int uo_fstat(int fd, struct uo_file *f)
{
	int64_t atime_ns, ctime_ns;

	/* The same call: a statx fills the times whether they are asked for or not. */
	return uo_fstat_times(fd, f, &atime_ns, &ctime_ns);
}

#if defined(__x86_64__) || defined(__aarch64__)
/* 64-bit arguments in single registers, in the generic order. */
int64_t uo_cursor(int fd)
{
	return uo_sys(SYS_lseek, fd, 0, SEEK_CUR);
}

int uo_sync_file_range(int fd, uint64_t off, uint64_t len, unsigned flags)
{
	return (int)uo_sys(SYS_sync_file_range, fd, off, len, flags);
}

int uo_fadvise_dontneed(int fd, uint64_t off, uint64_t len)
{
	return (int)uo_sys(SYS_fadvise64, fd, off, len, POSIX_FADV_DONTNEED);
}
#else
/* Split 64-bit arguments differ by architecture: libc knows how. */
int64_t uo_cursor(int fd)
{
	int saved = errno;
	off_t pos = lseek(fd, 0, SEEK_CUR);
	int64_t ret = pos < 0 ? -errno : (int64_t)pos;

	errno = saved;
	return ret;
}

int uo_sync_file_range(int fd, uint64_t off, uint64_t len, unsigned flags)
{
	int saved = errno;
	int ret = sync_file_range(fd, (off_t)off, (off_t)len, flags) ? -errno : 0;

	errno = saved;
	return ret;
}

int uo_fadvise_dontneed(int fd, uint64_t off, uint64_t len)
{
	return -posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}
#endif

int uo_cachestat(int fd, uint64_t off, uint64_t len, struct uo_cachestat *cs)
{
	struct {
		uint64_t off;
		uint64_t len;
	} range = { off, len };

	return (int)uo_sys(__NR_cachestat, fd, &range, cs, 0);
}

/* Anonymous private memory; 'wiped' whether MADV_WIPEONFORK took. */
static void *uo_map_anon(size_t size, bool *wiped)
{
#if defined(__x86_64__) || defined(__aarch64__)
	long p = uo_sys(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);

	if (p < 0 && p > -4096)
		return NULL;
#else
	int saved = errno;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	errno = saved;
	if (p == MAP_FAILED)
		return NULL;
#endif
	*wiped = uo_sys(SYS_madvise, p, size, MADV_WIPEONFORK) == 0;
	return (void *)p;
}

void *uo_map_private(size_t size)
{
	bool wiped;

	return uo_map_anon(size, &wiped);
}

void *uo_map_private_wiped(size_t size)
{
	bool wiped;
	void *p = uo_map_anon(size, &wiped);

	if (p && !wiped) {
		uo_unmap(p, size);
		return NULL;
	}
	return p;
}

void uo_unmap(void *p, size_t size)
{
	uo_sys(SYS_munmap, p, size);
}

long uo_read_small(const char *path, char *buf, size_t size)
{
	long fd = uo_sys(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY), n, got = 0;

	if (fd < 0)
		return fd;
	while ((size_t)got < size - 1 &&
	       (n = uo_sys(SYS_read, fd, buf + got, size - 1 - (size_t)got)) > 0)
		got += n;
	uo_sys(SYS_close, fd);
	buf[got] = '\0';
	return got;
}

void uo_proc_fd_path(char *out, int fd)
{
	static const char prefix[] = "/proc/self/fd/";
	char digits[12];
	size_t n = 0, i = 0;

	for (; prefix[n]; n++)
		out[n] = prefix[n];
	do {
		digits[i++] = (char)('0' + fd % 10);
		fd /= 10;
	} while (fd > 0);
	while (i)
		out[n++] = digits[--i];
	out[n] = '\0';
}

bool uo_clock_ms(int which, uint64_t *ms)
{
	struct timespec ts;

	if (uo_sys(SYS_clock_gettime, which, &ts))
		return false;
	*ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	return true;
}
