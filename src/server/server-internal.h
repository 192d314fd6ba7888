/* server-internal.h - private to src/server.
 *
 *   rpc.c        JSON-RPC 2.0 messages: parse, classify, build (pure)
 *   http.c       HTTP/1.1 request heads (pure)
 *   schema.c     the JSON Schema subset the tool arguments are checked with (pure)
 *   sanitize.c   text for a model: control sequences out, bad UTF-8 visible (pure)
 *   loop.c       the epoll loop: listeners, connections, line framing, signals,
 *                the drain, the log (text or JSON lines)
 *   health.c     /healthz and /readyz: a sandbox built at the required level
 *   httpconn.c   MCP Streamable HTTP on a connection: auth, sessions, SSE
 *   dispatch.c   peers and calls: routing, cancellation, the worker pool
 *   tooldefs.c   the tool table: per MCP tool its definition and handlers (pure
 *                without them: the fuzz targets build it with WD_SERVER_SCHEMAS_ONLY)
 *   mcp.c        initialize, tools/list, tools/call (dispatched by the table)
 *   run.c        commands: run_command, sandbox.run/exec, progress
 *   result.c     a result and a decision as replies, from the library's accessors
 *   files.c      read_file, write_file, edit_file, list_dir, search_files
 *   diff.c       the change set: workspace_diff, sandbox.diff, sandbox.apply/discard
 *   harness.c    the JSON-RPC methods for harnesses (sandbox.*, policy.*, approval.*)
 *   session.c    the MCP tools on live sandboxes (sandbox_create, a "sandbox" argument)
 *
 * Threads: the loop thread owns connections, peers and the tables of
 * calls and live sandboxes.  A worker owns the call it runs; it talks to
 * the loop only through the out-queue (srv_post), and to a call's
 * canceller through call->lock. */
#ifndef WD_SERVER_INTERNAL_H
#define WD_SERVER_INTERNAL_H

#include "server/server.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers (server.c): the server links only the public API ---- */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* an image digest: "sha256:" and 64 hex digits, and the NUL */
#define SRV_DIGEST_LEN 72
#define SRV_PRINTF(f, a) __attribute__((format(printf, f, a)))
/* allocation aborts on failure: a server out of memory cannot answer */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) SRV_PRINTF(1, 2);
uint64_t now_ns(void);
/* Fill err (bad input, errno e) and return -e. */
int err_set(struct wd_err *err, int e, const char *fmt, ...) SRV_PRINTF(3, 4);

/* ---- error codes (docs/server.md, "Errors"): stable, never reused ---- */
enum {
	RPC_PARSE_ERROR = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
	RPC_INTERNAL_ERROR = -32603,
	SRV_E_FAILED = -32000,		/* warden could not run it (the library failed) */
	SRV_E_NO_SANDBOX = -32001,	/* no such live sandbox on this connection */
	SRV_E_NOT_INITIALIZED = -32002, /* an MCP method before initialize */
	SRV_E_FORBIDDEN = -32003,	/* not on this channel (approvals: the owner's socket) */
	SRV_E_DUPLICATE_ID = -32004,	/* this id is still in progress on this connection */
	SRV_E_BUSY = -32005,		/* too many calls waiting */
	SRV_E_NOT_AVAILABLE = -32006,	/* not here: a direct sandbox's apply, cow on this host */
	SRV_E_FILE = -32007,		/* a file operation refused (outside, protected, ...) */
	SRV_E_TOO_LARGE = -32008,	/* a message over --max-message (then closed) */
	SRV_E_APPLY_REFUSED = -32009,	/* apply: conflicts or protected paths, none applied */
	SRV_E_DRAINING = -32010,	/* SIGTERM: the server takes no new calls */
	SRV_E_NOT_ACTIVATED = -32011,	/* --await-activation: server.activate first */
	SRV_E_CANCELLED = -32800,	/* cancelled by notifications/cancelled */
};

/* ---- rpc.c ---- */
#define RPC_MAX_BATCH 1000

enum rpc_kind { RPC_REQUEST, RPC_NOTIFICATION, RPC_RESPONSE, RPC_INVALID };

struct rpc_msg {
	enum rpc_kind kind;
	json_t *id;	    /* borrowed from the batch's root; NULL: none */
	const char *method; /* requests and notifications */
	json_t *params;	    /* object, array or NULL */
	int err_code;	    /* RPC_INVALID: the error to answer with */
	char err_msg[160];
};

struct rpc_batch {
	json_t *root;
	struct rpc_msg *msgs;
	size_t n;
	bool batch;   /* the text was an array: answers go in one array */
	int err_code; /* rpc_parse() < 0: one error for the whole text */
	char err_msg[200];
};

/* Parse one text.  0: b->msgs holds n classified messages; -1: b->err_code
 * and b->err_msg say why the whole text is refused.  rpc_batch_fini()
 * either way. */
int rpc_parse(const char *buf, size_t len, struct rpc_batch *b);
void rpc_batch_fini(struct rpc_batch *b);
/* New message objects.  rpc_result and rpc_error take a reference to id
 * and steal result / data. */
json_t *rpc_result(json_t *id, json_t *result);
json_t *rpc_error(json_t *id, int code, const char *msg, json_t *data);
json_t *rpc_notification(const char *method, json_t *params);
const char *rpc_code_name(int code);
/* Compact text, one line (a new string). */
char *rpc_dump(const json_t *msg, size_t *len);
/* The id as a table key (a new string). */
char *rpc_id_key(const json_t *id);

/* ---- sanitize.c ---- */
char *sanitize_text(const char *buf, size_t len, bool final, size_t *consumed, size_t *out_len);
char *sanitize_images(const char *text, const char *const *allow, size_t nallow);
/* sanitize_images() on every string in v (objects and arrays, in place). */
void sanitize_images_json(json_t *v, const char *const *allow, size_t nallow);
char *utf8_visible(const char *buf, size_t len, bool final, size_t *consumed, size_t *out_len);

/* ---- http.c ---- */
#define HTTP_MAX_HEAD 16384

struct http_req {
	char method[16];
	char path[256];
	int minor; /* HTTP/1.minor */
	bool has_length, chunked, keep_alive, expect_continue;
	uint64_t content_length;
	char auth[600];	   /* Authorization */
	char session[128]; /* Mcp-Session-Id */
	char version[40];  /* MCP-Protocol-Version */
	char origin[256];
	char host[256];
	char accept[256];
	char content_type[128];
	size_t head_len; /* bytes of the head, blank line included */
};

/* Parse the request head at buf.  1: complete, r filled; 0: incomplete;
 * negative: -HTTP status to answer with (400, 431, 501, 505). */
int http_parse_head(const char *buf, size_t len, struct http_req *r);
/* Whether accept lists type (or a wildcard covering it). */
bool http_accepts(const char *accept, const char *type);
const char *http_reason(int status);

/* ---- schema.c ---- */
/* Check value against the subset of JSON Schema the tools use (type,
 * properties, required, additionalProperties false, items, enum,
 * minimum, maximum, minLength, maxLength).  0, or -1 with why filled
 * ("command: expected a string"). */
int schema_check(const json_t *schema, const json_t *value, char *why, size_t cap);

/* ---- the server ---- */
struct srv;
struct conn;
struct peer;
struct call;
struct live;
struct xchg;
struct batchcol;

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

/* A live sandbox created by sandbox.create: held by its owner's table
 * and by every exec running in it. */
struct live {
	char id[17];
	wd_sandbox *sb;
	wd_workspace *ws; /* NULL: live_view opens its view for each call */
	dev_t ws_dev;	  /* ... and checks it is this directory, made at create */
	ino_t ws_ino;
	bool cow;    /* a copy-on-write workspace: diff, apply, discard */
	bool by_mcp; /* made by the sandbox_create tool (sandbox_list says so) */
	bool sess;   /* a library session (restore.c): id is its id, sb and ws NULL */
	bool kept;   /* ... named by a record: only stopped when the server stops */
	char *image; /* the image it was made in, as the caller named it, or NULL */
	char digest[SRV_DIGEST_LEN]; /* ... resolved once, at create: its digest */
	struct srv *srv;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int refs;	   /* under lock */
	int running;	   /* execs in progress, under lock */
	struct live *next; /* in the owner's table (loop thread) */
};

struct live *live_get(struct live *l);
/* A live sandbox over library session id (restore.c). */
struct live *live_new_session(struct srv *s, const char *id, bool cow, bool kept);
/* An ordinary user's anonymous cow sandbox (a library session no record
 * names): its name says which server made it ("serve.PID.START.RND"), so
 * that a server started later on the state directory removes those whose
 * server is gone (srv_sweep_anon, at start). */
void srv_anon_name(char *buf, size_t n, const char *rnd);
void srv_sweep_anon(struct srv *s);
/* What a live sandbox offers, for an in-process sandbox or a session
 * alike (dispatch.c).  live_view: its workspace view; close it with
 * live_view_done. */
int live_diff(struct live *l, const char *const *paths, size_t n, unsigned flags, char **out,
	      struct wd_err *err);
int live_apply(struct live *l, const char *const *paths, size_t n, const char *expect,
	       unsigned flags, char **report, struct wd_err *err);
int live_discard(struct live *l, const char *const *paths, size_t n, struct wd_err *err);
wd_workspace *live_view(struct live *l, struct wd_err *err);
/* A session whose monitor is gone: start it again over its files. */
int live_session_start(struct live *l, struct wd_err *err);
/* file_tool() on l's view (harness.c). */
struct rpc_err;
json_t *live_file_tool(struct call *c, struct live *l, const char *tool, json_t *args,
		       bool for_model, struct rpc_err *e);
void live_view_done(struct live *l, wd_workspace *ws);
void live_put(struct live *l);
/* End it: cancel what runs in it, wait for the other holders, destroy,
 * free.  The caller holds the last table reference.  May block: workers
 * and destroyer threads only. */
void live_end(struct live *l);

/* One request in flight. */
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

/* What a method returns: a result, or an error. */
struct rpc_err {
	int code;
	char msg[512];
	json_t *data;
};
int rpc_err_set(struct rpc_err *e, int code, const char *fmt, ...) SRV_PRINTF(3, 4);

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
};

struct method {
	const char *name;
	unsigned flags;
	/* The result (a new reference), or NULL with e filled. */
	json_t *(*fn)(struct call *c, struct rpc_err *e);
};

const struct method *method_find(const char *name);

/* ---- the server object ---- */
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

/* A transport connection (loop thread only). */
struct buf {
	char *p;
	size_t len, cap, off; /* bytes [off, len) are pending */
};

struct conn {
	struct srv *srv;
	enum transport kind;
	int rfd, wfd;
	bool wfd_poll;	/* false: a regular file, written synchronously */
	uint32_t rmask; /* events registered for rfd */
	bool wout;	/* EPOLLOUT registered (wfd) */
	struct buf in, out;
	size_t scanned; /* bytes after in.off known to hold no newline */
	bool eof, closing, dead, paused;
	bool inq;	   /* messages buffered past this turn's budget (loop.c) */
	struct peer *peer; /* line transports: its peer */
	/* HTTP */
	struct http_req req;
	bool have_head;
	struct xchg *x;	  /* the exchange in progress */
	bool close_after; /* Connection: close, or an SSE stream */
	bool parsing;	  /* inside http_conn_input */
	uint64_t req_ns;  /* the first byte of a request seen (http_conns_tick) */
	uint64_t idle_ns; /* no request, no answer pending since */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	uint64_t id;
	int refs; /* exchanges that point at it */
	struct conn *next, *prev;
};

void buf_add(struct buf *b, const char *s, size_t n);
void conn_flush(struct conn *c);
/* Close after what is queued has been written. */
void conn_finish(struct conn *c);
void conn_kill(struct conn *c);
void conn_put(struct conn *c);
/* Output pending on c, in bytes. */
size_t conn_backlog(const struct conn *c);
#define CONN_SOFT_LIMIT (4u << 20)  /* notifications dropped, reading paused */
#define CONN_HARD_LIMIT (64u << 20) /* the client is not reading: closed */

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

/* health.c: /healthz and /readyz for an orchestrator (Kubernetes'
 * probes), served without the token. */
enum { HEALTH_PROBING, HEALTH_READY, HEALTH_UNREADY };
/* Start probing the isolation level (a thread); again from the timer
 * while unready, at most every HEALTH_REPROBE_S seconds. */
#define HEALTH_REPROBE_S 30
void health_start(struct srv *s);
void health_tick(struct srv *s);
/* Join a probe thread that has finished (loop thread). */
void health_reap(struct srv *s);
/* Probe again now, unready meanwhile (after an activation). */
void health_recheck(struct srv *s);
void health_stop(struct srv *s);
/* The answer to GET path (1: it was a health path, *status and body set;
 * 0: not one).  body is a short static-size text. */
int health_answer(struct srv *s, const char *path, int *status, char *body, size_t cap);

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

/* dispatch.c: a text from peer p (a line, a body); x: its HTTP exchange
 * (or NULL).  Answers go out through the peer's connection or x. */
void dispatch_text(struct srv *s, struct peer *p, struct xchg *x, const char *buf, size_t len);
/* The loop's side of a worker's message. */
void dispatch_deliver(struct srv *s, struct outmsg *m);
struct peer *peer_new(struct srv *s, enum transport kind);
/* The peer's connection is gone: cancel its calls, end its sandboxes. */
void peer_close(struct srv *s, struct peer *p);
/* ... unless it is a named socket session (session.open): its calls are
 * cancelled, its sandboxes kept for a connection that names it again
 * within --session-idle.  true: kept. */
bool peer_detach(struct srv *s, struct peer *p);
/* session.open (harness.c's table, dispatch.c's tables) */
json_t *m_session_open(struct call *c, struct rpc_err *e);
void peer_put(struct peer *p);
/* Cancel every call and end every sandbox (shutdown). */
void dispatch_stop(struct srv *s);
int workers_start(struct srv *s);
void workers_stop(struct srv *s);
/* Send msg to where c's answers go (loop thread); returns false when
 * nobody is there to read it. */
bool deliver_to_peer(struct srv *s, struct peer *p, struct xchg *x, json_t *msg, bool final);

/* conn-level output for line transports and HTTP (loop.c, httpconn.c) */
bool conn_send_line(struct conn *c, const char *s, size_t n, bool droppable);
/* HTTP exchanges (httpconn.c) */
void xchg_add_pending(struct xchg *x);
bool xchg_send(struct xchg *x, json_t *msg, bool final);
void xchg_put(struct xchg *x);
struct xchg *xchg_get(struct xchg *x);
void xchg_wants_stream(struct xchg *x);
/* Parse and serve what the connection has read (loop.c calls it). */
struct conn;
int http_conn_input(struct srv *s, struct conn *c);
void http_conn_closed(struct srv *s, struct conn *c);
void http_sessions_tick(struct srv *s);
/* Once a second: close the HTTP connections past a deadline. */
void http_conns_tick(struct srv *s);
/* Answer 503 on a just-accepted fd and close it (the connection cap). */
void http_refuse(struct srv *s, int fd, const char *why);
/* Bounds on unauthenticated work (2,000 half-sent heads stayed
 * open, each a descriptor and a buffer, for ever):
 *   HTTP_MAX_CONNS      connections at once; more get 503 and are closed
 *   HTTP_HEAD_TIMEOUT   seconds from a request's first byte to its head's end
 *   HTTP_BODY_TIMEOUT   ... to its body's end
 *   HTTP_IDLE_TIMEOUT   seconds a connection may wait with no request */
#define HTTP_MAX_CONNS 256
#define HTTP_HEAD_TIMEOUT 10
#define HTTP_BODY_TIMEOUT 60
#define HTTP_IDLE_TIMEOUT 120
/* End an HTTP session: cancel its calls, end its sandboxes, drop the
 * session table's reference. */
void session_end(struct srv *s, struct peer *p, const char *why);
int http_listen(struct srv *s, uint64_t tag);
/* dispatch.c: cancel the calls answered through x (its client is gone) */
void dispatch_cancel_xchg(struct srv *s, struct xchg *x, struct peer *p);

/* restore.c: sessions that come back after a restart on --state-dir */
int srv_records_open(struct srv *s);
/* Whether p's new cow sandboxes are library sessions written down. */
bool srv_persists(const struct peer *p);
/* Write p's record (its session sandboxes), or remove it when it has
 * none; nothing while the server stops (the records stay). */
void record_save(struct srv *s, struct peer *p);
/* Take back the sessions of the records (at start; after activation). */
void srv_restore(struct srv *s);

/* mcp.c */
extern const char *const mcp_versions[4];
bool mcp_version_known(const char *v);
bool mcp_tool_blocked(struct srv *s, const char *tool);
json_t *tooldefs_load(void); /* tooldefs.c: the tools as tools/list shows them */
json_t *mcp_initialize(struct call *c, struct rpc_err *e);
json_t *mcp_tools_list(struct call *c, struct rpc_err *e);
json_t *mcp_tools_call(struct call *c, struct rpc_err *e);
/* The tools' JSON Schemas, for mcp.c and the fuzz target. */
const json_t *mcp_tool_schema(const char *tool);
/* A tool result: content text (sanitised here), structuredContent, isError. */
json_t *mcp_tool_result(struct srv *s, const char *text, json_t *structured, bool is_error);

/* result.c */
/* A change set or apply report as the library writes it for a strict
 * parser (wd_report_json: a byte that is not UTF-8 as the text \xNN),
 * with only its first max_files files (0: all), embedded whole.  Results
 * and decisions are read through their accessors. */
json_t *report_embed(const wd_report *r, size_t max_files);
/* A decision as wd_decision_json() describes it, built from its
 * accessors (a byte that is not UTF-8 as the text \xNN); NULL for NULL. */
json_t *decision_json(const wd_decision *d);
json_t *result_for_harness(const wd_result *r);
json_t *result_for_model(struct srv *s, const wd_result *r);

/* harness.c: the images a caller may choose (--image, --allow-image) */
json_t *srv_images_offered(const struct srv *s);

/* run.c */
/* The sandbox spec of this server: its workspace, isolation, limits (lim,
 * or the server's), --protect, --allow-range; and image (a name: resolved
 * to its digest now, once, and set by the digest, which *digest receives
 * when not NULL; NULL: the host's /usr). */
wd_spec *run_spec(struct srv *s, const struct wd_limits *lim, const char *image, char *digest,
		  struct wd_err *err);
/* ref's digest in the store now, as "sha256:HEX" (wd_image_inspect). */
int srv_image_digest(struct srv *s, const char *ref, char *out, struct wd_err *err);
/* A command's wall clock when none is asked: the server's --timeout, else
 * the library's default (wd_limits_defaults). */
uint64_t server_timeout_ms(const struct srv *s);
/* The image a judged command of route rt (NULL: none) runs in: the
 * tool's (the policy's tools.NAME.image), else the server's --image, else
 * NULL. */
const char *srv_run_image(const struct srv *s, const struct route *rt);
int run_oneshot(struct call *c, const wd_spec *spec, wd_cmd *cmd, wd_result **out,
		struct wd_err *err);
/* run_command's arguments as a wd_cmd for the policy stage (run.c), under
 * rt, run_command's route (the call's) */
int run_command_cmd(json_t *args, const struct route *rt, wd_cmd *cmd, struct wd_err *err);
json_t *run_command_tool(struct call *c, json_t *args, struct rpc_err *e);
json_t *run_harness(struct call *c, struct rpc_err *e);	 /* sandbox.run */
json_t *exec_harness(struct call *c, struct rpc_err *e); /* sandbox.exec */
/* cmd in the live sandbox l (held by the caller), cancellable by c's
 * cancellation (which ends the command, not the sandbox).  0 with *out. */
int live_exec(struct call *c, struct live *l, wd_cmd *cmd, wd_result **out, struct wd_err *err);
/* An ephemeral run from the warm pool (pool.c), cancellable as run_oneshot. */
int run_pooled(struct call *c, wd_cmd *cmd, wd_result **out, struct wd_err *err);

/* pool.c: the warm pool (--pool, sandbox.pool).  start: at the end of
 * srv_init (a pool that cannot work is an error); stop: when every call
 * has ended, logging the pool's stats. */
int srv_pool_start(struct srv *s);
void srv_pool_stop(struct srv *s);
/* Should an ephemeral run take a pooled sandbox?  judged: the command goes
 * through the policy stage; rt: its tool's route (NULL: no tool).  false
 * without a pool, or when the run's sandbox would differ from the pool's. */
bool srv_pool_fits(struct srv *s, bool judged, const struct route *rt);
int srv_pool_run(struct srv *s, const wd_cmd *cmd, wd_result **out, struct wd_err *err);
json_t *diff_tool(struct call *c, json_t *args, struct rpc_err *e);
/* The text of a diff for a model (diff.c): at most MODEL_TEXT_CAP bytes of
 * text, cut at a line (or character) boundary, then a marker saying how
 * many bytes were left out and how to see them (a new string). */
#define MODEL_TEXT_CAP (64u << 10)
#define DIFF_MODEL_FILES 1000 /* structuredContent.files, the rest counted */
char *diff_text_capped(const char *text);
json_t *diff_harness(struct call *c, struct rpc_err *e);    /* sandbox.diff */
json_t *apply_harness(struct call *c, struct rpc_err *e);   /* sandbox.apply */
json_t *discard_harness(struct call *c, struct rpc_err *e); /* sandbox.discard */
/* The event handler of the context: output events to the running call. */
void run_on_event(const wd_event *ev, void *data);

/* files.c: the file tools, shared by MCP (text for a model) and the
 * harness methods (data for a program), on ws: the server's workspace,
 * or a live sandbox's view of it. */
json_t *file_tool(struct call *c, wd_workspace *ws, const char *tool, json_t *args, bool for_model,
		  struct rpc_err *e);

/* tooldefs.c: the MCP tools, one entry each; tools/list and tools/call
 * both read this table (adding a tool is adding an entry). */
enum {
	MCP_T_LISTS = 1u << 0, /* reads the peer's sandboxes (taken on the loop thread) */
	MCP_T_TAKES = 1u << 1, /* takes its sandbox out of the peer's table (ends it) */
};
typedef json_t *(*mcp_call_fn)(struct call *c, const char *name, json_t *args, struct rpc_err *e);
typedef json_t *(*mcp_live_fn)(struct call *c, struct live *l, const char *name, json_t *args,
			       struct rpc_err *e);
struct mcp_tool {
	const char *name;
	unsigned flags; /* MCP_T_* */
	/* takes an optional "sandbox": the property's description, and the
	 * end of the sentence added to the tool's (NULL: takes none) */
	const char *sandbox_arg, *sandbox_more;
	/* tools/list: fits the definition to this server (or NULL) */
	void (*offer)(struct srv *s, json_t *def);
	mcp_call_fn call; /* tools/call without a sandbox (NULL: its schema requires one) */
	mcp_live_fn live; /* ... with the live sandbox "sandbox" names (NULL: takes none) */
	const char *def;  /* JSON: name, title, description, schemas, annotations */
};
extern const struct mcp_tool mcp_tools[];
extern const size_t mcp_ntools;
const struct mcp_tool *mcp_tool_find(const char *name);

/* The handlers of the table's entries, where each tool is answered. */
void mcp_offer_network(struct srv *s, json_t *def); /* server.c */
void mcp_offer_images(struct srv *s, json_t *def);  /* server.c */
json_t *mcp_run_command(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *mcp_file_tool(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *mcp_diff_tool(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *session_create(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *session_list(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *session_run(struct call *c, struct live *l, const char *name, json_t *args,
		    struct rpc_err *e);
json_t *session_file(struct call *c, struct live *l, const char *name, json_t *args,
		     struct rpc_err *e);
json_t *session_diff(struct call *c, struct live *l, const char *name, json_t *args,
		     struct rpc_err *e);
json_t *session_destroy(struct call *c, struct live *l, const char *name, json_t *args,
			struct rpc_err *e);
json_t *session_discard(struct call *c, struct live *l, const char *name, json_t *args,
			struct rpc_err *e);

/* session.c: the MCP tools on live sandboxes (sandbox_create, _list,
 * _destroy, workspace_discard, and the tools given a "sandbox") */
/* On the loop thread, as tools/call is admitted: the sandbox its
 * arguments name, if this peer has it, becomes c->live (taken out of the
 * table by a tool that ends it); a tool that lists them gets the
 * table's ids. */
void session_admit(struct peer *p, struct call *c);
/* tools/call of t with a "sandbox": the live sandbox's handler, or a
 * tool error naming an id this peer does not have. */
json_t *session_tool(struct call *c, const struct mcp_tool *t, json_t *args, struct rpc_err *e);

/* harness.c */
json_t *h_sandbox_create(struct call *c, struct rpc_err *e);
/* sandbox.create with these params (the MCP tool's): c->created is set. */
json_t *sandbox_create_with(struct call *c, json_t *params, struct rpc_err *e);
json_t *h_sandbox_destroy(struct call *c, struct rpc_err *e);
json_t *h_sandbox_files(struct call *c, struct rpc_err *e);
json_t *h_policy_check(struct call *c, struct rpc_err *e);
json_t *h_tool_route(struct call *c, struct rpc_err *e);
json_t *h_approval_list(struct call *c, struct rpc_err *e);
json_t *h_approval_grant(struct call *c, struct rpc_err *e);
json_t *h_audit_verify(struct call *c, struct rpc_err *e);

/* params helpers (harness.c): typed members with -32602 on a wrong type */
bool p_str(json_t *params, const char *key, bool required, const char **out, struct rpc_err *e);
bool p_bool(json_t *params, const char *key, bool *out, struct rpc_err *e);
bool p_uint(json_t *params, const char *key, uint64_t max, uint64_t *out, struct rpc_err *e);
bool p_only(json_t *params, const char *const *keys, struct rpc_err *e);

#endif
