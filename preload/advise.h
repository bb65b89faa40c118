/*
 * The only place that advises the kernel about a program's file, and asks
 * it what is cached.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_ADVISE_H
#define UO_ADVISE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

/*
 * Applies the policy's advice.  'size': the file's size, to count advice
 * that runs to end of file; 'counted': statistics of drops are counted up
 * to there.  'unclean': 1 + where written ranges left for later (their
 * writeback had not ended) start, 0: none.  'closing': the tail of a stream
 * being closed.  Returns UO_APPLY_WB_FAILED if writeback of the drop range
 * failed: nothing was dropped, and nothing more of the stream should be.
 */
#define UO_APPLY_WB_FAILED	1u
unsigned uo_apply(int fd, const struct uo_advice *adv, uint64_t size, uint64_t *counted,
		  uint64_t *unclean, bool closing);
/*
 * Which folios of r were cached, and, for a reader, which lay wholly past
 * the end of the file, and where did it end (0: not past it)?  The UO_EV_*
 * answer for the policy.  eof: a reader's file size as last known (0: not
 * known), or UO_PROBE_WRITER.
 */
#define UO_PROBE_WRITER	UINT64_MAX
unsigned uo_probe(int fd, struct uo_range r, uint64_t align, uint64_t eof, uint64_t *cached,
		  uint64_t *unborn, uint64_t *unborn_from);
/* Pages of the whole file in the page cache, or -1 if that cannot be known. */
int64_t uo_cached_pages(int fd);
/*
 * A write stream's window from its next look on: smaller while other
 * writers of its memory domain have data in flight (policy.h,
 * uo_domain_step).  One cachestat, and the domain's figure at most every
 * 2 ms; the configured window, asking nothing, outside a memory domain.
 */
uint64_t uo_write_step(int fd, uint64_t *others);
/* The smaller of RAM and this process's memory cgroup limits; 0: unknown. */
uint64_t uo_memory_size(void);
/* The same if already found (no file read), else 0. */
uint64_t uo_memory_known(void);
/* Free memory now, of that: MemFree or the cgroup's limit less its usage, the smaller; 0: unknown. */
uint64_t uo_memory_free(void);
/* Does a file of this size fit comfortably in that memory (a quarter)? */
bool uo_fits_in_memory(uint64_t size);
/* Drops a whole file of a tree, 'size' bytes (counted, traced). */
void uo_drop_tree_file(int fd, uint64_t size);
/* A new file of a tree written whole: start its writeback; never waits, drops nothing. */
void uo_flush_tree_file(int fd, uint64_t size);
/*
 * Later, on a description of our own ('own', not the program's), the file
 * clean: dropped whole unless its writeback failed.  True if dropped.
 */
bool uo_drop_written_tree_file(int own, uint64_t size);
/* Has this process seen a writeback fail (it then drops no written page)? */
bool uo_writeback_failure_seen(void);
/*
 * May a written file's writeback error be asked now?  Not once one was
 * seen, nor without a standard error to say it on (advise.c).
 */
bool uo_writeback_askable(void);
/* Another process of the same run saw one: the same from now on, said by nobody. */
void uo_writeback_failure_heard(void);
/* Does anyone (this process too) hold a record lock on fd's file?  True when unknown. */
bool uo_file_locked(int fd);

#endif /* UO_ADVISE_H */
