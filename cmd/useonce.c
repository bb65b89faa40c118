/*
 * useonce: run a command with libuseonce preloaded.
 *
 *	useonce [options] [--] COMMAND [ARGS...]
 *	useonce [options] --check
 *
 * Options become the USEONCE_* variables the library reads, so the command
 * line overrides the environment, which overrides the config files.  Values
 * are checked here, by the library's rules and its settings table
 * (preload/conffile.c, linked in), so a typo is a usage error (status 2)
 * before anything runs rather than a warning in every process once it does.
 * The library is put first in LD_PRELOAD, unless one is there already; then
 * COMMAND is exec'ed, so its exit status is ours.  --check runs nothing: it
 * lists every problem of the configuration the library would read.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "useonce.h"
#include "conf.h"
#include "watch.h"

#ifndef UO_LIBDIR
#define UO_LIBDIR "/usr/local/lib"
#endif
#ifndef UO_SYSCONFDIR
#define UO_SYSCONFDIR "/etc"
#endif
#ifndef UO_BINDIR
#define UO_BINDIR "/usr/local/bin"
#endif
#define UO_LIBNAME "libuseonce.so"

/* Exit statuses of our own, as env(1), nice(1) and the shells use them. */
#define UO_EXIT_USAGE		2
#define UO_EXIT_CANNOT_RUN	126
#define UO_EXIT_NOT_FOUND	127

__attribute__((format(printf, 2, 3), noreturn))
static void uo_die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uo_vsay(fmt, ap);
	va_end(ap);
	if (status == UO_EXIT_USAGE)
		fputs("Try 'useonce --help'.\n", stderr);
	exit(status);
}

static void uo_usage(void)
{
	fputs("Usage: useonce [options] [--] COMMAND [ARGS...]\n"
	      "Run COMMAND with libuseonce preloaded, so that its big sequential reads and\n"
	      "writes do not push everyone else's data out of the page cache.\n"
	      "\n"
	      "  -t, --threshold SIZE  sequential bytes before a file counts as a stream (32M)\n"
	      "  -w, --window SIZE     bytes between two drops behind the stream (8M)\n"
	      "  -g, --guard WHICH     read, write or both (both)\n"
	      "      --read-only       guard reads only (= --guard read)\n"
	      "      --write-only      guard writes only (= --guard write)\n"
	      "  -r, --reuse SECONDS   a file streamed again within this stays cached\n"
	      "                        (600; also 90s, 10m, 2h, 1d; 0: off)\n"
	      "  -s, --stats[=DEST]    one summary line per process at exit, to stderr\n"
	      "                        (the default), a descriptor number or a file\n"
	      "  -T, --trace DEST      log every decision to stderr, a descriptor or a file\n"
	      "  -N, --dry-run         decide as usual but drop nothing; with --stats\n"
	      "                        (to stderr unless given) says what would have gone\n"
	      "  -c, --config FILE     read FILE instead of the user's config file\n"
	      "  -n, --disable         run with the library loaded but passive\n"
	      "  -p, --pid PID         watch a running process and its children from\n"
	      "                        outside, until they are gone (no COMMAND)\n"
	      "      --watch           watch COMMAND from outside instead of relying on\n"
	      "                        the library (the default for static and Go programs)\n"
	      "      --no-watch        never watch: only preload the library\n"
	      "      --check           list every problem of the configuration (config files\n"
	      "                        and USEONCE_* variables) the library would ignore\n"
	      "  -h, --help            show this help\n"
	      "  -V, --version         show the version and the library that would be used\n"
	      "\n"
	      "SIZE takes K, M, G, T suffixes (binary), at least 2M.  A file name given as\n"
	      "DEST or FILE is made absolute.  Options after COMMAND are COMMAND's.\n"
	      "Exit status: COMMAND's; 126 if it cannot be executed, 127 if it is not found\n"
	      "(or the library is not), 2 for a usage error; with --check, 0 if the\n"
	      "configuration has no problem, else 1.  See useonce(1), libuseonce(7).\n",
	      stdout);
}

static bool uo_all_digits(const char *s)
{
	return *s && s[strspn(s, "0123456789")] == '\0';
}

/*
 * A file name for the library, which wants it absolute: the command may
 * change directory, and so may every process it starts.  Returns a string
 * that lives until the next call: the caller puts it in the environment
 * (setenv copies it) at once.
 */
static const char *uo_absolute(const char *opt, const char *s)
{
	static char *out;
	char cwd[PATH_MAX];
	size_t len;

	if (s[0] == '/')
		return s;
	if (!getcwd(cwd, sizeof(cwd)))
		uo_die(UO_EXIT_USAGE, "%s '%s': cannot make it absolute: %s", opt, s,
		       strerror(errno));
	len = strlen(cwd) + strlen(s) + 2;
	free(out);
	out = malloc(len);
	if (!out)
		uo_die(UO_EXIT_USAGE, "out of memory");
	snprintf(out, len, "%s/%s", cwd, s);
	return out;
}

/* stderr, a descriptor number, or a file (made absolute). */
static const char *uo_check_dest(const char *opt, const char *s)
{
	if (!*s)
		uo_die(UO_EXIT_USAGE, "%s: empty destination (stderr, a descriptor or a file)", opt);
	if (!strcmp(s, "stderr") || uo_all_digits(s))
		return s;
	return uo_absolute(opt, s);
}

static const char *uo_check_config(const char *s)
{
	struct stat st;

	if (!*s)
		uo_die(UO_EXIT_USAGE, "--config: empty file name");
	if (stat(s, &st) != 0 || access(s, R_OK) != 0)
		uo_die(UO_EXIT_USAGE, "--config '%s': %s", s, strerror(errno));
	if (S_ISDIR(st.st_mode))
		uo_die(UO_EXIT_USAGE, "--config '%s': %s", s, strerror(EISDIR));
	return uo_absolute("--config", s);
}

/* Try dir/rel/libuseonce.so; out receives it, without "..", for LD_PRELOAD's readers. */
static bool uo_try_library(char *out, size_t size, const char *dir, const char *rel)
{
	char path[PATH_MAX];
	int len = snprintf(path, sizeof(path), "%s%s/" UO_LIBNAME, dir, rel);

	if (len <= 0 || (size_t)len >= sizeof(path) || access(path, R_OK) != 0)
		return false;
	if (size < PATH_MAX || !realpath(path, out))
		snprintf(out, size, "%s", path);
	return true;
}

/*
 * Where the library is, in this order:
 *  1. next to this program: a build tree;
 *  2. ROOT/LIBDIR when this program is ROOT/BINDIR: a tree installed with
 *     DESTDIR=ROOT, used before it is moved into place (plain ROOT is "",
 *     and this is the LIBDIR we were built for);
 *  3. ../lib beside our directory: a prefix moved elsewhere as a whole;
 *  4. the LIBDIR we were built for.
 * Returns false, out holding the last place tried, if none has it.
 */
static bool uo_find_library(char *out, size_t size)
{
	static const char bindir[] = UO_BINDIR;
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t blen = strlen(bindir), slen;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		slen = strlen(self);
		if (uo_try_library(out, size, self, ""))
			return true;
		if (slen >= blen && !strcmp(self + slen - blen, bindir)) {
			char root[PATH_MAX];

			snprintf(root, sizeof(root), "%.*s", (int)(slen - blen), self);
			if (uo_try_library(out, size, root, UO_LIBDIR))
				return true;
		}
		if (uo_try_library(out, size, self, "/../lib"))
			return true;
	}
	return uo_try_library(out, size, UO_LIBDIR, "");
}

static void uo_setenv(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0)
		uo_die(UO_EXIT_NOT_FOUND, "cannot set %s: %s", name, strerror(errno));
}

/* An LD_PRELOAD entry that loads a libuseonce already (ours, or another copy). */
static bool uo_is_ours(const char *entry, size_t len, const struct stat *lib)
{
	char path[PATH_MAX];
	const char *base;
	struct stat st;

	if (len == 0 || len >= sizeof(path))
		return false;
	memcpy(path, entry, len);
	path[len] = '\0';
	base = strrchr(path, '/');
	/* A bare name is searched for by the loader; a path that is not there loads nothing. */
	if (!base)
		return !strcmp(path, UO_LIBNAME);
	if (stat(path, &st) != 0)
		return false;
	return !strcmp(base + 1, UO_LIBNAME) ||
	       (st.st_dev == lib->st_dev && st.st_ino == lib->st_ino);
}

/*
 * The library goes first: its hooks then see the calls before any other
 * preloaded object's.  Two copies would guard every call twice, so an
 * LD_PRELOAD that has one already is left as it is.
 */
static void uo_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD"), *p;
	struct stat st;
	char *value;
	size_t len;

	/* The loader splits LD_PRELOAD on spaces and colons. */
	if (strpbrk(lib, " :"))
		uo_die(UO_EXIT_NOT_FOUND, "cannot preload %s: its path has a space or a colon", lib);
	if (stat(lib, &st) != 0)
		uo_die(UO_EXIT_NOT_FOUND, "cannot preload %s: %s", lib, strerror(errno));
	if (!old || !old[strspn(old, " :")]) {
		uo_setenv("LD_PRELOAD", lib);
		return;
	}
	for (p = old; *p; ) {
		size_t n = strcspn(p, " :");

		if (uo_is_ours(p, n, &st))
			return;
		p += n;
		p += strspn(p, " :");
	}
	len = strlen(lib) + strlen(old) + 2;
	value = malloc(len);
	if (!value)
		uo_die(UO_EXIT_NOT_FOUND, "out of memory");
	snprintf(value, len, "%s:%s", lib, old);
	uo_setenv("LD_PRELOAD", value);
	free(value);
}

static void uo_version(void)
{
	char lib[PATH_MAX];

	printf("useonce %s\n", USEONCE_VERSION);
	if (uo_find_library(lib, sizeof(lib)))
		printf("library: %s\n", lib);
	else
		printf("library: not found (not next to this program, nor in %s)\n", UO_LIBDIR);
}

/* ---- --check: every problem the library would ignore, with its reason ---- */

static unsigned uo_problems;

/* A value from outside, printable bytes only. */
static void uo_print_safe(const char *s)
{
	for (; *s; s++)
		putchar(*s >= 0x20 && *s < 0x7f ? *s : '?');
}

/* The library's words for it, which end with "ignored" or get "; ignored". */
static void uo_print_why(const char *why, bool ignored)
{
	static const char tail[] = "ignored";
	size_t n = strlen(why);
	bool says = n >= sizeof(tail) - 1 && !strcmp(why + n - (sizeof(tail) - 1), tail);

	printf("%s%s\n", why, ignored && !says ? "; ignored" : "");
	uo_problems++;
}

/* "useonce: NAME=VALUE: why; ignored", as the library says it. */
static void uo_problem_var(const char *name, const char *value, const char *why)
{
	printf("useonce: %s", name);
	if (value) {
		putchar('=');
		uo_print_safe(value);
	}
	fputs(": ", stdout);
	uo_print_why(why, true);
}

/* "useonce: FILE:LINE: KEY = VALUE: why; ignored"; line 0: the file as a whole. */
static void uo_problem_at(void *arg, unsigned line, const char *key, const char *value,
			  const char *why)
{
	fputs("useonce: ", stdout);
	uo_print_safe(arg);
	if (line)
		printf(":%u", line);
	fputs(": ", stdout);
	if (key) {
		uo_print_safe(key);
		if (value) {
			fputs(" = ", stdout);
			uo_print_safe(value);
		}
		fputs(": ", stdout);
	}
	uo_print_why(why, line != 0);
}

/* Every [program] section is checked, as if it were for the running program. */
static bool uo_any_program(void *arg, const char *name)
{
	return true;
}

/*
 * A config file, checked as the library reads it (preload/config.c):
 * what it makes of the file as a whole, then every line.  'what' names it
 * in the line that says it is read.
 */
static void uo_check_file(const char *what, const char *path, bool system, bool named,
			  const char *home, struct uo_settings *into)
{
	static char text[UO_CONF_SIZE];
	static struct uo_rules rules;
	struct uo_conf_ctx ctx = {
		.home = home, .is_program = uo_any_program, .warn = uo_problem_at,
		.arg = (void *)path,
	};
	struct uo_settings global, program;
	const char *why;
	struct stat st;
	size_t len = 0;
	ssize_t n;
	char more;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (named)
			uo_problem_var(USEONCE_ENV_CONFIG, path, uo_errno_words(errno));
		else if (errno != ENOENT)
			uo_problem_at((void *)path, 0, NULL, NULL, uo_errno_words(errno));
		else
			printf("useonce: %s %s: none\n", what, path);
		return;
	}
	why = fstat(fd, &st) != 0 ? "not a regular file; ignored" :
	      uo_conf_file_why(st.st_mode, st.st_uid, system);
	if (why) {
		uo_problem_at((void *)path, 0, NULL, NULL, why);
		close(fd);
		return;
	}
	printf("useonce: %s %s: read\n", what, path);
	while (len < sizeof(text) && (n = read(fd, text + len, sizeof(text) - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			uo_problem_at((void *)path, 0, NULL, NULL, "cannot be read; ignored");
			close(fd);
			return;
		}
		len += (size_t)n;
	}
	if (len == sizeof(text) && read(fd, &more, 1) > 0) {
		uo_problem_at((void *)path, 0, NULL, NULL, "longer than 32 KiB; the rest is ignored");
		/* The library leaves the cut line out. */
		while (len && text[len - 1] != '\n')
			len--;
	}
	close(fd);
	memset(&rules, 0, sizeof(rules));
	global.set = program.set = 0;
	uo_conf_parse(text, len, &ctx, &global, &program, &rules);
	/* What every program gets: [program] sections are each their own. */
	uo_settings_merge(into, &global);
}

/*
 * One candidate for the user's private directory, judged as the library
 * judges it (preload/userdir.c): opened without following a link, then
 * uo_private_dir_why.  1: it is the one; 0: it does not exist; -1: it
 * exists and is passed over, 'why' says why.
 */
static int uo_check_dir(const char *path, const char **why)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		int err = errno;

		if (err == ENOENT)
			return 0;
		*why = lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? "a symbolic link (never followed)" :
		       err == ENOTDIR ? "not a directory" : uo_errno_words(err);
		return -1;
	}
	*why = fstat(fd, &st) != 0 ? "cannot be read" :
	       uo_private_dir_why(st.st_mode, st.st_uid, geteuid());
	close(fd);
	return *why ? -1 : 1;
}

/*
 * Where the library keeps its record of recent streams (and its note of
 * warnings said): the first of $XDG_RUNTIME_DIR, /run/user/UID and
 * $TMPDIR/useonce-UID (else /tmp/useonce-UID) that is the user's own and
 * private.  A candidate passed over is said; none at all is a problem (the
 * library stays quiet about it: files streamed again are read from disk
 * again).  Nothing is made here: the first program that needs it makes
 * useonce-UID.
 */
static void uo_check_private(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR"), *tmp = getenv("TMPDIR"), *why, *dir;
	char path[300];
	int got;

	/* As preload/config.c takes them: absolute, and short enough. */
	if (xdg && xdg[0] == '/' && strlen(xdg) < 256) {
		dir = xdg;
		got = uo_check_dir(xdg, &why);
		if (got > 0)
			goto found;
		printf("useonce: XDG_RUNTIME_DIR=");
		uo_print_safe(xdg);
		printf(": %s; passed over\n", got ? why : "no such directory");
	}
	dir = path;
	snprintf(path, sizeof(path), "/run/user/%u", (unsigned)geteuid());
	got = uo_check_dir(path, &why);
	if (got > 0)
		goto found;
	if (got < 0)
		printf("useonce: %s: %s; passed over\n", path, why);
	if (!tmp || tmp[0] != '/' || strlen(tmp) >= 230)
		tmp = "/tmp";
	snprintf(path, sizeof(path), "%s/useonce-%u", tmp, (unsigned)geteuid());
	got = uo_check_dir(path, &why);
	if (got > 0)
		goto found;
	if (got == 0 && access(tmp, W_OK | X_OK) == 0) {
		fputs("useonce: record of recent streams: ", stdout);
		uo_print_safe(path);
		puts("/useonce-streams (the directory is made, mode 0700, when first needed)");
		return;
	}
	if (got == 0)
		why = access(tmp, F_OK) == 0 ? "cannot be made" : "no such directory";
	fputs("useonce: ", stdout);
	uo_print_safe(got ? path : tmp);
	printf(": %s; no record of recent streams (a file streamed again is read from disk "
	       "again)\n", why);
	uo_problems++;
	return;
found:
	fputs("useonce: record of recent streams: ", stdout);
	uo_print_safe(dir);
	puts("/useonce-streams");
}

/*
 * The system file, the user's (or USEONCE_CONFIG's), then the USEONCE_
 * variables, in the order the library reads them.  A variable it does not
 * know is no problem to the library, which never looks at it: a typo in a
 * name is, to whoever set it.
 */
static int uo_check_all(void)
{
	static const char system_file[] = UO_SYSCONFDIR "/useonce.conf";
	const char *named = getenv(USEONCE_ENV_CONFIG), *home = getenv("HOME");
	const char *xdg = getenv("XDG_CONFIG_HOME"), *value;
	char user[512] = "";
	unsigned vars = 0;
	/* The settings every program gets, as far as the record needs them. */
	struct uo_settings set = { .set = 0 };
	char **e;
	int row;

	if (home && home[0] != '/')
		home = NULL;
	uo_check_file("system file", system_file, true, false, home, &set);
	if (named && !*named)
		uo_problem_var(USEONCE_ENV_CONFIG, named, UO_EMPTY);
	if (named && *named) {
		if (strlen(named) >= sizeof(user))
			uo_problem_var(USEONCE_ENV_CONFIG, named, "path too long; ignored");
		else
			snprintf(user, sizeof(user), "%s", named);
	} else if (xdg && xdg[0] == '/' && strlen(xdg) + sizeof("/useonce/config") <= sizeof(user)) {
		snprintf(user, sizeof(user), "%s/useonce/config", xdg);
	} else if (home && strlen(home) + sizeof("/.config/useonce/config") <= sizeof(user)) {
		snprintf(user, sizeof(user), "%s/.config/useonce/config", home);
	}
	if (user[0])
		uo_check_file("user file", user, false, named && *named, home, &set);
	for (e = environ; *e; e++) {
		const char *why;

		if (strncmp(*e, "USEONCE_", 8))
			continue;
		vars++;
		row = uo_setting_env(*e + 8, &value);
		if (row < 0) {
			printf("useonce: %.*s: not a variable libuseonce reads\n",
			       (int)strcspn(*e, "="), *e);
			uo_problems++;
			continue;
		}
		if (row == UO_S_CONFIG)
			continue;
		why = uo_setting_parse(&uo_setting_table[row], value, &set);
		if (why)
			uo_problem_var(uo_setting_table[row].env, value, why);
	}
	if ((set.set & UO_SET_REUSE) && !set.reuse_s)
		puts("useonce: record of recent streams: off (reuse 0)");
	else
		uo_check_private();
	printf("useonce: %u USEONCE_ variable%s; %u problem%s\n", vars, vars == 1 ? "" : "s",
	       uo_problems, uo_problems == 1 ? "" : "s");
	return uo_problems ? 1 : 0;
}

/* Options that are not settings of their own. */
enum {
	UO_OPT_READ_ONLY = 256,
	UO_OPT_WRITE_ONLY,
	UO_OPT_CHECK,
	UO_OPT_WATCH,
	UO_OPT_NO_WATCH,
};

static const struct option uo_more_options[] = {
	{ "read-only", no_argument, NULL, UO_OPT_READ_ONLY },
	{ "write-only", no_argument, NULL, UO_OPT_WRITE_ONLY },
	{ "check", no_argument, NULL, UO_OPT_CHECK },
	{ "pid", required_argument, NULL, 'p' },
	{ "watch", no_argument, NULL, UO_OPT_WATCH },
	{ "no-watch", no_argument, NULL, UO_OPT_NO_WATCH },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
};

#define UO_NMORE	(sizeof(uo_more_options) / sizeof(uo_more_options[0]))

/*
 * getopt's tables, from the settings table's options and ours.  '+': stop
 * at the first non-option, which is the command, so its own options stay
 * its own.  ':': we say what is wrong, as "useonce: ...".
 */
static void uo_options(struct option *opts, char *optstring)
{
	size_t n = 0, k = 0, i;

	optstring[k++] = '+';
	optstring[k++] = ':';
	for (i = 0; i < UO_S_COUNT; i++) {
		const struct uo_setting *row = &uo_setting_table[i];

		if (!row->opt[0])
			continue;
		opts[n++] = (struct option){ row->opt, row->opt_arg, NULL, row->opt_short };
		optstring[k++] = row->opt_short;
		if (row->opt_arg != UO_OPT_NONE)
			optstring[k++] = ':';
		if (row->opt_arg == UO_OPT_OPTIONAL)
			optstring[k++] = ':';
	}
	for (i = 0; i < UO_NMORE; i++) {
		opts[n++] = uo_more_options[i];
		if (uo_more_options[i].val >= 256)
			continue;
		optstring[k++] = (char)uo_more_options[i].val;
		if (uo_more_options[i].has_arg == required_argument)
			optstring[k++] = ':';
	}
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	optstring[k] = '\0';
}

static const struct uo_setting *uo_option_row(int c)
{
	size_t i;

	for (i = 0; i < UO_S_COUNT; i++)
		if (uo_setting_table[i].opt[0] && uo_setting_table[i].opt_short == c)
			return &uo_setting_table[i];
	return NULL;
}

/*
 * The value an option puts in the environment.  Values are checked by the
 * library's own parsers (preload/conffile.c, linked in): what the command
 * accepts is exactly what the library reads.  File names are made absolute.
 */
static const char *uo_option_value(const struct uo_setting *row, const char *arg)
{
	char opt[16];
	struct uo_settings unused;
	const char *why;

	if (!arg)
		return row->opt_value;
	snprintf(opt, sizeof(opt), "--%s", row->opt);
	switch ((enum uo_setting_kind)row->kind) {
	case UO_K_DEST:
	case UO_K_DEST_STATS:
		return uo_check_dest(opt, arg);
	case UO_K_FILE:
		return uo_check_config(arg);
	default:
		why = uo_setting_parse(row, arg, &unused);
		if (why)
			uo_die(UO_EXIT_USAGE, "%s '%s': %s", opt, arg, why);
		return arg;
	}
}

/* USEONCE_DISABLE=1: the command runs as it would without us. */
static bool uo_disabled(void)
{
	const char *s = getenv(USEONCE_ENV_DISABLE);
	bool b;

	return s && !uo_parse_bool(s, &b) && b;
}

/*
 * The library cannot reach static and Go programs (nor processes already
 * running): those are watched from outside, by cmd/watch.c.  Returns only
 * when COMMAND is to be exec'ed with the library as usual.
 */
static void uo_maybe_watch(long pid, int watch, char **argv, bool have_lib, const char *lib)
{
	struct uo_watch_opts wo;
	char exe[PATH_MAX];
	enum uo_exe_kind kind = UO_EXE_OTHER;

	if (pid <= 0 && (watch == 0 || (watch < 0 && !uo_exe_find(argv[0], exe, sizeof(exe)))))
		return;
	if (pid <= 0 && watch < 0) {
		kind = uo_exe_kind(exe);
		if (kind != UO_EXE_STATIC && kind != UO_EXE_GO)
			return;
	}
	uo_watch_opts_from_env(&wo);
	wo.verbose = getenv(USEONCE_ENV_TRACE) != NULL;
	if (wo.verbose && kind != UO_EXE_OTHER)
		fprintf(stderr, "useonce: %s is %s: watching it from outside\n", exe,
			uo_exe_kind_name(kind));
	if (pid > 0)
		exit(uo_watch_attach((pid_t)pid, &wo));
	/* Its children may be reachable: they get the library. */
	if (have_lib)
		uo_preload(lib);
	exit(uo_watch_run(argv, &wo));
}

int main(int argc, char **argv)
{
	struct option options[UO_S_COUNT + UO_NMORE + 1];
	char optstring[3 * UO_S_COUNT + 2 * UO_NMORE + 3];
	const struct uo_setting *row;
	bool dry_run = false, check = false, have_lib;
	char lib[PATH_MAX], *end;
	long pid = 0;
	int c, watch = -1;

	uo_options(options, optstring);
	opterr = 0;
	for (;;) {
		/* The word getopt reads: still this one if it fails inside "-nx". */
		int word = optind;

		c = getopt_long(argc, argv, optstring, options, NULL);
		if (c == -1)
			break;
		switch (c) {
		case UO_OPT_READ_ONLY:
			uo_setenv(USEONCE_ENV_GUARD, "read");
			break;
		case UO_OPT_WRITE_ONLY:
			uo_setenv(USEONCE_ENV_GUARD, "write");
			break;
		case UO_OPT_CHECK:
			check = true;
			break;
		case 'h':
			uo_usage();
			return 0;
		case 'V':
			uo_version();
			return 0;
		case 'p':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || pid <= 0 || pid > INT_MAX)
				uo_die(UO_EXIT_USAGE, "--pid '%s': not a process id", optarg);
			break;
		case UO_OPT_WATCH:
			watch = 1;
			break;
		case UO_OPT_NO_WATCH:
			watch = 0;
			break;
		case ':':
			if (!strncmp(argv[word], "--", 2))
				uo_die(UO_EXIT_USAGE, "option %s needs a value", argv[word]);
			uo_die(UO_EXIT_USAGE, "option -%c needs a value", optopt);
		default:
			row = c != '?' ? uo_option_row(c) : NULL;
			if (row) {
				uo_setenv(row->env, uo_option_value(row, optarg));
				dry_run |= row == &uo_setting_table[UO_S_DRYRUN];
				break;
			}
			/* optopt: 0 for an unknown long option, its value for one given a value. */
			if (strncmp(argv[word], "--", 2))
				uo_die(UO_EXIT_USAGE, "unknown option -%c", optopt);
			if (optopt)
				uo_die(UO_EXIT_USAGE, "option %s takes no value", argv[word]);
			uo_die(UO_EXIT_USAGE, "unknown option %s", argv[word]);
		}
	}
	/* Options before --check are in the environment checked: -c FILE --check checks FILE. */
	if (check && optind < argc)
		uo_die(UO_EXIT_USAGE, "--check runs no command (%s)", argv[optind]);
	if (check)
		return uo_check_all();
	if (pid > 0 && optind < argc)
		uo_die(UO_EXIT_USAGE, "--pid watches a running process: no command is run");
	if (pid <= 0 && optind >= argc)
		uo_die(UO_EXIT_USAGE, "no command given");
	/* A dry run that says nothing is no use; stats the user set (--stats too) win. */
	if (dry_run && !getenv(USEONCE_ENV_STATS))
		uo_setenv(USEONCE_ENV_STATS, "stderr");
	have_lib = uo_find_library(lib, sizeof(lib));
	if (pid > 0 || (watch != 0 && !uo_disabled()))
		uo_maybe_watch(pid, watch, &argv[optind], have_lib, lib);
	if (!have_lib)
		uo_die(UO_EXIT_NOT_FOUND, "cannot find " UO_LIBNAME " next to this program nor in %s",
		       UO_LIBDIR);
	uo_preload(lib);
	fflush(stdout);
	execvp(argv[optind], &argv[optind]);
	uo_die(errno == ENOENT || errno == ENOTDIR ? UO_EXIT_NOT_FOUND : UO_EXIT_CANNOT_RUN,
	       "cannot run %s: %s", argv[optind], strerror(errno));
}
