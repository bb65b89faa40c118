/*
 * The plumbing: expands hooks.def into libc's function pointers, their
 * resolution and the wrappers.
 *
 * A wrapper calls libc's function first and returns its result untouched;
 * only when bytes moved does it tell the guard, with errno saved around.
 * libc's functions are resolved lazily, the first time each hook runs, so
 * hooks work before our constructor (other libraries' constructors read
 * files too) and a process that never calls one pays nothing for it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include "config.h"
#include "copy.h"
#include "fdtab.h"
#include "guard.h"
#include "stats.h"

/* stdio streams name their descriptor; fileno() sets errno for those without one. */
static inline int uo_stdio_fd(FILE *fp)
{
	int saved = errno, fd;

	if (!fp)
		return -1;
	/* fileno() takes no lock. */
	fd = fileno(fp);
	if (fd < 0)
		errno = saved;
	return fd;
}

/* With optimisation, stdio.h makes these macros; we need the functions. */
#undef fread_unlocked
#undef fwrite_unlocked
#undef fgets_unlocked
#undef getline

/* Fortified entry points: libc declares them only for fortified builds. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *fp);
size_t __fread_unlocked_chk(void *p, size_t plen, size_t size, size_t n, FILE *fp);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE	0x00000080	/* Linux 6.14 */
#endif

#define UO_EXPORT	__attribute__((visibility("default")))
#define UO_CURSOR	UO_UNKNOWN
#define UO_NO_OFFSET	((off64_t *)0)
#define UO_AT(off)	((off) < 0 ? UO_CURSOR : (uint64_t)(off))
#define UO_ONE(buf, n)	(&(struct iovec){ .iov_base = (buf), .iov_len = (n) })
#define UO_VECTOR	SIZE_MAX
/* The file position, for a read: preadv2's -1. */
#define UO_CUR		((off64_t)-1)
/* Below -1, which preadv2 would take for the file position. */
#define UO_POS(off)	((off) < 0 ? (off64_t)-2 : (off64_t)(off))
#define UO_POSITIVE(r)	((r) > 0 ? (uint64_t)(r) : 0)
/* Reads this big may have work before the call (uo_read_big). */
#define UO_READ_BIG	(64u * 1024u)

/* m(a, b, ...) with the parentheses of a row's last field taken off. */
#define UO_APPLY(m, ...)	m(__VA_ARGS__)
#define UO_APPLY_TWIN(m, ...)	m(__VA_ARGS__)
#define UO_UNPAREN(...)		__VA_ARGS__

/*
 * hooks.def is read twice: once for each row's function, with UO_OFF_T an
 * off_t, once for the large-file twins, with UO_OFF_T an off64_t (the same
 * type on 64-bit systems, not on 32-bit ones).
 */
#define UO_TWIN_PASS_1(...)	__VA_ARGS__
#define UO_TWIN_PASS_0(...)

/*
 * libc's functions, and a getter that finds each at its first call: looking
 * all 70 up at start would cost every process thousands of instructions.  The
 * price: the first call of a hook made from a signal handler runs dlsym(),
 * which is not async-signal-safe (in practice it can only go wrong if the
 * handler interrupted the loader itself, in dlopen).
 */
#define UO_REAL(name, ret, params)						\
	static ret (*uo_real_##name) params;					\
	static ret (*uo_get_##name(void)) params				\
	{									\
		ret (*fn) params = __atomic_load_n(&uo_real_##name, __ATOMIC_ACQUIRE); \
		if (UO_UNLIKELY(!fn)) {						\
			fn = (ret (*) params)dlsym(RTLD_NEXT, #name);		\
			__atomic_store_n(&uo_real_##name, fn, __ATOMIC_RELEASE); \
		}								\
		return fn;							\
	}

/* The start of every wrapper: libc's function, or ENOSYS if it has none. */
#define UO_FN(name, fail)							\
	__typeof__(uo_real_##name) uo_fn = uo_get_##name();		\
	if (UO_UNLIKELY(!uo_fn)) {						\
		errno = ENOSYS;							\
		return fail;							\
	}

/*
 * A wrapper: the kind's body, with the row's 'what' as its last arguments.
 * Kinds with a UO_PASS_kind test (reads, writes and stdio: below) are split in
 * three.  The exported function asks, before the call, whether there is
 * anything to do after it (guard.h, uo_pass); if not, it jumps to libc's
 * function, keeping no frame and no register of its own.  A write to
 * /dev/null or a pipe, or a stdio call its buffer serves, then costs a few
 * loads and a jump.  Otherwise it jumps to the kind's hot body (UO_HOT_kind),
 * out of line, which makes the call and counts what it moved, with libc's
 * function known; what it does not handle (a big read) it hands to the
 * whole body.  The whole body, which finds libc's function, runs the first
 * time.  Keeping the rare cases out of the hot body keeps its frame small:
 * a cached 4 KiB read of a file streamed pays a few dozen instructions.
 */
#define UO_WRAPPER(name, kind, ret, params, args, fail, what)			\
	UO_CAT(UO_WRAPPER_, UO_HAS_PASS(kind))(name, kind, ret, params, args, fail, what)

#define UO_WRAPPER_0(name, kind, ret, params, args, fail, what)		\
	UO_REAL(name, ret, params)						\
	UO_EXPORT ret name params						\
	{									\
		UO_APPLY(UO_BODY_##kind, name, ret, args, fail, UO_UNPAREN what) \
	}

#define UO_WRAPPER_1(name, kind, ret, params, args, fail, what)		\
	UO_REAL(name, ret, params)						\
	static __attribute__((noinline)) ret uo_whole_##name params		\
	{									\
		UO_FN(name, fail)						\
		UO_APPLY(UO_BODY_##kind, name, ret, args, fail, UO_UNPAREN what) \
	}									\
	static __attribute__((noinline)) ret uo_hot_##name params		\
	{									\
		__typeof__(uo_real_##name) uo_fn =				\
			__atomic_load_n(&uo_real_##name, __ATOMIC_ACQUIRE);	\
		/* Only called once it was found. */				\
		if (!uo_fn)							\
			__builtin_unreachable();				\
		UO_APPLY(UO_HOT_##kind, name, ret, args, fail, UO_UNPAREN what) \
	}									\
	UO_EXPORT ret name params						\
	{									\
		__typeof__(uo_real_##name) uo_fn =				\
			__atomic_load_n(&uo_real_##name, __ATOMIC_ACQUIRE);	\
		if (UO_UNLIKELY(!uo_fn))					\
			return uo_whole_##name args;				\
		if (UO_APPLY(UO_PASS_##kind, UO_UNPAREN what))			\
			return uo_fn args;					\
		return uo_hot_##name args;					\
	}

/* UO_HAS_PASS(kind): 1 if UO_PASS_kind is defined as "~, 1" says, else 0. */
#define UO_CAT(a, b)		UO_CAT_(a, b)
#define UO_CAT_(a, b)		a##b
#define UO_SECOND(a, b, ...)	b
#define UO_HAS_PASS(kind)	UO_APPLY(UO_SECOND, UO_HAS_PASS_##kind, 0, ~)
#define UO_HAS_PASS_IO		~, 1
#define UO_HAS_PASS_READ	~, 1

/* Nothing to do for a descriptor the guard ignores. */
#define UO_PASS_IO(fd, dir, at, bytes)	uo_pass(fd)

#define UO_HOT_IO(name, ret, args, fail, fd, dir, at, bytes)			\
		uint64_t uo_at = (at);						\
		ret uo_ret = uo_fn args;					\
		if ((bytes) > 0)						\
			UO_NOTE_RET(ret, (fd), (dir), uo_at, (uint64_t)(bytes), uo_ret); \
		return uo_ret;
#define UO_BODY_IO	UO_HOT_IO

static bool uo_read_big(int fd, const struct iovec *iov, int cnt, size_t len, off64_t off,
			int flags, ssize_t *out);

/*
 * A read, made uncached when the guard asked for it (see uo_read_big).
 * Only requests of UO_READ_BIG or more have anything to do before the
 * call; most reads (4 KiB from dd, stdio's refills) only look up their
 * slot after it.  A descriptor the guard ignores goes straight to libc.
 */
#define UO_PASS_READ(fd, iov, cnt, len, pos, flags)	uo_pass(fd)

#define UO_BODY_READ(name, ret, args, fail, fd, iov, cnt, len, pos, flags)	\
		ret uo_ret;							\
		if (!UO_UNLIKELY((len) >= UO_READ_BIG && uo_read_due(uo_slot_peek(fd))) || \
		    !uo_read_big((fd), (iov), (cnt), (len), (pos), (flags), &uo_ret)) \
			uo_ret = uo_fn args;					\
		if (uo_ret > 0)							\
			uo_note((fd), UO_READ, UO_AT(pos), (uint64_t)uo_ret);	\
		return uo_ret;

/* Most reads are small: the big ones, with work before the call, go the whole way. */
#define UO_HOT_READ(name, ret, args, fail, fd, iov, cnt, len, pos, flags)	\
		ret uo_ret;							\
		if (UO_UNLIKELY((len) >= UO_READ_BIG))				\
			return uo_whole_##name args;				\
		uo_ret = uo_fn args;						\
		if (uo_ret > 0)							\
			UO_NOTE_RET(ret, (fd), UO_READ, UO_AT(pos), (uint64_t)uo_ret, uo_ret); \
		return uo_ret;

/* Has a big read work before the call: a head to probe, or to be made uncached? */
static inline bool uo_read_due(const struct uo_slot *s)
{
	return uo_head_unprobed(s) ||
	       atomic_load_explicit(&s->uncached, memory_order_relaxed) == UO_UNCACHED_ON;
}

/*
 * stdio: most calls only copy a few bytes to or from the stream's buffer
 * (ls -l makes thousands of fwrite_unlocked calls of a few bytes each);
 * the kernel sees them when libc empties or refills the buffer, inside the
 * call or in a later one.  The buffer's pointers, in the FILE layout glibc
 * publishes for its own getc and putc macros, tell what one call moved to
 * or from the kernel: a call that did neither costs a few loads and never
 * looks for the descriptor.  Bytes put by the inline putc are counted too,
 * when the buffer they went to is written.  Another thread may use the
 * stream meanwhile (the _unlocked calls, or between locked ones): an answer
 * that cannot be right counts the call's own bytes.  libc crashes on a bad
 * stream as we do, but a request for nothing (fread of 0 bytes, fgets of
 * size 1, getline without a buffer) returns before touching the stream,
 * even a NULL or wild one: so do we (the rows' 'want' and 'asked').
 */
/*
 * libc declares these streams never NULL, and the compiler would take it at
 * its word and drop our checks: the pointer goes through an empty asm.
 */
static inline FILE *uo_stream(FILE *fp)
{
	__asm__("" : "+r"(fp));
	return fp;
}

static inline int64_t uo_stdio_held(FILE *fp, unsigned dir)
{
	fp = uo_stream(fp);
	if (UO_UNLIKELY(!fp))
		return 0;
	if (dir == UO_READ)
		return fp->_IO_read_end - fp->_IO_read_ptr;	/* read ahead, not yet taken */
	return fp->_IO_write_ptr - fp->_IO_write_base;		/* taken, not yet written */
}

/* What the call moved between the buffer and the kernel: 0 in the common case. */
static inline int64_t uo_stdio_moved(FILE *fp, unsigned dir, int64_t before, uint64_t bytes)
{
	int64_t after = uo_stdio_held(fp, dir);

	if (UO_UNLIKELY(!uo_stream(fp)))
		return 0;
	return dir == UO_READ ? (int64_t)bytes + after - before : before + (int64_t)bytes - after;
}

/* Out of the hook's way: the buffer was emptied or refilled. */
static __attribute__((noinline)) void uo_stdio_note(FILE *fp, unsigned dir, int64_t moved,
						    uint64_t bytes)
{
	int64_t size = fp->_IO_buf_end - fp->_IO_buf_base;

	if (moved < 0 || size < 0 || (uint64_t)moved > bytes + (uint64_t)size)
		moved = (int64_t)bytes;
	if (moved > 0)
		uo_note(uo_stdio_fd(fp), dir, UO_CURSOR, (uint64_t)moved);
}

/* What a refill brought: the bytes now in the read buffer. */
static inline uint64_t uo_stdio_filled(FILE *fp)
{
	return fp->_IO_read_end > fp->_IO_read_base ?
	       (uint64_t)(fp->_IO_read_end - fp->_IO_read_base) : 0;
}

/* What a flush wrote: a buffer's worth, as __overflow runs when it is full. */
static inline uint64_t uo_stdio_flushed(FILE *fp)
{
	return fp->_IO_buf_end > fp->_IO_buf_base ?
	       (uint64_t)(fp->_IO_buf_end - fp->_IO_buf_base) : 0;
}

/*
 * size * n, the bytes a stdio call asks for, as glibc computes it: wrapping
 * round on overflow (its fread, fwrite and their _unlocked twins do no more,
 * and return at once if that makes 0; __fread_chk aborts).  What libc does
 * with the request is then foretold exactly.
 */
static inline size_t uo_stdio_want(size_t size, size_t n)
{
	return size * n;
}

/*
 * Can the buffer serve the whole request, with no call to the kernel?
 * glibc takes what it can from the read buffer and refills only for the
 * rest; it copies into the write buffer's free space and flushes only past
 * it.  Line-buffered and unbuffered streams show no free space (their
 * _IO_write_end stays at _IO_write_ptr, which makes putc call __overflow),
 * so they always go the whole way.
 */
static inline bool uo_stdio_fits(FILE *fp, unsigned dir, size_t want)
{
	fp = uo_stream(fp);
	if (UO_UNLIKELY(!fp))
		return false;
	if (dir == UO_READ)
		return fp->_IO_read_end - fp->_IO_read_ptr >= 0 &&
		       (size_t)(fp->_IO_read_end - fp->_IO_read_ptr) >= want;
	return fp->_IO_write_end - fp->_IO_write_ptr >= 0 &&
	       (size_t)(fp->_IO_write_end - fp->_IO_write_ptr) >= want;
}

/* A request for nothing (libc returns at once), or one the buffer serves whole. */
#define UO_HAS_PASS_STDIO	~, 1
#define UO_HOT_STDIO		UO_BODY_STDIO
#define UO_PASS_STDIO(fp, dir, bytes, want)					\
	(!(want) || uo_stdio_fits((fp), (dir), (want)))

#define UO_BODY_STDIO(name, ret, args, fail, fp, dir, bytes, want)		\
		FILE *uo_fp = (want) ? (fp) : NULL;				\
		int64_t uo_held = uo_stdio_held(uo_fp, (dir)), uo_moved;	\
		ret uo_ret = uo_fn args;					\
		uo_moved = uo_stdio_moved(uo_fp, (dir), uo_held, (uint64_t)(bytes)); \
		if (UO_UNLIKELY(uo_moved != 0))					\
			uo_stdio_note(uo_fp, (dir), uo_moved, (uint64_t)(bytes)); \
		return uo_ret;

/*
 * A refill moves the read pointer back to the buffer's start, or changes
 * its end: a line longer than the buffer may hide one, which only delays
 * the count.
 */
#define UO_BODY_LINES(name, ret, args, fail, fp, ok, asked)			\
		FILE *uo_fp = (asked) ? uo_stream(fp) : NULL;			\
		char *uo_ptr = uo_fp ? uo_fp->_IO_read_ptr : NULL;		\
		char *uo_end = uo_fp ? uo_fp->_IO_read_end : NULL;		\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (uo_fp && (ok) && UO_UNLIKELY(uo_fp->_IO_read_ptr < uo_ptr ||	\
						 uo_fp->_IO_read_end != uo_end)) \
			uo_note(uo_stdio_fd(uo_fp), UO_READ, UO_CURSOR, uo_stdio_filled(uo_fp)); \
		return uo_ret;

/* One window at a time: copy.h. */
#define UO_BODY_COPY(name, ret, args, fail, in_fd, in_at, out_fd, out_at, want, split) \
		struct uo_copy uo_c;						\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_copy_begin(&uo_c, (in_fd), (in_at), sizeof(*(in_at)), (out_fd), \
			      (out_at), sizeof(*(out_at)), (want), (split));	\
		do {								\
			size_t uo_len = uo_c.len;				\
			uo_ret = uo_fn args;					\
		} while (uo_copy_next(&uo_c, uo_ret));				\
		return uo_copy_result(&uo_c, uo_ret);

#define UO_BODY_CLOSE(name, ret, args, fail, fd)				\
		UO_FN(name, fail)						\
		{								\
			int uo_saved = errno, uo_fd = (fd);			\
			uo_note_closing(uo_fd);					\
			errno = uo_saved;					\
		}								\
		return uo_fn args;

#define UO_BODY_REPLACE(name, ret, args, fail, old, new)			\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (uo_ret >= 0 && (old) != (new)) {				\
			int uo_saved = errno;					\
			uo_note_forget(new);					\
			errno = uo_saved;					\
		}								\
		return uo_ret;

#define UO_BODY_FORGET(name, ret, args, fail, first, last, closes)		\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (closes) {							\
			int uo_saved = errno;					\
			uo_fdtab_forget_range((first), (last));			\
			errno = uo_saved;					\
		}								\
		return uo_ret;

#define UO_BODY_FORGET_VOID(name, ret, args, fail, first, last)		\
		int uo_saved;							\
		UO_FN(name, fail)						\
		uo_fn args;							\
		uo_saved = errno;						\
		uo_fdtab_forget_range((first), (last));				\
		errno = uo_saved;

/* An open that made its file new: it truncated it, or created it exclusively. */
#define UO_OPEN_FRESH(flags)							\
	(((flags) & O_ACCMODE) != O_RDONLY &&					\
	 (((flags) & O_TRUNC) || ((flags) & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)))

/*
 * A descriptor opened while the process streams a tree: a file opened
 * read-only may be one more file of a read tree; one opened for writing
 * with O_CREAT or O_TRUNC (cp, tar x, rsync's receiver), one more of a
 * written tree.  Fresh when the open itself made it new.  Before any
 * tree, a fresh open is noted too (no system call, its slot only): if it
 * is written whole, it may be one of the files a tree copier writes
 * before it is known to be one (tree.c).
 */
static void uo_tree_open(int fd, int flags)
{
	unsigned on = uo_tree_streaming();

	if ((flags & O_ACCMODE) == O_RDONLY) {
		if (on & UO_GUARD_READ)
			uo_note_opened(fd, UO_READ, false);
	} else if ((on & UO_GUARD_WRITE) && (flags & (O_CREAT | O_TRUNC))) {
		uo_note_opened(fd, UO_WRITE, UO_OPEN_FRESH(flags));
	} else if (UO_OPEN_FRESH(flags)) {
		uo_note_opened(fd, UO_WRITE, true);
	}
}

/* open(2) reads a mode argument exactly when glibc's own open does. */
#define UO_NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE)

#define UO_BODY_OPEN(name, ret, args, fail, flags, variadic)			\
		mode_t uo_mode = 0;						\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		UO_TAKE_MODE_##variadic(flags)					\
		uo_ret = uo_fn args;						\
		uo_fd_opened(uo_ret);						\
		if (UO_UNLIKELY(uo_ret >= 0 &&					\
				(uo_tree_streaming() || UO_OPEN_FRESH(flags))))	\
			uo_tree_open((int)uo_ret, (flags));			\
		if (UO_UNLIKELY(uo_ret >= 0 && ((flags) & O_TMPFILE) == O_TMPFILE))	\
			uo_note_temp((int)uo_ret);				\
		(void)uo_mode;							\
		return uo_ret;
#define UO_TAKE_MODE_0(flags)
#define UO_TAKE_MODE_1(flags)							\
		if (UO_NEEDS_MODE(flags)) {					\
			va_list uo_ap;						\
			va_start(uo_ap, flags);					\
			uo_mode = va_arg(uo_ap, mode_t);			\
			va_end(uo_ap);						\
		}

#define UO_BODY_FOPEN(name, ret, args, fail, mode)				\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (uo_ret)							\
			uo_fd_opened(uo_stdio_fd(uo_ret));			\
		if (UO_UNLIKELY(uo_ret && (uo_tree_streaming() & UO_GUARD_READ)) && \
		    (mode)[0] == 'r' && !strchr((mode), '+'))			\
			uo_note_opened(uo_stdio_fd(uo_ret), UO_READ, false);	\
		return uo_ret;

#define UO_BODY_NEW(name, ret, args, fail, fd, ok)				\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (ok)								\
			uo_fd_opened(fd);					\
		return uo_ret;

/* A temporary file: its writes may be left to the kernel (policy.h, uo_temp_advice). */
#define UO_BODY_TEMP(name, ret, args, fail, fd, ok)				\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (ok) {							\
			uo_fd_opened(fd);					\
			uo_note_temp(fd);					\
		}								\
		return uo_ret;

#define UO_BODY_NEW_VA(name, ret, args, fail, fd, ok, last)			\
		void *uo_arg;							\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		{								\
			va_list uo_ap;						\
			va_start(uo_ap, last);					\
			uo_arg = va_arg(uo_ap, void *);				\
			va_end(uo_ap);						\
		}								\
		uo_ret = uo_fn args;						\
		if (ok)								\
			uo_fd_opened(fd);					\
		return uo_ret;

/*
 * libc closes the stream's descriptor and opens the new file (its own
 * calls, out of our reach), most often on the same number: the old stream
 * ends as at fclose.  It is closed even when the call fails.
 */
#define UO_BODY_REOPEN(name, ret, args, fail, fp)				\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		{								\
			int uo_saved = errno;					\
			uo_note_closing(uo_stdio_fd(fp));			\
			errno = uo_saved;					\
		}								\
		uo_ret = uo_fn args;						\
		if (uo_ret)							\
			uo_fd_opened(uo_stdio_fd(uo_ret));			\
		return uo_ret;

/* The rows' own functions... */
#define UO_TWIN(twin)	twin, 1
#define UO_ALONE	_, 0
#define UO_OFF_T	off_t
#define UO_HOOK(name, twin, kind, ret, params, args, fail, what)		\
	UO_WRAPPER(name, kind, ret, params, args, fail, what)
#include "hooks.def"
#undef UO_HOOK
#undef UO_OFF_T

/* ... and their large-file twins. */
#define UO_OFF_T	off64_t
#define UO_HOOK(name, twin, kind, ret, params, args, fail, what)		\
	UO_APPLY_TWIN(UO_HOOK_TWIN, twin, kind, ret, params, args, fail, what)
#define UO_HOOK_TWIN(twin, has_twin, kind, ret, params, args, fail, what)	\
	UO_TWIN_PASS_##has_twin(UO_WRAPPER(twin, kind, ret, params, args, fail, what))
#include "hooks.def"
#undef UO_HOOK
#undef UO_OFF_T
#undef UO_TWIN
#undef UO_ALONE

/*
 * A read of UO_READ_BIG or more: the file's head is probed before the
 * descriptor's first such read (guard.h), and the read is made with
 * preadv2 and RWF_DONTCACHE when the guard asked for it: the same result
 * as the program's own read (offset -1 reads at and moves the file
 * position), and the kernel keeps what was cached before.  False when
 * that does not apply (a request shorter than UO_UNCACHED_MIN, a fortify
 * check to run, a negative offset that is the kernel's error to give) or
 * the kernel or filesystem refuse the flag; then the program's own call is
 * made, as nothing was read.  A vector's lengths are not added up: the
 * array is the program's memory, which may not be readable (the program's
 * call then gets EFAULT, and so does ours), so vectors go uncached
 * whatever their size.
 */
_Static_assert(UO_READ_BIG <= UO_HEAD_PROBE_MIN && UO_READ_BIG <= UO_UNCACHED_MIN,
	       "reads that probe the head or go uncached are big");

static __attribute__((noinline)) bool uo_read_big(int fd, const struct iovec *iov, int cnt,
						  size_t len, off64_t off, int flags, ssize_t *out)
{
	ssize_t (*fn)(int, const struct iovec *, int, off64_t, int);
	struct uo_slot *s = uo_slot_peek(fd);
	int saved;

	if (UO_UNLIKELY(uo_head_unprobed(s)) && len >= UO_HEAD_PROBE_MIN) {
		uo_note_head(fd, off);
		s = uo_slot_peek(fd);
	}
	if (!s || atomic_load_explicit(&s->uncached, memory_order_relaxed) != UO_UNCACHED_ON)
		return false;
	fn = uo_get_preadv64v2();
	if (!fn || cnt <= 0 || cnt > IOV_MAX || off < -1 || len < UO_UNCACHED_MIN)
		return false;
	saved = errno;
	*out = fn(fd, iov, cnt, off, flags | RWF_DONTCACHE);
	if (*out < 0 && (errno == EOPNOTSUPP || errno == EINVAL)) {
		atomic_store_explicit(&s->uncached, UO_UNCACHED_REFUSED, memory_order_relaxed);
		errno = saved;
		return false;
	}
	return true;
}

/*
 * Every process of a desktop session may load us, most of them never moving
 * a big file: start-up does the least it can.  libc's functions are found
 * the first time each is called, as the loader's own lazy binding would.
 */
__attribute__((constructor(101))) static void uo_init(int argc, char **argv, char **envp)
{
	/* glibc passes main's arguments to constructors: argv names the program. */
	uo_fdtab_start();
	uo_config_load(argc > 0 ? argv : NULL);
	if (uo_stats_wanted())
		uo_stats_start();
}
