/* doctor/doctor: `warden doctor`, which isolation levels this host can run,
 * and why not: the report.
 *
 * Every answer comes from a probe that does the real thing, in a forked
 * child where it changes process state: create the namespaces and write a
 * uid map, load warden's own seccomp program and watch a refused call fail,
 * apply a Landlock domain and watch a write fail, mount an overlay inside a
 * user+mount namespace, build an idmapped mount.  Kernel version numbers
 * and config files are reported as context, never used as the answer: a
 * distribution can backport a feature or switch it off with a sysctl, an
 * LSM (AppArmor's userns restriction) or a boot parameter (lsm=).
 *
 * Levels (docs/isolation.md):
 *   container  user namespace with a uid map, mount + pid + net namespaces
 *              (loopback can be brought up), seccomp;
 *   process    seccomp; Landlock strongly recommended (reported);
 *   gvisor     runsc, root, cgroups, and a real gVisor sandbox running
 *              /bin/true on the ptrace platform (kvm tried and reported).
 * cgroups, overlayfs and idmapped mounts do not gate a level; their lack is
 * reported as a warning naming what it costs.
 *
 * The probes a backend runs itself (namespaces, seccomp, Landlock) are
 * supervise/probe.c's; this module is above the backends: it asks each
 * level's table (backend_for) and adds the host's facts (doctor-host.c),
 * the gVisor trial (gvisor_doctor.c) and the pod's view (doctor-pod.c). */
#include "doctor/doctor-internal.h"
#include "supervise/supervise.h"
#include "util/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const doctor_status_names[] = {"ok", "warn", "missing"};

size_t
doctor_levels(struct doctor_level *lv, size_t max, const struct probe *gvisor, bool gvisor_ok)
{
	size_t n = 0;
	for (int l = 0; n < max; l++) {
		const struct backend_ops *ops = backend_for((enum wd_isolation)l);
		if (!ops)
			break;
		struct backend_probe *bp = &lv[n].bp;
		lv[n].name = ops->name;
		lv[n].level = (enum wd_isolation)l;
		ops->probe(bp);
		if (ops->level == WD_ISOLATION_GVISOR && bp->ok && !gvisor_ok) {
			bp->ok = false;
			snprintf(bp->why, sizeof(bp->why), "%s", gvisor->detail);
		}
		n++;
	}
	return n;
}

json_t *
doctor_row_json(json_t *probes, struct probe *p)
{
	json_t *d = p->data ? p->data : json_object();
	p->data = NULL;
	json_object_set_new(d, "status", json_string(doctor_status_names[p->st]));
	json_object_set_new(d, "detail", json_string(p->detail));
	json_object_set_new(probes, p->name, d);
	return d;
}

void
doctor_row_text(FILE *m, const struct probe *p)
{
	fprintf(m, "%-8s %-14s %s\n", doctor_status_names[p->st], p->name, p->detail);
}

char *
doctor_json_text(json_t *root)
{
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	char *out = wd_xasprintf("%s\n", s ? s : "{}");
	free(s);
	return out;
}

/* ------------------------------------------------------------------ report */

WD_API char *
wd_doctor(bool json, unsigned *ok_levels)
{
	enum {
		P_USERNS,
		P_SECCOMP,
		P_LANDLOCK,
		P_CGROUP,
		P_OVERLAY,
		P_IDMAP,
		P_KCONFIG,
		P_GVISOR,
		P_N
	};
	struct probe pr[P_N];
	memset(pr, 0, sizeof(pr));
	for (int i = 0; i < P_N; i++)
		pr[i].data = json_object();

	bool userns_ok = false, seccomp_ok = false, idmap_ok = true;
	int ll_abi = 0;
	doctor_probe_userns(&pr[P_USERNS], &userns_ok);
	doctor_probe_seccomp(&pr[P_SECCOMP], &seccomp_ok);
	doctor_probe_landlock(&pr[P_LANDLOCK], &ll_abi);
	doctor_probe_cgroup(&pr[P_CGROUP]);
	doctor_probe_overlay(&pr[P_OVERLAY], userns_ok);
	doctor_probe_idmap(&pr[P_IDMAP], &idmap_ok);
	doctor_probe_kconfig(&pr[P_KCONFIG]);
	bool gvisor_ok = false;
	doctor_probe_gvisor(&pr[P_GVISOR], &gvisor_ok);

	/* The levels: each backend's own probe says whether it can run here
	 * and why not; the host facts above are context. */
	struct doctor_level lv[8];
	size_t nlv = doctor_levels(lv, WD_ARRAY_SIZE(lv), &pr[P_GVISOR], gvisor_ok);
	unsigned ok = 0;
	for (size_t i = 0; i < nlv; i++) {
		struct backend_probe *bp = &lv[i].bp;
		if (!idmap_ok && lv[i].level == WD_ISOLATION_CONTAINER) {
			size_t n = strlen(bp->warn);
			snprintf(bp->warn + n, sizeof(bp->warn) - n, "%s%s", n ? "; " : "",
				 "no idmapped mounts for the workspace");
		}
		if (bp->ok)
			ok |= 1u << lv[i].level;
	}
	*ok_levels = ok;

	/* What needs root, named (an ordinary user meets these as refusals
	 * otherwise): each entry says yes, or why not and what works
	 * instead. */
	bool as_root = geteuid() == 0;
	bool cow_ok = (ok & (1u << WD_ISOLATION_CONTAINER)) && pr[P_OVERLAY].st == ST_OK;
	struct feature {
		const char *name;
		bool ok;
		const char *why;    /* why not, and what works instead */
		const char *detail; /* how, when it works (NULL: nothing to add) */
	} feats[] = {
	    {"cow sessions", cow_ok,
	     "no overlayfs inside a user namespace here (see overlayfs above)",
	     as_root ? "on a sandbox disk (--disk bounds it)"
		     : "the overlay in a user namespace, the layers in your state "
		       "directory (unbounded: --disk needs root)"},
	    {"--disk", as_root,
	     "needs root (loop devices and ext4 mounts); a session's layers are "
	     "then bounded only by the state directory's file system",
	     NULL},
	    {"run --workspace-mode cow", cow_ok,
	     "no overlayfs inside a user namespace here (see overlayfs above)",
	     as_root ? NULL
		     : "warden run enters a user namespace of its own; the layers in your "
		       "state directory, removed at the end"},
	    {"serve cow sandboxes", cow_ok,
	     "no overlayfs inside a user namespace here (see overlayfs above)",
	     as_root ? NULL
		     : "each an anonymous session of the server's (a monitor in a user "
		       "namespace), removed on destroy and when the server ends"},
	    {"warm pool", as_root,
	     "needs root (a pooled sandbox's workspace is a clone of its mount, which needs "
	     "CAP_SYS_ADMIN on the host)",
	     NULL},
	    {"limits", pr[P_CGROUP].st == ST_OK,
	     "no cgroup this user can create (root, or a delegated cgroup v2 subtree): "
	     "--memory, --pids, --cpus and the review's freeze need --best-effort",
	     NULL},
	};
	(void)userns_ok;
	(void)seccomp_ok;
	(void)ll_abi;

	char *out = NULL;
	if (json) {
		json_t *root = json_object();
		json_t *levels = json_object();
		json_t *oks = json_array();
		for (size_t i = 0; i < nlv; i++) {
			const struct backend_probe *bp = &lv[i].bp;
			json_t *l = json_object();
			json_object_set_new(l, "ok", json_boolean(bp->ok));
			json_object_set_new(l, "why_not",
					    bp->ok ? json_null() : json_string(bp->why));
			json_object_set_new(l, "warnings",
					    bp->warn[0] ? json_string(bp->warn) : json_null());
			json_object_set_new(levels, lv[i].name, l);
			if (bp->ok)
				json_array_append_new(oks, json_string(lv[i].name));
		}
		json_t *fs = json_object();
		for (size_t i = 0; i < WD_ARRAY_SIZE(feats); i++) {
			json_t *f = json_object();
			json_object_set_new(f, "ok", json_boolean(feats[i].ok));
			const char *t = feats[i].ok ? feats[i].detail : feats[i].why;
			json_object_set_new(f, feats[i].ok ? "detail" : "why_not",
					    t ? json_string(t) : json_null());
			json_object_set_new(fs, feats[i].name, f);
		}
		json_object_set_new(root, "features", fs);
		json_object_set_new(root, "ok_levels", oks);
		json_object_set_new(root, "levels", levels);
		json_t *probes = json_object();
		for (int i = 0; i < P_N; i++)
			doctor_row_json(probes, &pr[i]);
		json_object_set_new(root, "probes", probes);
		out = doctor_json_text(root);
	} else {
		size_t len = 0;
		FILE *m = open_memstream(&out, &len);
		if (!m)
			abort();
		for (int i = 0; i < P_N; i++)
			doctor_row_text(m, &pr[i]);
		fprintf(m, "\nisolation levels:\n");
		for (size_t i = 0; i < nlv; i++) {
			const struct backend_probe *bp = &lv[i].bp;
			fprintf(m, "  %-10s %s%s", lv[i].name,
				bp->ok ? "yes" : "no: ", bp->ok ? "" : bp->why);
			if (bp->ok && bp->warn[0])
				fprintf(m, " (warning: %s)", bp->warn);
			else if (bp->ok && bp->note[0])
				fprintf(m, " (%s)", bp->note);
			fprintf(m, "\n");
		}
		fprintf(m, "\nfeatures (as uid %u):\n", (unsigned)geteuid());
		for (size_t i = 0; i < WD_ARRAY_SIZE(feats); i++) {
			const struct feature *f = &feats[i];
			if (f->ok && f->detail)
				fprintf(m, "  %-26s yes: %s\n", f->name, f->detail);
			else
				fprintf(m, "  %-26s %s%s\n", f->name,
					f->ok ? "yes" : "no: ", f->ok ? "" : f->why);
		}
		if (fclose(m) != 0 || !out)
			abort();
	}
	for (int i = 0; i < P_N; i++)
		json_decref(pr[i].data);
	return out;
}
