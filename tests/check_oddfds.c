/*
 * Odd descriptors: pipes, sockets, ttys, /proc and /sys, memfd, tmpfs,
 * FUSE, O_DIRECT, O_APPEND, sparse files, files truncated and grown while
 * streamed, character and block devices.  Each scenario of the oddfd helper moves known
 * data through one of them and prints a transcript (results, errno, bytes,
 * whether each byte was right); it runs without libuseonce, then with it
 * (2M thresholds, so that every descriptor moves enough to be judged), and
 * the two transcripts must be the same, line for line, with both runs
 * passing their own checks.  The library's trace must then say how it
 * judged the descriptor: a pipe has no file position, tmpfs and /proc are
 * memory filesystems, O_DIRECT is left alone, a block device is not a
 * regular file, and files on disk and on FUSE are streams it drops.
 *
 * FUSE (bindfs) and the loop device need root and skip with a line
 * otherwise; the mount and the loop device are undone in the teardown, at
 * exit and on a signal.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define RUN_TIMEOUT	120
#define LOOP_MIB	64

enum odd_place {
	PLACE_NONE,	/* the scenario needs no directory */
	PLACE_DISK,	/* a fresh directory in the scratch directory */
	PLACE_TMPFS,	/* a fresh directory on tmpfs */
	PLACE_FUSE,	/* a fresh directory in a bindfs mount of the scratch directory */
	PLACE_LOOP,	/* a loop device over a file of the scratch directory */
};

struct odd_scenario {
	const char *name;
	enum odd_place place;
	/* What the trace must say with the library; NULL-terminated. */
	const char *expect[3];
	/* What it must not say. */
	const char *forbid;
};

/* Checked once, at a descriptor's first window, before its position is asked. */
#define NOT_REGULAR	"ignored: not a regular file"
#define MEMORY_FS	"ignored: memory filesystem"
#define STREAM_READ	"read stream from"
#define STREAM_WRITE	"write stream from"
#define STREAM_ANY	" stream from "
#define DROPPED		": drop "

static const struct odd_scenario odd_scenarios[] = {
	/* The control: what a guarded file looks like in the trace. */
	{ .name = "regular", .place = PLACE_DISK,
	  .expect = { STREAM_READ, STREAM_WRITE, DROPPED } },
	{ .name = "pipe", .place = PLACE_DISK, .expect = { NOT_REGULAR } },
	{ .name = "socket", .place = PLACE_DISK, .expect = { NOT_REGULAR } },
	{ .name = "tty", .place = PLACE_NONE, .expect = { NOT_REGULAR }, .forbid = STREAM_ANY },
	{ .name = "proc", .place = PLACE_NONE, .expect = { MEMORY_FS }, .forbid = STREAM_ANY },
	{ .name = "memfd", .place = PLACE_DISK, .expect = { MEMORY_FS } },
	{ .name = "tmpfs", .place = PLACE_TMPFS, .expect = { MEMORY_FS } },
	{ .name = "fuse", .place = PLACE_FUSE, .expect = { STREAM_READ, STREAM_WRITE, DROPPED } },
	{ .name = "direct", .place = PLACE_DISK, .expect = { "ignored: O_DIRECT" } },
	{ .name = "append", .place = PLACE_DISK },
	{ .name = "sparse", .place = PLACE_DISK, .expect = { STREAM_READ, DROPPED } },
	{ .name = "grow", .place = PLACE_DISK, .expect = { STREAM_READ, DROPPED } },
	/* /dev/zero's position is always 0: it would never look sequential anyway. */
	{ .name = "chardev", .place = PLACE_NONE, .expect = { NOT_REGULAR }, .forbid = STREAM_ANY },
	/* devtmpfs, and not a regular file: dd of a whole disk is left to the kernel. */
	{ .name = "blockdev", .place = PLACE_LOOP, .expect = { NOT_REGULAR },
	  .forbid = STREAM_ANY },
};

#define ODD_N	(sizeof(odd_scenarios) / sizeof(odd_scenarios[0]))

/* What a scenario set up, undone by odd_undo() whatever happened. */
static struct {
	char tmpfs_dir[PATH_MAX];	/* ours, on /dev/shm */
	char fuse_src[PATH_MAX];
	char fuse_mnt[PATH_MAX];
	bool fuse_mounted;
	char image[PATH_MAX];
	char loop[64];
} odd;

/* A command's exit status, its stdout's first line into 'out' (may be NULL). */
__attribute__((format(printf, 3, 4)))
static int odd_sh(char *out, size_t size, const char *fmt, ...)
{
	char cmd[2 * PATH_MAX];
	va_list ap;
	FILE *p;
	int status;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (out && (!fgets(out, (int)size, p)))
		out[0] = '\0';
	if (out)
		out[strcspn(out, "\n")] = '\0';
	while (fgetc(p) != EOF)
		;
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void odd_rm_dir(const char *path)
{
	if (path[0])
		odd_sh(NULL, 0, "rm -rf -- '%s'", path);
}

static void odd_undo(void)
{
	if (!uot_suite_owner())
		return;
	if (odd.fuse_mounted) {
		/* Lazily if busy: the mount must not outlive us. */
		if (umount2(odd.fuse_mnt, 0) != 0)
			umount2(odd.fuse_mnt, MNT_DETACH);
		odd.fuse_mounted = false;
	}
	if (odd.loop[0]) {
		odd_sh(NULL, 0, "losetup -d '%s' 2>/dev/null", odd.loop);
		odd.loop[0] = '\0';
	}
	if (odd.tmpfs_dir[0]) {
		odd_rm_dir(odd.tmpfs_dir);
		odd.tmpfs_dir[0] = '\0';
	}
	if (odd.image[0]) {
		unlink(odd.image);
		odd.image[0] = '\0';
	}
}

/*
 * Makes what the scenario needs; 'arg' receives the helper's argument
 * ("" for none).  Returns NULL, or why the scenario is skipped.
 */
static const char *odd_prepare(const struct odd_scenario *sc, char *arg, size_t size)
{
	static char why[PATH_MAX + 128];
	struct statfs sfs;

	arg[0] = '\0';
	switch (sc->place) {
	case PLACE_NONE:
	case PLACE_DISK:
		return NULL;
	case PLACE_TMPFS:
		if (statfs("/dev/shm", &sfs) != 0 || sfs.f_type != TMPFS_MAGIC)
			return "/dev/shm is not a tmpfs here";
		uot_sfmt(odd.tmpfs_dir, sizeof(odd.tmpfs_dir), "/dev/shm/" UOT_PREFIX "%d",
			(int)getpid());
		if (mkdir(odd.tmpfs_dir, 0755) != 0 && errno != EEXIST)
			return uot_sfmt(why, sizeof(why), "cannot create %s: %s", odd.tmpfs_dir,
				       strerror(errno));
		uot_sfmt(arg, size, "%s", odd.tmpfs_dir);
		return NULL;
	case PLACE_FUSE:
		if (!uot_is_root())
			return "not root: cannot mount a FUSE filesystem";
		if (odd_sh(NULL, 0, "command -v bindfs >/dev/null") != 0)
			return "bindfs is missing (tests/install-deps.sh installs it)";
		if (access("/dev/fuse", R_OK | W_OK) != 0)
			return "no /dev/fuse";
		uot_scratch_path(odd.fuse_src, sizeof(odd.fuse_src), "fuse-src");
		uot_scratch_path(odd.fuse_mnt, sizeof(odd.fuse_mnt), "fuse-mnt");
		mkdir(odd.fuse_src, 0755);
		mkdir(odd.fuse_mnt, 0755);
		if (odd_sh(NULL, 0, "bindfs '%s' '%s' 2>&1", odd.fuse_src, odd.fuse_mnt) != 0)
			return "bindfs could not mount (no FUSE in this kernel or container?)";
		odd.fuse_mounted = true;
		if (statfs(odd.fuse_mnt, &sfs) != 0 || sfs.f_type != FUSE_SUPER_MAGIC)
			return "bindfs mounted something that is not FUSE";
		uot_sfmt(arg, size, "%s", odd.fuse_mnt);
		return NULL;
	case PLACE_LOOP: {
		int fd;

		if (!uot_is_root())
			return "not root: cannot attach a loop device";
		if (odd_sh(NULL, 0, "command -v losetup >/dev/null") != 0)
			return "losetup is missing";
		uot_scratch_path(odd.image, sizeof(odd.image), "loop.img");
		fd = open(odd.image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)(LOOP_MIB * UOT_MIB)) != 0) {
			if (fd >= 0)
				close(fd);
			return uot_sfmt(why, sizeof(why), "cannot make %s", odd.image);
		}
		close(fd);
		if (odd_sh(odd.loop, sizeof(odd.loop), "losetup -f --show '%s' 2>/dev/null",
			   odd.image) != 0 || odd.loop[0] != '/') {
			odd.loop[0] = '\0';
			return "no free loop device (losetup -f failed)";
		}
		uot_sfmt(arg, size, "%s", odd.loop);
		return NULL;
	}
	}
	return "unknown place";
}

/* The scenario's directory for one run: a fresh one under the prepared place. */
static void odd_run_dir(const struct odd_scenario *sc, const char *base, bool with, char *out,
			size_t size)
{
	char name[64];

	uot_sfmt(name, sizeof(name), "%s-%s", sc->name, with ? "with" : "without");
	if (sc->place == PLACE_DISK)
		uot_scratch_path(out, size, name);
	else
		uot_sfmt(out, size, "%s/%s", base, name);
	odd_rm_dir(out);
	ck_assert_msg(mkdir(out, 0755) == 0, "cannot create %s: %s", out, strerror(errno));
}

static size_t odd_slurp(const char *path, char *out, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = 0, r;

	while (fd >= 0 && (size_t)n < size - 1 && (r = read(fd, out + n, size - 1 - (size_t)n)) > 0)
		n += r;
	out[n] = '\0';
	if (fd >= 0)
		close(fd);
	return (size_t)n;
}

/* The first line where the two differ, for the failure message. */
static void odd_first_diff(const char *a, const char *b, char *out, size_t size)
{
	unsigned line = 1;
	size_t i = 0, start = 0;

	while (a[i] && a[i] == b[i]) {
		if (a[i] == '\n') {
			line++;
			start = i + 1;
		}
		i++;
	}
	uot_sfmt(out, size, "line %u: without \"%.*s\", with \"%.*s\"", line,
		(int)strcspn(a + start, "\n"), a + start, (int)strcspn(b + start, "\n"), b + start);
}

/* Distinct "ignored: why" reasons of a trace, and counts of streams and drops. */
static void odd_summarise(const char *trace, char *out, size_t size)
{
	const char *p = trace;
	char reasons[512] = "";
	unsigned streams = 0, drops = 0, ignored = 0;

	while (*p) {
		const char *eol = strchr(p, '\n'), *ig;
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		streams += memmem(p, len, " stream from ", 13) != NULL;
		drops += memmem(p, len, DROPPED, strlen(DROPPED)) != NULL;
		ig = memmem(p, len, "ignored: ", 9);
		if (ig) {
			char reason[128];

			ignored++;
			uot_sfmt(reason, sizeof(reason), "%.*s", (int)(len - (size_t)(ig + 9 - p)),
				ig + 9);
			if (!strstr(reasons, reason) && strlen(reasons) + strlen(reason) + 4 <
			    sizeof(reasons))
				uot_sfmt(reasons + strlen(reasons), sizeof(reasons) - strlen(reasons),
					"%s\"%s\"", reasons[0] ? ", " : "", reason);
		}
		p += len + (eol != NULL);
	}
	uot_sfmt(out, size, "%u streams, %u drops, %u ignored%s%s", streams, drops, ignored,
		ignored ? ": " : "", reasons);
}

START_TEST(test_scenario)
{
	const struct odd_scenario *sc = &odd_scenarios[_i];
	static char text[2][64 * 1024], trace[256 * 1024];
	char helper[PATH_MAX], base[PATH_MAX], dir[PATH_MAX], out[2][PATH_MAX + 8];
	char tracefile[PATH_MAX], e_trace[PATH_MAX + 32], diff[512], summary[768];
	const char *why;
	struct uot_result r[2];
	int with, i;

	if (uot_skipped(sc->name))
		return;
	why = odd_prepare(sc, base, sizeof(base));
	if (why) {
		printf("oddfds: %s: skipped: %s\n", sc->name, why);
		return;
	}
	uot_sfmt(helper, sizeof(helper), "%s/tests/oddfd", uot_build_dir());
	ck_assert_msg(access(helper, X_OK) == 0, "%s is missing: make tests", helper);
	uot_scratch_path(tracefile, sizeof(tracefile), sc->name);
	strncat(tracefile, ".trace", sizeof(tracefile) - strlen(tracefile) - 1);
	unlink(tracefile);

	for (with = 0; with < 2; with++) {
		const char *env[] = {
			"USEONCE_THRESHOLD=2M", "USEONCE_WINDOW=2M", "USEONCE_REUSE=0",
			uot_sfmt(e_trace, sizeof(e_trace), "USEONCE_TRACE=%s", tracefile), NULL
		};
		const char *argv[] = { helper, sc->name, dir, NULL };
		struct uot_cmd c;

		if (sc->place == PLACE_LOOP)
			uot_sfmt(dir, sizeof(dir), "%s", base);
		else if (sc->place != PLACE_NONE)
			odd_run_dir(sc, base, with, dir, sizeof(dir));
		else
			argv[2] = NULL;
		uot_scratch_path(out[with], sizeof(out[with]), sc->name);
		strncat(out[with], with ? ".with" : ".without",
			sizeof(out[with]) - strlen(out[with]) - 1);
		memset(&c, 0, sizeof(c));
		c.argv = argv;
		c.preload = with;
		c.env = with ? env : NULL;
		c.out = out[with];
		c.timeout_s = RUN_TIMEOUT;
		ck_assert_msg(uot_run(&c, &r[with]) == 0, "%s: %s", sc->name, uot_why());
		odd_slurp(out[with], text[with], sizeof(text[with]));
		if (sc->place != PLACE_NONE && sc->place != PLACE_LOOP)
			odd_rm_dir(dir);
	}
	odd_slurp(tracefile, trace, sizeof(trace));
	odd_summarise(trace, summary, sizeof(summary));
	printf("oddfds: %s: %s without (%.1f s), %s with (%.1f s), transcripts %s; trace: %s\n",
	       sc->name, uot_status_str(r[0].status), r[0].secs,
	       uot_status_str(r[1].status), r[1].secs,
	       strcmp(text[0], text[1]) ? "DIFFER" : "identical", summary);
	fflush(stdout);

	ck_assert_msg(uot_exited_ok(r[0].status), "%s fails without the library (%s):\n%s",
		      sc->name, uot_status_str(r[0].status), text[0]);
	if (!strncmp(text[0], "SKIP: ", 6) && !strcmp(text[0], text[1])) {
		printf("oddfds: %s: skipped: %s", sc->name, text[0] + 6);
		return;
	}
	ck_assert_msg(text[0][0], "%s said nothing", sc->name);
	if (strcmp(text[0], text[1])) {
		odd_first_diff(text[0], text[1], diff, sizeof(diff));
		ck_abort_msg("%s: the transcripts differ at %s", sc->name, diff);
	}
	ck_assert_msg(uot_exited_ok(r[1].status), "%s with the library: %s:\n%s", sc->name,
		      uot_status_str(r[1].status), text[1]);
	for (i = 0; i < 3 && sc->expect[i]; i++)
		ck_assert_msg(strstr(trace, sc->expect[i]),
			      "%s: the trace never says \"%s\" (it says: %s)", sc->name,
			      sc->expect[i], summary);
	ck_assert_msg(!sc->forbid || !strstr(trace, sc->forbid),
		      "%s: the trace says \"%s\" (%s)", sc->name, sc->forbid, summary);
	/* The helper's own output is for the comparison only: not a trace of ours. */
	ck_assert_msg(!strstr(text[1], "useonce"), "%s: the library wrote into stdout",
		      sc->name);
}
END_TEST

static void odd_setup(void)
{
}

static void odd_teardown(void)
{
	odd_undo();
}

static Suite *odd_suite(void)
{
	Suite *s = suite_create("oddfds");
	size_t i;

	for (i = 0; i < ODD_N; i++) {
		TCase *tc = tcase_create(odd_scenarios[i].name);

		tcase_add_checked_fixture(tc, odd_setup, odd_teardown);
		tcase_add_loop_test(tc, test_scenario, (int)i, (int)i + 1);
		suite_add_tcase(s, tc);
	}
	return s;
}

/*
 * The pid in ".../uotest-PID/..." or "/dev/shm/uotest-PID" if that process
 * is gone, else 0.  A run in another PID namespace names its directory
 * with a pid this one cannot see: a directory changed in the last half
 * hour (every run is shorter) is taken for a live run's.
 */
static pid_t odd_dead_owner(const char *path)
{
	const char *p = strstr(path, "/" UOT_PREFIX), *start;
	char dir[PATH_MAX], *end;
	struct stat sb;
	long pid;

	if (!p)
		return 0;
	pid = strtol(p + 1 + strlen(UOT_PREFIX), &end, 10);
	if (pid <= 0 || (*end && *end != '/' && *end != ' ' && *end != ')') || pid == getpid())
		return 0;
	if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return 0;
	/* losetup names the backing file in parentheses. */
	for (start = p; start > path && start[-1] != '('; start--)
		;
	if ((size_t)(end - start) >= sizeof(dir))
		return 0;
	memcpy(dir, start, (size_t)(end - start));
	dir[end - start] = '\0';
	if (stat(dir, &sb) == 0 && time(NULL) - sb.st_mtime < 30 * 60)
		return 0;
	return (pid_t)pid;
}

/*
 * What a run killed outright left: its FUSE mount, its loop device, its
 * directory on tmpfs.  Undone before testlib sweeps its scratch directory.
 */
static void odd_sweep_stale(void)
{
	char line[PATH_MAX + 128], path[PATH_MAX];
	FILE *f = fopen("/proc/self/mounts", "r");
	struct dirent *e;
	DIR *d;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %4095s", path) == 1 && odd_dead_owner(path))
			umount2(path, MNT_DETACH);
	if (f)
		fclose(f);
	f = popen("losetup -a 2>/dev/null", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char dev[64];

		if (sscanf(line, "%63[^:]:", dev) == 1 && odd_dead_owner(line))
			odd_sh(NULL, 0, "losetup -d '%s' 2>/dev/null", dev);
	}
	if (f)
		pclose(f);
	d = opendir("/dev/shm");
	while (d && (e = readdir(d))) {
		uot_sfmt(path, sizeof(path), "/dev/shm/%s", e->d_name);
		if (!strncmp(e->d_name, UOT_PREFIX, strlen(UOT_PREFIX)) && odd_dead_owner(path))
			odd_rm_dir(path);
	}
	if (d)
		closedir(d);
}

int main(void)
{
	/* Mounts and loop devices first: the scratch directories they sit in go next. */
	if (uot_is_root())
		odd_sweep_stale();
	uot_suite_begin("oddfds", odd_undo);
	uot_need_scratch();
	/* In one process: the teardown that unmounts and detaches runs even after a failure. */
	return uot_check_run(odd_suite(), true);
}
