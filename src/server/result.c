/* server/result: a wd_result as the model reads it (text and
 * structuredContent, sanitised) and as a harness reads it (the library's
 * JSON with "outcome"). */
#include "server/run.h"
#include "server/base.h"
#include "server/sanitize.h"
#include "server/srv.h"
#include "server/mcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A change set or an apply report, embedded whole: the library writes it
 * for a strict parser (wd_report_json) and the server passes it on
 * without reading inside; what the server reads of it (the files, their
 * results, the ignored entries) it reads through wd_report's accessors. */
json_t *
report_embed(const wd_report *r, size_t max_files)
{
	char *text = wd_report_json(r, max_files);
	json_error_t je;
	json_t *o = text ? json_loads(text, 0, &je) : NULL;
	free(text);
	if (!json_is_object(o))
		abort(); /* the library's writer writes valid JSON: a broken invariant */
	return o;
}

/* ---- a result and a decision, from the accessors ---- */

/* n bytes as a JSON string for a program: every byte as it was, except
 * that a byte that is not valid UTF-8 becomes the text \xNN (as the
 * library's own JSON of it read back always gave); a NUL byte stays one
 * (\u0000). */
static json_t *
bytes_string(const char *b, size_t n)
{
	size_t len = 0;
	char *v = utf8_visible(b ? b : "", b ? n : 0, true, NULL, &len);
	json_t *j = json_stringn(v, len);
	free(v);
	if (!j)
		abort(); /* utf8_visible leaves only UTF-8: a broken invariant */
	return j;
}

static json_t *
text_string(const char *s)
{
	return bytes_string(s, s ? strlen(s) : 0);
}

/* Milliseconds with three decimals, the value wd_result_json() writes. */
static json_t *
ms3(uint64_t ns)
{
	char t[64];
	snprintf(t, sizeof(t), "%.3f", (double)ns / 1e6);
	return json_real(strtod(t, NULL));
}

static const char *
kind_name(enum wd_decision_kind k)
{
	return k == WD_DECISION_DENY ? "deny" : k == WD_DECISION_PAUSE ? "pause" : "allow";
}

json_t *
decision_json(const wd_decision *d)
{
	if (!d)
		return NULL;
	json_t *o = json_object();
	json_object_set_new(o, "decision", json_string(kind_name(wd_decision_kind(d))));
	json_object_set_new(o, "rule", text_string(wd_decision_rule(d)));
	json_object_set_new(o, "reason", text_string(wd_decision_reason(d)));
	if (wd_decision_advice(d)[0])
		json_object_set_new(o, "advice", text_string(wd_decision_advice(d)));
	if (wd_decision_kind(d) == WD_DECISION_PAUSE)
		json_object_set_new(o, "approval_id", text_string(wd_decision_approval_id(d)));
	int argc = 0;
	const char *const *argv = wd_decision_argv(d, &argc);
	json_t *a = json_array();
	for (int i = 0; i < argc; i++)
		json_array_append_new(a, text_string(argv[i]));
	json_object_set_new(o, "argv", a);
	json_object_set_new(o, "policy", text_string(wd_decision_policy(d)));
	return o;
}

/* The protections the command ran under: the one JSON text of the
 * library's still embedded, because it is a nested description (a
 * runtime, egress counters, the proxy's refusals) that the server passes
 * on whole and never reads; the library writes it parseable as it is
 * (wd_result_protections_json). */
static json_t *
protections_json(const wd_result *r)
{
	char *text = wd_result_protections_json(r);
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	free(text);
	if (!json_is_object(o))
		abort(); /* the library's writer writes valid JSON: a broken invariant */
	return o;
}

/* What wd_result_json() describes for a command that ran; with_data:
 * the output windows too. */
static json_t *
result_object(const wd_result *r, bool with_data)
{
	static const char *const names[] = {"", "stdout", "stderr"};
	json_t *o = json_object();
	int sig = wd_result_signal(r);
	json_object_set_new(o, "sandbox_id", text_string(wd_result_sandbox_id(r)));
	json_object_set_new(o, "status", json_integer(wd_result_status(r)));
	json_object_set_new(o, "exit_code",
			    sig ? json_null() : json_integer(wd_result_exit_code(r)));
	json_object_set_new(o, "signal", sig ? json_integer(sig) : json_null());
	json_object_set_new(o, "timed_out", json_boolean(wd_result_timed_out(r)));
	json_object_set_new(o, "oom_killed", json_boolean(wd_result_oom_killed(r)));
	int en = wd_result_exec_errno(r);
	if (en) {
		/* why the program did not start: execve's own failure has no
		 * set-up step, and is the jail's step "6i execve" */
		const char *step = wd_result_exec_step(r);
		const char *name = strerrorname_np(en);
		json_object_set_new(o, "error",
				    json_pack("{s:s, s:s, s:s}", "step", step ? step : "6i execve",
					      "errno", name ? name : "?", "message", strerror(en)));
	}
	for (int n = 1; n <= 2; n++) {
		json_t *st = json_object();
		if (with_data) {
			size_t len = 0;
			const char *data = wd_result_output(r, n, &len);
			json_object_set_new(st, "data", bytes_string(data, len));
		}
		json_object_set_new(st, "total_bytes",
				    json_integer((json_int_t)wd_result_output_total(r, n)));
		json_object_set_new(st, "omitted_bytes",
				    json_integer((json_int_t)wd_result_output_omitted(r, n)));
		json_object_set_new(o, names[n], st);
	}
	json_object_set_new(o, "wall_ms", ms3(wd_result_wall_ns(r)));
	json_object_set_new(o, "cpu_ms", ms3(wd_result_cpu_ns(r)));
	json_object_set_new(o, "peak_memory_bytes",
			    json_integer((json_int_t)wd_result_peak_memory(r)));
	json_object_set_new(o, "policy", text_string(wd_result_policy(r)));
	json_object_set_new(o, "protections", protections_json(r));
	return o;
}

static const char *
outcome_name(enum wd_outcome o)
{
	return o == WD_OUTCOME_DENIED ? "denied" : o == WD_OUTCOME_PAUSED ? "paused" : "ran";
}

json_t *
result_for_harness(const wd_result *r)
{
	enum wd_outcome o = wd_result_outcome(r);
	if (o == WD_OUTCOME_RAN) {
		json_t *j = result_object(r, true);
		json_object_set_new(j, "outcome", json_string("ran"));
		return j;
	}
	json_t *j = json_pack("{s:s, s:i, s:s, s:s}", "outcome", outcome_name(o), "status",
			      wd_result_status(r), "sandbox_id", wd_result_sandbox_id(r), "policy",
			      wd_result_policy(r));
	json_t *d = decision_json(wd_result_decision(r));
	if (d)
		json_object_set_new(j, "decision", d);
	const char *why = wd_result_refusal(r);
	if (why)
		json_object_set_new(j, "refusal", text_string(why));
	return j;
}

/* ---- for a model ---- */

struct text {
	char *p;
	size_t len, cap;
};

static void SRV_PRINTF(2, 3) tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if (t->p && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->p = xrealloc(t->p, t->cap);
		if (t->len == 0)
			t->p[0] = '\0';
	}
}

static json_t *
copy_members(json_t *from, const char *const *keys)
{
	json_t *o = json_object();
	for (size_t i = 0; keys[i]; i++) {
		json_t *v = json_object_get(from, keys[i]);
		if (v)
			json_object_set(o, keys[i], v);
	}
	return o;
}

static json_t *
refusal_for_model(struct srv *s, const wd_result *r)
{
	static const char *const keys[] = {"rule", "reason", "advice", "approval_id", "argv", NULL};
	const wd_decision *d = wd_result_decision(r);
	json_t *dj = decision_json(d);
	json_t *sc = copy_members(dj, keys);
	json_decref(dj);
	bool paused = wd_result_outcome(r) == WD_OUTCOME_PAUSED;
	json_object_set_new(sc, "outcome", json_string(paused ? "paused" : "denied"));
	json_object_set_new(sc, "status", json_integer(wd_result_status(r)));
	json_object_set_new(sc, "policy", json_string(wd_result_policy(r)));
	struct text t = {0};
	if (paused) {
		const char *id = wd_decision_approval_id(d);
		tprintf(
		    &t,
		    "PAUSED: this command needs a human's approval (%s): %s\n"
		    "Nothing ran. You cannot approve it yourself, and must not work around it.\n"
		    "Approval id: %s\n"
		    "Ask the user to approve it (`warden approve %s`, or approval.grant on "
		    "warden's socket), then call run_command again with exactly the same "
		    "command.",
		    wd_decision_rule(d), wd_decision_reason(d), id, id);
	} else if (d && wd_decision_kind(d) == WD_DECISION_DENY) {
		tprintf(&t, "REFUSED by the policy (%s): %s", wd_decision_rule(d),
			wd_decision_reason(d));
		if (wd_decision_advice(d)[0])
			tprintf(&t, "\nadvice: %s", wd_decision_advice(d));
		tprintf(&t, "\nNothing ran.");
	} else {
		const char *why = wd_result_refusal(r);
		tprintf(&t, "REFUSED: %s\nNothing ran.", why ? why : "refused");
		if (why)
			json_object_set_new(sc, "reason", text_string(why));
	}
	json_t *res = mcp_tool_result(s, t.p, sc, true);
	free(t.p);
	return res;
}

/* The window of stream n, sanitised for a model, into sc and t. */
static void
window(struct srv *s, const wd_result *r, int n, json_t *sc, struct text *t)
{
	static const char *const names[] = {"", "stdout", "stderr"};
	size_t len = 0, clean_len = 0;
	const char *data = wd_result_output(r, n, &len);
	char *clean = sanitize_text(data ? data : "", len, true, NULL, &clean_len);
	char key[40];
	json_object_set_new(sc, names[n], json_string(clean));
	snprintf(key, sizeof(key), "%s_total_bytes", names[n]);
	json_object_set_new(sc, key, json_integer((json_int_t)wd_result_output_total(r, n)));
	snprintf(key, sizeof(key), "%s_omitted_bytes", names[n]);
	json_object_set_new(sc, key, json_integer((json_int_t)wd_result_output_omitted(r, n)));
	if (clean_len)
		tprintf(t, "\n--- %s ---\n%s%s", names[n], clean,
			clean[clean_len - 1] == '\n' ? "" : "\n");
	free(clean);
	(void)s;
}

json_t *
result_for_model(struct srv *s, const wd_result *r)
{
	if (wd_result_outcome(r) != WD_OUTCOME_RAN)
		return refusal_for_model(s, r);
	json_t *full = result_object(r, false);
	static const char *const keys[] = {"status",	  "exit_code", "signal",     "timed_out",
					   "oom_killed",  "wall_ms",   "sandbox_id", "policy",
					   "protections", NULL};
	json_t *sc = copy_members(full, keys);
	json_decref(full);
	json_object_set_new(sc, "outcome", json_string("ran"));
	struct text t = {0};
	int status = wd_result_status(r);
	if (wd_result_timed_out(r))
		tprintf(&t, "TIMED OUT (status 124): the command was killed");
	else if (wd_result_oom_killed(r))
		tprintf(&t, "OUT OF MEMORY (status %d): the sandbox was killed", status);
	else if (wd_result_signal(r))
		tprintf(&t, "killed by signal %d (status %d)", wd_result_signal(r), status);
	else if (wd_result_exec_errno(r))
		tprintf(&t, "cannot execute (status %d): %s", status,
			strerror(wd_result_exec_errno(r)));
	else
		tprintf(&t, "exit status %d", status);
	window(s, r, 1, sc, &t);
	window(s, r, 2, sc, &t);
	if (!wd_result_output_total(r, 1) && !wd_result_output_total(r, 2))
		tprintf(&t, "\n(no output)");
	/* a command that ran is not a tool error, whatever its status: the
	 * status says how it went; a kill by warden's limits is */
	json_t *res =
	    mcp_tool_result(s, t.p, sc, wd_result_timed_out(r) || wd_result_oom_killed(r));
	free(t.p);
	return res;
}
