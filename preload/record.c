/*
 * The user's recently streamed files, shared by all their processes.
 *
 * Use-once is a guess.  A file streamed again soon (a log grepped four
 * times, an input a build reads on every run) is better left to the
 * kernel's cache, if it fits comfortably in memory (the guard asks
 * advise.c: RAM or the cgroup's limit).  Each stream is noted here when it
 * is recognised; one noted within USEONCE_REUSE seconds before is not
 * dropped.
 *
 * A small file of fixed-size entries, read and written with raw pread and
 * pwrite (our own hooks stay out of it) when a stream is recognised, never
 * mapped: a file shrunk by someone else cannot bring SIGBUS into the
 * program.  No locks: an entry
 * carries a check word, and one torn by two processes writing at once is
 * taken as empty.  The worst a damaged or hostile record can do is make
 * one stream be dropped or kept.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "record.h"
#include "sys.h"
#include "userdir.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

#define UO_RECORD_MAGIC		0x3163657265737575ULL	/* "uusrec1" */
#define UO_RECORD_SLOTS		512
#define UO_RECORD_PROBES	4
#define UO_RECORD_CHECK		0x9e3779b97f4a7c15ULL

struct uo_record_entry {
	uint64_t key;		/* hash of device, inode, size, mtime; 0: empty */
	uint64_t seen;		/* CLOCK_REALTIME seconds of the last stream */
	uint64_t check;		/* key ^ seen ^ UO_RECORD_CHECK, else torn */
};

#define UO_RECORD_SIZE	(sizeof(uint64_t) + UO_RECORD_SLOTS * sizeof(struct uo_record_entry))

/*
 * After the entries: what the processes of one parent (find -exec cp,
 * xargs -n1, a shell loop) leave to the next, UO_RECORD_PARENTS parents
 * at once: their runs (both directions) and the written files still being
 * written back at their exit.  Every piece checks itself (policy.h,
 * uo_tree_share_get, uo_handoff_sound); a block shared by two parents
 * only makes one of them start its run again, and a block two siblings
 * write at once (xargs -P) loses files, which then stay cached.
 */
#define UO_RECORD_PARENTS	4
#define UO_RECORD_TOTAL		(UO_RECORD_SIZE + UO_RECORD_PARENTS * sizeof(struct uo_record_sibling))

/* The same file, unchanged: a changed file is another stream. */
static uint64_t uo_record_key(const struct uo_file *f)
{
	uint64_t h = uo_mix(uo_mix(uo_mix(uo_mix(1, f->dev), f->ino), f->size), f->mtime_ns);

	return h ? h : 1;
}

/* Opens (creating) the record; -1 if it is not ours or not usable. */
static int uo_record_open(void)
{
	uint64_t magic = 0;
	struct uo_file f;
	int dir = uo_userdir_open(), fd;

	if (dir < 0)
		return -1;
	fd = (int)uo_sys(SYS_openat, dir, "useonce-streams",
			 O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	uo_sys(SYS_close, dir);
	if (fd < 0)
		return -1;
	if (uo_fstat(fd, &f) != 0 || !S_ISREG(f.mode) || f.uid != (uint32_t)uo_sys(SYS_geteuid))
		goto bad;
	/* Never shrunk: another process may be reading it. */
	if (f.size < UO_RECORD_TOTAL && uo_sys(SYS_ftruncate, fd, UO_RECORD_TOTAL) != 0)
		goto bad;
	if (uo_sys(SYS_pread64, fd, &magic, sizeof(magic), 0) != (long)sizeof(magic))
		goto bad;
	if (magic != UO_RECORD_MAGIC) {
		/* New, or not ours to understand: start it afresh. */
		static const char zero[UO_RECORD_SIZE];

		magic = UO_RECORD_MAGIC;
		if (uo_sys(SYS_pwrite64, fd, zero, sizeof(zero), 0) != (long)sizeof(zero) ||
		    uo_sys(SYS_pwrite64, fd, &magic, sizeof(magic), 0) != (long)sizeof(magic))
			goto bad;
	}
	return fd;
bad:
	uo_sys(SYS_close, fd);
	return -1;
}

bool uo_record_streamed_again(const struct uo_file *f)
{
	struct uo_record_entry e[UO_RECORD_PROBES], now_e;
	uint64_t key = uo_record_key(f), now;
	unsigned first = (unsigned)(key % (UO_RECORD_SLOTS - UO_RECORD_PROBES + 1)), i, slot;
	off_t at = (off_t)(sizeof(uint64_t) + first * sizeof(struct uo_record_entry));
	bool again = false;
	int fd;

	/* A setuid program writes no files of ours (asked here, not at every start). */
	if (!uo_config.reuse_s || getauxval(AT_SECURE) ||
	    !uo_clock_ms(CLOCK_REALTIME, &now))
		return false;
	now /= 1000;
	fd = uo_record_open();
	if (fd < 0)
		return false;
	if (uo_sys(SYS_pread64, fd, e, sizeof(e), at) != (long)sizeof(e))
		goto out;
	/* Ours if there, else the first empty (or torn) slot, else the oldest. */
	slot = UO_RECORD_PROBES;
	for (i = 0; i < UO_RECORD_PROBES; i++) {
		if ((e[i].key ^ e[i].seen ^ UO_RECORD_CHECK) != e[i].check || !e[i].key)
			e[i].key = e[i].seen = 0;
		if (e[i].key == key) {
			slot = i;
			again = e[i].seen <= now && now - e[i].seen <= uo_config.reuse_s;
			break;
		}
	}
	for (i = 0; slot == UO_RECORD_PROBES && i < UO_RECORD_PROBES; i++)
		if (!e[i].key)
			slot = i;
	if (slot == UO_RECORD_PROBES)
		for (slot = 0, i = 1; i < UO_RECORD_PROBES; i++)
			if (e[i].seen < e[slot].seen)
				slot = i;
	now_e.key = key;
	now_e.seen = now;
	now_e.check = key ^ now ^ UO_RECORD_CHECK;
	if (uo_sys(SYS_pwrite64, fd, &now_e, sizeof(now_e),
		    at + (off_t)(slot * sizeof(now_e))) != (long)sizeof(now_e))
		again = false;
out:
	uo_sys(SYS_close, fd);
	return again;
}

static off_t uo_record_sibling_at(uint64_t owner)
{
	return (off_t)(UO_RECORD_SIZE + (owner % UO_RECORD_PARENTS) * sizeof(struct uo_record_sibling));
}

/* A setuid program reads and writes no files of ours. */
static int uo_record_sibling_open(void)
{
	if (getauxval(AT_SECURE))
		return -1;
	return uo_record_open();
}

/*
 * The block is only read and written under a lock on its bytes that is
 * tried, never waited for: one process's ask-and-take, or one's put, at a
 * time.  Siblings running at once (xargs -P) must never both take a
 * handed file: the first look at a failed writeback counts the error as
 * seen, and the second, told nothing, would drop its only good copy.  A
 * block that is busy is left alone: nothing is taken (those files stay
 * cached) or nothing is handed on.  The lock belongs to our own open file
 * description (F_OFD_SETLK) and goes with its close: the program's own
 * locks are never touched.
 */
static int uo_record_sibling_lock(uint64_t owner)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = uo_record_sibling_at(owner),
			    .l_len = (off_t)sizeof(struct uo_record_sibling) };
	int fd = uo_record_sibling_open();

	if (fd >= 0 && uo_sys(SYS_fcntl, fd, F_OFD_SETLK, &fl) != 0) {
		uo_sys(SYS_close, fd);
		return -1;
	}
	return fd;
}

bool uo_record_sibling_take(uint64_t owner, struct uo_record_sibling *out)
{
	static const struct uo_handoff_file none;
	/* What the block keeps: its failure marks.  One caller at a time (record.h). */
	static struct uo_handoff_file left[UO_HANDOFF_FILES];
	off_t at = uo_record_sibling_at(owner);
	int fd = uo_record_sibling_lock(owner);
	bool taken = false;
	unsigned i;
	long n;

	if (fd < 0)
		return false;
	n = uo_sys(SYS_pread64, fd, out, sizeof(*out), at);
	/* The files are ours now; a failure's mark stays for the siblings still to come. */
	for (i = 0; n == (long)sizeof(*out) && i < UO_HANDOFF_FILES; i++) {
		if (out->files[i].flags & UO_HANDOFF_FAILED) {
			left[i] = out->files[i];
			continue;
		}
		left[i] = none;
		taken |= memcmp(&out->files[i], &none, sizeof(none)) != 0;
	}
	/* One write, and none where there was nothing to take. */
	if (taken && uo_sys(SYS_pwrite64, fd, left, sizeof(left),
			    at + (off_t)offsetof(struct uo_record_sibling, files)) !=
		     (long)sizeof(left))
		n = -1;
	uo_sys(SYS_close, fd);
	return n == (long)sizeof(*out);
}

void uo_record_sibling_put(uint64_t owner, const struct uo_record_sibling *in)
{
	int fd = uo_record_sibling_lock(owner);

	if (fd < 0)
		return;
	/* One write: a reader without the lock (an older library) sees this block or the last. */
	uo_sys(SYS_pwrite64, fd, in, sizeof(*in), uo_record_sibling_at(owner));
	uo_sys(SYS_close, fd);
}
