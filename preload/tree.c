/*
 * Trees, the plumbing of the policy's tree rule (uo_tree_file_closed).
 *
 * Opens: a file opened read-only is asked whether any of it is cached
 * (one cachestat) while the process reads a tree; a file created or
 * truncated is marked new, with no system call.  The first read-only open
 * of a regular file of UO_TREE_MIN or more also picks up the run that the
 * processes of the same parent left in the record (find -exec cp).
 *
 * Closes: a descriptor that moved its file whole, one way, is one more
 * file of a run.  A cold file read whole is dropped.  A new file written
 * whole gets its writeback started and waits, with a few others, for it
 * to end (write-behind); it is then dropped through a read-only
 * descriptor of our own (a writable one would make an exec of the file
 * fail with ETXTBSY), kept high and close-on-exec out of the program's
 * way.  The program never waits on its own descriptor for this: the
 * waiting is done by watching cachestat (advise.c), which consumes no
 * writeback error.
 *
 * Exit (exit, or _exit, with which rsync's processes end): the files
 * still waiting are dropped, and the run is left for the parent's next
 * child.
 *
 * One try-lock that never waits guards the state: a close that finds it
 * busy (another thread, a signal handler) is no step of the run.
 *
 * SPDX-License-Identifier: MIT
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "advise.h"
#include "classify.h"
#include "config.h"
#include "policy.h"
#include "record.h"
#include "stats.h"
#include "sys.h"
#include "trace.h"
#include "tree.h"

_Static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

#define UO_TREE_SEED_TRIES	8	/* read-only opens looked at for a shared run */

/* What pthread_atfork calls; that one needs the C start files' __dso_handle. */
int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso);

/* A written file waiting for its writeback to end. */
struct uo_pending {
	int fd;			/* ours: read-only, close-on-exec, high */
	bool tree_file;		/* a file of a tree (else a write stream's tail) */
	uint64_t dev, ino, size;
	uint64_t from;		/* what is left to drop starts here */
	uint64_t counted;	/* statistics: its drops were counted up to here */
};

static struct uo_trees uo_trees;
/*
 * Who is updating the state: 0 or a process id.  A pid, not a flag: a
 * process forked while one of its parent's threads held it finds the
 * parent's pid there, which no thread of its own will ever clear, and
 * takes it over.
 */
static _Atomic int32_t uo_trees_owner;
static int32_t uo_trees_pid;		/* the process the waiting files belong to */
static struct uo_pending uo_pend[UO_TREE_PENDING];
static unsigned uo_npend;
static unsigned uo_seed_tries;
static bool uo_seeded, uo_shared_changed[2], uo_atfork;
static struct uo_tuning uo_tree_low;	/* the tuning inside a tree */
_Atomic(const struct uo_tuning *) uo_tree_tuned[2];
static _Atomic bool uo_tree_probing;	/* read-only opens are probed */

static bool uo_trees_lock(void)
{
	int32_t self = uo_getpid(), seen = 0;

	if (!atomic_compare_exchange_strong_explicit(&uo_trees_owner, &seen, self,
						     memory_order_acquire, memory_order_relaxed)) {
		/* Busy in this process (another thread, or the code a signal interrupted). */
		if (seen == self ||
		    !atomic_compare_exchange_strong_explicit(&uo_trees_owner, &seen, self,
							     memory_order_acquire,
							     memory_order_relaxed))
			return false;
	}
	/*
	 * Another process's files wait: a vfork child, which shares our memory
	 * (a forked child forgot them in uo_trees_forked).  Hands off.
	 */
	if (uo_npend && uo_trees_pid != self) {
		atomic_store_explicit(&uo_trees_owner, 0, memory_order_release);
		return false;
	}
	uo_trees_pid = self;
	return true;
}

static void uo_trees_unlock(void)
{
	atomic_store_explicit(&uo_trees_owner, 0, memory_order_release);
}

/* A forked child: the files waiting are its parent's, its descriptors mere copies. */
static void uo_trees_forked(void)
{
	unsigned i;

	for (i = 0; i < uo_npend; i++)
		uo_sys(SYS_close, uo_pend[i].fd);
	uo_npend = 0;
	uo_trees_pid = uo_getpid();
	atomic_store_explicit(&uo_trees_owner, 0, memory_order_relaxed);
}

/* The rule's state changed (lock held): what the hooks read of it. */
static void uo_tree_publish(void)
{
	unsigned dir;

	for (dir = UO_READ; dir <= UO_WRITE; dir++) {
		uint64_t th = uo_tree_threshold(&uo_trees, &uo_config.tuning, dir);
		const struct uo_tuning *t = NULL;

		if (th != uo_config.tuning.threshold) {
			/* Only ever one value: a reader holding the old pointer sees the same. */
			if (uo_tree_low.threshold != th) {
				uo_tree_low = uo_config.tuning;
				uo_tree_low.threshold = th;
			}
			t = &uo_tree_low;
		}
		atomic_store_explicit(&uo_tree_tuned[dir], t, memory_order_release);
	}
	atomic_store_explicit(&uo_tree_probing, uo_tree_wants_open_probe(&uo_trees, UO_READ),
			      memory_order_relaxed);
}

static uint64_t uo_tree_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

/* The processes of one parent share a run: its pid names it (0 is "empty"). */
static uint64_t uo_tree_owner_key(void)
{
	return uo_tree_mix((uint64_t)uo_sys(SYS_getppid) + 0x7472656500000000ULL) | 1;
}

/* The run the processes of our parent left in the record, both ways (lock held). */
static void uo_tree_seed(void)
{
	uint64_t owner = uo_tree_owner_key(), now;
	struct uo_tree_share sh[2];
	unsigned dir;

	uo_seeded = true;
	if (!uo_clock_ms(CLOCK_MONOTONIC, &now) || !uo_record_tree_get(owner, sh))
		return;
	for (dir = UO_READ; dir <= UO_WRITE; dir++)
		uo_tree_share_get(&uo_trees.run[dir], &uo_config.tuning, &sh[dir], dir, owner, now);
	uo_tree_publish();
}

/* Our run, left for the parent's next child (lock held). */
static void uo_tree_share_out(void)
{
	uint64_t owner = uo_tree_owner_key();
	struct uo_tree_share sh[2];
	bool put[2];
	unsigned dir;

	for (dir = UO_READ; dir <= UO_WRITE; dir++) {
		put[dir] = uo_shared_changed[dir] && uo_trees.run[dir].count;
		uo_shared_changed[dir] = false;
		uo_tree_share_put(&sh[dir], &uo_trees.run[dir], dir, owner);
	}
	uo_record_tree_put(owner, sh, put);
}

void uo_tree_opened(int fd, int flags)
{
	struct uo_slot *s;
	struct uo_file f;

	if (flags & O_PATH)
		return;
	if ((flags & O_ACCMODE) == O_RDONLY) {
		if (!uo_seeded && uo_seed_tries < UO_TREE_SEED_TRIES) {
			uo_seed_tries++;
			if (uo_fstat(fd, &f) == 0 && S_ISREG(f.mode) && f.size >= UO_TREE_MIN &&
			    uo_trees_lock()) {
				uo_tree_seed();
				uo_trees_unlock();
			}
		}
		if (!atomic_load_explicit(&uo_tree_probing, memory_order_relaxed))
			return;
		s = uo_slot_get(fd);
		if (s && uo_slot_lock(s)) {
			int64_t pages = uo_cached_pages(fd);

			uo_slot_clear(s);
			s->opened = pages == 0 ? UO_OPEN_COLD :
				    pages > 0 ? UO_OPEN_CACHED : UO_OPEN_UNKNOWN;
			uo_slot_unlock(s);
		}
	} else if ((flags & O_TRUNC) || (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
		/* Nothing of it was anyone's: no need to ask. */
		s = uo_slot_get(fd);
		if (s && uo_slot_lock(s)) {
			uo_slot_clear(s);
			s->opened = UO_OPEN_NEW;
			uo_slot_unlock(s);
		}
	}
}

/*
 * Our own descriptor of the program's file, out of its way: high (its
 * next open gets the number it would have got) and close-on-exec;
 * read-only, so that exec of the file is not refused (ETXTBSY).
 */
static int uo_pending_fd(int fd)
{
	static int floor_;
	char path[UO_PROC_FD_PATH];
	long ro, hi;

	if (!floor_) {
		struct rlimit rl;

		floor_ = uo_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) == 0 &&
			 rl.rlim_cur > 128 && rl.rlim_cur != RLIM_INFINITY ?
			 (int)(rl.rlim_cur / 2) : 64;
	}
	uo_proc_fd_path(path, fd);
	ro = uo_sys(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (ro < 0)
		return -1;
	hi = uo_sys(SYS_fcntl, ro, F_DUPFD_CLOEXEC, floor_);
	uo_sys(SYS_close, ro);
	return hi < 0 ? -1 : (int)hi;
}

/* The oldest 'n' files waiting: waited for, dropped, ours closed (lock held). */
static void uo_pending_drain(unsigned n)
{
	unsigned i;

	if (n > uo_npend)
		n = uo_npend;
	for (i = 0; i < n; i++) {
		struct uo_pending *p = &uo_pend[i];
		struct uo_file f;

		/* Still ours and still that file (a raw close_range or dup2 may have taken it). */
		if (uo_fstat(p->fd, &f) == 0 && f.dev == p->dev && f.ino == p->ino) {
			uo_drop_written_file(p->fd, f.size, p->tree_file, p->from, p->counted);
			uo_sys(SYS_close, p->fd);
		}
	}
	for (i = n; i < uo_npend; i++)
		uo_pend[i - n] = uo_pend[i];
	uo_npend -= n;
}

/*
 * A new file written whole: writeback starts now from 'flush' (UO_EOF: it
 * has started), the drop from 'from' once it ended (lock held).
 */
static void uo_write_behind(int fd, const struct uo_file *f, uint64_t flush, uint64_t from,
			    bool tree_file, uint64_t counted)
{
	uint64_t sizes[UO_TREE_PENDING];
	unsigned i;
	int ours;

	if (flush != UO_EOF)
		uo_flush_new_file(fd, flush, f->size, "written whole, to drop once written",
				  false);
	if (uo_config.dryrun) {
		if (tree_file)
			UO_STAT_ADD(tree_files, 1);
		return;
	}
	if (!uo_atfork) {
		uo_atfork = true;
		__register_atfork(NULL, NULL, uo_trees_forked, NULL);
	}
	if (uo_npend == UO_TREE_PENDING)
		uo_pending_drain(1);
	ours = uo_pending_fd(fd);
	if (ours < 0) {
		/* No /proc: left to the kernel (never waited for on the program's descriptor). */
		uo_trace(fd, "kept (no descriptor of our own to drop it once written)", NULL);
		return;
	}
	uo_pend[uo_npend].fd = ours;
	uo_pend[uo_npend].dev = f->dev;
	uo_pend[uo_npend].ino = f->ino;
	uo_pend[uo_npend].size = f->size;
	uo_pend[uo_npend].tree_file = tree_file;
	uo_pend[uo_npend].from = from;
	uo_pend[uo_npend].counted = counted;
	uo_npend++;
	for (i = 0; i < uo_npend; i++)
		sizes[i] = uo_pend[i].size;
	uo_pending_drain(uo_tree_pending_due(sizes, uo_npend, uo_tree_budget(&uo_config.tuning)));
}

static void uo_tree_trace_changed(int fd, unsigned dir)
{
	const struct uo_tree_run *r = &uo_trees.run[dir];

	if (!r->on)
		uo_trace(fd, "tree mode over", dir == UO_READ ? "reading" : "writing");
	else
		uo_trace(fd, "tree mode: many files moved whole, one after the other",
			 dir == UO_READ ? "reading" : "writing");
}

/*
 * Which way the descriptor moved its file, if it moved it one way only,
 * 64 KiB or more of it: UO_READ, UO_WRITE, or 2.
 */
static unsigned uo_tree_dir(const struct uo_slot *s, const uint64_t moved[2])
{
	if (s->st.state == UO_NEW) {
		if ((moved[UO_READ] && moved[UO_WRITE]) ||
		    moved[UO_READ] + moved[UO_WRITE] < UO_TREE_MIN)
			return 2;
		return moved[UO_READ] ? UO_READ : UO_WRITE;
	}
	if ((s->st.state != UO_TRACKING && s->st.state != UO_STREAM) || moved[!s->st.dir] ||
	    s->st.run_start != 0)
		return 2;
	return s->st.dir;
}

void uo_tree_closing(int fd, struct uo_slot *s)
{
	uint64_t moved[2] = {
		atomic_load_explicit(&s->counted[UO_READ], memory_order_relaxed),
		atomic_load_explicit(&s->counted[UO_WRITE], memory_order_relaxed),
	};
	struct uo_tree_file tf = { 0 };
	struct uo_tree_advice adv;
	struct uo_file f;
	const char *why;
	unsigned dir = uo_tree_dir(s, moved);

	if (dir > UO_WRITE || !(uo_config.tuning.guard & (1u << dir)))
		return;
	if (uo_fstat(fd, &f) != 0 || !S_ISREG(f.mode) || f.size < UO_TREE_MIN ||
	    uo_cursor(fd) != (int64_t)f.size ||
	    (s->st.state == UO_NEW && moved[dir] != f.size) ||
	    !uo_clock_ms(CLOCK_MONOTONIC, &tf.now_ms))
		return;
	tf.size = f.size;
	tf.moved = f.size;
	tf.whole = 1;
	tf.dir = (uint8_t)dir;
	tf.opened = (uint8_t)s->opened;
	tf.streamed = s->st.state == UO_STREAM;
	tf.key = uo_tree_mix(uo_tree_mix(f.dev ^ uo_tree_mix(f.ino)) ^ f.size ^ f.mtime_ns) | 1;
	if (!uo_trees_lock())
		return;
	adv = uo_tree_file_closed(&uo_trees, &uo_config.tuning, &tf);
	uo_shared_changed[dir] = true;
	if (adv.ask_record) {
		/* A tree is named by its first files; the record says whether it came back. */
		struct uo_file named = { .dev = 0x7472656500000000ULL | dir,
					 .ino = uo_trees.run[dir].id };

		if (uo_record_streamed_again(&named)) {
			uo_tree_came_back(&uo_trees, dir);
			uo_trace(fd, "tree left to the kernel's cache", "copied again within USEONCE_REUSE");
		}
	}
	if (adv.changed)
		uo_tree_trace_changed(fd, dir);
	uo_tree_publish();
	if (adv.verdict != UO_TREE_LEAVE) {
		why = uo_path_rule(fd);
		if (why) {
			uo_trace(fd, "tree file left alone", why);
		} else if (adv.verdict == UO_TREE_DROP) {
			uo_drop_tree_file(fd, f.size);
		} else if (!tf.streamed) {
			uo_write_behind(fd, &f, 0, 0, true, 0);
		}
		/*
		 * A write stream's windows went as it wrote; its closing drops
		 * what is clean now, as for any write stream, and the rest goes
		 * behind (uo_tree_tail): a program that goes on running after
		 * its last file (check_threads' writers) keeps none of it.
		 */
	}
	uo_trees_unlock();
}

uint64_t uo_tree_tail_from(const struct uo_slot *s)
{
	return s->st.state == UO_STREAM && s->st.dir == UO_WRITE && s->st.run_start == 0 &&
	       s->opened == UO_OPEN_NEW && !s->st.blind ? s->st.dropped : UO_EOF;
}

void uo_tree_tail(int fd, struct uo_slot *s, uint64_t from)
{
	struct uo_file f;

	if (from == UO_EOF || !s->unclean || uo_fstat(fd, &f) != 0 || !uo_trees_lock())
		return;
	uo_write_behind(fd, &f, UO_EOF, from, false, s->drops_counted);
	uo_trees_unlock();
}

void uo_tree_new_file(int fd, struct uo_slot *s, const struct uo_tuning *t)
{
	if (s->st.dir != UO_WRITE || s->st.run_start != 0 || !t->window ||
	    s->st.next < s->early + t->window)
		return;
	uo_flush_new_file(fd, s->early, s->st.next, "a new file, not a stream yet", true);
	s->early = s->st.next;
}

void uo_tree_exit(void)
{
	if (!uo_trees_lock())
		return;
	uo_pending_drain(uo_npend);
	uo_tree_share_out();
	uo_trees_unlock();
}
