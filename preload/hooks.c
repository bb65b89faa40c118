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
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include "uo_internal.h"

/* With optimisation, stdio.h makes these macros; we need the functions. */
#undef fread_unlocked
#undef fwrite_unlocked

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

#define UO_EXPORT	__attribute__((visibility("default")))
#define UO_CURSOR	UO_UNKNOWN
#define UO_NO_OFFSET	((off64_t *)0)
#define UO_AT(off)	((off) < 0 ? UO_CURSOR : (uint64_t)(off))
#define UO_AT_PTR(p)	((p) ? UO_AT(*(p)) : UO_CURSOR)
#define UO_ONE(buf, n)	(&(struct iovec){ .iov_base = (buf), .iov_len = (n) })
#define UO_LEN_UNKNOWN	SIZE_MAX
/* Below -1, which preadv2 would take for the file position. */
#define UO_POS(off)	((off) < 0 ? (off64_t)-2 : (off64_t)(off))
#define UO_POSITIVE(r)	((r) > 0 ? (uint64_t)(r) : 0)

/*
 * libc's functions, and a getter that finds each at its first call: looking
 * all 45 up at start would cost every process thousands of instructions.  The
 * price: the first call of a hook made from a signal handler runs dlsym(),
 * which is not async-signal-safe (in practice it can only go wrong if the
 * handler interrupted the loader itself, in dlopen).
 */
#define UO_REAL(ret, name, params)						\
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
#define UO_IO(ret, name, params, ...)			UO_REAL(ret, name, params)
#define UO_READING(ret, name, params, ...)		UO_REAL(ret, name, params)
#define UO_COPY(ret, name, params, ...)			UO_REAL(ret, name, params)
#define UO_CLOSE(ret, name, params, ...)		UO_REAL(ret, name, params)
#define UO_REPLACE(ret, name, params, ...)		UO_REAL(ret, name, params)
#define UO_FORGET_RANGE(ret, name, params, ...)		UO_REAL(ret, name, params)
#define UO_FORGET_FROM(name, params, ...)		UO_REAL(void, name, params)
#define UO_OPEN(ret, name, params, ...)			UO_REAL(ret, name, params)
#define UO_FOPEN(ret, name, params, ...)		UO_REAL(ret, name, params)
#include "hooks.def"
#undef UO_IO
#undef UO_READING
#undef UO_COPY
#undef UO_CLOSE
#undef UO_REPLACE
#undef UO_FORGET_RANGE
#undef UO_FORGET_FROM
#undef UO_OPEN
#undef UO_FOPEN

/* The start of every wrapper: libc's function, or ENOSYS if it has none. */
#define UO_FN(name, fail)							\
	__typeof__(uo_real_##name) uo_fn = uo_get_##name();		\
	if (UO_UNLIKELY(!uo_fn)) {						\
		errno = ENOSYS;							\
		return fail;							\
	}

#define UO_IO(ret, name, params, args, fail, fd, dir, at, bytes)		\
	UO_EXPORT ret name params						\
	{									\
		uint64_t uo_at = (at);						\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if ((bytes) > 0)						\
			uo_note((fd), (dir), uo_at, (uint64_t)(bytes));		\
		return uo_ret;							\
	}

static bool uo_read_uncached(struct uo_slot *s, int fd, const struct iovec *iov, int cnt,
			     size_t len, off64_t off, int flags, ssize_t *out);

/* A read, made uncached when the guard asked for it (see uo_read_uncached). */
#define UO_READING(ret, name, params, args, fail, fd, at, bytes, iov, cnt, len, off, flags) \
	UO_EXPORT ret name params						\
	{									\
		uint64_t uo_at = (at);						\
		struct uo_slot *uo_s = uo_slot_peek(fd);			\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		if (!UO_UNLIKELY(uo_s && atomic_load_explicit(&uo_s->uncached,	\
				 memory_order_relaxed) == UO_UNCACHED_ON) ||	\
		    !uo_read_uncached(uo_s, (fd), (iov), (cnt), (len), (off), (flags), &uo_ret)) \
			uo_ret = uo_fn args;					\
		if ((bytes) > 0)						\
			uo_note_slot(uo_s, (fd), UO_READ, uo_at, (uint64_t)(bytes)); \
		return uo_ret;							\
	}

/*
 * A copy larger than a window is made one window at a time, so the guard
 * can drop behind both ends as it goes (cp copies a whole file in one
 * call).  The kernel may always copy less than asked, so stopping early
 * changes nothing a correct program relies on; what was copied is reported
 * and an error after progress is left for the next call, as the kernel does.
 */
#define UO_COPY(ret, name, params, args, fail, in, in_at, out, out_at, len, split) \
	UO_EXPORT ret name params						\
	{									\
		size_t uo_want = (len), uo_len = uo_want, uo_total = 0;		\
		int uo_saved = errno;						\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		if (split)							\
			uo_len = uo_copy_window((in), UO_AT_PTR(in_at), (out),	\
						UO_AT_PTR(out_at), uo_want, (split)); \
		for (;;) {							\
			uint64_t uo_in_at = UO_AT_PTR(in_at);			\
			uint64_t uo_out_at = UO_AT_PTR(out_at);			\
			uo_ret = uo_fn args;					\
			if (uo_ret <= 0)					\
				break;						\
			uo_total += (size_t)uo_ret;				\
			uo_note((in), UO_READ, uo_in_at, (uint64_t)uo_ret);	\
			uo_note((out), UO_WRITE, uo_out_at, (uint64_t)uo_ret);	\
			if ((size_t)uo_ret < uo_len || uo_total >= uo_want ||	\
			    uo_total >= UO_MAX_RW_COUNT)			\
				break;						\
			if (uo_len > uo_want - uo_total)			\
				uo_len = uo_want - uo_total;			\
			if (uo_len > UO_MAX_RW_COUNT - uo_total)		\
				uo_len = UO_MAX_RW_COUNT - uo_total;		\
		}								\
		if (uo_total == 0)						\
			return uo_ret;						\
		errno = uo_saved;						\
		return (ret)uo_total;						\
	}

#define UO_CLOSE(ret, name, params, args, fail, fd)				\
	UO_EXPORT ret name params						\
	{									\
		UO_FN(name, fail)						\
		{								\
			int uo_saved = errno;					\
			uo_note_closing(fd);					\
			errno = uo_saved;					\
		}								\
		return uo_fn args;						\
	}

#define UO_REPLACE(ret, name, params, args, fail, old, new)			\
	UO_EXPORT ret name params						\
	{									\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (uo_ret >= 0 && (old) != (new)) {				\
			int uo_saved = errno;					\
			uo_note_forget(new);					\
			errno = uo_saved;					\
		}								\
		return uo_ret;							\
	}

#define UO_FORGET_RANGE(ret, name, params, args, fail, first, last, closes)	\
	UO_EXPORT ret name params						\
	{									\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (uo_ret == 0 && (closes)) {					\
			int uo_saved = errno;					\
			uo_fdtab_forget_range((first), (last));			\
			errno = uo_saved;					\
		}								\
		return uo_ret;							\
	}

#define UO_FORGET_FROM(name, params, args, first)				\
	UO_EXPORT void name params						\
	{									\
		int uo_saved;							\
		UO_FN(name, )							\
		uo_fn args;							\
		uo_saved = errno;						\
		uo_fdtab_forget_range((first) < 0 ? 0u : (unsigned)(first), ~0u); \
		errno = uo_saved;						\
	}

/* open(2) reads a mode argument exactly when glibc's own open does. */
#define UO_NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE)

#define UO_OPEN(ret, name, params, args, fail, flags, variadic)		\
	UO_EXPORT ret name params						\
	{									\
		mode_t uo_mode = 0;						\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		UO_TAKE_MODE_##variadic(flags)					\
		uo_ret = uo_fn args;						\
		if (UO_UNLIKELY(uo_ret >= 0 &&					\
				atomic_load_explicit(&uo_tree_on, memory_order_relaxed)) && \
		    ((flags) & O_ACCMODE) == O_RDONLY)				\
			uo_note_opened(uo_ret);					\
		(void)uo_mode;							\
		return uo_ret;							\
	}
#define UO_TAKE_MODE_0(flags)
#define UO_TAKE_MODE_1(flags)							\
		if (UO_NEEDS_MODE(flags)) {					\
			va_list uo_ap;						\
			va_start(uo_ap, flags);					\
			uo_mode = va_arg(uo_ap, mode_t);			\
			va_end(uo_ap);						\
		}

#define UO_FOPEN(ret, name, params, args, fail, mode)				\
	UO_EXPORT ret name params						\
	{									\
		ret uo_ret;							\
		UO_FN(name, fail)						\
		uo_ret = uo_fn args;						\
		if (UO_UNLIKELY(uo_ret &&					\
				atomic_load_explicit(&uo_tree_on, memory_order_relaxed)) && \
		    (mode)[0] == 'r' && !strchr((mode), '+'))			\
			uo_note_opened(uo_stdio_fd(uo_ret));			\
		return uo_ret;							\
	}

#include "hooks.def"

/*
 * preadv2 with RWF_DONTCACHE: the same result as the program's own read
 * (offset -1 reads at and moves the file position), and the kernel keeps
 * what was cached before.  False when it does not apply (a short request,
 * a fortify check to run, a negative offset that is the kernel's error to
 * give) or the kernel or filesystem refuse the flag; then the program's
 * own call is made, as nothing was read.  A vector's lengths are not
 * added up: the array is the program's memory, which may not be readable
 * (the program's call then gets EFAULT, and so does ours), so vectors go
 * uncached whatever their size.
 */
static bool uo_read_uncached(struct uo_slot *s, int fd, const struct iovec *iov, int cnt,
			     size_t len, off64_t off, int flags, ssize_t *out)
{
	ssize_t (*fn)(int, const struct iovec *, int, off64_t, int) = uo_get_preadv64v2();
	int saved = errno;

	if (!fn || cnt <= 0 || cnt > IOV_MAX || off < -1 || len < UO_UNCACHED_MIN)
		return false;
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
	uo_config_load(argc > 0 ? argv : NULL);
	if (!uo_config.disabled && (uo_config.stats_fd >= 0 || uo_config.stats_path[0]))
		uo_stats_start();
}
