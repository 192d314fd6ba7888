/* result/result_wire: a result across a process boundary (a session's
 * monitor to its client), every field by name so that a newer client and
 * an older monitor (or the reverse) still understand each other.  The
 * output windows travel apart, as raw bytes (out[1] then out[2], their
 * lengths here): they are not text, and a JSON string would have to
 * escape them. */
#include "result/result.h"
#include "util/json.h"

#include <jansson.h>
#include <string.h>

void
result_wire_write(struct jw *w, const wd_result *r)
{
	jw_obj_begin(w);
	jw_kstr(w, "sandbox_id", r->sandbox_id);
	jw_kint(w, "status", r->status);
	jw_kint(w, "exit_code", r->exit_code);
	jw_kint(w, "signal", r->signal);
	jw_kbool(w, "timed_out", r->timed_out);
	jw_kbool(w, "oom_killed", r->oom_killed);
	jw_kint(w, "exec_errno", r->exec_errno);
	jw_kint(w, "exec_step", r->exec_step);
	jw_kuint(w, "out_len", r->out_len[1]);
	jw_kuint(w, "err_len", r->out_len[2]);
	jw_kuint(w, "out_total", r->total[1]);
	jw_kuint(w, "err_total", r->total[2]);
	jw_kuint(w, "out_omitted", r->omitted[1]);
	jw_kuint(w, "err_omitted", r->omitted[2]);
	jw_kuint(w, "wall_ns", r->wall_ns);
	jw_kuint(w, "cpu_ns", r->cpu_ns);
	jw_kuint(w, "peak_memory", r->peak_memory);
	jw_kint(w, "isolation", r->isolation);
	jw_kuint(w, "namespaces", r->namespaces);
	jw_kint(w, "uid", r->uid);
	jw_kstr(w, "network", r->network);
	jw_kstr(w, "runtime", r->runtime);
	jw_kstr(w, "runtime_version", r->runtime_version);
	jw_kstr(w, "platform", r->platform);
	jw_kstr(w, "exec_path", r->exec_path);
	jw_kbool(w, "seccomp", r->seccomp);
	jw_kint(w, "landlock_abi", r->landlock_abi);
	jw_kint(w, "cgroup_version", r->cgroup_version);
	jw_kbool(w, "idmapped", r->idmapped);
	jw_kbool(w, "bounding_dropped", r->bounding_dropped);
	jw_kbool(w, "time_ns", r->time_ns);
	jw_kbool(w, "net_proxy", r->net_proxy);
	jw_kbool(w, "tls_intercept", r->tls_intercept);
	jw_kuint(w, "net_requests", r->net_requests);
	jw_kuint(w, "net_refused", r->net_refused);
	jw_kuint(w, "net_dns", r->net_dns);
	jw_kuint(w, "net_bytes", r->net_bytes);
	jw_kuint(w, "host_uid", r->host_uid);
	jw_key(w, "net_refusals");
	result_refusals_write(w, r);
	jw_kbool(w, "net_refusals_more", r->net_refusals_more);
	jw_obj_end(w);
}

static uint64_t
u(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

static int
i(json_t *o, const char *k)
{
	return (int)json_integer_value(json_object_get(o, k));
}

static bool
b(json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

static void
str(json_t *o, const char *k, char *out, size_t cap)
{
	const char *s = json_string_value(json_object_get(o, k));
	snprintf(out, cap, "%s", s ? s : "");
}

wd_result *
result_wire_read(json_t *o, const char *out, size_t out_len, const char *err, size_t err_len)
{
	char id[17];
	str(o, "sandbox_id", id, sizeof(id));
	wd_result *r = result_new(id);
	r->status = i(o, "status");
	r->exit_code = i(o, "exit_code");
	r->signal = i(o, "signal");
	r->timed_out = b(o, "timed_out");
	r->oom_killed = b(o, "oom_killed");
	r->exec_errno = i(o, "exec_errno");
	r->exec_step = i(o, "exec_step");
	const char *data[3] = {NULL, out, err};
	size_t len[3] = {0, out_len, err_len};
	for (int s = 1; s <= 2; s++) {
		r->out[s] = wd_xmalloc(len[s] + 1);
		if (len[s])
			memcpy(r->out[s], data[s], len[s]);
		r->out[s][len[s]] = '\0';
		r->out_len[s] = len[s];
	}
	r->total[1] = u(o, "out_total");
	r->total[2] = u(o, "err_total");
	r->omitted[1] = u(o, "out_omitted");
	r->omitted[2] = u(o, "err_omitted");
	r->wall_ns = u(o, "wall_ns");
	r->cpu_ns = u(o, "cpu_ns");
	r->peak_memory = u(o, "peak_memory");
	r->isolation = (enum wd_isolation)i(o, "isolation");
	r->namespaces = (unsigned)u(o, "namespaces");
	r->uid = i(o, "uid");
	/* the network's name is one of three static strings */
	const char *net = json_string_value(json_object_get(o, "network"));
	static const char *const nets[] = {"loopback", "proxy", "host"};
	r->network = "host";
	for (size_t k = 0; net && k < WD_ARRAY_SIZE(nets); k++)
		if (!strcmp(net, nets[k]))
			r->network = nets[k];
	str(o, "runtime", r->runtime, sizeof(r->runtime));
	str(o, "runtime_version", r->runtime_version, sizeof(r->runtime_version));
	str(o, "platform", r->platform, sizeof(r->platform));
	str(o, "exec_path", r->exec_path, sizeof(r->exec_path));
	r->seccomp = b(o, "seccomp");
	r->landlock_abi = i(o, "landlock_abi");
	r->cgroup_version = i(o, "cgroup_version");
	r->idmapped = b(o, "idmapped");
	r->bounding_dropped = b(o, "bounding_dropped");
	r->time_ns = b(o, "time_ns");
	r->net_proxy = b(o, "net_proxy");
	r->tls_intercept = b(o, "tls_intercept");
	r->net_requests = u(o, "net_requests");
	r->net_refused = u(o, "net_refused");
	r->net_dns = u(o, "net_dns");
	r->net_bytes = u(o, "net_bytes");
	r->host_uid = (unsigned)u(o, "host_uid");
	/* the monitor's record of the command's refusals, bounded as it
	 * is there */
	json_t *refs = json_object_get(o, "net_refusals");
	size_t nrefs = json_is_array(refs) ? json_array_size(refs) : 0;
	if (nrefs > NET_REFUSALS_MAX)
		nrefs = NET_REFUSALS_MAX;
	if (nrefs) {
		r->net_refusals = wd_xcalloc(nrefs, sizeof(*r->net_refusals));
		for (size_t k = 0; k < nrefs; k++) {
			json_t *e = json_array_get(refs, k);
			struct net_refusal *f = &r->net_refusals[r->n_net_refusals++];
			const char *h = json_string_value(json_object_get(e, "host"));
			const char *rl = json_string_value(json_object_get(e, "rule"));
			const char *ad = json_string_value(json_object_get(e, "advice"));
			f->host = wd_xstrdup(h ? h : "");
			f->rule = rl ? wd_xstrdup(rl) : NULL;
			f->advice = ad ? wd_xstrdup(ad) : NULL;
			str(e, "protocol", f->proto, sizeof(f->proto));
			str(e, "reason", f->reason, sizeof(f->reason));
			f->port = (unsigned)u(e, "port");
			f->count = u(e, "count");
		}
	}
	r->net_refusals_more = b(o, "net_refusals_more");
	result_refusal_lines(r);
	return r;
}
