/*
 * End-to-end tests: real programs (cp, cat, dd, tar, Python, a splice
 * copier, sha256sum) run with and without libuseonce, measured with
 * mincore and the memory cgroup's own counters.
 *
 * Each program is run twice, without the library then with it, and the
 * test asserts both sides: with the library the stream's footprint stays
 * small and a hot set survives; without it the kernel keeps the whole
 * stream and loses the hot set.  The second half proves the measurement
 * can see the difference, so a pass means the library made it.
 *
 *   footprint	a ~512 MiB stream started cold; residency of its source and
 *		destination sampled every ~20 ms and after the run.
 *   hotset	(root) a memory cgroup of 256 MiB as the machine, a hot file
 *		of a third of it touched once inside, then a stream of 4x the
 *		limit run inside; the hot file's residency after.
 *   library	a library whose constructor reads first (exports: check_exports).
 *
 * Environment: UO_BUILD (default build), UO_SRCDIR (default .),
 * UO_E2E_STREAM_MIB (512), UO_E2E_LIMIT_MIB (256).  One line per run with
 * the figures goes to stdout, for whoever reads the CI log.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

/*
 * Bounds, from measurements on the project's machines (2 cores, ext4,
 * kernel 6.18; see the commit adding this file): with the library, peaks
 * were 16-56 MiB per file and 0-16 MiB stayed after the run; peak
 * dirty+writeback in the cgroup 32-40 MiB.  Without it every stream was
 * 100% resident after and the hot set 0%.  The bounds leave room for a
 * slower disk but stay far from the unguarded figures.
 */
#define PEAK_MAX	(96 * UOT_MIB)	/* per file, while the program runs */
#define AFTER_MAX	(24 * UOT_MIB)	/* per file, once it exited */
#define DIRTY_WB_MAX	(64 * UOT_MIB)	/* cgroup dirty + writeback, with the library */
/*
 * A writer does not wait for its disk until 1/32 of the memory it may use
 * is in flight (advise.c): outside a cgroup, an output may peak at that
 * plus the threshold and a window before its stream is first throttled.
 */
#define WRITE_SHARE	32

static uint64_t e2e_output_peak_max(void)
{
	struct sysinfo si;
	uint64_t budget;

	if (sysinfo(&si) != 0)
		return PEAK_MAX;
	budget = (uint64_t)si.totalram * si.mem_unit / WRITE_SHARE + 40 * UOT_MIB;
	return budget > PEAK_MAX ? budget : PEAK_MAX;
}
#define KEPT_MIN_PCT	80.0		/* without: the kernel keeps the stream */
#define HOT_KEPT_PCT	95.0		/* with: the hot set survives */
#define HOT_LOST_PCT	50.0		/* without: the kernel lost it */
#define TEST_TIMEOUT	600

enum e2e_src {
	SRC_STREAM,	/* reads the stream file */
	SRC_NONE,	/* makes its own data (dd from /dev/zero) */
};

enum e2e_dst {
	DST_NONE,	/* output goes to /dev/null */
	DST_COPY,	/* @DST must equal the stream */
	DST_TAR,	/* @DST is a tar of the stream: its data follows a 512-byte header */
	DST_ZEROS,	/* @DST must be @MIB MiB of zeros */
	DST_DIGEST,	/* stdout to @DST, which must be the same with and without */
};

/*
 * argv templates: @SRC the stream (absolute), @NAME its name (run in the
 * scratch directory), @DST the output, @MIB the stream's size in MiB,
 * @SPLICE the splice copier; they may sit inside an argument ("if=@SRC").
 */
struct e2e_prog {
	const char *name;
	const char *argv[8];
	enum e2e_src src;
	enum e2e_dst dst;
	const char *needs;	/* a file that must exist, or the test is skipped */
};

static const struct e2e_prog e2e_progs[] = {
	{ "cp", { "cp", "@SRC", "@DST" }, SRC_STREAM, DST_COPY, NULL },
	{ "cat", { "cat", "@SRC" }, SRC_STREAM, DST_NONE, NULL },
	{ "dd_read", { "dd", "if=@SRC", "of=/dev/null", "bs=1M", "status=none" },
	  SRC_STREAM, DST_NONE, NULL },
	{ "dd_copy", { "dd", "if=@SRC", "of=@DST", "bs=1M", "status=none" },
	  SRC_STREAM, DST_COPY, NULL },
	{ "dd_write", { "dd", "if=/dev/zero", "of=@DST", "bs=1M", "count=@MIB", "status=none" },
	  SRC_NONE, DST_ZEROS, NULL },
	{ "tar", { "tar", "cf", "@DST", "@NAME" }, SRC_STREAM, DST_TAR, NULL },
	{ "python_copyfile", { "/usr/bin/python3", "-c",
	  "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])", "@SRC", "@DST" },
	  SRC_STREAM, DST_COPY, "/usr/bin/python3" },
	{ "splice_copy", { "@SPLICE", "@SRC", "@DST" }, SRC_STREAM, DST_COPY, NULL },
	{ "sha256sum", { "sha256sum", "@SRC" }, SRC_STREAM, DST_DIGEST, NULL },
};

#define E2E_NPROGS	(sizeof(e2e_progs) / sizeof(e2e_progs[0]))

/*
 * Made by the parent, once (unchecked fixtures), and inherited by the
 * forked tests; removed by the parent only, at the end or on a signal,
 * so a failing test cannot leak them.
 */
static struct {
	uint64_t stream_mib;
	uint64_t limit_mib;
	char stream[PATH_MAX];		/* footprint stream */
	char stream_why[600];
	char big[PATH_MAX];		/* hot-set stream, 4x the limit */
	char hot[PATH_MAX];		/* hot file, a third of the limit */
	char hotset_why[600];		/* non-empty: hot-set tests are skipped or broken */
	bool hotset_broken;		/* the why is an error, not a skip */
	bool hotset_ready;
	struct uot_cgroup cg;
} e2e;

/* The cgroup is outside the scratch directory. */
static void e2e_cleanup(void)
{
	uot_cgroup_remove(&e2e.cg);
}

/* ---- running one program once ---- */

struct e2e_outcome {
	bool with;
	struct uot_result r;
	double hot_before;
	double hot_after;
	char dst[PATH_MAX];
	char error[768];	/* non-empty: the run or its output was wrong */
};

/* Replaces every @TOKEN of the template; 'out' receives the argument. */
static void e2e_expand(char *out, size_t size, const char *tpl, const char *src,
		       const char *dst, uint64_t mib)
{
	static const char *const tokens[] = { "@SRC", "@DST", "@MIB", "@NAME", "@SPLICE" };
	char splice[PATH_MAX + 32], num[32];
	const char *name = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
	const char *values[] = { src, dst, num, name, splice };

	uot_sfmt(splice, sizeof(splice), "%s/tests/splice_copy", uot_build_dir());
	uot_sfmt(num, sizeof(num), "%llu", (unsigned long long)mib);
	uot_expand(out, size, tpl, tokens, values, sizeof(tokens) / sizeof(tokens[0]));
}

static int e2e_all_zero(const char *path, uint64_t size, char *why, size_t why_size)
{
	static char buf[1 << 20];
	uint64_t done = 0;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0) {
		uot_sfmt(why, why_size, "cannot read %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if ((uint64_t)st.st_size != size) {
		uot_sfmt(why, why_size, "%s has %lld bytes, expected %llu", path,
			(long long)st.st_size, (unsigned long long)size);
		close(fd);
		return 0;
	}
	while (done < size) {
		ssize_t n = read(fd, buf, sizeof(buf)), i;

		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			if (buf[i]) {
				uot_sfmt(why, why_size, "%s: byte %llu is not zero", path,
					(unsigned long long)(done + (uint64_t)i));
				close(fd);
				return 0;
			}
		}
		done += (uint64_t)n;
	}
	close(fd);
	if (done != size) {
		uot_sfmt(why, why_size, "%s: short read at %llu", path, (unsigned long long)done);
		return 0;
	}
	return 1;
}

/* Checks what the program wrote; false with o->error set if it is wrong. */
static bool e2e_check_output(const struct e2e_prog *p, const char *src, uint64_t size,
			     struct e2e_outcome *o)
{
	int eq = 1;

	switch (p->dst) {
	case DST_NONE:
	case DST_DIGEST:
		return true;
	case DST_COPY:
		eq = uot_files_equal(src, 0, o->dst, 0, UINT64_MAX);
		break;
	case DST_TAR:
		eq = uot_files_equal(src, 0, o->dst, 512, size);
		break;
	case DST_ZEROS:
		return e2e_all_zero(o->dst, size, o->error, sizeof(o->error)) == 1;
	}
	if (eq != 1) {
		uot_sfmt(o->error, sizeof(o->error), "%s output is not the stream: %s",
			p->name, uot_why());
		return false;
	}
	return true;
}

/*
 * One run of the program on 'src' (size bytes), with or without the
 * library, inside 'cg' if given (then the hot file is made cold and
 * touched once inside it first).  Fills 'o'; never asserts, so that the
 * caller can print both runs before judging them.
 */
static void e2e_run(const struct e2e_prog *p, const char *src, uint64_t size, bool with,
		    struct uot_cgroup *cg, struct e2e_outcome *o)
{
	char args[8][PATH_MAX + 64], tag[64];
	const char *argv[9];
	struct uot_cmd c;
	size_t i;

	memset(o, 0, sizeof(*o));
	o->with = with;
	uot_sfmt(tag, sizeof(tag), "%s.%s%s", p->name, cg ? "hot." : "", with ? "with" : "without");
	uot_scratch_path(o->dst, sizeof(o->dst), tag);
	unlink(o->dst);
	if (p->src == SRC_STREAM && uot_make_cold(src) != 0) {
		uot_sfmt(o->error, sizeof(o->error), "%s", uot_why());
		return;
	}
	if (cg) {
		if (uot_cgroup_reset(cg) != 0 ||
		    uot_make_cold(e2e.hot) != 0 ||
		    uot_touch(e2e.hot, UOT_TOUCH_MMAP, cg) != 0) {
			uot_sfmt(o->error, sizeof(o->error), "hot-set setup: %s", uot_why());
			return;
		}
		o->hot_before = uot_resident_pct(e2e.hot);
	}

	for (i = 0; p->argv[i]; i++) {
		e2e_expand(args[i], sizeof(args[i]), p->argv[i], src, o->dst, size / UOT_MIB);
		argv[i] = args[i];
	}
	argv[i] = NULL;
	memset(&c, 0, sizeof(c));
	c.argv = argv;
	c.preload = with;
	c.cwd = uot_scratch();
	c.cg = cg;
	c.out = p->dst == DST_NONE ? "/dev/null" : p->dst == DST_DIGEST ? o->dst : NULL;
	c.watch[0] = p->src == SRC_STREAM ? src : NULL;
	c.watch[1] = p->dst == DST_NONE || p->dst == DST_DIGEST ? NULL : o->dst;
	c.timeout_s = TEST_TIMEOUT / 2;
	if (uot_run(&c, &o->r) != 0) {
		uot_sfmt(o->error, sizeof(o->error), "%s", uot_why());
		return;
	}
	if (cg)
		o->hot_after = uot_resident_pct(e2e.hot);
	if (!uot_exited_ok(o->r.status)) {
		uot_sfmt(o->error, sizeof(o->error), "%s %s: %s", p->name,
			with ? "with the library" : "alone", uot_status_str(o->r.status));
		return;
	}
	e2e_check_output(p, src, size, o);
}

/* The output of a run is not needed any more (digests are compared first). */
static void e2e_forget(struct e2e_outcome *o)
{
	if (o->dst[0])
		unlink(o->dst);
}

static const char *e2e_mode(const struct e2e_outcome *o)
{
	return o->with ? "with" : "without";
}

/* A '-' when the program has no such file. */
static void e2e_fig(char *out, size_t size, bool have, uint64_t bytes)
{
	if (have)
		uot_sfmt(out, size, "%5.0f", uot_mib(bytes));
	else
		uot_sfmt(out, size, "%5s", "-");
}

static void e2e_print_footprint(const struct e2e_prog *p, const struct e2e_outcome *o,
				bool src, bool dst)
{
	char sp[16], sa[16], dp[16], da[16];

	e2e_fig(sp, sizeof(sp), src, o->r.peak[0]);
	e2e_fig(sa, sizeof(sa), src, o->r.after[0]);
	e2e_fig(dp, sizeof(dp), dst, o->r.peak[1]);
	e2e_fig(da, sizeof(da), dst, o->r.after[1]);
	printf("e2e: footprint %-15s %-7s  src peak %s after %s MiB  dst peak %s after %s MiB"
	       "  %5.2f s%s%s\n", p->name, e2e_mode(o), sp, sa, dp, da, o->r.secs,
	       o->error[0] ? "  ERROR: " : "", o->error);
	fflush(stdout);
}

static void e2e_print_hotset(const struct e2e_prog *p, const struct e2e_outcome *o,
			     bool src, bool dst)
{
	char sp[16], dp[16];

	e2e_fig(sp, sizeof(sp), src, o->r.peak[0]);
	e2e_fig(dp, sizeof(dp), dst, o->r.peak[1]);
	printf("e2e: hotset    %-15s %-7s  hot %5.1f%% -> %5.1f%%  stream peak src %s dst %s MiB"
	       "  dirty+wb peak %4.0f MiB  %5.2f s%s%s\n", p->name, e2e_mode(o),
	       o->hot_before, o->hot_after, sp, dp, uot_mib(o->r.peak_dirty_wb), o->r.secs,
	       o->error[0] ? "  ERROR: " : "", o->error);
	fflush(stdout);
}

static bool e2e_skip_missing(const struct e2e_prog *p, const char *suite)
{
	char splice[PATH_MAX + 32];

	if (p->needs && access(p->needs, X_OK) != 0) {
		printf("e2e: %s %s: skipped: %s is missing\n", suite, p->name, p->needs);
		return true;
	}
	/* Built by `make tests` with this program: missing means a broken build. */
	if (!strcmp(p->argv[0], "@SPLICE")) {
		uot_sfmt(splice, sizeof(splice), "%s/tests/splice_copy", uot_build_dir());
		ck_assert_msg(access(splice, X_OK) == 0, "%s is missing: run make tests", splice);
	}
	return false;
}

/* Digests printed by sha256sum with and without the library must agree. */
static void e2e_check_digests(const struct e2e_prog *p, struct e2e_outcome o[2])
{
	if (p->dst != DST_DIGEST || o[0].error[0] || o[1].error[0])
		return;
	ck_assert_msg(uot_files_equal(o[0].dst, 0, o[1].dst, 0, UINT64_MAX) == 1,
		      "%s printed something else with the library: %s", p->name, uot_why());
}

/* ---- footprint ---- */

static void footprint_setup(void)
{
	if (uot_skip_reason()[0] || e2e.stream[0] || e2e.stream_why[0])
		return;
	uot_scratch_path(e2e.stream, sizeof(e2e.stream), "stream");
	if (uot_make_file(e2e.stream, e2e.stream_mib * UOT_MIB, 1) != 0) {
		uot_sfmt(e2e.stream_why, sizeof(e2e.stream_why), "cannot make the stream: %s",
			uot_why());
		e2e.stream[0] = '\0';
	}
}

static void footprint_teardown(void)
{
}

START_TEST(test_footprint)
{
	const struct e2e_prog *p = &e2e_progs[_i];
	uint64_t size = e2e.stream_mib * UOT_MIB;
	bool src = p->src == SRC_STREAM;
	bool dst = p->dst != DST_NONE && p->dst != DST_DIGEST;
	struct e2e_outcome o[2];
	char what[64];
	int m;

	if (uot_skipped(uot_sfmt(what, sizeof(what), "footprint %s", p->name)))
		return;
	ck_assert_msg(!e2e.stream_why[0], "%s", e2e.stream_why);
	if (e2e_skip_missing(p, "footprint"))
		return;

	for (m = 0; m < 2; m++) {
		e2e_run(p, e2e.stream, size, m == 1, NULL, &o[m]);
		e2e_print_footprint(p, &o[m], src, dst);
		if (p->dst != DST_DIGEST)
			e2e_forget(&o[m]);
	}
	e2e_check_digests(p, o);
	e2e_forget(&o[0]);
	e2e_forget(&o[1]);

	for (m = 0; m < 2; m++)
		ck_assert_msg(!o[m].error[0], "%s", o[m].error);
	/* Without: the kernel keeps the stream, so the measurement can see a difference. */
	if (src)
		ck_assert_msg(o[0].r.after[0] >= size * KEPT_MIN_PCT / 100,
			      "%s alone: only %.0f MiB of the %.0f MiB source stayed cached: "
			      "this machine cannot show what the library changes",
			      p->name, uot_mib(o[0].r.after[0]), uot_mib(size));
	if (dst)
		ck_assert_msg(o[0].r.after[1] >= size * KEPT_MIN_PCT / 100,
			      "%s alone: only %.0f MiB of the %.0f MiB output stayed cached",
			      p->name, uot_mib(o[0].r.after[1]), uot_mib(size));
	/* With: bounded while running and after. */
	if (src) {
		ck_assert_msg(o[1].r.peak[0] <= PEAK_MAX,
			      "%s with the library: source peaked at %.0f MiB (bound %.0f)",
			      p->name, uot_mib(o[1].r.peak[0]), uot_mib(PEAK_MAX));
		ck_assert_msg(o[1].r.after[0] <= AFTER_MAX,
			      "%s with the library: %.0f MiB of the source left cached (bound %.0f)",
			      p->name, uot_mib(o[1].r.after[0]), uot_mib(AFTER_MAX));
	}
	if (dst) {
		ck_assert_msg(o[1].r.peak[1] <= e2e_output_peak_max(),
			      "%s with the library: output peaked at %.0f MiB (bound %.0f)",
			      p->name, uot_mib(o[1].r.peak[1]), uot_mib(e2e_output_peak_max()));
		ck_assert_msg(o[1].r.after[1] <= AFTER_MAX,
			      "%s with the library: %.0f MiB of the output left cached (bound %.0f)",
			      p->name, uot_mib(o[1].r.after[1]), uot_mib(AFTER_MAX));
	}
}
END_TEST

/* ---- hot set ---- */

static void hotset_setup(void)
{
	uint64_t limit = e2e.limit_mib * UOT_MIB;

	if (e2e.hotset_ready || e2e.hotset_why[0])
		return;
	if (uot_skip_reason()[0]) {
		uot_sfmt(e2e.hotset_why, sizeof(e2e.hotset_why), "%s", uot_skip_reason());
		return;
	}
	if (uot_cgroup_supported() != 0) {
		uot_sfmt(e2e.hotset_why, sizeof(e2e.hotset_why), "%s", uot_why());
		return;
	}
	uot_scratch_path(e2e.hot, sizeof(e2e.hot), "hot");
	uot_scratch_path(e2e.big, sizeof(e2e.big), "big");
	if (uot_cgroup_create(&e2e.cg, limit) != 0 ||
	    uot_make_file(e2e.hot, limit / 3, 2) != 0 ||
	    uot_make_file(e2e.big, 4 * limit, 3) != 0) {
		uot_sfmt(e2e.hotset_why, sizeof(e2e.hotset_why), "hot-set setup: %s", uot_why());
		e2e.hotset_broken = true;
		return;
	}
	e2e.hotset_ready = true;
}

static void hotset_teardown(void)
{
}

START_TEST(test_hotset)
{
	const struct e2e_prog *p = &e2e_progs[_i];
	uint64_t size = 4 * e2e.limit_mib * UOT_MIB;
	bool src = p->src == SRC_STREAM;
	bool dst = p->dst != DST_NONE && p->dst != DST_DIGEST;
	struct e2e_outcome o[2];
	int m;

	ck_assert_msg(!e2e.hotset_broken, "%s", e2e.hotset_why);
	if (!e2e.hotset_ready) {
		printf("e2e: hotset %s: skipped: %s\n", p->name, e2e.hotset_why);
		return;
	}
	if (e2e_skip_missing(p, "hotset"))
		return;

	for (m = 0; m < 2; m++) {
		e2e_run(p, e2e.big, size, m == 1, &e2e.cg, &o[m]);
		e2e_print_hotset(p, &o[m], src, dst);
		if (p->dst != DST_DIGEST)
			e2e_forget(&o[m]);
	}
	e2e_check_digests(p, o);
	e2e_forget(&o[0]);
	e2e_forget(&o[1]);
	/* Leave nothing charged behind for the next program. */
	uot_cgroup_reset(&e2e.cg);

	for (m = 0; m < 2; m++) {
		ck_assert_msg(!o[m].error[0], "%s", o[m].error);
		ck_assert_msg(o[m].hot_before >= HOT_KEPT_PCT,
			      "the hot set was only %.1f%% resident after touching it",
			      o[m].hot_before);
	}
	ck_assert_msg(o[0].hot_after <= HOT_LOST_PCT,
		      "%s alone: the hot set stayed %.1f%% resident: the stream did not "
		      "pressure the cgroup, so this test cannot tell", p->name, o[0].hot_after);
	ck_assert_msg(o[1].hot_after >= HOT_KEPT_PCT,
		      "%s with the library: the hot set fell to %.1f%% (kept needs %.0f%%)",
		      p->name, o[1].hot_after, HOT_KEPT_PCT);
	ck_assert_msg(o[1].r.peak_dirty_wb <= DIRTY_WB_MAX,
		      "%s with the library: dirty+writeback peaked at %.0f MiB (bound %.0f)",
		      p->name, uot_mib(o[1].r.peak_dirty_wb), uot_mib(DIRTY_WB_MAX));
	/* What closed streams may leave in flight is two windows: close waits down to that. */
	if (dst)
		ck_assert_msg(o[1].r.after[1] <= AFTER_MAX,
			      "%s with the library: %.0f MiB of the output left cached in the "
			      "cgroup (bound %.0f)", p->name, uot_mib(o[1].r.after[1]),
			      uot_mib(AFTER_MAX));
}
END_TEST

/* ---- the library itself ---- */

static bool e2e_have(const char *prog)
{
	char cmd[256];

	uot_sfmt(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* FNV-1a of the whole file, as early_reader computes it. */
static int e2e_fnv(const char *path, char *out, size_t size)
{
	static unsigned char buf[1 << 20];
	uint64_t fnv = 0xcbf29ce484222325ULL, bytes = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		ssize_t i;

		for (i = 0; i < n; i++) {
			fnv ^= buf[i];
			fnv *= 0x100000001b3ULL;
		}
		bytes += (uint64_t)n;
	}
	close(fd);
	if (n < 0)
		return -1;
	uot_sfmt(out, size, "bytes=%llu fnv=%016llx\n", (unsigned long long)bytes,
		(unsigned long long)fnv);
	return 0;
}

static void e2e_slurp(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, size - 1) : -1;

	out[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/* The shared early_reader: the build's, else compiled here from the source. */
static const char *e2e_early_so(char *out, size_t size)
{
	char src[PATH_MAX];
	const char *argv[] = { "cc", "-shared", "-fPIC", "-O2", "-DUOT_EARLY_READER_LIB",
			       "-o", out, src, NULL };
	struct uot_cmd c = { .argv = argv };
	struct uot_result r;

	uot_sfmt(out, size, "%s/tests/early_reader.so", uot_build_dir());
	if (access(out, R_OK) == 0)
		return out;
	if (!e2e_have("cc"))
		return NULL;
	uot_sfmt(src, sizeof(src), "%s/tests/helpers/early_reader.c", uot_srcdir());
	uot_scratch_path(out, size, "early_reader.so");
	ck_assert_msg(uot_run(&c, &r) == 0 && uot_exited_ok(r.status),
		      "cannot build %s from %s: %s", out, src, uot_status_str(r.status));
	return out;
}

START_TEST(test_early_constructor)
{
	const uint64_t size = 64 * UOT_MIB;
	char so[PATH_MAX], data[PATH_MAX], expect[96];
	int order;

	if (uot_skipped("early_constructor"))
		return;
	if (!e2e_early_so(so, sizeof(so))) {
		printf("e2e: early_constructor: skipped: no %s/tests/early_reader.so and no cc "
		       "to build it\n", uot_build_dir());
		return;
	}
	uot_scratch_path(data, sizeof(data), "early.data");
	ck_assert_msg(uot_make_file(data, size, 4) == 0, "%s", uot_why());
	ck_assert_msg(e2e_fnv(data, expect, sizeof(expect)) == 0, "cannot read %s", data);

	/*
	 * Constructors of preloaded objects run last-listed first: with
	 * early_reader after libuseonce, its read() comes before our
	 * constructor has run.  Both orders must work.
	 */
	for (order = 0; order < 2; order++) {
		char preload[3 * PATH_MAX + 96], e_read[PATH_MAX + 32], e_report[PATH_MAX + 32];
		char e_trace[PATH_MAX + 32], report[PATH_MAX], trace[PATH_MAX], out[PATH_MAX];
		char got[96], traced[8192];
		const char *env[] = { preload, e_read, e_report, e_trace, NULL };
		const char *argv[] = { "cat", data, NULL };
		struct uot_cmd c;
		struct uot_result r;
		const char *first = order ? "early_reader" : "libuseonce";
		const char *san = getenv("UO_PRELOAD_FIRST");

		uot_scratch_path(report, sizeof(report), order ? "early.report1" : "early.report0");
		uot_scratch_path(trace, sizeof(trace), order ? "early.trace1" : "early.trace0");
		uot_scratch_path(out, sizeof(out), order ? "early.out1" : "early.out0");
		/* A sanitizer's runtime, in the sanitizer pass, must come before both. */
		uot_sfmt(preload, sizeof(preload), "LD_PRELOAD=%s%s%s:%s", san ? san : "",
			san && *san ? ":" : "", order ? uot_library() : so,
			order ? so : uot_library());
		uot_sfmt(e_read, sizeof(e_read), "UOT_EARLY_READ=%s", data);
		uot_sfmt(e_report, sizeof(e_report), "UOT_EARLY_REPORT=%s", report);
		uot_sfmt(e_trace, sizeof(e_trace), "USEONCE_TRACE=%s", trace);
		unlink(trace);
		ck_assert_msg(uot_make_cold(data) == 0, "%s", uot_why());

		memset(&c, 0, sizeof(c));
		c.argv = argv;
		c.env = env;
		c.out = out;
		c.watch[0] = data;
		c.watch[1] = out;
		ck_assert_msg(uot_run(&c, &r) == 0, "%s", uot_why());
		e2e_slurp(report, got, sizeof(got));
		e2e_slurp(trace, traced, sizeof(traced));
		printf("e2e: early_constructor: %s constructor first: %s, early read %s, "
		       "early descriptor %s, data after %.0f MiB, copy after %.0f MiB\n",
		       first, uot_status_str(r.status), strcmp(got, expect) ? "WRONG" : "right",
		       strstr(traced, "fd 77:") ? "traced" : "not traced (read before our constructor)",
		       uot_mib(r.after[0]), uot_mib(r.after[1]));
		fflush(stdout);

		ck_assert_msg(uot_exited_ok(r.status), "cat with %s: %s", preload,
			      uot_status_str(r.status));
		ck_assert_msg(!strcmp(got, expect), "the early constructor read \"%s\", expected \"%s\"",
			      got, expect);
		ck_assert_msg(uot_files_equal(data, 0, out, 0, UINT64_MAX) == 1, "%s", uot_why());
		/* The library still guards the program once its constructor ran. */
		ck_assert_msg(r.after[0] <= AFTER_MAX && r.after[1] <= AFTER_MAX,
			      "with %s the stream was not guarded: %.0f and %.0f MiB left cached",
			      preload, uot_mib(r.after[0]), uot_mib(r.after[1]));
		unlink(out);
	}
	unlink(data);
}
END_TEST

/* ---- suites ---- */

static Suite *e2e_program_suite(const char *name, const TTest *test,
				void (*setup)(void), void (*teardown)(void))
{
	Suite *s = suite_create(name);
	size_t i;

	for (i = 0; i < E2E_NPROGS; i++) {
		TCase *tc = tcase_create(e2e_progs[i].name);

		/* In the parent, once: streams are made once and outlive failing tests. */
		tcase_add_unchecked_fixture(tc, setup, teardown);
		tcase_set_timeout(tc, TEST_TIMEOUT);
		tcase_add_loop_test(tc, test, (int)i, (int)i + 1);
		suite_add_tcase(s, tc);
	}
	return s;
}

static Suite *library_suite(void)
{
	Suite *s = suite_create("library");
	TCase *tc;

	tc = tcase_create("early_constructor");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_early_constructor);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;

	e2e.stream_mib = uot_env_mib("check_e2e", "UO_E2E_STREAM_MIB", 512, 64);
	e2e.limit_mib = uot_env_mib("check_e2e", "UO_E2E_LIMIT_MIB", 256, 64);
	uot_suite_begin("e2e", e2e_cleanup);
	uot_need_scratch();

	sr = srunner_create(library_suite());
	srunner_add_suite(sr, e2e_program_suite("footprint", test_footprint,
						footprint_setup, footprint_teardown));
	srunner_add_suite(sr, e2e_program_suite("hotset", test_hotset,
						hotset_setup, hotset_teardown));
	return uot_check_runner(sr, false);
}
