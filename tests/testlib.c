/*
 * What the end-to-end tests and the demo share; see testlib.h.
 *
 * The measurements here must not disturb what they measure: residency is
 * read with mincore on a mapping that is never touched, files are made
 * cold one at a time (never by dropping the whole machine's caches), and
 * the sampler runs outside the cgroup it watches.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

#define UOT_CHUNK	(1u << 20)
/* Files are written this far ahead of what has been made cold behind them. */
#define UOT_WRITE_BATCH	(32ULL << 20)
#define UOT_SAMPLE_NS	(20 * 1000000L)

extern char **environ;

volatile sig_atomic_t uot_interrupted;

static char uot_errbuf[512];
static char uot_scratch_dir[PATH_MAX];
static pid_t uot_scratch_owner;
/* uot_public_dir()'s outside the scratch directory, removed with it. */
static char uot_public[2][PATH_MAX];

const char *uot_why(void)
{
	return uot_errbuf[0] ? uot_errbuf : "no reason recorded";
}

__attribute__((format(printf, 1, 2)))
static int uot_fail(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(uot_errbuf, sizeof(uot_errbuf), fmt, ap);
	va_end(ap);
	errno = saved;
	return -1;
}

/* snprintf that says whether it all fitted: paths must not be cut short silently. */
__attribute__((format(printf, 3, 4)))
static int uot_fmt(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size ? 0 : -1;
}

char *uot_sfmt(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, size, fmt, ap);
	va_end(ap);
	return out;
}

int uot_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

int uot_capture(bool preload, char *out, size_t size, const char *fmt, ...)
{
	char line[2048], cmd[4096], path[PATH_MAX];
	va_list ap;
	size_t n;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	uot_scratch_path(path, sizeof(path), "capture");
	/*
	 * The shell's own output goes to the file first, so the line's
	 * redirections act as if it were written "LINE >file".
	 */
	uot_fmt(cmd, sizeof(cmd), "exec >'%s'; %s%s%s %s", path, preload ? "LD_PRELOAD='" : "",
		preload ? uot_preload() : "", preload ? "'" : "", line);
	st = system(cmd);
	f = fopen(path, "r");
	n = f ? fread(out, 1, size - 1, f) : 0;
	out[n] = '\0';
	if (f)
		fclose(f);
	unlink(path);
	return st;
}

const char *uot_srcdir(void)
{
	static char dir[PATH_MAX];
	const char *s = getenv("UO_SRCDIR");

	if (!dir[0] && !realpath(s && *s ? s : ".", dir))
		uot_sfmt(dir, sizeof(dir), "%s", s && *s ? s : ".");
	return dir;
}

static double uot_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void uot_nap(long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L };

	nanosleep(&ts, NULL);
}

ssize_t uot_read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	saved = errno;
	close(fd);
	errno = saved;
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* A zombie counts as dead: a run killed by SIGKILL may wait a while to be reaped. */
static bool uot_pid_alive(pid_t pid)
{
	char path[64], buf[256], *paren;
	ssize_t n;

	if (kill(pid, 0) != 0 && errno != EPERM)
		return false;
	uot_fmt(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = uot_read_text(path, buf, sizeof(buf));
	if (n < 0 && errno == ENOENT)
		return false;
	if (n <= 0)
		return true;
	/* "pid (comm) S ...": comm may hold anything, so look after the last ')'. */
	paren = strrchr(buf, ')');
	return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

static bool uot_memory_fs(const char *path)
{
	struct statfs sfs;

	if (statfs(path, &sfs) != 0)
		return false;
	return sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC;
}

/* "uotest-<digits>" followed by 'rest' ('\0': nothing more): the pid, else 0. */
static pid_t uot_name_pid(const char *name, char rest)
{
	const char *p;
	char *end;
	long pid;

	if (strncmp(name, UOT_PREFIX, strlen(UOT_PREFIX)) != 0)
		return 0;
	p = name + strlen(UOT_PREFIX);
	if (*p < '0' || *p > '9')
		return 0;
	pid = strtol(p, &end, 10);
	if (pid <= 0 || pid > INT_MAX || *end != rest)
		return 0;
	return (pid_t)pid;
}

const char *uot_build_dir(void)
{
	static char dir[PATH_MAX];
	const char *b;

	if (dir[0])
		return dir;
	b = getenv("UO_BUILD");
	if (!b || !*b)
		b = "build";
	if (!realpath(b, dir)) {
		/* Not there yet: absolute anyway, so children in other directories agree. */
		char cwd[PATH_MAX];

		if (b[0] == '/' || !getcwd(cwd, sizeof(cwd)))
			uot_fmt(dir, sizeof(dir), "%s", b);
		else
			uot_fmt(dir, sizeof(dir), "%s/%s", cwd, b);
	}
	return dir;
}

const char *uot_library(void)
{
	static char path[PATH_MAX + 32];

	if (!path[0])
		uot_fmt(path, sizeof(path), "%s/libuseonce.so", uot_build_dir());
	return path;
}

const char *uot_preload(void)
{
	static char list[2 * PATH_MAX + 64];
	const char *first = getenv("UO_PRELOAD_FIRST");

	if (!list[0])
		uot_fmt(list, sizeof(list), "%s%s%s", first && *first ? first : "",
			first && *first ? ":" : "", uot_library());
	return list;
}

const char *uot_useonce(void)
{
	static char path[PATH_MAX + 32];

	if (!path[0])
		uot_fmt(path, sizeof(path), "%s/useonce", uot_build_dir());
	return path;
}

bool uot_is_root(void)
{
	return geteuid() == 0;
}

/* ---- scratch directory ---- */

static int uot_rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* rm -rf, refusing anything that is not one of ours. */
static void uot_rm_tree(const char *dir)
{
	const char *base = strrchr(dir, '/');

	if (!base || strncmp(base + 1, UOT_PREFIX, strlen(UOT_PREFIX)) != 0)
		return;
	nftw(dir, uot_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void uot_scratch_rm(const char *dir)
{
	size_t n = strlen(uot_scratch_dir);

	if (!uot_scratch_dir[0] || strncmp(dir, uot_scratch_dir, n) != 0 || dir[n] != '/')
		return;
	nftw(dir, uot_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int uot_scratch_create(void)
{
	const char *build = uot_build_dir();

	if (uot_scratch_dir[0])
		return 0;
	if (mkdir(build, 0755) != 0 && errno != EEXIST)
		return uot_fail("cannot create %s: %s", build, strerror(errno));
	if (uot_memory_fs(build))
		return uot_fail("%s is on tmpfs: dropping pages there frees nothing, "
				"so these measurements would mean nothing", build);
	if (uot_fmt(uot_scratch_dir, sizeof(uot_scratch_dir), "%s/" UOT_PREFIX "%d",
		    build, (int)getpid()) != 0) {
		uot_scratch_dir[0] = '\0';
		return uot_fail("%s: path too long", build);
	}
	if (mkdir(uot_scratch_dir, 0755) != 0 && errno != EEXIST) {
		uot_fail("cannot create %s: %s", uot_scratch_dir, strerror(errno));
		uot_scratch_dir[0] = '\0';
		return -1;
	}
	uot_scratch_owner = getpid();
	return 0;
}

const char *uot_scratch(void)
{
	return uot_scratch_dir;
}

char *uot_scratch_path(char *out, size_t size, const char *name)
{
	uot_fmt(out, size, "%s/%s", uot_scratch_dir, name);
	return out;
}

void uot_scratch_remove(void)
{
	size_t i;

	/* Forked children share the name; only the creator removes it. */
	if (!uot_scratch_dir[0] || uot_scratch_owner != getpid())
		return;
	for (i = 0; i < sizeof(uot_public) / sizeof(uot_public[0]); i++) {
		if (uot_public[i][0])
			uot_rm_tree(uot_public[i]);
		uot_public[i][0] = '\0';
	}
	uot_rm_tree(uot_scratch_dir);
	uot_scratch_dir[0] = '\0';
}

static bool uot_reachable_by_others(const char *path)
{
	char p[PATH_MAX], *slash;
	struct stat st;

	uot_fmt(p, sizeof(p), "%s", path);
	while ((slash = strrchr(p, '/')) && slash != p) {
		*slash = '\0';
		if (stat(p, &st) != 0 || !(st.st_mode & S_IXOTH))
			return false;
	}
	return true;
}

char *uot_public_dir(char *out, size_t size, const char *tag)
{
	size_t i;

	if (!uot_scratch_dir[0]) {
		uot_fail("no scratch directory to go with %s", tag);
		return NULL;
	}
	if (uot_reachable_by_others(uot_scratch_dir)) {
		uot_scratch_path(out, size, tag);
	} else {
		for (i = 0; uot_public[i][0]; i++)
			if (i + 1 == sizeof(uot_public) / sizeof(uot_public[0])) {
				uot_fail("more public directories than testlib keeps");
				return NULL;
			}
		if (uot_fmt(uot_public[i], sizeof(uot_public[i]), "/var/tmp/" UOT_PREFIX "%d-%s",
			    (int)getpid(), tag) != 0 || uot_fmt(out, size, "%s", uot_public[i]) != 0) {
			uot_public[i][0] = '\0';
			return NULL;
		}
	}
	if (mkdir(out, 0755) != 0 || chmod(out, 0755) != 0) {
		uot_fail("mkdir %s: %s", out, strerror(errno));
		return NULL;
	}
	return out;
}

/* ---- cgroups ---- */

int uot_write_str(const char *path, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = write(fd, s, len);
	if (close(fd) != 0 && n == (ssize_t)len)
		return -1;
	return n == (ssize_t)len ? 0 : -1;
}

static int uot_cg_file(char *out, size_t size, const char *cg, const char *file)
{
	return uot_fmt(out, size, "%s/%s", cg, file);
}

/* Sends SIGKILL to everything in the cgroup until it is empty; 0 once it is. */
static int uot_cg_kill_all(const char *cg)
{
	char path[PATH_MAX], buf[4096];
	int round;

	if (uot_cg_file(path, sizeof(path), cg, "cgroup.procs") != 0)
		return -1;
	for (round = 0; round < 250; round++) {
		ssize_t n = uot_read_text(path, buf, sizeof(buf));
		char *p, *end;
		bool any = false;

		if (n < 0)
			return errno == ENOENT ? 0 : -1;
		for (p = buf; *p; p = end) {
			long pid = strtol(p, &end, 10);

			if (end == p)
				break;
			if (pid > 0) {
				kill((pid_t)pid, SIGKILL);
				any = true;
			}
		}
		if (!any)
			return 0;
		uot_nap(UOT_SAMPLE_NS);
	}
	return -1;
}

static int uot_cg_rmdir(const char *cg)
{
	int tries;

	uot_cg_kill_all(cg);
	/* The last task may still be on its way out. */
	for (tries = 0; tries < 100; tries++) {
		if (rmdir(cg) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			break;
		uot_nap(UOT_SAMPLE_NS);
	}
	return -1;
}

int uot_cgroup_supported(void)
{
	struct statfs sfs;

	if (!uot_is_root())
		return uot_fail("not root: cannot make a memory cgroup");
	if (statfs(UOT_CGROUP_ROOT, &sfs) != 0 ||
	    sfs.f_type != CGROUP_SUPER_MAGIC ||
	    access(UOT_CGROUP_ROOT "/memory.stat", R_OK) != 0 ||
	    access(UOT_CGROUP_ROOT "/cgroup.procs", R_OK) != 0)
		return uot_fail("no cgroup v1 memory controller at " UOT_CGROUP_ROOT);
	if (access(UOT_CGROUP_ROOT, W_OK) != 0)
		return uot_fail(UOT_CGROUP_ROOT " is not writable: %s", strerror(errno));
	return 0;
}

int uot_cgroup_create(struct uot_cgroup *cg, uint64_t limit)
{
	static unsigned seq;
	char path[PATH_MAX], num[32];
	unsigned tries = 0;
	bool made;

	memset(cg, 0, sizeof(*cg));
	if (uot_cgroup_supported() != 0)
		return -1;
	/*
	 * Runs in other PID namespaces (`unshare -p`, containers) have the
	 * same small pids as this one: a name taken by such a run is skipped.
	 */
	do {
		uot_fmt(cg->path, sizeof(cg->path), UOT_CGROUP_ROOT "/" UOT_PREFIX "%d-%u",
			(int)getpid(), seq++);
		made = mkdir(cg->path, 0755) == 0;
	} while (!made && errno == EEXIST && ++tries < 1000);
	if (!made) {
		uot_fail("cannot create %s: %s", cg->path, strerror(errno));
		cg->path[0] = '\0';
		return -1;
	}
	uot_fmt(num, sizeof(num), "%llu", (unsigned long long)limit);
	if (uot_cg_file(path, sizeof(path), cg->path, "memory.limit_in_bytes") != 0 ||
	    uot_write_str(path, num) != 0) {
		uot_fail("cannot set %s to %s: %s", path, num, strerror(errno));
		rmdir(cg->path);
		cg->path[0] = '\0';
		return -1;
	}
	cg->limit = limit;
	cg->owner = getpid();
	return 0;
}

int uot_cgroup_reset(struct uot_cgroup *cg)
{
	char path[PATH_MAX];
	int tries;

	if (!cg->path[0])
		return uot_fail("no cgroup");
	if (uot_cg_kill_all(cg->path) != 0)
		return uot_fail("cannot empty %s of its tasks", cg->path);
	/* force_empty uncharges by reclaiming: the cgroup starts from nothing. */
	uot_cg_file(path, sizeof(path), cg->path, "memory.force_empty");
	for (tries = 0; uot_write_str(path, "0") != 0; tries++) {
		if (tries == 20)
			return uot_fail("cannot write %s: %s", path, strerror(errno));
		uot_nap(UOT_SAMPLE_NS);
	}
	uot_cg_file(path, sizeof(path), cg->path, "memory.max_usage_in_bytes");
	uot_write_str(path, "0");
	/*
	 * A run in another PID namespace cannot see our pid and takes a
	 * cgroup unchanged for UOT_SHARED_STALE_S for a dead run's
	 * (uot_sweep_stale); writing its files does not change the
	 * directory.  Marked at every case: a bench longer than that (part 7
	 * at 400 MiB takes over an hour on a shared machine) lost its cgroup
	 * to another session's test run half-way.
	 */
	utimensat(AT_FDCWD, cg->path, NULL, 0);
	return 0;
}

static uint64_t uot_read_u64(const char *path)
{
	char buf[64];

	return uot_read_text(path, buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
}

int uot_cgroup_stat(const struct uot_cgroup *cg, struct uot_memstat *ms)
{
	char path[PATH_MAX], buf[8192], *line, *save = NULL;

	memset(ms, 0, sizeof(*ms));
	if (uot_cg_file(path, sizeof(path), cg->path, "memory.stat") != 0)
		return -1;
	if (uot_read_text(path, buf, sizeof(buf)) < 0)
		return uot_fail("cannot read %s: %s", path, strerror(errno));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v;
		char key[64];

		if (sscanf(line, "%63s %llu", key, &v) != 2)
			continue;
		if (!strcmp(key, "cache"))
			ms->cache = v;
		else if (!strcmp(key, "dirty"))
			ms->dirty = v;
		else if (!strcmp(key, "writeback"))
			ms->writeback = v;
	}
	uot_cg_file(path, sizeof(path), cg->path, "memory.usage_in_bytes");
	ms->usage = uot_read_u64(path);
	return 0;
}

void uot_cgroup_remove(struct uot_cgroup *cg)
{
	/* Forked children share the struct; only the creator removes the cgroup. */
	if (!cg->path[0] || cg->owner != getpid())
		return;
	if (uot_cg_rmdir(cg->path) == 0)
		cg->path[0] = '\0';
	else
		fprintf(stderr, "testlib: cannot remove %s: %s\n", cg->path, strerror(errno));
}

static int uot_cg_join(const struct uot_cgroup *cg)
{
	char path[PATH_MAX], num[32];

	uot_fmt(num, sizeof(num), "%d\n", (int)getpid());
	if (uot_cg_file(path, sizeof(path), cg->path, "cgroup.procs") != 0)
		return -1;
	return uot_write_str(path, num);
}

/*
 * Places every run of the machine shares (/var/tmp, the cgroup root) may
 * hold a live run's entries under a pid this one cannot see: a run in
 * another PID namespace (a container, `unshare -p`) names them with its
 * own pids.  There only entries unchanged for this long are taken for a
 * dead run's; the build directory is the run's own.
 */
#define UOT_SHARED_STALE_S	(30 * 60)

static bool uot_old_enough(const char *path, bool shared)
{
	struct stat sb;

	if (!shared)
		return true;
	return stat(path, &sb) == 0 && time(NULL) - sb.st_mtime > UOT_SHARED_STALE_S;
}

/* Directories of ours in 'dir' (uotest-PID, or uotest-PID-TAG) whose process died. */
static void uot_sweep_dirs(const char *dir, bool shared)
{
	char path[PATH_MAX + 300];
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		pid_t pid = uot_name_pid(e->d_name, '\0') ?: uot_name_pid(e->d_name, '-');

		if (pid && pid != getpid() && !uot_pid_alive(pid)) {
			uot_fmt(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (uot_old_enough(path, shared))
				uot_rm_tree(path);
		}
	}
	if (d)
		closedir(d);
}

void uot_sweep_stale(void)
{
	DIR *d;
	struct dirent *e;
	char path[PATH_MAX + 300];

	uot_sweep_dirs(uot_build_dir(), false);
	/* uot_public_dir()'s. */
	uot_sweep_dirs("/var/tmp", true);
	if (!uot_is_root())
		return;
	d = opendir(UOT_CGROUP_ROOT);
	while (d && (e = readdir(d))) {
		pid_t pid = uot_name_pid(e->d_name, '-');

		if (pid && pid != getpid() && !uot_pid_alive(pid)) {
			uot_fmt(path, sizeof(path), UOT_CGROUP_ROOT "/%s", e->d_name);
			if (!uot_old_enough(path, true))
				continue;
			if (uot_cg_rmdir(path) != 0)
				fprintf(stderr, "testlib: cannot remove stale %s: %s\n",
					path, strerror(errno));
		}
	}
	if (d)
		closedir(d);
}

static void uot_on_signal(int sig)
{
	(void)sig;
	uot_interrupted = 1;
}

void uot_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = uot_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* A reader that went away (demo | head) must not kill us before we clean up. */
	signal(SIGPIPE, SIG_IGN);
}

/* ---- a suite's life ---- */

static struct {
	const char *name;
	pid_t owner;
	void (*cleanup)(void);
	bool done;
	char why[600];
} uot_suite_s;

static void uot_suite_end(void)
{
	if (!uot_suite_owner() || uot_suite_s.done)
		return;
	uot_suite_s.done = true;
	if (uot_suite_s.cleanup)
		uot_suite_s.cleanup();
	uot_scratch_remove();
}

/*
 * Check kills the running case's process group, then hands SIGINT or
 * SIGTERM on to us.  Removing files here is not async-signal-safe, but the
 * parent is only ever waiting for a case when a signal comes; anything
 * missed is removed by the next run's uot_sweep_stale().
 */
static void uot_suite_on_signal(int sig)
{
	uot_suite_end();
	signal(sig, SIG_DFL);
	raise(sig);
}

void uot_suite_begin(const char *name, void (*cleanup)(void))
{
	struct sigaction sa;

	uot_suite_s.name = name;
	uot_suite_s.owner = getpid();
	uot_suite_s.cleanup = cleanup;
	uot_sweep_stale();
	atexit(uot_suite_end);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = uot_suite_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

bool uot_suite_owner(void)
{
	return uot_suite_s.owner == getpid();
}

void uot_skip(const char *fmt, ...)
{
	va_list ap;

	if (uot_suite_s.why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(uot_suite_s.why, sizeof(uot_suite_s.why), fmt, ap);
	va_end(ap);
}

const char *uot_skip_reason(void)
{
	return uot_suite_s.why;
}

bool uot_skipped(const char *what)
{
	if (!uot_suite_s.why[0])
		return false;
	printf("%s: %s%sskipped: %s\n", uot_suite_s.name ? uot_suite_s.name : "check",
	       what ? what : "", what ? ": " : "", uot_suite_s.why);
	fflush(stdout);
	return true;
}

bool uot_need_root(const char *for_what)
{
	if (uot_is_root())
		return true;
	uot_skip("not root: %s", for_what);
	return false;
}

bool uot_need_programs(const char *names)
{
	char list[256], cmd[1024] = "", why[512] = "", *name, *save = NULL;
	const char *word[16];
	size_t n = 0, i;

	uot_fmt(list, sizeof(list), "%s", names);
	for (name = strtok_r(list, " ", &save); name && n < 16; name = strtok_r(NULL, " ", &save))
		word[n++] = name;
	for (i = 0; i < n; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%scommand -v '%s' >/dev/null",
			 i ? " && " : "", word[i]);
	if (uot_sh("%s", cmd) == 0)
		return true;
	/* "a, b or c missing" */
	for (i = 0; i < n; i++)
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s",
			 !i ? "" : i + 1 < n ? ", " : " or ", word[i]);
	uot_skip("%s missing", why);
	return false;
}

bool uot_need_scratch(void)
{
	if (uot_scratch_create() == 0)
		return true;
	uot_skip("%s", uot_why());
	return false;
}

static struct {
	char small[PATH_MAX];	/* where the tmpfs holding a failing disk's image goes */
	char image[PATH_MAX];
	char mnt[PATH_MAX];
	char loop[64];
	bool tmpfs_up, mounted;
} uot_disk_s;

bool uot_disk_need(void)
{
	if (!uot_need_root("cannot mount or attach loop devices") ||
	    !uot_need_programs("losetup mkfs.ext4") || !uot_need_scratch())
		return false;
	/* Inside the scratch directory: removed with it, after uot_disk_down() emptied them. */
	uot_scratch_path(uot_disk_s.small, sizeof(uot_disk_s.small), "small");
	uot_scratch_path(uot_disk_s.mnt, sizeof(uot_disk_s.mnt), "mnt");
	if (mkdir(uot_disk_s.small, 0700) != 0 || mkdir(uot_disk_s.mnt, 0700) != 0) {
		uot_skip("mkdir in %s: %s", uot_scratch(), strerror(errno));
		return false;
	}
	return true;
}

const char *uot_disk_mnt(void)
{
	return uot_disk_s.mnt;
}

void uot_disk_down(void)
{
	if (!uot_suite_owner())
		return;
	/* A busy mount still goes away (lazily) so the loop device and the tmpfs can follow. */
	if (uot_disk_s.mounted && umount(uot_disk_s.mnt) != 0)
		umount2(uot_disk_s.mnt, MNT_DETACH);
	uot_disk_s.mounted = false;
	if (uot_disk_s.loop[0])
		uot_sh("losetup -d %s 2>/dev/null", uot_disk_s.loop);
	uot_disk_s.loop[0] = '\0';
	if (uot_disk_s.image[0])
		unlink(uot_disk_s.image);
	uot_disk_s.image[0] = '\0';
	if (uot_disk_s.tmpfs_up && umount(uot_disk_s.small) != 0)
		umount2(uot_disk_s.small, MNT_DETACH);
	uot_disk_s.tmpfs_up = false;
}

int uot_disk_up(unsigned tmpfs_mib, unsigned image_mib)
{
	char opt[64], cmd[PATH_MAX + 64];
	FILE *p;

	uot_disk_down();
	if (tmpfs_mib) {
		uot_fmt(opt, sizeof(opt), "size=%um", tmpfs_mib);
		if (mount("tmpfs", uot_disk_s.small, "tmpfs", 0, opt) != 0)
			return uot_fail("mount tmpfs: %s", strerror(errno));
		uot_disk_s.tmpfs_up = true;
		uot_fmt(uot_disk_s.image, sizeof(uot_disk_s.image), "%s/disk.img", uot_disk_s.small);
	} else {
		uot_scratch_path(uot_disk_s.image, sizeof(uot_disk_s.image), "disk.img");
	}
	if (uot_sh("truncate -s %uM '%s'", image_mib, uot_disk_s.image) != 0)
		return uot_fail("truncate -s %uM %s failed", image_mib, uot_disk_s.image);
	uot_fmt(cmd, sizeof(cmd), "losetup -f --show '%s'", uot_disk_s.image);
	p = popen(cmd, "r");
	if (!p)
		return uot_fail("popen losetup: %s", strerror(errno));
	if (!fgets(uot_disk_s.loop, sizeof(uot_disk_s.loop), p))
		uot_disk_s.loop[0] = '\0';
	pclose(p);
	uot_disk_s.loop[strcspn(uot_disk_s.loop, "\n")] = '\0';
	if (uot_disk_s.loop[0] != '/') {
		uot_disk_s.loop[0] = '\0';
		return uot_fail("losetup gave no device for %s", uot_disk_s.image);
	}
	if (uot_sh("mkfs.ext4 -q -F %s >/dev/null 2>&1", uot_disk_s.loop) != 0)
		return uot_fail("mkfs.ext4 %s failed", uot_disk_s.loop);
	if (mount(uot_disk_s.loop, uot_disk_s.mnt, "ext4", 0, NULL) != 0)
		return uot_fail("mount %s: %s", uot_disk_s.loop, strerror(errno));
	uot_disk_s.mounted = true;
	return 0;
}

void uot_reexec_preloaded(char **argv, const char *mark, const char *const *env)
{
	const char *const *e;

	if (access(uot_library(), R_OK) != 0) {
		fprintf(stderr, "%s: %s: %s (run make tests)\n", argv[0], uot_library(),
			strerror(errno));
		exit(EXIT_FAILURE);
	}
	setenv("LD_PRELOAD", uot_preload(), 1);
	setenv(mark, "1", 1);
	for (e = env; e && *e; e++)
		putenv((char *)*e);
	execv("/proc/self/exe", argv);
	perror("execv /proc/self/exe");
	exit(EXIT_FAILURE);
}

bool uot_library_mapped(void)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;

	if (!maps)
		return false;
	while (fgets(line, sizeof(line), maps))
		found |= strstr(line, "/libuseonce.so") != NULL;
	fclose(maps);
	return found;
}

/* ---- files ---- */

static uint64_t uot_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* One MiB of the file: seeded by its index, so every MiB differs. */
static void uot_fill(uint64_t *buf, size_t words, uint32_t seed, uint64_t index)
{
	uint64_t s = ((uint64_t)seed << 32) ^ index, x;
	size_t i;

	x = uot_splitmix(&s) | 1;
	for (i = 0; i < words; i++) {
		/* xorshift64*: fast enough that the disk stays the bottleneck. */
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		buf[i] = x * 0x2545f4914f6cdd1dULL;
	}
}

static int uot_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR && !uot_interrupted)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int uot_make_file(const char *path, uint64_t size, uint32_t seed)
{
	uint64_t *buf, done = 0;
	int fd, ret = -1;

	buf = malloc(UOT_CHUNK);
	if (!buf)
		return uot_fail("out of memory");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		uot_fail("cannot create %s: %s", path, strerror(errno));
		goto out;
	}
	while (done < size) {
		size_t n = size - done < UOT_CHUNK ? (size_t)(size - done) : UOT_CHUNK;

		if (uot_interrupted) {
			uot_fail("interrupted");
			goto out_close;
		}
		uot_fill(buf, UOT_CHUNK / sizeof(*buf), seed, done / UOT_CHUNK);
		if (uot_write_all(fd, buf, n) != 0) {
			uot_fail("cannot write %s: %s", path, strerror(errno));
			goto out_close;
		}
		done += n;
		/*
		 * Keep the disk busy without filling memory: start writeback
		 * of each batch as it completes and drop the one before it
		 * once written.  We own this file, so waiting on it hides no
		 * one's error; fdatasync below reports ours.
		 */
		if (done % UOT_WRITE_BATCH == 0) {
			sync_file_range(fd, (off_t)(done - UOT_WRITE_BATCH),
					(off_t)UOT_WRITE_BATCH, SYNC_FILE_RANGE_WRITE);
			if (done >= 2 * UOT_WRITE_BATCH) {
				uint64_t from = done - 2 * UOT_WRITE_BATCH;

				sync_file_range(fd, (off_t)from, (off_t)UOT_WRITE_BATCH,
						SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
						SYNC_FILE_RANGE_WAIT_AFTER);
				posix_fadvise(fd, (off_t)from, (off_t)UOT_WRITE_BATCH,
					      POSIX_FADV_DONTNEED);
			}
		}
	}
	if (fdatasync(fd) != 0) {
		uot_fail("cannot write %s out: %s", path, strerror(errno));
		goto out_close;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	ret = 0;
out_close:
	if (close(fd) != 0 && ret == 0)
		ret = uot_fail("cannot close %s: %s", path, strerror(errno));
	if (ret != 0)
		unlink(path);
out:
	free(buf);
	return ret;
}

static int uot_pread_full(int fd, char *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR && !uot_interrupted)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (int)(got == len ? 0 : 1);
}

int uot_files_equal(const char *a, uint64_t a_off, const char *b, uint64_t b_off,
		    uint64_t len)
{
	struct stat sa, sb;
	char *ba = NULL, *bb = NULL;
	uint64_t done = 0;
	int fa, fb = -1, ret = -1;

	fa = open(a, O_RDONLY | O_CLOEXEC);
	if (fa < 0)
		return uot_fail("cannot open %s: %s", a, strerror(errno));
	fb = open(b, O_RDONLY | O_CLOEXEC);
	if (fb < 0) {
		uot_fail("cannot open %s: %s", b, strerror(errno));
		goto out;
	}
	if (fstat(fa, &sa) != 0 || fstat(fb, &sb) != 0) {
		uot_fail("cannot stat: %s", strerror(errno));
		goto out;
	}
	if (len == UINT64_MAX) {
		uint64_t la = (uint64_t)sa.st_size > a_off ? (uint64_t)sa.st_size - a_off : 0;
		uint64_t lb = (uint64_t)sb.st_size > b_off ? (uint64_t)sb.st_size - b_off : 0;

		if (la != lb) {
			uot_fail("%s has %llu bytes from %llu, %s has %llu from %llu", a,
				 (unsigned long long)la, (unsigned long long)a_off, b,
				 (unsigned long long)lb, (unsigned long long)b_off);
			ret = 0;
			goto out;
		}
		len = la;
	}
	ba = malloc(UOT_CHUNK);
	bb = malloc(UOT_CHUNK);
	if (!ba || !bb) {
		uot_fail("out of memory");
		goto out;
	}
	while (done < len) {
		size_t n = len - done < UOT_CHUNK ? (size_t)(len - done) : UOT_CHUNK;
		int ra, rb;

		if (uot_interrupted) {
			uot_fail("interrupted");
			goto out;
		}
		ra = uot_pread_full(fa, ba, n, a_off + done);
		rb = uot_pread_full(fb, bb, n, b_off + done);
		if (ra < 0 || rb < 0) {
			uot_fail("cannot read: %s", strerror(errno));
			goto out;
		}
		if (ra || rb) {
			uot_fail("%s ends before byte %llu", ra ? a : b,
				 (unsigned long long)(done + n));
			ret = 0;
			goto out;
		}
		if (memcmp(ba, bb, n) != 0) {
			size_t i = 0;

			while (ba[i] == bb[i])
				i++;
			uot_fail("%s and %s differ at byte %llu of the compared range", a, b,
				 (unsigned long long)(done + i));
			ret = 0;
			goto out;
		}
		done += n;
	}
	ret = 1;
out:
	free(ba);
	free(bb);
	close(fa);
	if (fb >= 0)
		close(fb);
	return ret;
}

int uot_make_cold(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), tries;
	int64_t left = 0;

	if (fd < 0)
		return uot_fail("cannot open %s: %s", path, strerror(errno));
	/* Dirty or writeback pages are not dropped: write them out first. */
	if (fdatasync(fd) != 0) {
		uot_fail("cannot write %s out: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	/*
	 * A test that finds its file still cached sees the guard keep what was
	 * cached before, and fails for the wrong reason (check_hooks once found
	 * 8 MiB of a stream left after its close at load 9, a window of it
	 * perhaps never made cold).  A file just read often keeps a few pages
	 * through the first drop (a quarter of check_tree's 400 files) and loses
	 * them to a second at once; past that, a nap between tries, for up to
	 * a second, then say so.
	 */
	for (tries = 0; tries < 50; tries++) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		left = uot_resident(path, NULL);
		if (left <= 0)
			break;
		if (tries)
			uot_nap(UOT_SAMPLE_NS);
		fdatasync(fd);
	}
	close(fd);
	if (left < 0)
		return -1;
	if (left > 0)
		return uot_fail("%s: %lld bytes still cached after %d tries to drop them",
				path, (long long)left, tries);
	return 0;
}

int64_t uot_resident(const char *path, uint64_t *size)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *vec;
	struct stat st;
	uint64_t pages, i, n = 0;
	void *map;
	int fd;

	if (size)
		*size = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return uot_fail("cannot open %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) != 0) {
		close(fd);
		return uot_fail("cannot stat %s: %s", path, strerror(errno));
	}
	if (size)
		*size = (uint64_t)st.st_size;
	if (st.st_size == 0) {
		close(fd);
		return 0;
	}
	pages = ((uint64_t)st.st_size + (uint64_t)page - 1) / (uint64_t)page;
	/* Never touched, so mapping it brings nothing in. */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return uot_fail("cannot map %s: %s", path, strerror(errno));
	vec = malloc(pages);
	if (!vec || mincore(map, (size_t)st.st_size, vec) != 0) {
		uot_fail("mincore %s: %s", path, vec ? strerror(errno) : "out of memory");
		free(vec);
		munmap(map, (size_t)st.st_size);
		return -1;
	}
	for (i = 0; i < pages; i++)
		n += vec[i] & 1;
	free(vec);
	munmap(map, (size_t)st.st_size);
	n *= (uint64_t)page;
	return (int64_t)(n > (uint64_t)st.st_size ? (uint64_t)st.st_size : n);
}

double uot_resident_pct(const char *path)
{
	uint64_t size;
	int64_t res = uot_resident(path, &size);

	if (res <= 0 || size == 0)
		return 0.0;
	return 100.0 * (double)res / (double)size;
}

/* ---- running things ---- */

static int uot_wait(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR)
			return -1;
		if (uot_interrupted)
			kill(pid, SIGKILL);
	}
	return 0;
}

static int uot_touch_child(const char *path, enum uot_touch how)
{
	long page = sysconf(_SC_PAGESIZE);
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0)
		return 1;
	if (how == UOT_TOUCH_MMAP) {
		volatile const char *p;
		off_t i;

		if (st.st_size == 0)
			return 0;
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return 1;
		for (i = 0; i < st.st_size; i += page)
			(void)p[i];
		return 0;
	} else {
		char *buf = malloc(UOT_CHUNK);

		if (!buf)
			return 1;
		for (;;) {
			ssize_t n = read(fd, buf, UOT_CHUNK);

			if (n == 0)
				return 0;
			if (n < 0 && errno != EINTR)
				return 1;
		}
	}
}

int uot_touch_timed(const char *path, enum uot_touch how, const struct uot_cgroup *cg,
		    double *secs)
{
	volatile double *took = MAP_FAILED;
	int status;
	pid_t pid;

	/* The child's clock reading comes back through a shared page. */
	if (secs) {
		took = mmap(NULL, sizeof(*took), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (took == MAP_FAILED)
			return uot_fail("mmap: %s", strerror(errno));
		*took = -1.0;
	}
	pid = fork();
	if (pid < 0) {
		uot_fail("fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		double start;
		int ret;

		if (cg && uot_cg_join(cg) != 0)
			_exit(3);
		start = uot_now();
		ret = uot_touch_child(path, how);
		if (took != MAP_FAILED)
			*took = uot_now() - start;
		_exit(ret);
	}
	if (uot_wait(pid, &status) != 0) {
		uot_fail("waitpid: %s", strerror(errno));
		pid = -1;
	} else if (!uot_exited_ok(status)) {
		uot_fail("touching %s failed: %s", path, uot_status_str(status));
		pid = -1;
	}
out:
	if (took != MAP_FAILED) {
		*secs = *took;
		munmap((void *)took, sizeof(*took));
	}
	return pid < 0 ? -1 : 0;
}

int uot_touch(const char *path, enum uot_touch how, const struct uot_cgroup *cg)
{
	return uot_touch_timed(path, how, cg, NULL);
}

/* In the child: 'path' (truncated) as descriptor 'to'; NULL leaves it alone. */
static int uot_redirect(const char *path, int to)
{
	int fd;

	if (!path)
		return 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		dprintf(2, "testlib: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fd != to) {
		dup2(fd, to);
		close(fd);
	}
	return 0;
}

/* In the child: every variable that starts with one of 'drop' goes. */
static void uot_drop_env(const char *const *drop)
{
	const char *const *d;
	char name[256], **e;
	size_t n;

	for (e = environ; drop && *e; e++)
		for (d = drop; *d; d++) {
			if (strncmp(*e, *d, strlen(*d)))
				continue;
			n = strcspn(*e, "=");
			if (n >= sizeof(name))
				continue;
			memcpy(name, *e, n);
			name[n] = '\0';
			unsetenv(name);
			/* environ moved under us: start again. */
			e = environ - 1;
			break;
		}
}

__attribute__((noreturn))
static void uot_child(const struct uot_cmd *c)
{
	const char *const *e;
	int fd;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	/* Joined before exec, so every page the program touches is charged there. */
	if (c->cg && uot_cg_join(c->cg) != 0) {
		dprintf(2, "testlib: cannot join %s: %s\n", c->cg->path, strerror(errno));
		_exit(126);
	}
	if (c->cwd && chdir(c->cwd) != 0) {
		dprintf(2, "testlib: cannot enter %s: %s\n", c->cwd, strerror(errno));
		_exit(126);
	}
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	if (uot_redirect(c->out, 1) != 0 || uot_redirect(c->err, 2) != 0)
		_exit(126);
	uot_drop_env(c->drop);
	if (c->preload && c->library) {
		const char *first = getenv("UO_PRELOAD_FIRST");
		char list[2 * PATH_MAX + 2];

		uot_fmt(list, sizeof(list), "%s%s%s", first && *first ? first : "",
			first && *first ? ":" : "", c->library);
		setenv("LD_PRELOAD", list, 1);
	} else if (c->preload) {
		setenv("LD_PRELOAD", uot_preload(), 1);
	} else {
		unsetenv("LD_PRELOAD");
	}
	for (e = c->env; e && *e; e++)
		putenv((char *)*e);
	execvp(c->argv[0], (char *const *)c->argv);
	dprintf(2, "testlib: cannot run %s: %s\n", c->argv[0], strerror(errno));
	_exit(127);
}

void uot_series_free(struct uot_series *sr)
{
	free(sr->s);
	memset(sr, 0, sizeof(*sr));
}

/* A sample that does not fit (out of memory) is left out: the run goes on. */
static struct uot_sample *uot_series_next(struct uot_series *sr)
{
	if (sr->n == sr->cap) {
		unsigned cap = sr->cap ? 2 * sr->cap : 256;
		struct uot_sample *s = realloc(sr->s, cap * sizeof(*s));

		if (!s)
			return NULL;
		sr->s = s;
		sr->cap = cap;
	}
	memset(&sr->s[sr->n], 0, sizeof(sr->s[0]));
	return &sr->s[sr->n++];
}

static void uot_sample(const struct uot_cmd *c, struct uot_result *r, double start, bool last)
{
	struct uot_sample *rec = c->series ? uot_series_next(c->series) : NULL;
	struct uot_memstat ms;
	int i;

	if (rec)
		rec->t = uot_now() - start;
	for (i = 0; i < UOT_WATCH_MAX; i++) {
		uint64_t size;
		int64_t res;

		if (!c->watch[i])
			continue;
		res = uot_resident(c->watch[i], &size);
		if (res < 0)
			continue;
		if (rec)
			rec->res[i] = (uint64_t)res;
		if ((uint64_t)res > r->peak[i])
			r->peak[i] = (uint64_t)res;
		if (last) {
			r->after[i] = (uint64_t)res;
			r->size[i] = size;
		}
	}
	if (c->cg && uot_cgroup_stat(c->cg, &ms) == 0) {
		if (ms.cache > r->peak_cache)
			r->peak_cache = ms.cache;
		if (ms.dirty + ms.writeback > r->peak_dirty_wb)
			r->peak_dirty_wb = ms.dirty + ms.writeback;
		if (rec) {
			rec->cache = ms.cache;
			rec->dirty_wb = ms.dirty + ms.writeback;
		}
	}
	r->samples++;
}

int uot_run(const struct uot_cmd *c, struct uot_result *r)
{
	unsigned timeout = c->timeout_s ? c->timeout_s : 300;
	char path[PATH_MAX];
	double start;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->status = -1;
	if (c->cg) {
		uot_cg_file(path, sizeof(path), c->cg->path, "memory.max_usage_in_bytes");
		uot_write_str(path, "0");
	}
	fflush(NULL);
	start = uot_now();
	pid = fork();
	if (pid < 0)
		return uot_fail("fork: %s", strerror(errno));
	if (pid == 0)
		uot_child(c);
	for (;;) {
		int status;
		pid_t w;

		uot_sample(c, r, start, false);
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			r->status = status;
			break;
		}
		if (w < 0 && errno != EINTR)
			return uot_fail("waitpid: %s", strerror(errno));
		if (uot_interrupted || uot_now() - start > timeout) {
			kill(pid, SIGKILL);
			uot_wait(pid, &status);
			r->status = status;
			r->secs = uot_now() - start;
			if (uot_interrupted)
				return uot_fail("%s: interrupted", c->argv[0]);
			return uot_fail("%s: still running after %u s, killed", c->argv[0],
					timeout);
		}
		uot_nap(UOT_SAMPLE_NS);
	}
	r->secs = uot_now() - start;
	/* A terminal's Ctrl-C reaches the child too: its death is not its own failure. */
	if (uot_interrupted)
		return uot_fail("%s: interrupted", c->argv[0]);
	uot_sample(c, r, start, true);
	if (c->cg) {
		r->peak_usage = uot_read_u64(path);
	}
	if (WIFEXITED(r->status) && WEXITSTATUS(r->status) >= 126)
		return uot_fail("%s could not be started (%s)", c->argv[0],
				uot_status_str(r->status));
	return 0;
}

bool uot_exited_ok(int status)
{
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

const char *uot_status_str(int status)
{
	static char buf[64];

	if (status < 0)
		uot_fmt(buf, sizeof(buf), "not run");
	else if (WIFEXITED(status))
		uot_fmt(buf, sizeof(buf), "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		uot_fmt(buf, sizeof(buf), "killed by signal %d", WTERMSIG(status));
	else
		uot_fmt(buf, sizeof(buf), "wait status %#x", status);
	return buf;
}

uint64_t uot_env_mib(const char *prog, const char *name, uint64_t def, uint64_t low)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	v = strtoull(s, &end, 10);
	if (*end || v < low) {
		fprintf(stderr, "%s: ignoring %s=%s (a number of MiB, at least %llu)\n",
			prog, name, s, (unsigned long long)low);
		return def;
	}
	return v;
}

void uot_expand(char *out, size_t size, const char *tpl, const char *const *tokens,
		const char *const *values, size_t n)
{
	size_t len = 0;

	if (!size)
		return;
	out[0] = '\0';
	while (*tpl && len + 1 < size) {
		size_t i;

		for (i = 0; i < n; i++) {
			size_t tl = strlen(tokens[i]);

			if (!strncmp(tpl, tokens[i], tl)) {
				len += (size_t)snprintf(out + len, size - len, "%s", values[i]);
				if (len >= size)
					len = size - 1;
				tpl += tl;
				break;
			}
		}
		if (i == n) {
			out[len++] = *tpl++;
			out[len] = '\0';
		}
	}
}

unsigned uot_strip_lines(char *text, const char *prefix)
{
	size_t plen = strlen(prefix);
	char *in = text, *out = text;
	unsigned n = 0;

	while (*in) {
		char *nl = strchr(in, '\n');
		size_t len = nl ? (size_t)(nl - in) + 1 : strlen(in);

		if (!strncmp(in, prefix, plen)) {
			n++;
		} else {
			memmove(out, in, len);
			out += len;
		}
		in += len;
	}
	*out = '\0';
	return n;
}

uint64_t uot_meminfo_kib(const char *key)
{
	char line[256];
	uint64_t v = 0;
	size_t klen = strlen(key);
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtoull(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}
