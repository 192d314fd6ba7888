/* files/files: the workspace as direct file tools see it.
 *
 * Direct tools (read_file, write_file, edit_file, list_dir, search_files)
 * run in warden itself, outside every jail, so they must be held to the
 * same containment as the policy's path check (docs/policy.md,
 * "Containment"): every path is opened with
 *
 *   openat2(workspace_fd, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
 *
 * so the check and the use are one system call on one directory fd.  The
 * kernel refuses ("EXDEV") any resolution that leaves the tree under the
 * fd, by "..", an absolute symlink or a symlink that climbs out, and
 * ("ELOOP") /proc/<pid>/fd-style magic links (kernel commit fddb5d430ad9).
 *
 * Writes are atomic and never go through an existing name:
 *   parent = openat2(ws, dirname, O_PATH|O_DIRECTORY, BENEATH)
 *   tmp    = openat2(parent, ".NAME.warden-RANDOM", O_CREAT|O_EXCL, BENEATH)
 *   write, fchmod (the old file's mode), renameat(parent, tmp, parent, NAME)
 * A symlink or a hard link at NAME is replaced, never written through, so
 * a link planted in the workspace cannot redirect a write to a host file
 * or to a protected one (the open(2) of an O_TRUNC through a hard link to
 * .git/config would rewrite it; a rename cannot).
 *
 * Protected paths: .git/hooks, .git/config, .gitmodules, .envrc,
 * .vscode and .idea (ws_default_protect, the list pid 1 makes read-only in
 * every jail) are read-only to the tools, because git and editors on the
 * host execute what they hold (core.fsmonitor, diff.external, hooks,
 * direnv, tasks.json); wd_workspace_protect() adds more (a policy's
 * workspace.protect, a sandbox's own), and a sandbox's view
 * (wd_sandbox_workspace) starts with the same list as its jail.  The check
 * is on where the parent directory really is (its fd's path), not on the
 * string the caller gave, so "a/../.git", a symlink "h -> .git/hooks" or a
 * bind of .git elsewhere cannot dodge it.
 *
 * A cow sandbox's view is its overlay (a detached mount): the same calls
 * on the overlay's root fd, so a write lands in the sandbox's upper layer
 * (its change set), never in the host directory.  A detached mount's fd
 * reads back from /proc/self/fd as "/..." (the path below the mount's
 * root), so where() compares with what the root fd itself reads back as,
 * not with the host path. */
#include "files/files.h"

#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "jail/jail.h"

const char *const ws_default_protect[] = {
    ".git", ".gitmodules", ".envrc", ".vscode", ".idea", NULL,
};

/* ---- paths: the normal form, and the one way each is opened ---- */

char *
ws_relpath(const char *p)
{
	if (!p || p[0] == '/')
		return NULL;
	char *out = wd_xmalloc(strlen(p) + 1), *o = out;
	for (const char *c = p; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			free(out);
			return NULL;
		}
		if (n && !(n == 1 && c[0] == '.')) {
			if (o > out)
				*o++ = '/';
			memcpy(o, c, n);
			o += n;
		}
		c += n;
		c += strspn(c, "/");
	}
	*o = '\0';
	if (!out[0]) {
		free(out);
		return NULL;
	}
	return out;
}

int
ws_open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
			       .resolve =
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	if (flags & O_CREAT)
		how.mode = 0600;
	int fd, tries = 0;
	while ((fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how))) < 0 &&
	       errno == EAGAIN && ++tries < 64)
		; /* a rename elsewhere raced the lookup: the kernel asks to retry */
	return fd < 0 ? -errno : fd;
}

#define WS_MOUNT "/workspace"

struct wd_workspace {
	int fd;		 /* O_PATH | O_DIRECTORY */
	char *real;	 /* resolved host path: messages, absolute paths given */
	char *root_link; /* what /proc/self/fd/<fd> reads back as (where()) */
	uid_t uid;	 /* owner: files warden creates as root are given to it */
	gid_t gid;
	char **protect; /* ws_default_protect, then wd_workspace_protect()'s */
	size_t nprotect;
};

static int
beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .mode = (flags & O_CREAT) ? mode : 0,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	for (int tries = 0;; tries++) {
		int fd = (int)syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof(how));
		if (fd >= 0)
			return fd;
		/* EAGAIN: a concurrent rename raced a ".." walk; the kernel asks
		 * for a retry rather than risk a wrong answer. */
		if (errno != EAGAIN || tries > 8)
			return -errno;
	}
}

/* Bad input with errno e kept: the message names the path and says why. */
static int WD_PRINTF(3, 4) refuse(struct wd_err *err, int e, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = WD_E_INVAL;
		err->sys_errno = e;
		err->step = 0;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -e;
}

/* A workspace over fd (taken): real is the host path it stands for. */
static int
files_new(int fd, const char *real, wd_workspace **out, struct wd_err *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = wd_err_sys(err, errno, "workspace '%s'", real);
		close(fd);
		return rc;
	}
	char link[64], buf[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n < 0) {
		int rc = wd_err_sys(err, errno, "workspace '%s': readlink %s", real, link);
		close(fd);
		return rc;
	}
	buf[n] = '\0';
	wd_workspace *ws = wd_xcalloc(1, sizeof(*ws));
	ws->fd = fd;
	ws->real = wd_xstrdup(real);
	ws->root_link = wd_xstrdup(buf);
	ws->uid = st.st_uid;
	ws->gid = st.st_gid;
	size_t nd = 0;
	while (ws_default_protect[nd])
		nd++;
	ws->protect = wd_xcalloc(nd + 1, sizeof(char *));
	for (size_t i = 0; i < nd; i++)
		ws->protect[ws->nprotect++] = wd_xstrdup(ws_default_protect[i]);
	*out = ws;
	return 0;
}

int
ws_files_view(int fd, const char *real, const char *const *protect, size_t nprotect,
	      wd_workspace **out, struct wd_err *err)
{
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (own < 0)
		return wd_err_sys(err, errno, "workspace '%s'", real);
	wd_workspace *ws = NULL;
	int rc = files_new(own, real, &ws, err);
	for (size_t i = 0; rc == 0 && i < nprotect; i++)
		rc = wd_workspace_protect(ws, protect[i], err);
	if (rc < 0) {
		wd_workspace_close(ws);
		return rc;
	}
	*out = ws;
	return 0;
}

int
ws_files_parts(const wd_workspace *ws, const char **real, const char *const **protect,
	       size_t *nprotect)
{
	*real = ws->real;
	*protect = (const char *const *)ws->protect;
	*nprotect = ws->nprotect;
	return ws->fd;
}

WD_API int
wd_workspace_protect(wd_workspace *ws, const char *path, struct wd_err *err)
{
	/* the form wd_spec_add_protected() and the policy's workspace.protect
	 * take: relative, no empty, "." or ".." component */
	wd_autofree char *rel = path ? ws_relpath(path) : NULL;
	if (!rel || strcmp(rel, path))
		return refuse(err, EINVAL,
			      "protected path '%s': give a path relative to the workspace, "
			      "without . or ..",
			      path ? path : "");
	for (size_t i = 0; i < ws->nprotect; i++)
		if (!strcmp(ws->protect[i], rel))
			return 0;
	ws->protect = wd_xrealloc(ws->protect, (ws->nprotect + 2) * sizeof(char *));
	ws->protect[ws->nprotect++] = wd_steal_ptr(&rel);
	ws->protect[ws->nprotect] = NULL;
	return 0;
}

WD_API int
wd_workspace_open(const char *dir, wd_workspace **out, struct wd_err *err)
{
	wd_autofree char *real = realpath(dir, NULL);
	if (!real) {
		int rc = wd_err_sys(err, errno, "workspace '%s'", dir);
		if (err)
			err->code = WD_E_INVAL;
		return rc;
	}
	wd_autoclose int fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int rc = wd_err_sys(err, errno, "workspace '%s'", dir);
		if (err)
			err->code = WD_E_INVAL;
		return rc;
	}
	return files_new(wd_steal_fd(&fd), real, out, err);
}

WD_API void
wd_workspace_close(wd_workspace *ws)
{
	if (!ws)
		return;
	close(ws->fd);
	free(ws->real);
	free(ws->root_link);
	for (size_t i = 0; i < ws->nprotect; i++)
		free(ws->protect[i]);
	free(ws->protect);
	free(ws);
}

struct wd_ignore {
	const wd_workspace *ws;
	int fd;
	struct ws_ignore *ig;
};

static const char *relative(const wd_workspace *ws, const char *path);

WD_API int
wd_workspace_ignore(const wd_workspace *ws, wd_ignore **out, struct wd_err *err)
{
	int fd = fcntl(ws->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return wd_err_sys(err, errno, "workspace '%s'", ws->real);
	wd_ignore *ig = wd_xcalloc(1, sizeof(*ig));
	ig->ws = ws;
	ig->fd = fd;
	ig->ig = ws_ignore_new(fd);
	*out = ig;
	return 0;
}

WD_API bool
wd_ignore_match(wd_ignore *ig, const char *relpath, bool isdir)
{
	/* the forms wd_workspace_openat() takes: relative, or below
	 * /workspace or the host path */
	const char *r = relative(ig->ws, relpath);
	wd_autofree char *rel = r ? ws_relpath(r) : NULL;
	return rel && ws_ignore_match(ig->ig, rel, isdir);
}

WD_API void
wd_ignore_free(wd_ignore *ig)
{
	if (!ig)
		return;
	ws_ignore_free(ig->ig);
	close(ig->fd);
	free(ig);
}

WD_API const char *
wd_workspace_path(const wd_workspace *ws)
{
	return ws->real;
}

/* The path relative to the workspace: "/workspace/x" (the jail's view)
 * and the host path are taken relative to it, as the policy does; any
 * other absolute path is outside.  Returns a pointer into path or NULL. */
static const char *
relative(const wd_workspace *ws, const char *path)
{
	if (path[0] != '/')
		return path;
	const char *prefixes[] = {WS_MOUNT, ws->real};
	for (size_t i = 0; i < WD_ARRAY_SIZE(prefixes); i++) {
		size_t n = strlen(prefixes[i]);
		if (!strncmp(path, prefixes[i], n) && (path[n] == '\0' || path[n] == '/')) {
			const char *rest = path + n;
			while (*rest == '/')
				rest++;
			return rest;
		}
	}
	return NULL;
}

static int
open_error(const wd_workspace *ws, const char *path, int rc, struct wd_err *err)
{
	int e = -rc;
	if (e == EXDEV)
		return refuse(err, e, "'%s' resolves outside the workspace %s", path, ws->real);
	if (e == ELOOP)
		return refuse(err, e, "'%s': a symlink loop or a magic link", path);
	if (e == ENOENT)
		return refuse(err, e, "'%s' does not exist", path);
	if (e == ENOTDIR)
		return refuse(err, e, "'%s': a component is not a directory", path);
	return wd_err_sys(err, e, "'%s'", path);
}

WD_API int
wd_workspace_openat(const wd_workspace *ws, const char *path, int flags, struct wd_err *err)
{
	/* Reading only: writes go through wd_workspace_write(), which never
	 * opens an existing name for writing (see the top of this file). */
	const int allowed = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_PATH | O_NONBLOCK | O_NOATIME;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & ~allowed))
		return refuse(err, EINVAL, "wd_workspace_openat opens for reading only");
	const char *rel = relative(ws, path);
	if (!rel)
		return open_error(ws, path, -EXDEV, err);
	int fd = beneath(ws->fd, rel, flags & ~O_NOATIME, 0);
	return fd < 0 ? open_error(ws, path, fd, err) : fd;
}

/* Where dirfd really is, relative to the workspace ("" for its root), in
 * rel.  -EXDEV if it is not below the workspace any more (moved). */
static int
where(const wd_workspace *ws, int dirfd, char *rel, size_t cap)
{
	char link[64], real[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(link, real, sizeof(real) - 1);
	if (n < 0)
		return -errno;
	real[n] = '\0';
	size_t wl = strlen(ws->root_link);
	if (!strcmp(ws->root_link, "/"))
		wl = 0;
	if (strncmp(real, ws->root_link, wl) || (real[wl] != '\0' && real[wl] != '/'))
		return -EXDEV;
	const char *r = real + wl;
	while (*r == '/')
		r++;
	if ((size_t)snprintf(rel, cap, "%s", r) >= cap)
		return -ENAMETOOLONG;
	return 0;
}

/* Is rel (relative to the workspace, no leading slash) a path of list or
 * below one?  The entry, or NULL. */
static const char *
under_any(const char *const *list, size_t n, const char *rel)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(list[i]);
		if (!strncmp(rel, list[i], l) && (rel[l] == '\0' || rel[l] == '/'))
			return list[i];
	}
	return NULL;
}

/* Has rel a component named exactly name? */
static bool
has_component(const char *rel, const char *name)
{
	size_t l = strlen(name);
	for (const char *c = rel; *c;) {
		size_t n = strcspn(c, "/");
		if (n == l && !memcmp(c, name, l))
			return true;
		c += n;
		c += strspn(c, "/");
	}
	return false;
}

static bool
has_git_component(const char *rel)
{
	return has_component(rel, ".git");
}

/* Editor and shell configuration is code at any depth too: a human who
 * opens frontend/ of a monorepo in an editor (a trusted parent's trust
 * carries over) runs frontend/.vscode/tasks.json's "runOn: folderOpen"
 * task, and direnv loads the nearest .envrc above the directory a shell
 * enters.  Protected only at the root before (an attack pass; docs/threat-model.md). */
static const char *const any_depth[] = {".envrc", ".vscode", ".idea"};

/* Is rel a strict ancestor of an entry of list?  The entry, or NULL. */
static const char *
above_any(const char *const *list, size_t n, const char *rel)
{
	size_t l = strlen(rel);
	for (size_t i = 0; i < n; i++)
		if (l == 0 || (!strncmp(list[i], rel, l) && list[i][l] == '/'))
			return list[i];
	return NULL;
}

/* Repository metadata is one protected unit, at any depth: git on the host
 * executes what a .git directory holds (core.fsmonitor, core.hooksPath,
 * diff.external, hooks) and follows a .git *file* ("gitdir: X") and
 * .git/commondir to wherever they point.  A sandbox that can write or
 * create any entry named .git (sub/.git too: `git status` recurses into
 * submodules, and a human may cd into a nested repository) chooses a
 * command the human's next `git status` runs (docs/threat-model.md).  And a change
 * that removes, replaces or turns into a file or symlink an *ancestor* of
 * a protected path changes what that path names: it is a change to it.
 * Only a directory staying a directory (a new one, a mode change) may sit
 * above a protected path. */
const char *
ws_path_protected(const char *const *list, size_t n, const char *rel, bool dir_stays,
		  bool *ancestor)
{
	if (ancestor)
		*ancestor = false;
	if (has_git_component(rel))
		return ".git";
	for (size_t i = 0; i < WD_ARRAY_SIZE(any_depth); i++)
		if (has_component(rel, any_depth[i]))
			return any_depth[i];
	const char *p = under_any(list, n, rel);
	if (p)
		return p;
	if (!dir_stays && (p = above_any(list, n, rel)) != NULL) {
		if (ancestor)
			*ancestor = true;
		return p;
	}
	return NULL;
}

/* The entries git reads in a git directory (setup.c, repository.c). */
static const char *const git_dir_names[] = {
    "HEAD", "config",	   "config.worktree", "commondir", "gitdir",	"objects",
    "refs", "packed-refs", "hooks",	      "info",	   "worktrees", "modules",
    "logs", "index",	   "shallow",	      "branches",  NULL,
};

/* Does name exist below one of fds (or is it what the change makes)? */
static bool
gd_has(const int *fds, size_t nfds, const char *dir, const char *name, const char *made)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", name) >=
	    sizeof(path))
		return true; /* cannot tell: as if it were there (refuse) */
	if (made && !strcmp(made, name))
		return true;
	struct stat st;
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] >= 0 && fstatat(fds[i], path, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return true;
	return false;
}

/* Git's own test for a git directory (is_git_directory(): HEAD, and
 * objects/ and refs/ or a commondir), asked of dir in any of the views
 * fds, with made (the first component the change adds below dir)
 * counted as there. */
static bool
gd_is_gitdir(const int *fds, size_t nfds, const char *dir, const char *made)
{
	return gd_has(fds, nfds, dir, "HEAD", made) &&
	       ((gd_has(fds, nfds, dir, "objects", made) && gd_has(fds, nfds, dir, "refs", made)) ||
		gd_has(fds, nfds, dir, "commondir", made));
}

int
ws_path_in_gitdir(const int *fds, size_t nfds, const char *rel, char *out, size_t cap)
{
	char dir[PATH_MAX];
	size_t n = strlen(rel);
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	/* each directory on the way, the root first: dir is rel's first i
	 * bytes, first the component right below it */
	for (size_t i = 0; i <= n;) {
		memcpy(dir, rel, i);
		dir[i > 0 ? i - 1 : 0] = '\0';
		const char *first = rel + i;
		size_t fl = strcspn(first, "/");
		char name[NAME_MAX + 1];
		if (fl == 0 || fl > NAME_MAX)
			break;
		memcpy(name, first, fl);
		name[fl] = '\0';
		for (size_t k = 0; git_dir_names[k]; k++) {
			if (strcmp(name, git_dir_names[k]))
				continue;
			if (gd_is_gitdir(fds, nfds, dir, name)) {
				snprintf(out, cap, "%s", *dir ? dir : ".");
				return 1;
			}
			break;
		}
		i += fl;
		if (rel[i] == '\0')
			break;
		i++;
	}
	return 0;
}

static int
implied_pin(void *ctx, int fd, const char *rel)
{
	(void)ctx;
	(void)fd;
	(void)rel;
	return 0; /* an ancestor: ws_path_protected's above_any asks of the entry */
}

static int
implied_add(void *ctx, int fd, const char *entry, bool dir)
{
	(void)fd;
	(void)dir;
	struct ws_implied *im = ctx;
	im->e = wd_xrealloc(im->e, (im->n + 1) * sizeof(*im->e));
	im->e[im->n++] = wd_xstrdup(entry);
	return 0;
}

/* An absent target: a change that creates it (or a directory above it
 * that is not one) is a change to what git follows. */
static int
implied_absent(void *ctx, const char *entry)
{
	return implied_add(ctx, -1, entry, false);
}

void
ws_implied_collect(int wsfd, const char *real, const char *const *list, size_t n,
		   struct ws_implied *im)
{
	*im = (struct ws_implied){0};
	const struct jail_protect_ops ops = {implied_pin, implied_add, im, implied_absent};
	for (size_t i = 0; i < n && im->rc == 0; i++) {
		int rc = jail_protect_walk(wsfd, list[i], real, &ops);
		if (rc < 0)
			im->rc = rc;
	}
}

int
ws_implied_match(const struct ws_implied *im, const char *rel, bool dir_stays, bool *ancestor,
		 char *out, size_t cap)
{
	if (ancestor)
		*ancestor = false;
	size_t rl = strlen(rel);
	/* in the walk's order: the first entry that matches, as the walk
	 * stopped at it */
	for (size_t i = 0; i < im->n; i++) {
		const char *entry = im->e[i];
		size_t l = strlen(entry);
		bool under = !strncmp(rel, entry, l) && (rel[l] == '\0' || rel[l] == '/');
		bool above =
		    !dir_stays && (rl == 0 || (!strncmp(entry, rel, rl) && entry[rl] == '/'));
		if (!under && !above)
			continue;
		if (ancestor)
			*ancestor = above && !under;
		snprintf(out, cap, "%s", entry);
		return 1;
	}
	return im->rc; /* a walk that failed: what it did not reach may be protected */
}

void
ws_implied_fini(struct ws_implied *im)
{
	for (size_t i = 0; i < im->n; i++)
		free(im->e[i]);
	free(im->e);
	*im = (struct ws_implied){0};
}

int
ws_path_implied(int wsfd, const char *real, const char *const *list, size_t n, const char *rel,
		bool dir_stays, bool *ancestor, char *out, size_t cap)
{
	struct ws_implied im;
	ws_implied_collect(wsfd, real, list, n, &im);
	int rc = ws_implied_match(&im, rel, dir_stays, ancestor, out, cap);
	ws_implied_fini(&im);
	return rc;
}

/* What the file tools ask of a path: ws_path_protected(), then what the
 * protected paths imply on the host as it is now (ws_path_implied(): a
 * gitfile's or commondir's target, "repo.git" beside its worktrees), into
 * buf; a walk that fails refuses (fail closed: the jail would not start
 * on that workspace either). */
static const char *
protected_prefix(const wd_workspace *ws, const char *rel, bool dir_stays, bool *ancestor, char *buf,
		 size_t cap)
{
	const char *p = ws_path_protected((const char *const *)ws->protect, ws->nprotect, rel,
					  dir_stays, ancestor);
	if (p)
		return p;
	char gd[PATH_MAX];
	if (ws_path_in_gitdir(&ws->fd, 1, rel, gd, sizeof(gd)) > 0) {
		if (ancestor)
			*ancestor = false;
		snprintf(buf, cap, "%.*s (a git directory: HEAD, objects/, refs/)", PATH_MAX / 2,
			 gd);
		return buf;
	}
	bool above = false;
	int rc = ws_path_implied(ws->fd, ws->real, (const char *const *)ws->protect, ws->nprotect,
				 rel, dir_stays, &above, buf, cap);
	if (rc == 0)
		return NULL;
	if (rc < 0)
		snprintf(buf, cap, "repository metadata warden could not resolve (%s)",
			 strerror(-rc));
	if (ancestor)
		*ancestor = rc > 0 && above;
	return buf;
}

WD_API bool
wd_workspace_protected(const char *relpath)
{
	while (*relpath == '/' || (relpath[0] == '.' && relpath[1] == '/'))
		relpath++;
	size_t nd = 0;
	while (ws_default_protect[nd])
		nd++;
	return ws_path_protected(ws_default_protect, nd, relpath, true, NULL) != NULL;
}

/* Split rel into its directory part (a new string, "" for the root) and
 * its last component (pointer into rel).  -EISDIR for "", "." or "..". */
static int
split(const char *rel, char **dir, const char **base)
{
	size_t n = strlen(rel);
	while (n > 0 && rel[n - 1] == '/')
		n--;
	if (n == 0)
		return -EISDIR;
	const char *slash = memrchr(rel, '/', n);
	const char *b = slash ? slash + 1 : rel;
	size_t bl = (size_t)(rel + n - b);
	if ((bl == 1 && b[0] == '.') || (bl == 2 && b[0] == '.' && b[1] == '.'))
		return -EISDIR;
	if (bl > NAME_MAX)
		return -ENAMETOOLONG;
	*dir = slash ? strndup(rel, (size_t)(slash - rel)) : wd_xstrdup("");
	if (!*dir)
		abort();
	*base = b;
	return (int)bl;
}

/* Open (creating with mkdirat when mkdirs) the directory dir beneath the
 * workspace, one component at a time so that nothing is created through
 * a symlink. */
static int
open_parent(const wd_workspace *ws, const char *dir, bool mkdirs, bool as_root)
{
	int fd = beneath(ws->fd, dir, O_PATH | O_DIRECTORY, 0);
	if (fd >= 0 || fd != -ENOENT || !mkdirs)
		return fd;
	fd = beneath(ws->fd, "", O_PATH | O_DIRECTORY, 0);
	const char *p = dir;
	while (fd >= 0 && *p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		char name[NAME_MAX + 1];
		if (n > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		int next = beneath(fd, name, O_PATH | O_DIRECTORY, 0);
		if (next == -ENOENT) {
			char rel[PATH_MAX];
			int rc = where(ws, fd, rel, sizeof(rel));
			if (rc == 0) {
				size_t l = strlen(rel);
				snprintf(rel + l, sizeof(rel) - l, "%s%s", l ? "/" : "", name);
				/* a new directory may sit above a protected
				 * path, never be one (".git") */
				char imp[PATH_MAX];
				if (protected_prefix(ws, rel, true, NULL, imp, sizeof(imp)))
					rc = -EACCES;
			}
			if (rc == 0 && mkdirat(fd, name, 0755) < 0 && errno != EEXIST)
				rc = -errno;
			/* as root, the new directory belongs to the workspace's
			 * owner, as one the sandbox made would (idmapped) */
			if (rc == 0 && as_root)
				(void)!fchownat(fd, name, ws->uid, ws->gid, AT_SYMLINK_NOFOLLOW);
			next = rc < 0 ? rc : beneath(fd, name, O_PATH | O_DIRECTORY, 0);
		}
		close(fd);
		fd = next;
	}
	return fd;
}

static bool
has_dotdot(const char *rel)
{
	for (const char *c = rel; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return true;
		c += n;
		c += strspn(c, "/");
	}
	return false;
}

static int
refuse_protected(struct wd_err *err, const char *path, const char *prot, bool above)
{
	if (above)
		return refuse(err, EACCES,
			      "'%s' is protected: it is above %s, which is read-only here "
			      "(a file there would replace what %s names)",
			      path, prot, prot);
	if (!strcmp(prot, ".git"))
		return refuse(err, EACCES,
			      "'%s' is protected: repository metadata (.git, at any depth) is "
			      "read-only here (git on the host runs what it holds)",
			      path);
	return refuse(err, EACCES,
		      "'%s' is protected: %s is read-only here (tools on the host run "
		      "what it holds)",
		      path, prot);
}

/* The checks before a write to base in parent: not protected, not a
 * directory, not a link to follow.  *mode gets the mode to keep. */
static int
check_target(const wd_workspace *ws, int parent, const char *path, const char *base, unsigned flags,
	     mode_t *mode, struct wd_err *err)
{
	char rel[PATH_MAX];
	int rc = where(ws, parent, rel, sizeof(rel));
	if (rc < 0)
		return open_error(ws, path, rc, err);
	size_t l = strlen(rel);
	snprintf(rel + l, sizeof(rel) - l, "%s%s", l ? "/" : "", base);
	bool above = false;
	char imp[PATH_MAX];
	const char *prot = protected_prefix(ws, rel, false, &above, imp, sizeof(imp));
	if (prot)
		return refuse_protected(err, path, prot, above);
	struct stat st;
	if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (flags & WD_WRITE_NEW)
			return refuse(err, EEXIST, "'%s' exists", path);
		if (S_ISDIR(st.st_mode))
			return refuse(err, EISDIR, "'%s' is a directory", path);
		if (S_ISLNK(st.st_mode))
			return refuse(err, ELOOP, "'%s' is a symlink: write to the file it names",
				      path);
		if (!S_ISREG(st.st_mode))
			return refuse(err, EINVAL, "'%s' is not a regular file", path);
		*mode = st.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID);
	} else if (errno != ENOENT) {
		return wd_err_sys(err, errno, "'%s'", path);
	} else if (flags & WD_WRITE_EXISTING) {
		return refuse(err, ENOENT, "'%s' does not exist", path);
	}
	return 0;
}

static int
write_tmp(const wd_workspace *ws, int parent, const char *tmp, const void *data, size_t len,
	  mode_t mode, struct wd_err *err)
{
	wd_autoclose int fd = beneath(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0)
		return wd_err_sys(err, -fd, "create a temporary file");
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return wd_err_sys(err, errno, "write");
		p += w;
		left -= (size_t)w;
	}
	if (geteuid() == 0)
		(void)!fchown(fd, ws->uid, ws->gid);
	if (fchmod(fd, mode) < 0)
		return wd_err_sys(err, errno, "fchmod");
	return 0;
}

static int write_mode(const wd_workspace *ws, const char *path, const void *data, size_t len,
		      unsigned flags, int want_mode, struct wd_err *err);

WD_API int
wd_workspace_write(const wd_workspace *ws, const char *path, const void *data, size_t len,
		   unsigned flags, struct wd_err *err)
{
	return write_mode(ws, path, data, len, flags, -1, err);
}

int
ws_files_write_mode(const wd_workspace *ws, const char *path, const void *data, size_t len,
		    unsigned flags, mode_t mode, struct wd_err *err)
{
	/* permission bits only: no set-id bit comes in from a copy */
	return write_mode(ws, path, data, len, flags, (int)(mode & 0777), err);
}

int
ws_files_mkdir(const wd_workspace *ws, const char *path, struct wd_err *err)
{
	const char *rel = relative(ws, path);
	if (!rel)
		return open_error(ws, path, -EXDEV, err);
	if (has_dotdot(rel))
		return refuse(err, EINVAL,
			      "'%s': a path with a '..' component is refused; name the directory "
			      "without '..'",
			      path);
	/* a directory may sit above a protected path, never be one or be
	 * below one (".git/hooks/x/") */
	wd_autofree char *norm = ws_relpath(rel);
	bool above = false;
	char imp[PATH_MAX];
	const char *prot =
	    norm && norm[0] ? protected_prefix(ws, norm, true, &above, imp, sizeof(imp)) : NULL;
	if (prot)
		return refuse_protected(err, path, prot, above);
	int fd = open_parent(ws, rel, true, geteuid() == 0);
	if (fd == -EACCES)
		return refuse(err, EACCES, "'%s' is protected (read-only to the tools)", path);
	if (fd < 0)
		return open_error(ws, path, fd, err);
	close(fd);
	return 0;
}

static int
write_mode(const wd_workspace *ws, const char *path, const void *data, size_t len, unsigned flags,
	   int want_mode, struct wd_err *err)
{
	const char *rel = relative(ws, path);
	if (!rel)
		return open_error(ws, path, -EXDEV, err);
	/* ".." is refused before anything is made: "new/../x" would create
	 * new/ (WD_WRITE_MKDIRS) and then fail or land elsewhere than the
	 * name says; a path to write names its file directly (docs/threat-model.md). */
	if (has_dotdot(rel))
		return refuse(err, EINVAL,
			      "'%s': a path with a '..' component is refused; name the file "
			      "without '..'",
			      path);
	wd_autofree char *dir = NULL;
	const char *base = NULL;
	int rc = split(rel, &dir, &base);
	if (rc == -EISDIR)
		return refuse(err, EISDIR, "'%s' names a directory, not a file", path);
	if (rc < 0)
		return wd_err_sys(err, -rc, "'%s'", path);
	char name[NAME_MAX + 1];
	snprintf(name, sizeof(name), "%.*s", rc, base);
	/* A protected path as given is refused before anything is made for
	 * it: WD_WRITE_MKDIRS would otherwise leave ".git" behind for a
	 * refused ".git/hooks/x" (in a cow view, an added directory that
	 * apply would write).  Where the parent really is is checked below,
	 * for links and "..". */
	wd_autofree char *norm = ws_relpath(rel);
	bool above = false;
	char imp[PATH_MAX];
	const char *prot =
	    norm ? protected_prefix(ws, norm, false, &above, imp, sizeof(imp)) : NULL;
	if (prot)
		return refuse_protected(err, path, prot, above);

	wd_autoclose int parent = open_parent(ws, dir, flags & WD_WRITE_MKDIRS, geteuid() == 0);
	if (parent == -EACCES)
		return refuse(err, EACCES, "'%s' is protected (read-only to the tools)", path);
	if (parent < 0)
		return open_error(ws, path, parent, err);
	mode_t mode = 0644;
	if ((rc = check_target(ws, parent, path, name, flags, &mode, err)) < 0)
		return rc;
	if (want_mode >= 0)
		mode = (mode_t)want_mode;

	unsigned char rnd[6];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return wd_err_sys(err, errno, "getrandom");
	char tmp[NAME_MAX + 1];
	snprintf(tmp, sizeof(tmp), ".%.200s.warden-%02x%02x%02x%02x%02x%02x", name, rnd[0], rnd[1],
		 rnd[2], rnd[3], rnd[4], rnd[5]);
	if ((rc = write_tmp(ws, parent, tmp, data, len, mode, err)) < 0) {
		unlinkat(parent, tmp, 0);
		return rc;
	}
	/* RENAME_NOREPLACE for a new file: a file that appeared meanwhile is
	 * reported, not replaced. */
	unsigned rflags = (flags & WD_WRITE_NEW) ? RENAME_NOREPLACE : 0;
	if (renameat2(parent, tmp, parent, name, rflags) < 0) {
		int e = errno;
		unlinkat(parent, tmp, 0);
		return wd_err_sys(err, e, "'%s'", path);
	}
	return 0;
}
