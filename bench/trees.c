/*
 * trees: copying a directory, the use-once test of issue 12.
 *
 * A memory cgroup stands in for a small machine; a hot file of a third of
 * its limit is mapped and touched once inside it; then a tree of files is
 * copied inside it by a real program, bare, under Debian's nocache and
 * under libuseonce.  Every copy is followed by `sync -f` in the same
 * timed command, so all three end with the data on disk and the bare
 * copy is not credited with the writeback it left behind.
 *
 * Trees (each about UO_BENCH_TREE_MIB, 1000 by default):
 *	big	files of 10 MiB
 *	small	files of 128 KiB
 *	mixed	sizes spread from 4 KiB to 64 MiB (log-uniform), in subdirectories
 * Copiers: cp -r, cp -a, rsync -a, tar c | zstd, tar x (of the tree's
 * archive), and one cp per file (find -exec cp).
 *
 * Per case: the hot set resident after, MB/s (tree bytes over the copy and
 * its sync), source and destination resident after (% of their size), and
 * the cgroup's peak dirty + writeback.  Then `tar x` followed by `grep -r`
 * over what was unpacked, guarded and not, in the same cgroup: total time
 * of the two, for the trees above and for two trees that fit in it.  The
 * remedies take turns going first from one repeat to the next.
 *
 *	UO_BENCH_LIMIT_MIB	the cgroup's memory (default 256, smoke 48)
 *	UO_BENCH_REPEATS	repeats of every case (default 3, smoke 1)
 *	UO_BENCH_TREE_MIB	each tree's size (default 1000, smoke 40)
 *	UO_BENCH_TREES		comma-separated: big,small,mixed (default all)
 *	UO_BENCH_COPIERS	comma-separated: cpr,cpa,rsync,tarzstd,tarx,exec
 *	UO_BENCH_REMEDIES	comma-separated: none,nocache,libuseonce
 *	UO_BENCH_BEFORE		another build's libuseonce.so, run in nocache's place
 *				(rows "before"), with libuseonce's environment: two
 *				builds side by side in one run, taking turns
 *
 * Needs root (memory cgroups); without it, says so and does nothing.
 * Everything it makes is removed at the end, on error and on Ctrl-C.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench.h"

#define UOB_TIMEOUT	1800
#define UOB_HOT_KEPT	99.0
#define UOB_KIB		1024ULL

enum remedy { REM_NONE, REM_NOCACHE, REM_USEONCE, REM_N };

static const char *remedy_name[REM_N] = { "none", "nocache", "libuseonce" };

enum tree_kind { TREE_BIG, TREE_SMALL, TREE_MIXED, TREE_BIG_FIT, TREE_SMALL_FIT, TREE_N };

/* The first TREE_COPIED trees are copied by every copier; the rest only unpacked and grepped. */
#define TREE_COPIED	3

static const struct {
	const char *key;
	const char *label;
	uint64_t file_size;	/* 0: mixed sizes */
	unsigned subdirs;
	bool fits;		/* half the cgroup's limit, for the grep case */
} trees[TREE_N] = {
	{ "big", "files of 10 MiB", 10 * UOT_MIB, 4, false },
	{ "small", "files of 128 KiB", 128 * UOB_KIB, 8, false },
	{ "mixed", "files of 4 KiB..64 MiB", 0, 6, false },
	{ "bigfit", "files of 10 MiB, half the limit", 10 * UOT_MIB, 1, true },
	{ "smallfit", "files of 128 KiB, half the limit", 128 * UOB_KIB, 2, true },
};

/*
 * argv of sh -c: @SRC the tree, @DST the copy (a directory, or a file for
 * tar c), @TAR the tree's archive, @SCR the scratch directory.  Each ends
 * with a sync of the filesystem, timed with the copy.
 */
static const struct {
	const char *key;
	const char *label;
	const char *script;
	bool from_archive;	/* reads @TAR, not @SRC */
	bool to_file;		/* @DST is one file */
} copiers[] = {
	{ "cpr", "`cp -r`", "cp -r @SRC @DST && sync -f @SCR", false, false },
	{ "cpa", "`cp -a`", "cp -a @SRC @DST && sync -f @SCR", false, false },
	{ "rsync", "`rsync -a`", "rsync -a @SRC/ @DST/ && sync -f @SCR", false, false },
	{ "tarzstd", "`tar c \\| zstd`",
	  "tar cf - -C @SRC . | zstd -q -1 -o @DST && sync -f @SCR", false, true },
	{ "tarx", "`tar x`", "mkdir @DST && tar xf @TAR -C @DST && sync -f @SCR", true, false },
	{ "exec", "`find -exec cp` (one cp per file)",
	  "mkdir @DST && cd @SRC && find . -type f -exec cp --parents {} @DST \\; && sync -f @SCR",
	  false, false },
};

#define NCOPIERS	(sizeof(copiers) / sizeof(copiers[0]))

/* tar x, then grep -r over the result: the guard must not slow a tree read back. */
static const char grep_script[] =
	"mkdir @DST && tar xf @TAR -C @DST && { grep -r -c uo-no-such-string-9f3 @DST >/dev/null; "
	"[ $? -le 1 ]; }";

struct cell {
	struct uob_stat hot_after;	/* % */
	struct uob_stat mbps;		/* tree bytes / (copy + sync), 10^6 B/s */
	struct uob_stat src_res;	/* % of the source's bytes */
	struct uob_stat dst_res;	/* % of the copy's bytes */
	struct uob_stat dirty_wb;	/* MiB */
	char error[256];
};

struct grep_cell {
	struct uob_stat secs;
	struct uob_stat hot_after;
	char error[256];
};

static struct {
	uint64_t limit, hot_size, tree_size;
	unsigned repeats;
	bool run_tree[TREE_N];
	bool run_copier[NCOPIERS];
	bool have[REM_N];
	char nocache[PATH_MAX];
	bool before;		/* nocache's place holds UO_BENCH_BEFORE */
	char run_dir[PATH_MAX];	/* the runs' private runtime directory: the record */
	char hot[PATH_MAX], dst[PATH_MAX];
	char src[TREE_N][PATH_MAX], tar[TREE_N][PATH_MAX];
	uint64_t bytes[TREE_N];
	unsigned files[TREE_N];
	struct uot_cgroup cg;
	struct cell cells[TREE_N][NCOPIERS][REM_N];
	struct grep_cell grep[TREE_N][REM_N];
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

/* A deterministic generator: the mixed tree is the same on every machine. */
static uint64_t next_rand(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Log-uniform from 4 KiB to 'max' (64 MiB, less in a smoke run): 12..24 bits. */
static uint64_t mixed_size(uint64_t *x, uint64_t max)
{
	unsigned top = 0, octave;
	double e;

	while ((1ULL << (top + 1)) <= max)
		top++;
	/* An exponent drawn uniformly; within an octave, sizes spread linearly. */
	e = (double)(next_rand(x) >> 11) / 9007199254740992.0 * (top - 12);
	octave = (unsigned)e;
	return (uint64_t)((double)((4 * UOB_KIB) << octave) * (1.0 + (e - octave)));
}

static void make_tree(enum tree_kind k)
{
	uint64_t want = trees[k].fits ? B.limit / 2 : B.tree_size, x = 12 + (uint64_t)k, size;
	uint64_t max = B.tree_size / 4 < 64 * UOT_MIB ? B.tree_size / 4 : 64 * UOT_MIB;
	char path[PATH_MAX + 64];
	unsigned i, d;

	if (mkdir(B.src[k], 0755) != 0)
		bench_fail("mkdir");
	for (d = 0; d < trees[k].subdirs; d++) {
		snprintf(path, sizeof(path), "%s/d%u", B.src[k], d);
		if (mkdir(path, 0755) != 0)
			bench_fail("mkdir");
	}
	for (i = 0; B.bytes[k] < want; i++) {
		size = trees[k].file_size ? trees[k].file_size : mixed_size(&x, max);
		if (size > want - B.bytes[k] && !trees[k].file_size)
			size = want - B.bytes[k];
		snprintf(path, sizeof(path), "%s/d%u/f%05u", B.src[k], i % trees[k].subdirs, i);
		if (uot_make_file(path, size, 1000 * (uint32_t)k + i) != 0)
			bench_fail("making a tree");
		B.bytes[k] += size;
		if (uot_interrupted)
			bench_fail("making a tree");
	}
	B.files[k] = i;
	if (uot_sh("tar cf '%s' -C '%s' .", B.tar[k], B.src[k]) != 0)
		bench_fail("making a tree's archive");
	uot_make_cold(B.tar[k]);
}

/* Residency of every regular file under a directory (or of one file), summed. */
static uint64_t walk_res, walk_size;

static int walk_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	uint64_t size = 0;
	int64_t res;

	(void)sb;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	res = uot_resident(path, &size);
	if (res > 0)
		walk_res += (uint64_t)res;
	walk_size += size;
	return 0;
}

static int make_cold_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	return type == FTW_F ? uot_make_cold(path) : 0;
}

/* % of the tree's bytes in the page cache. */
static double tree_resident(const char *path)
{
	walk_res = walk_size = 0;
	if (nftw(path, walk_one, 32, FTW_PHYS) != 0 || !walk_size)
		return 0.0;
	return 100.0 * (double)walk_res / (double)walk_size;
}

static uint64_t tree_bytes(const char *path)
{
	walk_res = walk_size = 0;
	nftw(path, walk_one, 32, FTW_PHYS);
	return walk_size;
}

static void expand(char *out, size_t size, const char *tpl, enum tree_kind k)
{
	static const char *const tokens[] = { "@SRC", "@DST", "@TAR", "@SCR" };
	const char *values[] = { B.src[k], B.dst, B.tar[k], uot_scratch() };

	uot_expand(out, size, tpl, tokens, values, sizeof(tokens) / sizeof(tokens[0]));
}

/* Each case starts from nothing: no tasks, nothing charged, every file cold, hot touched once. */
static void start_case(enum tree_kind k)
{
	uot_scratch_rm(B.dst);
	unlink(B.dst);
	if (uot_cgroup_reset(&B.cg) != 0)
		bench_fail("emptying the cgroup");
	if (nftw(B.src[k], make_cold_one, 32, FTW_PHYS) != 0 || uot_make_cold(B.tar[k]) != 0 ||
	    uot_make_cold(B.hot) != 0)
		bench_fail("making the files cold");
	if (uot_touch(B.hot, UOT_TOUCH_MMAP, &B.cg) != 0)
		bench_fail("touching the hot file");
}

static int run_script(const char *script, enum tree_kind k, enum remedy rem,
		      struct uot_result *r)
{
	char cmd[4 * PATH_MAX], env_preload[PATH_MAX + 16], xdg[PATH_MAX + 20];
	const char *argv[] = { "sh", "-c", cmd, NULL }, *env[3] = { NULL, NULL, NULL };
	struct uot_cmd c;

	expand(cmd, sizeof(cmd), script, k);
	memset(&c, 0, sizeof(c));
	c.argv = argv;
	c.cwd = uot_scratch();
	c.cg = &B.cg;
	c.watch[0] = B.hot;
	c.timeout_s = UOB_TIMEOUT;
	if (rem == REM_USEONCE || (rem == REM_NOCACHE && B.before)) {
		c.preload = true;
		c.library = rem == REM_NOCACHE ? B.nocache : NULL;
		/*
		 * The user's runtime directory holds the record through which the
		 * processes of one find share their run: root has none here.  It
		 * must be private (0700), or the library passes it over for
		 * /tmp/useonce-0, which every root process on the machine shares.
		 */
		snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", B.run_dir);
		env[0] = xdg;
		env[1] = uob_first_stream_env();
		c.env = env;
	} else if (rem == REM_NOCACHE) {
		snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", B.nocache);
		env[0] = env_preload;
		c.env = env;
	}
	if (uot_run(&c, r) != 0)
		bench_fail(script);
	return uot_exited_ok(r->status) ? 0 : -1;
}

/* Cheap intact-data check: as many bytes came out as went in (tar c: at least). */
static int check_copy(unsigned ci, enum tree_kind k, char *why, size_t n)
{
	uint64_t got = tree_bytes(B.dst);

	if (copiers[ci].to_file ? got < B.bytes[k] / 2 : got != B.bytes[k]) {
		snprintf(why, n, "the copy holds %llu bytes of %llu", (unsigned long long)got,
			 (unsigned long long)B.bytes[k]);
		return -1;
	}
	return 0;
}

static void run_case(enum tree_kind k, unsigned ci, enum remedy rem)
{
	struct cell *cell = &B.cells[k][ci][rem];
	const char *src = copiers[ci].from_archive ? B.tar[k] : B.src[k];
	char why[256] = "";
	struct uot_result r;
	double hot, srcp, dstp;

	start_case(k);
	if (run_script(copiers[ci].script, k, rem, &r) != 0)
		snprintf(why, sizeof(why), "%s", uot_status_str(r.status));
	hot = uot_resident_pct(B.hot);
	srcp = tree_resident(src);
	dstp = tree_resident(B.dst);
	if (!why[0])
		check_copy(ci, k, why, sizeof(why));
	if (why[0]) {
		if (!cell->error[0])
			snprintf(cell->error, sizeof(cell->error), "%s", why);
		B.failures++;
		uob_say("    %-8s %-8s %-10s FAILED: %s\n", trees[k].key, copiers[ci].key,
			remedy_name[rem], why);
		return;
	}
	uob_add(&cell->hot_after, hot);
	uob_add(&cell->mbps, (double)B.bytes[k] / r.secs / 1e6);
	uob_add(&cell->src_res, srcp);
	uob_add(&cell->dst_res, dstp);
	uob_add(&cell->dirty_wb, uot_mib(r.peak_dirty_wb));
	uob_say("    %-8s %-8s %-10s hot %5.1f%%, %6.1f MB/s, source %5.1f%%, copy %5.1f%%, "
		"dirty+wb %4.0f MiB\n", trees[k].key, copiers[ci].key, remedy_name[rem], hot,
		(double)B.bytes[k] / r.secs / 1e6, srcp, dstp, uot_mib(r.peak_dirty_wb));
}

static void run_grep(enum tree_kind k, enum remedy rem)
{
	struct grep_cell *cell = &B.grep[k][rem];
	struct uot_result r;

	start_case(k);
	if (run_script(grep_script, k, rem, &r) != 0) {
		if (!cell->error[0])
			snprintf(cell->error, sizeof(cell->error), "%s", uot_status_str(r.status));
		B.failures++;
		uob_say("    %-8s tar x + grep -r %-10s FAILED\n", trees[k].key, remedy_name[rem]);
		return;
	}
	uob_add(&cell->secs, r.secs);
	uob_add(&cell->hot_after, uot_resident_pct(B.hot));
	uob_say("    %-8s tar x + grep -r %-10s %6.2f s, hot %5.1f%%\n", trees[k].key,
		remedy_name[rem], r.secs, uot_resident_pct(B.hot));
}

static double ratio(const struct uob_stat *a, const struct uob_stat *b)
{
	return a->n && b->n && uob_median(b) > 0 ? uob_median(a) / uob_median(b) : 0.0;
}

static void tables(void)
{
	unsigned ci;
	int k, rem;

	uob_md("\n### Summary: under libuseonce, against the bare copy (medians)\n\n"
	       "| tree | copier | hot after: none | nocache | libuseonce | MB/s libuseonce / none "
	       "| source resident | copy resident | peak dirty+wb MiB: none | libuseonce |\n"
	       "|---|---|---|---|---|---|---|---|---|---|\n");
	for (k = 0; k < TREE_COPIED; k++)
		for (ci = 0; ci < NCOPIERS; ci++) {
			const struct cell *c = B.cells[k][ci];

			if (!B.run_tree[k] || !B.run_copier[ci])
				continue;
			uob_md("| %s | %s |", trees[k].key, copiers[ci].label);
			for (rem = 0; rem < REM_N; rem++) {
				if (!B.have[rem])
					uob_md(" - |");
				else if (c[rem].error[0] || !c[rem].hot_after.n)
					uob_md(" FAILED |");
				else
					uob_md(" %s%.1f%s |", uob_median(&c[rem].hot_after) >=
					       UOB_HOT_KEPT ? "**" : "", uob_median(&c[rem].hot_after),
					       uob_median(&c[rem].hot_after) >= UOB_HOT_KEPT ? "**" : "");
			}
			uob_md(" %.2f | %.1f%% | %.1f%% | %.0f | %.0f |\n",
			       ratio(&c[REM_USEONCE].mbps, &c[REM_NONE].mbps),
			       uob_median(&c[REM_USEONCE].src_res), uob_median(&c[REM_USEONCE].dst_res),
			       uob_median(&c[REM_NONE].dirty_wb), uob_median(&c[REM_USEONCE].dirty_wb));
		}
	uob_md("\nBold: at least %.0f%%, the target.\n", UOB_HOT_KEPT);

	for (k = 0; k < TREE_COPIED; k++) {
		if (!B.run_tree[k])
			continue;
		uob_md("\n### %s: %u %s, %.0f MiB\n\n| copier | remedy | hot set after | MB/s (copy + sync) "
		       "| source resident after | copy resident after | peak dirty+wb MiB |\n"
		       "|---|---|---|---|---|---|---|\n", trees[k].key, B.files[k], trees[k].label,
		       uot_mib(B.bytes[k]));
		for (ci = 0; ci < NCOPIERS; ci++)
			for (rem = 0; B.run_copier[ci] && rem < REM_N; rem++) {
				const struct cell *c = &B.cells[k][ci][rem];
				char a[64], b[64], d[64], e[64], f[64];

				if (!B.have[rem])
					continue;
				if (c->error[0]) {
					uob_md("| %s | %s | FAILED: %s | | | | |\n", copiers[ci].label,
					       remedy_name[rem], c->error);
					continue;
				}
				uob_md("| %s | %s | %s%% | %s | %s%% | %s%% | %s |\n", copiers[ci].label,
				       remedy_name[rem], uob_fmt(a, sizeof(a), &c->hot_after, "%.1f"),
				       uob_fmt(b, sizeof(b), &c->mbps, "%.1f"),
				       uob_fmt(d, sizeof(d), &c->src_res, "%.1f"),
				       uob_fmt(e, sizeof(e), &c->dst_res, "%.1f"),
				       uob_fmt(f, sizeof(f), &c->dirty_wb, "%.0f"));
			}
	}

	uob_md("\n### `tar x` then `grep -r` over what was unpacked (no sync)\n\n"
	       "| tree | files | MiB | none s | libuseonce s | libuseonce / none | hot after: none "
	       "| libuseonce |\n|---|---|---|---|---|---|---|---|\n");
	for (k = 0; k < TREE_N; k++) {
		const struct grep_cell *g = B.grep[k];
		char a[64], b[64];

		if (!B.run_tree[k])
			continue;
		if (g[REM_NONE].error[0] || g[REM_USEONCE].error[0]) {
			uob_md("| %s | %u | %.0f | FAILED: %s%s | | | | |\n", trees[k].key, B.files[k],
			       uot_mib(B.bytes[k]), g[REM_NONE].error, g[REM_USEONCE].error);
			continue;
		}
		uob_md("| %s | %u | %.0f | %s | %s | %.2f | %.1f%% | %.1f%% |\n", trees[k].key,
		       B.files[k], uot_mib(B.bytes[k]), uob_fmt(a, sizeof(a), &g[REM_NONE].secs, "%.2f"),
		       uob_fmt(b, sizeof(b), &g[REM_USEONCE].secs, "%.2f"),
		       ratio(&g[REM_USEONCE].secs, &g[REM_NONE].secs),
		       uob_median(&g[REM_NONE].hot_after), uob_median(&g[REM_USEONCE].hot_after));
	}
}

/* A comma-separated list from the environment: which keys run (all if unset). */
static void pick(const char *var, bool *run, unsigned n, const char *(*key)(unsigned))
{
	const char *list = getenv(var);
	unsigned i;

	for (i = 0; i < n; i++) {
		size_t len = strlen(key(i));
		const char *p = list;

		run[i] = !list || !*list;
		while (p && *p && !run[i]) {
			if (!strncmp(p, key(i), len) && (p[len] == ',' || !p[len]))
				run[i] = true;
			p = strchr(p, ',');
			p = p ? p + 1 : NULL;
		}
	}
}

static const char *tree_key(unsigned i)
{
	return trees[i].key;
}

static const char *remedy_key(unsigned i)
{
	return remedy_name[i];
}

static const char *copier_key(unsigned i)
{
	return copiers[i].key;
}

int main(void)
{
	uint64_t need;
	struct statvfs sv;
	unsigned rep, ci, j;
	int k, rem;

	uob_init("trees", "trees.md");
	B.limit = uob_env("UO_BENCH_LIMIT_MIB", 256, 48, 32) * UOT_MIB;
	B.repeats = (unsigned)uob_env("UO_BENCH_REPEATS", 3, 1, 1);
	if (B.repeats > UOB_MAX_REPEATS)
		B.repeats = UOB_MAX_REPEATS;
	B.tree_size = uob_env("UO_BENCH_TREE_MIB", 1000, 40, 4) * UOT_MIB;
	B.hot_size = (B.limit / 3) & ~(UOT_MIB - 1);
	pick("UO_BENCH_TREES", B.run_tree, TREE_N, tree_key);
	pick("UO_BENCH_COPIERS", B.run_copier, NCOPIERS, copier_key);

	uob_md("## 6. Trees of files: copying a directory\n");
	if (uot_cgroup_supported() != 0) {
		uob_md("\nSkipped: %s.  This part needs root and a cgroup v1 memory controller.\n",
		       uot_why());
		return uob_finish(0);
	}
	pick("UO_BENCH_REMEDIES", B.have, REM_N, remedy_key);
	snprintf(B.nocache, sizeof(B.nocache), "%s", getenv("UO_BENCH_BEFORE") ?
		 getenv("UO_BENCH_BEFORE") : "/usr/lib/nocache/nocache.so");
	if (getenv("UO_BENCH_BEFORE")) {
		B.before = true;
		remedy_name[REM_NOCACHE] = "before";
	}
	B.have[REM_NOCACHE] = B.have[REM_NOCACHE] && access(B.nocache, R_OK) == 0;
	if (uot_sh("command -v rsync >/dev/null && command -v zstd >/dev/null") != 0)
		uob_md("\nrsync or zstd is missing: their cases fail.\n");
	if (uot_scratch_create() != 0)
		bench_fail("no place for the files");
	need = 5 * B.tree_size + 2 * B.limit + 512 * UOT_MIB;
	if (statvfs(uot_scratch(), &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < need) {
		fprintf(stderr, "%s: %s has too little room: %.0f MiB needed\n", uob_prog,
			uot_scratch(), uot_mib(need));
		bench_cleanup();
		return uob_finish(1);
	}
	uot_scratch_path(B.hot, sizeof(B.hot), "hot");
	uot_scratch_path(B.dst, sizeof(B.dst), "out");
	if (uot_cgroup_create(&B.cg, B.limit) != 0)
		bench_fail("making the memory cgroup");

	uob_md("\nA memory cgroup of %.0f MiB is the machine.  A hot file of %.0f MiB is mapped and "
	       "touched once inside it, then a tree is copied inside it, the copy followed by "
	       "`sync -f` (timed with it).  %u repeat%s; medians (min..max).  MB/s: 10^6 bytes of "
	       "the tree per second of copy + sync.  Resident after: %% of the source's (for "
	       "`tar x`, the archive's) and the copy's bytes in the page cache once it is done.%s\n",
	       uot_mib(B.limit), uot_mib(B.hot_size), B.repeats, B.repeats > 1 ? "s" : "",
	       B.have[REM_NOCACHE] ? "" : "  No nocache rows (not installed, or not asked for).");
	uob_say("  making the hot file and the trees in %s ...\n", uot_scratch());
	uot_scratch_path(B.run_dir, sizeof(B.run_dir), "run");
	if (mkdir(B.run_dir, 0700) != 0)
		bench_fail("making the private runtime directory");
	if (uot_make_file(B.hot, B.hot_size, 31) != 0)
		bench_fail("making the hot file");
	for (k = 0; k < TREE_N; k++) {
		char name[64];

		snprintf(name, sizeof(name), "tree-%s", trees[k].key);
		uot_scratch_path(B.src[k], sizeof(B.src[k]), name);
		snprintf(name, sizeof(name), "tree-%s.tar", trees[k].key);
		uot_scratch_path(B.tar[k], sizeof(B.tar[k]), name);
		if (B.run_tree[k])
			make_tree(k);
	}

	for (rep = 0; rep < B.repeats; rep++) {
		uob_say("  repeat %u/%u\n", rep + 1, B.repeats);
		for (k = 0; k < TREE_N; k++) {
			if (!B.run_tree[k])
				continue;
			/* The remedies take turns going first: odd repeats run them backwards. */
			for (ci = 0; k < TREE_COPIED && ci < NCOPIERS; ci++)
				for (j = 0; B.run_copier[ci] && j < REM_N; j++) {
					rem = rep % 2 ? REM_N - 1 - j : j;
					if (B.have[rem])
						run_case(k, ci, rem);
				}
			for (j = 0; j < REM_N; j++) {
				rem = rep % 2 ? REM_N - 1 - j : j;
				if (rem != REM_NOCACHE && B.have[rem])
					run_grep(k, rem);
			}
		}
	}
	uot_scratch_rm(B.dst);
	tables();
	bench_cleanup();
	if (B.failures)
		fprintf(stderr, "%s: %u run%s failed; see the tables\n", uob_prog, B.failures,
			B.failures > 1 ? "s" : "");
	return uob_finish(B.failures ? 1 : 0);
}
