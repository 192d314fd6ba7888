/* doctor/doctor-pod: what a pod gives warden, from inside it.
 *
 * `warden doctor --pod` (wd_doctor_pod) answers, for the process's own
 * environment, each requirement docs/kubernetes.md lists for the pod, and
 * what lacking it costs: the pod in a user namespace of its own
 * (hostUsers: false), CAP_SYS_ADMIN there, a /proc that lets a sandbox
 * mount its own (procMount: Unmasked), a seccomp profile that admits
 * unshare and clone3 with namespace flags, cgroup delegation (or what the
 * per-command cgroup becomes: the pod's limits bound everything),
 * Landlock, runsc.  As in doctor.c every answer comes from doing the thing
 * in a forked child (mount a proc, clone3 with the flags the jail passes),
 * never from a manifest or a version number: a runtime may grant or
 * refuse what the pod spec asked for.
 *
 * Runs on the supervisor side only: the probe children fork from here and
 * may call anything. */
#include "util/util.h"
#include "doctor/doctor-internal.h"
#include "supervise/supervise.h"
#include "cgroup/cgroup.h"

#include <fcntl.h>
#include <jansson.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CAP_SYS_ADMIN_BIT 21

struct pod_probe {
	struct probe p;
	const char *cost; /* when not ok: what lacking it costs */
};

static void
set_cost(struct pod_probe *pp, const char *cost)
{
	if (pp->p.st != ST_OK)
		pp->cost = cost;
}

/* The "Name:\t<value>" line of /proc/self/status, or "" */
static void
status_field(const char *name, char *out, size_t cap)
{
	char buf[8192];
	out[0] = '\0';
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/self/status", buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = '\0';
	size_t nl = strlen(name);
	for (char *line = buf; line && *line;) {
		char *end = strchr(line, '\n');
		if (end)
			*end = '\0';
		if (!strncmp(line, name, nl) && line[nl] == ':') {
			const char *v = line + nl + 1;
			v += strspn(v, " \t");
			snprintf(out, cap, "%s", v);
			return;
		}
		line = end ? end + 1 : NULL;
	}
}

/* ------------------------------------------------------ the pod's user ns */

static void
probe_pod_userns(struct pod_probe *pp, bool *in_userns)
{
	struct probe *p = &pp->p;
	p->name = "pod-userns";
	char buf[512];
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/self/uid_map", buf, sizeof(buf) - 1);
	*in_userns = false;
	if (n <= 0) {
		p->st = ST_MISSING;
		doctor_detail(p, "/proc/self/uid_map unreadable");
		set_cost(pp, "cannot tell whether the pod's root is the node's root");
		return;
	}
	buf[n] = '\0';
	unsigned long inside = 0, outside = 0, count = 0;
	int lines = 0;
	for (char *s = buf; *s; lines++) {
		if (lines == 0 && sscanf(s, "%lu %lu %lu", &inside, &outside, &count) != 3)
			break;
		char *e = strchr(s, '\n');
		if (!e)
			break;
		s = e + 1;
	}
	/* The initial user namespace maps every id to itself; any other map
	 * means a namespace below it.  Why it matters: procMount Unmasked and
	 * CAP_SYS_ADMIN are safe only where the pod's root is nobody on the
	 * node. */
	bool initial = lines == 1 && inside == 0 && outside == 0 && count == 4294967295UL;
	json_object_set_new(
	    p->data, "uid_map_first",
	    json_pack("[I,I,I]", (json_int_t)inside, (json_int_t)outside, (json_int_t)count));
	json_object_set_new(p->data, "initial", json_boolean(initial));
	if (initial) {
		p->st = ST_MISSING;
		doctor_detail(p, "the initial user namespace (uid_map 0 0 4294967295): the pod's "
				 "root is the node's root");
	} else {
		*in_userns = true;
		p->st = ST_OK;
		doctor_detail(p,
			      "a user namespace of its own: uid %lu here is uid %lu on the node "
			      "(%lu ids, %d range%s)",
			      inside, outside, count, lines, lines == 1 ? "" : "s");
	}
	if (!initial && inside == 0 && outside == 0) {
		/* a namespace, but its root is uid 0 outside it: files of the
		 * node's root are its own */
		doctor_worsen(p, ST_WARN);
		doctor_detail(p, "; its root is uid 0 on the node");
	}
	json_object_set_new(p->data, "ok", json_boolean(!initial));
	set_cost(pp, initial ? "hostUsers: false is missing: whatever escapes warden's jail is "
			       "root on the node, and Kubernetes refuses procMount: Unmasked "
			       "without it"
			     : "whatever escapes warden's jail owns the node's root's files");
}

/* ---------------------------------------------------------- CAP_SYS_ADMIN */

static void
probe_sys_admin(struct pod_probe *pp, bool in_userns, bool *has_out)
{
	struct probe *p = &pp->p;
	p->name = "sys-admin";
	char eff[64], bnd[64], nnp[16], aa[256] = "";
	status_field("CapEff", eff, sizeof(eff));
	status_field("CapBnd", bnd, sizeof(bnd));
	status_field("NoNewPrivs", nnp, sizeof(nnp));
	unsigned long long e = strtoull(eff, NULL, 16), b = strtoull(bnd, NULL, 16);
	bool has = e & (1ULL << CAP_SYS_ADMIN_BIT);
	*has_out = has;
	json_object_set_new(p->data, "cap_eff", json_string(eff));
	json_object_set_new(p->data, "cap_bnd", json_string(bnd));
	json_object_set_new(p->data, "no_new_privs", json_boolean(atoi(nnp) == 1));
	json_object_set_new(p->data, "effective", json_boolean(has));
	p->st = has ? ST_OK : ST_MISSING;
	if (has)
		doctor_detail(p, "CAP_SYS_ADMIN effective, %s",
			      in_userns ? "in the pod's user namespace"
					: "in the node's user namespace");
	else
		doctor_detail(p, "CAP_SYS_ADMIN not effective (CapEff %s, in the bounding set: %s)",
			      eff, (b & (1ULL << CAP_SYS_ADMIN_BIT)) ? "yes" : "no");
	doctor_detail(p, "; no_new_privs %s", atoi(nnp) == 1 ? "on" : "off");
	/* AppArmor's default container profile denies mount(2): context for a
	 * proc probe that fails. */
	ssize_t n =
	    wd_read_file_at(AT_FDCWD, "/proc/self/attr/apparmor/current", aa, sizeof(aa) - 1);
	if (n <= 0)
		n = wd_read_file_at(AT_FDCWD, "/proc/self/attr/current", aa, sizeof(aa) - 1);
	if (n > 0) {
		aa[n] = '\0';
		aa[strcspn(aa, "\n")] = '\0';
		if (aa[0] && strcmp(aa, "unconfined")) {
			char *esc = wd_esc_text(aa, strlen(aa), 0, 0);
			doctor_detail(p, "; LSM label %s", esc);
			json_object_set_new(p->data, "lsm_label", json_string(aa));
			free(esc);
		}
	}
	set_cost(pp, geteuid() == 0
			 ? "warden as root builds each container-level sandbox's trees with "
			   "open_tree and mount, which need it: the container level does not run "
			   "in this pod; and containerd's and CRI-O's default seccomp profiles "
			   "admit unshare and clone3 with namespace flags only beside it"
			 : "containerd's and CRI-O's default seccomp profiles admit unshare and "
			   "clone3 with namespace flags only beside CAP_SYS_ADMIN (seccomp-ns says "
			   "what this pod's profile does)");
}

/* ------------------------------------------------------------------- /proc */

static void
proc_grandchild(struct child_out *o)
{
	/* pid 1 of a new pid namespace mounts the proc of that namespace, as
	 * the jail does for every container-level sandbox. */
	o->err[3] =
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) ? errno : 0;
}

static void
proc_child(struct child_out *o, void *arg)
{
	(void)arg;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	o->err[0] = unshare(CLONE_NEWUSER) ? errno : 0;
	if (o->err[0])
		return;
	o->err[1] = doctor_map_self(uid, gid);
	o->err[2] = unshare(CLONE_NEWNS | CLONE_NEWPID) ? errno : 0;
	if (o->err[2])
		return;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		o->err[2] = errno;
		return;
	}
	pid_t c = fork();
	if (c < 0) {
		o->err[3] = errno;
		return;
	}
	if (c == 0) {
		proc_grandchild(o);
		_exit(0);
	}
	int st = 0;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st))
		o->err[3] = ECHILD;
}

static void
probe_proc(struct pod_probe *pp, bool *ok)
{
	struct probe *p = &pp->p;
	p->name = "proc";
	*ok = false;
	/* What covers parts of /proc (a runtime's masked paths are binds of
	 * /dev/null or an empty tmpfs, its read-only paths read-only binds):
	 * with one of them locked in a user namespace, the kernel refuses a
	 * new proc mount (mount_too_revealing). */
	json_t *over = json_array();
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (f) {
		char *line = NULL;
		size_t cap = 0;
		while (getline(&line, &cap, f) > 0) {
			char mp[4096];
			if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
			    !strncmp(mp, "/proc/", 6))
				json_array_append_new(over, json_string(mp));
		}
		free(line);
		fclose(f);
	}
	json_object_set_new(p->data, "covered", over);
	struct child_out o;
	if (doctor_run_child(proc_child, NULL, &o) < 0) {
		p->st = ST_MISSING;
		doctor_detail(p, "probe child failed");
	} else if (o.err[0] || o.err[1] || o.err[2]) {
		/* seccomp-ns and userns say why namespaces cannot be made */
		p->st = ST_MISSING;
		doctor_detail(p, "not tried: no user, mount and pid namespace to mount it in (%s)",
			      doctor_errname(o.err[0]	? o.err[0]
					     : o.err[1] ? o.err[1]
							: o.err[2]));
	} else if (o.err[3]) {
		p->st = ST_MISSING;
		doctor_detail(p, "mounting a new proc in a new pid namespace: %s",
			      doctor_errname(o.err[3]));
	} else {
		p->st = ST_OK;
		*ok = true;
		doctor_detail(p, "a new proc mounts in a new user, mount and pid namespace");
	}
	json_object_set_new(p->data, "mounts", json_boolean(*ok));
	size_t n = json_array_size(over);
	if (n) {
		doctor_detail(p, "; %zu path%s of /proc covered:", n, n == 1 ? "" : "s");
		for (size_t i = 0; i < n && i < 6; i++) {
			const char *mp = json_string_value(json_array_get(over, i));
			char *esc = wd_esc_path(mp);
			doctor_detail(p, " %s", esc);
			free(esc);
		}
		if (n > 6)
			doctor_detail(p, " ...");
		if (!*ok)
			doctor_detail(p, " (procMount: Default masks them)");
	}
	set_cost(pp, "procMount: Unmasked is missing: a container-level sandbox cannot mount "
		     "its own /proc, so the container level does not run in this pod (the "
		     "process level remains)");
}

/* ------------------------------------------- the pod's seccomp profile */

enum { SN_UNSHARE, SN_CLONE3, SN_CLONE3_NS, SN_PIVOT, SN_COUNT };

static int
clone3_try(uint64_t flags)
{
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = flags;
	ca.exit_signal = SIGCHLD;
	pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0)
		return errno;
	if (pid == 0)
		_exit(0);
	int st = 0;
	waitpid(pid, &st, 0);
	return 0;
}

static void
seccomp_ns_child(struct child_out *o, void *arg)
{
	(void)arg;
	/* the flags the jail's clone3 passes for a container-level sandbox
	 * (supervise/local.c, step 1c) */
	const uint64_t ns =
	    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	o->err[SN_CLONE3] = clone3_try(0);
	o->err[SN_CLONE3_NS] = clone3_try(ns);
	o->err[SN_UNSHARE] = unshare((int)ns) ? errno : 0;
	if (o->err[SN_UNSHARE])
		return;
	/* pivot_root, which the jail enters each sandbox's root with (step
	 * 3c) and which Docker's and containerd's default profiles refuse
	 * even beside CAP_SYS_ADMIN: onto a tmpfs of this child's own
	 * mount namespace, nothing of the pod's touched. */
	int e = doctor_map_self(uid, gid);
	if (!e && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		e = errno;
	if (!e && mount("tmpfs", "/tmp", "tmpfs", 0, "size=64k"))
		e = errno;
	if (!e && chdir("/tmp"))
		e = errno;
	if (!e && syscall(SYS_pivot_root, ".", "."))
		e = errno;
	o->err[SN_PIVOT] = e;
}

static void
probe_seccomp_ns(struct pod_probe *pp, bool *ns_ok, bool *clone3_ok)
{
	struct probe *p = &pp->p;
	static const char *const names[SN_COUNT] = {"unshare", "clone3", "clone3_namespaces",
						    "pivot_root"};
	p->name = "seccomp-ns";
	*ns_ok = *clone3_ok = false;
	char mode[16], filters[16];
	status_field("Seccomp", mode, sizeof(mode));
	status_field("Seccomp_filters", filters, sizeof(filters));
	json_object_set_new(p->data, "seccomp_mode", json_integer(atoi(mode)));
	json_object_set_new(p->data, "filters", json_integer(atoi(filters)));
	struct child_out o;
	if (doctor_run_child(seccomp_ns_child, NULL, &o) < 0) {
		p->st = ST_MISSING;
		doctor_detail(p, "probe child failed");
		set_cost(pp, "cannot tell whether sandboxes can be created");
		return;
	}
	for (int i = 0; i < SN_COUNT; i++)
		json_object_set_new(p->data, names[i],
				    o.err[i] == 0 ? json_true()
						  : json_string(doctor_errname(o.err[i])));
	*clone3_ok = o.err[SN_CLONE3] == 0;
	*ns_ok = *clone3_ok && o.err[SN_CLONE3_NS] == 0 && o.err[SN_UNSHARE] == 0 &&
		 o.err[SN_PIVOT] == 0;
	p->st = *ns_ok ? ST_OK : ST_MISSING;
	if (*ns_ok) {
		doctor_detail(p, "unshare and clone3 with user, mount, pid, net, ipc and uts flags "
				 "work, and pivot_root");
	} else {
		doctor_detail(p,
			      "clone3: %s; clone3 with namespace flags: %s; unshare with them: %s; "
			      "pivot_root: %s",
			      doctor_errname(o.err[SN_CLONE3]), doctor_errname(o.err[SN_CLONE3_NS]),
			      doctor_errname(o.err[SN_UNSHARE]),
			      o.err[SN_UNSHARE] ? "not tried" : doctor_errname(o.err[SN_PIVOT]));
	}
	int m = atoi(mode);
	if (m == 2)
		doctor_detail(p, "; the pod runs under %s seccomp filter%s",
			      filters[0] ? filters : "a", atoi(filters) == 1 ? "" : "s");
	else
		doctor_detail(p, "; no seccomp filter on the pod");
	if (!*ns_ok && m == 2)
		doctor_detail(p, " (the refusal is likely its profile's)");
	set_cost(pp, *clone3_ok
			 ? "the pod's seccomp profile (or the kernel) refuses namespace "
			   "flags or pivot_root: the container level does not run in this "
			   "pod; the process level remains (deploy/kubernetes/seccomp/"
			   "warden.json admits them)"
			 : "clone3 itself is refused (a profile answering ENOSYS, as Docker's "
			   "does without CAP_SYS_ADMIN): warden starts no sandbox at any level");
}

/* ---------------------------------------------------------------- cgroups */

/* "<v2 mount><path>" of this process's cgroup, or of the v1 memory
 * hierarchy's: under a cgroup namespace both are the pod's own. */
static void
own_limits(struct probe *p, const struct cgroup_host_info *h)
{
	char buf[4096];
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/self/cgroup", buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = '\0';
	char v2[1024] = "", v1mem[1024] = "";
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctl = c1 + 1, *path = c2 + 1;
		if (!strcmp(line, "0") && !*ctl)
			snprintf(v2, sizeof(v2), "%s", path);
		else if (strstr(ctl, "memory"))
			snprintf(v1mem, sizeof(v1mem), "%s", path);
	}
	json_t *lim = json_object();
	char path[2200], val[128];
	static const char *const v2files[] = {"memory.max", "cpu.max", "pids.max"};
	if (h->v2_mount && v2[0]) {
		for (size_t i = 0; i < WD_ARRAY_SIZE(v2files); i++) {
			snprintf(path, sizeof(path), "%s%s/%s", h->v2_mount, v2, v2files[i]);
			ssize_t k = wd_read_file_at(AT_FDCWD, path, val, sizeof(val) - 1);
			if (k <= 0)
				continue;
			val[k] = '\0';
			val[strcspn(val, "\n")] = '\0';
			json_object_set_new(lim, v2files[i], json_string(val));
		}
	}
	if (h->v1_mount[0] && v1mem[0]) {
		snprintf(path, sizeof(path), "%s%s/memory.limit_in_bytes", h->v1_mount[0], v1mem);
		ssize_t k = wd_read_file_at(AT_FDCWD, path, val, sizeof(val) - 1);
		if (k > 0) {
			val[k] = '\0';
			val[strcspn(val, "\n")] = '\0';
			json_object_set_new(lim, "memory.limit_in_bytes", json_string(val));
		}
	}
	json_object_set_new(p->data, "own_limits", lim);
	if (json_object_size(lim)) {
		doctor_detail(p, "; the pod's own limits:");
		const char *k;
		json_t *v;
		json_object_foreach(lim, k, v)
		{
			doctor_detail(p, " %s=%s", k, json_string_value(v));
		}
	}
}

static void
probe_pod_cgroup(struct pod_probe *pp)
{
	struct probe *p = &pp->p;
	doctor_probe_cgroup(p);
	struct cgroup_host_info h;
	cgroup_host_info(&h);
	own_limits(p, &h);
	json_t *cc = json_object_get(p->data, "can_create");
	bool delegated = json_is_true(cc);
	json_object_set_new(p->data, "per_command",
			    json_string(delegated ? "nested below the pod's" : "none"));
	if (delegated) {
		doctor_detail(p, "; per-command cgroups nest below the pod's limits");
	} else {
		doctor_worsen(p, ST_WARN);
		doctor_detail(p, "; no per-command cgroup here");
	}
	set_cost(pp, "no per-command cgroup: every command shares the pod's limits (runs need "
		     "--best-effort), and one command can take the pod's whole memory, when the "
		     "kernel's OOM killer chooses within the pod, warden included");
}

/* ------------------------------------------------------------------ report */

WD_API char *
wd_doctor_pod(bool json, unsigned *ok_levels)
{
	enum {
		Q_POD_USERNS,
		Q_SYS_ADMIN,
		Q_PROC,
		Q_SECCOMP_NS,
		Q_USERNS,
		Q_SECCOMP,
		Q_CGROUP,
		Q_LANDLOCK,
		Q_GVISOR,
		Q_N
	};
	struct pod_probe q[Q_N];
	memset(q, 0, sizeof(q));
	for (int i = 0; i < Q_N; i++)
		q[i].p.data = json_object();
	bool in_userns = false, sys_admin = false, proc_ok = false, ns_ok = false,
	     clone3_ok = false;
	bool userns_ok = false, seccomp_ok = false, gvisor_ok = false;
	int abi = 0;
	probe_pod_userns(&q[Q_POD_USERNS], &in_userns);
	probe_sys_admin(&q[Q_SYS_ADMIN], in_userns, &sys_admin);
	probe_proc(&q[Q_PROC], &proc_ok);
	probe_seccomp_ns(&q[Q_SECCOMP_NS], &ns_ok, &clone3_ok);
	doctor_probe_userns(&q[Q_USERNS].p, &userns_ok);
	set_cost(&q[Q_USERNS], "the namespaces a container-level sandbox is made of cannot all "
			       "be created: the container level does not run in this pod");
	doctor_probe_seccomp(&q[Q_SECCOMP].p, &seccomp_ok);
	set_cost(&q[Q_SECCOMP], "warden cannot load its own seccomp program: no level runs");
	probe_pod_cgroup(&q[Q_CGROUP]);
	doctor_probe_landlock(&q[Q_LANDLOCK].p, &abi);
	set_cost(&q[Q_LANDLOCK], "no Landlock second fence: at the container level the mount "
				 "namespace alone keeps a command to its files, at the process "
				 "level only file permissions do (gVisor does not implement "
				 "Landlock: so it is under the gvisor RuntimeClass)");
	doctor_probe_gvisor(&q[Q_GVISOR].p, &gvisor_ok);
	set_cost(&q[Q_GVISOR],
		 "no gvisor level inside the pod: give the whole pod gVisor with "
		 "the gvisor RuntimeClass (deploy/kubernetes/overlays/gvisor) and run "
		 "warden's container level inside it");

	/* The levels, as wd_doctor decides them, and then what the pod adds:
	 * the jail's clone3 must pass the pod's profile, and a container
	 * sandbox mounts its own /proc. */
	struct doctor_level lv[8];
	size_t nlv = doctor_levels(lv, WD_ARRAY_SIZE(lv), &q[Q_GVISOR].p, gvisor_ok);
	unsigned ok = 0;
	for (size_t i = 0; i < nlv; i++) {
		struct backend_probe *bp = &lv[i].bp;
		bool container = lv[i].level == WD_ISOLATION_CONTAINER;
		const char *refused = NULL;
		if (!clone3_ok)
			refused = "clone3 refused (seccomp-ns)";
		else if (container && !ns_ok)
			refused = "clone3 with namespace flags, unshare or pivot_root refused "
				  "(seccomp-ns)";
		/* as root the jail opens the host's trees with open_tree
		 * (jail_build_host), which needs CAP_SYS_ADMIN */
		else if (container && geteuid() == 0 && !sys_admin)
			refused = "CAP_SYS_ADMIN missing (sys-admin)";
		else if (container && !proc_ok)
			refused = "no new /proc mounts (proc)";
		if (bp->ok && refused) {
			bp->ok = false;
			snprintf(bp->why, sizeof(bp->why), "%s", refused);
		}
		if (bp->ok)
			ok |= 1u << lv[i].level;
	}
	*ok_levels = ok;
	(void)userns_ok;
	(void)seccomp_ok;
	(void)abi;

	char *out = NULL;
	if (json) {
		json_t *root = json_object();
		json_object_set_new(root, "pod", json_true());
		json_t *levels = json_object(), *oks = json_array();
		for (size_t i = 0; i < nlv; i++) {
			json_object_set_new(
			    levels, lv[i].name,
			    json_pack("{s:b,s:o}", "ok", lv[i].bp.ok, "why_not",
				      lv[i].bp.ok ? json_null() : json_string(lv[i].bp.why)));
			if (lv[i].bp.ok)
				json_array_append_new(oks, json_string(lv[i].name));
		}
		json_object_set_new(root, "ok_levels", oks);
		json_object_set_new(root, "levels", levels);
		json_t *probes = json_object();
		for (int i = 0; i < Q_N; i++)
			json_object_set_new(doctor_row_json(probes, &q[i].p), "cost",
					    q[i].cost ? json_string(q[i].cost) : json_null());
		json_object_set_new(root, "probes", probes);
		out = doctor_json_text(root);
	} else {
		size_t len = 0;
		FILE *m = open_memstream(&out, &len);
		if (!m)
			abort();
		for (int i = 0; i < Q_N; i++) {
			doctor_row_text(m, &q[i].p);
			if (q[i].cost)
				fprintf(m, "%-8s %-14s costs: %s\n", "", "", q[i].cost);
		}
		fprintf(m, "\nisolation levels in this pod:\n");
		for (size_t i = 0; i < nlv; i++)
			fprintf(m, "  %-10s %s%s\n", lv[i].name,
				lv[i].bp.ok ? "yes" : "no: ", lv[i].bp.ok ? "" : lv[i].bp.why);
		if (fclose(m) != 0 || !out)
			abort();
	}
	for (int i = 0; i < Q_N; i++)
		json_decref(q[i].p.data);
	return out;
}
