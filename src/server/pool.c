/* server/pool: the warm pool behind run_command and sandbox.run.
 *
 * `warden serve --pool N` (or the policy's sandbox.pool) keeps N sandboxes
 * built ahead with wd_pool_new() from the template every ephemeral run of
 * this server uses (run_spec()), with what the policy's "sandbox" object
 * and workspace.protect would add to it folded in; an ephemeral run whose
 * sandbox is that template takes one (wd_pool_run(): the same policy
 * stage, a fresh instance that is destroyed after the one command).
 *
 * A call whose sandbox would be another runs fresh (wd_ctx_run()), never
 * in an instance built for other limits:
 *   - a tool whose resource profile sets limits the template does not
 *     have (the profile wins over the policy's sandbox object);
 *   - a policy with a network object or secrets: egress goes through a
 *     proxy made per run, which the instances are built without;
 *   - a command that skips the policy stage (a harness argv) when the
 *     template carries the policy's values, which such a run would not.
 *   - a command in another image than the pool's: the template is made
 *     in the server's --image (by the digest its name had at start); a
 *     tool with its own image (tools.NAME.image), or a default name that
 *     `warden image build` has pointed elsewhere since, runs fresh.
 *     Sandboxes in the images --allow-image offers come from
 *     sandbox.create, which never takes from the pool: they are built
 *     fresh, one per create, and no pool is kept per image.
 * The library refuses the same mismatch itself (pool.c's template_fits,
 * which compares the image's digest with the rest of the spec, and the
 * policy stage's image check), so a policy changed on disk after the
 * start fails closed too.
 *
 * Fail closed at start: a pool where it cannot work (not root, another
 * isolation level, a host where its first instance cannot be built)
 * stops the server with 125 rather than leaving a flag that does nothing. */
#include "server/sandbox.h"
#include "server/base.h"
#include "server/srv.h"
#include "server/run.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct srv_pool {
	wd_pool *pool;
	unsigned size;
	struct wd_limits given;	     /* the template's limits as set (0: not set) */
	bool folded;		     /* the template carries values of the policy */
	const char *net_why;	     /* judged commands run fresh, and why; or NULL */
	char digest[SRV_DIGEST_LEN]; /* the instances' image ("": the host's /usr) */
	atomic_uint_fast64_t pooled, fresh;
};

/* What the option is called in messages: --pool, or the policy's key. */
static void
pool_name(const struct srv *s, char *buf, size_t cap)
{
	if (s->o.pool_set)
		snprintf(buf, cap, "--pool %u", s->o.pool);
	else
		snprintf(buf, cap, "--policy %s: sandbox.pool %u",
			 s->o.policy ? s->o.policy : "(built-in)", s->pool->size);
}

/* The template: run_spec() plus the policy's sandbox limits (those the
 * server's options leave unset), workspace.protect and reproducible, as
 * the policy stage would add them to every judged run. */
static wd_spec *
pool_template(struct srv *s, const struct wd_policy_sandbox *ps, struct wd_err *err)
{
	struct srv_pool *p = s->pool;
	/* the sandbox's limits a judged command without a tool gets (the
	 * library's precedence, wd_policy_limits); a command's own (timeout,
	 * output) are not the sandbox's */
	struct wd_limits l = s->o.limits, m;
	if (s->policy && wd_policy_limits(s->policy, NULL, &s->o.limits, &m, err) < 0)
		return NULL;
	if (s->policy) {
		l.memory_bytes = m.memory_bytes;
		l.pids = m.pids;
		l.cpu_millionths = m.cpu_millionths;
		l.tmp_bytes = m.tmp_bytes;
	}
	if (memcmp(&l, &s->o.limits, sizeof(l)))
		p->folded = true;
	p->given = l;
	wd_spec *t = run_spec(s, &l, s->o.image, p->digest, err);
	if (!t)
		return NULL;
	for (size_t i = 0; i < ps->nprotect; i++) {
		if (wd_spec_add_protected(t, ps->protect[i], err) < 0) {
			wd_spec_free(t);
			return NULL;
		}
		p->folded = true;
	}
	if (ps->reproducible) {
		wd_spec_set_reproducible(t, true);
		p->folded = true;
	}
	if (ps->net_nallow || ps->net_ndeny || ps->net_nhosts || ps->nallow_ports ||
	    ps->net_mode_set || ps->tls_intercept || ps->upstream_ca)
		p->net_why = "the policy's network object (egress goes through a proxy made for "
			     "each run; pooled sandboxes are built without one)";
	else if (ps->nsecrets)
		p->net_why = "the policy's secrets (injected by a proxy made for each run; "
			     "pooled sandboxes are built without one)";
	return t;
}

/* Why a judged command for tool (NULL: none) cannot take a pooled
 * sandbox, or NULL when it can. */
static const char *
profile_why(const struct srv *s, const struct route *rt)
{
	if (!rt || !rt->defined)
		return NULL; /* no profile; an unknown tool is refused by the policy stage */
	/* the sandbox's limits this command gets, as the policy stage will
	 * set them (the library's precedence), against the pool's */
	struct wd_limits want;
	struct wd_err err = {0};
	const struct wd_limits *g = &s->pool->given;
	if (wd_policy_limits(s->policy, rt->tool, &s->o.limits, &want, &err) < 0)
		return NULL;
	if (want.memory_bytes != g->memory_bytes || want.pids != g->pids ||
	    want.cpu_millionths != g->cpu_millionths || want.tmp_bytes != g->tmp_bytes)
		return "its tool profile sets other limits than the pool's sandboxes have";
	return NULL;
}

/* Why a command of tool (NULL: none) that runs in image (NULL: the
 * host's /usr) cannot take a pooled sandbox, or NULL when it can: the
 * image's digest now must be the instances'.  Never across images. */
static const char *
image_why(struct srv *s, const char *image)
{
	char d[SRV_DIGEST_LEN] = "";
	struct wd_err err = {0};
	if (image && srv_image_digest(s, image, d, &err) < 0)
		return "its image cannot be resolved (the fresh run says why)";
	if (strcmp(d, s->pool->digest))
		return image ? "it runs in another image than the pool's sandboxes (a tool's "
			       "image, or a name built again since the server started)"
			     : "it runs on the host's /usr, the pool's sandboxes in an image";
	return NULL;
}

bool
srv_pool_fits(struct srv *s, bool judged, const struct route *rt)
{
	struct srv_pool *p = s->pool;
	if (!p)
		return false;
	const char *why = image_why(s, srv_run_image(s, judged ? rt : NULL));
	if (!why && !judged)
		why = p->folded ? "it skips the policy stage, and the pool's sandboxes carry the "
				  "policy's values"
				: NULL;
	else if (!why)
		why = p->net_why ? p->net_why : profile_why(s, rt);
	atomic_fetch_add(why ? &p->fresh : &p->pooled, 1);
	if (why)
		srv_log(s, WD_LOG_DEBUG, "pool: a fresh sandbox for this call: %s", why);
	return !why;
}

int
srv_pool_run(struct srv *s, const wd_cmd *cmd, wd_result **out, struct wd_err *err)
{
	/* the path must still lead to the server's directory, and the pool
	 * gets that directory, not the path (run.c) */
	char held[32];
	int hfd = srv_workspace_hold(s, held, err);
	if (hfd < 0)
		return -EINVAL;
	int rc = wd_pool_run(s->pool->pool, held, cmd, out, err);
	close(hfd);
	return rc;
}

/* Wait until the first instance is ready, or a build failed with none
 * made: a pool that cannot build would make every call wait forever. */
static int
first_instance(struct srv *s)
{
	struct wd_pool_stats st;
	for (int i = 0; i < 6000; i++) {
		wd_pool_stats(s->pool->pool, &st);
		if (st.ready || st.built)
			return 0;
		if (st.failed)
			break;
		struct timespec ts = {0, 10000000L};
		nanosleep(&ts, NULL);
	}
	char name[300];
	pool_name(s, name, sizeof(name));
	srv_log(s, WD_LOG_ERROR,
		"%s: the pool's first sandbox could not be built%s; nothing is served "
		"(run without a pool, or see warden doctor)",
		name, st.failed ? " (the warning above says why)" : " within 60 s");
	return -EINVAL;
}

int
srv_pool_start(struct srv *s)
{
	struct wd_policy_sandbox ps;
	wd_policy_sandbox(s->policy, &ps);
	unsigned n = s->o.pool_set ? s->o.pool : ps.pool;
	if (n == 0)
		return 0;
	s->pool = xcalloc(1, sizeof(*s->pool));
	s->pool->size = n;
	atomic_init(&s->pool->pooled, 0);
	atomic_init(&s->pool->fresh, 0);
	char name[300];
	pool_name(s, name, sizeof(name));
	/* the library's limits, said with the option that asked (wd_pool_new
	 * would refuse them too, in its own words) */
	if (s->o.isolation != WD_ISOLATION_CONTAINER && s->o.isolation != WD_ISOLATION_GVISOR) {
		srv_log(s, WD_LOG_ERROR,
			"%s: the warm pool works at the container and gvisor levels only, not "
			"with --isolation %s",
			name, wd_isolation_name(s->o.isolation));
		return -EINVAL;
	}
	if (geteuid() != 0) {
		srv_log(s, WD_LOG_ERROR,
			"%s: the warm pool needs root (a pooled sandbox gets the workspace as a "
			"clone of its mount, which needs CAP_SYS_ADMIN on the host)",
			name);
		return -EINVAL;
	}
	struct wd_err err = {0};
	wd_spec *t = pool_template(s, &ps, &err);
	int rc = t ? wd_pool_new(s->ctx, t, n, &s->pool->pool, &err) : -EINVAL;
	wd_spec_free(t);
	if (rc < 0) {
		srv_log(s, WD_LOG_ERROR, "%s: %s", name, err.msg);
		return -EINVAL;
	}
	if ((rc = first_instance(s)) < 0)
		return rc;
	struct route rt;
	route_lookup(s, "run_command", &rt);
	const char *why = s->pool->net_why ? s->pool->net_why : profile_why(s, &rt);
	if (!why && rt.image)
		why = image_why(s, srv_run_image(s, &rt));
	if (why)
		srv_log(s, WD_LOG_WARN,
			"%s: run_command runs in fresh sandboxes under this policy: %s; the "
			"pool serves sandbox.run's commands that fit it",
			name, why);
	if (s->o.image)
		srv_log(s, WD_LOG_INFO, "pool: %u sandboxes kept ready in image %s (%s)", n,
			s->o.image, s->pool->digest);
	else
		srv_log(s, WD_LOG_INFO, "pool: %u sandboxes kept ready", n);
	return 0;
}

/* After every call has ended (workers_stop): wd_pool_free() may not race
 * a wd_pool_run(). */
void
srv_pool_stop(struct srv *s)
{
	struct srv_pool *p = s->pool;
	if (!p)
		return;
	if (p->pool) {
		struct wd_pool_stats st;
		wd_pool_stats(p->pool, &st);
		/* one line for the operator, whatever the log level, like the
		 * listening line: what the pool did over the server's life */
		fprintf(stderr,
			"warden: serve: pool: size %u, ready %u, built %llu, taken %llu, waited "
			"%llu, failed builds %llu, build time %.1f ms each; calls pooled %llu, "
			"fresh %llu\n",
			st.size, st.ready, (unsigned long long)st.built,
			(unsigned long long)st.taken, (unsigned long long)st.waited,
			(unsigned long long)st.failed,
			st.built ? (double)st.build_ns / 1e6 / (double)st.built : 0.0,
			(unsigned long long)atomic_load(&p->pooled),
			(unsigned long long)atomic_load(&p->fresh));
		wd_pool_free(p->pool);
	}
	free(p);
	s->pool = NULL;
}
