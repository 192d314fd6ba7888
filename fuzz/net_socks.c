/* Fuzz target: the SOCKS5 greeting and request parsers, fed the way the
 * proxy feeds them (greeting first, the request from the bytes after). */
#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool noauth;
	struct net_socks_request req;
	for (size_t cut = 0; cut <= size && cut < 8; cut++)
		(void)net_socks_parse_greeting(data, cut, &noauth);
	int g = net_socks_parse_greeting(data, size, &noauth);
	size_t off = g > 0 ? (size_t)g : 0;
	int r = net_socks_parse_request(data + off, size - off, &req);
	if (r > 0) {
		/* the host goes to the rules as is: exercise that path too */
		struct net_rules *rules;
		net_rules_new(&rules);
		struct wd_err err;
		net_rules_add_allow(rules, "example.com:443", NULL, &err);
		struct net_request q = {.host = req.host, .port = req.port, .tunnel = true};
		struct net_decision d;
		net_rules_decide(rules, &q, &d);
		net_rules_free(rules);
	}
	return 0;
}
