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
 *   trace.  errno is restored by the hooks.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "uo_internal.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451	/* the same number on every architecture */
#endif

struct uo_cachestat_range {
	uint64_t off;
	uint64_t len;
};

struct uo_cachestat {
	uint64_t nr_cache;
	uint64_t nr_dirty;
	uint64_t nr_writeback;
	uint64_t nr_evicted;
	uint64_t nr_recently_evicted;
};

/* A stuck disk must not hang the program forever in our hands. */
#define UO_WAIT_BUDGET_NS	(5ULL * 1000000000ULL)
#define UO_WAIT_FIRST_NS	(1ULL * 1000000ULL)
#define UO_WAIT_LONGEST_NS	(16ULL * 1000000ULL)

static off_t uo_len(struct uo_range r)
{
	return r.end == UO_EOF ? 0 : (off_t)(r.end - r.start);
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
static uint64_t uo_wait_writeback(int fd, struct uo_range r)
{
	struct uo_cachestat_range range = { r.start, (uint64_t)uo_len(r) };
	struct uo_cachestat cs;
	uint64_t nap = UO_WAIT_FIRST_NS, waited = 0;

	for (;;) {
		struct timespec ts;

		if (syscall(__NR_cachestat, fd, &range, &cs, 0) != 0)
			return waited;
		if (cs.nr_dirty == 0 && cs.nr_writeback == 0)
			return waited;
		if (waited >= UO_WAIT_BUDGET_NS)
			return waited;
		if (cs.nr_writeback == 0)
			uo_sync_file_range(fd, r.start, (uint64_t)uo_len(r), SYNC_FILE_RANGE_WRITE);
		ts.tv_sec = 0;
		ts.tv_nsec = (long)nap;
		nanosleep(&ts, NULL);
		waited += nap;
		if (nap < UO_WAIT_LONGEST_NS)
			nap *= 2;
	}
}

/*
 * Which folios of the range hold cached pages (at least half of each)?
 * Returns the UO_EV_* answer for the policy.  cachestat refuses (EPERM)
 * files the caller could not write and does not own, exactly those for
 * which mincore would lie; the policy then spares the stream's reads.
 */
unsigned uo_probe(int fd, struct uo_range r, uint64_t align, uint64_t *cached)
{
	struct uo_cachestat_range range = { r.start, r.end - r.start };
	struct uo_cachestat cs;
	uint64_t page = getauxval(AT_PAGESZ), folios = (r.end - r.start) / align, i;

	*cached = 0;
	if (!page)
		page = 4096;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0) != 0)
		return errno == EPERM ? UO_EV_BLIND : UO_EV_NOPROBE;
	/* The common answers, nothing or everything, in one call. */
	if (cs.nr_cache == 0)
		return UO_EV_PROBED;
	if (cs.nr_cache * page >= r.end - r.start) {
		*cached = folios >= 64 ? ~0ULL : (1ULL << folios) - 1;
		return UO_EV_PROBED;
	}
	for (i = 0; i < folios && i < 64; i++) {
		range.off = r.start + i * align;
		range.len = align;
		if (syscall(__NR_cachestat, fd, &range, &cs, 0) == 0 && cs.nr_cache * page * 2 >= align)
			*cached |= 1ULL << i;
	}
	return UO_EV_PROBED;
}

/* Pages of the whole file in the page cache, or -1 if that cannot be known. */
int64_t uo_cached_pages(int fd)
{
	struct uo_cachestat_range range = { 0, 0 };
	struct uo_cachestat cs;

	if (syscall(__NR_cachestat, fd, &range, &cs, 0) != 0)
		return -1;
	return (int64_t)cs.nr_cache;
}

/* Drops the range but for the folios in 'keep', one call per stretch. */
static int uo_drop(int fd, struct uo_range r, uint64_t keep, uint64_t align)
{
	uint64_t at = r.start, i = 0, from;
	int err = 0, e;

	if (!keep)
		return posix_fadvise(fd, (off_t)r.start, uo_len(r), POSIX_FADV_DONTNEED);
	while (at < r.end) {
		for (; at < r.end && ((keep >> i) & 1); at += align, i++)
			;
		for (from = at; at < r.end && !((keep >> i) & 1); at += align, i++)
			;
		if (at > from) {
			e = posix_fadvise(fd, (off_t)from, (off_t)(at - from), POSIX_FADV_DONTNEED);
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
void uo_apply(int fd, const struct uo_advice *adv, uint64_t size, uint64_t *counted)
{
	bool dry = uo_config.dryrun;
	uint64_t waited = 0;
	int err = 0;

	if (!uo_range_empty(adv->flush)) {
		if (!dry)
			err = uo_sync_file_range(fd, adv->flush.start, (uint64_t)uo_len(adv->flush),
						 SYNC_FILE_RANGE_WRITE) ? errno : 0;
		if (err)
			UO_STAT_ADD(advice_errors, 1);
		else if (adv->flush.start < size)
			UO_STAT_ADD(writeback, (adv->flush.end < size ? adv->flush.end : size) -
					       adv->flush.start);
		uo_trace_advice(fd, dry ? "dry run: would flush" : "flush", adv->flush, err, 0);
	}
	if (!uo_range_empty(adv->drop)) {
		if (!dry && (adv->flags & UO_ADV_WAIT))
			waited = uo_wait_writeback(fd, adv->drop);
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
}
