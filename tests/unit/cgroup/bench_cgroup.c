/* cgroup-bench [-n N] [-c] [-x] [-f]: what the cgroup module costs per sandbox.
 * Root only; built but not run by meson test.
 *
 * Each round: create (default warden limits: 512M, 128 pids, 1 CPU), put a
 * forked child in the cgroup, kill it, destroy.  The child gets in the way
 * the supervisor does it on v1 ("self": the child writes "0" to each
 * hierarchy's tasks file, which skips the kernel's global threadgroup lock)
 * and, in a separate timing, by cgroup_attach() from the parent, which on v1
 * pays an RCU grace period when the lock is cold.  On v2 the supervisor uses
 * clone3(CLONE_INTO_CGROUP) instead, timed as "self" here.
 *
 *   -n N  rounds (default 100)
 *   -c    cold: sleep 100 ms between rounds, as between two `warden run`s
 *         (the lock's fast path has gone back to idle)
 *   -x    CGROUP_NO_CPUACCT
 *   -f    CGROUP_NO_FREEZER
 *
 * Prints per-phase medians in microseconds. */
#include "cgroup/cgroup.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double
median_us(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return (double)v[n / 2] / 1000.0;
}

/* Fork a child that joins the cgroup itself and reports on a pipe; returns
 * its pid once it is inside. */
static pid_t
spawn_self_join(struct cgroup *cg)
{
	int fds[8], nfd = 0, p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if (cgroup_version(cg) == 1) {
		for (const char *const *d = cgroup_dirs(cg); *d && nfd < 8; d++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/tasks", *d);
			fds[nfd++] = open(path, O_WRONLY | O_CLOEXEC);
		}
	}
	struct clone_args ca = {.exit_signal = SIGCHLD};
	if (cgroup_version(cg) == 2) {
		ca.flags = CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgroup_dirfd(cg);
	}
	pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		for (int i = 0; i < nfd; i++)
			if (write(fds[i], "0", 1) != 1)
				_exit(1);
		(void)!write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	char c;
	(void)!read(p[0], &c, 1);
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
	close(p[0]);
	close(p[1]);
	return pid;
}

int
main(int argc, char **argv)
{
	int n = 100, opt;
	bool cold = false;
	unsigned flags = 0;
	while ((opt = getopt(argc, argv, "n:cxf")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'c')
			cold = true;
		else if (opt == 'x')
			flags |= CGROUP_NO_CPUACCT;
		else if (opt == 'f')
			flags |= CGROUP_NO_FREEZER;
		else
			return 2;
	}
	if (n < 1 || n > 100000)
		return 2;
	struct cgroup_limits lim = {512ULL << 20, 128, 1000000};
	uint64_t *tc = calloc((size_t)n, 8), *tj = calloc((size_t)n, 8), *ta = calloc((size_t)n, 8),
		 *tk = calloc((size_t)n, 8), *td = calloc((size_t)n, 8),
		 *tall = calloc((size_t)n, 8);
	uint64_t t0 = wd_now_ns();
	int v = cgroup_host_version();
	uint64_t tdisc = wd_now_ns() - t0;
	for (int i = 0; i < n; i++) {
		char id[64];
		struct wd_err err = {0};
		struct cgroup *cg = NULL;
		if (cold)
			usleep(100000);

		/* the supervisor's path: create, child joins, kill, destroy */
		snprintf(id, sizeof(id), "bench-%d-%d", (int)getpid(), i);
		uint64_t a = wd_now_ns();
		if (cgroup_create_flags(id, &lim, flags, &cg, &err) < 0) {
			fprintf(stderr, "create: %s\n", err.msg);
			return 1;
		}
		uint64_t b = wd_now_ns();
		pid_t pid = spawn_self_join(cg);
		uint64_t c = wd_now_ns();
		cgroup_kill(cg);
		waitpid(pid, NULL, 0);
		uint64_t d = wd_now_ns();
		if (cgroup_destroy(cg) < 0) {
			fprintf(stderr, "destroy failed\n");
			return 1;
		}
		cgroup_free(cg);
		uint64_t e = wd_now_ns();

		/* cgroup_attach() from the parent, timed alone */
		if (cold)
			usleep(100000);
		snprintf(id, sizeof(id), "bench-%d-%d-a", (int)getpid(), i);
		if (cgroup_create_flags(id, &lim, flags, &cg, &err) < 0)
			return 1;
		pid = fork();
		if (pid == 0) {
			pause();
			_exit(0);
		}
		uint64_t f = wd_now_ns();
		if (cgroup_attach(cg, pid, &err) < 0) {
			fprintf(stderr, "attach: %s\n", err.msg);
			return 1;
		}
		ta[i] = wd_now_ns() - f;
		cgroup_kill(cg);
		waitpid(pid, NULL, 0);
		cgroup_destroy(cg);
		cgroup_free(cg);

		tc[i] = b - a;
		tj[i] = c - b; /* includes fork + the child's scheduling */
		tk[i] = d - c;
		td[i] = e - d;
		tall[i] = (b - a) + (e - d);
	}
	printf("cgroup v%d%s%s%s, %d rounds, discovery (once per process) %.1f us\n", v,
	       (flags & CGROUP_NO_CPUACCT) ? ", CGROUP_NO_CPUACCT" : "",
	       (flags & CGROUP_NO_FREEZER) ? ", CGROUP_NO_FREEZER" : "", cold ? ", cold" : "", n,
	       (double)tdisc / 1000.0);
	printf("median us: create %.1f  destroy %.1f  create+destroy %.1f  kill(live child) %.1f\n",
	       median_us(tc, n), median_us(td, n), median_us(tall, n), median_us(tk, n));
	printf("           fork+self-join %.1f  cgroup_attach %.1f\n", median_us(tj, n),
	       median_us(ta, n));
	return 0;
}
