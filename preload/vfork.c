/*
 * vfork, interposed so that the descriptor table knows when a vfork child
 * may be sharing it (fdtab.h, uo_fdtab_borrowed): a process that never
 * vforked then never asks the kernel for its pid when it closes a file.
 *
 * Not a C wrapper: libc's vfork returns twice on one stack, the child
 * first, and a child returning through a frame of ours would leave the
 * parent to return through that same frame after the child overwrote it.
 * The stub calls a C function first, in the parent, whose frame is gone
 * before the jump; then it jumps to libc's vfork, which returns straight
 * to the program, in the child and then in the parent.  Nothing of ours
 * touches the stack after the jump.  x86-64 only (UO_VFORK_HOOK); on other
 * architectures vfork is left alone and the table asks for the pid each
 * time.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include "fdtab.h"

#ifdef UO_VFORK_HOOK

typedef pid_t (*uo_vfork_fn)(void);

static uo_vfork_fn uo_real_vfork;

static pid_t uo_vfork_missing(void)
{
	errno = ENOSYS;
	return -1;
}

/* Called by the stub only (hidden, as all but the hooks). */
uo_vfork_fn uo_vfork_prepare(void);

/* libc's vfork, found at the first call, after telling the table. */
__attribute__((used)) uo_vfork_fn uo_vfork_prepare(void)
{
	uo_vfork_fn fn = __atomic_load_n(&uo_real_vfork, __ATOMIC_ACQUIRE);
	int saved = errno;

	if (UO_UNLIKELY(!fn)) {
		fn = (uo_vfork_fn)dlsym(RTLD_NEXT, "vfork");
		__atomic_store_n(&uo_real_vfork, fn, __ATOMIC_RELEASE);
	}
	uo_fdtab_vforking();
	errno = saved;
	return fn ? fn : uo_vfork_missing;
}

/*
 * At entry the stack is 8 bytes off the 16 a call needs; libc's vfork
 * finds it exactly as the program's call left it.
 */
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	".p2align 4\n"
	"vfork:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	subq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call uo_vfork_prepare\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	jmp *%rax\n"
	"	.cfi_endproc\n"
	".size vfork, .-vfork\n");

#endif /* UO_VFORK_HOOK */
