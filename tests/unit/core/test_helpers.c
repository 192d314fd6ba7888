/* test_helpers.c - core's pure helpers: image names, session names (the
 * check before anything is made), the JSON of events, a command's
 * setters. */
#include "core/core.h"
#include "core/image-internal.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Test(image_name, accepted_and_refused)
{
	cr_expect(image_name_ok("python"));
	cr_expect(image_name_ok("py3.11-slim_x"));
	cr_expect(image_name_ok("0lua"));
	char longest[IMAGE_NAME_MAX + 2];
	memset(longest, 'a', IMAGE_NAME_MAX);
	longest[IMAGE_NAME_MAX] = '\0';
	cr_expect(image_name_ok(longest));
	longest[IMAGE_NAME_MAX] = 'a';
	longest[IMAGE_NAME_MAX + 1] = '\0';
	cr_expect_not(image_name_ok(longest), "one byte past the maximum");
	/* a name is a directory entry and a word on mmdebstrap's line */
	const char *bad[] = {"",   "Python", "-x",    ".hidden",   "_x",	  "a/b",
			     "..", "a b",    "a:tag", "sha256:ab", "caf\xc3\xa9", "a\nb"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_not(image_name_ok(bad[i]), "accepted '%s'", bad[i]);
}

Test(image_name, recipe_from_refused_with_the_name)
{
	wd_image_recipe *r = wd_image_recipe_new();
	struct wd_err e = {0};
	cr_expect_lt(wd_image_recipe_set_from(r, "../etc", &e), 0);
	cr_expect(strstr(e.msg, "../etc") != NULL, "%s", e.msg);
	e = (struct wd_err){0};
	cr_expect_eq(wd_image_recipe_set_from(r, "python", &e), 0, "%s", e.msg);
	wd_image_recipe_free(r);
}

/* A session's name is refused before the state directory is touched. */
Test(session_name, refused_before_anything_is_made)
{
	char tmpl[] = "/tmp/wd-unit-core-XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_ctx_new(&ctx, &e), 0);
	char st[64];
	snprintf(st, sizeof(st), "%s/state", tmpl);
	cr_assert_eq(wd_ctx_set_state_dir(ctx, st, &e), 0, "%s", e.msg);
	wd_spec *spec = wd_spec_new();
	const char *bad[] = {"../up", "-rf", "a/b", ".x", "x\x1b[31m", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct wd_session_params p = {.name = bad[i]};
		char id[17];
		e = (struct wd_err){0};
		cr_expect_lt(wd_session_create(ctx, spec, &p, id, &e), 0, "accepted '%s'", bad[i]);
		cr_expect(strstr(e.msg, "bad name") != NULL, "%s: %s", bad[i], e.msg);
	}
	char sbs[96];
	snprintf(sbs, sizeof(sbs), "%s/sandboxes", st);
	cr_expect_eq(access(sbs, F_OK), -1, "a session directory was made");
	wd_spec_free(spec);
	wd_ctx_free(ctx);
	char rm[128];
	snprintf(rm, sizeof(rm), "rm -rf '%s'", tmpl);
	cr_expect_eq(system(rm), 0);
}

static json_t *
event_json(const struct wd_event *ev)
{
	char *text = wd_event_json(ev);
	cr_assert_not_null(text);
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	cr_assert_not_null(o, "not JSON (%s): %s", je.text, text);
	free(text);
	return o;
}

Test(event_json, lifecycle_and_output)
{
	struct wd_event ev = {.kind = WD_EVENT_SANDBOX,
			      .name = "sandbox.created",
			      .sandbox_id = "0123456789abcdef",
			      .detail = "container"};
	json_t *o = event_json(&ev);
	cr_expect_str_eq(json_string_value(json_object_get(o, "sandbox")), "0123456789abcdef");
	cr_expect_str_eq(json_string_value(json_object_get(o, "event")), "sandbox.created");
	cr_expect_str_eq(json_string_value(json_object_get(o, "detail")), "container");
	json_decref(o);

	/* output: the bytes as one string, a NUL as \u0000 and a byte that
	 * is not UTF-8 as \udcXX (util/json.h: visible, and the byte
	 * recoverable), and the count */
	static const char data[] = "a\0b\xff\n";
	struct wd_event out = {.kind = WD_EVENT_OUTPUT,
			       .name = "output",
			       .sandbox_id = "x",
			       .data = data,
			       .len = 5,
			       .stream = 2};
	char *text = wd_event_json(&out);
	cr_expect_str_eq(text, "{\"sandbox\":\"x\",\"event\":\"output\",\"stream\":2,"
			       "\"data\":\"a\\u0000b\\udcff\\n\",\"bytes\":5}");
	free(text);
}

/* A result event that failed before anything ran says why; a detached
 * one says it started. */
Test(event_json, result_failure_and_detached)
{
	struct wd_event ev = {.kind = WD_EVENT_RESULT,
			      .name = "result",
			      .sandbox_id = "x",
			      .failure = "the policy requires landlock"};
	json_t *o = event_json(&ev);
	json_t *res = json_object_get(o, "result");
	cr_expect_str_eq(json_string_value(json_object_get(res, "error")),
			 "the policy requires landlock");
	json_decref(o);
	struct wd_event det = {
	    .kind = WD_EVENT_RESULT, .name = "result", .sandbox_id = "x", .detail = "3"};
	o = event_json(&det);
	res = json_object_get(o, "result");
	cr_expect_str_eq(json_string_value(json_object_get(res, "detached")), "3");
	json_decref(o);
}

/* A hostile detail (a name a model chose) stays one JSON string: quotes,
 * newlines and control bytes escaped, nothing injected as a member. */
Test(event_json, hostile_strings_stay_strings)
{
	const char *evil = "x\",\"event\":\"forged\n\x1b[2J";
	struct wd_event ev = {.kind = WD_EVENT_SANDBOX,
			      .name = "sandbox.created",
			      .sandbox_id = "id",
			      .detail = evil};
	json_t *o = event_json(&ev);
	cr_expect_str_eq(json_string_value(json_object_get(o, "event")), "sandbox.created");
	cr_expect_str_eq(json_string_value(json_object_get(o, "detail")), evil);
	json_decref(o);
}

Test(cmd, setters_refuse_bad_input)
{
	wd_cmd *c = wd_cmd_new();
	struct wd_err e = {0};
	cr_expect_lt(wd_cmd_set_argv(c, 0, NULL, &e), 0);
	e = (struct wd_err){0};
	cr_expect_lt(wd_cmd_setenv(c, "A=B", "x", &e), 0, "a name with '='");
	e = (struct wd_err){0};
	cr_expect_lt(wd_cmd_setenv(c, "", "x", &e), 0, "an empty name");
	e = (struct wd_err){0};
	cr_expect_eq(wd_cmd_setenv(c, "GOOD", "x", &e), 0, "%s", e.msg);
	wd_cmd_free(c);
}

static void *
park(void *arg)
{
	char c;
	(void)!read(*(int *)arg, &c, 1);
	return NULL;
}

/* wd_userns_enter: refused to root (whose cow sandboxes need the host's
 * CAP_SYS_ADMIN) and to a process with threads, the namespace unchanged
 * (an ordinary user's success: warden run in noroot_session.sh). */
Test(userns_enter, refused_to_root_and_to_threads)
{
	char before[64] = "", after[64] = "";
	cr_assert_gt(readlink("/proc/self/ns/user", before, sizeof(before) - 1), 0);
	struct wd_err e = {0};
	if (geteuid() == 0) {
		cr_expect_eq(wd_userns_enter(&e), -EPERM);
		cr_expect(strstr(e.msg, "ordinary user") != NULL, "%s", e.msg);
	} else {
		int p[2];
		cr_assert_eq(pipe(p), 0);
		pthread_t t;
		cr_assert_eq(pthread_create(&t, NULL, park, &p[0]), 0);
		int rc = wd_userns_enter(&e);
		cr_expect(rc == -EINVAL || rc == -ENOTSUP, "with a thread: %d %s", rc, e.msg);
		cr_expect(rc == -ENOTSUP || strstr(e.msg, "threads") != NULL, "%s", e.msg);
		close(p[1]);
		pthread_join(t, NULL);
		close(p[0]);
	}
	cr_assert_gt(readlink("/proc/self/ns/user", after, sizeof(after) - 1), 0);
	cr_expect_str_eq(before, after, "the namespace changed on a refusal");
}
