/* net/http.c: a strict HTTP/1.1 head parser and body framing for the
 * proxy (RFC 9110, 9112).
 *
 * Strict where leniency has a security cost, after the request-smuggling
 * literature (the CL.TE / TE.CL / TE.TE shapes; CVE-2019-20444 and
 * CVE-2019-20445 in Netty are the classic cases of a front end accepting
 * what the back end reads differently).  Whatever two parsers could read
 * two ways is refused, never repaired, and the refusal says which rule the
 * head broke (enum net_http_flaw):
 *
 *  - CRLF only: no bare LF, no lone CR (RFC 9112 §2.2);
 *  - no obs-fold continuation lines (§5.2), no whitespace between a field
 *    name and its colon (§5.1);
 *  - Content-Length: one field, one plain decimal number (§6.3 item 5);
 *  - Transfer-Encoding: in a request exactly "chunked", once (§6.1, §7;
 *    chunked not final is 400 by §6.3 item 4, another coding 501); never
 *    with Content-Length (§6.1: a proxy may reject it, and forwarding both
 *    is CL.TE smuggling), never in HTTP/1.0 (§6.1);
 *  - Connection may not name a field that frames or routes the message
 *    (see conn_refused below), and lists tokens only (RFC 9110 §7.6.1);
 *  - a field named like Content-Length or Transfer-Encoding with '_' for
 *    '-' is refused: CGI/WSGI environments map both spellings to one
 *    variable (HTTP_TRANSFER_ENCODING), so a server behind us can read
 *    framing we did not see;
 *  - chunk sizes of at most 15 hex digits (no overflow), CRLF after every
 *    chunk, trailer lines "name: value" (§7.1, §7.1.2).
 *
 * The parser re-reads the buffer from its start on every call, which costs
 * at most 32 KiB per call and keeps it stateless and easy to fuzz.
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

/* A field name spelled like lit (lower case, with '-') but with at least
 * one '_' where lit has '-': "Transfer_Encoding", "content_length". */
static bool
span_alias(const char *buf, struct net_span s, const char *lit)
{
	size_t n = strlen(lit);
	bool underscore = false;
	if (s.len != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = (char)tolower((unsigned char)buf[s.off + i]);
		if (c == '_' && lit[i] == '-')
			underscore = true;
		else if (c != lit[i])
			return false;
	}
	return underscore;
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
	if (i == p || i >= e || buf[i] != ':') {
		/* "Name : v" is refused outright, not trimmed (RFC 9112 §5.1:
		 * a server MUST reject it; some read "Name " as another field) */
		h->flaw = i > p && i < e && (buf[i] == ' ' || buf[i] == '\t') ? NET_HTTP_WS_COLON
									      : NET_HTTP_SYNTAX;
		return -1;
	}
	if (h->n_headers >= NET_HTTP_MAX_HEADERS) {
		h->flaw = NET_HTTP_TOO_LONG;
		return -2;
	}
	struct net_http_header *hd = &h->headers[h->n_headers++];
	hd->name.off = (uint32_t)p;
	hd->name.len = (uint32_t)(i - p);
	i++;
	while (i < e && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	size_t vs = i;
	for (; i < e; i++)
		if (!vchar((unsigned char)buf[i])) {
			h->flaw = NET_HTTP_SYNTAX;
			return -1;
		}
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
 * code of the first line parser; h->flaw says why on failure. */
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
			h->flaw = NET_HTTP_TOO_LONG;
			if (avail > NET_HTTP_MAX_LINE)
				return first ? -3 : -4;
			if (len > NET_HTTP_MAX_HEAD)
				return -4;
			h->flaw = NET_HTTP_OK;
			/* A NUL or bare CR mid-line can be refused already. */
			for (size_t i = pos; i < len; i++) {
				if (buf[i] == '\0') {
					h->flaw = NET_HTTP_SYNTAX;
					return -1;
				}
				if (buf[i] == '\r' && i + 1 < len) {
					h->flaw = NET_HTTP_LINE_END;
					return -1;
				}
			}
			return 0;
		}
		size_t e = (size_t)(nl - buf);
		h->flaw = NET_HTTP_TOO_LONG;
		if (e - pos > NET_HTTP_MAX_LINE)
			return first ? -3 : -4;
		if (e + 1 > NET_HTTP_MAX_HEAD)
			return -4;
		/* bare LF: RFC 9112 §2.2 lets a recipient accept it; a proxy that
		 * did would split lines where a strict server does not */
		h->flaw = NET_HTTP_LINE_END;
		if (e == pos || buf[e - 1] != '\r')
			return -1;
		size_t le = e - 1;
		for (size_t i = pos; i < le; i++)
			if (buf[i] == '\r' || buf[i] == '\0') {
				h->flaw = buf[i] ? NET_HTTP_LINE_END : NET_HTTP_SYNTAX;
				return -1;
			}
		h->flaw = NET_HTTP_OK;
		if (first) {
			int rc = request ? parse_request_line(buf, pos, le, h)
					 : parse_status_line(buf, pos, le, h);
			if (rc < 0) {
				h->flaw = rc == -505 ? NET_HTTP_VERSION : NET_HTTP_SYNTAX;
				return rc;
			}
			first = false;
		} else if (le == pos) {
			h->head_len = (uint32_t)(e + 1);
			return 1;
		} else {
			/* obs-fold (RFC 9112 §5.2): a server may unfold it, another
			 * reads the line as a field of its own; refused */
			if (buf[pos] == ' ' || buf[pos] == '\t') {
				h->flaw = NET_HTTP_OBS_FOLD;
				return -1;
			}
			int rc = parse_header(buf, pos, le, h);
			if (rc < 0)
				return rc;
		}
		pos = e + 1;
	}
}

/* Connection options refused rather than obeyed.  RFC 9110 §7.6.1 says an
 * intermediary removes every field a Connection option names; for these
 * fields that changes how the next hop frames or routes the message:
 * "Connection: Content-Length" on a request whose body the proxy framed by
 * its Content-Length would reach the upstream without it, and the body
 * would be read as a second request no rule checked (a PUT behind an
 * allowed GET); on a response, the client would lose the framing and read
 * the rest of the connection as this body.  Transfer-Encoding is the same
 * with chunked framing, Host names the site, Expect and Trailer change how
 * the message is delivered.  The alternative, keeping the framing the proxy
 * used and ignoring the option, would forward a message its own sender
 * declared different, so the proxy and a peer that obeys the option would
 * disagree again.  Refusing is the one reading both ends share.
 *
 * Options naming fields the proxy always drops (TE, Upgrade, Keep-Alive,
 * Proxy-*, Connection itself) are allowed: RFC 9110 §10.1.4 and §7.8 even
 * require "Connection: TE" and "Connection: Upgrade" next to those fields,
 * and a field removed on every reading cannot be read two ways. */
static const char *const conn_refused[] = {
    "content-length", "transfer-encoding", "host", "expect", "trailer", NULL,
};

/* Connection: a list of tokens (empty elements allowed, RFC 9110 §5.6.1);
 * sets conn_close / *keep_alive.  0, or -1 with h->flaw set. */
static int
connection_options(const char *buf, struct net_span v, struct net_http_head *h, bool *keep_alive)
{
	size_t i = 0;
	while (i <= v.len) {
		size_t s = i;
		while (i < v.len && buf[v.off + i] != ',')
			i++;
		size_t e = i++;
		while (s < e && (buf[v.off + s] == ' ' || buf[v.off + s] == '\t'))
			s++;
		while (e > s && (buf[v.off + e - 1] == ' ' || buf[v.off + e - 1] == '\t'))
			e--;
		struct net_span t = {v.off + (uint32_t)s, (uint32_t)(e - s)};
		for (size_t k = s; k < e; k++)
			if (!tchar((unsigned char)buf[v.off + k])) {
				h->flaw = NET_HTTP_CONN_SYNTAX;
				return -1;
			}
		for (size_t k = 0; conn_refused[k]; k++)
			if (span_eq(buf, t, conn_refused[k])) {
				h->flaw = NET_HTTP_CONN_FRAMING;
				return -1;
			}
		if (span_eq(buf, t, "close"))
			h->conn_close = true;
		else if (span_eq(buf, t, "keep-alive"))
			*keep_alive = true;
	}
	return 0;
}

/* Transfer-Encoding: a list of transfer codings, each a bare token here
 * (no parameters, no empty elements: nothing real sends them, and each is
 * a way to make two parsers disagree, the "TE.TE" obfuscations such as
 * "chunked, identity", "xchunked" or a quoted "chunked").  Sets *chunked
 * when the list is exactly "chunked", *final_chunked when chunked is the
 * last coding, *other when another coding is present.  0, or -1 (not a
 * token list, or chunked twice). */
static int
te_codings(const char *buf, struct net_span v, bool *chunked, bool *final_chunked, bool *other)
{
	unsigned n = 0, n_chunked = 0;
	bool last_chunked = false;
	size_t i = 0;
	while (i <= v.len) {
		size_t s = i;
		while (i < v.len && buf[v.off + i] != ',')
			i++;
		size_t e = i++;
		while (s < e && (buf[v.off + s] == ' ' || buf[v.off + s] == '\t'))
			s++;
		while (e > s && (buf[v.off + e - 1] == ' ' || buf[v.off + e - 1] == '\t'))
			e--;
		if (s == e)
			return -1;
		for (size_t k = s; k < e; k++)
			if (!tchar((unsigned char)buf[v.off + k]))
				return -1;
		struct net_span t = {v.off + (uint32_t)s, (uint32_t)(e - s)};
		last_chunked = span_eq(buf, t, "chunked");
		n_chunked += last_chunked;
		*other |= !last_chunked;
		n++;
	}
	/* RFC 9112 §7: chunked at most once (whether it must be last is the
	 * caller's question: a request is refused, a response runs to the
	 * close, §6.3 item 4) */
	if (n_chunked > 1)
		return -1;
	*final_chunked = last_chunked;
	*chunked = n == 1 && last_chunked;
	return 0;
}

/* Framing and connection headers; common to requests and responses.
 * Returns 0, -1 (refused, 400 / 502) or -2 (a request's unsupported
 * coding, 501); h->flaw says why. */
static int
framing(const char *buf, struct net_http_head *h, bool request)
{
	unsigned n_cl = 0, n_te = 0, n_host = 0;
	bool chunked = false, final_chunked = false, other = false, keep_alive = false;
	for (unsigned i = 0; i < h->n_headers; i++) {
		const struct net_http_header *hd = &h->headers[i];
		if (span_eq(buf, hd->name, "content-length")) {
			uint64_t v;
			h->flaw = n_cl++ ? NET_HTTP_CL_DUP : NET_HTTP_CL_INVALID;
			if (n_cl > 1 || !parse_u64_span(buf, hd->value, &v))
				return -1;
			h->content_length = v;
		} else if (span_eq(buf, hd->name, "transfer-encoding")) {
			h->flaw = NET_HTTP_TE_INVALID;
			if (n_te++ ||
			    te_codings(buf, hd->value, &chunked, &final_chunked, &other) < 0)
				return -1;
		} else if (span_eq(buf, hd->name, "connection")) {
			if (connection_options(buf, hd->value, h, &keep_alive) < 0)
				return -1;
		} else if (span_eq(buf, hd->name, "host")) {
			h->flaw = NET_HTTP_HOST_DUP;
			if (n_host++)
				return -1;
		} else if (span_eq(buf, hd->name, "expect")) {
			if (span_eq(buf, hd->value, "100-continue"))
				h->expect_continue = true;
		} else if (span_alias(buf, hd->name, "content-length") ||
			   span_alias(buf, hd->name, "transfer-encoding")) {
			h->flaw = NET_HTTP_NAME_ALIAS;
			return -1;
		}
	}
	h->flaw = NET_HTTP_OK;
	if (h->version == 10 && !keep_alive)
		h->conn_close = true;
	if (n_te && n_cl) {
		h->flaw = NET_HTTP_CL_TE;
		return -1;
	}
	if (n_te && request) {
		/* RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 is faulty framing;
		 * §6.3 item 4: chunked not final in a request is 400 */
		h->flaw = h->version == 10 ? NET_HTTP_TE_HTTP10 : NET_HTTP_TE_INVALID;
		if (h->version == 10 || !final_chunked)
			return -1;
		if (other) {
			h->flaw = NET_HTTP_TE_UNSUPPORTED;
			return -2;
		}
		h->flaw = NET_HTTP_OK;
	}
	if (n_te && !request && h->version == 10) {
		/* RFC 9112 §6.1: faulty framing; read to the close, keep nothing */
		h->conn_close = true;
		chunked = false;
	}
	/* A response whose codings are not exactly "chunked" runs to the close
	 * (§6.3 item 4 when chunked is not final; otherwise a coding the proxy
	 * does not decode), and the client connection closes after it. */
	if (n_te)
		h->body = chunked ? NET_BODY_CHUNKED : NET_BODY_CLOSE;
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

const char *
net_http_flaw_text(enum net_http_flaw f)
{
	switch (f) {
	case NET_HTTP_OK:
		return "no flaw";
	case NET_HTTP_SYNTAX:
		return "a malformed head";
	case NET_HTTP_TOO_LONG:
		return "a head over the size limits";
	case NET_HTTP_VERSION:
		return "an HTTP version other than 1.0 or 1.1";
	case NET_HTTP_LINE_END:
		return "a line not ending in CRLF (bare LF or lone CR)";
	case NET_HTTP_OBS_FOLD:
		return "a header line folded onto the next (obs-fold)";
	case NET_HTTP_WS_COLON:
		return "whitespace between a header name and its colon";
	case NET_HTTP_CL_INVALID:
		return "a Content-Length that is not one decimal number";
	case NET_HTTP_CL_DUP:
		return "more than one Content-Length";
	case NET_HTTP_CL_TE:
		return "both Content-Length and Transfer-Encoding";
	case NET_HTTP_TE_INVALID:
		return "a Transfer-Encoding other than one final 'chunked'";
	case NET_HTTP_TE_UNSUPPORTED:
		return "a transfer coding other than chunked";
	case NET_HTTP_TE_HTTP10:
		return "Transfer-Encoding in an HTTP/1.0 message";
	case NET_HTTP_HOST_DUP:
		return "more than one Host";
	case NET_HTTP_CONN_FRAMING:
		return "a Connection header naming Content-Length, Transfer-Encoding, Host, "
		       "Expect or Trailer";
	case NET_HTTP_CONN_SYNTAX:
		return "a Connection header listing something other than field names";
	case NET_HTTP_NAME_ALIAS:
		return "a header named like Content-Length or Transfer-Encoding with '_' for "
		       "'-'";
	}
	return "a malformed head";
}

enum net_reason
net_http_flaw_reason(enum net_http_flaw f)
{
	switch (f) {
	case NET_HTTP_LINE_END:
	case NET_HTTP_OBS_FOLD:
	case NET_HTTP_WS_COLON:
	case NET_HTTP_CL_INVALID:
	case NET_HTTP_CL_DUP:
	case NET_HTTP_CL_TE:
	case NET_HTTP_TE_INVALID:
	case NET_HTTP_TE_HTTP10:
	case NET_HTTP_HOST_DUP:
	case NET_HTTP_CONN_FRAMING:
	case NET_HTTP_CONN_SYNTAX:
	case NET_HTTP_NAME_ALIAS:
		return NET_R_FRAMING;
	case NET_HTTP_OK:
	case NET_HTTP_SYNTAX:
	case NET_HTTP_TOO_LONG:
	case NET_HTTP_VERSION:
	case NET_HTTP_TE_UNSUPPORTED:
		return NET_R_MALFORMED;
	}
	return NET_R_MALFORMED;
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
	CS_TRAILER_NAME,
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
		if (b->content && k)
			b->content(b->content_arg, p, k);
		return (ssize_t)k;
	}
	case NET_BODY_CLOSE:
		b->payload += n;
		if (b->content && n)
			b->content(b->content_arg, p, n);
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
			else if (b->content) /* extensions carry data too */
				b->content(b->content_arg, p + i, 1);
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
			if (b->content && k)
				b->content(b->content_arg, p + i, k);
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
				b->cstate = CS_TRAILER_NAME;
				if (++b->cline > 8192)
					return -1;
			} else {
				return -1; /* obs-fold or junk in the trailer section */
			}
			i++;
			break;
		case CS_TRAILER_NAME:
			/* "name:" as in the head: no whitespace before the colon */
			if (c == ':')
				b->cstate = CS_TRAILER;
			else if (!tchar(c) || ++b->cline > 8192)
				return -1;
			i++;
			break;
		case CS_TRAILER:
			if (c == '\r')
				b->cstate = CS_TRAILER_LF;
			else if (!vchar(c) || ++b->cline > 8192)
				return -1;
			else if (b->content)
				b->content(b->content_arg, p + i, 1);
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
