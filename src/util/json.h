/* util/json: the library's own JSON writer.  Results, events, the
 * monitor's protocol and the audit trail's members are written with it;
 * jansson writes the rest, and some of this text is parsed back (both
 * listed in docs/architecture.md, "Events").  It appends to a growing
 * buffer; strings are escaped so that the text is valid JSON whatever
 * bytes they hold:
 *
 *  - control characters, '"' and '\' as JSON escapes;
 *  - bytes that are not valid UTF-8 as "\udcXX" (a lone low surrogate, the
 *    "surrogateescape" of Python's os.fsdecode): visible, reversible, and
 *    distinct from a real U+FFFD in the output, which a replacement char
 *    would hide;
 *  - with JW_ASCII, every other non-ASCII character as \uXXXX (surrogate
 *    pairs above the BMP), for the audit trail's ASCII-only lines;
 *  - with JW_HEXBYTES, a byte that is not valid UTF-8 as the four
 *    characters \xNN instead (the text "\\xNN"), for a JSON text a
 *    strict parser must read back (jansson refuses a lone surrogate). */
#ifndef WD_UTIL_JSON_H
#define WD_UTIL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JW_ASCII 0x1u
#define JW_HEXBYTES 0x2u

struct jw {
	char *p;
	size_t len, cap;
	unsigned flags;
	bool first; /* no member/element written yet at this level */
};

void jw_init(struct jw *w, unsigned flags);
/* The text so far (NUL-terminated; "" if nothing); ownership moves to the
 * caller (free with free()) and w is reset. */
char *jw_steal(struct jw *w);
void jw_fini(struct jw *w);

void jw_raw(struct jw *w, const char *s, size_t n);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
/* A member name (in an object); the value follows with one of below. */
void jw_key(struct jw *w, const char *name);
void jw_str(struct jw *w, const char *s); /* NULL: null */
void jw_strn(struct jw *w, const char *s, size_t n);
void jw_int(struct jw *w, long long v);
void jw_uint(struct jw *w, uint64_t v);
void jw_double(struct jw *w, double v, int decimals);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
/* A value already in JSON (an object or array made elsewhere, e.g. by
 * jansson's json_dumps): inserted as it is. */
void jw_json(struct jw *w, const char *json);

/* For a strict parser (jansson) of text this writer wrote: each "\udcXX"
 * escape of a byte 0x80-0xff (not the low half of a surrogate pair after
 * a "\ud8XX"-"\udbXX") made "\u0000XX", a NUL then the two hex digits,
 * to be parsed with JSON_ALLOW_NUL.  A string written from a C string never
 * holds a real NUL, so a NUL in one read back marks the byte that follows
 * as two hex digits.  Every other escape is copied as the pair it is.  New
 * string (NUL-terminated), its length in *out_len. */
char *jw_surrogates_to_nul(const char *in, size_t n, size_t *out_len);
/* A string parsed from such text (len bytes, a NUL marking each escaped
 * byte) as its bytes (raw) or as the visible text \xNN (raw false).  New
 * string; NULL if a NUL is not followed by the two hex digits of a byte
 * 0x80-0xff (the text held a "\u0000" of its own). */
char *jw_nul_undo(const char *s, size_t len, bool raw);

/* key + value shorthands */
static inline void
jw_kstr(struct jw *w, const char *k, const char *v)
{
	jw_key(w, k);
	jw_str(w, v);
}
static inline void
jw_kint(struct jw *w, const char *k, long long v)
{
	jw_key(w, k);
	jw_int(w, v);
}
static inline void
jw_kuint(struct jw *w, const char *k, uint64_t v)
{
	jw_key(w, k);
	jw_uint(w, v);
}
static inline void
jw_kbool(struct jw *w, const char *k, bool v)
{
	jw_key(w, k);
	jw_bool(w, v);
}

#endif
