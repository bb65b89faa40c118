/*
 * The watcher's files (wfile.h says what for).
 *
 * Residency is read with cachestat(2): one call tells how many pages of a
 * range are cached, dirty or under writeback.  A file is cut in units of
 * the policy's alignment (2 MiB, the folio size: advice on less is
 * ignored), and what a walk needs is found by halving ranges, never
 * descending into one that holds nothing new: a sweep costs a few calls
 * per unit the program brought in, not per unit of the file.
 *
 * What the program brought in goes in two steps: a unit seen at one
 * sweep is dropped at the next one if still there (the reader is done
 * with it; a reader's readahead, a lookahead below the newest unit, stays
 * a while longer).  Dirty units get their writeback started at once and
 * go when clean.  Only SYNC_FILE_RANGE_WRITE is used: waiting (WAIT
 * flags, fsync) would consume the file's writeback error, which belongs
 * to the program.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "wfile.h"

#ifndef __NR_openat2
#define __NR_openat2 437	/* the same number on every architecture */
#endif

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

#define UO_MS		1000000LL
/*
 * Writeback is started only while less than this many windows of the
 * file are under writeback already.  Submitting more to a disk whose
 * queue is full blocks until it has room (33 ms seen, on a loop device):
 * the watcher was stuck with the file open as the writer exited, and the
 * script's umount right after found the disk busy.  What is not started
 * now is at the next sample, once the disk took the rest.
 */
#define UO_WF_INFLIGHT	4
/*
 * For the same reason a sweep drops at most this many windows (freeing
 * 96 MiB took 9-24 ms on a loaded machine); the rest goes at the next.
 */
#define UO_WF_DROP_MAX	4
/* A sweep at most this often while nothing more comes in (dirty units draining). */
#define UO_WF_SWEEP_NS	(50 * UO_MS)
/* A file seen uncached in a listing counts as such this long. */
#define UO_WF_COLD_NS	(600000 * UO_MS)
/* Files looked at in one directory, at most: beyond, they are not noted. */
#define UO_WF_LIST_MAX	4096
/* A closed file's drop waits this long for its writeback at most. */
#define UO_WF_GIVEUP_NS	(30000 * UO_MS)
/*
 * A parked file is opened again this long after it was parked, and as
 * often after.  A script that unmounts a disk does so within a few
 * milliseconds of its last close there: by then our first open finds the
 * disk gone.  Later, an umount (after a sync) meets one of our passes,
 * which last about 0.1 ms, about once in two thousand.
 */
#define UO_WF_PARK_NS	(250 * UO_MS)

struct uo_wf_cs_range {
	uint64_t off, len;
};

struct uo_wf_cs {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

struct uo_wf_unit {
	uint64_t u;
	uint64_t pages;		/* cached */
	uint64_t dirty;		/* dirty, not yet under writeback */
	uint64_t busy;		/* dirty or under writeback: cannot be dropped yet */
	bool aged;		/* seen at the last sweep already */
};

struct uo_wf_walk {
	struct uo_wfiles *t;
	struct uo_wfile *f;
	uint64_t size;
	bool snap;		/* taking the first-sight snapshot, not sweeping */
	struct uo_wf_unit *e;
	unsigned ne, cap;
};

static int uo_wf_cachestat(struct uo_wfiles *t, int fd, uint64_t off, uint64_t len,
			   struct uo_wf_cs *cs)
{
	struct uo_wf_cs_range r = { off, len };

	t->probes++;
	return (int)syscall(__NR_cachestat, fd, &r, cs, 0);
}

static int64_t uo_wf_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t uo_wf_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

bool uo_wf_stopped(struct uo_wfiles *t)
{
	if (!t->stopped && t->stop && t->stop(t->reopen_ctx))
		t->stopped = true;
	return t->stopped;
}

void uo_wf_drop(struct uo_wfiles *t, int fd, uint64_t off, uint64_t len)
{
	int64_t t0 = t->timed ? uo_wf_cpu_ns() : 0;

	if (t->dry_run || uo_wf_stopped(t))
		return;
	posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
	if (t->timed)
		t->advice_ns += (uint64_t)(uo_wf_cpu_ns() - t0);
}

/*
 * Is the disk under fd's filesystem busy writing: its queue full of
 * writes?  Then writeback we start would wait for room in the queue, with
 * the file open (UO_WF_INFLIGHT says what that did), and the disk is at
 * work anyway.  Full, not half full: a watcher that started nothing while
 * another writer kept half the queue busy let a parallel copy's dirty
 * pages reach 83 MiB in a 256 MiB cgroup and push out half the hot set.  /sys/dev/block/MAJ:MIN/inflight counts what is in
 * flight, queue/nr_requests (the whole disk's, for a partition) how much
 * may be.  Filesystems with no such device (btrfs's anonymous devices,
 * device-mapper) are never taken as busy: the file's own bound applies.
 */
static bool uo_wf_disk_busy(struct uo_wfiles *t, int fd)
{
	char path[96], buf[64];
	unsigned long rd, wr;
	struct stat sb;
	int64_t now;
	ssize_t n;
	int f;

	if (fstat(fd, &sb) != 0 || !major(sb.st_dev))
		return false;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/inflight", major(sb.st_dev),
		 minor(sb.st_dev));
	f = open(path, O_RDONLY | O_CLOEXEC);
	n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
	if (f >= 0)
		close(f);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &rd, &wr) != 2)
		return false;
	/*
	 * The queue's size changes only when someone writes it: read once a
	 * second, not before every submission (one or two opens of sysfs a
	 * folio submitted, a few per cent of a watched copy's CPU time).
	 */
	now = uo_wf_now();
	if (t->nr_dev != (uint64_t)sb.st_dev || now - t->nr_ns >= 1000 * UO_MS) {
		t->nr_req = 0;
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/nr_requests",
			 major(sb.st_dev), minor(sb.st_dev));
		f = open(path, O_RDONLY | O_CLOEXEC);
		if (f < 0) {
			snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/nr_requests",
				 major(sb.st_dev), minor(sb.st_dev));
			f = open(path, O_RDONLY | O_CLOEXEC);
		}
		n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
		if (f >= 0)
			close(f);
		if (n > 0) {
			buf[n] = '\0';
			t->nr_req = strtoul(buf, NULL, 10);
		}
		t->nr_dev = (uint64_t)sb.st_dev;
		t->nr_ns = now;
	}
	return t->nr_req && wr >= t->nr_req;
}

uint64_t uo_wf_writeback(struct uo_wfiles *t, int fd, uint64_t off, uint64_t len)
{
	int64_t t0 = t->timed ? uo_wf_cpu_ns() : 0;
	uint64_t chunk = t->t->align ? t->t->align : 2ULL << 20, at, n, sent = 0;

	if (t->wb_until && uo_wf_now() >= t->wb_until) {
		t->wb_cut = true;
		return 0;
	}
	if (t->no_flush || uo_wf_stopped(t) || (!t->dry_run && uo_wf_disk_busy(t, fd)))
		return 0;
	/* A bounded range: UO_WF_INFLIGHT says why; the rest is started later. */
	if (!len || len > UO_WF_INFLIGHT * t->t->window)
		len = UO_WF_INFLIGHT * t->t->window;
	/* What a dry run would have asked, so that --stats still says it. */
	if (t->dry_run)
		return len;
	/*
	 * A folio's worth at a time, stopping when a watched process exits
	 * (uo_wf_stopped).  Submitting waits for the disk's writeback
	 * throttling (wbt) however empty its queue looks: one call of 30 MiB
	 * took 71 ms, with the file open, while the writer exited and its
	 * script's umount failed ("target is busy", 11 runs in 100).
	 */
	for (at = off; at < off + len; at += chunk) {
		if (at > off && uo_wf_stopped(t))
			break;
		if (at > off && t->wb_until && uo_wf_now() >= t->wb_until) {
			t->wb_cut = true;
			break;
		}
		n = off + len - at < chunk ? off + len - at : chunk;
		/* Counted only as far as it went on: the stop and the bound above cut it short. */
		if (sync_file_range(fd, (off_t)at, (off_t)n, SYNC_FILE_RANGE_WRITE) != 0)
			break;
		sent += n;
	}
	if (t->timed)
		t->advice_ns += (uint64_t)(uo_wf_cpu_ns() - t0);
	return sent;
}

static bool uo_wf_bit(const uint64_t *bm, uint64_t nbits, uint64_t i)
{
	return bm && i < nbits && ((bm[i / 64] >> (i % 64)) & 1);
}

static void uo_wf_set(uint64_t *bm, uint64_t nbits, uint64_t i)
{
	if (bm && i < nbits)
		bm[i / 64] |= 1ULL << (i % 64);
}

static uint64_t uo_wf_count(const uint64_t *bm, uint64_t nbits, uint64_t lo, uint64_t hi)
{
	uint64_t n = 0, i;

	if (!bm)
		return 0;
	if (hi > nbits)
		hi = nbits;
	for (i = lo; i < hi; ) {
		if (i % 64 == 0 && hi - i >= 64) {
			n += (uint64_t)__builtin_popcountll(bm[i / 64]);
			i += 64;
		} else {
			n += (bm[i / 64] >> (i % 64)) & 1;
			i++;
		}
	}
	return n;
}

static uint64_t uo_wf_size(int fd, uint64_t *nlink)
{
	struct stat sb;

	if (fstat(fd, &sb) != 0) {
		*nlink = 0;
		return 0;
	}
	*nlink = sb.st_nlink;
	return (uint64_t)sb.st_size;
}

/* The bitmaps cover size bytes; grown (with zeroes: not cached before) as files grow. */
static bool uo_wf_cover(struct uo_wfiles *t, struct uo_wfile *f, uint64_t size)
{
	uint64_t bits = (size + t->t->align - 1) / t->t->align;
	uint64_t words = (bits + 63) / 64, had = (f->nbits + 63) / 64;
	uint64_t *a, *b = NULL;

	if (bits <= f->nbits)
		return true;
	if (words > had) {
		a = realloc(f->aged, words * sizeof(*a));
		if (!a)
			return false;
		f->aged = a;
		memset(a + had, 0, (words - had) * sizeof(*a));
		if (f->before) {
			b = realloc(f->before, words * sizeof(*b));
			if (!b)
				return false;
			f->before = b;
			memset(b + had, 0, (words - had) * sizeof(*b));
		}
	}
	f->nbits = bits;
	return true;
}

static void uo_wf_visit(struct uo_wf_walk *k, uint64_t lo, uint64_t hi)
{
	uint64_t unit = k->t->t->align, off = lo * unit, end = hi * unit, mid;
	struct uo_wf_cs cs;

	if (end > k->size)
		end = k->size;
	if (off >= end)
		return;
	/*
	 * A walk over a file being written takes milliseconds (each call
	 * waits on the writer's pages): one that goes on past a watched
	 * process's exit holds the file while a script unmounts its disk.
	 */
	if (k->t->probes % 8 == 0 && uo_wf_stopped(k->t))
		return;
	if (uo_wf_cachestat(k->t, k->f->fd, off, end - off, &cs) != 0 || cs.nr_cache == 0)
		return;
	/* Nothing more than what was there before: nothing of the program's. */
	if (!k->snap && cs.nr_cache * k->t->page <=
			uo_wf_count(k->f->before, k->f->nbits, lo, hi) * unit)
		return;
	if (hi - lo == 1) {
		uint64_t busy = cs.nr_dirty + cs.nr_writeback;

		if (k->snap) {
			uint64_t clean = cs.nr_cache > busy ? cs.nr_cache - busy : 0;

			if (clean * k->t->page * 2 >= end - off)
				uo_wf_set(k->f->before, k->f->nbits, lo);
			return;
		}
		if (uo_wf_bit(k->f->before, k->f->nbits, lo))
			return;
		if (k->ne == k->cap) {
			unsigned cap = k->cap ? k->cap * 2 : 64;
			struct uo_wf_unit *e = realloc(k->e, cap * sizeof(*e));

			if (!e)
				return;
			k->e = e;
			k->cap = cap;
		}
		k->e[k->ne].u = lo;
		k->e[k->ne].pages = cs.nr_cache;
		k->e[k->ne].dirty = cs.nr_dirty;
		k->e[k->ne].busy = busy;
		k->ne++;
		return;
	}
	mid = lo + (hi - lo) / 2;
	uo_wf_visit(k, lo, mid);
	uo_wf_visit(k, mid, hi);
}

/* Contiguous units, advised in one call. */
struct uo_wf_run {
	uint64_t lo, hi;	/* units; empty when hi == lo */
	const struct uo_wf_unit *first;	/* the walk's entry of unit lo; those of the run follow it */
};

static void uo_wf_run_end(struct uo_wfiles *t, struct uo_wfile *f, struct uo_wf_run *r,
			  bool drop)
{
	uint64_t off = r->lo * t->t->align, len = (r->hi - r->lo) * t->t->align, sent;
	const struct uo_wf_unit *e;

	if (r->hi > r->lo) {
		if (drop) {
			uo_wf_drop(t, f->fd, off, len);
		} else {
			/*
			 * Only the units the submission reached: the sample's bound
			 * may cut it.  A dry run's pages stay dirty, and each sweep
			 * would count them again: not counted there.
			 */
			sent = uo_wf_writeback(t, f->fd, off, len) / t->t->align;
			for (e = r->first; e < r->first + sent && !t->dry_run; e++)
				t->flushed += e->dirty * t->page;
		}
	}
	r->lo = r->hi = 0;
	r->first = NULL;
}

static void uo_wf_run_add(struct uo_wfiles *t, struct uo_wfile *f, struct uo_wf_run *r,
			  const struct uo_wf_unit *e, bool drop)
{
	if (r->hi > r->lo && r->hi != e->u)
		uo_wf_run_end(t, f, r, drop);
	if (r->hi == r->lo) {
		r->lo = e->u;
		r->first = e;
	}
	r->hi = e->u + 1;
}

/*
 * Drops what the program brought in and is done with (final: everything
 * it brought in), starts writeback of what it wrote.  Returns true while
 * some of it is left (dirty, or under writeback).
 */
static bool uo_wf_sweep(struct uo_wfiles *t, struct uo_wfile *f, bool final, uint64_t *done)
{
	struct uo_wf_walk k = { .t = t, .f = f };
	struct uo_wf_run flush = { 0, 0, NULL }, drop = { 0, 0, NULL };
	uint64_t nlink, newest = 0, guard = 0, i;
	bool left = false, any_new = false, written = false, busy_disk;
	struct uo_wf_cs cs;
	uint64_t progress = 0, inflight = 0, flushing = 0, dropping = 0;

	if (done)
		*done = 0;
	k.size = uo_wf_size(f->fd, &nlink);
	/* Unlinked: its pages go with the last descriptor, ours included. */
	if (nlink == 0 || !uo_wf_cover(t, f, k.size))
		return false;
	t->sweeps++;
	uo_wf_visit(&k, 0, f->nbits);
	/* Cut short (uo_wf_stopped): what it found is partial; the next sample sweeps again. */
	if (t->stopped) {
		free(k.e);
		return true;
	}
	for (i = 0; i < k.ne; i++) {
		k.e[i].aged = uo_wf_bit(f->aged, f->nbits, k.e[i].u);
		if (!k.e[i].aged) {
			any_new = true;
			newest = k.e[i].u;
		}
		written |= k.e[i].busy != 0;
		inflight += k.e[i].busy - k.e[i].dirty;
	}
	busy_disk = inflight * t->page >= UO_WF_INFLIGHT * t->t->window;
	/*
	 * Written once (a pack written then synced): clean now, but nobody
	 * reads it back.  Only by the program: dirty pages in a file it only
	 * reads are someone else's (a log another process appends to).
	 */
	if (f->writable)
		f->wrote |= written;
	written = f->wrote;
	/*
	 * A reader's readahead lies below the newest unit: not dropped yet.
	 * What a writer wrote goes once clean: nobody reads it back soon.
	 */
	if (!final && !written && any_new)
		guard = t->t->lookahead / 2 / t->t->align + 1;
	if (f->aged)
		memset(f->aged, 0, (f->nbits + 63) / 64 * sizeof(*f->aged));
	for (i = 0; i < k.ne; i++) {
		struct uo_wf_unit *e = &k.e[i];
		bool go = !e->busy && (final || written ||
			  (e->aged && !(guard && e->u <= newest && e->u + guard > newest)));

		/*
		 * A file the program only reads grew by someone else's
		 * writing: what lies beyond its size at first sight was never
		 * the program's to bring in (the unit it ends in was: a
		 * small file is no more than that).
		 */
		if (!f->writable && e->u * t->t->align >= f->size0)
			continue;

		if (e->dirty && !t->no_flush && !busy_disk &&
		    flushing < UO_WF_INFLIGHT * t->t->window) {
			flushing += t->t->align;
			uo_wf_run_add(t, f, &flush, e, false);
			if (!e->aged)
				progress++;
		}
		if (go && dropping >= UO_WF_DROP_MAX * t->t->window)
			go = false;
		if (go) {
			dropping += t->t->align;
			uo_wf_run_add(t, f, &drop, e, true);
			if (e->pages > e->busy)
				t->dropped += (e->pages - e->busy) * t->page;
			progress++;
		}
		/*
		 * Dirty units are never in a drop range: fadvise would write
		 * them out itself, and block us while the disk is busy.
		 */
		if (!go) {
			uo_wf_set(f->aged, f->nbits, e->u);
			left = true;
		}
	}
	uo_wf_run_end(t, f, &flush, false);
	uo_wf_run_end(t, f, &drop, true);
	free(k.e);
	if (done && !t->dry_run)
		*done = progress;
	f->swept_ns = uo_wf_now();
	f->swept_b = uo_wf_cachestat(t, f->fd, 0, 0, &cs) == 0 ? cs.nr_cache * t->page : 0;
	return left;
}

static void uo_wf_free_slot(struct uo_wfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->before);
	free(f->aged);
	free(f->fh);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

/* Its descriptor closed: the file keeps no filesystem busy between two passes. */
static void uo_wf_park(struct uo_wfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->parked = true;
	f->parked_ns = uo_wf_now();
}

/*
 * A parked file opened again for one pass, by its handle: false if it
 * cannot be (its filesystem unmounted, the file gone, a lease on it now).
 */
static bool uo_wf_unpark(struct uo_wfiles *t, struct uo_wfile *f)
{
	struct stat sb;

	if (f->fd >= 0)
		return true;
	if (!f->fh || !t->reopen || uo_wf_leased(t, f->dev, f->ino))
		return false;
	f->fd = t->reopen(t->reopen_ctx, f->dev, f->fh);
	if (f->fd >= 0 && (fstat(f->fd, &sb) != 0 || (uint64_t)sb.st_dev != f->dev ||
			   (uint64_t)sb.st_ino != f->ino)) {
		close(f->fd);
		f->fd = -1;
	}
	return f->fd >= 0;
}

/* Its handle, to open it again once parked; none where it cannot be used. */
static void uo_wf_handle(struct uo_wfiles *t, struct uo_wfile *f)
{
	struct file_handle *fh;
	int mnt;

	if (!t->reopen)
		return;
	fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	if (!fh)
		return;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(f->fd, "", fh, &mnt, AT_EMPTY_PATH) != 0) {
		free(fh);
		return;
	}
	f->fh = fh;
}

void uo_wfiles_init(struct uo_wfiles *t, const struct uo_tuning *tu, bool dry_run)
{
	long page = sysconf(_SC_PAGESIZE);

	memset(t, 0, sizeof(*t));
	t->t = tu;
	t->dry_run = dry_run;
	t->page = page > 0 ? (uint64_t)page : 4096;
	t->start_real_s = (int64_t)time(NULL);
}

void uo_wfiles_free(struct uo_wfiles *t)
{
	unsigned i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].used)
			uo_wf_free_slot(&t->v[i]);
	free(t->v);
	free(t->cold);
	t->cold = NULL;
	free(t->leases);
	t->leases = NULL;
	t->nleases = t->cap_leases = 0;
	t->v = NULL;
	t->n = t->cap = 0;
}

bool uo_wf_memory_fs(int fd)
{
	struct statfs sfs;

	return fstatfs(fd, &sfs) == 0 &&
	       (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
}

/* Made since we started watching: whatever of it is cached, its maker brought in. */
static bool uo_wf_born_since(const struct uo_wfiles *t, int fd)
{
	struct statx sx;

	return statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &sx) == 0 &&
	       (sx.stx_mask & STATX_BTIME) && sx.stx_btime.tv_sec >= t->start_real_s;
}

static int uo_wf_lookup(struct uo_wfiles *t, const struct stat *sb)
{
	unsigned i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].used && t->v[i].ino == (uint64_t)sb->st_ino &&
		    t->v[i].dev == (uint64_t)sb->st_dev)
			return (int)i;
	return -1;
}

int uo_wfiles_find(struct uo_wfiles *t, int fd)
{
	struct stat sb;

	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
		return -1;
	return uo_wf_lookup(t, &sb);
}

static bool uo_wf_was_cold(struct uo_wfiles *t, const struct stat *sb)
{
	int64_t now = uo_wf_now();
	unsigned i, n = t->ncold < UO_WF_COLD ? t->ncold : UO_WF_COLD;

	for (i = 0; i < n; i++)
		if (t->cold[i].ino == (uint64_t)sb->st_ino && t->cold[i].dev == (uint64_t)sb->st_dev)
			return now - t->cold[i].ns < UO_WF_COLD_NS;
	return false;
}

/*
 * Forgotten after each batch of events or sample, so a lease taken since
 * is seen.  The kernel writes /proc/locks out whole at every read: with
 * tens of thousands of locks on the machine (a database's) a read takes
 * tens of milliseconds, and reading it every 20 ms took a third of a core.
 * A read that took over a millisecond is kept for twenty times as long,
 * so reading it costs at most about 5% of a core.
 */
#define UO_WF_LEASES_SLOW_NS	1000000
#define UO_WF_LEASES_KEEP	20

void uo_wf_leases_forget(struct uo_wfiles *t)
{
	if (t->leases_cost_ns > UO_WF_LEASES_SLOW_NS &&
	    uo_wf_now() - t->leases_at_ns < UO_WF_LEASES_KEEP * t->leases_cost_ns)
		return;
	t->leases_read = false;
}

/* One line of /proc/locks: "1: LEASE  ACTIVE    WRITE 4242 08:01:1234 0 EOF". */
static bool uo_wf_lease_line(char *line, struct uo_wf_lease *l)
{
	char *tok, *save = NULL;
	bool lease = false;

	for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (!strcmp(tok, "LEASE") || !strcmp(tok, "DELEG"))
			lease = true;
		else if (lease && strchr(tok, ':') &&
			 sscanf(tok, "%x:%x:%" SCNu64, &l->major, &l->minor, &l->ino) == 3)
			return true;
	}
	return false;
}

/* /proc/locks, once since the last forget; false if it cannot be read. */
static bool uo_wf_leases_read(struct uo_wfiles *t)
{
	static char buf[65536];
	char line[256];
	int64_t start;
	FILE *f;

	if (t->leases_read)
		return true;
	t->nleases = 0;
	start = uo_wf_now();
	f = fopen("/proc/locks", "re");
	if (!f)
		return false;
	/* Big reads: the file is made whole for each one. */
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	while (fgets(line, sizeof(line), f)) {
		struct uo_wf_lease l;

		if (!strstr(line, "LEASE") && !strstr(line, "DELEG"))
			continue;
		if (!uo_wf_lease_line(line, &l))
			continue;
		if (t->nleases == t->cap_leases) {
			unsigned cap = t->cap_leases ? t->cap_leases * 2 : 16;
			struct uo_wf_lease *v = realloc(t->leases, cap * sizeof(*v));

			if (!v) {
				fclose(f);
				return false;
			}
			t->leases = v;
			t->cap_leases = cap;
		}
		t->leases[t->nleases++] = l;
	}
	fclose(f);
	t->leases_read = true;
	t->leases_at_ns = uo_wf_now();
	t->leases_cost_ns = t->leases_at_ns - start;
	return true;
}

/*
 * Without /proc/locks (not mounted, out of memory) nothing tells: every
 * file counts as leased, and is not opened.  /proc/locks names the
 * superblock's device, which is not always what stat says: btrfs's stat
 * gives a subvolume's own anonymous device.  So the inode number alone
 * decides; a file of another filesystem that has the same number is
 * skipped too, which only leaves it unguarded.
 */
bool uo_wf_leased(struct uo_wfiles *t, uint64_t dev, uint64_t ino)
{
	unsigned i;

	(void)dev;
	if (!uo_wf_leases_read(t))
		return true;
	for (i = 0; i < t->nleases; i++)
		if (t->leases[i].ino == ino)
			return true;
	return false;
}

/* For the same reason, any anonymous device (major 0) may be dev's. */
bool uo_wf_leased_dev(struct uo_wfiles *t, uint64_t dev)
{
	unsigned i, maj = major((dev_t)dev);

	if (!uo_wf_leases_read(t))
		return true;
	for (i = 0; i < t->nleases; i++)
		if (t->leases[i].major == maj &&
		    (maj == 0 || t->leases[i].minor == minor((dev_t)dev)))
			return true;
	return false;
}

/*
 * A listed entry, opened only if it is a file of the directory's own
 * mount.  A file bind-mounted over an entry (a FUSE file over a local
 * one) is another filesystem's: openat() would cross into it, and an open
 * there is a request to its daemon or server.  Without openat2 (before
 * Linux 5.6) nothing can tell before the open: the entry is skipped.
 */
static int uo_wf_open_entry(int dir, const char *name)
{
	static bool no_openat2;
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOATIME | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS,
	};
	int f;

	if (no_openat2)
		return -1;
	f = (int)syscall(__NR_openat2, dir, name, &how, sizeof(how));
	if (f < 0 && errno == ENOSYS)
		no_openat2 = true;
	return f;
}

/*
 * A listed entry with a lease.  Its inode number is the entry's own on
 * the directory's filesystem; where a lease is held on that filesystem,
 * the entry is also looked at (not opened, symbolic links not followed):
 * a filesystem's directory may number its entries otherwise (overlayfs).
 */
static bool uo_wf_leased_entry(struct uo_wfiles *t, int dir, const struct stat *dsb,
			       const struct dirent *de)
{
	struct stat sb;

	if (!uo_wf_leased_dev(t, (uint64_t)dsb->st_dev))
		return false;
	if (uo_wf_leased(t, (uint64_t)dsb->st_dev, (uint64_t)de->d_ino))
		return true;
	if (fstatat(dir, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
		return true;
	return uo_wf_leased(t, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino);
}

void uo_wfiles_listing(struct uo_wfiles *t, int dir)
{
	struct stat sb;
	struct dirent *de;
	unsigned n = 0;
	DIR *d;
	int fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);

	if (fd < 0)
		return;
	if (fstat(fd, &sb) != 0 || !(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	if (!t->cold && !(t->cold = calloc(UO_WF_COLD, sizeof(*t->cold)))) {
		closedir(d);
		return;
	}
	while ((de = readdir(d)) && n < UO_WF_LIST_MAX) {
		struct uo_wf_cs cs;
		int f;

		if (de->d_type != DT_REG)
			continue;
		n++;
		if (uo_wf_leased_entry(t, dirfd(d), &sb, de))
			continue;
		f = uo_wf_open_entry(dirfd(d), de->d_name);
		if (f < 0)
			continue;
		if (uo_wf_cachestat(t, f, 0, 0, &cs) == 0 && cs.nr_cache == 0) {
			struct uo_wf_cold *c = &t->cold[t->ncold++ % UO_WF_COLD];

			c->dev = (uint64_t)sb.st_dev;
			c->ino = (uint64_t)de->d_ino;
			c->ns = uo_wf_now();
		}
		close(f);
	}
	t->listed += n;
	closedir(d);
}

int uo_wfiles_see(struct uo_wfiles *t, int fd, unsigned flags)
{
	struct uo_wfile *f;
	struct uo_wf_cs cs;
	struct stat sb;
	unsigned i;
	int at;

	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
		return -1;
	at = uo_wf_lookup(t, &sb);
	if (at >= 0) {
		f = &t->v[at];
		if (flags & UO_WF_EVENT)
			f->opened = true;
		else
			f->users++;
		if (flags & (UO_WF_WRITABLE | UO_WF_WRITTEN))
			f->writable = true;
		/* Back before its drop was done: it is the program's again. */
		f->closing = false;
		f->undecided = false;
		if (f->fd < 0) {
			f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
			f->parked = false;
			if (f->fd < 0) {
				uo_wf_free_slot(f);
				return -1;
			}
		}
		return at;
	}
	/*
	 * Memory fs: the pages are the only copy.  Unlinked: the program's
	 * working memory, freed at its close (not ours, if we hold no
	 * descriptor), never written out by us.
	 */
	if (uo_wf_memory_fs(fd) || sb.st_nlink == 0)
		return -1;
	for (i = 0; i < t->n && t->v[i].used; i++)
		;
	if (i == t->n) {
		if (t->n == t->cap) {
			unsigned cap = t->cap ? t->cap * 2 : 16;
			struct uo_wfile *v = realloc(t->v, cap * sizeof(*v));

			if (!v)
				return -1;
			t->v = v;
			t->cap = cap;
		}
		t->n++;
	}
	f = &t->v[i];
	memset(f, 0, sizeof(*f));
	f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (f->fd < 0)
		return -1;
	f->used = true;
	f->dev = (uint64_t)sb.st_dev;
	f->ino = (uint64_t)sb.st_ino;
	f->size0 = (uint64_t)sb.st_size;
	f->writable = (flags & (UO_WF_WRITABLE | UO_WF_WRITTEN)) != 0;
	f->users = flags & UO_WF_EVENT ? 0 : 1;
	f->opened = (flags & UO_WF_EVENT) != 0;
	/* Without cachestat nothing can be told apart: the file is not followed. */
	if (uo_wf_cachestat(t, f->fd, 0, 0, &cs) != 0) {
		uo_wf_free_slot(f);
		return -1;
	}
	t->files++;
	f->swept_ns = uo_wf_now();
	f->swept_b = cs.nr_cache * t->page;
	/* Written now and made since we watch: all of it is the program's. */
	if ((flags & UO_WF_FRESH) || cs.nr_cache == 0 || uo_wf_was_cold(t, &sb) ||
	    ((cs.nr_dirty || cs.nr_writeback || (flags & UO_WF_WRITTEN)) &&
	     uo_wf_born_since(t, f->fd))) {
		f->cold = true;
		uo_wf_cover(t, f, (uint64_t)sb.st_size);
		uo_wf_handle(t, f);
		return (int)i;
	}
	f->before = calloc(1, sizeof(uint64_t));
	if (!f->before || !uo_wf_cover(t, f, (uint64_t)sb.st_size)) {
		uo_wf_free_slot(f);
		return -1;
	}
	{
		struct uo_wf_walk k = { .t = t, .f = f, .size = (uint64_t)sb.st_size, .snap = true };

		uo_wf_visit(&k, 0, f->nbits);
	}
	f->before_b = uo_wf_count(f->before, f->nbits, 0, f->nbits) * t->t->align;
	uo_wf_handle(t, f);
	return (int)i;
}

static uint64_t uo_wf_brought(struct uo_wfiles *t, struct uo_wfile *f, struct uo_wf_cs *cs)
{
	if (uo_wf_cachestat(t, f->fd, 0, 0, cs) != 0)
		return 0;
	return cs->nr_cache * t->page > f->before_b ? cs->nr_cache * t->page - f->before_b : 0;
}

void uo_wfiles_written(struct uo_wfiles *t, int i)
{
	if (i >= 0 && (unsigned)i < t->n && t->v[i].used)
		t->v[i].writable = true;
}

/* Nobody watched has it open any more: what the program brought in goes. */
/*
 * Is what the program brought into the file, now that nobody watched has
 * it open (closed at closed_ns), worth dropping: a stream's, or one of a
 * tree's files?  f->fd must be open.
 */
static bool uo_wf_decide(struct uo_wfiles *t, struct uo_wfile *f, int64_t closed_ns)
{
	struct uo_wf_cs cs;
	uint64_t brought = uo_wf_brought(t, f, &cs);

	if (brought >= t->t->window && !f->stream) {
		f->stream = true;
		t->streams++;
	}
	/*
	 * Smaller files are dropped when many come one after the other (a
	 * tree restored or backed up), as the library does.
	 */
	if (!f->stream && brought >= UO_TREE_MIN) {
		struct uo_tree *tree = cs.nr_dirty || cs.nr_writeback ? &t->wtree : &t->rtree;
		uint64_t ms = (uint64_t)(closed_ns / UO_MS);

		/*
		 * Files closed while shut are decided later, in no particular
		 * order: a close taken as earlier than the last one would
		 * start the tree's count again (every tree file stayed cached,
		 * and restic's backup of a tree pushed the hot set out).
		 */
		return uo_tree_closed(tree, ms < tree->last_ms ? tree->last_ms : ms);
	}
	return f->stream;
}

/* Nobody watched has it open any more: what the program brought in goes. */
static void uo_wf_last(struct uo_wfiles *t, struct uo_wfile *f)
{
	int64_t now = uo_wf_now();

	/*
	 * Shut (wfile.h: uo_wfiles_shut): not opened again here, as the
	 * program closes it and a script may unmount its disk next.  The
	 * pass that opens it again (at once if the watched still use its
	 * filesystem, else parked, 250 ms later) decides.  What the last
	 * sample saw is not enough: a tree's files are opened, read and
	 * closed between two samples (restic backup of a tree kept 43.8%
	 * of the hot set when that decided).
	 */
	if (f->fd < 0 && t->reopen && f->fh) {
		f->undecided = true;
		f->closing = true;
		f->closed_ns = now;
		return;
	}
	if (!uo_wf_decide(t, f, now)) {
		uo_wf_free_slot(f);
		return;
	}
	f->closing = true;
	f->closed_ns = now;
	/*
	 * Nothing is done as it closes where the file can be opened again
	 * (reopen): the next pass drops it, or, once its filesystem is let
	 * go of, a parked pass later, when a script's umount right after the
	 * close is over.  Otherwise now, but what is dirty is written out
	 * from the next pass on (no_flush).
	 */
	if (t->reopen && f->fh)
		return;
	t->no_flush = true;
	if (!uo_wf_sweep(t, f, true, NULL))
		uo_wf_free_slot(f);
	t->no_flush = false;
}

void uo_wfiles_release(struct uo_wfiles *t, int i)
{
	struct uo_wfile *f;

	if (i < 0 || (unsigned)i >= t->n || !t->v[i].used)
		return;
	f = &t->v[i];
	if (f->users)
		f->users--;
	if (!f->users && !f->opened && !f->closing)
		uo_wf_last(t, f);
}

void uo_wfiles_closed(struct uo_wfiles *t, int i)
{
	struct uo_wfile *f;

	if (i < 0 || (unsigned)i >= t->n || !t->v[i].used)
		return;
	f = &t->v[i];
	f->opened = false;
	if (!f->users && !f->closing)
		uo_wf_last(t, f);
}

void uo_wfiles_work(struct uo_wfiles *t)
{
	int64_t now = uo_wf_now();
	uint64_t budget = 2 * t->t->window;
	unsigned i;

	for (i = 0; i < t->n; i++) {
		struct uo_wfile *f = &t->v[i];
		struct uo_wf_cs cs;
		uint64_t brought, cached, busy, nlink, size;

		if (!f->used || (f->fd < 0 && f->quiet && !f->closing && !t->moved))
			continue;
		if (uo_wf_stopped(t))
			break;
		if (f->closing) {
			bool left;

			if (f->parked && !t->draining && now - f->parked_ns < UO_WF_PARK_NS)
				continue;
			/* Parked: what is clean goes, the flusher writes the rest. */
			t->no_flush = f->parked && !t->draining;
			if (!uo_wf_unpark(t, f) ||
			    (f->undecided && !uo_wf_decide(t, f, f->closed_ns))) {
				t->no_flush = false;
				uo_wf_free_slot(f);
				continue;
			}
			f->undecided = false;
			left = uo_wf_sweep(t, f, true, NULL);
			t->no_flush = false;
			if (!left || now - f->closed_ns > UO_WF_GIVEUP_NS)
				uo_wf_free_slot(f);
			else if (f->parked)
				uo_wf_park(f);
			continue;
		}
		if (f->fd < 0 && !uo_wf_unpark(t, f)) {
			/* Gone, or leased now: nothing more to do for it once nobody has it. */
			if (!f->users && !f->opened)
				uo_wf_free_slot(f);
			continue;
		}
		brought = uo_wf_brought(t, f, &cs);
		cached = cs.nr_cache * t->page;
		/*
		 * Written: dirty pages seen, or a file cold at first sight that
		 * grew (written and synced between two samples, a pack is
		 * never seen dirty).
		 */
		if (f->writable && (cs.nr_dirty || cs.nr_writeback ||
				    (f->cold && !f->wrote && cached > f->last_b &&
				     uo_wf_size(f->fd, &nlink) > f->size0)))
			f->wrote = true;
		if (cached > f->last_b) {
			t->grown += cached - f->last_b;
			t->stream_grew |= f->stream;
		}
		f->last_b = cached;
		if (brought >= t->t->window && !f->stream) {
			f->stream = true;
			t->streams++;
		}
		/*
		 * Written data: its writeback starts now, not when the kernel
		 * gets to it; not an unlinked file's, which nobody will read.
		 */
		if (f->stream && f->writable && cs.nr_dirty * t->page >= t->t->window / 2 &&
		    cs.nr_writeback * t->page < UO_WF_INFLIGHT * t->t->window && !t->dry_run &&
		    (size = uo_wf_size(f->fd, &nlink), nlink)) {
			/*
			 * The front of the file, where a writer's newest pages
			 * are; a bounded range (UO_WF_INFLIGHT): dirty pages
			 * elsewhere are started by the sweeps.
			 */
			uint64_t span = UO_WF_INFLIGHT * t->t->window;
			uint64_t from = size > span ? (size - span) / t->t->align * t->t->align : 0;
			uint64_t dirty = cs.nr_dirty, sent;
			struct uo_wf_cs front;

			/* Counted: what the range had dirty, not the whole file's. */
			if (uo_wf_cachestat(t, f->fd, from, 0, &front) == 0)
				dirty = front.nr_dirty;
			sent = uo_wf_writeback(t, f->fd, from, 0);
			t->flushed += dirty * t->page < sent ? dirty * t->page : sent;
		}
		/*
		 * A sweep costs calls per unit cached: one that could do
		 * nothing (pages mapped or pinned, a dry run) makes the next
		 * wait for twice as much growth, or it would cost as much
		 * again each time the file grows a little.
		 */
		if (!f->step)
			f->step = t->t->window / 2;
		busy = (cs.nr_dirty + cs.nr_writeback) * t->page;
		/*
		 * What a writer wrote goes as soon as it is clean (a backup's
		 * pack, written then synced, is never read back): half a window
		 * of it is worth a sweep.  A reader's goes a window of growth at
		 * a time.
		 */
		/*
		 * Nothing left that comes without the program: no sweep due
		 * (by time too), no writeback to start, and no written pages
		 * whose turning clean would make a sweep due.  A log the
		 * program appends to, dirty for the flusher's 30 s, is not
		 * opened at every sample meanwhile.
		 */
		f->quiet = !(f->wrote ? brought > busy && brought - busy >= f->step
				      : brought > budget && f->step == t->t->window / 2) &&
			   !(busy && f->wrote && brought >= f->step) &&
			   !(f->stream && f->writable && cs.nr_dirty * t->page >= t->t->window / 2);
		if (f->wrote ? brought > busy && brought - busy >= f->step :
		    brought > budget &&
		    (cached >= f->swept_b + f->step ||
		     (f->step == t->t->window / 2 && now - f->swept_ns >= UO_WF_SWEEP_NS))) {
			uint64_t done;

			uo_wf_sweep(t, f, false, &done);
			f->step = done ? t->t->window / 2 : f->step * 2;
			f->last_b = f->swept_b;
			/* What the sweep left is looked at again. */
			f->quiet = false;
		}
	}
}

bool uo_wfiles_pending(const struct uo_wfiles *t)
{
	unsigned i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].used && t->v[i].closing)
			return true;
	return false;
}

void uo_wfiles_close_all(struct uo_wfiles *t)
{
	unsigned i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].used && !t->v[i].closing) {
			t->v[i].users = 0;
			t->v[i].opened = false;
			uo_wf_last(t, &t->v[i]);
		}
}

bool uo_wfiles_in_use(const struct uo_wfiles *t, uint64_t dev)
{
	unsigned i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].used && t->v[i].dev == dev && (t->v[i].users || t->v[i].opened))
			return true;
	return false;
}

void uo_wfiles_let_go(struct uo_wfiles *t, bool (*in_use)(void *ctx, uint64_t dev), void *ctx)
{
	unsigned i;

	for (i = 0; i < t->n; i++) {
		struct uo_wfile *f = &t->v[i];

		if (!f->used || f->parked || f->users || f->opened || in_use(ctx, f->dev))
			continue;
		if (f->fh && t->reopen)
			uo_wf_park(f);
		else
			uo_wf_free_slot(f);
	}
}

void uo_wfiles_shut(struct uo_wfiles *t)
{
	unsigned i;

	if (!t->reopen)
		return;
	for (i = 0; i < t->n; i++) {
		struct uo_wfile *f = &t->v[i];

		if (f->used && f->fd >= 0 && f->fh) {
			close(f->fd);
			f->fd = -1;
		}
	}
}

void uo_wfiles_lend(struct uo_wfiles *t, int i, int fd, uint64_t dev, uint64_t ino)
{
	struct uo_wfile *f;

	if (i < 0 || (unsigned)i >= t->n || !t->v[i].used)
		return;
	f = &t->v[i];
	/* The caller's index may name another file by now: only the same file. */
	if (f->fd < 0 && !f->parked && f->dev == dev && f->ino == ino)
		f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

int uo_wfiles_find_handle(const struct uo_wfiles *t, uint64_t dev, const struct file_handle *fh)
{
	unsigned i;

	for (i = 0; i < t->n; i++) {
		const struct uo_wfile *f = &t->v[i];

		if (f->used && f->fh && f->dev == dev && f->fh->handle_type == fh->handle_type &&
		    f->fh->handle_bytes == fh->handle_bytes &&
		    !memcmp(f->fh->f_handle, fh->f_handle, fh->handle_bytes))
			return (int)i;
	}
	return -1;
}
