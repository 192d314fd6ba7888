/* policy_bench: decisions per second on one core.
 *
 *   pure        string commands: tokenize + program rules, no path syscalls
 *   paths       commands with path arguments (one openat2 per path)
 *   stage       the whole policy stage of `warden run`: load the built-in
 *               policy, open the workspace, decide, free
 *   run         (with a warden binary as argv[1]) `warden run -- /bin/true`,
 *               to put the stage in proportion (target: stage < 5% of run)
 *
 * Target: over 1,000,000 pure decisions per second.
 * Usage: policy_bench [WARDEN_BINARY]; exits 1 if the pure target is missed.
 */
#include "policy/policy.h"

#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const pure_cmds[] = {
    "git status",
    "pytest tests/ -q",
    "git log --oneline -n 5",
    "ls -la",
    "git status && git push origin main",
    "rm -rf /tmp/build",
    "curl https://get.example.io/install.sh | sh",
    "python3 -m pytest -k 'not slow'",
    "git push origin main",
    "find . -name '*.py' -type f",
};

static const char *const path_cmds[] = {
    "cat tests/test_a.py", "cat ../../../etc/passwd",
    "cat link-out/secret", "head -n 5 sub/../tests/test_a.py",
    "cat new/output.txt",
};

static void
die(const char *what)
{
	perror(what);
	exit(2);
}

/* A small workspace for the path commands. */
static void
make_workspace(char *dir, int *fd)
{
	char p[512];
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(p, sizeof(p), "%s/tests", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sub", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/tests/test_a.py", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		die(p);
	fputs("def test_a(): pass\n", f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/link-out", dir);
	if (symlink("/etc", p) < 0)
		die("symlink");
	*fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		die(dir);
}

static double
bench_decide(const struct config_policy *p, const char *const *cmds, size_t ncmds, int wfd,
	     const char *ws, double seconds, unsigned long *count)
{
	struct policy_decision d;
	policy_decision_init(&d);
	struct policy_request r = {.workspace_fd = wfd, .workspace = ws};
	unsigned long n = 0;
	unsigned sink = 0;
	double t0 = now_s(), t;
	do {
		for (int k = 0; k < 1000; k++) {
			r.command = cmds[n % ncmds];
			if (policy_decide(p, &r, &d, NULL) < 0)
				abort();
			sink += (unsigned)d.kind;
			n++;
		}
		t = now_s() - t0;
	} while (t < seconds);
	policy_decision_fini(&d);
	*count = n + (sink & 0); /* keep the loop */
	return (double)n / t;
}

static double
bench_stage(const char *ws, double seconds)
{
	unsigned long n = 0;
	double t0 = now_s(), t;
	do {
		wd_policy *pol = NULL;
		wd_request *req = wd_request_new();
		wd_decision *d = NULL;
		if (wd_policy_load(NULL, &pol, NULL) < 0 ||
		    wd_request_set_command(req, "pytest tests/ -q", NULL) < 0 ||
		    wd_request_set_workspace(req, ws, NULL) < 0 ||
		    wd_policy_decide(pol, req, &d, NULL) < 0)
			abort();
		wd_decision_free(d);
		wd_request_free(req);
		wd_policy_free(pol);
		n++;
		t = now_s() - t0;
	} while (t < seconds);
	return t / (double)n;
}

static double
bench_run(const char *warden, const char *ws, int runs)
{
	double t0 = now_s();
	for (int i = 0; i < runs; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			int null = open("/dev/null", O_WRONLY);
			dup2(null, 1);
			dup2(null, 2);
			execl(warden, warden, "run", "-w", ws, "--", "/bin/true", (char *)NULL);
			_exit(127);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return -1;
	}
	return (now_s() - t0) / runs;
}

int
main(int argc, char **argv)
{
	/* One core: the target is per core. */
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);

	struct config_policy *p = NULL;
	struct wd_err e = {0};
	if (config_load_default(&p, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 2;
	}
	char ws[] = "/tmp/wd-bench-XXXXXX";
	int wfd;
	make_workspace(ws, &wfd);

	unsigned long n;
	double pure = bench_decide(p, pure_cmds, WD_ARRAY_SIZE(pure_cmds), -1, ws, 1.0, &n);
	printf(
	    "policy.decide.pure   %12.0f decisions/s  (%lu decisions; tokenize + program rules)\n",
	    pure, n);
	double paths = bench_decide(p, path_cmds, WD_ARRAY_SIZE(path_cmds), wfd, ws, 1.0, &n);
	printf("policy.decide.paths  %12.0f decisions/s  (%lu decisions; one openat2 per path)\n",
	       paths, n);
	printf("summary\tpolicy_decisions_per_s\t%.0f\n", pure);
	double stage = bench_stage(ws, 0.5);
	printf("policy.stage         %12.1f us/decision (load built-in policy, open workspace, "
	       "decide)\n",
	       stage * 1e6);
	if (argc > 1) {
		double run = bench_run(argv[1], ws, 20);
		if (run > 0) {
			printf("warden.run.true      %12.1f us/run; policy stage = %.2f%% of it "
			       "(target < 5%%)\n",
			       run * 1e6, 100.0 * stage / run);
			printf("summary\tpolicy_stage_share\t%.4f\n", stage / run);
		} else
			printf("warden.run.true      not measured: `%s run -- /bin/true` failed\n",
			       argv[1]);
	}
	config_policy_free(p);
	close(wfd);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", ws);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", ws);
	if (pure < 1e6) {
		printf("FAIL: pure decisions below 1,000,000/s\n");
		return 1;
	}
	return 0;
}
