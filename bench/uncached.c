/*
 * Which way should a stream leave the cache: the guard's own (fadvise
 * behind the reader; writeback started early and waited for, then fadvise)
 * or the kernel's uncached buffered I/O (RWF_DONTCACHE, Linux 6.14)?
 * Measured per direction, side by side in one run, on a cold 1 GiB file
 * with 1 MiB and 128 KiB requests: throughput (writes until fsync returns,
 * so that every method has put its data on disk), the file's peak
 * residency while it ran and what stayed after.
 *
 *	uncached [MIB] [REPEATS]	the table (default 1024 MiB, 3 repeats)
 *	uncached worker read|write plain|dontcache FILE MIB REQUEST
 *
 * The plain worker run under libuseonce is the guard's way.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "testlib.h"

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x80
#endif

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads or writes the file; prints MB/s on stdout.  Exit 3: the kernel refused the flag. */
static int worker(char **argv)
{
	bool writing = strcmp(argv[0], "write") == 0;
	bool uncached = strcmp(argv[1], "dontcache") == 0;
	uint64_t total = strtoull(argv[3], NULL, 10) << 20, done = 0;
	size_t req = strtoul(argv[4], NULL, 10);
	char *buf = aligned_alloc(4096, req);
	struct iovec iov = { buf, req };
	double t0;
	int fd;

	fd = open(argv[2], writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0644);
	if (fd < 0 || !buf) {
		perror(argv[2]);
		return 2;
	}
	memset(buf, 0x6b, req);
	t0 = now_s();
	while (done < total) {
		ssize_t n;

		if (uncached)
			n = writing ? pwritev2(fd, &iov, 1, -1, RWF_DONTCACHE)
				    : preadv2(fd, &iov, 1, -1, RWF_DONTCACHE);
		else
			n = writing ? write(fd, buf, req) : read(fd, buf, req);
		if (n < 0 && uncached && (errno == EOPNOTSUPP || errno == EINVAL))
			return 3;
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	if (writing && fsync(fd) != 0) {
		perror("fsync");
		return 2;
	}
	close(fd);
	printf("%.1f\n", (double)done / (now_s() - t0) / 1e6);
	return 0;
}

struct method {
	const char *name;
	const char *mode;	/* the worker's */
	bool preload;
};

static const struct method methods[] = {
	{ "kernel alone", "plain", false },
	{ "libuseonce", "plain", true },
	{ "RWF_DONTCACHE", "dontcache", false },
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const dirs[] = { "read", "write" };
	static const size_t reqs[] = { 1 << 20, 128 << 10 };
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : uob_smoke() ? 64 : 1024;
	int repeats = argc > 2 ? atoi(argv[2]) : uob_smoke() ? 1 : 3;
	char self[600], file[600], written[600], mibs[32], reqs_s[32];
	unsigned d, q, m;
	ssize_t n;
	int rep;

	if (argc > 1 && strcmp(argv[1], "worker") == 0 && argc == 7)
		return worker(argv + 2);
	if (!mib || repeats < 1 || repeats > 15) {
		fprintf(stderr, "usage: uncached [MIB] [REPEATS]\n");
		return 2;
	}
	uob_init("uncached", "uncached.md");
	uob_md("## 4. Uncached I/O: the guard's way or the kernel's\n\n");
	if (uot_scratch_create() != 0) {
		fprintf(stderr, "uncached: %s\n", uot_why());
		return uob_finish(1);
	}
	uob_md("A cold file of %llu MiB, read or written whole by a fresh process; writes are timed "
	    "until fsync returns.  %d repeat(s), medians (min..max).  \"libuseonce\" is the "
	    "plain loop preloaded with the library (USEONCE_REUSE=0).\n\n",
	    (unsigned long long)mib, repeats);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		perror("uncached: /proc/self/exe");
		uot_scratch_remove();
		return 1;
	}
	self[n] = '\0';
	uot_scratch_path(file, sizeof(file), "stream");
	uot_scratch_path(written, sizeof(written), "out");
	snprintf(mibs, sizeof(mibs), "%llu", (unsigned long long)mib);
	if (uot_make_file(file, mib << 20, 11) != 0) {
		fprintf(stderr, "uncached: %s\n", uot_why());
		uot_scratch_remove();
		return 1;
	}
	uob_md("| direction | request | method | MB/s, median (min..max) | peak resident MiB | "
	       "resident after MiB |\n|---|---|---|---|---|---|\n");
	for (d = 0; d < 2; d++) {
		for (q = 0; q < 2; q++) {
			snprintf(reqs_s, sizeof(reqs_s), "%zu", reqs[q]);
			for (m = 0; m < 3 && !uot_interrupted; m++) {
				double mbs[15];
				uint64_t peak = 0, after = 0;
				int ok = 0;

				for (rep = 0; rep < repeats && !uot_interrupted; rep++) {
					const char *target = d ? written : file;
					const char *wargv[] = { self, "worker", dirs[d], methods[m].mode,
								target, mibs, reqs_s, NULL };
					char res_path[620], line[64] = "";
					/* Each repeat streams the same file: no reuse record. */
					const char *env[] = { "USEONCE_REUSE=0", NULL };
					struct uot_cmd c = { .argv = wargv, .preload = methods[m].preload,
							     .env = env, .out = res_path,
							     .watch = { target } };
					struct uot_result r;
					FILE *f;

					uot_scratch_path(res_path, sizeof(res_path), "result");
					if (d)
						unlink(written);
					else
						uot_make_cold(file);
					if (uot_run(&c, &r) != 0)
						break;
					if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3) {
						uob_md("| %s | %s | %s | refused by this kernel or filesystem | "
						       "| |\n", dirs[d], reqs_s, methods[m].name);
						break;
					}
					f = fopen(res_path, "r");
					if (f && fgets(line, sizeof(line), f) && uot_exited_ok(r.status))
						mbs[ok++] = atof(line);
					if (f)
						fclose(f);
					if (r.peak[0] > peak)
						peak = r.peak[0];
					after = r.after[0];
				}
				if (!ok)
					continue;
				qsort(mbs, (size_t)ok, sizeof(mbs[0]), cmp_double);
				uob_md("| %s | %zu KiB | %s | %.0f (%.0f..%.0f) | %.0f | %.0f |\n", dirs[d],
				       reqs[q] >> 10, methods[m].name, mbs[ok / 2], mbs[0], mbs[ok - 1],
				       uot_mib(peak), uot_mib(after));
				fflush(stdout);
			}
		}
	}
	uot_scratch_remove();
	return uob_finish(uot_interrupted ? 130 : 0);
}
