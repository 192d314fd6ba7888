/* cli/approve: warden approve ID [--ttl SECONDS] [--audit FILE] [--json]
 * Record a single-use approval for a paused command. */
#include "cli/policy_cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: warden approve ID [--ttl SECONDS] [--audit FILE] [--json]\n"
    "\n"
    "Approve, once, the paused command with this id (or a unique prefix of 8+ digits).\n"
    "The approval covers exactly that argv, working directory, environment, workspace\n"
    "and policy; re-running the identical command consumes it.  It expires after\n"
    "--ttl seconds (default: the policy's approvals.ttl, 600).\n"
    "\n"
    "  --ttl SECONDS   lifetime of the approval (1 to 604800)\n"
    "  --audit FILE    log approval.granted here (default: the log of the pause)\n"
    "  --json          the grant as one JSON object: id, argv, cwd, workspace,\n"
    "                  policy, policy_source, rule, reason, ttl, granted, expires\n";

enum { OPT_TTL = 256, OPT_AUDIT, OPT_JSON, OPT_HELP };

static const struct option long_opts[] = {
    {"ttl", required_argument, NULL, OPT_TTL},
    {"audit", required_argument, NULL, OPT_AUDIT},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

int
cli_approve(int argc, char **argv)
{
	const char *audit_path = NULL;
	uint64_t ttl = 0;
	struct wd_err e = {0};
	bool json = false;
	int c;

	cli_opts_begin(argc, argv);
	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_TTL:
			if (wd_parse_u64(optarg, &ttl) < 0 || ttl < 1 || ttl > 604800)
				return cli_fail(
				    "approve",
				    "--ttl: invalid value '%s': expected seconds from 1 "
				    "to 604800",
				    optarg);
			break;
		case OPT_AUDIT:
			audit_path = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return 0;
		default:
			return cli_bad_option("approve", argc, argv, long_opts);
		}
	}
	if (optind + 1 != argc)
		return cli_fail("approve", "expected one approval id (usage: warden approve ID "
					   "[--ttl SECONDS] [--audit FILE] [--json])");
	wd_audit *audit = NULL;
	if (audit_path && wd_audit_open(audit_path, &audit, &e) < 0)
		return cli_fail("approve", "--audit: %s", e.msg);
	char *summary = NULL;
	int rc = json ? wd_approval_grant_json(argv[optind], (unsigned)ttl, audit, &summary, &e)
		      : wd_approval_grant(argv[optind], (unsigned)ttl, audit, &summary, &e);
	wd_audit_close(audit);
	if (rc < 0)
		return cli_fail("approve", "%s", e.msg);
	printf("%s\n", summary);
	free(summary);
	return 0;
}
