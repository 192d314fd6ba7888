/* Programs given by a path are judged by the file they resolve to in the
 * jail's view (src/policy/resolve.c).  `/workspace/cat`
 * was refused while `./cat`, `/workspace/./cat`, `sub/../cat` and a
 * workspace symlink named cat ran a workspace file under the rule of
 * /usr/bin/cat.  The fixture (fixture.h) gets, in the workspace:
 *
 *   cat                 a file (the model wrote it)
 *   mycat -> cat        prog/cat -> /usr/bin/sh      syscat -> /usr/bin/cat
 *   usrbin -> /usr/bin  etclink -> /etc              pt -> .venv/bin/pytest
 *   bin/tool            .venv/bin/pytest             .venv/bin/python3 -> /usr/bin/python3
 */
#include "policy/policy.h"

#include "fixture.h"

static const char custom_json[] =
    "{\"version\": 1,"
    " \"programs\": {\"cat\": {}, \"python3\": {\"interpreter\": true}},"
    " \"workspace\": {\"programs\": {"
    "   \".venv/bin/pytest\": {\"value_options\": [\"--rootdir\"]},"
    "   \"bin/tool\": {\"deny_options\": [\"-x\"]}}}}";

struct pcase {
	char policy; /* 'D' built-in, 'C' custom */
	const char *cmd;
	enum policy_kind kind;
	const char *rule;
};

#define A POLICY_ALLOW
#define X POLICY_DENY

/* clang-format off */
static const struct pcase cases[] = {
	/* every spelling of a workspace file is a workspace file */
	{'D', "/workspace/cat file.txt", X, "programs.path"},
	{'D', "./cat file.txt", X, "programs.path"},
	{'D', "/workspace/./cat file.txt", X, "programs.path"},
	{'D', "/workspace//cat file.txt", X, "programs.path"},
	{'D', "sub/../cat file.txt", X, "programs.path"},
	{'D', "./sub/../cat file.txt", X, "programs.path"},
	{'D', "tests/../cat file.txt", X, "programs.path"},
	{'D', "./mycat file.txt", X, "programs.path"},
	{'D', "link-in/../cat file.txt", X, "programs.path"},
	{'D', "/usr/bin/../../workspace/cat file.txt", X, "programs.path"},
	{'D', "//workspace/cat file.txt", X, "programs.path"},
	{'D', "/./workspace/cat file.txt", X, "programs.path"},
	{'D', "/usr/../workspace/cat file.txt", X, "programs.path"},
	{'D', "./missing", X, "programs.path"},
	{'D', "bin/tool", X, "programs.path"},
	/* a workspace link is followed: judged by what it leads to */
	{'D', "./syscat file.txt", A, "programs.cat"},
	{'D', "prog/cat file.txt", X, "programs"},     /* it is /usr/bin/sh */
	{'D', "usrbin/cat file.txt", A, "programs.cat"},
	{'D', "usrbin/sh", X, "programs"},
	{'D', "./.venv/bin/python3 ok.py", A, "programs.python3"},
	{'D', "etclink/passwd", X, "programs.path"},
	{'D', "./loop1", X, "programs.path"},
	{'D', "./link-out/secret", X, "programs.path"},
	{'D', "./up/outside/secret", X, "programs.path"},
	/* system files by their name in a PATH directory */
	{'D', "/bin/cat file.txt", A, "programs.cat"},
	{'D', "/usr/bin/cat file.txt", A, "programs.cat"},
	{'D', "/usr/bin/../bin/cat file.txt", A, "programs.cat"},
	{'D', "/usr/./bin//cat file.txt", A, "programs.cat"},
	{'D', "/workspace/../usr/bin/cat file.txt", A, "programs.cat"},
	{'D', "/usr/bin/python3 ok.py", A, "programs.python3"},
	{'D', "/usr/bin/warden-no-such-program", X, "programs"},
	{'D', "/usr/bin/sh -c id", X, "programs"},
	{'D', "/usr/lib/warden-no-such-dir/cat", X, "programs.path"},
	{'D', "/usr/bin", X, "programs.path"},
	{'D', "/usr/bin/", X, "programs.path"},
	/* anywhere else: not a program */
	{'D', "/tmp/cat", X, "programs.path"},
	{'D', "/etc/passwd", X, "programs.path"},
	{'D', "/proc/self/exe", X, "programs.path"},
	{'D', "/dev/null", X, "programs.path"},
	{'D', "/home/cat", X, "programs.path"},
	{'D', "/cat", X, "programs.path"},
	/* workspace programs a policy names, by their resolved path */
	{'C', ".venv/bin/pytest -q", A, "workspace.programs[.venv/bin/pytest]"},
	{'C', "./.venv/bin/pytest -q", A, "workspace.programs[.venv/bin/pytest]"},
	{'C', "/workspace/.venv/bin/pytest", A, "workspace.programs[.venv/bin/pytest]"},
	{'C', "./.venv/bin/../bin/pytest", A, "workspace.programs[.venv/bin/pytest]"},
	{'C', "./pt", A, "workspace.programs[.venv/bin/pytest]"},
	{'C', ".venv/bin/pytest --rootdir=/", X, "workspace.containment"},
	{'C', ".venv/bin/pytest ../x", X, "workspace.containment"},
	{'C', "bin/tool -x", X, "workspace.programs[bin/tool].deny_options"},
	{'C', "bin/tool -v file.txt", A, "workspace.programs[bin/tool]"},
	{'C', "./cat file.txt", X, "programs.path"},
	{'C', "cat file.txt", A, "programs.cat"},
	{'C', "pytest", X, "programs"},
	{'C', "./.venv/bin/python3 ok.py", A, "programs.python3"},
};
/* clang-format on */

static struct config_policy *pol_default, *pol_custom;

static void
setup(void)
{
	struct wd_err e = {0};
	fx_setup();
	fx_file("ws/cat", "#!/bin/sh\n");
	fx_link("cat", "ws/mycat");
	fx_dir("ws/prog");
	fx_link("/usr/bin/sh", "ws/prog/cat");
	fx_link("/usr/bin/cat", "ws/syscat");
	fx_link("/usr/bin", "ws/usrbin");
	fx_link("/etc", "ws/etclink");
	fx_dir("ws/bin");
	fx_file("ws/bin/tool", "#!/bin/sh\n");
	fx_dir("ws/.venv");
	fx_dir("ws/.venv/bin");
	fx_file("ws/.venv/bin/pytest", "#!/workspace/.venv/bin/python3\n");
	fx_link("/usr/bin/python3", "ws/.venv/bin/python3");
	fx_link(".venv/bin/pytest", "ws/pt");
	cr_assert_eq(config_load_default(&pol_default, &e), 0, "%s", e.msg);
	cr_assert_eq(
	    config_load_buffer(custom_json, strlen(custom_json), "custom", &pol_custom, &e), 0,
	    "%s", e.msg);
}

static void
teardown(void)
{
	config_policy_free(pol_default);
	config_policy_free(pol_custom);
	fx_teardown();
}

TestSuite(policy_program, .init = setup, .fini = teardown);

static struct policy_request
req_for(const char *cmd)
{
	return (struct policy_request){.command = cmd, .workspace_fd = fx_wfd, .workspace = fx_ws};
}

Test(policy_program, table)
{
	static const char *kinds[] = {"allow", "deny", "pause"};
	struct policy_decision d;
	policy_decision_init(&d);
	for (size_t i = 0; i < WD_ARRAY_SIZE(cases); i++) {
		const struct pcase *c = &cases[i];
		struct policy_request r = req_for(c->cmd);
		cr_expect_eq(
		    policy_decide(c->policy == 'C' ? pol_custom : pol_default, &r, &d, NULL), 0,
		    "case %zu", i);
		cr_expect_eq(d.kind, c->kind, "case %zu '%s': %s (%s: %s), expected %s", i, c->cmd,
			     kinds[d.kind], d.rule, d.reason, kinds[c->kind]);
		cr_expect_str_eq(d.rule, c->rule, "case %zu '%s': rule %s (%s), expected %s", i,
				 c->cmd, d.rule, d.reason, c->rule);
		if (d.kind != POLICY_ALLOW)
			cr_expect(d.advice[0], "case %zu '%s': refusal without advice", i, c->cmd);
	}
	policy_decision_fini(&d);
}

/* The host path of the workspace is the workspace too (the process
 * isolation level runs there), and the working directory counts. */
Test(policy_program, host_path_and_cwd)
{
	char cmd[PATH_MAX + 32];
	struct policy_decision d;
	policy_decision_init(&d);
	snprintf(cmd, sizeof(cmd), "%s/cat file.txt", fx_ws);
	struct policy_request r = req_for(cmd);
	cr_assert_eq(policy_decide(pol_default, &r, &d, NULL), 0);
	cr_expect_eq(d.kind, POLICY_DENY);
	cr_expect_str_eq(d.rule, "programs.path");
	snprintf(cmd, sizeof(cmd), "%s/.venv/bin/pytest", fx_ws);
	r = req_for(cmd);
	cr_assert_eq(policy_decide(pol_custom, &r, &d, NULL), 0);
	cr_expect_eq(d.kind, POLICY_ALLOW, "%s", d.reason);
	r = req_for("../cat file.txt");
	r.cwd = "sub";
	cr_assert_eq(policy_decide(pol_default, &r, &d, NULL), 0);
	cr_expect_str_eq(d.rule, "programs.path");
	cr_expect_not_null(strstr(d.reason, "resolves to /workspace/cat, a file of the workspace"),
			   "%s", d.reason);
	policy_decision_fini(&d);
}

Test(policy_program, resolve_reports_where)
{
	struct policy_prog pr;
	struct policy_request r = req_for("x");
	policy_program_resolve(&r, "/workspace", "./prog/cat", &pr);
	cr_expect_eq(pr.kind, POLICY_PROG_SYSTEM);
	cr_expect_str_eq(pr.name, "sh");
	policy_program_resolve(&r, "/workspace", "/usr/bin/python3", &pr);
	cr_expect_eq(pr.kind, POLICY_PROG_SYSTEM);
	cr_expect_str_eq(pr.name, "python3"); /* the link's name, not python3.11's */
	policy_program_resolve(&r, "/workspace", "./pt", &pr);
	cr_expect_eq(pr.kind, POLICY_PROG_WORKSPACE);
	cr_expect_str_eq(pr.rel, ".venv/bin/pytest");
	cr_expect_str_eq(pr.where, "/workspace/.venv/bin/pytest");
	char longname[300];
	memset(longname, 'c', sizeof(longname) - 1);
	memcpy(longname, "/usr/bin/", 9);
	longname[sizeof(longname) - 1] = '\0';
	policy_program_resolve(&r, "/workspace", longname, &pr);
	cr_expect_eq(pr.kind, POLICY_PROG_OTHER);
	policy_program_resolve(&r, "/workspace", "/tmp/x", &pr);
	cr_expect_eq(pr.kind, POLICY_PROG_OTHER);
	cr_expect_not_null(pr.why);
	/* without a workspace fd: lexical in the workspace */
	r.workspace_fd = -1;
	policy_program_resolve(&r, "/workspace", "sub/../cat", &pr);
	cr_expect_eq(pr.kind, POLICY_PROG_WORKSPACE);
	cr_expect_str_eq(pr.rel, "cat");
}

/* A bare name in an image is walked in the jail's view, directory by
 * directory of the jail's PATH: the host's lstat of ROOT/usr/bin/cat
 * followed an image's usr -> /workspace on the host's side, found
 * nothing, judged `cat` by name, and the jail ran the model's
 * /workspace/bin/cat.  Only a name missing in the image's own trees moves
 * on to the next directory; one whose directory leads into the workspace
 * is judged there (the model could create the file after the decision). */
Test(policy_program, bare_name_in_an_image)
{
	char root[PATH_MAX];
	struct policy_decision d;
	policy_decision_init(&d);
	/* usr -> /workspace: the model's bin/cat would be /usr/bin/cat */
	fx_dir("img1");
	fx_link("/workspace", "img1/usr");
	fx_link("usr/bin", "img1/bin");
	fx_path(root, "img1");
	struct policy_request r = req_for("cat file.txt");
	r.system_root = root;
	cr_assert_eq(policy_decide(pol_default, &r, &d, NULL), 0);
	cr_expect_eq(d.kind, POLICY_DENY, "%s", d.reason);
	cr_expect_str_eq(d.rule, "programs.path");
	cr_expect_not_null(strstr(d.reason, "/workspace/"), "%s", d.reason);
	/* an ordinary image: /usr/local/bin missing, /usr/bin/cat a file */
	fx_dir("img2");
	fx_dir("img2/usr");
	fx_dir("img2/usr/bin");
	fx_file("img2/usr/bin/cat", "");
	fx_path(root, "img2");
	cr_assert_eq(policy_decide(pol_default, &r, &d, NULL), 0);
	cr_expect_eq(d.kind, POLICY_ALLOW, "%s", d.reason);
	cr_expect_str_eq(d.rule, "programs.cat");
	/* a name the image lacks: judged by name (the jail finds nothing) */
	r = req_for("warden-no-such-program");
	r.system_root = root;
	cr_assert_eq(policy_decide(pol_default, &r, &d, NULL), 0);
	cr_expect_str_eq(d.rule, "programs");
	/* usr/local -> /workspace/local, missing there, before a real
	 * /usr/bin/cat: judged in the workspace, not moved past */
	fx_dir("img3");
	fx_dir("img3/usr");
	fx_dir("img3/usr/bin");
	fx_file("img3/usr/bin/cat", "");
	fx_link("/workspace/local", "img3/usr/local");
	fx_path(root, "img3");
	r = req_for("cat file.txt");
	r.system_root = root;
	cr_assert_eq(policy_decide(pol_default, &r, &d, NULL), 0);
	cr_expect_eq(d.kind, POLICY_DENY, "%s", d.reason);
	cr_expect_str_eq(d.rule, "programs.path");
	policy_decision_fini(&d);
}
