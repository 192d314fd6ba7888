/* cli/run: warden run [OPTIONS] (-- PROGRAM [ARGS...] | --command STRING)
 *
 * Parse and print: the options become a wd_spec (the sandbox), a wd_cmd
 * (the command) and context settings (policy, audit, approver); the
 * library's pipeline (wd_ctx_run) decides, runs and records. */
#include "cli/cli.h"
#include "cli/policy_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: warden run [OPTIONS] -- PROGRAM [ARGS...]\n"
    "       warden run [OPTIONS] --command STRING\n"
    "\n"
    "Run PROGRAM (never through a shell) in a fresh sandbox destroyed when it ends.\n"
    "\n"
    "Sandbox:\n"
    "  -w, --workspace DIR      directory bound read-write at /workspace (default: .)\n"
    "      --workspace-mode MODE  direct (default: writes land in DIR) or cow (an overlay:\n"
    "                           writes land in warden's state directory; container)\n"
    "      --disk SIZE          bound of what a cow sandbox writes: its upper layer, /tmp\n"
    "                           and home share one disk of SIZE (default 1G)\n"
    "      --protect PATH       keep PATH (relative to DIR) read-only inside, like .git,\n"
    "                           .gitmodules, .envrc, .vscode and .idea\n"
    "      --image NAME         run in image NAME's /usr and /etc, not the host's\n"
    "                           (warden image build; container and gvisor levels)\n"
    "      --isolation LEVEL    container (default), process, or gvisor (gVisor's\n"
    "                           user-space kernel through runsc; root only)\n"
    "      --memory SIZE        memory limit, no swap (default 512M)\n"
    "      --pids N             process limit (default 128)\n"
    "      --cpus N             CPU limit, fractions allowed (default 1.0)\n"
    "      --tmp-size SIZE      size of /tmp, and of HOME (default 128M)\n"
    "      --timeout SECONDS    wall-clock limit; the sandbox is killed (default 30)\n"
    "      --output-limit BYTES bytes kept per stream, half head half tail (default 64K)\n"
    "      --ro-bind SRC[:DST]  bind host SRC read-only at DST (default: same path)\n"
    "      --bind SRC[:DST]     bind host SRC read-write at DST\n"
    "      --setenv NAME=VALUE  add to the command's environment\n"
    "      --pass-env NAME      pass warden's own NAME into the sandbox\n"
    "      --allow-port PORT    allow TCP bind/connect on PORT (loopback servers)\n"
    "      --reproducible       SOURCE_DATE_EPOCH, PYTHONHASHSEED=0, LC_ALL, TZ fixed\n"
    "      --best-effort        run even where the limits cannot be enforced\n";
/* the rest (one string would pass C99's 4095-byte limit for literals) */
static const char usage_text2[] =
    "Network:\n"
    "      --net MODE           none (default: loopback only) or allow (egress only\n"
    "                           through warden's proxy, by the rules below)\n"
    "      --allow-host RULE    HOST[:PORT][/PATH][=METHOD,...], HOST exact or *.suffix\n"
    "      --deny-host RULE     HOST[:PORT]; wins over any allow rule\n"
    "      --add-host NAME=ADDR a static name, like curl --resolve and docker --add-host\n"
    "      --allow-range CIDR   destinations in CIDR are not refused for being loopback\n"
    "                           or private (admits no host by itself)\n"
    "      --tls-intercept      check each request inside HTTPS tunnels (a per-sandbox CA)\n"
    "      --upstream-ca FILE   CA bundle to verify real servers with (interception)\n"
    "Secrets (never inside the sandbox; warden's proxy adds them to requests):\n"
    "      --secret NAME=@FILE  read secret NAME from FILE (or NAME=env:VAR from\n"
    "                           warden's environment); at most 4 KiB\n"
    "      --inject 'DEST HEADER=TEMPLATE'\n"
    "                           on requests to DEST ([http://]HOST[:PORT][/PATH]) set\n"
    "                           HEADER to TEMPLATE, {NAME} being secret NAME's value\n"
    "                           (HTTPS needs --tls-intercept; http:// is plain HTTP)\n"
    "      --inject-basic 'DEST USER:PASSWORD'\n"
    "                           the same as HTTP basic auth (Authorization: Basic)\n"
    "      --placeholder VAR[=NAME]\n"
    "                           VAR in the sandbox holds a placeholder for secret NAME\n"
    "                           (default: VAR), replaced by the proxy, refused elsewhere\n"
    "Policy (all but --audit turn the policy stage on; --audit only records):\n"
    "  -p, --policy FILE        policy document, or preset:coding|python|node\n"
    "                           (default: the built-in policy)\n"
    "  -c, --command STRING     the command as one string, split without a shell\n"
    "      --tool NAME          the tool this command is for: its route and profile\n"
    "      --audit FILE         append the command's start or decision, its network\n"
    "                           requests and its result to FILE (records only: the\n"
    "                           policy judges an explicit argv with --policy)\n"
    "      --approve=tty        ask at the terminal when the policy pauses\n"
    "      --cwd DIR            working directory, relative to the workspace\n"
    "Output:\n"
    "      --stdin              pass warden's stdin (default: /dev/null)\n"
    "      --json               print one JSON object with the result (every outcome)\n"
    "      --print-plan         print what the sandbox would be, run nothing\n"
    "  -v, --verbose            log each step\n"
    "\n"
    "Exit status: the command's own; 128+N if killed by signal N; 123 paused for an\n"
    "approval; 124 timed out; 125 warden failed (bad input included); 126 refused\n"
    "by the policy or cannot execute; 127 not found.\n";

/* The subcommand whose options these are: run, or create (which takes
 * run's sandbox options, cli_sandbox_options). */
static const char *sub_name = "run";
/* update: the options are changes to a session's spec, judged merged */
static bool merging;

enum {
	OPT_ISOLATION = 256,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPUS,
	OPT_TMP_SIZE,
	OPT_TIMEOUT,
	OPT_OUTPUT_LIMIT,
	OPT_RO_BIND,
	OPT_BIND,
	OPT_SETENV,
	OPT_PASS_ENV,
	OPT_ALLOW_PORT,
	OPT_STDIN,
	OPT_JSON,
	OPT_HELP,
	OPT_NET,
	OPT_ALLOW_HOST,
	OPT_DENY_HOST,
	OPT_ADD_HOST,
	OPT_TLS_INTERCEPT,
	OPT_UPSTREAM_CA,
	OPT_TOOL,
	OPT_AUDIT,
	OPT_APPROVE,
	OPT_PRINT_PLAN,
	OPT_BEST_EFFORT,
	OPT_REPRODUCIBLE,
	OPT_ALLOW_RANGE,
	OPT_WORKSPACE_MODE,
	OPT_DISK,
	OPT_PROTECT,
	OPT_IMAGE,
	OPT_SECRET,
	OPT_INJECT,
	OPT_INJECT_BASIC,
	OPT_PLACEHOLDER,
	OPT_CWD,
};

static const struct option long_opts[] = {
    {"workspace", required_argument, NULL, 'w'},
    {"isolation", required_argument, NULL, OPT_ISOLATION},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"tmp-size", required_argument, NULL, OPT_TMP_SIZE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
    {"ro-bind", required_argument, NULL, OPT_RO_BIND},
    {"bind", required_argument, NULL, OPT_BIND},
    {"setenv", required_argument, NULL, OPT_SETENV},
    {"pass-env", required_argument, NULL, OPT_PASS_ENV},
    {"allow-port", required_argument, NULL, OPT_ALLOW_PORT},
    {"stdin", no_argument, NULL, OPT_STDIN},
    {"json", no_argument, NULL, OPT_JSON},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, OPT_HELP},
    {"net", required_argument, NULL, OPT_NET},
    {"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
    {"deny-host", required_argument, NULL, OPT_DENY_HOST},
    {"add-host", required_argument, NULL, OPT_ADD_HOST},
    {"tls-intercept", no_argument, NULL, OPT_TLS_INTERCEPT},
    {"upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA},
    {"policy", required_argument, NULL, 'p'},
    {"command", required_argument, NULL, 'c'},
    {"tool", required_argument, NULL, OPT_TOOL},
    {"audit", required_argument, NULL, OPT_AUDIT},
    {"approve", required_argument, NULL, OPT_APPROVE},
    {"print-plan", no_argument, NULL, OPT_PRINT_PLAN},
    {"best-effort", no_argument, NULL, OPT_BEST_EFFORT},
    {"reproducible", no_argument, NULL, OPT_REPRODUCIBLE},
    {"allow-range", required_argument, NULL, OPT_ALLOW_RANGE},
    {"workspace-mode", required_argument, NULL, OPT_WORKSPACE_MODE},
    {"disk", required_argument, NULL, OPT_DISK},
    {"protect", required_argument, NULL, OPT_PROTECT},
    {"image", required_argument, NULL, OPT_IMAGE},
    {"secret", required_argument, NULL, OPT_SECRET},
    {"inject", required_argument, NULL, OPT_INJECT},
    {"inject-basic", required_argument, NULL, OPT_INJECT_BASIC},
    {"placeholder", required_argument, NULL, OPT_PLACEHOLDER},
    {"cwd", required_argument, NULL, OPT_CWD},
    {NULL, 0, NULL, 0},
};

struct run_opts {
	bool json, verbose, pass_stdin, print_plan;
	enum wd_net_mode net;
	bool net_given, net_rules, tls, workspace_given, isolation_given;
	const char *upstream_ca;
	struct wd_limits lim;
	enum wd_isolation isolation;
	/* the policy stage */
	const char *policy, *command, *tool, *audit, *cwd;
	bool approve_tty;
	bool disk_given, cow; /* --disk, --workspace-mode cow */
	/* --placeholder, applied once every --secret is declared */
	const char **placeholders;
	size_t nplaceholders;
};

static int
bad_value(const char *opt, const char *val, const char *why)
{
	return cli_fail(sub_name, "--%s: invalid value %s: %s", opt, cli_quote(val), why);
}

static int
size_opt(const char *opt, const char *val, uint64_t min, uint64_t *out)
{
	int rc = wd_parse_size(val, out);
	if (rc == -ERANGE)
		return bad_value(opt, val, "too large");
	if (rc < 0)
		return bad_value(opt, val,
				 "expected a size such as 512M, 1G, 64KiB or 65536 (binary units; "
				 "\"MB\" is ambiguous)");
	if (*out < min) {
		/* the floor in the unit the user would type (every floor here is
		 * a whole number of KiB or MiB) */
		char why[64];
		if (min % (1 << 20) == 0)
			snprintf(why, sizeof(why), "must be at least %" PRIu64 "M", min >> 20);
		else if (min % 1024 == 0)
			snprintf(why, sizeof(why), "must be at least %" PRIu64 "K", min >> 10);
		else
			snprintf(why, sizeof(why), "must be at least %" PRIu64 " bytes", min);
		return bad_value(opt, val, why);
	}
	return 0;
}

static int
bind_opt(wd_spec *spec, const char *val, bool rw)
{
	struct wd_err e = {0};
	const char *name = rw ? "bind" : "ro-bind";
	char *copy = strdup(val);
	if (!copy)
		abort();
	char *colon = strchr(copy, ':');
	const char *dst = NULL;
	if (colon) {
		*colon = '\0';
		dst = colon + 1;
	}
	int rc = 0;
	if (!copy[0] || (dst && !dst[0]) || (dst && strchr(dst, ':')))
		rc = bad_value(name, val, "expected SRC[:DST] (paths without ':')");
	else if (wd_spec_add_bind(spec, copy, dst, rw, &e) < 0)
		rc = cli_fail(sub_name, "%s", e.msg);
	free(copy);
	return rc;
}

static int
setenv_opt(wd_spec *spec, const char *name, const char *optval)
{
	struct wd_err e = {0};
	const char *eq = strchr(optval, '=');
	if (!eq || eq == optval)
		return bad_value(name, optval, "expected NAME=VALUE");
	char *n = strndup(optval, (size_t)(eq - optval));
	int rc = wd_spec_setenv(spec, n, eq + 1, &e);
	free(n);
	return rc < 0 ? bad_value(name, optval, e.msg) : 0;
}

static int
limit_opt(int c, const char *name, const char *val, struct run_opts *o)
{
	uint64_t v;
	int rc;
	switch (c) {
	case OPT_MEMORY:
		return size_opt(name, val, 4 << 20, &o->lim.memory_bytes);
	case OPT_TMP_SIZE:
		return size_opt(name, val, 64 << 10, &o->lim.tmp_bytes);
	case OPT_OUTPUT_LIMIT:
		if ((rc = size_opt(name, val, 64, &o->lim.output_limit)))
			return rc;
		/* warden keeps up to this per stream, and --json copies and
		 * escapes it: bounded so warden itself stays small */
		if (o->lim.output_limit > (16ULL << 20))
			return bad_value(name, val, "at most 16M");
		return 0;
	case OPT_PIDS:
		if (wd_parse_u64(val, &v) < 0 || v < 1 || v > 4194304)
			return bad_value(name, val, "expected a whole number from 1 to 4194304");
		o->lim.pids = v;
		return 0;
	case OPT_CPUS:
		rc = wd_parse_fixed6(val, &v);
		if (rc == -EDOM)
			return bad_value(name, val, "at most six decimals");
		if (rc < 0 || v < 10000 || v > 1024000000)
			return bad_value(
			    name, val, "expected a number of CPUs from 0.01 to 1024, such as 0.5");
		/* More CPUs than the host has would be no limit at all while
		 * reading like one: refused, as docker run --cpus does. */
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		if (ncpu > 0 && v > (uint64_t)ncpu * 1000000) {
			char why[96];
			snprintf(why, sizeof(why), "this host has %ld CPU%s (at most --cpus %ld)",
				 ncpu, ncpu == 1 ? "" : "s", ncpu);
			return bad_value(name, val, why);
		}
		o->lim.cpu_millionths = v;
		return 0;
	case OPT_TIMEOUT:
		rc = wd_parse_fixed6(val, &v);
		if (rc == 0 && v % 1000)
			return bad_value(name, val, "at most millisecond precision (3 decimals)");
		if (rc < 0 || v < 1000 || v > 86400ULL * 1000000)
			return bad_value(name, val,
					 "expected seconds such as 30 or 0.5 (1 ms to a day)");
		o->lim.timeout_ms = v / 1000;
		return 0;
	}
	return -1;
}

static int
net_opt(int c, const char *name, const char *val, wd_spec *spec, struct run_opts *o)
{
	struct wd_err e = {0};
	switch (c) {
	case OPT_NET:
		if (!strcmp(val, "none"))
			o->net = WD_NET_NONE;
		else if (!strcmp(val, "allow") || !strcmp(val, "proxy"))
			o->net = WD_NET_PROXY;
		else
			return bad_value(name, val, "expected none or allow");
		o->net_given = true;
		return 0;
	case OPT_ALLOW_HOST:
	case OPT_DENY_HOST:
	case OPT_ADD_HOST:
	case OPT_ALLOW_RANGE: {
		enum wd_net_rule k = c == OPT_ALLOW_HOST  ? WD_NET_ALLOW
				     : c == OPT_DENY_HOST ? WD_NET_DENY
				     : c == OPT_ADD_HOST  ? WD_NET_HOST
							  : WD_NET_RANGE;
		if (wd_spec_add_net_rule(spec, k, val, &e) < 0)
			return bad_value(name, val, e.msg);
		if (k == WD_NET_ALLOW)
			o->net_rules = true;
		return 0;
	}
	case OPT_TLS_INTERCEPT:
		o->tls = true;
		return 0;
	case OPT_UPSTREAM_CA:
		if (access(val, R_OK) < 0)
			return bad_value(name, val, strerror(errno));
		o->upstream_ca = val;
		return 0;
	}
	return -1;
}

/* Secrets: the values are read here, by warden, and never
 * printed; an error names the option's source, not what it holds. */
static int
secret_opt(int c, const char *name, const char *val, wd_spec *spec, struct run_opts *o)
{
	struct wd_err e = {0};
	switch (c) {
	case OPT_SECRET: {
		const char *eq = strchr(val, '=');
		if (!eq || eq == val || !eq[1])
			return bad_value(name, val, "expected NAME=@FILE or NAME=env:VAR");
		char *n = strndup(val, (size_t)(eq - val));
		if (!n)
			abort();
		int rc = wd_spec_add_secret(spec, n, eq + 1, &e);
		free(n);
		return rc < 0 ? cli_fail(sub_name, "--secret: %s", e.msg) : 0;
	}
	case OPT_INJECT:
	case OPT_INJECT_BASIC:
		if (wd_spec_add_inject(spec, c == OPT_INJECT ? WD_INJECT_HEADER : WD_INJECT_BASIC,
				       val, &e) < 0)
			return bad_value(name, val, e.msg);
		return 0;
	case OPT_PLACEHOLDER:
		o->placeholders = realloc(o->placeholders, (o->nplaceholders + 1) * sizeof(char *));
		if (!o->placeholders)
			abort();
		o->placeholders[o->nplaceholders++] = val;
		return 0;
	}
	return -1;
}

/* --placeholder VAR[=NAME], after every --secret. */
static int
apply_placeholders(wd_spec *spec, const struct run_opts *o)
{
	struct wd_err e = {0};
	for (size_t i = 0; i < o->nplaceholders; i++) {
		const char *v = o->placeholders[i], *eq = strchr(v, '=');
		char *var = strndup(v, eq ? (size_t)(eq - v) : strlen(v));
		if (!var)
			abort();
		int rc = wd_spec_add_placeholder(spec, var, eq ? eq + 1 : var, &e);
		free(var);
		if (rc < 0)
			return bad_value("placeholder", v, e.msg);
	}
	return 0;
}

static int
policy_opt(int c, const char *val, struct run_opts *o)
{
	switch (c) {
	case 'p':
		o->policy = val;
		return 0;
	case 'c':
		o->command = val;
		return 0;
	case OPT_TOOL:
		o->tool = val;
		return 0;
	case OPT_AUDIT:
		o->audit = val;
		return 0;
	case OPT_CWD:
		o->cwd = val;
		return 0;
	case OPT_APPROVE:
		if (strcmp(val, "tty"))
			return bad_value("approve", val, "expected --approve=tty");
		o->approve_tty = true;
		return 0;
	}
	return -1;
}

/* One option into spec and o.  Returns 0, or an exit status. */
static int
one_opt(int c, const char *name, const char *val, wd_spec *spec, struct run_opts *o)
{
	struct wd_err e = {0};
	uint64_t v;
	int rc;
	if ((rc = limit_opt(c, name, val, o)) >= 0 || (rc = net_opt(c, name, val, spec, o)) >= 0 ||
	    (rc = secret_opt(c, name, val, spec, o)) >= 0 || (rc = policy_opt(c, val, o)) >= 0)
		return rc;
	switch (c) {
	case 'w':
		if (wd_spec_set_workspace(spec, val, &e) < 0)
			return cli_fail(sub_name, "--workspace: %s", e.msg);
		o->workspace_given = true;
		return 0;
	case OPT_ISOLATION:
		o->isolation_given = true;
		if (wd_isolation_parse(val, &o->isolation) < 0)
			return bad_value(name, val, "expected container, process or gvisor");
		return 0;
	case OPT_RO_BIND:
	case OPT_BIND:
		return bind_opt(spec, val, c == OPT_BIND);
	case OPT_SETENV:
		return setenv_opt(spec, name, val);
	case OPT_PASS_ENV: {
		const char *hv = getenv(val);
		if (!val[0] || strchr(val, '='))
			return bad_value(name, val, "expected a variable name");
		if (!hv)
			return bad_value(name, val, "not set in warden's environment");
		if (wd_spec_setenv(spec, val, hv, &e) < 0)
			return bad_value(name, val, e.msg);
		return 0;
	}
	case OPT_WORKSPACE_MODE:
		if (!strcmp(val, "direct"))
			wd_spec_set_workspace_mode(spec, WD_WORKSPACE_DIRECT);
		else if (!strcmp(val, "cow"))
			wd_spec_set_workspace_mode(spec, WD_WORKSPACE_COW);
		else
			return bad_value(name, val, "expected direct or cow");
		o->cow = !strcmp(val, "cow");
		return 0;
	case OPT_DISK:
		if ((rc = size_opt(name, val, 32 << 20, &v)))
			return rc;
		if (wd_spec_set_disk(spec, v, &e) < 0)
			return bad_value(name, val, e.msg);
		o->disk_given = true;
		return 0;
	case OPT_PROTECT:
		if (wd_spec_add_protected(spec, val, &e) < 0)
			return bad_value(name, val, e.msg);
		return 0;
	case OPT_IMAGE:
		if (wd_spec_set_image(spec, val, &e) < 0)
			return bad_value(name, val, e.msg);
		return 0;
	case OPT_ALLOW_PORT:
		if (wd_parse_u64(val, &v) < 0 || v < 1 || v > 65535)
			return bad_value(name, val, "expected a port from 1 to 65535");
		wd_spec_allow_port(spec, (unsigned)v, NULL);
		return 0;
	case OPT_STDIN:
		o->pass_stdin = true;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_PRINT_PLAN:
		o->print_plan = true;
		return 0;
	case OPT_BEST_EFFORT:
		wd_spec_set_best_effort(spec, true);
		return 0;
	case OPT_REPRODUCIBLE:
		wd_spec_set_reproducible(spec, true);
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	}
	return -1;
}

static int finish_sandbox(wd_spec *spec, struct run_opts *o, bool default_workspace);

/* Parse options into spec and o.  Returns 0, -1 after --help, or an exit
 * status. */
static int
parse_with(int argc, char **argv, const struct option *opts, const char *shortopts,
	   const struct cli_sandbox_extra *x, wd_spec *spec, struct run_opts *o, int *first_arg)
{
	int c, rc;

	if ((rc = cli_docker_hints(sub_name, argc, argv)))
		return rc;
	opterr = 0;
	optind = 0; /* 0: glibc reinitialises all of getopt's state */
	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		const char *name = NULL;
		for (const struct option *lo = opts; lo->name; lo++)
			if (lo->val == c)
				name = lo->name;
		if (c == OPT_HELP) {
			if (x) {
				fputs(x->usage, stdout);
			} else {
				fputs(usage_text, stdout);
				fputs(usage_text2, stdout);
			}
			return -1;
		}
		if (c == ':' || c == '?')
			return cli_bad_option(sub_name, argc, argv, opts);
		/* "--memory -- prog": getopt took "--" (or the next option) as
		 * the value; what the user left out is the value */
		if (optarg && cli_looks_like_option(optarg, opts)) {
			/* name it as it was typed: the word before the value */
			const char *typed = optind >= 2 && optarg == argv[optind - 1]
						? argv[optind - 2]
						: argv[optind - 1];
			return cli_fail(sub_name, "option %s needs a value", cli_quote(typed));
		}
		if (x && (rc = x->fn(c, optarg, x->data)) >= 0) {
			if (rc)
				return rc;
			continue;
		}
		if ((rc = one_opt(c, name, optarg, spec, o)))
			return rc;
	}
	*first_arg = optind;
	return 0;
}

static int
parse(int argc, char **argv, wd_spec *spec, struct run_opts *o, int *first_arg)
{
	/* (the command line may run more than once in one process: unit-cli) */
	sub_name = "run";
	merging = false;
	return parse_with(argc, argv, long_opts, "+:w:vp:c:", NULL, spec, o, first_arg);
}

/* Options of run that a session takes when it runs a command (warden
 * exec), not when it is made. */
static const char *const exec_only[] = {"command", "tool",  "audit",	  "approve",
					"cwd",	   "stdin", "print-plan", NULL};

int
cli_sandbox_options(const char *sub, int argc, char **argv, const struct cli_sandbox_extra *x,
		    wd_spec *spec, int *first_arg)
{
	sub_name = sub;
	size_t n = 0, nx = 0;
	while (long_opts[n].name)
		n++;
	while (x->opts[nx].name)
		nx++;
	struct option *all = calloc(n + nx + 1, sizeof(*all));
	if (!all)
		abort();
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool skip = x->only != NULL;
		for (size_t j = 0; !x->only && exec_only[j]; j++)
			skip |= !strcmp(long_opts[i].name, exec_only[j]);
		for (size_t j = 0; x->only && x->only[j]; j++)
			skip &= strcmp(long_opts[i].name, x->only[j]) != 0;
		if (!skip)
			all[k++] = long_opts[i];
	}
	for (size_t i = 0; i < nx; i++)
		all[k++] = x->opts[i];
	struct run_opts o = {.isolation = WD_ISOLATION_CONTAINER};
	merging = x->only != NULL;
	int rc = parse_with(argc, argv, all, x->shortopts, x, spec, &o, first_arg);
	free(all);
	if (rc == 0)
		rc = finish_sandbox(spec, &o, x->default_workspace);
	if (rc == 0 && x->verbose)
		*x->verbose = o.verbose;
	if (rc == 0 && x->json)
		*x->json = o.json;
	if (rc == 0 && x->policy)
		*x->policy = o.policy;
	return rc;
}

/* ---- the policy stage's human side ---- */

static const char *ask_cwd;

void
cli_ask_tty_cwd(const char *cwd)
{
	ask_cwd = cwd;
}

/* Ask at /dev/tty, never on the command's stdin (which may be the model's
 * own pipe).  1 yes, 0 no, -1 no terminal. */
int
cli_ask_tty(const wd_decision *d, void *data)
{
	(void)data;
	FILE *tty = cli_tty_open();
	if (!tty)
		return -1;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	int argc = 0;
	const char *const *argv = wd_decision_argv(d, &argc);
	fprintf(f, "warden: approval needed: ");
	cli_policy_text(f, wd_decision_reason(d));
	fprintf(f, "\n  rule:    %s\n  argv:   ", wd_decision_rule(d));
	for (int i = 0; i < argc; i++) {
		fputc(' ', f);
		cli_policy_word(f, argv[i]);
	}
	/* Why: the approval covers the working directory too, and the same
	 * words mean another thing elsewhere (`git push` in a nested
	 * repository the model made, with its own remote): the human sees
	 * where it runs, escaped as every field */
	fprintf(f, "\n  cwd:     ");
	cli_policy_word(f, ask_cwd ? ask_cwd : ".");
	fprintf(f, "\n  id:      %s", wd_decision_approval_id(d));
	if (fclose(f) != 0 || !text)
		abort();
	bool yes = cli_tty_ask(tty, text, len, "\nRun this exact command once? [y/N] ");
	free(text);
	return yes;
}

static void
print_refusal(const wd_result *r)
{
	const wd_decision *d = wd_result_decision(r);
	if (wd_result_outcome(r) == WD_OUTCOME_PAUSED) {
		fprintf(stderr, "warden: run: paused (%s): ", wd_decision_rule(d));
		cli_policy_text(stderr, wd_decision_reason(d));
		fprintf(stderr, "\nwarden: approve with: warden approve %s\n",
			wd_decision_approval_id(d));
		return;
	}
	if (d && wd_decision_kind(d) == WD_DECISION_DENY) {
		fprintf(stderr, "warden: run: refused by the policy (%s): ", wd_decision_rule(d));
		cli_policy_text(stderr, wd_decision_reason(d));
		fputc('\n', stderr);
		if (wd_decision_advice(d)[0])
			fprintf(stderr, "warden: advice: %s\n", wd_decision_advice(d));
		return;
	}
	fprintf(stderr, "warden: run: refused: ");
	cli_policy_text(stderr, wd_result_refusal(r));
	fputc('\n', stderr);
}

static void
print_result(const wd_result *r, const char *prog, const struct run_opts *o)
{
	if (o->json) {
		char *j = wd_result_json(r);
		puts(j);
		free(j);
	}
	if (wd_result_outcome(r) != WD_OUTCOME_RAN) {
		print_refusal(r);
	} else {
		if (wd_result_exec_errno(r) && !o->json)
			cli_exec_failed(sub_name, r, prog, o->cwd);
		if (o->json)
			return;
		cli_net_refusals(sub_name, r);
		if (wd_result_timed_out(r))
			fprintf(stderr, "warden: run: timed out; the sandbox was killed\n");
		else if (wd_result_oom_killed(r))
			fprintf(stderr, "warden: run: out of memory; the sandbox was killed\n");
	}
	if (o->audit && !o->json)
		cli_audit_note(sub_name, r, o->audit);
}

/* ---- signals: the sandbox ends first, and the result says why ---- */

static wd_ctx *signal_ctx;

static void
on_signal(int sig)
{
	wd_ctx_cancel(signal_ctx, sig);
}

static void
catch_signals(wd_ctx *ctx)
{
	signal_ctx = ctx;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: a prompt at the terminal gives up on ^C */
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* Spec and command from the parsed options. */
static int
finish_spec(wd_spec *spec, wd_cmd *cmd, struct run_opts *o, int argc, char **argv, int first)
{
	struct wd_err e = {0};
	bool program = first < argc;
	if (o->command && program)
		return cli_fail(sub_name, "--command and a program after -- are exclusive");
	if (!o->command && !program)
		return cli_fail(sub_name,
				"no program given (usage: warden run [OPTIONS] -- PROGRAM "
				"[ARGS...] | --command STRING)");
	if (o->command
		? wd_cmd_set_command(cmd, o->command, &e) < 0
		: wd_cmd_set_argv(cmd, argc - first, (const char *const *)(argv + first), &e) < 0)
		return cli_fail(sub_name, "%s", e.msg);
	int rc = finish_sandbox(spec, o, true);
	if (rc)
		return rc;
	/* a one-shot direct run has no disk: its /tmp is the --tmp-size tmpfs
	 * and its writes land in the workspace itself */
	if (o->disk_given && !o->cow)
		return cli_fail(sub_name,
				"--disk bounds a cow workspace's layers: use it with "
				"--workspace-mode cow (a direct run's /tmp is --tmp-size)");
	if (o->pass_stdin)
		wd_cmd_set_stdin(cmd, 0);
	if (!o->json)
		wd_cmd_set_stream(cmd, 1, 2);
	if (o->tool && wd_cmd_set_tool(cmd, o->tool, &e) < 0)
		return cli_fail(sub_name, "--tool: %s", e.msg);
	/* the same working directory an approval made by `warden check
	 * --cwd` is bound to, so that approval can be used by run */
	if (o->cwd && wd_cmd_set_cwd(cmd, o->cwd, &e) < 0)
		return bad_value("cwd", o->cwd, e.msg);
	/* --policy and --approve=tty turn the stage on for an explicit argv
	 * too; --audit only records (what ran, its egress, its result, and
	 * that the stage was off), so that asking for a record never changes
	 * what runs */
	wd_cmd_set_policy(cmd, o->policy || o->approve_tty);
	wd_cmd_set_interactive(cmd, o->approve_tty);
	return 0;
}

/* The sandbox's part of the options, into spec. */
static int
finish_sandbox(wd_spec *spec, struct run_opts *o, bool default_workspace)
{
	struct wd_err e = {0};
	/* the default workspace, the current directory, is checked as an
	 * explicit one would be */
	if (default_workspace && !o->workspace_given && wd_spec_set_workspace(spec, ".", &e) < 0)
		return cli_fail(sub_name, "--workspace (the current directory): %s", e.msg);
	if (o->isolation_given)
		wd_spec_set_isolation(spec, o->isolation);
	wd_spec_set_limits(spec, &o->lim);
	/* --allow-host alone implies --net allow; --net none with rules or
	 * interception is a contradiction, refused rather than guessed at */
	if (!o->net_given && o->net_rules)
		o->net = WD_NET_PROXY;
	if (o->net == WD_NET_NONE && o->net_given && (o->net_rules || o->tls))
		return cli_fail(sub_name, "--net none contradicts --allow-host/--tls-intercept");
	/* (update: the session's own mode counts, checked by the library) */
	if (o->net == WD_NET_NONE && o->tls && !merging)
		return cli_fail(sub_name,
				"--tls-intercept needs --net allow and --allow-host rules");
	if (o->net_given || o->net_rules)
		wd_spec_set_net(spec, o->net);
	if (o->tls || o->upstream_ca)
		wd_spec_set_tls_intercept(spec, o->tls, o->upstream_ca);
	int rc = apply_placeholders(spec, o);
	if (rc)
		return rc;
	const char *term = getenv("TERM");
	if (term && (isatty(0) || isatty(1) || isatty(2)))
		wd_spec_set_term(spec, term);
	return 0;
}

static int
setup_ctx(wd_ctx *ctx, const struct run_opts *o)
{
	struct wd_err e = {0};
	if (o->policy && wd_ctx_set_policy_file(ctx, o->policy, &e) < 0)
		return cli_fail(sub_name, "%s", e.msg);
	if (o->audit && wd_ctx_set_audit_file(ctx, o->audit, &e) < 0)
		return cli_fail(sub_name, "--audit: %s", e.msg);
	if (o->approve_tty) {
		cli_ask_tty_cwd(o->cwd);
		wd_ctx_set_approver(ctx, cli_ask_tty, NULL);
	}
	wd_ctx_set_log_handler(ctx, cli_log_handler, NULL, o->verbose ? WD_LOG_DEBUG : WD_LOG_WARN);
	return 0;
}

static int
plan(const wd_spec *spec)
{
	struct wd_err e = {0};
	char *text = NULL;
	if (wd_spec_plan(spec, &text, &e) < 0)
		return cli_fail(sub_name, "%s", e.msg);
	fputs(text, stdout);
	free(text);
	return 0;
}

/* Options and program into spec, cmd and o: 0, -1 after --help, or an
 * exit status (125, the message printed). */
static int
prepare(int argc, char **argv, wd_spec *spec, wd_cmd *cmd, struct run_opts *o, int *first)
{
	cli_json_errors(false);
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			cli_json_errors(true); /* bad input in JSON too */
	int rc = parse(argc, argv, spec, o, first);
	if (rc == 0)
		rc = finish_spec(spec, cmd, o, argc, argv, *first);
	return rc;
}

int
cli_run_prepare(int argc, char **argv, wd_spec *spec, wd_cmd *cmd)
{
	struct run_opts o = {.isolation = WD_ISOLATION_CONTAINER};
	int first = 0;
	int rc = prepare(argc, argv, spec, cmd, &o, &first);
	free(o.placeholders); /* applied to spec by now, or refused */
	return rc;
}

int
cli_run(int argc, char **argv)
{
	struct run_opts o = {.isolation = WD_ISOLATION_CONTAINER};
	struct wd_err e = {0};
	wd_spec *spec = wd_spec_new();
	wd_cmd *cmd = wd_cmd_new();
	wd_ctx *ctx = NULL;
	wd_result *r = NULL;
	int first = 0;

	int rc = prepare(argc, argv, spec, cmd, &o, &first);
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}
	if (o.print_plan) {
		wd_set_log_handler(cli_log_handler, NULL, o.verbose ? WD_LOG_DEBUG : WD_LOG_WARN);
		rc = plan(spec);
		goto out;
	}
	/* An ordinary user's one-shot cow sandbox: its overlay is mounted in
	 * a user namespace of ours, entered now, while this process has no
	 * thread (the proxy's start later); its layers are a directory in the
	 * state directory, removed with the sandbox (wd_userns_enter(3)) */
	if (o.cow && geteuid() != 0 && wd_userns_enter(&e) < 0) {
		rc = cli_fail(sub_name, "--workspace-mode cow: %s", e.msg);
		goto out;
	}
	if (wd_ctx_new(&ctx, &e) < 0) {
		rc = cli_fail(sub_name, "%s", e.msg);
		goto out;
	}
	if ((rc = setup_ctx(ctx, &o)))
		goto out;
	catch_signals(ctx);
	fflush(stdout);
	if (wd_ctx_run(ctx, spec, cmd, &r, &e) < 0) {
		rc = cli_fail(sub_name, "%s", e.msg);
		goto out;
	}
	print_result(r, first < argc ? argv[first] : o.command, &o);
	rc = wd_result_status(r);
out:
	wd_result_free(r);
	wd_ctx_free(ctx);
	wd_cmd_free(cmd);
	wd_spec_free(spec);
	free(o.placeholders);
	return rc;
}
