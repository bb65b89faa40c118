/*
 * The user's private directory: where the record of recent streams lives,
 * and the note of warnings already said.
 *
 * Desktop sessions have $XDG_RUNTIME_DIR; root shells, cron jobs, ssh
 * sessions without a login manager and containers do not, and a user with
 * no record reads a file streamed again and again from disk every time.
 * So the candidates, first usable one wins:
 *
 *   $XDG_RUNTIME_DIR		a login manager's per-user tmpfs
 *   /run/user/UID		when it exists without the variable (su, cron)
 *   $TMPDIR/useonce-UID	else /tmp/useonce-UID, created 0700 if missing
 *
 * A candidate is used only if the directory itself, opened without
 * following a link in its last component, belongs to us (the effective
 * user) and lets nobody else in (no group or other bits).  Then no one else
 * can put anything in it, and what lives inside is opened relative to its
 * descriptor, again with O_NOFOLLOW.  A link planted by another user, a
 * directory of someone else (a su'd root with the user's XDG_RUNTIME_DIR
 * still set), a mode letting others in: passed over without a word, and
 * with no candidate left there is simply no record.  Someone who takes
 * /tmp/useonce-UID first can deny us the record, nothing more.
 *
 * Only used when a stream is recognised or a warning is due, never in the
 * start-up path of a process that has nothing to say.  Setuid programs use
 * none of it: their environment is someone else's.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "config.h"
#include "sys.h"
#include "userdir.h"

#define UO_DIR_FLAGS	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)

/* The directory at path, if it is ours and private; else -1. */
static int uo_private(const char *path)
{
	struct uo_file f;
	int fd = (int)uo_sys(SYS_openat, AT_FDCWD, path, UO_DIR_FLAGS);

	if (fd < 0)
		return -1;
	if (uo_fstat(fd, &f) == 0 &&
	    !uo_private_dir_why(f.mode, f.uid, (unsigned)uo_sys(SYS_geteuid)))
		return fd;
	uo_sys(SYS_close, fd);
	return -1;
}

/* prefix, n in decimal, suffix into out (which the caller made big enough). */
static void uo_numbered(char *out, const char *prefix, uint32_t n, const char *suffix)
{
	char digits[12];
	int i = 0;

	while (*prefix)
		*out++ = *prefix++;
	do
		digits[i++] = (char)('0' + n % 10);
	while (n /= 10);
	while (i)
		*out++ = digits[--i];
	while (*suffix)
		*out++ = *suffix++;
	*out = '\0';
}

int uo_userdir_open(void)
{
	char path[256];
	const char *tmp = uo_config.tmp_dir[0] ? uo_config.tmp_dir : "/tmp";
	uint32_t uid = (uint32_t)uo_sys(SYS_geteuid);
	size_t len;
	int fd;

	if (getauxval(AT_SECURE))
		return -1;
	if (uo_config.runtime_dir[0] && (fd = uo_private(uo_config.runtime_dir)) >= 0)
		return fd;
	uo_numbered(path, "/run/user/", uid, "");
	if ((fd = uo_private(path)) >= 0)
		return fd;
	/* tmp_dir fits in 230 bytes (config.c), with room for "/useonce-" and a uid. */
	for (len = 0; tmp[len]; len++)
		path[len] = tmp[len];
	uo_numbered(path + len, "/useonce-", uid, "");
	/* Made private from the start; one that exists already is judged as any other. */
	uo_sys(SYS_mkdirat, AT_FDCWD, path, 0700);
	return uo_private(path);
}

/*
 * Warnings said once per session and destination.  A bad value set for a
 * whole session is a line on every command's stderr otherwise: in every
 * terminal, in every log of a cron job, once per process of a build.
 *
 * A line is left unsaid only where the very same line already went, in
 * this session: the same terminal, the same pipe (a pipeline's reader, a
 * `make 2>&1 | tee log`), the same socket (a service's journal stream), or
 * the same regular file while it still holds it (a file truncated or
 * replaced since is said to again).  Everything else gets its line: a
 * named FIFO (its reader may have changed), /dev/null, a new pipe (each
 * `$(cmd 2>&1)`, each captured stderr of a subprocess), another session.
 *
 * The session is the session id with its leader's start time (a session id
 * is a pid, and pids come back), or with its oldest living process above
 * us when the leader is gone; the destination is what stderr names.
 * Notes are fixed-size entries in a small file of the private directory,
 * the oldest overwritten, torn ones taken as empty (the record's way).
 * Nothing else is kept and the environment is left alone: children see
 * exactly what the program gave them.  Two processes starting at once may
 * both say the line (no locks: nothing here may wait); whenever something
 * cannot be known, the line is said.
 */
#define UO_SAID_SLOTS	64
#define UO_SAID_CHECK	0x5bd1e9955bd1e995ULL

struct uo_said_entry {
	uint64_t key;
	uint64_t when;		/* CLOCK_REALTIME seconds, for choosing the oldest */
	uint64_t end;		/* a regular file: where the line ended in it; else 0 */
	uint64_t check;		/* key ^ when ^ end ^ UO_SAID_CHECK, else torn */
};

static uint64_t uo_said_mix(uint64_t h, uint64_t v)
{
	h ^= v + UO_SAID_CHECK + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

long uo_proc_cmdline(uint32_t pid, char *buf, size_t size)
{
	char path[40];

	uo_numbered(path, "/proc/", pid, "/cmdline");
	return uo_read_small(path, buf, size);
}

bool uo_proc_stat(uint32_t pid, long *ppid, long *sid, uint64_t *start)
{
	return uo_proc_stat_comm(pid, ppid, sid, start, NULL);
}

bool uo_proc_stat_comm(uint32_t pid, long *ppid, long *sid, uint64_t *start, char *comm)
{
	char path[32], buf[512];
	const char *p = NULL, *end;
	uint64_t v[3] = { 0, 0, 0 };
	long n, i;
	int field, want = 0;
	static const int fields[3] = { 4, 6, 22 };

	uo_numbered(path, "/proc/", pid, "/stat");
	n = uo_read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return false;
	/* The name may hold spaces and parentheses: fields count from the last ')'. */
	for (i = 0; i < n; i++)
		if (buf[i] == ')')
			p = buf + i + 1;
	if (!p)
		return false;
	if (comm) {
		const char *c = memchr(buf, '(', (size_t)n);
		size_t len = c ? (size_t)(p - 1 - (c + 1)) : 0;

		if (len > UO_COMM_MAX - 1)
			len = UO_COMM_MAX - 1;
		if (c)
			memcpy(comm, c + 1, len);
		comm[len] = '\0';
	}
	end = buf + n;
	for (field = 2; p < end && want < 3; p++) {
		if (*p != ' ')
			continue;
		if (++field != fields[want])
			continue;
		for (p++; p < end && *p >= '0' && *p <= '9'; p++)
			v[want] = v[want] * 10 + (uint64_t)(*p - '0');
		want++;
		p--;
	}
	if (want < 3 || !v[2])
		return false;
	*ppid = (long)v[0];
	*sid = (long)v[1];
	*start = v[2];
	return true;
}

/*
 * What names this session for as long as it lives: its leader and the
 * leader's start time (a session id is a pid, and pids come back).  A
 * leader may be gone while the session goes on (a daemon's double fork, a
 * `setsid sh -c 'cmd &'`, a CI runner): then the oldest living ancestor
 * of ours still in the session, which every process started below it
 * finds too.  So too when the leader lives in a parent PID namespace (a
 * container, `unshare -p`): the session reads as 0 there, to getsid and in
 * /proc alike, and the chain of processes seeing 0 is ours.  False if
 * nothing can be told (the line is said).
 */
static bool uo_session_anchor(long sid, uint32_t *pid, uint64_t *start)
{
	long ppid, psid;
	uint64_t pstart;
	uint32_t at;
	int depth;

	if (sid > 0 && uo_proc_stat((uint32_t)sid, &ppid, &psid, &pstart) && psid == sid) {
		*pid = (uint32_t)sid;
		*start = pstart;
		return true;
	}
	at = (uint32_t)uo_getpid();
	if (!uo_proc_stat(at, &ppid, &psid, &pstart) || psid != sid)
		return false;
	*pid = at;
	*start = pstart;
	/* Bounded: a chain of processes is short, and this runs once per warning. */
	for (depth = 0; depth < 64 && ppid > 1; depth++) {
		at = (uint32_t)ppid;
		if (!uo_proc_stat(at, &ppid, &psid, &pstart) || psid != sid)
			break;
		*pid = at;
		*start = pstart;
	}
	return true;
}

/* Is stderr an anonymous pipe ("pipe:[N]"), not a named FIFO whose reader may change? */
static bool uo_stderr_is_pipe(void)
{
	char link[16];
	long n = uo_sys(SYS_readlinkat, AT_FDCWD, "/proc/self/fd/2", link, sizeof(link));

	return n > 5 && link[0] == 'p' && link[1] == 'i' && link[2] == 'p' && link[3] == 'e' &&
	       link[4] == ':';
}

/*
 * Where a line of 'len' bytes written now to stderr, a regular file, ends:
 * at the end of the file if it is appended to, else at the file position.
 * 0: unknown (the line is said).
 */
static uint64_t uo_stderr_end(const struct uo_file *f, size_t len)
{
	long flags = uo_sys(SYS_fcntl, STDERR_FILENO, F_GETFL);
	int64_t at;

	if (flags < 0)
		return 0;
	at = (flags & O_APPEND) ? (int64_t)f->size : uo_cursor(STDERR_FILENO);
	return at < 0 ? 0 : (uint64_t)at + len + 1;
}

/*
 * Does stderr, a regular file, still hold the line ('len' bytes and a
 * newline) where it ended, at 'end'?  Its size alone cannot say: a log
 * truncated and filled again past that point by another writer lost the
 * line.  Read through stderr itself, or, as it is most often open for
 * writing only, through a descriptor of its own on the same file.  Where
 * neither can read it (a file its user may write but not read, mode
 * 0200), the size is all there is: the line is taken for there if the
 * file still reaches its end, as before lines were read back; saying it
 * in every process would be worse than missing a refilled log.
 */
static bool uo_stderr_holds(const struct uo_file *to, const char *text, size_t len, uint64_t end)
{
	char buf[UO_SAID_LINE_MAX + 1];
	char path[UO_PROC_FD_PATH];
	struct uo_file f;
	long n, fd;
	size_t i;

	if (len > UO_SAID_LINE_MAX || end < len + 1 || to->size < end)
		return false;
	n = uo_sys(SYS_pread64, STDERR_FILENO, buf, len + 1, end - len - 1);
	if (n == -EBADF) {
		uo_proc_fd_path(path, STDERR_FILENO);
		/* O_NONBLOCK: should stderr have become a FIFO meanwhile, the open never waits. */
		fd = uo_sys(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
			    O_NONBLOCK);
		if (fd < 0)
			return fd == -EACCES || fd == -EPERM;
		n = -EBADF;
		/* Opened through the link: the same file, unless stderr changed meanwhile. */
		if (uo_fstat((int)fd, &f) == 0 && f.dev == to->dev && f.ino == to->ino)
			n = uo_sys(SYS_pread64, fd, buf, len + 1, end - len - 1);
		uo_sys(SYS_close, fd);
	}
	if (n != (long)len + 1 || buf[len] != '\n')
		return false;
	for (i = 0; i < len; i++)
		if (buf[i] != text[i])
			return false;
	return true;
}

bool uo_said_in_session(const char *text, size_t len, struct uo_said_note *note)
{
	struct uo_said_entry e[UO_SAID_SLOTS], now_e;
	char termios_buf[64] __attribute__((aligned(8)));
	struct uo_file to, rec;
	uint64_t key = 1, now, start, end = 0;
	uint32_t anchor;
	long sid;
	unsigned i, slot = 0;
	bool said = false;
	int dir, fd;

	note->fd = -1;
	if (uo_fstat(STDERR_FILENO, &to) != 0)
		return false;
	if (S_ISREG(to.mode)) {
		if (!(end = uo_stderr_end(&to, len)))
			return false;
	} else if (!S_ISSOCK(to.mode) && !(S_ISFIFO(to.mode) && uo_stderr_is_pipe()) &&
		   uo_sys(SYS_ioctl, STDERR_FILENO, TCGETS, termios_buf) != 0) {
		/* /dev/null, a named FIFO, another device: said, and nothing noted. */
		return false;
	}
	if (!uo_clock_ms(CLOCK_REALTIME, &now))
		return false;
	sid = uo_sys(SYS_getsid, 0);
	if (sid < 0 || !uo_session_anchor(sid, &anchor, &start))
		return false;
	key = uo_said_mix(uo_said_mix(uo_said_mix(uo_said_mix(uo_said_mix(key, (uint64_t)sid),
							      anchor), start), to.dev), to.ino);
	for (i = 0; i < len; i++)
		key = uo_said_mix(key, (unsigned char)text[i]);
	key = key ? key : 1;
	now /= 1000;
	dir = uo_userdir_open();
	if (dir < 0)
		return false;
	fd = (int)uo_sys(SYS_openat, dir, "useonce-said",
			 O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	uo_sys(SYS_close, dir);
	if (fd < 0)
		return false;
	if (uo_fstat(fd, &rec) != 0 || !S_ISREG(rec.mode) ||
	    rec.uid != (uint32_t)uo_sys(SYS_geteuid))
		goto out;
	/* A short or new file reads as empty entries. */
	for (i = 0; i < UO_SAID_SLOTS; i++)
		e[i].key = e[i].when = e[i].end = e[i].check = 0;
	if (uo_sys(SYS_pread64, fd, e, sizeof(e), 0) < 0)
		goto out;
	for (i = 0; i < UO_SAID_SLOTS; i++) {
		if ((e[i].key ^ e[i].when ^ e[i].end ^ UO_SAID_CHECK) != e[i].check)
			e[i].key = e[i].when = e[i].end = 0;
		if (e[i].key == key) {
			/* A file that lost the line (truncated, refilled): say it again, here. */
			said = !S_ISREG(to.mode) || uo_stderr_holds(&to, text, len, e[i].end);
			slot = i;
			break;
		}
		if (e[i].when < e[slot].when)
			slot = i;
	}
	if (said)
		goto out;
	/* Noted only once the line is written (uo_said_done): the file stays open till then. */
	now_e.key = key;
	now_e.when = now;
	now_e.end = end;
	now_e.check = key ^ now ^ end ^ UO_SAID_CHECK;
	_Static_assert(sizeof(now_e) == sizeof(note->entry), "a note holds an entry");
	__builtin_memcpy(note->entry, &now_e, sizeof(now_e));
	note->slot = slot;
	note->fd = fd;
	return false;
out:
	uo_sys(SYS_close, fd);
	return said;
}

void uo_said_done(struct uo_said_note *note, bool written)
{
	if (note->fd < 0)
		return;
	if (written)
		uo_sys(SYS_pwrite64, note->fd, note->entry, sizeof(note->entry),
		       (off_t)(note->slot * sizeof(note->entry)));
	uo_sys(SYS_close, note->fd);
	note->fd = -1;
}
