/* Unit tests for net/dns.c: parse queries, build answers (ldns both ways). */
#include "net/net.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <ldns/ldns.h>
#include <string.h>

static size_t
mkquery(uint8_t *buf, uint16_t id, const char *name, uint16_t qtype, uint8_t flags2)
{
	size_t n = 0;
	buf[n++] = (uint8_t)(id >> 8);
	buf[n++] = (uint8_t)id;
	buf[n++] = flags2; /* QR opcode AA TC RD */
	buf[n++] = 0;
	buf[n++] = 0;
	buf[n++] = 1; /* qdcount */
	memset(buf + n, 0, 6);
	n += 6;
	const char *p = name;
	while (*p) {
		size_t l = strcspn(p, ".");
		buf[n++] = (uint8_t)l;
		memcpy(buf + n, p, l);
		n += l;
		p += l;
		if (*p == '.')
			p++;
	}
	buf[n++] = 0;
	buf[n++] = (uint8_t)(qtype >> 8);
	buf[n++] = (uint8_t)qtype;
	buf[n++] = 0;
	buf[n++] = 1; /* IN */
	return n;
}

Test(net_dns_parse, plain_query)
{
	uint8_t b[512];
	struct net_dns_query q;
	bool lab;
	size_t n = mkquery(b, 0x1234, "WwW.Example.com", 1, 0x01);
	cr_assert_eq(net_dns_parse(b, n, 63, &q, &lab), 0);
	cr_expect_eq(q.id, 0x1234);
	cr_expect_eq(q.qtype, 1);
	cr_expect(q.rd);
	cr_expect_str_eq(q.name, "www.example.com");
	cr_expect_not(lab);
}

Test(net_dns_parse, refusals)
{
	uint8_t b[512];
	struct net_dns_query q;
	bool lab;
	size_t n = mkquery(b, 1, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example.com", 1, 0);
	cr_expect_eq(net_dns_parse(b, n, 32, &q, &lab), NET_DNS_REFUSED);
	cr_expect(lab);
	n = mkquery(b, 1, "example.com", 1, 0x80); /* a response */
	cr_expect_eq(net_dns_parse(b, n, 63, &q, &lab), -1);
	n = mkquery(b, 1, "example.com", 1, 0x10); /* opcode 2 STATUS */
	cr_expect_eq(net_dns_parse(b, n, 63, &q, &lab), NET_DNS_NOTIMP);
	cr_expect_eq(net_dns_parse(b, 5, 63, &q, &lab), -1);
	n = mkquery(b, 1, "example.com", 1, 0);
	cr_expect_eq(net_dns_parse(b, 14, 63, &q, &lab), NET_DNS_FORMERR);
	n = mkquery(b, 1, "ex\x01mple.com", 1, 0);
	cr_expect_eq(net_dns_parse(b, n, 63, &q, &lab), NET_DNS_NXDOMAIN);
	n = mkquery(b, 1, "example.com", 1, 0);
	b[n - 1] = 3; /* class CH */
	cr_expect_eq(net_dns_parse(b, n, 63, &q, &lab), NET_DNS_REFUSED);
}

Test(net_dns_build, answers_round_trip)
{
	uint8_t b[512], out[512];
	struct net_dns_query q;
	bool lab;
	size_t n = mkquery(b, 77, "Api.Example.com", 1, 0x01);
	cr_assert_eq(net_dns_parse(b, n, 63, &q, &lab), 0);
	struct sockaddr_storage a[3];
	net_addr_parse("192.0.2.7", 9, 0, &a[0]);
	net_addr_parse("2001:db8::7", 11, 0, &a[1]);
	net_addr_parse("198.51.100.1", 12, 0, &a[2]);
	int len = net_dns_build(&q, NET_DNS_NOERROR, a, 3, 60, out, sizeof(out));
	cr_assert_gt(len, 12);
	ldns_pkt *p = NULL;
	cr_assert_eq(ldns_wire2pkt(&p, out, (size_t)len), LDNS_STATUS_OK);
	cr_expect_eq(ldns_pkt_id(p), 77);
	cr_expect(ldns_pkt_qr(p));
	cr_expect_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	cr_expect_eq(ldns_pkt_ancount(p), 2);
	/* question echoed with the client's case */
	ldns_rdf *owner = ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(p), 0));
	cr_expect_eq(memcmp(ldns_rdf_data(owner),
			    "\x03"
			    "Api",
			    4),
		     0);
	ldns_pkt_free(p);

	len = net_dns_build(&q, NET_DNS_NXDOMAIN, NULL, 0, 60, out, sizeof(out));
	cr_assert_gt(len, 12);
	cr_assert_eq(ldns_wire2pkt(&p, out, (size_t)len), LDNS_STATUS_OK);
	cr_expect_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NXDOMAIN);
	cr_expect_eq(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
}
