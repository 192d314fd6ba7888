/* cli/policy: warden policy show [--policy FILE] */
#include "cli/policy_cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: warden policy show [--policy FILE|preset:NAME]\n"
    "\n"
    "Print the effective policy (defaults filled in) as JSON, with its digest.\n"
    "Without --policy, the built-in default.  A bad document exits 125 with\n"
    "FILE:LINE:COLUMN.\n";

static const struct option long_opts[] = {
    {"policy", required_argument, NULL, 'p'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int
cli_policy(int argc, char **argv)
{
	const char *path = NULL;
	int c;
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc >= 2 && argv[1][0] == '-')
		return cli_fail("policy",
				"unknown option %s (usage: warden policy show [--policy "
				"FILE])",
				cli_quote(argv[1]));
	if (argc < 2 || strcmp(argv[1], "show"))
		return cli_fail("policy", "expected 'show' (usage: warden policy show [--policy "
					  "FILE])");
	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "p:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			path = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case ':':
			return cli_fail("policy", "option %s needs a value",
					cli_quote(argv[optind - 1]));
		default:
			return cli_fail("policy", "unknown option %s", cli_quote(argv[optind - 1]));
		}
	}
	if (optind != argc)
		return cli_fail("policy", "unexpected argument %s", cli_quote(argv[optind]));
	wd_policy *pol = NULL;
	int rc = cli_policy_load("policy", path, &pol);
	if (rc)
		return rc;
	char *s = wd_policy_json(pol);
	printf("%s\n", s);
	free(s);
	wd_policy_free(pol);
	return 0;
}
