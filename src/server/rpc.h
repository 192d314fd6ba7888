/* server/rpc.h - JSON-RPC 2.0 messages (rpc.c, pure): parse and classify
 * a text, build answers, and the error codes of docs/server.md.  The
 * message layer: it knows nothing of connections, calls or sandboxes. */
#ifndef WD_SERVER_RPC_H
#define WD_SERVER_RPC_H

#include "server/base.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

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

/* What a method returns: a result, or an error (rpc_err_set: dispatch.c). */
struct rpc_err {
	int code;
	char msg[512];
	json_t *data;
};
int rpc_err_set(struct rpc_err *e, int code, const char *fmt, ...) SRV_PRINTF(3, 4);

#endif
