/* fuzz_server_message: the message layer of `warden serve`, everything a
 * client's bytes meet before a method runs.
 *
 * The input is taken, in turn, as:
 *  1. an HTTP request (http_parse_head, then the body after the head);
 *  2. a JSON-RPC text: rpc_parse classifies each message, and the
 *     answers are built and written as the server would; tools/call's
 *     arguments are checked against the tool's published schema, and
 *     initialize's protocol version is negotiated;
 *  3. output for a model: sanitize_text whole and in two chunks (the
 *     streaming path), which must agree byte for byte, hold no ESC and
 *     be valid UTF-8; then sanitize_images and utf8_visible.
 * A disagreement or an invalid result aborts (a finding). */
#include "server/rpc.h"
#include "server/sanitize.h"
#include "server/schema.h"
#include "server/http.h"
#include "server/tools.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void
answer(struct rpc_msg *m)
{
	json_t *out;
	if (m->kind == RPC_INVALID) {
		out = rpc_error(m->id, m->err_code, m->err_msg, NULL);
	} else if (m->kind == RPC_REQUEST || m->kind == RPC_NOTIFICATION) {
		out = rpc_result(m->id, json_object());
		json_t *params = json_is_object(m->params) ? m->params : NULL;
		if (!strcmp(m->method, "tools/call") && params) {
			const char *name = json_string_value(json_object_get(params, "name"));
			const json_t *schema = name ? mcp_tool_schema(name) : NULL;
			json_t *args = json_object_get(params, "arguments");
			char why[300];
			if (schema && json_is_object(args))
				schema_check(schema, args, why, sizeof(why));
		} else if (!strcmp(m->method, "initialize") && params) {
			const char *v =
			    json_string_value(json_object_get(params, "protocolVersion"));
			if (v)
				mcp_version_known(v);
		}
	} else {
		return;
	}
	char *key = rpc_id_key(m->id);
	char *text = rpc_dump(out, NULL);
	if (strchr(text, '\n'))
		abort(); /* a message must be one line of the line transports */
	free(text);
	free(key);
	json_decref(out);
}

static void
as_jsonrpc(const char *buf, size_t len)
{
	struct rpc_batch b;
	if (rpc_parse(buf, len, &b) == 0) {
		for (size_t i = 0; i < b.n; i++)
			answer(&b.msgs[i]);
	} else {
		json_t *e = rpc_error(NULL, b.err_code, b.err_msg, NULL);
		free(rpc_dump(e, NULL));
		json_decref(e);
	}
	rpc_batch_fini(&b);
}

static void
check_text(const char *s, size_t n)
{
	if (memchr(s, 0x1b, n))
		abort(); /* an escape sequence survived */
	size_t vn = 0;
	char *v = utf8_visible(s, n, true, NULL, &vn);
	if (vn != n || memcmp(v, s, n))
		abort(); /* not valid UTF-8 */
	free(v);
}

static void
as_output(const char *buf, size_t len)
{
	size_t whole_n = 0;
	char *whole = sanitize_text(buf, len, true, NULL, &whole_n);
	check_text(whole, whole_n);

	/* the streaming path: a first chunk, its unfinished tail carried */
	size_t half = len / 2, used = 0, n1 = 0, n2 = 0;
	char *a = sanitize_text(buf, half, false, &used, &n1);
	char *b = sanitize_text(buf + used, len - used, true, NULL, &n2);
	if (n1 + n2 != whole_n || memcmp(a, whole, n1) || memcmp(b, whole + n1, n2))
		abort(); /* streaming disagrees with the whole */
	free(a);
	free(b);

	static const char *const allow[] = {"docs.example.org", "*.github.com"};
	free(sanitize_images(whole, allow, 2));
	free(whole);
	free(utf8_visible(buf, len, true, NULL, NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct http_req r;
	if (http_parse_head(buf, size, &r) == 1) {
		http_accepts(r.accept, "text/event-stream");
		as_jsonrpc(buf + r.head_len, size - r.head_len);
	}
	as_jsonrpc(buf, size);
	as_output(buf, size);
	return 0;
}
