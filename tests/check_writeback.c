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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

/*
 * Once this disk is full, ext4 fails to convert unwritten extents whose
 * data did reach it ("failed to convert unwritten extents ... potential
 * data loss!" in the kernel's log, in every run here) and ends their
 * writeback with no error on the file.  When that happens to pages the
 * library already checked and dropped before the first failed write was
 * seen, 1 MiB reads back as zeros (about one run in fifteen with 2 MiB
 * windows, none seen at the defaults): the disk lost it, nothing told,
 * and the program's fsync still fails.  Such a run is made again, three
 * times at most.  More than 1 MiB wrong is never the kernel's race: a
 * library that drops pages whose writeback failed loses 9 MiB or more.
 */
#define TRIES		3
#define RACE_MIB	1

/* The MiB the probe read back wrong ("bad N"), -1 if it did not say. */
static int bad_mib(const char *out)
{
	const char *p = strstr(out, "bad ");

	return p ? atoi(p + 4) : -1;
}

/* review_probe readback on a fresh failing disk; its transcript in out. */
static void readback(bool with, const char *env, char *out, size_t size)
{
	int try, bad;

	for (try = 1; try <= TRIES; try++) {
		/* A 256 MiB disk whose image sits on a 24 MiB tmpfs. */
		ck_assert_msg(uot_disk_up(24, 256) == 0, "%s", uot_why());
		uot_capture(with, out, size,
			    "%s timeout 120 %s/tests/review_probe readback '%s/f' 40 2>&1", env,
			    uot_build_dir(), uot_disk_mnt());
		uot_disk_down();
		bad = bad_mib(out);
		if (bad < 0 || bad == 0 || bad > RACE_MIB)
			return;
		printf("writeback: %s %s, try %d: %d MiB read back wrong (the kernel's race):\n%s",
		       env, with ? "with" : "without", try, bad, out);
	}
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

int main(void)
{
	Suite *s = suite_create("writeback");
	TCase *tc = tcase_create("failed writeback");

	uot_suite_begin("writeback", uot_disk_down);
	uot_disk_need();
	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, NULL, uot_disk_down);
	tcase_add_loop_test(tc, test_failed_writeback_not_dropped, 0, 2);
	suite_add_tcase(s, tc);
	return uot_check_run(s, true);
}
