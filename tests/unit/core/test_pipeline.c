/* test_pipeline.c - the one door (core/pipeline.c) with a fake backend
 * behind the seam (fake_backend.h): the policy and approval stages stop a
 * command before the isolation layer sees it, the stages run in their
 * order, the policy's limits reach the backend, and the one-shot and
 * live entry points hand the backend the same command. */
#include "fake_backend.h"
#include "warden.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[PATH_MAX], ws[PATH_MAX], state[PATH_MAX], audit[PATH_MAX], policy[PATH_MAX];

/* echo is allowed; git status runs, git push pauses for a human; the
 * sandbox object gives every command 7 s and 4 KiB of output */
static const char policy_text[] =
    "{\"version\":1,\n"
    " \"sandbox\":{\"timeout\":7,\"output\":\"4KiB\"},\n"
    " \"programs\":{\"echo\":{},\n"
    "   \"git\":{\"subcommands\":[\"status\",\"push\"],\n"
    "          \"approve\":[{\"match\":[\"push\"],\"reason\":\"publishes\"}]}}}\n";

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void
setup(void)
{
	char tmpl[] = "/tmp/wd-unit-core-XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, root));
	snprintf(ws, sizeof(ws), "%s/ws", root);
	snprintf(state, sizeof(state), "%s/state", root);
	snprintf(audit, sizeof(audit), "%s/audit.jsonl", root);
	snprintf(policy, sizeof(policy), "%s/policy.json", root);
	cr_assert_eq(mkdir(ws, 0755), 0);
	cr_assert_eq(mkdir(state, 0700), 0);
	write_file(policy, policy_text);
	fake_reset();
}

static void
teardown(void)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

static void
on_event(const wd_event *ev, void *data)
{
	(void)data;
	fake_note(wd_event_name(ev));
}

static wd_ctx *
new_ctx(void)
{
	struct wd_err e = {0};
	wd_ctx *ctx = NULL;
	cr_assert_eq(wd_ctx_new(&ctx, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_ctx_set_state_dir(ctx, state, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_ctx_set_policy_file(ctx, policy, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_ctx_set_audit_file(ctx, audit, &e), 0, "%s", e.msg);
	wd_ctx_set_event_handler(ctx, on_event, NULL,
				 WD_EVENTS_ALL & ~WD_EVENT_BIT(WD_EVENT_OUTPUT));
	return ctx;
}

static wd_spec *
new_spec(void)
{
	struct wd_err e = {0};
	wd_spec *spec = wd_spec_new();
	cr_assert_eq(wd_spec_set_workspace(spec, ws, &e), 0, "%s", e.msg);
	return spec;
}

static wd_cmd *
command(const char *text)
{
	struct wd_err e = {0};
	wd_cmd *cmd = wd_cmd_new();
	cr_assert_eq(wd_cmd_set_command(cmd, text, &e), 0, "%s", e.msg);
	return cmd;
}

/* The audit trail's "event" members, comma-separated, in order. */
static void
audit_events(char *out, size_t cap)
{
	out[0] = '\0';
	FILE *f = fopen(audit, "r");
	if (!f)
		return;
	char line[16384];
	while (fgets(line, sizeof(line), f)) {
		const char *k = strstr(line, "\"event\":\"");
		if (!k)
			continue;
		k += 9;
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%s%.*s", n ? "," : "", (int)strcspn(k, "\""), k);
	}
	fclose(f);
}

TestSuite(pipeline, .init = setup, .fini = teardown);

Test(pipeline, refused_program_never_reaches_the_backend)
{
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("rm -rf /");
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_result_outcome(r), WD_OUTCOME_DENIED);
	cr_assert_eq(wd_result_status(r), 126);
	cr_expect_eq(fake.prepare + fake.spawn + fake.exec, 0, "the backend saw: %s", fake.trace);
	/* a refusal's record is its decision (the result is the refusal) */
	cr_expect_str_eq(fake.trace, "decision");
	char ev[512];
	audit_events(ev, sizeof(ev));
	cr_expect_str_eq(ev, "decision");
	wd_result_free(r);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

Test(pipeline, shell_composition_never_reaches_the_backend)
{
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("echo hi; rm -rf /");
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_result_outcome(r), WD_OUTCOME_DENIED);
	cr_expect_eq(fake.prepare, 0, "the backend saw: %s", fake.trace);
	wd_result_free(r);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

Test(pipeline, paused_command_never_reaches_the_backend)
{
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("git push");
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_result_outcome(r), WD_OUTCOME_PAUSED);
	cr_assert_eq(wd_result_status(r), 123);
	const wd_decision *d = wd_result_decision(r);
	cr_assert_not_null(d);
	cr_expect_eq(wd_decision_kind(d), WD_DECISION_PAUSE);
	cr_expect_not_null(wd_decision_approval_id(d));
	cr_expect_eq(fake.prepare + fake.spawn + fake.exec, 0, "the backend saw: %s", fake.trace);
	cr_expect_str_eq(fake.trace, "decision");
	wd_result_free(r);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

static int
approve_once(const wd_decision *d, void *data)
{
	(void)d;
	int *asked = data;
	++*asked;
	fake_note("approver");
	return 1;
}

/* the approval stage sits between the decision and the sandbox: the
 * approver is asked before anything is built, and its yes lets it run */
Test(pipeline, approver_runs_before_isolation)
{
	wd_ctx *ctx = new_ctx();
	int asked = 0;
	wd_ctx_set_approver(ctx, approve_once, &asked);
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("git push");
	wd_cmd_set_interactive(cmd, true); /* the approver is asked only then */
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	cr_assert_eq(asked, 1);
	cr_assert_eq(wd_result_outcome(r), WD_OUTCOME_RAN, "%s", fake.trace);
	cr_expect_eq(fake.exec, 1);
	cr_expect_str_eq(fake.argv, "git push");
	const char *appr = strstr(fake.trace, "approver"), *prep = strstr(fake.trace, "prepare");
	cr_assert(appr && prep && appr < prep, "order: %s", fake.trace);
	cr_expect(strncmp(fake.trace, "decision,", 9) == 0, "order: %s", fake.trace);
	wd_result_free(r);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* policy -> isolation (prepare, spawn, exec) -> result event (audited)
 * -> teardown, each once, in that order; the exec request carries the
 * policy's timeout and output bound (what the backend's capture bounds) */
Test(pipeline, stages_in_order)
{
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("echo hello");
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_result_outcome(r), WD_OUTCOME_RAN);
	cr_expect_str_eq(
	    fake.trace,
	    "decision,prepare,spawn,sandbox.created,exec,result,destroy,sandbox.destroyed");
	cr_expect_eq(fake.exec, 1);
	cr_expect_str_eq(fake.argv, "echo hello");
	cr_expect_eq(fake.timeout_ms, 7000);
	cr_expect_eq(fake.output_limit, 4096);
	cr_expect_str_eq(fake.workspace, ws);
	/* the result carries the decision that let it run and the policy's digest */
	cr_expect_not_null(wd_result_decision(r));
	cr_expect_eq(strlen(wd_result_policy(r)), 64, "policy %s", wd_result_policy(r));
	char ev[512];
	audit_events(ev, sizeof(ev));
	cr_expect_str_eq(ev, "decision,result");
	wd_result_free(r);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* the caller's own limits win over the policy's */
Test(pipeline, caller_limits_win)
{
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("echo hello");
	wd_cmd_set_timeout(cmd, 1234);
	wd_cmd_set_output_limit(cmd, 99);
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	cr_expect_eq(fake.timeout_ms, 1234);
	cr_expect_eq(fake.output_limit, 99);
	wd_result_free(r);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* An explicit argv with no policy option is the caller's own: no policy
 * stage ("policy": "off"), straight to the backend. */
Test(pipeline, explicit_argv_skips_policy)
{
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = wd_cmd_new();
	struct wd_err e = {0};
	const char *argv[] = {"rm", "-rf", "/nothing"};
	cr_assert_eq(wd_cmd_set_argv(cmd, 3, argv, &e), 0);
	wd_result *r = NULL;
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	cr_expect_str_eq(wd_result_policy(r), "off");
	cr_expect_str_eq(fake.argv, "rm -rf /nothing");
	cr_expect_null(strstr(fake.trace, "decision"), "%s", fake.trace);
	/* ... and with wd_cmd_set_policy it is judged */
	wd_result_free(r);
	fake_reset();
	wd_cmd_set_policy(cmd, true);
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	cr_expect_eq(wd_result_outcome(r), WD_OUTCOME_DENIED);
	cr_expect_eq(fake.prepare, 0);
	wd_result_free(r);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* bad input is refused before anything is decided or built */
Test(pipeline, no_program)
{
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = wd_cmd_new();
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_lt(wd_ctx_run(ctx, spec, cmd, &r, &e), 0);
	cr_expect_null(r);
	cr_expect(strstr(e.msg, "no program") != NULL, "%s", e.msg);
	cr_expect_str_eq(fake.trace, "");
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* An audit log inside the workspace could be rewritten by the sandbox:
 * refused before the decision, nothing built. */
Test(pipeline, records_check_before_decision)
{
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char inside[PATH_MAX + 16];
	snprintf(inside, sizeof(inside), "%s/audit.jsonl", ws);
	cr_assert_eq(wd_ctx_new(&ctx, &e), 0);
	cr_assert_eq(wd_ctx_set_policy_file(ctx, policy, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_ctx_set_audit_file(ctx, inside, &e), 0, "%s", e.msg);
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("echo hi");
	wd_result *r = NULL;
	cr_assert_lt(wd_ctx_run(ctx, spec, cmd, &r, &e), 0);
	cr_expect(strstr(e.msg, "audit") != NULL, "%s", e.msg);
	cr_expect_eq(fake.prepare, 0);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* The one door: a live sandbox's exec (the server's sandbox.exec, the
 * CLI's exec path in-process) goes through the same stages as a one-shot
 * run, and the backend gets the same command with the same limits. */
Test(pipeline, live_and_oneshot_are_one_door)
{
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("echo same");
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	wd_result_free(r);
	struct fake_seen oneshot = fake;

	fake_reset();
	wd_sandbox *sb = NULL;
	cr_assert_eq(wd_sandbox_create(ctx, spec, &sb, &e), 0, "%s", e.msg);
	cr_expect_str_eq(fake.trace, "prepare,spawn,sandbox.created,ready,sandbox.ready");
	fake_reset();
	cr_assert_eq(wd_sandbox_exec(sb, cmd, &r, &e), 0, "%s", e.msg);
	cr_expect_eq(wd_result_outcome(r), WD_OUTCOME_RAN);
	cr_expect_str_eq(fake.trace, "decision,exec,result");
	cr_expect_str_eq(fake.argv, oneshot.argv);
	cr_expect_eq(fake.timeout_ms, oneshot.timeout_ms);
	cr_expect_eq(fake.output_limit, oneshot.output_limit);
	cr_expect_str_eq(fake.cwd, oneshot.cwd);
	wd_result_free(r);

	/* and a refusal stops there too */
	fake_reset();
	wd_cmd *bad = command("rm -rf /");
	cr_assert_eq(wd_sandbox_exec(sb, bad, &r, &e), 0, "%s", e.msg);
	cr_expect_eq(wd_result_outcome(r), WD_OUTCOME_DENIED);
	cr_expect_eq(fake.exec, 0);
	cr_expect_str_eq(fake.trace, "decision");
	wd_result_free(r);
	wd_cmd_free(bad);

	wd_sandbox_destroy(sb);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* sandbox.require: a protection the sandbox lacks fails closed after the
 * sandbox is built and before the command runs, and the audited decision
 * is followed by a failure result. */
Test(pipeline, require_fails_closed)
{
	write_file(policy, "{\"version\":1,\"sandbox\":{\"require\":[\"landlock\"]},"
			   "\"programs\":{\"echo\":{}}}\n");
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("echo hi");
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_lt(wd_ctx_run(ctx, spec, cmd, &r, &e), 0);
	cr_expect(strstr(e.msg, "landlock") != NULL, "%s", e.msg);
	cr_expect_eq(fake.exec, 0, "%s", fake.trace);
	cr_expect_eq(fake.destroy, 1, "%s", fake.trace);
	char ev[512];
	audit_events(ev, sizeof(ev));
	cr_expect_str_eq(ev, "decision,result");
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* The session placement: the policy stage runs in the caller, the command
 * in the session's monitor (fake-monitor: warden-monitor with the fake
 * backend), which writes what reached it to STATE_DIR/fake-trace.  The same
 * command gets the same judged argv and limits as a one-shot run; a
 * refusal never reaches the monitor's backend. */
static void
use_fake_monitor(char *trace, size_t cap)
{
	if (!getenv("WARDEN_MONITOR")) {
		/* run by hand: fake-monitor is built next to this program */
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 32);
		cr_assert_gt(n, 0);
		self[n] = '\0';
		strcpy(strrchr(self, '/'), "/fake-monitor");
		setenv("WARDEN_MONITOR", self, 1);
	}
	snprintf(trace, cap, "%s/fake-trace", state);
}

static void
read_trace(const char *path, char *out, size_t cap)
{
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	fclose(f);
}

Test(pipeline, session_is_the_same_door)
{
	char trace[PATH_MAX + 8], seen[4096];
	use_fake_monitor(trace, sizeof(trace));
	wd_ctx *ctx = new_ctx();
	wd_spec *spec = new_spec();
	/* the process level: a session there gets no disk (no loop device) */
	wd_spec_set_isolation(spec, WD_ISOLATION_PROCESS);
	wd_cmd *cmd = command("echo same");
	wd_result *r = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	wd_result_free(r);
	char oneshot[700];
	snprintf(oneshot, sizeof(oneshot), "exec-req %s|%llu|%llu|%s\n", fake.argv,
		 (unsigned long long)fake.timeout_ms, (unsigned long long)fake.output_limit,
		 fake.cwd);

	char id[17];
	struct wd_session_params p = {.name = "unit"};
	cr_assert_eq(wd_session_create(ctx, spec, &p, id, &e), 0, "%s", e.msg);
	read_trace(trace, seen, sizeof(seen));
	cr_expect_str_eq(seen, "prepare\nspawn\nready\n", "the monitor built: %s", seen);
	unlink(trace);

	cr_assert_eq(wd_session_exec(ctx, "unit", cmd, &r, &e), 0, "%s", e.msg);
	cr_expect_eq(wd_result_outcome(r), WD_OUTCOME_RAN);
	cr_expect_eq(strlen(wd_result_policy(r)), 64, "judged under the policy");
	wd_result_free(r);
	read_trace(trace, seen, sizeof(seen));
	cr_expect(strstr(seen, oneshot) != NULL, "the session's exec request differs:\n%s\nvs %s",
		  seen, oneshot);
	unlink(trace);

	wd_cmd *bad = command("rm -rf /");
	cr_assert_eq(wd_session_exec(ctx, "unit", bad, &r, &e), 0, "%s", e.msg);
	cr_expect_eq(wd_result_outcome(r), WD_OUTCOME_DENIED);
	wd_result_free(r);
	wd_cmd_free(bad);
	read_trace(trace, seen, sizeof(seen));
	cr_expect_str_eq(seen, "", "a refused command reached the monitor's backend: %s", seen);

	cr_expect_eq(wd_session_remove(ctx, "unit", &e), 0, "%s", e.msg);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
}

/* A policy the caller loaded (wd_ctx_set_policy) decides the commands, and
 * stays the caller's: the context never frees it, not even when it is
 * replaced (under ASan, a free by the context is a use after free below). */
Test(pipeline, borrowed_policy_decides_and_stays_the_callers)
{
	struct wd_err e = {0};
	wd_policy *p = NULL;
	cr_assert_eq(wd_policy_load(policy, &p, &e), 0, "%s", e.msg);
	wd_ctx *ctx = NULL;
	cr_assert_eq(wd_ctx_new(&ctx, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_ctx_set_state_dir(ctx, state, &e), 0, "%s", e.msg);
	cr_expect_eq(wd_ctx_set_policy(ctx, policy, NULL, &e), -EINVAL);
	cr_assert_eq(wd_ctx_set_policy(ctx, policy, p, &e), 0, "%s", e.msg);
	wd_spec *spec = new_spec();
	wd_cmd *cmd = command("git push");
	wd_result *r = NULL;
	cr_assert_eq(wd_ctx_run(ctx, spec, cmd, &r, &e), 0, "%s", e.msg);
	/* the file's rule: git push pauses (the built-in default refuses git) */
	cr_expect_eq(wd_result_outcome(r), WD_OUTCOME_PAUSED);
	wd_result_free(r);
	/* replaced by a file the context loads itself: p is still whole */
	cr_assert_eq(wd_ctx_set_policy_file(ctx, NULL, &e), 0, "%s", e.msg);
	cr_expect_eq(strlen(wd_policy_digest(p)), 64);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
	cr_expect_eq(strlen(wd_policy_digest(p)), 64);
	wd_policy_free(p);
}
