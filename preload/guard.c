/*
 * From a hook's observation to advice applied: finds the descriptor's slot,
 * runs the policy, answers its questions (where is the cursor? is this file
 * worth guarding? was it streamed just before?) and hands the advice to
 * advise.c.
 *
 * Everything here runs inside the program's I/O calls: no malloc, no locks
 * that wait, no stdio.  The only system calls are the policy's questions,
 * asked once per window of bytes, never per call.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "advise.h"
#include "behind.h"
#include "classify.h"
#include "config.h"
#include "fdtab.h"
#include "guard.h"
#include "policy.h"
#include "record.h"
#include "stats.h"
#include "sys.h"
#include "trace.h"
#include "tree.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

/* Statistics: the bytes a stream moved since they were last counted. */
static void uo_count_stream(struct uo_slot *s, uint64_t pending)
{
	uint64_t moved;

	if (!uo_stats || s->st.state != UO_STREAM)
		return;
	moved = (s->st.next > s->counted_to ? s->st.next - s->counted_to : 0) + pending;
	UO_STAT_ADD(bytes[s->st.dir], moved);
	s->counted_to = s->st.next;
}

/* What streams still open have moved, counted once, just before the line is printed. */
static void uo_count_open_streams(void)
{
	static atomic_flag counted = ATOMIC_FLAG_INIT;
	unsigned c, i;

	if (atomic_flag_test_and_set(&counted))
		return;
	for (c = 0; c < UO_FDTAB_MAX / UO_FDTAB_CHUNK; c++) {
		struct uo_slot *chunk = atomic_load_explicit(&uo_fdtab_chunks[c],
							     memory_order_acquire);

		for (i = 0; chunk && i < UO_FDTAB_CHUNK; i++) {
			struct uo_slot *s = &chunk[i];

			if (s->st.state == UO_STREAM && uo_slot_lock(s)) {
				uo_count_stream(s, atomic_load_explicit(&s->counted[s->st.dir],
									memory_order_relaxed));
				uo_slot_unlock(s);
			}
		}
	}
}

static void uo_print_stats(void)
{
	/* A vfork child (exit() instead of _exit()) would mark our streams counted. */
	if (!uo_stats || uo_fdtab_borrowed())
		return;
	uo_count_open_streams();
	uo_stats_print(uo_program_name(), uo_config.dryrun, &uo_config.stats);
}

/*
 * The statistics line is written by a destructor (.fini_array, run by the
 * loader at exit() and at the return from main, also in a library linked
 * without the C start files), or just before the program closes the
 * descriptor it goes to: coreutils close stderr in an atexit handler.
 */
__attribute__((destructor)) static void uo_guard_exit(void)
{
	/* Written files of a tree already clean go now (behind.c); nothing is waited for. */
	uo_behind_exit();
	/* What is still in flight, and the run, for the parent's next process (find -exec cp). */
	uo_tree_exit();
	uo_print_stats();
}

static void uo_trace_probe(int fd, struct uo_range r, uint64_t cached, uint64_t unborn)
{
	struct uo_line l;

	if (!uo_tracing())
		return;
	uo_line_start(&l, fd);
	uo_line_str(&l, "probed ");
	uo_line_range(&l, r);
	uo_line_str(&l, ": ");
	uo_line_num(&l, (uint64_t)__builtin_popcountll(cached));
	uo_line_str(&l, " of ");
	uo_line_num(&l, (r.end - r.start) / uo_config.tuning.align);
	uo_line_str(&l, " folios were cached");
	if (unborn) {
		uo_line_str(&l, ", ");
		uo_line_num(&l, (uint64_t)__builtin_popcountll(unborn));
		uo_line_str(&l, " past the end (kept)");
	}
	uo_line_trace(&l);
}

static void uo_trace_stream(int fd, const struct uo_stream *st)
{
	struct uo_line l;

	if (!uo_tracing())
		return;
	uo_line_start(&l, fd);
	uo_line_str(&l, st->dir == UO_READ ? "read stream from " : "write stream from ");
	uo_line_num(&l, st->run_start);
	uo_line_str(&l, ", now at ");
	uo_line_num(&l, st->next);
	uo_line_trace(&l);
}

/* Is the descriptor's file one to guard?  If not, it is ignored from now on. */
static bool uo_guard_checked(int fd, struct uo_slot *s)
{
	const char *why = uo_classify(fd, &s->file);

	if (!why)
		why = uo_path_rule(fd);
	if (why) {
		uo_ignore(&s->st);
		uo_trace(fd, "ignored", why);
		return false;
	}
	return true;
}

/* A descriptor just became a stream: false if it is not to be guarded. */
static bool uo_guard_promoted(int fd, struct uo_slot *s)
{
	if (!uo_guard_checked(fd, s))
		return false;
	if (s->st.dir == UO_READ && uo_record_streamed_again(&s->file) &&
	    uo_fits_in_memory(s->file.size)) {
		uo_ignore(&s->st);
		uo_trace(fd, "left to the kernel's cache", "streamed again within USEONCE_REUSE");
		return false;
	}
	uo_trace_stream(fd, &s->st);
	UO_STAT_ADD(streams[s->st.dir], 1);
	UO_STAT_ADD(bytes[s->st.dir], s->st.next - s->st.run_start);
	s->counted_to = s->st.next;
	s->drops_counted = 0;
	return true;
}

/* The descriptor's tuning: its tree's, with its window beside other writers (uo_write_step). */
static const struct uo_tuning *uo_slot_tuning(const struct uo_slot *s, struct uo_tuning *buf)
{
	const struct uo_tuning *t = uo_tree_tuning(s, buf);

	/* (A step is only ever set for a writer at its file's end: uo_guard_early.) */
	if (!s->step || s->step >= t->window || (s->st.state != UO_NEW && s->st.dir != UO_WRITE))
		return t;
	if (t != buf)
		*buf = *t;
	buf->window = s->step;
	return buf;
}

static void uo_trace_step(int fd, bool folio, uint64_t others)
{
	struct uo_line l;

	if (!uo_tracing())
		return;
	uo_line_start(&l, fd);
	uo_line_str(&l, folio ? "looks every folio: " : "looks every window: ");
	uo_line_bytes(&l, others);
	uo_line_str(&l, " in flight in its memory domain besides its own");
	uo_line_trace(&l);
}

/*
 * A writer's window for its next looks: a folio while other writers of
 * its memory domain have data in flight, its window otherwise.  The hooks
 * look when that many bytes have passed.
 */
static void uo_guard_step(int fd, struct uo_slot *s)
{
	uint64_t window = uo_config.tuning.window, others, step;

	if (!s->appends)
		return;
	step = uo_write_step(fd, &others);
	if (step == (s->step ? s->step : window))
		return;
	s->step = step < window ? step : 0;
	atomic_store_explicit(&s->look, step > UO_FIRST_LOOK ? step - UO_FIRST_LOOK : 1,
			      memory_order_relaxed);
	uo_trace_step(fd, step < window, others);
}

/* The policy asked which folios ahead were cached: answer it. */
static void uo_guard_probe(int fd, struct uo_slot *s, struct uo_range r)
{
	struct uo_event ev = {
		.end = r.end, .len = r.end - r.start, .dir = s->st.dir,
	};
	struct uo_tuning buf;

	/* A reader's size, if known since it became a stream (uo_guard_checked). */
	ev.flags = (uint8_t)uo_probe(fd, r, uo_config.tuning.align,
				     s->st.dir == UO_WRITE ? UO_PROBE_WRITER : s->file.size,
				     &ev.cached, &ev.unborn, &ev.unborn_from);
	uo_observe(&s->st, uo_slot_tuning(s, &buf), &ev);
	if (ev.flags & (UO_EV_BLIND | UO_EV_NOPROBE))
		UO_STAT_ADD(fallbacks, 1);
	if (ev.flags == UO_EV_BLIND)
		uo_trace(fd, "reads spared", "what was cached before cannot be seen (not our file)");
	else if (ev.flags == UO_EV_PROBED)
		uo_trace_probe(fd, r, ev.cached, ev.unborn);
}

/*
 * A descriptor that is not a regular file (/dev/null, a tty, a pipe, a
 * block device) will never be guarded: learn it with one fstat and its
 * hooks pass it by from then on.  False if it is not one to guard.
 */
static bool uo_guard_kind(int fd, struct uo_slot *s)
{
	struct uo_file f;

	if (s->kind_known || s->st.state == UO_STREAM)
		return true;
	s->kind_known = 1;
	if (uo_fstat(fd, &f) == 0 && !S_ISREG(f.mode)) {
		uo_ignore(&s->st);
		uo_trace(fd, "ignored", "not a regular file");
		return false;
	}
	return true;
}

/*
 * The descriptor's first look, UO_FIRST_LOOK bytes in: from now on the
 * hooks look again when a window of bytes has passed.  Descriptors 0, 1
 * and 2 are most often a terminal, a pipe or /dev/null: their kind is
 * learned now, so that a program writing to /dev/null or a pipe pays next
 * to nothing from then on.  Others learn it at their first window: a
 * system call for each file of 64 KiB or more would cost programs that
 * read many such files.  (At the first call, it cost each builtin a shell
 * redirects, a dup2 and a write of a few bytes, a statx.)
 */
static void uo_guard_first(int fd, struct uo_slot *s, unsigned dir)
{
	uint64_t window = uo_config.tuning.window, align = uo_config.tuning.align;

	/* Data moved: not a vfork child (fdtab.c). */
	uo_fdtab_claim();
	if (fd <= 2)
		uo_guard_kind(fd, s);
	/*
	 * A writer looks again a folio in, once, to learn whether other
	 * writers of its memory domain have data in flight (uo_guard_step):
	 * eight dd's started together otherwise wrote a window each before
	 * any had seen the others, 64 MiB dirty at once in a 256 MiB cgroup.
	 */
	if (dir == UO_WRITE && align > UO_FIRST_LOOK && align < window) {
		s->early_look = 1;
		window = align;
	}
	atomic_store_explicit(&s->look, window > UO_FIRST_LOOK ? window - UO_FIRST_LOOK : 1,
			      memory_order_relaxed);
}

/*
 * A write to a temporary file (policy.h, uo_temp_advice): its advice,
 * unless the file is still left to the kernel.  A sysinfo a window, for
 * such files only, while memory is mostly free.  False if nothing is left
 * to do.
 */
static bool uo_guard_temp(int fd, struct uo_slot *s, struct uo_advice *adv, unsigned dir,
			  uint64_t size)
{
	uint8_t was = s->temp;

	if (was != UO_TEMP_KEPT || dir != UO_WRITE)
		return true;
	/*
	 * Closed behind the hooks' back and the number opened again: not ours
	 * to keep.  The birth time tells a new file given the unlinked one's
	 * inode number (ext4 does that at once).
	 */
	if (s->file.ino != s->temp_ino || s->file.btime_ns != s->temp_btime_ns) {
		s->temp = UO_TEMP_NO;
		return true;
	}
	*adv = uo_temp_advice(*adv, dir, &s->temp, uo_memory_free(), uo_memory_size(), size);
	if (s->temp != was) {
		uo_trace(fd, "temporary file guarded from here on", "memory is not mostly free");
		return true;
	}
	if (!s->temp_said) {
		s->temp_said = 1;
		uo_trace(fd, "temporary file left to the kernel's cache", "memory is mostly free");
	}
	return !uo_range_empty(adv->flush) || !uo_range_empty(adv->drop);
}

/* The policy's questions answered and its advice applied, with the slot held. */
static void uo_guard_locked(int fd, struct uo_slot *s, unsigned dir, uint64_t at, uint64_t len)
{
	struct uo_event ev = {
		.end = at == UO_UNKNOWN ? UO_UNKNOWN : at + len, .len = len, .dir = (uint8_t)dir,
	};
	struct uo_tuning buf;
	const struct uo_tuning *t = uo_slot_tuning(s, &buf);
	struct uo_advice adv;
	uint64_t size;

	if (!uo_guard_kind(fd, s))
		return;
	uo_count_stream(s, 0);
	adv = uo_observe(&s->st, t, &ev);
	if (adv.flags & UO_ADV_ASK_POSITION) {
		int64_t pos = uo_cursor(fd);

		if (pos < 0) {
			uo_ignore(&s->st);
			uo_trace(fd, "ignored", "no file position (pipe, socket...)");
			return;
		}
		ev.end = (uint64_t)pos;
		ev.len = 0;
		ev.flags = UO_EV_CURSOR;
		adv = uo_observe(&s->st, t, &ev);
	}
	if (adv.flags & UO_ADV_PROMOTED) {
		if (!uo_guard_promoted(fd, s))
			return;
		size = s->file.size;
	} else if (uo_range_empty(adv.drop) && uo_range_empty(adv.flush)) {
		goto probe;
	} else if (s->st.state == UO_TRACKING && !s->file.ino) {
		/* Writeback started before the stream is known (a file written from its start). */
		if (!uo_guard_checked(fd, s))
			return;
		size = s->file.size;
	} else if (!uo_same_file(fd, &s->file, &size)) {
		uo_slot_clear(s);
		uo_trace(fd, "forgotten", "descriptor now names another file");
		return;
	}
	if (UO_UNLIKELY(s->temp) && !uo_guard_temp(fd, s, &adv, s->st.dir, size))
		goto probe;
	/* Pages whose writeback failed are the only good copy: this stream drops no more. */
	if (uo_apply(fd, &adv, size, &s->drops_counted, &s->unclean, false) & UO_APPLY_WB_FAILED)
		s->st.blind = 1;
	if (s->st.dir == UO_WRITE && !uo_range_empty(adv.flush))
		uo_guard_step(fd, s);
probe:
	if (!uo_range_empty(adv.probe))
		uo_guard_probe(fd, s, adv.probe);
}

/*
 * A writer's look a folio in (uo_guard_first): its memory domain, and
 * whether other writers of it have data in flight.  The policy is not
 * asked (the bytes stay counted for its look): alone, a writer's look
 * comes at its window as it would have.
 */
static void uo_guard_early(int fd, struct uo_slot *s)
{
	uint64_t window = uo_config.tuning.window, others;
	struct uo_file f;
	int64_t pos;

	s->early_look = 0;
	if (!uo_guard_kind(fd, s))
		return;
	/*
	 * Only a writer at the file's end (one that wrote a new or truncated
	 * file from its start) steps a folio at a time: the window also sets how far ahead
	 * a writer's probes look for pages cached before, and an overwrite
	 * whose window shrank and grew again beside other writers left
	 * folios never probed, dropped as if cold (the review: 10-20 MiB of a
	 * cached 64 MiB file, 54 MiB of 128 with 8 MiB writes).  Past the
	 * end of a file nothing was cached.  The cursor, not the bytes
	 * counted: the look comes after a call that may have moved 8 MiB or
	 * more, and a cached 10 MiB file overwritten with 8 MiB records
	 * passed "size <= written + a folio" and was dropped whole (review).
	 * No more written than counted: the writer started at the front.
	 */
	pos = uo_cursor(fd);
	s->appends = pos >= 0 && uo_fstat(fd, &f) == 0 && f.size <= (uint64_t)pos &&
		     (uint64_t)pos <= atomic_load_explicit(&s->counted[UO_WRITE],
							   memory_order_relaxed);
	if (s->appends) {
		(void)uo_memory_size();
		s->step = uo_write_step(fd, &others);
	}
	if (s->step >= window)
		s->step = 0;
	else if (s->step)
		uo_trace_step(fd, true, others);
	window = s->step ? s->step : window;
	atomic_store_explicit(&s->look, window > UO_FIRST_LOOK ? window - UO_FIRST_LOOK : 1,
			      memory_order_relaxed);
}

/* Blind read streams are read uncached, unless the kernel refused it for this one. */
static void uo_update_uncached(int fd, struct uo_slot *s)
{
	bool want = s->st.state == UO_STREAM && s->st.dir == UO_READ && s->st.blind &&
		    !uo_config.dryrun;
	uint32_t now = atomic_load_explicit(&s->uncached, memory_order_relaxed);

	if (now != UO_UNCACHED_REFUSED && now != (want ? UO_UNCACHED_ON : UO_UNCACHED_OFF)) {
		atomic_store_explicit(&s->uncached, want ? UO_UNCACHED_ON : UO_UNCACHED_OFF,
				      memory_order_relaxed);
		if (want)
			uo_trace(fd, "reading uncached (RWF_DONTCACHE)", NULL);
	}
}

/*
 * A window of bytes has moved (or the bytes came at a known offset): run
 * the policy.  'len' is what the caller did not already add to the slot's
 * count.
 */
void uo_note_slow(int fd, unsigned dir, uint64_t at, uint64_t len)
{
	int saved = errno;
	struct uo_slot *s;
	uint64_t n;

	if (uo_config.disabled) {
		/* Nothing to do, ever: the hooks pass it by. */
		uo_fd_set_quiet(fd);
		return;
	}
	s = uo_slot_get(fd);
	if (!s)
		goto out;
	if (at == UO_UNKNOWN) {
		n = len ? atomic_fetch_add_explicit(&s->counted[dir], len, memory_order_relaxed) + len :
			  atomic_load_explicit(&s->counted[dir], memory_order_relaxed);
		if (UO_UNLIKELY(!atomic_load_explicit(&s->look, memory_order_relaxed)) &&
		    n >= UO_FIRST_LOOK) {
			if (!uo_slot_lock(s))
				goto out;
			if (!atomic_load_explicit(&s->look, memory_order_relaxed))
				uo_guard_first(fd, s, dir);
			if (s->st.state == UO_IGNORED)
				uo_fd_set_quiet(fd);
			uo_slot_unlock(s);
		}
		/* A window of bytes, or a writer's smaller one (uo_guard_step). */
		if (n < uo_config.tuning.window &&
		    n < atomic_load_explicit(&s->look, memory_order_relaxed) + UO_FIRST_LOOK)
			goto out;
		if (!uo_slot_lock(s))
			goto out;
		if (UO_UNLIKELY(s->early_look) && dir == UO_WRITE) {
			uo_guard_early(fd, s);
			if (s->st.state == UO_IGNORED)
				uo_fd_set_quiet(fd);
			uo_slot_unlock(s);
			goto out;
		}
		len = atomic_exchange_explicit(&s->counted[dir], 0, memory_order_relaxed);
	} else if (!uo_slot_lock(s)) {
		goto out;
	}
	uo_guard_locked(fd, s, dir, at, len);
	uo_update_uncached(fd, s);
	if (s->st.state == UO_IGNORED)
		uo_fd_set_quiet(fd);
	uo_slot_unlock(s);
out:
	errno = saved;
}

int64_t uo_note_slow_ret(int fd, unsigned dir, uint64_t at, uint64_t len, int64_t r)
{
	uo_note_slow(fd, dir, at, len);
	return r;
}

/*
 * The first probe of a stream lies a window and a lookahead ahead of the
 * cursor, beyond readahead, and what comes before it used to be judged by
 * it: an 8 MiB hot head of a file was dropped whole.  Probed here, before
 * the descriptor's first big read, the head is seen as it was before the
 * stream: two system calls per descriptor (lseek for a read at the
 * cursor, cachestat), none for small reads.  Only from the start of the
 * file, where a freshly opened descriptor reads: further on, the
 * description may have read before (inherited, or a slot forgotten), and
 * its own pages would look cached.
 */
void uo_note_head(int fd, int64_t off)
{
	const struct uo_tuning *t = &uo_config.tuning;
	int saved = errno;
	struct uo_range r;
	struct uo_slot *s;

	if (uo_config.disabled || !(t->guard & UO_GUARD_READ) || (off != 0 && off != -1))
		return;
	s = uo_slot_get(fd);
	if (!s || !uo_slot_lock(s))
		goto out;
	if (atomic_load_explicit(&s->head_probed, memory_order_relaxed) ||
	    s->st.state != UO_NEW || s->st.probed)
		goto unlock;
	atomic_store_explicit(&s->head_probed, 1, memory_order_relaxed);
	if (off == -1 && uo_cursor(fd) != 0)
		goto unlock;
	r.start = 0;
	r.end = t->window + uo_lookahead(t, UO_READ);
	if (t->align)
		r.end += (t->align - r.end % t->align) % t->align;
	if (r.end > UO_MEMORY_FOLIOS * t->align)
		r.end = UO_MEMORY_FOLIOS * t->align;
	uo_guard_probe(fd, s, r);
unlock:
	uo_slot_unlock(s);
out:
	errno = saved;
}

unsigned uo_tree_streaming(void)
{
	return atomic_load_explicit(&uo_tree_on, memory_order_relaxed);
}

void uo_note_opened(int fd, unsigned dir, bool fresh)
{
	struct uo_slot *s;
	int saved = errno;

	if (uo_config.disabled || uo_fdtab_borrowed()) {
		errno = saved;
		return;
	}
	s = uo_slot_get(fd);
	if (s && uo_slot_lock(s)) {
		uo_tree_opened(fd, s, dir, fresh);
		uo_slot_unlock(s);
	}
	errno = saved;
}

/*
 * The program made fd as a temporary file (mkstemp and its kin, tmpfile,
 * O_TMPFILE): its writes may be left to the kernel (uo_guard_temp).
 */
void uo_note_temp(int fd)
{
	struct uo_file f;
	struct uo_slot *s;
	int saved = errno;

	if (uo_config.disabled || uo_fdtab_borrowed()) {
		errno = saved;
		return;
	}
	/*
	 * An fstat a temporary file: the file is told from one that takes its number
	 * later.  Without a birth time (ext2, small ext4 inodes) the next file often gets
	 * the same inode number too, and would inherit the mark: such a file is not marked.
	 */
	if (uo_fstat(fd, &f) != 0 || !S_ISREG(f.mode) || !f.btime_ns)
		goto out;
	s = uo_slot_get(fd);
	if (s && uo_slot_lock(s)) {
		s->temp = UO_TEMP_KEPT;
		s->temp_said = 0;
		s->temp_ino = f.ino;
		s->temp_btime_ns = f.btime_ns;
		uo_slot_unlock(s);
	}
out:
	errno = saved;
}

void uo_note_closing(int fd)
{
	struct uo_slot *s = uo_slot_peek(fd);
	struct uo_advice adv;
	uint64_t size;

	if (!s && (fd < 0 || fd != uo_config.stats.fd))
		return;
	/*
	 * A vfork child's close ends its copy of the descriptor: ours, and
	 * the stream on it, go on.
	 */
	if (uo_fdtab_borrowed())
		return;
	if (UO_UNLIKELY(fd >= 0 && fd == uo_config.stats.fd))
		uo_print_stats();
	if (!s)
		return;
	uo_fd_unquiet(fd);
	if (!uo_slot_lock(s)) {
		uo_slot_forget(s);
		return;
	}
	if (uo_config.disabled) {
		/* nothing */
	} else if (s->st.state == UO_STREAM && uo_same_file(fd, &s->file, &size)) {
		bool wrote = s->st.dir == UO_WRITE;
		struct uo_file f;

		/* A file of a tree too, told before its closing advice forgets the stream. */
		uo_tree_closing(fd, s, true);
		uo_count_stream(s, atomic_load_explicit(&s->counted[s->st.dir],
							memory_order_relaxed));
		adv = uo_closing(&s->st, &uo_config.tuning);
		if (!s->temp || uo_guard_temp(fd, s, &adv, wrote ? UO_WRITE : UO_READ, size))
			uo_apply(fd, &adv, size, &s->drops_counted, &s->unclean, true);
		/*
		 * A file written is often read back soon (a build's output, a
		 * download checked): noted as a stream, once its size and time
		 * are final, so that reading it again keeps it.
		 */
		if (wrote && uo_fstat(fd, &f) == 0)
			uo_record_streamed_again(&f);
	} else if (s->st.state != UO_STREAM) {
		/* (A stream whose descriptor now names another file tells nothing of it.) */
		uo_tree_closing(fd, s, false);
	}
	uo_slot_clear(s);
	uo_slot_unlock(s);
}

void uo_note_forget(int fd)
{
	struct uo_slot *s = uo_slot_peek(fd);

	/* In a vfork child, fd is replaced in its own table only. */
	if (!s || uo_fdtab_borrowed())
		return;
	uo_fd_unquiet(fd);
	uo_slot_forget(s);
}
