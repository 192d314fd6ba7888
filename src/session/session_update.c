/* session/session_update: warden update, a session's limits, egress rules,
 * published ports, protected paths and secrets changed after it was made
 * (docker update's contract: each value checked as create checks it, all
 * or nothing, and what cannot change while it runs said so).
 *
 * The new spec is the session's meta.json spec with the changes applied,
 * read back through spec_from_json (the public setters: every value
 * validated again, exactly as at create) and checked as a sandbox build
 * would check it (secrets against rules and the proxy).  Then, for a
 * running session, its monitor rewrites the cgroup limits in place and
 * swaps its proxy's rule set; a refusal there (memory below what the
 * session uses) leaves everything as it was.  Then meta.json is replaced
 * atomically (ws_meta_write: a new file renamed over it) under the state
 * directory's lock, which the monitor takes to record its state.  The
 * change is in the audit trail before anything is changed: a change that
 * cannot be recorded is not made. */
#include "session/session.h"
#include "net/net.h"
#include "util/json.h"
#include "workspace/workspace.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

/* The fields, by the option that sets them; where each takes effect. */
enum when { NOW_OR_START, NEXT_COMMAND, NEXT_START };

static const struct field {
	const char *name;  /* the option */
	const char *limit; /* spec.limits member, or NULL */
	int rule_kind;	   /* spec.net_rules kind, or -1 */
	enum when when;
} fields[] = {
    {"memory", "memory", -1, NOW_OR_START},
    {"pids", "pids", -1, NOW_OR_START},
    {"cpus", "cpu", -1, NOW_OR_START},
    {"tmp-size", "tmp", -1, NEXT_START},
    {"timeout", "timeout_ms", -1, NEXT_COMMAND},
    {"output-limit", "output", -1, NEXT_COMMAND},
    {"net", NULL, -1, NEXT_START},
    {"allow-host", NULL, WD_NET_ALLOW, NOW_OR_START},
    {"deny-host", NULL, WD_NET_DENY, NOW_OR_START},
    {"add-host", NULL, WD_NET_HOST, NOW_OR_START},
    {"allow-range", NULL, WD_NET_RANGE, NOW_OR_START},
    {"tls-intercept", NULL, -1, NEXT_START},
    {"upstream-ca", NULL, -1, NEXT_START},
    {"allow-port", NULL, -1, NEXT_START},
    {"protect", NULL, -1, NEXT_START},
    {"secret", NULL, -1, NEXT_START},
    {"inject", NULL, -1, NEXT_START},
    {"inject-basic", NULL, -1, NEXT_START},
    {"placeholder", NULL, -1, NEXT_START},
    {"idle-timeout", NULL, -1, NEXT_START},
};

/* A field's value in a spec object (and meta, for the idle timeout), as
 * the report shows it: a number, a string, a list, or null (warden's
 * default).  New reference. */
static json_t *
field_value(const struct field *f, json_t *spec, json_t *meta)
{
	if (f->limit) {
		json_t *v = json_object_get(json_object_get(spec, "limits"), f->limit);
		if (!json_is_integer(v) || json_integer_value(v) <= 0)
			return json_null();
		if (!strcmp(f->limit, "cpu"))
			return json_real((double)json_integer_value(v) / 1e6);
		if (!strcmp(f->limit, "timeout_ms"))
			return json_real((double)json_integer_value(v) / 1e3);
		return json_incref(v);
	}
	json_t *a = json_array(), *v;
	size_t i;
	if (f->rule_kind >= 0) {
		json_array_foreach(json_object_get(spec, "net_rules"), i, v)
		{
			if (json_integer_value(json_object_get(v, "kind")) == f->rule_kind)
				json_array_append(a, json_object_get(v, "rule"));
		}
		return a;
	}
	const char *n = f->name;
	if (!strcmp(n, "allow-port") || !strcmp(n, "protect") || !strcmp(n, "placeholder")) {
		json_decref(a);
		a = json_object_get(spec, !strcmp(n, "allow-port") ? "ports"
					  : !strcmp(n, "protect")  ? "protect"
								   : "placeholders");
		return a ? json_deep_copy(a) : json_array();
	}
	if (!strcmp(n, "secret")) {
		json_array_foreach(json_object_get(spec, "secrets"), i, v)
		{
			const char *src = json_string_value(json_object_get(v, "source"));
			/* the source, never a value: "file:" for the user's eyes */
			json_array_append_new(
			    a,
			    json_sprintf("%s=%s%s", json_string_value(json_object_get(v, "name")),
					 src && src[0] == '@' ? "file:" : "",
					 src && src[0] == '@' ? src + 1 : src));
		}
		return a;
	}
	if (!strcmp(n, "inject") || !strcmp(n, "inject-basic")) {
		const char *kind = !strcmp(n, "inject") ? "header" : "basic";
		json_array_foreach(json_object_get(spec, "inject"), i, v)
		{
			if (!strcmp(json_string_value(json_object_get(v, "kind")), kind))
				json_array_append(a, json_object_get(v, "rule"));
		}
		return a;
	}
	json_decref(a);
	if (!strcmp(n, "net"))
		return json_string(json_integer_value(json_object_get(spec, "net")) == WD_NET_PROXY
				       ? "allow"
				       : "none");
	if (!strcmp(n, "tls-intercept"))
		return json_boolean(json_is_true(json_object_get(spec, "tls_intercept")));
	if (!strcmp(n, "upstream-ca")) {
		json_t *ca = json_object_get(spec, "upstream_ca");
		return ca ? json_incref(ca) : json_null();
	}
	/* idle-timeout: seconds, 0 never */
	json_t *it = json_object_get(meta, "idle_timeout_ms");
	return json_is_integer(it) ? json_real((double)json_integer_value(it) / 1e3) : json_null();
}

/* Append v to the array at spec[key] unless an equal member is there. */
static void
add_unique(json_t *spec, const char *key, json_t *v)
{
	json_t *a = json_object_get(spec, key);
	if (!json_is_array(a)) {
		a = json_array();
		json_object_set_new(spec, key, a);
	}
	size_t i;
	json_t *m;
	json_array_foreach(a, i, m)
	{
		if (json_equal(m, v)) {
			json_decref(v);
			return;
		}
	}
	json_array_append_new(a, v);
}

/* The changes of set (what the caller gave) into the spec object. */
static int
apply_set(json_t *spec, const wd_spec *set, struct wd_err *err)
{
	/* what a session cannot change without being made again: its
	 * workspace and the jail's shape */
	const char *fixed = set->workspace	    ? "the workspace"
			    : set->isolation_given  ? "the isolation level"
			    : set->nbinds	    ? "a bind mount"
			    : set->nenv		    ? "the environment (--setenv)"
			    : set->image	    ? "the image"
			    : set->disk_bytes	    ? "the disk"
			    : set->reproducible	    ? "--reproducible"
			    : set->best_effort	    ? "--best-effort"
			    : set->lim_given.nofile ? "the open files limit"
			    : set->lim_given.fsize  ? "the file size limit"
			    : set->ws_mode	    ? "the workspace mode"
						    : NULL;
	if (fixed)
		return wd_err_set(err, WD_E_INVAL,
				  "%s of a session cannot be changed (warden create makes a new "
				  "one)",
				  fixed);
	json_t *lim = json_object_get(spec, "limits");
	if (!json_is_object(lim)) {
		lim = json_object();
		json_object_set_new(spec, "limits", lim);
	}
	const struct {
		const char *k;
		uint64_t v;
	} l[] = {
	    {"memory", set->lim_given.memory_bytes},   {"pids", set->lim_given.pids},
	    {"cpu", set->lim_given.cpu_millionths},    {"tmp", set->lim_given.tmp_bytes},
	    {"timeout_ms", set->lim_given.timeout_ms}, {"output", set->lim_given.output_limit}};
	for (size_t i = 0; i < WD_ARRAY_SIZE(l); i++)
		if (l[i].v)
			json_object_set_new(lim, l[i].k, json_integer((json_int_t)l[i].v));
	if (set->net_given) {
		json_object_set_new(spec, "net", json_integer(set->net));
		json_object_set_new(spec, "net_given", json_true());
	}
	for (size_t i = 0; i < set->nrules; i++)
		add_unique(spec, "net_rules",
			   json_pack("{s:i, s:s}", "kind", (int)set->rules[i].kind, "rule",
				     set->rules[i].text));
	for (size_t i = 0; i < set->nports; i++)
		add_unique(spec, "ports", json_integer(set->ports[i]));
	for (size_t i = 0; i < set->nprotect; i++)
		add_unique(spec, "protect", json_string(set->protect[i]));
	if (set->tls_intercept)
		json_object_set_new(spec, "tls_intercept", json_true());
	if (set->upstream_ca)
		json_object_set_new(spec, "upstream_ca", json_string(set->upstream_ca));
	for (size_t i = 0; i < set->nsecret_src; i++) {
		/* a secret given again is a new source for it */
		json_t *a = json_object_get(spec, "secrets"), *v;
		size_t k;
		json_array_foreach(a, k, v)
		{
			if (!strcmp(json_string_value(json_object_get(v, "name")),
				    set->secret_src[i].name)) {
				json_array_remove(a, k);
				break;
			}
		}
		add_unique(spec, "secrets",
			   json_pack("{s:s, s:s}", "name", set->secret_src[i].name, "source",
				     set->secret_src[i].source));
	}
	size_t nr = net_secrets_rule_count(set->secrets);
	for (unsigned i = 0; i < nr; i++)
		add_unique(spec, "inject",
			   json_pack("{s:s, s:s}", "kind",
				     net_secrets_rule_kind(set->secrets, i) == NET_INJECT_BASIC
					 ? "basic"
					 : "header",
				     "rule", net_secrets_rule_text(set->secrets, i)));
	for (size_t i = 0; i < set->nplaceholder_src; i++)
		add_unique(spec, "placeholders", json_string(set->placeholder_src[i]));
	return 0;
}

int
session_policy_floor(wd_ctx *ctx, json_t **floor, struct wd_err *err)
{
	*floor = NULL;
	/* the policy's part alone: what ctx_policy_create adds to a spec
	 * that has nothing of its own */
	wd_spec *s = wd_spec_new();
	int rc = ctx_policy_create(ctx, &s, err);
	if (rc == 0) {
		json_t *j = spec_to_json(s);
		*floor = json_object();
		static const char *const keep[] = {"protect", "net_rules", "ports"};
		for (size_t i = 0; i < WD_ARRAY_SIZE(keep); i++) {
			json_t *a = json_object_get(j, keep[i]);
			if (json_array_size(a))
				json_object_set(*floor, keep[i], a);
		}
		json_decref(j);
		if (!json_object_size(*floor)) {
			json_decref(*floor);
			*floor = NULL;
		}
	}
	wd_spec_free(s);
	return rc;
}

/* One "OPTION=VALUE" removal from the spec object: the value must be
 * there (a removal that removes nothing is a mistake worth saying), and
 * not the policy's (floor: meta.json's "policy", what the policy the
 * session was made under added to it). */
static int
apply_remove(json_t *spec, json_t *floor, const char *what, struct wd_err *err)
{
	const char *eq = strchr(what, '=');
	if (!eq || eq == what || !eq[1])
		return wd_err_set(err, WD_E_INVAL, "--remove '%.200s': expected OPTION=VALUE",
				  what);
	size_t kl = (size_t)(eq - what);
	const char *val = eq + 1;
	const struct field *f = NULL;
	for (size_t i = 0; i < WD_ARRAY_SIZE(fields); i++)
		if (strlen(fields[i].name) == kl && !strncmp(fields[i].name, what, kl))
			f = &fields[i];
	const char *key = !f				    ? NULL
			  : f->rule_kind >= 0		    ? "net_rules"
			  : !strcmp(f->name, "allow-port")  ? "ports"
			  : !strcmp(f->name, "protect")	    ? "protect"
			  : !strcmp(f->name, "secret")	    ? "secrets"
			  : !strncmp(f->name, "inject", 6)  ? "inject"
			  : !strcmp(f->name, "placeholder") ? "placeholders"
							    : NULL;
	if (!key)
		return wd_err_set(
		    err, WD_E_INVAL,
		    "--remove '%.200s': expected allow-host, deny-host, add-host, "
		    "allow-range, allow-port, protect, secret, inject, inject-basic or "
		    "placeholder before '='",
		    what);
	json_t *a = json_object_get(spec, key), *v;
	size_t i;
	json_array_foreach(a, i, v)
	{
		bool hit;
		if (f->rule_kind >= 0)
			hit = json_integer_value(json_object_get(v, "kind")) == f->rule_kind &&
			      !strcmp(json_string_value(json_object_get(v, "rule")), val);
		else if (!strcmp(key, "ports"))
			hit = json_integer_value(v) == strtoll(val, NULL, 10);
		else if (!strcmp(key, "secrets"))
			hit = !strcmp(json_string_value(json_object_get(v, "name")), val);
		else if (!strcmp(key, "inject"))
			hit = !strcmp(json_string_value(json_object_get(v, "kind")),
				      !strcmp(f->name, "inject") ? "header" : "basic") &&
			      !strcmp(json_string_value(json_object_get(v, "rule")), val);
		else if (!strcmp(key, "placeholders"))
			hit = !strncmp(json_string_value(v), val, strlen(val)) &&
			      (json_string_value(v)[strlen(val)] == '=' ||
			       !strcmp(json_string_value(v), val));
		else
			hit = !strcmp(json_string_value(v), val);
		if (!hit)
			continue;
		/* Why: the policy is the operator's floor.  A path it keeps
		 * read-only, a deny rule or a host entry it sets, stays for
		 * the session's life, as every create under it gets them; an
		 * update is no way around what create could not drop. */
		size_t k;
		json_t *fv;
		json_array_foreach(json_object_get(floor, key), k, fv)
		{
			if (json_equal(fv, v))
				return wd_err_set(
				    err, WD_E_INVAL,
				    "--remove '%.200s': the policy the session was "
				    "created under sets it (only what the session's own "
				    "create or update added can be removed)",
				    what);
		}
		json_array_remove(a, i);
		return 0;
	}
	json_t *has = field_value(f, spec, NULL);
	char *list = json_dumps(has, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(has);
	int rc = wd_err_set(err, WD_E_INVAL,
			    "--remove '%.200s': the session has no such %s (it has %.300s)", what,
			    f->name, list ? list : "[]");
	free(list);
	return rc;
}

/* A stand-in for a secret's value, unique to its name: the rules are
 * checked against the secrets' names, not their values, and a source
 * (env:VAR) need not be readable by whoever changes only the rules. */
static int
stand_in(void *data, const char *name, const char *source, char *buf, size_t cap, size_t *len,
	 struct wd_err *err)
{
	(void)data;
	(void)source;
	int n = snprintf(buf, cap, "warden-update-check-%s", name);
	if (n < 0 || (size_t)n >= cap)
		return wd_err_set(err, WD_E_INTERNAL, "secret buffer too small");
	*len = (size_t)n;
	return 0;
}

/* Checks a sandbox build would make, made now so that a bad combination
 * is refused by update rather than by the next start. */
static int
check_spec(wd_spec *s, bool secrets_changed, bool egress_changed, struct wd_err *err)
{
	if (s->net != WD_NET_PROXY && net_rules_count(s->net_rules))
		return wd_err_set(err, WD_E_INVAL,
				  "--net none contradicts the session's --allow-host rules (remove "
				  "them with --remove allow-host=RULE)");
	if (s->net != WD_NET_PROXY && s->tls_intercept)
		return wd_err_set(err, WD_E_INVAL,
				  "--tls-intercept needs --net allow and --allow-host rules");
	if (!secrets_changed && !(egress_changed && s->nsecret_src))
		return 0;
	/* Why the rules too: an inject rule sends a credential only where an
	 * allow rule admits it; removing that rule from a stopped session
	 * (no monitor to refuse it) would be recorded, and every later start
	 * refused. */
	int src = secrets_changed ? session_secrets_check(s, err) : 0;
	if (src < 0)
		return src;
	/* the values read from their sources now, by the caller, as a
	 * start will read them (the secrets unchanged: stand-ins); then
	 * what net_proxy_new checks */
	int rc = spec_secrets_load(s, secrets_changed ? NULL : stand_in, NULL, err);
	const char **env = NULL;
	size_t n = 0;
	if (rc == 0 && (rc = spec_jail_env(s, &env, &n, err)) == 0)
		free(env);
	if (rc == 0 && s->secrets && s->net_rules)
		rc = net_secrets_check(s->secrets, s->net_rules, s->tls_intercept, err);
	else if (rc == 0 && net_secrets_rule_count(s->secrets) && !s->net_rules)
		rc = wd_err_set(err, WD_E_INVAL, "--inject needs --allow-host rules admitting it");
	return rc;
}

/* After a failure to record the change: the running session's limits and
 * rules as they were (its effective limits: the old spec's, defaults
 * filled in). */
static void
undo_live(int sbdir, json_t *old)
{
	wd_spec *os = NULL;
	struct wd_err e = {0};
	if (spec_from_json(old, &os, &e) < 0)
		return;
	json_t *q = json_pack("{s:s, s:{s:I, s:I, s:I}}", "op", "update", "limits", "memory",
			      (json_int_t)os->lim.memory_bytes, "pids", (json_int_t)os->lim.pids,
			      "cpu", (json_int_t)os->lim.cpu_millionths);
	if (os->net == WD_NET_PROXY)
		json_object_set(q, "net_rules", json_object_get(old, "net_rules"));
	char *req = json_dumps(q, JSON_COMPACT);
	if (session_call(sbdir, req, NULL, 0, NULL, NULL, NULL, &e) < 0)
		wd_log(WD_LOG_WARN, "the running session's old limits not restored: %s", e.msg);
	free(req);
	json_decref(q);
	wd_spec_free(os);
}

static const char *
when_text(enum when w, bool now)
{
	return w == NEXT_COMMAND ? "next command" : now ? "now" : "next start";
}

WD_API int
wd_session_update(wd_ctx *ctx, const char *ref, const struct wd_session_update *u, char **report,
		  struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	if (report)
		*report = NULL;
	if (!u || (!u->set && !u->remove && !u->idle_timeout_ms))
		return wd_err_set(err, WD_E_INVAL, "nothing to change");
	CTX_ENTER(ctx);
	struct where w = {.sbdir = -1};
	json_t *meta = NULL, *resp = NULL, *changes = json_array();
	wd_spec *ns = NULL;
	int lk = -1;
	char *req = NULL;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc < 0)
		goto out;
	/* one writer of meta.json at a time (the monitor records its state
	 * under the same lock) */
	lk = openat(w.sbdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lk < 0 || flock(lk, LOCK_EX) < 0) {
		rc = wd_err_sys(err, errno, "lock the session's state");
		goto out;
	}
	if ((rc = ws_meta_read(w.sbdir, &meta, err)) < 0)
		goto out;
	if (!json_is_true(json_object_get(meta, "session"))) {
		rc = wd_err_set(err, WD_E_INVAL, "'%s' is not a session", ref);
		goto out;
	}
	json_t *old = json_object_get(meta, "spec");
	if (!json_is_object(old)) {
		rc = wd_err_set(err, WD_E_INVAL, "the session's spec (meta.json) is damaged");
		goto out;
	}
	json_t *nj = json_deep_copy(old);
	json_t *nmeta = json_deep_copy(meta);
	json_object_set_new(nmeta, "spec", nj);
	if (u->set && (rc = apply_set(nj, u->set, err)) < 0)
		goto out_n;
	for (size_t i = 0; u->remove && u->remove[i]; i++)
		if ((rc = apply_remove(nj, json_object_get(meta, "policy"), u->remove[i], err)) < 0)
			goto out_n;
	if (u->idle_timeout_ms)
		json_object_set_new(nmeta, "idle_timeout_ms",
				    json_integer(u->idle_timeout_ms == UINT64_MAX
						     ? 0
						     : (json_int_t)u->idle_timeout_ms));
	/* every value again through the setters, as at create */
	if ((rc = spec_from_json(nj, &ns, err)) < 0)
		goto out_n;
	/* what changed, field by field */
	bool secrets_changed = false, rules_changed = false, egress_changed = false;
	json_t *lims = json_object();
	for (size_t i = 0; i < WD_ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		json_t *a = field_value(f, old, meta), *b = field_value(f, nj, nmeta);
		if (!json_equal(a, b)) {
			json_array_append_new(changes, json_pack("{s:s, s:o, s:o}", "field",
								 f->name, "old", a, "new", b));
			secrets_changed |= !strcmp(f->name, "secret") ||
					   !strncmp(f->name, "inject", 6) ||
					   !strcmp(f->name, "placeholder");
			rules_changed |= f->rule_kind >= 0;
			egress_changed |= f->rule_kind >= 0 || !strcmp(f->name, "net") ||
					  !strcmp(f->name, "tls-intercept");
			if (f->when == NOW_OR_START && f->limit)
				json_object_set(
				    lims, f->limit,
				    json_object_get(json_object_get(nj, "limits"), f->limit));
		} else {
			json_decref(a);
			json_decref(b);
		}
	}
	if ((rc = check_spec(ns, secrets_changed, egress_changed, err)) < 0) {
		json_decref(lims);
		goto out_n;
	}
	/* recorded before anything is changed */
	json_t *fields_ev = json_pack("{s:O}", "changes", changes);
	struct wd_event ev = {.kind = WD_EVENT_SANDBOX,
			      .name = "session.update",
			      .sandbox_id = w.id,
			      .fields = fields_ev};
	rc = json_array_size(changes) ? ctx_emit_checked(ctx, &ev, err) : 0;
	json_decref(fields_ev);
	if (rc < 0) {
		json_decref(lims);
		goto out_n;
	}
	/* a running session: what can change in place, by its monitor */
	bool running = false, lim_now = false, rules_now = false;
	if (json_object_size(lims) || rules_changed) {
		json_t *q = json_pack("{s:s, s:O}", "op", "update", "limits", lims);
		/* the proxy gets the new set only when it has one, and keeps
		 * it: --net allow is not being turned off by this change */
		if (rules_changed && ns->net == WD_NET_PROXY)
			json_object_set(q, "net_rules", json_object_get(nj, "net_rules"));
		req = json_dumps(q, JSON_COMPACT);
		json_decref(q);
		rc = session_call(w.sbdir, req, NULL, 0, &resp, NULL, NULL, err);
		if (rc == -ESRCH) {
			rc = 0; /* stopped: all of it at the next start */
		} else if (rc < 0) {
			wd_err_prefix(err, "'%s' unchanged", ref);
			json_decref(lims);
			goto failed;
		} else {
			running = true;
			lim_now = json_is_true(json_object_get(resp, "limits"));
			rules_now = json_is_true(json_object_get(resp, "rules"));
		}
	} else {
		json_t *info = NULL;
		running = session_call(w.sbdir, "{\"op\":\"info\"}", NULL, 0, &info, NULL, NULL,
				       err) == 0;
		json_decref(info);
		memset(err, 0, sizeof(*err));
	}
	json_decref(lims);
	/* written once, atomically (a new file renamed over it) */
	json_object_set_new(nmeta, "updated", json_integer((json_int_t)time(NULL)));
	if ((rc = ws_meta_write(w.sbdir, nmeta, err)) < 0) {
		wd_err_prefix(err, "'%s': its meta.json", ref);
		if (lim_now || rules_now)
			undo_live(w.sbdir, old);
		goto failed;
	}
	size_t i;
	json_t *c;
	json_array_foreach(changes, i, c)
	{
		const char *name = json_string_value(json_object_get(c, "field"));
		const struct field *f = NULL;
		for (size_t k = 0; k < WD_ARRAY_SIZE(fields); k++)
			if (!strcmp(fields[k].name, name))
				f = &fields[k];
		bool now = running && f->when == NOW_OR_START &&
			   (f->limit		? lim_now
			    : f->rule_kind >= 0 ? rules_now
						: false);
		json_object_set_new(c, "applied", json_string(when_text(f->when, now)));
	}
	if (report) {
		json_t *r = json_pack("{s:s, s:O, s:b, s:O}", "id", w.id, "name",
				      json_object_get(meta, "name") ? json_object_get(meta, "name")
								    : json_null(),
				      "running", running, "changes", changes);
		char *t = json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII);
		*report = wd_xasprintf("%s\n", t);
		free(t);
		json_decref(r);
	}
	goto out_n;
failed:;
	/* the change was recorded: so is its failure */
	json_t *ff = json_pack("{s:O, s:s}", "changes", changes, "error", err->msg);
	struct wd_event fev = {.kind = WD_EVENT_SANDBOX,
			       .name = "session.update_failed",
			       .sandbox_id = w.id,
			       .fields = ff};
	ctx_emit(ctx, &fev);
	json_decref(ff);
out_n:
	json_decref(nmeta);
out:
	if (lk >= 0)
		close(lk);
	free(req);
	json_decref(resp);
	json_decref(meta);
	json_decref(changes);
	wd_spec_free(ns);
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}
