/* program.c - one program's rules: programs.NAME and workspace.programs.PATH.
 *
 * Both take the same keys.  They differ in what the key names: a basename,
 * found along the jail's PATH in the read-only system directories; or a
 * file of the workspace, by its path relative to the workspace, which the
 * model can write and which therefore runs only where a policy names it
 * (docs/policy.md "Programs given by a path").
 */
#include "config/parse.h"

#include <stdio.h>
#include <string.h>

static int
load_options(struct vctx *v, const char *k, json_t *val, struct config_options *o, bool *known)
{
	*known = true;
	if (!strcmp(k, "deny_options"))
		return config_get_strv(v, val, &o->deny, false, config_check_option);
	if (!strcmp(k, "value_options"))
		return config_get_strv(v, val, &o->value, false, config_check_option);
	if (!strcmp(k, "data_options"))
		return config_get_strv(v, val, &o->data, false, config_check_option);
	if (!strcmp(k, "suffix_options"))
		return config_get_strv(v, val, &o->suffix, false, config_check_option);
	if (!strcmp(k, "chdir_options"))
		return config_get_strv(v, val, &o->chdir, false, config_check_option);
	*known = false;
	return 0;
}

/* An option may be in one of value_options and data_options, not both:
 * whether its value is judged as a path must have one answer. */
static int
check_overlap(struct vctx *v, const struct config_options *o)
{
	for (size_t i = 0; i < o->data.n; i++)
		for (size_t j = 0; j < o->value.n; j++)
			if (!strcmp(o->data.v[i], o->value.v[j]))
				return vctx_fail(v, true,
						 "'%s' is in both value_options and data_options",
						 o->value.v[j]);
	/* a suffix is data (or an attached value), never a path to judge */
	for (size_t i = 0; i < o->suffix.n; i++)
		for (size_t j = 0; j < o->value.n; j++)
			if (!strcmp(o->suffix.v[i], o->value.v[j]))
				return vctx_fail(v, true,
						 "'%s' is in both value_options and suffix_options",
						 o->value.v[j]);
	/* a directory to change into is a path: judged as one, and the
	 * base of every other relative path (policy/decide.c) */
	for (size_t i = 0; i < o->chdir.n; i++) {
		size_t j = 0;
		while (j < o->value.n && strcmp(o->chdir.v[i], o->value.v[j]))
			j++;
		if (j == o->value.n)
			return vctx_fail(v, true,
					 "'%s' is in chdir_options but not in value_options: the "
					 "directory it names is a path, judged as one",
					 o->chdir.v[i]);
	}
	return 0;
}

static int
load_before(struct vctx *v, json_t *j, struct config_options *o)
{
	static const char *const known[] = {"deny_options",   "value_options", "data_options",
					    "suffix_options", "chdir_options", NULL};
	int rc = config_want_type(v, j, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		bool ok;
		vctx_push_key(v, k);
		if ((rc = load_options(v, k, val, o, &ok)) < 0)
			return rc;
		if (!ok)
			return vctx_unknown_key(v, k, known);
		vctx_pop(v);
	}
	return check_overlap(v, o);
}

static int
load_approve(struct vctx *v, json_t *val, struct config_program *pg)
{
	static const char *const ak[] = {"match", "reason", NULL};
	int rc = config_want_type(v, val, JSON_ARRAY, "an array of approval rules");
	if (rc < 0)
		return rc;
	pg->approve = wd_xcalloc(json_array_size(val) + 1, sizeof(*pg->approve));
	size_t i;
	json_t *e;
	json_array_foreach(val, i, e)
	{
		vctx_push_idx(v, i);
		struct config_approve *a = &pg->approve[pg->napprove++];
		if (json_is_array(e)) {
			/* shorthand: ["push"] */
			rc = config_get_strv(v, e, &a->match, true, config_check_word);
		} else if (json_is_object(e)) {
			const char *k2;
			json_t *v2;
			bool have_match = false;
			json_object_foreach(e, k2, v2)
			{
				vctx_push_key(v, k2);
				if (!strcmp(k2, "match")) {
					have_match = true;
					rc = config_get_strv(v, v2, &a->match, true,
							     config_check_word);
				} else if (!strcmp(k2, "reason")) {
					rc = config_get_string(v, v2, &a->reason);
				} else {
					rc = vctx_unknown_key(v, k2, ak);
				}
				if (rc < 0)
					return rc;
				vctx_pop(v);
			}
			if (!have_match)
				rc = vctx_fail(v, false, "an approval rule needs \"match\"");
		} else {
			rc =
			    vctx_fail(v, false,
				      "expected an object {\"match\": [...]} or an array of words, "
				      "got %s",
				      config_type_name(e));
		}
		if (rc < 0)
			return rc;
		vctx_pop(v);
	}
	return 0;
}

static int
load_paths(struct vctx *v, json_t *val, struct config_program *pg)
{
	int rc = config_want_type(v, val, JSON_STRING, "a string");
	if (rc < 0)
		return rc;
	const char *m = json_string_value(val);
	if (!strcmp(m, "operands"))
		pg->paths = CONFIG_PATHS_OPERANDS;
	else if (!strcmp(m, "none"))
		pg->paths = CONFIG_PATHS_NONE;
	else if (!strcmp(m, "skip_first"))
		pg->paths = CONFIG_PATHS_SKIP_FIRST;
	else
		return vctx_fail(v, false,
				 "'%.40s' is not a paths mode (operands, none, skip_first)", m);
	return 0;
}

/* A workspace program's key: a normalized relative path ("bin/x",
 * ".venv/bin/pytest"), since it is compared with the resolved file. */
static const char *
check_workspace_path(const char *s)
{
	if (!*s || s[0] == '/')
		return "must be a path relative to the workspace";
	if (config_check_word(s))
		return "must not contain spaces or control characters";
	for (const char *p = s;;) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return "must be a normalized path (no '.', '..', '//' or trailing '/')";
		if (!e)
			break;
		p = e + 1;
	}
	return NULL;
}

static int
check_name(struct vctx *v, const char *name, bool workspace)
{
	if (workspace) {
		const char *why = check_workspace_path(name);
		if (why)
			return vctx_fail(v, true, "'%.80s' %s", name, why);
		return 0;
	}
	if (!*name || strchr(name, '/') || config_check_word(name) || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return vctx_fail(
		    v, true,
		    "'%.80s' is not a program basename (no slash, no spaces; a file of "
		    "the workspace goes under workspace.programs)",
		    name);
	return 0;
}

int
config_load_program(struct vctx *v, const char *name, bool workspace, json_t *j,
		    struct config_program *pg)
{
	static const char *const known[] = {"interpreter",
					    "subcommands",
					    "allow_options",
					    "deny_options",
					    "value_options",
					    "data_options",
					    "suffix_options",
					    "chdir_options",
					    "before_subcommand",
					    "deny_env",
					    "paths",
					    "approve",
					    "advice",
					    NULL};
	int rc;
	pg->name = wd_xstrdup(name);
	pg->workspace = workspace;
	pg->rule = workspace ? wd_xasprintf("workspace.programs[%s]", name)
			     : wd_xasprintf("programs.%s", name);
	if ((rc = check_name(v, name, workspace)) < 0)
		return rc;
	if ((rc = config_want_type(v, j, JSON_OBJECT, "an object")) < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		bool ok;
		vctx_push_key(v, k);
		if ((rc = load_options(v, k, val, &pg->opts, &ok)) < 0)
			return rc;
		if (ok) {
			/* deny/value/data lists */
		} else if (!strcmp(k, "interpreter")) {
			rc = config_get_bool(v, val, &pg->interpreter);
		} else if (!strcmp(k, "subcommands")) {
			pg->has_subcommands = true;
			rc = config_get_strv(v, val, &pg->subcommands, true,
					     config_check_subcommand);
		} else if (!strcmp(k, "allow_options")) {
			pg->options_listed = true;
			rc =
			    config_get_strv(v, val, &pg->allow_options, false, config_check_option);
		} else if (!strcmp(k, "before_subcommand")) {
			pg->has_before = true;
			rc = load_before(v, val, &pg->before);
		} else if (!strcmp(k, "deny_env")) {
			rc =
			    config_get_strv(v, val, &pg->deny_env, false, config_check_env_pattern);
		} else if (!strcmp(k, "paths")) {
			rc = load_paths(v, val, pg);
		} else if (!strcmp(k, "advice")) {
			rc = config_get_string(v, val, &pg->advice);
		} else if (!strcmp(k, "approve")) {
			rc = load_approve(v, val, pg);
		} else {
			rc = vctx_unknown_key(v, k, known);
		}
		if (rc < 0)
			return rc;
		vctx_pop(v);
	}
	if (pg->has_before && !pg->has_subcommands)
		return vctx_fail(v, true,
				 "\"before_subcommand\" needs \"subcommands\" (options before "
				 "which subcommand?)");
	return check_overlap(v, &pg->opts);
}

static void
options_fini(struct config_options *o)
{
	config_strv_free(&o->deny);
	config_strv_free(&o->value);
	config_strv_free(&o->data);
	config_strv_free(&o->suffix);
	config_strv_free(&o->chdir);
}

void
config_program_fini(struct config_program *g)
{
	free(g->name);
	free(g->rule);
	config_strv_free(&g->subcommands);
	config_strv_free(&g->allow_options);
	options_fini(&g->opts);
	options_fini(&g->before);
	config_strv_free(&g->deny_env);
	for (size_t j = 0; j < g->napprove; j++) {
		config_strv_free(&g->approve[j].match);
		free(g->approve[j].reason);
	}
	free(g->approve);
	free(g->advice);
}
