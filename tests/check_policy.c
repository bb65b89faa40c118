/*
 * Unit tests of the stream policy: event sequences in, advice out.
 * The policy is pure, so these run in microseconds and need no files.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "uot_check.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static struct uo_tuning tun;
static struct uo_stream st;

static void setup(void)
{
	uo_tuning_defaults(&tun);
	memset(&st, 0, sizeof(st));
}

/* Bytes moved at a known offset (pread, pwrite, copies with offsets). */
static struct uo_advice at(unsigned dir, uint64_t off, uint64_t len)
{
	struct uo_event ev = { .end = off + len, .len = len, .dir = (uint8_t)dir, .flags = 0 };

	return uo_observe(&st, &tun, &ev);
}

/*
 * Bytes moved at the cursor (read, write, stdio); when the policy asks,
 * answer with the cursor 'pos' as the plumbing would.
 */
static struct uo_advice cursor(unsigned dir, uint64_t len, uint64_t pos)
{
	struct uo_event ev = { .end = UO_UNKNOWN, .len = len, .dir = (uint8_t)dir, .flags = 0 };
	struct uo_advice adv = uo_observe(&st, &tun, &ev);

	if (adv.flags & UO_ADV_ASK_POSITION) {
		struct uo_event where = { .end = pos, .len = 0, .dir = (uint8_t)dir,
					  .flags = UO_EV_CURSOR };

		adv = uo_observe(&st, &tun, &where);
	}
	return adv;
}

/*
 * What was cached before the stream, folio by folio, when a test wants the
 * policy's probes answered (NULL: probes go unanswered, as on a kernel
 * without cachestat).
 */
static bool nothing(struct uo_advice a);
static bool (*truth)(uint64_t folio);
static bool blind;

static void answer_probe(unsigned dir, struct uo_advice *a)
{
	struct uo_event ev = { .dir = (uint8_t)dir };
	uint64_t f;

	if (uo_range_empty(a->probe) || (!truth && !blind))
		return;
	/* Never below a lookahead: readahead would make the folios look cached. */
	ck_assert_uint_eq(a->probe.start % tun.align, 0);
	ck_assert_uint_eq(a->probe.end % tun.align, 0);
	ev.end = a->probe.end;
	ev.len = a->probe.end - a->probe.start;
	ev.flags = blind ? UO_EV_BLIND : UO_EV_PROBED;
	for (f = a->probe.start / tun.align; !blind && f < a->probe.end / tun.align; f++)
		if (truth(f))
			ev.cached |= 1ULL << (f - a->probe.start / tun.align);
	ck_assert(nothing(uo_observe(&st, &tun, &ev)));
}

static bool nothing(struct uo_advice a)
{
	return uo_range_empty(a.drop) && uo_range_empty(a.flush) &&
	       !(a.flags & (UO_ADV_PROMOTED | UO_ADV_WAIT));
}

/*
 * Streams 'total' bytes in 'step' calls from 'start' and checks the shape
 * of every piece of advice on the way: ranges aligned, contiguous, never
 * ahead of the cursor.  Returns how far drops (and flushes) got.
 */
struct walk {
	uint64_t dropped_to, flushed_to, drops, flushes, max_behind, waits;
	uint64_t kept, let_go, wrongly_kept, wrongly_dropped, first_probe;
	bool promoted;
};

/* Folio by folio, what a drop let go and what it kept; checked against the truth. */
static void count_drop(struct walk *w, const struct uo_advice *a)
{
	uint64_t f, i;

	for (f = a->drop.start / tun.align, i = 0; f < a->drop.end / tun.align; f++, i++) {
		bool keep = (a->keep >> i) & 1;
		bool was = truth && truth(f);

		if (keep)
			w->kept++;
		else
			w->let_go++;
		/* Before the first probe the policy can only guess: not counted. */
		if (f * tun.align < w->first_probe)
			continue;
		w->wrongly_kept += keep && !was;
		w->wrongly_dropped += !keep && was;
	}
}

static struct walk stream(unsigned dir, uint64_t start, uint64_t total, uint64_t step, bool use_cursor)
{
	struct walk w = { .dropped_to = UO_UNKNOWN, .flushed_to = UO_UNKNOWN,
			  .first_probe = UO_UNKNOWN };
	uint64_t off;

	for (off = start; off < start + total; off += step) {
		struct uo_advice a = use_cursor ? cursor(dir, step, off + step) : at(dir, off, step);
		uint64_t end = off + step;

		if (!uo_range_empty(a.probe)) {
			ck_assert_uint_ge(a.probe.start, end + uo_lookahead(&tun, dir));
			if (w.first_probe == UO_UNKNOWN)
				w.first_probe = a.probe.start;
		}
		answer_probe(dir, &a);
		if (a.flags & UO_ADV_PROMOTED) {
			ck_assert_msg(!w.promoted, "promoted twice at %llu", (unsigned long long)off);
			w.promoted = true;
			ck_assert_uint_ge(end - start, tun.threshold);
		}
		if (!uo_range_empty(a.drop)) {
			ck_assert_msg(w.promoted, "drop before the stream was recognised");
			ck_assert_uint_eq(a.drop.start % tun.align, 0);
			ck_assert_uint_eq(a.drop.end % tun.align, 0);
			ck_assert_uint_le(a.drop.end, end);
			/* Contiguous, re-covering at most the last folio of the previous drop. */
			if (w.dropped_to != UO_UNKNOWN && dir == UO_READ)
				ck_assert_uint_eq(a.drop.start, w.dropped_to - tun.align);
			else if (w.dropped_to != UO_UNKNOWN)
				ck_assert_uint_eq(a.drop.start, w.dropped_to);
			w.dropped_to = a.drop.end;
			w.drops++;
			count_drop(&w, &a);
			if (a.flags & UO_ADV_WAIT)
				w.waits++;
		}
		if (!uo_range_empty(a.flush)) {
			ck_assert_int_eq(dir, UO_WRITE);
			ck_assert_uint_eq(a.flush.start % tun.align, 0);
			ck_assert_uint_eq(a.flush.end % tun.align, 0);
			ck_assert_uint_le(a.flush.end, end);
			if (w.flushed_to != UO_UNKNOWN)
				ck_assert_uint_eq(a.flush.start, w.flushed_to);
			w.flushed_to = a.flush.end;
			w.flushes++;
		}
		/* Written pages are dropped only once their writeback was started, earlier. */
		if (dir == UO_WRITE && !uo_range_empty(a.drop) && !uo_range_empty(a.flush))
			ck_assert_uint_le(a.drop.end, a.flush.start);
		if (dir == UO_WRITE && w.dropped_to != UO_UNKNOWN)
			ck_assert_uint_le(w.dropped_to, w.flushed_to);
		if (w.promoted && w.dropped_to != UO_UNKNOWN && end - w.dropped_to > w.max_behind)
			w.max_behind = end - w.dropped_to;
	}
	return w;
}

START_TEST(test_read_below_threshold_is_left_alone)
{
	uint64_t off;

	for (off = 0; off + 128 * 1024 <= tun.threshold - MiB; off += 128 * 1024)
		ck_assert(nothing(at(UO_READ, off, 128 * 1024)));
	ck_assert(nothing(uo_closing(&st, &tun)));
}
END_TEST

START_TEST(test_read_stream_promoted_at_threshold)
{
	struct uo_advice a;
	uint64_t off;

	for (off = 0; off + MiB < tun.threshold; off += MiB)
		ck_assert(nothing(at(UO_READ, off, MiB)));
	a = at(UO_READ, off, MiB);
	ck_assert(a.flags & UO_ADV_PROMOTED);
	/* Everything behind the cursor's folio goes at once. */
	ck_assert_uint_eq(a.drop.start, 0);
	ck_assert_uint_eq(a.drop.end, tun.threshold);
	ck_assert_uint_eq(st.state, UO_STREAM);
}
END_TEST

START_TEST(test_read_stream_footprint_bounded_over_4gib)
{
	struct walk w = stream(UO_READ, 0, 4 * GiB, 128 * 1024, false);

	ck_assert(w.promoted);
	/* Behind the cursor, never more than a window and a folio stay undropped. */
	ck_assert_uint_le(w.max_behind, tun.window + tun.align);
	ck_assert_uint_ge(w.dropped_to, 4 * GiB - tun.window - tun.align);
	/* Advice is batched: about one call per window, not per read. */
	ck_assert_uint_le(w.drops, 4 * GiB / tun.window + 1);
	ck_assert_uint_eq(w.waits, 0);
}
END_TEST

START_TEST(test_cursor_reads_ask_position_once_per_window)
{
	struct uo_event ev = { .end = UO_UNKNOWN, .len = 64 * 1024, .dir = UO_READ };
	uint64_t moved = 0;
	int asks = 0, calls = 0;

	while (moved < 10 * tun.window) {
		struct uo_advice a = uo_observe(&st, &tun, &ev);

		moved += ev.len;
		calls++;
		if (a.flags & UO_ADV_ASK_POSITION) {
			struct uo_event where = { .end = moved, .dir = UO_READ, .flags = UO_EV_CURSOR };

			asks++;
			uo_observe(&st, &tun, &where);
		}
	}
	ck_assert_int_eq(asks, 10);
	ck_assert_int_eq(calls, 10 * (int)(tun.window / ev.len));
}
END_TEST

START_TEST(test_cursor_stream_detected_and_dropped)
{
	struct walk w = stream(UO_READ, 0, GiB, 128 * 1024, true);

	ck_assert(w.promoted);
	ck_assert_uint_le(w.max_behind, 2 * tun.window + tun.align);
}
END_TEST

START_TEST(test_stdio_drift_still_sequential)
{
	uint64_t user = 0;
	int i;
	bool promoted = false;

	/* stdio's buffer keeps the kernel's cursor up to a buffer ahead of the program. */
	for (i = 0; i < 1024 && !promoted; i++) {
		uint64_t buffered = (i % 3) * 4096;

		user += 64 * 1024;
		promoted = cursor(UO_READ, 64 * 1024, user + buffered).flags & UO_ADV_PROMOTED;
	}
	ck_assert(promoted);
}
END_TEST

START_TEST(test_random_reads_never_a_stream)
{
	uint64_t off = 12345 * 4096;
	int i;

	srandom(7);
	for (i = 0; i < 200000; i++) {
		off = ((uint64_t)random() % (64 * 1024)) * 65536;
		ck_assert(nothing(at(UO_READ, off, 65536)));
	}
	ck_assert(nothing(uo_closing(&st, &tun)));
}
END_TEST

START_TEST(test_explicit_gap_breaks_the_run)
{
	uint64_t off = 0;
	int i;

	/* A reader that skips 4 KiB every MiB is not streaming the file. */
	for (i = 0; i < 200; i++, off += MiB + 4096)
		ck_assert(nothing(at(UO_READ, off, MiB)));
}
END_TEST

START_TEST(test_rewind_starts_over)
{
	struct walk w = stream(UO_READ, 0, 64 * MiB, MiB, false);
	uint64_t off;

	ck_assert(w.promoted);
	/* Seeking back to the start is a new run: no advice until it is long enough again. */
	for (off = 0; off + MiB < tun.threshold; off += MiB)
		ck_assert(nothing(at(UO_READ, off, MiB)));
	ck_assert(at(UO_READ, off, MiB).flags & UO_ADV_PROMOTED);
}
END_TEST

START_TEST(test_cursor_going_back_starts_over)
{
	struct walk w = stream(UO_READ, 0, 64 * MiB, MiB, true);

	ck_assert(w.promoted);
	/* The program seeked to 0 and read 8 MiB: the cursor is behind what we counted. */
	ck_assert(nothing(cursor(UO_READ, tun.window, 5 * MiB)));
	ck_assert_int_eq(st.state, UO_TRACKING);
}
END_TEST

START_TEST(test_unaligned_start_is_rounded_inwards)
{
	uint64_t start = 5 * MiB + 12345;
	struct walk w = stream(UO_READ, start, 256 * MiB, MiB, false);

	ck_assert(w.promoted);
	/* The first drop may not reach before the run: that folio may be someone else's. */
	ck_assert_uint_eq(w.dropped_to % tun.align, 0);
	ck_assert_uint_eq(st.run_start, start);
}
END_TEST

START_TEST(test_first_drop_starts_inside_the_run)
{
	uint64_t start = 5 * MiB + 12345, off;
	struct uo_advice a = { 0 };

	for (off = start; !(a.flags & UO_ADV_PROMOTED); off += MiB)
		a = at(UO_READ, off, MiB);
	ck_assert_uint_eq(a.drop.start, 6 * MiB);
}
END_TEST

START_TEST(test_tiny_window_tuning)
{
	struct walk w;

	tun.window = tun.align;
	tun.threshold = 4 * tun.align;
	w = stream(UO_READ, 0, 256 * MiB, 256 * 1024, false);
	ck_assert(w.promoted);
	ck_assert_uint_le(w.max_behind, 2 * tun.align);
	ck_assert_uint_ge(w.drops, 120);
}
END_TEST

START_TEST(test_huge_single_calls)
{
	/* One call bigger than the threshold (a copy window, a big read) counts at once. */
	struct uo_advice a = at(UO_READ, 0, 64 * MiB);

	ck_assert(a.flags & UO_ADV_PROMOTED);
	ck_assert_uint_eq(a.drop.end, 64 * MiB);
	a = at(UO_READ, 64 * MiB, 64 * MiB);
	ck_assert_uint_eq(a.drop.start, 62 * MiB);
	ck_assert_uint_eq(a.drop.end, 128 * MiB);
}
END_TEST

START_TEST(test_write_stream_flushes_then_drops_with_lag)
{
	struct walk w = stream(UO_WRITE, 0, 4 * GiB, MiB, false);
	uint64_t lag = tun.write_lag * tun.window;

	ck_assert(w.promoted);
	ck_assert_uint_ge(w.flushes, 4 * GiB / tun.window - 8);
	ck_assert_uint_eq(w.waits, w.drops);
	/* In flight (written, not yet dropped): the lag plus a window and a folio. */
	ck_assert_uint_le(w.max_behind, lag + tun.window + tun.align);
	ck_assert_uint_ge(w.max_behind, lag);
	ck_assert_uint_ge(w.dropped_to, 4 * GiB - lag - tun.window - tun.align);
}
END_TEST

START_TEST(test_write_without_lag_still_flushes_first)
{
	struct walk w;

	tun.write_lag = 0;
	w = stream(UO_WRITE, 0, GiB, MiB, false);
	ck_assert(w.promoted);
	ck_assert_uint_ge(w.drops, GiB / tun.window - 8);
	ck_assert_uint_le(w.max_behind, 2 * tun.window + tun.align);
}
END_TEST

START_TEST(test_write_close_flushes_and_drops_the_tail)
{
	struct walk w = stream(UO_WRITE, 0, 100 * MiB, MiB, false);
	struct uo_advice a;

	ck_assert(w.promoted);
	a = uo_closing(&st, &tun);
	ck_assert_uint_eq(a.flush.start, w.flushed_to);
	ck_assert_uint_eq(a.flush.end, UO_EOF);
	ck_assert_uint_eq(a.drop.start, w.dropped_to);
	ck_assert_uint_eq(a.drop.end, UO_EOF);
	ck_assert(a.flags & UO_ADV_WAIT);
	ck_assert_int_eq(st.state, UO_NEW);
}
END_TEST

/*
 * A process's writers wait for the disk only past its budget: writing,
 * once the stream has more than the budget in flight; closing, once what
 * the process's closed streams left in flight would pass it.  Replayed: a
 * process closing files one after the other, each with 24 MiB in flight.
 */
START_TEST(test_writer_waits_only_past_its_budget)
{
	const uint64_t budget = 64 * MiB, w = tun.window;
	uint64_t tails = 0, limit;
	int i;

	/* Writing: up to the budget no wait; past it, down to half a window under it. */
	ck_assert_uint_eq(uo_write_wait(budget, w, 0, 0, false), UO_NO_WAIT);
	ck_assert_uint_eq(uo_write_wait(budget, w, 0, budget, false), UO_NO_WAIT);
	ck_assert_uint_eq(uo_write_wait(budget, w, 0, budget + 1, false), budget - w / 2);
	/* What closed files left does not hold back a stream still writing. */
	ck_assert_uint_eq(uo_write_wait(budget, w, 4 * budget, budget, false), UO_NO_WAIT);
	/* The first two closes leave their tails in flight and do not wait... */
	for (i = 0; i < 2; i++) {
		ck_assert_uint_eq(uo_write_wait(budget, w, tails, 24 * MiB, true), UO_NO_WAIT);
		tails += 24 * MiB;
	}
	/* ... the third would pass the budget: it waits down to what is left of it, */
	limit = uo_write_wait(budget, w, tails, 24 * MiB, true);
	ck_assert_uint_eq(limit, budget - tails);
	tails += limit;
	/* and from then on every close waits for all of its tail. */
	ck_assert_uint_eq(uo_write_wait(budget, w, tails, 1, true), 0);
	ck_assert_uint_eq(uo_write_wait(budget, w, tails, 0, true), UO_NO_WAIT);
	/* A wait that gave up left more than the budget: still all of the next tail. */
	ck_assert_uint_eq(uo_write_wait(budget, w, budget + MiB, MiB, true), 0);
	/* The smallest budget, two windows (a small cgroup): two windows at most left. */
	ck_assert_uint_eq(uo_write_wait(2 * w, w, 0, 2 * w, true), UO_NO_WAIT);
	ck_assert_uint_eq(uo_write_wait(2 * w, w, 0, 3 * w, true), 2 * w);
	ck_assert_uint_eq(uo_write_wait(2 * w, w, w, 2 * w, true), w);
	/* A budget under half a window is waited down to nothing, never below zero. */
	ck_assert_uint_eq(uo_write_wait(w / 4, w, 0, w, false), 0);
}
END_TEST

/*
 * The writers of a memory domain share its budget.  A lone writer (the
 * others hold less than half a window: noise) keeps its own rule; past
 * the budget with others writing, a stream waits down to what they leave
 * of it, and down to nothing once they hold all of it.  Replayed: eight
 * writers at a window boundary, each with 24 MiB in flight, in a 256 MiB
 * cgroup (budget three windows): each waits for all of its own writeback.
 */
START_TEST(test_writers_share_the_domain_budget)
{
	const uint64_t w = tun.window, budget = 3 * w;
	int i;

	/* Alone, or within the budget together: no wait. */
	ck_assert_uint_eq(uo_domain_wait(budget, w, 0, 4 * w), UO_NO_WAIT);
	ck_assert_uint_eq(uo_domain_wait(budget, w, w / 2 - 1, 4 * w), UO_NO_WAIT);
	ck_assert_uint_eq(uo_domain_wait(budget, w, w, w), UO_NO_WAIT);
	ck_assert_uint_eq(uo_domain_wait(budget, w, 2 * w, w), UO_NO_WAIT);
	/* Past it: down to what the others leave, less half a window. */
	ck_assert_uint_eq(uo_domain_wait(budget, w, w, 2 * w + 1), budget - w - w / 2);
	ck_assert_uint_eq(uo_domain_wait(budget, w, 2 * w, 2 * w), w / 2);
	/* Already below that level: nothing to wait for. */
	ck_assert_uint_eq(uo_domain_wait(budget, w, 2 * w + w / 2, w / 4), UO_NO_WAIT);
	/* The others hold it all (the same with more than the budget): down to nothing. */
	ck_assert_uint_eq(uo_domain_wait(budget, w, budget, 1), 0);
	ck_assert_uint_eq(uo_domain_wait(budget, w, budget - w / 2, w), 0);
	for (i = 1; i < 8; i++)
		ck_assert_uint_eq(uo_domain_wait(budget, w, (uint64_t)i * 3 * w, 3 * w), 0);
	/* Nothing in flight of its own: never a wait. */
	ck_assert_uint_eq(uo_domain_wait(budget, w, 10 * budget, 0), UO_NO_WAIT);
}
END_TEST

/*
 * Beside other writers of its memory domain a writer looks every folio:
 * each keeps about a window dirty before its next look, one under
 * writeback and one more before its drop, and eight of them with 8 MiB
 * windows pushed a hot set out of a 256 MiB cgroup.  Replayed: a writer
 * of a 256 MiB cgroup alone for 32 MiB, then beside seven others holding
 * 3 MiB each: from then on it has less than a folio unflushed and at most
 * write_lag + 1 folios between its drop and its cursor; alone again, its
 * window comes back.
 */
START_TEST(test_writer_looks_every_folio_beside_others)
{
	const uint64_t w = tun.window, a = tun.align;
	uint64_t off, others, end;
	struct uo_advice adv;

	/* Alone (or with noise under half a window), and without folios: the window. */
	ck_assert_uint_eq(uo_domain_step(w, a, 0), w);
	ck_assert_uint_eq(uo_domain_step(w, a, w / 2 - 1), w);
	ck_assert_uint_eq(uo_domain_step(w, 0, 10 * w), w);
	ck_assert_uint_eq(uo_domain_step(w, w, 10 * w), w);
	/* Others writing: a folio. */
	ck_assert_uint_eq(uo_domain_step(w, a, w / 2), a);
	ck_assert_uint_eq(uo_domain_step(w, a, 7 * 3 * MiB), a);

	tun.threshold = uo_memory_threshold(&tun, 256 * MiB);
	for (off = 0; off < 128 * MiB; off += MiB) {
		others = off >= 32 * MiB && off < 96 * MiB ? 7 * 3 * MiB : 0;
		tun.window = uo_domain_step(w, a, others);
		adv = at(UO_WRITE, off, MiB);
		end = off + MiB;
		if (off >= 36 * MiB && off < 96 * MiB) {
			ck_assert_uint_eq(st.state, UO_STREAM);
			ck_assert_uint_lt(end - st.flushed, a);
			ck_assert_uint_le(end - st.dropped, (tun.write_lag + 1) * a);
		}
		if (off >= 100 * MiB && !uo_range_empty(adv.flush))
			ck_assert_uint_eq(adv.flush.end - adv.flush.start, w);
	}
}
END_TEST

/*
 * The threshold follows the memory the process may use: 1/32 of it, never
 * above the configured one nor below a window; not known, the configured
 * one.  A writer of a 256 MiB cgroup is then a stream, and its pages
 * dropped behind it, from 8 MiB on.
 */
START_TEST(test_threshold_follows_the_memory)
{
	struct uo_tuning t = tun;
	uint64_t off, promoted = 0;

	ck_assert_uint_eq(uo_memory_threshold(&t, 0), t.threshold);
	ck_assert_uint_eq(uo_memory_threshold(&t, UINT64_MAX), t.threshold);
	ck_assert_uint_eq(uo_memory_threshold(&t, 24 * GiB), t.threshold);
	ck_assert_uint_eq(uo_memory_threshold(&t, 1 * GiB), 32 * MiB);
	ck_assert_uint_eq(uo_memory_threshold(&t, 512 * MiB), 16 * MiB);
	ck_assert_uint_eq(uo_memory_threshold(&t, 256 * MiB), 8 * MiB);
	ck_assert_uint_eq(uo_memory_threshold(&t, 128 * MiB), t.window);
	ck_assert_uint_eq(uo_memory_threshold(&t, 1 * MiB), t.window);
	/* A window above the configured threshold never raises it. */
	t.window = 64 * MiB;
	ck_assert_uint_eq(uo_memory_threshold(&t, 256 * MiB), t.threshold);
	tun.threshold = uo_memory_threshold(&tun, 256 * MiB);
	for (off = 0; off < 64 * MiB && !promoted; off += MiB)
		if (at(UO_WRITE, off, MiB).flags & UO_ADV_PROMOTED)
			promoted = off + MiB;
	ck_assert_uint_eq(promoted, 8 * MiB);
}
END_TEST

/*
 * A temporary file (mkstemp, tmpfile, O_TMPFILE) written a MiB at a time
 * at the cursor, as sort writes its merge file: while memory is mostly
 * free and nothing limits it, none of its advice is left (nothing
 * flushed, dropped or waited for), at the close either (_i 0).  _i 1:
 * memory runs short at 96 MiB: from then on it is guarded as any writer,
 * its writeback started from the file's start, and what was kept before
 * is never dropped.  _i 2: under a limit (no free memory known), guarded
 * from its first window.  A file not made as a temporary one is not
 * touched by the rule.
 */
START_TEST(test_temp_file_left_to_the_kernel_while_memory_is_free)
{
	const uint64_t memory = 24 * GiB, total = 200 * MiB;
	uint64_t free = _i == 2 ? 0 : 23 * GiB, pos, kept_to = 0, flushed_to = 0;
	uint8_t temp = UO_TEMP_KEPT, plain = UO_TEMP_NO;
	struct uo_advice adv, raw;
	bool short_seen = false;

	for (pos = MiB; pos <= total; pos += MiB) {
		if (_i == 1 && pos > 96 * MiB)
			free = 4 * GiB;
		raw = cursor(UO_WRITE, MiB, pos);
		adv = uo_temp_advice(raw, UO_WRITE, &plain, free, memory, pos);
		ck_assert(memcmp(&adv, &raw, sizeof(adv)) == 0);
		ck_assert_uint_eq(plain, UO_TEMP_NO);
		adv = uo_temp_advice(raw, UO_WRITE, &temp, free, memory, pos);
		if (temp == UO_TEMP_KEPT) {
			ck_assert_msg(uo_range_empty(adv.flush) && uo_range_empty(adv.drop) &&
				      !(adv.flags & UO_ADV_WAIT),
				      "advice left for a temporary file at %llu MiB",
				      (unsigned long long)(pos / MiB));
			/* The policy went past it: it will not drop this later. */
			if (!uo_range_empty(raw.drop))
				kept_to = raw.drop.end;
			continue;
		}
		ck_assert_int_ne(_i, 0);
		if (!short_seen) {
			short_seen = true;
			/* Everything that may be dropped from now on has its writeback started. */
			ck_assert_uint_eq(adv.flush.start, 0);
			ck_assert_uint_ge(adv.flush.end, raw.flush.end);
			ck_assert(uo_range_empty(adv.drop) || adv.flush.end >= adv.drop.end);
		} else {
			ck_assert(memcmp(&adv, &raw, sizeof(adv)) == 0);
		}
		if (!uo_range_empty(adv.flush))
			flushed_to = adv.flush.end;
		if (!uo_range_empty(adv.drop)) {
			ck_assert_uint_ge(adv.drop.start, kept_to);
			ck_assert_uint_le(adv.drop.end, flushed_to);
		}
	}
	if (_i == 1)
		ck_assert_uint_ge(kept_to, 64 * MiB);
	if (_i == 2)
		ck_assert_uint_eq(kept_to, 0);
	ck_assert_uint_eq(temp, _i ? UO_TEMP_SHORT : UO_TEMP_KEPT);
	raw = uo_closing(&st, &tun);
	ck_assert(!uo_range_empty(raw.flush) && !uo_range_empty(raw.drop));
	adv = uo_temp_advice(raw, UO_WRITE, &temp, free, memory, total);
	if (_i == 0)
		ck_assert(uo_range_empty(adv.flush) && uo_range_empty(adv.drop) &&
			  !(adv.flags & UO_ADV_WAIT));
	else
		ck_assert(memcmp(&adv, &raw, sizeof(adv)) == 0);
}
END_TEST

/* Room is the tree's rule: a temporary file bigger than a quarter of memory is guarded. */
START_TEST(test_temp_file_room_is_the_tree_rule)
{
	struct uo_advice adv = { .flush = { 0, 8 * MiB } };
	uint8_t temp = UO_TEMP_KEPT;

	adv = uo_temp_advice(adv, UO_WRITE, &temp, 16 * GiB, 16 * GiB, 4 * GiB);
	ck_assert_uint_eq(temp, UO_TEMP_KEPT);
	ck_assert(uo_range_empty(adv.flush));
	adv.flush.end = 8 * MiB;
	adv = uo_temp_advice(adv, UO_WRITE, &temp, 16 * GiB, 16 * GiB, 4 * GiB + MiB);
	ck_assert_uint_eq(temp, UO_TEMP_SHORT);
	ck_assert_uint_eq(adv.flush.start, 0);
	ck_assert_uint_eq(adv.flush.end, 8 * MiB);
	/* A read stream's drop stands, and says nothing of memory. */
	memset(&adv, 0, sizeof(adv));
	adv.drop.end = 8 * MiB;
	adv = uo_temp_advice(adv, UO_READ, &temp, 16 * GiB, 16 * GiB, MiB);
	ck_assert_uint_eq(adv.drop.end, 8 * MiB);
	ck_assert_uint_eq(temp, UO_TEMP_SHORT);
	/* Advice with nothing to flush or drop (a probe) is no reason to look. */
	temp = UO_TEMP_KEPT;
	memset(&adv, 0, sizeof(adv));
	adv.probe.end = 8 * MiB;
	adv = uo_temp_advice(adv, UO_WRITE, &temp, 0, 16 * GiB, 4 * GiB);
	ck_assert_uint_eq(temp, UO_TEMP_KEPT);
	ck_assert_uint_eq(adv.probe.end, 8 * MiB);
}
END_TEST

/*
 * A file written from its start has its writeback started window by
 * window before the threshold: the dirty pages a writer leaves before it
 * is known as a stream stay under about a window, not the threshold and
 * a window.  Nothing is dropped before the threshold.  _i: at known
 * offsets (pwrite) or at the cursor (write).
 */
START_TEST(test_write_from_start_flushed_before_threshold)
{
	bool use_cursor = _i;
	uint64_t off, flushed = 0, behind = 0;
	struct uo_advice a = { 0 };

	for (off = 0; off + MiB < tun.threshold; off += MiB) {
		a = use_cursor ? cursor(UO_WRITE, MiB, off + MiB) : at(UO_WRITE, off, MiB);
		ck_assert(!(a.flags & (UO_ADV_PROMOTED | UO_ADV_WAIT)));
		ck_assert(uo_range_empty(a.drop));
		if (!uo_range_empty(a.flush)) {
			ck_assert_uint_eq(a.flush.start, flushed);
			ck_assert_uint_le(a.flush.end, off + MiB);
			ck_assert_uint_eq(a.flush.end % tun.align, 0);
			flushed = a.flush.end;
		}
		if (off + MiB - flushed > behind)
			behind = off + MiB - flushed;
	}
	ck_assert_uint_eq(st.state, UO_TRACKING);
	ck_assert_uint_ge(flushed, tun.threshold - 2 * tun.window);
	/* Cursor writes are seen a window at a time, so at most a window more. */
	ck_assert_uint_le(behind, (use_cursor ? 2 : 1) * tun.window + tun.align);
	/* The stream goes on from there: nothing is sent twice. */
	for (; uo_range_empty(a.flush); off += MiB)
		a = use_cursor ? cursor(UO_WRITE, MiB, off + MiB) : at(UO_WRITE, off, MiB);
	ck_assert_uint_eq(st.state, UO_STREAM);
	ck_assert_uint_eq(a.flush.start, flushed);
	ck_assert_uint_eq(a.drop.start, 0);
}
END_TEST

/* A run that starts elsewhere (an append, a database's pages) is the kernel's until the threshold. */
START_TEST(test_write_elsewhere_waits_for_the_threshold)
{
	uint64_t off;

	for (off = 64 * MiB; off + MiB < 64 * MiB + tun.threshold; off += MiB)
		ck_assert(nothing(at(UO_WRITE, off, MiB)));
	/* Nor is a read from the start flushed. */
	uo_reset(&st);
	for (off = 0; off + MiB < tun.threshold; off += MiB)
		ck_assert(nothing(at(UO_READ, off, MiB)));
}
END_TEST

START_TEST(test_read_close_drops_tail)
{
	struct walk w = stream(UO_READ, 0, 100 * MiB, MiB, false);
	struct uo_advice a;

	ck_assert(w.promoted);
	a = uo_closing(&st, &tun);
	ck_assert_uint_eq(a.drop.start, w.dropped_to - tun.align);
	ck_assert_uint_eq(a.drop.end, UO_EOF);
	ck_assert(uo_range_empty(a.flush));
	ck_assert_int_eq(st.state, UO_NEW);
}
END_TEST

/* _i: the guarded direction; both with offsets and at the cursor. */
START_TEST(test_guard_one_direction)
{
	unsigned other = _i == UO_READ ? UO_WRITE : UO_READ;
	bool cursor_events = _i == UO_WRITE;

	tun.guard = 1u << _i;
	ck_assert(!stream(other, 0, GiB, MiB, cursor_events).promoted);
	memset(&st, 0, sizeof(st));
	ck_assert(stream((unsigned)_i, 0, GiB, MiB, cursor_events).promoted);
}
END_TEST

START_TEST(test_direction_change_starts_over)
{
	uint64_t off;

	for (off = 0; off < tun.threshold - MiB; off += MiB)
		ck_assert(nothing(at(UO_READ, off, MiB)));
	/* A write at the read cursor is not a continuation of the read stream. */
	ck_assert(nothing(at(UO_WRITE, off, MiB)));
	ck_assert(nothing(at(UO_READ, off + MiB, MiB)));
	ck_assert_int_eq(st.dir, UO_READ);
	ck_assert_uint_eq(st.run_start, off + MiB);
}
END_TEST

START_TEST(test_ignored_stays_ignored_until_reset)
{
	uo_ignore(&st);
	ck_assert(!stream(UO_READ, 0, GiB, MiB, false).promoted);
	ck_assert(nothing(uo_closing(&st, &tun)));
	/* Closing resets: the descriptor number may name a new file next. */
	ck_assert(stream(UO_READ, 0, GiB, MiB, false).promoted);
	uo_reset(&st);
	ck_assert_int_eq(st.state, UO_NEW);
}
END_TEST

START_TEST(test_bad_direction_is_ignored)
{
	struct uo_event ev = { .end = GiB, .len = GiB, .dir = 7 };

	ck_assert(nothing(uo_observe(&st, &tun, &ev)));
	ck_assert_int_eq(st.state, UO_NEW);
}
END_TEST

START_TEST(test_defaults_are_sane)
{
	ck_assert_uint_eq(tun.align, 2 * MiB);
	ck_assert_uint_eq(tun.window % tun.align, 0);
	ck_assert_uint_ge(tun.threshold, tun.window);
	ck_assert_uint_eq(tun.guard, UO_GUARD_READ | UO_GUARD_WRITE);
}
END_TEST

/*
 * uo_observe_quiet is a shortcut the hooks take on every call: whatever it
 * accepts must leave exactly the state uo_observe would, with no advice lost.
 */
START_TEST(test_quiet_path_matches_full_path)
{
	struct uo_stream twin;
	uint64_t off = 0;
	int i, quiet = 0, probes = 0;

	memset(&twin, 0, sizeof(twin));
	srandom(_i + 1);
	/* The watcher's tuning: reads dropped behind a folio at a time once probed. */
	if (_i >= 4)
		tun.read_step = tun.align;
	for (i = 0; i < 300000; i++) {
		struct uo_event ev;
		struct uo_advice full, fast;
		long r = random();
		uint64_t len = (uint64_t)(1 + r % 4) * 256 * 1024;

		/* Mostly sequential, with jumps, rewinds, direction changes and cursor events. */
		switch ((r >> 8) % 16) {
		case 0: off = ((uint64_t)random() % 4096) * 4096; break;
		case 1: off = 0; break;
		default: break;
		}
		ev.dir = ((r >> 12) % 64) == 0 ? UO_WRITE : (_i % 2 ? UO_WRITE : UO_READ);
		ev.len = len;
		ev.end = ((r >> 20) % 32) == 0 ? UO_UNKNOWN : off + len;
		ev.flags = 0;
		off += len;

		/*
		 * Asserted only when wrong: each passing ck_assert is a write to
		 * Check's pipe, and 5 million of them made this the suite's slowest.
		 */
		full = uo_observe(&twin, &tun, &ev);
		if (uo_observe_quiet(&st, &tun, &ev)) {
			quiet++;
			if (!nothing(full) || !uo_range_empty(full.probe))
				ck_abort_msg("event %d: the shortcut took an event with advice", i);
		} else {
			fast = uo_observe(&st, &tun, &ev);
			if (memcmp(&fast, &full, sizeof(full)) != 0)
				ck_assert_mem_eq(&fast, &full, sizeof(full));
		}
		if (memcmp(&st, &twin, sizeof(st)) != 0)
			ck_assert_mem_eq(&st, &twin, sizeof(st));
		/* Probes answered alike in both, with what some file might hold. */
		if (!uo_range_empty(full.probe)) {
			struct uo_event probed = {
				.end = full.probe.end, .len = full.probe.end - full.probe.start,
				.dir = ev.dir, .cached = (uint64_t)random() << 17 ^ (uint64_t)random(),
				.flags = random() % 5000 == 0 ? UO_EV_BLIND : UO_EV_PROBED,
			};

			probes++;
			uo_observe(&twin, &tun, &probed);
			uo_observe(&st, &tun, &probed);
		}
	}
	/* The shortcut must actually be taken most of the time. */
	ck_assert_int_gt(quiet, 150000);
	if (_i % 2 == 0)
		ck_assert_int_gt(probes, 100);
}
END_TEST

static bool none_cached(uint64_t folio)
{
	(void)folio;
	return false;
}

static bool all_cached(uint64_t folio)
{
	(void)folio;
	return true;
}

/* The middle third of a 600 MiB file. */
static bool middle_cached(uint64_t folio)
{
	return folio >= 100 && folio < 200;
}

/* Every other 8 MiB: someone reads the file in strides. */
static bool striped(uint64_t folio)
{
	return (folio / 4) % 2;
}

START_TEST(test_cold_file_dropped_whole)
{
	struct walk w;

	truth = none_cached;
	w = stream(UO_READ, 0, 600 * MiB, MiB, _i);
	ck_assert(w.promoted);
	ck_assert_uint_eq(w.kept, 0);
	ck_assert_uint_ge(w.let_go, (600 * MiB - 2 * tun.window) / tun.align);
}
END_TEST

START_TEST(test_cached_file_kept_whole)
{
	struct walk w;
	struct uo_advice a;

	truth = all_cached;
	w = stream(UO_READ, 0, 600 * MiB, MiB, _i);
	ck_assert(w.promoted);
	ck_assert_uint_eq(w.let_go, 0);
	ck_assert_uint_gt(w.kept, 200);
	a = uo_closing(&st, &tun);
	ck_assert_uint_eq(a.keep, (1ULL << ((a.drop.end - a.drop.start) / tun.align)) - 1);
}
END_TEST

START_TEST(test_partly_cached_file_keeps_its_part)
{
	struct walk w;

	truth = _i ? striped : middle_cached;
	w = stream(UO_READ, 0, 600 * MiB, MiB, false);
	ck_assert(w.promoted);
	ck_assert_uint_eq(w.wrongly_kept, 0);
	ck_assert_uint_eq(w.wrongly_dropped, 0);
	ck_assert_uint_gt(w.kept, 40);
	ck_assert_uint_gt(w.let_go, 100);
}
END_TEST

START_TEST(test_big_reads_leave_no_folio_misjudged)
{
	struct walk w;

	/* Reads of a whole window (copies are cut so) still probe beyond readahead. */
	truth = middle_cached;
	w = stream(UO_READ, 0, 600 * MiB, tun.window, _i);
	ck_assert_uint_eq(w.wrongly_kept, 0);
	ck_assert_uint_eq(w.wrongly_dropped, 0);
}
END_TEST

/*
 * The watcher's readers: once what lies ahead is probed, a drop at every
 * folio the reader passes, and still nothing misjudged; before the first
 * probe, a window at a time.
 */
START_TEST(test_read_step_drops_each_folio)
{
	struct walk w;

	tun.read_step = tun.align;
	truth = _i ? striped : middle_cached;
	w = stream(UO_READ, 0, 600 * MiB, MiB, false);
	ck_assert(w.promoted);
	ck_assert_uint_eq(w.wrongly_kept, 0);
	ck_assert_uint_eq(w.wrongly_dropped, 0);
	ck_assert_uint_le(w.max_behind, 2 * tun.align);
	ck_assert_uint_ge(w.drops, (600 * MiB - tun.threshold) / tun.align - 1);
	memset(&st, 0, sizeof(st));
	truth = NULL;
	/* Probes unanswered (no cachestat): a window at a time, as without the step. */
	w = stream(UO_READ, 0, 600 * MiB, MiB, false);
	ck_assert_uint_le(w.drops, 600 * MiB / tun.window + 1);
}
END_TEST

START_TEST(test_blind_stream_is_spared)
{
	struct walk w;

	blind = true;
	w = stream(UO_READ, 0, 600 * MiB, MiB, _i);
	ck_assert(w.promoted);
	ck_assert_uint_eq(w.drops, 0);
	ck_assert(uo_range_empty(uo_closing(&st, &tun).drop));
}
END_TEST

START_TEST(test_small_files_are_not_probed)
{
	uint64_t off;

	truth = all_cached;
	for (off = 0; off + 64 * 1024 <= tun.window - 64 * 1024; off += 64 * 1024)
		ck_assert(uo_range_empty(at(UO_READ, off, 64 * 1024).probe));
}
END_TEST

/* An overwrite of a file someone had cached leaves it cached; a new file goes. */
START_TEST(test_overwrite_keeps_what_was_cached)
{
	struct walk w;

	truth = _i ? all_cached : none_cached;
	w = stream(UO_WRITE, 0, GiB, MiB, false);
	ck_assert(w.promoted);
	ck_assert_uint_eq(w.wrongly_kept, 0);
	ck_assert_uint_eq(w.wrongly_dropped, 0);
	if (_i) {
		ck_assert_uint_eq(w.let_go, 0);
		ck_assert_uint_gt(w.kept, 400);
	} else {
		ck_assert_uint_eq(w.kept, 0);
		ck_assert_uint_gt(w.let_go, 400);
	}
}
END_TEST

/*
 * A follower of a file someone else appends to (tail -f of a growing log):
 * it reads 1 MiB at a time, caught up with the writer, so every probe lies
 * past the end of the file, as advise.c answers it: nothing cached,
 * everything unborn, the file ending at the cursor.  Nothing that did not
 * exist at the first probe is let go; the same reads of a cold file that
 * is all there are dropped.
 */
static uint64_t follow(bool growing, uint64_t *first_end)
{
	uint64_t off, f, i, let_go = 0;
	struct uo_advice a;

	*first_end = 0;
	for (off = 0; off < 256 * MiB; off += MiB) {
		a = at(UO_READ, off, MiB);
		for (f = a.drop.start / tun.align, i = 0; f < a.drop.end / tun.align; f++, i++)
			if (!((a.keep >> i) & 1) && f * tun.align >= *first_end)
				let_go++;
		if (!uo_range_empty(a.probe)) {
			struct uo_event ev = { .end = a.probe.end, .len = a.probe.end - a.probe.start,
					       .dir = UO_READ, .flags = UO_EV_PROBED };
			uint64_t n = ev.len / tun.align;

			if (growing) {
				ev.unborn = n >= 64 ? ~0ULL : (1ULL << n) - 1;
				ev.unborn_from = off + MiB;
				if (!*first_end)
					*first_end = (off + MiB + tun.align - 1) / tun.align * tun.align;
			}
			ck_assert(nothing(uo_observe(&st, &tun, &ev)));
		}
	}
	return let_go;
}

START_TEST(test_follower_keeps_what_was_not_there)
{
	uint64_t first_end, let_go = follow(true, &first_end);

	ck_assert_uint_gt(first_end, 0);
	ck_assert_uint_le(first_end, 16 * MiB);
	ck_assert_uint_eq(let_go, 0);
	setup();
	ck_assert_uint_gt(follow(false, &first_end), 100);
}
END_TEST

START_TEST(test_tree_needs_many_files_in_a_row)
{
	struct uo_tree tree = { 0 };
	uint64_t now = 1000000;
	int i;

	for (i = 1; i < UO_TREE_FILES; i++, now += 50)
		ck_assert(!uo_tree_closed(&tree, now));
	ck_assert(uo_tree_closed(&tree, now));
	ck_assert(uo_tree_closed(&tree, now + UO_TREE_GAP_MS));
	/* A pause longer than the gap: a new count, mode off. */
	ck_assert(!uo_tree_closed(&tree, now + 3 * UO_TREE_GAP_MS));
	/* A clock that went back counts as a pause. */
	ck_assert(!uo_tree_closed(&tree, now));
}
END_TEST

START_TEST(test_tree_slow_trickle_never_counts)
{
	struct uo_tree tree = { 0 };
	uint64_t now = 5;
	int i;

	/* A long-running program reading a file now and then is not streaming a tree. */
	for (i = 0; i < 10 * UO_TREE_FILES; i++, now += UO_TREE_GAP_MS + 1)
		ck_assert(!uo_tree_closed(&tree, now));
}
END_TEST

static void reset_truth(void)
{
	setup();
	truth = NULL;
	blind = false;
}

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *detect = tcase_create("detection");
	TCase *reads = tcase_create("reads");
	TCase *writes = tcase_create("writes");
	TCase *edges = tcase_create("edges");
	TCase *cache = tcase_create("cached before");

	tcase_add_checked_fixture(detect, setup, NULL);
	tcase_add_test(detect, test_read_below_threshold_is_left_alone);
	tcase_add_test(detect, test_read_stream_promoted_at_threshold);
	tcase_add_test(detect, test_cursor_reads_ask_position_once_per_window);
	tcase_add_test(detect, test_stdio_drift_still_sequential);
	tcase_add_test(detect, test_random_reads_never_a_stream);
	tcase_add_test(detect, test_explicit_gap_breaks_the_run);
	tcase_add_test(detect, test_rewind_starts_over);
	tcase_add_test(detect, test_cursor_going_back_starts_over);
	tcase_add_test(detect, test_direction_change_starts_over);
	suite_add_tcase(s, detect);

	tcase_add_checked_fixture(reads, setup, NULL);
	tcase_add_test(reads, test_read_stream_footprint_bounded_over_4gib);
	tcase_add_test(reads, test_cursor_stream_detected_and_dropped);
	tcase_add_test(reads, test_unaligned_start_is_rounded_inwards);
	tcase_add_test(reads, test_first_drop_starts_inside_the_run);
	tcase_add_test(reads, test_tiny_window_tuning);
	tcase_add_test(reads, test_huge_single_calls);
	tcase_add_test(reads, test_read_close_drops_tail);
	suite_add_tcase(s, reads);

	tcase_add_checked_fixture(writes, setup, NULL);
	tcase_add_test(writes, test_write_stream_flushes_then_drops_with_lag);
	tcase_add_test(writes, test_write_without_lag_still_flushes_first);
	tcase_add_test(writes, test_write_close_flushes_and_drops_the_tail);
	tcase_add_test(writes, test_writer_waits_only_past_its_budget);
	tcase_add_test(writes, test_writers_share_the_domain_budget);
	tcase_add_test(writes, test_writer_looks_every_folio_beside_others);
	tcase_add_test(writes, test_threshold_follows_the_memory);
	tcase_add_loop_test(writes, test_write_from_start_flushed_before_threshold, 0, 2);
	tcase_add_test(writes, test_write_elsewhere_waits_for_the_threshold);
	tcase_add_loop_test(writes, test_temp_file_left_to_the_kernel_while_memory_is_free, 0, 3);
	tcase_add_test(writes, test_temp_file_room_is_the_tree_rule);
	suite_add_tcase(s, writes);

	tcase_add_checked_fixture(cache, reset_truth, NULL);
	tcase_add_loop_test(cache, test_cold_file_dropped_whole, 0, 2);
	tcase_add_loop_test(cache, test_cached_file_kept_whole, 0, 2);
	tcase_add_loop_test(cache, test_partly_cached_file_keeps_its_part, 0, 2);
	tcase_add_loop_test(cache, test_big_reads_leave_no_folio_misjudged, 0, 2);
	tcase_add_loop_test(cache, test_read_step_drops_each_folio, 0, 2);
	tcase_add_loop_test(cache, test_blind_stream_is_spared, 0, 2);
	tcase_add_test(cache, test_small_files_are_not_probed);
	tcase_add_test(cache, test_follower_keeps_what_was_not_there);
	tcase_add_loop_test(cache, test_overwrite_keeps_what_was_cached, 0, 2);
	tcase_add_test(cache, test_tree_needs_many_files_in_a_row);
	tcase_add_test(cache, test_tree_slow_trickle_never_counts);
	suite_add_tcase(s, cache);

	tcase_add_checked_fixture(edges, setup, NULL);
	tcase_add_loop_test(edges, test_guard_one_direction, UO_READ, UO_WRITE + 1);
	tcase_add_test(edges, test_ignored_stays_ignored_until_reset);
	tcase_add_test(edges, test_bad_direction_is_ignored);
	tcase_add_test(edges, test_defaults_are_sane);
	tcase_add_loop_test(edges, test_quiet_path_matches_full_path, 0, 6);
	/* 300000 events a loop: seconds under ASan, more on a loaded machine. */
	tcase_set_timeout(edges, 120);
	suite_add_tcase(s, edges);
	return s;
}

int main(void)
{
	return uot_check_run(policy_suite(), false);
}
