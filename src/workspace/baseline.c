/* workspace/baseline: what the host workspace held when the sandbox first
 * saw it, so apply can tell a host edit from the sandbox's.
 *
 * One record per entry of the workspace (directories, files, links):
 * path, type and mode, size, modification time in nanoseconds, inode.  A
 * host file whose record no longer matches has been changed (or replaced)
 * on the host since; if the sandbox changed it too, applying the sandbox's
 * version would lose the host's edit: a conflict.  Content hashes would
 * cost a read of the whole project at every create; metadata catches every
 * write through the file system (a write updates mtime, a rename-over
 * changes the inode) and errs on the safe side: a file touched on the
 * host with no change in content is a conflict too.
 *
 * The file (baseline, in the sandbox's state directory) is binary:
 * "WDBASE1\n", then per entry a 32-bit path length, the path, and mode,
 * size, mtime_ns and inode as 32/64-bit little-endian-as-stored fields;
 * sorted by path. */
#include "workspace/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static const char magic[8] = "WDBASE1\n";

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct ws_entry *)a)->path, ((const struct ws_entry *)b)->path);
}

static void
push(struct ws_baseline *b, const char *path, const struct stat *st)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 256;
		b->e = wd_xrealloc(b->e, b->cap * sizeof(*b->e));
	}
	b->e[b->n++] = (struct ws_entry){
	    .path = wd_xstrdup(path),
	    .mode = st->st_mode,
	    .size = (uint64_t)st->st_size,
	    .mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec,
	    .ino = (uint64_t)st->st_ino,
	};
}

/* Depth-first below dirfd (path: its relative name, "" at the root);
 * other file systems mounted inside are not entered. */
static int
walk(struct ws_baseline *b, int dirfd, char *path, size_t len, dev_t dev)
{
	int fd = openat(dirfd, len ? path : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES ? 0 : -errno; /* unreadable: not ours to see */
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
		size_t nl = strlen(de->d_name);
		if (len + nl + 2 >= PATH_MAX)
			continue; /* too deep to name: nothing can apply there either */
		size_t l2 = len ? len + 1 + nl : nl;
		if (len)
			path[len] = '/';
		memcpy(path + (len ? len + 1 : 0), de->d_name, nl + 1);
		struct stat st;
		if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			push(b, path, &st);
			if (S_ISDIR(st.st_mode) && st.st_dev == dev)
				rc = walk(b, dirfd, path, l2, dev);
		}
		path[len] = '\0';
	}
	closedir(d);
	return rc;
}

int
ws_baseline_record(int dirfd, int wsfd, struct wd_err *err)
{
	struct ws_baseline b = {0};
	wd_autoclose int root = openat(wsfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (root < 0 || fstat(root, &st) < 0)
		return wd_err_sys(err, errno, "read the workspace");
	char path[PATH_MAX] = "";
	int rc = walk(&b, root, path, 0, st.st_dev);
	if (rc < 0) {
		rc = wd_err_sys(err, -rc, "read the workspace");
	} else {
		if (b.n) /* qsort's base may not be NULL, even for no element */
			qsort(b.e, b.n, sizeof(*b.e), cmp_entry);
		rc = ws_baseline_save(dirfd, &b, err);
	}
	for (size_t i = 0; i < b.n; i++)
		free(b.e[i].path);
	free(b.e);
	return rc;
}

int
ws_baseline_save(int dirfd, const struct ws_baseline *b, struct wd_err *err)
{
	wd_autoclose int fd = openat(dirfd, "baseline.new",
				     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return wd_err_sys(err, errno, "write the baseline");
	FILE *f = fdopen(fd, "w");
	if (!f)
		return wd_err_sys(err, errno, "write the baseline");
	fd = -1; /* the FILE has it */
	fwrite(magic, 1, sizeof(magic), f);
	for (size_t i = 0; i < b->n; i++) {
		const struct ws_entry *e = &b->e[i];
		uint32_t pl = (uint32_t)strlen(e->path), mode = (uint32_t)e->mode;
		fwrite(&pl, sizeof(pl), 1, f);
		fwrite(e->path, 1, pl, f);
		fwrite(&mode, sizeof(mode), 1, f);
		fwrite(&e->size, sizeof(e->size), 1, f);
		fwrite(&e->mtime_ns, sizeof(e->mtime_ns), 1, f);
		fwrite(&e->ino, sizeof(e->ino), 1, f);
	}
	int rc = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dirfd, "baseline.new", dirfd, "baseline") < 0)
		rc = -errno;
	if (rc < 0) {
		unlinkat(dirfd, "baseline.new", 0);
		return wd_err_sys(err, -rc, "write the baseline");
	}
	return 0;
}

int
ws_baseline_load(int dirfd, struct ws_baseline **out, struct wd_err *err)
{
	int fd = openat(dirfd, "baseline", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "read the baseline");
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return wd_err_sys(err, errno, "read the baseline");
	}
	struct ws_baseline *b = wd_xcalloc(1, sizeof(*b));
	char m[sizeof(magic)];
	int rc = 0;
	if (fread(m, 1, sizeof(m), f) != sizeof(m) || memcmp(m, magic, sizeof(m))) {
		rc = wd_err_set(err, WD_E_INVAL, "the baseline is damaged (bad header)");
		goto out;
	}
	for (;;) {
		uint32_t pl, mode;
		if (fread(&pl, sizeof(pl), 1, f) != 1)
			break; /* the end */
		struct ws_entry e = {0};
		if (pl == 0 || pl >= PATH_MAX) {
			rc = wd_err_set(err, WD_E_INVAL, "the baseline is damaged");
			goto out;
		}
		e.path = wd_xmalloc(pl + 1);
		if (fread(e.path, 1, pl, f) != pl || fread(&mode, sizeof(mode), 1, f) != 1 ||
		    fread(&e.size, sizeof(e.size), 1, f) != 1 ||
		    fread(&e.mtime_ns, sizeof(e.mtime_ns), 1, f) != 1 ||
		    fread(&e.ino, sizeof(e.ino), 1, f) != 1) {
			free(e.path);
			rc = wd_err_set(err, WD_E_INVAL, "the baseline is damaged (short record)");
			goto out;
		}
		e.path[pl] = '\0';
		e.mode = (mode_t)mode;
		/* a NUL inside a path would save back as another (shorter)
		 * record, and lookups bisect: refuse both rather than answer
		 * "no baseline entry", which apply reads as "appeared since"
		 * (found by fuzz_ws_baseline) */
		if (strlen(e.path) != pl || (b->n && strcmp(b->e[b->n - 1].path, e.path) >= 0)) {
			free(e.path);
			rc =
			    wd_err_set(err, WD_E_INVAL,
				       "the baseline is damaged (a path with a NUL byte, or out of "
				       "order)");
			goto out;
		}
		if (b->n == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 256;
			b->e = wd_xrealloc(b->e, b->cap * sizeof(*b->e));
		}
		b->e[b->n++] = e;
	}
out:
	fclose(f);
	if (rc < 0) {
		ws_baseline_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

void
ws_baseline_free(struct ws_baseline *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		free(b->e[i].path);
	free(b->e);
	free(b);
}

const struct ws_entry *
ws_baseline_find(const struct ws_baseline *b, const char *path)
{
	struct ws_entry key = {.path = (char *)(uintptr_t)path};
	return b && b->n ? bsearch(&key, b->e, b->n, sizeof(*b->e), cmp_entry) : NULL;
}

void
ws_baseline_set(struct ws_baseline *b, const char *path, const struct stat *st)
{
	struct ws_entry *e = (struct ws_entry *)(uintptr_t)ws_baseline_find(b, path);
	if (e && !st) {
		free(e->path);
		size_t i = (size_t)(e - b->e);
		memmove(e, e + 1, (b->n - i - 1) * sizeof(*e));
		b->n--;
		return;
	}
	if (!st)
		return;
	if (e) {
		e->mode = st->st_mode;
		e->size = (uint64_t)st->st_size;
		e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
		e->ino = (uint64_t)st->st_ino;
		return;
	}
	/* in place, at its sorted position: a qsort of the whole table
	 * after each new entry made an apply of n new files cost n^2 log n
	 * (64,000 files: 400 s of the monitor's CPU) */
	size_t lo = 0, hi = b->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(b->e[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	push(b, path, st);
	struct ws_entry made = b->e[b->n - 1];
	memmove(&b->e[lo + 1], &b->e[lo], (b->n - 1 - lo) * sizeof(*b->e));
	b->e[lo] = made;
}
