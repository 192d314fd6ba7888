/* cli/gate: the policy gate of `warden run`.
 *
 *   decide -> audit "decision" -> deny: reason + advice, exit 126
 *                              -> pause: consume a recorded approval, or ask
 *                                 at /dev/tty (--approve=tty), or print the
 *                                 id and exit 123
 *                              -> allow: run the judged argv, audit "result"
 *
 * After an approval is read the decision is made again, with the policy
 * loaded again from its file: the approval covers one request under one
 * policy, and if either changed in between, the id differs and the command
 * pauses again.  The human is asked at the controlling terminal, never on
 * the command's stdin (which may be the model's own pipe).
 */
#include "cli/policy_cli.h"
#include "util/util.h"

#include <fcntl.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Options of `warden run` that take a value (to step over while scanning). */
static const char *const run_value_opts[] = {
    "--workspace",  "--isolation",    "--memory",  "--pids", "--cpus",	 "--tmp-size",
    "--timeout",    "--output-limit", "--ro-bind", "--bind", "--setenv", "--pass-env",
    "--allow-port", "--net",	      "--profile", "--allow-host", "--deny-host", "--add-host",
    "--upstream-ca", NULL,
};

static bool
takes_value(const char *a)
{
	if (!strcmp(a, "-w"))
		return true;
	for (size_t i = 0; run_value_opts[i]; i++)
		if (!strcmp(a, run_value_opts[i]))
			return true;
	return false;
}

/* --name VALUE or --name=VALUE at argv[*i]; returns the value or NULL. */
static const char *
opt_value(int argc, char **argv, int *i, const char *name, bool *matched)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	*matched = false;
	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=') {
		*matched = true;
		return a + n + 1;
	}
	if (a[n] == '\0') {
		*matched = true;
		if (*i + 1 < argc) {
			(*i)++;
			return argv[*i];
		}
	}
	return NULL;
}

int
cli_policy_extract(int *argcp, char **argv, struct cli_policy_opts *o)
{
	int argc = *argcp, out = 1, i;
	bool matched;
	memset(o, 0, sizeof(*o));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--") || a[0] != '-')
			break;
		int start = i;
		if ((v = opt_value(argc, argv, &i, "--policy", &matched)) || matched) {
			if (!v)
				return cli_fail("run", "option '--policy' needs a value");
			o->policy = v;
			continue;
		}
		if ((v = opt_value(argc, argv, &i, "--command", &matched)) || matched) {
			if (!v)
				return cli_fail("run", "option '--command' needs a value");
			o->command = v;
			continue;
		}
		if ((v = opt_value(argc, argv, &i, "--audit", &matched)) || matched) {
			if (!v)
				return cli_fail("run", "option '--audit' needs a value");
			o->audit = v;
			continue;
		}
		if ((v = opt_value(argc, argv, &i, "--tool", &matched)) || matched) {
			if (!v)
				return cli_fail("run", "option '--tool' needs a value");
			o->tool = v;
			continue;
		}
		if (!strncmp(a, "--approve", 9) && (a[9] == '=' || a[9] == '\0')) {
			if (strcmp(a, "--approve=tty"))
				return cli_fail("run",
						"--approve: invalid value '%s': expected "
						"--approve=tty",
						a[9] ? a + 10 : "");
			o->approve_tty = true;
			continue;
		}
		/* Peek at what the gate needs too, leaving it for the run. */
		if (!strcmp(a, "--json"))
			o->json = true;
		static const struct {
			const char *name;
			size_t off;
		} lims[] = {
		    {"--memory", offsetof(struct cli_policy_opts, lim_memory)},
		    {"--pids", offsetof(struct cli_policy_opts, lim_pids)},
		    {"--cpus", offsetof(struct cli_policy_opts, lim_cpus)},
		    {"--tmp-size", offsetof(struct cli_policy_opts, lim_tmp)},
		    {"--timeout", offsetof(struct cli_policy_opts, lim_timeout)},
		    {"--output-limit", offsetof(struct cli_policy_opts, lim_output)},
		};
		for (size_t k = 0; k < WD_ARRAY_SIZE(lims); k++) {
			i = start;
			if ((v = opt_value(argc, argv, &i, lims[k].name, &matched)))
				*(const char **)((char *)o + lims[k].off) = v;
		}
		i = start;
		if ((v = opt_value(argc, argv, &i, "--workspace", &matched)) ||
		    (i = start, (v = opt_value(argc, argv, &i, "-w", &matched))))
			o->workspace = v;
		else if (!strncmp(a, "-w", 2) && a[2] && a[1] != '-')
			o->workspace = a + 2;
		i = start;
		if ((v = opt_value(argc, argv, &i, "--setenv", &matched)) && o->nenv < 64)
			o->env[o->nenv++] = v;
		i = start;
		/* --pass-env NAME hands warden's own value in: the approval id
		 * must cover it like any other environment entry. */
		if ((v = opt_value(argc, argv, &i, "--pass-env", &matched)) && getenv(v) &&
		    o->nenv < 64 && o->nowned < 64) {
			char *kv = NULL;
			if (asprintf(&kv, "%s=%s", v, getenv(v)) < 0)
				abort();
			o->owned[o->nowned++] = kv;
			o->env[o->nenv++] = kv;
		}
		i = start;
		argv[out++] = argv[i];
		if (!strchr(a, '=') && takes_value(a) && i + 1 < argc)
			argv[out++] = argv[++i];
	}
	bool program_follows = i < argc && (strcmp(argv[i], "--") || i + 1 < argc);
	if (o->command && program_follows)
		return cli_fail("run", "--command and a program after -- are exclusive");
	for (; i < argc; i++)
		argv[out++] = argv[i];
	if (o->command) {
		/* A placeholder program for the run's own parser; the gate
		 * replaces the argv with the words it judged.  At least one
		 * slot was freed by removing --command. */
		static char placeholder[] = "warden-policy-command";
		argv[out++] = placeholder;
	}
	argv[out] = NULL;
	*argcp = out;
	return 0;
}

void
cli_policy_opts_fini(struct cli_policy_opts *o)
{
	for (size_t i = 0; i < o->nowned; i++)
		free(o->owned[i]);
	o->nowned = 0;
}

static void
print_refusal(const struct cli_policy_opts *o, const wd_decision *d)
{
	if (o->json) {
		char *j = wd_decision_json(d);
		puts(j);
		free(j);
		fflush(stdout);
	}
	fprintf(stderr, "warden: run: refused by the policy (%s): ", wd_decision_rule(d));
	cli_policy_text(stderr, wd_decision_reason(d));
	fputc('\n', stderr);
	if (wd_decision_advice(d)[0])
		fprintf(stderr, "warden: advice: %s\n", wd_decision_advice(d));
}

/* Ask at /dev/tty.  1 yes, 0 no, -1 no terminal. */
static int
ask_tty(const wd_decision *d)
{
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "r+");
	if (!f) {
		close(fd);
		return -1;
	}
	int argc = 0;
	const char *const *argv = wd_decision_argv(d, &argc);
	fprintf(f, "warden: approval needed: ");
	cli_policy_text(f, wd_decision_reason(d));
	fprintf(f, "\n  rule:    %s\n  argv:   ", wd_decision_rule(d));
	for (int i = 0; i < argc; i++) {
		fputc(' ', f);
		cli_policy_word(f, argv[i]);
	}
	fprintf(f, "\n  id:      %s\nRun this exact command once? [y/N] ",
		wd_decision_approval_id(d));
	fflush(f);
	char line[64] = "";
	int yes = 0;
	if (fgets(line, sizeof(line), f))
		yes = !strcmp(line, "y\n") || !strcmp(line, "yes\n") || !strcmp(line, "Y\n");
	fclose(f);
	return yes;
}

static int
build_request(const struct cli_policy_opts *o, int argc, char **argv, wd_request **out)
{
	struct wd_err e = {0};
	wd_request *req = wd_request_new();
	int rc = 0;
	if (o->command)
		rc = wd_request_set_command(req, o->command, &e);
	else
		rc = wd_request_set_argv(req, argc, (const char *const *)argv, &e);
	if (rc == 0 &&
	    (rc = wd_request_set_workspace(req, o->workspace ? o->workspace : ".", &e)) < 0) {
		wd_request_free(req);
		return cli_fail("run", "--workspace: %s", e.msg);
	}
	for (size_t i = 0; rc == 0 && i < o->nenv; i++) {
		const char *eq = strchr(o->env[i], '=');
		if (!eq)
			continue;
		char *n = strndup(o->env[i], (size_t)(eq - o->env[i]));
		rc = wd_request_setenv(req, n, eq + 1, &e);
		free(n);
	}
	if (rc < 0) {
		wd_request_free(req);
		return cli_fail("run", "%s", e.msg);
	}
	*out = req;
	return 0;
}

/* --tool NAME: the class comes from the policy's definition of the tool,
 * never from the request.  blocked (or undefined) refuses; direct tools run
 * in warden itself, not through `warden run`; a sandbox tool's profile
 * gives the limits the run's own options did not set.  Returns -1 to go
 * on, or an exit status. */
static int
route(const struct cli_policy_opts *o, const wd_policy *pol, wd_spec *spec, wd_audit *audit)
{
	enum wd_tool_class k;
	const char *profile = NULL;
	struct wd_limits pl, lim = {0};
	struct wd_err e = {0};
	int rc = wd_policy_route(pol, o->tool, &k, &profile, &pl, &e);
	if (rc < 0 || k != WD_TOOL_SANDBOX) {
		const char *why =
		    rc < 0 ? "is not defined by the policy (undefined tools are blocked)"
		    : k == WD_TOOL_BLOCKED
			? "is blocked by the policy"
			: "is a direct tool: it runs in warden itself, not through warden run";
		json_t *f =
		    json_pack("{s:s,s:s,s:s}", "tool", o->tool, "decision", "deny", "reason", why);
		char *fj = json_dumps(f, JSON_COMPACT);
		wd_audit_event(audit, "route", fj, NULL);
		free(fj);
		json_decref(f);
		fprintf(stderr, "warden: run: refused: tool '%s' %s\n", o->tool, why);
		return CLI_EXIT_DENY;
	}
	/* The run's parser has validated these already. */
	uint64_t v;
	if (o->lim_memory && wd_parse_size(o->lim_memory, &v) == 0)
		lim.memory_bytes = v;
	if (o->lim_pids && wd_parse_u64(o->lim_pids, &v) == 0)
		lim.pids = v;
	if (o->lim_cpus && wd_parse_fixed6(o->lim_cpus, &v) == 0)
		lim.cpu_millionths = v;
	if (o->lim_tmp && wd_parse_size(o->lim_tmp, &v) == 0)
		lim.tmp_bytes = v;
	if (o->lim_timeout && wd_parse_fixed6(o->lim_timeout, &v) == 0)
		lim.timeout_ms = v / 1000;
	if (o->lim_output && wd_parse_size(o->lim_output, &v) == 0)
		lim.output_limit = v;
	if (!lim.memory_bytes)
		lim.memory_bytes = pl.memory_bytes;
	if (!lim.pids)
		lim.pids = pl.pids;
	if (!lim.cpu_millionths)
		lim.cpu_millionths = pl.cpu_millionths;
	if (!lim.timeout_ms)
		lim.timeout_ms = pl.timeout_ms;
	if (!lim.output_limit)
		lim.output_limit = pl.output_limit;
	wd_spec_set_limits(spec, &lim);
	json_t *f = json_pack(
	    "{s:s,s:s,s:I,s:I,s:I,s:I}", "tool", o->tool, "profile", profile, "timeout_ms",
	    (json_int_t)lim.timeout_ms, "memory", (json_int_t)lim.memory_bytes, "cpu_millionths",
	    (json_int_t)lim.cpu_millionths, "output", (json_int_t)lim.output_limit);
	char *fj = json_dumps(f, JSON_COMPACT);
	wd_audit_event(audit, "route", fj, NULL);
	free(fj);
	json_decref(f);
	return -1;
}

int
cli_policy_gate(struct cli_policy_opts *o, wd_spec *spec, int argc, char **argv, wd_audit **auditp,
		wd_decision **decp)
{
	struct wd_err e = {0};
	wd_policy *pol = NULL;
	wd_request *req = NULL;
	wd_decision *d = NULL;
	wd_audit *audit = NULL;
	int rc;

	*auditp = NULL;
	*decp = NULL;
	if ((rc = cli_policy_load("run", o->policy, &pol)))
		return rc;
	if ((rc = build_request(o, argc, argv, &req)))
		goto out;
	if (wd_policy_decide(pol, req, &d, &e) < 0) {
		rc = cli_fail("run", "%s", e.msg);
		goto out;
	}
	/* The audit log is opened here, by warden, outside the jail; if it
	 * cannot be written nothing runs (no unrecorded decisions). */
	const char *ap = o->audit ? o->audit : wd_policy_audit_path(pol);
	if (ap && wd_audit_open(ap, &audit, &e) < 0) {
		rc = cli_fail("run", "--audit: %s", e.msg);
		goto out;
	}
	if (wd_audit_decision(audit, req, d, &e) < 0) {
		rc = cli_fail("run", "audit: %s", e.msg);
		goto out;
	}
	if (o->tool && (rc = route(o, pol, spec, audit)) >= 0)
		goto out;

	if (wd_decision_kind(d) == WD_DECISION_PAUSE) {
		int got = wd_approval_consume(pol, req, d, audit, &e);
		if (got < 0) {
			rc = cli_fail("run", "approval: %s", e.msg);
			goto out;
		}
		if (got == 0 && o->approve_tty) {
			int yes = ask_tty(d);
			if (yes == 1) {
				wd_audit_approval(audit, "granted", wd_decision_approval_id(d),
						  "at the terminal", NULL);
				wd_audit_approval(audit, "consumed", wd_decision_approval_id(d),
						  NULL, NULL);
				got = 1;
			} else if (yes == 0) {
				wd_audit_approval(audit, "refused", wd_decision_approval_id(d),
						  "at the terminal", NULL);
				fprintf(stderr, "warden: run: not approved; nothing ran\n");
				rc = CLI_EXIT_DENY;
				goto out;
			}
		}
		if (got == 1) {
			/* Decide again, under the policy as it is now. */
			char id[65];
			snprintf(id, sizeof(id), "%s", wd_decision_approval_id(d));
			wd_decision_free(d);
			d = NULL;
			wd_policy_free(pol);
			pol = NULL;
			if ((rc = cli_policy_load("run", o->policy, &pol)))
				goto out;
			if (wd_policy_decide(pol, req, &d, &e) < 0) {
				rc = cli_fail("run", "%s", e.msg);
				goto out;
			}
			if (wd_decision_kind(d) == WD_DECISION_PAUSE &&
			    !strcmp(wd_decision_approval_id(d), id)) {
				/* approved: go on and run */
			} else if (wd_decision_kind(d) == WD_DECISION_DENY) {
				wd_audit_decision(audit, req, d, NULL);
				print_refusal(o, d);
				rc = CLI_EXIT_DENY;
				goto out;
			} else if (wd_decision_kind(d) == WD_DECISION_PAUSE) {
				wd_audit_approval(audit, "mismatched", id,
						  "the policy changed after the approval", NULL);
				got = 0;
			}
		}
		if (got == 0) {
			if (wd_approval_pending(pol, req, d, ap, &e) < 0)
				fprintf(stderr,
					"warden: run: cannot record the pending approval: %s\n",
					e.msg);
			if (o->json) {
				char *j = wd_decision_json(d);
				puts(j);
				free(j);
				fflush(stdout);
			}
			fprintf(stderr, "warden: run: paused (%s): ", wd_decision_rule(d));
			cli_policy_text(stderr, wd_decision_reason(d));
			fprintf(stderr, "\nwarden: approve with: warden approve %s\n",
				wd_decision_approval_id(d));
			rc = CLI_EXIT_PAUSED;
			goto out;
		}
	} else if (wd_decision_kind(d) == WD_DECISION_DENY) {
		print_refusal(o, d);
		rc = CLI_EXIT_DENY;
		goto out;
	}

	/* Allowed: run exactly the words that were judged. */
	int n = 0;
	const char *const *words = wd_decision_argv(d, &n);
	if (wd_spec_set_argv(spec, n, words, &e) < 0) {
		rc = cli_fail("run", "%s", e.msg);
		goto out;
	}
	/* The policy's network.allow: egress through warden's proxy to those
	 * hosts only (on 80/443); without it the network stays off. */
	size_t nnet = 0;
	const char *const *net = wd_policy_network_allow(pol, &nnet);
	for (size_t i = 0; i < nnet; i++) {
		if (wd_spec_add_net_rule(spec, WD_NET_ALLOW, net[i], &e) < 0) {
			rc = cli_fail("run", "policy network.allow: %s", e.msg);
			goto out;
		}
	}
	if (nnet)
		wd_spec_set_net(spec, WD_NET_PROXY);
	*auditp = audit;
	*decp = d;
	audit = NULL;
	d = NULL;
	rc = -1;
out:
	wd_audit_close(audit);
	wd_decision_free(d);
	wd_request_free(req);
	wd_policy_free(pol);
	return rc;
}

void
cli_policy_after(wd_audit *audit, wd_decision *dec, const char *result_json)
{
	struct wd_err e = {0};
	if (audit && wd_audit_result(audit, dec, result_json, &e) < 0)
		fprintf(stderr, "warden: run: audit: %s\n", e.msg);
	wd_audit_close(audit);
	wd_decision_free(dec);
}

bool
cli_policy_active(const struct cli_policy_opts *o)
{
	return o->policy || o->command || o->audit || o->approve_tty || o->tool;
}

/* On warden's proxy thread: the main thread writes no audit event while a
 * run is in progress, so the handle is never used concurrently. */
static void
audit_net_event(const char *json, void *data)
{
	struct wd_err e = {0};
	if (wd_audit_event(data, "network", json, &e) < 0)
		fprintf(stderr, "warden: run: audit: %s\n", e.msg);
}

int
cli_policy_run(struct cli_policy_opts *o, wd_spec *spec, int argc, char **argv)
{
	struct wd_err e = {0};
	wd_audit *audit = NULL;
	wd_decision *dec = NULL;
	int rc = cli_policy_gate(o, spec, argc, argv, &audit, &dec);
	if (rc >= 0)
		return rc;
	/* every proxy and DNS decision is an audit event too */
	if (audit)
		wd_spec_set_event_handler(spec, audit_net_event, audit);
	wd_result *r = NULL;
	fflush(stdout);
	if (wd_run(spec, &r, &e) < 0) {
		char *j = NULL;
		if (asprintf(&j, "{\"error\":\"warden failed before or while running\"}") < 0)
			j = NULL;
		cli_policy_after(audit, dec, j);
		free(j);
		return cli_fail("run", "%s", e.msg);
	}
	int status = wd_result_status(r);
	char *j = wd_result_json(r);
	if (o->json)
		puts(j);
	else if (wd_result_timed_out(r))
		fprintf(stderr, "warden: run: timed out; the sandbox was killed\n");
	else if (wd_result_oom_killed(r))
		fprintf(stderr, "warden: run: out of memory; the sandbox was killed\n");
	cli_policy_after(audit, dec, j);
	free(j);
	wd_result_free(r);
	return status;
}
