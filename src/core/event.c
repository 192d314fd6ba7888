/* core/event: the one event type's accessors and the one place its JSON is
 * written (for the audit trail, the callbacks' wd_event_json, and the log).
 * Nothing is parsed back: results and network events are written from
 * their structs; a decision's members come from the policy module's one
 * writer of them (policy_decision_event). */
#include "core/core.h"
#include "audit/audit.h"
#include "net/net.h"
#include "policy/policy.h"
#include "util/json.h"

#include <string.h>

WD_API enum wd_event_kind
wd_event_kind(const wd_event *ev)
{
	return ev->kind;
}

WD_API const char *
wd_event_name(const wd_event *ev)
{
	return ev->name;
}

WD_API const char *
wd_event_sandbox_id(const wd_event *ev)
{
	return ev->sandbox_id ? ev->sandbox_id : "";
}

WD_API const wd_decision *
wd_event_decision(const wd_event *ev)
{
	return ev->decision;
}

WD_API const wd_result *
wd_event_result(const wd_event *ev)
{
	return ev->result;
}

WD_API const char *
wd_event_output(const wd_event *ev, int *stream, size_t *len)
{
	if (ev->kind != WD_EVENT_OUTPUT) {
		if (stream)
			*stream = 0;
		if (len)
			*len = 0;
		return NULL;
	}
	if (stream)
		*stream = ev->stream;
	if (len)
		*len = ev->len;
	return ev->data;
}

/* A jansson object's members into w (audit_write_members): strings by
 * their bytes, a byte that is not UTF-8 as util/json.h writes it
 * (audit_json_bytes); ASCII when w is. */
static void
json_members(struct jw *w, json_t *obj)
{
	audit_write_members(w, obj);
}

static void
result_members(struct jw *w, const struct wd_event *ev)
{
	if (ev->decision) {
		json_t *argv = policy_decision_argv_json(ev->decision);
		json_t *o = json_pack("{s:o}", "argv", argv);
		json_members(w, o);
		json_decref(o);
	}
	jw_key(w, "result");
	if (ev->result) {
		/* The record is of what ran and how it ended, not of what it
		 * printed: output can hold file contents and secrets, and is
		 * unbounded in number of runs.  Counts, not windows. */
		result_write(w, ev->result, false);
	} else if (ev->detail && !ev->failure) {
		/* a background command (a session's --detach): it started, and
		 * its end is the session's (monitor.log), not this caller's */
		jw_obj_begin(w);
		jw_kstr(w, "detached", ev->detail);
		jw_obj_end(w);
	} else {
		jw_obj_begin(w);
		jw_kstr(w, "error",
			ev->failure ? ev->failure : "warden failed before or while running");
		jw_obj_end(w);
	}
}

static void
kind_members(struct jw *w, const struct wd_event *ev, bool for_audit)
{
	switch (ev->kind) {
	case WD_EVENT_DECISION: {
		json_t *o = policy_decision_event(ev->request, ev->decision);
		json_members(w, o);
		json_decref(o);
		return;
	}
	case WD_EVENT_APPROVAL:
		jw_kstr(w, "event", ev->name);
		jw_kstr(w, "approval", ev->data ? ev->data : "");
		if (ev->detail)
			jw_kstr(w, "detail", ev->detail);
		return;
	case WD_EVENT_ROUTE:
	case WD_EVENT_FILE:
	case WD_EVENT_START:
		jw_kstr(w, "event", ev->name);
		if (ev->fields)
			json_members(w, ev->fields);
		return;
	case WD_EVENT_SANDBOX:
		jw_kstr(w, "event", ev->name);
		if (ev->detail)
			jw_kstr(w, "detail", ev->detail);
		/* session.update: the changes, old and new */
		if (ev->fields)
			json_members(w, ev->fields);
		return;
	case WD_EVENT_NETWORK:
		jw_kstr(w, "event", ev->name);
		result_net_members(w, ev->net);
		return;
	case WD_EVENT_OUTPUT:
		jw_kstr(w, "event", ev->name);
		jw_kint(w, "stream", ev->stream);
		if (!for_audit) {
			jw_key(w, "data");
			jw_strn(w, ev->data, ev->len);
		}
		jw_kuint(w, "bytes", ev->len);
		return;
	case WD_EVENT_RESULT:
		jw_kstr(w, "event", ev->name);
		result_members(w, ev);
		return;
	}
}

void
event_write_members(struct jw *w, const struct wd_event *ev, bool for_audit)
{
	/* the writer is at the start of an object's members: the first one
	 * takes no comma */
	w->first = true;
	kind_members(w, ev, for_audit);
	/* whether the policy judged the command this record belongs to: an
	 * audit trail with --audit and an explicit argv says so on each line
	 * rather than leaving a reader to infer it from a missing decision */
	if (ev->policy_stage)
		jw_kstr(w, "policy_stage", ev->policy_stage);
}

WD_API char *
wd_event_json(const wd_event *ev)
{
	struct jw w;
	jw_init(&w, 0);
	jw_obj_begin(&w);
	jw_kstr(&w, "sandbox", wd_event_sandbox_id(ev));
	struct jw m;
	jw_init(&m, 0);
	event_write_members(&m, ev, false);
	if (m.p && m.len) {
		jw_raw(&w, ",", 1);
		jw_raw(&w, m.p, m.len);
	}
	jw_fini(&m);
	jw_obj_end(&w);
	return jw_steal(&w);
}
