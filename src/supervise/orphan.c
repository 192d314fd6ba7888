/* supervise/orphan: start a process that is not the caller's child.
 *
 * A short-lived middle process shares our memory and descriptor table and
 * stops us until it exits (CLONE_VM|CLONE_VFORK|CLONE_FILES, what
 * posix_spawn does).  It makes the real child with clone3 (a copy of our
 * memory as it is now, so the child sees everything we prepared) and
 * exits at once: the child is orphaned from its first instant and the
 * init process, or the caller's nearest subreaper, reaps it.  So the
 * caller never has to wait for it: a one-shot sandbox's pid 1 and the
 * keeper can end in their own time (namespace teardown, cgroup removal)
 * after warden has returned, and no zombie of theirs is left to the
 * caller.  A pidfd from CLONE_PIDFD lands in our descriptor table (it is
 * shared with the middle process): it signals and polls the child, it
 * cannot wait for it (ECHILD: not ours).
 *
 * The middle process writes only its own stack and the result slots, and
 * makes no system call that sets errno in a way anyone reads.  Sanitizer
 * builds (WD_SANITIZED) must not run code on shared memory this way:
 * supervise_clone_orphan() refuses with -ENOTSUP there and callers clone
 * directly. */
#include "supervise/supervise.h"

#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define MIDDLE_STACK (64 << 10)

struct middle {
	struct clone_args *ca;
	void (*child)(void *);
	void *arg;
	pid_t pid; /* the child's, or -errno */
};

static int
middle_main(void *arg)
{
	struct middle *m = arg;
	pid_t pid = (pid_t)syscall(SYS_clone3, m->ca, sizeof(*m->ca));
	if (pid == 0)
		m->child(m->arg); /* never returns */
	m->pid = pid < 0 ? -errno : pid;
	syscall(SYS_exit, 0);
	return 0;
}

pid_t
supervise_clone_orphan(struct clone_args *ca, void (*child)(void *), void *arg)
{
	if (WD_SANITIZED)
		return -ENOTSUP;
	struct middle m = {ca, child, arg, -EAGAIN};
	char *stack = mmap(NULL, MIDDLE_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -errno;
	int pidfd = -1;
	/* exit signal 0: the caller's waitpid(-1) never sees it */
	pid_t mid = clone(middle_main, stack + MIDDLE_STACK,
			  CLONE_VM | CLONE_VFORK | CLONE_FILES | CLONE_PIDFD, &m, &pidfd);
	if (mid < 0) {
		int e = errno;
		munmap(stack, MIDDLE_STACK);
		return -e;
	}
	/* It has exited (CLONE_VFORK): reaping it does not wait. */
	siginfo_t si;
	while (syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED | __WALL, NULL) < 0 &&
	       errno == EINTR)
		;
	close(pidfd);
	munmap(stack, MIDDLE_STACK);
	return m.pid;
}
