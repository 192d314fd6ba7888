#include "util/util.h"

#include <criterion/criterion.h>

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
