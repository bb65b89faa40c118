/*
 * Secure mode: a setuid program, with the library in /etc/ld.so.preload.
 * The environment then belongs to whoever started the program, not to its
 * owner: the library must ignore every USEONCE_* variable and
 * XDG_RUNTIME_DIR, create no trace file and no record of streams, and
 * still guard with its defaults.
 *
 * Nothing of the machine changes: /etc/ld.so.preload exists only in a
 * private mount namespace (unshare), as a read-only overlay of /etc whose
 * upper layer holds that one file; the overlay goes with the namespace.
 * A setuid-root copy of tests/helpers/secure_probe is run there as user
 * nobody (65534), with USEONCE_TRACE and XDG_RUNTIME_DIR pointing into a
 * directory nobody owns, and USEONCE_DISABLE=1.  The same copy without
 * its setuid bit is the control: there the trace and the record appear,
 * and USEONCE_DISABLE=1 is obeyed.  Config files likewise: the user's
 * (USEONCE_CONFIG, or under XDG_CONFIG_HOME with no USEONCE_ variable set)
 * and USEONCE_STATS are ignored in secure mode, the system file (laid over
 * /etc the same way) is read.
 *
 * Needs root, unshare, setpriv and overlayfs; skips with one line
 * otherwise.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define NOBODY		65534
#define STREAM_MIB	64
/* What a guarded 64 MiB stream may leave: the last windows and readahead. */
#define GUARDED_MAX_MIB	16

static struct {
	char top[400];		/* everything of ours: library, probes, overlay, output */
	char stream[480];
	char trace[480];
	char record[480];
	char fnv[64];		/* "read N fnv X" the probe must print */
	bool droppable;		/* the stream's filesystem has a page cache to drop */
} s;

struct run {
	char out[1024];
	int status;
	bool trace, record;
	double resident_mib;
};

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/*
 * Runs the probe (setuid copy or plain copy) as nobody, in a namespace
 * where /etc/ld.so.preload names the library, with 'extra' (NAME=VALUE or
 * "") added to the environment.  XDG_RUNTIME_DIR comes first: the library
 * reads the environment in order, so the record's directory is taken in
 * before any USEONCE_* variable makes it ask about secure mode, and only
 * the record's own check can keep the file from being written.
 */
static void run_probe(const char *probe, const char *extra, struct run *r)
{
	static const char script[] =
		"mount -t overlay overlay -o ro,lowerdir=\"$0/etc\":/etc /etc || exit 90\n"
		"exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR=\"$0/out/run\" "
		"USEONCE_TRACE=\"$0/out/trace\" $1 "
		"setpriv --reuid=65534 --regid=65534 --clear-groups \"$0/$2\" \"$0/stream\"";
	const char *argv[] = { "unshare", "--mount", "--propagation", "private", "sh", "-c",
			       script, s.top, extra, probe, NULL };
	struct uot_cmd c = { .argv = argv, .timeout_s = 120 };
	struct uot_result res;
	char out[600];
	FILE *f;
	size_t n;
	int64_t resident;

	unlink(s.trace);
	unlink(s.record);
	ck_assert_msg(uot_make_cold(s.stream) == 0, "%s", uot_why());
	snprintf(out, sizeof(out), "%s/out.txt", s.top);
	c.out = out;
	ck_assert_msg(uot_run(&c, &res) == 0, "%s: %s", probe, uot_why());
	r->status = res.status;
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(r->out, 1, sizeof(r->out) - 1, f);
	r->out[n] = '\0';
	fclose(f);
	unlink(out);
	r->trace = exists(s.trace);
	r->record = exists(s.record);
	resident = uot_resident(s.stream, NULL);
	ck_assert_msg(resident >= 0, "%s", uot_why());
	r->resident_mib = uot_mib((uint64_t)resident);
	printf("secure: %s%s%s: %s, %.1f MiB of %d cached after, trace %s, record %s\n%s",
	       probe, *extra ? " with " : "", extra, uot_status_str(r->status), r->resident_mib,
	       STREAM_MIB, r->trace ? "written" : "none", r->record ? "written" : "none", r->out);
	fflush(stdout);
	ck_assert_msg(!(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 90),
		      "could not mount the overlay on /etc in the namespace");
	ck_assert_msg(uot_exited_ok(r->status), "%s failed (%s):\n%s", probe,
		      uot_status_str(r->status), r->out);
	ck_assert_msg(strstr(r->out, s.fnv), "%s read other data than the file holds:\n%s",
		      probe, r->out);
}

/* _i 0: USEONCE_TRACE and XDG_RUNTIME_DIR; 1: and USEONCE_DISABLE=1. */
START_TEST(test_setuid_ignores_environment)
{
	struct run r;

	if (uot_skipped(NULL))
		return;
	run_probe("probe-setuid", _i ? "USEONCE_DISABLE=1" : "", &r);
	ck_assert_msg(strstr(r.out, "secure 1"), "the loader did not run the probe in secure "
		      "mode: this test tests nothing\n%s", r.out);
	ck_assert_msg(strstr(r.out, "preloaded 1"), "/etc/ld.so.preload did not load the "
		      "library into the setuid program\n%s", r.out);
	ck_assert_msg(!r.trace, "a setuid program wrote the trace file USEONCE_TRACE named");
	ck_assert_msg(!r.record, "a setuid program wrote a record into XDG_RUNTIME_DIR");
	/* USEONCE_DISABLE=1 was not obeyed either: the defaults guarded the stream. */
	if (s.droppable)
		ck_assert_msg(r.resident_mib <= GUARDED_MAX_MIB, "%.1f MiB of the stream stayed "
			      "cached: the library obeyed USEONCE_DISABLE or did not guard",
			      r.resident_mib);
}
END_TEST

/* Without the setuid bit, the same environment is the user's: obeyed. */
START_TEST(test_control_obeys_environment)
{
	struct run r;

	if (uot_skipped(NULL))
		return;
	run_probe("probe-plain", "", &r);
	ck_assert_msg(strstr(r.out, "secure 0") && strstr(r.out, "preloaded 1"),
		      "the control run is not a plain preloaded run:\n%s", r.out);
	ck_assert_msg(r.trace, "no trace file without secure mode: the secure test cannot fail");
	ck_assert_msg(r.record, "no record without secure mode: the secure test cannot fail");
	if (s.droppable)
		ck_assert_msg(r.resident_mib <= GUARDED_MAX_MIB, "%.1f MiB stayed cached",
			      r.resident_mib);

	run_probe("probe-plain", "USEONCE_DISABLE=1", &r);
	if (s.droppable)
		ck_assert_msg(r.resident_mib >= STREAM_MIB - 4, "USEONCE_DISABLE=1, yet only "
			      "%.1f MiB stayed cached: the secure test's drop proves nothing",
			      r.resident_mib);
}
END_TEST

/*
 * Config files: the user's (named by USEONCE_CONFIG, the user's to write)
 * says enable = no, and USEONCE_STATS names a file.  A setuid program reads
 * neither; the same program without the bit obeys both.
 */
static void write_conf(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f && fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
}

START_TEST(test_setuid_ignores_user_config)
{
	char conf[600], stats[600], extra[1400];
	struct run r;

	if (uot_skipped(NULL))
		return;
	snprintf(conf, sizeof(conf), "%s/out/user.conf", s.top);
	snprintf(stats, sizeof(stats), "%s/out/stats", s.top);
	write_conf(conf, "enable = no\n");
	ck_assert_int_eq(chown(conf, NOBODY, NOBODY), 0);
	snprintf(extra, sizeof(extra), "USEONCE_CONFIG=%s USEONCE_STATS=%s", conf, stats);

	unlink(stats);
	run_probe("probe-plain", extra, &r);
	if (s.droppable)
		ck_assert_msg(r.resident_mib >= STREAM_MIB - 4, "the user's enable = no was not "
			      "obeyed without secure mode (%.1f MiB cached): the test proves nothing",
			      r.resident_mib);

	unlink(stats);
	run_probe("probe-setuid", extra, &r);
	ck_assert_msg(strstr(r.out, "secure 1"), "not in secure mode:\n%s", r.out);
	ck_assert_msg(!exists(stats), "a setuid program wrote the USEONCE_STATS file");
	if (s.droppable)
		ck_assert_msg(r.resident_mib <= GUARDED_MAX_MIB, "%.1f MiB stayed cached: a setuid "
			      "program obeyed the user's config file", r.resident_mib);

	/*
	 * The user's file where it is looked for by default, with no USEONCE_
	 * variable at all (the second env drops the trace's): the library then
	 * has no environment to ignore, and must still leave the file unread.
	 */
	snprintf(conf, sizeof(conf), "%s/out/xdg", s.top);
	ck_assert_int_eq(uot_sh("mkdir -p '%s/useonce' && cp '%s/out/user.conf' '%s/useonce/config' && "
			    "chown -R %d:%d '%s'", conf, s.top, conf, NOBODY, NOBODY, conf), 0);
	snprintf(extra, sizeof(extra), "env -u USEONCE_TRACE XDG_CONFIG_HOME=%s", conf);
	run_probe("probe-plain", extra, &r);
	if (s.droppable)
		ck_assert_msg(r.resident_mib >= STREAM_MIB - 4, "XDG_CONFIG_HOME's enable = no was "
			      "not obeyed without secure mode (%.1f MiB cached)", r.resident_mib);
	run_probe("probe-setuid", extra, &r);
	ck_assert_msg(strstr(r.out, "secure 1"), "not in secure mode:\n%s", r.out);
	if (s.droppable)
		ck_assert_msg(r.resident_mib <= GUARDED_MAX_MIB, "%.1f MiB stayed cached: a setuid "
			      "program read the config file under XDG_CONFIG_HOME", r.resident_mib);
	uot_sh("rm -rf '%s'", conf);
	snprintf(conf, sizeof(conf), "%s/out/user.conf", s.top);

	/* The control for the stats file: written when the bit is not set. */
	snprintf(extra, sizeof(extra), "USEONCE_STATS=%s", stats);
	run_probe("probe-plain", extra, &r);
	ck_assert_msg(exists(stats), "no stats file without secure mode: the test proves nothing");
	unlink(stats);
	unlink(conf);
}
END_TEST

/* The system file is root's: read in secure mode too. */
START_TEST(test_setuid_reads_system_config)
{
	char conf[600];
	struct run r;

	if (uot_skipped(NULL))
		return;
	snprintf(conf, sizeof(conf), "%s/etc/useonce.conf", s.top);
	write_conf(conf, "enable = no\n");
	run_probe("probe-setuid", "", &r);
	unlink(conf);
	ck_assert_msg(strstr(r.out, "secure 1"), "not in secure mode:\n%s", r.out);
	if (s.droppable)
		ck_assert_msg(r.resident_mib >= STREAM_MIB - 4, "only %.1f MiB stayed cached: the "
			      "system file's enable = no was not read in secure mode",
			      r.resident_mib);
}
END_TEST

/* Every directory above 'path' must let others through, or nobody cannot run the probe. */
static int install(const char *from, const char *to, mode_t mode)
{
	return uot_sh("cp '%s' '%s/%s' && chown 0:0 '%s/%s' && chmod %o '%s/%s'", from, s.top, to,
		  s.top, to, (unsigned)mode, s.top, to);
}

static void prepare(void)
{
	char path[600], probe[600];
	struct statvfs sv;
	struct statfs sfs;
	FILE *f;

	uot_suite_begin("secure", NULL);
	if (!uot_need_root("cannot make a setuid program or mount") ||
	    !uot_need_programs("unshare setpriv"))
		return;
	if (uot_sh("grep -qw overlay /proc/filesystems") != 0) {
		uot_skip("no overlayfs to lay ld.so.preload over /etc");
		return;
	}
	if (!uot_need_scratch())
		return;
	/* nobody must reach the probe. */
	if (!uot_public_dir(s.top, sizeof(s.top), "secure")) {
		uot_skip("%s", uot_why());
		return;
	}
	if (statvfs(s.top, &sv) != 0 || (sv.f_flag & ST_NOSUID)) {
		uot_skip("%s is mounted nosuid", s.top);
		return;
	}
	s.droppable = statfs(s.top, &sfs) == 0 && sfs.f_type != TMPFS_MAGIC;
	snprintf(probe, sizeof(probe), "%s/tests/secure_probe", uot_build_dir());
	if (install(uot_library(), "libuseonce.so", 0644) != 0 ||
	    install(probe, "probe-setuid", 04755) != 0 || install(probe, "probe-plain", 0755) != 0 ||
	    uot_sh("mkdir -p '%s/etc' '%s/out/run' && chown %d:%d '%s/out' '%s/out/run' && "
	       "chmod 0700 '%s/out/run'", s.top, s.top, NOBODY, NOBODY, s.top, s.top, s.top) != 0) {
		uot_skip("cannot install the probes in %s", s.top);
		return;
	}
	snprintf(path, sizeof(path), "%s/etc/ld.so.preload", s.top);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%s/libuseonce.so\n", s.top) < 0 || fclose(f) != 0) {
		uot_skip("cannot write %s", path);
		return;
	}
	snprintf(s.stream, sizeof(s.stream), "%s/stream", s.top);
	snprintf(s.trace, sizeof(s.trace), "%s/out/trace", s.top);
	snprintf(s.record, sizeof(s.record), "%s/out/run/useonce-streams", s.top);
	if (uot_make_file(s.stream, STREAM_MIB * UOT_MIB, 11) != 0 ||
	    chown(s.stream, NOBODY, NOBODY) != 0) {
		uot_skip("%s", uot_why());
		return;
	}
	/* What the probe must print when it reads the file whole. */
	{
		static unsigned char buf[1 << 20];
		uint64_t fnv = 0xcbf29ce484222325ULL, total = 0;
		ssize_t n, i;
		int fd = open(s.stream, O_RDONLY);

		while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0) {
			for (i = 0; i < n; i++)
				fnv = (fnv ^ buf[i]) * 0x100000001b3ULL;
			total += (uint64_t)n;
		}
		if (fd >= 0)
			close(fd);
		snprintf(s.fnv, sizeof(s.fnv), "read %llu fnv %016llx", (unsigned long long)total,
			 (unsigned long long)fnv);
	}
}

/* The namespace took the overlay with it: the machine's /etc is as it was. */
static bool preload_before;

static void etc_untouched(void)
{
	ck_assert_msg(exists("/etc/ld.so.preload") == preload_before,
		      "/etc/ld.so.preload changed outside the test's namespace");
}

int main(void)
{
	Suite *su = suite_create("secure");
	TCase *tc = tcase_create("setuid");

	preload_before = exists("/etc/ld.so.preload");
	prepare();
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, NULL, etc_untouched);
	tcase_add_loop_test(tc, test_setuid_ignores_environment, 0, 2);
	tcase_add_test(tc, test_control_obeys_environment);
	tcase_add_test(tc, test_setuid_ignores_user_config);
	tcase_add_test(tc, test_setuid_reads_system_config);
	suite_add_tcase(su, tc);
	return uot_check_run(su, false);
}
