/*
 * What the tests and the demo share: a suite's life (its skip reason, its
 * cleanup at exit or on a signal), a scratch directory on a real disk, big
 * files made quickly and made cold, page cache residency measured with
 * mincore, memory cgroups that cannot leak, and running a program (with or
 * without libuseonce) while sampling its footprint.
 *
 * Sizes are in bytes.  Functions that can fail return -1 and leave a
 * one-line explanation in uot_why().
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UOT_TESTLIB_H
#define UOT_TESTLIB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UOT_MIB		(1ULL << 20)
#define UOT_WATCH_MAX	3
/* Everything we create (scratch directories, cgroups) is named so, then the pid. */
#define UOT_PREFIX	"uotest-"

/* Set by the handlers uot_catch_signals() installs; long loops give up when it is. */
extern volatile sig_atomic_t uot_interrupted;

/* Why the last uot_* call failed (or why something is skipped). */
const char *uot_why(void);

/* $UO_BUILD (default "build") made absolute; the library and tools in it. */
const char *uot_build_dir(void);
/* The source tree (UO_SRCDIR, else the working directory), made absolute. */
const char *uot_srcdir(void);
/* Removes the lines of text that start with prefix; returns how many there were. */
unsigned uot_strip_lines(char *text, const char *prefix);
/*
 * What the library says on a failing disk (advise.c): one line per process,
 * the program's own messages unchanged around it.
 */
#define UOT_WRITEBACK_FAILED_LINE	"useonce: writing "
/* snprintf into out, returning out: for building argument strings inline. */
__attribute__((format(printf, 3, 4)))
char *uot_sfmt(char *out, size_t size, const char *fmt, ...);
/* system() of a formatted command line; its wait status. */
__attribute__((format(printf, 1, 2)))
int uot_sh(const char *fmt, ...);
/*
 * system() of a formatted command line, with the library preloaded
 * (LD_PRELOAD=uot_preload() before it) or as the environment has it; its
 * standard output (a "2>&1" of the line's own joins it) into out, cut short
 * to fit.  Returns the wait status.  Goes through scratch/capture: the
 * scratch directory must exist.
 */
__attribute__((format(printf, 4, 5)))
int uot_capture(bool preload, char *out, size_t size, const char *fmt, ...);
/* rm -rf of a directory inside the scratch directory; anything else is refused. */
void uot_scratch_rm(const char *dir);
const char *uot_library(void);		/* .../libuseonce.so */
/*
 * What LD_PRELOAD must hold to load the library: $UO_PRELOAD_FIRST (a
 * sanitizer's runtime, which must come before libc), then the library.
 */
const char *uot_preload(void);
const char *uot_useonce(void);		/* .../useonce */
bool uot_is_root(void);
/* A number of MiB from the environment, at least 'low'; 'def' (with a warning from 'prog') otherwise. */
uint64_t uot_env_mib(const char *prog, const char *name, uint64_t def, uint64_t low);

/*
 * The scratch directory, UO_BUILD/uotest-PID.  It must sit on a disk
 * filesystem: on tmpfs dropping pages means nothing and the tests would
 * prove nothing.  uot_scratch_remove() may be called any number of times.
 */
int uot_scratch_create(void);
const char *uot_scratch(void);
/* 'out' = scratch/name; returns out. */
char *uot_scratch_path(char *out, size_t size, const char *name);
void uot_scratch_remove(void);

/*
 * A directory user nobody can enter, mode 0755, for a test that drops root:
 * scratch/TAG when every directory above the scratch one lets others
 * through, else /var/tmp/uotest-PID-TAG (the build tree may sit in root's
 * home).  Removed with the scratch directory.  Returns out, or NULL (why
 * in uot_why()).
 */
char *uot_public_dir(char *out, size_t size, const char *tag);

/* Removes scratch and public directories and cgroups left by runs of ours that died. */
void uot_sweep_stale(void);

/*
 * A suite's life, the same in every Check program.  uot_suite_begin()
 * names the suite (skip lines start with the name), makes this process the
 * only one that cleans up (Check's forked cases and our own children exit
 * too, and must not), removes what runs that died left (uot_sweep_stale),
 * and has 'cleanup' (NULL: nothing more) then uot_scratch_remove() run
 * once: at exit, or on SIGINT, SIGTERM or SIGHUP, which then end the
 * program as they would have.  A suite with state outside the scratch
 * directory (mounts, loop devices) undoes it in 'cleanup'.
 */
void uot_suite_begin(const char *name, void (*cleanup)(void));
/* Is this the process that called uot_suite_begin()? */
bool uot_suite_owner(void);

/*
 * Why the suite's cases that need its fixture skip.  The first reason
 * given stays: it is the one that explains the rest.
 */
__attribute__((format(printf, 1, 2)))
void uot_skip(const char *fmt, ...);
/* "" while nothing skips. */
const char *uot_skip_reason(void);
/* With a reason: one line "SUITE: WHAT: skipped: WHY" (WHAT may be NULL), and true. */
bool uot_skipped(const char *what);

/* What a fixture needs: true, or false with the reason given to uot_skip(). */
bool uot_need_root(const char *for_what);	/* "not root: FOR_WHAT" */
bool uot_need_programs(const char *names);	/* in PATH, each of "a b": "a or b missing" */
bool uot_need_scratch(void);			/* uot_scratch_create() */

/*
 * A disk to make errors on (FACTS.md's recipe): ext4 on a loop device,
 * mounted at uot_disk_mnt().  uot_disk_need() is the fixture's need:
 * root, losetup, mkfs.ext4 and the scratch directory, in which it makes
 * the mount points.  uot_disk_up() first undoes the last disk, then makes
 * a fresh one of image_mib: with tmpfs_mib, its image sits on a tmpfs that
 * small, so writeback fails once the tmpfs is full; with 0, in the scratch
 * directory (a healthy disk, full at image_mib).  -1 (why in uot_why())
 * if it could not, with what was made still recorded for uot_disk_down().
 *
 * uot_disk_down() unmounts, detaches and removes whatever is up, and does
 * nothing outside the suite's owner.  A suite gives it to
 * uot_suite_begin() (exit, signals) and as its cases' checked teardown,
 * with the cases run in process: a failed assertion then still reaches it.
 */
bool uot_disk_need(void);
int uot_disk_up(unsigned tmpfs_mib, unsigned image_mib);
const char *uot_disk_mnt(void);
void uot_disk_down(void);

/*
 * Runs this program again with the library preloaded (and a sanitizer's
 * runtime before it, see uot_preload()); 'mark' tells the new image it is
 * the preloaded one.  Extra NAME=VALUE settings in 'env', NULL-terminated.
 */
void uot_reexec_preloaded(char **argv, const char *mark, const char *const *env);
/* Is the library mapped in this process? */
bool uot_library_mapped(void);

/*
 * SIGINT, SIGTERM, SIGHUP: set uot_interrupted (without SA_RESTART, so a
 * blocking call returns early); the caller cleans up and exits.
 */
void uot_catch_signals(void);

/*
 * A file of 'size' bytes of pseudo-random data from 'seed': never sparse,
 * every MiB different, so a copy that loses or repeats a block is caught.
 * The file is left cold (on disk, not in the page cache).
 */
int uot_make_file(const char *path, uint64_t size, uint32_t seed);

/*
 * 1 if 'len' bytes of a at a_off equal those of b at b_off, 0 if they
 * differ (uot_why() says where), -1 on error.  len UINT64_MAX: both files
 * from their offset to their end, which must then be of the same length.
 */
int uot_files_equal(const char *a, uint64_t a_off, const char *b, uint64_t b_off,
		    uint64_t len);

/*
 * A small file (/proc, /sys, cgroup files) read into buf in one read and
 * NUL-terminated: its length, or -1 with errno (buf then empty).
 */
ssize_t uot_read_text(const char *path, char *buf, size_t size);

/* Written out and dropped from the page cache: this file only. */
int uot_make_cold(const char *path);

/*
 * Bytes of the file in the page cache, from mmap + mincore (truthful
 * because we are root or own the file).  A missing file is 0 bytes, 0
 * resident.  'size' (may be NULL) receives the file's size.
 */
int64_t uot_resident(const char *path, uint64_t *size);
/* Resident share in percent; 0 for an empty or missing file. */
double uot_resident_pct(const char *path);
/* A /proc/meminfo field (MemTotal, MemFree...) in KiB; 0 if it cannot be read. */
uint64_t uot_meminfo_kib(const char *key);

struct uot_cgroup {
	char path[256];
	uint64_t limit;
	pid_t owner;		/* the process that made it, the only one to remove it */
};

/* Memory figures of a cgroup, bytes, from memory.stat and memory.usage. */
struct uot_memstat {
	uint64_t cache;
	uint64_t dirty;
	uint64_t writeback;
	uint64_t usage;
};

/* Where the tests make their memory cgroups (v1). */
#define UOT_CGROUP_ROOT	"/sys/fs/cgroup/memory"
/* A small file (a cgroup or /proc knob) written whole in one write: 0, or -1. */
int uot_write_str(const char *path, const char *s);
/* 0 if cgroup v1 memory cgroups can be made here, else -1 and why. */
int uot_cgroup_supported(void);
/* /sys/fs/cgroup/memory/uotest-PID-N with the limit set.  'cg' is zeroed first. */
int uot_cgroup_create(struct uot_cgroup *cg, uint64_t limit);
/* Kills what runs in it and uncharges (drops) everything charged to it. */
int uot_cgroup_reset(struct uot_cgroup *cg);
int uot_cgroup_stat(const struct uot_cgroup *cg, struct uot_memstat *ms);
/*
 * Kills what runs in it and removes it; harmless on a zeroed or removed
 * one, and in any process but the one that made it.
 */
void uot_cgroup_remove(struct uot_cgroup *cg);

enum uot_touch {
	UOT_TOUCH_READ,		/* read(2) through it once */
	UOT_TOUCH_MMAP,		/* map it and load one byte of every page */
};

/* Touches the file once from a child process inside 'cg' (NULL: ours). */
int uot_touch(const char *path, enum uot_touch how, const struct uot_cgroup *cg);
/*
 * The same, and '*secs' receives how long the pass itself took, measured
 * in the child: fork and joining the cgroup (which can take milliseconds)
 * are left out, so a warm pass over a small file is not lost in them.
 */
int uot_touch_timed(const char *path, enum uot_touch how, const struct uot_cgroup *cg,
		    double *secs);

/* One sample taken while a command ran. */
struct uot_sample {
	double t;			/* seconds since the command was started */
	uint64_t res[UOT_WATCH_MAX];	/* residency of each watched file, bytes */
	uint64_t cache;			/* with a cgroup: its page cache, and */
	uint64_t dirty_wb;		/* its dirty + writeback bytes */
};

/* Every sample of a run, in order; zero it before use, uot_series_free() after. */
struct uot_series {
	struct uot_sample *s;
	unsigned n;
	unsigned cap;
};

void uot_series_free(struct uot_series *sr);

struct uot_cmd {
	const char *const *argv;	/* argv[0] is looked up in PATH */
	bool preload;			/* LD_PRELOAD=libuseonce.so, else LD_PRELOAD unset */
	const char *library;		/* with preload: this one instead of the build's */
	const char *const *drop;	/* variables removed from ours: "NAME=", or a prefix */
	const char *const *env;		/* NAME=VALUE..., NULL-terminated; applied last */
	const char *cwd;		/* NULL: ours */
	const char *out;		/* stdout to this file (truncated); NULL: ours */
	const char *err;		/* stderr to this file (truncated); NULL: ours */
	const struct uot_cgroup *cg;	/* run inside it; NULL: ours */
	const char *watch[UOT_WATCH_MAX]; /* files whose residency is sampled */
	unsigned timeout_s;		/* 0: 300 */
	struct uot_series *series;	/* every sample is appended here; NULL: none kept */
};

struct uot_result {
	int status;			/* wait status */
	double secs;
	unsigned samples;
	uint64_t peak[UOT_WATCH_MAX];	/* highest residency seen, bytes */
	uint64_t after[UOT_WATCH_MAX];	/* residency once the program exited */
	uint64_t size[UOT_WATCH_MAX];	/* file size once the program exited */
	/* With a cgroup: the highest values seen in memory.stat, and max usage. */
	uint64_t peak_cache;
	uint64_t peak_dirty_wb;
	uint64_t peak_usage;
};

/*
 * Runs the command to completion, sampling every ~20 ms.  Returns 0 when
 * it ran (whatever its exit status: see r->status and uot_exited_ok()), -1
 * if it could not be started, overran its timeout or we were interrupted;
 * the child is killed and reaped in those cases.
 */
int uot_run(const struct uot_cmd *c, struct uot_result *r);
bool uot_exited_ok(int status);
/* "exit 1", "killed by signal 9"...: static buffer. */
const char *uot_status_str(int status);

/*
 * Copies the template into 'out', each of tokens[i] (e.g. "@SRC") replaced
 * by values[i]; cut short to fit.
 */
void uot_expand(char *out, size_t size, const char *tpl, const char *const *tokens,
		const char *const *values, size_t n);

static inline double uot_mib(uint64_t bytes)
{
	return (double)bytes / (double)UOT_MIB;
}

#endif /* UOT_TESTLIB_H */
