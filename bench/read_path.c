/*
 * read_path: what the guard costs a program whose file is already cached.
 *
 * The project's second seed measured reads of a file that stayed cached
 * throughout, with small and large requests, touching the data or not.
 * Here the same eight combinations run with and without libuseonce, for
 * reads and for writes over a cached file, and the ratio guarded /
 * unguarded is what matters: a guard that makes cached I/O slower has a
 * price every program pays.
 *
 * Each timed pass is a child process (this program again, --child) that
 * opens the file, moves all of it in requests of one size, closes it and
 * reports the time from open to close.  Before every pass the file is made
 * fully cached (and clean, for writes) again, whatever the pass before did
 * to it; after every guarded pass its residency is recorded, because a
 * guard that drops a file somebody had cached loses more than time.
 * Without and with alternate, first one then the other, so drift cancels.
 *
 * A write pass is timed as the program sees it (the writes and close);
 * the fdatasync that the parent runs afterwards is timed too, so "until on
 * disk" compares like with like: the guard writes back during the pass,
 * the kernel alone after it.
 *
 * Instructions added per call are counted with callgrind, which is
 * deterministic where the clock on two shared cores is not.
 *
 *	UO_BENCH_CACHED_MIB	the cached file (default 1024, smoke 48)
 *	UO_BENCH_READ_REPEATS	repeats of each read pass (default 15, smoke 1): a
 *				pass takes a fifth of a second and its noise is
 *				larger than the difference sought
 *	UO_BENCH_WRITE_REPEATS	repeats of each write pass (default 3, smoke 1): a
 *				pass and its flush take seconds
 *	UO_BENCH_CG_MIB		bytes moved under callgrind (default 64, smoke 40;
 *				0: no callgrind); past the stream threshold, so a
 *				stream's advice is counted too
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

enum op { OP_READ, OP_WRITE, OP_N };
enum with { W_WITHOUT, W_WITH, W_N };

static const char *const op_name[OP_N] = { "read", "write" };
static const size_t req_size[] = { 4096, 1 << 20 };
static const char *const req_name[] = { "4 KiB", "1 MiB" };

#define NREQ	(sizeof(req_size) / sizeof(req_size[0]))

struct cell {
	struct uob_stat mbps[W_N];	/* as the program sees it */
	struct uob_stat disk_mbps[W_N];	/* writes: until fdatasync returned */
	struct uob_stat resident;	/* % of the file cached after the guarded pass */
	struct uob_stat rewarm;		/* MiB read back in before the next pass */
	char error[200];
};

static struct {
	char self[PATH_MAX];
	char file[PATH_MAX];
	char out[PATH_MAX];
	uint64_t size;
	unsigned repeats[OP_N];
	struct cell cells[OP_N][NREQ][2];
	bool valgrind_warned;
	unsigned failures;
} B;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The measured program: one pass over 'limit' bytes of the file (0: all
 * of it) in requests of 'bs'.  'touch' reads every word of what was read,
 * or writes every word of what is about to be written.  Prints seconds.
 * "none" opens and closes only: callgrind's baseline for start-up.
 */
static int child(const char *op, size_t bs, bool touch, const char *path, uint64_t limit)
{
	uint64_t *buf, sum = 0, done = 0, size;
	bool wr = !strcmp(op, "write");
	struct stat st;
	double start;
	int fd;

	buf = aligned_alloc(4096, bs);
	if (!buf)
		return 1;
	memset(buf, 0x5a, bs);
	start = now();
	fd = open(path, wr ? O_WRONLY : O_RDONLY);
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		return 1;
	}
	size = limit && limit < (uint64_t)st.st_size ? limit : (uint64_t)st.st_size;
	while (strcmp(op, "none") && done < size) {
		size_t n = size - done < bs ? (size_t)(size - done) : bs, i;
		ssize_t got;

		if (wr && touch)
			for (i = 0; i < n / sizeof(*buf); i++)
				buf[i] = done + i;
		got = wr ? write(fd, buf, n) : read(fd, buf, n);
		if (got <= 0) {
			if (got < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "read_path: %s %s: %s\n", op, path,
				got < 0 ? strerror(errno) : "unexpected end of file");
			return 1;
		}
		if (!wr && touch)
			for (i = 0; i < (size_t)got / sizeof(*buf); i++)
				sum += buf[i];
		done += (uint64_t)got;
	}
	if (close(fd) != 0) {
		perror("close");
		return 1;
	}
	/* The sum is printed so the compiler cannot drop the loop that makes it. */
	printf("%.6f %llu\n", now() - start, (unsigned long long)(sum & 1));
	return 0;
}

static void bench_cleanup(void)
{
	uot_scratch_remove();
}

__attribute__((noreturn))
static void bench_fail(const char *what)
{
	uob_fail(what, bench_cleanup);
}

/*
 * Reads back whatever is not cached (a guarded pass may have dropped it)
 * and writes out whatever is dirty, so every pass starts from a file that
 * is fully cached and clean.  Returns the MiB that had to be read back.
 */
static double make_cached(void)
{
	int64_t before = uot_resident(B.file, NULL), after;
	char *buf;
	int fd;

	fd = open(B.file, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fdatasync(fd) != 0)
		bench_fail("writing the file out");
	if (before < (int64_t)B.size) {
		buf = malloc(UOT_MIB);
		if (!buf)
			bench_fail("out of memory");
		while (read(fd, buf, UOT_MIB) > 0)
			if (uot_interrupted)
				break;
		free(buf);
	}
	close(fd);
	after = uot_resident(B.file, NULL);
	if (uot_interrupted)
		bench_fail("caching the file");
	if (after < (int64_t)B.size)
		uob_say("    (only %.1f%% of the file could be cached)\n",
			100.0 * (double)after / (double)B.size);
	return uot_mib((uint64_t)(after - (before > 0 ? before : 0)));
}

/* Runs one child pass; returns its seconds, or -1 (the reason in 'why'). */
static double run_pass(enum op op, size_t bs, bool touch, bool with, char *why, size_t why_size)
{
	char bs_s[32], buf[128];
	const char *argv[] = { B.self, "--child", op_name[op], bs_s, touch ? "touch" : "plain",
			       B.file, NULL };
	const char *env[] = { with ? uob_first_stream_env() : NULL, NULL };
	struct uot_result r;
	struct uot_cmd c;
	double secs = -1.0;
	FILE *f;

	snprintf(bs_s, sizeof(bs_s), "%zu", bs);
	memset(&c, 0, sizeof(c));
	c.argv = argv;
	c.preload = with;
	c.env = env;
	c.out = B.out;
	if (uot_run(&c, &r) != 0)
		bench_fail("running a pass");
	if (!uot_exited_ok(r.status)) {
		snprintf(why, why_size, "%s", uot_status_str(r.status));
		return -1.0;
	}
	f = fopen(B.out, "r");
	if (!f || !fgets(buf, sizeof(buf), f) || sscanf(buf, "%lf", &secs) != 1)
		snprintf(why, why_size, "no time reported");
	if (f)
		fclose(f);
	return secs;
}

static void one(enum op op, unsigned ri, bool touch, bool with)
{
	struct cell *cell = &B.cells[op][ri][touch];
	double rewarm, secs, flush = 0.0;
	char why[160] = "";

	rewarm = make_cached();
	secs = run_pass(op, req_size[ri], touch, with, why, sizeof(why));
	if (secs <= 0) {
		if (!cell->error[0])
			snprintf(cell->error, sizeof(cell->error), "%s", why[0] ? why : "no time");
		B.failures++;
		uob_say("    %s %s %s %s: FAILED: %s\n", op_name[op], req_name[ri],
			touch ? "touch" : "plain", with ? "with" : "without", why);
		return;
	}
	if (op == OP_WRITE) {
		double t0 = now();
		int fd = open(B.file, O_WRONLY | O_CLOEXEC);

		if (fd < 0 || fdatasync(fd) != 0)
			bench_fail("writing the file out");
		close(fd);
		flush = now() - t0;
		uob_add(&cell->disk_mbps[with], (double)B.size / (secs + flush) / 1e6);
	}
	uob_add(&cell->mbps[with], (double)B.size / secs / 1e6);
	if (with) {
		uob_add(&cell->resident, uot_resident_pct(B.file));
		uob_add(&cell->rewarm, rewarm);
	}
	uob_say("    %-5s %s %-5s %-7s %8.0f MB/s%s, cached after %5.1f%%\n", op_name[op],
		req_name[ri], touch ? "touch" : "plain", with ? "with" : "without",
		(double)B.size / secs / 1e6,
		op == OP_WRITE ? " (+ flush)" : "", uot_resident_pct(B.file));
}

static void ratio_fmt(char *out, size_t size, const struct uob_stat *with,
		      const struct uob_stat *without)
{
	if (!with->n || !without->n)
		snprintf(out, size, "-");
	else
		snprintf(out, size, "%.3f", uob_median(with) / uob_median(without));
}

static void table(void)
{
	unsigned ri;
	int op, t;

	uob_md("\n| op | request | data | without MB/s | with MB/s | with / without "
	       "| cached after, with | until on disk: without | with | with / without |\n");
	uob_md("|---|---|---|---|---|---|---|---|---|---|\n");
	for (op = 0; op < OP_N; op++)
		for (ri = 0; ri < NREQ; ri++)
			for (t = 0; t < 2; t++) {
				const struct cell *c = &B.cells[op][ri][t];
				char a[64], b[64], r[32], res[64], da[64], db[64], dr[32];

				if (c->error[0]) {
					uob_md("| %s | %s | %s | FAILED: %s | | | | | | |\n",
					       op_name[op], req_name[ri], t ? "touched" : "not touched",
					       c->error);
					continue;
				}
				uob_fmt(a, sizeof(a), &c->mbps[W_WITHOUT], "%.0f");
				uob_fmt(b, sizeof(b), &c->mbps[W_WITH], "%.0f");
				ratio_fmt(r, sizeof(r), &c->mbps[W_WITH], &c->mbps[W_WITHOUT]);
				uob_fmt(res, sizeof(res), &c->resident, "%.1f");
				if (op == OP_WRITE) {
					uob_fmt(da, sizeof(da), &c->disk_mbps[W_WITHOUT], "%.0f");
					uob_fmt(db, sizeof(db), &c->disk_mbps[W_WITH], "%.0f");
					ratio_fmt(dr, sizeof(dr), &c->disk_mbps[W_WITH],
						  &c->disk_mbps[W_WITHOUT]);
				} else {
					snprintf(da, sizeof(da), " ");
					snprintf(db, sizeof(db), " ");
					snprintf(dr, sizeof(dr), " ");
				}
				uob_md("| %s | %s | %s | %s | %s | %s | %s%% | %s | %s | %s |\n",
				       op_name[op], req_name[ri], t ? "touched" : "not touched",
				       a, b, r, res, da, db, dr);
			}
}

/* Sum of the "summary:" lines of a callgrind output: the instructions counted. */
static double cg_total(const char *path)
{
	char line[256];
	double total = -1.0;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "summary:", 8))
			total = (total < 0 ? 0 : total) + strtod(line + 8, NULL);
	if (f)
		fclose(f);
	return total;
}

/*
 * Instructions of one child run under callgrind; -1 if valgrind is missing
 * or failed.  Valgrind's own messages go to a log that is read for one
 * thing: a system call it does not know, which the library then sees fail.
 */
static double cg_run(const char *op, size_t bs, bool with, uint64_t limit)
{
	char bs_s[32], lim[32], outf[PATH_MAX], opt[PATH_MAX + 32], log[PATH_MAX];
	char logopt[PATH_MAX + 32], line[256];
	const char *argv[] = { "valgrind", "--tool=callgrind", opt, logopt, B.self, "--child",
			       op, bs_s, "plain", B.file, lim, NULL };
	const char *env[] = { with ? uob_first_stream_env() : NULL, NULL };
	struct uot_result r;
	struct uot_cmd c;
	double total = -1.0;
	FILE *f;

	snprintf(bs_s, sizeof(bs_s), "%zu", bs);
	snprintf(lim, sizeof(lim), "%llu", (unsigned long long)limit);
	uot_scratch_path(outf, sizeof(outf), "callgrind.out");
	uot_scratch_path(log, sizeof(log), "valgrind.log");
	snprintf(opt, sizeof(opt), "--callgrind-out-file=%s", outf);
	snprintf(logopt, sizeof(logopt), "--log-file=%s", log);
	unlink(outf);
	memset(&c, 0, sizeof(c));
	c.argv = argv;
	c.preload = with;
	c.env = env;
	c.out = "/dev/null";
	c.timeout_s = 600;
	if (uot_run(&c, &r) != 0) {
		if (uot_interrupted)
			bench_fail("callgrind");
	} else if (uot_exited_ok(r.status)) {
		total = cg_total(outf);
	}
	f = fopen(log, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "unhandled") && strstr(line, "syscall") && with)
			B.valgrind_warned = true;
	if (f)
		fclose(f);
	unlink(log);
	unlink(outf);
	return total;
}

static void instructions(uint64_t cg_bytes)
{
	unsigned ri;
	int op;

	if (!cg_bytes)
		return;
	uob_md("\nInstructions added per call by the library, counted with callgrind over the "
	       "first %.0f MiB of the cached file (data not touched; start-up subtracted):\n\n"
	       "| op | request | calls | without, per call | with, per call | added per call |\n"
	       "|---|---|---|---|---|---|\n", uot_mib(cg_bytes));
	for (op = 0; op < OP_N; op++)
		for (ri = 0; ri < NREQ; ri++) {
			double base[W_N], io[W_N], calls = (double)(cg_bytes / req_size[ri]);
			int w;

			for (w = 0; w < W_N; w++) {
				make_cached();
				base[w] = cg_run("none", req_size[ri], w, cg_bytes);
				make_cached();
				io[w] = cg_run(op_name[op], req_size[ri], w, cg_bytes);
			}
			if (base[0] < 0 || base[1] < 0 || io[0] < 0 || io[1] < 0) {
				uob_md("| %s | %s | %.0f | callgrind failed (is valgrind installed?) "
				       "| | |\n", op_name[op], req_name[ri], calls);
				continue;
			}
			uob_md("| %s | %s | %.0f | %.0f | %.0f | %.0f |\n", op_name[op],
			       req_name[ri], calls, (io[0] - base[0]) / calls,
			       (io[1] - base[1]) / calls,
			       ((io[1] - base[1]) - (io[0] - base[0])) / calls);
		}
	if (B.valgrind_warned)
		uob_md("\nValgrind does not know a system call the library makes (cachestat, "
		       "451): under callgrind the call fails, and the library takes its "
		       "fallback (for writes: no waiting for writeback), so the counts for "
		       "guarded writes leave that wait out.\n");
}

int main(int argc, char **argv)
{
	uint64_t cg_bytes;
	unsigned rep, ri, reps = 0;
	int op, t, k;

	if (argc >= 6 && !strcmp(argv[1], "--child"))
		return child(argv[2], strtoul(argv[3], NULL, 10), !strcmp(argv[4], "touch"),
			     argv[5], argc > 6 ? strtoull(argv[6], NULL, 10) : 0);
	uob_init("read_path", "read-path.md");
	B.size = uob_env("UO_BENCH_CACHED_MIB", 1024, 48, 16) * UOT_MIB;
	B.repeats[OP_READ] = (unsigned)uob_env("UO_BENCH_READ_REPEATS", 15, 1, 1);
	B.repeats[OP_WRITE] = (unsigned)uob_env("UO_BENCH_WRITE_REPEATS", 3, 1, 1);
	for (op = 0; op < OP_N; op++) {
		if (B.repeats[op] > UOB_MAX_REPEATS)
			B.repeats[op] = UOB_MAX_REPEATS;
		if (B.repeats[op] > reps)
			reps = B.repeats[op];
	}
	cg_bytes = uob_env("UO_BENCH_CG_MIB", 64, 40, 0) * UOT_MIB;
	if (cg_bytes > B.size)
		cg_bytes = B.size;
	if (!realpath("/proc/self/exe", B.self))
		bench_fail("finding this program");
	if (uot_scratch_create() != 0)
		bench_fail("no place for the file");
	uot_scratch_path(B.file, sizeof(B.file), "cached");
	uot_scratch_path(B.out, sizeof(B.out), "pass.out");

	uob_md("\n## 2. Cached reads and writes: what the guard costs\n\n"
	       "A file of %.0f MiB, fully cached (and clean) before every pass, is read or "
	       "overwritten whole by a fresh process in 4 KiB or 1 MiB requests, touching "
	       "every word of the data or not, without and with libuseonce.  MB/s is 10^6 "
	       "bytes per second from open to close; \"until on disk\" adds the fdatasync "
	       "run after a write pass.  \"Cached after\" is the file's residency after the "
	       "guarded pass: 100%% means the guard left a cached file alone.  Medians "
	       "(min..max) of %u pass%s of each read and %u of each write.\n",
	       uot_mib(B.size), B.repeats[OP_READ], B.repeats[OP_READ] > 1 ? "es" : "",
	       B.repeats[OP_WRITE]);
	uob_say("  making a %.0f MiB file in %s ...\n", uot_mib(B.size), uot_scratch());
	if (uot_make_file(B.file, B.size, 41) != 0)
		bench_fail("making the file");

	for (rep = 0; rep < reps; rep++) {
		uob_say("  repeat %u/%u\n", rep + 1, reps);
		for (op = 0; op < OP_N; op++)
			for (ri = 0; rep < B.repeats[op] && ri < NREQ; ri++)
				for (t = 0; t < 2; t++)
					for (k = 0; k < W_N; k++)
						/* Alternate which goes first, so drift cancels. */
						one(op, ri, t, (k + rep + ri + t) % 2);
	}
	table();
	instructions(cg_bytes);
	bench_cleanup();
	if (B.failures)
		fprintf(stderr, "%s: %u pass%s failed; see the table\n", uob_prog, B.failures,
			B.failures > 1 ? "es" : "");
	return uob_finish(B.failures ? 1 : 0);
}
