/*
 * oddfd SCENARIO [PATH]: moves known data through one kind of odd
 * descriptor and prints a transcript: what each call returned (errno by
 * name), how many bytes went through, and whether every byte was the one
 * expected.  check_oddfds runs each scenario with and without libuseonce
 * and compares the transcripts; nothing in them depends on the time, the
 * process ids or the paths.  Exit status 0 only if every check passed.
 *
 *	regular DIR	streams written, read and copied on a disk filesystem
 *	fuse DIR	the same, in a FUSE mount
 *	tmpfs DIR	the same, on tmpfs
 *	pipe DIR	read, writev, splice both ways, EAGAIN, ESPIPE
 *	socket DIR	a socketpair; TCP on loopback fed by sendfile, spliced out
 *	tty		a pseudo-terminal in raw mode, both ways
 *	proc		/proc and /sys files read whole in several ways
 *	memfd DIR	a memfd streamed, copied out by sendfile and copy_file_range
 *	direct DIR	O_DIRECT writes and reads, aligned and not
 *	append DIR	two processes appending records with O_APPEND
 *	sparse DIR	holes read as zeros, SEEK_DATA/SEEK_HOLE, blocks on disk
 *	grow DIR	files truncated and grown under a reader and a writer
 *	chardev		/dev/zero, /dev/null, /dev/urandom, a directory, an eventfd,
 *			descriptors opened the wrong way or closed
 *	blockdev DEV	a block device (a loop device) written and read whole
 *
 * A scenario that cannot run here (no pseudo-terminal, no O_DIRECT on this
 * filesystem...) prints one line "SKIP: why" and nothing else.
 *
 * The data at offset o of every stream is byte o of a sequence fixed by a
 * seed (uot_gen_*), so any reader can check any range on its own.
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define KiB	(1ULL << 10)
#define MiB	(1ULL << 20)
#define STREAM	(48 * MiB)	/* well above the 2M threshold check_oddfds sets */

static int failures;
static char dir[3072];

/* ---- the data ---- */

static uint64_t uot_gen_word(uint32_t seed, uint64_t index)
{
	uint64_t z = ((uint64_t)seed << 40) + index * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned char uot_gen_byte(uint32_t seed, uint64_t off)
{
	return (unsigned char)(uot_gen_word(seed, off / 8) >> (8 * (off % 8)));
}

static void uot_gen_fill(void *buf, uint64_t off, size_t len, uint32_t seed)
{
	unsigned char *p = buf;
	size_t i = 0;

	while (i < len && (off + i) % 8)
		p[i] = uot_gen_byte(seed, off + i), i++;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = uot_gen_word(seed, (off + i) / 8);

		memcpy(p + i, &w, 8);	/* little-endian: byte k of the word is byte o+k */
	}
	for (; i < len; i++)
		p[i] = uot_gen_byte(seed, off + i);
}

/* Index of the first byte that is not the sequence's (seed 0: not zero), or len. */
static size_t uot_gen_diff(const void *buf, uint64_t off, size_t len, uint32_t seed)
{
	static unsigned char want[MiB];
	const unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		size_t n = len - done < sizeof(want) ? len - done : sizeof(want), i;

		if (seed)
			uot_gen_fill(want, off + done, n, seed);
		else
			memset(want, 0, n);
		if (memcmp(p + done, want, n)) {
			for (i = 0; p[done + i] == want[i]; i++)
				;
			return done + i;
		}
		done += n;
	}
	return len;
}

/* ---- the transcript ---- */

__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

__attribute__((format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
	va_list ap;

	failures++;
	fputs("FAIL: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static const char *errname(int err)
{
	switch (err) {
	case 0: return "ok";
	case EAGAIN: return "EAGAIN";
	case ESPIPE: return "ESPIPE";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case EXDEV: return "EXDEV";
	case ENOENT: return "ENOENT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOTTY: return "ENOTTY";
	case EIO: return "EIO";
	case ENOSPC: return "ENOSPC";
	case EPIPE: return "EPIPE";
	case ENXIO: return "ENXIO";
	default: return strerror(err);
	}
}

/* "what -> 4096" or "what -> -1 EAGAIN". */
static long said(const char *what, long r)
{
	if (r < 0)
		say("%s -> %ld %s", what, r, errname(errno));
	else
		say("%s -> %ld", what, r);
	return r;
}

static void path_in(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

static void *xalloc(size_t size)
{
	void *p;

	/* Page aligned, so O_DIRECT can use any buffer. */
	if (posix_memalign(&p, 4096, size) != 0) {
		fprintf(stderr, "oddfd: out of memory\n");
		exit(2);
	}
	return p;
}

static bool write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* Writes [off, off + len) of the sequence to fd at its cursor, in 'chunk' calls. */
static bool write_seq(int fd, uint64_t off, uint64_t len, uint32_t seed, size_t chunk)
{
	unsigned char *buf = xalloc(chunk);
	bool ok = true;

	while (ok && len) {
		size_t n = len < chunk ? (size_t)len : chunk;

		uot_gen_fill(buf, off, n, seed);
		ok = write_all(fd, buf, n);
		off += n;
		len -= n;
	}
	free(buf);
	return ok;
}

/*
 * Reads with read(2) in 'chunk' calls until EOF or 'want' bytes (0: EOF
 * only), checking each byte against the sequence from 'off'.  Says how
 * many bytes came and whether they were right.
 */
static uint64_t read_seq(const char *what, int fd, uint64_t off, uint64_t want, uint32_t seed,
			 size_t chunk)
{
	unsigned char *buf = xalloc(chunk);
	uint64_t got = 0, bad = UINT64_MAX;

	for (;;) {
		size_t n = chunk;
		ssize_t r;

		if (want && want - got < n)
			n = (size_t)(want - got);
		if (want && !n)
			break;
		r = read(fd, buf, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fail("%s: read after %llu bytes: %s", what, (unsigned long long)got,
			     errname(errno));
			break;
		}
		if (r == 0)
			break;
		if (bad == UINT64_MAX) {
			size_t d = uot_gen_diff(buf, off + got, (size_t)r, seed);

			if (d < (size_t)r)
				bad = got + d;
		}
		got += (uint64_t)r;
	}
	free(buf);
	if (bad != UINT64_MAX)
		fail("%s: %llu bytes, wrong from byte %llu", what, (unsigned long long)got,
		     (unsigned long long)bad);
	else if (want && got != want)
		fail("%s: %llu bytes of %llu", what, (unsigned long long)got,
		     (unsigned long long)want);
	else
		say("%s: %llu bytes, all right", what, (unsigned long long)got);
	return got;
}

/* A whole file compared with the sequence, by pread: [0, size) of seed. */
static void check_file(const char *what, const char *path, uint64_t size, uint32_t seed)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fail("%s: cannot open: %s", what, errname(errno));
		return;
	}
	read_seq(what, fd, 0, 0, seed, MiB);
	if ((uint64_t)lseek(fd, 0, SEEK_END) != size)
		fail("%s: size %lld, expected %llu", what, (long long)lseek(fd, 0, SEEK_END),
		     (unsigned long long)size);
	close(fd);
}

/* A child that runs fn(arg) and exits with its status; the transcript is the parent's. */
static pid_t child(int (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("oddfd: fork");
		exit(2);
	}
	if (pid == 0)
		_exit(fn(arg));
	return pid;
}

static void reap(const char *what, pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		say("%s: exit 0", what);
	else
		fail("%s: wait status %#x", what, status);
}

struct feed {
	int fd;
	uint64_t len;
	uint32_t seed;
	size_t chunk;
	bool vectored;		/* writev in two pieces, else write */
};

static int feed_run(void *arg)
{
	struct feed *f = arg;
	unsigned char *buf = xalloc(f->chunk);
	uint64_t off = 0;

	while (off < f->len) {
		size_t n = f->len - off < f->chunk ? (size_t)(f->len - off) : f->chunk;
		size_t done = 0;

		uot_gen_fill(buf, off, n, f->seed);
		while (done < n) {
			struct iovec iov[2] = {
				{ buf + done, (n - done) / 3 },
				{ buf + done + (n - done) / 3, n - done - (n - done) / 3 },
			};
			ssize_t r = f->vectored ? writev(f->fd, iov, 2)
						: write(f->fd, buf + done, n - done);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return 1;
			done += (size_t)r;
		}
		off += n;
	}
	return close(f->fd) == 0 ? 0 : 1;
}

static void nonblocking_read(const char *what, int fd)
{
	char buf[4096], line[128];
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	snprintf(line, sizeof(line), "%s: read with nothing to read", what);
	said(line, read(fd, buf, sizeof(buf)));
	fcntl(fd, F_SETFL, fl);
	snprintf(line, sizeof(line), "%s: lseek", what);
	said(line, (long)lseek(fd, 0, SEEK_CUR));
}

/* ---- scenarios ---- */

/* Written by write, read by read, copied in one copy_file_range and by read/write. */
static void files(const char *label)
{
	char a[4096], b[4096], c[4096], what[128];
	unsigned char *buf = xalloc(128 * KiB);
	uint64_t done = 0;
	loff_t in_off = 0;
	ssize_t r;
	int fd, out;

	path_in(a, sizeof(a), "stream.a");
	path_in(b, sizeof(b), "stream.b");
	path_in(c, sizeof(c), "stream.c");
	fd = open(a, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !write_seq(fd, 0, STREAM, 1, MiB) || fsync(fd) != 0 || close(fd) != 0)
		fail("%s: cannot write the stream: %s", label, errname(errno));
	snprintf(what, sizeof(what), "%s: stream read back", label);
	check_file(what, a, STREAM, 1);

	/* cp's way: the whole file in one call. */
	fd = open(a, O_RDONLY | O_CLOEXEC);
	out = open(b, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	r = copy_file_range(fd, NULL, out, NULL, STREAM, 0);
	snprintf(what, sizeof(what), "%s: copy_file_range of the whole file", label);
	if (r < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS)) {
		said(what, r);
	} else {
		/* The kernel may copy less than asked: go on as cp does. */
		while (r > 0 && (done += (uint64_t)r) < STREAM)
			r = copy_file_range(fd, NULL, out, NULL, STREAM - done, 0);
		if (done != STREAM)
			fail("%s: %llu bytes copied (%s)", what, (unsigned long long)done,
			     errname(errno));
		else
			say("%s: %llu bytes", what, (unsigned long long)done);
		snprintf(what, sizeof(what), "%s: the copy", label);
		check_file(what, b, STREAM, 1);
	}
	close(out);

	/* cp's way across filesystems: 128 KiB read and write, offsets by pread. */
	out = open(c, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	done = 0;
	while ((r = pread(fd, buf, 128 * KiB, in_off)) > 0 && write_all(out, buf, (size_t)r)) {
		in_off += r;
		done += (uint64_t)r;
	}
	if (fsync(out) != 0 || close(out) != 0 || done != STREAM)
		fail("%s: pread/write copy: %llu bytes (%s)", label, (unsigned long long)done,
		     errname(errno));
	snprintf(what, sizeof(what), "%s: pread/write copy", label);
	check_file(what, c, STREAM, 1);
	close(fd);
	unlink(a);
	unlink(b);
	unlink(c);
	free(buf);
}

static void sc_pipe(void)
{
	struct feed f = { .len = STREAM, .seed = 2, .chunk = 64 * KiB + 17 };
	char out[4096];
	int p[2], fd;
	ssize_t r;
	uint64_t got = 0;
	pid_t pid;

	if (pipe(p) != 0)
		exit(2);
	nonblocking_read("pipe", p[0]);
	f.fd = p[1];
	pid = child(feed_run, &f);
	close(p[1]);
	read_seq("pipe: read", p[0], 0, 0, 2, MiB);
	close(p[0]);
	reap("pipe: writer", pid);

	/* Into a file by splice, fed by writev. */
	if (pipe(p) != 0)
		exit(2);
	f.fd = p[1];
	f.vectored = true;
	pid = child(feed_run, &f);
	close(p[1]);
	path_in(out, sizeof(out), "pipe.out");
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	while ((r = splice(p[0], NULL, fd, NULL, MiB, SPLICE_F_MOVE)) > 0)
		got += (uint64_t)r;
	if (r < 0)
		fail("pipe: splice to a file: %s", errname(errno));
	say("pipe: spliced to a file: %llu bytes", (unsigned long long)got);
	close(p[0]);
	close(fd);
	reap("pipe: vectored writer", pid);
	check_file("pipe: the spliced file", out, STREAM, 2);

	/* Out of the file by splice, 64 KiB at a time, read from the pipe. */
	if (pipe(p) != 0)
		exit(2);
	fd = open(out, O_RDONLY | O_CLOEXEC);
	got = 0;
	for (;;) {
		unsigned char buf[64 * KiB];
		ssize_t n;

		r = splice(fd, NULL, p[1], NULL, sizeof(buf), 0);
		if (r <= 0)
			break;
		n = read(p[0], buf, (size_t)r);
		if (n != r || uot_gen_diff(buf, got, (size_t)n, 2) != (size_t)n) {
			fail("pipe: splice from the file: wrong at %llu", (unsigned long long)got);
			break;
		}
		got += (uint64_t)n;
	}
	say("pipe: spliced from the file and read: %llu bytes, last splice %zd",
	    (unsigned long long)got, r);
	said("pipe: the file's cursor after", (long)lseek(fd, 0, SEEK_CUR));
	close(fd);
	close(p[0]);
	close(p[1]);
	unlink(out);
}

struct sender {
	struct sockaddr_in addr;
	const char *path;
	bool with_offset;
};

static int sender_run(void *arg)
{
	struct sender *s = arg;
	int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	off_t off = 0;
	uint64_t done = 0;

	if (sock < 0 || fd < 0 || connect(sock, (struct sockaddr *)&s->addr, sizeof(s->addr)) != 0)
		return 1;
	while (done < STREAM) {
		ssize_t r = sendfile(sock, fd, s->with_offset ? &off : NULL, STREAM - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 2;
		done += (uint64_t)r;
	}
	/* With an offset, the file's own cursor must not have moved. */
	if (s->with_offset && (off != (off_t)STREAM || lseek(fd, 0, SEEK_CUR) != 0))
		return 3;
	if (!s->with_offset && lseek(fd, 0, SEEK_CUR) != (off_t)STREAM)
		return 4;
	return close(sock) == 0 && close(fd) == 0 ? 0 : 5;
}

static void sc_socket(void)
{
	struct feed f = { .len = STREAM, .seed = 3, .chunk = 256 * KiB };
	struct sender s;
	socklen_t len = sizeof(s.addr);
	char src[4096], out[4096];
	int sv[2], lst, conn, fd, p[2];
	uint64_t got = 0;
	ssize_t r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		exit(2);
	nonblocking_read("socketpair", sv[0]);
	f.fd = sv[1];
	pid = child(feed_run, &f);
	close(sv[1]);
	read_seq("socketpair: read", sv[0], 0, 0, 3, 200 * KiB);
	close(sv[0]);
	reap("socketpair: writer", pid);

	path_in(src, sizeof(src), "socket.src");
	fd = open(src, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !write_seq(fd, 0, STREAM, 4, MiB) || close(fd) != 0)
		fail("socket: cannot write the source: %s", errname(errno));
	lst = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&s, 0, sizeof(s));
	s.addr.sin_family = AF_INET;
	s.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lst < 0 || bind(lst, (struct sockaddr *)&s.addr, sizeof(s.addr)) != 0 ||
	    listen(lst, 2) != 0 || getsockname(lst, (struct sockaddr *)&s.addr, &len) != 0) {
		fail("socket: no TCP listener on loopback: %s", errname(errno));
		return;
	}
	s.path = src;
	s.with_offset = true;
	pid = child(sender_run, &s);
	conn = accept4(lst, NULL, NULL, SOCK_CLOEXEC);
	read_seq("tcp: sendfile with an offset, read", conn, 0, 0, 4, 128 * KiB);
	close(conn);
	reap("tcp: sender", pid);

	/* From the socket into a file by splice, through a pipe. */
	s.with_offset = false;
	pid = child(sender_run, &s);
	conn = accept4(lst, NULL, NULL, SOCK_CLOEXEC);
	path_in(out, sizeof(out), "socket.out");
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (pipe(p) != 0)
		exit(2);
	while ((r = splice(conn, NULL, p[1], NULL, 256 * KiB, SPLICE_F_MOVE)) > 0) {
		ssize_t left = r;

		while (left > 0) {
			ssize_t w = splice(p[0], NULL, fd, NULL, (size_t)left, SPLICE_F_MOVE);

			if (w <= 0) {
				fail("tcp: splice to the file: %s", errname(errno));
				r = -1;
				break;
			}
			left -= w;
		}
		if (r < 0)
			break;
		got += (uint64_t)r;
	}
	say("tcp: sendfile at the cursor, spliced to a file: %llu bytes", (unsigned long long)got);
	close(p[0]);
	close(p[1]);
	close(conn);
	close(fd);
	close(lst);
	reap("tcp: sender at the cursor", pid);
	check_file("tcp: the spliced file", out, STREAM, 4);
	unlink(src);
	unlink(out);
}

static void sc_tty(void)
{
	const uint64_t len = 4 * MiB;
	struct feed f = { .len = len, .chunk = 4 * KiB };
	struct termios t;
	int m, s;
	pid_t pid;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) {
		say("SKIP: no pseudo-terminal (%s)", errname(errno));
		return;
	}
	s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0 || tcgetattr(s, &t) != 0) {
		fail("tty: cannot open the terminal: %s", errname(errno));
		return;
	}
	/* Raw: every byte passes unchanged, nothing is echoed. */
	cfmakeraw(&t);
	tcsetattr(s, TCSANOW, &t);
	nonblocking_read("tty", s);

	f.fd = dup(m);
	f.seed = 5;
	pid = child(feed_run, &f);
	close(f.fd);
	read_seq("tty: typed into the terminal, read", s, 0, len, 5, 64 * KiB);
	reap("tty: writer", pid);

	f.fd = dup(s);
	f.seed = 6;
	pid = child(feed_run, &f);
	close(f.fd);
	read_seq("tty: written by the terminal, read", m, 0, len, 6, 64 * KiB);
	reap("tty: terminal writer", pid);
	close(s);
	close(m);
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/* The whole file by read(2) in 'chunk' calls; *len its length; NULL if unreadable. */
static unsigned char *slurp(const char *path, size_t chunk, size_t *len)
{
	size_t cap = MiB, n = 0;
	unsigned char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0) {
		free(buf);
		return NULL;
	}
	for (;;) {
		if (cap - n < chunk) {
			cap = 2 * cap + chunk;
			buf = realloc(buf, cap);
		}
		r = read(fd, buf + n, chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
}

/* Read whole three ways (small and large read calls, stdio), which must agree. */
static void proc_file(const char *path, bool show_hash)
{
	size_t a_len, b_len, c_len = 0, r;
	unsigned char *a, *b, *c;
	FILE *fp;

	a = slurp(path, 64 * KiB, &a_len);
	if (!a) {
		say("%s: cannot be read (%s)", path, errname(errno));
		return;
	}
	b = slurp(path, a_len > MiB ? 4093 : 7, &b_len);
	c = malloc(a_len + 4096);
	fp = fopen(path, "r");
	while (fp && c && (r = fread(c + c_len, 1, 4096, fp)) > 0 && c_len < a_len)
		c_len += r;
	if (fp)
		fclose(fp);
	if (!b || b_len != a_len || memcmp(a, b, a_len) || c_len != a_len || memcmp(a, c, a_len))
		fail("%s: %zu bytes by 64 KiB reads, %zu by small reads, %zu by fread", path, a_len,
		     b_len, c_len);
	else if (show_hash)
		say("%s: %zu bytes, fnv %016llx, the same read three ways", path, a_len,
		    (unsigned long long)fnv(0xcbf29ce484222325ULL, a, a_len));
	else
		say("%s: read whole, the same three ways", path);
	free(a);
	free(b);
	free(c);
}

/* The names of "Name: value" lines: what does not vary from run to run. */
static void proc_keys(const char *path)
{
	size_t len, i, lines = 0;
	unsigned char *a = slurp(path, 64 * KiB, &len);
	uint64_t h = 0xcbf29ce484222325ULL;
	bool key = true;

	if (!a) {
		say("%s: cannot be read", path);
		return;
	}
	for (i = 0; i < len; i++) {
		if (a[i] == ':')
			key = false;
		if (a[i] == '\n') {
			key = true;
			lines++;
		}
		if (key)
			h = fnv(h, a + i, 1);
	}
	say("%s: %zu lines, names fnv %016llx", path, lines, (unsigned long long)h);
	free(a);
}

static void sc_proc(void)
{
	size_t len, i, lines = 0, bad = 0, fields = 0;
	unsigned char *m;
	char buf[64];
	int fd;

	proc_file("/proc/self/cmdline", true);
	proc_file("/proc/sys/kernel/ostype", true);
	proc_file("/proc/version", true);
	proc_file("/sys/kernel/mm/transparent_hugepage/enabled", true);
	/* Several MiB: a stream by length, on a filesystem with no page cache. */
	proc_file("/proc/kallsyms", true);
	proc_keys("/proc/self/status");
	proc_keys("/proc/meminfo");

	/* The library maps itself: maps differs in content, never in form. */
	m = slurp("/proc/self/maps", 64 * KiB, &len);
	for (i = 0; m && i < len; i++) {
		if (m[i] == ' ' && i && m[i - 1] != ' ')
			fields++;
		if (m[i] == '\n') {
			bad += fields < 4;
			fields = 0;
			lines++;
		}
	}
	say("/proc/self/maps: %s, %s", m && len && m[len - 1] == '\n' ? "ends a line" : "CUT SHORT",
	    bad || !lines ? "LINES WITHOUT FIELDS" : "every line has its fields");
	free(m);

	fd = open("/proc/version", O_RDONLY | O_CLOEXEC);
	said("/proc/version: pread at 8", pread(fd, buf, sizeof(buf), 8) > 0 ? 1 : -1);
	said("/proc/version: lseek to 0", (long)lseek(fd, 0, SEEK_SET));
	close(fd);
}

static void sc_memfd(void)
{
	char out[4096];
	unsigned char *buf = xalloc(MiB);
	off_t off = 0;
	loff_t in_off = 0;
	uint64_t done = 0;
	ssize_t r;
	int fd, o;

	fd = memfd_create("uotest", MFD_CLOEXEC);
	if (fd < 0) {
		say("SKIP: no memfd_create (%s)", errname(errno));
		return;
	}
	if (!write_seq(fd, 0, STREAM, 7, MiB))
		fail("memfd: cannot write: %s", errname(errno));
	said("memfd: size", (long)lseek(fd, 0, SEEK_END));
	said("memfd: back to 0", (long)lseek(fd, 0, SEEK_SET));
	read_seq("memfd: read", fd, 0, 0, 7, MiB);
	r = pread(fd, buf, MiB, 40 * MiB);
	said("memfd: pread at 40 MiB", r);
	if (r == (ssize_t)MiB && uot_gen_diff(buf, 40 * MiB, MiB, 7) != MiB)
		fail("memfd: pread gave the wrong bytes");

	path_in(out, sizeof(out), "memfd.out");
	o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	while (done < STREAM && (r = sendfile(o, fd, &off, STREAM - done)) > 0)
		done += (uint64_t)r;
	say("memfd: sendfile to a file: %llu bytes, offset %lld", (unsigned long long)done,
	    (long long)off);
	close(o);
	check_file("memfd: the sent file", out, STREAM, 7);

	o = open(out, O_WRONLY | O_TRUNC | O_CLOEXEC);
	r = copy_file_range(fd, &in_off, o, NULL, STREAM, 0);
	said("memfd: copy_file_range to a disk file", r);
	close(o);
	if (r > 0) {
		/* Copy what is left the way programs do, then check the whole. */
		o = open(out, O_WRONLY | O_APPEND | O_CLOEXEC);
		while ((r = pread(fd, buf, MiB, in_off)) > 0 && write_all(o, buf, (size_t)r))
			in_off += r;
		close(o);
		check_file("memfd: the copied file", out, STREAM, 7);
	}
	said("memfd: truncated to 1 MiB", ftruncate(fd, MiB));
	said("memfd: read at 48 MiB after", read(fd, buf, MiB));
	close(fd);
	unlink(out);
	free(buf);
}

static void sc_direct(void)
{
	char path[4096];
	unsigned char *buf = xalloc(MiB + 4096);
	uint64_t off;
	int fd;

	path_in(path, sizeof(path), "direct");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
	if (fd < 0) {
		say("SKIP: this filesystem refuses O_DIRECT (%s)", errname(errno));
		unlink(path);
		return;
	}
	for (off = 0; off < STREAM; off += MiB) {
		uot_gen_fill(buf, off, MiB, 8);
		if (write(fd, buf, MiB) != (ssize_t)MiB) {
			fail("direct: write at %llu: %s", (unsigned long long)off, errname(errno));
			break;
		}
	}
	said("direct: unaligned write", write(fd, buf + 1, 4096));
	said("direct: fsync", fsync(fd));
	close(fd);

	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	read_seq("direct: read in 1 MiB", fd, 0, 0, 8, MiB);
	said("direct: read into an unaligned buffer", pread(fd, buf + 1, 4096, 0));
	said("direct: read of an unaligned length", pread(fd, buf, 4095, 0));
	said("direct: aligned pread at 1 MiB", pread(fd, buf, 4096, MiB));
	close(fd);
	check_file("direct: read back without O_DIRECT", path, STREAM, 8);
	unlink(path);
	free(buf);
}

#define REC		4096
#define RECS		2048
#define REC_HEAD	16

struct appender {
	const char *path;
	int id;
};

static int appender_run(void *arg)
{
	struct appender *a = arg;
	unsigned char rec[REC];
	int fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	int seq;

	if (fd < 0)
		return 1;
	for (seq = 0; seq < RECS; seq++) {
		struct iovec iov[2] = { { rec, REC_HEAD }, { rec + REC_HEAD, REC - REC_HEAD } };
		ssize_t r;

		memset(rec, ' ', REC_HEAD);
		snprintf((char *)rec, REC_HEAD, "W%d S%08d", a->id, seq);
		rec[REC_HEAD - 1] = '\n';
		uot_gen_fill(rec + REC_HEAD, (uint64_t)seq * REC, REC - REC_HEAD, 20 + (uint32_t)a->id);
		/* One writes with write, the other with writev: both append whole. */
		r = a->id ? writev(fd, iov, 2) : write(fd, rec, REC);
		if (r != REC)
			return 2;
	}
	return close(fd) == 0 ? 0 : 3;
}

static void sc_append(void)
{
	char path[4096];
	struct appender a[2];
	unsigned char rec[REC];
	int next[2] = { 0, 0 }, i, fd, bad = 0;
	pid_t pid[2];
	ssize_t r;

	path_in(path, sizeof(path), "append");
	unlink(path);
	for (i = 0; i < 2; i++) {
		a[i].path = path;
		a[i].id = i;
		pid[i] = child(appender_run, &a[i]);
	}
	reap("append: writer 0", pid[0]);
	reap("append: writer 1", pid[1]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	said("append: size", (long)lseek(fd, 0, SEEK_END));
	lseek(fd, 0, SEEK_SET);
	while ((r = read(fd, rec, REC)) == REC) {
		int id, seq;

		if (sscanf((char *)rec, "W%d S%d", &id, &seq) != 2 || id < 0 || id > 1 ||
		    seq != next[id] ||
		    uot_gen_diff(rec + REC_HEAD, (uint64_t)seq * REC, REC - REC_HEAD,
				 20 + (uint32_t)id) != REC - REC_HEAD) {
			bad++;
			continue;
		}
		next[id]++;
	}
	if (bad || r != 0)
		fail("append: %d records broken or out of order, last read %zd", bad, r);
	say("append: writer 0 has %d records in order, writer 1 %d", next[0], next[1]);
	close(fd);
	unlink(path);
}

/* Data and holes as SEEK_DATA and SEEK_HOLE see them. */
static void say_map(const char *what, int fd)
{
	char line[1024];
	size_t len = 0;
	off_t end = lseek(fd, 0, SEEK_END), data = 0, hole;

	line[0] = '\0';
	while (data < end && len < sizeof(line) - 64) {
		data = lseek(fd, data, SEEK_DATA);
		if (data < 0)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			break;
		len += (size_t)snprintf(line + len, sizeof(line) - len, " [%lld, %lld)",
					(long long)(data / (off_t)KiB), (long long)(hole / (off_t)KiB));
		data = hole;
	}
	say("%s: data in KiB:%s", what, len ? line : " none");
}

static long blocks(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (long)st.st_blocks : -1;
}

/* 1 MiB of data at each of these MiB, holes between. */
static const uint64_t sparse_at[] = { 0, 40, 90, 127 };
#define SPARSE_SIZE	(128 * MiB)

static bool sparse_data(uint64_t off)
{
	size_t i;

	for (i = 0; i < sizeof(sparse_at) / sizeof(sparse_at[0]); i++)
		if (off / MiB == sparse_at[i])
			return true;
	return false;
}

/* Reads the sparse file whole by read(2); data where written, zeros elsewhere. */
static void sparse_read(const char *what, int fd)
{
	unsigned char *buf = xalloc(MiB);
	uint64_t off = 0;
	ssize_t r;

	lseek(fd, 0, SEEK_SET);
	while ((r = read(fd, buf, MiB)) > 0) {
		uint32_t seed = sparse_data(off) ? 9 : 0;

		if (r != (ssize_t)MiB || uot_gen_diff(buf, off, MiB, seed) != MiB) {
			fail("%s: wrong at MiB %llu", what, (unsigned long long)(off / MiB));
			break;
		}
		off += MiB;
	}
	say("%s: %llu MiB read, data and zeros where they belong", what,
	    (unsigned long long)(off / MiB));
	free(buf);
}

static void sc_sparse(void)
{
	char a[4096], b[4096], c[4096];
	unsigned char *buf = xalloc(MiB);
	long before, after;
	off_t data, hole;
	size_t i;
	int fd, out;

	path_in(a, sizeof(a), "sparse.a");
	path_in(b, sizeof(b), "sparse.b");
	path_in(c, sizeof(c), "sparse.c");
	fd = open(a, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, SPARSE_SIZE) != 0)
		fail("sparse: cannot make the file: %s", errname(errno));
	for (i = 0; i < sizeof(sparse_at) / sizeof(sparse_at[0]); i++) {
		uot_gen_fill(buf, sparse_at[i] * MiB, MiB, 9);
		if (pwrite(fd, buf, MiB, (off_t)(sparse_at[i] * MiB)) != (ssize_t)MiB)
			fail("sparse: pwrite: %s", errname(errno));
	}
	fsync(fd);
	close(fd);
	fd = open(a, O_RDONLY | O_CLOEXEC);
	say_map("sparse: written", fd);
	before = blocks(fd);
	sparse_read("sparse: streamed", fd);
	said("sparse: lseek SEEK_DATA from 2 MiB", (long)lseek(fd, 2 * MiB, SEEK_DATA));
	said("sparse: lseek SEEK_HOLE from 40 MiB", (long)lseek(fd, 40 * MiB, SEEK_HOLE));
	said("sparse: lseek SEEK_DATA past the end", (long)lseek(fd, SPARSE_SIZE, SEEK_DATA));
	say_map("sparse: after the stream", fd);
	after = blocks(fd);
	say("sparse: blocks before the stream %ld, after %ld%s", before, after,
	    before == after ? "" : " (CHANGED)");
	if (before != after)
		failures++;

	/* cp --sparse's way: copy the data extents only. */
	out = open(b, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	for (data = 0; (data = lseek(fd, data, SEEK_DATA)) >= 0; data = hole) {
		hole = lseek(fd, data, SEEK_HOLE);
		for (; data < hole; data += MiB) {
			ssize_t r = pread(fd, buf, MiB, data);

			if (r <= 0 || pwrite(out, buf, (size_t)r, data) != r)
				fail("sparse: copy at %lld: %s", (long long)data, errname(errno));
		}
	}
	if (ftruncate(out, SPARSE_SIZE) != 0 || fsync(out) != 0)
		fail("sparse: copy: %s", errname(errno));
	close(out);
	close(fd);
	fd = open(b, O_RDONLY | O_CLOEXEC);
	say_map("sparse: the copy", fd);
	say("sparse: the copy has %ld blocks", blocks(fd));
	sparse_read("sparse: the copy streamed", fd);
	close(fd);

	/* A writer that seeks over holes as it goes: 1 MiB written, 3 skipped. */
	out = open(c, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	for (i = 0; i < 32; i++) {
		uot_gen_fill(buf, i * 4 * MiB, MiB, 10);
		if (lseek(out, (off_t)(i * 4 * MiB), SEEK_SET) < 0 || !write_all(out, buf, MiB))
			fail("sparse: seeking writer: %s", errname(errno));
	}
	fsync(out);
	said("sparse: seeking writer's size", (long)lseek(out, 0, SEEK_END));
	say_map("sparse: seeking writer", out);
	say("sparse: seeking writer's file has %ld blocks", blocks(out));
	close(out);
	unlink(a);
	unlink(b);
	unlink(c);
	free(buf);
}

/* A second process that changes a file's size when told to, and says when done. */
struct meddler {
	const char *path;
	int cmd;	/* read end: one command byte at a time */
	int ack;	/* write end */
	int other[2];	/* the parent's ends, closed in the child so that EOF comes */
};

static int meddler_run(void *arg)
{
	struct meddler *m = arg;
	char c;

	close(m->other[0]);
	close(m->other[1]);

	while (read(m->cmd, &c, 1) == 1) {
		int fd = open(m->path, O_WRONLY | O_CLOEXEC);
		bool ok = fd >= 0;

		switch (c) {
		case 'T':	/* truncate to 8 MiB */
			ok = ok && ftruncate(fd, 8 * MiB) == 0;
			break;
		case 'A':	/* append 24 MiB, another sequence, at its own offsets */
			ok = ok && lseek(fd, 0, SEEK_END) == (off_t)(8 * MiB) &&
			     write_seq(fd, 8 * MiB, 24 * MiB, 12, MiB);
			break;
		case 'H':	/* cut to 16 MiB, then grow to 40 MiB: a hole */
			ok = ok && ftruncate(fd, 16 * MiB) == 0 && ftruncate(fd, 40 * MiB) == 0;
			break;
		case 'Z':	/* empty it */
			ok = ok && ftruncate(fd, 0) == 0;
			break;
		default:
			ok = false;
		}
		if (fd >= 0)
			close(fd);
		if (write(m->ack, ok ? "y" : "n", 1) != 1)
			return 1;
	}
	return 0;
}

static void meddle(const char *what, struct meddler *m, char c)
{
	char ack = 'n';

	if (write(m->cmd, &c, 1) != 1 || read(m->ack, &ack, 1) != 1 || ack != 'y')
		fail("%s: the other process could not do it", what);
	else
		say("%s: done", what);
}

/* Reads [from, to) by 64 KiB read(2) calls: 'seed' data, or zeros (seed 0). */
static void read_range(const char *what, int fd, uint64_t from, uint64_t to, uint32_t seed)
{
	read_seq(what, fd, from, to - from, seed, 64 * KiB);
	said("  the cursor after", (long)lseek(fd, 0, SEEK_CUR));
}

struct churner {
	const char *path;
};

/* Truncates, grows and rewrites the file, unsynchronised, for a while. */
static int churner_run(void *arg)
{
	struct churner *c = arg;
	unsigned char *buf = xalloc(MiB);
	int fd = open(c->path, O_WRONLY | O_CLOEXEC), i;
	uint64_t r = 1;

	if (fd < 0)
		return 1;
	for (i = 0; i < 400; i++) {
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		switch ((r >> 33) % 3) {
		case 0:
			if (ftruncate(fd, (off_t)((r >> 40) % 32 * MiB)) != 0)
				return 2;
			break;
		case 1:
			uot_gen_fill(buf, (r >> 40) % 32 * MiB, MiB, 14);
			if (pwrite(fd, buf, MiB, (off_t)((r >> 40) % 32 * MiB)) != (ssize_t)MiB)
				return 3;
			break;
		default:
			if (ftruncate(fd, 32 * MiB) != 0)
				return 4;
		}
	}
	return close(fd) == 0 ? 0 : 5;
}

static void sc_grow(void)
{
	char path[4096], w[4096];
	struct meddler m;
	struct churner ch;
	unsigned char *buf = xalloc(MiB);
	int cmd[2], ack[2], fd, passes = 0, bad = 0, status = 0;
	pid_t pid;

	path_in(path, sizeof(path), "grow");
	path_in(w, sizeof(w), "grow.w");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || !write_seq(fd, 0, 32 * MiB, 11, MiB) || close(fd) != 0)
		fail("grow: cannot write the file: %s", errname(errno));
	if (pipe(cmd) != 0 || pipe(ack) != 0)
		exit(2);
	m.path = path;
	m.cmd = cmd[0];
	m.ack = ack[1];
	m.other[0] = cmd[1];
	m.other[1] = ack[0];
	pid = child(meddler_run, &m);
	m.cmd = cmd[1];
	m.ack = ack[0];

	fd = open(path, O_RDONLY | O_CLOEXEC);
	read_range("grow: read to 12 MiB", fd, 0, 12 * MiB, 11);
	meddle("grow: truncated to 8 MiB under the reader", &m, 'T');
	said("grow: read at 12 MiB", read(fd, buf, 64 * KiB));
	meddle("grow: 24 MiB appended", &m, 'A');
	read_range("grow: read on to 20 MiB", fd, 12 * MiB, 20 * MiB, 12);
	meddle("grow: cut to 16 MiB and grown to 40 MiB", &m, 'H');
	read_range("grow: read on to the end", fd, 20 * MiB, 40 * MiB, 0);
	said("grow: read at the end", read(fd, buf, 64 * KiB));
	close(fd);

	/* A writer whose file is emptied under it: its next writes leave a hole. */
	m.path = w;
	fd = open(w, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (!write_seq(fd, 0, 16 * MiB, 13, MiB))
		fail("grow: writer: %s", errname(errno));
	close(cmd[1]);	/* the meddler follows the first file; a new one for the second */
	close(ack[0]);
	close(cmd[0]);
	close(ack[1]);
	reap("grow: meddler", pid);
	if (pipe(cmd) != 0 || pipe(ack) != 0)
		exit(2);
	m.cmd = cmd[0];
	m.ack = ack[1];
	m.other[0] = cmd[1];
	m.other[1] = ack[0];
	pid = child(meddler_run, &m);
	m.cmd = cmd[1];
	m.ack = ack[0];
	meddle("grow: the writer's file emptied", &m, 'Z');
	if (!write_seq(fd, 16 * MiB, 8 * MiB, 13, MiB) || fsync(fd) != 0)
		fail("grow: writer after: %s", errname(errno));
	said("grow: the writer's cursor", (long)lseek(fd, 0, SEEK_CUR));
	say_map("grow: the writer's file", fd);
	close(fd);
	close(cmd[1]);
	close(ack[0]);
	close(cmd[0]);
	close(ack[1]);
	reap("grow: second meddler", pid);
	fd = open(w, O_RDONLY | O_CLOEXEC);
	read_range("grow: the writer's file, the hole", fd, 0, 16 * MiB, 0);
	read_range("grow: the writer's file, the data", fd, 16 * MiB, 24 * MiB, 13);
	close(fd);

	/* Unsynchronised: every byte read is data or zero, and nothing breaks. */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || !write_seq(fd, 0, 32 * MiB, 14, MiB) || close(fd) != 0)
		fail("grow: cannot rewrite the file: %s", errname(errno));
	ch.path = path;
	pid = child(churner_run, &ch);
	do {
		uint64_t off = 0;
		ssize_t r, i;

		fd = open(path, O_RDONLY | O_CLOEXEC);
		while ((r = read(fd, buf, MiB)) > 0) {
			for (i = 0; i < r; i++)
				if (buf[i] && buf[i] != uot_gen_byte(14, off + (uint64_t)i))
					bad++;
			off += (uint64_t)r;
		}
		if (r < 0)
			bad++;
		close(fd);
		passes++;
	} while (waitpid(pid, &status, WNOHANG) == 0 || passes < 3);
	if (bad)
		fail("grow: under a churning writer, %d bytes were neither data nor zero", bad);
	else
		say("grow: under a churning writer, every byte read was data or zero");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("grow: churning writer: wait status %#x", status);
	unlink(path);
	unlink(w);
	free(buf);
}

/* Character devices, a directory, an eventfd, and descriptors opened the wrong way. */
static void sc_chardev(void)
{
	unsigned char *buf = xalloc(MiB);
	uint64_t total = 0, v = 0;
	ssize_t r;
	int fd, i;

	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	for (i = 0; i < 64; i++) {
		r = read(fd, buf, MiB);
		if (r != (ssize_t)MiB || uot_gen_diff(buf, 0, MiB, 0) != MiB)
			break;
		total += (uint64_t)r;
	}
	say("/dev/zero: %llu MiB of zeros read", (unsigned long long)(total / MiB));
	said("/dev/zero: lseek", (long)lseek(fd, 0, SEEK_CUR));
	said("/dev/zero: write", write(fd, buf, 16));
	close(fd);

	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	for (total = 0, i = 0; i < 64; i++)
		total += (uint64_t)write(fd, buf, MiB);
	say("/dev/null: %llu MiB written", (unsigned long long)(total / MiB));
	said("/dev/null: read from a write-only descriptor", read(fd, buf, 16));
	close(fd);

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	for (total = 0, i = 0; i < 8; i++)
		total += (uint64_t)read(fd, buf, MiB);
	say("/dev/urandom: %llu MiB read", (unsigned long long)(total / MiB));
	close(fd);

	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	said("a directory: read", read(fd, buf, 4096));
	said("a directory: pread", pread(fd, buf, 4096, 0));
	close(fd);

	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	said("eventfd: read with nothing to read", read(fd, &v, 8));
	v = 5;
	said("eventfd: write", write(fd, &v, 8));
	said("eventfd: read", read(fd, &v, 8));
	say("eventfd: value %llu", (unsigned long long)v);
	close(fd);

	said("a closed descriptor: read", read(fd, buf, 16));
	said("a closed descriptor: write", write(fd, buf, 16));
	said("a closed descriptor: close", close(fd));
	free(buf);
}

static void sc_blockdev(const char *dev)
{
	unsigned char *buf = xalloc(MiB);
	uint64_t size = 0;
	int fd;

	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size) != 0) {
		fail("blockdev: cannot open: %s", errname(errno));
		return;
	}
	say("blockdev: %llu MiB", (unsigned long long)(size / MiB));
	if (!write_seq(fd, 0, size, 15, MiB))
		fail("blockdev: write: %s", errname(errno));
	said("blockdev: write at the end", write(fd, buf, 4096));
	said("blockdev: fsync", fsync(fd));
	close(fd);
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	read_seq("blockdev: read whole", fd, 0, 0, 15, MiB);
	said("blockdev: pread of the last MiB", pread(fd, buf, MiB, (off_t)(size - MiB)));
	if (uot_gen_diff(buf, size - MiB, MiB, 15) != MiB)
		fail("blockdev: the last MiB is wrong");
	close(fd);
	free(buf);
}

static const struct {
	const char *name;
	void (*run)(void);
} scenarios[] = {
	{ "pipe", sc_pipe }, { "socket", sc_socket }, { "tty", sc_tty }, { "proc", sc_proc },
	{ "memfd", sc_memfd }, { "direct", sc_direct }, { "append", sc_append },
	{ "sparse", sc_sparse }, { "grow", sc_grow }, { "chardev", sc_chardev },
};

int main(int argc, char **argv)
{
	const char *sc = argc > 1 ? argv[1] : "";
	size_t i;

	signal(SIGPIPE, SIG_IGN);
	if (argc > 2)
		snprintf(dir, sizeof(dir), "%s", argv[2]);
	if (!strcmp(sc, "regular") || !strcmp(sc, "fuse") || !strcmp(sc, "tmpfs")) {
		files(sc);
		return failures ? 1 : 0;
	}
	if (!strcmp(sc, "blockdev") && argc > 2) {
		sc_blockdev(argv[2]);
		return failures ? 1 : 0;
	}
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		if (!strcmp(sc, scenarios[i].name)) {
			scenarios[i].run();
			return failures ? 1 : 0;
		}
	}
	fprintf(stderr, "usage: oddfd SCENARIO [DIR|DEVICE] (see the source)\n");
	return 2;
}
