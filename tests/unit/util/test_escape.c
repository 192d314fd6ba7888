/* util/escape: what a human reads of the model's bytes (docs/threat-model.md). */
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
	{"main\xf3\xa0\x81\x81", "\"main\\363\\240\\201\\201\""}, /* U+E0041 */
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
	/* invisible in a terminal, so an argument or a name could differ
	 * from what a human reads: the tag characters (\"ASCII smuggling\"),
	 * variation selectors (which carry a byte each after any letter),
	 * the soft hyphen, the combining grapheme joiner, Hangul fillers */
	{"+main\xf3\xa0\x81\x81\xf3\xa0\x81\xbf", "+main<U+E0041><U+E007F>"},
	{"+a\xef\xb8\x8f\xf3\xa0\x84\x81", "+a<U+FE0F><U+E0101>"},
	{"+ma\xc2\xadin", "+ma<U+00AD>in"},
	{"+a\xcd\x8f" "b", "+a<U+034F>b"},
	{"+\xe1\x85\x9f\xe1\x85\xa0\xe3\x85\xa4\xef\xbe\xa0", "+<U+115F><U+1160><U+3164><U+FFA0>"},
	{"+\xe1\xa0\x8e\xe1\x9e\xb4", "+<U+180E><U+17B4>"},
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

/* a tab in a word is not shown as the spaces a terminal makes of it: the
 * file 'a<TAB>b' would read as 'a   b'; in text it stays a tab */
Test(wd_esc_text, word_shows_its_tab)
{
	char *got = wd_esc_text("a\tb", 3, WD_ESC_WORD, 0);
	cr_expect_str_eq(got, "'a\\x09b'");
	free(got);
	got = wd_esc_text("a\tb", 3, 0, 0);
	cr_expect_str_eq(got, "a\tb");
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

/* Whether s (len bytes) is valid UTF-8 with nothing a terminal obeys:
 * no C0 but TAB (and LF when lines), no DEL, no C1, bidi or zero-width
 * character.  Python's check in tests/integration/review.sh, in C. */
static bool
harmless(const char *s, size_t len, bool lines)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t l;
		if (p[i] < 0x80) {
			cp = p[i];
			l = 1;
		} else if ((p[i] & 0xe0) == 0xc0 && i + 1 < len) {
			cp = (uint32_t)(p[i] & 0x1f) << 6 | (p[i + 1] & 0x3f);
			l = 2;
		} else if ((p[i] & 0xf0) == 0xe0 && i + 2 < len) {
			cp = (uint32_t)(p[i] & 0x0f) << 12 | (uint32_t)(p[i + 1] & 0x3f) << 6 |
			     (p[i + 2] & 0x3f);
			l = 3;
		} else if ((p[i] & 0xf8) == 0xf0 && i + 3 < len) {
			cp = 0x10000;
			l = 4;
		} else {
			return false;
		}
		if ((cp < 0x20 && cp != '\t' && !(lines && cp == '\n')) || cp == 0x7f ||
		    (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) ||
		    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
			return false;
		i += l;
	}
	return true;
}

/* git's unquote_c_style: what a reader of a quoted name gets back. */
static char *
unquote(const char *q)
{
	size_t n = strlen(q);
	char *out = malloc(n + 1), *o = out;
	if (n < 2 || q[0] != '"' || q[n - 1] != '"') {
		memcpy(out, q, n + 1);
		return out;
	}
	for (size_t i = 1; i < n - 1; i++) {
		if (q[i] != '\\') {
			*o++ = q[i];
			continue;
		}
		char c = q[++i];
		const char *from = "abtnvfr\"\\", *to = "\a\b\t\n\v\f\r\"\\";
		const char *k = strchr(from, c);
		if (k && c) {
			*o++ = to[k - from];
		} else {
			*o++ = (char)((q[i] - '0') << 6 | (q[i + 1] - '0') << 3 | (q[i + 2] - '0'));
			i += 2;
		}
	}
	*o = '\0';
	return out;
}

/* 20,000 random names and lines (a fixed seed: the same every run), mostly
 * the bytes that matter: C0, DEL, C1 and bidi encodings, broken UTF-8. */
Test(wd_esc, random_input_is_always_harmless_and_names_round_trip)
{
	static const char *const parts[] = {"\x1b",
					    "\r",
					    "\n",
					    "\t",
					    "\x7f",
					    "\xc2\x9b",
					    "\xe2\x80\xae",
					    "\xe2\x81\xa6",
					    "\xe2\x80\x8b",
					    "\xff",
					    "\xe2\x80",
					    "\xc3\xa9",
					    "\"",
					    "\\",
					    " ",
					    " -> ",
					    "  (",
					    "a",
					    "README.md",
					    "\xf0\x9f\x98\x80",
					    "[2K"};
	unsigned seed = 18;
	for (int round = 0; round < 20000; round++) {
		char in[256] = "";
		size_t len = 0;
		int k = rand_r(&seed) % 12;
		for (int j = 0; j < k; j++) {
			const char *p = parts[rand_r(&seed) % WD_ARRAY_SIZE(parts)];
			if (len + strlen(p) < sizeof(in)) {
				memcpy(in + len, p, strlen(p));
				len += strlen(p);
			}
		}
		in[len] = '\0';
		char *t = wd_esc_text(in, len, 0, 0);
		cr_assert(harmless(t, strlen(t), false), "text of round %d: %s", round, t);
		free(t);
		t = wd_esc_text(in, len, WD_ESC_LINES, 8);
		cr_assert(harmless(t, strlen(t), true), "lines of round %d: %s", round, t);
		free(t);
		char *q = wd_esc_path(in);
		cr_assert(harmless(q, strlen(q), false), "name of round %d: %s", round, q);
		char *back = unquote(q);
		cr_assert_str_eq(back, in, "round %d: %s does not unquote to its name", round, q);
		free(back);
		free(q);
	}
}
