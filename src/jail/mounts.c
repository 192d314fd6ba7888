/* jail/mounts: pid 1's mount operations (step 3), after clone(), in the
 * sandbox's new mount namespace.  System calls only: no allocation, no
 * formatting (the plan holds every string). */
#include "jail/jail.h"
#include "jail/raw.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>

static int
sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}

/* strcspn, strrchr and strchr, written out: a sanitizer intercepts libc's (and an
 * interceptor may take a lock a clone copied held: docs/threat-model.md,
 * "Raw clones"); tests/integration/child_calls.py checks it. */
static size_t
span_until(const char *s, const char *stop)
{
	size_t n = 0;
	for (; s[n]; n++)
		for (const char *c = stop; *c; c++)
			if (s[n] == *c)
				return n;
	return n;
}

static const char *
last_of_c(const char *s, int c)
{
	const char *last = NULL;
	for (; *s; s++)
		if (*s == c)
			last = s;
	return last;
}

static char *
last_of(char *s, int c)
{
	const char *l = last_of_c(s, c);
	return l ? s + (l - s) : NULL;
}

static char *
first_of(char *s, int c)
{
	for (; *s; s++)
		if (*s == c)
			return s;
	return NULL;
}

/* Make a mount read-only (and nosuid, nodev): mount_setattr when the kernel
 * has it (one call, and AT_RECURSIVE reaches submounts a remount would
 * miss), else the classic bind remount of that one mount. */
int
jail_make_readonly(const char *path, bool recursive)
{
	struct mount_attr a = {.attr_set =
				   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	if (sys_mount_setattr(AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &a) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
	    0)
		return -errno;
	return 0;
}

/* Open rel beneath the workspace ws without following any symbolic link:
 * the sandbox may have planted them in a direct workspace in an earlier
 * run, and a link cannot be covered by a mount.  O_PATH, or -errno. */
static int
open_entry(int ws, const char *rel)
{
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, ws, rel, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* A clone of the mount tree at fd moved onto fd itself: read-only (ro),
 * or with the attributes it has (a pin).  Either way the entry becomes a
 * mount point, which neither unlink, rmdir nor rename can take away
 * (EBUSY): its name keeps meaning what it means. */
static int
over_itself(int fd, bool ro)
{
	int tree = (int)syscall(SYS_open_tree, fd, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (tree < 0)
		return -errno;
	struct mount_attr a = {
	    .attr_set = ro ? MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV : 0,
	    .propagation = MS_PRIVATE};
	int rc = 0;
	if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &a) < 0 ||
	    syscall(SYS_move_mount, tree, "", fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		rc = -errno;
	raw_close(tree);
	return rc;
}

/* One walk of the protected paths: where a gitfile may point (host) and
 * what to do with what is found (ops). */
struct walk {
	const char *host;
	const struct jail_protect_ops *ops;
};

/* rel beneath ws read-only over itself (w->ops->ro), if it exists
 * (absent, or below a file: nothing to protect); a symbolic link is
 * refused (ELOOP) rather than left writable. */
static int
protect_rel(int ws, const char *rel, const struct walk *w)
{
	int fd = open_entry(ws, rel);
	if (fd == -ENOENT || fd == -ENOTDIR)
		return 0;
	if (fd < 0)
		return fd;
	struct stat st;
	int rc = raw_fstat(fd, &st) < 0 ? -errno : S_ISLNK(st.st_mode) ? -ELOOP : 0;
	if (rc == 0)
		rc = w->ops->ro(w->ops->ctx, fd, rel, S_ISDIR(st.st_mode));
	raw_close(fd);
	return rc;
}

/* Every existing directory above rel (not the workspace's root) pinned
 * (w->ops->pin), outermost first.  Why: a rename of a directory that
 * merely *contains* mount points is allowed, so with only the protected
 * entry mounted, `mv .git x; mkdir .git` (or `mv sub y` for sub/.envrc)
 * put a fresh, writable entry under the protected name (docs/threat-model.md). */
static int
pin_ancestors(int ws, const char *rel, const struct walk *w)
{
	char buf[PATH_MAX];
	size_t n = strlen(rel);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, rel, n + 1);
	for (size_t i = 1; i < n; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		int fd = open_entry(ws, buf);
		if (fd == -ENOENT || fd == -ENOTDIR)
			return 0; /* the protected path is absent */
		if (fd < 0)
			return fd;
		struct stat st;
		int rc = raw_fstat(fd, &st) < 0 ? -errno : 0;
		if (rc == 0 && S_ISDIR(st.st_mode))
			rc = w->ops->pin(w->ops->ctx, fd, buf);
		buf[i] = '/';
		raw_close(fd);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Read the small file rel/name beneath ws into buf (NUL-terminated, the
 * first line only, its "\n" dropped).  The length, or -errno. */
static int
read_line(int ws, const char *dir, const char *name, char *buf, size_t cap)
{
	char path[PATH_MAX];
	size_t dl = strlen(dir), nl = strlen(name);
	if (dl + 1 + nl >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, dl);
	path[dl] = '/';
	memcpy(path + dl + 1, name, nl + 1);
	struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, ws, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	struct stat st;
	ssize_t r = raw_fstat(fd, &st) < 0 ? -1
		    : S_ISREG(st.st_mode)  ? raw_read(fd, buf, cap - 1)
					   : 0;
	int e = errno;
	raw_close(fd);
	if (r < 0)
		return -e;
	buf[r] = '\0';
	buf[span_until(buf, "\r\n")] = '\0';
	return (int)strlen(buf);
}

/* rel with "." and "x/.." components taken out, in place (no
 * allocation): git's "../.." of a worktree's commondir names the
 * repository, and the callbacks compare and bind names.  -EXDEV when it
 * climbs above the workspace's root. */
static int
lexical_clean(char *rel)
{
	char *w = rel;
	for (char *c = rel; *c;) {
		size_t n = span_until(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.')) {
			/* nothing to keep */
		} else if (n == 2 && c[0] == '.' && c[1] == '.') {
			if (w == rel)
				return -EXDEV;
			while (w > rel && w[-1] != '/')
				w--;
			if (w > rel)
				w--; /* the '/' before it */
		} else {
			if (w > rel)
				*w++ = '/';
			memmove(w, c, n);
			w += n;
		}
		c += n;
		while (*c == '/')
			c++;
	}
	*w = '\0';
	return w == rel ? -EXDEV : 0;
}

/* Where a gitfile or commondir (text t, read from a file in directory
 * base, relative to the workspace ws) points, relative to the workspace,
 * into out: t relative to base, or an absolute t under host (the
 * workspace's host path, which git writes into worktrees' gitfiles),
 * with ".." taken out.  -EXDEV when it points elsewhere: outside the
 * workspace the sandbox cannot write (its other writable binds are its
 * caller's choice).  Why ".." is resolved by name: what git follows is
 * "worktrees/wt/../..", and a callback that compares names (the file
 * tools' check, the gVisor binds) must see "repo.git"; the name is the
 * place because the path as written is first opened without following
 * any symbolic link (-ELOOP if one is on the way, -ENOENT if absent). */
static int
git_target(int ws, const char *base, const char *t, const char *host, char *out, size_t cap)
{
	size_t bl = strlen(base), tl = strlen(t);
	if (t[0] == '/') {
		size_t hl = host ? strlen(host) : 0;
		if (!hl || strncmp(t, host, hl) || t[hl] != '/')
			return -EXDEV;
		t += hl + 1;
		tl -= hl + 1;
		bl = 0;
	}
	if (bl + 1 + tl >= cap || tl == 0)
		return -ENAMETOOLONG;
	if (bl) {
		memcpy(out, base, bl);
		out[bl++] = '/';
	}
	memcpy(out + bl, t, tl + 1);
	int fd = open_entry(ws, out);
	if (fd < 0)
		return fd;
	raw_close(fd);
	return lexical_clean(out);
}

/* A target git would follow (out, as git_target() left it) that is not
 * there (rc -ENOENT): told to ops->absent when the caller asks, so that
 * a change creating it is refused outside the jail (the jail has nothing
 * to bind).  0, or what the callback returns. */
static int
absent_target(const struct walk *w, char *out, int rc)
{
	if (rc != -ENOENT || !w->ops->absent || lexical_clean(out) < 0)
		return 0;
	return w->ops->absent(w->ops->ctx, out);
}

/* Case-insensitive: does s begin with the word w (followed by end, space,
 * '=', '"' or ']')? */
static bool
word_is(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (size_t i = 0; i < n; i++) {
		char a = s[i], b = w[i];
		/* ASCII only, as git's keys are (no locale, no interceptor) */
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (char)(b - 'A' + 'a');
		if (a != b)
			return false;
	}
	char c = s[n];
	return c == '\0' || c == ' ' || c == '\t' || c == '=' || c == '"' || c == ']';
}

#define CONFIG_BYTES 8192 /* of a config read: git's own are a few hundred */
#define CONFIG_DEPTH 3	  /* include.path followed this deep */

/* What a git config file (cfg, relative to the workspace) names in the
 * workspace that git runs or reads as config, read-only too (attack
 * pass): core.hooksPath (git runs its hooks from there: husky's
 * ".husky", ".githooks"), relative to wt (the worktree's root, or the
 * git directory for a bare repository), and include.path /
 * includeIf.*.path (more config: core.fsmonitor), relative to the config
 * file's directory, followed CONFIG_DEPTH deep.  Only a target that
 * exists is bound (absent, the sandbox can create it in direct mode; see
 * docs/sessions.md, "Protected paths"); "~/" and %(prefix) paths are outside.  A line parser, not
 * git's: sections by name, keys by name, one value per line. */
static int
protect_config(int ws, const char *cfg, const char *wt, const struct walk *w, int depth)
{
	char text[CONFIG_BYTES], out[PATH_MAX], dir[PATH_MAX];
	struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, ws, cfg, &how, sizeof(how));
	if (fd < 0)
		return 0; /* none, or elsewhere: git reads nothing of ours */
	struct stat st;
	ssize_t n = raw_fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
			? raw_read(fd, text, sizeof(text) - 1)
			: 0;
	raw_close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	size_t cl = strlen(cfg);
	if (cl >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, cfg, cl + 1);
	char *slash = last_of(dir, '/');
	if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
	enum { OTHER, CORE, INCLUDE } sec = OTHER;
	for (char *l = text; *l;) {
		char *end = l + span_until(l, "\n");
		char next = *end;
		*end = '\0';
		while (*l == ' ' || *l == '\t')
			l++;
		if (*l == '[') {
			l++;
			while (*l == ' ' || *l == '\t')
				l++;
			sec = word_is(l, "core")				 ? CORE
			      : word_is(l, "include") || word_is(l, "includeif") ? INCLUDE
										 : OTHER;
		} else if ((sec == CORE && word_is(l, "hookspath")) ||
			   (sec == INCLUDE && word_is(l, "path"))) {
			bool hooks = sec == CORE;
			char *v = first_of(l, '=');
			if (v) {
				v++;
				while (*v == ' ' || *v == '\t')
					v++;
				if (*v == '"')
					v++;
				size_t vl = span_until(v, "\"\r;#");
				while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
					vl--;
				v[vl] = '\0';
				int rc = 0;
				if (vl && v[0] != '~' && v[0] != '%')
					rc = git_target(ws, hooks ? wt : dir, v, w->host, out,
							sizeof(out));
				else
					rc = -EXDEV;
				if (rc == 0) {
					rc = pin_ancestors(ws, out, w);
					if (rc == 0)
						rc = protect_rel(ws, out, w);
					if (rc == 0 && !hooks && depth + 1 < CONFIG_DEPTH)
						rc = protect_config(ws, out, wt, w, depth + 1);
				}
				if (rc == -ENOENT)
					rc = absent_target(w, out, rc);
				if (rc < 0 && rc != -EXDEV && rc != -ENOENT && rc != -ENOTDIR)
					return rc;
			}
		}
		if (!next)
			break;
		l = end + 1;
	}
	return 0;
}

/* gitdir's config file (gitdir/config), protect_config()'d. */
static int
protect_gitdir_config(int ws, const char *gitdir, const char *wt, const struct walk *w)
{
	char cfg[PATH_MAX];
	size_t gl = strlen(gitdir);
	if (gl + sizeof("/config") > sizeof(cfg))
		return -ENAMETOOLONG;
	memcpy(cfg, gitdir, gl);
	memcpy(cfg + gl, "/config", sizeof("/config"));
	return protect_config(ws, cfg, wt, w, 0);
}

/* The repository behind an entry "X/.git" (docs/threat-model.md): git follows a
 * .git *file* ("gitdir: T": a worktree, a submodule's checkout) and a
 * git directory's "commondir" (a worktree's shared repository) and runs
 * what it finds there (config, hooks), so where they point inside the
 * workspace is made read-only too.  rel is ".git" or "sub/.git", already
 * read-only itself (so what it says cannot change any more). */
static int
protect_gitdir(int ws, const char *rel, const struct walk *w)
{
	char line[PATH_MAX], gitdir[PATH_MAX], common[PATH_MAX];
	int fd = open_entry(ws, rel);
	if (fd < 0)
		return (fd == -ENOENT || fd == -ENOTDIR) ? 0 : fd;
	struct stat st;
	int rc = raw_fstat(fd, &st) < 0 ? -errno : 0;
	raw_close(fd);
	if (rc < 0)
		return rc;
	size_t rl = strlen(rel);
	if (rl >= sizeof(gitdir))
		return -ENAMETOOLONG;
	memcpy(gitdir, rel, rl + 1);
	if (S_ISREG(st.st_mode)) {
		/* "gitdir: T", relative to the directory holding .git */
		char parent[PATH_MAX];
		memcpy(parent, rel, rl + 1);
		char *slash = last_of(parent, '/');
		const char *dir = slash ? (*slash = '\0', parent) : ".";
		rc = read_line(ws, dir, ".git", line, sizeof(line));
		if (rc < 0 || strncmp(line, "gitdir: ", 8))
			return 0; /* not a gitfile git would follow */
		rc = git_target(ws, slash ? parent : "", line + 8, w->host, gitdir, sizeof(gitdir));
		if (rc == -ENOENT)
			return absent_target(w, gitdir, rc);
		if (rc == -EXDEV || rc == -ENOTDIR)
			return 0; /* elsewhere: nothing there to protect */
		if (rc < 0 || (rc = pin_ancestors(ws, gitdir, w)) < 0 ||
		    (rc = protect_rel(ws, gitdir, w)) < 0)
			return rc;
	} else if (!S_ISDIR(st.st_mode)) {
		return 0;
	}
	/* the worktree's root: the directory holding ".git", or for a bare
	 * repository (a git directory by another name) the directory itself */
	char wt[PATH_MAX];
	memcpy(wt, rel, rl + 1);
	const char *b = last_of(wt, '/');
	if (!strcmp(b ? b + 1 : wt, ".git")) {
		if (b)
			wt[b - wt] = '\0';
		else
			wt[0] = '\0';
	}
	rc = protect_gitdir_config(ws, gitdir, wt, w);
	if (rc < 0)
		return rc;
	/* the git directory's commondir, relative to it */
	rc = read_line(ws, gitdir, "commondir", line, sizeof(line));
	if (rc <= 0)
		return 0; /* none (ENOENT), or unreadable: git reads none either */
	rc = git_target(ws, gitdir, line, w->host, common, sizeof(common));
	if (rc == -ENOENT)
		return absent_target(w, common, rc);
	if (rc == -EXDEV || rc == -ENOTDIR)
		return 0;
	if (rc < 0 || (rc = pin_ancestors(ws, common, w)) < 0 ||
	    (rc = protect_rel(ws, common, w)) < 0)
		return rc;
	return protect_gitdir_config(ws, common, wt, w);
}

/* Is the last component of rel ".git"? */
static bool
names_git(const char *rel)
{
	const char *b = last_of_c(rel, '/');
	return !strcmp(b ? b + 1 : rel, ".git");
}

/* The submodules .gitmodules names ("path = X"): each X/.git (a gitfile
 * into .git/modules, already read-only) protected as .git is.  Why: the
 * host's `git status` recurses into submodules, so a rewritten sub/.git
 * would point it at a repository the sandbox wrote (docs/threat-model.md).  At most
 * 64, from the first 8 KiB (a larger file would be the sandbox's
 * doing: .gitmodules is protected itself). */
static int
protect_submodules(int ws, const struct walk *w)
{
	char text[8192], rel[PATH_MAX];
	struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, ws, ".gitmodules", &how, sizeof(how));
	if (fd < 0)
		return 0; /* none: no submodule */
	struct stat st;
	ssize_t n = raw_fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
			? raw_read(fd, text, sizeof(text) - 1)
			: 0;
	raw_close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	int count = 0;
	for (char *l = text; *l && count < 64;) {
		char *end = l + span_until(l, "\n");
		char next = *end;
		*end = '\0';
		while (*l == ' ' || *l == '\t')
			l++;
		if (!strncmp(l, "path", 4)) {
			char *v = l + 4;
			while (*v == ' ' || *v == '\t')
				v++;
			if (*v == '=') {
				v++;
				while (*v == ' ' || *v == '\t')
					v++;
				size_t vl = span_until(v, " \t\r");
				if (vl && vl + 6 < sizeof(rel)) {
					memcpy(rel, v, vl);
					memcpy(rel + vl, "/.git", 6);
					int rc = pin_ancestors(ws, rel, w);
					if (rc == 0)
						rc = protect_rel(ws, rel, w);
					if (rc == 0)
						rc = protect_gitdir(ws, rel, w);
					/* a submodule path escaping the workspace
					 * (EXDEV) is not one git checks out */
					if (rc < 0 && rc != -EXDEV)
						return rc;
					count++;
				}
			}
		}
		if (!next)
			break;
		l = end + 1;
	}
	return 0;
}

/* Is rel (a directory beneath ws) a git directory by git's own test
 * (setup.c's is_git_directory()): HEAD, and objects/ and refs/ or a
 * commondir?  A bare repository, whatever its name: git's discovery takes
 * it as a repository in the directory it runs in and in each parent. */
static bool
is_gitdir(int ws, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	const char *need[] = {"HEAD", "objects", "refs", "commondir"};
	bool has[4] = {false};
	size_t rl = strlen(rel);
	for (size_t i = 0; i < 4; i++) {
		size_t nl = strlen(need[i]);
		if (rl + 1 + nl >= sizeof(p))
			return false;
		memcpy(p, rel, rl);
		p[rl] = '/';
		memcpy(p + rl + 1, need[i], nl + 1);
		has[i] = raw_fstatat(ws, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
	}
	return has[0] && ((has[1] && has[2]) || has[3]);
}

#define NESTED_DEPTH 2	 /* a/b/.git: the deepest nested repository looked for */
#define NESTED_DIRS 1024 /* directories read at most, so a start stays cheap */

/* Nested repositories, already there when the sandbox starts: every
 * X/.git and X/Y/.git (a project of checkouts, a vendored repository, a
 * worktree beside its main repository) protected as the workspace's own
 * .git is, so a human who later runs git in X does not run what the
 * sandbox wrote there (docs/threat-model.md).  rel (PATH_MAX) holds the directory
 * being read, len its length ("" the root, whose own .git the caller
 * did).  Each subdirectory costs one fstatat of its .git; a directory is
 * read (getdents) only above NESTED_DEPTH and at most *budget of them, so
 * a start over 1,600 directories adds well under a millisecond of reads.
 * Symbolic links are not followed; .git directories are not entered. */
static int
protect_nested(int ws, char *rel, size_t len, int depth, int *budget, const struct walk *w)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int dfd = (int)syscall(SYS_openat2, ws, len ? rel : ".", &how, sizeof(how));
	if (dfd < 0)
		return 0; /* gone or not a directory: nothing below it */
	char buf[4096];
	int rc = 0;
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (long off = 0; off < n && rc == 0;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(buf + off);
			off += d->d_reclen;
			const char *name = d->d_name;
			size_t nl = strlen(name);
			if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, ".git") ||
			    len + nl + sizeof("//.git") >= PATH_MAX)
				continue;
			struct stat st;
			/* a directory, never a link to one (whose .git could be
			 * anywhere: the fstatat below follows the first component) */
			if (d->d_type != DT_DIR &&
			    (d->d_type != DT_UNKNOWN ||
			     raw_fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			     !S_ISDIR(st.st_mode)))
				continue;
			char *end = rel + len;
			if (len)
				*end++ = '/';
			memcpy(end, name, nl);
			size_t nlen = (size_t)(end - rel) + nl;
			memcpy(rel + nlen, "/.git", sizeof("/.git"));
			if (raw_fstatat(ws, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
				rc = pin_ancestors(ws, rel, w);
				if (rc == 0)
					rc = protect_rel(ws, rel, w);
				if (rc == 0)
					rc = protect_gitdir(ws, rel, w);
			}
			/* X's editor and shell configuration, as at the root: a
			 * human opens X in an editor, direnv loads X/.envrc in
			 * X (attack pass).  A symbolic link is left alone here
			 * (sub/.envrc -> ../.envrc is common, and refusing it
			 * would refuse the workspace); apply and the file tools
			 * refuse a change to one at any depth. */
			static const char *const cfgs[] = {"/.envrc", "/.vscode", "/.idea"};
			for (size_t k = 0; rc == 0 && k < sizeof(cfgs) / sizeof(cfgs[0]); k++) {
				size_t cl = strlen(cfgs[k]);
				if (nlen + cl >= PATH_MAX)
					break;
				memcpy(rel + nlen, cfgs[k], cl + 1);
				if (raw_fstatat(ws, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    !S_ISLNK(st.st_mode)) {
					rc = pin_ancestors(ws, rel, w);
					if (rc == 0)
						rc = protect_rel(ws, rel, w);
				}
			}
			rel[nlen] = '\0';
			/* X itself a git directory ("repo.git", a fixture): git
			 * finds it by its layout, run in X or below, and runs
			 * what its config says; nothing below it to look for */
			if (rc == 0 && is_gitdir(ws, rel)) {
				rc = pin_ancestors(ws, rel, w);
				if (rc == 0)
					rc = protect_rel(ws, rel, w);
				if (rc == 0)
					rc = protect_gitdir(ws, rel, w);
				rel[len] = '\0';
				continue;
			}
			if (rc == 0 && depth + 1 < NESTED_DEPTH && *budget > 0) {
				(*budget)--;
				rc = protect_nested(ws, rel, nlen, depth + 1, budget, w);
			}
			rel[len] = '\0';
		}
		if (rc < 0)
			break;
	}
	raw_close(dfd);
	return rc;
}

int
jail_protect_walk(int ws, const char *rel, const char *host, const struct jail_protect_ops *ops)
{
	const struct walk w = {host, ops};
	int rc = pin_ancestors(ws, rel, &w);
	if (rc == 0)
		rc = protect_rel(ws, rel, &w);
	if (rc == 0 && names_git(rel))
		rc = protect_gitdir(ws, rel, &w);
	if (rc == 0 && !strcmp(rel, ".git"))
		rc = protect_submodules(ws, &w);
	if (rc == 0 && !strcmp(rel, ".git")) {
		char nested[PATH_MAX] = "";
		int budget = NESTED_DIRS;
		rc = protect_nested(ws, nested, 0, 0, &budget, &w);
	}
	return rc;
}

/* pid 1's pin: the directory over itself with the attributes it has, so
 * that it is a mount point (EBUSY to rename or remove); one that is
 * already a mount root is left alone, and one inside a read-only mount
 * stays read-only (the clone keeps its attributes). */
static int
pin_mount(void *ctx, int fd, const char *rel)
{
	(void)ctx;
	(void)rel;
	struct statx sx;
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE, &sx) < 0)
		return -errno;
	if ((sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return 0;
	return over_itself(fd, false);
}

/* pid 1's protection: the entry read-only over itself. */
static int
ro_mount(void *ctx, int fd, const char *rel, bool dir)
{
	(void)ctx;
	(void)rel;
	(void)dir;
	return over_itself(fd, true);
}

/* JAIL_OP_PROTECT: the workspace's op->data (at op->path) walked by
 * jail_protect_walk() with pid 1's mounts (op->host: the workspace's host
 * path for absolute gitfiles, NULL when unknown: a vacant sandbox).  The
 * walk reads a gitfile or commondir only after making it read-only, so
 * what it follows cannot change under it. */
int
jail_protect_here(int ws, const char *rel, const char *host)
{
	const struct jail_protect_ops ops = {pin_mount, ro_mount, NULL, NULL};
	return jail_protect_walk(ws, rel, host, &ops);
}

static int
protect(const struct jail_op *op)
{
	int ws = raw_open(op->path, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (ws < 0)
		return -errno;
	int rc = jail_protect_here(ws, op->data, op->host);
	raw_close(ws);
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
			int tree =
			    (int)syscall(SYS_open_tree, op->fd, "",
					 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
					     ((op->flags & JAIL_OPF_RECURSIVE) ? AT_RECURSIVE : 0));
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
				      (op->flags & JAIL_OPF_RECURSIVE) ? AT_RECURSIVE : 0,
				      &set) < 0)
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
