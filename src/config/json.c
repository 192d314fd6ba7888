/* json.c - the effective policy as JSON (`warden policy show`, and the
 * canonical form whose SHA-256 is the policy digest).  Defaults are filled
 * in, so two documents that mean the same have one digest; the output is
 * itself a valid policy (except the "builtin" marker on profiles). */
#include "config/parse.h"

#include <string.h>

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

/* The levels' names, spelled here only: every option, policy key, result
 * and message takes them from wd_isolation_name / wd_isolation_parse. */
static const char *const isolation_names[] = {
    [WD_ISOLATION_CONTAINER] = "container",
    [WD_ISOLATION_PROCESS] = "process",
    [WD_ISOLATION_GVISOR] = "gvisor",
};

WD_API const char *
wd_isolation_name(enum wd_isolation level)
{
	return (unsigned)level < WD_ARRAY_SIZE(isolation_names) ? isolation_names[level] : "?";
}

WD_API int
wd_isolation_parse(const char *name, enum wd_isolation *level)
{
	for (size_t i = 0; name && i < WD_ARRAY_SIZE(isolation_names); i++)
		if (!strcmp(name, isolation_names[i])) {
			*level = (enum wd_isolation)i;
			return 0;
		}
	return -EINVAL;
}

static void
options_json(json_t *o, const struct config_options *l)
{
	if (l->deny.n)
		json_object_set_new(o, "deny_options", strv_json(&l->deny));
	if (l->value.n)
		json_object_set_new(o, "value_options", strv_json(&l->value));
	if (l->data.n)
		json_object_set_new(o, "data_options", strv_json(&l->data));
	if (l->suffix.n)
		json_object_set_new(o, "suffix_options", strv_json(&l->suffix));
	if (l->chdir.n)
		json_object_set_new(o, "chdir_options", strv_json(&l->chdir));
}

static json_t *
program_json(const struct config_program *g)
{
	json_t *o = json_object();
	if (g->interpreter)
		json_object_set_new(o, "interpreter", json_true());
	if (g->has_subcommands)
		json_object_set_new(o, "subcommands", strv_json(&g->subcommands));
	if (g->options_listed)
		json_object_set_new(o, "allow_options", strv_json(&g->allow_options));
	options_json(o, &g->opts);
	if (g->has_before) {
		json_t *b = json_object();
		options_json(b, &g->before);
		json_object_set_new(o, "before_subcommand", b);
	}
	if (g->deny_env.n)
		json_object_set_new(o, "deny_env", strv_json(&g->deny_env));
	json_object_set_new(o, "paths", json_string(config_paths_name(g->paths)));
	if (g->napprove) {
		json_t *a = json_array();
		for (size_t j = 0; j < g->napprove; j++) {
			json_t *r = json_pack("{s:o}", "match", strv_json(&g->approve[j].match));
			if (g->approve[j].reason)
				json_object_set_new(r, "reason", json_string(g->approve[j].reason));
			json_array_append_new(a, r);
		}
		json_object_set_new(o, "approve", a);
	}
	if (g->advice)
		json_object_set_new(o, "advice", json_string(g->advice));
	return o;
}

/* Limits as the document writes them; unset (0) ones are left out. */
static void
limits_json(json_t *o, const struct config_limits *l)
{
	if (l->timeout_ms)
		json_object_set_new(o, "timeout", json_real((double)l->timeout_ms / 1000.0));
	if (l->memory_bytes)
		json_object_set_new(o, "memory", json_integer((json_int_t)l->memory_bytes));
	if (l->cpu_millionths)
		json_object_set_new(o, "cpu", json_real((double)l->cpu_millionths / 1e6));
	if (l->output_bytes)
		json_object_set_new(o, "output", json_integer((json_int_t)l->output_bytes));
	if (l->pids)
		json_object_set_new(o, "pids", json_integer((json_int_t)l->pids));
	if (l->tmp_bytes)
		json_object_set_new(o, "tmp_size", json_integer((json_int_t)l->tmp_bytes));
}

static json_t *
sandbox_json(const struct config_sandbox *sb)
{
	json_t *o = json_object();
	if (sb->isolation_set)
		json_object_set_new(o, "isolation", json_string(wd_isolation_name(sb->isolation)));
	limits_json(o, &sb->lim);
	if (sb->require) {
		json_t *a = json_array();
		for (size_t b = 0; config_require_names[b]; b++)
			if (sb->require & (1u << b))
				json_array_append_new(a, json_string(config_require_names[b]));
		json_object_set_new(o, "require", a);
	}
	if (sb->reproducible)
		json_object_set_new(o, "reproducible", json_true());
	if (sb->pool)
		json_object_set_new(o, "pool", json_integer(sb->pool));
	return o;
}

static json_t *
network_json(const struct config_network *n)
{
	json_t *o = json_object();
	if (n->mode_set)
		json_object_set_new(o, "mode",
				    json_string(n->mode == WD_NET_NONE ? "none" : "allow"));
	if (n->allow.n)
		json_object_set_new(o, "allow", strv_json(&n->allow));
	if (n->deny.n)
		json_object_set_new(o, "deny", strv_json(&n->deny));
	if (n->hosts.n)
		json_object_set_new(o, "hosts", strv_json(&n->hosts));
	if (n->ranges.n)
		json_object_set_new(o, "allow_ranges", strv_json(&n->ranges));
	if (n->nports) {
		json_t *a = json_array();
		for (size_t i = 0; i < n->nports; i++)
			json_array_append_new(a, json_integer(n->ports[i]));
		json_object_set_new(o, "allow_ports", a);
	}
	if (n->tls_intercept)
		json_object_set_new(o, "tls_intercept", json_true());
	if (n->upstream_ca)
		json_object_set_new(o, "upstream_ca", json_string(n->upstream_ca));
	return o;
}

static json_t *
workspace_json(const struct config_policy *p)
{
	json_t *o = json_pack("{s:s}", "mount", p->mount);
	if (p->nwprograms) {
		json_t *w = json_object();
		for (size_t i = 0; i < p->nwprograms; i++)
			json_object_set_new(w, p->wprograms[i].name,
					    program_json(&p->wprograms[i]));
		json_object_set_new(o, "programs", w);
	}
	if (p->wprotect.n) {
		json_t *a = json_array();
		for (size_t i = 0; i < p->wprotect.n; i++)
			json_array_append_new(a, json_string(p->wprotect.v[i]));
		json_object_set_new(o, "protect", a);
	}
	return o;
}

json_t *
config_policy_to_json(const struct config_policy *p)
{
	json_t *root = json_object();
	json_object_set_new(root, "version", json_integer(p->version));
	json_object_set_new(root, "workspace", workspace_json(p));
	json_t *progs = json_object();
	for (size_t i = 0; i < p->nprograms; i++)
		json_object_set_new(progs, p->programs[i].name, program_json(&p->programs[i]));
	json_object_set_new(root, "programs", progs);
	json_t *tools = json_object();
	for (size_t i = 0; i < p->ntools; i++) {
		const struct config_tool *t = &p->tools[i];
		json_t *o = json_pack("{s:s}", "class", config_tool_class_name(t->klass));
		if (t->profile)
			json_object_set_new(o, "profile", json_string(t->profile));
		if (t->description)
			json_object_set_new(o, "description", json_string(t->description));
		if (t->image)
			json_object_set_new(o, "image", json_string(t->image));
		json_object_set_new(tools, t->name, o);
	}
	json_object_set_new(root, "tools", tools);
	json_t *profs = json_object();
	for (size_t i = 0; i < p->nprofiles; i++) {
		const struct config_profile *pr = &p->profiles[i];
		json_t *o = json_object();
		limits_json(o, &pr->lim);
		if (pr->builtin)
			json_object_set_new(o, "builtin", json_true());
		json_object_set_new(profs, pr->name, o);
	}
	json_object_set_new(root, "profiles", profs);
	json_object_set_new(root, "approvals",
			    json_pack("{s:I, s:I}", "ttl", (json_int_t)p->approval_ttl_s,
				      "max_state_entries",
				      (json_int_t)p->approval_max_state_entries));
	if (p->audit_path)
		json_object_set_new(root, "audit", json_pack("{s:s}", "path", p->audit_path));
	json_t *net = network_json(&p->net);
	if (json_object_size(net))
		json_object_set_new(root, "network", net);
	else
		json_decref(net);
	if (p->nsecrets)
		json_object_set_new(root, "secrets", config_secrets_json(p));
	json_t *sb = sandbox_json(&p->sandbox);
	if (json_object_size(sb))
		json_object_set_new(root, "sandbox", sb);
	else
		json_decref(sb);
	if (p->env_deny.n)
		json_object_set_new(root, "env",
				    json_pack("{s:o}", "deny", strv_json(&p->env_deny)));
	return root;
}
