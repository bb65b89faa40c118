/*
 * The stream policy: which descriptors are streams, and what to drop or
 * flush behind them; and the tree rule, which tells when many small files
 * read whole make one stream.  Pure C (no system calls, no globals), so
 * every decision is replayed in unit tests from lists of events, and the
 * preloaded library and the command's watcher decide alike.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_POLICY_H
#define UO_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "useonce.h"

/* Advice is given in whole folios: fadvise skips a folio it does not cover. */
#define UO_ALIGN			(2ULL << 20)
/* stdio reads ahead of the program by its buffer; tolerate that much drift. */
#define UO_CURSOR_SLACK		(1ULL << 20)
/* Written windows kept in flight (writeback started, not yet dropped). */
#define UO_WRITE_LAG		2
/*
 * How far ahead of a reader the page cache is probed for what was cached
 * before the stream got there: beyond readahead, which reached 16 MiB here
 * with read_ahead_kb=8192, and 30 MiB after POSIX_FADV_SEQUENTIAL (cp).
 */
#define UO_LOOKAHEAD		(32ULL << 20)
/* Folios whose residency one stream remembers (2 MiB each). */
#define UO_MEMORY_FOLIOS		64

/* An offset that is not known, and a range end meaning "to end of file". */
#define UO_UNKNOWN	UINT64_MAX
#define UO_EOF		UINT64_MAX

enum uo_dir {
	UO_READ = 0,
	UO_WRITE = 1,
};

#define UO_GUARD_READ	(1u << UO_READ)
#define UO_GUARD_WRITE	(1u << UO_WRITE)

struct uo_tuning {
	uint64_t threshold;	/* a sequential run this long is a stream */
	uint64_t window;	/* advice is batched to at least this many bytes */
	uint64_t align;		/* advice ranges start and end on this boundary */
	uint64_t slack;		/* drift tolerated between cursor-derived positions */
	unsigned guard;		/* UO_GUARD_* bits: directions that are guarded */
	unsigned write_lag;	/* windows between starting writeback and dropping */
	uint64_t lookahead;	/* residency is probed this far ahead of a reader */
	/*
	 * A read stream, once probed, is dropped behind in steps this big
	 * (whole folios); 0: a window at a time.  Probes stay a window apart.
	 */
	uint64_t read_step;
};

enum uo_state {
	UO_NEW = 0,	/* nothing seen yet */
	UO_TRACKING,	/* a run is being measured; not a stream (yet) */
	UO_STREAM,	/* a sequential stream: advice is being given */
	UO_IGNORED,	/* not worth guarding (pipe, tmpfs, O_DIRECT...) until reset */
};

/*
 * What the policy remembers of one descriptor.  The preload keeps one per
 * descriptor that moved data; all zeroes is a valid fresh state.
 */
struct uo_stream {
	uint64_t next;		/* where a sequential continuation would start */
	uint64_t run_start;	/* first byte of the current sequential run */
	uint64_t pending;	/* bytes moved at the cursor since its position was last known */
	uint64_t dropped;	/* advice to drop was given for [base, dropped) */
	uint64_t flushed;	/* writes: writeback was started for [base, flushed) */
	/*
	 * Streams drop only what they brought in.  Residency is probed ahead
	 * of the cursor (for a reader, beyond readahead); what the stream moved
	 * before the first probe is taken to be like the first probe.
	 */
	uint64_t probed;	/* what was cached before is known below this */
	uint64_t probe_floor;	/* ... and from this; both 0 before the first probe */
	uint64_t cached;	/* bit i: folio mask_base + i was cached before, or unborn: kept */
	uint64_t mask_base;	/* folio index (offset / align) of bit 0 */
	uint8_t head_cached;	/* what was read before probe_floor was cached */
	uint8_t some_cached;	/* a probe of this run found a folio of the file cached */
	uint8_t blind;		/* what was cached cannot be known: nothing is dropped */
	uint8_t noprobe;	/* cannot probe here (old kernel): everything is dropped */
	uint8_t state;		/* enum uo_state */
	uint8_t dir;		/* enum uo_dir of the current run */
	uint8_t positioned;	/* next is meaningful */
};

#define UO_EV_CURSOR	0x1u	/* the position came from the file cursor, not the call */
#define UO_EV_PROBED	0x2u	/* answer to UO_ADV_PROBE: [end - len, end), bits in 'cached' */
#define UO_EV_BLIND	0x4u	/* answer to UO_ADV_PROBE: residency cannot be seen (EPERM) */
#define UO_EV_NOPROBE	0x8u	/* answer to UO_ADV_PROBE: no way to probe (ENOSYS) */

/*
 * One observation.  Either bytes moved at a known offset (end known, len the
 * bytes that ended there), or bytes moved at the file cursor whose position
 * is not known yet (end == UO_UNKNOWN): those are only counted until the
 * policy asks for the position.
 */
struct uo_event {
	uint64_t end;		/* offset just past the bytes moved, or UO_UNKNOWN */
	uint64_t len;		/* bytes moved by this call */
	uint8_t dir;		/* enum uo_dir */
	uint8_t flags;		/* UO_EV_* */
	uint64_t cached;	/* UO_EV_PROBED: bit i, folio i of the range was cached */
	/*
	 * UO_EV_PROBED, a reader: bit i, folio i lay wholly past the end of the
	 * file.  Kept as if cached (what comes there before the reader does was
	 * written by someone else), but not counted as cached before.
	 */
	uint64_t unborn;
	/* ... and where the file ended then, if some of the range lay past it (else 0). */
	uint64_t unborn_from;
};

#define UO_ADV_ASK_POSITION	0x1u	/* tell me the cursor: observe again with end known */
#define UO_ADV_PROMOTED		0x2u	/* the descriptor just became a stream: check it is guardable */
#define UO_ADV_WAIT		0x4u	/* let writeback of the drop range finish before dropping */

struct uo_range {
	uint64_t start;
	uint64_t end;		/* exclusive; UO_EOF for "to end of file"; empty if end <= start */
};

struct uo_advice {
	unsigned flags;		/* UO_ADV_* */
	struct uo_range flush;	/* start writeback (never wait on the program's descriptor) */
	struct uo_range drop;	/* drop from the page cache, except the folios in 'keep' */
	uint64_t keep;		/* bit i: folio i of the drop range was cached before: keep it */
	struct uo_range probe;	/* which of these folios are cached? answer with UO_EV_PROBED */
};

/* The defaults above, as an initialiser (for static tuning) and as a call. */
#define UO_TUNING_DEFAULTS {						\
	.threshold = USEONCE_DEFAULT_THRESHOLD,				\
	.window = USEONCE_DEFAULT_WINDOW,				\
	.align = UO_ALIGN,						\
	.slack = UO_CURSOR_SLACK,					\
	.guard = UO_GUARD_READ | UO_GUARD_WRITE,			\
	.write_lag = UO_WRITE_LAG,					\
	.lookahead = UO_LOOKAHEAD,					\
}
void uo_tuning_defaults(struct uo_tuning *out);

/* Feed one event; returns what to do about it.  Never fails. */
struct uo_advice uo_observe(struct uo_stream *st, const struct uo_tuning *t,
			    const struct uo_event *ev);

/* The descriptor is being closed: what to do about the tail of its stream. */
struct uo_advice uo_closing(struct uo_stream *st, const struct uo_tuning *t);

/*
 * Writers: what they may have in flight (dirty or under writeback) before
 * they wait for the disk.  'budget' is the process's (a share of the
 * memory it may use; closing, what its closed streams may leave in all:
 * two windows, advise.c says why); 'tails' what the write streams it closed left in flight, never
 * waited for; 'in_flight' what this stream has from where its next drop
 * starts.  Returns the level to wait down to, or UO_NO_WAIT.  Writing, a
 * stream waits only past the budget, down to half a window under it.
 * Closing, it waits only if its tail would take the process past the
 * budget, down to what is left of it: a process whose tails fit never
 * waits, and one that writes more leaves at most the budget behind,
 * however many files it closes.
 */
#define UO_NO_WAIT	UINT64_MAX
uint64_t uo_write_wait(uint64_t budget, uint64_t window, uint64_t tails, uint64_t in_flight,
		       bool closing);

/*
 * Writers of the whole memory domain (the memory cgroup whose limit binds
 * the process, if it limits it below RAM): the same budget holds for all of them
 * together, since each process keeping its own budget let eight writers in
 * a 256 MiB cgroup have 180-240 MiB in flight.  'others' is what the
 * domain had in flight besides this stream when last read (its dirty +
 * writeback less 'in_flight' then).  A stream waits only when the domain
 * is past the budget and the others hold at least half a window (a lone
 * writer, whose domain is itself plus noise, keeps its own rule, above),
 * down to what the others leave of the budget, less half a window: down
 * to nothing once they hold all of it.  It waits for its own writeback
 * only, never for another's.  Returns the level or UO_NO_WAIT.
 */
uint64_t uo_domain_wait(uint64_t budget, uint64_t window, uint64_t others, uint64_t in_flight);

/*
 * How many bytes a writer of a memory domain moves between two looks (its
 * window, as the policy sees it): the configured window while the others
 * hold less than half of one, a folio ('align') once they hold more.
 * Each writer keeps about a window dirty before its next look, one under
 * writeback and one more before its drop: eight writers of 8 MiB windows
 * in a 256 MiB cgroup held 64 MiB in flight and 24 MiB cached each, and
 * pushed an 85 MiB hot set out.  A lone writer keeps its window.
 */
uint64_t uo_domain_step(uint64_t window, uint64_t align, uint64_t others);

/*
 * The stream threshold for the memory a process may use ('memory', 0 or
 * UINT64_MAX when not known: the configured one): at most 1/32 of it,
 * never above the configured threshold nor below a window.  A file's
 * first threshold of pages is never dropped, and eight writers' first 32
 * MiB each filled a 256 MiB cgroup before any was a stream; there it is
 * 8 MiB, on a machine of 1 GiB or more the configured 32 MiB.
 */
uint64_t uo_memory_threshold(const struct uo_tuning *t, uint64_t memory);

/* Stop guarding this descriptor until it is reset (not a regular file...). */
void uo_ignore(struct uo_stream *st);

/* Forget everything: the descriptor was closed or now names another file. */
void uo_reset(struct uo_stream *st);

/*
 * How far ahead of the cursor residency is probed: beyond readahead for a
 * reader; a window for a writer, which nothing runs ahead of.
 */
static inline uint64_t uo_lookahead(const struct uo_tuning *t, unsigned dir)
{
	return dir == UO_READ ? t->lookahead : t->window;
}

/*
 * How far a reader moves between two drops behind it: a window, or the
 * tuning's read step once what lies ahead has been probed (before, what
 * a drop keeps is guessed from the first probe, and a window of reading
 * is what that guess is worth).
 */
static inline uint64_t uo_read_step(const struct uo_stream *st, const struct uo_tuning *t)
{
	return t->read_step && st->probed ? t->read_step : t->window;
}

/*
 * The common case, cheaply: an event at a known offset that cannot lead to
 * advice (random access, or a run still short of the threshold).  Applies it
 * and returns true, exactly as uo_observe would; otherwise changes nothing
 * and returns false, and the caller goes on to uo_observe.  Inline because a
 * database's cached pread must not pay a function call for it.
 */
static inline bool uo_observe_quiet(struct uo_stream *st, const struct uo_tuning *t,
				    const struct uo_event *ev)
{
	uint64_t start, edge;

	if (st->state == UO_IGNORED)
		return true;
	if ((st->state != UO_TRACKING && st->state != UO_STREAM) || ev->end == UO_UNKNOWN ||
	    ev->end < ev->len || st->pending || ev->flags || st->dir != ev->dir ||
	    !(t->guard & (1u << ev->dir)))
		return false;
	start = ev->end - ev->len;
	/* A probe falls due (the same test as uo_observe's, on the run this event is in). */
	if (!st->blind && !st->noprobe &&
	    ev->end - (start != st->next ? start : st->run_start) >= t->window &&
	    ev->end + uo_lookahead(t, ev->dir) + t->window >= st->probed)
		return false;
	if (st->state == UO_STREAM) {
		/* A stream going on, with no window complete since the last advice. */
		edge = t->align ? ev->end - ev->end % t->align : ev->end;
		if (start != st->next ||
		    edge >= (ev->dir == UO_READ ? st->dropped + uo_read_step(st, t) :
						   st->flushed + t->window))
			return false;
	} else {
		uint64_t run = start != st->next ? start : st->run_start;

		/* A new run: forgetting what probes and early flushes learnt is uo_observe's job. */
		if (start != st->next && (st->probed || st->flushed))
			return false;
		if (ev->end - run >= t->threshold)
			return false;
		/* A file written from its start: writeback of a window falls due (uo_observe). */
		if (ev->dir == UO_WRITE && !run &&
		    (t->align ? ev->end - ev->end % t->align : ev->end) >= st->flushed + t->window)
			return false;
		st->run_start = run;
	}
	st->next = ev->end;
	return true;
}

/*
 * The first tree rule, reads only, files below a window: a process that
 * closes UO_TREE_FILES files it read whole, each within UO_TREE_GAP_MS of
 * the last, is streaming a tree.  The watcher still runs it (cmd/wfile.c);
 * the library runs uo_tree_file_closed below.
 */
#define UO_TREE_FILES	32
#define UO_TREE_GAP_MS	2000
#define UO_TREE_MIN	(64u * 1024u)	/* smaller files: not worth a system call */

struct uo_tree {
	uint64_t last_ms;	/* when the last file read whole was closed */
	uint32_t count;		/* files read whole with no long gap */
};

/* A file read whole was closed at now_ms: is the process streaming a tree? */
bool uo_tree_closed(struct uo_tree *tree, uint64_t now_ms);

static inline bool uo_range_empty(struct uo_range r)
{
	return r.end <= r.start;
}

/*
 * A process that moves many files whole, front to back, one after the
 * other, is streaming, whatever each file's size, reading or writing: a
 * tree.  (The rule for both directions, unit-tested in check_tree_rule;
 * the library's plumbing is tree.c, which applies it at the program's own
 * close, and behind.c, which drops written files later.)  The rule is kept per direction.  A run of whole files becomes a
 * tree after UO_TREE_STEPS files once it holds a stream's threshold of
 * bytes, or after UO_TREE_FILES files whatever their size; a pause longer
 * than UO_TREE_GAP_MS ends it.  In a tree, a file read whole is dropped
 * at close if it was cold when opened; a file written whole that this
 * descriptor created or truncated gets its writeback started at close and
 * is dropped once written (write-behind, below), at most UO_BEHIND_FILES
 * files or a budget of bytes waiting.  Files of a tree past a window are streams
 * (the threshold falls to a window), so no file size from UO_TREE_MIN up
 * is left to nobody.  Processes that each move one file (find -exec cp)
 * share their run through the per-user record, per parent process.
 */
#define UO_TREE_STEPS		4	/* files, at least, before bytes make a tree */
#define UO_TREE_ID_FILES	4	/* the run's first files name the tree in the record */

/* What a descriptor's file was when opened, as far as the tree rule cares. */
enum uo_opened {
	UO_OPEN_UNKNOWN = 0,	/* not asked, or could not be told */
	UO_OPEN_COLD,		/* nothing of it was cached */
	UO_OPEN_CACHED,		/* some of it was cached: someone uses it */
	UO_OPEN_NEW,		/* created or truncated by this open: nothing was cached */
};

/* What one descriptor did to its file, told to the rule when it is closed. */
struct uo_tree_file {
	uint64_t size;		/* the file's size at close */
	uint64_t moved;		/* bytes the descriptor moved in 'dir' */
	uint64_t now_ms;	/* CLOCK_MONOTONIC: one clock for all the user's processes */
	uint64_t key;		/* the file's identity (device, inode, size, mtime), 0: unknown */
	uint8_t dir;		/* enum uo_dir */
	uint8_t whole;		/* moved from 0 to 'size' front to back, in 'dir' only */
	uint8_t opened;		/* enum uo_opened */
	uint8_t streamed;	/* it became a stream: its pages went as it moved */
};

/* One direction's run of whole files. */
struct uo_tree_run {
	uint64_t last_ms;	/* when its last file was closed */
	uint64_t bytes;		/* bytes of its files */
	uint64_t id;		/* hash of its first UO_TREE_ID_FILES files: which tree */
	uint32_t count;		/* its files, up to UO_TREE_FILES */
	uint32_t own;		/* of them, this process's (the rest: its siblings', shared) */
	uint8_t on;		/* it is a tree */
	uint8_t kept;		/* the record says this tree came back: left to the kernel */
};

struct uo_trees {
	struct uo_tree_run run[2];	/* per enum uo_dir */
};

enum uo_tree_verdict {
	UO_TREE_LEAVE = 0,	/* leave the file's pages as they are */
	UO_TREE_DROP,		/* read whole and cold: drop it all now */
	UO_TREE_BEHIND,		/* written: start writeback of the rest now, drop once written */
};

/*
 * The files a run moves before it is known to be a tree (its first
 * UO_TREE_STEPS to UO_TREE_FILES files) would stay cached.  Closed while
 * its run is not a tree yet, a file is remembered as a candidate (EARLY):
 * - written: one the descriptor created or truncated and wrote whole,
 *   a stream too (its tail was in flight at its close, and stayed);
 * - read: one read whole, not a stream, nothing of which was cached when
 *   it was opened (the head probe, uo_opened_by_head_probe): what was
 *   cached before stays.
 * When the run becomes a tree, the candidates of its direction are acted
 * on (ADOPT): written ones join the deferred drop, oldest first, with its
 * checks; read ones are dropped at once, but only those closed within
 * UO_TREE_GAP_MS (uo_tree_early_read_due) and unchanged since (identity,
 * change and access time).  When the run ends without becoming one, they
 * are forgotten undropped (the forget flag, either direction, told before
 * this file's own EARLY).  A run that never becomes a tree has its
 * candidates remembered and nothing more.
 *
 * A read candidate may have been read by another process between our
 * close and its drop, and our own read hides that (the access time moved
 * at our read, relatime moves it no more, and the cache cannot say who
 * read a page): such a reader loses the file to the drop, as one reading
 * a file of the tree while we read it does.  The bound keeps that window
 * to the tree's own pace: the time the run took to move its next few
 * files, at most UO_TREE_GAP_MS (docs/benchmarks.md measures it).
 */
enum uo_tree_early {
	UO_TREE_EARLY_NONE = 0,
	UO_TREE_EARLY_KEEP,	/* remember this file as a candidate */
	UO_TREE_EARLY_ADOPT,	/* the run just became a tree: the candidates join the drop */
};

struct uo_tree_advice {
	uint8_t verdict;	/* enum uo_tree_verdict */
	uint8_t changed;	/* the direction's tree mode just turned on or off */
	uint8_t ask_record;	/* the run's id is complete: did this tree come back? */
	uint8_t early;		/* enum uo_tree_early */
	uint8_t early_forget;	/* the run ended: forget the candidates (before 'early') */
};

/* May a read candidate closed at closed_ms be dropped at now_ms (the run just became a tree)? */
bool uo_tree_early_read_due(uint64_t closed_ms, uint64_t now_ms);
/* A file closed: one more of a tree?  What to do with it. */
struct uo_tree_advice uo_tree_file_closed(struct uo_trees *tr, const struct uo_tuning *t,
					  const struct uo_tree_file *f);
/* The record's answer to ask_record: this tree was streamed within USEONCE_REUSE. */
void uo_tree_came_back(struct uo_trees *tr, unsigned dir);
/* The stream threshold for a new descriptor: a window inside a tree. */
uint64_t uo_tree_threshold(const struct uo_trees *tr, const struct uo_tuning *t, unsigned dir);
/* Is a file opened for 'dir' worth asking whether it is cached (one cachestat)? */
bool uo_tree_wants_open_probe(const struct uo_trees *tr, unsigned dir);

/*
 * Deferred drop (write-behind): a file written whole in a tree has its
 * writeback started at close, and is remembered, oldest first, by path
 * and identity in a small ring; at later closes of the tree's files the
 * ring's oldest are looked at again, through descriptors of the
 * library's own opened after the program's close, and dropped once clean
 * (tree.c, behind.c).  At most UO_BEHIND_FILES wait, and what waits
 * besides the newest stays within a budget of bytes: past either, the
 * oldest is forgotten without a drop (its pages left to the kernel).
 */
#define UO_BEHIND_FILES		128
/* Files looked at again per close (the first still in flight stops the look). */
#define UO_BEHIND_STEP		8

/*
 * The bytes of written files that may wait: a quarter of the memory the
 * process may use ('memory', 0: unknown), from two windows up to 64.
 * Waiting bytes are mostly still being written back, and nothing waits
 * for them: a smaller budget does not make them fewer, it only forgets
 * them, and what is forgotten stays cached.  (An eighth lost the hot set
 * of a 128 MiB cgroup to tar x when the shared disk was slow.)
 */
uint64_t uo_behind_budget(const struct uo_tuning *t, uint64_t memory);
/*
 * n files of 'bytes' in all wait; one more of 'size' is closed: must the
 * oldest be forgotten first?  The newest always joins (n == 0: never).
 */
bool uo_behind_full(unsigned n, uint64_t bytes, uint64_t size, uint64_t budget);
/*
 * A written file of a tree is left to the kernel's cache, neither
 * remembered nor dropped, while free memory less its size is still three
 * quarters of the memory the process may use ('memory': the smaller of RAM
 * and its cgroups' limits; 'free': MemFree, or the limiting cgroup's limit
 * less its usage, the smaller; the file's pages are already out of it, so
 * its size again is a margin).  Such a copy went into memory nobody used
 * and evicted nobody, and a tree unpacked and then read back at once (tar
 * x, then a build or grep -r) is read from memory, as without the library:
 * dropped, grep -r of a 400 MiB tree just unpacked took 3-7x as long.
 * Three quarters, not half: in the 256 MiB cgroup of bench part 7 a third
 * is the hot set, and half left 7-8% of a 400 MiB tree of 128 KiB files
 * cached there (0.0-0.4% now), over the 5% of the copy, for no
 * read back one could measure.  0 for either: unknown, never left.
 */
bool uo_behind_room(uint64_t free, uint64_t memory, uint64_t size);

/*
 * A temporary file: one the process made with mkstemp or its kin, tmpfile
 * or O_TMPFILE.  Such a file is most often read back by the process that
 * wrote it (sort's merge files, a compiler's or a packer's scratch), and
 * soon unlinked: dropped behind the writer, it was read back from disk
 * (sort -S 16M of 105 MB read its 84 MB merge file from disk, where the
 * kernel alone read nothing), and written out at all where the kernel
 * would have discarded it unwritten.  So its writes are left to the
 * kernel, neither flushed nor dropped, while the rule of a tree's written
 * files holds for the file's size (uo_behind_room: a process under no
 * memory limit, three quarters of memory free after it).  Under a limit
 * a temporary file is guarded as any other: a cgroup's hot set is what
 * the library keeps.  Once memory was short, the file is guarded from
 * there on, and what was kept before stays cached (the stream has gone
 * past it); its writeback is started then from the file's start, so that
 * no later drop waits for pages nobody started to write.
 */
enum uo_temp {
	UO_TEMP_NO = 0,		/* not a temporary file: the advice stands */
	UO_TEMP_KEPT,		/* a temporary one, left to the kernel so far */
	UO_TEMP_SHORT,		/* a temporary one, memory was short: guarded from now on */
};
/*
 * The advice for a stream in 'dir' (or its close) on a descriptor in
 * state *temp, whose file is 'size' bytes, 'free' and 'memory' as for
 * uo_behind_room: the advice itself, or none of its flush and drop while
 * the file is kept.  *temp turns UO_TEMP_SHORT when memory is found short.
 * A read stands: what the writer left is cached and spared anyway, and a
 * cold part read is used once like any other.
 */
struct uo_advice uo_temp_advice(struct uo_advice adv, unsigned dir, uint8_t *temp,
				uint64_t free, uint64_t memory, uint64_t size);
/*
 * Was the file read since it was last changed?  relatime (the default)
 * and strictatime move the access time past the change time at a read
 * after a change; tar x, cp -p and rsync set times with utimensat, which
 * sets the change time too (equal times, as a file made and closed in
 * one clock tick has, are no read).  Under noatime it never is.
 */
static inline bool uo_behind_read_since(int64_t atime_ns, int64_t ctime_ns)
{
	return atime_ns > ctime_ns;
}

/*
 * Who a remembered written file is, for its look (behind.c): device, inode
 * and size alone are not enough, as a file removed and another of the
 * same size made in its place (rm F; cp G F.new; mv F.new F, by another
 * program) may be given the same inode number, and, never read, would be
 * dropped as if it were ours.  So also:
 * - its birth time, read at the program's close (0: the filesystem keeps
 *   none): a new inode is born later, whatever its number;
 * - for a file handed to the next process of a parent, its change time
 *   when handed (0: not recorded).  Not at the close: tar x and cp -p set
 *   the times after it (utimensat changes the change time); at the hand-
 *   over the writer is gone.  Anything done to the file since (a rewrite,
 *   chmod, rename, a new inode) changes it.
 * A process's own ring records no change time: between its close and its
 * look only the program itself may set times, and the birth time covers
 * a new inode.
 */
struct uo_behind_id {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	uint64_t btime_ns;	/* 0: not known */
	int64_t ctime_ns;	/* 0: not recorded */
};
/* Is the file found now ('now': its change time always filled) the one remembered ('was')? */
bool uo_behind_same(const struct uo_behind_id *was, const struct uo_behind_id *now);

/*
 * A run shared through the per-user record by the processes of one parent
 * (find -exec cp, xargs -n1, a shell loop): a fixed-size entry with a check
 * word, written whole with one pwrite and read with one pread.  An entry
 * torn by two writers, damaged, from another parent, from the future or
 * too old is not used; what a process takes from it is checked again.
 * Only a short process shares: one that moved more than UO_SIBLING_FILES
 * files itself (tar x, a build step) is a run of its own, and leaves an
 * empty entry, so that the next program its parent starts (a build after
 * tar x) starts afresh.
 */
#define UO_SIBLING_FILES	UO_TREE_STEPS
struct uo_tree_share {
	uint64_t owner;		/* the parent process (and boot), hashed; 0: empty */
	uint64_t last_ms;
	uint64_t bytes;
	uint64_t id;
	uint32_t count;
	uint8_t dir;
	uint8_t kept;
	uint8_t pad[2];		/* zero */
	uint64_t check;
};
void uo_tree_share_put(struct uo_tree_share *out, const struct uo_tree_run *run, unsigned dir,
		       uint64_t owner);
/* Continue a shared run: true if 'in' was sound, recent and ours, and 'run' was behind it. */
bool uo_tree_share_get(struct uo_tree_run *run, const struct uo_tuning *t,
		       const struct uo_tree_share *in, unsigned dir, uint64_t owner, uint64_t now_ms);

/*
 * A written file of a tree a short process leaves behind (find -exec cp:
 * its one file is still being written back at its exit, so its own
 * deferred drop cannot take it), handed to the next process of the same
 * parent through the record, which drops it once written back, with all
 * of behind.c's checks made again there.  An entry is written and read
 * whole and seals itself: a torn, damaged, foreign or stale entry, or a
 * path that is not absolute and NUL-terminated, is refused.  The worst a
 * hostile entry can do is have one of the user's own files, clean, on a
 * local disk, not read since written and not held, dropped from the cache.
 */
#define UO_HANDOFF_FILES	UO_TREE_FILES	/* as many as the candidates of a run */
#define UO_HANDOFF_PATH		200	/* longer paths are not handed: left to the kernel */

enum uo_handoff_flags {
	UO_HANDOFF_EARLY = 1u,	/* written before the run was a tree: a candidate */
	UO_HANDOFF_FAILED = 2u,	/* a process of the run saw a writeback fail: drop nothing */
	/*
	 * Read whole and cold before the run was a tree (a read candidate):
	 * dropped once it is, if still due (uo_tree_early_read_due); its
	 * age_ms says how long before the hand-over it was closed.
	 */
	UO_HANDOFF_READ = 4u,
};

struct uo_handoff_file {
	uint64_t owner;		/* uo_tree_share's */
	uint64_t handed_ms;	/* CLOCK_MONOTONIC at the hand-over */
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	uint32_t flags;		/* enum uo_handoff_flags */
	uint32_t age_ms;	/* UO_HANDOFF_READ's, at most UO_TREE_GAP_MS; else zero */
	uint64_t btime_ns;	/* uo_behind_id's: birth time, 0 if unknown */
	int64_t ctime_ns;	/* ... change time at the hand-over, never 0 for a file */
	char path[UO_HANDOFF_PATH];
	uint64_t check;
};
/*
 * One step of the hash the library's self-checking entries use (record
 * keys, tree runs, handed files, the siblings' parent): not for security,
 * only so that a torn or foreign entry fails its check.
 */
uint64_t uo_mix(uint64_t h, uint64_t v);

/*
 * The processes of one parent share a run (find -exec cp, xargs -n1 cp).
 * A shell run for one command stands between them in xargs -n1 sh -c
 * 'cp "$0" DST/' (dash runs even the one command of -c in a child: one
 * shell per file): then the shell's parent is the one.  'comm' is the
 * parent's name, 'cmdline' its /proc cmdline (NUL-separated, 'len'
 * bytes): a shell given -c and a command without ; & | or a newline.  A
 * shell running a loop or a script is the parent.
 */
bool uo_sib_through_shell(const char *comm, const char *cmdline, size_t len);
/* Is a process of this name a shell (sh, dash, bash...)? */
bool uo_is_shell(const char *comm);

void uo_handoff_seal(struct uo_handoff_file *e);
/* Is 'e' sound, of this owner, and handed within UO_TREE_GAP_MS of now? */
bool uo_handoff_sound(const struct uo_handoff_file *e, uint64_t owner, uint64_t now_ms);

/*
 * A file read whole whose open was not asked (it was opened before the
 * run was a tree: each process of find -exec cp opens its one source
 * before it knows of its siblings): was it cold?  The head probe made
 * before its first big read (guard.c, uo_note_head) answers, if it
 * covered the whole file from its start and saw nothing cached.  Anything
 * else is UO_OPEN_UNKNOWN, and the file is left alone.
 */
enum uo_opened uo_opened_by_head_probe(const struct uo_stream *st, uint64_t size);

#endif /* UO_POLICY_H */
