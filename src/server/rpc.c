/* server/rpc: JSON-RPC 2.0 messages, pure (no I/O, no threads).
 *
 * One text (a line of the stdio or socket transport, a POST body) holds a
 * message or a batch.  rpc_parse() classifies each element as the spec
 * says (https://www.jsonrpc.org/specification, sections 4, 5 and 6):
 *
 *   not JSON                         -> -32700 Parse error, id null
 *   [] or not an object / array      -> -32600 Invalid Request, id null
 *   "jsonrpc" != "2.0", "method" not a string, "id" not a string, a
 *   number or null, "params" not an object or array
 *                                    -> -32600 (with the id when it was valid)
 *   {"method", "id"}                 -> a request
 *   {"method"} without "id"          -> a notification (never answered)
 *   {"result" | "error", "id"}       -> a response to a request of ours
 *
 * A batch larger than RPC_MAX_BATCH is refused whole (one -32600): the
 * spec sets no bound, and a server that answers 10,000 requests from one
 * line is a server one line can keep busy.  Duplicate keys are refused at
 * parse time (jansson's JSON_REJECT_DUPLICATES): {"method":"a","method":"b"}
 * has no single meaning. */
#include "server/rpc.h"
#include "server/base.h"
#include "server/sanitize.h"

#include <stdio.h>
#include <string.h>

static void
invalid(struct rpc_msg *m, json_t *id, const char *what)
{
	m->kind = RPC_INVALID;
	m->id = id;
	m->err_code = RPC_INVALID_REQUEST;
	snprintf(m->err_msg, sizeof(m->err_msg), "Invalid Request: %s", what);
}

static bool
valid_id(json_t *id)
{
	/* a number SHOULD NOT have a fractional part: refused, since an id is
	 * compared as written and 1.0 is not 1 to every client */
	return json_is_string(id) || json_is_integer(id) || json_is_null(id);
}

static void
classify(json_t *o, struct rpc_msg *m)
{
	memset(m, 0, sizeof(*m));
	if (!json_is_object(o)) {
		invalid(m, NULL, "a message is a JSON object");
		return;
	}
	json_t *ver = json_object_get(o, "jsonrpc");
	json_t *id = json_object_get(o, "id");
	json_t *method = json_object_get(o, "method");
	json_t *params = json_object_get(o, "params");
	bool has_id = id != NULL;
	if (has_id && !valid_id(id)) {
		invalid(m, NULL, "\"id\" must be a string, an integer or null");
		return;
	}
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0")) {
		invalid(m, id, "\"jsonrpc\" must be \"2.0\"");
		return;
	}
	if (!method) {
		if (has_id && (json_object_get(o, "result") || json_object_get(o, "error"))) {
			m->kind = RPC_RESPONSE;
			m->id = id;
			return;
		}
		invalid(m, id, "no \"method\"");
		return;
	}
	if (!json_is_string(method)) {
		invalid(m, id, "\"method\" must be a string");
		return;
	}
	if (params && !json_is_object(params) && !json_is_array(params)) {
		invalid(m, id, "\"params\" must be an object or an array");
		return;
	}
	m->kind = has_id ? RPC_REQUEST : RPC_NOTIFICATION;
	m->id = id;
	m->method = json_string_value(method);
	m->params = params;
}

int
rpc_parse(const char *buf, size_t len, struct rpc_batch *b)
{
	memset(b, 0, sizeof(*b));
	json_error_t je;
	b->root = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (!b->root) {
		b->err_code = RPC_PARSE_ERROR;
		snprintf(b->err_msg, sizeof(b->err_msg), "Parse error: %s at line %d, column %d",
			 je.text, je.line, je.column);
		return -1;
	}
	if (json_is_array(b->root)) {
		size_t n = json_array_size(b->root);
		if (n == 0 || n > RPC_MAX_BATCH) {
			b->err_code = RPC_INVALID_REQUEST;
			if (n)
				snprintf(b->err_msg, sizeof(b->err_msg),
					 "Invalid Request: a batch of %zu messages (at most %d)", n,
					 RPC_MAX_BATCH);
			else
				snprintf(b->err_msg, sizeof(b->err_msg),
					 "Invalid Request: an empty batch");
			return -1;
		}
		b->batch = true;
		b->n = n;
		b->msgs = xcalloc(n, sizeof(*b->msgs));
		for (size_t i = 0; i < n; i++)
			classify(json_array_get(b->root, i), &b->msgs[i]);
		return 0;
	}
	if (!json_is_object(b->root)) {
		b->err_code = RPC_INVALID_REQUEST;
		snprintf(b->err_msg, sizeof(b->err_msg),
			 "Invalid Request: a message is a JSON object or an array of them");
		return -1;
	}
	b->n = 1;
	b->msgs = xcalloc(1, sizeof(*b->msgs));
	classify(b->root, &b->msgs[0]);
	return 0;
}

void
rpc_batch_fini(struct rpc_batch *b)
{
	free(b->msgs);
	json_decref(b->root);
	memset(b, 0, sizeof(*b));
}

json_t *
rpc_result(json_t *id, json_t *result)
{
	json_t *o = json_object();
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set(o, "id", id ? id : json_null());
	json_object_set_new(o, "result", result ? result : json_object());
	return o;
}

json_t *
rpc_error(json_t *id, int code, const char *msg, json_t *data)
{
	json_t *e = json_object();
	json_object_set_new(e, "code", json_integer(code));
	json_t *m = json_string(msg ? msg : rpc_code_name(code));
	if (!m) {
		/* not UTF-8: a message cut in the middle of a character (at its
		 * buffer's end), or bytes from a file name; shown as \xNN */
		char *v = utf8_visible(msg, strlen(msg), true, NULL, NULL);
		m = json_string(v);
		free(v);
	}
	json_object_set_new(e, "message", m);
	if (data)
		json_object_set_new(e, "data", data);
	json_t *o = json_object();
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set(o, "id", id ? id : json_null());
	json_object_set_new(o, "error", e);
	return o;
}

json_t *
rpc_notification(const char *method, json_t *params)
{
	json_t *o = json_object();
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set_new(o, "method", json_string(method));
	if (params)
		json_object_set_new(o, "params", params);
	return o;
}

/* clang-format off */
static const struct {
	int code;
	const char *name;
} codes[] = {
	{RPC_PARSE_ERROR, "Parse error"},
	{RPC_INVALID_REQUEST, "Invalid Request"},
	{RPC_METHOD_NOT_FOUND, "Method not found"},
	{RPC_INVALID_PARAMS, "Invalid params"},
	{RPC_INTERNAL_ERROR, "Internal error"},
	{SRV_E_FAILED, "warden failed"},
	{SRV_E_NO_SANDBOX, "no such sandbox"},
	{SRV_E_NOT_INITIALIZED, "not initialized"},
	{SRV_E_FORBIDDEN, "not allowed on this channel"},
	{SRV_E_DUPLICATE_ID, "request id in use"},
	{SRV_E_BUSY, "server busy"},
	{SRV_E_NOT_AVAILABLE, "not available"},
	{SRV_E_FILE, "file refused"},
	{SRV_E_TOO_LARGE, "message too large"},
	{SRV_E_DRAINING, "shutting down"},
	{SRV_E_CANCELLED, "request cancelled"},
};
/* clang-format on */

const char *
rpc_code_name(int code)
{
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++)
		if (codes[i].code == code)
			return codes[i].name;
	return "error";
}

char *
rpc_dump(const json_t *msg, size_t *len)
{
	/* compact: no newline can appear inside (strings escape it), so a
	 * message is one line of the stdio and socket transports */
	char *s = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
	if (!s)
		abort();
	if (len)
		*len = strlen(s);
	return s;
}

char *
rpc_id_key(const json_t *id)
{
	return id ? rpc_dump(id, NULL) : xstrdup("");
}
