/* resolve.c - which file a program given by a path is, in the jail's view.
 *
 * A policy allows programs by name.  A bare name is looked up along the
 * jail's PATH (/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:
 * /sbin), which holds only the host's read-only system directories, so the
 * name is the program.  A word with a slash names a file, and its spelling
 * says little: `./cat`, `/workspace/./cat`, `sub/../cat` and a symlink
 * named `cat` are all whatever file they resolve to, and the workspace is
 * written by the model (each of them ran a workspace file
 * under the rule for /usr/bin/cat).  So the file is resolved here, as the
 * jail will resolve it:
 *
 *   /                      a tmpfs of the jail's own
 *   /usr /bin /sbin /lib*  the host's, read-only (on a usrmerge host /bin
 *                          is the link usr/bin, copied as a link)
 *   MOUNT (/workspace)     the workspace, written by the model
 *   anything else          /etc (curated), /tmp, /proc, /dev: not programs
 *
 * walking component by component, following each symlink from where it
 * lies (an absolute target restarts at the jail's root, not the host's),
 * at most 40 links as the kernel does.  Workspace components are opened
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) on the workspace fd,
 * one at a time, so a link is seen and followed here, never by the kernel
 * on the host's side.  The outcome:
 *
 *   a file of the workspace   judged by workspace.programs[its path]; never
 *                             by the rule of a system program that shares
 *                             its basename
 *   a file in a PATH dir      judged by its name there, as a bare name is;
 *                             the name is that of the first link in a PATH
 *                             directory on the way (/usr/bin/python3 ->
 *                             python3.11 is python3, as `python3` is), so a
 *                             workspace link named cat -> /usr/bin/sh is sh
 *   anything else             refused: not a system program (a missing
 *                             directory, a directory, /tmp, /proc/self/exe)
 *
 * The host path of the workspace counts as the workspace too: at the
 * process isolation level the command sees the host's tree.  Time of check
 * and time of use: the decision is made before the jail starts, and the
 * workspace could change in between only by another writer on the host;
 * what a run executes is always either a system file or a workspace file
 * the policy names, since the jail holds nothing else that is executable.
 */
#include "policy/policy.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define MAX_LINKS 40 /* the kernel's MAXSYMLINKS */

enum area { AREA_WORKSPACE, AREA_SYSTEM, AREA_ANCESTOR, AREA_OTHER };
enum node { NODE_DIR, NODE_FILE, NODE_LINK, NODE_MISSING, NODE_ERROR };

/* If path is prefix or below it, the rest without the slash ("" for the
 * prefix itself); else NULL. */
static const char *
below(const char *path, const char *prefix)
{
	if (!prefix || prefix[0] != '/' || !prefix[1])
		return NULL;
	size_t n = strlen(prefix);
	if (strncmp(path, prefix, n) || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path[n] ? path + n + 1 : path + n;
}

/* path is a proper ancestor of p ("/a" of "/a/b") */
static bool
ancestor(const char *path, const char *p)
{
	size_t n = strlen(path);
	return p && p[0] == '/' && !strncmp(p, path, n) && p[n] == '/';
}

static enum area
area_of(const char *path, const char *mount, const char *ws_host, bool image, const char **rel)
{
	static const char *const system[] = {"/usr",   "/bin",	 "/sbin",  "/lib",
					     "/lib32", "/lib64", "/libx32"};
	if ((*rel = below(path, mount)) || (*rel = below(path, ws_host)))
		return AREA_WORKSPACE;
	for (size_t i = 0; i < WD_ARRAY_SIZE(system); i++)
		if (below(path, system[i]))
			return AREA_SYSTEM;
	/* An image's /etc/alternatives is the image's, bound read-only in the
	 * jail like its /usr (jail/plan.c), and the links of a Debian image's
	 * programs go through it (/usr/bin/lua -> /etc/alternatives/...). */
	if (image && below(path, "/etc/alternatives"))
		return AREA_SYSTEM;
	if (ancestor(path, mount) || ancestor(path, ws_host) ||
	    (image && ancestor(path, "/etc/alternatives")))
		return AREA_ANCESTOR;
	return AREA_OTHER;
}

static bool
in_path_dir(const char *dir)
{
	static const char *const path[] = {"/usr/local/bin",  "/usr/bin",  "/bin",
					   "/usr/local/sbin", "/usr/sbin", "/sbin"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(path); i++)
		if (!strcmp(dir, path[i]))
			return true;
	return false;
}

static enum node
node_of_mode(mode_t m)
{
	return S_ISDIR(m) ? NODE_DIR : S_ISLNK(m) ? NODE_LINK : NODE_FILE;
}

/* One workspace component, rel already canonical up to its last part. */
static enum node
stat_workspace(int wfd, const char *rel, bool last, char *target, size_t cap)
{
	if (wfd < 0)
		return last ? NODE_FILE : NODE_DIR; /* no workspace to look at: lexical */
	struct open_how how = {
	    .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	int fd = (int)syscall(SYS_openat2, wfd, *rel ? rel : ".", &how, sizeof(how));
	if (fd < 0)
		return errno == ENOENT ? NODE_MISSING : NODE_ERROR;
	struct stat st;
	enum node n = NODE_ERROR;
	if (fstat(fd, &st) == 0) {
		n = node_of_mode(st.st_mode);
		if (n == NODE_LINK) {
			ssize_t k = readlinkat(fd, "", target, cap - 1);
			if (k <= 0)
				n = NODE_ERROR;
			else
				target[k] = '\0';
		}
	}
	close(fd);
	return n;
}

/* A system path as the jail sees it: in the image's rootfs when there is
 * one, never the host's file of the same name: the host's
 * /usr/bin/cat says nothing of what the image's is (a link to the
 * workspace, in an image that holds one). */
static enum node
stat_system(const char *root, const char *jpath, char *target, size_t cap)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s%s", root ? root : "", jpath) >= (int)sizeof(path))
		return NODE_ERROR;
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? NODE_MISSING : NODE_ERROR;
	enum node n = node_of_mode(st.st_mode);
	if (n == NODE_LINK) {
		ssize_t k = readlink(path, target, cap - 1);
		if (k <= 0)
			return NODE_ERROR;
		target[k] = '\0';
	}
	return n;
}

static int
other(struct policy_prog *out, const char *where, const char *why)
{
	out->kind = POLICY_PROG_OTHER;
	snprintf(out->where, sizeof(out->where), "%s", where);
	out->why = why;
	return 0;
}

struct walk {
	char cur[PATH_MAX];	 /* the directory reached: canonical, in the jail's view */
	char todo[2 * PATH_MAX]; /* what is left to walk */
	char name[NAME_MAX + 1]; /* the name given by a link in a PATH directory */
	int links;
};

/* Take the next component of w->todo into c: 1, or 0 when none is left,
 * or -1 when it is longer than a name can be (the kernel would refuse it
 * with ENAMETOOLONG; cutting it could match another file).  *last:
 * nothing but slashes follows it. */
static int
next_component(struct walk *w, char *c, size_t cap, bool *last)
{
	char *p = w->todo;
	while (*p == '/')
		p++;
	if (!*p)
		return 0;
	size_t n = strcspn(p, "/");
	if (n >= cap)
		return -1;
	memcpy(c, p, n);
	c[n] = '\0';
	p += n;
	size_t s = strspn(p, "/");
	*last = p[s] == '\0';
	memmove(w->todo, p, strlen(p) + 1);
	return 1;
}

static void
parent(char *cur)
{
	char *s = strrchr(cur, '/');
	if (s == cur)
		cur[1] = '\0';
	else if (s)
		*s = '\0';
}

/* The file is reached: classify it. */
static int
reached(struct walk *w, enum area a, const char *rel, const char *cand, const char *c,
	struct policy_prog *out)
{
	snprintf(out->where, sizeof(out->where), "%s", cand);
	if (a == AREA_WORKSPACE) {
		out->kind = POLICY_PROG_WORKSPACE;
		snprintf(out->rel, sizeof(out->rel), "%s", rel);
	} else if (w->name[0] || in_path_dir(w->cur)) {
		out->kind = POLICY_PROG_SYSTEM;
		snprintf(out->name, sizeof(out->name), "%s", w->name[0] ? w->name : c);
	} else {
		return other(out, cand, "is not in a directory of the jail's PATH");
	}
	return 0;
}

static int
resolve(const struct policy_request *req, const char *mount, const char *prog,
	struct policy_prog *out)
{
	struct walk w = {.cur = "/"};
	char c[NAME_MAX + 1], cand[PATH_MAX], target[PATH_MAX];
	const char *ws = req->workspace && req->workspace[0] == '/' ? req->workspace : NULL;
	/* A relative program starts in the jail's working directory. */
	const char *cwd = req->cwd && *req->cwd ? req->cwd : ".";
	int n = prog[0] == '/' ? snprintf(w.todo, sizeof(w.todo), "%s", prog)
			       : snprintf(w.todo, sizeof(w.todo), "%s/%s/%s", mount, cwd, prog);
	if (n < 0 || (size_t)n >= sizeof(w.todo))
		return other(out, prog, "is too long");
	bool last = false;
	for (int more; (more = next_component(&w, c, sizeof(c), &last));) {
		if (more < 0)
			return other(out, prog, "has a component longer than a file name can be");
		if (!strcmp(c, ".") || !strcmp(c, "..")) {
			if (c[1])
				parent(w.cur);
			if (last)
				return other(out, w.cur, "is a directory");
			continue;
		}
		if (snprintf(cand, sizeof(cand), "%s%s%s", w.cur, w.cur[1] ? "/" : "", c) >=
		    (int)sizeof(cand))
			return other(out, prog, "is too long");
		const char *rel = NULL;
		enum area a = area_of(cand, mount, ws, req->system_root != NULL, &rel);
		enum node nd;
		if (a == AREA_OTHER)
			return other(out, cand,
				     "is neither in the workspace nor in a system directory");
		out->via_workspace |= a == AREA_WORKSPACE;
		if (a == AREA_ANCESTOR)
			nd = NODE_DIR;
		else if (a == AREA_WORKSPACE) {
			/* in the workspace the command sees (a cow overlay's
			 * links are not the host directory's); a view that
			 * cannot be had resolves nothing, and says why */
			int wfd;
			const char *why;
			if (policy_request_view(req, &wfd, &why) < 0) {
				out->no_view = true;
				return other(out, cand, why);
			}
			nd = stat_workspace(wfd, rel, last, target, sizeof(target));
		} else
			nd = stat_system(req->system_root, cand, target, sizeof(target));
		switch (nd) {
		case NODE_DIR:
			if (last)
				return other(out, cand, "is a directory");
			memcpy(w.cur, cand, strlen(cand) + 1);
			continue;
		case NODE_LINK:
			if (++w.links > MAX_LINKS)
				return other(out, cand, "goes through too many symbolic links");
			if (a == AREA_SYSTEM && last && !w.name[0] && in_path_dir(w.cur))
				memcpy(w.name, c, strlen(c) + 1);
			if (snprintf(cand, sizeof(cand), "%s/%s", target, w.todo) >=
			    (int)sizeof(cand))
				return other(out, prog, "is too long");
			memcpy(w.todo, cand, strlen(cand) + 1);
			if (target[0] == '/')
				strcpy(w.cur, "/");
			continue;
		case NODE_FILE:
		case NODE_MISSING:
			out->missing = nd == NODE_MISSING && !out->via_workspace;
			if (!last)
				return other(out, cand,
					     nd == NODE_FILE ? "is not a directory"
							     : "does not exist");
			return reached(&w, a, rel, cand, c, out);
		case NODE_ERROR:
			return other(out, cand, "cannot be resolved");
		}
	}
	return other(out, w.cur, "is a directory");
}

void
policy_program_resolve(const struct policy_request *req, const char *mount, const char *prog,
		       struct policy_prog *out)
{
	out->kind = POLICY_PROG_OTHER;
	out->name[0] = out->rel[0] = out->where[0] = '\0';
	out->why = NULL;
	out->missing = out->via_workspace = out->no_view = false;
	(void)resolve(req, mount, prog, out);
}
