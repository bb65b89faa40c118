/*
 * What the benchmarks share; see bench.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"

const char *uob_prog = "bench";
static FILE *uob_mdf;
static char uob_results[PATH_MAX];

void uob_add(struct uob_stat *s, double v)
{
	if (s->n < UOB_MAX_REPEATS)
		s->v[s->n++] = v;
}

static int uob_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double uob_median_v(double *v, unsigned n)
{
	if (!n)
		return 0.0;
	qsort(v, n, sizeof(v[0]), uob_cmp);
	/* An even count takes the mean of the middle two, as statistics books do. */
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double uob_median(const struct uob_stat *s)
{
	double v[UOB_MAX_REPEATS];

	memcpy(v, s->v, s->n * sizeof(v[0]));
	return uob_median_v(v, s->n);
}

double uob_min(const struct uob_stat *s)
{
	double m = s->n ? s->v[0] : 0.0;
	unsigned i;

	for (i = 1; i < s->n; i++)
		if (s->v[i] < m)
			m = s->v[i];
	return m;
}

double uob_max(const struct uob_stat *s)
{
	double m = s->n ? s->v[0] : 0.0;
	unsigned i;

	for (i = 1; i < s->n; i++)
		if (s->v[i] > m)
			m = s->v[i];
	return m;
}

char *uob_fmt(char *out, size_t size, const struct uob_stat *s, const char *num)
{
	char med[32], lo[32], hi[32];

	if (!s->n) {
		snprintf(out, size, "-");
		return out;
	}
	/* The format comes from our own callers, never from input. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(med, sizeof(med), num, uob_median(s));
	snprintf(lo, sizeof(lo), num, uob_min(s));
	snprintf(hi, sizeof(hi), num, uob_max(s));
#pragma GCC diagnostic pop
	if (s->n == 1)
		snprintf(out, size, "%s", med);
	else
		snprintf(out, size, "%s (%s..%s)", med, lo, hi);
	return out;
}

bool uob_smoke(void)
{
	const char *s = getenv("UO_BENCH_SMOKE");

	return s && !strcmp(s, "1");
}

uint64_t uob_env(const char *name, uint64_t def, uint64_t smoke, uint64_t low)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (uob_smoke())
		def = smoke;
	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < low) {
		fprintf(stderr, "%s: ignoring %s=%s (a number, at least %llu); using %llu\n",
			uob_prog, name, s, (unsigned long long)low, (unsigned long long)def);
		return def;
	}
	return v;
}

void uob_init(const char *prog, const char *md_name)
{
	const char *r = getenv("UO_BENCH_RESULTS");
	char path[PATH_MAX + 64];

	uob_prog = prog;
	setvbuf(stdout, NULL, _IOLBF, 0);
	uot_catch_signals();
	uot_sweep_stale();
	if (!r || !*r)
		r = "bench/results";
	snprintf(uob_results, sizeof(uob_results), "%s", r);
	if (mkdir(uob_results, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "%s: cannot create %s: %s\n", prog, uob_results,
			strerror(errno));
		exit(1);
	}
	uob_result_path(path, sizeof(path), md_name);
	uob_mdf = fopen(path, "w");
	if (!uob_mdf) {
		fprintf(stderr, "%s: cannot create %s: %s\n", prog, path, strerror(errno));
		exit(1);
	}
}

char *uob_result_path(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", uob_results, name);
	return out;
}

void uob_md(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (uob_mdf) {
		va_start(ap, fmt);
		vfprintf(uob_mdf, fmt, ap);
		va_end(ap);
	}
}

void uob_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

const char *uob_first_stream_env(void)
{
	return getenv("USEONCE_REUSE") ? NULL : "USEONCE_REUSE=0";
}

int uob_finish(int status)
{
	if (uob_mdf && fclose(uob_mdf) != 0 && status == 0) {
		fprintf(stderr, "%s: cannot write the results: %s\n", uob_prog, strerror(errno));
		status = 1;
	}
	uob_mdf = NULL;
	return status;
}

void uob_fail(const char *what, void (*cleanup)(void))
{
	if (uot_interrupted)
		fprintf(stderr, "\n%s: interrupted; removing what it made\n", uob_prog);
	else
		fprintf(stderr, "%s: %s: %s\n", uob_prog, what, uot_why());
	cleanup();
	exit(uob_finish(uot_interrupted ? 130 : 1));
}
