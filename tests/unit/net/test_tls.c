/* Unit tests for TLS interception (net/tls.c and the proxy's intercepted
 * path) over loopback, in-process, so they run under ASan+UBSan: an HTTPS
 * upstream with a CA made here, a client trusting only the proxy's CA. */
#include "net/net.h"
#include "net/ossl.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif
#endif

/* The client writes into connections the proxy refuses and closes:
 * EPIPE, not SIGPIPE. */
static void
no_sigpipe(void)
{
	signal(SIGPIPE, SIG_IGN);
	/* the tests call OpenSSL themselves, before any proxy loads it */
	struct wd_err err = {0};
	if (wd_ossl_load(&err) < 0)
		cr_assert_fail("%s", err.msg);
}
TestSuite(net_tls, .init = no_sigpipe);

static EVP_PKEY *key;
static X509 *ca, *leaf;
static int running; /* upstream threads still using srv_ctx */
static SSL_CTX *srv_ctx;
static char ca_path[64];

static X509 *
cert(const char *cn, X509 *issuer, bool is_ca)
{
	X509 *c = X509_new();
	X509_set_version(c, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(c), is_ca ? 1 : 2);
	X509_gmtime_adj(X509_getm_notBefore(c), -3600);
	X509_gmtime_adj(X509_getm_notAfter(c), 3600);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_UTF8,
				   (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(c, X509_get_subject_name(issuer ? issuer : c));
	X509_set_pubkey(c, key);
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer ? issuer : c, c, NULL, NULL, 0);
	X509_EXTENSION *ex =
	    X509V3_EXT_conf_nid(NULL, &v3, is_ca ? NID_basic_constraints : NID_subject_alt_name,
				is_ca ? "critical,CA:TRUE" : "DNS:tls.test");
	X509_add_ext(c, ex, -1);
	X509_EXTENSION_free(ex);
	X509_sign(c, key, EVP_sha256());
	return c;
}

/* Every request line the HTTPS upstream received, in order. */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[8192];

static void
seen_add(const char *line, size_t len)
{
	pthread_mutex_lock(&seen_lock);
	size_t have = strlen(seen);
	if (have + len + 2 < sizeof(seen)) {
		memcpy(seen + have, line, len);
		seen[have + len] = '\n';
		seen[have + len + 1] = '\0';
	}
	pthread_mutex_unlock(&seen_lock);
}

static void *
serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	SSL *s = SSL_new(srv_ctx);
	SSL_set_fd(s, fd);
	if (SSL_accept(s) == 1) {
		char buf[4096];
		size_t len = 0;
		buf[0] = '\0';
		for (;;) {
			/* every whole head already here first (pipelined, or
			 * smuggled in a body), then read more */
			char *end = strstr(buf, "\r\n\r\n");
			if (!end) {
				int n = SSL_read(s, buf + len, (int)(sizeof(buf) - 1 - len));
				if (n <= 0)
					break;
				len += (size_t)n;
				buf[len] = '\0';
				continue;
			}
			char *eol = strstr(buf, "\r\n");
			seen_add(buf, (size_t)(eol - buf));
			char resp[512];
			int rl = snprintf(resp, sizeof(resp),
					  "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%.*s",
					  (int)(eol - buf), (int)(eol - buf), buf);
			SSL_write(s, resp, rl);
			size_t used = (size_t)(end + 4 - buf);
			memmove(buf, buf + used, len - used + 1);
			len -= used;
		}
	}
	SSL_free(s);
	close(fd);
	__atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *
serve(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			__atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST);
			return NULL;
		}
		__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
		pthread_t t;
		pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

static int
listen_lo(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	listen(fd, 64);
	socklen_t sl = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	*port = ntohs(sa.sin_port);
	return fd;
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

struct fx {
	struct net_rules *rules;
	struct net_proxy *p;
	uint16_t up, http;
	int ulfd;
};

static void
fx_start(struct fx *f, const char *upstream_ca)
{
	struct wd_err err = {0};
	key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	ca = cert("test CA", NULL, true);
	leaf = cert("tls.test", ca, false);
	srv_ctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX_use_certificate(srv_ctx, leaf);
	SSL_CTX_use_PrivateKey(srv_ctx, key);
	snprintf(ca_path, sizeof(ca_path), "/tmp/net_test_ca_XXXXXX");
	int cfd = mkstemp(ca_path);
	FILE *fp = fdopen(cfd, "w");
	PEM_write_X509(fp, ca);
	fclose(fp);
	f->ulfd = listen_lo(&f->up);
	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	pthread_t t;
	pthread_create(&t, NULL, serve, (void *)(intptr_t)f->ulfd);
	pthread_detach(t);

	char spec[64];
	net_rules_new(&f->rules);
	snprintf(spec, sizeof(spec), "tls.test:%u=GET", f->up);
	cr_assert_eq(net_rules_add_allow(f->rules, spec, NULL, &err), 0);
	snprintf(spec, sizeof(spec), "127.0.0.1:%u=GET", f->up);
	cr_assert_eq(net_rules_add_allow(f->rules, spec, NULL, &err), 0);
	cr_assert_eq(net_rules_add_host(f->rules, "tls.test=127.0.0.1", &err), 0);
	struct net_config cfg;
	net_config_init(&cfg);
	cfg.rules = f->rules;
	cfg.sandbox_id = "tls-test";
	cfg.tls_intercept = true;
	cfg.upstream_ca_file = upstream_ca ? upstream_ca : ca_path;
	cr_assert_eq(net_proxy_new(&cfg, NULL, NULL, &f->p, &err), 0, "%s", err.msg);
	int lfd = listen_lo(&f->http);
	cr_assert_eq(net_proxy_serve(f->p, lfd, -1, -1, &err), 0);
	cr_assert_eq(net_proxy_start(f->p, &err), 0);
}

static void
fx_stop(struct fx *f)
{
	net_proxy_free(f->p); /* closes the proxy's upstream connections */
	net_rules_free(f->rules);
	shutdown(f->ulfd, SHUT_RDWR); /* wakes the accept loop */
	for (int i = 0; i < 500 && __atomic_load_n(&running, __ATOMIC_SEQ_CST); i++)
		usleep(10000);
	close(f->ulfd);
	unlink(ca_path);
	SSL_CTX_free(srv_ctx);
	X509_free(leaf);
	X509_free(ca);
	EVP_PKEY_free(key);
}

/* CONNECT through the proxy, then TLS trusting only the proxy's CA. */
static SSL *
tunnel(struct fx *f, const char *sni, SSL_CTX **ctx_out)
{
	int fd = dial(f->http);
	char req[128], buf[512];
	int n = snprintf(req, sizeof(req), "CONNECT tls.test:%u HTTP/1.1\r\n\r\n", f->up);
	send(fd, req, (size_t)n, 0);
	ssize_t got = recv(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(got, 0);
	buf[got] = '\0';
	cr_assert(strstr(buf, "200 Connection established"), "%s", buf);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	BIO *b = BIO_new_mem_buf(net_proxy_ca_pem(f->p), -1);
	X509 *pca = PEM_read_bio_X509(b, NULL, NULL, NULL);
	X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), pca);
	X509_free(pca);
	BIO_free(b);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL *s = SSL_new(ctx);
	SSL_set_fd(s, fd);
	char name[64];
	snprintf(name, sizeof(name), "%s", sni);
	SSL_set_tlsext_host_name(s, name);
	SSL_set1_host(s, "tls.test");
	*ctx_out = ctx;
	return s;
}

static void
drop(SSL *s, SSL_CTX *ctx)
{
	int fd = SSL_get_fd(s);
	SSL_free(s);
	SSL_CTX_free(ctx);
	close(fd);
}

static void
exchange(SSL *s, const char *req, char *out, size_t cap)
{
	cr_assert_gt(SSL_write(s, req, (int)strlen(req)), 0);
	size_t len = 0;
	int n;
	out[0] = '\0';
	while (len + 1 < cap && (n = SSL_read(s, out + len, (int)(cap - 1 - len))) > 0) {
		len += (size_t)n;
		out[len] = '\0';
		char *end = strstr(out, "\r\n\r\n");
		const char *cl = strstr(out, "Content-Length: ");
		if (end && cl && strlen(end + 4) >= (size_t)atoi(cl + 16))
			break;
	}
}

Test(net_tls, intercepted_requests_are_checked_one_by_one)
{
	struct fx f;
	SSL_CTX *ctx;
	char out[2048], req[256];
	fx_start(&f, NULL);
	SSL *s = tunnel(&f, "tls.test", &ctx);
	cr_assert_eq(SSL_connect(s), 1, "client handshake with the proxy's leaf");
	snprintf(req, sizeof(req), "GET /x HTTP/1.1\r\nHost: tls.test:%u\r\n\r\n", f.up);
	exchange(s, req, out, sizeof(out));
	cr_expect(strstr(out, "HTTP/1.1 200 OK"), "%s", out);
	cr_expect(strstr(out, "GET /x HTTP/1.1"), "%s", out);
	/* keep-alive inside the tunnel; a PUT is refused, inside TLS */
	snprintf(req, sizeof(req),
		 "PUT /y HTTP/1.1\r\nHost: tls.test\r\nContent-Length: 0\r\n\r\n");
	exchange(s, req, out, sizeof(out));
	cr_expect(strstr(out, "HTTP/1.1 403"), "%s", out);
	cr_expect(strstr(out, "X-Warden-Denied: method"), "%s", out);
	drop(s, ctx);
	fx_stop(&f);
}

Test(net_tls, other_sni_is_misdirected)
{
	struct fx f;
	SSL_CTX *ctx;
	fx_start(&f, NULL);
	SSL *s = tunnel(&f, "evil.test", &ctx);
	/* the handshake may finish (the proxy checks SNI after it), but no
	 * request gets through */
	if (SSL_connect(s) == 1) {
		char out[512];
		exchange(s, "GET / HTTP/1.1\r\nHost: tls.test\r\n\r\n", out, sizeof(out));
		cr_expect_null(strstr(out, "200 OK"), "%s", out);
	}
	ERR_clear_error();
	drop(s, ctx);
	fx_stop(&f);
}

Test(net_tls, untrusted_upstream_is_502)
{
	struct fx f;
	SSL_CTX *ctx;
	char out[2048];
	/* verify the upstream against the system store, which does not know
	 * the test CA */
	fx_start(&f, "/etc/ssl/certs/ca-certificates.crt");
	SSL *s = tunnel(&f, "tls.test", &ctx);
	cr_assert_eq(SSL_connect(s), 1);
	exchange(s, "GET / HTTP/1.1\r\nHost: tls.test\r\n\r\n", out, sizeof(out));
	cr_expect(strstr(out, "HTTP/1.1 502"), "%s", out);
	cr_expect(strstr(out, "X-Warden-Denied: tls-failed"), "%s", out);
	drop(s, ctx);
	fx_stop(&f);
}

Test(net_tls, ca_pem_has_no_private_key)
{
	struct net_rules *r;
	struct net_proxy *p;
	struct wd_err err = {0};
	net_rules_new(&r);
	struct net_config cfg;
	net_config_init(&cfg);
	cfg.rules = r;
	cfg.tls_intercept = true;
	cr_assert_eq(net_proxy_new(&cfg, NULL, NULL, &p, &err), 0, "%s", err.msg);
	const char *pem = net_proxy_ca_pem(p);
	cr_assert_not_null(pem);
	cr_expect(strstr(pem, "BEGIN CERTIFICATE"));
	cr_expect_null(strstr(pem, "PRIVATE"));
	net_proxy_free(p);
	cfg.tls_intercept = false;
	cr_assert_eq(net_proxy_new(&cfg, NULL, NULL, &p, &err), 0);
	cr_expect_null(net_proxy_ca_pem(p));
	net_proxy_free(p);
	net_rules_free(r);
}

/* Inside an intercepted tunnel: "Connection: Content-Length" on a
 * GET whose body is a PUT.  Obeyed, the PUT reaches the GET-only host
 * unchecked; refused with 400 ambiguous-framing, inside TLS. */
Test(net_tls, connection_naming_content_length_is_refused_inside_tls)
{
	struct fx f;
	SSL_CTX *ctx;
	char out[2048], req[512];
	fx_start(&f, NULL);
	SSL *s = tunnel(&f, "tls.test", &ctx);
	cr_assert_eq(SSL_connect(s), 1);
	const char *put = "PUT /smuggled HTTP/1.1\r\nHost: tls.test\r\n\r\n";
	snprintf(req, sizeof(req),
		 "GET /front HTTP/1.1\r\nHost: tls.test\r\nConnection: Content-Length\r\n"
		 "Content-Length: %zu\r\n\r\n%s",
		 strlen(put), put);
	exchange(s, req, out, sizeof(out));
	cr_expect(strstr(out, "HTTP/1.1 400"), "%s", out);
	cr_expect(strstr(out, "X-Warden-Denied: ambiguous-framing"), "%s", out);
	drop(s, ctx);
	usleep(100000);
	pthread_mutex_lock(&seen_lock);
	cr_expect_null(strstr(seen, "PUT /smuggled"), "the upstream read: %s", seen);
	pthread_mutex_unlock(&seen_lock);
	fx_stop(&f);
}

/* --upstream-ca naming something that is not a
 * regular PEM file.  A FIFO blocked net_proxy_new() for ever (OpenSSL opens
 * the name itself and waits for a writer); now every case fails at once
 * with a message naming the file, and nothing leaks on the way out (this
 * runs under ASan+UBSan with LeakSanitizer in make check). */
Test(net_tls, bad_upstream_ca_fails_fast_and_clean, .timeout = 20)
{
	char dir[] = "/tmp/net_test_badca_XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char fifo[128], empty[128], junk[128], cut[128], missing[128];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(empty, sizeof(empty), "%s/empty.pem", dir);
	snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
	snprintf(cut, sizeof(cut), "%s/cut.pem", dir);
	snprintf(missing, sizeof(missing), "%s/missing.pem", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	FILE *f = fopen(empty, "w");
	fclose(f);
	f = fopen(junk, "w");
	fputs("not a certificate\n", f);
	fclose(f);
	f = fopen(cut, "w"); /* a PEM block cut short */
	fputs("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUb2Zm\n", f);
	fclose(f);
	const struct {
		const char *path, *want;
	} cases[] = {
	    {fifo, "is a FIFO, not a regular file"},
	    {dir, "is a directory, not a regular file"},
	    {"/dev/zero", "is a character device, not a regular file"},
	    {missing, "No such file"},
	    {empty, "holds no certificate"},
	    {junk, "holds no certificate"},
	    {cut, "is not a PEM bundle"},
	};
	struct net_rules *r;
	net_rules_new(&r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct net_config cfg;
		net_config_init(&cfg);
		cfg.rules = r;
		cfg.tls_intercept = true;
		cfg.upstream_ca_file = cases[i].path;
		struct net_proxy *p = NULL;
		struct wd_err err = {0};
		uint64_t t0 = wd_now_ns();
		int rc = net_proxy_new(&cfg, NULL, NULL, &p, &err);
		cr_expect_lt(rc, 0, "%s: loaded", cases[i].path);
		cr_expect_null(p);
		cr_expect_lt(wd_now_ns() - t0, 2000000000ull, "%s: took too long", cases[i].path);
		cr_expect(strstr(err.msg, cases[i].path), "message names the file: %s", err.msg);
		cr_expect(strstr(err.msg, cases[i].want), "%s: %s", cases[i].path, err.msg);
		if (cases[i].path != missing)
			cr_expect_eq(err.code, WD_E_INVAL, "%s: bad input, not %d", cases[i].path,
				     err.code);
		net_proxy_free(p);
	}
	net_rules_free(r);
#ifdef HAVE_LSAN
	/* A leak in a Criterion test's process is reported but does not fail
	 * the test: ask LeakSanitizer here, while the test can still fail. */
	cr_expect_eq(__lsan_do_recoverable_leak_check(), 0, "a failed CA load leaked");
#endif
	unlink(fifo);
	unlink(empty);
	unlink(junk);
	unlink(cut);
	rmdir(dir);
}
