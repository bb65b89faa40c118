/*
 * The stream policy: which descriptors are streams, and what to drop or
 * flush behind them.  Pure: no system calls, no globals, so every decision
 * can be replayed in a unit test from a list of events.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stddef.h>
#include <string.h>

#include "policy.h"

void uo_tuning_defaults(struct uo_tuning *out)
{
	const struct uo_tuning defaults = UO_TUNING_DEFAULTS;

	*out = defaults;
}

static uint64_t uo_align_down(uint64_t x, uint64_t a)
{
	return a ? x - x % a : x;
}

static uint64_t uo_align_up(uint64_t x, uint64_t a)
{
	uint64_t r = a ? x % a : 0;

	return r ? x + (a - r) : x;
}

static bool uo_near(uint64_t a, uint64_t b, uint64_t slack)
{
	return a >= b ? a - b <= slack : b - a <= slack;
}

void uo_reset(struct uo_stream *st)
{
	memset(st, 0, sizeof(*st));
}

void uo_ignore(struct uo_stream *st)
{
	uo_reset(st);
	st->state = UO_IGNORED;
}

static void uo_new_run(struct uo_stream *st, uint8_t dir, uint64_t start, uint64_t end)
{
	/*
	 * A run starting where a probe already looked (the probe of a
	 * descriptor's head, made before its first read) keeps what it learnt:
	 * that was seen before the stream came, and cannot be seen again.
	 */
	bool probed_here = st->probed && st->dir == dir && start >= st->probe_floor &&
			   start < st->probed;

	st->state = UO_TRACKING;
	st->dir = dir;
	st->run_start = start;
	st->next = end;
	st->positioned = 1;
	st->dropped = 0;
	st->flushed = 0;
	if (probed_here)
		return;
	/* What was learnt of residency was about another part of the file. */
	st->probed = 0;
	st->probe_floor = 0;
	st->cached = 0;
	st->mask_base = 0;
	st->head_cached = 0;
	st->some_cached = 0;
}

/* Was this folio cached before the stream reached it? */
static bool uo_was_cached(const struct uo_stream *st, const struct uo_tuning *t, uint64_t folio)
{
	if (st->blind)
		return true;
	if (!st->probed)
		return false;
	if (folio < st->mask_base || folio * t->align >= st->probed)
		return st->head_cached;
	return (st->cached >> (folio - st->mask_base)) & 1;
}

/* The folios of [start, end) to keep, and end cut to what one mask can say. */
static uint64_t uo_keep_mask(const struct uo_stream *st, const struct uo_tuning *t,
			     uint64_t start, uint64_t *end)
{
	uint64_t first = start / t->align, keep = 0, i;

	if (*end > start + UO_MEMORY_FOLIOS * t->align)
		*end = start + UO_MEMORY_FOLIOS * t->align;
	for (i = 0; first + i < (*end + t->align - 1) / t->align; i++)
		if (uo_was_cached(st, t, first + i))
			keep |= 1ULL << i;
	return keep;
}

/*
 * Ask for the residency of what lies a lookahead ahead of the cursor, once
 * the run is a window long (small files are never probed).  Asked a window
 * early, two windows at a time: a call moving up to a window then never
 * carries the cursor to less than a lookahead from unprobed folios, where
 * readahead (or the writer itself) would make them look cached.
 */
static void uo_maybe_probe(struct uo_stream *st, const struct uo_tuning *t, uint64_t end,
			   struct uo_advice *adv)
{
	uint64_t ahead = uo_lookahead(t, st->dir);
	uint64_t start = uo_align_up(end + ahead, t->align);

	if (st->blind || st->noprobe || end - st->run_start < t->window ||
	    end + ahead + t->window < st->probed)
		return;
	if (start < st->probed)
		start = st->probed;
	adv->probe.start = start;
	adv->probe.end = uo_align_up(end + ahead + 2 * t->window, t->align);
	if (adv->probe.end > start + UO_MEMORY_FOLIOS * t->align)
		adv->probe.end = start + UO_MEMORY_FOLIOS * t->align;
}

static unsigned uo_popcount(uint64_t x)
{
	return (unsigned)__builtin_popcountll(x);
}

/*
 * The answer to a probe: remember it, sliding the mask forward if needed.
 * Folios skipped between two probes (a read bigger than a window) stay 0:
 * not known to have been cached, so dropped as before.  Folios past the
 * end of the file are kept as if cached; what was read before the first
 * probe is judged by the folios of the file only (a small file's head
 * probe runs far past its end, and a cold one must still read as cold).
 */
static void uo_probed(struct uo_stream *st, const struct uo_tuning *t, const struct uo_event *ev)
{
	uint64_t start = ev->end - ev->len, first = start / t->align, last, n, shift, in, inside;
	uint64_t cached = ev->cached, unborn = ev->unborn, from, extra;

	if (ev->flags & UO_EV_BLIND) {
		st->blind = 1;
		return;
	}
	if (ev->flags & UO_EV_NOPROBE) {
		st->noprobe = 1;
		return;
	}
	n = (ev->len + t->align - 1) / t->align;
	if (!ev->len || n > UO_MEMORY_FOLIOS || start % t->align || st->dir != ev->dir ||
	    start < st->probed)
		return;
	/*
	 * A first probe that found the file ending before it: what lies
	 * between the end and the probe did not exist either (a follower
	 * that caught up with the writer reads it as it is written), and is
	 * known unborn down to there, if one mask can say it.
	 */
	from = uo_align_up(ev->unborn_from, t->align) / t->align;
	if (!st->probed && ev->unborn_from && from < first && first - from + n <= UO_MEMORY_FOLIOS) {
		extra = first - from;
		cached <<= extra;
		unborn = unborn << extra | ((1ULL << extra) - 1);
		n += extra;
		first = from;
		start = from * t->align;
	}
	inside = ~unborn & (n < 64 ? (1ULL << n) - 1 : ~0ULL);
	if (!st->probed) {
		st->probe_floor = start;
		st->mask_base = first;
		st->cached = 0;
		/*
		 * Whatever was read before the first probe is taken to be like
		 * it; a probe wholly past the end says nothing of it: cold.
		 */
		in = uo_popcount(inside);
		st->head_cached = in && uo_popcount(cached & inside) * 2 >= in;
	}
	if (cached & inside)
		st->some_cached = 1;
	last = first + n;
	if (last > st->mask_base + UO_MEMORY_FOLIOS) {
		shift = last - st->mask_base - UO_MEMORY_FOLIOS;
		st->cached = shift >= 64 ? 0 : st->cached >> shift;
		st->mask_base += shift;
	}
	st->cached |= (cached | unborn) << (first - st->mask_base);
	st->probed = ev->end;
}

/*
 * Where a drop starts: one folio before the last drop ended.  The folio
 * just behind the cursor can still be pinned when it is dropped (a pipe
 * that splice filled holds references to it), and the kernel then keeps
 * it; the next drop tries it again.  Never before the run, whose first
 * folio may hold someone else's data.
 */
static uint64_t uo_drop_from(const struct uo_stream *st, const struct uo_tuning *t)
{
	uint64_t floor = uo_align_up(st->run_start, t->align);

	return st->dropped >= floor + t->align ? st->dropped - t->align : floor;
}

/*
 * Reads: everything behind the folio under the cursor was used and can go.
 * Readahead lives ahead of the cursor, so it is never touched.
 */
static void uo_advise_read(struct uo_stream *st, const struct uo_tuning *t,
			   uint64_t edge, struct uo_advice *adv)
{
	if (edge < st->dropped + uo_read_step(st, t) || st->blind)
		return;
	adv->drop.start = uo_drop_from(st, t);
	adv->drop.end = edge;
	adv->keep = uo_keep_mask(st, t, adv->drop.start, &adv->drop.end);
	st->dropped = adv->drop.end;
}

/*
 * Writes: dirty pages cannot be dropped, only written.  Start writeback of
 * each window as soon as it is complete, and drop a window once it has had
 * write_lag windows' time to reach the disk.  The drop asks the plumbing to
 * wait for that writeback, which is what bounds a writer that is faster
 * than its disk.
 */
static void uo_advise_write(struct uo_stream *st, const struct uo_tuning *t,
			    uint64_t edge, struct uo_advice *adv)
{
	uint64_t lag = (uint64_t)t->write_lag * t->window;
	uint64_t drop_edge;

	if (edge < st->flushed + t->window)
		return;
	drop_edge = edge > lag ? uo_align_down(edge - lag, t->align) : 0;
	if (drop_edge > st->flushed)
		drop_edge = st->flushed;
	adv->flush.start = st->flushed;
	adv->flush.end = edge;
	st->flushed = edge;
	if (drop_edge > st->dropped && !st->blind) {
		/* An overwrite of pages someone had cached leaves them cached. */
		adv->drop.start = st->dropped;
		adv->drop.end = drop_edge;
		adv->keep = uo_keep_mask(st, t, adv->drop.start, &adv->drop.end);
		adv->flags |= UO_ADV_WAIT;
		st->dropped = adv->drop.end;
	}
}

/*
 * A file written from its start (most often a new one: cp, dd, a download)
 * has its writeback started a window at a time before it is known to be a
 * stream.  Otherwise the threshold's worth of dirty pages, and the window
 * written before the stream is next looked at, all wait for writeback at
 * once (40 MiB in flight at the defaults, against the writer's budget in a
 * small memory cgroup of three windows).  Nothing is dropped before the threshold: a file that
 * stays short keeps its pages, only written out sooner than the kernel
 * would.  A run from elsewhere (an append, a database's pages) is left to
 * the kernel until it is a stream.
 */
static void uo_write_early(struct uo_stream *st, const struct uo_tuning *t,
			   const struct uo_event *ev, struct uo_advice *adv)
{
	uint64_t edge = uo_align_down(ev->end, t->align);

	if (ev->dir != UO_WRITE || st->run_start || edge < st->flushed + t->window)
		return;
	adv->flush.start = st->flushed;
	adv->flush.end = edge;
	st->flushed = edge;
}

struct uo_advice uo_observe(struct uo_stream *st, const struct uo_tuning *t,
			    const struct uo_event *ev)
{
	struct uo_advice adv;
	uint64_t moved, start, slack;

	memset(&adv, 0, sizeof(adv));
	if (st->state == UO_IGNORED || ev->dir > UO_WRITE ||
	    !(t->guard & (1u << ev->dir)))
		return adv;
	if (ev->flags & (UO_EV_PROBED | UO_EV_BLIND | UO_EV_NOPROBE)) {
		if (ev->end != UO_UNKNOWN && ev->end >= ev->len)
			uo_probed(st, t, ev);
		return adv;
	}

	if (ev->end == UO_UNKNOWN) {
		/* Counting is free; asking the kernel where the cursor is is not. */
		st->pending += ev->len;
		if (st->pending >= t->window)
			adv.flags |= UO_ADV_ASK_POSITION;
		return adv;
	}

	moved = st->pending + ev->len;
	st->pending = 0;
	if (ev->end < moved) {
		/* The cursor went back while we were not looking: start over here. */
		uo_new_run(st, ev->dir, ev->end, ev->end);
		return adv;
	}
	start = ev->end - moved;
	slack = (ev->flags & UO_EV_CURSOR) ? t->slack : 0;
	if (st->state == UO_NEW || !st->positioned || st->dir != ev->dir ||
	    !uo_near(start, st->next, slack))
		uo_new_run(st, ev->dir, start, ev->end);
	else
		st->next = ev->end;

	uo_maybe_probe(st, t, ev->end, &adv);
	if (st->state == UO_TRACKING) {
		if (ev->end - st->run_start < t->threshold) {
			uo_write_early(st, t, ev, &adv);
			return adv;
		}
		st->state = UO_STREAM;
		adv.flags |= UO_ADV_PROMOTED;
		/* Round inwards: the folio before the run may hold someone else's data. */
		st->dropped = uo_align_up(st->run_start, t->align);
		if (st->flushed < st->dropped)
			st->flushed = st->dropped;
	}

	if (ev->dir == UO_READ)
		uo_advise_read(st, t, uo_align_down(ev->end, t->align), &adv);
	else
		uo_advise_write(st, t, uo_align_down(ev->end, t->align), &adv);
	return adv;
}

uint64_t uo_write_wait(uint64_t budget, uint64_t window, uint64_t tails, uint64_t in_flight,
		       bool closing)
{
	if (!closing)
		return in_flight > budget ? budget - (budget > window / 2 ? window / 2 : budget)
					  : UO_NO_WAIT;
	if (!in_flight || (tails <= budget && in_flight <= budget - tails))
		return UO_NO_WAIT;
	return tails < budget ? budget - tails : 0;
}

#define UO_THRESHOLD_SHARE	32u

uint64_t uo_memory_threshold(const struct uo_tuning *t, uint64_t memory)
{
	uint64_t share = memory / UO_THRESHOLD_SHARE;

	if (!memory || memory == UINT64_MAX || share >= t->threshold)
		return t->threshold;
	return share > t->window ? share : t->window < t->threshold ? t->window : t->threshold;
}

uint64_t uo_domain_wait(uint64_t budget, uint64_t window, uint64_t others, uint64_t in_flight)
{
	uint64_t share;

	if (others < window / 2 || (in_flight <= budget && others <= budget - in_flight))
		return UO_NO_WAIT;
	share = others < budget && budget - others > window / 2 ? budget - others - window / 2 : 0;
	return in_flight > share ? share : UO_NO_WAIT;
}

uint64_t uo_domain_step(uint64_t window, uint64_t align, uint64_t others)
{
	if (others < window / 2 || !align || align >= window)
		return window;
	return align;
}

struct uo_advice uo_closing(struct uo_stream *st, const struct uo_tuning *t)
{
	struct uo_advice adv;

	memset(&adv, 0, sizeof(adv));
	if (st->state == UO_STREAM && st->dir == UO_READ) {
		/* Beyond what was probed, the stream never brought anything in. */
		if (!st->blind) {
			adv.drop.start = uo_drop_from(st, t);
			adv.drop.end = st->probed ? st->probed : UO_EOF;
			if (st->probed)
				adv.keep = uo_keep_mask(st, t, adv.drop.start, &adv.drop.end);
		}
	} else if (st->state == UO_STREAM) {
		/*
		 * Write the tail and wait for it, as the writes were made to:
		 * otherwise every file of a many-file stream (tar x) would
		 * leave its last windows cached.
		 */
		adv.flush.start = st->flushed;
		adv.flush.end = UO_EOF;
		if (!st->blind) {
			/* Beyond what was probed, the writer never got. */
			adv.drop.start = st->dropped;
			adv.drop.end = st->probed ? st->probed : UO_EOF;
			if (st->probed)
				adv.keep = uo_keep_mask(st, t, adv.drop.start, &adv.drop.end);
			adv.flags |= UO_ADV_WAIT;
		}
	}
	uo_reset(st);
	return adv;
}

bool uo_tree_closed(struct uo_tree *tree, uint64_t now_ms)
{
	if (tree->count && (now_ms < tree->last_ms || now_ms - tree->last_ms > UO_TREE_GAP_MS))
		tree->count = 0;
	if (tree->count < UO_TREE_FILES)
		tree->count++;
	tree->last_ms = now_ms;
	return tree->count >= UO_TREE_FILES;
}

/*
 * ---- issue 12: trees in both directions ----
 * Declared in policy.h.
 */

uint64_t uo_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

/*
 * A tree once the run holds a stream's worth of bytes in a few files (ten
 * files of 10 MiB flood a cache as one file of 100 MiB does), or many
 * files, however small (32 files of 64 KiB are a tree too).
 */
static bool uo_tree_is_on(const struct uo_tree_run *r, const struct uo_tuning *t)
{
	return r->count >= UO_TREE_FILES || (r->count >= UO_TREE_STEPS && r->bytes >= t->threshold);
}

/*
 * Written: a new file, the tail of a stream too (its first windows went
 * behind the writer, its last was in flight at its close).  Read: a file
 * nothing of which was cached when opened, not a stream (a stream's pages
 * went as it read, and what was cached before stays).
 */
static bool uo_tree_early_candidate(const struct uo_tree_file *f)
{
	if (f->dir == UO_WRITE)
		return f->opened == UO_OPEN_NEW;
	return f->opened == UO_OPEN_COLD && !f->streamed;
}

bool uo_tree_early_read_due(uint64_t closed_ms, uint64_t now_ms)
{
	return now_ms >= closed_ms && now_ms - closed_ms <= UO_TREE_GAP_MS;
}

struct uo_tree_advice uo_tree_file_closed(struct uo_trees *tr, const struct uo_tuning *t,
					  const struct uo_tree_file *f)
{
	struct uo_tree_advice adv = { 0 };
	struct uo_tree_run *r;

	if (f->dir > UO_WRITE || !(t->guard & (1u << f->dir)))
		return adv;
	r = &tr->run[f->dir];
	/* A pause, or a clock that went back, ends the run. */
	if (r->count && (f->now_ms < r->last_ms || f->now_ms - r->last_ms > UO_TREE_GAP_MS)) {
		adv.changed = r->on;
		adv.early_forget = 1;
		memset(r, 0, sizeof(*r));
	}
	/*
	 * A file not moved whole (a config file read in part, a database) is
	 * not a step, nor does it break the run: copiers read other files too.
	 */
	if (!f->whole || f->size < UO_TREE_MIN || f->moved != f->size)
		return adv;
	if (r->count < UO_TREE_FILES)
		r->count++;
	if (r->own < UINT32_MAX)
		r->own++;
	if (r->count <= UO_TREE_ID_FILES) {
		r->id = uo_mix(r->id ? r->id : 1, f->key);
		adv.ask_record = r->count == UO_TREE_ID_FILES && f->key;
	}
	r->bytes = r->bytes + f->size < r->bytes ? UINT64_MAX : r->bytes + f->size;
	r->last_ms = f->now_ms;
	if (!r->on && uo_tree_is_on(r, t)) {
		r->on = 1;
		adv.changed = 1;
		if (!r->kept)
			adv.early = UO_TREE_EARLY_ADOPT;
	}
	if (!r->on) {
		/* Moved before the run is known to be a tree: maybe dropped once it is. */
		if (uo_tree_early_candidate(f))
			adv.early = UO_TREE_EARLY_KEEP;
		return adv;
	}
	if (r->kept)
		return adv;
	if (f->dir == UO_READ) {
		/* A stream's pages went as it read (what was cached before stays). */
		if (!f->streamed && f->opened == UO_OPEN_COLD)
			adv.verdict = UO_TREE_DROP;
	} else if (f->opened == UO_OPEN_NEW) {
		/* Nothing of a new file was anyone's before: all of it goes, once written. */
		adv.verdict = UO_TREE_BEHIND;
	}
	return adv;
}

void uo_tree_came_back(struct uo_trees *tr, unsigned dir)
{
	if (dir <= UO_WRITE)
		tr->run[dir].kept = 1;
}

/*
 * Inside a tree a file past a window is a stream: its pages go as it
 * moves, and below a window the whole file goes at close.  Outside, a
 * file needs the full threshold.
 */
uint64_t uo_tree_threshold(const struct uo_trees *tr, const struct uo_tuning *t, unsigned dir)
{
	if (dir > UO_WRITE || !tr->run[dir].on || tr->run[dir].kept)
		return t->threshold;
	return t->window && t->window < t->threshold ? t->window : t->threshold;
}

bool uo_tree_wants_open_probe(const struct uo_trees *tr, unsigned dir)
{
	return dir <= UO_WRITE && tr->run[dir].on && !tr->run[dir].kept;
}

uint64_t uo_behind_budget(const struct uo_tuning *t, uint64_t memory)
{
	uint64_t low = 2 * t->window, high = 64 * t->window, b = memory / 4;

	if (!memory || b > high)
		b = high;
	return b < low ? low : b;
}

bool uo_behind_full(unsigned n, uint64_t bytes, uint64_t size, uint64_t budget)
{
	if (!n)
		return false;
	return n >= UO_BEHIND_FILES || bytes > budget || size > budget - bytes;
}

bool uo_behind_room(uint64_t free, uint64_t memory, uint64_t size)
{
	/* MemFree of a machine larger than the cgroup: the cgroup's is the smaller. */
	if (free > memory)
		free = memory;
	if (!free || size > free)
		return false;
	return free - size >= memory - memory / 4;
}

struct uo_advice uo_temp_advice(struct uo_advice adv, unsigned dir, uint8_t *temp,
				uint64_t free, uint64_t memory, uint64_t size)
{
	uint64_t end;

	if (*temp != UO_TEMP_KEPT || dir != UO_WRITE ||
	    (uo_range_empty(adv.flush) && uo_range_empty(adv.drop)))
		return adv;
	if (uo_behind_room(free, memory, size)) {
		adv.flush.start = adv.flush.end = 0;
		adv.drop.start = adv.drop.end = 0;
		adv.keep = 0;
		adv.flags &= ~UO_ADV_WAIT;
		return adv;
	}
	*temp = UO_TEMP_SHORT;
	/* Nothing kept was flushed: a drop of it must not wait for the kernel's flusher. */
	end = uo_range_empty(adv.flush) ? 0 : adv.flush.end;
	if (!uo_range_empty(adv.drop) && adv.drop.end > end)
		end = adv.drop.end;
	adv.flush.start = 0;
	adv.flush.end = end;
	return adv;
}

static uint64_t uo_tree_share_sum(const struct uo_tree_share *s)
{
	uint64_t h = uo_mix(0x7472656573686172ULL, s->owner);	/* "treeshar" */

	h = uo_mix(h, s->last_ms);
	h = uo_mix(h, s->bytes);
	h = uo_mix(h, s->id);
	h = uo_mix(h, (uint64_t)s->count << 16 | (uint64_t)s->dir << 8 | s->kept);
	return uo_mix(h, (uint64_t)s->pad[0] << 8 | s->pad[1]);
}

void uo_tree_share_put(struct uo_tree_share *out, const struct uo_tree_run *run, unsigned dir,
		       uint64_t owner)
{
	memset(out, 0, sizeof(*out));
	/* A process that moved many files is no short sibling: nothing to continue. */
	if (run->own > UO_SIBLING_FILES)
		return;
	out->owner = owner;
	out->last_ms = run->last_ms;
	out->bytes = run->bytes;
	out->id = run->id;
	out->count = run->count;
	out->dir = (uint8_t)dir;
	out->kept = run->kept;
	out->check = uo_tree_share_sum(out);
}

bool uo_tree_share_get(struct uo_tree_run *run, const struct uo_tuning *t,
		       const struct uo_tree_share *in, unsigned dir, uint64_t owner, uint64_t now_ms)
{
	if (!owner || in->owner != owner || in->dir != dir || in->check != uo_tree_share_sum(in) ||
	    in->pad[0] || in->pad[1] || in->kept > 1)
		return false;
	if (!in->count || in->count > UO_TREE_FILES || now_ms < in->last_ms ||
	    now_ms - in->last_ms > UO_TREE_GAP_MS)
		return false;
	/* Ours is as new: nothing to learn (and a sibling's run is not added twice). */
	if (run->count && run->last_ms >= in->last_ms)
		return false;
	run->last_ms = in->last_ms;
	run->bytes = in->bytes;
	run->id = in->id;
	run->count = in->count;
	run->kept = in->kept;
	/* Worked out again, never taken from the entry. */
	run->on = uo_tree_is_on(run, t);
	return true;
}

/* Over every word but the check itself: any bit flipped is seen. */
static uint64_t uo_handoff_sum(const struct uo_handoff_file *e)
{
	uint64_t w[(offsetof(struct uo_handoff_file, check) + 7) / 8];
	/* "handoff2": an entry of the layout before the birth and change times fails. */
	uint64_t h = 0x68616e646f666632ULL;
	size_t i;

	memset(w, 0, sizeof(w));
	memcpy(w, e, offsetof(struct uo_handoff_file, check));
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		h = uo_mix(h, w[i]);
	return h;
}

void uo_handoff_seal(struct uo_handoff_file *e)
{
	e->check = uo_handoff_sum(e);
}

bool uo_handoff_sound(const struct uo_handoff_file *e, uint64_t owner, uint64_t now_ms)
{
	if (!owner || e->owner != owner || e->check != uo_handoff_sum(e) ||
	    (e->flags & ~(uint32_t)(UO_HANDOFF_EARLY | UO_HANDOFF_FAILED | UO_HANDOFF_READ)))
		return false;
	/* A read candidate is nothing else, and was closed at most UO_TREE_GAP_MS before. */
	if (e->flags & UO_HANDOFF_READ) {
		if (e->flags != UO_HANDOFF_READ || e->age_ms > UO_TREE_GAP_MS ||
		    e->handed_ms < e->age_ms)
			return false;
	} else if (e->age_ms) {
		return false;
	}
	if (now_ms < e->handed_ms || now_ms - e->handed_ms > UO_TREE_GAP_MS)
		return false;
	/* A failure mark names no file. */
	if (e->flags & UO_HANDOFF_FAILED)
		return true;
	return e->path[0] == '/' && memchr(e->path, '\0', sizeof(e->path)) && e->size &&
	       e->ctime_ns;
}

bool uo_behind_same(const struct uo_behind_id *was, const struct uo_behind_id *now)
{
	if (was->dev != now->dev || was->ino != now->ino || was->size != now->size)
		return false;
	/* Known then, it must be the same now; unknown then, it is unknown now too. */
	if (was->btime_ns != now->btime_ns)
		return false;
	return !was->ctime_ns || was->ctime_ns == now->ctime_ns;
}

bool uo_is_shell(const char *comm)
{
	static const char *const shells[] = { "sh", "dash", "bash", "ash", "ksh", "mksh", "zsh" };
	unsigned i;

	for (i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (!strcmp(comm, shells[i]))
			return true;
	return false;
}

bool uo_sib_through_shell(const char *comm, const char *cmdline, size_t len)
{
	const char *arg, *cmd, *end = cmdline + len;

	/* argv[0], then "-c", then the command, each ended by a NUL within the text. */
	arg = len ? memchr(cmdline, '\0', len) : NULL;
	if (!uo_is_shell(comm) || !arg || end - ++arg < 3 || memcmp(arg, "-c", 3))
		return false;
	cmd = arg + 3;
	/* "--" ends the shell's options: the command is the argument after it. */
	if (end - cmd >= 3 && !memcmp(cmd, "--", 3))
		cmd += 3;
	if (cmd >= end || !*cmd || !memchr(cmd, '\0', (size_t)(end - cmd)))
		return false;
	return !strpbrk(cmd, ";&|\n");
}

enum uo_opened uo_opened_by_head_probe(const struct uo_stream *st, uint64_t size)
{
	/* Probed from the file's start, before anything was read, over all of it. */
	if (st->blind || st->noprobe || !st->probed || st->probe_floor || st->mask_base ||
	    st->probed < size || st->head_cached)
		return UO_OPEN_UNKNOWN;
	return st->some_cached ? UO_OPEN_CACHED : UO_OPEN_COLD;
}
