/*
 * Descriptor -> stream state, without locks and without malloc.
 *
 * Slots live in chunks of UO_FDTAB_CHUNK descriptors, mapped with mmap the
 * first time a descriptor of the chunk moves data and published with a
 * compare-and-swap, so nothing at start-up scales with the descriptor limit
 * and the table is safe to touch from signal handlers and vfork children.
 *
 * A slot is taken with the try-lock of fdtab.h, which never waits.
 * The chunks are wiped in a forked child (MADV_WIPEONFORK).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdatomic.h>
#include <string.h>

#include "fdtab.h"
#include "sys.h"

#define UO_FDTAB_CHUNKS	(UO_FDTAB_MAX / UO_FDTAB_CHUNK)

_Atomic(struct uo_slot *) uo_fdtab_chunks[UO_FDTAB_CHUNKS];
_Atomic uint8_t uo_fdtab_quiet[UO_QUIET_MAX];
_Atomic uint8_t uo_fdtab_any_quiet;

static struct uo_slot *uo_chunk(unsigned index, bool create)
{
	struct uo_slot *chunk, *expected = NULL;
	size_t size = UO_FDTAB_CHUNK * sizeof(struct uo_slot);

	chunk = atomic_load_explicit(&uo_fdtab_chunks[index], memory_order_acquire);
	if (chunk || !create)
		return chunk;
	/*
	 * Wiped in a forked child, which starts with an empty table: what the
	 * parent knew of shared descriptors is relearned in a window, and a
	 * slot another thread held at fork time is not left locked forever.
	 * Kernels before 4.14 refuse; there such a slot only stays unguarded
	 * in the child.  A failed map leaves errno as it was: the program's
	 * call succeeded.
	 */
	chunk = uo_map_private(size);
	if (!chunk)
		return NULL;
	if (!atomic_compare_exchange_strong_explicit(&uo_fdtab_chunks[index], &expected, chunk,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		uo_unmap(chunk, size);
		chunk = expected;
	}
	return chunk;
}

struct uo_slot *uo_slot_get(int fd)
{
	struct uo_slot *chunk;

	if (fd < 0 || (unsigned)fd >= UO_FDTAB_MAX)
		return NULL;
	chunk = uo_chunk((unsigned)fd / UO_FDTAB_CHUNK, true);
	return chunk ? &chunk[(unsigned)fd % UO_FDTAB_CHUNK] : NULL;
}

void uo_slot_clear(struct uo_slot *s)
{
	atomic_store_explicit(&s->counted[UO_READ], 0, memory_order_relaxed);
	atomic_store_explicit(&s->counted[UO_WRITE], 0, memory_order_relaxed);
	atomic_store_explicit(&s->look, 0, memory_order_relaxed);
	atomic_store_explicit(&s->uncached, UO_UNCACHED_OFF, memory_order_relaxed);
	s->kind_known = 0;
	s->opened = UO_OPEN_UNKNOWN;
	s->tree_dir = 0;
	s->temp = 0;
	s->temp_said = 0;
	s->unclean = 0;
	s->step = 0;
	s->early_look = 0;
	s->appends = 0;
	atomic_store_explicit(&s->head_probed, 0, memory_order_relaxed);
	/* All zeroes is a fresh stream for the policy. */
	memset(&s->st, 0, sizeof(s->st));
	memset(&s->file, 0, sizeof(s->file));
}

void uo_slot_forget(struct uo_slot *s)
{
	if (uo_slot_lock(s)) {
		uo_slot_clear(s);
		uo_slot_unlock(s);
	} else {
		/* The holder may be mid-update; whoever locks next starts afresh. */
		atomic_store_explicit(&s->stale, 1, memory_order_release);
	}
}

void uo_fdtab_forget_range(unsigned first, unsigned last)
{
	unsigned fd, end;

	if (first >= UO_FDTAB_MAX || uo_fdtab_borrowed())
		return;
	end = last >= UO_FDTAB_MAX ? UO_FDTAB_MAX - 1 : last;
	for (fd = first; fd <= end;) {
		struct uo_slot *chunk = uo_chunk(fd / UO_FDTAB_CHUNK, false);
		unsigned chunk_end = (fd / UO_FDTAB_CHUNK + 1) * UO_FDTAB_CHUNK - 1;

		if (chunk_end > end)
			chunk_end = end;
		/* Only descriptors with a slot can be quiet. */
		if (chunk) {
			for (; fd <= chunk_end; fd++) {
				uo_fd_unquiet((int)fd);
				uo_slot_forget(&chunk[fd % UO_FDTAB_CHUNK]);
			}
		}
		fd = chunk_end + 1;
	}
}


void uo_fdtab_reopened(int fd)
{
	struct uo_slot *s;

	if (uo_fdtab_borrowed())
		return;
	s = uo_fd_unquiet(fd);
	if (s)
		uo_slot_forget(s);
}

/*
 * Whose table it is: the pid of the process the table belongs to, in a
 * page of its own mapped by the constructor with MADV_WIPEONFORK (not in
 * .bss).  A forked child, however it was made (fork, _Fork, a raw clone),
 * finds 0 there and claims the page with its own pid; a vfork child shares
 * the page and finds a pid not its own.  No fork handler: one registered
 * with pthread_atfork would outlive the library's code when a program
 * unloads it with dlclose (linked -nostartfiles, we have no
 * __cxa_finalize to drop it), and every later fork would jump into
 * unmapped memory.
 *
 * The page also says whether the process has called vfork (through the
 * vfork hook, where there is one): until it has, no vfork child can share
 * the table and uo_fdtab_borrowed asks nothing of the kernel.  A forked
 * child finds it wiped too: it has no vfork child yet.
 *
 * A forked child claims the page only where it cannot be a vfork child
 * sharing it: when a descriptor of it has moved data (uo_fdtab_claim), or
 * just before it vforks.
 * Until then it is not taken for one: a vfork child of a forked child
 * that never moved data may forget its parent's slots, as all did before
 * this record existed.  Claimed at the first hook's call, a vfork child
 * would record its own pid, and its parent would take itself for borrowed
 * from then on.
 */
struct uo_owner {
	_Atomic int32_t pid;
	_Atomic uint32_t vforked;	/* this process called vfork (UO_VFORK_HOOK) */
};

static _Atomic(struct uo_owner *) uo_fdtab_owner;
static _Atomic uint8_t uo_fdtab_started;

static struct uo_owner *uo_fdtab_map_owner(void)
{
	/*
	 * Not wiped on fork (before Linux 4.14, or a seccomp filter refusing
	 * madvise), a forked child would find its parent's pid and take
	 * itself for a vfork child for good: then no page, and no vfork
	 * child is told from its parent, as before this record existed.
	 */
	struct uo_owner *owner = uo_map_private_wiped(sizeof(*owner)), *expected = NULL;

	if (!owner)
		return NULL;
	atomic_store_explicit(&owner->pid, uo_getpid(), memory_order_relaxed);
	if (!atomic_compare_exchange_strong_explicit(&uo_fdtab_owner, &expected, owner,
						     memory_order_acq_rel,
						     memory_order_acquire)) {
		uo_unmap(owner, sizeof(*owner));
		owner = expected;
	}
	return owner;
}

void uo_fdtab_start(void)
{
	uo_fdtab_map_owner();
	atomic_store_explicit(&uo_fdtab_started, 1, memory_order_release);
}

/* The owner's page, mapped if need be; NULL where it cannot be. */
static struct uo_owner *uo_fdtab_owner_page(void)
{
	struct uo_owner *owner = atomic_load_explicit(&uo_fdtab_owner, memory_order_acquire);

	if (UO_UNLIKELY(!owner)) {
		/*
		 * A hook called before the constructor (by another library's
		 * constructor): no vfork child can exist yet, so the pid is
		 * ours.  After it, the map failed: say nothing, rather than
		 * let a vfork child record itself.
		 */
		if (atomic_load_explicit(&uo_fdtab_started, memory_order_acquire))
			return NULL;
		owner = uo_fdtab_map_owner();
	}
	return owner;
}

/* The owner's pid, claimed for us if the page was wiped and 'claim'; 0: unknown. */
static int32_t uo_fdtab_owner_pid(struct uo_owner *owner, bool claim)
{
	int32_t pid, expected = 0;

	if (!owner)
		return 0;
	pid = atomic_load_explicit(&owner->pid, memory_order_relaxed);
	if (UO_UNLIKELY(pid == 0) && claim) {
		/* A forked child's page, wiped: ours now. */
		pid = uo_getpid();
		if (!atomic_compare_exchange_strong_explicit(&owner->pid, &expected, pid,
							     memory_order_relaxed,
							     memory_order_relaxed))
			pid = expected;
	}
	return pid;
}

void uo_fdtab_claim(void)
{
	struct uo_owner *owner = atomic_load_explicit(&uo_fdtab_owner, memory_order_acquire);

	/* Only a wiped page needs it: one load otherwise. */
	if (owner && UO_UNLIKELY(!atomic_load_explicit(&owner->pid, memory_order_relaxed)))
		uo_fdtab_owner_pid(owner, true);
}

#ifdef UO_VFORK_HOOK
void uo_fdtab_vforking(void)
{
	struct uo_owner *owner = uo_fdtab_owner_page();

	/* The parent, before its child exists: the page is ours to claim. */
	uo_fdtab_owner_pid(owner, true);
	if (owner)
		atomic_store_explicit(&owner->vforked, 1, memory_order_relaxed);
}
#endif

bool uo_fdtab_borrowed(void)
{
	struct uo_owner *owner;
	int32_t pid;

#ifdef UO_VFORK_HOOK
	/*
	 * Never vforked (a forked child starts again with the page wiped):
	 * no vfork child can be running our hooks, and no system call is
	 * made.  The page is then not mapped here before the constructor.
	 */
	owner = atomic_load_explicit(&uo_fdtab_owner, memory_order_acquire);
	if (UO_LIKELY(!owner || !atomic_load_explicit(&owner->vforked, memory_order_relaxed)))
		return false;
#else
	owner = uo_fdtab_owner_page();
#endif
	pid = uo_fdtab_owner_pid(owner, false);
	return pid != 0 && pid != uo_getpid();
}
