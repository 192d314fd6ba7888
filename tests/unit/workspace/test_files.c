/* wd_workspace_openat / wd_workspace_write: containment by openat2
 * (RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS), protected paths, atomic
 * replacement that never writes through a link. */
#include "warden.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[PATH_MAX], ws_dir[PATH_MAX];
static wd_workspace *ws;

static void
put(const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", top, rel);
	FILE *f = fopen(p, "w");
	cr_assert(f, "fopen %s", p);
	fputs(text, f);
	fclose(f);
}

static char *
get(const char *rel)
{
	static char buf[4096];
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", top, rel);
	FILE *f = fopen(p, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void
setup(void)
{
	snprintf(top, sizeof(top), "/tmp/wd-ws-XXXXXX");
	cr_assert(mkdtemp(top));
	char p[PATH_MAX * 2];
	snprintf(ws_dir, sizeof(ws_dir), "%s/ws", top);
	mkdir(ws_dir, 0755);
	snprintf(p, sizeof(p), "%s/ws/sub", top);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/ws/.git", top);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/ws/.git/hooks", top);
	mkdir(p, 0755);
	put("secret", "host secret\n");
	put("ws/a.txt", "alpha\n");
	put("ws/.git/config", "[core]\n");
	snprintf(p, sizeof(p), "%s/ws/out", top);
	cr_assert(symlink("../secret", p) == 0);
	snprintf(p, sizeof(p), "%s/ws/hooks", top);
	cr_assert(symlink(".git/hooks", p) == 0);
	snprintf(p, sizeof(p), "%s/ws/cfg", top);
	cr_assert(link(strcat(strcpy((char[PATH_MAX * 2]){0}, ws_dir), "/.git/config"), p) == 0);
	struct wd_err e = {0};
	cr_assert(wd_workspace_open(ws_dir, &ws, &e) == 0, "%s", e.msg);
}

static void
teardown(void)
{
	wd_workspace_close(ws);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	cr_assert(system(cmd) == 0);
}

TestSuite(wd_workspace_openat, .init = setup, .fini = teardown);
TestSuite(wd_workspace_write, .init = setup, .fini = teardown);

Test(wd_workspace_openat, reads_inside_in_every_spelling)
{
	const char *ok[] = {"a.txt", "./a.txt", "sub/../a.txt", "/workspace/a.txt"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct wd_err e = {0};
		int fd = wd_workspace_openat(ws, ok[i], O_RDONLY, &e);
		cr_expect(fd >= 0, "%s: %s", ok[i], e.msg);
		if (fd >= 0)
			close(fd);
	}
	char host[PATH_MAX * 2];
	snprintf(host, sizeof(host), "%s/a.txt", wd_workspace_path(ws));
	int fd = wd_workspace_openat(ws, host, O_RDONLY, NULL);
	cr_expect(fd >= 0, "host path below the workspace");
	close(fd);
}

Test(wd_workspace_openat, refuses_every_way_out)
{
	const char *out[] = {"../secret", "sub/../../secret",		"/etc/passwd",
			     "out",	  "/proc/self/root/etc/passwd", "/workspace/../secret"};
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		struct wd_err e = {0};
		int fd = wd_workspace_openat(ws, out[i], O_RDONLY, &e);
		cr_expect(fd == -EXDEV || fd == -ELOOP, "%s: %d", out[i], fd);
		cr_expect(e.msg[0], "%s: a message", out[i]);
	}
}

Test(wd_workspace_openat, reading_only)
{
	struct wd_err e = {0};
	cr_expect(wd_workspace_openat(ws, "a.txt", O_RDWR, &e) == -EINVAL);
	cr_expect(wd_workspace_openat(ws, "a.txt", O_RDONLY | O_TRUNC, &e) == -EINVAL);
	cr_expect(wd_workspace_openat(ws, "a.txt", O_WRONLY | O_CREAT, &e) == -EINVAL);
}

Test(wd_workspace_write, creates_and_replaces_atomically)
{
	struct wd_err e = {0};
	cr_assert(wd_workspace_write(ws, "new.txt", "one\n", 4, 0, &e) == 0, "%s", e.msg);
	cr_expect_str_eq(get("ws/new.txt"), "one\n");
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/new.txt", ws_dir);
	chmod(p, 0750);
	cr_assert(wd_workspace_write(ws, "/workspace/new.txt", "two\n", 4, 0, &e) == 0, "%s",
		  e.msg);
	cr_expect_str_eq(get("ws/new.txt"), "two\n");
	struct stat st;
	stat(p, &st);
	cr_expect((st.st_mode & 07777) == 0750, "mode kept: %o", st.st_mode & 07777);
	cr_expect(wd_workspace_write(ws, "new.txt", "x", 1, WD_WRITE_NEW, &e) == -EEXIST);
	cr_expect(wd_workspace_write(ws, "none.txt", "x", 1, WD_WRITE_EXISTING, &e) == -ENOENT);
	/* no temporary file left behind */
	snprintf(p, sizeof(p), "ls -A %s | grep -q warden-", ws_dir);
	cr_expect(system(p) != 0);
}

Test(wd_workspace_write, mkdirs)
{
	struct wd_err e = {0};
	cr_expect(wd_workspace_write(ws, "d1/d2/f", "x", 1, 0, &e) == -ENOENT);
	cr_assert(wd_workspace_write(ws, "d1/d2/f", "x", 1, WD_WRITE_MKDIRS, &e) == 0, "%s", e.msg);
	cr_expect_str_eq(get("ws/d1/d2/f"), "x");
	cr_expect(wd_workspace_write(ws, "../d3/f", "x", 1, WD_WRITE_MKDIRS, &e) == -EINVAL);
	cr_expect(wd_workspace_write(ws, ".vscode/tasks.json", "{}", 2, WD_WRITE_MKDIRS, &e) ==
		  -EACCES);
	cr_expect(access(strcat(strcpy((char[PATH_MAX * 2]){0}, ws_dir), "/.vscode"), F_OK) != 0,
		  "the protected directory was not created");
}

Test(wd_workspace_write, never_through_a_link)
{
	struct wd_err e = {0};
	/* a symlink out of the workspace: refused, the host file untouched */
	cr_expect(wd_workspace_write(ws, "out", "pwned", 5, 0, &e) == -ELOOP, "%s", e.msg);
	cr_expect_str_eq(get("secret"), "host secret\n");
	/* a hard link to a protected file: replaced by rename, the protected
	 * file keeps its content */
	cr_assert(wd_workspace_write(ws, "cfg", "[core]\nfsmonitor=evil\n", 22, 0, &e) == 0, "%s",
		  e.msg);
	cr_expect_str_eq(get("ws/.git/config"), "[core]\n");
}

Test(wd_workspace_write, protected_paths)
{
	const char *prot[] = {".git/config",
			      ".git/hooks/pre-commit",
			      "hooks/post-checkout",
			      ".envrc",
			      ".gitmodules",
			      ".idea/x.xml",
			      ".git/commondir",
			      ".git/HEAD",
			      ".git",
			      "sub/.git",
			      "new/.git/config",
			      "sub/deep/.git"};
	for (size_t i = 0; i < sizeof(prot) / sizeof(prot[0]); i++) {
		struct wd_err e = {0};
		int rc = wd_workspace_write(ws, prot[i], "x", 1, WD_WRITE_MKDIRS, &e);
		cr_expect(rc == -EACCES, "%s: %d %s", prot[i], rc, e.msg);
	}
	cr_expect_str_eq(get("ws/.git/config"), "[core]\n");
	cr_expect(wd_workspace_protected(".git/hooks/pre-commit"));
	cr_expect(wd_workspace_protected("./.envrc"));
	cr_expect(!wd_workspace_protected(".gitignore"));
	cr_expect(wd_workspace_protected(".git/HEAD"));
	cr_expect(wd_workspace_protected("sub/.git/config"));
	cr_expect(!wd_workspace_protected("sub/.github/x"));
	/* editor and shell configuration at any depth (attack pass) */
	cr_expect(wd_workspace_protected("frontend/.vscode/tasks.json"));
	cr_expect(wd_workspace_protected("a/b/.idea/workspace.xml"));
	cr_expect(wd_workspace_protected("sub/.envrc"));
	cr_expect(!wd_workspace_protected("sub/.envrc.example"));
	cr_expect(access(strcat(strcpy((char[PATH_MAX * 2]){0}, ws_dir), "/new"), F_OK) != 0,
		  "no new/ was made for a refused new/.git/config");
}

/* "new/../x" made new/ and then failed with a wrong reason */
Test(wd_workspace_write, dotdot_refused_before_anything_is_made)
{
	const char *bad[] = {"new/../x", "sub/../a.txt", "../d3/f", "sub/..",
			     "/workspace/new/../x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct wd_err e = {0};
		int rc = wd_workspace_write(ws, bad[i], "x", 1, WD_WRITE_MKDIRS, &e);
		cr_expect(rc == -EINVAL, "%s: %d %s", bad[i], rc, e.msg);
		cr_expect(strstr(e.msg, bad[i]) && strstr(e.msg, "'..'"), "%s", e.msg);
	}
	cr_expect(access(strcat(strcpy((char[PATH_MAX * 2]){0}, ws_dir), "/new"), F_OK) != 0,
		  "no new/ was made");
	cr_expect_str_eq(get("ws/a.txt"), "alpha\n");
}

/* a file above a protected path would change what it names */
Test(wd_workspace_protect, an_ancestor_is_protected_too)
{
	struct wd_err e = {0};
	cr_assert(wd_workspace_protect(ws, "ci/deploy/run.sh", &e) == 0, "%s", e.msg);
	cr_expect(wd_workspace_write(ws, "ci", "x", 1, 0, &e) == -EACCES, "%s", e.msg);
	cr_expect(strstr(e.msg, "above ci/deploy/run.sh"), "%s", e.msg);
	cr_expect(wd_workspace_write(ws, "ci/deploy", "x", 1, WD_WRITE_MKDIRS, &e) == -EACCES);
	/* a directory on the way may be made: it stays a directory */
	cr_expect(wd_workspace_write(ws, "ci/other.txt", "x", 1, WD_WRITE_MKDIRS, &e) == 0, "%s",
		  e.msg);
	cr_expect(wd_workspace_write(ws, "ci/deploy/run.sh", "x", 1, WD_WRITE_MKDIRS, &e) ==
		  -EACCES);
}

Test(wd_workspace_write, directories_are_not_files)
{
	struct wd_err e = {0};
	cr_expect(wd_workspace_write(ws, "sub", "x", 1, 0, &e) == -EISDIR);
	cr_expect(wd_workspace_write(ws, ".", "x", 1, 0, &e) == -EISDIR);
	cr_expect(wd_workspace_write(ws, "", "x", 1, 0, &e) == -EISDIR);
	cr_expect(wd_workspace_write(ws, "sub/..", "x", 1, 0, &e) == -EINVAL);
}

TestSuite(wd_workspace_protect, .init = setup, .fini = teardown);

Test(wd_workspace_protect, adds_paths_in_normal_form_only)
{
	struct wd_err e = {0};
	const char *bad[] = {"/etc", "../x", "a/../b", "./a", "a//b", "a/", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = wd_workspace_protect(ws, bad[i], &e);
		cr_expect(rc == -EINVAL, "'%s': %d", bad[i], rc);
		cr_expect(strstr(e.msg, "relative to the workspace"), "%s", e.msg);
	}
	cr_expect(wd_workspace_protect(ws, NULL, &e) == -EINVAL);
	cr_assert(wd_workspace_protect(ws, "ci/deploy.sh", &e) == 0, "%s", e.msg);
	cr_assert(wd_workspace_protect(ws, "ci/deploy.sh", &e) == 0, "twice is once");
	cr_assert(wd_workspace_protect(ws, "Makefile", &e) == 0, "%s", e.msg);
}

Test(wd_workspace_protect, refuses_writes_there_and_below)
{
	struct wd_err e = {0};
	cr_assert(wd_workspace_protect(ws, "ci", &e) == 0, "%s", e.msg);
	cr_assert(wd_workspace_protect(ws, "a.txt", &e) == 0, "%s", e.msg);
	cr_expect(wd_workspace_write(ws, "a.txt", "x", 1, 0, &e) == -EACCES);
	cr_expect(strstr(e.msg, "protected"), "%s", e.msg);
	cr_expect_str_eq(get("ws/a.txt"), "alpha\n");
	cr_expect(wd_workspace_write(ws, "/workspace/a.txt", "x", 1, 0, &e) == -EACCES);
	cr_expect(wd_workspace_write(ws, "sub/../a.txt", "x", 1, 0, &e) == -EINVAL);
	cr_expect(wd_workspace_write(ws, "ci/deploy.sh", "x", 1, WD_WRITE_MKDIRS, &e) == -EACCES);
	/* refused as given, before any directory is made for it */
	cr_expect(access(strcat(strcpy((char[PATH_MAX * 2]){0}, ws_dir), "/ci"), F_OK) != 0,
		  "no ci/ was made for a refused write");
	/* a link to it does not dodge the check: where the file really is */
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/ws/sub/ci", top);
	mkdir(strcat(strcpy((char[PATH_MAX * 2]){0}, ws_dir), "/ci"), 0755);
	cr_assert(symlink("../ci", p) == 0);
	cr_expect(wd_workspace_write(ws, "sub/ci/x", "x", 1, 0, &e) == -EACCES, "%s", e.msg);
	/* a name that only starts like one is not protected */
	cr_expect(wd_workspace_write(ws, "ci2", "x", 1, 0, &e) == 0, "%s", e.msg);
	cr_expect(wd_workspace_write(ws, "a.txt.bak", "x", 1, 0, &e) == 0, "%s", e.msg);
	/* warden's own list is still there */
	cr_expect(wd_workspace_write(ws, ".envrc", "x", 1, 0, &e) == -EACCES);
	/* and wd_workspace_protected() answers for warden's list only */
	cr_expect(!wd_workspace_protected("ci/x"));
}

Test(wd_workspace_write, refused_protected_write_makes_no_directory)
{
	struct wd_err e = {0};
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/.git", ws_dir);
	char cmd[PATH_MAX * 3];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", p);
	cr_assert(system(cmd) == 0);
	cr_expect(wd_workspace_write(ws, ".git/hooks/pre-commit", "x", 1, WD_WRITE_MKDIRS, &e) ==
		  -EACCES);
	cr_expect(access(p, F_OK) != 0, "no .git was made for a refused .git/hooks/x");
}
