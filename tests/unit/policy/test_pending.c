/* wd_approval_list: what a human's channel shows of the paused commands. */
#include "warden.h"

#include "fixture.h"

#include <jansson.h>

static char pstate[PATH_MAX];

static void
psetup(void)
{
	fx_setup();
	snprintf(pstate, sizeof(pstate), "%s/state", fx_root);
	setenv("WARDEN_STATE_DIR", pstate, 1);
}

TestSuite(wd_approval_list, .init = psetup, .fini = fx_teardown);

static void
pause_command(const char *command, char id[65])
{
	struct wd_err e = {0};
	wd_policy *p = NULL;
	cr_assert_eq(wd_policy_load(NULL, &p, &e), 0, "%s", e.msg);
	wd_request *r = wd_request_new();
	cr_assert_eq(wd_request_set_command(r, command, &e), 0);
	cr_assert_eq(wd_request_set_workspace(r, fx_ws, &e), 0, "%s", e.msg);
	wd_decision *d = NULL;
	cr_assert_eq(wd_policy_decide(p, r, &d, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_decision_kind(d), WD_DECISION_PAUSE);
	cr_assert_eq(wd_approval_pending(p, r, d, "/tmp/audit-secret-path", &e), 0, "%s", e.msg);
	snprintf(id, 65, "%s", wd_decision_approval_id(d));
	wd_decision_free(d);
	wd_request_free(r);
	wd_policy_free(p);
}

Test(wd_approval_list, empty_then_pending_then_approved)
{
	struct wd_err e = {0};
	char *out = NULL;
	cr_assert_eq(wd_approval_list(&out, &e), 0, "%s", e.msg);
	cr_expect_str_eq(out, "[]");
	free(out);

	char id[65];
	pause_command("git push origin main", id);
	cr_assert_eq(wd_approval_list(&out, &e), 0, "%s", e.msg);
	json_error_t je;
	json_t *a = json_loads(out, 0, &je);
	cr_assert(json_is_array(a) && json_array_size(a) == 1, "%s", out);
	json_t *o = json_array_get(a, 0);
	cr_expect_str_eq(json_string_value(json_object_get(o, "id")), id);
	cr_expect_str_eq(json_string_value(json_array_get(json_object_get(o, "argv"), 1)), "push");
	cr_expect(json_is_false(json_object_get(o, "approved")));
	/* neither the audit path nor the field digests are shown */
	cr_expect_null(json_object_get(o, "audit"));
	cr_expect_null(json_object_get(o, "fields"));
	json_decref(a);
	free(out);

	cr_assert_eq(wd_approval_grant(id, 0, NULL, NULL, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_approval_list(&out, &e), 0, "%s", e.msg);
	a = json_loads(out, 0, &je);
	cr_expect(json_is_true(json_object_get(json_array_get(a, 0), "approved")), "%s", out);
	json_decref(a);
	free(out);
}
