/*
 * The tree rule (issue 12), from event sequences: which runs of whole
 * files are trees, read side and write side, whatever the files' sizes;
 * what is kept; how many written files may wait for their drop, and when
 * one was read since it was written; the files written before the run is
 * known to be a tree; and
 * the run shared by the short processes of one parent through the record,
 * with the written files they hand to each other and the head probe that
 * tells a source opened before the tree was cold.
 *
 * SPDX-License-Identifier: MIT
 */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uot_check.h"
#include "policy.h"

#define KiB	1024ULL
#define MiB	(1024ULL * KiB)

static struct uo_tuning t;
static struct uo_trees tr;
static uint64_t now;

static void setup(void)
{
	uo_tuning_defaults(&t);
	memset(&tr, 0, sizeof(tr));
	now = 1000000;
}

/* One file moved whole, 'gap' ms after the last, cold (read) or new (written). */
static struct uo_tree_advice whole(unsigned dir, uint64_t size, uint64_t gap)
{
	struct uo_tree_file f = {
		.size = size, .moved = size, .dir = (uint8_t)dir, .whole = 1,
		.opened = dir == UO_READ ? UO_OPEN_COLD : UO_OPEN_NEW,
	};

	now += gap;
	f.now_ms = now;
	f.key = now * 7919;
	return uo_tree_file_closed(&tr, &t, &f);
}

/* Files of 'size' in a row: the index of the first one the rule acts on, or -1. */
static int first_acted_on(unsigned dir, uint64_t size, int files)
{
	int i;

	for (i = 0; i < files; i++)
		if (whole(dir, size, 3).verdict != UO_TREE_LEAVE)
			return i;
	return -1;
}

/*
 * _i: a size from 64 KiB to 64 MiB.  Whatever the size, a run of whole
 * files is a tree, on both sides, and soon: after at most UO_TREE_FILES
 * files, and never later than a stream's threshold of bytes plus a file.
 */
START_TEST(test_any_size_is_a_tree_both_sides)
{
	static const uint64_t sizes[] = { 64 * KiB, 128 * KiB, 1 * MiB, 4 * MiB, 8 * MiB,
					  10 * MiB, 31 * MiB, 64 * MiB };
	uint64_t size = sizes[_i];
	unsigned dir;

	for (dir = UO_READ; dir <= UO_WRITE; dir++) {
		int first;

		setup();
		first = first_acted_on(dir, size, 200);
		ck_assert_msg(first >= 0, "%llu-byte files, dir %u: never a tree",
			      (unsigned long long)size, dir);
		ck_assert_int_lt(first, UO_TREE_FILES);
		/* The bytes let through before the tree was seen: about a stream's threshold. */
		ck_assert_uint_le((uint64_t)first * size,
				  t.threshold > (UO_TREE_STEPS - 1) * size ?
				  t.threshold + size : (UO_TREE_STEPS - 1) * size);
		ck_assert_int_eq(whole(dir, size, 3).verdict,
				 dir == UO_READ ? UO_TREE_DROP : UO_TREE_BEHIND);
	}
}
END_TEST

START_TEST(test_big_files_need_few_steps)
{
	/* 10 MiB files: a tree at the 4th (40 MiB), not the 32nd (320 MiB). */
	ck_assert_int_eq(first_acted_on(UO_READ, 10 * MiB, 40), UO_TREE_STEPS - 1);
	setup();
	/* 128 KiB files: 32 of them, 4 MiB, whatever the bytes. */
	ck_assert_int_eq(first_acted_on(UO_WRITE, 128 * KiB, 40), UO_TREE_FILES - 1);
}
END_TEST

START_TEST(test_small_and_partial_files_neither_count_nor_break)
{
	struct uo_tree_file part = { .size = 1 * MiB, .moved = 256 * KiB, .dir = UO_READ,
				     .whole = 0, .opened = UO_OPEN_COLD };
	struct uo_tree_file tiny = { .size = 4 * KiB, .moved = 4 * KiB, .dir = UO_READ,
				     .whole = 1, .opened = UO_OPEN_COLD };
	int i;

	for (i = 0; i < UO_TREE_FILES - 1; i++) {
		whole(UO_READ, 128 * KiB, 3);
		part.now_ms = tiny.now_ms = now;
		ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &part).verdict, UO_TREE_LEAVE);
		ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &tiny).verdict, UO_TREE_LEAVE);
	}
	ck_assert_uint_eq(tr.run[UO_READ].count, UO_TREE_FILES - 1);
	ck_assert_int_eq(whole(UO_READ, 128 * KiB, 3).verdict, UO_TREE_DROP);
	/* A whole file that lied about its size (moved less) is no step. */
	part.whole = 1;
	part.now_ms = now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &part).verdict, UO_TREE_LEAVE);
}
END_TEST

START_TEST(test_pause_ends_the_tree)
{
	struct uo_tree_advice a;

	ck_assert_int_ge(first_acted_on(UO_READ, 10 * MiB, 10), 0);
	a = whole(UO_READ, 10 * MiB, UO_TREE_GAP_MS + 1);
	ck_assert_int_eq(a.verdict, UO_TREE_LEAVE);
	ck_assert(a.changed);
	ck_assert(!tr.run[UO_READ].on);
	/* A clock gone back is a pause too. */
	ck_assert_int_ge(first_acted_on(UO_READ, 10 * MiB, 10), 0);
	now -= 10000;
	ck_assert_int_eq(whole(UO_READ, 10 * MiB, 0).verdict, UO_TREE_LEAVE);
	ck_assert(!tr.run[UO_READ].on);
}
END_TEST

START_TEST(test_slow_trickle_is_no_tree)
{
	int i;

	for (i = 0; i < 4 * UO_TREE_FILES; i++)
		ck_assert_int_eq(whole(UO_READ, 10 * MiB, UO_TREE_GAP_MS + 1).verdict, UO_TREE_LEAVE);
	ck_assert(!tr.run[UO_READ].on);
}
END_TEST

START_TEST(test_directions_are_separate)
{
	/* cp -r: reads and writes alternate; each side is its own run. */
	int i, first_r = -1, first_w = -1;

	for (i = 0; i < 10; i++) {
		if (whole(UO_READ, 10 * MiB, 1).verdict == UO_TREE_DROP && first_r < 0)
			first_r = i;
		if (whole(UO_WRITE, 10 * MiB, 1).verdict == UO_TREE_BEHIND && first_w < 0)
			first_w = i;
	}
	ck_assert_int_eq(first_r, UO_TREE_STEPS - 1);
	ck_assert_int_eq(first_w, UO_TREE_STEPS - 1);
	/* tar x writes only: its read side never turns on. */
	setup();
	ck_assert_int_ge(first_acted_on(UO_WRITE, 1 * MiB, 60), 0);
	ck_assert(!tr.run[UO_READ].on);
}
END_TEST

/* What was cached before stays; what a descriptor did not create is not dropped. */
START_TEST(test_keeps_what_was_cached)
{
	struct uo_tree_file f = { .size = 1 * MiB, .moved = 1 * MiB, .whole = 1 };
	static const uint8_t opened[] = { UO_OPEN_UNKNOWN, UO_OPEN_COLD, UO_OPEN_CACHED, UO_OPEN_NEW };
	static const uint8_t want[2][4] = {
		[UO_READ] = { UO_TREE_LEAVE, UO_TREE_DROP, UO_TREE_LEAVE, UO_TREE_LEAVE },
		[UO_WRITE] = { UO_TREE_LEAVE, UO_TREE_LEAVE, UO_TREE_LEAVE, UO_TREE_BEHIND },
	};
	unsigned dir, i;

	for (dir = UO_READ; dir <= UO_WRITE; dir++) {
		setup();
		ck_assert_int_ge(first_acted_on(dir, 1 * MiB, 60), 0);
		for (i = 0; i < 4; i++) {
			f.dir = (uint8_t)dir;
			f.opened = opened[i];
			f.now_ms = ++now;
			ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).verdict, want[dir][i]);
		}
	}
}
END_TEST

/* A file past a window was a stream: read, its pages already went; written and new, write-behind. */
START_TEST(test_streamed_files_count_and_stay_with_the_stream_rule)
{
	struct uo_tree_file f = { .size = 40 * MiB, .moved = 40 * MiB, .whole = 1, .streamed = 1 };
	int i;

	for (i = 0; i < UO_TREE_STEPS; i++) {
		f.dir = UO_READ;
		f.opened = UO_OPEN_COLD;
		f.now_ms = ++now;
		ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).verdict, UO_TREE_LEAVE);
		f.dir = UO_WRITE;
		f.opened = UO_OPEN_NEW;
		uo_tree_file_closed(&tr, &t, &f);
	}
	ck_assert(tr.run[UO_READ].on);
	f.opened = UO_OPEN_NEW;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).verdict, UO_TREE_BEHIND);
}
END_TEST

/* No dead zone: inside a tree a file is a stream from a window on. */
START_TEST(test_threshold_falls_to_a_window_inside_a_tree)
{
	ck_assert_uint_eq(uo_tree_threshold(&tr, &t, UO_READ), t.threshold);
	ck_assert(!uo_tree_wants_open_probe(&tr, UO_READ));
	first_acted_on(UO_READ, 10 * MiB, 10);
	ck_assert_uint_eq(uo_tree_threshold(&tr, &t, UO_READ), t.window);
	ck_assert_uint_eq(uo_tree_threshold(&tr, &t, UO_WRITE), t.threshold);
	ck_assert(uo_tree_wants_open_probe(&tr, UO_READ));
	ck_assert(!uo_tree_wants_open_probe(&tr, UO_WRITE));
	/* A window larger than the threshold never raises it. */
	t.window = 64 * MiB;
	ck_assert_uint_eq(uo_tree_threshold(&tr, &t, UO_READ), t.threshold);
}
END_TEST

/* The record said this tree came back: everything left to the kernel, and no open probes. */
START_TEST(test_tree_that_came_back_is_left)
{
	struct uo_tree_advice a;
	int i, asked = 0;

	for (i = 0; i < 40; i++) {
		a = whole(UO_READ, 1 * MiB, 2);
		if (a.ask_record) {
			asked++;
			ck_assert_int_eq(i, UO_TREE_ID_FILES - 1);
			uo_tree_came_back(&tr, UO_READ);
		}
		ck_assert_int_eq(a.verdict, UO_TREE_LEAVE);
	}
	ck_assert_int_eq(asked, 1);
	ck_assert_uint_eq(uo_tree_threshold(&tr, &t, UO_READ), t.threshold);
	ck_assert(!uo_tree_wants_open_probe(&tr, UO_READ));
}
END_TEST

/* The same files in the same order name the same tree; other files another. */
START_TEST(test_tree_id_is_the_first_files)
{
	struct uo_tree_file f = { .size = 1 * MiB, .moved = 1 * MiB, .whole = 1, .dir = UO_READ,
				  .opened = UO_OPEN_COLD };
	uint64_t ids[3];
	int run, i;

	for (run = 0; run < 3; run++) {
		setup();
		for (i = 0; i < 20; i++) {
			f.key = (uint64_t)(run == 2 && i == 1 ? 999 : i + 1);
			f.now_ms = ++now;
			uo_tree_file_closed(&tr, &t, &f);
		}
		ids[run] = tr.run[UO_READ].id;
	}
	ck_assert_uint_eq(ids[0], ids[1]);
	ck_assert_uint_ne(ids[0], ids[2]);
}
END_TEST

/* The deferred drop's ring: the newest always joins; files and bytes bound the rest. */
START_TEST(test_written_files_wait_within_a_budget)
{
	uint64_t budget = uo_behind_budget(&t, 256 * MiB), bytes = 0;
	unsigned n = 0, forgotten = 0, i;

	/* A quarter of a 256 MiB cgroup; two windows at least, 64 at most. */
	ck_assert_uint_eq(budget, 64 * MiB);
	ck_assert_uint_eq(uo_behind_budget(&t, 32 * MiB), 2 * t.window);
	ck_assert_uint_eq(uo_behind_budget(&t, 64ULL << 30), 64 * t.window);
	ck_assert_uint_eq(uo_behind_budget(&t, 0), 64 * t.window);
	/* Nothing waits: anything joins, however big. */
	ck_assert(!uo_behind_full(0, 0, UINT64_MAX, budget));
	/* Small files: the count bounds them. */
	for (i = 0; i < 3 * UO_BEHIND_FILES; i++) {
		while (uo_behind_full(n, bytes, 64 * KiB, budget)) {
			n--;
			bytes -= 64 * KiB;
			forgotten++;
		}
		n++;
		bytes += 64 * KiB;
		ck_assert_uint_le(n, UO_BEHIND_FILES);
	}
	ck_assert_uint_eq(n, UO_BEHIND_FILES);
	ck_assert_uint_eq(forgotten, 2 * UO_BEHIND_FILES);
	/* Big ones: the bytes.  Six of 10 MiB fit in 64 MiB, a seventh does not. */
	ck_assert(!uo_behind_full(5, 50 * MiB, 10 * MiB, budget));
	ck_assert(uo_behind_full(6, 60 * MiB, 10 * MiB, budget));
	/* One bigger than the budget waits alone. */
	ck_assert(uo_behind_full(1, MiB, 70 * MiB, budget));
	/* Sums never wrap. */
	ck_assert(uo_behind_full(1, UINT64_MAX, 5, budget));
	ck_assert(uo_behind_full(1, 5, UINT64_MAX, budget));
}
END_TEST

/*
 * A written file is left cached while three quarters of memory stay free
 * with its size taken once more: a 400 MiB tree on a 24 GiB machine with
 * 22 GiB free stays; in a 256 MiB cgroup with a third taken by a hot set
 * nothing does; the last files that would cross the line are dropped.
 */
START_TEST(test_written_files_stay_while_memory_is_mostly_free)
{
	const uint64_t GiB = 1024 * MiB, mem = 24 * GiB;
	uint64_t free = 22 * GiB, left = 0;

	ck_assert(uo_behind_room(free, mem, 10 * MiB));
	ck_assert(uo_behind_room(free, mem, 128 * KiB));
	/* Exactly three quarters after it: still room; one byte more is not. */
	ck_assert(uo_behind_room(19 * GiB, mem, GiB));
	ck_assert(!uo_behind_room(19 * GiB, mem, GiB + 1));
	/* Files of 10 MiB written into free memory: they stop at the line. */
	while (uo_behind_room(free, mem, 10 * MiB)) {
		free -= 10 * MiB;
		left += 10 * MiB;
		ck_assert_uint_le(left, 4 * GiB);
	}
	ck_assert_uint_ge(free, mem - mem / 4);
	ck_assert_uint_lt(free, mem - mem / 4 + 20 * MiB);
	/* The bench's cgroup: 256 MiB, 85 MiB hot and a few more in use. */
	ck_assert(!uo_behind_room(165 * MiB, 256 * MiB, 128 * KiB));
	ck_assert(!uo_behind_room(165 * MiB, 256 * MiB, 0));
	/* An empty cgroup inside a machine with less free: the smaller counts. */
	ck_assert(uo_behind_room(250 * MiB, 256 * MiB, MiB));
	ck_assert(!uo_behind_room(150 * MiB, 256 * MiB, MiB));
	/* MemFree past the cgroup's limit is taken as the limit. */
	ck_assert(uo_behind_room(GiB, 256 * MiB, MiB));
	ck_assert(!uo_behind_room(GiB, 256 * MiB, 65 * MiB));
	/* Unknown memory or free memory: never left. */
	ck_assert(!uo_behind_room(0, mem, MiB));
	ck_assert(!uo_behind_room(free, 0, MiB));
	ck_assert(!uo_behind_room(0, 0, 0));
	/* Larger than what is free; sums never wrap. */
	ck_assert(!uo_behind_room(MiB, mem, 2 * MiB));
	ck_assert(!uo_behind_room(mem, mem, UINT64_MAX));
}
END_TEST

/*
 * Files of 'size' moved whole 3 ms apart in 'dir' until the run is a tree:
 * each before it a candidate, the close that makes it one adopts them and
 * gets 'verdict' itself, and nothing after is a candidate.  When the first
 * was closed; tree_on_ms says when the run became a tree.
 */
static uint64_t tree_on_ms;

static uint64_t candidates_until_tree(unsigned dir, uint64_t size, uint8_t verdict)
{
	struct uo_tree_advice a;
	uint64_t first = 0;
	int kept = 0, i;

	for (i = 0; i < 200; i++) {
		a = whole(dir, size, 3);
		if (!first)
			first = now;
		ck_assert(!a.early_forget);
		if (a.early != UO_TREE_EARLY_KEEP)
			break;
		ck_assert_int_eq(a.verdict, UO_TREE_LEAVE);
		kept++;
	}
	/* The same close turns the tree on, adopts the candidates and is dropped itself. */
	ck_assert_int_eq(a.early, UO_TREE_EARLY_ADOPT);
	ck_assert(a.changed);
	ck_assert_int_eq(a.verdict, verdict);
	ck_assert_int_lt(kept, UO_TREE_FILES);
	ck_assert_int_ge(kept, UO_TREE_STEPS - 1);
	tree_on_ms = now;
	/* Inside the tree, nothing more is a candidate. */
	for (i = 0; i < 40; i++)
		ck_assert_int_eq(whole(dir, size, 3).early, UO_TREE_EARLY_NONE);
	return first;
}

/*
 * The files written before the run is known to be a tree: each new file
 * written whole is a candidate, and the close that makes the run a tree
 * hands all of them to the deferred drop, whatever the files' size.
 */
START_TEST(test_first_written_files_join_the_drop)
{
	static const uint64_t sizes[] = { 64 * KiB, 128 * KiB, 10 * MiB, 12 * MiB };
	unsigned k;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		setup();
		(void)candidates_until_tree(UO_WRITE, sizes[k], UO_TREE_BEHIND);
	}
}
END_TEST

/*
 * Written: only new files written whole are candidates, streams too (their
 * tail was in flight at their close).  Read: only files read whole, cold
 * when opened and not streams (what was cached before stays; a stream's
 * pages went as it read).
 */
START_TEST(test_only_new_written_files_are_candidates)
{
	struct uo_tree_file f = { .size = 1 * MiB, .moved = 1 * MiB, .whole = 1,
				  .dir = UO_WRITE };

	f.opened = UO_OPEN_UNKNOWN;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_NONE);
	f.opened = UO_OPEN_CACHED;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_NONE);
	f.opened = UO_OPEN_NEW;
	f.streamed = 1;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_KEEP);
	f.streamed = 0;
	f.whole = 0;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_NONE);
	f.whole = 1;
	f.size = f.moved = UO_TREE_MIN - 1;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_NONE);
	f.size = f.moved = 1 * MiB;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_KEEP);
}
END_TEST

START_TEST(test_only_cold_read_files_are_candidates)
{
	struct uo_tree_file f = { .size = 1 * MiB, .moved = 1 * MiB, .whole = 1,
				  .dir = UO_READ };
	static const uint8_t opened[] = { UO_OPEN_UNKNOWN, UO_OPEN_CACHED, UO_OPEN_NEW };
	unsigned k;

	for (k = 0; k < sizeof(opened); k++) {
		f.opened = opened[k];
		f.now_ms = ++now;
		ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_NONE);
	}
	f.opened = UO_OPEN_COLD;
	f.streamed = 1;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_NONE);
	f.streamed = 0;
	f.whole = 0;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_NONE);
	f.whole = 1;
	f.now_ms = ++now;
	ck_assert_int_eq(uo_tree_file_closed(&tr, &t, &f).early, UO_TREE_EARLY_KEEP);
}
END_TEST

/*
 * The files read before the run is a tree (cp -r's first sources): each
 * cold one is a candidate, and the close that makes the read run a tree
 * adopts them and is dropped itself; a read candidate is dropped only if
 * that close comes within UO_TREE_GAP_MS of its own.
 */
START_TEST(test_first_read_files_are_dropped_once_a_tree)
{
	static const uint64_t sizes[] = { 64 * KiB, 128 * KiB, 2 * MiB, 10 * MiB };
	unsigned k;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint64_t first;

		setup();
		first = candidates_until_tree(UO_READ, sizes[k], UO_TREE_DROP);
		/* Files 3 ms apart: the first candidate is well within the bound. */
		ck_assert(uo_tree_early_read_due(first, tree_on_ms));
	}
	/* Slow steps, each within the gap: the run is a tree, its oldest candidates too old. */
	setup();
	ck_assert_int_eq(whole(UO_READ, 10 * MiB, 3).early, UO_TREE_EARLY_KEEP);
	ck_assert_int_eq(whole(UO_READ, 10 * MiB, 1500).early, UO_TREE_EARLY_KEEP);
	ck_assert_int_eq(whole(UO_READ, 10 * MiB, 1500).early, UO_TREE_EARLY_KEEP);
	ck_assert_int_eq(whole(UO_READ, 10 * MiB, 1500).early, UO_TREE_EARLY_ADOPT);
	ck_assert(!uo_tree_early_read_due(now - 4500, now));
	ck_assert(!uo_tree_early_read_due(now - 3000, now));
	ck_assert(uo_tree_early_read_due(now - 1500, now));
	ck_assert(uo_tree_early_read_due(now - UO_TREE_GAP_MS, now));
	ck_assert(!uo_tree_early_read_due(now - UO_TREE_GAP_MS - 1, now));
	/* A clock that went back: not due. */
	ck_assert(!uo_tree_early_read_due(now + 1, now));
	/* A read run that pauses forgets its candidates, as a written one does. */
	setup();
	whole(UO_READ, 10 * MiB, 3);
	ck_assert(whole(UO_READ, 10 * MiB, UO_TREE_GAP_MS + 1).early_forget);
}
END_TEST

/*
 * A run that pauses before it is a tree forgets its candidates: a few
 * files saved now and then (an editor, a build) are never dropped.
 */
START_TEST(test_candidates_of_a_run_that_never_is_a_tree)
{
	struct uo_tree_advice a;
	int i, j;

	for (j = 0; j < 5; j++) {
		for (i = 0; i < UO_TREE_STEPS - 1; i++) {
			a = whole(UO_WRITE, 1 * MiB, i ? 3 : UO_TREE_GAP_MS + 1);
			ck_assert_int_eq(a.early, UO_TREE_EARLY_KEEP);
			ck_assert_int_eq(a.early_forget, j && !i);
			ck_assert_int_eq(a.verdict, UO_TREE_LEAVE);
		}
	}
	ck_assert(!tr.run[UO_WRITE].on);
	/* A tree that came back adopts nothing. */
	setup();
	for (i = 0; i < UO_TREE_STEPS - 1; i++)
		whole(UO_WRITE, 10 * MiB, 3);
	uo_tree_came_back(&tr, UO_WRITE);
	a = whole(UO_WRITE, 10 * MiB, 3);
	ck_assert(a.changed);
	ck_assert_int_eq(a.early, UO_TREE_EARLY_NONE);
	ck_assert_int_eq(a.verdict, UO_TREE_LEAVE);
}
END_TEST

START_TEST(test_written_file_read_since)
{
	ck_assert(uo_behind_read_since(2000000001, 2000000000));
	ck_assert(!uo_behind_read_since(2000000000, 2000000000));
	ck_assert(!uo_behind_read_since(1999999999, 2000000000));
	/* Times before 1970 (a file's times are the program's to set). */
	ck_assert(uo_behind_read_since(-5, -10));
	ck_assert(!uo_behind_read_since(-10, 0));
}
END_TEST

/*
 * The review's case: cp wrote d/f1 and handed it on; another program then
 * did rm d/f1; cp s/f8 d/f1.new; mv d/f1.new d/f1 (same size), and ext4
 * gave the new file the old inode number.  Only its birth and change
 * times tell it from the file handed.
 */
START_TEST(test_written_file_identity)
{
	const struct uo_behind_id was = { 2049, 12, 128 * KiB, 1700000000123456789ULL,
					  1700000001000000001LL };
	struct uo_behind_id is = was, ring = was;

	ck_assert(uo_behind_same(&was, &is));
	/* Another inode number, device or size. */
	is.ino++;
	ck_assert(!uo_behind_same(&was, &is));
	is = was;
	is.dev++;
	ck_assert(!uo_behind_same(&was, &is));
	is = was;
	is.size--;
	ck_assert(!uo_behind_same(&was, &is));
	/* The same number, a new inode: born later, changed later. */
	is = was;
	is.btime_ns += 5000000000ULL;
	is.ctime_ns += 5000000000LL;
	ck_assert(!uo_behind_same(&was, &is));
	/* Born later alone tells it. */
	is = was;
	is.btime_ns++;
	ck_assert(!uo_behind_same(&was, &is));
	/* Rewritten in place, chmod, renamed, times set: changed since the hand-over. */
	is = was;
	is.ctime_ns++;
	ck_assert(!uo_behind_same(&was, &is));
	/* A filesystem that keeps no birth time: the change time alone tells. */
	ring.btime_ns = 0;
	is = ring;
	ck_assert(uo_behind_same(&ring, &is));
	is.ctime_ns++;
	ck_assert(!uo_behind_same(&ring, &is));
	/* Unknown then, known is (or the reverse): not taken for the same. */
	is = ring;
	is.btime_ns = was.btime_ns;
	ck_assert(!uo_behind_same(&ring, &is));
	is = was;
	is.btime_ns = 0;
	ck_assert(!uo_behind_same(&was, &is));
	/*
	 * A process's own ring records no change time (tar x sets times after
	 * its close): any change time is the same file, the birth time decides.
	 */
	ring = was;
	ring.ctime_ns = 0;
	is = was;
	is.ctime_ns += 7;
	ck_assert(uo_behind_same(&ring, &is));
	is.btime_ns += 1;
	ck_assert(!uo_behind_same(&ring, &is));
}
END_TEST

/* find -exec cp: each process moves one file; the parent's run goes on through the record. */
START_TEST(test_short_processes_share_one_run)
{
	struct uo_tree_share rec;
	uint64_t owner = 0x1234;
	int p, first = -1;

	memset(&rec, 0, sizeof(rec));
	for (p = 0; p < 40; p++) {
		struct uo_trees mine;
		struct uo_tree_file f = { .size = 128 * KiB, .moved = 128 * KiB, .whole = 1,
					  .dir = UO_READ, .opened = UO_OPEN_COLD };

		memset(&mine, 0, sizeof(mine));
		now += 5;
		uo_tree_share_get(&mine.run[UO_READ], &t, &rec, UO_READ, owner, now);
		f.now_ms = now;
		if (uo_tree_file_closed(&mine, &t, &f).verdict == UO_TREE_DROP && first < 0)
			first = p;
		uo_tree_share_put(&rec, &mine.run[UO_READ], UO_READ, owner);
	}
	ck_assert_int_eq(first, UO_TREE_FILES - 1);
}
END_TEST

START_TEST(test_share_refuses_what_is_not_sound)
{
	struct uo_tree_run run, src = { .last_ms = 5000, .bytes = 40 * MiB, .count = 5, .on = 1 };
	struct uo_tree_share rec, bad;
	unsigned i;

	uo_tree_share_put(&rec, &src, UO_WRITE, 77);
	memset(&run, 0, sizeof(run));
	ck_assert(uo_tree_share_get(&run, &t, &rec, UO_WRITE, 77, 5100));
	ck_assert_uint_eq(run.count, 5);
	ck_assert(run.on);
	/* Another parent, the other direction, no owner, too old, from the future. */
	memset(&run, 0, sizeof(run));
	ck_assert(!uo_tree_share_get(&run, &t, &rec, UO_WRITE, 78, 5100));
	ck_assert(!uo_tree_share_get(&run, &t, &rec, UO_READ, 77, 5100));
	ck_assert(!uo_tree_share_get(&run, &t, &rec, UO_WRITE, 0, 5100));
	ck_assert(!uo_tree_share_get(&run, &t, &rec, UO_WRITE, 77, 5000 + UO_TREE_GAP_MS + 1));
	ck_assert(!uo_tree_share_get(&run, &t, &rec, UO_WRITE, 77, 4999));
	ck_assert_uint_eq(run.count, 0);
	/* Every single flipped bit (a torn or damaged entry) is refused. */
	for (i = 0; i < sizeof(rec) * 8; i++) {
		bad = rec;
		((unsigned char *)&bad)[i / 8] ^= (unsigned char)(1u << (i % 8));
		memset(&run, 0, sizeof(run));
		ck_assert_msg(!uo_tree_share_get(&run, &t, &bad, UO_WRITE, 77, 5100) ||
			      !memcmp(&bad, &rec, sizeof(rec)), "bit %u", i);
	}
	/* A count out of range, even with a good check word. */
	src.count = UO_TREE_FILES + 1;
	uo_tree_share_put(&bad, &src, UO_WRITE, 77);
	ck_assert(!uo_tree_share_get(&run, &t, &bad, UO_WRITE, 77, 5100));
	/* 'on' is worked out again: a forged small run is no tree. */
	src.count = 1;
	src.bytes = 64 * KiB;
	uo_tree_share_put(&bad, &src, UO_WRITE, 77);
	ck_assert(uo_tree_share_get(&run, &t, &bad, UO_WRITE, 77, 5100));
	ck_assert(!run.on);
	/* Our own run, newer: nothing taken. */
	run.count = 3;
	run.last_ms = 5100;
	ck_assert(!uo_tree_share_get(&run, &t, &rec, UO_WRITE, 77, 5100));
	ck_assert_uint_eq(run.count, 3);
}
END_TEST

/* A head probe as guard.c makes it: [start, start + len) before the first read, 'cached' folios. */
static enum uo_opened head_probe(uint64_t start, uint64_t len, uint64_t cached, uint8_t flags,
				 uint64_t size)
{
	struct uo_stream st;
	struct uo_event ev = { .end = start + len, .len = len, .dir = UO_READ, .flags = flags,
			       .cached = cached };

	memset(&st, 0, sizeof(st));
	uo_observe(&st, &t, &ev);
	return uo_opened_by_head_probe(&st, size);
}

/* The same for a file of 'size' as advise.c answers: the folios wholly past its end unborn. */
static enum uo_opened head_probe_past(uint64_t len, uint64_t cached, uint64_t size)
{
	struct uo_stream st;
	struct uo_event ev = { .end = len, .len = len, .dir = UO_READ, .flags = UO_EV_PROBED,
			       .cached = cached, .unborn_from = size };
	uint64_t i;

	for (i = 0; i < len / t.align; i++)
		if (i * t.align >= size)
			ev.unborn |= 1ULL << i;
	memset(&st, 0, sizeof(st));
	uo_observe(&st, &t, &ev);
	return uo_opened_by_head_probe(&st, size);
}

/* find -exec cp's source, opened before its process knew of the tree: the head probe tells. */
START_TEST(test_head_probe_tells_cold_from_cached)
{
	uint64_t probe = t.window + t.lookahead;

	ck_assert_int_eq(head_probe(0, probe, 0, UO_EV_PROBED, 10 * MiB), UO_OPEN_COLD);
	ck_assert_int_eq(head_probe(0, probe, 0, UO_EV_PROBED, probe), UO_OPEN_COLD);
	/* One folio cached, anywhere: someone's. */
	ck_assert_int_eq(head_probe(0, probe, 1ULL << 3, UO_EV_PROBED, 10 * MiB), UO_OPEN_CACHED);
	/* A file longer than the probe: the rest was not seen. */
	ck_assert_int_eq(head_probe(0, probe, 0, UO_EV_PROBED, probe + 1), UO_OPEN_UNKNOWN);
	/* Not from the start, not asked, could not be told. */
	ck_assert_int_eq(head_probe(t.align, probe, 0, UO_EV_PROBED, 1 * MiB), UO_OPEN_UNKNOWN);
	ck_assert_int_eq(head_probe(0, probe, 0, UO_EV_BLIND, 1 * MiB), UO_OPEN_UNKNOWN);
	ck_assert_int_eq(head_probe(0, probe, 0, UO_EV_NOPROBE, 1 * MiB), UO_OPEN_UNKNOWN);
	ck_assert_int_eq(head_probe(0, 0, 0, 0, 1 * MiB), UO_OPEN_UNKNOWN);
	/*
	 * A small file's probe runs far past its end, and advise.c says so:
	 * those folios are kept, but they are not its pages cached.
	 */
	ck_assert_int_eq(head_probe_past(probe, 0, 128 * 1024), UO_OPEN_COLD);
	/* Only a cold file is dropped: cached or not told, it stays. */
	ck_assert_int_ne(head_probe_past(probe, 1, 128 * 1024), UO_OPEN_COLD);
	ck_assert_int_eq(head_probe_past(probe, 0, 3 * MiB), UO_OPEN_COLD);
}
END_TEST

/*
 * xargs -n1 sh -c 'cp "$0" DST/': each cp's parent is a shell run for that
 * one command; the run goes by that shell's parent.  Not a shell running a
 * loop, a list or a script, not another program, not a cut-short line.
 */
#define CMDLINE(s)	s, sizeof(s) - 1

START_TEST(test_one_shell_per_file_goes_by_its_parent)
{
	ck_assert(uo_sib_through_shell("sh", CMDLINE("sh\0-c\0cp \"$0\" dst/\0src/f1\0")));
	ck_assert(uo_sib_through_shell("dash", CMDLINE("/bin/sh\0-c\0cp \"$1\" d/\0_\0a\0")));
	ck_assert(uo_sib_through_shell("bash", CMDLINE("bash\0-c\0cp a b\0")));
	ck_assert(!uo_sib_through_shell("sh", CMDLINE("sh\0-c\0for f; do cp \"$f\" d/; done\0")));
	ck_assert(!uo_sib_through_shell("sh", CMDLINE("sh\0-c\0cp a b && cp c d\0")));
	ck_assert(!uo_sib_through_shell("sh", CMDLINE("sh\0-c\0tar cf - . | zstd\0")));
	ck_assert(!uo_sib_through_shell("sh", CMDLINE("sh\0loop.sh\0")));
	ck_assert(!uo_sib_through_shell("sh", CMDLINE("sh\0-c\0")));
	ck_assert(!uo_sib_through_shell("sh", CMDLINE("sh\0-c\0cp a b")));	/* cut short */
	ck_assert(!uo_sib_through_shell("xargs", CMDLINE("xargs\0-c\0cp a b\0")));
	ck_assert(!uo_sib_through_shell("shx", CMDLINE("shx\0-c\0cp a b\0")));
	ck_assert(!uo_sib_through_shell("sh", "", 0));
}
END_TEST

/*
 * "--" ends the shell's options: the command is the argument after it
 * (sh -c -- 'for f; do ...; done' runs a loop, and is the parent).  Taken
 * for the command itself, "--" has no ; & | and a loop shell was skipped.
 */
START_TEST(test_shell_options_end_is_not_the_command)
{
	ck_assert(!uo_sib_through_shell("sh", CMDLINE("sh\0-c\0--\0for f; do cp \"$f\" d/; done\0"
						       "sh\0a\0")));
	/* A single command after "--" is still one. */
	ck_assert(uo_sib_through_shell("sh", CMDLINE("sh\0-c\0--\0cp \"$0\" d/\0a\0")));
}
END_TEST

static struct uo_handoff_file handed(uint64_t owner, uint64_t at, const char *path)
{
	struct uo_handoff_file e;

	memset(&e, 0, sizeof(e));
	e.owner = owner;
	e.handed_ms = at;
	e.dev = 2049;
	e.ino = 12;
	e.size = 128 * KiB;
	e.btime_ns = 1700000000123456789ULL;
	e.ctime_ns = 1700000001000000001LL;
	strcpy(e.path, path);
	uo_handoff_seal(&e);
	return e;
}

/* The record's entry before birth and change times were in it, and its seal. */
struct handoff_v1 {
	uint64_t owner, handed_ms, dev, ino, size;
	uint32_t flags, pad;
	char path[UO_HANDOFF_PATH];
	uint64_t check;
};

static uint64_t mix_v1(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static void seal_v1(struct handoff_v1 *e)
{
	uint64_t w[offsetof(struct handoff_v1, check) / 8], h = 0x68616e646f666631ULL;
	size_t i;

	memcpy(w, e, sizeof(w));
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		h = mix_v1(h, w[i]);
	e->check = h;
}

START_TEST(test_handoff_refuses_what_is_not_sound)
{
	struct uo_handoff_file e = handed(77, 5000, "/home/u/dst/a"), bad;
	unsigned i;

	ck_assert(uo_handoff_sound(&e, 77, 5000));
	ck_assert(uo_handoff_sound(&e, 77, 5000 + UO_TREE_GAP_MS));
	/* Another parent, no owner, too old, from the future. */
	ck_assert(!uo_handoff_sound(&e, 78, 5100));
	ck_assert(!uo_handoff_sound(&e, 0, 5100));
	ck_assert(!uo_handoff_sound(&e, 77, 5000 + UO_TREE_GAP_MS + 1));
	ck_assert(!uo_handoff_sound(&e, 77, 4999));
	/* Every single flipped bit (a torn or damaged entry) is refused. */
	for (i = 0; i < sizeof(e) * 8; i++) {
		bad = e;
		((unsigned char *)&bad)[i / 8] ^= (unsigned char)(1u << (i % 8));
		ck_assert_msg(!uo_handoff_sound(&bad, 77, 5100), "bit %u", i);
	}
	/* Sealed, but no absolute path, no end to it, no size, unknown flags. */
	bad = handed(77, 5000, "dst/a");
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	bad = handed(77, 5000, "/a");
	memset(bad.path, 'x', sizeof(bad.path));
	bad.path[0] = '/';
	uo_handoff_seal(&bad);
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	bad = handed(77, 5000, "/a");
	bad.size = 0;
	uo_handoff_seal(&bad);
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	bad = handed(77, 5000, "/a");
	bad.flags = 8;
	uo_handoff_seal(&bad);
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	/*
	 * A read candidate: closed at most UO_TREE_GAP_MS before its hand-over,
	 * and nothing else; any other entry has no age.
	 */
	bad = handed(77, 5000, "/a");
	bad.flags = UO_HANDOFF_READ;
	bad.age_ms = 300;
	uo_handoff_seal(&bad);
	ck_assert(uo_handoff_sound(&bad, 77, 5100));
	bad.age_ms = UO_TREE_GAP_MS + 1;
	uo_handoff_seal(&bad);
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	bad.age_ms = 300;
	bad.flags = UO_HANDOFF_READ | UO_HANDOFF_EARLY;
	uo_handoff_seal(&bad);
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	bad = handed(77, 5000, "/a");
	bad.age_ms = 1;
	uo_handoff_seal(&bad);
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	/* No change time recorded at the hand-over. */
	bad = handed(77, 5000, "/a");
	bad.ctime_ns = 0;
	uo_handoff_seal(&bad);
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	/*
	 * An entry an older library wrote, read as one of this layout: at the
	 * start of an entry, or at any word of it (the blocks moved too).
	 */
	{
		unsigned char raw[3 * sizeof(struct uo_handoff_file)];
		struct handoff_v1 v1;
		size_t at;

		memset(&v1, 0, sizeof(v1));
		v1.owner = 77;
		v1.handed_ms = 5000;
		v1.dev = 2049;
		v1.ino = 12;
		v1.size = 128 * KiB;
		strcpy(v1.path, "/home/u/dst/a");
		seal_v1(&v1);
		memset(raw, 0, sizeof(raw));
		memcpy(raw + sizeof(struct uo_handoff_file), &v1, sizeof(v1));
		for (at = 0; at + sizeof(bad) <= sizeof(raw); at += 8) {
			memcpy(&bad, raw + at, sizeof(bad));
			ck_assert_msg(!uo_handoff_sound(&bad, 77, 5100), "at %zu", at);
		}
		/* (Sealed as this layout, the same entry is sound: the seal tells.) */
		bad = handed(77, 5000, "/home/u/dst/a");
		ck_assert(uo_handoff_sound(&bad, 77, 5100));
	}
	/* An all-zero block (a new record) holds nothing. */
	memset(&bad, 0, sizeof(bad));
	ck_assert(!uo_handoff_sound(&bad, 77, 5100));
	/* The mark of a failed writeback names no file, and is taken. */
	memset(&bad, 0, sizeof(bad));
	bad.owner = 77;
	bad.handed_ms = 5000;
	bad.flags = UO_HANDOFF_FAILED;
	uo_handoff_seal(&bad);
	ck_assert(uo_handoff_sound(&bad, 77, 5100));
}
END_TEST

/*
 * find -exec cp of 10 MiB files: each process reads one file and writes
 * one, the run continued through the record.  The written side is a tree
 * from the UO_TREE_STEPS-th process on, which adopts the candidates the
 * processes before it handed; the read side from the same process on, its
 * source known cold by the head probe.
 */
START_TEST(test_short_copiers_share_both_sides)
{
	struct uo_tree_share rec[2];
	uint64_t owner = 0xfeed;
	int p, first_read = -1, first_write = -1, adopted = -1, kept = 0;
	int adopted_read = -1, kept_read = 0;

	memset(rec, 0, sizeof(rec));
	for (p = 0; p < 10; p++) {
		struct uo_trees mine;
		struct uo_tree_file w = { .size = 10 * MiB, .moved = 10 * MiB, .whole = 1,
					  .dir = UO_WRITE, .opened = UO_OPEN_NEW };
		struct uo_tree_file r = { .size = 10 * MiB, .moved = 10 * MiB, .whole = 1,
					  .dir = UO_READ };
		struct uo_tree_advice a;
		unsigned d;

		memset(&mine, 0, sizeof(mine));
		now += 40;
		for (d = UO_READ; d <= UO_WRITE; d++)
			uo_tree_share_get(&mine.run[d], &t, &rec[d], d, owner, now);
		r.opened = (uint8_t)head_probe(0, t.window + t.lookahead, 0, UO_EV_PROBED, r.size);
		w.now_ms = r.now_ms = now;
		a = uo_tree_file_closed(&mine, &t, &w);
		if (a.early == UO_TREE_EARLY_KEEP)
			kept++;
		if (a.early == UO_TREE_EARLY_ADOPT && adopted < 0)
			adopted = p;
		if (a.verdict == UO_TREE_BEHIND && first_write < 0)
			first_write = p;
		a = uo_tree_file_closed(&mine, &t, &r);
		if (a.verdict == UO_TREE_DROP && first_read < 0)
			first_read = p;
		/* Each source before the tree is a read candidate; the tree's first adopts them. */
		if (a.early == UO_TREE_EARLY_KEEP)
			kept_read++;
		if (a.early == UO_TREE_EARLY_ADOPT && adopted_read < 0)
			adopted_read = p;
		for (d = UO_READ; d <= UO_WRITE; d++)
			uo_tree_share_put(&rec[d], &mine.run[d], d, owner);
	}
	ck_assert_int_eq(first_write, UO_TREE_STEPS - 1);
	ck_assert_int_eq(adopted, UO_TREE_STEPS - 1);
	ck_assert_int_eq(kept, UO_TREE_STEPS - 1);
	ck_assert_int_eq(first_read, UO_TREE_STEPS - 1);
	ck_assert_int_eq(adopted_read, UO_TREE_STEPS - 1);
	ck_assert_int_eq(kept_read, UO_TREE_STEPS - 1);
}
END_TEST

/*
 * A process that moved many files itself (tar x) shares nothing: the next
 * program its parent starts at once (a build writing 20 objects) is no
 * tree, however soon it comes.
 */
START_TEST(test_a_long_sibling_shares_nothing)
{
	struct uo_tree_share rec;
	struct uo_trees mine;
	uint64_t owner = 0xcafe;
	int i, acted = 0;

	for (i = 0; i < 40; i++)
		whole(UO_WRITE, 128 * KiB, 3);
	ck_assert(tr.run[UO_WRITE].on);
	uo_tree_share_put(&rec, &tr.run[UO_WRITE], UO_WRITE, owner);
	memset(&mine, 0, sizeof(mine));
	now += 5;
	ck_assert(!uo_tree_share_get(&mine.run[UO_WRITE], &t, &rec, UO_WRITE, owner, now));
	tr = mine;
	for (i = 0; i < 20; i++)
		if (whole(UO_WRITE, 256 * KiB, 3).verdict != UO_TREE_LEAVE)
			acted++;
	ck_assert_int_eq(acted, 0);
	/* A short one (find -exec cp: one file each) shares. */
	memset(&mine, 0, sizeof(mine));
	tr = mine;
	whole(UO_WRITE, 128 * KiB, 3);
	uo_tree_share_put(&rec, &tr.run[UO_WRITE], UO_WRITE, owner);
	memset(&mine, 0, sizeof(mine));
	ck_assert(uo_tree_share_get(&mine.run[UO_WRITE], &t, &rec, UO_WRITE, owner, now + 5));
	ck_assert_uint_eq(mine.run[UO_WRITE].count, 1);
	ck_assert_uint_eq(mine.run[UO_WRITE].own, 0);
}
END_TEST

/* A parent whose processes come seconds apart (an interactive shell) never makes a tree. */
START_TEST(test_siblings_far_apart_share_nothing)
{
	struct uo_tree_share rec;
	uint64_t owner = 0xbeef;
	int p, acted = 0;

	memset(&rec, 0, sizeof(rec));
	for (p = 0; p < 100; p++) {
		struct uo_trees mine;
		struct uo_tree_file f = { .size = 10 * MiB, .moved = 10 * MiB, .whole = 1,
					  .dir = UO_WRITE, .opened = UO_OPEN_NEW };

		memset(&mine, 0, sizeof(mine));
		now += UO_TREE_GAP_MS + 1;
		uo_tree_share_get(&mine.run[UO_WRITE], &t, &rec, UO_WRITE, owner, now);
		f.now_ms = now;
		if (uo_tree_file_closed(&mine, &t, &f).verdict != UO_TREE_LEAVE)
			acted++;
		uo_tree_share_put(&rec, &mine.run[UO_WRITE], UO_WRITE, owner);
	}
	ck_assert_int_eq(acted, 0);
}
END_TEST

START_TEST(test_unguarded_direction_is_never_a_tree)
{
	t.guard = UO_GUARD_READ;
	ck_assert_int_eq(first_acted_on(UO_WRITE, 10 * MiB, 50), -1);
	ck_assert_int_ge(first_acted_on(UO_READ, 10 * MiB, 50), 0);
}
END_TEST

static Suite *tree_rule_suite(void)
{
	Suite *s = suite_create("tree rule");
	TCase *detect = tcase_create("detection");
	TCase *act = tcase_create("what goes");
	TCase *share = tcase_create("many processes");

	tcase_add_checked_fixture(detect, setup, NULL);
	tcase_add_loop_test(detect, test_any_size_is_a_tree_both_sides, 0, 8);
	tcase_add_test(detect, test_big_files_need_few_steps);
	tcase_add_test(detect, test_small_and_partial_files_neither_count_nor_break);
	tcase_add_test(detect, test_pause_ends_the_tree);
	tcase_add_test(detect, test_slow_trickle_is_no_tree);
	tcase_add_test(detect, test_directions_are_separate);
	tcase_add_test(detect, test_unguarded_direction_is_never_a_tree);
	suite_add_tcase(s, detect);

	tcase_add_checked_fixture(act, setup, NULL);
	tcase_add_test(act, test_keeps_what_was_cached);
	tcase_add_test(act, test_streamed_files_count_and_stay_with_the_stream_rule);
	tcase_add_test(act, test_threshold_falls_to_a_window_inside_a_tree);
	tcase_add_test(act, test_tree_that_came_back_is_left);
	tcase_add_test(act, test_tree_id_is_the_first_files);
	tcase_add_test(act, test_written_files_wait_within_a_budget);
	tcase_add_test(act, test_written_file_read_since);
	tcase_add_test(act, test_written_file_identity);
	tcase_add_test(act, test_written_files_stay_while_memory_is_mostly_free);
	tcase_add_test(act, test_first_written_files_join_the_drop);
	tcase_add_test(act, test_only_new_written_files_are_candidates);
	tcase_add_test(act, test_only_cold_read_files_are_candidates);
	tcase_add_test(act, test_first_read_files_are_dropped_once_a_tree);
	tcase_add_test(act, test_candidates_of_a_run_that_never_is_a_tree);
	suite_add_tcase(s, act);

	tcase_add_checked_fixture(share, setup, NULL);
	tcase_add_test(share, test_short_processes_share_one_run);
	tcase_add_test(share, test_share_refuses_what_is_not_sound);
	tcase_add_test(share, test_head_probe_tells_cold_from_cached);
	tcase_add_test(share, test_handoff_refuses_what_is_not_sound);
	tcase_add_test(share, test_short_copiers_share_both_sides);
	tcase_add_test(share, test_siblings_far_apart_share_nothing);
	tcase_add_test(share, test_a_long_sibling_shares_nothing);
	tcase_add_test(share, test_one_shell_per_file_goes_by_its_parent);
	tcase_add_test(share, test_shell_options_end_is_not_the_command);
	suite_add_tcase(s, share);
	return s;
}

int main(void)
{
	return uot_check_run(tree_rule_suite(), false);
}
