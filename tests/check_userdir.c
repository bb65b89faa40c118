/*
 * The user's private directory without XDG_RUNTIME_DIR (root shells, cron,
 * ssh without a login manager, containers): the record of recent streams
 * lives in a useonce-UID directory under TMPDIR, made 0700, for root and
 * for user nobody alike.  Anything another user could have planted there
 * (a symbolic link, a directory of theirs, a mode letting others in) is
 * never followed and never written: quietly, there is no record.  A
 * runtime directory that is not ours (root after su, the user's variable
 * still set) is passed over the same way.
 *
 * Warnings: a session sees each distinct line once wherever it goes (a
 * terminal, a pipe, a file while it still holds the line); a named FIFO
 * gets it from every process, its reader may change.
 *
 * TMPDIR points into the test's own directory: the real /tmp is not
 * touched.  Where /run/user/UID exists the library uses it first, and the
 * cases that need the fallback say so and pass over.  Needs root (to plant
 * other users' things and become nobody) and setpriv.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define FILE_MIB	96
/*
 * Dropped: root's stream leaves nearly nothing; nobody's is blind (no
 * cachestat on root's file) and leaves its head cached (check_unprivileged).
 */
#define DROPPED_MAX(uid)	((uid) ? FILE_MIB * UOT_MIB * 3 / 4 : 16 * UOT_MIB)
#define KEPT_MIN	(FILE_MIB * UOT_MIB * 95 / 100)
#define NOBODY		65534

static struct {
	char dir[512];		/* reachable by nobody */
	char tmp[600];		/* TMPDIR: sticky and open to all, as /tmp */
	char file[600];
	char lib[600];
	char err[600];
	char bait[600];		/* where a planted link points */
	char preload[620];
	char tmpdir[620];
	char trace[600];	/* the last stream's trace, said when a case fails */
	char trace_env[620];
	uint32_t nobody_gid;
} d;

static const char *who_name(uint32_t uid)
{
	return uid ? "nobody" : "root";
}

/* TMPDIR/useonce-UID */
static char *private_dir(char *out, size_t size, uint32_t uid)
{
	snprintf(out, size, "%s/useonce-%u", d.tmp, uid);
	return out;
}

static bool run_user_exists(uint32_t uid)
{
	char p[64];
	struct stat st;

	snprintf(p, sizeof(p), "/run/user/%u", uid);
	if (stat(p, &st) != 0)
		return false;
	printf("userdir: %s exists: the library uses it first; case passed over\n", p);
	return true;
}

/* cat FILE as uid under the library (XDG_RUNTIME_DIR: 'xdg', else none); residency after. */
static uint64_t stream(uint32_t uid, const char *xdg)
{
	static const char *const drop[] = { "XDG_RUNTIME_DIR=", "TMPDIR=", NULL };
	const char *as_root[] = { "cat", d.file, NULL };
	const char *as_nobody[] = { "setpriv", "--reuid=nobody", "--regid=nogroup",
				    "--clear-groups", "cat", d.file, NULL };
	const char *env[] = { d.preload, d.tmpdir, "USEONCE_REUSE=600", d.trace_env, xdg, NULL };
	struct uot_cmd c = { .argv = uid ? as_nobody : as_root, .drop = drop, .env = env,
			     .out = "/dev/null", .err = d.err };
	struct uot_result r;
	struct stat st;
	int64_t resident;

	unlink(d.trace);
	ck_assert_msg(uot_run(&c, &r) == 0, "cat: %s", uot_why());
	ck_assert_msg(uot_exited_ok(r.status), "cat as %s: %s", who_name(uid),
		      uot_status_str(r.status));
	/* Quietly: whatever was found in TMPDIR, not a word on stderr. */
	ck_assert_int_eq(stat(d.err, &st), 0);
	ck_assert_msg(st.st_size == 0, "cat as %s wrote %lld bytes on stderr", who_name(uid),
		      (long long)st.st_size);
	resident = uot_resident(d.file, NULL);
	ck_assert_int_ge(resident, 0);
	return (uint64_t)resident;
}

/* The last stream's trace, for a failure's message. */
static const char *last_trace(void)
{
	static char text[2048];
	int fd = open(d.trace, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;

	if (fd >= 0)
		close(fd);
	text[n > 0 ? n : 0] = '\0';
	return text;
}

static void clean(void)
{
	if (uot_skip_reason()[0])
		return;
	uot_sh("rm -rf '%s'/useonce-* '%s'", d.tmp, d.bait);
	ck_assert_int_eq(mkdir(d.bait, 0700), 0);
	ck_assert_int_eq(uot_make_cold(d.file), 0);
}

static bool exists(const char *dir, const char *name)
{
	char p[1024];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* _i 0: root, 1: nobody.  The directory is made, private, and keeps the record. */
START_TEST(test_made_private_and_kept)
{
	uint32_t uid = _i ? NOBODY : 0;
	uint64_t first, second;
	char dir[700];
	struct stat st;

	if (uot_skipped(NULL) || run_user_exists(uid))
		return;
	clean();
	first = stream(uid, NULL);
	second = stream(uid, NULL);
	printf("userdir: %-6s no XDG_RUNTIME_DIR: resident after the first %.0f MiB, "
	       "the second %.0f MiB\n", who_name(uid), uot_mib(first), uot_mib(second));
	private_dir(dir, sizeof(dir), uid);
	ck_assert_int_eq(lstat(dir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_uid, uid);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_msg(exists(dir, "useonce-streams"), "no record in %s", dir);
	ck_assert_msg(first <= DROPPED_MAX(uid), "the first stream was kept: %.0f MiB", uot_mib(first));
	ck_assert_msg(second >= KEPT_MIN, "the file came back but was dropped: %.0f MiB; trace:\n%s",
		      uot_mib(second), last_trace());
}
END_TEST

static const char *const hostile_name[] = {
	"a link planted by another user", "a directory of another user", "a mode open to others",
};

/*
 * _i / 2: what sits at TMPDIR/useonce-UID; _i % 2: root or nobody.  Each
 * would let the victim write if the library trusted it: the link points to
 * a directory of the victim's, private; root may write into anyone's
 * directory; the open one is writable by all.  Nothing is written, both
 * streams dropped.
 */
START_TEST(test_hostile_never_used)
{
	int kind = _i / 2;
	uint32_t uid = _i % 2 ? NOBODY : 0, other = uid ? 0 : NOBODY;
	char dir[700];

	if (uot_skipped(NULL) || run_user_exists(uid))
		return;
	clean();
	private_dir(dir, sizeof(dir), uid);
	ck_assert_int_eq(chown(d.bait, uid, uid ? d.nobody_gid : 0), 0);
	switch (kind) {
	case 0:
		ck_assert_int_eq(symlink(d.bait, dir), 0);
		ck_assert_int_eq(lchown(dir, other, 0), 0);
		break;
	case 1:
		ck_assert_int_eq(mkdir(dir, 0700), 0);
		ck_assert_int_eq(chown(dir, other, 0), 0);
		break;
	case 2:
		ck_assert_int_eq(mkdir(dir, 0700), 0);
		ck_assert_int_eq(chown(dir, uid, uid ? d.nobody_gid : 0), 0);
		ck_assert_int_eq(chmod(dir, 0777), 0);
		break;
	}
	ck_assert_uint_le(stream(uid, NULL), DROPPED_MAX(uid));
	ck_assert_msg(stream(uid, NULL) <= DROPPED_MAX(uid), "%s, %s: the second stream was kept",
		      who_name(uid), hostile_name[kind]);
	ck_assert_msg(!exists(d.bait, "useonce-streams"), "%s: a link was followed",
		      who_name(uid));
	if (kind)
		ck_assert_msg(!exists(dir, "useonce-streams"), "%s, %s: written into",
			      who_name(uid), hostile_name[kind]);
	printf("userdir: %-6s %s: not used, nothing written, nothing said\n", who_name(uid),
	       hostile_name[kind]);
}
END_TEST

/* Root with nobody's runtime directory still set (su): passed over, the fallback used. */
START_TEST(test_runtime_dir_not_ours)
{
	char xdg[700], run[600], dir[700];

	if (uot_skipped(NULL) || run_user_exists(0))
		return;
	clean();
	snprintf(run, sizeof(run), "%s/run-nobody", d.dir);
	uot_sh("rm -rf '%s'", run);
	ck_assert_int_eq(mkdir(run, 0700), 0);
	ck_assert_int_eq(chown(run, NOBODY, d.nobody_gid), 0);
	snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", run);
	ck_assert_uint_le(stream(0, xdg), DROPPED_MAX(0));
	ck_assert_msg(stream(0, xdg) >= KEPT_MIN, "the file came back but was dropped; trace:\n%s",
		      last_trace());
	ck_assert_msg(!exists(run, "useonce-streams"), "root wrote into nobody's runtime directory");
	ck_assert(exists(private_dir(dir, sizeof(dir), 0), "useonce-streams"));
	uot_sh("rm -rf '%s'", run);
}
END_TEST

/* Where the script's stderr goes. */
/* TO_FILE_WO: a file of nobody's, mode 0200, the script run as nobody. */
enum dest { TO_FILE, TO_TTY, TO_PIPE, TO_FIFO, TO_FILE_WO };

static const char *const dest_name[] = { "a file", "a terminal", "a pipe", "a named FIFO",
					 "a write-only file" };

/* The read end of a named FIFO, opened before its write end, then made blocking. */
static int open_fifo(int *reader)
{
	char fifo[700];
	int w;

	snprintf(fifo, sizeof(fifo), "%s/fifo", d.dir);
	unlink(fifo);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	*reader = open(fifo, O_RDONLY | O_NONBLOCK);
	ck_assert_int_ge(*reader, 0);
	w = open(fifo, O_WRONLY);
	ck_assert_int_ge(w, 0);
	ck_assert_int_eq(fcntl(*reader, F_SETFL, 0), 0);
	unlink(fifo);
	return w;
}

/*
 * sh -c SCRIPT in a session of its own, stderr to 'to' (a file: d.err, which
 * the script may name as $ERR); the number of "useonce:" lines said there.
 */
static int warnings(const char *script, enum dest to)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	char err_env[620];
	char *envp[] = { d.preload, d.tmpdir, "USEONCE_WINDOW=bogus",
			 "PATH=/usr/sbin:/usr/bin:/sbin:/bin", err_env, NULL };
	char buf[8192];
	size_t len = 0;
	int reader = -1, slave, status, n = 0, p[2];
	ssize_t got;
	pid_t pid;

	snprintf(err_env, sizeof(err_env), "ERR=%s", d.err);
	switch (to) {
	case TO_TTY:
		reader = posix_openpt(O_RDWR | O_NOCTTY);
		ck_assert_int_ge(reader, 0);
		ck_assert_int_eq(grantpt(reader), 0);
		ck_assert_int_eq(unlockpt(reader), 0);
		slave = open(ptsname(reader), O_RDWR | O_NOCTTY);
		break;
	case TO_PIPE:
		ck_assert_int_eq(pipe(p), 0);
		reader = p[0];
		slave = p[1];
		break;
	case TO_FIFO:
		slave = open_fifo(&reader);
		break;
	default:
		slave = open(d.err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (to == TO_FILE_WO) {
			ck_assert_int_eq(fchown(slave, NOBODY, d.nobody_gid), 0);
			ck_assert_int_eq(fchmod(slave, 0200), 0);
		}
		break;
	}
	ck_assert_int_ge(slave, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setsid();
		if (to == TO_FILE_WO && (setgroups(0, NULL) != 0 ||
					 setresgid(d.nobody_gid, d.nobody_gid, d.nobody_gid) != 0 ||
					 setresuid(NOBODY, NOBODY, NOBODY) != 0))
			_exit(126);
		dup2(slave, STDERR_FILENO);
		if (reader >= 0)
			close(reader);
		execve("/bin/sh", (char **)argv, envp);
		_exit(127);
	}
	close(slave);
	if (reader >= 0) {
		/* Until every writer is gone (a terminal: EIO). */
		while (len < sizeof(buf) - 1 && (got = read(reader, buf + len,
							       sizeof(buf) - 1 - len)) > 0)
			len += (size_t)got;
		close(reader);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(uot_exited_ok(status));
	if (to == TO_FILE || to == TO_FILE_WO) {
		got = uot_read_text(d.err, buf, sizeof(buf));
		ck_assert_int_ge(got, 0);
		len = (size_t)got;
	}
	/* A file truncated under a shared offset has a hole before the line. */
	for (size_t i = 0; i < len; i++)
		buf[i] = buf[i] ? buf[i] : ' ';
	buf[len] = '\0';
	for (char *q = buf; (q = strstr(q, "useonce:")); q++)
		n++;
	return n;
}

/*
 * sh and three processes, one bad value: one line wherever it goes, once a
 * session (_i: the destination).  Before, a file and a pipe got a line a
 * process.  A named FIFO still gets a line a process: its reader may change.
 */
START_TEST(test_warned_once_per_session)
{
	static const char script[] = "/bin/true; /bin/true; /bin/true";
	static const char two[] = "/bin/true; /bin/true; USEONCE_GUARD=zz /bin/true; "
				  "USEONCE_GUARD=zz /bin/true";
	int first, again, other, expected = _i == TO_FIFO ? 4 : 1;

	if (uot_skipped(NULL) || run_user_exists(0))
		return;
	clean();
	first = warnings(script, (enum dest)_i);
	again = warnings(script, (enum dest)_i);
	other = warnings(two, (enum dest)_i);
	printf("userdir: sh + 3 processes, one bad value, to %s: %d lines (a new session: %d); "
	       "two problem sets: %d\n", dest_name[_i], first, again, other);
	ck_assert_msg(first == expected, "to %s: %d lines, not %d", dest_name[_i], first, expected);
	ck_assert_int_eq(again, expected);
	ck_assert_int_eq(other, _i == TO_FIFO ? 5 : 2);
}
END_TEST

/*
 * stderr a file its user may write but not read (mode 0200): the line
 * cannot be read back, and the file's size is all there is to go by.
 * Once for sh and three processes, as it was before the line was read
 * back (read back, it was a line a process).
 */
START_TEST(test_warned_once_to_a_write_only_file)
{
	static const char script[] = "/bin/true; /bin/true; /bin/true";
	int n;

	if (uot_skipped(NULL) || run_user_exists(NOBODY))
		return;
	clean();
	n = warnings(script, TO_FILE_WO);
	unlink(d.err);
	printf("userdir: sh + 3 processes of nobody, one bad value, to %s: %d lines\n",
	       dest_name[TO_FILE_WO], n);
	ck_assert_msg(n == 1, "to %s: %d lines, not 1", dest_name[TO_FILE_WO], n);
}
END_TEST

/*
 * A file that lost the line (truncated, or another file in its place) is
 * told again; one that still holds it, appended to by the next process, not.
 */
START_TEST(test_warned_again_when_lost)
{
	static const char truncated[] = "/bin/true; : >\"$ERR\"; /bin/true; /bin/true";
	static const char replaced[] = "/bin/true; rm \"$ERR\"; /bin/true 2>\"$ERR\"; "
				       "/bin/true 2>>\"$ERR\"";
	int t, r;

	if (uot_skipped(NULL) || run_user_exists(0))
		return;
	clean();
	t = warnings(truncated, TO_FILE);
	r = warnings(replaced, TO_FILE);
	printf("userdir: a file truncated after the first line: %d in it at the end; "
	       "removed and made again: %d\n", t, r);
	ck_assert_msg(t == 1, "truncated: %d lines at the end, not 1", t);
	ck_assert_msg(r == 1, "made again: %d lines at the end, not 1", r);
}
END_TEST

/*
 * A file truncated, then refilled by someone else past where the line
 * ended: the size alone said the line was still there.  It is told again.
 */
START_TEST(test_warned_again_when_refilled)
{
	static const char refilled[] = "/bin/true; : >\"$ERR\"; "
				       "printf '%0600d\\n' 0 >>\"$ERR\"; /bin/true";
	int n;

	if (uot_skipped(NULL) || run_user_exists(0))
		return;
	clean();
	n = warnings(refilled, TO_FILE);
	printf("userdir: a file truncated and refilled past the line: %d in it at the end\n", n);
	ck_assert_msg(n == 1, "refilled: %d lines at the end, not 1", n);
}
END_TEST

/*
 * A line that could not be written (stderr a terminal opened for reading
 * only) is not noted as said: the next process says it.
 */
START_TEST(test_warned_again_when_unwritten)
{
	static const char unwritten[] = "T=$(readlink /proc/$$/fd/2); "
					"USEONCE_GUARD=zz /bin/true 2<\"$T\"; "
					"USEONCE_GUARD=zz /bin/true";
	int n;

	if (uot_skipped(NULL) || run_user_exists(0))
		return;
	clean();
	n = warnings(unwritten, TO_TTY);
	printf("userdir: a line that failed to reach the terminal, then a process that can: "
	       "%d lines\n", n);
	/* sh's own line, and the second problem set's once. */
	ck_assert_msg(n == 2, "after a failed write: %d lines, not 2", n);
}
END_TEST

static void prepare(void)
{
	char gid[32];
	FILE *p;

	uot_suite_begin("userdir", NULL);
	if (!uot_need_root("cannot plant other users' files and become nobody") ||
	    !uot_need_programs("setpriv"))
		return;
	if (uot_sh("id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null") != 0) {
		uot_skip("user nobody or group nogroup missing");
		return;
	}
	if (!uot_need_scratch())
		return;
	if (!uot_public_dir(d.dir, sizeof(d.dir), "userdir")) {
		uot_skip("%s", uot_why());
		return;
	}
	p = popen("getent group nogroup | cut -d: -f3", "r");
	d.nobody_gid = p && fgets(gid, sizeof(gid), p) ? (uint32_t)atoi(gid) : NOBODY;
	if (p)
		pclose(p);
	snprintf(d.tmp, sizeof(d.tmp), "%s/tmp", d.dir);
	snprintf(d.file, sizeof(d.file), "%s/stream", d.dir);
	snprintf(d.lib, sizeof(d.lib), "%s/libuseonce.so", d.dir);
	snprintf(d.err, sizeof(d.err), "%s/err", d.dir);
	snprintf(d.bait, sizeof(d.bait), "%s/bait", d.dir);
	snprintf(d.preload, sizeof(d.preload), "LD_PRELOAD=%s", d.lib);
	snprintf(d.tmpdir, sizeof(d.tmpdir), "TMPDIR=%s", d.tmp);
	snprintf(d.trace, sizeof(d.trace), "%s/trace", d.dir);
	snprintf(d.trace_env, sizeof(d.trace_env), "USEONCE_TRACE=%s", d.trace);
	/* Our copy of the library: nobody may not be able to reach the build tree. */
	if (mkdir(d.tmp, 0777) != 0 || chmod(d.tmp, 01777) != 0 ||
	    uot_sh("cp '%s' '%s' && chmod 0755 '%s'", uot_library(), d.lib, d.lib) != 0 ||
	    uot_make_file(d.file, (uint64_t)FILE_MIB << 20, 13) != 0 || chmod(d.file, 0644) != 0)
		uot_skip("cannot make the files: %s", strerror(errno));
}

int main(void)
{
	Suite *s = suite_create("userdir");
	TCase *tc = tcase_create("private directory");

	prepare();
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_made_private_and_kept, 0, 2);
	tcase_add_loop_test(tc, test_hostile_never_used, 0, 6);
	tcase_add_test(tc, test_runtime_dir_not_ours);
	tcase_add_loop_test(tc, test_warned_once_per_session, TO_FILE, TO_FIFO + 1);
	tcase_add_test(tc, test_warned_once_to_a_write_only_file);
	tcase_add_test(tc, test_warned_again_when_lost);
	tcase_add_test(tc, test_warned_again_when_refilled);
	tcase_add_test(tc, test_warned_again_when_unwritten);
	suite_add_tcase(s, tc);
	return uot_check_run(s, true);
}
