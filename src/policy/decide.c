/* decide.c - one decision: allow, deny (reason + advice) or pause.
 *
 * Order, and why:
 *  1. The shape of a string command (tokenize.c).  Composition is refused
 *     before the program is looked at, so `git status && git push` is
 *     refused for `&&`, never judged as git.
 *  2. The program, by basename: /bin/rm and rm are one decision.  An
 *     allowlist, never a denylist: a program the policy does not name is
 *     refused.  A relative path with a slash ("./pytest") is refused: it
 *     names a file in the workspace, which the model can write.
 *  3. The program's rules, word by word: subcommand (the first operand),
 *     forbidden options, the option allowlist, and every file argument's
 *     containment (path.c).  The first failing word decides.
 *  4. Approval patterns: a command that passed everything may still need a
 *     human ("git push").  A pause never widens the policy: a command that
 *     fails step 3 is denied, not paused.
 * Each decision names the rule that made it, as a path into the policy
 * document ("programs.git.approve[0]") or a built-in rule ("shell.pipe").
 */
#include "policy/policy.h"

#include <stdio.h>
#include <string.h>

const char *
policy_kind_name(enum policy_kind k)
{
	switch (k) {
	case POLICY_ALLOW:
		return "allow";
	case POLICY_DENY:
		return "deny";
	case POLICY_PAUSE:
		return "pause";
	}
	return "deny";
}

void
policy_decision_init(struct policy_decision *d)
{
	memset(d, 0, offsetof(struct policy_decision, words));
	policy_words_init(&d->words);
}

void
policy_decision_fini(struct policy_decision *d)
{
	policy_words_fini(&d->words);
}

/* Concatenate the NULL-terminated list of strings into dst (truncating).
 * The decision path formats with this instead of snprintf: a decision is
 * a few hundred nanoseconds and printf's machinery would be half of it. */
static void
put(char *dst, size_t cap, ...)
{
	va_list ap;
	size_t o = 0;
	va_start(ap, cap);
	for (const char *s; (s = va_arg(ap, const char *));) {
		size_t n = strlen(s);
		if (o + n >= cap)
			n = cap - 1 - o;
		memcpy(dst + o, s, n);
		o += n;
	}
	va_end(ap);
	dst[o] = '\0';
}

WD_PRINTF(4, 5)
static void
deny(struct policy_decision *d, const char *rule, const char *advice, const char *fmt, ...)
{
	va_list ap;
	d->kind = POLICY_DENY;
	put(d->rule, sizeof(d->rule), rule, (char *)NULL);
	va_start(ap, fmt);
	vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
	va_end(ap);
	put(d->advice, sizeof(d->advice), advice ? advice : "", (char *)NULL);
}

/* Advice for shell refusals: what to do instead, one line. */
static const char *
shell_advice(const char *rule)
{
	/* clang-format off */
	static const struct { const char *rule, *advice; } t[] = {
		{"shell.sequence", "run one program per call, without a shell; make a separate call for the next one"},
		{"shell.and", "run one program per call, without a shell; check its result, then make the next call"},
		{"shell.or", "run one program per call, without a shell; check its result, then make the next call"},
		{"shell.newline", "run one program per call; make a separate call for each line"},
		{"shell.background", "run the command in the foreground; each call waits for its program"},
		{"shell.pipe", "run the first program alone and read its output; filter with the program's own options"},
		{"shell.substitution", "run the inner command as its own call and write its result literally"},
		{"shell.expansion", "write the value literally; the command's environment is empty"},
		{"shell.redirect", "drop the redirection: the output comes back to you, and files are read by name"},
		{"shell.glob", "quote the pattern ('*.py') for a program that takes one, or name the files"},
		{"shell.tilde", "use a path inside the workspace"},
		{"shell.brace", "write each word out, or quote the braces"},
		{"shell.subshell", "run one program per call, without grouping"},
		{"shell.comment", "drop the comment, or quote the '#'"},
		{"shell.quote", "close the quote (or quote the backslash)"},
		{"shell.control", "remove the control character"},
		{"shell.assignment", "drop the assignment; the command's environment is set by warden"},
		{"shell.empty", "name a program to run"},
	};
	/* clang-format on */
	for (size_t i = 0; i < WD_ARRAY_SIZE(t); i++)
		if (!strcmp(t[i].rule, rule))
			return t[i].advice;
	return "run a single program without shell syntax";
}

static bool
in_list(const struct config_strv *l, const char *name, size_t nlen)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strncmp(l->v[i], name, nlen) && l->v[i][nlen] == '\0')
			return true;
	return false;
}

/* A forbidden option matches by name ("--output" matches "--output=x"),
 * and a forbidden short option "-X" also matches when it leads a cluster
 * or carries an attached value ("-Xvalue"): over-matching only refuses. */
static const char *
denied_option(const struct config_strv *l, const char *arg, size_t nlen)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *o = l->v[i];
		if (!strncmp(o, arg, nlen) && o[nlen] == '\0')
			return o;
		if (o[0] == '-' && o[1] && o[1] != '-' && !o[2] && arg[1] != '-' && arg[1] == o[1])
			return o;
	}
	return NULL;
}

static void
join(char *out, size_t cap, const struct config_strv *l)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < l->n && o < cap; i++) {
		int n = snprintf(out + o, cap - o, "%s%s", i ? ", " : "", l->v[i]);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

/* argv as one line for messages, truncated. */
static void
argv_line(char *out, size_t cap, int argc, char *const *argv)
{
	size_t o = 0;
	out[0] = '\0';
	for (int i = 0; i < argc && o + 1 < cap; i++) {
		int n = snprintf(out + o, cap - o, "%s%s", i ? " " : "", argv[i]);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

static bool
approve_matches(const struct config_approve *a, int argc, char *const *argv)
{
	size_t k = 0;
	for (int i = 1; i < argc && k < a->match.n; i++) {
		const char *want = a->match.v[k];
		size_t wl = strlen(want);
		if (!strcmp(argv[i], want) ||
		    (want[0] == '-' && !strncmp(argv[i], want, wl) && argv[i][wl] == '='))
			k++;
	}
	return k == a->match.n;
}

static void
copy_argv(struct policy_words *w, int argc, const char *const *argv)
{
	size_t bytes = 0;
	for (int i = 0; i < argc; i++)
		bytes += strlen(argv[i]) + 1;
	if (bytes > w->cap_bytes) {
		if (w->buf != w->buf_inline)
			free(w->buf);
		w->buf = wd_xmalloc(bytes);
		w->cap_bytes = bytes;
	}
	if ((size_t)argc + 1 > w->cap_args) {
		if (w->argv != w->argv_inline)
			free(w->argv);
		w->argv = wd_xmalloc(((size_t)argc + 1) * sizeof(char *));
		w->cap_args = (size_t)argc + 1;
	}
	size_t o = 0;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;
		memcpy(w->buf + o, argv[i], n);
		w->argv[i] = w->buf + o;
		o += n;
	}
	w->argc = argc;
	w->argv[argc] = NULL;
}

/* Check one path argument; returns true if the decision is made (deny). */
static bool
path_denied(const struct config_policy *p, const struct policy_request *req,
	    const struct config_program *pg, const char *arg, struct policy_decision *d)
{
	if (req->workspace_fd < 0 || pg->paths == CONFIG_PATHS_NONE)
		return false;
	int rc = policy_path_check(req->workspace_fd, req->workspace, p->mount, req->cwd, arg,
				   d->reason, sizeof(d->reason));
	if (rc == 0)
		return false;
	d->kind = POLICY_DENY;
	snprintf(d->rule, sizeof(d->rule), "%s",
		 rc == 1 ? "workspace.containment" : "workspace.resolve");
	snprintf(d->advice, sizeof(d->advice),
		 "use paths inside the workspace (relative, or below %s); links out of it are "
		 "not followed",
		 p->mount);
	return true;
}

int
policy_decide(const struct config_policy *p, const struct policy_request *req,
	      struct policy_decision *d, struct wd_err *err)
{
	d->kind = POLICY_ALLOW;
	d->rule[0] = d->reason[0] = d->advice[0] = d->approval_id[0] = '\0';
	d->program = NULL;

	/* 1. The shape. */
	if (req->command) {
		struct policy_refusal r;
		if (policy_tokenize(req->command, strlen(req->command), &d->words, &r) < 0) {
			d->words.argc = 0;
			d->words.argv[0] = NULL;
			d->kind = POLICY_DENY;
			put(d->rule, sizeof(d->rule), r.rule, (char *)NULL);
			put(d->advice, sizeof(d->advice), shell_advice(r.rule), (char *)NULL);
			if (r.token[0]) {
				char off[24];
				snprintf(off, sizeof(off), "%zu", r.offset);
				put(d->reason, sizeof(d->reason), "'", r.token, "' at offset ", off,
				    " ", r.what, "; warden runs one program without a shell",
				    (char *)NULL);
			} else {
				put(d->reason, sizeof(d->reason), "the command ", r.what,
				    (char *)NULL);
			}
			return 0;
		}
	} else {
		if (req->argc < 0 || (req->argc > 0 && !req->argv))
			return wd_err_set(err, WD_E_INVAL, "request without a command");
		copy_argv(&d->words, req->argc, req->argv);
	}
	int argc = d->words.argc;
	char *const *argv = d->words.argv;
	if (argc == 0 || !argv[0][0]) {
		deny(d, "shell.empty", shell_advice("shell.empty"), "the command is empty");
		return 0;
	}

	/* 2. The program, by basename. */
	const char *prog = argv[0];
	const char *base = strrchr(prog, '/');
	if (base) {
		if (prog[0] != '/') {
			deny(d, "programs.path",
			     "call the program by its name (e.g. pytest), not as a file of the "
			     "workspace",
			     "program '%s' is a relative path: it would run a file from the "
			     "workspace, "
			     "not an allowed program",
			     prog);
			return 0;
		}
		size_t ml = strlen(p->mount);
		if ((!strncmp(prog, p->mount, ml) && prog[ml] == '/') ||
		    (req->workspace && *req->workspace &&
		     !strncmp(prog, req->workspace, strlen(req->workspace)) &&
		     prog[strlen(req->workspace)] == '/')) {
			deny(d, "programs.path",
			     "call the program by its name, not as a file of the workspace",
			     "program '%s' is a file of the workspace, not an allowed program",
			     prog);
			return 0;
		}
		base++;
	} else {
		base = prog;
	}
	size_t blen = strlen(base);
	const struct config_program *pg = blen ? config_program_find(p, base, blen) : NULL;
	if (!pg) {
		d->kind = POLICY_DENY;
		put(d->rule, sizeof(d->rule), "programs", (char *)NULL);
		put(d->advice, sizeof(d->advice), "allowed programs: ", p->allowed_names,
		    (char *)NULL);
		put(d->reason, sizeof(d->reason), "program '", base,
		    "' is not in the policy's allowlist", (char *)NULL);
		return 0;
	}
	d->program = pg;

	/* 3. The program's rules, word by word. */
	bool end_of_opts = false, sub_seen = false, value_opt_seen = false;
	int operands = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!end_of_opts && a[0] == '-' && a[1]) {
			if (a[1] == '-' && !a[2]) {
				end_of_opts = true;
				continue;
			}
			const char *eq = strchr(a, '=');
			size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
			const char *bad = denied_option(&pg->deny_options, a, nlen);
			if (bad) {
				char rule[96];
				snprintf(rule, sizeof(rule), "programs.%s.deny_options", pg->name);
				char adv[sizeof(d->advice)];
				snprintf(adv, sizeof(adv), "%s", pg->advice ? pg->advice : "");
				if (!pg->advice)
					snprintf(adv, sizeof(adv), "run %s without %s", pg->name,
						 bad);
				deny(d, rule, adv,
				     "option '%s' of %s is refused by the policy (%s)", a, pg->name,
				     bad);
				return 0;
			}
			bool is_value_opt = in_list(&pg->value_options, a, nlen);
			bool attached = false;
			if (!is_value_opt && a[1] != '-' && !eq) {
				/* "-n5": a short value option with its value attached */
				for (size_t k = 0; k < pg->value_options.n; k++) {
					const char *vo = pg->value_options.v[k];
					if (vo[1] != '-' && vo[1] == a[1] && !vo[2]) {
						attached = true;
						break;
					}
				}
			}
			if (pg->options_listed && !in_list(&pg->allow_options, a, nlen) &&
			    !(attached && in_list(&pg->allow_options, a, 2))) {
				char rule[96], list[200], adv[sizeof(d->advice)];
				snprintf(rule, sizeof(rule), "programs.%s.allow_options", pg->name);
				join(list, sizeof(list), &pg->allow_options);
				if (pg->advice)
					snprintf(adv, sizeof(adv), "%s", pg->advice);
				else
					snprintf(adv, sizeof(adv), "%s accepts only: %s", pg->name,
						 list);
				deny(d, rule, adv,
				     "option '%.*s' of %s is not among its allowed options (%s)",
				     (int)nlen, a, pg->name, list[0] ? list : "none");
				return 0;
			}
			if (eq && path_denied(p, req, pg, eq + 1, d))
				return 0;
			if (attached && path_denied(p, req, pg, a + 2, d))
				return 0;
			if (is_value_opt || attached)
				value_opt_seen = true;
			if (is_value_opt && !eq && i + 1 < argc) {
				i++;
				if (path_denied(p, req, pg, argv[i], d))
					return 0;
			}
			continue;
		}
		if (pg->has_subcommands && !sub_seen) {
			sub_seen = true;
			size_t al = strlen(a);
			if (!in_list(&pg->subcommands, a, al)) {
				char rule[96], list[200], adv[sizeof(d->advice)];
				snprintf(rule, sizeof(rule), "programs.%s.subcommands", pg->name);
				join(list, sizeof(list), &pg->subcommands);
				snprintf(adv, sizeof(adv), "%s subcommands allowed here: %s",
					 pg->name, list);
				deny(d, rule, adv,
				     "'%s %s' is not allowed: %s allows only the subcommands %s",
				     pg->name, a, pg->name, list);
				return 0;
			}
			continue;
		}
		operands++;
		/* skip_first: the first operand is data (grep's pattern), unless an
		 * option with a value came first (grep -e PATTERN FILE...): then
		 * every operand is judged, erring towards refusal. */
		if (operands == 1 && pg->paths == CONFIG_PATHS_SKIP_FIRST && !value_opt_seen)
			continue;
		if (path_denied(p, req, pg, a, d))
			return 0;
	}

	/* 4. Approval patterns. */
	for (size_t k = 0; k < pg->napprove; k++) {
		const struct config_approve *ap = &pg->approve[k];
		if (!approve_matches(ap, argc, argv))
			continue;
		char line[200];
		argv_line(line, sizeof(line), argc, argv);
		d->kind = POLICY_PAUSE;
		snprintf(d->rule, sizeof(d->rule), "programs.%s.approve[%zu]", pg->name, k);
		snprintf(d->reason, sizeof(d->reason), "'%s' needs a human's approval%s%s", line,
			 ap->reason ? ": " : "", ap->reason ? ap->reason : "");
		policy_approval_id(p, req, argc, (const char *const *)argv, d->approval_id, NULL);
		snprintf(d->advice, sizeof(d->advice),
			 "ask the user to run 'warden approve %s', then retry the exact same "
			 "command; do not work around it",
			 d->approval_id);
		return 0;
	}

	put(d->rule, sizeof(d->rule), "programs.", pg->name, (char *)NULL);
	put(d->reason, sizeof(d->reason), pg->name, " is allowed by the policy", (char *)NULL);
	return 0;
}
