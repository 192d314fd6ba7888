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
#include "net/ossl.h"

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

uint64_t
proxy_ms(unsigned v)
{
	return (uint64_t)v * 1000000ull;
}

void
proxy_buf_alloc(struct buf *b)
{
	if (!b->d)
		b->d = wd_xmalloc(BUF_CAP);
}

size_t
proxy_buf_space(struct buf *b)
{
	proxy_buf_alloc(b);
	if (b->off && b->off + b->len == BUF_CAP) {
		memmove(b->d, b->d + b->off, b->len);
		b->off = 0;
	}
	if (b->len == 0)
		b->off = 0;
	return BUF_CAP - b->off - b->len;
}

void
proxy_buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}

/* Append; returns false if it does not fit (the caller waits). */
bool
proxy_buf_put(struct buf *b, const void *data, size_t n)
{
	if (proxy_buf_space(b) < n) {
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

void
proxy_buf_free(struct buf *b)
{
	free(b->d);
	b->d = NULL;
	b->off = b->len = 0;
}

/* recv into b; >0 bytes, 0 EOF, -EAGAIN, or -errno. */
ssize_t
proxy_rd(int fd, struct buf *b)
{
	size_t space = proxy_buf_space(b);
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
ssize_t
proxy_wr(int fd, struct buf *b)
{
	if (b->len == 0)
		return -EAGAIN;
	ssize_t n = send(fd, b->d + b->off, b->len, MSG_NOSIGNAL);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	proxy_buf_consume(b, (size_t)n);
	return n;
}

/* The same over TLS: WANT_READ/WANT_WRITE are EAGAIN (the edge-triggered
 * step retries on any event of the fd, which covers both), a clean or
 * unannounced close is EOF, anything else an error.  The OpenSSL error
 * queue is per thread: cleared here so one connection's error never shows
 * up as another's. */
ssize_t
proxy_ssl_io_result(SSL *s, int r)
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
	size_t space = proxy_buf_space(b), got = 0;
	if (space == 0)
		return -EAGAIN;
	int r = SSL_read_ex(s, b->d + b->off + b->len, space, &got);
	if (r == 1) {
		b->len += got;
		return (ssize_t)got;
	}
	return proxy_ssl_io_result(s, r);
}

static ssize_t
ssl_wr(SSL *s, struct buf *b)
{
	size_t done = 0;
	if (b->len == 0)
		return -EAGAIN;
	int r = SSL_write_ex(s, b->d + b->off, b->len, &done);
	if (r == 1) {
		proxy_buf_consume(b, done);
		return (ssize_t)done;
	}
	ssize_t rc = proxy_ssl_io_result(s, r);
	return rc == 0 ? -EPIPE : rc;
}

ssize_t
proxy_c_rd(struct conn *c)
{
	return c->cssl ? ssl_rd(c->cssl, &c->cin) : proxy_rd(c->cfd, &c->cin);
}

ssize_t
proxy_c_wr(struct conn *c)
{
	return c->cssl ? ssl_wr(c->cssl, &c->cout) : proxy_wr(c->cfd, &c->cout);
}

ssize_t
proxy_u_rd(struct conn *c)
{
	return c->ussl ? ssl_rd(c->ussl, &c->uin) : proxy_rd(c->ufd, &c->uin);
}

ssize_t
proxy_u_wr(struct conn *c)
{
	ssize_t n = c->ussl ? ssl_wr(c->ussl, &c->uout) : proxy_wr(c->ufd, &c->uout);
	if (n > 0)
		proxy_wrote_up(c, (size_t)n);
	return n;
}

void
proxy_addr_text(const struct sockaddr_storage *ss, char *out, size_t cap)
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

void
proxy_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)(void *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons(port);
}

/* --------------------------------------------------------------- events */

void
proxy_emit(struct conn *c, bool allowed, enum net_reason reason, const char *advice)
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
		p->cl_window_end = p->now + proxy_ms(1000);
	}
	char path[EVENT_PATH_MAX + 1], host[sizeof(c->host)];
	const char *pp = NULL;
	if (c->path && (c->proto == NET_PROTO_HTTP || c->proto == NET_PROTO_HTTPS)) {
		snprintf(path, sizeof(path), "%s", c->path);
		/* a value the sandbox got back from an upstream and sent on in
		 * a URL must not reach the audit trail through its event */
		net_secrets_redact(p->secrets, path, sizeof(path));
		pp = path;
	}
	snprintf(host, sizeof(host), "%s", c->host);
	net_secrets_redact(p->secrets, host, sizeof(host));
	/* advice can quote what the client sent (a field name, a host) */
	char adv[512];
	if (p->secrets && advice) {
		snprintf(adv, sizeof(adv), "%s", advice);
		net_secrets_redact(p->secrets, adv, sizeof(adv));
		advice = adv;
	}
	struct net_event ev = {
	    .sandbox_id = p->sandbox_id,
	    .proto = c->proto,
	    .host = host[0] ? host : NULL,
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
	    .inject = c->inj_rules[0] ? c->inj_rules : NULL,
	    .secrets = c->inj_names[0] ? c->inj_names : NULL,
	};
	p->cb(&ev, p->cb_data);
}

/* ------------------------------------------------------- connection life */

void
proxy_ep_add(struct net_proxy *p, int fd, struct handle *h, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = h};
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		abort(); /* only ENOMEM/ENOSPC: the loop cannot run without it */
}

void
proxy_close_upstream(struct conn *c)
{
	c->up_idle = c->reused = false;
	proxy_rehead_free(c);
	proxy_wipe_uout(c, true);
	c->secret_left = 0;
	if (c->ussl) {
		SSL_free(c->ussl);
		c->ussl = NULL;
	}
	if (c->ufd >= 0) {
		epoll_ctl(c->p->epfd, EPOLL_CTL_DEL, c->ufd, NULL);
		wd_close_reset(&c->ufd);
	}
	proxy_buf_free(&c->uin);
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
void
proxy_conn_close(struct conn *c, enum net_reason reason, const char *advice)
{
	struct net_proxy *p = c->p;
	if (c->dead)
		return;
	if (c->active)
		proxy_emit(c, reason == NET_R_NONE, reason, advice);
	c->dead = true;
	if (c->job)
		c->job->owner = NULL; /* the result is dropped when it arrives */
	proxy_close_upstream(c);
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
	proxy_buf_free(&c->cin);
	proxy_buf_free(&c->cout);
	proxy_buf_free(&c->uin);
	proxy_wipe_uout(c, true);
	proxy_buf_free(&c->uout);
	free(c->path);
	free(c->h);
	proxy_rehead_free(c);
	net_scan_free(c->scan);
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
void
proxy_refuse(struct conn *c, int status, enum net_reason reason, const struct net_rule *rule,
	     const char *advice)
{
	struct net_proxy *p = c->p;
	c->status = status;
	if (rule)
		c->rule = rule;
	proxy_close_upstream(c);
	close_pipes(c);
	if (c->job) {
		c->job->owner = NULL;
		c->job = NULL;
	}
	if (c->socks && !c->intercept) {
		uint8_t r[10] = {5, socks_code(reason), 0, 1, 0, 0, 0, 0, 0, 0};
		if (c->st != ST_SOCKS_GREET) {
			c->status = r[1];
			proxy_buf_put(&c->cout, r, sizeof(r));
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
			proxy_buf_put(&c->cout, head, (size_t)hl);
			proxy_buf_put(&c->cout, body, (size_t)bl);
		}
	}
	proxy_emit(c, false, reason, advice);
	c->st = ST_CLOSING;
	c->deadline = p->now + proxy_ms(CLOSE_LINGER_MS);
}

/* Flush the answer, half-close, then read and drop what the client still
 * sends until it closes or the linger time ends: closing with unread data
 * would send a RST that can destroy the answer in flight. */
static int
st_closing(struct conn *c)
{
	if (c->cout.len) {
		ssize_t n = proxy_c_wr(c);
		if (n > 0)
			return 1;
		if (n != -EAGAIN) {
			proxy_conn_close(c, NET_R_NONE, NULL);
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
		if (c->deadline > c->p->now + proxy_ms(CLOSE_LINGER_MS))
			c->deadline = c->p->now + proxy_ms(CLOSE_LINGER_MS);
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
	proxy_conn_close(c, NET_R_NONE, NULL);
	return -1;
}

static int
conn_once(struct conn *c)
{
	/* responses queued in earlier states (a keep-alive response tail) */
	int prog = 0;
	if (c->cout.len && c->st != ST_TUNNEL && c->st != ST_CLOSING && c->st != ST_FORWARD) {
		ssize_t n = proxy_c_wr(c);
		if (n > 0) {
			proxy_count(c, (size_t)n, false);
			prog = 1;
		} else if (n != -EAGAIN) {
			proxy_conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	int r = 0;
	switch (c->st) {
	case ST_HEAD:
		r = proxy_st_head(c);
		break;
	case ST_SOCKS_GREET:
		r = proxy_st_socks_greet(c);
		break;
	case ST_SOCKS_REQ:
		r = proxy_st_socks_req(c);
		break;
	case ST_RESOLVE:
		r = 0;
		break;
	case ST_CONNECT:
		r = proxy_st_connect(c);
		break;
	case ST_FORWARD:
		r = proxy_st_forward(c);
		break;
	case ST_TUNNEL:
		r = proxy_st_tunnel(c);
		break;
	case ST_TLS_PEEK:
		r = proxy_st_tls_peek(c);
		break;
	case ST_TLS_ACCEPT:
		r = proxy_st_tls_accept(c);
		break;
	case ST_TLS_CONNECT:
		r = proxy_st_tls_connect(c);
		break;
	case ST_CLOSING:
		r = st_closing(c);
		break;
	}
	if (r < 0)
		return c->dead ? -1 : 1; /* a refusal moved to CLOSING: keep stepping */
	return r || prog;
}

void
proxy_conn_step(struct conn *c)
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
			proxy_conn_close(c, NET_R_NONE, NULL); /* idle keep-alive */
			return;
		}
		proxy_request_reset(c);
		c->proto = c->intercept ? NET_PROTO_HTTPS : NET_PROTO_HTTP;
		snprintf(adv, sizeof(adv),
			 "the request head did not arrive within %u ms; send it at once",
			 p->cfg.header_timeout_ms);
		proxy_refuse(c, 408, NET_R_TIMEOUT, NULL, adv);
		proxy_conn_step(c);
		return;
	case ST_SOCKS_GREET:
	case ST_SOCKS_REQ:
		proxy_request_reset(c);
		c->proto = NET_PROTO_SOCKS;
		proxy_conn_close(c, NET_R_TIMEOUT, "the SOCKS handshake did not finish in time");
		return;
	case ST_TLS_PEEK:
	case ST_TLS_ACCEPT:
		proxy_conn_close(c, NET_R_TIMEOUT, "the TLS handshake did not finish in time");
		return;
	case ST_RESOLVE:
	case ST_CONNECT:
	case ST_TLS_CONNECT:
		snprintf(adv, sizeof(adv), "%s:%u did not answer within %u ms", c->host, c->port,
			 p->cfg.connect_timeout_ms);
		proxy_refuse(c, 504, NET_R_TIMEOUT, NULL, adv);
		proxy_conn_step(c);
		return;
	case ST_FORWARD:
		if (!c->resp_started) {
			proxy_refuse(c, 504, NET_R_TIMEOUT, NULL,
				     "no traffic within the idle timeout");
			proxy_conn_step(c);
		} else {
			proxy_conn_close(c, NET_R_TIMEOUT, "no traffic within the idle timeout");
		}
		return;
	case ST_TUNNEL:
		proxy_conn_close(c, NET_R_TIMEOUT, "tunnel idle past the idle timeout");
		return;
	case ST_CLOSING:
		proxy_conn_close(c, NET_R_NONE, NULL);
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
				p->accept_resume = p->now + proxy_ms(100);
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
		c->exfil = -1;
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
			proxy_request_reset(c);
			c->proto = socks ? NET_PROTO_SOCKS : NET_PROTO_HTTP;
			snprintf(adv, sizeof(adv),
				 "more than %u connections at once; close some and retry",
				 p->cfg.max_conns);
			proxy_ep_add(p, fd, &c->hc, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
			if (socks) {
				/* "no acceptable methods": the one refusal a SOCKS
				 * client understands before its greeting is answered */
				uint8_t r[2] = {5, 0xff};
				proxy_buf_put(&c->cout, r, 2);
			}
			proxy_refuse(c, 503, NET_R_CONN_LIMIT, NULL, adv);
			proxy_conn_step(c);
			continue;
		}
		c->deadline = p->now + proxy_ms(p->cfg.header_timeout_ms);
		proxy_ep_add(p, fd, &c->hc, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
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
				proxy_dns_read(p);
				break;
			case H_RESOLVER:
				proxy_resolver_done(p);
				break;
			case H_CLIENT:
			case H_UPSTREAM:
				if (!h->c->dead)
					proxy_conn_step(h->c);
				break;
			}
		}
		struct conn *r = p->ready;
		p->ready = NULL;
		while (r) {
			struct conn *next = r->ready_next;
			r->on_ready = false;
			if (!r->dead)
				proxy_conn_step(r);
			r = next;
		}
		if (p->now >= p->next_sweep) {
			sweep(p);
			p->next_sweep = p->now + proxy_ms(50);
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
		proxy_conn_close(p->conns, NET_R_NONE, NULL);
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
	/* every proxy may intercept TLS or parse DNS (ldns): OpenSSL from here */
	int lrc = wd_ossl_load(err);
	if (lrc < 0)
		return lrc;
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
	proxy_ep_add(p, p->stopfd, &p->h_stop, EPOLLIN);
	int rc;
	/* No thread starts here (the resolver pool starts with the proxy):
	 * the supervisor creates the proxy before clone(), and a child of a
	 * process with threads in flight can inherit a lock one of them held. */
	if (cfg->secrets) {
		/* every rule usable, every secret used: a credential that can
		 * never be sent is a configuration error, not a silent no-op */
		rc = net_secrets_check(cfg->secrets, cfg->rules, cfg->tls_intercept, err);
		if (rc < 0) {
			net_proxy_free(p);
			return rc;
		}
		p->secrets = net_secrets_ref(cfg->secrets);
	}
	p->cfg.secrets = p->secrets;
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
		proxy_ep_add(p, p->res_fd, &p->h_res, EPOLLIN);
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
		proxy_conn_close(p->conns, NET_R_NONE, NULL);
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
	net_secrets_free(p->secrets);
	for (size_t i = 0; i < p->nowned_rules; i++)
		net_rules_free(p->owned_rules[i]);
	free(p->owned_rules);
	free(p->aliases);
	free(p->upstream_ca_file);
	free(p->sandbox_id);
	free(p);
}

int
net_proxy_set_rules(struct net_proxy *p, struct net_rules *rules, struct wd_err *err)
{
	/* the inject rules' destinations must stay admitted, as at
	 * net_proxy_new: a credential that can never be sent is refused */
	int rc = p->secrets ? net_secrets_check(p->secrets, rules, p->cfg.tls_intercept, err) : 0;
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&p->lock);
	p->owned_rules = wd_xrealloc(p->owned_rules, (p->nowned_rules + 1) * sizeof(rules));
	p->owned_rules[p->nowned_rules++] = rules;
	atomic_store(&p->rules, rules);
	pthread_mutex_unlock(&p->lock);
	return 0;
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
