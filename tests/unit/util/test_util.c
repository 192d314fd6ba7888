#include "util/json.h"
#include "util/util.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct size_case {
	const char *in;
	int rc;
	uint64_t want;
};

Test(wd_parse_size, table)
{
	static const struct size_case cases[] = {
	    {"0", 0, 0},
	    {"512M", 0, 512ULL << 20},
	    {"1G", 0, 1ULL << 30},
	    {"64k", 0, 64ULL << 10},
	    {"64KiB", 0, 64ULL << 10},
	    {"100", 0, 100},
	    {"100B", 0, 100},
	    {"1.5G", -EINVAL, 0},
	    {"", -EINVAL, 0},
	    {"-1", -EINVAL, 0},
	    {"12X", -EINVAL, 0},
	    {"M", -EINVAL, 0},
	    {"99999999999999999999", -ERANGE, 0},
	    {"99999999999T", -ERANGE, 0},
	};
	for (size_t i = 0; i < WD_ARRAY_SIZE(cases); i++) {
		uint64_t v = 0;
		int rc = wd_parse_size(cases[i].in, &v);
		cr_expect_eq(rc, cases[i].rc, "'%s': rc %d", cases[i].in, rc);
		if (rc == 0)
			cr_expect_eq(v, cases[i].want, "'%s': %llu", cases[i].in,
				     (unsigned long long)v);
	}
}

Test(wd_parse_fixed6, table)
{
	uint64_t v;
	cr_expect_eq(wd_parse_fixed6("1.0", &v), 0);
	cr_expect_eq(v, 1000000);
	cr_expect_eq(wd_parse_fixed6("0.25", &v), 0);
	cr_expect_eq(v, 250000);
	cr_expect_eq(wd_parse_fixed6("2", &v), 0);
	cr_expect_eq(v, 2000000);
	cr_expect_eq(wd_parse_fixed6("1.", &v), -EINVAL);
	cr_expect_eq(wd_parse_fixed6(".5", &v), -EINVAL);
	cr_expect_eq(wd_parse_fixed6("x", &v), -EINVAL);
	cr_expect_eq(wd_parse_fixed6("-1", &v), -EINVAL);
}

Test(wd_parse_u64, table)
{
	uint64_t v;
	cr_expect_eq(wd_parse_u64("30", &v), 0);
	cr_expect_eq(v, 30);
	cr_expect_eq(wd_parse_u64("3s", &v), -EINVAL);
	cr_expect_eq(wd_parse_u64("", &v), -EINVAL);
	cr_expect_eq(wd_parse_u64("18446744073709551616", &v), -ERANGE);
}

Test(wd_err, sys_sets_code_and_message)
{
	struct wd_err e = {0};
	int rc = wd_err_sys(&e, ENOENT, "open %s", "/x");
	cr_expect_eq(rc, -ENOENT);
	cr_expect_eq(e.code, WD_E_SYS);
	cr_expect_str_eq(e.msg, "open /x: No such file or directory");
	wd_err_prefix(&e, "sandbox %d", 7);
	cr_expect_str_eq(e.msg, "sandbox 7: open /x: No such file or directory");
}

/* The state directory when the caller names none: the variables in their
 * order of precedence, root's default, and the errors. */
Test(wd_state_dir, precedence)
{
	char out[64];
	struct wd_err e = {0};
	setenv("WARDEN_STATE_DIR", "/w", 1);
	setenv("XDG_STATE_HOME", "/x", 1);
	setenv("HOME", "/h", 1);
	cr_expect_eq(wd_state_dir(out, sizeof(out), &e), 0);
	cr_expect_str_eq(out, "/w");
	setenv("WARDEN_STATE_DIR", "", 1); /* empty counts as unset */
	cr_expect_eq(wd_state_dir(out, sizeof(out), &e), 0);
	cr_expect_str_eq(out, "/x/warden");
	unsetenv("WARDEN_STATE_DIR");
	unsetenv("XDG_STATE_HOME");
	cr_expect_eq(wd_state_dir(out, sizeof(out), &e), 0);
	cr_expect_str_eq(out, geteuid() == 0 ? "/var/lib/warden" : "/h/.local/state/warden");
	setenv("XDG_STATE_HOME", "/a-path-longer-than-the-sixty-four-bytes-the-caller-has-room-for",
	       1);
	cr_expect_eq(wd_state_dir(out, sizeof(out), &e), -EINVAL);
	cr_expect_str_eq(e.msg, "state directory path too long");
}

/* An ordinary user with no HOME and no variable: told what to set. */
Test(wd_state_dir, none_for_a_user)
{
	char out[64];
	struct wd_err e = {0};
	unsetenv("WARDEN_STATE_DIR");
	unsetenv("XDG_STATE_HOME");
	unsetenv("HOME");
	if (geteuid() == 0) /* Criterion runs each test in a process of its own */
		cr_assert_eq(setresuid(65534, 65534, 65534), 0);
	cr_expect_eq(wd_state_dir(out, sizeof(out), &e), -EINVAL);
	cr_expect(strstr(e.msg, "WARDEN_STATE_DIR") != NULL, "%s", e.msg);
}

/* wd_err_set's return follows the code, so "the host cannot" reaches a
 * caller as -ENOTSUP without a patch after the call. */
Test(wd_err_set, return_follows_the_code)
{
	struct wd_err e = {0};
	cr_expect_eq(wd_err_set(&e, WD_E_UNSUPPORTED, "no %s", "cgroup"), -ENOTSUP);
	cr_expect_eq(e.code, WD_E_UNSUPPORTED);
	cr_expect_str_eq(e.msg, "no cgroup");
	cr_expect_eq(wd_err_set(&e, WD_E_INVAL, "bad"), -EINVAL);
	cr_expect_eq(e.code, WD_E_INVAL);
	cr_expect_eq(wd_err_set(&e, WD_E_INTERNAL, "broken"), -EIO);
	cr_expect_eq(wd_err_set(NULL, WD_E_UNSUPPORTED, "nobody listens"), -ENOTSUP);
	cr_expect_eq(wd_err_sys(&e, ENOTSUP, "mount"), -ENOTSUP);
	cr_expect_eq(e.code, WD_E_SYS, "a system call's ENOTSUP keeps its errno and code");
}

/* JW_HEXBYTES: a byte that is not UTF-8 as the text \xNN, which a strict
 * parser reads back (jansson refuses the default "\udcNN") */
Test(jw, hexbytes_parse_back)
{
	static const char bytes[] = "a\xff\\b\xe2\x82\xac\x00\xc3";
	for (int hex = 0; hex <= 1; hex++) {
		struct jw w;
		jw_init(&w, hex ? JW_HEXBYTES : 0);
		jw_obj_begin(&w);
		jw_key(&w, "s");
		jw_strn(&w, bytes, sizeof(bytes) - 1);
		jw_obj_end(&w);
		char *text = jw_steal(&w);
		cr_expect_str_eq(text, hex ? "{\"s\":\"a\\\\xff\\\\b\xe2\x82\xac\\u0000\\\\xc3\"}"
					   : "{\"s\":\"a\\udcff\\\\b\xe2\x82\xac\\u0000\\udcc3\"}");
		json_error_t je;
		json_t *o = json_loads(text, JSON_ALLOW_NUL, &je);
		json_t *s = json_object_get(o, "s");
		if (hex) {
			static const char want[] = "a\\xff\\b\xe2\x82\xac\x00\\xc3";
			cr_expect_eq(json_string_length(s), sizeof(want) - 1, "%s", text);
			cr_expect(!memcmp(json_string_value(s), want, sizeof(want) - 1), "%s",
				  text);
		} else {
			cr_expect_null(o, "jansson read a lone surrogate: %s", text);
		}
		json_decref(o);
		free(text);
	}
}

/* Every level prints its own name: the monitor's log indexed its names
 * with level & 3, so a trace line (4) printed as "error"; a value
 * outside the enum prints "?", never another level's name. */
Test(wd_log_level_name, each_level_its_own)
{
	cr_assert_str_eq(wd_log_level_name(WD_LOG_ERROR), "error");
	cr_assert_str_eq(wd_log_level_name(WD_LOG_WARN), "warning");
	cr_assert_str_eq(wd_log_level_name(WD_LOG_INFO), "info");
	cr_assert_str_eq(wd_log_level_name(WD_LOG_DEBUG), "debug");
	cr_assert_str_eq(wd_log_level_name(WD_LOG_TRACE), "trace");
	cr_assert_str_eq(wd_log_level_name(5), "?");
	cr_assert_str_eq(wd_log_level_name(8), "?");
	cr_assert_str_eq(wd_log_level_name(-1), "?");
}
