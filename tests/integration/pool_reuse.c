/*
 * pool_reuse: a pooled instance is never handed out twice.
 *
 *   pool_reuse [RUNS [LEVEL]]   (default 1000, container; or gvisor)
 *   pool_reuse probe LEVEL WORKSPACE PROBE [ARG...]
 *                            one command (PROBE, bound read-only at
 *                            /opt/wd-probe, with ARGs) in a sandbox of a
 *                            pool at LEVEL; its stdout and stderr printed,
 *                            its status the exit status (gvisor_pool.sh)
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
 *
 * At the gvisor level (the workspace mounted in the gofer's namespace and
 * bound onto /workspace by the resident executor) also: the staging
 * directory is empty in every run (the workspace has one path), the
 * executor holds no CAP_SYS_ADMIN once the command runs, and after the
 * pool is freed no sandbox's runsc process, bundle directory, cgroup or
 * mount is left.
 */
#include "warden.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
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

/* The parent of pid (from /proc/PID/stat), or -1. */
static pid_t
parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return -1;
	buf[got] = '\0';
	/* "PID (COMM) STATE PPID ...": comm may hold anything, so after
	 * its last ')' */
	char *r = strrchr(buf, ')');
	int ppid = -1;
	char state;
	if (!r || sscanf(r + 1, " %c %d", &state, &ppid) != 2)
		return -1;
	return (pid_t)ppid;
}

/* This process's own pid 1s: the processes whose comm is warden-init and
 * that descend from this one (a pool's pid 1 is cloned from the process
 * that builds it, and stays its child until reaped).  Only ours: a
 * session or pool anyone else runs beside this test has pid 1s too, and
 * counting them host-wide made the count before and after differ by
 * whatever they did meanwhile. */
static int
count_init(void)
{
	int n = 0;
	pid_t self = getpid();
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[300], comm[32] = "";
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		bool init = fgets(comm, sizeof(comm), f) && !strcmp(comm, "warden-init\n");
		fclose(f);
		pid_t p = (pid_t)atoi(e->d_name);
		for (int depth = 0; init && depth < 64 && p > 1; depth++) {
			p = parent_of(p);
			if (p == self) {
				n++;
				break;
			}
		}
	}
	if (d)
		closedir(d);
	return n;
}

/* Lines of path (a /proc file, the mount table) that contain needle. */
static int
lines_with(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int n = 0;
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* What is left of gVisor sandbox id on the host: a process whose command
 * line names its runsc state, its bundle directory, a cgroup of it in any
 * hierarchy, a mount naming it.  0 when nothing. */
static int
gvisor_left(const char *id)
{
	char want[128];
	snprintf(want, sizeof(want), "--root=/run/warden/gvisor/%s/", id);
	int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[300], buf[8192];
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t got = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		for (ssize_t i = 0; i < got; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[got > 0 ? got : 0] = '\0';
		if (strstr(buf, want)) {
			printf("# left: process %s: %s\n", e->d_name, buf);
			n++;
		}
	}
	if (d)
		closedir(d);
	char path[300];
	struct stat st;
	snprintf(path, sizeof(path), "/run/warden/gvisor/%s", id);
	if (stat(path, &st) == 0) {
		printf("# left: %s\n", path);
		n++;
	}
	static const char *const hier[] = {"memory",  "pids",	 "cpu,cpuacct",
					   "freezer", "unified", ""};
	for (size_t i = 0; i < sizeof(hier) / sizeof(hier[0]); i++) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s%swarden/%s", hier[i],
			 hier[i][0] ? "/" : "", id);
		if (stat(path, &st) == 0) {
			printf("# left: %s\n", path);
			n++;
		}
	}
	n += lines_with("/proc/self/mountinfo", id);
	return n;
}

/* pool_reuse probe LEVEL WORKSPACE PROBE [ARG...] */
static int
probe_run(int argc, char **argv)
{
	enum wd_isolation level;
	struct wd_err e = {0};
	if (argc < 5 || wd_isolation_parse(argv[2], &level) < 0) {
		fprintf(stderr, "usage: pool_reuse probe LEVEL WORKSPACE PROBE [ARG...]\n");
		return 2;
	}
	wd_ctx *ctx = NULL;
	wd_spec *tmpl = wd_spec_new();
	wd_pool *pool = NULL;
	wd_spec_set_isolation(tmpl, level);
	if (wd_ctx_new(&ctx, &e) < 0 ||
	    wd_spec_add_bind(tmpl, argv[4], "/opt/wd-probe", false, &e) < 0 ||
	    wd_pool_new(ctx, tmpl, 1, &pool, &e) < 0) {
		fprintf(stderr, "pool_reuse probe: %s\n", e.msg);
		return 125;
	}
	static char where[] = "/opt/wd-probe";
	argv[4] = where;
	wd_cmd *cmd = wd_cmd_new();
	wd_result *r = NULL;
	int rc = wd_cmd_set_argv(cmd, argc - 4, (const char *const *)(argv + 4), &e);
	if (rc == 0)
		rc = wd_pool_run(pool, argv[3], cmd, &r, &e);
	if (rc < 0) {
		fprintf(stderr, "pool_reuse probe: %s\n", e.msg);
		rc = 125;
	} else {
		size_t n;
		const char *o = wd_result_output(r, 1, &n);
		fwrite(o, 1, n, stdout);
		o = wd_result_output(r, 2, &n);
		fwrite(o, 1, n, stderr);
		char *j = wd_result_json(r);
		fprintf(stderr, "result: %s\n", j ? j : "");
		free(j);
		rc = wd_result_status(r);
	}
	wd_result_free(r);
	wd_cmd_free(cmd);
	wd_pool_free(pool);
	wd_spec_free(tmpl);
	wd_ctx_free(ctx);
	return rc;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "probe"))
		return probe_run(argc, argv);
	int runs = argc > 1 ? atoi(argv[1]) : 1000;
	bool gvisor = argc > 2 && !strcmp(argv[2], "gvisor");
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
	if (gvisor) {
		/* a host without runsc: skipped, but not where CI says it has it */
		wd_spec_set_isolation(tmpl, WD_ISOLATION_GVISOR);
		unsigned ok_levels = 0;
		free(wd_doctor(false, &ok_levels));
		if (!(ok_levels & (1u << WD_ISOLATION_GVISOR))) {
			const char *must = getenv("WD_MUST_WORK");
			printf("%s: --isolation gvisor is not available here\n",
			       must && !strcmp(must, "1") ? "not ok - WD_MUST_WORK=1" : "SKIP");
			return must && !strcmp(must, "1") ? 1 : 77;
		}
	}
	wd_pool *pool = NULL;
	if (wd_pool_new(ctx, tmpl, gvisor ? 2 : 4, &pool, &e) < 0) {
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
	if (gvisor) {
		/* a command with stdin: runsc exec's path, which a pooled gVisor
		 * sandbox never takes; refused, and the canary never made */
		char ws[300], canary[340];
		snprintf(ws, sizeof(ws), "%s/stdin", base);
		mkdir(ws, 0755);
		snprintf(canary, sizeof(canary), "%s/ran", ws);
		wd_cmd *sc = wd_cmd_new();
		const char *a[] = {"/bin/sh", "-c", "echo x > /workspace/ran", NULL};
		wd_cmd_set_argv(sc, 3, a, &e);
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		wd_cmd_set_stdin(sc, in);
		wd_result *sr = NULL;
		rc = wd_pool_run(pool, ws, sc, &sr, &e);
		struct stat cs;
		CHECK(rc == -ENOTSUP && !sr && stat(canary, &cs) < 0,
		      "gvisor: a command with stdin is refused by the pool, nothing ran (%d: %s)",
		      rc, e.msg);
		wd_result_free(sr);
		wd_cmd_free(sc);
		close(in);
	}

	/* the control: the same script twice in one live sandbox (which is
	 * reused by design) must find what the first run planted, or the
	 * checks below could not fail */
	{
		char ws[300];
		snprintf(ws, sizeof(ws), "%s/control", base);
		mkdir(ws, 0755);
		wd_spec *cs = wd_spec_new();
		wd_spec_set_workspace(cs, ws, &e);
		if (gvisor)
			wd_spec_set_isolation(cs, WD_ISOLATION_GVISOR);
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
	int found_file = 0, found_proc = 0, wrong_ws = 0, failed = 0, stage = 0, admin = 0,
	    hook = 0, made = 0;
	uint64_t t0 = 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (int i = 0; i < runs; i++) {
		/* each run its own workspace, named after it */
		char ws[300], mark[340];
		snprintf(ws, sizeof(ws), "%s/ws%d", base, i % 8);
		mkdir(ws, 0755);
		if (gvisor) {
			/* a protected path: attach makes it read-only in the
			 * gofer's namespace (the container level's pid 1 does it
			 * in its own) */
			char hooks[340];
			snprintf(hooks, sizeof(hooks), "%s/.git", ws);
			mkdir(hooks, 0755);
			snprintf(hooks, sizeof(hooks), "%s/.git/hooks", ws);
			mkdir(hooks,
			      0755); /* the owner's: the sandbox user's but for the protection */
		}
		snprintf(mark, sizeof(mark), "%s/run-marker", ws);
		FILE *f = fopen(mark, "w");
		if (f) {
			fprintf(f, "%d\n", i);
			fclose(f);
		}
		char script[1024];
		/* gvisor: the staging directory holds nothing (the workspace
		 * has one path), and the executor's (pid 1's) effective set
		 * has no CAP_SYS_ADMIN (bit 21) by the time a command runs */
		snprintf(script, sizeof(script),
			 "test -e /tmp/planted-by-a-run && echo FOUND-FILE; "
			 "for c in /proc/[0-9]*/comm; do read n < $c 2>/dev/null; "
			 "[ \"$n\" = sleep ] && echo FOUND-PROC; done; "
			 "read m < /workspace/run-marker; echo marker=$m; %s"
			 "echo planted > /tmp/planted-by-a-run; " PLANT,
			 gvisor ? "echo x > /workspace/.git/hooks/post-checkout 2>/dev/null && "
				  "echo FOUND-HOOK; echo $$ > /workspace/made-by-run; "
				  "for f in /.warden-stage/* /.warden-stage/.??*; do "
				  "[ -e \"$f\" ] && echo FOUND-STAGE $f; done; "
				  "while read k v; do [ \"$k\" = CapEff: ] && "
				  "[ $(( (0x$v >> 21) & 1 )) = 1 ] && echo FOUND-ADMIN; "
				  "[ \"$k\" = CapEff: ] && echo capeff=$v; done < /proc/1/status; "
				: "");
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
		stage += memmem(out, n, "FOUND-STAGE", 11) != NULL;
		if (gvisor) {
			/* on the host: the hook not written, the run's file there */
			char path[340];
			struct stat hs;
			snprintf(path, sizeof(path), "%s/.git/hooks/post-checkout", ws);
			hook += memmem(out, n, "FOUND-HOOK", 10) != NULL || stat(path, &hs) == 0;
			snprintf(path, sizeof(path), "%s/made-by-run", ws);
			made += stat(path, &hs) == 0 && unlink(path) == 0;
		}
		admin +=
		    gvisor && (memmem(out, n, "FOUND-ADMIN", 11) || !memmem(out, n, "capeff=", 7));
		if (i == 0 && gvisor)
			printf("# first run's output: %.*s\n", (int)n, out);
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
	if (gvisor) {
		CHECK(stage == 0, "the staging directory was empty in every run (%d not)", stage);
		CHECK(hook == 0, "no run wrote the protected .git/hooks (%d did)", hook);
		CHECK(made == runs - failed,
		      "every run's file reached its workspace on the host (%d)", made);
		CHECK(admin == 0,
		      "the executor held no CAP_SYS_ADMIN when a command ran (%d runs it did, "
		      "or its CapEff was not read)",
		      admin);
	}
	qsort(ids, (size_t)runs, sizeof(*ids), cmp);
	int dup = 0;
	for (int i = 1; i < runs; i++)
		dup += ids[i][0] && !strcmp(ids[i], ids[i - 1]);
	CHECK(dup == 0, "%d distinct sandbox ids (%d repeated)", runs, dup);
	struct wd_pool_stats st;
	wd_pool_stats(pool, &st);
	/* gvisor: the refused stdin command's instance too (taken, then
	 * destroyed unused: never handed out again) */
	CHECK(st.taken == (uint64_t)runs + gvisor, "the pool handed out %llu instances for %d runs",
	      (unsigned long long)st.taken, runs + gvisor);
	CHECK(st.built >= st.taken,
	      "built %llu >= taken %llu (%llu callers waited, %.2f ms per build)",
	      (unsigned long long)st.built, (unsigned long long)st.taken,
	      (unsigned long long)st.waited, st.built ? st.build_ns / 1e6 / (double)st.built : 0);
	if (!gvisor) {
		/* the count below sees this pool's pid 1s (the vacant
		 * instances it keeps), or it could not fail */
		int live = 0;
		for (int i = 0; i < 200 && (live = count_init() - init0) <= 0; i++)
			usleep(100000);
		CHECK(live > 0, "the pool's own pid 1s are counted while it lives (%d)", live);
	}
	wd_pool_free(pool);
	wd_spec_free(tmpl);
	wd_ctx_free(ctx);
	/* the last pid 1s go a moment after their destroy */
	int left = 0;
	for (int i = 0; i < 100 && (left = count_init() - init0) > 0; i++)
		usleep(100000);
	CHECK(left <= 0, "no pool instance is left after wd_pool_free (%d)", left);
	if (gvisor) {
		int gone = 0;
		for (int i = 0; i < runs; i++)
			gone += ids[i][0] && gvisor_left(ids[i]) == 0;
		CHECK(gone == runs - failed,
		      "no runsc process, bundle, cgroup or mount of the %d sandboxes is left (%d "
		      "clean)",
		      runs, gone);
	}
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
