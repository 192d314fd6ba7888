/* supervise/result: accessors and the --json object. */
#include "supervise/supervise.h"
#include "net/net.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

WD_API void
wd_result_free(wd_result *r)
{
	if (!r)
		return;
	free(r->out[1]);
	free(r->out[2]);
	free(r);
}

WD_API int
wd_result_status(const wd_result *r)
{
	return r->status;
}
WD_API int
wd_result_exit_code(const wd_result *r)
{
	return r->exit_code;
}
WD_API int
wd_result_signal(const wd_result *r)
{
	return r->signal;
}
WD_API bool
wd_result_timed_out(const wd_result *r)
{
	return r->timed_out;
}
WD_API bool
wd_result_oom_killed(const wd_result *r)
{
	return r->oom_killed;
}

WD_API const char *
wd_result_output(const wd_result *r, int stream, size_t *len)
{
	if (stream != 1 && stream != 2) {
		*len = 0;
		return "";
	}
	*len = r->out_len[stream];
	return r->out[stream] ? r->out[stream] : "";
}
WD_API uint64_t
wd_result_output_total(const wd_result *r, int stream)
{
	return (stream == 1 || stream == 2) ? r->total[stream] : 0;
}
WD_API uint64_t
wd_result_output_omitted(const wd_result *r, int stream)
{
	return (stream == 1 || stream == 2) ? r->omitted[stream] : 0;
}

/* ---- a small JSON writer into a growing buffer ---- */
struct jbuf {
	char *p;
	size_t len, cap;
};

static void
jput(struct jbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = wd_xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
jputs(struct jbuf *b, const char *s)
{
	jput(b, s, strlen(s));
}

static void jprintf(struct jbuf *b, const char *f, ...) WD_PRINTF(2, 3);
static void
jprintf(struct jbuf *b, const char *f, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(tmp, sizeof(tmp), f, ap);
	va_end(ap);
	jput(b, tmp, n < (int)sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Length of a valid UTF-8 sequence at s (max n bytes), or 0. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	if (s[0] < 0x80)
		return 1;
	size_t len;
	uint32_t cp;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* A JSON string; bytes that are not valid UTF-8 become U+FFFD. */
static void
wd_json_string(struct jbuf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	jputs(b, "\"");
	size_t run = 0; /* start of a run of bytes copied verbatim */
	size_t i = 0;
	while (i < n) {
		unsigned char ch = u[i];
		const char *esc = NULL;
		char tmp[8];
		size_t l = 1;
		if (ch == '"')
			esc = "\\\"";
		else if (ch == '\\')
			esc = "\\\\";
		else if (ch == '\n')
			esc = "\\n";
		else if (ch == '\r')
			esc = "\\r";
		else if (ch == '\t')
			esc = "\\t";
		else if (ch < 0x20 || ch == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\u%04x", ch);
			esc = tmp;
		} else if (ch >= 0x80) {
			l = utf8_len(u + i, n - i);
			if (!l) {
				esc = "\\ufffd";
				l = 1;
			}
		}
		if (esc) {
			jput(b, s + run, i - run);
			jputs(b, esc);
			run = i + l;
		}
		i += l;
	}
	jput(b, s + run, n - run);
	jputs(b, "\"");
}

static const char *
isolation_name(enum wd_isolation i)
{
	return i == WD_ISOLATION_PROCESS ? "process" : "container";
}

WD_API char *
wd_result_json(const wd_result *r)
{
	struct jbuf b = {0};
	jprintf(&b, "{\"sandbox_id\":\"%s\",\"status\":%d,", r->sandbox_id, r->status);
	if (r->signal)
		jprintf(&b, "\"exit_code\":null,\"signal\":%d,", r->signal);
	else
		jprintf(&b, "\"exit_code\":%d,\"signal\":null,", r->exit_code);
	jprintf(&b, "\"timed_out\":%s,\"oom_killed\":%s,", r->timed_out ? "true" : "false",
		r->oom_killed ? "true" : "false");
	static const char *const names[] = {NULL, "stdout", "stderr"};
	for (int s = 1; s <= 2; s++) {
		jprintf(&b, "\"%s\":{\"data\":", names[s]);
		wd_json_string(&b, r->out[s] ? r->out[s] : "", r->out_len[s]);
		jprintf(&b, ",\"total_bytes\":%" PRIu64 ",\"omitted_bytes\":%" PRIu64 "},",
			r->total[s], r->omitted[s]);
	}
	jprintf(&b, "\"wall_ms\":%.3f,\"cpu_ms\":%.3f,\"peak_memory_bytes\":%" PRIu64 ",",
		(double)r->wall_ns / 1e6, (double)r->cpu_ns / 1e6, r->peak_memory);
	jprintf(&b, "\"protections\":{\"isolation\":\"%s\",\"namespaces\":[",
		isolation_name(r->isolation));
	if (r->isolation == WD_ISOLATION_CONTAINER)
		jputs(&b, "\"user\",\"mount\",\"pid\",\"net\",\"ipc\",\"uts\",\"cgroup\"");
	jprintf(&b, "],\"seccomp\":%s,\"landlock_abi\":%d,", r->seccomp ? "true" : "false",
		r->landlock_abi);
	if (r->cgroup_version)
		jprintf(&b, "\"cgroup\":\"v%d\",", r->cgroup_version);
	else
		jputs(&b, "\"cgroup\":\"none\",");
	if (r->net_proxy)
		jprintf(&b,
			"\"egress\":{\"tls_intercept\":%s,\"requests\":%" PRIu64
			",\"refused\":%" PRIu64 ",\"dns_queries\":%" PRIu64 ",\"bytes\":%" PRIu64 "},",
			r->tls_intercept ? "true" : "false", r->net_requests, r->net_refused, r->net_dns,
			r->net_bytes);
	jprintf(&b, "\"network\":\"%s\",\"idmapped_workspace\":%s,\"uid\":%d,\"host_uid\":%u,",
		r->net_proxy ? "proxy"
			     : (r->isolation == WD_ISOLATION_CONTAINER ? "loopback" : "host"),
		r->idmapped ? "true" : "false",
		r->isolation == WD_ISOLATION_CONTAINER ? 1000 : (int)r->host_uid,
		r->host_uid);
	jprintf(&b, "\"no_new_privs\":true,\"capabilities\":\"%s\"}}",
		r->bounding_dropped ? "none" : "none held; bounding set kept (unprivileged)");
	return b.p;
}

static void
jfield_str(struct jbuf *b, const char *name, const char *v)
{
	jprintf(b, ",\"%s\":", name);
	if (v)
		wd_json_string(b, v, strlen(v));
	else
		jputs(b, "null");
}

char *
result_net_event_json(const struct net_event *ev)
{
	struct jbuf b = {0};
	jputs(&b, "{\"sandbox_id\":");
	wd_json_string(&b, ev->sandbox_id ? ev->sandbox_id : "", ev->sandbox_id ? strlen(ev->sandbox_id) : 0);
	jfield_str(&b, "protocol", net_proto_name(ev->proto));
	jfield_str(&b, "host", ev->host);
	jprintf(&b, ",\"port\":%u", (unsigned)ev->port);
	jfield_str(&b, "method", ev->method);
	jfield_str(&b, "path", ev->path);
	jfield_str(&b, "rule", ev->rule);
	jprintf(&b, ",\"allowed\":%s", ev->allowed ? "true" : "false");
	jfield_str(&b, "reason", ev->reason ? net_reason_name(ev->reason) : NULL);
	jfield_str(&b, "advice", ev->advice && ev->advice[0] ? ev->advice : NULL);
	jfield_str(&b, "address", ev->addr);
	jprintf(&b, ",\"status\":%d,\"bytes_up\":%" PRIu64 ",\"bytes_down\":%" PRIu64
		    ",\"duration_us\":%" PRIu64 "}",
		ev->status, ev->bytes_up, ev->bytes_down, ev->duration_us);
	return b.p;
}
