/* cli/run: warden run [OPTIONS] -- PROGRAM [ARGS...] */
#include "cli/cli.h"
#include "cli/policy_cli.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static const char usage_text[] =
	"usage: warden run [OPTIONS] -- PROGRAM [ARGS...]\n"
	"\n"
	"Run PROGRAM (never through a shell) in a fresh sandbox destroyed when it ends.\n"
	"\n"
	"  -w, --workspace DIR      directory bound read-write at /workspace (default: .)\n"
	"      --isolation LEVEL    container (default) or process\n"
	"      --memory SIZE        memory limit, no swap (default 512M)\n"
	"      --pids N             process limit (default 128)\n"
	"      --cpus N             CPU limit, fractions allowed (default 1.0)\n"
	"      --tmp-size SIZE      size of /tmp (default 128M)\n"
	"      --timeout SECONDS    wall-clock limit; the sandbox is killed (default 30)\n"
	"      --output-limit BYTES bytes kept per stream, half head half tail (default 64K)\n"
	"      --ro-bind SRC[:DST]  bind host SRC read-only at DST (default: same path)\n"
	"      --bind SRC[:DST]     bind host SRC read-write at DST\n"
	"      --setenv NAME=VALUE  add to the command's environment\n"
	"      --pass-env NAME      pass warden's own NAME into the sandbox\n"
	"      --allow-port PORT    allow TCP bind/connect on PORT (loopback servers)\n"
	"      --net MODE           none (default: loopback only) or allow (egress only\n"
	"                           through warden's proxy, by the rules below)\n"
	"      --allow-host RULE    HOST[:PORT][/PATH][=METHOD,...], HOST exact or *.suffix\n"
	"      --deny-host RULE     HOST[:PORT]; wins over any allow rule\n"
	"      --add-host NAME=ADDR a static name, like curl --resolve and docker --add-host\n"
	"      --tls-intercept      check each request inside HTTPS tunnels (a per-sandbox CA)\n"
	"      --upstream-ca FILE   CA bundle to verify real servers with (interception)\n"
	"      --stdin              pass warden's stdin (default: /dev/null)\n"
	"      --json               print one JSON object with the result\n"
	"  -v, --verbose            log each step\n"
	"\n"
	"Exit status: the command's own; 128+N if killed by signal N; 124 timed out;\n"
	"125 warden failed (bad input included); 126 cannot execute; 127 not found.\n";

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
	{NULL, 0, NULL, 0},
};

static int
bad_value(const char *opt, const char *val, const char *why)
{
	return cli_fail("run", "--%s: invalid value '%s': %s", opt, val, why);
}

static int
size_opt(const char *opt, const char *val, uint64_t min, uint64_t *out)
{
	int rc = wd_parse_size(val, out);
	if (rc == -ERANGE)
		return bad_value(opt, val, "too large");
	if (rc < 0)
		return bad_value(opt, val, "expected a size such as 512M, 1G or 65536");
	if (*out < min) {
		char why[64];
		snprintf(why, sizeof(why), "must be at least %" PRIu64 " bytes", min);
		return bad_value(opt, val, why);
	}
	return 0;
}

static int
bind_opt(wd_spec *spec, const char *val, bool rw)
{
	struct wd_err e = {0};
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
	if (!copy[0] || (dst && !dst[0]))
		rc = bad_value(rw ? "bind" : "ro-bind", val, "expected SRC[:DST]");
	else if (wd_spec_add_bind(spec, copy, dst, rw, &e) < 0)
		rc = cli_fail("run", "%s", e.msg);
	free(copy);
	return rc;
}

struct run_opts {
	bool json, verbose, pass_stdin;
	enum wd_net_mode net;
	bool net_given, net_rules, tls, workspace_given;
	const char *upstream_ca;
	struct wd_limits lim;
	enum wd_isolation isolation;
};

/* Parse options into spec and o.  Returns 0, or an exit status. */
static int
parse(int argc, char **argv, wd_spec *spec, struct run_opts *o, int *first_arg)
{
	struct wd_err e = {0};
	uint64_t v;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+w:v", long_opts, NULL)) != -1) {
		const char *name = NULL;
		for (const struct option *lo = long_opts; lo->name; lo++)
			if (lo->val == c)
				name = lo->name;
		switch (c) {
		case 'w':
			if (wd_spec_set_workspace(spec, optarg, &e) < 0)
				return cli_fail("run", "--workspace: %s", e.msg);
			o->workspace_given = true;
			break;
		case OPT_ISOLATION:
			if (!strcmp(optarg, "container"))
				o->isolation = WD_ISOLATION_CONTAINER;
			else if (!strcmp(optarg, "process"))
				o->isolation = WD_ISOLATION_PROCESS;
			else
				return bad_value(name, optarg, "expected container or process");
			break;
		case OPT_MEMORY:
			if ((rc = size_opt(name, optarg, 4 << 20, &o->lim.memory_bytes)))
				return rc;
			break;
		case OPT_TMP_SIZE:
			if ((rc = size_opt(name, optarg, 64 << 10, &o->lim.tmp_bytes)))
				return rc;
			break;
		case OPT_OUTPUT_LIMIT:
			if ((rc = size_opt(name, optarg, 64, &o->lim.output_limit)))
				return rc;
			/* warden keeps up to this per stream, and --json copies
			 * and escapes it: bounded so warden itself stays small */
			if (o->lim.output_limit > (16ULL << 20))
				return bad_value(name, optarg, "at most 16M");
			break;
		case OPT_PIDS:
			if (wd_parse_u64(optarg, &v) < 0 || v < 1 || v > 4194304)
				return bad_value(name, optarg, "expected a whole number from 1");
			o->lim.pids = v;
			break;
		case OPT_CPUS:
			if (wd_parse_fixed6(optarg, &v) < 0 || v < 10000 || v > 1024000000)
				return bad_value(name, optarg, "expected a number such as 0.5 or 2");
			o->lim.cpu_millionths = v;
			break;
		case OPT_TIMEOUT:
			if (wd_parse_fixed6(optarg, &v) < 0 || v < 1000 || v > 86400ULL * 1000000)
				return bad_value(name, optarg,
						 "expected seconds such as 30 or 0.5 (up to a day)");
			o->lim.timeout_ms = v / 1000;
			break;
		case OPT_RO_BIND:
		case OPT_BIND:
			if ((rc = bind_opt(spec, optarg, c == OPT_BIND)))
				return rc;
			break;
		case OPT_SETENV: {
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg)
				return bad_value(name, optarg, "expected NAME=VALUE");
			char *n = strndup(optarg, (size_t)(eq - optarg));
			rc = wd_spec_setenv(spec, n, eq + 1, &e);
			free(n);
			if (rc < 0)
				return bad_value(name, optarg, e.msg);
			break;
		}
		case OPT_PASS_ENV: {
			const char *val = getenv(optarg);
			if (!optarg[0] || strchr(optarg, '='))
				return bad_value(name, optarg, "expected a variable name");
			if (!val)
				return bad_value(name, optarg,
						 "not set in warden's environment");
			if (wd_spec_setenv(spec, optarg, val, &e) < 0)
				return bad_value(name, optarg, e.msg);
			break;
		}
		case OPT_ALLOW_PORT:
			if (wd_parse_u64(optarg, &v) < 0 || v < 1 || v > 65535)
				return bad_value(name, optarg, "expected a port from 1 to 65535");
			wd_spec_allow_port(spec, (unsigned)v, NULL);
			break;
		case OPT_STDIN:
			o->pass_stdin = true;
			break;
		case OPT_NET:
			if (!strcmp(optarg, "none"))
				o->net = WD_NET_NONE;
			else if (!strcmp(optarg, "allow") || !strcmp(optarg, "proxy"))
				o->net = WD_NET_PROXY;
			else
				return bad_value(name, optarg, "expected none or allow");
			o->net_given = true;
			break;
		case OPT_ALLOW_HOST:
		case OPT_DENY_HOST:
		case OPT_ADD_HOST: {
			enum wd_net_rule k = c == OPT_ALLOW_HOST  ? WD_NET_ALLOW
					     : c == OPT_DENY_HOST ? WD_NET_DENY
								  : WD_NET_HOST;
			if (wd_spec_add_net_rule(spec, k, optarg, &e) < 0)
				return bad_value(name, optarg, e.msg);
			if (k == WD_NET_ALLOW)
				o->net_rules = true;
			break;
		}
		case OPT_TLS_INTERCEPT:
			o->tls = true;
			break;
		case OPT_UPSTREAM_CA:
			if (access(optarg, R_OK) < 0)
				return bad_value(name, optarg, strerror(errno));
			o->upstream_ca = optarg;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return -1;
		case ':':
			return cli_fail("run", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_fail("run", "unknown option '%s' (see warden run --help)",
					argv[optind - 1]);
		}
	}
	*first_arg = optind;
	return 0;
}

int
cli_run(int argc, char **argv)
{
	struct run_opts o = {.isolation = WD_ISOLATION_CONTAINER};
	struct wd_err e = {0};
	int first = 0, rc;
	wd_spec *spec = wd_spec_new();
	struct cli_policy_opts pol; /* POLICY GATE: issue 3's options, taken out before parse() */

	if ((rc = cli_policy_extract(&argc, argv, &pol))) {
		wd_spec_free(spec);
		return rc;
	}
	rc = parse(argc, argv, spec, &o, &first);
	if (rc) {
		wd_spec_free(spec);
		return rc < 0 ? 0 : rc;
	}
	wd_set_log_handler(cli_log_handler, NULL, o.verbose ? WD_LOG_DEBUG : WD_LOG_WARN);
	if (first >= argc) {
		wd_spec_free(spec);
		return cli_fail("run", "no program given (usage: warden run [OPTIONS] -- PROGRAM "
				       "[ARGS...])");
	}
	if (wd_spec_set_argv(spec, argc - first, (const char *const *)(argv + first), &e) < 0) {
		wd_spec_free(spec);
		return cli_fail("run", "%s", e.msg);
	}
	/* the default workspace, the current directory, is checked as an
	 * explicit one would be */
	if (!o.workspace_given && wd_spec_set_workspace(spec, ".", &e) < 0) {
		wd_spec_free(spec);
		return cli_fail("run", "workspace (the current directory): %s", e.msg);
	}
	wd_spec_set_isolation(spec, o.isolation);
	wd_spec_set_limits(spec, &o.lim);
	/* --allow-host alone implies --net allow; --net none with rules or
	 * interception is a contradiction, refused rather than guessed at */
	if (!o.net_given && o.net_rules)
		o.net = WD_NET_PROXY;
	if (o.net == WD_NET_NONE && o.net_given && (o.net_rules || o.tls)) {
		wd_spec_free(spec);
		return cli_fail("run", "--net none contradicts --allow-host/--tls-intercept");
	}
	if (o.net == WD_NET_NONE && o.tls) {
		wd_spec_free(spec);
		return cli_fail("run", "--tls-intercept needs --net allow and --allow-host rules");
	}
	wd_spec_set_net(spec, o.net);
	if (o.tls || o.upstream_ca)
		wd_spec_set_tls_intercept(spec, o.tls, o.upstream_ca);
	if (o.pass_stdin)
		wd_spec_set_stdin(spec, 0);
	if (!o.json)
		wd_spec_set_stream(spec, 1, 2);
	const char *term = getenv("TERM");
	if (term && (isatty(0) || isatty(1) || isatty(2)))
		wd_spec_set_term(spec, term);

	/* POLICY GATE */
	if (cli_policy_active(&pol)) {
		rc = cli_policy_run(&pol, spec, argc - first, argv + first);
		cli_policy_opts_fini(&pol);
		wd_spec_free(spec);
		return rc;
	}
	cli_policy_opts_fini(&pol);

	wd_result *r = NULL;
	fflush(stdout);
	rc = wd_run(spec, &r, &e);
	if (rc < 0) {
		wd_spec_free(spec);
		return cli_fail("run", "%s", e.msg);
	}
	int status = wd_result_status(r);
	if (o.json) {
		char *j = wd_result_json(r);
		puts(j);
		free(j);
	} else if (wd_result_timed_out(r)) {
		fprintf(stderr, "warden: run: timed out; the sandbox was killed\n");
	} else if (wd_result_oom_killed(r)) {
		fprintf(stderr, "warden: run: out of memory; the sandbox was killed\n");
	}
	wd_result_free(r);
	wd_spec_free(spec);
	return status;
}
