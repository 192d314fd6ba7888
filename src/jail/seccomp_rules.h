/* jail/seccomp_rules: the rule table behind jail_seccomp_prog (private).
 *
 * Linked only into the build-time generator (gen-seccomp) and the unit
 * tests, never into libwarden: the library carries the compiled BPF, not
 * libseccomp (see seccomp.h). */
#ifndef WD_JAIL_SECCOMP_RULES_H
#define WD_JAIL_SECCOMP_RULES_H

#include <linux/filter.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

/* The highest syscall number of the kernels this table was reviewed
 * against (Linux 6.18: 469, file_setattr, on every architecture since the
 * numbers were unified at 424).  Anything above is refused with ENOSYS by
 * the prelude, so a syscall added later is off until someone reviews it. */
#define JAIL_SECCOMP_MAX_NR 469

/* jail_seccomp_build flags */
#define JAIL_SECCOMP_NO_INET 0x1u /* socket()/socketpair(): AF_UNIX only */

/* Build the libseccomp part of the filter for the native architecture:
 * default ALLOW, the refusals of seccomp_rules.c, bad-arch ERRNO(EPERM).
 * flags: JAIL_SECCOMP_*.  *out is a new context (seccomp_release() it);
 * *nsyscalls gets the number of distinct syscalls carrying a refusal
 * (prelude included).  Returns 0 or -errno. */
int jail_seccomp_build(scmp_filter_ctx *out, unsigned *nsyscalls, unsigned flags);

/* The same table for another renderer (gen-seccomp's OCI profile for
 * gVisor): fn is called for each refusal, in order, with its errno, the
 * native syscall number and its argument comparisons (libseccomp's form);
 * a negative return stops the walk and is returned.  The prelude's rules
 * (personality, the syscall-number ceiling) are not part of it. */
typedef int (*jail_seccomp_rule_fn)(void *data, int err, int nr, unsigned nargs,
				    const struct scmp_arg_cmp *cmp);
int jail_seccomp_walk(unsigned flags, jail_seccomp_rule_fn fn, void *data, unsigned *nsyscalls);

/* Write the hand-written prelude (personality, the syscall-number ceiling)
 * into buf for audit architecture arch.  Its last instruction falls through
 * into the libseccomp program appended right after it.  Returns the number
 * of instructions (never more than cap), or 0 if cap is too small. */
size_t jail_seccomp_prelude(struct sock_filter *buf, size_t cap, uint32_t arch);

#endif
