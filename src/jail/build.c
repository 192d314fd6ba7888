/* jail/build: the supervisor's part of building a sandbox, after the plan
 * and before clone (docs/architecture.md, the step order: step 1).
 *
 * It opens what the plan names on the host: /dev/null for commands' stdin,
 * the small /etc files the plan copies, and, as root, every bind source:
 *
 *  - A bind source must be a mount of the namespace doing the bind
 *    (do_loopback's check_mnt), and a descriptor opened here points into
 *    the supervisor's namespace, not the child's copy.  So as root the
 *    supervisor clones the tree itself (open_tree with OPEN_TREE_CLONE),
 *    sets its attributes (read-only, nosuid, nodev, or an idmapping for
 *    writable trees) and the child only moves it into place: the kernel
 *    accepts a detached tree from another namespace.
 *  - Unprivileged, open_tree(OPEN_TREE_CLONE) needs CAP_SYS_ADMIN over our
 *    mount namespace, so the plan's BIND stays as it is: the child opens the
 *    source in its own copy of the host tree (before the new root hides
 *    anything) and clones it there, with the caller's own access.
 *
 * Every descriptor is kept in the prep and closed by jail_prep_free(). */
#include "jail/jail.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static int
keep_fd(struct jail_prep *p, int fd)
{
	if (fd >= 0) {
		if (p->nfds >= (int)WD_ARRAY_SIZE(p->fds))
			abort(); /* bounded by JAIL_MAX_OPS: a broken invariant */
		p->fds[p->nfds++] = fd;
	}
	return fd;
}

/* Label of a bind for messages ("workspace", "--bind", ...). */
static const char *
what(const struct jail_op *op)
{
	return op->data ? op->data : "bind source";
}

/* Root: clone the host tree at op->src with op->attr, privately, and turn
 * op into a MOVE of the detached tree. */
static int
clone_tree(struct jail_prep *p, struct jail_op *op, int sfd, struct wd_err *err)
{
	unsigned rec = (op->flags & JAIL_OPF_RECURSIVE) ? AT_RECURSIVE : 0;
	int tree = (int)syscall(SYS_open_tree, sfd, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rec);
	if (tree < 0)
		return wd_err_sys(err, errno, "%s '%s': open_tree", what(op), op->src);
	keep_fd(p, tree);
	/* Private: a clone made here, in the host's mount namespace, joins the
	 * source's peer group, and moving it into the child skips the
	 * shared-to-slave conversion the child's own namespace got.  On a host
	 * whose / is shared (systemd), whatever is later mounted under it
	 * would propagate back to the host and stay there. */
	struct mount_attr a = {.attr_set = op->attr, .propagation = MS_PRIVATE};
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | rec, &a, sizeof(a)) < 0)
		return wd_err_sys(err, errno, "%s '%s': mount_setattr", what(op), op->src);
	op->kind = JAIL_OP_MOVE;
	op->fd = tree;
	return 0;
}

/* Root: a writable host tree, idmapped so the sandbox user (p->idmap: host
 * nobody for a container) owns it.  Returns 1 when done, 0 when this filesystem cannot be
 * idmapped (the caller clones it plainly), or -errno. */
static int
idmap_tree(struct jail_prep *p, struct jail_op *op, int sfd, struct wd_err *err)
{
	struct stat st;
	if (fstat(sfd, &st) < 0)
		return wd_err_sys(err, errno, "%s '%s'", what(op), op->src);
	int tree = jail_idmapped_tree(sfd, &st, &p->idmap, &p->idmap_cache, err);
	if (tree >= 0) {
		keep_fd(p, tree);
		op->kind = JAIL_OP_MOVE;
		op->fd = tree;
		if (op->flags & JAIL_OPF_WORKSPACE)
			p->idmapped = true;
		return 1;
	}
	if (tree != -EINVAL && tree != -ENOSYS && tree != -EPERM)
		return wd_err_sys(err, -tree, "idmap %s '%s'", what(op), op->src);
	/* This filesystem cannot be idmapped (or the kernel lacks it): bind
	 * it plainly.  The sandbox user then sees files owned by nobody and
	 * may lack write access; --json reports idmapped_workspace false. */
	wd_log(WD_LOG_WARN, "%s '%s' cannot be idmapped (%s); bound without", what(op), op->src,
	       strerror(-tree));
	return 0;
}

static int
build_bind(struct jail_prep *p, struct jail_op *op, struct wd_err *err)
{
	int sfd = jail_open_nofollow(op->src);
	if (sfd == -ELOOP)
		return wd_err_set(err, WD_E_INVAL,
				  "%s '%s': a symbolic link in its path; refused rather than "
				  "followed",
				  what(op), op->src);
	if (sfd < 0) {
		int rc = wd_err_sys(err, -sfd, "%s '%s'", what(op), op->src);
		if (err && sfd != -EIO)
			err->code = WD_E_INVAL;
		return rc;
	}
	int rc = 0;
	if (op->flags & JAIL_OPF_IDMAP)
		rc = idmap_tree(p, op, sfd, err);
	if (rc == 0)
		rc = clone_tree(p, op, sfd, err);
	close(sfd);
	return rc < 0 ? rc : 0;
}

int
jail_build_host(struct jail_prep *p, struct wd_err *err)
{
	struct jail_plan *pl = &p->plan;
	int rc = 0;

	if (p->built)
		return 0;
	pl->devnull_fd = keep_fd(p, open("/dev/null", O_RDWR | O_CLOEXEC));
	if (pl->devnull_fd < 0)
		return wd_err_sys(err, errno, "open /dev/null");
	for (int i = 0; i < pl->nops && rc == 0; i++) {
		struct jail_op *op = &pl->ops[i];
		if (op->kind == JAIL_OP_COPY && (op->flags & JAIL_OPF_HOSTFILE)) {
			/* the child reads its copy, we close ours */
			op->fd = keep_fd(p, open(op->src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
			if (op->fd < 0)
				rc = wd_err_sys(err, errno, "open %s", op->src);
		} else if (op->kind == JAIL_OP_BIND && (op->flags & JAIL_OPF_HOSTPATH) &&
			   pl->root_mode) {
			rc = build_bind(p, op, err);
		} else if (op->kind == JAIL_OP_BIND && (op->flags & JAIL_OPF_PROVIDED)) {
			/* a tree the caller made (workspace/: a cow overlay, a
			 * directory of the disk image): our own copy of its
			 * descriptor, moved into place by pid 1 */
			int fd = op->tree >= 0 && op->tree < p->ntrees ? p->trees[op->tree] : -1;
			op->fd = fd >= 0 ? keep_fd(p, fcntl(fd, F_DUPFD_CLOEXEC, 3)) : -1;
			if (op->fd < 0)
				rc = wd_err_sys(err, fd < 0 ? EBADF : errno, "%s tree", what(op));
			else
				op->kind = JAIL_OP_MOVE;
		}
	}
	if (p->idmap_cache.userns >= 0)
		close(p->idmap_cache.userns);
	p->idmap_cache.userns = -1;
	if (rc == 0)
		p->built = true;
	return rc;
}

void
jail_build_reap(struct jail_prep *p)
{
	jail_idmap_reap(&p->idmap_cache);
}
