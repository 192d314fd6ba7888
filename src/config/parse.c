/* parse.c - the validation walk's context and typed getters (parse.h).
 *
 * Every getter refuses what does not fit exactly: a wrong type, a value out
 * of range, a number that would have to be rounded.  A policy is read by a
 * program that enforces it, so "close enough" is a silent change of meaning
 * (a memory size above the signed 64-bit range was accepted and
 * printed negative by `policy show`).
 */
#include "config/parse.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void
vctx_push_key(struct vctx *v, const char *k)
{
	if (v->depth < CONFIG_MAX_DEPTH)
		v->path[v->depth] = (struct config_path_elem){.key = k};
	v->depth++;
}

void
vctx_push_idx(struct vctx *v, size_t i)
{
	if (v->depth < CONFIG_MAX_DEPTH)
		v->path[v->depth] = (struct config_path_elem){.key = NULL, .index = i};
	v->depth++;
}

void
vctx_pop(struct vctx *v)
{
	v->depth--;
}

/* "programs.git.subcommands[2]"; a key that is not a plain word (a
 * workspace program's path) is bracketed: "workspace.programs[.venv/x]". */
static void
path_str(const struct vctx *v, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t d = 0; d < v->depth && d < CONFIG_MAX_DEPTH && o < cap; d++) {
		const char *k = v->path[d].key;
		int n;
		if (k && (strchr(k, '.') || strchr(k, '/')))
			n = snprintf(out + o, cap - o, "[%s]", k);
		else if (k)
			n = snprintf(out + o, cap - o, "%s%s", d ? "." : "", k);
		else
			n = snprintf(out + o, cap - o, "[%zu]", v->path[d].index);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

int
vctx_fail(struct vctx *v, bool key, const char *fmt, ...)
{
	char what[200], where[120];
	int line = 0, col = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	path_str(v, where, sizeof(where));
	size_t depth = v->depth < CONFIG_MAX_DEPTH ? v->depth : CONFIG_MAX_DEPTH;
	if (config_json_locate(v->text, v->len, v->path, depth, key, &line, &col) < 0)
		line = 1, col = 1;
	if (where[0])
		return wd_err_set(v->err, WD_E_INVAL, "%s:%d:%d: %s: %s", v->name, line, col, where,
				  what);
	return wd_err_set(v->err, WD_E_INVAL, "%s:%d:%d: %s", v->name, line, col, what);
}

const char *
config_type_name(json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "a value";
}

/* Levenshtein distance for "did you mean" on unknown keys (short words). */
static size_t
distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 31 || lb > 31)
		return 99;
	size_t d[32][32];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			d[i][j] = c;
		}
	return d[la][lb];
}

int
vctx_unknown_key(struct vctx *v, const char *k, const char *const *known)
{
	const char *best = NULL;
	size_t bd = 3;
	char list[300];
	size_t o = 0;
	list[0] = '\0';
	for (size_t i = 0; known[i]; i++) {
		size_t dd = distance(k, known[i]);
		if (dd < bd)
			bd = dd, best = known[i];
		int n = snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", known[i]);
		if (n > 0 && (size_t)n < sizeof(list) - o)
			o += (size_t)n;
	}
	if (best)
		return vctx_fail(v, true, "unknown key '%s' (did you mean '%s'?)", k, best);
	return vctx_fail(v, true, "unknown key '%s' (known: %s)", k, list);
}

int
config_want_type(struct vctx *v, json_t *j, json_type t, const char *what)
{
	if (json_typeof(j) == t)
		return 0;
	if (t == JSON_TRUE && json_is_boolean(j))
		return 0;
	return vctx_fail(v, false, "expected %s, got %s", what, config_type_name(j));
}

int
config_get_string(struct vctx *v, json_t *j, char **out)
{
	int rc = config_want_type(v, j, JSON_STRING, "a string");
	if (rc < 0)
		return rc;
	if (strlen(json_string_value(j)) != json_string_length(j))
		return vctx_fail(v, false, "string contains a NUL character");
	free(*out);
	*out = wd_xstrdup(json_string_value(j));
	return 0;
}

int
config_get_bool(struct vctx *v, json_t *j, bool *out)
{
	if (!json_is_boolean(j))
		return vctx_fail(v, false, "expected a boolean, got %s", config_type_name(j));
	*out = json_is_true(j);
	return 0;
}

int
config_get_int(struct vctx *v, json_t *j, int64_t lo, int64_t hi, int64_t *out)
{
	if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi)
		return vctx_fail(v, false, "expected an integer from %" PRId64 " to %" PRId64, lo,
				 hi);
	*out = json_integer_value(j);
	return 0;
}

/* "64 MiB", "1 GiB", "4096 bytes" for range messages. */
static void
size_words(uint64_t x, char *out, size_t cap)
{
	static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	size_t u = 0;
	while (u + 1 < WD_ARRAY_SIZE(unit) && x >= 1024 && x % 1024 == 0)
		x /= 1024, u++;
	snprintf(out, cap, "%" PRIu64 " %s", x, unit[u]);
}

int
config_get_size(struct vctx *v, json_t *j, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t x;
	char a[40], b[40];
	if (json_is_integer(j)) {
		if (json_integer_value(j) <= 0)
			return vctx_fail(v, false, "must be positive");
		x = (uint64_t)json_integer_value(j);
	} else if (json_is_string(j)) {
		int rc = wd_parse_size(json_string_value(j), &x);
		if (strlen(json_string_value(j)) != json_string_length(j))
			rc = -EINVAL;
		if (rc == -ERANGE)
			x = UINT64_MAX; /* reported as out of range below */
		else if (rc < 0 || x == 0)
			return vctx_fail(v, false, "'%.40s' is not a size (e.g. 512KiB, 128M, 1G)",
					 json_string_value(j));
	} else {
		return vctx_fail(v, false,
				 "expected a size (bytes or a string like \"128MiB\"), got %s",
				 config_type_name(j));
	}
	if (x < lo || x > hi) {
		size_words(lo, a, sizeof(a));
		size_words(hi, b, sizeof(b));
		return vctx_fail(v, false, "must be from %s to %s", a, b);
	}
	*out = x;
	return 0;
}

int
config_get_fixed(struct vctx *v, json_t *j, double lo, double hi, double scale, uint64_t *out)
{
	if (!json_is_number(j))
		return vctx_fail(v, false, "expected a number, got %s", config_type_name(j));
	double x = json_number_value(j);
	if (isnan(x) || x < lo || x > hi)
		return vctx_fail(v, false, "must be from %g to %g", lo, hi);
	double units = x * scale;
	/* Rounded to the nearest unit by hand (|units| is far below 2^63:
	 * hi * scale is ~1e9 at most): nearbyint() was warden's only use of
	 * libm, whose loading cost every launch ~50 us of CPU (bench/
	 * spawn_bench on `warden --version`, 300 alternating runs).  Halves
	 * round away from zero, not to even; a half is refused just below
	 * either way. */
	double r = units < 0 ? -(double)(uint64_t)(0.5 - units) : (double)(uint64_t)(units + 0.5);
	/* The binary double nearest to 0.1 is not 0.1: allow that much. */
	if (fabs(units - r) > 1e-9 * (r > 1 ? r : 1))
		return vctx_fail(v, false, "%g is finer than %g (would be rounded)", x, 1 / scale);
	*out = (uint64_t)r;
	return 0;
}

void
config_strv_free(struct config_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

int
config_get_strv(struct vctx *v, json_t *j, struct config_strv *out, bool nonempty,
		const char *(*check)(const char *))
{
	int rc = config_want_type(v, j, JSON_ARRAY, "an array of strings");
	if (rc < 0)
		return rc;
	if (nonempty && json_array_size(j) == 0)
		return vctx_fail(v, false, "must not be empty");
	config_strv_free(out);
	out->v = wd_xcalloc(json_array_size(j) + 1, sizeof(char *));
	size_t i;
	json_t *e;
	json_array_foreach(j, i, e)
	{
		vctx_push_idx(v, i);
		if (!json_is_string(e))
			return vctx_fail(v, false, "expected a string, got %s",
					 config_type_name(e));
		const char *s = json_string_value(e);
		if (strlen(s) != json_string_length(e) || !*s)
			return vctx_fail(v, false, "must be a non-empty string without NUL");
		const char *why = check ? check(s) : NULL;
		if (why)
			return vctx_fail(v, false, "'%.80s' %s", s, why);
		out->v[out->n++] = wd_xstrdup(s);
		vctx_pop(v);
	}
	return 0;
}

const char *
config_check_option(const char *s)
{
	if (s[0] != '-' || !s[1] || (s[1] == '-' && !s[2]))
		return "is not an option (options start with '-')";
	if (strchr(s, '='))
		return "must name the option without '=value'";
	return config_check_word(s);
}

const char *
config_check_word(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return "must be a single word (no spaces or control characters)";
	return NULL;
}

const char *
config_check_subcommand(const char *s)
{
	if (s[0] == '-')
		return "is an option, not a subcommand";
	return config_check_word(s);
}

/* An environment pattern: a variable name, or a prefix followed by '*'. */
const char *
config_check_env_pattern(const char *s)
{
	for (const char *p = s; *p; p++) {
		bool ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_' ||
			  (p != s && *p >= '0' && *p <= '9');
		if (*p == '*' && p != s && !p[1])
			ok = true;
		if (!ok)
			return "is not a variable name or NAME_PREFIX* pattern";
	}
	return NULL;
}

bool
config_env_match(const char *pat, const char *name, size_t len)
{
	size_t pl = strlen(pat);
	if (pl && pat[pl - 1] == '*')
		return len >= pl - 1 && !strncmp(pat, name, pl - 1);
	return pl == len && !strncmp(pat, name, len);
}
