/* path.c - workspace containment of path arguments.
 *
 * Every argument that names a file must stay inside the workspace after
 * resolution, symlinks and ".." included.  String prefixes cannot decide
 * that ("sub/../../x", a symlink "link-out -> /etc"), so the kernel does it:
 * openat2(workspace_fd, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
 * fails with EXDEV as soon as resolution would leave the directory tree
 * under workspace_fd, by "..", by an absolute symlink or by a symlink whose
 * target climbs out (kernel commit fddb5d430ad9, "open: introduce openat2(2)
 * syscall", and Documentation/filesystems/path-lookup).
 * RESOLVE_NO_MAGICLINKS refuses /proc/<pid>/fd/N and /proc/<pid>/root style
 * links, which jump anywhere without being symlinks in the ordinary sense.
 *
 * A path that does not exist yet (an output file) is judged by its deepest
 * existing ancestor, and the part that does not exist must not climb with
 * ".." above that ancestor: "new/../../x" is outside even though "new" is
 * not there yet, because the command could create it.
 *
 * Absolute arguments are read in the jail's view: below the mount point
 * ("/workspace/x") or below the host path of the workspace they are taken
 * relative to the workspace; anything else absolute ("/etc/passwd",
 * "/proc/self/root") is outside.
 *
 * Time of check and time of use: a symlink swapped in after this check is
 * not followed to the host, because the command runs in the jail, whose
 * root holds nothing of the host but read-only system directories and the
 * workspace at the mount point; a link to /etc/shadow resolves to the
 * jail's curated /etc.  Direct file tools (run by warden itself) use
 * policy_open_beneath(), the same openat2 call as the check, so the check
 * and the use are one operation.  See docs/policy.md, "Containment".
 */
#include "policy/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int
sys_openat2(int dirfd, const char *path, struct open_how *how)
{
	return (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

int
policy_open_beneath(int workspace_fd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	for (int tries = 0;; tries++) {
		int fd = sys_openat2(workspace_fd, *path ? path : ".", &how);
		if (fd >= 0)
			return fd;
		/* EAGAIN: a concurrent rename raced a ".." walk; the kernel asks us
		 * to retry rather than risk a wrong answer. */
		if (errno != EAGAIN || tries > 8)
			return -errno;
	}
}

/* Lexically apply rest ("a/../b") to base (absolute, no trailing slash). */
static void
apply_lexical(char *base, size_t cap, const char *rest)
{
	const char *p = rest;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 1 && p[0] == '.') {
			/* nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			char *s = strrchr(base, '/');
			if (s && s != base)
				*s = '\0';
			else
				strcpy(base, "/");
		} else {
			size_t bl = strlen(base);
			if (bl + n + 2 < cap) {
				if (bl > 1)
					base[bl++] = '/';
				memcpy(base + bl, p, n);
				base[bl + n] = '\0';
			}
		}
		p += n;
	}
}

/* Where abs resolves on the host, for the message only: realpath() of the
 * deepest existing prefix plus the rest applied lexically. */
static void
host_resolve(const char *abs, char *out, size_t cap)
{
	char tmp[PATH_MAX];
	char res[PATH_MAX];
	if (strlen(abs) >= sizeof(tmp)) {
		snprintf(out, cap, "%s", abs);
		return;
	}
	strcpy(tmp, abs);
	size_t n = strlen(tmp);
	for (;;) {
		if (realpath(n ? tmp : "/", res)) {
			apply_lexical(res, sizeof(res), abs + n);
			snprintf(out, cap, "%s", res);
			return;
		}
		char *s = strrchr(tmp, '/');
		if (!s) {
			snprintf(out, cap, "%s", abs);
			return;
		}
		*s = '\0';
		n = (size_t)(s - tmp);
	}
}

/* An argument given in the jail's view whose ".." climbs out of the mount
 * point: where it leads in that view ("/workspace/../etc/passwd" is the
 * jail's /etc/passwd), replacing the host's resolution in where.  A climb
 * through a link keeps the host's answer (the link's target). */
static void
jail_view(const char *mount, const char *rel, char *where, size_t cap)
{
	char v[PATH_MAX];
	size_t m = strlen(mount);
	while (m > 1 && mount[m - 1] == '/')
		m--;
	if (m >= sizeof(v))
		return;
	memcpy(v, mount, m);
	v[m] = '\0';
	apply_lexical(v, sizeof(v), rel);
	if (strncmp(v, mount, m) || (v[m] != '/' && v[m] != '\0'))
		snprintf(where, cap, "%s", v);
}

/* If arg is below prefix ("/workspace", "/workspace/x"), return the rest
 * without leading slashes ("" or "x"), else NULL. */
static const char *
below(const char *arg, const char *prefix)
{
	if (!prefix || !*prefix)
		return NULL;
	size_t n = strlen(prefix);
	while (n > 1 && prefix[n - 1] == '/')
		n--;
	if (strncmp(arg, prefix, n) || (arg[n] != '/' && arg[n] != '\0'))
		return NULL;
	arg += n;
	while (*arg == '/')
		arg++;
	return arg;
}

const char *
policy_path_below(const char *mount, const char *workspace, const char *arg)
{
	const char *r = below(arg, mount);
	return r ? r : below(arg, workspace);
}

/* Where rel (relative to the workspace ws) resolves in the view under
 * fd, for the message only: each component walked from the workspace,
 * each link read in the view (a cow overlay holds links the host
 * directory does not), never on the host; once the walk leaves the
 * workspace the rest is applied lexically, as for an absolute argument
 * (the jail's /etc or /dev/shm need not be the host's). */
static void
view_resolve(int fd, const char *ws, const char *rel, char *out, size_t cap)
{
	char cur[PATH_MAX], todo[PATH_MAX], t[PATH_MAX], next[PATH_MAX * 2];
	if (snprintf(cur, sizeof(cur), "%s", ws) >= (int)sizeof(cur) ||
	    snprintf(todo, sizeof(todo), "%s", rel) >= (int)sizeof(todo)) {
		snprintf(out, cap, "%s/%s", ws, rel);
		return;
	}
	int links = 0;
	const char *p = todo;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char comp[NAME_MAX + 1];
		if (n > NAME_MAX)
			break;
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		apply_lexical(cur, sizeof(cur), comp);
		const char *r = below(cur, ws);
		if (!r)
			break; /* outside: the rest is lexical */
		struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS};
		int lfd = sys_openat2(fd, *r ? r : ".", &how);
		ssize_t k = lfd >= 0 ? readlinkat(lfd, "", t, sizeof(t) - 1) : -1;
		if (lfd >= 0)
			close(lfd);
		if (k <= 0)
			continue; /* not a link (or not there): stays as walked */
		t[k] = '\0';
		if (++links > 40)
			break;
		/* the link's target, then what was left after it */
		snprintf(next, sizeof(next), "%s/%s", t, p);
		if (strlen(next) >= sizeof(todo))
			break;
		memcpy(todo, next, strlen(next) + 1);
		p = todo;
		if (t[0] == '/')
			strcpy(cur, "/");
		else
			apply_lexical(cur, sizeof(cur), "..");
	}
	apply_lexical(cur, sizeof(cur), p);
	snprintf(out, cap, "%s", cur);
}

static int
check(int workspace_fd, bool in_view, const char *workspace, const char *mount, const char *cwd,
      const char *arg, char *reason, size_t cap)
{
	char rel[PATH_MAX], probe[PATH_MAX], where[PATH_MAX];
	const char *ws = workspace ? workspace : ".";
	/* an argument in the jail's view ("/workspace/../etc/passwd"): where
	 * its ".." leads is said in that view, not the host's */
	const char *in_mount = arg[0] == '/' ? below(arg, mount) : NULL;
	if (!*arg)
		return 0;
	if (arg[0] == '/') {
		const char *r = in_mount;
		if (!r)
			r = below(arg, workspace);
		if (!r) {
			/* Said lexically, never through the host's links: the host's
			 * /proc/self is the checker (its pid, not the command's), and
			 * the jail's /etc or /usr need not be the host's */
			snprintf(where, sizeof(where), "/");
			apply_lexical(where, sizeof(where), arg);
			if (!strcmp(where, arg))
				snprintf(reason, cap, "path '%s' is outside the workspace %s", arg,
					 ws);
			else
				snprintf(reason, cap,
					 "path '%s' resolves to %s, outside the workspace %s", arg,
					 where, ws);
			return 1;
		}
		if (snprintf(rel, sizeof(rel), "%s", r) >= (int)sizeof(rel))
			goto too_long;
	} else if (cwd && *cwd && strcmp(cwd, ".")) {
		if (snprintf(rel, sizeof(rel), "%s/%s", cwd, arg) >= (int)sizeof(rel))
			goto too_long;
	} else {
		if (snprintf(rel, sizeof(rel), "%s", arg) >= (int)sizeof(rel))
			goto too_long;
	}

	memcpy(probe, rel, sizeof(probe));
	size_t plen = strlen(probe);
	for (;;) {
		int fd = policy_open_beneath(workspace_fd, probe, O_PATH, 0);
		if (fd >= 0) {
			close(fd);
			break;
		}
		if (fd == -ENOENT || fd == -ENOTDIR) {
			/* Judge a path that does not exist by its parent. */
			while (plen > 0 && probe[plen - 1] == '/')
				probe[--plen] = '\0';
			char *s = strrchr(probe, '/');
			if (!s) {
				probe[0] = '\0';
				plen = 0;
			} else {
				*s = '\0';
				plen = (size_t)(s - probe);
			}
			continue;
		}
		if (fd == -EXDEV) {
			char full[PATH_MAX * 2];
			if (in_view) {
				view_resolve(workspace_fd, ws, rel, where, sizeof(where));
			} else {
				snprintf(full, sizeof(full), "%s/%s", ws, rel);
				host_resolve(full, where, sizeof(where));
			}
			if (in_mount)
				jail_view(mount, rel, where, sizeof(where));
			snprintf(reason, cap, "path '%s' resolves to %s, outside the workspace %s",
				 arg, where, ws);
			return 1;
		}
		if (fd == -ELOOP) {
			snprintf(reason, cap,
				 "path '%s' goes through too many symbolic links or a /proc magic "
				 "link",
				 arg);
			return 2;
		}
		snprintf(reason, cap, "path '%s' cannot be checked: %s", arg, strerror(-fd));
		return 2;
	}

	/* The part that does not exist yet must not climb above what does. */
	int depth = 0;
	const char *p = rel + plen;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			depth--;
		else if (!(n == 1 && p[0] == '.'))
			depth++;
		if (depth < 0) {
			char full[PATH_MAX * 2];
			if (in_view) {
				view_resolve(workspace_fd, ws, rel, where, sizeof(where));
			} else {
				snprintf(full, sizeof(full), "%s/%s", ws, rel);
				host_resolve(full, where, sizeof(where));
			}
			if (in_mount)
				jail_view(mount, rel, where, sizeof(where));
			snprintf(reason, cap,
				 "path '%s' resolves to %s, outside the workspace %s (through '..' "
				 "after a component that does not exist)",
				 arg, where, ws);
			return 1;
		}
		p += n;
	}
	return 0;

too_long:
	snprintf(reason, cap, "path '%.64s...' is too long to check", arg);
	return 2;
}

int
policy_path_check(int workspace_fd, const char *workspace, const char *mount, const char *cwd,
		  const char *arg, char *reason, size_t cap)
{
	return check(workspace_fd, false, workspace, mount, cwd, arg, reason, cap);
}

int
policy_path_check_view(int view_fd, const char *workspace, const char *mount, const char *cwd,
		       const char *arg, char *reason, size_t cap)
{
	return check(view_fd, true, workspace, mount, cwd, arg, reason, cap);
}

int
policy_request_view(const struct policy_request *req, int *fd, const char **why)
{
	*fd = req->workspace_fd;
	*why = NULL;
	if (!req->view || req->workspace_fd < 0)
		return 0;
	struct policy_view *v = req->view_cache;
	/* a view hook with nowhere to keep what it gave: refused, never
	 * asked per path (descriptors would leak) nor skipped */
	if (!v) {
		*why = "the sandbox's view of the workspace has no place in this request";
		return -EINVAL;
	}
	if (!v->done) {
		v->why[0] = '\0';
		int r = req->view(req->view_arg, v->why, sizeof(v->why));
		v->done = true;
		v->fd = r >= 0 ? r : -1;
		v->err = r >= 0 ? 0 : r;
		if (r < 0 && !v->why[0])
			snprintf(v->why, sizeof(v->why), "the sandbox's view of the workspace: %s",
				 strerror(-r));
	}
	if (v->err) {
		*why = v->why;
		return v->err;
	}
	*fd = v->fd;
	return 0;
}
