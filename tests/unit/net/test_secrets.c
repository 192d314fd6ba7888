/* Unit tests for credentials injected at the proxy: reading
 * values, inject rules, the headers written, the exfiltration checks, and
 * the engine in-process on loopback with a plain-HTTP upstream that
 * records what it receives. */
#include "net/net.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void
no_sigpipe(void)
{
	signal(SIGPIPE, SIG_IGN);
}
TestSuite(net_secrets, .init = no_sigpipe);

#define TOKEN "ghp_0123456789abcdefTOKEN"

static struct net_secrets *
one_secret(const char *name, const char *value)
{
	struct net_secrets *s;
	struct wd_err err = {0};
	net_secrets_new(&s);
	cr_assert_eq(net_secrets_add(s, name, value, strlen(value), &err), 0, "%s", err.msg);
	return s;
}

/* ---- values ---- */

Test(net_secrets, refuses_bad_values_without_echoing_them)
{
	struct net_secrets *s;
	struct wd_err err = {0};
	net_secrets_new(&s);
	cr_assert_eq(net_secrets_add(s, "T", "short", 5, &err), -EINVAL);
	cr_assert(strstr(err.msg, "shorter than 8"));
	cr_assert_null(strstr(err.msg, "short\""));
	const char crlf[] = "abcdefgh\r\nX-Evil: 1";
	cr_assert_eq(net_secrets_add(s, "T", crlf, strlen(crlf), &err), -EINVAL);
	cr_assert(strstr(err.msg, "control character"));
	cr_assert_null(strstr(err.msg, "X-Evil"));
	cr_assert_eq(net_secrets_add(s, "1BAD", TOKEN, strlen(TOKEN), &err), -EINVAL);
	cr_assert_eq(net_secrets_add(s, "T", TOKEN, strlen(TOKEN), &err), 0);
	cr_assert_eq(net_secrets_add(s, "T", TOKEN, strlen(TOKEN), &err), -EEXIST);
	net_secrets_free(s);
}

Test(net_secrets, reads_files_and_env_and_refuses_the_rest)
{
	char dir[] = "/tmp/wd-secret-XXXXXX", path[128], buf[NET_SECRET_MAX + 3];
	size_t len = 0;
	struct wd_err err = {0};
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tok", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "%s\n", TOKEN);
	fclose(f);
	char src[160];
	snprintf(src, sizeof(src), "@%s", path);
	cr_assert_eq(net_secret_read(src, buf, sizeof(buf), &len, &err), 0, "%s", err.msg);
	cr_assert_eq(len, strlen(TOKEN), "one newline is dropped");
	cr_assert_eq(memcmp(buf, TOKEN, len), 0);

	setenv("WD_TEST_TOKEN", TOKEN, 1);
	cr_assert_eq(net_secret_read("env:WD_TEST_TOKEN", buf, sizeof(buf), &len, &err), 0);
	cr_assert_eq(len, strlen(TOKEN));
	cr_assert_eq(net_secret_read("env:WD_TEST_UNSET_X", buf, sizeof(buf), &len, &err), -EINVAL);
	cr_assert(strstr(err.msg, "not set"));

	/* missing, a FIFO (refused at once, not waited on), a directory,
	 * oversized, empty, no form */
	snprintf(src, sizeof(src), "@%s/missing", dir);
	cr_assert_lt(net_secret_read(src, buf, sizeof(buf), &len, &err), 0);
	cr_assert(strstr(err.msg, "missing"), "%s", err.msg);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	snprintf(src, sizeof(src), "@%s", path);
	cr_assert_eq(net_secret_read(src, buf, sizeof(buf), &len, &err), -EINVAL);
	cr_assert(strstr(err.msg, "not a regular file"), "%s", err.msg);
	snprintf(src, sizeof(src), "@%s", dir);
	cr_assert_eq(net_secret_read(src, buf, sizeof(buf), &len, &err), -EINVAL);
	snprintf(path, sizeof(path), "%s/big", dir);
	f = fopen(path, "w");
	for (int i = 0; i < NET_SECRET_MAX + 10; i++)
		fputc('a', f);
	fclose(f);
	snprintf(src, sizeof(src), "@%s", path);
	cr_assert_eq(net_secret_read(src, buf, sizeof(buf), &len, &err), -EINVAL);
	cr_assert(strstr(err.msg, "larger than"), "%s", err.msg);
	snprintf(path, sizeof(path), "%s/empty", dir);
	fclose(fopen(path, "w"));
	snprintf(src, sizeof(src), "@%s", path);
	cr_assert_eq(net_secret_read(src, buf, sizeof(buf), &len, &err), -EINVAL);
	cr_assert_eq(net_secret_read("plain", buf, sizeof(buf), &len, &err), -EINVAL);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* The sandbox's pid 1 is a clone of warden without CLONE_VM: it must see
 * zeroes where warden keeps a value (MADV_WIPEONFORK). */
Test(net_secrets, values_are_not_inherited_by_children)
{
	struct wd_err err = {0};
	char *p = wd_secure_alloc(64, &err);
	cr_assert_not_null(p, "%s", err.msg);
	memcpy(p, TOKEN, sizeof(TOKEN));
	pid_t pid = fork();
	if (pid == 0)
		_exit(p[0] == 0 && p[5] == 0 ? 0 : 1);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child saw the value");
	cr_assert_str_eq(p, TOKEN, "the parent keeps it");
	wd_secure_free(p, 64);
}

/* ---- rules ---- */

Test(net_secrets, parses_rules_and_refuses_bad_ones)
{
	struct net_secrets *s = one_secret("T", TOKEN);
	struct wd_err err = {0};
	static const char *const good[] = {
	    "api.test Authorization=Bearer {T}",
	    "api.test:8443/v2/ X-Api-Key={T}",
	    "http://local.test:8080 Authorization=token {T}",
	    "[::1]:9000 X-K={T}",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		cr_assert_eq(net_secrets_add_inject(s, NET_INJECT_HEADER, good[i], &err), 0,
			     "%s: %s", good[i], err.msg);
	cr_assert_eq(net_secrets_add_inject(s, NET_INJECT_BASIC, "git.test user:{T}", &err), 0);
	static const char *const bad[] = {
	    "api.test",				   /* nothing to send */
	    "api.test Authorization",		   /* no '=' */
	    "*.api.test Authorization=Bearer {T}", /* wildcard */
	    "api.test Host={T}",		   /* routing */
	    "api.test Content-Length={T}",	   /* framing */
	    "api.test Proxy-Authorization={T}",	   /* hop-by-hop */
	    "api.test X-K=Bearer {T",		   /* brace */
	    "api.test X-K=a}b",			   /* brace */
	    "api.test X-K={1T}",		   /* name */
	    "api.test:0 X-K={T}",		   /* port */
	    "api.test/a/../b X-K={T}",		   /* dot segment */
	    "api.test/a%2f X-K={T}",		   /* encoded path */
	    "api.test X-K=\x01{T}",		   /* control byte */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		cr_assert_eq(net_secrets_add_inject(s, NET_INJECT_HEADER, bad[i], &err), -EINVAL,
			     "accepted '%s'", bad[i]);
	}
	cr_assert_eq(net_secrets_add_inject(s, NET_INJECT_BASIC, "git.test {T}", &err), -EINVAL,
		     "basic needs USER:PASSWORD");
	net_secrets_free(s);
}

Test(net_secrets, check_refuses_what_would_never_work)
{
	struct net_rules *r;
	struct wd_err err = {0};
	net_rules_new(&r);
	cr_assert_eq(net_rules_add_allow(r, "api.test", NULL, &err), 0);
	cr_assert_eq(net_rules_add_allow(r, "local.test:8080", NULL, &err), 0);

	struct net_secrets *s = one_secret("T", TOKEN);
	cr_assert_eq(net_secrets_check(s, r, true, &err), -EINVAL);
	cr_assert(strstr(err.msg, "secret T is not used"), "%s", err.msg);
	net_secrets_add_inject(s, NET_INJECT_HEADER, "api.test X-K={U}", &err);
	cr_assert_eq(net_secrets_check(s, r, true, &err), -EINVAL);
	cr_assert(strstr(err.msg, "no secret U"), "%s", err.msg);
	net_secrets_free(s);

	s = one_secret("T", TOKEN);
	net_secrets_add_inject(s, NET_INJECT_HEADER, "api.test X-K={T}", &err);
	cr_assert_eq(net_secrets_check(s, r, false, &err), -EINVAL, "HTTPS without interception");
	cr_assert(strstr(err.msg, "--tls-intercept"), "%s", err.msg);
	cr_assert_eq(net_secrets_check(s, r, true, &err), 0, "%s", err.msg);
	net_secrets_add_inject(s, NET_INJECT_HEADER, "other.test X-K={T}", &err);
	cr_assert_eq(net_secrets_check(s, r, true, &err), -EINVAL, "no allow rule");
	cr_assert(strstr(err.msg, "--allow-host other.test:443"), "%s", err.msg);
	net_secrets_free(s);

	s = one_secret("T", TOKEN);
	net_secrets_add_inject(s, NET_INJECT_HEADER, "http://local.test:8080 X-K={T}", &err);
	cr_assert_eq(net_secrets_check(s, r, false, &err), 0, "plain HTTP needs no interception");
	/* names declared after the rule that uses them are found */
	net_secrets_add_inject(s, NET_INJECT_HEADER, "api.test X-L={U}", &err);
	cr_assert_eq(net_secrets_add(s, "U", TOKEN "U", strlen(TOKEN) + 1, &err), 0);
	cr_assert_eq(net_secrets_check(s, r, true, &err), 0, "%s", err.msg);
	/* shared: read-only */
	struct net_secrets *ref = net_secrets_ref(s);
	cr_assert_eq(net_secrets_add(s, "V", TOKEN, strlen(TOKEN), &err), -EBUSY);
	net_secrets_free(ref);
	net_secrets_free(s);
	net_rules_free(r);
}

static char *
header_of(struct net_secrets *s, bool https, const char *host, uint16_t port, const char *path)
{
	struct net_inject_match m;
	static char buf[2048];
	net_secrets_match(s, https, host, port, path, &m);
	size_t o = 0;
	for (unsigned i = 0; i < m.n; i++) {
		ssize_t n = net_secrets_put_header(s, m.rule[i], buf + o, sizeof(buf) - o - 1);
		cr_assert_gt(n, 0);
		o += (size_t)n;
	}
	buf[o] = '\0';
	return buf;
}

Test(net_secrets, headers_for_the_named_destination_only)
{
	struct net_secrets *s = one_secret("T", TOKEN);
	struct wd_err err = {0};
	net_secrets_add_inject(s, NET_INJECT_HEADER, "api.test Authorization=Bearer {T}", &err);
	net_secrets_add_inject(s, NET_INJECT_HEADER, "api.test/v2/ Authorization=token {T}", &err);
	net_secrets_add_inject(s, NET_INJECT_BASIC, "git.test:8443 x-access-token:{T}", &err);
	net_secrets_add_inject(s, NET_INJECT_HEADER, "http://plain.test X-K={T}", &err);

	cr_assert_str_eq(header_of(s, true, "api.test", 443, "/user"),
			 "Authorization: Bearer " TOKEN "\r\n");
	cr_assert_str_eq(header_of(s, true, "api.test", 443, "/v2/x"),
			 "Authorization: token " TOKEN "\r\n", "the longer path wins");
	cr_assert_str_eq(header_of(s, true, "api.test", 443, "/v2/../x"),
			 "Authorization: Bearer " TOKEN "\r\n", "no dot segments out of /v2/");
	cr_assert_str_eq(header_of(s, true, "api.test", 8443, "/"), "", "another port");
	cr_assert_str_eq(header_of(s, false, "api.test", 443, "/"), "", "plain HTTP");
	cr_assert_str_eq(header_of(s, true, "evil.api.test", 443, "/"), "", "another host");
	/* base64("x-access-token:ghp_0123456789abcdefTOKEN") */
	cr_assert_str_eq(
	    header_of(s, true, "git.test", 8443, "/repo.git/info/refs"),
	    "Authorization: Basic eC1hY2Nlc3MtdG9rZW46Z2hwXzAxMjM0NTY3ODlhYmNkZWZUT0tFTg==\r\n");
	cr_assert_str_eq(header_of(s, false, "plain.test", 80, "/"), "X-K: " TOKEN "\r\n");
	cr_assert_str_eq(header_of(s, true, "plain.test", 80, "/"), "",
			 "an http:// rule is for plain HTTP only");
	char small[8];
	cr_assert_eq(net_secrets_put_header(s, 0, small, sizeof(small)), -1);
	net_secrets_free(s);
}

/* ---- exfiltration checks ---- */

Test(net_secrets, finds_placeholder_and_value_in_their_forms)
{
	struct net_secrets *s = one_secret("T", "p@ss/w0rd+long");
	const char *ph = net_secrets_placeholder(s, "T");
	cr_assert_not_null(ph);
	cr_assert_eq(strlen(ph), NET_PLACEHOLDER_LEN);
	char up[64];
	for (size_t i = 0; i <= strlen(ph); i++)
		up[i] = (char)toupper((unsigned char)ph[i]);
	const char *core = ph + strlen("warden-placeholder-");
	struct {
		const char *text;
		bool found;
	} cases[] = {
	    {ph, true},
	    {up, true},			    /* any case */
	    {core, true},		    /* prefix cut off */
	    {"p@ss/w0rd+long", true},	    /* the value */
	    {"p%40ss%2Fw0rd%2Blong", true}, /* percent-encoded */
	    {"p@ss/w0rd", false},
	    {"nothing here", false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char hay[200];
		snprintf(hay, sizeof(hay), "x=%s&y=1", cases[i].text);
		cr_assert_eq(net_secrets_find(s, 0, hay, strlen(hay)) >= 0, cases[i].found, "%s",
			     cases[i].text);
		cr_assert_eq(net_secrets_find(s, 1, hay, strlen(hay)), -1, "bound: allowed");
	}
	/* mixed case, and the match at the very start or end of the bytes */
	char mixed[64];
	for (size_t i = 0; i <= strlen(ph); i++)
		mixed[i] = i % 2 ? (char)toupper((unsigned char)ph[i]) : ph[i];
	cr_assert_eq(net_secrets_find(s, 0, mixed, strlen(mixed)), 0, "%s", mixed);
	cr_assert_eq(net_secrets_find(s, 0, core, 32), 0);
	cr_assert_eq(net_secrets_find(s, 0, core, 31), -1);
	/* names: split over labels, any case */
	char name[200];
	snprintf(name, sizeof(name), "%.20s.%s.evil.test", core, core + 20);
	cr_assert_eq(net_secrets_find_name(s, name), 0, "%s", name);
	cr_assert_eq(net_secrets_find_name(s, "www.example.test"), -1);
	net_secrets_free(s);
}

Test(net_secrets, finds_a_value_in_a_parsed_head)
{
	struct net_secrets *s = one_secret("T", "Abcdefgh12");
	static struct net_http_head h;
	char where[128];
	const char *heads[] = {
	    "Abcdefgh12 / HTTP/1.1\r\nHost: x\r\n\r\n",		    /* the method */
	    "GET /a%41bcdefgh12 HTTP/1.1\r\nHost: x\r\n\r\n",	    /* encoded in the URL */
	    "GET / HTTP/1.1\r\nHost: x\r\nX-Abcdefgh12: 1\r\n\r\n", /* a field name */
	    /* base64("u:Abcdefgh12") */
	    "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dTpBYmNkZWZnaDEy\r\n\r\n",
	};
	const char *want[] = {"the method", "the URL", "the X-Abcdefgh12 field",
			      "the Authorization field (Basic credentials)"};
	for (size_t i = 0; i < sizeof(heads) / sizeof(*heads); i++) {
		cr_assert_eq(net_http_parse_request(heads[i], strlen(heads[i]), &h), 1, "%zu", i);
		cr_assert_eq(
		    net_secrets_find_head(s, 0, heads[i], &h, NULL, NULL, where, sizeof(where)), 0,
		    "%zu", i);
		cr_assert_str_eq(where, want[i]);
		cr_assert_eq(
		    net_secrets_find_head(s, 1, heads[i], &h, NULL, NULL, where, sizeof(where)), -1,
		    "bound: %zu", i);
	}
	net_secrets_free(s);
}

Test(net_secrets, masks_values_in_responses)
{
	struct net_secrets *s = one_secret("T", "p@ss/w0rd+long");
	char body[] = "a p@ss/w0rd+long b p%40ss%2Fw0rd%2Blong c p@ss/w0rd+lon";
	uint64_t found = 0;
	cr_assert_eq(net_secrets_mask(s, body, strlen(body), &found), 2);
	cr_assert_eq(found, 1);
	cr_assert_str_eq(body, "a ************** b ******************** c p@ss/w0rd+lon");
	/* the window: fixed, 255 bytes, whatever the value's length (20
	 * bytes percent-encoded) and content */
	cr_assert_eq(net_secrets_hold_len(s), NET_HOLD_SMALL - 1);
	cr_assert_eq(net_secrets_hold_len(NULL), 0);
	net_secrets_free(s);
}

Test(net_secrets, scans_bodies_across_reads)
{
	struct net_secrets *s = one_secret("T", TOKEN);
	const char *body = "-----" TOKEN "-----";
	for (size_t cut = 1; cut < strlen(body); cut++) {
		struct net_scan *sc = net_scan_new(s, 0);
		int hit = -1;
		for (size_t i = 0; i < strlen(body); i += cut) {
			size_t k = strlen(body) - i < cut ? strlen(body) - i : cut;
			hit = net_scan_feed(sc, body + i, k);
		}
		cr_assert_eq(hit, 0, "fed %zu bytes at a time", cut);
		net_scan_free(sc);
	}
	struct net_scan *sc = net_scan_new(s, 1);
	cr_assert_eq(net_scan_feed(sc, body, strlen(body)), -1, "bound");
	net_scan_free(sc);
	net_secrets_free(s);
}

Test(net_secrets, redacts_values_from_event_text)
{
	struct net_secrets *s = one_secret("T", "p@ss/w0rd+long");
	char buf[256] = "/a?x=p@ss/w0rd+long&y=p%40ss%2Fw0rd%2Blong&z=P@SS/W0RD+LONG";
	net_secrets_redact(s, buf, sizeof(buf));
	cr_assert_str_eq(buf, "/a?x={T}&y={T}&z={T}");
	net_secrets_free(s);
}

/* ---- the engine: a plain-HTTP upstream that records every head ---- */

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[65536];

static void *
serve_one(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[16384];
	size_t len = 0;
	for (;;) {
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		size_t hl = (size_t)(end + 4 - buf), bl = 0;
		const char *cl = strcasestr(buf, "\r\nContent-Length: ");
		if (cl && cl < end)
			bl = (size_t)atoi(cl + 18);
		while (len < hl + bl) {
			n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
			if (n <= 0)
				break;
			len += (size_t)n;
		}
		buf[len] = '\0';
		pthread_mutex_lock(&seen_lock);
		strncat(seen, buf, sizeof(seen) - strlen(seen) - 1);
		pthread_mutex_unlock(&seen_lock);
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
		if (strstr(buf, " /api/echo ")) {
			/* a debugging endpoint: the request head back, in the
			 * response's fields and in a body sent in two writes
			 * cut inside the value */
			const char *auth = strstr(buf, "Authorization: ");
			size_t al = auth ? strcspn(auth, "\r") : 0;
			char resp[4096];
			int rl = snprintf(
			    resp, sizeof(resp),
			    "HTTP/1.1 200 OK\r\nX-Echo: %.*s\r\nContent-Length: %zu\r\n\r\n",
			    (int)al, auth ? auth : "", hl);
			send(fd, resp, (size_t)rl, MSG_NOSIGNAL);
			const char *tok = strstr(buf, "Bearer ");
			size_t cut = tok ? (size_t)(tok - buf) + 12 : hl / 2;
			send(fd, buf, cut, MSG_NOSIGNAL);
			usleep(100000);
			send(fd, buf + cut, hl - cut, MSG_NOSIGNAL);
		} else {
			send(fd, ok, sizeof(ok) - 1, MSG_NOSIGNAL);
		}
		len = 0;
	}
	close(fd);
	return NULL;
}

static void *
serve(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		pthread_t t;
		pthread_create(&t, NULL, serve_one, (void *)(intptr_t)fd);
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
		listen(fd, 64);
	socklen_t sl = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	*port = ntohs(sa.sin_port);
	return fd;
}

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static char evlog[16384], adv_last[512];

static void
on_event(const struct net_event *ev, void *data)
{
	(void)data;
	pthread_mutex_lock(&ev_lock);
	size_t n = strlen(evlog);
	snprintf(evlog + n, sizeof(evlog) - n, "%s %s %s path=%s inject=%s secrets=%s\n",
		 ev->allowed ? "allow" : "refuse", net_reason_name(ev->reason),
		 ev->host ? ev->host : "-", ev->path ? ev->path : "-",
		 ev->inject ? ev->inject : "-", ev->secrets ? ev->secrets : "-");
	n = strlen(evlog);
	snprintf(evlog + n, sizeof(evlog) - n, "  advice=%s\n", ev->advice ? ev->advice : "");
	snprintf(adv_last, sizeof(adv_last), "%s", ev->advice ? ev->advice : "");
	pthread_mutex_unlock(&ev_lock);
}

struct fx {
	struct net_rules *rules;
	struct net_secrets *s;
	struct net_proxy *p;
	uint16_t up, http, dns;
};

static void
fx_start(struct fx *f)
{
	struct wd_err err = {0};
	char spec[160];
	int ulfd = listen_lo(SOCK_STREAM, &f->up);
	pthread_t t;
	pthread_create(&t, NULL, serve, (void *)(intptr_t)ulfd);
	pthread_detach(t);
	net_rules_new(&f->rules);
	const char *names[] = {"api.test", "other.test", "*.wild.test"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(spec, sizeof(spec), "%s:%u", names[i], f->up);
		cr_assert_eq(net_rules_add_allow(f->rules, spec, NULL, &err), 0, "%s", err.msg);
	}
	cr_assert_eq(net_rules_add_host(f->rules, "api.test=127.0.0.1", &err), 0);
	cr_assert_eq(net_rules_add_host(f->rules, "other.test=127.0.0.1", &err), 0);
	cr_assert_eq(net_rules_add_range(f->rules, "127.0.0.1/32", &err), 0);
	f->s = one_secret("T", TOKEN);
	snprintf(spec, sizeof(spec), "http://api.test:%u/api/ Authorization=Bearer {T}", f->up);
	cr_assert_eq(net_secrets_add_inject(f->s, NET_INJECT_HEADER, spec, &err), 0, "%s", err.msg);
	struct net_config cfg;
	net_config_init(&cfg);
	cfg.sandbox_id = "sec";
	cfg.rules = f->rules;
	cfg.secrets = f->s;
	cr_assert_eq(net_proxy_new(&cfg, on_event, NULL, &f->p, &err), 0, "%s", err.msg);
	int h = listen_lo(SOCK_STREAM, &f->http);
	int d = listen_lo(SOCK_DGRAM, &f->dns);
	cr_assert_eq(net_proxy_serve(f->p, h, -1, d, &err), 0);
	cr_assert_eq(net_proxy_start(f->p, &err), 0);
	seen[0] = evlog[0] = '\0';
}

static void
fx_stop(struct fx *f)
{
	net_proxy_free(f->p);
	net_secrets_free(f->s);
	net_rules_free(f->rules);
}

/* One request through the proxy; the response's first line into out. */
static void
request(uint16_t port, const char *req, char *out, size_t cap)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	send(fd, req, strlen(req), MSG_NOSIGNAL);
	ssize_t n = recv(fd, out, cap - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
}

/* An allowed request's event comes when it ends, which may be just after
 * the client has its answer. */
static bool
ev_wait(const char *needle)
{
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&ev_lock);
		bool r = strstr(evlog, needle) != NULL;
		pthread_mutex_unlock(&ev_lock);
		if (r)
			return true;
		usleep(10000);
	}
	return false;
}

static bool
seen_has(const char *s)
{
	pthread_mutex_lock(&seen_lock);
	bool r = strstr(seen, s) != NULL;
	pthread_mutex_unlock(&seen_lock);
	return r;
}

Test(net_secrets, proxy_injects_for_the_rule_and_refuses_exfiltration)
{
	struct fx f;
	fx_start(&f);
	const char *ph = net_secrets_placeholder(f.s, "T");
	char req[1024], resp[1024];

	/* the rule's host and path: the client's placeholder header is
	 * replaced by the value, and the event names the rule and secret */
	snprintf(req, sizeof(req),
		 "GET http://api.test:%u/api/user HTTP/1.1\r\nHost: x\r\n"
		 "Authorization: Bearer %s\r\nConnection: close\r\n\r\n",
		 f.up, ph);
	request(f.http, req, resp, sizeof(resp));
	cr_assert(strstr(resp, "200 OK"), "%s", resp);
	cr_assert(seen_has("Authorization: Bearer " TOKEN "\r\n"), "%s", seen);
	cr_assert(!seen_has(ph), "the placeholder was forwarded: %s", seen);
	cr_assert(ev_wait("inject=http://api.test"), "%s", evlog);
	cr_assert(strstr(evlog, "secrets=T"), "%s", evlog);
	cr_assert_null(strstr(evlog, TOKEN), "a value in an event: %s", evlog);

	/* an upstream that echoes the credential: the client gets '*'s, in the
	 * fields and in a body whose value arrived in two reads */
	evlog[0] = '\0';
	snprintf(req, sizeof(req),
		 "GET http://api.test:%u/api/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 f.up);
	{
		char all[8192] = "";
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(f.http)};
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		struct timeval tv = {.tv_sec = 5};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		send(fd, req, strlen(req), MSG_NOSIGNAL);
		size_t got = 0;
		ssize_t n;
		while ((n = recv(fd, all + got, sizeof(all) - 1 - got, 0)) > 0)
			got += (size_t)n;
		all[got] = '\0';
		close(fd);
		cr_assert(strstr(all, "200 OK"), "%s", all);
		cr_assert(seen_has("GET /api/echo"), "%s", seen);
		cr_assert_null(strstr(all, TOKEN), "the echoed value reached the client: %s", all);
		cr_assert(strstr(all, "X-Echo: Authorization: Bearer *************************"),
			  "%s", all);
		cr_assert(strstr(all, "\r\n\r\nGET /api/echo"), "the body came: %s", all);
		cr_assert(ev_wait("warden masked"), "%s", evlog);
	}

	/* outside the rule's path: nothing added */
	seen[0] = '\0';
	snprintf(req, sizeof(req),
		 "GET http://api.test:%u/public HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 f.up);
	request(f.http, req, resp, sizeof(resp));
	cr_assert(strstr(resp, "200 OK"));
	cr_assert(!seen_has("Authorization"), "%s", seen);

	/* the placeholder to another host: in a header, the URL, Basic
	 * credentials, the body; all refused before anything is sent */
	char b64[200];
	{
		static const char tbl[] =
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		char cred[100];
		int cl = snprintf(cred, sizeof(cred), "u:%s", ph), o = 0;
		for (int i = 0; i < cl; i += 3) {
			unsigned v = (unsigned char)cred[i] << 16;
			if (i + 1 < cl)
				v |= (unsigned char)cred[i + 1] << 8;
			if (i + 2 < cl)
				v |= (unsigned char)cred[i + 2];
			b64[o++] = tbl[(v >> 18) & 63];
			b64[o++] = tbl[(v >> 12) & 63];
			b64[o++] = i + 1 < cl ? tbl[(v >> 6) & 63] : '=';
			b64[o++] = i + 2 < cl ? tbl[v & 63] : '=';
		}
		b64[o] = '\0';
	}
	const char *fmts[] = {
	    "GET http://other.test:%u/ HTTP/1.1\r\nHost: x\r\nX-Token: %s\r\n\r\n",
	    "GET http://other.test:%u/?t=%s HTTP/1.1\r\nHost: x\r\n\r\n",
	    "GET http://other.test:%u/ HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n",
	    "POST http://other.test:%u/ HTTP/1.1\r\nHost: x\r\nContent-Length: 54\r\n\r\nt=%s&",
	    "GET http://%s.wild.test:%u/ HTTP/1.1\r\nHost: x\r\n\r\n",
	    "CONNECT %s.wild.test:%u HTTP/1.1\r\nHost: x\r\n\r\n",
	};
	const char *where[] = {"X-Token", "URL", "Basic", "body", "host name", "host name"};

	for (size_t i = 0; i < sizeof(fmts) / sizeof(*fmts); i++) {
		seen[0] = evlog[0] = '\0';
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral" /* the table above */
		if (i >= 4)
			snprintf(req, sizeof(req), fmts[i], ph, f.up);
		else
			snprintf(req, sizeof(req), fmts[i], f.up, i == 2 ? b64 : ph);
#pragma GCC diagnostic pop
		request(f.http, req, resp, sizeof(resp));
		cr_assert(strstr(resp, "403") && strstr(resp, "secret-exfiltration"), "%zu: %s", i,
			  resp);
		cr_assert(strstr(resp, where[i]), "%zu: %s", i, resp);
		cr_assert(!seen_has(ph) && !seen_has(b64), "%zu reached the upstream: %s", i, seen);
		cr_assert(ev_wait("refuse secret-exfiltration"), "%zu: %s", i, evlog);
		cr_assert(strstr(evlog, "secrets=T"), "%zu: %s", i, evlog);
	}

	/* the value as a field name: the advice quoting the field is redacted */
	evlog[0] = '\0';
	snprintf(req, sizeof(req),
		 "GET http://other.test:%u/ HTTP/1.1\r\nHost: x\r\nX-%s: 1\r\n\r\n", f.up, TOKEN);
	request(f.http, req, resp, sizeof(resp));
	cr_assert(strstr(resp, "secret-exfiltration"), "%s", resp);
	cr_assert(ev_wait("refuse secret-exfiltration"), "%s", evlog);
	cr_assert_null(strstr(evlog, TOKEN), "%s", evlog);
	cr_assert(strstr(adv_last, "X-{T}"), "%s", adv_last);

	/* the value itself (got back from somewhere), to the right host but
	 * outside the rule: refused, and the event's path is redacted */
	evlog[0] = '\0';
	snprintf(req, sizeof(req), "GET http://api.test:%u/public?k=%s HTTP/1.1\r\nHost: x\r\n\r\n",
		 f.up, TOKEN);
	request(f.http, req, resp, sizeof(resp));
	cr_assert(strstr(resp, "secret-exfiltration"), "%s", resp);
	cr_assert(ev_wait("path=/public?k={T}"), "%s", evlog);
	cr_assert_null(strstr(evlog, TOKEN), "%s", evlog);
	fx_stop(&f);
}

Test(net_secrets, dns_refuses_names_with_a_placeholder)
{
	struct fx f;
	fx_start(&f);
	const char *core = net_secrets_placeholder(f.s, "T") + strlen("warden-placeholder-");
	/* a query for <core[0..20)>.<core[20..)>.x.wild.test, an allowed zone */
	uint8_t q[512] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
	size_t o = 12;
	const char *labels[] = {NULL, NULL, "x", "wild", "test"};
	char a[21], b[13];
	snprintf(a, sizeof(a), "%.20s", core);
	snprintf(b, sizeof(b), "%s", core + 20);
	labels[0] = a;
	labels[1] = b;
	for (size_t i = 0; i < 5; i++) {
		q[o++] = (uint8_t)strlen(labels[i]);
		memcpy(q + o, labels[i], strlen(labels[i]));
		o += strlen(labels[i]);
	}
	q[o++] = 0;
	q[o++] = 0;
	q[o++] = 1; /* A */
	q[o++] = 0;
	q[o++] = 1; /* IN */
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(f.dns)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sendto(fd, q, o, 0, (struct sockaddr *)&sa, sizeof(sa));
	uint8_t r[512];
	ssize_t n = recv(fd, r, sizeof(r), 0);
	cr_assert_gt(n, 4);
	cr_assert_eq(r[3] & 0x0f, NET_DNS_REFUSED);
	close(fd);
	cr_assert(ev_wait("refuse secret-exfiltration"), "%s", evlog);
	cr_assert(strstr(evlog, "secrets=T"), "%s", evlog);
	fx_stop(&f);
}

/* ---- the spec: copies share one set, a change copies it first ---- */
#include "spec/spec.h"

Test(net_secrets, spec_copies_share_the_values_and_copy_before_a_change)
{
	struct wd_err err = {0};
	setenv("WD_TEST_SPEC_TOKEN", TOKEN, 1);
	wd_spec *a = wd_spec_new();
	cr_assert_eq(wd_spec_add_secret(a, "T", "env:WD_TEST_SPEC_TOKEN", &err), 0, "%s", err.msg);
	cr_assert_eq(wd_spec_add_placeholder(a, "TOKEN", "T", &err), 0, "%s", err.msg);
	wd_spec *b = spec_copy(a);
	cr_assert_eq(a->secrets, b->secrets, "a copy shares the locked values");
	cr_assert_str_eq(net_secrets_placeholder(b->secrets, "T"),
			 net_secrets_placeholder(a->secrets, "T"));
	cr_assert_eq(wd_spec_add_inject(a, WD_INJECT_HEADER, "api.test X={T}", &err), 0, "%s",
		     err.msg);
	cr_assert_neq(a->secrets, b->secrets, "a change to a shared set copies it first");
	cr_assert_eq(net_secrets_rule_count(a->secrets), 1);
	cr_assert_eq(net_secrets_rule_count(b->secrets), 0, "the copy is unchanged");
	cr_assert_str_eq(net_secrets_placeholder(b->secrets, "T"),
			 net_secrets_placeholder(a->secrets, "T"), "the placeholder stays");

	/* the jail's environment: the placeholder, never the value; and
	 * the proxy required */
	const char **env = NULL;
	size_t n = 0;
	cr_assert_eq(spec_jail_env(a, &env, &n, &err), -EINVAL, "no proxy");
	cr_assert(strstr(err.msg, "--net allow"), "%s", err.msg);
	wd_spec_set_net(a, WD_NET_PROXY);
	cr_assert_eq(wd_spec_setenv(a, "OTHER", "1", &err), 0);
	cr_assert_eq(spec_jail_env(a, &env, &n, &err), 0, "%s", err.msg);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(env[0], "OTHER=1");
	cr_assert(!strncmp(env[1], "TOKEN=warden-placeholder-", 25), "%s", env[1]);
	cr_assert_null(strstr(env[1], TOKEN));
	free(env);
	cr_assert_eq(wd_spec_setenv(a, "TOKEN", "x", &err), 0);
	cr_assert_eq(spec_jail_env(a, &env, &n, &err), -EINVAL,
		     "--setenv of a placeholder variable");
	cr_assert(strstr(err.msg, "also set"), "%s", err.msg);
	wd_spec_free(a);
	wd_spec_free(b);
}
