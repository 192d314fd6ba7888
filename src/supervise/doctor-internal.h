/* supervise/doctor-internal: shared by doctor.c (namespaces, seccomp,
 * Landlock, the report) and doctor-host.c (cgroups, overlayfs, idmapped
 * mounts, kernel config).  Nothing else includes it. */
#ifndef WD_SUPERVISE_DOCTOR_INTERNAL_H
#define WD_SUPERVISE_DOCTOR_INTERNAL_H

#include "util/util.h"
#include "supervise/supervise.h"

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

enum status { ST_OK, ST_WARN, ST_MISSING };

struct probe {
	const char *name;
	enum status st;
	char detail[768];
	json_t *data; /* structured fields for --json */
};

/* A probe child reports through shared memory: fixed slots, no pipes to
 * frame, nothing to parse. */
struct child_out {
	int err[16]; /* errno per step, 0 = worked */
	long val[4];
};

/* Append to a probe's one-line detail. */
void doctor_detail(struct probe *p, const char *fmt, ...) WD_PRINTF(2, 3);
/* Lower a probe's status to st if st is worse. */
void doctor_worsen(struct probe *p, enum status st);
/* "EPERM" for EPERM, "ok" for 0. */
const char *doctor_errname(int e);
/* Run fn(out, arg) in a forked child and wait up to 10 s.  Returns 0 when
 * the child exited normally (its results are in *out), else -1. */
int doctor_run_child(void (*fn)(struct child_out *, void *), void *arg, struct child_out *out);
int doctor_write_file(const char *path, const char *s);
/* In a fresh user namespace: map uid/gid to themselves (0 or -errno). */
int doctor_map_self(uid_t uid, gid_t gid);

struct backend_probe;
/* The probes a level needs (namespaces for container, seccomp for both):
 * ok, or why not.  For struct backend_ops.probe. */
void doctor_level_probe(enum wd_isolation level, struct backend_probe *out);

/* doctor.c: the namespaces a sandbox needs (*container_ok: the container
 * level's), warden's seccomp program loaded and seen refusing, Landlock
 * applied and seen refusing (*abi_out: its ABI, 0 when not enforced). */
void doctor_probe_userns(struct probe *p, bool *container_ok);
void doctor_probe_seccomp(struct probe *p, bool *ok);
void doctor_probe_landlock(struct probe *p, int *abi_out);
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
