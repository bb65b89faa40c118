/*
 * USEONCE_STATS: what the guard did in this process, one line at exit.
 *
 * The counters are added to only in the slow path (a stream recognised,
 * advice given, once per window at most), never by the hooks' fast path.
 * They live in a page of their own, mapped only when statistics are asked
 * for and wiped in a forked child, which then reports its own work only.
 *
 * The guard says when to print (at exit, or just before the program closes
 * the descriptor the line goes to); a process that ends by _exit() or a
 * signal, or an exec that replaces it, prints nothing.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>

#include "policy.h"
#include "stats.h"
#include "sys.h"
#include "trace.h"

struct uo_stats *uo_stats;

void uo_stats_start(void)
{
	/* Kernels before 4.14 do not wipe it: a child then reports its parent's work too. */
	struct uo_stats *page = uo_map_private(sizeof(struct uo_stats));

	if (!page)
		return;
	page->pid = uo_getpid();
	uo_stats = page;
}

static uint64_t uo_get(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/*
 * useonce: stats: cp[1234]: streams 2 (read 1, write 1); read 1.0 GiB;
 * written 1.0 GiB; dropped 1.9 GiB; spared 0 B; writeback 1.0 GiB;
 * fallbacks 0; advice errors 0; tree files 0
 */
void uo_stats_print(const char *program, bool dryrun, const struct uo_dest *dest)
{
	static atomic_flag printed = ATOMIC_FLAG_INIT;
	struct uo_stats *st = uo_stats;
	struct uo_line l;
	uint64_t streams;

	if (!st)
		return;
	/* A vfork child shares our memory, counters and all: it is not us. */
	if (st->pid && st->pid != uo_getpid())
		return;
	streams = uo_get(&st->streams[UO_READ]) + uo_get(&st->streams[UO_WRITE]);
	if ((!streams && !uo_get(&st->tree_files)) || atomic_flag_test_and_set(&printed))
		return;
	l.len = 0;
	uo_line_str(&l, "useonce: stats: ");
	uo_line_value(&l, program);
	uo_line_str(&l, "[");
	uo_line_num(&l, (uint64_t)uo_getpid());
	uo_line_str(&l, dryrun ? "] (dry run, nothing was dropped): streams " :
		    "]: streams ");
	uo_line_num(&l, streams);
	uo_line_str(&l, " (read ");
	uo_line_num(&l, uo_get(&st->streams[UO_READ]));
	uo_line_str(&l, ", write ");
	uo_line_num(&l, uo_get(&st->streams[UO_WRITE]));
	uo_line_str(&l, "); read ");
	uo_line_bytes(&l, uo_get(&st->bytes[UO_READ]));
	uo_line_str(&l, "; written ");
	uo_line_bytes(&l, uo_get(&st->bytes[UO_WRITE]));
	uo_line_str(&l, "; dropped ");
	uo_line_bytes(&l, uo_get(&st->dropped));
	uo_line_str(&l, "; spared ");
	uo_line_bytes(&l, uo_get(&st->spared));
	uo_line_str(&l, "; writeback ");
	uo_line_bytes(&l, uo_get(&st->writeback));
	uo_line_str(&l, "; fallbacks ");
	uo_line_num(&l, uo_get(&st->fallbacks));
	uo_line_str(&l, "; advice errors ");
	uo_line_num(&l, uo_get(&st->advice_errors));
	uo_line_str(&l, "; tree files ");
	uo_line_num(&l, uo_get(&st->tree_files));
	uo_dest_write(dest, &l);
}
