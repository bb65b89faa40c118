/*
 * A user streams a file that is not theirs (root's, mode 0644): the guard
 * cannot see what was cached (cachestat refuses, mincore would lie), so it
 * must not drop anything itself.  Reads go through RWF_DONTCACHE instead,
 * and the kernel keeps what was cached before and drops the rest.
 *
 * Three files, each streamed by cat and by dd bs=1M as user nobody: one
 * fully cached, one with its middle third cached, one cold.  Needs root
 * (to make root's file and become nobody) and setpriv; skips otherwise.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define THIRD_MIB	128
#define FILE_MIB	(3 * THIRD_MIB)
/* What a blind stream may leave: the run read before it was a stream, and readahead. */
#define HEAD_MAX_MIB	72

enum state { ALL_CACHED, MIDDLE_CACHED, COLD };
static const char *const state_name[] = { "cached", "middle third cached", "cold" };

static struct {
	char no_dontcache[128];	/* the kernel cannot read uncached here: cold cases skip */
	char dir[256];
	char file[300];
	char lib[300];
	char out[300];		/* what the program printed */
	char digest[300];	/* sha256sum of the file, made without the library */
} u;

/* MiB of [from, to) MiB of the file resident (a MiB counts if its first and last page are). */
static long resident_mib(long from, long to)
{
	int fd = open(u.file, O_RDONLY);
	unsigned char vec[256];
	long n = 0, mib;

	ck_assert_int_ge(fd, 0);
	for (mib = from; mib < to; mib++) {
		void *map = mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, fd, mib << 20);

		ck_assert(map != MAP_FAILED);
		ck_assert_int_eq(mincore(map, 1 << 20, vec), 0);
		n += (vec[0] & 1) && (vec[255] & 1);
		munmap(map, 1 << 20);
	}
	close(fd);
	return n;
}

/*
 * Tolerated loss of cached MiB to the rest of the machine (other programs'
 * memory pressure reclaims pages read once, ours included).
 */
#define NOISE_MIB	2

/* Exactly [from, to) MiB cached, as root, without readahead around it. */
static void cache_range(long from, long to)
{
	static char buf[1 << 20];
	int fd, pass;
	long mib;

	ck_assert_int_eq(uot_make_cold(u.file), 0);
	fd = open(u.file, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	/* This VM's own reclaim can take pages just read: read again what went. */
	for (pass = 0; pass < 3 && resident_mib(from, to) < to - from; pass++)
		for (mib = from; mib < to; mib++)
			ck_assert_int_eq(pread(fd, buf, sizeof(buf), mib << 20), sizeof(buf));
	close(fd);
	ck_assert_int_ge(resident_mib(from, to), to - from - NOISE_MIB);
}

/* Does u.out hold the digest u.digest holds? */
static bool same_digest(void)
{
	char a[128] = "", b[128] = "";
	FILE *f = fopen(u.out, "r"), *g = fopen(u.digest, "r");
	bool same = f && g && fgets(a, sizeof(a), f) && fgets(b, sizeof(b), g) &&
		    strncmp(a, b, 64) == 0;

	if (f)
		fclose(f);
	if (g)
		fclose(g);
	return same;
}

static void run_as_nobody(const char *prog, bool with)
{
	char of[320];
	/* Through a pipe, so cat reads (to a file it would copy_file_range). */
	const char *cat[] = { "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
			      "sh", "-c", "cat \"$0\" | sha256sum", u.file, NULL };
	const char *dd[] = { "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
			     "dd", NULL, "of=/dev/null", "bs=1M", "status=none", NULL };
	char preload[320];
	const char *env[] = { preload, NULL };
	/* Opened by the parent, as root: nobody may write it through its stdout. */
	struct uot_cmd c = { .preload = false, .env = with ? env : NULL, .out = u.out };
	struct uot_result r;

	snprintf(of, sizeof(of), "if=%s", u.file);
	dd[5] = of;
	/* Our copy of the library: nobody may not be able to reach the build tree. */
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", u.lib);
	c.argv = strcmp(prog, "cat") == 0 ? cat : dd;
	ck_assert_msg(uot_run(&c, &r) == 0, "%s: %s", prog, uot_why());
	ck_assert_msg(uot_exited_ok(r.status), "%s as nobody: %s", prog, uot_status_str(r.status));
	if (c.argv == cat)
		ck_assert_msg(same_digest(), "cat as nobody read something else than the file");
	unlink(u.out);
}

START_TEST(test_blind_stream)
{
	enum state state = (enum state)(_i / 2);
	const char *prog = _i % 2 ? "dd" : "cat";
	long head, middle, tail, before_middle, before_rest;

	if (uot_skipped(NULL))
		return;
	if (state != ALL_CACHED && u.no_dontcache[0]) {
		printf("unprivileged: %s %s: skipped: %s\n", prog, state_name[state], u.no_dontcache);
		return;
	}
	if (state == ALL_CACHED)
		cache_range(0, FILE_MIB);
	else if (state == MIDDLE_CACHED)
		cache_range(THIRD_MIB, 2 * THIRD_MIB);
	else
		ck_assert_int_eq(uot_make_cold(u.file), 0);

	/* Measured just before: what the run loses is compared with what was there. */
	before_middle = resident_mib(THIRD_MIB, 2 * THIRD_MIB);
	before_rest = resident_mib(0, THIRD_MIB) + resident_mib(2 * THIRD_MIB, FILE_MIB);
	run_as_nobody(prog, true);
	head = resident_mib(0, THIRD_MIB);
	middle = resident_mib(THIRD_MIB, 2 * THIRD_MIB);
	tail = resident_mib(2 * THIRD_MIB, FILE_MIB);
	printf("unprivileged: %-4s %-20s resident after, by third: %3ld %3ld %3ld MiB\n",
	       prog, state_name[state], head, middle, tail);
	if (state != COLD)
		ck_assert_msg(middle >= before_middle - NOISE_MIB, "%s dropped %ld MiB that were "
			      "cached before", prog, before_middle - middle);
	if (state == ALL_CACHED)
		ck_assert_msg(head + tail >= before_rest - NOISE_MIB, "%s dropped %ld MiB that "
			      "were cached before", prog, before_rest - head - tail);
	else
		ck_assert_msg(head + tail + (state == COLD ? middle : 0) <= HEAD_MAX_MIB,
			      "%s left %ld MiB of a cold stream cached (bound %d)", prog,
			      head + tail + (state == COLD ? middle : 0), HEAD_MAX_MIB);
}
END_TEST

/* Without the library the same cold stream stays: the test can see a difference. */
START_TEST(test_without_library_stream_stays)
{
	long all;

	if (uot_skipped(NULL))
		return;
	if (u.no_dontcache[0]) {
		printf("unprivileged: skipped: %s\n", u.no_dontcache);
		return;
	}
	ck_assert_int_eq(uot_make_cold(u.file), 0);
	run_as_nobody("cat", false);
	all = resident_mib(0, FILE_MIB);
	printf("unprivileged: cat  %-20s resident after, without the library: %ld MiB\n",
	       state_name[COLD], all);
	ck_assert_int_ge(all, FILE_MIB * 9 / 10);
}
END_TEST

static void probe_dontcache(void)
{
	char buf[4096];
	struct iovec iov = { buf, sizeof(buf) };
	int fd = open(u.file, O_RDONLY);

	if (fd < 0 || preadv2(fd, &iov, 1, 0, 0x80 /* RWF_DONTCACHE */) < 0)
		snprintf(u.no_dontcache, sizeof(u.no_dontcache),
			 "no RWF_DONTCACHE here (%s): blind streams are only spared", strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void prepare(void)
{
	struct statfs sfs;
	int in, out;
	char buf[65536];
	ssize_t n;

	uot_suite_begin("unprivileged", NULL);
	if (!uot_need_root("cannot make root's file and become nobody") ||
	    !uot_need_programs("setpriv"))
		return;
	if (uot_sh("id nobody >/dev/null 2>&1") != 0) {
		uot_skip("user nobody missing");
		return;
	}
	/* nobody must reach the file and the library. */
	if (!uot_need_scratch())
		return;
	if (!uot_public_dir(u.dir, sizeof(u.dir), "priv")) {
		uot_skip("%s", uot_why());
		return;
	}
	if (statfs(u.dir, &sfs) != 0 || sfs.f_type == TMPFS_MAGIC) {
		uot_skip("%s is on tmpfs: no page cache to guard", u.dir);
		return;
	}
	snprintf(u.file, sizeof(u.file), "%s/roots-file", u.dir);
	snprintf(u.lib, sizeof(u.lib), "%s/libuseonce.so", u.dir);
	snprintf(u.out, sizeof(u.out), "%s/out", u.dir);
	snprintf(u.digest, sizeof(u.digest), "%s/digest", u.dir);
	in = open(uot_library(), O_RDONLY);
	out = open(u.lib, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	if (in >= 0)
		close(in);
	if (out < 0 || close(out) != 0 ||
	    uot_make_file(u.file, (uint64_t)FILE_MIB << 20, 7) != 0 || chmod(u.file, 0644) != 0) {
		uot_skip("cannot make the files: %s", uot_why());
		return;
	}
	{
		const char *argv[] = { "sha256sum", u.file, NULL };
		struct uot_cmd c = { .argv = argv, .out = u.digest };
		struct uot_result r;

		if (uot_run(&c, &r) != 0 || !uot_exited_ok(r.status)) {
			uot_skip("sha256sum failed: %s", uot_why());
			return;
		}
	}
	probe_dontcache();
}

int main(void)
{
	Suite *s = suite_create("unprivileged");
	TCase *tc = tcase_create("another user's file");

	prepare();
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_blind_stream, 0, 6);
	tcase_add_test(tc, test_without_library_stream_stays);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
