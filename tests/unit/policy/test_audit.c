/* The option audit of the built-in policy (docs/policy.md, "The built-in
 * default policy"): every refused option, in the spellings its program's
 * parser accepts (--opt=value, --opt value, abbreviations, short clusters,
 * attached values), every value that is judged as a path, the values that
 * are data and must not be, and the refused environment variables.
 * `sort --compress-program=sh` was once allowed and ran sh. */
#include "policy/policy.h"

#include "fixture.h"

struct acase {
	const char *env; /* one NAME=VALUE, or NULL */
	const char *cmd;
	enum policy_kind kind;
	const char *rule;
};

#define A POLICY_ALLOW
#define X POLICY_DENY
#define SORT "programs.sort.deny_options"
#define WC "programs.wc.deny_options"
#define FIND "programs.find.deny_options"
#define GIT0 "programs.git.before_subcommand.deny_options"
#define GIT "programs.git.deny_options"
#define TAIL "programs.tail.deny_options"
#define PYT "programs.pytest.deny_options"
#define OUT "workspace.containment"

/* clang-format off */
static const struct acase cases[] = {
	/* sort --compress-program runs PROG; --files0-from opens the names in F */
	{NULL, "sort --compress-program=sh file.txt", X, SORT},
	{NULL, "sort --compress-program sh file.txt", X, SORT},
	{NULL, "sort --compress-prog=sh file.txt", X, SORT},
	{NULL, "sort --compress=sh file.txt", X, SORT},
	{NULL, "sort --com=sh file.txt", X, SORT},
	{NULL, "sort -u --compress-program=sh file.txt", X, SORT},
	{NULL, "sort --files0-from=list", X, SORT},
	{NULL, "sort --files0-from list", X, SORT},
	{NULL, "sort --files0=list", X, SORT},
	{NULL, "sort --files=list", X, SORT},
	/* sort: values that are paths are judged, in every spelling */
	{NULL, "sort -o /tmp/x file.txt", X, OUT},
	{NULL, "sort -o/tmp/x file.txt", X, OUT},
	{NULL, "sort -bo/tmp/x file.txt", X, OUT},
	{NULL, "sort -bo /tmp/x file.txt", X, OUT},
	{NULL, "sort --output=/tmp/x file.txt", X, OUT},
	{NULL, "sort --output /tmp/x file.txt", X, OUT},
	{NULL, "sort --out=/tmp/x file.txt", X, OUT},
	{NULL, "sort --out /tmp/x file.txt", X, OUT},
	{NULL, "sort -T /tmp file.txt", X, OUT},
	{NULL, "sort -T/ file.txt", X, OUT},
	{NULL, "sort -rT/ file.txt", X, OUT},
	{NULL, "sort --temporary-directory=/tmp file.txt", X, OUT},
	{NULL, "sort --temp /tmp file.txt", X, OUT},
	{NULL, "sort --random-source=/dev/urandom -R file.txt", X, OUT},
	{NULL, "sort --random-source /etc/passwd -R file.txt", X, OUT},
	{NULL, "sort -o sorted.txt -T tmpdir file.txt", A, "programs.sort"},
	/* ... and data values are not paths */
	{NULL, "sort -t / -k 2 file.txt", A, "programs.sort"},
	{NULL, "sort -t/ -k2,2 file.txt", A, "programs.sort"},
	{NULL, "sort --field-separator=/ file.txt", A, "programs.sort"},
	{NULL, "sort -S 10M --parallel=2 file.txt", A, "programs.sort"},
	/* wc --files0-from */
	{NULL, "wc --files0-from=list", X, WC},
	{NULL, "wc --files0-from list", X, WC},
	{NULL, "wc --files0=list", X, WC},
	{NULL, "wc -l --fil=list", X, WC},
	{NULL, "wc -lw file.txt", A, "programs.wc"},
	/* find: runs, deletes, writes, reads start points; only -name, -type */
	{NULL, "find . -exec cat '{}' ';'", X, FIND},
	{NULL, "find . -execdir cat '{}' +", X, FIND},
	{NULL, "find . -ok cat '{}' ';'", X, FIND},
	{NULL, "find . -okdir cat '{}' ';'", X, FIND},
	{NULL, "find . -delete", X, FIND},
	{NULL, "find . -fprint out", X, FIND},
	{NULL, "find . -fprint0 out", X, FIND},
	{NULL, "find . -fprintf out %p", X, FIND},
	{NULL, "find . -fls out", X, FIND},
	{NULL, "find -files0-from list", X, FIND},
	{NULL, "find -L . -name x", X, "programs.find.allow_options"},
	{NULL, "find . -newer file.txt", X, "programs.find.allow_options"},
	{NULL, "find . -name -exec", X, FIND}, /* a value that is a refused option */
	{NULL, "find . -name '../*' -type f", A, "programs.find"},
	/* git, before the subcommand: configuration, repository, pager */
	{NULL, "git -c core.pager=sh log", X, GIT0},
	{NULL, "git -ccore.fsmonitor=x status", X, GIT0},
	{NULL, "git --config-env=core.pager=E log", X, GIT0},
	{NULL, "git -C /etc status", X, GIT0},
	{NULL, "git -C. status", X, GIT0},
	{NULL, "git --git-dir=/x status", X, GIT0},
	{NULL, "git --git-dir /x status", X, GIT0},
	{NULL, "git --work-tree=/ status", X, GIT0},
	{NULL, "git --exec-path=/x status", X, GIT0},
	{NULL, "git --exec-path status", X, GIT0},
	{NULL, "git -p log", X, GIT0},
	{NULL, "git --paginate log", X, GIT0},
	{NULL, "git --pag log", X, GIT0},
	{NULL, "git --no-pager log", A, "programs.git"},
	{NULL, "git --namespace x log", A, "programs.git"},
	/* git, anywhere: writes, external programs, gpg, files of names */
	{NULL, "git diff --output=/tmp/x", X, GIT},
	{NULL, "git diff --output x", X, GIT},
	{NULL, "git log --outp=x", X, GIT},
	{NULL, "git diff --ext-diff", X, GIT},
	{NULL, "git log --ext-diff -p", X, GIT},
	{NULL, "git log --show-signature", X, GIT},
	{NULL, "git show --show-sig", X, GIT},
	{NULL, "git push --signed origin main", X, GIT},
	{NULL, "git push --receive-pack=sh origin", X, GIT},
	{NULL, "git push --receive-pack sh origin", X, GIT},
	{NULL, "git push --exec=sh origin", X, GIT},
	{NULL, "git push --upload-pack=sh origin", X, GIT},
	{NULL, "git diff --pathspec-from-file=list", X, GIT},
	{NULL, "git log -O ../../orderfile", X, OUT},
	{NULL, "git log -O/etc/passwd", X, OUT},
	/* git: after the subcommand -c, -C and -p are diff options */
	{NULL, "git log -p", A, "programs.git"},
	{NULL, "git log -c", A, "programs.git"},
	{NULL, "git diff -C -M", A, "programs.git"},
	{NULL, "git log -p -- file.txt", A, "programs.git"},
	{NULL, "git log -S 'a/../../b' --since 2020", A, "programs.git"},
	{NULL, "git log --grep /etc/passwd -n 3", A, "programs.git"},
	/* tail -f never ends */
	{NULL, "tail -f file.txt", X, TAIL},
	{NULL, "tail -F file.txt", X, TAIL},
	{NULL, "tail -qf file.txt", X, TAIL},
	{NULL, "tail --follow file.txt", X, TAIL},
	{NULL, "tail --follow=name file.txt", X, TAIL},
	{NULL, "tail --fo file.txt", X, TAIL},
	{NULL, "tail -n +5 file.txt", A, "programs.tail"},
	{NULL, "tail -c 10 --pid 1 file.txt", A, "programs.tail"},
	/* pytest: deletes --basetemp, any ini option, uploads */
	{NULL, "pytest --basetemp=.", X, PYT},
	{NULL, "pytest --basetemp /tmp/x", X, PYT},
	{NULL, "pytest --basetem=.", X, PYT},
	{NULL, "pytest -o cache_dir=/tmp/x", X, PYT},
	{NULL, "pytest -ocache_dir=/tmp/x", X, PYT},
	{NULL, "pytest -qo x=y", X, PYT},
	{NULL, "pytest --override-ini=addopts=-x", X, PYT},
	{NULL, "pytest --override=x=y", X, PYT},
	{NULL, "pytest --pastebin=all", X, PYT},
	{NULL, "pytest --paste=failed", X, PYT},
	{NULL, "pytest --co --basetemp=.", X, PYT},
	{NULL, "pytest -k --basetemp", X, PYT},
	{NULL, "pytest --junitxml=/tmp/r.xml", X, OUT},
	{NULL, "pytest --junit-xml /tmp/r.xml", X, OUT},
	{NULL, "pytest --log-file=/tmp/log", X, OUT},
	{NULL, "pytest -c /etc/pytest.ini", X, OUT},
	{NULL, "pytest --confcutdir=/", X, OUT},
	{NULL, "pytest --rootdir /", X, OUT},
	{NULL, "pytest -p no:cacheprovider -k 'a/../../b' tests", A, "programs.pytest"},
	{NULL, "pytest -m 'not /slow' --tb=short -W error", A, "programs.pytest"},
	{NULL, "pytest --junitxml=report.xml tests", A, "programs.pytest"},
	/* grep: -f and --exclude-from read files; patterns are data */
	{NULL, "grep -f /etc/passwd file.txt", X, OUT},
	{NULL, "grep -f/etc/passwd file.txt", X, OUT},
	{NULL, "grep --file=/etc/passwd file.txt", X, OUT},
	{NULL, "grep --fil /etc/passwd file.txt", X, OUT},
	{NULL, "grep --exclude-from=/etc/x -r x .", X, OUT},
	{NULL, "grep --exclude-f /etc/x -r x .", X, OUT},
	{NULL, "grep -e x /etc/passwd", X, OUT},
	{NULL, "grep -ex /etc/passwd", X, OUT},
	{NULL, "grep --regexp=x /etc/passwd", X, OUT},
	{NULL, "grep --reg x /etc/passwd", X, OUT},
	{NULL, "grep /etc/passwd file.txt", A, "programs.grep"},
	{NULL, "grep -rn --exclude='../*' --include='*.py' TODO .", A, "programs.grep"},
	{NULL, "grep -e '../..' file.txt", A, "programs.grep"},
	/* diff: files named in option values are judged */
	{NULL, "diff --from-file=/etc/passwd file.txt", X, OUT},
	{NULL, "diff --to-file /etc/passwd file.txt", X, OUT},
	{NULL, "diff --to-f=/etc/passwd file.txt", X, OUT},
	{NULL, "diff -X /etc/x sub tests", X, OUT},
	{NULL, "diff -X/etc/x sub tests", X, OUT},
	{NULL, "diff --exclude-from=/etc/x sub tests", X, OUT},
	{NULL, "diff -r -x '../*' -I '^/' sub tests", A, "programs.diff"},
	{NULL, "diff --to-file=file.txt ok.py", A, "programs.diff"},
	/* head, uniq, ls, cat */
	{NULL, "head -n -5 file.txt", A, "programs.head"},
	{NULL, "head --lines /etc/passwd", A, "programs.head"}, /* a count, as head reads it */
	{NULL, "uniq file.txt /tmp/out", X, OUT},
	{NULL, "uniq -f 2 -s 1 file.txt out.txt", A, "programs.uniq"},
	{NULL, "uniq --group /etc/passwd", X, OUT},
	{NULL, "ls -I '../*' --hide=/x -w 80", A, "programs.ls"},
	{NULL, "ls --color /etc", X, OUT},
	{NULL, "cat -A file.txt", A, "programs.cat"},
	/* python3: code and module names are not paths */
	{NULL, "python3 -c 'print(\"a/../../b\")'", A, "programs.python3"},
	{NULL, "python3 -c'print(1)'", A, "programs.python3"},
	{NULL, "python3 -m http.server", A, "programs.python3"},
	{NULL, "python3 -W error -X dev ok.py", A, "programs.python3"},
	{NULL, "python3 /etc/x.py", X, OUT},
	{NULL, "python3 -c x /etc/passwd", X, OUT},
	/* environment */
	{"GIT_DIR=/x", "git status", X, "programs.git.deny_env"},
	{"GIT_EXTERNAL_DIFF=sh", "git diff", X, "programs.git.deny_env"},
	{"GIT_CONFIG_COUNT=1", "git log", X, "programs.git.deny_env"},
	{"PAGER=sh", "git log", X, "programs.git.deny_env"},
	/* git reads $XDG_CONFIG_HOME/git/config and ~/.gitconfig: a config the
	 * model wrote, whose diff.external ran a program on `git diff` (as
	 * -c diff.external=... would, which is refused) */
	{"HOME=/workspace", "git diff", X, "programs.git.deny_env"},
	{"XDG_CONFIG_HOME=/workspace/cfg", "git log", X, "programs.git.deny_env"},
	{"SSH_ASKPASS=/workspace/x", "git status", X, "programs.git.deny_env"},
	{"HOME=/workspace", "ls", A, "programs.ls"},
	{"PYTEST_ADDOPTS=--basetemp=.", "pytest", X, "programs.pytest.deny_env"},
	{"PYTEST_PLUGINS=x", "pytest", X, "programs.pytest.deny_env"},
	{"LD_PRELOAD=/workspace/x.so", "cat file.txt", X, "env.deny"},
	{"LD_AUDIT=x", "sort file.txt", X, "env.deny"},
	{"GCONV_PATH=/workspace", "grep x file.txt", X, "env.deny"},
	{"BASH_ENV=/workspace/x", "ls", X, "env.deny"},
	{"ENV=/workspace/x", "ls", X, "env.deny"},
	{"LANG=C", "git status", A, "programs.git"},
	{"GIT=1", "ls", A, "programs.ls"},
	{"ENVIRONMENT=1", "ls", A, "programs.ls"},
};
/* clang-format on */

static struct config_policy *pol;

static void
setup(void)
{
	struct wd_err e = {0};
	fx_setup();
	cr_assert_eq(config_load_default(&pol, &e), 0, "%s", e.msg);
}

static void
teardown(void)
{
	config_policy_free(pol);
	fx_teardown();
}

TestSuite(policy_audit, .init = setup, .fini = teardown);

Test(policy_audit, default_policy_options)
{
	static const char *kinds[] = {"allow", "deny", "pause"};
	struct policy_decision d;
	policy_decision_init(&d);
	for (size_t i = 0; i < WD_ARRAY_SIZE(cases); i++) {
		const struct acase *c = &cases[i];
		const char *env[] = {c->env, NULL};
		struct policy_request r = {
		    .command = c->cmd,
		    .workspace_fd = fx_wfd,
		    .workspace = fx_ws,
		    .env = c->env ? env : NULL,
		    .nenv = c->env ? 1 : 0,
		};
		cr_expect_eq(policy_decide(pol, &r, &d, NULL), 0, "case %zu", i);
		cr_expect_eq(d.kind, c->kind, "case %zu '%s': %s (%s: %s), expected %s", i, c->cmd,
			     kinds[d.kind], d.rule, d.reason, kinds[c->kind]);
		cr_expect_str_eq(d.rule, c->rule, "case %zu '%s': rule %s (%s), expected %s", i,
				 c->cmd, d.rule, d.reason, c->rule);
		if (d.kind != POLICY_ALLOW)
			cr_expect(d.advice[0], "case %zu '%s': refusal without advice", i, c->cmd);
	}
	policy_decision_fini(&d);
}

/* A 350-character program was refused as "File name too long". */
Test(policy_audit, code_is_not_a_path)
{
	char code[400], cmd[500];
	memset(code, 'x', 350);
	memcpy(code, "print(1)#", 9);
	code[350] = '\0';
	snprintf(cmd, sizeof(cmd), "python3 -c '%s'", code);
	struct policy_decision d;
	policy_decision_init(&d);
	struct policy_request r = {.command = cmd, .workspace_fd = fx_wfd, .workspace = fx_ws};
	cr_assert_eq(policy_decide(pol, &r, &d, NULL), 0);
	cr_expect_eq(d.kind, POLICY_ALLOW, "%s: %s", d.rule, d.reason);
	/* the same text as a file operand is still judged */
	snprintf(cmd, sizeof(cmd), "cat '../%s'", code);
	r.command = cmd;
	cr_assert_eq(policy_decide(pol, &r, &d, NULL), 0);
	cr_expect_eq(d.kind, POLICY_DENY);
	policy_decision_fini(&d);
}

/* The refusal names the option as written and the rule's option. */
Test(policy_audit, refusal_names_the_abbreviated_option)
{
	struct policy_decision d;
	policy_decision_init(&d);
	struct policy_request r = {.command = "sort --compress-prog=sh file.txt",
				   .workspace_fd = fx_wfd,
				   .workspace = fx_ws};
	cr_assert_eq(policy_decide(pol, &r, &d, NULL), 0);
	cr_expect_str_eq(d.reason, "option '--compress-prog=sh' of sort is refused by the policy "
				   "(--compress-program, abbreviated)");
	policy_decision_fini(&d);
}
