/* spec/spec_json: a spec as JSON and back, for what outlives the
 * process that made it: a session's meta.json, from which its monitor
 * builds the sandbox and `warden start` builds it again after a restart.
 *
 * Only what the caller set is written (limits the caller gave, not
 * warden's defaults), so a session started after an upgrade gets the new
 * defaults.  Reading goes through the public setters, which validate
 * everything again: a hand-edited meta.json is bad input like any other. */
#include "spec/spec.h"
#include "net/net.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

json_t *
spec_to_json(const wd_spec *s)
{
	json_t *j = json_object();
	if (s->workspace)
		json_object_set_new(j, "workspace", json_string(s->workspace));
	json_object_set_new(j, "workspace_mode",
			    json_string(s->ws_mode == WD_WORKSPACE_COW ? "cow" : "direct"));
	json_object_set_new(j, "isolation", json_integer(s->isolation));
	json_object_set_new(j, "isolation_given", json_boolean(s->isolation_given));
	json_t *lim = json_object();
	const struct {
		const char *name;
		uint64_t v;
	} l[] = {{"memory", s->lim_given.memory_bytes},	  {"pids", s->lim_given.pids},
		 {"cpu", s->lim_given.cpu_millionths},	  {"tmp", s->lim_given.tmp_bytes},
		 {"timeout_ms", s->lim_given.timeout_ms}, {"output", s->lim_given.output_limit},
		 {"nofile", s->lim_given.nofile},	  {"fsize", s->lim_given.fsize}};
	for (size_t i = 0; i < WD_ARRAY_SIZE(l); i++)
		if (l[i].v)
			json_object_set_new(lim, l[i].name, json_integer((json_int_t)l[i].v));
	json_object_set_new(j, "limits", lim);
	json_t *binds = json_array();
	for (size_t i = 0; i < s->nbinds; i++) {
		json_t *b = json_pack("{s:s, s:s, s:b}", "src", s->binds[i].src, "dst",
				      s->binds[i].dst, "rw", s->binds[i].rw);
		/* where the source leads now, when the session is made or
		 * updated: spec_from_json refuses a source that leads
		 * elsewhere later (see there) */
		char *real = realpath(s->binds[i].src, NULL);
		if (real)
			json_object_set_new(b, "real", json_string(real));
		free(real);
		json_array_append_new(binds, b);
	}
	json_object_set_new(j, "binds", binds);
	json_t *env = json_array();
	for (size_t i = 0; i < s->nenv; i++)
		json_array_append_new(env, json_string(s->env[i]));
	json_object_set_new(j, "env", env);
	json_t *ports = json_array();
	for (size_t i = 0; i < s->nports; i++)
		json_array_append_new(ports, json_integer(s->ports[i]));
	json_object_set_new(j, "ports", ports);
	json_object_set_new(j, "net", json_integer(s->net));
	json_object_set_new(j, "net_given", json_boolean(s->net_given));
	json_t *rules = json_array();
	for (size_t i = 0; i < s->nrules; i++)
		json_array_append_new(rules, json_pack("{s:i, s:s}", "kind", (int)s->rules[i].kind,
						       "rule", s->rules[i].text));
	json_object_set_new(j, "net_rules", rules);
	json_object_set_new(j, "tls_intercept", json_boolean(s->tls_intercept));
	if (s->upstream_ca)
		json_object_set_new(j, "upstream_ca", json_string(s->upstream_ca));
	json_object_set_new(j, "time_ns", json_boolean(s->time_ns));
	json_object_set_new(j, "best_effort", json_boolean(s->best_effort));
	json_object_set_new(j, "reproducible", json_boolean(s->reproducible));
	if (s->disk_bytes)
		json_object_set_new(j, "disk", json_integer((json_int_t)s->disk_bytes));
	json_t *prot = json_array();
	for (size_t i = 0; i < s->nprotect; i++)
		json_array_append_new(prot, json_string(s->protect[i]));
	json_object_set_new(j, "protect", prot);
	/* secrets: where each value is read from, never the value; the
	 * inject rules and placeholders as given */
	if (s->nsecret_src) {
		json_t *sec = json_array();
		for (size_t i = 0; i < s->nsecret_src; i++)
			json_array_append_new(sec,
					      json_pack("{s:s, s:s}", "name", s->secret_src[i].name,
							"source", s->secret_src[i].source));
		json_object_set_new(j, "secrets", sec);
	}
	size_t nr = net_secrets_rule_count(s->secrets);
	if (nr) {
		json_t *inj = json_array();
		for (unsigned i = 0; i < nr; i++)
			json_array_append_new(
			    inj, json_pack("{s:s, s:s}", "kind",
					   net_secrets_rule_kind(s->secrets, i) == NET_INJECT_BASIC
					       ? "basic"
					       : "header",
					   "rule", net_secrets_rule_text(s->secrets, i)));
		json_object_set_new(j, "inject", inj);
	}
	if (s->nplaceholder_src) {
		json_t *ph = json_array();
		for (size_t i = 0; i < s->nplaceholder_src; i++)
			json_array_append_new(ph, json_string(s->placeholder_src[i]));
		json_object_set_new(j, "placeholders", ph);
	}
	/* pinned by digest: a session started again later gets the same
	 * environment even if the name was built anew */
	if (s->image_digest) {
		json_object_set_new(j, "image", json_sprintf("sha256:%s", s->image_digest));
		json_object_set_new(j, "image_root", json_string(s->image_root));
		if (s->image_user)
			json_object_set_new(j, "image_user", json_string(s->image_user));
	}
	return j;
}

static uint64_t
u64(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
							       : 0;
}

int
spec_from_json(json_t *j, wd_spec **out, struct wd_err *err)
{
	wd_spec *s = wd_spec_new();
	int rc = 0;
	const char *ws = json_string_value(json_object_get(j, "workspace"));
	if (ws && (rc = wd_spec_set_workspace(s, ws, err)) < 0)
		goto fail;
	if (ws && strcmp(s->workspace, ws) != 0) {
		/* Why: the stored path was made canonical when the session was
		 * made (wd_spec_set_workspace), so a link in it now was put
		 * there since, and any sandbox that writes a directory above it
		 * (a one-shot run or another session over the parent) can put
		 * one: followed, the next start bound the directory it names
		 * (any host directory) as this session's workspace, and the
		 * file tools and `warden cp` wrote there */
		rc = wd_err_set(err, WD_E_INVAL,
				"the session's workspace '%.1000s' now leads to '%.1000s' (a "
				"symbolic link in its path appeared after the session was "
				"made): refused rather than followed; put the directory back "
				"or make a new session",
				ws, s->workspace);
		goto fail;
	}
	const char *mode = json_string_value(json_object_get(j, "workspace_mode"));
	wd_spec_set_workspace_mode(s, mode && !strcmp(mode, "cow") ? WD_WORKSPACE_COW
								   : WD_WORKSPACE_DIRECT);
	if (json_is_true(json_object_get(j, "isolation_given")))
		wd_spec_set_isolation(s, (enum wd_isolation)u64(j, "isolation"));
	json_t *lim = json_object_get(j, "limits");
	struct wd_limits l = {u64(lim, "memory"), u64(lim, "pids"),	  u64(lim, "cpu"),
			      u64(lim, "tmp"),	  u64(lim, "timeout_ms"), u64(lim, "output"),
			      u64(lim, "nofile"), u64(lim, "fsize")};
	wd_spec_set_limits(s, &l);
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(j, "binds"), i, v)
	{
		const char *src = json_string_value(json_object_get(v, "src"));
		const char *dst = json_string_value(json_object_get(v, "dst"));
		if (!src)
			goto damaged;
		/* Why: a bind source may hold links the caller meant (it is
		 * kept as given), but one that leads elsewhere than when the
		 * session was made had a link planted in its path since, which
		 * any sandbox writing a directory above it can do: followed,
		 * the next start bound the directory it names (any host
		 * directory) into this session.  Sessions made before "real"
		 * was recorded are not checked. */
		const char *real = json_string_value(json_object_get(v, "real"));
		char *now = real ? realpath(src, NULL) : NULL;
		if (real && (!now || strcmp(now, real))) {
			rc = wd_err_set(
			    err, WD_E_INVAL,
			    "the session's bind source '%.1000s' now leads to '%.1000s', "
			    "not '%.1000s' as when the session was made (a symbolic "
			    "link in its path changed): refused rather than followed; "
			    "put the directory back or make a new session",
			    src, now ? now : "nowhere", real);
			free(now);
			goto fail;
		}
		if ((rc = wd_spec_add_bind(s, src, dst, json_is_true(json_object_get(v, "rw")),
					   err)) < 0) {
			free(now);
			goto fail;
		}
		/* and what was checked is what the jail binds: the link-free
		 * path, on which it follows no link (jail/plan.c), so a link
		 * swapped in after this check is refused, not followed */
		s->binds[s->nbinds - 1].real = now;
	}
	json_array_foreach(json_object_get(j, "env"), i, v)
	{
		const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq)
			goto damaged;
		char *name = strndup(kv, (size_t)(eq - kv));
		rc = wd_spec_setenv(s, name, eq + 1, err);
		free(name);
		if (rc < 0)
			goto fail;
	}
	json_array_foreach(json_object_get(j, "ports"), i, v)
	    wd_spec_allow_port(s, (unsigned)json_integer_value(v), NULL);
	if (json_is_true(json_object_get(j, "net_given")))
		wd_spec_set_net(s, (enum wd_net_mode)u64(j, "net"));
	json_array_foreach(json_object_get(j, "net_rules"), i, v)
	{
		const char *r = json_string_value(json_object_get(v, "rule"));
		if (!r)
			goto damaged;
		if ((rc = wd_spec_add_net_rule(
			 s, (enum wd_net_rule)json_integer_value(json_object_get(v, "kind")), r,
			 err)) < 0)
			goto fail;
	}
	const char *ca = json_string_value(json_object_get(j, "upstream_ca"));
	if (json_is_true(json_object_get(j, "tls_intercept")) || ca)
		wd_spec_set_tls_intercept(s, json_is_true(json_object_get(j, "tls_intercept")), ca);
	wd_spec_set_time_namespace(s, !json_is_false(json_object_get(j, "time_ns")));
	wd_spec_set_best_effort(s, json_is_true(json_object_get(j, "best_effort")));
	wd_spec_set_reproducible(s, json_is_true(json_object_get(j, "reproducible")));
	if (u64(j, "disk") && (rc = wd_spec_set_disk(s, u64(j, "disk"), err)) < 0)
		goto fail;
	json_array_foreach(json_object_get(j, "protect"), i, v)
	{
		if ((rc = wd_spec_add_protected(s, json_string_value(v), err)) < 0)
			goto fail;
	}
	/* secrets: the sources only (spec_secrets_load reads the values);
	 * the inject rules checked as when they were given */
	json_array_foreach(json_object_get(j, "inject"), i, v)
	{
		const char *r = json_string_value(json_object_get(v, "rule"));
		const char *k = json_string_value(json_object_get(v, "kind"));
		if (!r || !k)
			goto damaged;
		if ((rc = wd_spec_add_inject(
			 s, !strcmp(k, "basic") ? WD_INJECT_BASIC : WD_INJECT_HEADER, r, err)) < 0)
			goto fail;
	}
	json_array_foreach(json_object_get(j, "secrets"), i, v)
	{
		const char *n = json_string_value(json_object_get(v, "name"));
		const char *src = json_string_value(json_object_get(v, "source"));
		if (!n || !src)
			goto damaged;
		spec_secret_src_add(s, n, src);
		s->secrets_pending = true;
	}
	json_array_foreach(json_object_get(j, "placeholders"), i, v)
	{
		const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq || eq == kv || !wd_env_name_ok(eq + 1))
			goto damaged;
		s->placeholder_src =
		    wd_xrealloc(s->placeholder_src, (s->nplaceholder_src + 1) * sizeof(char *));
		s->placeholder_src[s->nplaceholder_src++] = wd_xstrdup(kv);
		s->secrets_pending = true;
	}
	/* the image by its path: the monitor that reads this may not share
	 * the creator's environment (WARDEN_STATE_DIR); the path is checked
	 * to be a stored image with the recorded digest (its env is already
	 * in "env") */
	const char *image = json_string_value(json_object_get(j, "image"));
	if (image) {
		const char *root = json_string_value(json_object_get(j, "image_root"));
		if (!root || (rc = spec_set_image_root(s, image, root, err)) < 0) {
			if (!root)
				goto damaged;
			goto fail;
		}
		const char *user = json_string_value(json_object_get(j, "image_user"));
		if (user && !spec_user_name_ok(user))
			goto damaged;
		s->image_user = user ? wd_xstrdup(user) : NULL;
	}
	*out = s;
	return 0;
damaged:
	rc = wd_err_set(err, WD_E_INVAL, "the session's spec (meta.json) is damaged");
fail:
	wd_spec_free(s);
	return rc;
}
