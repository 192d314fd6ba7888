/* server/dispatch.h - peers and calls (dispatch.c): routing a text to
 * its methods, delivery, cancellation, the worker pool. */
#ifndef WD_SERVER_DISPATCH_H
#define WD_SERVER_DISPATCH_H

#include "server/srv.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

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
/* dispatch.c: cancel the calls answered through x (its client is gone) */
void dispatch_cancel_xchg(struct srv *s, struct xchg *x, struct peer *p);

#endif
