/*
 * gvisor_session: a live gVisor sandbox through the public API:
 * wd_sandbox_create (runsc create + start), many wd_sandbox_exec (runsc
 * exec), concurrently from threads, each with its own timeout that ends
 * the command's process group and not the sandbox, state kept between
 * commands, cancellation, and nothing left after wd_sandbox_destroy.
 *
 *   gvisor_session SCRATCH-DIR
 *
 * Prints "ok ..." / "not ok ..." lines; exits 1 on any failure, 77 when
 * the host cannot run gVisor (runsc missing: scripts/deps.sh installs it).
 */
#include "warden.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void
check(int ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failures++;
}

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Run sh -c SCRIPT in sb; the result (NULL when warden failed). */
static wd_result *
sh(wd_sandbox *sb, const char *script, uint64_t timeout_ms)
{
	wd_cmd *c = wd_cmd_new();
	struct wd_err e = {0};
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	wd_result *r = NULL;
	wd_cmd_set_argv(c, 3, argv, &e);
	if (timeout_ms)
		wd_cmd_set_timeout(c, timeout_ms);
	if (wd_sandbox_exec(sb, c, &r, &e) < 0) {
		printf("# exec '%s': %s\n", script, e.msg);
		r = NULL;
	}
	wd_cmd_free(c);
	return r;
}

static int
out_is(const wd_result *r, const char *want)
{
	size_t n;
	const char *o = r ? wd_result_output(r, 1, &n) : "";
	if (!r)
		return 0;
	if (n == strlen(want) && !memcmp(o, want, n))
		return 1;
	printf("# stdout %.*s (want %s)\n", (int)n, o, want);
	return 0;
}

struct job {
	wd_sandbox *sb;
	int i;
	int ok;
};

static void *
parallel(void *arg)
{
	struct job *j = arg;
	char script[128], want[64];
	snprintf(script, sizeof(script), "sleep 0.3; echo job %d", j->i);
	snprintf(want, sizeof(want), "job %d\n", j->i);
	wd_result *r = sh(j->sb, script, 0);
	j->ok = r && wd_result_status(r) == 0 && out_is(r, want);
	wd_result_free(r);
	return NULL;
}

/* No sandbox directory in path (runsc.version, the version cache, stays). */
static int
dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;
	if (!d)
		return 1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strncmp(de->d_name, "runsc.version", 13) != 0)
			n++;
	closedir(d);
	return n == 0;
}

static wd_sandbox *canceled;

static void *
cancel_later(void *arg)
{
	(void)arg;
	usleep(500 * 1000);
	wd_sandbox_cancel(canceled, SIGTERM);
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gvisor_session SCRATCH-DIR\n");
		return 2;
	}
	if (access("/usr/bin/runsc", X_OK) != 0 && !getenv("WARDEN_RUNSC")) {
		printf("SKIP: runsc is not installed\n");
		return getenv("WD_MUST_WORK") && !strcmp(getenv("WD_MUST_WORK"), "1") ? 1 : 77;
	}
	char ws[4096];
	snprintf(ws, sizeof(ws), "%s/gvisor-session-ws", argv[1]);
	mkdir(ws, 0755);

	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0) {
		printf("not ok - wd_ctx_new: %s\n", e.msg);
		return 1;
	}
	wd_spec *spec = wd_spec_new();
	wd_spec_set_isolation(spec, WD_ISOLATION_GVISOR);
	wd_spec_set_workspace(spec, ws, &e);
	wd_sandbox *sb = NULL;
	double t0 = now_ms();
	int rc = wd_sandbox_create(ctx, spec, &sb, &e);
	double created = now_ms() - t0;
	if (rc < 0) {
		printf("not ok - wd_sandbox_create at gvisor: %s\n", e.msg);
		return 1;
	}
	printf("# created in %.0f ms\n", created);
	check(1, "wd_sandbox_create at gvisor");

	wd_result *r =
	    sh(sb, "echo kept > /tmp/state; cd /workspace && echo file > made; id -u", 0);
	check(r && wd_result_status(r) == 0 && out_is(r, "1000\n"),
	      "first command runs as uid 1000");
	wd_result_free(r);
	r = sh(sb, "cat /tmp/state /workspace/made", 0);
	check(out_is(r, "kept\nfile\n"), "/tmp and the workspace persist between commands");
	wd_result_free(r);
	r = sh(sb, "exit 7", 0);
	check(r && wd_result_status(r) == 7, "a command's own status");
	wd_result_free(r);
	r = sh(sb, "no-such-program-here", 0);
	check(r && wd_result_status(r) == 127, "not found is 127");
	wd_result_free(r);

	/* A command's timeout ends its process group, not the sandbox. */
	t0 = now_ms();
	r = sh(sb, "sleep 30 & sleep 30 & echo started; wait", 1000);
	double took = now_ms() - t0;
	check(r && wd_result_status(r) == 124 && wd_result_timed_out(r),
	      "a command past its timeout: 124");
	check(took < 5000, "... ended at its deadline");
	check(out_is(r, "started\n"), "... its output up to then is kept");
	wd_result_free(r);
	r = sh(sb, "ps -e -o comm= | grep -c '^sleep$'", 0);
	/* none left: the idle init (warden-init) has no sleep of its own */
	check(out_is(r, "0\n"), "its background children went with it");
	wd_result_free(r);
	r = sh(sb, "cat /tmp/state", 0);
	check(out_is(r, "kept\n"), "the sandbox lives on after a command's timeout");
	wd_result_free(r);

	/* Concurrent commands from threads. */
	enum { N = 4 };
	pthread_t th[N];
	struct job jobs[N];
	t0 = now_ms();
	for (int i = 0; i < N; i++) {
		jobs[i] = (struct job){sb, i, 0};
		pthread_create(&th[i], NULL, parallel, &jobs[i]);
	}
	int all = 1;
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		all &= jobs[i].ok;
	}
	took = now_ms() - t0;
	check(all, "four commands at once from four threads");
	printf("# four concurrent 0.3 s commands took %.0f ms\n", took);

	/* An orphan left by a command is reaped by the init, not kept. */
	r = sh(sb, "sh -c 'sleep 0.1 &'; sleep 0.5; ps -e -o stat= | grep -c Z", 0);
	check(out_is(r, "0\n"), "orphans are reaped (no zombie)");
	wd_result_free(r);

	/* Cancellation: the command in progress ends as killed by the signal. */
	canceled = sb;
	pthread_t ct;
	pthread_create(&ct, NULL, cancel_later, NULL);
	r = sh(sb, "sleep 20", 0);
	pthread_join(ct, NULL);
	check(r && wd_result_status(r) == 128 + SIGTERM, "wd_sandbox_cancel: 128+15");
	wd_result_free(r);

	char dir[256];
	snprintf(dir, sizeof(dir), "/run/warden/gvisor/%s", wd_sandbox_id(sb));
	struct stat st;
	check(stat(dir, &st) == 0, "the sandbox's bundle exists while it lives");
	t0 = now_ms();
	wd_sandbox_destroy(sb);
	printf("# destroyed in %.0f ms\n", now_ms() - t0);
	check(stat(dir, &st) < 0, "wd_sandbox_destroy removes the bundle");
	check(dir_empty("/run/warden/gvisor"), "nothing of it left in /run/warden/gvisor");
	FILE *p = popen("pgrep -f -- '[-]-root=/run/warden/gvisor/' | wc -l", "r");
	int n = -1;
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	check(n == 0, "no runsc process left");

	/* The OOM killer in a session: the sentry goes with the command, which
	 * is reported as OOM-killed; the sandbox has ended. */
	struct wd_limits lim = {.memory_bytes = 64 << 20};
	wd_spec_set_limits(spec, &lim);
	if (wd_sandbox_create(ctx, spec, &sb, &e) < 0) {
		check(0, "a second sandbox with --memory 64M");
	} else {
		r = sh(sb, "python3 -c 'b = bytearray(400 << 20)'", 0);
		check(r && wd_result_status(r) == 137 && wd_result_oom_killed(r),
		      "a session command over the memory limit: 137, oom_killed");
		wd_result_free(r);
		wd_cmd *c = wd_cmd_new();
		const char *t[] = {"/bin/true", NULL};
		wd_cmd_set_argv(c, 1, t, &e);
		check(wd_sandbox_exec(sb, c, &r, &e) < 0 && strstr(e.msg, "ended"),
		      "... and the sandbox has ended");
		wd_cmd_free(c);
		wd_sandbox_destroy(sb);
	}

	wd_spec_free(spec);
	wd_ctx_free(ctx);
	char made[4200];
	snprintf(made, sizeof(made), "%s/made", ws);
	unlink(made);
	rmdir(ws);
	printf("%s\n", failures ? "# failures" : "# all passed");
	return failures ? 1 : 0;
}
