/* supervise/confine_hint: why a container-level sandbox could not be
 * built when warden itself runs confined (a container, a Kubernetes pod).
 * Supervisor side, before clone; called only after a failure, so it may
 * read /proc.
 *
 * The jail's steps fail with a bare EPERM or ENOSYS when the runtime
 * around warden withholds what nesting needs; the step alone ("open_tree",
 * "pivot_root", "mount /tmp/proc") does not say which of the pod's
 * settings is missing.  This looks at warden's own process and names the
 * first requirement it lacks, in the order a pod grants them: as root,
 * CAP_SYS_ADMIN, CAP_SETUID and CAP_SETGID (the sandbox's uid and gid
 * maps; an ordinary user needs none), a /proc without the runtime's masks
 * (procMount: Unmasked: the kernel refuses a new proc mount while paths of
 * the old one are covered), and a seccomp filter that allows namespace
 * creation, mount and pivot_root.  tests/integration/containerd.sh removes
 * each in turn under containerd and runc and checks the message. */
#include "supervise/supervise.h"
#include "spec/spec.h"
#include "jail/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAP_BIT(n) (UINT64_C(1) << (n))
#define HINT_CAP_SETGID 6
#define HINT_CAP_SETUID 7
#define HINT_CAP_SYS_ADMIN 21

static int
slurp_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	return 0;
}

/* Is a path beneath /proc covered by a mount of its own (a runtime's
 * maskedPaths and readonlyPaths)?  binfmt_misc is an automount on an empty
 * directory, which the kernel does not count, and many hosts have it. */
static bool
proc_masked(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char line[4096];
	bool masked = false;
	while (!masked && fgets(line, sizeof(line), f)) {
		/* id parent major:minor root mount-point ... */
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " ", &save);
		if (tok && strncmp(tok, "/proc/", 6) == 0 &&
		    strcmp(tok, "/proc/sys/fs/binfmt_misc") != 0)
			masked = true;
	}
	fclose(f);
	return masked;
}

/* A realtime task (chrt -f/-r) cannot join a cgroup v1 cpu group that has
 * no realtime budget (cpu.rt_runtime_us 0, the default below the root):
 * the kernel answers EINVAL, which says nothing of the cause.  warden's
 * sandbox inherits the caller's policy, so the fix is the caller's. */
static bool
realtime_hint(struct wd_err *err, int e)
{
	int pol = sched_getscheduler(0);
	if (err->step != JAIL_STEP_4B_CGROUP || e != EINVAL ||
	    (pol != SCHED_FIFO && pol != SCHED_RR))
		return false;
	size_t n = strlen(err->msg);
	snprintf(err->msg + n, sizeof(err->msg) - n,
		 " (warden runs under a realtime scheduling policy, and the cgroup v1 cpu "
		 "controller refuses a realtime task in a group without a realtime budget: run "
		 "warden under SCHED_OTHER, not chrt -f or -r)");
	return true;
}

void
confine_hint(const wd_spec *spec, int rc, struct wd_err *err)
{
	if (!err)
		return;
	int e = err->sys_errno ? err->sys_errno : -rc;
	if (realtime_hint(err, e) || spec->isolation != WD_ISOLATION_CONTAINER)
		return;
	if (e != EPERM && e != EACCES && e != ENOSYS)
		return;
	char st[4096];
	if (slurp_small("/proc/self/status", st, sizeof(st)) < 0)
		return;
	uint64_t eff = 0;
	const char *p = strstr(st, "\nCapEff:");
	if (p)
		eff = strtoull(p + 8, NULL, 16);
	p = strstr(st, "\nSeccomp:");
	long seccomp = p ? strtol(p + 9, NULL, 10) : 0;
	const char *why = NULL;
	/* an ordinary user's jail needs no capability: its user namespace
	 * is its own (tests/integration/containerd.sh runs one as uid 1000
	 * with none) */
	bool root = geteuid() == 0;
	if (root && !(eff & CAP_BIT(HINT_CAP_SYS_ADMIN)))
		why = "warden lacks CAP_SYS_ADMIN, which building a sandbox needs (in a "
		      "container: add SYS_ADMIN)";
	else if (root && (!(eff & CAP_BIT(HINT_CAP_SETUID)) || !(eff & CAP_BIT(HINT_CAP_SETGID))))
		why = "warden lacks CAP_SETUID or CAP_SETGID, which the sandbox's uid and gid "
		      "maps need (keep the runtime's default capabilities)";
	else if (proc_masked())
		why = "/proc has paths masked by a container runtime, so the kernel refuses the "
		      "sandbox a /proc of its own (a pod needs procMount: Unmasked)";
	else if (seccomp == 2)
		why = "warden runs under a seccomp filter that refuses a call the jail needs "
		      "(unshare, clone3 with namespace flags, mount, pivot_root)";
	if (!why)
		return;
	size_t n = strlen(err->msg);
	snprintf(err->msg + n, sizeof(err->msg) - n, " (%s)", why);
}
