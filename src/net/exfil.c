/* net/exfil.c: the exfiltration checks of the secrets module.
 *
 * A request that carries a secret's placeholder, or its value, to a
 * destination no inject rule binds that secret to is refused and audited
 * (NET_R_EXFIL).  The placeholder is worthless outside the sandbox, so
 * finding it on its way out is not a leak; it is evidence that something
 * in the sandbox (a command the model was talked into) is trying to steal
 * the credential it believes it holds, which an operator wants to see.
 * The value should never be in the sandbox at all; it can get there only
 * if an upstream echoes it back, and then the same check stops it.
 *
 * What is looked for, per secret not bound to the destination:
 *   - the placeholder's 32 random hex digits, in any case (so also with
 *     the "warden-placeholder-" prefix cut off);
 *   - the value as it is, and percent-encoded (upper-case hex, every byte
 *     outside RFC 3986's unreserved set), as a query string or a form body
 *     carries it;
 *   - in Authorization-style fields, the base64-decoded "Basic"
 *     credentials (a client configured with the placeholder as password
 *     sends it so);
 *   - in host names and DNS queries, the placeholder or the lowercase value
 *     with the dots between labels removed (a name split over labels).
 *
 * What this is not: a defence against a program that encodes the value
 * some other way (reversed, compressed, XORed, split over requests).  That
 * defence is that the sandbox never has the value; this check catches the
 * ordinary attempt and puts it on the record.  Bodies are checked across
 * reads (the last bytes are kept), but bytes of a body already forwarded
 * are not recalled: a match that completes in a later read stops the
 * request there, after a prefix of the match went out. */
#include "net/net-internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The first position in [p, end) holding c in either case: memchr for
 * each spelling, since bodies can be large and a byte loop costs a
 * function call per byte. */
static const char *
next_either(const char *p, const char *end, unsigned char lo, unsigned char up)
{
	if (p >= end)
		return NULL;
	const char *a = memchr(p, lo, (size_t)(end - p));
	if (lo == up)
		return a;
	const char *b = memchr(p, up, (size_t)((a ? a : end) - p));
	return b ? b : a;
}

/* Case-insensitive search for a lowercase needle. */
static bool
ci_has(const char *h, size_t n, const char *needle, size_t m)
{
	if (m == 0 || n < m)
		return false;
	unsigned char lo = (unsigned char)needle[0], up = (unsigned char)toupper(lo);
	const char *end = h + n - m + 1; /* the last start that fits, plus one */
	for (const char *p = next_either(h, end, lo, up); p; p = next_either(p + 1, end, lo, up)) {
		size_t k = 1;
		while (k < m &&
		       (unsigned char)tolower((unsigned char)p[k]) == (unsigned char)needle[k])
			k++;
		if (k == m)
			return true;
	}
	return false;
}

int
net_secrets_find(const struct net_secrets *s, uint64_t bound, const char *p, size_t n)
{
	if (!s)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		const struct net_secret *v = &s->v[i];
		if (bound & (1ull << i))
			continue;
		if (memmem(p, n, v->mem, v->len) ||
		    (v->penc_len && memmem(p, n, v->penc, v->penc_len)) ||
		    ci_has(p, n, v->core, 32))
			return (int)i;
	}
	return -1;
}

int
net_secrets_find_name(const struct net_secrets *s, const char *name)
{
	if (!s || !name)
		return -1;
	char flat[256];
	size_t n = 0, len = strlen(name);
	for (size_t i = 0; i < len && n + 1 < sizeof(flat); i++)
		if (name[i] != '.')
			flat[n++] = (char)tolower((unsigned char)name[i]);
	for (size_t i = 0; i < s->n; i++) {
		const struct net_secret *v = &s->v[i];
		if (ci_has(flat, n, v->core, 32) || ci_has(name, len, v->lower, v->len) ||
		    ci_has(flat, n, v->lower, v->len))
			return (int)i;
	}
	return -1;
}

static int
b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Decode base64 (either alphabet, padding optional) until the first byte
 * outside it; returns the decoded length. */
static size_t
b64_decode(const char *in, size_t n, char *out)
{
	size_t o = 0;
	unsigned acc = 0, bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64val((unsigned char)in[i]);
		if (v < 0)
			break;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	return o;
}

static int
hexv(unsigned char c)
{
	if (isdigit(c))
		return c - '0';
	c = (unsigned char)tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode (and '+' as space, as forms do) into out. */
static size_t
pct_decode(const char *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (in[i] == '%' && i + 2 < n && hexv((unsigned char)in[i + 1]) >= 0 &&
		    hexv((unsigned char)in[i + 2]) >= 0) {
			out[o++] = (char)(hexv((unsigned char)in[i + 1]) * 16 +
					  hexv((unsigned char)in[i + 2]));
			i += 2;
		} else {
			out[o++] = in[i] == '+' ? ' ' : in[i];
		}
	}
	return o;
}

/* The secret found in a decoded copy of p[0..n), wiping the copy (it may
 * hold a value). */
static int
find_decoded(const struct net_secrets *s, uint64_t bound, const char *p, size_t n, bool b64)
{
	char *d = wd_xmalloc(n + 1);
	size_t dl = b64 ? b64_decode(p, n, d) : pct_decode(p, n, d);
	int hit = net_secrets_find(s, bound, d, dl);
	explicit_bzero(d, n + 1);
	free(d);
	return hit;
}

int
net_secrets_find_head(const struct net_secrets *s, uint64_t bound, const char *buf,
		      const struct net_http_head *h,
		      bool (*skip)(const char *buf, const struct net_http_head *h, unsigned i,
				   void *arg),
		      void *arg, char *where, size_t where_cap)
{
	if (!s || s->n == 0)
		return -1;
	const char *t = buf + h->target.off;
	int hit = net_secrets_find(s, bound, t, h->target.len);
	if (hit < 0)
		hit = find_decoded(s, bound, t, h->target.len, false);
	if (hit >= 0) {
		snprintf(where, where_cap, "the URL");
		return hit;
	}
	/* a method is a token of up to 24 bytes: room for a value */
	hit = net_secrets_find(s, bound, buf + h->method.off, h->method.len);
	if (hit >= 0) {
		snprintf(where, where_cap, "the method");
		return hit;
	}
	for (unsigned i = 0; i < h->n_headers; i++) {
		if (skip && skip(buf, h, i, arg))
			continue;
		const struct net_http_header *f = &h->headers[i];
		const char *v = buf + f->value.off;
		size_t vl = f->value.len;
		bool basic = false;
		hit = net_secrets_find(s, bound, buf + f->name.off, f->name.len);
		if (hit < 0)
			hit = net_secrets_find(s, bound, v, vl);
		if (hit < 0 && vl > 6 && !strncasecmp(v, "basic ", 6)) {
			size_t k = 6;
			while (k < vl && v[k] == ' ')
				k++;
			hit = find_decoded(s, bound, v + k, vl - k, true);
			basic = hit >= 0;
		}
		if (hit >= 0) {
			snprintf(where, where_cap, "the %.*s field%s",
				 (int)(f->name.len < 64 ? f->name.len : 64), buf + f->name.off,
				 basic ? " (Basic credentials)" : "");
			return hit;
		}
	}
	return -1;
}

/* --------------------------------------------------------------- bodies */

struct net_scan {
	const struct net_secrets *s;
	uint64_t bound;
	size_t keep; /* longest pattern - 1: what a match across feeds needs */
	char *tail;  /* the last keep bytes seen, then room for keep more */
	size_t tlen;
	int hit;
};

struct net_scan *
net_scan_new(const struct net_secrets *s, uint64_t bound)
{
	if (!s || s->n == 0)
		return NULL;
	size_t longest = 32;
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].len > longest)
			longest = s->v[i].len;
		if (s->v[i].penc_len > longest)
			longest = s->v[i].penc_len;
	}
	struct net_scan *sc = wd_xcalloc(1, sizeof(*sc));
	sc->s = s;
	sc->bound = bound;
	sc->keep = longest - 1;
	sc->tail = wd_xmalloc(2 * sc->keep);
	sc->hit = -1;
	return sc;
}

void
net_scan_free(struct net_scan *sc)
{
	if (!sc)
		return;
	explicit_bzero(sc->tail, 2 * sc->keep);
	free(sc->tail);
	free(sc);
}

int
net_scan_feed(struct net_scan *sc, const char *p, size_t n)
{
	if (!sc || sc->hit >= 0 || n == 0)
		return sc ? sc->hit : -1;
	/* a match that starts in what came before and ends in p */
	if (sc->tlen) {
		size_t k = n < sc->keep ? n : sc->keep;
		memcpy(sc->tail + sc->tlen, p, k);
		sc->hit = net_secrets_find(sc->s, sc->bound, sc->tail, sc->tlen + k);
	}
	if (sc->hit < 0)
		sc->hit = net_secrets_find(sc->s, sc->bound, p, n);
	/* keep the last keep bytes of everything so far */
	if (n >= sc->keep) {
		memcpy(sc->tail, p + n - sc->keep, sc->keep);
		sc->tlen = sc->keep;
	} else {
		size_t total = sc->tlen + n, drop = total > sc->keep ? total - sc->keep : 0;
		memmove(sc->tail, sc->tail + drop, sc->tlen - drop);
		memcpy(sc->tail + sc->tlen - drop, p, n);
		sc->tlen = total - drop;
	}
	return sc->hit;
}

/* ------------------------------------------------------------ redaction */

void
net_secrets_redact(const struct net_secrets *s, char *buf, size_t cap)
{
	if (!s || s->n == 0 || cap == 0)
		return;
	size_t n = strlen(buf), o = 0;
	char *out = wd_xmalloc(cap);
	for (size_t i = 0; i < n && o + 1 < cap;) {
		int which = -1;
		size_t m = 0;
		for (size_t k = 0; k < s->n && which < 0; k++) {
			const struct net_secret *v = &s->v[k];
			if (n - i >= v->len && !strncasecmp(buf + i, v->lower, v->len)) {
				which = (int)k;
				m = v->len;
			} else if (v->penc_len && n - i >= v->penc_len &&
				   !memcmp(buf + i, v->penc, v->penc_len)) {
				which = (int)k;
				m = v->penc_len;
			}
		}
		if (which < 0) {
			out[o++] = buf[i++];
			continue;
		}
		int w = snprintf(out + o, cap - o, "{%s}", s->v[which].name);
		o = w > 0 && (size_t)w < cap - o ? o + (size_t)w : cap - 1;
		i += m;
	}
	out[o] = '\0';
	memcpy(buf, out, o + 1);
	explicit_bzero(out, cap);
	free(out);
}

/* ------------------------------------------------------------ responses */

/* An upstream that echoes the credential back (a debugging endpoint that
 * returns the request's headers, an error page quoting them) would hand
 * the sandbox the value it must never hold.  Responses are masked on the
 * way through: every complete occurrence of a value (as it is, or
 * percent-encoded) becomes as many '*', so lengths and framing stay as the
 * upstream sent them. */
static size_t
mask_one(char *p, size_t n, const char *pat, size_t m)
{
	size_t count = 0;
	for (char *q = p; m && (q = memmem(q, n - (size_t)(q - p), pat, m)); q += m) {
		memset(q, '*', m);
		count++;
	}
	return count;
}

size_t
net_secrets_mask(const struct net_secrets *s, char *p, size_t n, uint64_t *found)
{
	size_t count = 0;
	for (size_t i = 0; s && i < s->n; i++) {
		const struct net_secret *v = &s->v[i];
		size_t c = mask_one(p, n, v->mem, v->len);
		if (v->penc_len)
			c += mask_one(p, n, v->penc, v->penc_len);
		if (c && found)
			*found |= 1ull << i;
		count += c;
	}
	return count;
}

/* The response window (docs/threat-model.md): how many bytes at the end of what has
 * arrived are held back, whatever they are.  The old window held a tail
 * only when it matched a prefix of a value, so whether bytes arrived
 * before a pause told the sandbox, through any allowed host that reflects
 * its bytes, whether a guess was a prefix of the value: 23 characters were
 * recovered in 273 s.  The window must hold the longest pattern minus one
 * (a value's first byte stays within it until the value completes, and is
 * masked then), but it must not *be* that length either: the number of
 * bytes held before a pause is what the sandbox measures, and a window of
 * exactly (longest - 1) told it the value's length, or its percent-encoded
 * length, which counts its reserved characters (found by an attack
 * pass).  So the window is one of two sizes, fixed in advance: 255 bytes
 * while every pattern fits in 256, else the most any value can encode to
 * (3 * NET_SECRET_MAX - 1).  All it tells is which of the two. */
size_t
net_secrets_hold_len(const struct net_secrets *s)
{
	size_t longest = 0;
	for (size_t i = 0; s && i < s->n; i++) {
		const struct net_secret *v = &s->v[i];
		if (v->len > longest)
			longest = v->len;
		if (v->penc_len > longest)
			longest = v->penc_len;
	}
	if (!longest)
		return 0;
	return (longest <= NET_HOLD_SMALL ? NET_HOLD_SMALL : 3 * (size_t)NET_SECRET_MAX) - 1;
}
