/* Unit tests for net/rules.c and net/addr.c: table-driven decisions. */
#include "net/net.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

static struct net_rules *
mk(const char *const *allow, const char *const *deny, const char *const *hosts)
{
	struct net_rules *r;
	struct wd_err err = {0};
	cr_assert_eq(net_rules_new(&r), 0);
	for (; allow && *allow; allow++)
		cr_assert_eq(net_rules_add_allow(r, *allow, NULL, &err), 0, "%s: %s", *allow,
			     err.msg);
	for (; deny && *deny; deny++)
		cr_assert_eq(net_rules_add_deny(r, *deny, &err), 0, "%s: %s", *deny, err.msg);
	for (; hosts && *hosts; hosts++)
		cr_assert_eq(net_rules_add_host(r, *hosts, &err), 0, "%s: %s", *hosts, err.msg);
	return r;
}

struct parse_case {
	const char *spec;
	bool ok;
	const char *text; /* canonical, when ok */
};

/* clang-format off */
static const struct parse_case parse_cases[] = {
	{"example.com", true, "allow example.com"},
	{"Example.COM.", true, "allow example.com"},
	{"api.example.com:8443", true, "allow api.example.com:8443"},
	{"api.example.com:*", true, "allow api.example.com:*"},
	{"api.example.com=get,HEAD", true, "allow api.example.com=GET,HEAD"},
	{"api.example.com:80/v1/=GET", true, "allow api.example.com:80/v1/=GET"},
	{"*.example.com", true, "allow *.example.com"},
	{"pypi.org", true, "allow pypi.org"},
	{"127.0.0.1:8080", true, "allow 127.0.0.1:8080"},
	{"10.1.2.3/8", true, "allow 10.0.0.0/8"},
	{"10.0.0.0/8:443", true, "allow 10.0.0.0/8:443"},
	{"[::1]:8080", true, "allow [::1]:8080"},
	{"fd00::/8", true, "allow [fd00::]/8"},
	{"[fd00::]/8:443", true, "allow [fd00::]/8:443"},
	{"[fd00::/8]", true, "allow [fd00::]/8"},
	{"up.example.com=PUT;max_request_bytes=1K", true, "allow up.example.com=PUT;max_request_bytes=1024"},
	{"up.example.com;max_request_bytes=64", true, "allow up.example.com;max_request_bytes=64"},
	{"npm.example.com/@types/=GET", true, "allow npm.example.com/@types/=GET"},
	{"up.example.com;max_request_bytes=", false, NULL},
	{"up.example.com;max_request_bytes=0", false, NULL},
	{"up.example.com;max_request_bytes=lots", false, NULL},
	{"*", false, NULL},
	{"*.com", false, NULL},
	{"com", false, NULL},
	{"co.uk", false, NULL},
	{"*.co.uk", false, NULL},
	{"*.github.io", false, NULL},
	{"*.internal", false, NULL},
	{"a.*.com", false, NULL},
	{"*example.com", false, NULL},
	{"", false, NULL},
	{"exa mple.com", false, NULL},
	{"example.com:0", false, NULL},
	{"example.com:65536", false, NULL},
	{"example.com:", false, NULL},
	{"example.com:80x", false, NULL},
	{"example.com=", false, NULL},
	{"example.com=GET,", false, NULL},
	{"example.com=G(ET", false, NULL},
	{"example.com/a%2e", false, NULL},
	{"0.0.0.0/0", false, NULL},
	{"::/0", false, NULL},
	{"10.0.0.0/33", false, NULL},
	{"127.1", false, NULL},
	{"0x7f.0.0.1", false, NULL},
	{"a..b.com", false, NULL},
	{"[::1", false, NULL},
};
/* clang-format on */

Test(net_rules_add_allow, parses_and_refuses_table)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct net_rules *r;
		struct wd_err err = {0};
		net_rules_new(&r);
		int rc = net_rules_add_allow(r, c->spec, NULL, &err);
		cr_expect_eq(rc == 0, c->ok, "'%s': rc %d (%s)", c->spec, rc, err.msg);
		if (rc == 0 && c->text)
			cr_expect_str_eq(net_rule_text(net_rules_at(r, 0)), c->text, "'%s'",
					 c->spec);
		if (!c->ok)
			cr_expect_neq(err.msg[0], '\0', "'%s' has a message", c->spec);
		net_rules_free(r);
	}
}

Test(net_rules_add_deny, refuses_methods_and_paths)
{
	struct net_rules *r;
	struct wd_err err = {0};
	net_rules_new(&r);
	cr_expect_lt(net_rules_add_deny(r, "a.example.com=GET", &err), 0);
	cr_expect_lt(net_rules_add_deny(r, "a.example.com/x", &err), 0);
	cr_expect_eq(net_rules_add_deny(r, "*.evil.example", &err), 0);
	cr_expect_eq(net_rules_count(r), 0);
	net_rules_free(r);
}

Test(net_rules_add_host, parses_entries)
{
	struct net_rules *r;
	struct wd_err err = {0};
	struct sockaddr_storage ss[4];
	net_rules_new(&r);
	cr_assert_eq(net_rules_add_host(r, "db.test=10.0.0.5", &err), 0);
	cr_assert_eq(net_rules_add_host(r, "DB.test.=::1", &err), 0);
	cr_expect_lt(net_rules_add_host(r, "db.test", &err), 0);
	cr_expect_lt(net_rules_add_host(r, "*.db.test=1.2.3.4", &err), 0);
	cr_expect_lt(net_rules_add_host(r, "1.2.3.4=1.2.3.4", &err), 0);
	cr_expect_lt(net_rules_add_host(r, "x.test=not-an-ip", &err), 0);
	cr_expect_eq(net_rules_lookup_host(r, "db.TEST.", ss, 4), 2);
	cr_expect_eq(ss[0].ss_family, AF_INET);
	cr_expect_eq(ss[1].ss_family, AF_INET6);
	cr_expect_eq(net_rules_lookup_host(r, "other.test", ss, 4), 0);
	net_rules_free(r);
}

struct decide_case {
	const char *host;
	uint16_t port;
	const char *method; /* NULL: tunnel */
	const char *path;
	bool allow;
	enum net_reason reason;
	const char *rule; /* text of the rule in the decision, or NULL */
};

static const char *const d_allow[] = {
    "example.com",	   "api.example.com:8443=GET,HEAD",
    "*.cdn.example.net",   "files.example.org/pub/=GET",
    "put.example.org=PUT", "127.0.0.1:8080",
    "10.0.0.0/8:*",	   "[::1]:9000",
    "*.example.io",	   NULL,
};
static const char *const d_deny[] = {"evil.cdn.example.net", "bad.example.io:443", NULL};

/* clang-format off */
static const struct decide_case decide_cases[] = {
	{"example.com", 443, NULL, NULL, true, NET_R_NONE, "allow example.com"},
	{"EXAMPLE.com.", 80, "GET", "/", true, NET_R_NONE, "allow example.com"},
	{"example.com", 8080, NULL, NULL, false, NET_R_PORT, "allow example.com"},
	{"www.example.com", 443, NULL, NULL, false, NET_R_NO_RULE, NULL},
	{"example.com.evil.test", 443, NULL, NULL, false, NET_R_NO_RULE, NULL},
	{"api.example.com", 8443, "GET", "/x", true, NET_R_NONE, "allow api.example.com:8443=GET,HEAD"},
	{"api.example.com", 8443, "PUT", "/x", false, NET_R_METHOD, "allow api.example.com:8443=GET,HEAD"},
	{"api.example.com", 8443, "get", "/x", false, NET_R_METHOD, NULL},
	{"api.example.com", 8443, NULL, NULL, false, NET_R_TUNNEL, "allow api.example.com:8443=GET,HEAD"},
	{"a.cdn.example.net", 443, NULL, NULL, true, NET_R_NONE, "allow *.cdn.example.net"},
	{"a.b.cdn.example.net", 80, "POST", "/", true, NET_R_NONE, "allow *.cdn.example.net"},
	{"cdn.example.net", 443, NULL, NULL, false, NET_R_NO_RULE, NULL},
	{"xcdn.example.net", 443, NULL, NULL, false, NET_R_NO_RULE, NULL},
	{"evil.cdn.example.net", 443, NULL, NULL, false, NET_R_DENY_RULE, "deny evil.cdn.example.net"},
	{"EVIL.cdn.example.net.", 80, "GET", "/", false, NET_R_DENY_RULE, "deny evil.cdn.example.net"},
	{"bad.example.io", 443, NULL, NULL, false, NET_R_DENY_RULE, "deny bad.example.io:443"},
	{"bad.example.io", 80, "GET", "/", true, NET_R_NONE, "allow *.example.io"},
	{"files.example.org", 80, "GET", "/pub/a.tgz", true, NET_R_NONE, NULL},
	{"files.example.org", 80, "GET", "/pub", false, NET_R_PATH, NULL},
	{"files.example.org", 80, "GET", "/pub/../etc", false, NET_R_PATH, NULL},
	{"files.example.org", 80, "GET", "/pub/%2e%2e/etc", false, NET_R_PATH, NULL},
	{"files.example.org", 80, "GET", "/pub/a%2Fb", false, NET_R_PATH, NULL},
	{"files.example.org", 80, "GET", "/pub/./a", false, NET_R_PATH, NULL},
	{"files.example.org", 80, "GET", "/pub/a?x=/../", true, NET_R_NONE, NULL},
	{"files.example.org", 80, "GET", "/pub/.hidden", true, NET_R_NONE, NULL},
	{"files.example.org", 80, "POST", "/pub/a", false, NET_R_METHOD, NULL},
	{"files.example.org", 443, NULL, NULL, false, NET_R_TUNNEL, NULL},
	{"put.example.org", 80, "PUT", "/", true, NET_R_NONE, NULL},
	{"put.example.org", 80, "GET", "/", false, NET_R_METHOD, NULL},
	{"127.0.0.1", 8080, NULL, NULL, true, NET_R_NONE, "allow 127.0.0.1:8080"},
	{"127.0.0.1", 8081, NULL, NULL, false, NET_R_PORT, NULL},
	{"127.0.0.2", 8080, NULL, NULL, false, NET_R_NO_RULE, NULL},
	{"10.9.8.7", 22, NULL, NULL, true, NET_R_NONE, "allow 10.0.0.0/8:*"},
	{"::ffff:10.9.8.7", 22, NULL, NULL, true, NET_R_NONE, "allow 10.0.0.0/8:*"},
	{"::1", 9000, NULL, NULL, true, NET_R_NONE, "allow [::1]:9000"},
	{"localhost", 80, NULL, NULL, false, NET_R_NO_RULE, NULL},
	{"127.1", 8080, NULL, NULL, false, NET_R_BAD_HOST, NULL},
	{"2130706433", 8080, NULL, NULL, false, NET_R_BAD_HOST, NULL},
	{"exa mple.com", 443, NULL, NULL, false, NET_R_BAD_HOST, NULL},
	{"", 443, NULL, NULL, false, NET_R_BAD_HOST, NULL},
};
/* clang-format on */

Test(net_rules_decide, decision_table)
{
	struct net_rules *r = mk(d_allow, d_deny, NULL);
	for (size_t i = 0; i < sizeof(decide_cases) / sizeof(decide_cases[0]); i++) {
		const struct decide_case *c = &decide_cases[i];
		struct net_request q = {.host = c->host,
					.port = c->port,
					.method = c->method,
					.path = c->path,
					.tunnel = c->method == NULL};
		struct net_decision d;
		net_rules_decide(r, &q, &d);
		cr_expect_eq(d.allow, c->allow, "%zu %s:%u %s %s: allow=%d reason=%s", i, c->host,
			     c->port, c->method ? c->method : "tunnel", c->path ? c->path : "",
			     d.allow, net_reason_name(d.reason));
		cr_expect_eq(d.reason, c->reason, "%zu %s: reason %s, want %s", i, c->host,
			     net_reason_name(d.reason), net_reason_name(c->reason));
		if (c->rule)
			cr_expect_str_eq(net_rule_text(d.rule) ? net_rule_text(d.rule) : "(null)",
					 c->rule, "%zu %s", i, c->host);
		if (!d.allow)
			cr_expect_neq(d.advice[0], '\0', "%zu has advice", i);
	}
	net_rules_free(r);
}

Test(net_rules_decide, most_specific_rule_sets_body_cap)
{
	struct net_rules *r;
	struct wd_err err = {0};
	struct net_rule_opts o1 = {.max_request_bytes = 100}, o2 = {.max_request_bytes = 5};
	net_rules_new(&r);
	cr_assert_eq(net_rules_add_allow(r, "*.example.com", &o1, &err), 0);
	cr_assert_eq(net_rules_add_allow(r, "up.example.com=POST", &o2, &err), 0);
	struct net_request q = {
	    .host = "up.example.com", .port = 80, .method = "POST", .path = "/"};
	struct net_decision d;
	net_rules_decide(r, &q, &d);
	cr_expect(d.allow);
	cr_expect_eq(d.max_request_bytes, 5);
	cr_expect_str_eq(net_rule_text(d.rule), "allow up.example.com=POST;max_request_bytes=5");
	q.method = "GET";
	net_rules_decide(r, &q, &d);
	cr_expect(d.allow);
	cr_expect_eq(d.max_request_bytes, 100);
	/* a tunnel would hide the body: a capped rule admits none */
	struct net_request t = {.host = "x.example.com", .port = 443, .tunnel = true};
	net_rules_decide(r, &t, &d);
	cr_expect_not(d.allow);
	cr_expect_eq(d.reason, NET_R_TUNNEL);
	cr_expect(strstr(d.advice, "caps request bodies"), "%s", d.advice);
	net_rules_free(r);
}

Test(net_rules_name_allowed, dns_stage_ignores_ports_and_methods)
{
	struct net_rules *r = mk(d_allow, d_deny, NULL);
	enum net_reason why;
	cr_expect(net_rules_name_allowed(r, "api.example.com", &why));
	cr_expect(net_rules_name_allowed(r, "x.cdn.example.net.", &why));
	cr_expect_not(net_rules_name_allowed(r, "evil.cdn.example.net", &why));
	cr_expect_eq(why, NET_R_DENY_RULE);
	cr_expect_not(net_rules_name_allowed(r, "google.com", &why));
	cr_expect_eq(why, NET_R_NO_RULE);
	cr_expect_not(net_rules_name_allowed(r, "127.0.0.1", &why));
	net_rules_free(r);
}

struct class_case {
	const char *addr;
	enum net_addr_class cls;
};
/* clang-format off */
static const struct class_case class_cases[] = {
	{"8.8.8.8", NET_ADDR_PUBLIC},
	{"127.0.0.1", NET_ADDR_LOOPBACK},
	{"127.255.0.9", NET_ADDR_LOOPBACK},
	{"169.254.169.254", NET_ADDR_LINK_LOCAL},
	{"10.1.1.1", NET_ADDR_PRIVATE},
	{"172.16.0.1", NET_ADDR_PRIVATE},
	{"172.31.255.255", NET_ADDR_PRIVATE},
	{"172.32.0.1", NET_ADDR_PUBLIC},
	{"192.168.1.1", NET_ADDR_PRIVATE},
	{"100.64.0.1", NET_ADDR_CGNAT},
	{"100.127.255.255", NET_ADDR_CGNAT},
	{"100.128.0.1", NET_ADDR_PUBLIC},
	{"0.0.0.0", NET_ADDR_UNSPECIFIED},
	{"224.0.0.1", NET_ADDR_MULTICAST},
	{"255.255.255.255", NET_ADDR_BROADCAST},
	{"240.0.0.1", NET_ADDR_RESERVED},
	{"192.0.2.1", NET_ADDR_RESERVED},
	{"::", NET_ADDR_UNSPECIFIED},
	{"::1", NET_ADDR_LOOPBACK},
	{"fe80::1", NET_ADDR_LINK_LOCAL},
	{"fd12::1", NET_ADDR_PRIVATE},
	{"fc00::1", NET_ADDR_PRIVATE},
	{"ff02::1", NET_ADDR_MULTICAST},
	{"::ffff:127.0.0.1", NET_ADDR_LOOPBACK},
	{"::ffff:169.254.169.254", NET_ADDR_LINK_LOCAL},
	{"64:ff9b::a9fe:a9fe", NET_ADDR_LINK_LOCAL},
	{"2002:7f00:1::", NET_ADDR_LOOPBACK},
	{"2001:db8::1", NET_ADDR_RESERVED},
	{"2606:4700::1111", NET_ADDR_PUBLIC},
};
/* clang-format on */

Test(net_addr_classify, class_table)
{
	for (size_t i = 0; i < sizeof(class_cases) / sizeof(class_cases[0]); i++) {
		struct sockaddr_storage ss;
		cr_assert(net_addr_parse(class_cases[i].addr, strlen(class_cases[i].addr), 80, &ss),
			  "%s parses", class_cases[i].addr);
		cr_expect_eq(net_addr_classify((struct sockaddr *)&ss), class_cases[i].cls,
			     "%s: %s", class_cases[i].addr,
			     net_addr_class_name(net_addr_classify((struct sockaddr *)&ss)));
	}
}

Test(net_addr_parse, strict_literals)
{
	struct sockaddr_storage ss;
	cr_expect(net_addr_parse("[::1]", 5, 1, &ss));
	cr_expect(net_addr_parse("1.2.3.4", 7, 1, &ss));
	cr_expect_not(net_addr_parse("01.2.3.4", 8, 1, &ss));
	cr_expect_not(net_addr_parse("1.2.3", 5, 1, &ss));
	cr_expect_not(net_addr_parse("1.2.3.4.5", 9, 1, &ss));
	cr_expect_not(net_addr_parse("256.1.1.1", 9, 1, &ss));
	cr_expect_not(net_addr_parse("[1.2.3.4]", 9, 1, &ss));
	cr_expect_not(net_addr_parse("fe80::1%eth0", 12, 1, &ss));
}

struct addr_case {
	const char *addr;
	uint16_t port;
	bool allow;
};

Test(net_rules_check_addr, ranges_need_address_rules)
{
	static const char *const allow[] = {"127.0.0.1:8080", "192.168.0.0/16:*", "fd00::/8",
					    "ok.test", NULL};
	static const char *const deny[] = {"8.8.4.4", NULL};
	/* clang-format off */
	static const struct addr_case cases[] = {
		{"127.0.0.1", 8080, true},
		{"127.0.0.1", 8081, false},
		{"127.0.0.2", 8080, false},
		{"::ffff:127.0.0.1", 8080, true},
		{"::1", 8080, false},
		{"169.254.169.254", 80, false},
		{"192.168.4.4", 5432, true},
		{"10.0.0.1", 80, false},
		{"100.64.1.1", 80, false},
		{"fd00::5", 443, true},
		{"fd00::5", 8443, false},
		{"fe80::1", 443, false},
		{"0.0.0.0", 80, false},
		{"224.0.0.1", 80, false},
		{"8.8.8.8", 443, true},
		{"8.8.4.4", 443, false},
	};
	/* clang-format on */
	struct net_rules *r = mk(allow, deny, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		struct net_decision d = {0};
		cr_assert(net_addr_parse(cases[i].addr, strlen(cases[i].addr), cases[i].port, &ss));
		bool ok = net_rules_check_addr(r, (struct sockaddr *)&ss, cases[i].port, &d);
		cr_expect_eq(ok, cases[i].allow, "%s:%u", cases[i].addr, cases[i].port);
		if (!ok)
			cr_expect_neq(d.advice[0], '\0');
	}
	net_rules_free(r);
}

Test(net_host_normalize, lowercases_and_strips_dot)
{
	char out[256];
	cr_expect_eq(net_host_normalize("WWW.Example.COM.", 16, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "www.example.com");
	cr_expect_lt(net_host_normalize("a..b", 4, out, sizeof(out)), 0);
	cr_expect_lt(net_host_normalize("example.com..", 13, out, sizeof(out)), 0);
	cr_expect_lt(net_host_normalize(".", 1, out, sizeof(out)), 0);
	char big[80];
	memset(big, 'a', 64);
	strcpy(big + 64, ".com");
	cr_expect_lt(net_host_normalize(big, strlen(big), out, sizeof(out)), 0);
	cr_expect_eq(net_host_normalize("[::FFFF:7f00:1]", 15, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "::ffff:127.0.0.1");
}

/* A range only lifts the address stage's refusal of special
 * ranges; it admits no request by itself. */
Test(net_rules_add_range, parses_addresses_and_prefixes_only)
{
	/* clang-format off */
	static const struct parse_case cases[] = {
		{"127.0.0.0/8", true, "range 127.0.0.0/8"},
		{"10.1.2.3/8", true, "range 10.0.0.0/8"},
		{"127.0.0.2", true, "range 127.0.0.2"},
		{"fd00::/8", true, "range [fd00::]/8"},
		{"[fd00::]/8", true, "range [fd00::]/8"},
		{"[::1]", true, "range [::1]"},
		{"web.test", false, NULL},
		{"*.test", false, NULL},
		{"127.0.0.0/8:8080", false, NULL},
		{"127.0.0.0/8:*", false, NULL},
		{"[fd00::]/8:443", false, NULL},
		{"10.0.0.0/8=GET", false, NULL},
		{"10.0.0.0/8/x", false, NULL},
		{"10.0.0.0/8;max_request_bytes=1", false, NULL},
		{"0.0.0.0/0", false, NULL},
		{"10.0.0.0/4", false, NULL},
		{"127.1/8", false, NULL},
		{"", false, NULL},
	};
	/* clang-format on */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct net_rules *r;
		struct wd_err err = {0};
		net_rules_new(&r);
		int rc = net_rules_add_range(r, cases[i].spec, &err);
		cr_expect_eq(rc == 0, cases[i].ok, "'%s': rc %d (%s)", cases[i].spec, rc, err.msg);
		if (rc == 0)
			cr_expect_str_eq(net_rule_text(net_rules_at(r, 0)), cases[i].text);
		else
			cr_expect_neq(err.msg[0], '\0', "'%s' has a message", cases[i].spec);
		cr_expect_eq(net_rules_count(r), 0, "a range is not an allow rule");
		net_rules_free(r);
	}
}

Test(net_rules_add_range, lifts_the_address_class_without_admitting_anything)
{
	static const char *const allow[] = {"web.test:8080=GET", NULL};
	static const char *const deny[] = {"127.0.0.3", NULL};
	struct net_rules *r = mk(allow, deny, NULL);
	struct wd_err err = {0};
	cr_assert_eq(net_rules_add_range(r, "127.0.0.0/8", &err), 0, "%s", err.msg);
	cr_assert_eq(net_rules_add_range(r, "fd00::/8", &err), 0, "%s", err.msg);

	/* the name stage: the name's rule decides, the range admits nothing */
	struct net_decision d;
	struct net_request get = {.host = "web.test", .port = 8080, .method = "GET", .path = "/"};
	net_rules_decide(r, &get, &d);
	cr_expect(d.allow);
	struct net_request put = {.host = "web.test", .port = 8080, .method = "PUT", .path = "/"};
	net_rules_decide(r, &put, &d);
	cr_expect_eq(d.reason, NET_R_METHOD);
	const char *lits[] = {"127.0.0.2", "127.0.0.1", "fd00::1"};
	for (size_t i = 0; i < 3; i++) {
		struct net_request lit = {
		    .host = lits[i], .port = 8080, .method = "PUT", .path = "/"};
		net_rules_decide(r, &lit, &d);
		cr_expect_not(d.allow, "PUT %s", lits[i]);
		cr_expect_eq(d.reason, NET_R_NO_RULE, "PUT %s: %s", lits[i],
			     net_reason_name(d.reason));
		struct net_request tun = {.host = lits[i], .port = 8080, .tunnel = true};
		net_rules_decide(r, &tun, &d);
		cr_expect_eq(d.reason, NET_R_NO_RULE, "CONNECT %s", lits[i]);
	}
	/* the DNS stage: a range names no host */
	enum net_reason why;
	cr_expect_not(net_rules_name_allowed(r, "127.0.0.2", &why));

	/* the address stage: lifted inside the range on any port, not outside;
	 * a deny rule still wins */
	/* clang-format off */
	static const struct addr_case cases[] = {
		{"127.0.0.2", 8080, true},
		{"127.0.0.2", 9999, true},
		{"127.0.0.2", 0, true},
		{"::ffff:127.0.0.9", 80, true},
		{"fd00::5", 443, true},
		{"127.0.0.3", 8080, false},
		{"10.0.0.1", 8080, false},
		{"169.254.169.254", 80, false},
		{"::1", 8080, false},
		{"8.8.8.8", 443, true},
	};
	/* clang-format on */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		struct net_decision ad = {0};
		cr_assert(net_addr_parse(cases[i].addr, strlen(cases[i].addr), cases[i].port, &ss));
		bool ok = net_rules_check_addr(r, (struct sockaddr *)&ss, cases[i].port, &ad);
		cr_expect_eq(ok, cases[i].allow, "%s:%u", cases[i].addr, cases[i].port);
	}
	struct sockaddr_storage ss;
	struct net_decision ad = {0};
	cr_assert(net_addr_parse("10.0.0.1", 8, 80, &ss));
	cr_expect_not(net_rules_check_addr(r, (struct sockaddr *)&ss, 80, &ad));
	cr_expect(strstr(ad.advice, "--allow-range 10.0.0.1/32"), "%s", ad.advice);
	net_rules_free(r);
}

/* The difference the range exists for: an address allow rule written to
 * reach a local upstream admits the literal with every method. */
Test(net_rules_add_range, an_address_allow_rule_admits_the_literal)
{
	static const char *const allow[] = {"web.test:8080=GET", "127.0.0.2:8080", NULL};
	struct net_rules *r = mk(allow, NULL, NULL);
	struct net_decision d;
	struct net_request put = {.host = "127.0.0.2", .port = 8080, .method = "PUT", .path = "/"};
	net_rules_decide(r, &put, &d);
	cr_expect(d.allow, "documented: an address rule admits requests to the address");
	cr_expect_str_eq(net_rule_text(d.rule), "allow 127.0.0.2:8080");
	net_rules_free(r);
}

/* Which of the jail's own loopback names an allow rule means the host's
 * (the jail's NO_PROXY leaves those out): a name rule for the exact name,
 * an address or CIDR allow rule containing the literal; never a range or a
 * deny rule, and never a hosts entry alone. */
Test(net_rules_admits_name, loopback_names_a_rule_claims)
{
	static const char *const allow[] = {"127.0.0.1:4873", "[::1]:8080", "reg.test:80", NULL};
	static const char *const deny[] = {"localhost", NULL};
	static const char *const hosts[] = {"reg.test=127.0.0.1", NULL};
	struct net_rules *r = mk(allow, deny, hosts);
	cr_expect(net_rules_admits_name(r, "127.0.0.1"));
	cr_expect(net_rules_admits_name(r, "::1"));
	cr_expect_not(net_rules_admits_name(r, "localhost"), "a deny rule claims nothing");
	cr_expect_not(net_rules_admits_name(r, "127.0.0.2"));
	net_rules_free(r);

	static const char *const allow2[] = {"localhost:4873", "127.0.0.0/8", NULL};
	r = mk(allow2, NULL, NULL);
	cr_expect(net_rules_admits_name(r, "localhost"));
	cr_expect(net_rules_admits_name(r, "LOCALHOST"));
	cr_expect(net_rules_admits_name(r, "127.0.0.1"), "a CIDR rule containing it");
	cr_expect_not(net_rules_admits_name(r, "::1"));
	net_rules_free(r);

	struct wd_err err = {0};
	cr_assert_eq(net_rules_new(&r), 0);
	cr_assert_eq(net_rules_add_range(r, "127.0.0.0/8", &err), 0, "%s", err.msg);
	cr_expect_not(net_rules_admits_name(r, "127.0.0.1"), "a range admits no request");
	net_rules_free(r);
}
