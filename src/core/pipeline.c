/* core/pipeline: one request from a front end to execve and back.
 *
 *   wd_ctx_run(ctx, spec, cmd)       (ephemeral: warden run)
 *     id <- a fresh sandbox id (the decision, the sandbox, its traffic and
 *           the result all carry it)
 *     policy stage when the command asks for it (gate.c)
 *       -> denied / paused: a result saying so, nothing started
 *     sandbox_new (plan, host build, proxy) -> sandbox_start (clone, maps,
 *     cgroup) -> sandbox_exec with SYNC_EXEC_LAST (pipelined behind the
 *     set-up) -> "result" event -> sandbox_free (reaped, cgroup removed)
 *
 *   wd_sandbox_exec(sb, cmd)         (a live sandbox: sandbox.c)
 *     the same policy stage and result event, then sandbox_exec. */
#include "core/core.h"
#include "policy/policy.h"
#include "workspace/workspace.h"

#include <string.h>

bool
cmd_needs_policy(const wd_cmd *cmd)
{
	/* Every command that arrives as a string, or for a tool, is judged;
	 * an explicit argv when the caller asks. */
	return cmd->command || cmd->tool || cmd->policy;
}

void
pipeline_exec_req(wd_ctx *ctx, const wd_cmd *cmd, char *const *argv, unsigned flags,
		  struct exec_req *x)
{
	memset(x, 0, sizeof(*x));
	x->argv = (const char *const *)argv;
	x->env = (const char *const *)cmd->env;
	x->cwd = cmd->cwd;
	x->timeout_ms = cmd->timeout_ms;
	x->output_limit = cmd->output_limit;
	x->stdin_fd = cmd->stdin_fd;
	x->stream_fd[0] = -1;
	x->stream_fd[1] = cmd->stream_fd[1];
	x->stream_fd[2] = cmd->stream_fd[2];
	x->flags = flags;
	x->log_fd = -1; /* not 0 (stdin) from the memset: no file for a detached command */
	x->cancel_fd = ctx->cancel_fd;
	x->cancel_sig = &ctx->cancel_sig;
	x->cmd_cancel_fd = cmd->cancel_fd;
}

void
pipeline_result_event(wd_ctx *ctx, const char *sandbox_id, const wd_decision *d,
		      const wd_result *r, const char *why)
{
	struct wd_event e = {.kind = WD_EVENT_RESULT, .name = "result", .sandbox_id = sandbox_id,
			     .decision = d, .result = r, .failure = why};
	ctx_emit(ctx, &e);
}

/* The command's timeout and output bound: the command's own, else the
 * caller's spec, else the policy's (profile, then sandbox). */
void
policy_cmd_limits(const wd_spec *spec, const struct gate *g, struct exec_req *x)
{
	if (!x->timeout_ms && !spec->lim_given.timeout_ms && g->limits.timeout_ms)
		x->timeout_ms = g->limits.timeout_ms;
	if (!x->output_limit && !spec->lim_given.output_limit && g->limits.output_limit)
		x->output_limit = g->limits.output_limit;
}

int
pipeline_decide(wd_ctx *ctx, const wd_spec *spec, const wd_cmd *cmd, const char *id,
		struct gate *g, char *const **argv, wd_result **refused, struct wd_err *err)
{
	*refused = NULL;
	*argv = cmd->argv;
	if (!cmd->command && cmd->argc == 0)
		return wd_err_set(err, WD_E_INVAL, "no program given");
	if (!cmd_needs_policy(cmd))
		return 0;
	wd_autofree char *cwd = spec->workspace ? NULL : getcwd(NULL, 0);
	int rc = gate_run(ctx, spec, spec->workspace ? spec->workspace : cwd, cmd, id, g, refused,
			  err);
	if (rc == 0 && !*refused)
		*argv = g->argv;
	return rc;
}

void
pipeline_finish(wd_ctx *ctx, const char *id, struct gate *g, const wd_cmd *cmd, wd_result *r,
		const char *failure)
{
	bool policy = cmd_needs_policy(cmd);
	if (r && policy) {
		/* the result carries the decision that let it run and the
		 * policy's digest ("off" when there was no policy stage) */
		r->decision = g->decision;
		g->decision = NULL;
		snprintf(r->policy, sizeof(r->policy), "%s", g->digest);
	}
	if (r || policy)
		pipeline_result_event(ctx, id, r ? r->decision : g->decision, r, failure);
}

WD_API int
wd_ctx_run(wd_ctx *ctx, const wd_spec *spec, const wd_cmd *cmd, wd_result **out,
	   struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	CTX_ENTER(ctx);
	char id[17];
	sandbox_make_id(id);
	struct gate g = {0};
	struct sandbox *sb = NULL;
	wd_result *r = NULL;
	struct box *b = NULL;
	wd_spec *own = NULL;
	struct ws_trees t = {-1, -1, -1};
	char *const *argv;
	int rc = pipeline_decide(ctx, spec, cmd, id, &g, &argv, &r, err);
	if (rc < 0 || r)
		goto out; /* bad input, or denied or paused: nothing starts */
	const wd_spec *eff = g.spec ? g.spec : spec;
	struct exec_req x;
	pipeline_exec_req(ctx, cmd, argv, SYNC_EXEC_LAST, &x);
	policy_cmd_limits(spec, &g, &x);
	/* a cow workspace: layers in the state directory for this run only
	 * (nothing of it reaches the real directory: there is no apply) */
	if (box_needed(eff)) {
		if ((rc = box_create(ctx, eff, id, true, &b, err)) < 0)
			goto fail;
		own = spec_copy(eff);
		if ((rc = box_trees(b, own, &t, err)) < 0)
			goto fail;
		eff = own;
	}
	if ((rc = sandbox_new(eff, id, &ctx->sink, &sb, err)) < 0)
		goto fail;
	sb->get_keeper = ctx_keeper;
	sb->keeper_data = ctx;
	/* The command goes out right behind the set-up messages; pid 1 reads
	 * it once the jail is built, so no round trip is spent waiting for
	 * SYNC_READY. */
	if ((rc = sandbox_start(sb, err)) < 0 || (rc = gate_require(&g, sb, err)) < 0 ||
	    (rc = sandbox_exec(sb, &x, &r, err)) < 0)
		goto fail;
	pipeline_finish(ctx, id, &g, cmd, r, NULL);
	rc = 0;
	goto out;
fail:
	pipeline_finish(ctx, id, &g, cmd, NULL, err->msg);
out:
	sandbox_free(sb);
	ws_trees_close(&t);
	box_close(b);
	wd_spec_free(own);
	gate_fini(&g);
	if (rc == 0)
		*out = r;
	else
		wd_result_free(r);
	CTX_LEAVE();
	return rc;
}
