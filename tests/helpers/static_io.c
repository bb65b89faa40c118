/*
 * A program the preload cannot reach: check_watch builds it with -static,
 * so LD_PRELOAD is never read.  It moves data the ways programs do:
 *
 *	static_io read FILE		read(2) in 1 MiB calls to the end
 *	static_io write FILE MIB	write(2) MIB MiB of a pattern
 *	static_io copy SRC DST		copy_file_range(2) in 8 MiB calls
 *	static_io pcopy SRC DST		pread/pwrite: no file position moves
 *	static_io pskip SRC SKIP	pread SRC in 1 MiB calls; between two, lseek
 *					SKIP 8 MiB forward and read 4 KiB of it;
 *					prints the most of SRC seen cached (MiB)
 *	static_io random FILE COUNT	COUNT times: lseek to a pseudo-random 4 KiB
 *					block of FILE, read 4 KiB (a database's
 *					lookups: no stream, whatever the samples
 *					of its position show)
 *	static_io readafter A B		A read(2) whole and closed, unpaced, then B
 *					as "read" reads (pace and hold count B's
 *					bytes only): a process whose disk reads
 *					(/proc/PID/io) are not all of B
 *	static_io read2 A B		two threads, each read(2)s its own file in
 *					1 MiB calls to the end (unpaced): two
 *					streams in one process, whose read counters
 *					(/proc/PID/io) are shared
 *
 * A last argument "exit=N" makes it exit with N once done (0 otherwise),
 * so that a test can see the status come through the watcher.
 * STATIC_IO_MIBPS=N in the environment paces writes to N MiB/s: a writer
 * that the disk keeps up with (the watcher cannot slow a faster one); and
 * reads, for a reader that is still reading when the watcher looks.
 * STATIC_IO_HOLD=MIB:PATH stops it once MIB MiB have moved until PATH
 * exists (a minute at most), the pace then going on from there: a test
 * attaches a watcher to a copy known to be running, with no race.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CHUNK	(1 << 20)

static char buf[CHUNK];

static double mibps, t0;
static long long hold_at;
static const char *hold_path;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Written so far: no faster than the pace asks. */
static void pace(long long done)
{
	double ahead;

	if (hold_path && done >= hold_at) {
		double held = now();
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		int i;

		for (i = 0; i < 6000 && access(hold_path, F_OK) != 0; i++)
			nanosleep(&ts, NULL);
		hold_path = NULL;
		t0 += now() - held;
	}
	if (mibps <= 0)
		return;
	ahead = (double)done / (mibps * 1048576.0) - (now() - t0);
	if (ahead > 0) {
		struct timespec ts = { (time_t)ahead, (long)((ahead - (double)(time_t)ahead) * 1e9) };

		nanosleep(&ts, NULL);
	}
}

/* SRC's pages in the page cache, in MiB (cachestat(2)); 0 if it cannot tell. */
static long long cached_mib(int fd)
{
	struct { unsigned long long off, len; } range = { 0, 0 };
	struct { unsigned long long cache, dirty, wb, evicted, recently_evicted; } cs;

	if (syscall(451, fd, &range, &cs, 0) != 0)
		return 0;
	return (long long)(cs.cache * (unsigned long long)sysconf(_SC_PAGESIZE) >> 20);
}

static int fail(const char *what)
{
	perror(what);
	return 1;
}

static char buf2[CHUNK];

/* read2's second thread: B read to the end; its status through the pointer. */
static void *read_other(void *arg)
{
	const char *path = arg;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY)) < 0)
		return (void *)(long)fail(path);
	while ((n = read(fd, buf2, CHUNK)) > 0)
		;
	close(fd);
	return (void *)(long)(n < 0 ? fail("read") : 0);
}

int main(int argc, char **argv)
{
	int status = 0, in = -1, out = -1;
	long long mib, i, off = 0;
	ssize_t n;

	if (getenv("STATIC_IO_MIBPS"))
		mibps = atof(getenv("STATIC_IO_MIBPS"));
	if (getenv("STATIC_IO_HOLD")) {
		char *colon = strchr(getenv("STATIC_IO_HOLD"), ':');

		if (colon) {
			hold_at = atoll(getenv("STATIC_IO_HOLD")) << 20;
			hold_path = colon + 1;
		}
	}
	t0 = now();
	if (argc > 3 && !strncmp(argv[argc - 1], "exit=", 5)) {
		status = atoi(argv[argc - 1] + 5);
		argc--;
	}
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: static_io read FILE | write FILE MIB | copy SRC DST | "
			"pcopy SRC DST | pskip SRC SKIP | random FILE COUNT | readafter A B | "
			"read2 A B [exit=N]\n");
		return 2;
	}
	if (!strcmp(argv[1], "read")) {
		if ((in = open(argv[2], O_RDONLY)) < 0)
			return fail(argv[2]);
		while ((n = read(in, buf, CHUNK)) > 0)
			pace(off += n);
		if (n < 0)
			return fail("read");
	} else if (!strcmp(argv[1], "readafter") && argc == 4) {
		if ((in = open(argv[2], O_RDONLY)) < 0)
			return fail(argv[2]);
		while ((n = read(in, buf, CHUNK)) > 0)
			;
		if (n < 0)
			return fail("read");
		close(in);
		if ((in = open(argv[3], O_RDONLY)) < 0)
			return fail(argv[3]);
		t0 = now();
		while ((n = read(in, buf, CHUNK)) > 0)
			pace(off += n);
		if (n < 0)
			return fail("read");
	} else if (!strcmp(argv[1], "write") && argc == 4) {
		if ((out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
			return fail(argv[2]);
		mib = atoll(argv[3]);
		for (i = 0; i < mib; i++) {
			memset(buf, (int)(i & 0xff), CHUNK);
			if (write(out, buf, CHUNK) != CHUNK)
				return fail("write");
			pace((i + 1) * CHUNK);
		}
	} else if ((!strcmp(argv[1], "copy") || !strcmp(argv[1], "pcopy")) && argc == 4) {
		if ((in = open(argv[2], O_RDONLY)) < 0)
			return fail(argv[2]);
		if ((out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
			return fail(argv[3]);
		if (argv[1][0] == 'c') {
			while ((n = copy_file_range(in, NULL, out, NULL, 8 << 20, 0)) > 0)
				pace(off += n);
			if (n < 0)
				return fail("copy_file_range");
		} else {
			while ((n = pread(in, buf, CHUNK, off)) > 0) {
				if (pwrite(out, buf, (size_t)n, off) != n)
					return fail("pwrite");
				off += n;
				pace(off);
			}
			if (n < 0)
				return fail("pread");
		}
	} else if (!strcmp(argv[1], "pskip") && argc == 4) {
		struct stat sb, skip;
		long long peak = 0, c;

		/*
		 * The skip's position moves 8 MiB for 4 KiB read: a descriptor
		 * whose moves carry no data, beside preads that move none.
		 */
		if ((in = open(argv[2], O_RDONLY)) < 0 || fstat(in, &sb) != 0)
			return fail(argv[2]);
		if ((out = open(argv[3], O_RDONLY)) < 0 || fstat(out, &skip) != 0)
			return fail(argv[3]);
		while ((n = pread(in, buf, CHUNK, off)) > 0) {
			off += n;
			if (lseek(out, 8 << 20, SEEK_CUR) >= skip.st_size)
				lseek(out, 0, SEEK_SET);
			if (read(out, buf, 4096) < 0)
				return fail("read");
			pace(off);
			if ((c = cached_mib(in)) > peak)
				peak = c;
		}
		if (n < 0)
			return fail("pread");
		close(out);
		out = -1;
		printf("%lld\n", peak);
	} else if (!strcmp(argv[1], "random") && argc == 4) {
		struct stat sb;
		unsigned long long x = 88172645463325252ULL, blocks;
		long long count = atoll(argv[3]);

		if ((in = open(argv[2], O_RDONLY)) < 0 || fstat(in, &sb) != 0)
			return fail(argv[2]);
		blocks = (unsigned long long)sb.st_size / 4096;
		if (!blocks)
			return fail("empty file");
		/* A fixed xorshift sequence: every run reads the same blocks. */
		for (i = 0; i < count; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (lseek(in, (off_t)(x % blocks * 4096), SEEK_SET) < 0)
				return fail("lseek");
			if ((n = read(in, buf, 4096)) < 0)
				return fail("read");
			pace(off += n);
		}
	} else if (!strcmp(argv[1], "read2") && argc == 4) {
		pthread_t other;
		void *ret;

		if (pthread_create(&other, NULL, read_other, argv[3]) != 0)
			return fail("pthread_create");
		if ((in = open(argv[2], O_RDONLY)) < 0)
			return fail(argv[2]);
		while ((n = read(in, buf, CHUNK)) > 0)
			;
		if (n < 0)
			return fail("read");
		pthread_join(other, &ret);
		if (ret)
			return 1;
	} else {
		fprintf(stderr, "static_io: unknown mode %s\n", argv[1]);
		return 2;
	}
	if (out >= 0 && close(out) != 0)
		return fail("close");
	return status;
}
