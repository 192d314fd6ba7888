/* jail/etctree: an image's /etc as the jail shows it, prepared once per
 * image and per set of warden's entries (supervisor side).
 *
 * Showing an image's /etc entry by entry costs a mount per directory and
 * a copy per file on every start (the python3 image: 33 binds and some
 * 60 copies).  Instead the view is written once, as a directory beside the
 * image's rootfs in the store,
 *
 *   sha256-HEX/etc-KEY/   the image's etc minus the reserved names
 *                         (warden's identity files, shadow, gshadow,
 *                         machine-id), plus warden's entries themselves
 *
 * and each start binds it read-only on the jail's /etc: one mount.  KEY
 * is a digest of warden's entries (the passwd of an image's user or of a
 * --home differs), so a tree never shows other entries than the plan's.
 * Images are read-only once stored, so the tree never goes stale; it goes
 * with the image (wd_image_remove removes sha256-HEX whole).
 *
 * The image's tree is hostile input: nothing here follows a link (every
 * step is openat(O_NOFOLLOW) from the directory above, links are copied
 * as links and resolve in the jail's view only); devices, FIFOs and
 * sockets are left out as the entry-by-entry plan leaves them.  The tree
 * is built in a fresh directory and renamed into place, so a reader sees
 * the whole tree or none, and two sandboxes starting together both end
 * with one. */
#include "jail/jail.h"
#include "util/sha256.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A bump invalidates every tree (the layout below changed). */
#define ETC_TREE_FORMAT "warden etc tree 1"
#define ETC_TREE_DEPTH 64

static int
copy_file(int sfd, int dfd, const char *name, mode_t mode)
{
	wd_autoclose int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return -errno;
	struct stat st;
	if (fstat(in, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL; /* replaced between the listing and the open */
	wd_autoclose int out =
	    openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		int rc = wd_write_all(out, buf, (size_t)n);
		if (rc < 0)
			return rc;
	}
	if (fchmod(out, mode) < 0)
		return -errno;
	return 0;
}

/* Copy directory sfd's entries into dfd.  shallow: the level whose files
 * the entry-by-entry plan copied (mode 0644, warden's); below it, where it
 * bound the image's directories, modes and (as root) owners are the
 * image's.  skip_reserved: the top of etc. */
static int
copy_dir(int sfd, int dfd, bool shallow, bool skip_reserved, int depth)
{
	if (depth > ETC_TREE_DEPTH)
		return -ELOOP;
	int fd = dup(sfd);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		const char *name = e->d_name;
		struct stat st;
		if (!strcmp(name, ".") || !strcmp(name, "..") ||
		    (skip_reserved && jail_etc_reserved(name)))
			continue;
		if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t k = readlinkat(sfd, name, target, sizeof(target) - 1);
			if (k <= 0)
				continue; /* as the entry-by-entry plan: left out */
			target[k] = '\0';
			if (symlinkat(target, dfd, name) < 0)
				rc = -errno;
		} else if (S_ISREG(st.st_mode)) {
			rc = copy_file(sfd, dfd, name, shallow ? 0644 : st.st_mode & 0777);
		} else if (S_ISDIR(st.st_mode)) {
			if (mkdirat(dfd, name, 0700) < 0) {
				rc = -errno;
				break;
			}
			wd_autoclose int s2 =
			    openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			wd_autoclose int d2 =
			    openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0 || d2 < 0) {
				rc = -errno;
				break;
			}
			rc = copy_dir(s2, d2, false, false, depth + 1);
			if (rc == 0 && fchmod(d2, st.st_mode & 0777) < 0)
				rc = -errno;
		} else {
			continue; /* device, FIFO, socket: never shown */
		}
		/* the image's owners where the image's directories were shown
		 * (and bound: the entry-by-entry plan); as another user than
		 * root the store, and so every entry, is that user's already
		 * and fchownat's EPERM is expected.  The shallow entries stay
		 * the store owner's: on the tmpfs /etc they were the sandbox
		 * user's, which a tree in the store must never be (a process
		 * that left its user namespace is host nobody, and would
		 * rewrite the /etc of every later sandbox of the image). */
		if (rc == 0 && !shallow &&
		    fchownat(dfd, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 &&
		    geteuid() == 0)
			rc = -errno;
	}
	closedir(d);
	return rc;
}

static int
write_entry(int dfd, const struct jail_etc_entry *e)
{
	if (e->link)
		return symlinkat(e->text, dfd, e->name) < 0 ? -errno : 0;
	wd_autoclose int fd =
	    openat(dfd, e->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < e->len;) {
		ssize_t w = write(fd, e->text + off, e->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		off += (size_t)w;
	}
	return fchmod(fd, 0644) < 0 ? -errno : 0;
}

/* Fill the empty directory dfd: the image's etc (image_root/etc, a real
 * directory or absent: the caller refused a link), etc/ssl's entries in
 * ssl/, warden's entries. */
static int
fill(int dfd, const char *image_root, const struct jail_etc_entry *ents, size_t n)
{
	wd_autoclose int root = open(image_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	wd_autoclose int etc = openat(root, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (etc < 0 && errno != ENOENT)
		return -errno;
	int rc = 0;
	if (etc >= 0 && (rc = copy_dir(etc, dfd, true, true, 0)) < 0)
		return rc;
	if (mkdirat(dfd, "ssl", 0755) < 0)
		return -errno;
	wd_autoclose int ssl =
	    etc < 0 ? -1 : openat(etc, "ssl", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (etc >= 0 && ssl < 0 && errno != ENOENT)
		return -errno;
	if (ssl >= 0) {
		wd_autoclose int dssl =
		    openat(dfd, "ssl", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dssl < 0)
			return -errno;
		if ((rc = copy_dir(ssl, dssl, true, false, 1)) < 0)
			return rc;
	}
	for (size_t i = 0; i < n; i++)
		if ((rc = write_entry(dfd, &ents[i])) < 0)
			return rc;
	return fchmod(dfd, 0755) < 0 ? -errno : 0;
}

int
jail_etc_tree(const char *image_root, const struct jail_etc_entry *ents, size_t n, char *out,
	      size_t cap)
{
	struct wd_sha256 h;
	unsigned char md[32];
	char hex[65];
	wd_sha256_init(&h);
	wd_sha256_update(&h, ETC_TREE_FORMAT, sizeof(ETC_TREE_FORMAT));
	for (size_t i = 0; i < n; i++) {
		char kind = ents[i].link ? 'l' : 'f';
		wd_sha256_update(&h, ents[i].name, strlen(ents[i].name) + 1);
		wd_sha256_update(&h, &kind, 1);
		wd_sha256_update(&h, &ents[i].len, sizeof(ents[i].len));
		wd_sha256_update(&h, ents[i].text, ents[i].len);
	}
	wd_sha256_final(&h, md);
	wd_sha256_hex(md, hex);

	/* beside the rootfs: sha256-HEX/ is the image's directory */
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", image_root);
	char *slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';
	if ((size_t)snprintf(out, cap, "%s/etc-%.16s", parent, hex) >= cap)
		return -ENAMETOOLONG;
	struct stat st;
	if (lstat(out, &st) == 0 && S_ISDIR(st.st_mode))
		return 0; /* prepared by an earlier start */

	char tmp[PATH_MAX];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.etc-%.16s.XXXXXX", parent, hex) >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (!mkdtemp(tmp))
		return -errno;
	int rc;
	{
		wd_autoclose int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = dfd < 0 ? -errno : fill(dfd, image_root, ents, n);
	}
	if (rc == 0 && rename(tmp, out) < 0) {
		rc = -errno;
		/* another start renamed its tree first: the same content */
		if ((rc == -EEXIST || rc == -ENOTEMPTY) && lstat(out, &st) == 0 &&
		    S_ISDIR(st.st_mode))
			rc = 1;
	}
	if (rc != 0)
		(void)wd_rm_tree_at(AT_FDCWD, tmp); /* a failed tree is never used */
	return rc < 0 ? rc : 0;
}
