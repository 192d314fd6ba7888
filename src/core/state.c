/* core/state: the context's state directory. */
#include "core/core.h"
#include "workspace/workspace.h"

#include <string.h>

WD_API int
wd_ctx_set_state_dir(wd_ctx *ctx, const char *dir, struct wd_err *err)
{
	char real[4096];
	/* checked (and made) now: a bad directory is bad input here, not a
	 * surprise at the first session */
	int rc = ws_state_root(dir, real, sizeof(real), err);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ctx->lock);
	free(ctx->state_dir);
	ctx->state_dir = wd_xstrdup(real);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int
ctx_state_root(wd_ctx *ctx, char *out, size_t cap, struct wd_err *err)
{
	pthread_mutex_lock(&ctx->lock);
	char *given = ctx->state_dir ? wd_xstrdup(ctx->state_dir) : NULL;
	pthread_mutex_unlock(&ctx->lock);
	int rc = ws_state_root(given, out, cap, err);
	free(given);
	return rc;
}

/* What the policy says a sandbox is that can only be given when it is
 * built, into *spec (replaced by a new copy when the network changes it),
 * when the context has a policy file: workspace.protect (the mounts) and
 * the "network" object (the egress proxy and its rules).  Sandboxes made
 * outside the one-shot pipeline (wd_sandbox_create, sessions) are built
 * before any command is judged, so without this a policy with
 * network.allow made them without egress and then refused every command
 * that needed it (docs/threat-model.md).  Rules are only added (a deny still wins),
 * and a caller's --net wins over the policy's mode, as in gate.c. */
int
ctx_policy_create(wd_ctx *ctx, wd_spec **spec, struct wd_err *err)
{
	pthread_mutex_lock(&ctx->lock);
	bool file = ctx->policy_path != NULL;
	pthread_mutex_unlock(&ctx->lock);
	if (!file)
		return 0;
	struct policy_ref *ref = ctx_policy_get(ctx, err);
	if (!ref)
		return -EINVAL;
	struct wd_policy_sandbox ps;
	wd_policy_sandbox(ref->p, &ps);
	int rc = 0;
	for (size_t i = 0; i < ps.nprotect && rc == 0; i++)
		rc = wd_spec_add_protected(*spec, ps.protect[i], err);
	struct gate g = {0};
	if (rc == 0 && (rc = gate_network(&ps, *spec, &g, err)) == 0 && g.spec) {
		wd_spec_free(*spec);
		*spec = g.spec;
		g.spec = NULL;
	}
	gate_fini(&g);
	ctx_policy_put(ref);
	return rc;
}
