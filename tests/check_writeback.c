/*
 * Never drop the only good copy.  On a disk whose writeback fails (ext4 on
 * a loop device over a 24 MiB tmpfs), a program that writes 40
 * MiB and reads it back before fsync gets what it wrote from the page
 * cache.  A library that drops pages once their writeback ended, whether
 * it succeeded or not, makes it read the disk's zeros instead.  The
 * program's own fsync must still report the error.
 *
 * Needs root (mount, losetup); skips with one line otherwise.  Everything
 * is unmounted and detached after the case, and at exit.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

static struct {
	char small[480];
	char image[512];
	char mnt[512];
	char loop[64];
	bool tmpfs_up, mounted;
} d;

static void disk_down(void)
{
	if (!uot_suite_owner())
		return;
	if (d.mounted && umount(d.mnt) != 0)
		umount2(d.mnt, MNT_DETACH);
	d.mounted = false;
	if (d.loop[0])
		uot_sh("losetup -d %s 2>/dev/null", d.loop);
	d.loop[0] = '\0';
	if (d.image[0])
		unlink(d.image);
	if (d.tmpfs_up && umount(d.small) != 0)
		umount2(d.small, MNT_DETACH);
	d.tmpfs_up = false;
}

/* A fresh failing disk at d.mnt. */
static void disk_up(void)
{
	char cmd[1024];
	FILE *p;

	disk_down();
	ck_assert_msg(mount("tmpfs", d.small, "tmpfs", 0, "size=24m") == 0, "mount tmpfs: %s",
		      strerror(errno));
	d.tmpfs_up = true;
	snprintf(d.image, sizeof(d.image), "%s/disk.img", d.small);
	ck_assert_int_eq(uot_sh("truncate -s 256M '%s'", d.image), 0);
	snprintf(cmd, sizeof(cmd), "losetup -f --show '%s'", d.image);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	if (!fgets(d.loop, sizeof(d.loop), p))
		d.loop[0] = '\0';
	pclose(p);
	d.loop[strcspn(d.loop, "\n")] = '\0';
	ck_assert_msg(d.loop[0] == '/', "losetup gave no device for %s", d.image);
	ck_assert_int_eq(uot_sh("mkfs.ext4 -q -F %s >/dev/null 2>&1", d.loop), 0);
	ck_assert_msg(mount(d.loop, d.mnt, "ext4", 0, NULL) == 0, "mount %s: %s", d.loop,
		      strerror(errno));
	d.mounted = true;
}

/* review_probe readback on a fresh failing disk; its transcript in out. */
static void readback(bool with, const char *env, char *out, size_t size)
{
	disk_up();
	uot_capture(with, out, size, "%s timeout 120 %s/tests/review_probe readback '%s/f' 40 2>&1",
		    env, uot_build_dir(), d.mnt);
	disk_down();
}

START_TEST(test_failed_writeback_not_dropped)
{
	static const char *const envs[] = { "", "USEONCE_THRESHOLD=2M USEONCE_WINDOW=2M" };
	char without[512], with[512];

	if (uot_skipped(NULL))
		return;
	readback(false, envs[_i], without, sizeof(without));
	ck_assert_msg(strstr(without, "bad 0\n") && strstr(without, "fsync -1"),
		      "without the library the disk did not fail as expected:\n%s", without);
	readback(true, envs[_i], with, sizeof(with));
	printf("writeback: %s without:\n%swith:\n%s", envs[_i], without, with);
	/* The program's data and its errors unchanged, and the user told once. */
	ck_assert_msg(uot_strip_lines(with, UOT_WRITEBACK_FAILED_LINE) == 1,
		      "%s: the library did not say once that writeback failed:\n%s", envs[_i], with);
	ck_assert_msg(strstr(with, "bad 0\n"), "%s: data read back before fsync differs:\n%s",
		      envs[_i], with);
	ck_assert_msg(!strcmp(with, without), "%s: without:\n%swith:\n%s", envs[_i], without, with);
}
END_TEST

static void prepare(void)
{
	/* The tmpfs and the mount point sit in the scratch directory; disk_down() empties them. */
	uot_suite_begin("writeback", disk_down);
	if (!uot_need_root("cannot mount or attach loop devices") ||
	    !uot_need_programs("losetup mkfs.ext4") || !uot_need_scratch())
		return;
	uot_scratch_path(d.small, sizeof(d.small), "small");
	uot_scratch_path(d.mnt, sizeof(d.mnt), "mnt");
	if (mkdir(d.small, 0700) != 0 || mkdir(d.mnt, 0700) != 0)
		uot_skip("mkdir in %s: %s", uot_scratch(), strerror(errno));
}

int main(void)
{
	Suite *s = suite_create("writeback");
	TCase *tc = tcase_create("failed writeback");

	prepare();
	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, NULL, disk_down);
	tcase_add_loop_test(tc, test_failed_writeback_not_dropped, 0, 2);
	suite_add_tcase(s, tc);
	return uot_check_run(s, true);
}
