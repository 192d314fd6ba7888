/* wd-probe's shared parts: one line per assertion, and the syscall checks
 * (probe-syscalls.c), which are the bulk of the probe. */
#ifndef WD_PROBE_H
#define WD_PROBE_H

#include <stdbool.h>

/* Print "ok NAME detail" or "FAIL NAME detail"; a FAIL makes the probe
 * exit 1 at the end. */
void say(bool ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Each refused syscall in turn (those whose name starts with only, or all
 * when only is NULL), each in a forked child; returns how many ran. */
int check_syscalls(const char *only);

/* Set from "all --host-ia32 faults": int 0x80 faults on the host itself. */
extern bool ia32_faults_on_host;
/* "wd-probe ia32": print works, faults or refused for int 0x80 getpid. */
int probe_ia32_host(void);

/* ioctl(0, TIOCSTI) must fail with EPERM, whatever fd 0 is. */
void check_tiocsti_stdin(void);

#endif
