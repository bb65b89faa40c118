/*
 * The life of a process under the preloaded library: fork (a slot held by
 * another thread at fork time, a stream continued by the child, a fork
 * after the library was unloaded), vfork and posix_spawn children, exec (an
 * inherited stream judged afresh by the new image), descriptors replaced
 * by dup2/dup3, closed by close_range or by the raw system call and reused
 * for another file, signal handlers doing I/O on the descriptor the
 * interrupted code is reading, and descriptors up to the limit of 1048576
 * with bounded memory.
 *
 * The program re-executes itself with the library preloaded (streams of 4
 * MiB advised every 2 MiB, trace lines to descriptor TRACE_FD, the write
 * end of a pipe whose read end the tests hold as TRACE_IN), and again as
 * the new image of its exec tests.  The library writes to TRACE_FD only
 * while it names the pipe it named at start, so the tests never replace it:
 * they drain the pipe.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "uot_check.h"
#include "uot_pattern.h"

#define CHILD_MARK	"UO_CHECK_LIFE_CHILD"
#define KiB		(1ULL << 10)
#define MiB		(1ULL << 20)
#define TRACE_FD	900
#define TRACE_IN	901
#define FD_LIMIT	1048576

extern char **environ;

static struct {
	char dir[PATH_MAX - 64];
	char self[PATH_MAX];
} L;

/* Files: name, pattern seed, size in MiB; made once, cold before each use. */
static char *path_of(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", L.dir, name);
	return out;
}

static void make(const char *name, uint32_t seed, uint64_t mib)
{
	char path[PATH_MAX];

	ck_assert_msg(uot_pat_make(path_of(path, name), seed, mib * MiB) == 0, "cannot make %s: %s",
		      path, strerror(errno));
	ck_assert_int_eq(uot_make_cold(path), 0);
}

/*
 * Bytes of [from, to) of the file in the page cache (mincore: we are root
 * or own it); UINT64_MAX on error.  No Check assertion: the exec tests' new
 * images, which are not running a test, use it too.
 */
static uint64_t resident_raw(const char *path, uint64_t from, uint64_t to)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE), span = 256 * page;
	unsigned char vec[256];
	uint64_t pages = 0, off;
	bool failed = false;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return UINT64_MAX;
	for (off = from; off < to && !failed; off += span) {
		size_t len = to - off < span ? (size_t)(to - off) : span;
		void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
		size_t i;

		if (map == MAP_FAILED) {
			failed = true;
			break;
		}
		failed = mincore(map, len, vec) != 0;
		for (i = 0; !failed && i < (len + page - 1) / page; i++)
			pages += vec[i] & 1;
		munmap(map, len);
	}
	syscall(SYS_close, fd);
	return failed ? UINT64_MAX : pages * page;
}

static uint64_t resident_range(const char *path, uint64_t from, uint64_t to)
{
	uint64_t r = resident_raw(path, from, to);

	ck_assert_msg(r != UINT64_MAX, "cannot measure what of %s is cached", path);
	return r;
}

/* Reads [off, end) at the cursor in 'chunk's and checks every byte; false on a mismatch. */
static bool read_span(int fd, uint32_t seed, uint64_t off, uint64_t end, size_t chunk)
{
	static char buf[1 << 20];

	while (off < end) {
		size_t n = end - off < chunk ? (size_t)(end - off) : chunk;

		if (read(fd, buf, n) != (ssize_t)n || !uot_pat_ok(seed, off, buf, n))
			return false;
		off += n;
	}
	return true;
}

static bool pread_span(int fd, uint32_t seed, uint64_t off, uint64_t end, size_t chunk)
{
	static char buf[1 << 20];

	while (off < end) {
		size_t n = end - off < chunk ? (size_t)(end - off) : chunk;

		if (pread(fd, buf, n, (off_t)off) != (ssize_t)n || !uot_pat_ok(seed, off, buf, n))
			return false;
		off += n;
	}
	return true;
}

/*
 * What the library traced since the last call: the pipe drained into out
 * (NULL: thrown away).  Raw system calls: the descriptors our hooks see are
 * the ones under test.
 */
static void trace_take(char *out, size_t size)
{
	char junk[4096];
	size_t len = 0;
	long n;

	for (;;) {
		if (out && len + 1 < size)
			n = syscall(SYS_read, TRACE_IN, out + len, size - 1 - len);
		else
			n = syscall(SYS_read, TRACE_IN, junk, sizeof(junk));
		if (n <= 0)
			break;
		if (out && len + 1 < size)
			len += (size_t)n;
	}
	if (out)
		out[len] = '\0';
}

/*
 * TRACE_FD and TRACE_IN, before the library is loaded: a pipe big enough
 * for a test's lines, its read end non-blocking.
 */
static void trace_pipe(void)
{
	int p[2];

	if (pipe(p) != 0 || dup2(p[1], TRACE_FD) != TRACE_FD || dup2(p[0], TRACE_IN) != TRACE_IN) {
		perror("check_life: trace pipe");
		exit(EXIT_FAILURE);
	}
	close(p[0]);
	close(p[1]);
	fcntl(TRACE_FD, F_SETPIPE_SZ, 1 << 20);
	fcntl(TRACE_IN, F_SETFL, fcntl(TRACE_IN, F_GETFL) | O_NONBLOCK);
}

static bool exited_ok(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- fork ---- */

struct holder {
	int fd;
	uint32_t seed;
	_Atomic int tid;
	bool ok;
};

/*
 * Preads a stream (leaving the cursor to the child) until the library,
 * tracing it, blocks on the full pipe with the slot held.
 */
static void *hold_slot(void *arg)
{
	struct holder *h = arg;

	atomic_store(&h->tid, (int)syscall(SYS_gettid));
	h->ok = pread_span(h->fd, h->seed, 0, 6 * MiB, 256 * KiB);
	return NULL;
}

/* Waits (10 s at most) until the thread is blocked in write(2). */
static bool blocked_in_write(_Atomic int *tid)
{
	char path[64], text[64];
	int i;

	for (i = 0; i < 1000; i++, usleep(10 * 1000)) {
		int fd;
		long n;

		if (!atomic_load(tid))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", atomic_load(tid));
		fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? syscall(SYS_read, fd, text, sizeof(text) - 1) : -1;
		if (fd >= 0)
			syscall(SYS_close, fd);
		text[n > 0 ? n : 0] = '\0';
		if (atoi(text) == SYS_write && strchr(text, ' ')) {
			usleep(100 * 1000);	/* and stays there */
			return true;
		}
	}
	return false;
}

/*
 * Another thread's hook holds the descriptor's slot when the process forks
 * (it is blocked writing a trace line to a full pipe, slot held).  The
 * child continues the stream through the same descriptor: it must read the
 * right data, and its library must guard the stream (drop it) rather than
 * find the slot locked forever.  Then the parent's thread finishes.
 */
START_TEST(test_fork_while_a_slot_is_held)
{
	char path[PATH_MAX];
	struct holder h = { .seed = 11 };
	pthread_t t;
	int status, fl;
	pid_t pid;
	char junk[65536];

	make("fork", 11, 32);
	h.fd = open(path_of(path, "fork"), O_RDONLY);
	ck_assert_int_ge(h.fd, 0);
	/* Fill the library's trace pipe through our own end of it. */
	trace_take(NULL, 0);
	fl = fcntl(TRACE_FD, F_GETFL);
	ck_assert_int_eq(fcntl(TRACE_FD, F_SETFL, fl | O_NONBLOCK), 0);
	while (write(TRACE_FD, junk, sizeof(junk)) > 0)
		;
	ck_assert_int_eq(fcntl(TRACE_FD, F_SETFL, fl), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, hold_slot, &h), 0);
	/* The stream is promoted after 4 MiB; its trace line then blocks in write(2). */
	ck_assert_msg(blocked_in_write(&h.tid), "the library never blocked on its trace line: "
		      "this test cannot hold a slot");

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* The child's own trace lines would block too: they may be lost instead. */
		fcntl(TRACE_FD, F_SETFL, fl | O_NONBLOCK);
		/* The same descriptor, at its cursor, still at 0: a stream the child must drop. */
		if (!read_span(h.fd, 11, 0, 32 * MiB, 256 * KiB))
			_exit(2);
		if (resident_raw(path, 8 * MiB, 28 * MiB) > 2 * MiB)
			_exit(3);
		_exit(close(h.fd) == 0 ? 0 : 4);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	/* Unblock the parent's thread: drain the pipe until it has finished. */
	while (pthread_tryjoin_np(t, NULL) != 0) {
		trace_take(NULL, 0);
		usleep(1000);
	}
	trace_take(NULL, 0);
	ck_assert_msg(h.ok, "the parent's thread read wrong data");
	ck_assert_msg(WIFEXITED(status), "the child died: signal %d", WTERMSIG(status));
	ck_assert_msg(WEXITSTATUS(status) != 2, "the child read wrong data");
	ck_assert_msg(WEXITSTATUS(status) != 3, "the child's stream was not dropped: its slot "
		      "stayed locked from the parent's thread");
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	close(h.fd);
}
END_TEST

/* A stream in the parent goes on in a forked child, which ends it. */
START_TEST(test_fork_child_continues_a_stream)
{
	char path[PATH_MAX];
	int fd, status;
	pid_t pid;

	make("fork2", 12, 32);
	fd = open(path_of(path, "fork2"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert(read_span(fd, 12, 0, 12 * MiB, MiB));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (!read_span(fd, 12, 12 * MiB, 32 * MiB, MiB))
			_exit(2);
		_exit(close(fd) == 0 ? 0 : 3);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(exited_ok(status), "the child: status %#x (2: wrong data)", status);
	/* The parent's descriptor shares the cursor: at the end now. */
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 32 * MiB);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_msg(resident_range(path, 0, 32 * MiB) <= 4 * MiB,
		      "%.1f MiB of the stream stayed cached",
		      uot_mib(resident_range(path, 0, 32 * MiB)));
}
END_TEST

/*
 * The image of test_fork_after_dlclose, run without the preload: it loads
 * the library with dlopen, has a hook work, unloads it, then forks.  The
 * library must leave nothing behind that a later fork calls (a fork handler
 * would jump into unmapped code: the child dies of SIGSEGV).  Exit status:
 * the child's own 7; 2 to 4 the setup failed; 64 + a signal it died of.
 */
static int dlclose_fork_image(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	int (*hooked_close)(int);
	int fd, status;
	pid_t pid;

	if (!h)
		return 2;
	hooked_close = (int (*)(int))dlsym(h, "close");
	fd = open("/proc/self/exe", O_RDONLY);
	if (!hooked_close || fd < 0 || hooked_close(fd) != 0)
		return 3;
	if (dlclose(h) != 0 || dlopen(lib, RTLD_NOW | RTLD_NOLOAD))
		return 4;
	pid = fork();
	if (pid < 0)
		return 5;
	if (pid == 0)
		_exit(7);
	if (waitpid(pid, &status, 0) != pid)
		return 6;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 64 + WTERMSIG(status);
}

START_TEST(test_fork_after_dlclose)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		unsetenv("LD_PRELOAD");
		execl(L.self, L.self, "--dlclose-fork", uot_library(), (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "the image died: signal %d", WTERMSIG(status));
	ck_assert_msg(WEXITSTATUS(status) != 4, "the library stayed loaded after dlclose");
	ck_assert_msg(WEXITSTATUS(status) < 64,
		      "a child forked after dlclose of the library died of signal %d",
		      WEXITSTATUS(status) - 64);
	ck_assert_msg(WEXITSTATUS(status) == 7, "the dlopen image failed (exit %d)",
		      WEXITSTATUS(status));
}
END_TEST

/* ---- vfork and posix_spawn ---- */

/*
 * A vfork child shares the parent's memory, slots included: its close and
 * dup2 run our hooks there.  They must leave the parent's stream working
 * (no slot left locked, nothing corrupted) and its data right.
 */
START_TEST(test_vfork_child_hooks)
{
	char path[PATH_MAX], other[PATH_MAX];
	int fd, fd2, status;
	pid_t pid;

	make("vfork", 13, 32);
	make("vfork-other", 14, 8);
	fd = open(path_of(path, "vfork"), O_RDONLY);
	fd2 = open(path_of(other, "vfork-other"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(fd2, 0);
	ck_assert(read_span(fd, 13, 0, 12 * MiB, MiB));
	pid = vfork();
	if (pid == 0) {
		/* Only what a vfork child may do: hooks, then exec. */
		dup2(fd2, fd);
		close(fd2);
		close(fd);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(exited_ok(status));
	ck_assert_msg(read_span(fd, 13, 12 * MiB, 32 * MiB, MiB), "the parent read wrong data");
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(close(fd2), 0);
	ck_assert_msg(resident_range(path, 0, 32 * MiB) <= 4 * MiB,
		      "the parent's stream was not dropped after the vfork child's hooks: "
		      "%.1f MiB cached", uot_mib(resident_range(path, 0, 32 * MiB)));
}
END_TEST

/*
 * A program that runs a command every few MiB of a copy, as CPython's
 * subprocess does: vfork, then the child closes its descriptors from 3 up
 * (close_range, closefrom or one by one) or replaces them, and execs or
 * exits.  Those hooks run in the child on our memory, but end only the
 * child's copies: the parent's stream goes on and must be dropped behind.
 * With its slot forgotten at every command (one every 2 MiB, under the 4
 * MiB threshold), it never became a stream again and stayed cached whole.
 */
enum vfork_how { VF_CLOSE, VF_CLOSE_RANGE, VF_CLOSEFROM, VF_DUP2, N_VFORK };

START_TEST(test_vfork_child_closes_leave_the_stream)
{
	static const char *const names[] = { "close", "close_range", "closefrom", "dup2" };
	char path[PATH_MAX];
	uint64_t off, cached;
	int fd, null, status;
	pid_t pid;

	make("vfork-closes", 25, 32);
	fd = open(path_of(path, "vfork-closes"), O_RDONLY);
	null = open("/dev/null", O_RDONLY);
	ck_assert_int_ge(fd, 3);
	ck_assert_int_ge(null, 3);
	for (off = 0; off < 32 * MiB; off += 2 * MiB) {
		ck_assert(read_span(fd, 25, off, off + 2 * MiB, MiB));
		pid = vfork();
		if (pid == 0) {
			switch ((enum vfork_how)_i) {
			case VF_CLOSE:
				close(fd);
				close(null);
				break;
			case VF_CLOSE_RANGE:
				close_range(3, ~0U, 0);
				break;
			case VF_CLOSEFROM:
				closefrom(3);
				break;
			default:
				dup2(null, fd);
				break;
			}
			/* Every other command execs, the others only exit. */
			if (off / (2 * MiB) % 2)
				execl("/bin/true", "true", (char *)NULL);
			_exit(0);
		}
		ck_assert_int_gt(pid, 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(exited_ok(status));
	}
	cached = resident_range(path, 0, 32 * MiB);
	ck_assert_int_eq(close(fd), 0);
	ck_assert_int_eq(close(null), 0);
	printf("check_life: vfork child's %s every 2 MiB: %.1f of 32 MiB left cached\n",
	       names[_i], uot_mib(cached));
	ck_assert_msg(cached <= 8 * MiB, "a vfork child's %s every 2 MiB kept the parent's stream "
		      "from being dropped: %.1f of 32 MiB cached", names[_i], uot_mib(cached));
}
END_TEST

/*
 * The same from CPython, the program the fault was found with: a file read
 * in 1 MiB chunks, subprocess.run(['true']) every 2 MiB.
 */
START_TEST(test_vfork_python_subprocess)
{
	char path[PATH_MAX], cmd[2 * PATH_MAX];
	uint64_t cached;

	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		printf("check_life: python subprocess: skipped: python3 is missing\n");
		return;
	}
	make("vfork-python", 26, 32);
	path_of(path, "vfork-python");
	snprintf(cmd, sizeof(cmd), "python3 -c '\n"
		 "import subprocess, sys\n"
		 "with open(sys.argv[1], \"rb\", buffering=0) as f:\n"
		 "    n = 0\n"
		 "    while f.read(1 << 20):\n"
		 "        n += 1\n"
		 "        if n %% 2 == 0:\n"
		 "            subprocess.run([\"true\"], check=True)\n"
		 "    print(\"python3 read\", n, \"MiB\")\n"
		 "' '%s'", path);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
	cached = resident_range(path, 0, 32 * MiB);
	printf("check_life: python subprocess every 2 MiB: %.1f of 32 MiB left cached\n",
	       uot_mib(cached));
	ck_assert_msg(cached <= 8 * MiB, "python3 running a command every 2 MiB kept its stream "
		      "from being dropped: %.1f of 32 MiB cached", uot_mib(cached));
}
END_TEST

/*
 * The image of test_fork_child_without_wipe: runs a command with
 * madvise(MADV_WIPEONFORK) refused (EINVAL), as kernels before 4.14 and
 * some seccomp sandboxes do.  125: the filter could not be set.
 */
static int nowipe_image(char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_madvise, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_WIPEONFORK, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return 125;
	execvp(argv[0], argv);
	return 127;
}

/*
 * The other image of test_fork_child_without_wipe: vforks once (through
 * the vfork hook), then forks a child that reads 'path' whole and closes it.
 */
static int vfork_then_fork_image(const char *path)
{
	static char buf[1 << 20];
	int status, fd;
	pid_t pid = vfork();

	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 2;
	pid = fork();
	if (pid == 0) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(3);
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		_exit(close(fd) == 0 ? 0 : 4);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 2;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
}

/*
 * Where memory is not wiped on fork, a forked child of a process that
 * vforked finds its parent's pid in the owner's page: it must not take
 * itself for a vfork child (its closes ignored, its stream's tail kept).
 * 60 MiB at the default window of 8: a tail of 4 is left for the close.
 */
START_TEST(test_fork_child_without_wipe)
{
	char path[PATH_MAX], cmd[4 * PATH_MAX];
	uint64_t cached;
	int rc;

	make("nowipe", 27, 60);
	path_of(path, "nowipe");
	snprintf(cmd, sizeof(cmd), "env -u USEONCE_THRESHOLD -u USEONCE_WINDOW -u USEONCE_TRACE "
		 "USEONCE_REUSE=0 '%s' --nowipe '%s' --vfork-then-fork '%s'", L.self, L.self, path);
	rc = system(cmd);
	if (WIFEXITED(rc) && WEXITSTATUS(rc) == 125) {
		printf("check_life: fork without wipe: skipped: no seccomp filter here\n");
		return;
	}
	ck_assert_msg(rc == 0, "%s: status %#x", cmd, rc);
	cached = resident_range(path, 0, 60 * MiB);
	printf("check_life: fork without wipe, child streams 60 MiB: %.1f MiB left cached\n",
	       uot_mib(cached));
	ck_assert_msg(cached <= MiB, "the forked child took itself for a vfork child: %.1f of "
		      "60 MiB left cached", uot_mib(cached));
}
END_TEST

/*
 * The image of test_closes_ask_no_pid: 'n' times, a file opened, read and
 * closed, in a process that never vforks.
 */
static int close_many_image(const char *path, int n)
{
	char buf[4096];
	int fd;

	while (n--) {
		fd = open(path, O_RDONLY);
		if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0 || close(fd) != 0)
			return 1;
	}
	return 0;
}

/*
 * Whether a vfork child shares the table is asked of the kernel (getpid)
 * only in a process that has called vfork: a program that reads many
 * small files and never runs a command (tar c, cp -r) pays no system call
 * per close for it.  Where vfork is not hooked, every close asks.
 */
START_TEST(test_closes_ask_no_pid)
{
	char out[PATH_MAX], cmd[4 * PATH_MAX], line[512];
	int calls = 0;
	FILE *f;

#if !defined(__x86_64__)
	printf("check_life: getpid per close: skipped: vfork is hooked on x86-64 only\n");
	return;
#endif
	if (system("strace -f -o /dev/null true >/dev/null 2>&1") != 0) {
		printf("check_life: getpid per close: skipped: strace is missing or cannot trace\n");
		return;
	}
	path_of(out, "getpid.out");
	snprintf(cmd, sizeof(cmd), "strace -f -qq -e trace=getpid -o '%s' '%s' --close-many '%s' "
		 "200 >/dev/null 2>&1", out, L.self, L.self);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
	f = fopen(out, "r");
	ck_assert(f != NULL);
	while (fgets(line, sizeof(line), f))
		calls += strstr(line, "getpid(") != NULL;
	fclose(f);
	unlink(out);
	printf("check_life: 200 files read and closed, no vfork: %d getpid calls\n", calls);
	ck_assert_msg(calls < 20, "200 closes in a process that never vforked made %d getpid "
		      "calls", calls);
}
END_TEST

/*
 * posix_spawn with file actions closing and replacing a stream descriptor:
 * libc's child runs its own internal calls, never our hooks.  Seen with
 * strace -f: no system call the library makes (fadvise, statx, lseek,
 * fstatfs, fcntl, cachestat, sync_file_range, mmap) between the child's
 * birth and its execve.
 */
START_TEST(test_posix_spawn_child_runs_no_hook)
{
	char path[PATH_MAX], out[PATH_MAX], cmd[3 * PATH_MAX], text[65536];
	const char *argv[] = { "true", NULL };
	posix_spawn_file_actions_t fa;
	int fd, n = 0, status;
	pid_t pid;

	if (getenv("UO_MODE_SPAWN")) {
		/* Inside strace: a stream, then a spawned child whose file actions touch it. */
		fd = open(path_of(path, "spawn"), O_RDONLY);
		ck_assert(read_span(fd, 15, 0, 12 * MiB, MiB));
		ck_assert_int_eq(posix_spawn_file_actions_init(&fa), 0);
		posix_spawn_file_actions_adddup2(&fa, fd, 7);
		posix_spawn_file_actions_addclose(&fa, fd);
		ck_assert_int_eq(posix_spawnp(&pid, "true", &fa, NULL, (char **)argv, environ), 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(exited_ok(status));
		exit(0);
	}
	if (system("command -v strace >/dev/null 2>&1") != 0) {
		printf("check_life: posix_spawn: skipped: strace is missing\n");
		return;
	}
	if (system("strace -f -o /dev/null true >/dev/null 2>&1") != 0) {
		printf("check_life: posix_spawn: skipped: strace cannot trace here (ptrace refused)\n");
		return;
	}
	make("spawn", 15, 16);
	path_of(out, "strace.out");
	snprintf(cmd, sizeof(cmd), "UO_MODE_SPAWN=1 CK_RUN_CASE=posix_spawn CK_FORK=no "
		 "strace -f -qq -o '%s' '%s' >/dev/null 2>&1", out, L.self);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
	/* The library did run in the parent: the trace must show it at work. */
	{
		int tfd = (int)syscall(SYS_openat, AT_FDCWD, out, O_RDONLY);
		long got = syscall(SYS_read, tfd, text, sizeof(text) - 1);
		char *line, *save;
		bool spawned = false;
		int parent = 0, done = 0;

		syscall(SYS_close, tfd);
		ck_assert_int_gt(got, 0);
		text[got] = '\0';
		ck_assert_msg(strstr(text, "fadvise64("), "strace saw no fadvise64: the library "
			      "did not guard the stream, this test cannot tell");
		/* The first line is the parent's; another pid is the child, until its execve. */
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			int who = atoi(line);

			if (!parent)
				parent = who;
			if (who == parent || who == done)
				continue;
			spawned = true;
			if (strstr(line, "execve(")) {
				done = who;
				continue;
			}
			n++;
			ck_assert_msg(!strstr(line, "fadvise64(") && !strstr(line, "statx(") &&
				      !strstr(line, "lseek(") && !strstr(line, "fstatfs(") &&
				      !strstr(line, "fcntl(") && !strstr(line, "cachestat(") &&
				      !strstr(line, "sync_file_range(") && !strstr(line, "mmap("),
				      "the spawned child ran a hook's system call: %s", line);
		}
		ck_assert_msg(spawned, "strace saw no child being spawned");
	}
	printf("check_life: posix_spawn: %d system calls in the child before execve, none the "
	       "library's\n", n);
}
END_TEST

/* ---- exec ---- */

/*
 * The new image of test_exec_*: 'fd' was a stream of file seed 16 in the
 * image before, inherited at 'at'; 'cloexec_fd' was opened O_CLOEXEC.
 * Exit status: 0 right, else which check failed.
 */
static int exec_image(int fd, uint64_t at, int cloexec_fd, const char *path)
{
	if (!uot_library_mapped())
		return 10;
	if (fcntl(cloexec_fd, F_GETFD) != -1 || errno != EBADF)
		return 11;
	/* 6 MiB: less than this image's threshold (16M, from its environment). */
	if (!read_span(fd, 16, at, at + 6 * MiB, MiB))
		return 12;
	/* Judged afresh: not a stream yet, so nothing was dropped. */
	if (resident_raw(path, at, at + 6 * MiB) < 5 * MiB)
		return 13;
	/* The rest makes it a stream of this image, which drops it. */
	if (!read_span(fd, 16, at + 6 * MiB, 48 * MiB, MiB) || close(fd) != 0)
		return 14;
	if (resident_raw(path, at, 48 * MiB) > 4 * MiB)
		return 15;
	return 0;
}

START_TEST(test_exec_judges_inherited_stream_afresh)
{
	static const char *const why[] = {
		[10] = "the library is not loaded in the new image",
		[11] = "an O_CLOEXEC descriptor survived exec",
		[12] = "the new image read wrong data",
		[13] = "the new image dropped a descriptor it had not yet seen stream: "
		       "state leaked through exec",
		[14] = "the new image failed to read the rest",
		[15] = "the new image did not guard the stream",
	};
	char path[PATH_MAX], cx[PATH_MAX], a_fd[16], a_at[16], a_cx[16];
	int fd, cfd, status;
	pid_t pid;

	make("exec", 16, 48);
	make("exec-cloexec", 17, 8);
	fd = open(path_of(path, "exec"), O_RDONLY);
	cfd = open(path_of(cx, "exec-cloexec"), O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(cfd, 0);
	/* A stream here: past 4 MiB, advised, its slot says "stream at 12 MiB". */
	ck_assert(read_span(fd, 16, 0, 12 * MiB, MiB));
	ck_assert(read_span(cfd, 17, 0, 8 * MiB, MiB));
	ck_assert_msg(resident_range(path, 0, 8 * MiB) <= 2 * MiB,
		      "the stream was not a stream before exec");
	snprintf(a_fd, sizeof(a_fd), "%d", fd);
	snprintf(a_at, sizeof(a_at), "%d", 12 << 20);
	snprintf(a_cx, sizeof(a_cx), "%d", cfd);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setenv("USEONCE_THRESHOLD", "16M", 1);
		execl(L.self, L.self, "--exec-image", a_fd, a_at, a_cx, path, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "the new image died: signal %d", WTERMSIG(status));
	ck_assert_msg(WEXITSTATUS(status) == 0, "%s (exit %d)",
		      WEXITSTATUS(status) < 16 && why[WEXITSTATUS(status)] ?
		      why[WEXITSTATUS(status)] : "exec failed", WEXITSTATUS(status));
	close(fd);
	close(cfd);
}
END_TEST

/* ---- a descriptor replaced under a stream ---- */

enum replace_how { BY_DUP2, BY_DUP3, BY_CLOSE_RANGE, BY_CLOSEFROM, BY_RAW_CLOSE, N_REPLACE };

/*
 * A stream of one file through descriptor X, read with pread up to 16 MiB;
 * X then names another, cold file (dup2, dup3 O_CLOEXEC, close_range then
 * open, closefrom then open, the raw close system call then open), read
 * with pread from 16 MiB on, exactly where the old stream would go on.  Its pages must stay: a
 * stale slot would take them for the old stream and drop them.  The hooked
 * ways forget the slot at once; the raw close is caught by the library's
 * identity check when it is about to advise (traced as "forgotten").
 */
START_TEST(test_replaced_descriptor_starts_afresh)
{
	static const char *const names[] = { "dup2", "dup3", "close_range", "closefrom",
					     "raw close" };
	char a[PATH_MAX], b[PATH_MAX], text[16384], needle[64];
	enum replace_how how = (enum replace_how)_i;
	uint64_t kept;
	int x, nb;

	make("replace-a", 18, 32);
	make("replace-b", 19, 32);
	trace_take(NULL, 0);
	x = open(path_of(a, "replace-a"), O_RDONLY);
	ck_assert_int_ge(x, 0);
	ck_assert(pread_span(x, 18, 0, 16 * MiB, 256 * KiB));
	ck_assert_msg(resident_range(a, 0, 12 * MiB) <= 2 * MiB, "no stream to replace");
	switch (how) {
	case BY_DUP2:
	case BY_DUP3:
		nb = open(path_of(b, "replace-b"), O_RDONLY);
		ck_assert_int_ge(nb, 0);
		ck_assert_int_eq(how == BY_DUP2 ? dup2(nb, x) : dup3(nb, x, O_CLOEXEC), x);
		close(nb);
		break;
	case BY_CLOSE_RANGE:
	case BY_CLOSEFROM:
	case BY_RAW_CLOSE:
		if (how == BY_CLOSE_RANGE) {
			ck_assert_int_eq(close_range((unsigned)x, (unsigned)x, 0), 0);
		} else if (how == BY_CLOSEFROM) {
			/* Everything from x up, maybe the library's trace too. */
			closefrom(x);
		} else {
			ck_assert_int_eq(syscall(SYS_close, x), 0);
		}
		nb = open(path_of(b, "replace-b"), O_RDONLY);
		ck_assert_int_eq(nb, x);
		break;
	default:
		ck_abort();
	}
	/* 3 MiB more: under the threshold for a new stream of this file. */
	ck_assert(pread_span(x, 19, 16 * MiB, 19 * MiB, 256 * KiB));
	kept = resident_range(b, 16 * MiB, 19 * MiB);
	ck_assert_int_eq(close(x), 0);
	trace_take(text, sizeof(text));
	snprintf(needle, sizeof(needle), "fd %d: forgotten", x);
	printf("check_life: replaced by %s: %.1f of 3 MiB of the new file kept, %s\n", names[how],
	       uot_mib(kept), strstr(text, needle) ? "caught by the identity check" :
	       "forgotten by the hook");
	ck_assert_msg(kept >= 3 * MiB - 256 * KiB, "after %s the new file's pages were dropped "
		      "(%.1f of 3 MiB kept): the old stream's state carried over", names[how],
		      uot_mib(kept));
	if (how == BY_RAW_CLOSE)
		ck_assert_msg(strstr(text, needle), "the raw close was not caught by the identity "
			      "check (no \"%s\" in the trace)", needle);
	else
		ck_assert_msg(!strstr(text, needle), "%s did not forget the slot: only the "
			      "identity check caught it", names[how]);
}
END_TEST

/* ---- signals ---- */

#define SIG_UNIT	4096
#define SIG_UNITS	(32 * MiB / SIG_UNIT)

static struct {
	int fd;			/* read at its cursor by the code and by the handler */
	int other;		/* read at offsets by the handler alone */
	int wfd;		/* written by the code */
	int hfd;		/* written at offsets by the handler alone */
	int pipe[2];
	uint64_t x;
	_Atomic unsigned calls;
	_Atomic unsigned bad;
	_Atomic uint64_t progress;
	_Atomic unsigned seen[SIG_UNITS];	/* how often each 4 KiB of fd was read */
} S;

/* A read at the shared cursor: where it was is in the data itself. */
static bool sig_read(void *buf, size_t len)
{
	ssize_t n = read(S.fd, buf, len);
	uint64_t off, u;

	if (n <= 0)
		return n == 0;
	off = uot_pat_where(20, *(uint64_t *)buf);
	if (off % SIG_UNIT || (size_t)n % SIG_UNIT || off + (uint64_t)n > 32 * MiB ||
	    !uot_pat_ok(20, off, buf, (size_t)n))
		return false;
	for (u = off / SIG_UNIT; u < (off + (uint64_t)n) / SIG_UNIT; u++)
		atomic_fetch_add(&S.seen[u], 1);
	return true;
}

static void on_tick(int sig)
{
	char buf[4096];
	int saved = errno;
	uint64_t off, w;

	(void)sig;
	S.x ^= S.x << 13;
	S.x ^= S.x >> 7;
	S.x ^= S.x << 17;
	atomic_fetch_add(&S.calls, 1);
	/* The descriptor the code may be inside a hook on right now, at the same cursor. */
	if (!sig_read(buf, sizeof(buf)))
		atomic_fetch_add(&S.bad, 1);
	/*
	 * And at an offset, where the cursor is: a hook that must take the
	 * slot, which the code may hold.  (Mixed with reads at the cursor, it
	 * keeps the descriptor from being a stream: the policy's business.)
	 */
	off = (uint64_t)lseek(S.fd, 0, SEEK_CUR);
	if (off + sizeof(buf) <= 32 * MiB &&
	    (pread(S.fd, buf, sizeof(buf), (off_t)off) != sizeof(buf) ||
	     !uot_pat_ok(20, off, buf, sizeof(buf))))
		atomic_fetch_add(&S.bad, 1);
	/* Another descriptor, anywhere. */
	off = 8 * (S.x % ((16 * MiB - sizeof(buf)) / 8));
	if (pread(S.other, buf, sizeof(buf), (off_t)off) != sizeof(buf) ||
	    !uot_pat_ok(21, off, buf, sizeof(buf)))
		atomic_fetch_add(&S.bad, 1);
	/* A file of its own, anywhere in it. */
	off = 8 * (S.x % ((8 * MiB - sizeof(buf)) / 8));
	uot_pat_fill(23, off, buf, sizeof(buf));
	if (pwrite(S.hfd, buf, sizeof(buf), (off_t)off) != sizeof(buf))
		atomic_fetch_add(&S.bad, 1);
	/* A pipe: write then read back. */
	if (write(S.pipe[1], &off, sizeof(off)) != sizeof(off) ||
	    read(S.pipe[0], &w, sizeof(w)) != sizeof(w) || w != off)
		atomic_fetch_add(&S.bad, 1);
	errno = saved;
}

static void *signal_watchdog(void *arg)
{
	uint64_t last = UINT64_MAX;
	int still = 0;

	(void)arg;
	for (;;) {
		uint64_t now = atomic_load(&S.progress);

		if (now == UINT64_MAX)
			return NULL;
		still = now == last ? still + 1 : 0;
		last = now;
		if (still > 200) {	/* 20 s without progress */
			fprintf(stderr, "check_life: signals: no progress for 20 s: deadlock\n");
			abort();
		}
		usleep(100 * 1000);
	}
}

/*
 * A timer every 100 µs; its handler reads and writes through the hooks, on
 * the descriptor the interrupted code is reading (at its cursor and at an
 * offset, taking its slot) and on others, while the code streams one file
 * in and another out.  No deadlock (a watchdog), all data right, every 4
 * KiB read once, the written stream dropped, and the library's state sane
 * after: the descriptor reused for another file guards its stream.
 */
START_TEST(test_signal_handler_io)
{
	static char buf[256 * 1024];
	char in[PATH_MAX], other[PATH_MAX], out[PATH_MAX], hout[PATH_MAX], after[PATH_MAX];
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off_it = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	sigset_t alrm;
	pthread_t dog;
	uint64_t at;
	unsigned calls;
	int fd;

	make("sig-in", 20, 32);
	make("sig-other", 21, 16);
	make("sig-handler", 23, 8);
	S.hfd = open(path_of(hout, "sig-handler"), O_WRONLY);
	ck_assert_int_ge(S.hfd, 0);
	S.fd = open(path_of(in, "sig-in"), O_RDONLY);
	S.other = open(path_of(other, "sig-other"), O_RDONLY);
	S.wfd = open(path_of(out, "sig-out"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(S.fd, 0);
	ck_assert_int_ge(S.other, 0);
	ck_assert_int_ge(S.wfd, 0);
	ck_assert_int_eq(pipe(S.pipe), 0);
	S.x = 88172645463325252ULL;
	/* The watchdog thread must not take the timer's signals: they are for the code. */
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	ck_assert_int_eq(pthread_create(&dog, NULL, signal_watchdog, NULL), 0);
	pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);

	for (at = 0; at < 32 * MiB; at += sizeof(buf)) {
		ck_assert_msg(sig_read(buf, sizeof(buf)), "the interrupted read: wrong data or %s",
			      strerror(errno));
		uot_pat_fill(22, at, buf, sizeof(buf));
		ck_assert_int_eq(write(S.wfd, buf, sizeof(buf)), sizeof(buf));
		atomic_fetch_add(&S.progress, 1);
	}
	/* What the handler took from the shared cursor is left at the end. */
	while (lseek(S.fd, 0, SEEK_CUR) < (off_t)(32 * MiB))
		ck_assert_msg(sig_read(buf, 4096), "the last reads: wrong data");
	ck_assert_int_eq(setitimer(ITIMER_REAL, &off_it, NULL), 0);
	signal(SIGALRM, SIG_IGN);
	atomic_store(&S.progress, UINT64_MAX);
	pthread_join(dog, NULL);
	calls = atomic_load(&S.calls);
	ck_assert_int_eq(close(S.fd), 0);
	ck_assert_int_eq(close(S.wfd), 0);
	ck_assert_int_eq(close(S.pipe[0]), 0);
	ck_assert_int_eq(close(S.pipe[1]), 0);
	close(S.other);
	ck_assert_int_eq(close(S.hfd), 0);
	printf("check_life: signals: %u handler calls doing I/O, %.1f and %.1f MiB of the read "
	       "and written streams left cached\n", calls, uot_mib(resident_range(in, 0, 32 * MiB)),
	       uot_mib(resident_range(out, 0, 32 * MiB)));
	ck_assert_msg(calls >= 50, "only %u signals arrived: this test cannot tell", calls);
	ck_assert_msg(atomic_load(&S.bad) == 0, "%u handler I/Os failed or read wrong data",
		      atomic_load(&S.bad));
	for (at = 0; at < SIG_UNITS; at++)
		ck_assert_msg(atomic_load(&S.seen[at]) == 1, "4 KiB at %llu of the shared cursor "
			      "was read %u times", (unsigned long long)(at * SIG_UNIT),
			      atomic_load(&S.seen[at]));
	ck_assert_msg(resident_range(out, 0, 32 * MiB) <= 4 * MiB,
		      "the written stream was not dropped");
	/* Nothing left locked or stale: the descriptor, now another file, guards its stream. */
	make("sig-after", 24, 16);
	fd = open(path_of(after, "sig-after"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(dup2(fd, S.fd), S.fd);
	ck_assert_int_eq(close(fd), 0);
	fd = S.fd;
	ck_assert(read_span(fd, 24, 0, 16 * MiB, 256 * KiB));
	ck_assert_int_eq(close(fd), 0);
	ck_assert_msg(resident_range(after, 0, 16 * MiB) <= 4 * MiB,
		      "after the signals, a stream through descriptor %d was not dropped", fd);
	ck_assert_msg(uot_pat_check_file(out, 22, 32 * MiB), "the written file is wrong");
	ck_assert_msg(uot_pat_check_file(hout, 23, 8 * MiB), "the handler's file is wrong");
}
END_TEST

/* ---- descriptors up to the limit ---- */

/* A field of /proc/self/status in KiB, read with raw system calls (no hook runs). */
static long status_kib(const char *field)
{
	char text[8192], *p;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
	long n = fd >= 0 ? syscall(SYS_read, fd, text, sizeof(text) - 1) : -1;

	if (fd >= 0)
		syscall(SYS_close, fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	p = strstr(text, field);
	return p ? atol(p + strlen(field) + 1) : -1;
}

/*
 * Raises RLIMIT_NOFILE to 1048576, or as far as the hard limit goes where
 * even root may not raise it (a container without CAP_SYS_RESOURCE); 0 if
 * that is not far above 1024.
 */
static int raise_limit(void)
{
	struct rlimit rl = { FD_LIMIT, FD_LIMIT };

	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		return FD_LIMIT;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max < 16384)
		return 0;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	printf("check_life: RLIMIT_NOFILE cannot be raised to %d here: testing up to %llu\n",
	       FD_LIMIT, (unsigned long long)rl.rlim_max);
	return rl.rlim_max > FD_LIMIT ? FD_LIMIT : (int)rl.rlim_max;
}

/*
 * Nothing at start-up scales with the descriptor limit: the same program,
 * started with a limit of 1024 and of 1048576, maps as much before any I/O.
 */
START_TEST(test_startup_does_not_scale_with_the_limit)
{
	long kib[2];
	int i, limit = raise_limit();

	if (!limit) {
		printf("check_life: startup: skipped: cannot raise RLIMIT_NOFILE (not root)\n");
		return;
	}
	for (i = 0; i < 2; i++) {
		int p[2], status;
		pid_t pid;

		ck_assert_int_eq(pipe(p), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			rlim_t n = (rlim_t)(i ? limit : 1024);
			struct rlimit rl = { n, n };
			char wfd[16];

			snprintf(wfd, sizeof(wfd), "%d", p[1]);
			setrlimit(RLIMIT_NOFILE, &rl);
			execl(L.self, L.self, "--vm-size", wfd, (char *)NULL);
			_exit(127);
		}
		close(p[1]);
		kib[i] = -1;
		ck_assert_int_eq(syscall(SYS_read, p[0], &kib[i], sizeof(kib[i])), sizeof(kib[i]));
		close(p[0]);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(exited_ok(status));
	}
	printf("check_life: startup: VmSize %ld KiB with a limit of 1024, %ld KiB with %d\n",
	       kib[0], kib[1], limit);
	ck_assert_int_gt(kib[0], 0);
	ck_assert_msg(kib[1] <= kib[0], "with a limit of %d the process maps %ld KiB more",
		      limit, kib[1] - kib[0]);
}
END_TEST

/*
 * A stream through descriptor 1048575, the last one, and reads through one
 * descriptor in each of N bands of 256 (the library's chunks): data right,
 * the stream dropped, and the library's memory grows by at most one chunk
 * of slots (mapped on first use, 64 KiB at most) per band touched.
 */
START_TEST(test_high_descriptors_bounded_memory)
{
	/* The bound: 256 bytes a descriptor (slots are 168 bytes today: 44 KiB a chunk). */
	const long chunk_kib = 64;
	char path[PATH_MAX], small[PATH_MAX], buf[64];
	long data0, data1, data2, rss0, rss2;
	int fd, sfd, i, top, bands, step, limit = raise_limit();

	if (!limit) {
		printf("check_life: high descriptors: skipped: cannot raise RLIMIT_NOFILE "
		       "(not root)\n");
		return;
	}
	top = limit - 1;
	bands = limit / 1024 >= 256 ? 1024 : limit / 256;
	step = limit / bands;
	make("high", 23, 32);
	make("high-small", 24, 1);
	fd = open(path_of(path, "high"), O_RDONLY);
	sfd = open(path_of(small, "high-small"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(sfd, 0);
	data0 = status_kib("VmData:");
	ck_assert_int_eq(dup2(fd, top), top);
	close(fd);
	ck_assert_msg(read_span(top, 23, 0, 32 * MiB, MiB), "wrong data through descriptor %d",
		      top);
	data1 = status_kib("VmData:");
	ck_assert_int_eq(close(top), 0);
	ck_assert_msg(resident_range(path, 0, 32 * MiB) <= 4 * MiB,
		      "the stream through descriptor %d was not dropped", top);

	rss0 = status_kib("RssAnon:");
	for (i = 0; i < bands; i++) {
		int d = i * step + step - 1;

		ck_assert_int_eq(dup2(sfd, d), d);
		ck_assert_int_eq(pread(d, buf, sizeof(buf), 8 * i), sizeof(buf));
		ck_assert(uot_pat_ok(24, 8 * (uint64_t)i, buf, sizeof(buf)));
	}
	data2 = status_kib("VmData:");
	rss2 = status_kib("RssAnon:");
	for (i = 0; i < bands; i++)
		close(i * step + step - 1);
	close(sfd);
	printf("check_life: high descriptors: VmData +%ld KiB for a stream through descriptor %d; "
	       "+%ld KiB VmData, +%ld KiB RssAnon for %d descriptors in %d bands of 256\n",
	       data1 - data0, top, data2 - data1, rss2 - rss0, bands, bands);
	ck_assert_msg(data1 - data0 <= chunk_kib, "one stream through descriptor %d cost %ld KiB",
		      top, data1 - data0);
	/* The slack: whatever else the process allocates meanwhile (stdio, Check). */
	ck_assert_msg(data2 - data1 <= bands * chunk_kib + 256, "%d bands cost %ld KiB of VmData "
		      "(bound %ld)", bands, data2 - data1, bands * chunk_kib + 256);
	ck_assert_msg(rss2 - rss0 <= bands * chunk_kib, "%d bands cost %ld KiB resident "
		      "(bound %ld)", bands, rss2 - rss0, bands * chunk_kib);
}
END_TEST

/* ---- the program ---- */

static Suite *life_suite(void)
{
	Suite *s = suite_create("life");
	TCase *tc;

	tc = tcase_create("fork");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fork_while_a_slot_is_held);
	tcase_add_test(tc, test_fork_child_continues_a_stream);
	tcase_add_test(tc, test_fork_after_dlclose);
	suite_add_tcase(s, tc);

	tc = tcase_create("vfork");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_vfork_child_hooks);
	tcase_add_loop_test(tc, test_vfork_child_closes_leave_the_stream, 0, N_VFORK);
	tcase_add_test(tc, test_vfork_python_subprocess);
	tcase_add_test(tc, test_fork_child_without_wipe);
	tcase_add_test(tc, test_closes_ask_no_pid);
	suite_add_tcase(s, tc);

	tc = tcase_create("posix_spawn");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_posix_spawn_child_runs_no_hook);
	suite_add_tcase(s, tc);

	tc = tcase_create("exec");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_exec_judges_inherited_stream_afresh);
	suite_add_tcase(s, tc);

	tc = tcase_create("replaced");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_replaced_descriptor_starts_afresh, 0, N_REPLACE);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_signal_handler_io);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_startup_does_not_scale_with_the_limit);
	tcase_add_test(tc, test_high_descriptors_bounded_memory);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const char *const env[] = { "USEONCE_THRESHOLD=4M", "USEONCE_WINDOW=2M",
					   "USEONCE_TRACE=900", NULL };
	const char *dir;

	/* The new images of the exec tests. */
	if (argc == 6 && !strcmp(argv[1], "--exec-image"))
		return exec_image(atoi(argv[2]), (uint64_t)atoll(argv[3]), atoi(argv[4]), argv[5]);
	if (argc == 4 && !strcmp(argv[1], "--close-many"))
		return close_many_image(argv[2], atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "--vfork-then-fork"))
		return vfork_then_fork_image(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "--nowipe"))
		return nowipe_image(argv + 2);
	if (argc == 3 && !strcmp(argv[1], "--dlclose-fork"))
		return dlclose_fork_image(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--vm-size")) {
		long kib = status_kib("VmSize:");

		return syscall(SYS_write, atoi(argv[2]), &kib, sizeof(kib)) == sizeof(kib) ? 0 : 1;
	}
	if (!getenv(CHILD_MARK)) {
		trace_pipe();
		uot_reexec_preloaded(argv, CHILD_MARK, env);
	}
	if (!realpath("/proc/self/exe", L.self)) {
		perror("/proc/self/exe");
		return EXIT_FAILURE;
	}
	dir = getenv("UO_LIFE_DIR");
	if (dir) {
		/* Run again inside strace by the posix_spawn test: its files are ours. */
		snprintf(L.dir, sizeof(L.dir), "%s", dir);
	} else {
		uot_suite_begin("life", NULL);
		if (!uot_need_scratch()) {
			fprintf(stderr, "check_life: %s\n", uot_skip_reason());
			return EXIT_FAILURE;
		}
		snprintf(L.dir, sizeof(L.dir), "%s", uot_scratch());
		setenv("UO_LIFE_DIR", L.dir, 1);
	}
	return uot_check_run(life_suite(), false);
}
