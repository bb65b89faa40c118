/*
 * The useonce command with the library's config files, statistics and dry
 * run, end to end: what the command's options turn into, seen in what the
 * library then does to a real file's page cache.  check_cli tests what the
 * command sets, check_config what the library makes of the variables; this
 * checks that the two agree.
 *
 *   stats	-s prints one "useonce: stats: cat[" line on stderr, its read
 *		bytes the file's size; -s/abs and --stats=rel append it to a file
 *		instead (the relative one made absolute by the command); the
 *		line's fields are those libuseonce(7) and the README show
 *   dryrun	-N -t 8M: the file stays cached, the line says dry run and
 *		what would have been dropped
 *   config	-c: [program cat] enable = no, a never rule, an always rule
 *		with enable = no, against a plain run that drops
 *   precedence	system file < -c file < USEONCE_THRESHOLD < -t, each level
 *		seen where the trace says the stream was recognised
 *
 * The system file is tested with build/test-sysconf/libuseonce.so, which
 * reads it from build/test-etc (tests never write /etc), given to the
 * command in LD_PRELOAD: the command keeps a libuseonce already there.
 * Environment: UO_BUILD (default build), UO_SRCDIR (default .).
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define E2E_MIB		64
#define E2E_SIZE	((uint64_t)E2E_MIB << 20)
/* DAMON may take a page or two of a file nobody touched for a while. */
#define E2E_SLACK	(2 * UOT_MIB)
/* A guarded cat keeps a window or two; an unguarded one all of it. */
#define E2E_DROPPED_MAX	(24 * UOT_MIB)

static struct {
	char dir[PATH_MAX / 2];	/* the data's directory, links resolved */
	char data[PATH_MAX];
	char conf[PATH_MAX];
	char err[PATH_MAX];
	char trace[PATH_MAX];
	char home[PATH_MAX];
	char syslib[PATH_MAX];
	char sysfile[PATH_MAX];
	bool sys_made;
} e;

static void write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t len = strlen(text);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	ck_assert_int_eq(close(fd), 0);
}

static size_t slurp(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	while (fd >= 0 && len + 1 < size && (n = read(fd, out + len, size - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	if (fd >= 0)
		close(fd);
	return len;
}

static unsigned count(const char *text, const char *what)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/*
 * Runs argv (argv[0] "useonce": the build's command) in the data's
 * directory, stdout to /dev/null, stderr to e.err, with our environment less
 * LD_PRELOAD and USEONCE_*, HOME an empty directory (no user file), then
 * 'env' (NAME=VALUE).  Returns the wait status.
 */
static int run(const char *const *argv, const char *const *env)
{
	static const char *const drop[] = { "LD_PRELOAD=", "USEONCE_", "HOME=",
					    "XDG_CONFIG_HOME=", NULL };
	char home[PATH_MAX + 8];
	const char *args[32], *envp[64];
	/* Not a file: cat's output would be a write stream of its own. */
	struct uot_cmd c = { .argv = args, .drop = drop, .env = envp, .cwd = e.dir,
			     .out = "/dev/null", .err = e.err, .timeout_s = 120 };
	struct uot_result r;
	size_t n = 0;

	for (n = 0; argv[n] && n < 31; n++)
		args[n] = n || strcmp(argv[0], "useonce") ? argv[n] : uot_useonce();
	args[n] = NULL;
	n = 0;
	snprintf(home, sizeof(home), "HOME=%s", e.home);
	envp[n++] = home;
	/* The same files are streamed again and again: no record of recent streams. */
	envp[n++] = "USEONCE_REUSE=0";
	for (; env && *env && n < 63; env++)
		envp[n++] = *env;
	envp[n] = NULL;
	ck_assert_msg(uot_run(&c, &r) == 0, "%s", uot_why());
	ck_assert_msg(uot_exited_ok(r.status), "%s %s: %s", argv[0], argv[1],
		      uot_status_str(r.status));
	return r.status;
}

static void make_cold(void)
{
	ck_assert_msg(uot_make_cold(e.data) == 0, "%s", uot_why());
	ck_assert_int_le(uot_resident(e.data, NULL), (int64_t)E2E_SLACK);
}

static uint64_t resident(void)
{
	int64_t r = uot_resident(e.data, NULL);

	ck_assert_msg(r >= 0, "%s", uot_why());
	return (uint64_t)r;
}

/* The file was read whole and left cached (but for what DAMON may take). */
static void assert_cached(const char *how)
{
	uint64_t r = resident();

	ck_assert_msg(r + E2E_SLACK >= E2E_SIZE, "%s: only %.1f of %d MiB cached", how,
		      uot_mib(r), E2E_MIB);
}

static void assert_dropped(const char *how)
{
	uint64_t r = resident();

	ck_assert_msg(r <= E2E_DROPPED_MAX, "%s: %.1f of %d MiB still cached", how, uot_mib(r),
		      E2E_MIB);
}

/* The one stats line of text, which must have exactly one, copied to 'line'. */
static void stats_line(const char *text, char *line, size_t size)
{
	const char *p = strstr(text, "useonce: stats: cat[");

	ck_assert_msg(p, "no stats line for cat in: %s", text);
	ck_assert_msg(count(text, "useonce: stats:") == 1, "not one stats line: %s", text);
	snprintf(line, size, "%.*s", (int)strcspn(p, "\n"), p);
}

/* ---- stats ---- */

/*
 * Each "; "-separated field's words ("streams ", "read "...) of a real
 * stats line are found, in order, in the documented example of 'rel'
 * (after 'from'): the docs show the line the library writes.
 */
static void assert_documented(const char *line, const char *rel, const char *from)
{
	static char doc[128 * 1024];
	char path[PATH_MAX], label[64];
	const char *src = getenv("UO_SRCDIR"), *at, *p = strstr(line, "]: ");

	snprintf(path, sizeof(path), "%s/%s", src && *src ? src : ".", rel);
	slurp(path, doc, sizeof(doc));
	at = strstr(doc, from);
	ck_assert_msg(at, "%s: no %s", path, from);
	ck_assert_msg(p, "%s", line);
	for (p += 3; *p; ) {
		size_t n = strcspn(p, "0123456789");

		snprintf(label, sizeof(label), "%.*s", (int)n, p);
		at = strstr(at, label);
		ck_assert_msg(at, "%s does not show \"%s\" where the stats line has it: %s",
			      rel, label, line);
		at += n;
		p = strstr(p, "; ");
		if (!p)
			break;
		p += 2;
	}
}

START_TEST(test_stats_stderr)
{
	const char *argv[] = { "useonce", "-s", "cat", e.data, NULL };
	char text[8192], line[1024];

	if (uot_skipped("stats_stderr"))
		return;
	make_cold();
	run(argv, NULL);
	slurp(e.err, text, sizeof(text));
	stats_line(text, line, sizeof(line));
	/* Binary units, one decimal: the file's 64 MiB, all of them counted. */
	ck_assert_msg(strstr(line, "streams 1 (read 1, write 0); read 64.0 MiB; written 0 B;"),
		      "%s", line);
	ck_assert_msg(!strstr(line, "dry run"), "%s", line);
	ck_assert_msg(strstr(line, "; dropped ") && !strstr(line, "; dropped 0 B"), "%s", line);
	ck_assert_uint_eq(count(text, "\n"), 1);
	assert_dropped("-s");
	assert_documented(line, "preload/libuseonce.7", ".SH STATISTICS");
	assert_documented(line, "README.md", "## Using it");
	printf("cli_e2e: %s\n", line);
}
END_TEST

START_TEST(test_stats_file)
{
	char abs_opt[PATH_MAX + 24], path[PATH_MAX + 16], text[8192], line[1024];
	const char *argv_abs[] = { "useonce", abs_opt, "cat", e.data, NULL };
	const char *argv_rel[] = { "useonce", "--stats=stats.rel", "cat", e.data, NULL };

	if (uot_skipped("stats_file"))
		return;
	uot_scratch_path(path, sizeof(path), "stats.abs");
	unlink(path);
	snprintf(abs_opt, sizeof(abs_opt), "-s%s", path);
	make_cold();
	run(argv_abs, NULL);
	slurp(e.err, text, sizeof(text));
	ck_assert_msg(!text[0], "stderr not empty: %s", text);
	slurp(path, text, sizeof(text));
	stats_line(text, line, sizeof(line));
	ck_assert_msg(strstr(line, "; read 64.0 MiB;"), "%s", line);
	/* Appended, not replaced: a second run adds a line. */
	run(argv_abs, NULL);
	slurp(path, text, sizeof(text));
	ck_assert_uint_eq(count(text, "useonce: stats: cat["), 2);
	unlink(path);

	/* Relative: the command makes it absolute (cat runs in e.dir, as we do). */
	snprintf(path, sizeof(path), "%s/stats.rel", e.dir);
	unlink(path);
	make_cold();
	run(argv_rel, NULL);
	slurp(e.err, text, sizeof(text));
	ck_assert_msg(!text[0], "stderr not empty: %s", text);
	slurp(path, text, sizeof(text));
	stats_line(text, line, sizeof(line));
	ck_assert_msg(strstr(line, "; read 64.0 MiB;"), "%s", line);
	unlink(path);
}
END_TEST

/* ---- dry run ---- */

START_TEST(test_dryrun)
{
	const char *argv[] = { "useonce", "-N", "-t", "8M", "cat", e.data, NULL };
	char text[8192], line[1024];
	double mib;
	const char *p;

	if (uot_skipped("dryrun"))
		return;
	make_cold();
	run(argv, NULL);
	assert_cached("-N");
	slurp(e.err, text, sizeof(text));
	stats_line(text, line, sizeof(line));
	ck_assert_msg(strstr(line, "] (dry run, nothing was dropped): streams 1 "), "%s", line);
	/* What would have gone: most of the file, not nothing. */
	p = strstr(line, "; dropped ");
	ck_assert_msg(p && sscanf(p, "; dropped %lf MiB", &mib) == 1, "%s", line);
	ck_assert_msg(mib >= E2E_MIB - 24 && mib <= E2E_MIB, "%s", line);
	printf("cli_e2e: %s\n", line);
}
END_TEST

/* ---- config ---- */

/* cat of the data under -c CONF (NULL: no -c), traced; the trace read into text. */
static void traced_cat(const char *conf, char *text, size_t size)
{
	char trace_opt[PATH_MAX + 16];
	const char *argv_conf[] = { "useonce", "-c", e.conf, "-T", trace_opt, "cat", e.data, NULL };
	const char *argv_plain[] = { "useonce", "-T", trace_opt, "cat", e.data, NULL };

	snprintf(trace_opt, sizeof(trace_opt), "%s", e.trace);
	unlink(e.trace);
	if (conf)
		write_text(e.conf, conf, 0644);
	make_cold();
	run(conf ? argv_conf : argv_plain, NULL);
	slurp(e.trace, text, size);
	slurp(e.err, text + strlen(text), size - strlen(text));
}

START_TEST(test_config)
{
	char conf[PATH_MAX + 128], text[65536];

	if (uot_skipped("config"))
		return;
	/* The control: without a config, cat's stream is dropped. */
	traced_cat(NULL, text, sizeof(text));
	ck_assert_msg(strstr(text, ": drop "), "no drop traced: %s", text);
	assert_dropped("no config");

	traced_cat("# cat is left alone\n[program cat]\nenable = no\n", text, sizeof(text));
	ck_assert_msg(!strstr(text, ": drop "), "dropped: %s", text);
	ck_assert_msg(!strstr(text, "useonce: "), "a warning: %s", text);
	assert_cached("[program cat] enable = no");

	snprintf(conf, sizeof(conf), "never = %s\n", e.dir);
	traced_cat(conf, text, sizeof(text));
	ck_assert_msg(!strstr(text, ": drop "), "dropped: %s", text);
	ck_assert_msg(strstr(text, "ignored: under a never rule of the config"), "%s", text);
	assert_cached("never = DIR");

	snprintf(conf, sizeof(conf), "enable = no\nalways = %s\n", e.dir);
	traced_cat(conf, text, sizeof(text));
	ck_assert_msg(strstr(text, ": drop "), "no drop traced: %s", text);
	assert_dropped("always = DIR, enable = no");
	printf("cli_e2e: config: enable = no, never, always as documented\n");
}
END_TEST

/* ---- precedence ---- */

/* Where the trace says cat's read stream was recognised; 0 if it was not. */
static uint64_t stream_at(const char *const *argv, const char *const *env)
{
	char text[65536];
	unsigned long long at;
	const char *p;

	unlink(e.trace);
	run(argv, env);
	slurp(e.trace, text, sizeof(text));
	p = strstr(text, "read stream from 0, now at ");
	if (!p || sscanf(p, "read stream from 0, now at %llu", &at) != 1)
		return 0;
	return at;
}

START_TEST(test_precedence)
{
	char preload[PATH_MAX + 16], err[4096];
	const char *lib_env[] = { preload, NULL };
	const char *env_env[] = { preload, "USEONCE_THRESHOLD=14M", NULL };
	const char *argv_sys[] = { "useonce", "-T", e.trace, "cat", e.data, NULL };
	const char *argv_user[] = { "useonce", "-c", e.conf, "-T", e.trace, "cat", e.data, NULL };
	const char *argv_cli[] = { "useonce", "-c", e.conf, "-t", "18M", "-T", e.trace,
				   "cat", e.data, NULL };

	if (uot_skipped("precedence"))
		return;
	/* The library reads a system file only if it is root's: the test writes it. */
	if (!uot_is_root()) {
		printf("cli_e2e: precedence skipped: not root: the test's system file would not "
		       "be root's\n");
		return;
	}
	if (access(e.syslib, R_OK) != 0) {
		printf("cli_e2e: precedence skipped: no %s (make tests builds it)\n", e.syslib);
		return;
	}
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", e.syslib);
	/* The window is counted 2 MiB at a time: a stream is seen at its threshold exactly. */
	e.sys_made = true;
	write_text(e.sysfile, "window = 2M\nthreshold = 6M\n", 0644);
	write_text(e.conf, "threshold = 10M\n", 0644);
	ck_assert_uint_eq(stream_at(argv_sys, lib_env), 6 * UOT_MIB);
	ck_assert_uint_eq(stream_at(argv_user, lib_env), 10 * UOT_MIB);
	ck_assert_uint_eq(stream_at(argv_user, env_env), 14 * UOT_MIB);
	ck_assert_uint_eq(stream_at(argv_cli, env_env), 18 * UOT_MIB);
	/* The build's own library reads /etc, not the test's file: the default 32M. */
	ck_assert_uint_eq(stream_at(argv_sys, NULL), 32 * UOT_MIB);
	/* Not a word on stderr in all this. */
	slurp(e.err, err, sizeof(err));
	ck_assert_msg(!err[0], "%s", err);
	unlink(e.sysfile);
	e.sys_made = false;
	printf("cli_e2e: precedence: system 6M < -c 10M < USEONCE_THRESHOLD 14M < -t 18M\n");
}
END_TEST

/* ---- fixtures ---- */

/* The system file sits in the build directory, outside the scratch one. */
static void cleanup(void)
{
	if (e.sysfile[0])
		unlink(e.sysfile);
}

static void prepare(void)
{
	char path[PATH_MAX], real[PATH_MAX];

	snprintf(e.syslib, sizeof(e.syslib), "%s/test-sysconf/libuseonce.so", uot_build_dir());
	if (access(uot_useonce(), X_OK) != 0 || access(uot_library(), R_OK) != 0) {
		uot_skip("no %s or %s (make builds them)", uot_useonce(), uot_library());
		return;
	}
	if (!uot_need_scratch())
		return;
	/* Rules match the path the kernel gives for a descriptor: links resolved. */
	if (!realpath(uot_scratch(), real) || strlen(real) >= sizeof(e.dir)) {
		uot_skip("realpath %s: %s", uot_scratch(), strerror(errno));
		return;
	}
	memcpy(e.dir, real, strlen(real) + 1);
	snprintf(e.data, sizeof(e.data), "%s/data", e.dir);
	snprintf(e.conf, sizeof(e.conf), "%s/user.conf", e.dir);
	snprintf(e.err, sizeof(e.err), "%s/err", e.dir);
	snprintf(e.trace, sizeof(e.trace), "%s/trace", e.dir);
	snprintf(e.home, sizeof(e.home), "%s/home", e.dir);
	snprintf(path, sizeof(path), "%s/test-etc", uot_build_dir());
	if (mkdir(e.home, 0755) != 0 || (mkdir(path, 0755) != 0 && errno != EEXIST)) {
		uot_skip("mkdir: %s", strerror(errno));
		return;
	}
	/* Not ours to remove if it is there already (check_config's, say). */
	uot_sfmt(e.sysfile, sizeof(e.sysfile), "%s/useonce.conf", path);
	if (access(e.sysfile, F_OK) == 0) {
		uot_skip("%s exists already", e.sysfile);
		e.sysfile[0] = '\0';
		return;
	}
	if (uot_make_file(e.data, E2E_SIZE, 61) != 0)
		uot_skip("%s", uot_why());
}

int main(void)
{
	Suite *s = suite_create("cli_e2e");
	TCase *tc;

	uot_suite_begin("cli_e2e", cleanup);
	prepare();
	tc = tcase_create("stats");
	tcase_add_test(tc, test_stats_stderr);
	tcase_add_test(tc, test_stats_file);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("dryrun");
	tcase_add_test(tc, test_dryrun);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("config");
	tcase_add_test(tc, test_config);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("precedence");
	tcase_add_test(tc, test_precedence);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
