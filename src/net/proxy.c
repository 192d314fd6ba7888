/* net/proxy.c: the proxy engine.  One thread per sandbox runs an epoll
 * loop over the HTTP and SOCKS listeners, the DNS socket, the resolver
 * pool's eventfd, a stop eventfd, and every client and upstream socket.
 *
 * Connections are state machines (enum cstate) driven edge-triggered: on
 * any event conn_step() retries every action of the current state until
 * none makes progress, so a condition that clears inside the step (a
 * buffer drained, a pipe emptied) is acted on without waiting for an edge
 * that would never come.  A connection that keeps making progress is
 * parked on a ready list after a bounded number of rounds, so one bulk
 * tunnel cannot starve the rest.
 *
 *   HTTP listener:  HEAD -> [RESOLVE] -> CONNECT -> FORWARD -> HEAD ... (keep-alive)
 *                                                -> TUNNEL            (CONNECT)
 *   SOCKS listener: SOCKS_GREET -> SOCKS_REQ -> [RESOLVE] -> CONNECT -> TUNNEL
 *   any refusal:    -> CLOSING (flush the answer, half-close, drain, close)
 *
 * Plain HTTP is forwarded through user-space buffers, because the proxy
 * must see the framing to enforce body caps and keep-alive.  Tunnels move
 * bytes socket -> pipe -> socket with splice(2) and never copy them.
 * Connections are freed only after the epoll batch that may still name
 * them, from the dead list.
 */
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

#define BUF_CAP (NET_HTTP_MAX_HEAD + 8192)
#define PIPE_SIZE (256 * 1024)
#define ROUNDS_PER_STEP 16
#define SPLICE_CHUNK (256 * 1024)
#define CLOSE_LINGER_MS 2000
#define DNS_MAX_INFLIGHT 64
#define RESOLVER_THREADS 2
#define EVENT_PATH_MAX 1024
#define ALIASES 256

enum hkind { H_STOP, H_HTTP_LISTEN, H_SOCKS_LISTEN, H_DNS, H_RESOLVER, H_CLIENT, H_UPSTREAM };

struct conn;
struct handle {
	enum hkind kind;
	struct conn *c;
};

struct buf {
	char *d;
	size_t off, len;
};

enum cstate {
	ST_HEAD,
	ST_SOCKS_GREET,
	ST_SOCKS_REQ,
	ST_RESOLVE,
	ST_CONNECT,
	ST_FORWARD,
	ST_TUNNEL,
	ST_TLS_PEEK,	/* tunnel open: is the client starting TLS? */
	ST_TLS_ACCEPT,	/* interception: handshake with the client */
	ST_TLS_CONNECT, /* interception: handshake with the upstream */
	ST_CLOSING,
};

struct conn {
	struct net_proxy *p;
	struct conn *prev, *next;
	struct conn *ready_next, *dead_next;
	bool on_ready, dead;
	enum cstate st;
	bool socks;
	int cfd, ufd;
	struct handle hc, hu;
	struct buf cin, cout, uin, uout;
	uint64_t deadline;
	struct net_job *job;

	/* the request or tunnel in progress */
	bool active;
	enum net_proto proto;
	char host[256];
	uint16_t port;
	char method[24];
	char *path; /* origin-form, for forwarding */
	const struct net_rule *rule;
	uint64_t max_body;
	uint64_t t0, up, down;
	int status;
	struct sockaddr_storage addrs[NET_JOB_MAX_ADDRS];
	size_t n_addrs, next_addr;
	char addr[INET6_ADDRSTRLEN + 8];
	struct net_body qbody, rbody;
	bool head_req, client_close, resp_head, resp_started;
	bool c_eof, u_eof, c_shut;
	struct net_http_head *h;

	/* Plain HTTP keeps its upstream connection for the next request on the
	 * same client connection when it goes to the same host and port (the
	 * address was checked when it was made; rules never change). */
	bool up_idle, reused;
	char up_host[256];
	uint16_t up_port;
	char up_addr[INET6_ADDRSTRLEN + 8];
	char *rehead; /* copy of a body-less request head, to retry once on a fresh
		       * connection if a reused one turns out closed */
	size_t rehead_len;

	/* TLS interception: once intercept is set, the client connection
	 * carries HTTP inside TLS, every request goes through ST_HEAD like
	 * plain HTTP, and t_* keep what the CONNECT (or SOCKS) established. */
	SSL *cssl, *ussl;
	bool intercept, must_intercept, tls_then_forward;
	enum net_proto t_proto;
	char t_host[256], t_authority[262];
	uint16_t t_port;
	struct sockaddr_storage t_addrs[NET_JOB_MAX_ADDRS];
	size_t t_naddrs;

	/* a tunnel to an address the DNS filter gave out, judged as the name
	 * it was given out for (see try_alias) */
	bool aliased;
	struct sockaddr_storage alias_addr;

	/* tunnel */
	int pcu[2], puc[2];
	size_t pend_cu, pend_uc;
	bool eof_cu, eof_uc, shut_u2, shut_c2;
};

struct net_proxy {
	struct net_config cfg;
	char *sandbox_id;
	const struct net_rules *rules;
	net_event_fn cb;
	void *cb_data;
	int epfd, stopfd, lfd_http, lfd_socks, dns_fd, res_fd;
	struct handle h_stop, h_http, h_socks, h_dns, h_res;
	struct net_resolver *res;
	struct net_tls *tls; /* tls_intercept only */
	char *upstream_ca_file;
	pthread_t thread;
	pthread_mutex_t lock;
	bool served, started, joined;
	struct conn *conns, *ready, *dead_list;
	unsigned n_conns;
	uint64_t now, total_bytes, next_sweep;
	double dns_tokens;
	uint64_t dns_refill;
	uint64_t rl_window_end, rl_suppressed; /* rate-limit events, see dns_event */
	uint64_t cl_window_end, cl_suppressed; /* max-connections events, see emit */
	bool accept_paused;		       /* out of descriptors, see accept_all */
	struct alias {
		struct sockaddr_storage a;
		char name[256];
		uint64_t expires;
	} * aliases; /* ALIASES slots, made on first use */
	unsigned alias_next;
	uint64_t accept_resume;
	unsigned dns_inflight;
	_Atomic uint64_t st_conns_total, st_open, st_requests, st_refused, st_dns, st_bytes;
};

/* ------------------------------------------------------------ utilities */

const char *
net_proto_name(enum net_proto p)
{
	switch (p) {
	case NET_PROTO_HTTP:
		return "http";
	case NET_PROTO_CONNECT:
		return "connect";
	case NET_PROTO_SOCKS:
		return "socks5";
	case NET_PROTO_DNS:
		return "dns";
	case NET_PROTO_HTTPS:
		return "https";
	}
	return "?";
}

void
net_config_init(struct net_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_conns = 128;
	cfg->header_timeout_ms = 10000;
	cfg->connect_timeout_ms = 10000;
	cfg->idle_timeout_ms = 300000;
	cfg->dns_rate = 50;
	cfg->dns_burst = 100;
	cfg->dns_max_label = 63;
	cfg->dns_ttl = 60;
}

static uint64_t
ms(unsigned v)
{
	return (uint64_t)v * 1000000ull;
}

static void
buf_alloc(struct buf *b)
{
	if (!b->d)
		b->d = wd_xmalloc(BUF_CAP);
}

static size_t
buf_space(struct buf *b)
{
	buf_alloc(b);
	if (b->off && b->off + b->len == BUF_CAP) {
		memmove(b->d, b->d + b->off, b->len);
		b->off = 0;
	}
	if (b->len == 0)
		b->off = 0;
	return BUF_CAP - b->off - b->len;
}

static void
buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}

/* Append; returns false if it does not fit (the caller waits). */
static bool
buf_put(struct buf *b, const void *data, size_t n)
{
	if (buf_space(b) < n) {
		if (b->off) {
			memmove(b->d, b->d + b->off, b->len);
			b->off = 0;
		}
		if (BUF_CAP - b->len < n)
			return false;
	}
	memcpy(b->d + b->off + b->len, data, n);
	b->len += n;
	return true;
}

static void
buf_free(struct buf *b)
{
	free(b->d);
	b->d = NULL;
	b->off = b->len = 0;
}

/* recv into b; >0 bytes, 0 EOF, -EAGAIN, or -errno. */
static ssize_t
rd(int fd, struct buf *b)
{
	size_t space = buf_space(b);
	if (space == 0)
		return -EAGAIN;
	ssize_t n = recv(fd, b->d + b->off + b->len, space, 0);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	b->len += (size_t)n;
	return n;
}

/* send from b; >0 bytes, -EAGAIN, or -errno.  MSG_NOSIGNAL: a peer gone
 * must be an error code, not SIGPIPE in a library's host process. */
static ssize_t
wr(int fd, struct buf *b)
{
	if (b->len == 0)
		return -EAGAIN;
	ssize_t n = send(fd, b->d + b->off, b->len, MSG_NOSIGNAL);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	buf_consume(b, (size_t)n);
	return n;
}

/* The same over TLS: WANT_READ/WANT_WRITE are EAGAIN (the edge-triggered
 * step retries on any event of the fd, which covers both), a clean or
 * unannounced close is EOF, anything else an error.  The OpenSSL error
 * queue is per thread: cleared here so one connection's error never shows
 * up as another's. */
static ssize_t
ssl_io_result(SSL *s, int r)
{
	int e = SSL_get_error(s, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return -EAGAIN;
	ERR_clear_error();
	if (e == SSL_ERROR_ZERO_RETURN)
		return 0;
	return -EIO;
}

static ssize_t
ssl_rd(SSL *s, struct buf *b)
{
	size_t space = buf_space(b), got = 0;
	if (space == 0)
		return -EAGAIN;
	int r = SSL_read_ex(s, b->d + b->off + b->len, space, &got);
	if (r == 1) {
		b->len += got;
		return (ssize_t)got;
	}
	return ssl_io_result(s, r);
}

static ssize_t
ssl_wr(SSL *s, struct buf *b)
{
	size_t done = 0;
	if (b->len == 0)
		return -EAGAIN;
	int r = SSL_write_ex(s, b->d + b->off, b->len, &done);
	if (r == 1) {
		buf_consume(b, done);
		return (ssize_t)done;
	}
	ssize_t rc = ssl_io_result(s, r);
	return rc == 0 ? -EPIPE : rc;
}

static ssize_t
c_rd(struct conn *c)
{
	return c->cssl ? ssl_rd(c->cssl, &c->cin) : rd(c->cfd, &c->cin);
}

static ssize_t
c_wr(struct conn *c)
{
	return c->cssl ? ssl_wr(c->cssl, &c->cout) : wr(c->cfd, &c->cout);
}

static ssize_t
u_rd(struct conn *c)
{
	return c->ussl ? ssl_rd(c->ussl, &c->uin) : rd(c->ufd, &c->uin);
}

static ssize_t
u_wr(struct conn *c)
{
	return c->ussl ? ssl_wr(c->ussl, &c->uout) : wr(c->ufd, &c->uout);
}

static void
addr_text(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	char a[INET6_ADDRSTRLEN] = "?";
	uint16_t port;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		port = ntohs(s4->sin_port);
		snprintf(out, cap, "%s:%u", a, port);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		port = ntohs(s6->sin6_port);
		snprintf(out, cap, "[%s]:%u", a, port);
	}
}

static void
set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)(void *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons(port);
}

/* --------------------------------------------------------------- events */

static void
emit(struct conn *c, bool allowed, enum net_reason reason, const char *advice)
{
	struct net_proxy *p = c->p;
	if (!c->active)
		return;
	c->active = false;
	atomic_fetch_add(&p->st_requests, 1);
	if (!allowed)
		atomic_fetch_add(&p->st_refused, 1);
	if (!p->cb)
		return;
	/* As for DNS floods: refusals at the connection limit make one event
	 * per second, carrying how many others there were. */
	char cl_advice[200];
	if (reason == NET_R_CONN_LIMIT) {
		if (p->now < p->cl_window_end) {
			p->cl_suppressed++;
			return;
		}
		if (p->cl_suppressed) {
			snprintf(cl_advice, sizeof(cl_advice),
				 "%llu more connections refused at the limit before this one; %s",
				 (unsigned long long)p->cl_suppressed, advice ? advice : "");
			advice = cl_advice;
		}
		p->cl_suppressed = 0;
		p->cl_window_end = p->now + ms(1000);
	}
	char path[EVENT_PATH_MAX + 1];
	const char *pp = NULL;
	if (c->path && (c->proto == NET_PROTO_HTTP || c->proto == NET_PROTO_HTTPS)) {
		snprintf(path, sizeof(path), "%s", c->path);
		pp = path;
	}
	struct net_event ev = {
	    .sandbox_id = p->sandbox_id,
	    .proto = c->proto,
	    .host = c->host[0] ? c->host : NULL,
	    .port = c->port,
	    .method = c->method[0] ? c->method : NULL,
	    .path = pp,
	    .rule = net_rule_text(c->rule),
	    .allowed = allowed,
	    .reason = reason,
	    .advice = advice ? advice : "",
	    .addr = c->addr[0] ? c->addr : NULL,
	    .status = c->status,
	    .bytes_up = c->up,
	    .bytes_down = c->down,
	    .duration_us = (p->now - c->t0) / 1000,
	};
	p->cb(&ev, p->cb_data);
}

/* ------------------------------------------------------- connection life */

static void
ep_add(struct net_proxy *p, int fd, struct handle *h, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = h};
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		abort(); /* only ENOMEM/ENOSPC: the loop cannot run without it */
}

static void
close_upstream(struct conn *c)
{
	c->up_idle = c->reused = false;
	free(c->rehead);
	c->rehead = NULL;
	if (c->ussl) {
		SSL_free(c->ussl);
		c->ussl = NULL;
	}
	if (c->ufd >= 0) {
		epoll_ctl(c->p->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
		wd_close_reset(&c->ufd);
	}
	buf_free(&c->uin);
	c->uout.off = c->uout.len = 0;
	c->u_eof = false;
}

static void
close_pipes(struct conn *c)
{
	wd_close_reset(&c->pcu[0]);
	wd_close_reset(&c->pcu[1]);
	wd_close_reset(&c->puc[0]);
	wd_close_reset(&c->puc[1]);
}

/* Unlink, close everything, and queue the memory for after the batch. */
static void
conn_close(struct conn *c, enum net_reason reason, const char *advice)
{
	struct net_proxy *p = c->p;
	if (c->dead)
		return;
	if (c->active)
		emit(c, reason == NET_R_NONE, reason, advice);
	c->dead = true;
	if (c->job)
		c->job->owner = NULL; /* the result is dropped when it arrives */
	close_upstream(c);
	close_pipes(c);
	if (c->cssl) {
		SSL_free(c->cssl);
		c->cssl = NULL;
	}
	if (c->cfd >= 0) {
		epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
		wd_close_reset(&c->cfd);
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	p->n_conns--;
	atomic_fetch_sub(&p->st_open, 1);
	c->dead_next = p->dead_list;
	p->dead_list = c;
}

static void
conn_free(struct conn *c)
{
	buf_free(&c->cin);
	buf_free(&c->cout);
	buf_free(&c->uin);
	buf_free(&c->uout);
	free(c->path);
	free(c->h);
	free(c->rehead);
	free(c);
}

static const char *
status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	}
	return "Error";
}

static uint8_t
socks_code(enum net_reason r)
{
	switch (r) {
	case NET_R_RESOLVE:
		return NET_SOCKS_HOST_UNREACH;
	case NET_R_CONNECT:
		return NET_SOCKS_REFUSED;
	case NET_R_TIMEOUT:
		return NET_SOCKS_TTL;
	case NET_R_MALFORMED:
	case NET_R_BAD_HOST:
		return NET_SOCKS_FAIL;
	default:
		return NET_SOCKS_NOT_ALLOWED;
	}
}

/* Refuse the current request: answer (HTTP status with X-Warden-Denied
 * and a one-line body, or a SOCKS reply code), record the event, and close
 * after the answer is out.  The body is written for a model as much as for
 * a person: what was refused, why, and what to do instead. */
static void
refuse(struct conn *c, int status, enum net_reason reason, const struct net_rule *rule,
       const char *advice)
{
	struct net_proxy *p = c->p;
	c->status = status;
	if (rule)
		c->rule = rule;
	close_upstream(c);
	close_pipes(c);
	if (c->job) {
		c->job->owner = NULL;
		c->job = NULL;
	}
	if (c->socks && !c->intercept) {
		uint8_t r[10] = {5, socks_code(reason), 0, 1, 0, 0, 0, 0, 0, 0};
		if (c->st != ST_SOCKS_GREET) {
			c->status = r[1];
			buf_put(&c->cout, r, sizeof(r));
		}
	} else if (!c->resp_started) {
		char body[512], head[1024];
		const char *rt = net_rule_text(c->rule);
		int bl = snprintf(body, sizeof(body), "warden: %s%s%s:%u refused (%s): %s\n",
				  c->method[0] ? c->method : "", c->method[0] ? " " : "",
				  c->host[0] ? c->host : "?", c->port, net_reason_name(reason),
				  advice && advice[0] ? advice : "malformed request");
		if (bl < 0 || (size_t)bl >= sizeof(body))
			bl = (int)strlen(body);
		int hl = snprintf(head, sizeof(head),
				  "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
				  "X-Warden-Denied: %s%s%s%s\r\nContent-Length: %d\r\n"
				  "Connection: close\r\n\r\n",
				  status, status_text(status), net_reason_name(reason),
				  rt ? "; rule=\"" : "", rt ? rt : "", rt ? "\"" : "", bl);
		if (hl > 0 && (size_t)hl < sizeof(head)) {
			buf_put(&c->cout, head, (size_t)hl);
			buf_put(&c->cout, body, (size_t)bl);
		}
	}
	emit(c, false, reason, advice);
	c->st = ST_CLOSING;
	c->deadline = p->now + ms(CLOSE_LINGER_MS);
}

/* ------------------------------------------------------------- requests */

static void
request_reset(struct conn *c)
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
static void
alias_add(struct net_proxy *p, const struct sockaddr_storage *a, const char *name)
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
	slot->expires = p->now + ms(p->cfg.dns_ttl * 1000u + 60000u);
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
static void
try_alias(struct conn *c, struct net_decision *d)
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
static void
addresses_ready(struct conn *c)
{
	struct net_decision first = {0};
	bool refused = false;
	size_t kept = 0;
	for (size_t i = 0; i < c->n_addrs; i++) {
		struct net_decision d = {0};
		set_port(&c->addrs[i], c->port);
		if (net_rules_check_addr(c->p->rules, (struct sockaddr *)&c->addrs[i], c->port,
					 &d)) {
			c->addrs[kept++] = c->addrs[i];
		} else if (!refused) {
			first = d;
			refused = true;
			addr_text(&c->addrs[i], c->addr, sizeof(c->addr));
		}
	}
	c->n_addrs = kept;
	if (kept == 0) {
		refuse(c, 403, first.reason, first.rule, first.advice);
		return;
	}
	c->addr[0] = '\0';
	c->next_addr = 0;
	start_connect(c);
}

static void
start_resolve(struct conn *c)
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
		addresses_ready(c);
		return;
	}
	struct net_job *j = wd_xcalloc(1, sizeof(*j));
	j->owner = c;
	snprintf(j->host, sizeof(j->host), "%s", c->host);
	if (net_resolver_submit(p->res, j) < 0) {
		free(j);
		refuse(c, 503, NET_R_RESOLVE, NULL, "too many lookups in flight; retry shortly");
		return;
	}
	c->job = j;
	c->st = ST_RESOLVE;
	c->deadline = p->now + ms(p->cfg.connect_timeout_ms);
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
			ep_add(p, fd, &c->hu, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
			addr_text(sa, c->addr, sizeof(c->addr));
			c->st = ST_CONNECT;
			c->deadline = p->now + ms(p->cfg.connect_timeout_ms);
			return;
		}
		last = errno;
		close(fd);
	}
	char adv[256];
	snprintf(adv, sizeof(adv), "could not connect to %s:%u (%s); the service may be down",
		 c->host, c->port, strerror(last ? last : ECONNREFUSED));
	refuse(c, 502, NET_R_CONNECT, NULL, adv);
}

/* Build the upstream request head: origin-form request line, Host from
 * the URI, the client's end-to-end fields, "Connection: close". */
static bool
build_upstream_head(struct conn *c, const char *buf, const struct net_target *t)
{
	struct net_http_head *h = c->h;
	struct buf *o = &c->uout;
	buf_alloc(o);
	o->off = o->len = 0;
	char line[64];
	if (!buf_put(o, buf + h->method.off, h->method.len) || !buf_put(o, " ", 1) ||
	    !buf_put(o, c->path, strlen(c->path)) || !buf_put(o, " HTTP/1.1\r\nHost: ", 17) ||
	    !buf_put(o, t->authority, strlen(t->authority)) || !buf_put(o, "\r\n", 2))
		return false;
	for (unsigned i = 0; i < h->n_headers; i++) {
		if (net_http_hop_by_hop(buf, h, i, true))
			continue;
		const struct net_http_header *hd = &h->headers[i];
		if (!buf_put(o, buf + hd->name.off, hd->name.len) || !buf_put(o, ": ", 2) ||
		    !buf_put(o, buf + hd->value.off, hd->value.len) || !buf_put(o, "\r\n", 2))
			return false;
	}
	int n = snprintf(line, sizeof(line), "Connection: keep-alive\r\n\r\n");
	return buf_put(o, line, (size_t)n);
}

/* From here on the host is the form the rules matched: lowercase, no
 * trailing dot, canonical address text (it names the leaf certificate and
 * goes into events). */
static void
canonical_host(struct conn *c)
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
		refuse(c, 502, NET_R_TLS, NULL, "could not start TLS to the upstream");
		return;
	}
	snprintf(c->addr, sizeof(c->addr), "%s", c->up_addr);
	c->st = ST_TLS_CONNECT;
	c->deadline = p->now + ms(p->cfg.connect_timeout_ms);
}

static void
handle_http_request(struct conn *c)
{
	struct net_proxy *p = c->p;
	const char *buf = c->cin.d + c->cin.off;
	struct net_http_head *h = c->h;
	struct net_target t;
	struct net_decision d;
	request_reset(c);
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
			refuse(c, 400, NET_R_MALFORMED, NULL,
			       "inside the tunnel send origin-form requests (GET /path)");
			return;
		}
		if (!host_header_matches(buf, h, c->t_host, c->t_port)) {
			char adv[300];
			snprintf(
			    adv, sizeof(adv),
			    "this tunnel goes to %s only; open another CONNECT for another host",
			    c->t_authority);
			refuse(c, 421, NET_R_MISDIRECTED, NULL, adv);
			return;
		}
		c->path = wd_xasprintf("%.*s", (int)tl, tg);
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
			refuse(c, 400, NET_R_BAD_HOST, NULL,
			       "CONNECT needs host:port with a plain host name or address");
			return;
		}
		snprintf(c->host, sizeof(c->host), "%s", t.host);
		c->port = t.port;
		struct net_request q = {.host = t.host, .port = t.port, .tunnel = true};
		net_rules_decide(p->rules, &q, &d);
		try_alias(c, &d);
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
				refuse(c, 400, NET_R_NOT_PROXY, NULL,
				       "this is a proxy: send absolute URLs (http://host/path), "
				       "and use CONNECT for https");
			else if (tl > 8 && strncasecmp(tg, "https://", 8) == 0)
				refuse(c, 400, NET_R_MALFORMED, NULL,
				       "https:// goes through CONNECT, not as a plain request");
			else
				refuse(c, 400, NET_R_BAD_HOST, NULL,
				       "the URL needs a plain host name or address, no user info");
			return;
		}
		snprintf(c->host, sizeof(c->host), "%s", t.host);
		c->port = t.port;
		bool slash = t.path_len > 0 && t.path[0] == '/';
		c->path = wd_xasprintf("%s%.*s", slash ? "" : "/", (int)t.path_len, t.path);
		struct net_request q = {
		    .host = t.host, .port = t.port, .method = c->method, .path = c->path};
		net_rules_decide(p->rules, &q, &d);
	}
	if (!d.allow) {
		refuse(c, 403, d.reason, d.rule, d.advice);
		return;
	}
	canonical_host(c);
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
			refuse(c, 413, NET_R_BODY_LIMIT, d.rule, adv);
			return;
		}
		if (!build_upstream_head(c, buf, &t)) {
			refuse(c, 431, NET_R_MALFORMED, NULL, "request head too large");
			return;
		}
		net_body_init(&c->qbody, h->body, h->content_length);
		c->head_req = strcmp(c->method, "HEAD") == 0;
	}
	buf_consume(&c->cin, h->head_len);
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
		c->deadline = p->now + ms(p->cfg.idle_timeout_ms);
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
		c->uout.d = NULL;
		close_upstream(c);
		buf_free(&c->uout);
		c->uout = keep;
	}
	if (c->intercept) {
		/* a new connection to the address the CONNECT checked */
		memcpy(c->addrs, c->t_addrs, sizeof(c->addrs));
		c->n_addrs = c->t_naddrs;
		c->next_addr = 0;
		start_connect(c);
		return;
	}
	start_resolve(c);
}

/* ----------------------------------------------------------- the states */

static int
st_head(struct conn *c)
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
			gone = r == 1 || ssl_io_result(c->ussl, r) != -EAGAIN;
		} else {
			ssize_t n = recv(c->ufd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
			gone = n >= 0 || (errno != EAGAIN && errno != EINTR);
		}
		if (gone)
			close_upstream(c); /* closed, or talking out of turn */
	}
	if (!c->c_eof) {
		ssize_t n = c_rd(c);
		if (n > 0) {
			prog = 1;
		} else if (n == 0) {
			c->c_eof = true;
		} else if (n != -EAGAIN) {
			conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	if (c->cin.len == 0) {
		if (c->c_eof) {
			conn_close(c, NET_R_NONE, NULL);
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
		request_reset(c);
		c->proto = c->intercept ? NET_PROTO_HTTPS : NET_PROTO_HTTP;
		int status = rc == 0 ? 400 : -rc;
		refuse(c, status, NET_R_MALFORMED, NULL,
		       status == 414   ? "the request line is too long"
		       : status == 431 ? "the request head is too large"
		       : status == 501 ? "only the chunked transfer coding is supported"
		       : status == 505
			   ? "speak HTTP/1.1 to the proxy"
			   : "malformed request head; send a standard HTTP/1.1 request");
		return 1;
	}
	handle_http_request(c);
	return 1;
}

static int
st_socks_greet(struct conn *c)
{
	ssize_t n = rd(c->cfd, &c->cin);
	if (n == 0 || (n < 0 && n != -EAGAIN)) {
		conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	bool noauth;
	int rc = net_socks_parse_greeting((uint8_t *)c->cin.d + c->cin.off, c->cin.len, &noauth);
	if (rc == 0)
		return n > 0;
	request_reset(c);
	c->proto = NET_PROTO_SOCKS;
	if (rc < 0 || !noauth) {
		uint8_t r[2] = {5, 0xff};
		if (rc > 0)
			buf_put(&c->cout, r, 2);
		refuse(c, 0, NET_R_MALFORMED, NULL,
		       "SOCKS5 without authentication only; use socks5h://127.0.0.1:1080");
		return 1;
	}
	c->active = false; /* the request proper follows */
	buf_consume(&c->cin, (size_t)rc);
	uint8_t ok[2] = {5, 0};
	buf_put(&c->cout, ok, 2);
	c->st = ST_SOCKS_REQ;
	return 1;
}

static int
st_socks_req(struct conn *c)
{
	ssize_t n = rd(c->cfd, &c->cin);
	if (n == 0 || (n < 0 && n != -EAGAIN)) {
		conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	struct net_socks_request q;
	int rc = net_socks_parse_request((uint8_t *)c->cin.d + c->cin.off, c->cin.len, &q);
	if (rc == 0)
		return n > 0;
	request_reset(c);
	c->proto = NET_PROTO_SOCKS;
	if (rc < 0) {
		uint8_t r[10] = {5, (uint8_t)-rc, 0, 1, 0, 0, 0, 0, 0, 0};
		buf_put(&c->cout, r, sizeof(r));
		c->status = -rc;
		emit(c, false, NET_R_MALFORMED,
		     -rc == NET_SOCKS_CMD ? "only the CONNECT command is offered"
					  : "malformed SOCKS5 request");
		c->st = ST_CLOSING;
		c->deadline = c->p->now + ms(CLOSE_LINGER_MS);
		return 1;
	}
	buf_consume(&c->cin, (size_t)rc);
	snprintf(c->host, sizeof(c->host), "%s", q.host);
	c->port = q.port;
	struct net_request r = {.host = q.host, .port = q.port, .tunnel = true};
	struct net_decision d;
	net_rules_decide(c->p->rules, &r, &d);
	try_alias(c, &d);
	c->must_intercept = false;
	if (!d.allow && d.reason == NET_R_TUNNEL && c->p->tls) {
		d.allow = true; /* as for CONNECT: only as intercepted TLS */
		c->must_intercept = true;
	}
	if (!d.allow) {
		refuse(c, 0, d.reason, d.rule, d.advice);
		return 1;
	}
	canonical_host(c);
	c->rule = d.rule;
	start_resolve(c);
	return 1;
}

static int
st_connect(struct conn *c)
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
	c->deadline = p->now + ms(p->cfg.idle_timeout_ms);
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
		buf_put(&c->cout, r, sizeof(r));
	} else {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		buf_put(&c->cout, ok, sizeof(ok) - 1);
	}
	c->status = c->socks ? 0 : 200;
	if (p->tls && c->cin.len == 0) {
		c->st = ST_TLS_PEEK;
		c->deadline = p->now + ms(p->cfg.header_timeout_ms);
		return 1;
	}
	if (c->must_intercept) {
		/* bytes before our answer: not a TLS client waiting for it */
		conn_close(c, NET_R_TUNNEL, "a method-restricted host is reachable only by TLS");
		return -1;
	}
	if (c->cin.len) {
		buf_alloc(&c->uout);
		buf_put(&c->uout, c->cin.d + c->cin.off, c->cin.len);
		buf_consume(&c->cin, c->cin.len);
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

static void
count(struct conn *c, size_t n, bool upward)
{
	if (upward)
		c->up += n;
	else
		c->down += n;
	c->p->total_bytes += n;
	atomic_fetch_add(&c->p->st_bytes, n);
}

static void
byte_limit(struct conn *c)
{
	char adv[200];
	snprintf(adv, sizeof(adv),
		 "this sandbox has used its network budget of %llu bytes; finish without more "
		 "network",
		 (unsigned long long)c->p->cfg.max_total_bytes);
	if (!c->resp_started && c->st != ST_TUNNEL)
		refuse(c, 429, NET_R_BYTE_LIMIT, NULL, adv);
	else
		conn_close(c, NET_R_BYTE_LIMIT, adv);
}

/* Rewrite and queue a response head for the client. */
static bool
put_response_head(struct conn *c, bool keep)
{
	const char *buf = c->uin.d + c->uin.off;
	struct net_http_head *h = c->h;
	struct buf *o = &c->cout;
	buf_alloc(o);
	if (BUF_CAP - o->len < (size_t)h->head_len + 64)
		return false; /* wait for the client to take what is queued */
	const char *eol = memchr(buf, '\n', h->head_len);
	size_t sl = (size_t)(eol - buf) + 1;
	buf_put(o, buf, sl);
	for (unsigned i = 0; i < h->n_headers; i++) {
		if (net_http_hop_by_hop(buf, h, i, false))
			continue;
		const struct net_http_header *hd = &h->headers[i];
		buf_put(o, buf + hd->name.off, hd->name.len);
		buf_put(o, ": ", 2);
		buf_put(o, buf + hd->value.off, hd->value.len);
		buf_put(o, "\r\n", 2);
	}
	const char *ch = keep ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
	buf_put(o, ch, strlen(ch));
	return true;
}

static void
upstream_failed(struct conn *c, const char *what)
{
	char adv[256];
	snprintf(adv, sizeof(adv), "%s:%u %s; retry later or use another source", c->host, c->port,
		 what);
	if (!c->resp_started)
		refuse(c, 502, NET_R_UPSTREAM, NULL, adv);
	else
		conn_close(c, NET_R_UPSTREAM, adv);
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
	close_upstream(c);
	buf_alloc(&c->uout);
	buf_put(&c->uout, head, len);
	free(head);
	c->addr[0] = '\0';
	if (c->intercept) {
		memcpy(c->addrs, c->t_addrs, sizeof(c->addrs));
		c->n_addrs = c->t_naddrs;
		c->next_addr = 0;
		start_connect(c);
	} else {
		start_resolve(c);
	}
	return true;
}

static int
st_forward(struct conn *c)
{
	struct net_proxy *p = c->p;
	int prog = 0;
	ssize_t n;

	/* request body: client -> uout, through the framing and the cap */
	if (!c->qbody.done) {
		if (c->cin.len && buf_space(&c->uout)) {
			size_t k =
			    c->cin.len < buf_space(&c->uout) ? c->cin.len : buf_space(&c->uout);
			ssize_t used = net_body_feed(&c->qbody, c->cin.d + c->cin.off, k);
			if (used < 0) {
				if (!c->resp_started)
					refuse(c, 400, NET_R_MALFORMED, NULL,
					       "malformed chunked request body");
				else
					conn_close(c, NET_R_MALFORMED, "malformed chunked body");
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
					refuse(c, 413, NET_R_BODY_LIMIT, NULL, adv);
				else
					conn_close(c, NET_R_BODY_LIMIT, adv);
				return -1;
			}
			if (used > 0) {
				buf_put(&c->uout, c->cin.d + c->cin.off, (size_t)used);
				buf_consume(&c->cin, (size_t)used);
				prog = 1;
			}
		}
		if (!c->qbody.done && !c->c_eof) {
			n = c_rd(c);
			if (n > 0) {
				prog = 1;
			} else if (n == 0) {
				c->c_eof = true;
			} else if (n != -EAGAIN) {
				conn_close(c, NET_R_NONE, NULL);
				return -1;
			}
		}
		if (!c->qbody.done && c->c_eof && c->cin.len == 0) {
			conn_close(c, NET_R_MALFORMED, "client closed before the body ended");
			return -1;
		}
	}
	/* uout -> upstream */
	if (c->uout.len) {
		if (!budget(c, c->uout.len)) {
			byte_limit(c);
			return -1;
		}
		n = u_wr(c);
		if (n > 0) {
			count(c, (size_t)n, true);
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
		n = u_rd(c);
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
	/* response head */
	bool head_incomplete = !c->resp_head && c->uin.len == 0;
	while (!c->resp_head && c->uin.len) {
		int rc =
		    net_http_parse_response(c->uin.d + c->uin.off, c->uin.len, c->head_req, c->h);
		if (rc == 0) {
			head_incomplete = true;
			break;
		}
		if (rc < 0 || c->h->status == 101) {
			upstream_failed(c, "sent a malformed response");
			return -1;
		}
		if (c->h->status < 200) {
			/* interim (100 Continue): pass on verbatim */
			if (!buf_put(&c->cout, c->uin.d + c->uin.off, c->h->head_len))
				break;
			buf_consume(&c->uin, c->h->head_len);
			prog = 1;
			continue;
		}
		bool keep = !c->client_close && c->h->body != NET_BODY_CLOSE;
		if (!put_response_head(c, keep))
			break;
		c->status = c->h->status;
		c->client_close = !keep;
		net_body_init(&c->rbody, c->h->body, c->h->content_length);
		buf_consume(&c->uin, c->h->head_len);
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
		size_t space = buf_space(&c->cout);
		if (c->uin.len && space) {
			size_t k = c->uin.len < space ? c->uin.len : space;
			ssize_t used = net_body_feed(&c->rbody, c->uin.d + c->uin.off, k);
			if (used < 0) {
				conn_close(c, NET_R_UPSTREAM, "malformed response body framing");
				return -1;
			}
			buf_put(&c->cout, c->uin.d + c->uin.off, (size_t)used);
			buf_consume(&c->uin, (size_t)used);
			prog |= used > 0;
		}
		if (c->u_eof && c->uin.len == 0) {
			if (c->rbody.mode == NET_BODY_CLOSE) {
				c->rbody.done = true;
			} else if (!c->rbody.done) {
				conn_close(c, NET_R_UPSTREAM, "upstream closed mid-response");
				return -1;
			}
		}
	}
	/* client output */
	if (c->cout.len) {
		if (!budget(c, c->cout.len)) {
			byte_limit(c);
			return -1;
		}
		n = c_wr(c);
		if (n > 0) {
			count(c, (size_t)n, false);
			prog = 1;
		} else if (n != -EAGAIN) {
			conn_close(c, NET_R_NONE, NULL);
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
			free(c->rehead);
			c->rehead = NULL;
			snprintf(c->up_host, sizeof(c->up_host), "%s", c->host);
			c->up_port = c->port;
			snprintf(c->up_addr, sizeof(c->up_addr), "%s", c->addr);
		} else {
			close_upstream(c);
		}
		emit(c, true, NET_R_NONE, NULL);
		if (keep) {
			c->st = ST_HEAD;
			c->deadline = p->now + ms(p->cfg.header_timeout_ms);
		} else {
			c->st = ST_CLOSING;
			c->deadline = p->now + ms(p->cfg.idle_timeout_ms);
		}
		return 1;
	}
	if (prog)
		c->deadline = p->now + ms(p->cfg.idle_timeout_ms);
	return prog;
}

/* One direction of a tunnel: from -> pipe -> to.  Fills the pipe only
 * when it is empty, so EAGAIN from the source splice always means "no
 * data" and never "pipe full".  Returns 1 progress, 0 none, -1 error. */
static int
pump(struct conn *c, int from, int to, int pipefd[2], size_t *pend, bool *eof, bool *shut,
     bool upward)
{
	struct net_proxy *p = c->p;
	int prog = 0;
	size_t moved = 0;
	while (moved < SPLICE_CHUNK * 4) {
		if (*pend) {
			ssize_t n = splice(pipefd[0], NULL, to, NULL, *pend,
					   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				*pend -= (size_t)n;
				count(c, (size_t)n, upward);
				moved += (size_t)n;
				prog = 1;
				continue;
			}
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			return -1;
		}
		if (*eof) {
			if (!*shut) {
				/* Half-close: the peer sees EOF, the other way stays open. */
				shutdown(to, SHUT_WR);
				*shut = true;
				prog = 1;
			}
			break;
		}
		size_t want = SPLICE_CHUNK;
		if (p->cfg.max_total_bytes) {
			if (p->total_bytes >= p->cfg.max_total_bytes)
				return -2;
			uint64_t left = p->cfg.max_total_bytes - p->total_bytes;
			if (left < want)
				want = (size_t)left;
		}
		ssize_t n =
		    splice(from, NULL, pipefd[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			*pend = (size_t)n;
			prog = 1;
			continue;
		}
		if (n == 0) {
			*eof = true;
			prog = 1;
			continue;
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		return -1;
	}
	return prog;
}

static int
st_tunnel(struct conn *c)
{
	struct net_proxy *p = c->p;
	int prog = 0;
	ssize_t n;
	if (c->cout.len) {
		n = wr(c->cfd, &c->cout);
		if (n > 0) {
			count(c, (size_t)n, false);
			prog = 1;
		} else if (n != -EAGAIN) {
			conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	if (c->uout.len) {
		n = wr(c->ufd, &c->uout);
		if (n > 0) {
			count(c, (size_t)n, true);
			prog = 1;
		} else if (n != -EAGAIN) {
			conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	if (c->cout.len || c->uout.len)
		return prog;
	if (c->pcu[0] < 0) {
		if (pipe2(c->pcu, O_NONBLOCK | O_CLOEXEC) < 0 ||
		    pipe2(c->puc, O_NONBLOCK | O_CLOEXEC) < 0) {
			conn_close(c, NET_R_NONE, "out of file descriptors");
			return -1;
		}
		/* A bigger pipe moves more per splice; failing is fine (the
		 * default 64 KiB works, slower). */
		(void)fcntl(c->pcu[0], F_SETPIPE_SZ, PIPE_SIZE);
		(void)fcntl(c->puc[0], F_SETPIPE_SZ, PIPE_SIZE);
		buf_free(&c->cin);
		buf_free(&c->uin);
	}
	int a = pump(c, c->cfd, c->ufd, c->pcu, &c->pend_cu, &c->eof_cu, &c->shut_u2, true);
	int b = a < 0
		    ? 0
		    : pump(c, c->ufd, c->cfd, c->puc, &c->pend_uc, &c->eof_uc, &c->shut_c2, false);
	if (a == -2 || b == -2) {
		byte_limit(c);
		return -1;
	}
	if (a < 0 || b < 0) {
		conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	if (c->eof_cu && c->eof_uc && !c->pend_cu && !c->pend_uc) {
		conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	if (a || b)
		c->deadline = p->now + ms(p->cfg.idle_timeout_ms);
	return a || b || prog;
}

static bool
same_name(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la && a[la - 1] == '.')
		la--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

/* The tunnel is open (our 200 or SOCKS reply is out): a TLS handshake
 * record (0x16) from the client means interception; anything else is a
 * plain tunnel, unless the host's rule restricts methods or paths. */
static int
st_tls_peek(struct conn *c)
{
	struct net_proxy *p = c->p;
	if (c->cout.len)
		return 0;
	unsigned char b;
	ssize_t n = recv(c->cfd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	if (b != 0x16) {
		if (c->must_intercept) {
			conn_close(c, NET_R_TUNNEL,
				   "a method-restricted host is reachable only by TLS, which the "
				   "proxy intercepts to check each request");
			return -1;
		}
		c->st = ST_TUNNEL;
		c->deadline = p->now + ms(p->cfg.idle_timeout_ms);
		return 1;
	}
	c->cssl = net_tls_server(p->tls, c->host, c->cfd);
	if (!c->cssl) {
		conn_close(c, NET_R_TLS, "could not issue a certificate for the host");
		return -1;
	}
	c->st = ST_TLS_ACCEPT;
	return 1;
}

static int
st_tls_accept(struct conn *c)
{
	struct net_proxy *p = c->p;
	int r = SSL_do_handshake(c->cssl);
	if (r != 1) {
		int e = SSL_get_error(c->cssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			return 0;
		char adv[300];
		snprintf(adv, sizeof(adv),
			 "TLS with the client failed (%s); trust the sandbox CA (SSL_CERT_FILE) "
			 "and offer http/1.1",
			 net_tls_last_error());
		ERR_clear_error();
		conn_close(c, NET_R_TLS, adv);
		return -1;
	}
	const char *sni = SSL_get_servername(c->cssl, TLSEXT_NAMETYPE_host_name);
	if (sni && !same_name(sni, c->host)) {
		conn_close(c, NET_R_MISDIRECTED,
			   "the TLS server name differs from the host the tunnel was opened to");
		return -1;
	}
	/* Intercepting from here: the tunnel's own event closes now, and
	 * each request inside gets one of its own. */
	c->intercept = true;
	c->t_proto = c->proto;
	snprintf(c->t_host, sizeof(c->t_host), "%s", c->host);
	c->t_port = c->port;
	bool v6 = strchr(c->host, ':') != NULL;
	if (c->port == 443)
		snprintf(c->t_authority, sizeof(c->t_authority), "%s%s%s", v6 ? "[" : "", c->host,
			 v6 ? "]" : "");
	else
		snprintf(c->t_authority, sizeof(c->t_authority), "%s%s%s:%u", v6 ? "[" : "",
			 c->host, v6 ? "]" : "", c->port);
	memcpy(c->t_addrs, c->addrs, sizeof(c->t_addrs));
	c->t_naddrs = c->n_addrs;
	snprintf(c->up_addr, sizeof(c->up_addr), "%s", c->addr);
	emit(c, true, NET_R_NONE, "TLS intercepted: each request inside is checked");
	c->up_idle = false;
	c->st = ST_HEAD;
	c->deadline = p->now + ms(p->cfg.header_timeout_ms);
	return 1;
}

static int
st_tls_connect(struct conn *c)
{
	struct net_proxy *p = c->p;
	int r = SSL_do_handshake(c->ussl);
	if (r != 1) {
		int e = SSL_get_error(c->ussl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			return 0;
		long vr = SSL_get_verify_result(c->ussl);
		char adv[400];
		snprintf(adv, sizeof(adv),
			 "TLS to %s failed (%s); the upstream is not trusted for this name, so "
			 "nothing was sent",
			 c->t_authority,
			 vr != X509_V_OK ? X509_verify_cert_error_string(vr)
					 : net_tls_last_error());
		ERR_clear_error();
		refuse(c, 502, NET_R_TLS, NULL, adv);
		return 1;
	}
	c->st = ST_FORWARD;
	c->u_eof = false;
	c->deadline = p->now + ms(p->cfg.idle_timeout_ms);
	return 1;
}

/* Flush the answer, half-close, then read and drop what the client still
 * sends until it closes or the linger time ends: closing with unread data
 * would send a RST that can destroy the answer in flight. */
static int
st_closing(struct conn *c)
{
	if (c->cout.len) {
		ssize_t n = c_wr(c);
		if (n > 0)
			return 1;
		if (n != -EAGAIN) {
			conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
		return 0;
	}
	if (!c->c_shut) {
		if (c->cssl) {
			/* close_notify, best effort: the peer may be gone */
			(void)SSL_shutdown(c->cssl);
			ERR_clear_error();
		}
		shutdown(c->cfd, SHUT_WR);
		c->c_shut = true;
		if (c->deadline > c->p->now + ms(CLOSE_LINGER_MS))
			c->deadline = c->p->now + ms(CLOSE_LINGER_MS);
	}
	char sink[4096];
	for (int i = 0; i < 64; i++) {
		ssize_t n = recv(c->cfd, sink, sizeof(sink), 0);
		if (n > 0)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		break;
	}
	conn_close(c, NET_R_NONE, NULL);
	return -1;
}

static int
conn_once(struct conn *c)
{
	/* responses queued in earlier states (a keep-alive response tail) */
	int prog = 0;
	if (c->cout.len && c->st != ST_TUNNEL && c->st != ST_CLOSING && c->st != ST_FORWARD) {
		ssize_t n = c_wr(c);
		if (n > 0) {
			count(c, (size_t)n, false);
			prog = 1;
		} else if (n != -EAGAIN) {
			conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	int r = 0;
	switch (c->st) {
	case ST_HEAD:
		r = st_head(c);
		break;
	case ST_SOCKS_GREET:
		r = st_socks_greet(c);
		break;
	case ST_SOCKS_REQ:
		r = st_socks_req(c);
		break;
	case ST_RESOLVE:
		r = 0;
		break;
	case ST_CONNECT:
		r = st_connect(c);
		break;
	case ST_FORWARD:
		r = st_forward(c);
		break;
	case ST_TUNNEL:
		r = st_tunnel(c);
		break;
	case ST_TLS_PEEK:
		r = st_tls_peek(c);
		break;
	case ST_TLS_ACCEPT:
		r = st_tls_accept(c);
		break;
	case ST_TLS_CONNECT:
		r = st_tls_connect(c);
		break;
	case ST_CLOSING:
		r = st_closing(c);
		break;
	}
	if (r < 0)
		return c->dead ? -1 : 1; /* a refusal moved to CLOSING: keep stepping */
	return r || prog;
}

static void
conn_step(struct conn *c)
{
	struct net_proxy *p = c->p;
	for (int i = 0; i < ROUNDS_PER_STEP; i++) {
		if (c->dead || conn_once(c) <= 0)
			return;
	}
	if (!c->dead && !c->on_ready) {
		c->on_ready = true;
		c->ready_next = p->ready;
		p->ready = c;
	}
}

static void
timeout(struct conn *c)
{
	struct net_proxy *p = c->p;
	char adv[200];
	switch (c->st) {
	case ST_HEAD:
		if (c->cin.len == 0 && !c->active) {
			conn_close(c, NET_R_NONE, NULL); /* idle keep-alive */
			return;
		}
		request_reset(c);
		c->proto = c->intercept ? NET_PROTO_HTTPS : NET_PROTO_HTTP;
		snprintf(adv, sizeof(adv),
			 "the request head did not arrive within %u ms; send it at once",
			 p->cfg.header_timeout_ms);
		refuse(c, 408, NET_R_TIMEOUT, NULL, adv);
		conn_step(c);
		return;
	case ST_SOCKS_GREET:
	case ST_SOCKS_REQ:
		request_reset(c);
		c->proto = NET_PROTO_SOCKS;
		conn_close(c, NET_R_TIMEOUT, "the SOCKS handshake did not finish in time");
		return;
	case ST_TLS_PEEK:
	case ST_TLS_ACCEPT:
		conn_close(c, NET_R_TIMEOUT, "the TLS handshake did not finish in time");
		return;
	case ST_RESOLVE:
	case ST_CONNECT:
	case ST_TLS_CONNECT:
		snprintf(adv, sizeof(adv), "%s:%u did not answer within %u ms", c->host, c->port,
			 p->cfg.connect_timeout_ms);
		refuse(c, 504, NET_R_TIMEOUT, NULL, adv);
		conn_step(c);
		return;
	case ST_FORWARD:
		if (!c->resp_started) {
			refuse(c, 504, NET_R_TIMEOUT, NULL, "no traffic within the idle timeout");
			conn_step(c);
		} else {
			conn_close(c, NET_R_TIMEOUT, "no traffic within the idle timeout");
		}
		return;
	case ST_TUNNEL:
		conn_close(c, NET_R_TIMEOUT, "tunnel idle past the idle timeout");
		return;
	case ST_CLOSING:
		conn_close(c, NET_R_NONE, NULL);
		return;
	}
}

static void
sweep(struct net_proxy *p)
{
	for (struct conn *c = p->conns, *n; c; c = n) {
		n = c->next;
		if (c->deadline && p->now >= c->deadline)
			timeout(c);
	}
}

/* ------------------------------------------------------------- listeners */

static void
accept_all(struct net_proxy *p, int lfd, bool socks)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* The listener stays readable while descriptors
				 * are short: pause it for a moment rather than spin
				 * on it; the backlog keeps the waiting clients. */
				struct epoll_event ev = {
				    .events = 0, .data.ptr = socks ? &p->h_socks : &p->h_http};
				epoll_ctl(p->epfd, EPOLL_CTL_MOD, lfd, &ev);
				p->accept_paused = true;
				p->accept_resume = p->now + ms(100);
				wd_log(WD_LOG_WARN, "accept: %s; pausing", strerror(errno));
			} else if (errno != EAGAIN) {
				wd_log(WD_LOG_WARN, "accept: %s", strerror(errno));
			}
			return;
		}
		atomic_fetch_add(&p->st_conns_total, 1);
		struct conn *c = wd_xcalloc(1, sizeof(*c));
		c->p = p;
		c->cfd = fd;
		c->ufd = -1;
		c->pcu[0] = c->pcu[1] = c->puc[0] = c->puc[1] = -1;
		c->socks = socks;
		c->st = socks ? ST_SOCKS_GREET : ST_HEAD;
		c->hc.kind = H_CLIENT;
		c->hc.c = c;
		c->next = p->conns;
		if (p->conns)
			p->conns->prev = c;
		p->conns = c;
		p->n_conns++;
		atomic_fetch_add(&p->st_open, 1);
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (p->n_conns > p->cfg.max_conns) {
			char adv[160];
			request_reset(c);
			c->proto = socks ? NET_PROTO_SOCKS : NET_PROTO_HTTP;
			snprintf(adv, sizeof(adv),
				 "more than %u connections at once; close some and retry",
				 p->cfg.max_conns);
			ep_add(p, fd, &c->hc, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
			if (socks) {
				/* "no acceptable methods": the one refusal a SOCKS
				 * client understands before its greeting is answered */
				uint8_t r[2] = {5, 0xff};
				buf_put(&c->cout, r, 2);
			}
			refuse(c, 503, NET_R_CONN_LIMIT, NULL, adv);
			conn_step(c);
			continue;
		}
		c->deadline = p->now + ms(p->cfg.header_timeout_ms);
		ep_add(p, fd, &c->hc, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
	}
}

/* ------------------------------------------------------------------- DNS */

static void
dns_event(struct net_proxy *p, const struct net_dns_query *q, bool allowed, enum net_reason reason,
	  int rcode, size_t in, size_t out, uint64_t t0, const char *addr)
{
	char advice[160] = "";
	atomic_fetch_add(&p->st_dns, 1);
	if (!allowed)
		atomic_fetch_add(&p->st_refused, 1);
	if (!p->cb)
		return;
	/* A flood past the rate limit must not become an audit flood: one
	 * event per second of it, which counts the queries refused since. */
	if (reason == NET_R_RATE_LIMIT) {
		if (p->now < p->rl_window_end) {
			p->rl_suppressed++;
			return;
		}
		if (p->rl_suppressed)
			snprintf(advice, sizeof(advice),
				 "%llu more queries refused by the rate limit before this one; "
				 "resolve less often",
				 (unsigned long long)p->rl_suppressed);
		else
			snprintf(advice, sizeof(advice),
				 "too many DNS queries; resolve less often");
		p->rl_suppressed = 0;
		p->rl_window_end = p->now + ms(1000);
	} else if (reason == NET_R_NO_RULE) {
		snprintf(advice, sizeof(advice), "no rule allows this name; work without it");
	}
	struct net_event ev = {
	    .sandbox_id = p->sandbox_id,
	    .proto = NET_PROTO_DNS,
	    .host = q->name[0] ? q->name : NULL,
	    .port = q->qtype,
	    .allowed = allowed,
	    .reason = reason,
	    .advice = advice,
	    .addr = addr,
	    .status = rcode,
	    .bytes_up = in,
	    .bytes_down = out,
	    .duration_us = (p->now - t0) / 1000,
	};
	p->cb(&ev, p->cb_data);
}

static void
dns_answer(struct net_proxy *p, const struct net_dns_query *q, int rcode,
	   const struct sockaddr_storage *addrs, size_t n, const struct sockaddr_storage *to,
	   socklen_t tolen, size_t in, bool allowed, enum net_reason reason, uint64_t t0)
{
	uint8_t out[1232];
	struct sockaddr_storage keep[NET_JOB_MAX_ADDRS];
	size_t kept = 0;
	char first[INET6_ADDRSTRLEN + 8] = "";
	/* Only addresses the proxy would connect to are answered: an allowed
	 * name that resolves into a private range shows nothing of it. */
	for (size_t i = 0; i < n && kept < NET_JOB_MAX_ADDRS; i++) {
		struct net_decision d = {0};
		if (net_rules_check_addr(p->rules, (const struct sockaddr *)&addrs[i], 0, &d))
			keep[kept++] = addrs[i];
	}
	if (rcode == NET_DNS_NOERROR && n && !kept) {
		allowed = false;
		reason = NET_R_ADDR_RANGE;
	}
	if (allowed && rcode == NET_DNS_NOERROR)
		for (size_t i = 0; i < kept; i++)
			alias_add(p, &keep[i], q->name);
	for (size_t i = 0; i < kept && !first[0]; i++) {
		uint16_t want = keep[i].ss_family == AF_INET ? 1 : 28;
		if (want == q->qtype)
			addr_text(&keep[i], first, sizeof(first));
	}
	int len = net_dns_build(q, rcode, keep, kept, p->cfg.dns_ttl, out, sizeof(out));
	if (len > 0) {
		/* UDP to the sandbox's own socket: a lost answer is retried by
		 * the client, so a failed send is only logged. */
		if (sendto(p->dns_fd, out, (size_t)len, MSG_NOSIGNAL, (const struct sockaddr *)to,
			   tolen) < 0)
			wd_log(WD_LOG_DEBUG, "dns sendto: %s", strerror(errno));
	}
	dns_event(p, q, allowed, reason, rcode, in, len > 0 ? (size_t)len : 0, t0,
		  first[0] ? first : NULL);
}

static bool
dns_rate_ok(struct net_proxy *p)
{
	double elapsed = (double)(p->now - p->dns_refill) / 1e9;
	p->dns_refill = p->now;
	p->dns_tokens += elapsed * p->cfg.dns_rate;
	if (p->dns_tokens > p->cfg.dns_burst)
		p->dns_tokens = p->cfg.dns_burst;
	if (p->dns_tokens < 1.0)
		return false;
	p->dns_tokens -= 1.0;
	return true;
}

static void
dns_read(struct net_proxy *p)
{
	for (int i = 0; i < 64; i++) {
		uint8_t in[1500];
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(p->dns_fd, in, sizeof(in), 0, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		struct net_dns_query q;
		bool label;
		int rc = net_dns_parse(in, (size_t)n, p->cfg.dns_max_label, &q, &label);
		if (rc < 0)
			continue; /* not a query: no answer, nothing to report */
		uint64_t t0 = p->now;
		if (!dns_rate_ok(p)) {
			dns_answer(p, &q, NET_DNS_REFUSED, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_RATE_LIMIT, t0);
			continue;
		}
		if (rc > 0) {
			dns_answer(p, &q, rc, NULL, 0, &from, fl, (size_t)n, false,
				   label		    ? NET_R_LABEL
				   : rc == NET_DNS_NXDOMAIN ? NET_R_BAD_HOST
							    : NET_R_MALFORMED,
				   t0);
			continue;
		}
		enum net_reason why;
		if (!net_rules_name_allowed(p->rules, q.name, &why)) {
			dns_answer(p, &q, NET_DNS_NXDOMAIN, NULL, 0, &from, fl, (size_t)n, false,
				   why, t0);
			continue;
		}
		if (q.qtype != 1 && q.qtype != 28) {
			dns_answer(p, &q, NET_DNS_REFUSED, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_QTYPE, t0);
			continue;
		}
		struct sockaddr_storage addrs[NET_JOB_MAX_ADDRS];
		size_t na = net_rules_lookup_host(p->rules, q.name, addrs, NET_JOB_MAX_ADDRS);
		if (na) {
			dns_answer(p, &q, NET_DNS_NOERROR, addrs, na, &from, fl, (size_t)n, true,
				   NET_R_NONE, t0);
			continue;
		}
		if (p->dns_inflight >= DNS_MAX_INFLIGHT) {
			dns_answer(p, &q, NET_DNS_SERVFAIL, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_RATE_LIMIT, t0);
			continue;
		}
		struct net_job *j = wd_xcalloc(1, sizeof(*j));
		j->dns = true;
		j->owner = p;
		j->q = q;
		j->client = from;
		j->client_len = fl;
		j->t0 = t0;
		j->qlen = (size_t)n;
		snprintf(j->host, sizeof(j->host), "%s", q.name);
		if (net_resolver_submit(p->res, j) < 0) {
			free(j);
			dns_answer(p, &q, NET_DNS_SERVFAIL, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_RESOLVE, t0);
			continue;
		}
		p->dns_inflight++;
	}
}

static void
resolver_done(struct net_proxy *p)
{
	struct net_job *j = net_resolver_take_done(p->res);
	while (j) {
		struct net_job *next = j->next;
		if (j->dns) {
			p->dns_inflight--;
			if (j->err)
				dns_answer(p, &j->q, NET_DNS_NXDOMAIN, NULL, 0, &j->client,
					   j->client_len, j->qlen, false, NET_R_RESOLVE, j->t0);
			else
				dns_answer(p, &j->q, NET_DNS_NOERROR, j->addrs, j->n_addrs,
					   &j->client, j->client_len, j->qlen, true, NET_R_NONE,
					   j->t0);
		} else if (j->owner) {
			struct conn *c = j->owner;
			c->job = NULL;
			if (j->err) {
				char adv[200];
				snprintf(adv, sizeof(adv), "%s does not resolve; check the name",
					 c->host);
				refuse(c, 502, NET_R_RESOLVE, NULL, adv);
			} else {
				memcpy(c->addrs, j->addrs, sizeof(c->addrs));
				c->n_addrs = j->n_addrs;
				addresses_ready(c);
			}
			conn_step(c);
		}
		free(j);
		j = next;
	}
}

/* ------------------------------------------------------------ the loop */

static void
free_dead(struct net_proxy *p)
{
	while (p->dead_list) {
		struct conn *c = p->dead_list;
		p->dead_list = c->dead_next;
		conn_free(c);
	}
}

static void *
proxy_main(void *arg)
{
	struct net_proxy *p = arg;
	struct epoll_event evs[64];
	bool stop = false;
	p->now = wd_now_ns();
	p->dns_refill = p->now;
	p->dns_tokens = p->cfg.dns_burst;
	while (!stop) {
		int tmo = p->ready ? 0 : (p->conns || p->accept_paused) ? 100 : -1;
		int n = epoll_wait(p->epfd, evs, 64, tmo);
		if (n < 0 && errno != EINTR)
			break;
		p->now = wd_now_ns();
		for (int i = 0; i < n; i++) {
			struct handle *h = evs[i].data.ptr;
			switch (h->kind) {
			case H_STOP:
				stop = true;
				break;
			case H_HTTP_LISTEN:
				accept_all(p, p->lfd_http, false);
				break;
			case H_SOCKS_LISTEN:
				accept_all(p, p->lfd_socks, true);
				break;
			case H_DNS:
				dns_read(p);
				break;
			case H_RESOLVER:
				resolver_done(p);
				break;
			case H_CLIENT:
			case H_UPSTREAM:
				if (!h->c->dead)
					conn_step(h->c);
				break;
			}
		}
		struct conn *r = p->ready;
		p->ready = NULL;
		while (r) {
			struct conn *next = r->ready_next;
			r->on_ready = false;
			if (!r->dead)
				conn_step(r);
			r = next;
		}
		if (p->now >= p->next_sweep) {
			sweep(p);
			p->next_sweep = p->now + ms(50);
		}
		if (p->accept_paused && p->now >= p->accept_resume) {
			struct epoll_event e1 = {.events = EPOLLIN, .data.ptr = &p->h_http};
			struct epoll_event e2 = {.events = EPOLLIN, .data.ptr = &p->h_socks};
			if (p->lfd_http >= 0)
				epoll_ctl(p->epfd, EPOLL_CTL_MOD, p->lfd_http, &e1);
			if (p->lfd_socks >= 0)
				epoll_ctl(p->epfd, EPOLL_CTL_MOD, p->lfd_socks, &e2);
			p->accept_paused = false;
		}
		free_dead(p);
	}
	/* Stop: every connection and tunnel ends with its event, then every
	 * listener closes, so nothing of this sandbox outlives it. */
	p->now = wd_now_ns();
	while (p->conns)
		conn_close(p->conns, NET_R_NONE, NULL);
	free_dead(p);
	if (p->cl_suppressed && p->cb) {
		char advice[160];
		snprintf(advice, sizeof(advice),
			 "%llu connections refused at the limit were not reported one by one",
			 (unsigned long long)p->cl_suppressed);
		struct net_event ev = {.sandbox_id = p->sandbox_id,
				       .proto = NET_PROTO_HTTP,
				       .reason = NET_R_CONN_LIMIT,
				       .advice = advice,
				       .status = 503};
		p->cb(&ev, p->cb_data);
	}
	if (p->rl_suppressed && p->cb) {
		char advice[160];
		snprintf(advice, sizeof(advice),
			 "%llu DNS queries refused by the rate limit were not reported one by one",
			 (unsigned long long)p->rl_suppressed);
		struct net_event ev = {.sandbox_id = p->sandbox_id,
				       .proto = NET_PROTO_DNS,
				       .reason = NET_R_RATE_LIMIT,
				       .advice = advice,
				       .status = NET_DNS_REFUSED};
		p->cb(&ev, p->cb_data);
	}
	return NULL;
}

/* ------------------------------------------------------------------ API */

int
net_proxy_new(const struct net_config *cfg, net_event_fn cb, void *cb_data, struct net_proxy **out,
	      struct wd_err *err)
{
	if (!cfg || !cfg->rules)
		return wd_err_set(err, WD_E_INVAL, "net proxy: no rules");
	struct net_config def;
	net_config_init(&def);
	struct net_proxy *p = wd_xcalloc(1, sizeof(*p));
	p->cfg = *cfg;
#define DEF(f)                                                                                     \
	if (!p->cfg.f)                                                                             \
	p->cfg.f = def.f
	DEF(max_conns);
	DEF(header_timeout_ms);
	DEF(connect_timeout_ms);
	DEF(idle_timeout_ms);
	DEF(dns_rate);
	DEF(dns_burst);
	DEF(dns_max_label);
	DEF(dns_ttl);
#undef DEF
	p->sandbox_id = wd_xstrdup(cfg->sandbox_id ? cfg->sandbox_id : "");
	p->cfg.sandbox_id = p->sandbox_id;
	if (cfg->upstream_ca_file)
		p->upstream_ca_file = wd_xstrdup(cfg->upstream_ca_file);
	p->cfg.upstream_ca_file = p->upstream_ca_file;
	p->rules = cfg->rules;
	p->cb = cb;
	p->cb_data = cb_data;
	p->lfd_http = p->lfd_socks = p->dns_fd = p->res_fd = p->stopfd = -1;
	pthread_mutex_init(&p->lock, NULL);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0) {
		int e = errno;
		net_proxy_free(p);
		return wd_err_sys(err, e, "net proxy: epoll_create1");
	}
	p->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->stopfd < 0) {
		int e = errno;
		net_proxy_free(p);
		return wd_err_sys(err, e, "net proxy: eventfd");
	}
	p->h_stop.kind = H_STOP;
	ep_add(p, p->stopfd, &p->h_stop, EPOLLIN);
	int rc;
	/* No thread starts here (the resolver pool starts with the proxy):
	 * the supervisor creates the proxy before clone(), and a child of a
	 * process with threads in flight can inherit a lock one of them held. */
	if (cfg->tls_intercept) {
		rc = net_tls_new(p->sandbox_id, p->upstream_ca_file, &p->tls, err);
		if (rc < 0) {
			net_proxy_free(p);
			return rc;
		}
	}
	*out = p;
	return 0;
}

static int
adopt(struct net_proxy *p, int fd, int *slot, struct handle *h, enum hkind kind)
{
	if (fd < 0)
		return 0;
	*slot = fd;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	h->kind = kind;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = h};
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	return 0;
}

int
net_proxy_serve(struct net_proxy *p, int http_fd, int socks_fd, int dns_fd, struct wd_err *err)
{
	int rc = 0;
	if (p->served) {
		wd_closep(&http_fd);
		wd_closep(&socks_fd);
		wd_closep(&dns_fd);
		return wd_err_set(err, WD_E_INVAL, "net proxy: already serving");
	}
	p->served = true;
	int r1 = adopt(p, http_fd, &p->lfd_http, &p->h_http, H_HTTP_LISTEN);
	int r2 = adopt(p, socks_fd, &p->lfd_socks, &p->h_socks, H_SOCKS_LISTEN);
	int r3 = adopt(p, dns_fd, &p->dns_fd, &p->h_dns, H_DNS);
	rc = r1 < 0 ? r1 : r2 < 0 ? r2 : r3;
	if (rc < 0)
		return wd_err_sys(err, -rc, "net proxy: adopt listener");
	return 0;
}

int
net_proxy_start(struct net_proxy *p, struct wd_err *err)
{
	pthread_mutex_lock(&p->lock);
	if (p->started) {
		pthread_mutex_unlock(&p->lock);
		return wd_err_set(err, WD_E_INVAL, "net proxy: already started");
	}
	if (!p->res) {
		int rc = net_resolver_new(RESOLVER_THREADS, &p->res, &p->res_fd, err);
		if (rc < 0) {
			pthread_mutex_unlock(&p->lock);
			return rc;
		}
		p->h_res.kind = H_RESOLVER;
		ep_add(p, p->res_fd, &p->h_res, EPOLLIN);
	}
	/* The proxy thread blocks every signal (SIGPIPE above all: splice to a
	 * closed socket raises it); the host's handlers stay on its threads. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&p->thread, NULL, proxy_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		p->started = true;
	pthread_mutex_unlock(&p->lock);
	if (rc != 0)
		return wd_err_sys(err, rc, "net proxy: thread");
	return 0;
}

void
net_proxy_stop(struct net_proxy *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->started && !p->joined) {
		uint64_t one = 1;
		/* An eventfd write fails only on counter overflow. */
		if (write(p->stopfd, &one, sizeof(one)) < 0)
			wd_log(WD_LOG_WARN, "net proxy stop: %s", strerror(errno));
		pthread_join(p->thread, NULL);
		p->joined = true;
	}
	/* Listeners close here, after the loop, whether or not it ran. */
	wd_close_reset(&p->lfd_http);
	wd_close_reset(&p->lfd_socks);
	wd_close_reset(&p->dns_fd);
	pthread_mutex_unlock(&p->lock);
}

void
net_proxy_free(struct net_proxy *p)
{
	if (!p)
		return;
	net_proxy_stop(p);
	while (p->conns)
		conn_close(p->conns, NET_R_NONE, NULL);
	free_dead(p);
	if (p->res) {
		if (p->epfd >= 0)
			epoll_ctl(p->epfd, EPOLL_CTL_DEL, p->res_fd, NULL);
		net_resolver_release(p->res);
	}
	wd_close_reset(&p->stopfd);
	wd_close_reset(&p->epfd);
	pthread_mutex_destroy(&p->lock);
	net_tls_free(p->tls);
	free(p->aliases);
	free(p->upstream_ca_file);
	free(p->sandbox_id);
	free(p);
}

const char *
net_proxy_ca_pem(const struct net_proxy *p)
{
	return net_tls_ca_pem(p->tls);
}

void
net_proxy_stats(struct net_proxy *p, struct net_stats *out)
{
	out->conns_total = atomic_load(&p->st_conns_total);
	out->conns_open = atomic_load(&p->st_open);
	out->requests = atomic_load(&p->st_requests);
	out->refused = atomic_load(&p->st_refused);
	out->dns_queries = atomic_load(&p->st_dns);
	out->bytes_total = atomic_load(&p->st_bytes);
}
