/* doctor/doctor-host: the doctor's probes of the host's cgroups,
 * overlayfs, idmapped mounts and kernel configuration (see doctor.c). */
#include "doctor/doctor-internal.h"
#include "cgroup/cgroup.h"

#include <fcntl.h>
#include <ftw.h>
#include <linux/landlock.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <spawn.h>

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
/* cgroups, from the cgroup module's own discovery (the code sandboxes
 * use), then the real thing: a sandbox cgroup with limits created where
 * warden would, and removed. */
void
doctor_probe_cgroup(struct probe *p)
{
	static const char *const names[CGROUP_NCTRL] = {"memory", "pids", "cpu", "cpuacct",
							"freezer"};
	struct cgroup_host_info h;
	p->name = "cgroup";
	cgroup_host_info(&h);

	json_t *v1 = json_object();
	for (int c = 0; c < CGROUP_NCTRL; c++)
		json_object_set_new(v1, names[c],
				    h.v1_mount[c] ? json_string(h.v1_mount[c]) : json_null());
	json_object_set_new(v1, "usable", json_boolean(h.version == 1));
	json_object_set_new(p->data, "v1", v1);
	json_t *v2 = json_null();
	if (h.v2_mount) {
		v2 = json_object();
		json_object_set_new(v2, "mount", json_string(h.v2_mount));
		json_object_set_new(v2, "controllers", json_string(h.v2_controllers));
		json_object_set_new(v2, "usable", json_boolean(h.version == 2));
	}
	json_object_set_new(p->data, "v2", v2);
	json_object_set_new(p->data, "version", json_integer(h.version));
	json_object_set_new(p->data, "swap_accounting",
			    h.swap_accounting < 0 ? json_null() : json_boolean(h.swap_accounting));
	json_t *bases = json_array();
	for (int i = 0; i < h.nhier; i++)
		json_array_append_new(bases, json_pack("{s:s,s:s}", "base", h.hier[i].base,
						       "controllers", h.hier[i].controllers));
	json_object_set_new(p->data, "hierarchies", bases);

	/* Mounted is not usable: create one as a sandbox would. */
	char id[64];
	snprintf(id, sizeof(id), "doctor-%d", (int)getpid());
	struct cgroup_limits lim = {64ULL << 20, 64, 500000};
	struct cgroup *cg = NULL;
	struct wd_err e = {0};
	int mk = h.version ? cgroup_create(id, &lim, &cg, &e) : -ENOTSUP;
	if (mk == 0) {
		cgroup_destroy(cg);
		cgroup_free(cg);
	}
	json_object_set_new(p->data, "can_create",
			    mk ? json_string(doctor_errname(-mk)) : json_true());

	if (h.version == 2) {
		p->st = ST_OK;
		doctor_detail(p, "v2 at %s (%s)", h.hier[0].base, h.v2_controllers);
	} else if (h.version == 1) {
		p->st = ST_OK;
		doctor_detail(p, "v1:");
		for (int c = 0; c < CGROUP_NCTRL; c++)
			if (h.v1_mount[c])
				doctor_detail(p, " %s", names[c]);
		if (!h.v1_mount[4]) {
			doctor_worsen(p, ST_WARN);
			doctor_detail(p, " (no freezer: kill-all loops instead of freezing)");
		}
		if (h.v2_mount)
			doctor_detail(p, "; v2 at %s with %s", h.v2_mount,
				      h.v2_controllers[0] ? h.v2_controllers : "no controllers");
	} else {
		p->st = ST_WARN;
		doctor_detail(p,
			      "no usable hierarchy with memory, pids and cpu: --memory, --pids "
			      "and --cpus cannot be enforced (%s)",
			      h.why);
	}
	if (h.version && mk) {
		doctor_worsen(p, ST_WARN);
		doctor_detail(p,
			      "; cannot create a sandbox cgroup (%s): limits would not be "
			      "enforced (runs need --best-effort)",
			      e.msg);
	}
	if (h.version && h.swap_accounting == 0) {
		doctor_worsen(p, ST_WARN);
		doctor_detail(p, "; swap accounting off: the memory limit cannot exclude swap "
				 "(swapaccount=1)");
	} else if (h.version && h.swap_accounting == 1) {
		doctor_detail(p, "; swap accounting on");
	}
}

/* --------------------------------------------------------------- overlayfs */

static char tmp_root[64];

/* Remove one entry and go on whatever happens: overlayfs leaves a
 * work/work directory of mode 000, which an ordinary user cannot list
 * (FTW_DNR) but, being empty, can remove. */
static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_DNR || flag == FTW_D)
		(void)rmdir(path);
	else
		(void)unlink(path);
	return 0;
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
		o->err[1] = doctor_map_self(uid, gid);
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

void
doctor_probe_overlay(struct probe *p, bool userns_ok)
{
	p->name = "overlayfs";
	char fs[4096];
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/filesystems", fs, sizeof(fs));
	bool listed = n > 0 && strstr(fs, "\toverlay\n");
	json_object_set_new(p->data, "listed", json_boolean(listed));
	int e = make_tmp_tree();
	if (e) {
		p->st = ST_WARN;
		doctor_detail(p, "cannot create a temporary directory under /tmp: %s",
			      doctor_errname(e));
		rm_tree(tmp_root);
		return;
	}
	/* The cow workspace mounts its overlay inside the jail's user+mount
	 * namespace, so that is where to try (Linux >= 5.11 allows it).  As
	 * root without user namespaces, a plain mount namespace still tells
	 * whether overlayfs works at all. */
	bool in_userns = userns_ok || geteuid() != 0;
	struct child_out o;
	int rc = doctor_run_child(overlay_child, &in_userns, &o);
	rm_tree(tmp_root);
	json_object_set_new(p->data, "in_user_namespace", json_boolean(in_userns));
	bool ok = rc == 0 && o.err[4] == 0 && o.err[5] == 0;
	json_object_set_new(p->data, "works", json_boolean(ok));
	if (ok) {
		p->st = ST_OK;
		doctor_detail(p, "overlay mounted and written %s",
			      in_userns ? "inside a user+mount namespace"
					: "inside a mount namespace");
		return;
	}
	p->st = ST_WARN;
	static const char *const step[] = {"unshare(CLONE_NEWUSER)", "uid map",
					   "unshare(CLONE_NEWNS)",   "making / private",
					   "mount overlay",	     "write through the overlay"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(step); i++)
		if (rc == 0 && o.err[i] != 0) {
			doctor_detail(p, "%s: %s", step[i],
				      doctor_errname(o.err[i] > 0 ? o.err[i] : EIO));
			break;
		}
	if (rc != 0)
		doctor_detail(p, "probe child died");
	doctor_detail(p, "%s; cow workspaces unavailable",
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

void
doctor_probe_idmap(struct probe *p, bool *root_ok)
{
	p->name = "idmap";
	*root_ok = true;
	if (geteuid() != 0) {
		p->st = ST_OK;
		doctor_detail(p, "not needed: run as a user, the sandbox user maps to the caller");
		json_object_set_new(p->data, "needed", json_false());
		return;
	}
	json_object_set_new(p->data, "needed", json_true());
	/* A user namespace to map through: a child that unshares and waits. */
	int sync[2];
	if (pipe2(sync, O_CLOEXEC) < 0) {
		p->st = ST_WARN;
		doctor_detail(p, "pipe: %s", doctor_errname(errno));
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
			e = doctor_write_file(map, "0 65534 1\n");
			snprintf(map, sizeof(map), "/proc/%d/gid_map", (int)pid);
			if (!e)
				e = doctor_write_file(map, "0 65534 1\n");
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
		doctor_detail(p, "no user namespace to map through: %s",
			      doctor_errname(e ? e : EPERM));
		return;
	}
	json_object_set_new(p->data, "cwd",
			    e_cwd ? json_string(doctor_errname(e_cwd)) : json_true());
	json_object_set_new(p->data, "tmp",
			    e_tmp ? json_string(doctor_errname(e_tmp)) : json_true());
	json_object_set_new(p->data, "cwd_fs", json_string(fs_name(sf_cwd.f_type)));
	*root_ok = e_cwd == 0;
	p->st = e_cwd == 0 && e_tmp == 0 ? ST_OK : ST_WARN;
	doctor_detail(p, "MOUNT_ATTR_IDMAP on %s (current directory): %s; on %s (/tmp): %s",
		      fs_name(sf_cwd.f_type), e_cwd ? doctor_errname(e_cwd) : "ok",
		      fs_name(sf_tmp.f_type), e_tmp ? doctor_errname(e_tmp) : "ok");
	if (e_cwd)
		doctor_detail(p,
			      "; as root, a workspace here cannot be shown as the sandbox user's");
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

void
doctor_probe_kconfig(struct probe *p)
{
	p->name = "kernel-config";
	const char *from = NULL;
	char *cfg = read_kconfig(&from);
	if (!cfg) {
		p->st = ST_WARN;
		doctor_detail(
		    p, "no kernel config to read (/boot/config-*, /proc/config.gz); the probes "
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
		doctor_detail(p, "all %zu options in %s", WD_ARRAY_SIZE(kconfig), from);
	else {
		doctor_detail(p, "%s lacks", from);
		for (size_t i = 0; i < nmiss; i++)
			doctor_detail(p, " %s", json_string_value(json_array_get(missing, i)));
	}
	if (!lsm_ll)
		doctor_detail(p, "; landlock not in CONFIG_LSM (needs lsm= at boot)");
	free(cfg);
}
