/* jail/exec: the command's own process, from pid 1's clone to execve
 * (docs/architecture.md, the step order: step 6).  Runs after clone(): system calls only, no
 * allocation, no formatting.  A failed step is reported on the command's
 * exec channel as SYNC_EXEC_FAILED (step and errno); the supervisor writes
 * the text. */
#include "jail/jail.h"
#include "jail/raw.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

__attribute__((noreturn)) static void
fail(struct sync_chan *c, int step, int err)
{
	struct sync_msg m = {.kind = SYNC_EXEC_FAILED, .step = step, .err = err};
	sync_send(c, &m, NULL, 0);
	raw_exit(err == ENOENT && step == JAIL_STEP_6I_EXEC ? 127 : 126);
}

/* ThreadSanitizer's switch for a thread's memory accesses, weak: NULL
 * unless libtsan is linked.  Not the AnnotateIgnore*Begin annotations
 * used before: they record the caller's stack in TSan's stack depot,
 * whose bucket spin locks and allocator mutex a raw clone may have
 * copied held (the same hang as an interceptor's, jail/raw.h); this one
 * passes no pc and records nothing.  Synchronisation needs no ignoring:
 * after clone nothing calls an interceptor or an atomic TSan sees. */
void __tsan_ignore_thread_begin(void) __attribute__((weak));

void
jail_child_sanitizer(void)
{
	if (__tsan_ignore_thread_begin)
		__tsan_ignore_thread_begin();
}

/* The kernel's struct sigaction (x86_64, arm64, ...): handler, flags,
 * restorer, mask.  SIG_DFL and SIG_IGN need no restorer. */
struct ksigaction {
	unsigned long handler, flags, restorer, mask;
};

void
jail_block_signals(void)
{
	unsigned long all = ~0UL;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof(all));
}

pid_t
jail_clone_vm(int (*fn)(void *), void *arg, unsigned long flags, int *pidfd, void **stack)
{
	*stack = mmap(NULL, JAIL_VM_STACK, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (*stack == MAP_FAILED) {
		*stack = NULL;
		return -1;
	}
	/* Not in a sandbox's pid 1, forked from this memory while the child
	 * lives: the child writes its stack after such a fork, and each write
	 * would copy a page that stays the pid 1's alone (live_bench: +20-25
	 * kB of Pss per idle sandbox with the keeper's).  Only memory: a
	 * failure costs those pages, nothing else. */
	(void)madvise(*stack, JAIL_VM_STACK, MADV_DONTFORK);
	/* Every signal blocked across the clone, so the child starts with
	 * them blocked: a handler of the program's must never run in it, on
	 * the memory it shares. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(fn, (char *)*stack + JAIL_VM_STACK, (int)(CLONE_VM | CLONE_PIDFD | flags),
			  arg, pidfd);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		munmap(*stack, JAIL_VM_STACK);
		*stack = NULL;
	}
	errno = e;
	return pid;
}

void
jail_default_signals(void)
{
	struct ksigaction dfl = {0 /* SIG_DFL */, 0, 0, 0};
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			syscall(SYS_rt_sigaction, s, &dfl, NULL, sizeof(dfl.mask));
}

void
jail_unblock_signals(void)
{
	unsigned long none = 0;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
}

void
jail_reset_signals(void)
{
	jail_unblock_signals();
	jail_default_signals();
}

int
jail_set_ids(uid_t uid, gid_t gid)
{
	/* setgroups first: supplementary groups survive setuid */
	if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, gid, gid, gid) < 0 ||
	    syscall(SYS_setresuid, uid, uid, uid) < 0)
		return -errno;
	return 0;
}

/* 6d. Clear every capability set: bounding first (dropping it needs
 * CAP_SETPCAP, which the capset removes), then ambient, then
 * effective/permitted/inheritable.  The command runs as uid 1000, so
 * execve would clear permitted anyway, but the bounding set survives exec
 * and a later setuid binary (none work: nosuid) or file caps could use it. */
int
jail_drop_bounding(int last_cap, bool must)
{
	for (int c = 0; c <= last_cap; c++)
		if (jail_prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL &&
		    (errno != EPERM || must))
			return -errno;
	return 0;
}

int
jail_drop_caps(int last_cap, bool need_bounding)
{
	int rc = jail_drop_bounding(last_cap, need_bounding);
	if (rc < 0)
		return rc;
	if (jail_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

/* A change of uid or gid clears the parent-death signal (jail_prctl(2)), so
 * arm it again, then make sure the parent did not die in between: its
 * end of chan closing reads as EOF here. */
void
jail_rearm_pdeathsig(int chan_fd)
{
	jail_prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* POLLRDHUP, not a peek: a queued message would hide the hang-up */
	struct pollfd pfd = {.fd = chan_fd, .events = POLLRDHUP};
	if (raw_poll_now(&pfd, 1) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP)))
		raw_exit(125);
}

/* Process level only: leave root behind, and the capabilities. */
static void
drop_privileges(const struct jail_plan *plan, struct sync_chan *c)
{
	int rc;
	if (plan->run_uid != (uid_t)-1) {
		/* the bounding set first: dropping it needs CAP_SETPCAP, which
		 * the uid change below takes away; setgroups before setuid:
		 * supplementary groups survive it */
		if ((rc = jail_drop_bounding(plan->last_cap, true)) < 0)
			fail(c, JAIL_STEP_6D_CAPS, -rc);
		if ((rc = jail_set_ids(plan->run_uid, plan->run_gid)) < 0)
			fail(c, JAIL_STEP_2B_IDS, -rc);
		jail_rearm_pdeathsig(c->fd);
	}
	/* an unprivileged caller cannot shrink its bounding set (no
	 * CAP_SETPCAP); it holds no capability and NoNewPrivs keeps it from
	 * gaining one */
	if ((rc = jail_drop_caps(plan->last_cap, false)) < 0)
		fail(c, JAIL_STEP_6D_CAPS, -rc);
	/* 6e. NoNewPrivs: setuid binaries and file caps grant nothing, and
	 * unprivileged seccomp and Landlock need it.  (In a container pid 1
	 * did 6d and 6e for every command already.) */
	if (jail_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(c, JAIL_STEP_6E_NNP, errno);
}

__attribute__((noreturn)) void
jail_exec_main(const struct jail_plan *plan, const struct jail_exec_args *x)
{
	struct sync_chan chan;
	const struct jail_cmd *cmd = x->cmd;
	int rc;

	jail_child_sanitizer();
	sync_chan_init(&chan, x->chan, SYNC_COMMAND, SYNC_S_SENT);
	/* The command dies with pid 1 (and, at the process level, pid 1 with
	 * warden): nothing of a sandbox outlives its monitor. */
	jail_prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

	/* 6a. A new session: no controlling terminal, so TIOCSTI cannot push
	 * keystrokes into the caller's terminal (CVE-2017-5226); seccomp
	 * refuses TIOCSTI too.  It also makes the command a process group
	 * that pid 1 can end as a whole. */
	if (setsid() < 0)
		fail(&chan, JAIL_STEP_6A_SESSION, errno);

	/* Signals start clean: pid 1 set every disposition to the default
	 * once (SIG_IGN would survive execve); only its blocked mask is left
	 * to undo.  Measured (bench/step_bench): the 64 rt_sigaction calls
	 * this saves per command cost ~6 us. */
	jail_unblock_signals();

	/* pid 1 mapped the command's plan (it shares our memory until
	 * execve); its failure to do so is reported from here, where the
	 * protocol expects it. */
	if (x->cmd_err)
		fail(&chan, JAIL_STEP_6B_FDS, x->cmd_err);

	/* 6b. stdin is /dev/null unless the caller passed one. */
	int in = x->in >= 0 ? x->in : plan->devnull_fd;
	if (raw_dup2(in, 0) < 0 || raw_dup2(x->out, 1) < 0 || raw_dup2(x->err, 2) < 0)
		fail(&chan, JAIL_STEP_6B_FDS, errno);

	/* 6c. rlimits: no core dumps (they would land in the workspace),
	 * bounded fds and file size. */
	if (setrlimit(RLIMIT_CORE, &plan->rl_core) < 0 ||
	    setrlimit(RLIMIT_NOFILE, &plan->rl_nofile) < 0 ||
	    setrlimit(RLIMIT_FSIZE, &plan->rl_fsize) < 0)
		fail(&chan, JAIL_STEP_6C_RLIMITS, errno);

	if (!plan->container)
		drop_privileges(plan, &chan);
	if (chdir(cmd->cwd) < 0)
		fail(&chan, JAIL_STEP_6B_CWD, errno);

	/* 6f. Landlock, a second fence behind the mounts: pid 1 built the
	 * ruleset once (jail_landlock_ruleset), each command enters a domain
	 * of its own made from it, so commands cannot signal one another
	 * across domains (LANDLOCK_SCOPE_SIGNAL) as before.  Measured
	 * (bench/step_bench): ~3 us to enter instead of ~9 us to build (an
	 * open, fstat and add_rule per path) and enter. */
	if (plan->landlock_abi > 0 && (rc = jail_landlock_restrict(x->landlock)) < 0)
		fail(&chan, JAIL_STEP_6F_LANDLOCK, -rc);

	/* 6g. Nothing of warden's crosses into the command: every fd above 2
	 * closes at execve (CLOEXEC rather than close, so the channel can
	 * still report an execve failure). */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		fail(&chan, JAIL_STEP_6G_CLOSE_FDS, errno);

	/* 6h. Seccomp is already in force: pid 1 loaded the filter once,
	 * after its own set-up, and every command inherits it (filters pass
	 * through clone and execve).  Nothing above is on the deny list.
	 * Measured (bench/step_bench): loading it here cost ~50 us per
	 * command; the kernel converts and JIT-compiles the program at every
	 * load. */

	/* 6i. execve with an explicit argv and environment, never a shell.
	 * ENOENT moves on to the next candidate, any other error is
	 * remembered (execvp's rule). */
	int err = ENOENT;
	for (int i = 0; cmd->paths[i]; i++) {
		execve(cmd->paths[i], cmd->argv, cmd->envp);
		if (errno != ENOENT && errno != ENOTDIR)
			err = errno;
	}
	fail(&chan, JAIL_STEP_6I_EXEC, err);
}
