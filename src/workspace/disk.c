/* workspace/disk: a sandbox's disk (--disk).
 *
 * What a sandbox writes outside a direct workspace (a cow workspace's upper
 * layer, its home directory, its /tmp) lives on one sparse ext4 image of
 * --disk bytes in its state directory.  The bound is the file system's own
 * size: a write past it is ENOSPC inside the sandbox, whatever is left on
 * the host's disk, and no quota support is needed from the host's file
 * system.  The image is sparse, so it costs the host what was written.
 *
 * The image is attached to a loop device with LO_FLAGS_AUTOCLEAR and
 * mounted with the new mount API as a detached tree (fsopen/fsmount): it
 * never appears in any mount table of the host, and when the last
 * descriptor of the tree (and of every clone of it) closes, the kernel
 * unmounts it and the loop device frees itself.  A session monitor killed
 * with SIGKILL therefore leaves no mount and no loop device behind.
 *
 * Root only: loop devices and mounting ext4 need CAP_SYS_ADMIN in the
 * initial user namespace (ext4 is not FS_USERNS_MOUNT).  An ordinary
 * user's layers (the end of this file) are a plain directory instead,
 * with the user namespace helpers that mount and read them. */
#include "workspace/workspace.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <dirent.h>
#include <sys/wait.h>

extern char **environ;

static const char *const mke2fs_paths[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs", NULL};

static int
unsupported(struct wd_err *err, const char *why)
{
	return wd_err_set(err, WD_E_UNSUPPORTED, "%s", why);
}

static const char *
mke2fs_path(void)
{
	for (size_t i = 0; mke2fs_paths[i]; i++)
		if (access(mke2fs_paths[i], X_OK) == 0)
			return mke2fs_paths[i];
	return NULL;
}

int
ws_disk_supported(struct wd_err *err)
{
	if (geteuid() != 0)
		return unsupported(err, "a sandbox disk (a one-shot cow run, --disk) needs root "
					"here: loop devices and ext4 mounts need CAP_SYS_ADMIN on "
					"the host; as an ordinary user, a cow session (warden "
					"create --workspace-mode cow) needs neither");
	if (access("/dev/loop-control", R_OK | W_OK) < 0)
		return unsupported(err, "no /dev/loop-control (the loop driver) for the sandbox "
					"disk");
	if (!mke2fs_path())
		return unsupported(err, "no mke2fs (Debian's e2fsprogs) to format the sandbox "
					"disk");
	return 0;
}

/* mke2fs on the image (handed over as fd 3): no reserved blocks, inode
 * tables left for the kernel to treat as zero (the file is sparse, so they
 * read as zeros and cost nothing), the journal kept (the image outlives
 * warden and the machine's restarts). */
static int
format(int img, struct wd_err *err)
{
	const char *mk = mke2fs_path();
	if (!mk)
		return unsupported(err, "no mke2fs to format the sandbox disk");
	const char *argv[] = {mk,
			      "-q",
			      "-F",
			      "-t",
			      "ext4",
			      "-m",
			      "0",
			      "-L",
			      "warden",
			      "-E",
			      "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
			      "/dev/fd/3",
			      NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, img, 3);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		posix_spawn_file_actions_destroy(&fa);
		return wd_err_sys(err, errno, "pipe");
	}
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	static const char *const env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, mk, &fa, NULL, (char *const *)(uintptr_t)argv,
			     (char *const *)(uintptr_t)env);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc != 0) {
		close(pipefd[0]);
		return wd_err_sys(err, rc, "run %s", mk);
	}
	char msg[200] = "";
	ssize_t n = read(pipefd[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	close(pipefd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return wd_err_set(err, WD_E_SYS, "mke2fs failed on the sandbox disk: %s",
				  msg[0] ? msg : "(no message)");
	return 0;
}

/* A free loop device configured over img: LOOP_CTL_GET_FREE races with
 * every other process taking one, so a device someone configured first
 * (EBUSY) means asking again. */
static int
loop_attach(int img, const char *label, char dev[32], struct wd_err *err)
{
	wd_autoclose int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return wd_err_sys(err, errno, "open /dev/loop-control");
	for (int attempt = 0; attempt < 64; attempt++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return wd_err_sys(err, errno, "find a free loop device");
		snprintf(dev, 32, "/dev/loop%d", n);
		int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0) {
			if (errno == ENOENT || errno == ENXIO)
				continue; /* removed under us */
			return wd_err_sys(err, errno, "open %s", dev);
		}
		struct loop_config lc;
		memset(&lc, 0, sizeof(lc));
		lc.fd = (unsigned)img;
		/* gone with the last user: the mount, or this descriptor if
		 * the mount fails */
		lc.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		snprintf((char *)lc.info.lo_file_name, sizeof(lc.info.lo_file_name), "%s", label);
		if (ioctl(lfd, LOOP_CONFIGURE, &lc) == 0)
			return lfd;
		int e = errno;
		close(lfd);
		if (e != EBUSY)
			return wd_err_sys(err, e, "configure %s", dev);
	}
	return wd_err_set(err, WD_E_SYS, "no free loop device after 64 attempts");
}

static int
fs_error(int fs, int e, const char *what, struct wd_err *err)
{
	/* the file system's own message, from the fs context's log */
	char log[256] = "";
	ssize_t n = read(fs, log, sizeof(log) - 1);
	log[n > 0 ? n : 0] = '\0';
	log[strcspn(log, "\n")] = '\0';
	return wd_err_sys(err, e, "%s%s%s", what, log[0] ? ": " : "", log);
}

int
ws_disk_mount(int dirfd, const char *name, struct wd_err *err)
{
	wd_autoclose int img = openat(dirfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (img < 0)
		return wd_err_sys(err, errno, "open the sandbox disk %s", name);
	char dev[32];
	wd_autoclose int lfd = loop_attach(img, "warden", dev, err);
	if (lfd < 0)
		return lfd;
	wd_autoclose int fs = (int)syscall(SYS_fsopen, "ext4", FSOPEN_CLOEXEC);
	if (fs < 0)
		return wd_err_sys(err, errno, "fsopen ext4");
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", dev, 0) < 0 ||
	    /* no background zeroing of inode tables: they read as zeros */
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "noinit_itable", NULL, 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return fs_error(fs, errno, "mount the sandbox disk", err);
	/* nosuid, nodev: the sandbox writes here */
	int mnt =
	    (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (mnt < 0)
		return fs_error(fs, errno, "fsmount the sandbox disk", err);
	return mnt;
}

int
ws_disk_create(int dirfd, const char *name, uint64_t bytes, uid_t uid, gid_t gid,
	       struct wd_err *err)
{
	int rc;
	{
		wd_autoclose int img =
		    openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (img < 0)
			return wd_err_sys(err, errno, "create the sandbox disk");
		if (ftruncate(img, (off_t)bytes) < 0)
			return wd_err_sys(err, errno, "size the sandbox disk");
		if ((rc = format(img, err)) < 0)
			return rc;
	}
	wd_autoclose int mnt = ws_disk_mount(dirfd, name, err);
	if (mnt < 0)
		return mnt;
	/* upper/ and work/ of a cow overlay, home/ and tmp/: the sandbox
	 * user's (host nobody as root) */
	static const struct {
		const char *name;
		mode_t mode;
	} dirs[] = {{"upper", 0755}, {"work", 0700}, {"home", 0755}, {"tmp", 01777}};
	for (size_t i = 0; i < WD_ARRAY_SIZE(dirs); i++) {
		if (mkdirat(mnt, dirs[i].name, dirs[i].mode) < 0 && errno != EEXIST)
			return wd_err_sys(err, errno, "mkdir %s on the sandbox disk", dirs[i].name);
		/* work/ stays root's: only overlayfs uses it */
		if (strcmp(dirs[i].name, "work") &&
		    fchownat(mnt, dirs[i].name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
			return wd_err_sys(err, errno, "chown %s on the sandbox disk", dirs[i].name);
		if (fchmodat(mnt, dirs[i].name, dirs[i].mode, 0) < 0)
			return wd_err_sys(err, errno, "chmod %s on the sandbox disk", dirs[i].name);
	}
	/* the ext4 root's lost+found is nobody's business in the sandbox,
	 * and the root itself stays root's */
	return 0;
}

/* Freeze a mounted disk for a consistent copy, with a guard: a frozen
 * file system whose last mount goes away stays frozen, with its loop
 * device, until someone mounts it again to thaw it.  So a small child
 * process holds the disk too and thaws it if we die before ws_disk_thaw()
 * (EOF on its pipe).  It is a fork of a possibly multithreaded process:
 * it only reads, calls ioctl and exits. */
int
ws_disk_freeze(int mnt, struct ws_freeze *fz, struct wd_err *err)
{
	fz->fd = openat(mnt, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fz->pipe_w = -1;
	fz->pid = -1;
	if (fz->fd < 0)
		return wd_err_sys(err, errno, "open the sandbox disk");
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		wd_close_reset(&fz->fd);
		return wd_err_sys(err, errno, "pipe");
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		wd_close_reset(&fz->fd);
		return wd_err_sys(err, e, "fork the freeze guard");
	}
	if (pid == 0) {
		close(p[1]);
		char c;
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		ioctl(fz->fd, FITHAW, 0); /* EINVAL when thawed already */
		_exit(0);
	}
	close(p[0]);
	fz->pipe_w = p[1];
	fz->pid = pid;
	if (ioctl(fz->fd, FIFREEZE, 0) < 0) {
		int e = errno;
		ws_disk_thaw(fz);
		return wd_err_sys(err, e, "freeze the sandbox disk");
	}
	return 0;
}

void
ws_disk_thaw(struct ws_freeze *fz)
{
	if (fz->fd >= 0)
		ioctl(fz->fd, FITHAW, 0);
	wd_close_reset(&fz->pipe_w); /* the guard wakes and exits */
	if (fz->pid > 0)
		while (waitpid(fz->pid, NULL, 0) < 0 && errno == EINTR)
			;
	fz->pid = -1;
	wd_close_reset(&fz->fd);
}

int
ws_copy_sparse(int from_dir, const char *from, int to_dir, const char *to, struct wd_err *err)
{
	wd_autoclose int in = openat(from_dir, from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return wd_err_sys(err, errno, "open %s", from);
	struct stat st;
	if (fstat(in, &st) < 0)
		return wd_err_sys(err, errno, "stat %s", from);
	wd_autoclose int out =
	    openat(to_dir, to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return wd_err_sys(err, errno, "create %s", to);
	int rc = 0;
	if (ftruncate(out, st.st_size) < 0) {
		rc = wd_err_sys(err, errno, "size %s", to);
		goto fail;
	}
	/* only the data extents: the holes of a sparse image stay holes */
	off_t pos = 0;
	while (pos < st.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0) {
			if (errno == ENXIO)
				break; /* a hole to the end */
			rc = wd_err_sys(err, errno, "seek %s", from);
			goto fail;
		}
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			hole = st.st_size;
		off_t ioff = data, ooff = data;
		while (ioff < hole) {
			ssize_t n =
			    copy_file_range(in, &ioff, out, &ooff, (size_t)(hole - ioff), 0);
			if (n < 0) {
				rc = wd_err_sys(err, errno, "copy %s", from);
				goto fail;
			}
			if (n == 0)
				break;
		}
		pos = hole;
	}
	if (fsync(out) < 0) {
		rc = wd_err_sys(err, errno, "sync %s", to);
		goto fail;
	}
	return 0;
fail:
	unlinkat(to_dir, to, 0);
	return rc;
}

/* ---- an ordinary user's layers ---- */

int
ws_layers_supported(struct wd_err *err)
{
	struct utsname u;
	int major = 0, minor = 0;
	if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return unsupported(err, "cannot read the kernel's version (uname)");
	if (major < 5 || (major == 5 && minor < 11))
		return unsupported(err, "a cow workspace as an ordinary user needs Linux 5.11 "
					"(overlayfs in a user namespace): run as root here");
	char v[8] = "";
	if (wd_read_file_at(AT_FDCWD, "/proc/sys/kernel/unprivileged_userns_clone", v, sizeof(v)) >
		0 &&
	    v[0] == '0')
		return unsupported(err, "a cow workspace as an ordinary user needs user namespaces "
					"(kernel.unprivileged_userns_clone is 0)");
	return 0;
}

int
ws_layers_create(int dirfd, struct wd_err *err)
{
	if (mkdirat(dirfd, WS_LAYERS, 0700) < 0)
		return wd_err_sys(err, errno, "create the sandbox's layers/");
	wd_autoclose int d =
	    openat(dirfd, WS_LAYERS, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0)
		return wd_err_sys(err, errno, "open the sandbox's layers/");
	static const struct {
		const char *name;
		mode_t mode;
	} dirs[] = {{"upper", 0755}, {"work", 0700}, {"home", 0755}, {"tmp", 01777}};
	for (size_t i = 0; i < WD_ARRAY_SIZE(dirs); i++)
		if (mkdirat(d, dirs[i].name, dirs[i].mode) < 0 ||
		    fchmodat(d, dirs[i].name, dirs[i].mode, 0) < 0)
			return wd_err_sys(err, errno, "make the sandbox's layers/%s", dirs[i].name);
	return 0;
}

static int
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	int rc = write(fd, text, n) == (ssize_t)n ? 0 : -errno;
	close(fd);
	return rc;
}

static bool userns_entered; /* this process is in a user namespace of ours */

bool
ws_userns_entered(void)
{
	return __atomic_load_n(&userns_entered, __ATOMIC_ACQUIRE);
}

int
ws_userns_enter(struct wd_err *err)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return wd_err_sys(err, errno,
				  errno == EINVAL
				      ? "a user namespace for the cow overlay (unshare: "
					"the process has threads)"
				      : "a user namespace for the cow overlay (unshare)");
	/* Only our own ids, each to itself: files keep their owners, the
	 * sandbox user (mapped to us in the jail's own namespace) owns what
	 * it writes, and nothing here gains a power over another user's
	 * file (the capabilities of this namespace reach only inodes whose
	 * owner is mapped in it, ours).  setgroups is denied first, as the
	 * kernel requires of an unprivileged gid_map, so no supplementary
	 * group can be dropped to get past a deny-by-group permission. */
	char map[64];
	int rc = write_file("/proc/self/setgroups", "deny");
	if (rc == 0) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		rc = write_file("/proc/self/uid_map", map);
	}
	if (rc == 0) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		rc = write_file("/proc/self/gid_map", map);
	}
	if (rc < 0)
		return wd_err_sys(err, -rc, "map our ids in the cow overlay's user namespace");
	/* nothing we mount reaches the host's namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return wd_err_sys(err, errno, "make the cow overlay's mount namespace private");
	__atomic_store_n(&userns_entered, true, __ATOMIC_RELEASE);
	return 0;
}

/* One entry of an ordinary user's layers, copied (ws_copy_tree). */
static int copy_dir(int from, int to, const char *path, struct wd_err *err);

static int
copy_entry(int from, int to, const char *name, const char *path, struct wd_err *err)
{
	struct stat st;
	if (fstatat(from, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return wd_err_sys(err, errno, "snapshot: %s", path);
	mode_t perm = st.st_mode & 07777;
	if (S_ISDIR(st.st_mode)) {
		wd_autoclose int in =
		    openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0 || mkdirat(to, name, 0700) < 0)
			return wd_err_sys(err, errno, "snapshot: %s", path);
		wd_autoclose int out =
		    openat(to, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (out < 0)
			return wd_err_sys(err, errno, "snapshot: %s", path);
		/* the overlay's opaque mark (deletions the diff reads) */
		char val[4];
		ssize_t vn = fgetxattr(in, "user.overlay.opaque", val, sizeof(val));
		if (vn > 0 && fsetxattr(out, "user.overlay.opaque", val, (size_t)vn, 0) < 0)
			return wd_err_sys(err, errno, "snapshot: %s (opaque mark)", path);
		int rc = copy_dir(in, out, path, err);
		if (rc == 0 && fchmod(out, perm) < 0)
			rc = wd_err_sys(err, errno, "snapshot: %s", path);
		return rc;
	}
	if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlinkat(from, name, t, sizeof(t) - 1);
		if (n < 0 || (t[n] = '\0', symlinkat(t, to, name) < 0))
			return wd_err_sys(err, errno, "snapshot: %s", path);
		return 0;
	}
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
		/* a whiteout: anyone may make one (Linux 5.8) */
		if (mknodat(to, name, S_IFCHR | perm, makedev(0, 0)) < 0)
			return wd_err_sys(err, errno, "snapshot: %s (whiteout)", path);
		return 0;
	}
	if (S_ISFIFO(st.st_mode)) {
		if (mknodat(to, name, S_IFIFO | perm, 0) < 0)
			return wd_err_sys(err, errno, "snapshot: %s", path);
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return 0; /* sockets: nothing a copy could carry */
	/* O_NONBLOCK, then checked: an entry swapped for a FIFO since the
	 * fstatat never blocks us */
	wd_autoclose int in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat ist;
	if (in < 0 || fstat(in, &ist) < 0)
		return wd_err_sys(err, errno, "snapshot: %s", path);
	if (!S_ISREG(ist.st_mode))
		return wd_err_set(err, WD_E_SYS, "snapshot: %s changed while it was copied", path);
	wd_autoclose int out =
	    openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return wd_err_sys(err, errno, "snapshot: %s", path);
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n < 0)
			return wd_err_sys(err, errno, "snapshot: copy %s", path);
		if (n == 0)
			break;
	}
	if (fchmod(out, perm) < 0)
		return wd_err_sys(err, errno, "snapshot: %s", path);
	return 0;
}

static int
copy_dir(int from, int to, const char *path, struct wd_err *err)
{
	if (!strcmp(path, WS_LAYERS "/work")) {
		/* overlayfs's scratch (its work/work is mode 000): it starts
		 * empty in the copy */
		return 0;
	}
	int dfd = fcntl(from, F_DUPFD_CLOEXEC, 3);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		return wd_err_sys(err, e, "snapshot: %s", path);
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *sub = wd_xasprintf("%s/%s", path, de->d_name);
		rc = copy_entry(from, to, de->d_name, sub, err);
		free(sub);
	}
	closedir(d);
	return rc;
}

int
ws_copy_tree(int from_dir, const char *from, int to_dir, const char *to, struct wd_err *err)
{
	wd_autoclose int in =
	    openat(from_dir, from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return wd_err_sys(err, errno, "snapshot: %s", from);
	if (mkdirat(to_dir, to, 0700) < 0)
		return wd_err_sys(err, errno, "snapshot: create %s", to);
	wd_autoclose int out = openat(to_dir, to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out < 0)
		return wd_err_sys(err, errno, "snapshot: %s", to);
	return copy_dir(in, out, from, err);
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
ws_userns_run(int (*fn)(void *arg, char **out, struct wd_err *err), void *arg, char **out,
	      struct wd_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return wd_err_sys(err, e, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		struct wd_err e = {0};
		char *text = NULL;
		int rc = ws_userns_enter(&e);
		if (rc == 0)
			rc = fn(arg, &text, &e);
		struct {
			int rc;
			struct wd_err e;
			size_t len;
		} h = {rc, e, text ? strlen(text) : 0};
		if (write_all(p[1], &h, sizeof(h)) < 0 || write_all(p[1], text, h.len) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	struct {
		int rc;
		struct wd_err e;
		size_t len;
	} h;
	int rc = read_all(p[0], &h, sizeof(h));
	char *text = NULL;
	if (rc == 0 && h.len) {
		text = wd_xmalloc(h.len + 1);
		rc = read_all(p[0], text, h.len);
		text[h.len] = '\0';
	}
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (rc < 0) {
		free(text);
		return wd_err_set(err, WD_E_SYS,
				  "the process reading the sandbox's layers in a user namespace "
				  "ended without an answer");
	}
	if (h.rc < 0 && err) {
		h.e.msg[sizeof(h.e.msg) - 1] = '\0';
		*err = h.e;
	}
	if (out)
		*out = text;
	else
		free(text);
	return h.rc;
}
