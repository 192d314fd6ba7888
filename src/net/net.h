/* net: the egress proxy and DNS filter that serve a sandbox's network
 * namespace from the supervisor (docs/network.md).
 *
 * Shape
 * -----
 * The sandbox's network namespace has no route anywhere.  The supervisor
 * creates three listening sockets *inside* it, moves the fds out, and hands
 * them to a proxy object that serves them from outside the jail:
 *
 *     TCP 127.0.0.1:3128   HTTP/1.1 proxy: CONNECT and absolute-form requests
 *     TCP 127.0.0.1:1080   SOCKS5 (no auth, CONNECT, domain and address requests)
 *     UDP 127.0.0.1:53     DNS filter: A/AAAA for allowed names only
 *
 * Supervisor wiring, in order:
 *
 *     struct net_rules *r;  net_rules_new(&r);
 *     net_rules_add_allow(r, "api.example.com:443", NULL, err);   // --allow-host
 *     net_rules_add_deny(r, "*.evil.example", err);                // --deny-host
 *     net_rules_add_host(r, "db.test=10.0.0.5", err);              // --add-host
 *     net_rules_add_range(r, "10.0.0.5/32", err);                  // --allow-range
 *     struct net_config cfg;  net_config_init(&cfg);
 *     cfg.sandbox_id = id;  cfg.rules = r;   (plus limits from policy network.*)
 *     net_proxy_new(&cfg, audit_cb, audit_data, &p, err);
 *     // in the netns: socket+bind+listen 3128, 1080; socket+bind 53/udp
 *     // (or net_listeners_open(netns_fd, ...) from the supervisor)
 *     net_proxy_serve(p, http_fd, socks_fd, dns_fd, err);         // takes the fds
 *     net_proxy_start(p, err);                                     // own thread
 *     ... sandbox runs, with HTTP_PROXY/HTTPS_PROXY/ALL_PROXY (both cases)
 *         = http://127.0.0.1:3128 (ALL_PROXY = socks5h://127.0.0.1:1080)
 *         and /etc/resolv.conf "nameserver 127.0.0.1" ...
 *     net_proxy_stop(p);    // closes every listener, tunnel and connection
 *     net_proxy_free(p);  net_rules_free(r);
 *
 * Rules (net_rules_add_allow) read HOST[:PORT][/PATH][=METHOD,...]:
 *   HOST   exact name or "*.suffix" (matches strict subdomains only), case-
 *          insensitive, one trailing dot ignored; or an address literal
 *          (1.2.3.4, [::1]) or CIDR (10.0.0.0/8, [fd00::]/8, fd00::/8).
 *          A bare "*", a single-label wildcard ("*.com") and a name on the
 *          small built-in public-suffix list (NET_PUBLIC_SUFFIXES below) are
 *          refused: such a rule opens the whole internet.
 *   PORT   a number or "*"; absent means 80 and 443 only.
 *   PATH   prefix of the request path ("/simple/"),
 *   METHOD upper-case HTTP method tokens: both checked on plain HTTP and,
 *          with tls_intercept, inside HTTPS; a rule with either (or a body
 *          cap) admits no tunnel the proxy cannot read.
 * An allow rule may end in ";max_request_bytes=SIZE" (65536, 64K, 1M): the
 * request body cap, as struct net_rule_opts gives it.
 * A deny rule (net_rules_add_deny) reads HOST[:PORT] and wins over any
 * allow rule.  A hosts entry reads NAME=ADDRESS and is repeatable per name;
 * it says where a name goes, not whether it may be reached.  A range
 * (net_rules_add_range) reads CIDR and only says that destinations in it
 * are not refused for being loopback or private: it admits nothing.
 *
 * Threading: rules are built single-threaded, then read-only and shareable.
 * A proxy runs one thread of its own (an epoll loop) plus a small resolver
 * pool; the event callback is called on the proxy thread.
 */
#ifndef WD_NET_H
#define WD_NET_H

#include "util/util.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The built-in public-suffix list (not the full PSL: a rule naming any of
 * these alone, or "*." of it, is refused).  Exposed for docs and tests. */
extern const char *const NET_PUBLIC_SUFFIXES[];

/* ------------------------------------------------------------------ rules */

/* Why a request was refused.  net_reason_name() gives the short code that
 * goes into X-Warden-Denied and the audit event. */
enum net_reason {
	NET_R_NONE = 0,
	NET_R_DENY_RULE,    /* "deny-rule": a deny rule names the host or address */
	NET_R_NO_RULE,	    /* "no-rule": no allow rule names the host */
	NET_R_PORT,	    /* "port": the host is allowed, not on this port */
	NET_R_METHOD,	    /* "method": the host is allowed, not for this method */
	NET_R_PATH,	    /* "path": outside the rule's path prefix */
	NET_R_TUNNEL,	    /* "tunnel-hides-method": CONNECT/SOCKS to a host whose
			     * rule restricts methods or paths or caps bodies,
			     * without TLS interception */
	NET_R_ADDR_RANGE,   /* "address-range": resolved into a refused range */
	NET_R_RESOLVE,	    /* "resolve-failed" */
	NET_R_CONNECT,	    /* "upstream-connect-failed" */
	NET_R_BODY_LIMIT,   /* "max-request-bytes" */
	NET_R_CONN_LIMIT,   /* "max-connections" */
	NET_R_BYTE_LIMIT,   /* "max-total-bytes" */
	NET_R_MALFORMED,    /* "malformed-request" */
	NET_R_TIMEOUT,	    /* "header-timeout" (or connect/idle timeout) */
	NET_R_RATE_LIMIT,   /* "rate-limit" (DNS) */
	NET_R_LABEL,	    /* "oversized-label" (DNS) */
	NET_R_QTYPE,	    /* "query-type" (DNS: not A/AAAA) */
	NET_R_BAD_HOST,	    /* "bad-host": not a valid host name or address */
	NET_R_NOT_PROXY,    /* "not-a-proxy-request": origin-form to the proxy */
	NET_R_UPSTREAM,	    /* "bad-upstream-response" */
	NET_R_TLS,	    /* "tls-failed": a handshake or the upstream's
			     * certificate failed (intercepted tunnels) */
	NET_R_MISDIRECTED,  /* "misdirected": inside an intercepted tunnel, SNI or
			     * Host named another host than the CONNECT */
	NET_R_FRAMING,	    /* "ambiguous-framing": a head that a server could frame
			     * or route differently from the proxy (request
			     * smuggling; enum net_http_flaw says which shape) */
	NET_R_EXFIL,	    /* "secret-exfiltration": a secret's placeholder or
			     * value on its way to a destination no inject rule
			     * binds it to (the URL, a header, the body, a host
			     * name or a DNS query) */
	NET_R_SECRET_PROBE, /* "secret-probe": an alert, not a request: the
			     * sandbox's secret-exfiltration refusals reached
			     * NET_PROBE_ALERT_AT, or doubled since the last
			     * alert (proxy_exfil_alert) */
	NET_R__COUNT
};
const char *net_reason_name(enum net_reason r);

typedef struct net_rules net_rules;
struct net_rule;

/* Options for an allow rule that a policy sets per rule (network.allow
 * entries).  NULL means no options. */
struct net_rule_opts {
	uint64_t max_request_bytes; /* request body cap, 0 = none */
};

/* Returns a new, empty rule set; free with net_rules_free(). */
int net_rules_new(struct net_rules **out);
void net_rules_free(struct net_rules *rules);
WD_DEFINE_AUTOPTR(net_rules, net_rules_free)

/* Add one rule or entry; spec syntax above.  0 or -EINVAL with err set to
 * a message naming the spec and what is wrong with it. */
int net_rules_add_allow(struct net_rules *rules, const char *spec, const struct net_rule_opts *opts,
			struct wd_err *err);
int net_rules_add_deny(struct net_rules *rules, const char *spec, struct wd_err *err);
int net_rules_add_host(struct net_rules *rules, const char *spec, struct wd_err *err);
/* A range (--allow-range CIDR): an address or prefix ("127.0.0.0/8",
 * "10.0.0.0/8", "fd00::/8", "127.0.0.2"), nothing else.  It only lifts the
 * address stage's refusal of special ranges (loopback, private, link-local,
 * ...) for destinations inside it, on any port; it admits no request by
 * itself: a request still needs an allow rule for the host it names, with
 * that rule's ports, methods and paths, and a request naming an address in
 * the range is decided like any other (no-rule without an allow rule).
 * Compare an address allow rule ("127.0.0.2:8080"), which lifts the
 * refusal and also admits requests to the literal with its methods. */
int net_rules_add_range(struct net_rules *rules, const char *spec, struct wd_err *err);
/* Number of allow rules (0 means "network off" to the caller). */
size_t net_rules_count(const struct net_rules *rules);

/* Whether an allow rule names host itself: a name rule for that exact name,
 * or an address rule (not a --allow-range) containing that literal
 * address.  The jail's NO_PROXY leaves such a loopback name out, so that
 * clients send it through the proxy to the host's service the rule means
 * (plan.c). */
bool net_rules_admits_name(const struct net_rules *rules, const char *host);

/* The i-th rule added (allow and deny, in order), or NULL past the end. */
const struct net_rule *net_rules_at(const struct net_rules *rules, size_t i);
/* Canonical text of a rule ("allow api.example.com:443=GET,HEAD"), valid
 * as long as the rule set. */
const char *net_rule_text(const struct net_rule *rule);

/* What a request asks for.  host is as the client sent it (name or literal,
 * IPv6 without brackets); method and path are NULL for a tunnel (CONNECT,
 * SOCKS) and path is the origin-form target ("/a/b?q") for plain HTTP. */
struct net_request {
	const char *host;
	uint16_t port;
	const char *method;
	const char *path;
	bool tunnel;
};

struct net_decision {
	bool allow;
	enum net_reason reason;	     /* NET_R_NONE when allowed */
	const struct net_rule *rule; /* the allow rule used, or the deny rule hit */
	uint64_t max_request_bytes;  /* from the allow rule, 0 = none */
	char advice[256];	     /* one line: why, and what to do instead */
};

/* Decide on a request by host, port, method and path (the name stage; the
 * address stage is net_rules_check_addr()).  Never fails: a malformed host
 * is a refusal with NET_R_BAD_HOST. */
void net_rules_decide(const struct net_rules *rules, const struct net_request *req,
		      struct net_decision *out);

/* DNS stage: may this name be answered at all (any allow rule names it, no
 * deny rule does)?  Ports and methods are ignored. */
bool net_rules_name_allowed(const struct net_rules *rules, const char *name,
			    enum net_reason *reason);

/* Addresses a hosts entry gives for name (exact, case-insensitive, trailing
 * dot ignored): copies up to max into out, returns how many (0 = none). */
size_t net_rules_lookup_host(const struct net_rules *rules, const char *name,
			     struct sockaddr_storage *out, size_t max);

/* Address stage, after resolution and before connect: a destination in a
 * special range (loopback, link-local, private, CGNAT, unspecified,
 * multicast, broadcast, reserved; IPv4-mapped and NAT64 IPv6 are judged by
 * their IPv4 address) is refused unless a range contains it, or an allow
 * rule names an address or CIDR containing it on this port; a deny rule
 * naming it always refuses.
 * Returns true if connecting to sa:port is allowed; on refusal fills d.
 * Port 0 means "on any port" (the DNS filter's question). */
bool net_rules_check_addr(const struct net_rules *rules, const struct sockaddr *sa, uint16_t port,
			  struct net_decision *d);

/* Address classes, for the check above and for tests. */
enum net_addr_class {
	NET_ADDR_PUBLIC = 0,
	NET_ADDR_LOOPBACK,
	NET_ADDR_LINK_LOCAL,
	NET_ADDR_PRIVATE,
	NET_ADDR_CGNAT,
	NET_ADDR_UNSPECIFIED,
	NET_ADDR_MULTICAST,
	NET_ADDR_BROADCAST,
	NET_ADDR_RESERVED,
};
enum net_addr_class net_addr_classify(const struct sockaddr *sa);
const char *net_addr_class_name(enum net_addr_class c);

/* A request path under an allow or inject rule's path prefix: the
 * prefix matches the path before any '?' or '#', and the path has no dot
 * segment, backslash or percent-encoded '.', '/' or '\\' that a server
 * could resolve out of the prefix ("/pub/../admin"). */
bool net_path_prefix_match(const char *prefix, const char *path);

/* Host-name helpers.  net_host_normalize lowercases and drops one trailing
 * dot into out (cap bytes); 0, or -EINVAL for anything but LDH labels of
 * 1..63 bytes (underscore allowed), at most 253 bytes in all, or an address
 * literal. */
int net_host_normalize(const char *host, size_t len, char *out, size_t cap);
/* Parse an address literal (IPv4 dotted quad, or IPv6 with or without
 * brackets) into sa with port; true on success. */
bool net_addr_parse(const char *s, size_t len, uint16_t port, struct sockaddr_storage *sa);

/* --------------------------------------------------------------- secrets
 *
 * Credentials the sandbox never holds.  Warden reads each value
 * (net_secret_read: "@FILE" or "env:VAR"), keeps it in locked memory
 * (util's wd_secure_alloc: mlock, MADV_DONTDUMP, MADV_WIPEONFORK, wiped on
 * free) and the proxy adds it to requests for the destinations an inject
 * rule names, inside intercepted HTTPS (or plain HTTP where the rule says
 * "http://").  The sandbox sees at most a placeholder
 * ("warden-placeholder-" and 32 random hex digits) in a variable of its
 * environment.  A request to any other destination that carries a
 * secret's placeholder or its value (the URL, a header, a Basic
 * credential, the body), a host name or a DNS query that contains one,
 * is refused with NET_R_EXFIL and audited.
 *
 * Inject rules:
 *   header  "[http://]HOST[:PORT][/PATH] HEADER=TEMPLATE"
 *           ("api.github.test Authorization=Bearer {GITHUB_TOKEN}")
 *   basic   "[http://]HOST[:PORT][/PATH] USER:PASSWORD", both templates
 *           ("git.test x-access-token:{GITHUB_TOKEN}"), sent as
 *           "Authorization: Basic base64(USER:PASSWORD)"
 * HOST is one exact name or address (no wildcard: a credential goes where
 * it is named); PORT defaults to 443 (80 with http://); PATH is a prefix,
 * matched like an allow rule's (no dot segments, no encoded '.', '/', '\').
 * TEMPLATE is printable ASCII with {NAME} for the value of secret NAME.
 * The header is added, replacing every field of that name the client sent;
 * when two rules set one header the longer path wins.
 *
 * Lifetime: built single-threaded (net_secrets_add*), then shared read-
 * only: net_secrets_ref() takes a reference (a spec's copies share one
 * object), net_secrets_free() drops one; adding to a shared object fails
 * with -EBUSY (copy it with net_secrets_clone()). */
#define NET_SECRET_MIN 8    /* bytes: shorter values turn up in traffic by chance */
#define NET_SECRET_MAX 4096 /* bytes of one value (a file may add one newline) */
#define NET_HOLD_SMALL 256  /* the response window while every value encodes to this */
/* The secret-exfiltration refusals in one sandbox that raise a
 * "secret-probe" alert event (again at each doubling: 3, 6, 12, ...). */
#define NET_PROBE_ALERT_AT 3
#define NET_SECRETS_MAX 32     /* secrets per set */
#define NET_INJECTS_MAX 64     /* inject rules per set */
#define NET_PLACEHOLDER_LEN 51 /* "warden-placeholder-" + 32 hex */

typedef struct net_secrets net_secrets;

enum net_inject_kind {
	NET_INJECT_HEADER = 0, /* HEADER=TEMPLATE */
	NET_INJECT_BASIC = 1,  /* USER:PASSWORD, as Authorization: Basic */
};

int net_secrets_new(struct net_secrets **out);
/* Drop a reference; the last one wipes and frees every value. */
void net_secrets_free(struct net_secrets *s);
WD_DEFINE_AUTOPTR(net_secrets, net_secrets_free)
/* Another reference to s (shared read-only from now on). */
struct net_secrets *net_secrets_ref(struct net_secrets *s);
/* More than one reference: read-only. */
bool net_secrets_shared(const struct net_secrets *s);
/* A private copy (values in new locked memory, same placeholders). */
int net_secrets_clone(const struct net_secrets *s, struct net_secrets **out, struct wd_err *err);

/* Read a secret's value from source: "@FILE" (a regular file of at most
 * NET_SECRET_MAX bytes plus one trailing newline, which is dropped; opened
 * with O_NONBLOCK and checked on the descriptor, so a FIFO or a device is
 * refused without blocking) or "env:VAR" (warden's own environment).
 * Into out (cap bytes, which should be secure memory); *len gets the
 * length.  -EINVAL with err naming the source and what is wrong, never
 * the content. */
int net_secret_read(const char *source, char *out, size_t cap, size_t *len, struct wd_err *err);
/* Declare secret name ([A-Za-z_][A-Za-z0-9_]*, at most 64) with value
 * (len bytes, copied into locked memory): NET_SECRET_MIN..NET_SECRET_MAX
 * bytes of printable ASCII or UTF-8 (no control byte: the value goes into
 * a header line).  Gets a random placeholder.  -EINVAL, -EEXIST (declared
 * twice), -EBUSY (shared); err names the secret, never the value. */
int net_secrets_add(struct net_secrets *s, const char *name, const char *value, size_t len,
		    struct wd_err *err);
/* net_secret_read() then net_secrets_add(). */
int net_secrets_add_from(struct net_secrets *s, const char *name, const char *source,
			 struct wd_err *err);
/* Add an inject rule (syntax above).  Names in templates are resolved by
 * net_secrets_check(), so rules and secrets may come in any order. */
int net_secrets_add_inject(struct net_secrets *s, enum net_inject_kind kind, const char *rule,
			   struct wd_err *err);
/* The sandbox's environment variable var holds secret name's placeholder. */
int net_secrets_add_placeholder(struct net_secrets *s, const char *var, const char *name,
				struct wd_err *err);
/* Everything fits together: every name a template or placeholder uses is
 * declared, every secret is used by some rule, every rule's destination is
 * admitted by an allow rule of rules, and a rule without "http://" has
 * tls_intercept to work in.  0 or -EINVAL naming the rule or secret. */
int net_secrets_check(const struct net_secrets *s, const struct net_rules *rules,
		      bool tls_intercept, struct wd_err *err);
size_t net_secrets_count(const struct net_secrets *s);
/* "VAR=warden-placeholder-..." for each placeholder variable, i < n;
 * NULL past the end.  Valid as long as s. */
const char *net_secrets_env(const struct net_secrets *s, size_t i);
/* The placeholder of secret name, or NULL. */
const char *net_secrets_placeholder(const struct net_secrets *s, const char *name);

/* Which rules apply to a request: at most one per header (the longest
 * path), and the mask of secrets those rules use ("bound": they may
 * appear in this request). */
struct net_inject_match {
	unsigned n;
	uint16_t rule[NET_INJECTS_MAX];
	uint64_t bound; /* bit i: secret i */
};
/* https: the request is inside an intercepted tunnel (else plain HTTP).
 * host normalized; path the origin-form target. */
void net_secrets_match(const struct net_secrets *s, bool https, const char *host, uint16_t port,
		       const char *path, struct net_inject_match *m);
/* True if header name (len bytes) is set by one of m's rules (the
 * client's field is dropped). */
bool net_secrets_sets_header(const struct net_secrets *s, const struct net_inject_match *m,
			     const char *name, size_t len);
/* Write "Header: value\r\n" for rule m->rule[i] into out (cap bytes);
 * returns the length, or -1 if it does not fit.  The only place a value
 * leaves its locked memory: the caller wipes out after use. */
ssize_t net_secrets_put_header(const struct net_secrets *s, unsigned rule, char *out, size_t cap);
/* Rule text ("git.test x-access-token:{TOKEN}") and the secrets it uses
 * as "A,B" into buf; for events. */
const char *net_secrets_rule_text(const struct net_secrets *s, unsigned rule);
void net_secrets_names(const struct net_secrets *s, uint64_t mask, char *buf, size_t cap);
size_t net_secrets_rule_count(const struct net_secrets *s);
enum net_inject_kind net_secrets_rule_kind(const struct net_secrets *s, unsigned rule);
/* Secret i's value (len bytes, not terminated for the caller's use), or
 * NULL: for handing it to a session's monitor over a socket, never for a
 * file, a log or a message. */
const char *net_secrets_value(const struct net_secrets *s, unsigned i, size_t *len);
const char *net_secrets_name(const struct net_secrets *s, unsigned i);

/* Exfiltration checks.  Each returns the index of a secret whose
 * placeholder (any case) or value (as is, or percent-encoded) occurs in
 * the bytes given, among the secrets not in bound, or -1. */
int net_secrets_find(const struct net_secrets *s, uint64_t bound, const char *p, size_t n);
/* A host name or DNS query name: dots ignored (a placeholder split over
 * labels), case ignored. */
int net_secrets_find_name(const struct net_secrets *s, const char *name);
struct net_http_head;
/* A request head about to be forwarded: the target (as sent and percent-
 * decoded) and the method, every field the proxy forwards (skip set by the caller: hop-by-
 * hop and replaced fields), and the decoded credentials of "Basic" fields.
 * *where gets "the URL" or the field name (static or into where_buf). */
int net_secrets_find_head(const struct net_secrets *s, uint64_t bound, const char *buf,
			  const struct net_http_head *h,
			  bool (*skip)(const char *buf, const struct net_http_head *h, unsigned i,
				       void *arg),
			  void *arg, char *where, size_t where_cap);

/* Replace every occurrence of a value (any case, or percent-encoded) in
 * the string buf (cap bytes) with "{NAME}": for what goes into events
 * (paths, host names), which must never carry a value.  Placeholders are
 * left: they are evidence, not secrets. */
void net_secrets_redact(const struct net_secrets *s, char *buf, size_t cap);

/* Responses: replace every complete occurrence of a value (as it is, or
 * percent-encoded) in p[0..n) with as many '*' (lengths and framing stay
 * the upstream's); returns how many, and ORs the secrets found into
 * *found (may be NULL). */
size_t net_secrets_mask(const struct net_secrets *s, char *p, size_t n, uint64_t *found);
/* How many bytes at the end of a response to hold back until more arrive
 * or the body ends: the longest value (as it is, or percent-encoded) minus
 * one, for every response and whatever those bytes are, so that what the
 * sandbox receives before a pause never depends on whether it matches a
 * value (0 without secrets). */
size_t net_secrets_hold_len(const struct net_secrets *s);

/* A body, streamed: matches across feeds (the last bytes are kept). */
struct net_scan;
struct net_scan *net_scan_new(const struct net_secrets *s, uint64_t bound);
void net_scan_free(struct net_scan *sc);
/* -1, or the secret found in the stream so far. */
int net_scan_feed(struct net_scan *sc, const char *p, size_t n);

/* ------------------------------------------------------------ HTTP parser */

/* Limits of the strict request-head parser. */
#define NET_HTTP_MAX_LINE 8192	/* request line or one header line */
#define NET_HTTP_MAX_HEAD 32768 /* whole head */
#define NET_HTTP_MAX_HEADERS 100

struct net_span {
	uint32_t off, len; /* into the parsed buffer */
};
struct net_http_header {
	struct net_span name, value;
};

enum net_body_mode {
	NET_BODY_NONE = 0,
	NET_BODY_LENGTH,
	NET_BODY_CHUNKED,
	NET_BODY_CLOSE, /* responses only: until the connection closes */
};

/* Why a head was refused (set whenever a parser returns < 0; see http.c
 * for the RFC 9112 rule behind each).  net_http_flaw_text() describes it,
 * net_http_flaw_reason() gives the refusal's reason code. */
enum net_http_flaw {
	NET_HTTP_OK = 0,
	NET_HTTP_SYNTAX,	 /* request/status line, a field line, a NUL or CTL */
	NET_HTTP_TOO_LONG,	 /* a line, the head or the field count over the limits */
	NET_HTTP_VERSION,	 /* not HTTP/1.0 or 1.1 */
	NET_HTTP_LINE_END,	 /* a bare LF or lone CR (RFC 9112 §2.2) */
	NET_HTTP_OBS_FOLD,	 /* a field line continued on the next (§5.2) */
	NET_HTTP_WS_COLON,	 /* whitespace between a field name and its colon (§5.1) */
	NET_HTTP_CL_INVALID,	 /* Content-Length not one decimal number (§6.3) */
	NET_HTTP_CL_DUP,	 /* more than one Content-Length field */
	NET_HTTP_CL_TE,		 /* Content-Length with Transfer-Encoding (§6.1) */
	NET_HTTP_TE_INVALID,	 /* Transfer-Encoding not a token list, chunked twice,
				  * or (requests) chunked not last; or two such fields */
	NET_HTTP_TE_UNSUPPORTED, /* a request coding other than chunked (501) */
	NET_HTTP_TE_HTTP10,	 /* Transfer-Encoding in an HTTP/1.0 request (§6.1) */
	NET_HTTP_HOST_DUP,	 /* more than one Host field */
	NET_HTTP_CONN_FRAMING,	 /* Connection names Content-Length, Transfer-Encoding,
				  * Host, Expect or Trailer */
	NET_HTTP_CONN_SYNTAX,	 /* a Connection option that is not a token */
	NET_HTTP_NAME_ALIAS,	 /* Content_Length, Transfer_Encoding: '_' for '-' */
};
/* A short phrase ("more than one Content-Length field"), static storage. */
const char *net_http_flaw_text(enum net_http_flaw f);
/* NET_R_FRAMING ("ambiguous-framing") for the flaws that let two parsers
 * disagree on where a message or a field ends, or on its target
 * (request smuggling), NET_R_MALFORMED for the rest. */
enum net_reason net_http_flaw_reason(enum net_http_flaw f);

/* A parsed request or response head.  Spans point into the buffer given to
 * the parser, which must stay unchanged while they are used. */
struct net_http_head {
	uint32_t head_len; /* bytes of the head including the final CRLF */
	struct net_span method, target;
	int version; /* 10 or 11 */
	int status;  /* responses */
	enum net_body_mode body;
	uint64_t content_length;
	bool conn_close;	 /* Connection: close, or HTTP/1.0 without keep-alive */
	bool expect_continue;	 /* Expect: 100-continue */
	enum net_http_flaw flaw; /* why a parse failed; NET_HTTP_OK otherwise */
	unsigned n_headers;
	struct net_http_header headers[NET_HTTP_MAX_HEADERS]; /* last: not cleared */
};

/* Parse a request head at the start of buf[0..len).  Returns 1 when a whole
 * head was parsed (h filled), 0 when more bytes are needed, or a negative
 * HTTP status to answer with: -400 malformed or ambiguous, -414 line too
 * long, -431 head too large, -501 unsupported transfer coding, -505
 * version; h->flaw says why. */
int net_http_parse_request(const char *buf, size_t len, struct net_http_head *h);
/* Same for a response head; method_head tells whether the request was HEAD
 * (no body).  Negative: -502 (malformed or ambiguous upstream response,
 * h->flaw says why). */
int net_http_parse_response(const char *buf, size_t len, bool method_head, struct net_http_head *h);

/* The request target, split.  An absolute-form http URI gives host (IPv6
 * without brackets), port (default 80) and path ("/" if empty); CONNECT's
 * authority-form gives host and port.  Returns 0 or -EINVAL. */
struct net_target {
	char host[256];
	uint16_t port;
	char authority[262]; /* host[:port] as it goes into the Host header */
	const char *path;    /* into the buffer */
	size_t path_len;
};
int net_http_parse_absolute(const char *t, size_t len, struct net_target *out);
int net_http_parse_authority(const char *t, size_t len, struct net_target *out);

/* Incremental body framing: tells how many of the next bytes belong to the
 * body (to be forwarded verbatim) and counts payload bytes. */
struct net_body {
	enum net_body_mode mode;
	uint64_t remaining; /* LENGTH: bytes left; CHUNKED: bytes left in chunk */
	uint64_t payload;   /* payload bytes seen so far (chunk data, not framing) */
	int cstate;	    /* chunked decoder state */
	unsigned cdigits, cline;
	bool done;
	/* Optional, set after net_body_init(): called with the content as it
	 * is consumed (payload, chunk extensions and trailer fields; not the
	 * sizes and CRLFs of the framing), for the exfiltration check. */
	void (*content)(void *arg, const char *p, size_t n);
	void *content_arg;
};
void net_body_init(struct net_body *b, enum net_body_mode mode, uint64_t length);
/* Consume up to n bytes of p; returns how many belong to the body (<= n),
 * sets b->done at its end, or -1 on malformed chunked framing. */
ssize_t net_body_feed(struct net_body *b, const char *p, size_t n);

/* ---------------------------------------------------------------- SOCKS5 */

/* Parse the client greeting (VER NMETHODS METHODS).  Returns bytes used,
 * 0 if more are needed, -1 if malformed or not SOCKS5; *noauth tells
 * whether method 0 (no authentication) was offered. */
int net_socks_parse_greeting(const uint8_t *buf, size_t len, bool *noauth);

struct net_socks_request {
	uint8_t cmd;  /* 1 = CONNECT */
	uint8_t atyp; /* 1 IPv4, 3 domain, 4 IPv6 */
	char host[256];
	uint16_t port;
};
/* Parse a request (VER CMD RSV ATYP DST.ADDR DST.PORT).  Returns bytes
 * used, 0 if more are needed, or a negative SOCKS reply code: -1 general
 * failure (malformed), -7 command not supported, -8 address type. */
int net_socks_parse_request(const uint8_t *buf, size_t len, struct net_socks_request *req);
#define NET_SOCKS_OK 0x00
#define NET_SOCKS_FAIL 0x01
#define NET_SOCKS_NOT_ALLOWED 0x02
#define NET_SOCKS_HOST_UNREACH 0x04
#define NET_SOCKS_REFUSED 0x05
#define NET_SOCKS_TTL 0x06
#define NET_SOCKS_CMD 0x07
#define NET_SOCKS_ATYP 0x08

/* ------------------------------------------------------------------- DNS */

struct net_dns_query {
	uint16_t id;
	bool rd, edns;
	uint16_t edns_size;
	uint16_t qtype;
	char name[256]; /* lowercase, no trailing dot */
	uint8_t opcode;
	bool has_question;
	uint16_t wire_len;
	uint8_t wire[255]; /* the question name as sent (case kept, for DNS 0x20) */
};
/* Parse a query with ldns.  Returns 0, or a DNS rcode to answer with when
 * the message is a query but unusable (FORMERR 1, NOTIMP 4, REFUSED 5), or
 * -1 when it is not worth any answer (a response, too short to have an id).
 * max_label bounds each label (oversized: returns REFUSED, *label_refused
 * set).  q is filled as far as parsing got. */
int net_dns_parse(const uint8_t *buf, size_t len, unsigned max_label, struct net_dns_query *q,
		  bool *label_refused);
/* Build a response to q with rcode and the addresses of the query's type
 * among addrs (others skipped).  Returns the length written into out (cap
 * bytes), or -1. */
int net_dns_build(const struct net_dns_query *q, int rcode, const struct sockaddr_storage *addrs,
		  size_t n_addrs, uint32_t ttl, uint8_t *out, size_t cap);
#define NET_DNS_NOERROR 0
#define NET_DNS_FORMERR 1
#define NET_DNS_SERVFAIL 2
#define NET_DNS_NXDOMAIN 3
#define NET_DNS_NOTIMP 4
#define NET_DNS_REFUSED 5

/* ------------------------------------------------------------- listeners */

/* Where the sandbox finds the proxy: 127.0.0.1 on these ports inside its
 * network namespace.  0 picks an ephemeral port (tests). */
struct net_listen_addrs {
	uint16_t http_port;  /* 3128 */
	uint16_t socks_port; /* 1080 */
	uint16_t dns_port;   /* 53 */
};
void net_listen_addrs_init(struct net_listen_addrs *a);

struct net_listeners {
	int http_fd, socks_fd, dns_fd; /* listening TCP, listening TCP, bound UDP */
	uint16_t http_port, socks_port, dns_port;
};

/* Create the three sockets on 127.0.0.1 inside the network namespace
 * netns_fd (an fd of /proc/PID/ns/net; -1 for the caller's own), bringing
 * its loopback up first.  A short-lived thread does the setns(), so the
 * caller's namespaces never change; it needs CAP_SYS_ADMIN over the
 * namespace (root, or the owner of its user namespace) and, for ports
 * below 1024, CAP_NET_BIND_SERVICE there.  A socket keeps the namespace it
 * was created in, so the fds can be served from the host.  On success the
 * caller owns the three fds (pass them to net_proxy_serve()). */
int net_listeners_open(int netns_fd, const struct net_listen_addrs *a, struct net_listeners *out,
		       struct wd_err *err);

/* ----------------------------------------------------------------- proxy */

enum net_proto {
	NET_PROTO_HTTP = 0, /* plain HTTP, absolute-form */
	NET_PROTO_CONNECT,  /* HTTP CONNECT tunnel */
	NET_PROTO_SOCKS,    /* SOCKS5 CONNECT tunnel */
	NET_PROTO_DNS,
	NET_PROTO_HTTPS, /* a request inside an intercepted TLS tunnel */
};
const char *net_proto_name(enum net_proto p);

/* One decision, for the audit trail.  Every pointer is valid only during the
 * callback.  For an allowed request or tunnel the event comes when it ends
 * (so bytes and duration are known); a refusal comes at once; a DNS query
 * comes when answered. */
struct net_event {
	const char *sandbox_id;
	enum net_proto proto;
	const char *host;   /* as requested, normalized; NULL if never parsed */
	uint16_t port;	    /* 0 if unknown; DNS: the query type */
	const char *method; /* plain HTTP only, else NULL */
	const char *path;   /* plain HTTP only, else NULL (truncated at 1 KiB) */
	const char *rule;   /* rule text (allow rule used, or deny rule hit), or NULL */
	bool allowed;
	enum net_reason reason; /* NET_R_NONE when allowed and completed */
	const char *advice;	/* one line, or "" */
	const char *addr;	/* upstream address connected to, or NULL */
	int status;		/* HTTP status to the client; SOCKS reply; DNS rcode */
	uint64_t bytes_up;	/* client -> upstream (payload, for HTTP with head) */
	uint64_t bytes_down;	/* upstream -> client */
	uint64_t duration_us;
	/* Secrets, names only, never a value: for a request the
	 * proxy added credentials to, the inject rules applied ("; "-joined)
	 * and the secrets they used ("A,B"); for an NET_R_EXFIL refusal, the
	 * secret found (inject NULL).  NULL otherwise. */
	const char *inject;
	const char *secrets;
	/* NET_R_SECRET_PROBE: the sandbox's secret-exfiltration refusals so
	 * far ("refusals"); 0 otherwise. */
	uint64_t refusals;
};
typedef void (*net_event_fn)(const struct net_event *ev, void *data);

struct net_config {
	const char *sandbox_id;	       /* copied; goes into every event */
	const struct net_rules *rules; /* borrowed: must outlive the proxy */
	unsigned max_conns;	       /* concurrent client connections (256) */
	uint64_t max_total_bytes;      /* all traffic both ways over the proxy's
					* life, 0 = unlimited (default) */
	unsigned header_timeout_ms;    /* a request head must arrive within (10 s) */
	unsigned connect_timeout_ms;   /* upstream connect (10 s) */
	unsigned idle_timeout_ms;      /* a tunnel or request with no traffic (300 s) */
	unsigned dns_rate;	       /* DNS queries per second (50) */
	unsigned dns_burst;	       /* token bucket depth (100) */
	unsigned dns_max_label;	       /* longest label answered (63) */
	unsigned dns_ttl;	       /* TTL of answers (60) */
	/* TLS interception (network.tls_intercept, --tls-intercept): every
	 * CONNECT or SOCKS tunnel whose first bytes are a TLS ClientHello is
	 * terminated with a leaf certificate from a per-proxy CA, and each
	 * request inside is decided like plain HTTP (method, path, body cap);
	 * a tunnel to a method- or path-restricted host is admitted only so.
	 * The upstream side is verified against upstream_ca_file, or the
	 * host's default CA store when NULL. */
	bool tls_intercept;
	const char *upstream_ca_file; /* copied */
	/* Credentials to inject and guard, or NULL: a reference
	 * is taken; net_proxy_new() fails unless net_secrets_check() passes
	 * against rules and tls_intercept. */
	struct net_secrets *secrets;
};
/* Fill cfg with the defaults shown above (0 fields in a config given to
 * net_proxy_new also mean "default"). */
void net_config_init(struct net_config *cfg);

typedef struct net_proxy net_proxy;

/* Returns a new proxy in *out (not serving yet); free with net_proxy_free().
 * cb may be NULL.  -EINVAL if cfg->rules is NULL.  Starts no thread (safe
 * right before clone()/fork()); with tls_intercept the CA is made here. */
int net_proxy_new(const struct net_config *cfg, net_event_fn cb, void *cb_data,
		  struct net_proxy **out, struct wd_err *err);
/* Give the proxy its listeners: http_fd and socks_fd listening TCP sockets,
 * dns_fd a bound UDP socket; any may be -1.  Takes ownership of every fd
 * passed (even on failure); sets them non-blocking and close-on-exec.
 * Call once, before net_proxy_start(). */
int net_proxy_serve(struct net_proxy *p, int http_fd, int socks_fd, int dns_fd, struct wd_err *err);
/* Start the proxy thread and its resolver threads.  0 or -errno. */
int net_proxy_start(struct net_proxy *p, struct wd_err *err);
/* Stop serving: the thread closes every listener, tunnel and connection
 * (each still open gets its event) and exits; returns once it has.
 * Idempotent; safe from any thread but the callback's. */
void net_proxy_stop(struct net_proxy *p);
/* Stops if needed, then frees. */
void net_proxy_free(struct net_proxy *p);
WD_DEFINE_AUTOPTR(net_proxy, net_proxy_free)

/* Replace the rules of a running proxy (warden update): rules is taken
 * on success (freed with the proxy); decisions from the next request on
 * use it, a tunnel already open stays open.  -EINVAL (rules kept by the
 * caller) when the proxy's secrets' inject rules would no longer be
 * admitted.  Safe from any thread. */
int net_proxy_set_rules(struct net_proxy *p, struct net_rules *rules, struct wd_err *err);

/* The interception CA's certificate (PEM) to install in the jail's trust
 * (ca-certificates.crt, SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
 * NODE_EXTRA_CA_CERTS, PIP_CERT, GIT_SSL_CAINFO); NULL without
 * tls_intercept.  Valid until net_proxy_free().  The CA's private key
 * never leaves the proxy object. */
const char *net_proxy_ca_pem(const struct net_proxy *p);

/* Counters, readable from any thread while running. */
struct net_stats {
	uint64_t conns_total, conns_open, requests, refused, dns_queries, bytes_total;
};
void net_proxy_stats(struct net_proxy *p, struct net_stats *out);

#endif
