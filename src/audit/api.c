/* api.c - the public audit functions that need nothing from policy/. */
#include "audit/audit.h"

#include <stdio.h>
#include <string.h>

WD_API int
wd_audit_open(const char *path, wd_audit **out, struct wd_err *err)
{
	if (!path || !*path || !out)
		return wd_err_set(err, WD_E_INVAL, "audit: no path");
	struct audit_log *log = NULL;
	int rc = audit_open(path, &log, err);
	if (rc < 0)
		return rc;
	wd_audit *a = wd_xcalloc(1, sizeof(*a));
	a->log = log;
	*out = a;
	return 0;
}

WD_API void
wd_audit_close(wd_audit *a)
{
	if (!a)
		return;
	audit_close(a->log);
	free(a);
}

WD_API const char *
wd_audit_sandbox_id(const wd_audit *a)
{
	return a ? a->log->sandbox : "";
}

WD_API int
wd_audit_approval(wd_audit *a, const char *what, const char *id, const char *detail,
		  struct wd_err *err)
{
	if (!a)
		return 0;
	if (a->hook) {
		a->hook(a->hook_data, what, id, detail);
		return 0;
	}
	json_t *ev = json_object();
	wd_autofree char *name = wd_xasprintf("approval.%s", what);
	json_object_set_new(ev, "event", audit_json_bytes(name));
	json_object_set_new(ev, "approval", audit_json_bytes(id ? id : ""));
	if (detail)
		json_object_set_new(ev, "detail", audit_json_bytes(detail));
	int rc = audit_append(a->log, ev, err);
	json_decref(ev);
	return rc < 0 ? rc : 0;
}

WD_API int
wd_audit_event(wd_audit *a, const char *event, const char *fields_json, struct wd_err *err)
{
	if (!a)
		return 0;
	json_error_t je;
	json_t *f = fields_json ? json_loads(fields_json, 0, &je) : json_object();
	if (!json_is_object(f)) {
		json_decref(f);
		return wd_err_set(err, WD_E_INVAL, "audit event fields are not a JSON object");
	}
	json_t *ev = json_object();
	json_object_set_new(ev, "event", audit_json_bytes(event ? event : "event"));
	json_object_update_missing(ev, f);
	json_decref(f);
	int rc = audit_append(a->log, ev, err);
	json_decref(ev);
	return rc < 0 ? rc : 0;
}

WD_API int
wd_audit_verify(const char *path, char **report, struct wd_err *err)
{
	struct audit_verify r;
	int rc = audit_verify_file(path, &r, err);
	if (rc < 0)
		return rc;
	if (report) {
		if (r.ok)
			*report = wd_xasprintf("%s: ok, %zu events, chain intact%s", path, r.events,
					       r.head_checked ? ", head matches"
							      : " (no head file: removal of "
								"trailing events cannot be "
								"detected)");
		else
			*report = wd_xasprintf("%s: BROKEN: %s", path, r.message);
	}
	return r.ok ? 0 : 1;
}
