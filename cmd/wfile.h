/*
 * The watcher's files: every regular file a watched process has open,
 * followed by its residency in the page cache rather than by a position.
 * Positional I/O (pread, pwrite: a restore's packs, a database-like copy)
 * moves no file position, and a file that is opened, written and closed
 * between two samples shows no position at all; both show up as pages
 * that were not cached when the watcher first saw the file.  Those pages
 * are the program's: they are written back early and dropped, and what
 * was cached before is kept.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_WFILE_H
#define UO_WFILE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

struct uo_wfile {
	uint64_t dev, ino;
	bool used;		/* false: a free slot */
	int fd;			/* ours, read-only; -1 while parked */
	bool parked;		/* fd closed: opened again by handle for each pass */
	int64_t parked_ns;	/* when it was parked, or last opened again */
	struct file_handle *fh;	/* to open it again; NULL: t->reopen is not set */
	unsigned users;		/* watched descriptors naming it, as scanned */
	bool opened;		/* a fanotify open not yet followed by a close */
	bool cold;		/* nothing of it was cached at first sight */
	bool closing;		/* the program closed it: dropping what it brought in */
	bool undecided;		/* closed while shut: whether to drop is decided once opened again */
	bool stream;		/* the program brought in a window or more */
	bool wrote;		/* dirty pages were seen: the program writes it */
	bool writable;		/* a watched descriptor writes it, or closed it written */
	bool quiet;		/* its last pass left nothing to do until the program moves */
	uint64_t size0;		/* its size at first sight: what lies beyond, a reader never brought */
	uint64_t nbits;		/* bits in the bitmaps below, one per unit */
	uint64_t *before;	/* unit cached (clean) at first sight; NULL if cold */
	uint64_t *aged;		/* unit brought in and seen at the last sweep already */
	uint64_t before_b;	/* bytes cached (clean) at first sight */
	uint64_t swept_b;	/* bytes cached just after the last sweep */
	uint64_t last_b;	/* bytes cached at the last sample */
	uint64_t step;		/* growth that calls for the next sweep */
	int64_t swept_ns;
	int64_t closed_ns;
};

/* Files found uncached in a directory a watched process opened (a ring). */
#define UO_WF_COLD	8192

struct uo_wf_cold {
	uint64_t dev, ino;
	int64_t ns;		/* when it was seen uncached */
};

struct uo_wf_lease {
	unsigned major, minor;
	uint64_t ino;
};

struct uo_wfiles {
	struct uo_wfile *v;
	unsigned n, cap;
	const struct uo_tuning *t;
	bool dry_run;
	uint64_t page;
	int64_t start_real_s;	/* files born after this were made by the watched */
	struct uo_tree rtree, wtree;
	/* Statistics. */
	uint64_t files, streams, sweeps, probes, dropped, flushed;
	uint64_t grown;		/* bytes cached more from one sample to the next, summed */
	bool stream_grew;	/* a stream's file grew since the caller last cleared it */
	uint64_t listed;	/* files looked at in directories the program opened */
	/*
	 * Start no writeback now: a file is being closed, or is parked.
	 * Submitting writeback can block for as long as the disk's queue is
	 * full, with a descriptor of ours open; a script that unmounts the
	 * disk as soon as its writer exits found it busy.  The kernel's
	 * flusher (or the umount) writes those pages; what is clean goes.
	 */
	bool no_flush;
	/*
	 * The watched processes are gone: nobody watched is left to unmount
	 * anything, and parked files are passed over at once, written out
	 * and dropped as they turn clean (the caller waits a few seconds).
	 */
	bool draining;
	bool timed;		/* advice_ns is counted (--stats) */
	uint64_t advice_ns;	/* CPU time in fadvise and sync_file_range: work moved, not added */
	struct uo_wf_cold *cold;
	unsigned ncold;
	/* Files with a lease (or an NFS delegation), from /proc/locks. */
	struct uo_wf_lease *leases;
	unsigned nleases, cap_leases;
	bool leases_read;	/* read since uo_wf_leases_forget() */
	int64_t leases_at_ns;	/* when /proc/locks was last read */
	int64_t leases_cost_ns;	/* and how long that took */
	/*
	 * Opens a file again by its handle on filesystem dev (the caller's
	 * mount of it); -1 if it cannot.  NULL: files cannot be opened
	 * again (no CAP_DAC_READ_SEARCH), and are given up instead.
	 */
	int (*reopen)(void *ctx, uint64_t dev, struct file_handle *fh);
	void *reopen_ctx;
	/*
	 * True when advice must wait: a watched process has exited and the
	 * caller has not let go of its files yet.  Advice takes milliseconds
	 * on a busy disk, with the file open; a script's umount right after
	 * its writer exits met it.  NULL: never.
	 */
	bool (*stop)(void *ctx);
	/*
	 * stop() said so during this sample: its work is cut short, what it
	 * opened closed, and the next sample comes at once.  Cleared by the
	 * caller as a sample starts.
	 */
	bool stopped;
	/*
	 * Set by the caller for each sample: a watched process may have read
	 * or written something since the last one.  While it is false, a
	 * shut file whose last pass left nothing to do (no dirty pages or
	 * writeback, no sweep due) is not opened again: an idle program's
	 * files were opened by handle at every sample, all of them (a
	 * Python's libraries too), seen by inotify and on-access scanners.
	 */
	bool moved;
	/*
	 * Writeback is submitted in this sample until then (CLOCK_MONOTONIC
	 * ns; 0: no bound), and wb_cut says the bound cut some: set and
	 * cleared by the caller.  Submitting waits for the disk's write
	 * throttling; a copy catching up after a stall read and wrote
	 * 128 MiB during one sample of 128 ms spent there, and its source
	 * pages, clean, went only after it.
	 */
	int64_t wb_until;
	bool wb_cut;
	/* The last disk's queue/nr_requests (uo_wf_disk_busy), read again after a second. */
	uint64_t nr_dev, nr_req;
	int64_t nr_ns;
};

/* Must this sample's work stop now?  stop(), latched in stopped. */
bool uo_wf_stopped(struct uo_wfiles *t);

void uo_wfiles_init(struct uo_wfiles *t, const struct uo_tuning *tu, bool dry_run);

/*
 * The watcher's only advice calls: drop [off, off+len) (len 0: to the
 * end), or start its writeback.  Never waits for writeback (that would
 * consume the program's writeback error), does nothing in a dry run.
 * The CPU time they take is the kernel's freeing of pages and submission
 * of writeback, which reclaim and the flusher threads would otherwise do:
 * counted apart when t->timed.  uo_wf_writeback returns the bytes of the
 * range it submitted, from off (in a dry run, what it would have): the
 * sample's bound (wb_until), an exit or a busy disk cut it short.
 */
void uo_wf_drop(struct uo_wfiles *t, int fd, uint64_t off, uint64_t len);
uint64_t uo_wf_writeback(struct uo_wfiles *t, int fd, uint64_t off, uint64_t len);
void uo_wfiles_free(struct uo_wfiles *t);

#define UO_WF_FRESH	0x1u	/* what is cached of it now is known to be the program's */
#define UO_WF_WRITTEN	0x2u	/* the program wrote it: if it was made since we watch, it made it */
#define UO_WF_WRITABLE	0x4u	/* the program has it open for writing */
/*
 * Seen through a fanotify open.  Events of one file are merged while
 * unread (two opens and their closes can come as one event), so they
 * are not counted: an open marks the file open, any close unmarks it.
 */
#define UO_WF_EVENT	0x8u

/*
 * A watched process has the file of fd open (fd is ours: a reopening, or
 * a fanotify event's).  Returns the file's index, its users counted up
 * (or, for UO_WF_EVENT, marked open),
 * or -1 if the file is not followed (not regular, memory fs).  flags:
 * UO_WF_*.
 */
int uo_wfiles_see(struct uo_wfiles *t, int fd, unsigned flags);

/* The file of fd, if followed: its index, or -1.  Nothing is counted. */
int uo_wfiles_find(struct uo_wfiles *t, int fd);

/*
 * A watched process opened the directory dir (ours): the files in it
 * that are not cached at all are noted, so that when the program opens
 * one, its pages are known to be the program's even if we look late.
 */
void uo_wfiles_listing(struct uo_wfiles *t, int dir);

/* The program closed the file written (fanotify said so): it writes it. */
void uo_wfiles_written(struct uo_wfiles *t, int i);

/*
 * One user fewer; at none, and no open event left unclosed, what the
 * program brought in goes.
 */
void uo_wfiles_release(struct uo_wfiles *t, int i);

/* A close event (fanotify): the open events are closed, and as above. */
void uo_wfiles_closed(struct uo_wfiles *t, int i);

/* Each sample: follow residency growth, start writeback, retry drops. */
void uo_wfiles_work(struct uo_wfiles *t);

/* Something is still waiting for writeback to finish. */
bool uo_wfiles_pending(const struct uo_wfiles *t);

/* The watched processes are gone: every file is closed by now. */
void uo_wfiles_close_all(struct uo_wfiles *t);

/*
 * Is a file of filesystem dev open in a watched process, as far as the
 * files know (a user, or an open event not yet closed)?
 */
bool uo_wfiles_in_use(const struct uo_wfiles *t, uint64_t dev);

/*
 * No descriptor of ours may keep a filesystem busy once the watched
 * processes hold none of its files: their own umount of it must work.
 * Files that wait for writeback on a filesystem that in_use() says no
 * more of are parked (their descriptor closed, opened again by handle
 * for each pass, see reopen) or, where that cannot be, given up: their
 * writeback was started, what is clean of them was dropped already.
 */
void uo_wfiles_let_go(struct uo_wfiles *t, bool (*in_use)(void *ctx, uint64_t dev), void *ctx);
/*
 * The end of a sample, where files can be opened again by handle
 * (reopen): every descriptor of ours is closed, and the file opened again
 * by the next sample that needs it (a watched descriptor's reopening
 * lent to it, uo_wfiles_lend, or its handle).  Between two samples the
 * watcher holds nothing of any filesystem: a script that unmounts its
 * disk as soon as its copy exits, before the watcher has seen the exit,
 * finds it free.  Without reopen, descriptors are kept as before.
 */
void uo_wfiles_shut(struct uo_wfiles *t);
/*
 * File i was shut: fd (a watched descriptor's, opened again this sample)
 * is lent to it (dup), if file i is still (dev, ino): the caller checked
 * that fd is, no second fstat.
 */
void uo_wfiles_lend(struct uo_wfiles *t, int i, int fd, uint64_t dev, uint64_t ino);
/*
 * The file whose handle is fh on filesystem dev, found without opening
 * anything (a close event names its file by handle); -1 if not followed.
 */
int uo_wfiles_find_handle(const struct uo_wfiles *t, uint64_t dev, const struct file_handle *fh);

/* tmpfs, ramfs: the pages are the only copy, never ours to drop. */
bool uo_wf_memory_fs(int fd);

/*
 * Leases.  An open of ours breaks a write lease (a read-only open is a
 * conflicting one): the holder gets SIGIO, whose default action kills,
 * and loses the lease.  A descriptor of ours also makes a lease taken
 * later fail (EAGAIN).  So a file is opened only if /proc/locks shows no
 * lease on it, read lazily: at most once between two calls of
 * uo_wf_leases_forget() (the caller's sample, or fanotify batch), and
 * only when a file is about to be opened.  A lease taken between that
 * read and our open is still broken: the window is one sample.
 *
 * uo_wf_leased: a lease on the file (dev, ino), or on one with its inode
 * number; uo_wf_leased_dev: a lease on any file of the filesystem dev, or
 * of any filesystem on an anonymous device if dev is one (an event's
 * handle names no inode number before it is opened).
 */
void uo_wf_leases_forget(struct uo_wfiles *t);
bool uo_wf_leased(struct uo_wfiles *t, uint64_t dev, uint64_t ino);
bool uo_wf_leased_dev(struct uo_wfiles *t, uint64_t dev);

#endif /* UO_WFILE_H */
