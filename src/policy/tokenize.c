/* tokenize.c - split a command string into words without a shell.
 *
 * An agent hands warden a string like `pytest tests/ -q`.  warden never
 * gives that string to /bin/sh: it splits it here with POSIX quoting (single
 * quotes, double quotes, backslash) and executes the words directly.  Any
 * character that a shell would have treated as composition or expansion is
 * therefore *refused*, not ignored: silently passing `&&` as an argument to
 * git would run something other than what the model believes it asked for,
 * and the refusal teaches the model what to do instead.
 *
 * Refused when unquoted (rule "shell.<kind>"):
 *   ;  newline                  sequence / newline     a second command
 *   &&  ||                       and / or               a conditional second command
 *   |  |&                        pipe
 *   &                            background
 *   `  $(  <(  >(                substitution           runs another command
 *   $NAME  ${  $1 $? ...  $'     expansion              reads the environment
 *   >  >>  <  2>  &>  <<         redirect               opens files behind our back
 *   *  ?  [                      glob                   expands to file names
 *                                (policy_tokenize_globs defers these: in a
 *                                data option's value they are the program's
 *                                own pattern, decided in decide.c)
 *   ~ (word start, after =)      tilde                  a home directory
 *   {                            brace                  expands into several words
 *   (  )                         subshell
 *   # (word start)               comment                drops the rest
 *   NAME=value before the program assignment
 * Inside double quotes `$` and backquote still expand in a shell, so they
 * are refused there too; everything else inside quotes is literal (a quoted
 * newline is an argument containing a newline, not a second command).
 * Unterminated quotes and a trailing backslash are refused (shell.quote),
 * NUL and other control characters are refused (shell.control).
 *
 * The refusal is of the shape, before the program is looked at:
 * `git status && git push` is refused for `&&`, whatever git's rules say.
 */
#include "policy/policy.h"

#include <stdio.h>
#include <string.h>

void
policy_words_init(struct policy_words *w)
{
	w->argc = 0;
	w->nglobs = 0;
	w->argv = w->argv_inline;
	w->buf = w->buf_inline;
	w->cap_args = POLICY_WORDS_INLINE_ARGS;
	w->cap_bytes = POLICY_WORDS_INLINE_BYTES;
	w->argv[0] = NULL;
}

void
policy_words_fini(struct policy_words *w)
{
	if (w->argv != w->argv_inline)
		free(w->argv);
	if (w->buf != w->buf_inline)
		free(w->buf);
	policy_words_init(w);
}

/* Make room for a command of len input bytes: at most len+1 output bytes
 * (every word needs at least one input byte per output byte plus its NUL:
 * an empty word '' takes two input bytes) and len/2+2 words. */
static void
words_reserve(struct policy_words *w, size_t len)
{
	size_t bytes = len + 1, args = len / 2 + 2;
	if (bytes > w->cap_bytes) {
		if (w->buf != w->buf_inline)
			free(w->buf);
		w->buf = wd_xmalloc(bytes);
		w->cap_bytes = bytes;
	}
	if (args > w->cap_args) {
		if (w->argv != w->argv_inline)
			free(w->argv);
		w->argv = wd_xmalloc(args * sizeof(char *));
		w->cap_args = args;
	}
	w->argc = 0;
	w->argv[0] = NULL;
}

static int
refuse(struct policy_refusal *r, const char *rule, const char *what, const char *tok, size_t toklen,
       size_t off)
{
	r->rule = rule;
	r->what = what;
	r->offset = off;
	bool cut = toklen >= sizeof(r->token);
	if (cut)
		toklen = sizeof(r->token) - 4;
	memcpy(r->token, tok, toklen);
	r->token[toklen] = '\0';
	if (cut)
		memcpy(r->token + toklen, "...", 4);
	return -1;
}

static bool
is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

/* s[i] == '$'.  Returns -1 (refused) or 0 when the '$' is literal (at the
 * end, before a space, '/', ... where no shell expands it). */
static int
dollar(const char *s, size_t len, size_t i, bool in_dq, struct policy_refusal *r)
{
	char n = i + 1 < len ? s[i + 1] : '\0';
	if (n == '(') {
		if (i + 2 < len && s[i + 2] == '(')
			return refuse(r, "shell.expansion", "would evaluate arithmetic", s + i, 3,
				      i);
		return refuse(r, "shell.substitution",
			      "would run another command and paste its output into this one", s + i,
			      2, i);
	}
	if (n == '{')
		return refuse(r, "shell.expansion", "would expand a variable", s + i, 2, i);
	if (is_name_start(n)) {
		size_t j = i + 1;
		while (j < len && is_name_char(s[j]))
			j++;
		return refuse(r, "shell.expansion", "would expand a variable", s + i, j - i, i);
	}
	if ((n >= '0' && n <= '9') || (n && strchr("@*#?-$!", n)))
		return refuse(r, "shell.expansion", "would expand a special parameter", s + i, 2,
			      i);
	if (!in_dq && (n == '\'' || n == '"'))
		return refuse(r, "shell.expansion", "would apply bash's $'...' or $\"...\" quoting",
			      s + i, 2, i);
	return 0;
}

static int tokenize(const char *s, size_t len, struct policy_words *w, struct policy_refusal *r,
		    bool defer_globs);

int
policy_tokenize(const char *s, size_t len, struct policy_words *w, struct policy_refusal *r)
{
	return tokenize(s, len, w, r, false);
}

int
policy_tokenize_globs(const char *s, size_t len, struct policy_words *w, struct policy_refusal *r)
{
	return tokenize(s, len, w, r, true);
}

static int
tokenize(const char *s, size_t len, struct policy_words *w, struct policy_refusal *r,
	 bool defer_globs)
{
	words_reserve(w, len);
	w->nglobs = 0;
	char *out = w->buf;
	size_t o = 0, i = 0, wstart = 0, raw_start = 0;
	size_t after_eq = (size_t)-1; /* output offset right after the word's first '=' */
	bool in_word = false, digits_only = true;

#define ADD(ch)                                                                                    \
	do {                                                                                       \
		if (!in_word) {                                                                    \
			in_word = true;                                                            \
			wstart = o;                                                                \
		}                                                                                  \
		out[o++] = (ch);                                                                   \
	} while (0)
#define START_WORD()                                                                               \
	do {                                                                                       \
		if (!in_word) {                                                                    \
			in_word = true;                                                            \
			wstart = o;                                                                \
			raw_start = i;                                                             \
		}                                                                                  \
	} while (0)

	while (i < len) {
		char c = s[i];
		unsigned char uc = (unsigned char)c;
		if (c == ' ' || c == '\t') {
			if (in_word) {
				out[o++] = '\0';
				w->argv[w->argc++] = out + wstart;
				if (w->argc == 1) {
					/* NAME=value before the program sets the environment in
					 * a shell; here it would be taken for a program name. */
					size_t j = raw_start;
					if (is_name_start(s[j])) {
						while (j < len && is_name_char(s[j]))
							j++;
						if (j < len && s[j] == '=')
							return refuse(
							    r, "shell.assignment",
							    "would set an environment variable "
							    "for the command",
							    s + raw_start, j + 1 - raw_start,
							    raw_start);
					}
				}
				in_word = false;
			}
			digits_only = true;
			after_eq = (size_t)-1;
			i++;
			continue;
		}
		if (c == '\n')
			return refuse(r, "shell.newline", "would start a second command", "\\n", 2,
				      i);
		if (uc < 0x20 || uc == 0x7f) {
			char tok[8];
			snprintf(tok, sizeof(tok), "\\x%02x", uc);
			return refuse(r, "shell.control", "is a control character no command needs",
				      tok, strlen(tok), i);
		}
		START_WORD();
		switch (c) {
		case ';':
			return refuse(r, "shell.sequence",
				      "would run a second command after the first", s + i, 1, i);
		case '&':
			if (i + 1 < len && s[i + 1] == '&')
				return refuse(r, "shell.and",
					      "would run a second command if the first succeeds",
					      s + i, 2, i);
			if (i + 1 < len && s[i + 1] == '>')
				return refuse(r, "shell.redirect",
					      "would redirect the output into a file", s + i, 2, i);
			return refuse(r, "shell.background",
				      "would run the command in the background", s + i, 1, i);
		case '|':
			if (i + 1 < len && s[i + 1] == '|')
				return refuse(r, "shell.or",
					      "would run a second command if the first fails",
					      s + i, 2, i);
			return refuse(r, "shell.pipe", "would pipe the output into another program",
				      s + i, i + 1 < len && s[i + 1] == '&' ? 2 : 1, i);
		case '`':
			return refuse(
			    r, "shell.substitution",
			    "would run another command and paste its output into this one", s + i,
			    1, i);
		case '$':
			if (dollar(s, len, i, false, r) < 0)
				return -1;
			ADD(c);
			digits_only = false;
			i++;
			continue;
		case '>':
		case '<': {
			size_t from = i, to = i + 1;
			if (in_word && digits_only && o > wstart) /* 2> 1>> */
				from = raw_start;
			if (c == '<' && to < len && s[to] == '(')
				return refuse(
				    r, "shell.substitution",
				    "would run another command and pass its output as a file",
				    s + i, 2, i);
			if (c == '>' && to < len && s[to] == '(')
				return refuse(
				    r, "shell.substitution",
				    "would run another command and feed it through a file", s + i,
				    2, i);
			if (to < len && (s[to] == c || s[to] == '&' || s[to] == '|'))
				to++;
			const char *what = c == '<' ? "would read the input from a file"
						    : "would redirect the output into a file";
			if (c == '>' && to - i == 2 && s[i + 1] == '>')
				what = "would append the output to a file";
			if (c == '<' && to - i == 2 && s[i + 1] == '<')
				what = "would read a here-document";
			if (from != i)
				what = "would redirect a stream into a file";
			return refuse(r, "shell.redirect", what, s + from, to - from, from);
		}
		case '(':
		case ')':
			return refuse(r, "shell.subshell", "would group commands in a subshell",
				      s + i, 1, i);
		case '*':
		case '?':
		case '[': {
			/* Deferred: nothing expands it, and whether it is the
			 * program's own pattern (find -name *.py) depends on
			 * the option before it, which only the decision knows.
			 * The word is recorded once, at its first glob. */
			struct policy_glob *g = w->nglobs ? &w->globs[w->nglobs - 1] : NULL;
			if (defer_globs && g && g->word == w->argc && in_word) {
				START_WORD();
				ADD(c);
				digits_only = false;
				i++;
				continue;
			}
			if (defer_globs && w->nglobs < POLICY_WORDS_GLOBS) {
				w->globs[w->nglobs++] = (struct policy_glob){
				    .word = w->argc,
				    .at = in_word ? o - wstart : 0,
				    .offset = i,
				    .c = c,
				};
				START_WORD();
				ADD(c);
				digits_only = false;
				i++;
				continue;
			}
		}
			return refuse(
			    r, "shell.glob",
			    "would expand to the names of matching files (nothing expands "
			    "it here)",
			    s + i, 1, i);
		case '{':
			return refuse(r, "shell.brace", "would expand into several words", s + i, 1,
				      i);
		case '~':
			if (o == wstart || o == after_eq)
				return refuse(r, "shell.tilde", "would expand to a home directory",
					      s + i, 1, i);
			ADD(c);
			digits_only = false;
			i++;
			continue;
		case '#':
			if (o == wstart)
				return refuse(r, "shell.comment",
					      "would turn the rest of the line into a comment",
					      s + i, 1, i);
			ADD(c);
			digits_only = false;
			i++;
			continue;
		case '\\':
			if (i + 1 >= len)
				return refuse(r, "shell.quote", "is a trailing backslash", s + i, 1,
					      i);
			if (s[i + 1] == '\n') { /* line continuation */
				i += 2;
				continue;
			}
			if (s[i + 1] == '\0' || (unsigned char)s[i + 1] < 0x20)
				return refuse(r, "shell.control",
					      "is a control character no command needs", "\\x", 2,
					      i + 1);
			ADD(s[i + 1]);
			digits_only = false;
			i += 2;
			continue;
		case '\'': {
			const char *q = memchr(s + i + 1, '\'', len - i - 1);
			if (!q)
				return refuse(r, "shell.quote",
					      "opens a quote that is never closed", s + i, 1, i);
			size_t n = (size_t)(q - (s + i + 1));
			if (memchr(s + i + 1, '\0', n))
				return refuse(r, "shell.control",
					      "is a control character no command needs", "\\x00", 4,
					      i);
			memcpy(out + o, s + i + 1, n);
			o += n;
			digits_only = false;
			i += n + 2;
			continue;
		}
		case '"': {
			size_t j = i + 1;
			for (;;) {
				if (j >= len)
					return refuse(r, "shell.quote",
						      "opens a quote that is never closed", s + i,
						      1, i);
				char d = s[j];
				if (d == '"')
					break;
				if (d == '\0')
					return refuse(r, "shell.control",
						      "is a control character no command needs",
						      "\\x00", 4, j);
				if (d == '`')
					return refuse(
					    r, "shell.substitution",
					    "would run another command and paste its output "
					    "into this one (even inside double quotes)",
					    s + j, 1, j);
				if (d == '$') {
					if (dollar(s, len, j, true, r) < 0)
						return -1;
					out[o++] = d;
					j++;
					continue;
				}
				if (d == '\\' && j + 1 < len && strchr("$`\"\\\n", s[j + 1]) &&
				    s[j + 1]) {
					if (s[j + 1] != '\n')
						out[o++] = s[j + 1];
					j += 2;
					continue;
				}
				out[o++] = d;
				j++;
			}
			digits_only = false;
			i = j + 1;
			continue;
		}
		case '=':
			if (after_eq == (size_t)-1)
				after_eq = o + 1;
			ADD(c);
			digits_only = false;
			i++;
			continue;
		case '\0':
			return refuse(r, "shell.control", "is a control character no command needs",
				      "\\x00", 4, i);
		default:
			if (c < '0' || c > '9')
				digits_only = false;
			ADD(c);
			i++;
			continue;
		}
	}
	if (in_word) {
		out[o++] = '\0';
		w->argv[w->argc++] = out + wstart;
		if (w->argc == 1) {
			size_t j = raw_start;
			if (is_name_start(s[j])) {
				while (j < len && is_name_char(s[j]))
					j++;
				if (j < len && s[j] == '=')
					return refuse(r, "shell.assignment",
						      "would set an environment variable for the "
						      "command",
						      s + raw_start, j + 1 - raw_start, raw_start);
			}
		}
	}
	w->argv[w->argc] = NULL;
	if (w->argc == 0)
		return refuse(r, "shell.empty", "is an empty command", "", 0, 0);
	return 0;
#undef ADD
#undef START_WORD
}
