/* jail/seccomp: the syscall filter loaded last in the command's process.
 *
 * The rule table lives in seccomp_rules.c and is compiled into BPF with
 * libseccomp at build time (gen-seccomp.c), so the run path neither
 * links libseccomp nor spends time compiling the filter; the child loads the
 * raw program with seccomp(2), which allocates nothing (CONTRIBUTING.md, "Code"). */
#ifndef WD_JAIL_SECCOMP_H
#define WD_JAIL_SECCOMP_H

#include "util/util.h"

#include <linux/filter.h>

/* The prebuilt program for this build's native architecture. */
extern const struct sock_fprog jail_seccomp_prog;

/* The same, except that socket() and socketpair() accept AF_UNIX only:
 * for the process level without network, which has no network namespace
 * and whose Landlock fence covers TCP bind/connect only (UDP, ping and raw
 * sockets would reach the host's network).  Use jail_seccomp_prog when
 * TCP ports are allowed or in the container level. */
extern const struct sock_fprog jail_seccomp_prog_nonet;
extern const unsigned jail_seccomp_nonet_rule_count;

/* The table's EPERM refusals as OCI seccomp rules: one JSON object per
 * rule ({"names": [...], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
 * "args": [...]}), NULL-terminated.  The gvisor level puts them in the
 * OCI config for runsc --oci-seccomp, whose sentry applies them to the
 * command's system calls.  The prelude (personality, the syscall-number
 * ceiling) and the ENOSYS refusals have no OCI counterpart here (see
 * gen-seccomp.c). */
extern const char *const jail_seccomp_oci[];

/* Load prog on the calling thread (needs NoNewPrivs already set).  No
 * allocation, no formatting: safe between clone() and execve().
 * Returns 0 or -errno. */
int jail_seccomp_load(const struct sock_fprog *prog);

/* Number of syscalls the table refuses, wholly or for some arguments
 * (for --json and doctor). */
extern const unsigned jail_seccomp_rule_count;

#endif
