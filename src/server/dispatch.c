/* server/dispatch: peers, calls and the worker pool.
 *
 * A text from a peer is parsed (rpc.c); each request becomes a call:
 *
 *   method lookup -> -32601          channel rules -> -32002 / -32003
 *   duplicate id in flight -> -32004 params not an object -> -32602
 *   M_LIVE: params.sandbox names a live sandbox of this peer -> -32001
 *     (M_ANY_PEER: on the human's channel, of any peer)
 *   tools/call: its arguments' sandbox, if this peer has it (session.c)
 *   M_INLINE: answered now, on the loop thread
 *   else: queued for a worker (-32005 when the queue is full)
 *
 * A worker runs the method, and posts the answer (and notifications on
 * the way) to the out-queue; the loop delivers it where the peer reads:
 * its line connection, or the HTTP exchange the request came in.
 *
 * Cancellation (notifications/cancelled): a queued call is dropped; a
 * running one is marked, and the sandbox it runs in is killed
 * (wd_sandbox_cancel), which ends the command at once.  MCP says a
 * cancelled request gets no answer; a harness gets -32800. */
#include "server/dispatch.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/srv.h"
#include "server/conn.h"
#include "server/sandbox.h"
#include "server/run.h"
#include "server/mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

static _Thread_local struct call *tls_call;

struct call *
call_current(void)
{
	return tls_call;
}

int
rpc_err_set(struct rpc_err *e, int code, const char *fmt, ...)
{
	va_list ap;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- batches on line transports: one array answers one array ---- */
struct batchcol {
	int pending;
	json_t *answers;
	struct peer *p;
};

static void
col_answer(struct srv *s, struct batchcol *col, json_t *msg)
{
	if (msg)
		json_array_append(col->answers, msg);
	if (--col->pending > 0)
		return;
	if (json_array_size(col->answers) && col->p->conn) {
		size_t n;
		char *t = rpc_dump(col->answers, &n);
		conn_send_line(col->p->conn, t, n, false);
		free(t);
	}
	json_decref(col->answers);
	peer_put(col->p);
	free(col);
	(void)s;
}

/* ---- peers ---- */

struct peer *
peer_new(struct srv *s, enum transport kind)
{
	struct peer *p = xcalloc(1, sizeof(*p));
	p->srv = s;
	p->kind = kind;
	p->refs = 1;
	p->last_ns = now_ns();
	p->seq = atomic_fetch_add(&s->seq, 1) + 1;
	p->next = s->peers;
	if (s->peers)
		s->peers->prev = p;
	s->peers = p;
	return p;
}

void
peer_put(struct peer *p)
{
	if (!p || --p->refs > 0)
		return;
	struct srv *s = p->srv;
	if (p->prev)
		p->prev->next = p->next;
	else if (s->peers == p)
		s->peers = p->next;
	if (p->next)
		p->next->prev = p->prev;
	free(p);
}

/* ---- live sandboxes ---- */

/* A session's sandbox ends: removed with its files, or, while the server
 * stops (SIGTERM, a pod's drain), only stopped: its processes, cgroup and
 * mounts end, its files and record stay for the next server on the state
 * directory (restore.c). */
static void
session_live_end(struct live *l)
{
	struct srv *s = l->srv;
	struct wd_err err = {0};
	/* an anonymous session (no record names it) is never found again */
	bool keep = __atomic_load_n(&s->keep_sessions, __ATOMIC_ACQUIRE) && l->kept;
	int rc =
	    keep ? wd_session_stop(s->ctx, l->id, &err) : wd_session_remove(s->ctx, l->id, &err);
	if (rc < 0 && rc != -ESRCH && rc != -ENOENT)
		srv_log(s, WD_LOG_WARN, "sandbox %s: %s: %s", l->id, keep ? "stop" : "remove",
			err.msg);
}

struct live *
live_new_session(struct srv *s, const char *id, bool cow, bool kept)
{
	struct live *lv = xcalloc(1, sizeof(*lv));
	snprintf(lv->id, sizeof(lv->id), "%s", id);
	lv->sess = true;
	lv->kept = kept;
	lv->cow = cow;
	lv->srv = s;
	lv->refs = 1;
	pthread_mutex_init(&lv->lock, NULL);
	pthread_cond_init(&lv->cv, NULL);
	return lv;
}

int
live_diff(struct live *l, const char *const *paths, size_t n, unsigned flags, char **out,
	  struct wd_err *err)
{
	return l->sess ? wd_session_diff(l->srv->ctx, l->id, paths, n, flags, out, err)
		       : wd_sandbox_diff(l->sb, paths, n, flags, out, err);
}

int
live_apply(struct live *l, const char *const *paths, size_t n, const char *expect, unsigned flags,
	   char **report, struct wd_err *err)
{
	return l->sess ? wd_session_apply(l->srv->ctx, l->id, paths, n, expect, flags, report, err)
		       : wd_sandbox_apply(l->sb, paths, n, expect, flags, report, err);
}

int
live_discard(struct live *l, const char *const *paths, size_t n, struct wd_err *err)
{
	return l->sess ? wd_session_discard(l->srv->ctx, l->id, paths, n, err)
		       : wd_sandbox_discard(l->sb, paths, n, err);
}

int
live_session_start(struct live *l, struct wd_err *err)
{
	/* its monitor died (the old server's pod went, or it stopped after
	 * its idle timeout): a new jail over the stored files; -EBUSY: another
	 * call started it meanwhile */
	int rc = wd_session_start(l->srv->ctx, l->id, err);
	if (rc == 0)
		srv_log(l->srv, WD_LOG_INFO, "sandbox %s: started again over its stored files",
			l->id);
	return rc == -EBUSY ? 0 : rc;
}

wd_workspace *
live_view(struct live *l, struct wd_err *err)
{
	wd_workspace *ws = NULL;
	if (!l->sess) {
		/* Opened for this call (an idle sandbox holds no descriptor
		 * for it) and proven the directory the sandbox was made over:
		 * the same device and inode as at create (live_new).  The
		 * spec names it by path, which the sandbox cannot redirect
		 * (the directory is the root of its bind mount, and its
		 * parent is outside the jail) and a cow view comes from the
		 * overlay the sandbox's box holds; the check refuses anything
		 * else, a host directory renamed over it included. */
		struct stat st;
		int fd = -1;
		if (wd_sandbox_workspace(l->sb, &ws, err) < 0)
			return NULL;
		if ((fd = wd_workspace_openat(ws, ".", O_PATH, err)) < 0 || fstat(fd, &st) < 0 ||
		    st.st_dev != l->ws_dev || st.st_ino != l->ws_ino) {
			if (fd >= 0 && err) {
				err->code = WD_E_INTERNAL;
				snprintf(err->msg, sizeof(err->msg),
					 "the sandbox's workspace is no longer the directory it "
					 "was made over");
			}
			if (fd >= 0)
				close(fd);
			wd_workspace_close(ws);
			return NULL;
		}
		close(fd);
		return ws;
	}
	int rc = wd_session_workspace(l->srv->ctx, l->id, &ws, err);
	if (rc == -ESRCH && live_session_start(l, err) == 0)
		rc = wd_session_workspace(l->srv->ctx, l->id, &ws, err);
	return rc < 0 ? NULL : ws;
}

void
live_view_done(struct live *l, wd_workspace *ws)
{
	(void)l;
	wd_workspace_close(ws);
}

struct live *
live_get(struct live *l)
{
	pthread_mutex_lock(&l->lock);
	l->refs++;
	pthread_mutex_unlock(&l->lock);
	return l;
}

void
live_put(struct live *l)
{
	pthread_mutex_lock(&l->lock);
	int left = --l->refs;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->lock);
	if (left == 0) {
		wd_workspace_close(l->ws); /* first: a cow view holds the sandbox's disk */
		wd_sandbox_destroy(l->sb);
		if (l->sess)
			session_live_end(l);
		atomic_fetch_sub(&l->srv->nlive, 1);
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->lock);
		free(l->image);
		wd_spec_free(l->spec);
		free(l);
	}
}

void
live_end(struct live *l)
{
	pthread_mutex_lock(&l->lock);
	if (l->running > 0 && l->sb) /* a session's: its removal ends them */
		wd_sandbox_cancel(l->sb, SIGKILL);
	while (l->refs > 1)
		pthread_cond_wait(&l->cv, &l->lock);
	pthread_mutex_unlock(&l->lock);
	live_put(l);
}

struct ender {
	struct srv *s;
	struct live *l;
};

static void *
ender_main(void *arg)
{
	struct ender *e = arg;
	struct srv *s = e->s;
	live_end(e->l);
	free(e);
	atomic_fetch_sub(&s->ending, 1);
	uint64_t one = 1;
	(void)!write(s->wake_fd, &one, sizeof(one));
	return NULL;
}

/* End l on a thread of its own: the loop never waits for a sandbox. */
static void
end_async(struct srv *s, struct live *l)
{
	struct ender *e = xcalloc(1, sizeof(*e));
	e->s = s;
	e->l = l;
	atomic_fetch_add(&s->ending, 1);
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, ender_main, e) != 0)
		ender_main(e); /* no thread: end it here, late but surely */
	pthread_attr_destroy(&a);
}

/* ---- calls ---- */

struct call *
call_get(struct call *c)
{
	atomic_fetch_add(&c->refs, 1);
	return c;
}

void
call_put(struct call *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	if (c->live)
		live_put(c->live);
	if (c->created)
		live_end(c->created); /* never handed to its peer: shutdown */
	json_decref(c->lives);
	if (c->x)
		xchg_put(c->x);
	if (c->peer)
		peer_put(c->peer);
	json_decref(c->id);
	json_decref(c->params);
	json_decref(c->progress);
	for (int i = 0; i < 3; i++)
		free(c->carry[i]);
	free(c->method);
	free(c->idkey);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

bool
call_cancelled(struct call *c)
{
	pthread_mutex_lock(&c->lock);
	bool v = c->cancelled;
	pthread_mutex_unlock(&c->lock);
	return v;
}

void
call_notify(struct call *c, json_t *msg)
{
	srv_post(c->srv, c, msg, false);
}

static void
unlink_call(struct call *c)
{
	struct peer *p = c->peer;
	if (!p || (!c->pprev && p->calls != c))
		return;
	if (c->pprev)
		c->pprev->pnext = c->pnext;
	else
		p->calls = c->pnext;
	if (c->pnext)
		c->pnext->pprev = c->pprev;
	c->pnext = c->pprev = NULL;
}

bool
deliver_to_peer(struct srv *s, struct peer *p, struct xchg *x, json_t *msg, bool final)
{
	if (x)
		return xchg_send(x, msg, final);
	if (!p || !p->conn || !msg)
		return false;
	size_t n;
	char *t = rpc_dump(msg, &n);
	bool ok = conn_send_line(p->conn, t, n, !final);
	free(t);
	(void)s;
	return ok;
}

/* The answer of c goes out: into its batch, its exchange or its line. */
static void
answer(struct srv *s, struct call *c, json_t *msg, struct batchcol *col)
{
	if (col)
		col_answer(s, col, msg);
	else
		deliver_to_peer(s, c->peer, c->x, msg, true);
}

void
dispatch_deliver(struct srv *s, struct outmsg *m)
{
	struct call *c = m->c;
	if (!m->final) {
		if (!c->done && !call_cancelled(c))
			deliver_to_peer(s, c->peer, c->x, m->msg, false);
		json_decref(m->msg);
		return;
	}
	c->done = true;
	unlink_call(c);
	struct peer *p = c->peer;
	if (c->created) {
		/* sandbox.create: the peer keeps it, unless it is gone */
		struct live *l = c->created;
		c->created = NULL;
		if (p && !p->closed) {
			l->next = p->lives;
			p->lives = l;
			if (l->sess)
				record_save(s, p);
		} else {
			end_async(s, l);
		}
	}
	bool silent = c->mcp && call_cancelled(c);
	struct batchcol *col = c->col;
	c->col = NULL;
	answer(s, c, silent ? NULL : m->msg, col);
	json_decref(m->msg);
	if (p && p->conn && p->conn->closing)
		conn_flush(p->conn);
	call_put(c); /* the in-flight reference */
}

/* ---- the worker pool ---- */

static void
run_call(struct srv *s, struct call *c)
{
	struct rpc_err e = {0};
	tls_call = c;
	json_t *res = c->m->fn(c, &e);
	tls_call = NULL;
	json_t *msg;
	if (call_cancelled(c) && !c->mcp) {
		json_decref(res);
		json_decref(e.data);
		msg = rpc_error(c->id, SRV_E_CANCELLED, "request cancelled", NULL);
	} else if (res) {
		msg = rpc_result(c->id, res);
	} else {
		msg = rpc_error(c->id, e.code ? e.code : RPC_INTERNAL_ERROR, e.msg, e.data);
	}
	srv_post(s, c, msg, true);
}

static void *
worker_main(void *arg)
{
	struct srv *s = arg;
	pthread_mutex_lock(&s->wlock);
	for (;;) {
		while (!s->jobs_head && !s->workers_stop) {
			s->nidle++;
			pthread_cond_wait(&s->wcv, &s->wlock);
			s->nidle--;
		}
		if (!s->jobs_head)
			break;
		struct call *c = s->jobs_head;
		s->jobs_head = c->qnext ? c->qnext : NULL;
		if (!s->jobs_head)
			s->jobs_tail = NULL;
		c->qnext = NULL;
		c->queued = false;
		s->njobs--;
		s->nbusy++;
		pthread_mutex_unlock(&s->wlock);
		run_call(s, c);
		pthread_mutex_lock(&s->wlock);
		s->nbusy--;
	}
	pthread_mutex_unlock(&s->wlock);
	return NULL;
}

int
workers_start(struct srv *s)
{
	s->threads = xcalloc(s->o.max_calls, sizeof(pthread_t));
	return 0;
}

void
workers_stop(struct srv *s)
{
	pthread_mutex_lock(&s->wlock);
	s->workers_stop = true;
	pthread_cond_broadcast(&s->wcv);
	unsigned n = s->nworkers;
	pthread_mutex_unlock(&s->wlock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(s->threads[i], NULL);
	free(s->threads);
	s->threads = NULL;
}

/* Queue c for a worker; a worker is started when none is idle and the
 * pool is below --max-calls.  false when the queue is full. */
static bool
enqueue(struct srv *s, struct call *c)
{
	pthread_mutex_lock(&s->wlock);
	if (s->njobs >= s->o.max_queue) {
		pthread_mutex_unlock(&s->wlock);
		return false;
	}
	c->qnext = NULL;
	c->queued = true;
	if (s->jobs_tail)
		s->jobs_tail->qnext = c;
	else
		s->jobs_head = c;
	s->jobs_tail = c;
	s->njobs++;
	if (s->nidle < s->njobs && s->nworkers < s->o.max_calls) {
		if (pthread_create(&s->threads[s->nworkers], NULL, worker_main, s) == 0)
			s->nworkers++;
		else if (s->nworkers == 0)
			srv_log(s, WD_LOG_ERROR, "cannot start a worker thread: %s",
				strerror(errno));
	}
	pthread_cond_signal(&s->wcv);
	pthread_mutex_unlock(&s->wlock);
	return true;
}

/* Take c out of the queue if it is still there.  true if it was. */
static bool
dequeue(struct srv *s, struct call *c)
{
	bool found = false;
	pthread_mutex_lock(&s->wlock);
	struct call *prev = NULL;
	for (struct call *q = s->jobs_head; q; prev = q, q = q->qnext) {
		if (q != c)
			continue;
		if (prev)
			prev->qnext = q->qnext;
		else
			s->jobs_head = q->qnext;
		if (s->jobs_tail == q)
			s->jobs_tail = prev;
		q->qnext = NULL;
		q->queued = false;
		s->njobs--;
		found = true;
		break;
	}
	pthread_mutex_unlock(&s->wlock);
	return found;
}

static void
cancel_call(struct srv *s, struct call *c, const char *why)
{
	pthread_mutex_lock(&c->lock);
	bool was = c->cancelled;
	c->cancelled = true;
	/* the sandbox dies at once: pid 1 is killed, and every process of
	 * the command with it (async-signal-safe, no waiting here) */
	if (c->running_in)
		wd_sandbox_cancel(c->running_in, SIGKILL);
	uint64_t one = 1;
	if (c->cancel_efd >= 0)
		(void)!write(c->cancel_efd, &one, sizeof(one));
	pthread_mutex_unlock(&c->lock);
	if (!was)
		srv_log(s, WD_LOG_INFO, "call %s %s cancelled: %s", c->method, c->idkey, why);
	if (dequeue(s, c)) {
		json_t *msg = c->mcp ? json_null()
				     : rpc_error(c->id, SRV_E_CANCELLED, "request cancelled", NULL);
		srv_post(s, c, msg, true);
	}
}

/* ---- requests ---- */

static json_t *
immediate_error(json_t *id, struct rpc_err *e)
{
	return rpc_error(id, e->code, e->msg, e->data);
}

/* The human's channel: the unix socket, from the user who started the
 * server, on a connection that never sent initialize (an MCP session is
 * a model's channel, whatever its transport). */
static bool
human_channel(const struct peer *p)
{
	return p->kind == T_UNIX && p->owner && !p->mcp;
}

/* A live sandbox of another peer, by id, with a reference for the call
 * (the human reviewing or applying what a model's sandbox wrote).  The
 * loop thread owns every peer's table, and this runs on it, so the walk
 * needs no lock; the reference keeps the sandbox whole while the call
 * runs even if its owner goes away meanwhile (live_end waits for it). */
static struct live *
other_peers_live(struct srv *s, const struct peer *self, const char *id)
{
	for (struct peer *q = s->peers; q; q = q->next) {
		if (q == self || q->closed)
			continue;
		for (struct live *l = q->lives; l; l = l->next)
			if (!strcmp(l->id, id))
				return live_get(l);
	}
	return NULL;
}

/* Channel rules and the live sandbox, before anything runs. */
static bool
admit(struct srv *s, struct peer *p, const struct method *m, json_t *params, struct call *c,
      struct rpc_err *e)
{
	if ((m->flags & M_MCP) && !p->mcp)
		return rpc_err_set(e, SRV_E_NOT_INITIALIZED,
				   "not initialized: send \"initialize\" first") == 0;
	if ((m->flags & M_HUMAN) && !human_channel(p))
		return rpc_err_set(e, SRV_E_FORBIDDEN,
				   "%s is for a human: only on warden's unix socket, from the "
				   "user who started the server, on a connection that is not an "
				   "MCP session (or use `warden approve ID`)",
				   m->name) == 0;
	/* Why: a cow sandbox exists so that a human reviews what a model
	 * wrote before it reaches the project; an MCP session is the
	 * model's channel (its client may pass any method on), so applying
	 * there would let the model approve its own changes, as an
	 * approval.grant there would (docs/server.md, "The human applies") */
	if ((m->flags & M_NOT_MODEL) && p->mcp)
		return rpc_err_set(e, SRV_E_FORBIDDEN,
				   "%s is for a human: not on an MCP session (a model's channel); "
				   "use warden's unix socket from a connection that did not send "
				   "initialize",
				   m->name) == 0;
	/* Why: a model's commands are judged by the policy (docs/threat-model.md).
	 * The harness methods take an explicit argv, which the library runs
	 * with the policy stage off unless "policy": true; on the model's
	 * channel that ran rm and git push that run_command refused or
	 * paused.  So an MCP session gets none of it: no sandbox.run (its
	 * run_command is the one-shot door), and sandbox.exec only with a
	 * command string, which is always judged. */
	if ((m->flags & M_ARGV) && p->mcp &&
	    (m->fn == run_harness || json_object_get(params, "argv")))
		return rpc_err_set(e, SRV_E_FORBIDDEN,
				   "%s%s is a harness method: not on an MCP session (a model's "
				   "channel), where every command is a string the policy judges; "
				   "use the run_command tool",
				   m->name, m->fn == run_harness ? "" : " with 'argv'") == 0;
	if (m->fn == mcp_tools_call)
		session_admit(p, c); /* a tool's "sandbox" argument */
	if (!(m->flags & (M_LIVE | M_LIVE_OPT)))
		return true;
	json_t *sid = json_object_get(params, "sandbox");
	if (!sid && (m->flags & M_LIVE_OPT))
		return true;
	if (!json_is_string(sid))
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: 'sandbox' (a sandbox id) is required") == 0;
	struct live **lp = &p->lives;
	while (*lp && strcmp((*lp)->id, json_string_value(sid)))
		lp = &(*lp)->next;
	if (!*lp && (m->flags & M_ANY_PEER) && human_channel(p) &&
	    (c->live = other_peers_live(s, p, json_string_value(sid))))
		return true;
	if (!*lp)
		return rpc_err_set(e, SRV_E_NO_SANDBOX,
				   "no sandbox '%.64s' on this connection (sandboxes belong to the "
				   "connection that created them)",
				   json_string_value(sid)) == 0;
	if (m->flags & M_TAKE_LIVE) {
		c->live = *lp; /* the table's reference moves to the call */
		*lp = (*lp)->next;
		c->live->next = NULL;
		if (c->live->sess)
			record_save(s, p);
	} else {
		c->live = live_get(*lp);
	}
	(void)s;
	return true;
}

static struct call *
find_call(struct peer *p, const char *key)
{
	for (struct call *c = p->calls; c; c = c->pnext)
		if (!strcmp(c->idkey, key))
			return c;
	return NULL;
}

static struct call *
call_new(struct srv *s, struct peer *p, struct xchg *x, const struct rpc_msg *msg,
	 const struct method *m, char *key)
{
	struct call *c = xcalloc(1, sizeof(*c));
	atomic_init(&c->refs, 1);
	c->srv = s;
	c->peer = p;
	p->refs++;
	c->x = x ? xchg_get(x) : NULL;
	c->idkey = key;
	c->id = json_incref(msg->id);
	c->method = xstrdup(msg->method);
	c->m = m;
	c->mcp = p->mcp;
	c->owner = p->owner;
	c->persist = srv_persists(p);
	c->cancel_efd = -1;
	pthread_mutex_init(&c->lock, NULL);
	c->params = msg->params ? json_deep_copy(msg->params) : json_object();
	json_t *tok = json_object_get(json_object_get(c->params, "_meta"), "progressToken");
	if (json_is_string(tok) || json_is_integer(tok))
		c->progress = json_incref(tok);
	return c;
}

static void
start_call(struct srv *s, struct peer *p, struct xchg *x, const struct rpc_msg *msg,
	   struct batchcol *col)
{
	struct rpc_err e = {0};
	const struct method *m = method_find(msg->method);
	json_t *err = NULL;
	char *key = rpc_id_key(msg->id);
	if (x)
		xchg_add_pending(x);
	if (!m) {
		rpc_err_set(&e, RPC_METHOD_NOT_FOUND, "Method not found: '%.100s'", msg->method);
	} else if (msg->params && !json_is_object(msg->params)) {
		rpc_err_set(&e, RPC_INVALID_PARAMS,
			    "Invalid params: warden's methods take named parameters (an object)");
	} else if (!s->activated && strcmp(msg->method, "server.activate")) {
		/* --await-activation: nothing is served before the tenant's
		 * workspace and token are in (a warm pod holds no tenant's
		 * state).  Why initialize marks the connection: it is a model's
		 * channel from its first word, so server.activate on it is
		 * refused afterwards (M_HUMAN) as on any MCP session */
		if (!strcmp(msg->method, "initialize"))
			p->mcp = true;
		rpc_err_set(&e, SRV_E_NOT_ACTIVATED,
			    "not activated: this server awaits server.activate on its owner's "
			    "socket (--await-activation)");
	} else if (s->draining) {
		/* SIGTERM: the calls in flight finish, no new one starts (the
		 * client goes to another instance) */
		rpc_err_set(&e, SRV_E_DRAINING,
			    "the server is shutting down (SIGTERM): no new calls; retry on "
			    "another instance");
	} else if (find_call(p, key)) {
		rpc_err_set(&e, SRV_E_DUPLICATE_ID,
			    "request id %.64s is still in progress on this connection", key);
	}
	if (e.code) {
		err = immediate_error(msg->id, &e);
		free(key);
		goto answer_now;
	}
	struct call *c = call_new(s, p, x, msg, m, key);
	if (!admit(s, p, m, c->params, c, &e)) {
		err = immediate_error(msg->id, &e);
		call_put(c);
		goto answer_now;
	}
	c->pnext = p->calls;
	if (p->calls)
		p->calls->pprev = c;
	p->calls = c;
	if (col)
		col->pending++;
	c->col = col;
	if (c->progress && x)
		xchg_wants_stream(x);
	if (m->flags & M_INLINE) {
		tls_call = c;
		json_t *res = m->fn(c, &e);
		tls_call = NULL;
		json_t *out = res ? rpc_result(c->id, res) : immediate_error(c->id, &e);
		struct outmsg om = {.c = c, .msg = out, .final = true};
		dispatch_deliver(s, &om);
		return;
	}
	if (!enqueue(s, c)) {
		unlink_call(c);
		c->col = NULL;
		if (col)
			col->pending--;
		rpc_err_set(&e, SRV_E_BUSY, "server busy: %u calls are waiting (--max-queue)",
			    s->o.max_queue);
		err = immediate_error(msg->id, &e);
		call_put(c);
		goto answer_now;
	}
	return;
answer_now:
	if (col) {
		col->pending++;
		col_answer(s, col, err);
	} else {
		deliver_to_peer(s, p, x, err, true);
	}
	json_decref(err);
}

static void
notification(struct srv *s, struct peer *p, const struct rpc_msg *msg)
{
	if (!strcmp(msg->method, "notifications/initialized")) {
		p->initialized = true;
	} else if (!strcmp(msg->method, "notifications/cancelled")) {
		json_t *rid = json_object_get(msg->params, "requestId");
		if (!rid)
			return;
		char *key = rpc_id_key(rid);
		struct call *c = find_call(p, key);
		free(key);
		const char *why = json_string_value(json_object_get(msg->params, "reason"));
		if (c)
			cancel_call(s, c, why ? why : "notifications/cancelled");
	}
	/* other notifications (progress from the client, roots changes) are
	 * not used: ignored, as JSON-RPC says notifications are */
}

void
dispatch_text(struct srv *s, struct peer *p, struct xchg *x, const char *buf, size_t len)
{
	struct rpc_batch b;
	p->last_ns = now_ns();
	if (rpc_parse(buf, len, &b) < 0) {
		if (x)
			xchg_add_pending(x);
		json_t *err = rpc_error(NULL, b.err_code, b.err_msg, NULL);
		deliver_to_peer(s, p, x, err, true);
		json_decref(err);
		rpc_batch_fini(&b);
		return;
	}
	struct batchcol *col = NULL;
	if (b.batch && !x) {
		col = xcalloc(1, sizeof(*col));
		col->answers = json_array();
		col->p = p;
		p->refs++;
		col->pending = 1; /* held until the whole batch is dispatched */
	}
	for (size_t i = 0; i < b.n; i++) {
		struct rpc_msg *m = &b.msgs[i];
		if (m->kind == RPC_INVALID) {
			json_t *err = rpc_error(m->id, m->err_code, m->err_msg, NULL);
			if (col) {
				col->pending++;
				col_answer(s, col, err);
			} else {
				if (x)
					xchg_add_pending(x);
				deliver_to_peer(s, p, x, err, true);
			}
			json_decref(err);
		} else if (m->kind == RPC_NOTIFICATION) {
			notification(s, p, m);
		} else if (m->kind == RPC_REQUEST) {
			start_call(s, p, x, m, col);
		}
		/* responses: warden sends no requests, so there is nothing to
		 * match them with */
	}
	if (col)
		col_answer(s, col, NULL);
	rpc_batch_fini(&b);
}

void
dispatch_cancel_xchg(struct srv *s, struct xchg *x, struct peer *p)
{
	for (struct call *c = p ? p->calls : NULL; c; c = c->pnext)
		if (c->x == x)
			cancel_call(s, c, "the HTTP connection closed");
}

void
peer_close(struct srv *s, struct peer *p)
{
	if (p->closed)
		return;
	p->closed = true;
	for (struct call *c = p->calls; c; c = c->pnext)
		cancel_call(s, c, "the client went away");
	bool had = false;
	while (p->lives) {
		struct live *l = p->lives;
		p->lives = l->next;
		l->next = NULL;
		had |= l->sess;
		end_async(s, l);
	}
	if (had)
		record_save(s, p); /* none left: removed (kept while stopping) */
}

bool
peer_detach(struct srv *s, struct peer *p)
{
	if (!p->named || p->closed || p->detached)
		return false;
	for (struct call *c = p->calls; c; c = c->pnext)
		cancel_call(s, c, "the client went away");
	p->detached = true;
	p->last_ns = now_ns();
	p->refs++; /* the session table's, dropped by session_end */
	srv_log(s, WD_LOG_INFO,
		"socket session %llu: its connection closed; its sandboxes are kept "
		"for --session-idle",
		(unsigned long long)p->seq);
	return true;
}

/* session.open: name this socket connection's session, or take over a
 * detached one by its id.  The id is a secret of 128 random bits; the
 * session is also bound to the uid that opened it (SO_PEERCRED), so a
 * member of --allow-group holding a leaked id still cannot take another
 * user's sandboxes.  The privileges are the new connection's own (owner
 * or not, MCP or not): nothing of the old connection's carries over but
 * its sandboxes. */
json_t *
m_session_open(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"session", NULL};
	struct peer *p = c->peer;
	struct srv *s = c->srv;
	const char *want = NULL;
	if (!p_only(c->params, keys, e) || !p_str(c->params, "session", false, &want, e))
		return NULL;
	if (p->kind != T_UNIX) {
		rpc_err_set(e, SRV_E_NOT_AVAILABLE,
			    "session.open is for the unix socket (stdio ends with its client; "
			    "HTTP has Mcp-Session-Id)");
		return NULL;
	}
	if (want) {
		struct peer *old = NULL;
		for (struct peer *q = s->peers; q && !old; q = q->next)
			if (q->detached && !q->closed && q->kind == T_UNIX && q->uid == p->uid &&
			    !strcmp(q->session, want))
				old = q;
		if (!old) {
			rpc_err_set(e, RPC_INVALID_PARAMS,
				    "Invalid params: no session '%.40s' to resume (unknown, ended "
				    "after --session-idle, or another user's)",
				    want);
			return NULL;
		}
		if (p->named || p->lives) {
			rpc_err_set(
			    e, RPC_INVALID_PARAMS,
			    "Invalid params: this connection has a session or sandboxes of its "
			    "own already");
			return NULL;
		}
		/* the sandboxes move; the old peer ends empty */
		p->lives = old->lives;
		old->lives = NULL;
		snprintf(p->session, sizeof(p->session), "%s", old->session);
		p->named = true;
		session_end(s, old, "resumed on another connection");
		record_save(s, p);
	} else if (!p->named) {
		unsigned char r[16];
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			abort(); /* no randomness: no unguessable session ids */
		for (int i = 0; i < 16; i++)
			snprintf(p->session + 2 * i, 3, "%02x", r[i]);
		p->named = true;
	}
	json_t *a = json_array();
	for (struct live *l = p->lives; l; l = l->next)
		json_array_append_new(a, json_string(l->id));
	return json_pack("{s:s,s:o}", "session", p->session, "sandboxes", a);
}

void
dispatch_stop(struct srv *s)
{
	/* new commands are refused by the library from here on, and the ones
	 * running end as killed by SIGTERM */
	wd_ctx_cancel(s->ctx, SIGTERM);
	/* the sessions' sandboxes stop and their records stay: a server
	 * started again on the state directory takes them back (restore.c) */
	__atomic_store_n(&s->keep_sessions, true, __ATOMIC_RELEASE);
	for (struct peer *p = s->peers, *next; p; p = next) {
		next = p->next;
		/* an open HTTP session holds the table's reference: ended,
		 * which drops it; a connection's peer goes with it */
		if ((p->kind == T_HTTP || p->detached) && !p->closed)
			session_end(s, p, "the server is stopping");
		else
			peer_close(s, p);
	}
}
