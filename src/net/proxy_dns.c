/* net/proxy_dns.c: the DNS filter of the proxy engine (proxy.c), and the
 * resolver pool's finished jobs. */
#include "net/net-internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* ------------------------------------------------------------------- DNS */

static void
dns_event(struct net_proxy *p, const struct net_dns_query *q, bool allowed, enum net_reason reason,
	  int rcode, size_t in, size_t out, uint64_t t0, const char *addr)
{
	char advice[160] = "";
	atomic_fetch_add(&p->st_dns, 1);
	if (!allowed)
		atomic_fetch_add(&p->st_refused, 1);
	if (!p->cb)
		return;
	/* A flood past the rate limit must not become an audit flood: one
	 * event per second of it, which counts the queries refused since. */
	if (reason == NET_R_RATE_LIMIT) {
		if (p->now < p->rl_window_end) {
			p->rl_suppressed++;
			return;
		}
		if (p->rl_suppressed)
			snprintf(advice, sizeof(advice),
				 "%llu more queries refused by the rate limit before this one; "
				 "resolve less often",
				 (unsigned long long)p->rl_suppressed);
		else
			snprintf(advice, sizeof(advice),
				 "too many DNS queries; resolve less often");
		p->rl_suppressed = 0;
		p->rl_window_end = p->now + proxy_ms(1000);
	} else if (reason == NET_R_NO_RULE) {
		snprintf(advice, sizeof(advice), "no rule allows this name; work without it");
	}
	const char *secret = NULL;
	int i = -1;
	if (reason == NET_R_EXFIL) {
		i = net_secrets_find_name(p->secrets, q->name);
		secret = i >= 0 ? net_secrets_name(p->secrets, (unsigned)i) : NULL;
		snprintf(advice, sizeof(advice),
			 "the name carries the placeholder or the value of secret %s, which never "
			 "leaves by DNS",
			 secret ? secret : "?");
	}
	/* the event must not carry a value the query did */
	char name[sizeof(q->name)];
	snprintf(name, sizeof(name), "%s", q->name);
	net_secrets_redact(p->secrets, name, sizeof(name));
	struct net_event ev = {
	    .sandbox_id = p->sandbox_id,
	    .proto = NET_PROTO_DNS,
	    .secrets = secret,
	    .host = name[0] ? name : NULL,
	    .port = q->qtype,
	    .allowed = allowed,
	    .reason = reason,
	    .advice = advice,
	    .addr = addr,
	    .status = rcode,
	    .bytes_up = in,
	    .bytes_down = out,
	    .duration_us = (p->now - t0) / 1000,
	};
	p->cb(&ev, p->cb_data);
	if (reason == NET_R_EXFIL)
		proxy_exfil_alert(p, NET_PROTO_DNS, i);
}

static void
dns_answer(struct net_proxy *p, const struct net_dns_query *q, int rcode,
	   const struct sockaddr_storage *addrs, size_t n, const struct sockaddr_storage *to,
	   socklen_t tolen, size_t in, bool allowed, enum net_reason reason, uint64_t t0)
{
	uint8_t out[1232];
	struct sockaddr_storage keep[NET_JOB_MAX_ADDRS];
	size_t kept = 0;
	char first[INET6_ADDRSTRLEN + 8] = "";
	/* Only addresses the proxy would connect to are answered: an allowed
	 * name that resolves into a private range shows nothing of it. */
	for (size_t i = 0; i < n && kept < NET_JOB_MAX_ADDRS; i++) {
		struct net_decision d = {0};
		if (net_rules_check_addr(p->rules, (const struct sockaddr *)&addrs[i], 0, &d))
			keep[kept++] = addrs[i];
	}
	if (rcode == NET_DNS_NOERROR && n && !kept) {
		allowed = false;
		reason = NET_R_ADDR_RANGE;
	}
	if (allowed && rcode == NET_DNS_NOERROR)
		for (size_t i = 0; i < kept; i++)
			proxy_alias_add(p, &keep[i], q->name);
	for (size_t i = 0; i < kept && !first[0]; i++) {
		uint16_t want = keep[i].ss_family == AF_INET ? 1 : 28;
		if (want == q->qtype)
			proxy_addr_text(&keep[i], first, sizeof(first));
	}
	int len = net_dns_build(q, rcode, keep, kept, p->cfg.dns_ttl, out, sizeof(out));
	if (len > 0) {
		/* UDP to the sandbox's own socket: a lost answer is retried by
		 * the client, so a failed send is only logged. */
		if (sendto(p->dns_fd, out, (size_t)len, MSG_NOSIGNAL, (const struct sockaddr *)to,
			   tolen) < 0)
			wd_log(WD_LOG_DEBUG, "dns sendto: %s", strerror(errno));
	}
	dns_event(p, q, allowed, reason, rcode, in, len > 0 ? (size_t)len : 0, t0,
		  first[0] ? first : NULL);
}

static bool
dns_rate_ok(struct net_proxy *p)
{
	double elapsed = (double)(p->now - p->dns_refill) / 1e9;
	p->dns_refill = p->now;
	p->dns_tokens += elapsed * p->cfg.dns_rate;
	if (p->dns_tokens > p->cfg.dns_burst)
		p->dns_tokens = p->cfg.dns_burst;
	if (p->dns_tokens < 1.0)
		return false;
	p->dns_tokens -= 1.0;
	return true;
}

void
proxy_dns_read(struct net_proxy *p)
{
	for (int i = 0; i < 64; i++) {
		uint8_t in[1500];
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(p->dns_fd, in, sizeof(in), 0, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		struct net_dns_query q;
		bool label;
		int rc = net_dns_parse(in, (size_t)n, p->cfg.dns_max_label, &q, &label);
		if (rc < 0)
			continue; /* not a query: no answer, nothing to report */
		uint64_t t0 = p->now;
		if (!dns_rate_ok(p)) {
			dns_answer(p, &q, NET_DNS_REFUSED, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_RATE_LIMIT, t0);
			continue;
		}
		if (rc > 0 && net_secrets_find_name(p->secrets, q.name) >= 0) {
			dns_answer(p, &q, rc, NULL, 0, &from, fl, (size_t)n, false, NET_R_EXFIL,
				   t0);
			continue;
		}
		if (rc > 0) {
			dns_answer(p, &q, rc, NULL, 0, &from, fl, (size_t)n, false,
				   label		    ? NET_R_LABEL
				   : rc == NET_DNS_NXDOMAIN ? NET_R_BAD_HOST
							    : NET_R_MALFORMED,
				   t0);
			continue;
		}
		/* Before the rules: a name under an allowed wildcard would be
		 * resolved on the host, and its labels would reach that zone's
		 * name servers (docs/network.md, "What a wildcard still lets
		 * out"); a name holding a secret goes nowhere, allowed or not,
		 * and is on the record as an attempt. */
		if (net_secrets_find_name(p->secrets, q.name) >= 0) {
			dns_answer(p, &q, NET_DNS_REFUSED, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_EXFIL, t0);
			continue;
		}
		enum net_reason why;
		if (!net_rules_name_allowed(p->rules, q.name, &why)) {
			dns_answer(p, &q, NET_DNS_NXDOMAIN, NULL, 0, &from, fl, (size_t)n, false,
				   why, t0);
			continue;
		}
		if (q.qtype != 1 && q.qtype != 28) {
			dns_answer(p, &q, NET_DNS_REFUSED, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_QTYPE, t0);
			continue;
		}
		struct sockaddr_storage addrs[NET_JOB_MAX_ADDRS];
		size_t na = net_rules_lookup_host(p->rules, q.name, addrs, NET_JOB_MAX_ADDRS);
		if (na) {
			dns_answer(p, &q, NET_DNS_NOERROR, addrs, na, &from, fl, (size_t)n, true,
				   NET_R_NONE, t0);
			continue;
		}
		if (p->dns_inflight >= DNS_MAX_INFLIGHT) {
			dns_answer(p, &q, NET_DNS_SERVFAIL, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_RATE_LIMIT, t0);
			continue;
		}
		struct net_job *j = wd_xcalloc(1, sizeof(*j));
		j->dns = true;
		j->owner = p;
		j->q = q;
		j->client = from;
		j->client_len = fl;
		j->t0 = t0;
		j->qlen = (size_t)n;
		snprintf(j->host, sizeof(j->host), "%s", q.name);
		if (net_resolver_submit(p->res, j) < 0) {
			free(j);
			dns_answer(p, &q, NET_DNS_SERVFAIL, NULL, 0, &from, fl, (size_t)n, false,
				   NET_R_RESOLVE, t0);
			continue;
		}
		p->dns_inflight++;
	}
}

void
proxy_resolver_done(struct net_proxy *p)
{
	struct net_job *j = net_resolver_take_done(p->res);
	while (j) {
		struct net_job *next = j->next;
		if (j->dns) {
			p->dns_inflight--;
			if (j->err)
				dns_answer(p, &j->q, NET_DNS_NXDOMAIN, NULL, 0, &j->client,
					   j->client_len, j->qlen, false, NET_R_RESOLVE, j->t0);
			else
				dns_answer(p, &j->q, NET_DNS_NOERROR, j->addrs, j->n_addrs,
					   &j->client, j->client_len, j->qlen, true, NET_R_NONE,
					   j->t0);
		} else if (j->owner) {
			struct conn *c = j->owner;
			c->job = NULL;
			if (j->err) {
				char adv[200];
				snprintf(adv, sizeof(adv), "%s does not resolve; check the name",
					 c->host);
				proxy_refuse(c, 502, NET_R_RESOLVE, NULL, adv);
			} else {
				memcpy(c->addrs, j->addrs, sizeof(c->addrs));
				c->n_addrs = j->n_addrs;
				proxy_addresses_ready(c);
			}
			proxy_conn_step(c);
		}
		free(j);
		j = next;
	}
}
