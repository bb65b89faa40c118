/*
 * A program thread that opens and closes a file again and again, and
 * expects the lowest free descriptor number each time (POSIX says it is
 * the one it gets), while the main thread writes a temporary file: what
 * the program sees must not depend on the library, whose limit re-check
 * runs from the write path once a second.
 *
 *   fd_numbers DIR MIB		prints "N numbers changed, file left M% cached"
 *   fd_numbers DIR MIB emfile	first fills the descriptor table, so the
 *				library's first look at the limits finds no
 *				descriptor; then a second temporary file,
 *				two seconds later: "mostly cached" if the
 *				free-memory rules still apply to it
 *
 * The file is written 1 MiB at a time with a pause of 20 ms each, so the
 * writes span a few seconds of re-checks.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static long changed, opens;

static void spin_us(long us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + b.tv_nsec - a.tv_nsec < us * 1000);
}

static void *opener(void *arg)
{
	int want = -1, fd;

	(void)arg;
	while (!atomic_load(&stop)) {
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (want < 0)
			want = fd;
		else if (fd != want)
			changed++;
		opens++;
		close(fd);
		/* Some work between a close and the next open, as a program does. */
		spin_us(5);
	}
	return NULL;
}

/* Percent of the file cached. */
static unsigned cached_pct(int fd, size_t size)
{
	unsigned char *vec = malloc(size / 4096 + 1);
	void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	size_t i, n = 0;

	if (!vec || map == MAP_FAILED || mincore(map, size, vec) != 0)
		return 0;
	for (i = 0; i < size / 4096; i++)
		n += vec[i] & 1;
	munmap(map, size);
	free(vec);
	return (unsigned)(n * 100 / (size / 4096));
}

static int temp_file(const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/fdnum-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		exit(2);
	}
	unlink(path);
	return fd;
}

static void write_mib(int fd, unsigned mib, bool paced)
{
	static char block[1 << 20];
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	unsigned i;

	memset(block, 'n', sizeof(block));
	for (i = 0; i < mib; i++) {
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
			perror("write");
			exit(2);
		}
		if (paced)
			nanosleep(&pause, NULL);
	}
}

int main(int argc, char **argv)
{
	unsigned mib = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	pthread_t th;
	int fd, spare[4096], n = 0, i;

	if (argc < 3 || !mib) {
		fprintf(stderr, "usage: fd_numbers DIR MIB [emfile]\n");
		return 2;
	}
	if (argc > 3 && !strcmp(argv[3], "emfile")) {
		/* The first window's look at the limits meets a full table. */
		struct rlimit rl = { 64, 64 };

		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			return 2;
		fd = temp_file(argv[1]);
		while (n < 4096 && (spare[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
			n++;
		write_mib(fd, 16, false);
		for (i = 0; i < n; i++)
			close(spare[i]);
		close(fd);
		/* A second later the limits are asked again; a new file is written. */
		sleep(2);
		fd = temp_file(argv[1]);
		write_mib(fd, mib, false);
		/* Written back, then three windows more: a guarded file has its start dropped. */
		if (fdatasync(fd) != 0)
			return 2;
		write_mib(fd, 24, false);
		printf("second temporary file %s cached\n",
		       cached_pct(fd, (size_t)(mib + 24) << 20) >= 90 ? "mostly" : "not");
		return 0;
	}
	fd = temp_file(argv[1]);
	/* Past the stream threshold first: its one note in the record is made then. */
	write_mib(fd, 40, false);
	if (pthread_create(&th, NULL, opener, NULL) != 0)
		return 2;
	write_mib(fd, mib, true);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("%ld of %s numbers changed, file left %s cached\n", changed,
	       opens > 1000 ? "over 1000" : "too few", cached_pct(fd, (size_t)(mib + 40) << 20) >= 90 ?
	       "mostly" : "not");
	return 0;
}
