/* supervise/doctor: which isolation levels this host can run, and why not.
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
 * Levels (DESIGN.md §5):
 *   container  user namespace with a uid map, mount + pid + net namespaces
 *              (loopback can be brought up), seccomp;
 *   process    seccomp; Landlock strongly recommended (reported).
 * cgroups, overlayfs and idmapped mounts do not gate a level; their lack is
 * reported as a warning naming what it costs. */
#include "jail/landlock.h"
#include "jail/seccomp.h"
#include "util/util.h"

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

enum status { ST_OK, ST_WARN, ST_MISSING };
static const char *const status_names[] = {"ok", "warn", "missing"};

struct probe {
	const char *name;
	enum status st;
	char detail[768];
	json_t *data; /* structured fields for --json */
};

static void detail(struct probe *p, const char *fmt, ...) WD_PRINTF(2, 3);

static void
detail(struct probe *p, const char *fmt, ...)
{
	size_t len = strlen(p->detail);
	if (len >= sizeof(p->detail) - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->detail + len, sizeof(p->detail) - len, fmt, ap);
	va_end(ap);
}

static void
worsen(struct probe *p, enum status st)
{
	if (st > p->st)
		p->st = st;
}

static const char *
errname(int e)
{
	if (e == 0)
		return "ok";
	const char *n = strerrorname_np(e);
	return n ? n : "?";
}

/* ------------------------------------------------------------ child runs */

/* A probe child reports through shared memory: fixed slots, no pipes to
 * frame, nothing to parse. */
struct child_out {
	int err[16]; /* errno per step, 0 = worked */
	long val[4];
};

/* Run fn(out, arg) in a forked child and wait up to 10 s.  Returns 0 when
 * the child exited normally (its results are in *out), else -1. */
static int
run_child(void (*fn)(struct child_out *, void *), void *arg, struct child_out *out)
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

static int
write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int rc = wd_write_all(fd, s, strlen(s));
	close(fd);
	return rc < 0 ? -rc : 0;
}

/* Map the caller's ids to root in the user namespace just created. */
static int
map_self(uid_t uid, gid_t gid)
{
	char buf[64];
	/* setgroups must be denied before an unprivileged gid_map write
	 * (CVE-2014-8989); the file is missing before Linux 3.19, tolerated. */
	int e = write_file("/proc/self/setgroups", "deny");
	if (e && e != ENOENT)
		return e;
	snprintf(buf, sizeof(buf), "0 %u 1\n", (unsigned)uid);
	if ((e = write_file("/proc/self/uid_map", buf)))
		return e;
	snprintf(buf, sizeof(buf), "0 %u 1\n", (unsigned)gid);
	return write_file("/proc/self/gid_map", buf);
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
	o->err[NS_MAP] = map_self(uid, gid);
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
	detail(p, "; %s=%s", key, buf);
	json_object_set_new(p->data, key, json_string(buf));
}

static void
probe_userns(struct probe *p, bool *container_ok)
{
	struct child_out o;
	p->name = "userns";
	json_t *ns = json_object();
	json_object_set_new(p->data, "namespaces", ns);
	if (run_child(userns_child, NULL, &o) < 0) {
		p->st = ST_MISSING;
		detail(p, "probe child failed");
		*container_ok = false;
		return;
	}
	bool all = true, need = true;
	for (int i = 0; i < NS_COUNT; i++) {
		int e = o.err[i];
		json_object_set_new(ns, ns_names[i],
				    e == 0 ? json_true() : json_string(errname(e)));
		if (e != 0)
			all = false;
		/* needed by the container level; ipc/uts/cgroup only harden it */
		if (e != 0 && (i == NS_USER || i == NS_MAP || i == NS_MNT || i == NS_PID ||
			       i == NS_NET || i == NS_LO))
			need = false;
	}
	if (o.err[NS_USER] != 0) {
		detail(p, "unshare(CLONE_NEWUSER): %s", errname(o.err[NS_USER]));
	} else {
		detail(p, "created");
		const char *sep = " ";
		for (int i = 0; i < NS_COUNT; i++) {
			if (i == NS_MAP || i == NS_LO)
				continue;
			if (o.err[i] == 0) {
				detail(p, "%s%s", sep, ns_names[i]);
				sep = ", ";
			}
		}
		detail(p, " namespaces");
		for (int i = 0; i < NS_COUNT; i++)
			if (o.err[i] != 0)
				detail(p, "; %s: %s", ns_names[i], errname(o.err[i]));
		if (o.err[NS_MAP] == 0)
			detail(p, "; uid map written");
		if (o.err[NS_LO] == 0)
			detail(p, "; loopback up");
	}
	detail(p, " (as uid %u)", (unsigned)geteuid());
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

static void
probe_landlock(struct probe *p, int *abi_out)
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
			detail(p, "not in this kernel (CONFIG_SECURITY_LANDLOCK)");
		else if (e == EOPNOTSUPP)
			detail(p, "built in but disabled: add landlock to the lsm= boot parameter");
		else
			detail(p, "landlock_create_ruleset: %s", errname(e));
		return;
	}
	int iabi = (int)abi;
	struct child_out o;
	if (run_child(landlock_child, &iabi, &o) < 0 || o.err[0] != 0) {
		p->st = ST_MISSING;
		detail(p, "ABI %d, but applying a ruleset failed: %s", iabi,
		       errname(o.err[0] > 0 ? o.err[0] : EIO));
		json_object_set_new(p->data, "enforced", json_false());
		return;
	}
	bool enforced = o.err[1] == EACCES && o.err[2] == 0;
	json_object_set_new(p->data, "enforced", json_boolean(enforced));
	if (!enforced) {
		p->st = ST_MISSING;
		detail(p, "ABI %d, but a write outside the rules was not refused (%s)", iabi,
		       errname(o.err[1]));
		return;
	}
	*abi_out = iabi;
	p->st = ST_OK;
	detail(p, "ABI %d enforced: filesystem", iabi);
	json_t *f = json_array();
	json_array_append_new(f, json_string("fs"));
	if (iabi >= 2) {
		detail(p, ", refer");
		json_array_append_new(f, json_string("refer"));
	}
	if (iabi >= 3) {
		detail(p, ", truncate");
		json_array_append_new(f, json_string("truncate"));
	}
	if (iabi >= 4) {
		detail(p, ", TCP bind/connect");
		json_array_append_new(f, json_string("tcp"));
	}
	if (iabi >= 5) {
		detail(p, ", device ioctl");
		json_array_append_new(f, json_string("ioctl_dev"));
	}
	if (iabi >= 6) {
		detail(p, ", abstract-unix and signal scopes");
		json_array_append_new(f, json_string("scope"));
	}
	if (iabi >= 7) {
		detail(p, ", audit logging flags");
		json_array_append_new(f, json_string("log_flags"));
	}
	json_object_set_new(p->data, "features", f);
	if (iabi < 4) {
		worsen(p, ST_WARN);
		detail(p, "; no TCP fencing before ABI 4 (Linux 6.7)");
	} else if (iabi < 6) {
		worsen(p, ST_WARN);
		detail(p, "; no socket/signal scoping before ABI 6 (Linux 6.12)");
	}
	errno = 0;
	long errata = syscall(SYS_landlock_create_ruleset, NULL, 0, 2 /* ..._ERRATA */);
	if (errata >= 0) {
		detail(p, "; errata 0x%lx", errata);
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

static void
probe_seccomp(struct probe *p, bool *ok)
{
	p->name = "seccomp";
	struct child_out o;
	*ok = false;
	json_object_set_new(p->data, "instructions", json_integer(jail_seccomp_prog.len));
	json_object_set_new(p->data, "refused_syscalls", json_integer(jail_seccomp_rule_count));
	if (run_child(seccomp_child, NULL, &o) < 0) {
		p->st = ST_MISSING;
		detail(p, "probe child died");
		return;
	}
	if (o.err[0]) {
		p->st = ST_MISSING;
		detail(p, "PR_SET_NO_NEW_PRIVS: %s", errname(o.err[0]));
	} else if (o.err[1]) {
		p->st = ST_MISSING;
		detail(p, "loading the filter: %s%s", errname(o.err[1]),
		       o.err[1] == EINVAL ? " (CONFIG_SECCOMP_FILTER?)" : "");
	} else if (o.err[2] != EPERM || o.err[3] != 0) {
		p->st = ST_MISSING;
		detail(p, "filter loaded but unshare(0) gave %s", errname(o.err[2]));
	} else {
		p->st = ST_OK;
		*ok = true;
		detail(p,
		       "filter loaded (%u instructions, %u syscalls refused), unshare() -> EPERM",
		       (unsigned)jail_seccomp_prog.len, jail_seccomp_rule_count);
		if (o.val[0] != 2)
			detail(p, "; /proc/self/status Seccomp: %ld", o.val[0]);
	}
	json_object_set_new(p->data, "works", json_boolean(*ok));
}

/* ----------------------------------------------------------------- cgroups */

static bool
has_token(const char *list, const char *tok, char sep)
{
	size_t n = strlen(tok);
	for (const char *s = list; s && *s;) {
		const char *e = strchr(s, sep);
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == n && !memcmp(s, tok, n))
			return true;
		s = e ? e + 1 : NULL;
	}
	return false;
}

static bool
exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Our own cgroup in the hierarchy of controller (v1) or the unified one
 * (controller ""), from /proc/self/cgroup. */
static void
self_cgroup(const char *controller, char *out, size_t cap)
{
	char buf[2048];
	snprintf(out, cap, "/");
	if (wd_read_file_at(AT_FDCWD, "/proc/self/cgroup", buf, sizeof(buf)) < 0)
		return;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		/* hierarchy-id:controller-list:path */
		char *c = strchr(l, ':');
		char *path = c ? strchr(c + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		if (controller[0] ? has_token(c + 1, controller, ',') : !c[1]) {
			snprintf(out, cap, "%s", path);
			return;
		}
	}
}

/* 0 if a cgroup can be created beside ours in this hierarchy, else errno. */
static int
try_mkcgroup(const char *mnt, const char *controller)
{
	char self[512], dir[1024];
	self_cgroup(controller, self, sizeof(self));
	snprintf(dir, sizeof(dir), "%s%s/warden-doctor-%d", mnt, strcmp(self, "/") ? self : "",
		 (int)getpid());
	if (mkdir(dir, 0755) < 0)
		return errno;
	rmdir(dir);
	return 0;
}

static void
probe_cgroup(struct probe *p)
{
	static const char *const wanted[] = {"memory", "pids", "cpu", "freezer"};
	char v1_mnt[WD_ARRAY_SIZE(wanted)][256] = {{0}};
	char v2_mnt[256] = "";
	p->name = "cgroup";

	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		p->st = ST_MISSING;
		detail(p, "/proc/self/mountinfo: %s", errname(errno));
		return;
	}
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		/* id parent maj:min root mountpoint opts [optional...] - fstype src superopts */
		char mnt[256];
		if (sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1)
			continue;
		const char *dash = strstr(line, " - ");
		if (!dash)
			continue;
		char fstype[32], super[512] = "";
		if (sscanf(dash + 3, "%31s %*s %511s", fstype, super) < 1)
			continue;
		if (!strcmp(fstype, "cgroup2") && !v2_mnt[0])
			snprintf(v2_mnt, sizeof(v2_mnt), "%s", mnt);
		if (strcmp(fstype, "cgroup"))
			continue;
		for (size_t i = 0; i < WD_ARRAY_SIZE(wanted); i++)
			if (!v1_mnt[i][0] && has_token(super, wanted[i], ','))
				snprintf(v1_mnt[i], sizeof(v1_mnt[i]), "%s", mnt);
	}
	free(line);
	fclose(f);

	/* v2: the controllers the root offers (cgroup.controllers). */
	char ctrl[512] = "";
	bool v2_ok = false;
	json_t *v2 = json_null();
	if (v2_mnt[0]) {
		char path[320];
		snprintf(path, sizeof(path), "%s/cgroup.controllers", v2_mnt);
		ssize_t n = wd_read_file_at(AT_FDCWD, path, ctrl, sizeof(ctrl));
		if (n < 0)
			ctrl[0] = '\0';
		ctrl[strcspn(ctrl, "\n")] = '\0';
		v2_ok = has_token(ctrl, "memory", ' ') && has_token(ctrl, "pids", ' ') &&
			has_token(ctrl, "cpu", ' ');
		v2 = json_object();
		json_object_set_new(v2, "mount", json_string(v2_mnt));
		json_object_set_new(v2, "controllers", json_string(ctrl));
		json_object_set_new(v2, "usable", json_boolean(v2_ok));
	}
	json_object_set_new(p->data, "v2", v2);

	/* v1: which wanted controllers are mounted, and enabled in /proc/cgroups. */
	bool v1_ok = v1_mnt[0][0] && v1_mnt[1][0] && v1_mnt[2][0];
	json_t *v1 = json_object();
	char enabled[512] = "";
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/cgroups", enabled, sizeof(enabled));
	if (n < 0)
		enabled[0] = '\0';
	for (size_t i = 0; i < WD_ARRAY_SIZE(wanted); i++)
		json_object_set_new(v1, wanted[i],
				    v1_mnt[i][0] ? json_string(v1_mnt[i]) : json_null());
	json_object_set_new(v1, "usable", json_boolean(v1_ok));
	json_object_set_new(p->data, "v1", v1);

	/* No-swap limits need swap accounting: memory.memsw.* on v1,
	 * memory.swap.max on v2 (absent at the root, so look at our own
	 * cgroup). */
	int swap = -1;
	char path[600];
	if (v2_ok) {
		char self[512] = "";
		if (wd_read_file_at(AT_FDCWD, "/proc/self/cgroup", self, sizeof(self)) > 0) {
			char *z = strstr(self, "0::");
			if (z) {
				z[strcspn(z, "\n")] = '\0';
				snprintf(path, sizeof(path), "%s%s/memory.swap.max", v2_mnt, z + 3);
				swap = exists(path) ? 1 : (strcmp(z + 3, "/") ? 0 : -1);
			}
		}
	} else if (v1_mnt[0][0]) {
		snprintf(path, sizeof(path), "%s/memory.memsw.limit_in_bytes", v1_mnt[0]);
		swap = exists(path);
	}
	json_object_set_new(p->data, "swap_accounting",
			    swap < 0 ? json_null() : json_boolean(swap));

	int version = v2_ok ? 2 : v1_ok ? 1 : 0;
	/* Mounted is not usable: try to create (and at once remove) a cgroup
	 * where warden would, beside our own in each needed hierarchy. */
	int mk = 0;
	const char *mk_where = "";
	if (version == 2) {
		mk = try_mkcgroup(v2_mnt, "");
		mk_where = v2_mnt;
	}
	for (size_t i = 0; version == 1 && i < 3 && !mk; i++) {
		mk = try_mkcgroup(v1_mnt[i], wanted[i]);
		mk_where = v1_mnt[i];
	}
	json_object_set_new(p->data, "can_create", mk ? json_string(errname(mk)) : json_true());
	json_object_set_new(p->data, "version", json_integer(version));
	if (version == 2) {
		p->st = ST_OK;
		detail(p, "v2 at %s (%s)", v2_mnt, ctrl);
	} else if (version == 1) {
		p->st = ST_OK;
		detail(p, "v1:");
		for (size_t i = 0; i < WD_ARRAY_SIZE(wanted); i++)
			if (v1_mnt[i][0])
				detail(p, " %s", wanted[i]);
		if (!v1_mnt[3][0]) {
			worsen(p, ST_WARN);
			detail(p, " (no freezer: kill-all loops instead of freezing)");
		}
		if (v2_mnt[0])
			detail(p, "; v2 at %s with %s", v2_mnt, ctrl[0] ? ctrl : "no controllers");
	} else {
		p->st = ST_WARN;
		detail(p, "no usable hierarchy with memory, pids and cpu: --memory, --pids and "
			  "--cpus cannot be enforced");
		for (size_t i = 0; i < 3; i++)
			if (!v1_mnt[i][0] && !(v2_mnt[0] && has_token(ctrl, wanted[i], ' ')))
				detail(p, "; %s missing%s", wanted[i],
				       has_token(enabled, wanted[i], '\t') ? ""
									   : " from /proc/cgroups");
	}
	if (version && mk) {
		worsen(p, ST_WARN);
		detail(p, "; cannot create a cgroup under %s (%s): limits would not be enforced",
		       mk_where, errname(mk));
	}
	if (version && swap == 0) {
		worsen(p, ST_WARN);
		detail(p, "; swap accounting off: the memory limit cannot exclude swap "
			  "(swapaccount=1)");
	} else if (version && swap == 1) {
		detail(p, "; swap accounting on");
	}
}

/* --------------------------------------------------------------- overlayfs */

static char tmp_root[64];

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void
rm_tree(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void
overlay_child(struct child_out *o, void *arg)
{
	bool use_userns = *(bool *)arg;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (use_userns) {
		o->err[0] = unshare(CLONE_NEWUSER) ? errno : 0;
		if (o->err[0])
			return;
		o->err[1] = map_self(uid, gid);
	} else {
		o->err[0] = o->err[1] = 0;
	}
	o->err[2] = unshare(CLONE_NEWNS) ? errno : 0;
	if (o->err[2])
		return;
	/* Nothing done here may propagate back to the host's namespace. */
	o->err[3] = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ? errno : 0;
	if (o->err[3])
		return;
	char opts[512], merged[128], file[160];
	snprintf(opts, sizeof(opts), "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work",
		 tmp_root, tmp_root, tmp_root);
	snprintf(merged, sizeof(merged), "%s/merged", tmp_root);
	o->err[4] = mount("overlay", merged, "overlay", MS_NOSUID | MS_NODEV, opts) ? errno : 0;
	if (o->err[4])
		return;
	/* copy-up: write through the overlay */
	snprintf(file, sizeof(file), "%s/merged/probe", tmp_root);
	int fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	o->err[5] = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	umount2(merged, MNT_DETACH);
}

static int
make_tmp_tree(void)
{
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/warden-doctor-XXXXXX");
	if (!mkdtemp(tmp_root)) {
		tmp_root[0] = '\0';
		return errno;
	}
	static const char *const sub[] = {"lower", "upper", "work", "merged"};
	char path[128];
	for (size_t i = 0; i < WD_ARRAY_SIZE(sub); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp_root, sub[i]);
		if (mkdir(path, 0700) < 0)
			return errno;
	}
	return 0;
}

static void
probe_overlay(struct probe *p, bool userns_ok)
{
	p->name = "overlayfs";
	char fs[4096];
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/filesystems", fs, sizeof(fs));
	bool listed = n > 0 && strstr(fs, "\toverlay\n");
	json_object_set_new(p->data, "listed", json_boolean(listed));
	int e = make_tmp_tree();
	if (e) {
		p->st = ST_WARN;
		detail(p, "cannot create a temporary directory under /tmp: %s", errname(e));
		rm_tree(tmp_root);
		return;
	}
	/* The cow workspace mounts its overlay inside the jail's user+mount
	 * namespace, so that is where to try (Linux >= 5.11 allows it).  As
	 * root without user namespaces, a plain mount namespace still tells
	 * whether overlayfs works at all. */
	bool in_userns = userns_ok || geteuid() != 0;
	struct child_out o;
	int rc = run_child(overlay_child, &in_userns, &o);
	rm_tree(tmp_root);
	json_object_set_new(p->data, "in_user_namespace", json_boolean(in_userns));
	bool ok = rc == 0 && o.err[4] == 0 && o.err[5] == 0;
	json_object_set_new(p->data, "works", json_boolean(ok));
	if (ok) {
		p->st = ST_OK;
		detail(p, "overlay mounted and written %s",
		       in_userns ? "inside a user+mount namespace" : "inside a mount namespace");
		return;
	}
	p->st = ST_WARN;
	static const char *const step[] = {"unshare(CLONE_NEWUSER)", "uid map",
					   "unshare(CLONE_NEWNS)",   "making / private",
					   "mount overlay",	     "write through the overlay"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(step); i++)
		if (rc == 0 && o.err[i] != 0) {
			detail(p, "%s: %s", step[i], errname(o.err[i] > 0 ? o.err[i] : EIO));
			break;
		}
	if (rc != 0)
		detail(p, "probe child died");
	detail(p, "%s; cow workspaces unavailable",
	       listed ? "" : " (overlay not in /proc/filesystems)");
}

/* ------------------------------------------------------- idmapped mounts */

static const char *
fs_name(long type)
{
	switch ((unsigned long)type) {
	case 0xEF53:
		return "ext4";
	case 0x01021994:
		return "tmpfs";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	case 0x794c7630:
		return "overlayfs";
	case 0x2FC12FC1:
		return "zfs";
	case 0x6969:
		return "nfs";
	case 0xF2F52010:
		return "f2fs";
	default:
		return "another filesystem";
	}
}

/* Try MOUNT_ATTR_IDMAP on a detached clone of dir.  The clone is never
 * attached anywhere and vanishes with its fd. */
static int
try_idmap(const char *dir, int userns_fd)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0)
		return errno;
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns_fd};
	int e = syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) ? errno : 0;
	close(fd);
	return e;
}

static void
probe_idmap(struct probe *p, bool *root_ok)
{
	p->name = "idmap";
	*root_ok = true;
	if (geteuid() != 0) {
		p->st = ST_OK;
		detail(p, "not needed: run as a user, the sandbox user maps to the caller");
		json_object_set_new(p->data, "needed", json_false());
		return;
	}
	json_object_set_new(p->data, "needed", json_true());
	/* A user namespace to map through: a child that unshares and waits. */
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0) {
		p->st = ST_WARN;
		detail(p, "pipe: %s", errname(errno));
		*root_ok = false;
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		close(sync[1]);
		char c;
		if (unshare(CLONE_NEWUSER) == 0)
			(void)!read(sync[0], &c, 1); /* until the parent closes */
		_exit(0);
	}
	close(sync[0]);
	int e = pid < 0 ? errno : 0;
	int userns_fd = -1;
	char path[64];
	for (int tries = 0; pid > 0 && tries < 500 && userns_fd < 0; tries++) {
		/* wait until the child's namespace differs from ours */
		struct stat a, b;
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if (stat(path, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 &&
		    a.st_ino != b.st_ino) {
			char map[64];
			/* the sandbox's ids land on nobody (65534) on the host */
			snprintf(map, sizeof(map), "/proc/%d/uid_map", (int)pid);
			e = write_file(map, "0 65534 1\n");
			snprintf(map, sizeof(map), "/proc/%d/gid_map", (int)pid);
			if (!e)
				e = write_file(map, "0 65534 1\n");
			userns_fd = e ? -2 : open(path, O_RDONLY | O_CLOEXEC);
			if (userns_fd == -1)
				e = errno;
			break;
		}
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
	int e_cwd = -1, e_tmp = -1;
	struct statfs sf_cwd = {0}, sf_tmp = {0};
	if (userns_fd >= 0) {
		e_cwd = try_idmap(".", userns_fd);
		e_tmp = try_idmap("/tmp", userns_fd);
		statfs(".", &sf_cwd);
		statfs("/tmp", &sf_tmp);
		close(userns_fd);
	} else if (!e) {
		e = ETIMEDOUT;
	}
	close(sync[1]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (e || userns_fd == -2) {
		p->st = ST_WARN;
		*root_ok = false;
		detail(p, "no user namespace to map through: %s", errname(e ? e : EPERM));
		return;
	}
	json_object_set_new(p->data, "cwd", e_cwd ? json_string(errname(e_cwd)) : json_true());
	json_object_set_new(p->data, "tmp", e_tmp ? json_string(errname(e_tmp)) : json_true());
	json_object_set_new(p->data, "cwd_fs", json_string(fs_name(sf_cwd.f_type)));
	*root_ok = e_cwd == 0;
	p->st = e_cwd == 0 && e_tmp == 0 ? ST_OK : ST_WARN;
	detail(p, "MOUNT_ATTR_IDMAP on %s (current directory): %s; on %s (/tmp): %s",
	       fs_name(sf_cwd.f_type), e_cwd ? errname(e_cwd) : "ok", fs_name(sf_tmp.f_type),
	       e_tmp ? errname(e_tmp) : "ok");
	if (e_cwd)
		detail(p, "; as root, a workspace here cannot be shown as the sandbox user's");
}

/* ---------------------------------------------------------- kernel config */

/* tests/integration/kernel-config lists the same options (keep in step). */
static const char *const kconfig[] = {
    "CONFIG_NAMESPACES",     "CONFIG_USER_NS",
    "CONFIG_PID_NS",	     "CONFIG_NET_NS",
    "CONFIG_UTS_NS",	     "CONFIG_IPC_NS",
    "CONFIG_CGROUPS",	     "CONFIG_MEMCG",
    "CONFIG_CGROUP_PIDS",    "CONFIG_CGROUP_SCHED",
    "CONFIG_CFS_BANDWIDTH",  "CONFIG_SECCOMP",
    "CONFIG_SECCOMP_FILTER", "CONFIG_SECURITY_LANDLOCK",
    "CONFIG_OVERLAY_FS",     "CONFIG_TMPFS",
    "CONFIG_PROC_FS",	     "CONFIG_UNIX",
    "CONFIG_INET",	     "CONFIG_EPOLL",
    "CONFIG_SIGNALFD",	     "CONFIG_TIMERFD",
};

/* The running kernel's config: /boot/config-RELEASE, else /proc/config.gz
 * through gzip (no zlib dependency for one diagnostic).  Returns a new
 * string or NULL. */
static char *
read_kconfig(const char **from)
{
	struct utsname u;
	char path[320];
	if (uname(&u) == 0) {
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		FILE *f = fopen(path, "re");
		if (f) {
			char *buf = NULL;
			size_t len = 0;
			FILE *m = open_memstream(&buf, &len);
			char chunk[4096];
			size_t k;
			while (m && (k = fread(chunk, 1, sizeof(chunk), f)) > 0)
				fwrite(chunk, 1, k, m);
			fclose(f);
			if (m)
				fclose(m);
			*from = "/boot/config-*";
			return buf;
		}
	}
	if (!exists("/proc/config.gz"))
		return NULL;
	const char *gz = exists("/usr/bin/gzip") ? "/usr/bin/gzip" : "/bin/gzip";
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	char a0[] = "gzip", a1[] = "-dc", a2[] = "/proc/config.gz";
	char *const argv[] = {a0, a1, a2, NULL};
	char *const envp[] = {NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, gz, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[8192];
	ssize_t k;
	while ((k = read(pfd[0], chunk, sizeof(chunk))) > 0 || (k < 0 && errno == EINTR))
		if (k > 0 && m)
			fwrite(chunk, 1, (size_t)k, m);
	close(pfd[0]);
	if (m)
		fclose(m);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		free(buf);
		return NULL;
	}
	*from = "/proc/config.gz";
	return buf;
}

static void
probe_kconfig(struct probe *p)
{
	p->name = "kernel-config";
	const char *from = NULL;
	char *cfg = read_kconfig(&from);
	if (!cfg) {
		p->st = ST_WARN;
		detail(p, "no kernel config to read (/boot/config-*, /proc/config.gz); the probes "
			  "above are what counts");
		json_object_set_new(p->data, "source", json_null());
		return;
	}
	json_object_set_new(p->data, "source", json_string(from));
	json_t *missing = json_array();
	char key[96];
	for (size_t i = 0; i < WD_ARRAY_SIZE(kconfig); i++) {
		bool found = false;
		for (const char *v = "ym"; *v && !found; v++) {
			snprintf(key, sizeof(key), "\n%s=%c\n", kconfig[i], *v);
			found = strstr(cfg, key) != NULL;
		}
		if (!found)
			json_array_append_new(missing, json_string(kconfig[i]));
	}
	/* Landlock must also be on the LSM list (or lsm= at boot). */
	const char *lsm = strstr(cfg, "\nCONFIG_LSM=\"");
	bool lsm_ll = false;
	if (lsm) {
		const char *end = strchr(lsm + 13, '"');
		char list[512];
		snprintf(list, sizeof(list), "%.*s", end ? (int)(end - lsm - 13) : 0, lsm + 13);
		lsm_ll = has_token(list, "landlock", ',');
	}
	json_object_set_new(p->data, "lsm_landlock", json_boolean(lsm_ll));
	size_t nmiss = json_array_size(missing);
	json_object_set_new(p->data, "missing", missing);
	p->st = nmiss ? ST_WARN : ST_OK;
	if (!nmiss)
		detail(p, "all %zu options in %s", WD_ARRAY_SIZE(kconfig), from);
	else {
		detail(p, "%s lacks", from);
		for (size_t i = 0; i < nmiss; i++)
			detail(p, " %s", json_string_value(json_array_get(missing, i)));
	}
	if (!lsm_ll)
		detail(p, "; landlock not in CONFIG_LSM (needs lsm= at boot)");
	free(cfg);
}

/* ------------------------------------------------------------------ report */

WD_API char *
wd_doctor(bool json, unsigned *ok_levels)
{
	enum { P_USERNS, P_SECCOMP, P_LANDLOCK, P_CGROUP, P_OVERLAY, P_IDMAP, P_KCONFIG, P_N };
	struct probe pr[P_N];
	memset(pr, 0, sizeof(pr));
	for (int i = 0; i < P_N; i++)
		pr[i].data = json_object();

	bool userns_ok = false, seccomp_ok = false, idmap_ok = true;
	int ll_abi = 0;
	probe_userns(&pr[P_USERNS], &userns_ok);
	probe_seccomp(&pr[P_SECCOMP], &seccomp_ok);
	probe_landlock(&pr[P_LANDLOCK], &ll_abi);
	probe_cgroup(&pr[P_CGROUP]);
	probe_overlay(&pr[P_OVERLAY], userns_ok);
	probe_idmap(&pr[P_IDMAP], &idmap_ok);
	probe_kconfig(&pr[P_KCONFIG]);

	/* Levels and the reasons against them. */
	char why_c[512] = "", why_p[512] = "", warn_c[512] = "", warn_p[512] = "";
	if (!userns_ok)
		snprintf(why_c + strlen(why_c), sizeof(why_c) - strlen(why_c),
			 "%suser/mount/pid/net namespaces unusable", why_c[0] ? "; " : "");
	if (!seccomp_ok) {
		snprintf(why_c + strlen(why_c), sizeof(why_c) - strlen(why_c), "%sseccomp unusable",
			 why_c[0] ? "; " : "");
		snprintf(why_p, sizeof(why_p), "seccomp unusable");
	}
	if (!ll_abi) {
		snprintf(warn_p, sizeof(warn_p),
			 "no Landlock: the filesystem is fenced by nothing "
			 "but permissions");
		snprintf(warn_c, sizeof(warn_c), "no Landlock second fence");
	}
	if (pr[P_CGROUP].st != ST_OK)
		snprintf(warn_c + strlen(warn_c), sizeof(warn_c) - strlen(warn_c),
			 "%scgroup limits degraded", warn_c[0] ? "; " : "");
	if (!idmap_ok)
		snprintf(warn_c + strlen(warn_c), sizeof(warn_c) - strlen(warn_c),
			 "%sno idmapped mounts for the workspace", warn_c[0] ? "; " : "");
	unsigned ok = 0;
	if (!why_c[0])
		ok |= 1u << WD_ISOLATION_CONTAINER;
	if (!why_p[0])
		ok |= 1u << WD_ISOLATION_PROCESS;
	*ok_levels = ok;

	char *out = NULL;
	if (json) {
		json_t *root = json_object();
		json_t *levels = json_object();
		const struct {
			const char *name;
			bool ok;
			const char *why, *warn;
		} lv[] = {
		    {"container", !why_c[0], why_c, warn_c},
		    {"process", !why_p[0], why_p, warn_p},
		};
		json_t *oks = json_array();
		for (size_t i = 0; i < WD_ARRAY_SIZE(lv); i++) {
			json_t *l = json_object();
			json_object_set_new(l, "ok", json_boolean(lv[i].ok));
			json_object_set_new(l, "why_not",
					    lv[i].ok ? json_null() : json_string(lv[i].why));
			json_object_set_new(l, "warnings",
					    lv[i].warn[0] ? json_string(lv[i].warn) : json_null());
			json_object_set_new(levels, lv[i].name, l);
			if (lv[i].ok)
				json_array_append_new(oks, json_string(lv[i].name));
		}
		json_object_set_new(root, "ok_levels", oks);
		json_object_set_new(root, "levels", levels);
		json_t *probes = json_object();
		for (int i = 0; i < P_N; i++) {
			json_object_set_new(pr[i].data, "status",
					    json_string(status_names[pr[i].st]));
			json_object_set_new(pr[i].data, "detail", json_string(pr[i].detail));
			json_object_set_new(probes, pr[i].name, pr[i].data);
			pr[i].data = NULL;
		}
		json_object_set_new(root, "probes", probes);
		char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(root);
		out = wd_xasprintf("%s\n", s ? s : "{}");
		free(s);
	} else {
		size_t len = 0;
		FILE *m = open_memstream(&out, &len);
		if (!m)
			abort();
		for (int i = 0; i < P_N; i++)
			fprintf(m, "%-8s %-14s %s\n", status_names[pr[i].st], pr[i].name,
				pr[i].detail);
		fprintf(m, "\nisolation levels:\n");
		fprintf(m, "  container  %s%s", why_c[0] ? "no: " : "yes", why_c);
		if (!why_c[0] && warn_c[0])
			fprintf(m, " (warning: %s)", warn_c);
		fprintf(m, "\n  process    %s%s", why_p[0] ? "no: " : "yes", why_p);
		if (!why_p[0] && warn_p[0])
			fprintf(m, " (warning: %s)", warn_p);
		else if (!why_p[0])
			fprintf(m, " (Landlock ABI %d)", ll_abi);
		fprintf(m, "\n");
		if (fclose(m) != 0 || !out)
			abort();
	}
	for (int i = 0; i < P_N; i++)
		json_decref(pr[i].data);
	return out;
}
