/* sandbox.c - the parts of the document that describe the jail rather than
 * the decision: resource limits (profiles.NAME and "sandbox"), "network",
 * "workspace" and "env".  One policy file can describe a whole sandbox:
 * every limit and egress option of `warden run` has a key here, with the same ranges as the option.
 */
#include "config/parse.h"

#include <arpa/inet.h>
#include <string.h>

/* clang-format off */
const struct config_builtin_profile config_builtin_profiles[] = {
	{"browser_automation", {.timeout_ms = 60000, .memory_bytes = 1ULL << 30,
				.cpu_millionths = 1000000, .output_bytes = 5ULL << 20}},
	{"code_execution",     {.timeout_ms = 30000, .memory_bytes = 256ULL << 20,
				.cpu_millionths = 500000, .output_bytes = 1ULL << 20}},
	{"shell_commands",     {.timeout_ms = 15000, .memory_bytes = 128ULL << 20,
				.cpu_millionths = 250000, .output_bytes = 512ULL << 10}},
};
/* clang-format on */
const size_t config_nbuiltin_profiles = WD_ARRAY_SIZE(config_builtin_profiles);

/* The ranges of `warden run`'s options (src/cli/run.c), so a policy cannot
 * ask for what the command line would refuse.  Sizes stop at 1 PiB: far
 * above any host, far below the signed 64-bit range the JSON output and
 * the kernel's cgroup files use. */
#define MAX_SIZE (1ULL << 50)

int
config_load_limit(struct vctx *v, const char *k, json_t *val, struct config_limits *lim,
		  bool *known)
{
	int64_t n;
	int rc = 0;
	*known = true;
	if (!strcmp(k, "timeout"))
		rc = config_get_fixed(v, val, 0.001, 86400, 1000, &lim->timeout_ms);
	else if (!strcmp(k, "memory"))
		rc = config_get_size(v, val, 4ULL << 20, MAX_SIZE, &lim->memory_bytes);
	else if (!strcmp(k, "tmp_size"))
		rc = config_get_size(v, val, 64ULL << 10, MAX_SIZE, &lim->tmp_bytes);
	else if (!strcmp(k, "output"))
		/* kept in warden's memory per stream, and copied for --json */
		rc = config_get_size(v, val, 64, 16ULL << 20, &lim->output_bytes);
	else if (!strcmp(k, "cpu"))
		rc = config_get_fixed(v, val, 0.01, 1024, 1e6, &lim->cpu_millionths);
	else if (!strcmp(k, "pids")) {
		if ((rc = config_get_int(v, val, 1, 4194304, &n)) == 0)
			lim->pids = (uint64_t)n;
	} else
		*known = false;
	return rc;
}

int
config_load_profile(struct vctx *v, const char *name, json_t *j, struct config_profile *pr)
{
	static const char *const known[] = {"timeout", "memory",   "cpu", "output",
					    "pids",    "tmp_size", NULL};
	/* A custom profile starts from shell_commands' values. */
	*pr = (struct config_profile){
	    .name = wd_xstrdup(name),
	    .lim = config_builtin_profiles[2].lim,
	};
	int rc = config_want_type(v, j, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		bool ok;
		vctx_push_key(v, k);
		if ((rc = config_load_limit(v, k, val, &pr->lim, &ok)) < 0)
			return rc;
		if (!ok)
			return vctx_unknown_key(v, k, known);
		vctx_pop(v);
	}
	return 0;
}

const char *const config_require_names[] = {"cgroup", "landlock", "seccomp",
					    "netns",  "userns",	  NULL};

static int
load_require(struct vctx *v, json_t *j, unsigned *out)
{
	int rc = config_want_type(v, j, JSON_ARRAY, "an array of protections");
	if (rc < 0)
		return rc;
	size_t i;
	json_t *e;
	json_array_foreach(j, i, e)
	{
		vctx_push_idx(v, i);
		const char *s = json_is_string(e) ? json_string_value(e) : NULL;
		size_t b = 0;
		while (s && config_require_names[b] && strcmp(s, config_require_names[b]))
			b++;
		if (!s || !config_require_names[b])
			return vctx_fail(
			    v, false, "expected one of cgroup, landlock, seccomp, netns, userns");
		*out |= 1u << b;
		vctx_pop(v);
	}
	return 0;
}

/* An image reference as wd_spec_set_image() takes it (core/image.c). */
bool
config_image_ref_ok(const char *s)
{
	if (!strncmp(s, "sha256:", 7))
		return strlen(s + 7) == 64 && strspn(s + 7, "0123456789abcdef") == 64;
	size_t n = strlen(s);
	if (n == 0 || n > 64 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

int
config_load_sandbox(struct vctx *v, json_t *j, struct config_sandbox *sb)
{
	static const char *const known[] = {"isolation",    "memory",  "pids",	 "cpu",
					    "tmp_size",	    "timeout", "output", "require",
					    "reproducible", "pool",    "image",	 NULL};
	int rc = config_want_type(v, j, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		bool ok;
		vctx_push_key(v, k);
		if ((rc = config_load_limit(v, k, val, &sb->lim, &ok)) < 0)
			return rc;
		if (ok) {
			/* a limit */
		} else if (!strcmp(k, "isolation")) {
			const char *s = json_is_string(val) ? json_string_value(val) : "";
			sb->isolation_set = true;
			if (wd_isolation_parse(s, &sb->isolation) < 0)
				return vctx_fail(
				    v, false, "expected \"container\", \"process\" or \"gvisor\"");
		} else if (!strcmp(k, "require")) {
			rc = load_require(v, val, &sb->require);
		} else if (!strcmp(k, "reproducible")) {
			rc = config_get_bool(v, val, &sb->reproducible);
		} else if (!strcmp(k, "image")) {
			/* the form only: whether it is built is known where the
			 * policy is used (a run resolves it, or fails with 125) */
			if ((rc = config_get_string(v, val, &sb->image)) == 0 &&
			    !config_image_ref_ok(sb->image))
				return vctx_fail(
				    v, false,
				    "expected an image name ([a-z0-9][a-z0-9._-]*, at most 64 "
				    "bytes) or sha256:HEX");
		} else if (!strcmp(k, "pool")) {
			/* warden serve's warm pool; 64 is the library's limit
			 * (wd_pool_new) */
			int64_t n = 0;
			if ((rc = config_get_int(v, val, 0, 64, &n)) == 0)
				sb->pool = (unsigned)n;
		} else {
			return vctx_unknown_key(v, k, known);
		}
		if (rc < 0)
			return rc;
		vctx_pop(v);
	}
	return 0;
}

/* A host rule as --allow-host / --deny-host take it.  The network layer
 * parses it fully when a run applies it (config sits below net,
 * docs/architecture.md "Modules"); here what is certainly wrong is refused with its position. */
static const char *
check_host_rule(const char *s)
{
	const char *why = config_check_word(s);
	if (why)
		return why;
	if (s[0] == '-')
		return "starts with '-' (a host rule names a host)";
	if (s[0] == '*' && (s[1] == '\0' || s[1] == ':'))
		return "allows every host: name the hosts (exact or *.suffix)";
	return NULL;
}

static const char *
check_deny_rule(const char *s)
{
	const char *why = check_host_rule(s);
	if (why)
		return why;
	if (strpbrk(s, "/=;"))
		return "is not HOST[:PORT] (a deny rule has no path, methods or options)";
	return NULL;
}

static const char *
check_hosts_entry(const char *s)
{
	const char *eq = strchr(s, '='), *why = config_check_word(s);
	if (why)
		return why;
	if (!eq || eq == s || !eq[1] || strchr(eq + 1, '='))
		return "is not NAME=ADDRESS";
	for (const char *p = s; p < eq; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			return "has a NAME that is not a host name";
	for (const char *p = eq + 1; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
		      (*p >= 'A' && *p <= 'F') || *p == '.' || *p == ':' || *p == '[' || *p == ']'))
			return "has an ADDRESS that is not an IPv4 or IPv6 address";
	return NULL;
}

/* A range as --allow-range takes it: an address or a CIDR prefix, nothing
 * else.  It lifts the refusal of loopback and private destinations (the
 * cloud metadata address among them), so a value that is not certainly an
 * address is refused here with its position rather than left to the run:
 * a name, a port or a path would suggest a range admits requests, which
 * only network.allow does.  The network layer parses it again when a run
 * applies it (config sits below net, docs/architecture.md). */
static const char *
check_range_entry(const char *s)
{
	const char *why = config_check_word(s);
	if (why)
		return why;
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	char addr[INET6_ADDRSTRLEN + 2];
	if (alen == 0 || alen >= sizeof(addr))
		return "is not an address or CIDR (ADDRESS[/PREFIX]; names go in network.allow "
		       "and network.hosts)";
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	char *a = addr;
	if (a[0] == '[' && alen > 2 && a[alen - 1] == ']') {
		a[alen - 1] = '\0';
		a++;
	}
	unsigned char bin[16];
	unsigned max;
	if (inet_pton(AF_INET, a, bin) == 1)
		max = 32;
	else if (inet_pton(AF_INET6, a, bin) == 1)
		max = 128;
	else
		return "is not an address or CIDR (ADDRESS[/PREFIX]; names go in network.allow "
		       "and network.hosts)";
	if (slash) {
		uint64_t bits;
		if (wd_parse_u64(slash + 1, &bits) < 0 || bits > max)
			return max == 32 ? "has a prefix length that is not 8-32"
					 : "has a prefix length that is not 8-128";
		/* as for allow rules: 0.0.0.0/0 is "*" in disguise */
		if (bits < 8)
			return "has a prefix shorter than /8, which opens too much: name the range";
	}
	return NULL;
}

static int
load_ports(struct vctx *v, json_t *j, struct config_network *net)
{
	int rc = config_want_type(v, j, JSON_ARRAY, "an array of ports");
	if (rc < 0)
		return rc;
	free(net->ports);
	net->ports = wd_xcalloc(json_array_size(j) + 1, sizeof(*net->ports));
	net->nports = 0;
	size_t i;
	json_t *e;
	json_array_foreach(j, i, e)
	{
		int64_t port;
		vctx_push_idx(v, i);
		if ((rc = config_get_int(v, e, 1, 65535, &port)) < 0)
			return rc;
		net->ports[net->nports++] = (unsigned)port;
		vctx_pop(v);
	}
	return 0;
}

static int
load_network_member(struct vctx *v, const char *k, json_t *val, struct config_network *net)
{
	static const char *const known[] = {"mode",	     "allow",	     "deny",
					    "hosts",	     "allow_ranges", "allow_ports",
					    "tls_intercept", "upstream_ca",  NULL};
	if (!strcmp(k, "allow"))
		return config_get_strv(v, val, &net->allow, false, check_host_rule);
	if (!strcmp(k, "deny"))
		return config_get_strv(v, val, &net->deny, false, check_deny_rule);
	if (!strcmp(k, "hosts"))
		return config_get_strv(v, val, &net->hosts, false, check_hosts_entry);
	if (!strcmp(k, "allow_ranges"))
		return config_get_strv(v, val, &net->ranges, false, check_range_entry);
	if (!strcmp(k, "allow_ports"))
		return load_ports(v, val, net);
	if (!strcmp(k, "tls_intercept"))
		return config_get_bool(v, val, &net->tls_intercept);
	if (!strcmp(k, "mode")) {
		const char *s = json_is_string(val) ? json_string_value(val) : "";
		net->mode_set = true;
		if (!strcmp(s, "none"))
			net->mode = WD_NET_NONE;
		else if (!strcmp(s, "allow"))
			net->mode = WD_NET_PROXY;
		else
			return vctx_fail(v, false, "expected \"none\" or \"allow\"");
		return 0;
	}
	if (!strcmp(k, "upstream_ca")) {
		int rc = config_get_string(v, val, &net->upstream_ca);
		if (rc == 0 && (net->upstream_ca[0] != '/' || config_check_word(net->upstream_ca)))
			rc = vctx_fail(v, false, "must be an absolute path to a CA bundle");
		return rc;
	}
	return vctx_unknown_key(v, k, known);
}

int
config_load_network(struct vctx *v, json_t *j, struct config_network *net)
{
	int rc = config_want_type(v, j, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		vctx_push_key(v, k);
		if ((rc = load_network_member(v, k, val, net)) < 0)
			return rc;
		vctx_pop(v);
	}
	/* Contradictions are refused rather than resolved one way: a reader
	 * of the policy would not know which half wins. */
	if (net->mode_set && net->mode == WD_NET_NONE && (net->allow.n || net->deny.n)) {
		vctx_push_key(v, "mode");
		return vctx_fail(v, false,
				 "\"none\" contradicts the host rules of network.allow/deny");
	}
	if (net->upstream_ca && !net->tls_intercept) {
		vctx_push_key(v, "upstream_ca");
		return vctx_fail(v, true, "is used only with \"tls_intercept\": true");
	}
	return 0;
}

/* The workspace's mount point in the jail.  It must be an absolute path in
 * normal form ("//" once made every absolute argument a workspace path, so
 * `cat //etc/passwd` passed), and not "/" or a system directory of the
 * jail: arguments below the mount point are judged as workspace files. */
static const char *
check_mount(const char *m)
{
	static const char *const system[] = {"/bin",   "/boot",	 "/dev",    "/etc",  "/lib",
					     "/lib32", "/lib64", "/libx32", "/proc", "/run",
					     "/sbin",  "/sys",	 "/tmp",    "/usr"};
	if (m[0] != '/' || config_check_word(m))
		return "must be an absolute path without spaces";
	for (const char *p = m + 1;;) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return "must be a normalized absolute path below / (no '//', '.', '..' or "
			       "trailing '/')";
		if (!e)
			break;
		p = e + 1;
	}
	for (size_t i = 0; i < WD_ARRAY_SIZE(system); i++) {
		size_t n = strlen(system[i]);
		if (!strncmp(m, system[i], n) && (m[n] == '\0' || m[n] == '/'))
			return "is a system directory of the jail";
	}
	return strlen(m) >= 4096 ? "is too long" : NULL;
}

static int
cmp_program(const void *a, const void *b)
{
	return strcmp(((const struct config_program *)a)->name,
		      ((const struct config_program *)b)->name);
}

static int
load_wprograms(struct vctx *v, json_t *val, struct config_policy *p)
{
	int rc = config_want_type(v, val, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	p->wprograms = wd_xcalloc(json_object_size(val) + 1, sizeof(*p->wprograms));
	const char *k;
	json_t *v2;
	json_object_foreach(val, k, v2)
	{
		vctx_push_key(v, k);
		rc = config_load_program(v, k, true, v2, &p->wprograms[p->nwprograms++]);
		if (rc < 0)
			return rc;
		vctx_pop(v);
	}
	qsort(p->wprograms, p->nwprograms, sizeof(*p->wprograms), cmp_program);
	return 0;
}

/* A protected path (workspace.protect): relative, in normal form, as
 * wd_spec_add_protected() takes it. */
static const char *
check_protect(const char *s)
{
	if (s[0] == '/')
		return "must be relative to the workspace";
	for (const char *c = s;;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return "must be a normalized relative path (no '//', '.', '..' or trailing "
			       "'/')";
		if (!c[n])
			break;
		c += n + 1;
	}
	return strlen(s) >= 4096 ? "is too long" : NULL;
}

int
config_load_workspace(struct vctx *v, json_t *j, struct config_policy *p)
{
	static const char *const known[] = {"mount", "programs", "protect", NULL};
	int rc = config_want_type(v, j, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		vctx_push_key(v, k);
		if (!strcmp(k, "mount")) {
			if ((rc = config_get_string(v, val, &p->mount)) < 0)
				return rc;
			const char *why = check_mount(p->mount);
			if (why)
				return vctx_fail(v, false, "'%.80s' %s", p->mount, why);
		} else if (!strcmp(k, "programs")) {
			if ((rc = load_wprograms(v, val, p)) < 0)
				return rc;
		} else if (!strcmp(k, "protect")) {
			if ((rc = config_get_strv(v, val, &p->wprotect, false, check_protect)) < 0)
				return rc;
		} else {
			return vctx_unknown_key(v, k, known);
		}
		vctx_pop(v);
	}
	return 0;
}

int
config_load_env(struct vctx *v, json_t *j, struct config_strv *deny)
{
	static const char *const known[] = {"deny", NULL};
	int rc = config_want_type(v, j, JSON_OBJECT, "an object");
	if (rc < 0)
		return rc;
	const char *k;
	json_t *val;
	json_object_foreach(j, k, val)
	{
		vctx_push_key(v, k);
		if (strcmp(k, "deny"))
			return vctx_unknown_key(v, k, known);
		if ((rc = config_get_strv(v, val, deny, false, config_check_env_pattern)) < 0)
			return rc;
		vctx_pop(v);
	}
	return 0;
}
