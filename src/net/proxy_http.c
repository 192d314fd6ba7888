/* net/proxy_http.c: requests through the proxy engine (proxy.c): the HTTP
 * head, rules, resolving and connecting upstream, and forwarding requests
 * and responses through user-space buffers. */
#include "net/net-internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* ------------------------------------------------------------- requests */

void
proxy_request_reset(struct conn *c)
{
	c->active = true;
	c->t0 = c->p->now;
	c->up = c->down = 0;
	c->status = 0;
	c->rule = NULL;
	c->max_body = 0;
	c->host[0] = c->method[0] = c->addr[0] = '\0';
	c->port = 0;
	free(c->path);
	c->path = NULL;
	c->n_addrs = c->next_addr = 0;
	c->resp_head = c->resp_started = false;
	c->head_req = c->client_close = false;
	c->aliased = false;
	memset(&c->inj, 0, sizeof(c->inj));
	c->masked = 0;
	net_scan_free(c->scan);
	c->scan = NULL;
	c->exfil = -1;
	c->inj_rules[0] = c->inj_names[0] = '\0';
}

static bool
same_addr(const struct sockaddr_storage *x, const struct sockaddr_storage *y)
{
	if (x->ss_family != y->ss_family)
		return false;
	if (x->ss_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)x)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)(const void *)y)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)(const void *)x)->sin6_addr,
		      &((const struct sockaddr_in6 *)(const void *)y)->sin6_addr, 16) == 0;
}

/* Remember which allowed name the DNS filter answered an address for,
 * for the answer's TTL and a minute more (the last answer wins when names
 * share an address). */
void
proxy_alias_add(struct net_proxy *p, const struct sockaddr_storage *a, const char *name)
{
	if (!p->aliases)
		p->aliases = wd_xcalloc(ALIASES, sizeof(*p->aliases));
	struct alias *slot = NULL;
	for (unsigned i = 0; i < ALIASES && !slot; i++)
		if (p->aliases[i].expires && same_addr(&p->aliases[i].a, a))
			slot = &p->aliases[i];
	if (!slot)
		slot = &p->aliases[p->alias_next++ % ALIASES];
	slot->a = *a;
	snprintf(slot->name, sizeof(slot->name), "%s", name);
	slot->expires = p->now + proxy_ms(p->cfg.dns_ttl * 1000u + 60000u);
}

static const char *
alias_find(struct net_proxy *p, const struct sockaddr_storage *a)
{
	for (unsigned i = 0; p->aliases && i < ALIASES; i++)
		if (p->aliases[i].expires > p->now && same_addr(&p->aliases[i].a, a))
			return p->aliases[i].name;
	return NULL;
}

/* A client that resolved a name through the DNS filter and then opens a
 * tunnel to the address (socks5:// rather than socks5h://, runtimes that
 * resolve first) is judged as that name: the rules name hosts, not the
 * addresses behind them.  The connection still goes to the address the
 * client asked for, and the address stage still applies.  A deny rule on
 * the address itself is never overridden. */
void
proxy_try_alias(struct conn *c, struct net_decision *d)
{
	struct net_proxy *p = c->p;
	struct sockaddr_storage lit;
	if (d->allow || d->reason == NET_R_DENY_RULE ||
	    !net_addr_parse(c->host, strlen(c->host), c->port, &lit))
		return;
	const char *name = alias_find(p, &lit);
	if (!name)
		return;
	struct net_request q = {.host = name, .port = c->port, .tunnel = true};
	struct net_decision d2;
	net_rules_decide(p->rules, &q, &d2);
	if (!d2.allow && !(d2.reason == NET_R_TUNNEL && p->tls))
		return;
	*d = d2;
	c->aliased = true;
	c->alias_addr = lit;
	snprintf(c->host, sizeof(c->host), "%s", name);
}

static void start_connect(struct conn *c);

/* Addresses known: keep those the address stage allows, then connect. */
void
proxy_addresses_ready(struct conn *c)
{
	struct net_decision first = {0};
	bool refused = false;
	size_t kept = 0;
	for (size_t i = 0; i < c->n_addrs; i++) {
		struct net_decision d = {0};
		proxy_set_port(&c->addrs[i], c->port);
		if (net_rules_check_addr(c->p->rules, (struct sockaddr *)&c->addrs[i], c->port,
					 &d)) {
			c->addrs[kept++] = c->addrs[i];
		} else if (!refused) {
			first = d;
			refused = true;
			proxy_addr_text(&c->addrs[i], c->addr, sizeof(c->addr));
		}
	}
	c->n_addrs = kept;
	if (kept == 0) {
		proxy_refuse(c, 403, first.reason, first.rule, first.advice);
		return;
	}
	c->addr[0] = '\0';
	c->next_addr = 0;
	start_connect(c);
}

void
proxy_start_resolve(struct conn *c)
{
	struct net_proxy *p = c->p;
	size_t n = 0;
	if (c->aliased)
		c->addrs[n++] = c->alias_addr;
	if (n == 0)
		n = net_rules_lookup_host(p->rules, c->host, c->addrs, NET_JOB_MAX_ADDRS);
	if (n == 0 && net_addr_parse(c->host, strlen(c->host), c->port, &c->addrs[0]))
		n = 1;
	if (n) {
		c->n_addrs = n;
		proxy_addresses_ready(c);
		return;
	}
	struct net_job *j = wd_xcalloc(1, sizeof(*j));
	j->owner = c;
	snprintf(j->host, sizeof(j->host), "%s", c->host);
	if (net_resolver_submit(p->res, j) < 0) {
		free(j);
		proxy_refuse(c, 503, NET_R_RESOLVE, NULL,
			     "too many lookups in flight; retry shortly");
		return;
	}
	c->job = j;
	c->st = ST_RESOLVE;
	c->deadline = p->now + proxy_ms(p->cfg.connect_timeout_ms);
}

static void
start_connect(struct conn *c)
{
	struct net_proxy *p = c->p;
	int last = 0;
	while (c->next_addr < c->n_addrs) {
		struct sockaddr_storage *sa = &c->addrs[c->next_addr++];
		int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			last = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		socklen_t len = sa->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							 : sizeof(struct sockaddr_in6);
		if (connect(fd, (struct sockaddr *)sa, len) == 0 || errno == EINPROGRESS) {
			c->ufd = fd;
			c->hu.kind = H_UPSTREAM;
			c->hu.c = c;
			proxy_ep_add(p, fd, &c->hu, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
			proxy_addr_text(sa, c->addr, sizeof(c->addr));
			c->st = ST_CONNECT;
			c->deadline = p->now + proxy_ms(p->cfg.connect_timeout_ms);
			return;
		}
		last = errno;
		close(fd);
	}
	char adv[256];
	snprintf(adv, sizeof(adv), "could not connect to %s:%u (%s); the service may be down",
		 c->host, c->port, strerror(last ? last : ECONNREFUSED));
	proxy_refuse(c, 502, NET_R_CONNECT, NULL, adv);
}

/* Put field i of h into o.  The framing field goes out as the proxy framed
 * the body, spelled one way ("Content-Length: 42", "Transfer-Encoding:
 * chunked"), never as the sender's bytes: the next hop reads exactly the
 * framing the proxy used, with no leading zeros or case variant that the
 * proxy accepted and a server behind it might read otherwise (the TE.TE
 * obfuscations).  Other fields are copied as parsed. */
static bool
put_field(struct buf *o, const char *buf, const struct net_http_head *h, unsigned i)
{
	const struct net_http_header *hd = &h->headers[i];
	const char *name = buf + hd->name.off;
	if (h->body == NET_BODY_LENGTH && hd->name.len == 14 &&
	    strncasecmp(name, "content-length", 14) == 0) {
		char f[48];
		int n = snprintf(f, sizeof(f), "Content-Length: %llu\r\n",
				 (unsigned long long)h->content_length);
		return proxy_buf_put(o, f, (size_t)n);
	}
	if (h->body == NET_BODY_CHUNKED && hd->name.len == 17 &&
	    strncasecmp(name, "transfer-encoding", 17) == 0) {
		static const char f[] = "Transfer-Encoding: chunked\r\n";
		return proxy_buf_put(o, f, sizeof(f) - 1);
	}
	return proxy_buf_put(o, name, hd->name.len) && proxy_buf_put(o, ": ", 2) &&
	       proxy_buf_put(o, buf + hd->value.off, hd->value.len) && proxy_buf_put(o, "\r\n", 2);
}

/* Build the upstream request head: origin-form request line, Host from
 * the URI, the client's end-to-end fields, the injected ones,
 * "Connection: keep-alive". */
static bool
build_upstream_head(struct conn *c, const char *buf, const struct net_target *t)
{
	struct net_http_head *h = c->h;
	struct buf *o = &c->uout;
	proxy_buf_alloc(o);
	o->off = o->len = 0;
	char line[64];
	if (!proxy_buf_put(o, buf + h->method.off, h->method.len) || !proxy_buf_put(o, " ", 1) ||
	    !proxy_buf_put(o, c->path, strlen(c->path)) ||
	    !proxy_buf_put(o, " HTTP/1.1\r\nHost: ", 17) ||
	    !proxy_buf_put(o, t->authority, strlen(t->authority)) || !proxy_buf_put(o, "\r\n", 2))
		return false;
	for (unsigned i = 0; i < h->n_headers; i++)
		if (!proxy_dropped_field(buf, h, i, c) && !put_field(o, buf, h, i))
			return false;
	if (c->inj.n && !proxy_put_injected(c))
		return false;
	int n = snprintf(line, sizeof(line), "Connection: keep-alive\r\n\r\n");
	if (!proxy_buf_put(o, line, (size_t)n))
		return false;
	if (c->inj.n)
		c->secret_left = o->len;
	return true;
}

/* From here on the host is the form the rules matched: lowercase, no
 * trailing dot, canonical address text (it names the leaf certificate and
 * goes into events). */
void
proxy_canonical_host(struct conn *c)
{
	char norm[256];
	if (net_host_normalize(c->host, strlen(c->host), norm, sizeof(norm)) == 0)
		snprintf(c->host, sizeof(c->host), "%s", norm);
}

/* Host inside an intercepted tunnel: required, and naming the CONNECT
 * host, with the CONNECT port or none. */
static bool
host_header_matches(const char *buf, const struct net_http_head *h, const char *host, uint16_t port)
{
	for (unsigned i = 0; i < h->n_headers; i++) {
		const struct net_http_header *hd = &h->headers[i];
		if (hd->name.len != 4 || strncasecmp(buf + hd->name.off, "host", 4) != 0)
			continue;
		struct net_target t;
		char norm[256];
		if (net_http_parse_authority(buf + hd->value.off, hd->value.len, &t) == 0) {
			if (t.port != port)
				return false;
		} else {
			/* no port: the name decides (the connection goes to the
			 * CONNECT's port whatever Host says) */
			char tmp[300];
			snprintf(tmp, sizeof(tmp), "%.*s:%u", (int)hd->value.len,
				 buf + hd->value.off, port);
			if (net_http_parse_authority(tmp, strlen(tmp), &t) < 0)
				return false;
		}
		if (net_host_normalize(t.host, strlen(t.host), norm, sizeof(norm)) < 0)
			return false;
		return strcmp(norm, host) == 0;
	}
	return false;
}

static void
start_upstream_tls(struct conn *c)
{
	struct net_proxy *p = c->p;
	c->ussl = net_tls_client(p->tls, c->t_host, c->ufd);
	if (!c->ussl) {
		proxy_refuse(c, 502, NET_R_TLS, NULL, "could not start TLS to the upstream");
		return;
	}
	snprintf(c->addr, sizeof(c->addr), "%s", c->up_addr);
	c->st = ST_TLS_CONNECT;
	c->deadline = p->now + proxy_ms(p->cfg.connect_timeout_ms);
}

static void
handle_http_request(struct conn *c)
{
	struct net_proxy *p = c->p;
	const char *buf = c->cin.d + c->cin.off;
	struct net_http_head *h = c->h;
	struct net_target t;
	struct net_decision d;
	proxy_request_reset(c);
	snprintf(c->method, sizeof(c->method), "%.*s", (int)h->method.len, buf + h->method.off);
	const char *tg = buf + h->target.off;
	size_t tl = h->target.len;
	if (c->intercept) {
		/* Inside an intercepted tunnel: origin-form requests for the
		 * host the CONNECT named, and no other (a Host naming another
		 * site behind the same address would be domain fronting). */
		c->proto = NET_PROTO_HTTPS;
		snprintf(c->host, sizeof(c->host), "%s", c->t_host);
		c->port = c->t_port;
		if (tl == 0 || tg[0] != '/') {
			proxy_refuse(c, 400, NET_R_MALFORMED, NULL,
				     "inside the tunnel send origin-form requests (GET /path)");
			return;
		}
		if (!host_header_matches(buf, h, c->t_host, c->t_port)) {
			char adv[300];
			snprintf(
			    adv, sizeof(adv),
			    "this tunnel goes to %s only; open another CONNECT for another host",
			    c->t_authority);
			proxy_refuse(c, 421, NET_R_MISDIRECTED, NULL, adv);
			return;
		}
		c->path = wd_xasprintf("%.*s", (int)tl, tg);
		if (!proxy_secrets_gate(c, buf, c->t_host, c->t_port))
			return;
		memset(&t, 0, sizeof(t));
		snprintf(t.authority, sizeof(t.authority), "%s", c->t_authority);
		struct net_request q = {
		    .host = c->t_host, .port = c->t_port, .method = c->method, .path = c->path};
		net_rules_decide(p->rules, &q, &d);
	} else if (strcmp(c->method, "CONNECT") == 0) {
		c->proto = NET_PROTO_CONNECT;
		c->must_intercept = false;
		if (net_http_parse_authority(tg, tl, &t) < 0) {
			snprintf(c->host, sizeof(c->host), "%.*s", (int)(tl < 200 ? tl : 200), tg);
			proxy_refuse(c, 400, NET_R_BAD_HOST, NULL,
				     "CONNECT needs host:port with a plain host name or address");
			return;
		}
		snprintf(c->host, sizeof(c->host), "%s", t.host);
		c->port = t.port;
		/* the proxy would resolve the name on the host: a secret in
		 * its labels would leave through the host's resolver */
		if (proxy_host_exfil(c, t.host))
			return;
		struct net_request q = {.host = t.host, .port = t.port, .tunnel = true};
		net_rules_decide(p->rules, &q, &d);
		proxy_try_alias(c, &d);
		if (!d.allow && d.reason == NET_R_TUNNEL && p->tls) {
			/* methods or paths restricted: admitted only as TLS the
			 * proxy terminates, so each request can be checked */
			d.allow = true;
			c->must_intercept = true;
		}
	} else {
		c->proto = NET_PROTO_HTTP;
		if (net_http_parse_absolute(tg, tl, &t) < 0) {
			if (tl && tg[0] == '/')
				proxy_refuse(
				    c, 400, NET_R_NOT_PROXY, NULL,
				    "this is a proxy: send absolute URLs (http://host/path), "
				    "and use CONNECT for https");
			else if (tl > 8 && strncasecmp(tg, "https://", 8) == 0)
				proxy_refuse(
				    c, 400, NET_R_MALFORMED, NULL,
				    "https:// goes through CONNECT, not as a plain request");
			else
				proxy_refuse(
				    c, 400, NET_R_BAD_HOST, NULL,
				    "the URL needs a plain host name or address, no user info");
			return;
		}
		snprintf(c->host, sizeof(c->host), "%s", t.host);
		c->port = t.port;
		bool slash = t.path_len > 0 && t.path[0] == '/';
		c->path = wd_xasprintf("%s%.*s", slash ? "" : "/", (int)t.path_len, t.path);
		if (proxy_host_exfil(c, t.host) || !proxy_secrets_gate(c, buf, t.host, t.port))
			return;
		struct net_request q = {
		    .host = t.host, .port = t.port, .method = c->method, .path = c->path};
		net_rules_decide(p->rules, &q, &d);
	}
	if (!d.allow) {
		proxy_refuse(c, 403, d.reason, d.rule, d.advice);
		return;
	}
	proxy_canonical_host(c);
	c->rule = d.rule;
	c->max_body = d.max_request_bytes;
	c->client_close = h->conn_close;
	if (c->proto == NET_PROTO_HTTP || c->proto == NET_PROTO_HTTPS) {
		if (h->body == NET_BODY_LENGTH && c->max_body && h->content_length > c->max_body) {
			char adv[256];
			snprintf(adv, sizeof(adv),
				 "the body is %llu bytes and rule '%s' caps it at %llu; send less",
				 (unsigned long long)h->content_length, net_rule_text(d.rule),
				 (unsigned long long)c->max_body);
			proxy_refuse(c, 413, NET_R_BODY_LIMIT, d.rule, adv);
			return;
		}
		if (!build_upstream_head(c, buf, &t)) {
			proxy_refuse(c, 431, NET_R_MALFORMED, NULL, "request head too large");
			return;
		}
		net_body_init(&c->qbody, h->body, h->content_length);
		if (c->scan) {
			c->qbody.content = proxy_body_content;
			c->qbody.content_arg = c;
		}
		c->head_req = strcmp(c->method, "HEAD") == 0;
	}
	proxy_buf_consume(&c->cin, h->head_len);
	if (c->ufd >= 0 && c->up_idle &&
	    (c->proto == NET_PROTO_HTTP || c->proto == NET_PROTO_HTTPS) &&
	    strcmp(c->up_host, c->host) == 0 && c->up_port == c->port) {
		c->up_idle = false;
		c->reused = true;
		snprintf(c->addr, sizeof(c->addr), "%s", c->up_addr);
		if (c->qbody.mode == NET_BODY_NONE) {
			c->rehead = wd_xmalloc(c->uout.len);
			memcpy(c->rehead, c->uout.d + c->uout.off, c->uout.len);
			c->rehead_len = c->uout.len;
		}
		c->st = ST_FORWARD;
		c->u_eof = false;
		c->deadline = p->now + proxy_ms(p->cfg.idle_timeout_ms);
		return;
	}
	if (c->intercept && c->ufd >= 0 && !c->ussl) {
		/* the TCP connection the CONNECT opened: TLS on it now */
		start_upstream_tls(c);
		return;
	}
	if (c->ufd >= 0) {
		/* another destination: the idle upstream goes, but the head
		 * just built in uout stays */
		struct buf keep = c->uout;
		size_t left = c->secret_left; /* the new head's credential */
		c->uout.d = NULL;
		proxy_close_upstream(c);
		proxy_buf_free(&c->uout);
		c->uout = keep;
		c->secret_left = left;
	}
	if (c->intercept) {
		/* a new connection to the address the CONNECT checked */
		memcpy(c->addrs, c->t_addrs, sizeof(c->addrs));
		c->n_addrs = c->t_naddrs;
		c->next_addr = 0;
		start_connect(c);
		return;
	}
	proxy_start_resolve(c);
}

/* ----------------------------------------------------------- the states */

/* A request head the parser refused (rc < 0, or 0 at EOF): 4xx/5xx with
 * the parser's flaw as the reason, and the method and host when the
 * request line got that far, so the event says what was refused. */
static void
refuse_head(struct conn *c, int rc)
{
	const char *buf = c->cin.d + c->cin.off;
	const struct net_http_head *h = c->h;
	enum net_http_flaw flaw = rc == 0 ? NET_HTTP_SYNTAX : h->flaw;
	int status = rc == 0 ? 400 : -rc;
	struct net_target t;
	char adv[256];
	proxy_request_reset(c);
	c->proto = c->intercept ? NET_PROTO_HTTPS : NET_PROTO_HTTP;
	if (rc < 0 && h->method.len && h->target.len) {
		snprintf(c->method, sizeof(c->method), "%.*s", (int)h->method.len,
			 buf + h->method.off);
		if (c->intercept) {
			snprintf(c->host, sizeof(c->host), "%s", c->t_host);
			c->port = c->t_port;
		} else if (net_http_parse_absolute(buf + h->target.off, h->target.len, &t) == 0 ||
			   net_http_parse_authority(buf + h->target.off, h->target.len, &t) == 0) {
			snprintf(c->host, sizeof(c->host), "%s", t.host);
			c->port = t.port;
		}
	}
	if (status == 414)
		snprintf(adv, sizeof(adv), "the request line is too long");
	else if (status == 431)
		snprintf(adv, sizeof(adv), "the request head is too large");
	else if (status == 501)
		snprintf(adv, sizeof(adv), "only the chunked transfer coding is supported");
	else if (status == 505)
		snprintf(adv, sizeof(adv), "speak HTTP/1.1 to the proxy");
	else if (net_http_flaw_reason(flaw) == NET_R_FRAMING)
		snprintf(adv, sizeof(adv),
			 "the head has %s, which a server could frame differently from the "
			 "proxy (request smuggling); send a plain HTTP/1.1 request without it",
			 net_http_flaw_text(flaw));
	else
		snprintf(adv, sizeof(adv),
			 "malformed request head; send a standard HTTP/1.1 request");
	proxy_refuse(c, status, net_http_flaw_reason(flaw), NULL, adv);
}

int
proxy_st_head(struct conn *c)
{
	int prog = 0;
	if (c->ufd >= 0 && c->up_idle) {
		char b;
		bool gone;
		if (c->ussl) {
			/* SSL_read, not a peek: a TLS 1.3 session ticket may
			 * arrive after the handshake and must be consumed */
			size_t got;
			int r = SSL_read_ex(c->ussl, &b, 1, &got);
			gone = r == 1 || proxy_ssl_io_result(c->ussl, r) != -EAGAIN;
		} else {
			ssize_t n = recv(c->ufd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
			gone = n >= 0 || (errno != EAGAIN && errno != EINTR);
		}
		if (gone)
			proxy_close_upstream(c); /* closed, or talking out of turn */
	}
	if (!c->c_eof) {
		ssize_t n = proxy_c_rd(c);
		if (n > 0) {
			prog = 1;
		} else if (n == 0) {
			c->c_eof = true;
		} else if (n != -EAGAIN) {
			proxy_conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	if (c->cin.len == 0) {
		if (c->c_eof) {
			proxy_conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
		return prog;
	}
	if (!c->h)
		c->h = wd_xmalloc(sizeof(*c->h));
	int rc = net_http_parse_request(c->cin.d + c->cin.off, c->cin.len, c->h);
	if (rc == 0 && !c->c_eof)
		return prog;
	if (rc <= 0) {
		refuse_head(c, rc);
		return 1;
	}
	handle_http_request(c);
	return 1;
}

int
proxy_st_connect(struct conn *c)
{
	struct net_proxy *p = c->p;
	int err = 0;
	socklen_t el = sizeof(err);
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	if (err) {
		/* Only the socket: the request head in uout goes to the next address. */
		epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
		wd_close_reset(&c->ufd);
		start_connect(c); /* the next address, or a refusal */
		return 1;
	}
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	if (getpeername(c->ufd, (struct sockaddr *)&peer, &pl) < 0)
		return 0; /* still in progress */
	c->deadline = p->now + proxy_ms(p->cfg.idle_timeout_ms);
	if (c->intercept) {
		snprintf(c->up_addr, sizeof(c->up_addr), "%s", c->addr);
		start_upstream_tls(c);
		return 1;
	}
	if (c->proto == NET_PROTO_HTTP) {
		c->st = ST_FORWARD;
		c->u_eof = false;
		return 1;
	}
	/* Tunnel: answer the client, and pass on anything it sent early. */
	if (c->socks) {
		uint8_t r[10] = {5, 0, 0, 1, 0, 0, 0, 0, 0, 0};
		proxy_buf_put(&c->cout, r, sizeof(r));
	} else {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		proxy_buf_put(&c->cout, ok, sizeof(ok) - 1);
	}
	c->status = c->socks ? 0 : 200;
	if (p->tls && c->cin.len == 0) {
		c->st = ST_TLS_PEEK;
		c->deadline = p->now + proxy_ms(p->cfg.header_timeout_ms);
		return 1;
	}
	if (c->must_intercept) {
		/* bytes before our answer: not a TLS client waiting for it */
		proxy_conn_close(c, NET_R_TUNNEL,
				 "a method-restricted host is reachable only by TLS");
		return -1;
	}
	if (c->cin.len) {
		proxy_buf_alloc(&c->uout);
		proxy_buf_put(&c->uout, c->cin.d + c->cin.off, c->cin.len);
		proxy_buf_consume(&c->cin, c->cin.len);
	}
	c->st = ST_TUNNEL;
	return 1;
}

static bool
budget(struct conn *c, size_t n)
{
	struct net_proxy *p = c->p;
	return !p->cfg.max_total_bytes || p->total_bytes + n <= p->cfg.max_total_bytes;
}

void
proxy_count(struct conn *c, size_t n, bool upward)
{
	if (upward)
		c->up += n;
	else
		c->down += n;
	c->p->total_bytes += n;
	atomic_fetch_add(&c->p->st_bytes, n);
}

void
proxy_byte_limit(struct conn *c)
{
	char adv[200];
	snprintf(adv, sizeof(adv),
		 "this sandbox has used its network budget of %llu bytes; finish without more "
		 "network",
		 (unsigned long long)c->p->cfg.max_total_bytes);
	if (!c->resp_started && c->st != ST_TUNNEL)
		proxy_refuse(c, 429, NET_R_BYTE_LIMIT, NULL, adv);
	else
		proxy_conn_close(c, NET_R_BYTE_LIMIT, adv);
}

/* Rewrite and queue a response head for the client.  A response that
 * cannot have content (1xx, 204: RFC 9110 §8.6, §15.2) goes out without
 * Content-Length or Transfer-Encoding: the client connection carries
 * responses from every host the client asks for, and a lenient client that
 * read such a field as framing would take the next response, perhaps
 * another host's, as this body.  An interim (1xx) head gets no Connection
 * field: the final response that follows carries it. */
static bool
put_response_head(struct conn *c, bool keep, bool interim)
{
	const char *buf = c->uin.d + c->uin.off;
	struct net_http_head *h = c->h;
	struct buf *o = &c->cout;
	proxy_buf_alloc(o);
	if (BUF_CAP - o->len < (size_t)h->head_len + 64)
		return false; /* wait for the client to take what is queued */
	const char *eol = memchr(buf, '\n', h->head_len);
	size_t sl = (size_t)(eol - buf) + 1;
	proxy_buf_put(o, buf, sl);
	bool no_content = h->status < 200 || h->status == 204;
	for (unsigned i = 0; i < h->n_headers; i++) {
		const struct net_span n = h->headers[i].name;
		if (no_content &&
		    ((n.len == 14 && strncasecmp(buf + n.off, "content-length", 14) == 0) ||
		     (n.len == 17 && strncasecmp(buf + n.off, "transfer-encoding", 17) == 0)))
			continue;
		if (!net_http_hop_by_hop(buf, h, i, false))
			put_field(o, buf, h, i);
	}
	const char *ch = interim ? "\r\n"
			 : keep	 ? "Connection: keep-alive\r\n\r\n"
				 : "Connection: close\r\n\r\n";
	proxy_buf_put(o, ch, strlen(ch));
	return true;
}

static void
upstream_failed(struct conn *c, const char *what)
{
	char adv[256];
	snprintf(adv, sizeof(adv), "%s:%u %s; retry later or use another source", c->host, c->port,
		 what);
	if (!c->resp_started)
		proxy_refuse(c, 502, NET_R_UPSTREAM, NULL, adv);
	else
		proxy_conn_close(c, NET_R_UPSTREAM, adv);
}

/* A reused upstream connection failed before any answer: the server
 * closed it while idle (the keep-alive race).  A body-less request is
 * sent again, once, on a fresh connection. */
static bool
retry_fresh(struct conn *c)
{
	if (!c->reused || !c->rehead || c->resp_started || c->uin.len)
		return false;
	char *head = c->rehead;
	size_t len = c->rehead_len;
	c->rehead = NULL;
	proxy_close_upstream(c);
	proxy_buf_alloc(&c->uout);
	proxy_buf_put(&c->uout, head, len);
	if (c->secret_buf)
		c->secret_left = len;
	explicit_bzero(head, len);
	free(head);
	c->addr[0] = '\0';
	if (c->intercept) {
		memcpy(c->addrs, c->t_addrs, sizeof(c->addrs));
		c->n_addrs = c->t_naddrs;
		c->next_addr = 0;
		start_connect(c);
	} else {
		proxy_start_resolve(c);
	}
	return true;
}

int
proxy_st_forward(struct conn *c)
{
	struct net_proxy *p = c->p;
	int prog = 0;
	ssize_t n;

	/* request body: client -> uout, through the framing and the cap */
	if (!c->qbody.done) {
		if (c->cin.len && proxy_buf_space(&c->uout)) {
			size_t k = c->cin.len < proxy_buf_space(&c->uout)
				       ? c->cin.len
				       : proxy_buf_space(&c->uout);
			ssize_t used = net_body_feed(&c->qbody, c->cin.d + c->cin.off, k);
			if (used < 0) {
				if (!c->resp_started)
					proxy_refuse(c, 400, NET_R_MALFORMED, NULL,
						     "malformed chunked request body");
				else
					proxy_conn_close(c, NET_R_MALFORMED,
							 "malformed chunked body");
				return -1;
			}
			if (c->exfil >= 0) {
				/* nothing of this read reaches the upstream */
				if (!c->resp_started) {
					proxy_refuse_exfil(c, c->exfil, "the body");
				} else {
					char adv[200];
					snprintf(adv, sizeof(adv),
						 "the body carries the placeholder or the value of "
						 "secret %s",
						 net_secrets_name(p->secrets, (unsigned)c->exfil));
					snprintf(c->inj_names, sizeof(c->inj_names), "%s",
						 net_secrets_name(p->secrets, (unsigned)c->exfil));
					int i = c->exfil;
					enum net_proto proto = c->proto;
					proxy_conn_close(c, NET_R_EXFIL, adv);
					proxy_exfil_alert(p, proto, i);
				}
				return -1;
			}
			if (c->max_body && c->qbody.payload > c->max_body) {
				char adv[256];
				snprintf(adv, sizeof(adv),
					 "rule '%s' caps request bodies at %llu bytes; send less",
					 net_rule_text(c->rule), (unsigned long long)c->max_body);
				/* The excess never reaches the upstream: it is cut
				 * here, before the copy to uout. */
				if (!c->resp_started)
					proxy_refuse(c, 413, NET_R_BODY_LIMIT, NULL, adv);
				else
					proxy_conn_close(c, NET_R_BODY_LIMIT, adv);
				return -1;
			}
			if (used > 0) {
				proxy_buf_put(&c->uout, c->cin.d + c->cin.off, (size_t)used);
				proxy_buf_consume(&c->cin, (size_t)used);
				prog = 1;
			}
		}
		if (!c->qbody.done && !c->c_eof) {
			n = proxy_c_rd(c);
			if (n > 0) {
				prog = 1;
			} else if (n == 0) {
				c->c_eof = true;
			} else if (n != -EAGAIN) {
				proxy_conn_close(c, NET_R_NONE, NULL);
				return -1;
			}
		}
		if (!c->qbody.done && c->c_eof && c->cin.len == 0) {
			proxy_conn_close(c, NET_R_MALFORMED, "client closed before the body ended");
			return -1;
		}
	}
	/* uout -> upstream */
	if (c->uout.len) {
		if (!budget(c, c->uout.len)) {
			proxy_byte_limit(c);
			return -1;
		}
		n = proxy_u_wr(c);
		if (n > 0) {
			proxy_count(c, (size_t)n, true);
			prog = 1;
		} else if (n != -EAGAIN) {
			if (retry_fresh(c))
				return 1;
			upstream_failed(c, "closed the connection");
			return -1;
		}
	}
	/* upstream -> uin */
	if (!c->u_eof) {
		n = proxy_u_rd(c);
		if (n > 0) {
			prog = 1;
		} else if (n == 0) {
			c->u_eof = true;
			prog = 1;
		} else if (n != -EAGAIN) {
			if (retry_fresh(c))
				return 1;
			upstream_failed(c, "reset the connection");
			return -1;
		}
	}
	/* An echoed credential never reaches the sandbox: complete values
	 * in what came from the upstream (head or body) are masked before
	 * anything of it is passed on (proxy_secrets.c, exfil.c). */
	if (p->secrets && c->uin.len)
		net_secrets_mask(p->secrets, c->uin.d + c->uin.off, c->uin.len, &c->masked);
	/* response head */
	bool head_incomplete = !c->resp_head && c->uin.len == 0;
	while (!c->resp_head && c->uin.len) {
		int rc =
		    net_http_parse_response(c->uin.d + c->uin.off, c->uin.len, c->head_req, c->h);
		if (rc == 0) {
			head_incomplete = true;
			break;
		}
		if (rc < 0) {
			/* the same rules as for requests (http.c): a response
			 * the client could frame differently from the proxy
			 * would desync the client's connection */
			char what[200];
			snprintf(what, sizeof(what), "sent a response with %s",
				 net_http_flaw_text(c->h->flaw));
			upstream_failed(c, what);
			return -1;
		}
		if (c->h->status == 101) {
			upstream_failed(c, "switched protocols, which the proxy does not pass on");
			return -1;
		}
		if (c->h->status < 200) {
			/* interim (100 Continue, 103 Early Hints): passed on */
			if (!put_response_head(c, true, true))
				break;
			proxy_buf_consume(&c->uin, c->h->head_len);
			prog = 1;
			continue;
		}
		bool keep = !c->client_close && c->h->body != NET_BODY_CLOSE;
		if (!put_response_head(c, keep, false))
			break;
		c->status = c->h->status;
		c->client_close = !keep;
		net_body_init(&c->rbody, c->h->body, c->h->content_length);
		proxy_buf_consume(&c->uin, c->h->head_len);
		c->resp_head = c->resp_started = true;
		prog = 1;
	}
	if (!c->resp_head && c->u_eof && head_incomplete) {
		if (retry_fresh(c))
			return 1;
		upstream_failed(c, "closed without a complete response");
		return -1;
	}
	/* response body: uin -> cout */
	if (c->resp_head && !c->rbody.done) {
		size_t space = proxy_buf_space(&c->cout);
		if (c->uin.len && space) {
			size_t k = c->uin.len < space ? c->uin.len : space;
			k = proxy_response_window(c, k);
			ssize_t used = net_body_feed(&c->rbody, c->uin.d + c->uin.off, k);
			if (used < 0) {
				proxy_conn_close(c, NET_R_UPSTREAM,
						 "malformed response body framing");
				return -1;
			}
			proxy_buf_put(&c->cout, c->uin.d + c->uin.off, (size_t)used);
			proxy_buf_consume(&c->uin, (size_t)used);
			prog |= used > 0;
		}
		if (c->u_eof && c->uin.len == 0) {
			if (c->rbody.mode == NET_BODY_CLOSE) {
				c->rbody.done = true;
			} else if (!c->rbody.done) {
				proxy_conn_close(c, NET_R_UPSTREAM, "upstream closed mid-response");
				return -1;
			}
		}
	}
	/* client output */
	if (c->cout.len) {
		if (!budget(c, c->cout.len)) {
			proxy_byte_limit(c);
			return -1;
		}
		n = proxy_c_wr(c);
		if (n > 0) {
			proxy_count(c, (size_t)n, false);
			prog = 1;
		} else if (n != -EAGAIN) {
			proxy_conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	if (c->resp_head && c->rbody.done) {
		/* The request is complete (its event is emitted now, so keep-alive
		 * requests are one event each).  What is left in cout drains in
		 * the next state. */
		bool keep = !c->client_close && c->qbody.done && !c->c_eof;
		bool up_keep = keep && !c->h->conn_close && c->rbody.mode != NET_BODY_CLOSE &&
			       c->uin.len == 0 && c->uout.len == 0 && !c->u_eof;
		if (up_keep) {
			c->up_idle = true;
			c->reused = false;
			proxy_rehead_free(c);
			snprintf(c->up_host, sizeof(c->up_host), "%s", c->host);
			c->up_port = c->port;
			snprintf(c->up_addr, sizeof(c->up_addr), "%s", c->addr);
		} else {
			proxy_close_upstream(c);
		}
		proxy_emit(c, true, NET_R_NONE, proxy_masked_advice(c));
		if (keep) {
			c->st = ST_HEAD;
			c->deadline = p->now + proxy_ms(p->cfg.header_timeout_ms);
		} else {
			c->st = ST_CLOSING;
			c->deadline = p->now + proxy_ms(p->cfg.idle_timeout_ms);
		}
		return 1;
	}
	if (prog)
		c->deadline = p->now + proxy_ms(p->cfg.idle_timeout_ms);
	return prog;
}
