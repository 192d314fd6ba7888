/* api.c - the public policy functions of include/warden.h over policy/,
 * config/ and audit/.  Copies in, plain structs inside, codes filtered to
 * -EINVAL/-ENOENT/-errno at the boundary. */
#include "policy/policy.h"
#include "policy/store.h"

#include "audit/audit.h"
#include "util/escape.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

struct wd_policy {
	struct config_policy *cfg;
	struct wd_policy_secret *secrets; /* views of cfg->secrets */
};

struct wd_request {
	char *command;
	int argc;
	char **argv;
	char *workspace; /* realpath */
	char *workspace_id;
	int wfd;
	char *cwd;
	char *system_root; /* an image's rootfs, or NULL: the host */
	char *system_id;   /* "dev:ino:realpath" of system_root, for approvals */
	char **env;
	size_t nenv;
	/* where the state the command reads is (policy_request_state_roots) */
	int (*state_roots)(void *arg, const char **labels, int *fds, int max);
	void *state_arg;
	void (*state_free)(void *arg); /* the request owns state_arg when set */
	/* the workspace as the command sees it (policy_request_view_hook) */
	int (*view)(void *arg, char *why, size_t cap);
	void *view_arg;
};

struct wd_decision {
	struct policy_decision d;
	/* the print of the request's state, walked once for this decision
	 * (its id, its pending record and a retry's "near" check agree):
	 * kept with the decision, never the request, which a caller may
	 * reuse later when the files have changed */
	struct policy_state state;
	char digest[65];
	char *command; /* the string form, for the audit */
};

/* ---- policy ---- */

WD_API int
wd_policy_load(const char *path, wd_policy **out, struct wd_err *err)
{
	struct config_policy *cfg = NULL;
	int rc = path ? config_load_file(path, &cfg, err) : config_load_default(&cfg, err);
	if (rc < 0)
		return rc;
	wd_policy *p = wd_xcalloc(1, sizeof(*p));
	p->cfg = cfg;
	p->secrets = wd_xcalloc(cfg->nsecrets + 1, sizeof(*p->secrets));
	for (size_t i = 0; i < cfg->nsecrets; i++) {
		const struct config_secret *c = &cfg->secrets[i];
		p->secrets[i] = (struct wd_policy_secret){
		    .name = c->name,
		    .source = c->from,
		    .placeholder = c->placeholder,
		    .inject = (const char *const *)c->inject.v,
		    .ninject = c->inject.n,
		    .inject_basic = (const char *const *)c->inject_basic.v,
		    .ninject_basic = c->inject_basic.n,
		};
	}
	*out = p;
	return 0;
}

WD_API void
wd_policy_free(wd_policy *p)
{
	if (!p)
		return;
	config_policy_free(p->cfg);
	free(p->secrets);
	free(p);
}

WD_API char *
wd_policy_json(const wd_policy *p)
{
	json_t *j = config_policy_to_json(p->cfg);
	json_object_set_new(j, "digest", audit_json_text(p->cfg->digest));
	json_object_set_new(j, "source", audit_json_text(p->cfg->source));
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (!s)
		abort();
	return s;
}

WD_API const char *
wd_policy_digest(const wd_policy *p)
{
	return p->cfg->digest;
}

WD_API const char *
wd_policy_audit_path(const wd_policy *p)
{
	return p->cfg->audit_path;
}

WD_API unsigned
wd_policy_approval_ttl(const wd_policy *p)
{
	return (unsigned)p->cfg->approval_ttl_s;
}

WD_API const char *const *
wd_policy_network_allow(const wd_policy *p, size_t *n)
{
	if (n)
		*n = p->cfg->net.allow.n;
	return (const char *const *)p->cfg->net.allow.v;
}

static void
limits_out(const struct config_limits *l, struct wd_limits *out)
{
	out->timeout_ms = l->timeout_ms;
	out->memory_bytes = l->memory_bytes;
	out->cpu_millionths = l->cpu_millionths;
	out->output_limit = l->output_bytes;
	out->pids = l->pids;
	out->tmp_bytes = l->tmp_bytes;
}

WD_API void
wd_policy_sandbox(const wd_policy *p, struct wd_policy_sandbox *out)
{
	const struct config_sandbox *sb = &p->cfg->sandbox;
	const struct config_network *n = &p->cfg->net;
	memset(out, 0, sizeof(*out));
	limits_out(&sb->lim, &out->limits);
	out->isolation_set = sb->isolation_set;
	out->isolation = sb->isolation;
	out->require = sb->require;
	out->reproducible = sb->reproducible;
	out->pool = sb->pool;
	out->image = sb->image;
	out->net_mode_set = n->mode_set;
	out->net_mode = n->mode;
	out->net_allow = (const char *const *)n->allow.v;
	out->net_nallow = n->allow.n;
	out->net_deny = (const char *const *)n->deny.v;
	out->net_ndeny = n->deny.n;
	out->net_hosts = (const char *const *)n->hosts.v;
	out->net_nhosts = n->hosts.n;
	out->net_ranges = (const char *const *)n->ranges.v;
	out->net_nranges = n->ranges.n;
	out->allow_ports = n->ports;
	out->nallow_ports = n->nports;
	out->tls_intercept = n->tls_intercept;
	out->upstream_ca = n->upstream_ca;
	out->protect = (const char *const *)p->cfg->wprotect.v;
	out->nprotect = p->cfg->wprotect.n;
	out->secrets = p->secrets;
	out->nsecrets = p->cfg->nsecrets;
}

WD_API int
wd_policy_route(const wd_policy *p, const char *tool, enum wd_tool_class *klass,
		const char **profile, struct wd_limits *limits, struct wd_err *err)
{
	const struct config_tool *t = tool ? config_tool_find(p->cfg, tool) : NULL;
	if (limits)
		memset(limits, 0, sizeof(*limits));
	if (profile)
		*profile = NULL;
	if (!t) {
		*klass = WD_TOOL_BLOCKED;
		wd_err_set(err, WD_E_INVAL, "tool '%s' is not defined by the policy (blocked)",
			   tool ? tool : "");
		return -ENOENT;
	}
	*klass = (enum wd_tool_class)t->klass;
	const struct config_profile *pr =
	    t->profile ? config_profile_find(p->cfg, t->profile) : NULL;
	if (pr) {
		if (profile)
			*profile = pr->name;
		if (limits)
			limits_out(&pr->lim, limits);
	}
	return 0;
}

static uint64_t
pick(uint64_t given, uint64_t profile, uint64_t sandbox)
{
	return given ? given : profile ? profile : sandbox;
}

void
policy_limits_merge(const struct wd_limits *given, const struct wd_limits *profile,
		    const struct wd_limits *sandbox, struct wd_limits *out)
{
	static const struct wd_limits none;
	const struct wd_limits *pr = profile ? profile : &none, *sb = sandbox ? sandbox : &none;
	struct wd_limits l = given ? *given : none;
	l.memory_bytes = pick(l.memory_bytes, pr->memory_bytes, sb->memory_bytes);
	l.pids = pick(l.pids, pr->pids, sb->pids);
	l.cpu_millionths = pick(l.cpu_millionths, pr->cpu_millionths, sb->cpu_millionths);
	l.tmp_bytes = pick(l.tmp_bytes, pr->tmp_bytes, sb->tmp_bytes);
	l.timeout_ms = pick(l.timeout_ms, pr->timeout_ms, sb->timeout_ms);
	l.output_limit = pick(l.output_limit, pr->output_limit, sb->output_limit);
	*out = l;
}

WD_API int
wd_policy_limits(const wd_policy *p, const char *tool, const struct wd_limits *given,
		 struct wd_limits *out, struct wd_err *err)
{
	struct wd_limits profile = {0};
	enum wd_tool_class k;
	if (tool) {
		int rc = wd_policy_route(p, tool, &k, NULL, &profile, err);
		if (rc < 0)
			return rc;
	}
	struct wd_policy_sandbox ps;
	wd_policy_sandbox(p, &ps);
	policy_limits_merge(given, &profile, &ps.limits, out);
	return 0;
}

WD_API const char *
wd_policy_tool_image(const wd_policy *p, const char *tool)
{
	const struct config_tool *t = tool ? config_tool_find(p->cfg, tool) : NULL;
	return t && t->klass == CONFIG_TOOL_SANDBOX ? t->image : NULL;
}

/* ---- requests ---- */

WD_API wd_request *
wd_request_new(void)
{
	wd_request *r = wd_xcalloc(1, sizeof(*r));
	r->wfd = -1;
	return r;
}

static void
free_argv(wd_request *r)
{
	for (int i = 0; i < r->argc; i++)
		free(r->argv[i]);
	free(r->argv);
	r->argv = NULL;
	r->argc = 0;
}

WD_API void
wd_request_free(wd_request *r)
{
	if (!r)
		return;
	free(r->command);
	free_argv(r);
	free(r->workspace);
	free(r->workspace_id);
	if (r->wfd >= 0)
		close(r->wfd);
	free(r->cwd);
	free(r->system_root);
	free(r->system_id);
	if (r->state_free)
		r->state_free(r->state_arg);
	for (size_t i = 0; i < r->nenv; i++)
		free(r->env[i]);
	free(r->env);
	free(r);
}

WD_API int
wd_request_set_command(wd_request *r, const char *command, struct wd_err *err)
{
	if (!command)
		return wd_err_set(err, WD_E_INVAL, "--command: empty");
	free(r->command);
	r->command = wd_xstrdup(command);
	free_argv(r);
	return 0;
}

WD_API int
wd_request_set_argv(wd_request *r, int argc, const char *const argv[], struct wd_err *err)
{
	if (argc < 1 || !argv)
		return wd_err_set(err, WD_E_INVAL, "no command given");
	free_argv(r);
	free(r->command);
	r->command = NULL;
	r->argv = wd_xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = 0; i < argc; i++)
		r->argv[i] = wd_xstrdup(argv[i]);
	r->argc = argc;
	return 0;
}

WD_API int
wd_request_set_workspace(wd_request *r, const char *dir, struct wd_err *err)
{
	/* resolved from the directory opened (wd_dir_realpath): a link put
	 * in the path while it is resolved is not followed into it */
	wd_autofree char *real = NULL;
	int e = dir ? -wd_dir_realpath(dir, &real) : EINVAL;
	if (e == ESTALE)
		return wd_err_set(err, WD_E_INVAL,
				  "workspace %s changed while it was resolved (a link put in its "
				  "path?): refused rather than followed",
				  dir);
	if (e)
		return wd_err_sys(err, e, "workspace %s", dir ? dir : "");
	/* The same rule as `warden run`'s: what check allows, run may run. */
	int rc = policy_workspace_validate(real, err);
	if (rc < 0)
		return rc;
	/* real has no link: one there now was put since, and is not followed */
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, real, &how, sizeof(how));
	if (fd < 0)
		return wd_err_sys(err, errno, "workspace %s", real);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return wd_err_sys(err, errno, "workspace %s", real);
	}
	if (r->wfd >= 0)
		close(r->wfd);
	r->wfd = fd;
	free(r->workspace);
	r->workspace = wd_xstrdup(real);
	free(r->workspace_id);
	/* Identity: device, inode and path.  A different directory at the same
	 * path (recreated workspace) is a different workspace. */
	r->workspace_id = wd_xasprintf("%llu:%llu:%s", (unsigned long long)st.st_dev,
				       (unsigned long long)st.st_ino, real);
	return 0;
}

WD_API int
wd_request_set_cwd(wd_request *r, const char *cwd, struct wd_err *err)
{
	if (!cwd || cwd[0] == '/')
		return wd_err_set(err, WD_E_INVAL, "cwd must be relative to the workspace");
	free(r->cwd);
	r->cwd = wd_xstrdup(cwd);
	return 0;
}

WD_API int
wd_request_set_system_root(wd_request *r, const char *root, struct wd_err *err)
{
	struct stat st;
	char real[PATH_MAX];
	if (!root || root[0] != '/' || stat(root, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    !realpath(root, real))
		return wd_err_set(err, WD_E_INVAL, "system root must be an absolute directory");
	free(r->system_root);
	r->system_root = wd_xstrdup(root);
	free(r->system_id);
	/* The approval id covers the system the command runs on: the same
	 * words under another image run other programs.  Device, inode and
	 * resolved path: a store's path names the image's content digest
	 * (sha256-HEX/rootfs), and an image rebuilt, or removed and imported
	 * again, is another directory. */
	r->system_id = wd_xasprintf("%llu:%llu:%s", (unsigned long long)st.st_dev,
				    (unsigned long long)st.st_ino, real);
	return 0;
}

WD_API int
wd_request_setenv(wd_request *r, const char *name, const char *value, struct wd_err *err)
{
	if (!name || !*name || strchr(name, '=') || !value)
		return wd_err_set(err, WD_E_INVAL, "bad environment variable name '%s'",
				  name ? name : "");
	size_t nl = strlen(name);
	char *entry = wd_xasprintf("%s=%s", name, value);
	for (size_t i = 0; i < r->nenv; i++)
		if (!strncmp(r->env[i], name, nl) && r->env[i][nl] == '=') {
			free(r->env[i]);
			r->env[i] = entry;
			return 0;
		}
	r->env = wd_xrealloc(r->env, (r->nenv + 2) * sizeof(char *));
	r->env[r->nenv++] = entry;
	r->env[r->nenv] = NULL;
	return 0;
}

static int
ensure_workspace(const wd_request *r, struct wd_err *err)
{
	if (r->wfd >= 0)
		return 0;
	return wd_request_set_workspace((wd_request *)(uintptr_t)r, ".", err);
}

static void
to_internal(const wd_request *r, struct policy_request *pr)
{
	*pr = (struct policy_request){
	    .command = r->command,
	    .argc = r->argc,
	    .argv = (const char *const *)r->argv,
	    .workspace_fd = r->wfd,
	    .workspace = r->workspace,
	    .cwd = r->cwd,
	    .env = (const char *const *)r->env,
	    .nenv = r->nenv,
	    .workspace_id = r->workspace_id,
	    .system_root = r->system_root,
	    .system_id = r->system_id,
	    .state_roots = r->state_roots,
	    .state_arg = r->state_arg,
	    .view = r->view,
	    .view_arg = r->view_arg,
	};
}

void
policy_request_view_hook(struct wd_request *r, int (*fn)(void *arg, char *why, size_t cap),
			 void *arg)
{
	r->view = fn;
	r->view_arg = arg;
}

void
policy_request_state_roots(struct wd_request *r,
			   int (*fn)(void *arg, const char **labels, int *fds, int max), void *arg,
			   void (*free_arg)(void *arg))
{
	if (r->state_free)
		r->state_free(r->state_arg);
	r->state_roots = fn;
	r->state_arg = arg;
	r->state_free = free_arg;
}

/* ---- decisions ---- */

WD_API int
wd_policy_decide(const wd_policy *p, const wd_request *r, wd_decision **out, struct wd_err *err)
{
	if (!r->command && r->argc == 0)
		return wd_err_set(err, WD_E_INVAL, "no command: give -- PROG ARGS or --command");
	int rc = ensure_workspace(r, err);
	if (rc < 0)
		return rc;
	struct policy_request pr;
	to_internal(r, &pr);
	wd_decision *d = wd_xcalloc(1, sizeof(*d));
	pr.state = &d->state;
	/* the view the path checks judge in, had once for this decision and
	 * not kept: a caller may reuse the request after the files changed */
	struct policy_view view = {.fd = -1};
	pr.view_cache = &view;
	policy_decision_init(&d->d);
	rc = policy_decide(p->cfg, &pr, &d->d, err);
	if (view.fd >= 0)
		close(view.fd);
	if (rc < 0) {
		wd_decision_free(d);
		return rc;
	}
	memcpy(d->digest, p->cfg->digest, sizeof(d->digest));
	if (r->command)
		d->command = wd_xstrdup(r->command);
	*out = d;
	return 0;
}

WD_API void
wd_decision_free(wd_decision *d)
{
	if (!d)
		return;
	policy_decision_fini(&d->d);
	free(d->command);
	free(d);
}

WD_API enum wd_decision_kind
wd_decision_kind(const wd_decision *d)
{
	return (enum wd_decision_kind)d->d.kind;
}

WD_API const char *
wd_decision_rule(const wd_decision *d)
{
	return d->d.rule;
}

WD_API const char *
wd_decision_reason(const wd_decision *d)
{
	return d->d.reason;
}

WD_API const char *
wd_decision_advice(const wd_decision *d)
{
	return d->d.advice;
}

WD_API const char *
wd_decision_approval_id(const wd_decision *d)
{
	return d->d.approval_id;
}

WD_API const char *const *
wd_decision_argv(const wd_decision *d, int *argc)
{
	if (argc)
		*argc = d->d.words.argc;
	return (const char *const *)d->d.words.argv;
}

WD_API const char *
wd_decision_policy(const wd_decision *d)
{
	return d->digest;
}

/* A string of a record: audit_json_text for a front end's JSON (jansson
 * writes it: a byte that is not UTF-8 as the text \xNN), audit_json_bytes
 * for the audit trail and the event stream (util/json.h writes it:
 * "\udcXX", so a byte and its text differ). */
typedef json_t *(*text_fn)(const char *s);

static json_t *
argv_json(int argc, char *const *argv, text_fn text)
{
	json_t *a = json_array();
	for (int i = 0; i < argc; i++)
		json_array_append_new(a, text(argv[i]));
	return a;
}

static json_t *
decision_object(const wd_decision *d, text_fn text)
{
	json_t *o = json_object();
	json_object_set_new(o, "decision", text(policy_kind_name(d->d.kind)));
	json_object_set_new(o, "rule", text(d->d.rule));
	json_object_set_new(o, "reason", text(d->d.reason));
	if (d->d.advice[0])
		json_object_set_new(o, "advice", text(d->d.advice));
	if (d->d.kind == POLICY_PAUSE)
		json_object_set_new(o, "approval_id", text(d->d.approval_id));
	json_object_set_new(o, "argv", argv_json(d->d.words.argc, d->d.words.argv, text));
	json_object_set_new(o, "policy", text(d->digest));
	return o;
}

WD_API char *
wd_decision_json(const wd_decision *d)
{
	json_t *o = decision_object(d, audit_json_text);
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		abort();
	return s;
}

/* ---- approvals ---- */

static json_t *
pending_info(const wd_policy *p, const wd_request *r, const wd_decision *d, const char *audit)
{
	struct policy_request pr;
	char id[65], fields[POLICY_ID_FIELDS][65];
	to_internal(r, &pr);
	pr.state = (struct policy_state *)(uintptr_t)&d->state; /* the decision's own print */
	policy_approval_id(p->cfg, &pr, d->d.words.argc, (const char *const *)d->d.words.argv, id,
			   fields);
	json_t *o = json_object();
	json_object_set_new(o, "id", audit_json_text(id));
	json_object_set_new(o, "created", json_integer((json_int_t)time(NULL)));
	json_object_set_new(o, "argv",
			    argv_json(d->d.words.argc, d->d.words.argv, audit_json_text));
	json_object_set_new(o, "cwd", audit_json_text(r->cwd ? r->cwd : "."));
	/* The environment the request sets, values included: the id covers
	 * it and it changes what the command does (XDG_CONFIG_HOME or HOME
	 * point git at a config the model wrote, whose pushInsteadOf sends
	 * an approved push elsewhere), so the human approving must see it;
	 * two pauses differing only here looked the same.  The record stays
	 * in the user's own state directory; the audit log keeps names only */
	json_object_set_new(o, "env", argv_json((int)r->nenv, r->env, audit_json_text));
	json_object_set_new(o, "workspace", audit_json_text(r->workspace ? r->workspace : ""));
	/* what the programs come from: an image's rootfs, or the host */
	json_object_set_new(o, "system", audit_json_text(r->system_root ? r->system_root : "host"));
	/* what the state print saw: the human is told the approval covers
	 * these files as they are, and when a walk could not see them all
	 * (then no approval can match, and saying why saves a retry loop) */
	json_t *st = json_object();
	json_object_set_new(st, "entries", json_integer((json_int_t)d->state.entries));
	json_object_set_new(st, "complete", json_boolean(d->state.complete));
	/* the sandbox or session the state belongs to ("workspace (live
	 * ID)"): its home is its own, and the human approves it there */
	json_object_set_new(st, "where", audit_json_text(d->state.where));
	if (!d->state.complete)
		json_object_set_new(st, "unseen", audit_json_text(d->state.unseen));
	/* the walk stopped at approvals.max_state_entries: the human is told
	 * which bound, in warden's words (unseen may be a model's name) */
	if (d->state.bound)
		json_object_set_new(st, "bound", json_integer((json_int_t)d->state.bound));
	json_object_set_new(o, "state", st);
	json_object_set_new(o, "rule", audit_json_text(d->d.rule));
	json_object_set_new(o, "reason", audit_json_text(d->d.reason));
	json_object_set_new(o, "policy", audit_json_text(p->cfg->digest));
	json_object_set_new(o, "policy_source", audit_json_text(p->cfg->source));
	json_object_set_new(o, "ttl", json_integer((json_int_t)p->cfg->approval_ttl_s));
	if (audit)
		/* a path to open again, not text to show: kept exact (a path
		 * that is not UTF-8 is dropped, as before) */
		json_object_set_new(o, "audit", json_string(audit));
	json_t *f = json_object();
	for (int i = 0; i < POLICY_ID_FIELDS; i++)
		json_object_set_new(f, policy_id_field_names[i], audit_json_text(fields[i]));
	json_object_set_new(o, "fields", f);
	return o;
}

WD_API int
wd_approval_pending(const wd_policy *p, const wd_request *r, const wd_decision *d,
		    const char *audit_path, struct wd_err *err)
{
	char state[PATH_MAX];
	if (d->d.kind != POLICY_PAUSE)
		return 0;
	int rc = wd_state_dir(state, sizeof(state), err);
	if (rc < 0)
		return rc;
	char abs_audit[PATH_MAX];
	if (audit_path && audit_path[0] != '/' && getcwd(abs_audit, sizeof(abs_audit))) {
		size_t n = strlen(abs_audit);
		snprintf(abs_audit + n, sizeof(abs_audit) - n, "/%s", audit_path);
		audit_path = abs_audit;
	}
	json_t *info = pending_info(p, r, d, audit_path);
	rc = policy_pending_record(state, d->d.approval_id, info, err);
	json_decref(info);
	return rc;
}

/* Grant, audit, and hand back the record (with "granted" and "expires")
 * and the full id; *info is NULL on failure. */
static int
approval_grant(const char *id, unsigned ttl_s, wd_audit *audit, json_t **out, char full[65],
	       uint64_t *ttl_out, struct wd_err *err)
{
	char state[PATH_MAX];
	json_t *info = NULL;
	*out = NULL;
	int rc = wd_state_dir(state, sizeof(state), err);
	if (rc < 0)
		return rc;
	if ((rc = policy_pending_find(state, id, full, &info, err)) < 0)
		return rc;
	uint64_t ttl = ttl_s;
	if (!ttl) {
		json_t *t = json_object_get(info, "ttl");
		ttl = json_is_integer(t) && json_integer_value(t) > 0
			  ? (uint64_t)json_integer_value(t)
			  : 600;
	}
	rc = policy_approval_grant(state, full, info, ttl, err);
	if (rc == 0) {
		wd_audit *own = NULL;
		const char *ap = json_string_value(json_object_get(info, "audit"));
		if (!audit && ap && wd_audit_open(ap, &own, err) == 0)
			audit = own;
		char detail[160];
		snprintf(detail, sizeof(detail), "ttl %llu s", (unsigned long long)ttl);
		if (audit)
			rc = wd_audit_approval(audit, "granted", full, detail, err);
		wd_audit_close(own);
	}
	if (rc < 0) {
		json_decref(info);
		return rc;
	}
	*out = info;
	*ttl_out = ttl;
	return 0;
}

WD_API int
wd_approval_grant(const char *id, unsigned ttl_s, wd_audit *audit, char **summary,
		  struct wd_err *err)
{
	char full[65];
	json_t *info = NULL;
	uint64_t ttl = 0;
	int rc = approval_grant(id, ttl_s, audit, &info, full, &ttl, err);
	if (rc == 0 && summary) {
		/* Every field escaped (util/escape.h): the argv, the working
		 * directory and the reason (which quotes arguments) are the
		 * model's choice, and the human approving must see every byte
		 * with nothing driving their terminal: an ESC[2K or a CR hid
		 * an argument, U+202E reversed one (docs/threat-model.md). */
		json_t *argv = json_object_get(info, "argv");
		size_t i;
		json_t *v;
		char *line = NULL;
		size_t ll = 0;
		FILE *lf = open_memstream(&line, &ll);
		if (!lf)
			abort();
		json_array_foreach(argv, i, v)
		{
			const char *s = json_string_value(v);
			if (i)
				fputc(' ', lf);
			wd_esc_text_put(lf, s ? s : "", s ? strlen(s) : 0, WD_ESC_WORD, 0);
		}
		json_array_foreach(json_object_get(info, "env"), i, v)
		{
			/* the environment the id covers (pending_info) */
			const char *s = json_string_value(v);
			fputs(i ? " " : "\n  env       ", lf);
			wd_esc_text_put(lf, s ? s : "", s ? strlen(s) : 0, WD_ESC_WORD, 0);
		}
		if (fclose(lf) != 0 || !line)
			abort();
		const char *fields[] = {"workspace",	 "cwd",	   "system",
					"policy_source", "policy", "reason"};
		char *shown[WD_ARRAY_SIZE(fields)];
		for (size_t k = 0; k < WD_ARRAY_SIZE(fields); k++) {
			const char *s = json_string_value(json_object_get(info, fields[k]));
			shown[k] = wd_esc_text(s ? s : "", s ? strlen(s) : 0, 0, 0);
		}
		*summary = wd_xasprintf(
		    "approved once, for %llu s: %s\n  id        %s\n  workspace %s\n  cwd       "
		    "%s\n  system    %s\n  policy    %s (%s)\n  reason    %s",
		    (unsigned long long)ttl, line, full, shown[0], shown[1],
		    /* a pending record from before the field has none */
		    shown[2][0] ? shown[2] : "host", shown[3], shown[4], shown[5]);
		for (size_t k = 0; k < WD_ARRAY_SIZE(fields); k++)
			free(shown[k]);
		free(line);
	}
	json_decref(info);
	return rc;
}

WD_API int
wd_approval_grant_json(const char *id, unsigned ttl_s, wd_audit *audit, char **json,
		       struct wd_err *err)
{
	char full[65];
	json_t *info = NULL;
	uint64_t ttl = 0;
	*json = NULL;
	int rc = approval_grant(id, ttl_s, audit, &info, full, &ttl, err);
	if (rc < 0)
		return rc;
	/* The record's own strings were stored through audit_json_text (valid
	 * UTF-8, the model's bytes kept visible), and JSON escapes every
	 * control character (and, below, every non-ASCII one): a reader of
	 * this object sees what was approved and cannot be driven by it. */
	json_t *o = json_object();
	json_object_set_new(o, "id", json_string(full));
	const char *copy[] = {"argv",	"env",		 "cwd",	 "workspace", "system",	 "state",
			      "policy", "policy_source", "rule", "reason",    "granted", "expires"};
	for (size_t k = 0; k < WD_ARRAY_SIZE(copy); k++) {
		json_t *v = json_object_get(info, copy[k]);
		json_object_set(o, copy[k], v ? v : json_null());
	}
	json_object_set_new(o, "ttl", json_integer((json_int_t)ttl));
	/* ASCII only: a U+202E in an argument would otherwise reach a
	 * terminal that shows this object raw and reverse what follows. */
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	json_decref(o);
	json_decref(info);
	if (!s)
		abort();
	*json = s;
	return 0;
}

WD_API int
wd_approval_consume(const wd_policy *p, const wd_request *r, const wd_decision *d, wd_audit *audit,
		    struct wd_err *err)
{
	char state[PATH_MAX];
	if (d->d.kind != POLICY_PAUSE)
		return 0;
	int rc = wd_state_dir(state, sizeof(state), err);
	if (rc < 0)
		return rc;
	json_t *info = NULL;
	rc = policy_approval_take(state, d->d.approval_id, &info, err);
	json_decref(info);
	if (rc < 0)
		return rc;
	if (rc == POLICY_APPROVAL_OK) {
		rc = wd_audit_approval(audit, "consumed", d->d.approval_id, NULL, err);
		return rc < 0 ? rc : 1;
	}
	if (rc == POLICY_APPROVAL_EXPIRED) {
		rc = wd_audit_approval(audit, "expired", d->d.approval_id, NULL, err);
		return rc < 0 ? rc : 0;
	}
	/* None for this exact request: is there one for a near request?  Say
	 * so, so the human sees why the approval did not apply. */
	struct policy_request pr;
	char id[65], fields[POLICY_ID_FIELDS][65], near_id[65], differs[128];
	to_internal(r, &pr);
	pr.state = (struct policy_state *)(uintptr_t)&d->state;
	policy_approval_id(p->cfg, &pr, d->d.words.argc, (const char *const *)d->d.words.argv, id,
			   fields);
	if (policy_approval_near(state, fields, d->d.words.argc,
				 (const char *const *)d->d.words.argv, near_id, differs,
				 sizeof(differs))) {
		char detail[512];
		snprintf(detail, sizeof(detail),
			 "approval %s does not cover request %s: they differ in %s%s", near_id,
			 d->d.approval_id, differs,
			 strstr(differs, "state")
			     ? " (a file the command can read changed after the pause; what "
			       "was approved is not what would run)"
			     : "");
		rc = wd_audit_approval(audit, "mismatched", near_id, detail, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

WD_API bool
wd_approval_recorded(const wd_decision *d)
{
	char state[PATH_MAX];
	if (d->d.kind != POLICY_PAUSE || wd_state_dir(state, sizeof(state), NULL) < 0)
		return false;
	return policy_approval_peek(state, d->d.approval_id) == POLICY_APPROVAL_OK;
}

/* ---- audit events that need the request and decision ---- */

json_t *
policy_decision_argv_json(const wd_decision *d)
{
	return argv_json(d->d.words.argc, d->d.words.argv, audit_json_bytes);
}

json_t *
policy_decision_event(const wd_request *r, const wd_decision *d)
{
	json_t *ev = json_object();
	json_object_set_new(ev, "event", audit_json_bytes("decision"));
	json_t *req = json_object();
	if (r->command)
		json_object_set_new(req, "command", audit_json_bytes(r->command));
	else
		json_object_set_new(req, "argv", argv_json(r->argc, r->argv, audit_json_bytes));
	json_object_set_new(req, "workspace", audit_json_bytes(r->workspace ? r->workspace : ""));
	json_object_set_new(req, "cwd", audit_json_bytes(r->cwd ? r->cwd : "."));
	json_t *names = json_array();
	for (size_t i = 0; i < r->nenv; i++) {
		/* Names only: values can be secrets (docs/threat-model.md, 7). */
		const char *eq = strchr(r->env[i], '=');
		wd_autofree char *name = wd_xasprintf("%.*s", (int)(eq - r->env[i]), r->env[i]);
		json_array_append_new(names, audit_json_bytes(name));
	}
	json_object_set_new(req, "env", names);
	json_object_set_new(ev, "request", req);
	json_t *dec = decision_object(d, audit_json_bytes);
	json_object_update(ev, dec);
	json_decref(dec);
	return ev;
}

WD_API int
wd_audit_decision(wd_audit *a, const wd_request *r, const wd_decision *d, struct wd_err *err)
{
	if (!a)
		return 0;
	json_t *ev = policy_decision_event(r, d);
	int rc = audit_append(a->log, ev, err);
	json_decref(ev);
	return rc < 0 ? rc : 0;
}

WD_API int
wd_audit_result(wd_audit *a, const wd_decision *d, const char *result_json, struct wd_err *err)
{
	if (!a)
		return 0;
	json_t *ev = json_object();
	json_object_set_new(ev, "event", audit_json_bytes("result"));
	if (d)
		json_object_set_new(ev, "argv",
				    argv_json(d->d.words.argc, d->d.words.argv, audit_json_bytes));
	json_error_t je;
	json_t *res = result_json ? json_loads(result_json, 0, &je) : NULL;
	/* The record is of what ran and how it ended, not of what it printed:
	 * output can hold file contents and secrets, and is unbounded in
	 * number of runs.  Keep the byte counts, drop the windows. */
	static const char *const streams[] = {"stdout", "stderr"};
	for (size_t i = 0; res && i < 2; i++) {
		json_t *s = json_object_get(res, streams[i]);
		if (json_is_object(s))
			json_object_del(s, "data");
	}
	json_object_set_new(ev, "result", res ? res : json_null());
	int rc = audit_append(a->log, ev, err);
	json_decref(ev);
	return rc < 0 ? rc : 0;
}
