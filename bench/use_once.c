/*
 * use_once: the use-once test of the project's first seed, measured.
 *
 * A memory cgroup stands in for a small machine.  A hot file of a third of
 * its limit is mapped and touched (once, or four times: the kernel's
 * active list treats the two differently), then a real program streams
 * four times the limit through the cgroup, then the hot pass runs again.
 * Each streamer runs bare, under Debian's nocache and under libuseonce, one
 * after the other, so whatever drifts (the disk, a neighbour) drifts for
 * all three.
 *
 * Per case: the hot set's residency after the stream, the re-run pass
 * against a warm pass, the stream's throughput, the cgroup's peak dirty +
 * writeback, and the most of the stream (source + destination) the page
 * cache held at once.  Medians with min..max over the repeats.  The first
 * repeat's samples become use-once.dat and use-once.gp (gnuplot) beside
 * the markdown.
 *
 *	UO_BENCH_LIMIT_MIB	the cgroup's memory (default 256, smoke 48)
 *	UO_BENCH_REPEATS	repeats of every case (default 3, smoke 1)
 *	UO_BENCH_STREAMERS	comma-separated keys (cat,dd4k,...): only these
 *
 * Needs root (memory cgroups); without it, says so and does nothing.
 * Everything it makes is removed at the end, on error and on Ctrl-C.
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
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define UOB_TIMEOUT	900
/* The hot set counts as kept at this residency, as the target has it. */
#define UOB_HOT_KEPT	99.0

enum { W_HOT, W_SRC, W_DST };

enum remedy { REM_NONE, REM_NOCACHE, REM_USEONCE, REM_N };

static const char *const remedy_name[REM_N] = { "none", "nocache", "libuseonce" };

enum hot_mode { HOT_ONCE, HOT_4X, HOT_N };

static const char *const mode_name[HOT_N] = { "touched once", "touched 4x" };
static const unsigned mode_passes[HOT_N] = { 1, 4 };

enum dst_kind {
	DST_NONE,	/* output goes to /dev/null */
	DST_COPY,	/* @DST holds the stream's bytes, from dst_off on */
	DST_ZEROS,	/* @DST is @MIB MiB of zeros */
};

/*
 * argv templates: @SRC the stream, @NAME its name (the command runs in the
 * scratch directory), @DST the output, @MIB the stream in MiB, @SPLICE the
 * splice copier, @PY the Python interpreter.  A token may sit inside an
 * argument ("if=@SRC").
 */
struct streamer {
	const char *key;	/* for UO_BENCH_STREAMERS */
	const char *label;	/* for the tables */
	const char *argv[8];
	bool reads;		/* reads the stream file */
	bool out_null;		/* stdout to /dev/null */
	enum dst_kind dst;
	uint64_t dst_off;	/* tar: the data follows a 512-byte header */
};

static const struct streamer streamers[] = {
	{ "cat", "`cat` > /dev/null", { "cat", "@SRC" }, true, true, DST_NONE, 0 },
	{ "dd4k", "`dd bs=4k` > /dev/null",
	  { "dd", "if=@SRC", "of=/dev/null", "bs=4k", "status=none" }, true, false, DST_NONE, 0 },
	{ "dd1m", "`dd bs=1M` > /dev/null",
	  { "dd", "if=@SRC", "of=/dev/null", "bs=1M", "status=none" }, true, false, DST_NONE, 0 },
	{ "cp", "`cp`", { "cp", "@SRC", "@DST" }, true, false, DST_COPY, 0 },
	{ "ddcopy", "`dd bs=1M` copy",
	  { "dd", "if=@SRC", "of=@DST", "bs=1M", "status=none" }, true, false, DST_COPY, 0 },
	{ "ddwrite", "`dd` write from /dev/zero",
	  { "dd", "if=/dev/zero", "of=@DST", "bs=1M", "count=@MIB", "status=none" },
	  false, false, DST_ZEROS, 0 },
	{ "python", "Python `shutil.copyfile`",
	  { "@PY", "-c", "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])",
	    "@SRC", "@DST" }, true, false, DST_COPY, 0 },
	{ "splice", "splice copier", { "@SPLICE", "@SRC", "@DST" }, true, false, DST_COPY, 0 },
	{ "tar", "`tar cf`", { "tar", "cf", "@DST", "@NAME" }, true, false, DST_COPY, 512 },
	{ "sha256sum", "`sha256sum`", { "sha256sum", "@SRC" }, true, true, DST_NONE, 0 },
};

#define NSTREAMERS	(sizeof(streamers) / sizeof(streamers[0]))

/* One (hot mode, streamer, remedy) over the repeats. */
struct cell {
	struct uob_stat hot_after;	/* % */
	struct uob_stat rerun_ratio;	/* re-run pass / warm pass */
	struct uob_stat mbps;		/* stream bytes / run time, 10^6 B/s */
	struct uob_stat disk_mbps;	/* the same, counted until the output is on disk */
	struct uob_stat dirty_wb;	/* MiB */
	struct uob_stat stream_peak;	/* MiB, source + destination at once */
	struct uob_stat cold_ms;
	struct uob_stat warm_ms;
	struct uot_series series;	/* the first repeat's samples */
	char error[256];		/* non-empty: a run failed */
};

static struct {
	uint64_t limit, hot_size, stream_size;
	unsigned repeats;
	unsigned modes;		/* hot modes run: the smoke run skips 4x */
	bool run[NSTREAMERS];
	bool have[REM_N];
	char nocache[PATH_MAX];
	char python[PATH_MAX];
	char splice[PATH_MAX + 32];
	char hot[PATH_MAX], src[PATH_MAX], dst[PATH_MAX];
	struct uot_cgroup cg;
	struct cell cells[HOT_N][NSTREAMERS][REM_N];
	unsigned failures;
} B;

static void bench_cleanup(void)
{
	uot_cgroup_remove(&B.cg);
	uot_scratch_remove();
}

__attribute__((noreturn))
static void bench_fail(const char *what)
{
	uob_fail(what, bench_cleanup);
}

/*
 * Seconds an fsync of the output takes once the streamer has exited; -1
 * if it failed.  The kernel alone leaves a writer's output dirty, up to
 * the cgroup's worth (247 of 1024 MiB of `dd if=/dev/zero` at 256 MiB),
 * while the guard writes it out as it goes: run time alone compares a
 * writer that returned with a quarter of its data in memory against one
 * that returned with nearly all of it on disk.  The fsync comes before
 * the hot passes, so what the writer left behind is not written under
 * them either.
 */
static double fsync_secs(const char *path)
{
	struct timespec a, b;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -1.0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	err = fsync(fd);
	clock_gettime(CLOCK_MONOTONIC, &b);
	close(fd);
	return err ? -1.0 : (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

/* Replaces every @TOKEN of the template; 'out' receives the argument. */
static void expand(char *out, size_t size, const char *tpl)
{
	static const char *const tokens[] = { "@SRC", "@DST", "@MIB", "@NAME", "@SPLICE", "@PY" };
	const char *name = strrchr(B.src, '/') + 1;
	char mib[32];
	const char *values[] = { B.src, B.dst, mib, name, B.splice, B.python };

	snprintf(mib, sizeof(mib), "%llu", (unsigned long long)(B.stream_size / UOT_MIB));
	uot_expand(out, size, tpl, tokens, values, sizeof(tokens) / sizeof(tokens[0]));
}

/* A few MiB of the output against the source: a copy that lost data is caught cheaply. */
static int check_output(const struct streamer *s, char *why, size_t why_size)
{
	uint64_t size = 0, want = B.stream_size + s->dst_off, offs[3];
	int i;

	if (s->dst == DST_NONE)
		return 0;
	if (uot_resident(B.dst, &size) < 0 || size < want) {
		snprintf(why, why_size, "output is %llu bytes, not %llu",
			 (unsigned long long)size, (unsigned long long)want);
		return -1;
	}
	if (s->dst == DST_ZEROS)
		return 0;
	offs[0] = 0;
	offs[1] = (B.stream_size / 2) & ~(UOT_MIB - 1);
	offs[2] = B.stream_size - UOT_MIB;
	for (i = 0; i < 3; i++) {
		int eq = uot_files_equal(B.src, offs[i], B.dst, offs[i] + s->dst_off, UOT_MIB);

		if (eq != 1) {
			snprintf(why, why_size, "output differs from the stream: %s", uot_why());
			return -1;
		}
	}
	return 0;
}

static double hot_pass(const char *what)
{
	double secs = 0.0;

	if (uot_touch_timed(B.hot, UOT_TOUCH_MMAP, &B.cg, &secs) != 0)
		bench_fail(what);
	return secs;
}

/* The largest source + destination footprint seen in one sample, bytes. */
static uint64_t stream_peak(const struct uot_series *sr)
{
	uint64_t peak = 0;
	unsigned i;

	for (i = 0; i < sr->n; i++) {
		uint64_t v = sr->s[i].res[W_SRC] + sr->s[i].res[W_DST];

		if (v > peak)
			peak = v;
	}
	return peak;
}

static void run_case(unsigned rep, enum hot_mode mode, unsigned si, enum remedy rem)
{
	const struct streamer *s = &streamers[si];
	struct cell *cell = &B.cells[mode][si][rem];
	char args[8][PATH_MAX + 64], env_preload[PATH_MAX + 16], why[256] = "";
	const char *argv[9], *env[2] = { NULL, NULL };
	struct uot_series series = { 0 };
	double cold = 0.0, warm, rerun, hot_before, hot_after, to_disk;
	uint64_t bytes = B.stream_size;
	struct uot_result r;
	struct uot_cmd c;
	unsigned i;

	/* Each case starts from nothing: no tasks, nothing charged, both files cold. */
	unlink(B.dst);
	if (uot_cgroup_reset(&B.cg) != 0)
		bench_fail("emptying the cgroup");
	if (uot_make_cold(B.src) != 0 || uot_make_cold(B.hot) != 0)
		bench_fail("making the files cold");
	for (i = 0; i < mode_passes[mode]; i++) {
		double t = hot_pass("touching the hot file");

		if (i == 0)
			cold = t;
	}
	hot_before = uot_resident_pct(B.hot);

	memset(&c, 0, sizeof(c));
	for (i = 0; s->argv[i]; i++) {
		expand(args[i], sizeof(args[i]), s->argv[i]);
		argv[i] = args[i];
	}
	argv[i] = NULL;
	c.argv = argv;
	c.cwd = uot_scratch();
	c.out = s->out_null ? "/dev/null" : NULL;
	c.cg = &B.cg;
	c.watch[W_HOT] = B.hot;
	c.watch[W_SRC] = s->reads ? B.src : NULL;
	c.watch[W_DST] = s->dst != DST_NONE ? B.dst : NULL;
	c.timeout_s = UOB_TIMEOUT;
	c.series = &series;
	if (rem == REM_USEONCE) {
		c.preload = true;
		env[0] = uob_first_stream_env();
		c.env = env;
	} else if (rem == REM_NOCACHE) {
		/* What the nocache wrapper script does, without a bash in the timing. */
		snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", B.nocache);
		env[0] = env_preload;
		c.env = env;
	}
	if (uot_run(&c, &r) != 0) {
		uot_series_free(&series);
		bench_fail(s->key);
	}
	to_disk = r.secs;
	if (s->dst != DST_NONE) {
		double f = fsync_secs(B.dst);

		if (f < 0)
			bench_fail("syncing the output");
		to_disk += f;
	}
	hot_after = uot_resident_pct(B.hot);
	/* The seed's third run: how long the hot pass takes now, then warm again. */
	rerun = hot_pass("re-running the hot pass");
	warm = hot_pass("timing a warm hot pass");

	if (!uot_exited_ok(r.status))
		snprintf(why, sizeof(why), "%s %s", s->key, uot_status_str(r.status));
	else
		check_output(s, why, sizeof(why));
	if (uot_interrupted)
		bench_fail("checking the output");
	unlink(B.dst);
	if (why[0]) {
		/* Reported in the table and the exit status; the other cases go on. */
		if (!cell->error[0])
			snprintf(cell->error, sizeof(cell->error), "%s", why);
		B.failures++;
		uob_say("    %-10s %-11s FAILED: %s\n", s->key, remedy_name[rem], why);
		uot_series_free(&series);
		return;
	}
	uob_add(&cell->hot_after, hot_after);
	uob_add(&cell->rerun_ratio, warm > 0 ? rerun / warm : 0.0);
	uob_add(&cell->mbps, r.secs > 0 ? (double)bytes / r.secs / 1e6 : 0.0);
	uob_add(&cell->disk_mbps, to_disk > 0 ? (double)bytes / to_disk / 1e6 : 0.0);
	uob_add(&cell->dirty_wb, uot_mib(r.peak_dirty_wb));
	uob_add(&cell->stream_peak, uot_mib(stream_peak(&series)));
	uob_add(&cell->cold_ms, cold * 1e3);
	uob_add(&cell->warm_ms, warm * 1e3);
	uob_say("    %-10s %-11s hot %5.1f%% -> %5.1f%%, re-run %6.1f ms (warm %5.1f), "
		"%6.0f MB/s (%6.0f to disk), dirty+wb %4.0f MiB, stream peak %5.0f MiB\n",
		s->key, remedy_name[rem], hot_before, hot_after, rerun * 1e3, warm * 1e3,
		(double)bytes / r.secs / 1e6, (double)bytes / to_disk / 1e6,
		uot_mib(r.peak_dirty_wb),
		uot_mib(stream_peak(&series)));
	if (rep == 0 && !cell->series.n)
		cell->series = series;
	else
		uot_series_free(&series);
}

static void table(enum hot_mode mode)
{
	unsigned si;
	int rem;

	uob_md("\n### Hot set %s (%u pass%s before the stream)\n\n", mode_name[mode],
	       mode_passes[mode], mode_passes[mode] > 1 ? "es" : "");
	uob_md("| streamer | remedy | hot set after | hot re-run / warm | stream MB/s "
	       "| MB/s to disk | peak dirty+wb MiB | stream peak MiB |\n");
	uob_md("|---|---|---|---|---|---|---|---|\n");
	for (si = 0; si < NSTREAMERS; si++) {
		if (!B.run[si])
			continue;
		for (rem = 0; rem < REM_N; rem++) {
			const struct cell *c = &B.cells[mode][si][rem];
			char a[64], b[64], d[64], e[64], f[64], g[64];

			if (!B.have[rem])
				continue;
			if (c->error[0]) {
				uob_md("| %s | %s | FAILED: %s | | | | | |\n", streamers[si].label,
				       remedy_name[rem], c->error);
				continue;
			}
			uob_md("| %s | %s | %s%% | %s | %s | %s | %s | %s |\n", streamers[si].label,
			       remedy_name[rem], uob_fmt(a, sizeof(a), &c->hot_after, "%.1f"),
			       uob_fmt(b, sizeof(b), &c->rerun_ratio, "%.1f"),
			       uob_fmt(d, sizeof(d), &c->mbps, "%.0f"),
			       uob_fmt(g, sizeof(g), &c->disk_mbps, "%.0f"),
			       uob_fmt(e, sizeof(e), &c->dirty_wb, "%.0f"),
			       uob_fmt(f, sizeof(f), &c->stream_peak, "%.0f"));
		}
	}
}

/* Medians of all cases' cold and warm passes: what "re-run / warm" is measured against. */
static void pass_times(void)
{
	static double cold[HOT_N * NSTREAMERS * REM_N * UOB_MAX_REPEATS];
	static double warm[HOT_N * NSTREAMERS * REM_N * UOB_MAX_REPEATS];
	unsigned m, si, r, n = 0;
	int rem;

	for (m = 0; m < HOT_N; m++)
		for (si = 0; si < NSTREAMERS; si++)
			for (rem = 0; rem < REM_N; rem++) {
				const struct cell *c = &B.cells[m][si][rem];

				for (r = 0; r < c->cold_ms.n; r++, n++) {
					cold[n] = c->cold_ms.v[r];
					warm[n] = c->warm_ms.v[r];
				}
			}
	uob_md("\nThe hot pass (one process maps the hot file and reads a byte of every page): "
	       "%.0f ms cold, %.1f ms warm (medians over all cases).\n",
	       uob_median_v(cold, n), uob_median_v(warm, n));
}

/* The compact view: hot-set residency after, every streamer against every remedy. */
static void summary(void)
{
	unsigned si, m;
	int rem;

	uob_md("\n### Summary: hot set resident after the stream (median %%)\n\n| streamer |");
	for (m = 0; m < B.modes; m++)
		for (rem = 0; rem < REM_N; rem++)
			if (B.have[rem])
				uob_md(" %s, %s |", remedy_name[rem], m == HOT_ONCE ? "once" : "4x");
	uob_md(" MB/s libuseonce / none | to disk | peak dirty+wb, libuseonce |\n|---|");
	for (m = 0; m < B.modes; m++)
		for (rem = 0; rem < REM_N; rem++)
			if (B.have[rem])
				uob_md("---|");
	uob_md("---|---|---|\n");
	for (si = 0; si < NSTREAMERS; si++) {
		struct uob_stat ratio = { 0 }, disk = { 0 }, dirty = { 0 };

		if (!B.run[si])
			continue;
		uob_md("| %s |", streamers[si].label);
		for (m = 0; m < B.modes; m++)
			for (rem = 0; rem < REM_N; rem++) {
				const struct cell *c = &B.cells[m][si][rem];

				if (!B.have[rem])
					continue;
				if (c->error[0] || !c->hot_after.n) {
					uob_md(" FAILED |");
				} else {
					const char *b = uob_median(&c->hot_after) >= UOB_HOT_KEPT ?
							"**" : "";

					uob_md(" %s%.1f%s |", b, uob_median(&c->hot_after), b);
				}
			}
		/* Both hot modes are runs of the same stream: one ratio over them all. */
		for (m = 0; m < B.modes; m++) {
			const struct cell *g = &B.cells[m][si][REM_USEONCE];
			const struct cell *u = &B.cells[m][si][REM_NONE];

			if (g->mbps.n && u->mbps.n)
				uob_add(&ratio, uob_median(&g->mbps) / uob_median(&u->mbps));
			if (g->disk_mbps.n && u->disk_mbps.n)
				uob_add(&disk, uob_median(&g->disk_mbps) / uob_median(&u->disk_mbps));
			if (g->dirty_wb.n)
				uob_add(&dirty, uob_median(&g->dirty_wb));
		}
		uob_md(" %.2f | %.2f | %.0f MiB |\n", uob_median(&ratio), uob_median(&disk),
		       uob_max(&dirty));
	}
	uob_md("\nBold: at least %.0f%%, the target.  The ratio is of median throughputs, "
	       "over both hot modes, until the streamer exits and until its output is on disk "
	       "(an fsync after it; readers: the same); dirty+wb is the larger of the two modes' "
	       "medians.\n",
	       UOB_HOT_KEPT);
}

/* The first repeat's samples, and a gnuplot script that draws them (see bench/run.sh). */
static void write_plot(void)
{
	char dat[PATH_MAX], gp[PATH_MAX], png[PATH_MAX];
	unsigned m, si, rows = 0, block = 0, idx[HOT_N][NSTREAMERS][REM_N];
	FILE *d, *g;
	int rem;

	uob_result_path(dat, sizeof(dat), "use-once.dat");
	uob_result_path(gp, sizeof(gp), "use-once.gp");
	uob_result_path(png, sizeof(png), "use-once.png");
	d = fopen(dat, "w");
	g = fopen(gp, "w");
	if (!d || !g) {
		fprintf(stderr, "%s: cannot write the plot data: %s\n", uob_prog, strerror(errno));
		if (d)
			fclose(d);
		if (g)
			fclose(g);
		return;
	}
	fprintf(d, "# seconds since the stream started, hot set resident %%, "
		"stream (source + destination) in the page cache MiB, cgroup dirty+wb MiB\n");
	for (m = 0; m < HOT_N; m++)
		for (si = 0; si < NSTREAMERS; si++)
			for (rem = 0; rem < REM_N; rem++) {
				const struct uot_series *sr = &B.cells[m][si][rem].series;
				unsigned i;

				idx[m][si][rem] = UINT32_MAX;
				if (!sr->n)
					continue;
				idx[m][si][rem] = block++;
				fprintf(d, "# %s, %s, %s\n", mode_name[m], streamers[si].key,
					remedy_name[rem]);
				for (i = 0; i < sr->n; i++)
					fprintf(d, "%.3f %.2f %.1f %.1f\n", sr->s[i].t,
						100.0 * (double)sr->s[i].res[W_HOT] /
						(double)B.hot_size,
						uot_mib(sr->s[i].res[W_SRC] + sr->s[i].res[W_DST]),
						uot_mib(sr->s[i].dirty_wb));
				fprintf(d, "\n\n");
			}
	for (si = 0; si < NSTREAMERS; si++)
		rows += B.run[si];
	fprintf(g, "# Made by bench/use_once: gnuplot %s\n", gp);
	fprintf(g, "set terminal pngcairo size %u,%u font ',9'\n", 700 * B.modes,
		80 + 300 * rows);
	fprintf(g, "set output '%s'\n", png);
	fprintf(g, "set multiplot layout %u,%u title \"Use-once test: cgroup %.0f MiB, hot file "
		"%.0f MiB, stream %.0f MiB (first repeat)\\nSolid: hot set resident %% (left "
		"axis).  Dashed: stream (source + copy) in the page cache, MiB (right axis).\"\n",
		rows, B.modes, uot_mib(B.limit), uot_mib(B.hot_size), uot_mib(B.stream_size));
	fprintf(g, "set key top right opaque font ',8'\nset grid\nset yrange [0:105]\n"
		"set y2range [0:%.0f]\nset ytics nomirror\nset y2tics\nset xlabel 'seconds'\n"
		"set ylabel 'hot set %%'\nset y2label 'stream MiB'\n", uot_mib(B.limit) * 1.05);
	for (si = 0; si < NSTREAMERS; si++) {
		if (!B.run[si])
			continue;
		for (m = 0; m < B.modes; m++) {
			const char *sep = "plot ";

			fprintf(g, "set title \"%s, hot set %s\" noenhanced\n", streamers[si].key,
				mode_name[m]);
			for (rem = 0; rem < REM_N; rem++) {
				if (idx[m][si][rem] == UINT32_MAX)
					continue;
				/* One colour per remedy; the key names each once. */
				fprintf(g, "%s'%s' index %u using 1:2 axes x1y1 with lines lw 2 "
					"lc %d title '%s', '%s' index %u using 1:3 axes x1y2 "
					"with lines lw 2 dt 2 lc %d notitle", sep, dat,
					idx[m][si][rem], rem + 1, remedy_name[rem], dat,
					idx[m][si][rem], rem + 1);
				sep = ", ";
			}
			/* A panel with nothing to draw still takes its place in the grid. */
			fprintf(g, "%s\n", sep[0] == 'p' ? "set multiplot next" : "");
		}
	}
	fprintf(g, "unset multiplot\n");
	fclose(d);
	if (fclose(g) != 0)
		fprintf(stderr, "%s: cannot write %s: %s\n", uob_prog, gp, strerror(errno));
}

static void pick_streamers(void)
{
	const char *want = getenv("UO_BENCH_STREAMERS");
	unsigned si;

	for (si = 0; si < NSTREAMERS; si++) {
		const char *p = want;
		size_t kl = strlen(streamers[si].key);

		B.run[si] = !want || !*want;
		while (p && *p && !B.run[si]) {
			if (!strncmp(p, streamers[si].key, kl) && (p[kl] == ',' || !p[kl]))
				B.run[si] = true;
			p = strchr(p, ',');
			if (p)
				p++;
		}
	}
}

static void find_tools(void)
{
	static const char *const nocache[] = { "/usr/lib/nocache/nocache.so",
		"/usr/lib/x86_64-linux-gnu/nocache/nocache.so" };
	unsigned i;

	B.have[REM_NONE] = B.have[REM_USEONCE] = true;
	for (i = 0; i < sizeof(nocache) / sizeof(nocache[0]); i++)
		if (access(nocache[i], R_OK) == 0) {
			snprintf(B.nocache, sizeof(B.nocache), "%s", nocache[i]);
			B.have[REM_NOCACHE] = true;
		}
	if (!B.have[REM_NOCACHE])
		uob_md("\nDebian's nocache is not installed (bench/install-deps.sh installs it "
		       "as root): that remedy is left out.\n");
	/* Debian's own interpreter: a pyenv shim would add a bash and a pyenv to each run. */
	snprintf(B.python, sizeof(B.python), "%s",
		 access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3");
	snprintf(B.splice, sizeof(B.splice), "%s/tests/splice_copy", uot_build_dir());
	if (access(B.splice, X_OK) != 0) {
		fprintf(stderr, "%s: %s is missing: make bench builds it\n", uob_prog, B.splice);
		exit(uob_finish(1));
	}
}

static void check_space(void)
{
	uint64_t need = 2 * B.stream_size + B.hot_size + 512 * UOT_MIB;
	struct statvfs sv;

	if (statvfs(uot_scratch(), &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < need) {
		fprintf(stderr, "%s: %s has %.0f MiB free; this needs %.0f MiB\n", uob_prog,
			uot_scratch(), uot_mib((uint64_t)sv.f_bavail * sv.f_frsize), uot_mib(need));
		bench_cleanup();
		exit(uob_finish(1));
	}
}

int main(void)
{
	unsigned rep, si;
	int m, rem;

	uob_init("use_once", "use-once.md");
	B.limit = uob_env("UO_BENCH_LIMIT_MIB", 256, 48, 32) * UOT_MIB;
	B.repeats = (unsigned)uob_env("UO_BENCH_REPEATS", 3, 1, 1);
	if (B.repeats > UOB_MAX_REPEATS)
		B.repeats = UOB_MAX_REPEATS;
	B.modes = uob_smoke() ? 1 : HOT_N;
	B.hot_size = (B.limit / 3) & ~(UOT_MIB - 1);
	B.stream_size = 4 * B.limit;

	uob_md("## 1. The use-once test, in a memory cgroup\n");
	if (uot_cgroup_supported() != 0) {
		uob_md("\nSkipped: %s.  This part needs root and a cgroup v1 memory controller.\n",
		       uot_why());
		return uob_finish(0);
	}
	pick_streamers();
	find_tools();
	if (uot_scratch_create() != 0)
		bench_fail("no place for the files");
	check_space();
	uot_scratch_path(B.hot, sizeof(B.hot), "hot");
	uot_scratch_path(B.src, sizeof(B.src), "stream");
	uot_scratch_path(B.dst, sizeof(B.dst), "out");
	if (uot_cgroup_create(&B.cg, B.limit) != 0)
		bench_fail("making the memory cgroup");

	uob_md("\nA memory cgroup of %.0f MiB is the machine.  A hot file of %.0f MiB is mapped "
	       "and touched inside it (once, or 4 times), then a streamer moves %.0f MiB "
	       "(4x the limit) inside it, then the hot pass runs again.  %u repeat%s; "
	       "figures are medians (min..max).  Stream MB/s is 10^6 bytes of the stream per "
	       "second of the streamer's run; \"to disk\" counts until its output is on disk too "
	       "(an fsync once it has exited: the kernel alone leaves up to the cgroup's worth "
	       "dirty); \"stream peak\" is the most of the source and "
	       "its copy in the page cache at one time (sampled every ~20 ms).\n",
	       uot_mib(B.limit), uot_mib(B.hot_size), uot_mib(B.stream_size), B.repeats,
	       B.repeats > 1 ? "s" : "");
	uob_say("  making a %.0f MiB hot file and a %.0f MiB stream in %s ...\n",
		uot_mib(B.hot_size), uot_mib(B.stream_size), uot_scratch());
	if (uot_make_file(B.hot, B.hot_size, 31) != 0 ||
	    uot_make_file(B.src, B.stream_size, 32) != 0)
		bench_fail("making the files");

	for (rep = 0; rep < B.repeats; rep++)
		for (m = 0; m < (int)B.modes; m++) {
			uob_say("  repeat %u/%u, hot set %s\n", rep + 1, B.repeats, mode_name[m]);
			for (si = 0; si < NSTREAMERS; si++)
				for (rem = 0; B.run[si] && rem < REM_N; rem++)
					if (B.have[rem])
						run_case(rep, m, si, rem);
		}

	pass_times();
	summary();
	for (m = 0; m < (int)B.modes; m++)
		table(m);
	write_plot();
	for (m = 0; m < HOT_N; m++)
		for (si = 0; si < NSTREAMERS; si++)
			for (rem = 0; rem < REM_N; rem++)
				uot_series_free(&B.cells[m][si][rem].series);
	bench_cleanup();
	if (B.failures)
		fprintf(stderr, "%s: %u run%s failed; see the tables\n", uob_prog, B.failures,
			B.failures > 1 ? "s" : "");
	return uob_finish(B.failures ? 1 : 0);
}
