/* supervise/probe: the real probes a backend's probe operation runs
 * (probe.c), and the shapes `warden doctor` (src/doctor/) reports them in:
 * a probe's status, one-line detail and JSON fields, and the forked child
 * that tries a kernel feature without touching the caller's state. */
#ifndef WD_SUPERVISE_PROBE_H
#define WD_SUPERVISE_PROBE_H

#include "util/util.h"
#include "supervise/supervise.h"

#include <jansson.h>
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

/* The namespaces a sandbox needs (*container_ok: the container level's),
 * warden's seccomp program loaded and seen refusing, Landlock applied and
 * seen refusing (*abi_out: its ABI, 0 when not enforced). */
void doctor_probe_userns(struct probe *p, bool *container_ok);
void doctor_probe_seccomp(struct probe *p, bool *ok);
void doctor_probe_landlock(struct probe *p, int *abi_out);

#endif
