/* supervise/probe: the real probes a backend's probe operation runs
 * (struct backend_ops.probe): can this host make the namespaces a sandbox
 * needs, load warden's seccomp program, apply a Landlock domain.
 *
 * Every answer comes from doing the real thing, in a forked child where it
 * changes process state: create the namespaces and write a uid map, load
 * warden's own seccomp program and watch a refused call fail, apply a
 * Landlock domain and watch a write fail.  Kernel version numbers and
 * config files are never the answer: a distribution can backport a
 * feature or switch it off with a sysctl, an LSM (AppArmor's userns
 * restriction) or a boot parameter (lsm=).
 *
 * `warden doctor` (src/doctor/) reports these probes beside its own (cgroups,
 * overlayfs, idmapped mounts, the kernel's config, a real gVisor trial)
 * and each backend's answer; it sits above the backends, so the probes
 * they run live here, below it. */
#include "jail/landlock.h"
#include "jail/seccomp.h"
#include "util/util.h"
#include "supervise/probe.h"
#include "supervise/supervise.h"
#include "cgroup/cgroup.h"

#include <fcntl.h>
#include <jansson.h>
#include <linux/landlock.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <ftw.h>
#include <time.h>

void
doctor_detail(struct probe *p, const char *fmt, ...)
{
	size_t len = strlen(p->detail);
	if (len >= sizeof(p->detail) - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->detail + len, sizeof(p->detail) - len, fmt, ap);
	va_end(ap);
}

void
doctor_worsen(struct probe *p, enum status st)
{
	if (st > p->st)
		p->st = st;
}

const char *
doctor_errname(int e)
{
	if (e == 0)
		return "ok";
	const char *n = strerrorname_np(e);
	return n ? n : "?";
}

/* ------------------------------------------------------------ child runs */

/* Run fn(out, arg) in a forked child and wait up to 10 s.  Returns 0 when
 * the child exited normally (its results are in *out), else -1. */
int
doctor_run_child(void (*fn)(struct child_out *, void *), void *arg, struct child_out *out)
{
	struct child_out *sh =
	    mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -1;
	memset(sh, 0, sizeof(*sh));
	for (size_t i = 0; i < WD_ARRAY_SIZE(sh->err); i++)
		sh->err[i] = -1; /* not reached */
	pid_t pid = fork();
	if (pid < 0) {
		munmap(sh, sizeof(*sh));
		return -1;
	}
	if (pid == 0) {
		/* A probe must not outlive doctor, nor leave doctor waiting. */
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		fn(sh, arg);
		_exit(0);
	}
	int st = 0, rc = -1;
	uint64_t deadline = wd_now_ns() + 10ULL * 1000000000ULL;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid) {
			rc = WIFEXITED(st) ? 0 : -1;
			break;
		}
		if (w < 0 && errno != EINTR)
			break;
		if (wd_now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
	}
	*out = *sh;
	munmap(sh, sizeof(*sh));
	return rc;
}

int
doctor_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int rc = wd_write_all(fd, s, strlen(s));
	close(fd);
	return rc < 0 ? -rc : 0;
}

/* Map the caller's ids to root in the user namespace just created. */
int
doctor_map_self(uid_t uid, gid_t gid)
{
	char buf[64];
	/* setgroups must be denied before an unprivileged gid_map write
	 * (CVE-2014-8989); the file is missing before Linux 3.19, tolerated. */
	int e = doctor_write_file("/proc/self/setgroups", "deny");
	if (e && e != ENOENT)
		return e;
	snprintf(buf, sizeof(buf), "0 %u 1\n", (unsigned)uid);
	if ((e = doctor_write_file("/proc/self/uid_map", buf)))
		return e;
	snprintf(buf, sizeof(buf), "0 %u 1\n", (unsigned)gid);
	return doctor_write_file("/proc/self/gid_map", buf);
}

/* ---------------------------------------------------------- user namespaces */

enum { NS_USER, NS_MAP, NS_MNT, NS_PID, NS_NET, NS_LO, NS_IPC, NS_UTS, NS_CGROUP, NS_COUNT };
static const char *const ns_names[NS_COUNT] = {"user",	   "uid_map", "mount", "pid",	"net",
					       "loopback", "ipc",     "uts",   "cgroup"};

static void
userns_child(struct child_out *o, void *arg)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	o->err[NS_USER] = unshare(CLONE_NEWUSER) ? errno : 0;
	if (o->err[NS_USER])
		return;
	o->err[NS_MAP] = doctor_map_self(uid, gid);
	o->err[NS_MNT] = unshare(CLONE_NEWNS) ? errno : 0;
	o->err[NS_IPC] = unshare(CLONE_NEWIPC) ? errno : 0;
	o->err[NS_UTS] = unshare(CLONE_NEWUTS) ? errno : 0;
	o->err[NS_CGROUP] = unshare(CLONE_NEWCGROUP) ? errno : 0;
	o->err[NS_NET] = unshare(CLONE_NEWNET) ? errno : 0;
	if (o->err[NS_NET] == 0) {
		/* The jail brings loopback up with SIOCSIFFLAGS (step 4). */
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr = {.ifr_name = "lo"};
		if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
			o->err[NS_LO] = errno;
		} else {
			ifr.ifr_flags |= IFF_UP;
			o->err[NS_LO] = ioctl(s, SIOCSIFFLAGS, &ifr) ? errno : 0;
		}
		if (s >= 0)
			close(s);
	}
	/* A new pid namespace applies to children: the first one is pid 1. */
	o->err[NS_PID] = unshare(CLONE_NEWPID) ? errno : 0;
	if (o->err[NS_PID] == 0) {
		pid_t c = fork();
		if (c == 0)
			_exit(getpid() == 1 ? 0 : 1);
		int st = 0;
		if (c < 0)
			o->err[NS_PID] = errno;
		else if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			o->err[NS_PID] = ESRCH;
	}
}

static void
read_sysctl(struct probe *p, const char *path, const char *key)
{
	char buf[64];
	ssize_t n = wd_read_file_at(AT_FDCWD, path, buf, sizeof(buf));
	if (n < 0)
		return;
	buf[strcspn(buf, "\n")] = '\0';
	doctor_detail(p, "; %s=%s", key, buf);
	json_object_set_new(p->data, key, json_string(buf));
}

void
doctor_probe_userns(struct probe *p, bool *container_ok)
{
	struct child_out o;
	p->name = "userns";
	json_t *ns = json_object();
	json_object_set_new(p->data, "namespaces", ns);
	if (doctor_run_child(userns_child, NULL, &o) < 0) {
		p->st = ST_MISSING;
		doctor_detail(p, "probe child failed");
		*container_ok = false;
		return;
	}
	bool all = true, need = true;
	for (int i = 0; i < NS_COUNT; i++) {
		int e = o.err[i];
		json_object_set_new(ns, ns_names[i],
				    e == 0 ? json_true() : json_string(doctor_errname(e)));
		if (e != 0)
			all = false;
		/* needed by the container level; ipc/uts/cgroup only harden it */
		if (e != 0 && (i == NS_USER || i == NS_MAP || i == NS_MNT || i == NS_PID ||
			       i == NS_NET || i == NS_LO))
			need = false;
	}
	if (o.err[NS_USER] != 0) {
		doctor_detail(p, "unshare(CLONE_NEWUSER): %s", doctor_errname(o.err[NS_USER]));
	} else {
		doctor_detail(p, "created");
		const char *sep = " ";
		for (int i = 0; i < NS_COUNT; i++) {
			if (i == NS_MAP || i == NS_LO)
				continue;
			if (o.err[i] == 0) {
				doctor_detail(p, "%s%s", sep, ns_names[i]);
				sep = ", ";
			}
		}
		doctor_detail(p, " namespaces");
		for (int i = 0; i < NS_COUNT; i++)
			if (o.err[i] != 0)
				doctor_detail(p, "; %s: %s", ns_names[i], doctor_errname(o.err[i]));
		if (o.err[NS_MAP] == 0)
			doctor_detail(p, "; uid map written");
		if (o.err[NS_LO] == 0)
			doctor_detail(p, "; loopback up");
	}
	doctor_detail(p, " (as uid %u)", (unsigned)geteuid());
	/* Context for a refusal: Debian's and Ubuntu's switches. */
	read_sysctl(p, "/proc/sys/kernel/unprivileged_userns_clone", "unprivileged_userns_clone");
	read_sysctl(p, "/proc/sys/user/max_user_namespaces", "max_user_namespaces");
	read_sysctl(p, "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		    "apparmor_restrict_unprivileged_userns");
	p->st = need ? (all ? ST_OK : ST_WARN) : ST_MISSING;
	json_object_set_new(p->data, "usable", json_boolean(need));
	*container_ok = need;
}

/* ---------------------------------------------------------------- Landlock */

static void
landlock_child(struct child_out *o, void *arg)
{
	int abi = *(int *)arg;
	const char *const ro[] = {"/", NULL};
	struct jail_landlock_rules rules = {.ro_paths = ro};
	struct wd_err err = {0};
	int rc = jail_landlock_apply(&rules, abi, &err);
	o->err[0] = rc < 0 ? -rc : 0;
	if (rc < 0)
		return;
	/* An unnamed file in /tmp needs MAKE_REG there: refused, and were it
	 * not, it vanishes on close. */
	int fd = open("/tmp", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	o->err[1] = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	o->err[2] = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
}

void
doctor_probe_landlock(struct probe *p, int *abi_out)
{
	p->name = "landlock";
	*abi_out = 0;
	errno = 0;
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	int e = errno;
	json_object_set_new(p->data, "abi", json_integer(abi > 0 ? abi : 0));
	json_object_set_new(p->data, "enabled", json_boolean(abi > 0));
	if (abi <= 0) {
		p->st = ST_MISSING;
		if (e == ENOSYS)
			doctor_detail(p, "not in this kernel (CONFIG_SECURITY_LANDLOCK)");
		else if (e == EOPNOTSUPP)
			doctor_detail(
			    p, "built in but disabled: add landlock to the lsm= boot parameter");
		else
			doctor_detail(p, "landlock_create_ruleset: %s", doctor_errname(e));
		return;
	}
	int iabi = (int)abi;
	struct child_out o;
	if (doctor_run_child(landlock_child, &iabi, &o) < 0 || o.err[0] != 0) {
		p->st = ST_MISSING;
		doctor_detail(p, "ABI %d, but applying a ruleset failed: %s", iabi,
			      doctor_errname(o.err[0] > 0 ? o.err[0] : EIO));
		json_object_set_new(p->data, "enforced", json_false());
		return;
	}
	bool enforced = o.err[1] == EACCES && o.err[2] == 0;
	json_object_set_new(p->data, "enforced", json_boolean(enforced));
	if (!enforced) {
		p->st = ST_MISSING;
		doctor_detail(p, "ABI %d, but a write outside the rules was not refused (%s)", iabi,
			      doctor_errname(o.err[1]));
		return;
	}
	*abi_out = iabi;
	p->st = ST_OK;
	doctor_detail(p, "ABI %d enforced: filesystem", iabi);
	json_t *f = json_array();
	json_array_append_new(f, json_string("fs"));
	if (iabi >= 2) {
		doctor_detail(p, ", refer");
		json_array_append_new(f, json_string("refer"));
	}
	if (iabi >= 3) {
		doctor_detail(p, ", truncate");
		json_array_append_new(f, json_string("truncate"));
	}
	if (iabi >= 4) {
		doctor_detail(p, ", TCP bind/connect");
		json_array_append_new(f, json_string("tcp"));
	}
	if (iabi >= 5) {
		doctor_detail(p, ", device ioctl");
		json_array_append_new(f, json_string("ioctl_dev"));
	}
	if (iabi >= 6) {
		doctor_detail(p, ", abstract-unix and signal scopes");
		json_array_append_new(f, json_string("scope"));
	}
	if (iabi >= 7) {
		doctor_detail(p, ", audit logging flags");
		json_array_append_new(f, json_string("log_flags"));
	}
	json_object_set_new(p->data, "features", f);
	if (iabi < 4) {
		doctor_worsen(p, ST_WARN);
		doctor_detail(p, "; no TCP fencing before ABI 4 (Linux 6.7)");
	} else if (iabi < 6) {
		doctor_worsen(p, ST_WARN);
		doctor_detail(p, "; no socket/signal scoping before ABI 6 (Linux 6.12)");
	}
	errno = 0;
	long errata = syscall(SYS_landlock_create_ruleset, NULL, 0, 2 /* ..._ERRATA */);
	if (errata >= 0) {
		doctor_detail(p, "; errata 0x%lx", errata);
		json_object_set_new(p->data, "errata", json_integer(errata));
	}
}

/* ----------------------------------------------------------------- seccomp */

static void
seccomp_child(struct child_out *o, void *arg)
{
	o->err[0] = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? errno : 0;
	if (o->err[0])
		return;
	int rc = jail_seccomp_load(&jail_seccomp_prog);
	o->err[1] = rc < 0 ? -rc : 0;
	if (rc < 0)
		return;
	/* unshare(0) succeeds anywhere unfiltered: an EPERM is the filter. */
	o->err[2] = syscall(SYS_unshare, 0) ? errno : 0;
	o->err[3] = syscall(SYS_getppid) > 0 ? 0 : errno;
	char buf[4096];
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/self/status", buf, sizeof(buf));
	const char *s = n > 0 ? strstr(buf, "\nSeccomp:") : NULL;
	o->val[0] = s ? strtol(s + 9, NULL, 10) : -1;
}

void
doctor_probe_seccomp(struct probe *p, bool *ok)
{
	p->name = "seccomp";
	struct child_out o;
	*ok = false;
	json_object_set_new(p->data, "instructions", json_integer(jail_seccomp_prog.len));
	json_object_set_new(p->data, "refused_syscalls", json_integer(jail_seccomp_rule_count));
	if (doctor_run_child(seccomp_child, NULL, &o) < 0) {
		p->st = ST_MISSING;
		doctor_detail(p, "probe child died");
		return;
	}
	if (o.err[0]) {
		p->st = ST_MISSING;
		doctor_detail(p, "PR_SET_NO_NEW_PRIVS: %s", doctor_errname(o.err[0]));
	} else if (o.err[1]) {
		p->st = ST_MISSING;
		doctor_detail(p, "loading the filter: %s%s", doctor_errname(o.err[1]),
			      o.err[1] == EINVAL ? " (CONFIG_SECCOMP_FILTER?)" : "");
	} else if (o.err[2] != EPERM || o.err[3] != 0) {
		p->st = ST_MISSING;
		doctor_detail(p, "filter loaded but unshare(0) gave %s", doctor_errname(o.err[2]));
	} else {
		p->st = ST_OK;
		*ok = true;
		doctor_detail(
		    p, "filter loaded (%u instructions, %u syscalls refused), unshare() -> EPERM",
		    (unsigned)jail_seccomp_prog.len, jail_seccomp_rule_count);
		if (o.val[0] != 2)
			doctor_detail(p, "; /proc/self/status Seccomp: %ld", o.val[0]);
	}
	json_object_set_new(p->data, "works", json_boolean(*ok));
}

/* ------------------------------------------------------- a level's probe */

void
doctor_level_probe(enum wd_isolation level, struct backend_probe *out)
{
	struct probe pu = {0}, ps = {0}, pl = {0};
	bool userns_ok = true, seccomp_ok = false;
	int abi = 0;
	pu.data = json_object();
	ps.data = json_object();
	pl.data = json_object();
	if (level == WD_ISOLATION_CONTAINER)
		doctor_probe_userns(&pu, &userns_ok);
	doctor_probe_seccomp(&ps, &seccomp_ok);
	doctor_probe_landlock(&pl, &abi);
	memset(out, 0, sizeof(*out));
	out->ok = userns_ok && seccomp_ok;
	if (!userns_ok)
		snprintf(out->why, sizeof(out->why), "namespaces: %s", pu.detail);
	else if (!seccomp_ok)
		snprintf(out->why, sizeof(out->why), "seccomp: %s", ps.detail);
	/* what the level runs without, where the host lacks it */
	size_t o = 0;
	if (!abi)
		o += (size_t)snprintf(out->warn + o, sizeof(out->warn) - o, "%s",
				      level == WD_ISOLATION_PROCESS
					  ? "no Landlock: the filesystem is fenced by nothing "
					    "but permissions"
					  : "no Landlock second fence");
	else if (level == WD_ISOLATION_PROCESS)
		snprintf(out->note, sizeof(out->note), "Landlock ABI %d", abi);
	struct wd_err e = {0};
	if (cgroup_host_check(&e) < 0 && o < sizeof(out->warn))
		o +=
		    (size_t)snprintf(out->warn + o, sizeof(out->warn) - o,
				     "%sno cgroup limits (runs need --best-effort)", o ? "; " : "");
	json_decref(pu.data);
	json_decref(ps.data);
	json_decref(pl.data);
}
