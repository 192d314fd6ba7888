/* config.c - load and validate the policy document.
 *
 * The document is parsed by jansson with JSON_REJECT_DUPLICATES (a second
 * "git" entry silently replacing the first would be a policy nobody
 * reviewed).  Then one validation walk converts it into struct
 * config_policy, refusing unknown keys (a misspelt "deny_optons" must not
 * silently allow everything), wrong types and bad values.  Each refusal
 * names the file, the line and column of the offending key or value (via
 * locate.c) and the member's path: "p.json:7:9: programs.git.subcomands:
 * unknown key".
 */
#include "config/config.h"

#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 16

struct vctx {
	const char *name;
	const char *text;
	size_t len;
	struct config_path_elem path[MAX_DEPTH];
	size_t depth;
	struct wd_err *err;
};

static void
push_key(struct vctx *v, const char *k)
{
	if (v->depth < MAX_DEPTH)
		v->path[v->depth] = (struct config_path_elem){.key = k};
	v->depth++;
}

static void
push_idx(struct vctx *v, size_t i)
{
	if (v->depth < MAX_DEPTH)
		v->path[v->depth] = (struct config_path_elem){.key = NULL, .index = i};
	v->depth++;
}

static void
pop(struct vctx *v)
{
	v->depth--;
}

static void
path_str(const struct vctx *v, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t d = 0; d < v->depth && d < MAX_DEPTH && o < cap; d++) {
		int n;
		if (v->path[d].key)
			n = snprintf(out + o, cap - o, "%s%s", d ? "." : "", v->path[d].key);
		else
			n = snprintf(out + o, cap - o, "[%zu]", v->path[d].index);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

/* Report an error at the current member (its key if key, else its value). */
WD_PRINTF(3, 4)
static int
fail(struct vctx *v, bool key, const char *fmt, ...)
{
	char what[200], where[120];
	int line = 0, col = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	path_str(v, where, sizeof(where));
	size_t depth = v->depth < MAX_DEPTH ? v->depth : MAX_DEPTH;
	if (config_json_locate(v->text, v->len, v->path, depth, key, &line, &col) < 0)
		line = 1, col = 1;
	if (where[0])
		return wd_err_set(v->err, WD_E_INVAL, "%s:%d:%d: %s: %s", v->name, line, col, where,
				  what);
	return wd_err_set(v->err, WD_E_INVAL, "%s:%d:%d: %s", v->name, line, col, what);
}

static const char *
type_name(json_t *j)
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

static int
unknown_key(struct vctx *v, const char *k, const char *const *known)
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
		return fail(v, true, "unknown key '%s' (did you mean '%s'?)", k, best);
	return fail(v, true, "unknown key '%s' (known: %s)", k, list);
}

static int
want_type(struct vctx *v, json_t *j, json_type t, const char *what)
{
	if (json_typeof(j) == t)
		return 0;
	if (t == JSON_TRUE && json_is_boolean(j))
		return 0;
	return fail(v, false, "expected %s, got %s", what, type_name(j));
}

static int
get_string(struct vctx *v, json_t *j, char **out)
{
	int rc = want_type(v, j, JSON_STRING, "a string");
	if (rc < 0)
		return rc;
	if (strlen(json_string_value(j)) != json_string_length(j))
		return fail(v, false, "string contains a NUL character");
	free(*out);
	*out = wd_xstrdup(json_string_value(j));
	return 0;
}

static int
get_bool(struct vctx *v, json_t *j, bool *out)
{
	if (!json_is_boolean(j))
		return fail(v, false, "expected a boolean, got %s", type_name(j));
	*out = json_is_true(j);
	return 0;
}

static void
strv_free(struct config_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* An array of strings; check(word) returns NULL if acceptable or a reason. */
static int
get_strv(struct vctx *v, json_t *j, struct config_strv *out, bool nonempty,
	 const char *(*check)(const char *))
{
	int rc = want_type(v, j, JSON_ARRAY, "an array of strings");
	if (rc < 0)
		return rc;
	if (nonempty && json_array_size(j) == 0)
		return fail(v, false, "must not be empty");
	strv_free(out);
	out->v = wd_xcalloc(json_array_size(j) + 1, sizeof(char *));
	size_t i;
	json_t *e;
	json_array_foreach(j, i, e)
	{
		push_idx(v, i);
		if (!json_is_string(e))
			return fail(v, false, "expected a string, got %s", type_name(e));
		const char *s = json_string_value(e);
		if (strlen(s) != json_string_length(e) || !*s)
			return fail(v, false, "must be a non-empty string without NUL");
		const char *why = check ? check(s) : NULL;
		if (why)
			return fail(v, false, "'%s' %s", s, why);
		out->v[out->n++] = wd_xstrdup(s);
		pop(v);
	}
	return 0;
}

static const char *
check_option(const char *s)
{
	if (s[0] != '-' || !s[1])
		return "is not an option (options start with '-')";
	if (strchr(s, '='))
		return "must name the option without '=value'";
	return NULL;
}

static const char *
check_word(const char *s)
{
	for (const char *p = s; *p; p++)
		if (*p == ' ' || *p == '\t' || *p == '\n')
			return "must be a single word";
	return NULL;
}

static const char *
check_subcommand(const char *s)
{
	if (s[0] == '-')
		return "is an option, not a subcommand";
	return check_word(s);
}

/* A size: an integer number of bytes or a string like "512KiB". */
static int
get_size(struct vctx *v, json_t *j, uint64_t *out)
{
	if (json_is_integer(j)) {
		if (json_integer_value(j) <= 0)
			return fail(v, false, "must be positive");
		*out = (uint64_t)json_integer_value(j);
		return 0;
	}
	if (json_is_string(j)) {
		uint64_t x;
		if (wd_parse_size(json_string_value(j), &x) < 0 || x == 0)
			return fail(v, false, "'%s' is not a size (e.g. 512KiB, 128M, 1G)",
				    json_string_value(j));
		/* the effective policy prints sizes as JSON integers, which are
		 * signed: more would print negative and not reload (issue 8) */
		if (x > INT64_MAX)
			return fail(v, false, "'%s' is too large", json_string_value(j));
		*out = x;
		return 0;
	}
	return fail(v, false, "expected a size (bytes or a string like \"128MiB\"), got %s",
		    type_name(j));
}

static int
get_number(struct vctx *v, json_t *j, double lo, double hi, double *out)
{
	if (!json_is_number(j))
		return fail(v, false, "expected a number, got %s", type_name(j));
	double x = json_number_value(j);
	if (!(x > lo) || x > hi || isnan(x))
		return fail(v, false, "must be greater than %g and at most %g", lo, hi);
	*out = x;
	return 0;
}

/* ---- built-in profiles (DESIGN.md §8, issue 3 "Tool routing") ---- */

/* clang-format off */
static const struct {
	const char *name;
	uint64_t timeout_ms, memory_bytes, cpu_millionths, output_bytes;
} builtin_profiles[] = {
	{"browser_automation", 60000, 1ULL << 30,   1000000, 5ULL << 20},
	{"code_execution",     30000, 256ULL << 20, 500000,  1ULL << 20},
	{"shell_commands",     15000, 128ULL << 20, 250000,  512ULL << 10},
};
/* clang-format on */

static int
load_profile(struct vctx *v, const char *name, json_t *j, struct config_profile *pr)
{
	static const char *const known[] = {"timeout", "memory", "cpu", "output", "pids", NULL};
	/* A custom profile starts from shell_commands' values. */
	*pr = (struct config_profile){
	    .name = wd_xstrdup(name),
	    .timeout_ms = builtin_profiles[2].timeout_ms,
	    .memory_bytes = builtin_profiles[2].memory_bytes,
	    .cpu_millionths = builtin_profiles[2].cpu_millionths,
	    .output_bytes = builtin_profiles[2].output_bytes,
	};
	int rc = want_type(v, j, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		push_key(v, k);
		double x;
		if (!strcmp(k, "timeout")) {
			if ((rc = get_number(v, val, 0, 86400, &x)) < 0)
				return rc;
			pr->timeout_ms = (uint64_t)llround(x * 1000);
		} else if (!strcmp(k, "memory")) {
			if ((rc = get_size(v, val, &pr->memory_bytes)) < 0)
				return rc;
		} else if (!strcmp(k, "output")) {
			if ((rc = get_size(v, val, &pr->output_bytes)) < 0)
				return rc;
		} else if (!strcmp(k, "cpu")) {
			if ((rc = get_number(v, val, 0, 1024, &x)) < 0)
				return rc;
			pr->cpu_millionths = (uint64_t)llround(x * 1e6);
		} else if (!strcmp(k, "pids")) {
			if (!json_is_integer(val) || json_integer_value(val) <= 0 ||
			    json_integer_value(val) > 1000000)
				return fail(v, false, "expected an integer from 1 to 1000000");
			pr->pids = (uint64_t)json_integer_value(val);
		} else {
			return unknown_key(v, k, known);
		}
		pop(v);
	}
	return 0;
}

static int
load_program(struct vctx *v, const char *name, json_t *j, struct config_program *pg)
{
	static const char *const known[] = {"interpreter",  "subcommands",   "allow_options",
					    "deny_options", "value_options", "paths",
					    "approve",	    "advice",	     NULL};
	int rc;
	pg->name = wd_xstrdup(name);
	if (!*name || strchr(name, '/') || check_word(name) || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return fail(v, true, "'%s' is not a program basename (no slash, no spaces)", name);
	if ((rc = want_type(v, j, JSON_OBJECT, "an object")) < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		push_key(v, k);
		if (!strcmp(k, "interpreter")) {
			rc = get_bool(v, val, &pg->interpreter);
		} else if (!strcmp(k, "subcommands")) {
			pg->has_subcommands = true;
			rc = get_strv(v, val, &pg->subcommands, true, check_subcommand);
		} else if (!strcmp(k, "allow_options")) {
			pg->options_listed = true;
			rc = get_strv(v, val, &pg->allow_options, false, check_option);
		} else if (!strcmp(k, "deny_options")) {
			rc = get_strv(v, val, &pg->deny_options, false, check_option);
		} else if (!strcmp(k, "value_options")) {
			rc = get_strv(v, val, &pg->value_options, false, check_option);
		} else if (!strcmp(k, "paths")) {
			rc = want_type(v, val, JSON_STRING, "a string");
			if (rc == 0) {
				const char *m = json_string_value(val);
				if (!strcmp(m, "operands"))
					pg->paths = CONFIG_PATHS_OPERANDS;
				else if (!strcmp(m, "none"))
					pg->paths = CONFIG_PATHS_NONE;
				else if (!strcmp(m, "skip_first"))
					pg->paths = CONFIG_PATHS_SKIP_FIRST;
				else
					rc = fail(v, false,
						  "'%s' is not a paths mode (operands, none, "
						  "skip_first)",
						  m);
			}
		} else if (!strcmp(k, "advice")) {
			rc = get_string(v, val, &pg->advice);
		} else if (!strcmp(k, "approve")) {
			rc = want_type(v, val, JSON_ARRAY, "an array of approval rules");
			if (rc < 0)
				return rc;
			pg->approve = wd_xcalloc(json_array_size(val) + 1, sizeof(*pg->approve));
			size_t i;
			json_t *e;
			json_array_foreach(val, i, e)
			{
				push_idx(v, i);
				struct config_approve *a = &pg->approve[pg->napprove++];
				if (json_is_array(e)) {
					/* shorthand: ["push"] */
					rc = get_strv(v, e, &a->match, true, check_word);
				} else if (json_is_object(e)) {
					static const char *const ak[] = {"match", "reason", NULL};
					const char *k2;
					json_t *v2;
					bool have_match = false;
					json_object_foreach(e, k2, v2)
					{
						push_key(v, k2);
						if (!strcmp(k2, "match")) {
							have_match = true;
							rc = get_strv(v, v2, &a->match, true,
								      check_word);
						} else if (!strcmp(k2, "reason")) {
							rc = get_string(v, v2, &a->reason);
						} else {
							rc = unknown_key(v, k2, ak);
						}
						if (rc < 0)
							return rc;
						pop(v);
					}
					if (!have_match)
						rc = fail(v, false,
							  "an approval rule needs \"match\"");
				} else {
					rc = fail(v, false,
						  "expected an object {\"match\": [...]} or an "
						  "array of words, got %s",
						  type_name(e));
				}
				if (rc < 0)
					return rc;
				pop(v);
			}
		} else {
			rc = unknown_key(v, k, known);
		}
		if (rc < 0)
			return rc;
		pop(v);
	}
	return 0;
}

static int
load_tool(struct vctx *v, const char *name, json_t *j, struct config_tool *t)
{
	static const char *const known[] = {"class", "profile", "description", NULL};
	int rc;
	t->name = wd_xstrdup(name);
	if (!*name || check_word(name))
		return fail(v, true, "'%s' is not a tool name", name);
	if ((rc = want_type(v, j, JSON_OBJECT, "an object")) < 0)
		return rc;
	bool have_class = false;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		push_key(v, k);
		if (!strcmp(k, "class")) {
			have_class = true;
			rc = want_type(v, val, JSON_STRING, "a string");
			if (rc == 0) {
				const char *c = json_string_value(val);
				if (!strcmp(c, "blocked"))
					t->klass = CONFIG_TOOL_BLOCKED;
				else if (!strcmp(c, "direct"))
					t->klass = CONFIG_TOOL_DIRECT;
				else if (!strcmp(c, "sandbox"))
					t->klass = CONFIG_TOOL_SANDBOX;
				else
					rc = fail(v, false,
						  "'%s' is not a tool class (blocked, direct, "
						  "sandbox)",
						  c);
			}
		} else if (!strcmp(k, "profile")) {
			rc = get_string(v, val, &t->profile);
		} else if (!strcmp(k, "description")) {
			rc = get_string(v, val, &t->description);
		} else {
			rc = unknown_key(v, k, known);
		}
		if (rc < 0)
			return rc;
		pop(v);
	}
	if (!have_class)
		return fail(v, true, "tool '%s' needs a \"class\" (blocked, direct, sandbox)",
			    name);
	return 0;
}

static int
cmp_program(const void *a, const void *b)
{
	return strcmp(((const struct config_program *)a)->name,
		      ((const struct config_program *)b)->name);
}
static int
cmp_tool(const void *a, const void *b)
{
	return strcmp(((const struct config_tool *)a)->name, ((const struct config_tool *)b)->name);
}
static int
cmp_profile(const void *a, const void *b)
{
	return strcmp(((const struct config_profile *)a)->name,
		      ((const struct config_profile *)b)->name);
}

static int
load_root(struct vctx *v, json_t *root, struct config_policy *p)
{
	static const char *const known[] = {"version", "workspace", "programs",
					    "tools",   "profiles",  "approvals",
					    "audit",   "network",   NULL};
	int rc;
	if (!json_is_object(root))
		return fail(v, false, "the policy must be a JSON object, got %s", type_name(root));
	json_t *ver = json_object_get(root, "version");
	if (!ver)
		return fail(v, false, "missing \"version\": 1");

	/* Profiles first: tools refer to them. */
	p->profiles = wd_xcalloc(WD_ARRAY_SIZE(builtin_profiles) + 1, sizeof(*p->profiles));
	for (size_t i = 0; i < WD_ARRAY_SIZE(builtin_profiles); i++) {
		p->profiles[i] = (struct config_profile){
		    .name = wd_xstrdup(builtin_profiles[i].name),
		    .builtin = true,
		    .timeout_ms = builtin_profiles[i].timeout_ms,
		    .memory_bytes = builtin_profiles[i].memory_bytes,
		    .cpu_millionths = builtin_profiles[i].cpu_millionths,
		    .output_bytes = builtin_profiles[i].output_bytes,
		};
	}
	p->nprofiles = WD_ARRAY_SIZE(builtin_profiles);
	json_t *profiles = json_object_get(root, "profiles");
	if (profiles) {
		push_key(v, "profiles");
		if ((rc = want_type(v, profiles, JSON_OBJECT, "an object")) < 0)
			return rc;
		p->profiles =
		    wd_xrealloc(p->profiles, (p->nprofiles + json_object_size(profiles) + 1) *
						 sizeof(*p->profiles));
		const char *k;
		json_t *val;
		json_object_foreach(profiles, k, val)
		{
			push_key(v, k);
			if (config_profile_find(p, k))
				return fail(v, true,
					    "profile '%s' is built in; choose another name", k);
			struct config_profile *pr = &p->profiles[p->nprofiles++];
			memset(pr, 0, sizeof(*pr));
			if ((rc = load_profile(v, k, val, pr)) < 0)
				return rc;
			qsort(p->profiles, p->nprofiles, sizeof(*p->profiles), cmp_profile);
			pop(v);
		}
		pop(v);
	}

	const char *k;
	json_t *val;
	json_object_foreach(root, k, val)
	{
		push_key(v, k);
		if (!strcmp(k, "version")) {
			if (!json_is_integer(val))
				return fail(v, false, "expected an integer, got %s",
					    type_name(val));
			if (json_integer_value(val) != CONFIG_VERSION)
				return fail(v, false,
					    "unsupported version %lld (this warden reads 1)",
					    (long long)json_integer_value(val));
			p->version = CONFIG_VERSION;
		} else if (!strcmp(k, "profiles")) {
			/* done above */
		} else if (!strcmp(k, "workspace")) {
			static const char *const wk[] = {"mount", NULL};
			if ((rc = want_type(v, val, JSON_OBJECT, "an object")) < 0)
				return rc;
			const char *k2;
			json_t *v2;
			json_object_foreach(val, k2, v2)
			{
				push_key(v, k2);
				if (strcmp(k2, "mount"))
					return unknown_key(v, k2, wk);
				if ((rc = get_string(v, v2, &p->mount)) < 0)
					return rc;
				if (p->mount[0] != '/' || strstr(p->mount, "..") || !p->mount[1])
					return fail(
					    v, false,
					    "must be an absolute path below / without '..'");
				size_t ml = strlen(p->mount);
				while (ml > 1 && p->mount[ml - 1] == '/')
					p->mount[--ml] = '\0';
				/* "//" made every absolute argument a workspace path
				 * (`cat //etc/passwd` passed), and "/" does not reload
				 * (found by fuzz_policy_load; issue 8 item 2). */
				if (ml == 1 || strstr(p->mount, "//"))
					return fail(v, false,
						    "must be a normalized absolute path below / "
						    "(no '//')");
				pop(v);
			}
		} else if (!strcmp(k, "programs")) {
			if ((rc = want_type(v, val, JSON_OBJECT, "an object")) < 0)
				return rc;
			p->programs = wd_xcalloc(json_object_size(val) + 1, sizeof(*p->programs));
			const char *k2;
			json_t *v2;
			json_object_foreach(val, k2, v2)
			{
				push_key(v, k2);
				rc = load_program(v, k2, v2, &p->programs[p->nprograms++]);
				if (rc < 0)
					return rc;
				pop(v);
			}
			qsort(p->programs, p->nprograms, sizeof(*p->programs), cmp_program);
		} else if (!strcmp(k, "tools")) {
			if ((rc = want_type(v, val, JSON_OBJECT, "an object")) < 0)
				return rc;
			p->tools = wd_xcalloc(json_object_size(val) + 1, sizeof(*p->tools));
			const char *k2;
			json_t *v2;
			json_object_foreach(val, k2, v2)
			{
				push_key(v, k2);
				struct config_tool *t = &p->tools[p->ntools++];
				if ((rc = load_tool(v, k2, v2, t)) < 0)
					return rc;
				if (t->profile && !config_profile_find(p, t->profile)) {
					push_key(v, "profile");
					return fail(v, false, "unknown profile '%s'", t->profile);
				}
				if (t->klass == CONFIG_TOOL_SANDBOX && !t->profile)
					t->profile = wd_xstrdup("shell_commands");
				pop(v);
			}
			qsort(p->tools, p->ntools, sizeof(*p->tools), cmp_tool);
		} else if (!strcmp(k, "approvals")) {
			static const char *const ak[] = {"ttl", NULL};
			if ((rc = want_type(v, val, JSON_OBJECT, "an object")) < 0)
				return rc;
			const char *k2;
			json_t *v2;
			json_object_foreach(val, k2, v2)
			{
				push_key(v, k2);
				if (strcmp(k2, "ttl"))
					return unknown_key(v, k2, ak);
				if (!json_is_integer(v2) || json_integer_value(v2) <= 0 ||
				    json_integer_value(v2) > 7 * 86400)
					return fail(v, false,
						    "expected whole seconds from 1 to 604800");
				p->approval_ttl_s = (uint64_t)json_integer_value(v2);
				pop(v);
			}
		} else if (!strcmp(k, "audit")) {
			static const char *const ak[] = {"path", NULL};
			if ((rc = want_type(v, val, JSON_OBJECT, "an object")) < 0)
				return rc;
			const char *k2;
			json_t *v2;
			json_object_foreach(val, k2, v2)
			{
				push_key(v, k2);
				if (strcmp(k2, "path"))
					return unknown_key(v, k2, ak);
				if ((rc = get_string(v, v2, &p->audit_path)) < 0)
					return rc;
				if (!p->audit_path[0])
					return fail(v, false, "must not be empty");
				pop(v);
			}
		} else if (!strcmp(k, "network")) {
			static const char *const nk[] = {"allow", NULL};
			if ((rc = want_type(v, val, JSON_OBJECT, "an object")) < 0)
				return rc;
			const char *k2;
			json_t *v2;
			json_object_foreach(val, k2, v2)
			{
				push_key(v, k2);
				if (strcmp(k2, "allow"))
					return unknown_key(v, k2, nk);
				if ((rc = get_strv(v, v2, &p->network_allow, false, check_word)) <
				    0)
					return rc;
				pop(v);
			}
		} else {
			return unknown_key(v, k, known);
		}
		pop(v);
	}
	if (!p->mount)
		p->mount = wd_xstrdup("/workspace");
	if (!p->approval_ttl_s)
		p->approval_ttl_s = 600;

	/* "cat, diff, find, ..." for the advice of a refused program. */
	size_t need = 1;
	for (size_t i = 0; i < p->nprograms; i++)
		need += strlen(p->programs[i].name) + 2;
	p->allowed_names = wd_xmalloc(need);
	p->allowed_names[0] = '\0';
	for (size_t i = 0; i < p->nprograms; i++) {
		if (i)
			strcat(p->allowed_names, ", ");
		strcat(p->allowed_names, p->programs[i].name);
	}
	return 0;
}

void
config_sha256_hex(const void *buf, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	static const char hex[] = "0123456789abcdef";
	if (EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		abort(); /* libcrypto without SHA-256 is a broken invariant */
	for (size_t i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

int
config_load_buffer(const char *buf, size_t len, const char *name, struct config_policy **out,
		   struct wd_err *err)
{
	json_error_t je;
	if (len > CONFIG_MAX_FILE)
		return wd_err_set(err, WD_E_INVAL, "%s:1:1: policy larger than %u bytes", name,
				  CONFIG_MAX_FILE);
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return wd_err_set(err, WD_E_INVAL, "%s:%d:%d: %s", name, je.line < 1 ? 1 : je.line,
				  je.column < 1 ? 1 : je.column, je.text);
	struct vctx v = {.name = name, .text = buf, .len = len, .err = err};
	struct config_policy *p = wd_xcalloc(1, sizeof(*p));
	p->source = wd_xstrdup(name);
	int rc = load_root(&v, root, p);
	json_decref(root);
	if (rc < 0) {
		config_policy_free(p);
		return rc;
	}
	json_t *eff = config_policy_to_json(p);
	char *canon = json_dumps(eff, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(eff);
	if (!canon)
		abort();
	config_sha256_hex(canon, strlen(canon), p->digest);
	free(canon);
	*out = p;
	return 0;
}

int
config_load_file(const char *path, struct config_policy **out, struct wd_err *err)
{
	wd_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return wd_err_sys(err, errno, "policy %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return wd_err_sys(err, errno, "policy %s", path);
	if (!S_ISREG(st.st_mode))
		return wd_err_set(err, WD_E_INVAL, "%s: not a regular file", path);
	if ((uint64_t)st.st_size > CONFIG_MAX_FILE)
		return wd_err_set(err, WD_E_INVAL, "%s:1:1: policy larger than %u bytes", path,
				  CONFIG_MAX_FILE);
	wd_autofree char *buf = wd_xmalloc((size_t)st.st_size + 1);
	size_t off = 0;
	for (;;) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size + 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return wd_err_sys(err, errno, "read policy %s", path);
		if (n == 0)
			break;
		off += (size_t)n;
		if (off > (size_t)st.st_size)
			return wd_err_set(err, WD_E_INVAL, "%s: file grew while reading", path);
	}
	return config_load_buffer(buf, off, path, out, err);
}

int
config_load_default(struct config_policy **out, struct wd_err *err)
{
	return config_load_buffer(config_default_json, strlen(config_default_json), "<built-in>",
				  out, err);
}

void
config_policy_free(struct config_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nprograms; i++) {
		struct config_program *g = &p->programs[i];
		free(g->name);
		strv_free(&g->subcommands);
		strv_free(&g->allow_options);
		strv_free(&g->deny_options);
		strv_free(&g->value_options);
		for (size_t j = 0; j < g->napprove; j++) {
			strv_free(&g->approve[j].match);
			free(g->approve[j].reason);
		}
		free(g->approve);
		free(g->advice);
	}
	free(p->programs);
	for (size_t i = 0; i < p->ntools; i++) {
		free(p->tools[i].name);
		free(p->tools[i].profile);
		free(p->tools[i].description);
	}
	free(p->tools);
	for (size_t i = 0; i < p->nprofiles; i++)
		free(p->profiles[i].name);
	free(p->profiles);
	strv_free(&p->network_allow);
	free(p->source);
	free(p->mount);
	free(p->audit_path);
	free(p->allowed_names);
	free(p);
}

static json_t *
strv_json(const struct config_strv *s)
{
	json_t *a = json_array();
	for (size_t i = 0; i < s->n; i++)
		json_array_append_new(a, json_string(s->v[i]));
	return a;
}

const char *
config_tool_class_name(enum config_tool_class c)
{
	switch (c) {
	case CONFIG_TOOL_BLOCKED:
		return "blocked";
	case CONFIG_TOOL_DIRECT:
		return "direct";
	case CONFIG_TOOL_SANDBOX:
		return "sandbox";
	}
	return "blocked";
}

const char *
config_paths_name(enum config_paths m)
{
	switch (m) {
	case CONFIG_PATHS_OPERANDS:
		return "operands";
	case CONFIG_PATHS_NONE:
		return "none";
	case CONFIG_PATHS_SKIP_FIRST:
		return "skip_first";
	}
	return "operands";
}

json_t *
config_policy_to_json(const struct config_policy *p)
{
	json_t *root = json_object();
	json_object_set_new(root, "version", json_integer(p->version));
	json_object_set_new(root, "workspace", json_pack("{s:s}", "mount", p->mount));
	json_t *progs = json_object();
	for (size_t i = 0; i < p->nprograms; i++) {
		const struct config_program *g = &p->programs[i];
		json_t *o = json_object();
		if (g->interpreter)
			json_object_set_new(o, "interpreter", json_true());
		if (g->has_subcommands)
			json_object_set_new(o, "subcommands", strv_json(&g->subcommands));
		if (g->options_listed)
			json_object_set_new(o, "allow_options", strv_json(&g->allow_options));
		if (g->deny_options.n)
			json_object_set_new(o, "deny_options", strv_json(&g->deny_options));
		if (g->value_options.n)
			json_object_set_new(o, "value_options", strv_json(&g->value_options));
		json_object_set_new(o, "paths", json_string(config_paths_name(g->paths)));
		if (g->napprove) {
			json_t *a = json_array();
			for (size_t j = 0; j < g->napprove; j++) {
				json_t *r =
				    json_pack("{s:o}", "match", strv_json(&g->approve[j].match));
				if (g->approve[j].reason)
					json_object_set_new(r, "reason",
							    json_string(g->approve[j].reason));
				json_array_append_new(a, r);
			}
			json_object_set_new(o, "approve", a);
		}
		if (g->advice)
			json_object_set_new(o, "advice", json_string(g->advice));
		json_object_set_new(progs, g->name, o);
	}
	json_object_set_new(root, "programs", progs);
	json_t *tools = json_object();
	for (size_t i = 0; i < p->ntools; i++) {
		const struct config_tool *t = &p->tools[i];
		json_t *o = json_pack("{s:s}", "class", config_tool_class_name(t->klass));
		if (t->profile)
			json_object_set_new(o, "profile", json_string(t->profile));
		if (t->description)
			json_object_set_new(o, "description", json_string(t->description));
		json_object_set_new(tools, t->name, o);
	}
	json_object_set_new(root, "tools", tools);
	json_t *profs = json_object();
	for (size_t i = 0; i < p->nprofiles; i++) {
		const struct config_profile *pr = &p->profiles[i];
		json_t *o = json_pack(
		    "{s:f,s:I,s:f,s:I}", "timeout", (double)pr->timeout_ms / 1000.0, "memory",
		    (json_int_t)pr->memory_bytes, "cpu", (double)pr->cpu_millionths / 1e6, "output",
		    (json_int_t)pr->output_bytes);
		if (pr->pids)
			json_object_set_new(o, "pids", json_integer((json_int_t)pr->pids));
		if (pr->builtin)
			json_object_set_new(o, "builtin", json_true());
		json_object_set_new(profs, pr->name, o);
	}
	json_object_set_new(root, "profiles", profs);
	json_object_set_new(root, "approvals",
			    json_pack("{s:I}", "ttl", (json_int_t)p->approval_ttl_s));
	if (p->audit_path)
		json_object_set_new(root, "audit", json_pack("{s:s}", "path", p->audit_path));
	if (p->network_allow.n)
		json_object_set_new(root, "network",
				    json_pack("{s:o}", "allow", strv_json(&p->network_allow)));
	return root;
}

const struct config_program *
config_program_find(const struct config_policy *p, const char *name, size_t len)
{
	size_t lo = 0, hi = p->nprograms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const char *n = p->programs[mid].name;
		int c = strncmp(n, name, len);
		if (c == 0 && n[len] != '\0')
			c = 1;
		if (c == 0)
			return &p->programs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct config_tool *
config_tool_find(const struct config_policy *p, const char *name)
{
	for (size_t i = 0; i < p->ntools; i++)
		if (!strcmp(p->tools[i].name, name))
			return &p->tools[i];
	return NULL;
}

const struct config_profile *
config_profile_find(const struct config_policy *p, const char *name)
{
	for (size_t i = 0; i < p->nprofiles; i++)
		if (!strcmp(p->profiles[i].name, name))
			return &p->profiles[i];
	return NULL;
}
