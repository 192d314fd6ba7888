/* audit: the hash chain, its verification, and detection of each kind of
 * tampering (edit, delete, insert, reorder, truncate, cut mid-line). */
#include "audit/audit.h"
#include "config/config.h"
#include "util/sha256.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char dir[64];
static char logp[PATH_MAX];

static void
setup(void)
{
	strcpy(dir, "/tmp/wd-audit-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(logp, sizeof(logp), "%s/audit.jsonl", dir);
}

static void
teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed\n");
}

TestSuite(audit, .init = setup, .fini = teardown);

static void
append_n(int n)
{
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_assert_eq(audit_open(logp, &a, &e), 0, "%s", e.msg);
	for (int i = 0; i < n; i++) {
		json_t *ev = json_pack("{s:s,s:i,s:s}", "event", "decision", "n", i, "decision",
				       i % 2 ? "allow" : "deny");
		int rc = audit_append(a, ev, &e);
		json_decref(ev);
		cr_assert_gt(rc, 0, "%s", e.msg);
	}
	audit_close(a);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	char *buf = NULL;
	size_t cap = 0;
	*len = 0;
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		buf = realloc(buf, cap = *len + n + 1);
		memcpy(buf + *len, chunk, n);
		*len += n;
	}
	fclose(f);
	if (!buf)
		buf = calloc(1, 1);
	buf[*len] = '\0';
	return buf;
}

static void
spit(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fwrite(buf, 1, len, f);
	fclose(f);
}

/* Split into lines (without '\n'); returns count. */
static size_t
lines_of(char *buf, char **lines, size_t max)
{
	size_t n = 0;
	for (char *p = buf; *p && n < max;) {
		char *nl = strchr(p, '\n');
		lines[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

static void
write_lines(char **lines, size_t n)
{
	FILE *f = fopen(logp, "w");
	cr_assert_not_null(f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	fclose(f);
}

static struct audit_verify
verify(void)
{
	struct audit_verify r;
	struct wd_err e = {0};
	cr_assert_eq(audit_verify_file(logp, &r, &e), 0, "%s", e.msg);
	return r;
}

Test(audit, chain_verifies)
{
	append_n(5);
	struct audit_verify r = verify();
	cr_expect(r.ok, "%s", r.message);
	cr_expect_eq(r.events, 5);
	cr_expect(r.head_checked);
	size_t len;
	char *buf = slurp(logp, &len), *lines[16];
	size_t n = lines_of(buf, lines, 16);
	cr_assert_eq(n, 5);
	cr_expect_not_null(strstr(lines[0], "\"seq\":1,"));
	cr_expect_not_null(strstr(lines[0], "\"prev\":\"" AUDIT_ZERO_HASH "\""));
	cr_expect_not_null(strstr(lines[4], "\"seq\":5,"));
	cr_expect_not_null(strstr(lines[0], "\"time\":\"20"));
	cr_expect_not_null(strstr(lines[0], "\"sandbox\":\""));
	/* prev of line 2 is the SHA-256 of line 1 */
	char h[65], want[80];
	wd_sha256_hex_of(lines[0], strlen(lines[0]), h);
	snprintf(want, sizeof(want), "\"prev\":\"%s\"", h);
	cr_expect_not_null(strstr(lines[1], want));
	free(buf);
}

Test(audit, appends_continue_the_chain_across_opens)
{
	append_n(2);
	append_n(3);
	struct audit_verify r = verify();
	cr_expect(r.ok, "%s", r.message);
	cr_expect_eq(r.events, 5);
}

Test(audit, concurrent_appenders_keep_one_chain)
{
	enum { KIDS = 4, EACH = 25 };
	for (int k = 0; k < KIDS; k++) {
		pid_t p = fork();
		cr_assert_geq(p, 0);
		if (p == 0) {
			struct audit_log *a = NULL;
			if (audit_open(logp, &a, NULL) < 0)
				_exit(1);
			for (int i = 0; i < EACH; i++) {
				json_t *ev = json_pack("{s:s,s:i}", "event", "decision", "k", k);
				if (audit_append(a, ev, NULL) < 0)
					_exit(1);
				json_decref(ev);
			}
			audit_close(a);
			_exit(0);
		}
	}
	for (int k = 0; k < KIDS; k++) {
		int st;
		wait(&st);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	struct audit_verify r = verify();
	cr_expect(r.ok, "%s", r.message);
	cr_expect_eq(r.events, KIDS * EACH);
}

Test(audit, file_is_private_and_append_only)
{
	append_n(1);
	struct stat st;
	cr_assert_eq(stat(logp, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
	int fd = open(logp, O_RDONLY);
	cr_assert_geq(fd, 0);
	close(fd);
	/* a symlink in place of the log is refused (O_NOFOLLOW) */
	char link[PATH_MAX];
	snprintf(link, sizeof(link), "%s/link.jsonl", dir);
	cr_assert_eq(symlink(logp, link), 0);
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_expect_lt(audit_open(link, &a, &e), 0);
}

Test(audit, detects_an_edited_event)
{
	append_n(4);
	size_t len;
	char *buf = slurp(logp, &len);
	char *p = strstr(buf, "\"deny\"");
	cr_assert_not_null(p);
	memcpy(p, "\"DENY\"", 6);
	spit(logp, buf, len);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 2, "%s", r.message);
	cr_expect_not_null(strstr(r.message, "line 1 was edited"), "%s", r.message);
	free(buf);
}

Test(audit, detects_an_edited_last_event_via_head)
{
	append_n(3);
	size_t len;
	char *buf = slurp(logp, &len), *lines[8];
	size_t n = lines_of(buf, lines, 8);
	char *p = strstr(lines[2], "\"allow\"");
	if (!p)
		p = strstr(lines[2], "\"deny\"");
	cr_assert_not_null(p);
	p[1] = 'X';
	write_lines(lines, n);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 3, "%s", r.message);
	free(buf);
}

Test(audit, detects_a_deleted_event)
{
	append_n(5);
	size_t len;
	char *buf = slurp(logp, &len), *lines[8];
	size_t n = lines_of(buf, lines, 8);
	memmove(&lines[2], &lines[3], (n - 3) * sizeof(char *));
	write_lines(lines, n - 1);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 3, "%s", r.message);
	cr_expect_not_null(strstr(r.message, "seq 4 where 3"), "%s", r.message);
	free(buf);
}

Test(audit, detects_reordered_events)
{
	append_n(5);
	size_t len;
	char *buf = slurp(logp, &len), *lines[8];
	size_t n = lines_of(buf, lines, 8);
	char *t = lines[1];
	lines[1] = lines[2];
	lines[2] = t;
	write_lines(lines, n);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 2, "%s", r.message);
	free(buf);
}

Test(audit, detects_an_inserted_event)
{
	append_n(3);
	size_t len;
	char *buf = slurp(logp, &len), *lines[8];
	size_t n = lines_of(buf, lines, 8);
	char *fake = strdup(lines[1]);
	char *moved[8] = {lines[0], lines[1], fake, lines[2]};
	(void)n;
	write_lines(moved, 4);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 3, "%s", r.message);
	free(fake);
	free(buf);
}

Test(audit, detects_removed_first_events)
{
	append_n(4);
	size_t len;
	char *buf = slurp(logp, &len), *lines[8];
	size_t n = lines_of(buf, lines, 8);
	write_lines(lines + 1, n - 1);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 1, "%s", r.message);
	free(buf);
}

Test(audit, detects_truncation_at_the_end)
{
	append_n(4);
	size_t len;
	char *buf = slurp(logp, &len), *lines[8];
	size_t n = lines_of(buf, lines, 8);
	write_lines(lines, n - 1);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_not_null(strstr(r.message, "truncated"), "%s", r.message);
	free(buf);
}

Test(audit, detects_a_cut_mid_line)
{
	append_n(3);
	size_t len;
	char *buf = slurp(logp, &len);
	spit(logp, buf, len - 10);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 3, "%s", r.message);
	cr_expect_not_null(strstr(r.message, "incomplete"), "%s", r.message);
	/* and refuses to append after a torn line */
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_assert_eq(audit_open(logp, &a, &e), 0);
	json_t *ev = json_pack("{s:s}", "event", "x");
	cr_expect_lt(audit_append(a, ev, &e), 0);
	cr_expect_not_null(strstr(e.msg, "partial line"), "%s", e.msg);
	json_decref(ev);
	audit_close(a);
	free(buf);
}

Test(audit, detects_garbage_and_missing_fields)
{
	append_n(2);
	FILE *f = fopen(logp, "a");
	fputs("not json\n", f);
	fclose(f);
	struct audit_verify r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 3);

	append_n(0);
	spit(logp, "{\"seq\":1}\n", 10);
	r = verify();
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 1);
}

Test(audit, without_head_file_still_checks_the_chain)
{
	append_n(3);
	char head[PATH_MAX + 8];
	snprintf(head, sizeof(head), "%s.head", logp);
	cr_assert_eq(unlink(head), 0);
	struct audit_verify r = verify();
	cr_expect(r.ok, "%s", r.message);
	cr_expect_not(r.head_checked);
}

Test(audit, empty_log_is_intact)
{
	spit(logp, "", 0);
	struct audit_verify r = verify();
	cr_expect(r.ok);
	cr_expect_eq(r.events, 0);
}

Test(audit, no_environment_values_in_decision_events)
{
	struct wd_err e = {0};
	wd_policy *p = NULL;
	cr_assert_eq(wd_policy_load(NULL, &p, &e), 0);
	wd_request *req = wd_request_new();
	cr_assert_eq(wd_request_set_command(req, "ls", &e), 0);
	cr_assert_eq(wd_request_set_workspace(req, dir, &e), 0);
	cr_assert_eq(wd_request_setenv(req, "API_TOKEN", "s3cr3t-value", &e), 0);
	wd_decision *d = NULL;
	cr_assert_eq(wd_policy_decide(p, req, &d, &e), 0);
	wd_audit *a = NULL;
	cr_assert_eq(wd_audit_open(logp, &a, &e), 0);
	cr_assert_eq(wd_audit_decision(a, req, d, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_audit_result(a, d, "{\"status\":0}", &e), 0, "%s", e.msg);
	wd_audit_close(a);
	size_t len;
	char *buf = slurp(logp, &len);
	cr_expect_null(strstr(buf, "s3cr3t"), "an environment value reached the log");
	cr_expect_not_null(strstr(buf, "\"API_TOKEN\""));
	cr_expect_not_null(strstr(buf, "\"event\":\"result\""));
	cr_expect_not_null(strstr(buf, "\"status\":0"));
	char *report = NULL;
	cr_expect_eq(wd_audit_verify(logp, &report, &e), 0, "%s", report);
	free(report);
	free(buf);
	wd_decision_free(d);
	wd_request_free(req);
	wd_policy_free(p);
}

Test(audit, policy_accessors_for_front_ends)
{
	static const char doc[] = "{\"version\": 1, \"network\": {\"allow\": [\"pypi.org\", "
				  "\"*.github.com\"]}, \"audit\": {\"path\": \"/x.jsonl\"}}";
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/p.json", dir);
	spit(path, doc, strlen(doc));
	wd_policy *p = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_policy_load(path, &p, &e), 0, "%s", e.msg);
	size_t n = 0;
	const char *const *hosts = wd_policy_network_allow(p, &n);
	cr_expect_eq(n, 2);
	cr_expect_str_eq(hosts[0], "pypi.org");
	cr_expect_str_eq(hosts[1], "*.github.com");
	cr_expect_str_eq(wd_policy_audit_path(p), "/x.jsonl");
	cr_expect_eq(wd_policy_approval_ttl(p), 600);
	cr_expect_eq(strlen(wd_policy_digest(p)), 64);
	wd_policy_free(p);
}

/* Text that is not UTF-8 (a byte of a Latin-1 file name, a cut sequence)
 * was dropped: jansson's json_string() returns NULL for it, and the member
 * vanished from the event and from --json (found by fuzz_json_encoders). */
Test(audit_json_text, keeps_utf8_and_escapes_stray_bytes_visibly)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"plain ascii", "plain ascii"},
	    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
	    {"a\\xffb", "a\\xffb"}, /* a literal backslash in valid text stays */
	    {"l\xffs", "l\\xffs"},
	    {"\xc0\xaf", "\\xc0\\xaf"},			  /* overlong '/' */
	    {"\xed\xa0\x80", "\\xed\\xa0\\x80"},	  /* a surrogate */
	    {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"}, /* past U+10FFFF */
	    {"cut \xe2\x82", "cut \\xe2\\x82"},
	    {"\x80lone", "\\x80lone"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = audit_json_text(cases[i].in);
		cr_assert(json_is_string(j), "case %zu", i);
		cr_expect_str_eq(json_string_value(j), cases[i].out, "case %zu", i);
		json_decref(j);
	}
}

Test(audit, records_a_command_that_is_not_utf8)
{
	struct wd_err e = {0};
	wd_policy *p = NULL;
	cr_assert_eq(wd_policy_load(NULL, &p, &e), 0);
	wd_request *req = wd_request_new();
	cr_assert_eq(wd_request_set_command(req, "l\xffs x \xfe", &e), 0);
	cr_assert_eq(wd_request_set_workspace(req, dir, &e), 0);
	cr_assert_eq(wd_request_setenv(req, "N\xff", "v", &e), 0);
	wd_decision *d = NULL;
	cr_assert_eq(wd_policy_decide(p, req, &d, &e), 0);
	/* --json shows every word */
	char *j = wd_decision_json(d);
	cr_expect_not_null(strstr(j, "\"argv\":[\"l\\\\xffs\",\"x\",\"\\\\xfe\"]"), "%s", j);
	cr_expect_not_null(strstr(j, "\"reason\":\"program 'l\\\\xffs'"), "%s", j);
	free(j);
	/* and so does the audit event */
	wd_audit *a = NULL;
	cr_assert_eq(wd_audit_open(logp, &a, &e), 0);
	cr_assert_eq(wd_audit_decision(a, req, d, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_audit_event(a, "ev\xff", "{\"k\":1}", &e), 0, "%s", e.msg);
	wd_audit_close(a);
	size_t len;
	char *buf = slurp(logp, &len);
	/* the trail writes the byte as util/json.h does, "\udcXX", which
	 * the text \xNN (a literal backslash) cannot be taken for */
	cr_expect_not_null(strstr(buf, "\"command\":\"l\\udcffs x \\udcfe\""), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"env\":[\"N\\udcff\"]"), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"event\":\"ev\\udcff\""), "%s", buf);
	cr_expect_not_null(strstr(buf, "\"argv\":[\"l\\udcffs\",\"x\",\"\\udcfe\"]"), "%s", buf);
	char *report = NULL;
	cr_expect_eq(wd_audit_verify(logp, &report, &e), 0, "%s", report);
	free(report);
	free(buf);
	wd_decision_free(d);
	wd_request_free(req);
	wd_policy_free(p);
}

/* A byte that is not UTF-8 and the four characters \xff are two records:
 * the trail read back (the "\udcXX" made a NUL mark, audit_line_load)
 * gives each its own bytes; a surrogate pair (JW_ASCII's U+10080,
 * \ud800\udc80) is left whole. */
Test(audit, a_byte_and_its_text_are_two_records)
{
	struct wd_err e = {0};
	wd_audit *a = NULL;
	cr_assert_eq(wd_audit_open(logp, &a, &e), 0);
	cr_assert_eq(wd_audit_approval(a, "granted", "a\xff", "x \xf0\x90\x82\x80", &e), 0, "%s",
		     e.msg);
	cr_assert_eq(wd_audit_approval(a, "granted", "a\\xff", "x \xf0\x90\x82\x80", &e), 0, "%s",
		     e.msg);
	wd_audit_close(a);
	size_t len;
	char *buf = slurp(logp, &len);
	char *nl = strchr(buf, '\n');
	cr_assert_not_null(nl);
	json_error_t je;
	json_t *one = audit_line_load(buf, (size_t)(nl - buf), 0, &je);
	json_t *two = audit_line_load(nl + 1, strlen(nl + 1) - 1, 0, &je);
	cr_assert(json_is_object(one) && json_is_object(two), "%s", buf);
	json_t *i1 = json_object_get(one, "approval"), *i2 = json_object_get(two, "approval");
	cr_expect(json_string_length(i1) == 4 && !memcmp(json_string_value(i1), "a\0ff", 4), "%s",
		  buf);
	cr_expect_str_eq(json_string_value(i2), "a\\xff");
	cr_expect_str_eq(json_string_value(json_object_get(one, "detail")), "x \xf0\x90\x82\x80");
	json_decref(one);
	json_decref(two);
	char *report = NULL;
	cr_expect_eq(wd_audit_verify(logp, &report, &e), 0, "%s", report);
	free(report);
	free(buf);
}
