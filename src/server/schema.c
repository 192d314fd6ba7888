/* server/schema: the subset of JSON Schema the tools declare, checked.
 *
 * tools/list publishes a JSON Schema per tool; tools/call checks the
 * arguments against that same schema, so what a client is told and what
 * the server accepts cannot drift.  Supported: type (a string), enum,
 * properties, required, additionalProperties (false), items, minimum,
 * maximum, minLength, maxLength, maxItems.  Anything else in a schema is
 * documentation only (description, default). */
#include "server/schema.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static bool
type_ok(const char *type, const json_t *v)
{
	if (!strcmp(type, "string"))
		return json_is_string(v);
	if (!strcmp(type, "integer"))
		return json_is_integer(v);
	if (!strcmp(type, "number"))
		return json_is_number(v);
	if (!strcmp(type, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(type, "object"))
		return json_is_object(v);
	if (!strcmp(type, "array"))
		return json_is_array(v);
	if (!strcmp(type, "null"))
		return json_is_null(v);
	return true;
}

static const char *
a_or_an(const char *type)
{
	return strchr("aeiou", type[0]) ? "an" : "a";
}

static int
fail(char *why, size_t cap, const char *where, const char *what)
{
	snprintf(why, cap, "%s%s%s", where[0] ? where : "", where[0] ? ": " : "", what);
	return -1;
}

static int check(const json_t *schema, const json_t *v, const char *where, char *why, size_t cap,
		 int depth);

static int
check_object(const json_t *schema, const json_t *v, const char *where, char *why, size_t cap,
	     int depth)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *req = json_object_get(schema, "required");
	size_t i;
	const json_t *r;
	json_array_foreach(req, i, r)
	{
		const char *k = json_string_value(r);
		if (k && !json_object_get(v, k)) {
			char what[160];
			snprintf(what, sizeof(what), "'%s' is required", k);
			return fail(why, cap, where, what);
		}
	}
	const char *k;
	const json_t *m;
	json_object_foreach((json_t *)(uintptr_t)v, k, m)
	{
		const json_t *ps = props ? json_object_get(props, k) : NULL;
		char sub[200];
		snprintf(sub, sizeof(sub), "%s%s%.100s", where, where[0] ? "." : "", k);
		if (!ps) {
			if (json_is_false(json_object_get(schema, "additionalProperties"))) {
				char what[200];
				snprintf(what, sizeof(what), "unknown member '%.100s'", k);
				return fail(why, cap, where, what);
			}
			continue;
		}
		if (check(ps, m, sub, why, cap, depth + 1) < 0)
			return -1;
	}
	return 0;
}

static int
check(const json_t *schema, const json_t *v, const char *where, char *why, size_t cap, int depth)
{
	char what[160];
	if (depth > 16)
		return fail(why, cap, where, "nested too deeply");
	const char *type = json_string_value(json_object_get(schema, "type"));
	if (type && !type_ok(type, v)) {
		snprintf(what, sizeof(what), "expected %s %s", a_or_an(type), type);
		return fail(why, cap, where, what);
	}
	const json_t *en = json_object_get(schema, "enum");
	if (en) {
		size_t i;
		const json_t *e;
		bool found = false;
		json_array_foreach(en, i, e) found = found || json_equal(e, v);
		if (!found)
			return fail(why, cap, where, "not one of the allowed values");
	}
	if (json_is_number(v)) {
		const json_t *mn = json_object_get(schema, "minimum");
		const json_t *mx = json_object_get(schema, "maximum");
		double d = json_number_value(v);
		if (mn && d < json_number_value(mn)) {
			snprintf(what, sizeof(what), "must be at least %g", json_number_value(mn));
			return fail(why, cap, where, what);
		}
		if (mx && d > json_number_value(mx)) {
			snprintf(what, sizeof(what), "must be at most %g", json_number_value(mx));
			return fail(why, cap, where, what);
		}
	}
	if (json_is_string(v)) {
		size_t n = json_string_length(v);
		const json_t *mn = json_object_get(schema, "minLength");
		const json_t *mx = json_object_get(schema, "maxLength");
		if (mn && n < (size_t)json_integer_value(mn))
			return fail(why, cap, where, n ? "too short" : "must not be empty");
		if (mx && n > (size_t)json_integer_value(mx)) {
			snprintf(what, sizeof(what), "longer than %lld bytes",
				 (long long)json_integer_value(mx));
			return fail(why, cap, where, what);
		}
		if (memchr(json_string_value(v), '\0', n))
			return fail(why, cap, where, "contains a NUL character");
	}
	if (json_is_object(v))
		return check_object(schema, v, where, why, cap, depth);
	if (json_is_array(v)) {
		const json_t *items = json_object_get(schema, "items");
		const json_t *mx = json_object_get(schema, "maxItems");
		if (mx && json_array_size(v) > (size_t)json_integer_value(mx)) {
			snprintf(what, sizeof(what), "more than %lld items",
				 (long long)json_integer_value(mx));
			return fail(why, cap, where, what);
		}
		size_t i;
		const json_t *e;
		json_array_foreach(v, i, e)
		{
			char sub[200];
			snprintf(sub, sizeof(sub), "%s[%zu]", where, i);
			if (items && check(items, e, sub, why, cap, depth + 1) < 0)
				return -1;
		}
	}
	return 0;
}

int
schema_check(const json_t *schema, const json_t *value, char *why, size_t cap)
{
	return check(schema, value, "", why, cap, 0);
}
