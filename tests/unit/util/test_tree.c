/* wd_tree_print: the state an approval covers.  A change the model can make
 * between a pause and the retry changes the print; reading does not; a
 * walk that could not see everything matches nothing. */
#include "util/util.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char top[64];
static int dfd = -1;

static void
setup(void)
{
	snprintf(top, sizeof(top), "/tmp/wd-unit-tree.XXXXXX");
	cr_assert_not_null(mkdtemp(top));
	dfd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0);
}

static void
teardown(void)
{
	wd_rm_tree_at(AT_FDCWD, top);
	close(dfd);
}

static void
print(char hex[65], bool *complete)
{
	struct wd_tree_print t;
	wd_tree_print_init(&t);
	wd_tree_print_add(&t, "workspace", dfd);
	wd_tree_print_final(&t, hex);
	if (complete)
		*complete = t.complete;
}

static void
write_at(const char *name, const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", top, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

TestSuite(wd_tree_print, .init = setup, .fini = teardown);

Test(wd_tree_print, reading_changes_nothing)
{
	write_at("build.py", "print(1)\n");
	char a[65], b[65];
	print(a, NULL);
	char buf[64];
	int fd = openat(dfd, "build.py", O_RDONLY | O_CLOEXEC);
	cr_assert_gt(read(fd, buf, sizeof(buf)), 0);
	close(fd);
	print(b, NULL);
	cr_expect_str_eq(a, b);
}

/* the same size, the old modification time put back: ctime still moves */
Test(wd_tree_print, rewrite_with_old_mtime_is_seen)
{
	write_at("build.py", "print(1)\n");
	char path[128], a[65], b[65];
	snprintf(path, sizeof(path), "%s/build.py", top);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	print(a, NULL);
	usleep(20000);
	write_at("build.py", "print(2)\n");
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
	print(b, NULL);
	cr_expect_str_neq(a, b);
}

Test(wd_tree_print, link_target_and_deep_file_are_seen)
{
	cr_assert_eq(mkdirat(dfd, "a", 0755), 0);
	cr_assert_eq(mkdirat(dfd, "a/b", 0755), 0);
	write_at("a/b/c.py", "x\n");
	cr_assert_eq(symlinkat("one", dfd, "l"), 0);
	char a[65], b[65], c[65];
	print(a, NULL);
	cr_assert_eq(unlinkat(dfd, "l", 0), 0);
	cr_assert_eq(symlinkat("two", dfd, "l"), 0);
	print(b, NULL);
	cr_expect_str_neq(a, b, "a link's new target");
	usleep(20000);
	write_at("a/b/c.py", "y\n");
	print(c, NULL);
	cr_expect_str_neq(b, c, "a file two directories down");
}

/* a detached command's log counts in full: python runs a usercustomize.py
 * that links to it (an attack pass), so no file is exempt */
Test(wd_tree_print, detached_logs_count_in_full)
{
	cr_assert_eq(mkdirat(dfd, ".warden", 0755), 0);
	write_at(".warden/detached-1.log", "pass\n");
	char a[65], b[65];
	print(a, NULL);
	usleep(20000);
	write_at(".warden/detached-1.log", "import os\n");
	print(b, NULL);
	cr_expect_str_neq(a, b);
}

/* too deep to walk: not complete, and no two prints are equal */
Test(wd_tree_print, incomplete_matches_nothing)
{
	char rel[4096] = "";
	for (int i = 0; i < 300; i++) {
		strcat(rel, i ? "/d" : "d");
		cr_assert_eq(mkdirat(dfd, rel, 0755), 0, "%d", i);
	}
	char a[65], b[65];
	bool complete = true;
	print(a, &complete);
	cr_expect(!complete);
	print(b, NULL);
	cr_expect_str_neq(a, b);
	struct wd_tree_print t;
	wd_tree_print_init(&t);
	wd_tree_print_add(&t, "missing", -1);
	cr_expect(!t.complete, "a tree that could not be had");
	wd_tree_print_final(&t, a);
}

/* the walk is bounded: the model chooses how many files there are, and
 * every pause walks them on the host.  Past the bound it stops, says so
 * and matches nothing; at the bound exactly it is complete. */
Test(wd_tree_print, bounded_walk_stops_and_matches_nothing)
{
	cr_assert_eq(mkdirat(dfd, "d", 0755), 0);
	for (int i = 0; i < 30; i++) {
		char name[32];
		snprintf(name, sizeof(name), "d/f%02d", i);
		write_at(name, "");
	}
	/* 31 entries: d and its 30 files */
	char a[65], b[65];
	struct wd_tree_print t;
	wd_tree_print_init(&t);
	t.max_entries = 31;
	wd_tree_print_add(&t, "workspace", dfd);
	wd_tree_print_final(&t, a);
	cr_expect(t.complete, "exactly at the bound: complete");
	cr_expect(!t.stopped);
	cr_expect_eq(t.entries, 31);
	for (int round = 0; round < 2; round++) {
		wd_tree_print_init(&t);
		t.max_entries = 10;
		wd_tree_print_add(&t, "workspace", dfd);
		wd_tree_print_add(&t, "home", dfd); /* a second tree: not walked */
		wd_tree_print_final(&t, round ? b : a);
		cr_expect(!t.complete);
		cr_expect(t.stopped);
		cr_expect(t.bounded);
		cr_expect_eq(t.entries, 10, "walked %llu", (unsigned long long)t.entries);
		cr_expect_str_eq(t.unseen, "more than 10 entries");
	}
	cr_expect_str_neq(a, b, "a state past the bound matches nothing");
}

/* A place the walk cannot see ends it: the print can match nothing after
 * that, and a model that made many directories listable but not
 * searchable (mode 0444: readdir works, every stat fails) must not make
 * the host list them all for free.  Walked as an ordinary user, for whom
 * the mode holds (root's stat passes it). */
Test(wd_tree_print, first_unseen_place_stops_the_walk)
{
	cr_assert_eq(fchmodat(AT_FDCWD, top, 0755, 0), 0);
	for (int k = 0; k < 3; k++) {
		char dir[32];
		snprintf(dir, sizeof(dir), "r%d", k);
		cr_assert_eq(mkdirat(dfd, dir, 0755), 0);
		for (int i = 0; i < 40; i++) {
			char name[48];
			snprintf(name, sizeof(name), "%s/f%02d", dir, i);
			write_at(name, "");
		}
		char path[128];
		snprintf(path, sizeof(path), "%s/%s", top, dir);
		cr_assert_eq(chmod(path, 0444), 0);
	}
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct wd_tree_print t;
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		wd_tree_print_init(&t);
		wd_tree_print_add(&t, "workspace", dfd);
		unsigned long long r[3] = {t.entries, t.complete, t.stopped && !t.bounded};
		_exit(write(p[1], r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 4);
	}
	close(p[1]);
	unsigned long long r[3] = {0};
	cr_assert_eq(read(p[0], r, sizeof(r)), (ssize_t)sizeof(r));
	close(p[0]);
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	cr_expect(!r[1], "not complete");
	cr_expect(r[2], "stopped at the first place it could not see, not at the bound");
	/* r0 and its first name: the other 119 names are never stat'ed */
	cr_expect_eq(r[0], 2, "%llu entries counted", r[0]);
	for (int k = 0; k < 3; k++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/r%d", top, k);
		chmod(path, 0755);
	}
}
