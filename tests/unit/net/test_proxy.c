/* Unit tests for the proxy engine (net/proxy.c, net/listen.c) over host
 * loopback: a small in-process upstream, raw-socket clients.  These run
 * under ASan+UBSan with the rest of the unit suite. */
#include "net/net.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* ---- a tiny upstream: HTTP answers "<request line>" or echoes ---- */

struct upstream {
	int lfd;
	uint16_t port;
	bool echo;
	pthread_t t;
};
static int accepts;	     /* upstream connections accepted (HTTP upstream) */
static bool close_after_one; /* HTTP upstream: close silently after one answer */

/* Every request head the HTTP upstream received, in order. */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[16384];

static void
seen_add(const char *head, size_t len)
{
	pthread_mutex_lock(&seen_lock);
	size_t have = strlen(seen);
	if (have + len + 1 < sizeof(seen)) {
		memcpy(seen + have, head, len);
		seen[have + len] = '\0';
	}
	pthread_mutex_unlock(&seen_lock);
}

static bool
seen_has(const char *s)
{
	pthread_mutex_lock(&seen_lock);
	bool r = strstr(seen, s) != NULL;
	pthread_mutex_unlock(&seen_lock);
	return r;
}

static void *
serve_one(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[65536];
	bool echo = fd & 0x40000000;
	fd &= ~0x40000000;
	if (echo) {
		ssize_t n;
		while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
			send(fd, buf, (size_t)n, MSG_NOSIGNAL);
		close(fd);
		return NULL;
	}
	size_t len = 0;
	buf[0] = '\0';
	for (;;) {
		/* answer every whole head already here (pipelined, or smuggled
		 * in a body) before reading more */
		char *end = strstr(buf, "\r\n\r\n");
		if (!end) {
			ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
			if (n <= 0)
				break;
			len += (size_t)n;
			buf[len] = '\0';
			continue;
		}
		char *eol = strstr(buf, "\r\n");
		seen_add(buf, (size_t)(end + 4 - buf));
		char body[512];
		int bl = snprintf(body, sizeof(body), "%.*s|%s", (int)(eol - buf), buf,
				  strstr(buf, "\r\nHost: ") ? "host" : "nohost");
		char resp[1024];
		/* "/conn-cl": a response whose Connection names its own framing */
		const char *extra =
		    strstr(buf, " /conn-cl ") ? "Connection: Content-Length\r\n" : "";
		int rl =
		    snprintf(resp, sizeof(resp),
			     "HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s", extra, bl, body);
		/* "/no-content": an early hint and a 204, both with framing
		 * fields they cannot have */
		if (strstr(buf, " /no-content "))
			rl = snprintf(
			    resp, sizeof(resp),
			    "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n"
			    "Transfer-Encoding: chunked\r\n\r\n"
			    "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\nX-Kept: yes\r\n\r\n");
		send(fd, resp, (size_t)rl, MSG_NOSIGNAL);
		size_t used = (size_t)(end + 4 - buf);
		/* a Content-Length body is skipped (when it is all here) */
		const char *cl = strstr(buf, "\r\nContent-Length: ");
		if (cl && cl < end && used + (size_t)atoi(cl + 18) <= len)
			used += (size_t)atoi(cl + 18);
		memmove(buf, buf + used, len - used);
		len -= used;
		buf[len] = '\0';
		if (close_after_one)
			break;
	}
	close(fd);
	return NULL;
}

static void *
upstream_main(void *arg)
{
	struct upstream *u = arg;
	for (;;) {
		int fd = accept(u->lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		pthread_t t;
		if (!u->echo)
			__atomic_add_fetch(&accepts, 1, __ATOMIC_SEQ_CST);
		pthread_create(&t, NULL, serve_one,
			       (void *)(intptr_t)(fd | (u->echo ? 0x40000000 : 0)));
		pthread_detach(t);
	}
}

static int
listen_lo(int type, uint16_t *port)
{
	int fd = socket(AF_INET, type, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (type == SOCK_STREAM)
		listen(fd, 256);
	socklen_t sl = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void
upstream_start(struct upstream *u, bool echo)
{
	u->echo = echo;
	u->lfd = listen_lo(SOCK_STREAM, &u->port);
	pthread_create(&u->t, NULL, upstream_main, u);
	pthread_detach(u->t);
}

/* ---- the proxy under test ---- */

struct events {
	pthread_mutex_t lock;
	int n, refused;
	char last_reason[64];
	char last_host[256];
	uint64_t last_up, last_down;
};
static struct events evs = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void
on_event(const struct net_event *ev, void *data)
{
	struct events *e = data;
	pthread_mutex_lock(&e->lock);
	e->n++;
	e->refused += !ev->allowed;
	snprintf(e->last_reason, sizeof(e->last_reason), "%s", net_reason_name(ev->reason));
	snprintf(e->last_host, sizeof(e->last_host), "%s", ev->host ? ev->host : "");
	e->last_up = ev->bytes_up;
	e->last_down = ev->bytes_down;
	pthread_mutex_unlock(&e->lock);
}

struct fixture {
	struct net_rules *rules;
	struct net_proxy *p;
	struct upstream up, echo;
	uint16_t http, socks, dns;
};

static void
fixture_start(struct fixture *f, unsigned header_ms)
{
	struct wd_err err = {0};
	char spec[128];
	upstream_start(&f->up, false);
	upstream_start(&f->echo, true);
	net_rules_new(&f->rules);
	snprintf(spec, sizeof(spec), "web.test:%u=GET", f->up.port);
	cr_assert_eq(net_rules_add_allow(f->rules, spec, NULL, &err), 0, "%s", err.msg);
	snprintf(spec, sizeof(spec), "echo.test:%u", f->echo.port);
	cr_assert_eq(net_rules_add_allow(f->rules, spec, NULL, &err), 0);
	/* the upstreams listen on 127.0.0.1: a range lets the names reach it
	 * without admitting the address itself */
	cr_assert_eq(net_rules_add_range(f->rules, "127.0.0.1", &err), 0, "%s", err.msg);
	cr_assert_eq(net_rules_add_allow(f->rules, "lo.test:80", NULL, &err), 0);
	cr_assert_eq(net_rules_add_host(f->rules, "web.test=127.0.0.1", &err), 0);
	cr_assert_eq(net_rules_add_host(f->rules, "echo.test=127.0.0.1", &err), 0);
	cr_assert_eq(net_rules_add_host(f->rules, "lo.test=127.0.0.2", &err), 0);
	struct net_config cfg;
	net_config_init(&cfg);
	cfg.sandbox_id = "sb-1";
	cfg.rules = f->rules;
	cfg.header_timeout_ms = header_ms;
	cr_assert_eq(net_proxy_new(&cfg, on_event, &evs, &f->p, &err), 0, "%s", err.msg);
	int h = listen_lo(SOCK_STREAM, &f->http);
	int s = listen_lo(SOCK_STREAM, &f->socks);
	int d = listen_lo(SOCK_DGRAM, &f->dns);
	cr_assert_eq(net_proxy_serve(f->p, h, s, d, &err), 0, "%s", err.msg);
	cr_assert_eq(net_proxy_start(f->p, &err), 0, "%s", err.msg);
}

static void
fixture_stop(struct fixture *f)
{
	net_proxy_free(f->p);
	net_rules_free(f->rules);
	close(f->up.lfd);
	close(f->echo.lfd);
}

static int
dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Read until the text contains want (or EOF/timeout); returns bytes. */
static size_t
read_until(int fd, char *buf, size_t cap, const char *want)
{
	size_t len = 0;
	buf[0] = '\0';
	while (len + 1 < cap && !strstr(buf, want)) {
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
	}
	return len;
}

static void
say(int fd, const char *s)
{
	cr_assert_eq(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

Test(net_proxy, forwards_allowed_get_and_refuses_the_rest)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char req[512], buf[4096];
	int fd = dial(f.http);
	snprintf(req, sizeof(req),
		 "GET http://web.test:%u/a?b HTTP/1.1\r\nHost: evil.example\r\nProxy-Connection: "
		 "keep-alive\r\n\r\n",
		 f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "|host");
	cr_expect(strstr(buf, "HTTP/1.1 200 OK"), "%s", buf);
	cr_expect(strstr(buf, "GET /a?b HTTP/1.1|host"), "%s", buf);
	cr_expect(strstr(buf, "Connection: keep-alive"), "%s", buf);
	/* keep-alive: a second request, refused, on the same connection */
	snprintf(req, sizeof(req), "PUT http://web.test:%u/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		 f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "\n\n");
	cr_expect(strstr(buf, "HTTP/1.1 403 Forbidden"), "%s", buf);
	cr_expect(strstr(buf, "X-Warden-Denied: method"), "%s", buf);
	close(fd);
	fixture_stop(&f);
	cr_expect_geq(evs.n, 2);
}

Test(net_proxy, upstream_gets_host_from_the_uri)
{
	/* Host is rewritten from the checked URI: a forged Host header must
	 * never reach the upstream (domain fronting). */
	struct fixture f;
	fixture_start(&f, 2000);
	char req[512], buf[4096];
	int fd = dial(f.http);
	snprintf(req, sizeof(req), "GET http://web.test:%u/ HTTP/1.1\r\nHost: evil\r\n\r\n",
		 f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "|host");
	cr_expect(strstr(buf, "|host"), "%s", buf);
	close(fd);
	fixture_stop(&f);
}

Test(net_proxy, connect_tunnel_echoes_and_counts)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char req[256], buf[70000];
	int fd = dial(f.http);
	snprintf(req, sizeof(req), "CONNECT echo.test:%u HTTP/1.1\r\n\r\n", f.echo.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "\r\n\r\n");
	cr_assert(strstr(buf, "200 Connection established"), "%s", buf);
	static char big[60000];
	memset(big, 'z', sizeof(big));
	cr_assert_eq(send(fd, big, sizeof(big), 0), (ssize_t)sizeof(big));
	size_t got = 0;
	while (got < sizeof(big)) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	cr_expect_eq(got, sizeof(big));
	close(fd);
	usleep(200000);
	fixture_stop(&f);
	cr_expect_geq(evs.last_up, sizeof(big));
}

Test(net_proxy, socks5_domain_and_refusal)
{
	struct fixture f;
	fixture_start(&f, 2000);
	uint8_t buf[256];
	int fd = dial(f.socks);
	uint8_t g[] = {5, 1, 0};
	send(fd, g, 3, 0);
	cr_assert_eq(recv(fd, buf, 2, MSG_WAITALL), 2);
	cr_expect_eq(buf[1], 0);
	uint8_t r[64] = {5, 1, 0, 3, 9};
	memcpy(r + 5, "echo.test", 9);
	r[14] = (uint8_t)(f.echo.port >> 8);
	r[15] = (uint8_t)f.echo.port;
	send(fd, r, 16, 0);
	cr_assert_eq(recv(fd, buf, 10, MSG_WAITALL), 10);
	cr_expect_eq(buf[1], 0);
	send(fd, "ping", 4, 0);
	cr_expect_eq(recv(fd, buf, 4, MSG_WAITALL), 4);
	cr_expect_eq(memcmp(buf, "ping", 4), 0);
	close(fd);

	fd = dial(f.socks);
	send(fd, g, 3, 0);
	recv(fd, buf, 2, MSG_WAITALL);
	memcpy(r + 5, "nope.test", 9);
	send(fd, r, 16, 0);
	cr_assert_eq(recv(fd, buf, 10, MSG_WAITALL), 10);
	cr_expect_eq(buf[1], NET_SOCKS_NOT_ALLOWED);
	close(fd);
	fixture_stop(&f);
}

Test(net_proxy, malformed_head_is_400_and_slow_head_408)
{
	struct fixture f;
	fixture_start(&f, 300);
	char buf[4096];
	int fd = dial(f.http);
	say(fd, "GET http://web.test/ HTTP/1.1\nHost: x\n\n");
	read_until(fd, buf, sizeof(buf), "\n\n");
	cr_expect(strstr(buf, "HTTP/1.1 400"), "%s", buf);
	close(fd);
	fd = dial(f.http);
	say(fd, "GET http://web.test/ HTTP/1.1\r\n");
	uint64_t t0 = wd_now_ns();
	read_until(fd, buf, sizeof(buf), "\n\n");
	cr_expect(strstr(buf, "HTTP/1.1 408"), "%s", buf);
	cr_expect_lt(wd_now_ns() - t0, 2000000000ull);
	close(fd);
	fixture_stop(&f);
}

Test(net_proxy, address_stage_refuses_unnamed_loopback)
{
	/* lo.test:80 is allowed by name, its hosts entry is 127.0.0.2, and no
	 * range or address rule contains 127.0.0.2. */
	struct fixture f;
	fixture_start(&f, 2000);
	char buf[4096];
	int fd = dial(f.http);
	say(fd, "GET http://lo.test/ HTTP/1.1\r\n\r\n");
	read_until(fd, buf, sizeof(buf), "\n\n");
	cr_expect(strstr(buf, "X-Warden-Denied: address-range"), "%s", buf);
	close(fd);
	fixture_stop(&f);
}

Test(net_proxy, stop_closes_open_tunnels)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char req[256], buf[1024];
	int fd = dial(f.http);
	snprintf(req, sizeof(req), "CONNECT echo.test:%u HTTP/1.1\r\n\r\n", f.echo.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "\r\n\r\n");
	cr_assert(strstr(buf, "200"));
	net_proxy_stop(f.p);
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pf, 1, 2000), 1);
	cr_expect_leq(recv(fd, buf, sizeof(buf), 0), 0);
	struct net_stats st;
	net_proxy_stats(f.p, &st);
	cr_expect_eq(st.conns_open, 0);
	close(fd);
	fixture_stop(&f);
}

Test(net_proxy, dns_answers_allowed_names_only)
{
	struct fixture f;
	fixture_start(&f, 2000);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(f.dns)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {.tv_sec = 3};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	static const uint8_t q1[12] = {0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
	uint8_t q[64], r[512];
	size_t n = 12;
	memcpy(q, q1, 12);
	q[n++] = 3;
	memcpy(q + n, "web", 3);
	n += 3;
	q[n++] = 4;
	memcpy(q + n, "test", 4);
	n += 4;
	q[n++] = 0;
	q[n++] = 0;
	q[n++] = 1;
	q[n++] = 0;
	q[n++] = 1;
	sendto(fd, q, n, 0, (struct sockaddr *)&sa, sizeof(sa));
	ssize_t rl = recv(fd, r, sizeof(r), 0);
	cr_assert_gt(rl, 12);
	cr_expect_eq(r[3] & 0xf, NET_DNS_NOERROR);
	cr_expect_eq(r[7], 1); /* one answer: 127.0.0.1, named by an address rule */
	q[13] = 'x';	       /* "wxb.test" */
	sendto(fd, q, n, 0, (struct sockaddr *)&sa, sizeof(sa));
	rl = recv(fd, r, sizeof(r), 0);
	cr_assert_gt(rl, 12);
	cr_expect_eq(r[3] & 0xf, NET_DNS_NXDOMAIN);
	close(fd);
	fixture_stop(&f);
}

/* The supervisor's path: listeners made inside a fresh network namespace
 * (here one this test creates), served from the host side. */
static int
own_netns(void)
{
	int fd = -1;
	if (unshare(CLONE_NEWNET) == 0)
		fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	return fd;
}

struct ns_client {
	int nsfd;
	uint16_t port;
	char out[2048];
};

static void *
client_in_ns(void *arg)
{
	struct ns_client *c = arg;
	if (setns(c->nsfd, CLONE_NEWNET) < 0)
		return NULL;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(c->port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		const char *r = "GET http://nowhere.test/ HTTP/1.1\r\n\r\n";
		send(fd, r, strlen(r), 0);
		size_t len = 0;
		ssize_t n;
		while (len + 1 < sizeof(c->out) &&
		       (n = recv(fd, c->out + len, sizeof(c->out) - 1 - len, 0)) > 0)
			len += (size_t)n;
		c->out[len] = '\0';
	}
	close(fd);
	return NULL;
}

static void *
make_ns(void *arg)
{
	*(int *)arg = own_netns();
	return NULL;
}

Test(net_listeners_open, inside_a_network_namespace)
{
	int nsfd = -1;
	pthread_t t;
	pthread_create(&t, NULL, make_ns, &nsfd);
	pthread_join(t, NULL);
	if (nsfd < 0)
		cr_skip_test("cannot create a network namespace here (needs root)");
	struct wd_err err = {0};
	struct net_listen_addrs la;
	net_listen_addrs_init(&la);
	struct net_listeners ls;
	cr_assert_eq(net_listeners_open(nsfd, &la, &ls, &err), 0, "%s", err.msg);
	cr_expect_eq(ls.http_port, 3128);
	cr_expect_eq(ls.dns_port, 53);
	struct net_rules *rules;
	net_rules_new(&rules);
	struct net_config cfg;
	net_config_init(&cfg);
	cfg.rules = rules;
	struct net_proxy *p;
	cr_assert_eq(net_proxy_new(&cfg, NULL, NULL, &p, &err), 0);
	cr_assert_eq(net_proxy_serve(p, ls.http_fd, ls.socks_fd, ls.dns_fd, &err), 0);
	cr_assert_eq(net_proxy_start(p, &err), 0);
	struct ns_client c = {.nsfd = nsfd, .port = 3128};
	pthread_create(&t, NULL, client_in_ns, &c);
	pthread_join(t, NULL);
	cr_expect(strstr(c.out, "X-Warden-Denied: no-rule"), "%s", c.out);
	net_proxy_free(p);
	net_rules_free(rules);
	close(nsfd);
}

static void
two_gets(struct fixture *f, char *out1, char *out2, size_t cap)
{
	char req[256];
	int fd = dial(f->http);
	snprintf(req, sizeof(req), "GET http://web.test:%u/one HTTP/1.1\r\n\r\n", f->up.port);
	say(fd, req);
	read_until(fd, out1, cap, "|host");
	usleep(100000); /* let a closing upstream's FIN arrive first */
	snprintf(req, sizeof(req), "GET http://web.test:%u/two HTTP/1.1\r\n\r\n", f->up.port);
	say(fd, req);
	read_until(fd, out2, cap, "|host");
	close(fd);
}

Test(net_proxy, keeps_the_upstream_connection_between_requests)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char a[2048], b[2048];
	two_gets(&f, a, b, sizeof(a));
	cr_expect(strstr(a, "GET /one"), "%s", a);
	cr_expect(strstr(b, "GET /two"), "%s", b);
	cr_expect_eq(__atomic_load_n(&accepts, __ATOMIC_SEQ_CST), 1);
	fixture_stop(&f);
}

Test(net_proxy, reconnects_when_an_idle_upstream_closed)
{
	struct fixture f;
	close_after_one = true;
	fixture_start(&f, 2000);
	char a[2048], b[2048];
	two_gets(&f, a, b, sizeof(a));
	cr_expect(strstr(a, "GET /one"), "%s", a);
	cr_expect(strstr(b, "GET /two"), "%s", b);
	cr_expect_eq(__atomic_load_n(&accepts, __ATOMIC_SEQ_CST), 2);
	fixture_stop(&f);
}

Test(net_proxy, socks_to_an_address_the_dns_filter_answered_is_judged_by_name)
{
	/* alias.test is allowed; 127.0.0.1 only by a GET-restricted address
	 * rule, which admits no tunnel.  After the DNS filter answered
	 * alias.test with 127.0.0.1, a tunnel to 127.0.0.1 is judged as
	 * alias.test (a client using socks5:// resolves first). */
	struct upstream echo;
	upstream_start(&echo, true);
	struct wd_err err = {0};
	struct net_rules *rules;
	char spec[64];
	net_rules_new(&rules);
	snprintf(spec, sizeof(spec), "alias.test:%u", echo.port);
	cr_assert_eq(net_rules_add_allow(rules, spec, NULL, &err), 0);
	snprintf(spec, sizeof(spec), "127.0.0.1:%u=GET", echo.port);
	cr_assert_eq(net_rules_add_allow(rules, spec, NULL, &err), 0);
	cr_assert_eq(net_rules_add_host(rules, "alias.test=127.0.0.1", &err), 0);
	struct net_config cfg;
	net_config_init(&cfg);
	cfg.rules = rules;
	struct net_proxy *p;
	cr_assert_eq(net_proxy_new(&cfg, NULL, NULL, &p, &err), 0);
	uint16_t sport, dport;
	int s = listen_lo(SOCK_STREAM, &sport), d = listen_lo(SOCK_DGRAM, &dport);
	cr_assert_eq(net_proxy_serve(p, -1, s, d, &err), 0);
	cr_assert_eq(net_proxy_start(p, &err), 0);

	uint8_t g[] = {5, 1, 0}, buf[64];
	uint8_t r[10] = {5, 1, 0, 1, 127, 0, 0, 1, (uint8_t)(echo.port >> 8), (uint8_t)echo.port};
	int fd = dial(sport);
	send(fd, g, 3, 0);
	recv(fd, buf, 2, MSG_WAITALL);
	send(fd, r, sizeof(r), 0);
	cr_assert_eq(recv(fd, buf, 10, MSG_WAITALL), 10);
	cr_expect_eq(buf[1], NET_SOCKS_NOT_ALLOWED, "before any DNS answer: refused");
	close(fd);

	int u = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(dport)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	static const uint8_t q[] = {0,	 9,   1,   0,	0, 1,	0,   0,	  0,   0, 0, 0, 5, 'a',
				    'l', 'i', 'a', 's', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1};
	struct timeval tv = {.tv_sec = 3};
	setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sendto(u, q, sizeof(q), 0, (struct sockaddr *)&sa, sizeof(sa));
	uint8_t ans[512];
	cr_assert_gt(recv(u, ans, sizeof(ans), 0), 12);
	cr_expect_eq(ans[7], 1, "alias.test answered");
	close(u);

	fd = dial(sport);
	send(fd, g, 3, 0);
	recv(fd, buf, 2, MSG_WAITALL);
	send(fd, r, sizeof(r), 0);
	cr_assert_eq(recv(fd, buf, 10, MSG_WAITALL), 10);
	cr_expect_eq(buf[1], 0, "after the answer: judged as alias.test");
	send(fd, "ping", 4, 0);
	cr_expect_eq(recv(fd, buf, 4, MSG_WAITALL), 4);
	cr_expect_eq(memcmp(buf, "ping", 4), 0);
	close(fd);
	net_proxy_free(p);
	net_rules_free(rules);
	close(echo.lfd);
}

/* "Connection: Content-Length" on a request with a body.  Obeyed,
 * it strips the framing the proxy used while the proxy still forwards the
 * body, and the upstream reads the body as a second request no rule
 * checked: here a PUT behind an allowed GET to a GET-only host.  Refused
 * with 400 ambiguous-framing; the upstream sees nothing. */
Test(net_proxy, connection_naming_content_length_is_refused)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char req[512], smuggled[128], buf[4096];
	int sl = snprintf(smuggled, sizeof(smuggled),
			  "PUT /smuggled HTTP/1.1\r\nHost: web.test:%u\r\n\r\n", f.up.port);
	const char *conn[] = {"Content-Length", "close, content-length", "Transfer-Encoding",
			      "Host"};
	for (size_t i = 0; i < sizeof(conn) / sizeof(conn[0]); i++) {
		int fd = dial(f.http);
		snprintf(req, sizeof(req),
			 "GET http://web.test:%u/front HTTP/1.1\r\nConnection: %s\r\n"
			 "Content-Length: %d\r\n\r\n%s",
			 f.up.port, conn[i], sl, smuggled);
		say(fd, req);
		read_until(fd, buf, sizeof(buf), "\n\n");
		cr_expect(strstr(buf, "HTTP/1.1 400"), "Connection: %s: %s", conn[i], buf);
		cr_expect(strstr(buf, "X-Warden-Denied: ambiguous-framing"), "%s", buf);
		close(fd);
	}
	usleep(100000);
	cr_expect_not(seen_has("PUT /smuggled"), "the upstream read a smuggled request: %s", seen);
	cr_expect_not(seen_has("/front"), "nothing of a refused head reaches the upstream");
	fixture_stop(&f);
	cr_expect_eq(evs.refused, (int)(sizeof(conn) / sizeof(conn[0])));
	cr_expect_str_eq(evs.last_reason, "ambiguous-framing");
	cr_expect_str_eq(evs.last_host, "web.test", "the event names the host");
}

/* The same on the way back: a response whose Connection names its own
 * Content-Length would reach the client unframed on a kept-alive
 * connection, so the client would read what follows as this body. */
Test(net_proxy, response_connection_naming_content_length_is_502)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char req[256], buf[4096];
	int fd = dial(f.http);
	snprintf(req, sizeof(req), "GET http://web.test:%u/conn-cl HTTP/1.1\r\n\r\n", f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "\n\n");
	cr_expect(strstr(buf, "HTTP/1.1 502"), "%s", buf);
	cr_expect(strstr(buf, "X-Warden-Denied: bad-upstream-response"), "%s", buf);
	cr_expect(strstr(buf, "Connection header naming Content-Length"), "%s", buf);
	close(fd);
	fixture_stop(&f);
}

/* The proxy sends the framing it used, in one spelling: a Content-Length
 * with leading zeros or a "Chunked" in another case reaches the upstream
 * as "Content-Length: 5" and "Transfer-Encoding: chunked". */
Test(net_proxy, forwards_canonical_framing)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char req[512], buf[4096];
	int fd = dial(f.http);
	snprintf(req, sizeof(req),
		 "GET http://web.test:%u/cl HTTP/1.1\r\nContent-Length:  005\r\n\r\nhello",
		 f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "|host");
	cr_expect(strstr(buf, "200 OK"), "%s", buf);
	close(fd);
	fd = dial(f.http);
	snprintf(req, sizeof(req),
		 "GET http://web.test:%u/te HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
		 "5\r\nhello\r\n0\r\n\r\n",
		 f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "|host");
	cr_expect(strstr(buf, "200 OK"), "%s", buf);
	close(fd);
	cr_expect(seen_has("GET /cl HTTP/1.1\r\n"), "%s", seen);
	cr_expect(seen_has("\r\nContent-Length: 5\r\n"), "%s", seen);
	/* the value as sent, not any "005" (the upstream's port may hold one:
	 * "Host: web.test:59005" once failed this) */
	cr_expect_not(seen_has(": 005") || seen_has(":  005"), "%s", seen);
	cr_expect(seen_has("\r\nTransfer-Encoding: chunked\r\n"), "%s", seen);
	fixture_stop(&f);
}

/* With a range instead of an address rule, the names reach the
 * loopback upstream under their own rules, and the address itself admits
 * nothing: PUT http://127.0.0.1:PORT/ is no-rule while web.test is
 * GET-only. */
Test(net_proxy, a_range_admits_names_not_the_address)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char req[256], buf[4096];
	int fd = dial(f.http);
	snprintf(req, sizeof(req), "GET http://web.test:%u/r HTTP/1.1\r\n\r\n", f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "|host");
	cr_expect(strstr(buf, "GET /r HTTP/1.1|host"), "%s", buf);
	close(fd);
	const char *refused[][2] = {
	    {"PUT", "127.0.0.1"}, {"GET", "127.0.0.1"}, {"PUT", "web.test"}};
	const char *why[] = {"no-rule", "no-rule", "method"};
	for (size_t i = 0; i < 3; i++) {
		fd = dial(f.http);
		snprintf(req, sizeof(req),
			 "%s http://%s:%u/r HTTP/1.1\r\nContent-Length: 0\r\n\r\n", refused[i][0],
			 refused[i][1], f.up.port);
		say(fd, req);
		read_until(fd, buf, sizeof(buf), "\n\n");
		cr_expect(strstr(buf, "HTTP/1.1 403"), "%s %s: %s", refused[i][0], refused[i][1],
			  buf);
		char want[64];
		snprintf(want, sizeof(want), "X-Warden-Denied: %s", why[i]);
		cr_expect(strstr(buf, want), "%s %s: %s", refused[i][0], refused[i][1], buf);
		close(fd);
	}
	/* a tunnel to the address is refused as well */
	fd = dial(f.http);
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", f.echo.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "\n\n");
	cr_expect(strstr(buf, "X-Warden-Denied: no-rule"), "%s", buf);
	close(fd);
	fixture_stop(&f);
}

/* 1xx and 204 responses cannot have content (RFC 9110 §8.6, §15.2): they
 * reach the client without Content-Length or Transfer-Encoding, so a
 * lenient client cannot take the next response on its connection (maybe
 * another host's) as their body. */
Test(net_proxy, no_content_responses_lose_their_framing_fields)
{
	struct fixture f;
	fixture_start(&f, 2000);
	char req[256], buf[4096];
	int fd = dial(f.http);
	snprintf(req, sizeof(req), "GET http://web.test:%u/no-content HTTP/1.1\r\n\r\n", f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "X-Kept: yes\r\nConnection: keep-alive\r\n\r\n");
	cr_expect(strstr(buf, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"), "%s", buf);
	cr_expect(strstr(buf, "HTTP/1.1 204 No Content\r\nX-Kept: yes\r\n"), "%s", buf);
	cr_expect_null(strstr(buf, "Content-Length"), "%s", buf);
	cr_expect_null(strstr(buf, "Transfer-Encoding"), "%s", buf);
	/* and the connection still serves the next request */
	snprintf(req, sizeof(req), "GET http://web.test:%u/next HTTP/1.1\r\n\r\n", f.up.port);
	say(fd, req);
	read_until(fd, buf, sizeof(buf), "|host");
	cr_expect(strstr(buf, "GET /next HTTP/1.1|host"), "%s", buf);
	close(fd);
	fixture_stop(&f);
}
