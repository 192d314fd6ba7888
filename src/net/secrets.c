/* net/secrets.c: credentials the sandbox never holds: reading
 * and keeping the values, inject rules, and the headers the proxy adds.
 * The exfiltration checks are in exfil.c.
 *
 * Why at the proxy.  A token in the sandbox's environment can be read by
 * any command the model was tricked into running and sent out through any
 * allowed host (or DNS labels).  The proxy already sits outside the jail
 * on every request, and with TLS interception reads each one: it can add
 * the credential on the way out to the one destination it is for, so the
 * sandbox never has it.  What stays in the sandbox is a placeholder, which
 * is worthless outside and which the proxy refuses to let out anywhere.
 *
 * Where a value is: in a wd_secure_alloc() mapping per secret (locked, not
 * dumped, zeroes in children such as the sandbox's pid 1, wiped on free),
 * and for the moment a request head is built, in the proxy's upstream
 * buffer, which the proxy wipes once the head is sent (proxy.c).  Never in
 * an error message, a log line or an event: those carry names. */
#include "net/net-internal.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>

#define NAME_MAX_LEN 64
#define TEMPLATE_MAX 1024
#define PLACEHOLDER_PREFIX "warden-placeholder-"

/* ---------------------------------------------------------------- store */

bool
net_secret_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > NAME_MAX_LEN || isdigit((unsigned char)name[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return false;
	return true;
}

int
net_secrets_new(struct net_secrets **out)
{
	struct net_secrets *s = wd_xcalloc(1, sizeof(*s));
	atomic_init(&s->refs, 1);
	*out = s;
	return 0;
}

struct net_secrets *
net_secrets_ref(struct net_secrets *s)
{
	if (s)
		atomic_fetch_add(&s->refs, 1);
	return s;
}

bool
net_secrets_shared(const struct net_secrets *s)
{
	return atomic_load(&s->refs) > 1;
}

void
net_secrets_free(struct net_secrets *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->n; i++)
		wd_secure_free(s->v[i].mem, s->v[i].memsz);
	for (size_t i = 0; i < s->nrules; i++) {
		free(s->rules[i].path);
		free(s->rules[i].tmpl);
		free(s->rules[i].text);
	}
	for (size_t i = 0; i < s->nvars; i++)
		free(s->vars[i].env);
	free(s);
}

size_t
net_secrets_count(const struct net_secrets *s)
{
	return s ? s->n : 0;
}

const char *
net_secrets_name(const struct net_secrets *s, unsigned i)
{
	return i < s->n ? s->v[i].name : NULL;
}

static int
find_secret(const struct net_secrets *s, const char *name, size_t len)
{
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->v[i].name) == len && !memcmp(s->v[i].name, name, len))
			return (int)i;
	return -1;
}

/* Walk a template: literal runs and {NAME} references.  ref is called
 * with the name (not NUL-terminated); either callback may be NULL.
 * Returns 0, or -1 for a brace that does not close a name. */
static int
tmpl_walk(const char *t, void (*lit)(void *a, const char *p, size_t n),
	  void (*ref)(void *a, const char *name, size_t n), void *arg)
{
	while (*t) {
		if (*t == '{') {
			const char *e = strchr(t + 1, '}');
			size_t nl = e ? (size_t)(e - t - 1) : 0;
			if (!e || nl == 0 || nl > NAME_MAX_LEN)
				return -1;
			char name[NAME_MAX_LEN + 1];
			memcpy(name, t + 1, nl);
			name[nl] = '\0';
			if (!net_secret_name_ok(name))
				return -1;
			if (ref)
				ref(arg, t + 1, nl);
			t = e + 1;
			continue;
		}
		if (*t == '}')
			return -1;
		size_t k = strcspn(t, "{}");
		if (lit)
			lit(arg, t, k);
		t += k;
	}
	return 0;
}

struct uses {
	const struct net_secrets *s;
	uint64_t mask;
	const char *missing; /* first unknown name */
	size_t missing_len;
};

static void
uses_ref(void *a, const char *name, size_t n)
{
	struct uses *u = a;
	int i = find_secret(u->s, name, n);
	if (i >= 0) {
		u->mask |= 1ull << i;
	} else if (!u->missing) {
		u->missing = name;
		u->missing_len = n;
	}
}

/* Which declared secrets each rule's template names (again after every
 * declaration: rules and secrets come in any order). */
static void
resolve_uses(struct net_secrets *s)
{
	for (size_t i = 0; i < s->nrules; i++) {
		struct uses u = {s, 0, NULL, 0};
		tmpl_walk(s->rules[i].tmpl, NULL, uses_ref, &u);
		s->rules[i].uses = u.mask;
	}
}

static void
hex32(char out[33])
{
	unsigned char r[16];
	/* getrandom() of 16 bytes does not fail once the pool is ready
	 * (random(7)); if it ever did, a placeholder must still not be
	 * predictable, so that is fatal. */
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		abort();
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

static bool
unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* One secret's mapping: the value, its percent-encoded form (when that
 * differs: a value in a query string or a form body is encoded so), and its
 * lowercase form (for host names and DNS queries, which ignore case). */
static int
store(struct net_secret *v, const char *value, size_t len, struct wd_err *err)
{
	size_t penc = 0;
	for (size_t i = 0; i < len; i++)
		penc += unreserved((unsigned char)value[i]) ? 1 : 3;
	v->memsz = len + 1 + penc + 1 + len + 1;
	v->mem = wd_secure_alloc(v->memsz, err);
	if (!v->mem)
		return -ENOMEM;
	memcpy(v->mem, value, len);
	v->len = len;
	char *pe = v->mem + len + 1, *o = pe;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		if (unreserved(c)) {
			*o++ = (char)c;
		} else {
			static const char hx[] = "0123456789ABCDEF";
			*o++ = '%';
			*o++ = hx[c >> 4];
			*o++ = hx[c & 15];
		}
	}
	v->penc = pe;
	v->penc_len = penc == len ? 0 : penc;
	v->lower = pe + penc + 1;
	for (size_t i = 0; i < len; i++)
		v->lower[i] = (char)tolower((unsigned char)value[i]);
	return 0;
}

int
net_secrets_add(struct net_secrets *s, const char *name, const char *value, size_t len,
		struct wd_err *err)
{
	if (atomic_load(&s->refs) > 1) {
		wd_err_set(err, WD_E_INVAL, "secret %s: the set is shared; copy it first", name);
		return -EBUSY;
	}
	if (!net_secret_name_ok(name))
		return wd_err_set(
		    err, WD_E_INVAL,
		    "secret name '%.80s': expected a letter or _, then letters, digits "
		    "and _ (at most %d)",
		    name, NAME_MAX_LEN);
	if (find_secret(s, name, strlen(name)) >= 0) {
		wd_err_set(err, WD_E_INVAL, "secret %s is declared twice", name);
		return -EEXIST;
	}
	if (s->n == NET_SECRETS_MAX)
		return wd_err_set(err, WD_E_INVAL, "secret %s: more than %d secrets", name,
				  NET_SECRETS_MAX);
	/* The value goes into a header line: a CR or LF would end the line
	 * and start a field (or a request) of the value's choosing. */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		if (c < 0x20 || c == 0x7f)
			return wd_err_set(
			    err, WD_E_INVAL,
			    "secret %s: the value holds a control character (byte %zu); "
			    "a header cannot carry it",
			    name, i + 1);
	}
	/* A short value would be found by chance in ordinary traffic, and
	 * every such find is a refusal: the check would not be usable. */
	if (len < NET_SECRET_MIN)
		return wd_err_set(err, WD_E_INVAL,
				  "secret %s: the value is shorter than %d bytes (too short to be "
				  "told apart from ordinary traffic)",
				  name, NET_SECRET_MIN);
	if (len > NET_SECRET_MAX)
		return wd_err_set(err, WD_E_INVAL, "secret %s: the value is larger than %d bytes",
				  name, NET_SECRET_MAX);
	struct net_secret *v = &s->v[s->n];
	memset(v, 0, sizeof(*v));
	memcpy(v->name, name, strlen(name) + 1); /* checked: at most 64 */
	if (store(v, value, len, err) < 0)
		return wd_err_prefix(err, "secret %s", name);
	hex32(v->core);
	memcpy(v->placeholder, PLACEHOLDER_PREFIX, sizeof(PLACEHOLDER_PREFIX) - 1);
	memcpy(v->placeholder + sizeof(PLACEHOLDER_PREFIX) - 1, v->core, sizeof(v->core));
	s->n++;
	resolve_uses(s);
	return 0;
}

int
net_secret_read(const char *source, char *out, size_t cap, size_t *len, struct wd_err *err)
{
	if (cap < NET_SECRET_MAX + 3)
		return wd_err_set(err, WD_E_INTERNAL, "secret buffer too small");
	if (!strncmp(source, "env:", 4)) {
		const char *var = source + 4;
		if (!var[0] || strlen(var) > 255 || strchr(var, '='))
			return wd_err_set(err, WD_E_INVAL, "'%.80s': expected env:VAR", source);
		const char *v = getenv(var);
		if (!v)
			return wd_err_set(err, WD_E_INVAL,
					  "'%.80s': %s is not set in warden's environment", source,
					  var);
		size_t n = strlen(v);
		if (n > NET_SECRET_MAX)
			return wd_err_set(err, WD_E_INVAL,
					  "'%.80s': the value is larger than %d bytes", source,
					  NET_SECRET_MAX);
		memcpy(out, v, n);
		*len = n;
		return 0;
	}
	if (source[0] != '@' || !source[1])
		return wd_err_set(err, WD_E_INVAL, "'%.80s': expected @FILE or env:VAR", source);
	const char *path = source + 1;
	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	 * writer for ever; the type is then checked on the descriptor, so
	 * what is read is what was checked (no stat-then-open race). */
	wd_autoclose int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int rc = wd_err_sys(err, errno, "secret file '%.200s'", path);
		if (err)
			err->code = WD_E_INVAL;
		return rc;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = wd_err_sys(err, errno, "secret file '%.200s'", path);
		if (err)
			err->code = WD_E_INVAL;
		return rc;
	}
	if (!S_ISREG(st.st_mode))
		return wd_err_set(err, WD_E_INVAL,
				  "secret file '%.200s' is not a regular file (a FIFO, a device or "
				  "a directory is refused)",
				  path);
	if (st.st_size > NET_SECRET_MAX + 2)
		return wd_err_set(err, WD_E_INVAL, "secret file '%.200s' is larger than %d bytes",
				  path, NET_SECRET_MAX);
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, out + n, NET_SECRET_MAX + 3 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int rc = wd_err_sys(err, errno, "secret file '%.200s'", path);
			if (err)
				err->code = WD_E_INVAL;
			return rc;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == NET_SECRET_MAX + 3)
			break;
	}
	/* one line ending, as `echo TOKEN > file` leaves it, is not part of
	 * the value */
	if (n && out[n - 1] == '\n')
		n--;
	if (n && out[n - 1] == '\r')
		n--;
	if (n > NET_SECRET_MAX)
		return wd_err_set(err, WD_E_INVAL, "secret file '%.200s' is larger than %d bytes",
				  path, NET_SECRET_MAX);
	if (n == 0)
		return wd_err_set(err, WD_E_INVAL, "secret file '%.200s' is empty", path);
	*len = n;
	return 0;
}

int
net_secrets_add_from(struct net_secrets *s, const char *name, const char *source,
		     struct wd_err *err)
{
	size_t cap = NET_SECRET_MAX + 3, len = 0;
	char *buf = wd_secure_alloc(cap, err);
	if (!buf)
		return wd_err_prefix(err, "secret %s", name);
	int rc = net_secret_read(source, buf, cap, &len, err);
	if (rc < 0)
		wd_err_prefix(err, "secret %s", name);
	else
		rc = net_secrets_add(s, name, buf, len, err);
	wd_secure_free(buf, cap);
	return rc;
}

int
net_secrets_clone(const struct net_secrets *s, struct net_secrets **out, struct wd_err *err)
{
	struct net_secrets *c;
	net_secrets_new(&c);
	for (size_t i = 0; i < s->n; i++) {
		struct net_secret *v = &c->v[i];
		*v = s->v[i];
		v->mem = NULL;
		if (store(v, s->v[i].mem, s->v[i].len, err) < 0) {
			c->n = i;
			net_secrets_free(c);
			return -ENOMEM;
		}
		c->n = i + 1;
	}
	for (size_t i = 0; i < s->nrules; i++) {
		c->rules[i] = s->rules[i];
		c->rules[i].path = s->rules[i].path ? wd_xstrdup(s->rules[i].path) : NULL;
		c->rules[i].tmpl = wd_xstrdup(s->rules[i].tmpl);
		c->rules[i].text = wd_xstrdup(s->rules[i].text);
	}
	c->nrules = s->nrules;
	for (size_t i = 0; i < s->nvars; i++) {
		c->vars[i] = s->vars[i];
		c->vars[i].env = wd_xstrdup(s->vars[i].env);
	}
	c->nvars = s->nvars;
	*out = c;
	return 0;
}

/* ---------------------------------------------------------------- rules */

/* Fields an inject rule may not set: the framing and routing of the
 * request (a value there would be request smuggling or domain fronting
 * by configuration) and hop-by-hop fields the proxy drops anyway. */
static bool
forbidden_header(const char *h)
{
	static const char *const no[] = {
	    "host", "content-length", "transfer-encoding", "connection", "keep-alive",
	    "te",   "trailer",	      "upgrade",	   "expect",	 "proxy-connection",
	    NULL};
	for (size_t i = 0; no[i]; i++)
		if (!strcasecmp(h, no[i]))
			return true;
	return !strncasecmp(h, "proxy-", 6);
}

static bool
tchar(unsigned char c)
{
	return isalnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* "[http://|https://]HOST[:PORT][/PATH]" into r. */
static int
parse_dest(const char *d, size_t len, struct net_inject *r, const char *rule, struct wd_err *err)
{
	char buf[600];
	if (len >= sizeof(buf))
		return wd_err_set(err, WD_E_INVAL, "inject rule '%.80s': destination too long",
				  rule);
	memcpy(buf, d, len);
	buf[len] = '\0';
	char *p = buf;
	if (!strncasecmp(p, "http://", 7)) {
		r->http = true;
		p += 7;
	} else if (!strncasecmp(p, "https://", 8)) {
		p += 8;
	}
	char *path = strchr(p, '/');
	if (path) {
		for (const char *q = path; *q; q++)
			if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f || *q == '%' ||
			    *q == '\\' || *q == '?' || *q == '#')
				return wd_err_set(err, WD_E_INVAL,
						  "inject rule '%.80s': bad path prefix", rule);
		/* a prefix with a dot segment would never match a request
		 * (net_path_prefix_match refuses those paths) */
		if (!net_path_prefix_match(path, path))
			return wd_err_set(err, WD_E_INVAL,
					  "inject rule '%.80s': bad path prefix (dot segment)",
					  rule);
		r->path = wd_xstrdup(path);
		*path = '\0';
	}
	char *host = p, *port = NULL;
	if (host[0] == '[') {
		char *rb = strchr(host, ']');
		if (!rb)
			return wd_err_set(err, WD_E_INVAL, "inject rule '%.80s': missing ']'",
					  rule);
		*rb = '\0';
		host++;
		if (rb[1] == ':')
			port = rb + 2;
		else if (rb[1])
			return wd_err_set(err, WD_E_INVAL, "inject rule '%.80s': bad host", rule);
	} else if ((port = strchr(host, ':'))) {
		*port++ = '\0';
	}
	if (strchr(host, '*'))
		return wd_err_set(
		    err, WD_E_INVAL,
		    "inject rule '%.80s': name one host (no wildcard: a credential goes "
		    "only where it is named)",
		    rule);
	if (net_host_normalize(host, strlen(host), r->host, sizeof(r->host)) < 0)
		return wd_err_set(err, WD_E_INVAL, "inject rule '%.80s': bad host name", rule);
	r->port = r->http ? 80 : 443;
	if (port) {
		uint64_t v;
		if (wd_parse_u64(port, &v) < 0 || v == 0 || v > 65535)
			return wd_err_set(err, WD_E_INVAL, "inject rule '%.80s': bad port", rule);
		r->port = (uint16_t)v;
	}
	return 0;
}

struct tcheck {
	bool bad;
};

static void
tmpl_lit_check(void *a, const char *p, size_t n)
{
	struct tcheck *t = a;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] >= 0x7f)
			t->bad = true;
}

static int
check_template(const char *t, const char *rule, struct wd_err *err)
{
	struct tcheck tc = {false};
	if (!t[0] || strlen(t) > TEMPLATE_MAX)
		return wd_err_set(err, WD_E_INVAL,
				  "inject rule '%.80s': empty or over-long template", rule);
	if (tmpl_walk(t, tmpl_lit_check, NULL, &tc) < 0)
		return wd_err_set(err, WD_E_INVAL,
				  "inject rule '%.80s': a brace must enclose a secret name "
				  "({NAME})",
				  rule);
	if (tc.bad)
		return wd_err_set(err, WD_E_INVAL,
				  "inject rule '%.80s': the template must be printable ASCII",
				  rule);
	return 0;
}

int
net_secrets_add_inject(struct net_secrets *s, enum net_inject_kind kind, const char *rule,
		       struct wd_err *err)
{
	if (atomic_load(&s->refs) > 1) {
		wd_err_set(err, WD_E_INVAL, "inject rule: the set is shared; copy it first");
		return -EBUSY;
	}
	if (s->nrules == NET_INJECTS_MAX)
		return wd_err_set(err, WD_E_INVAL, "more than %d inject rules", NET_INJECTS_MAX);
	/* one argument, destination and what to send split at the first
	 * space ("api.test Authorization=Bearer {T}"); a template may hold
	 * spaces, a destination cannot */
	const char *sp = strchr(rule, ' ');
	if (!sp || sp == rule)
		return wd_err_set(err, WD_E_INVAL,
				  "inject rule '%.80s': expected '%s' as one argument (quote it)",
				  rule,
				  kind == NET_INJECT_BASIC ? "HOST[:PORT][/PATH] USER:PASSWORD"
							   : "HOST[:PORT][/PATH] HEADER=TEMPLATE");
	struct net_inject r;
	memset(&r, 0, sizeof(r));
	r.kind = kind;
	int rc = parse_dest(rule, (size_t)(sp - rule), &r, rule, err);
	const char *what = sp + 1;
	while (rc == 0 && *what == ' ')
		what++;
	if (rc == 0 && kind == NET_INJECT_HEADER) {
		const char *eq = strchr(what, '=');
		size_t hl = eq ? (size_t)(eq - what) : 0;
		bool ok = eq && hl > 0 && hl < sizeof(r.header);
		for (size_t i = 0; ok && i < hl; i++)
			ok = tchar((unsigned char)what[i]);
		if (!ok) {
			rc = wd_err_set(
			    err, WD_E_INVAL,
			    "inject rule '%.80s': expected HEADER=TEMPLATE after the host", rule);
		} else {
			memcpy(r.header, what, hl);
			r.header[hl] = '\0';
			if (forbidden_header(r.header))
				rc = wd_err_set(
				    err, WD_E_INVAL,
				    "inject rule '%.80s': %s frames or routes the request "
				    "and cannot be injected",
				    rule, r.header);
			else if ((rc = check_template(eq + 1, rule, err)) == 0)
				r.tmpl = wd_xstrdup(eq + 1);
		}
	} else if (rc == 0) {
		snprintf(r.header, sizeof(r.header), "Authorization");
		/* RFC 7617: the user-id cannot contain a colon, so the first
		 * colon outside a {NAME} separates it from the password */
		const char *c = what;
		while (*c && *c != ':') {
			if (*c == '{' && strchr(c, '}'))
				c = strchr(c, '}');
			c++;
		}
		if (*c != ':')
			rc = wd_err_set(
			    err, WD_E_INVAL,
			    "inject rule '%.80s': expected USER:PASSWORD after the host", rule);
		else if ((rc = check_template(what, rule, err)) == 0)
			r.tmpl = wd_xstrdup(what);
	}
	if (rc < 0) {
		free(r.path);
		return rc;
	}
	r.text = wd_xstrdup(rule);
	s->rules[s->nrules++] = r;
	resolve_uses(s);
	return 0;
}

int
net_secrets_add_placeholder(struct net_secrets *s, const char *var, const char *name,
			    struct wd_err *err)
{
	if (atomic_load(&s->refs) > 1) {
		wd_err_set(err, WD_E_INVAL, "placeholder: the set is shared; copy it first");
		return -EBUSY;
	}
	int i = find_secret(s, name, strlen(name));
	if (i < 0)
		return wd_err_set(err, WD_E_INVAL,
				  "placeholder %s: no secret %.80s is declared (declare it first)",
				  var, name);
	for (size_t k = 0; k < s->nvars; k++)
		if (!strncmp(s->vars[k].env, var, strlen(var)) &&
		    s->vars[k].env[strlen(var)] == '=')
			return wd_err_set(err, WD_E_INVAL, "placeholder variable %s given twice",
					  var);
	if (s->nvars == NET_SECRETS_MAX * 2)
		return wd_err_set(err, WD_E_INVAL, "too many placeholder variables");
	s->vars[s->nvars].secret = (unsigned)i;
	s->vars[s->nvars].env = wd_xasprintf("%s=%s", var, s->v[i].placeholder);
	s->nvars++;
	return 0;
}

const char *
net_secrets_value(const struct net_secrets *s, unsigned i, size_t *len)
{
	if (!s || i >= s->n)
		return NULL;
	*len = s->v[i].len;
	return s->v[i].mem;
}

enum net_inject_kind
net_secrets_rule_kind(const struct net_secrets *s, unsigned rule)
{
	return s->rules[rule].kind;
}

const char *
net_secrets_env(const struct net_secrets *s, size_t i)
{
	return s && i < s->nvars ? s->vars[i].env : NULL;
}

const char *
net_secrets_placeholder(const struct net_secrets *s, const char *name)
{
	int i = find_secret(s, name, strlen(name));
	return i < 0 ? NULL : s->v[i].placeholder;
}

int
net_secrets_check(const struct net_secrets *s, const struct net_rules *rules, bool tls_intercept,
		  struct wd_err *err)
{
	uint64_t used = 0;
	for (size_t i = 0; i < s->nrules; i++) {
		const struct net_inject *r = &s->rules[i];
		struct uses u = {s, 0, NULL, 0};
		tmpl_walk(r->tmpl, NULL, uses_ref, &u);
		if (u.missing)
			return wd_err_set(
			    err, WD_E_INVAL,
			    "inject rule '%.80s': no secret %.*s is declared (--secret "
			    "%.*s=@FILE or =env:VAR)",
			    r->text, (int)u.missing_len, u.missing, (int)u.missing_len, u.missing);
		used |= u.mask;
		if (!r->http && !tls_intercept)
			return wd_err_set(
			    err, WD_E_INVAL,
			    "inject rule '%.80s' needs TLS interception (--tls-intercept): "
			    "the proxy can add a header only to requests it reads (or "
			    "write http:// for a plain-HTTP upstream)",
			    r->text);
		struct net_decision d;
		struct net_request q = {.host = r->host,
					.port = r->port,
					.method = "GET",
					.path = r->path ? r->path : "/"};
		if (rules)
			net_rules_decide(rules, &q, &d);
		if (!rules ||
		    (!d.allow && (d.reason == NET_R_NO_RULE || d.reason == NET_R_DENY_RULE ||
				  d.reason == NET_R_PORT || d.reason == NET_R_BAD_HOST)))
			return wd_err_set(err, WD_E_INVAL,
					  "inject rule '%.80s': no allow rule admits %s:%u (add "
					  "--allow-host %s:%u)",
					  r->text, r->host, r->port, r->host, r->port);
	}
	for (size_t i = 0; i < s->n; i++)
		if (!(used & (1ull << i)))
			return wd_err_set(err, WD_E_INVAL,
					  "secret %s is not used by any inject rule (--inject or "
					  "--inject-basic)",
					  s->v[i].name);
	return 0;
}

/* ------------------------------------------------------------- requests */

void
net_secrets_match(const struct net_secrets *s, bool https, const char *host, uint16_t port,
		  const char *path, struct net_inject_match *m)
{
	memset(m, 0, sizeof(*m));
	if (!s)
		return;
	for (size_t i = 0; i < s->nrules; i++) {
		const struct net_inject *r = &s->rules[i];
		if (r->http == https || r->port != port || strcmp(r->host, host) ||
		    (r->path && !net_path_prefix_match(r->path, path)))
			continue;
		/* one rule per header: the longest path prefix wins */
		unsigned k;
		for (k = 0; k < m->n; k++)
			if (!strcasecmp(s->rules[m->rule[k]].header, r->header))
				break;
		if (k < m->n) {
			const struct net_inject *o = &s->rules[m->rule[k]];
			size_t ol = o->path ? strlen(o->path) : 0,
			       rl = r->path ? strlen(r->path) : 0;
			if (rl > ol)
				m->rule[k] = (uint16_t)i;
			continue;
		}
		m->rule[m->n++] = (uint16_t)i;
	}
	for (unsigned k = 0; k < m->n; k++)
		m->bound |= s->rules[m->rule[k]].uses;
}

bool
net_secrets_sets_header(const struct net_secrets *s, const struct net_inject_match *m,
			const char *name, size_t len)
{
	for (unsigned k = 0; k < m->n; k++) {
		const char *h = s->rules[m->rule[k]].header;
		if (strlen(h) == len && !strncasecmp(h, name, len))
			return true;
	}
	return false;
}

/* Output of a template expansion: straight into the caller's buffer, or
 * through a streaming base64 encoder (three bytes carried), so a value is
 * never copied anywhere else. */
struct out {
	const struct net_secrets *s;
	char *p;
	size_t cap, len;
	bool b64, over;
	unsigned char carry[3];
	unsigned nc;
};

static void
out_raw(struct out *o, const char *p, size_t n)
{
	if (o->over || o->cap - o->len < n) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void
b64_flush(struct out *o, bool final)
{
	if (o->nc == 0 || (o->nc < 3 && !final))
		return;
	unsigned char *c = o->carry;
	char q[4] = {b64chars[c[0] >> 2], b64chars[((c[0] & 3) << 4) | (o->nc > 1 ? c[1] >> 4 : 0)],
		     o->nc > 1 ? b64chars[((c[1] & 15) << 2) | (o->nc > 2 ? c[2] >> 6 : 0)] : '=',
		     o->nc > 2 ? b64chars[c[2] & 63] : '='};
	out_raw(o, q, 4);
	o->nc = 0;
	explicit_bzero(o->carry, sizeof(o->carry));
}

static void
out_put(void *a, const char *p, size_t n)
{
	struct out *o = a;
	if (!o->b64) {
		out_raw(o, p, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		o->carry[o->nc++] = (unsigned char)p[i];
		b64_flush(o, false);
	}
}

static void
out_ref(void *a, const char *name, size_t n)
{
	struct out *o = a;
	int i = find_secret(o->s, name, n);
	if (i >= 0) /* net_secrets_check() made sure every name is declared */
		out_put(o, o->s->v[i].mem, o->s->v[i].len);
}

ssize_t
net_secrets_put_header(const struct net_secrets *s, unsigned rule, char *buf, size_t cap)
{
	const struct net_inject *r = &s->rules[rule];
	struct out o = {.s = s, .p = buf, .cap = cap};
	out_raw(&o, r->header, strlen(r->header));
	out_raw(&o, ": ", 2);
	if (r->kind == NET_INJECT_BASIC) {
		out_raw(&o, "Basic ", 6);
		o.b64 = true;
	}
	tmpl_walk(r->tmpl, out_put, out_ref, &o);
	if (o.b64) {
		b64_flush(&o, true);
		o.b64 = false;
	}
	out_raw(&o, "\r\n", 2);
	if (o.over) {
		explicit_bzero(buf, o.len);
		return -1;
	}
	return (ssize_t)o.len;
}

size_t
net_secrets_rule_count(const struct net_secrets *s)
{
	return s ? s->nrules : 0;
}

const char *
net_secrets_rule_text(const struct net_secrets *s, unsigned rule)
{
	return rule < s->nrules ? s->rules[rule].text : NULL;
}

void
net_secrets_names(const struct net_secrets *s, uint64_t mask, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < s->n && n < cap; i++)
		if (mask & (1ull << i))
			n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "", s->v[i].name);
}
