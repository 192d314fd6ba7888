#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
cli_doctor(int argc, char **argv)
{
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--help")) {
			printf("usage: warden doctor [--json]\n");
			return 0;
		} else
			return cli_fail("doctor", "unknown option '%s'", argv[i]);
	}
	unsigned ok = 0;
	char *report = wd_doctor(json, &ok);
	fputs(report, stdout);
	free(report);
	return ok ? 0 : 1;
}
