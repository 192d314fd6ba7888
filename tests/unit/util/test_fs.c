/* wd_rm_tree_at: rm -r beneath a directory descriptor, no link followed. */
#include "util/util.h"

#include <criterion/criterion.h>
#include <fcntl.h>
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
