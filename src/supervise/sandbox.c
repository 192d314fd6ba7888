/* supervise/sandbox: the sandbox object over its backend: create (prepare
 * + spawn), wait until ready, run commands, cancel, destroy. */
#include "supervise/supervise.h"
#include "spec/spec.h"
#include "cgroup/cgroup.h"
#include "jail/jail.h"
#include "net/net.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/random.h>

void
sandbox_make_id(char out[17])
{
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t t = wd_now_ns() ^ ((uint64_t)getpid() << 32);
		memcpy(r, &t, sizeof(r));
	}
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

void
sandbox_event(struct sandbox *sb, const char *what, const char *detail)
{
	char name[48];
	snprintf(name, sizeof(name), "sandbox.%s", what);
	struct wd_event e = {
	    .kind = WD_EVENT_SANDBOX, .name = name, .sandbox_id = sb->id, .detail = detail};
	event_emit(sb->events, &e);
}

/* The image's directory (the rootfs's parent), locked shared for the
 * sandbox's life: wd_image_remove() takes the lock exclusively and refuses
 * while it cannot, so the /usr of a running program is never deleted. */
static int
hold_image(struct sandbox *sb, struct wd_err *err)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", sb->spec->image_root);
	char *s = strrchr(dir, '/');
	if (s)
		*s = '\0';
	sb->image_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sb->image_fd < 0)
		return wd_err_sys(err, errno, "image %s", sb->spec->image);
	if (flock(sb->image_fd, LOCK_SH | LOCK_NB) < 0)
		return wd_err_set(err, WD_E_INVAL, "image %s is being removed", sb->spec->image);
	return 0;
}

int
sandbox_new(const wd_spec *spec, const char *id, const struct event_sink *events,
	    struct sandbox **out, struct wd_err *err)
{
	const struct backend_ops *ops = backend_for(spec->isolation);
	if (!ops)
		return wd_err_set(err, WD_E_INVAL, "unknown isolation level %d",
				  (int)spec->isolation);
	/* An image replaces the /usr and /etc of the jail plan, which the
	 * container level executes and the gVisor level turns into its OCI
	 * bundle's root; the process level has no root of its own: refused
	 * rather than run on the host's /usr while the caller believes it
	 * chose an environment. */
	if (spec->image_root && spec->isolation == WD_ISOLATION_PROCESS)
		return wd_err_set(err, WD_E_INVAL,
				  "--image needs --isolation container or gvisor (the process "
				  "level has no root of its own)");
	struct sandbox *sb = wd_xcalloc(1, sizeof(*sb));
	pthread_mutex_init(&sb->ref_lock, NULL);
	sb->image_fd = -1;
	sb->t0 = wd_now_ns();
	if (id)
		snprintf(sb->id, sizeof(sb->id), "%s", id);
	else
		sandbox_make_id(sb->id);
	sb->ops = ops;
	sb->spec = spec_copy(spec);
	sb->events = events;
	sb->pidfd = -1;
	sb->chan.fd = -1;
	if (spec->image_root) {
		int rc = hold_image(sb, err);
		if (rc < 0) {
			sandbox_free(sb);
			return rc;
		}
	}
	pthread_mutex_init(&sb->lock, NULL);
	atomic_init(&sb->cancel_sig, 0);
	/* level-triggered and never read: once cancelled, every loop that
	 * watches it sees it */
	sb->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (sb->cancel_fd < 0) {
		int rc = wd_err_sys(err, errno, "eventfd");
		sandbox_free(sb);
		return rc;
	}
	int rc = ops->prepare(sb, err);
	if (rc < 0) {
		confine_hint(spec, rc, err);
		sandbox_free(sb);
		return rc;
	}
	*out = sb;
	return 0;
}

int
sandbox_start(struct sandbox *sb, struct wd_err *err)
{
	int rc = sb->ops->spawn(sb, err);
	if (rc < 0) {
		confine_hint(sb->spec, rc, err);
		return rc;
	}
	sandbox_event(sb, "created", sb->ops->name);
	return 0;
}

int
sandbox_wait_ready(struct sandbox *sb, struct wd_err *err)
{
	int rc = sb->ops->ready(sb, err);
	if (rc == 0)
		sandbox_event(sb, "ready", NULL);
	return rc;
}

int
sandbox_freeze(struct sandbox *sb, bool on, struct wd_err *err)
{
	pthread_mutex_lock(&sb->lock);
	int rc = 0, how = atomic_load(&sb->review_frozen);
	if (on != (how != 0)) {
		rc = cgroup_freeze(sb->cg, on, &how);
		if (rc < 0)
			wd_err_sys(err, -rc, "%s sandbox %s", on ? "freeze" : "thaw", sb->id);
		atomic_store(&sb->review_frozen, how);
	}
	pthread_mutex_unlock(&sb->lock);
	return rc;
}

int
sandbox_update(struct sandbox *sb, const struct wd_limits *lim, struct net_rules *rules,
	       unsigned *applied, struct wd_err *err)
{
	*applied = 0;
	struct cgroup_limits cl = {lim ? lim->memory_bytes : 0, lim ? lim->pids : 0,
				   lim ? lim->cpu_millionths : 0};
	bool limits = sb->cg && (cl.memory_bytes || cl.pids || cl.cpu_millionths);
	pthread_mutex_lock(&sb->lock);
	int rc = 0;
	/* checked first, so that nothing is changed when the rules are refused */
	if (rules && sb->proxy && sb->spec->secrets)
		rc = net_secrets_check(sb->spec->secrets, rules, sb->spec->tls_intercept, err);
	if (rc == 0 && limits && (rc = cgroup_update_limits(sb->cg, &cl, err)) < 0 &&
	    rc != -EBUSY) {
		/* a write failed part way: the limits it started from again
		 * (all or nothing) */
		struct cgroup_limits old = {sb->spec->lim.memory_bytes, sb->spec->lim.pids,
					    sb->spec->lim.cpu_millionths};
		struct wd_err e2 = {0};
		if (cgroup_update_limits(sb->cg, &old, &e2) < 0)
			wd_log(WD_LOG_WARN, "sandbox %s: the old limits not restored: %s", sb->id,
			       e2.msg);
	}
	if (rc == 0 && limits) {
		*applied |= SANDBOX_UPDATED_LIMITS;
		if (cl.memory_bytes)
			sb->spec->lim.memory_bytes = cl.memory_bytes;
		if (cl.pids)
			sb->spec->lim.pids = cl.pids;
		if (cl.cpu_millionths)
			sb->spec->lim.cpu_millionths = cl.cpu_millionths;
	}
	/* cannot fail now: the same check passed above */
	if (rc == 0 && rules && sb->proxy && (rc = net_proxy_set_rules(sb->proxy, rules, err)) == 0)
		*applied |= SANDBOX_UPDATED_RULES;
	pthread_mutex_unlock(&sb->lock);
	return rc;
}

int
sandbox_exec(struct sandbox *sb, const struct exec_req *x, wd_result **out, struct wd_err *err)
{
	/* a new command ends a review: the processes run again (an apply
	 * after it checks the set against its digest, --expect) */
	if (atomic_load(&sb->review_frozen))
		sandbox_freeze(sb, false, NULL);
	uint64_t mark = sandbox_refusal_mark(sb);
	int rc = sb->ops->exec(sb, x, out, err);
	if (rc == 0 && *out)
		sandbox_refusals_collect(sb, mark, *out);
	return rc;
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

void
sandbox_note_refusal(struct sandbox *sb, const struct net_event *ev)
{
	const char *reason = ev->reason ? net_reason_name(ev->reason) : "refused";
	const char *proto = net_proto_name(ev->proto);
	/* a DNS event's port is the query type: A and AAAA for one name are
	 * one refusal */
	unsigned port = ev->proto == NET_PROTO_DNS ? 0 : ev->port;
	const char *host = ev->host ? ev->host : "";
	pthread_mutex_lock(&sb->ref_lock);
	uint64_t seq = ++sb->ref_seq;
	struct net_refusal *f = NULL;
	for (size_t i = 0; i < sb->nrefs && !f; i++) {
		struct net_refusal *g = &sb->refs[i];
		if (g->port == port && !strcmp(g->proto, proto) && !strcmp(g->reason, reason) &&
		    !strcmp(g->host, host) && same_str(g->rule, ev->rule))
			f = g;
	}
	if (!f) {
		if (sb->nrefs < NET_REFUSALS_MAX) {
			f = &sb->refs[sb->nrefs++];
		} else {
			/* bounded: the least recent gives way (a sandbox that
			 * tries 10,000 hosts costs 16 entries) */
			f = &sb->refs[0];
			for (size_t i = 1; i < sb->nrefs; i++)
				if (sb->refs[i].seq < f->seq)
					f = &sb->refs[i];
			if (f->seq > sb->ref_evicted_seq)
				sb->ref_evicted_seq = f->seq;
			net_refusal_fini(f);
		}
		f->host = wd_xstrdup(host);
		f->rule = ev->rule ? wd_xstrdup(ev->rule) : NULL;
		f->advice = ev->advice && ev->advice[0] ? wd_xstrdup(ev->advice) : NULL;
		snprintf(f->proto, sizeof(f->proto), "%s", proto);
		snprintf(f->reason, sizeof(f->reason), "%s", reason);
		f->port = port;
	}
	f->count++;
	f->seq = seq;
	pthread_mutex_unlock(&sb->ref_lock);
}

uint64_t
sandbox_refusal_mark(struct sandbox *sb)
{
	pthread_mutex_lock(&sb->ref_lock);
	uint64_t m = sb->ref_seq;
	pthread_mutex_unlock(&sb->ref_lock);
	return m;
}

static int
cmp_refusal(const void *a, const void *b)
{
	const struct net_refusal *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void
sandbox_refusals_collect(struct sandbox *sb, uint64_t mark, wd_result *r)
{
	pthread_mutex_lock(&sb->ref_lock);
	size_t n = 0;
	for (size_t i = 0; i < sb->nrefs; i++)
		n += sb->refs[i].seq > mark;
	if (n) {
		r->net_refusals = wd_xcalloc(n, sizeof(*r->net_refusals));
		for (size_t i = 0; i < sb->nrefs; i++) {
			const struct net_refusal *g = &sb->refs[i];
			if (g->seq <= mark)
				continue;
			struct net_refusal *f = &r->net_refusals[r->n_net_refusals++];
			*f = *g;
			f->host = wd_xstrdup(g->host);
			f->rule = g->rule ? wd_xstrdup(g->rule) : NULL;
			f->advice = g->advice ? wd_xstrdup(g->advice) : NULL;
		}
		/* in the order they last happened */
		qsort(r->net_refusals, r->n_net_refusals, sizeof(*r->net_refusals), cmp_refusal);
	}
	/* some of this command's were pushed out by later ones */
	r->net_refusals_more = sb->ref_evicted_seq > mark;
	pthread_mutex_unlock(&sb->ref_lock);
	result_refusal_lines(r);
}

void
sandbox_describe_net(struct sandbox *sb, wd_result *r)
{
	struct net_stats ns = {0};
	if (sb->proxy)
		net_proxy_stats(sb->proxy, &ns);
	r->net_proxy = sb->proxy != NULL;
	r->tls_intercept = sb->proxy && sb->spec->tls_intercept;
	r->net_requests = ns.requests;
	r->net_refused = ns.refused;
	r->net_dns = ns.dns_queries;
	r->net_bytes = ns.bytes_total;
}

bool
sandbox_release_host(struct sandbox *sb)
{
	if (sb->proxy) {
		net_proxy_stop(sb->proxy);
		net_proxy_free(sb->proxy);
		sb->proxy = NULL;
	}
	net_rules_free(sb->own_rules);
	sb->own_rules = NULL;
	if (!sb->cg)
		return false;
	/* killed again: whatever escaped the backend's own end (a process
	 * level command's orphan) has no namespace to die with */
	cgroup_kill(sb->cg);
	cgroup_destroy(sb->cg);
	keeper_release(sb->keeper, cgroup_dirs(sb->cg));
	cgroup_free(sb->cg);
	sb->cg = NULL;
	return true;
}

int
sandbox_attach(struct sandbox *sb, int tree_fd, struct wd_err *err)
{
	if (!sb->ops->attach) {
		return wd_err_set(err, WD_E_UNSUPPORTED,
				  "a workspace cannot be attached to a %s sandbox", sb->ops->name);
	}
	return sb->ops->attach(sb, tree_fd, err);
}

void
sandbox_cancel(struct sandbox *sb, int signo)
{
	/* async-signal-safe: an atomic store and a write */
	int expected = 0;
	atomic_compare_exchange_strong(&sb->cancel_sig, &expected, signo > 0 ? signo : SIGKILL);
	uint64_t one = 1;
	if (sb->cancel_fd >= 0)
		(void)!write(sb->cancel_fd, &one, sizeof(one));
}

void
sandbox_free(struct sandbox *sb)
{
	if (!sb)
		return;
	bool started = sb->state != SB_NEW;
	if (atomic_load(&sb->review_frozen)) /* its end must not wait on frozen processes */
		sandbox_freeze(sb, false, NULL);
	if (sb->ops)
		sb->ops->destroy(sb);
	if (started)
		sandbox_event(sb, "destroyed", NULL);
	if (sb->cancel_fd >= 0)
		close(sb->cancel_fd);
	pthread_mutex_destroy(&sb->lock);
	for (size_t i = 0; i < sb->nrefs; i++)
		net_refusal_fini(&sb->refs[i]);
	pthread_mutex_destroy(&sb->ref_lock);
	if (sb->image_fd >= 0)
		close(sb->image_fd);
	wd_spec_free(sb->spec);
	free(sb);
}
