/* core/state: the context's state directory. */
#include "core/core.h"
#include "jail/jail.h"
#include "policy/policy.h"
#include "workspace/workspace.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

WD_API int
wd_ctx_state_dir(wd_ctx *ctx, char *out, size_t cap, struct wd_err *err)
{
	return ctx_state_root(ctx, out, cap, err);
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
	/* The policy's sandbox limits for what the caller left unset, as a
	 * one-shot run under the same policy gets them (option > the
	 * policy's sandbox object > the library's defaults): a session or
	 * a live sandbox made under a policy that bounds memory must not
	 * run with the library's defaults instead. */
	struct wd_limits l, sb = {.memory_bytes = ps.limits.memory_bytes,
				  .pids = ps.limits.pids,
				  .cpu_millionths = ps.limits.cpu_millionths,
				  .tmp_bytes = ps.limits.tmp_bytes};
	/* only what the sandbox is made with (its cgroup, its /tmp): a
	 * command's timeout and output window stay the policy stage's, set
	 * per command as for every entry (pipeline.c) */
	policy_limits_merge(&(*spec)->lim_given, NULL, &sb, &l);
	if (rc == 0 && memcmp(&l, &(*spec)->lim_given, sizeof(l)))
		wd_spec_set_limits(*spec, &l);
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

/* Absolute form of p (relative to the current directory), resolved as the
 * kernel will: 0, or -1. */
static int
record_real(const char *p, char *out, size_t cap)
{
	char abs[PATH_MAX];
	if (p[0] == '/') {
		snprintf(abs, sizeof(abs), "%s", p);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return -1;
		int n = snprintf(abs, sizeof(abs), "%s/%s", cwd, p);
		if (n < 0 || (size_t)n >= sizeof(abs))
			return -1;
	}
	return policy_path_real(abs, out, cap);
}

/* The uid a process-level command runs as on the host (jail/plan.c):
 * the caller's, or as root (no user namespace to hide root in) the
 * workspace's owner, or nobody when that is root. */
static uid_t
process_uid(const wd_spec *spec)
{
	if (geteuid() != 0)
		return geteuid();
	struct stat st;
	if (spec->workspace && stat(spec->workspace, &st) == 0 && st.st_uid != 0)
		return st.st_uid;
	return WD_NOBODY;
}

static int
record_check(const wd_spec *spec, const char *what, const char *path, const char *fix,
	     struct wd_err *err)
{
	char real[PATH_MAX];
	if (!path || record_real(path, real, sizeof(real)) < 0)
		return 0; /* nothing to check: opening it fails later, with its own error */
	const char *in = NULL;
	if (spec->workspace && policy_path_within(real, spec->workspace))
		in = "the workspace";
	for (size_t i = 0; i < spec->nbinds && !in; i++) {
		char src[PATH_MAX];
		if (spec->binds[i].rw && realpath(spec->binds[i].src, src) &&
		    policy_path_within(real, src))
			in = "a writable --bind";
	}
	static const char *const host_rw[] = {"/tmp", "/dev/shm", NULL};
	uid_t uid = process_uid(spec);
	if (!in && backend_can(spec->isolation, BACKEND_CAP_HOST_TMP) &&
	    policy_path_exposed(real, host_rw, uid))
		in = "the host's /tmp or /dev/shm, writable by a process-level command,";
	if (!in)
		return 0;
	return wd_err_set(err, WD_E_INVAL, "%s %s is in %s where a sandbox could rewrite it; %s",
			  what, real, in, fix);
}

int
ctx_image_check(const wd_spec *spec, struct wd_err *err)
{
	return record_check(spec, "the image (WARDEN_IMAGE_DIR)", spec->image_root,
			    "keep the image store outside it (the next sandbox would run, and "
			    "the policy would judge, what this one wrote in its /usr)",
			    err);
}

int
ctx_records_check(wd_ctx *ctx, const wd_spec *spec, struct wd_err *err)
{
	/* Why (docs/threat-model.md, boundary 6): these are the human's
	 * records, which warden writes or reads again on the host after
	 * the sandbox has had its turn.  The audit chain has no key: a
	 * sandbox that can write the log rewrites it consistently and
	 * `warden audit verify` still passes.  The state directory holds
	 * sessions' layers and monitor.sock.  The policy file is loaded
	 * again for the re-decision after an approval (gate.c): one the
	 * sandbox wrote would judge every later command.  So none of them
	 * may lie where the sandbox writes: the workspace, a writable bind,
	 * or (process level) the host's /tmp and /dev/shm where the
	 * command's uid could write them.  Refused before anything runs. */
	pthread_mutex_lock(&ctx->audit_lock);
	char *audit = ctx->audit_path ? wd_xstrdup(ctx->audit_path) : NULL;
	pthread_mutex_unlock(&ctx->audit_lock);
	pthread_mutex_lock(&ctx->lock);
	char *state = ctx->state_dir ? wd_xstrdup(ctx->state_dir) : NULL;
	char *policy = ctx->policy_path ? wd_xstrdup(ctx->policy_path) : NULL;
	pthread_mutex_unlock(&ctx->lock);
	char *paudit = NULL;
	if (!audit && policy) {
		struct policy_ref *ref = ctx_policy_get(ctx, NULL);
		const char *a = ref ? wd_policy_audit_path(ref->p) : NULL;
		paudit = a ? wd_xstrdup(a) : NULL;
		if (ref)
			ctx_policy_put(ref);
	}
	int rc = record_check(spec, "--audit", audit,
			      "write the audit log outside it (the chain has no key: a "
			      "sandbox that writes it can rewrite it unnoticed)",
			      err);
	if (rc == 0)
		rc = record_check(spec, "the policy's audit.path", paudit,
				  "write the audit log outside it (the chain has no key: a "
				  "sandbox that writes it can rewrite it unnoticed)",
				  err);
	/* a built-in preset (preset:NAME) is no file: nothing to write */
	if (rc == 0 && !config_preset_name(policy))
		rc = record_check(spec, "--policy", policy,
				  "keep the policy outside it (it is loaded again after an "
				  "approval, and what the sandbox wrote would judge the next "
				  "command)",
				  err);
	/* The image's files (a store set by WARDEN_IMAGE_DIR may lie
	 * anywhere): the jail binds them read-only, but through the
	 * workspace or a writable bind the sandbox would write the /usr the
	 * next sandbox runs and the policy looks its programs up in (a
	 * `cat` that is the model's program, judged as cat).  For a caller
	 * who is not root the store is the sandbox's own uid's; as root the
	 * sandbox can still swap the store's directory in a workspace it
	 * owns. */
	if (rc == 0)
		rc = ctx_image_check(spec, err);
	if (rc == 0)
		rc = record_check(spec, "the state directory (wd_ctx_set_state_dir)", state,
				  "set it outside (a sandbox that writes it reaches other "
				  "sessions and their monitor)",
				  err);
	free(audit);
	free(paudit);
	free(state);
	free(policy);
	return rc;
}

WD_API int
wd_ctx_check_spec(wd_ctx *ctx, const wd_spec *spec, struct wd_err *err)
{
	CTX_ENTER(ctx);
	int rc = ctx_records_check(ctx, spec, err);
	CTX_LEAVE();
	return rc;
}
