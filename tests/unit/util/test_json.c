/* util/json: a byte that is not UTF-8 through the writer's "\udcXX", a
 * strict parser and back (what a session's monitor reads of a request). */
#include "util/json.h"
#include "util/util.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

/* the writer's text of s, through jw_surrogates_to_nul and jansson, and
 * jw_nul_undo: the bytes s was */
Test(json, a_byte_that_is_not_utf8_comes_back_as_itself)
{
	static const char *const in[] = {"n\xff",
					 "a\xfe"
					 "b",
					 "caf\xc3\xa9", "\\udcff", "plain"};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct jw w;
		jw_init(&w, 0);
		jw_str(&w, in[i]);
		wd_autofree char *text = jw_steal(&w);
		size_t n = 0;
		wd_autofree char *t = jw_surrogates_to_nul(text, strlen(text), &n);
		json_t *j = json_loadb(t, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
		cr_assert(json_is_string(j), "%s", text);
		wd_autofree char *b =
		    jw_nul_undo(json_string_value(j), json_string_length(j), true);
		cr_expect_str_eq(b, in[i], "%s", text);
		wd_autofree char *v =
		    jw_nul_undo(json_string_value(j), json_string_length(j), false);
		cr_expect(!strchr(v, '\xff') && !strchr(v, '\xfe'), "visible form of %s: %s", text,
			  v);
		json_decref(j);
	}
}

/* a "\u0000" the text held itself is no escaped byte: refused, never
 * read as one */
Test(json, a_nul_of_the_texts_own_is_refused)
{
	static const char s1[] = {'a', '\0', 'f', 'f'};
	static const char s2[] = {'a', '\0', '4', '1'}; /* 0x41 is no escape the writer makes */
	static const char s3[] = {'a', '\0'};
	cr_expect_null(jw_nul_undo(s1, 2, true));
	cr_expect_null(jw_nul_undo(s2, sizeof(s2), true));
	cr_expect_null(jw_nul_undo(s3, sizeof(s3), true));
	wd_autofree char *ok = jw_nul_undo(s1, sizeof(s1), true);
	cr_expect_str_eq(ok, "a\xff");
}
