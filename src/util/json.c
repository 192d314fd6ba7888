/* util/json: a small JSON writer (see json.h). */
#include "util/json.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

void
jw_init(struct jw *w, unsigned flags)
{
	memset(w, 0, sizeof(*w));
	w->flags = flags;
	w->first = true;
}

char *
jw_steal(struct jw *w)
{
	char *p = w->p ? w->p : wd_xstrdup("");
	w->p = NULL;
	w->len = w->cap = 0;
	w->first = true;
	return p;
}

void
jw_fini(struct jw *w)
{
	free(w->p);
	w->p = NULL;
	w->len = w->cap = 0;
}

void
jw_raw(struct jw *w, const char *s, size_t n)
{
	if (w->len + n + 1 > w->cap) {
		w->cap = (w->len + n + 1) * 2 + 64;
		w->p = wd_xrealloc(w->p, w->cap);
	}
	memcpy(w->p + w->len, s, n);
	w->len += n;
	w->p[w->len] = '\0';
}

static void
puts_(struct jw *w, const char *s)
{
	jw_raw(w, s, strlen(s));
}

/* A comma before every value but the first at its level. */
static void
sep(struct jw *w)
{
	if (!w->first)
		jw_raw(w, ",", 1);
	w->first = false;
}

void
jw_obj_begin(struct jw *w)
{
	sep(w);
	jw_raw(w, "{", 1);
	w->first = true;
}

void
jw_obj_end(struct jw *w)
{
	jw_raw(w, "}", 1);
	w->first = false;
}

void
jw_arr_begin(struct jw *w)
{
	sep(w);
	jw_raw(w, "[", 1);
	w->first = true;
}

void
jw_arr_end(struct jw *w)
{
	jw_raw(w, "]", 1);
	w->first = false;
}

/* Length of a valid UTF-8 sequence at s (at most n bytes) and its code
 * point, or 0 (overlong forms, surrogates and values past U+10FFFF are
 * invalid, RFC 3629). */
static size_t
utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	size_t len;
	uint32_t c;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static void
u_escape(struct jw *w, uint32_t cp)
{
	char tmp[16];
	if (cp >= 0x10000) {
		cp -= 0x10000;
		snprintf(tmp, sizeof(tmp), "\\u%04x\\u%04x", 0xd800 + (cp >> 10),
			 0xdc00 + (cp & 0x3ff));
	} else {
		snprintf(tmp, sizeof(tmp), "\\u%04x", cp);
	}
	puts_(w, tmp);
}

static void
write_string(struct jw *w, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;
	char hexbyte[] = "\\\\xNN";
	jw_raw(w, "\"", 1);
	while (i < n) {
		unsigned char ch = u[i];
		const char *esc = NULL;
		uint32_t cp = ch;
		size_t l = 1;
		int ue = -1; /* code point to write as \u, or -1 */
		if (ch == '"')
			esc = "\\\"";
		else if (ch == '\\')
			esc = "\\\\";
		else if (ch == '\n')
			esc = "\\n";
		else if (ch == '\r')
			esc = "\\r";
		else if (ch == '\t')
			esc = "\\t";
		else if (ch < 0x20 || ch == 0x7f)
			ue = ch;
		else if (ch >= 0x80) {
			l = utf8_decode(u + i, n - i, &cp);
			if (!l && (w->flags & JW_HEXBYTES)) {
				/* the byte as the text \xNN: a parser keeps it */
				static const char hex[] = "0123456789abcdef";
				hexbyte[3] = hex[ch >> 4];
				hexbyte[4] = hex[ch & 15];
				esc = hexbyte;
				l = 1;
			} else if (!l) {
				ue = 0xdc00 + ch; /* surrogateescape: the byte, visibly */
				l = 1;
			} else if (w->flags & JW_ASCII) {
				ue = (int)cp;
			}
		}
		if (esc || ue >= 0) {
			jw_raw(w, s + run, i - run);
			if (esc)
				puts_(w, esc);
			else
				u_escape(w, (uint32_t)ue);
			run = i + l;
		}
		i += l;
	}
	jw_raw(w, s + run, n - run);
	jw_raw(w, "\"", 1);
}

void
jw_strn(struct jw *w, const char *s, size_t n)
{
	sep(w);
	write_string(w, s, n);
}

void
jw_key(struct jw *w, const char *name)
{
	sep(w);
	write_string(w, name, strlen(name));
	jw_raw(w, ":", 1);
	w->first = true; /* the value that follows takes no comma */
}

void
jw_str(struct jw *w, const char *s)
{
	if (!s) {
		jw_null(w);
		return;
	}
	sep(w);
	write_string(w, s, strlen(s));
}

void
jw_int(struct jw *w, long long v)
{
	char tmp[32];
	sep(w);
	snprintf(tmp, sizeof(tmp), "%lld", v);
	puts_(w, tmp);
}

void
jw_uint(struct jw *w, uint64_t v)
{
	char tmp[32];
	sep(w);
	snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	puts_(w, tmp);
}

void
jw_double(struct jw *w, double v, int decimals)
{
	char tmp[64];
	sep(w);
	snprintf(tmp, sizeof(tmp), "%.*f", decimals, v);
	puts_(w, tmp);
}

void
jw_bool(struct jw *w, bool v)
{
	sep(w);
	puts_(w, v ? "true" : "false");
}

void
jw_null(struct jw *w)
{
	sep(w);
	puts_(w, "null");
}

void
jw_json(struct jw *w, const char *json)
{
	sep(w);
	puts_(w, json ? json : "null");
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* s (6 chars at least) is "\uD8XX".."\uDBXX": a high surrogate */
static bool
high_surrogate(const char *s)
{
	return s[0] == '\\' && s[1] == 'u' && (s[2] | 0x20) == 'd' && hexval(s[3]) >= 8 &&
	       hexval(s[3]) <= 11;
}

char *
jw_surrogates_to_nul(const char *in, size_t n, size_t *out_len)
{
	char *out = wd_xmalloc(2 * n + 1);
	size_t o = 0;
	bool after_high = false;
	for (size_t i = 0; i < n;) {
		if (in[i] != '\\' || i + 1 >= n) {
			out[o++] = in[i++];
			after_high = false;
			continue;
		}
		bool u6 = in[i + 1] == 'u' && i + 5 < n;
		if (u6 && !after_high && (in[i + 2] | 0x20) == 'd' && (in[i + 3] | 0x20) == 'c' &&
		    hexval(in[i + 4]) >= 8 && hexval(in[i + 5]) >= 0) {
			memcpy(out + o, "\\u0000", 6);
			out[o + 6] = in[i + 4];
			out[o + 7] = in[i + 5];
			o += 8;
			i += 6;
			after_high = false;
			continue;
		}
		/* a whole \uXXXX at once, so that the next escape knows
		 * whether it follows a high surrogate */
		size_t len = u6 ? 6 : 2;
		after_high = u6 && high_surrogate(in + i);
		memcpy(out + o, in + i, len);
		o += len;
		i += len;
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

char *
jw_nul_undo(const char *s, size_t len, bool raw)
{
	char *out = wd_xmalloc(2 * len + 1);
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '\0') {
			out[o++] = s[i];
			continue;
		}
		int hi = i + 2 < len ? hexval(s[i + 1]) : -1, lo = hi >= 0 ? hexval(s[i + 2]) : -1;
		if (lo < 0 || hi < 8) {
			/* not what jw_surrogates_to_nul makes of a byte: a
			 * "\u0000" the text held itself */
			free(out);
			return NULL;
		}
		if (raw) {
			out[o++] = (char)(hi << 4 | lo);
		} else {
			static const char hex[] = "0123456789abcdef";
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[hi];
			out[o++] = hex[lo];
		}
		i += 2;
	}
	out[o] = '\0';
	return out;
}
