/* Fuzz target: DNS query handling (parse with ldns, decide on the name,
 * build the answer with ldns, and check the answer parses back). */
#include "net/net.h"

#include <ldns/ldns.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_dns_query q;
	bool label;
	int rc = net_dns_parse(data, size, 40, &q, &label);
	if (rc < 0)
		return 0;
	struct net_rules *rules;
	struct wd_err err;
	net_rules_new(&rules);
	net_rules_add_allow(rules, "*.example.com", NULL, &err);
	enum net_reason why;
	struct sockaddr_storage a[2];
	net_addr_parse("93.184.216.34", 13, 0, &a[0]);
	net_addr_parse("2606:2800:220:1::1", 18, 0, &a[1]);
	if (rc == 0 && !net_rules_name_allowed(rules, q.name, &why))
		rc = NET_DNS_NXDOMAIN;
	uint8_t out[1232];
	int len = net_dns_build(&q, rc, a, 2, 60, out, sizeof(out));
	if (len > 0) {
		ldns_pkt *p = NULL;
		if (ldns_wire2pkt(&p, out, (size_t)len) != LDNS_STATUS_OK)
			abort(); /* our own answers must always parse */
		ldns_pkt_free(p);
	}
	net_rules_free(rules);
	return 0;
}
