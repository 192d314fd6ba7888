/* server/http: HTTP/1.1 request heads for the Streamable HTTP transport
 * (RFC 9112), pure.
 *
 * Only what an MCP endpoint needs: the request line, a handful of
 * headers, a body framed by Content-Length.  Refused, as RFC 9112 says a
 * server must or may:
 *  - a head over HTTP_MAX_HEAD bytes (431), obsolete line folding (400);
 *  - both Transfer-Encoding and Content-Length, or two different
 *    Content-Lengths (400: the framing is ambiguous, the classic request
 *    smuggling vector, RFC 9112 section 6.3);
 *  - a chunked request body (the caller answers 411: MCP clients send a
 *    length), any other transfer coding (501);
 *  - anything but HTTP/1.0 and 1.1 (505). */
#include "server/http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *
line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	return nl;
}

static void
copy(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static bool
token_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f && !strchr("()<>@,;:\\\"/[]?={}", c);
}

static int
request_line(const char *p, size_t n, struct http_req *r)
{
	const char *sp1 = memchr(p, ' ', n);
	if (!sp1 || sp1 == p || (size_t)(sp1 - p) >= sizeof(r->method))
		return -400;
	for (const char *q = p; q < sp1; q++)
		if (!token_char((unsigned char)*q))
			return -400;
	copy(r->method, sizeof(r->method), p, (size_t)(sp1 - p));
	const char *t = sp1 + 1;
	const char *sp2 = memchr(t, ' ', n - (size_t)(t - p));
	if (!sp2 || sp2 == t)
		return -400;
	if ((size_t)(sp2 - t) >= sizeof(r->path))
		return -414;
	for (const char *q = t; q < sp2; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
			return -400;
	copy(r->path, sizeof(r->path), t, (size_t)(sp2 - t));
	const char *v = sp2 + 1;
	size_t vl = n - (size_t)(v - p);
	if (vl != 8 || strncmp(v, "HTTP/1.", 7))
		return vl >= 5 && !strncmp(v, "HTTP/", 5) ? -505 : -400;
	if (v[7] != '0' && v[7] != '1')
		return -505;
	r->minor = v[7] - '0';
	r->keep_alive = r->minor == 1;
	return 0;
}

static bool
has_token(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok);
	for (size_t i = 0; i + tl <= n; i++)
		if (!strncasecmp(v + i, tok, tl) &&
		    (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
		    (i + tl == n || v[i + tl] == ',' || v[i + tl] == ' '))
			return true;
	return false;
}

static int
length_header(const char *v, size_t n, struct http_req *r)
{
	uint64_t len = 0;
	if (n == 0 || n > 18)
		return -400;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -400;
		len = len * 10 + (uint64_t)(v[i] - '0');
	}
	if (r->has_length && r->content_length != len)
		return -400;
	r->has_length = true;
	r->content_length = len;
	return 0;
}

static int
header(const char *p, size_t n, struct http_req *r)
{
	const char *colon = memchr(p, ':', n);
	if (!colon || colon == p)
		return -400;
	size_t kl = (size_t)(colon - p);
	for (size_t i = 0; i < kl; i++)
		if (!token_char((unsigned char)p[i]))
			return -400; /* "Name :" and folded lines land here */
	const char *v = colon + 1, *end = p + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	size_t vl = (size_t)(end - v);
	for (size_t i = 0; i < vl; i++)
		if ((unsigned char)v[i] < 0x20 && v[i] != '\t')
			return -400;
#define IS(name) (kl == sizeof(name) - 1 && !strncasecmp(p, name, kl))
	if (IS("Content-Length"))
		return length_header(v, vl, r);
	if (IS("Transfer-Encoding")) {
		if (vl != 7 || strncasecmp(v, "chunked", 7))
			return -501;
		r->chunked = true;
	} else if (IS("Connection")) {
		if (has_token(v, vl, "close"))
			r->keep_alive = false;
		else if (has_token(v, vl, "keep-alive"))
			r->keep_alive = true;
	} else if (IS("Expect")) {
		if (vl != 12 || strncasecmp(v, "100-continue", 12))
			return -417;
		r->expect_continue = true;
	} else if (IS("Authorization")) {
		if (vl >= sizeof(r->auth))
			return -431;
		copy(r->auth, sizeof(r->auth), v, vl);
	} else if (IS("Mcp-Session-Id")) {
		copy(r->session, sizeof(r->session), v, vl);
	} else if (IS("MCP-Protocol-Version")) {
		copy(r->version, sizeof(r->version), v, vl);
	} else if (IS("Origin")) {
		copy(r->origin, sizeof(r->origin), v, vl);
	} else if (IS("Host")) {
		if (r->host[0])
			return -400; /* two Host headers: which one was checked? */
		copy(r->host, sizeof(r->host), v, vl);
	} else if (IS("Accept")) {
		copy(r->accept, sizeof(r->accept), v, vl);
	} else if (IS("Content-Type")) {
		copy(r->content_type, sizeof(r->content_type), v, vl);
	}
#undef IS
	return 0;
}

int
http_parse_head(const char *buf, size_t len, struct http_req *r)
{
	memset(r, 0, sizeof(*r));
	const char *p = buf, *end = buf + (len > HTTP_MAX_HEAD ? HTTP_MAX_HEAD : len);
	/* RFC 9112 2.2: empty lines before the request line are ignored */
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	int nheaders = 0;
	bool first = true;
	for (;;) {
		const char *nl = line_end(p, end);
		if (!nl)
			return len >= HTTP_MAX_HEAD ? -431 : 0;
		size_t n = (size_t)(nl - p);
		if (n && p[n - 1] == '\r')
			n--;
		if (memchr(p, '\r', n) || memchr(p, '\0', n))
			return -400; /* a bare CR or a NUL inside a line */
		int rc;
		if (first) {
			rc = request_line(p, n, r);
			first = false;
		} else if (n == 0) {
			r->head_len = (size_t)(nl + 1 - buf);
			if (r->chunked && r->has_length)
				return -400;
			if (!r->host[0] && r->minor == 1)
				return -400; /* RFC 9112 3.2: Host is required in 1.1 */
			return 1;
		} else {
			if (p[0] == ' ' || p[0] == '\t')
				return -400; /* obs-fold */
			if (++nheaders > 100)
				return -431;
			rc = header(p, n, r);
		}
		if (rc < 0)
			return rc;
		p = nl + 1;
	}
}

bool
http_accepts(const char *accept, const char *type)
{
	if (!accept || !accept[0])
		return false;
	const char *slash = strchr(type, '/');
	size_t major = slash ? (size_t)(slash - type) : strlen(type);
	const char *p = accept;
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		size_t n = strcspn(p, ",;");
		const char *e = p + n;
		while (e > p && e[-1] == ' ')
			e--;
		size_t l = (size_t)(e - p);
		if ((l == strlen(type) && !strncasecmp(p, type, l)) ||
		    (l == 3 && !strncmp(p, "*/*", 3)) ||
		    (l == major + 2 && !strncasecmp(p, type, major) &&
		     !strncmp(p + major, "/*", 2)))
			return true;
		p += strcspn(p, ",");
	}
	return false;
}

const char *
http_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 406:
		return "Not Acceptable";
	case 408:
		return "Request Timeout";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 417:
		return "Expectation Failed";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}
