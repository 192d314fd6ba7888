/* fuzz_json_encoders: what the front ends print, through the public API
 * (include/warden.h) and the CLI's two escapers for humans.
 *
 * The first input byte picks the encoder, the rest is its input:
 *   0  a command string, judged by two policies: wd_decision_json()
 *   1  an argv (words split at NUL bytes), likewise
 *   2  a policy document: wd_policy_json()
 *   3  cli_policy_word() and cli_policy_text() (`warden check` without --json)
 *
 * Every JSON output must parse back (jansson, strict UTF-8, no duplicate
 * keys) and say what the decision says: each string that is valid UTF-8
 * must come back byte for byte (the escaping round-trips); one that is not
 * must still be there, its stray bytes written visibly as \xNN.  Escaped
 * human output must hold no control byte and decode back to the input.
 * Any failure aborts, which libFuzzer reports as a crash. */
#include "warden.h"

#include "cli/policy_cli.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* human.c calls cli_fail() on its error paths, which the escapers never
 * reach; main.c, its home, would bring in every subcommand. */
int
cli_fail(const char *sub, const char *fmt, ...)
{
	(void)sub;
	(void)fmt;
	return 125;
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_json_encoders: " __VA_ARGS__);                       \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A policy with every kind of rule: subcommands, an approval (pause), a
 * denied option, a workspace program. */
static const char rich_policy[] =
    "{\"version\": 1, \"programs\": {"
    "\"git\": {\"subcommands\": [\"status\", \"push\", \"log\"],"
    "  \"approve\": [{\"match\": [\"push\"], \"reason\": \"it publishes\"}],"
    "  \"value_options\": [\"-n\"]},"
    "\"ls\": {}, \"cat\": {}, \"python3\": {\"interpreter\": true}, \"grep\": {},"
    "\"sort\": {\"deny_options\": [\"--compress-program\", \"-T\"],"
    "  \"advice\": \"sort without helpers\"}}}";

static wd_policy *policies[2];
static char workspace[64];

/* The policy at a memfd's path: wd_policy_load() takes a path. */
static int
load_policy(const char *doc, size_t len, wd_policy **out, struct wd_err *e)
{
	int fd = memfd_create("policy.json", MFD_CLOEXEC);
	CHECK(fd >= 0, "memfd_create failed");
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, doc + off, len - off);
		CHECK(n > 0, "write to memfd failed");
		off += (size_t)n;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int rc = wd_policy_load(path, out, e);
	close(fd);
	return rc;
}

static void
remove_workspace(void)
{
	rmdir(workspace);
}

static void
setup(void)
{
	struct wd_err e = {0};
	strcpy(workspace, "/tmp/wd-fuzz-ws-XXXXXX");
	CHECK(mkdtemp(workspace), "mkdtemp failed");
	atexit(remove_workspace);
	CHECK(wd_policy_load(NULL, &policies[0], &e) == 0, "default policy: %s", e.msg);
	CHECK(load_policy(rich_policy, strlen(rich_policy), &policies[1], &e) == 0,
	      "rich policy: %s", e.msg);
}

/* Strict UTF-8 (RFC 3629: no overlong forms, surrogates or values past
 * U+10FFFF), as jansson checks it. */
static size_t
utf8_seq(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (n == 0 || s[0] > 0xf4)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

static bool
valid_utf8(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_seq(p);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

static int
hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode \xNN escapes (lowercase hex) into a new string. */
static char *
unescape_x(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	CHECK(out, "out of memory");
	while (*s) {
		if (s[0] == '\\' && s[1] == 'x' && hexval(s[2]) >= 0 && hexval(s[3]) >= 0) {
			*o++ = (char)(hexval(s[2]) << 4 | hexval(s[3]));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

/* The member key of o must hold want: exactly when want is UTF-8; written
 * with visible \xNN escapes otherwise (which decode back to want when want
 * has no backslash of its own to make the escapes ambiguous). */
static void
expect_string(json_t *v, const char *want, const char *what)
{
	CHECK(json_is_string(v), "%s: missing or not a string (want '%s')", what, want);
	const char *got = json_string_value(v);
	if (valid_utf8(want)) {
		CHECK(strlen(want) == json_string_length(v) && !strcmp(got, want),
		      "%s: '%s' came back as '%s'", what, want, got);
		return;
	}
	CHECK(strstr(got, "\\x"), "%s: stray bytes not escaped visibly: '%s'", what, got);
	if (!strchr(want, '\\')) {
		char *back = unescape_x(got);
		CHECK(!strcmp(back, want), "%s: '%s' does not decode to the input", what, got);
		free(back);
	}
}

static void
check_decision(const wd_policy *p, const wd_decision *d)
{
	static const char *const kinds[] = {"allow", "deny", "pause"};
	char *s = wd_decision_json(d);
	json_error_t je;
	json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &je);
	CHECK(json_is_object(o), "wd_decision_json is not a JSON object: %s\n%s", je.text, s);
	enum wd_decision_kind k = wd_decision_kind(d);
	CHECK(k <= WD_DECISION_PAUSE, "decision kind %d", (int)k);
	expect_string(json_object_get(o, "decision"), kinds[k], "decision");
	expect_string(json_object_get(o, "rule"), wd_decision_rule(d), "rule");
	expect_string(json_object_get(o, "reason"), wd_decision_reason(d), "reason");
	const char *advice = wd_decision_advice(d);
	if (advice[0])
		expect_string(json_object_get(o, "advice"), advice, "advice");
	if (k == WD_DECISION_PAUSE)
		expect_string(json_object_get(o, "approval_id"), wd_decision_approval_id(d),
			      "approval_id");
	expect_string(json_object_get(o, "policy"), wd_policy_digest(p), "policy");
	int argc = -1;
	const char *const *argv = wd_decision_argv(d, &argc);
	json_t *ja = json_object_get(o, "argv");
	CHECK(json_is_array(ja) && json_array_size(ja) == (size_t)argc,
	      "argv: %zu elements in the JSON, %d judged\n%s", json_array_size(ja), argc, s);
	for (int i = 0; i < argc; i++)
		expect_string(json_array_get(ja, (size_t)i), argv[i], "argv element");
	json_decref(o);
	free(s);
}

static void
decide_all(wd_request *req)
{
	struct wd_err e = {0};
	CHECK(wd_request_set_workspace(req, workspace, &e) == 0, "workspace: %s", e.msg);
	for (size_t i = 0; i < 2; i++) {
		wd_decision *d = NULL;
		if (wd_policy_decide(policies[i], req, &d, &e) == 0) {
			check_decision(policies[i], d);
			wd_decision_free(d);
		}
	}
}

static void
fuzz_command(const char *s)
{
	struct wd_err e = {0};
	wd_request *req = wd_request_new();
	if (wd_request_set_command(req, s, &e) == 0)
		decide_all(req);
	wd_request_free(req);
}

static void
fuzz_argv(const char *buf, size_t len)
{
	enum { MAXW = 64 };
	const char *argv[MAXW];
	int argc = 0;
	for (size_t i = 0; i < len && argc < MAXW; i += strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	if (argc == 0)
		return;
	struct wd_err e = {0};
	wd_request *req = wd_request_new();
	if (wd_request_set_argv(req, argc, argv, &e) == 0)
		decide_all(req);
	wd_request_free(req);
}

static void
fuzz_policy(const char *doc, size_t len)
{
	wd_policy *p = NULL;
	struct wd_err e = {0};
	if (load_policy(doc, len, &p, &e) < 0)
		return;
	char *s = wd_policy_json(p);
	json_error_t je;
	json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &je);
	CHECK(json_is_object(o), "wd_policy_json is not a JSON object: %s\n%s", je.text, s);
	expect_string(json_object_get(o, "digest"), wd_policy_digest(p), "digest");
	json_decref(o);
	free(s);
	wd_policy_free(p);
}

/* Human output: no control byte may reach the terminal, and the escapes
 * must decode back to the input. */
static void
fuzz_cli_escapes(const char *s)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	CHECK(f, "open_memstream failed");
	cli_policy_word(f, s);
	fflush(f);
	size_t word_len = n;
	cli_policy_text(f, s);
	CHECK(fclose(f) == 0, "fclose failed");
	for (size_t i = 0; i < n; i++)
		CHECK((unsigned char)out[i] >= 0x20 && out[i] != 0x7f, "control byte 0x%02x out",
		      (unsigned char)out[i]);
	/* the word: quoted, with ' and \ escaped too, so it decodes exactly */
	CHECK(word_len >= 2 && out[0] == '\'' && out[word_len - 1] == '\'', "word not quoted");
	out[word_len - 1] = '\0';
	CHECK(!strchr(out + 1, '\''), "a quote inside the quoted word");
	char *back = unescape_x(out + 1);
	CHECK(!strcmp(back, s), "the word does not decode back to the input");
	free(back);
	/* the text escapes control bytes only: it decodes back unless the
	 * input has backslashes of its own */
	if (!strchr(s, '\\')) {
		back = unescape_x(out + word_len);
		CHECK(!strcmp(back, s), "the text does not decode back to the input");
		free(back);
	}
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		setup();
		ready = true;
	}
	if (size < 1)
		return 0;
	/* every encoder takes C strings: a NUL-terminated copy */
	size_t len = size - 1;
	char *buf = malloc(len + 1);
	CHECK(buf, "out of memory");
	memcpy(buf, data + 1, len);
	buf[len] = '\0';
	switch (data[0] & 3) {
	case 0:
		fuzz_command(buf);
		break;
	case 1:
		fuzz_argv(buf, len);
		break;
	case 2:
		fuzz_policy(buf, len);
		break;
	default:
		fuzz_cli_escapes(buf);
		break;
	}
	free(buf);
	return 0;
}
