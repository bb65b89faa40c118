/*
 * The library writes only where the user meant: trace and statistics lines
 * never land in the program's own files, and their files are opened as
 * safely as the config file (no symlinks followed, no FIFO or device that
 * could block the program, only files the user owns).
 *
 * USEONCE_TRACE=3 or USEONCE_STATS=3 when descriptor 3 is not open at
 * start: the program's next open gets 3, and nothing of ours may go there.
 * USEONCE_STATS=stderr (or TRACE) for a program that closed stderr and
 * reused 2 for its output: the same.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

static struct {
	char in[512];
	char out[512];
	char other[512];
} o;

/* review_probe under the library with 'env'; its wait status (124: timed out). */
static int probe(const char *env, const char *args)
{
	return uot_sh("LD_PRELOAD='%s' USEONCE_THRESHOLD=2M USEONCE_WINDOW=2M %s "
		      "timeout 20 %s/tests/review_probe %s >/dev/null 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-",
		      uot_preload(), env, uot_build_dir(), args);
}

static void file_text(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(out, 1, size - 1, f) : 0;

	out[n] = '\0';
	if (f)
		fclose(f);
}

/* The program's output file holds its own bytes only. */
static void only_payload(const char *env, const char *scenario)
{
	char args[1200], text[4096];
	int st;

	unlink(o.out);
	uot_sfmt(args, sizeof(args), "%s '%s' '%s'", scenario, o.out, o.in);
	st = probe(env, args);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %s: status %#x", env, args, st);
	file_text(o.out, text, sizeof(text));
	ck_assert_msg(!strcmp(text, "payload\n"), "%s: the program's file holds:\n%s", env, text);
}

START_TEST(test_trace_fd_not_open_at_start)
{
	if (!uot_skipped(NULL))
		only_payload("USEONCE_TRACE=3", "outfd");
}
END_TEST

START_TEST(test_stats_fd_not_open_at_start)
{
	if (!uot_skipped(NULL))
		only_payload("USEONCE_STATS=3", "outfd");
}
END_TEST

START_TEST(test_stats_stderr_reused_by_program)
{
	if (!uot_skipped(NULL))
		only_payload("USEONCE_STATS=stderr", "reuse2");
}
END_TEST

START_TEST(test_trace_stderr_reused_by_program)
{
	if (!uot_skipped(NULL))
		only_payload("USEONCE_TRACE=stderr", "reuse2");
}
END_TEST

/* A trace or stats path that is a symlink: its target is left alone. */
START_TEST(test_symlink_destination_refused)
{
	static const char *const vars[] = { "USEONCE_TRACE", "USEONCE_STATS" };
	char link[600], env[700], args[1200], text[4096];

	if (uot_skipped(NULL))
		return;
	uot_scratch_path(link, sizeof(link), "link");
	unlink(link);
	ck_assert_int_eq(symlink(o.other, link), 0);
	uot_sfmt(env, sizeof(env), "%s='%s'", vars[_i], link);
	unlink(o.other);
	ck_assert_int_eq(uot_sh("printf 'target\\n' >'%s'", o.other), 0);
	uot_sfmt(args, sizeof(args), "outfd '%s' '%s'", o.out, o.in);
	ck_assert_int_eq(probe(env, args), 0);
	file_text(o.other, text, sizeof(text));
	ck_assert_msg(!strcmp(text, "target\n"), "%s: the symlink's target now holds:\n%s", env,
		      text);
	unlink(link);
}
END_TEST

/* A FIFO with no reader at the trace or stats path: the program must not hang. */
START_TEST(test_fifo_destination_no_hang)
{
	static const char *const vars[] = { "USEONCE_TRACE", "USEONCE_STATS" };
	char fifo[600], env[700], args[1200];
	int st;

	if (uot_skipped(NULL))
		return;
	uot_scratch_path(fifo, sizeof(fifo), "fifo");
	unlink(fifo);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	uot_sfmt(env, sizeof(env), "%s='%s'", vars[_i], fifo);
	uot_sfmt(args, sizeof(args), "outfd '%s' '%s'", o.out, o.in);
	st = probe(env, args);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "%s: status %#x (exit 124: hung on the FIFO)", env, st);
	unlink(fifo);
}
END_TEST

/* A file someone else owns is not ours to append to (as root: a file of nobody's). */
START_TEST(test_foreign_destination_refused)
{
	static const char *const vars[] = { "USEONCE_TRACE", "USEONCE_STATS" };
	char env[700], args[1200], text[4096];

	if (uot_skipped(NULL))
		return;
	if (!uot_is_root()) {
		printf("outputs: foreign owner skipped: needs root to give a file away\n");
		return;
	}
	unlink(o.other);
	ck_assert_int_eq(uot_sh("printf 'theirs\\n' >'%s' && chown 65534 '%s' && chmod 666 '%s'",
				o.other, o.other, o.other), 0);
	uot_sfmt(env, sizeof(env), "%s='%s'", vars[_i], o.other);
	uot_sfmt(args, sizeof(args), "outfd '%s' '%s'", o.out, o.in);
	ck_assert_int_eq(probe(env, args), 0);
	file_text(o.other, text, sizeof(text));
	ck_assert_msg(!strcmp(text, "theirs\n"), "%s: another user's file now holds:\n%s", env,
		      text);
}
END_TEST

/* The safe way still works: a plain file of ours gets the lines. */
START_TEST(test_plain_destination_written)
{
	static const char *const vars[] = { "USEONCE_TRACE", "USEONCE_STATS" };
	char env[700], args[1200], text[4096];

	if (uot_skipped(NULL))
		return;
	unlink(o.other);
	uot_sfmt(env, sizeof(env), "%s='%s'", vars[_i], o.other);
	uot_sfmt(args, sizeof(args), "outfd '%s' '%s'", o.out, o.in);
	ck_assert_int_eq(probe(env, args), 0);
	file_text(o.other, text, sizeof(text));
	ck_assert_msg(strstr(text, "useonce"), "%s: nothing written to a plain file", env);
}
END_TEST

static void fixture(void)
{
	if (!uot_need_scratch())
		return;
	uot_scratch_path(o.in, sizeof(o.in), "in");
	uot_scratch_path(o.out, sizeof(o.out), "out");
	uot_scratch_path(o.other, sizeof(o.other), "other");
	if (uot_make_file(o.in, 16 * UOT_MIB, 4) != 0)
		uot_skip("%s", uot_why());
}

int main(void)
{
	Suite *s = suite_create("outputs");
	TCase *tc = tcase_create("where lines go");

	uot_suite_begin("outputs", NULL);
	fixture();
	tcase_set_timeout(tc, 200);
	tcase_add_test(tc, test_trace_fd_not_open_at_start);
	tcase_add_test(tc, test_stats_fd_not_open_at_start);
	tcase_add_test(tc, test_stats_stderr_reused_by_program);
	tcase_add_test(tc, test_trace_stderr_reused_by_program);
	tcase_add_loop_test(tc, test_symlink_destination_refused, 0, 2);
	tcase_add_loop_test(tc, test_fifo_destination_no_hang, 0, 2);
	tcase_add_loop_test(tc, test_foreign_destination_refused, 0, 2);
	tcase_add_loop_test(tc, test_plain_destination_written, 0, 2);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
