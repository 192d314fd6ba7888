/* result/result: accessors and the --json object. */
#include "result/result.h"
#include "jail/jail.h"
#include "net/net.h"
#include "util/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void
net_refusal_fini(struct net_refusal *f)
{
	free(f->host);
	free(f->rule);
	free(f->advice);
	memset(f, 0, sizeof(*f));
}

wd_result *
result_new(const char *sandbox_id)
{
	wd_result *r = wd_xcalloc(1, sizeof(*r));
	snprintf(r->sandbox_id, sizeof(r->sandbox_id), "%s", sandbox_id ? sandbox_id : "");
	snprintf(r->policy, sizeof(r->policy), "off");
	r->exit_code = -1;
	return r;
}

WD_API void
wd_result_free(wd_result *r)
{
	if (!r)
		return;
	free(r->out[1]);
	free(r->out[2]);
	wd_decision_free(r->decision);
	free(r->refusal);
	for (size_t i = 0; i < r->n_net_refusals; i++) {
		net_refusal_fini(&r->net_refusals[i]);
		free(r->net_refusal_lines[i]);
	}
	free(r->net_refusals);
	free(r->net_refusal_lines);
	free(r);
}

WD_API enum wd_outcome
wd_result_outcome(const wd_result *r)
{
	return r->outcome;
}

WD_API const wd_decision *
wd_result_decision(const wd_result *r)
{
	return r->decision;
}

WD_API const char *
wd_result_policy(const wd_result *r)
{
	return r->policy;
}

WD_API const char *
wd_result_sandbox_id(const wd_result *r)
{
	return r->sandbox_id;
}

WD_API const char *
wd_result_refusal(const wd_result *r)
{
	if (r->refusal)
		return r->refusal;
	return r->decision && r->outcome != WD_OUTCOME_RAN ? wd_decision_reason(r->decision) : NULL;
}

WD_API int
wd_result_exec_errno(const wd_result *r)
{
	return r->exec_errno;
}

/* "HOST:PORT refused (REASON, rule RULE), N times: ADVICE" -- the host,
 * rule and advice escaped: the host is the name a command in the sandbox
 * asked for, and this line goes to the human's terminal. */
void
result_refusal_lines(wd_result *r)
{
	if (!r->n_net_refusals)
		return;
	r->net_refusal_lines = wd_xcalloc(r->n_net_refusals, sizeof(char *));
	for (size_t i = 0; i < r->n_net_refusals; i++) {
		const struct net_refusal *f = &r->net_refusals[i];
		char *host = wd_esc_text(f->host, strlen(f->host), 0, 256);
		char *rule = f->rule ? wd_esc_text(f->rule, strlen(f->rule), 0, 256) : NULL;
		char *adv = f->advice ? wd_esc_text(f->advice, strlen(f->advice), 0, 512) : NULL;
		char where[32] = "";
		if (!strcmp(f->proto, "dns"))
			snprintf(where, sizeof(where), " (DNS)");
		else if (f->port)
			snprintf(where, sizeof(where), ":%u", f->port);
		char times[32] = "";
		if (f->count > 1)
			snprintf(times, sizeof(times), ", %" PRIu64 " times", f->count);
		r->net_refusal_lines[i] =
		    wd_xasprintf("%s%s refused (%s%s%s)%s%s%s", host[0] ? host : "(no host)", where,
				 f->reason, rule ? ", rule " : "", rule ? rule : "", times,
				 adv ? ": " : "", adv ? adv : "");
		free(host);
		free(rule);
		free(adv);
	}
}

/* The refusals as a JSON array: the result's and the monitor's wire form. */
void
result_refusals_write(struct jw *w, const wd_result *r)
{
	jw_arr_begin(w);
	for (size_t i = 0; i < r->n_net_refusals; i++) {
		const struct net_refusal *f = &r->net_refusals[i];
		jw_obj_begin(w);
		jw_kstr(w, "protocol", f->proto);
		jw_kstr(w, "host", f->host);
		jw_kuint(w, "port", f->port);
		jw_kstr(w, "reason", f->reason);
		jw_kstr(w, "rule", f->rule);
		jw_kstr(w, "advice", f->advice);
		jw_kuint(w, "count", f->count);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

WD_API const char *
wd_result_net_refusal(const wd_result *r, size_t i)
{
	return i < r->n_net_refusals ? r->net_refusal_lines[i] : NULL;
}

WD_API const char *
wd_result_exec_step(const wd_result *r)
{
	if (!r->exec_errno || r->exec_step == JAIL_STEP_NONE || r->exec_step == JAIL_STEP_6I_EXEC)
		return NULL;
	return jail_step_name(r->exec_step);
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

WD_API uint64_t
wd_result_wall_ns(const wd_result *r)
{
	return r->wall_ns;
}
WD_API uint64_t
wd_result_cpu_ns(const wd_result *r)
{
	return r->cpu_ns;
}
WD_API uint64_t
wd_result_peak_memory(const wd_result *r)
{
	return r->peak_memory;
}

/* The "protections" object: the one writer for the result's JSON and
 * for wd_result_protections_json(). */
static void
protections_object(struct jw *w, const wd_result *r, bool with_data)
{
	jw_obj_begin(w);
	jw_kstr(w, "isolation", wd_isolation_name(r->isolation));
	jw_key(w, "namespaces");
	jw_arr_begin(w);
	static const char *const ns[] = {"user", "mount", "pid",    "net",
					 "ipc",	 "uts",	  "cgroup", "time"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(ns); i++)
		if (r->namespaces & (1u << i))
			jw_str(w, ns[i]);
	jw_arr_end(w);
	if (r->runtime[0]) {
		/* a user-space kernel between the command and the host's */
		jw_key(w, "runtime");
		jw_obj_begin(w);
		jw_kstr(w, "name", r->runtime);
		jw_kstr(w, "version", r->runtime_version);
		jw_kstr(w, "platform", r->platform);
		if (r->exec_path[0])
			jw_kstr(w, "exec_path", r->exec_path);
		jw_obj_end(w);
	}
	jw_kbool(w, "seccomp", r->seccomp);
	jw_kint(w, "landlock_abi", r->landlock_abi);
	if (r->cgroup_version) {
		char v[8];
		snprintf(v, sizeof(v), "v%d", r->cgroup_version);
		jw_kstr(w, "cgroup", v);
	} else {
		jw_kstr(w, "cgroup", "none");
	}
	if (r->net_proxy) {
		jw_key(w, "egress");
		jw_obj_begin(w);
		jw_kbool(w, "tls_intercept", r->tls_intercept);
		jw_kuint(w, "requests", r->net_requests);
		jw_kuint(w, "refused", r->net_refused);
		jw_kuint(w, "dns_queries", r->net_dns);
		jw_kuint(w, "bytes", r->net_bytes);
		if (r->n_net_refusals && (with_data || r->refusals_unaudited)) {
			/* this command's distinct refusals, each once with a count
			 * (not in the audit trail's result when each refusal is an
			 * audited network event of its own already: a session's
			 * network events go to its monitor's log instead) */
			jw_key(w, "refusals");
			result_refusals_write(w, r);
			if (r->net_refusals_more)
				jw_kbool(w, "refusals_omitted", true);
		}
		jw_obj_end(w);
	}
	jw_kstr(w, "network", r->network ? r->network : "host");
	jw_kbool(w, "idmapped_workspace", r->idmapped);
	jw_kint(w, "uid", r->uid);
	jw_kuint(w, "host_uid", r->host_uid);
	jw_kbool(w, "no_new_privs", true);
	jw_kstr(w, "capabilities",
		r->bounding_dropped ? "none" : "none held; bounding set kept (unprivileged)");
	jw_obj_end(w);
}

static void
write_protections(struct jw *w, const wd_result *r, bool with_data)
{
	jw_key(w, "protections");
	protections_object(w, r, with_data);
}

WD_API char *
wd_result_protections_json(const wd_result *r)
{
	struct jw w;
	/* read back by a strict parser (the server embeds it in its replies):
	 * a byte that is not UTF-8 (a host name the proxy refused) as \xNN */
	jw_init(&w, JW_HEXBYTES);
	protections_object(&w, r, true);
	return jw_steal(&w);
}

void
result_write(struct jw *w, const wd_result *r, bool with_data)
{
	jw_obj_begin(w);
	jw_kstr(w, "sandbox_id", r->sandbox_id);
	jw_kint(w, "status", r->status);
	jw_key(w, "exit_code");
	if (r->signal)
		jw_null(w);
	else
		jw_int(w, r->exit_code);
	jw_key(w, "signal");
	if (r->signal)
		jw_int(w, r->signal);
	else
		jw_null(w);
	jw_kbool(w, "timed_out", r->timed_out);
	jw_kbool(w, "oom_killed", r->oom_killed);
	if (r->exec_errno) {
		/* why the program did not start: not found, not executable, or
		 * a step of the command's set-up */
		jw_key(w, "error");
		jw_obj_begin(w);
		jw_kstr(w, "step", jail_step_name(r->exec_step));
		jw_kstr(w, "errno", strerrorname_np(r->exec_errno));
		jw_kstr(w, "message", strerror(r->exec_errno));
		jw_obj_end(w);
	}
	static const char *const names[] = {NULL, "stdout", "stderr"};
	for (int s = 1; s <= 2; s++) {
		jw_key(w, names[s]);
		jw_obj_begin(w);
		if (with_data) {
			jw_key(w, "data");
			jw_strn(w, r->out[s] ? r->out[s] : "", r->out_len[s]);
		}
		jw_kuint(w, "total_bytes", r->total[s]);
		jw_kuint(w, "omitted_bytes", r->omitted[s]);
		jw_obj_end(w);
	}
	jw_key(w, "wall_ms");
	jw_double(w, (double)r->wall_ns / 1e6, 3);
	jw_key(w, "cpu_ms");
	jw_double(w, (double)r->cpu_ns / 1e6, 3);
	jw_kuint(w, "peak_memory_bytes", r->peak_memory);
	jw_kstr(w, "policy", r->policy);
	write_protections(w, r, with_data);
	jw_obj_end(w);
}

WD_API char *
wd_result_json(const wd_result *r)
{
	if (r->outcome != WD_OUTCOME_RAN && r->decision && !r->refusal)
		return wd_decision_json(r->decision);
	struct jw w;
	if (r->outcome != WD_OUTCOME_RAN) {
		/* refused before a decision could say so: a tool's route, an
		 * approval refused at the terminal */
		jw_init(&w, 0);
		jw_obj_begin(&w);
		jw_kstr(&w, "sandbox_id", r->sandbox_id);
		jw_kint(&w, "status", r->status);
		jw_kstr(&w, "decision", r->outcome == WD_OUTCOME_PAUSED ? "pause" : "deny");
		jw_kstr(&w, "reason", r->refusal ? r->refusal : "");
		jw_kstr(&w, "policy", r->policy);
		jw_obj_end(&w);
		return jw_steal(&w);
	}
	jw_init(&w, 0);
	result_write(&w, r, true);
	return jw_steal(&w);
}

/* A network event's members, without the braces: the one writer for
 * both places a network event is written (the caller's event stream,
 * core/event.c, and the run's own record, result_net_event_json). */
void
result_net_members(struct jw *w, const struct net_event *ev)
{
	jw_kstr(w, "sandbox_id", ev->sandbox_id ? ev->sandbox_id : "");
	jw_kstr(w, "protocol", net_proto_name(ev->proto));
	jw_kstr(w, "host", ev->host);
	jw_kuint(w, "port", ev->port);
	jw_kstr(w, "method", ev->method);
	jw_kstr(w, "path", ev->path);
	jw_kstr(w, "rule", ev->rule);
	jw_kbool(w, "allowed", ev->allowed);
	jw_kstr(w, "reason", ev->reason ? net_reason_name(ev->reason) : NULL);
	jw_kstr(w, "advice", ev->advice && ev->advice[0] ? ev->advice : NULL);
	jw_kstr(w, "address", ev->addr);
	jw_kint(w, "status", ev->status);
	jw_kuint(w, "bytes_up", ev->bytes_up);
	jw_kuint(w, "bytes_down", ev->bytes_down);
	jw_kuint(w, "duration_us", ev->duration_us);
	/* secrets: names and rule texts, never a value */
	if (ev->inject)
		jw_kstr(w, "inject", ev->inject);
	if (ev->secrets)
		jw_kstr(w, "secrets", ev->secrets);
	if (ev->reason == NET_R_SECRET_PROBE)
		jw_kuint(w, "refusals", ev->refusals);
}

char *
result_net_event_json(const struct net_event *ev)
{
	struct jw w;
	jw_init(&w, 0);
	jw_obj_begin(&w);
	result_net_members(&w, ev);
	jw_obj_end(&w);
	return jw_steal(&w);
}
