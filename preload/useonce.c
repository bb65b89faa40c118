/*
 * useonce: run a command with libuseonce preloaded.
 *
 *	useonce [options] [--] COMMAND [ARGS...]
 *
 * The library is looked for next to this program first (a build tree, or
 * BINDIR/../lib), then in the LIBDIR it was built for.  Options become the
 * USEONCE_* variables the library reads; any LD_PRELOAD already set is kept,
 * after ours.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "useonce.h"

#ifndef UO_LIBDIR
#define UO_LIBDIR "/usr/local/lib"
#endif
#define UO_LIBNAME "libuseonce.so"

static const char *uo_prog = "useonce";

static void uo_die(int status, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", uo_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

static void uo_usage(FILE *out)
{
	fprintf(out,
		"Usage: %s [options] [--] COMMAND [ARGS...]\n"
		"Run COMMAND with libuseonce preloaded, so that its big sequential reads and\n"
		"writes do not push everyone else's data out of the page cache.\n"
		"\n"
		"  -t, --threshold SIZE  sequential bytes before a file counts as a stream (32M)\n"
		"  -w, --window SIZE     bytes between two drops behind the stream (8M)\n"
		"  -g, --guard WHICH     read, write or both (both)\n"
		"  -r, --reuse SECONDS   a file streamed again within this stays cached (600; 0: off)\n"
		"  -T, --trace DEST      log every decision to stderr, a descriptor or a file\n"
		"  -n, --disable         run with the library loaded but passive\n"
		"  -h, --help            show this help\n"
		"  -V, --version         show the version\n"
		"\n"
		"SIZE takes K, M, G suffixes (binary).  Exit status is COMMAND's, 127 if it\n"
		"cannot be run, 2 for a usage error.\n",
		uo_prog);
}

/* Next to us (build tree), ../lib beside our bindir, then the configured LIBDIR. */
static int uo_find_library(char *out, size_t size)
{
	char self[PATH_MAX], *slash;
	const char *candidates[] = { "%s/" UO_LIBNAME, "%s/../lib/" UO_LIBNAME };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t i;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		for (i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
			int len = snprintf(out, size, candidates[i], self);

			if (len > 0 && (size_t)len < size && access(out, R_OK) == 0)
				return 0;
		}
	}
	snprintf(out, size, "%s/%s", UO_LIBDIR, UO_LIBNAME);
	return access(out, R_OK) == 0 ? 0 : -1;
}

static void uo_setenv(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0)
		uo_die(2, "cannot set %s: %s", name, strerror(errno));
}

static void uo_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *value;
	size_t len;

	/* The loader splits LD_PRELOAD on spaces and colons. */
	if (strpbrk(lib, " :"))
		uo_die(127, "cannot preload %s: its path contains a space or a colon", lib);
	if (!old || !*old) {
		uo_setenv("LD_PRELOAD", lib);
		return;
	}
	len = strlen(lib) + strlen(old) + 2;
	value = malloc(len);
	if (!value)
		uo_die(127, "out of memory");
	snprintf(value, len, "%s:%s", lib, old);
	uo_setenv("LD_PRELOAD", value);
	free(value);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "threshold", required_argument, NULL, 't' },
		{ "window", required_argument, NULL, 'w' },
		{ "guard", required_argument, NULL, 'g' },
		{ "reuse", required_argument, NULL, 'r' },
		{ "trace", required_argument, NULL, 'T' },
		{ "disable", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char lib[PATH_MAX];
	int c;

	if (argv[0] && strrchr(argv[0], '/'))
		uo_prog = strrchr(argv[0], '/') + 1;
	else if (argv[0] && argv[0][0])
		uo_prog = argv[0];

	/* '+': stop at the first non-option, which is the command. */
	while ((c = getopt_long(argc, argv, "+t:w:g:r:T:nhV", options, NULL)) != -1) {
		switch (c) {
		case 't': uo_setenv(USEONCE_ENV_THRESHOLD, optarg); break;
		case 'w': uo_setenv(USEONCE_ENV_WINDOW, optarg); break;
		case 'g': uo_setenv(USEONCE_ENV_GUARD, optarg); break;
		case 'r': uo_setenv(USEONCE_ENV_REUSE, optarg); break;
		case 'T': uo_setenv(USEONCE_ENV_TRACE, optarg); break;
		case 'n': uo_setenv(USEONCE_ENV_DISABLE, "1"); break;
		case 'h': uo_usage(stdout); return 0;
		case 'V': printf("useonce %s\n", USEONCE_VERSION); return 0;
		default:
			fprintf(stderr, "Try '%s --help'.\n", uo_prog);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no command given\nTry '%s --help'.\n", uo_prog, uo_prog);
		return 2;
	}
	if (uo_find_library(lib, sizeof(lib)) != 0)
		uo_die(127, "cannot find %s next to this program or in %s", UO_LIBNAME, UO_LIBDIR);
	uo_preload(lib);
	execvp(argv[optind], &argv[optind]);
	uo_die(errno == ENOENT ? 127 : 126, "cannot run %s: %s", argv[optind], strerror(errno));
	return 127;
}
