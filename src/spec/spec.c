/* spec/spec: the run description and its setters. */
#include "spec/spec.h"
#include "net/net.h"
#include "policy/policy.h"

#include <limits.h>
#include <string.h>
#include <sys/stat.h>

WD_API wd_spec *
wd_spec_new(void)
{
	wd_spec *s = wd_xcalloc(1, sizeof(*s));
	s->stdin_fd = -1;
	s->stream_fd[1] = s->stream_fd[2] = -1;
	s->isolation = WD_ISOLATION_CONTAINER;
	s->time_ns = true;
	s->tree_ws = s->tree_home = s->tree_tmp = -1;
	wd_spec_set_limits(s, NULL);
	return s;
}

WD_API void
wd_spec_free(wd_spec *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->argc; i++)
		free(s->argv[i]);
	free(s->argv);
	free(s->workspace);
	for (size_t i = 0; i < s->nbinds; i++) {
		free(s->binds[i].src);
		free(s->binds[i].dst);
		free(s->binds[i].real);
	}
	free(s->binds);
	for (size_t i = 0; i < s->nenv; i++)
		free(s->env[i]);
	free(s->env);
	free(s->ports);
	free(s->term);
	net_rules_free(s->net_rules);
	for (size_t i = 0; i < s->nrules; i++)
		free(s->rules[i].text);
	free(s->rules);
	free(s->upstream_ca);
	net_secrets_free(s->secrets);
	for (size_t i = 0; i < s->nsecret_src; i++) {
		free(s->secret_src[i].name);
		free(s->secret_src[i].source);
	}
	free(s->secret_src);
	for (size_t i = 0; i < s->nplaceholder_src; i++)
		free(s->placeholder_src[i]);
	free(s->placeholder_src);
	for (size_t i = 0; i < s->nprotect; i++)
		free(s->protect[i]);
	free(s->protect);
	free(s->image);
	free(s->image_root);
	free(s->image_digest);
	free(s->image_user);
	free(s);
}

static char **
copy_strv(char *const *v, size_t n, bool terminate)
{
	if (!v)
		return NULL;
	char **c = wd_xcalloc(n + (terminate ? 1 : 0) + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		c[i] = wd_xstrdup(v[i]);
	return c;
}

bool
spec_user_name_ok(const char *u)
{
	size_t n = strlen(u);
	if (n == 0 || n > 32 || !((u[0] >= 'a' && u[0] <= 'z') || u[0] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(u[i] >= 'a' && u[i] <= 'z') && !(u[i] >= '0' && u[i] <= '9') && u[i] != '_' &&
		    u[i] != '-')
			return false;
	/* uid 1000 under another name, never root's: the passwd entries
	 * warden writes for root and nobody stay theirs; the name is
	 * written into /etc/passwd and /etc/group, so no ':' or newline */
	return strcmp(u, "root") && strcmp(u, "nobody");
}

int
spec_set_image_root(wd_spec *s, const char *ref, const char *root, struct wd_err *err)
{
	const char *hex = !strncmp(ref, "sha256:", 7) ? ref + 7 : "";
	char tail[96];
	snprintf(tail, sizeof(tail), "/sha256-%s/rootfs", hex);
	size_t n = strlen(root), t = strlen(tail);
	struct stat st;
	if (strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64 || root[0] != '/' ||
	    n <= t || strcmp(root + n - t, tail) || strstr(root, "/../") || stat(root, &st) < 0 ||
	    !S_ISDIR(st.st_mode))
		return wd_err_set(err, WD_E_INVAL,
				  "the session's image %s is not stored at %s (removed, or "
				  "meta.json damaged)",
				  ref, root);
	free(s->image);
	free(s->image_root);
	free(s->image_digest);
	s->image = wd_xstrdup(ref);
	s->image_root = wd_xstrdup(root);
	s->image_digest = wd_xstrdup(hex);
	return 0;
}

wd_spec *
spec_copy(const wd_spec *s)
{
	wd_spec *c = wd_xcalloc(1, sizeof(*c));
	*c = *s;
	c->argv = copy_strv(s->argv, (size_t)s->argc, true);
	c->workspace = s->workspace ? wd_xstrdup(s->workspace) : NULL;
	c->binds = s->nbinds ? wd_xcalloc(s->nbinds, sizeof(*c->binds)) : NULL;
	for (size_t i = 0; i < s->nbinds; i++)
		c->binds[i] = (struct spec_bind){
		    wd_xstrdup(s->binds[i].src), wd_xstrdup(s->binds[i].dst), s->binds[i].rw,
		    s->binds[i].real ? wd_xstrdup(s->binds[i].real) : NULL};
	c->env = copy_strv(s->env, s->nenv, false);
	c->ports = s->nports ? wd_xcalloc(s->nports, sizeof(uint16_t)) : NULL;
	if (s->nports)
		memcpy(c->ports, s->ports, s->nports * sizeof(uint16_t));
	c->term = s->term ? wd_xstrdup(s->term) : NULL;
	c->upstream_ca = s->upstream_ca ? wd_xstrdup(s->upstream_ca) : NULL;
	c->image = s->image ? wd_xstrdup(s->image) : NULL;
	c->image_root = s->image_root ? wd_xstrdup(s->image_root) : NULL;
	c->image_digest = s->image_digest ? wd_xstrdup(s->image_digest) : NULL;
	c->image_user = s->image_user ? wd_xstrdup(s->image_user) : NULL;
	/* one set of values in locked memory, however many copies: a copy
	 * that changes it gets its own first (own_secrets) */
	c->secrets = net_secrets_ref(s->secrets);
	c->secret_src = s->nsecret_src ? wd_xcalloc(s->nsecret_src, sizeof(*c->secret_src)) : NULL;
	for (size_t i = 0; i < s->nsecret_src; i++)
		c->secret_src[i] = (struct spec_secret_src){wd_xstrdup(s->secret_src[i].name),
							    wd_xstrdup(s->secret_src[i].source)};
	c->placeholder_src = copy_strv(s->placeholder_src, s->nplaceholder_src, false);
	c->protect = copy_strv(s->protect, s->nprotect, false);
	/* the rules were validated when added: rebuilding them cannot fail */
	c->net_rules = NULL;
	c->rules = NULL;
	c->nrules = 0;
	for (size_t i = 0; i < s->nrules; i++)
		if (wd_spec_add_net_rule(c, s->rules[i].kind, s->rules[i].text, NULL) < 0)
			abort();
	return c;
}

WD_API int
wd_spec_set_argv(wd_spec *s, int argc, const char *const argv[], struct wd_err *err)
{
	if (argc < 1 || !argv[0] || !argv[0][0])
		return wd_err_set(err, WD_E_INVAL, "no program given");
	for (int i = 0; i < s->argc; i++)
		free(s->argv[i]);
	free(s->argv);
	s->argv = wd_xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = 0; i < argc; i++)
		s->argv[i] = wd_xstrdup(argv[i]);
	s->argc = argc;
	return 0;
}

bool
spec_is_system_dir(const char *real)
{
	static const char *const system_dirs[] = {"/etc",   "/usr",   "/bin",	 "/sbin", "/lib",
						  "/lib32", "/lib64", "/libx32", "/boot", "/proc",
						  "/sys",   "/dev",   "/run"};
	bool system = !strcmp(real, "/") || !strcmp(real, "/root") || !strcmp(real, "/var");
	for (size_t i = 0; i < WD_ARRAY_SIZE(system_dirs) && !system; i++) {
		size_t n = strlen(system_dirs[i]);
		system = !strncmp(real, system_dirs[i], n) && (real[n] == '\0' || real[n] == '/');
	}
	return system;
}

WD_API int
wd_spec_set_workspace(wd_spec *s, const char *dir, struct wd_err *err)
{
	/* Resolved from the directory opened, not by a second walk of the
	 * path: a caller that checked the path (the server, against the
	 * directory it holds, handing /proc/self/fd/N of it) would otherwise
	 * have a link planted between its check and this walk followed. */
	char *real = NULL;
	int e = dir ? -wd_dir_realpath(dir, &real) : EINVAL;
	if (e) {
		int rc = e == ESTALE
			     ? wd_err_set(err, WD_E_INVAL,
					  "workspace '%s' changed while it was resolved (a "
					  "link put in its path?): refused rather than followed",
					  dir)
			 : e == ENOTDIR
			     ? wd_err_set(err, WD_E_INVAL, "workspace '%s' is not a directory", dir)
			     : wd_err_sys(err, e, "workspace '%s'", dir ? dir : "");
		if (err)
			err->code = WD_E_INVAL;
		return rc;
	}
	/* a directory handed by descriptor is named by its path */
	if (!strncmp(dir, "/proc/self/fd/", 14))
		dir = real;
	/* The workspace is writable by the sandbox, and as root it is
	 * idmapped so the sandbox writes as its owner: a system directory
	 * there would hand the sandbox the host (/etc/passwd, /usr/bin). */
	struct wd_err werr = {0};
	if (policy_workspace_validate(real, &werr) < 0) {
		int rc = wd_err_set(err, WD_E_INVAL, "workspace '%s': %s", dir, werr.msg);
		free(real);
		return rc;
	}
	struct stat st;
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		free(real);
		return wd_err_set(err, WD_E_INVAL, "workspace '%s' is not a directory", dir);
	}
	free(s->workspace);
	s->workspace = real;
	return 0;
}

WD_API void
wd_spec_set_isolation(wd_spec *s, enum wd_isolation level)
{
	s->isolation = level;
	s->isolation_given = true;
}

/* The defaults, here only (README and warden(1) say them to the user). */
static const struct wd_limits limit_defaults = {
    .memory_bytes = 512ULL << 20,
    .pids = 128,
    .cpu_millionths = 1000000,
    .tmp_bytes = 128ULL << 20,
    .timeout_ms = 30000,
    .output_limit = 64 << 10,
    .nofile = 1024,
    .fsize = 1ULL << 30,
};

WD_API void
wd_limits_defaults(struct wd_limits *out)
{
	*out = limit_defaults;
}

WD_API void
wd_spec_set_limits(wd_spec *s, const struct wd_limits *l)
{
	s->lim = limit_defaults;
	memset(&s->lim_given, 0, sizeof(s->lim_given));
	if (!l)
		return;
	s->lim_given = *l;
#define TAKE(f)                                                                                    \
	do {                                                                                       \
		if (l->f)                                                                          \
			s->lim.f = l->f;                                                           \
	} while (0)
	TAKE(memory_bytes);
	TAKE(pids);
	TAKE(cpu_millionths);
	TAKE(tmp_bytes);
	TAKE(timeout_ms);
	TAKE(output_limit);
	TAKE(nofile);
	TAKE(fsize);
#undef TAKE
}

/* Collapse repeated slashes and drop a trailing one: "//proc/" -> "/proc"
 * (so the checks below cannot be sidestepped by spelling). */
static char *
normalize(const char *p)
{
	char *n = wd_xmalloc(strlen(p) + 1), *o = n;
	for (const char *c = p; *c; c++)
		if (!(*c == '/' && o > n && o[-1] == '/'))
			*o++ = *c;
	if (o > n + 1 && o[-1] == '/')
		o--;
	*o = '\0';
	return n;
}

/* A bind destination names a place in the jail's own tmpfs root: not the
 * root itself, not under /proc or /dev (the jail's own), and not in
 * /workspace, whose content the sandbox controlled in earlier runs: a
 * symlink planted there would steer the mount point (and its mkdir) to
 * wherever it points while the host tree is still in view.  Binds into
 * another bind's destination are refused by jail_prep_new for the same
 * reason. */
static bool
bad_jail_path(const char *p)
{
	if (p[0] != '/' || !strcmp(p, "/"))
		return true;
	for (const char *c = p; (c = strchr(c, '/')); c++) {
		if (!strncmp(c, "/..", 3) && (c[3] == '/' || !c[3]))
			return true;
		if (!strncmp(c, "/.", 2) && (c[2] == '/' || !c[2]))
			return true;
	}
	static const char *const reserved[] = {"/proc", "/dev", "/workspace"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(reserved); i++) {
		size_t n = strlen(reserved[i]);
		if (!strncmp(p, reserved[i], n) && (p[n] == '\0' || p[n] == '/'))
			return true;
	}
	return false;
}

/* Lexically absolute: "rel/x" becomes "<cwd>/rel/x"; nothing is resolved
 * here.  Symlinks are followed later, by jail/plan.c's safe_resolve(),
 * which refuses to follow one inside a tree the sandbox can write. */
static char *
absolute(const char *p)
{
	if (p[0] == '/')
		return wd_xstrdup(p);
	char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return NULL;
	char *a = wd_xasprintf("%s/%s", cwd, p);
	free(cwd);
	return a;
}

WD_API int
wd_spec_add_bind(wd_spec *s, const char *src, const char *dst, bool rw, struct wd_err *err)
{
	const char *opt = rw ? "--bind" : "--ro-bind";
	struct stat st;
	if (stat(src, &st) < 0) {
		int rc = wd_err_sys(err, errno, "%s: source '%s'", opt, src);
		if (err)
			err->code = WD_E_INVAL;
		return rc;
	}
	/* Files and directories only: a FIFO would block whoever opens it in
	 * the jail (or warden, were it ever read), a socket or device is a
	 * door to a host service. */
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return wd_err_set(err, WD_E_INVAL,
				  "%s: source '%s' is not a regular file or a directory", opt, src);
	if (rw) {
		/* The same rule as for the workspace: a writable system
		 * directory (or /) is the host itself. */
		char *real = realpath(src, NULL);
		bool sys = real && spec_is_system_dir(real);
		/* and the workspace's rule for the approval store: a sandbox
		 * that writes it approves its own pauses (policy/workspace.c) */
		char store[PATH_MAX];
		bool holds = !sys && real && policy_store_within(real, store, sizeof(store));
		free(real);
		if (sys)
			return wd_err_set(
			    err, WD_E_INVAL,
			    "%s: source '%s' is a system directory; bind it read-only "
			    "(--ro-bind)",
			    opt, src);
		if (holds)
			return wd_err_set(
			    err, WD_E_INVAL,
			    "%s: source '%s' holds warden's state directory %s, where "
			    "a sandbox could write its own approvals; bind it "
			    "read-only (--ro-bind) or set WARDEN_STATE_DIR elsewhere",
			    opt, src, store);
	}
	char *abs = absolute(src);
	if (!abs)
		return wd_err_sys(err, errno, "%s: source '%s'", opt, src);
	char *norm = normalize(dst ? dst : abs);
	if (bad_jail_path(norm)) {
		free(abs);
		free(norm);
		return wd_err_set(err, WD_E_INVAL,
				  "%s: destination '%s' must be an absolute path without . or .. "
				  "and not /, /proc, /dev or in /workspace",
				  opt, dst ? dst : src);
	}
	s->binds = wd_xrealloc(s->binds, (s->nbinds + 1) * sizeof(*s->binds));
	s->binds[s->nbinds] = (struct spec_bind){.src = abs, .dst = norm, .rw = rw};
	s->nbinds++;
	return 0;
}

WD_API int
wd_spec_setenv(wd_spec *s, const char *name, const char *value, struct wd_err *err)
{
	return wd_env_set(&s->env, &s->nenv, name, value, err);
}

WD_API int
wd_spec_allow_port(wd_spec *s, unsigned port, struct wd_err *err)
{
	if (port == 0 || port > 65535)
		return wd_err_set(err, WD_E_INVAL, "bad port %u", port);
	s->ports = wd_xrealloc(s->ports, (s->nports + 1) * sizeof(uint16_t));
	s->ports[s->nports++] = (uint16_t)port;
	return 0;
}

WD_API void
wd_spec_set_stdin(wd_spec *s, int fd)
{
	s->stdin_fd = fd;
}

WD_API void
wd_spec_set_stream(wd_spec *s, int out_fd, int err_fd)
{
	s->stream_fd[1] = out_fd;
	s->stream_fd[2] = err_fd;
}

WD_API void
wd_spec_set_term(wd_spec *s, const char *term)
{
	free(s->term);
	s->term = term ? wd_xstrdup(term) : NULL;
}

WD_API void
wd_spec_set_net(wd_spec *s, enum wd_net_mode mode)
{
	s->net = mode;
	s->net_given = true;
}

WD_API int
wd_spec_add_net_rule(wd_spec *s, enum wd_net_rule kind, const char *rule, struct wd_err *err)
{
	if (!s->net_rules && net_rules_new(&s->net_rules) < 0)
		return wd_err_set(err, WD_E_INTERNAL, "out of memory");
	int rc;
	switch (kind) {
	case WD_NET_ALLOW:
		rc = net_rules_add_allow(s->net_rules, rule, NULL, err);
		break;
	case WD_NET_DENY:
		rc = net_rules_add_deny(s->net_rules, rule, err);
		break;
	case WD_NET_HOST:
		rc = net_rules_add_host(s->net_rules, rule, err);
		break;
	case WD_NET_RANGE:
		rc = net_rules_add_range(s->net_rules, rule, err);
		break;
	default:
		return wd_err_set(err, WD_E_INVAL, "unknown network rule kind %d", (int)kind);
	}
	if (rc < 0)
		return rc;
	s->rules = wd_xrealloc(s->rules, (s->nrules + 1) * sizeof(*s->rules));
	s->rules[s->nrules++] = (struct spec_rule){kind, wd_xstrdup(rule)};
	return 0;
}

WD_API void
wd_spec_set_tls_intercept(wd_spec *s, bool on, const char *upstream_ca_file)
{
	s->tls_intercept = on;
	free(s->upstream_ca);
	s->upstream_ca = upstream_ca_file ? wd_xstrdup(upstream_ca_file) : NULL;
}

WD_API void
wd_spec_set_event_handler(wd_spec *s, wd_net_event_fn fn, void *data)
{
	s->event_fn = fn;
	s->event_data = data;
}

WD_API void
wd_spec_set_best_effort(wd_spec *s, bool on)
{
	s->best_effort = on;
}

WD_API void
wd_spec_set_reproducible(wd_spec *s, bool on)
{
	s->reproducible = on;
}

WD_API void
wd_spec_set_time_namespace(wd_spec *s, bool on)
{
	s->time_ns = on;
}

/* ---- secrets ---- */

/* The spec's own set of secrets, to change: made on first use, copied if
 * another spec or a sandbox shares it. */
static struct net_secrets *
own_secrets(wd_spec *s, struct wd_err *err)
{
	if (!s->secrets) {
		net_secrets_new(&s->secrets);
	} else if (net_secrets_shared(s->secrets)) {
		struct net_secrets *c;
		if (net_secrets_clone(s->secrets, &c, err) < 0)
			return NULL;
		net_secrets_free(s->secrets);
		s->secrets = c;
	}
	return s->secrets;
}

WD_API int
wd_spec_add_secret(wd_spec *s, const char *name, const char *source, struct wd_err *err)
{
	if (!name || !source)
		return wd_err_set(err, WD_E_INVAL, "secret: a name and a source are needed");
	struct net_secrets *set = own_secrets(s, err);
	if (!set)
		return -ENOMEM;
	int rc = net_secrets_add_from(set, name, source, err);
	if (rc < 0 && err && rc != -ENOMEM)
		err->code = WD_E_INVAL;
	if (rc == 0)
		spec_secret_src_add(s, name, source);
	return rc == -EEXIST ? -EINVAL : rc;
}

void
spec_secret_src_add(wd_spec *s, const char *name, const char *source)
{
	/* a file by its absolute path: a session's monitor and a later
	 * `warden start` read it from elsewhere */
	char *abs = source[0] == '@' ? realpath(source + 1, NULL) : NULL;
	s->secret_src = wd_xrealloc(s->secret_src, (s->nsecret_src + 1) * sizeof(*s->secret_src));
	s->secret_src[s->nsecret_src++] = (struct spec_secret_src){
	    wd_xstrdup(name), abs ? wd_xasprintf("@%s", abs) : wd_xstrdup(source)};
	free(abs);
}

int
spec_secrets_load(wd_spec *s, spec_secret_get get, void *data, struct wd_err *err)
{
	if (!s->secrets_pending)
		return 0;
	struct net_secrets *set = own_secrets(s, err);
	if (!set)
		return -ENOMEM;
	size_t cap = NET_SECRET_MAX + 3, len = 0;
	char *buf = wd_secure_alloc(cap, err);
	if (!buf)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < s->nsecret_src && rc == 0; i++) {
		const struct spec_secret_src *v = &s->secret_src[i];
		rc = get ? get(data, v->name, v->source, buf, cap, &len, err)
			 : net_secret_read(v->source, buf, cap, &len, err);
		if (rc == 0)
			rc = net_secrets_add(set, v->name, buf, len, err);
		if (rc < 0) {
			wd_err_prefix(err, "secret %s (from %s)", v->name, v->source);
			if (err)
				err->code = WD_E_INVAL;
			rc = -EINVAL;
		}
	}
	wd_secure_free(buf, cap);
	for (size_t i = 0; i < s->nplaceholder_src && rc == 0; i++) {
		const char *kv = s->placeholder_src[i], *eq = strchr(kv, '=');
		char *var = strndup(kv, (size_t)(eq - kv));
		rc = net_secrets_add_placeholder(set, var, eq + 1, err);
		free(var);
	}
	if (rc == 0)
		s->secrets_pending = false;
	return rc;
}

WD_API int
wd_spec_add_inject(wd_spec *s, enum wd_inject_kind kind, const char *rule, struct wd_err *err)
{
	if (!rule || (kind != WD_INJECT_HEADER && kind != WD_INJECT_BASIC))
		return wd_err_set(err, WD_E_INVAL, "inject: unknown rule kind");
	struct net_secrets *set = own_secrets(s, err);
	if (!set)
		return -ENOMEM;
	return net_secrets_add_inject(
	    set, kind == WD_INJECT_BASIC ? NET_INJECT_BASIC : NET_INJECT_HEADER, rule, err);
}

WD_API int
wd_spec_add_placeholder(wd_spec *s, const char *var, const char *name, struct wd_err *err)
{
	if (!var || !name || !wd_env_name_ok(var))
		return wd_err_set(err, WD_E_INVAL,
				  "placeholder: bad environment variable name (a letter or _, "
				  "then letters, digits and _)");
	struct net_secrets *set = own_secrets(s, err);
	if (!set)
		return -ENOMEM;
	int rc = net_secrets_add_placeholder(set, var, name, err);
	if (rc == 0) {
		s->placeholder_src =
		    wd_xrealloc(s->placeholder_src, (s->nplaceholder_src + 1) * sizeof(char *));
		s->placeholder_src[s->nplaceholder_src++] = wd_xasprintf("%s=%s", var, name);
	}
	return rc;
}

int
spec_jail_env(const wd_spec *s, const char ***out, size_t *n, struct wd_err *err)
{
	size_t nsec = net_secrets_count(s->secrets), nvar = 0;
	/* a session's secrets are read at its start: never a sandbox
	 * with inject rules and no values behind them */
	if (s->secrets_pending)
		return wd_err_set(err, WD_E_INVAL,
				  "the session's secrets were not read from their sources");
	while (net_secrets_env(s->secrets, nvar))
		nvar++;
	if (nsec && s->net != WD_NET_PROXY)
		return wd_err_set(err, WD_E_INVAL,
				  "--secret needs --net allow: the credentials are added by "
				  "warden's proxy, the sandbox's only way out");
	const char **env = wd_xcalloc(s->nenv + nvar + 1, sizeof(char *));
	for (size_t i = 0; i < s->nenv; i++)
		env[i] = s->env[i];
	for (size_t k = 0; k < nvar; k++) {
		const char *kv = net_secrets_env(s->secrets, k);
		size_t nl = strcspn(kv, "=");
		for (size_t i = 0; i < s->nenv; i++)
			if (!strncmp(s->env[i], kv, nl + 1)) {
				free(env);
				return wd_err_set(err, WD_E_INVAL,
						  "placeholder variable %.*s is also set with "
						  "--setenv/--pass-env",
						  (int)nl, kv);
			}
		env[s->nenv + k] = kv;
	}
	*out = env;
	*n = s->nenv + nvar;
	return 0;
}

char *
spec_plan_secrets(const wd_spec *s)
{
	const struct net_secrets *set = s->secrets;
	size_t n = net_secrets_count(set), nr = net_secrets_rule_count(set);
	char *text = wd_xstrdup("");
	for (size_t i = 0; i < n; i++) {
		char *t = wd_xasprintf("%ssecret %s: read by warden, never in the sandbox\n", text,
				       net_secrets_name(set, (unsigned)i));
		free(text);
		text = t;
	}
	for (size_t i = 0; i < nr; i++) {
		char *t =
		    wd_xasprintf("%sinject %s\n", text, net_secrets_rule_text(set, (unsigned)i));
		free(text);
		text = t;
	}
	for (size_t i = 0; net_secrets_env(set, i); i++) {
		const char *kv = net_secrets_env(set, i);
		char *t = wd_xasprintf("%splaceholder %.*s\n", text, (int)strcspn(kv, "="), kv);
		free(text);
		text = t;
	}
	return text;
}

/* ---- the workspace ---- */

WD_API void
wd_spec_set_workspace_mode(wd_spec *s, enum wd_workspace_mode mode)
{
	s->ws_mode = mode == WD_WORKSPACE_COW ? WD_WORKSPACE_COW : WD_WORKSPACE_DIRECT;
}

WD_API int
wd_spec_set_disk(wd_spec *s, uint64_t bytes, struct wd_err *err)
{
	/* ext4 needs a few MiB for itself; below 32 MiB little is left */
	if (bytes < (32ULL << 20) || bytes > (1ULL << 50))
		return wd_err_set(err, WD_E_INVAL, "disk size must be from 32M to 1P");
	s->disk_bytes = bytes;
	return 0;
}

WD_API int
wd_spec_add_protected(wd_spec *s, const char *path, struct wd_err *err)
{
	char *rel = spec_protect_path(path);
	if (!rel)
		return wd_err_set(err, WD_E_INVAL,
				  "protected path '%s': give a path relative to the workspace, "
				  "without . or ..",
				  path ? path : "");
	for (size_t i = 0; i < s->nprotect; i++)
		if (!strcmp(s->protect[i], rel)) {
			free(rel);
			return 0;
		}
	s->protect = wd_xrealloc(s->protect, (s->nprotect + 1) * sizeof(char *));
	s->protect[s->nprotect++] = rel;
	return 0;
}

char *
spec_protect_path(const char *p)
{
	/* relative, normal form: no empty, "." or ".." component */
	if (!p || !p[0] || p[0] == '/' || strlen(p) >= 4096)
		return NULL;
	for (const char *c = p;;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return NULL;
		if (!c[n])
			break;
		c += n + 1;
	}
	return wd_xstrdup(p);
}
