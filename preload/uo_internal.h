/*
 * What the parts of the preloaded library share.  Nothing here is exported:
 * the library is built with -fvisibility=hidden and a version script that
 * lists the hooks of hooks.def and nothing else.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UO_INTERNAL_H
#define UO_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "useonce.h"

#define UO_LIKELY(x)	__builtin_expect(!!(x), 1)
#define UO_UNLIKELY(x)	__builtin_expect(!!(x), 0)

/* Descriptors at or above this are passed through untouched. */
#define UO_FDTAB_MAX	(1u << 20)

/* The largest count one read/write/copy system call moves on Linux. */
#define UO_MAX_RW_COUNT	0x7ffff000ULL

struct uo_slot {
	_Atomic uint32_t owner;	/* 0 free, else the fork generation of the holder */
	_Atomic uint32_t stale;	/* closed while held: the next holder clears it */
	uint64_t dev;		/* identity of the file, recorded when it became a stream */
	uint64_t ino;
	struct uo_stream st;
};

/* fdtab.c */
struct uo_slot *uo_slot_get(int fd, bool create);
bool uo_slot_lock(struct uo_slot *s);
void uo_slot_unlock(struct uo_slot *s);
void uo_slot_clear(struct uo_slot *s);
void uo_slot_forget(struct uo_slot *s);
void uo_fdtab_forget_range(unsigned first, unsigned last);
void uo_fdtab_after_fork(void);

/* config.c: filled in once, by the constructor, before threads exist. */
struct uo_config {
	struct uo_tuning tuning;
	bool disabled;
	int trace_fd;		/* -1: no trace to a descriptor */
	char trace_path[256];	/* "": no trace to a file */
};
extern struct uo_config uo_config;
void uo_config_load(void);

/* trace.c: one line at a time, no malloc, no stdio, safe in signal handlers. */
struct uo_line {
	char buf[240];
	size_t len;
};
void uo_line_start(struct uo_line *l, int fd);
void uo_line_str(struct uo_line *l, const char *s);
void uo_line_num(struct uo_line *l, uint64_t v);
void uo_line_range(struct uo_line *l, struct uo_range r);
void uo_line_trace(struct uo_line *l);
void uo_warn(const char *what, const char *value, const char *why);
static inline bool uo_tracing(void)
{
	return uo_config.trace_fd >= 0 || uo_config.trace_path[0];
}

/* guard.c: from a hook's observation to advice applied. */
void uo_note(int fd, unsigned dir, uint64_t at, uint64_t len);
void uo_note_closing(int fd);
void uo_note_forget(int fd);
size_t uo_copy_window(int in, int out, size_t len);
int uo_stdio_fd(FILE *fp);

/* advise.c: the only place that gives the kernel advice. */
void uo_apply(int fd, const struct uo_advice *adv);

/* hooks.c */
void uo_resolve_all(void);


#endif /* UO_INTERNAL_H */
