/* wd_rm_tree_at: rm -r beneath a directory descriptor, no link followed;
 * wd_dir_realpath: a directory named by itself, not by a second walk. */
#include "util/util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[64];

static void
mk_top(void)
{
	snprintf(top, sizeof(top), "/tmp/wd-unit-fs.XXXXXX");
	cr_assert_not_null(mkdtemp(top));
}

static void
put(int dfd, const char *name, const char *text)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "create %s: %s", name, strerror(errno));
	cr_assert_eq(wd_write_all(fd, text, strlen(text)), 0);
	close(fd);
}

static bool
exists_at(int dfd, const char *name)
{
	struct stat st;
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* A tree full of links to what must survive: a directory and a file
 * outside, through a link at the top, inside, and as the last entry of a
 * directory that is read-only. */
Test(wd_rm_tree_at, follows_no_link)
{
	mk_top();
	int t = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(t, 0);
	cr_assert_eq(mkdirat(t, "outside", 0700), 0);
	int out = openat(t, "outside", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	put(out, "keep", "precious");
	cr_assert_eq(mkdirat(t, "tree", 0700), 0);
	int tr = openat(t, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(mkdirat(tr, "a", 0700), 0);
	int a = openat(tr, "a", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	put(a, "f", "x");
	cr_assert_eq(symlinkat("../../outside", a, "dirlink"), 0);
	cr_assert_eq(symlinkat("../../outside/keep", a, "filelink"), 0);
	cr_assert_eq(symlinkat("/", tr, "root"), 0);
	cr_assert_eq(fchmod(a, 0555), 0);
	close(a);
	close(tr);

	cr_expect_eq(wd_rm_tree_at(t, "tree"), 0);
	cr_expect(!exists_at(t, "tree"), "the tree is gone");
	cr_expect(exists_at(out, "keep"), "what a link pointed at survives");
	cr_expect_eq(wd_rm_tree_at(t, "tree"), 0, "a missing name is no error");

	/* a link given as the name itself is removed, not its target */
	cr_assert_eq(symlinkat("outside", t, "link"), 0);
	cr_expect_eq(wd_rm_tree_at(t, "link"), 0);
	cr_expect(!exists_at(t, "link") && exists_at(out, "keep"));
	close(out);
	cr_expect_eq(wd_rm_tree_at(AT_FDCWD, top), 0);
	cr_expect(!exists_at(AT_FDCWD, top));
	close(t);
}

/* An ordinary user (as the test runs it, or nobody when it runs as root)
 * removes its own directories of mode 000 and 0555, which it can neither
 * read nor empty until it takes the bits back. */
Test(wd_rm_tree_at, unreadable_directories_of_its_own)
{
	mk_top();
	if (geteuid() == 0) {
		cr_assert_eq(chown(top, 65534, 65534), 0);
		/* Criterion runs each test in a process of its own */
		cr_assert_eq(setresgid(65534, 65534, 65534), 0);
		cr_assert_eq(setresuid(65534, 65534, 65534), 0);
	}
	int t = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(t, 0);
	cr_assert_eq(mkdirat(t, "m", 0700), 0);
	int m = openat(t, "m", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(mkdirat(m, "closed", 0700), 0);
	int c = openat(m, "closed", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	put(c, "f", "x");
	cr_assert_eq(fchmod(c, 0), 0);
	close(c);
	cr_assert_eq(mkdirat(m, "ro", 0700), 0);
	int r = openat(m, "ro", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	put(r, "g", "y");
	cr_assert_eq(fchmod(r, 0555), 0);
	close(r);
	close(m);
	cr_expect_eq(wd_rm_tree_at(t, "m"), 0, "%s", strerror(errno));
	cr_expect(!exists_at(t, "m"));
	close(t);
	cr_expect_eq(rmdir(top), 0);
}

/* Depth is bounded: a chain deeper than WD_RM_TREE_DEPTH fails with
 * ELOOP (no stack or descriptor exhaustion), and what is within the bound
 * goes. */
Test(wd_rm_tree_at, bounded_depth)
{
	mk_top();
	int t = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(t, 0);
	int fd = dup(t);
	int mid = -1;
	for (int i = 0; i < WD_RM_TREE_DEPTH + 10; i++) {
		cr_assert_eq(mkdirat(fd, "d", 0700), 0, "level %d", i);
		int n = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(n, 0);
		if (i == 20)
			mid = dup(n);
		close(fd);
		fd = n;
	}
	close(fd);
	cr_expect_eq(wd_rm_tree_at(t, "d"), -ELOOP);
	cr_expect(exists_at(t, "d"), "a tree too deep is reported, not half-claimed as gone");
	/* from level 21, the rest is within the bound */
	cr_expect_eq(wd_rm_tree_at(mid, "d"), 0);
	close(mid);
	cr_expect_eq(wd_rm_tree_at(t, "d"), 0);
	close(t);
	cr_expect_eq(rmdir(top), 0);
}

/* wd_dir_realpath: a path is resolved as realpath() resolves it, and a
 * directory handed by descriptor (/proc/self/fd/N) is named by where it
 * is, never by a walk of the path it was opened by: a component of that
 * path renamed and replaced by a link to another directory (the window
 * between a caller's check of its path and the resolution) leads the
 * walk there, and the descriptor's name does not. */
Test(wd_dir_realpath, held_directory_not_the_planted_link)
{
	char base[PATH_MAX], p[PATH_MAX + 64], q[PATH_MAX + 64], want[PATH_MAX + 64];
	mk_top();
	cr_assert_not_null(realpath(top, base));
	const char *dirs[] = {"proj", "proj/a", "proj/a/sub", "outside", "outside/sub"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", base, dirs[i]);
		cr_assert_eq(mkdir(p, 0700), 0, "mkdir %s: %s", p, strerror(errno));
	}
	snprintf(p, sizeof(p), "%s/lnk", base);
	snprintf(q, sizeof(q), "%s/proj", base);
	cr_assert_eq(symlink(q, p), 0);

	/* a path with a link in it: what realpath() gives */
	char *out = NULL;
	snprintf(p, sizeof(p), "%s/lnk/a/sub", base);
	cr_assert_eq(wd_dir_realpath(p, &out), 0);
	snprintf(want, sizeof(want), "%s/proj/a/sub", base);
	cr_expect_str_eq(out, want);
	free(out);
	snprintf(p, sizeof(p), "%s/proj/nothing", base);
	cr_expect_eq(wd_dir_realpath(p, &out), -ENOENT);
	cr_expect_null(out);

	/* held, then a renamed and a link planted in its path */
	snprintf(p, sizeof(p), "%s/proj/a/sub", base);
	int held = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(held, 0);
	snprintf(p, sizeof(p), "%s/proj/a", base);
	snprintf(q, sizeof(q), "%s/proj/a.old", base);
	cr_assert_eq(rename(p, q), 0);
	snprintf(q, sizeof(q), "%s/outside", base);
	cr_assert_eq(symlink(q, p), 0);
	char byfd[64];
	snprintf(byfd, sizeof(byfd), "/proc/self/fd/%d", held);
	cr_assert_eq(wd_dir_realpath(byfd, &out), 0);
	snprintf(want, sizeof(want), "%s/proj/a.old/sub", base);
	cr_expect_str_eq(out, want, "the held directory, where it is now");
	free(out);
	/* what a second walk of the old path gives: the planted link's */
	snprintf(p, sizeof(p), "%s/proj/a/sub", base);
	char walked[PATH_MAX];
	cr_assert_not_null(realpath(p, walked));
	snprintf(want, sizeof(want), "%s/outside/sub", base);
	cr_expect_str_eq(walked, want);

	/* removed while held: its name leads nowhere, refused */
	snprintf(p, sizeof(p), "%s/proj/a.old/sub", base);
	cr_assert_eq(rmdir(p), 0);
	cr_expect_eq(wd_dir_realpath(byfd, &out), -ESTALE);
	cr_expect_null(out);
	close(held);
	/* not a directory */
	snprintf(p, sizeof(p), "%s/f", base);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_expect_eq(wd_dir_realpath(p, &out), -ENOTDIR);
	cr_assert_eq(wd_rm_tree_at(AT_FDCWD, base), 0);
}
