/* server/srv.h - the server object (struct srv), its peers, the calls
 * in flight and the method table's entries: what the loop, the dispatch
 * and every method share.  server.c (start, stop, activation, the
 * descriptor budget, the params helpers) and loop.c's log.
 *
 * Threads: the loop thread owns connections, peers and the tables of
 * calls and live sandboxes.  A worker owns the call it runs; it talks to
 * the loop only through the out-queue (srv_post), and to a call's
 * canceller through call->lock. */
#ifndef WD_SERVER_SRV_H
#define WD_SERVER_SRV_H

#include "server/server.h"
#include "server/base.h"
#include "server/rpc.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct conn;
struct live;
struct xchg;
struct batchcol;
struct srv_pool;

enum transport { T_STDIO, T_UNIX, T_HTTP };

/* A JSON-RPC endpoint: a stdio or socket connection, or an HTTP session. */
struct peer {
	struct srv *srv;
	enum transport kind;
	bool owner;	    /* the unix socket, from the owning uid */
	bool mcp;	    /* sent "initialize": the model's channel */
	bool initialized;   /* and notifications/initialized */
	char proto[24];	    /* the negotiated MCP protocol version */
	char client[64];    /* clientInfo.name, for the log */
	struct call *calls; /* in flight */
	struct live *lives; /* live sandboxes it owns */
	struct conn *conn;  /* line transports */
	char session[40];   /* HTTP: Mcp-Session-Id; a socket: session.open's id */
	bool named;	    /* a socket peer that called session.open */
	bool detached;	    /* ... whose connection went: kept, with its sandboxes,
			     * for --session-idle (the table holds a reference) */
	uid_t uid;	    /* a socket peer's SO_PEERCRED uid */
	uint64_t last_ns;
	uint64_t seq; /* for the log */
	int refs;     /* loop thread only */
	bool closed;
	struct peer *next, *prev;
};

/* A tool's route under the server's policy, looked up once per call
 * (route_lookup) and passed down: whether the policy defines the tool, its
 * class and profile (wd_policy_route), and the image it runs in (the
 * policy's tools.NAME.image, else NULL). */
struct route {
	const char *tool; /* NULL: no tool */
	bool defined;
	enum wd_tool_class klass;
	const char *profile;
	struct wd_limits limits;
	const char *image;
};
void route_lookup(const struct srv *s, const char *tool, struct route *out);

/* One request in flight. */
struct call {
	atomic_int refs;
	struct srv *srv;
	/* loop thread */
	struct peer *peer;
	struct call *pnext, *pprev; /* in peer->calls */
	struct xchg *x;		    /* HTTP: the exchange that answers it */
	char *idkey;
	bool queued;
	struct call *qnext;
	struct batchcol *col; /* a batch on a line transport */
	bool done;
	/* fixed before the worker starts */
	json_t *id;
	char *method;
	json_t *params; /* a copy owned by the call */
	const struct method *m;
	json_t *progress;     /* MCP progressToken, or NULL */
	bool mcp;	      /* the peer speaks MCP: no answer after a cancel */
	bool owner;	      /* the peer is the owner's socket */
	bool persist;	      /* its peer's sandboxes come back after a restart (restore.c) */
	struct live *live;    /* sandbox.exec/destroy/files: its sandbox (a reference) */
	struct live *created; /* sandbox.create: the new one, for the loop to keep */
	json_t *lives;	      /* tools/call sandbox_list: the peer's, when admitted */
	struct route route;   /* tools/call: the tool's, looked up once */
	/* shared with whoever cancels */
	pthread_mutex_t lock;
	bool cancelled;
	wd_sandbox *running_in; /* cancelling kills it */
	int cancel_efd;		/* a one-shot's wd_cmd_set_cancel_fd(), or -1 */
	/* the worker's */
	uint64_t progress_n;
	char *carry[3]; /* an incomplete UTF-8 or escape tail per stream */
	size_t carry_len[3];
	bool stream; /* harness: sandbox.output notifications */
};

struct call *call_get(struct call *c);
/* The call this worker thread is running (NULL on other threads). */
struct call *call_current(void);
void call_put(struct call *c);
bool call_cancelled(struct call *c);
/* Send a notification for c (any thread); dropped if its client is gone
 * or cannot keep up. */
void call_notify(struct call *c, json_t *msg);

enum {
	M_INLINE = 0x1,	    /* cheap: run on the loop thread */
	M_MCP = 0x2,	    /* an MCP method: needs initialize first */
	M_HUMAN = 0x4,	    /* the owner's socket only, never a model's channel */
	M_LIVE = 0x8,	    /* params.sandbox names a live sandbox of this peer */
	M_TAKE_LIVE = 0x10, /* ... and the call takes it out of the table */
	M_ANY_PEER = 0x20,  /* ... or, on the human's channel, of any peer (review, apply) */
	M_NOT_MODEL = 0x40, /* refused on an MCP session: a human's decision (apply) */
	M_ARGV = 0x80,	    /* takes "argv": on an MCP session refused (sandbox.run), or
			     * refused with "argv" (sandbox.exec) */
	M_LIVE_OPT = 0x100, /* params.sandbox, if given, names one as for M_LIVE */
};

struct method {
	const char *name;
	unsigned flags;
	/* The result (a new reference), or NULL with e filled. */
	json_t *(*fn)(struct call *c, struct rpc_err *e);
};

const struct method *method_find(const char *name);

struct outmsg {
	struct call *c;
	json_t *msg;
	bool final;
	struct outmsg *next;
};

/* Which token file was read (srv_token_watch): a Secret's update is a
 * new file behind the same path. */
struct token_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

struct srv {
	struct server_opts o;
	wd_ctx *ctx;
	wd_workspace *ws;
	wd_policy *policy; /* for tool annotations and the image allowlist */
	json_t *tools;	   /* what tools/list answers */
	char *token;	   /* HTTP bearer token; NULL: the file went bad (all refused) */
	struct token_id token_id;
	bool token_bad; /* the token file changed into one that fails the checks */
	/* --await-activation (server.c): until server.activate, ws is warm_dir
	 * (an empty private directory for the readiness probe), there is no
	 * token, and every call but server.activate is refused.  Loop thread. */
	bool activated;
	char *warm_dir;
	char *act_workspace, *act_policy, *act_tenant; /* what the activation named */
	char *act_token_file; /* ... its token_file (s->o.token_file, watched) */
	char *capture;	      /* non-NULL: srv_log's first error goes here (activation) */
	size_t capture_cap;
	uid_t owner_uid;
	int ep;	     /* epoll */
	int wake_fd; /* eventfd: the out-queue has messages */
	int sig_fd;
	int timer_fd;
	int unix_fd, tcp_fd;
	bool tcp_loopback;
	bool stopping;
	/* SIGTERM: no new connections or calls; the calls in flight finish
	 * until drain_deadline_ns, then the server stops (loop.c) */
	bool draining;
	uint64_t drain_deadline_ns;
	/* /readyz (health.c): the probe of the isolation level, on a thread */
	pthread_mutex_t health_lock;
	int health;	      /* HEALTH_* under health_lock */
	char health_why[384]; /* why not ready, under health_lock */
	bool probe_running;   /* a probe thread exists (loop thread) */
	pthread_t probe_thread;
	atomic_bool probe_done; /* it has finished: join it */
	uint64_t probe_ns;	/* when the last probe started */
	/* restore.c: DIR/serve (--state-dir), where the sessions are written
	 * down, or NULL; keep_sessions: stopping, the sessions stay */
	char *rec_dir;
	bool keep_sessions;
	/* DIR/serve/lock (--state-dir), flocked for the server's life, or -1 */
	int state_lock;
	/* an ordinary user's server: STATE/serve-anon/ID.lock, flocked for
	 * the server's life (restore.c), or -1; anon_id: ID, 16 hex digits */
	int anon_lock;
	char anon_id[17];
	char *anon_lock_path;
	/* the warm pool (pool.c), or NULL */
	struct srv_pool *pool;
	struct conn *conns;
	struct peer *peers;
	/* the out-queue (workers -> loop) */
	pthread_mutex_t qlock;
	struct outmsg *qhead, *qtail;
	/* the worker pool */
	pthread_mutex_t wlock;
	pthread_cond_t wcv, idle_cv;
	struct call *jobs_head, *jobs_tail;
	unsigned njobs, nworkers, nidle, nbusy;
	pthread_t *threads;
	bool workers_stop;
	/* live sandboxes being ended by destroyer threads */
	atomic_int ending;
	atomic_uint_fast64_t seq;
	atomic_int nlive;		    /* live sandboxes, at most o.max_live */
	unsigned ninq;			    /* connections with conn->inq set (loop thread) */
	unsigned nhttp;			    /* HTTP connections open, at most HTTP_MAX_CONNS */
	int spare_fd;			    /* /dev/null, given up to accept-and-close at EMFILE */
	uint64_t emfile_log_ns, cap_log_ns; /* warnings at most every 10 s */
};

/* Descriptors (689 live sandboxes took the server to EMFILE,
 * and from then on every command in them failed too).  An idle live
 * sandbox holds 3 (the pidfd, the sync socket, the cancel eventfd; a cow
 * one 9: its box's overlay trees and state directory too), measured with
 * tests/server/density.py and bench/density.py.  The cgroup's directories
 * and statistics files, /dev/null and the workspace view are opened when
 * used (13 while they stayed open, 29 while the host sources did too).
 * While it is built it holds its host sources too (about 30 in all,
 * closed once pid 1 is ready: jail_prep_release_sources, cgroup_park),
 * and a command in it about 5 more while it runs; a one-shot call builds
 * a fresh sandbox of its own.
 *
 * SRV_FDS_PER_SANDBOX is an idle sandbox's share, for --max-sandboxes at
 * start (check_fd_room): an estimate, which cow sandboxes exceed.  The
 * guard is sandbox.create's, which counts what is in use: a new live
 * sandbox is refused while fewer than SRV_FDS_PER_CALL (its build) plus
 * the reserve would stay free: SRV_FDS_SLACK (connections, the audit log,
 * the pool's refills) and SRV_FDS_PER_CALL for each of --max-calls, as
 * each call may build a sandbox or run a command; so the live ones, and
 * the calls, keep working. */
#define SRV_FDS_PER_SANDBOX 3
#define SRV_FDS_PER_CALL 40
#define SRV_FDS_SLACK 256
/* The reserve, in descriptors. */
unsigned long srv_fd_reserve(const struct srv *s);
/* Descriptors in use (counted in /proc/self/fd) and RLIMIT_NOFILE's soft
 * limit; -1 if either cannot be read.  With want > 0, *in_use may be an
 * upper bound instead (the descriptor table's size) when that already
 * leaves want free: the count is made only near the limit. */
int srv_fds(long *in_use, long *limit, long want);

/* server.c: the context, the workspace, the policy, the token */
int srv_init(struct srv *s, const struct server_opts *o);
/* server.activate (the owner's socket, once): the workspace, the token,
 * the policy given now, as if the server had started with them. */
json_t *m_server_activate(struct call *c, struct rpc_err *e);
/* The timer's: read --token-file again when the file behind it changed. */
void srv_token_watch(struct srv *s);
void srv_fini(struct srv *s);

/* loop.c */
/* The library's log through the server's (a new context: activation). */
void srv_attach_lib_log(struct srv *s);
void srv_post(struct srv *s, struct call *c, json_t *msg, bool final);
void srv_log(struct srv *s, int level, const char *fmt, ...) SRV_PRINTF(3, 4);
/* The same with structured fields (a JSON object, stolen; NULL: none):
 * --log-format json puts them in the line's "fields", the text format
 * ignores them (msg says it all). */
void srv_logf(struct srv *s, int level, json_t *fields, const char *fmt, ...) SRV_PRINTF(4, 5);

/* params helpers (server.c): typed members with -32602 on a wrong type */
bool p_str(json_t *params, const char *key, bool required, const char **out, struct rpc_err *e);
bool p_bool(json_t *params, const char *key, bool *out, struct rpc_err *e);
bool p_uint(json_t *params, const char *key, uint64_t max, uint64_t *out, struct rpc_err *e);
bool p_only(json_t *params, const char *const *keys, struct rpc_err *e);

#endif
