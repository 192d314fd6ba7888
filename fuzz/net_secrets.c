/* Fuzz target: the exfiltration checks of the secrets module, fed what a sandbox
 * controls: a request head (parsed as the proxy parses it, then the URL,
 * every field and decoded Basic credentials searched), a body streamed in
 * uneven reads, a host or DNS name, text to redact from an event, a
 * response to mask; and the inject-rule parser with the header it writes,
 * fed the same bytes as a rule. */
#include "net/net.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct net_secrets *set;

static void
init(void)
{
	struct wd_err err;
	net_secrets_new(&set);
	/* one value with characters that percent-encoding changes, one without */
	if (net_secrets_add(set, "A", "p@ss/w0rd+long", 14, &err) < 0 ||
	    net_secrets_add(set, "B", "ghp_0123456789abcdef", 20, &err) < 0 ||
	    net_secrets_add_inject(set, NET_INJECT_HEADER, "api.test Authorization=Bearer {A}",
				   &err) < 0 ||
	    net_secrets_add_inject(set, NET_INJECT_BASIC, "git.test/r/ u:{B}", &err) < 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!set)
		init();
	const char *buf = (const char *)data;
	char where[128];

	/* 1. a request head */
	struct net_http_head *h = malloc(sizeof(*h));
	if (h && net_http_parse_request(buf, size, h) == 1) {
		(void)net_secrets_find_head(set, 0, buf, h, NULL, NULL, where, sizeof(where));
		(void)net_secrets_find_head(set, 1, buf, h, NULL, NULL, where, sizeof(where));
	}
	free(h);

	/* 2. a body, in reads of 1, 7 and the rest */
	struct net_scan *sc = net_scan_new(set, 2);
	size_t off = 0;
	for (size_t k = 1; off < size; k = k == 1 ? 7 : size) {
		size_t n = size - off < k ? size - off : k;
		(void)net_scan_feed(sc, buf + off, n);
		off += n;
	}
	net_scan_free(sc);

	/* 3. as text: a name, an event's path to redact, an inject rule */
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)net_secrets_find_name(set, s);
	char red[1025];
	size_t rl = strlen(s) < 1024 ? strlen(s) : 1024;
	memcpy(red, s, rl);
	red[rl] = '\0';
	net_secrets_redact(set, red, sizeof(red));
	/* a response: masked in place */
	char *resp = malloc(size + 1);
	if (resp) {
		memcpy(resp, data, size);
		uint64_t found = 0;
		(void)net_secrets_mask(set, resp, size, &found);
		free(resp);
	}
	struct net_secrets *rs;
	struct wd_err err;
	net_secrets_new(&rs);
	(void)net_secrets_add(rs, "A", "p@ss/w0rd+long", 14, &err);
	for (int kind = 0; kind < 2; kind++) {
		if (net_secrets_add_inject(rs, (enum net_inject_kind)kind, s, &err) < 0)
			continue;
		char head[8192];
		for (size_t i = 0; i < net_secrets_rule_count(rs); i++)
			(void)net_secrets_put_header(rs, (unsigned)i, head, sizeof(head));
		struct net_inject_match m;
		net_secrets_match(rs, kind == 0, "api.test", 443, "/x", &m);
	}
	net_secrets_free(rs);
	free(s);
	return 0;
}
