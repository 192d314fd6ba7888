#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
cli_doctor(int argc, char **argv)
{
	bool json = false, pod = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--pod"))
			pod = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf(
			    "usage: warden doctor [--pod] [--json]\n"
			    "\n"
			    "Report which isolation levels this host can run (container, process,\n"
			    "gvisor) and why not, from real probes: user namespaces, seccomp,\n"
			    "Landlock, cgroups (a sandbox cgroup is created and removed),\n"
			    "overlayfs, idmapped mounts, the kernel configuration, runsc; then "
			    "the\n"
			    "features that need root (cow sessions, --disk, a one-shot cow run, "
			    "the\n"
			    "warm pool, limits): yes, or why not for the calling user.\n"
			    "\n"
			    "  --pod    check this process's environment as a Kubernetes pod\n"
			    "           (docs/kubernetes.md): a user namespace of its own\n"
			    "           (hostUsers: false), CAP_SYS_ADMIN, a new /proc mountable\n"
			    "           (procMount: Unmasked), unshare and clone3 with namespace\n"
			    "           flags, and pivot_root, past the pod's seccomp profile, "
			    "cgroup\n"
			    "           delegation and the pod's own limits, Landlock, runsc; "
			    "each\n"
			    "           with what lacking it costs\n"
			    "  --json   print one JSON object (levels, probes, features)\n"
			    "\n"
			    "Exit status: 0 when at least one level can run (with --pod: when the\n"
			    "container level can run in this pod), 1 when not, 125 bad input.\n");
			return 0;
		} else
			return cli_fail("doctor", "unknown option '%s'", argv[i]);
	}
	unsigned ok = 0;
	char *report = pod ? wd_doctor_pod(json, &ok) : wd_doctor(json, &ok);
	fputs(report, stdout);
	free(report);
	if (pod)
		return (ok & (1u << WD_ISOLATION_CONTAINER)) ? 0 : 1;
	return ok ? 0 : 1;
}
