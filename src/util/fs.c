/* util/fs: removing a tree (supervisor side: it allocates through
 * opendir, so it never runs after a raw clone).
 *
 * What is removed was often written by a sandbox or is an image's tree
 * (hostile input): nothing here follows a link.  Every step is relative
 * to the directory above (unlinkat, openat with O_NOFOLLOW), so a link is
 * removed as a link, and a directory replaced by a link between the
 * listing and the open fails the open (ELOOP) instead of leading out. */
#include "util/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Open dfd/name as a directory we may empty.  An ordinary user has no
 * CAP_DAC_OVERRIDE: a directory left mode 000 or 0555 (a Go module cache,
 * overlayfs's own work/work, an image's 0555 directories) could be
 * neither read nor emptied.  Its owner takes the bits back first: only
 * what is being removed changes mode.  fchmodat has no
 * AT_SYMLINK_NOFOLLOW, so a directory we cannot open is pinned with
 * O_PATH and changed through /proc/self/fd.  Root needs none of this to
 * read, and fchmod() on the opened directory makes it writable either
 * way (a failure there is left to the unlinks to report). */
static int
open_dir_writable(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		int p = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		char proc[64];
		if (p >= 0 && fstat(p, &st) == 0 && st.st_uid == geteuid()) {
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p);
			if (chmod(proc, 0700) == 0)
				fd = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		}
		if (p >= 0)
			close(p);
		if (fd < 0)
			errno = EACCES;
	}
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
		(void)fchmod(fd, 0700); /* see above: EPERM if not ours, then unlinks say why */
	return fd;
}

static int
rm_tree(int dfd, const char *name, unsigned depth)
{
	/* Each level holds a descriptor and a stack frame: a tree a sandbox
	 * made deeper than this fails with ELOOP rather than exhausting
	 * either (the caller reports it; nothing is followed). */
	if (depth > WD_RM_TREE_DEPTH)
		return -ELOOP;
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	int fd = open_dir_writable(dfd, name);
	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return -e;
	}
	/* Like rm -r: remove what can be removed, report the first failure. */
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		int r = rm_tree(fd, de->d_name, depth + 1);
		if (r < 0 && rc == 0)
			rc = r;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0)
		rc = -errno;
	return rc;
}

int
wd_rm_tree_at(int dfd, const char *name)
{
	return rm_tree(dfd, name, 0);
}

int
wd_dir_realpath(const char *dir, char **out)
{
	*out = NULL;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char link[64], real[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, real, sizeof(real) - 1);
	if (n < 0) {
		int e = errno;
		close(fd);
		if (e != ENOENT)
			return -e;
		/* no /proc: the walk realpath() does, as before */
		*out = realpath(dir, NULL);
		return *out ? 0 : -errno;
	}
	real[n] = '\0';
	/* The kernel's name of the directory held: a directory removed, one
	 * outside this process's root or mount namespace has a name that
	 * is no path ("/x (deleted)", "", "net:[...]"); reopened below, it
	 * leads elsewhere or nowhere and is refused. */
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int again =
	    real[0] == '/' ? (int)syscall(SYS_openat2, AT_FDCWD, real, &how, sizeof(how)) : -1;
	struct stat a, b;
	bool same = again >= 0 && fstat(fd, &a) == 0 && fstat(again, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	close(fd);
	if (again >= 0)
		close(again);
	if (!same)
		return -ESTALE;
	*out = wd_xstrdup(real);
	return 0;
}
