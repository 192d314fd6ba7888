/* Approvals: id stability, mismatch on each field, single use, expiry,
 * near-miss reporting, and the flow through the public API. */
#include "policy/policy.h"
#include "policy/store.h"

#include "audit/audit.h"
#include "fixture.h"

#include <sys/wait.h>
#include <time.h>

static struct config_policy *pol;
static char state[PATH_MAX];

static void
setup(void)
{
	struct wd_err e = {0};
	fx_setup();
	cr_assert_eq(config_load_default(&pol, &e), 0, "%s", e.msg);
	snprintf(state, sizeof(state), "%s/state", fx_root);
	setenv("WARDEN_STATE_DIR", state, 1);
}

static void
teardown(void)
{
	config_policy_free(pol);
	fx_teardown();
}

TestSuite(policy_approval_id, .init = setup, .fini = teardown);
TestSuite(policy_approval_store, .init = setup, .fini = teardown);
TestSuite(wd_approval, .init = setup, .fini = teardown);

static const char *const env1[] = {"LANG=C", "TOKEN=abc"};

static struct policy_request
base_req(void)
{
	return (struct policy_request){
	    .command = "git push origin main",
	    .workspace_fd = fx_wfd,
	    .workspace = fx_ws,
	    .cwd = ".",
	    .env = env1,
	    .nenv = 2,
	    .workspace_id = "1:2:/ws",
	};
}

static void
id_of(const struct config_policy *p, struct policy_request r, int argc, const char *const *argv,
      char id[65], char fields[POLICY_ID_FIELDS][65])
{
	policy_approval_id(p, &r, argc, argv, id, fields);
}

Test(policy_approval_id, stable_and_hex)
{
	const char *argv[] = {"git", "push", "origin", "main", NULL};
	char a[65], b[65];
	id_of(pol, base_req(), 4, argv, a, NULL);
	id_of(pol, base_req(), 4, argv, b, NULL);
	cr_expect_str_eq(a, b);
	cr_expect_eq(strlen(a), 64);
	cr_expect_eq(strspn(a, "0123456789abcdef"), 64);
	/* the decision carries the same id */
	struct policy_decision d;
	policy_decision_init(&d);
	struct policy_request r = base_req();
	cr_assert_eq(policy_decide(pol, &r, &d, NULL), 0);
	cr_assert_eq(d.kind, POLICY_PAUSE);
	cr_expect_str_eq(d.approval_id, a);
	policy_decision_fini(&d);
}

Test(policy_approval_id, each_field_changes_the_id)
{
	const char *argv[] = {"git", "push", "origin", "main", NULL};
	const char *argv2[] = {"git", "push", "origin", "main2", NULL};
	const char *argv3[] = {"git", "push", "originmain", "", NULL};
	char base[65], id[65], f0[POLICY_ID_FIELDS][65], f[POLICY_ID_FIELDS][65];
	id_of(pol, base_req(), 4, argv, base, f0);

	/* argv: one argument differs; and the split between words matters */
	id_of(pol, base_req(), 4, argv2, id, f);
	cr_expect_str_neq(id, base);
	cr_expect_str_neq(f[0], f0[0]);
	cr_expect_str_eq(f[1], f0[1]);
	id_of(pol, base_req(), 4, argv3, id, f);
	cr_expect_str_neq(id, base);
	id_of(pol, base_req(), 3, argv, id, f);
	cr_expect_str_neq(id, base);

	struct policy_request r = base_req();
	r.cwd = "sub";
	id_of(pol, r, 4, argv, id, f);
	cr_expect_str_neq(id, base);
	cr_expect_str_neq(f[1], f0[1]);
	cr_expect_str_eq(f[0], f0[0]);

	static const char *const env2[] = {"LANG=C", "TOKEN=abd"};
	r = base_req();
	r.env = env2;
	id_of(pol, r, 4, argv, id, f);
	cr_expect_str_neq(id, base);
	cr_expect_str_neq(f[2], f0[2]);
	r.nenv = 1;
	r.env = env1;
	id_of(pol, r, 4, argv, id, f);
	cr_expect_str_neq(id, base);

	r = base_req();
	r.workspace_id = "1:3:/ws";
	id_of(pol, r, 4, argv, id, f);
	cr_expect_str_neq(id, base);
	cr_expect_str_neq(f[3], f0[3]);

	/* the system: an image's rootfs (by identity, else by path) or the
	 * host; the same words elsewhere run other programs */
	r = base_req();
	r.system_root = "/images/a/rootfs";
	id_of(pol, r, 4, argv, id, f);
	cr_expect_str_neq(id, base);
	cr_expect_str_neq(f[5], f0[5]);
	cr_expect_str_eq(f[0], f0[0]);
	char ida[65];
	memcpy(ida, id, 65);
	r.system_id = "1:2:/images/a/rootfs";
	id_of(pol, r, 4, argv, id, f);
	cr_expect_str_neq(id, ida);
	char idb[65];
	r.system_id = "1:3:/images/a/rootfs";
	id_of(pol, r, 4, argv, idb, f);
	cr_expect_str_neq(idb, id);

	/* the policy: one more program changes its digest */
	struct config_policy *p2 = NULL;
	static const char j[] = "{\"version\":1,\"programs\":{\"git\":{\"subcommands\":[\"push\"],"
				"\"approve\":[[\"push\"]]}}}";
	cr_assert_eq(config_load_buffer(j, strlen(j), "p2", &p2, NULL), 0);
	id_of(p2, base_req(), 4, argv, id, f);
	cr_expect_str_neq(id, base);
	cr_expect_str_neq(f[4], f0[4]);
	cr_expect_str_eq(f[0], f0[0]);
	config_policy_free(p2);
}

Test(policy_approval_id, policy_digest_ignores_formatting)
{
	static const char a[] = "{\"version\":1,\"programs\":{\"ls\":{},\"cat\":{}}}";
	static const char b[] =
	    "{\n  \"programs\": {\"cat\": {}, \"ls\": {\"paths\": \"operands\"}},\n"
	    "  \"version\": 1\n}\n";
	static const char c[] = "{\"version\":1,\"programs\":{\"ls\":{},\"cat\":{},\"wc\":{}}}";
	struct config_policy *pa = NULL, *pb = NULL, *pc = NULL;
	cr_assert_eq(config_load_buffer(a, strlen(a), "a", &pa, NULL), 0);
	cr_assert_eq(config_load_buffer(b, strlen(b), "b", &pb, NULL), 0);
	cr_assert_eq(config_load_buffer(c, strlen(c), "c", &pc, NULL), 0);
	cr_expect_str_eq(pa->digest, pb->digest);
	cr_expect_str_neq(pa->digest, pc->digest);
	config_policy_free(pa);
	config_policy_free(pb);
	config_policy_free(pc);
}

static json_t *
info_for(const char *id, char fields[POLICY_ID_FIELDS][65])
{
	json_t *f = json_object();
	for (int i = 0; i < POLICY_ID_FIELDS; i++)
		json_object_set_new(f, policy_id_field_names[i], json_string(fields[i]));
	/* every store test approves `git push` */
	return json_pack("{s:s,s:o,s:I,s:[s,s]}", "id", id, "fields", f, "ttl", (json_int_t)600,
			 "argv", "git", "push");
}

Test(policy_approval_store, single_use)
{
	const char *argv[] = {"git", "push", NULL};
	char id[65], f[POLICY_ID_FIELDS][65];
	id_of(pol, base_req(), 2, argv, id, f);
	json_t *info = info_for(id, f), *got = NULL;
	cr_assert_eq(policy_pending_record(state, id, info, NULL), 0);
	cr_expect_eq(policy_approval_peek(state, id), POLICY_APPROVAL_NONE);
	cr_expect_eq(policy_approval_take(state, id, &got, NULL), POLICY_APPROVAL_NONE);
	cr_assert_eq(policy_approval_grant(state, id, info, 600, NULL), 0);
	cr_expect_eq(policy_approval_peek(state, id), POLICY_APPROVAL_OK);
	cr_expect_eq(policy_approval_take(state, id, &got, NULL), POLICY_APPROVAL_OK);
	cr_expect_not_null(got);
	json_decref(got);
	/* consumed: a second run pauses again */
	cr_expect_eq(policy_approval_take(state, id, &got, NULL), POLICY_APPROVAL_NONE);
	cr_expect_eq(policy_approval_peek(state, id), POLICY_APPROVAL_NONE);
	json_decref(info);
}

Test(policy_approval_store, single_use_under_concurrency)
{
	const char *argv[] = {"git", "push", NULL};
	char id[65], f[POLICY_ID_FIELDS][65];
	id_of(pol, base_req(), 2, argv, id, f);
	json_t *info = info_for(id, f);
	cr_assert_eq(policy_approval_grant(state, id, info, 600, NULL), 0);
	json_decref(info);
	enum { N = 8 };
	pid_t kids[N];
	for (int i = 0; i < N; i++) {
		kids[i] = fork();
		cr_assert_geq(kids[i], 0);
		if (kids[i] == 0) {
			json_t *g = NULL;
			int rc = policy_approval_take(state, id, &g, NULL);
			_exit(rc == POLICY_APPROVAL_OK ? 1 : 0);
		}
	}
	int winners = 0;
	for (int i = 0; i < N; i++) {
		int st;
		waitpid(kids[i], &st, 0);
		winners += WIFEXITED(st) && WEXITSTATUS(st) == 1;
	}
	cr_expect_eq(winners, 1, "%d runs consumed one approval", winners);
}

Test(policy_approval_store, expiry)
{
	const char *argv[] = {"git", "push", NULL};
	char id[65], f[POLICY_ID_FIELDS][65], path[PATH_MAX + 100];
	id_of(pol, base_req(), 2, argv, id, f);
	json_t *info = info_for(id, f), *got = NULL;
	cr_assert_eq(policy_approval_grant(state, id, info, 600, NULL), 0);
	/* age the record: expires one second ago */
	snprintf(path, sizeof(path), "%s/approvals/%s.json", state, id);
	json_t *rec = json_load_file(path, 0, NULL);
	cr_assert_not_null(rec);
	json_object_set_new(rec, "expires", json_integer((json_int_t)time(NULL) - 1));
	cr_assert_eq(json_dump_file(rec, path, 0), 0);
	json_decref(rec);
	cr_expect_eq(policy_approval_peek(state, id), POLICY_APPROVAL_EXPIRED);
	cr_expect_eq(policy_approval_take(state, id, &got, NULL), POLICY_APPROVAL_EXPIRED);
	json_decref(got);
	/* an expired approval is gone, not reusable */
	cr_expect_eq(policy_approval_take(state, id, &got, NULL), POLICY_APPROVAL_NONE);
	json_decref(info);
}

Test(policy_approval_store, near_miss_names_the_field)
{
	const char *argv[] = {"git", "push", NULL};
	char id[65], f[POLICY_ID_FIELDS][65], near[65], differs[128];
	id_of(pol, base_req(), 2, argv, id, f);
	json_t *info = info_for(id, f);
	cr_assert_eq(policy_approval_grant(state, id, info, 600, NULL), 0);
	json_decref(info);
	/* the same command in another working directory */
	struct policy_request r = base_req();
	r.cwd = "sub";
	char id2[65], f2[POLICY_ID_FIELDS][65];
	id_of(pol, r, 2, argv, id2, f2);
	cr_assert_str_neq(id, id2);
	cr_expect_eq(policy_approval_near(state, f2, 2, argv, near, differs, sizeof(differs)), 1);
	cr_expect_str_eq(near, id);
	cr_expect_str_eq(differs, "cwd");
	/* and it does not cover the other request */
	json_t *got = NULL;
	cr_expect_eq(policy_approval_take(state, id2, &got, NULL), POLICY_APPROVAL_NONE);
	/* an unrelated request is not "near" */
	const char *argv3[] = {"ls", NULL};
	r.workspace_id = "9:9:/other";
	id_of(pol, r, 1, argv3, id2, f2);
	cr_expect_eq(policy_approval_near(state, f2, 1, argv3, near, differs, sizeof(differs)), 0);
	/* one argument changed: near, naming argv */
	const char *argv4[] = {"git", "pull", NULL};
	id_of(pol, base_req(), 2, argv4, id2, f2);
	cr_expect_eq(policy_approval_near(state, f2, 2, argv4, near, differs, sizeof(differs)), 1);
	cr_expect_str_eq(differs, "argv");
	/* another command in the same place is not */
	const char *argv5[] = {"npm", "publish", NULL};
	id_of(pol, base_req(), 2, argv5, id2, f2);
	cr_expect_eq(policy_approval_near(state, f2, 2, argv5, near, differs, sizeof(differs)), 0);
}

Test(policy_approval_store, pending_lookup_by_prefix)
{
	const char *argv[] = {"git", "push", NULL};
	char id[65], f[POLICY_ID_FIELDS][65], full[65];
	id_of(pol, base_req(), 2, argv, id, f);
	json_t *info = info_for(id, f), *got = NULL;
	cr_assert_eq(policy_pending_record(state, id, info, NULL), 0);
	char prefix[13];
	memcpy(prefix, id, 12);
	prefix[12] = '\0';
	cr_expect_eq(policy_pending_find(state, prefix, full, &got, NULL), 0);
	cr_expect_str_eq(full, id);
	json_decref(got);
	got = NULL;
	struct wd_err e = {0};
	cr_expect_lt(policy_pending_find(state, "abc", full, &got, &e), 0);
	cr_expect_lt(policy_pending_find(state, "not-hex!", full, &got, &e), 0);
	cr_expect_lt(policy_pending_find(state, "0000000000000000", full, &got, &e), 0);
	json_decref(info);
}

/* The whole flow through include/warden.h: pause, approve, consume once,
 * pause again; a changed request is not covered. */
Test(wd_approval, pause_approve_consume)
{
	struct wd_err e = {0};
	wd_policy *p = NULL;
	cr_assert_eq(wd_policy_load(NULL, &p, &e), 0, "%s", e.msg);
	wd_request *r = wd_request_new();
	cr_assert_eq(wd_request_set_command(r, "git push origin main", &e), 0);
	cr_assert_eq(wd_request_set_workspace(r, fx_ws, &e), 0, "%s", e.msg);
	wd_decision *d = NULL;
	cr_assert_eq(wd_policy_decide(p, r, &d, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_decision_kind(d), WD_DECISION_PAUSE);
	char logp[PATH_MAX];
	fx_path(logp, "audit.log");
	wd_audit *a = NULL;
	cr_assert_eq(wd_audit_open(logp, &a, &e), 0, "%s", e.msg);
	cr_expect_eq(wd_approval_consume(p, r, d, a, &e), 0);
	cr_assert_eq(wd_approval_pending(p, r, d, logp, &e), 0, "%s", e.msg);
	cr_expect_not(wd_approval_recorded(d));
	char *summary = NULL;
	char prefix[17];
	memcpy(prefix, wd_decision_approval_id(d), 16);
	prefix[16] = '\0';
	cr_assert_eq(wd_approval_grant(prefix, 0, NULL, &summary, &e), 0, "%s", e.msg);
	cr_expect_not_null(strstr(summary, "'git' 'push' 'origin' 'main'"), "%s", summary);
	free(summary);
	cr_expect(wd_approval_recorded(d));

	/* a different argument: not covered, reported as a near miss */
	wd_request *r2 = wd_request_new();
	cr_assert_eq(wd_request_set_command(r2, "git push origin dev", &e), 0);
	cr_assert_eq(wd_request_set_workspace(r2, fx_ws, &e), 0);
	wd_decision *d2 = NULL;
	cr_assert_eq(wd_policy_decide(p, r2, &d2, &e), 0);
	cr_expect_eq(wd_approval_consume(p, r2, d2, a, &e), 0);

	cr_expect_eq(wd_approval_consume(p, r, d, a, &e), 1);
	cr_expect_eq(wd_approval_consume(p, r, d, a, &e), 0);
	wd_audit_close(a);

	/* the log tells the story: granted, mismatched, consumed */
	char *report = NULL;
	cr_expect_eq(wd_audit_verify(logp, &report, &e), 0, "%s", report);
	free(report);
	FILE *f = fopen(logp, "r");
	cr_assert_not_null(f);
	char line[4096];
	const char *want[] = {"approval.granted", "approval.mismatched", "approval.consumed"};
	size_t k = 0;
	while (fgets(line, sizeof(line), f) && k < 3)
		if (strstr(line, want[k]))
			k++;
	fclose(f);
	cr_expect_eq(k, 3, "events in order: got %zu of 3", k);
	wd_decision_free(d);
	wd_decision_free(d2);
	wd_request_free(r);
	wd_request_free(r2);
	wd_policy_free(p);
}

/* An approval granted for a command under one image does not cover it
 * under another image or the host, and still covers it under the same
 * image: each request's system root is a directory holding its own git. */
static wd_request *
git_push_on(const char *image)
{
	struct wd_err e = {0};
	wd_request *r = wd_request_new();
	cr_assert_eq(wd_request_set_command(r, "git push origin main", &e), 0);
	cr_assert_eq(wd_request_set_workspace(r, fx_ws, &e), 0, "%s", e.msg);
	if (image) {
		char root[PATH_MAX];
		fx_path(root, image);
		cr_assert_eq(wd_request_set_system_root(r, root, &e), 0, "%s", e.msg);
	}
	return r;
}

Test(wd_approval, image_is_part_of_the_id)
{
	struct wd_err e = {0};
	wd_policy *p = NULL;
	cr_assert_eq(wd_policy_load(NULL, &p, &e), 0, "%s", e.msg);
	const char *imgs[] = {"img-a", "img-b"};
	for (size_t i = 0; i < 2; i++) {
		char rel[64];
		fx_dir(imgs[i]);
		snprintf(rel, sizeof(rel), "%s/usr", imgs[i]);
		fx_dir(rel);
		snprintf(rel, sizeof(rel), "%s/usr/bin", imgs[i]);
		fx_dir(rel);
		snprintf(rel, sizeof(rel), "%s/usr/bin/git", imgs[i]);
		fx_file(rel, i ? "#!/bin/sh\n# b's git\n" : "#!/bin/sh\n# a's git\n");
		char path[PATH_MAX];
		fx_path(path, rel);
		cr_assert_eq(chmod(path, 0755), 0);
	}
	wd_request *ra = git_push_on("img-a"), *rb = git_push_on("img-b"), *rh = git_push_on(NULL);
	wd_decision *da = NULL, *db = NULL, *dh = NULL;
	cr_assert_eq(wd_policy_decide(p, ra, &da, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_policy_decide(p, rb, &db, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_policy_decide(p, rh, &dh, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_decision_kind(da), WD_DECISION_PAUSE);
	cr_assert_eq(wd_decision_kind(db), WD_DECISION_PAUSE);
	cr_assert_eq(wd_decision_kind(dh), WD_DECISION_PAUSE);
	cr_expect_str_neq(wd_decision_approval_id(da), wd_decision_approval_id(db));
	cr_expect_str_neq(wd_decision_approval_id(da), wd_decision_approval_id(dh));
	cr_expect_str_neq(wd_decision_approval_id(db), wd_decision_approval_id(dh));

	char logp[PATH_MAX];
	fx_path(logp, "audit.log");
	wd_audit *a = NULL;
	cr_assert_eq(wd_audit_open(logp, &a, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_approval_pending(p, ra, da, logp, &e), 0, "%s", e.msg);
	char *summary = NULL;
	cr_assert_eq(wd_approval_grant(wd_decision_approval_id(da), 0, NULL, &summary, &e), 0, "%s",
		     e.msg);
	/* the human is shown which system the grant is for */
	char rootfs[PATH_MAX], want[PATH_MAX + 16];
	fx_path(rootfs, "img-a");
	snprintf(want, sizeof(want), "system    %s\n", rootfs);
	cr_expect_not_null(strstr(summary, want), "%s", summary);
	free(summary);

	/* another image, then the host: not covered, named as a near miss */
	cr_expect_eq(wd_approval_consume(p, rb, db, a, &e), 0);
	cr_expect_eq(wd_approval_consume(p, rh, dh, a, &e), 0);
	/* the image it was granted for: covered, once */
	cr_expect_eq(wd_approval_consume(p, ra, da, a, &e), 1);
	cr_expect_eq(wd_approval_consume(p, ra, da, a, &e), 0);
	wd_audit_close(a);
	FILE *f = fopen(logp, "r");
	cr_assert_not_null(f);
	char line[4096];
	int mism = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "approval.mismatched") && strstr(line, "differ in system"))
			mism++;
	fclose(f);
	cr_expect_eq(mism, 2, "two mismatches naming the system: got %d", mism);

	/* the same path with another directory (an image removed and
	 * imported again): another id */
	char old[PATH_MAX], moved[PATH_MAX];
	fx_path(old, "img-a");
	fx_path(moved, "img-a.old");
	cr_assert_eq(rename(old, moved), 0);
	fx_dir("img-a");
	wd_request *ra2 = git_push_on("img-a");
	wd_decision *da2 = NULL;
	cr_assert_eq(wd_policy_decide(p, ra2, &da2, &e), 0, "%s", e.msg);
	cr_expect_str_neq(wd_decision_approval_id(da2), wd_decision_approval_id(da));

	wd_decision_free(da);
	wd_decision_free(db);
	wd_decision_free(dh);
	wd_decision_free(da2);
	wd_request_free(ra);
	wd_request_free(rb);
	wd_request_free(rh);
	wd_request_free(ra2);
	wd_policy_free(p);
}

Test(wd_approval, unknown_id_is_bad_input)
{
	struct wd_err e = {0};
	cr_expect_lt(wd_approval_grant("0123456789abcdef", 0, NULL, NULL, &e), 0);
	cr_expect_not_null(strstr(e.msg, "no paused command"), "%s", e.msg);
}

/* The limit precedence a front end asks for (wd_policy_limits) is the
 * policy stage's: the caller's value, else the tool's profile's, else the
 * sandbox object's, else 0 (the library's default). */
Test(wd_approval, policy_limits_precedence)
{
	struct wd_err e = {0};
	char path[PATH_MAX];
	fx_file("limits.json",
		"{\"version\": 1, \"sandbox\": {\"memory\": \"256MiB\", \"pids\": 64},\n"
		" \"profiles\": {\"tiny\": {\"memory\": \"64MiB\", \"timeout\": 5}},\n"
		" \"tools\": {\"lint\": {\"class\": \"sandbox\", \"profile\": \"tiny\"},\n"
		"           \"rm\": {\"class\": \"blocked\"}}}\n");
	fx_path(path, "limits.json");
	wd_policy *p = NULL;
	cr_assert_eq(wd_policy_load(path, &p, &e), 0, "%s", e.msg);
	struct wd_limits given = {.pids = 7, .nofile = 99}, out;
	/* no tool: the sandbox object under the caller's */
	cr_assert_eq(wd_policy_limits(p, NULL, &given, &out, &e), 0, "%s", e.msg);
	cr_expect_eq(out.memory_bytes, 256u << 20);
	cr_expect_eq(out.pids, 7);
	cr_expect_eq(out.nofile, 99);
	cr_expect_eq(out.timeout_ms, 0);
	/* a tool: its profile over the sandbox object, the caller's over both */
	cr_assert_eq(wd_policy_limits(p, "lint", &given, &out, &e), 0, "%s", e.msg);
	cr_expect_eq(out.memory_bytes, 64u << 20);
	cr_expect_eq(out.timeout_ms, 5000);
	cr_expect_eq(out.pids, 7);
	given.memory_bytes = 1u << 30;
	cr_assert_eq(wd_policy_limits(p, "lint", &given, &out, &e), 0, "%s", e.msg);
	cr_expect_eq(out.memory_bytes, 1u << 30);
	/* NULL given: the policy's alone */
	cr_assert_eq(wd_policy_limits(p, NULL, NULL, &out, &e), 0, "%s", e.msg);
	cr_expect_eq(out.pids, 64);
	/* a tool the policy does not define: blocked */
	cr_expect_eq(wd_policy_limits(p, "nope", NULL, &out, &e), -ENOENT);
	wd_policy_free(p);
}
