/* cgroup host discovery: which version, which mount points, and where this
 * process may create sandbox cgroups.  Runs once per process: `warden run`
 * is a fresh process per command, so this is on the hot path exactly once,
 * and every later call works from the cached struct (two /proc reads and a
 * handful of access() checks, no per-call parsing). */
#include "cgroup/cgroup-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/magic.h>
#include <sys/statfs.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

const char *const cg_ctrl_names[CG_NCTRL] = {"memory", "pids", "cpu", "cpuacct", "freezer"};

static struct cg_host host = {.lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

/* What the two /proc files told us; freed at the end of discovery. */
struct mnt {
	char *point; /* mount point */
	char *root;  /* the hierarchy path mounted there ("/" unless a container bind) */
	bool ro;     /* mounted read-only (a container's usual /sys/fs/cgroup) */
};
struct found {
	struct mnt v1[CG_NCTRL];
	struct mnt v2;
	char *own_v1[CG_NCTRL]; /* this process's cgroup path per controller */
	char *own_v2;
};

/* Whole small /proc file; NULL on error.  The buffer grows: mountinfo on a
 * container host can be tens of kilobytes. */
static char *
slurp(const char *path)
{
	wd_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 8192, len = 0;
	char *buf = wd_xmalloc(cap);
	for (;;) {
		if (cap - len < 2) {
			cap *= 2;
			buf = wd_xrealloc(buf, cap);
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo; in place. */
static void
unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Does the comma-separated list contain name as a whole item? */
static bool
list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && memcmp(p, name, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

static void
mnt_set(struct mnt *m, const char *point, const char *root, const char *opts)
{
	free(m->point);
	free(m->root);
	m->point = wd_xstrdup(point);
	m->root = wd_xstrdup(root);
	m->ro = list_has(opts, "ro");
}

/* One mountinfo line:
 *   36 25 0:32 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
 *   (1)(2)(3) (4)(5)                   (6) [opt] - (7)    (8)    (9)
 * (4) is the path inside the hierarchy that is mounted at (5); (9) lists the
 * v1 controllers.  A hierarchy mounted twice keeps the mount of its root. */
static void
parse_mount_line(char *line, struct found *f)
{
	char *field[6];
	char *save = NULL;
	char *sep = strstr(line, " - ");
	if (!sep)
		return;
	*sep = '\0';
	char *tail = sep + 3;
	char *p = line;
	for (int i = 0; i < 6; i++) {
		field[i] = strtok_r(p, " ", &save);
		p = NULL;
		if (!field[i])
			return;
	}
	char *fstype = strtok_r(tail, " ", &save);
	char *source = strtok_r(NULL, " ", &save);
	char *super = strtok_r(NULL, " ", &save);
	if (!fstype || !source || !super)
		return;
	char *root = field[3], *point = field[4], *opts = field[5];
	unescape(root);
	unescape(point);
	if (strcmp(fstype, "cgroup2") == 0) {
		/* Prefer the canonical place, then the first one found. */
		if (!f->v2.point || strcmp(point, "/sys/fs/cgroup") == 0)
			mnt_set(&f->v2, point, root, opts);
		return;
	}
	if (strcmp(fstype, "cgroup") != 0)
		return;
	for (int c = 0; c < CG_NCTRL; c++) {
		if (!list_has(super, cg_ctrl_names[c]))
			continue;
		if (!f->v1[c].point || (strcmp(f->v1[c].root, "/") != 0 && strcmp(root, "/") == 0))
			mnt_set(&f->v1[c], point, root, opts);
	}
}

/* /proc/self/cgroup: "hierarchy-id:controllers:path", "0::path" for v2. */
static void
parse_cgroup_line(char *line, struct found *f)
{
	char *c1 = strchr(line, ':');
	char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2)
		return;
	*c1 = '\0';
	*c2 = '\0';
	const char *ctrls = c1 + 1, *path = c2 + 1;
	if (strcmp(line, "0") == 0 && !*ctrls) {
		free(f->own_v2);
		f->own_v2 = wd_xstrdup(path);
		return;
	}
	for (int c = 0; c < CG_NCTRL; c++) {
		if (list_has(ctrls, cg_ctrl_names[c])) {
			free(f->own_v1[c]);
			f->own_v1[c] = wd_xstrdup(path);
		}
	}
}

static void
for_each_line(char *buf, struct found *f, void (*fn)(char *, struct found *))
{
	char *save = NULL;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		fn(line, f);
}

/* The directory of cgroup path `own` under mount m, or NULL when the mount
 * does not show it (a container's bind of some other subtree). */
static char *
own_dir(const struct mnt *m, const char *own)
{
	if (!m->point || !own || own[0] != '/')
		return NULL;
	size_t rl = strcmp(m->root, "/") == 0 ? 0 : strlen(m->root);
	if (rl && (strncmp(own, m->root, rl) != 0 || (own[rl] != '/' && own[rl] != '\0')))
		return NULL;
	const char *rest = own + rl;
	if (strcmp(rest, "/") == 0 || !*rest)
		return wd_xstrdup(m->point);
	return wd_xasprintf("%s%s", m->point, rest);
}

/* For root, permission bits do not matter (CAP_DAC_OVERRIDE) and a
 * read-only mount shows in mountinfo: no syscall.  Root in a user namespace
 * that does not own the cgroupfs gets EACCES from mkdir later, which
 * cgroup_create() reports as EPERM all the same. */
static int
writable(const struct mnt *m, const char *dir, const char *file)
{
	if (geteuid() == 0)
		return m->ro ? -EROFS : 0;
	wd_autofree char *p = file ? wd_xasprintf("%s/%s", dir, file) : NULL;
	return access(p ? p : dir, W_OK) == 0 ? 0 : -errno;
}

static void unusable(int rc, const char *fmt, ...) WD_PRINTF(2, 3);
static void
unusable(int rc, const char *fmt, ...)
{
	va_list ap;
	/* EACCES and EROFS both mean "not yours": report EPERM so the
	 * supervisor can say "cgroup: none" with one check. */
	host.unusable = (rc == -EACCES || rc == -EROFS || rc == 0) ? -EPERM : rc;
	va_start(ap, fmt);
	vsnprintf(host.why, sizeof(host.why), fmt, ap);
	va_end(ap);
}

/* v1 base, per hierarchy.  As root: the hierarchy root, like Docker's
 * cgroupfs driver (/sys/fs/cgroup/memory/docker/<id>).  v1 has no delegation
 * model, and warden's own v1 cgroup is whatever its launcher chose (a login
 * session, a service, another tool's per-process group): nesting there would
 * scatter `warden/` directories into cgroups owned by others and leave them
 * behind when those are removed.  As another user: our own cgroup, if an
 * administrator made it writable; else none. */
static void
setup_v1(struct found *f)
{
	host.version = 1;
	bool root = geteuid() == 0;
	for (int c = 0; c < CG_NCTRL; c++) {
		const struct mnt *m = &f->v1[c];
		if (!m->point)
			continue;
		int i;
		for (i = 0; i < host.nhier; i++) {
			/* co-mounted ("cpu,cpuacct"): one directory serves both */
			wd_autofree char *mine = root ? NULL : own_dir(m, f->own_v1[c]);
			const char *cand = root ? m->point : mine;
			if (cand && strcmp(host.hier[i].base, cand) == 0)
				break;
		}
		if (i == host.nhier) {
			char *base = root ? wd_xstrdup(m->point) : own_dir(m, f->own_v1[c]);
			if (!base) {
				unusable(
				    -EPERM,
				    "cgroup v1 %s: this process's cgroup is not visible under %s",
				    cg_ctrl_names[c], m->point);
				return;
			}
			host.hier[host.nhier].base = base;
			host.nhier++;
			int rc = writable(m, base, NULL);
			if (rc < 0 && !host.unusable && root)
				unusable(rc, "cgroup v1: %s is mounted read-only (%s)", base,
					 "a container's cgroup file system");
			else if (rc < 0 && !host.unusable)
				unusable(rc, "cgroup v1: %s is not writable by this user (%s)",
					 base, "run warden as root or delegate the hierarchy");
		}
		host.hier[i].ctrls |= CG_BIT(c);
	}
}

/* Does dir's cgroup.subtree_control enable anything? */
static bool
distributes(const char *dir)
{
	char buf[256];
	wd_autoclose int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dfd >= 0 && wd_read_file_at(dfd, "cgroup.subtree_control", buf, sizeof(buf)) > 1;
}

/* v2 base.  Our own cgroup when it is delegated to us: as another user,
 * writable means delegated (systemd's Delegate=yes chowns the subtree); as
 * root everything is writable, so delegated means it already distributes
 * controllers or is the root of what we can see (a container's cgroup
 * namespace).  Otherwise root uses the hierarchy root, which the kernel
 * exempts from the no-internal-process rule.  A migration also needs write
 * access to cgroup.procs of the common ancestor (cgroup-v2.rst,
 * "Delegation Containment"), hence the second check. */
static void
setup_v2(struct found *f)
{
	host.version = 2;
	host.nhier = 1;
	wd_autofree char *own = own_dir(&f->v2, f->own_v2);
	bool root = geteuid() == 0;
	if (own && writable(&f->v2, own, NULL) == 0 && writable(&f->v2, own, "cgroup.procs") == 0 &&
	    (!root || strcmp(own, f->v2.point) == 0 || distributes(own))) {
		host.hier[0].base = wd_steal_ptr(&own);
		host.v2_base_is_own = true;
		return;
	}
	host.hier[0].base = wd_xstrdup(f->v2.point);
	if (!root) {
		unusable(-EPERM,
			 "cgroup v2: no delegated subtree (%s is not writable by this user; %s)",
			 own ? own : f->v2.point, "try systemd-run --user -p Delegate=yes --scope");
		return;
	}
	int rc = writable(&f->v2, f->v2.point, NULL);
	if (rc < 0)
		unusable(rc, "cgroup v2: %s is mounted read-only (%s)", f->v2.point,
			 "a container's cgroup file system");
}

static void
read_own_cgroups(struct found *f)
{
	char *cg = slurp("/proc/self/cgroup");
	if (cg)
		for_each_line(cg, f, parse_cgroup_line);
	free(cg);
}

static void
discover(void)
{
	struct found f = {0};
	char *mi = slurp("/proc/self/mountinfo");
	if (mi)
		for_each_line(mi, &f, parse_mount_line);
	free(mi);

	/* v1 wins when it holds the controllers: on a hybrid host (systemd's
	 * "hybrid" mode, or this kind of VM) the v2 hierarchy exists but has
	 * no memory/pids/cpu, since a controller lives in one hierarchy. */
	bool v1 = true;
	for (int c = 0; c < CG_NCTRL; c++)
		if ((CG_V1_REQUIRED & CG_BIT(c)) && !f.v1[c].point)
			v1 = false;
	/* Our own cgroup matters except to root on v1 (see setup_v1); skip
	 * the read there, as discovery is paid once per `warden run`. */
	if (!v1 || geteuid() != 0)
		read_own_cgroups(&f);
	if (v1)
		setup_v1(&f);
	else if (f.v2.point)
		setup_v2(&f);
	else
		unusable(-ENOTSUP,
			 "cgroup: no cgroup2 mount and no v1 memory+pids+cpu hierarchies");

	for (int c = 0; c < CG_NCTRL; c++) {
		host.v1_mount[c] = f.v1[c].point; /* kept for cgroup_host_info */
		free(f.v1[c].root);
		free(f.own_v1[c]);
	}
	host.v2_mount = f.v2.point;
	free(f.v2.root);
	free(f.own_v2);
}

struct cg_host *
cg_host_get(void)
{
	pthread_once(&host_once, discover);
	return &host;
}

bool
cgroup_host_surely_v1(void)
{
	static const char *const dirs[] = {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids",
					   "/sys/fs/cgroup/cpu"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(dirs); i++) {
		struct statfs sf;
		if (statfs(dirs[i], &sf) < 0 || sf.f_type != CGROUP_SUPER_MAGIC)
			return false;
	}
	return true;
}

int
cgroup_host_version(void)
{
	return cg_host_get()->version;
}

int
cgroup_host_check(struct wd_err *err)
{
	struct cg_host *h = cg_host_get();
	if (!h->unusable)
		return 0;
	if (h->unusable == -ENOTSUP) /* no hierarchy to use: the host's lack */
		return wd_err_set(err, WD_E_UNSUPPORTED, "%s", h->why);
	return wd_err_sys(err, -h->unusable, "%s", h->why);
}

void
cgroup_host_info(struct cgroup_host_info *out)
{
	struct cg_host *h = cg_host_get();
	memset(out, 0, sizeof(*out));
	out->version = h->version;
	out->unusable = h->unusable;
	snprintf(out->why, sizeof(out->why), "%s", h->why);
	out->nhier = h->nhier;
	for (int i = 0; i < h->nhier; i++) {
		out->hier[i].base = h->hier[i].base;
		size_t o = 0;
		for (int c = 0; c < CG_NCTRL; c++)
			if (h->hier[i].ctrls & CG_BIT(c))
				o += (size_t)snprintf(out->hier[i].controllers + o,
						      sizeof(out->hier[i].controllers) - o, "%s%s",
						      o ? "," : "", cg_ctrl_names[c]);
	}
	for (int c = 0; c < CG_NCTRL; c++)
		out->v1_mount[c] = h->v1_mount[c];
	out->v2_mount = h->v2_mount;
	if (h->v2_mount) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/cgroup.controllers", h->v2_mount);
		if (wd_read_file_at(AT_FDCWD, path, out->v2_controllers,
				    sizeof(out->v2_controllers)) < 0)
			out->v2_controllers[0] = '\0';
		out->v2_controllers[strcspn(out->v2_controllers, "\n")] = '\0';
	}
	/* Swap accounting: v1 memory.memsw.*, v2 memory.swap.max (absent at
	 * the root; look beside the base). */
	out->swap_accounting = -1;
	if (h->version == 1 && h->v1_mount[CG_MEMORY]) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/memory.memsw.limit_in_bytes",
			 h->v1_mount[CG_MEMORY]);
		out->swap_accounting = access(path, F_OK) == 0;
	} else if (h->version == 2 && h->nhier &&
		   strcmp(h->hier[0].base, h->v2_mount ? h->v2_mount : "")) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/memory.swap.max", h->hier[0].base);
		out->swap_accounting = access(path, F_OK) == 0;
	}
}

const char *
cgroup_host_base(int i)
{
	struct cg_host *h = cg_host_get();
	return i >= 0 && i < h->nhier ? h->hier[i].base : NULL;
}

static int
force_v2(const char *path, bool own)
{
	struct statfs sfs;
	if (statfs(path, &sfs) < 0)
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -ENOTSUP;
	struct cg_host *h = cg_host_get();
	pthread_mutex_lock(&h->lock);
	for (int i = 0; i < h->nhier; i++) {
		free(h->hier[i].base);
		h->hier[i] = (struct cg_hier){0};
	}
	h->version = 2;
	h->nhier = 1;
	h->hier[0].base = wd_xstrdup(path);
	h->unusable = 0;
	h->why[0] = '\0';
	h->v2_base_is_own = own;
	h->v2_probed = false;
	h->v2_enabled = 0;
	pthread_mutex_unlock(&h->lock);
	return access(path, W_OK) == 0 ? 0 : -errno;
}

int
cgroup_test_force_v2_root(const char *path)
{
	return force_v2(path, false);
}

int
cgroup_test_force_v2_own(const char *path)
{
	return force_v2(path, true);
}
