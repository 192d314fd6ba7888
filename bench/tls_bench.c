/* tls_bench: warden's TLS interception against Squid (squid-openssl,
 * ssl_bump) and mitmproxy (mitmdump), in one run, on loopback.
 *
 * Every proxy stands between the same client and the same upstream:
 *   upstream  a process of its own (forked): TLS 1.3 only, one cipher
 *             suite (SUITE), an EC P-256 certificate for web.test from a
 *             CA made here; GET /big answers TLS_BENCH_MIB MiB, anything
 *             else a 2-byte body, keep-alive
 *   client    this process, one thread: TLS 1.3 offering SUITE alone,
 *             verifying web.test against a store holding the proxies' CAs;
 *             one keep-alive connection per party, opened before the
 *             series (the figures are transfers, not handshakes)
 *   warden    net_proxy with tls_intercept in a forked process of its own
 *             (its CA and leaves EC P-256, as made by net/tls.c)
 *   squid     squid -N (one process), ssl_bump "bump all", leaves minted
 *             by security_file_certgen from an EC P-256 CA (Squid signs
 *             the leaf with the CA's key pair: the same key type)
 *   mitmproxy mitmdump with the same EC P-256 CA in its confdir, the
 *             upstream verified against the upstream CA, bodies streamed
 *             (stream_large_bodies, as warden and Squid stream)
 *   direct    the client straight to the upstream
 *
 * TLS_BENCH_PEERS (default "squid,mitmproxy") names the peers run.
 * Series (TLS_BENCH_SERIES, default 3), the order of the parties rotating:
 * each party moves TLS_BENCH_BODIES bodies of TLS_BENCH_MIB MiB, then
 * TLS_BENCH_REQS small requests (p50).  Each process's CPU is read from
 * /proc around its transfer: the scheduler's own run time of every thread
 * (/proc/PID/task/TID/schedstat, ns; utime+stime in /proc/PID/stat are the
 * same figure rounded to 10 ms ticks, too coarse for a 100 ms transfer).
 * Ratios are taken series by series; medians with min-max are printed and
 * "summary KEY VALUE" lines feed bench/summary.py.
 *
 * A peer whose program is missing is skipped with the reason printed
 * (bench/run.sh installs them from Debian when it can).
 */
#include "net/net.h"
#include "net/ossl.h"
#include "bench.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The one suite every leg negotiates: OpenSSL's first TLS 1.3 choice,
 * the one a default client asks for. */
#define SUITE "TLS_AES_256_GCM_SHA384"

static size_t body_bytes;
static char dir[64];
static pid_t started[4]; /* the processes this run started, ended by pid */
static pid_t self_pid;

static void
stop_all(void)
{
	if (getpid() != self_pid)
		return;
	for (size_t i = 0; i < sizeof(started) / sizeof(started[0]); i++)
		if (started[i] > 0) {
			kill(started[i], SIGTERM);
			waitpid(started[i], NULL, 0);
			started[i] = 0;
		}
}

static void
die(const char *what)
{
	fprintf(stderr, "tls_bench: %s\n", what);
	ERR_print_errors_fp(stderr);
	if (getpid() == self_pid) {
		stop_all();
		fprintf(stderr, "tls_bench: the peers' logs are in %s\n", dir);
	}
	exit(1);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Run time of every thread of pid, ns (see the head comment). */
static uint64_t
proc_cpu_ns(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	uint64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p2[128];
		snprintf(p2, sizeof(p2), "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
		FILE *f = fopen(p2, "r");
		if (!f)
			continue;
		unsigned long long run = 0;
		if (fscanf(f, "%llu", &run) == 1)
			sum += run;
		fclose(f);
	}
	closedir(d);
	return sum;
}

static int
listen_lo(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
		die("listen on loopback");
	socklen_t sl = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	*port = ntohs(sa.sin_port);
	return fd;
}

static int
dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- certificates ---- */

static X509 *
mk_cert(const char *cn, X509 *issuer, EVP_PKEY *issuer_key, EVP_PKEY *key, bool ca)
{
	X509 *c = X509_new();
	X509_set_version(c, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(c), ca ? 1 : 2);
	X509_gmtime_adj(X509_getm_notBefore(c), -3600);
	X509_gmtime_adj(X509_getm_notAfter(c), 86400);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_UTF8,
				   (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(c, X509_get_subject_name(issuer ? issuer : c));
	X509_set_pubkey(c, key);
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer ? issuer : c, c, NULL, NULL, 0);
	struct {
		int nid;
		const char *val;
	} exts[] = {
	    {NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE"},
	    {ca ? NID_key_usage : NID_subject_alt_name,
	     ca ? "critical,keyCertSign,cRLSign" : "DNS:web.test"},
	    {NID_subject_key_identifier, "hash"},
	};
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &v3, exts[i].nid, exts[i].val);
		if (!ex)
			die("certificate extension");
		X509_add_ext(c, ex, -1);
		X509_EXTENSION_free(ex);
	}
	if (!X509_sign(c, issuer_key, EVP_sha256()))
		die("sign");
	return c;
}

static void
write_pem(const char *name, X509 *cert, EVP_PKEY *key)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		die(path);
	if (key)
		PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	PEM_write_X509(f, cert);
	fclose(f);
}

/* ---- upstream (a forked process) ---- */

static SSL_CTX *up_ctx;

static bool
http_head_end(const char *b, size_t len, size_t *used)
{
	const char *e = memmem(b, len, "\r\n\r\n", 4);
	if (!e)
		return false;
	*used = (size_t)(e + 4 - b);
	return true;
}

static void *
up_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	SSL *s = SSL_new(up_ctx);
	SSL_set_fd(s, fd);
	if (SSL_accept(s) != 1)
		goto out;
	char buf[8192];
	size_t len = 0;
	static char chunk[1 << 16];
	for (;;) {
		int n = SSL_read(s, buf + len, (int)(sizeof(buf) - len));
		if (n <= 0)
			break;
		len += (size_t)n;
		size_t used;
		while (http_head_end(buf, len, &used)) {
			if (len >= 8 && memcmp(buf, "GET /big", 8) == 0) {
				char head[128];
				int hl = snprintf(head, sizeof(head),
						  "HTTP/1.1 200 OK\r\nContent-Type: "
						  "application/octet-stream\r\nContent-Length: "
						  "%zu\r\n\r\n",
						  body_bytes);
				SSL_write(s, head, hl);
				for (size_t left = body_bytes; left;) {
					int k = (int)(left < sizeof(chunk) ? left : sizeof(chunk));
					if (SSL_write(s, chunk, k) <= 0)
						goto out;
					left -= (size_t)k;
				}
			} else {
				static const char r[] = "HTTP/1.1 200 OK\r\nContent-Type: "
							"text/plain\r\nContent-Length: 2\r\n\r\nok";
				SSL_write(s, r, sizeof(r) - 1);
			}
			memmove(buf, buf + used, len - used);
			len -= used;
		}
		if (len == sizeof(buf))
			break;
	}
out:
	SSL_free(s);
	close(fd);
	return NULL;
}

static void
upstream_main(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_t t;
		pthread_create(&t, NULL, up_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

/* ---- warden's proxy (a forked process) ---- */

static void
warden_main(int lfd, uint16_t up_port, int pfd)
{
	struct wd_err err = {0};
	struct net_rules *rules;
	net_rules_new(&rules);
	char spec[64];
	snprintf(spec, sizeof(spec), "web.test:%u", up_port);
	char spec2[64];
	snprintf(spec2, sizeof(spec2), "127.0.0.1:%u", up_port);
	if (net_rules_add_allow(rules, spec, NULL, &err) < 0 ||
	    net_rules_add_allow(rules, spec2, NULL, &err) < 0 ||
	    net_rules_add_host(rules, "web.test=127.0.0.1", &err) < 0)
		die(err.msg);
	struct net_config cfg;
	net_config_init(&cfg);
	cfg.rules = rules;
	cfg.sandbox_id = "tls-bench";
	cfg.tls_intercept = true;
	char ca[128];
	snprintf(ca, sizeof(ca), "%s/up-ca.pem", dir);
	cfg.upstream_ca_file = ca;
	struct net_proxy *p;
	if (net_proxy_new(&cfg, NULL, NULL, &p, &err) < 0 ||
	    net_proxy_serve(p, lfd, -1, -1, &err) < 0 || net_proxy_start(p, &err) < 0)
		die(err.msg);
	const char *pem = net_proxy_ca_pem(p);
	size_t n = strlen(pem);
	if (write(pfd, pem, n) != (ssize_t)n)
		die("CA to the parent");
	close(pfd);
	for (;;)
		pause();
}

/* ---- the peers ---- */

static pid_t
spawn(const char *const argv[], const char *log)
{
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* a bench that dies leaves no peer behind */
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		char *v[32]; /* execvp's argv is not const: copies */
		size_t i = 0;
		for (; argv[i] && i < 31; i++)
			v[i] = strdup(argv[i]);
		v[i] = NULL;
		execvp(v[0], v);
		_exit(127);
	}
	return pid;
}

/* Waits until port accepts (the peer is up) or pid exits. */
static bool
wait_port(pid_t pid, uint16_t port, const char *name)
{
	uint64_t t0 = now_ns();
	for (;;) {
		int fd = dial(port);
		if (fd >= 0) {
			close(fd);
			return true;
		}
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			printf("# %s: exited before listening (log in %s)\n", name, dir);
			return false;
		}
		if (now_ns() - t0 > 60ull * 1000000000ull) {
			printf("# %s: not listening after 60 s\n", name);
			return false;
		}
		usleep(20000);
	}
}

static bool
have(const char *prog)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static pid_t
squid_start(uint16_t *port)
{
	if (!have("squid") || access("/usr/lib/squid/security_file_certgen", X_OK) != 0) {
		printf("# squid: skipped (squid-openssl is not installed: apt-get install "
		       "squid-openssl)\n");
		return -1;
	}
	int lfd = listen_lo(port); /* a free port, handed to Squid by number */
	close(lfd);
	struct passwd *pw = getpwnam("proxy");
	char path[160], cmd[512];
	snprintf(path, sizeof(path), "%s/squid.conf", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		die(path);
	fprintf(f,
		"http_port 127.0.0.1:%u ssl-bump tls-cert=%s/peer-ca.pem "
		"generate-host-certificates=on dynamic_cert_mem_cache_size=4MB\n"
		"sslcrtd_program /usr/lib/squid/security_file_certgen -s %s/ssl_db -M 4MB\n"
		"sslcrtd_children 2 startup=1 idle=1\n"
		"ssl_bump bump all\n"
		"tls_outgoing_options cafile=%s/up-ca.pem min-version=1.3\n"
		"http_access allow all\n"
		"cache deny all\n"
		"hosts_file %s/hosts\n"
		"pid_filename %s/squid.pid\n"
		"cache_log %s/squid-cache.log\n"
		"access_log none\n"
		"coredump_dir %s\n"
		"shutdown_lifetime 0 seconds\n"
		"%s",
		*port, dir, dir, dir, dir, dir, dir, dir, pw ? "cache_effective_user proxy\n" : "");
	fclose(f);
	snprintf(path, sizeof(path), "%s/hosts", dir);
	f = fopen(path, "w");
	fprintf(f, "127.0.0.1 web.test\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "/usr/lib/squid/security_file_certgen -c -s %s/ssl_db -M 4MB >/dev/null", dir);
	if (system(cmd) != 0) {
		printf("# squid: skipped (security_file_certgen -c failed)\n");
		return -1;
	}
	if (pw) { /* Squid drops to the proxy user: its files must be its own */
		snprintf(cmd, sizeof(cmd), "chown -R proxy: %s", dir);
		if (system(cmd) != 0)
			die("chown");
	}
	snprintf(path, sizeof(path), "%s/squid.conf", dir);
	char log[160];
	snprintf(log, sizeof(log), "%s/squid.out", dir);
	const char *argv[] = {"squid", "-N", "-f", path, NULL};
	pid_t pid = spawn(argv, log);
	if (wait_port(pid, *port, "squid"))
		return pid;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return -1;
}

static pid_t
mitm_start(uint16_t *port)
{
	if (!have("mitmdump")) {
		printf("# mitmproxy: skipped (mitmdump is not installed: apt-get install "
		       "mitmproxy)\n");
		return -1;
	}
	int lfd = listen_lo(port);
	close(lfd);
	char conf[160], cadir[96], portstr[16], upca[160], log[160];
	snprintf(cadir, sizeof(cadir), "%s/mitm", dir);
	mkdir(cadir, 0700);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "cp %s/peer-ca.pem %s/mitmproxy-ca.pem", dir, cadir);
	if (system(cmd) != 0)
		die("mitmproxy CA");
	snprintf(conf, sizeof(conf), "confdir=%s", cadir);
	snprintf(upca, sizeof(upca), "ssl_verify_upstream_trusted_ca=%s/up-ca.pem", dir);
	snprintf(portstr, sizeof(portstr), "%u", *port);
	snprintf(log, sizeof(log), "%s/mitmdump.out", dir);
	const char *argv[] = {"mitmdump",
			      "-q",
			      "--listen-host",
			      "127.0.0.1",
			      "--listen-port",
			      portstr,
			      "--set",
			      conf,
			      "--set",
			      upca,
			      "--set",
			      "stream_large_bodies=64k",
			      "--set",
			      "termlog_verbosity=error",
			      NULL};
	pid_t pid = spawn(argv, log);
	if (wait_port(pid, *port, "mitmproxy"))
		return pid;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return -1;
}

/* ---- the client ---- */

static SSL_CTX *cli_ctx;

static SSL *
tls_open(uint16_t port, const char *connect_to)
{
	int fd = dial(port);
	if (fd < 0)
		die("connect");
	if (connect_to) {
		char req[160], b[1024];
		int n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n",
				 connect_to, connect_to);
		send(fd, req, (size_t)n, 0);
		size_t len = 0;
		while (!(len >= 4 && memcmp(b + len - 4, "\r\n\r\n", 4) == 0)) {
			if (len == sizeof(b) || recv(fd, b + len, 1, 0) != 1)
				die("CONNECT answer");
			len++;
		}
		if (memcmp(b + 9, "200", 3) != 0) {
			fprintf(stderr, "%.*s", (int)len, b);
			die("CONNECT refused");
		}
	}
	SSL *s = SSL_new(cli_ctx);
	SSL_set_fd(s, fd);
	SSL_set_tlsext_host_name(s, "web.test");
	SSL_set1_host(s, "web.test");
	if (SSL_connect(s) != 1)
		die("TLS handshake");
	return s;
}

/* Reads a response head; returns its Content-Length. */
static size_t
read_head(SSL *s)
{
	char b[2048];
	size_t len = 0;
	while (!(len >= 4 && memcmp(b + len - 4, "\r\n\r\n", 4) == 0)) {
		if (len == sizeof(b) - 1 || SSL_read(s, b + len, 1) != 1)
			die("response head");
		len++;
	}
	b[len] = '\0';
	if (strncmp(b, "HTTP/1.1 200", 12) != 0) {
		fprintf(stderr, "%s", b);
		die("not a 200");
	}
	const char *cl = strcasestr(b, "\r\nContent-Length:");
	if (!cl)
		die("no Content-Length in the answer");
	return strtoull(cl + 17, NULL, 10);
}

static uint16_t up_port;

static void
get(SSL *s, const char *path, char *buf, size_t cap)
{
	char req[128];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: web.test:%u\r\n\r\n", path,
			 up_port);
	if (SSL_write(s, req, n) != n)
		die("request");
	size_t want = read_head(s), got = 0;
	while (got < want) {
		size_t k = want - got < cap ? want - got : cap, r = 0;
		if (SSL_read_ex(s, buf, k, &r) != 1)
			die("body");
		got += r;
	}
}

enum { WARDEN, SQUID, MITM, DIRECT, NPARTY };
static const char *names[NPARTY] = {"warden", "squid", "mitmproxy", "direct"};

struct party {
	SSL *s;
	pid_t pid; /* the proxy's process; 0 for direct */
	double gbps[16], p50_us[16], cpu_mib[16], ends_mib[16];
};

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double
median(const double *in, int n, double *lo, double *hi)
{
	double v[16];
	memcpy(v, in, sizeof(double) * (size_t)n);
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	*lo = v[0];
	*hi = v[n - 1];
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double
self_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void
run_party(struct party *pa, pid_t up_pid, int bodies, int reqs, int series)
{
	static char buf[1 << 16];
	double c0 = self_cpu_ns();
	uint64_t u0 = proc_cpu_ns(up_pid), p0 = pa->pid ? proc_cpu_ns(pa->pid) : 0;
	uint64_t t0 = now_ns();
	for (int i = 0; i < bodies; i++)
		get(pa->s, "/big", buf, sizeof(buf));
	uint64_t dt = now_ns() - t0;
	double mib = (double)body_bytes * bodies / (1 << 20);
	uint64_t p1 = pa->pid ? proc_cpu_ns(pa->pid) : 0, u1 = proc_cpu_ns(up_pid);
	double c1 = self_cpu_ns();
	pa->gbps[series] = (double)body_bytes * bodies * 8 / (double)dt;
	pa->cpu_mib[series] = (double)(p1 - p0) / 1e6 / mib;
	pa->ends_mib[series] = ((c1 - c0) + (double)(u1 - u0)) / 1e6 / mib;
	uint64_t *t = calloc((size_t)reqs, sizeof(*t));
	for (int i = 0; i < reqs; i++) {
		uint64_t r0 = now_ns();
		get(pa->s, "/x", buf, sizeof(buf));
		t[i] = now_ns() - r0;
	}
	double v[1];
	/* p50 by partial sort */
	for (int i = 0; i <= reqs / 2; i++)
		for (int j = i + 1; j < reqs; j++)
			if (t[j] < t[i]) {
				uint64_t x = t[i];
				t[i] = t[j];
				t[j] = x;
			}
	v[0] = (double)t[reqs / 2] / 1e3;
	pa->p50_us[series] = v[0];
	free(t);
}

/* A size from the environment; anything but a whole number in [lo, hi]
 * is an error naming the variable (exit 125, nothing run). */
static int
env_int(const char *name, int def, int lo, int hi)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || n < lo || n > hi) {
		fprintf(stderr, "tls_bench: %s=%s: want a whole number from %d to %d\n", name, v,
			lo, hi);
		exit(125);
	}
	return (int)n;
}

static void
ratio_line(const char *key, const char *what, const double *num, const double *den, int n)
{
	double r[16], lo, hi;
	for (int i = 0; i < n; i++)
		r[i] = den[i] > 0 ? num[i] / den[i] : 0;
	double m = median(r, n, &lo, &hi);
	printf("%s: %.2f (%.2f-%.2f)\n", what, m, lo, hi);
	printf("summary\t%s\t%.3f\n", key, m);
}

/* Added latencies are differences of two p50s and can come out at or
 * below zero in one series when the proxy's share is under the noise: the
 * ratio is of the medians over the series, and is not given when the
 * peer's median is not above zero. */
static void
added_ratio(const char *key, const char *what, const double *num, const double *den, int n)
{
	double lo, hi;
	double a = median(num, n, &lo, &hi), b = median(den, n, &lo, &hi);
	if (b <= 0) {
		printf("%s: not measured (the peer's added latency %.1f us)\n", what, b);
		return;
	}
	printf("%s: %.2f (medians %+.1f us / %+.1f us)\n", what, a / b, a, b);
	printf("summary\t%s\t%.3f\n", key, a / b);
}

int
main(void)
{
	int mib = env_int("TLS_BENCH_MIB", 4, 1, 1024);
	int bodies = env_int("TLS_BENCH_BODIES", 24, 1, 100000);
	int reqs = env_int("TLS_BENCH_REQS", 1000, 1, 10000000);
	int nseries = env_int("TLS_BENCH_SERIES", 3, 1, 16);
	/* TLS_BENCH_PEERS: which peers run (default "squid,mitmproxy"; "none"
	 * for warden and direct alone, e.g. under perf) */
	const char *peers = getenv("TLS_BENCH_PEERS");
	if (!peers)
		peers = "squid,mitmproxy";
	char pcopy[128], *save = NULL;
	snprintf(pcopy, sizeof(pcopy), "%s", peers);
	for (char *w = strtok_r(pcopy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		if (strcmp(w, "squid") != 0 && strcmp(w, "mitmproxy") != 0 &&
		    strcmp(w, "none") != 0) {
			fprintf(
			    stderr,
			    "tls_bench: TLS_BENCH_PEERS: unknown peer \"%s\" (squid, mitmproxy or "
			    "none, comma-separated)\n",
			    w);
			return 125;
		}
	body_bytes = (size_t)mib << 20;
	self_pid = getpid();
	/* a peer that closes is an error to report, not a silent SIGPIPE */
	signal(SIGPIPE, SIG_IGN);
	struct wd_err lerr = {0};
	if (wd_ossl_load(&lerr) < 0)
		die(lerr.msg);
	snprintf(dir, sizeof(dir), "/tmp/wd-tls-bench.XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp");
	chmod(dir, 0755);

	/* the upstream's CA and leaf, and the peers' CA: EC P-256 all */
	EVP_PKEY *up_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	EVP_PKEY *peer_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *up_ca = mk_cert("tls_bench upstream CA", NULL, up_key, up_key, true);
	X509 *up_leaf = mk_cert("web.test", up_ca, up_key, up_key, false);
	X509 *peer_ca = mk_cert("tls_bench peers CA", NULL, peer_key, peer_key, true);
	write_pem("up-ca.pem", up_ca, NULL);
	write_pem("peer-ca.pem", peer_ca, peer_key);

	up_ctx = SSL_CTX_new(TLS_server_method());
	SSL_CTX_set_min_proto_version(up_ctx, TLS1_3_VERSION);
	if (SSL_CTX_set_ciphersuites(up_ctx, SUITE) != 1 ||
	    SSL_CTX_use_certificate(up_ctx, up_leaf) != 1 ||
	    SSL_CTX_use_PrivateKey(up_ctx, up_key) != 1)
		die("upstream context");
	uint16_t w_port, s_port = 0, m_port = 0;
	int up_lfd = listen_lo(&up_port);
	fflush(stdout);
	pid_t up_pid = fork();
	if (up_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		upstream_main(up_lfd);
		_exit(0);
	}
	close(up_lfd);
	started[0] = up_pid;

	int w_lfd = listen_lo(&w_port), pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0)
		die("pipe");
	pid_t w_pid = fork();
	if (w_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		close(pp[0]);
		warden_main(w_lfd, up_port, pp[1]);
		_exit(0);
	}
	started[1] = w_pid;
	close(w_lfd);
	close(pp[1]);
	static char w_ca[8192];
	size_t w_len = 0;
	ssize_t n;
	while (w_len < sizeof(w_ca) - 1 &&
	       (n = read(pp[0], w_ca + w_len, sizeof(w_ca) - 1 - w_len)) > 0)
		w_len += (size_t)n;
	close(pp[0]);
	if (!w_len)
		die("warden's proxy did not start");

	pid_t s_pid = -1, m_pid = -1;
	if (strstr(peers, "squid"))
		s_pid = squid_start(&s_port);
	else
		printf("# squid: not asked for (TLS_BENCH_PEERS=%s)\n", peers);
	started[2] = s_pid;
	if (strstr(peers, "mitmproxy"))
		m_pid = mitm_start(&m_port);
	else
		printf("# mitmproxy: not asked for (TLS_BENCH_PEERS)\n");
	started[3] = m_pid;

	cli_ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_min_proto_version(cli_ctx, TLS1_3_VERSION);
	if (SSL_CTX_set_ciphersuites(cli_ctx, SUITE) != 1)
		die("client suite");
	SSL_CTX_set_verify(cli_ctx, SSL_VERIFY_PEER, NULL);
	X509_STORE *st = SSL_CTX_get_cert_store(cli_ctx);
	BIO *b = BIO_new_mem_buf(w_ca, (int)w_len);
	X509 *wca = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	if (!wca || X509_STORE_add_cert(st, wca) != 1 || X509_STORE_add_cert(st, peer_ca) != 1 ||
	    X509_STORE_add_cert(st, up_ca) != 1)
		die("client trust store");

	struct party pa[NPARTY] = {0};
	char target[64], target_ip[64];
	snprintf(target, sizeof(target), "web.test:%u", up_port);
	/* mitmproxy resolves CONNECT names with the host's resolver (no
	 * hosts file of its own): it is sent the address, and takes the
	 * upstream name from the client's SNI */
	snprintf(target_ip, sizeof(target_ip), "127.0.0.1:%u", up_port);
	pa[WARDEN].s = tls_open(w_port, target);
	pa[WARDEN].pid = w_pid;
	if (s_pid > 0) {
		pa[SQUID].s = tls_open(s_port, target);
		pa[SQUID].pid = s_pid;
	}
	if (m_pid > 0) {
		pa[MITM].s = tls_open(m_port, target_ip);
		pa[MITM].pid = m_pid;
	}
	pa[DIRECT].s = tls_open(up_port, NULL);
	printf("TLS interception, %d series of %d x %d MiB bodies and %d small requests, each "
	       "on one keep-alive connection; every leg TLS 1.3, EC P-256 leaves\n",
	       nseries, bodies, mib, reqs);
	for (int i = 0; i < NPARTY; i++) {
		if (!pa[i].s)
			continue;
		static char buf[1 << 16];
		get(pa[i].s, "/big", buf, sizeof(buf)); /* warm-up: leaves, buffers */
		for (int k = 0; k < 50; k++)
			get(pa[i].s, "/x", buf, sizeof(buf));
		printf("  %-10s client leg %s %s\n", names[i], SSL_get_version(pa[i].s),
		       SSL_get_cipher_name(pa[i].s));
	}
	for (int r = 0; r < nseries; r++) {
		for (int k = 0; k < NPARTY; k++) {
			int i = (r + k) % NPARTY;
			if (pa[i].s)
				run_party(&pa[i], up_pid, bodies, reqs, r);
		}
		printf("  series %d, load %s", r + 1, "");
		FILE *f = fopen("/proc/loadavg", "r");
		char la[64] = "";
		if (f) {
			if (!fgets(la, sizeof(la), f))
				la[0] = '\0';
			fclose(f);
		}
		printf("%s", la);
	}
	printf("%-10s %22s %22s %22s %22s\n", "party", "Gbit/s", "p50 us (added)",
	       "proxy CPU ms/MiB", "ends' CPU ms/MiB");
	double added[NPARTY][16];
	for (int i = 0; i < NPARTY; i++) {
		if (!pa[i].s)
			continue;
		double lo, hi, lo2, hi2, lo3, hi3, lo4, hi4;
		for (int r = 0; r < nseries; r++)
			added[i][r] = pa[i].p50_us[r] - pa[DIRECT].p50_us[r];
		double g = median(pa[i].gbps, nseries, &lo, &hi);
		double a = median(added[i], nseries, &lo2, &hi2);
		double c = median(pa[i].cpu_mib, nseries, &lo3, &hi3);
		double e = median(pa[i].ends_mib, nseries, &lo4, &hi4);
		char gs[40], as[40], cs[40], es[40];
		snprintf(gs, sizeof(gs), "%.2f (%.2f-%.2f)", g, lo, hi);
		snprintf(as, sizeof(as), "%+.0f (%+.0f..%+.0f)", a, lo2, hi2);
		snprintf(cs, sizeof(cs), i == DIRECT ? "-" : "%.2f (%.2f-%.2f)", c, lo3, hi3);
		snprintf(es, sizeof(es), "%.2f (%.2f-%.2f)", e, lo4, hi4);
		printf("%-10s %22s %22s %22s %22s\n", names[i], gs, as, cs, es);
	}
	ratio_line("interception_vs_direct_4m", "warden / direct throughput", pa[WARDEN].gbps,
		   pa[DIRECT].gbps, nseries);
	ratio_line("interception_cpu_vs_ends",
		   "warden's proxy CPU per MiB / the two ends' together (target <= 1.15)",
		   pa[WARDEN].cpu_mib, pa[WARDEN].ends_mib, nseries);
	if (pa[SQUID].s) {
		ratio_line("interception_vs_squid", "throughput warden / Squid (target >= 2.5)",
			   pa[WARDEN].gbps, pa[SQUID].gbps, nseries);
		added_ratio("interception_latency_vs_squid",
			    "added p50 latency warden / Squid (target <= 0.4)", added[WARDEN],
			    added[SQUID], nseries);
		ratio_line("interception_cpu_vs_squid", "proxy CPU per MiB warden / Squid",
			   pa[WARDEN].cpu_mib, pa[SQUID].cpu_mib, nseries);
	}
	if (pa[MITM].s) {
		ratio_line("interception_vs_mitmproxy", "throughput warden / mitmproxy",
			   pa[WARDEN].gbps, pa[MITM].gbps, nseries);
		added_ratio("interception_latency_vs_mitmproxy",
			    "added p50 latency warden / mitmproxy", added[WARDEN], added[MITM],
			    nseries);
		ratio_line("interception_cpu_vs_mitmproxy", "proxy CPU per MiB warden / mitmproxy",
			   pa[WARDEN].cpu_mib, pa[MITM].cpu_mib, nseries);
	}
	/* the same, one row per figure and peer, for make bench's table */
	for (int i = SQUID; i <= MITM; i++) {
		if (!pa[i].s)
			continue;
		const char *peer = i == SQUID ? "Squid ssl_bump" : "mitmproxy";
		bench_peer_line("TLS interception: throughput, keep-alive", "Gbit/s", "high", peer,
				pa[WARDEN].gbps, pa[i].gbps, nseries);
		bench_peer_line("TLS interception: added p50 latency", "us", "low", peer,
				added[WARDEN], added[i], nseries);
		bench_peer_line("TLS interception: the proxy's CPU per MiB", "ms", "low", peer,
				pa[WARDEN].cpu_mib, pa[i].cpu_mib, nseries);
	}
	fflush(stdout);
	stop_all();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "tls_bench: %s left behind\n", dir);
	return 0;
}
