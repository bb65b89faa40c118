/*
 * The only place that gives the kernel advice about a program's file.
 *
 * Two rules come from measurements and must not be broken:
 * - Never wait on the program's own descriptor with sync_file_range's
 *   WAIT flags (or fsync): waiting consumes the file's writeback error, and
 *   the program's own fsync() would then return 0 on a failing disk.  We
 *   start writeback with SYNC_FILE_RANGE_WRITE only, and wait by watching
 *   cachestat(2), which reads page states and consumes nothing.
 * - Advice failures are silent: they are the program's business only in a
 *   trace.  Nothing here touches errno: system calls are made raw.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <time.h>

#include "advise.h"
#include "config.h"
#include "stats.h"
#include "sys.h"
#include "trace.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

/* A stuck disk must not hang the program forever in our hands. */
#define UO_WAIT_BUDGET_NS	(5ULL * 1000000000ULL)
#define UO_WAIT_FIRST_NS	(1ULL * 1000000ULL)
#define UO_WAIT_LONGEST_NS	(16ULL * 1000000ULL)

/* The length of a range for the kernel: 0 is "to end of file". */
static uint64_t uo_len(struct uo_range r)
{
	return r.end == UO_EOF ? 0 : r.end - r.start;
}

static void uo_trace_advice(int fd, const char *what, struct uo_range r, int err,
			    uint64_t waited_ns)
{
	struct uo_line l;

	if (!uo_tracing())
		return;
	uo_line_start(&l, fd);
	uo_line_str(&l, what);
	uo_line_str(&l, " ");
	uo_line_range(&l, r);
	if (waited_ns) {
		uo_line_str(&l, " after waiting ");
		uo_line_num(&l, waited_ns / 1000000);
		uo_line_str(&l, " ms for writeback");
	}
	if (err) {
		uo_line_str(&l, ": failed, errno ");
		uo_line_num(&l, (uint64_t)err);
	}
	uo_line_trace(&l);
}

/*
 * Wait until the range is clean, up to a budget.  Returns the time waited.
 * Kernels without cachestat (before 6.5) are not waited for: the stream's
 * writeback is still started early, only not throttled.
 */
static uint64_t uo_wait_writeback(int fd, struct uo_range r, bool *clean)
{
	struct uo_cachestat cs;
	uint64_t nap = UO_WAIT_FIRST_NS, waited = 0;

	*clean = true;
	for (;;) {
		struct timespec ts;

		if (uo_cachestat(fd, r.start, uo_len(r), &cs) != 0)
			return waited;
		*clean = cs.nr_dirty == 0 && cs.nr_writeback == 0;
		if (*clean)
			return waited;
		if (waited >= UO_WAIT_BUDGET_NS)
			return waited;
		if (cs.nr_writeback == 0)
			uo_sync_file_range(fd, r.start, uo_len(r), SYNC_FILE_RANGE_WRITE);
		ts.tv_sec = 0;
		ts.tv_nsec = (long)nap;
		uo_sys(SYS_nanosleep, &ts, NULL);
		waited += nap;
		if (nap < UO_WAIT_LONGEST_NS)
			nap *= 2;
	}
}

/*
 * Did writeback of the range fail?  A page whose writeback failed is clean
 * and looks like any other, and it may be the only good copy of the data:
 * dropping it makes the program read the disk's garbage back.  The kernel
 * keeps one writeback error per file and reports it once to each open
 * description, so it is asked of a description of our own, opened through
 * /proc, never of the program's: the program's descriptors still get the
 * error from their fsync.  (One that the program opens after this check
 * may not: the kernel then counts the error as seen.)  Asked only once the
 * range is clean, so the wait is immediate.  True when it cannot be told
 * (no /proc, no read access): the pages are then kept.
 */
static bool uo_writeback_failed(int fd, struct uo_range r)
{
	char path[UO_PROC_FD_PATH];
	long own;
	int err;

	uo_proc_fd_path(path, fd);
	own = uo_sys(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (own < 0)
		return true;
	err = uo_sync_file_range((int)own, r.start, uo_len(r), SYNC_FILE_RANGE_WAIT_BEFORE);
	uo_sys(SYS_close, own);
	return err != 0;
}

/*
 * Which folios of the range hold cached pages?  One page is enough: a hot
 * set can be sparse (a database's index pages, 4 KiB each), and every one
 * of its pages is someone's.  Keeping the folio-sized range around it keeps
 * some of the stream's own pages too: the price of never dropping another's.
 * Returns the UO_EV_* answer for the policy.  cachestat refuses (EPERM)
 * files the caller could not write and does not own, exactly those for
 * which mincore would lie; the policy then spares the stream's reads.
 */
unsigned uo_probe(int fd, struct uo_range r, uint64_t align, uint64_t *cached)
{
	struct uo_cachestat cs;
	uint64_t page = getauxval(AT_PAGESZ), folios = (r.end - r.start) / align, i;
	int err;

	*cached = 0;
	if (!page)
		page = 4096;
	err = uo_cachestat(fd, r.start, r.end - r.start, &cs);
	if (err)
		return err == -EPERM ? UO_EV_BLIND : UO_EV_NOPROBE;
	/* The common answers, nothing or everything, in one call. */
	if (cs.nr_cache == 0)
		return UO_EV_PROBED;
	if (cs.nr_cache * page >= r.end - r.start) {
		*cached = folios >= 64 ? ~0ULL : (1ULL << folios) - 1;
		return UO_EV_PROBED;
	}
	for (i = 0; i < folios && i < 64; i++)
		if (uo_cachestat(fd, r.start + i * align, align, &cs) == 0 && cs.nr_cache)
			*cached |= 1ULL << i;
	return UO_EV_PROBED;
}

int64_t uo_cached_pages(int fd)
{
	struct uo_cachestat cs;

	if (uo_cachestat(fd, 0, 0, &cs) != 0)
		return -1;
	return (int64_t)cs.nr_cache;
}

/* Drops the range but for the folios in 'keep', one call per stretch. */
static int uo_drop(int fd, struct uo_range r, uint64_t keep, uint64_t align)
{
	uint64_t at = r.start, i = 0, from;
	int err = 0, e;

	if (!keep)
		return -uo_fadvise_dontneed(fd, r.start, uo_len(r));
	while (at < r.end) {
		for (; at < r.end && ((keep >> i) & 1); at += align, i++)
			;
		for (from = at; at < r.end && !((keep >> i) & 1); at += align, i++)
			;
		if (at > from) {
			e = -uo_fadvise_dontneed(fd, from, at - from);
			err = err ? err : e;
		}
	}
	return err;
}

/*
 * Statistics of a drop: bytes advised out and bytes kept because they were
 * cached before, up to the end of the file.  A drop starts a folio before
 * the last one ended (see the policy): bytes below *counted were counted.
 */
static void uo_count_drop(struct uo_range r, uint64_t keep, uint64_t align, uint64_t size,
			  uint64_t *counted)
{
	uint64_t end = r.end < size ? r.end : size, at, i;

	if (!uo_stats || end <= r.start || end == UO_EOF)
		return;
	for (at = r.start, i = 0; at < end; at += align, i++) {
		uint64_t from = at > *counted ? at : *counted;
		uint64_t to = end - at < align ? end : at + align;

		if (to <= from)
			continue;
		if (i < 64 && ((keep >> i) & 1))
			UO_STAT_ADD(spared, to - from);
		else
			UO_STAT_ADD(dropped, to - from);
	}
	if (end > *counted)
		*counted = end;
}

/*
 * In a dry run every decision is made and counted as usual, but the kernel
 * is told nothing: the trace says what would have been done.
 */
unsigned uo_apply(int fd, const struct uo_advice *adv, uint64_t size, uint64_t *counted)
{
	bool dry = uo_config.dryrun, clean = true;
	uint64_t waited = 0;
	int err = 0;

	if (!uo_range_empty(adv->flush)) {
		if (!dry)
			err = -uo_sync_file_range(fd, adv->flush.start, uo_len(adv->flush),
						  SYNC_FILE_RANGE_WRITE);
		if (err)
			UO_STAT_ADD(advice_errors, 1);
		else if (adv->flush.start < size)
			UO_STAT_ADD(writeback, (adv->flush.end < size ? adv->flush.end : size) -
					       adv->flush.start);
		uo_trace_advice(fd, dry ? "dry run: would flush" : "flush", adv->flush, err, 0);
	}
	if (!uo_range_empty(adv->drop)) {
		if (!dry && (adv->flags & UO_ADV_WAIT)) {
			waited = uo_wait_writeback(fd, adv->drop, &clean);
			/* Still dirty after the budget: kept, as dirty pages are anyway. */
			if (!clean) {
				uo_trace_advice(fd, "kept (writeback not done)", adv->drop, 0, waited);
				return 0;
			}
			if (uo_writeback_failed(fd, adv->drop)) {
				UO_STAT_ADD(advice_errors, 1);
				uo_trace_advice(fd, "kept (writeback failed: the only good copy)",
						adv->drop, 0, waited);
				return UO_APPLY_WB_FAILED;
			}
		}
		err = dry ? 0 : uo_drop(fd, adv->drop, adv->keep, uo_config.tuning.align);
		if (err)
			UO_STAT_ADD(advice_errors, 1);
		else
			uo_count_drop(adv->drop, adv->keep, uo_config.tuning.align, size, counted);
		uo_trace_advice(fd, dry ? (adv->keep ? "dry run: would drop (sparing what was cached before)"
						     : "dry run: would drop")
					: adv->keep ? "drop (sparing what was cached before)" : "drop",
				adv->drop, err, waited);
	}
	return 0;
}

/* A whole file of a tree, cold when opened and read whole: it can go. */
void uo_drop_tree_file(int fd, uint64_t size)
{
	struct uo_range all = { 0, UO_EOF };
	int err = uo_config.dryrun ? 0 : -uo_fadvise_dontneed(fd, 0, 0);

	if (err)
		UO_STAT_ADD(advice_errors, 1);
	else {
		UO_STAT_ADD(tree_files, 1);
		UO_STAT_ADD(dropped, size);
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
