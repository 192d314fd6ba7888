/* presets.c - the named built-in policies, `--policy preset:NAME`.
 *
 * A preset is the built-in default policy (default.c) plus programs a
 * coding agent uses every turn; what each adds and what that lets a model
 * do is in docs/policy.md, "Presets".  The JSON goes through the same
 * validator as a user's file, so `warden policy show --policy
 * preset:coding > p.json` is a policy that behaves identically.
 *
 *   preset:python  default + the editing set + make + pip, pip3
 *   preset:node    default + the editing set + make + node, npm
 *   preset:coding  default + all of them
 *
 * The editing set: sed, echo, mkdir, cp, mv, touch, patch.  Options were
 * audited as default.c's were (GNU sed 4.9, coreutils 9.1, GNU patch
 * 2.7.6, GNU make 4.3, node 18, npm 9, pip 23), by the same rule: an option
 * whose value names a file is a value_option (judged as a path, so
 * `cp -t /etc`, `patch -o ../x`, `make -C /` are refused), a pattern or a
 * count a data_option; refused outright:
 *
 *  - patch -g/--get runs RCS, ClearCase or Perforce to fetch a file, and
 *    PATCH_GET turns it on; -e/--ed feeds the diff to ed(1);
 *  - npm -g/--global installs outside the workspace; NPM_CONFIG_* and
 *    npm_config_* set any npm option (script-shell, prefix, registry);
 *  - pip -i is refused for --index-url (which pauses for a human, as do
 *    --extra-index-url and --trusted-host: another index is where a
 *    dependency-confusion package comes from, and a pause matches the long
 *    spelling only); PIP_* sets any pip option from the environment.
 *    The pause is a speed bump, not a boundary: a requirements file, a
 *    pip.conf or a project .npmrc, all model-writable, name an index
 *    too; the egress proxy's allowlist bounds where packages come from;
 *  - make: MAKEFLAGS, MFLAGS, GNUMAKEFLAGS and MAKEFILES add options and
 *    makefiles no argument shows; node: NODE_OPTIONS likewise.
 *
 * Code execution, stated rather than hidden (each is "interpreter": true):
 * make runs the workspace's Makefile recipes, npm runs package.json
 * scripts (install, test, run) and the dependencies' install scripts,
 * node runs JavaScript, pip runs a source package's build backend, and
 * GNU sed's `e` command and `s///e` flag run shell commands.  All of it
 * runs inside the jail, which bounds it, as it bounds python3 and pytest
 * in the default.  Nothing here lets a model name a file outside the
 * workspace: every operand and value_option is contained after
 * resolution (policy/path.c).  A backup suffix (sed -iSUFFIX,
 * --in-place=SUFFIX, cp and mv -S, patch -z) is a suffix_options value: it
 * is appended to each file's name, so a '/' in it would put the backup in
 * another directory no path check sees; such a suffix is refused
 * (policy/decide.c, suffix_denied).  patch -Y's basename prefix is one
 * too: it goes in each patched file's directory, which the diff names.
 * SIMPLE_BACKUP_SUFFIX sets the same suffix from the environment (GNU
 * patch 2.7.6 takes it as it is: with a directory "f.." made first,
 * SIMPLE_BACKUP_SUFFIX=../../../x patch -b f wrote x above the
 * workspace), so cp, mv and patch refuse it (coreutils 9.1 ignores one
 * with '/', others need not).
 * patch -d and make -C are chdir_options: the program changes into that
 * directory before it opens its other files (-i, -o, -r, -B; -f, -I), so
 * those are judged from there as well as from the current directory
 * (policy/decide.c, chdir_denied).
 */
#include "config/config.h"
#include "util/escape.h"

#include <string.h>

/* clang-format off */
/* A preset's programs: a name and its rule, the JSON of a "programs"
 * member's value (pip and pip3 are one program under two names, so one
 * rule). */
struct program {
	const char *name;
	const char *rule;
};

static const char rule_pip[] =
    "{\"interpreter\": true, \"subcommands\": [\"install\", \"uninstall\", \"list\","
    " \"show\", \"freeze\", \"check\", \"download\", \"wheel\", \"hash\", \"inspect\"], \"deny_options\": [\"-i\"],"
    " \"value_options\": [\"-r\", \"--requirement\", \"-c\", \"--constraint\", \"-e\", \"--editable\","
    " \"-t\", \"--target\", \"--prefix\", \"--root\", \"--src\", \"--cache-dir\", \"--log\","
    " \"--cert\", \"--client-cert\", \"-d\", \"--dest\", \"-w\", \"--wheel-dir\", \"--report\","
    " \"--python\", \"-f\", \"--find-links\", \"--path\"], \"data_options\": [\"--index-url\","
    " \"--extra-index-url\", \"--trusted-host\", \"--no-binary\", \"--only-binary\","
    " \"--platform\", \"--python-version\", \"--implementation\", \"--abi\", \"--progress-bar\","
    " \"--upgrade-strategy\", \"--exists-action\", \"--timeout\", \"--retries\", \"--proxy\","
    " \"-C\", \"--config-settings\", \"--format\", \"--exclude\", \"--root-user-action\","
    " \"--use-feature\", \"--use-deprecated\", \"-a\", \"--algorithm\"], \"approve\": [{\"match\": [\"--index-url\"],"
    " \"reason\": \"packages from an index the policy does not name\"}, {\"match\": [\"--extra-index-url\"],"
    " \"reason\": \"packages from an index the policy does not name\"}, {\"match\": [\"--trusted-host\"],"
    " \"reason\": \"turns off TLS verification for a host\"}], \"deny_env\": [\"PIP_*\"],"
    " \"advice\": \"pip installs inside the sandbox (a virtual environment in the workspace,"
    " or --user); name another index with --index-url, which asks a human\"}";

static const struct program set_edit[] = {
    {"sed", "{\"interpreter\": true, \"paths\": \"skip_first\", \"value_options\": [\"-f\","
    " \"--file\"], \"data_options\": [\"-e\", \"--expression\", \"-l\", \"--line-length\"],"
    " \"suffix_options\": [\"-i\", \"--in-place\"],"
    " \"advice\": \"sed edits files of the workspace; name them by paths inside it\"}"},
    {"echo", "{\"paths\": \"none\"}"},
    {"mkdir", "{\"data_options\": [\"-m\", \"--mode\"]}"},
    {"cp", "{\"value_options\": [\"-t\", \"--target-directory\"], \"data_options\": [\"-S\","
    " \"--suffix\", \"--sparse\", \"--no-preserve\"], \"suffix_options\": [\"-S\", \"--suffix\"],"
    " \"deny_env\": [\"SIMPLE_BACKUP_SUFFIX\"]}"},
    {"mv", "{\"value_options\": [\"-t\", \"--target-directory\"], \"data_options\": [\"-S\","
    " \"--suffix\"], \"suffix_options\": [\"-S\", \"--suffix\"],"
    " \"deny_env\": [\"SIMPLE_BACKUP_SUFFIX\"]}"},
    {"touch", "{\"value_options\": [\"-r\", \"--reference\"], \"data_options\": [\"-d\","
    " \"--date\", \"-t\", \"--time\"]}"},
    {"patch", "{\"deny_options\": [\"-g\", \"--get\", \"-e\", \"--ed\"], \"value_options\": [\"-i\","
    " \"--input\", \"-o\", \"--output\", \"-d\", \"--directory\", \"-r\", \"--reject-file\","
    " \"-B\", \"--prefix\"], \"data_options\": [\"-p\", \"--strip\","
    " \"-F\", \"--fuzz\", \"-z\", \"--suffix\", \"-Y\", \"--basename-prefix\", \"-V\","
    " \"--version-control\", \"-D\", \"--ifdef\","
    " \"--quoting-style\", \"--read-only\", \"--reject-format\", \"-x\", \"--debug\"],"
    " \"suffix_options\": [\"-z\", \"--suffix\", \"-Y\", \"--basename-prefix\"],"
    " \"chdir_options\": [\"-d\", \"--directory\"], \"deny_env\": [\"PATCH_GET\", \"SIMPLE_BACKUP_SUFFIX\"], \"advice\": \"patch applies a diff to workspace files: patch -p1 -i FILE.diff\"}"},
    {NULL, NULL},
};

static const struct program set_make[] = {
    {"make", "{\"interpreter\": true, \"value_options\": [\"-C\", \"--directory\", \"-f\","
    " \"--file\", \"--makefile\", \"-I\", \"--include-dir\", \"-o\", \"--old-file\", \"--assume-old\","
    " \"-W\", \"--what-if\", \"--new-file\", \"--assume-new\"], \"data_options\": [\"--eval\"],"
    " \"chdir_options\": [\"-C\", \"--directory\"],"
    " \"deny_env\": [\"MAKEFLAGS\", \"MFLAGS\", \"GNUMAKEFLAGS\", \"MAKEFILES\"], \"advice\": \"make runs the workspace's Makefile inside the sandbox\"}"},
    {NULL, NULL},
};

static const struct program set_node[] = {
    {"node", "{\"interpreter\": true, \"value_options\": [\"-r\", \"--require\", \"--import\","
    " \"--loader\", \"--experimental-loader\"], \"data_options\": [\"-e\", \"--eval\","
    " \"-p\", \"--print\", \"--input-type\", \"-C\", \"--conditions\", \"--stack-size\","
    " \"--max-old-space-size\"], \"deny_env\": [\"NODE_OPTIONS\"], \"advice\": \"node runs inside the sandbox; keep files in the workspace\"}"},
    {"npm", "{\"interpreter\": true, \"subcommands\": [\"install\", \"i\", \"ci\", \"test\","
    " \"t\", \"run\", \"run-script\", \"start\", \"ls\", \"list\", \"outdated\", \"view\", \"info\","
    " \"uninstall\", \"update\", \"audit\", \"init\", \"explain\", \"why\", \"prune\", \"rebuild\","
    " \"pack\", \"version\"], \"deny_options\": [\"-g\", \"--global\"], \"value_options\": [\"--prefix\","
    " \"-C\", \"--cache\", \"--userconfig\", \"-w\", \"--workspace\"], \"data_options\": [\"--registry\","
    " \"--tag\", \"--omit\", \"--include\", \"--install-strategy\", \"--loglevel\", \"--depth\","
    " \"--otp\", \"--preid\", \"--scope\", \"--before\", \"--fetch-timeout\", \"--fetch-retries\"],"
    " \"deny_env\": [\"NPM_CONFIG_*\", \"npm_config_*\"], \"advice\": \"npm here installs into the workspace and runs its scripts: install,"
    " ci, test, run, ls, outdated, view; not -g, not publish\"}"},
    {NULL, NULL},
};

static const struct program set_python[] = {
    {"pip", rule_pip},
    {"pip3", rule_pip},
    {NULL, NULL},
};

/* clang-format on */

static const struct program *const sets_python[] = {set_edit, set_make, set_python, NULL};
static const struct program *const sets_node[] = {set_edit, set_make, set_node, NULL};
static const struct program *const sets_coding[] = {set_edit, set_make, set_node, set_python, NULL};

static const struct {
	const char *name;
	const struct program *const *sets;
} presets[] = {
    {"coding", sets_coding},
    {"node", sets_node},
    {"python", sets_python},
};

const char *
config_preset_name(const char *path)
{
	return path && !strncmp(path, CONFIG_PRESET_PREFIX, strlen(CONFIG_PRESET_PREFIX))
		   ? path + strlen(CONFIG_PRESET_PREFIX)
		   : NULL;
}

int
config_load_preset(const char *name, struct config_policy **out, struct wd_err *err)
{
	size_t k = 0;
	while (k < WD_ARRAY_SIZE(presets) && strcmp(presets[k].name, name))
		k++;
	if (k == WD_ARRAY_SIZE(presets)) {
		/* the name comes from a command line or a client's request */
		wd_autofree char *vis = wd_esc_text(name, strlen(name), 0, 0);
		return wd_err_set(err, WD_E_INVAL,
				  "policy " CONFIG_PRESET_PREFIX "%s: unknown preset (known: "
				  "coding, node, python)",
				  vis);
	}
	size_t n = 0;
	for (size_t i = 0; config_default_json_parts[i]; i++)
		n += strlen(config_default_json_parts[i]);
	wd_autofree char *base = wd_xmalloc(n + 1);
	for (size_t i = 0, o = 0; config_default_json_parts[i]; i++) {
		size_t m = strlen(config_default_json_parts[i]);
		memcpy(base + o, config_default_json_parts[i], m + 1);
		o += m;
	}
	json_t *root = json_loadb(base, n, JSON_REJECT_DUPLICATES, NULL);
	json_t *progs = root ? json_object_get(root, "programs") : NULL;
	if (!progs)
		abort(); /* the built-in text is a constant */
	for (const struct program *const *s = presets[k].sets; *s; s++)
		for (const struct program *f = *s; f->name; f++) {
			json_t *one = json_loads(f->rule, JSON_REJECT_DUPLICATES, NULL);
			if (!one || json_object_set_new(progs, f->name, one) < 0)
				abort(); /* the built-in text is a constant */
		}
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		abort();
	char src[64];
	snprintf(src, sizeof(src), CONFIG_PRESET_PREFIX "%s", presets[k].name);
	int rc = config_load_buffer(text, strlen(text), src, out, err);
	free(text);
	return rc;
}
