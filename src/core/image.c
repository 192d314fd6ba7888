/* core/image: environments.  An image is a root filesystem
 * built from Debian packages by mmdebstrap, kept under the state
 * directory, or in $WARDEN_IMAGE_DIR when set (image_dir_env):
 *
 *   images/                      0700, the caller's
 *     sha256-HEX/                one per content: rootfs/ and image.json
 *     names/NAME -> ../sha256-HEX
 *     tmp.XXXXXX/                a build under way (removed when it ends)
 *
 * HEX is the digest of a canonical walk of rootfs (digest_tree below):
 * names sorted bytewise, each entry's path, type, mode, owner, size and
 * content (or link target) hashed, modification times left out, then the
 * recipe's env entries, sorted.  What mmdebstrap writes that varies from
 * one build to the next (logs, apt's lists and caches, ldconfig's
 * aux-cache, dpkg's -old files, machine-id, /dev's nodes) is removed
 * before the walk, so two builds from the same
 * recipe and the same mirror state give the same digest.
 *
 * The rootfs is read by the jail (its /usr and /etc, jail/plan.c) through
 * read-only binds and by the policy's program resolution; nothing a
 * sandbox does writes it.  A sandbox holds a shared flock on its image's
 * directory while it lives and a session's meta.json names the digest, so
 * wd_image_remove() can refuse while either uses it.  Builds and imports:
 * image_build.c. */
#include "core/core.h"
#include "jail/jail.h"
#include "supervise/supervise.h"
#include "workspace/workspace.h"
#include "util/escape.h"
#include "util/sha256.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/image-internal.h"

bool
image_name_ok(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > IMAGE_NAME_MAX ||
	    !(islower((unsigned char)n[0]) || isdigit((unsigned char)n[0])))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!islower((unsigned char)n[i]) && !isdigit((unsigned char)n[i]) &&
		    !strchr("._-", n[i]))
			return false;
	return true;
}

/* A Debian package name (policy 5.6.7: [a-z0-9][a-z0-9+.-]+), optionally
 * =VERSION.  Checked because each becomes an argument of mmdebstrap: a
 * word starting with '-' would be an option, a ',' two packages. */
/* ---- the store ---- */

/* WARDEN_IMAGE_DIR: a store of its own, apart from the state directory
 * (images baked into a pod's read-only file system, a cache shared by
 * several state directories).  Whoever can write the store writes the
 * /usr and /etc of every sandbox made from it, so it must be the caller's
 * or root's and writable by no one else (like the state directory and
 * ssh's StrictModes); it is never created on the caller's behalf with a
 * looser mode.  A read-only store (a read-only mount, another user's
 * root-owned 0755 tree) serves ls, inspect and runs; builds, imports and
 * rm into it fail with the file system's error. */
static int
image_dir_env(const char *s, char *out, size_t cap, struct wd_err *err)
{
	if (s[0] != '/')
		return wd_err_set(err, WD_E_INVAL, "WARDEN_IMAGE_DIR %s is not an absolute path",
				  s);
	if (snprintf(out, cap, "%s", s) >= (int)cap)
		return wd_err_set(err, WD_E_INVAL, "WARDEN_IMAGE_DIR path too long");
	struct stat st;
	if (stat(out, &st) < 0) {
		if (errno != ENOENT)
			return wd_err_sys(err, errno, "WARDEN_IMAGE_DIR %s", out);
		if (mkdir(out, 0700) < 0 && errno != EEXIST)
			return wd_err_sys(err, errno, "create WARDEN_IMAGE_DIR %s", out);
		if (stat(out, &st) < 0)
			return wd_err_sys(err, errno, "WARDEN_IMAGE_DIR %s", out);
	}
	if (!S_ISDIR(st.st_mode))
		return wd_err_set(err, WD_E_INVAL, "WARDEN_IMAGE_DIR %s is not a directory", out);
	/* its canonical path: an image's rootfs is recorded by path (a
	 * session's spec, the gVisor bundle), and a recorded path with ".."
	 * or a link in it is refused when read back (spec_set_image_root) */
	char real[PATH_MAX];
	if (!realpath(out, real))
		return wd_err_sys(err, errno, "WARDEN_IMAGE_DIR %s", out);
	if (snprintf(out, cap, "%s", real) >= (int)cap)
		return wd_err_set(err, WD_E_INVAL, "WARDEN_IMAGE_DIR path too long");
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return wd_err_set(err, WD_E_INVAL,
				  "WARDEN_IMAGE_DIR %s belongs to uid %u, neither you (uid %u) "
				  "nor root: its owner would choose your sandboxes' /usr",
				  out, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 022)
		return wd_err_set(err, WD_E_INVAL,
				  "WARDEN_IMAGE_DIR %s has mode %04o: others could change the "
				  "images' files; it must not be group- or other-writable "
				  "(chmod go-w %s)",
				  out, (unsigned)(st.st_mode & 07777), out);
	return 0;
}

int
image_dir(wd_ctx *ctx, char *out, size_t cap, struct wd_err *err)
{
	const char *env = getenv("WARDEN_IMAGE_DIR");
	int rc;
	if (env && *env) {
		if ((rc = image_dir_env(env, out, cap, err)) < 0)
			return rc;
	} else {
		char root[PATH_MAX];
		rc = ctx ? ctx_state_root(ctx, root, sizeof(root), err)
			 : ws_state_root(NULL, root, sizeof(root), err);
		if (rc < 0)
			return rc;
		if (snprintf(out, cap, "%s/images", root) >= (int)cap)
			return wd_err_set(err, WD_E_INVAL, "state directory path too long");
		if (mkdir(out, 0700) < 0 && errno != EEXIST)
			return wd_err_sys(err, errno, "create %s", out);
	}
	char names[PATH_MAX];
	snprintf(names, sizeof(names), "%s/names", out);
	/* tolerated: a read-only store without names/ holds no image, and
	 * each use then says "no image" */
	if (mkdir(names, 0700) < 0 && errno != EEXIST && errno != EROFS && errno != EACCES)
		return wd_err_sys(err, errno, "create %s", names);
	return 0;
}

/* ref: NAME or sha256:HEX.  Fills the digest (64 hex digits). */
int
image_resolve(const char *dir, const char *ref, char digest[65], struct wd_err *err)
{
	if (!strncmp(ref, "sha256:", 7)) {
		const char *h = ref + 7;
		if (strlen(h) != 64 || strspn(h, "0123456789abcdef") != 64)
			return wd_err_set(err, WD_E_INVAL, "image sha256:%.64s... is not a digest",
					  h);
		memcpy(digest, h, 65);
	} else {
		if (!image_name_ok(ref)) {
			wd_autofree char *q = wd_esc_path(ref);
			return wd_err_set(err, WD_E_INVAL,
					  "image name %s is not [a-z0-9][a-z0-9._-]* (at most %d "
					  "bytes)",
					  q, IMAGE_NAME_MAX);
		}
		char link[PATH_MAX], target[256];
		snprintf(link, sizeof(link), "%s/names/%s", dir, ref);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n < 0) {
			if (errno == ENOENT) {
				wd_err_set(err, WD_E_INVAL,
					   "no image '%s' (warden image ls lists them; warden "
					   "image build makes one)",
					   ref);
				return -ENOENT;
			}
			return wd_err_sys(err, errno, "image %s", ref);
		}
		target[n] = '\0';
		if (strncmp(target, "../sha256-", 10) || strlen(target + 10) != 64)
			return wd_err_set(err, WD_E_INVAL, "image name %s points elsewhere (%s)",
					  ref, link);
		memcpy(digest, target + 10, 65);
	}
	char d[PATH_MAX];
	struct stat st;
	snprintf(d, sizeof(d), "%s/sha256-%s/rootfs", dir, digest);
	if (stat(d, &st) < 0 || !S_ISDIR(st.st_mode)) {
		wd_err_set(err, WD_E_INVAL, "image %s: its files are gone (%s)", ref, d);
		return -ENOENT;
	}
	return 0;
}

json_t *
image_read_meta(const char *dir, const char *digest, struct wd_err *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/sha256-%s/image.json", dir, digest);
	json_error_t je;
	json_t *j = json_load_file(p, 0, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		wd_err_set(err, WD_E_INVAL, "%s:%d:%d: %s", p, je.line, je.column, je.text);
		return NULL;
	}
	return j;
}

/* The names that point at digest, as a JSON array. */
json_t *
image_names_of(const char *dir, const char *digest)
{
	json_t *a = json_array();
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/names", dir);
	struct dirent **ents = NULL;
	int n = scandir(p, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		char d[65];
		if (ents[i]->d_name[0] != '.' &&
		    image_resolve(dir, ents[i]->d_name, d, NULL) == 0 && !strcmp(d, digest))
			json_array_append_new(a, json_string(ents[i]->d_name));
		free(ents[i]);
	}
	free(ents);
	return a;
}

WD_API int
wd_spec_set_image(wd_spec *spec, const char *ref, struct wd_err *err)
{
	char dir[PATH_MAX], digest[65];
	int rc = image_dir(NULL, dir, sizeof(dir), err);
	if (rc < 0 || (rc = image_resolve(dir, ref, digest, err)) < 0)
		return rc;
	json_t *meta = image_read_meta(dir, digest, err);
	if (!meta)
		return -EINVAL;
	/* the image's variables, unless the caller set the same name */
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(meta, "env"), i, v)
	{
		const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq)
			continue;
		bool set = false;
		for (size_t k = 0; k < spec->nenv && !set; k++)
			set = !strncmp(spec->env[k], kv, (size_t)(eq - kv) + 1);
		if (set)
			continue;
		char *n = strndup(kv, (size_t)(eq - kv));
		rc = wd_spec_setenv(spec, n, eq + 1, err);
		free(n);
		if (rc < 0) {
			json_decref(meta);
			return rc;
		}
	}
	/* the image's user names warden's passwd entry for uid 1000; a
	 * numeric User of an imported config, or root, is not a name warden
	 * writes (the command's uid is 1000 whatever the image says) */
	const char *user = json_string_value(json_object_get(meta, "user"));
	free(spec->image_user);
	spec->image_user = user && image_user_ok(user) ? wd_xstrdup(user) : NULL;
	json_decref(meta);
	free(spec->image);
	free(spec->image_root);
	free(spec->image_digest);
	spec->image = wd_xstrdup(ref);
	spec->image_root = wd_xasprintf("%s/sha256-%s/rootfs", dir, digest);
	spec->image_digest = wd_xstrdup(digest);
	return 0;
}

/* ---- the digest: a canonical walk ---- */

struct walk {
	struct wd_sha256 h;
	uint64_t bytes, files, entries;
	int err;
	char bad[PATH_MAX]; /* the entry refused, with err */
};

int
image_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void
hash_record(struct walk *w, const char *path, const struct stat *st, const char *extra, size_t elen)
{
	char rec[PATH_MAX + 128];
	int n = snprintf(
	    rec, sizeof(rec), "%s%c%o %u %u %llu %llu", path, 0, (unsigned)st->st_mode,
	    (unsigned)st->st_uid, (unsigned)st->st_gid,
	    (unsigned long long)(S_ISREG(st->st_mode) ? st->st_size : 0),
	    (unsigned long long)(S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? st->st_rdev : 0));
	wd_sha256_update(&w->h, rec, (size_t)n + 1);
	if (extra)
		wd_sha256_update(&w->h, extra, elen);
}

static void
walk_dir(struct walk *w, int dfd, const char *rel, int depth)
{
	if (depth > 256) {
		w->err = -ELOOP;
		return;
	}
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		w->err = -errno;
		return;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			names = wd_xrealloc(names, (n + 1) * sizeof(char *));
			names[n++] = wd_xstrdup(e->d_name);
		}
	closedir(d);
	if (n) /* qsort's base must not be NULL, even for no element */
		qsort(names, n, sizeof(char *), image_cmp_str);
	for (size_t i = 0; i < n && !w->err; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", rel, names[i]);
		struct stat st;
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			w->err = -errno;
			snprintf(w->bad, sizeof(w->bad), "%s", path);
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			ssize_t k = readlinkat(dfd, names[i], t, sizeof(t));
			if (k < 0) {
				w->err = -errno;
				break;
			}
			hash_record(w, path, &st, t, (size_t)k);
		} else if (S_ISREG(st.st_mode)) {
			hash_record(w, path, &st, NULL, 0);
			int f = openat(dfd, names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (f < 0) {
				w->err = -errno;
				break;
			}
			char buf[65536];
			ssize_t k;
			while ((k = read(f, buf, sizeof(buf))) > 0)
				wd_sha256_update(&w->h, buf, (size_t)k);
			if (k < 0)
				w->err = -errno;
			close(f);
			w->bytes += (uint64_t)st.st_size;
			w->files++;
		} else if (S_ISDIR(st.st_mode)) {
			hash_record(w, path, &st, NULL, 0);
			int sub =
			    openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				w->err = -errno;
				break;
			}
			walk_dir(w, sub, path, depth + 1);
			close(sub);
		} else {
			/* A device node, FIFO or socket: an image is files,
			 * links and directories.  A device node bound into a
			 * jail is nodev, but the store is the host's disk,
			 * and a node there is one mount away from the host's
			 * disks (refused, with its path). */
			snprintf(w->bad, sizeof(w->bad), "%s", path);
			w->err = -EPERM;
		}
		if (++w->entries > IMAGE_MAX_ENTRIES) {
			snprintf(w->bad, sizeof(w->bad), "%s", path);
			w->err = -E2BIG;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

bool
image_user_ok(const char *u)
{
	return spec_user_name_ok(u);
}

int
image_digest_tree(const char *root, char *const *env, size_t nenv, const char *user, char hex[65],
		  uint64_t *bytes, uint64_t *files, struct wd_err *err)
{
	struct walk w = {0};
	wd_sha256_init(&w.h);
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "%s", root);
	walk_dir(&w, fd, "", 0);
	close(fd);
	if (w.err == -EPERM)
		return wd_err_set(
		    err, WD_E_INVAL,
		    "%s is a device node, FIFO or socket: an image holds files, links "
		    "and directories only",
		    w.bad);
	if (w.err == -E2BIG)
		return wd_err_set(err, WD_E_INVAL, "more than %d entries (at %s): refused",
				  IMAGE_MAX_ENTRIES, w.bad);
	if (w.err)
		return wd_err_sys(err, -w.err, "digest of %s (at %s)", root, w.bad);
	/* the variables are part of the environment: two images that differ
	 * only in them are two images (each its own image.json) */
	wd_sha256_update(&w.h, "env", 4);
	for (size_t i = 0; i < nenv; i++)
		wd_sha256_update(&w.h, env[i], strlen(env[i]) + 1);
	/* and the user, when there is one (an image without keeps the
	 * digest it had before images had users) */
	if (user) {
		wd_sha256_update(&w.h, "user", 5);
		wd_sha256_update(&w.h, user, strlen(user) + 1);
	}
	unsigned char md[32];
	wd_sha256_final(&w.h, md);
	wd_sha256_hex(md, hex);
	*bytes = w.bytes;
	*files = w.files;
	return 0;
}

char *
image_dump(json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!s)
		abort();
	return s;
}

/* Move the build in tmp (rootfs/) into the store as sha256-hex with meta
 * as its image.json, unless that content is stored already, then point
 * name at it.  tmp is gone afterwards either way.  *out: the metadata. */
int
image_store(const char *dir, const char *tmp, const char *name, const char *hex, json_t *meta,
	    uint64_t ms, char **out, struct wd_err *err)
{
	char final[PATH_MAX];
	snprintf(final, sizeof(final), "%s/sha256-%s", dir, hex);
	struct stat st;
	if (stat(final, &st) == 0) {
		/* the same content is already stored: keep it (its image.json,
		 * with its own build time), drop this copy */
		wd_rm_tree_at(AT_FDCWD, tmp);
	} else {
		char mp[PATH_MAX];
		snprintf(mp, sizeof(mp), "%s/image.json", tmp);
		if (json_dump_file(meta, mp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0 ||
		    chmod(mp, 0444) < 0 || rename(tmp, final) < 0) {
			int rc = wd_err_sys(err, errno, "store %s", final);
			wd_rm_tree_at(AT_FDCWD, tmp);
			return rc;
		}
	}
	/* the name, atomically: a new link renamed over the old one */
	char link[PATH_MAX], ltmp[PATH_MAX], target[128];
	snprintf(link, sizeof(link), "%s/names/%s", dir, name);
	snprintf(ltmp, sizeof(ltmp), "%s/names/.%s.%d", dir, name, (int)getpid());
	snprintf(target, sizeof(target), "../sha256-%s", hex);
	unlink(ltmp);
	if (symlink(target, ltmp) < 0 || rename(ltmp, link) < 0) {
		int rc = wd_err_sys(err, errno, "name %s", link);
		unlink(ltmp);
		return rc;
	}
	json_t *m = image_read_meta(dir, hex, err);
	if (!m)
		return -EINVAL;
	/* The jail's /etc of the image, prepared now rather than on its first
	 * start, so a store later baked read-only (a pod's) has it.  Tolerated
	 * failure: the first start prepares it again, or a read-only store
	 * shows the image's /etc entry by entry; an image whose etc is a link
	 * is refused there, by name. */
	const char *user = json_string_value(json_object_get(m, "user"));
	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", final);
	(void)jail_etc_prepare(rootfs, user && image_user_ok(user) ? user : NULL);
	json_object_set_new(m, "names", image_names_of(dir, hex));
	json_object_set_new(m, "build_ms", json_integer((json_int_t)ms));
	*out = image_dump(m);
	json_decref(m);
	return 0;
}

/* A build or import directory, tmp.XXXXXX under dir, locked (flock
 * LOCK_EX) through a descriptor that is inherited by the tool it runs: the
 * lock lasts while any process of the build does, warden killed or not.
 * Directories left by a build that is gone (the lock free) and by an
 * interrupted rm (tmp.rm-*) are removed first: each is an image's size. */
/* ---- ls, inspect, rm ---- */

static json_t *
meta_with_names(const char *dir, const char *digest, struct wd_err *err)
{
	json_t *m = image_read_meta(dir, digest, err);
	if (m) {
		json_object_set_new(m, "names", image_names_of(dir, digest));
		json_object_del(m, "build_ms"); /* of one build, not the image */
	}
	return m;
}

WD_API int
wd_image_list(wd_ctx *ctx, char **out, struct wd_err *err)
{
	char dir[PATH_MAX];
	int rc = image_dir(ctx, dir, sizeof(dir), err);
	if (rc < 0)
		return rc;
	json_t *a = json_array();
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *e = ents[i]->d_name;
		if (!strncmp(e, "sha256-", 7) && strlen(e) == 71) {
			json_t *m = meta_with_names(dir, e + 7, NULL);
			if (m)
				json_array_append_new(a, m);
		}
		free(ents[i]);
	}
	free(ents);
	*out = image_dump(a);
	json_decref(a);
	return 0;
}

WD_API int
wd_image_inspect(wd_ctx *ctx, const char *ref, char **out, struct wd_err *err)
{
	char dir[PATH_MAX], digest[65];
	int rc = image_dir(ctx, dir, sizeof(dir), err);
	if (rc < 0 || (rc = image_resolve(dir, ref, digest, err)) < 0)
		return rc;
	json_t *m = meta_with_names(dir, digest, err);
	if (!m)
		return -EINVAL;
	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s/sha256-%s/rootfs", dir, digest);
	json_object_set_new(m, "path", json_string(rootfs));
	*out = image_dump(m);
	json_decref(m);
	return 0;
}

/* A session made with the image (its meta.json's spec names the digest),
 * running or stopped: its name (or id), or NULL. */
static char *
session_using(wd_ctx *ctx, const char *digest)
{
	char root[PATH_MAX], p[PATH_MAX];
	if (ctx_state_root(ctx, root, sizeof(root), NULL) < 0)
		return NULL;
	snprintf(p, sizeof(p), "%s/sandboxes", root);
	DIR *d = opendir(p);
	if (!d)
		return NULL;
	char want[80];
	snprintf(want, sizeof(want), "sha256:%s", digest);
	char *found = NULL;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char mp[PATH_MAX];
		snprintf(mp, sizeof(mp), "%s/%s/meta.json", p, e->d_name);
		json_t *m = json_load_file(mp, 0, NULL);
		const char *img =
		    json_string_value(json_object_get(json_object_get(m, "spec"), "image"));
		if (img && !strcmp(img, want)) {
			const char *nm = json_string_value(json_object_get(m, "name"));
			found = wd_xstrdup(nm ? nm : e->d_name);
		}
		json_decref(m);
	}
	closedir(d);
	return found;
}

WD_API int
wd_image_remove(wd_ctx *ctx, const char *ref, struct wd_err *err)
{
	char dir[PATH_MAX], digest[65];
	int rc = image_dir(ctx, dir, sizeof(dir), err);
	if (rc < 0 || (rc = image_resolve(dir, ref, digest, err)) < 0)
		return rc;
	char idir[PATH_MAX];
	snprintf(idir, sizeof(idir), "%s/sha256-%s", dir, digest);
	/* In use: a sandbox running in it holds a shared lock on idir
	 * (supervise/sandbox.c); removing its files under it would change the /usr
	 * of a running program.  The exclusive lock is held to the end, so no
	 * sandbox can start in it meanwhile. */
	wd_autoclose int fd = open(idir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "%s", idir);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		wd_err_set(err, WD_E_INVAL, "image %s is in use by a running sandbox", ref);
		return -EBUSY;
	}
	wd_autofree char *sess = session_using(ctx, digest);
	if (sess) {
		wd_err_set(err, WD_E_INVAL, "image %s is in use by session %s (warden rm %s first)",
			   ref, sess, sess);
		return -EBUSY;
	}
	json_t *names = image_names_of(dir, digest);
	size_t nn = json_array_size(names);
	if (strncmp(ref, "sha256:", 7)) {
		char link[PATH_MAX];
		snprintf(link, sizeof(link), "%s/names/%s", dir, ref);
		if (unlink(link) < 0 && errno != ENOENT) {
			json_decref(names);
			return wd_err_sys(err, errno, "remove %s", link);
		}
		nn--;
	} else {
		size_t i;
		json_t *v;
		json_array_foreach(names, i, v)
		{
			char link[PATH_MAX];
			snprintf(link, sizeof(link), "%s/names/%s", dir, json_string_value(v));
			unlink(link);
		}
		nn = 0;
	}
	json_decref(names);
	if (nn > 0)
		return 0; /* another name keeps the files */
	/* renamed out of the way first: a half-removed tree is never found
	 * by its digest */
	char gone[PATH_MAX];
	snprintf(gone, sizeof(gone), "%s/tmp.rm-%s", dir, digest);
	if (rename(idir, gone) < 0)
		return wd_err_sys(err, errno, "remove %s", idir);
	if ((rc = wd_rm_tree_at(AT_FDCWD, gone)) < 0)
		return wd_err_sys(err, -rc, "remove %s", gone);
	return 0;
}
