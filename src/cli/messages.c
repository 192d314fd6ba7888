/* cli/messages: how the command line talks about bad input: one message
 * naming the option and the value (quoted, escaped, cut), a missing value
 * told apart from an unknown option, and Docker's spellings pointed at
 * warden's own. */
#include "cli/cli.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool json_errors;

void
cli_json_errors(bool on)
{
	json_errors = on;
}

void
cli_opts_begin(int argc, char **argv)
{
	cli_json_errors(false);
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			cli_json_errors(true);
	opterr = 0;
	optind = 0; /* 0: glibc reinitialises all of getopt's state */
}

/* A JSON string of s (ASCII, control characters escaped). */
void
cli_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

int
cli_fail(const char *sub, const char *fmt, ...)
{
	char raw[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* Whatever a message quotes (a path, a library's message that names
	 * one), no control byte from it reaches the terminal: an escape
	 * sequence in a value could recolour, move or retitle it, a bidi
	 * control reorder it (util/escape.h). */
	char *msg = wd_esc_text(raw, strlen(raw), 0, 0);
	fprintf(stderr, "warden: %s%s%s\n", sub ? sub : "", sub ? ": " : "", msg);
	if (json_errors) {
		/* --json holds for every outcome: bad input is an object too */
		printf("{\"status\":%d,\"error\":", CLI_EXIT_FAILURE);
		cli_json_string(stdout, msg);
		printf("}\n");
		fflush(stdout);
	}
	free(msg);
	return CLI_EXIT_FAILURE;
}

void
cli_log_handler(int level, const char *func, const char *msg, void *data)
{
	static const char *names[] = {"error", "warning", "info", "debug", "trace"};
	(void)data;
	/* a log line can name what the sandbox chose (a path, an argv at
	 * DEBUG): made visible, as every line a human reads */
	char *shown = wd_esc_text(msg, strlen(msg), 0, 0);
	if (level >= WD_LOG_DEBUG)
		fprintf(stderr, "warden: %s: %s: %s\n", names[level], func, shown);
	else
		fprintf(stderr, "warden: %s: %s\n", names[level], shown);
	free(shown);
}

const char *
cli_quote(const char *value)
{
	/* 80 bytes kept, each shown as at most 8 ("<U+202E>" for 3) */
	static char bufs[4][80 * 8 + 64];
	static int next;
	char *b = bufs[next++ % 4];
	size_t len = value ? strlen(value) : 0;
	const size_t keep = 80;
	/* an escape sequence in a value must not reach the terminal */
	char *shown = wd_esc_text(value ? value : "", len < keep ? len : keep, WD_ESC_WORD, 0);
	if (len > keep)
		snprintf(b, sizeof(bufs[0]), "%s... (%zu bytes)", shown, len);
	else
		snprintf(b, sizeof(bufs[0]), "%s", shown);
	free(shown);
	return b;
}

/* The element of argv that holds the short option c of a cluster. */
static const char *
cluster_of(int argc, char **argv, int c)
{
	for (int i = optind < argc ? optind : argc - 1; i > 0; i--)
		if (argv[i][0] == '-' && argv[i][1] != '-' && strchr(argv[i] + 1, c))
			return argv[i];
	return "";
}

int
cli_bad_option(const char *sub, int argc, char **argv, const struct option *opts)
{
	const char *last = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	bool long_opt = !strncmp(last, "--", 2) || optopt > 255;
	if (optopt && !long_opt) {
		const char *in = cluster_of(argc, argv, optopt);
		/* the option letter as typed, escaped like any value (the fuzz
		 * target cli_options found a control byte echoed raw) */
		char opt[3] = {'-', (char)optopt, '\0'};
		const char *shown = cli_quote(opt);
		bool alone = in[0] && !in[2];
		/* getopt returns ':' for a missing value when the option string
		 * starts with ':'; else '?' with optopt set: tell them apart by
		 * whether the option is known at all */
		const char *known = strchr("w:vp:c:", optopt);
		if (known && known[1] == ':')
			return cli_fail(sub, "option %s needs a value", shown);
		if (alone)
			return cli_fail(sub, "unknown option %s (see warden %s --help)", shown,
					sub);
		return cli_fail(sub, "unknown option %s in %s (see warden %s --help)", shown,
				cli_quote(in), sub);
	}
	const char *arg = argv[optind - 1];
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	for (const struct option *o = opts; o && o->name; o++) {
		if (strlen(o->name) + 2 == n && !strncmp(arg + 2, o->name, n - 2)) {
			if (o->has_arg == required_argument)
				return cli_fail(sub, "option '--%s' needs a value", o->name);
			return cli_fail(sub, "option '--%s' takes no value", o->name);
		}
	}
	return cli_fail(sub, "unknown option %s (see warden %s --help)", cli_quote(arg), sub);
}

bool
cli_looks_like_option(const char *value, const struct option *opts)
{
	if (!strcmp(value, "--"))
		return true;
	if (strncmp(value, "--", 2))
		return false;
	size_t n = strcspn(value + 2, "=");
	for (const struct option *o = opts; o && o->name; o++)
		if (strlen(o->name) == n && !strncmp(value + 2, o->name, n))
			return true;
	return false;
}

/* What Docker users type, and what warden calls it. */
static const struct {
	const char *docker;
	const char *hint;
} docker[] = {
    {"-e", "--setenv NAME=VALUE (or --pass-env NAME)"},
    {"--env", "--setenv NAME=VALUE (or --pass-env NAME)"},
    {"--env-file", "--setenv NAME=VALUE for each variable"},
    {"--volume", "--bind SRC:DST (or --ro-bind SRC:DST)"},
    {"--mount", "--bind SRC:DST (or --ro-bind SRC:DST)"},
    {"--network", "--net none|allow (with --allow-host RULE)"},
    {"--net=host", "--net allow with --allow-host RULE (the host's network is never shared)"},
    {"--pids-limit", "--pids N"},
    {"-m", "--memory SIZE"},
    {"--user", "nothing: commands always run as uid 1000 (sandbox), never root"},
    {"-u", "nothing: commands always run as uid 1000 (sandbox), never root"},
    {"--read-only", "nothing: the root is always read-only"},
    {"--rm", "nothing: every sandbox is removed when it ends"},
    {"-it", "--stdin (a terminal is relayed)"},
    {"-i", "--stdin"},
    {"--interactive", "--stdin"},
    {"--workdir", "--workspace DIR"},
    {"--privileged", "nothing: there is no privileged mode"},
    {"--cap-add", "nothing: every capability is dropped"},
    {"--stop-timeout", "--timeout SECONDS"},
};

int
cli_docker_hints(const char *sub, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--") || a[0] != '-')
			return 0; /* the program starts here */
		/* -v SRC:DST: warden's -v is --verbose, Docker's a volume */
		if (!strcmp(a, "-v") && i + 1 < argc && strchr(argv[i + 1], ':') &&
		    argv[i + 1][0] != '-')
			return cli_fail(sub,
					"-v is --verbose here; did you mean --bind %s (or "
					"--ro-bind)?",
					cli_quote(argv[i + 1]));
		for (size_t k = 0; k < sizeof(docker) / sizeof(docker[0]); k++) {
			size_t n = strlen(docker[k].docker);
			if (!strncmp(a, docker[k].docker, n) && (a[n] == '\0' || a[n] == '='))
				return cli_fail(sub, "unknown option %s (Docker's); warden's: %s",
						cli_quote(docker[k].docker), docker[k].hint);
		}
		/* options of ours that take a value: skip the value */
		static const char *const takes[] = {"-w", "-p", "-c", NULL};
		for (size_t k = 0; takes[k]; k++)
			if (!strcmp(a, takes[k]))
				i++;
		if (!strncmp(a, "--", 2) && !strchr(a, '=') && i + 1 < argc) {
			static const char *const flags[] = {
			    "--stdin",	     "--json",		"--verbose",
			    "--help",	     "--tls-intercept", "--print-plan",
			    "--best-effort", "--reproducible",	NULL};
			bool flag = false;
			for (size_t k = 0; flags[k] && !flag; k++)
				flag = !strcmp(a, flags[k]);
			if (!flag)
				i++;
		}
	}
	return 0;
}

void
cli_exec_failed(const char *sub, const wd_result *r, const char *prog, const char *cwd)
{
	const char *step = wd_result_exec_step(r);
	int e = wd_result_exec_errno(r);
	if (step && strstr(step, "working directory"))
		fprintf(stderr, "warden: %s: working directory %s: %s\n", sub,
			cli_quote(cwd ? cwd : "."), strerror(e));
	else if (step)
		fprintf(stderr, "warden: %s: %s did not start (step %s): %s\n", sub,
			cli_quote(prog), step, strerror(e));
	else
		fprintf(stderr, "warden: %s: cannot execute %s: %s\n", sub, cli_quote(prog),
			strerror(e));
}

void
cli_net_refusals(const char *sub, const wd_result *r)
{
	/* the lines are escaped by the library (the host is the sandbox's) */
	const char *line;
	for (size_t i = 0; (line = wd_result_net_refusal(r, i)); i++)
		fprintf(stderr, "warden: %s: network: %s\n", sub, line);
}

void
cli_audit_note(const char *sub, const wd_result *r, const char *path)
{
	/* the human learns which stage the record shows: an explicit argv
	 * with --audit is recorded, not judged (README, "Honesty about the
	 * policy stage") */
	const char *pol = wd_result_policy(r);
	bool on = pol && pol[0] && strcmp(pol, "off") != 0;
	fprintf(stderr, "warden: %s: audited to %s; policy stage %s%s\n", sub, cli_quote(path),
		on ? "on" : "off",
		on ? "" : " (an explicit argv is recorded, not judged; --policy judges it)");
}
