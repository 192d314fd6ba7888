/*
 * api_concurrent: many sandboxes at once from many threads of one process,
 * through the public API only (the library's re-entrancy test).
 *
 *   api_concurrent WORKSPACE-PARENT [THREADS SANDBOXES-PER-ROUND ROUNDS]
 *
 * Each round, THREADS threads (default 8) together keep SANDBOXES (32)
 * sandboxes alive at once: each thread creates its share, runs a command
 * that names its sandbox in every one (wd_sandbox_exec), checks every
 * result carries its own marker and the right status, runs a second
 * command that sees the first one's file, and destroys them.  One wd_ctx
 * is shared by all threads; one thread also runs wd_ctx_run one-shots.
 * After ROUNDS (20) rounds: no descriptor, child process or memory left
 * behind, and every event callback was called with a known sandbox id.
 *
 * Prints TAP-ish "ok"/"not ok" lines; exits 1 on any failure, 77 when the
 * host cannot make the sandboxes' namespaces.
 */
#include "warden.h"
#include "proc_stats.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
check(int ok, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&out_lock);
	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

struct shared {
	wd_ctx *ctx;
	const char *parent;
	int per_thread;
	int round;
	atomic_int events, bad_events, errors, skip;
};

static void
on_event(const wd_event *ev, void *data)
{
	struct shared *s = data;
	atomic_fetch_add(&s->events, 1);
	if (strlen(wd_event_sandbox_id(ev)) != 16)
		atomic_fetch_add(&s->bad_events, 1);
	char *j = wd_event_json(ev);
	if (!j || j[0] != '{')
		atomic_fetch_add(&s->bad_events, 1);
	free(j);
}

struct worker {
	struct shared *s;
	int index;
	pthread_t tid;
};

static wd_result *
exec_argv(wd_sandbox *sb, const char *const *argv, int argc, struct wd_err *err)
{
	wd_cmd *cmd = wd_cmd_new();
	wd_result *r = NULL;
	if (wd_cmd_set_argv(cmd, argc, argv, err) < 0 || wd_sandbox_exec(sb, cmd, &r, err) < 0)
		r = NULL;
	wd_cmd_free(cmd);
	return r;
}

static void
one_sandbox_round(struct worker *w, wd_sandbox **sbs, char (*ws)[512])
{
	struct shared *s = w->s;
	struct wd_err err = {0};
	for (int i = 0; i < s->per_thread; i++) {
		if (!sbs[i])
			continue;
		const char *id = wd_sandbox_id(sbs[i]);
		char script[256];
		snprintf(script, sizeof(script), "echo %s-%d; echo %s > mark; exit %d", id, i, id,
			 i % 7);
		const char *const argv[] = {"/bin/sh", "-c", script};
		wd_result *r = exec_argv(sbs[i], argv, 3, &err);
		size_t len = 0;
		const char *out = r ? wd_result_output(r, 1, &len) : "";
		char want[64];
		snprintf(want, sizeof(want), "%s-%d\n", id, i);
		if (!r || wd_result_status(r) != i % 7 || len != strlen(want) ||
		    memcmp(out, want, len) || strcmp(wd_result_sandbox_id(r), id)) {
			check(0, "thread %d sandbox %d: first command (%s)", w->index, i,
			      r ? "wrong result" : err.msg);
			atomic_fetch_add(&s->errors, 1);
		}
		wd_result_free(r);
		const char *const cat[] = {"/bin/cat", "mark"};
		r = exec_argv(sbs[i], cat, 2, &err);
		out = r ? wd_result_output(r, 1, &len) : "";
		if (!r || wd_result_status(r) != 0 || len != 17 || strncmp(out, id, 16)) {
			check(0, "thread %d sandbox %d: the second command sees the first's file",
			      w->index, i);
			atomic_fetch_add(&s->errors, 1);
		}
		wd_result_free(r);
	}
	(void)ws;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *s = w->s;
	struct wd_err err = {0};
	wd_sandbox **sbs = calloc((size_t)s->per_thread, sizeof(*sbs));
	char(*ws)[512] = calloc((size_t)s->per_thread, sizeof(*ws));
	for (int i = 0; i < s->per_thread; i++) {
		snprintf(ws[i], sizeof(ws[i]), "%s/w%d-%d", s->parent, w->index, i);
		mkdir(ws[i], 0755);
		wd_spec *spec = wd_spec_new();
		if (wd_spec_set_workspace(spec, ws[i], &err) < 0 ||
		    wd_sandbox_create(s->ctx, spec, &sbs[i], &err) < 0) {
			if (err.code == WD_E_UNSUPPORTED)
				atomic_store(&s->skip, 1);
			check(0, "thread %d: create sandbox %d: %s", w->index, i, err.msg);
			atomic_fetch_add(&s->errors, 1);
			sbs[i] = NULL;
		}
		wd_spec_free(spec);
	}
	one_sandbox_round(w, sbs, ws);
	if (w->index == 0) {
		/* the one-shot pipeline alongside the live sandboxes */
		wd_spec *spec = wd_spec_new();
		wd_cmd *cmd = wd_cmd_new();
		const char *const t[] = {"/bin/echo", "one-shot"};
		wd_result *r = NULL;
		if (wd_spec_set_workspace(spec, ws[0], &err) < 0 ||
		    wd_cmd_set_argv(cmd, 2, t, &err) < 0 ||
		    wd_ctx_run(s->ctx, spec, cmd, &r, &err) < 0 || wd_result_status(r) != 0) {
			check(0, "thread 0: a one-shot run alongside: %s", err.msg);
			atomic_fetch_add(&s->errors, 1);
		}
		wd_result_free(r);
		wd_cmd_free(cmd);
		wd_spec_free(spec);
	}
	for (int i = 0; i < s->per_thread; i++)
		wd_sandbox_destroy(sbs[i]);
	free(sbs);
	free(ws);
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc != 2 && argc != 5) {
		fprintf(stderr, "usage: api_concurrent DIR [THREADS SANDBOXES ROUNDS]\n");
		return 2;
	}
	int threads = argc == 5 ? atoi(argv[2]) : 8;
	int sandboxes = argc == 5 ? atoi(argv[3]) : 32;
	int rounds = argc == 5 ? atoi(argv[4]) : 20;
	struct shared s = {.parent = argv[1], .per_thread = sandboxes / threads};
	struct wd_err err = {0};
	if (wd_ctx_new(&s.ctx, &err) < 0) {
		printf("not ok - wd_ctx_new: %s\n", err.msg);
		return 1;
	}
	wd_ctx_set_event_handler(s.ctx, on_event, &s, WD_EVENTS_ALL);
	int fds0 = -1;
	long rss0 = -1;
	for (int round = 0; round < rounds; round++) {
		s.round = round;
		struct worker *ws = calloc((size_t)threads, sizeof(*ws));
		for (int t = 0; t < threads; t++) {
			ws[t] = (struct worker){.s = &s, .index = t};
			pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]);
		}
		for (int t = 0; t < threads; t++)
			pthread_join(ws[t].tid, NULL);
		free(ws);
		if (atomic_load(&s.skip)) {
			printf("# the host cannot create the sandboxes\n");
			return 77;
		}
		if (round == 1) { /* after the first rounds' one-time allocations */
			fds0 = proc_count_fds();
			rss0 = proc_rss_kb();
		}
	}
	check(atomic_load(&s.errors) == 0,
	      "%d rounds of %d sandboxes from %d threads: every result "
	      "right (%d errors)",
	      rounds, threads * s.per_thread, threads, atomic_load(&s.errors));
	check(atomic_load(&s.events) > rounds * threads * s.per_thread * 3 &&
		  atomic_load(&s.bad_events) == 0,
	      "events: %d, each with a sandbox id and JSON (%d bad)", atomic_load(&s.events),
	      atomic_load(&s.bad_events));
	int fds1 = proc_count_fds();
	check(fds1 == fds0, "no descriptor left open (%d after round 2, %d at the end)", fds0,
	      fds1);
	long rss1 = proc_rss_kb();
	printf("# VmRSS after round 2 %ld kB, at the end %ld kB\n", rss0, rss1);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* sanitizers keep freed memory in quarantine: LeakSanitizer at exit
	 * is the leak check there */
	(void)rss1;
#else
	check(rss1 - rss0 < 8192, "memory does not grow with rounds (< 8 MiB over %d rounds)",
	      rounds - 2);
#endif
	int kids = proc_count_children();
	/* the context's keeper is its one child until wd_ctx_free */
	check(kids <= 1, "no sandbox process left to the caller (%d children, the keeper at most)",
	      kids);
	wd_ctx_free(s.ctx);
	check(proc_count_children() == 0, "none at all once the context is freed");
	return failures ? 1 : 0;
}
