/* jail/mounts: pid 1's mount operations (step 3), after clone(), in the
 * sandbox's new mount namespace.  System calls only: no allocation, no
 * formatting (the plan holds every string). */
#include "jail/jail.h"
#include "jail/raw.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static int
sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}

/* Make a mount read-only (and nosuid, nodev): mount_setattr when the kernel
 * has it (one call, and AT_RECURSIVE reaches submounts a remount would
 * miss), else the classic bind remount of that one mount. */
int
jail_make_readonly(const char *path, bool recursive)
{
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					   MOUNT_ATTR_NODEV};
	if (sys_mount_setattr(AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &a) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) < 0)
		return -errno;
	return 0;
}

/* JAIL_OP_PROTECT: the workspace's op->data, if it exists, read-only over
 * itself.  Resolved beneath the workspace without following any symbolic
 * link (the sandbox may have planted them in a direct workspace in an
 * earlier run): a link there cannot be covered by a mount, so it is
 * refused (ELOOP) rather than left writable.  The mount is a clone of
 * what is there, made read-only, moved onto the same place: neither
 * unlink nor rename can take a mount point away (EBUSY). */
static int
protect(const struct jail_op *op)
{
	int ws = raw_open(op->path, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (ws < 0)
		return -errno;
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, ws, op->data, &how, sizeof(how));
	int rc = fd < 0 ? -errno : 0;
	raw_close(ws);
	/* absent (or below a file: .git as a worktree's file): nothing to
	 * protect */
	if (rc == -ENOENT || rc == -ENOTDIR)
		return 0;
	if (rc < 0)
		return rc;
	struct stat st;
	if (raw_fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) {
		rc = S_ISLNK(st.st_mode) ? -ELOOP : -errno;
		raw_close(fd);
		return rc;
	}
	int tree = (int)syscall(SYS_open_tree, fd, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (tree < 0) {
		rc = -errno;
		raw_close(fd);
		return rc;
	}
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
			       .propagation = MS_PRIVATE};
	if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a) < 0 ||
	    syscall(SYS_move_mount, tree, "", fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		rc = -errno;
	raw_close(tree);
	raw_close(fd);
	return rc;
}

int
jail_op_do(const struct jail_op *op)
{
	int fd;
	switch (op->kind) {
	case JAIL_OP_MKDIR:
		if (mkdir(op->path, 0755) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	case JAIL_OP_MKFILE:
		fd = raw_open(op->path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -errno;
		raw_close(fd);
		return 0;
	case JAIL_OP_SYMLINK:
		if (symlink(op->data, op->path) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	case JAIL_OP_WRITE:
		fd = raw_open(op->path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -errno;
		for (size_t done = 0; done < op->len;) {
			ssize_t n = raw_write(fd, op->data + done, op->len - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				int e = errno;
				raw_close(fd);
				return -e;
			}
			done += (size_t)n;
		}
		raw_close(fd);
		return 0;
	case JAIL_OP_COPY: {
		fd = raw_open(op->path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -errno;
		off_t off = 0;
		for (;;) {
			ssize_t n = sendfile(fd, op->fd, &off, 1 << 20);
			if (n < 0) {
				int e = errno;
				raw_close(fd);
				return -e;
			}
			if (n == 0)
				break;
		}
		raw_close(fd);
		return 0;
	}
	case JAIL_OP_BIND:
		if (op->flags & JAIL_OPF_HOSTPATH) {
			/* a private copy of the host tree opened before the new
			 * root, with its attributes, moved into place */
			int tree = (int)syscall(SYS_open_tree, op->fd, "",
						OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
							((op->flags & JAIL_OPF_RECURSIVE) ? AT_RECURSIVE
											  : 0));
			if (tree < 0)
				return -errno;
			struct mount_attr ta = {.attr_set = op->attr, .propagation = MS_PRIVATE};
			int rc = 0;
			if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ta) < 0 ||
			    syscall(SYS_move_mount, tree, "", AT_FDCWD, op->path,
				    MOVE_MOUNT_F_EMPTY_PATH) < 0)
				rc = -errno;
			raw_close(tree);
			return rc;
		}
		if (mount(op->src, op->path, NULL,
			  MS_BIND | ((op->flags & JAIL_OPF_RECURSIVE) ? MS_REC : 0), NULL) < 0)
			return -errno;
		if (op->mflags & MS_RDONLY)
			return jail_make_readonly(op->path, op->flags & JAIL_OPF_RECURSIVE);
		/* rw binds still lose setuid and device files (a workspace is data) */
		struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
		if (sys_mount_setattr(AT_FDCWD, op->path, AT_RECURSIVE, &a) < 0 && errno != ENOSYS)
			return -errno;
		return 0;
	case JAIL_OP_MOVE:
		if (syscall(SYS_move_mount, op->fd, "", AT_FDCWD, op->path,
			    MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
		return 0;
	case JAIL_OP_MOUNT:
		if (mount(op->src, op->path, op->src, op->mflags, op->data) < 0)
			return -errno;
		return 0;
	case JAIL_OP_SETATTR: {
		if (op->attr & MOUNT_ATTR_RDONLY)
			return jail_make_readonly(op->path, op->flags & JAIL_OPF_RECURSIVE);
		struct mount_attr set = {.attr_set = op->attr};
		if (sys_mount_setattr(AT_FDCWD, op->path,
				      (op->flags & JAIL_OPF_RECURSIVE) ? AT_RECURSIVE : 0, &set) < 0)
			return -errno;
		return 0;
	}
	case JAIL_OP_PROTECT:
		return protect(op);
	case JAIL_OP_MASK:
		/* Hide a /proc entry: /dev/null over files, an empty read-only
		 * directory over directories (what Docker and runc mask). */
		if (mount(op->src, op->path, NULL, MS_BIND, NULL) < 0)
			return (errno == ENOENT) ? 0 : -errno;
		return jail_make_readonly(op->path, false);
	}
	return -EINVAL;
}

