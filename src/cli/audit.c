/* cli/audit: warden audit verify [--json] FILE */
#include "cli/policy_cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: warden audit verify [--json] FILE\n"
    "\n"
    "Check the hash chain of an audit log (and FILE.head): report the first broken\n"
    "line.  Exit status: 0 intact, 1 broken (edited, deleted, reordered or truncated\n"
    "events, or a line longer than 16 MiB), 125 the log or its head cannot be read\n"
    "or is not a regular file.\n"
    "\n"
    "  --json   one JSON object: {\"file\", \"intact\", \"report\"}\n";

enum { OPT_JSON = 256, OPT_HELP };

static const struct option long_opts[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

int
cli_audit(int argc, char **argv)
{
	struct wd_err e = {0};
	bool json = false;
	cli_json_errors(false);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc >= 2 && argv[1][0] == '-')
		return cli_fail("audit",
				"unknown option %s (usage: warden audit verify [--json] FILE)",
				cli_quote(argv[1]));
	if (argc < 2 || strcmp(argv[1], "verify"))
		return cli_fail(
		    "audit", "expected 'verify FILE' (usage: warden audit verify [--json] FILE)");
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			cli_json_errors(true); /* bad input in JSON too */
	/* the options after "verify" */
	int sargc = argc - 1;
	char **sargv = argv + 1;
	int c;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(sargc, sargv, "+", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			json = true;
			break;
		case OPT_HELP:
			fputs(usage_text, stdout);
			return 0;
		default:
			return cli_bad_option("audit verify", sargc, sargv, long_opts);
		}
	}
	if (optind + 1 != sargc)
		return cli_fail("audit",
				"verify: expected one FILE, got %d (usage: warden audit "
				"verify [--json] FILE)",
				sargc - optind);
	const char *path = sargv[optind];
	char *report = NULL;
	int rc = wd_audit_verify(path, &report, &e);
	if (rc < 0)
		return cli_fail("audit", "verify: %s", e.msg);
	if (json) {
		fputs("{\"file\":", stdout);
		cli_json_string(stdout, path);
		printf(",\"intact\":%s,\"report\":", rc == 0 ? "true" : "false");
		cli_json_string(stdout, report);
		fputs("}\n", stdout);
	} else {
		/* a report may quote a line of the log, which holds the model's
		 * argv and reasons: made visible, never sent to the terminal raw */
		char *vis = wd_esc_text(report, strlen(report), WD_ESC_LINES, 0);
		fputs(vis, stdout);
		putchar('\n');
		free(vis);
	}
	free(report);
	return rc;
}
