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
#include <errno.h>
#include <unistd.h>

#include "useonce.h"
#include "conf.h"

#define UO_LIKELY(x)	__builtin_expect(!!(x), 1)
#define UO_UNLIKELY(x)	__builtin_expect(!!(x), 0)

/* Descriptors at or above this are passed through untouched. */
#define UO_FDTAB_MAX	(1u << 20)

/* The largest count one read/write/copy system call moves on Linux. */
#define UO_MAX_RW_COUNT	0x7ffff000ULL

struct uo_file {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	uint64_t mtime_ns;
	uint32_t mode;
	uint32_t uid;
};

#define UO_FDTAB_CHUNK	256u

#define UO_OPENED_UNKNOWN	0u	/* opened before tree mode, or not read-only */
#define UO_OPENED_COLD		1u	/* none of it was cached: ours to drop at close */
#define UO_OPENED_CACHED	2u	/* someone had it cached: leave it */

/*
 * A read stream whose cached pages we cannot see (another user's file) is
 * read with RWF_DONTCACHE (Linux 6.14): the kernel itself keeps what was
 * cached before and drops the rest.  Only for reads of 64 KiB or more:
 * 4 KiB reads ran at 250 MB/s with it against 348 MB/s without.
 */
#define UO_UNCACHED_OFF		0u
#define UO_UNCACHED_ON		1u
#define UO_UNCACHED_REFUSED	2u	/* the filesystem or kernel said no: never again here */
#define UO_UNCACHED_MIN		(64u * 1024u)
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE		0x00000080
#endif

struct uo_slot {
	_Atomic uint64_t counted[2];	/* per uo_dir: bytes moved at the cursor, not yet given to the policy */
	_Atomic uint32_t owner;	/* 1 while a hook works on the slot */
	_Atomic uint32_t stale;	/* closed while held: the next holder clears it */
	_Atomic uint32_t uncached; /* UO_UNCACHED_*: reads go through RWF_DONTCACHE */
	uint32_t opened;	/* UO_OPENED_*: what the file was when opened in tree mode */
	struct uo_file file;	/* what the file was when the descriptor became a stream */
	struct uo_stream st;
	uint64_t counted_to;	/* statistics: the stream's bytes are counted up to here */
	uint64_t drops_counted;	/* statistics: its drops are counted up to here */
};

/* fdtab.c */
extern _Atomic(struct uo_slot *) uo_fdtab_chunks[UO_FDTAB_MAX / UO_FDTAB_CHUNK];
/* The descriptor's slot, its chunk mapped if need be; uo_slot_peek only looks. */
struct uo_slot *uo_slot_get(int fd);
void uo_slot_clear(struct uo_slot *s);
void uo_slot_forget(struct uo_slot *s);
void uo_fdtab_forget_range(unsigned first, unsigned last);

/* config.c: filled in once, by the constructor, before threads exist. */
struct uo_config {
	struct uo_tuning tuning;
	bool disabled;
	bool only_always;	/* enable = no: only files under an always rule are guarded */
	bool dryrun;		/* decide as usual, give no advice */
	int trace_fd;		/* -1: no trace to a descriptor */
	char trace_path[256];	/* "": no trace to a file */
	uint32_t reuse_s;	/* a file streamed again within this is left cached; 0: never */
	char record_path[256];	/* the user's record of recent streams; "": none */
	int stats_fd;		/* -1: no statistics to a descriptor */
	char stats_path[256];	/* "": no statistics to a file */
};
extern struct uo_config uo_config;
extern struct uo_rules uo_rules;	/* never/always rules of the config files */
void uo_config_load(char *const *argv);
const char *uo_program_name(void);	/* argv[0]'s basename, for the statistics */

/*
 * stats.c: what the guard did, counted only in the slow path (once per
 * window, stream or advice), never in the hooks' fast path.  NULL unless
 * USEONCE_STATS asked for them; a forked child starts from zero.
 */
struct uo_stats {
	_Atomic uint64_t streams[2];	/* per uo_dir: descriptors that became streams */
	_Atomic uint64_t bytes[2];	/* per uo_dir: bytes those streams moved */
	_Atomic uint64_t dropped;	/* bytes advised out of the page cache */
	_Atomic uint64_t spared;	/* bytes of drop ranges kept: cached before */
	_Atomic uint64_t writeback;	/* bytes whose writeback was started early */
	_Atomic uint64_t fallbacks;	/* streams whose cache could not be probed (blind, old kernel) */
	_Atomic uint64_t advice_errors;	/* fadvise / sync_file_range failures */
	_Atomic uint64_t tree_files;	/* small files of a tree dropped whole at close */
	int32_t pid;		/* who mapped them; 0 in a forked child (wiped) */
};
extern struct uo_stats *uo_stats;
void uo_stats_start(void);
void uo_stats_print(void);	/* once: at exit, or when the program closes its descriptor */
#define UO_STAT_ADD(field, v)							\
	do {									\
		if (UO_UNLIKELY(uo_stats != NULL))				\
			atomic_fetch_add_explicit(&uo_stats->field, (uint64_t)(v), \
						  memory_order_relaxed);		\
	} while (0)

/* trace.c: one line at a time, no malloc, no stdio, safe in signal handlers. */
struct uo_line {
	char buf[320];
	size_t len;
};
void uo_line_start(struct uo_line *l, int fd);
void uo_line_str(struct uo_line *l, const char *s);
void uo_line_num(struct uo_line *l, uint64_t v);
void uo_line_range(struct uo_line *l, struct uo_range r);
void uo_line_trace(struct uo_line *l);
/* Warnings, built but not written: "useonce: NAME=VALUE: why; ignored". */
void uo_line_warning(struct uo_line *l, const char *what, const char *value, const char *why);
/* "useonce: FILE:LINE: KEY = VALUE: why; ignored" (line 0: the file as a whole). */
void uo_line_warning_at(struct uo_line *l, const char *file, unsigned line, const char *key,
			const char *value, const char *why);
void uo_line_path(struct uo_line *l, const char *path);	/* printable bytes only, 200 at most */
void uo_line_bytes(struct uo_line *l, uint64_t v);	/* 1.5 GiB */
void uo_line_value(struct uo_line *l, const char *s);	/* printable bytes only, cut short */
void uo_line_write(struct uo_line *l, int fd);		/* with a newline, one write */
static inline bool uo_tracing(void)
{
	return uo_config.trace_fd >= 0 || uo_config.trace_path[0];
}

/* guard.c: from a hook's observation to advice applied. */
void uo_note_slow(int fd, unsigned dir, uint64_t at, uint64_t len);
void uo_note_closing(int fd);
void uo_note_forget(int fd);
void uo_note_opened(int fd);
extern _Atomic bool uo_tree_on;	/* the process is streaming a tree of files */
/* How a copy may be cut: the kernel refuses one whose end overflows an offset. */
#define UO_SPLIT_NONE	0	/* never cut */
#define UO_SPLIT_WRAP	1	/* refused when either offset + length wraps 2^64 (copy_file_range) */
#define UO_SPLIT_SIGNED	2	/* refused when the input offset + length passes 2^63 - 1 (sendfile) */
size_t uo_copy_window(int in, uint64_t in_at, int out, uint64_t out_at, size_t len, int split);
void uo_stats_open_streams(void);	/* count what streams still open have moved */
int uo_stdio_fd(FILE *fp);

/*
 * A system call without libc: returns the result, or -errno.  The
 * constructor runs in every process started, and the first call of libc's
 * syscall() there cost each one a symbol lookup (2,000 instructions, more
 * than the rest of the constructor).
 */
static inline long uo_sys(long n, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
#else
	long ret = syscall(n, a, b, c, d);

	return ret < 0 ? -errno : ret;
#endif
}

/* sys.c: system calls made without libc's versioned wrappers. */
int uo_fstat(int fd, struct uo_file *f);
int uo_sync_file_range(int fd, uint64_t off, uint64_t len, unsigned flags);

/* record.c: the user's recently streamed files. */
bool uo_record_streamed_again(const struct uo_file *f);

/* advise.c: the only place that gives the kernel advice. */
/*
 * 'size': the file's size, to count advice that runs to end of file;
 * 'counted': statistics of drops are counted up to there.
 */
void uo_apply(int fd, const struct uo_advice *adv, uint64_t size, uint64_t *counted);
unsigned uo_probe(int fd, struct uo_range r, uint64_t align, uint64_t *cached);
int64_t uo_cached_pages(int fd);


/* The slot of a descriptor that has moved data before, without creating one. */
static inline struct uo_slot *uo_slot_peek(int fd)
{
	struct uo_slot *chunk;

	if ((unsigned)fd >= UO_FDTAB_MAX)
		return NULL;
	chunk = atomic_load_explicit(&uo_fdtab_chunks[(unsigned)fd / UO_FDTAB_CHUNK],
				     memory_order_acquire);
	return chunk ? &chunk[(unsigned)fd % UO_FDTAB_CHUNK] : NULL;
}

/*
 * A try-lock that never waits: a hook that finds its slot busy (another
 * thread, or a signal handler that interrupted us) skips its bookkeeping.
 */
static inline bool uo_slot_lock(struct uo_slot *s)
{
	uint32_t free_ = 0;

	if (atomic_load_explicit(&s->owner, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong_explicit(&s->owner, &free_, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return false;
	if (UO_UNLIKELY(atomic_load_explicit(&s->stale, memory_order_relaxed))) {
		/* Closed while another hook held it: start afresh. */
		atomic_store_explicit(&s->stale, 0, memory_order_relaxed);
		uo_slot_clear(s);
	}
	return true;
}

static inline void uo_slot_unlock(struct uo_slot *s)
{
	atomic_store_explicit(&s->owner, 0, memory_order_release);
}

/*
 * Called by every hook that moved bytes, so it must cost next to nothing:
 * a read of cached data is a few hundred nanoseconds.  Bytes moved at the
 * cursor are only counted here; the policy hears of them once a window of
 * them has passed.  Touches no errno and makes no system call.
 */
static inline void uo_note_slot(struct uo_slot *s, int fd, unsigned dir, uint64_t at,
				uint64_t len)
{
	if (at == UO_UNKNOWN) {
		if (s && atomic_fetch_add_explicit(&s->counted[dir], len, memory_order_relaxed) + len <
			 uo_config.tuning.window)
			return;
	} else if (s && uo_slot_lock(s)) {
		struct uo_event ev = { .end = at + len, .len = len, .dir = (uint8_t)dir };
		bool quiet = uo_observe_quiet(&s->st, &uo_config.tuning, &ev);

		uo_slot_unlock(s);
		if (quiet)
			return;
	}
	/* Bytes already counted in the slot are not passed again. */
	uo_note_slow(fd, dir, at, at == UO_UNKNOWN && s ? 0 : len);
}

static inline void uo_note(int fd, unsigned dir, uint64_t at, uint64_t len)
{
	uo_note_slot(uo_slot_peek(fd), fd, dir, at, len);
}

#endif /* UO_INTERNAL_H */
