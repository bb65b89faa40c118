/*
 * useonce: run a command with libuseonce preloaded.
 *
 *	useonce [options] [--] COMMAND [ARGS...]
 *
 * Options become the USEONCE_* variables the library reads, so the command
 * line overrides the environment, which overrides the config files.  Values
 * are checked here, by the library's rules, so a typo is a usage error
 * (status 2) before anything runs rather than one warning per process once
 * it does.  The library is put first in LD_PRELOAD, unless one is there
 * already; then COMMAND is exec'ed, so its exit status is ours.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
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
#include "uo_conf.h"
#include "watch.h"

#ifndef UO_LIBDIR
#define UO_LIBDIR "/usr/local/lib"
#endif
#ifndef UO_BINDIR
#define UO_BINDIR "/usr/local/bin"
#endif
#define UO_LIBNAME "libuseonce.so"

/* Not in useonce.h before the config file and stats came. */
#ifndef USEONCE_ENV_STATS
#define USEONCE_ENV_STATS "USEONCE_STATS"
#endif
#ifndef USEONCE_ENV_DRYRUN
#define USEONCE_ENV_DRYRUN "USEONCE_DRYRUN"
#endif
#ifndef USEONCE_ENV_CONFIG
#define USEONCE_ENV_CONFIG "USEONCE_CONFIG"
#endif

/* Exit statuses of our own, as env(1), nice(1) and the shells use them. */
#define UO_EXIT_USAGE		2
#define UO_EXIT_CANNOT_RUN	126
#define UO_EXIT_NOT_FOUND	127

__attribute__((format(printf, 2, 3), noreturn))
static void uo_die(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("useonce: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
	      "  -h, --help            show this help\n"
	      "  -V, --version         show the version and the library that would be used\n"
	      "\n"
	      "SIZE takes K, M, G, T suffixes (binary), at least 2M.  A file name given as\n"
	      "DEST or FILE is made absolute.  Options after COMMAND are COMMAND's.\n"
	      "Exit status: COMMAND's; 126 if it cannot be executed, 127 if it is not found\n"
	      "(or the library is not), 2 for a usage error.  See useonce(1), libuseonce(7).\n",
	      stdout);
}

/*
 * Values are checked by the library's own parsers (preload/conffile.c,
 * linked in): what the command accepts is exactly what the library reads.
 */
static void uo_check(const char *opt, const char *s, const char *why)
{
	if (why)
		uo_die(UO_EXIT_USAGE, "%s '%s': %s", opt, s, why);
}

static void uo_check_size(const char *opt, const char *s)
{
	uint64_t v;

	uo_check(opt, s, uo_parse_size_setting(s, &v));
}

static void uo_check_reuse(const char *s)
{
	uint32_t v;

	uo_check("--reuse", s, uo_parse_reuse(s, &v));
}

static void uo_check_guard(const char *s)
{
	unsigned v;

	uo_check("--guard", s, uo_parse_guard(s, &v));
}

static bool uo_all_digits(const char *s)
{
	return *s && s[strspn(s, "0123456789")] == '\0';
}

/*
 * A file name for the library, which wants it absolute: the command may
 * change directory, and so may every process it starts.  Returns a string
 * that lives until exit.
 */
static const char *uo_absolute(const char *opt, const char *s)
{
	char cwd[PATH_MAX], *out;
	size_t len;

	if (s[0] == '/')
		return s;
	if (!getcwd(cwd, sizeof(cwd)))
		uo_die(UO_EXIT_USAGE, "%s '%s': cannot make it absolute: %s", opt, s,
		       strerror(errno));
	len = strlen(cwd) + strlen(s) + 2;
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

enum {
	UO_OPT_READ_ONLY = 256,
	UO_OPT_WRITE_ONLY,
	UO_OPT_WATCH,
	UO_OPT_NO_WATCH,
};

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
	static const struct option options[] = {
		{ "threshold", required_argument, NULL, 't' },
		{ "window", required_argument, NULL, 'w' },
		{ "guard", required_argument, NULL, 'g' },
		{ "read-only", no_argument, NULL, UO_OPT_READ_ONLY },
		{ "write-only", no_argument, NULL, UO_OPT_WRITE_ONLY },
		{ "reuse", required_argument, NULL, 'r' },
		{ "stats", optional_argument, NULL, 's' },
		{ "trace", required_argument, NULL, 'T' },
		{ "dry-run", no_argument, NULL, 'N' },
		{ "config", required_argument, NULL, 'c' },
		{ "disable", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "pid", required_argument, NULL, 'p' },
		{ "watch", no_argument, NULL, UO_OPT_WATCH },
		{ "no-watch", no_argument, NULL, UO_OPT_NO_WATCH },
		{ NULL, 0, NULL, 0 },
	};
	bool dry_run = false, stats = false, have_lib;
	char lib[PATH_MAX], *end;
	long pid = 0;
	int c, watch = -1;

	/*
	 * '+': stop at the first non-option, which is the command, so its own
	 * options stay its own.  ':': we say what is wrong, as "useonce: ...".
	 */
	opterr = 0;
	for (;;) {
		/* The word getopt reads: still this one if it fails inside "-nx". */
		int word = optind;

		c = getopt_long(argc, argv, "+:t:w:g:r:s::T:Nc:nhVp:", options, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 't':
			uo_check_size("--threshold", optarg);
			uo_setenv(USEONCE_ENV_THRESHOLD, optarg);
			break;
		case 'w':
			uo_check_size("--window", optarg);
			uo_setenv(USEONCE_ENV_WINDOW, optarg);
			break;
		case 'g':
			uo_check_guard(optarg);
			uo_setenv(USEONCE_ENV_GUARD, optarg);
			break;
		case UO_OPT_READ_ONLY:
			uo_setenv(USEONCE_ENV_GUARD, "read");
			break;
		case UO_OPT_WRITE_ONLY:
			uo_setenv(USEONCE_ENV_GUARD, "write");
			break;
		case 'r':
			uo_check_reuse(optarg);
			uo_setenv(USEONCE_ENV_REUSE, optarg);
			break;
		case 's':
			uo_setenv(USEONCE_ENV_STATS,
				  optarg ? uo_check_dest("--stats", optarg) : "stderr");
			stats = true;
			break;
		case 'T':
			uo_setenv(USEONCE_ENV_TRACE, uo_check_dest("--trace", optarg));
			break;
		case 'N':
			dry_run = true;
			break;
		case 'c':
			uo_setenv(USEONCE_ENV_CONFIG, uo_check_config(optarg));
			break;
		case 'n':
			uo_setenv(USEONCE_ENV_DISABLE, "1");
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
			/* optopt: 0 for an unknown long option, its value for one given a value. */
			if (strncmp(argv[word], "--", 2))
				uo_die(UO_EXIT_USAGE, "unknown option -%c", optopt);
			if (optopt)
				uo_die(UO_EXIT_USAGE, "option %s takes no value", argv[word]);
			uo_die(UO_EXIT_USAGE, "unknown option %s", argv[word]);
		}
	}
	if (pid > 0 && optind < argc)
		uo_die(UO_EXIT_USAGE, "--pid watches a running process: no command is run");
	if (pid <= 0 && optind >= argc)
		uo_die(UO_EXIT_USAGE, "no command given");
	if (dry_run) {
		uo_setenv(USEONCE_ENV_DRYRUN, "1");
		/* A dry run that says nothing is no use; stats the user set win. */
		if (!stats && !getenv(USEONCE_ENV_STATS))
			uo_setenv(USEONCE_ENV_STATS, "stderr");
	}
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
