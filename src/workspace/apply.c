/* workspace/apply: a cow sandbox's changes written into the real directory,
 * and the change set dropped (discard).
 *
 * apply, in three passes over the selected changes:
 *
 *   check    any change that conflicts (the host changed the file since the
 *            sandbox first saw it) or touches a protected path stops
 *            everything: nothing is written, each is reported
 *   prepare  every new content is written into its directory as an
 *            unnamed file (O_TMPFILE: nothing is left should warden die
 *            here), or, where the file system has none or descriptors run
 *            short, under a temporary name (.warden-<name>-XXXXXX); with its
 *            mode (set-id bits dropped: the sandbox's user made them) and
 *            its owner (the replaced file's, else the workspace's); then
 *            synced, all at once (syncfs of each file system they are
 *            on, before any is linked in).  Each content is re-hashed as it is copied and must be
 *            the change set's (a process left in the session
 *            rewrote a file between the diff and the apply).  A failure here
 *            (ENOSPC, a mismatch) removes every temporary file and directory
 *            made so far: the host is as it was
 *   commit   deletions (deepest first), then each file linked in: at its
 *            name when that is free, else under a temporary name renamed
 *            over its place (atomic per file: a reader sees the old or the
 *            new content, never a mix); symbolic links are made here too;
 *            then mode changes.  Hard links of the upper layer are written
 *            once and linked on the host too
 *
 * Before all this, the set must be the one reviewed when the caller gives
 * its digest (--expect), and the bytes it writes no more than the sandbox's
 * disk holds (50 links to a 20 MB file once wrote 1 GB from a 64 MB disk).
 *
 * Then the baseline takes the applied files' new state, so applying again
 * after further changes in the sandbox is not a conflict with ourselves.
 *
 * discard writes the host's version back through the overlay (live: the
 * overlay is mounted in a jail, and overlayfs does not allow its upper
 * layer to change under it), or empties the upper layer when nothing is
 * mounted and everything goes.
 *
 * Every path is opened beneath its root with no symbolic link followed
 * (ws_open_beneath): in the host workspace, in the upper layer, in the
 * overlay.  The sandbox controls the last two; a link it swaps in must not
 * steer a write (or a read) by warden, which runs as the caller, outside. */
#include "workspace/workspace.h"
#include "util/escape.h"
#include "util/json.h"
#include "util/sha256.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

struct pending {
	const struct ws_change *c;
	int dirfd;    /* the parent directory in the host workspace */
	char *base;   /* the final name */
	char *tmp;    /* the temporary name in dirfd, or NULL */
	int fd;	      /* an unnamed (O_TMPFILE) file with the content, or -1 */
	char *target; /* a symbolic link's target, made at commit */
	uid_t uid;    /* the owner of what target makes */
	gid_t gid;
	bool late;	   /* the way there is not a directory yet (typechange) */
	bool done;	   /* committed: base is the new content */
	bool dir_borrowed; /* dirfd is the pending before's: closed with it */
};

struct applier {
	struct ws *w;
	struct ws_changes *cs;
	struct pending *p;
	size_t np;
	char **made_dirs; /* created in prepare: removed if it fails */
	size_t nmade;
	uid_t owner;
	gid_t group;
	size_t fd_budget; /* unnamed files that may stay open until commit */
	bool sync_each;	  /* a file prepared now is synced alone (commit's late ones) */
	FILE *text;
	struct jw *json;
	struct wd_err *err;
};

/* One line of the report: the path quoted and the reason made visible
 * (both can hold the sandbox's bytes: a name, an error naming one), then
 * c's modes in octal when c is given (docs/threat-model.md). */
static void
report_c(struct applier *a, const char *what, const char *path, const char *why,
	 const struct ws_change *c)
{
	fprintf(a->text, "%-9s ", what);
	wd_esc_path_put(a->text, path);
	if (c && S_ISDIR(c->new_mode))
		fputc('/', a->text);
	if (c)
		ws_change_mode_note(c, a->text);
	if (why) {
		fputs(": ", a->text);
		wd_esc_text_put(a->text, why, strlen(why), 0, 0);
	}
	fputc('\n', a->text);
	jw_obj_begin(a->json);
	jw_kstr(a->json, "path", path);
	jw_kstr(a->json, "result", what);
	if (why)
		jw_kstr(a->json, "reason", why);
	jw_obj_end(a->json);
}

static void
report(struct applier *a, const char *what, const char *path, const char *why)
{
	report_c(a, what, path, why, NULL);
}

static char *
dir_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? strndup(path, (size_t)(s - path)) : wd_xstrdup("");
}

static const char *
base_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* The mode a new directory gets: its own change's, else 0755. */
static mode_t
dir_mode(const struct applier *a, const char *path)
{
	for (size_t i = 0; i < a->cs->n; i++)
		if (a->cs->c[i].status == WS_ADDED && S_ISDIR(a->cs->c[i].new_mode) &&
		    !strcmp(a->cs->c[i].path, path))
			return a->cs->c[i].new_mode & 01777;
	return 0755;
}

/* Open (making what is missing) directory rel of the host workspace.
 * -ENOTDIR when something else is in the way (a file the change set
 * replaces by a directory: done late, after the deletions). */
static int
open_dir(struct applier *a, const char *rel)
{
	if (!rel[0])
		return ws_open_beneath(a->w->wsfd, ".", O_RDONLY | O_DIRECTORY);
	int fd = ws_open_beneath(a->w->wsfd, rel, O_RDONLY | O_DIRECTORY);
	if (fd != -ENOENT)
		return fd;
	char *parent = dir_of(rel);
	int pfd = open_dir(a, parent);
	free(parent);
	if (pfd < 0)
		return pfd;
	const char *name = base_of(rel);
	mode_t m = dir_mode(a, rel);
	int rc = 0;
	if (mkdirat(pfd, name, m) == 0) {
		a->made_dirs = wd_xrealloc(a->made_dirs, (a->nmade + 1) * sizeof(char *));
		a->made_dirs[a->nmade++] = wd_xstrdup(rel);
		if (fchownat(pfd, name, a->owner, a->group, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fchmodat(pfd, name, m, 0) < 0)
			rc = -errno;
	} else if (errno != EEXIST) {
		rc = -errno;
	}
	close(pfd);
	if (rc < 0)
		return rc;
	return ws_open_beneath(a->w->wsfd, rel, O_RDONLY | O_DIRECTORY);
}

static char *
temp_name(const char *base)
{
	unsigned char r[6];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		memset(r, 0, sizeof(r));
	return wd_xasprintf(".warden-%.40s-%02x%02x%02x%02x%02x%02x", base, r[0], r[1], r[2], r[3],
			    r[4], r[5]);
}

static int
copy_fd(int in, int out)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP)
			return -errno;
		/* across file systems on older kernels: plain copying */
		char buf[65536];
		ssize_t r;
		while ((r = read(in, buf, sizeof(buf))) > 0)
			if (wd_write_all(out, buf, (size_t)r) < 0)
				return -errno;
		return r < 0 ? -errno : 0;
	}
}

/* Copy in to out (-1: only hash), hashing what passes: at most max + 1
 * bytes are read, so a file grown since the diff is seen without copying
 * all of it.  *n: the bytes copied; hash: their SHA-256. */
static int
copy_hashed(int in, int out, uint64_t max, uint64_t *n, char hash[65])
{
	/* On the heap: see hash_fd (changes.c) for why not __thread. */
	enum { COPY_BUF = 65536 };
	wd_autofree char *buf = wd_xmalloc(COPY_BUF);
	struct ws_hasher *h = ws_hasher_new();
	int rc = 0;
	*n = 0;
	while (*n <= max) {
		size_t want = COPY_BUF;
		if (max + 1 - *n < want)
			want = (size_t)(max + 1 - *n);
		ssize_t r = read(in, buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = -errno;
		if (r <= 0)
			break;
		ws_hasher_update(h, buf, (size_t)r);
		*n += (uint64_t)r;
		if (out >= 0 && wd_write_all(out, buf, (size_t)r) < 0) {
			rc = -errno;
			break;
		}
	}
	ws_hasher_final(h, hash);
	return rc;
}

/* The sandbox's file is not what the change set says (rewritten, grown,
 * swapped for a FIFO or a link since): nothing is applied. */
static int
stale(struct applier *a, const char *path)
{
	wd_err_set(a->err, WD_E_INVAL,
		   "%s changed in the sandbox since the change set was read: run warden diff "
		   "again",
		   path);
	return -ESTALE;
}

/* a->p follows the change set's order (sorted by path, strcmp), so a
 * binary search: a scan per hard link was quadratic in the links. */
static struct pending *
find_pending(struct applier *a, const char *path)
{
	size_t lo = 0, hi = a->np;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = strcmp(a->p[mid].c->path, path);
		if (r == 0)
			return &a->p[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The upper layer's file of c is the change set's: a regular file of its
 * size and SHA-256 (read without blocking), else stale(). */
static int
check_upper(struct applier *a, const struct ws_change *c)
{
	wd_autoclose int in = ws_open_beneath(a->w->upper, c->path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	if (in < 0)
		return wd_err_sys(a->err, -in, "%s in the sandbox", c->path);
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != c->new_size)
		return stale(a, c->path);
	char hash[65];
	uint64_t n = 0;
	int rc = copy_hashed(in, -1, c->new_size, &n, hash);
	if (rc < 0)
		return wd_err_sys(a->err, -rc, "read %s in the sandbox", c->path);
	return n == c->new_size && !strcmp(hash, c->new_hash) ? 0 : stale(a, c->path);
}

/* Write the new content of p->c (a file or link of the upper layer) as a
 * temporary file next to its place. */
static int
prepare_one(struct applier *a, struct pending *p)
{
	const struct ws_change *c = p->c;
	char *parent = dir_of(c->path);
	/* One descriptor per directory, not per file: the set is sorted by
	 * path, so a directory's files follow each other, and each held its
	 * own, so an apply of 64,000 files in two directories failed with
	 * EMFILE ("nothing applied") at the 19,000th (docs/threat-model.md). */
	const struct pending *prev = p > a->p ? p - 1 : NULL;
	if (prev && prev->dirfd >= 0 && !p->late) {
		char *pp = dir_of(prev->c->path);
		if (!strcmp(pp, parent)) {
			p->dirfd = prev->dirfd;
			p->dir_borrowed = true;
		}
		free(pp);
	}
	if (!p->dir_borrowed)
		p->dirfd = open_dir(a, parent);
	free(parent);
	if (p->dirfd == -ENOTDIR) {
		/* written after the deletions; its content is checked now, so
		 * that a mismatch still applies nothing at all */
		p->late = true;
		return S_ISREG(c->new_mode) ? check_upper(a, c) : 0;
	}
	if (p->dirfd < 0)
		return wd_err_sys(a->err, -p->dirfd, "%s: its directory", c->path);
	p->base = wd_xstrdup(base_of(c->path));
	/* the owner: the replaced file's, else the workspace's */
	uid_t uid = a->owner;
	gid_t gid = a->group;
	struct stat old;
	if (fstatat(p->dirfd, p->base, &old, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(old.st_mode)) {
		uid = old.st_uid;
		gid = old.st_gid;
	}
	if (S_ISLNK(c->new_mode)) {
		char target[PATH_MAX];
		wd_autoclose int l = ws_open_beneath(a->w->upper, c->path, O_PATH);
		ssize_t n = l < 0 ? -1 : readlinkat(l, "", target, sizeof(target) - 1);
		if (n < 0)
			return wd_err_sys(a->err, l < 0 ? -l : errno, "%s in the sandbox", c->path);
		target[n] = '\0';
		char th[65];
		wd_sha256_hex_of(target, (size_t)n, th);
		if (strcmp(th, c->new_hash))
			return stale(a, c->path);
		/* made at commit: nothing named stays should warden die */
		p->target = wd_xstrdup(target);
		p->uid = uid;
		p->gid = gid;
		return 0;
	}
	if (c->link_to) {
		/* a hard link of a file written earlier in this apply: the
		 * content once, linked at commit (its bytes are not counted
		 * again) */
		const struct pending *first = find_pending(a, c->link_to);
		if (first && !first->late)
			return 0;
	}
	/* O_NONBLOCK: a FIFO swapped in since the diff would make the open
	 * wait for a writer (it hung apply); whatever was opened
	 * must be a regular file of the size the change set says */
	wd_autoclose int in = ws_open_beneath(a->w->upper, c->path, O_RDONLY | O_NONBLOCK);
	struct stat ist;
	if (in < 0)
		return wd_err_sys(a->err, -in, "%s in the sandbox", c->path);
	if (fstat(in, &ist) < 0)
		return wd_err_sys(a->err, errno, "%s in the sandbox", c->path);
	if (!S_ISREG(ist.st_mode) || (uint64_t)ist.st_size != c->new_size)
		return stale(a, c->path);
	wd_autoclose int out = -1;
	if (a->fd_budget) {
		/* unnamed until commit: a warden killed meanwhile leaves
		 * nothing in the project (200 MB of .warden-* stayed) */
		out = openat(p->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		if (out >= 0)
			a->fd_budget--;
		else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return wd_err_sys(a->err, errno, "%s: create", c->path);
	}
	for (int tries = 0; tries < 8 && out < 0; tries++) {
		free(p->tmp);
		p->tmp = temp_name(p->base);
		out = openat(p->dirfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			     0600);
		if (out < 0 && errno != EEXIST)
			break;
	}
	if (out < 0) {
		int e = errno;
		free(p->tmp);
		p->tmp = NULL;
		return wd_err_sys(a->err, e, "%s: create", c->path);
	}
	char hash[65];
	uint64_t n = 0;
	int rc = copy_hashed(in, out, c->new_size, &n, hash);
	if (rc < 0) {
		if (!p->tmp)
			p->fd = wd_steal_fd(&out); /* closed, so gone, by unprepare */
		return wd_err_sys(a->err, -rc, "%s: write", c->path);
	}
	/* the bytes written are the bytes reviewed, or nothing is applied */
	if (n != c->new_size || strcmp(hash, c->new_hash))
		return stale(a, c->path);
	/* set-id bits are dropped: the sandbox's user set them */
	mode_t m = c->new_mode & 01777;
	if (fchown(out, uid, gid) < 0 || fchmod(out, m) < 0 || (a->sync_each && fdatasync(out) < 0))
		return wd_err_sys(a->err, errno, "%s: write", c->path);
	if (!p->tmp)
		p->fd = wd_steal_fd(&out);
	return 0;
}

/* Undo prepare: temporary files, then the directories it made. */
static void
unprepare(struct applier *a)
{
	for (size_t i = 0; i < a->np; i++) {
		struct pending *p = &a->p[i];
		if (p->tmp && p->dirfd >= 0)
			unlinkat(p->dirfd, p->tmp, 0);
		free(p->tmp);
		p->tmp = NULL;
		wd_close_reset(&p->fd); /* an unnamed file goes with it */
	}
	for (size_t i = a->nmade; i-- > 0;) {
		char *parent = dir_of(a->made_dirs[i]);
		int pfd =
		    ws_open_beneath(a->w->wsfd, parent[0] ? parent : ".", O_RDONLY | O_DIRECTORY);
		if (pfd >= 0) {
			unlinkat(pfd, base_of(a->made_dirs[i]), AT_REMOVEDIR);
			close(pfd);
		}
		free(parent);
	}
}

static bool
writes_content(const struct ws_change *c)
{
	return !c->unsupported && c->new_mode && !S_ISDIR(c->new_mode) &&
	       (c->status == WS_ADDED || c->status == WS_MODIFIED || c->status == WS_RENAMED);
}

/* Remove path from the host (a file, link, or emptied directory). */
static int
remove_host(struct applier *a, const char *path, mode_t mode)
{
	char *parent = dir_of(path);
	int pfd = ws_open_beneath(a->w->wsfd, parent[0] ? parent : ".", O_RDONLY | O_DIRECTORY);
	free(parent);
	if (pfd < 0)
		return pfd == -ENOENT ? 0 : pfd;
	int rc = unlinkat(pfd, base_of(path), S_ISDIR(mode) ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;
	close(pfd);
	return rc == -ENOENT ? 0 : rc;
}

static int
cmp_desc(const void *x, const void *y)
{
	return strcmp(*(const char *const *)y, *(const char *const *)x);
}

/* Deletions, deepest first: a deleted directory's entries go before it.
 * A directory the host filled since is left, and said. */
static void
commit_deletions(struct applier *a)
{
	const char **del = wd_xcalloc(a->cs->n + 1, sizeof(char *));
	mode_t *modes = wd_xcalloc(a->cs->n + 1, sizeof(mode_t));
	size_t nd = 0;
	for (size_t i = 0; i < a->cs->n; i++) {
		const struct ws_change *c = &a->cs->c[i];
		if (c->status == WS_DELETED)
			del[nd++] = c->path;
		else if (c->status == WS_RENAMED)
			del[nd++] = c->old_path;
	}
	if (nd) /* qsort's base must not be NULL, even for no element */
		qsort(del, nd, sizeof(char *), cmp_desc);
	for (size_t i = 0; i < nd; i++) {
		for (size_t k = 0; k < a->cs->n; k++) {
			const struct ws_change *c = &a->cs->c[k];
			if (c->status == WS_DELETED && !strcmp(c->path, del[i]))
				modes[i] = c->old_mode;
		}
		int rc = remove_host(a, del[i], modes[i]);
		if (rc < 0)
			report(a, "kept", del[i], strerror(-rc));
		else
			report(a, "deleted", del[i], NULL);
	}
	free(del);
	free(modes);
}

/* Make p's content appear as name in its directory: the unnamed file
 * linked in, a hard link of the file its change links to (committed
 * before it: the set is sorted, a link points to an earlier path), or the
 * symbolic link.  0 or -errno (-EEXIST: name is taken). */
static int
place(struct applier *a, struct pending *p, const char *name)
{
	if (p->target) {
		if (symlinkat(p->target, p->dirfd, name) < 0)
			return -errno;
		if (fchownat(p->dirfd, name, p->uid, p->gid, AT_SYMLINK_NOFOLLOW) < 0) {
			int e = errno;
			unlinkat(p->dirfd, name, 0);
			return -e;
		}
		return 0;
	}
	if (p->fd >= 0) {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p->fd);
		if (linkat(AT_FDCWD, proc, p->dirfd, name, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		/* no /proc here: AT_EMPTY_PATH (CAP_DAC_READ_SEARCH) */
		if (errno != ENOENT)
			return -errno;
		return linkat(p->fd, "", p->dirfd, name, AT_EMPTY_PATH) == 0 ? 0 : -errno;
	}
	const struct pending *first = p->c->link_to ? find_pending(a, p->c->link_to) : NULL;
	if (!first || !first->done)
		return -ENOENT; /* its first path failed */
	return linkat(first->dirfd, first->base, p->dirfd, name, 0) == 0 ? 0 : -errno;
}

static int
commit_one(struct applier *a, struct pending *p)
{
	int rc = 0;
	if (!p->tmp) {
		/* a new name: linked straight in, no temporary name at all */
		if ((rc = place(a, p, p->base)) == 0)
			goto done;
		for (int tries = 0; rc == -EEXIST && tries < 8; tries++) {
			free(p->tmp);
			p->tmp = temp_name(p->base);
			rc = place(a, p, p->tmp);
		}
		if (rc < 0) {
			free(p->tmp);
			p->tmp = NULL;
			return rc;
		}
	}
	if (renameat(p->dirfd, p->tmp, p->dirfd, p->base) < 0) {
		int e = errno;
		unlinkat(p->dirfd, p->tmp, 0);
		return -e;
	}
done:
	free(p->tmp);
	p->tmp = NULL;
	wd_close_reset(&p->fd);
	p->done = true;
	return 0;
}

static int
set_mode(struct applier *a, const struct ws_change *c)
{
	int fd = ws_open_beneath(a->w->wsfd, c->path,
				 S_ISDIR(c->new_mode) ? O_RDONLY | O_DIRECTORY : O_RDONLY);
	if (fd < 0)
		return fd;
	int rc = fchmod(fd, c->new_mode & 01777) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* The baseline learns the host's new state of every applied path. */
static int
rebase(struct applier *a)
{
	struct ws_baseline *b = a->w->base;
	for (size_t i = 0; i < a->cs->n; i++) {
		const struct ws_change *c = &a->cs->c[i];
		const char *paths[2] = {c->path, c->old_path};
		for (int k = 0; k < 2; k++) {
			if (!paths[k])
				continue;
			struct stat st;
			int fd = ws_open_beneath(a->w->wsfd, paths[k], O_PATH);
			if (fd >= 0 && fstat(fd, &st) == 0)
				ws_baseline_set(b, paths[k], &st);
			else
				ws_baseline_set(b, paths[k], NULL);
			if (fd >= 0)
				close(fd);
		}
	}
	return ws_baseline_save(a->w->dirfd, b, a->err);
}

static int
check(struct applier *a)
{
	int blocked = 0;
	for (size_t i = 0; i < a->cs->n; i++) {
		const struct ws_change *c = &a->cs->c[i];
		if (c->protect) {
			report(a, "refused", c->path,
			       "a protected path (.git at any depth, a git directory, .envrc, ...) "
			       "or its ancestor: "
			       "warden never writes it");
			blocked++;
		} else if (c->conflict) {
			report(a, "conflict",
			       c->old_path && strcmp(c->old_path, c->path) ? c->old_path : c->path,
			       "changed on the host since the sandbox first saw it");
			blocked++;
		}
	}
	return blocked;
}

static int
run_apply(struct applier *a, struct ws_apply_report *rep)
{
	int rc;
	if ((rep->conflicts = (size_t)check(a)) > 0) {
		/* nothing is written: name the paths to apply the rest */
		return 1;
	}
	/* The bytes written are bounded by what the sandbox's disk holds:
	 * a hard-linked inode counts once (cs->bytes), so only sparse files
	 * (a 1 TB hole written out as zeros) can claim more. */
	struct statvfs sv;
	if (fstatvfs(a->w->upper, &sv) == 0) {
		uint64_t used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
		if (a->cs->bytes > used) {
			wd_err_set(a->err, WD_E_INVAL,
				   "nothing applied: the change set would write %llu bytes, more "
				   "than the sandbox's disk holds (%llu bytes used: sparse files?)",
				   (unsigned long long)a->cs->bytes, (unsigned long long)used);
			return -EFBIG;
		}
	}
	/* prepare */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		a->fd_budget = rl.rlim_cur > 512 ? (size_t)(rl.rlim_cur - 256) / 2 : 0;
	else
		a->fd_budget = 4096;
	a->p = wd_xcalloc(a->cs->n + 1, sizeof(*a->p));
	for (size_t i = 0; i < a->cs->n; i++) {
		const struct ws_change *c = &a->cs->c[i];
		if (!writes_content(c))
			continue;
		struct pending *p = &a->p[a->np++];
		p->c = c;
		p->dirfd = -1;
		p->fd = -1;
		if ((rc = prepare_one(a, p)) < 0) {
			unprepare(a);
			return wd_err_prefix(a->err, "nothing applied");
		}
	}
	/* added directories (their files made the non-empty ones already) */
	for (size_t i = 0; i < a->cs->n; i++) {
		const struct ws_change *c = &a->cs->c[i];
		if (c->status == WS_ADDED && S_ISDIR(c->new_mode)) {
			int fd = open_dir(a, c->path);
			if (fd == -ENOTDIR)
				continue; /* after the deletions */
			if (fd < 0) {
				unprepare(a);
				wd_err_sys(a->err, -fd, "%s", c->path);
				return wd_err_prefix(a->err, "nothing applied");
			}
			close(fd);
		}
	}
	/* Every new content on disk before any is linked in: one syncfs
	 * per file system the files are on, not a journal commit per file
	 * (an fdatasync each: 34,000 small files took minutes on a loaded
	 * host, the apply of diff_scale's set 8 min).  A failure here is
	 * before commit: nothing applied. */
	dev_t *devs = wd_xcalloc(a->np + 1, sizeof(dev_t));
	size_t ndev = 0;
	rc = 0;
	for (size_t i = 0; i < a->np && rc == 0; i++) {
		struct stat st;
		int d = a->p[i].dirfd;
		if (d < 0 || a->p[i].late)
			continue;
		if (fstat(d, &st) < 0) {
			rc = wd_err_sys(a->err, errno, "%s", a->p[i].c->path);
			break;
		}
		bool seen = false;
		for (size_t k = 0; k < ndev && !seen; k++)
			seen = devs[k] == st.st_dev;
		if (seen)
			continue;
		devs[ndev++] = st.st_dev;
		if (syncfs(d) < 0)
			rc = wd_err_sys(a->err, errno, "%s: sync", a->p[i].c->path);
	}
	free(devs);
	if (rc < 0) {
		unprepare(a);
		return wd_err_prefix(a->err, "nothing applied");
	}
	a->sync_each = true;
	/* commit */
	commit_deletions(a);
	for (size_t i = 0; i < a->np; i++) {
		struct pending *p = &a->p[i];
		if (p->late && (rc = prepare_one(a, p)) < 0) {
			report(a, "failed", p->c->path, a->err->msg);
			/* no temporary file outlives a failed apply */
			if (p->tmp && p->dirfd >= 0)
				unlinkat(p->dirfd, p->tmp, 0);
			wd_close_reset(&p->fd);
			continue;
		}
		if ((rc = commit_one(a, p)) < 0) {
			report(a, "failed", p->c->path, strerror(-rc));
			continue;
		}
		report_c(a, p->c->status == WS_ADDED ? "added" : "written", p->c->path, NULL, p->c);
		rep->applied++;
	}
	for (size_t i = 0; i < a->cs->n; i++) {
		const struct ws_change *c = &a->cs->c[i];
		if (c->status == WS_ADDED && S_ISDIR(c->new_mode)) {
			int fd = open_dir(a, c->path);
			if (fd >= 0) {
				close(fd);
				report_c(a, "added", c->path, NULL, c);
			}
		} else if (c->status == WS_MODE) {
			if ((rc = set_mode(a, c)) < 0) {
				report(a, "failed", c->path, strerror(-rc));
			} else {
				report_c(a, "mode", c->path, NULL, c);
				rep->applied++;
			}
		} else if (c->unsupported) {
			report(a, "skipped", c->path, "not a file, link or directory");
			rep->refused++;
		}
	}
	return 0;
}

int
ws_apply(struct ws *w, const char *const *paths, size_t npaths, unsigned flags, const char *expect,
	 struct ws_apply_report *rep, struct wd_err *err)
{
	memset(rep, 0, sizeof(*rep));
	if (expect && (strlen(expect) != 64 || strspn(expect, "0123456789abcdef") != 64))
		return wd_err_set(
		    err, WD_E_INVAL,
		    "expect '%.80s': not a change set digest (64 hex digits, as warden "
		    "diff --json prints in \"digest\")",
		    expect);
	struct ws_changes *cs = NULL;
	int rc = ws_changes(w, paths, npaths, flags, &cs, err);
	if (rc < 0)
		return rc;
	/* What is applied is what was reviewed: the set recomputed now must
	 * be the one whose digest the human saw, or nothing is written
	 * (a process left in the session rewrote a file after the
	 * diff, and apply wrote the new content). */
	if (expect && strcmp(expect, cs->digest)) {
		wd_err_set(err, WD_E_INVAL,
			   "nothing applied: the change set is not the one reviewed (digest %s, "
			   "expected %s): it changed since; run warden diff again",
			   cs->digest, expect);
		ws_changes_free(cs);
		return -ESTALE;
	}
	struct stat st;
	if (fstat(w->wsfd, &st) < 0) {
		ws_changes_free(cs);
		return wd_err_sys(err, errno, "workspace %s", w->workspace);
	}
	char *text = NULL;
	size_t tl = 0;
	struct jw j;
	jw_init(&j, 0);
	jw_obj_begin(&j);
	jw_key(&j, "files");
	jw_arr_begin(&j);
	struct applier a = {.w = w,
			    .cs = cs,
			    .owner = st.st_uid,
			    .group = st.st_gid,
			    .text = open_memstream(&text, &tl),
			    .json = &j,
			    .err = err};
	if (!a.text)
		abort();
	rc = run_apply(&a, rep);
	/* what the review left out is left in the sandbox: said, so that an
	 * apply that wrote nothing of node_modules/ does not look like one
	 * that lost it */
	if (rc >= 0)
		ws_ignored_write(cs, "ignored: left in the sandbox (apply --all writes them)",
				 a.text);
	if (rc >= 0 && rep->applied && rebase(&a) < 0)
		wd_log(WD_LOG_WARN, "apply: %s", err->msg);
	for (size_t i = 0; i < a.np; i++) {
		if (a.p[i].fd >= 0)
			close(a.p[i].fd);
		if (a.p[i].tmp && a.p[i].dirfd >= 0)
			unlinkat(a.p[i].dirfd, a.p[i].tmp, 0); /* never left behind */
	}
	/* then the directories, once each (a borrowed one is a later
	 * pending's too, so not in the loop above) */
	for (size_t i = 0; i < a.np; i++) {
		if (a.p[i].dirfd >= 0 && !a.p[i].dir_borrowed)
			close(a.p[i].dirfd);
		free(a.p[i].base);
		free(a.p[i].tmp);
		free(a.p[i].target);
	}
	free(a.p);
	for (size_t i = 0; i < a.nmade; i++)
		free(a.made_dirs[i]);
	free(a.made_dirs);
	fclose(a.text);
	jw_arr_end(&j);
	jw_kuint(&j, "applied", rep->applied);
	jw_kuint(&j, "conflicts", rep->conflicts);
	jw_key(&j, "ignored");
	jw_arr_begin(&j);
	for (size_t i = 0; rc >= 0 && i < cs->nig; i++) {
		jw_obj_begin(&j);
		jw_kstr(&j, "path", cs->ig[i].name);
		jw_kuint(&j, "files", cs->ig[i].files);
		jw_kuint(&j, "bytes", cs->ig[i].bytes);
		jw_obj_end(&j);
	}
	jw_arr_end(&j);
	jw_kbool(&j, "ok", rc == 0);
	jw_obj_end(&j);
	rep->text = text;
	rep->json = jw_steal(&j);
	ws_changes_free(cs);
	return rc;
}

void
ws_apply_report_fini(struct ws_apply_report *rep)
{
	free(rep->text);
	free(rep->json);
	memset(rep, 0, sizeof(*rep));
}

/* ---- discard ---- */

/* Write the host's entry at path (mode from the change) into the overlay
 * at the same place: a copy equal to the host's, which the next diff does
 * not list. */
static int
restore(struct ws *w, const char *path, mode_t mode)
{
	char *parent = dir_of(path);
	int pfd = ws_open_beneath(w->ovl, parent[0] ? parent : ".", O_RDONLY | O_DIRECTORY);
	free(parent);
	if (pfd < 0)
		return pfd;
	const char *name = base_of(path);
	int rc = 0;
	/* whatever the sandbox has there goes first (unless the type fits) */
	struct stat cur;
	bool have = fstatat(pfd, name, &cur, AT_SYMLINK_NOFOLLOW) == 0;
	if (have && ((cur.st_mode & S_IFMT) != (mode & S_IFMT) || S_ISLNK(mode))) {
		rc = wd_rm_tree_at(pfd, name);
		have = false;
	}
	if (rc == 0 && S_ISDIR(mode)) {
		if (!have && mkdirat(pfd, name, mode & 07777) < 0)
			rc = -errno;
	} else if (rc == 0 && S_ISLNK(mode)) {
		char t[PATH_MAX];
		int l = ws_open_beneath(w->wsfd, path, O_PATH);
		ssize_t n = l < 0 ? -1 : readlinkat(l, "", t, sizeof(t) - 1);
		if (l >= 0)
			close(l);
		if (n < 0 || (t[n] = '\0', symlinkat(t, pfd, name) < 0))
			rc = -errno;
	} else if (rc == 0) {
		int in = ws_open_beneath(w->wsfd, path, O_RDONLY);
		int out = in < 0 ? -1
				 : openat(pfd, name,
					  O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
					  mode & 07777);
		if (in < 0 || out < 0)
			rc = in < 0 ? in : -errno;
		else
			rc = copy_fd(in, out);
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	}
	if (rc == 0) {
		/* the sandbox user's, as the lower file appeared */
		if (fchownat(pfd, name, w->uid, w->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
		    (!S_ISLNK(mode) && fchmodat(pfd, name, mode & 07777, 0) < 0))
			rc = -errno;
	}
	close(pfd);
	return rc;
}

static int
drop(struct ws *w, const char *path)
{
	char *parent = dir_of(path);
	int pfd = ws_open_beneath(w->ovl, parent[0] ? parent : ".", O_RDONLY | O_DIRECTORY);
	free(parent);
	if (pfd < 0)
		return pfd == -ENOENT ? 0 : pfd;
	int rc = wd_rm_tree_at(pfd, base_of(path));
	close(pfd);
	return rc;
}

static int
empty_upper(struct ws *w, struct wd_err *err)
{
	/* nothing mounted over it: the layer itself is emptied */
	wd_close_reset(&w->ovl);
	wd_close_reset(&w->upper);
	static const char *const dirs[] = {"upper", "work"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(dirs); i++) {
		int rc = wd_rm_tree_at(w->disk, dirs[i]);
		if (rc < 0 || mkdirat(w->disk, dirs[i], i == 0 ? 0755 : 0700) < 0)
			return wd_err_sys(err, rc < 0 ? -rc : errno, "empty the sandbox's %s/",
					  dirs[i]);
		if (i == 0 && fchownat(w->disk, dirs[i], w->uid, w->gid, 0) < 0)
			return wd_err_sys(err, errno, "chown the sandbox's upper/");
	}
	w->upper = openat(w->disk, "upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return w->upper < 0 ? wd_err_sys(err, errno, "the sandbox disk's upper/") : 0;
}

int
ws_discard(struct ws *w, const char *const *paths, size_t npaths, bool live, struct wd_err *err)
{
	/* all of them: a discard drops what the review left out too */
	struct ws_changes *cs = NULL;
	int rc = ws_changes(w, paths, npaths, WS_CHANGES_ALL, &cs, err);
	if (rc < 0)
		return rc;
	int n = (int)cs->n;
	if ((live || npaths) && w->ovl < 0) {
		/* the host's versions are written through the overlay, which
		 * an ordinary user's stopped session does not have mounted */
		ws_changes_free(cs);
		return wd_err_set(err, WD_E_UNSUPPORTED,
				  "discarding some paths of a stopped session needs its overlay, "
				  "which only its monitor mounts for an ordinary user: warden "
				  "start it first, or discard everything");
	}
	if (!live && npaths == 0) {
		ws_changes_free(cs);
		return (rc = empty_upper(w, err)) < 0 ? rc : n;
	}
	/* what the sandbox added goes first (a path may be both: a file it
	 * replaced by a directory), then the host's versions come back,
	 * parents before their entries */
	for (size_t i = 0; i < cs->n && rc == 0; i++) {
		const struct ws_change *c = &cs->c[i];
		if ((c->status == WS_ADDED || c->status == WS_RENAMED) &&
		    (rc = drop(w, c->path)) < 0)
			wd_err_sys(err, -rc, "discard %s", c->path);
	}
	for (size_t i = 0; i < cs->n && rc == 0; i++) {
		const struct ws_change *c = &cs->c[i];
		const char *path = c->status == WS_RENAMED ? c->old_path : c->path;
		if (c->status != WS_ADDED && (rc = restore(w, path, c->old_mode)) < 0)
			wd_err_sys(err, -rc, "discard %s", path);
	}
	ws_changes_free(cs);
	return rc < 0 ? rc : n;
}
