/*
 * The watcher: the library's policy applied from outside the process.
 *
 * Go programs make their own system calls, static programs never read
 * LD_PRELOAD, and a copy already running was started without it: no hook
 * ever sees their I/O.  The kernel shows enough of it.  /proc/PID/fdinfo/N
 * gives each descriptor's file position and open flags, and the file it
 * names can be opened again through /proc/PID/fd/N.  Page cache advice
 * (posix_fadvise, sync_file_range) acts on the file's cache whichever
 * descriptor carries it, so the watcher samples the positions, feeds them
 * to the same pure policy the library uses (as UO_EV_CURSOR events), and
 * applies the advice through its own descriptor.
 *
 * Rules, each for a reason:
 * - Only what /proc lets us read: the kernel checks ptrace read access
 *   (same user, no setuid transition) before it shows a process's
 *   descriptors.  Nothing is stopped, traced or signalled, and the
 *   program's descriptors are never touched: ours is a new open file
 *   description, so even its position and flock locks are its own.
 * - Writeback is only started (SYNC_FILE_RANGE_WRITE), never waited for
 *   with sync_file_range's WAIT flags or fsync: that would consume the
 *   file's writeback error, and the program's own fsync() would then
 *   report success on a failing disk.  A drop that must wait for
 *   writeback is queued and retried on later samples, its folios dropped
 *   one by one as cachestat(2) says they are clean; the watcher never
 *   blocks on the disk.
 * - Cheap: one pread of an fdinfo file per guarded descriptor and one
 *   cachestat per open file per sample, a sample about every window of
 *   data moved or brought into the cache (at most 200 a second), one every
 *   20 ms while a stream that moved a window lately pauses (it may start
 *   again at once), and one every 100 ms when nothing moves.
 *
 * Positions are not all: pread and pwrite move none, and a file can be
 * opened, written and closed between two samples.  wfile.c follows every
 * open file by its residency instead, and fanotify (as root) reports
 * each open and close however short the file's life.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dirent.h>
#include <stdarg.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "watch.h"
#include "wfile.h"
#include "conf.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451	/* the same number on every architecture */
#endif
#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

#define UO_MS			1000000LL
/* Samples: about one window of data apart, within these bounds. */
#define UO_W_FAST_NS		(5 * UO_MS)
#define UO_W_SLOW_NS		(100 * UO_MS)
/*
 * A stream that pauses is sampled this often until UO_W_HOLD_NS after its
 * last pause and its last burst (a window moved).  restic reads its file
 * in bursts (a chunk, then hashing and packing): backed off to the slow
 * rate during a pause, the watcher saw the next burst 100 ms late, with up
 * to 100 MiB read and cached meanwhile.  A stream that never pauses keeps the interval its rate
 * calls for (a reader at 256 MiB/s was sampled half as often again).
 */
#define UO_W_BURST_NS		(20 * UO_MS)
#define UO_W_HOLD_NS		(2000 * UO_MS)
/* Others' fanotify events wake us at most this often. */
#define UO_W_FAN_NS		(5 * UO_MS)
/*
 * A sleep this short is not cut for fanotify events while the watched
 * processes open and close no files: the next sample reads them anyway.
 * On this shared machine others made 800-4000 opens a second, and a
 * reader sampled every 8 ms was woken once or twice between two samples,
 * for three calls each, to learn they were not ours.  A backup of a tree
 * (files opened, read and closed within a sample) is woken as before: a
 * suite run with the skip there too had restic keep 63% of the hot set
 * (87-100% before; not repeated, but its files' opens are what it reads).
 */
#define UO_W_FAN_SKIP_NS	(2 * UO_W_FAN_NS)
/* And while nothing moves (idle samples, UO_W_SLOW_NS apart). */
#define UO_W_FAN_IDLE_NS	(25 * UO_MS)
/*
 * Whether a watched process exited is asked at most this often within a
 * sample: a reaction that late is still far under one writeback call.
 */
#define UO_W_EXIT_POLL_NS	(200 * 1000LL)
/* Children are looked for this often: a stream lasts longer than that to matter. */
#define UO_W_TREE_NS		(250 * UO_MS)
/*
 * A process whose counters moved has every file of the residency table
 * looked at least this often, explained or not (uo_wproc_unexplained):
 * its descriptors' moves can carry no data (a forward lseek, descriptors
 * sharing one open file, a file someone else grows) and hide its preads
 * and mappings from the test.  About 10 MiB read at 100 MiB/s.
 */
#define UO_W_FULL_NS		(100 * UO_MS)
/* Descriptors that are not regular files are checked again this often, in samples. */
#define UO_W_RECHECK		16
/* Queued drops waiting for writeback; when it is full, the oldest is dropped as it is. */
#define UO_W_PENDING		64
/* Writeback is not started while this many windows of the file are under writeback (wfile.c). */
#define UO_W_INFLIGHT		4
/*
 * Writeback submitted in one sample, at most this long (wfile.h, wb_until),
 * while a reader streams: past it the sample ends, and the next comes after
 * UO_W_CUT_NS, the reader's drops first.  A sample takes well under a
 * millisecond otherwise.  Without a reader nothing clean waits for the
 * sample, and a cut only leaves written pages dirty longer.
 */
#define UO_W_WB_NS		(10 * UO_MS)
#define UO_W_CUT_NS		(1 * UO_MS)
/* Queued drops are tried again at least this often. */
#define UO_W_PEND_NS		(20 * UO_MS)
/* At the end, how long queued drops may wait for writeback before we give up on them. */
#define UO_W_DRAIN_NS		(5000 * UO_MS)

struct uo_cs_range {
	uint64_t off;
	uint64_t len;
};

struct uo_cs {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

enum uo_wkind {
	UO_WF_IGNORED,		/* not a regular file, memory fs, O_DIRECT, or cannot be opened */
	UO_WF_GUARDED,		/* ours is open, the policy follows it */
};

struct uo_wproc {
	pid_t pid;
	int pidfd;		/* -1: the kernel has no pidfd_open; /proc is polled instead */
	int fddir;		/* /proc/PID/fd */
	int infodir;		/* /proc/PID/fdinfo */
	int mntinfo;		/* /proc/PID/mountinfo, polled: its mounts changed; or -1 */
	uint64_t mntns;		/* its mount namespace (inode): one mountinfo open per namespace */
	int io;			/* /proc/PID/io, pread at every sample; -1 if it cannot be read */
	bool io_known;		/* io_calls and io_disk were read at this sample */
	bool io_seen;		/* and at an earlier one: low[] is set */
	uint64_t io_full;	/* io_calls + io_disk at the last full look */
	uint64_t io_calls;	/* rchar + wchar: bytes its calls moved, so far */
	uint64_t io_disk;	/* read_bytes + write_bytes: what it brought or dirtied, so far */
	uint64_t io_rchar;	/* rchar: bytes its read calls moved, so far */
	uint64_t io_syscr;	/* syscr: its read calls, so far */
	/*
	 * read_bytes at its first look, less what readers found under way
	 * were given as their own since (uo_wfd_own_prefix); UO_UNKNOWN
	 * until read.
	 */
	uint64_t unclaimed;
	uint64_t told;		/* what its guarded descriptors' positions and sizes moved, summed */
	int64_t low[2];		/* io_calls - told and io_disk - told, lowest since the last full look */
	int64_t high;		/* io_calls - told, highest since then */
	unsigned scans;		/* descriptors found at scan 0 were open before we looked */
	bool slept;		/* its pidfd was quiet as the last sleep ended: alive, unasked */
	bool gone;
};

struct uo_wfd {
	int proc;		/* index in procs */
	int fd;			/* the program's descriptor number */
	int info;		/* its fdinfo file, pread again at every sample; -1 if ignored */
	int ours;		/* our own descriptor for the same file; -1 if ignored */
	uint8_t kind;		/* enum uo_wkind */
	/*
	 * Ignored for what its file is (not a regular file, O_PATH or
	 * O_DIRECT, on a filesystem we leave alone): info stays open, and
	 * the recheck asks only whether fdinfo names another file now.
	 */
	bool settled;
	bool seen;		/* listed by the last scan */
	bool fresh;		/* opened while we watched, and cold: its first bytes were the stream's */
	uint64_t ino, mnt;
	uint64_t dev;		/* st_dev of ours */
	unsigned flags;		/* open flags, from fdinfo */
	uint64_t pos, size;	/* as last sampled */
	uint64_t pos0, size0;	/* at first sight */
	uint64_t mark;		/* the end of the last event given to the policy */
	uint64_t rchar, syscr;	/* the process's, read before pos was: UO_UNKNOWN if not */
	struct uo_tuning t;	/* the policy's tuning for this descriptor */
	struct uo_stream st;
	bool counted;		/* counted as a stream in the statistics */
	bool remote_said;	/* --trace told it is on a filesystem we leave alone */
	bool lease_said;	/* --trace told its file has a lease */
	int file;		/* its file in the watcher's files, or -1 */
};

/* A mount, as /proc/PID/mountinfo names it: are its files ours to open again? */
struct uo_wmnt {
	uint64_t id;
	bool remote;
};

struct uo_wpend {
	int fd;			/* a dup of ours: the drop outlives the program's descriptor; -1 shut */
	struct file_handle *fh;	/* to open it again once shut (uo_wshut); NULL: never shut */
	uint64_t dev;		/* its filesystem: let go of with it (uo_wlet_go) */
	uint64_t ino;
	struct uo_range r;
	uint64_t keep;
};

struct uo_watch {
	const struct uo_watch_opts *o;
	struct uo_wproc *procs;
	unsigned nprocs, cap_procs;
	struct uo_wfd *fds;
	unsigned nfds, cap_fds;
	struct uo_wpend pend[UO_W_PENDING];
	unsigned npend;
	struct uo_wfiles wf;		/* every file open in a watched process, by residency */
	int fan;			/* fanotify: opens and closes, even between samples; or -1 */
	/*
	 * No descriptor of a marked filesystem is kept: one would keep it
	 * busy, and a watched script's own umount of it would fail.  Its
	 * mount is opened again by path while a batch of events or a sample
	 * needs it, and closed at the batch's end (uo_wfan_unhold).
	 */
	struct uo_wmark {
		uint64_t dev;		/* st_dev */
		__kernel_fsid_t fsid;	/* as events name it */
		char *path;		/* where it is mounted, as we can reach it; NULL: unknown */
		int fd;			/* its mount, opened for this batch; -1 */
		bool gone;		/* the path leads elsewhere now (unmounted), this batch */
	} marked[16];			/* filesystems fanotify reports on */
	unsigned nmarked;
	struct uo_wmnt *mnts;		/* mounts seen in the watched processes' mountinfo */
	unsigned nmnts, cap_mnts;
	pid_t foreign[256];		/* recent event makers that are not watched */
	unsigned nforeign;
	uint64_t fan_ours, fan_foreign, fan_lost;
	uint64_t ticks;
	uint64_t page;
	/* Statistics. */
	uint64_t moved, dropped, kept, flushed, streams, files;
	uint64_t churn;		/* regular files opened or closed: programs writing many */
	int64_t last_tree_ns;
	int64_t full_ns;	/* the last sample that looked at every file (UO_W_FULL_NS) */
	int64_t exit_polled_ns;	/* uo_wexited */
	bool fan_skip;		/* no files came or went at the last sample (UO_W_FAN_SKIP_NS) */
	bool stream_moved;	/* a stream moved since the last sample */
	struct uo_whold hold;	/* 20 ms samples while streams pause after a burst */
	pid_t child;		/* uo_watch_run: the command, reaped by us */
	int child_status;
	bool child_done;
};

static volatile sig_atomic_t uo_forward_sig;

static void uo_wfan_mark(struct uo_watch *w, int fd, uint64_t dev, pid_t pid);
static void uo_wfan_mark_cwd(struct uo_watch *w, pid_t pid);

void uo_vsay(const char *fmt, va_list ap)
{
	fputs("useonce: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void uo_wsay(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void uo_wsay(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	uo_vsay(fmt, ap);
	va_end(ap);
}

static int64_t uo_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *uo_grow(void *p, unsigned *cap, size_t elem)
{
	unsigned n = *cap ? *cap * 2 : 16;
	void *q = realloc(p, (size_t)n * elem);

	if (!q) {
		uo_wsay("out of memory");
		exit(1);
	}
	*cap = n;
	return q;
}

/* ---- what kind of program ---- */

const char *uo_exe_kind_name(enum uo_exe_kind k)
{
	switch (k) {
	case UO_EXE_DYNAMIC:
		return "dynamically linked";
	case UO_EXE_STATIC:
		return "statically linked";
	case UO_EXE_GO:
		return "a Go program";
	default:
		return "not an ELF program";
	}
}

static bool uo_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/*
 * 64-bit ELF only: the programs a preload misses on the machines this
 * runs on.  Static: no PT_INTERP, so the loader (and LD_PRELOAD) never
 * runs.  Go: a .go.buildinfo or .note.go.buildid section, or a note owned
 * by "Go" (stripped binaries keep their notes).
 */
enum uo_exe_kind uo_exe_kind(const char *path)
{
	enum uo_exe_kind kind = UO_EXE_OTHER;
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Shdr sh, strsh;
	bool interp = false;
	char name[24];
	unsigned i;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return UO_EXE_OTHER;
	if (!uo_pread_all(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph))
		goto out;
	for (i = 0; i < eh.e_phnum && i < 256; i++) {
		if (!uo_pread_all(fd, &ph, sizeof(ph), eh.e_phoff + (uint64_t)i * sizeof(ph)))
			goto out;
		if (ph.p_type == PT_INTERP)
			interp = true;
		if (ph.p_type == PT_NOTE && ph.p_filesz >= 16) {
			/* The first note of the segment: namesz, descsz, type, name. */
			uint32_t nh[3];
			char owner[4];

			if (uo_pread_all(fd, nh, sizeof(nh), ph.p_offset) && nh[0] == 3 &&
			    uo_pread_all(fd, owner, sizeof(owner), ph.p_offset + 12) &&
			    !memcmp(owner, "Go", 3)) {
				kind = UO_EXE_GO;
				goto out;
			}
		}
	}
	kind = interp ? UO_EXE_DYNAMIC : UO_EXE_STATIC;
	if (eh.e_shentsize != sizeof(sh) || eh.e_shstrndx >= eh.e_shnum ||
	    !uo_pread_all(fd, &strsh, sizeof(strsh),
			  eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(sh)))
		goto out;
	for (i = 0; i < eh.e_shnum && i < 4096; i++) {
		if (!uo_pread_all(fd, &sh, sizeof(sh), eh.e_shoff + (uint64_t)i * sizeof(sh)))
			break;
		memset(name, 0, sizeof(name));
		if (pread(fd, name, sizeof(name) - 1, (off_t)(strsh.sh_offset + sh.sh_name)) <= 0)
			continue;
		if (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid")) {
			kind = UO_EXE_GO;
			break;
		}
	}
out:
	close(fd);
	return kind;
}

bool uo_exe_find(const char *cmd, char *out, size_t size)
{
	const char *path = getenv("PATH"), *p;

	if (strchr(cmd, '/')) {
		snprintf(out, size, "%s", cmd);
		return access(out, X_OK) == 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; ; ) {
		size_t n = strcspn(p, ":");
		int len = snprintf(out, size, "%.*s%s%s", (int)n, p, n ? "/" : "", cmd);
		struct stat sb;

		if (len > 0 && (size_t)len < size && stat(out, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    access(out, X_OK) == 0)
			return true;
		if (!p[n])
			return false;
		p += n + 1;
	}
}

void uo_watch_opts_from_env(struct uo_watch_opts *o)
{
	const char *s;
	uint64_t v;
	unsigned g;
	bool b;

	memset(o, 0, sizeof(*o));
	uo_tuning_defaults(&o->tuning);
	s = getenv(USEONCE_ENV_THRESHOLD);
	if (s && !uo_parse_size_setting(s, &v))
		o->tuning.threshold = v;
	s = getenv(USEONCE_ENV_WINDOW);
	if (s && !uo_parse_size_setting(s, &v))
		o->tuning.window = v;
	s = getenv(USEONCE_ENV_GUARD);
	if (s && !uo_parse_guard(s, &g))
		o->tuning.guard = g;
	s = getenv(USEONCE_ENV_DRYRUN);
	if (s && !uo_parse_bool(s, &b))
		o->dry_run = b;
	s = getenv(USEONCE_ENV_STATS);
	if (s && !uo_parse_bool(s, &b))
		o->stats = b;
	else if (s && *s)
		o->stats = true;
}

/* ---- the kernel's view of a descriptor ---- */

struct uo_fdinfo {
	uint64_t pos;
	unsigned flags;
	uint64_t mnt;
	uint64_t ino;
	/*
	 * The whole file was read and names no lease or delegation held
	 * through this open file description (its "lock:" lines).
	 */
	bool no_lease;
};

/* 0, or -1 when the descriptor is closed (or the process gone). */
static int uo_read_fdinfo(int info, struct uo_fdinfo *fi)
{
	char buf[512], *p;
	ssize_t n = pread(info, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	memset(fi, 0, sizeof(*fi));
	fi->no_lease = (size_t)n < sizeof(buf) - 1 && !strstr(buf, "LEASE") && !strstr(buf, "DELEG");
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, "pos:", 4))
			fi->pos = strtoull(p + 4, NULL, 10);
		else if (!strncmp(p, "flags:", 6))
			fi->flags = (unsigned)strtoul(p + 6, NULL, 8);
		else if (!strncmp(p, "mnt_id:", 7))
			fi->mnt = strtoull(p + 7, NULL, 10);
		else if (!strncmp(p, "ino:", 4))
			fi->ino = strtoull(p + 4, NULL, 10);
	}
	return 0;
}

static int uo_cachestat(int fd, uint64_t off, uint64_t len, struct uo_cs *cs)
{
	struct uo_cs_range r = { off, len };

	return (int)syscall(__NR_cachestat, fd, &r, cs, 0);
}

static uint64_t uo_file_size(int fd)
{
	struct stat sb;

	return fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* ---- filesystems whose files are never opened again ---- */

/*
 * FUSE (sshfs, bindfs, rclone mount, virtiofs) and network filesystems:
 * an open is a request to a daemon or a server, and can be slow, hang, or
 * mean something to the other side (a file-sharing daemon logs it, a
 * network lock is taken, a cloud mount fetches the file).  Their page
 * cache is theirs to manage, too.  The watcher never opens their files,
 * nor stats them: it knows them by the mount id fdinfo gives.
 */
static bool uo_wfs_remote(const char *fstype)
{
	static const char *const prefixes[] = {
		"fuse", "virtiofs", "nfs", "cifs", "smb", "9p", "ceph", "afs", "glusterfs",
		"lustre", "gfs2", "ocfs2", "coda", "ncpfs", "orangefs", "pvfs2", "beegfs",
		"gpfs", "vboxsf", "davfs", "sshfs", "dlm",
	};
	unsigned i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(fstype, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/*
 * The mounts of a namespace, as its mountinfo (fd, or pid's when fd is -1)
 * lists them, join the table; a mount id listed again takes its new type.
 */
static void uo_wmnt_read(struct uo_watch *w, pid_t pid, int fd)
{
	char path[64], line[4096];
	FILE *f;

	if (fd >= 0) {
		int copy;

		lseek(fd, 0, SEEK_SET);
		copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		f = copy >= 0 ? fdopen(copy, "r") : NULL;
		if (!f && copy >= 0)
			close(copy);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
		f = fopen(path, "re");
	}
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER" */
		const char *sep = strstr(line, " - ");
		uint64_t id = strtoull(line, NULL, 10);
		unsigned i;

		if (!sep || !id)
			continue;
		for (i = 0; i < w->nmnts && w->mnts[i].id != id; i++)
			;
		if (i == w->nmnts) {
			if (w->nmnts == w->cap_mnts)
				w->mnts = uo_grow(w->mnts, &w->cap_mnts, sizeof(*w->mnts));
			w->nmnts++;
		}
		w->mnts[i].id = id;
		w->mnts[i].remote = uo_wfs_remote(sep + 3);
	}
	fclose(f);
}

/*
 * Files on mount 'id' are not to be opened again.  Nor on a mount we
 * cannot tell: it is remembered as such, so that it costs one reading of
 * mountinfo, not one per sample.
 */
static bool uo_wmnt_remote(struct uo_watch *w, pid_t pid, uint64_t id)
{
	unsigned i, tries;
	int mntinfo = -1;

	/*
	 * The kernel hands a freed mount id to the next mount: a local
	 * mount unmounted, a FUSE mount can take its id.  Its mountinfo
	 * polls with POLLPRI once the namespace's mounts changed; the table
	 * is read again then, and trusted only when they did not.
	 */
	for (i = 0; i < w->nprocs; i++)
		if (w->procs[i].pid == pid && !w->procs[i].gone)
			mntinfo = w->procs[i].mntinfo;
	if (mntinfo >= 0) {
		struct pollfd pfd = { .fd = mntinfo, .events = POLLPRI };

		if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLPRI | POLLERR)))
			uo_wmnt_read(w, pid, mntinfo);
	}
	for (tries = 0; id && tries < 2; tries++) {
		for (i = 0; i < w->nmnts; i++)
			if (w->mnts[i].id == id)
				return w->mnts[i].remote;
		/* Mounted since we last read, or another namespace: read again, once. */
		if (!tries)
			uo_wmnt_read(w, pid, mntinfo);
	}
	if (id) {
		if (w->nmnts == w->cap_mnts)
			w->mnts = uo_grow(w->mnts, &w->cap_mnts, sizeof(*w->mnts));
		w->mnts[w->nmnts].id = id;
		w->mnts[w->nmnts].remote = true;
		w->nmnts++;
	}
	return true;
}

/* ---- advice, through our own descriptor ---- */

static off_t uo_rlen(struct uo_range r)
{
	return r.end == UO_EOF ? 0 : (off_t)(r.end - r.start);
}

/* Which folios of the range hold cached pages (one is enough), as the library probes. */
static unsigned uo_wprobe(struct uo_watch *w, int fd, struct uo_range r, uint64_t align,
			  uint64_t *cached)
{
	uint64_t folios = (r.end - r.start) / align, i;
	struct uo_cs cs;

	*cached = 0;
	if (uo_cachestat(fd, r.start, r.end - r.start, &cs) != 0)
		return errno == EPERM ? UO_EV_BLIND : UO_EV_NOPROBE;
	if (cs.nr_cache == 0)
		return UO_EV_PROBED;
	if (cs.nr_cache * w->page >= r.end - r.start) {
		*cached = folios >= 64 ? ~0ULL : (1ULL << folios) - 1;
		return UO_EV_PROBED;
	}
	for (i = 0; i < folios && i < 64; i++) {
		/*
		 * A watched process exited (uo_wf_stopped): the rest count as
		 * cached, kept, and the file is closed at once (64 calls on a
		 * file being written took 20 ms, past a script's umount).
		 */
		if (i % 8 == 7 && uo_wf_stopped(&w->wf)) {
			*cached |= folios >= 64 ? ~0ULL << i : ((1ULL << folios) - 1) & (~0ULL << i);
			break;
		}
		if (uo_cachestat(fd, r.start + i * align, align, &cs) == 0 && cs.nr_cache)
			*cached |= 1ULL << i;
	}
	return UO_EV_PROBED;
}

static void uo_wcount_drop(struct uo_watch *w, int fd, struct uo_range r, uint64_t keep,
			   uint64_t align)
{
	uint64_t end = r.end, at, i;

	if (!w->o->stats)
		return;
	if (end == UO_EOF)
		end = uo_file_size(fd);
	for (at = r.start, i = 0; at < end; at += align, i++) {
		uint64_t to = end - at < align ? end : at + align;

		if (i < 64 && ((keep >> i) & 1))
			w->kept += to - at;
		else
			w->dropped += to - at;
	}
}

/* Drops the range but the folios in keep (at most 64 of them); counts nothing. */
static void uo_wdrop_only(struct uo_watch *w, int fd, struct uo_range r, uint64_t keep,
			  uint64_t align)
{
	uint64_t at = r.start, i = 0, from;

	if (!keep) {
		uo_wf_drop(&w->wf, fd, r.start, (uint64_t)uo_rlen(r));
		return;
	}
	while (at < r.end) {
		for (; at < r.end && ((keep >> i) & 1); at += align, i++)
			;
		for (from = at; at < r.end && !((keep >> i) & 1); at += align, i++)
			;
		if (at > from)
			uo_wf_drop(&w->wf, fd, from, at - from);
	}
}

static void uo_wdrop(struct uo_watch *w, int fd, struct uo_range r, uint64_t keep, uint64_t align)
{
	uo_wcount_drop(w, fd, r, keep, align);
	uo_wdrop_only(w, fd, r, keep, align);
}

/* Dirty or under writeback in the range?  Unknown counts as clean. */
static bool uo_wdirty(int fd, struct uo_range r, struct uo_cs *cs)
{
	if (uo_cachestat(fd, r.start, (uint64_t)uo_rlen(r), cs) != 0) {
		memset(cs, 0, sizeof(*cs));
		return false;
	}
	return cs->nr_dirty || cs->nr_writeback;
}

static void uo_wpend_done(struct uo_watch *w, unsigned i)
{
	if (w->pend[i].fd >= 0)
		close(w->pend[i].fd);
	free(w->pend[i].fh);
	w->pend[i] = w->pend[--w->npend];
}

/* A shut drop's file, opened again by its handle for this sample: false if it cannot be. */
static bool uo_wpend_open(struct uo_watch *w, struct uo_wpend *p)
{
	struct stat sb;

	if (p->fd >= 0)
		return true;
	if (!p->fh || !w->wf.reopen || uo_wf_leased(&w->wf, p->dev, p->ino))
		return false;
	p->fd = w->wf.reopen(w->wf.reopen_ctx, p->dev, p->fh);
	if (p->fd >= 0 && (fstat(p->fd, &sb) != 0 || (uint64_t)sb.st_dev != p->dev ||
			   (uint64_t)sb.st_ino != p->ino)) {
		close(p->fd);
		p->fd = -1;
	}
	return p->fd >= 0;
}

/*
 * A drop behind written data waits for its writeback, without blocking:
 * queued here and tried at each sample.  A file that is gone (unlinked)
 * is freed by the kernel once our descriptor closes: nothing to wait for.
 */
static void uo_wpend_add(struct uo_watch *w, int fd, struct uo_range r, uint64_t keep)
{
	struct stat sb = { 0 };
	struct uo_cs cs;
	int dup_fd;

	if (fstat(fd, &sb) == 0 && sb.st_nlink == 0)
		return;
	if (!uo_wdirty(fd, r, &cs)) {
		uo_wdrop(w, fd, r, keep, UO_ALIGN);
		return;
	}
	/* Counted now: what is dropped later, a folio at a time, is this. */
	uo_wcount_drop(w, fd, r, keep, UO_ALIGN);
	if (w->npend == UO_W_PENDING) {
		/* Dropping early only leaves what is still dirty cached: no harm. */
		if (uo_wpend_open(w, &w->pend[0]))
			uo_wdrop_only(w, w->pend[0].fd, w->pend[0].r, w->pend[0].keep, UO_ALIGN);
		uo_wpend_done(w, 0);
	}
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return;
	w->pend[w->npend].fh = NULL;
	if (w->wf.reopen) {
		struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
		int mnt;

		if (fh) {
			fh->handle_bytes = MAX_HANDLE_SZ;
			if (name_to_handle_at(dup_fd, "", fh, &mnt, AT_EMPTY_PATH) == 0)
				w->pend[w->npend].fh = fh;
			else
				free(fh);
		}
	}
	w->pend[w->npend].fd = dup_fd;
	w->pend[w->npend].ino = (uint64_t)sb.st_ino;
	w->pend[w->npend].dev = (uint64_t)sb.st_dev;
	w->pend[w->npend].r = r;
	w->pend[w->npend].keep = keep;
	w->npend++;
}

/*
 * A waiting range whose writeback is under way: the folios of it that
 * are clean already go now, told apart by cachestat, and join the ones
 * it keeps; the rest wait for a later sample.  The disk writes a window
 * in tens of milliseconds, folio after folio: waiting for the last one
 * left the whole window cached that long.  Nothing here waits, and no
 * call of it can report (and so consume) a writeback error.  Returns true
 * when nothing of the range is left to drop.
 */
static bool uo_wpend_clean(struct uo_watch *w, struct uo_wpend *p, const struct uo_cs *all)
{
	uint64_t end = p->r.end == UO_EOF ? uo_file_size(p->fd) : p->r.end, at, i, from = 0;
	bool run = false, left = false;
	struct uo_cs cs;

	/* Nothing clean in it yet, or more folios than the mask of those it keeps. */
	if (all->nr_cache <= all->nr_dirty + all->nr_writeback || end <= p->r.start ||
	    (end - p->r.start + UO_ALIGN - 1) / UO_ALIGN > 64)
		return false;
	/*
	 * A tail dropped "to the end of the file" is a closed writer's: its
	 * end is known now, and a range with folios kept must have one.
	 */
	p->r.end = end;
	for (at = p->r.start, i = 0; at < end; at += UO_ALIGN, i++) {
		uint64_t len = end - at < UO_ALIGN ? end - at : UO_ALIGN;
		bool go = false;

		if (!((p->keep >> i) & 1)) {
			if (i % 8 == 7 && uo_wf_stopped(&w->wf)) {
				left = true;
				break;
			}
			if (uo_cachestat(p->fd, at, len, &cs) == 0 && !cs.nr_dirty &&
			    !cs.nr_writeback) {
				go = cs.nr_cache != 0;
				p->keep |= 1ULL << i;
			} else {
				left = true;
			}
		}
		if (go && !run) {
			from = at;
			run = true;
		} else if (!go && run) {
			uo_wf_drop(&w->wf, p->fd, from, at - from);
			run = false;
		}
	}
	if (run)
		uo_wf_drop(&w->wf, p->fd, from, (at < end ? at : end) - from);
	return !left;
}

static void uo_wpend_work(struct uo_watch *w)
{
	unsigned i = 0;
	struct uo_cs cs;

	while (i < w->npend) {
		struct uo_wpend *p = &w->pend[i];
		struct stat sb;

		if (uo_wf_stopped(&w->wf))
			return;
		/* Shut, and not to be opened again (gone, leased, unmounted): its writeback was started. */
		if (!uo_wpend_open(w, p) || (fstat(p->fd, &sb) == 0 && sb.st_nlink == 0)) {
			uo_wpend_done(w, i);
			continue;
		}
		if (uo_wdirty(p->fd, p->r, &cs)) {
			/* Dirty again, or never started: start it again, never wait. */
			if (!cs.nr_writeback) {
				uint64_t sent = uo_wf_writeback(&w->wf, p->fd, p->r.start,
								(uint64_t)uo_rlen(p->r));

				/* A dry run sent nothing: its pages stay dirty, counted once. */
				if (!w->wf.dry_run)
					w->flushed += sent < cs.nr_dirty * w->page ? sent :
						      cs.nr_dirty * w->page;
			}
			if (uo_wpend_clean(w, p, &cs))
				uo_wpend_done(w, i);
			else
				i++;
			continue;
		}
		uo_wdrop_only(w, p->fd, p->r, p->keep, UO_ALIGN);
		uo_wpend_done(w, i);
	}
}

static void uo_wflush(struct uo_watch *w, int fd, struct uo_range r)
{
	uint64_t end = r.end == UO_EOF ? uo_file_size(fd) : r.end, sent;
	struct uo_cs cs, rc;
	struct stat sb;

	/*
	 * An unlinked file's pages go with its last descriptor: writing them
	 * out would be disk writes for nothing (restic's temporary packs,
	 * 16 MiB each, were as many bytes as the backup itself).
	 */
	if (fstat(fd, &sb) == 0 && sb.st_nlink == 0)
		return;
	if (w->wf.no_flush)
		return;
	/*
	 * Not while UO_W_INFLIGHT windows of the file are under writeback
	 * already: a full disk queue would block us with the file open
	 * (wfile.c, UO_WF_INFLIGHT).  The drop behind it starts it again later.
	 */
	if (uo_cachestat(fd, 0, 0, &cs) != 0)
		cs.nr_dirty = UINT64_MAX / w->page;
	else if (cs.nr_writeback * w->page >= UO_W_INFLIGHT * w->o->tuning.window)
		return;
	if (end <= r.start)
		return;
	/*
	 * What was submitted, no more than the range had dirty: its
	 * clean pages are not written, and the sample's bound (wb_until) or a
	 * busy disk cut the submission short.
	 */
	if (uo_cachestat(fd, r.start, end - r.start, &rc) == 0)
		cs.nr_dirty = rc.nr_dirty;
	sent = uo_wf_writeback(&w->wf, fd, r.start, (uint64_t)uo_rlen(r));
	w->flushed += sent < cs.nr_dirty * w->page ? sent : cs.nr_dirty * w->page;
}

static void uo_wapply(struct uo_watch *w, struct uo_wfd *f, struct uo_advice adv)
{
	uint64_t span = UO_MEMORY_FOLIOS * f->t.align;

	/*
	 * A sample late or far (a loaded machine, a reader faster than a
	 * window per sample) has the policy's probe start ahead of where the
	 * last one ended: the folios between were never probed, and would be
	 * taken as not cached before and dropped (a hot file read at 400 MiB/s
	 * lost 194 of its 512 MiB).  They are probed now, as far back as the
	 * policy's mask reaches: what the reader passed reads as cached and is
	 * kept; the file's own sweep knows what was cached at first sight.
	 */
	if (!uo_range_empty(adv.probe) && f->st.probed && f->st.probed < adv.probe.start &&
	    f->t.align && f->st.probed % f->t.align == 0) {
		adv.probe.start = f->st.probed;
		if (adv.probe.end - adv.probe.start > span)
			adv.probe.start = adv.probe.end - span;
	}
	if (!uo_range_empty(adv.probe)) {
		struct uo_event ev = { .end = adv.probe.end, .len = adv.probe.end - adv.probe.start,
				       .dir = f->st.dir };

		ev.flags = (uint8_t)uo_wprobe(w, f->ours, adv.probe, f->t.align, &ev.cached);
		/* The answer brings no advice of its own. */
		uo_observe(&f->st, &f->t, &ev);
	}
	if (adv.flags & UO_ADV_PROMOTED && !f->counted) {
		f->counted = true;
		w->streams++;
		if (w->o->verbose)
			uo_wsay("watch: pid %d fd %d: a %s stream", (int)w->procs[f->proc].pid,
				f->fd, f->st.dir == UO_READ ? "read" : "write");
	}
	if (!uo_range_empty(adv.flush))
		uo_wflush(w, f->ours, adv.flush);
	if (!uo_range_empty(adv.drop)) {
		if (adv.flags & UO_ADV_WAIT)
			uo_wpend_add(w, f->ours, adv.drop, adv.keep);
		else
			uo_wdrop(w, f->ours, adv.drop, adv.keep, f->t.align);
	}
}

static void uo_wevent(struct uo_watch *w, struct uo_wfd *f, uint64_t end, uint64_t len,
		      unsigned dir)
{
	struct uo_event ev = { .end = end, .len = len, .dir = (uint8_t)dir,
			       .flags = UO_EV_CURSOR };

	f->mark = end;
	uo_wapply(w, f, uo_observe(&f->st, &f->t, &ev));
}

/* ---- descriptors ---- */

/* /proc/PID/io read now: false if it cannot be. */
static bool uo_wproc_io_read(const struct uo_wproc *p, uint64_t *calls, uint64_t *disk,
			     uint64_t *rchar, uint64_t *syscr, uint64_t *rbytes)
{
	char buf[512], *s;
	ssize_t n;

	*calls = *disk = *rchar = *syscr = *rbytes = 0;
	if (p->io < 0 || (n = pread(p->io, buf, sizeof(buf) - 1, 0)) <= 0)
		return false;
	buf[n] = '\0';
	for (s = buf; s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
		if (!strncmp(s, "rchar:", 6)) {
			*rchar = strtoull(s + 6, NULL, 10);
			*calls += *rchar;
		} else if (!strncmp(s, "wchar:", 6)) {
			*calls += strtoull(s + 6, NULL, 10);
		} else if (!strncmp(s, "syscr:", 6)) {
			*syscr = strtoull(s + 6, NULL, 10);
		} else if (!strncmp(s, "read_bytes:", 11)) {
			*rbytes = strtoull(s + 11, NULL, 10);
			*disk += *rbytes;
		} else if (!strncmp(s, "write_bytes:", 12)) {
			*disk += strtoull(s + 12, NULL, 10);
		}
	}
	return true;
}

/*
 * The process's /proc/PID/io counters, read at each sample before its
 * descriptors are: io_known says whether they could be.
 */
static void uo_wproc_io(struct uo_wproc *p)
{
	uint64_t calls, disk, rchar, syscr, rbytes;

	p->io_known = uo_wproc_io_read(p, &calls, &disk, &rchar, &syscr, &rbytes);
	if (!p->io_known)
		return;
	if (p->unclaimed == UO_UNKNOWN)
		p->unclaimed = rbytes;
	p->io_calls = calls;
	p->io_disk = disk;
	p->io_rchar = rchar;
	p->io_syscr = syscr;
}

/* The reads' counters as a descriptor's position is read: where its next move is measured from. */
static void uo_wfd_reads_mark(const struct uo_watch *w, struct uo_wfd *f)
{
	const struct uo_wproc *p = &w->procs[f->proc];

	f->rchar = p->io_known ? p->io_rchar : UO_UNKNOWN;
	f->syscr = p->io_syscr;
}

/*
 * How much of a forward move of a reader's position it read.  A program
 * reading 4 KiB blocks at random (lseek, read: a database's lookups)
 * moves its position anywhere between two samples, and a jump ahead
 * told to the policy as data read made runs of what was skipped: a
 * cached 256 MiB file read that way lost 160 MiB, the program running
 * 6-13x slower.  What the process's read calls moved since the position
 * was last read (rchar) bounds what this descriptor read; a move past it
 * by more than the policy's slack was a seek, and is told as one (no
 * bytes, at the new position): a new run, as the library starts one at
 * a read away from the last.  A move within the bound may still be a
 * seek among many reads (a fast random reader can be taken for a stream
 * for a while).  Keeping, in a stream's drops, whatever the residency
 * table saw cached at first sight was tried as a backstop and withdrawn:
 * restic restore then lost the hot set whole in the check_watch suite
 * (0.0, 13.3, 0.0, 0.0%; 99.9% without it).
 */
static uint64_t uo_wfd_read_len(struct uo_watch *w, struct uo_wfd *f, uint64_t moved)
{
	const struct uo_wproc *p = &w->procs[f->proc];
	uint64_t calls, disk, rchar, syscr, rbytes;

	if (!p->io_known || f->rchar == UO_UNKNOWN || moved <= p->io_rchar - f->rchar + f->t.slack)
		return moved;
	/* Counters are read before positions: reads between the two, counted now. */
	if (!uo_wproc_io_read(p, &calls, &disk, &rchar, &syscr, &rbytes) ||
	    moved <= rchar - f->rchar + f->t.slack)
		return moved;
	/*
	 * No read call at all since: a splice (which rchar does not count,
	 * nor syscr) moved it, a copier's stream.  Believed, as before.
	 */
	if (syscr == f->syscr)
		return moved;
	return 0;
}

static unsigned uo_wdir(const struct uo_wfd *f, uint64_t size)
{
	struct uo_cs cs;

	switch (f->flags & O_ACCMODE) {
	case O_RDONLY:
		return UO_READ;
	case O_WRONLY:
		return UO_WRITE;
	default:
		/*
		 * Both ways: a file that grows, or holds dirty pages when first
		 * seen (one long copy_file_range into it moves its position only
		 * at the end), is being written; once written, it stays so.
		 */
		if (size > f->size || (f->st.state != UO_NEW && f->st.dir == UO_WRITE))
			return UO_WRITE;
		if (f->st.state == UO_NEW && f->ours >= 0 && uo_cachestat(f->ours, 0, 0, &cs) == 0 &&
		    (cs.nr_dirty || cs.nr_writeback))
			return UO_WRITE;
		return UO_READ;
	}
}

/* Open for writing: only then is its file's growth the program's. */
static unsigned uo_wfd_writes(const struct uo_wfd *f)
{
	return (f->flags & O_ACCMODE) != O_RDONLY ? UO_WF_WRITABLE : 0;
}

static void uo_wfd_drop_ours(struct uo_wfd *f)
{
	if (f->ours >= 0)
		close(f->ours);
	if (f->info >= 0)
		close(f->info);
	f->ours = -1;
	f->info = -1;
	f->kind = UO_WF_IGNORED;
}

struct uo_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* The next descriptor number of a getdents64 buffer of /proc/PID/fd (n bytes); -1 at its end. */
static long uo_wfd_next(const char *buf, long n, long *off)
{
	while (*off < n) {
		const struct uo_dirent64 *de = (const struct uo_dirent64 *)(buf + *off);
		char *end;
		long fd;

		*off += de->d_reclen;
		fd = strtol(de->d_name, &end, 10);
		if (!*end && end != de->d_name && fd >= 0)
			return fd;
	}
	return -1;
}

/*
 * Has the process another regular file than f's open for reading, one
 * whose reads from the disk may be in its read_bytes?  Its own listing
 * and fdinfo, on descriptors of our own: the scan in progress holds the
 * process's listing at an offset.
 */
static bool uo_wproc_reads_other(const struct uo_watch *w, const struct uo_wfd *f)
{
	pid_t pid = w->procs[f->proc].pid;
	uint64_t rdwr = 0, small = f->t.align > w->page ? f->t.align : w->page;
	char path[64], buf[4096];
	bool other = false;
	long n;
	int dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return true;
	while (!other && (n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		long off = 0, fd;

		while (!other && (fd = uo_wfd_next(buf, n, &off)) >= 0) {
			struct uo_fdinfo fi;
			struct stat sb;
			char name[24];
			int info;

			snprintf(name, sizeof(name), "%ld", fd);
			if (fd == f->fd || fstatat(dir, name, &sb, 0) != 0 || !S_ISREG(sb.st_mode) ||
			    ((uint64_t)sb.st_ino == f->ino && (uint64_t)sb.st_dev == f->dev))
				continue;
			snprintf(path, sizeof(path), "/proc/%d/fdinfo/%ld", (int)pid, fd);
			info = open(path, O_RDONLY | O_CLOEXEC);
			/*
			 * Not told: taken for a reader.  So is a file open
			 * read-write (a reader of two files in step that
			 * opened one "r+b" made the other's head, another
			 * program's, its own: 0 of 16 MiB left): fdinfo
			 * counts no reads, and its position moves with
			 * writes too and not with preads (sqlite's).  What a
			 * file gave read_bytes is about its size, though:
			 * read-write files of a folio at most together could
			 * hide no more than that folio of a head, and are let
			 * be (every process a test harness starts holds its
			 * message file read-write: Check's, 109 bytes).
			 */
			if (info < 0 || uo_read_fdinfo(info, &fi) != 0 ||
			    (fi.flags & O_ACCMODE) == O_RDONLY)
				other = true;
			else if ((fi.flags & O_ACCMODE) == O_RDWR && sb.st_size > 0) {
				rdwr += ((uint64_t)sb.st_size + w->page - 1) / w->page * w->page;
				other = rdwr > small;
			}
			if (info >= 0)
				close(info);
		}
	}
	close(dir);
	return other;
}

/*
 * A reader found under way (useonce -p, or a process first seen with
 * the file open): are the pages cached of its file the ones it read from
 * the disk itself?  Its /proc/PID/io read_bytes (what it has brought from
 * the disk, not yet given to another of its files) covers them, and they
 * are the file's head and nothing else: all of it up to the position,
 * at most readahead and a window past it.  Then they were not cached
 * before, and they go behind it as a new stream's do.  Taken as cached
 * before, they stayed: 40 MiB of a copy's source, read before a -p, kept
 * for the whole copy in a 256 MiB cgroup.  Someone else's cached head of
 * the file would have spared the reader those reads, so they could not
 * be its own as well.  What read_bytes gave one file, no other gets.  And
 * the head must explain nearly all of it (all but a window): read_bytes
 * counts every file the process ever read from the disk, so one that had
 * read 48 MiB of another file, now closed, seemed to own the 30 MiB
 * cached head of a file another program had cached, and that head went
 * (0 of 16 MiB left; 16 of 16 before this rule).  A process whose reads
 * of other files happen to add up to this head, less a window, would
 * still be mistaken; so one with another regular file open for reading is
 * (uo_wproc_reads_other, read-write ones included): a reader of two files
 * in step (cmp, diff, sort -m) reads one from the disk as far as the
 * other's cached head, and the hot head of the file looked at first went
 * (0 of 16 MiB left).
 */
static bool uo_wfd_own_prefix(struct uo_watch *w, struct uo_wfd *f, uint64_t front,
			      uint64_t size, uint64_t cached)
{
	struct uo_wproc *p = &w->procs[f->proc];
	struct uo_cs cs;

	if (p->scans || !p->io_known || p->unclaimed == UO_UNKNOWN || cached > p->unclaimed ||
	    p->unclaimed - cached > f->t.window || front <= f->t.window || cached < front ||
	    cached > front + f->t.lookahead + f->t.window || size <= cached + f->t.window)
		return false;
	if (uo_cachestat(f->ours, 0, front, &cs) != 0 || cs.nr_cache * w->page < front ||
	    uo_wproc_reads_other(w, f))
		return false;
	p->unclaimed -= cached;
	return true;
}

/*
 * First sight of a descriptor.  One whose file holds no more cached than
 * the program's own progress explains is taken to have been streamed from
 * its start (its pages so far were the stream's: also true of a copy
 * already running when we attach); one with more cached starts its run
 * here, and what lies behind is left to the kernel.
 */
static void uo_wfd_open(struct uo_watch *w, struct uo_wfd *f)
{
	struct uo_wproc *p = &w->procs[f->proc];
	struct uo_fdinfo fi;
	char name[32], path[64];
	struct stat sb, ours;
	ssize_t n;
	struct uo_cs cs;
	uint64_t size, cached, clean, front, len = 0;
	unsigned dir;

	f->ours = -1;
	f->file = -1;
	f->kind = UO_WF_IGNORED;
	f->settled = false;
	snprintf(name, sizeof(name), "%d", f->fd);
	f->info = openat(p->infodir, name, O_RDONLY | O_CLOEXEC);
	if (f->info < 0 || uo_read_fdinfo(f->info, &fi) != 0)
		goto ignore;
	f->ino = fi.ino;
	f->mnt = fi.mnt;
	f->flags = fi.flags;
	/* O_PATH: no I/O goes through it, and opening its file would be ours. */
	if (fi.flags & O_PATH)
		goto settled;
	/*
	 * Pipes, sockets and the like name no path (and live on mounts no
	 * mountinfo lists); reading the link asks no filesystem anything.
	 */
	n = readlinkat(p->fddir, name, path, sizeof(path) - 1);
	if (n <= 0 || path[0] != '/')
		goto settled;
	if (uo_wmnt_remote(w, p->pid, fi.mnt)) {
		if (w->o->verbose && !f->remote_said)
			uo_wsay("watch: pid %d fd %d: on a FUSE or network filesystem (or an "
				"unknown mount): not opened again", (int)p->pid, f->fd);
		f->remote_said = true;
		goto settled;
	}
	/* fstatat follows the magic link: the file itself, not opened. */
	if (fstatat(p->fddir, name, &sb, 0) != 0)
		goto ignore;
	if (!S_ISREG(sb.st_mode) || (fi.ino && sb.st_ino != fi.ino) || (fi.flags & O_DIRECT))
		goto settled;
	/* Our open would break its lease: wfile.h. */
	if (uo_wf_leased(&w->wf, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino)) {
		if (w->o->verbose && !f->lease_said)
			uo_wsay("watch: pid %d fd %d: the file has a lease: not opened again",
				(int)p->pid, f->fd);
		f->lease_said = true;
		goto ignore;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)p->pid, f->fd);
	/* O_NOATIME: our reads are none, but the open must not look like one. */
	f->ours = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOATIME);
	if (f->ours < 0 && errno == EPERM)
		f->ours = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (f->ours < 0) {
		if (w->o->verbose)
			uo_wsay("watch: pid %d fd %d: cannot open the file again: %s",
				(int)p->pid, f->fd, strerror(errno));
		goto ignore;
	}
	/*
	 * An unlinked file (restic's temporary packs) is the program's own
	 * working memory: nobody else can have it cached, nobody will read
	 * it again, and its pages go when the program closes it, unless a
	 * descriptor of ours is the last: then they would go at our close,
	 * later, and in our CPU time.  Left alone.
	 */
	if (fstat(f->ours, &ours) != 0 || ours.st_ino != sb.st_ino || ours.st_dev != sb.st_dev ||
	    ours.st_nlink == 0 || uo_wf_memory_fs(f->ours))
		goto ignore;
	f->dev = (uint64_t)ours.st_dev;
	uo_wfan_mark(w, f->ours, (uint64_t)ours.st_dev, p->pid);
	/* info stays open: pread again at every sample, not opened each time. */
	f->kind = UO_WF_GUARDED;
	w->churn++;
	size = (uint64_t)ours.st_size;
	f->pos = f->pos0 = fi.pos;
	uo_wfd_reads_mark(w, f);
	f->size = f->size0 = size;
	f->t = w->o->tuning;
	/*
	 * A reader's pages go at every sample, a folio at a time, once what
	 * lies ahead was probed: samples come about a window of data apart,
	 * and a drop only every window let a late sample find two behind
	 * (restic reads in bursts: its file held 14-32 MiB).  Probes stay a
	 * window apart, which is what keeps them covering every folio.
	 */
	f->t.read_step = f->t.align;
	uo_reset(&f->st);
	w->files++;
	dir = uo_wdir(f, size);
	if (uo_cachestat(f->ours, 0, 0, &cs) != 0) {
		f->file = uo_wfiles_see(&w->wf, f->ours, uo_wfd_writes(f));
		uo_wevent(w, f, fi.pos, 0, dir);
		return;
	}
	cached = cs.nr_cache * w->page;
	/*
	 * A writer's front: its position, or the end of the file when the
	 * data up to the end is dirty (written by one long call whose
	 * position has not moved yet).  An overwrite in place has its dirty
	 * pages behind the position, and the rest was cached before.
	 */
	front = fi.pos;
	if (dir == UO_WRITE && size > fi.pos &&
	    (cs.nr_dirty + cs.nr_writeback) * w->page * 2 >= size - fi.pos)
		front = size;
	/*
	 * Cold but for the program's own progress (readahead beyond a
	 * reader): a new file written, or a cold one read.  Such a file is a
	 * stream after one window (a backup's 16 MiB packs, a restore's
	 * files): nobody had its pages, and a program that makes or reads a
	 * file whole rarely reads it again soon.  Only where that can be
	 * told: a reader seen near its start, in a file bigger than what is
	 * cached (a hot file read whole looks the same as a cold one read to
	 * its end); a writer whose clean pages fit in a window (an append to
	 * a hot log has the whole log clean); a reader found under way whose
	 * file's head is what it read from the disk (uo_wfd_own_prefix).
	 * Otherwise what is cached now is taken to have been cached before,
	 * and kept.
	 */
	clean = cached - ((cs.nr_dirty + cs.nr_writeback) * w->page < cached ?
			  (cs.nr_dirty + cs.nr_writeback) * w->page : cached);
	if (dir == UO_READ ?
	    front <= f->t.window && cached <= front + f->t.lookahead + f->t.window &&
	    size > cached + f->t.window :
	    clean <= f->t.window && size <= front + f->t.window) {
		f->fresh = true;
		len = front;
		if (f->t.threshold > f->t.window)
			f->t.threshold = f->t.window;
	} else if (dir == UO_READ && uo_wfd_own_prefix(w, f, front, size, cached)) {
		f->fresh = true;
		len = front;
		if (f->t.threshold > f->t.window)
			f->t.threshold = f->t.window;
	}
	if (!f->fresh && f->t.align) {
		/*
		 * What is cached from the reader's position on, seen now, is
		 * taken to have been cached before: the policy's first probe
		 * would come a window and a lookahead later, past what a fast
		 * reader has already read (a hot file read whole in a blink
		 * was dropped whole).
		 */
		struct uo_event ev = { .dir = (uint8_t)dir };
		struct uo_range r;

		r.start = front - front % f->t.align;
		r.end = r.start + UO_MEMORY_FOLIOS * f->t.align;
		f->st.dir = (uint8_t)dir;
		ev.flags = (uint8_t)uo_wprobe(w, f->ours, r, f->t.align, &ev.cached);
		ev.end = r.end;
		ev.len = r.end - r.start;
		uo_observe(&f->st, &f->t, &ev);
	}
	f->file = uo_wfiles_see(&w->wf, f->ours, uo_wfd_writes(f) | (f->fresh ? UO_WF_FRESH : 0));
	uo_wevent(w, f, front, len, dir);
	/*
	 * A stream found under way (useonce -p) is sampled as after a burst
	 * (uo_whold_interval): a copy held still while we attached backed the
	 * interval off to 100 ms, and the first sample after it moved on
	 * came 75 ms late.
	 */
	if (f->st.state == UO_STREAM)
		w->stream_moved = true;
	return;
settled:
	/* The same file stays ignored: only its fdinfo is read again (uo_wfd_recheck). */
	f->settled = true;
	return;
ignore:
	uo_wfd_drop_ours(f);
}

/*
 * An ignored descriptor, now and then: a number reused for a file since
 * we looked.  One ignored for what its file is costs one pread of its
 * fdinfo while it names the same file (same inode, mount and flags: a
 * fcntl can set O_DIRECT); it was opened, read, link-read, stat'ed and
 * closed each time (five ignored descriptors of a static reader, /dev/null
 * and pipes, were 7% of its watcher's CPU).
 */
static void uo_wfd_recheck(struct uo_watch *w, struct uo_wfd *f)
{
	struct uo_fdinfo fi;

	if (f->settled && f->info >= 0 && uo_read_fdinfo(f->info, &fi) == 0 &&
	    fi.ino == f->ino && fi.mnt == f->mnt && fi.flags == f->flags)
		return;
	uo_wfd_drop_ours(f);
	uo_wfd_open(w, f);
}

/*
 * A guarded descriptor's file, opened again for this sample (uo_wshut
 * closed ours at the end of the last): false if it cannot be (the
 * program closed it, or a lease is on it now: our open would break it).
 * The watcher's file of it gets a copy rather than opening its handle.
 *
 * no_lease: its fdinfo, just read, shows no lease held through it.  Our
 * read-only open breaks only a write lease (or delegation), and one can
 * be held only by the file's sole open file description: the program's
 * is open, so it would be that one, which fdinfo shows.  /proc/locks,
 * read for every sample that opened a file, is then not read at all (it
 * lists every lock of the machine: three calls and its formatting).
 */
static bool uo_wfd_reopen(struct uo_watch *w, struct uo_wfd *f, bool no_lease)
{
	char path[64];
	struct stat sb;

	if (f->ours >= 0)
		return true;
	if (!no_lease && uo_wf_leased(&w->wf, f->dev, f->ino))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)w->procs[f->proc].pid, f->fd);
	f->ours = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOATIME);
	if (f->ours < 0 && errno == EPERM)
		f->ours = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (f->ours < 0)
		return false;
	if (fstat(f->ours, &sb) != 0 || (uint64_t)sb.st_dev != f->dev ||
	    (uint64_t)sb.st_ino != f->ino) {
		close(f->ours);
		f->ours = -1;
		return false;
	}
	if (f->file >= 0)
		uo_wfiles_lend(&w->wf, f->file, f->ours, f->dev, f->ino);
	return true;
}

/* The program closed the descriptor (or it names another file now). */
static void uo_wfd_close(struct uo_watch *w, struct uo_wfd *f)
{
	/* No writeback started as it closes (wfile.h: no_flush); the file's later passes do. */
	w->wf.no_flush = true;
	/*
	 * The stream's last drop is left to the watcher's files where they
	 * can open it again: they drop what it brought in, and not while it
	 * closes (uo_wf_last says why).
	 */
	if (f->kind == UO_WF_GUARDED && !(f->file >= 0 && w->wf.reopen)) {
		uint64_t size = uo_file_size(f->ours);

		/* What was written since the last sample is the stream's too. */
		if ((f->st.state == UO_STREAM || f->st.state == UO_TRACKING) &&
		    f->st.dir == UO_WRITE && size > f->mark && f->mark >= f->size)
			uo_wevent(w, f, size, size - f->mark, UO_WRITE);
		if (f->st.state == UO_STREAM)
			uo_wapply(w, f, uo_closing(&f->st, &f->t));
	}
	/* Small files a tree is made of, and what pread brought in, go there. */
	if (f->file >= 0)
		uo_wfiles_release(&w->wf, f->file);
	f->file = -1;
	uo_wfd_drop_ours(f);
	w->wf.no_flush = false;
}

static void uo_wfd_sample(struct uo_watch *w, struct uo_wfd *f)
{
	struct uo_fdinfo fi;
	uint64_t size, dpos, dsize;
	unsigned dir;

	if (f->kind != UO_WF_GUARDED) {
		/* A number reused for a file since we looked: checked now and then. */
		if ((w->ticks + (unsigned)f->fd) % UO_W_RECHECK == 0)
			uo_wfd_recheck(w, f);
		return;
	}
	if (uo_read_fdinfo(f->info, &fi) != 0 || fi.ino != f->ino || fi.mnt != f->mnt) {
		uo_wfd_close(w, f);
		uo_wfd_open(w, f);
		return;
	}
	if ((f->flags & O_ACCMODE) == O_RDONLY) {
		size = f->size;
	} else {
		struct stat sb;
		char name[16];
		bool known;

		/* Through the program's descriptor: a stat opens nothing. */
		snprintf(name, sizeof(name), "%d", f->fd);
		known = fstatat(w->procs[f->proc].fddir, name, &sb, 0) == 0 &&
			(uint64_t)sb.st_ino == f->ino && (uint64_t)sb.st_dev == f->dev;
		if (known && sb.st_nlink == 0) {
			/* Unlinked since we looked: left alone, as above. */
			uo_wfd_close(w, f);
			return;
		}
		size = known ? (uint64_t)sb.st_size : 0;
	}
	/*
	 * Nothing moved: nothing to tell the policy, and the file is not
	 * opened.  An idle reader's file was opened and closed at every
	 * sample (27 opens and closes a second that inotify and on-access
	 * scanners see, for nothing).
	 */
	if (fi.pos == f->pos && size <= f->size) {
		uo_wfd_reads_mark(w, f);
		return;
	}
	/*
	 * What the process's counters gained that this descriptor shows
	 * (uo_wproc_unexplained): a write moves both, a copy's two ends
	 * one each.
	 */
	dpos = fi.pos > f->pos ? fi.pos - f->pos : 0;
	dsize = size > f->size ? size - f->size : 0;
	w->procs[f->proc].told += dpos > dsize ? dpos : dsize;
	if (!uo_wfd_reopen(w, f, fi.no_lease)) {
		/* Closed since (the next scan sees it), or leased: no longer ours to open. */
		uo_wfd_close(w, f);
		return;
	}
	dir = uo_wdir(f, size);
	if (dir == UO_WRITE) {
		/*
		 * A writer's front is its position, or the end of a file that
		 * grows while the position stays (pwrite, or one long
		 * copy_file_range whose position moves only when it returns).
		 */
		uint64_t end = size > f->size && size > fi.pos ? size : fi.pos;

		if (end > f->mark) {
			w->moved += end - f->mark;
			uo_wevent(w, f, end, end - f->mark, UO_WRITE);
		} else if (fi.pos != f->pos && size <= f->size) {
			uo_wevent(w, f, fi.pos, 0, UO_WRITE);
		}
	} else if (fi.pos > f->pos) {
		uint64_t len = uo_wfd_read_len(w, f, fi.pos - f->pos);

		w->moved += len;
		uo_wevent(w, f, fi.pos, len, UO_READ);
	} else if (fi.pos < f->pos) {
		uo_wevent(w, f, fi.pos, 0, UO_READ);
	}
	if (f->st.state == UO_STREAM && (fi.pos != f->pos || size > f->size))
		w->stream_moved = true;
	f->pos = fi.pos;
	uo_wfd_reads_mark(w, f);
	if (size > f->size)
		f->size = size;
	if ((f->flags & O_ACCMODE) == O_RDONLY && f->pos > f->size)
		f->size = uo_file_size(f->ours);
}

/* ---- processes ---- */

static int uo_wproc_index(struct uo_watch *w, pid_t pid)
{
	unsigned i;

	for (i = 0; i < w->nprocs; i++)
		if (w->procs[i].pid == pid && !w->procs[i].gone)
			return (int)i;
	return -1;
}

/*
 * The mountinfo of p's mount namespace, opened before the table is read
 * from it: a change after that polls.  Processes of one namespace share
 * one open file (and its poll state), read once.
 */
static void uo_wproc_mounts(struct uo_watch *w, struct uo_wproc *p)
{
	char path[64];
	struct stat sb;
	unsigned i;

	p->mntinfo = -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)p->pid);
	p->mntns = stat(path, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
	for (i = 0; p->mntns && i < w->nprocs; i++)
		if (!w->procs[i].gone && w->procs[i].mntns == p->mntns &&
		    w->procs[i].mntinfo >= 0) {
			p->mntinfo = fcntl(w->procs[i].mntinfo, F_DUPFD_CLOEXEC, 0);
			if (p->mntinfo >= 0)
				return;
		}
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)p->pid);
	p->mntinfo = open(path, O_RDONLY | O_CLOEXEC);
	if (p->mntinfo >= 0)
		uo_wmnt_read(w, p->pid, p->mntinfo);
}

/* Returns 0, or an errno: the process cannot be watched. */
static int uo_wproc_add(struct uo_watch *w, pid_t pid)
{
	struct uo_wproc *p;
	char path[64];
	int err;

	if (uo_wproc_index(w, pid) >= 0)
		return 0;
	if (w->nprocs == w->cap_procs)
		w->procs = uo_grow(w->procs, &w->cap_procs, sizeof(*w->procs));
	p = &w->procs[w->nprocs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->unclaimed = UO_UNKNOWN;
	/* Taken first: from now on the pid cannot name another process unseen. */
	p->pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	p->fddir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	p->infodir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->fddir < 0 || p->infodir < 0) {
		err = errno;
		if (p->pidfd >= 0)
			close(p->pidfd);
		if (p->fddir >= 0)
			close(p->fddir);
		if (p->infodir >= 0)
			close(p->infodir);
		return err ? err : EACCES;
	}
	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	p->io = open(path, O_RDONLY | O_CLOEXEC);
	uo_wproc_mounts(w, p);
	w->nprocs++;
	uo_wfan_mark_cwd(w, pid);
	return 0;
}

static void uo_wproc_gone(struct uo_watch *w, unsigned pi)
{
	struct uo_wproc *p = &w->procs[pi];
	unsigned i;

	for (i = 0; i < w->nfds; i++)
		if (w->fds[i].proc == (int)pi) {
			uo_wfd_close(w, &w->fds[i]);
			w->fds[i] = w->fds[--w->nfds];
			i--;
		}
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->mntinfo >= 0)
		close(p->mntinfo);
	if (p->io >= 0)
		close(p->io);
	close(p->fddir);
	close(p->infodir);
	p->pidfd = p->fddir = p->infodir = p->mntinfo = p->io = -1;
	p->gone = true;
}

/*
 * What /proc/PID/stat says after the command's name ("S PPID ..."): the
 * name may hold anything, so after the last ')'.  NULL if it cannot be
 * read, "" if it cannot be made out.
 */
static const char *uo_wproc_stat(pid_t pid, char *buf, size_t size)
{
	char path[64], *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' ? paren + 2 : "";
}

/* A zombie has closed its descriptors: it counts as gone. */
static bool uo_wproc_alive(const struct uo_wproc *p)
{
	char buf[512];
	const char *st;

	if (p->pidfd >= 0) {
		struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };

		return poll(&pfd, 1, 0) == 0;
	}
	st = uo_wproc_stat(p->pid, buf, sizeof(buf));
	return st && *st != 'Z' && *st != 'X';
}

/* New children of every thread of the process join the watched set. */
static void uo_wproc_children(struct uo_watch *w, pid_t pid)
{
	char path[320], buf[4096];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *p, *end;
		ssize_t n;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (p = buf; *p; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			if (c > 0 && uo_wproc_add(w, (pid_t)c) == 0 && w->o->verbose)
				uo_wsay("watch: now watching pid %ld too", c);
		}
	}
	closedir(d);
}

static struct uo_wfd *uo_wfd_find(struct uo_watch *w, int proc, int fd)
{
	unsigned i;

	for (i = 0; i < w->nfds; i++)
		if (w->fds[i].proc == proc && w->fds[i].fd == fd)
			return &w->fds[i];
	return NULL;
}

/*
 * Did the process move data its guarded descriptors do not show (after
 * its scan)?  Their positions and sizes tell what read, write and
 * copy_file_range moved through them; pread and pwrite, which move no
 * position, and reads or writes through a mapping, show only in the
 * process's counters: rchar/wchar for calls, read_bytes/write_bytes for
 * what reached the cache.  What those counters gained beyond what the
 * descriptors moved, by more than slack since the last time it did,
 * calls for a look at every file of the residency table (wfile.h:
 * moved); otherwise only the files whose descriptors moved are opened
 * (they are lent one).  Every file was opened at each sample a watched
 * process moved anything: a reader's stderr file, a Python's libraries.
 * Counters that cannot be read say yes.
 */
static bool uo_wproc_unexplained(struct uo_wproc *p, uint64_t slack)
{
	int64_t d[2];
	bool more = false;
	unsigned k;

	if (!p->io_known)
		return true;
	d[0] = (int64_t)(p->io_calls - p->told);
	d[1] = (int64_t)(p->io_disk - p->told);
	for (k = 0; k < 2; k++) {
		/*
		 * Readahead runs ahead of the position, partial pages dirty a
		 * whole page: the lowest difference seen is the reference,
		 * and only growth past it by slack counts.
		 */
		if (!p->io_seen || d[k] < p->low[k])
			p->low[k] = d[k];
		else if (d[k] - p->low[k] > (int64_t)slack)
			more = true;
	}
	/*
	 * The descriptors moved more than the calls did (rchar and wchar
	 * count read, write, copy_file_range and sendfile as their
	 * positions move): moves that carried no data, a forward lseek,
	 * one open file shared by several descriptors (>out 2>&1), a file
	 * someone else grows.  What they claim cannot be trusted, and it
	 * hid as much pread or mapping I/O.  Only the calls: read_bytes
	 * falls behind the positions for every cached read.  splice moves
	 * positions that rchar and wchar do not count: a splicing copier
	 * has every file looked at each sample, as every program had before
	 * this test.
	 */
	if (p->io_seen && p->high - d[0] > (int64_t)slack)
		more = true;
	if (!p->io_seen || more || d[0] > p->high)
		p->high = d[0];
	if (!p->io_seen || more) {
		p->low[0] = d[0];
		p->low[1] = d[1];
	}
	more |= !p->io_seen;
	p->io_seen = true;
	return more;
}

/* Lists the process's descriptors: new ones are looked at, vanished ones closed. */
static void uo_wproc_scan(struct uo_watch *w, unsigned pi)
{
	struct uo_wproc *p = &w->procs[pi];
	char buf[8192];
	unsigned i;
	long n;

	for (i = 0; i < w->nfds; i++)
		if (w->fds[i].proc == (int)pi)
			w->fds[i].seen = false;
	lseek(p->fddir, 0, SEEK_SET);
	while ((n = syscall(SYS_getdents64, p->fddir, buf, sizeof(buf))) > 0) {
		long off = 0, fd;

		while ((fd = uo_wfd_next(buf, n, &off)) >= 0) {
			struct uo_wfd *f = uo_wfd_find(w, (int)pi, (int)fd);

			if (f) {
				f->seen = true;
				continue;
			}
			if (w->nfds == w->cap_fds)
				w->fds = uo_grow(w->fds, &w->cap_fds, sizeof(*w->fds));
			f = &w->fds[w->nfds++];
			memset(f, 0, sizeof(*f));
			f->info = f->ours = -1;
			f->proc = (int)pi;
			f->fd = (int)fd;
			f->seen = true;
			uo_wfd_open(w, f);
		}
		/* Room left for more: that was all (no second call to hear it). */
		if (n < (long)sizeof(buf) - 512)
			break;
	}
	for (i = 0; i < w->nfds; i++) {
		struct uo_wfd *f = &w->fds[i];

		if (f->proc != (int)pi)
			continue;
		if (f->seen && f->kind == UO_WF_GUARDED && uo_wf_stopped(&w->wf))
			continue;
		if (!f->seen) {
			uo_wfd_close(w, f);
			w->fds[i] = w->fds[--w->nfds];
			i--;
		} else {
			uo_wfd_sample(w, f);
		}
	}
	p->scans++;
}

/* ---- fanotify: files opened and closed between two samples ---- */

/*
 * A backup's 16 MiB packs are written and closed in a few milliseconds,
 * a restore reads its packs with pread and closes them: sampling
 * descriptors misses many of them.  fanotify reports every open and close
 * on a filesystem, queued until we read it, so the watcher learns of each
 * file the watched processes touch even when it looks late.  Events name
 * files by handle, not by a descriptor: a busy machine makes thousands of
 * opens a second, and a descriptor opened for each (then closed unread)
 * doubled the watcher's CPU time; a handle is opened only for a file of
 * the watched processes.  A directory they open is looked through at
 * once: a backup reads each small file of a tree in a millisecond, before
 * we could look at it, and what was not cached when the directory was
 * opened is the program's when it opens it.  It needs CAP_SYS_ADMIN (and
 * CAP_DAC_READ_SEARCH to open handles); without, the watcher samples
 * descriptors only.
 */
#define UO_W_FAN_EVENTS	(FAN_OPEN | FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE | FAN_ONDIR)

static void uo_wfan_init(struct uo_watch *w)
{
	w->fan = -1;
	/* UO_WATCH_FANOTIFY=0: sampling alone, as without privileges (to compare). */
	if (geteuid() != 0 || (getenv("UO_WATCH_FANOTIFY") &&
			       !strcmp(getenv("UO_WATCH_FANOTIFY"), "0")))
		return;
	w->fan = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE |
			       FAN_REPORT_FID, O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_NOATIME);
}

/*
 * Where mount 'id' is mounted, from a mountinfo ("ID PARENT MAJ:MIN ROOT
 * POINT ..."), the point unescaped (\040 is a space): into out, after
 * 'prefix'.  False if it is not listed there.
 */
static bool uo_wmnt_point(const char *mountinfo, const char *prefix, uint64_t id, char *out,
			  size_t size)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen(mountinfo, "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = line, *q;
		size_t n;
		int field;

		if (strtoull(line, NULL, 10) != id)
			continue;
		for (field = 0; field < 4 && p; field++) {
			p = strchr(p, ' ');
			p = p ? p + 1 : NULL;
		}
		if (!p)
			break;
		n = (size_t)snprintf(out, size, "%s", prefix);
		for (q = p; *q && *q != ' ' && n + 1 < size; n++) {
			if (q[0] == '\\' && q[1] >= '0' && q[1] <= '3' && q[2] >= '0' && q[2] <= '7' &&
			    q[3] >= '0' && q[3] <= '7') {
				out[n] = (char)((q[1] - '0') * 64 + (q[2] - '0') * 8 + (q[3] - '0'));
				q += 4;
			} else {
				out[n] = *q++;
			}
		}
		out[n] = '\0';
		found = (*q == ' ' || !*q) && n < size - 1;
	}
	fclose(f);
	return found;
}

/*
 * Reports on the filesystem of fd (a file of pid's) from now on.  Its
 * mount's path is kept, not a descriptor: in our mount namespace if the
 * mount is there, else through pid's root.
 */
static void uo_wfan_mark(struct uo_watch *w, int fd, uint64_t dev, pid_t pid)
{
	struct uo_wmark *m = &w->marked[w->nmarked];
	char path[PATH_MAX], mi[64], root[64];
	struct statx sx;
	struct statfs sfs;
	unsigned i;

	if (w->fan < 0)
		return;
	for (i = 0; i < w->nmarked; i++)
		if (w->marked[i].dev == dev)
			return;
	if (w->nmarked == sizeof(w->marked) / sizeof(w->marked[0]) || fstatfs(fd, &sfs) != 0)
		return;
	if (fanotify_mark(w->fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, UO_W_FAN_EVENTS, fd,
			  NULL) != 0) {
		if (w->o->verbose)
			uo_wsay("watch: fanotify: cannot mark a filesystem: %s", strerror(errno));
		return;
	}
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	snprintf(mi, sizeof(mi), "/proc/%d/mountinfo", (int)pid);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID) &&
	    (uo_wmnt_point("/proc/self/mountinfo", "", sx.stx_mnt_id, path, sizeof(path)) ||
	     uo_wmnt_point(mi, root, sx.stx_mnt_id, path, sizeof(path))))
		m->path = strdup(path);
	m->dev = dev;
	memcpy(&m->fsid, &sfs.f_fsid, sizeof(m->fsid));
	w->nmarked++;
}

/*
 * The mount of marked filesystem i, opened for this batch: handles are
 * opened there.  -1 when it is not where it was (unmounted: nothing of
 * it is ours to do any more).  Opening a mount's root opens a directory
 * (or, for a file bind-mounted, that file) of the filesystem itself.
 */
static int uo_wfan_mount_fd(struct uo_watch *w, unsigned i)
{
	struct uo_wmark *m = &w->marked[i];
	struct statfs sfs;

	if (m->fd >= 0 || m->gone || !m->path)
		return m->fd;
	m->fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOATIME);
	if (m->fd >= 0 && (fstatfs(m->fd, &sfs) != 0 ||
			   memcmp(&sfs.f_fsid, &m->fsid, sizeof(m->fsid)))) {
		close(m->fd);
		m->fd = -1;
	}
	m->gone = m->fd < 0;
	return m->fd;
}

/* The end of a batch: no descriptor of a marked filesystem stays open. */
static void uo_wfan_unhold(struct uo_watch *w)
{
	unsigned i;

	for (i = 0; i < w->nmarked; i++) {
		if (w->marked[i].fd >= 0)
			close(w->marked[i].fd);
		w->marked[i].fd = -1;
		w->marked[i].gone = false;
	}
}

/* The filesystem a watched process works in (its current directory). */
static void uo_wfan_mark_cwd(struct uo_watch *w, pid_t pid)
{
	char path[64];
	struct statx sx;
	struct stat sb;
	int fd;

	if (w->fan < 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	/*
	 * Its mount first, asking its filesystem nothing (O_PATH opens no
	 * file, AT_STATX_DONT_SYNC makes FUSE and NFS answer from what they
	 * know): a remote directory is not opened, nor its files by handle.
	 */
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &sx) != 0 ||
	    !(sx.stx_mask & STATX_MNT_ID) || uo_wmnt_remote(w, pid, sx.stx_mnt_id)) {
		close(fd);
		return;
	}
	close(fd);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &sb) == 0)
		uo_wfan_mark(w, fd, (uint64_t)sb.st_dev, pid);
	close(fd);
}

static pid_t uo_wppid(pid_t pid)
{
	char buf[512];
	const char *st = uo_wproc_stat(pid, buf, sizeof(buf));

	return st && st[0] && st[1] == ' ' ? (pid_t)atoi(st + 2) : 0;
}

/* Is the event's maker watched?  A child not found yet joins the watched set here. */
static bool uo_wfan_ours(struct uo_watch *w, pid_t pid)
{
	unsigned i;
	pid_t ppid;

	if (uo_wproc_index(w, pid) >= 0)
		return true;
	for (i = 0; i < w->nforeign && i < 256; i++)
		if (w->foreign[i] == pid)
			return false;
	ppid = uo_wppid(pid);
	if (ppid > 0 && uo_wproc_index(w, ppid) >= 0 && uo_wproc_add(w, pid) == 0)
		return true;
	w->foreign[w->nforeign++ % 256] = pid;
	return false;
}

/*
 * The event's file, opened read-only by its handle; -1 if it is gone
 * (unlinked and closed: its pages went with it) or not a regular file.
 */
static int uo_wfan_open(struct uo_watch *w, const struct fanotify_event_metadata *m)
{
	const char *p = (const char *)m + m->metadata_len, *end = (const char *)m + m->event_len;

	while (p + sizeof(struct fanotify_event_info_header) <= end) {
		const struct fanotify_event_info_header *h = (const void *)p;
		const struct fanotify_event_info_fid *fid = (const void *)p;
		unsigned i;

		if (h->len == 0 || p + h->len > end)
			break;
		if (h->info_type == FAN_EVENT_INFO_TYPE_FID) {
			for (i = 0; i < w->nmarked; i++) {
				if (memcmp(&w->marked[i].fsid, &fid->fsid, sizeof(fid->fsid)))
					continue;
				/*
				 * The handle names no inode number we could
				 * look up unopened: a file of a filesystem
				 * with a lease anywhere is not opened (a
				 * directory cannot have one).
				 */
				if (!(m->mask & FAN_ONDIR) &&
				    uo_wf_leased_dev(&w->wf, w->marked[i].dev))
					return -1;
				if (uo_wfan_mount_fd(w, i) < 0)
					return -1;
				return open_by_handle_at(w->marked[i].fd,
						(struct file_handle *)(void *)fid->handle,
						O_RDONLY | O_CLOEXEC | O_NOATIME | O_NONBLOCK);
			}
			return -1;
		}
		p += h->len;
	}
	return -1;
}

/*
 * A close of a file the watcher follows, found by the event's handle
 * without opening it: the file was just closed, and a script may be
 * about to unmount its disk.  False if the event names no such file.
 */
static bool uo_wfan_closed(struct uo_watch *w, const struct fanotify_event_metadata *m)
{
	const char *p = (const char *)m + m->metadata_len, *end = (const char *)m + m->event_len;

	if ((m->mask & (FAN_OPEN | FAN_ONDIR)) || !(m->mask & (FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE)))
		return false;
	while (p + sizeof(struct fanotify_event_info_header) <= end) {
		const struct fanotify_event_info_header *h = (const void *)p;
		const struct fanotify_event_info_fid *fid = (const void *)p;
		const struct file_handle *fh = (const void *)fid->handle;
		unsigned i;
		int at;

		if (h->len == 0 || p + h->len > end)
			return false;
		if (h->info_type == FAN_EVENT_INFO_TYPE_FID) {
			if ((const char *)fh->f_handle + fh->handle_bytes > p + h->len)
				return false;
			for (i = 0; i < w->nmarked; i++) {
				if (memcmp(&w->marked[i].fsid, &fid->fsid, sizeof(fid->fsid)))
					continue;
				at = uo_wfiles_find_handle(&w->wf, w->marked[i].dev, fh);
				if (at < 0)
					return false;
				if (m->mask & FAN_CLOSE_WRITE)
					uo_wfiles_written(&w->wf, at);
				uo_wfiles_closed(&w->wf, at);
				return true;
			}
			return false;
		}
		p += h->len;
	}
	return false;
}

/* Reads what fanotify queued; true if some of it was the watched processes'. */
static bool uo_wfan_drain(struct uo_watch *w)
{
	char buf[16384] __attribute__((aligned(8)));
	bool ours = false, more;
	ssize_t n;

	/* Once per batch (and per sample: the loop drains first), if needed. */
	uo_wf_leases_forget(&w->wf);
	if (w->fan < 0)
		return false;
	for (more = true; more && (n = read(w->fan, buf, sizeof(buf))) > 0; ) {
		struct fanotify_event_metadata *m = (struct fanotify_event_metadata *)buf;

		/* A read that did not fill the buffer took all there was: no read for EAGAIN. */
		more = (size_t)n > sizeof(buf) / 2;

		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
			unsigned wrote;
			int i, fd;

			if (m->mask & FAN_Q_OVERFLOW)
				w->fan_lost++;
			if (!uo_wfan_ours(w, m->pid)) {
				w->fan_foreign++;
				continue;
			}
			if (uo_wfan_closed(w, m)) {
				w->fan_ours++;
				ours = true;
				w->churn++;
				continue;
			}
			fd = uo_wfan_open(w, m);
			if (fd < 0)
				continue;
			w->fan_ours++;
			ours = true;
			w->churn++;
			if (m->mask & FAN_ONDIR) {
				if (m->mask & FAN_OPEN)
					uo_wfiles_listing(&w->wf, fd);
				close(fd);
				continue;
			}
			/*
			 * Merged events (an open and its close read together,
			 * or two opens and two closes) are both an open and a
			 * close: wfile.h says why they are not counted.
			 */
			wrote = m->mask & FAN_CLOSE_WRITE ? UO_WF_WRITTEN : 0;
			if (m->mask & FAN_OPEN)
				uo_wfiles_see(&w->wf, fd, wrote | UO_WF_EVENT);
			if (m->mask & (FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE)) {
				i = uo_wfiles_find(&w->wf, fd);
				/* Its open came before we looked: a file made since counts. */
				if (i < 0)
					i = uo_wfiles_see(&w->wf, fd, wrote | UO_WF_EVENT);
				else if (wrote)
					uo_wfiles_written(&w->wf, i);
				uo_wfiles_closed(&w->wf, i);
			}
			close(fd);
		}
	}
	uo_wfan_unhold(w);
	return ours;
}

/*
 * A sleep's poll of the pidfds timed out (or, quiet false, did not):
 * the processes polled were alive as it ended, and the sample that
 * follows does not ask again (uo_wproc_alive).
 */
static void uo_wslept(struct uo_watch *w, bool quiet)
{
	unsigned i, n;

	for (i = 0, n = 0; i < w->nprocs; i++) {
		w->procs[i].slept = false;
		if (!w->procs[i].gone && w->procs[i].pidfd >= 0 && n++ < 64)
			w->procs[i].slept = quiet;
	}
	/* Polled just now, as uo_wexited would: its next poll comes UO_W_EXIT_POLL_NS later. */
	if (quiet && n <= 64)
		w->exit_polled_ns = uo_now_ns();
}

/* The pidfds of the watched processes still running, up to 64: how many. */
static unsigned uo_wpidfds(const struct uo_watch *w, struct pollfd *pfd)
{
	unsigned i, n;

	for (i = 0, n = 0; i < w->nprocs && n < 64; i++)
		if (!w->procs[i].gone && w->procs[i].pidfd >= 0) {
			pfd[n].fd = w->procs[i].pidfd;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			n++;
		}
	return n;
}

/*
 * A watched process has exited, and we have not let go of its files yet.
 * Asked before each call that may take a while, six times in a reader's
 * sample of 40 calls: the pidfds are polled at most every
 * UO_W_EXIT_POLL_NS (the clock is read without a system call).
 */
static bool uo_wexited(void *ctx)
{
	struct uo_watch *w = ctx;
	struct pollfd pfd[64];
	int64_t now = uo_now_ns();
	unsigned n;

	if (now - w->exit_polled_ns < UO_W_EXIT_POLL_NS)
		return false;
	w->exit_polled_ns = now;
	n = uo_wpidfds(w, pfd);
	return n && poll(pfd, n, 0) > 0;
}

/* A parked file of the watcher's files, opened again by its handle (wfile.h). */
static int uo_wfan_reopen(void *ctx, uint64_t dev, struct file_handle *fh)
{
	struct uo_watch *w = ctx;
	unsigned i;

	for (i = 0; i < w->nmarked; i++)
		if (w->marked[i].dev == dev)
			return uo_wfan_mount_fd(w, i) < 0 ? -1 :
			       open_by_handle_at(w->marked[i].fd, fh,
						 O_RDONLY | O_CLOEXEC | O_NOATIME | O_NONBLOCK);
	return -1;
}

/* ---- letting go of a filesystem ---- */

/* Does a watched process hold a file of filesystem dev open, as far as we know? */
static bool uo_wfs_in_use(void *ctx, uint64_t dev)
{
	struct uo_watch *w = ctx;
	unsigned i;

	for (i = 0; i < w->nfds; i++)
		if (w->fds[i].kind == UO_WF_GUARDED && w->fds[i].dev == dev)
			return true;
	return uo_wfiles_in_use(&w->wf, dev);
}

/*
 * After each sample: what waits for writeback on a filesystem the
 * watched processes hold no file of any more keeps no descriptor of
 * ours open on it.  A backup script unmounts its disk once the copy
 * closed its last file there: a descriptor we kept made that umount
 * fail ("target is busy").  The drops queued here are given up (their
 * writeback was started), the watcher's files are parked (wfile.h).
 * Mounts opened for handles are closed.
 */
static void uo_wlet_go(struct uo_watch *w)
{
	unsigned i = 0;

	while (i < w->npend) {
		if (uo_wfs_in_use(w, w->pend[i].dev))
			i++;
		else
			uo_wpend_done(w, i);
	}
	uo_wfiles_let_go(&w->wf, uo_wfs_in_use, w);
	uo_wfan_unhold(w);
}

/*
 * The end of a sample, as root with handles (wfile.h: uo_wfiles_shut):
 * no descriptor of ours of any watched file stays open until the next.
 * A script's umount right after its copy exits used to meet the
 * descriptors the watcher kept while the copy ran, in the few ms before
 * the watcher saw the exit (1 run in 5 of a static writer failed with
 * "target is busy").  The descriptors' own fdinfo files are kept: they
 * are procfs's, and hold no filesystem of the program's.
 */
static void uo_wshut(struct uo_watch *w)
{
	unsigned i;

	if (!w->wf.reopen)
		return;
	for (i = 0; i < w->nfds; i++)
		if (w->fds[i].kind == UO_WF_GUARDED && w->fds[i].ours >= 0) {
			close(w->fds[i].ours);
			w->fds[i].ours = -1;
		}
	for (i = 0; i < w->npend; i++)
		if (w->pend[i].fh && w->pend[i].fd >= 0) {
			close(w->pend[i].fd);
			w->pend[i].fd = -1;
		}
	uo_wfiles_shut(&w->wf);
	uo_wfan_unhold(w);
}

/* ---- the loop ---- */

static unsigned uo_wlive(const struct uo_watch *w)
{
	unsigned i, n = 0;

	for (i = 0; i < w->nprocs; i++)
		n += !w->procs[i].gone;
	return n;
}

/*
 * Sleeps up to ns, woken early when a watched process exits, a signal
 * comes, or fanotify reports a file of theirs.  Other processes' events
 * are read in batches, UO_W_FAN_NS apart, not one wakeup each.
 */
static void uo_wsleep(struct uo_watch *w, int64_t ns)
{
	int64_t end = uo_now_ns() + ns;
	struct pollfd pfd[65];
	unsigned i, n;

	for (;;) {
		int64_t left = end - uo_now_ns();
		struct timespec ts;

		if (left <= 0)
			return;
		ts.tv_sec = left / 1000000000LL;
		ts.tv_nsec = left % 1000000000LL;
		n = uo_wpidfds(w, pfd);
		if (w->fan >= 0 && (ns > UO_W_FAN_SKIP_NS || !w->fan_skip)) {
			pfd[n].fd = w->fan;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			n++;
		}
		uo_wslept(w, false);
		if (ppoll(pfd, n, &ts, NULL) <= 0) {
			uo_wslept(w, true);
			return;
		}
		for (i = 0; i < n; i++)
			if (pfd[i].revents && pfd[i].fd != w->fan)
				return;
		if (uo_wfan_drain(w))
			return;
		left = end - uo_now_ns();
		/*
		 * Nothing moved for a while (the interval backed off to its
		 * slowest): others' events wake us less often.  A watched
		 * process that starts again is seen at most this late.
		 */
		if (left > (ns >= UO_W_SLOW_NS ? UO_W_FAN_IDLE_NS : UO_W_FAN_NS))
			left = ns >= UO_W_SLOW_NS ? UO_W_FAN_IDLE_NS : UO_W_FAN_NS;
		/*
		 * Others' events wait; a watched process's exit does not: a
		 * script unmounts a disk as soon as its copy exits, and what
		 * we hold of that disk goes once we have seen the exit.
		 */
		if (left > 0) {
			ts.tv_sec = 0;
			ts.tv_nsec = left;
			if (w->fan >= 0 && n > 0 && pfd[n - 1].fd == w->fan)
				n--;
			if (ppoll(pfd, n, &ts, NULL) > 0)
				return;
			uo_wslept(w, true);
		}
	}
}

static void uo_wreap(struct uo_watch *w)
{
	int status, i;

	if (w->child <= 0 || w->child_done)
		return;
	/* Its pidfd says when it has exited (uo_wproc_alive): a wait4 at every sample, not. */
	i = uo_wproc_index(w, w->child);
	if (i >= 0 && w->procs[i].pidfd >= 0)
		return;
	if (waitpid(w->child, &status, WNOHANG) == w->child) {
		w->child_status = status;
		w->child_done = true;
	}
}

static void uo_wstats(struct uo_watch *w)
{
	struct rusage ru;
	double cpu, gib, advice;

	if (!w->o->stats)
		return;
	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	/* Positional I/O moves nothing: what it brought into the cache counts then. */
	gib = (double)(w->moved > w->wf.grown ? w->moved : w->wf.grown) / (double)(1ULL << 30);
	advice = (double)w->wf.advice_ns / 1e9;
	if (advice > cpu)
		advice = cpu;
	fprintf(stderr, "useonce: watched %u processes, %llu files, %llu streams; "
		"%.1f MiB moved, %.1f MiB dropped, %.1f MiB kept, %.1f MiB flushed%s; "
		"%llu samples, cpu %.3f s (%.1f ms/GiB; the kernel's own work in advice "
		"%.1f, watching %.1f)\n",
		w->nprocs, (unsigned long long)w->files, (unsigned long long)w->streams,
		(double)w->moved / 1048576.0, (double)w->dropped / 1048576.0,
		(double)w->kept / 1048576.0, (double)w->flushed / 1048576.0,
		w->o->dry_run ? " (dry run: nothing done)" : "",
		(unsigned long long)w->ticks, cpu, gib > 0 ? cpu * 1000.0 / gib : 0.0,
		gib > 0 ? advice * 1000.0 / gib : 0.0, gib > 0 ? (cpu - advice) * 1000.0 / gib : 0.0);
	fprintf(stderr, "useonce: by residency: %llu files, %llu streams, %llu sweeps, "
		"%llu cachestat calls, %llu files listed; %.1f MiB dropped, %.1f MiB flushed; "
		"fanotify %s: "
		"%llu events of theirs, %llu of others, %llu lost\n",
		(unsigned long long)w->wf.files, (unsigned long long)w->wf.streams,
		(unsigned long long)w->wf.sweeps, (unsigned long long)w->wf.probes,
		(unsigned long long)w->wf.listed,
		(double)w->wf.dropped / 1048576.0, (double)w->wf.flushed / 1048576.0,
		w->fan >= 0 ? "on" : "off", (unsigned long long)w->fan_ours,
		(unsigned long long)w->fan_foreign, (unsigned long long)w->fan_lost);
}

int64_t uo_whold_interval(struct uo_whold *h, int64_t now, uint64_t moved, uint64_t window,
			  int64_t interval)
{
	/*
	 * Only a window moved arms the hold again: a log appending 4 KiB
	 * every 150 ms after a burst moved "lately" at every sample, and
	 * kept the watcher at 20 ms samples for as long as it ran.
	 */
	if (moved) {
		h->since += moved;
		if (h->since >= window) {
			h->burst_ns = now;
			h->since = 0;
		}
	} else if (h->burst_ns && now - h->burst_ns < UO_W_HOLD_NS) {
		h->pause_ns = now;
	}
	if (h->pause_ns && now - h->pause_ns < UO_W_HOLD_NS && interval > UO_W_BURST_NS)
		return UO_W_BURST_NS;
	return interval;
}

/* A guarded descriptor reads a stream: its clean pages wait for each sample. */
static bool uo_wreading(const struct uo_watch *w)
{
	unsigned i;

	for (i = 0; i < w->nfds; i++)
		if (w->fds[i].kind == UO_WF_GUARDED && w->fds[i].st.state == UO_STREAM &&
		    w->fds[i].st.dir == UO_READ)
			return true;
	return false;
}

static void uo_wloop(struct uo_watch *w)
{
	int64_t interval = UO_W_FAST_NS, last_tree = 0, deadline;
	struct rlimit rl;
	unsigned i;

	/*
	 * Root's watcher goes before the programs it watches when both want
	 * a CPU: on a loaded machine a late sample lets a writer fill memory
	 * with dirty pages.  The watched processes are left as they are.
	 */
	errno = 0;
	i = (unsigned)(getpriority(PRIO_PROCESS, 0) + 20);
	if (!errno && i > 15)
		setpriority(PRIO_PROCESS, 0, -5);
	/*
	 * Three descriptors of ours per file the watched have open: as many
	 * as we may (after the fork: the command keeps its own limit).
	 */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (;;) {
		int64_t now = uo_now_ns();
		uint64_t moved0 = w->moved, grown0 = w->wf.grown, churn = w->churn, step, slack;
		bool grew;

		w->wf.stopped = false;
		w->wf.wb_until = uo_wreading(w) ? now + UO_W_WB_NS : 0;
		w->wf.wb_cut = false;
		uo_wfan_drain(w);

		if (now - last_tree >= UO_W_TREE_NS) {
			for (i = 0; i < w->nprocs; i++)
				if (!w->procs[i].gone)
					uo_wproc_children(w, w->procs[i].pid);
			last_tree = now;
		}
		/*
		 * Counters first: what they miss is seen by the next sample, and
		 * the positions read after them show as much or more.
		 */
		for (i = 0; i < w->nprocs; i++)
			if (!w->procs[i].gone)
				uo_wproc_io(&w->procs[i]);
		for (i = 0; i < w->nprocs; i++) {
			bool slept = w->procs[i].slept;

			w->procs[i].slept = false;
			if (w->procs[i].gone)
				continue;
			if (!slept && !uo_wproc_alive(&w->procs[i]))
				uo_wproc_gone(w, i);
			else
				uo_wproc_scan(w, i);
		}
		w->wf.moved = false;
		grew = false;
		slack = w->o->tuning.align ? w->o->tuning.align : w->o->tuning.window / 4;
		for (i = 0; i < w->nprocs; i++) {
			if (w->procs[i].gone)
				continue;
			if (uo_wproc_unexplained(&w->procs[i], slack))
				w->wf.moved = true;
			/*
			 * Not any move: a program trickling bytes to a pipe would have
			 * every file reopened ten times a second (and a lease it asks
			 * for refused).
			 */
			grew |= w->procs[i].io_calls + w->procs[i].io_disk - w->procs[i].io_full >=
				slack;
		}
		/* The backstop: moves that carried no data hide others no longer than this. */
		if (grew && now - w->full_ns >= UO_W_FULL_NS)
			w->wf.moved = true;
		if (w->wf.moved) {
			w->full_ns = now;
			for (i = 0; i < w->nprocs; i++)
				w->procs[i].io_full = w->procs[i].io_calls + w->procs[i].io_disk;
		}
		/* Let go first: what was closed just now is not written out while we hold it. */
		uo_wlet_go(w);
		uo_wpend_work(w);
		uo_wfiles_work(&w->wf);
		uo_wshut(w);
		w->ticks++;
		uo_wreap(w);
		if (!uo_wlive(w) && (w->child <= 0 || w->child_done))
			break;
		/* Cut short by an exit: the next sample lets go of its files, now. */
		if (w->wf.stopped)
			continue;
		/*
		 * About a window of data between two samples; slower while
		 * nothing moves; fast while files come and go (a backup's
		 * packs live a few tens of ms: one never seen is never dropped).
		 * A write is seen twice, as a position that moved and as pages
		 * the file gained: the larger of the two is the data moved
		 * (their sum sampled a writer twice as often as needed).
		 */
		step = w->moved - moved0 > w->wf.grown - grown0 ? w->moved - moved0
								 : w->wf.grown - grown0;
		w->fan_skip = w->churn == churn;
		if (w->churn > churn) {
			interval = UO_W_FAST_NS;
		} else if (step) {
			int64_t rate = (int64_t)step * 1000000000LL /
				       (interval > 0 ? interval : 1);

			interval = rate > 0 ? (int64_t)w->o->tuning.window * 1000000000LL / rate
					    : UO_W_FAST_NS;
			if (interval < UO_W_FAST_NS)
				interval = UO_W_FAST_NS;
			if (interval > UO_W_SLOW_NS)
				interval = UO_W_SLOW_NS;
		} else if (interval < UO_W_SLOW_NS) {
			interval = interval * 2 > UO_W_SLOW_NS ? UO_W_SLOW_NS : interval * 2;
		}
		/*
		 * A stream that moved lately may start again at any moment, at
		 * full speed: a rate measured across a pause says nothing of the
		 * next burst.
		 */
		interval = uo_whold_interval(&w->hold, now, w->stream_moved || w->wf.stream_grew ?
					     (step ? step : 1) : 0, w->o->tuning.window, interval);
		w->stream_moved = w->wf.stream_grew = false;
		if (uo_forward_sig && w->child > 0 && !w->child_done) {
			kill(w->child, uo_forward_sig);
			uo_forward_sig = 0;
		}
		/*
		 * Drops waiting for writeback are tried again sooner, but not
		 * every 5 ms: a writer's window takes tens of ms to reach the
		 * disk, and a writer always has one waiting (a paced writer's
		 * samples were three in four for nothing).
		 */
		uo_wsleep(w, w->wf.wb_cut ? UO_W_CUT_NS :
			  (w->npend || uo_wfiles_pending(&w->wf)) && interval > UO_W_PEND_NS ?
			  UO_W_PEND_NS : interval);
	}
	/* The last closes, as the processes exited: their writeback unbounded. */
	w->wf.wb_until = 0;
	w->wf.stopped = false;
	uo_wfan_drain(w);
	uo_wfiles_close_all(&w->wf);
	uo_wlet_go(w);
	w->wf.draining = true;
	/* Written data of the last files: give its writeback a moment, then let it be. */
	deadline = uo_now_ns() + UO_W_DRAIN_NS;
	while ((w->npend || uo_wfiles_pending(&w->wf)) && uo_now_ns() < deadline) {
		struct timespec ts = { 0, 10 * UO_MS };

		/* Every watched process is gone: nothing stops this work now. */
		w->wf.stopped = false;
		uo_wpend_work(w);
		uo_wfiles_work(&w->wf);
		uo_wshut(w);
		if (w->npend || uo_wfiles_pending(&w->wf))
			nanosleep(&ts, NULL);
	}
	while (w->npend)
		uo_wpend_done(w, 0);
	uo_wstats(w);
}

static void uo_winit(struct uo_watch *w, const struct uo_watch_opts *o)
{
	long page = sysconf(_SC_PAGESIZE);

	memset(w, 0, sizeof(*w));
	w->o = o;
	w->page = page > 0 ? (uint64_t)page : 4096;
	uo_wfiles_init(&w->wf, &o->tuning, o->dry_run);
	w->wf.timed = o->stats;
	uo_wfan_init(w);
	/* Handles are opened with CAP_DAC_READ_SEARCH: root's watcher, as fanotify. */
	w->wf.reopen_ctx = w;
	w->wf.stop = uo_wexited;
	if (w->fan >= 0)
		w->wf.reopen = uo_wfan_reopen;
}

static void uo_wfree(struct uo_watch *w)
{
	free(w->procs);
	free(w->fds);
	free(w->mnts);
	uo_wfiles_free(&w->wf);
	if (w->fan >= 0)
		close(w->fan);
	uo_wfan_unhold(w);
	while (w->nmarked)
		free(w->marked[--w->nmarked].path);
}

int uo_watch_attach(pid_t pid, const struct uo_watch_opts *o)
{
	struct uo_watch w;
	int err;

	uo_winit(&w, o);
	err = uo_wproc_add(&w, pid);
	if (err) {
		if (err == ENOENT)
			uo_wsay("cannot watch process %d: no such process", (int)pid);
		else
			uo_wsay("cannot watch process %d: %s (only processes you may trace: "
				"your own, not setuid; see ptrace(2))", (int)pid, strerror(err));
		uo_wfree(&w);
		return 1;
	}
	uo_wloop(&w);
	uo_wfree(&w);
	return 0;
}

static void uo_on_forward(int sig)
{
	uo_forward_sig = sig;
}

int uo_watch_run(char *const *argv, const struct uo_watch_opts *o)
{
	static const int forwarded[] = { SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
	struct sigaction sa, ign, old_int, old_quit;
	struct uo_watch w;
	int status, err;
	unsigned i;
	int pipefd[2];
	pid_t pid;

	/* The child reports a failed exec through a close-on-exec pipe. */
	if (pipe2(pipefd, O_CLOEXEC) != 0) {
		uo_wsay("cannot run %s: %s", argv[0], strerror(errno));
		return 126;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		uo_wsay("cannot run %s: %s", argv[0], strerror(errno));
		return 126;
	}
	if (pid == 0) {
		close(pipefd[0]);
		execvp(argv[0], argv);
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &err, sizeof(err)) == (ssize_t)sizeof(err)) {
		close(pipefd[0]);
		waitpid(pid, &status, 0);
		uo_wsay("cannot run %s: %s", argv[0], strerror(err));
		return err == ENOENT || err == ENOTDIR ? 127 : 126;
	}
	close(pipefd[0]);

	/*
	 * As system(3) does: the terminal sends ^C and ^\ to the command
	 * itself; what is sent to us alone is passed on.
	 */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = uo_on_forward;
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &sa, NULL);

	uo_winit(&w, o);
	w.child = pid;
	err = uo_wproc_add(&w, pid);
	/* Gone already is no news; refused is (a setuid program: not guarded). */
	if (err && (err != ENOENT || o->verbose))
		uo_wsay("cannot watch %s: %s (it runs unguarded; only processes you may trace "
			"are watched: your own, not setuid; see ptrace(2))", argv[0], strerror(err));
	uo_wloop(&w);
	uo_wfree(&w);
	if (!w.child_done)
		waitpid(pid, &w.child_status, 0);
	status = w.child_status;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		/* Die the same way, so that our parent sees what the command did. */
		struct rlimit nocore = { 0, 0 };

		setrlimit(RLIMIT_CORE, &nocore);
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return 1;
}
