/* policy_tokenize: POSIX quoting without a shell, and refusal of every
 * composition and expansion (table of {input, rule or words}). */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <string.h>

struct tok_case {
	const char *in;
	const char *rule;  /* NULL: accepted */
	const char *words; /* accepted: words joined with '|' */
	const char *token; /* refused: the offending token (NULL: don't check) */
};

/* clang-format off */
static const struct tok_case cases[] = {
	/* plain words */
	{"pytest tests/ -q", NULL, "pytest|tests/|-q", NULL},
	{"ls", NULL, "ls", NULL},
	{"  ls   -la  ", NULL, "ls|-la", NULL},
	{"ls\t-l", NULL, "ls|-l", NULL},
	{"git log --oneline -n 5", NULL, "git|log|--oneline|-n|5", NULL},
	{"git log HEAD~1", NULL, "git|log|HEAD~1", NULL},
	{"git diff a..b", NULL, "git|diff|a..b", NULL},
	{"grep -rn TODO src", NULL, "grep|-rn|TODO|src", NULL},
	{"cat a=b", NULL, "cat|a=b", NULL},
	{"python3 -m pytest", NULL, "python3|-m|pytest", NULL},
	{"echo 100%", NULL, "echo|100%", NULL},
	{"echo a,b", NULL, "echo|a,b", NULL},
	{"echo a}b", NULL, "echo|a}b", NULL},
	{"echo a]b", NULL, "echo|a]b", NULL},
	{"echo a#b", NULL, "echo|a#b", NULL},
	{"echo x$", NULL, "echo|x$", NULL},
	{"echo $", NULL, "echo|$", NULL},
	{"echo $/", NULL, "echo|$/", NULL},
	{"echo !", NULL, "echo|!", NULL},
	{"echo a=~", NULL, NULL, "~"},
	{"echo @", NULL, "echo|@", NULL},
	/* single quotes: everything literal */
	{"echo 'a b'", NULL, "echo|a b", NULL},
	{"echo '$HOME'", NULL, "echo|$HOME", NULL},
	{"echo 'a;b|c&d'", NULL, "echo|a;b|c&d", NULL},
	{"echo '*.py'", NULL, "echo|*.py", NULL},
	{"echo '`x`'", NULL, "echo|`x`", NULL},
	{"echo ''", NULL, "echo|", NULL},
	{"echo '' x", NULL, "echo||x", NULL},
	{"echo 'a'\"b\"c", NULL, "echo|abc", NULL},
	{"echo 'it'\\''s'", NULL, "echo|it's", NULL},
	{"echo 'a\nb'", NULL, "echo|a\nb", NULL},
	{"echo '~'", NULL, "echo|~", NULL},
	{"echo '#'", NULL, "echo|#", NULL},
	{"echo '{a,b}'", NULL, "echo|{a,b}", NULL},
	/* double quotes */
	{"echo \"a b\"", NULL, "echo|a b", NULL},
	{"echo \"a\\\"b\"", NULL, "echo|a\"b", NULL},
	{"echo \"a\\\\b\"", NULL, "echo|a\\b", NULL},
	{"echo \"a\\nb\"", NULL, "echo|a\\nb", NULL},
	{"echo \"\\$HOME\"", NULL, "echo|$HOME", NULL},
	{"echo \"a;b\"", NULL, "echo|a;b", NULL},
	{"echo \"*\"", NULL, "echo|*", NULL},
	{"echo \"\"", NULL, "echo|", NULL},
	{"echo \"$\"", NULL, "echo|$", NULL},
	{"git commit -m \"fix: a | b\"", NULL, "git|commit|-m|fix: a | b", NULL},
	/* backslash outside quotes */
	{"echo a\\ b", NULL, "echo|a b", NULL},
	{"echo \\*", NULL, "echo|*", NULL},
	{"echo \\;", NULL, "echo|;", NULL},
	{"echo \\$HOME", NULL, "echo|$HOME", NULL},
	{"echo a\\\nb", NULL, "echo|ab", NULL},
	{"echo \\~", NULL, "echo|~", NULL},
	/* composition */
	{"git status && git push", "shell.and", NULL, "&&"},
	{"git status || true", "shell.or", NULL, "||"},
	{"ls; rm -rf /", "shell.sequence", NULL, ";"},
	{"ls ;", "shell.sequence", NULL, ";"},
	{"ls & ls", "shell.background", NULL, "&"},
	{"sleep 1&", "shell.background", NULL, "&"},
	{"curl x | sh", "shell.pipe", NULL, "|"},
	{"curl x|sh", "shell.pipe", NULL, "|"},
	{"ls |& cat", "shell.pipe", NULL, "|&"},
	{"ls\nrm x", "shell.newline", NULL, "\\n"},
	{"ls\n", "shell.newline", NULL, NULL},
	/* substitution and expansion */
	{"echo `id`", "shell.substitution", NULL, "`"},
	{"echo $(id)", "shell.substitution", NULL, "$("},
	{"echo \"$(id)\"", "shell.substitution", NULL, "$("},
	{"echo \"`id`\"", "shell.substitution", NULL, "`"},
	{"echo $((1+1))", "shell.expansion", NULL, "$(("},
	{"echo ${HOME}", "shell.expansion", NULL, "${"},
	{"echo $HOME", "shell.expansion", NULL, "$HOME"},
	{"echo \"$HOME\"", "shell.expansion", NULL, "$HOME"},
	{"echo a$PATH/b", "shell.expansion", NULL, "$PATH"},
	{"echo $1", "shell.expansion", NULL, "$1"},
	{"echo $?", "shell.expansion", NULL, "$?"},
	{"echo $$", "shell.expansion", NULL, "$$"},
	{"echo $@", "shell.expansion", NULL, "$@"},
	{"echo $'\\x41'", "shell.expansion", NULL, "$'"},
	{"diff <(ls a) <(ls b)", "shell.substitution", NULL, "<("},
	{"tee >(cat)", "shell.substitution", NULL, ">("},
	/* redirection */
	{"echo x > out", "shell.redirect", NULL, ">"},
	{"echo x >out", "shell.redirect", NULL, ">"},
	{"echo x>>out", "shell.redirect", NULL, ">>"},
	{"cat < in", "shell.redirect", NULL, "<"},
	{"cat << EOF", "shell.redirect", NULL, "<<"},
	{"make 2> err", "shell.redirect", NULL, "2>"},
	{"make 2>&1", "shell.redirect", NULL, "2>&"},
	{"make &> log", "shell.redirect", NULL, "&>"},
	{"make >| log", "shell.redirect", NULL, ">|"},
	{"make 10>x", "shell.redirect", NULL, "10>"},
	{"make a2>x", "shell.redirect", NULL, ">"},
	/* globs, tilde, braces */
	{"ls *.py", "shell.glob", NULL, "*"},
	{"ls test?.py", "shell.glob", NULL, "?"},
	{"ls [ab].py", "shell.glob", NULL, "["},
	{"ls ~", "shell.tilde", NULL, "~"},
	{"ls ~/x", "shell.tilde", NULL, "~"},
	{"ls ~root", "shell.tilde", NULL, "~"},
	{"pip install --prefix=~/x", "shell.tilde", NULL, "~"},
	{"echo {a,b}", "shell.brace", NULL, "{"},
	{"echo a{1..3}", "shell.brace", NULL, "{"},
	/* subshells, comments, assignments */
	{"(ls)", "shell.subshell", NULL, "("},
	{"ls )", "shell.subshell", NULL, ")"},
	{"ls # comment", "shell.comment", NULL, "#"},
	{"# only", "shell.comment", NULL, "#"},
	{"FOO=1 ls", "shell.assignment", NULL, "FOO="},
	{"FOO=1", "shell.assignment", NULL, "FOO="},
	{"_X=a ls", "shell.assignment", NULL, "_X="},
	{"'FOO=1' ls", NULL, "FOO=1|ls", NULL},
	{"ls FOO=1", NULL, "ls|FOO=1", NULL},
	/* quoting errors, control characters, empty */
	{"echo 'abc", "shell.quote", NULL, "'"},
	{"echo \"abc", "shell.quote", NULL, "\""},
	{"echo abc\\", "shell.quote", NULL, "\\"},
	{"echo \"a\\\"", "shell.quote", NULL, "\""},
	{"echo a\rb", "shell.control", NULL, "\\x0d"},
	{"echo \x1b[31m", "shell.control", NULL, "\\x1b"},
	{"echo \x7f", "shell.control", NULL, "\\x7f"},
	{"", "shell.empty", NULL, NULL},
	{"   ", "shell.empty", NULL, NULL},
	{"\t", "shell.empty", NULL, NULL},
	/* the first refusal wins, left to right */
	{"ls | x ; y", "shell.pipe", NULL, "|"},
	{"ls ; x | y", "shell.sequence", NULL, ";"},
	{"git status && git push origin main", "shell.and", NULL, "&&"},
	{"curl https://get.example.io/install.sh | sh", "shell.pipe", NULL, "|"},
};
/* clang-format on */

static void
join_words(const struct policy_words *w, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (int i = 0; i < w->argc; i++) {
		int n = snprintf(out + o, cap - o, "%s%s", i ? "|" : "", w->argv[i]);
		if (n < 0 || (size_t)n >= cap - o)
			break;
		o += (size_t)n;
	}
}

Test(policy_tokenize, table)
{
	struct policy_words w;
	policy_words_init(&w);
	for (size_t i = 0; i < WD_ARRAY_SIZE(cases); i++) {
		const struct tok_case *c = &cases[i];
		struct policy_refusal r = {0};
		int rc = policy_tokenize(c->in, strlen(c->in), &w, &r);
		const char *want_rule = c->rule;
		/* "echo a=~": a tilde right after the first '=' expands in bash */
		if (!c->rule && !c->words)
			want_rule = "shell.tilde";
		if (want_rule) {
			cr_expect_eq(rc, -1, "case %zu '%s': accepted, expected %s", i, c->in,
				     want_rule);
			if (rc == -1) {
				cr_expect_str_eq(r.rule, want_rule, "case %zu '%s': rule", i,
						 c->in);
				if (c->token)
					cr_expect_str_eq(r.token, c->token, "case %zu '%s': token",
							 i, c->in);
				cr_expect(r.what && *r.what, "case %zu: no explanation", i);
			}
		} else {
			cr_expect_eq(rc, 0, "case %zu '%s': refused %s", i, c->in,
				     r.rule ? r.rule : "?");
			if (rc == 0) {
				char got[512];
				join_words(&w, got, sizeof(got));
				cr_expect_str_eq(got, c->words, "case %zu '%s': words", i, c->in);
				cr_expect_null(w.argv[w.argc], "case %zu: argv not terminated", i);
			}
		}
	}
	policy_words_fini(&w);
}

Test(policy_tokenize, refuses_nul_byte)
{
	struct policy_words w;
	struct policy_refusal r;
	policy_words_init(&w);
	cr_expect_eq(policy_tokenize("ls\0rm", 5, &w, &r), -1);
	cr_expect_str_eq(r.rule, "shell.control");
	cr_expect_eq(policy_tokenize("ls '\0'", 6, &w, &r), -1);
	cr_expect_eq(policy_tokenize("ls \"\0\"", 6, &w, &r), -1);
	policy_words_fini(&w);
}

Test(policy_tokenize, long_command_spills_to_heap)
{
	struct policy_words w;
	struct policy_refusal r;
	policy_words_init(&w);
	size_t n = 3 * POLICY_WORDS_INLINE_BYTES;
	char *s = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		s[i] = (i % 2) ? ' ' : 'a';
	s[n] = '\0';
	cr_assert_eq(policy_tokenize(s, n, &w, &r), 0);
	cr_expect_eq(w.argc, (int)(n / 2));
	cr_expect_str_eq(w.argv[w.argc - 1], "a");
	cr_expect_neq(w.buf, w.buf_inline);
	/* reuse after a spill, then a short one */
	cr_assert_eq(policy_tokenize("ls -l", 5, &w, &r), 0);
	cr_expect_eq(w.argc, 2);
	free(s);
	policy_words_fini(&w);
	cr_expect_eq(w.buf, w.buf_inline);
}

Test(policy_tokenize, offset_points_at_the_token)
{
	struct policy_words w;
	struct policy_refusal r;
	policy_words_init(&w);
	const char *s = "git status && git push";
	cr_assert_eq(policy_tokenize(s, strlen(s), &w, &r), -1);
	cr_expect_eq(r.offset, 11);
	cr_expect_eq(strncmp(s + r.offset, "&&", 2), 0);
	policy_words_fini(&w);
}
