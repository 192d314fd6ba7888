/* util/escape: see escape.h.  Pure: no allocation but the result's, no
 * locale (a terminal's idea of a character is UTF-8's here, whatever
 * LC_CTYPE says: the bytes reach the terminal as they are). */
#include "util/escape.h"
#include "util/util.h" /* WD_API */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (at most n bytes) and its
 * code point, or 0 when s does not start one: overlong forms, surrogates
 * and code points past U+10FFFF are invalid (RFC 3629), so a decoder in
 * a terminal cannot read them as something the check here did not see. */
static size_t
utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		*cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		*cp = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f; /* U+D800..U+DFFF: surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		*cp = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		unsigned char b = s[i];
		if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf))
			return 0;
		*cp = (*cp << 6) | (b & 0x3f);
	}
	return len;
}

/* Characters that change how the rest of a line reads without showing
 * themselves: C1 controls (U+0085 is a newline to some terminals,
 * U+009B a CSI), the bidi embeddings, overrides and isolates of
 * CVE-2021-42574 ("Trojan Source"), the marks U+061C, U+200E, U+200F,
 * zero-width spaces and joiners, the line and paragraph separators, and
 * the byte-order mark.  And what a terminal draws as nothing, or as a
 * blank, so a model's argument or name could hold text a human approving
 * or reviewing it never sees: the soft hyphen, the combining grapheme
 * joiner, the Hangul fillers, the Khmer inherent vowels, the Mongolian
 * variation selectors and vowel separator, the variation selectors (one
 * after any letter can carry a byte), the shorthand format controls, the
 * musical formatting controls and plane 14's tag characters ("ASCII
 * smuggling": invisible copies of every ASCII letter). */
static bool
invisible(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x00ad || cp == 0x034f || cp == 0x061c ||
	       cp == 0x115f || cp == 0x1160 || cp == 0x17b4 || cp == 0x17b5 ||
	       (cp >= 0x180b && cp <= 0x180f) || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp == 0x3164 ||
	       (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff || cp == 0xffa0 ||
	       (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0x1bca0 && cp <= 0x1bca3) ||
	       (cp >= 0x1d173 && cp <= 0x1d17a) || (cp >= 0xe0000 && cp <= 0xe0fff);
}

bool
wd_esc_path_needs_quote(const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t n = strlen(name);
	if (n && (s[0] == ' ' || s[n - 1] == ' '))
		return true;
	/* warden's summary lines put " -> " between a rename's names and
	 * "  (" before a note such as "(protected: never applied)": a name
	 * holding either could forge a rename or a note about another file */
	if (strstr(name, " -> ") || strstr(name, "  ("))
		return true;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = utf8_seq(s + i, n - i, &cp);
		if (!l || cp < 0x20 || cp == 0x7f || cp == '"' || cp == '\\' || invisible(cp))
			return true;
		i += l;
	}
	return false;
}

void
wd_esc_path_put(FILE *f, const char *name)
{
	if (!wd_esc_path_needs_quote(name)) {
		fputs(name, f);
		return;
	}
	/* git's quote_c_style: the C escapes it knows, octal for the rest;
	 * printable ASCII and harmless UTF-8 as they are */
	const unsigned char *s = (const unsigned char *)name;
	size_t n = strlen(name);
	fputc('"', f);
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = utf8_seq(s + i, n - i, &cp);
		if (l && cp >= 0x20 && cp != 0x7f && cp != '"' && cp != '\\' && !invisible(cp)) {
			fwrite(s + i, 1, l, f);
			i += l;
			continue;
		}
		if (!l)
			l = 1;
		for (size_t k = 0; k < l; k++) {
			unsigned char c = s[i + k];
			const char *e = c == '\a'   ? "\\a"
					: c == '\b' ? "\\b"
					: c == '\t' ? "\\t"
					: c == '\n' ? "\\n"
					: c == '\v' ? "\\v"
					: c == '\f' ? "\\f"
					: c == '\r' ? "\\r"
					: c == '"'  ? "\\\""
					: c == '\\' ? "\\\\"
						    : NULL;
			if (e)
				fputs(e, f);
			else
				fprintf(f, "\\%03o", c);
		}
		i += l;
	}
	fputc('"', f);
}

WD_API char *
wd_esc_path(const char *name)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		abort();
	wd_esc_path_put(f, name);
	if (fclose(f) != 0 || !out)
		abort();
	return out;
}

void
wd_esc_text_put(FILE *f, const char *text, size_t len, unsigned flags, size_t max)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t line = 0; /* bytes of the current line shown */
	if (flags & WD_ESC_WORD)
		fputc('\'', f);
	for (size_t i = 0; i < len;) {
		if (s[i] == '\n' && (flags & WD_ESC_LINES)) {
			fputc('\n', f);
			line = 0;
			i++;
			continue;
		}
		if (max && line >= max) {
			/* the rest of this line is counted, not shown */
			const unsigned char *nl =
			    (flags & WD_ESC_LINES) ? memchr(s + i, '\n', len - i) : NULL;
			size_t rest = nl ? (size_t)(nl - (s + i)) : len - i;
			fprintf(f, "... (%zu more bytes)", rest);
			i += rest;
			continue;
		}
		uint32_t cp;
		size_t l = utf8_seq(s + i, len - i, &cp);
		if (!l) {
			fprintf(f, "\\x%02x", s[i]);
			line += 4;
			i++;
		} else if ((cp < 0x20 && (cp != '\t' || (flags & WD_ESC_WORD))) || cp == 0x7f ||
			   ((flags & WD_ESC_WORD) && (cp == '\'' || cp == '\\'))) {
			/* In one argv word a tab is shown as \x09: raw, a
			 * terminal renders it as spaces, and 'a<TAB>b' read as
			 * 'a   b' is another file name than the one approved. */
			fprintf(f, "\\x%02x", (unsigned)cp);
			line += 4;
			i += l;
		} else if (invisible(cp)) {
			fprintf(f, "<U+%04X>", (unsigned)cp);
			line += 8;
			i += l;
		} else {
			fwrite(s + i, 1, l, f);
			line += l;
			i += l;
		}
	}
	if (flags & WD_ESC_WORD)
		fputc('\'', f);
}

WD_API char *
wd_esc_text(const char *s, size_t len, unsigned flags, size_t max)
{
	char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);
	if (!f)
		abort();
	wd_esc_text_put(f, s, len, flags, max);
	if (fclose(f) != 0 || !out)
		abort();
	return out;
}
