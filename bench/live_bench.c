/*
 * live_bench: create once, then exec (docs/performance.md: the live-exec target).
 *
 *   live_bench [-n RUNS] [-w WARMUP] [-t THREADS] [-k SANDBOXES] WORKSPACE -- CMD [ARGS...]
 *
 * One container-level sandbox is created through the public API
 * (wd_sandbox_create); then each round runs CMD once bare (fork + execve +
 * waitpid, stdio on /dev/null) and once through wd_sandbox_exec(), the
 * order alternating, so drift in load is shared.  Prints per series the
 * median, p10 and p90 in ms, the ratio of the medians (target: <= 1.5),
 * the added time of one exec over bare (target: < 0.5 ms), then:
 *
 *   throughput  THREADS threads run CMD through wd_sandbox_exec() in the
 *               same sandbox for about a second: execs per second
 *               (target: >= 1,000 for /bin/true on 2 cores), then as
 *               many threads fork+exec it bare, the machine's own figure
 *               under the load of the moment;
 *   rss         K more sandboxes created, idle: proportional set size
 *               (Pss) of their pid 1s, and the growth of this process's
 *               own RSS, per sandbox.
 *
 * and "summary KEY VALUE" lines for bench/summary.sh.  Uses only
 * include/warden.h.
 */
#include "warden.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t
bare(char **argv, int devnull)
{
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	uint64_t t = now_ns() - t0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : 0;
}

static int
exec_once(wd_sandbox *sb, const wd_cmd *cmd)
{
	struct wd_err e = {0};
	wd_result *r = NULL;
	int rc = wd_sandbox_exec(sb, cmd, &r, &e);
	int ok = rc == 0 && wd_result_status(r) == 0;
	if (rc < 0)
		fprintf(stderr, "live_bench: %s\n", e.msg);
	wd_result_free(r);
	return ok;
}

static uint64_t
in(wd_sandbox *sb, const wd_cmd *cmd)
{
	uint64_t t0 = now_ns();
	int ok = exec_once(sb, cmd);
	uint64_t t = now_ns() - t0;
	return ok ? t : 0;
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static wd_sandbox *
create(wd_ctx *ctx, const char *ws, double *ms)
{
	struct wd_err e = {0};
	wd_spec *s = wd_spec_new();
	wd_sandbox *sb = NULL;
	wd_spec_set_isolation(s, WD_ISOLATION_CONTAINER);
	wd_spec_set_workspace(s, ws, &e);
	/* Every CPU, as bare fork+exec has: under the default limit of one
	 * CPU the throughput series measured the limit (execs from 2 threads
	 * at the rate of 1; bare 2,300/s, the library 1,300/s on a quiet
	 * 2-CPU machine). */
	struct wd_limits l = {0};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	l.cpu_millionths = (uint64_t)(ncpu > 0 ? ncpu : 1) * 1000000u;
	wd_spec_set_limits(s, &l);
	uint64_t t0 = now_ns();
	if (wd_sandbox_create(ctx, s, &sb, &e) < 0)
		fprintf(stderr, "live_bench: create: %s\n", e.msg);
	if (ms)
		*ms = (double)(now_ns() - t0) / 1e6;
	wd_spec_free(s);
	return sb;
}

/* ---- throughput ---- */

struct worker {
	wd_sandbox *sb; /* NULL: bare fork+exec of argv */
	const wd_cmd *cmd;
	char **argv;
	int devnull;
	uint64_t until;
	atomic_long *done;
	long failed;
};

static void *
work(void *arg)
{
	struct worker *w = arg;
	while (now_ns() < w->until) {
		if (w->sb ? exec_once(w->sb, w->cmd) : bare(w->argv, w->devnull) != 0)
			atomic_fetch_add(w->done, 1);
		else
			w->failed++;
	}
	return NULL;
}

/* Execs per second of THREADS threads for about `seconds`: through the
 * sandbox, or bare (sb NULL) for the machine's own figure. */
static double
throughput(wd_sandbox *sb, const wd_cmd *cmd, char **argv, int devnull, int threads, double seconds,
	   long *failed)
{
	atomic_long done = 0;
	pthread_t tid[64];
	struct worker w[64];
	uint64_t t0 = now_ns();
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){sb,    cmd, argv, devnull, t0 + (uint64_t)(seconds * 1e9),
				       &done, 0};
		pthread_create(&tid[i], NULL, work, &w[i]);
	}
	*failed = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		*failed += w[i].failed;
	}
	return (double)atomic_load(&done) / ((double)(now_ns() - t0) / 1e9);
}

/* ---- memory ---- */

/* Sum of Pss (kB) over our children named warden-init, and how many. */
static long
pid1_pss_kb(int *count)
{
	DIR *d = opendir("/proc");
	long sum = 0;
	*count = 0;
	if (!d)
		return 0;
	struct dirent *de;
	pid_t self = getpid();
	while ((de = readdir(d))) {
		char path[288], buf[4096];
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		int pid, ppid;
		char comm[64];
		int n = fscanf(f, "%d (%63[^)]) %*c %d", &pid, comm, &ppid);
		fclose(f);
		if (n != 3 || ppid != self || strcmp(comm, "warden-init"))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/smaps_rollup", de->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		while (fgets(buf, sizeof(buf), f)) {
			long v;
			if (sscanf(buf, "Pss: %ld kB", &v) == 1) {
				sum += v;
				(*count)++;
			}
		}
		fclose(f);
	}
	closedir(d);
	return sum;
}

static long
self_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char buf[256];
	long v = 0;
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "VmRSS: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

int
main(int argc, char **argv)
{
	int runs = 200, warmup = 10, threads = 2, extra = 8, opt;
	while ((opt = getopt(argc, argv, "n:w:t:k:")) != -1) {
		if (opt == 'n')
			runs = atoi(optarg);
		else if (opt == 'w')
			warmup = atoi(optarg);
		else if (opt == 't')
			threads = atoi(optarg);
		else if (opt == 'k')
			extra = atoi(optarg);
		else
			return 2;
	}
	if (optind + 2 > argc || runs < 1 || threads < 1 || threads > 64 || extra < 0 ||
	    extra > 64) {
		fprintf(stderr, "usage: live_bench [-n RUNS] [-w WARMUP] [-t THREADS] "
				"[-k SANDBOXES] WORKSPACE -- CMD [ARGS...]\n");
		return 2;
	}
	const char *ws = argv[optind];
	char **cmdv = argv + optind + 1;
	if (!strcmp(cmdv[0], "--"))
		cmdv++;
	int cmdc = 0;
	while (cmdv[cmdc])
		cmdc++;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0) {
		fprintf(stderr, "live_bench: %s\n", e.msg);
		return 1;
	}
	double create_ms = 0;
	wd_sandbox *sb = create(ctx, ws, &create_ms);
	if (!sb)
		return 1;
	printf("# container sandbox created in %.2f ms (not part of the figures)\n", create_ms);
	wd_cmd *cmd = wd_cmd_new();
	wd_cmd_set_argv(cmd, cmdc, (const char *const *)cmdv, &e);

	uint64_t *t[2] = {calloc((size_t)runs, 8), calloc((size_t)runs, 8)};
	int n[2] = {0, 0}, failed[2] = {0, 0};
	for (int round = -warmup; round < runs; round++) {
		for (int k = 0; k < 2; k++) {
			int s = (k + (round < 0 ? 0 : round)) % 2;
			uint64_t v = s == 0 ? bare(cmdv, devnull) : in(sb, cmd);
			if (round < 0)
				continue;
			if (v)
				t[s][n[s]++] = v;
			else
				failed[s]++;
		}
	}
	static const char *const label[2] = {"bare", "live-exec"};
	double med[2] = {0, 0};
	printf("%-10s %9s %9s %9s %6s\n", "series", "median", "p10", "p90", "failed");
	for (int s = 0; s < 2; s++) {
		if (!n[s])
			continue;
		qsort(t[s], (size_t)n[s], sizeof(uint64_t), cmp);
		med[s] = (double)t[s][n[s] / 2] / 1e6;
		printf("%-10s %9.3f %9.3f %9.3f %6d\n", label[s], med[s],
		       (double)t[s][n[s] / 10] / 1e6, (double)t[s][n[s] * 9 / 10] / 1e6, failed[s]);
		printf("summary\t%s_us\t%.1f\n", label[s], med[s] * 1e3);
	}
	if (med[0] > 0 && med[1] > 0) {
		printf("exec into a live sandbox: %.2f x bare fork+exec (target <= 1.5), "
		       "+%.3f ms per exec (target < 0.5 ms)\n",
		       med[1] / med[0], med[1] - med[0]);
		printf("summary\tlive_ratio\t%.3f\n", med[1] / med[0]);
		printf("summary\tlive_added_us\t%.1f\n", (med[1] - med[0]) * 1e3);
	}

	long tfail = 0, bfail = 0;
	double rate = throughput(sb, cmd, cmdv, devnull, threads, 1.0, &tfail);
	double brate = throughput(NULL, NULL, cmdv, devnull, threads, 1.0, &bfail);
	printf("throughput: %.0f execs/s with %d thread(s) through wd_sandbox_exec "
	       "(target >= 1000), %ld failed; bare fork+exec %.0f/s (%.2f of it)\n",
	       rate, threads, tfail, brate, brate > 0 ? rate / brate : 0);
	printf("summary\tlive_execs_per_s\t%.0f\n", rate);
	printf("summary\tbare_execs_per_s\t%.0f\n", brate);

	if (extra > 0) {
		long rss0 = self_rss_kb();
		wd_sandbox *more[64];
		int made = 0;
		for (int i = 0; i < extra; i++)
			if ((more[made] = create(ctx, ws, NULL)))
				made++;
		int cnt = 0;
		long pss = pid1_pss_kb(&cnt);
		long rss1 = self_rss_kb();
		if (made && cnt) {
			printf("memory per idle sandbox: pid 1 Pss %.0f kB (%d pid 1s), "
			       "supervisor +%.0f kB\n",
			       (double)pss / cnt, cnt, (double)(rss1 - rss0) / made);
			printf("summary\trss_per_sandbox_kb\t%.0f\n",
			       (double)pss / cnt + (double)(rss1 - rss0) / made);
		}
		for (int i = 0; i < made; i++)
			wd_sandbox_destroy(more[i]);
	}
	wd_cmd_free(cmd);
	wd_sandbox_destroy(sb);
	wd_ctx_free(ctx);
	free(t[0]);
	free(t[1]);
	return 0;
}
