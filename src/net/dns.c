/* net/dns.c: parse DNS queries and build answers with ldns.
 *
 * The filter never forwards a query: it answers A/AAAA for names the rules
 * allow, with addresses from hosts entries or from a resolution the proxy
 * makes on the host, NXDOMAIN for every other name, and REFUSED or NOTIMP
 * for everything that is not a plain query.  The question's name is echoed
 * in its original wire form, so resolvers that randomize the case of query
 * names (DNS 0x20) accept the answer.
 */
#include "net/net.h"

#include <ldns/ldns.h>
#include <string.h>

/* Walk the wire-format name: fill the lowercase dotted form, check labels.
 * Returns 0, -1 malformed, -2 a label longer than max_label. */
static int
name_from_wire(const uint8_t *w, size_t len, unsigned max_label, char *out, size_t cap)
{
	size_t i = 0, o = 0;
	int rc = 0;
	while (i < len) {
		uint8_t l = w[i++];
		if (l == 0)
			break;
		if (l > 63 || i + l > len)
			return -1;
		if (l > max_label)
			rc = -2;
		if (o && o + 1 < cap)
			out[o++] = '.';
		for (uint8_t k = 0; k < l; k++) {
			unsigned char c = w[i + k];
			if (c >= 'A' && c <= 'Z')
				c = (unsigned char)(c - 'A' + 'a');
			/* Bytes outside LDH and '_' cannot be in a host name
			 * a rule could allow; '.' inside a label would forge
			 * label boundaries in the text form. */
			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			      c == '_'))
				return -1;
			if (o + 1 >= cap)
				return -1;
			out[o++] = (char)c;
		}
		i += l;
	}
	out[o] = '\0';
	return rc;
}

int
net_dns_parse(const uint8_t *buf, size_t len, unsigned max_label, struct net_dns_query *q,
	      bool *label_refused)
{
	memset(q, 0, sizeof(*q));
	*label_refused = false;
	if (len < 12)
		return -1;
	q->id = (uint16_t)((buf[0] << 8) | buf[1]);
	q->rd = buf[2] & 0x01;
	q->opcode = (buf[2] >> 3) & 0x0f;
	if (buf[2] & 0x80)
		return -1; /* a response: never answer it (no reflection loops) */
	if (q->opcode != LDNS_PACKET_QUERY)
		return NET_DNS_NOTIMP;

	ldns_pkt *pkt = NULL;
	if (ldns_wire2pkt(&pkt, buf, len) != LDNS_STATUS_OK)
		return NET_DNS_FORMERR;
	int rc = 0;
	ldns_rr_list *qs = ldns_pkt_question(pkt);
	if (ldns_pkt_qdcount(pkt) != 1 || !qs || ldns_rr_list_rr_count(qs) != 1 ||
	    ldns_pkt_ancount(pkt) != 0 || ldns_pkt_nscount(pkt) != 0) {
		rc = NET_DNS_FORMERR;
		goto out;
	}
	if (ldns_pkt_edns_udp_size(pkt) > 0) {
		q->edns = true;
		q->edns_size = ldns_pkt_edns_udp_size(pkt);
	}
	ldns_rr *rr = ldns_rr_list_rr(qs, 0);
	q->qtype = (uint16_t)ldns_rr_get_type(rr);
	ldns_rdf *owner = ldns_rr_owner(rr);
	if (!owner || ldns_rdf_get_type(owner) != LDNS_RDF_TYPE_DNAME) {
		rc = NET_DNS_FORMERR;
		goto out;
	}
	size_t wl = ldns_rdf_size(owner);
	if (wl > sizeof(q->wire) || wl < 1) {
		rc = NET_DNS_FORMERR;
		goto out;
	}
	memcpy(q->wire, ldns_rdf_data(owner), wl);
	q->wire_len = (uint16_t)wl;
	q->has_question = true;
	if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN) {
		rc = NET_DNS_REFUSED;
		goto out;
	}
	int nrc = name_from_wire(q->wire, wl, max_label, q->name, sizeof(q->name));
	if (nrc == -2) {
		*label_refused = true;
		rc = NET_DNS_REFUSED;
	} else if (nrc < 0) {
		/* not a host name: no rule can allow it */
		rc = NET_DNS_NXDOMAIN;
	}
out:
	ldns_pkt_free(pkt);
	return rc;
}

static ldns_rr *
answer_rr(const struct net_dns_query *q, const struct sockaddr_storage *a, uint32_t ttl)
{
	ldns_rr *rr = ldns_rr_new();
	ldns_rdf *owner = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_DNAME, q->wire_len, q->wire);
	ldns_rdf *data;
	if (a->ss_family == AF_INET) {
		ldns_rr_set_type(rr, LDNS_RR_TYPE_A);
		data = ldns_rdf_new_frm_data(
		    LDNS_RDF_TYPE_A, 4, &((const struct sockaddr_in *)(const void *)a)->sin_addr);
	} else {
		ldns_rr_set_type(rr, LDNS_RR_TYPE_AAAA);
		data = ldns_rdf_new_frm_data(
		    LDNS_RDF_TYPE_AAAA, 16,
		    &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr);
	}
	if (!rr || !owner || !data)
		abort();
	ldns_rr_set_owner(rr, owner);
	ldns_rr_set_class(rr, LDNS_RR_CLASS_IN);
	ldns_rr_set_ttl(rr, ttl);
	ldns_rr_push_rdf(rr, data);
	return rr;
}

int
net_dns_build(const struct net_dns_query *q, int rcode, const struct sockaddr_storage *addrs,
	      size_t n_addrs, uint32_t ttl, uint8_t *out, size_t cap)
{
	ldns_pkt *r = ldns_pkt_new();
	if (!r)
		abort();
	ldns_pkt_set_id(r, q->id);
	ldns_pkt_set_qr(r, true);
	ldns_pkt_set_opcode(r, (ldns_pkt_opcode)q->opcode);
	ldns_pkt_set_rd(r, q->rd);
	ldns_pkt_set_ra(r, true);
	ldns_pkt_set_rcode(r, (uint8_t)rcode);
	if (q->has_question) {
		ldns_rr *qrr = ldns_rr_new();
		ldns_rdf *owner = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_DNAME, q->wire_len, q->wire);
		if (!qrr || !owner)
			abort();
		ldns_rr_set_owner(qrr, owner);
		ldns_rr_set_type(qrr, (ldns_rr_type)q->qtype);
		ldns_rr_set_class(qrr, LDNS_RR_CLASS_IN);
		ldns_rr_set_question(qrr, true);
		ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, qrr);
	}
	/* Answers fit in 512 bytes: at most 8 of them, one name each. */
	size_t used = 0;
	if (rcode == NET_DNS_NOERROR && q->has_question) {
		int want = q->qtype == LDNS_RR_TYPE_A	   ? AF_INET
			   : q->qtype == LDNS_RR_TYPE_AAAA ? AF_INET6
							   : -1;
		for (size_t i = 0; i < n_addrs && used < 8; i++) {
			if (addrs[i].ss_family != want)
				continue;
			ldns_pkt_push_rr(r, LDNS_SECTION_ANSWER, answer_rr(q, &addrs[i], ttl));
			used++;
		}
	}
	if (q->edns)
		ldns_pkt_set_edns_udp_size(r, 1232);
	uint8_t *wire = NULL;
	size_t size = 0;
	int rc = -1;
	if (ldns_pkt2wire(&wire, r, &size) == LDNS_STATUS_OK && size <= cap) {
		memcpy(out, wire, size);
		rc = (int)size;
	}
	free(wire);
	ldns_pkt_free(r);
	return rc;
}
