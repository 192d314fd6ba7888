/* cli/check: warden check [OPTIONS] (-- PROG ARGS | --command STRING)
 * Print the policy decision for a command without running anything. */
#include "cli/policy_cli.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: warden check [OPTIONS] (-- PROGRAM [ARGS...] | --command STRING)\n"
    "       warden check [OPTIONS] --tool NAME\n"
    "\n"
    "Print the policy's decision for a command (or the route of a tool); run nothing.\n"
    "\n"
    "  -p, --policy FILE       policy document, or preset:coding|python|node\n"
    "                          (default: the built-in policy)\n"
    "  -w, --workspace DIR     workspace the paths are judged against (default: .)\n"
    "  -c, --command STRING    the command as one string (split without a shell)\n"
    "      --cwd DIR           working directory inside the workspace (default: .)\n"
    "      --setenv NAME=VALUE environment passed to the command (part of the approval id)\n"
    "      --image NAME        judge as `warden run --image NAME` runs: programs looked\n"
    "                          up in the image's /usr, its variables in the environment\n"
    "                          (default: the policy's image for the tool or sandbox.image,\n"
    "                          else the host's)\n"
    "      --session NAME      judge as `warden exec NAME` does: the session's image,\n"
    "                          environment and workspace (not with --image, -w)\n"
    "      --tool NAME         print the tool's class and resource profile\n"
    "      --audit FILE        also append the decision to this audit log\n"
    "      --json              print one JSON object\n"
    "\n"
    "Exit status: 0 allow, 126 deny, 123 pause (needs `warden approve ID`),\n"
    "125 bad input (the message names the option or FILE:LINE:COLUMN).\n";

static void
print_argv(FILE *f, const wd_decision *d)
{
	int argc = 0;
	const char *const *argv = wd_decision_argv(d, &argc);
	for (int i = 0; i < argc; i++) {
		if (i)
			fputc(' ', f);
		cli_policy_word(f, argv[i]);
	}
}

void
cli_policy_print(FILE *f, const wd_decision *d, bool approved)
{
	static const char *names[] = {"allow", "deny", "pause"};
	enum wd_decision_kind k = wd_decision_kind(d);
	fprintf(f, "%s: ", names[k]);
	cli_policy_text(f, wd_decision_reason(d));
	fputc('\n', f);
	fprintf(f, "  rule:     %s\n", wd_decision_rule(d));
	int argc = 0;
	wd_decision_argv(d, &argc);
	if (argc) {
		fprintf(f, "  argv:     ");
		print_argv(f, d);
		fputc('\n', f);
	}
	if (k == WD_DECISION_PAUSE) {
		fprintf(f, "  approval: %s%s\n", wd_decision_approval_id(d),
			approved ? " (approved: the next run of this exact command consumes it)"
				 : "");
		if (!approved)
			fprintf(f, "  approve:  warden approve %s\n", wd_decision_approval_id(d));
	}
	if (wd_decision_advice(d)[0] && !(k == WD_DECISION_PAUSE && approved))
		fprintf(f, "  advice:   %s\n", wd_decision_advice(d));
}

static const char *
class_name(enum wd_tool_class c)
{
	return c == WD_TOOL_SANDBOX ? "sandbox" : c == WD_TOOL_DIRECT ? "direct" : "blocked";
}

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0: no overlong
 * forms, no surrogates, nothing above U+10FFFF (RFC 3629). */
static size_t
utf8_len(const unsigned char *p)
{
	unsigned char c = p[0];
	size_t n;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1fu;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0fu;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07u;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* s as a JSON string, escaped as jansson escapes (the CLI printed this
 * with jansson before): the two-character escapes, \uXXXX for other
 * control characters, UTF-8 as it is.  A byte that is not valid UTF-8 (a
 * tool name is the user's) is written as \udcXX, as warden's own JSON
 * writer does (Python's surrogateescape): the byte, visibly. */
static void
json_str(FILE *f, const char *s)
{
	static const char esc[] = "\"\\\b\f\n\r\t", letter[] = "\"\\bfnrt";
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);
		const char *e = strchr(esc, *p);
		if (n == 0) {
			fprintf(f, "\\udc%02x", *p++);
			continue;
		}
		if (e)
			fprintf(f, "\\%c", letter[e - esc]);
		else if (*p < 0x20)
			fprintf(f, "\\u%04X", *p);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

/* A real number as jansson writes one: %.17g, ".0" added to an integer,
 * no '+' and no leading zeros in the exponent. */
static void
json_real(FILE *f, double v)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%.17g", v);
	if (n < 0 || (size_t)n >= sizeof(buf) - 2)
		return;
	if (!strchr(buf, '.') && !strchr(buf, 'e'))
		memcpy(buf + n, ".0", 3);
	char *e = strchr(buf, 'e');
	if (e) {
		char *digits = e + 1 + (e[1] == '-' || e[1] == '+');
		char *keep = digits;
		while (*keep == '0' && keep[1])
			keep++;
		memmove(e[1] == '+' ? e + 1 : digits, keep, strlen(keep) + 1);
	}
	fputs(buf, f);
}

/* {"tool":...,"class":...,"defined":...[,"profile":...,"timeout_ms":...,
 * "memory":...,"cpu":...,"output":...]}, one line. */
static void
route_json(const char *tool, enum wd_tool_class k, bool defined, const char *profile,
	   const struct wd_limits *lim)
{
	fputs("{\"tool\":", stdout);
	json_str(stdout, tool);
	printf(",\"class\":\"%s\",\"defined\":%s", class_name(k), defined ? "true" : "false");
	if (profile) {
		fputs(",\"profile\":", stdout);
		json_str(stdout, profile);
		printf(",\"timeout_ms\":%lld,\"memory\":%lld,\"cpu\":", (long long)lim->timeout_ms,
		       (long long)lim->memory_bytes);
		json_real(stdout, (double)lim->cpu_millionths / 1e6);
		printf(",\"output\":%lld", (long long)lim->output_limit);
	}
	fputs("}\n", stdout);
}

static int
route(const wd_policy *pol, const char *tool, bool json)
{
	enum wd_tool_class k;
	const char *profile = NULL;
	struct wd_limits lim;
	struct wd_err e = {0};
	int rc = wd_policy_route(pol, tool, &k, &profile, &lim, &e);
	if (json) {
		route_json(tool, k, rc == 0, profile, &lim);
	} else if (rc < 0) {
		printf("tool %s: blocked (the policy does not define it; undefined tools never "
		       "run)\n",
		       tool);
	} else {
		printf("tool %s: %s", tool, class_name(k));
		if (profile)
			printf(
			    ", profile %s (timeout %.3g s, memory %llu MiB, cpu %.2f, output %llu "
			    "KiB)",
			    profile, (double)lim.timeout_ms / 1000.0,
			    (unsigned long long)(lim.memory_bytes >> 20),
			    (double)lim.cpu_millionths / 1e6,
			    (unsigned long long)(lim.output_limit >> 10));
		else if (k == WD_TOOL_DIRECT)
			printf(" (runs in warden itself, no jail)");
		printf("\n");
	}
	return rc == 0 && k != WD_TOOL_BLOCKED ? CLI_EXIT_ALLOW : CLI_EXIT_DENY;
}

/* No --image: the image the run would get from the policy, as its
 * policy stage chooses one (the tool's tools.NAME.image, else
 * sandbox.image): a check on the host's /usr would report another
 * decision and another approval id than the run's.  0 or an exit status. */
static int
policy_image(const wd_policy *pol, const char *tool, wd_spec *spec)
{
	struct wd_policy_sandbox ps;
	wd_policy_sandbox(pol, &ps);
	const char *timg = tool ? wd_policy_tool_image(pol, tool) : NULL;
	const char *ref = timg ? timg : ps.image;
	struct wd_err e = {0};
	if (ref && wd_spec_set_image(spec, ref, &e) < 0) {
		if (timg)
			return cli_fail("check", "policy tools.%s.image: %s", tool, e.msg);
		return cli_fail("check", "policy sandbox.image: %s", e.msg);
	}
	return 0;
}

/* --session NAME: the session's side of the request.  0 or an exit status. */
static int
session_request(const char *name, wd_request *req)
{
	struct wd_err e = {0};
	wd_ctx *ctx = NULL;
	int rc = wd_ctx_new(&ctx, &e);
	if (rc == 0)
		rc = wd_session_request(ctx, name, req, &e);
	wd_ctx_free(ctx);
	return rc < 0 ? cli_fail("check", "--session: %s", e.msg) : 0;
}

/* An image's digest (wd_image_inspect), into d; 0 or -1. */
static int
image_digest(wd_ctx *ctx, const char *ref, char d[65])
{
	char *js = NULL;
	struct wd_err e = {0};
	if (wd_image_inspect(ctx, ref, &js, &e) < 0)
		return -1;
	/* the library's own object: "digest" then 64 hex digits (the
	 * image's names and files cannot hold a quote unescaped) */
	const char *k = strstr(js, "\"digest\"");
	if (k) {
		k += strlen("\"digest\"");
		k += strspn(k, " \t\n:");
	}
	int rc = k && *k == '"' && strspn(k + 1, "0123456789abcdef") == 64 && k[65] == '"' ? 0 : -1;
	if (rc == 0)
		snprintf(d, 65, "%.64s", k + 1);
	free(js);
	return rc;
}

/* --image with a tool that has its own image: the run refuses the pair
 * unless they are one image (the decision would be made in one /usr and
 * the program run from another's), so check refuses it too, rather than
 * report a decision no run makes.  0 or an exit status. */
static int
tool_image_check(const wd_policy *pol, const char *tool, const char *image)
{
	const char *timg = tool ? wd_policy_tool_image(pol, tool) : NULL;
	if (!timg)
		return 0;
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	char a[65] = "", b[65] = "";
	bool same = wd_ctx_new(&ctx, &e) == 0 && image_digest(ctx, timg, a) == 0 &&
		    image_digest(ctx, image, b) == 0 && !strcmp(a, b);
	wd_ctx_free(ctx);
	if (same)
		return 0;
	return cli_fail("check",
			"--image: tool '%s' runs in image %s (the policy's tools.%s.image), not in "
			"%s; warden run refuses the pair",
			tool, timg, tool, image);
}

enum { OPT_CWD = 256, OPT_SETENV, OPT_TOOL, OPT_AUDIT, OPT_JSON, OPT_HELP, OPT_IMAGE, OPT_SESSION };

static const struct option long_opts[] = {
    {"policy", required_argument, NULL, 'p'},
    {"workspace", required_argument, NULL, 'w'},
    {"command", required_argument, NULL, 'c'},
    {"cwd", required_argument, NULL, OPT_CWD},
    {"setenv", required_argument, NULL, OPT_SETENV},
    {"tool", required_argument, NULL, OPT_TOOL},
    {"audit", required_argument, NULL, OPT_AUDIT},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, OPT_HELP},
    {"image", required_argument, NULL, OPT_IMAGE},
    {"session", required_argument, NULL, OPT_SESSION},
    {NULL, 0, NULL, 0},
};

int
cli_check(int argc, char **argv)
{
	const char *policy = NULL, *workspace = NULL, *command = NULL, *cwd = NULL, *tool = NULL,
		   *audit_path = NULL, *session = NULL;
	bool json = false;
	struct wd_err e = {0};
	int c, rc = 0;
	wd_request *req = wd_request_new();
	/* what the run's sandbox would give the command: its image and its
	 * environment, in the order the options gave them (wd_request_set_spec) */
	wd_spec *spec = wd_spec_new();
	const char *image = NULL;
	wd_policy *pol = NULL;
	wd_decision *d = NULL;
	wd_audit *audit = NULL;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:w:c:", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy = optarg;
			break;
		case 'w':
			workspace = optarg;
			break;
		case 'c':
			command = optarg;
			break;
		case OPT_CWD:
			cwd = optarg;
			break;
		case OPT_TOOL:
			tool = optarg;
			break;
		case OPT_AUDIT:
			audit_path = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_SETENV: {
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg) {
				rc = cli_fail("check",
					      "--setenv: invalid value '%s': expected "
					      "NAME=VALUE",
					      optarg);
				goto out;
			}
			char *n = strndup(optarg, (size_t)(eq - optarg));
			int r2 = wd_spec_setenv(spec, n, eq + 1, &e);
			free(n);
			if (r2 < 0) {
				rc = cli_fail("check", "--setenv: %s", e.msg);
				goto out;
			}
			break;
		}
		case OPT_IMAGE:
			/* resolved as warden run resolves it (same store, same
			 * names): a bad one is refused here, before anything is
			 * decided or recorded */
			if (wd_spec_set_image(spec, optarg, &e) < 0) {
				rc = cli_fail("check", "--image: %s", e.msg);
				goto out;
			}
			image = optarg;
			break;
		case OPT_SESSION:
			session = optarg;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			goto out;
		case ':':
			rc = cli_fail("check", "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			rc = cli_fail("check", "unknown option '%s' (see warden check --help)",
				      argv[optind - 1]);
			goto out;
		}
	}
	bool have_argv = optind < argc;
	if (command && have_argv) {
		rc = cli_fail("check", "--command and a program after -- are exclusive");
		goto out;
	}
	if (!command && !have_argv && !tool) {
		rc = cli_fail("check", "no command (usage: warden check [OPTIONS] -- PROGRAM "
				       "[ARGS...] | --command STRING | --tool NAME)");
		goto out;
	}
	/* the session's own image and workspace are what its exec judges in:
	 * another given here would report what no exec of it does */
	if (session && (image || workspace)) {
		rc = cli_fail("check", "--session and %s are exclusive (the session has its own)",
			      image ? "--image" : "--workspace");
		goto out;
	}
	if ((rc = cli_policy_load("check", policy, &pol)))
		goto out;
	if (image && (rc = tool_image_check(pol, tool, image)))
		goto out;
	if (tool && !command && !have_argv) {
		rc = route(pol, tool, json);
		goto out;
	}
	if (tool && (rc = route(pol, tool, json)) != CLI_EXIT_ALLOW)
		goto out;
	if (command ? wd_request_set_command(req, command, &e) < 0
		    : wd_request_set_argv(req, argc - optind, (const char *const *)(argv + optind),
					  &e) < 0) {
		rc = cli_fail("check", "%s", e.msg);
		goto out;
	}
	if (session) {
		if ((rc = session_request(session, req)))
			goto out;
	} else if (wd_request_set_workspace(req, workspace ? workspace : ".", &e) < 0) {
		rc = cli_fail("check", "--workspace: %s", e.msg);
		goto out;
	}
	if (cwd && wd_request_set_cwd(req, cwd, &e) < 0) {
		rc = cli_fail("check", "--cwd: %s", e.msg);
		goto out;
	}
	if (!image && !session && (rc = policy_image(pol, tool, spec)))
		goto out;
	/* with --session: the session's variables first, then --setenv, as
	 * exec's own --setenv follow the session's */
	if (wd_request_set_spec(req, spec, &e) < 0) {
		rc = cli_fail("check", "%s", e.msg);
		goto out;
	}
	if (wd_policy_decide(pol, req, &d, &e) < 0) {
		rc = cli_fail("check", "%s", e.msg);
		goto out;
	}
	if (audit_path) {
		if (wd_audit_open(audit_path, &audit, &e) < 0 ||
		    wd_audit_decision(audit, req, d, &e) < 0) {
			rc = cli_fail("check", "--audit: %s", e.msg);
			goto out;
		}
	}
	bool approved = false;
	if (wd_decision_kind(d) == WD_DECISION_PAUSE) {
		approved = wd_approval_recorded(d);
		/* Record what is waiting, so `warden approve ID` can show it. */
		if (!approved &&
		    wd_approval_pending(
			pol, req, d, audit_path ? audit_path : wd_policy_audit_path(pol), &e) < 0)
			fprintf(stderr, "warden: check: cannot record the pending approval: %s\n",
				e.msg);
	}
	if (json) {
		char *j = wd_decision_json(d);
		/* splice "approved" into the object */
		size_t n = strlen(j);
		if (n && j[n - 1] == '}')
			j[n - 1] = '\0';
		printf("%s,\"approved\":%s}\n", j, approved ? "true" : "false");
		free(j);
	} else {
		cli_policy_print(stdout, d, approved);
	}
	switch (wd_decision_kind(d)) {
	case WD_DECISION_ALLOW:
		rc = CLI_EXIT_ALLOW;
		break;
	case WD_DECISION_DENY:
		rc = CLI_EXIT_DENY;
		break;
	case WD_DECISION_PAUSE:
		rc = approved ? CLI_EXIT_ALLOW : CLI_EXIT_PAUSED;
		break;
	}
out:
	wd_audit_close(audit);
	wd_decision_free(d);
	wd_policy_free(pol);
	wd_request_free(req);
	wd_spec_free(spec);
	return rc;
}
