/* server/conn.h - transport connections (loop.c) and MCP Streamable
 * HTTP on them (httpconn.c): buffers, output and backpressure, the HTTP
 * exchanges, the HTTP sessions and their bounds. */
#ifndef WD_SERVER_CONN_H
#define WD_SERVER_CONN_H

#include "server/srv.h"
#include "server/http.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

#endif
