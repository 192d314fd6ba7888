/* net/listen.c: create the proxy's listening sockets inside a sandbox's
 * network namespace (docs/network.md: the namespace has no route, only these
 * three sockets on its loopback, served from outside). */
#include "net/net.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>

void
net_listen_addrs_init(struct net_listen_addrs *a)
{
	a->http_port = 3128;
	a->socks_port = 1080;
	a->dns_port = 53;
}

struct job {
	int netns_fd;
	const struct net_listen_addrs *a;
	struct net_listeners *out;
	struct wd_err *err;
	int rc;
};

static int
lo_up(struct wd_err *err)
{
	wd_autoclose int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return wd_err_sys(err, errno, "socket for SIOCGIFFLAGS");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return wd_err_sys(err, errno, "SIOCGIFFLAGS lo");
	if (ifr.ifr_flags & IFF_UP)
		return 0;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return wd_err_sys(err, errno, "bring lo up");
	return 0;
}

static int
open_one(int type, uint16_t port, uint16_t *bound, struct wd_err *err)
{
	wd_autoclose int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return wd_err_sys(err, errno, "socket");
	int one = 1;
	if (type == SOCK_STREAM)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return wd_err_sys(err, errno, "bind 127.0.0.1:%u", port);
	if (type == SOCK_STREAM && listen(fd, 512) < 0)
		return wd_err_sys(err, errno, "listen 127.0.0.1:%u", port);
	socklen_t sl = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
		return wd_err_sys(err, errno, "getsockname");
	*bound = ntohs(sa.sin_port);
	return wd_steal_fd(&fd);
}

static void *
open_all(void *arg)
{
	struct job *j = arg;
	struct net_listeners *o = j->out;
	/* setns() on this thread only: the network namespace is per thread,
	 * and this thread exits right after, so no other code ever runs in
	 * the sandbox's namespace. */
	if (j->netns_fd >= 0 && setns(j->netns_fd, CLONE_NEWNET) < 0) {
		j->rc = wd_err_sys(j->err, errno, "setns into the sandbox's network namespace");
		return NULL;
	}
	j->rc = lo_up(j->err);
	if (j->rc < 0)
		return NULL;
	o->http_fd = open_one(SOCK_STREAM, j->a->http_port, &o->http_port, j->err);
	if (o->http_fd < 0)
		goto fail;
	o->socks_fd = open_one(SOCK_STREAM, j->a->socks_port, &o->socks_port, j->err);
	if (o->socks_fd < 0)
		goto fail;
	o->dns_fd = open_one(SOCK_DGRAM, j->a->dns_port, &o->dns_port, j->err);
	if (o->dns_fd < 0)
		goto fail;
	j->rc = 0;
	return NULL;
fail:
	j->rc = -EIO;
	wd_close_reset(&o->http_fd);
	wd_close_reset(&o->socks_fd);
	wd_close_reset(&o->dns_fd);
	return NULL;
}

int
net_listeners_open(int netns_fd, const struct net_listen_addrs *a, struct net_listeners *out,
		   struct wd_err *err)
{
	struct net_listeners tmp = {.http_fd = -1, .socks_fd = -1, .dns_fd = -1};
	struct job j = {.netns_fd = netns_fd, .a = a, .out = &tmp, .err = err, .rc = -EIO};
	pthread_t t;
	int rc = pthread_create(&t, NULL, open_all, &j);
	if (rc != 0)
		return wd_err_sys(err, rc, "listener thread");
	pthread_join(t, NULL);
	if (j.rc < 0)
		return wd_err_prefix(err, "net listeners"), j.rc;
	*out = tmp;
	return 0;
}
