/* net/proxy_secrets.c: credentials in the proxy engine: the
 * inject rules that apply to a request, the fields written into its head,
 * the exfiltration checks of its head, body and host names, and keeping
 * the one copy of a value outside locked memory (the upstream buffer) no
 * longer than it is needed.  The rules and checks themselves are
 * secrets.c and exfil.c. */
#include "net/net-internal.h"

#include <stdio.h>
#include <string.h>

/* A copy of a request head with an injected credential, kept to retry on
 * a fresh connection: wiped, not only freed. */
void
proxy_rehead_free(struct conn *c)
{
	if (c->rehead)
		explicit_bzero(c->rehead, c->rehead_len);
	free(c->rehead);
	c->rehead = NULL;
}

/* uout has held an injected credential: wipe every byte of it
 * but those still to be sent (all of them when the upstream goes).  The
 * buffer is compacted with memmove(), which leaves stale copies behind the
 * live bytes, so "outside the live bytes" is the whole rest. */
void
proxy_wipe_uout(struct conn *c, bool all)
{
	struct buf *b = &c->uout;
	if (!c->secret_buf || !b->d)
		return;
	if (all || b->len == 0) {
		explicit_bzero(b->d, BUF_CAP);
		return;
	}
	explicit_bzero(b->d, b->off);
	explicit_bzero(b->d + b->off + b->len, BUF_CAP - b->off - b->len);
}

/* n bytes of uout went upstream: once the head that carried a credential
 * is all out, nothing of it stays in the buffer. */
void
proxy_wrote_up(struct conn *c, size_t n)
{
	if (!c->secret_left)
		return;
	c->secret_left = n >= c->secret_left ? 0 : c->secret_left - n;
	if (c->secret_left == 0)
		proxy_wipe_uout(c, false);
}

void
proxy_refuse_exfil(struct conn *c, int i, const char *where)
{
	const struct net_secrets *s = c->p->secrets;
	const char *name = net_secrets_name(s, (unsigned)i);
	char adv[400];
	snprintf(adv, sizeof(adv),
		 "%s carries the placeholder or the value of secret %s, which goes only to the "
		 "destinations its inject rules name; warden adds it there itself, so send "
		 "requests without it",
		 where, name);
	c->inj_rules[0] = '\0';
	snprintf(c->inj_names, sizeof(c->inj_names), "%s", name);
	struct net_proxy *p = c->p;
	enum net_proto proto = c->proto;
	proxy_refuse(c, 403, NET_R_EXFIL, NULL, adv);
	proxy_exfil_alert(p, proto, i);
}

/* One refusal is an ordinary mistake or a tripwire; many are a program
 * working at the secret: trying encodings and destinations for a
 * placeholder it believes is the credential, or guessing at the value
 * (the response window was once an oracle for its prefixes).
 * Each refusal has its own event already; this adds one event an operator
 * can alert on, at the NET_PROBE_ALERT_AT-th refusal in the sandbox and
 * each time the count doubles after (3, 6, 12, ...), so a sandbox that
 * keeps trying stays visible without an alert per attempt. */
void
proxy_exfil_alert(struct net_proxy *p, enum net_proto proto, int i)
{
	if (i >= 0 && i < 64)
		p->exfil_secrets |= 1ull << i;
	uint64_t n = ++p->exfil_refusals;
	if (n < NET_PROBE_ALERT_AT || n % NET_PROBE_ALERT_AT)
		return;
	uint64_t m = n / NET_PROBE_ALERT_AT;
	if (m & (m - 1)) /* not a power of two */
		return;
	if (!p->cb)
		return;
	char names[256], adv[512];
	net_secrets_names(p->secrets, p->exfil_secrets, names, sizeof(names));
	snprintf(adv, sizeof(adv),
		 "%llu requests from this sandbox carried the placeholder or the value of %s to "
		 "destinations its inject rules do not name: something in the sandbox is trying "
		 "to obtain or send the credential; look at what it runs",
		 (unsigned long long)n, names);
	struct net_event ev = {
	    .sandbox_id = p->sandbox_id,
	    .proto = proto,
	    .allowed = false,
	    .reason = NET_R_SECRET_PROBE,
	    .advice = adv,
	    .secrets = names,
	    .refusals = n,
	};
	p->cb(&ev, p->cb_data);
}

bool
proxy_host_exfil(struct conn *c, const char *host)
{
	int i = net_secrets_find_name(c->p->secrets, host);
	if (i < 0)
		return false;
	proxy_refuse_exfil(c, i, "the host name");
	return true;
}

/* A client field that does not go upstream: hop-by-hop, or one an inject
 * rule sets (added or replaced: the client's own value never goes). */
bool
proxy_dropped_field(const char *buf, const struct net_http_head *h, unsigned i, void *arg)
{
	struct conn *c = arg;
	const struct net_span n = h->headers[i].name;
	return net_http_hop_by_hop(buf, h, i, true) ||
	       (c->inj.n && net_secrets_sets_header(c->p->secrets, &c->inj, buf + n.off, n.len));
}

/* The fields of the inject rules that apply, written straight into uout
 * (the one copy of a credential outside its locked memory;
 * proxy_wrote_up() wipes it once sent). */
bool
proxy_put_injected(struct conn *c)
{
	struct buf *o = &c->uout;
	const struct net_secrets *s = c->p->secrets;
	size_t rl = 0;
	for (unsigned k = 0; k < c->inj.n; k++) {
		if (proxy_buf_space(o) == 0)
			return false;
		ssize_t n = net_secrets_put_header(s, c->inj.rule[k], o->d + o->off + o->len,
						   proxy_buf_space(o));
		if (n < 0)
			return false;
		o->len += (size_t)n;
		c->secret_buf = true;
		const char *t = net_secrets_rule_text(s, c->inj.rule[k]);
		size_t room = sizeof(c->inj_rules) - rl;
		int w = snprintf(c->inj_rules + rl, room, "%s%s", rl ? "; " : "", t);
		rl = w > 0 && (size_t)w < room ? rl + (size_t)w : sizeof(c->inj_rules) - 1;
	}
	net_secrets_names(s, c->inj.bound, c->inj_names, sizeof(c->inj_names));
	return true;
}

/* A request body's content as it streams (net_body's content hook). */
void
proxy_body_content(void *arg, const char *p, size_t n)
{
	struct conn *c = arg;
	int hit = net_scan_feed(c->scan, p, n);
	if (hit >= 0 && c->exfil < 0)
		c->exfil = hit;
}

/* Secrets and this request: which inject rules apply, and whether the
 * head carries a secret they do not bind to this destination (refused).
 * The body is checked as it streams (proxy_body_content).  Returns false
 * if the request was refused. */
bool
proxy_secrets_gate(struct conn *c, const char *buf, const char *host, uint16_t port)
{
	const struct net_secrets *s = c->p->secrets;
	if (!s)
		return true;
	char norm[256];
	if (net_host_normalize(host, strlen(host), norm, sizeof(norm)) < 0)
		snprintf(norm, sizeof(norm), "%s", host);
	net_secrets_match(s, c->proto == NET_PROTO_HTTPS, norm, port, c->path, &c->inj);
	char where[128];
	int i = net_secrets_find_head(s, c->inj.bound, buf, c->h, proxy_dropped_field, c, where,
				      sizeof(where));
	if (i >= 0) {
		memset(&c->inj, 0, sizeof(c->inj));
		proxy_refuse_exfil(c, i, where);
		return false;
	}
	if (c->h->body != NET_BODY_NONE)
		c->scan = net_scan_new(s, c->inj.bound);
	return true;
}

/* How much of the response body in uin to pass on now (at most k): all of
 * it but the last net_secrets_hold_len() bytes, which wait for more,
 * unless the body ends within what is here (then no value can complete
 * after it) or the upstream has closed.  The window is the same for every
 * byte: holding only a tail that begins a value made the hold an oracle
 * for the value's prefixes (net_secrets_hold_len).  Whether the
 * body ends here depends on the upstream's framing, never on a value. */
size_t
proxy_response_window(struct conn *c, size_t k)
{
	const struct net_secrets *s = c->p->secrets;
	if (!s || c->u_eof)
		return k;
	size_t hold = net_secrets_hold_len(s);
	if (!hold)
		return k;
	const char *d = c->uin.d + c->uin.off;
	struct net_body probe = c->rbody; /* a copy: does the body end here? */
	probe.content = NULL;
	ssize_t used = net_body_feed(&probe, d, c->uin.len);
	if (used < 0 || probe.done)
		return k;
	size_t limit = c->uin.len > hold ? c->uin.len - hold : 0;
	return k < limit ? k : limit;
}

/* The event's advice when a response was masked. */
const char *
proxy_masked_advice(struct conn *c)
{
	static __thread char adv[320];
	if (!c->masked)
		return NULL;
	char names[256];
	net_secrets_names(c->p->secrets, c->masked, names, sizeof(names));
	snprintf(adv, sizeof(adv),
		 "the response carried the value of %s, which warden masked: the sandbox never "
		 "holds it",
		 names);
	if (c->inj_names[0] == '\0')
		snprintf(c->inj_names, sizeof(c->inj_names), "%s", names);
	return adv;
}
