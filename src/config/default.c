/* default.c - the built-in policy, used when no --policy is given.
 *
 * A conservative allowlist for coding work: run the tests, read
 * files, inspect git history.  Nothing that writes outside the workspace,
 * nothing that reaches the network without a human: `git push` pauses.
 * It is JSON and goes through the same validator as a user's file, so the
 * built-in and a copy of `warden policy show` behave identically.
 *
 * Every option of every program here was audited against its manual
 * (coreutils 9.1, grep 3.8, diffutils 3.8, findutils 4.9, git 2.39, pytest
 * 7.2, Python 3.11).  An option is refused when it runs a
 * program, writes outside the workspace, or reads a file named in its
 * value that cannot be judged for containment; an option whose value names
 * a file is a value_option (the value is judged like any path); an option
 * whose value is data (a pattern, a count, code) is a data_option (never
 * judged as a path).  The table, option by option, with reasons, is in
 * docs/policy.md, "The built-in default policy".  In short:
 *
 *  - sort --compress-program runs a program; sort and wc --files0-from read
 *    file names from a file and open them unjudged;
 *  - find -exec/-execdir/-ok/-okdir run programs, -delete deletes,
 *    -fprint*, -fls write files, -files0-from reads start points from a
 *    file; beyond that only -name and -type are allowed;
 *  - git, before the subcommand: -c/--config-env set configuration
 *    (core.pager, core.fsmonitor, diff.external run programs), -C,
 *    --git-dir, --work-tree choose another repository, --exec-path another
 *    set of git programs, -p/--paginate start a pager; anywhere: --output
 *    writes a file, --ext-diff runs the external diff driver,
 *    --show-signature and --signed run gpg, --upload-pack, --receive-pack
 *    and --exec name programs to run, --pathspec-from-file reads a file;
 *    GIT_* variables do all of these from the environment, PAGER too,
 *    and HOME and XDG_CONFIG_HOME name the global config git reads
 *    (~/.gitconfig, a file the model writes: its diff.external ran a
 *    program on `git diff`), SSH_ASKPASS a program a push runs;
 *  - tail -f/-F/--follow never end;
 *  - pytest --basetemp empties the directory it names first (`--basetemp=.`
 *    would delete the workspace), -o/--override-ini sets any ini option
 *    (cache_dir, addopts), --pastebin uploads the session; PYTEST_ADDOPTS
 *    and PYTEST_PLUGINS add options and plugins from the environment;
 *  - python3 and pytest run code by design (python3 is an interpreter;
 *    pytest imports the workspace's conftest.py and tests): the jail, not
 *    the policy, bounds that code;
 *  - for every program, LD_* (LD_PRELOAD, LD_AUDIT: code loaded into any
 *    program), GCONV_PATH (iconv modules: CVE-2021-4034's vector), BASH_ENV
 *    and ENV (start-up files of any shell a program starts) are refused.
 */
#include "config/config.h"

/* In parts: ISO C compilers need not take a string literal longer than
 * 4095 bytes (-Woverlength-strings); config_load_default() joins them. */
const char *const config_default_json_parts[] = {
    "{\n"
    "  \"version\": 1,\n"
    "  \"workspace\": {\"mount\": \"/workspace\"},\n"
    "  \"approvals\": {\"ttl\": 600},\n"
    "  \"env\": {\"deny\": [\"LD_*\", \"GCONV_PATH\", \"BASH_ENV\", \"ENV\"]},\n"
    "  \"programs\": {\n",
    "    \"pytest\": {\n"
    "      \"interpreter\": true,\n"
    "      \"deny_options\": [\"--basetemp\", \"-o\", \"--override-ini\", \"--pastebin\"],\n"
    "      \"value_options\": [\"-c\", \"--rootdir\", \"--confcutdir\", \"--junitxml\","
    " \"--junit-xml\", \"--log-file\", \"--ignore\", \"--deselect\"],\n"
    "      \"data_options\": [\"-k\", \"-m\", \"-p\", \"-r\", \"-W\", \"--pythonwarnings\","
    " \"--maxfail\", \"--tb\", \"--durations\", \"--durations-min\", \"--capture\","
    " \"--import-mode\", \"--ignore-glob\", \"--junit-prefix\", \"--log-level\","
    " \"--log-format\", \"--log-date-format\", \"--log-cli-level\", \"--log-cli-format\","
    " \"--log-cli-date-format\", \"--log-file-level\", \"--log-file-format\","
    " \"--log-file-date-format\", \"--color\", \"--code-highlight\", \"--show-capture\","
    " \"--assert\", \"--verbosity\", \"--doctest-glob\", \"--doctest-report\"],\n"
    "      \"deny_env\": [\"PYTEST_ADDOPTS\", \"PYTEST_PLUGINS\"]\n"
    "    },\n",
    "    \"python3\": {\"interpreter\": true,"
    " \"data_options\": [\"-c\", \"-m\", \"-W\", \"-X\", \"--check-hash-based-pycs\"],"
    " \"advice\": \"python3 runs inside the sandbox; keep files in the workspace\"},\n",
    "    \"git\": {\n"
    "      \"subcommands\": [\"status\", \"diff\", \"log\", \"show\", \"push\"],\n"
    "      \"before_subcommand\": {\n"
    "        \"deny_options\": [\"-c\", \"-C\", \"-p\", \"--paginate\", \"--git-dir\","
    " \"--work-tree\", \"--exec-path\", \"--config-env\"],\n"
    "        \"data_options\": [\"--namespace\"]\n"
    "      },\n"
    "      \"deny_options\": [\"--output\", \"--ext-diff\", \"--show-signature\", \"--signed\","
    " \"--upload-pack\", \"--receive-pack\", \"--exec\", \"--pathspec-from-file\"],\n"
    "      \"value_options\": [\"-O\"],\n"
    "      \"data_options\": [\"-n\", \"--max-count\", \"--skip\", \"--author\", \"--committer\","
    " \"--since\", \"--after\", \"--until\", \"--before\", \"--grep\", \"--date\","
    " \"-S\", \"-G\", \"--diff-filter\","
    " \"--word-diff-regex\", \"--find-object\", \"--anchored\", \"--src-prefix\","
    " \"--dst-prefix\", \"--line-prefix\", \"--push-option\"],\n"
    "      \"deny_env\": [\"GIT_*\", \"PAGER\", \"HOME\", \"XDG_CONFIG_HOME\", \"SSH_ASKPASS\"],\n"
    "      \"approve\": [{\"match\": [\"push\"], \"reason\": \"pushing publishes commits outside"
    " the sandbox\"}],\n"
    "      \"advice\": \"git here is read-only: status, diff, log, show; git push needs"
    " approval\"\n"
    "    },\n",
    "    \"ls\": {\"data_options\": [\"-I\", \"--ignore\", \"--hide\", \"-w\", \"--width\","
    " \"-T\", \"--tabsize\", \"--block-size\", \"--format\", \"--time-style\","
    " \"--quoting-style\", \"--indicator-style\", \"--sort\", \"--time\"]},\n",
    "    \"cat\": {},\n",
    "    \"head\": {\"data_options\": [\"-n\", \"-c\", \"--lines\", \"--bytes\"]},\n",
    "    \"tail\": {\"data_options\": [\"-n\", \"-c\", \"--lines\", \"--bytes\", \"-s\","
    " \"--sleep-interval\", \"--pid\", \"--max-unchanged-stats\"],"
    " \"deny_options\": [\"-f\", \"-F\", \"--follow\"],"
    " \"advice\": \"tail -f never ends; read the file once\"},\n",
    "    \"grep\": {\"paths\": \"skip_first\",\n"
    "      \"value_options\": [\"-f\", \"--file\", \"--exclude-from\"],\n"
    "      \"data_options\": [\"-e\", \"--regexp\", \"-m\", \"--max-count\", \"-A\","
    " \"--after-context\", \"-B\", \"--before-context\", \"-C\", \"--context\", \"--include\","
    " \"--exclude\", \"--exclude-dir\", \"--label\", \"--binary-files\", \"-d\","
    " \"--directories\", \"-D\", \"--devices\", \"--group-separator\"]},\n",
    "    \"find\": {\n"
    "      \"allow_options\": [\"-name\", \"-type\"],\n"
    "      \"deny_options\": [\"-exec\", \"-execdir\", \"-ok\", \"-okdir\", \"-delete\","
    " \"-fprint\", \"-fprint0\", \"-fprintf\", \"-fls\", \"-files0-from\"],\n"
    "      \"data_options\": [\"-name\", \"-type\"],\n"
    "      \"advice\": \"find may only filter with -name and -type; list, then act in separate"
    " calls\"\n"
    "    },\n",
    "    \"wc\": {\"deny_options\": [\"--files0-from\"]},\n",
    "    \"diff\": {\n"
    "      \"value_options\": [\"--from-file\", \"--to-file\", \"-X\", \"--exclude-from\", \"-S\","
    " \"--starting-file\"],\n"
    "      \"data_options\": [\"-C\", \"-U\", \"-W\", \"--width\","
    " \"-F\", \"--show-function-line\", \"--tabsize\", \"-x\", \"--exclude\", \"-I\","
    " \"--ignore-matching-lines\", \"-D\", \"--ifdef\", \"--label\", \"--line-format\","
    " \"--old-line-format\", \"--new-line-format\", \"--unchanged-line-format\","
    " \"--old-group-format\", \"--new-group-format\", \"--changed-group-format\","
    " \"--unchanged-group-format\", \"--horizon-lines\", \"--palette\"]\n"
    "    },\n",
    "    \"sort\": {\n"
    "      \"deny_options\": [\"--compress-program\", \"--files0-from\"],\n"
    "      \"value_options\": [\"-o\", \"--output\", \"-T\", \"--temporary-directory\","
    " \"--random-source\"],\n"
    "      \"data_options\": [\"-k\", \"--key\", \"-t\", \"--field-separator\", \"-S\","
    " \"--buffer-size\", \"--batch-size\", \"--parallel\", \"--sort\"]\n"
    "    },\n",
    "    \"uniq\": {\"data_options\": [\"-f\", \"--skip-fields\", \"-s\", \"--skip-chars\","
    " \"-w\", \"--check-chars\"]}\n",
    "  },\n"
    "  \"tools\": {\n"
    "    \"shell\": {\"class\": \"sandbox\", \"profile\": \"shell_commands\","
    " \"description\": \"one command, no shell\"},\n"
    "    \"python\": {\"class\": \"sandbox\", \"profile\": \"code_execution\"},\n"
    "    \"browser\": {\"class\": \"sandbox\", \"profile\": \"browser_automation\"},\n"
    "    \"read_file\": {\"class\": \"direct\", \"description\": \"read a workspace file"
    " through openat2\"},\n"
    "    \"delete_workspace\": {\"class\": \"blocked\"}\n"
    "  }\n"
    "}\n",
    NULL,
};
