/* cli/audit: warden audit verify FILE */
#include "cli/policy_cli.h"

#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: warden audit verify FILE\n"
    "\n"
    "Check the hash chain of an audit log (and FILE.head): report the first broken\n"
    "line.  Exit status: 0 intact, 1 broken (edited, deleted, reordered or truncated\n"
    "events, or a line longer than 16 MiB), 125 the log or its head cannot be read\n"
    "or is not a regular file.\n";

int
cli_audit(int argc, char **argv)
{
	struct wd_err e = {0};
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "verify"))
		return cli_fail("audit",
				"expected 'verify FILE' (usage: warden audit verify FILE)");
	if (argc != 3)
		return cli_fail("audit", "verify: expected one FILE");
	char *report = NULL;
	int rc = wd_audit_verify(argv[2], &report, &e);
	if (rc < 0)
		return cli_fail("audit", "verify: %s", e.msg);
	/* a report may quote a line of the log, which holds the model's
	 * argv and reasons: made visible, never sent to the terminal raw */
	char *vis = wd_esc_text(report, strlen(report), WD_ESC_LINES, 0);
	fputs(vis, stdout);
	putchar('\n');
	free(vis);
	free(report);
	return rc;
}
