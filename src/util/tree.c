/* util/tree: a fingerprint of a directory tree's state, for approvals.
 *
 * A human approves a paused command after reading what it will read (the
 * script `python3 build.py` runs); the approval must not then be spent on
 * another state of those files.  The fingerprint is a SHA-256 over every
 * entry below a directory, in name order: its depth and name (the tree's
 * shape, as a walk in that order gives it: a path is never hashed whole,
 * so a deep chain of long names costs no more per entry than a flat
 * directory), type and mode, owner, size, inode, link count, device
 * number, modification and change times (ns) and a link's target.
 * No content is read: a write moves the change time, which no process
 * can set back (utimensat sets the modification time, not ctime), so a
 * same-size rewrite with the old mtime is still seen.  A write through a
 * shared mapping moves it at the page's first write fault only: the
 * caller refuses to print a sandbox in which a process still runs
 * (core_own_trees).  Nothing is followed (links are named, never
 * entered).
 *
 * A walk that cannot see everything (a directory it may not list, an
 * entry gone between the listing and its stat, a tree deeper than
 * TREE_MAX_DEPTH) must never match a later walk that saw other content:
 * it folds in 16 random bytes, so that state can be approved by no one
 * (a pause again, never a run of what nobody saw), says so, and stops:
 * nothing walked after that could make the print match, and a model
 * that made many places unreadable must not make the host walk on.
 *
 * The walk is bounded (max_entries over every tree of one print): the
 * model chooses how many files there are, and each pause and retry walks
 * them all on the host, outside any sandbox's limits.  Past the bound the
 * walk stops, incomplete: a state too big to print can be approved by no
 * one (fail closed), and no pause costs the host more than the bound's
 * walk. */
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TREE_MAX_DEPTH 256

static void
feed_u64(struct wd_sha256 *c, uint64_t v)
{
	unsigned char le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(v >> (8 * i));
	wd_sha256_update(c, le, sizeof(le));
}

static void
feed_str(struct wd_sha256 *c, const char *s, size_t n)
{
	feed_u64(c, n);
	wd_sha256_update(c, s, n);
}

/* What an entry's stat says of its state (see the header comment) */
static void
feed_stat(struct wd_sha256 *c, const struct stat *st)
{
	uint64_t rec[] = {st->st_mode,
			  st->st_uid,
			  st->st_gid,
			  (uint64_t)st->st_size,
			  st->st_ino,
			  st->st_nlink,
			  st->st_rdev,
			  (uint64_t)st->st_mtim.tv_sec,
			  (uint64_t)st->st_mtim.tv_nsec,
			  (uint64_t)st->st_ctim.tv_sec,
			  (uint64_t)st->st_ctim.tv_nsec};
	for (size_t k = 0; k < WD_ARRAY_SIZE(rec); k++)
		feed_u64(c, rec[k]);
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
incomplete(struct wd_tree_print *t, const char *path)
{
	unsigned char nonce[16];
	size_t got = 0;
	while (got < sizeof(nonce)) {
		ssize_t n = getrandom(nonce + got, sizeof(nonce) - got, 0);
		if (n < 0 && errno != EINTR)
			abort(); /* no randomness: no fingerprint that could be trusted */
		if (n > 0)
			got += (size_t)n;
	}
	wd_sha256_update(&t->sha, "incomplete", 10);
	wd_sha256_update(&t->sha, nonce, sizeof(nonce));
	if (t->complete)
		snprintf(t->unseen, sizeof(t->unseen), "%s", path[0] ? path : ".");
	t->complete = false;
	t->stopped = true;
}

/* Entry name of directory path could not be seen */
static void
unseen(struct wd_tree_print *t, const char *path, const char *name)
{
	char *sub = path[0] ? wd_xasprintf("%s/%s", path, name) : wd_xstrdup(name);
	incomplete(t, sub);
	free(sub);
}

/* Is the bound reached?  Then the print is incomplete once, and stopped. */
static bool
at_bound(struct wd_tree_print *t)
{
	if (t->stopped)
		return true;
	if (!t->max_entries || t->entries < t->max_entries)
		return false;
	char what[64];
	snprintf(what, sizeof(what), "more than %llu entries", (unsigned long long)t->max_entries);
	incomplete(t, what);
	t->bounded = true;
	return true;
}

/* dfd: an open directory; path: its path below the root ("" for the root) */
static void
walk(struct wd_tree_print *t, int dfd, const char *path, int depth)
{
	if (t->stopped) {
		close(dfd);
		return;
	}
	if (depth > TREE_MAX_DEPTH) {
		close(dfd);
		incomplete(t, path);
		return;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		incomplete(t, path);
		return;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	errno = 0;
	while (!t->stopped && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* one name past the bound is enough to know it is passed: a
		 * directory of millions is not read whole into memory */
		if (t->max_entries && t->entries + n > t->max_entries)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			names = wd_xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = wd_xstrdup(e->d_name);
	}
	if (errno)
		incomplete(t, path);
	if (n > 1) /* qsort of NULL, 0 is undefined */
		qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n && !at_bound(t); i++) {
		struct stat st;
		/* Why every name counts before its stat: a name whose stat
		 * fails (a directory listable but not searchable) must cost
		 * the bound too, or such directories would be walked free */
		t->entries++;
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			unseen(t, path, names[i]);
			continue;
		}
		/* the depth and the name, never the whole path: the walk's
		 * order makes (depth, name) in sequence the tree's shape, and
		 * a path of 250 levels of 255-byte names would make each entry
		 * below them cost 64 KiB of hashing */
		feed_u64(&t->sha, (uint64_t)depth);
		feed_str(&t->sha, names[i], strlen(names[i]));
		feed_stat(&t->sha, &st);
		if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t l = readlinkat(dirfd(d), names[i], target, sizeof(target));
			if (l < 0)
				unseen(t, path, names[i]);
			else
				feed_str(&t->sha, target, (size_t)l);
		} else if (S_ISDIR(st.st_mode)) {
			int sfd = openat(dirfd(d), names[i],
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd < 0) {
				unseen(t, path, names[i]);
			} else {
				/* a directory's path is made for its own walk (what
				 * it names when it cannot be seen), not per entry */
				char *sub = path[0] ? wd_xasprintf("%s/%s", path, names[i])
						    : wd_xstrdup(names[i]);
				walk(t, sfd, sub, depth + 1);
				free(sub);
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
}

void
wd_tree_print_init(struct wd_tree_print *t)
{
	memset(t, 0, sizeof(*t));
	wd_sha256_init(&t->sha);
	t->complete = true;
}

void
wd_tree_print_add(struct wd_tree_print *t, const char *label, int dirfd)
{
	feed_str(&t->sha, label, strlen(label));
	/* dirfd may be O_PATH: open the directory itself for reading */
	int fd = dirfd < 0 ? -1 : openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat one;
	if (fd < 0 && dirfd >= 0 && errno == ENOTDIR && fstat(dirfd, &one) == 0) {
		/* a single file (a --bind of one file): its own entry */
		feed_stat(&t->sha, &one);
		t->entries++;
		return;
	}
	if (fd < 0) {
		incomplete(t, label);
		return;
	}
	struct stat st;
	if (fstat(fd, &st) == 0)
		feed_stat(&t->sha, &st); /* the root's own (its mode, owner, times) */
	walk(t, fd, "", 0);
}

void
wd_tree_print_final(struct wd_tree_print *t, char hex[65])
{
	feed_u64(&t->sha, t->entries);
	unsigned char md[32];
	wd_sha256_final(&t->sha, md);
	wd_sha256_hex(md, hex);
}

int
wd_tree_open_in(pid_t pid, const char *path)
{
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	/* resolved inside the sandbox's root, no link followed: the tree
	 * its processes see at path, never one a link there points to */
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve =
				   RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	int e = errno;
	close(rfd);
	return fd < 0 ? -e : fd;
}
