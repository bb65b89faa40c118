/*
 * review_probe SCENARIO ARGS...: small programs that reproduce what an
 * outside review found, each printing a transcript that the tests compare
 * with and without libuseonce.
 *
 *   pointers FILE	every copy hook given a bad offset pointer, every stdio
 *			hook a NULL or wild stream with a request for nothing:
 *			one line per call, "name result errno"
 *   readback FILE MIB	writes MIB MiB (each MiB its own byte), reads them
 *			back before any sync, then fsync: "bad N" (MiB that
 *			did not read back as written), "fsync R ERRNO"
 *   errno FILE		reads 3 bytes through descriptor 600 (a chunk of the
 *			library's table never used before) with the address
 *			space limited: "read R errno E"
 *   outfd OUT IN	opens OUT (taking the lowest free descriptor), streams
 *			IN through read(2), writes "payload" to OUT
 *   reuse2 OUT IN	closes stderr, opens OUT (it gets 2), streams IN,
 *			writes "payload" to OUT
 *   mixed FILE		7 MiB read at the cursor from 0, then pread from
 *			40 MiB to the end
 *
 * SPDX-License-Identifier: MIT
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define MIB	(1 << 20)

static void line(const char *name, long r)
{
	printf("%s %ld %s\n", name, r, r < 0 ? strerrorname_np(errno) : "-");
}

static int pointers(const char *path)
{
	int in = open(path, O_RDONLY), out, p[2];
	char tmp[4096];
	off64_t *volatile bad = (off64_t *)8;
	const struct iovec *volatile badv = (const struct iovec *)8;

	snprintf(tmp, sizeof(tmp), "%s.out", path);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (in < 0 || out < 0 || pipe(p) != 0)
		return 2;
	line("copy_file_range-in", copy_file_range(in, bad, out, NULL, 100, 0));
	line("copy_file_range-out", copy_file_range(in, NULL, out, bad, 100, 0));
	line("copy_file_range-big", copy_file_range(in, bad, out, NULL, 64 * MIB, 0));
	line("sendfile", sendfile(out, in, (off_t *)bad, 100));
	line("sendfile-big", sendfile(out, in, (off_t *)bad, 64 * MIB));
	line("sendfile64", sendfile64(out, in, bad, 100));
	line("splice-in", splice(in, bad, p[1], NULL, 100, 0));
	if (write(p[1], "x", 1) != 1)
		return 2;
	line("splice-out", splice(p[0], NULL, out, bad, 1, 0));
	line("readv", readv(in, badv, 1));
	line("preadv", preadv(in, badv, 1, 0));
	unlink(tmp);
	{
		/*
		 * A request for nothing returns before libc touches the stream,
		 * even a NULL one (libc declares it never NULL: keep the
		 * compiler from knowing).
		 */
		FILE *volatile none = NULL;
		char b[8];

		line("fread-0", (long)fread(b, 0, 4, none));
		line("fread_unlocked-0", (long)fread_unlocked(b, 4, 0, none));
		line("fwrite-0", (long)fwrite(b, 1, 0, none));
		line("fwrite_unlocked-0", (long)fwrite_unlocked(b, 0, 1, none));
		line("fgets-1", fgets(b, 1, none) == b ? 1 : 0);
		line("fgets-0", fgets(b, 0, none) == NULL ? 1 : 0);
		line("fgets_unlocked-1", fgets_unlocked(b, 1, none) == b ? 1 : 0);
	}
	{
		/* The same with a wild pointer, and line readers given no buffer. */
		FILE *volatile wild = (FILE *)0x10;
		char b[8];
		ssize_t r;

		line("fread-wild-0", (long)fread(b, 4, 0, wild));
		line("fwrite-wild-0", (long)fwrite(b, 0, 1, wild));
		line("fgets-wild-1", fgets(b, 1, wild) == b ? 1 : 0);
		r = getline(NULL, NULL, wild);
		line("getline-wild-nobuf", (long)r);
		r = getdelim(NULL, NULL, ';', wild);
		line("getdelim-wild-nobuf", (long)r);
	}
	return 0;
}

static int readback(const char *path, long mib)
{
	static char block[MIB], got[MIB];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644), bad = 0, r;
	long i;

	if (fd < 0)
		return 2;
	for (i = 0; i < mib; i++) {
		memset(block, (int)(0x40 + i % 64), sizeof(block));
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
			printf("write %ld %s\n", i, strerrorname_np(errno));
			return 1;
		}
	}
	for (i = 0; i < mib; i++) {
		memset(block, (int)(0x40 + i % 64), sizeof(block));
		if (pread(fd, got, sizeof(got), (off_t)i * MIB) != (ssize_t)sizeof(got) ||
		    memcmp(got, block, sizeof(got)))
			bad++;
	}
	printf("bad %d\n", bad);
	r = fsync(fd);
	printf("fsync %d %s\n", r, r ? strerrorname_np(errno) : "-");
	return 0;
}

static int errno_case(const char *path)
{
	struct rlimit rl;
	unsigned long pages = 0;
	char buf[3];
	FILE *f = fopen("/proc/self/statm", "r");
	int fd = open(path, O_RDONLY);
	ssize_t r;

	if (!f || fscanf(f, "%lu", &pages) != 1 || fd < 0 || dup2(fd, 600) != 600)
		return 2;
	fclose(f);
	/* Exactly what is mapped now: any new mapping fails. */
	rl.rlim_cur = rl.rlim_max = pages * (unsigned long)sysconf(_SC_PAGESIZE);
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 2;
	errno = 0;
	r = read(600, buf, sizeof(buf));
	printf("read %zd errno %s\n", r, errno ? strerrorname_np(errno) : "0");
	return 0;
}

static int stream_in(const char *in)
{
	static char buf[MIB];
	int fd = open(in, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return n < 0 ? -1 : 0;
}

static int outfd(const char *out, const char *in, bool reuse_stderr)
{
	int fd;

	if (reuse_stderr)
		close(2);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || stream_in(in) != 0 || write(fd, "payload\n", 8) != 8)
		return 2;
	printf("fd %d\n", fd);
	return 0;
}

static int mixed(const char *path)
{
	static char buf[MIB];
	int fd = open(path, O_RDONLY);
	off_t at = 40 * MIB;
	ssize_t n;
	int i;

	if (fd < 0)
		return 2;
	for (i = 0; i < 7; i++)
		if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 2;
	while ((n = pread(fd, buf, sizeof(buf), at)) > 0)
		at += n;
	if (n < 0)
		return 2;
	/* Then on at the cursor, from 7 MiB, for a few MiB more. */
	for (i = 0; i < 4; i++)
		if (read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 2;
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "pointers"))
		return pointers(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "readback"))
		return readback(argv[2], atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "errno"))
		return errno_case(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "outfd"))
		return outfd(argv[2], argv[3], false);
	if (argc == 4 && !strcmp(argv[1], "reuse2"))
		return outfd(argv[2], argv[3], true);
	if (argc == 3 && !strcmp(argv[1], "mixed"))
		return mixed(argv[2]);
	fprintf(stderr, "usage: review_probe SCENARIO ARGS (see the source)\n");
	return 2;
}
