/*
 * The watcher: guards, from outside, processes the preloaded library
 * cannot reach (static and Go programs, processes already running).  It
 * samples what the kernel shows of their descriptors (/proc/PID/fdinfo),
 * feeds the positions to the library's own pure policy, and applies the
 * advice through descriptors of its own for the same files.  A watched
 * process is never stopped, traced, signalled or slowed, and its
 * descriptors are never touched.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_WATCH_H
#define UO_WATCH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

struct uo_watch_opts {
	struct uo_tuning tuning;
	bool dry_run;		/* decide as usual, advise nothing */
	bool stats;		/* one summary line on stderr at the end */
	bool verbose;		/* one line per stream and per refusal, on stderr */
};

enum uo_exe_kind {
	UO_EXE_DYNAMIC,		/* has an interpreter: the preload reaches it */
	UO_EXE_STATIC,		/* no interpreter: LD_PRELOAD is never read */
	UO_EXE_GO,		/* Go makes its own system calls: no hook would run */
	UO_EXE_OTHER,		/* a script, or not an ELF file we understand */
};

/* What kind of program the file at 'path' is; a file that cannot be read is UO_EXE_OTHER. */
enum uo_exe_kind uo_exe_kind(const char *path);
const char *uo_exe_kind_name(enum uo_exe_kind k);

/* 'cmd' looked up in PATH as execvp would: the file's path into out, or false. */
bool uo_exe_find(const char *cmd, char *out, size_t size);

/*
 * Options from the USEONCE_* environment (as the command sets it from its
 * own options): tuning, dry run.  A bad value was refused earlier by the
 * command; here it is left at its default.
 */
void uo_watch_opts_from_env(struct uo_watch_opts *o);

/*
 * Watches pid and its descendants until they are gone.  Returns the
 * command's exit status: 0, or 1 when the process cannot be watched (the
 * message says why).
 */
int uo_watch_attach(pid_t pid, const struct uo_watch_opts *o);

/*
 * Runs argv (looked up in PATH) as a child and watches it and its
 * descendants.  Returns only if the child exited: its exit status, or
 * 126/127 when it could not be run; a child killed by a signal gets us
 * killed by the same signal.
 */
int uo_watch_run(char *const *argv, const struct uo_watch_opts *o);

/*
 * The sampling interval after a burst, pure for the tests.  A sample that
 * finds streams still within UO_W_HOLD_NS (2 s) of their last burst (a
 * window moved since the burst before) arms a hold: 20 ms samples for
 * 2 s, as the next burst may come at once at full speed.  'moved' is what
 * streams moved since the last sample (0: still); returns the interval to
 * use instead of 'interval'.
 */
struct uo_whold {
	uint64_t since;		/* moved since the last burst */
	int64_t burst_ns;	/* when streams last completed a window: 0 never */
	int64_t pause_ns;	/* when a sample last found streams still after one */
};
int64_t uo_whold_interval(struct uo_whold *h, int64_t now, uint64_t moved, uint64_t window,
			  int64_t interval);

/* "useonce: " and the message, one line on stderr: the command's voice. */
void uo_vsay(const char *fmt, va_list ap);

#endif /* UO_WATCH_H */
