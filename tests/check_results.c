/*
 * Every hook gives exactly what libc alone gives.  Each function listed in
 * preload/hooks.def is called twice on identical fixtures: once as libc's
 * own function (dlsym on libc itself), once as the program would call it
 * (the preloaded library's).  Return value, errno (left alone on success),
 * data, file offsets, what is left in a pipe and what ends up in the files
 * must be the same, on success and on every error that applies: EBADF,
 * EINTR, EAGAIN, ESPIPE, EINVAL, EFAULT, EISDIR, EPIPE, short transfers,
 * end of file, zero lengths.
 *
 * Then each data-moving hook streams a file with USEONCE_THRESHOLD and
 * USEONCE_WINDOW at 2M, so the guard's slow path (probes, advice, copies
 * cut into windows) runs between the compared calls; as root the read
 * hooks stream again as user nobody, where the guard reads uncached
 * (RWF_DONTCACHE) on the program's behalf.  The stdio hooks at a buffer's
 * edge (line readers, and __uflow/__overflow behind the getc/putc macros)
 * are called as programs call them: lines, or characters taken from and
 * put into the buffer inline, fn reached only when it runs empty or full;
 * what they delivered, the stream's position and flags are compared.  The open hooks run again once
 * the process streams a tree of small files.
 *
 * The list of hooks comes from hooks.def itself: a hook added without a
 * scenario here fails the test.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "uot_check.h"

#define CHILD_MARK	"UO_CHECK_RESULTS_CHILD"
#define TRACE_FD	200		/* the library's trace, inherited across setuid */
#define SENTINEL	4242		/* errno before every call */
#define DATA_SIZE	(64 * 1024)
#define BUF_SIZE	(256 * 1024)
#define BIG_SIZE	(20 * UOT_MIB)
#define STREAM_CHUNK	(96 * 1024)	/* above the 64 KiB of uncached reads */

/* The names hooks.def interposes, in its order, each row's twin after it. */
static const char *const def_names[] = {
#define UO_TWIN(twin)		#twin,
#define UO_ALONE
#define UO_HOOK(name, twin, ...)	#name, twin
#include "hooks.def"
#undef UO_HOOK
#undef UO_TWIN
#undef UO_ALONE
};
#define N_DEF	(sizeof(def_names) / sizeof(def_names[0]))

/* How a hook is called: one kind per signature and direction. */
enum kind {
	K_READ, K_READ_CHK, K_PREAD, K_PREAD_CHK, K_READV, K_PREADV, K_PREADV2,
	K_WRITE, K_PWRITE, K_WRITEV, K_PWRITEV, K_PWRITEV2,
	K_FREAD, K_FREAD_CHK, K_FWRITE,
	K_GETDELIM, K_GETLINE, K_FGETS, K_UFLOW, K_OVERFLOW,
	K_COPY_FILE_RANGE, K_SPLICE, K_SENDFILE,
	K_OPEN, K_OPENAT, K_OPEN_2, K_OPENAT_2, K_FOPEN,
	K_CLOSE, K_FCLOSE, K_DUP2, K_DUP3, K_CLOSE_RANGE, K_CLOSEFROM,
	K_DUP, K_FCNTL, K_CREAT, K_MKSTEMP, K_MKOSTEMP, K_MKSTEMPS, K_MKOSTEMPS, K_TMPFILE,
	K_FREOPEN, K_PCLOSE,
};

static const struct hook {
	const char *name;
	enum kind kind;
} hooks[] = {
	{ "read", K_READ }, { "__read_chk", K_READ_CHK },
	{ "pread", K_PREAD }, { "pread64", K_PREAD },
	{ "__pread_chk", K_PREAD_CHK }, { "__pread64_chk", K_PREAD_CHK },
	{ "readv", K_READV }, { "preadv", K_PREADV }, { "preadv64", K_PREADV },
	{ "preadv2", K_PREADV2 }, { "preadv64v2", K_PREADV2 },
	{ "write", K_WRITE }, { "pwrite", K_PWRITE }, { "pwrite64", K_PWRITE },
	{ "writev", K_WRITEV }, { "pwritev", K_PWRITEV }, { "pwritev64", K_PWRITEV },
	{ "pwritev2", K_PWRITEV2 }, { "pwritev64v2", K_PWRITEV2 },
	{ "fread", K_FREAD }, { "fread_unlocked", K_FREAD },
	{ "__fread_chk", K_FREAD_CHK }, { "__fread_unlocked_chk", K_FREAD_CHK },
	{ "fwrite", K_FWRITE }, { "fwrite_unlocked", K_FWRITE },
	{ "getdelim", K_GETDELIM }, { "__getdelim", K_GETDELIM }, { "getline", K_GETLINE },
	{ "fgets", K_FGETS }, { "fgets_unlocked", K_FGETS },
	{ "__uflow", K_UFLOW }, { "__overflow", K_OVERFLOW },
	{ "copy_file_range", K_COPY_FILE_RANGE }, { "splice", K_SPLICE },
	{ "sendfile", K_SENDFILE }, { "sendfile64", K_SENDFILE },
	{ "open", K_OPEN }, { "open64", K_OPEN }, { "openat", K_OPENAT }, { "openat64", K_OPENAT },
	{ "__open_2", K_OPEN_2 }, { "__open64_2", K_OPEN_2 },
	{ "__openat_2", K_OPENAT_2 }, { "__openat64_2", K_OPENAT_2 },
	{ "fopen", K_FOPEN }, { "fopen64", K_FOPEN },
	{ "close", K_CLOSE }, { "fclose", K_FCLOSE }, { "dup2", K_DUP2 }, { "dup3", K_DUP3 },
	{ "close_range", K_CLOSE_RANGE }, { "closefrom", K_CLOSEFROM },
	{ "dup", K_DUP }, { "fcntl", K_FCNTL }, { "fcntl64", K_FCNTL },
	{ "creat", K_CREAT }, { "creat64", K_CREAT },
	{ "mkstemp", K_MKSTEMP }, { "mkstemp64", K_MKSTEMP },
	{ "mkostemp", K_MKOSTEMP }, { "mkostemp64", K_MKOSTEMP },
	{ "mkstemps", K_MKSTEMPS }, { "mkstemps64", K_MKSTEMPS },
	{ "mkostemps", K_MKOSTEMPS }, { "mkostemps64", K_MKOSTEMPS },
	{ "tmpfile", K_TMPFILE }, { "tmpfile64", K_TMPFILE },
	{ "freopen", K_FREOPEN }, { "freopen64", K_FREOPEN },
	{ "pclose", K_PCLOSE },
};
#define N_HOOKS	(sizeof(hooks) / sizeof(hooks[0]))

static bool is_read(enum kind k)
{
	return k <= K_PREADV2 || k == K_FREAD || k == K_FREAD_CHK;
}

static bool is_write(enum kind k)
{
	return (k >= K_WRITE && k <= K_PWRITEV2) || k == K_FWRITE;
}

static bool is_positional(enum kind k)
{
	return k == K_PREAD || k == K_PREAD_CHK || k == K_PREADV || k == K_PREADV2 ||
	       k == K_PWRITE || k == K_PWRITEV || k == K_PWRITEV2;
}

static bool is_vector(enum kind k)
{
	return k == K_READV || k == K_PREADV || k == K_PREADV2 || k == K_WRITEV ||
	       k == K_PWRITEV || k == K_PWRITEV2;
}

static bool is_v2(enum kind k)
{
	return k == K_PREADV2 || k == K_PWRITEV2;
}

static bool is_stdio(enum kind k)
{
	return k == K_FREAD || k == K_FREAD_CHK || k == K_FWRITE;
}

/* Line readers, and what the getc/putc macros call at the buffer's edge. */
static bool is_line(enum kind k)
{
	return k >= K_GETDELIM && k <= K_OVERFLOW;
}

static bool reads(enum kind k)
{
	return is_read(k) || (is_line(k) && k != K_OVERFLOW);
}

/* ---- the two sides: libc's function and the one the program gets ---- */

static void *libc_handle;

static void *real_fn(const char *name)
{
	return dlsym(libc_handle, name);
}

static void *hooked_fn(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

/* ---- fixtures ---- */

enum fx {
	FX_NONE,
	FX_FILE,		/* "data", 64 KiB of a pattern, read-write */
	FX_FILE_RO, FX_FILE_WO, FX_FILE_APPEND,
	FX_NEW,			/* "out", empty, read-write */
	FX_BIG_RO,		/* "big", 20 MiB */
	FX_LINES,		/* "lines", text lines, read-only */
	FX_DIR,
	FX_PIPE_R_DATA,		/* read end; 100 bytes in it, writer closed */
	FX_PIPE_R_EMPTY_NB,	/* read end, non-blocking, writer open */
	FX_PIPE_R_EMPTY,	/* read end, blocking, writer open */
	FX_PIPE_W,		/* write end, empty pipe */
	FX_PIPE_W_NEARLY_FULL_NB,
	FX_PIPE_W_FULL_NB,
	FX_PIPE_W_FULL,		/* blocking */
	FX_PIPE_W_NOREADER,
	FX_CLOSED,		/* a descriptor number just closed */
	FX_MINUS1,
};

struct fixture {
	int fd;
	int peer;		/* the pipe's other end, or -1 */
	int reader;		/* the end whose FIONREAD tells what is left, or -1 */
	const char *path;	/* a file whose content is compared after, or NULL */
	FILE *fp;
};

static char dir[PATH_MAX / 2];
static char data_path[PATH_MAX], out_path[PATH_MAX], big_path[PATH_MAX], sub_path[PATH_MAX];
static char lines_path[PATH_MAX];
static unsigned char pattern[DATA_SIZE];

static void raw_close(int fd)
{
	if (fd >= 0)
		syscall(SYS_close, fd);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || syscall(SYS_write, fd, buf, len) != (long)len) {
		fprintf(stderr, "check_results: cannot write %s: %s\n", path, strerror(errno));
		exit(EXIT_FAILURE);
	}
	raw_close(fd);
}

static int raw_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0644);
}

static void fill_pipe(int w, size_t upto)
{
	static const char junk[4096];
	size_t done = 0;
	int fl = fcntl(w, F_GETFL);

	fcntl(w, F_SETFL, fl | O_NONBLOCK);
	while (done < upto) {
		size_t n = upto - done < sizeof(junk) ? upto - done : sizeof(junk);
		long r = syscall(SYS_write, w, junk, n);

		if (r <= 0) {
			/* Full: top it up byte by byte. */
			if (n > 1 && syscall(SYS_write, w, junk, 1) == 1) {
				done++;
				continue;
			}
			break;
		}
		done += (size_t)r;
	}
	fcntl(w, F_SETFL, fl);
}

static void fx_up(struct fixture *f, enum fx kind, off_t pos)
{
	int p[2];

	memset(f, 0, sizeof(*f));
	f->fd = f->peer = f->reader = -1;
	switch (kind) {
	case FX_NONE:
		return;
	case FX_FILE: case FX_FILE_RO: case FX_FILE_WO: case FX_FILE_APPEND:
		write_file(data_path, pattern, sizeof(pattern));
		f->fd = raw_open(data_path, kind == FX_FILE ? O_RDWR : kind == FX_FILE_RO ? O_RDONLY :
				 kind == FX_FILE_WO ? O_WRONLY : O_WRONLY | O_APPEND);
		f->path = data_path;
		break;
	case FX_NEW:
		write_file(out_path, "", 0);
		f->fd = raw_open(out_path, O_RDWR);
		f->path = out_path;
		break;
	case FX_BIG_RO:
		f->fd = raw_open(big_path, O_RDONLY);
		break;
	case FX_LINES:
		f->fd = raw_open(lines_path, O_RDONLY);
		f->path = lines_path;
		break;
	case FX_DIR:
		f->fd = raw_open(dir, O_RDONLY | O_DIRECTORY);
		break;
	case FX_CLOSED:
		/* Far from the numbers other fixtures get, so it stays closed. */
		f->fd = 777;
		raw_close(f->fd);
		return;
	case FX_MINUS1:
		return;
	default:
		ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
		if (kind <= FX_PIPE_R_EMPTY) {
			f->fd = f->reader = p[0];
			f->peer = p[1];
			if (kind == FX_PIPE_R_DATA) {
				fill_pipe(p[1], 100);
				raw_close(p[1]);
				f->peer = -1;
			} else if (kind == FX_PIPE_R_EMPTY_NB) {
				fcntl(p[0], F_SETFL, O_NONBLOCK);
			}
		} else {
			f->fd = p[1];
			f->peer = f->reader = p[0];
			if (kind == FX_PIPE_W_NEARLY_FULL_NB)
				fill_pipe(p[1], 60000);
			else if (kind == FX_PIPE_W_FULL_NB || kind == FX_PIPE_W_FULL)
				fill_pipe(p[1], SIZE_MAX);
			if (kind == FX_PIPE_W_NEARLY_FULL_NB || kind == FX_PIPE_W_FULL_NB)
				fcntl(p[1], F_SETFL, O_NONBLOCK);
			if (kind == FX_PIPE_W_NOREADER) {
				raw_close(p[0]);
				f->peer = f->reader = -1;
			}
		}
		return;
	}
	ck_assert_int_ge(f->fd, 0);
	if (pos)
		ck_assert_int_eq(lseek(f->fd, pos, SEEK_SET), pos);
}

/* A stdio stream over the fixture's descriptor, in the mode its access allows. */
static void fx_stdio(struct fixture *f, enum fx kind)
{
	int fl, fd = f->fd;

	if (kind == FX_CLOSED) {
		/* A stream whose descriptor was closed behind its back. */
		fd = raw_open(data_path, O_RDONLY);
		f->fp = fdopen(fd, "r");
		ck_assert_ptr_nonnull(f->fp);
		raw_close(fd);
		f->fd = fd;
		return;
	}
	fl = fcntl(fd, F_GETFL);
	ck_assert_int_ge(fl, 0);
	f->fp = fdopen(fd, (fl & O_ACCMODE) == O_RDONLY ? "r" : (fl & O_ACCMODE) == O_WRONLY ?
		       ((fl & O_APPEND) ? "a" : "w") : "r+");
	ck_assert_ptr_nonnull(f->fp);
}

/* ---- what a call did ---- */

struct outcome {
	long ret;
	int err;		/* errno right after the call (SENTINEL if untouched) */
	long pos[2];		/* file offsets of the fixtures, or -errno */
	long off[2];		/* the offsets passed by pointer, after */
	long left[2];		/* bytes left in the fixtures' pipes */
	int ferr, feof;		/* stdio's flags */
	long extra[4];		/* kind-specific: fd flags, modes... */
	uint64_t buf_hash;
	uint64_t file_hash[2];	/* the fixtures' files after teardown */
	long file_size[2];
	long end_ret;		/* close or fclose at teardown */
	int end_err;
	long last_ret;		/* the last of a sequence of calls */
	int last_err;
};

static uint64_t fnv(const void *p, size_t len, uint64_t h)
{
	const unsigned char *c = p;

	while (len--)
		h = (h ^ *c++) * 0x100000001b3ULL;
	return h;
}

static void file_state(const char *path, uint64_t *hash, long *size)
{
	static unsigned char buf[1 << 20];
	uint64_t h = 0xcbf29ce484222325ULL;
	long n, total = 0;
	int fd;

	*hash = 0;
	*size = -1;
	if (!path || (fd = raw_open(path, O_RDONLY)) < 0)
		return;
	while ((n = syscall(SYS_read, fd, buf, sizeof(buf))) > 0) {
		h = fnv(buf, (size_t)n, h);
		total += n;
	}
	raw_close(fd);
	*hash = h;
	*size = total;
}

static long fd_pos(int fd)
{
	long r = syscall(SYS_lseek, fd, 0L, SEEK_CUR);

	return r < 0 ? -errno : r;
}

static long pipe_left(int fd)
{
	int n = -1;

	if (fd < 0)
		return -1;
	return ioctl(fd, FIONREAD, &n) == 0 ? n : -errno;
}

static void describe(char *out, size_t size, const struct outcome *o)
{
	snprintf(out, size, "ret %ld errno %d%s pos %ld/%ld off %ld/%ld left %ld/%ld "
		 "ferror %d feof %d extra %ld/%ld/%ld/%ld data %016llx files %016llx:%ld/%016llx:%ld "
		 "end %ld errno %d last %ld errno %d",
		 o->ret, o->err, o->err == SENTINEL ? " (untouched)" : "", o->pos[0], o->pos[1],
		 o->off[0], o->off[1], o->left[0], o->left[1], o->ferr, o->feof,
		 o->extra[0], o->extra[1], o->extra[2], o->extra[3],
		 (unsigned long long)o->buf_hash, (unsigned long long)o->file_hash[0],
		 o->file_size[0], (unsigned long long)o->file_hash[1], o->file_size[1],
		 o->end_ret, o->end_err, o->last_ret, o->last_err);
}

/* ---- interrupting a blocked call ---- */

static void on_alarm(int sig)
{
	(void)sig;
}

/* Check's own SIGALRM handler (its timeout) is replaced first: it kills the test. */
static void arm(bool on)
{
	struct itimerval it = { .it_value = { 0, on ? 30000 : 0 } };
	struct sigaction sa;

	if (on) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;	/* no SA_RESTART */
		sigaction(SIGALRM, &sa, NULL);
	}
	setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- the data-moving calls ---- */

/* Expected result of libc's own call: proves the fixture does what the case says. */
enum want { W_SKIP, W_FULL, W_SHORT, W_ZERO, W_ERR };

struct expect {
	enum want w;
	int err;
};

#define FULL		{ W_FULL, 0 }
#define SHORT		{ W_SHORT, 0 }
#define ZERO		{ W_ZERO, 0 }
#define ERR(e)		{ W_ERR, e }
#define SKIP		{ W_SKIP, 0 }

struct io_case {
	const char *what;
	enum fx fx;
	off_t at;		/* where the cursor is put, and the offset of positional calls */
	size_t len;
	int flags;		/* for the v2 calls */
	int cnt;		/* iovec count; 0: 3 */
	bool bad_buf, bad_iov, intr;
	size_t elem;		/* stdio element size; 0: 1 */
	struct expect cursor, positional, stdio;
	bool v2_at_cursor;	/* preadv2/pwritev2 take offset -1 as "at the cursor" */
};

#define BADPTR	((void *)8)

static const struct io_case read_cases[] = {
	{ "file", FX_FILE, 1000, 8192, .cursor = FULL, .positional = FULL, .stdio = FULL },
	{ "file, 512-byte items", FX_FILE, 512, 8192, .elem = 512,
	  .cursor = SKIP, .positional = SKIP, .stdio = FULL },
	{ "file, short at its end", FX_FILE, DATA_SIZE - 100, 8192,
	  .cursor = SHORT, .positional = SHORT, .stdio = SHORT },
	{ "file, partial item at its end", FX_FILE, DATA_SIZE - 700, 2048, .elem = 512,
	  .cursor = SKIP, .positional = SKIP, .stdio = SHORT },
	{ "file, at EOF", FX_FILE, DATA_SIZE, 8192, .cursor = ZERO, .positional = ZERO, .stdio = ZERO },
	{ "file, zero length", FX_FILE, 10, 0, .cursor = ZERO, .positional = ZERO, .stdio = ZERO },
	{ "file, large", FX_BIG_RO, 4096, BUF_SIZE, .cursor = FULL, .positional = FULL,
	  .stdio = FULL },
	{ "pipe with less than asked", FX_PIPE_R_DATA, 0, 8192,
	  .cursor = SHORT, .positional = ERR(ESPIPE), .stdio = SHORT },
	{ "empty non-blocking pipe", FX_PIPE_R_EMPTY_NB, 0, 8192,
	  .cursor = ERR(EAGAIN), .positional = ERR(ESPIPE), .stdio = ERR(EAGAIN) },
	{ "empty pipe, signal", FX_PIPE_R_EMPTY, 0, 8192, .intr = true,
	  .cursor = ERR(EINTR), .positional = ERR(ESPIPE), .stdio = ERR(EINTR) },
	{ "closed descriptor", FX_CLOSED, 0, 8192,
	  .cursor = ERR(EBADF), .positional = ERR(EBADF), .stdio = ERR(EBADF) },
	{ "descriptor -1", FX_MINUS1, 0, 8192,
	  .cursor = ERR(EBADF), .positional = ERR(EBADF), .stdio = SKIP },
	{ "write-only file", FX_FILE_WO, 0, 8192,
	  .cursor = ERR(EBADF), .positional = ERR(EBADF), .stdio = ERR(EBADF) },
	{ "directory", FX_DIR, 0, 8192,
	  .cursor = ERR(EISDIR), .positional = ERR(EISDIR), .stdio = ERR(EISDIR) },
	{ "offset -1", FX_FILE, -1, 8192, .cursor = SKIP, .positional = ERR(EINVAL), .stdio = SKIP,
	  .v2_at_cursor = true },
	{ "offset -4096", FX_FILE, -4096, 8192,
	  .cursor = SKIP, .positional = ERR(EINVAL), .stdio = SKIP },
	{ "bad buffer", FX_FILE, 0, 8192, .bad_buf = true,
	  .cursor = ERR(EFAULT), .positional = ERR(EFAULT), .stdio = SKIP },
	{ "bad iovec array", FX_FILE, 0, 8192, .bad_iov = true,
	  .cursor = ERR(EFAULT), .positional = ERR(EFAULT), .stdio = SKIP },
	{ "negative iovec count", FX_FILE, 0, 8192, .cnt = -1,
	  .cursor = ERR(EINVAL), .positional = ERR(EINVAL), .stdio = SKIP },
	{ "too many iovecs", FX_FILE, 0, 8192, .cnt = IOV_MAX + 1,
	  .cursor = ERR(EINVAL), .positional = ERR(EINVAL), .stdio = SKIP },
	{ "unknown RWF flag", FX_FILE, 0, 8192, .flags = 0x10000000,
	  .cursor = ERR(EOPNOTSUPP), .positional = ERR(EOPNOTSUPP), .stdio = SKIP },
	{ "RWF_NOWAIT on a cached file", FX_FILE, 0, 8192, .flags = RWF_NOWAIT,
	  .cursor = FULL, .positional = FULL, .stdio = SKIP },
};

static const struct io_case write_cases[] = {
	{ "file", FX_FILE, 1000, 8192, .cursor = FULL, .positional = FULL, .stdio = FULL },
	{ "file, 512-byte items", FX_FILE, 512, 8192, .elem = 512,
	  .cursor = SKIP, .positional = SKIP, .stdio = FULL },
	{ "file, past its end", FX_FILE, DATA_SIZE + 5000, 8192,
	  .cursor = FULL, .positional = FULL, .stdio = FULL },
	{ "file, large", FX_NEW, 0, BUF_SIZE, .cursor = FULL, .positional = FULL, .stdio = FULL },
	{ "file, zero length", FX_FILE, 10, 0, .cursor = ZERO, .positional = ZERO, .stdio = ZERO },
	{ "O_APPEND file", FX_FILE_APPEND, 100, 8192,
	  .cursor = FULL, .positional = FULL, .stdio = FULL },
	{ "empty pipe", FX_PIPE_W, 0, 8192, .cursor = FULL, .positional = ERR(ESPIPE), .stdio = FULL },
	{ "nearly full non-blocking pipe", FX_PIPE_W_NEARLY_FULL_NB, 0, 16384,
	  .cursor = SHORT, .positional = ERR(ESPIPE), .stdio = SHORT },
	{ "full non-blocking pipe", FX_PIPE_W_FULL_NB, 0, 8192,
	  .cursor = ERR(EAGAIN), .positional = ERR(ESPIPE), .stdio = ERR(EAGAIN) },
	{ "full pipe, signal", FX_PIPE_W_FULL, 0, 8192, .intr = true,
	  .cursor = ERR(EINTR), .positional = ERR(ESPIPE), .stdio = ERR(EINTR) },
	{ "pipe without reader", FX_PIPE_W_NOREADER, 0, 8192,
	  .cursor = ERR(EPIPE), .positional = ERR(ESPIPE), .stdio = ERR(EPIPE) },
	{ "closed descriptor", FX_CLOSED, 0, 8192,
	  .cursor = ERR(EBADF), .positional = ERR(EBADF), .stdio = SKIP },
	{ "descriptor -1", FX_MINUS1, 0, 8192,
	  .cursor = ERR(EBADF), .positional = ERR(EBADF), .stdio = SKIP },
	{ "read-only file", FX_FILE_RO, 0, 8192,
	  .cursor = ERR(EBADF), .positional = ERR(EBADF), .stdio = ERR(EBADF) },
	{ "offset -1", FX_FILE, -1, 8192, .cursor = SKIP, .positional = ERR(EINVAL), .stdio = SKIP,
	  .v2_at_cursor = true },
	{ "offset -4096", FX_FILE, -4096, 8192,
	  .cursor = SKIP, .positional = ERR(EINVAL), .stdio = SKIP },
	{ "bad buffer", FX_FILE, 0, 8192, .bad_buf = true,
	  .cursor = ERR(EFAULT), .positional = ERR(EFAULT), .stdio = SKIP },
	{ "bad iovec array", FX_FILE, 0, 8192, .bad_iov = true,
	  .cursor = ERR(EFAULT), .positional = ERR(EFAULT), .stdio = SKIP },
	{ "negative iovec count", FX_FILE, 0, 8192, .cnt = -1,
	  .cursor = ERR(EINVAL), .positional = ERR(EINVAL), .stdio = SKIP },
	{ "too many iovecs", FX_FILE, 0, 8192, .cnt = IOV_MAX + 1,
	  .cursor = ERR(EINVAL), .positional = ERR(EINVAL), .stdio = SKIP },
	{ "unknown RWF flag", FX_FILE, 0, 8192, .flags = 0x10000000,
	  .cursor = ERR(EOPNOTSUPP), .positional = ERR(EOPNOTSUPP), .stdio = SKIP },
	{ "RWF_APPEND", FX_FILE, 0, 8192, .flags = RWF_APPEND,
	  .cursor = FULL, .positional = FULL, .stdio = SKIP },
};

static unsigned char iobuf[BUF_SIZE];
static struct iovec many_iov[IOV_MAX + 1];

/* The call of kind k through fn; the result as a long, errno as the call left it. */
static long io_call(enum kind k, void *fn, int fd, FILE *fp, void *buf, size_t len, off_t off,
		    int flags, int cnt, const struct iovec *iov, size_t elem)
{
	switch (k) {
	case K_READ:
		return ((ssize_t (*)(int, void *, size_t))fn)(fd, buf, len);
	case K_READ_CHK:
		return ((ssize_t (*)(int, void *, size_t, size_t))fn)(fd, buf, len, BUF_SIZE);
	case K_PREAD:
		return ((ssize_t (*)(int, void *, size_t, off_t))fn)(fd, buf, len, off);
	case K_PREAD_CHK:
		return ((ssize_t (*)(int, void *, size_t, off_t, size_t))fn)(fd, buf, len, off,
									      BUF_SIZE);
	case K_READV: case K_WRITEV:
		return ((ssize_t (*)(int, const struct iovec *, int))fn)(fd, iov, cnt);
	case K_PREADV: case K_PWRITEV:
		return ((ssize_t (*)(int, const struct iovec *, int, off_t))fn)(fd, iov, cnt, off);
	case K_PREADV2: case K_PWRITEV2:
		return ((ssize_t (*)(int, const struct iovec *, int, off_t, int))fn)(fd, iov, cnt,
										      off, flags);
	case K_WRITE:
		return ((ssize_t (*)(int, const void *, size_t))fn)(fd, buf, len);
	case K_PWRITE:
		return ((ssize_t (*)(int, const void *, size_t, off_t))fn)(fd, buf, len, off);
	case K_FREAD:
		return (long)((size_t (*)(void *, size_t, size_t, FILE *))fn)(buf, elem, len / elem,
									       fp);
	case K_FREAD_CHK:
		return (long)((size_t (*)(void *, size_t, size_t, size_t, FILE *))fn)(
			buf, BUF_SIZE, elem, len / elem, fp);
	case K_FWRITE:
		return (long)((size_t (*)(const void *, size_t, size_t, FILE *))fn)(buf, elem,
										     len / elem, fp);
	default:
		ck_abort_msg("io_call: kind %d moves no data", (int)k);
		return 0;
	}
}

static const struct expect *expect_for(enum kind k, const struct io_case *c)
{
	if (is_stdio(k))
		return &c->stdio;
	if ((c->bad_iov || c->cnt) && !is_vector(k))
		return NULL;
	if (c->flags && !is_v2(k))
		return NULL;
	if (c->v2_at_cursor && is_v2(k)) {
		static const struct expect full = FULL;

		return &full;
	}
	return is_positional(k) ? &c->positional : &c->cursor;
}

static void io_run(enum kind k, void *fn, const struct io_case *c, struct outcome *o)
{
	struct fixture f;
	struct iovec iov[3];
	const struct iovec *v = iov;
	size_t elem = c->elem ? c->elem : 1;
	void *buf = c->bad_buf ? BADPTR : iobuf;
	int cnt = 3, i;

	memset(o, 0, sizeof(*o));
	fx_up(&f, c->fx, c->at > 0 ? c->at : 0);
	if (is_stdio(k))
		fx_stdio(&f, c->fx);
	/* Reads land on a known pattern; writes send one. */
	for (i = 0; i < BUF_SIZE; i++)
		iobuf[i] = (unsigned char)(is_read(k) ? 0xa5 : i * 13 + i / 251);
	iov[0] = (struct iovec){ buf, c->len / 4 };
	iov[1] = (struct iovec){ (char *)buf + c->len / 4, c->len / 2 };
	iov[2] = (struct iovec){ (char *)buf + c->len / 4 + c->len / 2, c->len - c->len / 4 - c->len / 2 };
	if (c->cnt > 3) {
		for (i = 0; i < c->cnt; i++)
			many_iov[i] = (struct iovec){ iobuf, 1 };
		v = many_iov;
	}
	if (c->cnt)
		cnt = c->cnt;
	if (c->bad_iov)
		v = BADPTR;
	if (c->intr)
		arm(true);
	errno = SENTINEL;
	o->ret = io_call(k, fn, f.fd, f.fp, buf, c->len, c->at, c->flags, cnt, v, elem);
	o->err = errno;
	arm(false);
	o->buf_hash = fnv(iobuf, sizeof(iobuf), 0xcbf29ce484222325ULL);
	if (f.fp) {
		o->ferr = ferror(f.fp);
		o->feof = feof(f.fp);
		errno = SENTINEL;
		o->extra[0] = ftell(f.fp);
		o->extra[1] = errno;
	}
	o->pos[0] = fd_pos(f.fd);
	o->left[0] = pipe_left(f.reader);
	/* A stream's buffered bytes are written (or fail) at fclose: compared too. */
	if (f.fp) {
		/* Let fclose flush into a full pipe rather than block. */
		if (f.reader >= 0)
			fcntl(f.fd, F_SETFL, fcntl(f.fd, F_GETFL) | O_NONBLOCK);
		errno = SENTINEL;
		o->end_ret = fclose(f.fp);
		o->end_err = errno;
	} else {
		raw_close(f.fd);
	}
	raw_close(f.peer);
	file_state(f.path, &o->file_hash[0], &o->file_size[0]);
}

static void check_expect(const char *name, const char *what, const struct expect *e,
			 const struct outcome *o, size_t want_len, enum kind k, size_t elem)
{
	long full = (long)(is_stdio(k) ? want_len / elem : want_len);

	switch (e->w) {
	case W_FULL:
		ck_assert_msg(o->ret == full && full > 0, "%s/%s: libc gave %ld, not all %ld: "
			      "the fixture is wrong", name, what, o->ret, full);
		break;
	case W_SHORT:
		ck_assert_msg(o->ret > 0 && o->ret < full, "%s/%s: libc gave %ld, not a short "
			      "transfer of %ld", name, what, o->ret, full);
		break;
	case W_ZERO:
		ck_assert_msg(o->ret == 0 && o->err == SENTINEL, "%s/%s: libc gave %ld errno %d, "
			      "not 0", name, what, o->ret, o->err);
		break;
	case W_ERR:
		ck_assert_msg((is_stdio(k) ? o->ret == 0 : o->ret == -1) && o->err == e->err,
			      "%s/%s: libc gave %ld errno %d (%s), not errno %d (%s)", name, what,
			      o->ret, o->err, strerror(o->err), e->err, strerror(e->err));
		break;
	case W_SKIP:
		break;
	}
}

/* libc's outcome and the hook's, side by side: equal, or the test fails saying how. */
static void same(const char *name, const char *what, const struct outcome *a,
		 const struct outcome *b)
{
	char da[1024], db[1024];

	describe(da, sizeof(da), a);
	describe(db, sizeof(db), b);
	ck_assert_msg(!strcmp(da, db), "%s (%s) differs from libc's:\n  libc: %s\n  hook: %s",
		      name, what, da, db);
}

static unsigned compared;

static void io_hook(const struct hook *h)
{
	const struct io_case *cases = is_read(h->kind) ? read_cases : write_cases;
	size_t n = is_read(h->kind) ? sizeof(read_cases) / sizeof(read_cases[0])
				    : sizeof(write_cases) / sizeof(write_cases[0]);
	void *r = real_fn(h->name), *u = hooked_fn(h->name);
	size_t i;

	for (i = 0; i < n; i++) {
		const struct io_case *c = &cases[i];
		const struct expect *e = expect_for(h->kind, c);
		struct outcome a, b;

		if (!e || e->w == W_SKIP)
			continue;
		io_run(h->kind, r, c, &a);
		check_expect(h->name, c->what, e, &a, c->len, h->kind, c->elem ? c->elem : 1);
		io_run(h->kind, u, c, &b);
		same(h->name, c->what, &a, &b);
		compared++;
	}
}

/* ---- line readers, getc and putc: the hooks at a stdio buffer's edge ---- */

#define LONG_LINE	150000		/* longer than any stdio buffer */
#define LINE_N		16		/* the default size of fgets's and getline's buffer */

static off_t long_at, last_at, lines_size;	/* in the "lines" file */

/* One stream read or written the way a program does, through one side's function. */
struct lreader {
	enum kind k;
	void *fn;
	FILE *fp;
	char *line;		/* getline's buffer as it grows it, or fgets's */
	size_t n;		/* its size */
	bool null_ptr;		/* getline given no pointer to a buffer */
	unsigned edges;		/* calls that reached fn: getc/putc do only at the edge */
	long got;		/* bytes delivered (read) or accepted (written) */
	uint64_t hash;		/* of every result and every byte delivered */
};

/*
 * One line, or one getc or putc of c as glibc's macros make them: from or
 * into the buffer inline, through fn when it runs empty or full.  Failure
 * is a negative result for every kind (fgets: 1 for its buffer, -1 for NULL).
 */
static long lstep(struct lreader *r, int c)
{
	FILE *fp = r->fp;
	unsigned edges = r->edges;
	off_t from = 0;
	long ret;
	char *s;
	int err;

	switch (r->k) {
	case K_GETDELIM:
		ret = ((ssize_t (*)(char **, size_t *, int, FILE *))r->fn)(
			r->null_ptr ? NULL : &r->line, &r->n, ';', fp);
		break;
	case K_GETLINE:
		ret = ((ssize_t (*)(char **, size_t *, FILE *))r->fn)(r->null_ptr ? NULL : &r->line,
								       &r->n, fp);
		break;
	case K_FGETS:
		err = errno;
		from = ftello(fp);
		errno = err;
		s = ((char *(*)(char *, int, FILE *))r->fn)(r->line, (int)r->n, fp);
		ret = s == r->line ? 1 : s ? 2 : -1;
		break;
	case K_UFLOW:
		if (fp->_IO_read_ptr < fp->_IO_read_end) {
			ret = (unsigned char)*fp->_IO_read_ptr++;
		} else {
			r->edges++;
			ret = ((int (*)(FILE *))r->fn)(fp);
		}
		break;
	case K_OVERFLOW:
		if (fp->_IO_write_ptr < fp->_IO_write_end) {
			ret = (unsigned char)(*fp->_IO_write_ptr++ = (char)c);
		} else {
			r->edges++;
			ret = ((int (*)(FILE *, int))r->fn)(fp, (unsigned char)c);
		}
		break;
	default:
		ck_abort_msg("lstep: kind %d is no line reader", (int)r->k);
		return 0;
	}
	if (r->k == K_UFLOW || r->k == K_OVERFLOW) {
		unsigned char b = (unsigned char)ret;

		r->hash = ret < 0 ? fnv(&ret, sizeof(ret), r->hash) : fnv(&b, 1, r->hash);
		r->got += ret >= 0;
		/* errno after every call of fn, not just the last: a success leaves it alone. */
		if (r->edges != edges) {
			err = errno;
			r->hash = fnv(&err, sizeof(err), r->hash);
		}
		return ret;
	}
	err = errno;
	r->hash = fnv(&err, sizeof(err), r->hash);
	r->hash = fnv(&ret, sizeof(ret), r->hash);
	r->hash = fnv(&r->n, sizeof(r->n), r->hash);
	if (r->k != K_FGETS && ret > 0) {
		r->hash = fnv(r->line, (size_t)ret, r->hash);
		r->got += ret;
	} else if (r->k == K_FGETS && ret == 1) {
		/*
		 * fgets tells no length and lines may hold NULs: the stream's
		 * move does (on a pipe, the whole buffer and its string).
		 */
		off_t to;

		err = errno;
		to = ftello(fp);
		errno = err;
		if (from >= 0 && to >= from && to - from < (off_t)r->n) {
			r->hash = fnv(r->line, (size_t)(to - from) + 1, r->hash);
			r->got += (long)(to - from);
		} else {
			r->hash = fnv(r->line, r->n, r->hash);
			r->got += (long)strnlen(r->line, r->n);
		}
	}
	return ret;
}

static void lreader_free(struct lreader *r)
{
	free(r->line);
	r->line = NULL;
}

/* Kinds a case applies to. */
#define M_GETLINE	1u	/* getline, getdelim */
#define M_FGETS		2u
#define M_GETC		4u
#define M_PUTC		8u
#define M_READERS	(M_GETLINE | M_FGETS | M_GETC)

static unsigned mask_of(enum kind k)
{
	return k == K_FGETS ? M_FGETS : k == K_UFLOW ? M_GETC : k == K_OVERFLOW ? M_PUTC :
	       M_GETLINE;
}

/* Places in the "lines" file. */
enum { AT_START, AT_LONG, AT_LAST, AT_EOF };

struct line_case {
	const char *what;
	unsigned only;		/* 0: every reader */
	enum fx fx;
	off_t at;		/* where the cursor is put first; AT_* in "lines" */
	size_t n;		/* fgets's size, getline's buffer's; 0: LINE_N */
	bool null_buf;		/* getline: *line NULL and *n 0, getline allocates */
	bool null_ptr;		/* getline: no line pointer at all */
	bool intr;
	unsigned calls;		/* at most; 0: until one fails */
	struct expect first, last;	/* libc's first and last calls */
};

static const struct line_case line_cases[] = {
	{ "lines to the end", 0, FX_LINES, 0, .first = FULL, .last = ZERO },
	{ "a line longer than the stdio buffer", 0, FX_LINES, AT_LONG, .calls = 1, .first = FULL },
	{ "a line longer than the stdio buffer, whole", M_GETLINE | M_FGETS, FX_LINES, AT_LONG,
	  .n = LONG_LINE + 100, .calls = 1, .first = FULL },
	{ "the last line, without newline", 0, FX_LINES, AT_LAST, .first = FULL, .last = ZERO },
	{ "at EOF", 0, FX_LINES, AT_EOF, .first = ZERO },
	{ "NULL buffer of size 0: getline allocates", M_GETLINE, FX_LINES, 0, .null_buf = true,
	  .first = FULL, .last = ZERO },
	{ "NULL buffer of size 0, a long line", M_GETLINE, FX_LINES, AT_LONG, .null_buf = true,
	  .calls = 1, .first = FULL },
	{ "NULL line pointer", M_GETLINE, FX_LINES, 0, .null_ptr = true, .first = ERR(EINVAL) },
	{ "fgets of size 1", M_FGETS, FX_LINES, 0, .n = 1, .calls = 3, .first = FULL },
	{ "binary file: NULs, no final newline", 0, FX_FILE, 1000, .first = FULL, .last = ZERO },
	{ "pipe with less than a line", 0, FX_PIPE_R_DATA, 0, .first = FULL, .last = ZERO },
	{ "empty non-blocking pipe", 0, FX_PIPE_R_EMPTY_NB, 0, .first = ERR(EAGAIN) },
	{ "empty pipe, signal", 0, FX_PIPE_R_EMPTY, 0, .intr = true, .first = ERR(EINTR) },
	{ "closed descriptor", 0, FX_CLOSED, 0, .first = ERR(EBADF) },
	{ "write-only file", 0, FX_FILE_WO, 0, .first = ERR(EBADF) },
	{ "directory", 0, FX_DIR, 0, .first = ERR(EISDIR) },
	/* putc: n is how many characters are put */
	{ "file", M_PUTC, FX_FILE, 1000, .n = DATA_SIZE, .first = FULL, .last = FULL },
	{ "new file, many buffers", M_PUTC, FX_NEW, 0, .n = BUF_SIZE, .first = FULL,
	  .last = FULL },
	{ "O_APPEND file", M_PUTC, FX_FILE_APPEND, 100, .n = 10000, .first = FULL, .last = FULL },
	{ "empty pipe", M_PUTC, FX_PIPE_W, 0, .n = 16384, .first = FULL, .last = FULL },
	{ "full non-blocking pipe", M_PUTC, FX_PIPE_W_FULL_NB, 0, .n = 16384, .first = FULL,
	  .last = ERR(EAGAIN) },
	{ "full pipe, signal", M_PUTC, FX_PIPE_W_FULL, 0, .n = 16384, .intr = true,
	  .first = FULL, .last = ERR(EINTR) },
	{ "pipe without reader", M_PUTC, FX_PIPE_W_NOREADER, 0, .n = 16384, .first = FULL,
	  .last = ERR(EPIPE) },
	{ "closed descriptor", M_PUTC, FX_CLOSED, 0, .n = 16384, .first = FULL,
	  .last = ERR(EBADF) },
	{ "read-only file", M_PUTC, FX_FILE_RO, 0, .n = 100, .first = ERR(EBADF) },
};

/* Where a case puts the cursor in the "lines" file. */
static off_t line_case_at(const struct line_case *c)
{
	if (c->fx != FX_LINES)
		return c->at;
	return c->at == AT_LONG ? long_at : c->at == AT_LAST ? last_at :
	       c->at == AT_EOF ? lines_size : 0;
}

static void line_run(enum kind k, void *fn, const struct line_case *c, struct outcome *o)
{
	size_t n = c->n ? c->n : LINE_N;
	struct lreader r = { .k = k, .fn = fn, .hash = 0xcbf29ce484222325ULL };
	struct fixture f;
	unsigned i;
	long ret;

	memset(o, 0, sizeof(*o));
	fx_up(&f, c->fx, line_case_at(c));
	if (c->fx == FX_CLOSED && k == K_OVERFLOW) {
		/* A write stream whose descriptor was closed behind its back. */
		f.fd = raw_open(data_path, O_WRONLY);
		f.fp = fdopen(f.fd, "w");
		ck_assert_ptr_nonnull(f.fp);
		raw_close(f.fd);
	} else {
		fx_stdio(&f, c->fx);
	}
	r.fp = f.fp;
	r.null_ptr = c->null_ptr;
	if (k != K_UFLOW && k != K_OVERFLOW && !c->null_buf) {
		r.n = n;
		r.line = malloc(n);
		ck_assert_ptr_nonnull(r.line);
		memset(r.line, 0xa5, n);
	}
	if (c->intr)
		arm(true);
	for (i = 0; ; i++) {
		errno = SENTINEL;
		ret = lstep(&r, (int)(pattern[i % DATA_SIZE] ^ (i / DATA_SIZE)));
		o->last_ret = ret;
		o->last_err = errno;
		if (i == 0) {
			o->ret = ret;
			o->err = errno;
		}
		if (ret < 0 || (k == K_OVERFLOW ? i + 1 >= n : c->calls && i + 1 >= c->calls))
			break;
	}
	arm(false);
	o->buf_hash = r.hash;
	o->ferr = ferror(f.fp);
	o->feof = feof(f.fp);
	errno = SENTINEL;
	o->extra[0] = (long)ftello(f.fp);
	o->extra[1] = errno;
	o->extra[2] = (long)i + 1;
	o->extra[3] = r.edges;
	o->off[0] = r.got;
	o->pos[0] = fd_pos(f.fd);
	o->left[0] = pipe_left(f.reader);
	if (f.reader >= 0)
		fcntl(f.fd, F_SETFL, fcntl(f.fd, F_GETFL) | O_NONBLOCK);
	errno = SENTINEL;
	o->end_ret = fclose(f.fp);
	o->end_err = errno;
	lreader_free(&r);
	raw_close(f.peer);
	file_state(f.path, &o->file_hash[0], &o->file_size[0]);
}

static void line_expect(const char *name, const char *what, const char *which,
			const struct expect *e, long ret, int err)
{
	switch (e->w) {
	case W_FULL: case W_SHORT:
		ck_assert_msg(ret >= 0, "%s/%s: libc's %s call failed (%ld errno %d): the fixture "
			      "is wrong", name, what, which, ret, err);
		break;
	case W_ZERO:
		ck_assert_msg(ret < 0 && err == SENTINEL, "%s/%s: libc's %s call gave %ld errno %d, "
			      "not EOF", name, what, which, ret, err);
		break;
	case W_ERR:
		ck_assert_msg(ret < 0 && err == e->err, "%s/%s: libc's %s call gave %ld errno %d "
			      "(%s), not errno %d (%s)", name, what, which, ret, err, strerror(err),
			      e->err, strerror(e->err));
		break;
	case W_SKIP:
		break;
	}
}

static void line_hook(const struct hook *h)
{
	void *r = real_fn(h->name), *u = hooked_fn(h->name);
	unsigned m = mask_of(h->kind);
	size_t i;

	for (i = 0; i < sizeof(line_cases) / sizeof(line_cases[0]); i++) {
		const struct line_case *c = &line_cases[i];
		struct outcome a, b;

		if (!((c->only ? c->only : M_READERS) & m))
			continue;
		line_run(h->kind, r, c, &a);
		line_expect(h->name, c->what, "first", &c->first, a.ret, a.err);
		line_expect(h->name, c->what, "last", &c->last, a.last_ret, a.last_err);
		if (c->fx == FX_LINES && c->at == AT_LONG && (m == M_GETLINE || c->n > LONG_LINE))
			ck_assert_msg(a.off[0] > LONG_LINE, "%s/%s: libc read %ld bytes, not the "
				      "long line", h->name, c->what, a.off[0]);
		line_run(h->kind, u, c, &b);
		same(h->name, c->what, &a, &b);
		compared++;
	}
}

/* ---- in-kernel copies ---- */

struct copy_case {
	const char *what;
	enum fx in, out;
	bool in_ptr, out_ptr;	/* pass an offset pointer */
	long in_off, out_off;	/* its value, or where the cursor is put */
	size_t len;
	unsigned flags;
	bool intr;
	struct expect e;
	unsigned only;		/* 1 << kind it applies to; 0: all */
};

#define ONLY(k)	(1u << ((k) - K_COPY_FILE_RANGE))
#define C_CFR	ONLY(K_COPY_FILE_RANGE)
#define C_SPL	ONLY(K_SPLICE)
#define C_SF	ONLY(K_SENDFILE)

static const struct copy_case copy_cases[] = {
	{ "file to file, offsets", FX_FILE_RO, FX_NEW, true, true, 1000, 77, 9000,
	  .e = FULL, .only = C_CFR },
	{ "file to file, cursors", FX_FILE_RO, FX_NEW, false, false, 3000, 5, 9000,
	  .e = FULL, .only = C_CFR | C_SF },
	{ "file to file, in offset", FX_FILE_RO, FX_NEW, true, false, 3000, 5, 9000,
	  .e = FULL, .only = C_CFR | C_SF },
	{ "20 MiB file, cut into windows", FX_BIG_RO, FX_NEW, false, false, 4096, 0, BIG_SIZE,
	  .e = SHORT, .only = C_CFR | C_SF },
	{ "20 MiB file with offsets", FX_BIG_RO, FX_NEW, true, true, 12345, 3, 15 * UOT_MIB,
	  .e = FULL, .only = C_CFR | C_SF },
	{ "short at the end", FX_FILE_RO, FX_NEW, true, false, DATA_SIZE - 100, 0, 9000,
	  .e = SHORT, .only = C_CFR | C_SF },
	{ "at EOF", FX_FILE_RO, FX_NEW, false, false, DATA_SIZE, 0, 9000, .e = ZERO,
	  .only = C_CFR | C_SF },
	{ "at EOF, to a pipe", FX_FILE_RO, FX_PIPE_W, false, false, DATA_SIZE, 0, 9000, .e = ZERO,
	  .only = C_SPL | C_SF },
	{ "zero length", FX_FILE_RO, FX_NEW, false, false, 0, 0, 0, .e = ZERO,
	  .only = C_CFR | C_SF },
	{ "unknown flags", FX_FILE_RO, FX_NEW, false, false, 0, 0, 9000, .flags = 0x4000,
	  .e = ERR(EINVAL), .only = C_CFR | C_SPL },
	{ "closed input", FX_CLOSED, FX_NEW, false, false, 0, 0, 9000, .e = ERR(EBADF) },
	{ "input -1", FX_MINUS1, FX_NEW, false, false, 0, 0, 9000, .e = ERR(EBADF) },
	{ "read-only output", FX_FILE_RO, FX_FILE_RO, false, false, 0, 0, 9000, .e = ERR(EBADF),
	  .only = C_CFR | C_SF },
	{ "O_APPEND output", FX_FILE_RO, FX_FILE_APPEND, false, false, 0, 0, 9000,
	  .e = ERR(EBADF), .only = C_CFR },
	{ "overlapping ranges of one file", FX_FILE, FX_NONE, true, true, 0, 4096, 16384,
	  .e = ERR(EINVAL), .only = C_CFR },
	/* A request so long its end overflows an offset: the kernel refuses it whole. */
	{ "length SIZE_MAX past offset 0", FX_FILE_RO, FX_NEW, false, false, 1000, 0, SIZE_MAX,
	  .e = ERR(EOVERFLOW), .only = C_CFR },
	{ "length SSIZE_MAX past offset 0", FX_FILE_RO, FX_NEW, false, false, 1000, 0, SSIZE_MAX,
	  .e = ERR(EINVAL), .only = C_SF },
	{ "length SSIZE_MAX from offset 0", FX_FILE_RO, FX_NEW, false, false, 0, 0, SSIZE_MAX,
	  .e = SHORT, .only = C_CFR | C_SF },
	{ "negative input offset", FX_FILE_RO, FX_NEW, true, false, -5, 0, 9000,
	  .e = ERR(EOVERFLOW), .only = C_CFR },
	{ "negative input offset", FX_FILE_RO, FX_NEW, true, false, -5, 0, 9000,
	  .e = ERR(EINVAL), .only = C_SF },
	{ "pipe input", FX_PIPE_R_DATA, FX_NEW, false, false, 0, 0, 9000, .e = ERR(EINVAL),
	  .only = C_CFR | C_SF },
	{ "file to pipe", FX_FILE_RO, FX_PIPE_W, false, false, 100, 0, 9000, .e = FULL,
	  .only = C_SPL | C_SF },
	{ "file to pipe, offset", FX_FILE_RO, FX_PIPE_W, true, false, 100, 0, 9000, .e = FULL,
	  .only = C_SPL | C_SF },
	{ "file to full non-blocking pipe", FX_FILE_RO, FX_PIPE_W_FULL_NB, false, false, 0, 0, 9000,
	  .e = ERR(EAGAIN), .only = C_SPL | C_SF },
	{ "file to pipe without reader", FX_FILE_RO, FX_PIPE_W_NOREADER, false, false, 0, 0, 9000,
	  .e = ERR(EPIPE), .only = C_SPL | C_SF },
	{ "pipe to file", FX_PIPE_R_DATA, FX_NEW, false, false, 0, 0, 9000, .e = SHORT,
	  .only = C_SPL },
	{ "pipe to file, offset", FX_PIPE_R_DATA, FX_NEW, false, true, 0, 5000, 9000, .e = SHORT,
	  .only = C_SPL },
	{ "offset on a pipe", FX_PIPE_R_DATA, FX_NEW, true, false, 0, 0, 9000, .e = ERR(ESPIPE),
	  .only = C_SPL },
	{ "empty non-blocking pipe", FX_PIPE_R_EMPTY_NB, FX_NEW, false, false, 0, 0, 9000,
	  .flags = SPLICE_F_NONBLOCK, .e = ERR(EAGAIN), .only = C_SPL },
	{ "empty pipe, signal", FX_PIPE_R_EMPTY, FX_NEW, false, false, 0, 0, 9000, .intr = true,
	  .e = ERR(EINTR), .only = C_SPL },
	{ "file to file", FX_FILE_RO, FX_NEW, false, false, 0, 0, 9000, .e = ERR(EINVAL),
	  .only = C_SPL },
};

static long copy_call(enum kind k, void *fn, int in, off64_t *in_off, int out, off64_t *out_off,
		      size_t len, unsigned flags)
{
	switch (k) {
	case K_COPY_FILE_RANGE: case K_SPLICE:
		return ((ssize_t (*)(int, off64_t *, int, off64_t *, size_t, unsigned))fn)(
			in, in_off, out, out_off, len, flags);
	case K_SENDFILE:
		return ((ssize_t (*)(int, int, off_t *, size_t))fn)(out, in, (off_t *)in_off, len);
	default:
		ck_abort_msg("copy_call: kind %d copies nothing", (int)k);
		return 0;
	}
}

static void copy_run(enum kind k, void *fn, const struct copy_case *c, struct outcome *o)
{
	struct fixture in, out;
	off64_t in_off = c->in_off, out_off = c->out_off;

	memset(o, 0, sizeof(*o));
	fx_up(&in, c->in, c->in_ptr || c->in_off < 0 ? 0 : c->in_off);
	fx_up(&out, c->out, c->out_ptr ? 0 : c->out_off);
	if (c->out == FX_NONE)
		out.fd = in.fd;
	if (c->intr)
		arm(true);
	errno = SENTINEL;
	o->ret = copy_call(k, fn, in.fd, c->in_ptr ? &in_off : NULL, out.fd,
			   c->out_ptr ? &out_off : NULL, c->len, c->flags);
	o->err = errno;
	arm(false);
	o->off[0] = c->in_ptr ? (long)in_off : 0;
	o->off[1] = c->out_ptr ? (long)out_off : 0;
	o->pos[0] = fd_pos(in.fd);
	o->pos[1] = fd_pos(out.fd);
	o->left[0] = pipe_left(in.reader);
	o->left[1] = pipe_left(out.reader);
	raw_close(in.fd);
	raw_close(in.peer);
	if (c->out != FX_NONE) {
		raw_close(out.fd);
		raw_close(out.peer);
	}
	file_state(in.path, &o->file_hash[0], &o->file_size[0]);
	file_state(out.path, &o->file_hash[1], &o->file_size[1]);
}

static void copy_hook(const struct hook *h)
{
	void *r = real_fn(h->name), *u = hooked_fn(h->name);
	size_t i;

	for (i = 0; i < sizeof(copy_cases) / sizeof(copy_cases[0]); i++) {
		const struct copy_case *c = &copy_cases[i];
		struct outcome a, b;

		if (c->only && !(c->only & ONLY(h->kind)))
			continue;
		copy_run(h->kind, r, c, &a);
		check_expect(h->name, c->what, &c->e, &a, c->len, h->kind, 1);
		copy_run(h->kind, u, c, &b);
		same(h->name, c->what, &a, &b);
		compared++;
	}
}

/* ---- opens ---- */

struct open_case {
	const char *what;
	const char *path;	/* relative to dir; NULL: the directory itself */
	int flags;
	mode_t mode;
	bool bad_dirfd;
	const char *fmode;	/* for fopen */
	bool has_mode;		/* __open_2 must not be given O_CREAT: it aborts */
	bool fopen_only;
	int err;		/* libc's errno, 0 for success */
};

static const struct open_case open_cases[] = {
	{ "existing file", "data", O_RDONLY, .fmode = "r" },
	{ "existing file, read-write, cloexec", "data", O_RDWR | O_CLOEXEC, .fmode = "r+e" },
	{ "truncated", "data", O_WRONLY | O_TRUNC, .fmode = "w" },
	{ "append", "data", O_WRONLY | O_APPEND, .fmode = "a" },
	{ "missing file", "nothing-here", O_RDONLY, .fmode = "r", .err = ENOENT },
	{ "created", "created", O_WRONLY | O_CREAT | O_TRUNC, 0640, .fmode = "w", .has_mode = true },
	{ "O_EXCL on an existing file", "data", O_WRONLY | O_CREAT | O_EXCL, 0600, .fmode = "wx",
	  .has_mode = true, .err = EEXIST },
	{ "directory for writing", NULL, O_WRONLY, .fmode = "w", .err = EISDIR },
	{ "O_DIRECTORY on a file", "data", O_RDONLY | O_DIRECTORY, .err = ENOTDIR },
	{ "O_TMPFILE", ".", O_TMPFILE | O_RDWR, 0600, .has_mode = true },
	{ "O_TMPFILE read-only", ".", O_TMPFILE | O_RDONLY, 0600, .has_mode = true, .err = EINVAL },
	{ "bad mode string", "data", 0, .fmode = "z", .fopen_only = true, .err = EINVAL },
	{ "path too long", "@long", O_RDONLY, .fmode = "r", .err = ENAMETOOLONG },
	{ "bad directory descriptor", "data", O_RDONLY, .bad_dirfd = true, .err = EBADF },
};

static char long_name[PATH_MAX + 16];

static void open_run(enum kind k, void *fn, const struct open_case *c, struct outcome *o)
{
	char path[2 * PATH_MAX + 32];
	const char *rel = c->path ? c->path : ".";
	int dfd = raw_open(dir, O_RDONLY | O_DIRECTORY), fd;
	struct stat st;
	FILE *fp = NULL;

	memset(o, 0, sizeof(*o));
	write_file(data_path, pattern, sizeof(pattern));
	unlink(sub_path);
	if (!strcmp(rel, "@long"))
		rel = long_name;
	if (rel == long_name || (k != K_OPENAT && k != K_OPENAT_2))
		snprintf(path, sizeof(path), "%s/%s", rel == long_name ? "" : dir, rel);
	else
		snprintf(path, sizeof(path), "%s", rel);
	if (c->bad_dirfd) {
		raw_close(dfd);
		dfd = 999;
	}
	errno = SENTINEL;
	switch (k) {
	case K_OPEN:
		o->ret = ((int (*)(const char *, int, ...))fn)(path, c->flags, c->mode);
		break;
	case K_OPENAT:
		o->ret = ((int (*)(int, const char *, int, ...))fn)(dfd, path, c->flags, c->mode);
		break;
	case K_OPEN_2:
		o->ret = ((int (*)(const char *, int))fn)(path, c->flags);
		break;
	case K_OPENAT_2:
		o->ret = ((int (*)(int, const char *, int))fn)(dfd, path, c->flags);
		break;
	case K_FOPEN:
		fp = ((FILE *(*)(const char *, const char *))fn)(path, c->fmode);
		o->ret = fp ? fileno(fp) : -1;
		break;
	default:
		ck_abort_msg("open_run: kind %d opens nothing", (int)k);
	}
	o->err = errno;
	fd = (int)o->ret;
	if (fd >= 0) {
		o->extra[0] = fcntl(fd, F_GETFD);
		o->extra[1] = fcntl(fd, F_GETFL);
		o->extra[2] = fstat(fd, &st) == 0 ? (long)st.st_mode : -1;
		o->pos[0] = fd_pos(fd);
	}
	if (fp)
		fclose(fp);
	else if (fd >= 0)
		raw_close(fd);
	if (!c->bad_dirfd)
		raw_close(dfd);
	file_state(data_path, &o->file_hash[0], &o->file_size[0]);
	file_state(sub_path, &o->file_hash[1], &o->file_size[1]);
}

static void open_hook(const struct hook *h)
{
	void *r = real_fn(h->name), *u = hooked_fn(h->name);
	size_t i;

	for (i = 0; i < sizeof(open_cases) / sizeof(open_cases[0]); i++) {
		const struct open_case *c = &open_cases[i];
		struct outcome a, b;

		if (h->kind == K_FOPEN ? !c->fmode : c->bad_dirfd && h->kind != K_OPENAT &&
		    h->kind != K_OPENAT_2)
			continue;
		if (((h->kind == K_OPEN_2 || h->kind == K_OPENAT_2) && c->has_mode) ||
		    (c->fopen_only && h->kind != K_FOPEN))
			continue;
		open_run(h->kind, r, c, &a);
		ck_assert_msg(c->err ? a.ret < 0 && a.err == c->err : a.ret >= 0,
			      "%s/%s: libc gave %ld errno %d: the case is wrong", h->name, c->what,
			      a.ret, a.err);
		open_run(h->kind, u, c, &b);
		same(h->name, c->what, &a, &b);
		compared++;
	}
}

/* ---- descriptor life ---- */

/* The descriptors a case looks at afterwards: open (flags) or not (-errno). */
static void fd_states(struct outcome *o, const int *fds, int n)
{
	int i;

	for (i = 0; i < n && i < 4; i++)
		o->extra[i] = fds[i] < 0 ? 0 : fcntl(fds[i], F_GETFD) < 0 ? -errno :
			      fcntl(fds[i], F_GETFD);
}

enum life_case {
	L_OK, L_PIPE, L_CLOSED, L_MINUS1, L_STREAM, L_SAME, L_BAD_FLAGS, L_CLOEXEC,
	L_UNBUFFERED_FAIL, L_BAD_RANGE, L_N
};

static const char *const life_names[] = {
	"open file", "pipe", "closed descriptor", "descriptor -1", "a written stream",
	"the same descriptor twice", "unknown flags", "CLOSE_RANGE_CLOEXEC",
	"buffered data, descriptor closed behind", "last below first",
};

/* Writes 8 MiB through the hooked write: with USEONCE_WINDOW=2M it is a stream. */
static void make_stream(int fd)
{
	static char block[UOT_MIB];
	int i;

	memset(block, 's', sizeof(block));
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
}

/* 1 if the case applies to the kind; runs it and fills o. */
static bool life_run(enum kind k, void *fn, enum life_case lc, struct outcome *o)
{
	struct fixture f, g;
	int fds[4] = { -1, -1, -1, -1 }, base = 900, i;

	memset(o, 0, sizeof(*o));
	switch (k) {
	case K_CLOSE:
		if (lc > L_STREAM)
			return false;
		fx_up(&f, lc == L_PIPE ? FX_PIPE_W : lc == L_CLOSED ? FX_CLOSED : lc == L_MINUS1 ?
		      FX_MINUS1 : lc == L_STREAM ? FX_NEW : FX_FILE, 0);
		if (lc == L_STREAM)
			make_stream(f.fd);
		errno = SENTINEL;
		o->ret = ((int (*)(int))fn)(f.fd);
		o->err = errno;
		fds[0] = f.fd;
		fd_states(o, fds, 1);
		raw_close(f.peer);
		file_state(f.path, &o->file_hash[0], &o->file_size[0]);
		return true;
	case K_FCLOSE:
		if (lc != L_OK && lc != L_PIPE && lc != L_STREAM && lc != L_UNBUFFERED_FAIL &&
		    lc != L_CLOSED)
			return false;
		fx_up(&f, lc == L_PIPE ? FX_PIPE_W : lc == L_STREAM ? FX_NEW :
		      lc == L_CLOSED ? FX_CLOSED : FX_FILE, 0);
		fx_stdio(&f, lc == L_CLOSED ? FX_CLOSED : FX_FILE);
		if (lc == L_STREAM)
			make_stream(fileno(f.fp));
		if (lc == L_UNBUFFERED_FAIL || lc == L_PIPE) {
			fputs("pending", f.fp);
			if (lc == L_UNBUFFERED_FAIL)
				raw_close(f.fd);
		}
		errno = SENTINEL;
		o->ret = ((int (*)(FILE *))fn)(f.fp);
		o->err = errno;
		fds[0] = f.fd;
		fd_states(o, fds, 1);
		o->left[0] = pipe_left(f.reader);
		raw_close(f.peer);
		file_state(f.path, &o->file_hash[0], &o->file_size[0]);
		return true;
	case K_DUP2: case K_DUP3:
		if (lc != L_OK && lc != L_CLOSED && lc != L_MINUS1 && lc != L_STREAM && lc != L_SAME &&
		    !(k == K_DUP3 && (lc == L_BAD_FLAGS || lc == L_CLOEXEC)))
			return false;
		fx_up(&f, lc == L_CLOSED ? FX_CLOSED : lc == L_MINUS1 ? FX_MINUS1 : FX_FILE_RO, 0);
		fx_up(&g, FX_NEW, 0);
		if (lc == L_STREAM)
			make_stream(g.fd);
		fds[0] = f.fd;
		fds[1] = lc == L_SAME ? f.fd : g.fd;
		errno = SENTINEL;
		if (k == K_DUP2)
			o->ret = ((int (*)(int, int))fn)(fds[0], fds[1]);
		else
			o->ret = ((int (*)(int, int, int))fn)(fds[0], fds[1], lc == L_BAD_FLAGS ? 0x40 :
							   lc == L_CLOEXEC ? O_CLOEXEC : 0);
		o->err = errno;
		fd_states(o, fds, 2);
		o->pos[0] = fd_pos(fds[1]);
		raw_close(f.fd);
		raw_close(g.fd);
		file_state(g.path, &o->file_hash[0], &o->file_size[0]);
		return true;
	case K_CLOSE_RANGE: case K_CLOSEFROM:
		if (k == K_CLOSEFROM && lc != L_OK && lc != L_STREAM)
			return false;
		if (k == K_CLOSE_RANGE && lc != L_OK && lc != L_STREAM && lc != L_BAD_FLAGS &&
		    lc != L_CLOEXEC && lc != L_BAD_RANGE)
			return false;
		/* Far above anything Check or the library's trace use. */
		fx_up(&f, FX_NEW, 0);
		if (lc == L_STREAM)
			make_stream(f.fd);
		for (i = 0; i < 3; i++)
			fds[i] = dup2(f.fd, base + i);
		fds[3] = base + 3;
		raw_close(f.fd);
		errno = SENTINEL;
		if (k == K_CLOSEFROM) {
			((void (*)(int))fn)(base + 1);
			o->ret = 0;
		} else {
			o->ret = ((int (*)(unsigned, unsigned, int))fn)(
				lc == L_BAD_RANGE ? base + 2u : base + 1u, lc == L_BAD_RANGE ? (unsigned)base : ~0u,
				lc == L_BAD_FLAGS ? 0x40 : lc == L_CLOEXEC ? CLOSE_RANGE_CLOEXEC : 0);
		}
		o->err = errno;
		fd_states(o, fds, 4);
		for (i = 0; i < 4; i++)
			raw_close(fds[i]);
		file_state(f.path, &o->file_hash[0], &o->file_size[0]);
		return true;
	default:
		ck_abort_msg("life_run: kind %d", (int)k);
		return false;
	}
}

static void life_hook(const struct hook *h)
{
	void *r = real_fn(h->name), *u = hooked_fn(h->name);
	int lc;

	for (lc = 0; lc < L_N; lc++) {
		struct outcome a, b;

		if (!life_run(h->kind, r, (enum life_case)lc, &a))
			continue;
		ck_assert(life_run(h->kind, u, (enum life_case)lc, &b));
		same(h->name, life_names[lc], &a, &b);
		compared++;
	}
}

/* ---- new descriptors: dup, fcntl, creat, mkstemp..., tmpfile, freopen; pclose ---- */

struct newfd_case {
	const char *what;
	enum fx fx;		/* the descriptor or stream the call works on */
	int cmd;		/* fcntl */
	long arg;
	const char *name;	/* creat, mkstemp...: relative to dir; freopen: NULL for none */
	int suffix;		/* mkstemps */
	int flags;		/* mkostemp */
	const char *mode;	/* freopen */
	int err;		/* libc's errno, 0 for success */
};

static const struct newfd_case dup_cases[] = {
	{ "open file", .fx = FX_FILE },
	{ "closed descriptor", FX_CLOSED, .err = EBADF },
	{ "descriptor -1", FX_MINUS1, .err = EBADF },
};

static const struct newfd_case fcntl_cases[] = {
	{ "F_DUPFD", FX_FILE, F_DUPFD, .arg = 50 },
	{ "F_DUPFD_CLOEXEC", FX_FILE, F_DUPFD_CLOEXEC, .arg = 60 },
	{ "F_DUPFD, closed descriptor", FX_CLOSED, F_DUPFD, 50, .err = EBADF },
	{ "F_DUPFD, negative minimum", FX_FILE, F_DUPFD, -1, .err = EINVAL },
	{ "F_GETFL", FX_FILE_APPEND, .cmd = F_GETFL },
	{ "F_SETFL", FX_FILE, F_SETFL, .arg = O_APPEND },
	{ "F_GETFD, descriptor -1", FX_MINUS1, F_GETFD, .err = EBADF },
	{ "unknown command", FX_FILE, 0x7fff, .err = EINVAL },
};

static const struct newfd_case creat_cases[] = {
	{ "new file", .name = "created" },
	{ "existing file, truncated", .name = "data" },
	{ "missing directory", .name = "nothing-here/created", .err = ENOENT },
	{ "a directory", .name = ".", .err = EISDIR },
};

static const struct newfd_case temp_cases[] = {
	{ "template", .name = "tmpXXXXXX" },
	{ "template with a suffix", .name = "tmpXXXXXX.suf", .suffix = 4 },
	{ "close-on-exec", .name = "tmpXXXXXX", .flags = O_CLOEXEC },
	{ "too few Xs", .name = "tmpXXX", .err = EINVAL },
	{ "suffix longer than the template", .name = "tmpXXXXXX", .suffix = 40, .err = EINVAL },
	{ "missing directory", .name = "nothing-here/tmpXXXXXX", .err = ENOENT },
};

static const struct newfd_case tmpfile_cases[] = {
	{ "a temporary file", .fx = FX_NONE },
};

static const struct newfd_case freopen_cases[] = {
	{ "another file", FX_FILE, .name = "data", .mode = "r" },
	{ "the same file, another mode", FX_FILE, .mode = "r" },
	{ "a missing file", FX_FILE, .name = "nothing-here", .mode = "r", .err = ENOENT },
	{ "a bad mode", FX_FILE, .name = "data", .mode = "z", .err = EINVAL },
};

static const struct newfd_case pclose_cases[] = {
	{ "exit status 3", .name = "exit 3" },
	{ "output left unread", .name = "echo unread" },
	/* A broken pipe whatever the timing: it writes until the pipe closes (EPIPE here,
	 * where SIGPIPE is ignored; killed by it elsewhere). */
	{ "still writing when closed", .name = "exec yes 2>/dev/null" },
};

static const struct newfd_case *newfd_cases(enum kind k, size_t *n)
{
#define UOT_CASES(a)	(*n = sizeof(a) / sizeof(a[0]), a)
	switch (k) {
	case K_DUP: return UOT_CASES(dup_cases);
	case K_FCNTL: return UOT_CASES(fcntl_cases);
	case K_CREAT: return UOT_CASES(creat_cases);
	case K_TMPFILE: return UOT_CASES(tmpfile_cases);
	case K_FREOPEN: return UOT_CASES(freopen_cases);
	case K_PCLOSE: return UOT_CASES(pclose_cases);
	default: return UOT_CASES(temp_cases);
	}
#undef UOT_CASES
}

/* The descriptor a call gave: its flags and mode, then closed. */
static void newfd_state(struct outcome *o, int fd)
{
	struct stat st;

	if (fd < 0)
		return;
	o->extra[0] = fcntl(fd, F_GETFD);
	o->extra[1] = fcntl(fd, F_GETFL);
	o->extra[2] = fstat(fd, &st) == 0 ? (long)st.st_mode : -1;
	o->pos[0] = fd_pos(fd);
}

static bool newfd_run(enum kind k, void *fn, const struct newfd_case *c, struct outcome *o)
{
	char path[PATH_MAX + 64];
	struct fixture f = { .fd = -1, .peer = -1, .reader = -1 };
	FILE *fp = NULL;
	int fd = -1;

	if (((k == K_MKSTEMP || k == K_MKOSTEMP) && c->suffix) ||
	    ((k == K_MKSTEMP || k == K_MKSTEMPS) && c->flags))
		return false;
	memset(o, 0, sizeof(*o));
	write_file(data_path, pattern, sizeof(pattern));
	unlink(sub_path);
	if (c->fx != FX_NONE)
		fx_up(&f, c->fx, 0);
	snprintf(path, sizeof(path), "%s/%s", dir, c->name ? c->name : "");
	errno = SENTINEL;
	switch (k) {
	case K_DUP:
		o->ret = fd = ((int (*)(int))fn)(f.fd);
		break;
	case K_FCNTL:
		o->ret = ((int (*)(int, int, ...))fn)(f.fd, c->cmd, c->arg);
		if (c->cmd == F_DUPFD || c->cmd == F_DUPFD_CLOEXEC)
			fd = (int)o->ret;
		break;
	case K_CREAT:
		o->ret = fd = ((int (*)(const char *, mode_t))fn)(path, 0640);
		break;
	case K_MKSTEMP:
		o->ret = fd = ((int (*)(char *))fn)(path);
		break;
	case K_MKOSTEMP:
		o->ret = fd = ((int (*)(char *, int))fn)(path, c->flags);
		break;
	case K_MKSTEMPS:
		o->ret = fd = ((int (*)(char *, int))fn)(path, c->suffix);
		break;
	case K_MKOSTEMPS:
		o->ret = fd = ((int (*)(char *, int, int))fn)(path, c->suffix, c->flags);
		break;
	case K_TMPFILE:
		fp = ((FILE *(*)(void))fn)();
		o->ret = fd = fp ? fileno(fp) : -1;
		break;
	case K_FREOPEN:
		f.fp = fdopen(f.fd, "r+");
		ck_assert_ptr_nonnull(f.fp);
		fp = ((FILE *(*)(const char *, const char *, FILE *))fn)(c->name ? path : NULL,
									 c->mode, f.fp);
		o->ret = fd = fp ? fileno(fp) : -1;
		/* Closed, whatever came of it. */
		f.fd = -1;
		break;
	case K_PCLOSE:
		fp = popen(c->name, "r");
		ck_assert_ptr_nonnull(fp);
		/* Whether the child wrote before the pipe closed is a race of its own that
		 * gives its exit status (0 or a broken pipe): wait until it wrote or exited,
		 * so libc and the hook are asked the same question. */
		{
			struct pollfd pfd = { .fd = fileno(fp), .events = POLLIN };

			ck_assert_int_eq(poll(&pfd, 1, -1), 1);
		}
		o->ret = ((int (*)(FILE *))fn)(fp);
		fp = NULL;
		break;
	default:
		ck_abort_msg("newfd_run: kind %d", (int)k);
	}
	o->err = errno;
	newfd_state(o, fd);
	if (c->fx == FX_FILE_APPEND || c->cmd == F_SETFL)
		o->extra[3] = fcntl(f.fd, F_GETFL);
	if (fp)
		fclose(fp);
	else if (fd >= 0)
		raw_close(fd);
	if (f.fd >= 0)
		raw_close(f.fd);
	/* The temporary file's name is random: its mode and size, not its name. */
	if (fd >= 0 && k >= K_MKSTEMP && k <= K_MKOSTEMPS) {
		struct stat st;

		o->extra[3] = stat(path, &st) == 0 ? (long)st.st_mode + st.st_size : -1;
		unlink(path);
	}
	if (k == K_CREAT && fd >= 0 && strcmp(c->name, "data"))
		unlink(path);
	file_state(data_path, &o->file_hash[0], &o->file_size[0]);
	return true;
}

static void newfd_hook(const struct hook *h)
{
	void *r = real_fn(h->name), *u = hooked_fn(h->name);
	const struct newfd_case *cases;
	size_t i, n;

	cases = newfd_cases(h->kind, &n);
	for (i = 0; i < n; i++) {
		const struct newfd_case *c = &cases[i];
		struct outcome a, b;

		if (!newfd_run(h->kind, r, c, &a))
			continue;
		ck_assert_msg(c->err ? a.ret < 0 && a.err == c->err : a.ret >= 0,
			      "%s/%s: libc gave %ld errno %d: the case is wrong", h->name, c->what,
			      a.ret, a.err);
		ck_assert(newfd_run(h->kind, u, c, &b));
		same(h->name, c->what, &a, &b);
		compared++;
	}
}

/* ---- the tests ---- */

static const struct hook *hook_of(const char *name)
{
	size_t i;

	for (i = 0; i < N_HOOKS; i++)
		if (!strcmp(hooks[i].name, name))
			return &hooks[i];
	return NULL;
}

START_TEST(test_every_hook_has_scenarios)
{
	size_t i, j;

	for (i = 0; i < N_DEF; i++)
		ck_assert_msg(hook_of(def_names[i]), "hooks.def has %s, which check_results "
			      "never calls: add it to hooks[] with its kind", def_names[i]);
	for (i = 0; i < N_HOOKS; i++) {
		bool found = false;

		for (j = 0; j < N_DEF; j++)
			found |= !strcmp(def_names[j], hooks[i].name);
		ck_assert_msg(found, "check_results tests %s, which hooks.def no longer has",
			      hooks[i].name);
	}
	ck_assert_uint_eq(N_DEF, N_HOOKS);
}
END_TEST

/* Both sides exist and are not the same function: else nothing is compared. */
START_TEST(test_two_sides_differ)
{
	const char *first = getenv("UO_PRELOAD_FIRST");
	size_t i;

	for (i = 0; i < N_HOOKS; i++) {
		void *r = real_fn(hooks[i].name), *u = hooked_fn(hooks[i].name);
		Dl_info info;

		ck_assert_msg(r, "libc has no %s", hooks[i].name);
		ck_assert_msg(u && u != r, "%s is not interposed", hooks[i].name);
		ck_assert(dladdr(u, &info) && info.dli_fname);
		/*
		 * In the sanitizer pass the sanitizer's interceptor comes first and
		 * calls ours: then the library must still define the hook.
		 */
		if (first && *first && !strcmp(info.dli_fname, first)) {
			void *lib = dlopen(uot_library(), RTLD_NOLOAD | RTLD_LAZY);

			ck_assert_msg(lib && dlsym(lib, hooks[i].name), "%s: not in %s",
				      hooks[i].name, uot_library());
			continue;
		}
		ck_assert_msg(strstr(info.dli_fname, "libuseonce.so"), "%s comes from %s",
			      hooks[i].name, info.dli_fname);
	}
}
END_TEST

static void all_results(const struct hook *h)
{
	if (is_line(h->kind))
		line_hook(h);
	else if (is_read(h->kind) || is_write(h->kind))
		io_hook(h);
	else if (h->kind >= K_COPY_FILE_RANGE && h->kind <= K_SENDFILE)
		copy_hook(h);
	else if (h->kind >= K_OPEN && h->kind <= K_FOPEN)
		open_hook(h);
	else if (h->kind >= K_DUP)
		newfd_hook(h);
	else
		life_hook(h);
}

START_TEST(test_results)
{
	compared = 0;
	all_results(&hooks[_i]);
	printf("results: %-22s %u cases, libc's results\n", hooks[_i].name, compared);
	ck_assert_uint_gt(compared, 0);
}
END_TEST

/* ---- streams: the guard's slow path between compared calls ---- */

static char trace_path[PATH_MAX];

static long trace_size(void)
{
	struct stat st;

	return stat(trace_path, &st) == 0 ? (long)st.st_size : 0;
}

/* Lines of the trace written since 'from' that contain 'word'. */
static int trace_count(long from, const char *word)
{
	FILE *f = fopen(trace_path, "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	fseek(f, from, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, word) != NULL;
	fclose(f);
	return n;
}

static char why[1024];

__attribute__((format(printf, 1, 2)))
static bool differ(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return false;
}

static unsigned char sbuf[2][BUF_SIZE];

/* Chunks of irregular sizes, so calls do not line up with windows or folios. */
static size_t chunk_at(int step)
{
	return STREAM_CHUNK + (size_t)(step % 3) * 4099;
}

/*
 * Calls that fail, or move nothing, made in the middle of a stream (where
 * the guard may be reading uncached on the program's behalf), with
 * requests big enough for it to.  Same results on both sides, and neither
 * moves the cursor.
 */
static bool stream_odd_calls(const struct hook *h, void *const fn[2], const int fds[2],
			     FILE *const fp[2], off_t off)
{
	static const struct {
		const char *what;
		off_t at;		/* offset for positional calls; 1: where the stream is */
		size_t len;
		int flags, cnt;
		bool bad_buf, bad_iov;
	} odd[] = {
		{ "offset -1", -1, BUF_SIZE, 0, 0, false, false },
		{ "offset -4096", -4096, BUF_SIZE, 0, 0, false, false },
		{ "bad buffer", 1, BUF_SIZE, .bad_buf = true },
		{ "bad iovec array", 1, BUF_SIZE, .bad_iov = true },
		{ "negative iovec count", 1, BUF_SIZE, .cnt = -1 },
		{ "unknown RWF flag", 1, BUF_SIZE, .flags = 0x10000000 },
		{ "zero length", 1, 0, 0, 0, false, false },
		{ "past the end", (off_t)BIG_SIZE + 4096, BUF_SIZE, 0, 0, false, false },
	};
	size_t i;
	int s;

	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		long ret[2], pos[2];
		int err[2];

		if (is_stdio(h->kind) || ((odd[i].bad_iov || odd[i].cnt) && !is_vector(h->kind)) ||
		    (odd[i].flags && !is_v2(h->kind)) || (odd[i].at < 1 && !is_positional(h->kind)))
			continue;
		for (s = 0; s < 2; s++) {
			void *buf = odd[i].bad_buf ? BADPTR : sbuf[s];
			struct iovec iov[3] = {
				{ buf, odd[i].len / 2 }, { (char *)buf + odd[i].len / 2, 0 },
				{ (char *)buf + odd[i].len / 2, odd[i].len - odd[i].len / 2 },
			};

			memset(sbuf[s], 0xa5, BUF_SIZE);
			errno = SENTINEL;
			ret[s] = io_call(h->kind, fn[s], fds[s], fp[s], buf, odd[i].len,
					 odd[i].at == 1 ? off : odd[i].at, odd[i].flags,
					 odd[i].cnt ? odd[i].cnt : 3, odd[i].bad_iov ? BADPTR : iov, 1);
			err[s] = errno;
			pos[s] = fd_pos(fds[s]);
		}
		if (ret[0] != ret[1] || err[0] != err[1] || pos[0] != pos[1] ||
		    memcmp(sbuf[0], sbuf[1], BUF_SIZE))
			return differ("%s mid-stream, %s: hook %ld errno %d pos %ld, libc %ld "
				      "errno %d pos %ld%s", h->name, odd[i].what, ret[0], err[0],
				      pos[0], ret[1], err[1], pos[1],
				      memcmp(sbuf[0], sbuf[1], BUF_SIZE) ? ", other data" : "");
		/* A cursor read that succeeded moved both cursors alike: put them back. */
		for (s = 0; s < 2; s++)
			lseek(fds[s], off, SEEK_SET);
	}
	return true;
}

/*
 * The 20 MiB file through line readers or getc, a chunk of lines or
 * characters a step, alternating sides: the same results, data, stream
 * positions and refills all along, and all of it read.
 */
static bool stream_lines(const struct hook *h, const int fds[2])
{
	struct lreader r[2];
	long ret[2] = { 0, 0 }, pos[2];
	int err[2], step, s;
	bool ok = true;

	memset(r, 0, sizeof(r));
	for (s = 0; s < 2; s++) {
		r[s].k = h->kind;
		r[s].fn = s ? real_fn(h->name) : hooked_fn(h->name);
		r[s].hash = 0xcbf29ce484222325ULL;
		r[s].fp = fdopen(fds[s], "r");
		if (!r[s].fp)
			return differ("fdopen: %s", strerror(errno));
		if (h->kind == K_FGETS) {
			r[s].n = 8192;
			r[s].line = malloc(r[s].n);
			if (!r[s].line)
				return differ("out of memory");
		}
	}
	for (step = 0; step < 100000 && ok; step++) {
		long want = (long)chunk_at(step);
		unsigned calls[2];

		for (s = 0; s < 2; s++) {
			long from = r[s].got;

			calls[s] = 0;
			do {
				errno = SENTINEL;
				ret[s] = lstep(&r[s], 0);
				err[s] = errno;
				calls[s]++;
			} while (ret[s] >= 0 && r[s].got - from < want);
			pos[s] = (long)ftello(r[s].fp);
		}
		if (ret[0] != ret[1] || err[0] != err[1] || pos[0] != pos[1] ||
		    calls[0] != calls[1] || r[0].edges != r[1].edges || r[0].got != r[1].got)
			ok = differ("%s, step %d: hook %ld errno %d pos %ld after %u calls (%u at "
				    "the edge), libc %ld errno %d pos %ld after %u calls (%u)",
				    h->name, step, ret[0], err[0], pos[0], calls[0], r[0].edges,
				    ret[1], err[1], pos[1], calls[1], r[1].edges);
		else if (r[0].hash != r[1].hash)
			ok = differ("%s, step %d at %ld: other data", h->name, step, r[0].got);
		else if (ret[0] < 0)
			break;
	}
	if (ok && (r[0].got != (long)BIG_SIZE || err[0] != SENTINEL || !feof(r[0].fp) ||
		   ferror(r[0].fp) || feof(r[1].fp) != feof(r[0].fp)))
		ok = differ("%s: read %ld of %llu bytes, ended with errno %d feof %d/%d "
			    "ferror %d", h->name, r[0].got, (unsigned long long)BIG_SIZE, err[0],
			    feof(r[0].fp), feof(r[1].fp), ferror(r[0].fp));
	for (s = 0; s < 2; s++) {
		fclose(r[s].fp);
		lreader_free(&r[s]);
	}
	return ok;
}

/*
 * Reads fds[0] through the hook and fds[1] through libc, call by call, to
 * the end: the same results, data and offsets all along.  False, with why
 * set, at the first difference.
 */
static bool stream_read(const struct hook *h, const int fds[2])
{
	void *fn[2] = { hooked_fn(h->name), real_fn(h->name) };
	FILE *fp[2] = { NULL, NULL };
	off_t off = 0;
	int step, s;

	if (is_line(h->kind))
		return stream_lines(h, fds);
	if (is_stdio(h->kind)) {
		fp[0] = fdopen(fds[0], "r");
		fp[1] = fdopen(fds[1], "r");
		if (!fp[0] || !fp[1])
			return differ("fdopen: %s", strerror(errno));
	}
	for (step = 0; step < 100000; step++) {
		size_t len = chunk_at(step);
		long ret[2], pos[2];
		int err[2];

		for (s = 0; s < 2; s++) {
			struct iovec iov[3] = {
				{ sbuf[s], len / 3 }, { sbuf[s] + len / 3, len / 3 },
				{ sbuf[s] + 2 * (len / 3), len - 2 * (len / 3) },
			};

			memset(sbuf[s], 0xa5, len);
			errno = SENTINEL;
			ret[s] = io_call(h->kind, fn[s], fds[s], fp[s], sbuf[s], len, off, 0, 3, iov,
					 1);
			err[s] = errno;
			pos[s] = fp[s] ? ftell(fp[s]) : fd_pos(fds[s]);
		}
		if (ret[0] != ret[1] || err[0] != err[1] || pos[0] != pos[1])
			return differ("%s, call %d at %lld: hook %ld errno %d pos %ld, libc %ld "
				      "errno %d pos %ld", h->name, step, (long long)off, ret[0],
				      err[0], pos[0], ret[1], err[1], pos[1]);
		if (memcmp(sbuf[0], sbuf[1], len))
			return differ("%s, call %d at %lld: other data", h->name, step,
				      (long long)off);
		if (ret[0] <= 0)
			break;
		off += ret[0];
		if (step == 60 && !stream_odd_calls(h, fn, fds, fp, off))
			return false;
	}
	if (off != (off_t)BIG_SIZE)
		return differ("%s: read %lld of %llu bytes", h->name, (long long)off,
			      (unsigned long long)BIG_SIZE);
	for (s = 0; s < 2; s++) {
		if (fp[s])
			fclose(fp[s]);
		else
			close(fds[s]);
	}
	return true;
}

static void stream_pattern(unsigned char *buf, size_t len, int step)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 31 + (size_t)step * 7 + i / 509);
}

/* The same for writers: 20 MiB written, closed, and the two files equal. */
static bool stream_write(const struct hook *h)
{
	void *fn[2] = { hooked_fn(h->name), real_fn(h->name) };
	int (*closer[2])(int) = { hooked_fn("close"), real_fn("close") };
	int (*fcloser[2])(FILE *) = { hooked_fn("fclose"), real_fn("fclose") };
	char paths[2][PATH_MAX + 8];
	uint64_t hash[2];
	long size[2], done = 0;
	FILE *fp[2] = { NULL, NULL };
	int fds[2], step, s;

	for (s = 0; s < 2; s++) {
		snprintf(paths[s], sizeof(paths[s]), "%s/w%d", dir, s);
		fds[s] = raw_open(paths[s], O_RDWR | O_CREAT | O_TRUNC);
		if (fds[s] < 0)
			return differ("cannot create %s: %s", paths[s], strerror(errno));
		if (is_stdio(h->kind) && !(fp[s] = fdopen(fds[s], "w")))
			return differ("fdopen: %s", strerror(errno));
	}
	for (step = 0; done < (long)BIG_SIZE; step++) {
		size_t len = chunk_at(step);
		long ret[2], pos[2];
		int err[2];

		stream_pattern(sbuf[0], len, step);
		for (s = 0; s < 2; s++) {
			struct iovec iov[3] = {
				{ sbuf[0], len / 3 }, { sbuf[0] + len / 3, len / 3 },
				{ sbuf[0] + 2 * (len / 3), len - 2 * (len / 3) },
			};

			errno = SENTINEL;
			ret[s] = io_call(h->kind, fn[s], fds[s], fp[s], sbuf[0], len, done, 0, 3, iov,
					 1);
			err[s] = errno;
			pos[s] = fp[s] ? ftell(fp[s]) : fd_pos(fds[s]);
		}
		if (ret[0] != ret[1] || err[0] != err[1] || pos[0] != pos[1])
			return differ("%s, call %d at %ld: hook %ld errno %d pos %ld, libc %ld "
				      "errno %d pos %ld", h->name, step, done, ret[0], err[0], pos[0],
				      ret[1], err[1], pos[1]);
		if (ret[0] <= 0)
			return differ("%s, call %d: wrote %ld", h->name, step, ret[0]);
		done += ret[0];
	}
	for (s = 0; s < 2; s++) {
		int r, e;

		errno = SENTINEL;
		r = fp[s] ? fcloser[s](fp[s]) : closer[s](fds[s]);
		e = errno;
		if (r != 0 || e != SENTINEL)
			return differ("%s: %s side closed with %d errno %d", h->name,
				      s ? "libc's" : "the hook's", r, e);
		file_state(paths[s], &hash[s], &size[s]);
	}
	if (hash[0] != hash[1] || size[0] != size[1] || size[0] != done)
		return differ("%s: the files differ (%ld and %ld bytes)", h->name, size[0], size[1]);
	return true;
}

/*
 * In-kernel copies of the 20 MiB file: in pieces at the cursors, in pieces
 * at offsets given by pointer, and whole (the guard cuts that one).  For
 * splice, into a pipe drained after each call.
 */
static bool stream_copy(const struct hook *h)
{
	void *fn[2] = { hooked_fn(h->name), real_fn(h->name) };
	char paths[2][PATH_MAX + 8];
	int in[2], out[2], p[2][2] = { { -1, -1 }, { -1, -1 } }, round, s, step;
	uint64_t hash[2];
	long size[2];

	for (round = 0; round < 3; round++) {
		off64_t in_off[2] = { 0, 0 }, out_off[2] = { 0, 0 };
		bool ptr = round == 1, whole = round == 2;
		long total = 0;

		if (h->kind == K_SPLICE && whole)
			break;
		for (s = 0; s < 2; s++) {
			snprintf(paths[s], sizeof(paths[s]), "%s/c%d", dir, s);
			in[s] = raw_open(big_path, O_RDONLY);
			out[s] = raw_open(paths[s], O_RDWR | O_CREAT | O_TRUNC);
			if (h->kind == K_SPLICE) {
				if (pipe(p[s]))
					return differ("pipe: %s", strerror(errno));
				raw_close(out[s]);
				out[s] = p[s][1];
			}
		}
		for (step = 0; step < 100000; step++) {
			size_t len = whole ? SIZE_MAX / 2 : h->kind == K_SPLICE ? 65536 :
				     UOT_MIB + (size_t)(step % 5) * 4099;
			long ret[2], pos[2], opos[2];
			int err[2];

			for (s = 0; s < 2; s++) {
				errno = SENTINEL;
				ret[s] = copy_call(h->kind, fn[s], in[s], ptr ? &in_off[s] : NULL,
						   out[s], ptr && h->kind != K_SPLICE ? &out_off[s] :
						   NULL, len, 0);
				err[s] = errno;
				pos[s] = fd_pos(in[s]);
				opos[s] = fd_pos(out[s]);
				if (h->kind == K_SPLICE && ret[s] > 0 &&
				    syscall(SYS_read, p[s][0], sbuf[s], (size_t)ret[s]) != ret[s])
					return differ("draining the pipe: %s", strerror(errno));
			}
			if (ret[0] != ret[1] || err[0] != err[1] || pos[0] != pos[1] ||
			    opos[0] != opos[1] || in_off[0] != in_off[1] || out_off[0] != out_off[1])
				return differ("%s, round %d call %d at %ld: hook %ld errno %d pos "
					      "%ld/%ld, libc %ld errno %d pos %ld/%ld", h->name,
					      round, step, total, ret[0], err[0], pos[0], opos[0],
					      ret[1], err[1], pos[1], opos[1]);
			if (h->kind == K_SPLICE && ret[0] > 0 && memcmp(sbuf[0], sbuf[1], (size_t)ret[0]))
				return differ("%s, call %d: other data", h->name, step);
			if (ret[0] <= 0)
				break;
			total += ret[0];
		}
		if (total != (long)BIG_SIZE)
			return differ("%s, round %d: copied %ld bytes", h->name, round, total);
		for (s = 0; s < 2; s++) {
			raw_close(in[s]);
			raw_close(out[s]);
			if (h->kind == K_SPLICE)
				raw_close(p[s][0]);
			else
				file_state(paths[s], &hash[s], &size[s]);
		}
		if (h->kind != K_SPLICE && (hash[0] != hash[1] || size[0] != size[1]))
			return differ("%s, round %d: the copies differ", h->name, round);
	}
	return true;
}

/* 20 MiB put a character at a time, the buffer flushed through __overflow. */
static bool stream_putc(const struct hook *h)
{
	int (*fcloser[2])(FILE *) = { hooked_fn("fclose"), real_fn("fclose") };
	char paths[2][PATH_MAX + 8];
	struct lreader r[2];
	uint64_t hash[2];
	long size[2];
	int step, s;

	memset(r, 0, sizeof(r));
	for (s = 0; s < 2; s++) {
		int fd;

		snprintf(paths[s], sizeof(paths[s]), "%s/w%d", dir, s);
		fd = raw_open(paths[s], O_RDWR | O_CREAT | O_TRUNC);
		if (fd < 0)
			return differ("cannot create %s: %s", paths[s], strerror(errno));
		r[s].k = h->kind;
		r[s].fn = s ? real_fn(h->name) : hooked_fn(h->name);
		r[s].hash = 0xcbf29ce484222325ULL;
		if (!(r[s].fp = fdopen(fd, "w")))
			return differ("fdopen: %s", strerror(errno));
	}
	for (step = 0; r[0].got < (long)BIG_SIZE; step++) {
		size_t len = chunk_at(step), i;
		long pos[2], ret[2] = { 0, 0 };
		int err[2];

		stream_pattern(sbuf[0], len, step);
		for (s = 0; s < 2; s++) {
			errno = SENTINEL;
			for (i = 0; i < len && ret[s] >= 0; i++)
				ret[s] = lstep(&r[s], sbuf[0][i]);
			err[s] = errno;
			pos[s] = (long)ftello(r[s].fp);
		}
		if (ret[0] != ret[1] || err[0] != err[1] || pos[0] != pos[1] ||
		    r[0].edges != r[1].edges || r[0].hash != r[1].hash)
			return differ("%s, step %d at %ld: hook %ld errno %d pos %ld (%u flushes), "
				      "libc %ld errno %d pos %ld (%u)%s", h->name, step, r[0].got,
				      ret[0], err[0], pos[0], r[0].edges, ret[1], err[1], pos[1],
				      r[1].edges, r[0].hash != r[1].hash ? ", other results" : "");
		if (ret[0] < 0)
			return differ("%s, step %d: putc failed, errno %d", h->name, step, err[0]);
	}
	for (s = 0; s < 2; s++) {
		int ret, e;

		errno = SENTINEL;
		ret = fcloser[s](r[s].fp);
		e = errno;
		if (ret != 0 || e != SENTINEL)
			return differ("%s: %s side closed with %d errno %d", h->name,
				      s ? "libc's" : "the hook's", ret, e);
		file_state(paths[s], &hash[s], &size[s]);
	}
	if (hash[0] != hash[1] || size[0] != size[1] || size[0] != r[0].got)
		return differ("%s: the files differ (%ld and %ld bytes)", h->name, size[0], size[1]);
	return true;
}

static bool moves_data(enum kind k)
{
	return is_read(k) || is_write(k) || is_line(k) ||
	       (k >= K_COPY_FILE_RANGE && k <= K_SENDFILE);
}

START_TEST(test_streams)
{
	const struct hook *h = &hooks[_i];
	long mark = trace_size();
	bool ok;
	int fds[2];

	if (!moves_data(h->kind))
		return;
	if (reads(h->kind)) {
		fds[0] = raw_open(big_path, O_RDONLY);
		fds[1] = raw_open(big_path, O_RDONLY);
		ok = stream_read(h, fds);
	} else if (h->kind == K_OVERFLOW) {
		ok = stream_putc(h);
	} else if (is_write(h->kind)) {
		ok = stream_write(h);
	} else {
		ok = stream_copy(h);
	}
	ck_assert_msg(ok, "stream: %s", why);
	/* The guard took it for a stream: its slow path ran between the calls compared. */
	ck_assert_msg(trace_count(mark, "stream from") > 0 || trace_count(mark, "drop") > 0,
		      "%s: the library never saw a stream; nothing was tested", h->name);
	printf("results: %s streamed, %d trace lines\n", h->name, trace_count(mark, ""));
}
END_TEST

/*
 * As user nobody, on root's file: the guard cannot see what was cached and
 * reads the stream with RWF_DONTCACHE itself.  The descriptors are opened
 * as root, then the child gives up root.
 */
START_TEST(test_uncached_streams)
{
	int fds[N_HOOKS][2], failed = 0, status;
	long mark = trace_size();
	size_t i;
	pid_t pid;

	if (geteuid() != 0) {
		printf("results: uncached streams: skipped: not root\n");
		return;
	}
	for (i = 0; i < N_HOOKS; i++) {
		fds[i][0] = fds[i][1] = -1;
		if (!reads(hooks[i].kind))
			continue;
		fds[i][0] = raw_open(big_path, O_RDONLY);
		fds[i][1] = raw_open(big_path, O_RDONLY);
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(100);
		for (i = 0; i < N_HOOKS; i++) {
			if (fds[i][0] < 0)
				continue;
			if (!stream_read(&hooks[i], fds[i])) {
				fprintf(stderr, "results: uncached: %s\n", why);
				failed++;
			}
		}
		_exit(failed);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(!WIFEXITED(status) || WEXITSTATUS(status) != 100, "could not become nobody");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "read hooks streaming uncached differ from libc (%s), see above",
		      uot_status_str(status));
	printf("results: uncached streams: %d reads made uncached, %d probes refused\n",
	       trace_count(mark, "reading uncached"), trace_count(mark, "reads spared"));
	ck_assert_msg(trace_count(mark, "reading uncached") > 0,
		      "no stream was read uncached: this test tested nothing new");
}
END_TEST

/* A process that reads many small files whole streams a tree: opens are watched. */
START_TEST(test_opens_in_tree_mode)
{
	static char buf[128 * 1024];
	char path[PATH_MAX + 16];
	long mark = trace_size();
	size_t i;
	int n, fd;

	memset(buf, 't', sizeof(buf));
	for (n = 0; n < 40; n++) {
		snprintf(path, sizeof(path), "%s/tree%d", dir, n);
		write_file(path, buf, sizeof(buf));
		fd = open(path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
		unlink(path);
	}
	ck_assert_msg(trace_count(mark, "tree mode") > 0, "40 files read whole: no tree mode");
	compared = 0;
	for (i = 0; i < N_HOOKS; i++)
		if (hooks[i].kind >= K_OPEN && hooks[i].kind <= K_FOPEN)
			open_hook(&hooks[i]);
	printf("results: opens in tree mode: %u cases, libc's results\n", compared);
}
END_TEST

/*
 * errno, as the program sees it around hooked calls: left alone by every
 * call that succeeds (also one the guard acts on), and libc's own on the
 * usual errors: the same promise as test_results, said in the terms a
 * program's author uses.
 */
START_TEST(test_errno_kept_on_success)
{
	char buf[4096], path[PATH_MAX];
	struct iovec iov = { buf, sizeof(buf) };
	int fd, fd2, p[2];
	FILE *fp;
	off64_t off = 0;
	char *line = NULL;
	size_t line_n = 0;

	uot_sfmt(path, sizeof(path), "%s/errno", dir);
	fd = open(big_path, O_RDONLY);
	fd2 = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(fd2, 0);
#define KEEPS(call) do { errno = 4242; ck_assert_int_ge((long)(call), 0); \
			 ck_assert_msg(errno == 4242, #call " changed errno to %d", errno); } while (0)
	KEEPS(read(fd, buf, sizeof(buf)));
	KEEPS(pread(fd, buf, sizeof(buf), 8192));
	KEEPS(readv(fd, &iov, 1));
	KEEPS(preadv(fd, &iov, 1, 0));
	KEEPS(preadv2(fd, &iov, 1, -1, 0));
	KEEPS(write(fd2, buf, sizeof(buf)));
	KEEPS(pwrite(fd2, buf, sizeof(buf), 0));
	KEEPS(writev(fd2, &iov, 1));
	KEEPS(pwritev2(fd2, &iov, 1, 0, 0));
	KEEPS(copy_file_range(fd, &off, fd2, NULL, 3 * 8 * (long)UOT_MIB, 0));
	KEEPS(sendfile(fd2, fd, NULL, 4096));
	KEEPS(dup2(fd, fd2));
	ck_assert_int_eq(pipe(p), 0);
	KEEPS(splice(fd, NULL, p[1], NULL, 4096, 0));
	KEEPS(close(p[0]));
	KEEPS(close(p[1]));
	fp = fopen(big_path, "r");
	ck_assert_ptr_nonnull(fp);
	KEEPS(fread(buf, 1, sizeof(buf), fp));
	KEEPS(getline(&line, &line_n, fp));
	KEEPS(getdelim(&line, &line_n, ';', fp));
	KEEPS(fgets(buf, sizeof(buf), fp) ? 0 : -1);
	while (fp->_IO_read_ptr < fp->_IO_read_end)
		fp->_IO_read_ptr++;
	KEEPS(getc_unlocked(fp));	/* the buffer is empty: through __uflow */
	free(line);
	KEEPS(fclose(fp));
	/* A stdio stream without a descriptor: fileno() fails inside the hook. */
	fp = fmemopen(buf, sizeof(buf), "r");
	ck_assert_ptr_nonnull(fp);
	KEEPS(fread(path, 1, 16, fp));
	KEEPS(fclose(fp));
	KEEPS(close(fd));
	KEEPS(close(fd2));
#undef KEEPS
}
END_TEST

START_TEST(test_errors_are_libc_errors)
{
	char buf[16];
	int p[2];
	off64_t off = 0;

	ck_assert_int_eq(pipe(p), 0);
#define FAILS(call, err) do { errno = 0; ck_assert_int_eq((long)(call), -1); \
			      ck_assert_msg(errno == (err), #call ": errno %d", errno); } while (0)
	FAILS(read(-1, buf, sizeof(buf)), EBADF);
	FAILS(write(-1, buf, sizeof(buf)), EBADF);
	FAILS(pread(p[0], buf, sizeof(buf), 0), ESPIPE);
	FAILS(pwrite(p[1], buf, sizeof(buf), 0), ESPIPE);
	FAILS(copy_file_range(-1, NULL, p[1], NULL, 64 * (long)UOT_MIB, 0), EBADF);
	FAILS(copy_file_range(p[0], &off, p[1], NULL, 64 * (long)UOT_MIB, 7), EINVAL);
	FAILS(sendfile(p[1], -1, NULL, 64 * (long)UOT_MIB), EBADF);
	FAILS(close(-1), EBADF);
	FAILS(dup2(-1, 100), EBADF);
#undef FAILS
	close(p[0]);
	close(p[1]);
}
END_TEST

static Suite *results_suite(void)
{
	Suite *s = suite_create("results");
	TCase *tc = tcase_create("hooks");
	TCase *st = tcase_create("streams");
	TCase *er = tcase_create("errno");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_every_hook_has_scenarios);
	tcase_add_test(tc, test_two_sides_differ);
	tcase_add_loop_test(tc, test_results, 0, (int)N_HOOKS);
	tcase_add_test(tc, test_opens_in_tree_mode);
	suite_add_tcase(s, tc);
	tcase_add_test(er, test_errno_kept_on_success);
	tcase_add_test(er, test_errors_are_libc_errors);
	suite_add_tcase(s, er);
	tcase_set_timeout(st, 120);
	tcase_add_loop_test(st, test_streams, 0, (int)N_HOOKS);
	tcase_add_test(st, test_uncached_streams);
	suite_add_tcase(s, st);
	return s;
}

/*
 * Text for the line readers: short, empty and ';'-cut lines, one longer
 * than any stdio buffer, and a last line without its newline.
 */
static void make_lines(void)
{
	static char text[LONG_LINE + 64 * 1024];
	size_t len = 0;
	int i, j;

	len += (size_t)sprintf(text, "first\n\n");
	for (i = 0; i < 250; i++) {
		if (i == 200) {
			long_at = (off_t)len;
			memset(text + len, 'L', LONG_LINE);
			len += LONG_LINE;
			text[len++] = '\n';
		}
		for (j = 0; j < (i * 37) % 300; j++)
			text[len++] = j % 50 == 49 ? ';' : (char)('a' + j % 26);
		text[len++] = '\n';
	}
	last_at = (off_t)len;
	len += (size_t)sprintf(text + len, "the end, without newline");
	lines_size = (off_t)len;
	write_file(lines_path, text, len);
}

/* Run again with the library preloaded, a small window, and a trace to read back. */
static void reexec_preloaded(char **argv)
{
	static const char *const env[] = { "USEONCE_THRESHOLD=2M", "USEONCE_WINDOW=2M",
					   "USEONCE_REUSE=0", "USEONCE_TRACE=200", NULL };
	int fd;

	if (uot_scratch_create() != 0) {
		fprintf(stderr, "check_results: %s\n", uot_why());
		exit(EXIT_FAILURE);
	}
	uot_scratch_path(trace_path, sizeof(trace_path), "trace");
	fd = open(trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (fd < 0 || dup2(fd, TRACE_FD) != TRACE_FD) {
		perror(trace_path);
		exit(EXIT_FAILURE);
	}
	close(fd);
	uot_reexec_preloaded(argv, CHILD_MARK, env);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	size_t i;
	int ret;

	(void)argc;
	if (!getenv(CHILD_MARK))
		reexec_preloaded(argv);
	uot_suite_begin("results", NULL);
	libc_handle = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	if (!libc_handle) {
		fprintf(stderr, "check_results: no libc handle (%s)\n", dlerror());
		return EXIT_FAILURE;
	}
	/* The same process (exec keeps the pid), so the same scratch directory: ours to remove. */
	if (!uot_need_scratch()) {
		fprintf(stderr, "check_results: %s\n", uot_skip_reason());
		return EXIT_FAILURE;
	}
	snprintf(dir, sizeof(dir), "%s", uot_scratch());
	snprintf(trace_path, sizeof(trace_path), "%s/trace", dir);
	snprintf(data_path, sizeof(data_path), "%s/data", dir);
	snprintf(out_path, sizeof(out_path), "%s/out", dir);
	snprintf(big_path, sizeof(big_path), "%s/big", dir);
	snprintf(sub_path, sizeof(sub_path), "%s/created", dir);
	snprintf(lines_path, sizeof(lines_path), "%s/lines", dir);
	memset(long_name, 'x', PATH_MAX + 8);
	for (i = 0; i < sizeof(pattern); i++)
		pattern[i] = (unsigned char)(i * 7 + i / 4096);
	make_lines();
	if (uot_make_file(big_path, BIG_SIZE, 5) != 0) {
		fprintf(stderr, "check_results: %s\n", uot_why());
		return EXIT_FAILURE;
	}
	/* Blocked calls are interrupted, not restarted; a closed pipe is an error, not death. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	ret = uot_check_run(results_suite(), false);
	return ret;
}
