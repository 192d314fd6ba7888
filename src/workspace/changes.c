/* workspace/changes: a cow sandbox's change set, read from its upper layer
 * against the host directory.
 *
 * overlayfs (with the options of layers.c) leaves three kinds of entry in
 * the upper layer:
 *
 *   a file, link or directory      written, created or copied up by the
 *                                  sandbox (a copy-up alone changes nothing:
 *                                  content and mode are compared with the
 *                                  host's, and equal ones are no change)
 *   a whiteout: a 0/0 char device  the lower entry of that name is deleted
 *   an opaque directory            trusted.overlay.opaque=y (an ordinary
 *                                  user's layers: user.overlay.opaque=y):
 *                                  nothing of the lower directory of that
 *                                  name shows
 *
 * So the walk goes over the upper layer only, looking up each name in the
 * host directory (the lower layer, live): its cost follows what the
 * sandbox wrote, not the size of the project.  Every host lookup is
 * beneath the workspace's descriptor with no symbolic link followed.
 *
 * Renames: a deleted file and an added file with the same content (and
 * type) are paired as a rename, as git pairs exact renames. */
#include "workspace/workspace.h"
#include "net/ossl.h"
#include "util/sha256.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

/* ---- the host side ---- */

static int
host_open(const struct ws *w, const char *path, int flags)
{
	return ws_open_beneath(w->wsfd, path, flags);
}

/* lstat of path in the host workspace: 0, -ENOENT, or -ELOOP when the way
 * there goes through a symbolic link. */
static int
host_lstat(const struct ws *w, const char *path, struct stat *st)
{
	int fd = host_open(w, path, O_PATH);
	if (fd < 0)
		return fd == -ENOTDIR ? -ENOENT : fd;
	int rc = fstat(fd, st) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* ---- building the set ---- */

/* An upper-layer inode with more than one link, hashed once: 150 links
 * to one 20 MB file were 150 reads of it per diff (docs/threat-model.md).
 * Found by a hash of the inode number, not a scan: a scan made 12,750
 * linked pairs (the inodes of a 512 MB disk) cost a diff 1.6e8 compares,
 * and the inodes of a larger disk quadratically more. */
struct seen_ino {
	uint64_t ino; /* 0: an empty slot (the root inode is never a file) */
	uint64_t size;
	char hash[65];
};

struct walker {
	struct ws *w;
	struct ws_changes *cs;
	char path[PATH_MAX];
	struct seen_ino *seen; /* open addressing, cap a power of two */
	size_t nseen, capseen;
	struct wd_err *err;
};

static size_t
seen_slot(const struct seen_ino *t, size_t cap, uint64_t ino)
{
	size_t i = (size_t)((ino * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
	while (t[i].ino && t[i].ino != ino)
		i = (i + 1) & (cap - 1);
	return i;
}

static const struct seen_ino *
seen_find(const struct walker *k, uint64_t ino)
{
	if (!k->capseen)
		return NULL;
	const struct seen_ino *s = &k->seen[seen_slot(k->seen, k->capseen, ino)];
	return s->ino == ino ? s : NULL;
}

static void
seen_add(struct walker *k, uint64_t ino, uint64_t size, const char hash[65])
{
	if (2 * (k->nseen + 1) > k->capseen) {
		size_t cap = k->capseen ? 2 * k->capseen : 64;
		struct seen_ino *t = wd_xcalloc(cap, sizeof(*t));
		for (size_t i = 0; i < k->capseen; i++)
			if (k->seen[i].ino)
				t[seen_slot(t, cap, k->seen[i].ino)] = k->seen[i];
		free(k->seen);
		k->seen = t;
		k->capseen = cap;
	}
	struct seen_ino *s = &k->seen[seen_slot(k->seen, k->capseen, ino)];
	if (!s->ino)
		k->nseen++;
	s->ino = ino;
	s->size = size;
	memcpy(s->hash, hash, sizeof(s->hash));
}

static struct ws_change *
add(struct walker *k, enum ws_status status, const char *path)
{
	struct ws_changes *cs = k->cs;
	if (cs->n == cs->cap) {
		cs->cap = cs->cap ? cs->cap * 2 : 64;
		cs->c = wd_xrealloc(cs->c, cs->cap * sizeof(*cs->c));
	}
	struct ws_change *c = &cs->c[cs->n++];
	memset(c, 0, sizeof(*c));
	c->status = status;
	c->path = wd_xstrdup(path);
	return c;
}

/* SHA-256 of what fd reads, into out; 0 or -errno.  Content is compared
 * by its hash: two files are equal when their SHA-256 are.  File contents
 * can be large: libcrypto's SHA-256 (SHA-NI here: 1,190 MB/s against
 * util/sha256.c's 320 MB/s on this VM kind) when it loads (net/ossl.h; a
 * diff is not on a cold start's path), else warden's own. */
struct ws_hasher {
	EVP_MD_CTX *e; /* NULL: warden's own */
	struct wd_sha256 c;
};

struct ws_hasher *
ws_hasher_new(void)
{
	struct ws_hasher *h = wd_xcalloc(1, sizeof(*h));
	if (wd_ossl_load(NULL) == 0) {
		h->e = EVP_MD_CTX_new();
		if (!h->e || EVP_DigestInit_ex(h->e, EVP_sha256(), NULL) != 1)
			abort(); /* libcrypto without SHA-256 is a broken invariant */
	} else {
		wd_sha256_init(&h->c);
	}
	return h;
}

void
ws_hasher_update(struct ws_hasher *h, const void *p, size_t n)
{
	if (h->e)
		EVP_DigestUpdate(h->e, p, n);
	else
		wd_sha256_update(&h->c, p, n);
}

void
ws_hasher_final(struct ws_hasher *h, char out[65])
{
	unsigned char d[32];
	unsigned dn = 32;
	if (h->e) {
		if (EVP_DigestFinal_ex(h->e, d, &dn) != 1 || dn != 32)
			abort();
		EVP_MD_CTX_free(h->e);
	} else {
		wd_sha256_final(&h->c, d);
	}
	wd_sha256_hex(d, out);
	free(h);
}

/* SHA-256 of what fd reads, into out; 0 or -errno.  Content is compared
 * by its hash: two files are equal when their SHA-256 are.  File contents
 * can be large: libcrypto's SHA-256 (SHA-NI here: 1,190 MB/s against
 * util/sha256.c's 320 MB/s on this VM kind) when it loads (net/ossl.h; a
 * diff is not on a cold start's path), else warden's own. */
static int
hash_fd(int fd, char out[65])
{
	/* On the heap, not in thread-local storage: a 64 KiB __thread
	 * buffer made the static TLS of every process and thread linking
	 * libwarden 128 KiB (with apply.c's), which ld.so and
	 * pthread_create zero: 32 page faults at each `warden run` start,
	 * copied into pid 1.  Measured: `warden run -- /bin/true` 244 -> 218
	 * page faults (perf stat -r 40), its added time 0.996 [0.994-0.999]
	 * of before (bench/spawn.sh SPAWN_BEFORE, three series of 200 at load
	 * 5-12); the static-tls test keeps it small. */
	enum { HASH_BUF = 65536 };
	wd_autofree char *buf = wd_xmalloc(HASH_BUF);
	struct ws_hasher *h = ws_hasher_new();
	int rc = 0;
	for (;;) {
		ssize_t n = read(fd, buf, HASH_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = -errno;
		if (n <= 0)
			break;
		ws_hasher_update(h, buf, (size_t)n);
	}
	ws_hasher_final(h, out);
	return rc;
}

static void
hash_text(const char *s, size_t n, char out[65])
{
	wd_sha256_hex_of(s, n, out);
}

static void
hash_link_at(int dirfd, const char *name, char out[65], uint64_t *size)
{
	char t[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, t, sizeof(t));
	if (n < 0)
		n = 0;
	hash_text(t, (size_t)n, out);
	*size = (uint64_t)n;
}

/* Every entry of the host tree at path: deleted (a whiteout or an opaque
 * directory hid it).  Directories after their contents don't matter here:
 * the set is sorted, and apply orders deletions itself. */
static int
deleted_tree(struct walker *k, const char *path, const struct stat *hst)
{
	struct ws_change *c = add(k, WS_DELETED, path);
	c->old_mode = hst->st_mode;
	c->old_size = S_ISDIR(hst->st_mode) ? 0 : (uint64_t)hst->st_size;
	if (S_ISREG(hst->st_mode)) {
		int fd = host_open(k->w, path, O_RDONLY);
		if (fd >= 0) {
			hash_fd(fd, c->old_hash);
			close(fd);
		}
	} else if (S_ISLNK(hst->st_mode)) {
		int pfd = host_open(k->w, path, O_PATH);
		if (pfd >= 0) {
			hash_link_at(pfd, "", c->old_hash, &c->old_size);
			close(pfd);
		}
	}
	if (!S_ISDIR(hst->st_mode))
		return 0;
	int fd = host_open(k->w, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 0; /* unreadable: only the directory itself is listed */
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *sub = wd_xasprintf("%s/%s", path, de->d_name);
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			rc = deleted_tree(k, sub, &st);
		free(sub);
	}
	closedir(d);
	return rc;
}

/* An opaque directory hides the host's entries it does not have itself. */
static int
opaque_deletions(struct walker *k, int udir, const char *path)
{
	int fd = host_open(k->w, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		struct stat st, ust;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(udir, de->d_name, &ust, AT_SYMLINK_NOFOLLOW) == 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		char *sub = wd_xasprintf("%s/%s", path, de->d_name);
		rc = deleted_tree(k, sub, &st);
		free(sub);
	}
	closedir(d);
	return rc;
}

static bool
is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0;
}

/* A file or link of the upper layer against the host's (hst, or absent). */
static int
leaf(struct walker *k, int udir, const char *name, const struct stat *ust, int hrc,
     const struct stat *hst)
{
	const char *path = k->path;
	bool same_type = hrc == 0 && (ust->st_mode & S_IFMT) == (hst->st_mode & S_IFMT);
	char nh[65] = "", oh[65] = "";
	uint64_t nsize = (uint64_t)ust->st_size, osize = hrc == 0 ? (uint64_t)hst->st_size : 0;
	int equal = 0;
	if (S_ISLNK(ust->st_mode)) {
		hash_link_at(udir, name, nh, &nsize);
		if (hrc == 0 && S_ISLNK(hst->st_mode)) {
			int pfd = host_open(k->w, path, O_PATH);
			if (pfd >= 0) {
				hash_link_at(pfd, "", oh, &osize);
				close(pfd);
			}
			equal = !strcmp(nh, oh);
		}
	} else {
		/* O_NONBLOCK: the sandbox may have swapped a FIFO in since the
		 * fstatat above, and opening a FIFO for reading waits for a
		 * writer: that hung this diff and every later one (docs/threat-model.md).
		 * What was opened is checked again: a regular file or not
		 * read at all. */
		wd_autoclose int u =
		    openat(udir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat ost;
		if (u < 0 && errno != ENXIO && errno != ELOOP)
			return wd_err_sys(k->err, errno, "read %s in the sandbox", path);
		if (u < 0 || fstat(u, &ost) < 0 || !S_ISREG(ost.st_mode)) {
			struct ws_change *c = add(k, hrc == 0 ? WS_MODIFIED : WS_ADDED, path);
			c->new_mode = u >= 0 && fstat(u, &ost) == 0 ? ost.st_mode : S_IFIFO;
			c->unsupported = true; /* listed, never applied */
			if (hrc == 0)
				c->old_mode = hst->st_mode;
			return 0;
		}
		nsize = (uint64_t)ost.st_size;
		wd_autoclose int h =
		    hrc == 0 && S_ISREG(hst->st_mode) ? host_open(k->w, path, O_RDONLY) : -1;
		if (hrc == 0 && S_ISREG(hst->st_mode) && h < 0)
			return wd_err_sys(k->err, -h, "read %s in the workspace", path);
		const struct seen_ino *si = ost.st_nlink > 1 ? seen_find(k, ost.st_ino) : NULL;
		int rc = 0;
		if (si) {
			memcpy(nh, si->hash, sizeof(nh));
			nsize = si->size;
			goto hashed;
		}
		rc = hash_fd(u, nh);
		struct stat after;
		/* the size said is the size hashed (a writer still at work
		 * shows as a mismatch at apply, which re-hashes) */
		if (rc == 0 && fstat(u, &after) == 0)
			nsize = (uint64_t)after.st_size;
		if (rc == 0 && ost.st_nlink > 1)
			seen_add(k, (uint64_t)ost.st_ino, nsize, nh);
	hashed:
		if (rc == 0 && h >= 0)
			rc = hash_fd(h, oh);
		if (rc < 0)
			return wd_err_sys(k->err, -rc, "read %s", path);
		equal = same_type && h >= 0 && !strcmp(nh, oh);
	}
	if (hrc == 0 && S_ISDIR(hst->st_mode)) {
		/* a directory replaced by a file or link */
		int rc = deleted_tree(k, path, hst);
		if (rc < 0)
			return rc;
		hrc = -ENOENT;
		same_type = false;
	}
	if (same_type && equal && (ust->st_mode & 07777) == (hst->st_mode & 07777))
		return 0; /* copied up, nothing changed */
	enum ws_status s = hrc != 0 ? WS_ADDED : (same_type && equal) ? WS_MODE : WS_MODIFIED;
	struct ws_change *c = add(k, s, path);
	c->new_mode = ust->st_mode;
	c->new_size = nsize;
	memcpy(c->new_hash, nh, sizeof(nh));
	if (S_ISREG(ust->st_mode) && ust->st_nlink > 1)
		c->ino = (uint64_t)ust->st_ino;
	if (hrc == 0) {
		c->old_mode = hst->st_mode;
		c->old_size = osize;
		memcpy(c->old_hash, oh, sizeof(oh));
	}
	return 0;
}

static int walk(struct walker *k, int udir, size_t len, bool host_dir);

static int
entry(struct walker *k, int udir, const char *name, bool host_dir)
{
	struct stat ust, hst;
	if (fstatat(udir, name, &ust, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : wd_err_sys(k->err, errno, "%s", k->path);
	int hrc = host_dir ? host_lstat(k->w, k->path, &hst) : -ENOENT;
	if (hrc < 0 && hrc != -ENOENT) {
		if (hrc != -ELOOP)
			return wd_err_sys(k->err, -hrc, "%s in the workspace", k->path);
		hrc = -ENOENT; /* the host's way there is a link: none of ours */
	}
	if (is_whiteout(&ust))
		return hrc == 0 ? deleted_tree(k, k->path, &hst) : 0;
	if (S_ISREG(ust.st_mode) || S_ISLNK(ust.st_mode))
		return leaf(k, udir, name, &ust, hrc, &hst);
	if (!S_ISDIR(ust.st_mode)) {
		/* a FIFO, socket or device the sandbox made: listed, never applied */
		struct ws_change *c = add(k, hrc == 0 ? WS_MODIFIED : WS_ADDED, k->path);
		c->new_mode = ust.st_mode;
		c->unsupported = true;
		if (hrc == 0)
			c->old_mode = hst.st_mode;
		return 0;
	}
	bool host_is_dir = hrc == 0 && S_ISDIR(hst.st_mode);
	int rc = 0;
	if (hrc == 0 && !host_is_dir) {
		/* a file or link replaced by a directory */
		if ((rc = deleted_tree(k, k->path, &hst)) < 0)
			return rc;
	}
	if (!host_is_dir) {
		struct ws_change *c = add(k, WS_ADDED, k->path);
		c->new_mode = ust.st_mode;
	} else if ((ust.st_mode & 07777) != (hst.st_mode & 07777)) {
		struct ws_change *c = add(k, WS_MODE, k->path);
		c->new_mode = ust.st_mode;
		c->old_mode = hst.st_mode;
	}
	wd_autoclose int sub = openat(udir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return wd_err_sys(k->err, errno, "%s in the sandbox", k->path);
	char val[4] = "";
	/* The mark in the namespace the overlay was mounted with, and only
	 * that one: under a root-mounted overlay user.overlay.opaque is an
	 * ordinary xattr the sandbox can set, and reading it here would let
	 * it forge deletions of host files it still sees.  Under userxattr
	 * (an ordinary user's layers) overlayfs refuses the sandbox any
	 * user.overlay.* name, and trusted.* needs CAP_SYS_ADMIN on the
	 * host.  overlayfs writes no xattr whiteout (user.overlay.whiteout)
	 * in an upper layer: it only reads them in lower ones, so a file
	 * carrying one here is a file. */
	const char *opaque = k->w->user_layers ? "user.overlay.opaque" : "trusted.overlay.opaque";
	ssize_t vn = fgetxattr(sub, opaque, val, sizeof(val));
	if (host_is_dir && vn == 1 && val[0] == 'y' && (rc = opaque_deletions(k, sub, k->path)) < 0)
		return rc;
	return walk(k, sub, strlen(k->path), host_is_dir);
}

/* The upper directory udir, whose path (relative) is k->path[0..len). */
static int
walk(struct walker *k, int udir, size_t len, bool host_dir)
{
	int dfd = fcntl(udir, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return wd_err_sys(k->err, errno, "dup");
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return wd_err_sys(k->err, errno, "read the upper layer");
	}
	rewinddir(d);
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		size_t nl = strlen(de->d_name);
		if (len + nl + 2 >= sizeof(k->path))
			continue;
		if (len)
			k->path[len] = '/';
		memcpy(k->path + (len ? len + 1 : 0), de->d_name, nl + 1);
		rc = entry(k, udir, de->d_name, host_dir);
		k->path[len] = '\0';
	}
	closedir(d);
	return rc;
}

static int
cmp_change(const void *a, const void *b)
{
	return strcmp(((const struct ws_change *)a)->path, ((const struct ws_change *)b)->path);
}

/* Deleted candidates for find_renames, ordered by type, content, then
 * position: the first unpaired one of a kind is the earliest. */
static int
cmp_deleted(const void *a, const void *b, void *arg)
{
	const struct ws_changes *cs = arg;
	const struct ws_change *x = &cs->c[*(const size_t *)a];
	const struct ws_change *y = &cs->c[*(const size_t *)b];
	unsigned tx = x->old_mode & S_IFMT, ty = y->old_mode & S_IFMT;
	if (tx != ty)
		return tx < ty ? -1 : 1;
	int r = strcmp(x->old_hash, y->old_hash);
	if (r)
		return r;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Pair deleted and added files of the same content and type: each added
 * file, in order, takes the earliest deleted one not yet taken.  Sorted
 * and searched, not scanned: a scan of every change for every added file
 * made a diff of 45,500 empty files (a 512 MB disk's inodes) take 5.6 s
 * of CPU in the monitor, and the inodes of a larger disk quadratically
 * more, for each diff and apply (docs/threat-model.md, "Review -> apply"). */
static void
find_renames(struct ws_changes *cs)
{
	size_t nd = 0;
	for (size_t j = 0; j < cs->n; j++)
		if (cs->c[j].status == WS_DELETED && cs->c[j].old_hash[0])
			nd++;
	if (nd) {
		size_t *del = wd_xcalloc(nd, sizeof(*del));
		size_t *next =
		    wd_xcalloc(nd, sizeof(*next)); /* at a run's start: its first untaken */
		nd = 0;
		for (size_t j = 0; j < cs->n; j++)
			if (cs->c[j].status == WS_DELETED && cs->c[j].old_hash[0])
				del[nd++] = j;
		qsort_r(del, nd, sizeof(*del), cmp_deleted, cs);
		for (size_t r = 0; r < nd; r++)
			next[r] = r;
		for (size_t i = 0; i < cs->n; i++) {
			struct ws_change *a = &cs->c[i];
			if (a->status != WS_ADDED || !a->new_hash[0] || a->unsupported)
				continue;
			/* the first of the run of this type and content */
			size_t lo = 0, hi = nd;
			unsigned ta = a->new_mode & S_IFMT;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				const struct ws_change *d = &cs->c[del[mid]];
				unsigned td = d->old_mode & S_IFMT;
				int r = td != ta ? (td < ta ? -1 : 1)
						 : strcmp(d->old_hash, a->new_hash);
				if (r < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo == nd)
				continue;
			struct ws_change *first = &cs->c[del[lo]];
			if ((first->old_mode & S_IFMT) != ta ||
			    strcmp(first->old_hash, a->new_hash))
				continue;
			size_t t = next[lo];
			if (t == nd)
				continue; /* all of this kind are taken */
			struct ws_change *d = &cs->c[del[t]];
			if ((d->old_mode & S_IFMT) != ta || strcmp(d->old_hash, a->new_hash)) {
				next[lo] = nd;
				continue;
			}
			next[lo] = t + 1;
			a->status = WS_RENAMED;
			a->old_path = d->path;
			a->old_mode = d->old_mode;
			a->old_size = d->old_size;
			memcpy(a->old_hash, d->old_hash, sizeof(a->old_hash));
			/* dropped below; its type and hash stay as they are, the
			 * order del is searched in */
			d->path = NULL;
		}
		free(del);
		free(next);
	}
	size_t o = 0;
	for (size_t i = 0; i < cs->n; i++)
		if (cs->c[i].path)
			cs->c[o++] = cs->c[i];
	cs->n = o;
}

static bool
under(const char *path, const char *p)
{
	size_t n = strlen(p);
	return !strncmp(path, p, n) && (path[n] == '\0' || path[n] == '/');
}

/* The host changed path since the sandbox first saw it (the baseline). */
static bool
host_changed(const struct ws *w, const char *path)
{
	const struct ws_entry *b = ws_baseline_find(w->base, path);
	struct stat st;
	int rc = host_lstat(w, path, &st);
	if (rc < 0)
		return b != NULL; /* gone (or unreachable) since */
	if (!b)
		return true; /* appeared since */
	if ((b->mode & S_IFMT) != (st.st_mode & S_IFMT) ||
	    (b->mode & 07777) != (st.st_mode & 07777))
		return true;
	if (S_ISDIR(st.st_mode))
		return false; /* a directory's own size and time follow its entries */
	int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	return b->size != (uint64_t)st.st_size || b->mtime_ns != mt || b->ino != st.st_ino;
}

static void
flag(struct ws *w, struct ws_changes *cs)
{
	/* the host's implied entries, walked once for the set: a walk per
	 * change reads up to 1,024 directories each time */
	struct ws_implied im;
	ws_implied_collect(w->wsfd, w->workspace, (const char *const *)w->protect, w->nprotect,
			   &im);
	for (size_t i = 0; i < cs->n; i++) {
		struct ws_change *c = &cs->c[i];
		/* the same question the file tools ask (ws_path_protected): at or
		 * below a protected path, any .git, or an ancestor of a
		 * protected path that stops being a directory; a rename's old
		 * path goes away */
		const char *const *pl = (const char *const *)w->protect;
		bool stays = S_ISDIR(c->new_mode) && (!c->old_mode || S_ISDIR(c->old_mode)) &&
			     c->status != WS_RENAMED && c->status != WS_DELETED;
		c->protect =
		    ws_path_protected(pl, w->nprotect, c->path, stays, NULL) ||
		    (c->old_path && ws_path_protected(pl, w->nprotect, c->old_path, false, NULL));
		/* and what they imply on the host now (a gitfile's target
		 * named anything, "repo.git"): not trusted to the jail's
		 * read-only mounts alone; a walk that fails refuses */
		char imp[PATH_MAX];
		const int views[] = {w->wsfd, w->upper, w->ovl};
		if (!c->protect)
			c->protect = ws_path_in_gitdir(views, 3, c->path, imp, sizeof(imp)) != 0 ||
				     (c->old_path && ws_path_in_gitdir(views, 3, c->old_path, imp,
								       sizeof(imp)) != 0);
		if (!c->protect)
			c->protect =
			    ws_implied_match(&im, c->path, stays, NULL, imp, sizeof(imp)) != 0 ||
			    (c->old_path && ws_implied_match(&im, c->old_path, false, NULL, imp,
							     sizeof(imp)) != 0);
		c->conflict =
		    host_changed(w, c->path) || (c->old_path && host_changed(w, c->old_path));
	}
	ws_implied_fini(&im);
}

void
ws_changes_free(struct ws_changes *cs)
{
	if (!cs)
		return;
	for (size_t i = 0; i < cs->n; i++) {
		free(cs->c[i].path);
		free(cs->c[i].old_path);
	}
	for (size_t i = 0; i < cs->nig; i++)
		free(cs->ig[i].name);
	free(cs->ig);
	free(cs->c);
	free(cs);
}

/* ---- ignored changes ----
 *
 * Which rules decide what a review leaves out: the HOST's ignore files
 * (.gitignore in the real directory, its .git/info/exclude), never the
 * upper layer's.  The model writes its sandbox's .gitignore; were those
 * rules the ones that counted, a model could ignore src/evil.c and then
 * change it, and the human would see one line about a .gitignore, not
 * the change.  So: the rules are read beneath w->wsfd only; a changed or
 * added .gitignore is itself never ignored (unless its directory is),
 * so the new rules are shown in full before they can count; and an
 * ignored change is not applied without WS_CHANGES_ALL, the selection the
 * digest names, so whatever a summary line hides never lands unseen.
 * tests/integration/gitignore.sh proves each. */
static bool
ignored_path(struct ws_ignore *ig, const char *rel, bool isdir)
{
	const char *base = strrchr(rel, '/');
	if (!strcmp(base ? base + 1 : rel, ".gitignore") && !isdir) {
		if (!base)
			return false;
		char *dir = wd_xstrdup(rel);
		dir[base - rel] = '\0';
		bool ex = ws_ignore_match(ig, dir, true);
		free(dir);
		return ex;
	}
	return ws_ignore_match(ig, rel, isdir);
}

static void
mark_ignored(struct ws *w, struct ws_changes *cs)
{
	struct ws_ignore *ig = ws_ignore_new(w->wsfd);
	for (size_t i = 0; i < cs->n; i++) {
		struct ws_change *c = &cs->c[i];
		mode_t m = c->status == WS_DELETED ? c->old_mode : c->new_mode;
		/* a rename is ignored only when both its ends are: its old
		 * path goes away on the host */
		c->ignored = ignored_path(ig, c->path, S_ISDIR(m)) &&
			     (!c->old_path || ignored_path(ig, c->old_path, S_ISDIR(c->old_mode)));
	}
	ws_ignore_free(ig);
}

struct igkey {
	char *path; /* the change's (owned here once it is out of the set) */
	char *old_path;
	size_t len;  /* of its first component */
	bool dir;    /* the first component is a directory */
	bool counts; /* not a directory itself */
	uint64_t bytes;
};

static int
cmp_igkey(const void *a, const void *b)
{
	const struct igkey *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int r = memcmp(x->path, y->path, n);
	if (r)
		return r;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return (int)x->dir - (int)y->dir;
}

/* Take the ignored changes out of cs, summarised per top-level entry
 * (sorted, then merged: one pass however many there are). */
static void
leave_out_ignored(struct ws_changes *cs)
{
	size_t nk = 0;
	for (size_t i = 0; i < cs->n; i++)
		nk += cs->c[i].ignored;
	if (!nk)
		return;
	struct igkey *k = wd_xcalloc(nk, sizeof(*k));
	size_t o = 0, j = 0;
	for (size_t i = 0; i < cs->n; i++) {
		struct ws_change *c = &cs->c[i];
		if (!c->ignored) {
			cs->c[o++] = *c;
			continue;
		}
		mode_t m = c->status == WS_DELETED ? c->old_mode : c->new_mode;
		const char *sl = strchr(c->path, '/');
		k[j] = (struct igkey){
		    .path = c->path,
		    .old_path = c->old_path,
		    .len = sl ? (size_t)(sl - c->path) : strlen(c->path),
		    .dir = sl || S_ISDIR(m),
		    .counts = !S_ISDIR(m),
		    .bytes = c->status == WS_DELETED || !S_ISREG(c->new_mode) ? 0 : c->new_size,
		};
		j++;
	}
	qsort(k, nk, sizeof(*k), cmp_igkey);
	cs->ig = wd_xcalloc(nk, sizeof(*cs->ig));
	for (size_t i = 0; i < nk; i++) {
		if (!cs->nig || cmp_igkey(&k[i], &k[i - 1])) {
			struct ws_ignored *g = &cs->ig[cs->nig++];
			g->name =
			    wd_xasprintf("%.*s%s", (int)k[i].len, k[i].path, k[i].dir ? "/" : "");
		}
		struct ws_ignored *g = &cs->ig[cs->nig - 1];
		g->files += k[i].counts;
		g->bytes += k[i].bytes;
	}
	for (size_t i = 0; i < nk; i++) {
		free(k[i].path);
		free(k[i].old_path);
	}
	free(k);
	cs->n = o;
}

/* Keep the changes at or below one of paths; each path must match one. */
static int
select_paths(struct ws_changes *cs, const char *const *paths, size_t np, struct wd_err *err)
{
	bool *keep = wd_xcalloc(cs->n + 1, sizeof(bool));
	int rc = 0;
	for (size_t p = 0; p < np && rc == 0; p++) {
		char *rel = ws_relpath(paths[p]);
		if (!rel) {
			rc = wd_err_set(
			    err, WD_E_INVAL,
			    "path '%s': give a path relative to the workspace, without ..",
			    paths[p]);
			break;
		}
		bool any = false;
		for (size_t i = 0; i < cs->n; i++)
			if (under(cs->c[i].path, rel) ||
			    (cs->c[i].old_path && under(cs->c[i].old_path, rel)))
				keep[i] = any = true;
		if (!any) {
			wd_err_set(err, WD_E_INVAL, "no change at '%s' (warden diff lists them)",
				   paths[p]);
			rc = -ENOENT;
		}
		free(rel);
	}
	if (rc == 0) {
		size_t o = 0;
		for (size_t i = 0; i < cs->n; i++) {
			if (keep[i]) {
				cs->c[o++] = cs->c[i];
			} else {
				free(cs->c[i].path);
				free(cs->c[i].old_path);
			}
		}
		cs->n = o;
	}
	free(keep);
	return rc;
}

/* Each change with the inode of an earlier one (by path) is a hard link
 * to it: apply writes the content once and links the rest, and the diff
 * shows the content once.  Then the bytes an apply writes. */
static bool
writes(const struct ws_change *c)
{
	return S_ISREG(c->new_mode) && !c->unsupported &&
	       (c->status == WS_ADDED || c->status == WS_MODIFIED || c->status == WS_RENAMED);
}

static int
cmp_ino(const void *a, const void *b, void *arg)
{
	const struct ws_changes *cs = arg;
	const struct ws_change *x = &cs->c[*(const size_t *)a];
	const struct ws_change *y = &cs->c[*(const size_t *)b];
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Grouped by inode (sorted), not scanned: a scan of the earlier changes
 * for each linked one was quadratic in the links (see find_renames). */
static void
find_links(struct ws_changes *cs)
{
	cs->bytes = 0;
	size_t nl = 0;
	for (size_t i = 0; i < cs->n; i++) {
		cs->c[i].link_to = NULL;
		if (writes(&cs->c[i]) && cs->c[i].ino)
			nl++;
	}
	if (nl) {
		size_t *ix = wd_xcalloc(nl, sizeof(*ix));
		nl = 0;
		for (size_t i = 0; i < cs->n; i++)
			if (writes(&cs->c[i]) && cs->c[i].ino)
				ix[nl++] = i;
		qsort_r(ix, nl, sizeof(*ix), cmp_ino, cs);
		/* the earliest change of an inode is written, the rest link to it */
		for (size_t r = 1; r < nl; r++)
			if (cs->c[ix[r]].ino == cs->c[ix[r - 1]].ino)
				cs->c[ix[r]].link_to = cs->c[ix[r - 1]].link_to
							   ? cs->c[ix[r - 1]].link_to
							   : cs->c[ix[r - 1]].path;
		free(ix);
	}
	for (size_t i = 0; i < cs->n; i++)
		if (writes(&cs->c[i]) && !cs->c[i].link_to)
			cs->bytes += cs->c[i].new_size;
}

void
ws_changes_digest(const struct ws_changes *cs, char out[65])
{
	/* One line per change, every field that decides what apply writes
	 * or what the human was shown; paths are length-prefixed, so no name
	 * (a newline in it, say) can forge a field boundary. */
	struct wd_sha256 h;
	wd_sha256_init(&h);
	/* the selection first: a digest of the set without the ignored
	 * changes never matches the set with them (apply --all --expect of a
	 * default review applies nothing, and the other way round) */
	if (cs->all)
		wd_sha256_update(&h, "warden-changes-1 all\n", 21);
	else
		wd_sha256_update(&h, "warden-changes-1\n", 17);
	for (size_t i = 0; i < cs->n; i++) {
		const struct ws_change *c = &cs->c[i];
		char line[512];
		const char *op = c->old_path ? c->old_path : "";
		const char *lt = c->link_to ? c->link_to : "";
		int n =
		    snprintf(line, sizeof(line), "%d %zu:%zu:%zu: %o %o %llu %llu %s %s %d%d%d%d\n",
			     (int)c->status, strlen(c->path), strlen(op), strlen(lt),
			     (unsigned)c->old_mode, (unsigned)c->new_mode,
			     (unsigned long long)c->old_size, (unsigned long long)c->new_size,
			     c->old_hash[0] ? c->old_hash : "-", c->new_hash[0] ? c->new_hash : "-",
			     c->protect, c->conflict, c->unsupported, c->ignored);
		wd_sha256_update(&h, line, (size_t)n);
		wd_sha256_update(&h, c->path, strlen(c->path));
		wd_sha256_update(&h, op, strlen(op));
		wd_sha256_update(&h, lt, strlen(lt));
	}
	/* and the summary lines the human was shown in their place */
	for (size_t i = 0; i < cs->nig; i++) {
		char line[128];
		int n =
		    snprintf(line, sizeof(line), "ignored %zu: %zu %llu\n", strlen(cs->ig[i].name),
			     cs->ig[i].files, (unsigned long long)cs->ig[i].bytes);
		wd_sha256_update(&h, line, (size_t)n);
		wd_sha256_update(&h, cs->ig[i].name, strlen(cs->ig[i].name));
	}
	unsigned char d[32];
	wd_sha256_final(&h, d);
	wd_sha256_hex(d, out);
}

int
ws_changes(struct ws *w, const char *const *paths, size_t npaths, unsigned flags,
	   struct ws_changes **out, struct wd_err *err)
{
	if (!w->cow)
		return wd_err_set(err, WD_E_INVAL,
				  "the sandbox's workspace is direct: its changes are on the host "
				  "already (create it with --workspace-mode cow)");
	if (!w->base) {
		int rc = ws_baseline_load(w->dirfd, &w->base, err);
		if (rc < 0)
			return rc;
	}
	struct ws_changes *cs = wd_xcalloc(1, sizeof(*cs));
	struct walker k = {.w = w, .cs = cs, .err = err};
	int rc = walk(&k, w->upper, 0, true);
	if (rc == 0) {
		find_renames(cs);
		if (cs->n)
			qsort(cs->c, cs->n, sizeof(*cs->c), cmp_change);
		flag(w, cs);
		if (npaths)
			rc = select_paths(cs, paths, npaths, err);
	}
	if (rc == 0) {
		mark_ignored(w, cs);
		cs->all = flags & WS_CHANGES_ALL;
		if (!cs->all)
			leave_out_ignored(cs);
	}
	free(k.seen);
	if (rc == 0) {
		find_links(cs);
		ws_changes_digest(cs, cs->digest);
	}
	if (rc < 0) {
		ws_changes_free(cs);
		return rc;
	}
	*out = cs;
	return 0;
}
