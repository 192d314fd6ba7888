/* net/tls.c: TLS interception for --tls-intercept.
 *
 * Per sandbox (per proxy): an ephemeral CA, an EC P-256 key made here and
 * never written anywhere, so it lives only in the supervisor's memory and
 * dies with the proxy; only the CA *certificate* is handed out, for the
 * jail's trust store.  Leaf certificates are issued on demand for the host
 * a CONNECT named (not for whatever SNI the client sends: the certificate
 * and the upstream connection both follow the checked name) and cached.
 *
 * Client side: TLS 1.2+, ALPN offers only http/1.1, because the proxy
 * reads HTTP/1.1 inside the tunnel to check every request.  Upstream side:
 * TLS 1.2+, the peer's chain verified against the host's CA store (or the
 * policy's CA file) and its name against the CONNECT host (SSL_set1_host),
 * ALPN http/1.1.
 */
#include "net/net-internal.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#define LEAF_CACHE 64
#define CA_DAYS 7
#define LEAF_DAYS 2
#define TLS_READ_BUF (64 * 1024) /* read-ahead buffer per SSL (see net_tls_new) */
#define CA_FILE_MAX (16u << 20)	 /* the Debian bundle is ~200 KiB */

struct leaf {
	char host[256];
	X509 *cert;
};

struct net_tls {
	EVP_PKEY *ca_key, *leaf_key;
	X509 *ca;
	char *ca_pem;
	SSL_CTX *server, *client;
	struct leaf leaves[LEAF_CACHE];
	unsigned n_leaves, next_evict;
};

static int
ossl_err(struct wd_err *err, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[160];
	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return wd_err_set(err, WD_E_INTERNAL, "tls: %s: %s", what, buf);
}

static bool
add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ex)
		return false;
	bool ok = X509_add_ext(cert, ex, -1) == 1;
	X509_EXTENSION_free(ex);
	return ok;
}

static bool
random_serial(X509 *cert)
{
	unsigned char b[16];
	if (RAND_bytes(b, sizeof(b)) != 1)
		return false;
	b[0] &= 0x7f; /* positive */
	BIGNUM *bn = BN_bin2bn(b, sizeof(b), NULL);
	bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != NULL;
	BN_free(bn);
	return ok;
}

/* A certificate valid from an hour ago (clock skew) for days days. */
static X509 *
new_cert(const char *cn, long days)
{
	X509 *c = X509_new();
	if (!c || X509_set_version(c, 2) != 1 || !random_serial(c) ||
	    !X509_gmtime_adj(X509_getm_notBefore(c), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(c), days * 86400)) {
		X509_free(c);
		return NULL;
	}
	X509_NAME *name = X509_get_subject_name(c);
	X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"warden", -1,
				   -1, 0);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
	return c;
}

static const char *
file_kind(mode_t m)
{
	return S_ISFIFO(m)   ? "FIFO"
	       : S_ISDIR(m)  ? "directory"
	       : S_ISCHR(m)  ? "character device"
	       : S_ISBLK(m)  ? "block device"
	       : S_ISSOCK(m) ? "socket"
			     : "special file";
}

/* The upstream CA bundle (--upstream-ca, network.upstream_ca).  OpenSSL's
 * loader opens the name itself and blocks for ever on a FIFO, so
 * the file is opened here with O_NONBLOCK (a FIFO's open would wait for a
 * writer) and O_NOCTTY, checked with fstat on that descriptor (no window
 * between the check and the read for the name to change), required to be
 * a regular file of bounded size, read whole, and parsed from memory.
 * Every certificate (and CRL) in it goes into ctx's store; none is an
 * error.  Everything allocated here is freed on every path. */
static int
load_ca_file(SSL_CTX *ctx, const char *path, struct wd_err *err)
{
	wd_autoclose int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "upstream CA file '%s'", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return wd_err_sys(err, errno, "upstream CA file '%s'", path);
	if (!S_ISREG(st.st_mode))
		return wd_err_set(err, WD_E_INVAL,
				  "upstream CA file '%s' is a %s, not a regular file; give a PEM "
				  "bundle",
				  path, file_kind(st.st_mode));
	if (st.st_size > (off_t)CA_FILE_MAX)
		return wd_err_set(err, WD_E_INVAL, "upstream CA file '%s' is over %u MiB", path,
				  CA_FILE_MAX >> 20);
	size_t cap = (size_t)st.st_size; /* a file growing meanwhile is read this far */
	wd_autofree char *data = wd_xmalloc(cap + 1);
	size_t len = 0;
	while (len < cap) {
		ssize_t n = read(fd, data + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return wd_err_sys(err, errno, "upstream CA file '%s': read", path);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	BIO *mem = BIO_new_mem_buf(data, (int)len);
	STACK_OF(X509_INFO) *infos = mem ? PEM_X509_INFO_read_bio(mem, NULL, NULL, NULL) : NULL;
	BIO_free(mem);
	if (!infos) {
		char why[160];
		ERR_error_string_n(ERR_get_error(), why, sizeof(why));
		ERR_clear_error();
		return wd_err_set(err, WD_E_INVAL, "upstream CA file '%s' is not a PEM bundle (%s)",
				  path, why);
	}
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	int added = 0, bad = 0;
	for (int i = 0; i < sk_X509_INFO_num(infos); i++) {
		X509_INFO *xi = sk_X509_INFO_value(infos, i);
		if (xi->x509 && X509_STORE_add_cert(store, xi->x509) == 1)
			added++;
		else if (xi->x509)
			bad++;
		if (xi->crl && X509_STORE_add_crl(store, xi->crl) != 1)
			bad++;
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	ERR_clear_error();
	if (bad)
		return wd_err_set(err, WD_E_INVAL,
				  "upstream CA file '%s': %d entries could not be added", path,
				  bad);
	if (added == 0)
		return wd_err_set(err, WD_E_INVAL, "upstream CA file '%s' holds no certificate",
				  path);
	return 0;
}

static int
alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
	    unsigned int inlen, void *arg)
{
	static const unsigned char h11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
	unsigned char *sel = NULL;
	if (SSL_select_next_proto(&sel, outlen, h11, sizeof(h11), in, inlen) ==
	    OPENSSL_NPN_NEGOTIATED) {
		*out = sel;
		return SSL_TLSEXT_ERR_OK;
	}
	/* No http/1.1 on offer (h2 only): no ALPN, and the client speaks
	 * HTTP/1.1 or fails; never h2, which the proxy does not read. */
	return SSL_TLSEXT_ERR_NOACK;
}

int
net_tls_new(const char *sandbox_id, const char *ca_file, struct net_tls **out, struct wd_err *err)
{
	struct net_tls *t = wd_xcalloc(1, sizeof(*t));
	char cn[128];
	int rc;
	snprintf(cn, sizeof(cn), "warden sandbox %s CA",
		 sandbox_id && *sandbox_id ? sandbox_id : "-");
	t->ca_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	t->leaf_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (!t->ca_key || !t->leaf_key) {
		rc = ossl_err(err, "key generation");
		goto fail;
	}
	t->ca = new_cert(cn, CA_DAYS);
	if (!t->ca || X509_set_issuer_name(t->ca, X509_get_subject_name(t->ca)) != 1 ||
	    X509_set_pubkey(t->ca, t->ca_key) != 1 ||
	    !add_ext(t->ca, t->ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    !add_ext(t->ca, t->ca, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    !add_ext(t->ca, t->ca, NID_subject_key_identifier, "hash") ||
	    X509_sign(t->ca, t->ca_key, EVP_sha256()) == 0) {
		rc = ossl_err(err, "CA certificate");
		goto fail;
	}
	BIO *mem = BIO_new(BIO_s_mem());
	if (!mem || PEM_write_bio_X509(mem, t->ca) != 1) {
		BIO_free(mem);
		rc = ossl_err(err, "CA PEM");
		goto fail;
	}
	char *data;
	long len = BIO_get_mem_data(mem, &data);
	t->ca_pem = wd_xmalloc((size_t)len + 1);
	memcpy(t->ca_pem, data, (size_t)len);
	t->ca_pem[len] = '\0';
	BIO_free(mem);

	t->server = SSL_CTX_new(TLS_server_method());
	t->client = SSL_CTX_new(TLS_client_method());
	if (!t->server || !t->client) {
		rc = ossl_err(err, "SSL_CTX_new");
		goto fail;
	}
	SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
	/* A peer that drops TCP without close_notify ends the stream like
	 * EOF; HTTP framing, not TLS, says whether the message was whole. */
	SSL_CTX_set_options(t->server, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_options(t->client, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_mode(t->server,
			 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_mode(t->client,
			 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* Read-ahead: one recv() takes as many records as the read buffer
	 * holds (64 KiB, four full records), where OpenSSL otherwise reads
	 * each record's 5-byte header and then its body: two syscalls per
	 * 16 KiB record on both sides of an intercepted transfer.  What is
	 * read ahead stays inside the SSL object (nothing skips the HTTP
	 * checks: the engine sees it only through SSL_read, as before), and
	 * the engine retries every read on each step until none makes
	 * progress (proxy.c), so data already buffered never waits for an
	 * epoll edge that would not come. */
	SSL_CTX_set_read_ahead(t->server, 1);
	SSL_CTX_set_read_ahead(t->client, 1);
	SSL_CTX_set_default_read_buffer_len(t->server, TLS_READ_BUF);
	SSL_CTX_set_default_read_buffer_len(t->client, TLS_READ_BUF);
	SSL_CTX_set_alpn_select_cb(t->server, alpn_select, NULL);
	static const unsigned char h11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
	if (SSL_CTX_set_alpn_protos(t->client, h11, sizeof(h11)) != 0) {
		rc = ossl_err(err, "ALPN");
		goto fail;
	}
	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	if (ca_file && *ca_file) {
		if ((rc = load_ca_file(t->client, ca_file, err)) < 0)
			goto fail;
	} else if (SSL_CTX_set_default_verify_paths(t->client) != 1) {
		rc = ossl_err(err, "host CA store");
		goto fail;
	}
	*out = t;
	return 0;
fail:
	net_tls_free(t);
	return rc;
}

void
net_tls_free(struct net_tls *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->n_leaves; i++)
		X509_free(t->leaves[i].cert);
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	X509_free(t->ca);
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->leaf_key);
	free(t->ca_pem);
	free(t);
}

const char *
net_tls_ca_pem(const struct net_tls *t)
{
	return t ? t->ca_pem : NULL;
}

static X509 *
leaf_for(struct net_tls *t, const char *host)
{
	for (unsigned i = 0; i < t->n_leaves; i++)
		if (strcmp(t->leaves[i].host, host) == 0)
			return t->leaves[i].cert;
	struct sockaddr_storage ss;
	bool ip = net_addr_parse(host, strlen(host), 0, &ss);
	char san[300];
	snprintf(san, sizeof(san), "%s:%s", ip ? "IP" : "DNS", host);
	X509 *c = new_cert(strlen(host) < 64 ? host : "warden leaf", LEAF_DAYS);
	if (!c || X509_set_issuer_name(c, X509_get_subject_name(t->ca)) != 1 ||
	    X509_set_pubkey(c, t->leaf_key) != 1 || !add_ext(c, t->ca, NID_subject_alt_name, san) ||
	    !add_ext(c, t->ca, NID_basic_constraints, "critical,CA:FALSE") ||
	    !add_ext(c, t->ca, NID_key_usage, "critical,digitalSignature") ||
	    !add_ext(c, t->ca, NID_ext_key_usage, "serverAuth") ||
	    !add_ext(c, t->ca, NID_authority_key_identifier, "keyid") ||
	    X509_sign(c, t->ca_key, EVP_sha256()) == 0) {
		X509_free(c);
		ERR_clear_error();
		return NULL;
	}
	unsigned slot = t->n_leaves < LEAF_CACHE ? t->n_leaves++ : t->next_evict++ % LEAF_CACHE;
	X509_free(t->leaves[slot].cert);
	snprintf(t->leaves[slot].host, sizeof(t->leaves[slot].host), "%s", host);
	t->leaves[slot].cert = c;
	return c;
}

SSL *
net_tls_server(struct net_tls *t, const char *host, int fd)
{
	X509 *leaf = leaf_for(t, host);
	SSL *s = leaf ? SSL_new(t->server) : NULL;
	if (!s || SSL_use_certificate(s, leaf) != 1 || SSL_use_PrivateKey(s, t->leaf_key) != 1 ||
	    SSL_add1_chain_cert(s, t->ca) != 1 || SSL_set_fd(s, fd) != 1) {
		SSL_free(s);
		ERR_clear_error();
		return NULL;
	}
	SSL_set_accept_state(s);
	return s;
}

SSL *
net_tls_client(struct net_tls *t, const char *host, int fd)
{
	SSL *s = SSL_new(t->client);
	struct sockaddr_storage ss;
	bool ip = net_addr_parse(host, strlen(host), 0, &ss);
	char name[256]; /* the SNI macro wants a mutable string */
	snprintf(name, sizeof(name), "%s", host);
	if (!s || SSL_set_fd(s, fd) != 1 || (!ip && SSL_set_tlsext_host_name(s, name) != 1) ||
	    (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), host) != 1
		: SSL_set1_host(s, host) != 1)) {
		SSL_free(s);
		ERR_clear_error();
		return NULL;
	}
	SSL_set_connect_state(s);
	return s;
}

const char *
net_tls_last_error(void)
{
	static __thread char buf[160];
	unsigned long e = ERR_peek_last_error();
	if (!e)
		return "TLS failure";
	ERR_error_string_n(e, buf, sizeof(buf));
	return buf;
}
