/* cli/session: warden create, exec, ls, stop, start, rm, snapshot.
 *
 * Parse and print over include/warden.h: a session is made with run's
 * sandbox options (cli_sandbox_options) and driven through the
 * wd_session_* calls; commands go through the same policy stage, audit
 * trail and exit statuses as `warden run`. */
#include "cli/cli.h"
#include "cli/policy_cli.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- create ---- */

static const char create_usage[] =
    "usage: warden create [NAME] [OPTIONS]\n"
    "       warden create NAME --from SOURCE@TAG [OPTIONS]\n"
    "\n"
    "Make a session: a sandbox that stays up between commands (warden exec), with\n"
    "its files, home directory and installed packages kept; print its id.\n"
    "\n"
    "Session:\n"
    "  -n, --name NAME          a name to use instead of the id (also the first argument)\n"
    "      --from SOURCE@TAG    start from a snapshot's files (warden snapshot)\n"
    "      --idle-timeout TIME  stop after TIME without a command: 90s, 30m (default),\n"
    "                           2h, or never\n"
    "      --json               print {\"id\": ..., \"name\": ...}\n"
    "  -p, --policy FILE        the policy's workspace.protect paths are kept read-only\n"
    "                           too, and its network object gives the session egress\n"
    "                           (each command's policy is warden exec's --policy)\n"
    "Sandbox: every sandbox option of warden run (see warden run --help):\n"
    "  -w, --workspace DIR, --workspace-mode direct|cow, --disk SIZE, --protect PATH,\n"
    "  --isolation, --memory, --pids, --cpus, --tmp-size, --timeout (each command's\n"
    "  default), --output-limit, --ro-bind, --bind, --setenv,\n"
    "  --pass-env, --allow-port, --reproducible, --best-effort, --net, --allow-host,\n"
    "  --deny-host, --add-host, --allow-range, --tls-intercept, --upstream-ca, -v\n"
    "Secrets: --secret, --inject, --inject-basic, --placeholder as warden run takes\n"
    "  them; the session keeps each secret's source (env:VAR, a file), never its\n"
    "  value, and warden start reads it again (refused when the source is gone)\n"
    "Changed later with warden update (limits, network rules, ports, secrets).\n"
    "\n"
    "Exit status: 0 made and running; 125 bad input or warden failed.\n";

enum {
	OPT_C_NAME = 'n',
	OPT_C_FROM = 1000,
	OPT_C_IDLE,
	OPT_C_HELP,
};

static const struct option create_opts[] = {
    {"name", required_argument, NULL, OPT_C_NAME},
    {"from", required_argument, NULL, OPT_C_FROM},
    {"idle-timeout", required_argument, NULL, OPT_C_IDLE},
    {NULL, 0, NULL, 0},
};

struct create_opts {
	const char *name, *from;
	uint64_t idle_ms;
};

/* "90s", "30m", "2h", "45" (seconds), "never" or "0": none. */
static int
parse_duration(const char *s, uint64_t *ms)
{
	if (!strcmp(s, "never") || !strcmp(s, "0")) {
		*ms = UINT64_MAX;
		return 0;
	}
	size_t n = strlen(s);
	uint64_t unit = 1000;
	char num[32];
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	char last = num[n - 1];
	if (last == 's' || last == 'm' || last == 'h') {
		unit = last == 's' ? 1000 : last == 'm' ? 60000 : 3600000;
		num[n - 1] = '\0';
	}
	uint64_t v;
	if (wd_parse_fixed6(num, &v) < 0 || v == 0)
		return -EINVAL;
	/* v is in millionths of the unit */
	uint64_t r = v / 1000000 * unit + v % 1000000 * unit / 1000000;
	if (r == 0 || r > 365ULL * 86400 * 1000)
		return -ERANGE;
	*ms = r;
	return 0;
}

static int
create_opt(int c, const char *val, void *data)
{
	struct create_opts *o = data;
	switch (c) {
	case OPT_C_NAME:
		o->name = val;
		return 0;
	case OPT_C_FROM:
		o->from = val;
		return 0;
	case OPT_C_IDLE:
		if (parse_duration(val, &o->idle_ms) < 0)
			return cli_fail("create",
					"--idle-timeout: invalid value %s: expected a time such "
					"as 90s, 30m, 2h, or never (at most a year)",
					cli_quote(val));
		return 0;
	}
	return -1;
}

int
cli_create(int argc, char **argv)
{
	struct create_opts o = {0};
	bool verbose = false, json = false;
	const char *policy = NULL;
	int first = 0, rc;
	cli_json_errors(false);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			cli_json_errors(true);
	/* --from without --workspace: the snapshot's workspace */
	bool ws_given = false, from = false;
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		const char *a = argv[i];
		ws_given |= !strncmp(a, "-w", 2) || !strcmp(a, "--workspace") ||
			    !strncmp(a, "--workspace=", 12);
		from |= !strcmp(a, "--from") || !strncmp(a, "--from=", 7);
	}
	wd_spec *spec = wd_spec_new();
	struct cli_sandbox_extra x = {.opts = create_opts,
				      .shortopts = ":w:vn:p:",
				      .fn = create_opt,
				      .data = &o,
				      .usage = create_usage,
				      .default_workspace = !(from && !ws_given),
				      .verbose = &verbose,
				      .json = &json,
				      .policy = &policy};
	rc = cli_sandbox_options("create", argc, argv, &x, spec, &first);
	if (rc) {
		wd_spec_free(spec);
		return rc < 0 ? 0 : rc;
	}
	if (first < argc && !o.name)
		o.name = argv[first++];
	if (first < argc) {
		wd_spec_free(spec);
		return cli_fail("create", "unexpected argument %s (a session has one name)",
				cli_quote(argv[first]));
	}
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char id[17];
	struct wd_session_params p = {.name = o.name, .from = o.from, .idle_timeout_ms = o.idle_ms};
	if (wd_ctx_new(&ctx, &e) < 0) {
		wd_spec_free(spec);
		return cli_fail("create", "%s", e.msg);
	}
	wd_ctx_set_log_handler(ctx, cli_log_handler, NULL, verbose ? WD_LOG_DEBUG : WD_LOG_WARN);
	if (policy && wd_ctx_set_policy_file(ctx, policy, &e) < 0) {
		wd_ctx_free(ctx);
		wd_spec_free(spec);
		return cli_fail("create", "%s", e.msg);
	}
	rc = wd_session_create(ctx, spec, &p, id, &e);
	if (rc < 0) {
		rc = cli_fail("create", "%s", e.msg);
	} else {
		if (json)
			printf("{\"id\":\"%s\",\"name\":%s%s%s}\n", id, o.name ? "\"" : "",
			       o.name ? o.name : "null", o.name ? "\"" : "");
		else
			printf("%s\n", id);
		rc = 0;
	}
	wd_ctx_free(ctx);
	wd_spec_free(spec);
	return rc;
}

/* ---- update ---- */

static const char update_usage[] =
    "usage: warden update SANDBOX [OPTIONS]\n"
    "\n"
    "Change a session's limits, network rules, published ports, protected paths\n"
    "and secrets, running or stopped.  Each value is checked as warden create checks\n"
    "it; on any error nothing changes.  A running session's --memory, --pids and\n"
    "--cpus are rewritten in its cgroup and its network rules swapped in its proxy\n"
    "at once; --timeout and --output-limit apply from its next command; the rest\n"
    "at its next warden start (said for each change).\n"
    "\n"
    "Set (as warden create takes them):\n"
    "  --memory SIZE, --pids N, --cpus N, --tmp-size SIZE, --timeout SECONDS,\n"
    "  --output-limit BYTES, --net none|allow, --tls-intercept, --upstream-ca FILE,\n"
    "  --idle-timeout TIME\n"
    "Add (to what the session has):\n"
    "  --allow-host RULE, --deny-host RULE, --add-host NAME=ADDR, --allow-range CIDR,\n"
    "  --allow-port PORT, --protect PATH, --secret NAME=@FILE|NAME=env:VAR,\n"
    "  --inject 'DEST HEADER=TEMPLATE', --inject-basic 'DEST USER:PASSWORD',\n"
    "  --placeholder VAR[=NAME]\n"
    "Remove:\n"
    "      --remove OPTION=VALUE  take away one of the above, by its option:\n"
    "                           allow-host=RULE, allow-port=PORT, protect=PATH,\n"
    "                           secret=NAME, inject=RULE, placeholder=VAR, ...\n"
    "Output:\n"
    "      --audit FILE         append the change (old and new) to FILE\n"
    "      --json               print {\"changes\": [{\"field\", \"old\", \"new\",\n"
    "                           \"applied\": \"now\" | \"next command\" | \"next start\"}]}\n"
    "  -v, --verbose            log what warden does\n"
    "\n"
    "Exit status: 0 changed (or nothing to change); 125 bad input, no such session,\n"
    "or a value the running session cannot take (nothing changed).\n";

enum {
	OPT_U_REMOVE = 3000,
	OPT_U_IDLE,
	OPT_U_AUDIT,
};

static const struct option update_opts[] = {
    {"remove", required_argument, NULL, OPT_U_REMOVE},
    {"idle-timeout", required_argument, NULL, OPT_U_IDLE},
    {"audit", required_argument, NULL, OPT_U_AUDIT},
    {NULL, 0, NULL, 0},
};

/* run's options update takes: what a session can change */
static const char *const update_only[] = {
    "memory",	   "pids",	 "cpus",      "tmp-size", "timeout",	 "output-limit",
    "net",	   "allow-host", "deny-host", "add-host", "allow-range", "tls-intercept",
    "upstream-ca", "allow-port", "protect",   "secret",	  "inject",	 "inject-basic",
    "placeholder", "json",	 "verbose",   "help",	  NULL};

struct update_opts {
	const char **remove;
	size_t nremove;
	uint64_t idle_ms;
	const char *audit;
};

static int
update_opt(int c, const char *val, void *data)
{
	struct update_opts *o = data;
	switch (c) {
	case OPT_U_REMOVE:
		o->remove = realloc(o->remove, (o->nremove + 2) * sizeof(char *));
		if (!o->remove)
			abort();
		o->remove[o->nremove++] = val;
		o->remove[o->nremove] = NULL;
		return 0;
	case OPT_U_IDLE:
		if (parse_duration(val, &o->idle_ms) < 0)
			return cli_fail("update",
					"--idle-timeout: invalid value %s: expected a time such "
					"as 90s, 30m, 2h, or never (at most a year)",
					cli_quote(val));
		return 0;
	case OPT_U_AUDIT:
		o->audit = val;
		return 0;
	}
	return -1;
}

/* A value of the report for people: sizes in units, lists joined, every
 * string escaped (a rule or path may hold anything). */
static void
print_value(const char *field, json_t *v)
{
	if (json_is_null(v)) {
		fputs(!strcmp(field, "upstream-ca") ? "none" : "default", stdout);
	} else if (json_is_array(v)) {
		size_t i;
		json_t *m;
		if (!json_array_size(v))
			fputs("none", stdout);
		json_array_foreach(v, i, m)
		{
			if (i)
				fputs(", ", stdout);
			print_value(field, m);
		}
	} else if (json_is_string(v)) {
		const char *t = json_string_value(v);
		char *esc = wd_esc_text(t, strlen(t), 0, 300);
		fputs(esc, stdout);
		free(esc);
	} else if (json_is_boolean(v)) {
		fputs(json_is_true(v) ? "on" : "off", stdout);
	} else if (json_is_integer(v) && (!strcmp(field, "memory") || !strcmp(field, "tmp-size") ||
					  !strcmp(field, "output-limit"))) {
		uint64_t b = (uint64_t)json_integer_value(v);
		if (b % (1 << 30) == 0)
			printf("%" PRIu64 "G", b >> 30);
		else if (b % (1 << 20) == 0)
			printf("%" PRIu64 "M", b >> 20);
		else if (b % 1024 == 0)
			printf("%" PRIu64 "K", b >> 10);
		else
			printf("%" PRIu64, b);
	} else if (json_is_real(v)) {
		double d = json_real_value(v);
		if (!strcmp(field, "idle-timeout") && d == 0)
			fputs("never", stdout);
		else
			printf("%g%s", d,
			       !strcmp(field, "timeout") || !strcmp(field, "idle-timeout") ? "s"
											   : "");
	} else {
		printf("%lld", (long long)json_integer_value(v));
	}
}

int
cli_update(int argc, char **argv)
{
	struct update_opts o = {0};
	bool verbose = false, json = false;
	int first = 0, rc;
	cli_json_errors(false);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			cli_json_errors(true);
	wd_spec *spec = wd_spec_new();
	struct cli_sandbox_extra x = {.opts = update_opts,
				      .shortopts = ":v",
				      .fn = update_opt,
				      .data = &o,
				      .usage = update_usage,
				      .default_workspace = false,
				      .verbose = &verbose,
				      .json = &json,
				      .only = update_only};
	rc = cli_sandbox_options("update", argc, argv, &x, spec, &first);
	wd_ctx *ctx = NULL;
	char *report = NULL;
	json_t *r = NULL;
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}
	if (first >= argc) {
		rc =
		    cli_fail("update", "no sandbox given (usage: warden update SANDBOX [OPTIONS])");
		goto out;
	}
	const char *ref = argv[first++];
	if (first < argc) {
		rc = cli_fail("update", "unexpected argument %s (one session at a time)",
			      cli_quote(argv[first]));
		goto out;
	}
	/* as docker update: a change must be asked for */
	int asked = 0;
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		asked += argv[i][0] == '-' && strcmp(argv[i], "--json") && strcmp(argv[i], "-v") &&
			 strcmp(argv[i], "--verbose") && strncmp(argv[i], "--audit", 7);
	if (!asked) {
		rc = cli_fail("update",
			      "nothing to change (warden update --help lists what can be)");
		goto out;
	}
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0) {
		rc = cli_fail("update", "%s", e.msg);
		goto out;
	}
	wd_ctx_set_log_handler(ctx, cli_log_handler, NULL, verbose ? WD_LOG_DEBUG : WD_LOG_WARN);
	if (o.audit && wd_ctx_set_audit_file(ctx, o.audit, &e) < 0) {
		rc = cli_fail("update", "--audit: %s", e.msg);
		goto out;
	}
	struct wd_session_update u = {
	    .set = spec, .remove = (const char *const *)o.remove, .idle_timeout_ms = o.idle_ms};
	if (wd_session_update(ctx, ref, &u, &report, &e) < 0) {
		rc = cli_fail("update", "%s", e.msg);
		goto out;
	}
	if (json) {
		fputs(report, stdout);
		goto out;
	}
	r = json_loads(report, 0, NULL);
	json_t *changes = json_object_get(r, "changes"), *c;
	size_t i;
	if (!json_array_size(changes))
		fprintf(stderr,
			"warden: update: %s: nothing changed (the values given are "
			"the session's already)\n",
			cli_quote(ref));
	json_array_foreach(changes, i, c)
	{
		const char *f = json_string_value(json_object_get(c, "field"));
		const char *when = json_string_value(json_object_get(c, "applied"));
		printf("%s: ", f);
		print_value(f, json_object_get(c, "old"));
		fputs(" -> ", stdout);
		print_value(f, json_object_get(c, "new"));
		if (!strcmp(when, "now"))
			printf(" (applied now)\n");
		else if (!strcmp(when, "next command"))
			printf(" (from the next command)\n");
		else
			printf(" (takes effect at the next warden start %s)\n", ref);
	}
out:
	json_decref(r);
	free(report);
	free(o.remove);
	wd_ctx_free(ctx);
	wd_spec_free(spec);
	return rc;
}

/* ---- exec ---- */

static const char exec_usage[] =
    "usage: warden exec SANDBOX [OPTIONS] -- PROGRAM [ARGS...]\n"
    "       warden exec SANDBOX [OPTIONS] --command STRING\n"
    "\n"
    "Run PROGRAM (never through a shell) in a running session (warden create), by\n"
    "name, id or a unique prefix of its id.  Its files, home and packages persist.\n"
    "\n"
    "Command:\n"
    "  -c, --command STRING     the command as one string, split without a shell\n"
    "      --cwd DIR            working directory, relative to the workspace\n"
    "      --timeout SECONDS    wall-clock limit for this command (default: the session's)\n"
    "      --output-limit BYTES bytes kept per stream, half head half tail\n"
    "      --setenv NAME=VALUE  add to this command's environment\n"
    "      --pass-env NAME      pass warden's own NAME into this command\n"
    "      --stdin              pass warden's stdin (default: /dev/null)\n"
    "  -d, --detach             start it in the background (a dev server): it lives\n"
    "                           until the session stops; its output goes to\n"
    "                           ~/.warden/detached-N.log in the sandbox\n"
    "Policy (all but --audit turn the policy stage on; --audit only records):\n"
    "  -p, --policy FILE        policy document, or preset:coding|python|node\n"
    "                           (default: the built-in policy)\n"
    "      --tool NAME          the tool this command is for: its route and profile\n"
    "      --audit FILE         append the command's start or decision and result to\n"
    "                           FILE (records only: --policy judges an explicit argv)\n"
    "      --approve=tty        ask at the terminal when the policy pauses\n"
    "Output:\n"
    "      --json               print one JSON object with the result (every outcome)\n"
    "  -v, --verbose            log what warden does\n"
    "\n"
    "Exit status: as warden run: the command's own; 128+N if killed by signal N; 123\n"
    "paused; 124 timed out; 125 warden failed (bad input, no such session, not\n"
    "running); 126 refused or cannot execute; 127 not found.\n";

enum {
	OPT_X_CWD = 2000,
	OPT_X_TIMEOUT,
	OPT_X_OUTPUT,
	OPT_X_SETENV,
	OPT_X_PASSENV,
	OPT_X_STDIN,
	OPT_X_TOOL,
	OPT_X_AUDIT,
	OPT_X_APPROVE,
	OPT_X_JSON,
	OPT_X_HELP,
};

static const struct option exec_opts[] = {
    {"command", required_argument, NULL, 'c'},
    {"cwd", required_argument, NULL, OPT_X_CWD},
    {"timeout", required_argument, NULL, OPT_X_TIMEOUT},
    {"output-limit", required_argument, NULL, OPT_X_OUTPUT},
    {"setenv", required_argument, NULL, OPT_X_SETENV},
    {"pass-env", required_argument, NULL, OPT_X_PASSENV},
    {"stdin", no_argument, NULL, OPT_X_STDIN},
    {"detach", no_argument, NULL, 'd'},
    {"policy", required_argument, NULL, 'p'},
    {"tool", required_argument, NULL, OPT_X_TOOL},
    {"audit", required_argument, NULL, OPT_X_AUDIT},
    {"approve", required_argument, NULL, OPT_X_APPROVE},
    {"json", no_argument, NULL, OPT_X_JSON},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, OPT_X_HELP},
    {NULL, 0, NULL, 0},
};

struct exec_opts {
	const char *command, *tool, *policy, *audit, *cwd;
	bool json, verbose, stdin_, detach, approve_tty;
	uint64_t timeout_ms, output;
};

static int
exec_bad(const char *opt, const char *val, const char *why)
{
	return cli_fail("exec", "--%s: invalid value %s: %s", opt, cli_quote(val), why);
}

static int
exec_opt(int c, const char *val, struct exec_opts *o, wd_cmd *cmd)
{
	struct wd_err e = {0};
	uint64_t v;
	int rc;
	switch (c) {
	case 'c':
		o->command = val;
		return 0;
	case OPT_X_CWD:
		if (wd_cmd_set_cwd(cmd, val, &e) < 0)
			return exec_bad("cwd", val, e.msg);
		o->cwd = val;
		return 0;
	case OPT_X_TIMEOUT:
		rc = wd_parse_fixed6(val, &v);
		if (rc < 0 || v < 1000 || v % 1000 || v > 86400ULL * 1000000)
			return exec_bad("timeout", val,
					"expected seconds such as 30 or 0.5 (1 ms to a day)");
		o->timeout_ms = v / 1000;
		return 0;
	case OPT_X_OUTPUT:
		rc = wd_parse_size(val, &v);
		if (rc < 0 || v < 64 || v > (16ULL << 20))
			return exec_bad("output-limit", val, "expected a size from 64 to 16M");
		o->output = v;
		return 0;
	case OPT_X_SETENV:
	case OPT_X_PASSENV: {
		const char *eq = strchr(val, '=');
		const char *name = c == OPT_X_SETENV ? "setenv" : "pass-env";
		if (c == OPT_X_SETENV && (!eq || eq == val))
			return exec_bad(name, val, "expected NAME=VALUE");
		if (c == OPT_X_PASSENV && (eq || !getenv(val)))
			return exec_bad(name, val,
					eq ? "expected a variable name"
					   : "not set in warden's environment");
		char *n = c == OPT_X_SETENV ? strndup(val, (size_t)(eq - val)) : strdup(val);
		rc = wd_cmd_setenv(cmd, n, c == OPT_X_SETENV ? eq + 1 : getenv(val), &e);
		free(n);
		return rc < 0 ? exec_bad(name, val, e.msg) : 0;
	}
	case OPT_X_STDIN:
		o->stdin_ = true;
		return 0;
	case 'd':
		o->detach = true;
		return 0;
	case 'p':
		o->policy = val;
		return 0;
	case OPT_X_TOOL:
		o->tool = val;
		return 0;
	case OPT_X_AUDIT:
		o->audit = val;
		return 0;
	case OPT_X_APPROVE:
		if (strcmp(val, "tty"))
			return exec_bad("approve", val, "expected --approve=tty");
		o->approve_tty = true;
		return 0;
	case OPT_X_JSON:
		o->json = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	}
	return -1;
}

static wd_ctx *signal_ctx;

static void
on_signal(int sig)
{
	wd_ctx_cancel(signal_ctx, sig);
}

static void
print_refusal(const wd_result *r)
{
	const wd_decision *d = wd_result_decision(r);
	if (wd_result_outcome(r) == WD_OUTCOME_PAUSED && d) {
		fprintf(stderr, "warden: exec: paused (%s): ", wd_decision_rule(d));
		cli_policy_text(stderr, wd_decision_reason(d));
		fprintf(stderr, "\nwarden: approve with: warden approve %s\n",
			wd_decision_approval_id(d));
		return;
	}
	fprintf(stderr, "warden: exec: refused by the policy%s%s%s: ", d ? " (" : "",
		d ? wd_decision_rule(d) : "", d ? ")" : "");
	cli_policy_text(stderr, wd_result_refusal(r) ? wd_result_refusal(r) : "denied");
	fputc('\n', stderr);
	if (d && wd_decision_advice(d)[0])
		fprintf(stderr, "warden: advice: %s\n", wd_decision_advice(d));
}

static int
exec_run(wd_ctx *ctx, const char *ref, wd_cmd *cmd, struct exec_opts *o, const char *prog)
{
	struct wd_err e = {0};
	if (o->detach) {
		unsigned seq = 0;
		if (wd_session_exec_detached(ctx, ref, cmd, &seq, &e) < 0)
			return cli_fail("exec", "%s", e.msg);
		if (o->json)
			printf("{\"status\":0,\"detached\":%u,\"log\":\"~/.warden/"
			       "detached-%u.log\"}\n",
			       seq, seq);
		else
			fprintf(
			    stderr,
			    "warden: exec: detached as %u (output: ~/.warden/detached-%u.log)\n",
			    seq, seq);
		return 0;
	}
	signal_ctx = ctx;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	wd_result *r = NULL;
	fflush(stdout);
	if (wd_session_exec(ctx, ref, cmd, &r, &e) < 0)
		return cli_fail("exec", "%s", e.msg);
	if (o->json) {
		char *j = wd_result_json(r);
		puts(j);
		free(j);
	}
	if (wd_result_outcome(r) != WD_OUTCOME_RAN)
		print_refusal(r);
	else if (wd_result_exec_errno(r) && !o->json)
		cli_exec_failed("exec", r, prog, o->cwd);
	if (wd_result_outcome(r) == WD_OUTCOME_RAN && !o->json)
		cli_net_refusals("exec", r);
	if (wd_result_timed_out(r) && !o->json)
		fprintf(stderr, "warden: exec: timed out; the command was killed\n");
	if (o->audit && !o->json)
		cli_audit_note("exec", r, o->audit);
	int st = wd_result_status(r);
	wd_result_free(r);
	return st;
}

int
cli_exec(int argc, char **argv)
{
	struct exec_opts o = {0};
	wd_cmd *cmd = wd_cmd_new();
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	int c, rc = 0;
	cli_opts_begin(argc, argv);
	/* permuting: SANDBOX may come before or after the options; the
	 * program after -- is never read as options */
	while ((c = getopt_long(argc, argv, ":c:dp:v", exec_opts, NULL)) != -1) {
		if (c == OPT_X_HELP) {
			fputs(exec_usage, stdout);
			goto out;
		}
		if (c == ':' || c == '?') {
			rc = cli_bad_option("exec", argc, argv, exec_opts);
			goto out;
		}
		if ((rc = exec_opt(c, optarg, &o, cmd)))
			goto out;
	}
	if (optind >= argc) {
		rc = cli_fail("exec", "no sandbox given (usage: warden exec SANDBOX [OPTIONS] -- "
				      "PROGRAM [ARGS...])");
		goto out;
	}
	const char *ref = argv[optind++];
	bool program = optind < argc;
	if (o.command && program) {
		rc = cli_fail("exec", "--command and a program after -- are exclusive");
		goto out;
	}
	if (!o.command && !program) {
		rc = cli_fail("exec", "no program given (usage: warden exec SANDBOX [OPTIONS] -- "
				      "PROGRAM [ARGS...] | --command STRING)");
		goto out;
	}
	if (o.command ? wd_cmd_set_command(cmd, o.command, &e) < 0
		      : wd_cmd_set_argv(cmd, argc - optind, (const char *const *)(argv + optind),
					&e) < 0) {
		rc = cli_fail("exec", "%s", e.msg);
		goto out;
	}
	if (o.tool && wd_cmd_set_tool(cmd, o.tool, &e) < 0) {
		rc = cli_fail("exec", "--tool: %s", e.msg);
		goto out;
	}
	/* --audit records; it does not judge (an explicit argv stays the
	 * caller's own): the stage is on for --policy and --approve=tty */
	wd_cmd_set_policy(cmd, o.policy || o.approve_tty);
	wd_cmd_set_interactive(cmd, o.approve_tty);
	wd_cmd_set_timeout(cmd, o.timeout_ms);
	wd_cmd_set_output_limit(cmd, o.output);
	if (o.stdin_)
		wd_cmd_set_stdin(cmd, 0);
	if (!o.json)
		wd_cmd_set_stream(cmd, 1, 2);
	if (wd_ctx_new(&ctx, &e) < 0) {
		rc = cli_fail("exec", "%s", e.msg);
		goto out;
	}
	wd_ctx_set_log_handler(ctx, cli_log_handler, NULL, o.verbose ? WD_LOG_DEBUG : WD_LOG_WARN);
	if (o.policy && wd_ctx_set_policy_file(ctx, o.policy, &e) < 0) {
		rc = cli_fail("exec", "%s", e.msg);
		goto out;
	}
	if (o.audit && wd_ctx_set_audit_file(ctx, o.audit, &e) < 0) {
		rc = cli_fail("exec", "--audit: %s", e.msg);
		goto out;
	}
	if (o.approve_tty) {
		cli_ask_tty_cwd(o.cwd);
		wd_ctx_set_approver(ctx, cli_ask_tty, NULL);
	}
	rc = exec_run(ctx, ref, cmd, &o, program ? argv[optind] : o.command);
out:
	wd_ctx_free(ctx);
	wd_cmd_free(cmd);
	return rc;
}

/* ---- ls, stop, start, rm, snapshot ---- */

/* The subcommands that take sandboxes and a --json / --help only. */
static int
simple_args(const char *sub, const char *usage, int argc, char **argv, bool *json, int *first)
{
	cli_json_errors(false);
	*first = argc;
	bool end = false;
	for (int i = 1; i < argc; i++) {
		if (!end && !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return -1;
		}
		if (!end && !strcmp(argv[i], "--json")) {
			*json = true;
			cli_json_errors(true);
		} else if (!end && !strcmp(argv[i], "--")) {
			end = true;
		} else if (!end && argv[i][0] == '-' && argv[i][1]) {
			return cli_fail(sub, "unknown option %s (warden %s --help)",
					cli_quote(argv[i]), sub);
		} else if (*first == argc) {
			*first = i;
		}
	}
	return 0;
}

int
cli_ls(int argc, char **argv)
{
	static const char usage[] = "usage: warden ls [--json]\n\n"
				    "List the sessions of the state directory: id, name, state\n"
				    "(running or stopped), workspace mode, age, workspace.\n";
	bool json = false;
	int first, rc = simple_args("ls", usage, argc, argv, &json, &first);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (first < argc)
		return cli_fail("ls", "unexpected argument %s", cli_quote(argv[first]));
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char *list = NULL;
	if (wd_ctx_new(&ctx, &e) < 0 || wd_session_list(ctx, json, &list, &e) < 0) {
		wd_ctx_free(ctx);
		return cli_fail("ls", "%s", e.msg);
	}
	wd_ctx_free(ctx);
	fputs(list, stdout);
	free(list);
	return 0;
}

static int
each(const char *sub, const char *usage, int argc, char **argv,
     int (*fn)(wd_ctx *, const char *, struct wd_err *), const char *done)
{
	bool json = false;
	int first, rc = simple_args(sub, usage, argc, argv, &json, &first);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (first >= argc)
		return cli_fail(sub, "no sandbox given (usage: warden %s SANDBOX...)", sub);
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0)
		return cli_fail(sub, "%s", e.msg);
	for (int i = first; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "--"))
			continue;
		if (fn(ctx, argv[i], &e) < 0) {
			rc = cli_fail(sub, "%s", e.msg);
			continue;
		}
		if (json)
			printf("{\"sandbox\":\"%s\",\"%s\":true}\n", argv[i], done);
	}
	wd_ctx_free(ctx);
	return rc;
}

int
cli_stop(int argc, char **argv)
{
	static const char usage[] =
	    "usage: warden stop SANDBOX... [--json]\n\n"
	    "End a session's processes (detached ones too) and its jail; keep its files,\n"
	    "home and packages (warden start brings it back).\n";
	return each("stop", usage, argc, argv, wd_session_stop, "stopped");
}

int
cli_start(int argc, char **argv)
{
	static const char usage[] = "usage: warden start SANDBOX... [--json]\n\n"
				    "Build a new jail over a stopped session's files.\n";
	return each("start", usage, argc, argv, wd_session_start, "started");
}

int
cli_rm(int argc, char **argv)
{
	static const char usage[] =
	    "usage: warden rm SANDBOX... [--json]\n\n"
	    "Stop a session if it runs, then remove its state: files, disk, snapshots.\n"
	    "Changes not applied are lost.\n";
	return each("rm", usage, argc, argv, wd_session_remove, "removed");
}

static int
snapshot_ls(int argc, char **argv)
{
	static const char usage[] =
	    "usage: warden snapshot ls [SANDBOX] [--json]\n\n"
	    "List the snapshots of SANDBOX (default: of every session): NAME@TAG, age,\n"
	    "the disk space it takes.\n";
	bool json = false;
	int first, rc = simple_args("snapshot ls", usage, argc, argv, &json, &first);
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *ref = NULL;
	for (int i = first; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "--"))
			continue;
		if (ref)
			return cli_fail("snapshot ls", "unexpected argument %s",
					cli_quote(argv[i]));
		ref = argv[i];
	}
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char *list = NULL;
	if (wd_ctx_new(&ctx, &e) < 0 || wd_session_snapshot_list(ctx, ref, json, &list, &e) < 0) {
		wd_ctx_free(ctx);
		return cli_fail("snapshot ls", "%s", e.msg);
	}
	wd_ctx_free(ctx);
	fputs(list, stdout);
	free(list);
	return 0;
}

static int
snapshot_rm(int argc, char **argv)
{
	static const char usage[] =
	    "usage: warden snapshot rm SANDBOX@TAG... [--json]\n\n"
	    "Remove snapshots.  A session created --from one keeps its own copy of the\n"
	    "files: it does not depend on the snapshot.\n";
	bool json = false;
	int first, rc = simple_args("snapshot rm", usage, argc, argv, &json, &first);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (first >= argc)
		return cli_fail("snapshot rm", "no snapshot given (usage: warden snapshot rm "
					       "SANDBOX@TAG...)");
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0)
		return cli_fail("snapshot rm", "%s", e.msg);
	for (int i = first; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "--"))
			continue;
		const char *at = strrchr(argv[i], '@');
		if (!at || at == argv[i] || !at[1]) {
			rc =
			    cli_fail("snapshot rm", "%s: expected SANDBOX@TAG", cli_quote(argv[i]));
			continue;
		}
		char *ref = strndup(argv[i], (size_t)(at - argv[i]));
		if (wd_session_snapshot_remove(ctx, ref, at + 1, &e) < 0)
			rc = cli_fail("snapshot rm", "%s", e.msg);
		else if (json) {
			printf("{\"snapshot\":");
			cli_json_string(stdout, argv[i]);
			printf(",\"removed\":true}\n");
		}
		free(ref);
	}
	wd_ctx_free(ctx);
	return rc;
}

int
cli_snapshot(int argc, char **argv)
{
	static const char usage[] =
	    "usage: warden snapshot SANDBOX TAG [--json]\n"
	    "       warden snapshot ls [SANDBOX] [--json]\n"
	    "       warden snapshot rm SANDBOX@TAG... [--json]\n\n"
	    "Keep a copy of a session's files as SANDBOX@TAG, for warden create NEW --from\n"
	    "SANDBOX@TAG.  A running session's disk is frozen for the copy.  ls lists the\n"
	    "snapshots, rm removes them (a session named ls or rm: give its id).\n";
	if (argc > 1 && !strcmp(argv[1], "ls"))
		return snapshot_ls(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "rm"))
		return snapshot_rm(argc - 1, argv + 1);
	bool json = false;
	int first, rc = simple_args("snapshot", usage, argc, argv, &json, &first);
	if (rc)
		return rc < 0 ? 0 : rc;
	const char *args[2] = {NULL, NULL};
	int n = 0;
	for (int i = first; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "--"))
			continue;
		if (n == 2)
			return cli_fail("snapshot", "unexpected argument %s", cli_quote(argv[i]));
		args[n++] = argv[i];
	}
	if (n != 2)
		return cli_fail("snapshot", "expected SANDBOX TAG (usage: warden snapshot SANDBOX "
					    "TAG)");
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0 || wd_session_snapshot(ctx, args[0], args[1], &e) < 0) {
		wd_ctx_free(ctx);
		return cli_fail("snapshot", "%s", e.msg);
	}
	wd_ctx_free(ctx);
	if (json)
		printf("{\"snapshot\":\"%s@%s\"}\n", args[0], args[1]);
	else
		printf("%s@%s\n", args[0], args[1]);
	return 0;
}
