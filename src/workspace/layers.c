/* workspace/layers: one sandbox's layers, mounted as detached trees by
 * the supervisor (root), handed to each jail as clones.
 *
 * A cow workspace is an overlay assembled here, not in the jail:
 *
 *     lower  an idmapped clone of the real directory (its owner appears as
 *            the sandbox user's host id, as for a direct workspace), and
 *            read-only: overlayfs never writes a lower layer
 *     upper  upper/ on the sandbox's disk (workspace/disk.c)
 *     work   work/ on the same disk
 *
 * Mounted by root in the initial namespaces, the overlay copies files up
 * with the mounter's credentials (so any file of the workspace can be
 * copied up, whoever owns it), and what the sandbox creates belongs to its
 * user.  Inside the jail's user namespace, an overlay would need every
 * lower file's owner mapped there.  The layers are given to fsconfig() as
 * descriptors (FSCONFIG_SET_FD, Linux 6.13); older kernels get the
 * /proc/self/fd paths of the same descriptors.
 *
 * Options: redirect_dir, metacopy and index off, so the upper layer holds
 * only whole files, whiteouts (0/0 character devices) and opaque
 * directories (trusted.overlay.opaque): what changes.c reads back.  A
 * directory renamed in the sandbox is then copied (mv falls back on
 * EXDEV) and shows up as files deleted and added, paired as renames by
 * content.
 *
 * An ordinary user's layers (no disk: layers/ in the state directory) are
 * mounted by overlay_user() in the user namespace of the session's monitor
 * (ws_userns_enter), the workspace itself as the lower layer. */
#include "workspace/workspace.h"
#include "jail/jail.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

static int overlay_finish(struct ws *w, int fs, bool userxattr, struct wd_err *err);

static int
set_layer(int fs, const char *key, int fd)
{
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_FD, key, NULL, fd) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* before 6.13: the same layer through its /proc/self/fd path */
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	const char *k = !strcmp(key, "lowerdir+") ? "lowerdir" : key;
	return syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, k, path, 0) == 0 ? 0 : -errno;
}

/* An ordinary user's overlay, in the user namespace ws_userns_enter()
 * made: the lower layer is the workspace itself (its files are ours, the
 * sandbox user maps to us, so no idmapped clone is needed, and an
 * unprivileged process could not make one), upper and work are the
 * layers/ directory's.  userxattr: overlayfs keeps its opaque marks in
 * user.overlay.* (a trusted.* xattr needs CAP_SYS_ADMIN on the host) and
 * refuses to let the sandbox set or read them through the overlay;
 * whiteouts stay 0/0 character devices (the kernel lets anyone make
 * those since 5.8).  Outside such a namespace (an ordinary user's
 * `warden diff` on a stopped session) fsopen fails with EPERM: no
 * overlay, diff and apply read the upper layer directly. */
static int
overlay_user(struct ws *w, struct wd_err *err)
{
	wd_autoclose int fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fs < 0 && errno == EPERM)
		return 0;
	if (fs < 0)
		return wd_err_sys(err, errno, "fsopen overlay");
	wd_autoclose int work = openat(w->disk, "work", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (work < 0)
		return wd_err_sys(err, errno, "the sandbox's layers/work/");
	int rc;
	if ((rc = set_layer(fs, "lowerdir+", w->wsfd)) < 0 ||
	    (rc = set_layer(fs, "upperdir", w->upper)) < 0 ||
	    (rc = set_layer(fs, "workdir", work)) < 0)
		return wd_err_sys(err, -rc, "overlay layers");
	return overlay_finish(w, fs, true, err);
}

static int
overlay(struct ws *w, struct wd_err *err)
{
	struct stat st;
	if (fstat(w->wsfd, &st) < 0)
		return wd_err_sys(err, errno, "workspace %s", w->workspace);
	/* the lower layer: the workspace as the jail sees a direct one, its
	 * owner shown as the sandbox user */
	struct jail_idmap map = {w->uid, w->gid, false};
	struct jail_idmap_cache cache = JAIL_IDMAP_CACHE_INIT;
	wd_autoclose int lower = jail_idmapped_tree(w->wsfd, &st, &map, &cache, err);
	if (cache.userns >= 0)
		close(cache.userns);
	jail_idmap_reap(&cache);
	if (lower < 0)
		return wd_err_prefix(err, "cow workspace %s", w->workspace);
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	if (syscall(SYS_mount_setattr, lower, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof(ro)) <
	    0)
		return wd_err_sys(err, errno, "cow workspace: read-only lower layer");
	wd_autoclose int work = openat(w->disk, "work", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (work < 0)
		return wd_err_sys(err, errno, "the sandbox disk's work/");
	wd_autoclose int fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		return wd_err_sys(err, errno, "fsopen overlay");
	int rc;
	if ((rc = set_layer(fs, "lowerdir+", lower)) < 0 ||
	    (rc = set_layer(fs, "upperdir", w->upper)) < 0 ||
	    (rc = set_layer(fs, "workdir", work)) < 0)
		return wd_err_sys(err, -rc, "overlay layers");
	return overlay_finish(w, fs, false, err);
}

static int
overlay_finish(struct ws *w, int fs, bool userxattr, struct wd_err *err)
{
	if (userxattr && syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0)
		return wd_err_sys(err, errno, "overlay option userxattr");
	/* redirect_dir=off means "follow" on kernels built with
	 * OVERLAY_FS_REDIRECT_ALWAYS_FOLLOW (Debian's), which userxattr
	 * refuses; nofollow is the same for an upper layer: no redirect is
	 * created (a directory rename is EXDEV, copied by mv) */
	const char *const opts[][2] = {{"redirect_dir", userxattr ? "nofollow" : "off"},
				       {"metacopy", "off"},
				       {"index", "off"},
				       {"xino", "off"}};
	for (size_t i = 0; i < WD_ARRAY_SIZE(opts); i++)
		if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, opts[i][0], opts[i][1], 0) < 0)
			return wd_err_sys(err, errno, "overlay option %s=%s", opts[i][0],
					  opts[i][1]);
	if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		char log[200] = "";
		ssize_t n = read(fs, log, sizeof(log) - 1);
		log[n > 0 ? n : 0] = '\0';
		log[strcspn(log, "\n")] = '\0';
		return wd_err_sys(err, errno, "mount the cow overlay%s%s", log[0] ? ": " : "", log);
	}
	w->ovl =
	    (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (w->ovl < 0)
		return wd_err_sys(err, errno, "fsmount the cow overlay");
	return 0;
}

int
ws_open(int dirfd, const struct ws_params *p, struct ws **out, struct wd_err *err)
{
	struct ws *w = wd_xcalloc(1, sizeof(*w));
	w->dirfd = dirfd;
	w->disk = w->upper = w->ovl = -1;
	w->workspace = wd_xstrdup(p->workspace);
	w->cow = p->cow;
	w->uid = p->uid;
	w->gid = p->gid;
	size_t nd = 0;
	while (ws_default_protect[nd])
		nd++;
	w->protect = wd_xcalloc(nd + p->nprotect + 1, sizeof(char *));
	for (size_t i = 0; i < nd; i++)
		w->protect[w->nprotect++] = wd_xstrdup(ws_default_protect[i]);
	for (size_t i = 0; i < p->nprotect; i++)
		w->protect[w->nprotect++] = wd_xstrdup(p->protect[i]);
	int rc;
	/* No link followed: the path is canonical (the spec's), so a link in
	 * it now was planted by a sandbox over a parent directory, and this
	 * descriptor is the lower layer and where apply writes */
	w->wsfd = jail_open_nofollow(p->workspace);
	if (w->wsfd < 0) {
		rc = -w->wsfd == ELOOP
			 ? wd_err_set(err, WD_E_INVAL,
				      "workspace %s: a symbolic link in its path appeared after "
				      "the sandbox was made; refused rather than followed",
				      p->workspace)
			 : wd_err_sys(err, -w->wsfd, "workspace %s", p->workspace);
		goto fail;
	}
	struct stat st;
	if (fstatat(dirfd, "disk.img", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if ((w->disk = ws_disk_mount(dirfd, "disk.img", err)) < 0) {
			rc = w->disk;
			goto fail;
		}
	} else if (fstatat(dirfd, WS_LAYERS, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* an ordinary user's: a directory, nothing to mount */
		w->disk = openat(dirfd, WS_LAYERS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (w->disk < 0) {
			rc = wd_err_sys(err, errno, "the sandbox's layers/");
			goto fail;
		}
		w->user_layers = true;
	} else if (p->cow) {
		rc = wd_err_set(err, WD_E_INVAL, "the cow sandbox has no disk (disk.img)");
		goto fail;
	}
	if (p->cow) {
		w->upper = openat(w->disk, "upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (w->upper < 0) {
			rc = wd_err_sys(err, errno, "the sandbox disk's upper/");
			goto fail;
		}
		if ((rc = w->user_layers ? overlay_user(w, err) : overlay(w, err)) < 0)
			goto fail;
	}
	*out = w;
	return 0;
fail:
	w->dirfd = -1; /* the caller's still on failure */
	ws_close(w);
	return rc;
}

void
ws_close(struct ws *w)
{
	if (!w)
		return;
	int fds[] = {w->ovl, w->upper, w->disk, w->wsfd, w->dirfd};
	for (size_t i = 0; i < WD_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (size_t i = 0; i < w->nprotect; i++)
		free(w->protect[i]);
	free(w->protect);
	ws_baseline_free(w->base);
	free(w->workspace);
	free(w);
}

static int
clone_tree(int fd, const char *path, struct wd_err *err)
{
	int t = (int)syscall(SYS_open_tree, fd, path,
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
				 (path[0] ? 0 : AT_EMPTY_PATH));
	if (t < 0)
		return wd_err_sys(err, errno, "clone %s of the sandbox disk",
				  path[0] ? path : "the overlay");
	return t;
}

/* Empty tmp/ of the disk: a new jail's /tmp starts empty, as a tmpfs
 * would.  Whatever the last jail left there goes, links not followed. */
static int
empty_tmp(int disk, struct wd_err *err)
{
	int rc = wd_rm_tree_at(disk, "tmp");
	if (rc < 0)
		return wd_err_sys(err, -rc, "empty the sandbox's /tmp");
	if (mkdirat(disk, "tmp", 01777) < 0 || fchmodat(disk, "tmp", 01777, 0) < 0)
		return wd_err_sys(err, errno, "make the sandbox's /tmp");
	return 0;
}

int
ws_trees(struct ws *w, struct ws_trees *t, struct wd_err *err)
{
	*t = (struct ws_trees){-1, -1, -1};
	int rc = 0;
	if (w->cow && w->ovl < 0)
		rc = wd_err_set(err, WD_E_UNSUPPORTED,
				"the cow overlay is not mounted in this process (an ordinary "
				"user's is mounted by the session's monitor)");
	else if (w->cow && (t->workspace = clone_tree(w->ovl, "", err)) < 0)
		rc = t->workspace;
	if (rc == 0 && w->disk >= 0) {
		if ((t->home = clone_tree(w->disk, "home", err)) < 0)
			rc = t->home;
		else if ((rc = empty_tmp(w->disk, err)) == 0 &&
			 fchownat(w->disk, "tmp", w->uid, w->gid, 0) < 0)
			rc = wd_err_sys(err, errno, "chown the sandbox's /tmp");
		else if (rc == 0 && (t->tmp = clone_tree(w->disk, "tmp", err)) < 0)
			rc = t->tmp;
	}
	if (rc < 0)
		ws_trees_close(t);
	return rc;
}

void
ws_trees_close(struct ws_trees *t)
{
	wd_close_reset(&t->workspace);
	wd_close_reset(&t->home);
	wd_close_reset(&t->tmp);
}
