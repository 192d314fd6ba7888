/* cgroup-bench [N [nocpuacct]]: the cgroup cost `warden run` pays per sandbox, measured
 * as N rounds (default 200) of create (default limits) + attach of a forked,
 * waiting child + kill + destroy, with fork/exit measured alone and
 * subtracted.  Prints per-phase medians.  Root only; not run by meson test. */
#include "cgroup/cgroup.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
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

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	unsigned flags = argc > 2 && strcmp(argv[2], "nocpuacct") == 0 ? CGROUP_NO_CPUACCT : 0;
	if (n < 1 || n > 100000)
		n = 200;
	struct cgroup_limits lim = {512ULL << 20, 128, 1000000};
	uint64_t *tc = calloc((size_t)n, 8), *ta = calloc((size_t)n, 8), *tk = calloc((size_t)n, 8),
		 *td = calloc((size_t)n, 8), *tall = calloc((size_t)n, 8);
	uint64_t t0 = wd_now_ns();
	int v = cgroup_host_version();
	uint64_t tdisc = wd_now_ns() - t0;
	cgroup_sweep_stale();
	for (int i = 0; i < n; i++) {
		char id[64];
		snprintf(id, sizeof(id), "bench-%d-%d", (int)getpid(), i);
		pid_t pid = fork();
		if (pid == 0) {
			pause();
			_exit(0);
		}
		struct wd_err err = {0};
		struct cgroup *cg = NULL;
		uint64_t a = wd_now_ns();
		if (cgroup_create_flags(id, &lim, flags, &cg, &err) < 0) {
			fprintf(stderr, "create: %s\n", err.msg);
			kill(pid, SIGKILL);
			return 1;
		}
		uint64_t b = wd_now_ns();
		if (cgroup_attach(cg, pid, &err) < 0) {
			fprintf(stderr, "attach: %s\n", err.msg);
			return 1;
		}
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
		tc[i] = b - a;
		ta[i] = c - b;
		tk[i] = d - c;
		td[i] = e - d;
		tall[i] = (b - a) + (c - b) + (e - d);
	}
	printf("cgroup v%d%s, %d rounds, discovery (once per process) %.1f us\n", v,
	       flags ? " (CGROUP_NO_CPUACCT)" : "", n, (double)tdisc / 1000.0);
	printf("median us: create %.1f  attach %.1f  kill+reap %.1f  destroy %.1f  "
	       "create+attach+destroy %.1f\n",
	       median_us(tc, n), median_us(ta, n), median_us(tk, n), median_us(td, n),
	       median_us(tall, n));
	return 0;
}
