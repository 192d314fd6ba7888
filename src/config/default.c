/* default.c - the built-in policy, used when no --policy is given.
 *
 * A conservative allowlist for coding work (issue 3): run the tests, read
 * files, inspect git history.  Nothing that writes outside the workspace,
 * nothing that reaches the network without a human: `git push` pauses.
 * It is JSON and goes through the same validator as a user's file, so the
 * built-in and a copy of `warden policy show` behave identically.
 *
 * Why each refusal is there:
 *  - git -c/-C/--git-dir/--work-tree/--exec-path/--config-env: change which
 *    repository or which configuration git uses (-c core.pager=... or
 *    core.fsmonitor=... runs arbitrary programs);
 *    --upload-pack/--receive-pack name programs to execute.
 *  - find -exec/-execdir/-ok/-okdir run programs, -delete deletes, -fprint*
 *    and -fls write files; beyond that only -name and -type are allowed.
 *  - python3 is an interpreter: allowing it allows arbitrary code inside the
 *    jail (the jail, not the policy, bounds what that code can do).
 */
#include "config/config.h"

const char config_default_json[] =
    "{\n"
    "  \"version\": 1,\n"
    "  \"workspace\": {\"mount\": \"/workspace\"},\n"
    "  \"approvals\": {\"ttl\": 600},\n"
    "  \"programs\": {\n"
    "    \"pytest\": {\"value_options\": [\"-k\", \"-m\", \"-p\", \"-c\", \"--rootdir\","
    " \"--maxfail\", \"--tb\"]},\n"
    "    \"python3\": {\"interpreter\": true, \"value_options\": [\"-m\", \"-c\", \"-W\", \"-X\"],"
    " \"advice\": \"python3 runs inside the sandbox; keep files in the workspace\"},\n"
    "    \"git\": {\n"
    "      \"subcommands\": [\"status\", \"diff\", \"log\", \"show\", \"push\"],\n"
    "      \"deny_options\": [\"-c\", \"-C\", \"--git-dir\", \"--work-tree\", \"--exec-path\","
    " \"--config-env\", \"--upload-pack\", \"--receive-pack\", \"--exec\", \"--output\"],\n"
    "      \"value_options\": [\"-n\", \"--max-count\", \"--author\", \"--since\", \"--until\","
    " \"--grep\"],\n"
    "      \"approve\": [{\"match\": [\"push\"], \"reason\": \"pushing publishes commits outside"
    " the sandbox\"}],\n"
    "      \"advice\": \"git here is read-only: status, diff, log, show; git push needs"
    " approval\"\n"
    "    },\n"
    "    \"ls\": {},\n"
    "    \"cat\": {},\n"
    "    \"head\": {\"value_options\": [\"-n\", \"-c\", \"--lines\", \"--bytes\"]},\n"
    "    \"tail\": {\"value_options\": [\"-n\", \"-c\", \"--lines\", \"--bytes\"],"
    " \"deny_options\": [\"-f\", \"-F\", \"--follow\"],"
    " \"advice\": \"tail -f never ends; read the file once\"},\n"
    "    \"grep\": {\"value_options\": [\"-e\", \"-f\", \"-m\", \"-A\", \"-B\", \"-C\","
    " \"--regexp\", \"--file\", \"--max-count\", \"--include\", \"--exclude\"]},\n"
    "    \"find\": {\n"
    "      \"allow_options\": [\"-name\", \"-type\"],\n"
    "      \"deny_options\": [\"-exec\", \"-execdir\", \"-ok\", \"-okdir\", \"-delete\","
    " \"-fprint\", \"-fprint0\", \"-fprintf\", \"-fls\"],\n"
    "      \"value_options\": [\"-name\", \"-type\"],\n"
    "      \"advice\": \"find may only filter with -name and -type; list, then act in separate"
    " calls\"\n"
    "    },\n"
    "    \"wc\": {},\n"
    "    \"diff\": {},\n"
    "    \"sort\": {\"value_options\": [\"-k\", \"-t\", \"-o\", \"--output\"]},\n"
    "    \"uniq\": {}\n"
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
    "}\n";
