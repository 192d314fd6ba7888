/* core/state: the context's state directory (issue 9). */
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

/* The policy's workspace.protect into spec, when the context has a policy
 * file: sandboxes made outside the pipeline (wd_sandbox_create, sessions)
 * get the mounts it asks for at creation, the only time they can. */
int
ctx_policy_protect(wd_ctx *ctx, wd_spec *spec, struct wd_err *err)
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
		rc = wd_spec_add_protected(spec, ps.protect[i], err);
	ctx_policy_put(ref);
	return rc;
}
