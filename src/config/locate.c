/* locate.c - where in the policy text a member sits, for error messages.
 *
 * jansson reports line:column for syntax errors only; once a document has
 * parsed, a json_t carries no position.  The validator walks the parsed tree
 * and, when it finds an unknown key, a wrong type or a bad value, it has the
 * member's path ("programs" -> "git" -> "subcommands" -> 2).  This scanner
 * walks the original text along that path and returns the position of the
 * key or of the value.  It runs only on the error path and only over text
 * jansson has already accepted, so it may be simple: it never validates,
 * and on anything unexpected it gives up (-1) and the caller reports the
 * error without a precise column.
 *
 * Columns count characters, not bytes (UTF-8 continuation bytes do not
 * advance the column), as jansson's own error columns do.
 */
#include "config/config.h"

#include <string.h>

struct scan {
	const char *s;
	size_t n, i;
	int line, col;
};

static void
adv(struct scan *sc)
{
	if (sc->i >= sc->n)
		return;
	unsigned char c = (unsigned char)sc->s[sc->i];
	if (c == '\n') {
		sc->line++;
		sc->col = 1;
	} else if ((c & 0xC0) != 0x80) {
		sc->col++;
	}
	sc->i++;
}

static void
skip_ws(struct scan *sc)
{
	while (sc->i < sc->n && strchr(" \t\r\n", sc->s[sc->i]) && sc->s[sc->i])
		adv(sc);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t
put_utf8(char *out, size_t cap, size_t o, unsigned cp)
{
	char b[4];
	size_t k;
	if (cp < 0x80) {
		b[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		k = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		k = 3;
	} else {
		b[0] = (char)(0xF0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		k = 4;
	}
	for (size_t j = 0; j < k; j++)
		if (o + 1 < cap)
			out[o++] = b[j];
	return o;
}

static int
read4(struct scan *sc, unsigned *cp)
{
	unsigned v = 0;
	for (int k = 0; k < 4; k++) {
		if (sc->i >= sc->n)
			return -1;
		int h = hexval(sc->s[sc->i]);
		if (h < 0)
			return -1;
		v = v * 16 + (unsigned)h;
		adv(sc);
	}
	*cp = v;
	return 0;
}

/* Scan a string at sc->i (which is '"'); decode into out (truncated to cap). */
static int
scan_string(struct scan *sc, char *out, size_t cap)
{
	size_t o = 0;
	if (sc->i >= sc->n || sc->s[sc->i] != '"')
		return -1;
	adv(sc);
	while (sc->i < sc->n) {
		char c = sc->s[sc->i];
		if (c == '"') {
			adv(sc);
			if (out && cap)
				out[o < cap ? o : cap - 1] = '\0';
			return 0;
		}
		if (c == '\\') {
			adv(sc);
			if (sc->i >= sc->n)
				return -1;
			char e = sc->s[sc->i];
			adv(sc);
			unsigned cp;
			switch (e) {
			case 'b':
				cp = '\b';
				break;
			case 'f':
				cp = '\f';
				break;
			case 'n':
				cp = '\n';
				break;
			case 'r':
				cp = '\r';
				break;
			case 't':
				cp = '\t';
				break;
			case 'u':
				if (read4(sc, &cp) < 0)
					return -1;
				if (cp >= 0xD800 && cp < 0xDC00 && sc->i + 1 < sc->n &&
				    sc->s[sc->i] == '\\' && sc->s[sc->i + 1] == 'u') {
					unsigned lo;
					adv(sc);
					adv(sc);
					if (read4(sc, &lo) < 0)
						return -1;
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				}
				break;
			default:
				cp = (unsigned char)e;
				break;
			}
			if (out)
				o = put_utf8(out, cap, o, cp);
			continue;
		}
		if (out && o + 1 < cap)
			out[o++] = c;
		adv(sc);
	}
	return -1;
}

static int skip_value(struct scan *sc, int depth);

static int
skip_container(struct scan *sc, char close, int depth)
{
	if (depth > 256)
		return -1;
	adv(sc);
	skip_ws(sc);
	if (sc->i < sc->n && sc->s[sc->i] == close) {
		adv(sc);
		return 0;
	}
	for (;;) {
		skip_ws(sc);
		if (close == '}') {
			if (scan_string(sc, NULL, 0) < 0)
				return -1;
			skip_ws(sc);
			if (sc->i >= sc->n || sc->s[sc->i] != ':')
				return -1;
			adv(sc);
			skip_ws(sc);
		}
		if (skip_value(sc, depth + 1) < 0)
			return -1;
		skip_ws(sc);
		if (sc->i >= sc->n)
			return -1;
		if (sc->s[sc->i] == ',') {
			adv(sc);
			continue;
		}
		if (sc->s[sc->i] == close) {
			adv(sc);
			return 0;
		}
		return -1;
	}
}

static int
skip_value(struct scan *sc, int depth)
{
	skip_ws(sc);
	if (sc->i >= sc->n)
		return -1;
	switch (sc->s[sc->i]) {
	case '{':
		return skip_container(sc, '}', depth);
	case '[':
		return skip_container(sc, ']', depth);
	case '"':
		return scan_string(sc, NULL, 0);
	default:
		while (sc->i < sc->n && !strchr(",]} \t\r\n", sc->s[sc->i]) && sc->s[sc->i])
			adv(sc);
		return 0;
	}
}

int
config_json_locate(const char *text, size_t len, const struct config_path_elem *path, size_t depth,
		   bool key, int *line, int *col)
{
	struct scan sc = {.s = text, .n = len, .i = 0, .line = 1, .col = 1};
	char buf[512];
	skip_ws(&sc);
	for (size_t d = 0; d < depth; d++) {
		const struct config_path_elem *e = &path[d];
		bool last = d + 1 == depth;
		if (sc.i >= sc.n)
			return -1;
		if (e->key) {
			if (sc.s[sc.i] != '{')
				return -1;
			adv(&sc);
			bool found = false;
			for (;;) {
				skip_ws(&sc);
				if (sc.i >= sc.n || sc.s[sc.i] == '}')
					return -1;
				int kl = sc.line, kc = sc.col;
				if (scan_string(&sc, buf, sizeof(buf)) < 0)
					return -1;
				skip_ws(&sc);
				if (sc.i >= sc.n || sc.s[sc.i] != ':')
					return -1;
				adv(&sc);
				skip_ws(&sc);
				if (!strcmp(buf, e->key)) {
					if (last && key) {
						*line = kl;
						*col = kc;
						return 0;
					}
					found = true;
					break;
				}
				if (skip_value(&sc, 0) < 0)
					return -1;
				skip_ws(&sc);
				if (sc.i < sc.n && sc.s[sc.i] == ',')
					adv(&sc);
			}
			if (!found)
				return -1;
		} else {
			if (sc.s[sc.i] != '[')
				return -1;
			adv(&sc);
			for (size_t k = 0;; k++) {
				skip_ws(&sc);
				if (sc.i >= sc.n || sc.s[sc.i] == ']')
					return -1;
				if (k == e->index)
					break;
				if (skip_value(&sc, 0) < 0)
					return -1;
				skip_ws(&sc);
				if (sc.i < sc.n && sc.s[sc.i] == ',')
					adv(&sc);
			}
		}
	}
	skip_ws(&sc);
	*line = sc.line;
	*col = sc.col;
	return 0;
}
