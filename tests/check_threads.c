/*
 * 64 threads at once under the preloaded library: streaming readers and
 * writers, random readers, readers sharing one cursor, writers sharing one
 * descriptor, in-kernel copies, descriptors opened, dup'ed, dup2'ed over
 * while other threads read through them, closed by close, close_range and
 * the raw system call.  Every byte read is checked (each word of the files
 * says where it lies), every file written is checked after, a watchdog
 * aborts if progress stops (a deadlock), and the streams are still dropped.
 *
 * The same program is built with ThreadSanitizer by `make check` (see
 * tests/sanitize.mk) and run with a smaller size; a race report fails it.
 *
 * Environment: UO_BUILD (the build holding libuseonce.so), UO_THREADS_MIB
 * (size of each streamed file, default 16, 8 under ThreadSanitizer).
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>

#include "uot_check.h"
#include "uot_pattern.h"

#define CHILD_MARK	"UO_CHECK_THREADS_CHILD"
#define NTHREADS	64
#define KiB		(1ULL << 10)
#define MiB		(1ULL << 20)
/* Streams here are 4 MiB of sequential bytes, advised every 2 MiB. */
#define THRESHOLD	"USEONCE_THRESHOLD=4M"
#define WINDOW		"USEONCE_WINDOW=2M"

enum role {
	STREAM,		/* reads its own file front to back at the cursor */
	SHARED_CURSOR,	/* reads one descriptor with the others: read() at a shared cursor */
	RANDOM,		/* preads anywhere in a file, through its own or a shared descriptor */
	WRITER,		/* writes its own file front to back */
	SHARED_WRITER,	/* pwrites its stripes of a file through a shared descriptor */
	COPY,		/* copy_file_range or sendfile of a whole file */
	CHURN,		/* opens, dups, dup2s, dup3s, closes in every way, stdio, pipes */
	SWAPPED_READER,	/* preads through a descriptor other threads dup2 over */
	SWAPPER,	/* dup2s another open of the same file over it, again and again */
};

struct worker {
	int tid;
	enum role role;
	int index;		/* which file of its kind */
	pthread_t thread;
	_Atomic uint64_t progress;
	_Atomic int done;
	int64_t dirty_at_close;	/* a writer's dirty bytes just after close, -1: not told */
	char err[256];
};

static struct {
	char dir[PATH_MAX - 64];
	uint64_t size;		/* of one streamed file */
	unsigned rounds;	/* of the loops that churn */
	int shared_read_fd, random_fd, shared_write_fd, swapped_fd;
	_Atomic unsigned *cursor_hits;	/* per 64 KiB of the shared-cursor file */
	_Atomic int readers_left;	/* swapped readers still working */
	struct worker w[NTHREADS];
} T;

/* Seeds of the files: each file's words differ from every other file's. */
#define SEED_STREAM(i)	(100u + (unsigned)(i))
#define SEED_WRITE(i)	(200u + (unsigned)(i))
#define SEED_SHARED	2u
#define SEED_RANDOM	3u
#define SEED_SWRITE	4u
#define SEED_SWAPPED	5u
#define N_STREAM	16
#define N_WRITER	8
#define N_COPY		4

static char *path_of(char *out, const char *kind, int i)
{
	snprintf(out, PATH_MAX, "%s/%s%d", T.dir, kind, i);
	return out;
}

__attribute__((format(printf, 2, 3)))
static bool wfail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->err[0]) {
		va_start(ap, fmt);
		vsnprintf(w->err, sizeof(w->err), fmt, ap);
		va_end(ap);
	}
	return false;
}

static void tick(struct worker *w)
{
	atomic_fetch_add_explicit(&w->progress, 1, memory_order_relaxed);
}

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Reads 'len' at the descriptor's cursor, which is at 'off', and checks them. */
static bool read_check(struct worker *w, int fd, uint32_t seed, uint64_t off, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);

	if (n != (ssize_t)len)
		return wfail(w, "read of fd %d at %llu: %zd (%s)", fd, (unsigned long long)off, n,
			    strerror(errno));
	if (!uot_pat_ok(seed, off, buf, len))
		return wfail(w, "read of fd %d at %llu: wrong data", fd, (unsigned long long)off);
	return true;
}

static bool pread_check(struct worker *w, int fd, uint32_t seed, uint64_t off, void *buf,
			size_t len)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	if (n != (ssize_t)len)
		return wfail(w, "pread of fd %d at %llu: %zd (%s)", fd, (unsigned long long)off, n,
			    strerror(errno));
	if (!uot_pat_ok(seed, off, buf, len))
		return wfail(w, "pread of fd %d at %llu: wrong data", fd, (unsigned long long)off);
	return true;
}

static void run_stream(struct worker *w, void *buf)
{
	static const size_t chunks[] = { 4 * KiB, 64 * KiB, 1 * MiB, 200 * KiB };
	size_t chunk = chunks[w->tid % 4];
	char path[PATH_MAX];
	uint64_t off = 0;
	int fd = open(path_of(path, "stream", w->index), O_RDONLY);

	if (fd < 0) {
		wfail(w, "open %s: %s", path, strerror(errno));
		return;
	}
	while (off < T.size) {
		size_t n = T.size - off < chunk ? (size_t)(T.size - off) : chunk;

		if (!read_check(w, fd, SEED_STREAM(w->index), off, buf, n))
			break;
		off += n;
		tick(w);
	}
	if (!w->err[0] && read(fd, buf, chunk) != 0)
		wfail(w, "no end of file after %llu bytes", (unsigned long long)off);
	if (close(fd) != 0)
		wfail(w, "close: %s", strerror(errno));
}

/* Small reads: many calls race with whatever the library does with the cursor. */
#define CURSOR_CHUNK	(4 * KiB)

static void run_shared_cursor(struct worker *w, void *buf)
{
	ssize_t n;
	off_t end;

	while ((n = read(T.shared_read_fd, buf, CURSOR_CHUNK)) > 0) {
		uint64_t off = uot_pat_where(SEED_SHARED, *(uint64_t *)buf);

		if (n != CURSOR_CHUNK || off % CURSOR_CHUNK || off >= 4 * T.size ||
		    !uot_pat_ok(SEED_SHARED, off, buf, CURSOR_CHUNK)) {
			wfail(w, "shared cursor: read %zd bytes claiming offset %llu", n,
			      (unsigned long long)off);
			return;
		}
		atomic_fetch_add(&T.cursor_hits[off / CURSOR_CHUNK], 1);
		tick(w);
	}
	if (n < 0)
		wfail(w, "shared cursor: read: %s", strerror(errno));
	/* End of file only at the end: the cursor cannot come back from there. */
	end = lseek(T.shared_read_fd, 0, SEEK_CUR);
	if (end != (off_t)(4 * T.size))
		wfail(w, "shared cursor: end of file seen with the cursor at %lld",
		      (long long)end);
}

static void run_random(struct worker *w, void *buf)
{
	uint64_t x = 0x1234567ULL * (uint64_t)(w->tid + 1), size = 2 * T.size;
	char path[PATH_MAX];
	unsigned i;
	int fd = w->tid % 2 ? T.random_fd : open(path_of(path, "random", 0), O_RDONLY);

	if (fd < 0) {
		wfail(w, "open %s: %s", path, strerror(errno));
		return;
	}
	for (i = 0; i < 20 * T.rounds; i++) {
		size_t len = 8 * (1 + next_rand(&x) % (8 * KiB));
		uint64_t off = 8 * (next_rand(&x) % ((size - len) / 8));

		if (!pread_check(w, fd, SEED_RANDOM, off, buf, len))
			break;
		tick(w);
	}
	if (fd != T.random_fd)
		close(fd);
}

/* The file's dirty bytes (cachestat, Linux 6.5), -1 if they cannot be told. */
static int64_t dirty_bytes(const char *path)
{
	struct { uint64_t off, len; } range = { 0, 0 };
	struct { uint64_t cache, dirty, writeback, evicted, recently_evicted; } cs;
	int fd = open(path, O_RDONLY);
	long r;

	if (fd < 0)
		return -1;
	r = syscall(451 /* cachestat */, fd, &range, &cs, 0);
	close(fd);
	return r == 0 ? (int64_t)(cs.dirty * (uint64_t)sysconf(_SC_PAGESIZE)) : -1;
}

static void run_writer(struct worker *w, void *buf)
{
	const size_t chunk = 256 * KiB;
	char path[PATH_MAX];
	uint64_t off;
	int fd = open(path_of(path, "written", w->index), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0) {
		wfail(w, "open %s: %s", path, strerror(errno));
		return;
	}
	for (off = 0; off < T.size; off += chunk) {
		uot_pat_fill(SEED_WRITE(w->index), off, buf, chunk);
		/* Half the writers write at the cursor, half at offsets. */
		if ((w->tid % 2 ? write(fd, buf, chunk) : pwrite(fd, buf, chunk, (off_t)off)) !=
		    (ssize_t)chunk) {
			wfail(w, "write at %llu: %s", (unsigned long long)off, strerror(errno));
			break;
		}
		tick(w);
	}
	/*
	 * The library drops written pages only once they are clean, and never
	 * waits for them below its budget: how much is clean at close depends
	 * on the disk and on what else the machine writes.  Half the writers
	 * make theirs clean first: their close must then drop them.  For the
	 * other half, the library must have sent every page to the disk by
	 * the end of close: none is left dirty.
	 */
	if (w->index % 2 && !w->err[0] && fdatasync(fd) != 0)
		wfail(w, "fdatasync: %s", strerror(errno));
	if (close(fd) != 0)
		wfail(w, "close: %s", strerror(errno));
	w->dirty_at_close = w->index % 2 ? -1 : dirty_bytes(path);
}

static void run_shared_writer(struct worker *w, void *buf)
{
	const size_t chunk = 256 * KiB;
	uint64_t off;

	for (off = (uint64_t)w->index * chunk; off < 4 * T.size; off += 4 * chunk) {
		uot_pat_fill(SEED_SWRITE, off, buf, chunk);
		if (pwrite(T.shared_write_fd, buf, chunk, (off_t)off) != (ssize_t)chunk) {
			wfail(w, "pwrite at %llu: %s", (unsigned long long)off, strerror(errno));
			return;
		}
		tick(w);
	}
}

static void run_copy(struct worker *w, void *buf)
{
	char src[PATH_MAX], dst[PATH_MAX];
	int in = open(path_of(src, "swapped", 0), O_RDONLY);
	int out = open(path_of(dst, "copy", w->index), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	uint64_t total = 0;
	ssize_t n;

	(void)buf;
	if (in < 0 || out < 0) {
		wfail(w, "open: %s", strerror(errno));
		goto out;
	}
	do {
		/*
		 * As cp asks copy_file_range; sendfile is asked less, as the
		 * kernel refuses a count that would overflow the offset at EOF.
		 */
		n = w->index % 2 ? sendfile(out, in, NULL, 1 << 30)
				 : copy_file_range(in, NULL, out, NULL, SSIZE_MAX, 0);
		if (n > 0)
			total += (uint64_t)n;
		tick(w);
	} while (n > 0);
	if (n < 0 || total != 2 * T.size)
		wfail(w, "%s copied %llu bytes of %llu (%s)", w->index % 2 ? "sendfile" :
		     "copy_file_range", (unsigned long long)total,
		     (unsigned long long)(2 * T.size), n < 0 ? strerror(errno) : "no error");
out:
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0)
		wfail(w, "close: %s", strerror(errno));
}

/*
 * Closed behind the library's back.  ThreadSanitizer cannot see such a
 * close either: it then takes the next thread to get the number for a race
 * on the old descriptor.  Under it (only) the close is made the usual way;
 * the plain and ASan runs keep the raw one.
 */
static long raw_close(int fd)
{
#ifdef __SANITIZE_THREAD__
	return close(fd);
#else
	return syscall(SYS_close, fd);
#endif
}

/* The descriptor is closed: any use says EBADF. */
static bool is_closed(int fd)
{
	return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

static bool churn_once(struct worker *w, unsigned round, void *buf, uint64_t *x)
{
	/* A band of high descriptor numbers of its own: no other thread closes them. */
	int hi = 4000 + w->tid * 8 + (int)(round % 4) * 2;
	char rnd[PATH_MAX], swp[PATH_MAX];
	uint64_t off, stream_len = 3 * 2 * MiB;
	int fd, d, p[2];
	FILE *fp;

	path_of(rnd, "random", 0);
	path_of(swp, "swapped", 0);
	fd = open(rnd, O_RDONLY);
	if (fd < 0)
		return wfail(w, "open %s: %s", rnd, strerror(errno));
	off = 8 * (next_rand(x) % ((2 * T.size - 64 * KiB) / 8));
	if (!pread_check(w, fd, SEED_RANDOM, off, buf, 64 * KiB))
		return false;
	/* dup shares the cursor, still at 0 after the pread. */
	d = dup(fd);
	if (d < 0 || !read_check(w, d, SEED_RANDOM, 0, buf, 64 * KiB))
		return wfail(w, "dup: %s", strerror(errno));
	if (dup2(d, hi) != hi || !read_check(w, hi, SEED_RANDOM, 64 * KiB, buf, 64 * KiB))
		return wfail(w, "dup2 onto %d: %s", hi, strerror(errno));
	/* A stream on another descriptor, then dup3 over it. */
	raw_close(d);
	d = open(swp, O_RDONLY);
	if (d < 0)
		return wfail(w, "open %s: %s", swp, strerror(errno));
	for (off = 0; off < stream_len; off += 256 * KiB)
		if (!read_check(w, d, SEED_SWAPPED, off, buf, 256 * KiB))
			return false;
	if (dup3(fd, d, O_CLOEXEC) != d || !(fcntl(d, F_GETFD) & FD_CLOEXEC))
		return wfail(w, "dup3 onto %d: %s", d, strerror(errno));
	/* d now shares fd's cursor: 128 KiB into the random file. */
	if (!read_check(w, d, SEED_RANDOM, 128 * KiB, buf, 64 * KiB))
		return false;
	tick(w);
	/* Closed by the raw system call, behind the library's back, then by close_range. */
	if (raw_close(d) != 0)
		return wfail(w, "raw close: %s", strerror(errno));
	if (dup2(fd, hi + 1) != hi + 1)
		return wfail(w, "dup2 onto %d: %s", hi + 1, strerror(errno));
	if (close_range((unsigned)hi, (unsigned)hi + 1, 0) != 0 || !is_closed(hi) ||
	    !is_closed(hi + 1))
		return wfail(w, "close_range %d..%d: %s", hi, hi + 1, strerror(errno));
	if (close(fd) != 0)
		return wfail(w, "close: %s", strerror(errno));
	/* stdio over the file the swappers work on. */
	fp = fopen(swp, "r");
	if (!fp || fread(buf, 1, 128 * KiB, fp) != 128 * KiB ||
	    !uot_pat_ok(SEED_SWAPPED, 0, buf, 128 * KiB))
		return wfail(w, "fopen/fread %s: %s", swp, strerror(errno));
	if (fclose(fp) != 0)
		return wfail(w, "fclose: %s", strerror(errno));
	/* A pipe: not a file, never a stream, data unchanged. */
	if (pipe(p) != 0)
		return wfail(w, "pipe: %s", strerror(errno));
	uot_pat_fill(SEED_RANDOM, 4096, buf, 4096);
	if (write(p[1], buf, 4096) != 4096 || read(p[0], (char *)buf + 8192, 4096) != 4096 ||
	    !uot_pat_ok(SEED_RANDOM, 4096, (char *)buf + 8192, 4096))
		return wfail(w, "pipe: data changed or %s", strerror(errno));
	close(p[0]);
	close(p[1]);
	tick(w);
	return true;
}

static void run_churn(struct worker *w, void *buf)
{
	uint64_t x = 0xabcdefULL * (uint64_t)(w->tid + 1);
	unsigned i;

	for (i = 0; i < T.rounds; i++)
		if (!churn_once(w, i, buf, &x))
			break;
}

static void run_swapped_reader(struct worker *w, void *buf)
{
	const size_t chunk = 256 * KiB;
	uint64_t off;
	unsigned pass;

	for (pass = 0; pass < 3; pass++) {
		for (off = 0; off < 2 * T.size; off += chunk) {
			if (!pread_check(w, T.swapped_fd, SEED_SWAPPED, off, buf, chunk))
				goto out;
			tick(w);
		}
	}
out:
	atomic_fetch_sub(&T.readers_left, 1);
}

static void run_swapper(struct worker *w, void *buf)
{
	char path[PATH_MAX];

	(void)buf;
	path_of(path, "swapped", 0);
	while (atomic_load(&T.readers_left) > 0) {
		int fd = open(path, O_RDONLY);

		if (fd < 0 || dup2(fd, T.swapped_fd) != T.swapped_fd) {
			wfail(w, "open/dup2: %s", strerror(errno));
			/* The readers must not wait for us. */
			break;
		}
		close(fd);
		tick(w);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	void *buf = aligned_alloc(4096, 2 * MiB);

	if (!buf) {
		wfail(w, "out of memory");
	} else {
		switch (w->role) {
		case STREAM: run_stream(w, buf); break;
		case SHARED_CURSOR: run_shared_cursor(w, buf); break;
		case RANDOM: run_random(w, buf); break;
		case WRITER: run_writer(w, buf); break;
		case SHARED_WRITER: run_shared_writer(w, buf); break;
		case COPY: run_copy(w, buf); break;
		case CHURN: run_churn(w, buf); break;
		case SWAPPED_READER: run_swapped_reader(w, buf); break;
		case SWAPPER: run_swapper(w, buf); break;
		}
	}
	free(buf);
	atomic_store(&w->done, 1);
	return NULL;
}

static const char *role_name(enum role r)
{
	static const char *const names[] = { "stream", "shared-cursor", "random", "writer",
					     "shared-writer", "copy", "churn", "swapped-reader",
					     "swapper" };
	return names[r];
}

static void assign_roles(void)
{
	static const struct { enum role role; int count; } plan[] = {
		{ STREAM, N_STREAM }, { SHARED_CURSOR, 8 }, { RANDOM, 12 }, { WRITER, N_WRITER },
		{ SHARED_WRITER, 4 }, { COPY, N_COPY }, { CHURN, 8 }, { SWAPPED_READER, 2 },
		{ SWAPPER, 2 },
	};
	size_t p;
	int tid = 0, i;

	for (p = 0; p < sizeof(plan) / sizeof(plan[0]); p++) {
		for (i = 0; i < plan[p].count; i++, tid++) {
			T.w[tid].tid = tid;
			T.w[tid].role = plan[p].role;
			T.w[tid].index = i;
		}
	}
	ck_assert_int_eq(tid, NTHREADS);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Returns once every worker is done; aborts the process (the test then
 * fails with a signal) if none made progress for 'stall_s' seconds.
 */
static void watchdog(double stall_s)
{
	uint64_t last = UINT64_MAX;
	double since = now_s();
	int i, left;

	for (;;) {
		uint64_t sum = 0;

		left = 0;
		for (i = 0; i < NTHREADS; i++) {
			sum += atomic_load(&T.w[i].progress);
			left += !atomic_load(&T.w[i].done);
		}
		if (!left)
			return;
		if (sum != last) {
			last = sum;
			since = now_s();
		} else if (now_s() - since > stall_s) {
			fprintf(stderr, "check_threads: no progress for %.0f s: a deadlock? "
				"stuck workers:\n", stall_s);
			for (i = 0; i < NTHREADS; i++)
				if (!atomic_load(&T.w[i].done))
					fprintf(stderr, "  thread %d (%s %d), progress %llu\n", i,
						role_name(T.w[i].role), T.w[i].index,
						(unsigned long long)atomic_load(&T.w[i].progress));
			abort();
		}
		usleep(100 * 1000);
	}
}

static void make_files(void)
{
	char path[PATH_MAX];
	int i;

	for (i = 0; i < N_STREAM; i++) {
		path_of(path, "stream", i);
		ck_assert_int_eq(uot_pat_make(path, SEED_STREAM(i), T.size), 0);
		ck_assert_int_eq(uot_make_cold(path), 0);
	}
	ck_assert_int_eq(uot_pat_make(path_of(path, "shared", 0), SEED_SHARED, 4 * T.size), 0);
	ck_assert_int_eq(uot_pat_make(path_of(path, "random", 0), SEED_RANDOM, 2 * T.size), 0);
	ck_assert_int_eq(uot_pat_make(path_of(path, "swapped", 0), SEED_SWAPPED, 2 * T.size), 0);
}

static void open_shared(void)
{
	char path[PATH_MAX];

	T.shared_read_fd = open(path_of(path, "shared", 0), O_RDONLY);
	T.random_fd = open(path_of(path, "random", 0), O_RDONLY);
	T.shared_write_fd = open(path_of(path, "swrite", 0), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	T.swapped_fd = open(path_of(path, "swapped", 0), O_RDONLY);
	ck_assert_int_ge(T.shared_read_fd, 0);
	ck_assert_int_ge(T.random_fd, 0);
	ck_assert_int_ge(T.shared_write_fd, 0);
	ck_assert_int_ge(T.swapped_fd, 0);
	T.cursor_hits = calloc(4 * T.size / CURSOR_CHUNK, sizeof(*T.cursor_hits));
	ck_assert_ptr_nonnull(T.cursor_hits);
	T.readers_left = 2;
}

START_TEST(test_library_is_preloaded)
{
	ck_assert_msg(uot_library_mapped(), "libuseonce.so is not mapped: the tests would test "
		      "libc alone");
}
END_TEST

START_TEST(test_64_threads)
{
	char path[PATH_MAX];
	double start, secs;
	uint64_t chunks = 4 * T.size / CURSOR_CHUNK, i, streamed_max = 0, written_max = 0;
	uint64_t dirty_max = 0;
	int t, errors = 0;

	assign_roles();
	make_files();
	open_shared();
	start = now_s();
	for (t = 0; t < NTHREADS; t++)
		ck_assert_int_eq(pthread_create(&T.w[t].thread, NULL, worker_main, &T.w[t]), 0);
	watchdog(getenv("UO_SAN_RUN") ? 120.0 : 30.0);
	for (t = 0; t < NTHREADS; t++)
		pthread_join(T.w[t].thread, NULL);
	secs = now_s() - start;
	for (t = 0; t < NTHREADS; t++) {
		if (T.w[t].err[0]) {
			fprintf(stderr, "check_threads: thread %d (%s %d): %s\n", t,
				role_name(T.w[t].role), T.w[t].index, T.w[t].err);
			errors++;
		}
	}
	ck_assert_msg(errors == 0, "%d threads saw wrong results (above)", errors);

	/* Each 4 KiB of the shared-cursor file was read exactly once, by someone. */
	for (i = 0; i < chunks; i++)
		ck_assert_msg(atomic_load(&T.cursor_hits[i]) == 1,
			      "shared cursor: chunk %llu read %u times", (unsigned long long)i,
			      atomic_load(&T.cursor_hits[i]));
	/* The streams were dropped (measured before the files are read back to check them). */
	for (t = 0; t < N_STREAM; t++) {
		int64_t r = uot_resident(path_of(path, "stream", t), NULL);

		if (r > (int64_t)T.size / 4)
			fprintf(stderr, "check_threads: %s: %.1f MiB cached after\n", path,
				uot_mib((uint64_t)r));
		if (r > (int64_t)streamed_max)
			streamed_max = (uint64_t)r;
	}
	for (t = 0; t < NTHREADS; t++) {
		const struct worker *w = &T.w[t];

		if (w->role == WRITER && w->dirty_at_close > 0)
			dirty_max = (uint64_t)w->dirty_at_close > dirty_max ?
				    (uint64_t)w->dirty_at_close : dirty_max;
	}
	/* Only the writers that made their data clean: the others' is the disk's pace. */
	for (t = 1; t < N_WRITER; t += 2) {
		int64_t r = uot_resident(path_of(path, "written", t), NULL);

		if (r > (int64_t)T.size / 4)
			fprintf(stderr, "check_threads: %s: %.1f MiB cached after\n", path,
				uot_mib((uint64_t)r));
		if (r > (int64_t)written_max)
			written_max = (uint64_t)r;
	}
	printf("check_threads: %d threads, %.0f MiB per stream, %.1f s; most left cached: "
	       "%.1f MiB of a read stream, %.1f MiB of a written one made clean; most left "
	       "dirty at close: %.1f MiB\n", NTHREADS, uot_mib(T.size), secs,
	       uot_mib(streamed_max), uot_mib(written_max), uot_mib(dirty_max));
	fflush(stdout);
	ck_assert_msg(streamed_max <= T.size / 4, "a read stream left %.1f MiB of %.0f cached",
		      uot_mib(streamed_max), uot_mib(T.size));
	ck_assert_msg(written_max <= T.size / 4, "a written stream left %.1f MiB of %.0f cached",
		      uot_mib(written_max), uot_mib(T.size));
	ck_assert_msg(dirty_max <= T.size / 4, "a written stream left %.1f MiB of %.0f dirty "
		      "after close", uot_mib(dirty_max), uot_mib(T.size));

	/* What was written, by one thread or four through one descriptor, is right. */
	ck_assert_int_eq(close(T.shared_write_fd), 0);
	ck_assert_msg(uot_pat_check_file(path_of(path, "swrite", 0), SEED_SWRITE, 4 * T.size),
		      "the file written by 4 threads through one descriptor is wrong");
	for (t = 0; t < N_WRITER; t++)
		ck_assert_msg(uot_pat_check_file(path_of(path, "written", t), SEED_WRITE(t),
						 T.size), "%s is wrong", path);
	for (t = 0; t < N_COPY; t++)
		ck_assert_msg(uot_pat_check_file(path_of(path, "copy", t), SEED_SWAPPED,
						 2 * T.size), "%s is wrong", path);
}
END_TEST

int main(int argc, char **argv)
{
	static const char *const env[] = { THRESHOLD, WINDOW, NULL };
	Suite *s;
	TCase *tc;
	uint64_t mib;
	bool tsan;

	(void)argc;
	if (!getenv(CHILD_MARK))
		uot_reexec_preloaded(argv, CHILD_MARK, env);
	/* ThreadSanitizer makes every memory access and system call cost more. */
	tsan = getenv("UO_SAN_RUN") && !strcmp(getenv("UO_SAN_RUN"), "tsan");
	mib = uot_env_mib("check_threads", "UO_THREADS_MIB", tsan ? 8 : 16, 8);
	T.size = mib * MiB;
	T.rounds = tsan ? 12 : 40;
	uot_suite_begin("threads", NULL);
	if (!uot_need_scratch()) {
		fprintf(stderr, "check_threads: %s\n", uot_skip_reason());
		return EXIT_FAILURE;
	}
	snprintf(T.dir, sizeof(T.dir), "%s", uot_scratch());

	s = suite_create("threads");
	tc = tcase_create("preloaded");
	tcase_add_test(tc, test_library_is_preloaded);
	suite_add_tcase(s, tc);
	tc = tcase_create("64_threads");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_64_threads);
	suite_add_tcase(s, tc);
	return uot_check_run(s, false);
}
