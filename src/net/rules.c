/* net/rules.c: egress allow/deny rules, hosts entries, and the two
 * decisions made on every request: by name (host, port, method, path) and,
 * after resolution, by address.
 *
 * Semantics, in the order net_rules_decide() applies them:
 *  1. a deny rule naming the host (and port, if it gives one) refuses;
 *  2. an allow rule naming host and port, whose methods and path prefix
 *     admit the request, allows; among several the most specific is used
 *     (exact name > longer suffix > shorter), which sets max_request_bytes;
 *  3. otherwise the refusal reason is the closest miss: method or path if a
 *     rule named host and port, port if one named the host, else no-rule.
 * A tunnel (CONNECT, SOCKS) hides method and path, so a rule restricting
 * either does not admit a tunnel (reason tunnel-hides-method).
 *
 * Ranges (net_rules_add_range, --allow-range CIDR) take no part in that
 * decision: they only lift the address stage's refusal of special ranges
 * (loopback, private, ...) for destinations inside them.  An address allow
 * rule does both, and so admits the literal address with its own (often
 * unrestricted) methods: "127.0.0.2:8080" written to let web.test reach a
 * local upstream also passed "PUT http://127.0.0.2:8080/" while web.test's
 * rule allowed GET only.  A range widens nothing: every request
 * still needs an allow rule for what it names.
 */
#include "net/net.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A small built-in list, not the Public Suffix List: the generic TLDs an
 * agent is likely to be pointed at, the big ccTLDs and their second-level
 * registries, and shared hosting suffixes where each subdomain belongs to
 * a different party.  A rule naming one of these alone (or "*." of it) is
 * refused; "*.x" with a single label x is refused for every x. */
const char *const NET_PUBLIC_SUFFIXES[] = {
    "com",
    "net",
    "org",
    "io",
    "dev",
    "app",
    "co",
    "uk",
    "co.uk",
    "org.uk",
    "ac.uk",
    "gov.uk",
    "edu",
    "gov",
    "mil",
    "int",
    "info",
    "biz",
    "xyz",
    "ai",
    "me",
    "tv",
    "cc",
    "us",
    "eu",
    "de",
    "fr",
    "nl",
    "jp",
    "co.jp",
    "cn",
    "com.cn",
    "ru",
    "br",
    "com.br",
    "in",
    "co.in",
    "au",
    "com.au",
    "net.au",
    "org.au",
    "ca",
    "nz",
    "co.nz",
    "ch",
    "se",
    "es",
    "it",
    "pl",
    "kr",
    "co.kr",
    "cloud",
    "online",
    "site",
    "tech",
    "page",
    "github.io",
    "githubusercontent.com",
    "gitlab.io",
    "herokuapp.com",
    "appspot.com",
    "pages.dev",
    "workers.dev",
    "vercel.app",
    "netlify.app",
    "cloudfront.net",
    "amazonaws.com",
    "s3.amazonaws.com",
    "azurewebsites.net",
    "blob.core.windows.net",
    "web.app",
    "firebaseapp.com",
    "ngrok.io",
    "ngrok-free.app",
    NULL,
};

enum rule_kind {
	RULE_NAME,   /* exact host name */
	RULE_SUFFIX, /* "*.suffix": strict subdomains of suffix */
	RULE_CIDR,   /* address or prefix */
};

#define PORT_DEFAULT (-1) /* 80 and 443 */
#define PORT_ANY 0
#define MAX_METHODS 16

struct net_rule {
	bool deny;
	bool range; /* RULE_CIDR from net_rules_add_range(): address stage only */
	enum rule_kind kind;
	char host[256]; /* name, or suffix without "*." */
	int family;	/* RULE_CIDR */
	uint8_t addr[16];
	unsigned prefix;
	int port;
	unsigned n_methods;
	char methods[MAX_METHODS][24];
	char *path;
	uint64_t max_request_bytes;
	char text[600];
};

struct host_entry {
	char name[256];
	struct sockaddr_storage addr;
};

struct net_rules {
	struct net_rule **rules;
	size_t n_rules, n_allow;
	struct host_entry *hosts;
	size_t n_hosts;
};

static const char *const reason_names[NET_R__COUNT] = {
    [NET_R_NONE] = "allowed",
    [NET_R_DENY_RULE] = "deny-rule",
    [NET_R_NO_RULE] = "no-rule",
    [NET_R_PORT] = "port",
    [NET_R_METHOD] = "method",
    [NET_R_PATH] = "path",
    [NET_R_TUNNEL] = "tunnel-hides-method",
    [NET_R_ADDR_RANGE] = "address-range",
    [NET_R_RESOLVE] = "resolve-failed",
    [NET_R_CONNECT] = "upstream-connect-failed",
    [NET_R_BODY_LIMIT] = "max-request-bytes",
    [NET_R_CONN_LIMIT] = "max-connections",
    [NET_R_BYTE_LIMIT] = "max-total-bytes",
    [NET_R_MALFORMED] = "malformed-request",
    [NET_R_TIMEOUT] = "timeout",
    [NET_R_RATE_LIMIT] = "rate-limit",
    [NET_R_LABEL] = "oversized-label",
    [NET_R_QTYPE] = "query-type",
    [NET_R_BAD_HOST] = "bad-host",
    [NET_R_NOT_PROXY] = "not-a-proxy-request",
    [NET_R_UPSTREAM] = "bad-upstream-response",
    [NET_R_TLS] = "tls-failed",
    [NET_R_MISDIRECTED] = "misdirected",
    [NET_R_FRAMING] = "ambiguous-framing",
    [NET_R_EXFIL] = "secret-exfiltration",
    [NET_R_SECRET_PROBE] = "secret-probe",
};

const char *
net_reason_name(enum net_reason r)
{
	if ((unsigned)r >= NET_R__COUNT)
		return "?";
	return reason_names[r];
}

int
net_rules_new(struct net_rules **out)
{
	*out = wd_xcalloc(1, sizeof(struct net_rules));
	return 0;
}

void
net_rules_free(struct net_rules *rules)
{
	if (!rules)
		return;
	for (size_t i = 0; i < rules->n_rules; i++) {
		free(rules->rules[i]->path);
		free(rules->rules[i]);
	}
	free(rules->rules);
	free(rules->hosts);
	free(rules);
}

size_t
net_rules_count(const struct net_rules *rules)
{
	/* a spec with no --allow-host holds no rules object at all: `warden
	 * update --memory` of such a session (the default, no network) read
	 * through NULL here and crashed */
	return rules ? rules->n_allow : 0;
}

const struct net_rule *
net_rules_at(const struct net_rules *rules, size_t i)
{
	return i < rules->n_rules ? rules->rules[i] : NULL;
}

const char *
net_rule_text(const struct net_rule *rule)
{
	return rule ? rule->text : NULL;
}

static bool
is_public_suffix(const char *s)
{
	for (size_t i = 0; NET_PUBLIC_SUFFIXES[i]; i++)
		if (strcmp(s, NET_PUBLIC_SUFFIXES[i]) == 0)
			return true;
	return false;
}

/* RFC 9110 tchar, for method tokens. */
static bool
is_tchar(unsigned char c)
{
	return isalnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int
parse_cidr(struct net_rule *r, const char *s, size_t len, const char *spec, struct wd_err *err)
{
	struct sockaddr_storage ss;
	const char *slash = memchr(s, '/', len);
	size_t alen = slash ? (size_t)(slash - s) : len;
	if (!net_addr_parse(s, alen, 0, &ss))
		return wd_err_set(err, WD_E_INVAL, "rule '%s': bad address", spec);
	r->family = ss.ss_family;
	unsigned max = ss.ss_family == AF_INET ? 32 : 128;
	if (ss.ss_family == AF_INET)
		memcpy(r->addr, &((struct sockaddr_in *)(void *)&ss)->sin_addr, 4);
	else
		memcpy(r->addr, &((struct sockaddr_in6 *)(void *)&ss)->sin6_addr, 16);
	r->prefix = max;
	if (slash) {
		uint64_t v;
		char num[8];
		size_t nlen = len - alen - 1;
		if (nlen == 0 || nlen >= sizeof(num))
			return wd_err_set(err, WD_E_INVAL, "rule '%s': bad prefix length", spec);
		memcpy(num, slash + 1, nlen);
		num[nlen] = '\0';
		if (wd_parse_u64(num, &v) < 0 || v > max)
			return wd_err_set(err, WD_E_INVAL, "rule '%s': bad prefix length", spec);
		r->prefix = (unsigned)v;
	}
	/* "0.0.0.0/0" or "::/0" is "*" in disguise. */
	if (r->prefix < 8)
		return wd_err_set(
		    err, WD_E_INVAL,
		    "rule '%s': a prefix shorter than /8 opens too much; name the range", spec);
	/* Canonical: clear host bits so "10.1.2.3/8" matches like 10.0.0.0/8. */
	unsigned bytes = max / 8;
	for (unsigned i = 0; i < bytes; i++) {
		unsigned bit = i * 8;
		if (bit >= r->prefix)
			r->addr[i] = 0;
		else if (bit + 8 > r->prefix)
			r->addr[i] &= (uint8_t)(0xff << (8 - (r->prefix - bit)));
	}
	return 0;
}

static void
rule_format(struct net_rule *r)
{
	char host[300];
	char port[16] = "";
	if (r->kind == RULE_CIDR) {
		char a[INET6_ADDRSTRLEN];
		inet_ntop(r->family, r->addr, a, sizeof(a));
		unsigned max = r->family == AF_INET ? 32 : 128;
		if (r->family == AF_INET6)
			snprintf(host, sizeof(host), "[%s]", a);
		else
			snprintf(host, sizeof(host), "%s", a);
		if (r->prefix != max)
			snprintf(host + strlen(host), sizeof(host) - strlen(host), "/%u",
				 r->prefix);
	} else {
		snprintf(host, sizeof(host), "%s%s", r->kind == RULE_SUFFIX ? "*." : "", r->host);
	}
	if (r->port == PORT_ANY)
		snprintf(port, sizeof(port), ":*");
	else if (r->port > 0)
		snprintf(port, sizeof(port), ":%d", r->port);
	size_t n = (size_t)snprintf(r->text, sizeof(r->text), "%s %s%s%s",
				    r->deny    ? "deny"
				    : r->range ? "range"
					       : "allow",
				    host, port, r->path ? r->path : "");
	for (unsigned i = 0; i < r->n_methods && n < sizeof(r->text); i++)
		n += (size_t)snprintf(r->text + n, sizeof(r->text) - n, "%c%s", i ? ',' : '=',
				      r->methods[i]);
	if (r->max_request_bytes && n < sizeof(r->text))
		snprintf(r->text + n, sizeof(r->text) - n, ";max_request_bytes=%llu",
			 (unsigned long long)r->max_request_bytes);
}

/* Parse HOST[:PORT][/PATH][=METHOD,...] (deny: HOST[:PORT]). */
static int
rule_parse(const char *spec, bool deny, struct net_rule *r, struct wd_err *err)
{
	size_t len = strlen(spec);
	const char *eq = memchr(spec, '=', len);
	size_t hp_len = eq ? (size_t)(eq - spec) : len; /* host, port, path */
	const char *s = spec;
	r->deny = deny;
	r->port = PORT_DEFAULT;
	if (hp_len == 0)
		return wd_err_set(err, WD_E_INVAL, "rule '%s': empty host", spec);

	/* Split host from :port and /path.  Address forms first:
	 * "[v6]", "[v6]/n", "[v6/n]", a bare v6 (two or more colons, no port
	 * possible), "a.b.c.d[/n]". */
	size_t host_len, rest;
	bool addr = false;
	if (s[0] == '[') {
		const char *rb = memchr(s, ']', hp_len);
		if (!rb)
			return wd_err_set(err, WD_E_INVAL, "rule '%s': missing ']'", spec);
		host_len = (size_t)(rb - s) + 1;
		/* "[v6]/n": prefix outside the brackets */
		if (host_len < hp_len && s[host_len] == '/' && host_len + 1 < hp_len &&
		    isdigit((unsigned char)s[host_len + 1])) {
			size_t j = host_len + 1;
			while (j < hp_len && isdigit((unsigned char)s[j]))
				j++;
			char tmp[80];
			if (host_len + (j - host_len) >= sizeof(tmp))
				return wd_err_set(err, WD_E_INVAL, "rule '%s': bad address", spec);
			/* rewrite as "v6/n" for parse_cidr */
			size_t k = 0;
			memcpy(tmp, s + 1, host_len - 2);
			k = host_len - 2;
			memcpy(tmp + k, s + host_len, j - host_len);
			k += j - host_len;
			r->kind = RULE_CIDR;
			if (parse_cidr(r, tmp, k, spec, err) < 0)
				return -EINVAL;
			host_len = j;
		} else {
			r->kind = RULE_CIDR;
			if (parse_cidr(r, s + 1, host_len - 2, spec, err) < 0)
				return -EINVAL;
		}
		addr = true;
	} else {
		size_t colons = 0;
		for (size_t i = 0; i < hp_len; i++)
			colons += s[i] == ':';
		if (colons >= 2) {
			host_len = hp_len; /* bare IPv6, optionally /n; no port, no path */
			r->kind = RULE_CIDR;
			if (parse_cidr(r, s, host_len, spec, err) < 0)
				return -EINVAL;
			addr = true;
		} else {
			host_len = strcspn(s, ":/=");
			if (host_len > hp_len)
				host_len = hp_len;
			struct sockaddr_storage ss;
			if (net_addr_parse(s, host_len, 0, &ss)) {
				/* v4, maybe "/n" */
				size_t j = host_len;
				if (j < hp_len && s[j] == '/' && j + 1 < hp_len &&
				    isdigit((unsigned char)s[j + 1])) {
					j++;
					while (j < hp_len && isdigit((unsigned char)s[j]))
						j++;
				}
				r->kind = RULE_CIDR;
				if (parse_cidr(r, s, j, spec, err) < 0)
					return -EINVAL;
				host_len = j;
				addr = true;
			}
		}
	}
	if (!addr) {
		const char *h = s;
		size_t hl = host_len;
		if (hl == 1 && h[0] == '*')
			return wd_err_set(
			    err, WD_E_INVAL,
			    "rule '%s': a bare '*' would allow every host; name the hosts", spec);
		if (hl >= 2 && h[0] == '*' && h[1] == '.') {
			r->kind = RULE_SUFFIX;
			h += 2;
			hl -= 2;
		} else {
			r->kind = RULE_NAME;
		}
		if (memchr(h, '*', hl))
			return wd_err_set(err, WD_E_INVAL,
					  "rule '%s': '*' only as a leading '*.' label", spec);
		/* A rule names a real host name: no label starts or ends with
		 * '-' (RFC 1123), which also keeps a rule from reading as an
		 * option ("-example.com") wherever it is echoed. */
		for (size_t i = 0; i < hl; i++)
			if (h[i] == '-' &&
			    (i == 0 || h[i - 1] == '.' || i + 1 == hl || h[i + 1] == '.'))
				return wd_err_set(
				    err, WD_E_INVAL,
				    "rule '%s': a label may not start or end with '-'", spec);
		if (net_host_normalize(h, hl, r->host, sizeof(r->host)) < 0)
			return wd_err_set(err, WD_E_INVAL, "rule '%s': bad host name", spec);
		if (is_public_suffix(r->host) || (r->kind == RULE_SUFFIX && !strchr(r->host, '.')))
			return wd_err_set(err, WD_E_INVAL,
					  "rule '%s': '%s' is a public suffix; name a host or a "
					  "domain under it",
					  spec, r->host);
	}
	rest = host_len;
	if (rest < hp_len && s[rest] == ':') {
		size_t j = rest + 1;
		size_t plen = strcspn(s + j, "/=");
		if (j + plen > hp_len)
			plen = hp_len - j;
		char num[8];
		if (plen == 1 && s[j] == '*') {
			r->port = PORT_ANY;
		} else {
			uint64_t v;
			if (plen == 0 || plen >= sizeof(num))
				return wd_err_set(err, WD_E_INVAL, "rule '%s': bad port", spec);
			memcpy(num, s + j, plen);
			num[plen] = '\0';
			if (wd_parse_u64(num, &v) < 0 || v == 0 || v > 65535)
				return wd_err_set(err, WD_E_INVAL, "rule '%s': bad port", spec);
			r->port = (int)v;
		}
		rest = j + plen;
	}
	if (rest < hp_len && s[rest] == '/') {
		if (deny)
			return wd_err_set(err, WD_E_INVAL,
					  "rule '%s': deny rules name hosts, not paths", spec);
		size_t plen = hp_len - rest;
		for (size_t i = rest; i < hp_len; i++)
			if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f ||
			    s[i] == '%' || s[i] == '\\' || s[i] == '?' || s[i] == '#')
				return wd_err_set(err, WD_E_INVAL, "rule '%s': bad path prefix",
						  spec);
		r->path = wd_xmalloc(plen + 1);
		memcpy(r->path, s + rest, plen);
		r->path[plen] = '\0';
		rest = hp_len;
	}
	if (rest != hp_len)
		return wd_err_set(err, WD_E_INVAL, "rule '%s': unexpected '%c'", spec, s[rest]);
	if (eq) {
		if (deny)
			return wd_err_set(err, WD_E_INVAL,
					  "rule '%s': deny rules name hosts, not methods", spec);
		const char *m = eq + 1;
		if (*m == '\0')
			return wd_err_set(err, WD_E_INVAL, "rule '%s': empty method list", spec);
		while (*m) {
			size_t ml = strcspn(m, ",");
			if (ml == 0 || ml >= sizeof(r->methods[0]) || r->n_methods == MAX_METHODS)
				return wd_err_set(err, WD_E_INVAL, "rule '%s': bad method list",
						  spec);
			for (size_t i = 0; i < ml; i++)
				if (!is_tchar((unsigned char)m[i]))
					return wd_err_set(err, WD_E_INVAL, "rule '%s': bad method",
							  spec);
			char *dst = r->methods[r->n_methods++];
			for (size_t i = 0; i < ml; i++)
				dst[i] = (char)toupper((unsigned char)m[i]);
			dst[ml] = '\0';
			/* Only the methods of RFC 9110 and PATCH (RFC 5789): a typo
			 * ("GTE") would otherwise be a rule that silently admits
			 * nothing, and an invented one is never what a user meant. */
			static const char *const known[] = {"GET",     "HEAD",	 "POST",
							    "PUT",     "DELETE", "CONNECT",
							    "OPTIONS", "TRACE",	 "PATCH"};
			bool ok = false;
			for (size_t k = 0; k < sizeof(known) / sizeof(known[0]) && !ok; k++)
				ok = !strcmp(dst, known[k]);
			if (!ok)
				return wd_err_set(
				    err, WD_E_INVAL,
				    "rule '%s': unknown method '%s' (GET, HEAD, POST, "
				    "PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH)",
				    spec, dst);
			m += ml;
			if (*m == ',') {
				m++;
				if (*m == '\0')
					return wd_err_set(err, WD_E_INVAL,
							  "rule '%s': bad method list", spec);
			}
		}
	}
	return 0;
}

static int
rules_add(struct net_rules *rules, const char *spec, bool deny, const struct net_rule_opts *opts,
	  struct wd_err *err)
{
	if (!spec)
		return wd_err_set(err, WD_E_INVAL, "rule: missing");
	/* An optional ";max_request_bytes=SIZE" suffix, so a rule given as one
	 * string (command line, policy list) can carry its body cap. */
	static const char cap_key[] = ";max_request_bytes=";
	const char *cap = strstr(spec, cap_key);
	uint64_t cap_bytes = 0;
	wd_autofree char *head = NULL;
	if (cap) {
		if (deny)
			return wd_err_set(err, WD_E_INVAL, "rule '%s': deny rules take no body cap",
					  spec);
		if (wd_parse_size(cap + sizeof(cap_key) - 1, &cap_bytes) < 0 || cap_bytes == 0)
			return wd_err_set(err, WD_E_INVAL,
					  "rule '%s': max_request_bytes wants a size (65536, 1M)",
					  spec);
		head = wd_xasprintf("%.*s", (int)(cap - spec), spec);
	}
	struct net_rule *r = wd_xcalloc(1, sizeof(*r));
	if (rule_parse(head ? head : spec, deny, r, err) < 0) {
		free(r->path);
		free(r);
		return -EINVAL;
	}
	r->max_request_bytes = cap_bytes;
	if (opts && opts->max_request_bytes)
		r->max_request_bytes = opts->max_request_bytes;
	rule_format(r);
	rules->rules = wd_xrealloc(rules->rules, (rules->n_rules + 1) * sizeof(*rules->rules));
	rules->rules[rules->n_rules++] = r;
	if (!deny)
		rules->n_allow++;
	return 0;
}

int
net_rules_add_allow(struct net_rules *rules, const char *spec, const struct net_rule_opts *opts,
		    struct wd_err *err)
{
	return rules_add(rules, spec, false, opts, err);
}

int
net_rules_add_deny(struct net_rules *rules, const char *spec, struct wd_err *err)
{
	return rules_add(rules, spec, true, NULL, err);
}

int
net_rules_add_range(struct net_rules *rules, const char *spec, struct wd_err *err)
{
	if (!spec)
		return wd_err_set(err, WD_E_INVAL, "range: missing");
	struct net_rule *r = wd_xcalloc(1, sizeof(*r));
	/* Parsed as an allow rule, then held to what a range may say: an
	 * address or prefix and nothing else.  Ports, paths, methods and body
	 * caps belong to the allow rule for the name; a range that carried
	 * them would suggest it admits something. */
	int rc = rule_parse(spec, false, r, err);
	if (rc == 0 && r->kind != RULE_CIDR)
		rc = wd_err_set(err, WD_E_INVAL,
				"range '%s': not an address or CIDR (a range lifts the refusal "
				"of loopback and private addresses; names go in --allow-host)",
				spec);
	else if (rc == 0 && (r->port != PORT_DEFAULT || r->path || r->n_methods))
		rc = wd_err_set(err, WD_E_INVAL,
				"range '%s': a range is an address or CIDR only; ports, paths "
				"and methods belong to the --allow-host rule for the name",
				spec);
	if (rc < 0) {
		free(r->path);
		free(r);
		return -EINVAL;
	}
	r->range = true;
	rule_format(r);
	rules->rules = wd_xrealloc(rules->rules, (rules->n_rules + 1) * sizeof(*rules->rules));
	rules->rules[rules->n_rules++] = r;
	return 0;
}

int
net_rules_add_host(struct net_rules *rules, const char *spec, struct wd_err *err)
{
	const char *eq = spec ? strchr(spec, '=') : NULL;
	if (!eq)
		return wd_err_set(err, WD_E_INVAL, "hosts entry '%s': expected NAME=ADDRESS",
				  spec ? spec : "");
	struct host_entry e;
	memset(&e, 0, sizeof(e));
	size_t nlen = (size_t)(eq - spec);
	struct sockaddr_storage tmp;
	if (memchr(spec, '*', nlen) || net_addr_parse(spec, nlen, 0, &tmp) ||
	    net_host_normalize(spec, nlen, e.name, sizeof(e.name)) < 0)
		return wd_err_set(err, WD_E_INVAL, "hosts entry '%s': bad name", spec);
	if (!net_addr_parse(eq + 1, strlen(eq + 1), 0, &e.addr))
		return wd_err_set(err, WD_E_INVAL, "hosts entry '%s': bad address", spec);
	rules->hosts = wd_xrealloc(rules->hosts, (rules->n_hosts + 1) * sizeof(*rules->hosts));
	rules->hosts[rules->n_hosts++] = e;
	return 0;
}

size_t
net_rules_lookup_host(const struct net_rules *rules, const char *name, struct sockaddr_storage *out,
		      size_t max)
{
	char norm[256];
	size_t n = 0;
	if (net_host_normalize(name, strlen(name), norm, sizeof(norm)) < 0)
		return 0;
	for (size_t i = 0; i < rules->n_hosts && n < max; i++)
		if (strcmp(rules->hosts[i].name, norm) == 0)
			out[n++] = rules->hosts[i].addr;
	return n;
}

/* ---- matching ---- */

static bool
addr_in_rule(const struct net_rule *r, int family, const uint8_t *a)
{
	if (r->kind != RULE_CIDR || r->family != family)
		return false;
	unsigned full = r->prefix / 8, bits = r->prefix % 8;
	if (memcmp(a, r->addr, full) != 0)
		return false;
	if (bits) {
		uint8_t mask = (uint8_t)(0xff << (8 - bits));
		if ((a[full] & mask) != (r->addr[full] & mask))
			return false;
	}
	return true;
}

bool
net_rules_admits_name(const struct net_rules *rules, const char *host)
{
	uint8_t a[16];
	int family = 0;
	if (inet_pton(AF_INET, host, a) == 1)
		family = AF_INET;
	else if (inet_pton(AF_INET6, host, a) == 1)
		family = AF_INET6;
	for (size_t i = 0; rules && i < rules->n_rules; i++) {
		const struct net_rule *r = rules->rules[i];
		if (r->deny || r->range)
			continue;
		if (family ? addr_in_rule(r, family, a)
			   : r->kind == RULE_NAME && !strcasecmp(r->host, host))
			return true;
	}
	return false;
}

/* Family and raw bytes of an address; an IPv4-mapped IPv6 address counts
 * as the IPv4 address it maps, so "::ffff:10.0.0.1" meets 10.0.0.0/8. */
static int
addr_bytes(const struct sockaddr *sa, uint8_t out[16])
{
	if (sa->sa_family == AF_INET) {
		memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return AF_INET;
	}
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (IN6_IS_ADDR_V4MAPPED(a6)) {
		memcpy(out, a6->s6_addr + 12, 4);
		return AF_INET;
	}
	memcpy(out, a6->s6_addr, 16);
	return AF_INET6;
}

static bool
host_match(const struct net_rule *r, const char *host, const struct sockaddr_storage *lit)
{
	if (lit) {
		uint8_t a[16];
		int fam = addr_bytes((const struct sockaddr *)lit, a);
		return addr_in_rule(r, fam, a);
	}
	switch (r->kind) {
	case RULE_NAME:
		return strcmp(host, r->host) == 0;
	case RULE_SUFFIX: {
		size_t hl = strlen(host), sl = strlen(r->host);
		return hl > sl + 1 && host[hl - sl - 1] == '.' &&
		       strcmp(host + hl - sl, r->host) == 0;
	}
	case RULE_CIDR:
		return false;
	}
	return false;
}

static bool
port_match(const struct net_rule *r, uint16_t port)
{
	if (r->port == PORT_ANY)
		return true;
	if (r->port == PORT_DEFAULT)
		return port == 80 || port == 443;
	return port == r->port;
}

static bool
method_match(const struct net_rule *r, const char *method)
{
	if (r->n_methods == 0)
		return true;
	for (unsigned i = 0; i < r->n_methods; i++)
		if (strcmp(r->methods[i], method) == 0)
			return true;
	return false;
}

/* A path prefix is only meaningful if the upstream cannot be talked into
 * a different path than the one compared: refuse dot segments and any
 * percent-encoded dot, slash or backslash (the ../ and %2e%2e tricks that
 * walk out of "/api/" on servers that normalize after routing). */
static bool
path_match(const struct net_rule *r, const char *path)
{
	return !r->path || net_path_prefix_match(r->path, path);
}

bool
net_path_prefix_match(const char *prefix, const char *path)
{
	size_t plen = strcspn(path, "?#");
	if (plen == 0 || path[0] != '/')
		return false;
	for (size_t i = 0; i < plen; i++) {
		if (path[i] == '\\')
			return false;
		if (path[i] == '%' && i + 2 < plen + 1) {
			char a = path[i + 1], b = (char)tolower((unsigned char)path[i + 2]);
			if ((a == '2' && (b == 'e' || b == 'f')) || (a == '5' && b == 'c'))
				return false;
		}
		if (path[i] == '/' && i + 1 < plen && path[i + 1] == '.') {
			size_t j = i + 2;
			if (j < plen && path[j] == '.')
				j++;
			if (j >= plen || path[j] == '/')
				return false;
		}
	}
	size_t rl = strlen(prefix);
	return plen >= rl && strncmp(path, prefix, rl) == 0;
}

static unsigned
specificity(const struct net_rule *r)
{
	switch (r->kind) {
	case RULE_NAME:
		return 3000 + (unsigned)strlen(r->host);
	case RULE_SUFFIX:
		return 1000 + (unsigned)strlen(r->host);
	case RULE_CIDR:
		return 2000 + r->prefix;
	}
	return 0;
}

static void
methods_text(const struct net_rule *r, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < r->n_methods && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "," : "", r->methods[i]);
}

void
net_rules_decide(const struct net_rules *rules, const struct net_request *req,
		 struct net_decision *d)
{
	char host[256];
	struct sockaddr_storage lit;
	const struct sockaddr_storage *litp = NULL;
	memset(d, 0, sizeof(*d));
	if (!req->host ||
	    net_host_normalize(req->host, strlen(req->host), host, sizeof(host)) < 0) {
		d->reason = NET_R_BAD_HOST;
		snprintf(d->advice, sizeof(d->advice),
			 "the host is not a valid name or address; use a plain DNS name");
		return;
	}
	if (net_addr_parse(host, strlen(host), req->port, &lit))
		litp = &lit;

	for (size_t i = 0; i < rules->n_rules; i++) {
		const struct net_rule *r = rules->rules[i];
		if (r->deny && host_match(r, host, litp) &&
		    (r->port == PORT_DEFAULT ? true : port_match(r, req->port))) {
			d->reason = NET_R_DENY_RULE;
			d->rule = r;
			snprintf(d->advice, sizeof(d->advice),
				 "%s is refused by rule '%s'; do not retry it, use another source",
				 host, r->text);
			return;
		}
	}

	const struct net_rule *best = NULL, *port_miss = NULL, *method_miss = NULL,
			      *path_miss = NULL, *tunnel_miss = NULL;
	for (size_t i = 0; i < rules->n_rules; i++) {
		const struct net_rule *r = rules->rules[i];
		/* a range admits no request, not even one naming its address */
		if (r->deny || r->range || !host_match(r, host, litp))
			continue;
		if (!port_match(r, req->port)) {
			port_miss = r;
			continue;
		}
		if (req->tunnel) {
			/* A tunnel hides methods, paths and bodies: a rule
			 * that restricts any of them cannot admit one. */
			if (r->n_methods || r->path || r->max_request_bytes) {
				tunnel_miss = r;
				continue;
			}
		} else {
			if (!req->method || !method_match(r, req->method)) {
				method_miss = r;
				continue;
			}
			if (!req->path || !path_match(r, req->path)) {
				path_miss = r;
				continue;
			}
		}
		if (!best || specificity(r) > specificity(best))
			best = r;
	}
	if (best) {
		d->allow = true;
		d->rule = best;
		d->max_request_bytes = best->max_request_bytes;
		return;
	}
	char m[400];
	if (tunnel_miss) {
		d->reason = NET_R_TUNNEL;
		d->rule = tunnel_miss;
		methods_text(tunnel_miss, m, sizeof(m));
		if (!tunnel_miss->n_methods && !tunnel_miss->path)
			snprintf(d->advice, sizeof(d->advice),
				 "%s caps request bodies, which a CONNECT tunnel hides; use plain "
				 "http:// or ask for --tls-intercept",
				 host);
		else
			snprintf(d->advice, sizeof(d->advice),
				 "%s is allowed only for %s%s%s, which a CONNECT tunnel hides; use "
				 "plain http:// or ask for --tls-intercept",
				 host, tunnel_miss->n_methods ? m : "some paths",
				 tunnel_miss->path ? " under " : "",
				 tunnel_miss->path ? tunnel_miss->path : "");
	} else if (method_miss) {
		d->reason = NET_R_METHOD;
		d->rule = method_miss;
		methods_text(method_miss, m, sizeof(m));
		snprintf(d->advice, sizeof(d->advice),
			 "%s allows only %s, not %s; use an allowed method or ask for a rule "
			 "that permits %s",
			 host, m, req->method ? req->method : "?",
			 req->method ? req->method : "it");
	} else if (path_miss) {
		d->reason = NET_R_PATH;
		d->rule = path_miss;
		snprintf(d->advice, sizeof(d->advice),
			 "%s allows only paths under %s (no dot segments or encoded slashes); "
			 "request a path there",
			 host, path_miss->path);
	} else if (port_miss) {
		d->reason = NET_R_PORT;
		d->rule = port_miss;
		snprintf(d->advice, sizeof(d->advice),
			 "%s is allowed, but not on port %u (rule '%s'); use an allowed port, or "
			 "ask the operator for --allow-host %s:%u",
			 host, req->port, port_miss->text, host, req->port);
	} else {
		d->reason = NET_R_NO_RULE;
		snprintf(d->advice, sizeof(d->advice),
			 "no rule allows %s:%u; work without it, or ask the operator for "
			 "--allow-host %s:%u",
			 host, req->port, host, req->port);
	}
}

bool
net_rules_name_allowed(const struct net_rules *rules, const char *name, enum net_reason *reason)
{
	char host[256];
	if (net_host_normalize(name, strlen(name), host, sizeof(host)) < 0) {
		*reason = NET_R_BAD_HOST;
		return false;
	}
	bool allowed = false;
	for (size_t i = 0; i < rules->n_rules; i++) {
		const struct net_rule *r = rules->rules[i];
		if (r->kind == RULE_CIDR || !host_match(r, host, NULL))
			continue;
		if (r->deny) {
			*reason = NET_R_DENY_RULE;
			return false;
		}
		allowed = true;
	}
	*reason = allowed ? NET_R_NONE : NET_R_NO_RULE;
	return allowed;
}

bool
net_rules_check_addr(const struct net_rules *rules, const struct sockaddr *sa, uint16_t port,
		     struct net_decision *d)
{
	uint8_t a[16];
	int fam = addr_bytes(sa, a);
	char text[INET6_ADDRSTRLEN] = "?";
	inet_ntop(fam, a, text, sizeof(text));
	for (size_t i = 0; i < rules->n_rules; i++) {
		const struct net_rule *r = rules->rules[i];
		if (r->deny && addr_in_rule(r, fam, a) &&
		    (r->port == PORT_DEFAULT || port_match(r, port))) {
			d->allow = false;
			d->reason = NET_R_DENY_RULE;
			d->rule = r;
			snprintf(d->advice, sizeof(d->advice),
				 "address %s is refused by rule '%s'; use another source", text,
				 r->text);
			return false;
		}
	}
	enum net_addr_class c = net_addr_classify(sa);
	if (c == NET_ADDR_PUBLIC)
		return true;
	/* A special range is lifted by a range containing the address (any
	 * port: the name's rule already chose the port), or by an address
	 * allow rule naming it on this port. */
	for (size_t i = 0; i < rules->n_rules; i++) {
		const struct net_rule *r = rules->rules[i];
		if (!r->deny && addr_in_rule(r, fam, a) &&
		    (r->range || port == 0 || port_match(r, port)))
			return true;
	}
	d->allow = false;
	d->reason = NET_R_ADDR_RANGE;
	d->rule = NULL;
	snprintf(d->advice, sizeof(d->advice),
		 "the destination resolves to %s, a %s address, refused unless a range allows it; "
		 "ask for --allow-range %s/%u only if that is intended",
		 text, net_addr_class_name(c), text, fam == AF_INET6 ? 128 : 32);
	return false;
}
