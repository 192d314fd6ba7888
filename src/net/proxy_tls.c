/* net/proxy_tls.c: TLS interception states of the proxy engine (proxy.c):
 * detect a client handshake in a tunnel, then handshake with the client and
 * the upstream. */
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
int
proxy_st_tls_peek(struct conn *c)
{
	struct net_proxy *p = c->p;
	if (c->cout.len)
		return 0;
	unsigned char b;
	ssize_t n = recv(c->cfd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		proxy_conn_close(c, NET_R_NONE, NULL);
		return -1;
	}
	if (b != 0x16) {
		if (c->must_intercept) {
			proxy_conn_close(
			    c, NET_R_TUNNEL,
			    "a method-restricted host is reachable only by TLS, which the "
			    "proxy intercepts to check each request");
			return -1;
		}
		c->st = ST_TUNNEL;
		c->deadline = p->now + proxy_ms(p->cfg.idle_timeout_ms);
		return 1;
	}
	c->cssl = net_tls_server(p->tls, c->host, c->cfd);
	if (!c->cssl) {
		proxy_conn_close(c, NET_R_TLS, "could not issue a certificate for the host");
		return -1;
	}
	c->st = ST_TLS_ACCEPT;
	return 1;
}

int
proxy_st_tls_accept(struct conn *c)
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
		proxy_conn_close(c, NET_R_TLS, adv);
		return -1;
	}
	const char *sni = SSL_get_servername(c->cssl, TLSEXT_NAMETYPE_host_name);
	if (sni && !same_name(sni, c->host)) {
		proxy_conn_close(
		    c, NET_R_MISDIRECTED,
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
	proxy_emit(c, true, NET_R_NONE, "TLS intercepted: each request inside is checked");
	c->up_idle = false;
	c->st = ST_HEAD;
	c->deadline = p->now + proxy_ms(p->cfg.header_timeout_ms);
	return 1;
}

int
proxy_st_tls_connect(struct conn *c)
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
		proxy_refuse(c, 502, NET_R_TLS, NULL, adv);
		return 1;
	}
	c->st = ST_FORWARD;
	c->u_eof = false;
	c->deadline = p->now + proxy_ms(p->cfg.idle_timeout_ms);
	return 1;
}
