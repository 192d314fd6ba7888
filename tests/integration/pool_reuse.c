/*
 * pool_reuse: a pooled instance is never handed out twice.
 *
 *   pool_reuse [RUNS]        (default 1000)
 *
 * Each run, through wd_pool_run() on one pool of 4, first looks for what
 * the previous runs planted, then plants it itself:
 *
 *   a file      /tmp/planted-by-a-run (a tmpfs of the instance)
 *   a process   a `sleep` started in the background, in its own session
 *               (setsid) so that no process group kill takes it: only the
 *               end of the sandbox does
 *   a mount     none can be made (seccomp and no capability), so the check
 *               is that /workspace is the run's own directory: a marker
 *               file named after the run
 *
 * and prints a line with what it found.  A reused instance would show the
 * file, the process or another run's marker.  Every sandbox id must be
 * distinct, every run must see its own workspace, and after the pool is
 * freed no sandbox process, cgroup or descriptor is left.  Also: the pool
 * refuses bad input (a system directory as workspace) without using up an
 * instance's worth of trust, and its statistics add up.  Public API only.
 */
#include "warden.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;

/* A process that outlives the command: in a session of its own (so the
 * end of the command's process group spares it), waited for until it is
 * `sleep` (setsid(1) calls setsid() and then execs sleep, so a comm of
 * "sleep" means both have happened; waiting only for the session id, as
 * this once did, let the command end while the process was still called
 * "setsid", and under load the control below then missed it), so the
 * command cannot end first.  Up to ~10 s for a loaded machine. */
#define PLANT                                                                                      \
	"setsid sleep 1000 </dev/null >/dev/null 2>&1 & p=$!; i=0; n=; "                           \
	"while [ $i -lt 1000 ] && [ \"$n\" != sleep ]; "                                           \
	"do i=$((i+1)); sleep 0.01; read n < /proc/$p/comm 2>/dev/null || n=; done; exit 0"

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			printf("ok - ");                                                           \
		} else {                                                                           \
			printf("not ok - ");                                                       \
			failures++;                                                                \
		}                                                                                  \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
	} while (0)

static int
count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static int
cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* processes on the host whose comm is warden-init (the pool's pid 1s) */
static int
count_init(void)
{
	int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "warden-init\n"))
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

int
main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 1000;
	if (geteuid() != 0) {
		printf("SKIP: the warm pool needs root\n");
		return 77;
	}
	char base[] = "/tmp/wd-pool.XXXXXX";
	if (!mkdtemp(base))
		return 1;
	chmod(base, 0755);
	int fds0 = count_fds(), init0 = count_init();
	struct wd_err e = {0};
	wd_ctx *ctx = NULL;
	if (wd_ctx_new(&ctx, &e) < 0)
		return 1;
	wd_spec *tmpl = wd_spec_new();
	wd_pool *pool = NULL;
	if (wd_pool_new(ctx, tmpl, 4, &pool, &e) < 0) {
		printf("not ok - wd_pool_new: %s\n", e.msg);
		return 1;
	}
	/* bad input: refused, nothing run */
	wd_cmd *bad = wd_cmd_new();
	const char *t[] = {"/bin/true", NULL};
	wd_cmd_set_argv(bad, 1, t, &e);
	wd_result *br = NULL;
	int rc = wd_pool_run(pool, "/etc", bad, &br, &e);
	CHECK(rc == -EINVAL && !br, "a system directory as a pooled workspace is refused (%s)",
	      e.msg);
	wd_cmd_free(bad);

	/* the control: the same script twice in one live sandbox (which is
	 * reused by design) must find what the first run planted, or the
	 * checks below could not fail */
	{
		char ws[300];
		snprintf(ws, sizeof(ws), "%s/control", base);
		mkdir(ws, 0755);
		wd_spec *cs = wd_spec_new();
		wd_spec_set_workspace(cs, ws, &e);
		wd_sandbox *sb = NULL;
		int hits = 0;
		if (wd_sandbox_create(ctx, cs, &sb, &e) == 0) {
			for (int k = 0; k < 2; k++) {
				wd_cmd *cmd = wd_cmd_new();
				const char *a[] = {
				    "/bin/sh", "-c",
				    "test -e /tmp/planted-by-a-run && echo FOUND-FILE; "
				    "for c in /proc/[0-9]*/comm; do read n < $c; "
				    "[ \"$n\" = sleep ] && echo FOUND-PROC; done; "
				    "echo x > /tmp/planted-by-a-run; " PLANT,
				    NULL};
				wd_cmd_set_argv(cmd, 3, a, &e);
				wd_result *r = NULL;
				if (wd_sandbox_exec(sb, cmd, &r, &e) == 0 && k == 1) {
					size_t n;
					const char *o = wd_result_output(r, 1, &n);
					hits += memmem(o, n, "FOUND-FILE", 10) != NULL;
					hits += memmem(o, n, "FOUND-PROC", 10) != NULL;
					if (hits != 2)
						printf("# control saw: %.*s\n", (int)n, o);
				}
				wd_result_free(r);
				wd_cmd_free(cmd);
			}
			wd_sandbox_destroy(sb);
		} else {
			printf("# control sandbox: %s\n", e.msg);
		}
		wd_spec_free(cs);
		CHECK(hits == 2,
		      "control: a reused (live) sandbox shows the planted file and process");
	}

	char(*ids)[17] = calloc((size_t)runs, sizeof(*ids));
	int found_file = 0, found_proc = 0, wrong_ws = 0, failed = 0;
	uint64_t t0 = 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (int i = 0; i < runs; i++) {
		/* each run its own workspace, named after it */
		char ws[300], mark[340];
		snprintf(ws, sizeof(ws), "%s/ws%d", base, i % 8);
		mkdir(ws, 0755);
		snprintf(mark, sizeof(mark), "%s/run-marker", ws);
		FILE *f = fopen(mark, "w");
		if (f) {
			fprintf(f, "%d\n", i);
			fclose(f);
		}
		char script[512];
		snprintf(script, sizeof(script),
			 "test -e /tmp/planted-by-a-run && echo FOUND-FILE; "
			 "for c in /proc/[0-9]*/comm; do read n < $c 2>/dev/null; "
			 "[ \"$n\" = sleep ] && echo FOUND-PROC; done; "
			 "read m < /workspace/run-marker; echo marker=$m; "
			 "echo planted > /tmp/planted-by-a-run; " PLANT);
		wd_cmd *cmd = wd_cmd_new();
		const char *a[] = {"/bin/sh", "-c", script, NULL};
		wd_cmd_set_argv(cmd, 3, a, &e);
		wd_result *r = NULL;
		if (wd_pool_run(pool, ws, cmd, &r, &e) < 0) {
			printf("# run %d: %s\n", i, e.msg);
			failed++;
			wd_cmd_free(cmd);
			continue;
		}
		size_t n;
		const char *out = wd_result_output(r, 1, &n);
		char want[32];
		snprintf(want, sizeof(want), "marker=%d\n", i);
		if (memmem(out, n, "FOUND-FILE", 10))
			found_file++;
		if (memmem(out, n, "FOUND-PROC", 10))
			found_proc++;
		if (!memmem(out, n, want, strlen(want)))
			wrong_ws++;
		if (wd_result_status(r) != 0)
			failed++;
		snprintf(ids[i], 17, "%s", wd_result_sandbox_id(r));
		wd_result_free(r);
		wd_cmd_free(cmd);
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t dt = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - t0;
	printf("# %d pooled runs in %.0f ms (%.2f ms each, sustained)\n", runs, dt / 1e6,
	       dt / 1e6 / runs);
	CHECK(failed == 0, "all %d pooled runs ran and exited 0 (%d did not)", runs, failed);
	CHECK(found_file == 0, "no run found a file planted by another (%d did)", found_file);
	CHECK(found_proc == 0, "no run found a process started by another (%d did)", found_proc);
	CHECK(wrong_ws == 0, "every run saw its own workspace (%d did not)", wrong_ws);
	qsort(ids, (size_t)runs, sizeof(*ids), cmp);
	int dup = 0;
	for (int i = 1; i < runs; i++)
		dup += ids[i][0] && !strcmp(ids[i], ids[i - 1]);
	CHECK(dup == 0, "%d distinct sandbox ids (%d repeated)", runs, dup);
	struct wd_pool_stats st;
	wd_pool_stats(pool, &st);
	CHECK(st.taken == (uint64_t)runs, "the pool handed out %llu instances for %d runs",
	      (unsigned long long)st.taken, runs);
	CHECK(st.built >= st.taken,
	      "built %llu >= taken %llu (%llu callers waited, %.2f ms per build)",
	      (unsigned long long)st.built, (unsigned long long)st.taken,
	      (unsigned long long)st.waited, st.built ? st.build_ns / 1e6 / (double)st.built : 0);
	wd_pool_free(pool);
	wd_spec_free(tmpl);
	wd_ctx_free(ctx);
	/* the last pid 1s go a moment after their destroy */
	int left = 0;
	for (int i = 0; i < 100 && (left = count_init() - init0) > 0; i++)
		usleep(100000);
	CHECK(left <= 0, "no pool instance is left after wd_pool_free (%d)", left);
	CHECK(count_fds() == fds0, "no descriptor is left (%d before, %d after)", fds0,
	      count_fds());
	char cmdline[400];
	snprintf(cmdline, sizeof(cmdline), "rm -rf %s", base);
	if (system(cmdline) != 0)
		printf("# could not remove %s\n", base);
	free(ids);
	printf(failures ? "# %d failure(s)\n" : "# all passed\n", failures);
	return failures ? 1 : 0;
}
