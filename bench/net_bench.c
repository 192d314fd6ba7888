/* net_bench: the egress proxy's cost on loopback, in one run (issue 4).
 *
 *  1. bulk throughput through a CONNECT tunnel (splice) vs the same
 *     transfer straight over loopback; target >= 80 % of direct;
 *  2. added latency per request: small GETs with keep-alive to the proxy
 *     (absolute-form; the proxy keeps its upstream connection between
 *     requests to the same host) vs keep-alive straight to the upstream;
 *     and the same over an established CONNECT tunnel.  Target: < 0.2 ms added at the
 *     median.
 *
 * Everything runs in this process on 127.0.0.1: an epoll upstream thread,
 * the proxy's own thread, and the client on the main thread.
 *   net_bench [bulk MiB (default 1024)] [requests (default 3000)]
 */
#include "net/net.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

static size_t bulk_bytes;

/* ---- upstream: one epoll thread; "B" bulk source port, "H" HTTP port ---- */

struct up {
	int bulk_lfd, http_lfd;
	uint16_t bulk_port, http_port;
};

static int
listen_lo(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1024) < 0) {
		perror("listen");
		exit(1);
	}
	socklen_t sl = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void *
bulk_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	static char chunk[1 << 20];
	size_t left = bulk_bytes;
	while (left) {
		size_t k = left < sizeof(chunk) ? left : sizeof(chunk);
		ssize_t n = send(fd, chunk, k, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		left -= (size_t)n;
	}
	close(fd);
	return NULL;
}

static void *
bulk_main(void *arg)
{
	struct up *u = arg;
	for (;;) {
		int fd = accept4(u->bulk_lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return NULL;
		pthread_t t;
		pthread_create(&t, NULL, bulk_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

/* Minimal keep-alive HTTP responder on epoll: answers every complete
 * head with a 2-byte body. */
static void *
http_main(void *arg)
{
	struct up *u = arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = u->http_lfd};
	epoll_ctl(ep, EPOLL_CTL_ADD, u->http_lfd, &ev);
	static char bufs[4096][1024];
	static size_t lens[4096];
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == u->http_lfd) {
				int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (c < 0 || c >= 4096) {
					if (c >= 0)
						close(c);
					continue;
				}
				int one = 1;
				setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				lens[c] = 0;
				struct epoll_event e2 = {.events = EPOLLIN, .data.fd = c};
				epoll_ctl(ep, EPOLL_CTL_ADD, c, &e2);
				continue;
			}
			ssize_t r = recv(fd, bufs[fd] + lens[fd], sizeof(bufs[fd]) - 1 - lens[fd], 0);
			if (r <= 0) {
				close(fd);
				continue;
			}
			lens[fd] += (size_t)r;
			bufs[fd][lens[fd]] = '\0';
			char *end;
			while ((end = strstr(bufs[fd], "\r\n\r\n"))) {
				send(fd, resp, sizeof(resp) - 1, MSG_NOSIGNAL);
				size_t used = (size_t)(end + 4 - bufs[fd]);
				memmove(bufs[fd], bufs[fd] + used, lens[fd] - used + 1);
				lens[fd] -= used;
			}
		}
	}
	return NULL;
}

/* ---- client side ---- */

static int
dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(1);
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void
read_head(int fd)
{
	char b[4096];
	size_t len = 0;
	for (;;) {
		ssize_t n = recv(fd, b + len, 1, 0); /* byte at a time: no overread */
		if (n <= 0) {
			fprintf(stderr, "net_bench: connection closed in a head\n");
			exit(1);
		}
		len += (size_t)n;
		if (len >= 4 && memcmp(b + len - 4, "\r\n\r\n", 4) == 0)
			return;
		if (len >= sizeof(b)) {
			fprintf(stderr, "net_bench: head too long\n");
			exit(1);
		}
	}
}

static void
connect_tunnel(int fd, uint16_t port)
{
	char req[128];
	int n = snprintf(req, sizeof(req), "CONNECT bulk.test:%u HTTP/1.1\r\n\r\n", port);
	send(fd, req, (size_t)n, 0);
	read_head(fd);
}

static double
drain_gbps(int fd)
{
	static char buf[1 << 20];
	uint64_t t0 = wd_now_ns();
	size_t got = 0;
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		got += (size_t)n;
	uint64_t dt = wd_now_ns() - t0;
	close(fd);
	if (got != bulk_bytes) {
		fprintf(stderr, "net_bench: got %zu of %zu bytes\n", got, bulk_bytes);
		exit(1);
	}
	return (double)got * 8 / (double)dt;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* n requests on one keep-alive connection; returns the median in ns. */
static uint64_t
median_request_ns(int fd, const char *req, int n)
{
	uint64_t *t = calloc((size_t)n, sizeof(*t));
	char b[512];
	size_t rl = strlen(req);
	for (int i = 0; i < n; i++) {
		uint64_t t0 = wd_now_ns();
		send(fd, req, rl, 0);
		/* the answer is the 38-byte head + "ok" from the upstream, plus
		 * the proxy's rewritten Connection header when proxied: read the
		 * head, then 2 bytes */
		size_t len = 0;
		while (!(len >= 4 && memcmp(b + len - 4, "\r\n\r\n", 4) == 0)) {
			ssize_t k = recv(fd, b + len, 1, 0);
			if (k <= 0) {
				fprintf(stderr, "net_bench: closed mid-response\n");
				exit(1);
			}
			len += (size_t)k;
		}
		if (recv(fd, b, 2, MSG_WAITALL) != 2)
			exit(1);
		t[i] = wd_now_ns() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_u64);
	uint64_t m = t[n / 2];
	free(t);
	return m;
}

int
main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 1024;
	int nreq = argc > 2 ? atoi(argv[2]) : 3000;
	bulk_bytes = mib << 20;

	struct up u;
	u.bulk_lfd = listen_lo(&u.bulk_port);
	u.http_lfd = listen_lo(&u.http_port);
	pthread_t t1, t2;
	pthread_create(&t1, NULL, bulk_main, &u);
	pthread_create(&t2, NULL, http_main, &u);

	struct wd_err err = {0};
	struct net_rules *rules;
	net_rules_new(&rules);
	char spec[64];
	snprintf(spec, sizeof(spec), "bulk.test:%u", u.bulk_port);
	net_rules_add_allow(rules, spec, NULL, &err);
	snprintf(spec, sizeof(spec), "web.test:%u", u.http_port);
	net_rules_add_allow(rules, spec, NULL, &err);
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", u.bulk_port);
	net_rules_add_allow(rules, spec, NULL, &err);
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", u.http_port);
	net_rules_add_allow(rules, spec, NULL, &err);
	net_rules_add_host(rules, "bulk.test=127.0.0.1", &err);
	net_rules_add_host(rules, "web.test=127.0.0.1", &err);
	struct net_config cfg;
	net_config_init(&cfg);
	cfg.rules = rules;
	cfg.sandbox_id = "bench";
	struct net_proxy *p;
	uint16_t pport;
	if (net_proxy_new(&cfg, NULL, NULL, &p, &err) < 0)
		return 1;
	int lfd = listen_lo(&pport);
	if (net_proxy_serve(p, lfd, -1, -1, &err) < 0 || net_proxy_start(p, &err) < 0) {
		fprintf(stderr, "net_bench: %s\n", err.msg);
		return 1;
	}

	/* 1. bulk: best of 3 each way, interleaved */
	double direct = 0, tunnel = 0;
	for (int r = 0; r < 3; r++) {
		double d = drain_gbps(dial(u.bulk_port));
		int fd = dial(pport);
		connect_tunnel(fd, u.bulk_port);
		double tn = drain_gbps(fd);
		direct = d > direct ? d : direct;
		tunnel = tn > tunnel ? tn : tunnel;
	}
	printf("bulk %zu MiB: direct %.2f Gbit/s, CONNECT tunnel %.2f Gbit/s = %.0f%% of direct "
	       "(target >= 80%%)\n",
	       mib, direct, tunnel, 100 * tunnel / direct);

	/* 2. latency */
	char req_direct[128], req_proxy[128], req_tunnel[128];
	snprintf(req_direct, sizeof(req_direct), "GET /x HTTP/1.1\r\nHost: web.test\r\n\r\n");
	snprintf(req_proxy, sizeof(req_proxy),
		 "GET http://web.test:%u/x HTTP/1.1\r\nHost: web.test\r\n\r\n", u.http_port);
	snprintf(req_tunnel, sizeof(req_tunnel), "GET /x HTTP/1.1\r\nHost: web.test\r\n\r\n");
	int fd_d = dial(u.http_port);
	int fd_p = dial(pport);
	int fd_t = dial(pport);
	char creq[128];
	int cn = snprintf(creq, sizeof(creq), "CONNECT web.test:%u HTTP/1.1\r\n\r\n", u.http_port);
	send(fd_t, creq, (size_t)cn, 0);
	read_head(fd_t);
	/* warm up, then measure */
	median_request_ns(fd_d, req_direct, 200);
	median_request_ns(fd_p, req_proxy, 200);
	median_request_ns(fd_t, req_tunnel, 200);
	uint64_t md = median_request_ns(fd_d, req_direct, nreq);
	uint64_t mp = median_request_ns(fd_p, req_proxy, nreq);
	uint64_t mt = median_request_ns(fd_t, req_tunnel, nreq);
	printf("latency, median of %d: direct %.1f us, via proxy (plain HTTP, absolute-form) "
	       "%.1f us (+%.1f us), via CONNECT tunnel %.1f us (+%.1f us) (target < +200 us)\n",
	       nreq, md / 1e3, mp / 1e3, ((double)mp - (double)md) / 1e3, mt / 1e3,
	       ((double)mt - (double)md) / 1e3);
	close(fd_d);
	close(fd_p);
	close(fd_t);
	net_proxy_free(p);
	net_rules_free(rules);
	bool ok = tunnel >= 0.8 * direct && (double)mp - (double)md < 200e3;
	printf("net_bench: %s\n", ok ? "targets met" : "TARGETS MISSED");
	return 0;
}
