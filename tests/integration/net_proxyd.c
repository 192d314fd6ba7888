/* net-proxyd: run the egress proxy library on host loopback for the
 * integration tests and benchmarks (not installed).
 *
 *   net-proxyd [--allow SPEC]... [--deny SPEC]... [--host NAME=ADDR]...
 *              [--range CIDR]...
 *              [--max-conns N] [--max-bytes N] [--header-timeout-ms N]
 *              [--idle-timeout-ms N] [--dns-rate N] [--dns-burst N]
 *              [--dns-max-label N] [--events FILE] [--netns PATH]
 *              [--tls-intercept] [--upstream-ca FILE] [--ca-out FILE]
 *
 * Binds TCP 127.0.0.1:0 (HTTP proxy), TCP 127.0.0.1:0 (SOCKS5) and UDP
 * 127.0.0.1:0 (DNS) — inside the network namespace at PATH if given,
 * through net_listeners_open() as the supervisor does — prints
 * "http=P socks=P dns=P" on stdout, writes one JSON line per event to
 * FILE (default stderr), and runs until stdin closes or SIGTERM.
 */
#include "net/net.h"

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static FILE *events;

static void
json_str(FILE *f, const char *k, const char *v)
{
	fprintf(f, ",\"%s\":", k);
	if (!v) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
on_event(const struct net_event *ev, void *data)
{
	FILE *f = events;
	fprintf(f, "{\"sandbox\":\"%s\",\"proto\":\"%s\"", ev->sandbox_id,
		net_proto_name(ev->proto));
	json_str(f, "host", ev->host);
	fprintf(f, ",\"port\":%u", ev->port);
	json_str(f, "method", ev->method);
	json_str(f, "path", ev->path);
	json_str(f, "rule", ev->rule);
	fprintf(f, ",\"allowed\":%s", ev->allowed ? "true" : "false");
	json_str(f, "reason", net_reason_name(ev->reason));
	json_str(f, "advice", ev->advice);
	json_str(f, "addr", ev->addr);
	fprintf(f,
		",\"status\":%d,\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64
		",\"duration_us\":%" PRIu64 "}\n",
		ev->status, ev->bytes_up, ev->bytes_down, ev->duration_us);
	fflush(f);
}

static volatile sig_atomic_t stop;
static void
on_term(int sig)
{
	stop = 1;
}

static void
die(const char *what, const struct wd_err *err)
{
	fprintf(stderr, "net-proxyd: %s: %s\n", what, err ? err->msg : "");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"allow", required_argument, NULL, 'a'},
	    {"deny", required_argument, NULL, 'd'},
	    {"host", required_argument, NULL, 'H'},
	    {"range", required_argument, NULL, 'R'},
	    {"max-conns", required_argument, NULL, 'c'},
	    {"max-bytes", required_argument, NULL, 'b'},
	    {"header-timeout-ms", required_argument, NULL, 't'},
	    {"idle-timeout-ms", required_argument, NULL, 'i'},
	    {"dns-rate", required_argument, NULL, 'r'},
	    {"dns-burst", required_argument, NULL, 'B'},
	    {"dns-max-label", required_argument, NULL, 'l'},
	    {"events", required_argument, NULL, 'e'},
	    {"netns", required_argument, NULL, 'n'},
	    {"tls-intercept", no_argument, NULL, 'T'},
	    {"upstream-ca", required_argument, NULL, 'U'},
	    {"ca-out", required_argument, NULL, 'C'},
	    {NULL, 0, NULL, 0},
	};
	struct wd_err err = {0};
	struct net_rules *rules;
	struct net_config cfg;
	const char *netns = NULL, *ca_out = NULL;
	net_rules_new(&rules);
	net_config_init(&cfg);
	cfg.sandbox_id = "test-sandbox";
	events = stderr;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'a':
			if (net_rules_add_allow(rules, optarg, NULL, &err) < 0)
				die("--allow", &err);
			break;
		case 'd':
			if (net_rules_add_deny(rules, optarg, &err) < 0)
				die("--deny", &err);
			break;
		case 'H':
			if (net_rules_add_host(rules, optarg, &err) < 0)
				die("--host", &err);
			break;
		case 'R':
			if (net_rules_add_range(rules, optarg, &err) < 0)
				die("--range", &err);
			break;
		case 'c':
			cfg.max_conns = (unsigned)atoi(optarg);
			break;
		case 'b':
			cfg.max_total_bytes = strtoull(optarg, NULL, 10);
			break;
		case 't':
			cfg.header_timeout_ms = (unsigned)atoi(optarg);
			break;
		case 'i':
			cfg.idle_timeout_ms = (unsigned)atoi(optarg);
			break;
		case 'r':
			cfg.dns_rate = (unsigned)atoi(optarg);
			break;
		case 'B':
			cfg.dns_burst = (unsigned)atoi(optarg);
			break;
		case 'l':
			cfg.dns_max_label = (unsigned)atoi(optarg);
			break;
		case 'e':
			events = fopen(optarg, "a");
			if (!events)
				die("--events", NULL);
			break;
		case 'n':
			netns = optarg;
			break;
		case 'T':
			cfg.tls_intercept = true;
			break;
		case 'U':
			cfg.upstream_ca_file = optarg;
			break;
		case 'C':
			ca_out = optarg;
			break;
		default:
			return 2;
		}
	}
	cfg.rules = rules;

	int nsfd = -1;
	if (netns) {
		nsfd = open(netns, O_RDONLY | O_CLOEXEC);
		if (nsfd < 0)
			die("--netns open", NULL);
	}
	struct net_listen_addrs la;
	net_listen_addrs_init(&la);
	la.http_port = la.socks_port = la.dns_port = 0; /* ephemeral */
	struct net_listeners ls;
	if (net_listeners_open(nsfd, &la, &ls, &err) < 0)
		die("listen", &err);
	if (nsfd >= 0)
		close(nsfd);

	struct net_proxy *p;
	if (net_proxy_new(&cfg, on_event, NULL, &p, &err) < 0)
		die("proxy", &err);
	if (ca_out) {
		FILE *f = fopen(ca_out, "w");
		if (!f || !net_proxy_ca_pem(p) || fputs(net_proxy_ca_pem(p), f) < 0)
			die("--ca-out", NULL);
		fclose(f);
	}
	printf("http=%u socks=%u dns=%u\n", ls.http_port, ls.socks_port, ls.dns_port);
	fflush(stdout);
	if (net_proxy_serve(p, ls.http_fd, ls.socks_fd, ls.dns_fd, &err) < 0 ||
	    net_proxy_start(p, &err) < 0)
		die("serve", &err);

	struct sigaction sa = {.sa_handler = on_term};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!stop) {
		struct pollfd pf = {.fd = 0, .events = POLLIN};
		int n = poll(&pf, 1, 200);
		if (n > 0) {
			char b[256];
			if (read(0, b, sizeof(b)) <= 0)
				break;
		}
	}
	net_proxy_stop(p);
	struct net_stats st;
	net_proxy_stats(p, &st);
	fprintf(stderr,
		"net-proxyd: conns=%" PRIu64 " open=%" PRIu64 " requests=%" PRIu64
		" refused=%" PRIu64 " dns=%" PRIu64 " bytes=%" PRIu64 "\n",
		st.conns_total, st.conns_open, st.requests, st.refused, st.dns_queries,
		st.bytes_total);
	net_proxy_free(p);
	net_rules_free(rules);
	if (events != stderr)
		fclose(events);
	return 0;
}
