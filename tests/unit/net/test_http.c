/* Unit tests for net/http.c and net/socks.c. */
#include "net/net.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

struct req_case {
	const char *in;
	int rc;
	enum net_body_mode body;
};

/* clang-format off */
static const struct req_case req_cases[] = {
	{"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", 1, NET_BODY_NONE},
	{"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n", 0, NET_BODY_NONE},
	{"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r", 0, NET_BODY_NONE},
	{"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r", 0, NET_BODY_NONE},
	{"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\n", 1, NET_BODY_LENGTH},
	{"GET http://a.test/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 1, NET_BODY_NONE},
	{"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 1, NET_BODY_CHUNKED},
	{"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: CHUNKED\r\n\r\n", 1, NET_BODY_CHUNKED},
	{"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n", 1, NET_BODY_NONE},
	{"GET / HTTP/1.0\r\n\r\n", 1, NET_BODY_NONE},
	/* malformed */
	{"GET http://a.test/ HTTP/1.1\nHost: a\n\n", -400, 0},
	{"GET http://a.test/ HTTP/1.1\r\nHost : a\r\n\r\n", -400, 0},
	{"GET http://a.test/ HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", -400, 0},
	{"GET  http://a.test/ HTTP/1.1\r\n\r\n", -400, 0},
	{"GET http://a.test/ HTTP/1.1 \r\n\r\n", -400, 0},
	{"G\x01T http://a.test/ HTTP/1.1\r\n\r\n", -400, 0},
	{"GET http://a.test/\x7f HTTP/1.1\r\n\r\n", -400, 0},
	{"GET http://a.test/ HTTP/2.0\r\n\r\n", -505, 0},
	{"GET http://a.test/ HTTP/1.2\r\n\r\n", -505, 0},
	{"GET http://a.test/ XTTP/1.1\r\n\r\n", -400, 0},
	{"\r\nGET http://a.test/ HTTP/1.1\r\n\r\n", -400, 0},
	{"GET http://a.test/ HTTP/1.1\r\nX: a\rb\r\n\r\n", -400, 0},
	{"GET http://a.test/ HTTP/1.1\r\nX: a\rb", -400, 0},
	{"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", -400, 0},
	{"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", -400, 0},
	{"POST http://a.test/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", -400, 0},
	{"POST http://a.test/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", -400, 0},
	{"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", -400, 0},
	{"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -501, 0},
	{"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", -400, 0},
	{"POST http://a.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400, 0},
	{"GET http://a.test/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -400, 0},
	{"GET http://a.test/ HTTP/1.1\r\n: x\r\n\r\n", -400, 0},
};
/* clang-format on */

Test(net_http_parse_request, request_table)
{
	struct net_http_head *h = malloc(sizeof(*h));
	for (size_t i = 0; i < sizeof(req_cases) / sizeof(req_cases[0]); i++) {
		int rc = net_http_parse_request(req_cases[i].in, strlen(req_cases[i].in), h);
		cr_expect_eq(rc, req_cases[i].rc, "%zu: rc %d want %d", i, rc, req_cases[i].rc);
		if (rc == 1) {
			cr_expect_eq(h->body, req_cases[i].body, "%zu body", i);
			cr_expect_eq(h->head_len, strlen(req_cases[i].in), "%zu len", i);
		}
	}
	free(h);
}

/* Request smuggling shapes (RFC 9112 §6.1, §6.3, §11.2): each is refused
 * with the flaw that names it, and nothing in the table parses as a
 * request whose body the proxy would frame one way and a server another. */
struct smuggle_case {
	const char *in;
	int rc;
	enum net_http_flaw flaw;
};

#define RQ "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\n"
/* clang-format off */
static const struct smuggle_case smuggle_cases[] = {
	/* Connection naming a framing or routing field: the next hop would drop
	 * the field and read the body as a second request */
	{RQ "Connection: Content-Length\r\nContent-Length: 5\r\n\r\n", -400, NET_HTTP_CONN_FRAMING},
	{RQ "Connection: close, content-length\r\nContent-Length: 5\r\n\r\n", -400, NET_HTTP_CONN_FRAMING},
	{RQ "Connection: keep-alive,\tCONTENT-LENGTH \r\nContent-Length: 5\r\n\r\n", -400, NET_HTTP_CONN_FRAMING},
	{RQ "Connection: Transfer-Encoding\r\nTransfer-Encoding: chunked\r\n\r\n", -400, NET_HTTP_CONN_FRAMING},
	{RQ "Connection: Host\r\n\r\n", -400, NET_HTTP_CONN_FRAMING},
	{RQ "Connection: expect\r\n\r\n", -400, NET_HTTP_CONN_FRAMING},
	{RQ "Connection: trailer\r\n\r\n", -400, NET_HTTP_CONN_FRAMING},
	{RQ "Connection: close\r\nConnection: Content-Length\r\n\r\n", -400, NET_HTTP_CONN_FRAMING},
	{RQ "Connection: \"content-length\"\r\n\r\n", -400, NET_HTTP_CONN_SYNTAX},
	{RQ "Connection: close; content-length\r\n\r\n", -400, NET_HTTP_CONN_SYNTAX},
	/* fields the proxy always drops may be named (RFC 9110 §10.1.4, §7.8) */
	{RQ "Connection: TE\r\nTE: trailers\r\n\r\n", 1, NET_HTTP_OK},
	{RQ "Connection: Upgrade, Keep-Alive, Proxy-Authorization\r\nUpgrade: x\r\n\r\n", 1, NET_HTTP_OK},
	{RQ "Connection: , close,,\r\n\r\n", 1, NET_HTTP_OK},
	/* Content-Length */
	{RQ "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", -400, NET_HTTP_CL_DUP},
	{RQ "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", -400, NET_HTTP_CL_DUP},
	{RQ "Content-Length: 5, 6\r\n\r\n", -400, NET_HTTP_CL_INVALID},
	{RQ "Content-Length: +5\r\n\r\n", -400, NET_HTTP_CL_INVALID},
	{RQ "Content-Length: 0x5\r\n\r\n", -400, NET_HTTP_CL_INVALID},
	{RQ "Content-Length:\r\n\r\n", -400, NET_HTTP_CL_INVALID},
	{RQ "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", -400, NET_HTTP_CL_TE},
	{RQ "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", -400, NET_HTTP_CL_TE},
	/* Transfer-Encoding obfuscations (TE.TE) */
	{RQ "Transfer-Encoding: chunked, identity\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding: chunked, chunked\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding: identity\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding: xchunked\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding: \"chunked\"\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding: chunked;q=1\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding: , chunked\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding:\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", -400, NET_HTTP_TE_INVALID},
	{RQ "Transfer-Encoding: gzip, chunked\r\n\r\n", -501, NET_HTTP_TE_UNSUPPORTED},
	{"POST http://a.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400, NET_HTTP_TE_HTTP10},
	{RQ "Transfer-Encoding: Chunked \r\n\r\n", 1, NET_HTTP_OK},
	{RQ "Transfer_Encoding: chunked\r\n\r\n", -400, NET_HTTP_NAME_ALIAS},
	{RQ "content_length: 5\r\n\r\n", -400, NET_HTTP_NAME_ALIAS},
	{RQ "X-Content_Length: 5\r\n\r\n", 1, NET_HTTP_OK},
	/* line and field boundaries */
	{RQ "Content-Length: 5\n\r\n", -400, NET_HTTP_LINE_END},
	{RQ "X: a\rContent-Length: 5\r\n\r\n", -400, NET_HTTP_LINE_END},
	{RQ "\n", -400, NET_HTTP_LINE_END},
	{RQ "X: a\r\n Content-Length: 5\r\n\r\n", -400, NET_HTTP_OBS_FOLD},
	{RQ "X: a\r\n\tTransfer-Encoding: chunked\r\n\r\n", -400, NET_HTTP_OBS_FOLD},
	{RQ "Content-Length : 5\r\n\r\n", -400, NET_HTTP_WS_COLON},
	{RQ "Transfer-Encoding\t: chunked\r\n\r\n", -400, NET_HTTP_WS_COLON},
	{"POST http://a.test/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -400, NET_HTTP_HOST_DUP},
	{"GET http://a.test/ HTTP/1.1\r\nX: a\x01\r\n\r\n", -400, NET_HTTP_SYNTAX},
};
/* clang-format on */
#undef RQ

Test(net_http_parse_request, refuses_smuggling_shapes)
{
	struct net_http_head *h = malloc(sizeof(*h));
	for (size_t i = 0; i < sizeof(smuggle_cases) / sizeof(smuggle_cases[0]); i++) {
		const struct smuggle_case *c = &smuggle_cases[i];
		int rc = net_http_parse_request(c->in, strlen(c->in), h);
		cr_expect_eq(rc, c->rc, "%zu: rc %d want %d", i, rc, c->rc);
		cr_expect_eq(h->flaw, c->flaw, "%zu: flaw '%s' want '%s'", i,
			     net_http_flaw_text(h->flaw), net_http_flaw_text(c->flaw));
	}
	/* the smuggling shapes carry their own reason code */
	cr_expect_eq(net_http_flaw_reason(NET_HTTP_CONN_FRAMING), NET_R_FRAMING);
	cr_expect_eq(net_http_flaw_reason(NET_HTTP_CL_TE), NET_R_FRAMING);
	cr_expect_eq(net_http_flaw_reason(NET_HTTP_SYNTAX), NET_R_MALFORMED);
	cr_expect_str_eq(net_reason_name(NET_R_FRAMING), "ambiguous-framing");
	free(h);
}

Test(net_http_parse_response, refuses_ambiguous_framing)
{
	/* A response the client could frame differently from the proxy would
	 * desync the client's keep-alive connection: same rules. */
	struct net_http_head *h = malloc(sizeof(*h));
	const struct smuggle_case cases[] = {
	    {"HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 3\r\n\r\n", -502,
	     NET_HTTP_CONN_FRAMING},
	    {"HTTP/1.1 200 OK\r\nConnection: transfer-encoding\r\nTransfer-Encoding: "
	     "chunked\r\n\r\n",
	     -502, NET_HTTP_CONN_FRAMING},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", -502,
	     NET_HTTP_CL_DUP},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", -502,
	     NET_HTTP_TE_INVALID},
	    {"HTTP/1.1 200 OK\r\nTransfer_Encoding: chunked\r\n\r\n", -502, NET_HTTP_NAME_ALIAS},
	    {"HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\n", -502, NET_HTTP_WS_COLON},
	    {"HTTP/1.1 200 OK\r\nX: a\r\n y\r\n\r\n", -502, NET_HTTP_OBS_FOLD},
	    {"HTTP/1.1 200 OK\r\nConnection: TE, close\r\n\r\n", 1, NET_HTTP_OK},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = net_http_parse_response(cases[i].in, strlen(cases[i].in), false, h);
		cr_expect_eq(rc, cases[i].rc, "%zu: rc %d", i, rc);
		cr_expect_eq(h->flaw, cases[i].flaw, "%zu: flaw '%s'", i,
			     net_http_flaw_text(h->flaw));
	}
	/* codings the proxy does not decode, or chunked not final (RFC 9112
	 * §6.3 item 4): the body runs to the close; HTTP/1.0 with
	 * Transfer-Encoding is faulty framing (§6.1): to the close too */
	const char *to_close[] = {
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
	    "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(to_close) / sizeof(to_close[0]); i++) {
		cr_assert_eq(net_http_parse_response(to_close[i], strlen(to_close[i]), false, h), 1,
			     "%zu", i);
		cr_expect_eq(h->body, NET_BODY_CLOSE, "%zu", i);
	}
	cr_expect(h->conn_close, "HTTP/1.0 with Transfer-Encoding closes");
	free(h);
}

Test(net_http_parse_request, fields_and_keepalive)
{
	struct net_http_head *h = malloc(sizeof(*h));
	const char *r = "PUT http://a.test:8080/x?y HTTP/1.1\r\nHost: a.test\r\nConnection: "
			"Keep-Alive, close\r\nExpect: 100-continue\r\nX-Empty:\r\n\r\nBODY";
	cr_assert_eq(net_http_parse_request(r, strlen(r), h), 1);
	cr_expect_eq(h->method.len, 3);
	cr_expect_eq(strncmp(r + h->target.off, "http://a.test:8080/x?y", h->target.len), 0);
	cr_expect_eq(h->version, 11);
	cr_expect(h->conn_close);
	cr_expect(h->expect_continue);
	cr_expect_eq(h->n_headers, 4);
	cr_expect_eq(h->headers[3].value.len, 0);
	cr_expect_eq(h->head_len, strlen(r) - 4);
	const char *r10 = "GET http://a.test/ HTTP/1.0\r\n\r\n";
	cr_assert_eq(net_http_parse_request(r10, strlen(r10), h), 1);
	cr_expect(h->conn_close);
	const char *r10k = "GET http://a.test/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
	cr_assert_eq(net_http_parse_request(r10k, strlen(r10k), h), 1);
	cr_expect_not(h->conn_close);
	free(h);
}

Test(net_http_parse_request, limits)
{
	struct net_http_head *h = malloc(sizeof(*h));
	size_t big = NET_HTTP_MAX_HEAD + 9000;
	char *b = malloc(big + 1);
	/* request line too long, no newline yet */
	memcpy(b, "GET http://a.test/", 18);
	memset(b + 18, 'a', big - 18);
	cr_expect_eq(net_http_parse_request(b, NET_HTTP_MAX_LINE + 10, h), -414);
	/* many short headers: too many */
	size_t n = (size_t)sprintf(b, "GET http://a.test/ HTTP/1.1\r\n");
	for (int i = 0; i < NET_HTTP_MAX_HEADERS + 1; i++)
		n += (size_t)sprintf(b + n, "X-%d: v\r\n", i);
	n += (size_t)sprintf(b + n, "\r\n");
	cr_expect_eq(net_http_parse_request(b, n, h), -431);
	/* a header line longer than a line */
	n = (size_t)sprintf(b, "GET http://a.test/ HTTP/1.1\r\nX: ");
	memset(b + n, 'v', NET_HTTP_MAX_LINE + 5);
	n += NET_HTTP_MAX_LINE + 5;
	cr_expect_eq(net_http_parse_request(b, n, h), -431);
	/* a head longer than the head limit, in legal lines */
	n = (size_t)sprintf(b, "GET http://a.test/ HTTP/1.1\r\n");
	for (int i = 0; n + 4100 < big; i++) {
		n += (size_t)sprintf(b + n, "X-%d: ", i);
		memset(b + n, 'v', 4000);
		n += 4000;
		n += (size_t)sprintf(b + n, "\r\n");
	}
	cr_expect_eq(net_http_parse_request(b, n, h), -431);
	free(b);
	free(h);
}

Test(net_http_parse_response, responses)
{
	struct net_http_head *h = malloc(sizeof(*h));
	const char *r1 = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
	cr_assert_eq(net_http_parse_response(r1, strlen(r1), false, h), 1);
	cr_expect_eq(h->status, 200);
	cr_expect_eq(h->body, NET_BODY_LENGTH);
	cr_assert_eq(net_http_parse_response(r1, strlen(r1), true, h), 1);
	cr_expect_eq(h->body, NET_BODY_NONE);
	const char *r2 = "HTTP/1.0 200 \r\n\r\n";
	cr_assert_eq(net_http_parse_response(r2, strlen(r2), false, h), 1);
	cr_expect_eq(h->body, NET_BODY_CLOSE);
	const char *r3 = "HTTP/1.1 204 No Content\r\n\r\n";
	cr_assert_eq(net_http_parse_response(r3, strlen(r3), false, h), 1);
	cr_expect_eq(h->body, NET_BODY_NONE);
	const char *r4 = "HTTP/1.1 100 Continue\r\n\r\n";
	cr_assert_eq(net_http_parse_response(r4, strlen(r4), false, h), 1);
	cr_expect_eq(h->status, 100);
	const char *r5 = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	cr_assert_eq(net_http_parse_response(r5, strlen(r5), false, h), 1);
	cr_expect_eq(h->body, NET_BODY_CHUNKED);
	const char *bad[] = {
	    "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "ICY 200 OK\r\n\r\n", "HTTP/1.1 200 OK\n\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(net_http_parse_response(bad[i], strlen(bad[i]), false, h), -502, "%zu",
			     i);
	free(h);
}

Test(net_http_parse_absolute, targets)
{
	struct net_target t;
	const char *a = "http://Example.COM:8080/a/b?c";
	cr_assert_eq(net_http_parse_absolute(a, strlen(a), &t), 0);
	cr_expect_str_eq(t.host, "example.com");
	cr_expect_eq(t.port, 8080);
	cr_expect_str_eq(t.authority, "Example.COM:8080");
	cr_expect_eq(t.path_len, 6);
	a = "http://example.com";
	cr_assert_eq(net_http_parse_absolute(a, strlen(a), &t), 0);
	cr_expect_eq(t.port, 80);
	cr_expect_eq(t.path_len, 0);
	a = "http://[::1]:81/";
	cr_assert_eq(net_http_parse_absolute(a, strlen(a), &t), 0);
	cr_expect_str_eq(t.host, "::1");
	cr_expect_eq(t.port, 81);
	const char *bad[] = {"https://a.test/",	 "http://user@evil.test/",
			     "http://a.test:0/", "http://a.test:99999/",
			     "http://a%2etest/", "http://a.test/#x",
			     "/relative",	 "http://:80/",
			     "http://a.test:/",	 "http://[zz]/"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_lt(net_http_parse_absolute(bad[i], strlen(bad[i]), &t), 0, "%s", bad[i]);
}

Test(net_http_parse_authority, connect_targets)
{
	struct net_target t;
	cr_assert_eq(net_http_parse_authority("a.test:443", 10, &t), 0);
	cr_expect_eq(t.port, 443);
	cr_assert_eq(net_http_parse_authority("[::1]:8443", 10, &t), 0);
	cr_expect_str_eq(t.host, "::1");
	cr_expect_lt(net_http_parse_authority("a.test", 6, &t), 0);
	cr_expect_lt(net_http_parse_authority("[::1]", 5, &t), 0);
	cr_expect_lt(net_http_parse_authority("a.test:", 7, &t), 0);
}

static ssize_t
feed_all(struct net_body *b, const char *s, size_t step)
{
	size_t n = strlen(s), off = 0;
	while (off < n && !b->done) {
		size_t k = n - off < step ? n - off : step;
		ssize_t r = net_body_feed(b, s + off, k);
		if (r < 0)
			return -1;
		off += (size_t)r;
		if ((size_t)r < k && !b->done)
			return -2;
	}
	return (ssize_t)off;
}

Test(net_body_feed, chunked_framing)
{
	const char *ok = "5\r\nhello\r\nA;ext=1\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nNEXT";
	for (size_t step = 1; step < 8; step++) {
		struct net_body b;
		net_body_init(&b, NET_BODY_CHUNKED, 0);
		ssize_t n = feed_all(&b, ok, step);
		cr_expect_eq(n, (ssize_t)strlen(ok) - 4, "step %zu: %zd", step, n);
		cr_expect(b.done);
		cr_expect_eq(b.payload, 15);
	}
	/* bad size characters, bare LF after the size or the data, chunk-size
	 * overflow (16 hex digits: more than 2^60), whitespace after the size,
	 * a control byte, obs-fold, whitespace before a colon and a line
	 * without a colon in the trailer section */
	const char *bad[] = {"x\r\n",
			     "5\nhello\r\n",
			     "5\r\nhelloX\r\n",
			     "5\r\nhello\n0\r\n\r\n",
			     "1111111111111111\r\n",
			     "ffffffffffffffffffff\r\n",
			     "00000000000000005\r\n",
			     "5 \r\n",
			     "-5\r\n",
			     "0\r\n\x01\r\n",
			     "0\r\nA: b\r\n folded\r\n\r\n",
			     "0\r\nContent-Length : 5\r\n\r\n",
			     "0\r\nnocolon\r\n\r\n",
			     "0\r\n\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct net_body b;
		net_body_init(&b, NET_BODY_CHUNKED, 0);
		cr_expect_eq(feed_all(&b, bad[i], 64), -1, "%zu", i);
	}
}

Test(net_body_feed, content_length)
{
	struct net_body b;
	net_body_init(&b, NET_BODY_LENGTH, 4);
	cr_expect_eq(net_body_feed(&b, "ab", 2), 2);
	cr_expect_not(b.done);
	cr_expect_eq(net_body_feed(&b, "cdef", 4), 2);
	cr_expect(b.done);
	net_body_init(&b, NET_BODY_NONE, 0);
	cr_expect(b.done);
}

Test(net_socks_parse, greeting_and_request)
{
	bool noauth;
	const uint8_t g1[] = {5, 2, 2, 0};
	cr_expect_eq(net_socks_parse_greeting(g1, 4, &noauth), 4);
	cr_expect(noauth);
	cr_expect_eq(net_socks_parse_greeting(g1, 3, &noauth), 0);
	const uint8_t g2[] = {5, 1, 2};
	cr_expect_eq(net_socks_parse_greeting(g2, 3, &noauth), 3);
	cr_expect_not(noauth);
	const uint8_t g3[] = {4, 1, 0};
	cr_expect_eq(net_socks_parse_greeting(g3, 3, &noauth), -1);

	struct net_socks_request r;
	const uint8_t q1[] = {5, 1, 0, 3, 6, 'a', '.', 't', 'e', 's', 't', 0x01, 0xbb};
	cr_expect_eq(net_socks_parse_request(q1, sizeof(q1), &r), (int)sizeof(q1));
	cr_expect_str_eq(r.host, "a.test");
	cr_expect_eq(r.port, 443);
	cr_expect_eq(net_socks_parse_request(q1, sizeof(q1) - 1, &r), 0);
	const uint8_t q2[] = {5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90};
	cr_expect_eq(net_socks_parse_request(q2, sizeof(q2), &r), (int)sizeof(q2));
	cr_expect_str_eq(r.host, "127.0.0.1");
	cr_expect_eq(r.port, 8080);
	const uint8_t q3[] = {5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80};
	cr_expect_eq(net_socks_parse_request(q3, sizeof(q3), &r), (int)sizeof(q3));
	cr_expect_str_eq(r.host, "::1");
	const uint8_t q4[] = {5, 2, 0, 1, 127, 0, 0, 1, 0, 80};
	cr_expect_eq(net_socks_parse_request(q4, sizeof(q4), &r), -NET_SOCKS_CMD);
	const uint8_t q5[] = {5, 1, 0, 9, 1, 2};
	cr_expect_eq(net_socks_parse_request(q5, sizeof(q5), &r), -NET_SOCKS_ATYP);
	const uint8_t q6[] = {5, 1, 0, 3, 2, 'a', 0, 0, 80};
	cr_expect_eq(net_socks_parse_request(q6, sizeof(q6), &r), -NET_SOCKS_FAIL);
}
