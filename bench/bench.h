/*
 * What the three benchmarks share (bench/use_once.c, bench/read_path.c,
 * bench/fork_exec.c): their settings from the environment, medians with
 * min..max over repeats, and markdown written to stdout and to a results
 * file at once.  Everything about files, cgroups and running programs comes
 * from tests/testlib.h.
 *
 *	UO_BENCH_SMOKE=1	tiny sizes, one repeat: proves the bench works, measures nothing
 *	UO_BENCH_RESULTS	where the markdown and plot data go (default bench/results)
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UOB_BENCH_H
#define UOB_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "testlib.h"

/* More repeats than this are not asked for by anyone; the settings cap them. */
#define UOB_MAX_REPEATS	15

/* One measured quantity over the repeats of a case. */
struct uob_stat {
	double v[UOB_MAX_REPEATS];
	unsigned n;
};

void uob_add(struct uob_stat *s, double v);
double uob_median(const struct uob_stat *s);
/* The median of n values, which it sorts. */
double uob_median_v(double *v, unsigned n);
double uob_min(const struct uob_stat *s);
double uob_max(const struct uob_stat *s);
/*
 * "median (min..max)" with printf format 'num' for each figure, just the
 * figure for one repeat, "-" for none.  Returns out.
 */
char *uob_fmt(char *out, size_t size, const struct uob_stat *s, const char *num);

/* The program's name for messages, set once by uob_init(). */
extern const char *uob_prog;
bool uob_smoke(void);

/*
 * Catches signals, sweeps what dead runs left, opens
 * $UO_BENCH_RESULTS/'md_name' for the markdown.  Exits on failure.
 */
void uob_init(const char *prog, const char *md_name);
/* $UO_BENCH_RESULTS/name into out; returns out. */
char *uob_result_path(char *out, size_t size, const char *name);

/* A count from the environment, at least 'low'; 'smoke' in smoke mode unless set. */
uint64_t uob_env(const char *name, uint64_t def, uint64_t smoke, uint64_t low);

/* To stdout and to the markdown file. */
__attribute__((format(printf, 1, 2)))
void uob_md(const char *fmt, ...);
/* Only to stdout: progress, which the results file does not want. */
__attribute__((format(printf, 1, 2)))
void uob_say(const char *fmt, ...);

/*
 * "USEONCE_REUSE=0" unless the caller's environment sets it: the bench
 * streams the same file dozens of times, and the library's record of
 * recent streams would rightly call that reuse and let it cache.  Every
 * case here is meant as a first stream.  NULL when the caller chose.
 */
const char *uob_first_stream_env(void);

/* Closes the markdown file; returns 'status' so main can end with it. */
int uob_finish(int status);

/*
 * Says what failed (or that we were interrupted), runs 'cleanup' to remove
 * what the bench made, and exits.
 */
__attribute__((noreturn))
void uob_fail(const char *what, void (*cleanup)(void));

#endif /* UOB_BENCH_H */
