/* core/pipeline: the one door.  Every command a front end runs, one-shot
 * or in a live, pooled or session sandbox, goes through pipeline_run():
 *
 *   prepare   the placement names the sandbox id and the spec the command
 *             is judged against (nothing decided yet: a failure here is
 *             bad input, unrecorded)
 *   decide    the policy stage when the command asks for it (gate.c):
 *             the decision is audited first; denied / paused -> a result
 *             saying so, nothing acquired
 *   acquire   the placement gets a sandbox the policy's spec fits (a new
 *             one, the live one, a pooled instance, the session)
 *   require   the policy's sandbox.require against what it really has
 *   exec      the judged argv, with the policy's limits
 *   result    the "result" event: the result, or the failure of any stage
 *             after an audited decision (never a decision without an end)
 *   release   whatever acquire took
 *
 * The placements (struct placement) supply prepare/acquire/exec/release:
 * fresh (here: wd_ctx_run), live (sandbox.c), pooled (pool.c), session and
 * detached (session/session.c).  The public entry points are thin wrappers; before
 * this each assembled the stages by hand and they drifted (docs/threat-model.md): two
 * dropped failures after an audited decision, a detached session command
 * got no policy limits and no result event. */
#include "core/core.h"
#include "audit/audit.h"
#include "policy/policy.h"
#include "workspace/workspace.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool
cmd_needs_policy(const wd_cmd *cmd)
{
	/* Every command that arrives as a string, or for a tool, is judged;
	 * an explicit argv when the caller asks. */
	return cmd->command || cmd->tool || cmd->policy;
}

static void
exec_req_of(wd_ctx *ctx, const wd_cmd *cmd, char *const *argv, unsigned flags, struct exec_req *x)
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

/* The command's timeout and output bound: the command's own, else the
 * caller's spec, else the policy's (profile, then sandbox). */
static void
cmd_limits(const wd_spec *spec, const struct gate *g, struct exec_req *x)
{
	if (!x->timeout_ms && !spec->lim_given.timeout_ms && g->limits.timeout_ms)
		x->timeout_ms = g->limits.timeout_ms;
	if (!x->output_limit && !spec->lim_given.output_limit && g->limits.output_limit)
		x->output_limit = g->limits.output_limit;
}

static int state_binds(const wd_spec *spec, const char **labels, int *fds, int n, int max);

int
core_state_sandbox(int n, const char **labels, int *fds, int max, char *where, size_t cap,
		   const char *placement, const char *id, const wd_spec *spec)
{
	if (n < 0)
		return n;
	if (n > 0) {
		snprintf(where, cap, "%s (%s %s)", labels[0], placement, id);
		labels[0] = where;
	}
	return state_binds(spec, labels, fds, n, max);
}

/* The trees a paused command's approval covers (called only when an
 * approval id is computed: a pause, a retry; policy/approval.c): the
 * placement's (a cow view, a session's home and /tmp), else the
 * workspace; then the source of every writable --bind, which the command
 * reads and the model writes as it does the workspace. */
static int
door_state_roots(void *arg, const char **labels, int *fds, int max)
{
	struct door *d = arg;
	if (d->state_hook)
		/* Which sandbox, too: a live sandbox or a session keeps its own
		 * home and /tmp, where the model can put a .gitconfig whose
		 * pushInsteadOf sends an approved `git push` elsewhere; a pause
		 * in a fresh sandbox, or in another, must not be spent in this
		 * one.  One-shot and pooled sandboxes are new each time: named
		 * by the workspace alone. */
		return core_state_sandbox(d->state_hook(d, labels, fds, max), labels, fds, max,
					  d->state_where, sizeof(d->state_where), d->placement,
					  d->id, d->spec);
	wd_autofree char *cwd = d->spec->workspace ? NULL : getcwd(NULL, 0);
	const char *ws = d->spec->workspace ? d->spec->workspace : cwd;
	/* canonical when the spec was made: a link in it now was put since,
	 * and is not followed */
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = ws ? (int)syscall(SYS_openat2, AT_FDCWD, ws, &how, sizeof(how)) : -1;
	if (fd < 0 || max < 1) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	labels[0] = "workspace";
	fds[0] = fd;
	return state_binds(d->spec, labels, fds, 1, max);
}

/* The workspace the command will see, for the policy's path checks
 * (policy/path.c): the placement's (a cow view).  Named in the message
 * when it cannot be had, which refuses the path (never judged on the
 * host directory instead). */
static int
door_view(void *arg, char *why, size_t cap)
{
	struct door *d = arg;
	int fd = d->view_hook(d, why, cap);
	if (fd < 0 && !why[0])
		snprintf(why, cap, "the workspace of %s %s cannot be opened: %s", d->placement,
			 d->id, strerror(-fd));
	return fd;
}

static int
state_binds(const wd_spec *spec, const char **labels, int *fds, int n, int max)
{
	for (size_t i = 0; i < spec->nbinds; i++) {
		const struct spec_bind *b = &spec->binds[i];
		if (!b->rw)
			continue;
		/* the tree the jail binds: where a session's start found it,
		 * else the source as the jail resolves it */
		int fd = open(b->real ? b->real : b->src, O_PATH | O_CLOEXEC);
		if (fd < 0 || n >= max) {
			if (fd >= 0)
				close(fd);
			for (int k = 0; k < n; k++)
				close(fds[k]);
			return -EIO; /* not walked: no approval can match */
		}
		labels[n] = b->dst;
		fds[n++] = fd;
	}
	return n;
}

static int
decide(wd_ctx *ctx, const wd_spec *spec, const wd_cmd *cmd, const char *id, struct gate *g,
       char *const **argv, wd_result **refused, struct wd_err *err)
{
	*refused = NULL;
	*argv = cmd->argv;
	if (!cmd->command && cmd->argc == 0)
		return wd_err_set(err, WD_E_INVAL, "no program given");
	if (!cmd_needs_policy(cmd))
		return 0;
	wd_autofree char *cwd = spec->workspace ? NULL : getcwd(NULL, 0);
	int rc =
	    gate_run(ctx, spec, spec->workspace ? spec->workspace : cwd, cmd, id, g, refused, err);
	if (rc == 0 && !*refused)
		*argv = g->argv;
	return rc;
}

static const char *
stage_of(const wd_cmd *cmd)
{
	return cmd_needs_policy(cmd) ? "on" : "off";
}

/* A command the policy does not judge (an explicit argv without
 * wd_cmd_set_policy) still leaves a record before it runs: what was asked
 * to run, where, with which variable names (never values: they can be
 * secrets), and that no policy judged it.  The decision is that record
 * when the stage is on.  Written checked: a start the audit trail could not
 * take runs nothing, as an unrecorded decision would not. */
static int
record_start(wd_ctx *ctx, const wd_spec *spec, const wd_cmd *cmd, const char *id,
	     struct wd_err *err)
{
	json_t *f = json_object();
	json_t *argv = json_array();
	for (int i = 0; i < cmd->argc; i++)
		json_array_append_new(argv, audit_json_bytes(cmd->argv[i]));
	json_object_set_new(f, "argv", argv);
	wd_autofree char *here = spec->workspace ? NULL : getcwd(NULL, 0);
	const char *ws = spec->workspace ? spec->workspace : here;
	json_object_set_new(f, "workspace", audit_json_bytes(ws ? ws : ""));
	json_object_set_new(f, "cwd", audit_json_bytes(cmd->cwd ? cmd->cwd : "."));
	json_t *names = json_array();
	for (size_t i = 0; i < spec->nenv + cmd->nenv; i++) {
		const char *kv = i < spec->nenv ? spec->env[i] : cmd->env[i - spec->nenv];
		wd_autofree char *name = wd_xasprintf("%.*s", (int)strcspn(kv, "="), kv);
		json_array_append_new(names, audit_json_bytes(name));
	}
	json_object_set_new(f, "env", names);
	struct wd_event e = {.kind = WD_EVENT_START,
			     .name = "start",
			     .sandbox_id = id,
			     .fields = f,
			     .policy_stage = "off"};
	int rc = ctx_emit_checked(ctx, &e, err);
	json_decref(f);
	return rc < 0 ? wd_err_prefix(err, "audit") : 0;
}

static void
finish(wd_ctx *ctx, const char *id, struct gate *g, const wd_cmd *cmd, wd_result *r,
       const char *failure, const char *detached)
{
	bool policy = cmd_needs_policy(cmd);
	if (r && policy) {
		/* the result carries the decision that let it run and the
		 * policy's digest ("off" when there was no policy stage) */
		r->decision = g->decision;
		g->decision = NULL;
		snprintf(r->policy, sizeof(r->policy), "%s", g->digest);
	}
	if (r || policy || g->audited) {
		struct wd_event e = {.kind = WD_EVENT_RESULT,
				     .name = "result",
				     .sandbox_id = id,
				     .decision = r ? r->decision : g->decision,
				     .result = r,
				     .failure = failure,
				     .detail = detached,
				     .policy_stage = stage_of(cmd)};
		ctx_emit(ctx, &e);
	}
}

int
pipeline_run(wd_ctx *ctx, const struct placement *pl, void *state, const wd_cmd *cmd,
	     wd_result **out, struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	CTX_ENTER(ctx);
	struct door d = {.ctx = ctx, .cmd = cmd, .p = state};
	wd_result *r = NULL;
	char *const *argv = NULL;
	int rc;
	if (!cmd->command && cmd->argc == 0) {
		rc = wd_err_set(err, WD_E_INVAL, "no program given");
		goto out;
	}
	if ((rc = pl->prepare(&d, err)) < 0)
		goto out; /* nothing decided: bad input, or no sandbox to be had */
	/* before the decision is written: an audit log the sandbox could
	 * rewrite is refused, not used (state.c) */
	if ((rc = ctx_records_check(ctx, d.spec, err)) < 0)
		goto out;
	d.g.state_roots = door_state_roots;
	d.g.state_arg = &d;
	d.state_hook = pl->state_roots;
	d.view_hook = pl->view;
	if (pl->view)
		d.g.view = door_view;
	d.placement = pl->name;
	rc = decide(ctx, d.spec, cmd, d.id, &d.g, &argv, &r, err);
	if (rc < 0 && d.g.audited)
		goto fail; /* decided and recorded, then failed: say so */
	if (rc < 0 || r)
		goto out; /* bad input, or denied or paused: nothing acquired */
	if (!cmd_needs_policy(cmd)) {
		if ((rc = record_start(ctx, d.spec, cmd, d.id, err)) < 0)
			goto out;   /* nothing recorded, nothing run */
		d.g.audited = true; /* from here, a failure is recorded as its result */
	}
	d.eff = d.g.spec ? d.g.spec : d.spec;
	exec_req_of(ctx, cmd, argv, pl->exec_flags, &d.x);
	cmd_limits(d.spec, &d.g, &d.x);
	if ((rc = pl->acquire(&d, err)) < 0)
		goto fail;
	/* in-process sandboxes are checked here; a session's monitor checks
	 * the bits it is sent (session/monitor.c) */
	if (d.sb && (rc = gate_require(d.g.require, d.sb, err)) < 0)
		goto fail;
	if ((rc = pl->exec(&d, &r, err)) < 0)
		goto fail;
	finish(ctx, d.id, &d.g, cmd, r, NULL, d.detached);
	rc = 0;
	goto out;
fail:
	finish(ctx, d.id, &d.g, cmd, NULL, err->msg, NULL);
out:
	if (pl->release)
		pl->release(&d);
	gate_fini(&d.g);
	if (rc == 0)
		*out = r;
	else
		wd_result_free(r);
	CTX_LEAVE();
	return rc;
}

int
pipeline_net_fits(const struct door *d, const wd_spec *built, const char *what, struct wd_err *err)
{
	/* A built sandbox's egress was fixed when it was made: a policy that
	 * would widen it for this command cannot here, and says so rather
	 * than running it without. */
	if (d->eff->net == WD_NET_PROXY && built->net != WD_NET_PROXY)
		return wd_err_set(err, WD_E_INVAL,
				  "the policy's network.allow needs a %s created with egress "
				  "(--net allow, or the policy's network at creation); this one "
				  "has none",
				  what);
	/* and its /usr: the decision was made in the policy's image */
	return gate_image_check(built, &d->g, err);
}

/* ---- fresh: a sandbox for this command only (wd_ctx_run) ---- */

struct fresh {
	const wd_spec *spec;
	struct box *box;
	wd_spec *own;
	struct ws_trees t;
};

static int
fresh_prepare(struct door *d, struct wd_err *err)
{
	struct fresh *f = d->p;
	(void)err;
	sandbox_make_id(d->id);
	d->spec = f->spec;
	return 0;
}

static int
fresh_acquire(struct door *d, struct wd_err *err)
{
	struct fresh *f = d->p;
	const wd_spec *eff = d->eff;
	int rc;
	/* a cow workspace: layers in the state directory for this run only
	 * (nothing of it reaches the real directory: there is no apply) */
	if (box_needed(eff)) {
		if ((rc = box_create(d->ctx, eff, d->id, true, &f->box, err)) < 0)
			return rc;
		f->own = spec_copy(eff);
		if ((rc = box_trees(f->box, f->own, &f->t, err)) < 0)
			return rc;
		eff = f->own;
	}
	if ((rc = sandbox_new(eff, d->id, &d->ctx->sink, &d->sb, err)) < 0)
		return rc;
	/* made for this command: its network events carry the stage */
	d->sb->policy_stage = stage_of(d->cmd);
	d->sb->get_keeper = ctx_keeper;
	d->sb->keeper_data = d->ctx;
	return sandbox_start(d->sb, err);
}

static int
fresh_exec(struct door *d, wd_result **r, struct wd_err *err)
{
	/* The command goes out right behind the set-up messages (the
	 * exec_req's SYNC_EXEC_LAST); pid 1 reads it once the jail is built,
	 * so no round trip is spent waiting for SYNC_READY. */
	return sandbox_exec(d->sb, &d->x, r, err);
}

static void
fresh_release(struct door *d)
{
	struct fresh *f = d->p;
	sandbox_free(d->sb);
	ws_trees_close(&f->t);
	box_close(f->box);
	wd_spec_free(f->own);
}

static const struct placement fresh = {
    .name = "fresh",
    .exec_flags = SYNC_EXEC_LAST,
    .prepare = fresh_prepare,
    .acquire = fresh_acquire,
    .exec = fresh_exec,
    .release = fresh_release,
};

WD_API int
wd_ctx_run(wd_ctx *ctx, const wd_spec *spec, const wd_cmd *cmd, wd_result **out, struct wd_err *err)
{
	struct fresh f = {.spec = spec, .t = {-1, -1, -1}};
	return pipeline_run(ctx, &fresh, &f, cmd, out, err);
}
