/*
 * exec_bench: the cost of one command in a live sandbox (wd_sandbox_exec)
 * at the gvisor and container levels, against the bare program, measured
 * alternately in one process.
 *
 *   exec_bench [-n RUNS] [-w WARMUP] WORKSPACE -- CMD [ARGS...]
 *
 * One sandbox per level is created first (its creation time is printed,
 * it is not part of the figures); then each round runs CMD once bare
 * (fork + execve + waitpid), once in the container sandbox and once in the
 * gVisor sandbox, starting at a different one each round so that drift in
 * load is shared.  Prints the median, p10 and p90 per series in ms and the
 * ratios of the medians, and "summary LABEL MEDIAN_US P10_US P90_US" lines.
 * Uses only the public API (include/warden.h).
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

enum { BARE, CONTAINER, GVISOR, NSERIES };
static const char *const label[NSERIES] = {"bare", "container", "gvisor"};

static uint64_t
in(wd_sandbox *sb, const wd_cmd *cmd)
{
	struct wd_err e = {0};
	wd_result *r = NULL;
	uint64_t t0 = bench_now_ns();
	int rc = wd_sandbox_exec(sb, cmd, &r, &e);
	uint64_t t = bench_now_ns() - t0;
	int ok = rc == 0 && wd_result_status(r) == 0;
	if (rc < 0)
		fprintf(stderr, "exec_bench: %s\n", e.msg);
	wd_result_free(r);
	return ok ? t : 0;
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static wd_sandbox *
create(wd_ctx *ctx, const char *ws, enum wd_isolation level)
{
	struct wd_err e = {0};
	wd_spec *s = wd_spec_new();
	wd_sandbox *sb = NULL;
	wd_spec_set_isolation(s, level);
	wd_spec_set_workspace(s, ws, &e);
	uint64_t t0 = bench_now_ns();
	if (wd_sandbox_create(ctx, s, &sb, &e) < 0)
		fprintf(stderr, "exec_bench: create: %s\n", e.msg);
	else
		printf("# %s sandbox created in %.1f ms\n",
		       level == WD_ISOLATION_GVISOR ? "gvisor" : "container",
		       (double)(bench_now_ns() - t0) / 1e6);
	wd_spec_free(s);
	return sb;
}

int
main(int argc, char **argv)
{
	int runs = 100, warmup = 5, opt;
	while ((opt = getopt(argc, argv, "n:w:")) != -1) {
		if (opt == 'n')
			runs = atoi(optarg);
		else if (opt == 'w')
			warmup = atoi(optarg);
		else
			return 2;
	}
	if (optind + 2 > argc || runs < 1) {
		fprintf(stderr,
			"usage: exec_bench [-n RUNS] [-w WARMUP] WORKSPACE -- CMD [ARGS...]\n");
		return 2;
	}
	const char *ws = argv[optind];
	char **cmdv = argv + optind + 1;
	if (!strcmp(cmdv[0], "--"))
		cmdv++;
	int cmdc = 0;
	while (cmdv[cmdc])
		cmdc++;

	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0) {
		fprintf(stderr, "exec_bench: %s\n", e.msg);
		return 1;
	}
	wd_sandbox *sb[NSERIES] = {NULL, create(ctx, ws, WD_ISOLATION_CONTAINER),
				   create(ctx, ws, WD_ISOLATION_GVISOR)};
	if (!sb[CONTAINER] || !sb[GVISOR])
		return 1;
	wd_cmd *cmd = wd_cmd_new();
	wd_cmd_set_argv(cmd, cmdc, (const char *const *)cmdv, &e);

	uint64_t *t[NSERIES];
	int n[NSERIES] = {0}, failed[NSERIES] = {0};
	for (int s = 0; s < NSERIES; s++)
		t[s] = calloc((size_t)runs, sizeof(uint64_t));
	for (int round = -warmup; round < runs; round++) {
		for (int k = 0; k < NSERIES; k++) {
			int s = (k + (round < 0 ? 0 : round)) % NSERIES;
			uint64_t v = s == BARE ? bench_bare(cmdv) : in(sb[s], cmd);
			if (round < 0)
				continue;
			if (v)
				t[s][n[s]++] = v;
			else
				failed[s]++;
		}
	}
	double med[NSERIES] = {0};
	printf("%-10s %9s %9s %9s %6s\n", "series", "median", "p10", "p90", "failed");
	for (int s = 0; s < NSERIES; s++) {
		if (!n[s])
			continue;
		qsort(t[s], (size_t)n[s], sizeof(uint64_t), cmp);
		med[s] = (double)t[s][n[s] / 2] / 1e6;
		double p10 = (double)t[s][n[s] / 10] / 1e6, p90 = (double)t[s][n[s] * 9 / 10] / 1e6;
		printf("%-10s %9.3f %9.3f %9.3f %6d\n", label[s], med[s], p10, p90, failed[s]);
		printf("summary\t%s\t%.1f\t%.1f\t%.1f\n", label[s], med[s] * 1e3, p10 * 1e3,
		       p90 * 1e3);
	}
	if (med[BARE] > 0 && med[CONTAINER] > 0 && med[GVISOR] > 0)
		printf("ratios of the medians: gvisor/container %.2f, gvisor/bare %.1f, "
		       "container/bare %.1f\n",
		       med[GVISOR] / med[CONTAINER], med[GVISOR] / med[BARE],
		       med[CONTAINER] / med[BARE]);
	wd_cmd_free(cmd);
	wd_sandbox_destroy(sb[CONTAINER]);
	wd_sandbox_destroy(sb[GVISOR]);
	wd_ctx_free(ctx);
	for (int s = 0; s < NSERIES; s++)
		free(t[s]);
	return 0;
}
