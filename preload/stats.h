/*
 * What the guard did, counted for USEONCE_STATS: only in the slow path
 * (once per window, stream or advice), never in the hooks' fast path.  A
 * leaf: calls nothing of ours but the system calls.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_STATS_H
#define UO_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"

struct uo_stats {
	_Atomic uint64_t streams[2];	/* per uo_dir: descriptors that became streams */
	_Atomic uint64_t bytes[2];	/* per uo_dir: bytes those streams moved */
	_Atomic uint64_t dropped;	/* bytes advised out of the page cache */
	_Atomic uint64_t spared;	/* bytes of drop ranges kept: cached before */
	_Atomic uint64_t writeback;	/* bytes whose writeback was started early */
	_Atomic uint64_t fallbacks;	/* streams whose cache could not be probed (blind, old kernel) */
	_Atomic uint64_t advice_errors;	/* fadvise / sync_file_range failures */
	_Atomic uint64_t tree_files;	/* files of a tree dropped whole (at close, or once written) */
	int32_t pid;		/* who mapped them; 0 in a forked child (wiped) */
};

/* NULL unless statistics were asked for; a forked child starts from zero. */
extern struct uo_stats *uo_stats;

void uo_stats_start(void);

/*
 * The line, once per process, to 'dest' (trace.h's uo_dest_write).
 * 'program' names the process; 'dryrun' says nothing was dropped.
 */
void uo_stats_print(const char *program, bool dryrun, const struct uo_dest *dest);

#define UO_STAT_ADD(field, v)							\
	do {									\
		if (__builtin_expect(uo_stats != NULL, 0))			\
			atomic_fetch_add_explicit(&uo_stats->field, (uint64_t)(v), \
						  memory_order_relaxed);		\
	} while (0)

#endif /* UO_STATS_H */
