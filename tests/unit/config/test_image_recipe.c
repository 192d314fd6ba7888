/* wd_image_recipe_load and the recipe setters: a recipe is a
 * file checked into a project, so the model may have written it; each bad
 * line is refused with FILE:LINE:COLUMN, and nothing in it can become an
 * option of mmdebstrap. */
#include "warden.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct recipe_case {
	const char *text;
	const char *want; /* "" when it loads; else a substring of err.msg after "FILE:" */
};

/* clang-format off */
static const struct recipe_case cases[] = {
	{"suite = bookworm\npackages = lua5.4, python3\nenv = LANG=C.UTF-8\n", ""},
	{"# comment\n\n  packages=lua5.4 git\t\n", ""},
	{"packages = lua5.4=5.4.4-3+deb12u1\n", ""},
	{"from = base\n", ""},
	{"colour = blue\n", ":1:1: unknown key colour"},
	{"\n\n   suite = bookworm\n  nonsense\n", ":4:3: expected KEY = VALUE"},
	{"packages = -oops\n", ":1:12: packages: package -oops is not"},
	{"packages = ok,--root=/\n", ":1:12: packages: package --root=/ is not"},
	{"packages = a\n", ":1:12: packages: package a is not"}, /* one letter: not Debian's */
	{"packages = Lua\n", ":1:12: packages: package Lua is not"},
	{"packages = x;rm\n", ":1:12: packages: package x;rm is not"},
	{"packages = lua5.4=\n", ":1:12: packages: package lua5.4= is not"},
	{"packages = lua5.4=1$(id)\n", ":1:12: packages: package"},
	{"suite = book worm\n", ":1:9: suite: suite 'book worm' is not"},
	{"suite = ../x\n", ":1:9: suite"},
	{"suite = \n", ":1:9: suite"},
	{"env = NOEQUALS\n", ":1:7: env: env entry is not NAME=VALUE"},
	{"env = 1X=y\n", ":1:7: env"},
	{"env = A=\x1b[2J\n", ":1:7: env"},
	{"from = ../etc\n", ":1:8: from: image name '../etc' is not"},
	{"from = Base\n", ":1:8: from"},
};
/* clang-format on */

Test(wd_image_recipe_load, refuses_each_bad_line_with_file_line_column)
{
	char path[] = "/tmp/wd-recipe-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(path, "w");
		cr_assert_not_null(f);
		fputs(cases[i].text, f);
		fclose(f);
		wd_image_recipe *r = wd_image_recipe_new();
		struct wd_err e = {0};
		int rc = wd_image_recipe_load(r, path, &e);
		if (!cases[i].want[0]) {
			cr_expect_eq(rc, 0, "case %zu: %s", i, e.msg);
		} else {
			char want[512];
			snprintf(want, sizeof(want), "%s%s", path, cases[i].want);
			cr_expect_lt(rc, 0, "case %zu loaded", i);
			cr_expect_not_null(strstr(e.msg, want), "case %zu: '%s' lacks '%s'", i,
					   e.msg, want);
		}
		wd_image_recipe_free(r);
	}
	unlink(path);
}

Test(wd_image_recipe_load, a_missing_file_is_named)
{
	wd_image_recipe *r = wd_image_recipe_new();
	struct wd_err e = {0};
	cr_expect_lt(wd_image_recipe_load(r, "/nonexistent/recipe", &e), 0);
	cr_expect_not_null(strstr(e.msg, "/nonexistent/recipe"), "%s", e.msg);
	wd_image_recipe_free(r);
}
