/*
 * The whole-session test: a battery of everyday programs (tests/session-
 * battery.sh: shell, cc, Python, tar/gzip/zstd, rsync, a big sort, sqlite,
 * find/xargs, git, a configure-like script) run without libuseonce, then
 * with it, and everything compared: each step's exit status, its stdout and
 * stderr (the battery keeps them as files), and every file it left behind,
 * byte for byte, with the same type, size and permissions.
 *
 *   programs	every program the battery runs is dynamically linked and not
 *		setuid: otherwise the library is not loaded into it and the
 *		comparison proves nothing about it.
 *   lowered	USEONCE_THRESHOLD and USEONCE_WINDOW of 2M, so that streams
 *		occur on this modest data; the trace must show them.
 *   defaults	the built-in tuning, as a session would run it.
 *
 * Each run gets a fresh directory, always at the same path (renamed after
 * the run), so nothing written depends on where it ran.  The reference run
 * is made once by the parent (an unchecked fixture); everything is removed
 * at exit and on a signal.
 *
 * Environment: UO_BUILD (default build), UO_SRCDIR (default .); the
 * battery's own BATTERY_LINES passes through.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define TEST_TIMEOUT	300
#define MAX_STEPS	32
#define MAX_SHOWN	12	/* differences listed in a failure message */
/*
 * Streams seen with 2M thresholds in the steps of the battery, from the
 * runs that made this test: 10 of 11 steps had at least one.  Far fewer
 * means the library was not loaded or the thresholds not taken.
 */
#define LOWERED_MIN_STEPS	6
#define DEFAULTS_MIN_STEPS	1

/* The programs the battery runs (sh runs the rest); cc's own are added. */
static const char *const session_programs[] = {
	"sh", "cat", "cp", "dd", "cmp", "sha256sum", "md5sum", "od", "tr", "grep", "cut",
	"sort", "uniq", "head", "tail", "wc", "ls", "mkdir", "rm", "sed", "expr",
	"basename", "dirname", "date", "awk", "diff", "cc", "tar", "gzip", "zstd", "rsync",
	"sqlite3", "find", "xargs", "git", "python3",
};
static const char *const cc_programs[] = { "cc1", "as", "ld", "collect2" };

static struct {
	char why[600];		/* non-empty: the reference run is missing, and why */
	char ref[PATH_MAX];	/* the reference run's directory */
	double ref_secs;
} sess;

/* ---- running the battery ---- */

/*
 * Runs the battery into scratch/NAME; its trace, if preloaded, goes to
 * scratch/NAME.trace/STEP.trace.  0 if it ran (whatever its steps did).
 */
static int sess_battery(const char *name, bool preload, const char *const *extra, char *dir,
			size_t size, double *secs, char *why, size_t why_size)
{
	char script[PATH_MAX], gen[PATH_MAX], run[PATH_MAX], out[PATH_MAX];
	char trace[PATH_MAX], e_trace[PATH_MAX + 32], runtime[PATH_MAX], e_runtime[PATH_MAX + 32];
	const char *argv[] = { "/bin/sh", script, run, uot_srcdir(), gen, NULL };
	const char *env[8];
	struct uot_cmd c;
	struct uot_result r;
	size_t n = 0;

	uot_sfmt(script, sizeof(script), "%s/tests/session-battery.sh", uot_srcdir());
	uot_sfmt(gen, sizeof(gen), "%s/tests/session_gen", uot_build_dir());
	uot_scratch_path(run, sizeof(run), "run");
	uot_scratch_path(dir, size, name);
	uot_sfmt(out, sizeof(out), "%s.stdout", dir);
	uot_sfmt(trace, sizeof(trace), "%s.trace", dir);
	uot_scratch_rm(run);
	uot_scratch_rm(dir);
	uot_scratch_rm(trace);
	/*
	 * A session's runtime directory, as a desktop session has, private and
	 * outside what the runs leave behind: the library keeps its per-user
	 * record there.  Without one it would make useonce-UID in $TMPDIR
	 * (README), which the battery points into its work tree and lists.
	 */
	uot_scratch_path(runtime, sizeof(runtime), "runtime");
	if (mkdir(runtime, 0700) != 0 && errno != EEXIST) {
		uot_sfmt(why, why_size, "cannot create %s: %s", runtime, strerror(errno));
		return -1;
	}
	env[n++] = uot_sfmt(e_runtime, sizeof(e_runtime), "XDG_RUNTIME_DIR=%s", runtime);
	if (preload) {
		if (mkdir(trace, 0755) != 0) {
			uot_sfmt(why, why_size, "cannot create %s: %s", trace, strerror(errno));
			return -1;
		}
		env[n++] = uot_sfmt(e_trace, sizeof(e_trace), "BATTERY_TRACE_DIR=%s", trace);
	}
	while (extra && *extra && n < sizeof(env) / sizeof(env[0]) - 1)
		env[n++] = *extra++;
	env[n] = NULL;

	memset(&c, 0, sizeof(c));
	c.argv = argv;
	c.preload = preload;
	c.env = env;
	c.out = out;
	c.timeout_s = TEST_TIMEOUT - 30;
	printf("session: %s: running the battery %s libuseonce\n", name,
	       preload ? "with" : "without");
	fflush(stdout);
	if (uot_run(&c, &r) != 0) {
		uot_sfmt(why, why_size, "the battery (%s) did not run: %s", name, uot_why());
		return -1;
	}
	*secs = r.secs;
	if (!uot_exited_ok(r.status)) {
		uot_sfmt(why, why_size, "the battery (%s) itself failed: %s", name,
			 uot_status_str(r.status));
		return -1;
	}
	if (rename(run, dir) != 0) {
		uot_sfmt(why, why_size, "cannot rename %s to %s: %s", run, dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- what a run left ---- */

struct sess_steps {
	char name[MAX_STEPS][32];
	int status[MAX_STEPS];
	int n;
};

static int sess_read_steps(const char *dir, struct sess_steps *st)
{
	char path[PATH_MAX + 16], line[128];
	FILE *f;

	memset(st, 0, sizeof(*st));
	f = fopen(uot_sfmt(path, sizeof(path), "%s/log/status", dir), "r");
	if (!f)
		return -1;
	while (st->n < MAX_STEPS && fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %d", st->name[st->n], &st->status[st->n]) == 2)
			st->n++;
	fclose(f);
	return 0;
}

/*
 * Files that differ between two runs of the same commands without the
 * library too: git's index records each file's inode and change time.
 * What it describes is compared through `git status` and the repository.
 */
static bool sess_excluded(const char *rel)
{
	size_t n = strlen(rel);

	return n >= 11 && !strcmp(rel + n - 11, "/.git/index");
}

/* nftw has no argument for the callback: the comparison under way. */
static struct {
	const char *a, *b;	/* the two runs, the walk is over 'a' */
	const char *a_name, *b_name;
	bool contents;		/* false: only whether each entry exists in b */
	unsigned entries;
	unsigned diffs;
	char msg[4096];
} cmp;

__attribute__((format(printf, 1, 2)))
static void sess_diff(const char *fmt, ...)
{
	size_t len = strlen(cmp.msg);
	va_list ap;

	if (cmp.diffs++ >= MAX_SHOWN || len + 2 >= sizeof(cmp.msg))
		return;
	cmp.msg[len++] = '\n';
	cmp.msg[len++] = ' ';
	va_start(ap, fmt);
	vsnprintf(cmp.msg + len, sizeof(cmp.msg) - len, fmt, ap);
	va_end(ap);
}

static int sess_visit(const char *path, const struct stat *sa, int type, struct FTW *ftw)
{
	const char *rel = path + strlen(cmp.a);
	char other[PATH_MAX], la[PATH_MAX], lb[PATH_MAX];
	struct stat sb;
	ssize_t na, nb;

	(void)type;
	(void)ftw;
	if (!*rel || sess_excluded(rel))
		return 0;
	cmp.entries++;
	uot_sfmt(other, sizeof(other), "%s%s", cmp.b, rel);
	if (lstat(other, &sb) != 0) {
		sess_diff("%s: only in the run %s", rel + 1, cmp.a_name);
		return 0;
	}
	if (!cmp.contents)
		return 0;
	if ((sa->st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) {
		sess_diff("%s: a different kind of file", rel + 1);
	} else if ((sa->st_mode & 07777) != (sb.st_mode & 07777)) {
		sess_diff("%s: mode %o %s, %o %s", rel + 1, sa->st_mode & 07777, cmp.a_name,
			  sb.st_mode & 07777, cmp.b_name);
	} else if (S_ISREG(sa->st_mode)) {
		if (sa->st_size != sb.st_size)
			sess_diff("%s: %lld bytes %s, %lld %s", rel + 1, (long long)sa->st_size,
				  cmp.a_name, (long long)sb.st_size, cmp.b_name);
		else if (uot_files_equal(path, 0, other, 0, UINT64_MAX) != 1)
			sess_diff("%s: %s", rel + 1, strstr(uot_why(), " differ at ") ?
				  strstr(uot_why(), " differ at ") + 1 : uot_why());
	} else if (S_ISLNK(sa->st_mode)) {
		na = readlink(path, la, sizeof(la) - 1);
		nb = readlink(other, lb, sizeof(lb) - 1);
		if (na < 0 || nb < 0 || na != nb || memcmp(la, lb, (size_t)na) != 0)
			sess_diff("%s: links elsewhere", rel + 1);
	}
	return 0;
}

/* 0 if the two trees hold the same entries and bytes; the differences in cmp.msg. */
static unsigned sess_compare_trees(const char *ref, const char *run, const char *name,
				   unsigned *entries)
{
	memset(&cmp, 0, sizeof(cmp));
	cmp.a = ref;
	cmp.b = run;
	cmp.a_name = "without";
	cmp.b_name = name;
	cmp.contents = true;
	if (nftw(ref, sess_visit, 16, FTW_PHYS) != 0)
		sess_diff("cannot walk %s: %s", ref, strerror(errno));
	*entries = cmp.entries;
	cmp.a = run;
	cmp.b = ref;
	cmp.a_name = name;
	cmp.contents = false;
	if (nftw(run, sess_visit, 16, FTW_PHYS) != 0)
		sess_diff("cannot walk %s: %s", run, strerror(errno));
	return cmp.diffs;
}

struct sess_trace {
	unsigned streams;	/* read and write streams begun */
	unsigned drops;
	unsigned ignored;
	unsigned failed;	/* advice the kernel refused */
};

/* Why descriptors were ignored, over a whole run, for the log. */
#define MAX_REASONS	8
static struct {
	char why[MAX_REASONS][96];
	unsigned count[MAX_REASONS];
	unsigned n;
} reasons;

static void sess_note_reason(const char *why)
{
	char r[96];
	unsigned i;

	uot_sfmt(r, sizeof(r), "%.*s", (int)strcspn(why, "\n"), why);
	for (i = 0; i < reasons.n && strcmp(reasons.why[i], r); i++)
		;
	if (i == reasons.n) {
		if (reasons.n == MAX_REASONS)
			return;
		uot_sfmt(reasons.why[reasons.n++], sizeof(reasons.why[0]), "%s", r);
	}
	reasons.count[i]++;
}

static void sess_read_trace(const char *dir, const char *step, struct sess_trace *t)
{
	char path[PATH_MAX + 64], line[512];
	FILE *f;

	memset(t, 0, sizeof(*t));
	f = fopen(uot_sfmt(path, sizeof(path), "%s.trace/%s.trace", dir, step), "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		t->streams += strstr(line, " stream from ") != NULL;
		t->drops += strstr(line, ": drop ") != NULL;
		if (strstr(line, ": ignored: ")) {
			t->ignored++;
			sess_note_reason(strstr(line, ": ignored: ") + 11);
		}
		t->failed += strstr(line, ": failed") != NULL;
	}
	fclose(f);
}

/* The start of a small file, on one line, for a failure message. */
static void sess_head(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, size - 1) : -1;
	ssize_t i;

	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		uot_sfmt(out, size, "(empty)");
		return;
	}
	out[n] = '\0';
	for (i = 0; i < n; i++)
		if (out[i] == '\n')
			out[i] = i == n - 1 ? '\0' : '|';
}

/* ---- the tests ---- */

static void sess_reference(void)
{
	static const char *const env[] = { NULL };
	char why[sizeof(sess.why)];

	if (!uot_suite_owner() || sess.ref[0] || sess.why[0] || uot_skip_reason()[0])
		return;
	/* A build directory on tmpfs: nothing would become a stream there, so skip. */
	if (!uot_need_scratch())
		return;
	if (sess_battery("without", false, env, sess.ref, sizeof(sess.ref), &sess.ref_secs, why,
			 sizeof(why)) != 0) {
		uot_sfmt(sess.why, sizeof(sess.why), "%s", why);
		sess.ref[0] = '\0';
	}
}

static void sess_no_teardown(void)
{
}

/* Runs the battery under the library with 'env' and compares it with the reference. */
static void sess_check_run(const char *name, const char *const *env, unsigned min_steps)
{
	struct sess_steps ref, got;
	struct sess_trace t, all = { 0 };
	char dir[PATH_MAX], why[700], trace[PATH_MAX + 8];
	unsigned diffs, entries, streaming = 0;
	double secs;
	int i;

	if (uot_skipped(name))
		return;
	ck_assert_msg(!sess.why[0], "no reference run: %s", sess.why);
	ck_assert_msg(sess_read_steps(sess.ref, &ref) == 0 && ref.n > 0,
		      "the reference run left no log/status in %s", sess.ref);
	for (i = 0; i < ref.n; i++)
		ck_assert_msg(ref.status[i] == 0,
			      "step %s fails without the library (exit %d): the battery is broken "
			      "here; see %s/log/%s.err", ref.name[i], ref.status[i], sess.ref,
			      ref.name[i]);

	ck_assert_msg(sess_battery(name, true, env, dir, sizeof(dir), &secs, why,
				   sizeof(why)) == 0, "%s", why);
	ck_assert_msg(sess_read_steps(dir, &got) == 0, "the run %s left no log/status", name);

	for (i = 0; i < ref.n; i++) {
		sess_read_trace(dir, ref.name[i], &t);
		printf("session: %s: %-9s exit %d, %u streams, %u drops, %u ignored, "
		       "%u advice refused\n", name, ref.name[i],
		       i < got.n ? got.status[i] : -1, t.streams, t.drops, t.ignored, t.failed);
		streaming += t.streams > 0;
		all.streams += t.streams;
		all.drops += t.drops;
	}
	for (i = 0; i < (int)reasons.n; i++)
		printf("session: %s: ignored %u times: %s\n", name, reasons.count[i],
		       reasons.why[i]);
	diffs = sess_compare_trees(sess.ref, dir, name, &entries);
	printf("session: %s: %u entries compared, %u differ; %u streams in %u of %d steps, "
	       "%u drops; %.1f s (without: %.1f s)\n", name, entries, diffs, all.streams,
	       streaming, ref.n, all.drops, secs, sess.ref_secs);
	fflush(stdout);

	ck_assert_msg(got.n == ref.n, "the run %s has %d steps, the reference %d", name, got.n,
		      ref.n);
	for (i = 0; i < ref.n; i++) {
		char err[PATH_MAX + 64];

		ck_assert_str_eq(got.name[i], ref.name[i]);
		if (got.status[i] == ref.status[i])
			continue;
		uot_sfmt(err, sizeof(err), "%s/log/%s.err", dir, got.name[i]);
		sess_head(err, why, sizeof(why));
		ck_assert_msg(0, "step %s: exit %d with libuseonce (%s), %d without; its stderr: "
			      "%s; and %u entries differ:%s", got.name[i], got.status[i], name,
			      ref.status[i], why, diffs, cmp.msg);
	}
	ck_assert_msg(diffs == 0, "%u entries differ between the runs without and %s:%s",
		      diffs, name, cmp.msg);
	ck_assert_msg(entries > 500, "only %u entries compared: the battery made too little",
		      entries);
	ck_assert_msg(streaming >= min_steps,
		      "streams in %u steps, expected at least %u: was the library loaded, "
		      "its tuning taken?", streaming, min_steps);
	/* Passed: the next test needs the space more than anyone needs these. */
	uot_scratch_rm(dir);
	uot_scratch_rm(uot_sfmt(trace, sizeof(trace), "%s.trace", dir));
}

START_TEST(test_lowered)
{
	static const char *const env[] = {
		"USEONCE_THRESHOLD=2M", "USEONCE_WINDOW=2M", "USEONCE_REUSE=0", NULL
	};

	sess_check_run("lowered", env, LOWERED_MIN_STEPS);
}
END_TEST

START_TEST(test_defaults)
{
	/* The record of recent streams is check_reuse's, and lives in $XDG_RUNTIME_DIR. */
	static const char *const env[] = { "USEONCE_REUSE=0", NULL };

	sess_check_run("defaults", env, DEFAULTS_MIN_STEPS);
}
END_TEST

/* The absolute path of a program, as a shell would find it; "" if none. */
static void sess_which(const char *prog, char *out, size_t size)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	out[0] = '\0';
	/* The battery prefers the distribution's Python to a user's shim. */
	if (!strcmp(prog, "python3") && access("/usr/bin/python3", X_OK) == 0)
		path = "/usr/bin";
	if (strchr(prog, '/')) {
		if (access(prog, X_OK) == 0)
			uot_sfmt(out, size, "%s", prog);
		return;
	}
	while (path && *path) {
		size_t n = strcspn(path, ":");

		uot_sfmt(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
		if (n && access(buf, X_OK) == 0) {
			uot_sfmt(out, size, "%s", buf);
			return;
		}
		path += n + (path[n] == ':');
	}
}

/*
 * NULL if the loader would preload into the program, else why not: a
 * static binary has no program interpreter, a setuid one runs in secure
 * mode.  A script is judged by its interpreter.
 */
static const char *sess_unservable(const char *prog, int depth)
{
	static char why[PATH_MAX + 64];
	char real[PATH_MAX], head[256];
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	struct stat st;
	ssize_t n;
	int fd, i;

	if (!realpath(prog, real) || stat(real, &st) != 0)
		return uot_sfmt(why, sizeof(why), "cannot find %s", prog);
	if (st.st_mode & (S_ISUID | S_ISGID))
		return uot_sfmt(why, sizeof(why), "%s is setuid or setgid", real);
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return uot_sfmt(why, sizeof(why), "cannot read %s", real);
	n = pread(fd, head, sizeof(head) - 1, 0);
	if (n > 2 && head[0] == '#' && head[1] == '!' && depth < 3) {
		char interp[PATH_MAX];

		close(fd);
		head[n] = '\0';
		if (sscanf(head + 2, " %4095s", interp) != 1)
			return uot_sfmt(why, sizeof(why), "%s: a script without interpreter", real);
		return sess_unservable(interp, depth + 1);
	}
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return uot_sfmt(why, sizeof(why), "%s is not a 64-bit ELF program", real);
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP) {
			close(fd);
			return NULL;
		}
	}
	close(fd);
	return uot_sfmt(why, sizeof(why), "%s is statically linked", real);
}

START_TEST(test_programs)
{
	char path[PATH_MAX], cmd[256], msg[4096] = "";
	const char *why;
	unsigned checked = 0, bad = 0;
	size_t i;

	for (i = 0; i < sizeof(session_programs) / sizeof(session_programs[0]); i++) {
		sess_which(session_programs[i], path, sizeof(path));
		why = path[0] ? sess_unservable(path, 0) : "not installed (tests/install-deps.sh)";
		checked++;
		if (why) {
			bad++;
			uot_sfmt(msg + strlen(msg), sizeof(msg) - strlen(msg), "\n %s: %s",
				 session_programs[i], why);
		}
	}
	for (i = 0; i < sizeof(cc_programs) / sizeof(cc_programs[0]); i++) {
		FILE *p;

		uot_sfmt(cmd, sizeof(cmd), "cc -print-prog-name=%s 2>/dev/null", cc_programs[i]);
		p = popen(cmd, "r");
		if (!p || !fgets(path, sizeof(path), p))
			path[0] = '\0';
		if (p)
			pclose(p);
		path[strcspn(path, "\n")] = '\0';
		if (path[0] && !strchr(path, '/')) {
			char name[64];

			uot_sfmt(name, sizeof(name), "%s", path);
			sess_which(name, path, sizeof(path));
		}
		if (!path[0])
			continue;	/* cc does without it (collect2 with another linker) */
		checked++;
		why = sess_unservable(path, 0);
		if (why) {
			bad++;
			uot_sfmt(msg + strlen(msg), sizeof(msg) - strlen(msg), "\n %s: %s",
				 cc_programs[i], why);
		}
	}
	printf("session: programs: %u checked, %u the library cannot be preloaded into%s\n",
	       checked, bad, msg);
	ck_assert_msg(bad == 0, "the battery runs programs the library is not loaded into, so "
		      "comparing proves nothing for them:%s", msg);
}
END_TEST

static Suite *session_suite(void)
{
	Suite *s = suite_create("session");
	TCase *tc;

	tc = tcase_create("programs");
	tcase_add_test(tc, test_programs);
	suite_add_tcase(s, tc);

	tc = tcase_create("lowered");
	/* In the parent, once; both runs under the library compare with it. */
	tcase_add_unchecked_fixture(tc, sess_reference, sess_no_teardown);
	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_test(tc, test_lowered);
	suite_add_tcase(s, tc);

	tc = tcase_create("defaults");
	tcase_add_unchecked_fixture(tc, sess_reference, sess_no_teardown);
	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_test(tc, test_defaults);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	uot_suite_begin("session", NULL);
	return uot_check_run(session_suite(), false);
}
