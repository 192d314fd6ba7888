/* jail/hostpath: how the supervisor reaches host paths for the jail:
 * idmapped copies of writable trees (root mode), and bind sources
 * resolved without following symlinks the sandbox may have planted.
 * Supervisor side only, before clone(). */
#include "jail/jail.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* ---- idmapped mounts (root mode) ---- */

/* A user namespace used as the idmapping of a bind mount.  Its main
 * mapping is host uid/gid (owner) -> to->uid/gid: on disk the workspace's
 * owner, seen as to->uid (container: host nobody, which the sandbox's user
 * namespace shows as uid 1000), so the sandbox user reads and writes the
 * workspace as its own while what it creates belongs on the host to the
 * workspace's owner.  With to->root_creates, a second line shows host
 * nobody as 0: a process creating files through the mount as host root
 * (gVisor's gofer creates, then chowns to the sandbox user) would
 * otherwise be refused with EOVERFLOW, root being unmapped.
 *
 * The namespace needs a process to hold it only until its fd is open.
 * That process shares our memory (CLONE_VM) on a small stack of its own,
 * so no page tables are copied.  Sharing memory is safe because the
 * holder writes nothing but its stack: it only makes system calls that
 * cannot fail (block signals, PDEATHSIG, getppid, pause), so not even
 * errno, which lives in the creating thread's TLS.  Sanitizer builds,
 * whose runtimes keep per-thread state in that memory, still fork.  It is
 * killed once its fd is open and reaped later (jail_idmap_reap), off the
 * path to the sandbox's pid 1: waiting for it to die took a scheduling
 * round trip.  Measured (STEP "1a host trees" of `warden run -v`, 80 runs
 * each, loaded 2-CPU VM): median 0.29 ms and p90 3.0-3.6 ms before,
 * 0.115 ms and 0.16 ms after; the CPU of a whole run did not move
 * measurably (spawn_bench, 400 runs: 4.56 and 4.54 ms).  Invisible to
 * the caller's waitpid(-1) meanwhile (exit signal 0). */
#define HOLDER_SHARES_MEMORY (!WD_SANITIZED)

static int
holder_main(void *arg)
{
	/* raw system calls that cannot fail: see above */
	pid_t parent = *(const pid_t *)arg;
	unsigned long all = ~0UL;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof(all));
	jail_prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (syscall(SYS_getppid) != parent)
		syscall(SYS_exit, 0);
	for (;;)
		syscall(SYS_pause);
	return 0;
}

static pid_t
holder_start(struct jail_idmap_cache *c, const pid_t *self)
{
	if (HOLDER_SHARES_MEMORY) {
		return jail_clone_vm(holder_main, (void *)(uintptr_t)self, CLONE_NEWUSER,
				     &c->holder_pidfd, &c->holder_stack);
	}
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_NEWUSER | CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&c->holder_pidfd;
	pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		jail_child_sanitizer();
		holder_main((void *)(uintptr_t)self);
	}
	return pid;
}

void
jail_idmap_reap(struct jail_idmap_cache *c)
{
	if (c->holder_pidfd >= 0) {
		siginfo_t si;
		while (syscall(SYS_waitid, P_PIDFD, c->holder_pidfd, &si, WEXITED | __WALL, NULL) <
			   0 &&
		       errno == EINTR)
			;
		close(c->holder_pidfd);
		c->holder_pidfd = -1;
	}
	/* only once the holder is gone: it ran on this stack */
	if (c->holder_stack)
		munmap(c->holder_stack, JAIL_VM_STACK);
	c->holder_stack = NULL;
}

static int
idmap_userns(struct jail_idmap_cache *c, uid_t owner_uid, gid_t owner_gid,
	     const struct jail_idmap *to, struct wd_err *err)
{
	pid_t self = getpid();
	jail_idmap_reap(c); /* an earlier holder of this cache */
	pid_t pid = holder_start(c, &self);
	if (pid < 0) {
		int e = errno;
		jail_idmap_reap(c);
		return wd_err_sys(err, e, "clone user namespace for the idmapped workspace");
	}
	char path[64], map[96];
	int rc = 0, nsfd = -1;
	bool extra = to->root_creates && owner_uid != WD_NOBODY && to->uid != 0;
	snprintf(map, sizeof(map), "%u %u 1\n%s", (unsigned)owner_uid, (unsigned)to->uid,
		 extra ? "65534 0 1\n" : "");
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if ((rc = wd_write_file_at(AT_FDCWD, path, map)) < 0) {
		wd_err_sys(err, -rc, "write %s", path);
		goto out;
	}
	extra = to->root_creates && owner_gid != WD_NOBODY && to->gid != 0;
	snprintf(map, sizeof(map), "%u %u 1\n%s", (unsigned)owner_gid, (unsigned)to->gid,
		 extra ? "65534 0 1\n" : "");
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	if ((rc = wd_write_file_at(AT_FDCWD, path, map)) < 0) {
		wd_err_sys(err, -rc, "write %s", path);
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		rc = wd_err_sys(err, errno, "open %s", path);
out:
	/* killed now, reaped later (jail_idmap_reap) */
	syscall(SYS_pidfd_send_signal, c->holder_pidfd, SIGKILL, NULL, 0);
	return rc < 0 ? rc : nsfd;
}

/* A detached, idmapped copy of the directory dirfd (root only: idmapping a
 * host filesystem needs CAP_SYS_ADMIN over its superblock's namespace, the
 * initial one).  Returns the tree fd, -EINVAL/-ENOSYS/... when the
 * filesystem cannot be idmapped. */
int
jail_idmapped_tree(int dirfd, const struct stat *st, const struct jail_idmap *to,
		   struct jail_idmap_cache *c, struct wd_err *err)
{
	if (c->userns < 0 || c->uid != st->st_uid || c->gid != st->st_gid) {
		if (c->userns >= 0)
			close(c->userns);
		c->userns = idmap_userns(c, st->st_uid, st->st_gid, to, err);
		if (c->userns < 0)
			return c->userns;
		c->uid = st->st_uid;
		c->gid = st->st_gid;
	}
	int tree = (int)syscall(SYS_open_tree, dirfd, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (tree < 0)
		return -errno;
	struct mount_attr a = {
	    .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	    .propagation = MS_PRIVATE, /* see add_host_bind */
	    .userns_fd = (uint64_t)c->userns,
	};
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0) {
		int e = errno;
		close(tree);
		return -e;
	}
	return tree;
}

/* A detached clone of the directory dirfd with its submounts, nosuid,
 * nodev, propagation private: what a tree that cannot be idmapped gets
 * (as a direct workspace's bind, clone_tree in build.c).  Root only
 * (open_tree's clone needs CAP_SYS_ADMIN over the mount's namespace).
 * what names the tree in a failure ("clone WHAT", "WHAT").  The tree fd
 * or -errno. */
int
jail_clone_tree(int dirfd, const char *what, struct wd_err *err)
{
	int t = (int)syscall(SYS_open_tree, dirfd, "",
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (t < 0)
		return wd_err_sys(err, errno, "clone %s", what);
	struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
			       .propagation = MS_PRIVATE};
	if (syscall(SYS_mount_setattr, t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof(a)) < 0) {
		int e = errno;
		close(t);
		return wd_err_sys(err, e, "%s", what);
	}
	return t;
}

/* ---- bind sources: resolved without following the sandbox's symlinks ----
 *
 * As root, warden opens bind sources with root's privileges.  A source
 * path that passes through a directory the sandbox could write in an
 * earlier run (the workspace, an rw bind) may meet a symlink the sandbox
 * planted there ("data/config -> /root/secret"), and root would follow it
 * and hand the target to the jail: a confused deputy.  So sources are
 * resolved here component by component, and a symlink met inside any of
 * the writable roots is refused.  The result contains no symlink; it is
 * opened with RESOLVE_NO_SYMLINKS so a swap after this check fails instead
 * of being followed. */

bool
jail_path_within(const char *p, const char *root)
{
	size_t n = strlen(root);
	if (n == 1)
		return true; /* "/" */
	return !strncmp(p, root, n) && (p[n] == '\0' || p[n] == '/');
}

int
jail_safe_resolve(const char *given, const char *const *roots, size_t nroots, char *out,
		  struct wd_err *err)
{
	char todo[PATH_MAX], link[PATH_MAX], tmp[PATH_MAX];
	if (strlen(given) >= sizeof(todo))
		return wd_err_sys(err, ENAMETOOLONG, "'%s'", given);
	snprintf(todo, sizeof(todo), "%s", given);
	strcpy(out, "/");
	int links = 0;
	char *rest = todo;
	while (*rest) {
		while (*rest == '/')
			rest++;
		if (!*rest)
			break;
		char *end = strchr(rest, '/');
		size_t len = end ? (size_t)(end - rest) : strlen(rest);
		char comp[NAME_MAX + 1];
		if (len > NAME_MAX)
			return wd_err_sys(err, ENAMETOOLONG, "'%s'", given);
		memcpy(comp, rest, len);
		comp[len] = '\0';
		rest += len;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			char *slash = strrchr(out, '/');
			if (slash == out)
				out[1] = '\0';
			else
				*slash = '\0';
			continue;
		}
		size_t ol = strlen(out);
		if (ol + 1 + len >= PATH_MAX)
			return wd_err_sys(err, ENAMETOOLONG, "'%s'", given);
		char cand[PATH_MAX];
		snprintf(cand, sizeof(cand), "%s%s%s", out, ol > 1 ? "/" : "", comp);
		struct stat st;
		if (lstat(cand, &st) < 0)
			return wd_err_sys(err, errno, "'%s'", given);
		if (!S_ISLNK(st.st_mode)) {
			snprintf(out, PATH_MAX, "%s", cand);
			continue;
		}
		for (size_t i = 0; i < nroots; i++) {
			if (jail_path_within(out, roots[i])) {
				int rc =
				    wd_err_set(err, WD_E_INVAL,
					       "'%s' goes through the symlink %s, which lies in "
					       "%s where the sandbox can write; name the target "
					       "directly",
					       given, cand, roots[i]);
				return rc;
			}
		}
		if (++links > 40)
			return wd_err_sys(err, ELOOP, "'%s'", given);
		ssize_t n = readlink(cand, link, sizeof(link) - 1);
		if (n < 0)
			return wd_err_sys(err, errno, "'%s'", given);
		link[n] = '\0';
		if (strlen(link) + 1 + strlen(rest) >= sizeof(tmp))
			return wd_err_sys(err, ENAMETOOLONG, "'%s'", given);
		snprintf(tmp, sizeof(tmp), "%s%s", link, rest);
		snprintf(todo, sizeof(todo), "%s", tmp);
		rest = todo;
		if (link[0] == '/')
			strcpy(out, "/");
	}
	return 0;
}

/* Open a symlink-free absolute path as O_PATH, refusing any symlink that
 * appeared since it was resolved. */
int
jail_open_nofollow(const char *path)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}
