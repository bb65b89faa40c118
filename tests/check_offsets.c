/*
 * 64-bit file offsets everywhere, also where off_t is 32 bits.  The
 * library and a reader are built with -m32 (skipped with a line if the
 * toolchain cannot, or the kernel runs no 32-bit programs), and the reader streams 64 MiB of a sparse 6 GiB file
 * from 4.5 GiB on, at the cursor and with pread.  A library built without
 * large-file support cannot ask lseek where the cursor is (EOVERFLOW past
 * 2 GiB: the stream is ignored) and gives posix_fadvise offsets cut to 32
 * bits (another range is dropped): either way the stream stays cached.
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

static struct {
	char file[512];
	char m32[600];
} o;

START_TEST(test_far_stream_dropped_32bit)
{
	static const char *const modes[] = { "cursor", "pread" };
	char trace[700];
	int64_t after;

	if (uot_skipped(NULL))
		return;
	ck_assert_int_eq(uot_make_cold(o.file), 0);
	uot_scratch_path(trace, sizeof(trace), "trace");
	unlink(trace);
	ck_assert_int_eq(uot_sh("LD_PRELOAD='%s/libuseonce.so' USEONCE_TRACE='%s' "
				"'%s/far_read' '%s' 4608 64 %s", o.m32, trace, o.m32, o.file,
				modes[_i]), 0);
	after = uot_resident(o.file, NULL);
	printf("offsets: 32-bit, %s: %.1f of 64 MiB read past 4.5 GiB still cached\n", modes[_i],
	       uot_mib((uint64_t)after));
	uot_sh("grep -m3 -v probed '%s'", trace);
	ck_assert_msg(after <= (int64_t)(24 * UOT_MIB), "32-bit, %s: %.1f MiB read past 4.5 GiB "
		      "left cached", modes[_i], uot_mib((uint64_t)after));
}
END_TEST

static void prepare(void)
{
	uot_suite_begin("offsets", NULL);
	if (!uot_need_scratch())
		return;
	uot_scratch_path(o.file, sizeof(o.file), "sparse");
	uot_scratch_path(o.m32, sizeof(o.m32), "m32");
	if (uot_sh("echo 'int main(void){return 0;}' | cc -m32 -x c -o /dev/null - 2>/dev/null")) {
		uot_skip("no -m32 toolchain (gcc-multilib)");
		return;
	}
	/*
	 * A kernel without IA32 emulation refuses them (execve: ENOEXEC, and
	 * the shell then reads the program as a script): it must say "32".
	 */
	if (uot_sh("mkdir -p '%s' && echo 'int puts(const char *); int main(void){puts(\"32\");}' | "
		   "cc -m32 -x c -o '%s/true32' - 2>/dev/null && "
		   "test \"$('%s/true32' 2>/dev/null)\" = 32", o.m32, o.m32, o.m32)) {
		uot_skip("this kernel runs no 32-bit programs");
		return;
	}
	if (uot_sh("make -s -C '%s' B='%s' CFLAGS='-m32 -O2' '%s/libuseonce.so' >/dev/null 2>&1 && "
		   "cc -m32 -O2 -D_FILE_OFFSET_BITS=64 -o '%s/far_read' '%s/tests/helpers/far_read.c'",
		   uot_srcdir(), o.m32, o.m32, o.m32, uot_srcdir())) {
		uot_skip("the 32-bit build failed");
		return;
	}
	if (uot_sh("truncate -s 6G '%s'", o.file))
		uot_skip("cannot make a sparse 6 GiB file");
}

int main(void)
{
	Suite *s = suite_create("offsets");
	TCase *tc = tcase_create("32-bit offsets");

	prepare();
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_far_stream_dropped_32bit, 0, 2);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
