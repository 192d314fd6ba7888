/* server/httpconn: MCP's Streamable HTTP transport on a connection.
 *
 * One endpoint, /mcp (MCP 2025-03-26 and later, "Transports"):
 *   POST  a JSON-RPC message (or a batch).  Only notifications and
 *         responses: 202.  Requests: one JSON answer (application/json),
 *         or, when a call streams progress and the client accepts it, an
 *         SSE stream (text/event-stream) carrying the notifications and
 *         then the answers, closed after the last one.
 *   GET   405: warden sends nothing unasked, so there is no stream to open.
 *   DELETE ends the session (its calls are cancelled, its sandboxes end).
 *
 * Sessions: initialize (without Mcp-Session-Id) creates one, and the
 * answer carries its id in Mcp-Session-Id; every later request must
 * send it (400 without, 404 for an unknown or ended one).  A session idle
 * for --session-idle seconds ends.
 *
 * Security (the transport's "Security Warning"):
 *  - every request needs "Authorization: Bearer TOKEN" (401 otherwise),
 *    compared in constant time;
 *  - Origin, when sent, must be one of --allow-origin or a loopback
 *    origin, and on a loopback listener Host must name loopback (403):
 *    a web page the user visits cannot reach the server through DNS
 *    rebinding;
 *  - bodies are bounded by --max-message (413, then closed), heads by
 *    HTTP_MAX_HEAD (431);
 *  - before any of that, a connection costs a descriptor and a buffer
 *    without a token: at most HTTP_MAX_CONNS are open (503 for more), a
 *    head must arrive within HTTP_HEAD_TIMEOUT seconds of its first byte
 *    and the body within HTTP_BODY_TIMEOUT (408, closed), and a
 *    connection with nothing to do is closed after HTTP_IDLE_TIMEOUT.
 * A client that closes its connection while its calls run has them
 * cancelled: warden keeps no event log to resume a stream from. */
#include "server/conn.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/http.h"
#include "server/tools.h"
#include "server/srv.h"
#include "server/health.h"
#include "server/dispatch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

struct xchg {
	int refs;
	struct srv *srv;
	struct conn *conn; /* NULL once it is gone */
	struct peer *peer;
	bool batch, accepts_sse, want_sse, sse, dispatching, requests, finished;
	int pending;
	json_t *answers;  /* JSON mode */
	char session[40]; /* to announce (initialize) */
};

struct xchg *
xchg_get(struct xchg *x)
{
	x->refs++;
	return x;
}

void
xchg_put(struct xchg *x)
{
	if (!x || --x->refs > 0)
		return;
	json_decref(x->answers);
	if (x->conn)
		conn_put(x->conn);
	if (x->peer)
		peer_put(x->peer);
	free(x);
}

void
xchg_add_pending(struct xchg *x)
{
	x->pending++;
	x->requests = true;
}

void
xchg_wants_stream(struct xchg *x)
{
	x->want_sse = true;
}

/* ---- responses ---- */

static void
head(struct conn *c, int status, const char *type, size_t len, const char *extra,
     const char *session)
{
	char h[1024];
	int n = snprintf(h, sizeof(h), "HTTP/1.1 %d %s\r\nCache-Control: no-store\r\n", status,
			 http_reason(status));
	if (type)
		n += snprintf(h + n, sizeof(h) - (size_t)n, "Content-Type: %s\r\n", type);
	if (len != (size_t)-1)
		n += snprintf(h + n, sizeof(h) - (size_t)n, "Content-Length: %zu\r\n", len);
	if (session && session[0])
		n += snprintf(h + n, sizeof(h) - (size_t)n, "Mcp-Session-Id: %s\r\n", session);
	if (c->close_after)
		n += snprintf(h + n, sizeof(h) - (size_t)n, "Connection: close\r\n");
	n += snprintf(h + n, sizeof(h) - (size_t)n, "%s\r\n", extra ? extra : "");
	buf_add(&c->out, h, (size_t)n);
}

/* A whole response; the connection goes on to the next request (or
 * closes, after Connection: close). */
static void
respond(struct conn *c, int status, const char *type, const char *body, const char *extra,
	const char *session)
{
	size_t len = body ? strlen(body) : 0;
	head(c, status, type, len, extra, session);
	if (len)
		buf_add(&c->out, body, len);
	if (c->close_after)
		conn_finish(c);
	else
		conn_flush(c);
}

static void
respond_error(struct conn *c, int status, const char *why, const char *extra)
{
	/* the body is a JSON-RPC error, so that a client that reads JSON
	 * reads why; the status is what HTTP clients act on */
	json_t *e = rpc_error(NULL,
			      status == 404   ? SRV_E_NOT_INITIALIZED
			      : status == 503 ? SRV_E_NOT_ACTIVATED
					      : RPC_INVALID_REQUEST,
			      why, NULL);
	char *t = rpc_dump(e, NULL);
	json_decref(e);
	respond(c, status, "application/json", t, extra, NULL);
	free(t);
}

static void
sse_event(struct conn *c, json_t *msg)
{
	size_t n;
	char *t = rpc_dump(msg, &n);
	buf_add(&c->out, "event: message\ndata: ", 21);
	buf_add(&c->out, t, n);
	buf_add(&c->out, "\n\n", 2);
	free(t);
}

static void
xchg_detach(struct xchg *x)
{
	struct conn *c = x->conn;
	if (!c)
		return;
	x->finished = true;
	if (c->x == x) {
		c->x = NULL;
		xchg_put(x);
	}
}

/* Everything is answered: the JSON answer goes out, or the SSE stream
 * ends. */
static void xchg_complete_held(struct xchg *x);

static void
xchg_complete(struct xchg *x)
{
	/* held across the answer: with Connection: close, respond() may
	 * write it all and close the connection at once, which drops the
	 * connection's reference to x (http_conn_closed); x was then used
	 * after it was freed (a client sending Connection: close did it).
	 * The connection too, as its last reference may be x's. */
	xchg_get(x);
	struct conn *c = x->conn;
	if (c)
		c->refs++;
	xchg_complete_held(x);
	conn_put(c);
	xchg_put(x);
}

static void
xchg_complete_held(struct xchg *x)
{
	struct conn *c = x->conn;
	if (x->finished || !c || c->dead)
		return;
	if (x->sse) {
		xchg_detach(x);
		conn_finish(c);
		return;
	}
	size_t n = json_array_size(x->answers);
	if (n == 0) {
		respond(c, 202, NULL, NULL, NULL, x->session);
	} else {
		json_t *body =
		    x->batch ? json_incref(x->answers) : json_incref(json_array_get(x->answers, 0));
		char *t = rpc_dump(body, NULL);
		json_decref(body);
		respond(c, 200, "application/json", t, NULL, x->session);
		free(t);
	}
	xchg_detach(x);
	/* the next request on this connection, if one is already here */
	if (!c->dead && !c->closing && !c->parsing && c->in.len > c->in.off)
		http_conn_input(x->srv, c);
}

static void
start_sse(struct xchg *x)
{
	struct conn *c = x->conn;
	x->sse = true;
	c->close_after = true; /* the stream's end is the connection's end */
	head(c, 200, "text/event-stream", (size_t)-1, NULL, x->session);
	size_t i;
	json_t *m;
	json_array_foreach(x->answers, i, m) sse_event(c, m);
	json_array_clear(x->answers);
	conn_flush(c);
}

bool
xchg_send(struct xchg *x, json_t *msg, bool final)
{
	if (final)
		x->pending--;
	struct conn *c = x->conn;
	if (!c || c->dead || x->finished)
		return false;
	if (x->sse) {
		if (msg && (final || conn_backlog(c) < CONN_SOFT_LIMIT)) {
			sse_event(c, msg);
			conn_flush(c);
		}
	} else if (final && msg) {
		json_array_append(x->answers, msg);
	} else if (!final && msg && x->accepts_sse && !x->dispatching) {
		/* a notification while the answer is awaited: switch to SSE */
		start_sse(x);
		sse_event(c, msg);
		conn_flush(c);
	}
	if (x->pending == 0 && !x->dispatching)
		xchg_complete(x);
	return !c->dead;
}

/* ---- sessions ---- */

static struct peer *
session_find(struct srv *s, const char *id)
{
	for (struct peer *p = s->peers; p; p = p->next)
		if (p->kind == T_HTTP && !p->closed && !strcmp(p->session, id))
			return p;
	return NULL;
}

void
session_end(struct srv *s, struct peer *p, const char *why)
{
	srv_log(s, WD_LOG_INFO, "%s session %llu ended: %s", p->kind == T_HTTP ? "HTTP" : "socket",
		(unsigned long long)p->seq, why);
	peer_close(s, p);
	peer_put(p); /* the session table's reference */
}

void
http_sessions_tick(struct srv *s)
{
	uint64_t now = now_ns();
	for (struct peer *p = s->peers, *next; p; p = next) {
		next = p->next;
		if ((p->kind == T_HTTP || p->detached) && !p->closed && !p->calls &&
		    now - p->last_ns > s->o.session_idle_s * 1000000000ull)
			session_end(s, p, "idle");
	}
}

/* The deadlines of HTTP_HEAD_TIMEOUT and its neighbours, at the timer's
 * one-second grain: when a request started and when the connection went
 * idle are noted here, not on every read. */
void
http_conns_tick(struct srv *s)
{
	uint64_t now = now_ns(), sec = 1000000000ull;
	for (struct conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (c->kind != T_HTTP || c->dead || c->closing || c->x) {
			if (c->kind == T_HTTP)
				c->req_ns = c->idle_ns = 0;
			continue;
		}
		if (c->have_head || c->in.len > c->in.off) {
			c->idle_ns = 0;
			if (!c->req_ns)
				c->req_ns = now;
			uint64_t limit = c->have_head ? HTTP_BODY_TIMEOUT : HTTP_HEAD_TIMEOUT;
			if (now - c->req_ns <= limit * sec)
				continue;
			srv_log(s, WD_LOG_WARN,
				"http: connection %llu: the request's %s did not "
				"arrive within %llu s; closed",
				(unsigned long long)c->id, c->have_head ? "body" : "head",
				(unsigned long long)limit);
			const char *why = c->have_head
					      ? "the body did not arrive in time"
					      : "the request's head did not arrive in time";
			c->close_after = true;
			c->have_head = false;
			c->in.off = c->in.len = 0;
			respond_error(c, 408, why, NULL);
			continue;
		}
		c->req_ns = 0;
		if (!c->idle_ns)
			c->idle_ns = now;
		else if (now - c->idle_ns > HTTP_IDLE_TIMEOUT * sec)
			conn_kill(c);
	}
}

void
http_refuse(struct srv *s, int fd, const char *why)
{
	char h[512];
	int n = snprintf(h, sizeof(h),
			 "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s\n",
			 strlen(why) + 1, why);
	/* best effort: a non-blocking socket's empty send buffer takes it */
	(void)!send(fd, h, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
	(void)s;
}

/* Is the body one initialize request (which opens a session)? */
static bool
is_initialize(const char *body, size_t len)
{
	json_error_t je;
	json_t *o = json_loadb(body, len, 0, &je);
	const char *m = json_string_value(json_object_get(o, "method"));
	bool yes = json_is_object(o) && m && !strcmp(m, "initialize");
	json_decref(o);
	return yes;
}

static struct peer *
session_new(struct srv *s)
{
	struct peer *p = peer_new(s, T_HTTP);
	unsigned char r[16];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		abort(); /* no randomness: no unguessable session ids */
	for (int i = 0; i < 16; i++)
		snprintf(p->session + 2 * i, 3, "%02x", r[i]);
	return p;
}

/* ---- checks ---- */

static bool
token_ok(struct srv *s, const char *auth)
{
	if (!s->token || strncasecmp(auth, "Bearer ", 7))
		return false; /* no token: the file went bad (srv_token_watch) */
	const char *t = auth + 7;
	size_t a = strlen(t), b = strlen(s->token);
	/* constant time: every byte of the token is compared whatever the
	 * caller sent, so the time says nothing about how much matched */
	unsigned diff = (unsigned)(a ^ b);
	for (size_t i = 0; i < b; i++)
		diff |= (unsigned char)(s->token[i] ^ (i < a ? t[i] : 0));
	return diff == 0;
}

static bool
loopback_name(const char *host, size_t n)
{
	static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		size_t l = strlen(names[i]);
		if (n == l && !strncasecmp(host, names[i], l))
			return true;
	}
	return false;
}

/* host[:port] -> is the host loopback? */
static bool
loopback_hostport(const char *hp)
{
	const char *end = hp[0] == '[' ? strchr(hp, ']') : strchr(hp, ':');
	size_t n = end ? (size_t)(end - hp) + (hp[0] == '[') : strlen(hp);
	return loopback_name(hp, n);
}

static bool
origin_ok(struct srv *s, const char *origin)
{
	if (!origin[0])
		return true; /* not a browser */
	for (size_t i = 0; i < s->o.nallow_origins; i++)
		if (!strcmp(origin, s->o.allow_origins[i]))
			return true;
	const char *h = strstr(origin, "://");
	return h && loopback_hostport(h + 3);
}

/* ---- requests ---- */

static void
post(struct srv *s, struct conn *c, const char *body, size_t len)
{
	struct http_req *r = &c->req;
	struct peer *p = NULL;
	bool fresh = false;
	if (strncasecmp(r->content_type, "application/json", 16) != 0) {
		respond_error(c, 415, "Content-Type must be application/json", NULL);
		return;
	}
	if (r->session[0]) {
		if (!(p = session_find(s, r->session))) {
			respond_error(c, 404, "unknown or ended session: initialize again", NULL);
			return;
		}
	} else if (is_initialize(body, len)) {
		p = session_new(s);
		fresh = true;
	} else {
		respond_error(c, 400, "Mcp-Session-Id header required: send initialize first",
			      NULL);
		return;
	}
	if (r->version[0] && !mcp_version_known(r->version)) {
		respond_error(c, 400, "unsupported MCP-Protocol-Version", NULL);
		return;
	}
	struct xchg *x = xcalloc(1, sizeof(*x));
	x->refs = 1; /* the connection's */
	x->srv = s;
	x->conn = c;
	c->refs++;
	x->peer = p;
	p->refs++;
	x->answers = json_array();
	x->accepts_sse = http_accepts(r->accept, "text/event-stream");
	x->batch = len && body[strspn(body, " \t\r\n")] == '[';
	if (fresh)
		snprintf(x->session, sizeof(x->session), "%s", p->session);
	c->x = x;
	x->dispatching = true;
	dispatch_text(s, p, x, body, len);
	x->dispatching = false;
	if (fresh && !p->mcp) {
		/* initialize was refused (bad params): no session after all */
		x->session[0] = '\0';
		session_end(s, p, "initialize failed");
	}
	if (x->conn && !x->finished) {
		if (x->pending == 0)
			xchg_complete(x);
		else if (x->want_sse && x->accepts_sse)
			start_sse(x);
	}
}

static void
route(struct srv *s, struct conn *c, const char *body, size_t len)
{
	struct http_req *r = &c->req;
	/* /healthz and /readyz before the token: an orchestrator's probes
	 * hold none, and the answers say nothing beyond ok or why not
	 * (health.c).  GET only; no Origin or Host check either, as the
	 * kubelet names the pod's address and a page learns nothing. */
	int hstatus;
	char hbody[512];
	if (health_answer(s, r->path, &hstatus, hbody, sizeof(hbody))) {
		if (strcmp(r->method, "GET"))
			respond(c, 405, "text/plain", "use GET\n", "Allow: GET\r\n", NULL);
		else
			respond(c, hstatus, "text/plain", hbody, NULL, NULL);
		return;
	}
	if (s->draining)
		c->close_after = true; /* a client on keep-alive goes elsewhere */
	/* --await-activation: no token exists yet, and no tenant's state;
	 * 503 says so to anyone (the same words /readyz gives) */
	if (!s->activated) {
		respond_error(c, 503,
			      "not activated: this server awaits server.activate on its owner's "
			      "socket",
			      NULL);
		return;
	}
	if (!token_ok(s, r->auth)) {
		srv_log(s, WD_LOG_WARN, "http: connection %llu: missing or wrong bearer token",
			(unsigned long long)c->id);
		respond_error(c, 401, "a bearer token is required",
			      "WWW-Authenticate: Bearer realm=\"warden\"\r\n");
		return;
	}
	if (!origin_ok(s, r->origin) || (s->tcp_loopback && !loopback_hostport(r->host))) {
		respond_error(c, 403, "Origin or Host not allowed (DNS rebinding protection)",
			      NULL);
		return;
	}
	size_t pl = strcspn(r->path, "?#");
	if (pl != 4 || strncmp(r->path, "/mcp", 4)) {
		respond_error(c, 404, "the endpoint is /mcp", NULL);
		return;
	}
	if (!strcmp(r->method, "POST")) {
		post(s, c, body, len);
	} else if (!strcmp(r->method, "DELETE")) {
		struct peer *p = r->session[0] ? session_find(s, r->session) : NULL;
		if (!p) {
			respond_error(c, 404, "unknown or ended session", NULL);
			return;
		}
		session_end(s, p, "DELETE");
		respond(c, 200, NULL, NULL, NULL, NULL);
	} else {
		/* GET (a server-initiated stream) is not offered: warden sends
		 * nothing a client did not ask for */
		respond_error(c, 405, "use POST (or DELETE to end a session)",
			      "Allow: POST, DELETE\r\n");
	}
}

int
http_conn_input(struct srv *s, struct conn *c)
{
	while (!c->dead && !c->closing && !c->x) {
		struct buf *b = &c->in;
		if (!c->have_head) {
			int rc = http_parse_head(b->p + b->off, b->len - b->off, &c->req);
			if (rc == 0)
				return 0;
			if (rc < 0) {
				c->close_after = true;
				respond_error(c, -rc, "malformed request", NULL);
				return -1;
			}
			c->have_head = true;
			b->off += c->req.head_len;
			c->close_after = !c->req.keep_alive;
			if (c->req.chunked ||
			    (!c->req.has_length && !strcmp(c->req.method, "POST"))) {
				c->close_after = true;
				respond_error(c, 411, "a Content-Length is required", NULL);
				return -1;
			}
			if (c->req.content_length > s->o.max_message) {
				c->close_after = true;
				respond_error(c, 413, "the body is over --max-message", NULL);
				return -1;
			}
			if (c->req.expect_continue) {
				buf_add(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
				conn_flush(c);
			}
		}
		size_t need = (size_t)c->req.content_length;
		if (b->len - b->off < need)
			return 0;
		const char *body = b->p + b->off;
		c->have_head = false;
		b->off += need;
		c->parsing = true;
		route(s, c, body, need);
		c->parsing = false;
		if (b->off == b->len)
			b->off = b->len = 0;
	}
	return 0;
}

void
http_conn_closed(struct srv *s, struct conn *c)
{
	struct xchg *x = c->x;
	if (!x)
		return;
	c->x = NULL;
	dispatch_cancel_xchg(s, x, x->peer);
	if (x->conn) {
		conn_put(x->conn);
		x->conn = NULL;
	}
	xchg_put(x);
}

/* ---- the listener ---- */

int
http_listen(struct srv *s, uint64_t tag)
{
	char host[256];
	const char *spec = s->o.listen, *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1] || (size_t)(colon - spec) >= sizeof(host)) {
		srv_log(s, WD_LOG_ERROR, "--listen: expected ADDR:PORT, such as 127.0.0.1:8765");
		return -EINVAL;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
	if (strcmp(host, "localhost"))
		hints.ai_flags |= AI_NUMERICHOST;
	int rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc) {
		srv_log(s, WD_LOG_ERROR, "--listen: %s: %s", spec, gai_strerror(rc));
		return -EINVAL;
	}
	bool loop = false;
	if (ai->ai_family == AF_INET)
		loop = (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
	else if (ai->ai_family == AF_INET6)
		loop = IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
	if (!loop && !s->o.behind_proxy) {
		freeaddrinfo(ai);
		srv_log(s, WD_LOG_ERROR,
			"--listen: %s is not a loopback address: the bearer token would cross the "
			"network in clear; put a TLS proxy in front and say so with "
			"--behind-tls-proxy",
			spec);
		return -EINVAL;
	}
	s->tcp_loopback = loop;
	s->tcp_fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(s->tcp_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s->tcp_fd < 0 || bind(s->tcp_fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(s->tcp_fd, 128) < 0) {
		srv_log(s, WD_LOG_ERROR, "--listen: %s: %s", spec, strerror(errno));
		freeaddrinfo(ai);
		return -errno;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(s->tcp_fd, (struct sockaddr *)&ss, &sl);
	char addr[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (ss.ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	} else {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
	epoll_ctl(s->ep, EPOLL_CTL_ADD, s->tcp_fd, &ev);
	/* always printed: with port 0 this is how a caller learns the port */
	char url[INET6_ADDRSTRLEN + 32];
	snprintf(url, sizeof(url), "http://%s%s%s:%d/mcp", ss.ss_family == AF_INET6 ? "[" : "",
		 addr, ss.ss_family == AF_INET6 ? "]" : "", port);
	if (s->o.log_json)
		srv_logf(s, WD_LOG_INFO, json_pack("{s:s,s:i}", "url", url, "port", port),
			 "listening on %s", url);
	else
		fprintf(stderr, "warden: serve: listening on %s\n", url);
	return 0;
}
