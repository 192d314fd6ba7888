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

/* ---- a sandbox's view of the workspace (a cow overlay) ----
 * The command sees the view, not the host directory: a link the model
 * made there is judged there, with the message saying where it leads in
 * the view; a view that cannot be had refuses the path. */
TestSuite(policy_view, .init = fx_setup, .fini = fx_teardown);

static void
fx_view(void)
{
	/* ROOT/view: what the sandbox sees.  file.txt a link out there (a
	 * plain file on the host), d/up -> /etc, a relative climb, a chain */
	fx_dir("view");
	fx_dir("view/d");
	fx_dir("view/sub");
	fx_link("/etc/passwd", "view/file.txt");
	fx_link("/etc", "view/d/up");
	fx_link("../../outside/secret", "view/sub/esc");
	fx_link("c2", "view/c1");
	fx_link("d/up", "view/c2");
	fx_file("view/mine.txt", "made in the view\n");
}

static int
open_view(void)
{
	char p[PATH_MAX];
	fx_path(p, "view");
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	return fd;
}

Test(policy_view, links_read_in_the_view)
{
	fx_view();
	int vfd = open_view();
	char reason[512], outside[PATH_MAX + 32];
	struct {
		const char *arg, *where;
	} cases[] = {
	    {"file.txt", "resolves to /etc/passwd, outside"},
	    {"/workspace/file.txt", "resolves to /etc/passwd, outside"},
	    {"d/up/passwd", "resolves to /etc/passwd, outside"},
	    {"c1/shadow", "resolves to /etc/shadow, outside"},
	    {"sub/esc", NULL}, /* ROOT/outside/secret: checked below */
	};
	for (size_t i = 0; i < WD_ARRAY_SIZE(cases); i++) {
		reason[0] = '\0';
		int rc = policy_path_check_view(vfd, fx_ws, "/workspace", NULL, cases[i].arg,
						reason, sizeof(reason));
		cr_expect_eq(rc, 1, "'%s' in the view: %d (%s)", cases[i].arg, rc, reason);
		if (cases[i].where)
			cr_expect_not_null(strstr(reason, cases[i].where), "'%s': %s", cases[i].arg,
					   reason);
		/* the host path names the workspace in the message */
		cr_expect_not_null(strstr(reason, fx_ws), "%s", reason);
	}
	fx_path(outside, "outside/secret");
	policy_path_check_view(vfd, fx_ws, "/workspace", NULL, "sub/esc", reason, sizeof(reason));
	cr_expect_not_null(strstr(reason, outside), "the climb said where it leads: %s", reason);
	/* in the view: a file the host does not have, and a name neither has */
	cr_expect_eq(policy_path_check_view(vfd, fx_ws, "/workspace", NULL, "mine.txt", reason,
					    sizeof(reason)),
		     0, "%s", reason);
	cr_expect_eq(policy_path_check_view(vfd, fx_ws, "/workspace", NULL, "new/out.txt", reason,
					    sizeof(reason)),
		     0, "%s", reason);
	/* the host directory judges file.txt (a plain file there) inside:
	 * what a check on it instead of the view wrongly said */
	cr_expect_eq(policy_path_check(fx_wfd, fx_ws, "/workspace", NULL, "file.txt", reason,
				       sizeof(reason)),
		     0);
	close(vfd);
}

struct hook {
	int calls;
	int fail; /* -errno to return */
};

static int
view_hook(void *arg, char *why, size_t cap)
{
	struct hook *h = arg;
	h->calls++;
	if (h->fail) {
		snprintf(why, cap, "the workspace of session 0123 cannot be had");
		return h->fail;
	}
	return open_view();
}

static wd_decision *
decide_with(wd_policy *p, const char *command, struct hook *h)
{
	struct wd_err e = {0};
	wd_request *r = wd_request_new();
	cr_assert_eq(wd_request_set_command(r, command, &e), 0, "%s", e.msg);
	cr_assert_eq(wd_request_set_workspace(r, fx_ws, &e), 0, "%s", e.msg);
	if (h)
		policy_request_view_hook(r, view_hook, h);
	wd_decision *d = NULL;
	cr_assert_eq(wd_policy_decide(p, r, &d, &e), 0, "%s", e.msg);
	wd_request_free(r);
	return d;
}

Test(policy_view, decided_in_the_view_once_and_only_for_paths)
{
	fx_view();
	struct wd_err e = {0};
	wd_policy *p = NULL;
	cr_assert_eq(wd_policy_load(NULL, &p, &e), 0, "%s", e.msg);
	/* on the host directory: file.txt is a plain file, allowed */
	wd_decision *d = decide_with(p, "cat file.txt", NULL);
	cr_expect_eq(wd_decision_kind(d), WD_DECISION_ALLOW, "%s", wd_decision_reason(d));
	wd_decision_free(d);
	/* in the view: a link to /etc/passwd, refused; the view asked once
	 * for several paths */
	struct hook h = {0};
	d = decide_with(p, "cat mine.txt sub/inner.txt file.txt", &h);
	cr_expect_eq(wd_decision_kind(d), WD_DECISION_DENY);
	cr_expect_str_eq(wd_decision_rule(d), "workspace.containment");
	cr_expect_not_null(strstr(wd_decision_reason(d), "resolves to /etc/passwd"), "%s",
			   wd_decision_reason(d));
	cr_expect_eq(h.calls, 1, "the view was asked %d times", h.calls);
	wd_decision_free(d);
	/* no path to check (no operand, or one outside wherever it is
	 * judged): the view is not asked */
	h.calls = 0;
	d = decide_with(p, "cat", &h);
	wd_decision_free(d);
	d = decide_with(p, "cat /etc/passwd", &h);
	cr_expect_eq(wd_decision_kind(d), WD_DECISION_DENY);
	wd_decision_free(d);
	cr_expect_eq(h.calls, 0, "the view was asked %d times", h.calls);
	/* a view that cannot be had: refused, naming it, not judged on the
	 * host directory (where mine.txt is missing, file.txt plain) */
	struct hook bad = {.fail = -EIO};
	d = decide_with(p, "cat file.txt", &bad);
	cr_expect_eq(wd_decision_kind(d), WD_DECISION_DENY);
	cr_expect_str_eq(wd_decision_rule(d), "workspace.view");
	cr_expect_not_null(strstr(wd_decision_reason(d), "session 0123 cannot be had"), "%s",
			   wd_decision_reason(d));
	wd_decision_free(d);
	/* and a program given by a path in the workspace likewise */
	d = decide_with(p, "./file.txt", &bad);
	cr_expect_str_eq(wd_decision_rule(d), "workspace.view");
	cr_expect_not_null(strstr(wd_decision_reason(d), "session 0123 cannot be had"), "%s",
			   wd_decision_reason(d));
	wd_decision_free(d);
	/* a program given by a path is resolved in the view too (./file.txt
	 * is a link to /etc/passwd there): the view is asked for it */
	h.calls = 0;
	d = decide_with(p, "./file.txt", &h);
	cr_expect_eq(wd_decision_kind(d), WD_DECISION_DENY);
	cr_expect_eq(h.calls, 1);
	wd_decision_free(d);
	wd_policy_free(p);
}
