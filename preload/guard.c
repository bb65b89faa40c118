/*
 * From a hook's observation to advice applied: finds the descriptor's slot,
 * runs the policy, answers its questions (where is the cursor? is this file
 * worth guarding?) and hands the advice to advise.c.
 *
 * Everything here runs inside the program's I/O calls: no malloc, no locks
 * that wait, no stdio.  The only system calls are the policy's questions,
 * asked once per window of bytes, never per call.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "uo_internal.h"

int uo_stdio_fd(FILE *fp)
{
	int saved = errno, fd;

	if (!fp)
		return -1;
	/* fileno() takes no lock, but sets errno for streams without a descriptor. */
	fd = fileno(fp);
	if (fd < 0)
		errno = saved;
	return fd;
}

/* Filesystems whose pages are the only copy, or that have no page cache to speak of. */
static bool uo_memory_fs(unsigned long type)
{
	switch (type) {
	case TMPFS_MAGIC:
	case RAMFS_MAGIC:
	case HUGETLBFS_MAGIC:
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
	case BPF_FS_MAGIC:
	case DEVPTS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

/* NULL if the descriptor is worth guarding, else why not. */
static const char *uo_classify(int fd, struct uo_slot *s)
{
	struct uo_file st;
	struct statfs sfs;
	int fl;

	if (uo_fstat(fd, &st) != 0)
		return "statx failed";
	if (!S_ISREG(st.mode))
		return "not a regular file";
	if (fstatfs(fd, &sfs) == 0 && uo_memory_fs((unsigned long)sfs.f_type))
		return "memory filesystem: its pages are the only copy";
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_DIRECT))
		return "O_DIRECT bypasses the page cache";
	s->file = st;
	return NULL;
}

/* A descriptor closed behind our back (raw syscall) and reused names another file. */
static bool uo_same_file(int fd, const struct uo_slot *s, uint64_t *size)
{
	struct uo_file st;

	if (uo_fstat(fd, &st) != 0 || st.dev != s->file.dev || st.ino != s->file.ino)
		return false;
	*size = st.size;
	return true;
}

/*
 * The config files' never/always rules for the file the descriptor names:
 * asked once per stream (or file of a tree), only when there are rules.
 * NULL if the file is to be guarded, else why not.
 */
static const char *uo_path_rule(int fd)
{
	char link[32], path[1024];
	static const char prefix[] = "/proc/self/fd/";
	enum uo_rule_kind kind;
	char digits[12];
	size_t n = 0, i;
	long len;

	if (!uo_rules.n)
		return NULL;
	for (i = 0; prefix[i]; i++)
		link[n++] = prefix[i];
	i = 0;
	do {
		digits[i++] = (char)('0' + fd % 10);
		fd /= 10;
	} while (fd);
	while (i)
		link[n++] = digits[--i];
	link[n] = '\0';
	/* A path longer than the buffer is cut, but rules are shorter than it. */
	len = syscall(SYS_readlinkat, AT_FDCWD, link, path, sizeof(path) - 1);
	path[len > 0 ? len : 0] = '\0';
	kind = uo_rules_match(&uo_rules, path);
	if (kind == UO_RULE_NEVER)
		return "under a never rule of the config";
	if (kind == UO_RULE_NONE && uo_config.only_always)
		return "not under an always rule, and the config says enable = no";
	return NULL;
}

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

void uo_stats_open_streams(void)
{
	unsigned c, i;

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

static void uo_trace_decision(int fd, const char *what, const char *detail)
{
	struct uo_line l;

	if (!uo_tracing())
		return;
	uo_line_start(&l, fd);
	uo_line_str(&l, what);
	if (detail) {
		uo_line_str(&l, ": ");
		uo_line_str(&l, detail);
	}
	uo_line_trace(&l);
}

static void uo_trace_probe(int fd, struct uo_range r, uint64_t cached)
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

/* The policy's questions answered and its advice applied, with the slot held. */
static void uo_guard_locked(int fd, struct uo_slot *s, unsigned dir, uint64_t at, uint64_t len)
{
	struct uo_event ev;
	struct uo_advice adv;
	const char *why;
	uint64_t size;

	ev.dir = (uint8_t)dir;
	ev.len = len;
	ev.flags = 0;
	ev.cached = 0;
	ev.end = at == UO_UNKNOWN ? UO_UNKNOWN : at + len;
	uo_count_stream(s, 0);
	adv = uo_observe(&s->st, &uo_config.tuning, &ev);
	if (adv.flags & UO_ADV_ASK_POSITION) {
		off_t pos = lseek(fd, 0, SEEK_CUR);

		if (pos < 0) {
			uo_ignore(&s->st);
			uo_trace_decision(fd, "ignored", "no file position (pipe, socket...)");
			return;
		}
		ev.end = (uint64_t)pos;
		ev.len = 0;
		ev.flags = UO_EV_CURSOR;
		adv = uo_observe(&s->st, &uo_config.tuning, &ev);
	}
	if (adv.flags & UO_ADV_PROMOTED) {
		why = uo_classify(fd, s);
		if (!why)
			why = uo_path_rule(fd);
		if (why) {
			uo_ignore(&s->st);
			uo_trace_decision(fd, "ignored", why);
			return;
		}
		if (s->st.dir == UO_READ && uo_record_streamed_again(&s->file)) {
			uo_ignore(&s->st);
			uo_trace_decision(fd, "left to the kernel's cache",
					  "streamed again within USEONCE_REUSE");
			return;
		}
		uo_trace_stream(fd, &s->st);
		UO_STAT_ADD(streams[s->st.dir], 1);
		UO_STAT_ADD(bytes[s->st.dir], s->st.next - s->st.run_start);
		s->counted_to = s->st.next;
		s->drops_counted = 0;
		size = s->file.size;
	} else if (uo_range_empty(adv.drop) && uo_range_empty(adv.flush)) {
		goto probe;
	} else if (!uo_same_file(fd, s, &size)) {
		uo_slot_clear(s);
		uo_trace_decision(fd, "forgotten", "descriptor now names another file");
		return;
	}
	uo_apply(fd, &adv, size, &s->drops_counted);
probe:
	if (!uo_range_empty(adv.probe)) {
		ev.end = adv.probe.end;
		ev.len = adv.probe.end - adv.probe.start;
		ev.flags = (uint8_t)uo_probe(fd, adv.probe, uo_config.tuning.align, &ev.cached);
		uo_observe(&s->st, &uo_config.tuning, &ev);
		if (ev.flags & (UO_EV_BLIND | UO_EV_NOPROBE))
			UO_STAT_ADD(fallbacks, 1);
		if (ev.flags == UO_EV_BLIND)
			uo_trace_decision(fd, "reads spared",
					  "what was cached before cannot be seen (not our file)");
		else if (ev.flags == UO_EV_PROBED)
			uo_trace_probe(fd, adv.probe, ev.cached);
	}
}

/*
 * A window of bytes has moved (or the bytes came at a known offset): run
 * the policy.  'len' is what the caller did not already add to the slot's
 * count.
 */
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
			uo_trace_decision(fd, "reading uncached (RWF_DONTCACHE)", NULL);
	}
}

void uo_note_slow(int fd, unsigned dir, uint64_t at, uint64_t len)
{
	int saved = errno;
	struct uo_slot *s;

	if (uo_config.disabled)
		return;
	s = uo_slot_get(fd);
	if (!s)
		return;
	if (at == UO_UNKNOWN) {
		if (len && atomic_fetch_add_explicit(&s->counted[dir], len, memory_order_relaxed) + len <
			   uo_config.tuning.window)
			return;
		if (!uo_slot_lock(s))
			return;
		len = atomic_exchange_explicit(&s->counted[dir], 0, memory_order_relaxed);
	} else if (!uo_slot_lock(s)) {
		return;
	}
	uo_guard_locked(fd, s, dir, at, len);
	uo_update_uncached(fd, s);
	uo_slot_unlock(s);
	errno = saved;
}

static struct uo_tree uo_tree;
/*
 * Who is updating uo_tree: 0 or a process id.  A pid, not a flag: a process
 * forked while one of its parent's threads held it finds the parent's pid
 * there, which no thread of its own will ever clear, and takes it over.
 */
static _Atomic int32_t uo_tree_owner;
_Atomic bool uo_tree_on;

static bool uo_tree_lock(void)
{
	int32_t self = (int32_t)syscall(SYS_getpid), seen = 0;

	if (atomic_compare_exchange_strong_explicit(&uo_tree_owner, &seen, self,
						    memory_order_acquire, memory_order_relaxed))
		return true;
	/* Busy in this process (another thread, or the code a signal interrupted). */
	if (seen == self)
		return false;
	return atomic_compare_exchange_strong_explicit(&uo_tree_owner, &seen, self,
						       memory_order_acquire, memory_order_relaxed);
}

/*
 * In tree mode, a file opened for reading is asked whether any of it is
 * cached: then someone uses it, and it is left alone when closed.  The
 * descriptor is new, whatever its slot remembers.
 */
void uo_note_opened(int fd)
{
	struct uo_slot *s;
	int saved = errno;
	int64_t pages;

	if (uo_config.disabled)
		return;
	s = uo_slot_get(fd);
	if (!s || !uo_slot_lock(s))
		goto out;
	uo_slot_clear(s);
	pages = uo_cached_pages(fd);
	s->opened = pages == 0 ? UO_OPENED_COLD : pages > 0 ? UO_OPENED_CACHED : UO_OPENED_UNKNOWN;
	uo_slot_unlock(s);
out:
	errno = saved;
}

/*
 * Closing a descriptor that read a small file whole, front to back, and
 * nothing else: one more file of a tree being streamed?  In tree mode, drop
 * it if it was cold when opened.  Costs two system calls, only for files of
 * 64 KiB or more read at the cursor.
 */
static void uo_tree_closing(int fd, struct uo_slot *s)
{
	uint64_t reads = atomic_load_explicit(&s->counted[UO_READ], memory_order_relaxed);
	struct uo_file f;
	struct timespec ts;
	struct uo_range all = { 0, UO_EOF };
	const char *why;
	bool on;
	int err;

	if (!(uo_config.tuning.guard & UO_GUARD_READ) || s->st.state != UO_NEW ||
	    reads < UO_TREE_MIN || reads >= uo_config.tuning.window ||
	    atomic_load_explicit(&s->counted[UO_WRITE], memory_order_relaxed))
		return;
	if (uo_fstat(fd, &f) != 0 || !S_ISREG(f.mode) || f.size != reads ||
	    lseek(fd, 0, SEEK_CUR) != (off_t)f.size ||
	    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
		return;
	if (!uo_tree_lock())
		return;
	on = uo_tree_closed(&uo_tree, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
	atomic_store_explicit(&uo_tree_owner, 0, memory_order_release);
	if (on != atomic_load_explicit(&uo_tree_on, memory_order_relaxed)) {
		atomic_store_explicit(&uo_tree_on, on, memory_order_relaxed);
		uo_trace_decision(fd, on ? "tree mode: many files read whole, one after the other"
				     : "tree mode over", NULL);
	}
	if (!on || s->opened != UO_OPENED_COLD)
		return;
	why = uo_path_rule(fd);
	if (why) {
		uo_trace_decision(fd, "tree file left alone", why);
		return;
	}
	err = uo_config.dryrun ? 0 : posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (err)
		UO_STAT_ADD(advice_errors, 1);
	else {
		UO_STAT_ADD(tree_files, 1);
		UO_STAT_ADD(dropped, f.size);
	}
	if (uo_tracing()) {
		struct uo_line l;

		uo_line_start(&l, fd);
		uo_line_str(&l, uo_config.dryrun ? "dry run: would drop " : "drop ");
		uo_line_range(&l, all);
		uo_line_str(&l, err ? ": failed" : ": a file of the tree, cold when opened");
		uo_line_trace(&l);
	}
}

void uo_note_closing(int fd)
{
	struct uo_slot *s = uo_slot_peek(fd);
	struct uo_advice adv;
	uint64_t size;

	if (UO_UNLIKELY(fd == uo_config.stats_fd) && uo_stats)
		uo_stats_print();
	if (!s)
		return;
	if (!uo_slot_lock(s)) {
		uo_slot_forget(s);
		return;
	}
	if (uo_config.disabled) {
		/* nothing */
	} else if (s->st.state == UO_STREAM && uo_same_file(fd, s, &size)) {
		uo_count_stream(s, atomic_load_explicit(&s->counted[s->st.dir],
							memory_order_relaxed));
		adv = uo_closing(&s->st, &uo_config.tuning);
		uo_apply(fd, &adv, size, &s->drops_counted);
	} else {
		uo_tree_closing(fd, s);
	}
	uo_slot_clear(s);
	uo_slot_unlock(s);
}

void uo_note_forget(int fd)
{
	struct uo_slot *s = uo_slot_peek(fd);

	if (s)
		uo_slot_forget(s);
}

/* Would len bytes from 'at' (UO_UNKNOWN: the cursor) end past max_end? */
static bool uo_copy_end_overflows(int fd, uint64_t at, uint64_t len, uint64_t max_end)
{
	if (at == UO_UNKNOWN) {
		off_t pos = lseek(fd, 0, SEEK_CUR);

		if (pos < 0)
			return true;	/* not ours to reason about: copy as asked */
		at = (uint64_t)pos;
	}
	return at > max_end || len > max_end - at;
}

/*
 * The kernel refuses a copy whose end would overflow an offset, however
 * little it would have copied (copy_file_range: EOVERFLOW, sendfile:
 * EINVAL); cut into windows, the same request would be accepted.  Such a
 * request is made as asked.  cp's length (2^63 - 2^30) never wraps.
 */
size_t uo_copy_window(int in, uint64_t in_at, int out, uint64_t out_at, size_t len, int split)
{
	struct uo_file a, b;
	int saved = errno;
	size_t ret = len;

	if (uo_config.disabled || len <= uo_config.tuning.window)
		return len;
	if (uo_fstat(in, &a) != 0 || !S_ISREG(a.mode))
		goto out;
	/* Overlap checks are made on the whole request; cutting it could change them. */
	if (uo_fstat(out, &b) == 0 && a.dev == b.dev && a.ino == b.ino)
		goto out;
	if (split == UO_SPLIT_SIGNED ? uo_copy_end_overflows(in, in_at, len, INT64_MAX) :
	    uo_copy_end_overflows(in, in_at, len, UINT64_MAX) ||
	    uo_copy_end_overflows(out, out_at, len, UINT64_MAX))
		goto out;
	ret = uo_config.tuning.window;
out:
	errno = saved;
	return ret;
}
