/* cli/cp: warden cp SRC DST, files in and out of a running session,
 * docker cp style (SESSION:PATH on one side, a host path on the other),
 * through wd_session_copy_in / _out. */
#include "cli/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char cp_usage[] =
    "usage: warden cp [OPTIONS] HOST_PATH SESSION:PATH\n"
    "       warden cp [OPTIONS] SESSION:PATH HOST_PATH\n"
    "\n"
    "Copy a regular file or a directory into or out of a running session.  PATH is\n"
    "relative to its workspace (or below /workspace); into a directory that exists,\n"
    "else as that name.  The session's side has the file tools' checks: nothing\n"
    "outside the workspace, no '..', no protected path (.git, .git/hooks,\n"
    ".vscode, the policy's workspace.protect), a link replaced, never written\n"
    "through; a cow session's copy lands in its change set (warden diff), and a copy\n"
    "out reads what the session sees.  No link is followed on the host either.\n"
    "Links and special files, files over 256 MiB, more than 1 GiB or 100,000\n"
    "entries: refused before anything is copied.  Set-id bits are dropped.\n"
    "A host path with ':' before its first '/': write it as ./NAME.\n"
    "\n"
    "      --audit FILE   append the copy (what, where, the outcome) to FILE\n"
    "      --json         print {\"files\": N, \"dirs\": N, \"bytes\": N}\n"
    "  -v, --verbose      log what warden does\n"
    "\n"
    "Exit status: 0 copied; 125 bad input, refused (the message names the path),\n"
    "the session is not running, or warden failed.\n";

enum { OPT_CP_AUDIT = 4000, OPT_CP_JSON, OPT_CP_HELP };

static const struct option cp_opts[] = {
    {"audit", required_argument, NULL, OPT_CP_AUDIT},
    {"json", no_argument, NULL, OPT_CP_JSON},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, OPT_CP_HELP},
    {NULL, 0, NULL, 0},
};

/* SESSION:PATH: a ':' before any '/', not at the start.  *colon: where. */
static bool
session_arg(const char *a, const char **colon)
{
	const char *c = strchr(a, ':');
	const char *s = strchr(a, '/');
	if (!c || c == a || (s && s < c) || a[0] == '.')
		return false;
	*colon = c;
	return true;
}

int
cli_cp(int argc, char **argv)
{
	const char *audit = NULL;
	bool json = false, verbose = false;
	int c;
	cli_opts_begin(argc, argv);
	while ((c = getopt_long(argc, argv, ":v", cp_opts, NULL)) != -1) {
		switch (c) {
		case OPT_CP_AUDIT:
			audit = optarg;
			break;
		case OPT_CP_JSON:
			json = true;
			break;
		case 'v':
			verbose = true;
			break;
		case OPT_CP_HELP:
			fputs(cp_usage, stdout);
			return 0;
		default:
			return cli_bad_option("cp", argc, argv, cp_opts);
		}
	}
	if (argc - optind != 2)
		return cli_fail("cp", "expected SRC and DST, one of them SESSION:PATH (usage: "
				      "warden cp HOST_PATH SESSION:PATH | SESSION:PATH HOST_PATH)");
	const char *src = argv[optind], *dst = argv[optind + 1], *cs = NULL, *cd = NULL;
	bool in_s = session_arg(src, &cs), in_d = session_arg(dst, &cd);
	if (in_s == in_d)
		return cli_fail("cp",
				in_s ? "both %s and %s name a session: one side is a host path"
				     : "neither %s nor %s names a session (SESSION:PATH; a host "
				       "path with ':' is written ./NAME)",
				cli_quote(src), cli_quote(dst));
	const char *sarg = in_s ? src : dst, *colon = in_s ? cs : cd;
	const char *host = in_s ? dst : src;
	if (!host[0])
		return cli_fail("cp", "an empty host path");
	char *ref = strndup(sarg, (size_t)(colon - sarg));
	const char *path = colon[1] ? colon + 1 : ".";
	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	struct wd_copy_stats st = {0};
	int rc = 0;
	if (wd_ctx_new(&ctx, &e) < 0) {
		rc = cli_fail("cp", "%s", e.msg);
		goto out;
	}
	wd_ctx_set_log_handler(ctx, cli_log_handler, NULL, verbose ? WD_LOG_DEBUG : WD_LOG_WARN);
	if (audit && wd_ctx_set_audit_file(ctx, audit, &e) < 0) {
		rc = cli_fail("cp", "--audit: %s", e.msg);
		goto out;
	}
	if ((in_d ? wd_session_copy_in(ctx, ref, host, path, &st, &e)
		  : wd_session_copy_out(ctx, ref, path, host, &st, &e)) < 0) {
		rc = cli_fail("cp", "%s", e.msg);
		goto out;
	}
	if (json)
		printf("{\"files\":%" PRIu64 ",\"dirs\":%" PRIu64 ",\"bytes\":%" PRIu64 "}\n",
		       st.files, st.dirs, st.bytes);
out:
	wd_ctx_free(ctx);
	free(ref);
	return rc;
}
