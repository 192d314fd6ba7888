/*
 * api_run: wd_run() through libwarden's public header only, as an embedder
 * (the JSON-RPC server, an agent harness) uses it: many runs in one
 * process, so a descriptor, child or memory leak per run shows up here
 * where the one-shot CLI would hide it.
 *
 *   api_run WORKSPACE-PARENT
 *
 * Prints "ok ..." / "not ok ..." lines; exits 1 on any failure, 77 when the
 * host cannot create the sandbox's namespaces.
 */
#include "warden.h"
#include "proc_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void
check(int ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failures++;
}

/* Run argv in ws; returns the result or NULL (err filled). */
static wd_result *
run(const char *ws, const struct wd_limits *lim, int argc, const char *const argv[],
    struct wd_err *err)
{
	wd_spec *spec = wd_spec_new();
	wd_result *r = NULL;

	if (wd_spec_set_argv(spec, argc, argv, err) < 0 || wd_spec_set_workspace(spec, ws, err) < 0)
		goto out;
	if (lim)
		wd_spec_set_limits(spec, lim);
	if (wd_run(spec, &r, err) < 0)
		r = NULL;
out:
	wd_spec_free(spec);
	return r;
}

int
main(int argc, char **argv)
{
	char ws[4096];
	struct wd_err err = {0};
	wd_result *r;
	size_t len;
	const char *out;

	if (argc != 2) {
		fprintf(stderr, "usage: api_run WORKSPACE-PARENT\n");
		return 2;
	}
	snprintf(ws, sizeof(ws), "%s/api-ws", argv[1]);
	if (mkdir(ws, 0755) < 0 && errno != EEXIST) {
		perror("mkdir");
		return 1;
	}

	/* 1. The basic run: status, windows, counts, JSON. */
	const char *const hello[] = {"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"};
	r = run(ws, NULL, 3, hello, &err);
	if (!r) {
		printf("# wd_run failed: %s (code %d, errno %d)\n", err.msg, err.code,
		       err.sys_errno);
		if (err.code == WD_E_UNSUPPORTED)
			return 77;
		return 1;
	}
	check(wd_result_status(r) == 3, "status 3");
	check(wd_result_exit_code(r) == 3 && wd_result_signal(r) == 0, "exit code 3, no signal");
	check(!wd_result_timed_out(r) && !wd_result_oom_killed(r), "not timed out, not OOM");
	out = wd_result_output(r, 1, &len);
	check(out && len == 6 && memcmp(out, "hello\n", 6) == 0, "stdout window");
	out = wd_result_output(r, 2, &len);
	check(out && len == 5 && memcmp(out, "oops\n", 5) == 0, "stderr window");
	check(wd_result_output_total(r, 1) == 6 && wd_result_output_omitted(r, 1) == 0,
	      "stdout counts");
	char *json = wd_result_json(r);
	check(json && strstr(json, "\"status\":3") && strstr(json, "\"protections\""),
	      "wd_result_json has status and protections");
	free(json);
	wd_result_free(r);

	/* 2. Limits through struct wd_limits: a timeout and an output window. */
	struct wd_limits lim = {.timeout_ms = 300, .output_limit = 1024};
	const char *const loop[] = {"/bin/sh", "-c", "seq 1 100000; while :; do :; done"};
	r = run(ws, &lim, 3, loop, &err);
	check(r != NULL, "a run with limits");
	if (r) {
		check(wd_result_status(r) == 124 && wd_result_timed_out(r), "timeout_ms 300: 124");
		out = wd_result_output(r, 1, &len);
		check(out && strstr(out, "bytes omitted") && len < 1024 + 256,
		      "output_limit 1024: a window with the marker");
		check(wd_result_output_total(r, 1) == 588895, "the total counts every byte");
		wd_result_free(r);
	}

	/* 3. Bad input comes back as an error, nothing runs. */
	wd_spec *spec = wd_spec_new();
	memset(&err, 0, sizeof(err));
	/* (WD_E_SYS with ENOENT today; WD_E_INVAL would say "bad input") */
	check(wd_spec_set_workspace(spec, "/nonexistent/wd-api", &err) < 0 && err.msg[0] &&
		  (err.code == WD_E_INVAL || (err.code == WD_E_SYS && err.sys_errno == ENOENT)),
	      "a missing workspace is refused with a message");
	const char *const none[] = {NULL};
	memset(&err, 0, sizeof(err));
	check(wd_spec_set_argv(spec, 0, none, &err) < 0, "an empty argv is refused");
	memset(&err, 0, sizeof(err));
	check(wd_run(spec, &r, &err) < 0, "wd_run without argv fails");
	wd_spec_free(spec);

	/* 4. 100 runs in one process: no descriptor, child or memory leak. */
	const char *const t[] = {"/bin/true"};
	int fds0 = proc_count_fds(), fails = 0;
	long rss0 = 0;

	for (int i = 0; i < 100; i++) {
		r = run(ws, NULL, 1, t, &err);
		if (!r || wd_result_status(r) != 0)
			fails++;
		wd_result_free(r);
		if (i == 9)
			rss0 = proc_rss_kb(); /* after the first runs' one-time allocations */
	}
	check(fails == 0, "100 runs of /bin/true in one process");
	check(proc_count_fds() == fds0, "no descriptor left open by 100 runs");
	long rss1 = proc_rss_kb();
	printf("# VmRSS after 10 runs %ld kB, after 100 %ld kB\n", rss0, rss1);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* sanitizers keep freed memory in quarantine: LeakSanitizer at exit
	 * is the leak check there */
	(void)rss1;
#else
	check(rss1 - rss0 < 2048, "RSS does not grow with runs (< 2 MiB over 90 runs)");
#endif
	/* Teardown is asynchronous (pid 1 reaped later): give it a moment. */
	int kids = -1;

	for (int i = 0; i < 50; i++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		kids = proc_count_children();
		if (kids == 0)
			break;
		usleep(100 * 1000);
	}
	printf("# children left: %d\n", kids);
	check(kids == 0, "no child process of the caller left after the runs");

	/* 5. A state directory an embedder sets (wd_ctx_set_state_dir) is
	 * the human's too (docs/threat-model.md, boundary 6): inside the
	 * workspace the sandbox could write sessions' layers and their
	 * monitor.sock, so a run there is refused before anything runs.
	 * Before, only $WARDEN_STATE_DIR was checked and /bin/true ran. */
	char sd[4200];
	snprintf(sd, sizeof(sd), "%s/.wd-state", ws);
	wd_ctx *ctx = NULL;
	memset(&err, 0, sizeof(err));
	if (wd_ctx_new(&ctx, &err) == 0 && wd_ctx_set_state_dir(ctx, sd, &err) == 0) {
		wd_spec *s5 = wd_spec_new();
		wd_cmd *c5 = wd_cmd_new();
		r = NULL;
		int rc5 = -1;
		if (wd_spec_set_workspace(s5, ws, &err) == 0 &&
		    wd_cmd_set_argv(c5, 1, t, &err) == 0)
			rc5 = wd_ctx_run(ctx, s5, c5, &r, &err);
		printf("# %s\n", err.msg);
		check(rc5 < 0 && err.code == WD_E_INVAL && strstr(err.msg, "state directory") &&
			  strstr(err.msg, "workspace"),
		      "wd_ctx_set_state_dir inside the workspace: the run is refused");
		wd_result_free(r);
		wd_cmd_free(c5);
		wd_spec_free(s5);
	} else {
		check(0, "wd_ctx_set_state_dir");
	}
	wd_ctx_free(ctx);

	return failures ? 1 : 0;
}
