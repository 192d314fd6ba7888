/* net/proxy_tunnel.c: the SOCKS handshake and tunnels of the proxy engine
 * (proxy.c): bytes socket -> pipe -> socket with splice(2). */
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

int
proxy_st_socks_greet(struct conn *c)
{
	ssize_t n = proxy_rd(c->cfd, &c->cin);
	if (n == 0 || (n < 0 && n != -EAGAIN)) {
		proxy_conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	bool noauth;
	int rc = net_socks_parse_greeting((uint8_t *)c->cin.d + c->cin.off, c->cin.len, &noauth);
	if (rc == 0)
		return n > 0;
	proxy_request_reset(c);
	c->proto = NET_PROTO_SOCKS;
	if (rc < 0 || !noauth) {
		uint8_t r[2] = {5, 0xff};
		if (rc > 0)
			proxy_buf_put(&c->cout, r, 2);
		proxy_refuse(c, 0, NET_R_MALFORMED, NULL,
			     "SOCKS5 without authentication only; use socks5h://127.0.0.1:1080");
		return 1;
	}
	c->active = false; /* the request proper follows */
	proxy_buf_consume(&c->cin, (size_t)rc);
	uint8_t ok[2] = {5, 0};
	proxy_buf_put(&c->cout, ok, 2);
	c->st = ST_SOCKS_REQ;
	return 1;
}

int
proxy_st_socks_req(struct conn *c)
{
	ssize_t n = proxy_rd(c->cfd, &c->cin);
	if (n == 0 || (n < 0 && n != -EAGAIN)) {
		proxy_conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	struct net_socks_request q;
	int rc = net_socks_parse_request((uint8_t *)c->cin.d + c->cin.off, c->cin.len, &q);
	if (rc == 0)
		return n > 0;
	proxy_request_reset(c);
	c->proto = NET_PROTO_SOCKS;
	if (rc < 0) {
		uint8_t r[10] = {5, (uint8_t)-rc, 0, 1, 0, 0, 0, 0, 0, 0};
		proxy_buf_put(&c->cout, r, sizeof(r));
		c->status = -rc;
		proxy_emit(c, false, NET_R_MALFORMED,
			   -rc == NET_SOCKS_CMD ? "only the CONNECT command is offered"
						: "malformed SOCKS5 request");
		c->st = ST_CLOSING;
		c->deadline = c->p->now + proxy_ms(CLOSE_LINGER_MS);
		return 1;
	}
	proxy_buf_consume(&c->cin, (size_t)rc);
	snprintf(c->host, sizeof(c->host), "%s", q.host);
	c->port = q.port;
	if (proxy_host_exfil(c, q.host)) /* as for CONNECT (proxy_http.c) */
		return 1;
	struct net_request r = {.host = q.host, .port = q.port, .tunnel = true};
	struct net_decision d;
	net_rules_decide(c->p->rules, &r, &d);
	proxy_try_alias(c, &d);
	c->must_intercept = false;
	if (!d.allow && d.reason == NET_R_TUNNEL && c->p->tls) {
		d.allow = true; /* as for CONNECT: only as intercepted TLS */
		c->must_intercept = true;
	}
	if (!d.allow) {
		proxy_refuse(c, 0, d.reason, d.rule, d.advice);
		return 1;
	}
	proxy_canonical_host(c);
	c->rule = d.rule;
	proxy_start_resolve(c);
	return 1;
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
				proxy_count(c, (size_t)n, upward);
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

int
proxy_st_tunnel(struct conn *c)
{
	struct net_proxy *p = c->p;
	int prog = 0;
	ssize_t n;
	if (c->cout.len) {
		n = proxy_wr(c->cfd, &c->cout);
		if (n > 0) {
			proxy_count(c, (size_t)n, false);
			prog = 1;
		} else if (n != -EAGAIN) {
			proxy_conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	if (c->uout.len) {
		n = proxy_wr(c->ufd, &c->uout);
		if (n > 0) {
			proxy_count(c, (size_t)n, true);
			prog = 1;
		} else if (n != -EAGAIN) {
			proxy_conn_close(c, NET_R_NONE, NULL);
			return -1;
		}
	}
	if (c->cout.len || c->uout.len)
		return prog;
	if (c->pcu[0] < 0) {
		if (pipe2(c->pcu, O_NONBLOCK | O_CLOEXEC) < 0 ||
		    pipe2(c->puc, O_NONBLOCK | O_CLOEXEC) < 0) {
			proxy_conn_close(c, NET_R_NONE, "out of file descriptors");
			return -1;
		}
		/* A bigger pipe moves more per splice; failing is fine (the
		 * default 64 KiB works, slower). */
		(void)fcntl(c->pcu[0], F_SETPIPE_SZ, PIPE_SIZE);
		(void)fcntl(c->puc[0], F_SETPIPE_SZ, PIPE_SIZE);
		proxy_buf_free(&c->cin);
		proxy_buf_free(&c->uin);
	}
	int a = pump(c, c->cfd, c->ufd, c->pcu, &c->pend_cu, &c->eof_cu, &c->shut_u2, true);
	int b = a < 0
		    ? 0
		    : pump(c, c->ufd, c->cfd, c->puc, &c->pend_uc, &c->eof_uc, &c->shut_c2, false);
	if (a == -2 || b == -2) {
		proxy_byte_limit(c);
		return -1;
	}
	if (a < 0 || b < 0) {
		proxy_conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	if (c->eof_cu && c->eof_uc && !c->pend_cu && !c->pend_uc) {
		proxy_conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	if (a || b)
		c->deadline = p->now + proxy_ms(p->cfg.idle_timeout_ms);
	return a || b || prog;
}
