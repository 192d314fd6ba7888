/* fixture.h - a workspace with symlinks in and out, for policy tests.
 *
 *   ROOT/outside/secret
 *   ROOT/ws/                        the workspace
 *     tests/test_a.py  ok.py  file.txt  sub/inner.txt  huge.log
 *     link-in -> tests              link-out -> ROOT/outside (absolute)
 *     link-out-rel -> ../outside    up -> ..        etc -> /etc
 *     proc -> /proc/self/root       chain1 -> chain2 -> chain3 -> ROOT/outside
 *     chain-in1 -> chain-in2 -> tests               loop1 <-> loop2
 *     dangling-in -> missing.txt    dangling-out -> ../nowhere
 *     sub/back -> ../tests          sub/escape -> ../../outside
 */
#ifndef WD_TEST_POLICY_FIXTURE_H
#define WD_TEST_POLICY_FIXTURE_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fx_root[PATH_MAX];
static char fx_ws[PATH_MAX];
static int fx_wfd = -1;

static void
fx_path(char *out, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", fx_root, rel);
}

static void
fx_file(const char *rel, const char *text)
{
	char p[PATH_MAX];
	fx_path(p, rel);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f, "create %s", p);
	fputs(text, f);
	fclose(f);
}

static void
fx_dir(const char *rel)
{
	char p[PATH_MAX];
	fx_path(p, rel);
	cr_assert_eq(mkdir(p, 0755), 0, "mkdir %s", p);
}

static void
fx_link(const char *target, const char *rel)
{
	char p[PATH_MAX];
	fx_path(p, rel);
	cr_assert_eq(symlink(target, p), 0, "symlink %s", p);
}

static void
fx_setup(void)
{
	char tmpl[] = "/tmp/wd-policy-XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, fx_root));
	snprintf(fx_ws, sizeof(fx_ws), "%s/ws", fx_root);
	char outside[PATH_MAX];
	fx_path(outside, "outside");
	fx_dir("outside");
	fx_file("outside/secret", "secret\n");
	fx_dir("ws");
	fx_dir("ws/tests");
	fx_dir("ws/sub");
	fx_file("ws/tests/test_a.py", "def test_a():\n    assert True\n");
	fx_file("ws/ok.py", "print(1)\n");
	fx_file("ws/file.txt", "x\n");
	fx_file("ws/sub/inner.txt", "y\n");
	fx_file("ws/huge.log", "log\n");
	fx_link("tests", "ws/link-in");
	fx_link(outside, "ws/link-out");
	fx_link("../outside", "ws/link-out-rel");
	fx_link("..", "ws/up");
	fx_link("/etc", "ws/etc");
	fx_link("/proc/self/root", "ws/proc");
	fx_link("chain2", "ws/chain1");
	fx_link("chain3", "ws/chain2");
	fx_link(outside, "ws/chain3");
	fx_link("chain-in2", "ws/chain-in1");
	fx_link("tests", "ws/chain-in2");
	fx_link("loop2", "ws/loop1");
	fx_link("loop1", "ws/loop2");
	fx_link("missing.txt", "ws/dangling-in");
	fx_link("../nowhere", "ws/dangling-out");
	fx_link("../tests", "ws/sub/back");
	fx_link("../../outside", "ws/sub/escape");
	fx_wfd = open(fx_ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fx_wfd, 0);
}

static void
fx_teardown(void)
{
	char cmd[PATH_MAX + 16];
	if (fx_wfd >= 0)
		close(fx_wfd);
	if (fx_root[0] && !strncmp(fx_root, "/tmp/wd-policy-", 15)) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx_root);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup of %s failed\n", fx_root);
	}
}

#endif
