/*
 * pool_guard: what wd_pool_run() refuses, and its cancellation (the
 * server's pool relies on both).
 *
 *   pool_guard DIR [OCI_LAYOUT_PY WD_PROBE]
 *                            (DIR: a scratch directory for the workspace;
 *                            the others make the images of 3)
 *
 *   1. A policy whose sandbox object sets a memory limit the template lacks:
 *      the run is refused (-EINVAL), nothing runs; a template with that
 *      limit runs the same command.
 *   2. A command cancelled (its wd_cmd_set_cancel_fd eventfd) while it
 *      waits for an instance returns -ECANCELED within a second; one
 *      cancelled while it runs is killed within a second.
 *   3. Images (two imported from OCI layouts made by oci_layout.py, in
 *      milliseconds): a pool built on the host's /usr under a policy whose
 *      sandbox.image is imga refuses the run, nothing runs; a pool built
 *      in imga runs imga's program; a tool whose image is imgb is refused
 *      in it.  An instance never serves a command of another image.
 *
 * Root and the container level (the pool's condition): 77 otherwise, a
 * failure under WD_MUST_WORK=1.  With WD_POOL_LEVEL=gvisor, 1 and 2 at
 * the gvisor level (runsc's sandboxes, the workspace attached through
 * the executor), where runsc works.  Public API only.
 */
#include "warden.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		printf((cond) ? "ok - " : "not ok - ");                                            \
		failures += !(cond);                                                               \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
	} while (0)

static char ws[4096], policy[4200], top[4096];
static enum wd_isolation level = WD_ISOLATION_CONTAINER;

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
skip(const char *why)
{
	printf("# skip: %s\n", why);
	const char *m = getenv("WD_MUST_WORK");
	return m && !strcmp(m, "1") ? 1 : 77;
}

static wd_cmd *
command(const char *s)
{
	struct wd_err e = {0};
	wd_cmd *c = wd_cmd_new();
	if (wd_cmd_set_command(c, s, &e) < 0)
		abort();
	return c;
}

static wd_spec *
spec_with(uint64_t memory)
{
	struct wd_err e = {0};
	wd_spec *s = wd_spec_new();
	if (wd_spec_set_workspace(s, ws, &e) < 0)
		abort();
	struct wd_limits l = {.memory_bytes = memory};
	wd_spec_set_limits(s, &l);
	wd_spec_set_isolation(s, level);
	return s;
}

struct bg {
	wd_pool *pool;
	wd_cmd *cmd;
	int rc;
	wd_result *r;
	double t_end;
};

static void *
bg_run(void *arg)
{
	struct bg *b = arg;
	struct wd_err e = {0};
	b->rc = wd_pool_run(b->pool, ws, b->cmd, &b->r, &e);
	b->t_end = now_s();
	return NULL;
}

static void
guard(wd_ctx *ctx)
{
	struct wd_err e = {0};
	wd_pool *pool = NULL;
	wd_spec *t = spec_with(0);
	int rc = wd_pool_new(ctx, t, 1, &pool, &e);
	wd_spec_free(t);
	CHECK(rc == 0, "a pool without the policy's memory limit (%s)", e.msg);
	if (rc < 0)
		return;
	wd_cmd *c = command("touch ran-without-the-limit");
	wd_result *r = NULL;
	rc = wd_pool_run(pool, ws, c, &r, &e);
	char path[4200];
	snprintf(path, sizeof(path), "%s/ran-without-the-limit", ws);
	CHECK(rc == -EINVAL && strstr(e.msg, "other than the pool's") && access(path, F_OK) < 0,
	      "the policy's sandbox.memory is not the template's: refused, nothing ran (%d: %s)",
	      rc, e.msg);
	wd_result_free(r);
	wd_pool_free(pool);
	pool = NULL;
	e = (struct wd_err){0};
	t = spec_with(96ULL << 20);
	rc = wd_pool_new(ctx, t, 1, &pool, &e);
	wd_spec_free(t);
	r = NULL;
	if (rc == 0)
		rc = wd_pool_run(pool, ws, c, &r, &e);
	CHECK(rc == 0 && wd_result_status(r) == 0 && access(path, F_OK) == 0,
	      "a template with that limit runs it (%d: %s)", rc, e.msg);
	wd_result_free(r);
	wd_cmd_free(c);
	wd_pool_free(pool);
}

static void
cancel(wd_ctx *ctx)
{
	struct wd_err e = {0};
	wd_pool *pool = NULL;
	wd_spec *t = spec_with(96ULL << 20);
	int rc = wd_pool_new(ctx, t, 1, &pool, &e);
	wd_spec_free(t);
	CHECK(rc == 0, "a pool of one (%s)", e.msg);
	if (rc < 0)
		return;
	/* the one instance runs a long command, cancelled later */
	struct bg first = {pool, command("sleep 20"), 0, NULL, 0};
	int efd1 = eventfd(0, EFD_CLOEXEC);
	wd_cmd_set_cancel_fd(first.cmd, efd1);
	pthread_t th1, th2;
	pthread_create(&th1, NULL, bg_run, &first);
	struct wd_pool_stats st;
	for (int i = 0; i < 500; i++) {
		wd_pool_stats(pool, &st);
		if (st.taken == 1)
			break;
		usleep(10000);
	}
	usleep(300000);
	/* a second command waits for an instance (none is built while the
	 * first is out): cancelled there */
	struct bg second = {pool, command("true"), 0, NULL, 0};
	int efd2 = eventfd(0, EFD_CLOEXEC);
	wd_cmd_set_cancel_fd(second.cmd, efd2);
	pthread_create(&th2, NULL, bg_run, &second);
	usleep(300000);
	uint64_t one = 1;
	double t0 = now_s();
	if (write(efd2, &one, sizeof(one)) != sizeof(one))
		abort();
	pthread_join(th2, NULL);
	CHECK(second.rc == -ECANCELED && second.t_end - t0 < 1.0,
	      "cancelled while waiting for an instance: -ECANCELED in %.3f s (%d)",
	      second.t_end - t0, second.rc);
	t0 = now_s();
	if (write(efd1, &one, sizeof(one)) != sizeof(one))
		abort();
	pthread_join(th1, NULL);
	CHECK(first.rc == 0 && first.r && wd_result_signal(first.r) == 9 && first.t_end - t0 < 1.0,
	      "cancelled while running: killed (signal %d) in %.3f s",
	      first.r ? wd_result_signal(first.r) : -1, first.t_end - t0);
	wd_result_free(first.r);
	wd_result_free(second.r);
	wd_cmd_free(first.cmd);
	wd_cmd_free(second.cmd);
	close(efd1);
	close(efd2);
	wd_pool_free(pool);
}

/* Import a one-layer OCI layout holding probe at usr/bin/prog as name. */
static int
import_image(wd_ctx *ctx, const char *oci, const char *probe, const char *name, const char *prog)
{
	char dir[4400], cmd[13000];
	snprintf(dir, sizeof(dir), "%s/oci-%s", top, name);
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' probe '%s' '%s'", oci, dir, probe, prog);
	if (system(cmd) != 0)
		return -1;
	struct wd_err e = {0};
	char *js = NULL;
	int rc = wd_image_import(ctx, name, dir, NULL, &js, &e);
	free(js);
	CHECK(rc == 0, "image %s imported (%s)", name, e.msg);
	return rc;
}

static void
images(const char *oci, const char *probe)
{
	struct wd_err e = {0};
	char pol[4300];
	snprintf(pol, sizeof(pol), "%s.images.json", ws);
	FILE *f = fopen(pol, "w");
	fputs("{\"version\": 1, \"sandbox\": {\"memory\": \"96MiB\", \"image\": \"imga\"},"
	      " \"programs\": {\"touch\": {}, \"probe-a\": {\"paths\": \"none\"}},"
	      " \"tools\": {\"tb\": {\"class\": \"sandbox\", \"image\": \"imgb\"}}}\n",
	      f);
	fclose(f);
	wd_ctx *ctx = NULL;
	if (wd_ctx_new(&ctx, &e) < 0 || wd_ctx_set_policy_file(ctx, pol, &e) < 0) {
		CHECK(0, "a context for the images (%s)", e.msg);
		wd_ctx_free(ctx);
		return;
	}
	if (import_image(ctx, oci, probe, "imga", "probe-a") < 0 ||
	    import_image(ctx, oci, probe, "imgb", "probe-b") < 0) {
		wd_ctx_free(ctx);
		return;
	}
	/* a pool on the host's /usr, a policy that says imga */
	wd_pool *pool = NULL;
	wd_spec *t = spec_with(96ULL << 20);
	int rc = wd_pool_new(ctx, t, 1, &pool, &e);
	wd_spec_free(t);
	CHECK(rc == 0, "a pool on the host's /usr (%s)", e.msg);
	wd_cmd *c = command("touch ran-on-the-host-usr");
	wd_result *r = NULL;
	char path[4300];
	snprintf(path, sizeof(path), "%s/ran-on-the-host-usr", ws);
	if (rc == 0)
		rc = wd_pool_run(pool, ws, c, &r, &e);
	CHECK(rc == -EINVAL && strstr(e.msg, "image") && access(path, F_OK) < 0,
	      "the policy's sandbox.image imga is not the instances' /usr: refused, nothing ran "
	      "(%d: %s)",
	      rc, e.msg);
	wd_result_free(r);
	wd_cmd_free(c);
	wd_pool_free(pool);
	/* a pool in imga: imga's program runs; tool tb (imgb) is refused */
	pool = NULL;
	e = (struct wd_err){0};
	t = spec_with(96ULL << 20);
	rc = wd_spec_set_image(t, "imga", &e);
	if (rc == 0)
		rc = wd_pool_new(ctx, t, 1, &pool, &e);
	wd_spec_free(t);
	CHECK(rc == 0, "a pool in imga (%s)", e.msg);
	r = NULL;
	c = command("probe-a ids");
	if (rc == 0)
		rc = wd_pool_run(pool, ws, c, &r, &e);
	CHECK(rc == 0 && wd_result_status(r) == 0, "imga's probe-a runs in its instance (%d: %s)",
	      rc, e.msg);
	wd_result_free(r);
	r = NULL;
	e = (struct wd_err){0};
	wd_cmd_set_tool(c, "tb", &e);
	rc = pool ? wd_pool_run(pool, ws, c, &r, &e) : -1;
	CHECK(rc == -EINVAL && strstr(e.msg, "tool 'tb' runs in image imgb"),
	      "tool tb (image imgb) in an imga instance: refused (%d: %s)", rc, e.msg);
	wd_result_free(r);
	wd_cmd_free(c);
	wd_pool_free(pool);
	wd_ctx_free(ctx);
	unlink(pol);
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: pool_guard DIR\n");
		return 2;
	}
	if (geteuid() != 0)
		return skip("the warm pool needs root");
	const char *lv = getenv("WD_POOL_LEVEL");
	if (lv && wd_isolation_parse(lv, &level) < 0) {
		fprintf(stderr, "pool_guard: WD_POOL_LEVEL=%s: not a level\n", lv);
		return 2;
	}
	snprintf(top, sizeof(top), "%s/pool-guard.%d.top", argv[1], (int)getpid());
	snprintf(ws, sizeof(ws), "%s/pool-guard.%d", argv[1], (int)getpid());
	snprintf(policy, sizeof(policy), "%s.json", ws);
	if (mkdir(ws, 0755) < 0 || mkdir(top, 0700) < 0)
		return 1;
	/* the images of 3 in a store of this run's own */
	char state[4200];
	snprintf(state, sizeof(state), "%s/state", top);
	if (mkdir(state, 0700) < 0 || setenv("WARDEN_STATE_DIR", state, 1) < 0)
		return 1;
	FILE *f = fopen(policy, "w");
	fputs("{\"version\": 1, \"sandbox\": {\"memory\": \"96MiB\"},"
	      " \"programs\": {\"touch\": {}, \"sleep\": {}, \"true\": {}}}\n",
	      f);
	fclose(f);
	struct wd_err e = {0};
	wd_ctx *ctx = NULL;
	if (wd_ctx_new(&ctx, &e) < 0 || wd_ctx_set_policy_file(ctx, policy, &e) < 0) {
		fprintf(stderr, "pool_guard: %s\n", e.msg);
		return 1;
	}
	wd_spec *probe = spec_with(0);
	wd_cmd *c = wd_cmd_new();
	const char *argv_true[] = {"/bin/true"};
	wd_cmd_set_argv(c, 1, argv_true, &e);
	wd_result *r = NULL;
	int rc = wd_ctx_run(ctx, probe, c, &r, &e);
	bool can = rc == 0 && wd_result_status(r) == 0;
	wd_result_free(r);
	wd_cmd_free(c);
	wd_spec_free(probe);
	int ret = 0;
	if (!can) {
		ret = skip(level == WD_ISOLATION_GVISOR
			       ? "this host cannot run a sandbox at the gvisor level"
			       : "this host cannot run a sandbox at the container level");
	} else {
		guard(ctx);
		cancel(ctx);
		if (argc > 3)
			images(argv[2], argv[3]);
		ret = failures ? 1 : 0;
	}
	wd_ctx_free(ctx);
	char rm[13000];
	snprintf(rm, sizeof(rm), "rm -rf '%s' '%s' '%s'", ws, policy, top);
	if (system(rm) != 0)
		ret = 1;
	return ret;
}
