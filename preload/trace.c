/*
 * Trace lines and warnings (trace.h).  Raw system calls also keep our own
 * close and write hooks out of the way.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "sys.h"
#include "trace.h"

bool uo_tracing(void)
{
	return uo_config.trace.fd >= 0 || uo_config.trace.path[0];
}

static void uo_line_char(struct uo_line *l, char c)
{
	/* Keep one byte for the newline. */
	if (l->len + 1 < sizeof(l->buf))
		l->buf[l->len++] = c;
}

void uo_line_str(struct uo_line *l, const char *s)
{
	while (*s)
		uo_line_char(l, *s++);
}

void uo_line_num(struct uo_line *l, uint64_t v)
{
	char digits[20];
	int n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		uo_line_char(l, digits[--n]);
}

void uo_line_range(struct uo_line *l, struct uo_range r)
{
	uo_line_num(l, r.start);
	uo_line_str(l, "-");
	if (r.end == UO_EOF)
		uo_line_str(l, "EOF");
	else
		uo_line_num(l, r.end);
}

void uo_line_start(struct uo_line *l, int fd)
{
	l->len = 0;
	uo_line_str(l, "useonce[");
	uo_line_num(l, (uint64_t)uo_getpid());
	uo_line_str(l, "]: ");
	if (fd >= 0) {
		uo_line_str(l, "fd ");
		uo_line_num(l, (uint64_t)fd);
		uo_line_str(l, ": ");
	}
}

/* Messages that already say what becomes of the value. */
static bool uo_ends_ignored(const char *why)
{
	static const char tail[] = "ignored";
	size_t n = 0, i;

	while (why[n])
		n++;
	if (n < sizeof(tail) - 1)
		return false;
	for (i = 0; tail[i]; i++)
		if (why[n - (sizeof(tail) - 1) + i] != tail[i])
			return false;
	return true;
}

/* True if all of it was written. */
static bool uo_write_each(int fd, const char *buf, size_t len)
{
	while (len) {
		long n = uo_sys(SYS_write, fd, buf, len);

		if (n <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/*
 * A line of ours must not stop or kill the program: a pipe whose reader
 * is gone sends SIGPIPE (cp onto a failing disk, its stderr a closed
 * pipe, exited 141 where it exits 0 bare), and a background job's write
 * to a terminal with tostop is stopped by SIGTTOU (cp stopped until fg).
 * Both are blocked around the write (a blocked SIGTTOU lets it through),
 * and a SIGPIPE the write raised is taken back, not one that was pending
 * before.  Raw system calls: safe in a signal handler, errno untouched.
 */
#define UO_SIGBIT(sig)	(1ULL << ((sig) - 1))

static bool uo_write_all(int fd, const char *buf, size_t len)
{
	uint64_t block = UO_SIGBIT(SIGPIPE) | UO_SIGBIT(SIGTTOU), old = 0, before = 0, after = 0;
	bool ok, masked = uo_sys(SYS_rt_sigprocmask, SIG_BLOCK, &block, &old, 8) == 0;

	if (masked && uo_sys(SYS_rt_sigpending, &before, 8) != 0)
		before = UO_SIGBIT(SIGPIPE);
	ok = uo_write_each(fd, buf, len);
	if (!masked)
		return ok;
	if (!ok && !(before & UO_SIGBIT(SIGPIPE)) && uo_sys(SYS_rt_sigpending, &after, 8) == 0 &&
	    (after & UO_SIGBIT(SIGPIPE))) {
		uint64_t pipe = UO_SIGBIT(SIGPIPE);
		struct timespec zero = { 0, 0 };

		uo_sys(SYS_rt_sigtimedwait, &pipe, NULL, &zero, 8);
	}
	uo_sys(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, 8);
	return ok;
}

void uo_dest_keep(struct uo_dest *d)
{
	struct uo_file f;

	if (d->fd < 0)
		return;
	if (uo_fstat(d->fd, &f) != 0) {
		d->fd = -1;
		return;
	}
	d->dev = f.dev;
	d->ino = f.ino;
}

/* Does the descriptor still name the file it named at start (uo_dest_keep)? */
static bool uo_dest_same(const struct uo_dest *d)
{
	struct uo_file f;

	return d->fd >= 0 && uo_fstat(d->fd, &f) == 0 && f.dev == d->dev && f.ino == d->ino;
}

/*
 * Standard error as the program started with it, kept as the trace's
 * descriptor is.  A program that closed it may have been given number 2
 * for a file of its own (rsync's receiver writes its temporary files there
 * then): a notice written to "fd 2" went into that file's data.
 */
static struct uo_dest uo_stderr_dest = { .fd = 2 };

void uo_stderr_keep(void)
{
	uo_dest_keep(&uo_stderr_dest);
}

bool uo_stderr_same(void)
{
	long fl;

	if (!uo_dest_same(&uo_stderr_dest))
		return false;
	fl = uo_sys(SYS_fcntl, 2, F_GETFL);
	return fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
}

/* Opened per line: a descriptor kept open could be closed or reused by the program. */
static int uo_dest_open(const char *path)
{
	struct uo_file f;
	int fd = (int)uo_sys(SYS_openat, AT_FDCWD, path,
			     O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
			     O_NOCTTY, 0600);

	if (fd < 0)
		return -1;
	if (uo_fstat(fd, &f) != 0 || !S_ISREG(f.mode) || f.uid != (uint32_t)uo_sys(SYS_geteuid)) {
		uo_sys(SYS_close, fd);
		return -1;
	}
	return fd;
}

void uo_dest_write(const struct uo_dest *d, struct uo_line *l)
{
	int fd;

	l->buf[l->len++] = '\n';
	if (d->fd >= 0) {
		/* The program may have closed ours (closefrom) and reused the number. */
		if (uo_dest_same(d))
			uo_write_all(d->fd, l->buf, l->len);
		return;
	}
	if (!d->path[0])
		return;
	fd = uo_dest_open(d->path);
	if (fd < 0)
		return;
	/* One write: processes of a session can share the file. */
	uo_write_all(fd, l->buf, l->len);
	uo_sys(SYS_close, fd);
}

void uo_line_trace(struct uo_line *l)
{
	uo_dest_write(&uo_config.trace, l);
}

/* A value from outside, shown safely: printable bytes only, cut short. */
static void uo_line_safe(struct uo_line *l, const char *value, int most)
{
	int shown = 0;

	for (; *value && shown < most; value++, shown++)
		uo_line_char(l, *value >= 0x20 && *value < 0x7f ? *value : '?');
	if (*value)
		uo_line_str(l, "...");
}

void uo_line_value(struct uo_line *l, const char *value)
{
	uo_line_safe(l, value, 40);
}

bool uo_line_write(struct uo_line *l, int fd)
{
	l->buf[l->len++] = '\n';
	return uo_write_all(fd, l->buf, l->len);
}

void uo_line_path(struct uo_line *l, const char *path)
{
	uo_line_safe(l, path, 200);
}

/* "useonce: USEONCE_WINDOW=8x: not a size (try 32M); ignored" */
void uo_line_warning(struct uo_line *l, const char *what, const char *value, const char *why)
{
	l->len = 0;
	uo_line_str(l, "useonce: ");
	uo_line_str(l, what);
	if (value) {
		uo_line_str(l, "=");
		uo_line_value(l, value);
	}
	uo_line_str(l, ": ");
	uo_line_str(l, why);
	if (!uo_ends_ignored(why))
		uo_line_str(l, "; ignored");
}

void uo_line_warning_at(struct uo_line *l, const char *file, unsigned line, const char *key,
			const char *value, const char *why)
{
	l->len = 0;
	uo_line_str(l, "useonce: ");
	uo_line_path(l, file);
	if (line) {
		uo_line_str(l, ":");
		uo_line_num(l, line);
	}
	uo_line_str(l, ": ");
	if (key) {
		uo_line_value(l, key);
		if (value) {
			uo_line_str(l, " = ");
			uo_line_value(l, value);
		}
		uo_line_str(l, ": ");
	}
	uo_line_str(l, why);
	if (line && !uo_ends_ignored(why))
		uo_line_str(l, "; ignored");
}

/* Binary units, one decimal: "0 B", "512 B", "1.5 GiB". */
void uo_line_bytes(struct uo_line *l, uint64_t v)
{
	static const char units[][4] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0;
	uint64_t unit = 1024;

	if (v < 1024) {
		uo_line_num(l, v);
		uo_line_str(l, " B");
		return;
	}
	while (u + 1 < sizeof(units) / sizeof(units[0]) && v / unit >= 1024) {
		unit <<= 10;
		u++;
	}
	uo_line_num(l, v / unit);
	uo_line_str(l, ".");
	uo_line_num(l, (v % unit) * 10 / unit);
	uo_line_str(l, " ");
	uo_line_str(l, units[u]);
}

void uo_trace(int fd, const char *what, const char *detail)
{
	struct uo_line l;

	if (!uo_tracing())
		return;
	uo_line_start(&l, fd);
	uo_line_str(&l, what);
	if (detail) {
		uo_line_str(&l, ": ");
		uo_line_str(&l, detail);
	}
	uo_line_trace(&l);
}
