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
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>

#include "advise.h"
#include "config.h"
#include "stats.h"
#include "sys.h"
#include "trace.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

/* A stuck disk must not hang the program forever in our hands. */
#define UO_WAIT_BUDGET_NS	(5ULL * 1000000000ULL)

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
 * Writers: how much of a process's written data may be on its way to the
 * disk (dirty or under writeback) before it waits.  A writer whose data
 * fits easily in memory never waits; one that outruns its disk is held
 * back to its disk's pace once this much is in flight, as the kernel holds
 * back any writer (at 20% of memory by default), only sooner: 1/32 of the
 * memory the process may use, the smaller of RAM and its memory cgroups'
 * limits, and at least three windows.  Found once per process, at its
 * first write stream.  The stream is looked at once a window, and waits
 * down to half a window under the budget: between the two it keeps 2.5 to
 * 3.5 windows in flight (20-28 MiB at the defaults, 32 as a memory cgroup
 * counts it).  With two windows (12-20 MiB) a writer in a 256 MiB cgroup
 * whose disk was busy (another process syncing, other work) waited out the
 * disk's stalls with less queued: the median time of a 1 GiB dd was 2-23%
 * longer in each of 7 side-by-side runs (docs/benchmarks.md, issue 13's
 * fifth pass).
 *
 * What a stream still has in flight when it is closed stays cached: once
 * the program's descriptor is gone nothing can drop it.  Closing waits
 * only when that would take what the process's closed streams left so
 * past their budget (uo_write_wait): two windows.  A share of memory
 * (1/256) was tried and measured: one process's close waited less, but
 * every process of a script may leave that much, and 50 dd's of 64 MiB
 * left 1.1-1.9 GiB cached on 24 GiB against 220 MiB with two windows.
 */
#define UO_BUDGET_SHARE		32u
#define UO_BUDGET_MIN_WINDOWS	3u
#define UO_POLL_NS		(2ULL * 1000000ULL)

static _Atomic uint64_t uo_budget;	/* 0: not known yet */
/* Bytes left in flight by the write streams this process closed. */
static _Atomic uint64_t uo_tails;

static uint64_t uo_parse_u64(const char *p, bool *ok)
{
	uint64_t v = 0;

	*ok = *p >= '0' && *p <= '9';
	for (; *p >= '0' && *p <= '9'; p++)
		v = v > UINT64_MAX / 10 ? UINT64_MAX : v * 10 + (uint64_t)(*p - '0');
	return v;
}

/*
 * Set when this process is known to run under no memory limit: every
 * memory cgroup it is in could be read, and none (nor a parent) limits it
 * below RAM.  Only then is MemFree its free memory (uo_memory_free).  A
 * limit, or a cgroup whose files cannot be read (a sandbox hiding
 * /sys/fs/cgroup, a controller mounted elsewhere), leaves it clear.
 */
static _Atomic int uo_mem_unlimited;
static _Atomic uint64_t uo_mem_asked_ms;	/* when it was last found so */
/* The first look could not open a file for want of a descriptor or memory: look again. */
static _Atomic int uo_mem_retry;

/*
 * What one reading of the limits learnt: *unread as below; 'busy' when a
 * file could not be opened for want of a descriptor or of memory (EMFILE,
 * ENFILE, ENOMEM: the program's own state, which passes), and the answer
 * is no answer.
 */
struct uo_limit_read {
	bool unread;
	bool busy;
	/* The cgroup whose limit binds, as uo_domain_note says. */
	int dom_kind;
	uint64_t dom_limit;
	char dom[256];
};

/*
 * The writers' memory domain (uo_domain_wait): the memory cgroup whose
 * limit binds the process, if one limits it below RAM.  Its dirty +
 * writeback is read from that cgroup's memory.stat (v1: the total_ lines,
 * which count its children too; v2: file_dirty and file_writeback,
 * hierarchical).  Under no such limit there is no domain rule: the
 * machine's Dirty + Writeback counts writers the kernel alone would let
 * run to its own dirty limits, and a guarded dd of 256 MiB beside an
 * unguarded one of 1 GiB took 0.60-1.38 s held back for them, 0.53-0.74
 * s without the rule.
 */
enum { UO_DOM_NONE, UO_DOM_V1, UO_DOM_V2 };

/*
 * One thread at a time asks again (uo_still_unlimited); the others keep the
 * last answer meanwhile.
 */
static _Atomic int32_t uo_limit_owner;

static bool uo_limit_busy(long err)
{
	return err == -EMFILE || err == -ENFILE || err == -ENOMEM || err == -EINTR;
}

/*
 * A limit found in the cgroup directory dir[0, len): the domain is the
 * cgroup with the smallest limit, of this kind (UO_DOM_V1, UO_DOM_V2; 0:
 * a file that is no limit).
 */
static void uo_domain_note(struct uo_limit_read *rd, int kind, const char *dir, size_t len,
			   uint64_t limit)
{
	static const char stat[] = "/memory.stat";

	if (!kind || (rd->dom_kind && limit >= rd->dom_limit) ||
	    len + sizeof(stat) > sizeof(rd->dom))
		return;
	memcpy(rd->dom, dir, len);
	memcpy(rd->dom + len, stat, sizeof(stat));
	rd->dom_kind = kind;
	rd->dom_limit = limit;
}

/* The domain 'from' found, if its limit is smaller than the one 'rd' holds. */
static void uo_domain_take(struct uo_limit_read *rd, const struct uo_limit_read *from)
{
	if (!from->dom_kind || (rd->dom_kind && from->dom_limit >= rd->dom_limit))
		return;
	memcpy(rd->dom, from->dom, sizeof(rd->dom));
	rd->dom_kind = from->dom_kind;
	rd->dom_limit = from->dom_limit;
}

/*
 * The smallest memory limit of the cgroup 'path' (under 'base') and its
 * parents; 'file' is memory.limit_in_bytes (v1), memory.max or
 * memory.high (v2: reclaim starts there).  rd->unread is set when the
 * cgroup's own file cannot be read, but for the root, which has none.
 */
static uint64_t uo_cgroup_walk(const char *base, const char *path, const char *file,
			       int kind, struct uo_limit_read *rd)
{
	char at[512], buf[64];
	uint64_t limit = UINT64_MAX, v;
	size_t blen = strlen(base), plen = strlen(path), flen = strlen(file);
	bool ok, leaf = true;
	long n;

	if (blen + plen + flen + 2 >= sizeof(at)) {
		rd->unread = true;
		return limit;
	}
	memcpy(at, base, blen);
	memcpy(at + blen, path, plen);
	for (;;) {
		while (plen > 1 && at[blen + plen - 1] == '/')
			plen--;
		at[blen + plen] = '/';
		memcpy(at + blen + plen + 1, file, flen + 1);
		n = uo_read_small(at, buf, sizeof(buf));
		if (n > 0) {
			v = uo_parse_u64(buf, &ok);
			if (ok && v < limit) {
				limit = v;
				uo_domain_note(rd, kind, at, blen + plen, v);
			}
		} else if (uo_limit_busy(n)) {
			rd->busy = true;
		} else if (leaf && plen > 1) {
			rd->unread = true;
		}
		leaf = false;
		while (plen > 0 && at[blen + plen - 1] != '/')
			plen--;
		if (plen <= 1)
			break;
	}
	return limit;
}

/* Is "memory" one of the comma-separated controllers in [ctl, end)? */
static bool uo_cgroup_memory(const char *ctl, const char *end)
{
	const char *c;

	for (c = ctl; c < end; c++) {
		if ((c == ctl || c[-1] == ',') && end - c >= 6 && !memcmp(c, "memory", 6) &&
		    (c + 6 == end || c[6] == ','))
			return true;
	}
	return false;
}

/*
 * The memory cgroups' limit on this process (v1 or v2), UINT64_MAX if
 * none; rd as for uo_cgroup_walk, and unread when /proc/self/cgroup cannot
 * be read.  On a hybrid system (v1 controllers, and the v2 hierarchy
 * beside them, with no controller of its own there) the memory
 * controller is on a v1 line, and the v2 line ("0::PATH") is not asked:
 * its path is not under /sys/fs/cgroup there, and reading it as if it
 * were found no memory files and took the cgroup for one hidden from us.
 */
static uint64_t uo_cgroup_limit(struct uo_limit_read *rd)
{
	char buf[4096], *line, *next, *ctl, *path;
	uint64_t limit = UINT64_MAX, v;
	bool v1 = false;
	long n;

	n = uo_read_small("/proc/self/cgroup", buf, sizeof(buf));
	if (n <= 0) {
		if (uo_limit_busy(n))
			rd->busy = true;
		else
			rd->unread = true;
		return limit;
	}
	/* ID:CONTROLLERS:PATH, one a line */
	for (line = buf; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		ctl = memchr(line, ':', (size_t)(next - line));
		path = ctl ? memchr(ctl + 1, ':', (size_t)(next - ctl - 1)) : NULL;
		if (path && uo_cgroup_memory(ctl + 1, path))
			v1 = true;
	}
	for (line = buf; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		/* ID:CONTROLLERS:PATH */
		ctl = strchr(line, ':');
		path = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		ctl++;
		if (!*ctl && !v1) {
			struct uo_limit_read none = { 0 };

			/*
			 * v2: a cgroup without the memory controller has no memory
			 * files, and no limit; one whose cgroup.type cannot be read
			 * is hidden from us.
			 */
			v = uo_cgroup_walk("/sys/fs/cgroup", path, "memory.max", UO_DOM_V2, &none);
			rd->busy |= none.busy;
			if (none.unread) {
				(void)uo_cgroup_walk("/sys/fs/cgroup", path, "cgroup.type", UO_DOM_NONE,
						     rd);
			} else {
				uint64_t high;

				/* memory.max was read into 'none': its cgroup may be the one that binds. */
				uo_domain_take(rd, &none);
				high = uo_cgroup_walk("/sys/fs/cgroup", path, "memory.high", UO_DOM_V2,
						      rd);
				if (high < v)
					v = high;
			}
		} else if (uo_cgroup_memory(ctl, ctl + strlen(ctl))) {
			v = uo_cgroup_walk("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes",
					   UO_DOM_V1, rd);
		} else {
			continue;
		}
		if (v < limit)
			limit = v;
	}
	return limit;
}

/*
 * The domain found: the cgroup 'rd' found binding, if 'limited'.  The
 * cgroup's path is written once and never again (a process moved to
 * another cgroup keeps reading the first), so that readers in other
 * threads see it whole without a lock: uo_dom_kind is set after it.
 */
static char uo_dom_path[256];
static _Atomic int uo_dom_kind;
static _Atomic int32_t uo_dom_owner;

static void uo_domain_set(const struct uo_limit_read *rd, bool limited)
{
	if (!limited || !rd->dom_kind ||
	    atomic_load_explicit(&uo_dom_kind, memory_order_relaxed) != UO_DOM_NONE ||
	    !uo_try_own(&uo_dom_owner))
		return;
	memcpy(uo_dom_path, rd->dom, sizeof(uo_dom_path));
	atomic_store_explicit(&uo_dom_kind, rd->dom_kind, memory_order_release);
}

/*
 * The memory this process may use: the smaller of RAM and its memory
 * cgroups' limits (a container's, a systemd unit's), 0 if unknown.  Found
 * once per process, when a stream first needs it.
 */
static _Atomic uint64_t uo_memory;	/* 0: not known yet; UINT64_MAX: unknown */

/* The limits were asked now: the next re-check is a second away.  False if the clock failed. */
static bool uo_mem_note_asked(void)
{
	uint64_t now;

	if (!uo_clock_ms(CLOCK_MONOTONIC, &now))
		return false;
	atomic_store_explicit(&uo_mem_asked_ms, now ? now : 1, memory_order_relaxed);
	return true;
}

/* Under no limit: this process's free-memory rules may apply. */
static void uo_mem_set_unlimited(void)
{
	if (uo_mem_note_asked())
		atomic_store_explicit(&uo_mem_unlimited, 1, memory_order_relaxed);
}

/*
 * Asked at every event of a guarded descriptor (uo_tree_tuning), which
 * asks uo_memory_size only once a run passes a window: a process that
 * moves less keeps from reading its cgroups.
 */
uint64_t uo_memory_known(void)
{
	return atomic_load_explicit(&uo_memory, memory_order_relaxed);
}

uint64_t uo_memory_size(void)
{
	uint64_t mem = atomic_load_explicit(&uo_memory, memory_order_relaxed), ram = 0;
	struct uo_limit_read rd = { 0 };
	struct sysinfo si;

	if (!mem) {
		mem = uo_cgroup_limit(&rd);
		if (uo_sys(SYS_sysinfo, &si) == 0)
			ram = (uint64_t)si.totalram * si.mem_unit;
		uo_domain_set(&rd, !ram || mem < ram);
		if (ram && ram <= mem) {
			mem = ram;
			if (!rd.unread && !rd.busy) {
				uo_mem_set_unlimited();
			} else if (!rd.unread) {
				/*
				 * No limit found, but not every file could be opened:
				 * limited for now, asked again within a second
				 * (uo_still_unlimited).  A limit found stands.
				 */
				(void)uo_mem_note_asked();
				atomic_store_explicit(&uo_mem_retry, 1, memory_order_relaxed);
			}
		}
		atomic_store_explicit(&uo_memory, mem ? mem : UINT64_MAX, memory_order_relaxed);
	}
	return mem == UINT64_MAX ? 0 : mem;
}

/*
 * A limit can come after the process started (systemctl set-property, docker
 * update, a move into another cgroup): an answer of "unlimited" is asked
 * again once a second at most, and a limit or an unreadable file found then
 * stays (files left cached under a new limit pushed its hot set out).
 * Asking reads /proc/self/cgroup and every limit file again: their
 * change times cannot stand in for them, since systemd and runc write a
 * limit without O_TRUNC, which leaves a cgroup file's times as they were
 * (a threaded program then kept 144 MiB of a temporary file cached under
 * a new 1 GiB limit).  The price: each open takes the lowest free
 * descriptor number for its moment, so a thread of the program opening a
 * file at that moment may get another number than without the library
 * (8-19 numbers in 4 s of a threaded opener beside a temporary file).  A
 * file that could not be opened for want of a descriptor or memory is no answer: the
 * last one stands, and it is asked again a second later (the first look
 * too: limited until then).  False, and nothing asked, once the process is
 * known to be limited.
 */
static bool uo_still_unlimited(void)
{
	uint64_t now, limit, mem, asked = atomic_load_explicit(&uo_mem_asked_ms,
							       memory_order_relaxed);
	struct uo_limit_read rd = { 0 };
	bool unlimited = atomic_load_explicit(&uo_mem_unlimited, memory_order_relaxed);

	if ((!unlimited && !atomic_load_explicit(&uo_mem_retry, memory_order_relaxed)) ||
	    !uo_clock_ms(CLOCK_MONOTONIC, &now))
		return false;
	if (asked && now - asked < 1000)
		return unlimited;
	/* Another thread is asking: its answer comes soon enough. */
	if (!uo_try_own(&uo_limit_owner))
		return unlimited;
	atomic_store_explicit(&uo_mem_asked_ms, now ? now : 1, memory_order_relaxed);
	limit = uo_cgroup_limit(&rd);
	uo_release(&uo_limit_owner);
	mem = uo_memory_size();
	if (rd.busy && !rd.unread && limit >= mem)
		return unlimited;
	atomic_store_explicit(&uo_mem_retry, 0, memory_order_relaxed);
	if (limit < mem || rd.unread) {
		/* The reuse rule and the write budget are sized from it too. */
		if (limit < mem) {
			uo_domain_set(&rd, true);
			atomic_store_explicit(&uo_memory, limit ? limit : UINT64_MAX,
					      memory_order_relaxed);
			atomic_store_explicit(&uo_budget, 0, memory_order_relaxed);
		}
		atomic_store_explicit(&uo_mem_unlimited, 0, memory_order_relaxed);
		return false;
	}
	if (!unlimited)
		uo_mem_set_unlimited();
	return true;
}

/*
 * Free memory now, for a process under no memory limit: MemFree (a
 * sysinfo); 0 if unknown, and under any limit.  In a cgroup, usage
 * against a limit read once would miss a limit lowered later, and
 * memory.high or a hidden /sys misread: a written file left cached there
 * pushed the cgroup's hot set out.
 */
uint64_t uo_memory_free(void)
{
	uint64_t mem = uo_memory_size();
	struct sysinfo si;

	if (!mem || !uo_still_unlimited() || uo_sys(SYS_sysinfo, &si) != 0)
		return 0;
	return (uint64_t)si.freeram * si.mem_unit;
}

/*
 * A file that fits comfortably in that memory (a quarter of it, at most)
 * may be left cached when it comes back; in a 256 MiB container a 600 MiB
 * file kept would only push everything else out, and not stay either.
 */
bool uo_fits_in_memory(uint64_t size)
{
	uint64_t mem;

	(void)uo_still_unlimited();
	mem = uo_memory_size();

	return mem && size <= mem / 4;
}

static uint64_t uo_write_budget(void)
{
	uint64_t budget, mem;

	(void)uo_still_unlimited();
	budget = atomic_load_explicit(&uo_budget, memory_order_relaxed);
	if (budget)
		return budget;
	mem = uo_memory_size();
	budget = mem / UO_BUDGET_SHARE;
	if (budget < UO_BUDGET_MIN_WINDOWS * uo_config.tuning.window)
		budget = UO_BUDGET_MIN_WINDOWS * uo_config.tuning.window;
	atomic_store_explicit(&uo_budget, budget, memory_order_relaxed);
	return budget;
}

static uint64_t uo_tail_budget(void)
{
	return 2 * uo_config.tuning.window;
}

/* cachestat counts pages; the auxiliary vector says how big one is. */
static uint64_t uo_page_size(void)
{
	uint64_t page = getauxval(AT_PAGESZ);

	return page ? page : 4096;
}

/* Bytes of [from, to) dirty or under writeback; -1 without cachestat. */
static int64_t uo_in_flight(int fd, uint64_t from, uint64_t to)
{
	struct uo_cachestat cs;

	if (uo_cachestat(fd, from, to == UO_EOF ? 0 : to - from, &cs) != 0)
		return -1;
	return (int64_t)((cs.nr_dirty + cs.nr_writeback) * uo_page_size());
}

/*
 * Bytes of [from, EOF) under writeback: what the writer sent to the disk,
 * which the disk alone finishes.  Its dirty pages are not counted: the
 * page a record that ends mid-page left past the flushed range (tar's 10
 * KiB records) is written back by no one until the flusher comes, so a
 * wait for "nothing in flight" lasted the whole budget at every window
 * (dd bs=10240 beside a writer of the same cgroup: 4.8-16.9 s for 125
 * MiB, against 0.17-0.97 bare).
 */
static int64_t uo_in_writeback(int fd, uint64_t from)
{
	struct uo_cachestat cs;

	if (uo_cachestat(fd, from, 0, &cs) != 0)
		return -1;
	return (int64_t)(cs.nr_writeback * uo_page_size());
}

/* The number after 'key' at the start of a line of 'buf'; 0 if none. */
static uint64_t uo_stat_field(const char *buf, const char *key)
{
	size_t len = strlen(key);
	const char *p = buf;
	bool ok;

	while (p && strncmp(p, key, len)) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	if (!p)
		return 0;
	for (p += len; *p == ' '; p++)
		;
	return uo_parse_u64(p, &ok);
}

/* Whether a memory cgroup's limit binds this process (the domain rule applies). */
static bool uo_domain_bound(void)
{
	return atomic_load_explicit(&uo_dom_kind, memory_order_acquire) != UO_DOM_NONE;
}

/*
 * The domain's dirty + writeback bytes now.  About 850 bytes of
 * memory.stat (v1), one open, read and close.
 */
static bool uo_domain_in_flight(uint64_t *bytes)
{
	int kind = atomic_load_explicit(&uo_dom_kind, memory_order_acquire);
	static const char *const keys[][2] = {
		[UO_DOM_V1] = { "total_dirty", "total_writeback" },
		[UO_DOM_V2] = { "file_dirty", "file_writeback" },
	};
	char buf[4096];

	if (kind == UO_DOM_NONE || uo_read_small(uo_dom_path, buf, sizeof(buf)) <= 0)
		return false;
	*bytes = uo_stat_field(buf, keys[kind][0]) + uo_stat_field(buf, keys[kind][1]);
	return true;
}

/*
 * What the domain has in flight besides a stream that has 'flying': read
 * at each window's end (only a write stream's throttle and a flushed
 * window ask), and at most once every UO_DOMAIN_MS in the process (its
 * threads' streams), the last answer otherwise.  The domain's whole
 * figure is what is kept, and each asker takes its own part off: a
 * stream that took another's answer would count its own pages as
 * others'.  Read every 20 ms, the first windows of eight writers started
 * together were written before each had seen the others: 160-212 MiB in
 * flight at once, against 80-123 read at every window (a lone writer at
 * 1 GB/s ends one every 8 ms).
 */
#define UO_DOMAIN_MS	2u
static _Atomic uint64_t uo_dom_read_ms;
static _Atomic uint64_t uo_dom_total;
static _Atomic int32_t uo_dom_reader;

static uint64_t uo_domain_others_read(uint64_t flying, bool fresh)
{
	uint64_t now, last = atomic_load_explicit(&uo_dom_read_ms, memory_order_relaxed);
	uint64_t domain;

	if (!uo_clock_ms(CLOCK_MONOTONIC, &now) || (!fresh && last && now - last < UO_DOMAIN_MS) ||
	    !uo_try_own(&uo_dom_reader)) {
		domain = atomic_load_explicit(&uo_dom_total, memory_order_relaxed);
	} else {
		atomic_store_explicit(&uo_dom_read_ms, now ? now : 1, memory_order_relaxed);
		if (!uo_domain_in_flight(&domain))
			domain = 0;
		atomic_store_explicit(&uo_dom_total, domain, memory_order_relaxed);
		uo_release(&uo_dom_reader);
	}
	return domain > flying ? domain - flying : 0;
}

static uint64_t uo_domain_others(uint64_t flying)
{
	return uo_domain_others_read(flying, false);
}

/*
 * Wait only while the stream has more than 'limit' in flight (checked
 * every 2 ms: a doubling nap overslept the disk by up to half), at most
 * UO_WAIT_BUDGET_NS.  Returns what is still in flight.  'sent': only what
 * is under writeback counts (the domain's rule: see uo_in_writeback).
 */
static int64_t uo_wait_below(int fd, uint64_t from, uint64_t limit, bool sent, uint64_t *waited)
{
	int64_t flying = sent ? uo_in_writeback(fd, from) : uo_in_flight(fd, from, UO_EOF);

	while (flying > (int64_t)limit && *waited < UO_WAIT_BUDGET_NS) {
		struct timespec ts = { 0, UO_POLL_NS };

		uo_sys(SYS_nanosleep, &ts, NULL);
		*waited += UO_POLL_NS;
		flying = sent ? uo_in_writeback(fd, from) : uo_in_flight(fd, from, UO_EOF);
	}
	return flying;
}

/*
 * A window written and its writeback started, with nothing to drop yet (a
 * file written from its start before it is a stream, and a stream's first
 * windows): no budget of its own holds it back, but the domain's does.
 * Waits, for this file's own writeback only, while the domain is past the
 * writers' budget (uo_domain_wait).  Returns the time waited.
 */
static uint64_t uo_domain_hold(int fd)
{
	uint64_t budget = uo_write_budget(), limit, waited = 0;
	int64_t flying;

	if (!uo_domain_bound())
		return 0;
	flying = uo_in_flight(fd, 0, UO_EOF);
	if (flying <= 0)
		return 0;
	limit = uo_domain_wait(budget, uo_config.tuning.window,
			       uo_domain_others((uint64_t)flying), (uint64_t)flying);
	if (limit != UO_NO_WAIT)
		(void)uo_wait_below(fd, 0, limit, true, &waited);
	return waited;
}

uint64_t uo_write_step(int fd, uint64_t *others)
{
	uint64_t window = uo_config.tuning.window, step;
	int64_t flying;

	*others = 0;
	if (!uo_domain_bound() || uo_config.dryrun)
		return window;
	flying = uo_in_flight(fd, 0, UO_EOF);
	if (flying < 0)
		return window;
	*others = uo_domain_others((uint64_t)flying);
	step = uo_domain_step(window, uo_config.tuning.align, *others);
	if (step == window)
		return window;
	/*
	 * The others' figure may be up to 2 ms older than this stream's own,
	 * read just now: a lone writer whose window's writeback ended in
	 * between counted it as others' (5-8 MiB).  Read again after its own.
	 */
	flying = uo_in_flight(fd, 0, UO_EOF);
	if (flying < 0)
		return window;
	*others = uo_domain_others_read((uint64_t)flying, true);
	return uo_domain_step(window, uo_config.tuning.align, *others);
}

/*
 * A written range is due to be dropped.  The writer waits only past its
 * budget (see above); otherwise the part whose writeback has not ended yet
 * is left for the next range, which starts from *unclean - 1 and covers it
 * again.  Only folios seen clean are dropped: a page is clean once its
 * writeback ended, failed or not, and its error is known by then (checked
 * next, uo_writeback_failed), so nothing that may be the only good copy is
 * dropped unseen.  Returns the time waited; r is cut to what may go, and
 * *clean says whether anything may.
 */
static uint64_t uo_write_throttle(int fd, struct uo_range *r, uint64_t keep, bool closing,
				  uint64_t *unclean, bool *clean, bool *held)
{
	uint64_t budget = uo_write_budget(), window = uo_config.tuning.window, waited = 0;
	uint64_t from = r->start, end = r->end, tails, limit, domain = UO_NO_WAIT;
	int64_t flying;

	*clean = false;
	/* Folios kept as cached before are counted from the range's own start. */
	if (*unclean && *unclean - 1 < from && !keep)
		from = *unclean - 1;
	flying = uo_in_flight(fd, from, UO_EOF);
	if (flying < 0)
		return 0;	/* no cachestat (before 6.5): what is clean cannot be told */
	r->start = from;
	tails = closing ? atomic_load_explicit(&uo_tails, memory_order_relaxed) : 0;
	limit = uo_write_wait(closing ? uo_tail_budget() : budget, window, tails,
			      (uint64_t)flying, closing);
	if (!closing && uo_domain_bound()) {
		domain = uo_domain_wait(budget, window, uo_domain_others((uint64_t)flying),
					(uint64_t)flying);
		*held = domain < limit;
	}
	if (limit != UO_NO_WAIT)
		flying = uo_wait_below(fd, from, limit, false, &waited);
	if (*held)
		(void)uo_wait_below(fd, from, domain, true, &waited);
	if (closing && flying > 0)
		atomic_fetch_add_explicit(&uo_tails, (uint64_t)flying, memory_order_relaxed);
	if (uo_in_flight(fd, from, end) != 0) {
		uint64_t align = uo_config.tuning.align, at = from;
		unsigned n = 0;

		/* The clean folios at its start may go now, the rest with the next range. */
		while (align && at < end && n++ < UO_MEMORY_FOLIOS &&
		       uo_in_flight(fd, at, end - at < align ? end : at + align) == 0)
			at += align;
		r->end = at < end ? at : end;
	}
	*clean = r->end > r->start;
	*unclean = r->end == end ? 0 : r->end + 1;
	return waited;
}

/*
 * A writeback error is the program's to report, and its own descriptors
 * still report it; but this check counts it as seen, and a descriptor
 * opened later (a "sync FILE" after the program closed it) would not hear
 * of it.  So it is said once, on stderr, where the user sees it, and the
 * process asks no more: on a failing disk every later file would lose its
 * error the same way (tar x of 80 files: a `sync FILE` loop failed for 64
 * bare, for none after the library had asked each).  Their pages stay
 * cached, as without the library, and their errors wait for whoever asks.
 */
static _Atomic int uo_wb_failure_seen;

bool uo_writeback_failure_seen(void)
{
	return atomic_load_explicit(&uo_wb_failure_seen, memory_order_relaxed);
}

/*
 * A process of the same parent saw a writeback fail and said so (tree.c):
 * this one asks no more either, and keeps every written page, for the
 * same reason (find -exec cp on a failing disk: each cp is a new process).
 */
void uo_writeback_failure_heard(void)
{
	atomic_store_explicit(&uo_wb_failure_seen, 1, memory_order_relaxed);
}

static void uo_say_writeback_failed(int fd, int err)
{
	char link[UO_PROC_FD_PATH], path[256];
	struct uo_line l;
	long n;

	if (atomic_exchange_explicit(&uo_wb_failure_seen, 1, memory_order_relaxed))
		return;
	uo_proc_fd_path(link, fd);
	n = uo_sys(SYS_readlinkat, AT_FDCWD, link, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = '\0';
	l.len = 0;
	uo_line_str(&l, "useonce: writing ");
	uo_line_path(&l, path[0] ? path : "a file");
	uo_line_str(&l, err == ENOSPC ? " failed: no space left on the device" :
		    err == EIO ? " failed: input/output error" : " failed");
	uo_line_str(&l, " (errno ");
	uo_line_num(&l, (uint64_t)err);
	uo_line_str(&l, "); its pages are kept, but an fsync on a descriptor opened later may not tell");
	uo_line_write(&l, 2);
}

/*
 * Does anyone hold a record lock on the file?  Closing any descriptor of a
 * file releases every POSIX (fcntl, lockf) lock the process holds on it,
 * so a descriptor of our own must never be opened and closed while the
 * program holds one: it would lose its lock without being told.  Asked
 * with an open-file-description query on the program's descriptor, which
 * conflicts with the process's own POSIX locks (and anyone else's): one
 * system call, no descriptor.  True when it cannot be told.  (A lock the
 * program takes in another thread between this and our close is still
 * lost: the window is two system calls wide.)
 */
bool uo_file_locked(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (uo_sys(SYS_fcntl, fd, F_OFD_GETLK, &fl) != 0)
		return true;
	return fl.l_type != F_UNLCK;
}

/*
 * After a first failure nothing is asked: the other files keep their
 * errors.  And an error asked is an error taken from whoever asks later,
 * so it is asked only where it can be said.  With no standard error (cp
 * and tar close it before the exit's last look at their files) the pages
 * are kept and the error stays for a later fsync or sync FILE: asked
 * there, 5 of 13 cp -r onto a failing disk ended with no word said and
 * every later sync FILE content.  Nor where descriptor 2 is no longer the
 * standard error the program started with (trace.c, uo_stderr_same).
 */
bool uo_writeback_askable(void)
{
	return !uo_writeback_failure_seen() && uo_stderr_same();
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
 * (no /proc, no read access, a record lock on the file): the pages are
 * then kept.
 */
static bool uo_own_writeback_failed(int own, struct uo_range r)
{
	int err;

	if (!uo_writeback_askable())
		return true;
	err = uo_sync_file_range(own, r.start, uo_len(r), SYNC_FILE_RANGE_WAIT_BEFORE);
	if (err)
		uo_say_writeback_failed(own, -err);
	return err != 0;
}

static bool uo_writeback_failed(int fd, struct uo_range r)
{
	char path[UO_PROC_FD_PATH];
	long own;
	bool failed;

	/* Asked first here too: after a failure no descriptor of ours is opened at all. */
	if (uo_writeback_failure_seen() || uo_file_locked(fd))
		return true;
	uo_proc_fd_path(path, fd);
	own = uo_sys(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (own < 0)
		return true;
	failed = uo_own_writeback_failed((int)own, r);
	uo_sys(SYS_close, own);
	return failed;
}

/*
 * Which folios of the range hold cached pages?  One page is enough: a hot
 * set can be sparse (a database's index pages, 4 KiB each), and every one
 * of its pages is someone's.  Keeping the folio-sized range around it keeps
 * some of the stream's own pages too: the price of never dropping another's.
 * Returns the UO_EV_* answer for the policy.  cachestat refuses (EPERM)
 * files the caller could not write and does not own, exactly those for
 * which mincore would lie; the policy then spares the stream's reads.
 *
 * 'eof': UO_PROBE_WRITER for a writer, whose folios past the end are its
 * own new pages; for a reader, the file's size when it became a stream,
 * or 0 if not known.  A reader's folios wholly past the end hold nothing
 * yet, which is not "nothing cached": they are set in 'unborn', and the
 * policy keeps them.  Whatever comes there before the reader does was
 * written by someone else (a log another program appends to, read by
 * tail -f) and is theirs; taken for cold, a follower that had caught up
 * with an unguarded writer dropped a fifth of what it wrote (200 of 256
 * MiB stayed).  Where the file ended is told too: a follower's first
 * probe lies a lookahead past its cursor, and what lies between the end
 * and the probe did not exist either.  The size known may be old for a file that grows, so one
 * fstat asks it again when the range runs past it or it is not known,
 * and the answer is neither everything nor, within the file, nothing:
 * cold reads of big files pay it only for their last windows, a cold
 * small file at its head probe.  Counting the folios past the end as
 * kept also spares a window that runs past the end of a small file
 * (grep -r of a tree of 128 KiB files, all cached) the folio-by-folio
 * asking: 22 calls per file before, grep 0.30 s bare and 0.50 s guarded
 * over 3200 cached files.
 */
unsigned uo_probe(int fd, struct uo_range r, uint64_t align, uint64_t eof, uint64_t *cached,
		  uint64_t *unborn, uint64_t *unborn_from)
{
	struct uo_cachestat cs;
	uint64_t page = uo_page_size(), folios = (r.end - r.start) / align, i, end = r.end;
	uint64_t all = folios >= 64 ? ~0ULL : (1ULL << folios) - 1;
	struct uo_file f;
	int err;

	*cached = 0;
	*unborn = 0;
	*unborn_from = 0;
	err = uo_cachestat(fd, r.start, r.end - r.start, &cs);
	if (err)
		return err == -EPERM ? UO_EV_BLIND : UO_EV_NOPROBE;
	/* The common answer, everything, in one call. */
	if (cs.nr_cache * page >= r.end - r.start) {
		*cached = all;
		return UO_EV_PROBED;
	}
	if (eof != UO_PROBE_WRITER && (!eof || eof < r.end) && uo_fstat(fd, &f) == 0 &&
	    S_ISREG(f.mode) && f.size < r.end) {
		end = f.size > r.start ? f.size : r.start;
		*unborn_from = f.size;
		for (i = 0; i < folios && i < 64; i++)
			if (r.start + i * align >= end)
				*unborn |= 1ULL << i;
	}
	/* Nothing, or everything up to the end: one call was enough after all. */
	if (cs.nr_cache == 0)
		return UO_EV_PROBED;
	if (end > r.start && cs.nr_cache * page >= end - r.start) {
		*cached = all & ~*unborn;
		return UO_EV_PROBED;
	}
	for (i = 0; i < folios && i < 64; i++)
		if (!(*unborn & (1ULL << i)) &&
		    uo_cachestat(fd, r.start + i * align, align, &cs) == 0 && cs.nr_cache)
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
#define UO_HELD	" (held back: its memory domain past the writers' budget)"

unsigned uo_apply(int fd, const struct uo_advice *adv, uint64_t size, uint64_t *counted,
		  uint64_t *unclean, bool closing)
{
	bool dry = uo_config.dryrun, clean = true, held = false;
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
		if (!err && !dry && !closing && !(adv->flags & UO_ADV_WAIT))
			waited = uo_domain_hold(fd);
		uo_trace_advice(fd, dry ? "dry run: would flush" : waited ? "flush" UO_HELD : "flush",
				adv->flush, err, waited);
		waited = 0;
	}
	if (!uo_range_empty(adv->drop)) {
		struct uo_range r = adv->drop;

		if (!dry && (adv->flags & UO_ADV_WAIT)) {
			waited = uo_write_throttle(fd, &r, adv->keep, closing, unclean, &clean,
						   &held);
			if (!clean) {
				uo_trace_advice(fd, "kept for now (writeback not done)", r, 0, waited);
				return 0;
			}
			if (uo_writeback_failed(fd, r)) {
				UO_STAT_ADD(advice_errors, 1);
				uo_trace_advice(fd, "kept (writeback failed, or no stderr to say "
						"so: not asked)", r, 0, waited);
				return UO_APPLY_WB_FAILED;
			}
		}
		err = dry ? 0 : uo_drop(fd, r, adv->keep, uo_config.tuning.align);
		if (err)
			UO_STAT_ADD(advice_errors, 1);
		else
			uo_count_drop(r, adv->keep, uo_config.tuning.align, size, counted);
		uo_trace_advice(fd, dry ? (adv->keep ? "dry run: would drop (sparing what was cached before)"
						     : "dry run: would drop")
					: held && waited ? "drop" UO_HELD
					: adv->keep ? "drop (sparing what was cached before)" : "drop",
				r, err, waited);
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

/*
 * A file of a tree that the program created or truncated and wrote whole,
 * being closed: its writeback is started (SYNC_FILE_RANGE_WRITE waits for
 * nothing and consumes no writeback error, so the program's fsync and a
 * later "sync FILE" still hear of one).  Its pages are not dropped, not
 * even those already clean: a page whose writeback failed is clean too and
 * may be the only good copy, and telling which failed takes a description
 * of our own (uo_writeback_failed), which a tree's every file must not
 * cost (and the pages clean at close were 0-2% of a copied tree, measured
 * on cp -r, rsync -a and tar x).  What this bounds is the dirty footprint;
 * the drop comes later, once the file is clean, from behind.c, through
 * uo_drop_written_tree_file below.
 */
void uo_flush_tree_file(int fd, uint64_t size)
{
	struct uo_range all = { 0, UO_EOF };
	bool dry = uo_config.dryrun;
	int err = dry ? 0 : -uo_sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);

	if (err)
		UO_STAT_ADD(advice_errors, 1);
	else
		UO_STAT_ADD(writeback, size);
	uo_trace_advice(fd, dry ? "dry run: would flush" : "flush (a new file of the tree)",
			all, err, 0);
}

/*
 * A written file of a tree, seen clean after the program closed it, on a
 * description of the library's own (behind.c): was its writeback a
 * success?  Asked as uo_writeback_failed does, on that description, never
 * on one of the program's; the file is clean, so nothing is waited for.
 * On a failure its pages are kept (the only good copy) and the user told
 * once.  Otherwise it is dropped whole.  True if it was.
 */
bool uo_drop_written_tree_file(int own, uint64_t size)
{
	struct uo_range all = { 0, UO_EOF };
	int64_t cached;
	int err;

	if (uo_own_writeback_failed(own, all)) {
		UO_STAT_ADD(advice_errors, 1);
		uo_trace_advice(-1, "kept a written file (writeback failed, here or before, "
				"or no stderr to say so: not asked for)", all, 0, 0);
		return false;
	}
	/*
	 * Counted as what was cached, not the size: a file written as a stream
	 * had most of it dropped, and counted, as it went (cp of one 128 MiB
	 * file counted 376 MiB dropped).
	 */
	if (uo_stats && (cached = uo_cached_pages(own)) >= 0 &&
	    (uint64_t)cached * uo_page_size() < size)
		size = (uint64_t)cached * uo_page_size();
	err = -uo_fadvise_dontneed(own, 0, 0);
	if (err) {
		UO_STAT_ADD(advice_errors, 1);
	} else {
		UO_STAT_ADD(tree_files, 1);
		UO_STAT_ADD(dropped, size);
	}
	uo_trace_advice(-1, "drop (a new file of the tree, written back)", all, err, 0);
	return !err;
}
