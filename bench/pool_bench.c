/*
 * pool_bench: the warm pool, measured against bare execution in
 * one process, alternating.
 *
 *   pool_bench [-n RUNS] [-s SIZE] WORKSPACE
 *
 *  1. warm latency: a pooled one-shot run of /bin/true (wd_pool_run) while
 *     the pool is full and idle (each run waits for the pool to refill and
 *     the used instance to be destroyed first), alternating with a bare
 *     fork + execve + waitpid of /bin/true and with exec into a live
 *     sandbox (wd_sandbox_exec); medians, p10, p90 and the added time;
 *  2. burst: SIZE + 8 runs back to back from a full pool: how many were
 *     served without waiting (the burst the pool absorbs);
 *  3. sustained: RUNS runs back to back: runs/s, which the build rate
 *     bounds, and the pool's own builds/s (wd_pool_stats);
 *  4. sessions: wd_session_exec of /bin/true into a running session (its
 *     monitor over the unix socket) alternating with bare and with the
 *     in-process live sandbox; then execs/s with two threads at once, for
 *     the in-process sandbox and for the session.
 *
 * Prints "summary LABEL MEDIAN_US P10_US P90_US" lines for bench/run.sh.
 * Public API only.
 */
#include "warden.h"
#include "bench.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void
report(const char *label, uint64_t *v, int n, double *median)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	double med = v[n / 2] / 1e3, p10 = v[n / 10] / 1e3, p90 = v[n * 9 / 10] / 1e3;
	printf("%-12s %9.1f %9.1f %9.1f us\n", label, med, p10, p90);
	printf("summary\t%s\t%.1f\t%.1f\t%.1f\n", label, med, p10, p90);
	*median = med;
}

/* until the pool is full again and nothing is being built or destroyed */
static void
wait_full(wd_pool *p, unsigned size)
{
	struct wd_pool_stats st;
	for (int i = 0; i < 2000; i++) {
		wd_pool_stats(p, &st);
		if (st.ready >= size)
			break;
		bench_sleep_ms(2);
	}
	bench_sleep_ms(30); /* the reaper's namespace teardown */
}

struct tput {
	wd_ctx *ctx;
	wd_sandbox *sb;	 /* or */
	const char *ref; /* a session */
	const wd_cmd *cmd;
	int n, failed;
};

static void *
tput_thread(void *arg)
{
	struct tput *t = arg;
	struct wd_err e = {0};
	for (int i = 0; i < t->n; i++) {
		wd_result *r = NULL;
		int rc = t->sb ? wd_sandbox_exec(t->sb, t->cmd, &r, &e)
			       : wd_session_exec(t->ctx, t->ref, t->cmd, &r, &e);
		if (rc < 0 || wd_result_status(r))
			t->failed++;
		wd_result_free(r);
	}
	return NULL;
}

/* execs per second with two threads at once */
static double
throughput(wd_ctx *ctx, wd_sandbox *sb, const char *ref, const wd_cmd *cmd, int n, int *failed)
{
	struct tput t[2];
	pthread_t th[2];
	uint64_t t0 = bench_now_ns();
	for (int i = 0; i < 2; i++) {
		t[i] = (struct tput){ctx, sb, ref, cmd, n / 2, 0};
		pthread_create(&th[i], NULL, tput_thread, &t[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		*failed += t[i].failed;
	}
	return (double)(n / 2 * 2) / ((bench_now_ns() - t0) / 1e9);
}

int
main(int argc, char **argv)
{
	int runs = 200, c;
	unsigned size = 4;
	while ((c = getopt(argc, argv, "n:s:")) != -1) {
		if (c == 'n')
			runs = atoi(optarg);
		else if (c == 's')
			size = (unsigned)atoi(optarg);
		else
			return 2;
	}
	if (optind >= argc || runs < 10) {
		fprintf(stderr, "usage: pool_bench [-n RUNS] [-s SIZE] WORKSPACE\n");
		return 2;
	}
	const char *ws = argv[optind];
	struct wd_err e = {0};
	wd_ctx *ctx = NULL;
	wd_ctx_new(&ctx, &e);
	wd_spec *tmpl = wd_spec_new();
	wd_pool *pool = NULL;
	if (wd_pool_new(ctx, tmpl, size, &pool, &e) < 0) {
		fprintf(stderr, "pool_bench: %s\n", e.msg);
		return 77;
	}
	wd_spec *ls = wd_spec_new();
	wd_spec_set_workspace(ls, ws, &e);
	wd_sandbox *live = NULL;
	if (wd_sandbox_create(ctx, ls, &live, &e) < 0) {
		fprintf(stderr, "pool_bench: %s\n", e.msg);
		return 1;
	}
	wd_cmd *cmd = wd_cmd_new();
	const char *t[] = {"/bin/true", NULL};
	wd_cmd_set_argv(cmd, 1, t, &e);
	int warm = runs < 60 ? runs : 60;
	uint64_t *vb = calloc((size_t)warm, 8), *vp = calloc((size_t)warm, 8),
		 *vl = calloc((size_t)warm, 8);
	int failed = 0;
	wait_full(pool, size);
	for (int i = 0; i < warm; i++) {
		/* three series, the order rotated each round */
		for (int k = 0; k < 3; k++) {
			int which = (i + k) % 3;
			wd_result *r = NULL;
			uint64_t t0 = bench_now_ns();
			if (which == 0) {
				vb[i] = bench_bare_true();
			} else if (which == 1) {
				if (wd_pool_run(pool, ws, cmd, &r, &e) < 0 || wd_result_status(r))
					failed++;
				vp[i] = bench_now_ns() - t0;
				wd_result_free(r);
				wait_full(pool, size);
			} else {
				if (wd_sandbox_exec(live, cmd, &r, &e) < 0 || wd_result_status(r))
					failed++;
				vl[i] = bench_now_ns() - t0;
				wd_result_free(r);
			}
		}
	}
	printf("warm latency of /bin/true, %d alternating rounds (median, p10, p90):\n", warm);
	double mb, mp, ml;
	report("bare", vb, warm, &mb);
	report("pooled", vp, warm, &mp);
	report("live-exec", vl, warm, &ml);
	printf("added over bare: pooled %+.0f us, exec into a live sandbox %+.0f us; "
	       "pooled/bare %.2f\n",
	       mp - mb, ml - mb, mp / mb);

	/* burst from a full pool */
	wait_full(pool, size);
	struct wd_pool_stats s0, s1;
	wd_pool_stats(pool, &s0);
	int burst = (int)size + 8;
	uint64_t t0 = bench_now_ns();
	for (int i = 0; i < burst; i++) {
		wd_result *r = NULL;
		if (wd_pool_run(pool, ws, cmd, &r, &e) < 0)
			failed++;
		wd_result_free(r);
	}
	uint64_t tb = bench_now_ns() - t0;
	wd_pool_stats(pool, &s1);
	printf("burst: %d runs back to back from a full pool of %u: %llu served without "
	       "waiting, %llu waited; %.1f ms\n",
	       burst, size, (unsigned long long)(burst - (s1.waited - s0.waited)),
	       (unsigned long long)(s1.waited - s0.waited), tb / 1e6);

	/* sustained */
	wait_full(pool, size);
	wd_pool_stats(pool, &s0);
	t0 = bench_now_ns();
	for (int i = 0; i < runs; i++) {
		wd_result *r = NULL;
		if (wd_pool_run(pool, ws, cmd, &r, &e) < 0)
			failed++;
		wd_result_free(r);
	}
	uint64_t ts = bench_now_ns() - t0;
	wd_pool_stats(pool, &s1);
	uint64_t built = s1.built - s0.built;
	printf("sustained: %d runs in %.0f ms: %.0f runs/s; the pool built %llu in that time "
	       "(%.1f ms of builder time each, %.0f builds/s)\n",
	       runs, ts / 1e6, runs / (ts / 1e9), (unsigned long long)built,
	       built ? (s1.build_ns - s0.build_ns) / 1e6 / (double)built : 0, built / (ts / 1e9));
	printf("summary\tpool-runs-per-s\t%.0f\t0\t0\n", runs / (ts / 1e9));
	/* sessions: through the monitor */
	char sid[17];
	struct wd_session_params sp = {.name = NULL};
	if (wd_session_create(ctx, ls, &sp, sid, &e) < 0) {
		printf("sessions: cannot create one: %s (WARDEN_MONITOR?)\n", e.msg);
	} else {
		uint64_t *vs = calloc((size_t)warm, 8), *vb2 = calloc((size_t)warm, 8),
			 *vl2 = calloc((size_t)warm, 8);
		for (int i = 0; i < warm; i++) {
			for (int k = 0; k < 3; k++) {
				int which = (i + k) % 3;
				wd_result *r = NULL;
				uint64_t t1 = bench_now_ns();
				if (which == 0) {
					vb2[i] = bench_bare_true();
				} else if (which == 1) {
					if (wd_session_exec(ctx, sid, cmd, &r, &e) < 0 ||
					    wd_result_status(r))
						failed++;
					vs[i] = bench_now_ns() - t1;
				} else {
					if (wd_sandbox_exec(live, cmd, &r, &e) < 0 ||
					    wd_result_status(r))
						failed++;
					vl2[i] = bench_now_ns() - t1;
				}
				wd_result_free(r);
			}
		}
		double sb2, ss, sl;
		printf("sessions, %d alternating rounds:\n", warm);
		report("bare", vb2, warm, &sb2);
		report("session-exec", vs, warm, &ss);
		report("live-exec", vl2, warm, &sl);
		printf(
		    "added over bare: wd_session_exec %+.0f us (the monitor's socket %+.0f us over "
		    "the in-process exec)\n",
		    ss - sb2, ss - sl);
		int n = runs * 2;
		double tl = throughput(ctx, live, NULL, cmd, n, &failed);
		double ts2 = throughput(ctx, NULL, sid, cmd, n, &failed);
		printf("throughput, 2 threads: wd_sandbox_exec %.0f execs/s, wd_session_exec %.0f "
		       "execs/s\n",
		       tl, ts2);
		printf("summary\tlive-exec-per-s\t%.0f\t0\t0\nsummary\tsession-exec-per-s\t%."
		       "0f\t0\t0\n",
		       tl, ts2);
		wd_session_remove(ctx, sid, &e);
		free(vs);
		free(vb2);
		free(vl2);
	}
	if (failed)
		printf("FAILED: %d runs\n", failed);
	wd_cmd_free(cmd);
	wd_sandbox_destroy(live);
	wd_pool_free(pool);
	wd_spec_free(ls);
	wd_spec_free(tmpl);
	wd_ctx_free(ctx);
	free(vb);
	free(vp);
	free(vl);
	return failed ? 1 : 0;
}
