/*
 * The useonce command and what ships around it: options, LD_PRELOAD, exit
 * statuses, make install / uninstall, the man pages, the examples and the
 * Debian package.
 *
 *   options	each option sets its variable, checked through env(1) run
 *		under the command (what the command sets, not what the library
 *		then does with it)
 *   preload	the library is prepended to LD_PRELOAD, never twice
 *   status	COMMAND's status passes through; 126, 127; 2 for usage errors
 *   usage	--help and --version
 *   install	make install into a DESTDIR, run from there, make uninstall
 *   man	both pages render without a warning and document everything
 *   examples	the deployment examples, tried as far as the machine allows
 *		without changing it
 *   debian	(root) dpkg-buildpackage, dpkg -i, use, dpkg -r and --purge
 *
 * The install tests build a second copy of the project in the scratch
 * directory (about 2 s); the Debian test about 20 s more.  Environment:
 * UO_BUILD (default build), UO_SRCDIR (default .), UO_CLI_DEB=0 skips the
 * Debian test.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"
#include "useonce.h"

#define CLI_OUT_MAX	(64 * 1024)
#define CLI_TIMEOUT_S	120
/* Where `make install` puts things with the default PREFIX, as the examples name them. */
#define CLI_DEFAULT_LIB	"/usr/local/lib/libuseonce.so"
/* A LIBDIR like the Debian package's: a private directory under a multiarch one. */
#define CLI_DEB_LIBDIR	"/usr/lib/uotest-multiarch/libuseonce"

struct cli_out {
	int status;		/* wait status; -1: could not run or timed out */
	char out[CLI_OUT_MAX];
	char err[CLI_OUT_MAX];
};

/*
 * Made once by the parent (unchecked fixture), inherited by the forked
 * tests, removed by the parent only.
 */
static struct {
	char lib[PATH_MAX];		/* the build's library, made absolute */
	char conf[PATH_MAX];		/* a readable file for --config */
	char conf_src[PATH_MAX];	/* the sample config the install tests install */
	char bdir[PATH_MAX];		/* the install tests' own build directory */
	char stage[PATH_MAX];		/* DESTDIR of a default install */
	char stage_why[4096];		/* non-empty: that install failed */
	char deb_mark[PATH_MAX];	/* exists while the test's package may be installed */
} cli;

static unsigned cli_runs;

static bool cli_have(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static void cli_slurp(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n = 0;

	while (fd >= 0 && len + 1 < size && (n = read(fd, out + len, size - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	if (fd >= 0)
		close(fd);
}

static int cli_write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t len = strlen(text);
	bool ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, len) == (ssize_t)len;
	if (close(fd) != 0 || !ok)
		return -1;
	return chmod(path, mode);
}

/* Ours and make's: what a test run must not inherit. */
static bool cli_inherited(const char *entry)
{
	static const char *const drop[] = { "LD_PRELOAD=", "USEONCE_", "MAKEFLAGS=",
					    "MFLAGS=", "MAKELEVEL=", "MAKEOVERRIDES=",
					    "DEB_BUILD_OPTIONS=" };
	size_t i;

	for (i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (!strncmp(entry, drop[i], strlen(drop[i])))
			return false;
	return true;
}

/*
 * Runs argv (looked up in PATH) in 'cwd' (NULL: ours) with our environment
 * less LD_PRELOAD, USEONCE_* and make's variables, then 'env' applied
 * (NAME=VALUE).  Standard input is /dev/null.
 */
static void cli_run_in(const char *const *argv, const char *const *env, const char *cwd,
		       struct cli_out *o)
{
	char out_path[PATH_MAX], err_path[PATH_MAX], name[64];
	time_t deadline = time(NULL) + CLI_TIMEOUT_S;
	int status = -1;
	pid_t pid, got;

	snprintf(name, sizeof(name), "run.%d.%u.out", (int)getpid(), cli_runs);
	uot_scratch_path(out_path, sizeof(out_path), name);
	snprintf(name, sizeof(name), "run.%d.%u.err", (int)getpid(), cli_runs++);
	uot_scratch_path(err_path, sizeof(err_path), name);
	fflush(NULL);
	/* No ck_assert here: the parent's setup runs this outside any test. */
	pid = fork();
	if (pid < 0) {
		o->status = -1;
		snprintf(o->err, sizeof(o->err), "fork: %s", strerror(errno));
		o->out[0] = '\0';
		return;
	}
	if (pid == 0) {
		static char *envp[1024];
		extern char **environ;
		const char *const *e;
		size_t n = 0;
		char **p;
		int in = open("/dev/null", O_RDONLY);
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(err, 2) < 0)
			_exit(125);
		for (p = environ; *p && n < 900; p++)
			if (cli_inherited(*p))
				envp[n++] = *p;
		envp[n] = NULL;
		environ = envp;
		for (e = env; e && *e; e++)
			putenv((char *)*e);
		if (cwd && chdir(cwd) != 0)
			_exit(125);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "check_cli: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(125);
	}
	while ((got = waitpid(pid, &status, WNOHANG)) == 0 && time(NULL) < deadline) {
		struct timespec ts = { 0, 5 * 1000000L };

		nanosleep(&ts, NULL);
	}
	if (got == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		status = -1;
	}
	o->status = status;
	cli_slurp(out_path, o->out, sizeof(o->out));
	cli_slurp(err_path, o->err, sizeof(o->err));
	unlink(out_path);
	unlink(err_path);
}

static void cli_run(const char *const *argv, const char *const *env, struct cli_out *o)
{
	cli_run_in(argv, env, uot_scratch(), o);
}

/* The exit status, or -1 when killed or not run. */
static int cli_exit(const struct cli_out *o)
{
	return o->status >= 0 && WIFEXITED(o->status) ? WEXITSTATUS(o->status) : -1;
}

/* The value of NAME in env(1)'s output, copied to 'val'; false when absent. */
static bool cli_var(const char *env_out, const char *name, char *val, size_t size)
{
	size_t len = strlen(name);
	const char *p = env_out;

	while (p && *p) {
		if (!strncmp(p, name, len) && p[len] == '=') {
			const char *v = p + len + 1;
			size_t n = strcspn(v, "\n");

			snprintf(val, size, "%.*s", (int)n, v);
			return true;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static const char *cli_useonce(void)
{
	return uot_useonce();
}

/* ---- options ---- */

struct cli_opt_case {
	const char *args[5];	/* options before "env"; "@CONF": the config file */
	const char *env;	/* one NAME=VALUE in the environment, or NULL */
	const char *var;
	const char *want;	/* NULL: must be unset; "@CWD/": the scratch directory */
};

static const struct cli_opt_case cli_opt_cases[] = {
	{ { "-t", "8M" }, NULL, "USEONCE_THRESHOLD", "8M" },
	{ { "--threshold=64MiB" }, NULL, "USEONCE_THRESHOLD", "64MiB" },
	{ { "--threshold", "2m" }, NULL, "USEONCE_THRESHOLD", "2m" },
	{ { "-w", "4M" }, NULL, "USEONCE_WINDOW", "4M" },
	{ { "--window=16777216" }, NULL, "USEONCE_WINDOW", "16777216" },
	{ { "-g", "read" }, NULL, "USEONCE_GUARD", "read" },
	{ { "--guard=write" }, NULL, "USEONCE_GUARD", "write" },
	{ { "--guard", "both" }, NULL, "USEONCE_GUARD", "both" },
	{ { "--read-only" }, NULL, "USEONCE_GUARD", "read" },
	{ { "--write-only" }, NULL, "USEONCE_GUARD", "write" },
	{ { "-g", "read", "--write-only" }, NULL, "USEONCE_GUARD", "write" },
	{ { "-r", "0" }, NULL, "USEONCE_REUSE", "0" },
	{ { "--reuse=10m" }, NULL, "USEONCE_REUSE", "10m" },
	{ { "-r", "90s" }, NULL, "USEONCE_REUSE", "90s" },
	{ { "--reuse", "2h" }, NULL, "USEONCE_REUSE", "2h" },
	{ { "-r", "1d" }, NULL, "USEONCE_REUSE", "1d" },
	{ { "-s" }, NULL, "USEONCE_STATS", "stderr" },
	{ { "--stats" }, NULL, "USEONCE_STATS", "stderr" },
	{ { "-s3" }, NULL, "USEONCE_STATS", "3" },
	{ { "--stats=/var/log/uotest-stats" }, NULL, "USEONCE_STATS", "/var/log/uotest-stats" },
	{ { "--stats=stats.log" }, NULL, "USEONCE_STATS", "@CWD/stats.log" },
	{ { "-T", "stderr" }, NULL, "USEONCE_TRACE", "stderr" },
	{ { "-T", "7" }, NULL, "USEONCE_TRACE", "7" },
	{ { "--trace=/tmp/uotest-trace" }, NULL, "USEONCE_TRACE", "/tmp/uotest-trace" },
	{ { "--trace", "trace.log" }, NULL, "USEONCE_TRACE", "@CWD/trace.log" },
	{ { "-N" }, NULL, "USEONCE_DRYRUN", "1" },
	{ { "--dry-run" }, NULL, "USEONCE_STATS", "stderr" },
	{ { "--dry-run", "--stats=5" }, NULL, "USEONCE_STATS", "5" },
	{ { "-s5", "-N" }, NULL, "USEONCE_STATS", "5" },
	{ { "-N" }, "USEONCE_STATS=/var/log/uotest-kept", "USEONCE_STATS", "/var/log/uotest-kept" },
	{ { "-N" }, "USEONCE_STATS=0", "USEONCE_STATS", "0" },
	{ { "-c", "@CONF" }, NULL, "USEONCE_CONFIG", "@CONF" },
	{ { "--config=cli.conf" }, NULL, "USEONCE_CONFIG", "@CONF" },
	{ { "-n" }, NULL, "USEONCE_DISABLE", "1" },
	{ { "--disable" }, NULL, "USEONCE_DISABLE", "1" },
	/* The command line beats the environment; the environment passes through. */
	{ { "-t", "8M" }, "USEONCE_THRESHOLD=64M", "USEONCE_THRESHOLD", "8M" },
	{ { "-w", "4M" }, "USEONCE_THRESHOLD=64M", "USEONCE_THRESHOLD", "64M" },
	{ { "-s" }, "USEONCE_STATS=/var/log/uotest-env", "USEONCE_STATS", "stderr" },
	/* Nothing is set that was not asked for. */
	{ { "-t", "8M" }, NULL, "USEONCE_DRYRUN", NULL },
	{ { "-t", "8M" }, NULL, "USEONCE_STATS", NULL },
	{ { "-s" }, NULL, "USEONCE_DRYRUN", NULL },
	{ { "--read-only" }, NULL, "USEONCE_DISABLE", NULL },
};

#define CLI_NOPT_CASES	(sizeof(cli_opt_cases) / sizeof(cli_opt_cases[0]))

static const char *cli_expand(const char *s, char *buf, size_t size)
{
	if (!s)
		return NULL;
	if (!strcmp(s, "@CONF"))
		return cli.conf;
	if (!strncmp(s, "@CWD/", 5))
		return uot_sfmt(buf, size, "%s/%s", uot_scratch(), s + 5);
	return s;
}

START_TEST(test_option)
{
	const struct cli_opt_case *c = &cli_opt_cases[_i];
	const char *argv[8] = { cli_useonce() };
	const char *env[] = { c->env, NULL };
	char want_buf[PATH_MAX], got[PATH_MAX], what[256] = "";
	const char *want = cli_expand(c->want, want_buf, sizeof(want_buf));
	static struct cli_out o;
	int n = 1, i;

	for (i = 0; i < 5 && c->args[i]; i++) {
		argv[n++] = strcmp(c->args[i], "@CONF") ? c->args[i] : cli.conf;
		snprintf(what + strlen(what), sizeof(what) - strlen(what), " %s", c->args[i]);
	}
	argv[n++] = "env";
	argv[n] = NULL;
	cli_run(argv, env, &o);
	ck_assert_msg(cli_exit(&o) == 0, "useonce%s env: %s; stderr: %s", what,
		      uot_status_str(o.status), o.err);
	if (!want) {
		ck_assert_msg(!cli_var(o.out, c->var, got, sizeof(got)),
			      "useonce%s set %s=%s, which was not asked for", what, c->var, got);
		return;
	}
	ck_assert_msg(cli_var(o.out, c->var, got, sizeof(got)), "useonce%s (with %s) did not set %s",
		      what, c->env ? c->env : "nothing", c->var);
	ck_assert_msg(!strcmp(got, want), "useonce%s (with %s): %s=%s, expected %s", what,
		      c->env ? c->env : "nothing", c->var, got, want);
}
END_TEST

/* Without options, the command adds nothing but the library. */
START_TEST(test_no_option)
{
	const char *argv[] = { cli_useonce(), "env", NULL };
	static struct cli_out o;

	cli_run(argv, NULL, &o);
	ck_assert_msg(cli_exit(&o) == 0, "useonce env: %s: %s", uot_status_str(o.status), o.err);
	ck_assert_msg(!strstr(o.out, "USEONCE_"), "useonce env set variables of its own:\n%s",
		      o.out);
	ck_assert_msg(strstr(o.out, "LD_PRELOAD="), "useonce env: no LD_PRELOAD:\n%s", o.out);
}
END_TEST

/* Options after the command are the command's. */
START_TEST(test_options_after_command)
{
	const char *argv[] = { cli_useonce(), "-n", "sh", "-c",
			       "echo \"args:$*\"; echo \"threshold:${USEONCE_THRESHOLD-unset}\"",
			       "sh", "-t", "8M", "--help", NULL };
	static struct cli_out o;

	cli_run(argv, NULL, &o);
	ck_assert_msg(cli_exit(&o) == 0, "%s: %s", uot_status_str(o.status), o.err);
	ck_assert_msg(strstr(o.out, "args:-t 8M --help\n"), "the command got other arguments:\n%s",
		      o.out);
	ck_assert_msg(strstr(o.out, "threshold:unset\n"),
		      "an option after the command was taken as useonce's:\n%s", o.out);
}
END_TEST

/* ---- preload ---- */

struct cli_preload_case {
	const char *given;	/* LD_PRELOAD before; NULL: unset; @LIB, @LINK replaced */
	const char *want;	/* after */
};

static const struct cli_preload_case cli_preload_cases[] = {
	{ NULL, "@LIB" },
	{ "", "@LIB" },
	{ " : ", "@LIB" },
	{ "/nonexistent/uotest-other.so", "@LIB:/nonexistent/uotest-other.so" },
	{ "/nonexistent/a.so /nonexistent/b.so", "@LIB:/nonexistent/a.so /nonexistent/b.so" },
	/* Already there: left as it is. */
	{ "@LIB", "@LIB" },
	{ "/nonexistent/uotest-other.so:@LIB", "/nonexistent/uotest-other.so:@LIB" },
	{ "/nonexistent/a.so @LIB", "/nonexistent/a.so @LIB" },
	{ "@LINK", "@LINK" },			/* the same file under another name */
	{ "libuseonce.so", "libuseonce.so" },	/* a name the loader searches for */
	/* A libuseonce.so that is not there loads nothing: not ours. */
	{ "/nonexistent/libuseonce.so", "@LIB:/nonexistent/libuseonce.so" },
};

#define CLI_NPRELOAD_CASES	(sizeof(cli_preload_cases) / sizeof(cli_preload_cases[0]))

static const char *cli_subst_lib(const char *s, char *out, size_t size)
{
	char link[PATH_MAX];
	const char *tokens[] = { "@LIB", "@LINK" };
	const char *values[] = { cli.lib, link };

	if (!s)
		return NULL;
	uot_scratch_path(link, sizeof(link), "uotest-other-name.so");
	uot_expand(out, size, s, tokens, values, 2);
	return out;
}

START_TEST(test_preload)
{
	const struct cli_preload_case *c = &cli_preload_cases[_i];
	const char *argv[] = { cli_useonce(), "env", NULL };
	char given[2 * PATH_MAX], want[2 * PATH_MAX], env0[2 * PATH_MAX + 16], got[4 * PATH_MAX];
	char link[PATH_MAX];
	const char *env[] = { NULL, NULL };
	static struct cli_out o;

	uot_scratch_path(link, sizeof(link), "uotest-other-name.so");
	unlink(link);
	ck_assert_msg(symlink(cli.lib, link) == 0, "symlink %s: %s", link, strerror(errno));
	if (cli_subst_lib(c->given, given, sizeof(given))) {
		uot_sfmt(env0, sizeof(env0), "LD_PRELOAD=%s", given);
		env[0] = env0;
	}
	cli_subst_lib(c->want, want, sizeof(want));
	cli_run(argv, env, &o);
	ck_assert_msg(cli_exit(&o) == 0, "LD_PRELOAD=%s useonce env: %s: %s",
		      c->given ? given : "(unset)", uot_status_str(o.status), o.err);
	ck_assert_msg(cli_var(o.out, "LD_PRELOAD", got, sizeof(got)), "no LD_PRELOAD in:\n%s",
		      o.out);
	ck_assert_msg(!strcmp(got, want), "LD_PRELOAD '%s' became '%s', expected '%s'",
		      c->given ? given : "(unset)", got, want);
}
END_TEST

/* The library it names is really loaded: the command's own maps show it. */
START_TEST(test_loaded)
{
	const char *argv[] = { cli_useonce(), "cat", "/proc/self/maps", NULL };
	static struct cli_out o;

	cli_run(argv, NULL, &o);
	ck_assert_msg(cli_exit(&o) == 0, "%s: %s", uot_status_str(o.status), o.err);
	ck_assert_msg(strstr(o.out, cli.lib), "cat's maps do not show %s:\n%s", cli.lib, o.out);
}
END_TEST

/* ---- exit status ---- */

struct cli_status_case {
	const char *argv[4];	/* after "useonce"; @NOEXEC, @DIR: made in the scratch */
	int status;		/* expected exit status; negative: killed by that signal */
	bool ours;		/* a "useonce: " line on stderr expected */
};

static const struct cli_status_case cli_status_cases[] = {
	{ { "sh", "-c", "exit 0" }, 0, false },
	{ { "sh", "-c", "exit 1" }, 1, false },
	{ { "sh", "-c", "exit 42" }, 42, false },
	{ { "false" }, 1, false },
	{ { "sh", "-c", "kill -TERM $$" }, -SIGTERM, false },
	{ { "uotest-no-such-command" }, 127, true },
	{ { "/nonexistent/uotest/cmd" }, 127, true },
	{ { "@NOEXEC" }, 126, true },
	{ { "@DIR" }, 126, true },
};

#define CLI_NSTATUS_CASES	(sizeof(cli_status_cases) / sizeof(cli_status_cases[0]))

START_TEST(test_status)
{
	const struct cli_status_case *c = &cli_status_cases[_i];
	const char *argv[6] = { cli_useonce() };
	char noexec[PATH_MAX], dir[PATH_MAX], what[256] = "useonce";
	static struct cli_out o;
	int i;

	uot_scratch_path(noexec, sizeof(noexec), "uotest-not-executable");
	uot_scratch_path(dir, sizeof(dir), "uotest-a-directory");
	ck_assert_msg(cli_write_file(noexec, "#!/bin/sh\nexit 0\n", 0644) == 0, "%s: %s", noexec,
		      strerror(errno));
	ck_assert_msg(mkdir(dir, 0755) == 0 || errno == EEXIST, "%s: %s", dir, strerror(errno));
	for (i = 0; i < 4 && c->argv[i]; i++) {
		const char *a = c->argv[i];

		argv[i + 1] = !strcmp(a, "@NOEXEC") ? noexec : !strcmp(a, "@DIR") ? dir : a;
		snprintf(what + strlen(what), sizeof(what) - strlen(what), " %s", a);
	}
	cli_run(argv, NULL, &o);
	if (c->status < 0)
		ck_assert_msg(o.status >= 0 && WIFSIGNALED(o.status) &&
			      WTERMSIG(o.status) == -c->status,
			      "%s: %s, expected killed by signal %d", what,
			      uot_status_str(o.status), -c->status);
	else
		ck_assert_msg(cli_exit(&o) == c->status, "%s: %s, expected exit %d; stderr: %s",
			      what, uot_status_str(o.status), c->status, o.err);
	if (c->ours)
		ck_assert_msg(!strncmp(o.err, "useonce: ", 9) && strstr(o.err, argv[1]),
			      "%s: stderr should be one useonce: line naming the command, is: %s",
			      what, o.err);
	else
		ck_assert_msg(!strstr(o.err, "useonce"), "%s: useonce said: %s", what, o.err);
}
END_TEST

/* ---- usage errors ---- */

static const char *const cli_bad_args[][3] = {
	{ "--nope" }, { "-x" }, { "-nx" }, { "--read-only=yes" }, { "-t" }, { "--threshold" },
	{ "-t", "1M" }, { "-t", "8X" }, { "-t", "" }, { "-t", "M" }, { "-t", "-8M" },
	{ "-t", "99999999999999999999" }, { "-t", "2048T" }, { "--window=1048575" },
	{ "-w", "abc" }, { "-g", "sideways" }, { "-g", "" }, { "--guard=Read" },
	{ "-r", "5w" }, { "-r", "" }, { "-r", "-1" }, { "--reuse=10 m" },
	{ "--stats=" }, { "-T", "" }, { "-c", "/nonexistent/uotest.conf" }, { "-c", "@DIR" },
	{ "-c", "" }, { "--check" }, { NULL },
};

#define CLI_NBAD	(sizeof(cli_bad_args) / sizeof(cli_bad_args[0]))

START_TEST(test_usage_error)
{
	const char *const *bad = cli_bad_args[_i];
	const char *argv[8] = { cli_useonce() };
	char what[256] = "useonce";
	static struct cli_out o;
	int n = 1, i;

	for (i = 0; i < 3 && bad[i]; i++) {
		argv[n++] = strcmp(bad[i], "@DIR") ? bad[i] : uot_scratch();
		snprintf(what + strlen(what), sizeof(what) - strlen(what), " '%s'", bad[i]);
	}
	/* No arguments at all: "no command given". */
	if (bad[0]) {
		argv[n++] = "sh";
		argv[n++] = "-c";
		argv[n++] = "echo the command ran";
	}
	argv[n] = NULL;
	cli_run(argv, NULL, &o);
	ck_assert_msg(cli_exit(&o) == 2, "%s: %s, expected exit 2; stderr: %s", what,
		      uot_status_str(o.status), o.err);
	ck_assert_msg(o.out[0] == '\0', "%s: something ran or printed on stdout: %s", what, o.out);
	ck_assert_msg(!strncmp(o.err, "useonce: ", 9) && strstr(o.err, "\nTry 'useonce --help'.\n"),
		      "%s: stderr should say what is wrong in a useonce: line, is: %s", what, o.err);
	ck_assert_msg(strchr(o.err, '\n') + 1 + strlen("Try 'useonce --help'.") ==
		      strrchr(o.err, '\n'),
		      "%s: more than two lines on stderr: %s", what, o.err);
}
END_TEST

/* ---- help and version ---- */

/* Every long option, as the man page and --help must show it. */
static const char *const cli_long_options[] = {
	"--threshold", "--window", "--guard", "--read-only", "--write-only", "--reuse",
	"--stats", "--trace", "--dry-run", "--config", "--disable", "--check", "--help",
	"--version",
};
static const char *const cli_short_options[] = {
	"-t", "-w", "-g", "-r", "-s", "-T", "-N", "-c", "-n", "-h", "-V",
};

#define CLI_NLONG	(sizeof(cli_long_options) / sizeof(cli_long_options[0]))
#define CLI_NSHORT	(sizeof(cli_short_options) / sizeof(cli_short_options[0]))

START_TEST(test_help)
{
	const char *const forms[] = { "--help", "-h" };
	static struct cli_out o;
	size_t f, i;

	for (f = 0; f < 2; f++) {
		const char *argv[] = { cli_useonce(), forms[f], "sh", "-c", "echo the command ran",
				       NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "useonce %s: %s", forms[f],
			      uot_status_str(o.status));
		ck_assert_msg(o.err[0] == '\0', "useonce %s wrote on stderr: %s", forms[f], o.err);
		ck_assert_msg(!strncmp(o.out, "Usage: useonce ", 15), "useonce %s printed: %s",
			      forms[f], o.out);
		ck_assert_msg(!strstr(o.out, "the command ran"), "useonce %s ran the command",
			      forms[f]);
		for (i = 0; i < CLI_NLONG; i++)
			ck_assert_msg(strstr(o.out, cli_long_options[i]),
				      "useonce --help does not mention %s", cli_long_options[i]);
	}
}
END_TEST

START_TEST(test_version)
{
	const char *const forms[] = { "--version", "-V" };
	char want[PATH_MAX + 64];
	static struct cli_out o;
	size_t f;

	for (f = 0; f < 2; f++) {
		const char *argv[] = { cli_useonce(), forms[f], NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "useonce %s: %s", forms[f],
			      uot_status_str(o.status));
		ck_assert_msg(o.err[0] == '\0', "useonce %s wrote on stderr: %s", forms[f], o.err);
		uot_sfmt(want, sizeof(want), "useonce %s\nlibrary: %s\n", USEONCE_VERSION, cli.lib);
		ck_assert_msg(!strcmp(o.out, want), "useonce %s printed '%s', expected '%s'",
			      forms[f], o.out, want);
	}
}
END_TEST

/* ---- --check ---- */

/*
 * --check lists every problem of the files and variables with the
 * library's words, one line each, and exits 1; 0 when there is none.
 * The system file is the real one (tests never write /etc): its lines are
 * tolerated, and the clean case is asserted only when it has no problem.
 */
START_TEST(test_check)
{
	static const char *const want[] = {
		"@:1: threshold = 8x: not a size (try 32M); ignored\n",
		"@:2: what: unknown key (threshold, window, guard, reuse, enable, never, always); ignored\n",
		"@:4: never = relative: not an absolute path (or ~/...); ignored\n",
		"useonce: USEONCE_WINDOW=1: out of range (2M..1P); ignored\n",
		"useonce: USEONCE_TRESHOLD: not a variable libuseonce reads\n",
		"useonce: user file @: read\n",
	};
	char bad[PATH_MAX], line[PATH_MAX + 128], sys_problems[64];
	const char *env[] = { "USEONCE_WINDOW=1", "USEONCE_TRESHOLD=8M", "USEONCE_GUARD=read",
			      NULL };
	static struct cli_out o;
	unsigned sys_n = 0;
	const char *p;
	size_t i;

	ck_assert_msg(!uot_skip_reason()[0], "no scratch directory: %s", uot_skip_reason());
	/* Problems of this machine's system file, if it has any. */
	{
		const char *argv[] = { cli_useonce(), "-c", cli.conf, "--check", NULL };

		cli_run(argv, NULL, &o);
		p = strstr(o.out, "; ");
		ck_assert_msg(o.err[0] == '\0', "--check wrote on stderr: %s", o.err);
		ck_assert_msg(p && sscanf(strrchr(o.out, ';'), "; %u problem", &sys_n) == 1,
			      "no summary line: %s", o.out);
		if (sys_n == 0)
			ck_assert_msg(cli_exit(&o) == 0, "--check of a good file: %s:\n%s",
				      uot_status_str(o.status), o.out);
		else
			printf("cli: check: the system file has %u problems: not asserting a clean run\n",
			       sys_n);
	}
	uot_scratch_path(bad, sizeof(bad), "bad.conf");
	cli_write_file(bad, "threshold = 8x\nwhat = 3\n[program nothing-here]\nnever = relative\n",
		       0644);
	{
		const char *argv[] = { cli_useonce(), "-c", bad, "--check", NULL };

		cli_run(argv, env, &o);
		ck_assert_msg(cli_exit(&o) == 1, "--check of a bad config: %s:\n%s",
			      uot_status_str(o.status), o.out);
		ck_assert_msg(o.err[0] == '\0', "--check wrote on stderr: %s", o.err);
		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			p = strchr(want[i], '@');
			if (p)
				uot_sfmt(line, sizeof(line), "%.*s%s%s", (int)(p - want[i]), want[i],
					 bad, p + 1);
			else
				uot_sfmt(line, sizeof(line), "%s", want[i]);
			ck_assert_msg(strstr(o.out, line), "--check does not say '%s' in:\n%s", line,
				      o.out);
		}
		/* USEONCE_CONFIG, set by -c, is the fourth variable. */
		uot_sfmt(sys_problems, sizeof(sys_problems), "; %u problems\n", sys_n + 5);
		ck_assert_msg(strstr(o.out, "useonce: 4 USEONCE_ variables") &&
			      strstr(o.out, sys_problems), "summary wrong:\n%s", o.out);
	}
}
END_TEST

/*
 * --check says where the record of recent streams lives without
 * XDG_RUNTIME_DIR, makes nothing, and calls a useonce-UID it would refuse a
 * problem (the library passes it over without a word): _i 0 none yet, 1
 * ours and private, 2 open to others, 3 a symbolic link, 4 another user's
 * (root only); 5 an XDG_RUNTIME_DIR of another user's, passed over for a
 * fallback that is fine; 6 open to others, but USEONCE_REUSE=0: no record
 * is wanted, so none is no problem.
 */
#define CLI_NPRIVATE 7
START_TEST(test_check_private)
{
	static const char *const name[CLI_NPRIVATE] = {
		"none yet", "ours", "open to others", "a link", "another user's",
		"a runtime directory of another user's", "no record wanted",
	};
	static const char *const said[CLI_NPRIVATE] = {
		"(the directory is made, mode 0700, when first needed)", "/useonce-streams\n",
		": open to group or others (not mode 0700); no record of recent streams",
		": a symbolic link (never followed); no record of recent streams",
		": another user's; no record of recent streams", ": another user's; passed over",
		"useonce: record of recent streams: off (reuse 0)\n",
	};
	char tmp[PATH_MAX], dir[PATH_MAX + 32], run[PATH_MAX], tmp_env[PATH_MAX + 8],
	     xdg_env[PATH_MAX + 32], run_user[64];
	const char *env[] = { tmp_env, xdg_env, _i == 6 ? "USEONCE_REUSE=0" : NULL, NULL };
	const char *argv[] = { cli_useonce(), "--check", NULL };
	static struct cli_out o;
	struct stat st;
	const char *line;
	bool problem = _i >= 2 && _i <= 4;

	ck_assert_msg(!uot_skip_reason()[0], "no scratch directory: %s", uot_skip_reason());
	snprintf(run_user, sizeof(run_user), "/run/user/%u", (unsigned)geteuid());
	if (stat(run_user, &st) == 0) {
		printf("cli: check_private: %s exists, the library takes it first: passed over\n",
		       run_user);
		return;
	}
	if (_i == 4 && geteuid() != 0) {
		printf("cli: check_private: not root: cannot give a directory to another user\n");
		return;
	}
	uot_scratch_path(tmp, sizeof(tmp), "private");
	uot_sh("rm -rf '%s'", tmp);
	ck_assert_int_eq(mkdir(tmp, 0700), 0);
	uot_sfmt(dir, sizeof(dir), "%s/useonce-%u", tmp, (unsigned)geteuid());
	uot_sfmt(tmp_env, sizeof(tmp_env), "TMPDIR=%s", tmp);
	/* Empty: the library and --check both take it as none. */
	uot_sfmt(xdg_env, sizeof(xdg_env), "XDG_RUNTIME_DIR=");
	switch (_i) {
	case 1:
		ck_assert_int_eq(mkdir(dir, 0700), 0);
		break;
	case 2:
	case 6:
		ck_assert_int_eq(mkdir(dir, 0700), 0);
		ck_assert_int_eq(chmod(dir, 0755), 0);
		break;
	case 3:
		ck_assert_int_eq(symlink(tmp, dir), 0);
		break;
	case 4:
		ck_assert_int_eq(mkdir(dir, 0700), 0);
		ck_assert_int_eq(chown(dir, 65534, 65534), 0);
		break;
	case 5:
		uot_scratch_path(run, sizeof(run), "private/run");
		ck_assert_int_eq(mkdir(run, 0700), 0);
		ck_assert_int_eq(mkdir(dir, 0700), 0);
		if (geteuid() == 0)
			ck_assert_int_eq(chown(run, 65534, 65534), 0);
		else
			ck_assert_int_eq(chmod(run, 0755), 0);
		uot_sfmt(xdg_env, sizeof(xdg_env), "XDG_RUNTIME_DIR=%s", run);
		break;
	}
	cli_run(argv, env, &o);
	/* The line that says where the record is, or that there is none. */
	line = strstr(o.out, "record of recent streams");
	while (line && line > o.out && line[-1] != '\n')
		line--;
	printf("cli: check_private: %s: %.*s\n", name[_i], line ? (int)strcspn(line, "\n") : 0,
	       line ? line : "");
	ck_assert_msg(cli_exit(&o) == (problem ? 1 : 0), "%s: --check %s:\n%s", name[_i],
		      uot_status_str(o.status), o.out);
	ck_assert_msg(strstr(o.out, said[_i]), "%s: --check does not say '%s':\n%s", name[_i],
		      said[_i], o.out);
	if (_i == 5)
		ck_assert_msg(!strstr(o.out, "problem\n"), "passed over counted as a problem");
	if (_i == 0)
		ck_assert_msg(lstat(dir, &st) != 0, "--check made %s", dir);
	uot_sh("rm -rf '%s'", tmp);
}
END_TEST

/* ---- install ---- */

/* make -C SRCDIR B=... DESTDIR=stage [vars] TARGET, quietly; 0 or -1 and 'why'. */
static int cli_make(const char *target, const char *stage, const char *const *vars,
		    char *why, size_t size, struct cli_out *o)
{
	char b[PATH_MAX + 8], destdir[PATH_MAX + 16], conf[PATH_MAX + 16];
	const char *argv[16] = { "make", "-C", uot_srcdir(), "--no-print-directory", b,
				 destdir, conf };
	int n = 7;

	snprintf(b, sizeof(b), "B=%s", cli.bdir);
	snprintf(destdir, sizeof(destdir), "DESTDIR=%s", stage);
	snprintf(conf, sizeof(conf), "CONF_SRC=%s", cli.conf_src);
	while (vars && *vars && n < 14)
		argv[n++] = *vars++;
	argv[n++] = target;
	argv[n] = NULL;
	cli_run(argv, NULL, o);
	if (cli_exit(o) == 0)
		return 0;
	snprintf(why, size, "make %s DESTDIR=%s: %s\n%.2000s%.2000s", target, stage,
		 uot_status_str(o->status), o->out, o->err);
	return -1;
}

/* Every file (not directory) under 'root', as "path mode\n" lines relative to it, sorted. */
static char cli_files_buf[16384];
static const char *cli_files_root;

static int cli_add_file(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	size_t len = strlen(cli_files_buf);

	(void)ftw;
	if (type == FTW_D || type == FTW_DP)
		return 0;
	snprintf(cli_files_buf + len, sizeof(cli_files_buf) - len, "%s %04o\n",
		 path + strlen(cli_files_root), (unsigned)(sb->st_mode & 07777));
	return 0;
}

static int cli_cmp_lines(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *cli_files(const char *root)
{
	static char sorted[sizeof(cli_files_buf)];
	char *lines[256], *p, *save = NULL;
	size_t n = 0, i;

	cli_files_buf[0] = sorted[0] = '\0';
	cli_files_root = root;
	nftw(root, cli_add_file, 16, FTW_PHYS);
	for (p = strtok_r(cli_files_buf, "\n", &save); p && n < 256;
	     p = strtok_r(NULL, "\n", &save))
		lines[n++] = p;
	qsort(lines, n, sizeof(lines[0]), cli_cmp_lines);
	for (i = 0; i < n; i++)
		snprintf(sorted + strlen(sorted), sizeof(sorted) - strlen(sorted), "%s\n", lines[i]);
	return sorted;
}

static void cli_need_stage(void)
{
	ck_assert_msg(!uot_skip_reason()[0], "no scratch directory: %s", uot_skip_reason());
	ck_assert_msg(!cli.stage_why[0], "%s", cli.stage_why);
}

/* What a default `make install` puts, with the sample config. */
static const char cli_default_files[] =
	"/etc/useonce.conf 0644\n"
	"/usr/local/bin/useonce 0755\n"
	"/usr/local/lib/libuseonce.so 0644\n"
	"/usr/local/share/man/man1/useonce.1 0644\n"
	"/usr/local/share/man/man7/libuseonce.7 0644\n";

START_TEST(test_install_files)
{
	cli_need_stage();
	ck_assert_msg(!strcmp(cli_files(cli.stage), cli_default_files),
		      "make install DESTDIR=%s installed:\n%sexpected:\n%s", cli.stage,
		      cli_files(cli.stage), cli_default_files);
}
END_TEST

/* The installed command, run from the staging tree, preloads the staged library. */
START_TEST(test_install_run)
{
	char useonce[PATH_MAX], lib[PATH_MAX], data[PATH_MAX], trace[PATH_MAX], traced[8192];
	char want[PATH_MAX + 32];
	static struct cli_out o;

	cli_need_stage();
	uot_sfmt(useonce, sizeof(useonce), "%s/usr/local/bin/useonce", cli.stage);
	uot_sfmt(lib, sizeof(lib), "%s" CLI_DEFAULT_LIB, cli.stage);

	{
		const char *argv[] = { useonce, "cat", "/proc/self/maps", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "%s cat: %s: %s", useonce,
			      uot_status_str(o.status), o.err);
		ck_assert_msg(strstr(o.out, lib), "the staged useonce did not load %s:\n%s", lib,
			      o.out);
		ck_assert_msg(!strstr(o.out, cli.lib), "the staged useonce loaded the build's %s",
			      cli.lib);
	}
	{
		const char *argv[] = { useonce, "--version", NULL };

		cli_run(argv, NULL, &o);
		uot_sfmt(want, sizeof(want), "library: %s\n", lib);
		ck_assert_msg(cli_exit(&o) == 0 && strstr(o.out, want),
			      "%s --version: %s, printed '%s', expected '%s'", useonce,
			      uot_status_str(o.status), o.out, want);
	}
	/* And the library works from there: a cat of a 16 MiB file is a stream at -t 2M. */
	uot_scratch_path(data, sizeof(data), "install-run.data");
	uot_scratch_path(trace, sizeof(trace), "install-run.trace");
	unlink(trace);
	ck_assert_msg(uot_make_file(data, 16 * UOT_MIB, 7) == 0, "%s", uot_why());
	{
		const char *argv[] = { useonce, "-t", "2M", "-w", "2M", "-T", trace, "cat", data,
				       NULL };

		cli_run(argv, NULL, &o);
		cli_slurp(trace, traced, sizeof(traced));
		unlink(data);
		ck_assert_msg(cli_exit(&o) == 0, "%s cat: %s: %s", useonce,
			      uot_status_str(o.status), o.err);
		ck_assert_msg(strstr(traced, "read stream"),
			      "the staged library traced no read stream for cat:\n%s", traced);
	}
}
END_TEST

/* A LIBDIR that is not PREFIX/lib, as the Debian package's: found in a staged tree too. */
START_TEST(test_install_private_libdir)
{
	static const char *const vars[] = { "PREFIX=/usr", "LIBDIR=" CLI_DEB_LIBDIR, NULL };
	char stage[PATH_MAX], useonce[PATH_MAX], lib[PATH_MAX], why[8192];
	static struct cli_out o;

	cli_need_stage();
	uot_scratch_path(stage, sizeof(stage), "stage-private");
	ck_assert_msg(cli_make("install", stage, vars, why, sizeof(why), &o) == 0, "%s", why);
	uot_sfmt(useonce, sizeof(useonce), "%s/usr/bin/useonce", stage);
	uot_sfmt(lib, sizeof(lib), "%s" CLI_DEB_LIBDIR "/libuseonce.so", stage);
	{
		const char *argv[] = { useonce, "cat", "/proc/self/maps", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "%s cat: %s: %s", useonce,
			      uot_status_str(o.status), o.err);
		ck_assert_msg(strstr(o.out, lib), "the staged useonce did not load %s:\n%s", lib,
			      o.out);
	}
	ck_assert_msg(cli_make("uninstall", stage, vars, why, sizeof(why), &o) == 0, "%s", why);
	ck_assert_msg(!strcmp(cli_files(stage), "/etc/useonce.conf 0644\n") ||
		      !strcmp(cli_files(stage), ""), "make uninstall left:\n%s", cli_files(stage));
	uot_sfmt(lib, sizeof(lib), "%s" CLI_DEB_LIBDIR, stage);
	ck_assert_msg(access(lib, F_OK) != 0, "make uninstall left the private directory %s", lib);
}
END_TEST

/* A whole prefix moved elsewhere: the library is found in ../lib. */
START_TEST(test_relocated)
{
	char dir[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
	static struct cli_out o;

	cli_need_stage();
	uot_scratch_path(dir, sizeof(dir), "reloc");
	uot_sfmt(from, sizeof(from), "%s/usr/local", cli.stage);
	{
		const char *argv[] = { "cp", "-a", from, dir, NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "cp -a %s %s: %s", from, dir, o.err);
	}
	uot_sfmt(from, sizeof(from), "%s/bin/useonce", dir);
	uot_sfmt(to, sizeof(to), "%s/lib/libuseonce.so", dir);
	{
		const char *argv[] = { from, "cat", "/proc/self/maps", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0 && strstr(o.out, to),
			      "%s: %s; did not load %s:\n%s%s", from, uot_status_str(o.status), to,
			      o.out, o.err);
	}
	/* Nowhere to be found: 127, before anything runs. */
	if (access(CLI_DEFAULT_LIB, F_OK) == 0) {
		printf("cli: relocated: library missing: skipped: %s is installed here\n",
		       CLI_DEFAULT_LIB);
		return;
	}
	ck_assert_msg(unlink(to) == 0, "unlink %s: %s", to, strerror(errno));
	{
		const char *argv[] = { from, "sh", "-c", "echo the command ran", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 127 && !o.out[0] &&
			      !strncmp(o.err, "useonce: cannot find libuseonce.so", 34),
			      "without a library: %s, stdout '%s', stderr '%s'",
			      uot_status_str(o.status), o.out, o.err);
	}
}
END_TEST

/* Uninstall removes what install put, and never a config the admin changed. */
START_TEST(test_uninstall)
{
	char stage[PATH_MAX], conf[PATH_MAX], got[256], why[8192];
	static struct cli_out o;

	cli_need_stage();
	uot_scratch_path(stage, sizeof(stage), "stage-uninstall");
	ck_assert_msg(cli_make("install", stage, NULL, why, sizeof(why), &o) == 0, "%s", why);
	ck_assert_msg(!strcmp(cli_files(stage), cli_default_files), "installed:\n%s",
		      cli_files(stage));
	ck_assert_msg(cli_make("uninstall", stage, NULL, why, sizeof(why), &o) == 0, "%s", why);
	ck_assert_msg(!strcmp(cli_files(stage), ""), "make uninstall left:\n%s", cli_files(stage));

	/* The admin's changes survive a reinstall and an uninstall. */
	ck_assert_msg(cli_make("install", stage, NULL, why, sizeof(why), &o) == 0, "%s", why);
	uot_sfmt(conf, sizeof(conf), "%s/etc/useonce.conf", stage);
	ck_assert_msg(cli_write_file(conf, "threshold = 64M\n", 0644) == 0, "%s: %s", conf,
		      strerror(errno));
	ck_assert_msg(cli_make("install", stage, NULL, why, sizeof(why), &o) == 0, "%s", why);
	cli_slurp(conf, got, sizeof(got));
	ck_assert_msg(!strcmp(got, "threshold = 64M\n"), "make install overwrote a changed %s",
		      conf);
	ck_assert_msg(strstr(o.out, "was changed"), "make install did not say it kept %s:\n%s",
		      conf, o.out);
	ck_assert_msg(cli_make("uninstall", stage, NULL, why, sizeof(why), &o) == 0, "%s", why);
	ck_assert_msg(!strcmp(cli_files(stage), "/etc/useonce.conf 0644\n"),
		      "make uninstall with a changed config left:\n%s", cli_files(stage));
	unlink(conf);
}
END_TEST

/* ---- man pages ---- */

static const char *const cli_pages[] = { "cmd/useonce.1", "preload/libuseonce.7" };

#define CLI_NPAGES	(sizeof(cli_pages) / sizeof(cli_pages[0]))

START_TEST(test_man_warnings)
{
	char page[PATH_MAX];
	static struct cli_out o;
	size_t i;

	if (!cli_have("man") && !cli_have("groff")) {
		printf("cli: man_warnings: skipped: neither man (man-db) nor groff is installed\n");
		return;
	}
	for (i = 0; i < CLI_NPAGES; i++) {
		uot_sfmt(page, sizeof(page), "%s/%s", uot_srcdir(), cli_pages[i]);
		if (cli_have("man")) {
			const char *argv[] = { "man", "--warnings", "-E", "UTF-8", "-l", page,
					       NULL };
			const char *env[] = { "LC_ALL=C.UTF-8", "MANROFFSEQ=", "MANWIDTH=80",
					      "MANPAGER=cat", "PAGER=cat", NULL };

			cli_run(argv, env, &o);
			ck_assert_msg(cli_exit(&o) == 0 && !o.err[0] && strlen(o.out) > 500,
				      "man -l %s: %s, warnings:\n%s", page,
				      uot_status_str(o.status), o.err);
		}
		if (cli_have("groff")) {
			const char *argv[] = { "groff", "-ww", "-z", "-man", page, NULL };

			cli_run(argv, NULL, &o);
			ck_assert_msg(cli_exit(&o) == 0 && !o.err[0], "groff -ww %s: %s:\n%s",
				      page, uot_status_str(o.status), o.err);
		}
	}
}
END_TEST

/* The page's source with "\-" as "-", so option names can be looked for. */
static void cli_page_text(const char *rel, char *out, size_t size)
{
	char path[PATH_MAX], *r, *w;

	uot_sfmt(path, sizeof(path), "%s/%s", uot_srcdir(), rel);
	cli_slurp(path, out, size);
	ck_assert_msg(strlen(out) > 1000, "%s is missing or short", path);
	for (r = w = out; *r; r++)
		if (!(r[0] == '\\' && r[1] == '-'))
			*w++ = *r;
	*w = '\0';
}

START_TEST(test_man_options)
{
	static char text[64 * 1024];
	char word[64];
	size_t i;

	cli_page_text("cmd/useonce.1", text, sizeof(text));
	for (i = 0; i < CLI_NLONG; i++)
		ck_assert_msg(strstr(text, cli_long_options[i]), "useonce(1) does not document %s",
			      cli_long_options[i]);
	for (i = 0; i < CLI_NSHORT; i++) {
		uot_sfmt(word, sizeof(word), ".BR %s \", \"", cli_short_options[i]);
		ck_assert_msg(strstr(text, word), "useonce(1) does not document %s",
			      cli_short_options[i]);
	}
	ck_assert_msg(strstr(text, ".SH EXIT STATUS") && strstr(text, "126") &&
		      strstr(text, "127"), "useonce(1) has no exit statuses");
}
END_TEST

/* The page's ENVIRONMENT section has an entry (a .TP tag) for 'name'. */
static bool cli_env_entry(const char *page, const char *name)
{
	const char *sec = strstr(page, "\n.SH ENVIRONMENT\n"), *end, *p;
	size_t len = strlen(name);

	if (!sec)
		return false;
	end = strstr(sec + 1, "\n.SH ");
	for (p = sec; (p = strstr(p + 1, "\n.TP\n")) && (!end || p < end); ) {
		const char *tag = p + 5, *word = strchr(tag, ' ');

		if (word && !strncmp(word + 1, name, len) && strchr("= \n", word[1 + len]) &&
		    word < strchr(tag, '\n'))
			return true;
	}
	return false;
}

/* libuseonce(7) documents every variable of useonce.h, and those of the config work. */
START_TEST(test_man_variables)
{
	static char text[64 * 1024], header[64 * 1024], page1[64 * 1024];
	static const char *const more[] = { "USEONCE_STATS", "USEONCE_DRYRUN", "USEONCE_CONFIG" };
	char path[PATH_MAX], name[64];
	const char *p;
	int found = 0;
	size_t i;

	cli_page_text("preload/libuseonce.7", text, sizeof(text));
	cli_page_text("cmd/useonce.1", page1, sizeof(page1));
	uot_sfmt(path, sizeof(path), "%s/include/useonce.h", uot_srcdir());
	cli_slurp(path, header, sizeof(header));
	for (p = header; (p = strstr(p, "\"USEONCE_")); p++) {
		size_t n = strcspn(p + 1, "\"");

		uot_sfmt(name, sizeof(name), "%.*s", (int)n, p + 1);
		ck_assert_msg(cli_env_entry(text, name), "libuseonce(7) has no entry for %s", name);
		ck_assert_msg(strstr(page1, name), "useonce(1) does not mention %s", name);
		found++;
	}
	ck_assert_msg(found >= 6, "found only %d variables in %s", found, path);
	for (i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		ck_assert_msg(cli_env_entry(text, more[i]) && strstr(page1, more[i]),
			      "a page does not document %s", more[i]);
	ck_assert_msg(strstr(text, "[program ") && strstr(text, "never") && strstr(text, "always"),
		      "libuseonce(7) has no config file format");
}
END_TEST

/* ---- examples ---- */

static void cli_example(const char *rel, char *out, size_t size)
{
	char path[PATH_MAX];

	uot_sfmt(path, sizeof(path), "%s/examples/%s", uot_srcdir(), rel);
	cli_slurp(path, out, size);
	ck_assert_msg(out[0], "%s is missing or empty", path);
}

/* The library path an example names must be where a default install puts it. */
static void cli_check_lib_path(const char *example, const char *path)
{
	char staged[PATH_MAX];

	ck_assert_msg(!strcmp(path, CLI_DEFAULT_LIB), "%s names %s, make install puts %s",
		      example, path, CLI_DEFAULT_LIB);
	cli_need_stage();
	uot_sfmt(staged, sizeof(staged), "%s%s", cli.stage, path);
	ck_assert_msg(access(staged, R_OK) == 0, "%s names %s, which make install did not make",
		      example, path);
}

START_TEST(test_example_shell)
{
	static const char *const shells[] = { "sh", "bash" };
	char script[PATH_MAX], path_with[PATH_MAX + 64];
	static struct cli_out o;
	size_t i;

	uot_sfmt(script, sizeof(script), "%s/examples/useonce.sh", uot_srcdir());
	uot_sfmt(path_with, sizeof(path_with), "PATH=%s:/usr/bin:/bin", uot_build_dir());
	for (i = 0; i < sizeof(shells) / sizeof(shells[0]); i++) {
		const char *argv[] = { shells[i], "-c",
				       ". \"$0\" && type cp && dd if=/proc/self/maps status=none",
				       script, NULL };
		const char *env_with[] = { path_with, NULL };
		const char *env_without[] = { "PATH=/usr/bin:/bin", NULL };

		if (!cli_have(shells[i])) {
			printf("cli: example_shell: %s: skipped: not installed\n", shells[i]);
			continue;
		}
		cli_run(argv, env_with, &o);
		ck_assert_msg(cli_exit(&o) == 0, "%s: %s: %s", shells[i], uot_status_str(o.status),
			      o.err);
		ck_assert_msg(strstr(o.out, "function"), "%s: cp is not a function: %s", shells[i],
			      o.out);
		ck_assert_msg(strstr(o.out, cli.lib), "%s: dd did not run under the library:\n%s",
			      shells[i], o.out);
		/* Without useonce in PATH the shell is left as it was. */
		if (access("/usr/bin/useonce", F_OK) == 0 || access("/bin/useonce", F_OK) == 0)
			continue;
		cli_run(argv, env_without, &o);
		ck_assert_msg(cli_exit(&o) == 0 && !strstr(o.out, "function") &&
			      !strstr(o.out, "libuseonce"),
			      "%s without useonce: %s:\n%s%s", shells[i], uot_status_str(o.status),
			      o.out, o.err);
	}
}
END_TEST

START_TEST(test_example_environment_d)
{
	static const char gen[] =
		"/usr/lib/systemd/user-environment-generators/30-systemd-environment-d-generator";
	static char text[8192];
	char dir[PATH_MAX], file[PATH_MAX], value[PATH_MAX], xdg[PATH_MAX + 32];
	static struct cli_out o;
	const char *line;
	int vars = 0;

	cli_example("systemd/environment.d-60-useonce.conf", text, sizeof(text));
	/* By hand: KEY=VALUE lines, comments, blank lines; nothing else. */
	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		size_t len = strcspn(line, "\n"), key = strspn(line,
			"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

		if (len == 0 || line[0] == '#')
			continue;
		ck_assert_msg(key > 0 && key < len && line[key] == '=',
			      "environment.d example: not KEY=VALUE: %.*s", (int)len, line);
		vars++;
	}
	ck_assert_msg(vars >= 1, "the environment.d example sets nothing");
	ck_assert_msg(cli_var(text, "LD_PRELOAD", value, sizeof(value)),
		      "the environment.d example sets no LD_PRELOAD");
	cli_check_lib_path("environment.d-60-useonce.conf", value);

	/* As systemd reads it, when its generator is here. */
	if (access(gen, X_OK) != 0) {
		printf("cli: example_environment_d: systemd's generator: skipped: no %s\n", gen);
		return;
	}
	uot_scratch_path(dir, sizeof(dir), "xdg/environment.d");
	{
		const char *argv[] = { "mkdir", "-p", dir, NULL };

		cli_run(argv, NULL, &o);
	}
	uot_sfmt(file, sizeof(file), "%s/60-useonce.conf", dir);
	ck_assert_msg(cli_write_file(file, text, 0644) == 0, "%s: %s", file, strerror(errno));
	uot_sfmt(xdg, sizeof(xdg), "XDG_CONFIG_HOME=%s", dir);
	*strrchr(xdg, '/') = '\0';
	{
		const char *argv[] = { gen, NULL };
		const char *env[] = { xdg, NULL };
		char want[PATH_MAX + 16];

		cli_run(argv, env, &o);
		uot_sfmt(want, sizeof(want), "LD_PRELOAD=%s\n", value);
		ck_assert_msg(cli_exit(&o) == 0 && strstr(o.out, want) && !o.err[0],
			      "%s: %s; expected %s in:\n%s%s", gen, uot_status_str(o.status), want,
			      o.out, o.err);
	}
}
END_TEST

START_TEST(test_example_desktop)
{
	static char text[8192];
	char path[PATH_MAX], stubdir[PATH_MAX], stub[PATH_MAX], film[PATH_MAX];
	char path_env[2 * PATH_MAX], exec[1024], *argv[16], *save = NULL, *w;
	static struct cli_out o;
	const char *line;
	int n = 0;

	cli_example("desktop/mpv.desktop", text, sizeof(text));
	uot_sfmt(path, sizeof(path), "%s/examples/desktop/mpv.desktop", uot_srcdir());
	if (cli_have("desktop-file-validate")) {
		const char *v[] = { "desktop-file-validate", path, NULL };

		cli_run(v, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0 && !o.out[0] && !o.err[0],
			      "desktop-file-validate %s: %s:\n%s%s", path,
			      uot_status_str(o.status), o.out, o.err);
	} else {
		printf("cli: example_desktop: validation: skipped: desktop-file-validate "
		       "(desktop-file-utils) is not installed\n");
	}

	/* Its Exec line, %U a film, run with a stub player that shows what it got. */
	line = strstr(text, "\nExec=");
	ck_assert_msg(line != NULL, "%s has no Exec line", path);
	uot_sfmt(exec, sizeof(exec), "%.*s", (int)strcspn(line + 6, "\n"), line + 6);
	uot_scratch_path(film, sizeof(film), "film.mkv");
	ck_assert_msg(cli_write_file(film, "not really a film\n", 0644) == 0, "%s", film);
	for (w = strtok_r(exec, " ", &save); w && n < 15; w = strtok_r(NULL, " ", &save))
		argv[n++] = strcmp(w, "%U") ? w : film;
	argv[n] = NULL;
	ck_assert_msg(n >= 2 && !strcmp(argv[0], "useonce"), "Exec does not start with useonce");

	uot_scratch_path(stubdir, sizeof(stubdir), "stub-bin");
	ck_assert_msg(mkdir(stubdir, 0755) == 0 || errno == EEXIST, "%s", stubdir);
	uot_sfmt(stub, sizeof(stub), "%s/%s", stubdir, argv[1]);
	ck_assert_msg(cli_write_file(stub, "#!/bin/sh\nfor a; do echo \"arg: $a\"; done\n"
				     "grep -m1 libuseonce /proc/$$/maps\n", 0755) == 0, "%s", stub);
	uot_sfmt(path_env, sizeof(path_env), "PATH=%s:%s:/usr/bin:/bin", stubdir, uot_build_dir());
	{
		const char *env[] = { path_env, NULL };
		char want[PATH_MAX + 16];

		cli_run((const char *const *)argv, env, &o);
		ck_assert_msg(cli_exit(&o) == 0, "Exec line: %s: %s", uot_status_str(o.status),
			      o.err);
		uot_sfmt(want, sizeof(want), "arg: %s\n", film);
		ck_assert_msg(strstr(o.out, want) && strstr(o.out, "arg: --\n"),
			      "the player did not get the film:\n%s", o.out);
		ck_assert_msg(strstr(o.out, cli.lib), "the player did not load the library:\n%s",
			      o.out);
	}
}
END_TEST

START_TEST(test_example_service)
{
	static char text[8192];
	char units[PATH_MAX], dropdir[PATH_MAX], unit[PATH_MAX], drop[PATH_MAX];
	char env_path[PATH_MAX + 32], value[PATH_MAX];
	static struct cli_out o;
	const char *p;

	cli_example("systemd/backup.service.d-useonce.conf", text, sizeof(text));
	p = strstr(text, "\nEnvironment=LD_PRELOAD=");
	ck_assert_msg(p != NULL, "the drop-in sets no LD_PRELOAD");
	p += strlen("\nEnvironment=LD_PRELOAD=");
	uot_sfmt(value, sizeof(value), "%.*s", (int)strcspn(p, "\n"), p);
	cli_check_lib_path("backup.service.d-useonce.conf", value);

	if (!cli_have("systemd-analyze")) {
		printf("cli: example_service: skipped: systemd-analyze is not installed\n");
		return;
	}
	uot_scratch_path(units, sizeof(units), "units");
	uot_sfmt(dropdir, sizeof(dropdir), "%s/backup.service.d", units);
	{
		const char *argv[] = { "mkdir", "-p", dropdir, NULL };

		cli_run(argv, NULL, &o);
	}
	uot_sfmt(unit, sizeof(unit), "%s/backup.service", units);
	uot_sfmt(drop, sizeof(drop), "%s/useonce.conf", dropdir);
	ck_assert_msg(cli_write_file(unit, "[Unit]\nDescription=uotest backup\n\n[Service]\n"
				     "Type=oneshot\nExecStart=/bin/true\n", 0644) == 0, "%s", unit);
	ck_assert_msg(cli_write_file(drop, text, 0644) == 0, "%s", drop);
	uot_sfmt(env_path, sizeof(env_path), "SYSTEMD_UNIT_PATH=%s:", units);
	{
		const char *argv[] = { "systemd-analyze", "verify", unit, NULL };
		const char *env[] = { env_path, NULL };

		cli_run(argv, env, &o);
		ck_assert_msg(cli_exit(&o) == 0 && !o.err[0] && !o.out[0],
			      "systemd-analyze verify with the drop-in: %s:\n%s%s",
			      uot_status_str(o.status), o.out, o.err);
	}
}
END_TEST

START_TEST(test_example_ld_so_preload)
{
	static char text[16384];
	const char *p;
	char value[PATH_MAX];

	cli_example("ld.so.preload.md", text, sizeof(text));
	p = strstr(text, "\necho /");
	ck_assert_msg(p && strstr(p, " >> /etc/ld.so.preload"),
		      "ld.so.preload.md shows no line to add");
	p += strlen("\necho ");
	uot_sfmt(value, sizeof(value), "%.*s", (int)strcspn(p, " \n"), p);
	cli_check_lib_path("ld.so.preload.md", value);
	ck_assert_msg(strstr(text, "setuid") && strstr(text, "Undo"),
		      "ld.so.preload.md lacks its caveats");
}
END_TEST

/* ---- Debian package ---- */

static bool cli_deb_skip(char *why, size_t size)
{
	const char *e = getenv("UO_CLI_DEB");
	struct cli_out *o;
	bool skip = false;

	if (e && !strcmp(e, "0"))
		return snprintf(why, size, "UO_CLI_DEB=0"), true;
	if (!uot_is_root())
		return snprintf(why, size, "needs root (dpkg -i)"), true;
	if (!cli_have("dpkg-buildpackage") || !cli_have("dh"))
		return snprintf(why, size, "dpkg-buildpackage or debhelper is not installed"), true;
	o = malloc(sizeof(*o));
	ck_assert(o != NULL);
	{
		const char *argv[] = { "dpkg-query", "-W", "-f=${Status}", "useonce", NULL };

		cli_run(argv, NULL, o);
		if (strstr(o->out, "installed")) {
			snprintf(why, size, "a useonce package is installed here already");
			skip = true;
		}
	}
	free(o);
	if (!skip && access("/usr/bin/useonce", F_OK) == 0) {
		snprintf(why, size, "/usr/bin/useonce exists");
		skip = true;
	}
	return skip;
}

/*
 * The test runs in a child that may die half-way: the parent, at its end or
 * on a signal, purges the package if the mark says the child installed it.
 */
/* Paths named like us in the system's trees, less the source tree's: sorted lines. */
static void cli_ours_on_system(char *out, size_t size)
{
	static struct cli_out o;
	char cmd[PATH_MAX + 160];
	const char *argv[] = { "sh", "-c", cmd, NULL };

	/* uotest-: other test programs' scratch files, which come and go meanwhile. */
	snprintf(cmd, sizeof(cmd), "find /etc /usr /var /opt -xdev -iname '*useonce*' 2>/dev/null"
		 " | grep -v -e '^%s/' -e 'uotest-' | sort", uot_srcdir());
	cli_run(argv, NULL, &o);
	snprintf(out, size, "%s", o.out);
}

static void cli_deb_purge(void)
{
	if (!uot_suite_owner() || !cli.deb_mark[0] || access(cli.deb_mark, F_OK) != 0)
		return;
	if (system("dpkg --purge useonce >/dev/null 2>&1") == 0)
		unlink(cli.deb_mark);
	else
		fprintf(stderr, "check_cli: could not purge the test's useonce package\n");
}

START_TEST(test_debian)
{
	static struct cli_out o;
	static char listed[CLI_OUT_MAX], before[CLI_OUT_MAX], after[CLI_OUT_MAX];
	char why[512], top[PATH_MAX], tree[PATH_MAX], cmd[4 * PATH_MAX], deb[PATH_MAX];
	char data[PATH_MAX], lib[PATH_MAX];
	char *paths[256], *save = NULL, *p;
	bool has_conf;
	size_t n = 0, i;
	double t0 = (double)time(NULL);

	if (cli_deb_skip(why, sizeof(why))) {
		printf("cli: debian: skipped: %s\n", why);
		return;
	}
	cli_need_stage();
	/* dpkg-buildpackage writes its .deb into ..: build a copy, in a directory of ours. */
	uot_scratch_path(top, sizeof(top), "deb");
	uot_sfmt(tree, sizeof(tree), "%s/libuseonce-%s", top, USEONCE_VERSION);
	uot_sfmt(cmd, sizeof(cmd), "mkdir -p '%s' && tar -C '%s' --exclude=./.git "
		"--exclude='./build*' --exclude=./bench/results --exclude='./debian/useonce' "
		"--exclude='./debian/.debhelper' -cf - . | tar -C '%s' -xf -", tree, uot_srcdir(),
		tree);
	{
		const char *argv[] = { "sh", "-c", cmd, NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "copying the tree: %s", o.err);
	}
	uot_sfmt(deb, sizeof(deb), "%s/examples/useonce.conf", tree);
	has_conf = access(deb, F_OK) == 0;
	{
		const char *argv[] = { "dpkg-buildpackage", "-us", "-uc", "-b", NULL };
		const char *env[] = { "DEB_BUILD_OPTIONS=nocheck", NULL };

		cli_run_in(argv, env, tree, &o);
		ck_assert_msg(cli_exit(&o) == 0, "dpkg-buildpackage -us -uc -b: %s:\n%.3000s\n%.3000s",
			      uot_status_str(o.status), o.out, o.err);
	}
	printf("cli: debian: dpkg-buildpackage took %.0f s\n", (double)time(NULL) - t0);
	uot_sfmt(cmd, sizeof(cmd), "ls '%s'/useonce_%s_*.deb", top, USEONCE_VERSION);
	{
		const char *argv[] = { "sh", "-c", cmd, NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "no .deb in %s", top);
		uot_sfmt(deb, sizeof(deb), "%.*s", (int)strcspn(o.out, "\n"), o.out);
	}

	/* Install it. */
	cli_ours_on_system(before, sizeof(before));
	ck_assert_msg(cli_write_file(cli.deb_mark, "", 0644) == 0, "%s", cli.deb_mark);
	{
		const char *argv[] = { "dpkg", "-i", deb, NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "dpkg -i %s: %s:\n%s%s", deb,
			      uot_status_str(o.status), o.out, o.err);
	}
	{
		const char *argv[] = { "dpkg", "-L", "useonce", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "dpkg -L useonce: %s", o.err);
		memcpy(listed, o.out, sizeof(listed));
	}
	for (p = strtok_r(listed, "\n", &save); p && n < 256; p = strtok_r(NULL, "\n", &save))
		paths[n++] = p;
	ck_assert_msg(n > 5, "dpkg -L useonce lists %zu paths", n);

	/* It works: the command finds the packaged library, and guards cat. */
	{
		const char *argv[] = { "/usr/bin/useonce", "--version", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0 && strstr(o.out, "library: /usr/lib/"),
			      "useonce --version: %s: %s%s", uot_status_str(o.status), o.out, o.err);
		uot_sfmt(lib, sizeof(lib), "%.*s", (int)strcspn(strstr(o.out, "library: ") + 9, "\n"),
			strstr(o.out, "library: ") + 9);
		ck_assert_msg(strstr(lib, "/libuseonce/libuseonce.so"),
			      "the package's library is not in a private directory: %s", lib);
	}
	uot_scratch_path(data, sizeof(data), "deb-cat.txt");
	ck_assert_msg(cli_write_file(data, "the package works\n", 0644) == 0, "%s", data);
	{
		const char *argv[] = { "/usr/bin/useonce", "sh", "-c",
				       "cat \"$0\" && grep -m1 -o '/usr/lib/.*libuseonce.so' "
				       "/proc/self/maps", data, NULL };

		cli_run(argv, NULL, &o);
		uot_sfmt(cmd, sizeof(cmd), "the package works\n%s\n", lib);
		ck_assert_msg(cli_exit(&o) == 0 && !strcmp(o.out, cmd),
			      "useonce cat: %s, printed '%s', expected '%s'; %s",
			      uot_status_str(o.status), o.out, cmd, o.err);
	}
	if (has_conf) {
		const char *argv[] = { "dpkg-query", "-W", "-f=${Conffiles}", "useonce", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(strstr(o.out, "/etc/useonce.conf"),
			      "/etc/useonce.conf is not a conffile: '%s'", o.out);
	}

	/* Remove: the conffile stays; purge: nothing but directories others share. */
	{
		const char *argv[] = { "dpkg", "-r", "useonce", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "dpkg -r useonce: %s: %s", uot_status_str(o.status),
			      o.err);
	}
	ck_assert_msg(access("/usr/bin/useonce", F_OK) != 0, "dpkg -r left /usr/bin/useonce");
	ck_assert_msg(!has_conf || access("/etc/useonce.conf", F_OK) == 0,
		      "dpkg -r removed the conffile /etc/useonce.conf");
	{
		const char *argv[] = { "dpkg", "--purge", "useonce", NULL };

		cli_run(argv, NULL, &o);
		ck_assert_msg(cli_exit(&o) == 0, "dpkg --purge useonce: %s: %s",
			      uot_status_str(o.status), o.err);
		unlink(cli.deb_mark);
	}
	for (i = 0; i < n; i++) {
		struct stat st;

		if (lstat(paths[i], &st) != 0)
			continue;
		/* Left: /usr/bin and the like, which other packages own too. */
		ck_assert_msg(S_ISDIR(st.st_mode) && !strstr(paths[i], "useonce"),
			      "%s is left after dpkg --purge useonce", paths[i]);
	}
	/* Nor anything its scripts may have made. */
	cli_ours_on_system(after, sizeof(after));
	for (p = strtok_r(after, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		char line[PATH_MAX + 2];

		uot_sfmt(line, sizeof(line), "%s\n", p);
		ck_assert_msg(strstr(before, line), "%s is left after dpkg --purge useonce", p);
	}
	printf("cli: debian: build, install, use, remove and purge took %.0f s\n",
	       (double)time(NULL) - t0);
}
END_TEST

/* ---- fixtures and suites ---- */

/* Once, in the parent: a build of our own and a default install into a DESTDIR. */
static void cli_setup(void)
{
	static struct cli_out o;
	char stage[PATH_MAX];

	if (!uot_need_scratch()) {
		snprintf(cli.stage_why, sizeof(cli.stage_why), "%s", uot_why());
		return;
	}
	if (!realpath(uot_library(), cli.lib))
		snprintf(cli.lib, sizeof(cli.lib), "%s", uot_library());
	uot_scratch_path(cli.conf, sizeof(cli.conf), "cli.conf");
	cli_write_file(cli.conf, "# a config file for --config\nthreshold = 64M\n", 0644);
	uot_scratch_path(cli.conf_src, sizeof(cli.conf_src), "sample.conf");
	cli_write_file(cli.conf_src, "# stands for examples/useonce.conf\n", 0644);
	uot_scratch_path(cli.bdir, sizeof(cli.bdir), "b");
	uot_scratch_path(cli.deb_mark, sizeof(cli.deb_mark), "deb-installed");
	uot_scratch_path(stage, sizeof(stage), "stage");
	if (cli_make("install", stage, NULL, cli.stage_why, sizeof(cli.stage_why), &o) == 0)
		snprintf(cli.stage, sizeof(cli.stage), "%s", stage);
}

static void cli_add_loop(Suite *s, const char *name, const TTest *t, size_t n)
{
	TCase *tc = tcase_create(name);

	tcase_add_loop_test(tc, t, 0, (int)n);
	suite_add_tcase(s, tc);
}

static void cli_add(Suite *s, const char *name, const TTest *t, int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_test(tc, t);
	if (timeout)
		tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
}

int main(void)
{
	Suite *s;
	SRunner *sr;

	/* The test's Debian package, if still installed, is purged at the end. */
	uot_suite_begin("cli", cli_deb_purge);
	cli_setup();

	s = suite_create("command");
	cli_add_loop(s, "options", test_option, CLI_NOPT_CASES);
	cli_add(s, "no_option", test_no_option, 0);
	cli_add(s, "options_after_command", test_options_after_command, 0);
	cli_add_loop(s, "preload", test_preload, CLI_NPRELOAD_CASES);
	cli_add(s, "loaded", test_loaded, 0);
	cli_add_loop(s, "status", test_status, CLI_NSTATUS_CASES);
	cli_add_loop(s, "usage_error", test_usage_error, CLI_NBAD);
	cli_add(s, "help", test_help, 0);
	cli_add(s, "version", test_version, 0);
	cli_add(s, "check", test_check, 0);
	cli_add_loop(s, "check_private", test_check_private, CLI_NPRIVATE);
	sr = srunner_create(s);

	s = suite_create("install");
	cli_add(s, "files", test_install_files, 0);
	cli_add(s, "run", test_install_run, 60);
	cli_add(s, "private_libdir", test_install_private_libdir, 60);
	cli_add(s, "relocated", test_relocated, 0);
	cli_add(s, "uninstall", test_uninstall, 60);
	srunner_add_suite(sr, s);

	s = suite_create("man");
	cli_add(s, "warnings", test_man_warnings, 60);
	cli_add(s, "options", test_man_options, 0);
	cli_add(s, "variables", test_man_variables, 0);
	srunner_add_suite(sr, s);

	s = suite_create("examples");
	cli_add(s, "shell", test_example_shell, 0);
	cli_add(s, "environment_d", test_example_environment_d, 0);
	cli_add(s, "desktop", test_example_desktop, 0);
	cli_add(s, "service", test_example_service, 0);
	cli_add(s, "ld_so_preload", test_example_ld_so_preload, 0);
	srunner_add_suite(sr, s);

	s = suite_create("debian");
	cli_add(s, "package", test_debian, 600);
	srunner_add_suite(sr, s);

	return uot_check_runner(sr, false);
}
