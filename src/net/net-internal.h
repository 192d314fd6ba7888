/* net-internal.h: shared by the files of src/net only. */
#ifndef WD_NET_INTERNAL_H
#define WD_NET_INTERNAL_H

#include "net/net.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
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

/* ---- secrets (secrets.c, exfil.c) ---- */
struct net_secret {
	char name[65];
	char *mem; /* wd_secure_alloc: value, NUL, percent-encoded, NUL, lowercase */
	size_t memsz;
	size_t len;	  /* the value: mem[0..len) */
	const char *penc; /* percent-encoded value */
	size_t penc_len;  /* 0 when it is the value itself */
	char *lower;	  /* lowercase value, len bytes */
	char core[33];	  /* the placeholder's random part, lowercase hex */
	char placeholder[NET_PLACEHOLDER_LEN + 1];
};

struct net_inject {
	enum net_inject_kind kind;
	bool http; /* plain HTTP only ("http://"); else intercepted HTTPS only */
	char host[256];
	uint16_t port;
	char *path; /* prefix, or NULL */
	char header[65];
	char *tmpl;
	char *text;    /* the rule as given */
	uint64_t uses; /* secrets the template names */
};

struct net_secrets {
	_Atomic int refs;
	size_t n, nrules, nvars;
	struct net_secret v[NET_SECRETS_MAX];
	struct net_inject rules[NET_INJECTS_MAX];
	struct {
		unsigned secret;
		char *env; /* VAR=placeholder */
	} vars[NET_SECRETS_MAX * 2];
};

bool net_secret_name_ok(const char *name);

/* True if header i of h must not be forwarded (http.c). */
bool net_http_hop_by_hop(const char *buf, const struct net_http_head *h, unsigned i, bool request);

/* ---- proxy engine (proxy.c, proxy_http.c, proxy_tunnel.c, proxy_tls.c,
 * proxy_dns.c) ---- */
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

	/* secrets: the inject rules that apply to the request in
	 * progress, the body scanner, and for its event the rules applied and
	 * the secrets used (or the one found on its way out: exfil >= 0).
	 * secret_buf: uout has held a credential, so it is wiped rather than
	 * only reset; secret_left: bytes of the head with the credential still
	 * to send (once 0, every other byte of uout is wiped). */
	struct net_inject_match inj;
	struct net_scan *scan;
	int exfil;
	bool secret_buf;
	size_t secret_left;
	char inj_rules[512];
	char inj_names[256];
	uint64_t masked; /* secrets whose values the response had, masked */

	/* tunnel */
	int pcu[2], puc[2];
	size_t pend_cu, pend_uc;
	bool eof_cu, eof_uc, shut_u2, shut_c2;
};

struct net_proxy {
	struct net_config cfg;
	char *sandbox_id;
	/* the rules in force: swapped whole by net_proxy_set_rules() (an
	 * atomic pointer, read once per decision); the sets it replaced are
	 * kept until the proxy is freed, since a resolver thread or a
	 * decision in progress may still read one */
	_Atomic(const struct net_rules *) rules;
	struct net_rules **owned_rules;
	size_t nowned_rules;
	net_event_fn cb;
	void *cb_data;
	int epfd, stopfd, lfd_http, lfd_socks, dns_fd, res_fd;
	struct handle h_stop, h_http, h_socks, h_dns, h_res;
	struct net_resolver *res;
	struct net_tls *tls;	     /* tls_intercept only */
	struct net_secrets *secrets; /* a reference, or NULL */
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
	/* secret-exfiltration refusals so far, and the secrets they named
	 * (proxy_exfil_alert); the proxy's thread only */
	uint64_t exfil_refusals, exfil_secrets;
	_Atomic uint64_t st_conns_total, st_open, st_requests, st_refused, st_dns, st_bytes;
};

/* proxy.c */
uint64_t proxy_ms(unsigned v);
void proxy_buf_alloc(struct buf *b);
size_t proxy_buf_space(struct buf *b);
void proxy_buf_consume(struct buf *b, size_t n);
bool proxy_buf_put(struct buf *b, const void *data, size_t n);
void proxy_buf_free(struct buf *b);
ssize_t proxy_rd(int fd, struct buf *b);
ssize_t proxy_wr(int fd, struct buf *b);
ssize_t proxy_ssl_io_result(SSL *s, int r);
ssize_t proxy_c_rd(struct conn *c);
ssize_t proxy_c_wr(struct conn *c);
ssize_t proxy_u_rd(struct conn *c);
ssize_t proxy_u_wr(struct conn *c);
void proxy_addr_text(const struct sockaddr_storage *ss, char *out, size_t cap);
void proxy_set_port(struct sockaddr_storage *ss, uint16_t port);
void proxy_emit(struct conn *c, bool allowed, enum net_reason reason, const char *advice);
void proxy_ep_add(struct net_proxy *p, int fd, struct handle *h, uint32_t events);
void proxy_close_upstream(struct conn *c);
void proxy_conn_close(struct conn *c, enum net_reason reason, const char *advice);
void proxy_refuse(struct conn *c, int status, enum net_reason reason, const struct net_rule *rule,
		  const char *advice);
void proxy_conn_step(struct conn *c);

/* proxy_secrets.c */
void proxy_rehead_free(struct conn *c);
void proxy_wipe_uout(struct conn *c, bool all);
void proxy_wrote_up(struct conn *c, size_t n);
/* Refuse the request as attempted exfiltration of secret i, found in
 * where ("the URL", "the body", ...). */
void proxy_refuse_exfil(struct conn *c, int i, const char *where);
/* Count a secret-exfiltration refusal of secret i (its event already
 * emitted) and raise the secret-probe alert when due. */
void proxy_exfil_alert(struct net_proxy *p, enum net_proto proto, int i);
/* A host the request names holds a secret: refused (true). */
bool proxy_host_exfil(struct conn *c, const char *host);
bool proxy_dropped_field(const char *buf, const struct net_http_head *h, unsigned i, void *arg);
bool proxy_put_injected(struct conn *c);
void proxy_body_content(void *arg, const char *p, size_t n);
/* Which rules apply to the request in progress, and whether its head
 * carries a secret they do not bind to its destination (then refused:
 * false); sets up the body check. */
bool proxy_secrets_gate(struct conn *c, const char *buf, const char *host, uint16_t port);
size_t proxy_response_window(struct conn *c, size_t k);
const char *proxy_masked_advice(struct conn *c);

/* proxy_http.c */
void proxy_request_reset(struct conn *c);
void proxy_alias_add(struct net_proxy *p, const struct sockaddr_storage *a, const char *name);
void proxy_try_alias(struct conn *c, struct net_decision *d);
void proxy_addresses_ready(struct conn *c);
void proxy_start_resolve(struct conn *c);
void proxy_canonical_host(struct conn *c);
int proxy_st_head(struct conn *c);
int proxy_st_connect(struct conn *c);
void proxy_count(struct conn *c, size_t n, bool upward);
void proxy_byte_limit(struct conn *c);
int proxy_st_forward(struct conn *c);

/* proxy_tunnel.c */
int proxy_st_socks_greet(struct conn *c);
int proxy_st_socks_req(struct conn *c);
int proxy_st_tunnel(struct conn *c);

/* proxy_tls.c */
int proxy_st_tls_peek(struct conn *c);
int proxy_st_tls_accept(struct conn *c);
int proxy_st_tls_connect(struct conn *c);

/* proxy_dns.c */
void proxy_dns_read(struct net_proxy *p);
void proxy_resolver_done(struct net_proxy *p);

#endif
