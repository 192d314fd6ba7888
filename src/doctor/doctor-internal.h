/* doctor/doctor-internal: shared by doctor.c (the report), doctor-host.c
 * (cgroups, overlayfs, idmapped mounts, kernel config), doctor-pod.c and
 * gvisor_doctor.c.  Nothing else includes it.  The probe's shape and the
 * probes a backend runs (namespaces, seccomp, Landlock) are
 * supervise/probe.h's. */
#ifndef WD_DOCTOR_INTERNAL_H
#define WD_DOCTOR_INTERNAL_H

#include "util/util.h"
#include "supervise/probe.h"
#include "supervise/supervise.h"

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

/* "ok", "warn", "missing", indexed by enum status */
extern const char *const doctor_status_names[];
/* The report's rows, written once for the host's and the pod's doctor:
 * a probe as a member of the JSON report's "probes" object (its data
 * moved there; returns the row, owned by probes) or as a line of the
 * text report; the JSON report as text (root released). */
json_t *doctor_row_json(json_t *probes, struct probe *p);
/* Each level's answer in a report, into lv (at most max; returns how
 * many): its backend's own probe (cheap: runsc found, root, cgroups),
 * overruled for gvisor by the report's real gVisor trial (gvisor,
 * gvisor_ok), which has the last word. */
struct doctor_level {
	const char *name;
	enum wd_isolation level;
	struct backend_probe bp;
};
size_t doctor_levels(struct doctor_level *lv, size_t max, const struct probe *gvisor,
		     bool gvisor_ok);
void doctor_row_text(FILE *m, const struct probe *p);
char *doctor_json_text(json_t *root);

void doctor_probe_cgroup(struct probe *p);
void doctor_probe_overlay(struct probe *p, bool userns_ok);
void doctor_probe_idmap(struct probe *p, bool *root_ok);
void doctor_probe_kconfig(struct probe *p);
/* gvisor_doctor.c: runsc found, root, and a real sandbox per platform;
 * *ok when the default platform (ptrace) runs one. */
void doctor_probe_gvisor(struct probe *p, bool *ok);

#endif
