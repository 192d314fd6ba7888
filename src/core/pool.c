/* core/pool: the warm pool.
 *
 * Sandboxes built ahead from a template, without a workspace (a vacant
 * plan: /workspace is an empty mount point, pid 1 waits in the sync
 * protocol's VACANT state with its capabilities; at the gvisor level the
 * resident executor waits for GVW_ATTACH, supervise/gvisor.c).  A command
 * takes one:
 *
 *   take      the first ready instance leaves the pool (under the lock);
 *             a builder is woken to replace it
 *   attach    the workspace as a detached tree (an idmapped clone of the
 *             directory, made here) goes to pid 1 in SYNC_ATTACH; pid 1
 *             moves it onto /workspace, protects its paths, drops its
 *             capabilities
 *   exec      the command, SYNC_EXEC_LAST, pipelined behind the attach
 *   destroy   pid 1 exits with the command, the pid namespace with it;
 *             the cgroup is removed
 *
 * An instance is owned by the pool or by exactly one run, never both, and
 * a run always destroys what it took: no path hands an instance out twice
 * (tests/integration/pool_reuse.c plants a file and a process in each of
 * 1,000 runs and finds neither in the next).
 *
 * Builders: threads of the pool, one per CPU (at most size), each building
 * one instance at a time while fewer than size are ready or building. */
#include "core/core.h"
#include "jail/jail.h"
#include "workspace/workspace.h"

#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#define POOL_MAX 64

struct wd_pool {
	wd_ctx *ctx;
	wd_spec *tmpl; /* vacant */
	unsigned size;
	pthread_mutex_t lock;
	pthread_cond_t more; /* an instance is ready (or the pool stops) */
	pthread_cond_t room; /* a slot is free (or the pool stops) */
	struct sandbox *ready[POOL_MAX];
	unsigned nready, building;
	unsigned taken_out; /* taken, their run not over: not replaced yet */
	bool stopping;
	pthread_t builders[POOL_MAX];
	unsigned nbuilders;
	/* used instances, destroyed off the caller's path: the namespace's
	 * teardown (an RCU grace period for the mount namespace) and the
	 * cgroup's removal cost milliseconds nobody waits for */
	pthread_cond_t dead;
	struct sandbox **reap;
	size_t nreap, capreap;
	pthread_t reaper;
	bool reaper_started;
	/* the idmapping of workspaces: one user namespace per owner */
	pthread_mutex_t idmap_lock;
	struct jail_idmap_cache idmap; /* the idmapping's namespace, per owner */
	struct wd_pool_stats st;
};

static int
build_one(wd_pool *p, struct sandbox **out, struct wd_err *err)
{
	struct sandbox *sb = NULL;
	int rc = sandbox_new(p->tmpl, NULL, &p->ctx->sink, &sb, err);
	if (rc == 0) {
		sb->get_keeper = ctx_keeper;
		sb->keeper_data = p->ctx;
		rc = sandbox_start(sb, err);
	}
	if (rc == 0)
		rc = sandbox_wait_ready(sb, err);
	if (rc == 0 && !sb->vacant)
		rc = wd_err_set(err, WD_E_INTERNAL, "a pool instance came up with a workspace");
	if (rc < 0) {
		sandbox_free(sb);
		return rc;
	}
	*out = sb;
	return 0;
}

static void *
builder(void *arg)
{
	wd_pool *p = arg;
	CTX_ENTER(p->ctx);
	unsigned failures = 0;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stopping && p->nready + p->building + p->taken_out >= p->size)
			pthread_cond_wait(&p->room, &p->lock);
		if (p->stopping)
			break;
		p->building++;
		pthread_mutex_unlock(&p->lock);
		struct wd_err e = {0};
		struct sandbox *sb = NULL;
		uint64_t t0 = wd_now_ns();
		int rc = build_one(p, &sb, &e);
		uint64_t dt = wd_now_ns() - t0;
		if (rc < 0) {
			wd_log(WD_LOG_WARN, "pool: building an instance failed: %s", e.msg);
			/* a host that cannot build now (out of pids, memory): do
			 * not spin; back off up to a second */
			struct timespec ts = {0,
					      (long)(failures < 10 ? failures : 10) * 100000000L};
			failures++;
			nanosleep(&ts, NULL);
		} else {
			failures = 0;
		}
		pthread_mutex_lock(&p->lock);
		p->building--;
		p->st.build_ns += dt;
		if (rc < 0) {
			p->st.failed++;
		} else if (p->stopping) {
			pthread_mutex_unlock(&p->lock);
			sandbox_free(sb);
			pthread_mutex_lock(&p->lock);
		} else {
			p->ready[p->nready++] = sb;
			p->st.built++;
			pthread_cond_signal(&p->more);
		}
	}
	pthread_mutex_unlock(&p->lock);
	CTX_LEAVE();
	return NULL;
}

static void *reaper(void *arg);

WD_API int
wd_pool_new(wd_ctx *ctx, const wd_spec *tmpl, unsigned size, wd_pool **out, struct wd_err *err)
{
	if (size < 1 || size > POOL_MAX)
		return wd_err_set(err, WD_E_INVAL, "pool size must be from 1 to %d", POOL_MAX);
	if (!backend_can(tmpl->isolation, BACKEND_CAP_POOL) || geteuid() != 0) {
		return wd_err_set(err, WD_E_UNSUPPORTED,
				  "the warm pool needs --isolation container or gvisor, as root "
				  "(the workspace is a detached clone of the directory, which "
				  "needs CAP_SYS_ADMIN on the host)");
	}
	if (tmpl->ws_mode == WD_WORKSPACE_COW) {
		return wd_err_set(err, WD_E_UNSUPPORTED,
				  "the warm pool attaches direct workspaces only");
	}
	wd_pool *p = wd_xcalloc(1, sizeof(*p));
	p->ctx = ctx;
	p->tmpl = spec_copy(tmpl);
	p->tmpl->vacant = true;
	p->size = size;
	p->idmap = (struct jail_idmap_cache)JAIL_IDMAP_CACHE_INIT;
	p->st.size = size;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->idmap_lock, NULL);
	pthread_cond_init(&p->more, NULL);
	pthread_cond_init(&p->room, NULL);
	pthread_cond_init(&p->dead, NULL);
	/* the template must plan: bad input now, not in every builder */
	struct sandbox *probe = NULL;
	int rc = sandbox_new(p->tmpl, NULL, NULL, &probe, err);
	sandbox_free(probe);
	if (rc < 0) {
		wd_pool_free(p);
		return rc;
	}
	/* The pool's threads take no signal: they inherit the mask they are
	 * created with, and an embedder that blocks SIGTERM on its own threads
	 * to read it from a signalfd (warden serve) would otherwise see the
	 * process killed by a signal delivered to a builder. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	p->reaper_started = pthread_create(&p->reaper, NULL, reaper, p) == 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nb = ncpu > 0 ? (unsigned)ncpu : 1;
	if (nb > size)
		nb = size;
	for (unsigned i = 0; p->reaper_started && i < nb; i++) {
		if (pthread_create(&p->builders[p->nbuilders], NULL, builder, p) != 0)
			break;
		p->nbuilders++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!p->reaper_started) {
		wd_pool_free(p);
		return wd_err_set(err, WD_E_SYS, "cannot start the pool's reaper");
	}
	if (p->nbuilders == 0) {
		wd_pool_free(p);
		return wd_err_set(err, WD_E_SYS, "cannot start the pool's builders");
	}
	*out = p;
	return 0;
}

/* The workspace as a detached tree for pid 1: an idmapped clone (its
 * owner appears as the sandbox user, as for a direct workspace), nosuid,
 * nodev, private.  The idmapping's user namespace is made once per owner. */
static int
workspace_tree(wd_pool *p, const char *dir, bool *idmapped, struct wd_err *err)
{
	/* No link followed anywhere on the way, not only at the last
	 * component: dir is canonical (realpath in pooled_prepare, before the
	 * wait for an instance), so a link in it now was planted since by a
	 * sandbox writing a directory above, and followed it would bind the
	 * host directory it names read-write as /workspace */
	wd_autoclose int fd = jail_open_nofollow(dir);
	struct stat st;
	if (fd == -ELOOP)
		return wd_err_set(err, WD_E_INVAL,
				  "workspace '%s': a symbolic link in its path appeared after the "
				  "run was asked for; refused rather than followed",
				  dir);
	if (fd < 0)
		return wd_err_sys(err, -fd, "workspace '%s'", dir);
	if (fstat(fd, &st) < 0)
		return wd_err_sys(err, errno, "workspace '%s'", dir);
	if (!S_ISDIR(st.st_mode))
		return wd_err_set(err, WD_E_INVAL, "workspace '%s' is not a directory", dir);
	/* the owner as the level's sandbox user (backend_ops.attach_uid) */
	const struct backend_ops *ops = backend_for(p->tmpl->isolation);
	struct jail_idmap map = {ops->attach_uid, ops->attach_uid, ops->attach_root_creates};
	pthread_mutex_lock(&p->idmap_lock);
	int t = jail_idmapped_tree(fd, &st, &map, &p->idmap, err);
	pthread_mutex_unlock(&p->idmap_lock);
	*idmapped = t >= 0;
	if (t >= 0 || (t != -EINVAL && t != -ENOSYS && t != -EPERM))
		return t;
	/* a file system that cannot be idmapped: a plain clone, as a direct
	 * workspace gets (jail/build.c) */
	wd_autofree char *what = wd_xasprintf("workspace '%s'", dir);
	return jail_clone_tree(fd, what, err);
}

static void *
reaper(void *arg)
{
	wd_pool *p = arg;
	CTX_ENTER(p->ctx);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stopping && p->nreap == 0)
			pthread_cond_wait(&p->dead, &p->lock);
		if (p->nreap == 0 && p->stopping)
			break;
		struct sandbox *sb = p->reap[--p->nreap];
		pthread_mutex_unlock(&p->lock);
		sandbox_free(sb);
		pthread_mutex_lock(&p->lock);
		pthread_cond_broadcast(&p->dead); /* wd_pool_free may wait for the last */
	}
	pthread_mutex_unlock(&p->lock);
	CTX_LEAVE();
	return NULL;
}

/* A used (or refused) instance: destroyed by the reaper, never handed out
 * again (it is in no list take() reads). */
static void
discard_instance(wd_pool *p, struct sandbox *sb)
{
	if (!sb)
		return;
	pthread_mutex_lock(&p->lock);
	/* the replacement is built now, after the command: building while it
	 * runs would compete with it for the CPUs and the kernel's mount
	 * locks (namespace_sem) */
	p->taken_out--;
	pthread_cond_signal(&p->room);
	if (p->nreap == p->capreap) {
		p->capreap = p->capreap ? p->capreap * 2 : 16;
		p->reap = wd_xrealloc(p->reap, p->capreap * sizeof(*p->reap));
	}
	p->reap[p->nreap++] = sb;
	pthread_cond_broadcast(&p->dead);
	pthread_mutex_unlock(&p->lock);
}

/* Is fd (an eventfd or pipe end) readable now?  -1 is never. */
static bool
fd_ready(int fd)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	return fd >= 0 && poll(&pf, 1, 0) == 1;
}

/* The first ready instance, waiting for one when none is.  The wait ends
 * early when the pool stops or the command is cancelled (the context's
 * wd_ctx_cancel() or the command's wd_cmd_set_cancel_fd()): a cancelled
 * call must not sit here until a builder finishes (tens of milliseconds,
 * or never on a host that has stopped being able to build), so the wait
 * is in slices of 20 ms with a look at both descriptors between them.
 * NULL with *cancelled set, or NULL when the pool is stopping. */
static struct sandbox *
take(wd_pool *p, const wd_cmd *cmd, bool *waited, bool *cancelled)
{
	pthread_mutex_lock(&p->lock);
	*waited = p->nready == 0;
	*cancelled = false;
	while (!p->stopping && p->nready == 0) {
		if (fd_ready(cmd->cancel_fd) || atomic_load(&p->ctx->cancel_sig)) {
			*cancelled = true;
			break;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->more, &p->lock, &ts);
	}
	struct sandbox *sb = NULL;
	if (p->nready && !*cancelled) {
		sb = p->ready[0];
		memmove(p->ready, p->ready + 1, (p->nready - 1) * sizeof(p->ready[0]));
		p->ready[--p->nready] = NULL;
		p->st.taken++;
		p->st.waited += *waited;
		p->taken_out++;
	}
	pthread_mutex_unlock(&p->lock);
	return sb;
}

/* Does the sandbox the policy stage asks for (eff: the template with the
 * policy's sandbox and network objects and the tool's profile applied)
 * match the instances, which were built from the template alone?  The
 * cgroup's limits, /tmp's size, the isolation level, the protected paths,
 * egress and the environment are fixed when an instance is built, so a
 * run whose policy wants other values must not get one: it would run
 * with looser limits than the policy says, or without its protected
 * paths.  The image is in the comparison too (spec_to_json writes its
 * digest): an instance of one image never runs a command judged in
 * another's /usr.  The timeout and the output bound are the command's own
 * (pipeline.c), so they may differ. */
static bool
template_fits(const wd_spec *tmpl, const wd_spec *eff)
{
	if (eff->secrets != tmpl->secrets)
		return false;
	json_t *a = spec_to_json(tmpl), *b = spec_to_json(eff);
	json_t *objs[] = {a, b};
	for (size_t i = 0; i < WD_ARRAY_SIZE(objs); i++) {
		json_object_del(objs[i], "workspace");
		json_t *lim = json_object_get(objs[i], "limits");
		json_object_del(lim, "timeout_ms");
		json_object_del(lim, "output");
	}
	bool same = json_equal(a, b);
	json_decref(a);
	json_decref(b);
	return same;
}

/* ---- pooled: a ready instance, the workspace attached, one command ---- */

struct pooled {
	wd_pool *pool;
	const char *workspace;
	wd_spec *spec; /* the template with this run's workspace */
	struct sandbox *sb;
	int tree;
};

static int
pooled_prepare(struct door *d, struct wd_err *err)
{
	struct pooled *q = d->p;
	bool waited, cancelled;
	q->spec = spec_copy(q->pool->tmpl);
	/* the same rule as any workspace's (no system directory, no home) */
	int rc = wd_spec_set_workspace(q->spec, q->workspace ? q->workspace : ".", err);
	if (rc < 0)
		return rc;
	if (!(q->sb = take(q->pool, d->cmd, &waited, &cancelled))) {
		if (!cancelled)
			return wd_err_set(err, WD_E_INVAL, "the pool is stopping");
		wd_err_set(err, WD_E_INVAL, "cancelled while waiting for a pooled sandbox");
		return -ECANCELED;
	}
	snprintf(d->id, sizeof(d->id), "%s", q->sb->id);
	d->spec = q->spec;
	return 0;
}

static int
pooled_acquire(struct door *d, struct wd_err *err)
{
	struct pooled *q = d->p;
	int rc = pipeline_net_fits(d, q->spec, "pool", err);
	if (rc < 0)
		return rc;
	/* fail closed: the policy (sandbox limits, workspace.protect, network,
	 * secrets) or the tool's profile asks for a sandbox other than the
	 * ones this pool holds; a caller that wants it should run such a
	 * command with wd_ctx_run() (warden serve decides before it calls) */
	if (d->g.spec && !template_fits(q->pool->tmpl, d->g.spec))
		return wd_err_set(err, WD_E_INVAL,
				  "the policy or the tool's profile asks for a sandbox other than "
				  "the pool's (limits, protected paths, network, secrets or "
				  "image); nothing ran");
	d->sb = q->sb;
	wd_log(WD_LOG_DEBUG, "pool: sandbox %s taken", q->sb->id);
	return 0;
}

static int
pooled_exec(struct door *d, wd_result **r, struct wd_err *err)
{
	struct pooled *q = d->p;
	bool idmapped = false;
	int rc = q->tree = workspace_tree(q->pool, q->spec->workspace, &idmapped, err);
	if (rc < 0)
		return rc;
	wd_log(WD_LOG_DEBUG, "pool: sandbox %s: workspace tree made", q->sb->id);
	/* the workspace, then the command right behind it */
	if ((rc = sandbox_attach(q->sb, q->tree, err)) < 0 ||
	    (rc = sandbox_exec(q->sb, &d->x, r, err)) < 0)
		return rc;
	/* the template was planned without a workspace: what the result
	 * reports is the tree this run attached */
	(*r)->idmapped = idmapped;
	return 0;
}

static void
pooled_release(struct door *d)
{
	struct pooled *q = d->p;
	if (q->tree >= 0)
		close(q->tree);
	discard_instance(q->pool, q->sb); /* used (or refused): never back into the pool */
	wd_spec_free(q->spec);
}

static const struct placement pooled = {
    .name = "pooled",
    .exec_flags = SYNC_EXEC_LAST,
    .prepare = pooled_prepare,
    .acquire = pooled_acquire,
    .exec = pooled_exec,
    .release = pooled_release,
};

WD_API int
wd_pool_run(wd_pool *p, const char *workspace, const wd_cmd *cmd, wd_result **out,
	    struct wd_err *err)
{
	struct pooled q = {.pool = p, .workspace = workspace, .tree = -1};
	return pipeline_run(p->ctx, &pooled, &q, cmd, out, err);
}

WD_API void
wd_pool_stats(wd_pool *p, struct wd_pool_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	out->ready = p->nready;
	pthread_mutex_unlock(&p->lock);
}

WD_API void
wd_pool_free(wd_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->room);
	pthread_cond_broadcast(&p->more);
	pthread_cond_broadcast(&p->dead);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nbuilders; i++)
		pthread_join(p->builders[i], NULL);
	if (p->reaper_started)
		pthread_join(p->reaper, NULL); /* after it destroyed every used one */
	CTX_ENTER(p->ctx);
	for (unsigned i = 0; i < p->nready; i++)
		sandbox_free(p->ready[i]);
	CTX_LEAVE();
	if (p->idmap.userns >= 0)
		close(p->idmap.userns);
	jail_idmap_reap(&p->idmap);
	wd_spec_free(p->tmpl);
	free(p->reap);
	pthread_cond_destroy(&p->dead);
	pthread_cond_destroy(&p->more);
	pthread_cond_destroy(&p->room);
	pthread_mutex_destroy(&p->idmap_lock);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
