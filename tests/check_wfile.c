/*
 * The watcher's files (cmd/wfile.c), driven directly: this process plays
 * both the watched program (its own descriptors read and write) and the
 * watcher (uo_wfiles_* on descriptors of its own for the same files).
 *
 *   before	a file cached when first seen stays cached after it is read
 *		again and released
 *	brought	what a read brought into the cache goes when it is released
 *	written	a new file, written then synced (a backup's pack), goes as
 *		soon as it is clean, while the program still has it open
 *	flushcut	writeback the sample's time bound (wb_until) cut short is
 *		not counted as flushed: --stats says what was submitted
 *	unlinked	a temporary file (unlinked) is not followed: no descriptor
 *		of ours keeps its pages, and it is never written back by us
 *	events	fanotify's events of a file, merged (two opens, one event of
 *		their closes): the file is released at the close all the same
 *	others	a cold file the program only holds open for reading, appended
 *		to by another process: the appended data is not the program's
 *		(neither its dirty pages nor its growth) and stays cached
 *	listing	(root, bindfs) a directory's listing opens its files, but not
 *		a FUSE file bind-mounted over one of them
 *	leased	a file with a lease is known as such from /proc/locks (read
 *		once until forgotten), also when stat names another device
 *		for it than /proc/locks does (a btrfs subvolume)
 *
 * Files live in the scratch directory under the build directory; a memory
 * filesystem there (whose pages are never ours to drop) skips the suite.
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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"
#include "wfile.h"

#define FILE_MIB	16
#define BIG_MIB		32

static struct uo_tuning tuning;
static struct uo_wfiles wf;

static char *path(char *out, size_t size, const char *name)
{
	return uot_scratch_path(out, size, name);
}

/* Reads the whole file through a descriptor of the "program". */
static void read_all(int fd)
{
	static char buf[1 << 20];
	ssize_t n;
	off_t at = 0;

	while ((n = pread(fd, buf, sizeof(buf), at)) > 0)
		at += n;
	ck_assert_msg(n == 0, "read: %s", strerror(errno));
}

static void write_mib(int fd, unsigned mib)
{
	static char buf[1 << 20];
	unsigned i;

	memset(buf, 'w', sizeof(buf));
	for (i = 0; i < mib; i++)
		ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
}

static void setup(void)
{
	uo_tuning_defaults(&tuning);
	uo_wfiles_init(&wf, &tuning, false);
}

static void teardown(void)
{
	uo_wfiles_free(&wf);
}

/* The program's descriptor and ours on a file it reads; the watcher follows ours. */
static int see_reader(const char *p, int *prog, int *ours)
{
	int i;

	*prog = open(p, O_RDONLY);
	*ours = open(p, O_RDONLY);
	ck_assert(*prog >= 0 && *ours >= 0);
	i = uo_wfiles_see(&wf, *ours, 0);
	ck_assert_int_ge(i, 0);
	return i;
}

START_TEST(test_before)
{
	char p[512];
	int prog, ours, i;
	int64_t after;

	if (uot_skipped("before"))
		return;
	path(p, sizeof(p), "before");
	ck_assert_int_eq(uot_make_file(p, FILE_MIB * UOT_MIB, 1), 0);
	ck_assert_int_eq(uot_sh("cat '%s' >/dev/null", p), 0);
	i = see_reader(p, &prog, &ours);
	read_all(prog);
	uo_wfiles_work(&wf);
	uo_wfiles_release(&wf, i);
	uo_wfiles_work(&wf);
	close(prog);
	close(ours);
	after = uot_resident(p, NULL);
	printf("wfile: before: %.1f of %d MiB still cached\n", uot_mib((uint64_t)after), FILE_MIB);
	ck_assert_msg(after >= (int64_t)(FILE_MIB - 2) * (int64_t)UOT_MIB,
		      "a file cached before was dropped: %.1f MiB left", uot_mib((uint64_t)after));
}
END_TEST

START_TEST(test_brought)
{
	char p[512];
	int prog, ours, i;
	int64_t after;

	if (uot_skipped("brought"))
		return;
	path(p, sizeof(p), "brought");
	ck_assert_int_eq(uot_make_file(p, BIG_MIB * UOT_MIB, 2), 0);
	i = see_reader(p, &prog, &ours);
	read_all(prog);
	ck_assert_msg(uot_resident(p, NULL) >= (int64_t)(BIG_MIB / 2) * (int64_t)UOT_MIB,
		      "the read did not cache the file: this test cannot tell");
	uo_wfiles_work(&wf);
	uo_wfiles_release(&wf, i);
	close(prog);
	close(ours);
	after = uot_resident(p, NULL);
	printf("wfile: brought: %.1f of %d MiB left cached\n", uot_mib((uint64_t)after), BIG_MIB);
	ck_assert_msg(after <= 2 * (int64_t)UOT_MIB, "what the read brought in stayed: %.1f MiB",
		      uot_mib((uint64_t)after));
}
END_TEST

/*
 * A new file the program writes ('prog') and the watcher's own descriptor
 * of it ('ours'), seen as the watcher sees it: the program's descriptor is
 * open for writing.  The file's index in the table.
 */
static int open_written(char *p, size_t size, const char *name, int *prog, int *ours)
{
	int i;

	path(p, size, name);
	unlink(p);
	*prog = open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
	ck_assert_msg(*prog >= 0, "%s: %s", p, strerror(errno));
	*ours = open(p, O_RDONLY);
	ck_assert_int_ge(*ours, 0);
	i = uo_wfiles_see(&wf, *ours, UO_WF_FRESH | UO_WF_WRITABLE);
	ck_assert_int_ge(i, 0);
	return i;
}

START_TEST(test_written)
{
	char p[512];
	int prog, ours, i;
	int64_t synced, after;

	if (uot_skipped("written"))
		return;
	i = open_written(p, sizeof(p), "written", &prog, &ours);
	uo_wfiles_work(&wf);
	/* Written and synced between two samples: never seen dirty. */
	write_mib(prog, FILE_MIB);
	ck_assert_int_eq(fdatasync(prog), 0);
	synced = uot_resident(p, NULL);
	uo_wfiles_work(&wf);
	after = uot_resident(p, NULL);
	printf("wfile: written: %.1f MiB cached after the sync, %.1f after a sample, still open\n",
	       uot_mib((uint64_t)synced), uot_mib((uint64_t)after));
	uo_wfiles_release(&wf, i);
	close(prog);
	close(ours);
	ck_assert_msg(synced >= (int64_t)(FILE_MIB / 2) * (int64_t)UOT_MIB,
		      "the written file was not cached after its sync: this test cannot tell");
	ck_assert_msg(after <= 2 * (int64_t)UOT_MIB,
		      "a written, synced file stayed cached while open: %.1f MiB",
		      uot_mib((uint64_t)after));
}
END_TEST

START_TEST(test_flushcut)
{
	char p[512];
	int prog, ours, i;
	uint64_t cut, sent;

	if (uot_skipped("flushcut"))
		return;
	i = open_written(p, sizeof(p), "flushcut", &prog, &ours);
	write_mib(prog, FILE_MIB);
	/* A sample whose 10 ms of writeback were spent before it came to this file. */
	wf.wb_until = 1;
	wf.wb_cut = false;
	uo_wfiles_work(&wf);
	cut = wf.flushed;
	wf.wb_until = 0;
	uo_wfiles_work(&wf);
	sent = wf.flushed - cut;
	printf("wfile: flushcut: %.1f MiB counted flushed in a cut sample (%s), %.1f in the next; "
	       "%d MiB written\n", uot_mib(cut), wf.wb_cut ? "cut" : "not cut", uot_mib(sent),
	       FILE_MIB);
	uo_wfiles_release(&wf, i);
	close(prog);
	close(ours);
	unlink(p);
	ck_assert_msg(wf.wb_cut, "the bound cut nothing: this test cannot tell");
	ck_assert_msg(cut == 0, "writeback never submitted was counted flushed: %.1f MiB",
		      uot_mib(cut));
	ck_assert_msg(sent <= (uint64_t)FILE_MIB * UOT_MIB,
		      "more counted flushed than was written: %.1f MiB", uot_mib(sent));
}
END_TEST

START_TEST(test_unlinked)
{
	char p[512], self[64];
	int prog, ours, i, n;

	if (uot_skipped("unlinked"))
		return;
	path(p, sizeof(p), "unlinked");
	unlink(p);
	prog = open(p, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_msg(prog >= 0, "%s: %s", p, strerror(errno));
	ck_assert_int_eq(unlink(p), 0);
	/* As the watcher reopens a descriptor: through /proc. */
	ours = open(uot_sfmt(self, sizeof(self), "/proc/self/fd/%d", prog), O_RDONLY);
	ck_assert_int_ge(ours, 0);
	i = uo_wfiles_see(&wf, ours, UO_WF_FRESH);
	for (n = 0; n < 4; n++) {
		write_mib(prog, FILE_MIB / 4);
		uo_wfiles_work(&wf);
	}
	printf("wfile: unlinked: followed %s, %d MiB written, %.1f MiB flushed by the watcher\n",
	       i >= 0 ? "yes" : "no", FILE_MIB, uot_mib(wf.flushed));
	uo_wfiles_release(&wf, i);
	close(prog);
	close(ours);
	ck_assert_msg(i < 0, "an unlinked file is followed: a descriptor of ours would keep it");
	ck_assert_msg(wf.flushed == 0, "an unlinked file's writeback was started: %.1f MiB",
		      uot_mib(wf.flushed));
}
END_TEST

START_TEST(test_events)
{
	char p[512];
	int prog, ours, i, j;
	int64_t after;

	if (uot_skipped("events"))
		return;
	path(p, sizeof(p), "events");
	ck_assert_int_eq(uot_make_file(p, BIG_MIB * UOT_MIB, 4), 0);
	ck_assert_int_eq(uot_make_cold(p), 0);
	ours = open(p, O_RDONLY);
	ck_assert_int_ge(ours, 0);
	/* Opened twice (dd opens its output twice), both opens reported. */
	i = uo_wfiles_see(&wf, ours, UO_WF_EVENT);
	j = uo_wfiles_see(&wf, ours, UO_WF_EVENT);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(i, j);
	prog = open(p, O_RDONLY);
	ck_assert_int_ge(prog, 0);
	read_all(prog);
	close(prog);
	ck_assert_msg(uot_resident(p, NULL) >= (int64_t)(BIG_MIB / 2) * (int64_t)UOT_MIB,
		      "the read did not cache the file: this test cannot tell");
	/* Both closes merged into one event. */
	uo_wfiles_closed(&wf, i);
	uo_wfiles_work(&wf);
	after = uot_resident(p, NULL);
	printf("wfile: events: %.1f of %d MiB left cached, %s followed\n", uot_mib((uint64_t)after),
	       BIG_MIB, uo_wfiles_find(&wf, ours) >= 0 ? "still" : "no longer");
	ck_assert_msg(uo_wfiles_find(&wf, ours) < 0,
		      "a file whose open events were all closed is still followed (held open)");
	close(ours);
	ck_assert_msg(after <= 2 * (int64_t)UOT_MIB, "what the read brought in stayed: %.1f MiB",
		      uot_mib((uint64_t)after));
}
END_TEST

START_TEST(test_others)
{
	char p[512];
	int writer, ours, i, n;
	int64_t appended, after;

	if (uot_skipped("others"))
		return;
	path(p, sizeof(p), "others");
	ck_assert_int_eq(uot_make_file(p, 4 * UOT_MIB, 3), 0);
	ck_assert_int_eq(uot_make_cold(p), 0);
	/* The program holds it read-only (the watcher is told no more). */
	ours = open(p, O_RDONLY);
	ck_assert_int_ge(ours, 0);
	i = uo_wfiles_see(&wf, ours, 0);
	ck_assert_int_ge(i, 0);
	uo_wfiles_work(&wf);
	/* Someone else appends, seen dirty, then synced, across samples. */
	writer = open(p, O_WRONLY | O_APPEND);
	ck_assert_int_ge(writer, 0);
	for (n = 0; n < 4; n++) {
		write_mib(writer, BIG_MIB / 4);
		uo_wfiles_work(&wf);
	}
	ck_assert_int_eq(fdatasync(writer), 0);
	close(writer);
	appended = uot_resident(p, NULL);
	for (n = 0; n < 4; n++) {
		usleep(60 * 1000);
		uo_wfiles_work(&wf);
	}
	uo_wfiles_release(&wf, i);
	uo_wfiles_work(&wf);
	close(ours);
	after = uot_resident(p, NULL);
	printf("wfile: others: %.1f MiB cached after another's append of %d, %.1f after release\n",
	       uot_mib((uint64_t)appended), BIG_MIB, uot_mib((uint64_t)after));
	ck_assert_msg(appended >= (int64_t)(BIG_MIB - 2) * (int64_t)UOT_MIB,
		      "the append was not cached: this test cannot tell");
	ck_assert_msg(after >= (int64_t)(BIG_MIB - 2) * (int64_t)UOT_MIB,
		      "another process's append to a file held read-only was dropped: %.1f MiB left",
		      uot_mib((uint64_t)after));
}
END_TEST

/* How many FUSE OPEN requests bindfs's debug log at 'log' shows from pid (or all, pid 0). */
static int fuse_opens(const char *log, pid_t pid)
{
	char cmd[1024], line[64];
	FILE *f;
	int n = -1;

	if (pid)
		uot_sfmt(cmd, sizeof(cmd), "grep 'opcode: OPEN' %s | grep -c 'pid: %d$'", log,
			 (int)pid);
	else
		uot_sfmt(cmd, sizeof(cmd), "grep -c 'opcode: OPEN' %s", log);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		n = atoi(line);
	pclose(f);
	return n;
}

START_TEST(test_listing)
{
	char d[512], log[600], dir[600];
	int fd, ours, all, st;

	if (!uot_is_root() || access("/usr/bin/bindfs", X_OK) != 0 ||
	    access("/dev/fuse", F_OK) != 0) {
		printf("wfile: listing: skipped: needs root, bindfs and /dev/fuse\n");
		return;
	}
	path(d, sizeof(d), "listing");
	uot_sfmt(log, sizeof(log), "%s/log", d);
	uot_sfmt(dir, sizeof(dir), "%s/dir", d);
	st = uot_sh("D=%s; mkdir -p $D/src $D/f $D/dir && head -c 1M /dev/zero >$D/src/file && "
		    "touch $D/dir/x $D/dir/y || exit 1; bindfs -d $D/src $D/f >$D/log 2>&1 & "
		    "for i in $(seq 50); do mountpoint -q $D/f && break; sleep 0.1; done; "
		    "mount --bind $D/f/file $D/dir/x", d);
	if (st != 0) {
		uot_sh("umount %s/f 2>/dev/null; rm -rf %s", d, d);
		printf("wfile: listing: skipped: bindfs could not mount\n");
		return;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	uo_wfiles_listing(&wf, fd);
	close(fd);
	/* Someone else opens it: the log shows opens. */
	uot_sh("head -c 1 %s/x >/dev/null", dir);
	uot_sh("umount %s/x; umount %s/f; sleep 0.3", dir, d);
	ours = fuse_opens(log, getpid());
	all = fuse_opens(log, 0);
	uot_sh("rm -rf %s", d);
	printf("wfile: listing: FUSE opens: by the listing %d, in all %d\n", ours, all);
	ck_assert_msg(all > 0, "bindfs logged no open at all: this test cannot tell");
	ck_assert_msg(ours == 0, "listing a local directory opened a FUSE file bind-mounted "
		      "over an entry (%d)", ours);
}
END_TEST

static void fixture(void)
{
	char p[512];
	int fd;

	if (!uot_need_scratch())
		return;
	path(p, sizeof(p), "probe");
	fd = open(p, O_RDWR | O_CREAT, 0600);
	if (fd < 0) {
		uot_skip("%s: %s", p, strerror(errno));
		return;
	}
	if (uo_wf_memory_fs(fd))
		uot_skip("the build directory is on a memory filesystem: nothing there is dropped");
	close(fd);
	unlink(p);
}

START_TEST(test_leased)
{
	char p[PATH_MAX];
	struct stat sb;
	int fd = open(path(p, sizeof(p), "leased"), O_RDONLY | O_CREAT | O_TRUNC, 0644), i;

	ck_assert(fd >= 0 && fstat(fd, &sb) == 0);
	if (fcntl(fd, F_SETLEASE, F_RDLCK) != 0) {
		close(fd);
		unlink(p);
		uot_skip("no lease could be taken here: %s", strerror(errno));
	}
	ck_assert(uo_wf_leased(&wf, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino));
	ck_assert(uo_wf_leased_dev(&wf, (uint64_t)sb.st_dev));
	/* btrfs: stat names the subvolume's anonymous device, /proc/locks another. */
	ck_assert_msg(uo_wf_leased(&wf, (uint64_t)makedev(0, 4095), (uint64_t)sb.st_ino),
		      "a lease under another device number was not found");
	ck_assert(!uo_wf_leased(&wf, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino + 1));
	ck_assert_int_eq(fcntl(fd, F_SETLEASE, F_UNLCK), 0);
	/* Read once until forgotten. */
	ck_assert(uo_wf_leased(&wf, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino));
	/*
	 * A read of /proc/locks that took over a millisecond (a loaded machine)
	 * is kept twenty times as long: forgetting is tried until that is over.
	 */
	for (i = 0; i < 200; i++) {
		uo_wf_leases_forget(&wf);
		if (!uo_wf_leased(&wf, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino))
			break;
		usleep(10000);
	}
	ck_assert_msg(i < 200, "a lease given up was still seen 2 s later");
	close(fd);
	unlink(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wfile");
	TCase *tc = tcase_create("residency");

	uot_suite_begin("wfile", NULL);
	fixture();
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_before);
	tcase_add_test(tc, test_brought);
	tcase_add_test(tc, test_written);
	tcase_add_test(tc, test_flushcut);
	tcase_add_test(tc, test_unlinked);
	tcase_add_test(tc, test_events);
	tcase_add_test(tc, test_others);
	tcase_add_test(tc, test_listing);
	tcase_add_test(tc, test_leased);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
