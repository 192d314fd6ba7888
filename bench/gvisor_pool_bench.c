/*
 * gvisor_pool_bench: a pooled gVisor one-shot run against a cold one, in
 * the same process and run (alternating rounds), with the bare host
 * fork+exec as the floor.
 *
 *   gvisor_pool_bench [-n RUNS] [-w WARMUP] [-r REPEATS] [-s SIZE] [-v] WORKSPACE
 *
 * -v: the library's debug lines on stderr, each with the host's monotonic
 * ms (the steps of a take: tree, attach, executor, command).
 *
 * Series, per round, starting at a different one each round:
 *   bare     fork + execve + waitpid of /bin/true on the host
 *   pooled   wd_pool_run of /bin/true from a full, idle pool of SIZE
 *            (default 2) gVisor sandboxes: take, the workspace attached
 *            (mounted in the gofer's namespace, bound by the executor),
 *            the command through the resident executor; the used sandbox
 *            is destroyed off the caller's path.  Before every series'
 *            run the pool is refilled and the last used one destroyed, so
 *            the figure is a pool that keeps up, not a burst, and no build
 *            competes with any series
 *   cold     wd_ctx_run of /bin/true at --isolation gvisor (runsc run
 *            in a fresh sandbox: what the pool replaces)
 *
 * Prints per repeat the median, p10 and p90 in ms and the added time over
 * bare; then over the REPEATS (default 3) the median and the range of the
 * pooled and cold added times and of pooled / cold, and "summary KEY VALUE"
 * lines for make bench: gvisor_pool_oneshot_ms (pooled, added over bare)
 * and gvisor_pool_vs_cold.  Public API only.
 */
#include "warden.h"
#include "bench.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { BARE, POOLED, COLD, NSERIES };
static const char *const label[NSERIES] = {"bare", "pooled", "cold"};

/* The pool full and idle: every instance ready, the used ones destroyed
 * (the reaper's runsc teardown takes tens of ms on this kind of host). */
static void
wait_full(wd_pool *p, unsigned size)
{
	for (int i = 0; i < 30000; i++) {
		struct wd_pool_stats st;
		wd_pool_stats(p, &st);
		if (st.ready >= size)
			break;
		bench_sleep_ms(2);
	}
	bench_sleep_ms(100);
}

static uint64_t
timed(int rc, wd_result *r, const struct wd_err *e, uint64_t t0)
{
	uint64_t t = bench_now_ns() - t0;
	int ok = rc == 0 && wd_result_status(r) == 0;
	if (rc < 0)
		fprintf(stderr, "gvisor_pool_bench: %s\n", e->msg);
	wd_result_free(r);
	return ok ? t : 0;
}

static void
log_line(int level, const char *func, const char *msg, void *data)
{
	(void)level;
	(void)func;
	(void)data;
	fprintf(stderr, "%.3f %s\n", (double)bench_now_ns() / 1e6, msg);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int runs = 15, warmup = 2, repeats = 3, size = 2, opt, verbose = 0;
	while ((opt = getopt(argc, argv, "n:w:r:s:v")) != -1) {
		if (opt == 'v') {
			verbose = 1;
			wd_set_log_handler(log_line, NULL, WD_LOG_DEBUG);
			continue;
		}
		if (opt == 'n')
			runs = atoi(optarg);
		else if (opt == 'w')
			warmup = atoi(optarg);
		else if (opt == 'r')
			repeats = atoi(optarg);
		else if (opt == 's')
			size = atoi(optarg);
		else
			return 2;
	}
	if (optind + 1 != argc || runs < 1 || repeats < 1 || repeats > 20 || size < 1 ||
	    size > 64) {
		fprintf(stderr, "usage: gvisor_pool_bench [-n RUNS] [-w WARMUP] [-r REPEATS] "
				"[-s SIZE] [-v] WORKSPACE\n");
		return 2;
	}
	const char *ws = argv[optind];
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0) {
		fprintf(stderr, "gvisor_pool_bench: %s\n", e.msg);
		return 1;
	}
	wd_spec *tmpl = wd_spec_new(), *cold = wd_spec_new();
	wd_spec_set_isolation(tmpl, WD_ISOLATION_GVISOR);
	wd_spec_set_isolation(cold, WD_ISOLATION_GVISOR);
	if (wd_spec_set_workspace(cold, ws, &e) < 0) {
		fprintf(stderr, "gvisor_pool_bench: %s\n", e.msg);
		return 1;
	}
	wd_pool *pool = NULL;
	if (wd_pool_new(ctx, tmpl, (unsigned)size, &pool, &e) < 0) {
		fprintf(stderr, "gvisor_pool_bench: wd_pool_new: %s\n", e.msg);
		return 1;
	}
	const char *tv[] = {"/bin/true", NULL};
	wd_cmd *cmd = wd_cmd_new();
	wd_cmd_set_argv(cmd, 1, tv, &e);

	double added[NSERIES][20], ratio[20];
	uint64_t *t[NSERIES];
	for (int k = 0; k < NSERIES; k++)
		t[k] = calloc((size_t)runs, sizeof(uint64_t));
	int bad = 0;
	for (int rep = 0; rep < repeats; rep++) {
		int n[NSERIES] = {0}, failed[NSERIES] = {0};
		for (int round = -warmup; round < runs; round++) {
			for (int k = 0; k < NSERIES; k++) {
				int sr = (k + (round < 0 ? 0 : round)) % NSERIES;
				uint64_t v = 0;
				wd_result *r = NULL;
				/* no refill or teardown of the pool runs beside any
				 * series' measurement */
				wait_full(pool, (unsigned)size);
				if (sr == BARE) {
					v = bench_bare_true();
				} else if (sr == POOLED) {
					uint64_t t0 = bench_now_ns();
					if (verbose)
						fprintf(stderr, "%.3f pooled run starts\n",
							(double)t0 / 1e6);
					int rc = wd_pool_run(pool, ws, cmd, &r, &e);
					v = timed(rc, r, &e, t0);
					if (verbose)
						fprintf(stderr, "%.3f pooled run returned\n",
							(double)bench_now_ns() / 1e6);
				} else {
					uint64_t t0 = bench_now_ns();
					int rc = wd_ctx_run(ctx, cold, cmd, &r, &e);
					v = timed(rc, r, &e, t0);
				}
				if (round < 0)
					continue;
				if (v)
					t[sr][n[sr]++] = v;
				else
					failed[sr]++;
			}
		}
		double med[NSERIES] = {0};
		printf("\n## repeat %d: /bin/true, %d rounds\n", rep + 1, runs);
		printf("%-8s %9s %9s %9s %9s %6s\n", "series", "median", "p10", "p90", "added",
		       "failed");
		for (int k = 0; k < NSERIES; k++) {
			if (!n[k]) {
				bad = 1;
				continue;
			}
			qsort(t[k], (size_t)n[k], sizeof(uint64_t), cmp_u64);
			med[k] = (double)t[k][n[k] / 2] / 1e6;
		}
		for (int k = 0; k < NSERIES; k++) {
			if (!n[k])
				continue;
			added[k][rep] = med[k] - med[BARE];
			printf("%-8s %9.3f %9.3f %9.3f %9.3f %6d\n", label[k], med[k],
			       (double)t[k][n[k] / 10] / 1e6, (double)t[k][n[k] * 9 / 10] / 1e6,
			       added[k][rep], failed[k]);
			bad |= failed[k] > 0;
		}
		ratio[rep] = med[COLD] > 0 ? med[POOLED] / med[COLD] : 0;
		printf("pooled / cold %.3f\n", ratio[rep]);
	}
	double sp[20], sc[20], sr[20];
	memcpy(sp, added[POOLED], sizeof(double) * (size_t)repeats);
	memcpy(sc, added[COLD], sizeof(double) * (size_t)repeats);
	memcpy(sr, ratio, sizeof(double) * (size_t)repeats);
	qsort(sp, (size_t)repeats, sizeof(double), cmp_d);
	qsort(sc, (size_t)repeats, sizeof(double), cmp_d);
	qsort(sr, (size_t)repeats, sizeof(double), cmp_d);
	int m = repeats / 2;
	struct wd_pool_stats st;
	wd_pool_stats(pool, &st);
	printf("\n# over %d repeats, median (range): pooled one-shot added %.2f ms (%.2f-%.2f); "
	       "cold one-shot added %.2f ms (%.2f-%.2f); pooled / cold %.3f (%.3f-%.3f); "
	       "%.1f ms per pool build\n",
	       repeats, sp[m], sp[0], sp[repeats - 1], sc[m], sc[0], sc[repeats - 1], sr[m], sr[0],
	       sr[repeats - 1], st.built ? st.build_ns / 1e6 / (double)st.built : 0);
	/* the cold one-shot is gVisor's own start (runsc run) with warden's
	 * part around it: ~3 ms before runsc and ~0.2 ms after of ~145 ms
	 * (docs/performance.md, gVisor) */
	bench_peer_line("gVisor one-shot /bin/true, added over bare: pooled", "ms", "low",
			"runsc run (cold)", added[POOLED], added[COLD], repeats);
	printf("summary\tgvisor_pool_oneshot_ms\t%.2f\n", sp[m]);
	printf("summary\tgvisor_pool_vs_cold\t%.3f\n", sr[m]);
	wd_cmd_free(cmd);
	wd_pool_free(pool);
	wd_spec_free(tmpl);
	wd_spec_free(cold);
	wd_ctx_free(ctx);
	for (int k = 0; k < NSERIES; k++)
		free(t[k]);
	return bad;
}
