/* core/ctx: the context: what outlives one sandbox. */
#include "core/core.h"
#include "audit/audit.h"
#include "util/json.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

static bool
ctx_wants(void *data, enum wd_event_kind kind)
{
	wd_ctx *ctx = data;
	/* output events cost a call per chunk: only when someone listens */
	if (kind == WD_EVENT_OUTPUT)
		return ctx->ev_fn && (ctx->ev_kinds & WD_EVENT_BIT(kind));
	return true;
}

static void
ctx_emit_hook(void *data, const struct wd_event *ev)
{
	ctx_emit(data, ev);
}

WD_API int
wd_ctx_new(wd_ctx **out, struct wd_err *err)
{
	wd_ctx *ctx = wd_xcalloc(1, sizeof(*ctx));
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->audit_lock, NULL);
	atomic_init(&ctx->cancel_sig, 0);
	atomic_init(&ctx->live, 0);
	/* level-triggered and never read: every command loop watches it */
	ctx->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->cancel_fd < 0) {
		int rc = wd_err_sys(err, errno, "eventfd");
		wd_ctx_free(ctx);
		return rc;
	}
	ctx->sink = (struct event_sink){ctx_emit_hook, ctx, ctx_wants};
	*out = ctx;
	return 0;
}

WD_API void
wd_ctx_free(wd_ctx *ctx)
{
	if (!ctx)
		return;
	if (atomic_load(&ctx->live) > 0)
		wd_log(WD_LOG_WARN, "wd_ctx_free: %d sandbox(es) not destroyed",
		       atomic_load(&ctx->live));
	keeper_stop(ctx->keeper);
	if (ctx->audit)
		audit_close(ctx->audit);
	free(ctx->audit_path);
	free(ctx->policy_path);
	free(ctx->state_dir);
	ctx_policy_put(ctx->policy);
	if (ctx->cancel_fd >= 0)
		close(ctx->cancel_fd);
	pthread_mutex_destroy(&ctx->audit_lock);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

const struct wd_log_sink *
ctx_log_enter(wd_ctx *ctx)
{
	return wd_log_enter(ctx && ctx->log_set ? &ctx->log : wd_log_tls);
}

WD_API void
wd_ctx_set_log_handler(wd_ctx *ctx, wd_log_fn fn, void *data, int level)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->log = (struct wd_log_sink){fn, data, level};
	ctx->log_set = true;
	pthread_mutex_unlock(&ctx->lock);
}

WD_API void
wd_ctx_set_event_handler(wd_ctx *ctx, wd_ctx_event_fn fn, void *data, unsigned kinds)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->ev_fn = fn;
	ctx->ev_data = data;
	ctx->ev_kinds = kinds;
	pthread_mutex_unlock(&ctx->lock);
}

WD_API void
wd_ctx_set_approver(wd_ctx *ctx, wd_approve_fn fn, void *data)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->approver = fn;
	ctx->approver_data = data;
	pthread_mutex_unlock(&ctx->lock);
}

static struct policy_ref *
ref_new(wd_policy *p)
{
	struct policy_ref *r = wd_xcalloc(1, sizeof(*r));
	r->p = p;
	atomic_init(&r->refs, 1);
	return r;
}

void
ctx_policy_put(struct policy_ref *ref)
{
	if (ref && atomic_fetch_sub(&ref->refs, 1) == 1) {
		if (!ref->borrowed)
			wd_policy_free(ref->p);
		free(ref);
	}
}

/* Replace the current policy (under ctx->lock). */
static void
set_policy(wd_ctx *ctx, wd_policy *p)
{
	ctx_policy_put(ctx->policy);
	ctx->policy = ref_new(p);
}

WD_API int
wd_ctx_set_policy_file(wd_ctx *ctx, const char *path, struct wd_err *err)
{
	wd_policy *p = NULL;
	int rc = wd_policy_load(path, &p, err);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ctx->lock);
	set_policy(ctx, p);
	free(ctx->policy_path);
	ctx->policy_path = path ? wd_xstrdup(path) : NULL;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

WD_API int
wd_ctx_set_policy(wd_ctx *ctx, const char *path, struct wd_policy *p, struct wd_err *err)
{
	if (!p)
		return wd_err_set(err, WD_E_INVAL, "wd_ctx_set_policy: no policy");
	pthread_mutex_lock(&ctx->lock);
	set_policy(ctx, p);
	/* the caller's: a reload after an approval puts the last reference
	 * without freeing it */
	ctx->policy->borrowed = true;
	free(ctx->policy_path);
	ctx->policy_path = path ? wd_xstrdup(path) : NULL;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

struct policy_ref *
ctx_policy_get(wd_ctx *ctx, struct wd_err *err)
{
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->policy) {
		wd_policy *p = NULL;
		if (wd_policy_load(ctx->policy_path, &p, err) == 0)
			ctx->policy = ref_new(p);
	}
	struct policy_ref *r = ctx->policy;
	if (r)
		atomic_fetch_add(&r->refs, 1);
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

/* The re-decision after an approval is made under the policy as it is
 * now: a file edited since the pause gives another id, and the command
 * pauses again. */
int
ctx_policy_reload(wd_ctx *ctx, struct wd_err *err)
{
	wd_policy *p = NULL;
	pthread_mutex_lock(&ctx->lock);
	int rc = wd_policy_load(ctx->policy_path, &p, err);
	if (rc == 0)
		set_policy(ctx, p);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

WD_API int
wd_ctx_set_audit_file(wd_ctx *ctx, const char *path, struct wd_err *err)
{
	struct audit_log *a = NULL;
	int rc = audit_open(path, &a, err);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&ctx->audit_lock);
	if (ctx->audit)
		audit_close(ctx->audit);
	ctx->audit = a;
	free(ctx->audit_path);
	ctx->audit_path = wd_xstrdup(path);
	pthread_mutex_unlock(&ctx->audit_lock);
	return 0;
}

int
ctx_audit_ready(wd_ctx *ctx, struct wd_err *err)
{
	pthread_mutex_lock(&ctx->audit_lock);
	bool have = ctx->audit != NULL;
	pthread_mutex_unlock(&ctx->audit_lock);
	if (have)
		return 0;
	struct policy_ref *p = ctx_policy_get(ctx, err);
	if (!p)
		return -EINVAL;
	const char *path = wd_policy_audit_path(p->p);
	int rc = path ? wd_ctx_set_audit_file(ctx, path, err) : 0;
	ctx_policy_put(p);
	return rc;
}

const char *
ctx_audit_path(wd_ctx *ctx)
{
	return ctx->audit_path;
}

struct keeper *
ctx_keeper(void *data, struct wd_err *err)
{
	wd_ctx *ctx = data;
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->keeper && keeper_start(&ctx->keeper, err) < 0)
		ctx->keeper = NULL;
	struct keeper *k = ctx->keeper;
	pthread_mutex_unlock(&ctx->lock);
	return k;
}

WD_API void
wd_ctx_cancel(wd_ctx *ctx, int signo)
{
	/* async-signal-safe: an atomic store and a write */
	int expected = 0;
	atomic_compare_exchange_strong(&ctx->cancel_sig, &expected, signo > 0 ? signo : SIGKILL);
	uint64_t one = 1;
	if (ctx->cancel_fd >= 0)
		(void)!write(ctx->cancel_fd, &one, sizeof(one));
}

/* ---- the fan-out ---- */

static int
to_audit(wd_ctx *ctx, const struct wd_event *ev, struct wd_err *err)
{
	int rc = 0;
	pthread_mutex_lock(&ctx->audit_lock);
	if (ctx->audit) {
		struct jw w;
		jw_init(&w, JW_ASCII);
		event_write_members(&w, ev, true);
		rc = audit_append_text(ctx->audit, ev->sandbox_id, w.p ? w.p : "", err);
		jw_fini(&w);
	}
	pthread_mutex_unlock(&ctx->audit_lock);
	return rc < 0 ? rc : 0;
}

/* The audit trail records what was decided and what ran: decisions,
 * approvals, routes, network requests and results, and the changes made
 * to a session's settings (warden update: a sandbox event with fields).
 * A sandbox's lifecycle and its output go to callbacks and the log only
 * (output can hold file contents and secrets). */
static bool
audited(const struct wd_event *ev)
{
	return ev->kind != WD_EVENT_OUTPUT && (ev->kind != WD_EVENT_SANDBOX || ev->fields);
}

int
ctx_emit_checked(wd_ctx *ctx, const struct wd_event *ev, struct wd_err *err)
{
	int rc = 0;
	if (audited(ev))
		rc = to_audit(ctx, ev, err);
	pthread_mutex_lock(&ctx->lock);
	wd_ctx_event_fn fn = ctx->ev_fn;
	void *data = ctx->ev_data;
	bool want = fn && (ctx->ev_kinds & WD_EVENT_BIT(ev->kind));
	pthread_mutex_unlock(&ctx->lock);
	if (want)
		fn(ev, data);
	if (ev->kind != WD_EVENT_OUTPUT)
		wd_log(WD_LOG_DEBUG, "event %s: sandbox %s%s%s", ev->name, ev->sandbox_id,
		       ev->detail ? ": " : "", ev->detail ? ev->detail : "");
	return rc;
}

void
ctx_emit(wd_ctx *ctx, const struct wd_event *ev)
{
	struct wd_err e = {0};
	if (ctx_emit_checked(ctx, ev, &e) < 0)
		wd_log(WD_LOG_ERROR, "audit: %s", e.msg);
}
