/* net/http.c: a strict HTTP/1.1 head parser and body framing for the
 * proxy (RFC 9110, 9112).
 *
 * Strict where leniency has a security cost, after the request-smuggling
 * literature: CRLF only (no bare LF), no obs-fold, no whitespace between a
 * header name and its colon, a single numeric Content-Length, and no
 * request with both Content-Length and Transfer-Encoding (RFC 9112 §6.1
 * allows a proxy to reject it; forwarding both is CL.TE smuggling).  Only
 * "chunked" is accepted as a transfer coding.  The parser re-reads the
 * buffer from its start on every call, which costs at most 32 KiB per call
 * and keeps it stateless and easy to fuzz.
 */
#include "net/net-internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static bool
tchar(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* field-value bytes: VCHAR, SP, HTAB, obs-text; never CTLs (NUL, CR, LF). */
static bool
vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool
span_eq(const char *buf, struct net_span s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && strncasecmp(buf + s.off, lit, n) == 0;
}

/* Is token among the comma-separated list in value?  (Connection: a, b) */
static bool
list_has(const char *buf, struct net_span v, const char *token)
{
	size_t tl = strlen(token);
	size_t i = 0;
	while (i < v.len) {
		while (i < v.len &&
		       (buf[v.off + i] == ' ' || buf[v.off + i] == '\t' || buf[v.off + i] == ','))
			i++;
		size_t s = i;
		while (i < v.len && buf[v.off + i] != ',')
			i++;
		size_t e = i;
		while (e > s && (buf[v.off + e - 1] == ' ' || buf[v.off + e - 1] == '\t'))
			e--;
		if (e - s == tl && strncasecmp(buf + v.off + s, token, tl) == 0)
			return true;
	}
	return false;
}

static bool
parse_u64_span(const char *buf, struct net_span v, uint64_t *out)
{
	uint64_t n = 0;
	if (v.len == 0 || v.len > 18)
		return false;
	for (uint32_t i = 0; i < v.len; i++) {
		char c = buf[v.off + i];
		if (c < '0' || c > '9')
			return false;
		n = n * 10 + (uint64_t)(c - '0');
	}
	*out = n;
	return true;
}

/* Header line [p, e) (without CRLF) into h.  0 or -1. */
static int
parse_header(const char *buf, size_t p, size_t e, struct net_http_head *h)
{
	size_t i = p;
	while (i < e && tchar((unsigned char)buf[i]))
		i++;
	if (i == p || i >= e || buf[i] != ':')
		return -1;
	if (h->n_headers >= NET_HTTP_MAX_HEADERS)
		return -2;
	struct net_http_header *hd = &h->headers[h->n_headers++];
	hd->name.off = (uint32_t)p;
	hd->name.len = (uint32_t)(i - p);
	i++;
	while (i < e && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	size_t vs = i;
	for (; i < e; i++)
		if (!vchar((unsigned char)buf[i]))
			return -1;
	size_t ve = e;
	while (ve > vs && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
		ve--;
	hd->value.off = (uint32_t)vs;
	hd->value.len = (uint32_t)(ve - vs);
	return 0;
}

static int
parse_version(const char *p, size_t n)
{
	if (n != 8 || memcmp(p, "HTTP/", 5) != 0 || !isdigit((unsigned char)p[5]) || p[6] != '.' ||
	    !isdigit((unsigned char)p[7]))
		return -400;
	if (p[5] != '1')
		return -505;
	if (p[7] == '0')
		return 10;
	if (p[7] == '1')
		return 11;
	return -505;
}

/* Request line [p, e): METHOD SP target SP HTTP/1.x */
static int
parse_request_line(const char *buf, size_t p, size_t e, struct net_http_head *h)
{
	size_t i = p;
	while (i < e && tchar((unsigned char)buf[i]))
		i++;
	if (i == p || i - p > 20 || i >= e || buf[i] != ' ')
		return -400;
	h->method.off = (uint32_t)p;
	h->method.len = (uint32_t)(i - p);
	size_t t = ++i;
	while (i < e && (unsigned char)buf[i] > 0x20 && (unsigned char)buf[i] < 0x7f)
		i++;
	if (i == t || i >= e || buf[i] != ' ')
		return -400;
	h->target.off = (uint32_t)t;
	h->target.len = (uint32_t)(i - t);
	i++;
	int v = parse_version(buf + i, e - i);
	if (v < 0)
		return v;
	h->version = v;
	return 0;
}

/* Status line [p, e): HTTP/1.x SP 3DIGIT SP reason */
static int
parse_status_line(const char *buf, size_t p, size_t e, struct net_http_head *h)
{
	if (e - p < 12)
		return -1;
	int v = parse_version(buf + p, 8);
	if (v < 0)
		return -1;
	h->version = v;
	const char *s = buf + p + 8;
	if (s[0] != ' ' || !isdigit((unsigned char)s[1]) || !isdigit((unsigned char)s[2]) ||
	    !isdigit((unsigned char)s[3]) || s[1] == '0' || s[4] != ' ')
		return -1;
	h->status = (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
	for (size_t i = p + 13; i < e; i++)
		if (!vchar((unsigned char)buf[i]))
			return -1;
	return 0;
}

/* Shared scanner.  Returns 1 done, 0 need more, -1 malformed, -2 too
 * many headers, -3 line too long, -4 head too large, or the (negative)
 * code of the first line parser. */
static int
scan_head(const char *buf, size_t len, bool request, struct net_http_head *h)
{
	size_t pos = 0;
	bool first = true;
	memset(h, 0, sizeof(*h) - sizeof(h->headers));
	h->n_headers = 0;
	for (;;) {
		size_t avail = len - pos;
		const char *nl = memchr(buf + pos, '\n', avail);
		if (!nl) {
			if (avail > NET_HTTP_MAX_LINE)
				return first ? -3 : -4;
			if (len > NET_HTTP_MAX_HEAD)
				return -4;
			/* A NUL or bare CR mid-line can be refused already. */
			for (size_t i = pos; i < len; i++)
				if (buf[i] == '\0' || (buf[i] == '\r' && i + 1 < len))
					return -1;
			return 0;
		}
		size_t e = (size_t)(nl - buf);
		if (e - pos > NET_HTTP_MAX_LINE)
			return first ? -3 : -4;
		if (e + 1 > NET_HTTP_MAX_HEAD)
			return -4;
		if (e == pos || buf[e - 1] != '\r')
			return -1; /* bare LF */
		size_t le = e - 1;
		for (size_t i = pos; i < le; i++)
			if (buf[i] == '\r' || buf[i] == '\0')
				return -1;
		if (first) {
			int rc = request ? parse_request_line(buf, pos, le, h)
					 : parse_status_line(buf, pos, le, h);
			if (rc < 0)
				return rc;
			first = false;
		} else if (le == pos) {
			h->head_len = (uint32_t)(e + 1);
			return 1;
		} else {
			if (buf[pos] == ' ' || buf[pos] == '\t')
				return -1; /* obs-fold */
			int rc = parse_header(buf, pos, le, h);
			if (rc < 0)
				return rc;
		}
		pos = e + 1;
	}
}

/* Framing and connection headers; common to requests and responses.
 * Returns 0 or -1 (malformed) or -2 (unsupported coding). */
static int
framing(const char *buf, struct net_http_head *h, bool request)
{
	unsigned n_cl = 0, n_te = 0, n_host = 0;
	bool te_chunked = false, keep_alive = false;
	for (unsigned i = 0; i < h->n_headers; i++) {
		const struct net_http_header *hd = &h->headers[i];
		if (span_eq(buf, hd->name, "content-length")) {
			uint64_t v;
			if (n_cl++ || !parse_u64_span(buf, hd->value, &v))
				return -1;
			h->content_length = v;
		} else if (span_eq(buf, hd->name, "transfer-encoding")) {
			if (n_te++)
				return -1;
			if (span_eq(buf, hd->value, "chunked"))
				te_chunked = true;
			else if (request)
				return -2;
		} else if (span_eq(buf, hd->name, "connection")) {
			if (list_has(buf, hd->value, "close"))
				h->conn_close = true;
			if (list_has(buf, hd->value, "keep-alive"))
				keep_alive = true;
		} else if (span_eq(buf, hd->name, "host")) {
			if (n_host++)
				return -1;
		} else if (span_eq(buf, hd->name, "expect")) {
			if (span_eq(buf, hd->value, "100-continue"))
				h->expect_continue = true;
		}
	}
	if (h->version == 10 && !keep_alive)
		h->conn_close = true;
	if (n_te && n_cl)
		return -1;
	if (n_te && request && h->version == 10)
		return -1;
	if (n_te)
		h->body = te_chunked ? NET_BODY_CHUNKED : NET_BODY_CLOSE;
	else if (n_cl)
		h->body = h->content_length ? NET_BODY_LENGTH : NET_BODY_NONE;
	else
		h->body = request ? NET_BODY_NONE : NET_BODY_CLOSE;
	return 0;
}

int
net_http_parse_request(const char *buf, size_t len, struct net_http_head *h)
{
	int rc = scan_head(buf, len, true, h);
	switch (rc) {
	case 1:
		break;
	case 0:
		return 0;
	case -2:
	case -4:
		return -431;
	case -3:
		return -414;
	case -505:
		return -505;
	default:
		return -400;
	}
	rc = framing(buf, h, true);
	if (rc == -2)
		return -501;
	if (rc < 0)
		return -400;
	return 1;
}

int
net_http_parse_response(const char *buf, size_t len, bool method_head, struct net_http_head *h)
{
	int rc = scan_head(buf, len, false, h);
	if (rc == 0)
		return 0;
	if (rc != 1)
		return -502;
	if (framing(buf, h, false) < 0)
		return -502;
	if (method_head || h->status < 200 || h->status == 204 || h->status == 304)
		h->body = NET_BODY_NONE;
	return 1;
}

/* host [":" port], host a reg-name of LDH/underscore/dot characters or a
 * bracketed IPv6 literal.  Percent-encoding and userinfo are refused: a
 * name that reads differently to the proxy and the client is a bypass. */
static int
parse_hostport(const char *t, size_t len, uint16_t defport, struct net_target *out)
{
	size_t hl;
	const char *h = t;
	if (len == 0)
		return -EINVAL;
	if (t[0] == '[') {
		const char *rb = memchr(t, ']', len);
		if (!rb)
			return -EINVAL;
		hl = (size_t)(rb - t) + 1;
		struct sockaddr_storage ss;
		if (!net_addr_parse(t, hl, 0, &ss))
			return -EINVAL;
		if (hl - 2 >= sizeof(out->host))
			return -EINVAL;
		memcpy(out->host, t + 1, hl - 2);
		out->host[hl - 2] = '\0';
	} else {
		hl = 0;
		while (hl < len && t[hl] != ':') {
			unsigned char c = (unsigned char)t[hl];
			if (!isalnum(c) && c != '-' && c != '.' && c != '_')
				return -EINVAL;
			hl++;
		}
		if (hl == 0 || hl >= sizeof(out->host))
			return -EINVAL;
		for (size_t i = 0; i < hl; i++)
			out->host[i] = (char)tolower((unsigned char)h[i]);
		out->host[hl] = '\0';
	}
	out->port = defport;
	if (hl < len) {
		if (t[hl] != ':' || hl + 1 == len || len - hl - 1 > 5)
			return -EINVAL;
		unsigned v = 0;
		for (size_t i = hl + 1; i < len; i++) {
			if (!isdigit((unsigned char)t[i]))
				return -EINVAL;
			v = v * 10 + (unsigned)(t[i] - '0');
		}
		if (v == 0 || v > 65535)
			return -EINVAL;
		out->port = (uint16_t)v;
	}
	if (len >= sizeof(out->authority))
		return -EINVAL;
	memcpy(out->authority, t, len);
	out->authority[len] = '\0';
	return 0;
}

int
net_http_parse_authority(const char *t, size_t len, struct net_target *out)
{
	memset(out, 0, sizeof(*out));
	/* CONNECT needs an explicit port (RFC 9110 §9.3.6). */
	const char *colon = NULL;
	for (size_t i = len; i > 0; i--)
		if (t[i - 1] == ':' || t[i - 1] == ']') {
			colon = t[i - 1] == ':' ? t + i - 1 : NULL;
			break;
		}
	if (!colon)
		return -EINVAL;
	return parse_hostport(t, len, 0, out);
}

int
net_http_parse_absolute(const char *t, size_t len, struct net_target *out)
{
	memset(out, 0, sizeof(*out));
	if (len < 8 || strncasecmp(t, "http://", 7) != 0)
		return -EINVAL;
	const char *a = t + 7;
	size_t rest = len - 7;
	size_t al = 0;
	while (al < rest && a[al] != '/' && a[al] != '?')
		al++;
	if (memchr(a, '@', al) || memchr(t, '#', len))
		return -EINVAL;
	if (parse_hostport(a, al, 80, out) < 0)
		return -EINVAL;
	out->path = a + al;
	out->path_len = rest - al;
	return 0;
}

/* ---- body framing ---- */

enum {
	CS_SIZE,
	CS_SIZE_MORE,
	CS_EXT,
	CS_SIZE_LF,
	CS_DATA,
	CS_DATA_CR,
	CS_DATA_LF,
	CS_TRAILER_START,
	CS_TRAILER,
	CS_TRAILER_LF,
	CS_END_LF,
};

void
net_body_init(struct net_body *b, enum net_body_mode mode, uint64_t length)
{
	memset(b, 0, sizeof(*b));
	b->mode = mode;
	b->remaining = length;
	b->done = mode == NET_BODY_NONE || (mode == NET_BODY_LENGTH && length == 0);
}

static int
hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (unsigned char)tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

ssize_t
net_body_feed(struct net_body *b, const char *p, size_t n)
{
	if (b->done)
		return 0;
	switch (b->mode) {
	case NET_BODY_NONE:
		b->done = true;
		return 0;
	case NET_BODY_LENGTH: {
		size_t k = n < b->remaining ? n : (size_t)b->remaining;
		b->remaining -= k;
		b->payload += k;
		if (b->remaining == 0)
			b->done = true;
		return (ssize_t)k;
	}
	case NET_BODY_CLOSE:
		b->payload += n;
		return (ssize_t)n;
	case NET_BODY_CHUNKED:
		break;
	}
	size_t i = 0;
	while (i < n && !b->done) {
		unsigned char c = (unsigned char)p[i];
		switch (b->cstate) {
		case CS_SIZE:
		case CS_SIZE_MORE: {
			int v = hexval(c);
			if (v >= 0) {
				/* 15 hex digits: 2^60 bytes, no overflow */
				if (++b->cdigits > 15)
					return -1;
				b->remaining = b->remaining * 16 + (uint64_t)v;
				b->cstate = CS_SIZE_MORE;
			} else if (b->cstate == CS_SIZE) {
				return -1;
			} else if (c == ';') {
				b->cstate = CS_EXT;
				b->cline = 0;
			} else if (c == '\r') {
				b->cstate = CS_SIZE_LF;
			} else {
				return -1;
			}
			i++;
			break;
		}
		case CS_EXT:
			if (c == '\r')
				b->cstate = CS_SIZE_LF;
			else if (!vchar(c) || ++b->cline > 1024)
				return -1;
			i++;
			break;
		case CS_SIZE_LF:
			if (c != '\n')
				return -1;
			i++;
			b->cdigits = 0;
			if (b->remaining == 0) {
				b->cstate = CS_TRAILER_START;
				b->cline = 0;
			} else {
				b->cstate = CS_DATA;
			}
			break;
		case CS_DATA: {
			size_t k = n - i < b->remaining ? n - i : (size_t)b->remaining;
			b->remaining -= k;
			b->payload += k;
			i += k;
			if (b->remaining == 0)
				b->cstate = CS_DATA_CR;
			break;
		}
		case CS_DATA_CR:
			if (c != '\r')
				return -1;
			b->cstate = CS_DATA_LF;
			i++;
			break;
		case CS_DATA_LF:
			if (c != '\n')
				return -1;
			b->cstate = CS_SIZE;
			i++;
			break;
		case CS_TRAILER_START:
			if (c == '\r') {
				b->cstate = CS_END_LF;
			} else if (tchar(c)) {
				b->cstate = CS_TRAILER;
				if (++b->cline > 8192)
					return -1;
			} else {
				return -1;
			}
			i++;
			break;
		case CS_TRAILER:
			if (c == '\r')
				b->cstate = CS_TRAILER_LF;
			else if (!vchar(c) || ++b->cline > 8192)
				return -1;
			i++;
			break;
		case CS_TRAILER_LF:
			if (c != '\n')
				return -1;
			b->cstate = CS_TRAILER_START;
			i++;
			break;
		case CS_END_LF:
			if (c != '\n')
				return -1;
			b->done = true;
			i++;
			break;
		default:
			return -1;
		}
	}
	return (ssize_t)i;
}

/* Hop-by-hop fields (RFC 9110 §7.6.1) are dropped when a head is passed
 * on, and so is every field a Connection header names.  On requests the
 * proxy also drops Host (rewritten from the URI: a Host naming another
 * site than the checked one would be domain fronting), Proxy-Authorization
 * (never leaves the proxy) and Upgrade (tunnels only through CONNECT). */
bool
net_http_hop_by_hop(const char *buf, const struct net_http_head *h, unsigned i, bool request)
{
	static const char *const always[] = {
	    "connection", "proxy-connection",	"keep-alive",	       "te",
	    "upgrade",	  "proxy-authenticate", "proxy-authorization", NULL};
	struct net_span name = h->headers[i].name;
	for (size_t k = 0; always[k]; k++)
		if (span_eq(buf, name, always[k]))
			return true;
	if (request && span_eq(buf, name, "host"))
		return true;
	for (unsigned j = 0; j < h->n_headers; j++) {
		if (!span_eq(buf, h->headers[j].name, "connection"))
			continue;
		char tok[64];
		if (name.len >= sizeof(tok))
			continue;
		memcpy(tok, buf + name.off, name.len);
		tok[name.len] = '\0';
		if (list_has(buf, h->headers[j].value, tok))
			return true;
	}
	return false;
}
