/* core/gate: the policy stage of the pipeline, for one command.
 *
 *   decide -> "decision" event -> tool route (blocked, direct, sandbox + profile)
 *          -> deny: a result with the reason and advice, status 126
 *          -> pause: consume a recorded approval, or ask the approver, or
 *             record the pause and return it (status 123)
 *          -> allow: the judged argv, the profile's limits, the policy's
 *             network.allow rules
 *
 * After an approval is taken the decision is made again, under the policy
 * loaded again from its file: an approval covers one request under one
 * policy, and if either changed in between the id differs and the command
 * pauses again.  The decision, the approvals and the sandbox share the
 * sandbox's id in the event stream. */
#include "core/core.h"
#include "audit/audit.h"
#include "policy/policy.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

void
gate_fini(struct gate *g)
{
	wd_decision_free(g->decision);
	g->decision = NULL;
	for (size_t i = 0; g->argv && g->argv[i]; i++)
		free(g->argv[i]);
	free(g->argv);
	g->argv = NULL;
	wd_spec_free(g->spec);
	g->spec = NULL;
}

struct approval_hook {
	wd_ctx *ctx;
	const char *sandbox_id;
};

/* The policy module's approval events (consumed, expired, mismatched)
 * enter the context's stream here instead of being written directly. */
static void
on_approval(void *data, const char *what, const char *id, const char *detail)
{
	const struct approval_hook *h = data;
	char name[48];
	snprintf(name, sizeof(name), "approval.%s", what);
	struct wd_event e = {.kind = WD_EVENT_APPROVAL,
			     .name = name,
			     .sandbox_id = h->sandbox_id,
			     .data = id,
			     .detail = detail,
			     .policy_stage = "on"};
	ctx_emit(h->ctx, &e);
}

static int
request_env(wd_request *req, const char *kv, struct wd_err *err)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		return 0;
	char *n = strndup(kv, (size_t)(eq - kv));
	int rc = wd_request_setenv(req, n, eq + 1, err);
	free(n);
	return rc;
}

/* The one place a request learns the sandbox it is judged for: the gate
 * below, and the front ends that only ask (warden check, the server's
 * policy.check), so that the decision and the approval id they report
 * are the run's. */
WD_API int
wd_request_set_spec(wd_request *req, const wd_spec *spec, struct wd_err *err)
{
	/* programs are looked up where the jail will find them: the image's
	 * /usr when there is one */
	int rc = spec->image_root ? wd_request_set_system_root(req, spec->image_root, err) : 0;
	/* the approval id covers the whole environment the command gets, in
	 * the spec's order (the image's variables among the caller's) */
	for (size_t i = 0; rc == 0 && i < spec->nenv; i++)
		rc = request_env(req, spec->env[i], err);
	return rc;
}

static int
build_request(const wd_spec *spec, const char *workspace, const wd_cmd *cmd, wd_request **out,
	      struct wd_err *err)
{
	wd_request *req = wd_request_new();
	int rc = cmd->command
		     ? wd_request_set_command(req, cmd->command, err)
		     : wd_request_set_argv(req, cmd->argc, (const char *const *)cmd->argv, err);
	if (rc == 0 && (rc = wd_request_set_workspace(req, workspace, err)) < 0)
		wd_err_prefix(err, "--workspace");
	if (rc == 0 && cmd->cwd)
		rc = wd_request_set_cwd(req, cmd->cwd, err);
	if (rc == 0)
		rc = wd_request_set_spec(req, spec, err);
	for (size_t i = 0; rc == 0 && i < cmd->nenv; i++)
		rc = request_env(req, cmd->env[i], err);
	if (rc < 0) {
		wd_request_free(req);
		return rc;
	}
	*out = req;
	return 0;
}

/* A result that says nothing ran: refused (126) or paused (123). */
static wd_result *
refusal(const char *sandbox_id, enum wd_outcome o, wd_decision **d, const char *digest,
	const char *reason)
{
	wd_result *r = result_new(sandbox_id);
	r->outcome = o;
	r->status = o == WD_OUTCOME_PAUSED ? 123 : 126;
	r->decision = *d;
	*d = NULL;
	snprintf(r->policy, sizeof(r->policy), "%s", digest);
	if (reason)
		r->refusal = wd_xstrdup(reason);
	return r;
}

/* The tool's route: the class comes from the policy's definition of the
 * tool, never from the request.  Blocked (or undefined) refuses; direct
 * tools run in warden itself, not in a sandbox; a sandbox tool's profile
 * gives the limits the caller did not set.  Returns NULL to go on, or the
 * reason for a refusal. */
static const char *
route(wd_ctx *ctx, const wd_policy *pol, const wd_cmd *cmd, const char *sandbox_id, struct gate *g)
{
	enum wd_tool_class k;
	const char *profile = NULL;
	struct wd_err e = {0};
	int rc = wd_policy_route(pol, cmd->tool, &k, &profile, &g->profile, &e);
	const char *why = NULL;
	if (rc < 0)
		why = "is not defined by the policy (undefined tools are blocked)";
	else if (k == WD_TOOL_BLOCKED)
		why = "is blocked by the policy";
	else if (k == WD_TOOL_DIRECT)
		why = "is a direct tool: it runs in warden itself, not in a sandbox";
	json_t *f;
	if (why)
		/* the tool's name by its bytes (a caller's): json_pack's "s"
		 * refuses one that is not UTF-8 and the record would lose it */
		f = json_pack("{s:o,s:s,s:s}", "tool", audit_json_bytes(cmd->tool), "decision",
			      "deny", "reason", why);
	else
		f = json_pack("{s:o,s:s*,s:I,s:I,s:I,s:I}", "tool", audit_json_bytes(cmd->tool),
			      "profile", profile, "timeout_ms", (json_int_t)g->profile.timeout_ms,
			      "memory", (json_int_t)g->profile.memory_bytes, "cpu_millionths",
			      (json_int_t)g->profile.cpu_millionths, "output",
			      (json_int_t)g->profile.output_limit);
	struct wd_event ev = {
	    .kind = WD_EVENT_ROUTE, .name = "route", .sandbox_id = sandbox_id, .fields = f};
	ctx_emit(ctx, &ev);
	json_decref(f);
	return why;
}

/* Ask the approver (--approve=tty) for a pause no recorded approval
 * covers.  1 approved (and consumed), 0 refused, -1 nobody to ask. */
static int
ask(wd_ctx *ctx, const wd_decision *d, const struct approval_hook *h)
{
	pthread_mutex_lock(&ctx->lock);
	wd_approve_fn fn = ctx->approver;
	void *data = ctx->approver_data;
	pthread_mutex_unlock(&ctx->lock);
	if (!fn)
		return -1;
	int yes = fn(d, data);
	const char *id = wd_decision_approval_id(d);
	if (yes == 1) {
		on_approval((void *)(uintptr_t)h, "granted", id, "at the terminal");
		on_approval((void *)(uintptr_t)h, "consumed", id, NULL);
	} else if (yes == 0) {
		on_approval((void *)(uintptr_t)h, "refused", id, "at the terminal");
	}
	return yes;
}

/* A pause: 1 if an approval (recorded, or given now) lets it run and the
 * policy as it is now still pauses it with the same id; 0 if it stays
 * paused or was refused (*refused set); *d may be replaced by the new
 * decision. */
static int
settle_pause(wd_ctx *ctx, struct policy_ref **pol, const wd_request *req, const wd_cmd *cmd,
	     wd_decision **d, const struct approval_hook *h, bool *refused, struct wd_err *err)
{
	struct wd_audit ah = {.log = NULL, .hook = on_approval, .hook_data = (void *)(uintptr_t)h};
	int got = wd_approval_consume((*pol)->p, req, *d, &ah, err);
	if (got < 0)
		return got;
	if (got == 0 && cmd->interactive) {
		int yes = ask(ctx, *d, h);
		if (yes == 0) {
			*refused = true;
			return 0;
		}
		got = yes == 1;
	}
	if (got == 0)
		return 0;
	/* Decide again, under the policy as it is now. */
	char id[65];
	snprintf(id, sizeof(id), "%s", wd_decision_approval_id(*d));
	int rc = ctx_policy_reload(ctx, err);
	if (rc < 0)
		return rc;
	ctx_policy_put(*pol);
	if (!(*pol = ctx_policy_get(ctx, err)))
		return -EINVAL;
	wd_decision *again = NULL;
	if ((rc = wd_policy_decide((*pol)->p, req, &again, err)) < 0)
		return rc;
	wd_decision_free(*d);
	*d = again;
	if (wd_decision_kind(again) == WD_DECISION_PAUSE &&
	    !strcmp(wd_decision_approval_id(again), id))
		return 1;
	if (wd_decision_kind(again) == WD_DECISION_DENY) {
		struct wd_event ev = {.kind = WD_EVENT_DECISION,
				      .name = "decision",
				      .sandbox_id = h->sandbox_id,
				      .decision = again,
				      .request = req,
				      .policy_stage = "on"};
		ctx_emit(ctx, &ev);
	} else if (wd_decision_kind(again) == WD_DECISION_PAUSE) {
		/* the decision again walks the state too: a file changed
		 * while the human was asked is another id */
		on_approval((void *)(uintptr_t)h, "mismatched", id,
			    "the policy, or the files the command can read, changed after "
			    "the approval");
	}
	return 0;
}

static wd_spec *
spec_of(const wd_spec *spec, struct gate *g)
{
	if (!g->spec)
		g->spec = spec_copy(spec);
	return g->spec;
}

static int
add_rules(const wd_spec *spec, struct gate *g, enum wd_net_rule kind, const char *const *v,
	  size_t n, const char *key, struct wd_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (wd_spec_add_net_rule(spec_of(spec, g), kind, v[i], err) < 0)
			return wd_err_prefix(err, "policy %s", key);
	return 0;
}

/* The policy's "network" object, added to what the caller gave: more
 * rules, never fewer (a deny rule still wins over any allow). */
int
gate_network(const struct wd_policy_sandbox *ps, const wd_spec *spec, struct gate *g,
	     struct wd_err *err)
{
	int rc;
	if ((rc = add_rules(spec, g, WD_NET_ALLOW, ps->net_allow, ps->net_nallow, "network.allow",
			    err)) < 0 ||
	    (rc = add_rules(spec, g, WD_NET_DENY, ps->net_deny, ps->net_ndeny, "network.deny",
			    err)) < 0 ||
	    (rc = add_rules(spec, g, WD_NET_HOST, ps->net_hosts, ps->net_nhosts, "network.hosts",
			    err)) < 0 ||
	    (rc = add_rules(spec, g, WD_NET_RANGE, ps->net_ranges, ps->net_nranges,
			    "network.allow_ranges", err)) < 0)
		return rc;
	for (size_t i = 0; i < ps->nallow_ports; i++)
		wd_spec_allow_port(spec_of(spec, g), ps->allow_ports[i], NULL);
	/* the mode: the caller's; else the policy's network.mode; else allow
	 * rules (the caller's or the policy's) turn the proxy on */
	if (!spec->net_given) {
		if (ps->net_mode_set)
			wd_spec_set_net(spec_of(spec, g), ps->net_mode);
		else if (ps->net_nallow)
			wd_spec_set_net(spec_of(spec, g), WD_NET_PROXY);
	}
	if (ps->tls_intercept && !spec->tls_intercept)
		wd_spec_set_tls_intercept(spec_of(spec, g), true,
					  spec->upstream_ca ? spec->upstream_ca : ps->upstream_ca);
	else if (ps->upstream_ca && !spec->upstream_ca)
		wd_spec_set_tls_intercept(spec_of(spec, g), spec->tls_intercept, ps->upstream_ca);
	return 0;
}

static bool
spec_has_protect(const wd_spec *spec, const char *path)
{
	for (size_t i = 0; i < spec->nprotect; i++)
		if (!strcmp(spec->protect[i], path))
			return true;
	return false;
}

/* The policy's "secrets", added to the caller's: read now, by
 * warden, from where the policy says; a secret the caller declared too
 * is an error rather than a silent choice of one value. */
static int
apply_secrets(const struct wd_policy_sandbox *ps, const wd_spec *spec, struct gate *g,
	      struct wd_err *err)
{
	for (size_t i = 0; i < ps->nsecrets; i++) {
		const struct wd_policy_secret *s = &ps->secrets[i];
		wd_spec *sp = spec_of(spec, g);
		if (wd_spec_add_secret(sp, s->name, s->source, err) < 0)
			return wd_err_prefix(err, "policy secrets.%s", s->name);
		for (size_t k = 0; k < s->ninject; k++)
			if (wd_spec_add_inject(sp, WD_INJECT_HEADER, s->inject[k], err) < 0)
				return wd_err_prefix(err, "policy secrets.%s.inject", s->name);
		for (size_t k = 0; k < s->ninject_basic; k++)
			if (wd_spec_add_inject(sp, WD_INJECT_BASIC, s->inject_basic[k], err) < 0)
				return wd_err_prefix(err, "policy secrets.%s.inject_basic",
						     s->name);
		if (s->placeholder && wd_spec_add_placeholder(sp, s->placeholder, s->name, err) < 0)
			return wd_err_prefix(err, "policy secrets.%s.placeholder", s->name);
	}
	return 0;
}

/* The policy's "sandbox" object and the tool's profile, for what the
 * caller did not set (docs/policy.md: option > profile > sandbox >
 * defaults; policy_limits_merge, which wd_policy_limits gives front
 * ends). */
static void
apply_sandbox(const struct wd_policy_sandbox *ps, const wd_spec *spec, struct gate *g)
{
	const struct wd_limits *given = &spec->lim_given;
	policy_limits_merge(NULL, &g->profile, &ps->limits, &g->limits);
	g->require = ps->require;
	struct wd_limits l;
	policy_limits_merge(given, &g->profile, &ps->limits, &l);
	if (memcmp(&l, given, sizeof(l)))
		wd_spec_set_limits(spec_of(spec, g), &l);
	if (ps->isolation_set && !spec->isolation_given)
		wd_spec_set_isolation(spec_of(spec, g), ps->isolation);
	if (ps->reproducible && !spec->reproducible)
		wd_spec_set_reproducible(spec_of(spec, g), true);
	/* workspace.protect: more paths kept read-only; checked by
	 * the policy's loader as the setter checks them */
	for (size_t i = 0; i < ps->nprotect; i++)
		if (!spec_has_protect(spec, ps->protect[i]))
			wd_spec_add_protected(spec_of(spec, g), ps->protect[i], NULL);
}

/* Allowed: the judged words, and what the policy says the sandbox is. */
static int
allow(const wd_policy *pol, const wd_spec *spec, const wd_decision *d, struct gate *g,
      struct wd_err *err)
{
	int n = 0;
	const char *const *words = wd_decision_argv(d, &n);
	g->argv = wd_xcalloc((size_t)n + 1, sizeof(char *));
	for (int i = 0; i < n; i++)
		g->argv[i] = wd_xstrdup(words[i]);
	struct wd_policy_sandbox ps;
	wd_policy_sandbox(pol, &ps);
	apply_sandbox(&ps, spec, g);
	int rc = gate_network(&ps, spec, g, err);
	return rc < 0 ? rc : apply_secrets(&ps, spec, g, err);
}

int
gate_require(unsigned require, struct sandbox *sb, struct wd_err *err)
{
	if (!require)
		return 0;
	wd_result *r = result_new(sb->id);
	sb->ops->describe(sb, r);
	bool own_ns = backend_can(r->isolation, BACKEND_CAP_NAMESPACES);
	const struct {
		unsigned bit;
		bool have;
		const char *name;
	} need[] = {
	    {WD_REQUIRE_CGROUP, r->cgroup_version != 0, "cgroup"},
	    {WD_REQUIRE_LANDLOCK, r->landlock_abi > 0, "landlock"},
	    {WD_REQUIRE_SECCOMP, r->seccomp, "seccomp"},
	    {WD_REQUIRE_NETNS, own_ns, "netns"},
	    {WD_REQUIRE_USERNS, own_ns, "userns"},
	};
	wd_result_free(r);
	for (size_t i = 0; i < WD_ARRAY_SIZE(need); i++)
		if ((require & need[i].bit) && !need[i].have) {
			return wd_err_set(
			    err, WD_E_UNSUPPORTED,
			    "the policy requires %s, which this sandbox does not have "
			    "(see warden doctor); nothing ran",
			    need[i].name);
		}
	return 0;
}

int
gate_image_check(const wd_spec *built, const struct gate *g, struct wd_err *err)
{
	const char *want = g->spec ? g->spec->image_digest : NULL;
	const char *have = built->image_digest;
	if (!want || (have && !strcmp(want, have)))
		return 0;
	/* the decision was made in one image's /usr; the sandbox runs
	 * another (or the host's): what it would run is not what was judged */
	return wd_err_set(err, WD_E_INVAL,
			  "the policy's image for this command (sandbox.image or the tool's "
			  "image) %s is not the image this sandbox was made with (%s); create "
			  "it with --image %s",
			  g->spec->image, built->image ? built->image : "the host's /usr",
			  g->spec->image);
}

/* tools.NAME.image: a sandbox tool runs in its image.  A sandbox given no
 * image gets it; one the caller made in an image (--image, a live
 * sandbox) must be made in that very image (by digest), else the command
 * is refused: the decision would be made in one /usr and the program run
 * from another's, or the caller's explicit choice silently overridden. */
static int
tool_image(const wd_spec *spec, struct gate *g, const char *tool, const char *ref,
	   struct wd_err *err)
{
	if (!spec->image) {
		if (wd_spec_set_image(spec_of(spec, g), ref, err) < 0)
			return wd_err_prefix(err, "policy tools.%s.image", tool);
		return 0;
	}
	wd_spec *probe = wd_spec_new();
	int rc = wd_spec_set_image(probe, ref, err);
	bool same =
	    rc == 0 && spec->image_digest && !strcmp(probe->image_digest, spec->image_digest);
	wd_spec_free(probe);
	if (rc < 0)
		return wd_err_prefix(err, "policy tools.%s.image", tool);
	if (!same)
		return wd_err_set(
		    err, WD_E_INVAL,
		    "tool '%s' runs in image %s (the policy's tools.%s.image), not in "
		    "%s, the image this sandbox is made with; nothing ran",
		    tool, ref, tool, spec->image);
	return 0;
}

int
gate_run(wd_ctx *ctx, const wd_spec *spec, const char *workspace, const wd_cmd *cmd,
	 const char *sandbox_id, struct gate *g, wd_result **out_refusal, struct wd_err *err)
{
	wd_request *req = NULL;
	wd_decision *d = NULL;
	struct approval_hook h = {ctx, sandbox_id};
	int rc;

	*out_refusal = NULL;
	struct policy_ref *pol = ctx_policy_get(ctx, err);
	if (!pol)
		return -EINVAL;
	/* sandbox.image: the environment, unless the caller chose one
	 * (option > policy, as for isolation).  Set before the decision:
	 * programs are resolved in it. */
	struct wd_policy_sandbox ps0;
	wd_policy_sandbox(pol->p, &ps0);
	/* a sandbox tool's own image wins over sandbox.image (as its profile
	 * over the sandbox object's limits) */
	const char *timg = cmd->tool ? wd_policy_tool_image(pol->p, cmd->tool) : NULL;
	if (timg) {
		if ((rc = tool_image(spec, g, cmd->tool, timg, err)) < 0)
			goto out;
	} else if (ps0.image && !spec->image &&
		   (rc = wd_spec_set_image(spec_of(spec, g), ps0.image, err)) < 0) {
		wd_err_prefix(err, "policy sandbox.image");
		goto out;
	}
	if ((rc = build_request(g->spec ? g->spec : spec, workspace, cmd, &req, err)) < 0)
		goto out;
	/* the state an approval covers: the placement's trees when the
	 * command sees more than the host workspace (policy/approval.c) */
	if (g->state_roots)
		policy_request_state_roots(req, g->state_roots, g->state_arg, NULL);
	/* the paths it names are judged where it will run (policy/path.c) */
	if (g->view)
		policy_request_view_hook(req, g->view, g->state_arg);
	if ((rc = wd_policy_decide(pol->p, req, &d, err)) < 0)
		goto out;
	/* The audit log is opened here, by warden, outside the jail; if it
	 * cannot be written nothing runs (no unrecorded decisions). */
	if ((rc = ctx_audit_ready(ctx, err)) < 0) {
		wd_err_prefix(err, "--audit");
		goto out;
	}
	struct wd_event ev = {.kind = WD_EVENT_DECISION,
			      .name = "decision",
			      .sandbox_id = sandbox_id,
			      .decision = d,
			      .request = req,
			      .policy_stage = "on"};
	if ((rc = ctx_emit_checked(ctx, &ev, err)) < 0) {
		wd_err_prefix(err, "audit");
		goto out;
	}
	g->audited = true;
	snprintf(g->digest, sizeof(g->digest), "%s", wd_policy_digest(pol->p));

	const char *why;
	if (cmd->tool && (why = route(ctx, pol->p, cmd, sandbox_id, g))) {
		char reason[256];
		snprintf(reason, sizeof(reason), "tool '%s' %s", cmd->tool, why);
		*out_refusal = refusal(sandbox_id, WD_OUTCOME_DENIED, &d, g->digest, reason);
		rc = 0;
		goto out;
	}
	if (wd_decision_kind(d) == WD_DECISION_PAUSE) {
		bool refused = false;
		rc = settle_pause(ctx, &pol, req, cmd, &d, &h, &refused, err);
		if (rc < 0)
			goto out;
		snprintf(g->digest, sizeof(g->digest), "%s", wd_policy_digest(pol->p));
		if (refused) {
			*out_refusal = refusal(sandbox_id, WD_OUTCOME_DENIED, &d, g->digest,
					       "not approved at the terminal; nothing ran");
			rc = 0;
			goto out;
		}
		if (rc == 0 && wd_decision_kind(d) == WD_DECISION_PAUSE) {
			struct wd_err pe = {0};
			if (wd_approval_pending(pol->p, req, d, ctx_audit_path(ctx), &pe) < 0)
				wd_log(WD_LOG_WARN, "cannot record the pending approval: %s",
				       pe.msg);
			*out_refusal = refusal(sandbox_id, WD_OUTCOME_PAUSED, &d, g->digest, NULL);
			goto out;
		}
	}
	if (wd_decision_kind(d) == WD_DECISION_DENY) {
		*out_refusal = refusal(sandbox_id, WD_OUTCOME_DENIED, &d, g->digest, NULL);
		rc = 0;
		goto out;
	}
	if ((rc = allow(pol->p, spec, d, g, err)) < 0)
		goto out;
	g->decision = d;
	d = NULL;
	rc = 0;
out:
	wd_decision_free(d);
	wd_request_free(req);
	ctx_policy_put(pol);
	return rc;
}
