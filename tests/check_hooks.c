/*
 * The hooks, one by one, inside a process that has the library preloaded:
 * copies cut into windows add up to what the kernel would have done (count,
 * offsets, data), streams are dropped, and what is not a stream is left
 * alone.  That results and errno are libc's is check_results' part.
 *
 * The program re-executes itself with LD_PRELOAD set, so every call below
 * goes through the library; the first test proves it does.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define MiB (1L << 20)
#define CHILD_MARK "UO_CHECK_HOOKS_CHILD"

static char dir[PATH_MAX - 64];
static char big[PATH_MAX];		/* 96 MiB, made once */
static bool droppable;			/* the directory's filesystem has a page cache to drop */

static void path_in(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

/* Also used outside tests, where Check's assertions cannot report. */
static void fill(const char *path, long size)
{
	static char block[MiB];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	long i, done;

	for (i = 0; i < MiB; i++)
		block[i] = (char)(i * 7 + i / 4096);
	for (done = 0; fd >= 0 && done < size; done += MiB) {
		block[0] = (char)(done / MiB);
		if (write(fd, block, MiB) != MiB)
			break;
	}
	if (fd < 0 || done < size || fsync(fd) != 0 || close(fd) != 0) {
		perror(path);
		exit(EXIT_FAILURE);
	}
}

/* Page cache residency of a file we own, in MiB (mincore is truthful for our files). */
static long resident_mib(const char *path)
{
	int64_t n = uot_resident(path, NULL);

	ck_assert_msg(n >= 0, "%s", uot_why());
	return (long)(n / MiB);
}

static void make_cold(const char *path)
{
	ck_assert_msg(uot_make_cold(path) == 0, "%s", uot_why());
}

static void make_hot(const char *path)
{
	static char buf[MiB];
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	/* Through the raw system call: this warm-up must not be guarded. */
	while (syscall(SYS_read, fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

static void make_hot_range(const char *path, long from_mib, long to_mib)
{
	static char buf[MiB];
	int fd = open(path, O_RDONLY);
	long mib;

	ck_assert_int_ge(fd, 0);
	/* No readahead: exactly this range gets cached. */
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	for (mib = from_mib; mib < to_mib; mib++)
		ck_assert_int_eq(syscall(SYS_pread64, fd, buf, sizeof(buf), mib * MiB), MiB);
	close(fd);
}

static void suite_setup(void)
{
	struct statfs sfs;

	uot_suite_begin("hooks", NULL);
	if (!uot_need_scratch()) {
		fprintf(stderr, "check_hooks: %s\n", uot_skip_reason());
		exit(EXIT_FAILURE);
	}
	snprintf(dir, sizeof(dir), "%s", uot_scratch());
	droppable = statfs(dir, &sfs) == 0 && sfs.f_type != TMPFS_MAGIC;
	path_in(big, "big");
	fill(big, 96 * MiB);
}

START_TEST(test_library_is_preloaded)
{
	ck_assert_msg(uot_library_mapped(),
		      "libuseonce.so is not mapped: the tests would test libc alone");
}
END_TEST

/* A copy cut into windows must add up to one kernel call: count, offsets, data. */
START_TEST(test_copy_file_range_whole_file)
{
	char copy[PATH_MAX];
	int in = open(big, O_RDONLY), out;
	ssize_t n, total = 0;

	path_in(copy, "cfr-copy");
	out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	/* Asked for far more than the file, as cp does: the first call returns it all. */
	n = copy_file_range(in, NULL, out, NULL, SSIZE_MAX, 0);
	ck_assert_int_eq(n, 96 * MiB);
	ck_assert_int_eq(lseek(in, 0, SEEK_CUR), 96 * MiB);
	ck_assert_int_eq(lseek(out, 0, SEEK_CUR), 96 * MiB);
	while ((n = copy_file_range(in, NULL, out, NULL, SSIZE_MAX, 0)) > 0)
		total += n;
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(total, 0);
	close(in);
	close(out);
	ck_assert_int_eq(system("cmp -s \"$UO_HOOKS_BIG\" \"$UO_HOOKS_COPY\"") , 0);
}
END_TEST

START_TEST(test_copy_file_range_with_offsets)
{
	char copy[PATH_MAX];
	int in = open(big, O_RDONLY), out;
	off64_t in_off = 3 * MiB + 5, out_off = 7;

	path_in(copy, "cfr-offsets");
	out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(out, 0);
	ck_assert_int_eq(copy_file_range(in, &in_off, out, &out_off, 50 * MiB + 3, 0), 50 * MiB + 3);
	ck_assert_int_eq(in_off, 53 * MiB + 8);
	ck_assert_int_eq(out_off, 50 * MiB + 10);
	/* Offsets given: the file positions do not move. */
	ck_assert_int_eq(lseek(in, 0, SEEK_CUR), 0);
	ck_assert_int_eq(lseek(out, 0, SEEK_CUR), 0);
	close(in);
	close(out);
}
END_TEST

START_TEST(test_copy_file_range_same_file_not_cut)
{
	char path[PATH_MAX];
	int fd;
	off64_t a = 0, b = 16 * MiB;
	long r1, e1;

	path_in(path, "cfr-same");
	fill(path, 48 * MiB);
	fd = open(path, O_RDWR);
	/* Overlapping ranges of one file are refused whole; a cut request would be accepted. */
	errno = 0;
	r1 = copy_file_range(fd, &a, fd, &b, 32 * MiB, 0);
	e1 = errno;
	ck_assert_int_eq(r1, -1);
	ck_assert_int_eq(e1, EINVAL);
	ck_assert_int_eq(a, 0);
	ck_assert_int_eq(b, 16 * MiB);
	close(fd);
}
END_TEST

START_TEST(test_sendfile_with_offset)
{
	char copy[PATH_MAX];
	int in = open(big, O_RDONLY), out;
	off_t off = 1000;

	path_in(copy, "sendfile");
	out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_eq(sendfile(out, in, &off, 64 * MiB), 64 * MiB);
	ck_assert_int_eq(off, 64 * MiB + 1000);
	ck_assert_int_eq(lseek(in, 0, SEEK_CUR), 0);
	ck_assert_int_eq(lseek(out, 0, SEEK_CUR), 64 * MiB);
	close(in);
	close(out);
}
END_TEST

static void read_all(int fd, size_t chunk, bool positional)
{
	static char buf[4 * MiB];
	off_t off = 0;
	ssize_t n;

	ck_assert_uint_le(chunk, sizeof(buf));
	while ((n = positional ? pread(fd, buf, chunk, off) : read(fd, buf, chunk)) > 0)
		off += n;
	ck_assert_int_eq(n, 0);
}

START_TEST(test_read_stream_is_dropped)
{
	int fd;

	if (!droppable)
		return;
	make_cold(big);
	fd = open(big, O_RDONLY);
	read_all(fd, MiB, _i);
	/* Before close: behind the cursor is gone, at most the last windows remain. */
	ck_assert_int_le(resident_mib(big), 24);
	close(fd);
	ck_assert_int_le(resident_mib(big), 2);
}
END_TEST

/*
 * A written stream closed once its data is on disk: everything clean is
 * dropped at close, but for the folio the last write may have dirtied.
 */
#define WRITE_TAIL_MIB	2

/*
 * stdio calls of a few bytes each (ls, a log writer, a line reader) are
 * seen through the bytes their buffer moves to or from the kernel: a
 * stream made of them is still a stream.
 */
START_TEST(test_small_stdio_calls_stream)
{
	char path[PATH_MAX], piece[100];
	size_t i, n = 0;
	FILE *fp;

	if (!droppable)
		return;
	make_cold(big);
	fp = fopen(big, "r");
	ck_assert_ptr_nonnull(fp);
	while (fread(piece, 1, sizeof(piece), fp) == sizeof(piece))
		n++;
	ck_assert_uint_eq(n, 96 * MiB / sizeof(piece));
	ck_assert_int_le(resident_mib(big), 24);
	fclose(fp);
	path_in(path, "small-fwrites");
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	memset(piece, 's', sizeof(piece));
	for (i = 0; i < 128 * MiB / sizeof(piece); i++)
		ck_assert_uint_eq(fwrite_unlocked(piece, 1, sizeof(piece), fp), sizeof(piece));
	/* Within its budget close waits for nothing: what is clean by then goes. */
	ck_assert_int_eq(fflush(fp), 0);
	ck_assert_int_eq(fdatasync(fileno(fp)), 0);
	ck_assert_int_eq(fclose(fp), 0);
	ck_assert_int_le(resident_mib(path), WRITE_TAIL_MIB);
}
END_TEST

/* Residency of [from, to) MiB of a file we own, in MiB. */
static long resident_range_mib(const char *path, long from, long to)
{
	int fd = open(path, O_RDONLY);
	unsigned char vec[256];
	long n = 0, mib;
	void *map;

	ck_assert_int_ge(fd, 0);
	for (mib = from; mib < to; mib++) {
		map = mmap(NULL, MiB, PROT_READ, MAP_SHARED, fd, mib * MiB);
		ck_assert(map != MAP_FAILED);
		ck_assert_int_eq(mincore(map, MiB, vec), 0);
		n += (vec[0] & 1) && (vec[255] & 1);
		munmap(map, MiB);
	}
	close(fd);
	return n;
}

/*
 * A stream over a file someone else keeps cached drops only what it
 * brought in: _i 0, the whole file was cached; 1, its middle third.
 */
START_TEST(test_precached_pages_stay)
{
	char path[PATH_MAX];
	int fd;

	if (!droppable)
		return;
	path_in(path, "precached");
	fill(path, 192 * MiB);
	make_cold(path);
	make_hot_range(path, _i ? 64 : 0, _i ? 128 : 192);
	/* A MiB counts when its first and last pages are cached: one the kernel reclaims on a
	 * busy machine takes one off, a window the library drops takes eight. */
	ck_assert_int_ge(resident_range_mib(path, _i ? 64 : 0, _i ? 128 : 192), _i ? 63 : 191);

	fd = open(path, O_RDONLY);
	read_all(fd, MiB, false);
	close(fd);
	if (_i == 0) {
		/* In bytes, not whole MiB: a page or two the kernel reclaims on a busy machine
		 * is not the library's doing, which drops a window (8 MiB) or nothing. */
		int64_t kept = uot_resident(path, NULL);

		ck_assert_msg(kept >= 0, "%s", uot_why());
		ck_assert_msg(kept >= 192 * MiB - 256 * 1024, "%lld of 192 MiB stayed cached",
			      (long long)kept);
	} else {
		ck_assert_int_ge(resident_range_mib(path, 64, 128), 63);
		/* The cold thirds went, but for the very start, read before the first probe. */
		ck_assert_int_le(resident_range_mib(path, 0, 64), 2);
		ck_assert_int_le(resident_range_mib(path, 128, 192), 2);
	}
}
END_TEST

START_TEST(test_small_file_left_alone)
{
	char path[PATH_MAX];
	int fd;

	path_in(path, "small");
	fill(path, 24 * MiB);
	make_cold(path);
	fd = open(path, O_RDONLY);
	read_all(fd, 128 * 1024, _i);
	close(fd);
	ck_assert_int_eq(resident_mib(path), 24);
}
END_TEST

START_TEST(test_random_reads_left_alone)
{
	char buf[64 * 1024];
	int fd, i;
	unsigned x = 12345;

	make_hot(big);
	fd = open(big, O_RDONLY);
	for (i = 0; i < 20000; i++) {
		x = x * 1103515245 + 12345;
		ck_assert_int_eq(pread(fd, buf, sizeof(buf), (off_t)((x >> 8) % 1536) * 65536),
				 sizeof(buf));
	}
	close(fd);
	ck_assert_int_eq(resident_mib(big), 96);
}
END_TEST

static long dirty_pages(int fd, unsigned long long off, unsigned long long len);

START_TEST(test_write_stream_is_flushed_and_dropped)
{
	char path[PATH_MAX];
	static char block[MiB];
	long dirty;
	int fd, i;

	if (!droppable)
		return;
	path_in(path, "written");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	memset(block, 'w', sizeof(block));
	for (i = 0; i < 128; i++)
		ck_assert_int_eq(write(fd, block, sizeof(block)), sizeof(block));
	/* A tail past the last window, whose writeback only close starts. */
	ck_assert_int_eq(write(fd, block, sizeof(block)), sizeof(block));
	ck_assert_int_eq(write(fd, block, sizeof(block) / 2), sizeof(block) / 2);
	/*
	 * A writer may have up to 1/32 of memory in flight (check_e2e bounds
	 * it in a small cgroup), and within that budget its close waits for
	 * nothing: it starts writeback of the tail and drops what is clean.
	 * _i 0: not synced, nothing may be left dirty; 1: synced before
	 * close, everything clean goes.
	 */
	if (_i)
		ck_assert_int_eq(fdatasync(fd), 0);
	ck_assert_int_eq(close(fd), 0);
	if (_i) {
		ck_assert_int_le(resident_mib(path), WRITE_TAIL_MIB);
		return;
	}
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	dirty = dirty_pages(fd, 0, 0);
	close(fd);
	ck_assert_msg(dirty <= 0, "%ld pages left dirty at close", dirty);
}
END_TEST

/* Does another process see a lock on the file?  Asked from a child: our own never conflict. */
static bool lock_seen_by_another(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDONLY);

		_exit(fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? 0 : 1);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * Closing any descriptor of a file releases the process's POSIX locks on
 * it.  A program that locks a file and streams into it keeps its lock
 * while the library checks and drops the written pages.
 */
START_TEST(test_write_stream_keeps_the_programs_lock)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[PATH_MAX];
	static char block[MiB];
	int lk, fd, i;

	if (!droppable)
		return;
	path_in(path, "locked");
	lk = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(lk, 0);
	ck_assert_int_eq(fcntl(lk, F_SETLK, &fl), 0);
	ck_assert_msg(lock_seen_by_another(path), "the lock cannot be seen at all");
	fd = open(path, O_WRONLY);
	memset(block, 'l', sizeof(block));
	for (i = 0; i < 64; i++) {
		ck_assert_int_eq(write(fd, block, sizeof(block)), sizeof(block));
		/* Clean pages behind the writer: the guard checks them, then drops them. */
		if (i % 8 == 7)
			ck_assert_int_eq(fdatasync(fd), 0);
	}
	/* The program's own close would release it (POSIX): asked before. */
	ck_assert_msg(lock_seen_by_another(path), "the program's lock was released behind its back");
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(close(lk), 0);
}
END_TEST

/*
 * The same for a tree's written file (behind.c): a program writing many
 * new files (tree mode) takes a lock on one it wrote, through a new
 * descriptor it keeps, and goes on writing.  The deferred drop looks at
 * that file again at the next closes; a descriptor of its own opened and
 * closed on it would release the program's lock.
 */
static void write_tree_file(const char *path)
{
	static char block[128 * 1024];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	memset(block, 't', sizeof(block));
	ck_assert_int_eq(write(fd, block, sizeof(block)), sizeof(block));
	ck_assert_int_eq(close(fd), 0);
}

START_TEST(test_tree_written_file_keeps_the_programs_lock)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char sub[PATH_MAX], path[PATH_MAX + 16];
	int lk, i;

	if (!droppable)
		return;
	path_in(sub, "locktree");
	ck_assert(mkdir(sub, 0700) == 0 || errno == EEXIST);
	for (i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "%s/f%03d", sub, i);
		write_tree_file(path);
	}
	/* The last one written, still waiting in the ring: locked, kept open. */
	snprintf(path, sizeof(path), "%s/f%03d", sub, 39);
	lk = open(path, O_RDWR);
	ck_assert_int_ge(lk, 0);
	ck_assert_int_eq(fcntl(lk, F_SETLK, &fl), 0);
	ck_assert_msg(lock_seen_by_another(path), "the lock cannot be seen at all");
	/* Clean, so that the next closes look at it (and would drop it). */
	ck_assert_int_eq(syncfs(lk), 0);
	for (i = 40; i < 60; i++) {
		char more[PATH_MAX + 16];

		snprintf(more, sizeof(more), "%s/f%03d", sub, i);
		write_tree_file(more);
	}
	ck_assert_msg(lock_seen_by_another(path), "the program's lock was released behind its back");
	ck_assert_int_eq(close(lk), 0);
	/*
	 * Written files of a tree stay cached while memory is mostly free
	 * (policy.h, uo_behind_room): then nothing was looked at again, and
	 * this says so.  f010, clean since the syncfs, is dropped otherwise.
	 */
	snprintf(path, sizeof(path), "%s/f%03d", sub, 10);
	if (uot_resident_pct(path) >= 50.0)
		printf("hooks: tree lock: not tried: the written files stayed cached (memory is "
		       "mostly free), none was opened again\n");
}
END_TEST

/* Dirty pages of [off, off + len), or -1 without cachestat (Linux 6.5). */
static long dirty_pages(int fd, unsigned long long off, unsigned long long len)
{
	struct { unsigned long long off, len; } range = { off, len };
	struct {
		unsigned long long cache, dirty, writeback, evicted, recently_evicted;
	} cs;

	if (syscall(451, fd, &range, &cs, 0) != 0)
		return -1;
	return (long)cs.dirty;
}

/*
 * A new file written from its start has its writeback started a window at
 * a time before it is long enough to be a stream: a writer leaves no more
 * than about a window dirty before the guard knows it streams.  Short of
 * the threshold, nothing is dropped.
 */
START_TEST(test_new_file_written_out_before_the_threshold)
{
	char path[PATH_MAX];
	static char block[MiB];
	long dirty;
	int fd, i;

	if (!droppable)
		return;
	path_in(path, "written-early");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	memset(block, 'e', sizeof(block));
	for (i = 0; i < 24; i++)
		ck_assert_int_eq(write(fd, block, sizeof(block)), sizeof(block));
	/* Its first two windows (8 MiB each) went to the disk as they were written. */
	dirty = dirty_pages(fd, 0, 16 * MiB);
	if (dirty < 0)
		printf("check_hooks: no cachestat here: early writeback not checked\n");
	else
		ck_assert_msg(dirty == 0, "%ld dirty pages in the first 16 MiB of a new 24 MiB file",
			      dirty);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_ge(resident_mib(path), 23);
}
END_TEST

/* Overwriting a file someone keeps cached leaves it cached (a new file goes: above). */
START_TEST(test_overwrite_of_cached_file_stays)
{
	char path[PATH_MAX];
	static char block[MiB];
	int fd, i;

	if (!droppable)
		return;
	path_in(path, "overwritten");
	fill(path, 96 * MiB);
	make_hot(path);
	ck_assert_int_ge(resident_mib(path), 94);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	memset(block, 'o', sizeof(block));
	for (i = 0; i < 96; i++)
		ck_assert_int_eq(write(fd, block, sizeof(block)), sizeof(block));
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_ge(resident_mib(path), 94);
}
END_TEST

/*
 * A descriptor closed behind the library's back and reused for another file
 * must not carry the old stream over: the new file's first reads stay cached.
 */
START_TEST(test_raw_close_then_reuse)
{
	char path[PATH_MAX];
	static char buf[MiB];
	int fd, fd2, i;

	if (!droppable)
		return;
	path_in(path, "reused");
	fill(path, 16 * MiB);
	fd = open(big, O_RDONLY);
	for (i = 0; i < 64; i++)
		ck_assert_int_eq(read(fd, buf, sizeof(buf)), sizeof(buf));
	syscall(SYS_close, fd);
	make_cold(path);
	fd2 = open(path, O_RDONLY);
	ck_assert_int_eq(fd2, fd);
	/* The stale slot still says "stream at 64 MiB"; the new file must start afresh. */
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(read(fd2, buf, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(resident_mib(path), 16);
	close(fd2);
}
END_TEST

/*
 * The same for a descriptor the guard ignores (hooks pass it by without
 * looking at its slot): once /dev/null has had a window, its number closed
 * behind the library's back and opened again for a file, the file is a
 * stream like any other.
 */
START_TEST(test_raw_close_of_ignored_then_reuse)
{
	static char buf[MiB];
	int fd, i;

	if (!droppable)
		return;
	/* Made cold first: that opens and closes a descriptor of the number. */
	make_cold(big);
	fd = open("/dev/null", O_WRONLY);
	ck_assert_int_ge(fd, 0);
	for (i = 0; i < 24; i++)
		ck_assert_int_eq(write(fd, buf, sizeof(buf)), sizeof(buf));
	syscall(SYS_close, fd);
	ck_assert_int_eq(open(big, O_RDONLY), fd);
	read_all(fd, MiB, 0);
	ck_assert_int_le(resident_mib(big), 24);
	close(fd);
}
END_TEST

/*
 * A number the guard ignores (/dev/null, a pipe), closed where the hooks
 * cannot see it (the raw system call, libc's own close inside freopen or
 * pclose), then made to name a file by a call other than open: dup,
 * fcntl F_DUPFD, freopen, a raw open after pclose, mkstemp, tmpfile,
 * creat.  The file must be guarded like any other: a big read dropped
 * behind, a big write flushed and dropped.  Before, the stale mark made
 * the hooks pass the new file by, and all of it stayed cached.
 */
enum reuse_how {
	RE_DUP, RE_DUPFD, RE_DUPFD_CLOEXEC, RE_FREOPEN, RE_PCLOSE, RE_MKSTEMP, RE_TMPFILE,
	RE_CREAT, N_REUSE
};

static const char *const reuse_names[] = {
	"dup", "F_DUPFD", "F_DUPFD_CLOEXEC", "freopen", "pclose then raw open", "mkstemp",
	"tmpfile", "creat",
};

/* /dev/null written a window and more through a new descriptor: ignored from then on. */
static int quiet_null(void)
{
	static char buf[MiB];
	int fd = open("/dev/null", O_WRONLY), i;

	ck_assert_int_ge(fd, 0);
	for (i = 0; i < 24; i++)
		ck_assert_int_eq(write(fd, buf, sizeof(buf)), sizeof(buf));
	return fd;
}

/* 64 MiB written through fd; the file's residency (through 'measure') after close. */
static long write_through(int fd, FILE *fp, const char *measure)
{
	static char block[MiB];
	int i;

	memset(block, 'w', sizeof(block));
	for (i = 0; i < 64; i++)
		ck_assert_int_eq(write(fd, block, sizeof(block)), sizeof(block));
	/* Synced, so that a guarded close drops it all: it waits for nothing itself. */
	ck_assert_int_eq(fdatasync(fd), 0);
	ck_assert_int_eq(fp ? fclose(fp) : close(fd), 0);
	return resident_mib(measure);
}

/* 64 MiB written around the hooks, made cold, read through fd: residency before close. */
static long read_back_cold(int fd, FILE *fp, const char *measure)
{
	static char block[MiB];
	long cached;
	int i;

	memset(block, 'r', sizeof(block));
	for (i = 0; i < 64; i++)
		ck_assert_int_eq(syscall(SYS_write, fd, block, sizeof(block)), sizeof(block));
	ck_assert_int_eq(fdatasync(fd), 0);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	read_all(fd, MiB, false);
	cached = resident_mib(measure);
	ck_assert_int_eq(fp ? fclose(fp) : close(fd), 0);
	return cached;
}

START_TEST(test_quiet_number_reused)
{
	enum reuse_how how = (enum reuse_how)_i;
	char path[PATH_MAX], measure[PATH_MAX];
	static char buf[MiB];
	long cached, bound = 24;
	int n, b, got, keep = -1;
	FILE *fp;

	if (!droppable)
		return;
	make_cold(big);
	snprintf(measure, sizeof(measure), "%s", big);
	switch (how) {
	case RE_DUP:
	case RE_DUPFD:
	case RE_DUPFD_CLOEXEC:
		n = quiet_null();
		b = open(big, O_RDONLY);
		ck_assert_int_gt(b, n);
		syscall(SYS_close, n);
		got = how == RE_DUP ? dup(b) :
		      fcntl(b, how == RE_DUPFD ? F_DUPFD : F_DUPFD_CLOEXEC, n);
		ck_assert_int_eq(got, n);
		ck_assert_int_eq(close(b), 0);
		read_all(n, MiB, false);
		cached = resident_mib(big);
		ck_assert_int_eq(close(n), 0);
		break;
	case RE_FREOPEN:
		fp = fopen("/dev/null", "w");
		ck_assert_ptr_nonnull(fp);
		for (got = 0; got < 24; got++)
			ck_assert_uint_eq(fwrite(buf, 1, sizeof(buf), fp), sizeof(buf));
		fp = freopen(big, "r", fp);
		ck_assert_ptr_nonnull(fp);
		while (fread(buf, 1, sizeof(buf), fp) > 0)
			;
		cached = resident_mib(big);
		ck_assert_int_eq(fclose(fp), 0);
		break;
	case RE_PCLOSE:
		fp = popen("head -c 24M /dev/zero", "r");
		ck_assert_ptr_nonnull(fp);
		n = fileno(fp);
		while (fread(buf, 1, sizeof(buf), fp) > 0)
			;
		ck_assert_int_eq(pclose(fp), 0);
		ck_assert_int_eq(syscall(SYS_openat, AT_FDCWD, big, O_RDONLY), n);
		read_all(n, MiB, false);
		cached = resident_mib(big);
		ck_assert_int_eq(close(n), 0);
		break;
	default:
		n = quiet_null();
		syscall(SYS_close, n);
		path_in(path, how == RE_MKSTEMP ? "reused-XXXXXX" : "reused-creat");
		fp = how == RE_TMPFILE ? tmpfile() : NULL;
		got = how == RE_MKSTEMP ? mkstemp(path) : how == RE_CREAT ? creat(path, 0600) :
		      fp ? fileno(fp) : -1;
		ck_assert_int_eq(got, n);
		if (how == RE_TMPFILE) {
			/* Unlinked: measured through a descriptor of its own, after the close. */
			snprintf(path, sizeof(path), "/proc/self/fd/%d", n);
			keep = open(path, O_RDONLY);
			ck_assert_int_ge(keep, 0);
			snprintf(path, sizeof(path), "/proc/self/fd/%d", keep);
		}
		snprintf(measure, sizeof(measure), "%s", path);
		if (how == RE_CREAT) {
			cached = write_through(n, fp, measure);
			bound = WRITE_TAIL_MIB;
		} else {
			/*
			 * A temporary file's writes may be left to the kernel
			 * (policy.h, uo_temp_advice): it is read instead, written
			 * around the library and cold, a stream to drop behind.
			 */
			cached = read_back_cold(n, fp, measure);
		}
		if (keep >= 0)
			close(keep);
		else
			unlink(path);
		break;
	}
	printf("check_hooks: a quiet number reused by %s: %ld MiB of the file cached\n",
	       reuse_names[how], cached);
	ck_assert_msg(cached <= bound, "a quiet number reused by %s: %ld MiB of the file stayed "
		      "cached (bound %ld): the stale mark left it unguarded", reuse_names[how],
		      cached, bound);
}
END_TEST

/*
 * A temporary file closed behind the hooks' back (the raw system call),
 * its number then taken by an ordinary file: that file is not temporary,
 * and its writes are flushed and dropped, wherever memory is free.
 */
START_TEST(test_temp_mark_not_kept_by_the_next_file)
{
	char tpath[PATH_MAX], path[PATH_MAX];
	long cached;
	int t, fd;

	if (!droppable)
		return;
	path_in(tpath, "temp-XXXXXX");
	path_in(path, "after-temp");
	t = mkstemp(tpath);
	ck_assert_int_ge(t, 0);
	ck_assert_int_eq(write(t, "x", 1), 1);
	syscall(SYS_close, t);
	unlink(tpath);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_eq(fd, t);
	cached = write_through(fd, NULL, path);
	unlink(path);
	ck_assert_msg(cached <= WRITE_TAIL_MIB, "%ld MiB of an ordinary file stayed cached: the "
		      "temporary file's mark outlived it", cached);
}
END_TEST

/*
 * Descriptors 0, 1 and 2 are most often /dev/null, a pipe or a terminal:
 * the guard learns it after their first 64 KiB, not a window later.
 */
START_TEST(test_std_descriptor_ignored_early)
{
	char trace[PATH_MAX], text[4096];
	int n;

	path_in(trace, "first-call.trace");
	unlink(trace);
	ck_assert_int_eq(uot_sh("USEONCE_TRACE='%s' dd if=/dev/zero of=/dev/null bs=4k count=16 "
				"status=none", trace), 0);
	n = uot_read_text(trace, text, sizeof(text));
	ck_assert_msg(n > 0 && strstr(text, "fd 1: ignored: not a regular file"),
		      "16 writes of 4 KiB to /dev/null: %s", n > 0 ? text : "no trace");
	unlink(trace);
}
END_TEST

START_TEST(test_dup2_over_a_stream)
{
	char path[PATH_MAX];
	static char buf[MiB];
	int fd, other, i;

	if (!droppable)
		return;
	path_in(path, "dup-target");
	fill(path, 16 * MiB);
	make_cold(path);
	fd = open(big, O_RDONLY);
	for (i = 0; i < 64; i++)
		ck_assert_int_eq(read(fd, buf, sizeof(buf)), sizeof(buf));
	other = open(path, O_RDONLY);
	ck_assert_int_eq(dup2(other, fd), fd);
	close(other);
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(read(fd, buf, sizeof(buf)), sizeof(buf));
	ck_assert_int_eq(resident_mib(path), 16);
	close(fd);
}
END_TEST

/* Our memory cgroup's path (v1's memory hierarchy, or v2's); false if we have none. */
static bool own_memory_cgroup(char *out, size_t size)
{
	char line[512], *path = NULL;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return false;
	while (!path && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strstr(line, ":memory:/"))
			path = strstr(line, ":memory:/") + 8;
		else if (!strncmp(line, "0::/", 4) && access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
			path = line + 3;
	}
	fclose(f);
	return path && snprintf(out, size, "%s", path) < (int)size;
}

/*
 * Is a temporary file left to the kernel here (policy.h, uo_temp_advice)?
 * Only while three quarters of memory stay free after it, in a process no
 * memory cgroup limits below RAM.  Asked as the library asks: MemFree,
 * and every memory.limit_in_bytes (v1) or memory.max and memory.high (v2)
 * from our cgroup up; one that cannot be read is a limit.
 */
static bool temp_files_left_here(uint64_t size)
{
	unsigned long long total = uot_meminfo_kib("MemTotal") * 1024, limit;
	unsigned long long free = uot_meminfo_kib("MemFree") * 1024;
	char path[512], at[PATH_MAX], *end;
	static const char *const files[] = { "memory.limit_in_bytes", "memory.max", "memory.high" };
	size_t i;

	/* A margin for what others allocate meanwhile. */
	if (!total || free < size + 256 * MiB || free - size - 256 * MiB < total - total / 4)
		return false;
	if (!own_memory_cgroup(path, sizeof(path)))
		return true;
	for (;;) {
		bool v1 = access("/sys/fs/cgroup/memory", F_OK) == 0;

		for (i = v1 ? 0 : 1; i < (v1 ? 1u : 3u); i++) {
			char buf[64] = "";
			FILE *lf;

			snprintf(at, sizeof(at), "/sys/fs/cgroup%s%s/%s", v1 ? "/memory" : "", path,
				 files[i]);
			lf = fopen(at, "r");
			if (!lf) {
				if (strcmp(path, "/") != 0 && path[0])
					return false;
				continue;
			}
			if (!fgets(buf, sizeof(buf), lf))
				buf[0] = 0;
			fclose(lf);
			limit = strncmp(buf, "max", 3) == 0 ? ~0ULL : strtoull(buf, NULL, 10);
			if (limit < total)
				return false;
		}
		end = strrchr(path, '/');
		if (!end || end == path)
			break;
		*end = 0;
	}
	return true;
}

/* A file of 'lines' text lines in no order, written around the library, left cached. */
static void write_lines(const char *path, long lines)
{
	static char buf[MiB];
	uint64_t x = 88172645463325252ULL;
	size_t used = 0;
	long i;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	for (i = 0; i < lines; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%016llx line %ld of the input\n",
					 (unsigned long long)x, i);
		if (used > sizeof(buf) - 128) {
			ck_assert_int_eq(syscall(SYS_write, fd, buf, used), (long)used);
			used = 0;
		}
	}
	ck_assert_int_eq(syscall(SYS_write, fd, buf, used), (long)used);
	ck_assert_int_eq(close(fd), 0);
}

/*
 * sort -S 16M of 100 MB spills to temporary files (mkostemp) and reads
 * its 80 MiB merge file back.  Where memory is mostly free and nothing
 * limits the process, a temporary file is left to the kernel: sort reads
 * nothing from disk but its input, cached here (the kernel alone: nothing;
 * the library before: the whole merge file, 84 MB).  _i 1: in a memory
 * cgroup of 1 GiB the merge file is dropped as any write stream, and read
 * back from disk: a cgroup's hot set is what the library keeps.  Bytes
 * read from disk are sort's, counted by its shell (/proc/PID/io adds a
 * waited-for child's).
 */
START_TEST(test_temp_file_read_back_from_memory)
{
	char input[PATH_MAX], tmp[PATH_MAX], out[PATH_MAX], text[4096];
	const char *const argv[] = {
		"sh", "-c", "sort -S 16M -T \"$1\" \"$2\" -o /dev/null && grep '^read_bytes:' /proc/$$/io",
		"sh", tmp, input, NULL,
	};
	struct uot_cmd c = { .argv = argv, .preload = true, .out = out };
	struct uot_cgroup cg;
	struct uot_result r;
	unsigned long long bytes = ~0ULL;
	int ran;
	FILE *f;

	if (!droppable)
		return;
	if (_i == 0 && !temp_files_left_here(256 * MiB)) {
		printf("hooks: temporary file read back: not tried: memory is not mostly free, "
		       "or a memory cgroup limits us\n");
		return;
	}
	if (_i == 1 && (geteuid() != 0 || uot_cgroup_supported() != 0)) {
		printf("hooks: temporary file read back in a cgroup: skipped: %s\n",
		       geteuid() ? "not root" : uot_why());
		return;
	}
	path_in(input, "sort-input");
	path_in(tmp, "sort-tmp");
	path_in(out, "sort-io");
	ck_assert(mkdir(tmp, 0700) == 0 || errno == EEXIST);
	write_lines(input, 2800000);
	ck_assert_int_ge(resident_mib(input), 95);
	memset(&cg, 0, sizeof(cg));
	if (_i == 1) {
		ck_assert_msg(uot_cgroup_create(&cg, 1024 * MiB) == 0, "%s", uot_why());
		c.cg = &cg;
	}
	ran = uot_run(&c, &r);
	if (_i == 1)
		uot_cgroup_remove(&cg);
	unlink(input);
	ck_assert_msg(ran == 0 && uot_exited_ok(r.status), "sort: %s",
		      ran ? uot_why() : uot_status_str(r.status));
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	if (fgets(text, sizeof(text), f))
		sscanf(text, "read_bytes: %llu", &bytes);
	fclose(f);
	ck_assert_msg(bytes != ~0ULL, "no read_bytes from sort's shell");
	printf("hooks: sort -S 16M of 100 MB%s: %.1f MiB read from disk\n",
	       _i ? " in a 1 GiB cgroup" : "", (double)bytes / MiB);
	/*
	 * Memory was mostly free before sort; others' page cache (a second
	 * suite run beside this one) can take that away while it runs, and the
	 * library then rightly guards the file: not a failure of the rule.
	 */
	if (_i == 0 && bytes >= 16 * MiB && !temp_files_left_here(0)) {
		printf("hooks: temporary file read back: not tried: memory became short while "
		       "sort ran\n");
		return;
	}
	if (_i == 0)
		ck_assert_msg(bytes < 16 * MiB, "sort read %.1f MiB from disk: its temporary "
			      "files were dropped behind it", (double)bytes / MiB);
	else
		ck_assert_msg(bytes >= 32 * MiB, "sort in a limited cgroup read %.1f MiB from "
			      "disk: its merge file was left cached", (double)bytes / MiB);
}
END_TEST

/* A second thread of the program that does nothing: the process is threaded. */
static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/*
 * A limit put on a running process (systemctl set-property, docker update):
 * its temporary file, left to the kernel while it ran unlimited, is guarded
 * from the next second on.  Asked once per process, the file went on being
 * left cached under the new limit and pushed the cgroup's hot set out.
 * The limit is written as systemd and runc write it: opened O_WRONLY
 * without O_TRUNC, which changes none of the file's times (only the
 * truncation's setattr does).  _i 1: the program runs a second thread.
 */
START_TEST(test_temp_file_guarded_under_a_later_limit)
{
	char tpath[PATH_MAX], at[PATH_MAX], home[PATH_MAX + 64], pid[32];
	static char block[MiB];
	struct uot_cgroup cg;
	long before, after;
	pthread_t th;
	int t, i;

	if (!droppable)
		return;
	if (geteuid() != 0 || uot_cgroup_supported() != 0 || !temp_files_left_here(512 * MiB)) {
		printf("hooks: a limit after the start: skipped: %s\n", geteuid() ? "not root" :
		       uot_cgroup_supported() ? uot_why() : "memory is not mostly free");
		return;
	}
	/* Back where it came from after, not to the root: the suite may run in a cgroup. */
	ck_assert_msg(own_memory_cgroup(at, sizeof(at)), "no memory cgroup of ours");
	snprintf(home, sizeof(home), UOT_CGROUP_ROOT "%s%scgroup.procs", at, at[1] ? "/" : "");
	/* Limited far above RAM: no limit, as far as the library can tell. */
	ck_assert_msg(uot_cgroup_create(&cg, 1ULL << 60) == 0, "%s", uot_why());
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(at, sizeof(at), "%s/cgroup.procs", cg.path);
	ck_assert_msg(uot_write_str(at, pid) == 0, "cannot enter %s", cg.path);
	if (_i)
		ck_assert_int_eq(pthread_create(&th, NULL, idle_thread, NULL), 0);
	path_in(tpath, "late-limit-XXXXXX");
	t = mkstemp(tpath);
	ck_assert_int_ge(t, 0);
	memset(block, 't', sizeof(block));
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(write(t, block, sizeof(block)), sizeof(block));
	before = resident_mib(tpath);
	snprintf(at, sizeof(at), "%s/memory.limit_in_bytes", cg.path);
	ck_assert_msg(uot_write_str(at, "1073741824") == 0, "cannot limit %s", cg.path);
	sleep(2);
	for (i = 0; i < 128; i++)
		ck_assert_int_eq(write(t, block, sizeof(block)), sizeof(block));
	ck_assert_int_eq(fdatasync(t), 0);
	ck_assert_int_eq(close(t), 0);
	after = resident_mib(tpath);
	unlink(tpath);
	if (_i) {
		pthread_cancel(th);
		pthread_join(th, NULL);
	}
	ck_assert_int_eq(uot_write_str(home, pid), 0);
	uot_cgroup_remove(&cg);
	printf("hooks: a temporary file, a 1 GiB limit set after its first 16 MiB%s: %ld MiB "
	       "cached then, %ld of 144 MiB at close\n", _i ? ", two threads" : "", before,
	       after);
	ck_assert_msg(before >= 15, "the first 16 MiB were not left cached (%ld MiB): the test "
		      "cannot tell", before);
	ck_assert_msg(after <= 72, "%ld of 144 MiB stayed cached: the limit set after the start "
		      "was never seen", after);
}
END_TEST

static Suite *hooks_suite(void)
{
	Suite *s = suite_create("hooks");
	TCase *results = tcase_create("preloaded");
	TCase *copies = tcase_create("copies");
	TCase *guard = tcase_create("guard");

	tcase_add_test(results, test_library_is_preloaded);
	suite_add_tcase(s, results);

	tcase_set_timeout(copies, 120);
	tcase_add_test(copies, test_copy_file_range_whole_file);
	tcase_add_test(copies, test_copy_file_range_with_offsets);
	tcase_add_test(copies, test_copy_file_range_same_file_not_cut);
	tcase_add_test(copies, test_sendfile_with_offset);
	suite_add_tcase(s, copies);

	tcase_set_timeout(guard, 120);
	tcase_add_loop_test(guard, test_read_stream_is_dropped, 0, 2);
	tcase_add_loop_test(guard, test_small_file_left_alone, 0, 2);
	tcase_add_test(guard, test_random_reads_left_alone);
	tcase_add_loop_test(guard, test_precached_pages_stay, 0, 2);
	tcase_add_loop_test(guard, test_write_stream_is_flushed_and_dropped, 0, 2);
	tcase_add_test(guard, test_write_stream_keeps_the_programs_lock);
	tcase_add_test(guard, test_tree_written_file_keeps_the_programs_lock);
	tcase_add_test(guard, test_new_file_written_out_before_the_threshold);
	tcase_add_test(guard, test_small_stdio_calls_stream);
	tcase_add_test(guard, test_overwrite_of_cached_file_stays);
	tcase_add_test(guard, test_raw_close_then_reuse);
	tcase_add_test(guard, test_dup2_over_a_stream);
	tcase_add_test(guard, test_raw_close_of_ignored_then_reuse);
	tcase_add_test(guard, test_std_descriptor_ignored_early);
	tcase_add_loop_test(guard, test_quiet_number_reused, 0, N_REUSE);
	tcase_add_loop_test(guard, test_temp_file_read_back_from_memory, 0, 2);
	tcase_add_test(guard, test_temp_mark_not_kept_by_the_next_file);
	tcase_add_loop_test(guard, test_temp_file_guarded_under_a_later_limit, 0, 2);
	suite_add_tcase(s, guard);
	return s;
}

int main(int argc, char **argv)
{
	char copy[PATH_MAX];

	(void)argc;
	if (!getenv(CHILD_MARK))
		uot_reexec_preloaded(argv, CHILD_MARK, NULL);
	suite_setup();
	path_in(copy, "cfr-copy");
	setenv("UO_HOOKS_BIG", big, 1);
	setenv("UO_HOOKS_COPY", copy, 1);
	if (!droppable)
		printf("check_hooks: %s is on tmpfs: drop tests pass without checking\n", dir);
	return uot_check_run(hooks_suite(), false);
}
