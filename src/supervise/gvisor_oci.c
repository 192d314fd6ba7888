/* supervise/gvisor_oci: the OCI bundle of a gvisor sandbox, from the jail
 * plan (supervisor side).
 *
 * The container level executes its plan itself (pid 1 walks the mount
 * operations); here the same plan is translated for runsc:
 *
 *   plan operation                      in the bundle
 *   MOUNT tmpfs on the new root         rootfs/ (a host directory, read-only
 *                                       to the sandbox: "root.readonly")
 *   MKDIR, MKFILE, SYMLINK, WRITE, COPY the same in rootfs/ (the curated
 *                                       /etc, the usrmerge links, mount points)
 *   BIND of a host path (a tree after   an OCI bind mount whose source is
 *   jail_build_host(): MOVE)            mnt/<k>, where the launcher mounts the
 *                                       detached tree (gvisor_run.c)
 *   MOUNT tmpfs on /tmp                 an OCI tmpfs (gVisor's own, sized)
 *   MASK of a file by a plan file       an OCI bind of the rootfs file
 *   MOUNT tmpfs on /dev/shm             an OCI tmpfs (sized, mode 1777)
 *   the rest of /dev, /proc, the masks  nothing: gVisor's sentry provides its
 *                                       own /dev and /proc, which never show
 *                                       the host's (no kcore, no sysrq, ...)
 *   SETATTR                             nothing (the rootfs is read-only)
 *
 * warden's seccomp table reaches the command as an OCI profile (runsc
 * --oci-seccomp: the sentry applies it to the command's calls): a call the
 * container level refuses is refused here too, so a bug in gVisor's
 * implementation of it (its user namespaces, ptrace, netlink, keyrings)
 * is out of reach, and no setuid bit can be set in the workspace, where
 * the host would honour it (jail/seccomp_rules.c).  Landlock has no
 * counterpart: the sentry does not implement it, and the mounts are the
 * whole file-system view. */
#include "supervise/gvisor.h"
#include "supervise/gvisor_wire.h"
#include "jail/jail.h"
#include "jail/seccomp.h"
#include "util/json.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The sandbox user, as at the container level. */
#define GV_UID 1000

static const char *
jail_path(const struct jail_plan *pl, const char *path)
{
	size_t n = strlen(pl->new_root);
	if (strncmp(path, pl->new_root, n) != 0)
		return NULL;
	return path[n] ? path + n : "/";
}

/* /dev and /proc are the sentry's own; /.empty only hides /proc entries. */
static bool
gvisor_provides(const char *jp)
{
	static const char *const own[] = {"/dev", "/proc", "/.empty"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(own); i++) {
		size_t n = strlen(own[i]);
		if (!strncmp(jp, own[i], n) && (jp[n] == '\0' || jp[n] == '/'))
			return true;
	}
	return false;
}

static void
add_mount(struct gv *g, struct gv_mount m)
{
	g->mounts = wd_xrealloc(g->mounts, (g->nmounts + 1) * sizeof(*g->mounts));
	g->mounts[g->nmounts++] = m;
}

/* OCI options of a bind, from the plan's mount attributes. */
static const char *
bind_options(uint64_t attr)
{
	if (attr & MOUNT_ATTR_RDONLY)
		return "rbind,ro,nosuid,nodev";
	return "rbind,rw,nosuid,nodev";
}

/* ---- protected paths ----
 *
 * pid 1 protects a path with mounts in its own namespace as it walks
 * (jail/mounts.c); here the same walk (jail_protect_walk) runs in the
 * supervisor over the host workspace before runsc starts, and what it
 * finds becomes OCI binds, each from a tree of its own opened beneath the
 * workspace's (gv_oci_open_protected), never a host path: every directory above a
 * protected entry bound over itself (a mount point: gVisor refuses its
 * rename or removal with EBUSY, so `mv vendor v2` cannot carry a nested
 * repository away and plant another), then every entry read-only.  Why
 * the whole walk and not only op->data: at this level only the
 * workspace's own .git used to be bound, so a nested repository's
 * commondir, a submodule's gitfile, a gitfile's or commondir's target and
 * a protected path's parents stayed writable (an attack pass; docs/threat-model.md). */

struct pw_entry {
	char *rel; /* relative to the workspace; owned */
	bool pin;  /* a directory above a protected entry (else: read-only) */
	bool dir;
	unsigned depth; /* '/' count: parents sort first */
};

struct pw {
	struct pw_entry *e;
	size_t n;
	/* the workspace's tree where the launcher mounts it (idmapped to
	 * the sandbox user) and its options, or NULL: the binds are made
	 * from it, so a pinned directory stays the sandbox's to write */
	const char *tree;
	const char *tree_options;
};

static void
pw_fini(struct pw *pw)
{
	for (size_t i = 0; i < pw->n; i++)
		free(pw->e[i].rel);
	free(pw->e);
}

static void
pw_add(struct pw *pw, const char *rel, bool pin, bool dir)
{
	for (size_t i = 0; i < pw->n; i++)
		if (pw->e[i].pin == pin && !strcmp(pw->e[i].rel, rel))
			return;
	unsigned depth = 0;
	for (const char *c = rel; *c; c++)
		depth += *c == '/';
	pw->e = wd_xrealloc(pw->e, (pw->n + 1) * sizeof(*pw->e));
	pw->e[pw->n++] = (struct pw_entry){wd_xstrdup(rel), pin, dir, depth};
}

static int
pw_pin(void *ctx, int fd, const char *rel)
{
	(void)fd;
	pw_add(ctx, rel, true, true);
	return 0;
}

static int
pw_ro(void *ctx, int fd, const char *rel, bool dir)
{
	(void)fd;
	pw_add(ctx, rel, false, dir);
	return 0;
}

/* Is rel at or below the path under? */
static bool
at_or_below(const char *rel, const char *under)
{
	size_t n = strlen(under);
	return !strncmp(rel, under, n) && (rel[n] == '\0' || rel[n] == '/');
}

static int
protect_walk(struct sandbox *sb, struct pw *pw, const struct jail_op *op, struct wd_err *err)
{
	const char *ws = sb->spec->workspace ? sb->spec->workspace : ".";
	wd_autoclose int fd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "workspace %s", ws);
	const struct jail_protect_ops ops = {pw_pin, pw_ro, pw, NULL};
	int rc = jail_protect_walk(fd, op->data, ws, &ops);
	if (rc == -ELOOP)
		return wd_err_set(err, WD_E_INVAL,
				  "protected path %s (or one it implies) is a symbolic link, which "
				  "cannot be made read-only",
				  op->data);
	if (rc < 0)
		return wd_err_sys(err, -rc, "protected path %s", op->data);
	return 0;
}

static int
pw_cmp(const void *a, const void *b)
{
	const struct pw_entry *x = a, *y = b;
	if (x->pin != y->pin)
		return x->pin ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return strcmp(x->rel, y->rel);
}

/* The walk's binds, pins first and parents before children, so that no
 * bind hides one made before it.  A pin inside a read-only entry is left
 * out: the entry's read-only mount already refuses a rename in it, and a
 * host bind there would be writable. */
static int
protect_emit(struct sandbox *sb, struct gv *g, struct pw *pw, struct wd_err *err)
{
	const char *ws = sb->spec->workspace ? sb->spec->workspace : ".";
	size_t before = g->nmounts;
	if (pw->n) /* qsort's base must not be NULL, even for no element */
		qsort(pw->e, pw->n, sizeof(*pw->e), pw_cmp);
	for (size_t i = 0; i < pw->n; i++) {
		const struct pw_entry *e = &pw->e[i];
		bool inside_ro = false;
		for (size_t j = 0; j < pw->n && e->pin; j++)
			inside_ro |= !pw->e[j].pin && at_or_below(e->rel, pw->e[j].rel);
		if (inside_ro)
			continue;
		char *dst = wd_xasprintf("/workspace/%s", e->rel);
		if (e->pin) {
			/* a host bind over the directory would hide a --bind the
			 * caller placed below it: refuse rather than lose it */
			for (size_t k = 0; k < before; k++)
				if (at_or_below(g->mounts[k].dst, dst) &&
				    strcmp(g->mounts[k].dst, dst)) {
					int rc = wd_err_set(err, WD_E_INVAL,
							    "gvisor: --bind %s is below %s, a "
							    "directory above a protected path",
							    g->mounts[k].dst, dst);
					free(dst);
					return rc;
				}
		}
		/* the source is not the entry's host path but dir/mnt/p<k>,
		 * where the launcher mounts the entry's own tree, opened
		 * beneath the workspace's tree after it was built
		 * (gv_oci_open_protected): runsc opens a bind source by name
		 * and follows symbolic links, and another sandbox on the same
		 * workspace can turn a directory of the chain into a link to
		 * any host directory between this walk and runsc's start, which
		 * with a pinned parent's writable bind was a writable mount of
		 * that directory (an attack pass; docs/threat-model.md, 3) */
		const char *rw = pw->tree ? pw->tree_options : bind_options(0);
		struct gv_mount m = {dst,
				     "bind",
				     wd_xasprintf("%s/mnt/p%zu", g->dir, g->nmounts),
				     e->pin ? rw : bind_options(MOUNT_ATTR_RDONLY),
				     -1,
				     !e->dir,
				     dst,
				     wd_xstrdup(e->rel),
				     -1,
				     !e->pin};
		add_mount(g, m);
	}
	(void)ws;
	return 0;
}

/* The workspace's tree (the MOVE of the plan's workspace bind), or -1. */
static int
workspace_tree(const struct jail_plan *pl)
{
	for (int i = 0; i < pl->nops; i++)
		if (pl->ops[i].kind == JAIL_OP_MOVE && (pl->ops[i].flags & JAIL_OPF_WORKSPACE))
			return pl->ops[i].fd;
	return -1;
}

int
gv_oci_open_protected(struct sandbox *sb, struct gv *g, struct wd_err *err)
{
	const char *ws = sb->spec->workspace ? sb->spec->workspace : ".";
	int tree = workspace_tree(&sb->prep->plan);
	wd_autoclose int host = -1;
	if (tree < 0) {
		/* no tree of the workspace (not built as one): beneath the
		 * host directory itself, as the walk read it */
		host = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (host < 0)
			return wd_err_sys(err, errno, "workspace %s", ws);
		tree = host;
	}
	for (size_t i = 0; i < g->nmounts; i++) {
		struct gv_mount *m = &g->mounts[i];
		if (!m->rel || m->fd >= 0)
			continue;
		/* Beneath the tree, no symbolic link at any component, the
		 * last included: what is mounted is what the walk found or
		 * nothing, whatever the workspace became since (a link
		 * swapped in by another sandbox on it).  The tree is the
		 * idmapped workspace, so a clone of part of it keeps the
		 * sandbox user's ownership. */
		struct open_how how = {.flags = O_PATH | O_CLOEXEC,
				       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
						  RESOLVE_NO_MAGICLINKS};
		wd_autoclose int fd = (int)syscall(SYS_openat2, tree, m->rel, &how, sizeof(how));
		if (fd < 0 && errno == ELOOP)
			return wd_err_set(
			    err, WD_E_INVAL,
			    "gvisor: protected path %s of workspace %s became a symbolic "
			    "link (or one above it did) after it was checked; refusing",
			    m->rel, ws);
		if (fd < 0)
			return wd_err_sys(err, errno, "gvisor: protected path %s", m->rel);
		struct stat st;
		if (fstat(fd, &st) < 0)
			return wd_err_sys(err, errno, "gvisor: protected path %s", m->rel);
		if (!S_ISDIR(st.st_mode) != m->file)
			return wd_err_set(
			    err, WD_E_INVAL,
			    "gvisor: protected path %s of workspace %s is no longer a %s "
			    "since it was checked; refusing",
			    m->rel, ws, m->file ? "file" : "directory");
		int t = (int)syscall(SYS_open_tree, fd, "",
				     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
					 AT_RECURSIVE);
		if (t < 0)
			return wd_err_sys(err, errno, "gvisor: protected path %s: open_tree",
					  m->rel);
		m->fd = t;
		/* read-only at the host's mount too, not only in the OCI
		 * options: runsc's gofer, root on the host, then cannot write
		 * it either.  Private, as jail_build_host's clones are. */
		struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
						   (m->ro ? MOUNT_ATTR_RDONLY : 0),
				       .propagation = MS_PRIVATE};
		if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) <
		    0)
			return wd_err_sys(err, errno, "gvisor: protected path %s: mount_setattr",
					  m->rel);
	}
	return 0;
}

int
gv_oci_plan(struct sandbox *sb, struct gv *g, struct wd_err *err)
{
	const struct jail_plan *pl = &sb->prep->plan;
	size_t ntrees = 0;
	__attribute__((cleanup(pw_fini))) struct pw pw = {0};
	for (int i = 0; i < pl->nops; i++) {
		const struct jail_op *op = &pl->ops[i];
		const char *jp = jail_path(pl, op->path);
		/* /dev/shm is the plan's sized tmpfs: gVisor's own /dev/shm is
		 * not writable by the sandbox user (POSIX semaphores, Python's
		 * multiprocessing need it) */
		bool shm = op->kind == JAIL_OP_MOUNT && jp && !strcmp(jp, "/dev/shm");
		if (!jp || (gvisor_provides(jp) && !shm))
			continue;
		switch (op->kind) {
		case JAIL_OP_BIND:
		case JAIL_OP_MOVE: {
			if (!(op->flags & JAIL_OPF_HOSTPATH) && op->kind == JAIL_OP_BIND)
				return wd_err_set(err, WD_E_INTERNAL, "plan: bind of %s", jp);
			if (++ntrees > GV_MAX_TREES)
				return wd_err_set(err, WD_E_INVAL,
						  "too many binds for gvisor (limit %d)",
						  GV_MAX_TREES);
			struct stat st;
			bool file = stat(op->src, &st) == 0 && !S_ISDIR(st.st_mode);
			char *src = wd_xasprintf("%s/mnt/%d", g->dir, i);
			add_mount(g, (struct gv_mount){jp, "bind", src, bind_options(op->attr), i,
						       file, NULL, NULL, -1, false});
			if (op->flags & JAIL_OPF_WORKSPACE) {
				pw.tree = src;
				pw.tree_options = bind_options(op->attr);
			}
			break;
		}
		case JAIL_OP_MOUNT:
			if (!strcmp(op->path, pl->new_root))
				break; /* the root: rootfs/ */
			if (strcmp(op->src, "tmpfs") != 0)
				return wd_err_set(err, WD_E_INTERNAL, "plan: %s mount on %s",
						  op->src, jp);
			add_mount(g, (struct gv_mount){jp, "tmpfs", wd_xstrdup("tmpfs"), op->data,
						       -1, false, NULL, NULL, -1, false});
			break;
		case JAIL_OP_MASK: {
			/* a file of the plan shown over another (the TLS bundle over
			 * ca-certificates.crt) */
			const char *sp = jail_path(pl, op->src);
			if (!sp)
				return wd_err_set(err, WD_E_INTERNAL, "plan: mask of %s", jp);
			char *src = wd_xasprintf("%s/rootfs%s", g->dir, sp);
			add_mount(g, (struct gv_mount){jp, "bind", src, "bind,ro", -1, true, NULL,
						       NULL, -1, false});
			break;
		}
		case JAIL_OP_PROTECT: {
			/* a vacant sandbox's: walked in the workspace it is given,
			 * at attach (gv_attach), mounted in the gofer's namespace */
			if (op->flags & JAIL_OPF_LATE)
				break;
			int rc = protect_walk(sb, &pw, op, err);
			if (rc < 0)
				return rc;
			break;
		}
		case JAIL_OP_MKDIR:
		case JAIL_OP_MKFILE:
		case JAIL_OP_SYMLINK:
		case JAIL_OP_WRITE:
		case JAIL_OP_COPY:
		case JAIL_OP_SETATTR:
			break;
		}
	}
	int rc = protect_emit(sb, g, &pw, err);
	if (rc < 0)
		return rc;
	/* each protected entry and pinned parent is a tree of its own for the
	 * launcher (gv_oci_open_protected) */
	for (size_t i = 0; i < g->nmounts; i++)
		ntrees += g->mounts[i].rel != NULL;
	if (ntrees > GV_MAX_TREES)
		return wd_err_set(err, WD_E_INVAL,
				  "gvisor: %zu binds and protected paths (with their parent "
				  "directories), more than the limit of %d; protect fewer paths "
				  "(--protect, workspace.protect) or use --isolation container",
				  ntrees, GV_MAX_TREES);
	/* a vacant sandbox (warm pool): the staging mount, an empty directory
	 * of root's (the sandbox user can create nothing in it) whose w gets
	 * the workspace at attach (gvisor_wire.h) */
	if (sb->spec->vacant)
		add_mount(g, (struct gv_mount){GVW_STAGE, "bind", wd_xasprintf("%s/stage", g->dir),
					       bind_options(0), -1, false, NULL, NULL, -1, false});
	add_mount(g, (struct gv_mount){"/proc", "proc", wd_xstrdup("proc"), "nosuid,nodev,noexec",
				       -1, false, NULL, NULL, -1, false});
	return 0;
}

/* ---- rootfs/ on disk ---- */

static int
copy_file(int in, const char *to)
{
	wd_autoclose int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0)
		return -errno;
	char buf[16384];
	off_t off = 0;
	for (;;) {
		ssize_t n = pread(in, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		int rc = wd_write_all(out, buf, (size_t)n);
		if (rc < 0)
			return rc;
		off += n;
	}
}

static int
write_new(const char *path, const char *data, size_t len)
{
	wd_autoclose int fd =
	    open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	return wd_write_all(fd, data, len);
}

/* One file-system operation of the plan, under root (dir/rootfs). */
static int
rootfs_op(const struct jail_op *op, const char *path)
{
	switch (op->kind) {
	case JAIL_OP_MKDIR:
		return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
	case JAIL_OP_MKFILE: {
		int rc = write_new(path, "", 0);
		return rc == -EEXIST ? 0 : rc;
	}
	case JAIL_OP_SYMLINK:
		return symlink(op->data, path) < 0 ? -errno : 0;
	case JAIL_OP_WRITE:
		return write_new(path, op->data, op->len);
	case JAIL_OP_COPY: {
		/* the build opened the host file (no symlink followed) */
		if (op->fd >= 0)
			return copy_file(op->fd, path);
		wd_autoclose int in = open(op->src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		return in < 0 ? -errno : copy_file(in, path);
	}
	case JAIL_OP_BIND:
	case JAIL_OP_MOVE:
	case JAIL_OP_MOUNT:
	case JAIL_OP_SETATTR:
	case JAIL_OP_MASK:
	case JAIL_OP_PROTECT:
		return 0;
	}
	return 0;
}

int
gv_oci_write_rootfs(struct sandbox *sb, struct gv *g, struct wd_err *err)
{
	const struct jail_plan *pl = &sb->prep->plan;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/rootfs", g->dir);
	if (mkdir(path, 0755) < 0)
		return wd_err_sys(err, errno, "mkdir %s", path);
	snprintf(path, sizeof(path), "%s/mnt", g->dir);
	if (mkdir(path, 0700) < 0)
		return wd_err_sys(err, errno, "mkdir %s", path);
	for (int i = 0; i < pl->nops; i++) {
		const struct jail_op *op = &pl->ops[i];
		const char *jp = jail_path(pl, op->path);
		if (!jp || gvisor_provides(jp) || !strcmp(jp, "/"))
			continue;
		snprintf(path, sizeof(path), "%s/rootfs%s", g->dir, jp);
		int rc = rootfs_op(op, path);
		if (rc < 0)
			return wd_err_sys(err, -rc, "gvisor root filesystem: %s %s",
					  jail_op_name(op->kind), jp);
	}
	/* warden-init: a copy in rootfs/ (the read-only root), never a bind
	 * of a host path; a sandbox cannot replace it */
	{
		wd_autoclose int in = open(g->init_path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/rootfs%s", g->dir, GV_INIT);
		int rc = in < 0 ? -errno : copy_file(in, path);
		if (rc == 0 && chmod(path, 0555) < 0)
			rc = -errno;
		if (rc < 0)
			return wd_err_sys(err, -rc, "gvisor root filesystem: %s from %s", GV_INIT,
					  g->init_path);
	}
	/* a vacant sandbox's staging directory, its w and their mount point */
	if (sb->spec->vacant) {
		static const char *const dirs[] = {"/stage", "/stage/w", ("/rootfs" GVW_STAGE)};
		for (size_t i = 0; i < WD_ARRAY_SIZE(dirs); i++) {
			snprintf(path, sizeof(path), "%s%s", g->dir, dirs[i]);
			if (mkdir(path, 0755) < 0)
				return wd_err_sys(err, errno, "mkdir %s", path);
		}
	}
	/* where the launcher mounts each tree: a directory or a file, as the
	 * tree's root is one */
	for (size_t i = 0; i < g->nmounts; i++) {
		const struct gv_mount *m = &g->mounts[i];
		if (m->tree < 0 && !m->rel)
			continue;
		int rc =
		    m->file ? write_new(m->src, "", 0) : (mkdir(m->src, 0700) < 0 ? -errno : 0);
		if (rc < 0)
			return wd_err_sys(err, -rc, "mount point %s", m->src);
	}
	return 0;
}

/* ---- config.json and process.json ---- */

static void
strings(struct jw *w, const char *key, const char *const *v)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; v && v[i]; i++)
		jw_str(w, v[i]);
	jw_arr_end(w);
}

static void
rlimit(struct jw *w, const char *type, uint64_t v)
{
	jw_obj_begin(w);
	jw_kstr(w, "type", type);
	jw_kuint(w, "hard", v);
	jw_kuint(w, "soft", v);
	jw_obj_end(w);
}

const char **
gv_env_merge(const char *const *base, const char *const *add)
{
	size_t nb = 0, na = 0, k = 0;
	while (base && base[nb])
		nb++;
	while (add && add[na])
		na++;
	const char **v = wd_xcalloc(nb + na + 1, sizeof(char *));
	for (size_t i = 0; i < nb + na; i++) {
		const char *e = i < nb ? base[i] : add[i - nb];
		size_t n = strcspn(e, "=");
		bool replaced = false;
		for (size_t j = i + 1; j < nb + na && !replaced; j++) {
			const char *l = j < nb ? base[j] : add[j - nb];
			replaced = !strncmp(l, e, n + 1);
		}
		if (!replaced)
			v[k++] = e;
	}
	return v;
}

static void
env_array(struct jw *w, const char *const *base, const char *const *add)
{
	const char **v = gv_env_merge(base, add);
	jw_key(w, "env");
	jw_arr_begin(w);
	for (size_t i = 0; v[i]; i++)
		jw_str(w, v[i]);
	jw_arr_end(w);
	free(v);
}

void
gv_oci_process(struct jw *w, const struct sandbox *sb, const char *const *argv,
	       const char *const *env_add, const char *cwd, bool terminal, bool executor)
{
	const struct jail_plan *pl = &sb->prep->plan;
	const struct wd_limits *lim = &sb->spec->lim;
	jw_obj_begin(w);
	jw_kbool(w, "terminal", terminal);
	jw_key(w, "user");
	jw_obj_begin(w);
	/* the executor is root inside gVisor, another uid than its
	 * commands', which it runs as GV_UID (gvisor_init.c) */
	jw_kint(w, "uid", executor ? 0 : GV_UID);
	jw_kint(w, "gid", executor ? 0 : GV_UID);
	jw_obj_end(w);
	/* argv through warden-init's exec (never a command string: the
	 * program and its arguments stay separate words), so that a missing
	 * program is 127 and a non-executable one 126, as at the other
	 * levels (runsc itself would fail the whole request with 128).  Not
	 * the shell's exec, as before: it searched the command's own PATH
	 * (--setenv, an image's env, a model's sandbox.create env may put
	 * /workspace/bin first) where the policy judged the name along the
	 * jail's fixed PATH, and an image need not hold a shell. */
	jw_key(w, "args");
	jw_arr_begin(w);
	jw_str(w, GV_INIT);
	jw_str(w, "exec");
	for (size_t i = 0; argv && argv[i]; i++)
		jw_str(w, argv[i]);
	jw_arr_end(w);
	env_array(w, (const char *const *)pl->envp, env_add);
	jw_kstr(w, "cwd", cwd ? cwd : pl->cwd);
	/* No capability in any set, no privilege gain by execve (gVisor
	 * honours both; file capabilities and setuid bits are inert).  The
	 * executor: what it needs to start a command as GV_UID with nothing
	 * (setuid, setgid, the bounding set's drop) and to end its group
	 * (kill); never inheritable or ambient, so none reaches a command. */
	jw_key(w, "capabilities");
	jw_obj_begin(w);
	static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted",
					   "ambient"};
	static const char *const exec_caps[] = {"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP",
						"CAP_KILL", NULL};
	/* a vacant sandbox's executor also binds the workspace onto
	 * /workspace at attach, and drops CAP_SYS_ADMIN from every set
	 * right after, before its first command (gvisor_init.c) */
	static const char *const vacant_caps[] = {"CAP_SETUID", "CAP_SETGID",	 "CAP_SETPCAP",
						  "CAP_KILL",	"CAP_SYS_ADMIN", NULL};
	const char *const *caps = sb->spec->vacant ? vacant_caps : exec_caps;
	for (size_t i = 0; i < WD_ARRAY_SIZE(sets); i++)
		strings(w, sets[i], executor && i != 2 && i != 4 ? caps : NULL);
	jw_obj_end(w);
	jw_kbool(w, "noNewPrivileges", true);
	jw_key(w, "rlimits");
	jw_arr_begin(w);
	rlimit(w, "RLIMIT_NOFILE", pl->rl_nofile.rlim_cur);
	rlimit(w, "RLIMIT_FSIZE", pl->rl_fsize.rlim_cur);
	rlimit(w, "RLIMIT_CORE", 0);
	/* The pids limit, inside: gVisor counts the tasks of uid 1000 in its
	 * own kernel and refuses fork() with EAGAIN past it.  The host's pids
	 * cgroup cannot say this: it counts the sentry's threads and ptrace
	 * stubs (about five per guest process here), and hitting it panics
	 * the sentry instead of failing a fork. */
	if (lim->pids)
		rlimit(w, "RLIMIT_NPROC", lim->pids);
	jw_arr_end(w);
	jw_obj_end(w);
}

char *
gv_oci_config(const struct sandbox *sb, const struct gv *g, const char *const *argv,
	      const char *const *env_add, const char *cwd, bool executor)
{
	struct jw w;
	jw_init(&w, 0);
	jw_obj_begin(&w);
	jw_kstr(&w, "ociVersion", "1.0.0");
	jw_key(&w, "process");
	gv_oci_process(&w, sb, argv, env_add, cwd, false, executor);
	jw_key(&w, "root");
	jw_obj_begin(&w);
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/rootfs", g->dir);
	jw_kstr(&w, "path", root);
	jw_kbool(&w, "readonly", true);
	jw_obj_end(&w);
	jw_kstr(&w, "hostname", "sandbox");
	jw_key(&w, "mounts");
	jw_arr_begin(&w);
	for (size_t i = 0; i < g->nmounts; i++) {
		const struct gv_mount *m = &g->mounts[i];
		jw_obj_begin(&w);
		jw_kstr(&w, "destination", m->dst);
		jw_kstr(&w, "type", m->type);
		jw_kstr(&w, "source", m->src);
		jw_key(&w, "options");
		jw_arr_begin(&w);
		for (const char *o = m->options; o && *o;) {
			size_t n = strcspn(o, ",");
			jw_strn(&w, o, n);
			o += n + (o[n] == ',');
		}
		jw_arr_end(&w);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_key(&w, "linux");
	jw_obj_begin(&w);
	/* The sentry's own namespaces for the guest.  No "network" entry with
	 * egress: runsc then keeps the network namespace the launcher put it
	 * in (loopback and warden's listeners only, gvisor_run.c). */
	jw_key(&w, "namespaces");
	jw_arr_begin(&w);
	static const char *const ns[] = {"pid", "ipc", "uts", "mount", "network"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(ns); i++) {
		if (!strcmp(ns[i], "network") && g->netns_fd >= 0)
			continue;
		jw_obj_begin(&w);
		jw_kstr(&w, "type", ns[i]);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_key(&w, "seccomp");
	jw_obj_begin(&w);
	jw_kstr(&w, "defaultAction", "SCMP_ACT_ALLOW");
	jw_key(&w, "syscalls");
	jw_arr_begin(&w);
	for (size_t i = 0; jail_seccomp_oci[i]; i++) {
		/* A vacant sandbox's executor binds the workspace with mount(2)
		 * and detaches the staging mount with umount2(2) at attach, so
		 * these two are left out of the sandbox-wide table; the
		 * executor then refuses both to itself and to every command
		 * it starts with a filter of its own (gvisor_init.c), and
		 * runsc exec is not used in such a sandbox (gvisor_exec.c):
		 * no command runs without the whole table. */
		if (sb->spec->vacant && (strstr(jail_seccomp_oci[i], "\"names\":[\"mount\"]") ||
					 strstr(jail_seccomp_oci[i], "\"names\":[\"umount2\"]")))
			continue;
		jw_json(&w, jail_seccomp_oci[i]);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	jw_obj_end(&w);
	jw_obj_end(&w);
	return jw_steal(&w);
}

int
gv_write_file(const struct gv *g, const char *name, const char *s, struct wd_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", g->dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", g->dir, name);
	wd_autoclose int fd =
	    open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return wd_err_sys(err, errno, "create %s", tmp);
	int rc = wd_write_all(fd, s, strlen(s));
	if (rc < 0)
		return wd_err_sys(err, -rc, "write %s", tmp);
	if (rename(tmp, path) < 0)
		return wd_err_sys(err, errno, "rename %s", tmp);
	return 0;
}
