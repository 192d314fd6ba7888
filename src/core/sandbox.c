/* core/sandbox: the public sandbox (create, exec many times, destroy), the
 * one-call wd_run(), and the plan printer. */
#include "core/core.h"
#include "jail/jail.h"

#include <stdio.h>
#include <string.h>

WD_API int
wd_sandbox_create(wd_ctx *ctx, const wd_spec *spec, wd_sandbox **out, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct sandbox *sb = NULL;
	int rc = sandbox_new(spec, NULL, &ctx->sink, &sb, err);
	if (rc == 0) {
		sb->get_keeper = ctx_keeper;
		sb->keeper_data = ctx;
		rc = sandbox_start(sb, err);
	}
	if (rc == 0)
		rc = sandbox_wait_ready(sb, err);
	if (rc < 0) {
		sandbox_free(sb);
		CTX_LEAVE();
		return rc;
	}
	wd_sandbox *s = wd_xcalloc(1, sizeof(*s));
	s->ctx = ctx;
	s->sb = sb;
	atomic_fetch_add(&ctx->live, 1);
	*out = s;
	CTX_LEAVE();
	return 0;
}

WD_API int
wd_sandbox_exec(wd_sandbox *s, const wd_cmd *cmd, wd_result **out, struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	wd_ctx *ctx = s->ctx;
	struct sandbox *sb = s->sb;
	CTX_ENTER(ctx);
	struct gate g = {0};
	wd_result *r = NULL;
	char *const *argv;
	int rc = pipeline_decide(ctx, sb->spec, cmd, sb->id, &g, &argv, &r, err);
	if (rc < 0 || r)
		goto out;
	/* A live sandbox's egress and limits were fixed when it was built:
	 * a policy that would widen them for this command cannot here, and
	 * says so rather than running it without. */
	if (g.spec && g.spec->net == WD_NET_PROXY && sb->spec->net != WD_NET_PROXY) {
		rc = wd_err_set(err, WD_E_INVAL,
				"the policy's network.allow needs a sandbox created with "
				"--net allow; this one has no egress");
		goto out;
	}
	struct exec_req x;
	pipeline_exec_req(ctx, cmd, argv, 0, &x);
	policy_cmd_limits(sb->spec, &g, &x);
	if ((rc = gate_require(&g, sb, err)) < 0 || (rc = sandbox_exec(sb, &x, &r, err)) < 0) {
		pipeline_finish(ctx, sb->id, &g, cmd, NULL, err->msg);
		goto out;
	}
	pipeline_finish(ctx, sb->id, &g, cmd, r, NULL);
out:
	gate_fini(&g);
	if (rc == 0)
		*out = r;
	else
		wd_result_free(r);
	CTX_LEAVE();
	return rc;
}

WD_API void
wd_sandbox_destroy(wd_sandbox *s)
{
	if (!s)
		return;
	wd_ctx *ctx = s->ctx;
	CTX_ENTER(ctx);
	sandbox_free(s->sb);
	atomic_fetch_sub(&ctx->live, 1);
	free(s);
	CTX_LEAVE();
}

WD_API const char *
wd_sandbox_id(const wd_sandbox *s)
{
	return s->sb->id;
}

WD_API void
wd_sandbox_cancel(wd_sandbox *s, int signo)
{
	sandbox_cancel(s->sb, signo);
}

/* ---- one call ---- */

WD_API int
wd_run(const wd_spec *spec, wd_result **out, struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	if (!spec->argv)
		return wd_err_set(err, WD_E_INVAL, "no program given");
	wd_ctx *ctx = NULL;
	int rc = wd_ctx_new(&ctx, err);
	if (rc < 0)
		return rc;
	wd_cmd *cmd = wd_cmd_new();
	rc = wd_cmd_set_argv(cmd, spec->argc, (const char *const *)spec->argv, err);
	if (rc == 0) {
		wd_cmd_set_stdin(cmd, spec->stdin_fd);
		wd_cmd_set_stream(cmd, spec->stream_fd[1], spec->stream_fd[2]);
		rc = wd_ctx_run(ctx, spec, cmd, out, err);
	}
	wd_cmd_free(cmd);
	wd_ctx_free(ctx);
	return rc;
}

WD_API int
wd_spec_plan(const wd_spec *spec, char **out, struct wd_err *err)
{
	/* the plan of the spec's sandbox, prepared (so bad input shows) but
	 * never started */
	struct sandbox *sb = NULL;
	int rc = sandbox_new(spec, NULL, NULL, &sb, err);
	if (rc < 0)
		return rc;
	*out = sb->ops->plan_text(sb);
	sandbox_free(sb);
	return 0;
}
