/*
 * Settings reach the library: real programs under it, with the precedence
 * of the system file, the user's file and the environment, [program]
 * sections, never/always rules, statistics, dry run, and bad values in
 * every variable and every key (one warning each, the rest applies).  The
 * parser on its own is check_conffile's.
 *
 * The system file is tested with build/test-sysconf/libuseonce.so, built
 * (tests/tests.mk) to look for it in build/test-etc instead of /etc: the
 * tests never write /etc.  Each program runs with a clean environment: no
 * USEONCE_ variable but those of the case, HOME in the scratch directory,
 * no XDG_RUNTIME_DIR and USEONCE_REUSE=0 unless a case sets it (no record
 * of recent streams: without a runtime directory it lives under /tmp).
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
#include "policy.h"

/* Paths here are the scratch directory's plus a few bytes: far below PATH_MAX. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* ---- real programs under the library ---- */

#define DATA_MIB	16	/* streams once the threshold is a few MiB */
#define BIG_MIB		128	/* for statistics and dry run, cold */
#define BAD_MIB		40	/* bad input: a stream under the defaults */

static struct {
	char lib[PATH_MAX];
	char etc[PATH_MAX];
	char sysfile[PATH_MAX];
	char home[PATH_MAX];
	char userdir[PATH_MAX];
	char userfile[PATH_MAX];
	char dir_a[PATH_MAX];	/* data/a and data/b hold a DATA_MIB file each */
	char dir_b[PATH_MAX];
	char data_a[PATH_MAX];
	char data_b[PATH_MAX];
	char data_home[PATH_MAX];
	char big[PATH_MAX];
	char copy[PATH_MAX];
	char bad[PATH_MAX];
	char out[PATH_MAX];
	char err[PATH_MAX];
	char trace[PATH_MAX];
	char stats[PATH_MAX];
	char conf[PATH_MAX];
	const char *stdout_to;	/* NULL: out */
	bool sys_made;
} c;

static void write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_msg(fd >= 0, "cannot write %s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void set_files(const char *sys, const char *user)
{
	unlink(c.sysfile);
	unlink(c.userfile);
	if (sys) {
		write_text(c.sysfile, sys, 0644);
		c.sys_made = true;
	}
	if (user)
		write_text(c.userfile, user, 0644);
}

static size_t slurp(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, size - 1) : -1;

	out[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return n > 0 ? (size_t)n : 0;
}

/*
 * Runs argv with stdout to c.out and stderr to c.err, under the test
 * library (preload) or not, in a clean environment plus 'env'.  Returns
 * the wait status.
 */
static int run(const char *const *argv, bool preload, const char *const *env)
{
	static const char *const drop[] = { "USEONCE_", "LD_PRELOAD=", "XDG_RUNTIME_DIR=",
					    "XDG_CONFIG_HOME=", "HOME=", NULL };
	static char home_env[PATH_MAX + 8];
	const char *envp[64];
	struct uot_cmd cmd = { .argv = argv, .preload = preload, .library = c.lib, .drop = drop,
			       .env = envp, .out = c.stdout_to ? c.stdout_to : c.out,
			       .err = c.err, .timeout_s = 60 };
	struct uot_result r;
	size_t n = 0;

	snprintf(home_env, sizeof(home_env), "HOME=%s", c.home);
	envp[n++] = home_env;
	/* Before the case's own: a case's USEONCE_REUSE comes later and wins. */
	envp[n++] = "USEONCE_REUSE=0";
	for (; env && *env && n < 63; env++)
		envp[n++] = *env;
	envp[n] = NULL;
	ck_assert_msg(uot_run(&cmd, &r) == 0, "%s", uot_why());
	return r.status;
}

/*
 * The library reads a system file only if it is root's (a user's own could
 * be anyone's): the test writes it, so without root its cases cannot run.
 */
static bool system_file_here(const char *what)
{
	if (uot_is_root())
		return true;
	printf("config: %s: skipped: not root: the test's system file would not be root's\n",
	       what);
	return false;
}

/* Lines of c.err. */
static unsigned err_lines(char *text, size_t size)
{
	unsigned n = 0;
	size_t len = slurp(c.err, text, size), i;

	for (i = 0; i < len; i++)
		n += text[i] == '\n';
	return n;
}

/*
 * cat FILE under the library, traced: where the read stream was recognised
 * (its threshold: reads are counted a window of 2 MiB at a time), 0 if
 * there was none.
 */
static uint64_t stream_at(const char *file, const char *const *more)
{
	const char *argv[] = { "cat", file, NULL };
	char trace_env[PATH_MAX + 16], text[65536];
	const char *env[16] = { trace_env };
	unsigned long long at;
	const char *p;
	int i, status;

	snprintf(trace_env, sizeof(trace_env), "USEONCE_TRACE=%s", c.trace);
	for (i = 0; more && more[i] && i < 14; i++)
		env[i + 1] = more[i];
	unlink(c.trace);
	status = run(argv, true, env);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cat failed: %s",
		      uot_status_str(status));
	slurp(c.trace, text, sizeof(text));
	p = strstr(text, "read stream from 0, now at ");
	if (!p || sscanf(p, "read stream from 0, now at %llu", &at) != 1)
		return 0;
	return at;
}

#define MIB(x)	((uint64_t)(x) << 20)

START_TEST(test_precedence)
{
	char conf_env[PATH_MAX + 32];
	const char *env_thr[] = { "USEONCE_THRESHOLD=10M", NULL };
	const char *env_conf[] = { conf_env, NULL };
	const char *env_both[] = { conf_env, "USEONCE_THRESHOLD=12M", NULL };

	if (uot_skipped("precedence"))
		return;
	if (!system_file_here("precedence"))
		return;
	set_files(NULL, NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), 0);	/* 32M by default: no stream */
	set_files("window = 2M\nthreshold = 4M\n", NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(4));
	set_files("window = 2M\nthreshold = 4M\n", "threshold = 6M\n");
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(6));
	ck_assert_uint_eq(stream_at(c.data_a, env_thr), MIB(10));
	/* USEONCE_CONFIG replaces the user's file, not the system's. */
	snprintf(conf_env, sizeof(conf_env), "USEONCE_CONFIG=%s", c.conf);
	write_text(c.conf, "threshold = 8M\n", 0644);
	ck_assert_uint_eq(stream_at(c.data_a, env_conf), MIB(8));
	ck_assert_uint_eq(stream_at(c.data_a, env_both), MIB(12));
	/* XDG_CONFIG_HOME, when set, is where the user's file is. */
	{
		char xdg[PATH_MAX + 32], path[PATH_MAX + 32];
		const char *env_xdg[] = { xdg, NULL };

		snprintf(xdg, sizeof(xdg), "XDG_CONFIG_HOME=%s/xdg", c.home);
		snprintf(path, sizeof(path), "%s/xdg", c.home);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/xdg/useonce", c.home);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/xdg/useonce/config", c.home);
		write_text(path, "threshold = 14M\n", 0644);
		ck_assert_uint_eq(stream_at(c.data_a, env_xdg), MIB(14));
		unlink(path);
	}
	/* No warning anywhere in all this. */
	ck_assert_uint_eq(err_lines((char[4096]){ 0 }, 4096), 0);
	set_files(NULL, NULL);
}
END_TEST

START_TEST(test_programs)
{
	char text[1024], cat_path[PATH_MAX];
	FILE *w;

	if (uot_skipped("programs"))
		return;
	if (!system_file_here("programs"))
		return;
	set_files("window = 2M\nthreshold = 4M\n[program cat]\nthreshold = 6M\n"
		  "[program dd]\nthreshold = 12M\n", NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(6));
	/* The user's global line beats the system file's [program cat]. */
	set_files("window = 2M\nthreshold = 4M\n[program cat]\nthreshold = 6M\n",
		  "threshold = 10M\n");
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(10));
	set_files("window = 2M\nthreshold = 4M\n[program cat]\nthreshold = 6M\n",
		  "threshold = 10M\n[program cat]\nthreshold = 8M\n");
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(8));
	/* By absolute path: the executable, links resolved. */
	w = popen("readlink -f \"$(command -v cat)\"", "r");
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(fgets(cat_path, sizeof(cat_path), w));
	pclose(w);
	cat_path[strcspn(cat_path, "\n")] = '\0';
	snprintf(text, sizeof(text), "window = 2M\nthreshold = 4M\n[program %s]\nthreshold = 12M\n"
		 "[program /usr/bin/not-cat]\nthreshold = 6M\n", cat_path);
	set_files(text, NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(12));
	/* enable = no for this program only. */
	set_files("window = 2M\nthreshold = 4M\n[program cat]\nenable = no\n", NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), 0);
	set_files(NULL, NULL);
}
END_TEST

START_TEST(test_path_rules)
{
	char text[4096];
	const char *undisable[] = { "USEONCE_DISABLE=0", NULL };

	if (uot_skipped("path_rules"))
		return;
	if (!system_file_here("path_rules"))
		return;
	snprintf(text, sizeof(text), "window = 2M\nthreshold = 4M\nnever = %s\n", c.dir_a);
	set_files(text, NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), 0);
	slurp(c.trace, text, sizeof(text));
	ck_assert_msg(strstr(text, "never rule"), "no trace of the rule: %s", text);
	ck_assert_msg(uot_resident_pct(c.data_a) >= 90.0, "a file under never was dropped");
	ck_assert_uint_eq(stream_at(c.data_b, NULL), MIB(4));

	/* enable = no: only files under always. */
	snprintf(text, sizeof(text), "window = 2M\nthreshold = 4M\nenable = no\nalways = %s/\n",
		 c.dir_b);
	set_files(text, NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), 0);
	ck_assert_uint_eq(stream_at(c.data_b, NULL), MIB(4));
	ck_assert_msg(uot_resident_pct(c.data_b) < 50.0, "a file under always was not dropped");
	/* The environment turns it back on for every file. */
	ck_assert_uint_eq(stream_at(c.data_a, undisable), MIB(4));

	/* ~ is HOME; the longest rule wins; a user file adds to the system's. */
	snprintf(text, sizeof(text), "window = 2M\nthreshold = 4M\nalways = %s\n", c.home);
	set_files(text, "never = ~/stuff\n");
	ck_assert_uint_eq(stream_at(c.data_home, NULL), 0);
	ck_assert_uint_eq(err_lines(text, sizeof(text)), 0);
	set_files(NULL, NULL);
}
END_TEST

/* A system file that others could have written is not trusted. */
START_TEST(test_system_file_trust)
{
	char text[4096];

	if (uot_skipped("system_file_trust"))
		return;
	if (!system_file_here("system_file_trust"))
		return;
	set_files("window = 2M\nthreshold = 4M\n", NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(4));
	ck_assert_int_eq(chmod(c.sysfile, 0666), 0);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), 0);
	ck_assert_uint_eq(err_lines(text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "useonce: ") == text && strstr(text, c.sysfile) &&
		      strstr(text, "not owned by root"), "%s", text);
	ck_assert_int_eq(chmod(c.sysfile, 0644), 0);
	if (uot_is_root()) {
		ck_assert_int_eq(chown(c.sysfile, 65534, 65534), 0);
		ck_assert_uint_eq(stream_at(c.data_a, NULL), 0);
		ck_assert_uint_eq(err_lines(text, sizeof(text)), 1);
		ck_assert_int_eq(chown(c.sysfile, 0, 0), 0);
	}
	/* The user's file is the user's: its mode does not matter. */
	set_files(NULL, "window = 2M\nthreshold = 4M\n");
	ck_assert_int_eq(chmod(c.userfile, 0666), 0);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(4));
	set_files(NULL, NULL);
}
END_TEST

/* A bad line gets one warning naming FILE:LINE; the lines after it apply. */
START_TEST(test_malformed_file)
{
	char text[4096], expect[PATH_MAX + 16];

	if (uot_skipped("malformed_file"))
		return;
	if (!system_file_here("malformed_file"))
		return;
	set_files("window = 2M\nthreshold = 4M\nthis is not a setting\nthreshold = 6M\n", NULL);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(6));
	ck_assert_uint_eq(err_lines(text, sizeof(text)), 1);
	snprintf(expect, sizeof(expect), "useonce: %s:3: ", c.sysfile);
	ck_assert_msg(!strncmp(text, expect, strlen(expect)), "warning: %s", text);

	/* Too long: one warning, what fits in 32 KiB applies, a cut line does not. */
	{
		static char big[40 * 1024];
		size_t n = (size_t)snprintf(big, sizeof(big), "threshold = 8M\n");

		/* 32 KiB ends inside one of these: cut, it would read "threshold = 8". */
		while (n + 64 < sizeof(big))
			n += (size_t)snprintf(big + n, sizeof(big) - n, "threshold = 8388608\n");
		set_files("window = 2M\nthreshold = 4M\n", big);
		ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(8));
		ck_assert_uint_eq(err_lines(text, sizeof(text)), 1);
		ck_assert_msg(strstr(text, "longer than 32 KiB"), "%s", text);
	}
	/* A FIFO in the file's place: ignored with a word, nobody hangs on it. */
	set_files("window = 2M\nthreshold = 4M\n", NULL);
	ck_assert_int_eq(mkfifo(c.userfile, 0644), 0);
	ck_assert_uint_eq(stream_at(c.data_a, NULL), MIB(4));
	ck_assert_uint_eq(err_lines(text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "not a regular file"), "%s", text);
	set_files(NULL, NULL);
}
END_TEST

/* "; dropped 1.5 GiB" -> bytes; UINT64_MAX if the field is missing. */
static uint64_t stat_field(const char *line, const char *name)
{
	char key[64], unit[8] = "";
	const char *p;
	double v;

	snprintf(key, sizeof(key), "; %s ", name);
	p = strstr(line, key);
	if (!p || sscanf(p + strlen(key), "%lf %7[A-Za-z]", &v, unit) != 2)
		return UINT64_MAX;
	if (!strcmp(unit, "KiB"))
		v *= 1024.0;
	else if (!strcmp(unit, "MiB"))
		v *= 1048576.0;
	else if (!strcmp(unit, "GiB"))
		v *= 1073741824.0;
	return (uint64_t)v;
}

static bool near_mib(uint64_t got, uint64_t mib, uint64_t tolerance_mib)
{
	uint64_t want = MIB(mib);

	return got != UINT64_MAX && got + MIB(tolerance_mib) >= want &&
	       got <= want + MIB(tolerance_mib);
}

/* Runs argv with statistics to c.stats; its line (empty if none). */
static void stats_of(const char *const *argv, char *line, size_t size, bool dry)
{
	char stats_env[PATH_MAX + 32], trace_env[PATH_MAX + 32];
	const char *env[] = { stats_env, trace_env, dry ? "USEONCE_DRYRUN=1" : NULL, NULL };
	int status;

	snprintf(stats_env, sizeof(stats_env), "USEONCE_STATS=%s", c.stats);
	snprintf(trace_env, sizeof(trace_env), "USEONCE_TRACE=%s", c.trace);
	unlink(c.stats);
	unlink(c.trace);
	/* cat to a file copies with copy_file_range: a write stream too. */
	c.stdout_to = "/dev/null";
	status = run(argv, true, env);
	c.stdout_to = NULL;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s", argv[0],
		      uot_status_str(status));
	slurp(c.stats, line, size);
	printf("config: %s%s: %s", dry ? "dry run: " : "", argv[0], line[0] ? line : "(no line)\n");
}

START_TEST(test_stats)
{
	const char *cat[] = { "cat", c.big, NULL };
	const char *cp[] = { "cp", c.big, c.copy, NULL };
	const char *small[] = { "cat", c.data_a, NULL };
	const char *to_stderr[] = { "USEONCE_STATS=stderr", NULL };
	char line[1024];
	int status;

	if (uot_skipped("stats"))
		return;
	set_files(NULL, NULL);
	ck_assert_int_eq(uot_make_cold(c.big), 0);
	stats_of(cat, line, sizeof(line), false);
	ck_assert_msg(!strncmp(line, "useonce: stats: cat[", 20), "%s", line);
	ck_assert_msg(strstr(line, "streams 1 (read 1, write 0)"), "%s", line);
	ck_assert_msg(near_mib(stat_field(line, "read"), BIG_MIB, 1), "%s", line);
	ck_assert_msg(stat_field(line, "written") == 0, "%s", line);
	/* Cold: all of it dropped, nothing spared. */
	ck_assert_msg(near_mib(stat_field(line, "dropped"), BIG_MIB, 8), "%s", line);
	ck_assert_msg(stat_field(line, "spared") <= MIB(4), "%s", line);
	ck_assert_msg(strstr(line, "advice errors 0"), "%s", line);
	ck_assert_msg(uot_resident(c.big, NULL) <= (int64_t)MIB(16), "not dropped");

	/* Cached before: spared, not dropped. */
	ck_assert_int_eq(uot_touch(c.big, UOT_TOUCH_READ, NULL), 0);
	stats_of(cat, line, sizeof(line), false);
	ck_assert_msg(near_mib(stat_field(line, "spared"), BIG_MIB, 8), "%s", line);
	ck_assert_msg(stat_field(line, "dropped") <= MIB(8), "%s", line);

	ck_assert_int_eq(uot_make_cold(c.big), 0);
	stats_of(cp, line, sizeof(line), false);
	ck_assert_msg(strstr(line, "streams 2 (read 1, write 1)"), "%s", line);
	ck_assert_msg(near_mib(stat_field(line, "read"), BIG_MIB, 1), "%s", line);
	ck_assert_msg(near_mib(stat_field(line, "written"), BIG_MIB, 1), "%s", line);
	ck_assert_msg(near_mib(stat_field(line, "dropped"), 2 * BIG_MIB, 16), "%s", line);
	ck_assert_msg(near_mib(stat_field(line, "writeback"), BIG_MIB, 8), "%s", line);
	unlink(c.copy);

	/* No stream, no line. */
	stats_of(small, line, sizeof(line), false);
	ck_assert_msg(line[0] == '\0', "a line without a stream: %s", line);

	/*
	 * A child forked after the stream, exiting normally (destructors run):
	 * it starts from zero, so only the parent prints.
	 */
	if (system("command -v python3 >/dev/null 2>&1") == 0) {
		const char *py[] = { "python3", "-c",
			"import os, sys\n"
			"f = open(sys.argv[1], 'rb', buffering=0)\n"
			"while f.read(1 << 20): pass\n"
			"pid = os.fork()\n"
			"if pid == 0: sys.exit(0)\n"
			"os.waitpid(pid, 0)\n", c.big, NULL };
		unsigned lines = 0;
		char *p;

		ck_assert_int_eq(uot_make_cold(c.big), 0);
		stats_of(py, line, sizeof(line), false);
		for (p = line; (p = strstr(p, "useonce: stats: ")); p++)
			lines++;
		ck_assert_msg(lines == 1, "%u lines after a fork: %s", lines, line);
		ck_assert_msg(near_mib(stat_field(line, "read"), BIG_MIB, 1), "%s", line);
	}

	/*
	 * Many small files read whole (a tree): no stream, but from the
	 * UO_TREE_FILES-th on each is dropped at close, and counted.
	 */
	{
		const char *tree[UO_TREE_FILES + 16];
		static char names[UO_TREE_FILES + 16][PATH_MAX];
		unsigned long long files = 0;
		const char *p;
		int i, n = UO_TREE_FILES + 12;

		tree[0] = "cat";
		for (i = 0; i < n; i++) {
			char name[32];

			snprintf(name, sizeof(name), "tree%02d", i);
			uot_scratch_path(names[i], sizeof(names[i]), name);
			ck_assert_int_eq(uot_make_file(names[i], 128 << 10, 100 + (uint32_t)i), 0);
			tree[i + 1] = names[i];
		}
		tree[n + 1] = NULL;
		stats_of(tree, line, sizeof(line), false);
		p = strstr(line, "; tree files ");
		ck_assert_msg(p && sscanf(p, "; tree files %llu", &files) == 1, "%s", line);
		ck_assert_msg(strstr(line, "streams 0 ("), "%s", line);
		/* The 32nd file turns tree mode on; those after it go. */
		ck_assert_msg(files + UO_TREE_FILES >= (unsigned long long)n &&
			      files <= (unsigned long long)n, "%s", line);
		/* Each dropped whole: 128 KiB, to the 0.1 MiB the line shows. */
		ck_assert_msg(llabs((long long)stat_field(line, "dropped") -
				    (long long)(files << 17)) <= (long long)(MIB(1) / 10) &&
			      files > 0, "%s", line);
		for (i = 0; i < n; i++)
			unlink(names[i]);
	}

	/* cat closes stderr before exit: the line is written before that. */
	ck_assert_int_eq(uot_make_cold(c.big), 0);
	status = run(cat, true, to_stderr);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_uint_eq(err_lines(line, sizeof(line)), 1);
	ck_assert_msg(!strncmp(line, "useonce: stats: cat[", 20), "%s", line);
}
END_TEST

START_TEST(test_dryrun)
{
	const char *cat[] = { "cat", c.big, NULL };
	char line[1024], trace[65536];

	if (uot_skipped("dryrun"))
		return;
	set_files(NULL, NULL);
	ck_assert_int_eq(uot_make_cold(c.big), 0);
	stats_of(cat, line, sizeof(line), true);
	ck_assert_msg(strstr(line, "(dry run"), "%s", line);
	ck_assert_msg(near_mib(stat_field(line, "dropped"), BIG_MIB, 8), "%s", line);
	ck_assert_msg(uot_resident_pct(c.big) >= 95.0, "a dry run dropped pages: %.1f%% left",
		      uot_resident_pct(c.big));
	slurp(c.trace, trace, sizeof(trace));
	ck_assert_msg(strstr(trace, "dry run: would drop"), "trace: %.300s", trace);
	ck_assert_msg(!strstr(trace, ": drop "), "trace: %.300s", trace);
	ck_assert_int_eq(uot_make_cold(c.big), 0);
}
END_TEST

/* ---- bad input ---- */

struct bad {
	const char *name;	/* variable, or config key */
	const char *value;
	unsigned warnings;	/* 1, or 0 where the value is documented (empty: unset) */
};

static const struct bad bad_env[] = {
	{ "USEONCE_THRESHOLD", "", 1 }, { "USEONCE_THRESHOLD", "abc", 1 },
	{ "USEONCE_THRESHOLD", "-1", 1 }, { "USEONCE_THRESHOLD", "0", 1 },
	{ "USEONCE_THRESHOLD", "99999999999999999999999", 1 },
	{ "USEONCE_THRESHOLD", "2P", 1 }, { "USEONCE_THRESHOLD", "8M junk", 1 },
	{ "USEONCE_THRESHOLD", "\xff\xfe\x01", 1 },
	{ "USEONCE_WINDOW", "", 1 }, { "USEONCE_WINDOW", "x", 1 }, { "USEONCE_WINDOW", "-8M", 1 },
	{ "USEONCE_WINDOW", "1", 1 }, { "USEONCE_WINDOW", "18446744073709551616", 1 },
	{ "USEONCE_GUARD", "", 1 }, { "USEONCE_GUARD", "sideways", 1 },
	{ "USEONCE_GUARD", "-1", 1 }, { "USEONCE_GUARD", "READ", 1 },
	{ "USEONCE_REUSE", "", 1 }, { "USEONCE_REUSE", "-5", 1 }, { "USEONCE_REUSE", "10x", 1 },
	{ "USEONCE_REUSE", "99999999999999", 1 },
	{ "USEONCE_DISABLE", "maybe", 1 }, { "USEONCE_DISABLE", "-1", 1 },
	{ "USEONCE_DISABLE", "99999999999999999999", 1 }, { "USEONCE_DISABLE", "", 1 },
	{ "USEONCE_TRACE", "relative/file", 1 }, { "USEONCE_TRACE", "-1", 1 },
	{ "USEONCE_TRACE", "99999999999999", 1 }, { "USEONCE_TRACE", "", 1 },
	{ "USEONCE_STATS", "yes please", 1 }, { "USEONCE_STATS", "-1", 1 },
	{ "USEONCE_STATS", "99999999999999", 1 }, { "USEONCE_STATS", "", 1 },
	{ "USEONCE_STATS", "0", 0 },
	{ "USEONCE_DRYRUN", "maybe", 1 }, { "USEONCE_DRYRUN", "-1", 1 },
	{ "USEONCE_DRYRUN", "2", 1 }, { "USEONCE_DRYRUN", "", 1 },
	{ "USEONCE_CONFIG", "/nonexistent/useonce.conf", 1 },
	{ "USEONCE_CONFIG", "relative-and-missing", 1 }, { "USEONCE_CONFIG", "", 1 },
};

static const struct bad bad_keys[] = {
	{ "threshold", "", 1 }, { "threshold", "abc", 1 }, { "threshold", "-1", 1 },
	{ "threshold", "1", 1 }, { "threshold", "99999999999999999999T", 1 },
	{ "window", "", 1 }, { "window", "0", 1 }, { "window", "8Q", 1 },
	{ "guard", "", 1 }, { "guard", "up", 1 },
	{ "reuse", "", 1 }, { "reuse", "-1", 1 }, { "reuse", "5y", 1 },
	{ "enable", "", 1 }, { "enable", "perhaps", 1 },
	{ "never", "", 1 }, { "never", "relative", 1 },
	{ "always", "", 1 }, { "always", "rel/ative", 1 },
	{ "colour", "blue", 1 },
	{ NULL, "a line without an equals sign", 1 },
	{ NULL, "[weird section]", 1 },
	{ NULL, "[program]", 1 },
};

static struct {
	char out[4096];
	int status;
} ref;

static void run_bad(const char *var, const char *value, unsigned warnings, const char *file)
{
	const char *argv[] = { "md5sum", c.bad, NULL };
	char assign[PATH_MAX + 64], conf_env[PATH_MAX + 32], out[4096], err[4096];
	const char *env[] = { assign, NULL };
	int status;
	unsigned n;

	if (file) {
		snprintf(conf_env, sizeof(conf_env), "USEONCE_CONFIG=%s", file);
		env[0] = conf_env;
	} else {
		snprintf(assign, sizeof(assign), "%s=%s", var, value);
	}
	status = run(argv, true, env);
	slurp(c.out, out, sizeof(out));
	n = err_lines(err, sizeof(err));
	ck_assert_msg(status == ref.status, "%s=%s: status %s", var, value,
		      uot_status_str(status));
	ck_assert_msg(!strcmp(out, ref.out), "%s=%s changed stdout: %s", var, value, out);
	ck_assert_msg(n == warnings, "%s=\"%s\": %u lines on stderr, expected %u: %s", var, value,
		      n, warnings, err);
	if (warnings) {
		ck_assert_msg(!strncmp(err, "useonce: ", 9), "%s", err);
		ck_assert_msg(strstr(err, file ? file : var), "the warning does not name %s: %s",
			      file ? file : var, err);
	}
}

START_TEST(test_bad_env)
{
	const char *argv[] = { "md5sum", c.bad, NULL };
	size_t i;

	if (uot_skipped("bad_env"))
		return;
	set_files(NULL, NULL);
	ref.status = run(argv, false, NULL);
	slurp(c.out, ref.out, sizeof(ref.out));
	ck_assert_msg(WIFEXITED(ref.status) && WEXITSTATUS(ref.status) == 0 && ref.out[0],
		      "md5sum without the library: %s", uot_status_str(ref.status));
	for (i = 0; i < sizeof(bad_env) / sizeof(bad_env[0]); i++)
		run_bad(bad_env[i].name, bad_env[i].value, bad_env[i].warnings, NULL);
	printf("config: bad_env: %zu bad values, program output unchanged, one warning each\n",
	       sizeof(bad_env) / sizeof(bad_env[0]));
}
END_TEST

START_TEST(test_bad_keys)
{
	const char *argv[] = { "md5sum", c.bad, NULL };
	char text[1024];
	size_t i;

	if (uot_skipped("bad_keys"))
		return;
	set_files(NULL, NULL);
	ref.status = run(argv, false, NULL);
	slurp(c.out, ref.out, sizeof(ref.out));
	for (i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
		if (bad_keys[i].name)
			snprintf(text, sizeof(text), "%s = %s\n", bad_keys[i].name, bad_keys[i].value);
		else
			snprintf(text, sizeof(text), "%s\n", bad_keys[i].value);
		write_text(c.conf, text, 0644);
		run_bad(bad_keys[i].name ? bad_keys[i].name : "line", text, 1, c.conf);
	}
	/* Garbage: every line wrong, one line naming them all, and the program unharmed. */
	write_text(c.conf, "\x7f" "ELF\x01\x01\n\xff\xfe garbage = \x01\n[[[\n", 0644);
	run_bad("garbage", "", 1, c.conf);
	printf("config: bad_keys: %zu bad lines, program output unchanged, one warning each\n",
	       sizeof(bad_keys) / sizeof(bad_keys[0]) + 1);
}
END_TEST

/*
 * Many problems at once (a session's environment with typos, a bad file):
 * one line per process, the first problem in full, every other one named.
 */
START_TEST(test_one_line)
{
	const char *argv[] = { "md5sum", c.bad, NULL };
	char conf_env[PATH_MAX + 32], text[4096], want[PATH_MAX + 32], big[4096];
	const char *env[] = { conf_env, "USEONCE_WINDOW=1", "USEONCE_GUARD=sideways", NULL };
	size_t n = 0;
	int i;

	if (uot_skipped("one_line"))
		return;
	set_files(NULL, NULL);
	write_text(c.conf, "threshold = 8x\nwindow = 4M\nwhat = 3\nguard = up\n", 0644);
	snprintf(conf_env, sizeof(conf_env), "USEONCE_CONFIG=%s", c.conf);
	run(argv, true, env);
	ck_assert_msg(err_lines(text, sizeof(text)) == 1, "not one line: %s", text);
	snprintf(want, sizeof(want), "useonce: %s:1: threshold = 8x: not a size (try 32M); ignored; "
		 "4 more ignored: %s:3,4, USEONCE_WINDOW, USEONCE_GUARD (useonce --check says why)\n",
		 c.conf, c.conf);
	ck_assert_msg(!strcmp(text, want), "got:\n%sexpected:\n%s", text, want);

	/* More than fit: still one line, cut short, and it says where to look. */
	for (i = 1; i <= 40; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "key%d = %d\n", i, i);
	write_text(c.conf, big, 0644);
	run(argv, true, env);
	ck_assert_msg(err_lines(text, sizeof(text)) == 1, "not one line: %s", text);
	ck_assert_msg(strstr(text, "; 41 more ignored: ") && strstr(text, ":2,3,4,") &&
		      strstr(text, "... (useonce --check says why)\n"), "%s", text);
}
END_TEST

/*
 * The session: a bad value in every variable, three processes
 * (sh, cp, sha256sum) writing to one stderr.  One line in all, naming all
 * nine; before, a line per process (3, and 9 per process before that).
 */
START_TEST(test_one_line_a_session)
{
	char script[3 * PATH_MAX], text[4096];
	const char *argv[] = { "sh", "-c", script, NULL };
	const char *env[] = {
		"USEONCE_DISABLE=maybe", "USEONCE_THRESHOLD=abc", "USEONCE_WINDOW=abc",
		"USEONCE_GUARD=sideways", "USEONCE_REUSE=soon", "USEONCE_TRACE=relative",
		"USEONCE_STATS=relative", "USEONCE_DRYRUN=perhaps",
		"USEONCE_CONFIG=/nonexistent/useonce.conf", NULL,
	};
	unsigned lines, named = 0;
	const char *p;

	if (uot_skipped("one_line_a_session"))
		return;
	set_files(NULL, NULL);
	snprintf(script, sizeof(script), "cp '%s' '%s' && sha256sum '%s'", c.data_a, c.copy,
		 c.copy);
	ck_assert(uot_exited_ok(run(argv, true, env)));
	lines = err_lines(text, sizeof(text));
	for (p = text; (p = strstr(p, "USEONCE_")); p++)
		named++;
	printf("config: one_line_a_session: sh -c 'cp && sha256sum', 9 bad values: %u line(s), "
	       "%u variables named\n", lines, named);
	ck_assert_msg(lines == 1, "%u lines:\n%s", lines, text);
	ck_assert_msg(named == 9 && strstr(text, "; 8 more ignored: "), "not all named:\n%s", text);
	unlink(c.copy);
}
END_TEST

/*
 * The same session when its leader is gone (a daemon's double fork, a CI
 * runner's `setsid sh -c 'cmd &'`): cp and sha256sum start after the
 * leader exited and still say one line between them.  Only they load the
 * library, so the line is theirs.
 */
START_TEST(test_one_line_leader_gone)
{
	char script[6 * PATH_MAX + 512], done[PATH_MAX + 16], text[4096], list[2 * PATH_MAX + 2];
	const char *argv[] = { "sh", "-c", script, NULL };
	const char *first = getenv("UO_PRELOAD_FIRST");
	const char *env[] = { "USEONCE_THRESHOLD=abc", "USEONCE_GUARD=sideways", NULL };
	unsigned lines;
	int i;

	if (uot_skipped("one_line_leader_gone"))
		return;
	set_files(NULL, NULL);
	snprintf(done, sizeof(done), "%s.done", c.copy);
	unlink(done);
	/* A sanitized library needs its runtime first (tests/sanitize.mk). */
	snprintf(list, sizeof(list), "%s%s%s", first && *first ? first : "",
		 first && *first ? ":" : "", c.lib);
	/* The subshell waits for the leader ($$) to be gone before the copy. */
	snprintf(script, sizeof(script),
		 "setsid sh -c '(while kill -0 $$ 2>/dev/null; do sleep 0.02; done; "
		 "LD_PRELOAD=%s cp %s %s && LD_PRELOAD=%s sha256sum %s >/dev/null; "
		 ": > %s) &'", list, c.data_a, c.copy, list, c.copy, done);
	ck_assert(uot_exited_ok(run(argv, false, env)));
	for (i = 0; i < 3000 && access(done, F_OK) != 0; i++)
		usleep(10000);
	ck_assert_msg(access(done, F_OK) == 0, "the copy in the leaderless session never ended");
	lines = err_lines(text, sizeof(text));
	printf("config: one_line_leader_gone: cp && sha256sum, leader gone: %u line(s)\n", lines);
	ck_assert_msg(lines == 1, "%u lines:\n%s", lines, text);
	ck_assert_msg(strstr(text, "USEONCE_THRESHOLD") && strstr(text, "USEONCE_GUARD"), "%s", text);
	unlink(done);
	unlink(c.copy);
}
END_TEST

/*
 * The session of a container or of `unshare -p` (CI runners among them):
 * its leader lives in a parent PID namespace, so getsid() and /proc say 0.
 * sh, cp and sha256sum still say one line between them; before, one each.
 * Only the inner sh and what it starts load the library.
 */
START_TEST(test_one_line_leader_outside)
{
	char script[6 * PATH_MAX + 512], text[4096], list[2 * PATH_MAX + 2];
	const char *argv[] = { "unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script,
			       NULL };
	const char *probe[] = { "unshare", "--pid", "--fork", "--mount-proc", "true", NULL };
	const char *first = getenv("UO_PRELOAD_FIRST");
	const char *env[] = { "USEONCE_THRESHOLD=abc", "USEONCE_GUARD=sideways", NULL };
	unsigned lines;

	if (uot_skipped("one_line_leader_outside"))
		return;
	if (!uot_exited_ok(run(probe, false, NULL))) {
		printf("config: one_line_leader_outside: skipped: cannot make a PID namespace "
		       "(unshare --pid: needs root)\n");
		return;
	}
	set_files(NULL, NULL);
	snprintf(list, sizeof(list), "%s%s%s", first && *first ? first : "",
		 first && *first ? ":" : "", c.lib);
	snprintf(script, sizeof(script),
		 "LD_PRELOAD=%s sh -c 'cp %s %s && sha256sum %s >/dev/null; "
		 "test \"$(cut -d\" \" -f6 /proc/self/stat)\" = 0 || echo session visible >&2'",
		 list, c.data_a, c.copy, c.copy);
	ck_assert(uot_exited_ok(run(argv, false, env)));
	lines = err_lines(text, sizeof(text));
	printf("config: one_line_leader_outside: sh -c 'cp && sha256sum' in a PID namespace, "
	       "session 0: %u line(s)\n", lines);
	ck_assert_msg(!strstr(text, "session visible"), "the session was not 0 inside:\n%s", text);
	ck_assert_msg(lines == 1, "%u lines:\n%s", lines, text);
	ck_assert_msg(strstr(text, "USEONCE_THRESHOLD") && strstr(text, "USEONCE_GUARD"), "%s", text);
	unlink(c.copy);
}
END_TEST

/* ---- fixtures ---- */

/* The system file sits in the build directory, outside the scratch one. */
static void cleanup(void)
{
	if (c.sys_made)
		unlink(c.sysfile);
}

static void mkdir_p(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		uot_skip("cannot make %s: %s", path, strerror(errno));
}

static void prepare(void)
{
	char stuff[PATH_MAX];

	snprintf(c.lib, sizeof(c.lib), "%s/test-sysconf/libuseonce.so", uot_build_dir());
	snprintf(c.etc, sizeof(c.etc), "%s/test-etc", uot_build_dir());
	snprintf(c.sysfile, sizeof(c.sysfile), "%s/useonce.conf", c.etc);
	uot_suite_begin("config", cleanup);
	if (access(c.lib, R_OK) != 0) {
		uot_skip("no %s (make tests builds it)", c.lib);
		return;
	}
	if (!uot_need_scratch())
		return;
	mkdir_p(c.etc);
	uot_scratch_path(c.home, sizeof(c.home), "home");
	snprintf(c.userdir, sizeof(c.userdir), "%s/.config", c.home);
	mkdir_p(c.home);
	mkdir_p(c.userdir);
	snprintf(c.userdir, sizeof(c.userdir), "%s/.config/useonce", c.home);
	mkdir_p(c.userdir);
	snprintf(c.userfile, sizeof(c.userfile), "%s/config", c.userdir);
	snprintf(stuff, sizeof(stuff), "%s/stuff", c.home);
	mkdir_p(stuff);
	snprintf(c.data_home, sizeof(c.data_home), "%s/data", stuff);
	uot_scratch_path(c.dir_a, sizeof(c.dir_a), "a");
	uot_scratch_path(c.dir_b, sizeof(c.dir_b), "b");
	mkdir_p(c.dir_a);
	mkdir_p(c.dir_b);
	snprintf(c.data_a, sizeof(c.data_a), "%s/data", c.dir_a);
	snprintf(c.data_b, sizeof(c.data_b), "%s/data", c.dir_b);
	uot_scratch_path(c.big, sizeof(c.big), "big");
	uot_scratch_path(c.copy, sizeof(c.copy), "copy");
	uot_scratch_path(c.bad, sizeof(c.bad), "bad-input");
	uot_scratch_path(c.out, sizeof(c.out), "out");
	uot_scratch_path(c.err, sizeof(c.err), "err");
	uot_scratch_path(c.trace, sizeof(c.trace), "trace");
	uot_scratch_path(c.stats, sizeof(c.stats), "stats");
	uot_scratch_path(c.conf, sizeof(c.conf), "config-under-test");
	if (uot_skip_reason()[0])
		return;
	if (uot_make_file(c.data_a, MIB(DATA_MIB), 11) != 0 ||
	    uot_make_file(c.data_b, MIB(DATA_MIB), 12) != 0 ||
	    uot_make_file(c.data_home, MIB(DATA_MIB), 13) != 0 ||
	    uot_make_file(c.big, MIB(BIG_MIB), 14) != 0 ||
	    uot_make_file(c.bad, MIB(BAD_MIB), 15) != 0)
		uot_skip("%s", uot_why());
	/* A system file left by a run that died would change every case. */
	unlink(c.sysfile);
}

int main(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	prepare();
	tc = tcase_create("files");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_precedence);
	tcase_add_test(tc, test_programs);
	tcase_add_test(tc, test_path_rules);
	tcase_add_test(tc, test_system_file_trust);
	tcase_add_test(tc, test_malformed_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("stats");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stats);
	tcase_add_test(tc, test_dryrun);
	suite_add_tcase(s, tc);

	tc = tcase_create("badinput");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bad_env);
	tcase_add_test(tc, test_bad_keys);
	tcase_add_test(tc, test_one_line);
	tcase_add_test(tc, test_one_line_a_session);
	tcase_add_test(tc, test_one_line_leader_gone);
	tcase_add_test(tc, test_one_line_leader_outside);
	suite_add_tcase(s, tc);
	/* In-process: files and the system config are shared from case to case. */
	return uot_check_run(s, true);
}
