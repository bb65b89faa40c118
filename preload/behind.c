/*
 * Tree mode's deferred drop: the written side of a tree.  A file a tree
 * copier created or truncated and wrote whole (cp -r, tar x, rsync's
 * receiver) has its writeback started at the program's close (tree.c);
 * nothing waits for it there, so its pages are still dirty.  It is
 * remembered here instead, by path and identity (device, inode, size,
 * birth time; a handed file also its change time: policy.h, uo_behind_id), in
 * a small ring of fixed size: static storage, no malloc.  At the next
 * closes of the tree's files, and at exit, the oldest are looked at again
 * through descriptors of our own, and dropped once clean:
 * - the path is opened O_PATH | O_NOFOLLOW (no file is opened, no device
 *   or FIFO answers) and must still name the same regular file (a new
 *   inode given the same number is born later), of the same size; then that very inode is opened read-only through
 *   /proc/self/fd, O_NONBLOCK (a lease is not waited for);
 * - still dirty or under writeback: kept for a later look, and the look
 *   stops there (writeback goes roughly in order);
 * - clean: left alone if anyone holds a record lock on it, or if it was
 *   read since it was last changed (its access time is past its change
 *   time: someone uses it); otherwise its writeback error is asked of our
 *   own description (advise.c) and, if there is none, it is dropped.
 * The ring is bounded by files and by bytes (policy.h, UO_BEHIND_FILES,
 * uo_behind_budget); past either, the oldest is forgotten undropped.
 *
 * Why descriptors of our own here, when tree.c and advise.c keep to the
 * program's: these are opened after the program's close and closed before
 * the call that opened them returns.  Our close would release the POSIX
 * locks the process holds on the file, so none is opened while the
 * process holds a descriptor of it (uo_behind_held_here: without one it
 * holds no lock), and a lock anyone else holds is checked first; no descriptor is kept
 * past the call, so none counts against RLIMIT_NOFILE for long, keeps an
 * unlinked file's space, or keeps a filesystem busy.  Risks remain:
 * - watchers see us: inotify and fanotify report an open and a close
 *   (IN_OPEN, IN_CLOSE_NOWRITE; a fanotify permission check may even
 *   stall the open);
 * - a threaded program that calls dup2 or dup3 onto a number while we
 *   hold it would have that number closed under it, and our calls would
 *   then act on its new file (the window is a few system calls wide); an
 *   open of the program's may fail with EMFILE in that window when it is
 *   at its limit;
 * - someone's write lease on the file is broken by our read-only open
 *   (O_NONBLOCK makes the open fail at once, but the holder is told);
 * - a file renamed away is only forgotten, but for rsync's way: it
 *   writes ".NAME.XXXXXX" and renames it NAME, and a name of that shape
 *   that is gone is looked for under NAME (the inode must match).
 * Never in a vfork child (its closes never get here, and the exit path
 * checks); in a forked child the ring is a copy, and a file dropped twice
 * is harmless.  Errno is never touched: system calls are made raw.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>

#include "advise.h"
#include "behind.h"
#include "classify.h"
#include "config.h"
#include "fdtab.h"
#include "policy.h"
#include "record.h"
#include "sys.h"
#include "trace.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

/* Paths longer than this are not remembered: their files stay to the kernel. */
#define UO_BEHIND_PATH	512

struct uo_behind_file {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	uint64_t btime_ns;	/* uo_behind_id's */
	int64_t ctime_ns;	/* uo_behind_id's: a handed file's, at its hand-over */
	uint8_t disk_unknown;	/* a candidate's: its filesystem is checked at its first look */
	uint8_t unflushed;	/* a candidate's: its writeback was never started */
	char path[UO_BEHIND_PATH];
};

/*
 * A file read whole before its run was known to be a tree, cold when
 * opened (policy.h, UO_TREE_EARLY_*): dropped when the run becomes one,
 * if that comes soon and nothing of it changed.
 */
struct uo_early_read {
	struct uo_behind_file f;	/* its ctime_ns: the change time at our close */
	int64_t atime_ns;		/* the access time at our close */
	uint64_t closed_ms;		/* CLOCK_MONOTONIC at our close */
	uint8_t atime_known;		/* 0: handed by a sibling, which hands no access time */
};

/* Oldest first from 'head'; only touched by the owner of uo_behind_owner. */
static struct {
	struct uo_behind_file f[UO_BEHIND_FILES];
	unsigned head;
	unsigned n;
	uint64_t bytes;		/* of the files waiting */
	uint64_t budget;	/* uo_behind_budget, found at the first file */
} uo_behind;
/*
 * The candidates: files written before their run was known to be a tree
 * (policy.h, UO_TREE_EARLY_*), oldest first, bounded by files and by the
 * same budget of bytes; also the owner of uo_behind_owner's.  Remembering
 * one costs a readlink at its close; nothing else is done with them until
 * the run is a tree, when they join the ring.
 */
static struct {
	struct uo_behind_file f[UO_TREE_FILES];
	unsigned n;
	uint64_t bytes;
} uo_early;
/*
 * The read candidates, oldest first, as many as a run can read before it
 * is a tree; also the owner of uo_behind_owner's.  Static: 17 KiB.
 */
static struct {
	struct uo_early_read f[UO_TREE_FILES];
	unsigned n;
} uo_early_reads;
static _Atomic int32_t uo_behind_owner;
/* uo_early_reads.n, for a look without the lock. */
static _Atomic unsigned uo_early_reads_waiting;
/* uo_early.n, for a look without the lock: a run that ends has mostly none to forget. */
static _Atomic unsigned uo_early_waiting;
/* uo_behind.n, for a look without the lock: most closes find nothing waiting. */
static _Atomic unsigned uo_behind_waiting;
/*
 * A file was pushed at the last close, after a pass over the oldest: the
 * next close (cp closes its source just after its copy) would look again
 * at once, and find what that pass found, or the file just pushed, whose
 * writeback was started a moment ago, still in flight: about 17 system
 * calls for nothing (the descriptors listed, two opens, the lock asked).
 * That one tick is skipped; the next push, tick or the exit looks.
 */
static _Atomic unsigned uo_behind_fresh;

/* 'closed_ms': for a file read before its tree, how long ago it was closed; else -1. */
static void uo_behind_trace_ms(const char *path, const char *what, int64_t closed_ms)
{
	struct uo_line l;

	if (!uo_tracing())
		return;
	uo_line_start(&l, -1);
	uo_line_path(&l, path);
	uo_line_str(&l, ": ");
	uo_line_str(&l, what);
	if (closed_ms >= 0) {
		uo_line_str(&l, " (read before the tree, closed ");
		uo_line_num(&l, (uint64_t)closed_ms);
		uo_line_str(&l, " ms before)");
	}
	uo_line_trace(&l);
}

static void uo_behind_trace(const char *path, const char *what)
{
	uo_behind_trace_ms(path, what, -1);
}

/*
 * A candidate closed before its run was a tree, by path (n bytes) and
 * identity; its filesystem is asked at its first look.  ctime_ns: the
 * change time at our close, or 0 where it is read at the hand-over.
 */
static void uo_behind_candidate(struct uo_behind_file *e, const struct uo_file *f,
				int64_t ctime_ns, const char *path, size_t n)
{
	e->dev = f->dev;
	e->ino = f->ino;
	e->size = f->size;
	e->btime_ns = f->btime_ns;
	e->ctime_ns = ctime_ns;
	e->disk_unknown = 1;
	e->unflushed = 0;
	memcpy(e->path, path, n + 1);
}

/* Lock held: the candidates are forgotten undropped. */
static void uo_early_clear(void)
{
	uo_early.n = 0;
	uo_early.bytes = 0;
	atomic_store_explicit(&uo_early_waiting, 0, memory_order_relaxed);
}

static void uo_behind_id_of(const struct uo_behind_file *e, struct uo_behind_id *id)
{
	id->dev = e->dev;
	id->ino = e->ino;
	id->size = e->size;
	id->btime_ns = e->btime_ns;
	id->ctime_ns = e->ctime_ns;
}

/* Is what the path names now ('f', 'ctime') still e's file? */
static bool uo_behind_still(const struct uo_behind_file *e, const struct uo_file *f,
			    int64_t ctime)
{
	struct uo_behind_id was, now = { f->dev, f->ino, f->size, f->btime_ns, ctime };

	uo_behind_id_of(e, &was);
	return S_ISREG(f->mode) && uo_behind_same(&was, &now);
}

static void uo_behind_forget_oldest(void)
{
	uo_behind.bytes -= uo_behind.f[uo_behind.head].size;
	uo_behind.head = (uo_behind.head + 1) % UO_BEHIND_FILES;
	uo_behind.n--;
}

/* The file e's path still names, opened as 'own': done with it (true), or look again later? */
static bool uo_behind_look_own(struct uo_behind_file *e, int own, int64_t atime,
			       int64_t ctime)
{
	struct uo_cachestat cs;

	/*
	 * First: our close releases the POSIX locks this process holds on the
	 * file (through a descriptor opened since), and a file someone locks
	 * is in use.  Forgotten, not looked at again.
	 */
	if (uo_file_locked(own)) {
		uo_behind_trace(e->path, "left alone (a record lock is held on it)");
		return true;
	}
	if (uo_cachestat(own, 0, 0, &cs) != 0) {
		uo_behind_trace(e->path, "forgotten (its cache cannot be seen)");
		return true;
	}
	if (cs.nr_dirty || cs.nr_writeback) {
		/*
		 * A candidate closed before its run was a tree had no writeback
		 * started: started now, on our description, waiting for nothing
		 * and consuming no error (advise.c, uo_flush_tree_file).
		 */
		if (e->unflushed && cs.nr_dirty &&
		    uo_sync_file_range(own, 0, 0, SYNC_FILE_RANGE_WRITE) == 0)
			uo_behind_trace(e->path, "writeback started (written before the tree)");
		return false;
	}
	if (!cs.nr_cache)
		return true;	/* gone already: nothing to drop */
	if (uo_behind_read_since(atime, ctime)) {
		uo_behind_trace(e->path, "left to the kernel's cache (read since it was written)");
	} else if (!uo_writeback_failure_seen() && !uo_writeback_askable()) {
		/*
		 * Its error could be said to no one (cp closed its stderr before
		 * the exit): kept, and handed to the next process of the run,
		 * which asks while it can say.
		 */
		uo_behind_trace(e->path, "kept for later (no stderr to say a writeback error on)");
		return false;
	} else if (uo_drop_written_tree_file(own, e->size))
		uo_behind_trace(e->path, "dropped (written back)");
	return true;
}

/*
 * rsync writes each file as ".NAME.XXXXXX" beside NAME and renames it
 * when done, before it closes the next one.  Gone, such a name is looked
 * for under NAME: opened O_PATH, and taken only if it is the very inode
 * remembered (the caller checks), so a guess that names another file
 * costs a system call and changes nothing.  -1: no such name.
 */
static long uo_behind_renamed(struct uo_behind_file *e, char *to)
{
	const char *base = strrchr(e->path, '/'), *dot;
	size_t dir, len;
	long fd;

	if (!base || base[1] != '.')
		return -1;
	base++;
	dot = strrchr(base, '.');
	len = strlen(base);
	if (dot <= base + 1 || len - (size_t)(dot - base) != 7)
		return -1;
	dir = (size_t)(base - e->path);
	memcpy(to, e->path, dir);
	memcpy(to + dir, base + 1, (size_t)(dot - base) - 1);
	to[dir + (size_t)(dot - base) - 1] = '\0';
	fd = uo_sys(SYS_openat, AT_FDCWD, to, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -1 : fd;
}

/*
 * Does this process hold a descriptor of e's file?  Closing any descriptor
 * of a file releases every POSIX record lock (fcntl F_SETLK, lockf) the
 * process holds on it, whatever descriptor took it, and the process can
 * hold one only through a descriptor still open (its last close released
 * the rest).  So while it holds one, no descriptor of ours but O_PATH
 * ones (whose close releases nothing) may be opened on the file: asking
 * F_OFD_GETLK on ours would already be too late, its close would undo the
 * lock it found.  The regular files the process holds are listed once per
 * pass (uo_behind_run), from /proc/thread-self/fd (the table whose locks
 * our close would release; closing that directory releases nothing of
 * the file's), 'skip' (our O_PATH descriptor) aside.  If they cannot be
 * listed, or are more than UO_BEHIND_FDS, every file counts as held and
 * is left alone.  A thread of the program that opens and locks a file
 * during the pass is not seen: the window is that of the pass.
 */
#define UO_BEHIND_FDS	32

struct uo_behind_held {
	bool taken;	/* listed in this pass */
	bool all;	/* could not be told: every file counts as held */
	unsigned n;
	struct {
		uint64_t dev, ino;
	} f[UO_BEHIND_FDS];
};

struct uo_dirent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static void uo_behind_list_held(struct uo_behind_held *h, long skip)
{
	uint64_t buf[128];	/* 1 KiB: this runs on the program's stack */
	struct uo_file f;
	long dir, n = 0, off, fd;
	const char *c;

	h->taken = true;
	h->all = false;
	h->n = 0;
	dir = uo_sys(SYS_openat, AT_FDCWD, "/proc/thread-self/fd",
		     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		h->all = true;
		return;
	}
	while (!h->all && (n = uo_sys(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n && !h->all; ) {
			const struct uo_dirent64 *d = (const void *)((char *)buf + off);

			off += d->reclen;
			for (fd = 0, c = d->name; *c >= '0' && *c <= '9'; c++)
				fd = fd * 10 + (*c - '0');
			if (*c || c == d->name || fd == dir || fd == skip)
				continue;	/* ".", "..", or ours */
			if (uo_fstat((int)fd, &f) != 0 || !S_ISREG(f.mode))
				continue;	/* gone since, or no file a lock of ours could be on */
			if (h->n == UO_BEHIND_FDS) {
				h->all = true;
				break;
			}
			h->f[h->n].dev = f.dev;
			h->f[h->n].ino = f.ino;
			h->n++;
		}
	}
	if (n < 0)
		h->all = true;
	uo_sys(SYS_close, dir);
}

static bool uo_behind_held_here(struct uo_behind_held *h, const struct uo_behind_file *e,
				long skip)
{
	unsigned i;

	if (!h->taken)
		uo_behind_list_held(h, skip);
	if (h->all)
		return true;
	for (i = 0; i < h->n; i++)
		if (h->f[i].dev == e->dev && h->f[i].ino == e->ino)
			return true;
	return false;
}

/* Is e done with (dropped or forgotten)?  False: still being written back, look again later. */
static bool uo_behind_look(struct uo_behind_file *e, struct uo_behind_held *held)
{
	char link[UO_PROC_FD_PATH], renamed[UO_BEHIND_PATH];
	struct uo_file f;
	int64_t atime, ctime;
	long path, own;
	bool done = true, moved = false;

	path = uo_sys(SYS_openat, AT_FDCWD, e->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (path == -ENOENT) {
		path = uo_behind_renamed(e, renamed);
		moved = path >= 0;
	}
	if (path < 0)
		return true;	/* renamed away, removed: forgotten */
	if (uo_fstat_times((int)path, &f, &atime, &ctime) != 0 || !uo_behind_still(e, &f, ctime)) {
		if (!moved)
			uo_behind_trace(e->path, "forgotten (no longer the file written)");
		goto out;
	}
	/* A candidate's filesystem was not asked at its close (one call fewer there). */
	if (e->disk_unknown) {
		if (uo_not_for_later((int)path)) {
			uo_behind_trace(e->path, "forgotten (not on a local disk mounted with access times)");
			goto out;
		}
		e->disk_unknown = 0;
	}
	/* The same inode under its final name: shorter, so it fits. */
	if (moved)
		memcpy(e->path, renamed, strlen(renamed) + 1);
	/* Our close would release the program's own record locks on it. */
	if (uo_behind_held_here(held, e, path)) {
		uo_behind_trace(e->path, "left alone (the program holds a descriptor of it)");
		goto out;
	}
	/* That very inode, a regular file: never a device or FIFO swapped in since. */
	uo_proc_fd_path(link, (int)path);
	own = uo_sys(SYS_openat, AT_FDCWD, link, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (own < 0) {
		uo_behind_trace(e->path, "forgotten (cannot be opened again)");
		goto out;
	}
	done = uo_behind_look_own(e, (int)own, atime, ctime);
	uo_sys(SYS_close, own);
out:
	uo_sys(SYS_close, path);
	return done;
}

/* Looks at up to 'max' of the oldest files, lock held, until one is still in flight. */
static void uo_behind_run(unsigned max)
{
	struct uo_behind_held held;
	unsigned i;

	held.taken = false;
	atomic_store_explicit(&uo_behind_fresh, 0, memory_order_relaxed);
	for (i = 0; i < max && uo_behind.n; i++) {
		if (!uo_behind_look(&uo_behind.f[uo_behind.head], &held))
			break;
		uo_behind_forget_oldest();
	}
	atomic_store_explicit(&uo_behind_waiting, uo_behind.n, memory_order_relaxed);
}

/* The path of the program's descriptor, if it names a file still linked: its length, or 0. */
static size_t uo_behind_path(int fd, char path[UO_BEHIND_PATH])
{
	char link[UO_PROC_FD_PATH];
	long n;

	uo_proc_fd_path(link, fd);
	n = uo_sys(SYS_readlinkat, AT_FDCWD, link, path, UO_BEHIND_PATH);
	/* Cut short, anonymous ("/memfd:..." is absolute but not on a disk), or unlinked. */
	if (n <= 0 || n >= UO_BEHIND_PATH || path[0] != '/')
		return 0;
	path[n] = '\0';
	if (n > 10 && !memcmp(path + n - 10, " (deleted)", 10))
		return 0;
	return (size_t)n;
}

static void uo_behind_set_budget(void)
{
	if (!uo_behind.budget)
		uo_behind.budget = uo_behind_budget(&uo_config.tuning, uo_memory_size());
}

/* Lock held: e joins the ring as its newest, after a look at the oldest. */
static void uo_behind_push(const struct uo_behind_file *e)
{
	uo_behind_run(UO_BEHIND_STEP);
	while (uo_behind_full(uo_behind.n, uo_behind.bytes, e->size, uo_behind.budget)) {
		uo_behind_trace(uo_behind.f[uo_behind.head].path,
				"forgotten undropped (too many written files waiting)");
		uo_behind_forget_oldest();
	}
	uo_behind.f[(uo_behind.head + uo_behind.n) % UO_BEHIND_FILES] = *e;
	uo_behind.n++;
	uo_behind.bytes += e->size;
	atomic_store_explicit(&uo_behind_waiting, uo_behind.n, memory_order_relaxed);
	atomic_store_explicit(&uo_behind_fresh, 1, memory_order_relaxed);
}

void uo_behind_closing(int fd, const struct uo_file *f)
{
	struct uo_behind_file e;
	const char *why;

	if (uo_config.dryrun)
		return;
	why = uo_not_for_later(fd);
	if (why) {
		uo_trace(fd, "not dropped later", why);
		return;
	}
	if (!uo_behind_path(fd, e.path))
		return;
	e.dev = f->dev;
	e.ino = f->ino;
	e.size = f->size;
	e.btime_ns = f->btime_ns;
	e.ctime_ns = 0;
	e.disk_unknown = 0;
	if (!uo_try_own(&uo_behind_owner))
		return;
	uo_behind_set_budget();
	uo_behind_push(&e);
	uo_release(&uo_behind_owner);
}

void uo_behind_early(int fd, const struct uo_file *f, bool forget)
{
	struct uo_behind_file *e;
	char path[UO_BEHIND_PATH];
	uint64_t budget;
	size_t n;

	if (uo_config.dryrun)
		return;
	n = uo_behind_path(fd, path);
	if (!n) {
		if (forget)
			uo_behind_early_forget();
		return;
	}
	if (!uo_try_own(&uo_behind_owner))
		return;
	/* The run before this file's ended: its candidates go, under the same lock. */
	if (forget)
		uo_early_clear();
	/*
	 * The oldest go first, as in the ring: past the budget they stay to
	 * the kernel.  The process's memory is not asked here (a dozen system
	 * calls in a program that may never be a tree): until the ring has
	 * asked, the budget for memory unknown bounds the candidates, and the
	 * ring's own applies when they join it.
	 */
	budget = uo_behind.budget ? uo_behind.budget : uo_behind_budget(&uo_config.tuning, 0);
	while (uo_early.n &&
	       (uo_early.n >= UO_TREE_FILES ||
		uo_behind_full(uo_early.n, uo_early.bytes, f->size, budget))) {
		uo_early.bytes -= uo_early.f[0].size;
		memmove(&uo_early.f[0], &uo_early.f[1], --uo_early.n * sizeof(uo_early.f[0]));
	}
	e = &uo_early.f[uo_early.n++];
	uo_behind_candidate(e, f, 0, path, n);
	uo_early.bytes += f->size;
	atomic_store_explicit(&uo_early_waiting, uo_early.n, memory_order_relaxed);
	uo_release(&uo_behind_owner);
}

void uo_behind_adopt(void)
{
	struct uo_behind_held held;
	unsigned i;

	if (!uo_try_own(&uo_behind_owner))
		return;
	held.taken = false;
	uo_behind_set_budget();
	/*
	 * Each is looked at once now, not only the oldest: those already
	 * clean go at once, the others have their writeback started and wait
	 * in the ring, oldest first, ahead of the file being closed.
	 */
	for (i = 0; i < uo_early.n; i++) {
		struct uo_behind_file *e = &uo_early.f[i];

		e->unflushed = 1;
		if (uo_behind_look(e, &held))
			continue;
		e->unflushed = 0;
		uo_behind_push(e);
	}
	uo_early_clear();
	uo_release(&uo_behind_owner);
}

void uo_behind_early_forget(void)
{
	/* Most runs that end remembered nothing (or forgot it at their last pause). */
	if (!atomic_load_explicit(&uo_early_waiting, memory_order_relaxed) ||
	    !uo_try_own(&uo_behind_owner))
		return;
	uo_early_clear();
	uo_release(&uo_behind_owner);
}

/* A look at the oldest, if any wait and nobody else is looking. */
static void uo_behind_try(unsigned max)
{
	if (!atomic_load_explicit(&uo_behind_waiting, memory_order_relaxed))
		return;
	if (!uo_try_own(&uo_behind_owner))
		return;
	uo_behind_run(max);
	uo_release(&uo_behind_owner);
}

void uo_behind_tick(void)
{
	/* Another thread's pass in between clears it: at worst one look more, or one later. */
	if (atomic_load_explicit(&uo_behind_fresh, memory_order_relaxed) &&
	    atomic_exchange_explicit(&uo_behind_fresh, 0, memory_order_relaxed))
		return;
	uo_behind_try(UO_BEHIND_STEP);
}

void uo_behind_exit(void)
{
	/* A vfork child calling exit() must not act for its parent. */
	if (uo_config.disabled || uo_fdtab_borrowed())
		return;
	uo_behind_try(UO_BEHIND_FILES);
}

/*
 * e as an entry for the record; false if its path is too long to hand, or
 * no longer names e's file.  Its change time is read at its first hand-
 * over, the path not followed and nothing opened: the writer is done with
 * it (tar and cp -p set its times after their close), and whatever is
 * done to it from now on changes it (policy.h, uo_behind_id).  One handed
 * on again (a candidate goes from process to process until the run is a
 * tree: up to 31 times) keeps the time it came with, checked at its look.
 */
static bool uo_behind_to_handoff(const struct uo_behind_file *e, uint32_t flags,
				 struct uo_handoff_file *out)
{
	size_t n = strlen(e->path);
	struct uo_file f;
	int64_t atime, ctime = e->ctime_ns;

	if (n >= sizeof(out->path))
		return false;
	if (!ctime && (uo_lstat_times(e->path, &f, &atime, &ctime) != 0 || !ctime ||
		       !uo_behind_still(e, &f, ctime)))
		return false;
	memset(out, 0, sizeof(*out));
	out->dev = e->dev;
	out->ino = e->ino;
	out->size = e->size;
	out->btime_ns = e->btime_ns;
	out->ctime_ns = ctime;
	out->flags = flags;
	memcpy(out->path, e->path, n);
	return true;
}

unsigned uo_behind_hand(struct uo_handoff_file *out, unsigned max, uint64_t now_ms)
{
	unsigned n = 0, i;

	if (uo_config.dryrun || !uo_try_own(&uo_behind_owner))
		return 0;
	/* The newest first: the oldest are the nearest to the ring's own forgetting. */
	for (i = uo_behind.n; i-- > 0 && n < max; )
		if (uo_behind_to_handoff(&uo_behind.f[(uo_behind.head + i) % UO_BEHIND_FILES], 0,
					 &out[n]))
			n++;
	for (i = uo_early.n; i-- > 0 && n < max; )
		if (uo_behind_to_handoff(&uo_early.f[i], UO_HANDOFF_EARLY, &out[n]))
			n++;
	/* Read candidates still due, with their age: the next one drops them if it is a tree. */
	for (i = uo_early_reads.n; i-- > 0 && n < max; ) {
		const struct uo_early_read *r = &uo_early_reads.f[i];

		if (!uo_tree_early_read_due(r->closed_ms, now_ms) ||
		    !uo_behind_to_handoff(&r->f, UO_HANDOFF_READ, &out[n]))
			continue;
		out[n++].age_ms = (uint32_t)(now_ms - r->closed_ms);
	}
	uo_release(&uo_behind_owner);
	return n;
}

void uo_behind_take(const struct uo_handoff_file *in, unsigned n)
{
	struct uo_behind_file e;
	unsigned i;

	if (uo_config.dryrun || !n || !uo_try_own(&uo_behind_owner))
		return;
	uo_behind_set_budget();
	/* Oldest first, as they were handed newest first. */
	for (i = n; i-- > 0; ) {
		e.dev = in[i].dev;
		e.ino = in[i].ino;
		e.size = in[i].size;
		e.btime_ns = in[i].btime_ns;
		e.ctime_ns = in[i].ctime_ns;
		/* Whoever wrote the entry, its file's filesystem is asked again at its first look. */
		e.disk_unknown = 1;
		e.unflushed = 0;
		memcpy(e.path, in[i].path, sizeof(in[i].path));
		e.path[sizeof(in[i].path) - 1] = '\0';
		if (in[i].flags & UO_HANDOFF_READ) {
			struct uo_early_read *r;

			if (uo_early_reads.n == UO_TREE_FILES)
				continue;
			r = &uo_early_reads.f[uo_early_reads.n++];
			r->f = e;
			r->atime_ns = 0;
			r->atime_known = 0;
			r->closed_ms = in[i].handed_ms - in[i].age_ms;
		} else if (!(in[i].flags & UO_HANDOFF_EARLY)) {
			uo_behind_push(&e);
		} else if (uo_early.n < UO_TREE_FILES) {
			uo_early.f[uo_early.n++] = e;
			uo_early.bytes += e.size;
		}
	}
	atomic_store_explicit(&uo_early_waiting, uo_early.n, memory_order_relaxed);
	atomic_store_explicit(&uo_early_reads_waiting, uo_early_reads.n, memory_order_relaxed);
	uo_release(&uo_behind_owner);
}

/*
 * The read side's candidates.  Remembering one costs a readlink and a
 * statx at its close (the lock's getpid aside); dropping it, when its run
 * becomes a tree, the deferred drop's look: the path opened O_PATH, the
 * same file (device, inode, size, birth time, and its change time and
 * access time unchanged since our close: not written, chmoded or, where
 * access times move at every read, read since), on a local disk, held by
 * no descriptor of this process (our close would release its record
 * locks), then opened read-only through /proc/self/fd, locked by nobody,
 * nothing dirty or under writeback (none of it is someone's unwritten
 * data: it was cold when we opened it), and dropped.  No writeback error
 * is asked: a read file has none of ours.
 */
void uo_behind_early_read(int fd, const struct uo_file *f, bool forget, uint64_t now_ms)
{
	struct uo_early_read *e;
	char path[UO_BEHIND_PATH];
	struct uo_file now;
	int64_t atime, ctime;
	size_t n;

	if (uo_config.dryrun)
		return;
	n = uo_behind_path(fd, path);
	/* The times of the file the program still holds: what it was at our close. */
	if (!n || uo_fstat_times(fd, &now, &atime, &ctime) != 0 || now.ino != f->ino ||
	    now.dev != f->dev || !ctime) {
		if (forget)
			uo_behind_early_reads_forget();
		return;
	}
	if (!uo_try_own(&uo_behind_owner))
		return;
	if (forget)
		uo_early_reads.n = 0;
	if (uo_early_reads.n == UO_TREE_FILES)
		memmove(&uo_early_reads.f[0], &uo_early_reads.f[1],
			--uo_early_reads.n * sizeof(uo_early_reads.f[0]));
	e = &uo_early_reads.f[uo_early_reads.n++];
	uo_behind_candidate(&e->f, f, ctime, path, n);
	e->atime_ns = atime;
	e->atime_known = 1;
	e->closed_ms = now_ms;
	atomic_store_explicit(&uo_early_reads_waiting, uo_early_reads.n, memory_order_relaxed);
	uo_release(&uo_behind_owner);
}

/* Lock held: one read candidate, the run just became a tree. */
static void uo_early_read_drop(struct uo_early_read *r, struct uo_behind_held *held,
			       uint64_t now_ms)
{
	struct uo_behind_file *e = &r->f;
	char link[UO_PROC_FD_PATH];
	struct uo_cachestat cs;
	struct uo_file f;
	int64_t atime, ctime;
	int64_t ms = (int64_t)(now_ms - r->closed_ms);
	long path, own;

	if (!uo_tree_early_read_due(r->closed_ms, now_ms)) {
		uo_behind_trace_ms(e->path, "left to the kernel's cache", ms);
		return;
	}
	path = uo_sys(SYS_openat, AT_FDCWD, e->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (path < 0)
		return;
	if (uo_fstat_times((int)path, &f, &atime, &ctime) != 0 || !uo_behind_still(e, &f, ctime) ||
	    (r->atime_known && atime != r->atime_ns)) {
		uo_behind_trace_ms(e->path, "left alone (changed or read since)", ms);
		goto out;
	}
	if (uo_not_for_later((int)path) || uo_behind_held_here(held, e, path))
		goto out;
	uo_proc_fd_path(link, (int)path);
	own = uo_sys(SYS_openat, AT_FDCWD, link, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (own < 0)
		goto out;
	if (uo_file_locked((int)own) || uo_cachestat((int)own, 0, 0, &cs) != 0 ||
	    cs.nr_dirty || cs.nr_writeback || !cs.nr_cache) {
		/* Locked, written since, unknown, or gone already: nothing to do. */
	} else if (uo_record_streamed_again(&f)) {
		uo_behind_trace_ms(e->path, "left to the kernel's cache (read again within "
				    "USEONCE_REUSE)", ms);
	} else {
		uo_drop_tree_file((int)own, e->size);
		uo_behind_trace_ms(e->path, "dropped", ms);
	}
	uo_sys(SYS_close, own);
out:
	uo_sys(SYS_close, path);
}

void uo_behind_adopt_reads(uint64_t now_ms)
{
	struct uo_behind_held held;
	unsigned i;

	if (!atomic_load_explicit(&uo_early_reads_waiting, memory_order_relaxed) ||
	    !uo_try_own(&uo_behind_owner))
		return;
	held.taken = false;
	for (i = 0; i < uo_early_reads.n; i++)
		uo_early_read_drop(&uo_early_reads.f[i], &held, now_ms);
	uo_early_reads.n = 0;
	atomic_store_explicit(&uo_early_reads_waiting, 0, memory_order_relaxed);
	uo_release(&uo_behind_owner);
}

void uo_behind_early_read_again(const struct uo_file *f)
{
	unsigned i, n = 0;

	if (!atomic_load_explicit(&uo_early_reads_waiting, memory_order_relaxed) ||
	    !uo_try_own(&uo_behind_owner))
		return;
	for (i = 0; i < uo_early_reads.n; i++)
		if (uo_early_reads.f[i].f.dev != f->dev || uo_early_reads.f[i].f.ino != f->ino)
			uo_early_reads.f[n++] = uo_early_reads.f[i];
	uo_early_reads.n = n;
	atomic_store_explicit(&uo_early_reads_waiting, n, memory_order_relaxed);
	uo_release(&uo_behind_owner);
}

void uo_behind_early_reads_forget(void)
{
	if (!atomic_load_explicit(&uo_early_reads_waiting, memory_order_relaxed) ||
	    !uo_try_own(&uo_behind_owner))
		return;
	uo_early_reads.n = 0;
	atomic_store_explicit(&uo_early_reads_waiting, 0, memory_order_relaxed);
	uo_release(&uo_behind_owner);
}
