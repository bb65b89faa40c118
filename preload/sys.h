/*
 * System calls, made one way: without libc's wrappers where the
 * architecture lets us.  The library is loaded into every process of a
 * session; each libc function it calls the first time costs that process a
 * symbol lookup (about 2,000 instructions, more than our whole
 * constructor), and each versioned symbol a check at every exec.  A raw
 * call also never touches errno: it returns the result, or -errno.
 *
 * The bottom layer: includes nothing of ours.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_SYS_H
#define UO_SYS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What the guard needs to know of a file, from statx. */
struct uo_file {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	uint64_t mtime_ns;
	/*
	 * Birth time (ns since the epoch), where the filesystem keeps one
	 * (ext4, xfs, btrfs, tmpfs): a new inode that reuses a number has
	 * another.  0: not known.
	 */
	uint64_t btime_ns;
	uint32_t mode;
	uint32_t uid;
};

/* Page cache state of a range (cachestat(2), Linux 6.5). */
struct uo_cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

#if !defined(__x86_64__) && !defined(__aarch64__)
/* Elsewhere libc's syscall(), errno saved around it (sys.c). */
long uo_syscall_libc(long n, long a, long b, long c, long d, long e, long f);
#endif

static inline long uo_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0" : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
#else
	return uo_syscall_libc(n, a, b, c, d, e, f);
#endif
}

/* uo_sys(SYS_x, args...): up to six arguments, the missing ones 0. */
#define uo_sys(...)	uo_sys_pad(__VA_ARGS__, 0, 0, 0, 0, 0, 0)
#define uo_sys_pad(n, a, b, c, d, e, f, ...)					\
	uo_syscall6((long)(n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

static inline int32_t uo_getpid(void)
{
	return (int32_t)uo_sys(SYS_getpid);
}

/*
 * A lock that is never waited for, safe in a signal handler and after
 * fork: 'owner' holds 0 or the pid of the process updating what it
 * guards.  A pid, not a flag: a process forked while one of its parent's
 * threads held it finds the parent's pid there, which no thread of its
 * own will ever clear, and takes it over.  False when busy in this
 * process (another thread, or the code a signal interrupted).
 */
static inline bool uo_try_own(_Atomic int32_t *owner)
{
	int32_t self = uo_getpid(), seen = 0;

	if (atomic_compare_exchange_strong_explicit(owner, &seen, self, memory_order_acquire,
						    memory_order_relaxed))
		return true;
	if (seen == self)
		return false;
	return atomic_compare_exchange_strong_explicit(owner, &seen, self, memory_order_acquire,
						       memory_order_relaxed);
}

static inline void uo_release(_Atomic int32_t *owner)
{
	atomic_store_explicit(owner, 0, memory_order_release);
}

/* 0, or -errno. */
int uo_fstat(int fd, struct uo_file *f);
/* The same, with the access and change times (ns since the epoch); fd may be O_PATH. */
int uo_fstat_times(int fd, struct uo_file *f, int64_t *atime_ns, int64_t *ctime_ns);
/* The same for a path, not followed if a symbolic link: nothing is opened. */
int uo_lstat_times(const char *path, struct uo_file *f, int64_t *atime_ns, int64_t *ctime_ns);
/* The file position, or -errno (a pipe: -ESPIPE). */
int64_t uo_cursor(int fd);
/* 0 or -errno.  Never called with a WAIT flag on a program's descriptor. */
int uo_sync_file_range(int fd, uint64_t off, uint64_t len, unsigned flags);
/* POSIX_FADV_DONTNEED over [off, off + len) (len 0: to end of file): 0 or -errno. */
int uo_fadvise_dontneed(int fd, uint64_t off, uint64_t len);
/* 0 or -errno (-ENOSYS before Linux 6.5, -EPERM for files we could not write). */
int uo_cachestat(int fd, uint64_t off, uint64_t len, struct uo_cachestat *cs);
/*
 * Anonymous private memory, wiped in a forked child (MADV_WIPEONFORK;
 * kernels before 4.14 refuse it, and a child then sees its parent's
 * contents).  NULL on failure, errno untouched.
 */
void *uo_map_private(size_t size);
/* The same, NULL if the memory would not be wiped in a forked child. */
void *uo_map_private_wiped(size_t size);
void uo_unmap(void *p, size_t size);
/*
 * A small file (/proc, /sys) read whole into buf, NUL-terminated, with raw
 * system calls (the hooks are ours): its length (what could be read), or
 * -errno if it could not be opened.
 */
long uo_read_small(const char *path, char *buf, size_t size);
/* "/proc/self/fd/N" into out, which holds UO_PROC_FD_PATH bytes. */
#define UO_PROC_FD_PATH	32
void uo_proc_fd_path(char *out, int fd);
/* Milliseconds of a clock (CLOCK_MONOTONIC, CLOCK_REALTIME); false on failure. */
bool uo_clock_ms(int which, uint64_t *ms);

#endif /* UO_SYS_H */
