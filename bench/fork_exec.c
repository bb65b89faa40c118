/*
 * fork_exec: what being preloaded into every process costs.
 *
 * The third seed judged a change to the VM by fork/exec/exit overhead and
 * by the most forky workload anyone cares about, a configure script.  A
 * preload is paid for in every process, so the same three workloads run
 * with nothing preloaded, with an empty preloaded library (what the
 * dynamic loader charges for any preload: bench/empty.c) and with
 * libuseonce.  libuseonce's own cost is its distance from the empty one.
 * The empty library comes twice: built the plain way (gcc -shared -fPIC),
 * and without the C runtime's start files as libuseonce.so is linked;
 * those files cost every process a few symbol lookups of their own.
 *
 *   fork	a process forks N times; each child exits at once
 *   exec	a process forks and execs /bin/true N times
 *   shell	bench/configure-like.sh: a shell running sed, grep, expr and
 *		the compiler on tiny programs
 *
 * Wall time on two shared cores is noisy, so instructions are counted too,
 * with callgrind, which is deterministic: per fork, per /bin/true, and for
 * one iteration of the shell workload with every process traced.  Peak
 * RSS is the largest of the workload's processes (RUSAGE_CHILDREN).
 *
 *	UO_BENCH_FORKS		forks per run (default 10000, smoke 200)
 *	UO_BENCH_EXECS		execs per run (default 1000, smoke 50)
 *	UO_BENCH_SHELL_ITER	iterations of the shell workload (default 8, smoke 1)
 *	UO_BENCH_FORK_REPEATS	repeats (default 5, smoke 1)
 *	UO_BENCH_CALLGRIND	0: count no instructions; 1: for fork and exec;
 *				2: for the shell workload too (default 2, smoke 1)
 *	UO_SRCDIR		where bench/configure-like.sh is (default .)
 *
 * SPDX-License-Identifier: MIT
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/*
 * Callgrind's children inherit the counts their parent had at fork, so
 * summing a forking run's outputs counts the parent many times over.  The
 * fork loop zeroes the counts before each fork and has the parent dump its
 * share after each wait: then every output holds one fork's share only.
 * Outside valgrind these are a few no-op instructions.
 */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define UOB_CG_FORK	1
#endif
#endif
#ifndef UOB_CG_FORK
#define UOB_CG_FORK	0
#define CALLGRIND_ZERO_STATS	do { } while (0)
#define CALLGRIND_DUMP_STATS	do { } while (0)
#endif

enum variant { V_NONE, V_EMPTY, V_NOSTART, V_USEONCE, V_N };

static const char *const variant_name[V_N] = {
	"none", "empty preload", "empty, no start files", "libuseonce",
};

enum workload { WL_FORK, WL_EXEC, WL_SHELL, WL_N };

static const char *const workload_name[WL_N] = {
	"fork + exit", "fork + exec `/bin/true`", "configure-like script",
};

struct cell {
	struct uob_stat per_op;		/* µs per fork or exec; s per script run */
	struct uob_stat rss_kib;
	char error[160];
};

static struct {
	char self[PATH_MAX];
	char empty[PATH_MAX + 32];
	char nostart[PATH_MAX + 32];
	char script[PATH_MAX + 32];
	char out[PATH_MAX];
	uint64_t forks, execs, shell_iter;
	unsigned repeats;
	struct cell cells[WL_N][V_N];
	double instr[WL_N][V_N];	/* < 0: not counted */
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
 * The measured programs.  "--fork N": N children that exit at once.
 * "--exec N PROG ARGS": N children that exec PROG.  Both print seconds and
 * the largest child's peak RSS in KiB.
 */
static int driver(int argc, char **argv)
{
	bool do_exec = !strcmp(argv[1], "--exec");
	unsigned long n = strtoul(argv[2], NULL, 10), i;
	struct rusage ru;
	double start;

	if (do_exec && argc < 4)
		return 2;
	start = now();
	for (i = 0; i < n; i++) {
		int status;
		pid_t pid;

		if (!do_exec)
			CALLGRIND_ZERO_STATS;
		pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			if (do_exec) {
				execv(argv[3], argv + 3);
				perror(argv[3]);
				_exit(127);
			}
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "fork_exec: child %lu failed\n", i);
			return 1;
		}
		if (!do_exec)
			CALLGRIND_DUMP_STATS;
	}
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("%.6f %ld\n", now() - start, ru.ru_maxrss);
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

/* How each variant is run: nothing, an empty library, or ours. */
static void set_variant(struct uot_cmd *c, enum variant v, const char **env)
{
	static char empty_env[PATH_MAX + 64];

	c->preload = v == V_USEONCE;
	env[0] = NULL;
	if (v == V_EMPTY || v == V_NOSTART) {
		snprintf(empty_env, sizeof(empty_env), "LD_PRELOAD=%s",
			 v == V_EMPTY ? B.empty : B.nostart);
		env[0] = empty_env;
	}
	c->env = env;
}

/* The driver's argv for a workload; 'n' is its count. */
static void workload_argv(enum workload w, const char **argv, char *n, size_t n_size,
			  char *iter, size_t iter_size)
{
	unsigned i = 0;

	argv[i++] = B.self;
	if (w == WL_FORK) {
		argv[i++] = "--fork";
		snprintf(n, n_size, "%llu", (unsigned long long)B.forks);
		argv[i++] = n;
	} else {
		argv[i++] = "--exec";
		snprintf(n, n_size, "%llu",
			 (unsigned long long)(w == WL_EXEC ? B.execs : 1));
		argv[i++] = n;
		if (w == WL_EXEC) {
			argv[i++] = "/bin/true";
		} else {
			snprintf(iter, iter_size, "%llu", (unsigned long long)B.shell_iter);
			argv[i++] = "/bin/sh";
			argv[i++] = B.script;
			argv[i++] = iter;
		}
	}
	argv[i] = NULL;
}

static void run_one(enum workload w, enum variant v)
{
	struct cell *cell = &B.cells[w][v];
	char n[32], iter[32], buf[128];
	const char *argv[8], *env[2];
	struct uot_result r;
	struct uot_cmd c;
	double secs = -1.0;
	long rss = 0;
	FILE *f;

	workload_argv(w, argv, n, sizeof(n), iter, sizeof(iter));
	memset(&c, 0, sizeof(c));
	c.argv = argv;
	c.out = B.out;
	c.cwd = uot_scratch();
	set_variant(&c, v, env);
	if (uot_run(&c, &r) != 0)
		bench_fail(workload_name[w]);
	f = fopen(B.out, "r");
	if (uot_exited_ok(r.status) && f && fgets(buf, sizeof(buf), f))
		sscanf(buf, "%lf %ld", &secs, &rss);
	if (f)
		fclose(f);
	if (secs <= 0) {
		if (!cell->error[0])
			snprintf(cell->error, sizeof(cell->error), "%s",
				 uot_exited_ok(r.status) ? "no time reported" :
				 uot_status_str(r.status));
		B.failures++;
		uob_say("    %-24s %-14s FAILED: %s\n", workload_name[w], variant_name[v],
			cell->error);
		return;
	}
	if (w == WL_FORK)
		secs = secs / (double)B.forks * 1e6;
	else if (w == WL_EXEC)
		secs = secs / (double)B.execs * 1e6;
	uob_add(&cell->per_op, secs);
	uob_add(&cell->rss_kib, (double)rss);
	uob_say("    %-24s %-14s %9.1f %s, peak RSS %ld KiB\n", workload_name[w],
		variant_name[v], secs, w == WL_SHELL ? "s" : "us", rss);
}

/* Sum of "summary:" over every callgrind output in 'dir'; removes them. */
static double cg_sum(const char *dir)
{
	char path[PATH_MAX + 300], line[256];
	double total = -1.0;
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		FILE *f;

		if (strncmp(e->d_name, "cg.", 3) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "summary:", 8))
				total = (total < 0 ? 0 : total) + strtod(line + 8, NULL);
		if (f)
			fclose(f);
		unlink(path);
	}
	if (d)
		closedir(d);
	return total;
}

/*
 * Instructions of one run under callgrind, every process traced.  Valgrind
 * 3.19 does not know some new system calls (cachestat): it warns in its
 * log, which is kept out of the way and looked at.
 */
static double cg_count(const char *const *prog, enum variant v, const char *extra_env)
{
	char dir[PATH_MAX], outopt[PATH_MAX + 64], logopt[PATH_MAX + 64], log[PATH_MAX + 32];
	char line[256];
	const char *argv[24], *env[3];
	struct uot_result r;
	struct uot_cmd c;
	unsigned i = 0, j;
	double total;
	FILE *f;

	uot_scratch_path(dir, sizeof(dir), "callgrind");
	mkdir(dir, 0755);
	snprintf(outopt, sizeof(outopt), "--callgrind-out-file=%s/cg.%%p", dir);
	snprintf(log, sizeof(log), "%s/valgrind.log", dir);
	snprintf(logopt, sizeof(logopt), "--log-file=%s", log);
	argv[i++] = "valgrind";
	argv[i++] = "--tool=callgrind";
	argv[i++] = "--trace-children=yes";
	argv[i++] = outopt;
	argv[i++] = logopt;
	for (j = 0; prog[j] && i < 23; j++)
		argv[i++] = prog[j];
	argv[i] = NULL;
	memset(&c, 0, sizeof(c));
	c.argv = argv;
	c.out = "/dev/null";
	c.cwd = uot_scratch();
	c.timeout_s = 900;
	set_variant(&c, v, env);
	env[1] = NULL;
	if (extra_env) {
		env[env[0] ? 1 : 0] = extra_env;
		env[2] = NULL;
	}
	if (uot_run(&c, &r) != 0) {
		if (uot_interrupted)
			bench_fail("callgrind");
		cg_sum(dir);
		return -1.0;
	}
	total = uot_exited_ok(r.status) ? cg_sum(dir) : (cg_sum(dir), -1.0);
	f = fopen(log, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "unhandled") && strstr(line, "syscall"))
			B.valgrind_warned = true;
	if (f)
		fclose(f);
	unlink(log);
	rmdir(dir);
	return total;
}

/* Level 1: fork and /bin/true; level 2: the shell workload too (a minute or so). */
static void count_instructions(unsigned level)
{
	char n0[32] = "0", n[32] = "200", iter[32] = "1";
	const char *fork0[] = { B.self, "--fork", n0, NULL };
	const char *forkn[] = { B.self, "--fork", n, NULL };
	const char *truep[] = { "/bin/true", NULL };
	const char *shell[] = { "/bin/sh", B.script, iter, NULL };
	int v;

	for (v = 0; v < V_N; v++) {
		double a = -1.0, b = -1.0;

		uob_say("    callgrind: %s\n", variant_name[v]);
		if (UOB_CG_FORK) {
			a = cg_count(fork0, v, NULL);
			b = cg_count(forkn, v, NULL);
		}
		B.instr[WL_FORK][v] = a >= 0 && b >= 0 ? (b - a) / 200.0 : -1.0;
		B.instr[WL_EXEC][v] = cg_count(truep, v, NULL);
		/* cc1 under callgrind costs a minute a variant: the script without its compiler. */
		B.instr[WL_SHELL][v] = level >= 2 ? cg_count(shell, v, "CC=/nonexistent") : -1.0;
	}
}

static void ratio(char *out, size_t size, double a, double b)
{
	if (a > 0 && b > 0)
		snprintf(out, size, "%.3f", a / b);
	else
		snprintf(out, size, "-");
}

/* "a / b" of two medians; "-" when either is missing. */
static void ratio3(char *out, size_t size, const struct uob_stat *a, const struct uob_stat *b)
{
	ratio(out, size, a->n ? uob_median(a) : -1.0, b->n ? uob_median(b) : -1.0);
}

static void tables(bool counted)
{
	int w, v;

	uob_md("\n| workload | unit | none | empty preload | empty, no start files | libuseonce "
	       "| libuseonce / none | libuseonce / empty | libuseonce / empty, no start files "
	       "|\n|---|---|---|---|---|---|---|---|---|\n");
	for (w = 0; w < WL_N; w++) {
		char t[V_N][64], r[3][32];
		const struct cell *c = B.cells[w];

		for (v = 0; v < V_N; v++) {
			if (c[v].error[0])
				snprintf(t[v], sizeof(t[v]), "FAILED: %s", c[v].error);
			else
				uob_fmt(t[v], sizeof(t[v]), &c[v].per_op,
					w == WL_SHELL ? "%.2f" : "%.0f");
		}
		ratio3(r[0], sizeof(r[0]), &c[V_USEONCE].per_op, &c[V_NONE].per_op);
		ratio3(r[1], sizeof(r[1]), &c[V_USEONCE].per_op, &c[V_EMPTY].per_op);
		ratio3(r[2], sizeof(r[2]), &c[V_USEONCE].per_op, &c[V_NOSTART].per_op);
		uob_md("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", workload_name[w],
		       w == WL_FORK ? "µs per fork" : w == WL_EXEC ? "µs per exec" : "s per run",
		       t[0], t[1], t[2], t[3], r[0], r[1], r[2]);
	}
	uob_md("\nPeak RSS of the workload's largest process, KiB (medians):\n\n"
	       "| workload | none | empty preload | empty, no start files | libuseonce |\n"
	       "|---|---|---|---|---|\n");
	for (w = 0; w < WL_N; w++) {
		const struct cell *c = B.cells[w];

		uob_md("| %s | %.0f | %.0f | %.0f | %.0f |\n", workload_name[w],
		       uob_median(&c[V_NONE].rss_kib), uob_median(&c[V_EMPTY].rss_kib),
		       uob_median(&c[V_NOSTART].rss_kib), uob_median(&c[V_USEONCE].rss_kib));
	}
	if (!counted)
		return;
	uob_md("\nInstructions counted with callgrind (user space: the dynamic loader, libc, "
	       "the preload and the program; the kernel's share is not seen):\n\n"
	       "| workload | none | empty preload | empty, no start files | libuseonce "
	       "| libuseonce / none | libuseonce / empty | libuseonce / empty, no start files "
	       "|\n|---|---|---|---|---|---|---|---|\n");
	for (w = 0; w < WL_N; w++) {
		const double *in = B.instr[w];
		char r[3][32], n[V_N][32];
		static const char *const what[WL_N] = {
			"per fork: (200 forks - 0 forks) / 200", "one `/bin/true`",
			"configure-like script, 1 iteration, no compiler runs",
		};

		ratio(r[0], sizeof(r[0]), in[V_USEONCE], in[V_NONE]);
		ratio(r[1], sizeof(r[1]), in[V_USEONCE], in[V_EMPTY]);
		ratio(r[2], sizeof(r[2]), in[V_USEONCE], in[V_NOSTART]);
		for (v = 0; v < V_N; v++)
			snprintf(n[v], sizeof(n[v]), in[v] >= 0 ? "%.0f" : "not counted", in[v]);
		uob_md("| %s | %s | %s | %s | %s | %s | %s | %s |\n", what[w], n[0], n[1], n[2],
		       n[3], r[0], r[1], r[2]);
	}
	if (B.valgrind_warned)
		uob_md("\nValgrind warned of a system call it does not know (cachestat, 451): "
		       "under callgrind the library sees it fail and takes its fallback.\n");
}

int main(int argc, char **argv)
{
	const char *src = getenv("UO_SRCDIR");
	unsigned rep, counted;
	int w, k;

	if (argc >= 3 && (!strcmp(argv[1], "--fork") || !strcmp(argv[1], "--exec")))
		return driver(argc, argv);
	uob_init("fork_exec", "fork-exec.md");
	B.forks = uob_env("UO_BENCH_FORKS", 10000, 200, 1);
	B.execs = uob_env("UO_BENCH_EXECS", 1000, 50, 1);
	B.shell_iter = uob_env("UO_BENCH_SHELL_ITER", 8, 1, 1);
	B.repeats = (unsigned)uob_env("UO_BENCH_FORK_REPEATS", 5, 1, 1);
	if (B.repeats > UOB_MAX_REPEATS)
		B.repeats = UOB_MAX_REPEATS;
	counted = (unsigned)uob_env("UO_BENCH_CALLGRIND", 2, 1, 0);
	if (!realpath("/proc/self/exe", B.self))
		bench_fail("finding this program");
	snprintf(B.empty, sizeof(B.empty), "%s/bench/empty.so", uot_build_dir());
	snprintf(B.nostart, sizeof(B.nostart), "%s/bench/empty-nostart.so", uot_build_dir());
	if (!src || !*src)
		src = ".";
	if (!realpath(src, B.script))
		bench_fail("finding the sources");
	strncat(B.script, "/bench/configure-like.sh", sizeof(B.script) - strlen(B.script) - 1);
	if (access(B.empty, R_OK) != 0 || access(B.nostart, R_OK) != 0 ||
	    access(B.script, R_OK) != 0) {
		fprintf(stderr, "%s: %s, %s or %s is missing: make bench builds them\n",
			uob_prog, B.empty, B.nostart, B.script);
		return uob_finish(1);
	}
	if (access("/usr/bin/valgrind", X_OK) != 0 && counted) {
		uob_say("  valgrind is not installed: instructions are not counted\n");
		counted = 0;
	}
	if (uot_scratch_create() != 0)
		bench_fail("no place to run");
	uot_scratch_path(B.out, sizeof(B.out), "driver.out");

	uob_md("\n## 3. Fork and exec: what being preloaded costs\n\n"
	       "Each workload runs with nothing preloaded, with an empty preloaded library "
	       "(`bench/empty.c`, built with `gcc -shared -fPIC` and linked against libc; and "
	       "built again with `-nostartfiles`, as libuseonce.so is) and with libuseonce: "
	       "%llu forks of a "
	       "process that exit at once; %llu fork + exec of `/bin/true`; %llu iteration%s "
	       "of `bench/configure-like.sh` (a shell running the preprocessor, the compiler, "
	       "sed, grep, expr...).  %u repeat%s, medians (min..max); the variants take turns "
	       "within each repeat.\n", (unsigned long long)B.forks,
	       (unsigned long long)B.execs, (unsigned long long)B.shell_iter,
	       B.shell_iter > 1 ? "s" : "", B.repeats, B.repeats > 1 ? "s" : "");
	for (rep = 0; rep < B.repeats; rep++) {
		uob_say("  repeat %u/%u\n", rep + 1, B.repeats);
		for (w = 0; w < WL_N; w++)
			for (k = 0; k < V_N; k++)
				/* Each repeat starts with another variant, so drift is shared. */
				run_one(w, (enum variant)((k + rep) % V_N));
	}
	if (counted)
		count_instructions(counted);
	tables(counted != 0);
	bench_cleanup();
	if (B.failures)
		fprintf(stderr, "%s: %u run%s failed; see the table\n", uob_prog, B.failures,
			B.failures > 1 ? "s" : "");
	return uob_finish(B.failures ? 1 : 0);
}
