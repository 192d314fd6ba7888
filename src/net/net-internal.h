/* net-internal.h: shared by the files of src/net only. */
#ifndef WD_NET_INTERNAL_H
#define WD_NET_INTERNAL_H

#include "net/net.h"

#include <sys/types.h>

/* ---- resolver pool (resolve.c) ----
 * getaddrinfo() blocks, so names are resolved on a few detached worker
 * threads and results come back to the proxy thread through an eventfd.
 * The pool is reference-counted: net_resolver_release() lets the proxy
 * stop at once even while a worker is stuck in a slow lookup; the last
 * worker out frees the pool. */
#define NET_JOB_MAX_ADDRS 8

struct net_job {
	struct net_job *next;
	void *owner; /* proxy thread only: the connection, or NULL if it went away */
	bool dns;    /* a DNS-filter lookup rather than a connection's */
	char host[256];
	int err; /* 0, or an EAI_* code */
	size_t n_addrs;
	struct sockaddr_storage addrs[NET_JOB_MAX_ADDRS];
	/* DNS-filter lookups: what to answer and to whom */
	struct net_dns_query q;
	struct sockaddr_storage client;
	socklen_t client_len;
	uint64_t t0;
	size_t qlen;
};

struct net_resolver;
/* Returns a new pool with threads workers and the eventfd that becomes
 * readable when jobs finish (owned by the pool). */
int net_resolver_new(unsigned threads, struct net_resolver **out, int *event_fd,
		     struct wd_err *err);
/* Queue a job (ownership passes to the pool until it comes back through
 * net_resolver_take_done()).  -EAGAIN if too many are queued: the caller
 * keeps the job. */
int net_resolver_submit(struct net_resolver *r, struct net_job *job);
/* Detach and return the list of finished jobs (caller frees each). */
struct net_job *net_resolver_take_done(struct net_resolver *r);
/* Drop the proxy's reference; queued jobs are freed, running ones are
 * freed by their worker. */
void net_resolver_release(struct net_resolver *r);

/* ---- TLS interception (tls.c) ---- */
typedef struct ssl_st SSL;
struct net_tls;
/* A new per-sandbox CA (key in memory only) and the two SSL_CTXs; upstream
 * verification uses ca_file, or the host's default store when NULL. */
int net_tls_new(const char *sandbox_id, const char *ca_file, struct net_tls **out,
		struct wd_err *err);
void net_tls_free(struct net_tls *t);
/* The CA certificate in PEM, valid as long as t. */
const char *net_tls_ca_pem(const struct net_tls *t);
/* A server-side SSL on fd presenting a leaf for host, or NULL. */
SSL *net_tls_server(struct net_tls *t, const char *host, int fd);
/* A client-side SSL on fd verifying host (name or address), or NULL. */
SSL *net_tls_client(struct net_tls *t, const char *host, int fd);
/* Text of the calling thread's last OpenSSL error (static storage). */
const char *net_tls_last_error(void);

/* True if header i of h must not be forwarded (http.c). */
bool net_http_hop_by_hop(const char *buf, const struct net_http_head *h, unsigned i, bool request);

#endif
