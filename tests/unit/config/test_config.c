/* config_load_*: the policy document, its errors with file:line:column,
 * the built-in default, profiles and the position index. */
#include "config/config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct bad_case {
	const char *doc;
	const char *want; /* substring of err.msg, including "doc:LINE:COL:" */
};

/* clang-format off */
static const struct bad_case bad[] = {
	/* syntax: jansson's own line:column */
	{"", "doc:1:"},
	{"{", "doc:1:"},
	{"{\"version\": 1,}", "doc:1:"},
	{"{\"version\": 1}\n{}", "doc:2:"},
	{"[1,\n2,\n", "doc:3:"},
	{"{\"version\": 1, \"version\": 1}", "duplicate object key"},
	{"{\"version\":1,\"programs\":{\"ls\":{},\n \"ls\":{}}}", "doc:2:"},
	/* root */
	{"[]", "doc:1:1: the policy must be a JSON object"},
	{"{}", "missing \"version\""},
	{"{\"version\": \"1\"}", "doc:1:13: version: expected an integer, got a string"},
	{"{\"version\": 2}", "doc:1:13: version: unsupported version 2"},
	{"{\"version\": 1, \"progams\": {}}", "doc:1:16: progams: unknown key 'progams' (did you mean 'programs'?)"},
	{"{\"version\": 1,\n  \"zzzzzzzz\": 1}", "doc:2:3: zzzzzzzz: unknown key 'zzzzzzzz' (known: version"},
	/* programs */
	{"{\"version\": 1, \"programs\": []}", "doc:1:28: programs: expected an object, got an array"},
	{"{\"version\": 1, \"programs\": {\"ls\": 1}}", "programs.ls: expected an object, got an integer"},
	{"{\"version\": 1, \"programs\": {\"/bin/ls\": {}}}", "programs[/bin/ls]: '/bin/ls' is not a program basename"},
	{"{\"version\": 1, \"programs\": {\"\": {}}}", "is not a program basename"},
	{"{\"version\": 1, \"programs\": {\"a b\": {}}}", "is not a program basename"},
	{"{\"version\": 1,\n \"programs\": {\n  \"git\": {\"subcomands\": [\"status\"]}}}", "doc:3:11: programs.git.subcomands: unknown key 'subcomands' (did you mean 'subcommands'?)"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"subcommands\": \"status\"}}}", "programs.git.subcommands: expected an array of strings, got a string"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"subcommands\": []}}}", "programs.git.subcommands: must not be empty"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"subcommands\": [\"status\", 3]}}}", "doc:1:63: programs.git.subcommands[1]: expected a string, got an integer"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"subcommands\": [\"-x\"]}}}", "'-x' is an option, not a subcommand"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"subcommands\": [\"a b\"]}}}", "must be a single word"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"subcommands\": [\"\"]}}}", "must be a non-empty string"},
	{"{\"version\": 1, \"programs\": {\"find\": {\"deny_options\": [\"exec\"]}}}", "programs.find.deny_options[0]: 'exec' is not an option"},
	{"{\"version\": 1, \"programs\": {\"find\": {\"deny_options\": [\"-\"]}}}", "is not an option"},
	{"{\"version\": 1, \"programs\": {\"find\": {\"allow_options\": [\"--x=1\"]}}}", "must name the option without '=value'"},
	{"{\"version\": 1, \"programs\": {\"find\": {\"value_options\": {}}}}", "programs.find.value_options: expected an array of strings, got an object"},
	{"{\"version\": 1, \"programs\": {\"ls\": {\"interpreter\": 1}}}", "programs.ls.interpreter: expected a boolean, got an integer"},
	{"{\"version\": 1, \"programs\": {\"ls\": {\"paths\": \"all\"}}}", "programs.ls.paths: 'all' is not a paths mode"},
	{"{\"version\": 1, \"programs\": {\"ls\": {\"paths\": true}}}", "programs.ls.paths: expected a string, got a boolean"},
	{"{\"version\": 1, \"programs\": {\"ls\": {\"advice\": null}}}", "programs.ls.advice: expected a string, got null"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"approve\": {}}}}", "programs.git.approve: expected an array of approval rules"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"approve\": [\"push\"]}}}", "programs.git.approve[0]: expected an object"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"approve\": [[]]}}}", "programs.git.approve[0]: must not be empty"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"approve\": [{\"reason\": \"x\"}]}}}", "needs \"match\""},
	{"{\"version\": 1, \"programs\": {\"git\": {\"approve\": [{\"match\": [\"push\"], \"why\": 1}]}}}", "programs.git.approve[0].why: unknown key 'why'"},
	{"{\"version\": 1, \"programs\": {\"git\": {\"approve\": [{\"match\": [\"push\"], \"reason\": 1}]}}}", "programs.git.approve[0].reason: expected a string"},
	{"{\"version\": 1, \"programs\": {\"ls\": {\"advice\": \"a\\u0000b\"}}}", "NUL"},
	/* tools and profiles */
	{"{\"version\": 1, \"tools\": {\"t\": {}}}", "tools.t: tool 't' needs a \"class\""},
	{"{\"version\": 1, \"tools\": {\"t\": {\"class\": \"jail\"}}}", "tools.t.class: 'jail' is not a tool class (blocked, direct, sandbox)"},
	{"{\"version\": 1, \"tools\": {\"t\": {\"class\": \"sandbox\", \"profile\": \"huge\"}}}", "tools.t.profile: unknown profile 'huge'"},
	{"{\"version\": 1, \"tools\": {\"t\": {\"class\": \"sandbox\", \"limits\": 1}}}", "tools.t.limits: unknown key"},
	{"{\"version\": 1, \"profiles\": {\"shell_commands\": {}}}", "profiles.shell_commands: profile 'shell_commands' is built in"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"timeout\": 0}}}", "profiles.p.timeout: must be from 0.001 to 86400"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"timeout\": \"15s\"}}}", "profiles.p.timeout: expected a number, got a string"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"memory\": \"lots\"}}}", "profiles.p.memory: 'lots' is not a size"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"memory\": -1}}}", "profiles.p.memory: must be positive"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"cpu\": 0}}}", "profiles.p.cpu: must be from 0.01 to 1024"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"cpu\": 5000}}}", "profiles.p.cpu: must be from 0.01 to 1024"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"pids\": 0}}}", "profiles.p.pids: expected an integer from 1"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"disk\": 1}}}", "profiles.p.disk: unknown key 'disk'"},
	/* approvals, audit, workspace, network */
	{"{\"version\": 1, \"approvals\": {\"ttl\": 0}}", "approvals.ttl: expected whole seconds"},
	{"{\"version\": 1, \"approvals\": {\"ttl\": 1.5}}", "approvals.ttl: expected whole seconds"},
	{"{\"version\": 1, \"approvals\": {\"max_state_entries\": 999}}",
	 "approvals.max_state_entries: expected a whole number from 1000 to 100000000"},
	{"{\"version\": 1, \"approvals\": {\"max_state_entries\": 100000001}}",
	 "approvals.max_state_entries: expected a whole number from 1000 to 100000000"},
	{"{\"version\": 1, \"approvals\": {\"max_state_entries\": \"1e6\"}}",
	 "approvals.max_state_entries: expected a whole number"},
	{"{\"version\": 1, \"approvals\": {\"tll\": 5}}", "approvals.tll: unknown key 'tll' (did you mean 'ttl'?)"},
	{"{\"version\": 1, \"audit\": {\"path\": \"\"}}", "audit.path: must not be empty"},
	{"{\"version\": 1, \"audit\": {\"file\": \"x\"}}", "audit.file: unknown key"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"rel\"}}", "workspace.mount: 'rel' must be an absolute path"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/a/../b\"}}", "workspace.mount: '/a/../b' must be a normalized absolute path"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/\"}}", "workspace.mount: '/' must be a normalized absolute path"},
	{"{\"version\": 1, \"network\": {\"allow\": \"x\"}}", "network.allow: expected an array of strings"},
	/* strict mount, sizes in range, nothing silently rounded */
	{"{\"version\": 1, \"workspace\": {\"mount\": \"//\"}}", "workspace.mount: '//' must be a normalized absolute path"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/workspace/\"}}", "must be a normalized absolute path"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/a//b\"}}", "must be a normalized absolute path"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/a/./b\"}}", "must be a normalized absolute path"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/usr\"}}", "workspace.mount: '/usr' is a system directory of the jail"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/etc/ws\"}}", "is a system directory of the jail"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/tmp\"}}", "is a system directory of the jail"},
	{"{\"version\": 1, \"workspace\": {\"mount\": \"/a b\"}}", "must be an absolute path without spaces"},
	{"{\"version\": 1, \"workspace\": {\"mount\": 1}}", "workspace.mount: expected a string"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"memory\": \"10000000T\"}}}", "profiles.p.memory: must be from 4 MiB to 1 PiB"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"memory\": \"99999999999999999999\"}}}", "profiles.p.memory: must be from 4 MiB to 1 PiB"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"memory\": 9223372036854775807}}}", "profiles.p.memory: must be from 4 MiB to 1 PiB"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"memory\": 1024}}}", "profiles.p.memory: must be from 4 MiB"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"memory\": \"1M\"}}}", "profiles.p.memory: must be from 4 MiB"},
	/* "MB" is ambiguous (decimal or binary?): refused as a size */
	{"{\"version\": 1, \"profiles\": {\"p\": {\"memory\": \"1MB\"}}}", "profiles.p.memory: '1MB' is not a size"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"output\": \"32M\"}}}", "profiles.p.output: must be from 64 bytes to 16 MiB"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"tmp_size\": \"1K\"}}}", "profiles.p.tmp_size: must be from 64 KiB"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"cpu\": 0.001}}}", "profiles.p.cpu: must be from 0.01 to 1024"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"cpu\": 0.0000015}}}", "profiles.p.cpu: must be from"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"cpu\": 1.0000005}}}", "would be rounded"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"timeout\": 1.0005}}}", "profiles.p.timeout: 1.0005 is finer than 0.001 (would be rounded)"},
	{"{\"version\": 1, \"profiles\": {\"p\": {\"pids\": 5000000}}}", "profiles.p.pids: expected an integer from 1 to 4194304"},
	/* sandbox */
	{"{\"version\": 1, \"sandbox\": []}", "sandbox: expected an object"},
	{"{\"version\": 1, \"sandbox\": {\"isolation\": \"vm\"}}", "sandbox.isolation: expected \"container\", \"process\" or \"gvisor\""},
	{"{\"version\": 1, \"sandbox\": {\"require\": [\"gpu\"]}}", "sandbox.require[0]: expected one of cgroup, landlock, seccomp, netns, userns"},
	{"{\"version\": 1, \"sandbox\": {\"require\": \"cgroup\"}}", "sandbox.require: expected an array"},
	{"{\"version\": 1, \"sandbox\": {\"reproducible\": \"yes\"}}", "sandbox.reproducible: expected a boolean"},
	{"{\"version\": 1, \"sandbox\": {\"pool\": 65}}", "sandbox.pool: expected an integer from 0 to 64"},
	{"{\"version\": 1, \"sandbox\": {\"pool\": \"2\"}}", "sandbox.pool: expected an integer from 0 to 64"},
	{"{\"version\": 1, \"sandbox\": {\"memroy\": 1}}", "sandbox.memroy: unknown key 'memroy' (did you mean 'memory'?)"},
	{"{\"version\": 1, \"sandbox\": {\"memory\": \"1E\"}}", "sandbox.memory: '1E' is not a size"},
	{"{\"version\": 1, \"sandbox\": {\"timeout\": 100000}}", "sandbox.timeout: must be from 0.001 to 86400"},
	/* network */
	{"{\"version\": 1, \"network\": {\"mode\": \"on\"}}", "network.mode: expected \"none\" or \"allow\""},
	{"{\"version\": 1, \"network\": {\"mode\": \"none\", \"allow\": [\"pypi.org\"]}}", "network.mode: \"none\" contradicts"},
	{"{\"version\": 1, \"network\": {\"allow\": [\"*\"]}}", "network.allow[0]: '*' allows every host"},
	{"{\"version\": 1, \"network\": {\"allow\": [\"-x.org\"]}}", "network.allow[0]: '-x.org' starts with '-'"},
	{"{\"version\": 1, \"network\": {\"allow\": [\"a b\"]}}", "network.allow[0]: 'a b' must be a single word"},
	{"{\"version\": 1, \"network\": {\"deny\": [\"x.org/p\"]}}", "network.deny[0]: 'x.org/p' is not HOST[:PORT]"},
	{"{\"version\": 1, \"network\": {\"hosts\": [\"db.test\"]}}", "network.hosts[0]: 'db.test' is not NAME=ADDRESS"},
	{"{\"version\": 1, \"network\": {\"hosts\": [\"db=1=2\"]}}", "is not NAME=ADDRESS"},
	{"{\"version\": 1, \"network\": {\"hosts\": [\"d b=1.2.3.4\"]}}", "must be a single word"},
	{"{\"version\": 1, \"network\": {\"hosts\": [\"db=evil.org\"]}}", "has an ADDRESS that is not an IPv4 or IPv6 address"},
	{"{\"version\": 1, \"network\": {\"allow_ports\": [0]}}", "network.allow_ports[0]: expected an integer from 1 to 65535"},
	{"{\"version\": 1, \"network\": {\"allow_ports\": [8080, 70000]}}", "network.allow_ports[1]: expected an integer from 1 to 65535"},
	{"{\"version\": 1, \"network\": {\"allow_ports\": [\"80\"]}}", "network.allow_ports[0]: expected an integer"},
	{"{\"version\": 1, \"network\": {\"tls_intercept\": 1}}", "network.tls_intercept: expected a boolean"},
	{"{\"version\": 1, \"network\": {\"tls_intercept\": true, \"upstream_ca\": \"ca.pem\"}}", "network.upstream_ca: must be an absolute path"},
	{"{\"version\": 1, \"network\": {\"upstream_ca\": \"/ca.pem\"}}", "network.upstream_ca: is used only with \"tls_intercept\": true"},
	{"{\"version\": 1, \"network\": {\"proxy\": 1}}", "network.proxy: unknown key 'proxy'"},
	/* env, program rules */
	{"{\"version\": 1, \"env\": {\"deny\": [\"A B\"]}}", "env.deny[0]: 'A B' is not a variable name"},
	{"{\"version\": 1, \"env\": {\"deny\": [\"*\"]}}", "is not a variable name"},
	{"{\"version\": 1, \"env\": {\"allow\": []}}", "env.allow: unknown key 'allow'"},
	{"{\"version\": 1, \"programs\": {\"x\": {\"deny_env\": [\"1A\"]}}}", "programs.x.deny_env[0]: '1A' is not a variable name"},
	{"{\"version\": 1, \"programs\": {\"x\": {\"value_options\": [\"-o\"], \"data_options\": [\"-o\"]}}}", "programs.x: '-o' is in both value_options and data_options"},
	{"{\"version\": 1, \"programs\": {\"x\": {\"data_options\": [\"--\"]}}}", "programs.x.data_options[0]: '--' is not an option"},
	{"{\"version\": 1, \"programs\": {\"x\": {\"chdir_options\": [\"-C\"]}}}", "programs.x: '-C' is in chdir_options but not in value_options"},
	{"{\"version\": 1, \"programs\": {\"x\": {\"value_options\": [\"-C\"], \"chdir_options\": [\"C\"]}}}", "programs.x.chdir_options[0]: 'C' is not an option"},
	{"{\"version\": 1, \"programs\": {\"x\": {\"before_subcommand\": {}}}}", "programs.x: \"before_subcommand\" needs \"subcommands\""},
	{"{\"version\": 1, \"programs\": {\"x\": {\"subcommands\": [\"a\"], \"before_subcommand\": {\"allow_options\": []}}}}", "programs.x.before_subcommand.allow_options: unknown key"},
	{"{\"version\": 1, \"programs\": {\"x\": {\"subcommands\": [\"a\"], \"before_subcommand\": {\"deny_options\": [\"c\"]}}}}", "programs.x.before_subcommand.deny_options[0]: 'c' is not an option"},
	/* workspace programs: normalized paths in the workspace */
	{"{\"version\": 1, \"workspace\": {\"programs\": {\"/bin/x\": {}}}}", "workspace.programs[/bin/x]: '/bin/x' must be a path relative to the workspace"},
	{"{\"version\": 1, \"workspace\": {\"programs\": {\"a/../b\": {}}}}", "must be a normalized path"},
	{"{\"version\": 1, \"workspace\": {\"programs\": {\"./a\": {}}}}", "must be a normalized path"},
	{"{\"version\": 1, \"workspace\": {\"programs\": {\"a//b\": {}}}}", "must be a normalized path"},
	{"{\"version\": 1, \"workspace\": {\"programs\": {\"bin/\": {}}}}", "must be a normalized path"},
	{"{\"version\": 1, \"workspace\": {\"programs\": {\"bin/x\": {\"paths\": 1}}}}", "workspace.programs[bin/x].paths: expected a string"},
	{"{\"version\": 1, \"workspace\": {\"programs\": []}}", "workspace.programs: expected an object"},
	/* secrets: where a value is, never the value */
	{"{\"version\": 1, \"secrets\": []}", "secrets: expected an object of secrets by name"},
	{"{\"version\": 1, \"secrets\": {\"1X\": \"env:A\"}}", "'1X' is not a secret name"},
	{"{\"version\": 1, \"secrets\": {\"X\": \"hunter22\"}}", "secrets.X: expected \"@/path/to/file\" or \"env:VAR\""},
	{"{\"version\": 1, \"secrets\": {\"X\": \"@rel/tok\"}}", "secrets.X: \"@FILE\" needs an absolute path"},
	{"{\"version\": 1, \"secrets\": {\"X\": \"env:\"}}", "\"env:VAR\" needs a variable name"},
	{"{\"version\": 1, \"secrets\": {\"X\": {}}}", "'X' needs \"from\""},
	{"{\"version\": 1, \"secrets\": {\"X\": {\"from\": \"env:A\", \"value\": \"x\"}}}", "secrets.X.value: unknown key 'value'"},
	{"{\"version\": 1, \"secrets\": {\"X\": {\"from\": \"env:A\", \"placeholder\": \"a b\"}}}", "secrets.X.placeholder: expected an environment variable name"},
	{"{\"version\": 1, \"secrets\": {\"X\": {\"from\": \"env:A\", \"inject\": [\"api.test\"]}}}", "secrets.X.inject[0]: 'api.test' is not 'HOST[:PORT][/PATH] WHAT'"},
	{"{\"version\": 1, \"secrets\": {\"X\": {\"from\": \"env:A\", \"inject_basic\": [\"*.a.test u:{X}\"]}}}", "names a wildcard"},
	{"{\"version\": 1, \"secrets\": {\"X\": {\"from\": \"env:A\", \"inject\": \"a H=v\"}}}", "secrets.X.inject: expected an array of strings"},
};
/* clang-format on */

Test(config_load_buffer, rejects_bad_documents)
{
	for (size_t i = 0; i < WD_ARRAY_SIZE(bad); i++) {
		struct wd_err e = {0};
		struct config_policy *p = NULL;
		int rc = config_load_buffer(bad[i].doc, strlen(bad[i].doc), "doc", &p, &e);
		cr_expect_eq(rc, -EINVAL, "case %zu accepted: %s", i, bad[i].doc);
		cr_expect_null(p);
		cr_expect_not_null(strstr(e.msg, bad[i].want), "case %zu: '%s' lacks '%s'", i,
				   e.msg, bad[i].want);
		cr_expect_eq(strncmp(e.msg, "doc:", 4), 0, "case %zu: no file name: %s", i, e.msg);
		config_policy_free(p);
	}
}

Test(config_load_default, loads_and_has_the_coding_allowlist)
{
	struct config_policy *p = NULL;
	struct wd_err e = {0};
	cr_assert_eq(config_load_default(&p, &e), 0, "%s", e.msg);
	static const char *const names[] = {"pytest", "python3", "git",	 "ls",	 "cat",
					    "head",   "tail",	 "grep", "find", "wc",
					    "diff",   "sort",	 "uniq"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(names); i++)
		cr_expect_not_null(config_program_find(p, names[i], strlen(names[i])), "%s",
				   names[i]);
	cr_expect_null(config_program_find(p, "rm", 2));
	cr_expect_null(config_program_find(p, "sh", 2));
	cr_expect_null(config_program_find(p, "gi", 2));
	cr_expect_null(config_program_find(p, "gitk", 4));
	cr_expect_not_null(config_program_find(p, "git status", 3));
	const struct config_program *git = config_program_find(p, "git", 3);
	cr_expect(git->has_subcommands);
	cr_expect_eq(git->napprove, 1);
	cr_expect_str_eq(git->approve[0].match.v[0], "push");
	cr_expect(config_program_find(p, "python3", 7)->interpreter);
	cr_expect_str_eq(p->mount, "/workspace");
	cr_expect_eq(p->approval_ttl_s, 600);
	cr_expect_eq(p->approval_max_state_entries, 1000000);
	cr_expect_eq(strlen(p->digest), 64);
	config_policy_free(p);
}

Test(config_profiles, builtins_follow_common_practice)
{
	struct config_policy *p = NULL;
	cr_assert_eq(config_load_default(&p, NULL), 0);
	const struct config_profile *s = config_profile_find(p, "shell_commands");
	const struct config_profile *c = config_profile_find(p, "code_execution");
	const struct config_profile *b = config_profile_find(p, "browser_automation");
	cr_assert(s && c && b);
	cr_expect_eq(s->lim.timeout_ms, 15000);
	cr_expect_eq(s->lim.memory_bytes, 128ULL << 20);
	cr_expect_eq(s->lim.cpu_millionths, 250000);
	cr_expect_eq(s->lim.output_bytes, 512ULL << 10);
	cr_expect_eq(c->lim.timeout_ms, 30000);
	cr_expect_eq(c->lim.memory_bytes, 256ULL << 20);
	cr_expect_eq(c->lim.cpu_millionths, 500000);
	cr_expect_eq(c->lim.output_bytes, 1ULL << 20);
	cr_expect_eq(b->lim.timeout_ms, 60000);
	cr_expect_eq(b->lim.memory_bytes, 1ULL << 30);
	cr_expect_eq(b->lim.cpu_millionths, 1000000);
	cr_expect_eq(b->lim.output_bytes, 5ULL << 20);
	const struct config_tool *t = config_tool_find(p, "shell");
	cr_assert_not_null(t);
	cr_expect_eq(t->klass, CONFIG_TOOL_SANDBOX);
	cr_expect_str_eq(t->profile, "shell_commands");
	cr_expect_eq(config_tool_find(p, "delete_workspace")->klass, CONFIG_TOOL_BLOCKED);
	cr_expect_eq(config_tool_find(p, "read_file")->klass, CONFIG_TOOL_DIRECT);
	cr_expect_null(config_tool_find(p, "nope"));
	config_policy_free(p);
}

Test(config_load_buffer, custom_profiles_and_tools)
{
	static const char doc[] =
	    "{\"version\": 1,"
	    " \"profiles\": {\"tiny\": {\"timeout\": 2.5, \"memory\": \"64MiB\", \"cpu\": 0.1,"
	    "   \"output\": 4096, \"pids\": 16}},"
	    " \"tools\": {\"t\": {\"class\": \"sandbox\", \"profile\": \"tiny\"},"
	    "   \"u\": {\"class\": \"sandbox\"}, \"b\": {\"class\": \"blocked\"}},"
	    " \"audit\": {\"path\": \"/var/log/warden.jsonl\"},"
	    " \"network\": {\"allow\": [\"pypi.org\", \"*.github.com\"]},"
	    " \"approvals\": {\"ttl\": 30},"
	    " \"workspace\": {\"mount\": \"/work\"}}";
	struct config_policy *p = NULL;
	struct wd_err e = {0};
	cr_assert_eq(config_load_buffer(doc, strlen(doc), "doc", &p, &e), 0, "%s", e.msg);
	const struct config_profile *t = config_profile_find(p, "tiny");
	cr_assert_not_null(t);
	cr_expect_eq(t->lim.timeout_ms, 2500);
	cr_expect_eq(t->lim.memory_bytes, 64ULL << 20);
	cr_expect_eq(t->lim.cpu_millionths, 100000);
	cr_expect_eq(t->lim.output_bytes, 4096);
	cr_expect_eq(t->lim.pids, 16);
	cr_expect_str_eq(config_tool_find(p, "u")->profile, "shell_commands");
	cr_expect_str_eq(p->audit_path, "/var/log/warden.jsonl");
	cr_expect_eq(p->net.allow.n, 2);
	cr_expect_eq(p->approval_ttl_s, 30);
	cr_expect_str_eq(p->mount, "/work");
	cr_expect_eq(p->nprograms, 0);
	config_policy_free(p);
}

Test(config_policy_to_json, round_trips)
{
	struct config_policy *p = NULL, *q = NULL;
	cr_assert_eq(config_load_default(&p, NULL), 0);
	json_t *j = config_policy_to_json(p);
	/* the effective policy is itself a valid policy, except the
	 * "builtin" marker on profiles, which is output only */
	json_t *profs = json_object_get(j, "profiles");
	json_object_clear(profs);
	char *s = json_dumps(j, JSON_INDENT(2));
	struct wd_err e = {0};
	cr_expect_eq(config_load_buffer(s, strlen(s), "show", &q, &e), 0, "%s", e.msg);
	if (q)
		cr_expect_str_eq(q->digest, p->digest);
	free(s);
	json_decref(j);
	config_policy_free(p);
	config_policy_free(q);
}

Test(config_json_locate, finds_keys_and_values)
{
	static const char t[] = "{\n  \"a\": {\"b\": [1, {\"c\": \"x\"}]},\n  \"d\\u00e9\": true,\n"
				"  \"é\": [ [], \"y\" ]\n}";
	int line = 0, col = 0;
	struct config_path_elem p1[] = {
	    {.key = "a"}, {.key = "b"}, {.key = NULL, .index = 1}, {.key = "c"}};
	cr_expect_eq(config_json_locate(t, strlen(t), p1, 4, true, &line, &col), 0);
	cr_expect_eq(line, 2);
	cr_expect_eq(col, 19);
	cr_expect_eq(config_json_locate(t, strlen(t), p1, 4, false, &line, &col), 0);
	cr_expect_eq(col, 24);
	struct config_path_elem p2[] = {{.key = "dé"}};
	cr_expect_eq(config_json_locate(t, strlen(t), p2, 1, true, &line, &col), 0);
	cr_expect_eq(line, 3);
	cr_expect_eq(col, 3);
	struct config_path_elem p3[] = {{.key = "é"}, {.key = NULL, .index = 1}};
	cr_expect_eq(config_json_locate(t, strlen(t), p3, 2, false, &line, &col), 0);
	cr_expect_eq(line, 4);
	cr_expect_eq(col, 14); /* characters, not bytes */
	struct config_path_elem p4[] = {{.key = "zz"}};
	cr_expect_eq(config_json_locate(t, strlen(t), p4, 1, true, &line, &col), -1);
	struct config_path_elem p5[] = {{.key = "a"}, {.key = "b"}, {.key = NULL, .index = 7}};
	cr_expect_eq(config_json_locate(t, strlen(t), p5, 3, false, &line, &col), -1);
}

Test(config_load_file, errors_name_the_file)
{
	struct wd_err e = {0};
	struct config_policy *p = NULL;
	cr_expect_lt(config_load_file("/nonexistent/policy.json", &p, &e), 0);
	cr_expect_not_null(strstr(e.msg, "/nonexistent/policy.json"));
	cr_expect_lt(config_load_file("/tmp", &p, &e), 0);
	cr_expect_not_null(strstr(e.msg, "not a regular file"), "%s", e.msg);
	char path[] = "/tmp/wd-config-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	const char doc[] = "{\"version\": 1,\n \"programs\": {\"ls\": {\"bogus\": 1}}}";
	cr_assert_eq(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);
	cr_expect_lt(config_load_file(path, &p, &e), 0);
	char want[64];
	snprintf(want, sizeof(want), "%s:2:22:", path);
	cr_expect_eq(strncmp(e.msg, want, strlen(want)), 0, "%s", e.msg);
	unlink(path);
}

/* Every limit and egress option of `warden run` has a key. */
Test(config_load_buffer, sandbox_network_env_keys)
{
	static const char doc[] =
	    "{\"version\": 1,"
	    " \"sandbox\": {\"isolation\": \"process\", \"memory\": \"256M\", \"pids\": 64,"
	    "   \"cpu\": 0.5, \"tmp_size\": \"32MiB\", \"timeout\": 12.5, \"output\": \"128K\","
	    "   \"require\": [\"seccomp\", \"cgroup\", \"userns\"], \"reproducible\": true,"
	    "   \"pool\": 3},"
	    " \"network\": {\"mode\": \"allow\", \"allow\": [\"pypi.org\", "
	    "\"*.github.com:443=GET\"],"
	    "   \"deny\": [\"evil.pypi.org\"], \"hosts\": [\"db.test=10.0.0.5\", \"v6.test=::1\"],"
	    "   \"allow_ports\": [8080, 5432], \"tls_intercept\": true,"
	    "   \"upstream_ca\": \"/etc/ssl/certs/ca-certificates.crt\"},"
	    " \"env\": {\"deny\": [\"LD_*\", \"GCONV_PATH\"]},"
	    " \"profiles\": {\"small\": {\"tmp_size\": \"1M\"}},"
	    " \"workspace\": {\"mount\": \"/work/space\","
	    "   \"programs\": {\"tools/run\": {\"deny_options\": [\"-x\"]}}}}";
	struct config_policy *p = NULL, *q = NULL;
	struct wd_err e = {0};
	cr_assert_eq(config_load_buffer(doc, strlen(doc), "doc", &p, &e), 0, "%s", e.msg);
	const struct config_sandbox *sb = &p->sandbox;
	cr_expect(sb->isolation_set);
	cr_expect_eq(sb->isolation, WD_ISOLATION_PROCESS);
	cr_expect_eq(sb->lim.memory_bytes, 256ULL << 20);
	cr_expect_eq(sb->lim.pids, 64);
	cr_expect_eq(sb->lim.cpu_millionths, 500000);
	cr_expect_eq(sb->lim.tmp_bytes, 32ULL << 20);
	cr_expect_eq(sb->lim.timeout_ms, 12500);
	cr_expect_eq(sb->lim.output_bytes, 128ULL << 10);
	cr_expect_eq(sb->require, WD_REQUIRE_SECCOMP | WD_REQUIRE_CGROUP | WD_REQUIRE_USERNS);
	cr_expect(sb->reproducible);
	cr_expect_eq(sb->pool, 3);
	const struct config_network *n = &p->net;
	cr_expect(n->mode_set);
	cr_expect_eq(n->mode, WD_NET_PROXY);
	cr_expect_eq(n->allow.n, 2);
	cr_expect_str_eq(n->deny.v[0], "evil.pypi.org");
	cr_expect_str_eq(n->hosts.v[1], "v6.test=::1");
	cr_expect_eq(n->nports, 2);
	cr_expect_eq(n->ports[1], 5432);
	cr_expect(n->tls_intercept);
	cr_expect_str_eq(n->upstream_ca, "/etc/ssl/certs/ca-certificates.crt");
	cr_expect_eq(p->env_deny.n, 2);
	cr_expect_eq(config_profile_find(p, "small")->lim.tmp_bytes, 1ULL << 20);
	cr_expect_str_eq(p->mount, "/work/space");
	cr_assert_not_null(config_wprogram_find(p, "tools/run"));
	cr_expect_str_eq(config_wprogram_find(p, "tools/run")->rule,
			 "workspace.programs[tools/run]");
	cr_expect_null(config_wprogram_find(p, "tools"));

	/* the effective policy shows every key and loads to the same digest */
	json_t *j = config_policy_to_json(p);
	json_object_clear(json_object_get(j, "profiles"));
	char *s = json_dumps(j, JSON_COMPACT);
	cr_expect_not_null(strstr(s, "\"require\":[\"cgroup\",\"seccomp\",\"userns\"]"), "%s", s);
	cr_expect_not_null(strstr(s, "\"allow_ports\":[8080,5432]"), "%s", s);
	cr_expect_not_null(strstr(s, "\"pool\":3"), "%s", s);
	cr_expect_not_null(strstr(s, "\"tools/run\""), "%s", s);
	json_decref(j);
	/* a profile without builtins reloads (small's own limits are kept) */
	cr_expect_eq(config_load_buffer(s, strlen(s), "show", &q, &e), 0, "%s", e.msg);
	free(s);
	config_policy_free(q);
	config_policy_free(p);
}

/* wd_policy_sandbox(): the public view of the same keys. */
Test(wd_policy_sandbox, reports_the_policy)
{
	char path[] = "/tmp/wd-config-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	const char doc[] = "{\"version\": 1, \"sandbox\": {\"memory\": \"64M\", \"require\":"
			   " [\"landlock\", \"netns\"]}, \"network\": {\"deny\": [\"x.org\"],"
			   " \"allow_ports\": [9000]}}";
	cr_assert_eq(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);
	wd_policy *p = NULL;
	struct wd_err e = {0};
	cr_assert_eq(wd_policy_load(path, &p, &e), 0, "%s", e.msg);
	unlink(path);
	struct wd_policy_sandbox sb;
	memset(&sb, 0x55, sizeof(sb));
	wd_policy_sandbox(p, &sb);
	cr_expect_eq(sb.limits.memory_bytes, 64ULL << 20);
	cr_expect_eq(sb.limits.pids, 0);
	cr_expect_eq(sb.limits.timeout_ms, 0);
	cr_expect_not(sb.isolation_set);
	cr_expect_eq(sb.require, WD_REQUIRE_LANDLOCK | WD_REQUIRE_NETNS);
	cr_expect_not(sb.reproducible);
	cr_expect_eq(sb.pool, 0);
	cr_expect_not(sb.net_mode_set);
	cr_expect_eq(sb.net_nallow, 0);
	cr_expect_eq(sb.net_ndeny, 1);
	cr_expect_str_eq(sb.net_deny[0], "x.org");
	cr_expect_eq(sb.nallow_ports, 1);
	cr_expect_eq(sb.allow_ports[0], 9000);
	cr_expect_not(sb.tls_intercept);
	cr_expect_null(sb.upstream_ca);
	wd_policy_free(p);
}

/* A FIFO given as the policy used to block forever. */
Test(config_load_file, refuses_a_fifo_without_blocking, .timeout = 10)
{
	char dir[] = "/tmp/wd-config-XXXXXX", fifo[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	struct wd_err e = {0};
	struct config_policy *p = NULL;
	cr_expect_eq(config_load_file(fifo, &p, &e), -EINVAL);
	cr_expect_not_null(strstr(e.msg, fifo), "%s", e.msg);
	cr_expect_not_null(strstr(e.msg, "not a regular file"), "%s", e.msg);
	cr_expect_lt(config_load_file("/dev/zero", &p, &e), 0);
	cr_expect_not_null(strstr(e.msg, "/dev/zero: not a regular file"), "%s", e.msg);
	unlink(fifo);
	rmdir(dir);
}

Test(config_load_buffer, secrets_name_sources_not_values)
{
	static const char doc[] =
	    "{\"version\": 1, \"secrets\": {"
	    "\"GITHUB_TOKEN\": {\"from\": \"env:GH_TOKEN\", \"placeholder\": \"GITHUB_TOKEN\","
	    " \"inject\": [\"api.test Authorization=Bearer {GITHUB_TOKEN}\"],"
	    " \"inject_basic\": [\"git.test x-access-token:{GITHUB_TOKEN}\"]},"
	    "\"NPM_TOKEN\": \"@/run/secrets/npm\"}}";
	struct config_policy *p = NULL;
	struct wd_err e = {0};
	cr_assert_eq(config_load_buffer(doc, strlen(doc), "doc", &p, &e), 0, "%s", e.msg);
	cr_assert_eq(p->nsecrets, 2);
	cr_expect_str_eq(p->secrets[0].name, "GITHUB_TOKEN");
	cr_expect_str_eq(p->secrets[0].from, "env:GH_TOKEN");
	cr_expect_str_eq(p->secrets[0].placeholder, "GITHUB_TOKEN");
	cr_expect_eq(p->secrets[0].inject.n, 1);
	cr_expect_str_eq(p->secrets[0].inject_basic.v[0], "git.test x-access-token:{GITHUB_TOKEN}");
	cr_expect_str_eq(p->secrets[1].from, "@/run/secrets/npm");
	cr_expect_null(p->secrets[1].placeholder);
	/* the effective policy shows them, so they are in its digest */
	json_t *j = config_policy_to_json(p);
	char *s = json_dumps(j, JSON_COMPACT);
	cr_expect_not_null(strstr(s, "\"NPM_TOKEN\":{\"from\":\"@/run/secrets/npm\""), "%s", s);
	free(s);
	json_decref(j);
	config_policy_free(p);
}

/* The levels' names: one table, both ways, and nothing else accepted
 * (the CLI's --isolation, serve's and the policy's sandbox.isolation
 * parse through it). */
Test(config_isolation, names_both_ways)
{
	const enum wd_isolation all[] = {WD_ISOLATION_CONTAINER, WD_ISOLATION_PROCESS,
					 WD_ISOLATION_GVISOR};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		enum wd_isolation back = (enum wd_isolation)99;
		cr_expect_eq(wd_isolation_parse(wd_isolation_name(all[i]), &back), 0);
		cr_expect_eq(back, all[i]);
	}
	cr_expect_str_eq(wd_isolation_name(WD_ISOLATION_GVISOR), "gvisor");
	cr_expect_str_eq(wd_isolation_name((enum wd_isolation)7), "?");
	enum wd_isolation l = WD_ISOLATION_PROCESS;
	cr_expect_eq(wd_isolation_parse("Container", &l), -EINVAL);
	cr_expect_eq(wd_isolation_parse("?", &l), -EINVAL);
	cr_expect_eq(wd_isolation_parse(NULL, &l), -EINVAL);
	cr_expect_eq(l, WD_ISOLATION_PROCESS, "a refused name leaves the level");
}
