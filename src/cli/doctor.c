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
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: warden doctor [--json]\n"
			       "\n"
			       "Report which isolation levels this host can run (container, process,\n"
			       "gvisor) and why not, from real probes: user namespaces, seccomp,\n"
			       "Landlock, cgroups (a sandbox cgroup is created and removed),\n"
			       "overlayfs, idmapped mounts, the kernel configuration, runsc; then the\n"
			       "features that need root (cow sessions, --disk, a one-shot cow run, the\n"
			       "warm pool, limits): yes, or why not for the calling user.\n"
			       "\n"
			       "  --json   print one JSON object (levels, probes, features)\n"
			       "\n"
			       "Exit status: 0 when at least one level can run, 1 when none can,\n"
			       "125 bad input.\n");
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
