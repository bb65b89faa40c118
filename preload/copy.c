/*
 * In-kernel copies cut into windows (copy.h says why and how).
 *
 * The program's offset pointers are its own memory and may be bad: the
 * kernel answers EFAULT for those, and so must the program's call made
 * under us.  They are never dereferenced before the kernel has used them.
 * Where the start offset is needed before the first call (to see whether
 * the whole request would overflow), it is read with process_vm_readv on
 * ourselves, which reports a bad pointer instead of faulting; after a call
 * that moved bytes, the offsets are known from what it moved.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "config.h"
#include "copy.h"
#include "guard.h"
#include "sys.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

/* Reads the program's offset without trusting the pointer: false if unreadable. */
static bool uo_peek_offset(const struct uo_copy_end *e, int64_t *out)
{
	struct iovec local, remote;
	union {
		int64_t wide;
		int32_t narrow;
	} v;

	if (e->width != sizeof(int64_t) && e->width != sizeof(int32_t))
		return false;
	local.iov_base = &v;
	local.iov_len = e->width;
	remote.iov_base = (void *)e->off;
	remote.iov_len = e->width;
	if (uo_sys(SYS_process_vm_readv, uo_getpid(), &local, 1, &remote, 1, 0) != (long)e->width)
		return false;
	*out = e->width == sizeof(int64_t) ? v.wide : v.narrow;
	return true;
}

/* Where this end starts: UO_UNKNOWN for the file position; false if it cannot be told. */
static bool uo_copy_start(struct uo_copy_end *e)
{
	int64_t off;

	e->at = UO_UNKNOWN;
	if (!e->off)
		return true;
	if (!uo_peek_offset(e, &off) || off < 0)
		return false;
	e->at = (uint64_t)off;
	return true;
}

/* Would len bytes from this end (at the cursor if UO_UNKNOWN) end past max_end? */
static bool uo_copy_end_overflows(const struct uo_copy_end *e, uint64_t len, uint64_t max_end)
{
	uint64_t at = e->at;

	if (at == UO_UNKNOWN) {
		int64_t pos = uo_cursor(e->fd);

		if (pos < 0)
			return true;	/* not ours to reason about: copy as asked */
		at = (uint64_t)pos;
	}
	return at > max_end || len > max_end - at;
}

/*
 * The window a copy is cut to, or len if it is made as asked.  The kernel
 * refuses a copy whose end would overflow an offset, however little it
 * would have copied (copy_file_range: EOVERFLOW, sendfile: EINVAL); cut
 * into windows, the same request would be accepted.  Such a request is
 * made as asked.  cp's length (2^63 - 2^30) never wraps.
 */
static size_t uo_copy_window(const struct uo_copy *c, int split)
{
	struct uo_file a, b;

	struct rlimit rl;

	if (split == UO_SPLIT_NONE || uo_config.disabled || !c->known ||
	    c->want <= uo_config.tuning.window)
		return c->want;
	/*
	 * Under a file size limit, a window ending on the limit would make
	 * the next call start there, and the kernel answers that with
	 * SIGXFSZ where the whole request got a short count.
	 */
	if (uo_sys(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &rl) != 0 || rl.rlim_cur != RLIM_INFINITY)
		return c->want;
	if (uo_fstat(c->in.fd, &a) != 0 || !S_ISREG(a.mode))
		return c->want;
	/* Overlap checks are made on the whole request; cutting it could change them. */
	if (uo_fstat(c->out.fd, &b) == 0 && a.dev == b.dev && a.ino == b.ino)
		return c->want;
	if (split == UO_SPLIT_SIGNED ? uo_copy_end_overflows(&c->in, c->want, INT64_MAX) :
	    uo_copy_end_overflows(&c->in, c->want, UINT64_MAX) ||
	    uo_copy_end_overflows(&c->out, c->want, UINT64_MAX))
		return c->want;
	return uo_config.tuning.window;
}

void uo_copy_begin(struct uo_copy *c, int in, const void *in_off, unsigned in_width, int out,
		   const void *out_off, unsigned out_width, size_t len, int split)
{
	c->saved_errno = errno;
	c->in.fd = in;
	c->in.off = in_off;
	c->in.width = in_width;
	c->out.fd = out;
	c->out.off = out_off;
	c->out.width = out_width;
	c->want = len;
	c->total = 0;
	c->known = false;
	c->len = len;
	/* cp copies a whole file from its start: its head is probed as a reader's is. */
	if (!in_off && len >= UO_HEAD_PROBE_MIN && uo_head_unprobed(uo_slot_peek(in)))
		uo_note_head(in, -1);
	/* Offsets are read before the call only where a copy may be cut. */
	if (split == UO_SPLIT_NONE || len <= uo_config.tuning.window || uo_config.disabled)
		return;
	c->known = uo_copy_start(&c->in) && uo_copy_start(&c->out);
	c->len = uo_copy_window(c, split);
	errno = c->saved_errno;
}

/* After a call that moved bytes: where it started, from the offsets it advanced. */
static void uo_copy_learn(struct uo_copy_end *e, uint64_t moved)
{
	int64_t now;

	e->at = UO_UNKNOWN;
	if (!e->off)
		return;
	/* The kernel has just read and written it: the program's memory is good. */
	now = e->width == sizeof(int64_t) ? *(const int64_t *)e->off : *(const int32_t *)e->off;
	e->at = now >= 0 && (uint64_t)now >= moved ? (uint64_t)now - moved : UO_UNKNOWN;
}

bool uo_copy_next(struct uo_copy *c, ssize_t ret)
{
	int saved = errno;
	uint64_t in_at, out_at;

	if (ret <= 0)
		return false;
	if (c->known) {
		in_at = c->in.at;
		out_at = c->out.at;
	} else {
		uo_copy_learn(&c->in, (uint64_t)ret);
		uo_copy_learn(&c->out, (uint64_t)ret);
		in_at = c->in.at;
		out_at = c->out.at;
		c->known = (!c->in.off || in_at != UO_UNKNOWN) && (!c->out.off || out_at != UO_UNKNOWN);
	}
	c->total += (size_t)ret;
	/* An offset that could not be told is not passed off as the cursor's. */
	if (!c->in.off || in_at != UO_UNKNOWN)
		uo_note(c->in.fd, UO_READ, in_at, (uint64_t)ret);
	if (!c->out.off || out_at != UO_UNKNOWN)
		uo_note(c->out.fd, UO_WRITE, out_at, (uint64_t)ret);
	if (c->in.at != UO_UNKNOWN)
		c->in.at += (uint64_t)ret;
	if (c->out.at != UO_UNKNOWN)
		c->out.at += (uint64_t)ret;
	errno = saved;
	if ((size_t)ret < c->len || c->total >= c->want || c->total >= UO_MAX_RW_COUNT)
		return false;
	if (c->len > c->want - c->total)
		c->len = c->want - c->total;
	if (c->len > UO_MAX_RW_COUNT - c->total)
		c->len = UO_MAX_RW_COUNT - c->total;
	return true;
}

ssize_t uo_copy_result(const struct uo_copy *c, ssize_t ret)
{
	if (c->total == 0)
		return ret;
	errno = c->saved_errno;
	return (ssize_t)c->total;
}
