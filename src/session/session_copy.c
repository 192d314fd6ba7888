/* session/session_copy: warden cp, files in and out of a running session.
 *
 * The session's side is its monitor's: every path goes through the
 * sandbox's workspace view, the checks of the file tools (monitor.c,
 * "warden cp"; src/files/files.c).  The host's side is here, in the
 * caller: no link is followed there either (a tree the sandbox could have
 * written, a direct workspace, must not steer what warden reads or writes
 * as the caller), only regular files and directories are copied, sizes
 * are bounded, and a host file is replaced by rename, never written
 * through.  Each copy walks its source first and refuses before anything
 * is written when an entry is a link or a special file or a bound is
 * passed, naming the entry.  Set-id bits are never copied. */
#include "session/session.h"
#include "audit/audit.h"
#include "util/json.h"
#include "workspace/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define CP_FILE_MAX (256ULL << 20) /* the monitor holds a file in memory */
#define CP_TOTAL_MAX (1ULL << 30)
#define CP_ENTRIES_MAX 100000
#define CP_DEPTH_MAX 64

struct entry {
	char *rel; /* below the source ("" for the source itself) */
	bool dir;
	uint64_t size;
	mode_t mode;
};

struct walk {
	struct entry *e;
	size_t n;
	uint64_t bytes;
	const char *what; /* the source as the user named it, for messages */
};

static void
walk_fini(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->e[i].rel);
	free(w->e);
}

static char *
join(const char *a, const char *b)
{
	size_t n = strlen(a);
	return n ? wd_xasprintf("%s%s%s", a, a[n - 1] == '/' ? "" : "/", b) : wd_xstrdup(b);
}

/* Add rel; refuse what is not a regular file or a directory, and the
 * bounds. */
static int
walk_add(struct walk *w, const char *rel, const char *type, uint64_t size, mode_t mode,
	 struct wd_err *err)
{
	if (strcmp(type, "file") && strcmp(type, "dir"))
		return wd_err_set(err, WD_E_INVAL,
				  "%s%s%s%s is %s: warden cp copies regular files and directories "
				  "only (nothing was copied)",
				  rel[0] ? "'" : "", rel, rel[0] ? "' in " : "", w->what,
				  !strcmp(type, "link") ? "a symbolic link" : "a special file");
	if (w->n >= CP_ENTRIES_MAX)
		return wd_err_set(err, WD_E_INVAL,
				  "%s holds more than %d entries (nothing was copied)", w->what,
				  CP_ENTRIES_MAX);
	bool dir = !strcmp(type, "dir");
	if (!dir && size > CP_FILE_MAX)
		return wd_err_set(err, WD_E_INVAL,
				  "%s%s%s%s is larger than 256 MiB (nothing was copied)",
				  rel[0] ? "'" : "", rel, rel[0] ? "' in " : "", w->what);
	if (!dir && (w->bytes += size) > CP_TOTAL_MAX)
		return wd_err_set(err, WD_E_INVAL, "%s is larger than 1 GiB (nothing was copied)",
				  w->what);
	w->e = wd_xrealloc(w->e, (w->n + 1) * sizeof(*w->e));
	w->e[w->n++] = (struct entry){wd_xstrdup(rel), dir, size, mode & 0777};
	return 0;
}

/* ---- the host's side ---- */

/* The tree at rel beneath root (an O_PATH of the source's parent), no
 * link followed (lstat, then openat2 RESOLVE_NO_SYMLINKS). */
static int
host_walk(struct walk *w, int root, const char *name, const char *rel, int depth,
	  struct wd_err *err)
{
	char *path = rel[0] ? join(name, rel) : wd_xstrdup(name);
	struct stat st;
	int rc = 0;
	if (fstatat(root, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = wd_err_sys(err, errno, "'%s' in %s", rel[0] ? rel : ".", w->what);
		goto out;
	}
	const char *type = S_ISREG(st.st_mode)	 ? "file"
			   : S_ISDIR(st.st_mode) ? "dir"
			   : S_ISLNK(st.st_mode) ? "link"
						 : "other";
	if ((rc = walk_add(w, rel, type, (uint64_t)st.st_size, st.st_mode, err)) < 0 ||
	    !S_ISDIR(st.st_mode))
		goto out;
	if (depth >= CP_DEPTH_MAX) {
		rc = wd_err_set(err, WD_E_INVAL, "%s is deeper than %d directories", w->what,
				CP_DEPTH_MAX);
		goto out;
	}
	int fd = ws_open_beneath(root, path, O_RDONLY | O_DIRECTORY);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		rc = wd_err_sys(err, fd < 0 ? -fd : errno, "'%s' in %s", rel[0] ? rel : ".",
				w->what);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *sub = join(rel, de->d_name);
		rc = host_walk(w, root, name, sub, depth + 1, err);
		free(sub);
	}
	closedir(d);
out:
	free(path);
	return rc;
}

/* Replace name in dir with size bytes of from, mode's permission bits:
 * a temporary file, then rename (a link at name is replaced, never
 * followed). */
static int
host_write(int dir, const char *name, int from, uint64_t size, mode_t mode, const char *shown,
	   struct wd_err *err)
{
	unsigned char r[6];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return wd_err_sys(err, errno, "getrandom");
	char tmp[NAME_MAX + 1];
	snprintf(tmp, sizeof(tmp), ".%.200s.warden-%02x%02x%02x%02x%02x%02x", name, r[0], r[1],
		 r[2], r[3], r[4], r[5]);
	int to = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (to < 0)
		return wd_err_sys(err, errno, "'%s': create", shown);
	char buf[65536];
	uint64_t done = 0;
	int rc = 0;
	/* at most the size it had when opened: a file the sandbox keeps
	 * growing does not fill the host's disk */
	while (rc == 0 && done < size) {
		size_t want = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
		ssize_t n = pread(from, buf, want, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t off = 0; rc == 0 && off < n;) {
			ssize_t w = write(to, buf + off, (size_t)(n - off));
			if (w < 0 && errno != EINTR)
				rc = wd_err_sys(err, errno, "'%s': write", shown);
			else if (w > 0)
				off += w;
		}
		done += (uint64_t)n;
	}
	if (rc == 0 && fchmod(to, mode & 0777) < 0)
		rc = wd_err_sys(err, errno, "'%s': chmod", shown);
	close(to);
	if (rc == 0 && renameat(dir, tmp, dir, name) < 0)
		rc = wd_err_sys(err, errno, "'%s'", shown);
	if (rc < 0)
		unlinkat(dir, tmp, 0);
	return rc;
}

/* ---- the session's side ---- */

static int
sess_get(int sbdir, const char *path, bool stat_only, json_t **resp, int *fd, struct wd_err *err)
{
	struct jw j;
	jw_init(&j, 0);
	jw_obj_begin(&j);
	jw_kstr(&j, "op", "get");
	jw_kstr(&j, "path", path);
	jw_kbool(&j, "stat", stat_only);
	jw_obj_end(&j);
	char *req = jw_steal(&j);
	int rfd = -1;
	int rc = session_call_fd(sbdir, req, NULL, 0, resp, &rfd, err);
	free(req);
	if (fd)
		*fd = rfd;
	else if (rfd >= 0)
		close(rfd);
	return rc;
}

static int
sess_walk(struct walk *w, int sbdir, const char *root, const char *rel, int depth,
	  struct wd_err *err)
{
	char *path = rel[0] ? join(root, rel) : wd_xstrdup(root);
	json_t *r = NULL;
	int rc = sess_get(sbdir, path, false, &r, NULL, err);
	free(path);
	if (rc < 0)
		return rc;
	const char *type = json_string_value(json_object_get(r, "type"));
	rc = walk_add(w, rel, type ? type : "other",
		      (uint64_t)json_integer_value(json_object_get(r, "size")),
		      (mode_t)json_integer_value(json_object_get(r, "mode")), err);
	if (rc == 0 && type && !strcmp(type, "dir") && depth >= CP_DEPTH_MAX)
		rc = wd_err_set(err, WD_E_INVAL, "%s is deeper than %d directories", w->what,
				CP_DEPTH_MAX);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(r, "entries"), i, e)
	{
		if (rc < 0)
			break;
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *et = json_string_value(json_object_get(e, "type"));
		if (!name || !et)
			continue;
		char *sub = join(rel, name);
		if (!strcmp(et, "dir"))
			rc = sess_walk(w, sbdir, root, sub, depth + 1, err);
		else
			rc = walk_add(w, sub, et,
				      (uint64_t)json_integer_value(json_object_get(e, "size")),
				      (mode_t)json_integer_value(json_object_get(e, "mode")), err);
		free(sub);
	}
	json_decref(r);
	return rc;
}

/* ---- both ---- */

/* The last component of path, without trailing slashes ("workspace" for
 * the root). */
static char *
base_name(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *b = path;
	for (size_t i = 0; i < n; i++)
		if (path[i] == '/')
			b = path + i + 1;
	size_t bl = (size_t)(path + n - b);
	if (bl == 0 || (bl == 1 && b[0] == '.') || (bl == 1 && b[0] == '/') ||
	    (bl == 2 && b[0] == '.' && b[1] == '.'))
		return wd_xstrdup("workspace");
	return strndup(b, bl);
}

/* A host path as its directory and last component (trailing slashes
 * dropped); -EINVAL for "", ".", ".." or "/" as the last component. */
static int
host_split(const char *host_path, char **parent, char **name, struct wd_err *err)
{
	size_t hl = strlen(host_path);
	while (hl > 1 && host_path[hl - 1] == '/')
		hl--;
	char *t = strndup(host_path, hl);
	char *slash = strrchr(t, '/');
	const char *b = slash ? slash + 1 : t;
	if (!b[0] || !strcmp(b, ".") || !strcmp(b, "..")) {
		free(t);
		return wd_err_set(err, WD_E_INVAL,
				  "'%s': name the file or directory itself (not '.', '..' or '/')",
				  host_path);
	}
	*name = wd_xstrdup(b);
	*parent = !slash       ? wd_xstrdup(".")
		  : slash == t ? wd_xstrdup("/")
			       : strndup(t, (size_t)(slash - t));
	free(t);
	return 0;
}

/* A copy in the audit trail (WD_EVENT_FILE): before anything is written,
 * failing the copy when it cannot be recorded; then its outcome. */
static int
audit(wd_ctx *ctx, const char *id, const char *name, const char *dir, const char *from,
      const char *to, const struct wd_copy_stats *st, const char *failure, struct wd_err *err)
{
	/* the paths by their bytes: a name that is not UTF-8 is recorded
	 * (as "\udcXX"), not dropped with the whole record's fields */
	json_t *f = json_pack("{s:s,s:o,s:o}", "direction", dir, "from", audit_json_bytes(from),
			      "to", audit_json_bytes(to));
	if (st) {
		json_object_set_new(f, "files", json_integer((json_int_t)st->files));
		json_object_set_new(f, "dirs", json_integer((json_int_t)st->dirs));
		json_object_set_new(f, "bytes", json_integer((json_int_t)st->bytes));
	}
	if (failure)
		json_object_set_new(f, "error", json_string(failure));
	struct wd_event ev = {.kind = WD_EVENT_FILE, .name = name, .sandbox_id = id, .fields = f};
	int rc = ctx_emit_checked(ctx, &ev, err);
	json_decref(f);
	return rc;
}

static void
audit_end(wd_ctx *ctx, const char *id, const char *dir, const char *from, const char *to, int rc,
	  const struct wd_copy_stats *st, const struct wd_err *err)
{
	struct wd_err e2 = {0};
	audit(ctx, id, rc < 0 ? "copy_failed" : "copied", dir, from, to, st,
	      rc < 0 ? err->msg : NULL, &e2);
}

/* The tree at host_path into path of the session w (located). */
static int
copy_in(wd_ctx *ctx, const struct where *w, struct walk *wk, const char *host_path,
	const char *path, struct wd_copy_stats *st, struct wd_err *err)
{
	json_t *r = NULL;
	int root = -1, rc = 0;
	char *name = NULL, *dest = NULL;
	const char *detail = NULL;
	/* the source: a name in its parent, opened by the user's path; from
	 * there on nothing is followed */
	{
		char *parent = NULL;
		rc = host_split(host_path, &parent, &name, err);
		if (rc == 0 && (root = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			rc = wd_err_sys(err, errno, "'%s'", host_path);
		free(parent);
	}
	if (rc == 0)
		rc = host_walk(wk, root, name, "", 0, err);
	/* the destination: into a directory that exists, else that name */
	if (rc == 0 && (rc = sess_get(w->sbdir, path, true, &r, NULL, err)) == 0) {
		const char *t = json_string_value(json_object_get(r, "type"));
		if (t && !strcmp(t, "dir"))
			dest = join(path, name);
		else if (t && wk->e[0].dir)
			rc = wd_err_set(err, WD_E_INVAL,
					"'%s' in the session is %s, not a directory: a directory "
					"is copied into a directory or a new name",
					path, !strcmp(t, "link") ? "a symbolic link" : "a file");
		else
			dest = wd_xstrdup(path);
	}
	if (rc == 0) {
		detail = dest;
		rc = audit(ctx, w->id, "copy", "in", host_path, dest, NULL, NULL, err);
	}
	for (size_t i = 0; rc == 0 && i < wk->n; i++) {
		const struct entry *e = &wk->e[i];
		char *to = e->rel[0] ? join(dest, e->rel) : wd_xstrdup(dest);
		struct jw j;
		jw_init(&j, 0);
		jw_obj_begin(&j);
		jw_kstr(&j, "op", e->dir ? "mkdir" : "put");
		jw_kstr(&j, "path", to);
		jw_kuint(&j, "mode", e->mode);
		jw_obj_end(&j);
		char *req = jw_steal(&j);
		int fd = -1;
		if (!e->dir) {
			char *from = e->rel[0] ? join(name, e->rel) : wd_xstrdup(name);
			fd = ws_open_beneath(root, from, O_RDONLY | O_NONBLOCK);
			free(from);
			struct stat fs;
			if (fd < 0 || fstat(fd, &fs) < 0 || !S_ISREG(fs.st_mode))
				rc = wd_err_set(err, WD_E_INVAL,
						"'%s' in %s changed while it was copied (now %s)",
						e->rel[0] ? e->rel : ".", host_path,
						fd == -ELOOP ? "a link" : "not a regular file");
		}
		json_t *pr = NULL;
		if (rc == 0)
			rc = session_call(w->sbdir, req, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &pr,
					  NULL, NULL, err);
		json_decref(pr);
		if (fd >= 0)
			close(fd);
		free(req);
		free(to);
		if (rc == 0) {
			st->dirs += e->dir;
			st->files += !e->dir;
			st->bytes += e->dir ? 0 : e->size;
		}
	}
	if (detail)
		audit_end(ctx, w->id, "in", host_path, dest, rc, st, err);
	if (root >= 0)
		close(root);
	json_decref(r);
	free(name);
	free(dest);
	return rc;
}

/* path of the session w (located) to host_path. */
static int
copy_out(wd_ctx *ctx, const struct where *w, struct walk *wk, const char *path,
	 const char *host_path, struct wd_copy_stats *st, struct wd_err *err)
{
	int dir = -1;
	char *name = NULL, *target = NULL;
	const char *detail = NULL;
	int rc = sess_walk(wk, w->sbdir, path, "", 0, err);
	/* the host's destination: into a directory that exists (not a link
	 * to one), else that name in its directory */
	struct stat hs;
	if (rc == 0 && lstat(host_path, &hs) == 0) {
		if (S_ISLNK(hs.st_mode)) {
			rc = wd_err_set(err, WD_E_INVAL,
					"'%s' is a symbolic link: warden cp follows no link on the "
					"host; name the directory itself",
					host_path);
		} else if (S_ISDIR(hs.st_mode)) {
			dir = open(host_path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			name = base_name(path);
			target = join(host_path, name);
		} else if (wk->e[0].dir) {
			rc = wd_err_set(err, WD_E_INVAL,
					"'%s' is a file: a directory is copied into a directory "
					"or a new name",
					host_path);
		}
	} else if (rc == 0 && errno != ENOENT) {
		rc = wd_err_sys(err, errno, "'%s'", host_path);
	}
	if (rc == 0 && dir < 0) {
		char *parent = NULL;
		rc = host_split(host_path, &parent, &name, err);
		if (rc == 0) {
			target = wd_xstrdup(host_path);
			dir = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
		}
		free(parent);
	}
	if (rc == 0 && dir < 0)
		rc = wd_err_sys(err, errno, "the directory of '%s'", host_path);
	if (rc == 0) {
		detail = target;
		rc = audit(ctx, w->id, "copy", "out", path, target, NULL, NULL, err);
	}
	for (size_t i = 0; rc == 0 && i < wk->n; i++) {
		const struct entry *e = &wk->e[i];
		char *rel = e->rel[0] ? join(name, e->rel) : wd_xstrdup(name);
		char *shown = e->rel[0] ? join(target, e->rel) : wd_xstrdup(target);
		/* the entry's directory on the host, component by component
		 * beneath the destination's, never through a link */
		char *slash = strrchr(rel, '/');
		char *pdir = slash ? strndup(rel, (size_t)(slash - rel)) : wd_xstrdup(".");
		const char *base = slash ? slash + 1 : rel;
		int pfd = ws_open_beneath(dir, pdir, O_PATH | O_DIRECTORY);
		if (pfd < 0) {
			rc = wd_err_set(err, WD_E_INVAL, "'%s': %s", shown,
					pfd == -ELOOP ? "a symbolic link on the way (not followed)"
						      : strerror(-pfd));
		} else if (e->dir) {
			if (mkdirat(pfd, base, (e->mode & 0777) | 0700) < 0 && errno != EEXIST)
				rc = wd_err_sys(err, errno, "'%s'", shown);
			int dfd = rc == 0 ? ws_open_beneath(pfd, base, O_PATH | O_DIRECTORY) : -1;
			if (rc == 0 && dfd < 0)
				rc = wd_err_set(err, WD_E_INVAL,
						"'%s' exists and is not a directory (a link is not "
						"followed)",
						shown);
			if (dfd >= 0)
				close(dfd);
			if (rc == 0)
				st->dirs++;
		} else {
			char *from = e->rel[0] ? join(path, e->rel) : wd_xstrdup(path);
			json_t *r = NULL;
			int fd = -1;
			rc = sess_get(w->sbdir, from, false, &r, &fd, err);
			const char *t =
			    rc == 0 ? json_string_value(json_object_get(r, "type")) : NULL;
			if (rc == 0 && (fd < 0 || !t || strcmp(t, "file")))
				rc = wd_err_set(err, WD_E_INVAL,
						"'%s' in the session changed while it was copied",
						from);
			uint64_t size = (uint64_t)json_integer_value(json_object_get(r, "size"));
			/* the sizes the walk summed may have grown since: the
			 * bounds hold for what is written */
			if (rc == 0 && st->bytes + size > CP_TOTAL_MAX)
				rc = wd_err_set(err, WD_E_INVAL,
						"'%s' grew: the copy would pass 1 GiB", from);
			if (rc == 0 && size > CP_FILE_MAX)
				rc = wd_err_set(err, WD_E_INVAL, "'%s' grew larger than 256 MiB",
						from);
			if (rc == 0)
				rc = host_write(pfd, base, fd, size, e->mode, shown, err);
			if (rc == 0) {
				st->files++;
				st->bytes += size;
			}
			if (fd >= 0)
				close(fd);
			json_decref(r);
			free(from);
		}
		if (pfd >= 0)
			close(pfd);
		free(pdir);
		free(rel);
		free(shown);
	}
	if (detail)
		audit_end(ctx, w->id, "out", path, target, rc, st, err);
	if (dir >= 0)
		close(dir);
	free(name);
	free(target);
	return rc;
}

/* Both directions: locate the session, copy from to to, the messages and
 * the counts. */
typedef int copy_fn(wd_ctx *ctx, const struct where *w, struct walk *wk, const char *from,
		    const char *to, struct wd_copy_stats *st, struct wd_err *err);

static int
copy_run(wd_ctx *ctx, const char *ref, copy_fn *fn, const char *from, const char *to, char *what,
	 struct wd_copy_stats *stats, struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	CTX_ENTER(ctx);
	struct wd_copy_stats st = {0};
	struct where w;
	struct walk wk = {.what = what};
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0)
		rc = fn(ctx, &w, &wk, from, to, &st, err);
	session_where_fini(&w);
	if (rc == -ESRCH)
		wd_err_set(err, WD_E_INVAL, "sandbox '%s' is not running (warden start %s)", ref,
			   ref);
	if (stats)
		*stats = st;
	walk_fini(&wk);
	free(what);
	CTX_LEAVE();
	return rc;
}

WD_API int
wd_session_copy_in(wd_ctx *ctx, const char *ref, const char *host_path, const char *path,
		   struct wd_copy_stats *stats, struct wd_err *err)
{
	return copy_run(ctx, ref, copy_in, host_path, path, wd_xasprintf("'%s'", host_path), stats,
			err);
}

WD_API int
wd_session_copy_out(wd_ctx *ctx, const char *ref, const char *path, const char *host_path,
		    struct wd_copy_stats *stats, struct wd_err *err)
{
	return copy_run(ctx, ref, copy_out, path, host_path,
			wd_xasprintf("'%s' of the session", path), stats, err);
}

/* The running session's workspace view, in this process: the monitor
 * hands over the descriptor of the view its own file requests use (a cow
 * session's overlay mount), with the path it stands for and the
 * protected list, and the checks of wd_workspace_openat() and
 * wd_workspace_write() apply here as they do there.  The view is the
 * session's at the time of the call: a session stopped and started again
 * has a new one (ask again). */
WD_API int
wd_session_workspace(wd_ctx *ctx, const char *ref, wd_workspace **out, struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	*out = NULL;
	CTX_ENTER(ctx);
	struct where w;
	json_t *r = NULL;
	int fd = -1;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0)
		rc = session_call_fd(w.sbdir, "{\"op\":\"view\"}", NULL, 0, &r, &fd, err);
	if (rc == 0) {
		const char *path = json_string_value(json_object_get(r, "path"));
		json_t *pa = json_object_get(r, "protect");
		size_t n = json_array_size(pa);
		const char **protect = wd_xcalloc(n + 1, sizeof(char *));
		for (size_t i = 0; i < n; i++)
			protect[i] = json_string_value(json_array_get(pa, i));
		bool ok = path && fd >= 0;
		for (size_t i = 0; ok && i < n; i++)
			ok = protect[i] != NULL;
		rc = ok ? ws_files_view(fd, path, protect, n, out, err)
			: wd_err_set(err, WD_E_INTERNAL, "the monitor sent no workspace view");
		free(protect);
	}
	if (fd >= 0)
		close(fd);
	json_decref(r);
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}
