/* jail/seccomp: load the prebuilt filter (see seccomp.h, seccomp_rules.c).
 *
 * This file is all libwarden knows of seccomp: the program itself is
 * generated at build time (gen-seccomp.c) into jail_seccomp_prog. */
#include "jail/seccomp.h"

#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

int
jail_seccomp_load(const struct sock_fprog *prog)
{
	/* No filter flags, each for a reason:
	 *  - TSYNC: the caller is the single-threaded child between clone()
	 *    and execve(); there are no other threads to synchronise.
	 *  - LOG: would audit-log every EPERM the command provokes, and a
	 *    probing build provokes many.
	 *  - SPEC_ALLOW: keeps the kernel's speculative-store-bypass mitigation
	 *    for the jailed process where the host's policy ties it to seccomp
	 *    (spec_store_bypass_disable=seccomp).
	 * Raw syscall, not libseccomp's seccomp_load: no allocation here. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) == 0)
		return 0;
	int e = errno;
	/* seccomp(2) appeared in Linux 3.17; the prctl form is older and takes
	 * the same program (filter flags were never needed above). */
	if (e == ENOSYS && syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) == 0)
		return 0;
	if (e == ENOSYS)
		e = errno;
	return -e;
}
