/*
 * install_consumer: a program built the way an embedder builds one, against
 * the installed tree only (`cc consumer.c $(pkg-config --cflags --libs
 * warden)`; install.sh does that): a context, a sandbox that lives across
 * two commands, its destruction, and one-shot runs with and without the
 * policy stage, all through the public API of libwarden.so.
 *
 *   install_consumer WORKSPACE
 *
 * Prints "ok - ..." / "not ok - ..." lines; exits 0, 1 on any failure, or
 * 77 when the host cannot create the sandbox (install.sh turns that into a
 * failure under WD_MUST_WORK=1).
 */
#include <warden.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

static void
check(int ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failures++;
}

/* The sandbox lifecycle events, as the context's stream reports them. */
struct seen {
	char created[17], destroyed[17];
	int decisions, results;
};

static void
on_event(const wd_event *ev, void *data)
{
	struct seen *s = data;
	const char *name = wd_event_name(ev);
	if (!strcmp(name, "sandbox.created"))
		snprintf(s->created, sizeof(s->created), "%s", wd_event_sandbox_id(ev));
	else if (!strcmp(name, "sandbox.destroyed"))
		snprintf(s->destroyed, sizeof(s->destroyed), "%s", wd_event_sandbox_id(ev));
	else if (wd_event_kind(ev) == WD_EVENT_DECISION)
		s->decisions++;
	else if (wd_event_kind(ev) == WD_EVENT_RESULT)
		s->results++;
}

/* stdout of r is exactly want. */
static int
out_is(const wd_result *r, const char *want)
{
	size_t len = 0;
	const char *out = wd_result_output(r, 1, &len);
	return len == strlen(want) && !memcmp(out, want, len);
}

static wd_cmd *
argv_cmd(int argc, const char *const argv[])
{
	struct wd_err err = {0};
	wd_cmd *cmd = wd_cmd_new();
	if (wd_cmd_set_argv(cmd, argc, argv, &err) < 0) {
		printf("# wd_cmd_set_argv: %s\n", err.msg);
		exit(1);
	}
	return cmd;
}

/* Run one command in sb; NULL (and a "not ok") when warden failed. */
static wd_result *
exec_in(wd_sandbox *sb, int argc, const char *const argv[])
{
	struct wd_err err = {0};
	wd_result *r = NULL;
	wd_cmd *cmd = argv_cmd(argc, argv);
	if (wd_sandbox_exec(sb, cmd, &r, &err) < 0) {
		printf("# wd_sandbox_exec: %s\n", err.msg);
		r = NULL;
	}
	wd_cmd_free(cmd);
	return r;
}

/* The sandbox: two commands, the second sees what the first wrote. */
static int
live_sandbox(wd_ctx *ctx, const char *ws, struct seen *seen)
{
	struct wd_err err = {0};
	wd_spec *spec = wd_spec_new();
	wd_sandbox *sb = NULL;
	if (wd_spec_set_workspace(spec, ws, &err) < 0) {
		printf("# wd_spec_set_workspace: %s\n", err.msg);
		return 1;
	}
	if (wd_sandbox_create(ctx, spec, &sb, &err) < 0) {
		printf("# wd_sandbox_create: %s (code %d, errno %d, step %d)\n", err.msg, err.code,
		       err.sys_errno, err.step);
		wd_spec_free(spec);
		/* no user namespaces, no seccomp: this host cannot run it */
		if (err.code == WD_E_UNSUPPORTED || err.sys_errno == EPERM ||
		    err.sys_errno == EACCES || err.sys_errno == ENOSPC)
			return 77;
		return 1;
	}
	wd_spec_free(spec);
	check(strlen(wd_sandbox_id(sb)) == 16, "wd_sandbox_create: a sandbox with a 16-digit id");

	const char *const write[] = {"/bin/sh", "-c",
				     "echo kept > /tmp/note && echo shared > /workspace/note"};
	wd_result *r = exec_in(sb, 3, write);
	check(r && wd_result_outcome(r) == WD_OUTCOME_RAN && wd_result_status(r) == 0,
	      "first wd_sandbox_exec writes /tmp/note and /workspace/note");
	check(r && !strcmp(wd_result_sandbox_id(r), wd_sandbox_id(sb)),
	      "its result carries the sandbox's id");
	check(r && !strcmp(wd_result_policy(r), "off") && !wd_result_decision(r),
	      "an explicit argv runs without the policy stage (\"off\")");
	wd_result_free(r);

	const char *const read[] = {"/bin/cat", "/tmp/note", "/workspace/note"};
	r = exec_in(sb, 3, read);
	check(r && wd_result_status(r) == 0 && out_is(r, "kept\nshared\n"),
	      "second wd_sandbox_exec reads both files: the sandbox lived across the calls");
	wd_result_free(r);

	char host[4096];
	snprintf(host, sizeof(host), "%s/note", ws);
	check(access(host, F_OK) == 0, "the workspace file is on the host");
	snprintf(seen->destroyed, sizeof(seen->destroyed), "%s", "");
	char id[17];
	snprintf(id, sizeof(id), "%s", wd_sandbox_id(sb));
	wd_sandbox_destroy(sb);
	check(!strcmp(seen->created, id) && !strcmp(seen->destroyed, id),
	      "sandbox.created and sandbox.destroyed events with the sandbox's id");
	return 0;
}

/* One-shot runs: a fresh sandbox each (its /tmp is new), with and without
 * the policy stage. */
static void
one_shots(wd_ctx *ctx, const char *ws)
{
	struct wd_err err = {0};
	wd_spec *spec = wd_spec_new();
	wd_result *r = NULL;
	if (wd_spec_set_workspace(spec, ws, &err) < 0) {
		check(0, err.msg);
		return;
	}

	const char *const cat[] = {"/bin/cat", "/workspace/note", "/tmp/note"};
	wd_cmd *cmd = argv_cmd(3, cat);
	int rc = wd_ctx_run(ctx, spec, cmd, &r, &err);
	check(rc == 0 && r, "wd_ctx_run of a one-shot");
	if (rc == 0) {
		size_t len = 0;
		const char *e = wd_result_output(r, 2, &len);
		check(wd_result_status(r) == 1 && out_is(r, "shared\n") && len &&
			  strstr(e, "/tmp/note"),
		      "the one-shot sees the workspace but a /tmp of its own (status 1)");
		char *json = wd_result_json(r);
		check(json && strstr(json, "\"policy\":\"off\"") && strstr(json, "\"protections\""),
		      "wd_result_json: policy off, protections");
		free(json);
		wd_result_free(r);
	} else {
		printf("# wd_ctx_run: %s\n", err.msg);
	}
	wd_cmd_free(cmd);

	/* A command string always goes through the policy (built-in default). */
	cmd = wd_cmd_new();
	r = NULL;
	if (wd_cmd_set_command(cmd, "cat note", &err) == 0 &&
	    wd_ctx_run(ctx, spec, cmd, &r, &err) == 0) {
		const wd_decision *d = wd_result_decision(r);
		check(
		    wd_result_outcome(r) == WD_OUTCOME_RAN && wd_result_status(r) == 0 &&
			out_is(r, "shared\n") && d && wd_decision_kind(d) == WD_DECISION_ALLOW &&
			strlen(wd_result_policy(r)) == 64,
		    "a command string: allowed by the built-in policy, ran, digest in the result");
		wd_result_free(r);
	} else {
		check(0, err.msg);
	}
	r = NULL;
	if (wd_cmd_set_command(cmd, "cat /etc/passwd", &err) == 0 &&
	    wd_ctx_run(ctx, spec, cmd, &r, &err) == 0) {
		check(wd_result_outcome(r) == WD_OUTCOME_DENIED && wd_result_status(r) == 126 &&
			  wd_result_refusal(r) && strstr(wd_result_refusal(r), "outside"),
		      "a path outside the workspace: denied, status 126, the reason says why");
		wd_result_free(r);
	} else {
		check(0, err.msg);
	}
	wd_cmd_free(cmd);
	wd_spec_free(spec);
}

int
main(int argc, char **argv)
{
	struct wd_err err = {0};
	struct seen seen = {{0}, {0}, 0, 0};
	wd_ctx *ctx = NULL;

	if (argc != 2) {
		fprintf(stderr, "usage: install_consumer WORKSPACE\n");
		return 2;
	}
	if (wd_ctx_new(&ctx, &err) < 0) {
		printf("not ok - wd_ctx_new: %s\n", err.msg);
		return 1;
	}
	wd_ctx_set_event_handler(ctx, on_event, &seen, WD_EVENTS_ALL);
	int rc = live_sandbox(ctx, argv[1], &seen);
	if (rc) {
		wd_ctx_free(ctx);
		return rc;
	}
	one_shots(ctx, argv[1]);
	/* a denial is a decision, never a result: nothing ran */
	check(seen.decisions == 2 && seen.results == 4,
	      "events: a decision per command string (2), a result per command that ran (4)");
	wd_ctx_free(ctx);
	return failures ? 1 : 0;
}
