/* decide.c - one decision: allow, deny (reason + advice) or pause.
 *
 * Order, and why:
 *  1. The shape of a string command (tokenize.c).  Composition is refused
 *     before the program is looked at, so `git status && git push` is
 *     refused for `&&`, never judged as git.
 *  2. The program.  An allowlist, never a denylist: a program the policy
 *     does not name is refused.  A bare name is found along the jail's
 *     PATH, in read-only system directories, and judged by that name
 *     (/bin/rm and rm are one decision).  A word with a slash is resolved
 *     as the jail will resolve it (resolve.c): a system file is judged by
 *     its name; a file of the workspace, which the model can write, only
 *     by a workspace.programs rule naming it; anything else is refused.
 *  3. The environment: variables that make any program load code (LD_*)
 *     or change what an allowed one does (GIT_*) are refused by name.
 *  4. The program's rules, word by word: subcommand (the first operand),
 *     forbidden options (abbreviated and clustered as the program's parser
 *     would read them: options.c), the option allowlist, and every file
 *     argument's containment (path.c).  The first failing word decides.
 *  5. Approval patterns: a command that passed everything may still need a
 *     human ("git push").  A pause never widens the policy: a command that
 *     fails step 4 is denied, not paused.
 * Each decision names the rule that made it, as a path into the policy
 * document ("programs.git.approve[0]") or a built-in rule ("shell.pipe").
 */
#include "policy/policy.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
		{"shell.glob", "warden does not expand globs: name the files (list them first with find . -name 'PATTERN'), or give the pattern to the program's own option (grep --include=*.py) or quote it ('*.py')"},
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

/* argv as one line for the human who approves it (a pause's reason).
 * Why: joined with bare spaces, "push" "origin main" read as "push"
 * "origin" "main", and a cut at the buffer's end hid the words after a
 * long argument with no sign.  So a word that is empty or holds a space,
 * a tab, a quote or a backslash is shown in double quotes with " and \
 * escaped, and past cap the bytes left out are counted.  Control and
 * invisible characters are escaped where the line is shown
 * (util/escape.c). */
static void
argv_line(char *out, size_t cap, int argc, char *const *argv)
{
	char *all = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&all, &len);
	if (!f)
		abort();
	for (int i = 0; i < argc; i++) {
		const char *w = argv[i];
		if (i)
			fputc(' ', f);
		if (w[0] && !strpbrk(w, " \t\"'\\")) {
			fputs(w, f);
			continue;
		}
		fputc('"', f);
		for (const char *c = w; *c; c++) {
			if (*c == '"' || *c == '\\')
				fputc('\\', f);
			fputc(*c, f);
		}
		fputc('"', f);
	}
	if (fclose(f) != 0 || !all)
		abort();
	if (len < cap) {
		memcpy(out, all, len + 1);
	} else {
		/* room for the count; never cut inside a UTF-8 sequence */
		size_t keep = cap > 48 ? cap - 48 : 0;
		while (keep > 0 && ((unsigned char)all[keep] & 0xc0) == 0x80)
			keep--;
		snprintf(out, cap, "%.*s ... (%zu more bytes)", (int)keep, all, len - keep);
	}
	free(all);
}

static bool
approve_matches(const struct config_approve *a, int argc, char *const *argv)
{
	size_t k = 0;
	for (int i = 1; i < argc && k < a->match.n; i++) {
		if (policy_option_matches(a->match.v[k], argv[i]))
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
	w->nglobs = 0; /* an argv is never expanded: its words are literal */
}

/* Check one path argument; returns true if the decision is made (deny). */
static bool
path_denied(const struct config_policy *p, const struct policy_request *req,
	    const struct config_program *pg, const char *arg, struct policy_decision *d)
{
	if (req->workspace_fd < 0 || pg->paths == CONFIG_PATHS_NONE || !*arg)
		return false;
	/* Judged in the workspace the command will see: in a cow sandbox or
	 * session, its overlay, where the model may have made a link out
	 * that the host directory does not hold.  An absolute path outside
	 * the workspace is outside wherever it is judged: decided without
	 * the view, which may cost a round trip to a session's monitor. */
	int fd = req->workspace_fd, rc;
	const char *why = NULL;
	bool lexical = arg[0] == '/' && !policy_path_below(p->mount, req->workspace, arg);
	if (!lexical && req->view && policy_request_view(req, &fd, &why) < 0) {
		/* Fail closed: judging on the host directory instead would tell
		 * the human a path is contained that the command may see as a
		 * link out. */
		d->kind = POLICY_DENY;
		snprintf(d->rule, sizeof(d->rule), "%s", "workspace.view");
		snprintf(d->reason, sizeof(d->reason),
			 "path '%s' cannot be checked: %s; refused rather than judged on the "
			 "host directory",
			 arg, why);
		snprintf(d->advice, sizeof(d->advice), "%s",
			 "the sandbox's workspace could not be opened to check this path; "
			 "retry, or run it in another sandbox");
		return true;
	}
	if (req->view && !lexical)
		rc = policy_path_check_view(fd, req->workspace, p->mount, req->cwd, arg, d->reason,
					    sizeof(d->reason));
	else
		rc = policy_path_check(fd, req->workspace, p->mount, req->cwd, arg, d->reason,
				       sizeof(d->reason));
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

/* 1. The shape: tokenize a string command.  Returns 1 if refused. */
static int
shape(const struct policy_request *req, struct policy_decision *d, struct wd_err *err)
{
	if (!req->command) {
		if (req->argc < 0 || (req->argc > 0 && !req->argv))
			return wd_err_set(err, WD_E_INVAL, "request without a command");
		copy_argv(&d->words, req->argc, req->argv);
		return 0;
	}
	struct policy_refusal r;
	if (policy_tokenize_globs(req->command, strlen(req->command), &d->words, &r) == 0)
		return 0;
	d->words.argc = 0;
	d->words.argv[0] = NULL;
	d->words.nglobs = 0;
	d->kind = POLICY_DENY;
	put(d->rule, sizeof(d->rule), r.rule, (char *)NULL);
	put(d->advice, sizeof(d->advice), shell_advice(r.rule), (char *)NULL);
	if (r.token[0]) {
		char off[24];
		snprintf(off, sizeof(off), "%zu", r.offset);
		put(d->reason, sizeof(d->reason), "'", r.token, "' at offset ", off, " ", r.what,
		    "; warden runs one program without a shell", (char *)NULL);
	} else {
		put(d->reason, sizeof(d->reason), "the command ", r.what, (char *)NULL);
	}
	return 1;
}

static void
not_allowed(const struct config_policy *p, const char *name, struct policy_decision *d)
{
	d->kind = POLICY_DENY;
	put(d->rule, sizeof(d->rule), "programs", (char *)NULL);
	put(d->advice, sizeof(d->advice), "allowed programs: ", p->allowed_names, (char *)NULL);
	put(d->reason, sizeof(d->reason), "program '", name, "' is not in the policy's allowlist",
	    (char *)NULL);
}

/* 2. A program given by a path: the rule of the file it resolves to. */
static const struct config_program *
program_by_path(const struct config_policy *p, const struct policy_request *req, const char *prog,
		struct policy_decision *d)
{
	struct policy_prog r;
	const struct config_program *pg = NULL;
	policy_program_resolve(req, p->mount, prog, &r);
	switch (r.kind) {
	case POLICY_PROG_SYSTEM:
		if (!(pg = config_program_find(p, r.name, strlen(r.name))))
			not_allowed(p, r.name, d);
		return pg;
	case POLICY_PROG_WORKSPACE:
		/* Never the rule of a system program with the same basename:
		 * the model can write this file. */
		if ((pg = config_wprogram_find(p, r.rel)))
			return pg;
		deny(d, "programs.path",
		     "call the program by its name (e.g. pytest); a file of the workspace runs "
		     "only where the policy names it under workspace.programs",
		     "program '%s' resolves to %s, a file of the workspace (%s), which the "
		     "policy does not name",
		     prog, r.where, r.rel);
		return NULL;
	case POLICY_PROG_OTHER:
		break;
	}
	if (r.no_view) {
		/* fail closed, as for a path operand (path_denied) */
		deny(d, "workspace.view",
		     "the sandbox's workspace could not be opened to resolve this program; "
		     "retry, or run it in another sandbox",
		     "program '%s' cannot be resolved: %s; refused rather than resolved in the "
		     "host directory",
		     prog, r.why);
		return NULL;
	}
	deny(d, "programs.path",
	     "call the program by its name (e.g. pytest): it is looked up in the system "
	     "directories",
	     "program '%s' resolves to %s, which %s", prog, r.where, r.why);
	return NULL;
}

static const struct config_program *
program(const struct config_policy *p, const struct policy_request *req, const char *prog,
	struct policy_decision *d)
{
	if (strchr(prog, '/'))
		return program_by_path(p, req, prog, d);
	/* In an image a bare name is the first file of that name
	 * along the jail's PATH in the image, judged as that path is: the
	 * host's system directories are known, an image's are whatever it
	 * holds (a /usr/bin/cat that links into the workspace runs a file
	 * the model wrote).  A name found nowhere is judged by name: the
	 * jail will fail to find it (127).  Each candidate is walked in the
	 * jail's view, component by component (resolve.c), never by the
	 * host's lstat of ROOT/usr/bin/NAME: that followed the image's links
	 * on the host's side, so an image whose usr links to /workspace had
	 * "cat" missing here, judged by name, and the jail then ran the
	 * model's /workspace/bin/cat under cat's rule.  Only a name missing
	 * in the image's own read-only trees moves on to the next directory;
	 * one whose directory leads into the workspace is judged there (the
	 * model could create it between this decision and the exec). */
	if (req->system_root) {
		static const char *const path[] = {"/usr/local/bin",  "/usr/bin",  "/bin",
						   "/usr/local/sbin", "/usr/sbin", "/sbin"};
		for (size_t i = 0; i < WD_ARRAY_SIZE(path); i++) {
			char jail[PATH_MAX];
			struct policy_prog r;
			if (snprintf(jail, sizeof(jail), "%s/%s", path[i], prog) >=
			    (int)sizeof(jail))
				return program_by_path(p, req, jail, d); /* refused: too long */
			policy_program_resolve(req, p->mount, jail, &r);
			if (r.missing)
				continue;
			return program_by_path(p, req, jail, d);
		}
	}
	const struct config_program *pg = config_program_find(p, prog, strlen(prog));
	if (!pg)
		not_allowed(p, prog, d);
	return pg;
}

/* 3. The environment.  Returns true if refused. */
static bool
env_denied(const struct config_policy *p, const struct config_program *pg,
	   const struct policy_request *req, struct policy_decision *d)
{
	for (size_t i = 0; req->env && i < req->nenv; i++) {
		const char *e = req->env[i];
		const char *eq = strchr(e, '=');
		size_t n = eq ? (size_t)(eq - e) : strlen(e);
		const struct config_strv *lists[] = {&p->env_deny, &pg->deny_env};
		for (size_t l = 0; l < 2; l++)
			for (size_t k = 0; k < lists[l]->n; k++) {
				const char *pat = lists[l]->v[k];
				if (!config_env_match(pat, e, n))
					continue;
				char rule[96];
				snprintf(rule, sizeof(rule), "%s%s", l ? pg->rule : "env.deny",
					 l ? ".deny_env" : "");
				char adv[128];
				snprintf(adv, sizeof(adv), "run %s without setting %.*s", pg->name,
					 (int)(n < 64 ? n : 64), e);
				deny(d, rule, adv,
				     "environment variable %.*s is refused by the policy (%s)",
				     (int)(n < 128 ? n : 128), e, pat);
				return true;
			}
	}
	return false;
}

static bool
in_strv(const struct config_strv *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] == s)
			return true;
	return false;
}

/* An option word refused by deny_options or not in allow_options. */
static void
option_refused(const struct config_program *pg, const char *a, const struct policy_opt *o,
	       struct policy_decision *d)
{
	char rule[96], adv[sizeof(d->advice)], list[200];
	if (o->denied) {
		snprintf(rule, sizeof(rule), "%s.%sdeny_options", pg->rule,
			 in_strv(&pg->before.deny, o->denied) ? "before_subcommand." : "");
		if (pg->advice)
			snprintf(adv, sizeof(adv), "%s", pg->advice);
		else
			snprintf(adv, sizeof(adv), "run %s without %s", pg->name, o->denied);
		size_t n = strcspn(a, "=");
		bool same = !strncmp(a, o->denied, n) && o->denied[n] == '\0';
		deny(d, rule, adv, "option '%s' of %s is refused by the policy (%s%s)", a, pg->name,
		     o->denied,
		     same	   ? ""
		     : a[1] == '-' ? ", abbreviated"
				   : ", in the cluster");
		return;
	}
	snprintf(rule, sizeof(rule), "%s.allow_options", pg->rule);
	join(list, sizeof(list), &pg->allow_options);
	if (pg->advice)
		snprintf(adv, sizeof(adv), "%s", pg->advice);
	else
		snprintf(adv, sizeof(adv), "%s accepts only: %s", pg->name, list);
	deny(d, rule, adv, "option '%.*s' of %s is not among its allowed options (%s)",
	     (int)strcspn(a, "="), a, pg->name, list[0] ? list : "none");
}

/* A backup suffix (sed -iSUFFIX, cp -S SUFFIX) is appended to each file's
 * name: with a '/' in it the backup lands in another directory, one no
 * path check sees (`sed -i../../x s/a/b/ f` with a directory 'f..' made
 * first writes ../x).  Resolving it per file would depend on directories
 * the model can create between the check and the run, so any '/' is
 * refused; a backup suffix never needs one.  A backup prefix (patch -Y
 * PREFIX) goes before the basename of each file the diff names, in that
 * file's directory: the diff, not the command line, decides where, so it
 * cannot be judged as a path from the current directory (it was, and
 * "a/../" or ".del/" passed); it is refused with a '/' alike, a backup
 * directory (GNU patch's -Y .del/) included.  Returns true if refused. */
static bool
suffix_denied(const struct config_program *pg, const char *word, const char *suffix,
	      struct policy_decision *d)
{
	if (!strchr(suffix, '/'))
		return false;
	char rule[96];
	snprintf(rule, sizeof(rule), "%s.suffix_options", pg->rule);
	deny(d, rule,
	     "use a backup suffix or prefix without '/' (-i.bak, --suffix=.orig, -Y orig.); "
	     "the backup is written beside each file (a backup directory, -Y .del/, is "
	     "refused)",
	     "the backup suffix or prefix '%s' (%s %s) contains '/': the backup would be "
	     "written into another directory, outside what the policy checks",
	     suffix, pg->name, word);
	return true;
}

struct scan {
	bool end_of_opts, sub_seen, value_opt_seen;
	int operands;
	/* chdir_options: the directory the values seen so far lead to,
	 * relative to the workspace ("" before any), and the option that
	 * named the last; again: the second pass, from that directory */
	char dir[PATH_MAX];
	char moved_by[64];
	bool again;
	int first_operand; /* argv index of the first operand, 0: none yet */
};

/* Word k from byte at on is a data option's value: a glob there is the
 * program's own pattern (grep --include=*.py, find -name *.py), passed as
 * written.  No shell expands it here, so the word the program gets is the
 * word that was judged, whatever files exist: deterministic. */
static void
mark_data(struct policy_words *w, int k, size_t at)
{
	for (size_t g = 0; g < w->nglobs; g++)
		if (w->globs[g].word == k && w->globs[g].at >= at)
			w->globs[g].data = true;
}

/* An unquoted glob outside a data option's value is refused, as the
 * tokenizer refused every glob before: in an operand (`cat *.py`) a shell
 * would have expanded it to file names, and the model meant those files,
 * not a file named '*.py'.  Returns true if refused. */
static bool
glob_denied(struct policy_decision *d)
{
	for (size_t g = 0; g < d->words.nglobs; g++) {
		const struct policy_glob *gl = &d->words.globs[g];
		if (gl->data)
			continue;
		char tok[2] = {gl->c, '\0'}, off[24];
		snprintf(off, sizeof(off), "%zu", gl->offset);
		d->kind = POLICY_DENY;
		put(d->rule, sizeof(d->rule), "shell.glob", (char *)NULL);
		put(d->advice, sizeof(d->advice), shell_advice("shell.glob"), (char *)NULL);
		put(d->reason, sizeof(d->reason), "'", tok, "' at offset ", off,
		    " would expand to the names of matching files (nothing expands it here)"
		    "; warden runs one program without a shell",
		    (char *)NULL);
		return true;
	}
	return false;
}

/* A chdir_options value (patch -d DIR, make -C DIR): the program changes
 * into DIR before it resolves its other relative paths, so judging them
 * only from the current directory let `patch -d ../.. -o ../../x` (from
 * a/b) write two levels above the workspace.  Both programs change
 * directory once per such option, in order, so each value is judged from
 * the directory the ones before it lead to; the directory it leads to is
 * then where the second pass judges every other path from (words_denied).
 * Returns true if refused. */
static bool
chdir_denied(const struct config_policy *p, const struct policy_request *req,
	     const struct config_program *pg, const char *opt, const char *val, struct scan *st,
	     struct policy_decision *d)
{
	struct policy_request here = *req;
	here.cwd = st->moved_by[0] ? st->dir : req->cwd;
	if (path_denied(p, &here, pg, val, d))
		return true;
	char next[PATH_MAX];
	const char *base = here.cwd && strcmp(here.cwd, ".") ? here.cwd : "";
	int n;
	if (val[0] == '/') {
		/* judged inside above: below the jail's or the host's path */
		const char *r = policy_path_below(p->mount, req->workspace, val);
		n = snprintf(next, sizeof(next), "%s", r ? r : "");
	} else {
		n = snprintf(next, sizeof(next), "%s%s%s", base, *base ? "/" : "", val);
	}
	if (n < 0 || (size_t)n >= sizeof(next)) {
		deny(d, "workspace.resolve", "use a shorter path inside the workspace",
		     "the directory '%.64s...' that %s %s names is too long to check", val,
		     pg->name, opt);
		return true;
	}
	memcpy(st->dir, next, (size_t)n + 1);
	/* the option as written, without an attached value (for the reason) */
	size_t len = strlen(opt);
	if (val >= opt && val < opt + len)
		len = (size_t)(val - opt) - (val > opt && val[-1] == '=');
	snprintf(st->moved_by, sizeof(st->moved_by), "%.*s", (int)len, opt);
	return false;
}

/* One option word argv[*i] (and its value).  Returns true if refused. */
static bool
option_denied(const struct config_policy *p, const struct policy_request *req,
	      const struct config_program *pg, int argc, char *const *argv, int *i, struct scan *st,
	      struct policy_decision *d)
{
	const char *a = argv[*i];
	struct policy_opt o;
	policy_option_scan(pg, pg->has_subcommands && !st->sub_seen, a, &o);
	if (o.denied || o.unlisted) {
		option_refused(pg, a, &o, d);
		return true;
	}
	if (o.judge && path_denied(p, req, pg, o.judge, d))
		return true;
	if (o.eq_short && o.takes == POLICY_OPT_VALUE) {
		/* Why refused: getopt (sort, cp, grep, patch, make) reads
		 * "-o=x" as the file "=x", argparse (pytest) as "x", and only
		 * "x" was judged: a link "=x" to outside let `sort -o=x`
		 * write through it.  Judging one reading misses the other;
		 * the spellings every parser reads alike are named instead */
		char rule[96], adv[sizeof(d->advice)];
		snprintf(rule, sizeof(rule), "%s.value_options", pg->rule);
		snprintf(adv, sizeof(adv),
			 "write %.2s VALUE or %.2sVALUE (or the long option with '=')", a, a);
		deny(d, rule, adv,
		     "option '%s' of %s names a file, and programs disagree whether its value is "
		     "'%s' or '%s'",
		     a, pg->name, a + 2, a + 3);
		return true;
	}
	if (o.suffix && o.value && suffix_denied(pg, a, o.value, d))
		return true;
	if (o.takes == POLICY_OPT_FLAG)
		return false;
	/* Any value makes grep's first operand a file (grep -e PAT FILE). */
	st->value_opt_seen = true;
	const char *val = o.value;
	if (!val && *i + 1 < argc) {
		val = argv[++*i];
		/* The next word is a value only if the policy's idea of the
		 * option is right; if the program reads it as an option after
		 * all (pytest's exact --co is also a prefix of --confcutdir),
		 * it must not be one the policy refuses. */
		struct policy_opt o2;
		if (val[0] == '-' && val[1]) {
			policy_option_scan(pg, pg->has_subcommands && !st->sub_seen, val, &o2);
			if (o2.denied) {
				option_refused(pg, val, &o2, d);
				return true;
			}
		}
	}
	if (o.suffix && val && val != o.value && suffix_denied(pg, argv[*i - 1], val, d))
		return true;
	if (o.chdir && val && o.takes == POLICY_OPT_VALUE)
		return st->again ? false : chdir_denied(p, req, pg, a, val, st, d);
	if (val && o.takes == POLICY_OPT_DATA && !st->again)
		mark_data(&d->words, *i, val == o.value ? (size_t)(o.value - a) : 0);
	/* A data value (code, a pattern, a count) is not a path: judging
	 * `python3 -c CODE` as one refused long programs as "File name too
	 * long" and 'print("a/../../b")' for containment. */
	return val && o.takes == POLICY_OPT_VALUE && path_denied(p, req, pg, val, d);
}

/* 4. The program's rules, word by word.  Returns true if refused. */
static bool
words_pass(const struct config_policy *p, const struct policy_request *req,
	   const struct config_program *pg, int argc, char *const *argv, struct scan *st,
	   struct policy_decision *d)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!st->end_of_opts && a[0] == '-' && a[1]) {
			if (a[1] == '-' && !a[2]) {
				st->end_of_opts = true;
				continue;
			}
			if (option_denied(p, req, pg, argc, argv, &i, st, d))
				return true;
			continue;
		}
		if (pg->has_subcommands && !st->sub_seen) {
			st->sub_seen = true;
			size_t k = 0;
			while (k < pg->subcommands.n && strcmp(pg->subcommands.v[k], a))
				k++;
			if (k == pg->subcommands.n) {
				char rule[96], list[200], adv[sizeof(d->advice)];
				snprintf(rule, sizeof(rule), "%s.subcommands", pg->rule);
				join(list, sizeof(list), &pg->subcommands);
				snprintf(adv, sizeof(adv), "%s subcommands allowed here: %s",
					 pg->name, list);
				deny(d, rule, adv,
				     "'%s %s' is not allowed: %s allows only the subcommands %s",
				     pg->name, a, pg->name, list);
				return true;
			}
			continue;
		}
		st->operands++;
		if (!st->first_operand)
			st->first_operand = i;
		/* skip_first: the first operand is data (grep's pattern), unless an
		 * option with a value came first (grep -e PATTERN FILE...): then
		 * every operand is judged, erring towards refusal. */
		if (st->operands == 1 && pg->paths == CONFIG_PATHS_SKIP_FIRST &&
		    !st->value_opt_seen)
			continue;
		if (path_denied(p, req, pg, a, d))
			return true;
	}
	return false;
}

/* Whether the request's environment sets POSIXLY_CORRECT (any value, as
 * getopt asks getenv). */
static bool
posixly_correct(const struct policy_request *req)
{
	static const char name[] = "POSIXLY_CORRECT";
	for (size_t i = 0; i < req->nenv; i++)
		if (!strncmp(req->env[i], name, sizeof(name) - 1) &&
		    (req->env[i][sizeof(name) - 1] == '=' || !req->env[i][sizeof(name) - 1]))
			return true;
	return false;
}

/* Under POSIXLY_CORRECT getopt stops at the first operand: every word after
 * it is an operand, a file the program opens, whatever the lists make of
 * it (`cp file.txt --sparse /outside` copied into /outside: the policy had
 * read /outside as --sparse's data).  The options were judged as options
 * already (a parser that ignores the variable, git's or argparse, still
 * reads them so); here each such word is judged as a path as well, from
 * the working directory and from where a chdir option leads.  Returns
 * true if refused. */
static bool
posix_operands_denied(const struct config_policy *p, const struct policy_request *req,
		      const struct config_program *pg, int argc, char *const *argv, int first,
		      const char *moved, struct policy_decision *d)
{
	struct policy_request there = *req;
	there.cwd = moved && moved[0] ? moved : ".";
	for (int i = first + 1; i < argc; i++)
		if (path_denied(p, req, pg, argv[i], d) ||
		    (moved && path_denied(p, &there, pg, argv[i], d)))
			return true;
	return false;
}

static bool
words_denied(const struct config_policy *p, const struct policy_request *req,
	     const struct config_program *pg, int argc, char *const *argv,
	     struct policy_decision *d)
{
	struct scan st = {0};
	bool denied = words_pass(p, req, pg, argc, argv, &st, d);
	if (!denied && st.first_operand && posixly_correct(req)) {
		char moved[PATH_MAX];
		memcpy(moved, st.dir, sizeof(moved));
		denied = posix_operands_denied(p, req, pg, argc, argv, st.first_operand,
					       st.moved_by[0] ? moved : NULL, d);
	}
	if (!denied && st.moved_by[0]) {
		/* Why a second pass: patch opens -i's file and make reads -f's
		 * after they changed directory, whatever order the words come
		 * in, so every path but the directories is judged from the last
		 * one as well as from here (a path inside from both is inside
		 * wherever the program resolves it) */
		struct policy_request moved = *req;
		char dir[PATH_MAX];
		memcpy(dir, st.dir, sizeof(dir));
		moved.cwd = dir[0] ? dir : ".";
		char by[sizeof(st.moved_by)];
		memcpy(by, st.moved_by, sizeof(by));
		st = (struct scan){.again = true};
		denied = words_pass(p, &moved, pg, argc, argv, &st, d);
		if (denied) {
			size_t len = strlen(d->reason);
			snprintf(d->reason + len, sizeof(d->reason) - len,
				 " (from '%s', where %s %s moves it first)", dir[0] ? dir : ".",
				 pg->name, by);
		}
	}
	return denied;
}

int
policy_decide(const struct config_policy *p, const struct policy_request *req,
	      struct policy_decision *d, struct wd_err *err)
{
	d->kind = POLICY_ALLOW;
	d->rule[0] = d->reason[0] = d->advice[0] = d->approval_id[0] = '\0';
	d->program = NULL;

	int rc = shape(req, d, err);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	int argc = d->words.argc;
	char *const *argv = d->words.argv;
	if (argc == 0 || !argv[0][0]) {
		deny(d, "shell.empty", shell_advice("shell.empty"), "the command is empty");
		return 0;
	}
	const struct config_program *pg = program(p, req, argv[0], d);
	if (!pg)
		return 0;
	d->program = pg;
	if (env_denied(p, pg, req, d) || words_denied(p, req, pg, argc, argv, d) || glob_denied(d))
		return 0;

	/* 5. Approval patterns. */
	for (size_t k = 0; k < pg->napprove; k++) {
		const struct config_approve *ap = &pg->approve[k];
		if (!approve_matches(ap, argc, argv))
			continue;
		char line[200];
		argv_line(line, sizeof(line), argc, argv);
		d->kind = POLICY_PAUSE;
		snprintf(d->rule, sizeof(d->rule), "%s.approve[%zu]", pg->rule, k);
		snprintf(d->reason, sizeof(d->reason), "'%s' needs a human's approval%s%s", line,
			 ap->reason ? ": " : "", ap->reason ? ap->reason : "");
		policy_approval_id(p, req, argc, (const char *const *)argv, d->approval_id, NULL);
		snprintf(d->advice, sizeof(d->advice),
			 "ask the user to run 'warden approve %s', then retry the exact same "
			 "command; do not work around it",
			 d->approval_id);
		return 0;
	}

	put(d->rule, sizeof(d->rule), pg->rule, (char *)NULL);
	put(d->reason, sizeof(d->reason), pg->name, " is allowed by the policy", (char *)NULL);
	return 0;
}
