/* server/health: /healthz and /readyz for an orchestrator.
 *
 *   /healthz  200 "ok" while the process serves (the loop answers it)
 *   /readyz   200 "ok" once the isolation level the operator required
 *             (--isolation) has been seen to work, and not while draining
 *             (SIGTERM); 503 with the reason otherwise; with
 *             --await-activation 200 "ready (awaiting activation)" until
 *             server.activate (a warm pool's "can be claimed")
 *
 * The readiness probe runs the level, never a description of it: a
 * sandbox is built with the server's own spec (its level, limits,
 * network) and destroyed; when that fails, the library's doctor says why
 * the level cannot run here (runsc missing, no user namespaces), or the
 * build's own error is the reason.  A level that does not work
 * keeps the server unready with the reason; nothing falls back to a
 * weaker level (the server runs only at --isolation in any case).  The
 * probe runs on a thread (gVisor takes seconds), and again every
 * HEALTH_REPROBE_S seconds while unready.
 *
 * Both are served without the token (Kubernetes' kubelet holds none) and
 * say nothing beyond ok or the reason: no sessions, no sandboxes, no
 * policy, no version. */
#include "server/health.h"
#include "server/base.h"
#include "server/sanitize.h"
#include "server/srv.h"
#include "server/run.h"

#include <stdio.h>
#include <string.h>

#define level_name wd_isolation_name

static void
set_health(struct srv *s, int h, const char *why)
{
	/* the reason goes to an unauthenticated client and the log: the
	 * library's text, made plain (no control bytes, one line) */
	size_t n = 0;
	char *clean = sanitize_text(why ? why : "", why ? strlen(why) : 0, true, NULL, &n);
	for (char *q = clean; *q; q++)
		if (*q == '\n' || *q == '\r')
			*q = ' ';
	pthread_mutex_lock(&s->health_lock);
	int was = s->health;
	s->health = h;
	snprintf(s->health_why, sizeof(s->health_why), "%s", clean);
	pthread_mutex_unlock(&s->health_lock);
	if (was != h) {
		json_t *f = json_pack("{s:s}", "isolation", level_name(s->o.isolation));
		if (why)
			json_object_set_new(f, "reason", json_string(clean));
		if (h == HEALTH_READY)
			srv_logf(s, WD_LOG_INFO, f, "ready: isolation %s works",
				 level_name(s->o.isolation));
		else
			srv_logf(s, WD_LOG_WARN, f, "not ready: %s", clean);
	}
	free(clean);
}

/* The doctor's verdict on the required level: 0 runnable, else -1 with
 * why filled from its why_not. */
static int
doctor_says(struct srv *s, char *why, size_t cap)
{
	unsigned ok = 0;
	char *text = wd_doctor(true, &ok);
	const char *name = level_name(s->o.isolation);
	int rc = (ok >> s->o.isolation) & 1 ? 0 : -1;
	if (rc < 0) {
		json_error_t je;
		json_t *root = text ? json_loads(text, 0, &je) : NULL;
		const char *w = json_string_value(json_object_get(
		    json_object_get(json_object_get(root, "levels"), name), "why_not"));
		snprintf(why, cap, "isolation %s does not work here: %s", name,
			 w ? w : "the doctor found it missing");
		json_decref(root);
	}
	free(text);
	return rc;
}

static void *
probe_main(void *arg)
{
	struct srv *s = arg;
	char why[384] = "";
	struct wd_err err = {0};
	/* the server's own sandbox, built and ended: the level, the limits
	 * (cgroups), the network and the default image as every call gets them */
	/* the image a run_command gets: the policy's tool image, else --image
	 * (after an activation, the tenant's policy may name one) */
	struct route rt;
	route_lookup(s, "run_command", &rt);
	wd_spec *spec = run_spec(s, NULL, srv_run_image(s, &rt), NULL, &err);
	wd_sandbox *sb = NULL;
	if (!spec || wd_sandbox_create(s->ctx, spec, &sb, &err) < 0) {
		/* why: the doctor's reason when it finds the level missing
		 * (runsc absent, no user namespaces), else the build's error */
		if (doctor_says(s, why, sizeof(why)) == 0)
			snprintf(why, sizeof(why), "isolation %s: a sandbox could not be built: %s",
				 level_name(s->o.isolation), err.msg);
	}
	if (sb)
		wd_sandbox_destroy(sb);
	wd_spec_free(spec);
	set_health(s, why[0] ? HEALTH_UNREADY : HEALTH_READY, why[0] ? why : NULL);
	atomic_store(&s->probe_done, true);
	return NULL;
}

void
health_start(struct srv *s)
{
	if (s->probe_running || s->draining || s->stopping || !s->o.listen)
		return;
	atomic_store(&s->probe_done, false);
	s->probe_ns = now_ns();
	if (pthread_create(&s->probe_thread, NULL, probe_main, s) != 0) {
		set_health(s, HEALTH_UNREADY, "the readiness probe could not start a thread");
		return;
	}
	s->probe_running = true;
}

void
health_recheck(struct srv *s)
{
	health_reap(s);
	if (s->probe_running || !s->o.listen)
		return; /* (none runs: an activation is refused while one does) */
	set_health(s, HEALTH_PROBING, "probing again with the tenant's workspace and policy");
	health_start(s);
}

void
health_reap(struct srv *s)
{
	if (s->probe_running && atomic_load(&s->probe_done)) {
		pthread_join(s->probe_thread, NULL);
		s->probe_running = false;
	}
}

void
health_tick(struct srv *s)
{
	health_reap(s);
	pthread_mutex_lock(&s->health_lock);
	int h = s->health;
	pthread_mutex_unlock(&s->health_lock);
	if (h == HEALTH_UNREADY && now_ns() - s->probe_ns > HEALTH_REPROBE_S * 1000000000ull)
		health_start(s);
}

/* At the stop: a probe still running is waited for (its sandbox is the
 * context's, which is freed after this). */
void
health_stop(struct srv *s)
{
	if (s->probe_running) {
		pthread_join(s->probe_thread, NULL);
		s->probe_running = false;
	}
}

int
health_answer(struct srv *s, const char *path, int *status, char *body, size_t cap)
{
	size_t pl = strcspn(path, "?#");
	if (pl == 8 && !strncmp(path, "/healthz", 8)) {
		*status = 200;
		snprintf(body, cap, "ok\n");
		return 1;
	}
	if (pl != 7 || strncmp(path, "/readyz", 7))
		return 0;
	pthread_mutex_lock(&s->health_lock);
	int h = s->health;
	char why[sizeof(s->health_why)];
	memcpy(why, s->health_why, sizeof(why));
	pthread_mutex_unlock(&s->health_lock);
	*status = 503;
	if (s->draining || s->stopping)
		snprintf(body, cap, "not ready: draining (SIGTERM)\n");
	else if (s->token_bad)
		snprintf(body, cap,
			 "not ready: --token-file changed and fails the checks: every request is "
			 "refused\n");
	else if (h == HEALTH_PROBING)
		snprintf(body, cap, "not ready: probing isolation %s\n",
			 level_name(s->o.isolation));
	else if (h == HEALTH_UNREADY)
		snprintf(body, cap, "not ready: %s\n", why);
	else {
		/* a warm pod (--await-activation) is ready to be claimed:
		 * ready, and says what it awaits */
		*status = 200;
		snprintf(body, cap, s->activated ? "ok\n" : "ready (awaiting activation)\n");
	}
	return 1;
}
