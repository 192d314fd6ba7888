/* policy_path_check and policy_open_beneath: containment by openat2
 * (RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS), and the time-of-check /
 * time-of-use story for a symlink swapped after the check. */
#include "policy/policy.h"

#include "fixture.h"

TestSuite(policy_path_check, .init = fx_setup, .fini = fx_teardown);
TestSuite(policy_open_beneath, .init = fx_setup, .fini = fx_teardown);

struct pcase {
	const char *cwd;
	const char *arg;
	int want; /* 0 inside, 1 outside, 2 refused otherwise */
};

/* clang-format off */
static const struct pcase pcases[] = {
	{NULL, "file.txt", 0},
	{NULL, "./sub/../ok.py", 0},
	{NULL, "sub/", 0},
	{NULL, "sub//inner.txt", 0},
	{NULL, ".", 0},
	{NULL, "", 0},
	{NULL, "..", 1},
	{NULL, "../", 1},
	{NULL, "../ws/file.txt", 1},
	{NULL, "sub/../../outside/secret", 1},
	{NULL, "/etc/passwd", 1},
	{NULL, "/", 1},
	{NULL, "//etc", 1},
	{NULL, "/workspace", 0},
	{NULL, "/workspace/", 0},
	{NULL, "/workspace//sub/inner.txt", 0},
	{NULL, "/workspace/..", 1},
	{NULL, "/workspace2", 1},
	{NULL, "/proc/self/root", 1},
	{NULL, "/proc/self/root/etc/shadow", 1},
	{NULL, "/proc/1/root", 1},
	{NULL, "proc", 1},
	{NULL, "proc/etc", 1},
	{NULL, "link-in", 0},
	{NULL, "link-in/test_a.py", 0},
	{NULL, "link-out", 1},
	{NULL, "link-out/secret", 1},
	{NULL, "link-out-rel", 1},
	{NULL, "up", 1},
	{NULL, "etc", 1},
	{NULL, "chain1", 1},
	{NULL, "chain-in1", 0},
	{NULL, "loop1", 2},
	{NULL, "loop1/x", 2},
	{NULL, "dangling-in", 0},
	{NULL, "dangling-out", 1},
	{NULL, "missing", 0},
	{NULL, "missing/deeper/file", 0},
	{NULL, "missing/../file.txt", 0},
	{NULL, "missing/../..", 1},
	{NULL, "missing/./../../x", 1},
	{NULL, "missing/a/../../../x", 1},
	{NULL, "sub/back/test_a.py", 0},
	{NULL, "sub/escape", 1},
	{"sub", "inner.txt", 0},
	{"sub", "../file.txt", 0},
	{"sub", "../..", 1},
	{"sub", "back", 0},
	{"sub", "escape/secret", 1},
	{"sub", "/workspace/file.txt", 0},
};
/* clang-format on */

Test(policy_path_check, table)
{
	char reason[512];
	for (size_t i = 0; i < WD_ARRAY_SIZE(pcases); i++) {
		const struct pcase *c = &pcases[i];
		reason[0] = '\0';
		int rc = policy_path_check(fx_wfd, fx_ws, "/workspace", c->cwd, c->arg, reason,
					   sizeof(reason));
		cr_expect_eq(rc, c->want, "case %zu cwd=%s '%s': %d (%s), expected %d", i,
			     c->cwd ? c->cwd : ".", c->arg, rc, reason, c->want);
		if (c->want)
			cr_expect(reason[0], "case %zu: no reason", i);
	}
}

Test(policy_path_check, host_workspace_path_counts_as_inside)
{
	char reason[512], arg[PATH_MAX + 32];
	snprintf(arg, sizeof(arg), "%s/file.txt", fx_ws);
	cr_expect_eq(
	    policy_path_check(fx_wfd, fx_ws, "/workspace", NULL, arg, reason, sizeof(reason)), 0);
	snprintf(arg, sizeof(arg), "%s/../outside/secret", fx_ws);
	cr_expect_eq(
	    policy_path_check(fx_wfd, fx_ws, "/workspace", NULL, arg, reason, sizeof(reason)), 1);
}

Test(policy_path_check, too_long)
{
	char reason[512];
	char *arg = malloc(PATH_MAX + 10);
	memset(arg, 'a', PATH_MAX + 9);
	arg[PATH_MAX + 9] = '\0';
	cr_expect_eq(
	    policy_path_check(fx_wfd, fx_ws, "/workspace", NULL, arg, reason, sizeof(reason)), 2);
	free(arg);
}

/* A symlink swapped in after the check.  The check judged "data" (a plain
 * file) inside; then "data" becomes a link to a host file outside.
 *  1. Checking again refuses it: nothing is cached between decisions.
 *  2. A direct tool opens it with policy_open_beneath(), the same openat2
 *     resolution as the check: the swapped link fails with EXDEV, the host
 *     file is never opened.  Check and use are one operation.
 *  3. A command in the jail resolves the link inside the jail's own root
 *     (the workspace at /workspace, read-only system dirs, a curated /etc),
 *     where the host path does not exist: see
 *     tests/integration/policy_swap.sh. */
Test(policy_path_check, symlink_swapped_after_check)
{
	char reason[512], p[PATH_MAX], outside[PATH_MAX];
	fx_file("ws/data", "fine\n");
	cr_assert_eq(
	    policy_path_check(fx_wfd, fx_ws, "/workspace", NULL, "data", reason, sizeof(reason)),
	    0);
	fx_path(p, "ws/data");
	fx_path(outside, "outside/secret");
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(symlink(outside, p), 0);
	cr_expect_eq(
	    policy_path_check(fx_wfd, fx_ws, "/workspace", NULL, "data", reason, sizeof(reason)),
	    1);
	int fd = policy_open_beneath(fx_wfd, "data", O_RDONLY, 0);
	cr_expect_eq(fd, -EXDEV, "open_beneath followed the swapped link: %d", fd);
	if (fd >= 0)
		close(fd);
	/* a relative link climbing out is refused the same way */
	cr_assert_eq(unlink(p), 0);
	cr_assert_eq(symlink("../outside/secret", p), 0);
	cr_expect_eq(policy_open_beneath(fx_wfd, "data", O_RDONLY, 0), -EXDEV);
}

Test(policy_open_beneath, reads_inside)
{
	int fd = policy_open_beneath(fx_wfd, "sub/inner.txt", O_RDONLY, 0);
	cr_assert_geq(fd, 0);
	char buf[8] = "";
	cr_expect_eq(read(fd, buf, sizeof(buf)), 2);
	cr_expect_eq(buf[0], 'y');
	close(fd);
	fd = policy_open_beneath(fx_wfd, "link-in/test_a.py", O_RDONLY, 0);
	cr_expect_geq(fd, 0);
	if (fd >= 0)
		close(fd);
}

Test(policy_open_beneath, refuses_escapes)
{
	cr_expect_eq(policy_open_beneath(fx_wfd, "../outside/secret", O_RDONLY, 0), -EXDEV);
	cr_expect_eq(policy_open_beneath(fx_wfd, "/etc/passwd", O_RDONLY, 0), -EXDEV);
	cr_expect_eq(policy_open_beneath(fx_wfd, "link-out/secret", O_RDONLY, 0), -EXDEV);
	cr_expect_eq(policy_open_beneath(fx_wfd, "proc/etc/passwd", O_RDONLY, 0), -EXDEV);
	cr_expect_eq(policy_open_beneath(fx_wfd, "loop1", O_RDONLY, 0), -ELOOP);
}

Test(policy_open_beneath, creates_inside_only)
{
	int fd = policy_open_beneath(fx_wfd, "sub/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_expect_geq(fd, 0);
	if (fd >= 0)
		close(fd);
	cr_expect_eq(policy_open_beneath(fx_wfd, "link-out/new.txt", O_WRONLY | O_CREAT, 0600),
		     -EXDEV);
	char p[PATH_MAX];
	fx_path(p, "outside/new.txt");
	cr_expect_neq(access(p, F_OK), 0, "a file was created outside the workspace");
}

/* A magic link inside the workspace: a bind of /proc is how one would get
 * there; simulate with a directory fd opened on /proc itself. */
Test(policy_open_beneath, refuses_magic_links)
{
	int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(procfd, 0);
	int fd = policy_open_beneath(procfd, "self/root", O_PATH, 0);
	cr_expect(fd == -ELOOP || fd == -EXDEV, "self/root: %d", fd);
	if (fd >= 0)
		close(fd);
	fd = policy_open_beneath(procfd, "self/fd/0", O_PATH, 0);
	cr_expect(fd == -ELOOP || fd == -EXDEV || fd == -ENOENT, "self/fd/0: %d", fd);
	if (fd >= 0)
		close(fd);
	close(procfd);
}
