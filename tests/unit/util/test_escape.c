/* util/escape: what a human reads of the model's bytes (issue 18). */
#include "util/escape.h"
#include "util/util.h"

#include <criterion/criterion.h>
#include <string.h>

struct esc_case {
	const char *in, *want;
};

/* clang-format off */
static const struct esc_case path_cases[] = {
	{"README.md", "README.md"},
	{"src/pkg/mod.py", "src/pkg/mod.py"},
	{"caf\xc3\xa9.txt", "caf\xc3\xa9.txt"},		/* valid UTF-8 stays bare (quotePath=false) */
	{"x\nmodified  README.md", "\"x\\nmodified  README.md\""},
	{"a\x1b[2Kb", "\"a\\033[2Kb\""},
	{"cr\rx", "\"cr\\rx\""},
	{"tab\tx", "\"tab\\tx\""},
	{"q\"uote", "\"q\\\"uote\""},
	{"back\\slash", "\"back\\\\slash\""},
	{"del\x7f", "\"del\\177\""},
	{"bad\xff", "\"bad\\377\""},
	{"over\xc0\xaf", "\"over\\300\\257\""},		/* overlong '/' */
	{"sur\xed\xa0\x80", "\"sur\\355\\240\\200\""},	/* a surrogate */
	{"evil\xe2\x80\xaetxt.sh", "\"evil\\342\\200\\256txt.sh\""}, /* U+202E */
	{"iso\xe2\x81\xa6x", "\"iso\\342\\201\\246x\""},	/* U+2066 */
	{"zw\xe2\x80\x8bx", "\"zw\\342\\200\\213x\""},	/* U+200B */
	{"c1\xc2\x9b", "\"c1\\302\\233\""},		/* U+009B, a CSI */
	{"bom\xef\xbb\xbf", "\"bom\\357\\273\\277\""},
	{" lead", "\" lead\""},
	{"trail ", "\"trail \""},
	{"a -> b", "\"a -> b\""},
	{"x  (protected: never applied)", "\"x  (protected: never applied)\""},
	{"one space (fine)", "one space (fine)"},
};
/* clang-format on */

Test(wd_esc_path, quotes_like_git_core_quotepath)
{
	for (size_t i = 0; i < WD_ARRAY_SIZE(path_cases); i++) {
		char *got = wd_esc_path(path_cases[i].in);
		cr_expect_str_eq(got, path_cases[i].want, "case %zu", i);
		cr_expect_eq(wd_esc_path_needs_quote(path_cases[i].in),
			     strcmp(path_cases[i].in, path_cases[i].want) != 0, "case %zu", i);
		free(got);
	}
}

/* clang-format off */
static const struct esc_case text_cases[] = {
	{"+plain line", "+plain line"},
	{"+\tindented", "+\tindented"},
	{"+hidden\r+shown", "+hidden\\x0d+shown"},
	{"+\x1b[2K\rforged", "+\\x1b[2K\\x0dforged"},
	{"+\x1b]0;title\x07", "+\\x1b]0;title\\x07"},
	{"+\x1b[31mred\x1b[0m", "+\\x1b[31mred\\x1b[0m"},
	{"+nul\x01\x7f", "+nul\\x01\\x7f"},
	{"+if (admin\xe2\x80\xae) {", "+if (admin<U+202E>) {"},
	{"+\xe2\x81\xa9x\xe2\x81\xa6", "+<U+2069>x<U+2066>"},
	{"+\xc2\x85next", "+<U+0085>next"},
	{"+\xc2\x9b" "31m", "+<U+009B>31m"},
	{"+bad\xfe", "+bad\\xfe"},
	{"+trunc\xe2\x80", "+trunc\\xe2\\x80"},
	{"+caf\xc3\xa9 \xe4\xb8\xad", "+caf\xc3\xa9 \xe4\xb8\xad"},
	{"+a\\x1b", "+a\\x1b"},		/* backslashes as they are in text */
	{"two\nlines", "two\\x0alines"},
};
/* clang-format on */

Test(wd_esc_text, makes_every_control_visible)
{
	for (size_t i = 0; i < WD_ARRAY_SIZE(text_cases); i++) {
		const char *in = text_cases[i].in;
		char *got = wd_esc_text(in, strlen(in), 0, 0);
		cr_expect_str_eq(got, text_cases[i].want, "case %zu", i);
		for (const unsigned char *p = (const unsigned char *)got; *p; p++)
			cr_expect(*p >= 0x20 || *p == '\t', "case %zu: raw byte 0x%02x", i, *p);
		free(got);
	}
}

Test(wd_esc_text, lines_keep_newlines_only)
{
	const char in[] = "a\nb\r\nc\x1b";
	char *got = wd_esc_text(in, sizeof(in) - 1, WD_ESC_LINES, 0);
	cr_expect_str_eq(got, "a\nb\\x0d\nc\\x1b");
	free(got);
}

Test(wd_esc_text, word_is_quoted)
{
	const char in[] = "it's a\\b\x1b";
	char *got = wd_esc_text(in, sizeof(in) - 1, WD_ESC_WORD, 0);
	cr_expect_str_eq(got, "'it\\x27s a\\x5cb\\x1b'");
	free(got);
}

Test(wd_esc_text, nul_bytes_inside_len)
{
	const char in[] = "a\0b";
	char *got = wd_esc_text(in, 3, 0, 0);
	cr_expect_str_eq(got, "a\\x00b");
	free(got);
}

Test(wd_esc_text, long_line_capped_with_marker)
{
	char in[64];
	memset(in, 'x', 40);
	in[40] = '\n';
	memset(in + 41, 'y', 10);
	char *got = wd_esc_text(in, 51, WD_ESC_LINES, 16);
	cr_expect_str_eq(got, "xxxxxxxxxxxxxxxx... (24 more bytes)\nyyyyyyyyyy");
	free(got);
	got = wd_esc_text(in, 51, 0, 16);
	cr_expect_str_eq(got, "xxxxxxxxxxxxxxxx... (35 more bytes)");
	free(got);
}
