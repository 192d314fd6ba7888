/*
 * gvisor_exec_bench: one command into a live gVisor session, through the
 * resident executor against runsc exec, in the same sandbox and the same
 * run (alternating rounds), with the bare host fork+exec as the floor.
 *
 *   gvisor_exec_bench [-n RUNS] [-w WARMUP] [-r REPEATS] WORKSPACE
 *
 * Series, per round, starting at a different one each round:
 *   bare        fork + execve + waitpid of /bin/true on the host
 *   resident    wd_sandbox_exec of /bin/true (no stdin: the executor)
 *   runsc-exec  the same with stdin set to /dev/null (warden then takes
 *               runsc exec, the path the executor replaced; exec_path in
 *               the result is checked for each)
 * and once per repeat, inside the sandbox, what gVisor itself takes for
 * a small process (dash) to fork, exec and wait for /bin/true (the mean
 * of 40): what any way into gVisor pays at least once per command, for
 * scale (not subtracted: the executor uses vfork, dash fork).
 *
 * Prints per repeat the median, p10 and p90 in ms, then over the REPEATS
 * (default 3) the median and the range of: resident - bare (added ms),
 * resident / runsc-exec, and "summary KEY VALUE" lines for make bench:
 * gvisor_exec_added_ms, gvisor_exec_vs_runsc_exec.  Public API only.
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

enum { BARE, RESIDENT, RUNSC, NSERIES };
static const char *const label[NSERIES] = {"bare", "resident", "runsc-exec"};

/* One exec; 0 when it failed or did not take the path asked for. */
static uint64_t
in(wd_sandbox *sb, const wd_cmd *cmd, const char *path, wd_result **keep)
{
	struct wd_err e = {0};
	wd_result *r = NULL;
	uint64_t t0 = bench_now_ns();
	int rc = wd_sandbox_exec(sb, cmd, &r, &e);
	uint64_t t = bench_now_ns() - t0;
	int ok = rc == 0 && wd_result_status(r) == 0;
	if (rc < 0)
		fprintf(stderr, "gvisor_exec_bench: %s\n", e.msg);
	if (ok && path) {
		char *j = wd_result_json(r);
		char want[64];
		snprintf(want, sizeof(want), "\"exec_path\":\"%s\"", path);
		if (!j || !strstr(j, want)) {
			fprintf(stderr, "gvisor_exec_bench: not through %s\n", path);
			ok = 0;
		}
		free(j);
	}
	if (keep)
		*keep = r;
	else
		wd_result_free(r);
	return ok ? t : 0;
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

static const char inside_sh[] =
    "s=$(date +%s%N); i=0; while [ $i -lt 40 ]; do /bin/true; i=$((i+1)); done; "
    "e=$(date +%s%N); echo $(((e-s)/40))";

int
main(int argc, char **argv)
{
	int runs = 60, warmup = 5, repeats = 3, opt;
	while ((opt = getopt(argc, argv, "n:w:r:")) != -1) {
		if (opt == 'n')
			runs = atoi(optarg);
		else if (opt == 'w')
			warmup = atoi(optarg);
		else if (opt == 'r')
			repeats = atoi(optarg);
		else
			return 2;
	}
	if (optind + 1 != argc || runs < 1 || repeats < 1 || repeats > 20) {
		fprintf(stderr, "usage: gvisor_exec_bench [-n RUNS] [-w WARMUP] [-r REPEATS] "
				"WORKSPACE\n");
		return 2;
	}
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0) {
		fprintf(stderr, "gvisor_exec_bench: %s\n", e.msg);
		return 1;
	}
	wd_spec *s = wd_spec_new();
	wd_spec_set_isolation(s, WD_ISOLATION_GVISOR);
	wd_spec_set_workspace(s, argv[optind], &e);
	wd_sandbox *sb = NULL;
	uint64_t c0 = bench_now_ns();
	if (wd_sandbox_create(ctx, s, &sb, &e) < 0) {
		fprintf(stderr, "gvisor_exec_bench: create: %s\n", e.msg);
		return 1;
	}
	printf("# gvisor session created in %.1f ms\n", (double)(bench_now_ns() - c0) / 1e6);
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	const char *tv[] = {"/bin/true", NULL};
	wd_cmd *res = wd_cmd_new(), *rs = wd_cmd_new(), *py = wd_cmd_new();
	wd_cmd_set_argv(res, 1, tv, &e);
	wd_cmd_set_argv(rs, 1, tv, &e);
	wd_cmd_set_stdin(rs, devnull);
	const char *pv[] = {"/bin/sh", "-c", inside_sh, NULL};
	wd_cmd_set_argv(py, 3, pv, &e);

	double added[20], ratio[20], inside[20], added_runsc[20];
	uint64_t *t[NSERIES];
	for (int k = 0; k < NSERIES; k++)
		t[k] = calloc((size_t)runs, sizeof(uint64_t));
	int bad = 0;
	for (int rep = 0; rep < repeats; rep++) {
		int n[NSERIES] = {0}, failed[NSERIES] = {0};
		for (int round = -warmup; round < runs; round++) {
			for (int k = 0; k < NSERIES; k++) {
				int sr = (k + (round < 0 ? 0 : round)) % NSERIES;
				uint64_t v = sr == BARE	      ? bench_bare_true()
					     : sr == RESIDENT ? in(sb, res, "resident", NULL)
							      : in(sb, rs, "runsc-exec", NULL);
				if (round < 0)
					continue;
				if (v)
					t[sr][n[sr]++] = v;
				else
					failed[sr]++;
			}
		}
		wd_result *pr = NULL;
		inside[rep] = 0;
		if (in(sb, py, NULL, &pr) && pr) {
			size_t len;
			const char *o = wd_result_output(pr, 1, &len);
			inside[rep] = strtod(o, NULL) / 1e6;
		}
		wd_result_free(pr);
		double med[NSERIES] = {0};
		printf("\n## repeat %d: /bin/true, %d rounds\n", rep + 1, runs);
		printf("%-12s %9s %9s %9s %6s\n", "series", "median", "p10", "p90", "failed");
		for (int k = 0; k < NSERIES; k++) {
			if (!n[k]) {
				bad = 1;
				continue;
			}
			qsort(t[k], (size_t)n[k], sizeof(uint64_t), cmp_u64);
			med[k] = (double)t[k][n[k] / 2] / 1e6;
			printf("%-12s %9.3f %9.3f %9.3f %6d\n", label[k], med[k],
			       (double)t[k][n[k] / 10] / 1e6, (double)t[k][n[k] * 9 / 10] / 1e6,
			       failed[k]);
			bad |= failed[k] > 0;
		}
		printf("%-12s %9.3f   (mean fork+exec+wait of /bin/true by dash inside gVisor)\n",
		       "inside", inside[rep]);
		added[rep] = med[RESIDENT] - med[BARE];
		added_runsc[rep] = med[RUNSC] - med[BARE];
		ratio[rep] = med[RUNSC] > 0 ? med[RESIDENT] / med[RUNSC] : 0;
		printf("added over bare: resident %.2f ms, runsc exec %.2f ms; resident / runsc "
		       "exec %.3f\n",
		       added[rep], med[RUNSC] - med[BARE], ratio[rep]);
	}
	double sa[20], sr[20], si[20];
	memcpy(sa, added, sizeof(double) * (size_t)repeats);
	memcpy(sr, ratio, sizeof(double) * (size_t)repeats);
	memcpy(si, inside, sizeof(double) * (size_t)repeats);
	qsort(sa, (size_t)repeats, sizeof(double), cmp_d);
	qsort(sr, (size_t)repeats, sizeof(double), cmp_d);
	qsort(si, (size_t)repeats, sizeof(double), cmp_d);
	int m = repeats / 2;
	printf("\n# over %d repeats, median (range): added %.2f ms (%.2f-%.2f); dash's fork+exec "
	       "of /bin/true inside gVisor %.2f ms (%.2f-%.2f); resident / runsc exec %.3f "
	       "(%.3f-%.3f)\n",
	       repeats, sa[m], sa[0], sa[repeats - 1], si[m], si[0], si[repeats - 1], sr[m], sr[0],
	       sr[repeats - 1]);
	/* gVisor's own way into a running sandbox beside warden's executor */
	bench_peer_line("exec of /bin/true into a live gVisor sandbox, added over bare", "ms",
			"low", "runsc exec", added, added_runsc, repeats);
	printf("summary\tgvisor_exec_added_ms\t%.2f\n", sa[m]);
	printf("summary\tgvisor_exec_vs_runsc_exec\t%.3f\n", sr[m]);
	wd_cmd_free(res);
	wd_cmd_free(rs);
	wd_cmd_free(py);
	close(devnull);
	wd_sandbox_destroy(sb);
	wd_spec_free(s);
	wd_ctx_free(ctx);
	for (int k = 0; k < NSERIES; k++)
		free(t[k]);
	return bad;
}
