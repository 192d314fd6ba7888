/* server/sandbox.h - live sandboxes (struct live: dispatch.c), the
 * sessions that come back after a restart (restore.c) and the warm pool
 * (pool.c). */
#ifndef WD_SERVER_SANDBOX_H
#define WD_SERVER_SANDBOX_H

#include "server/srv.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A live sandbox created by sandbox.create: held by its owner's table
 * and by every exec running in it. */
struct live {
	char id[17];
	wd_sandbox *sb;
	wd_workspace *ws; /* NULL: live_view opens its view for each call */
	dev_t ws_dev;	  /* ... and checks it is this directory, made at create */
	ino_t ws_ino;
	bool cow;    /* a copy-on-write workspace: diff, apply, discard */
	bool by_mcp; /* made by the sandbox_create tool (sandbox_list says so) */
	bool sess;   /* a library session (restore.c): id is its id, sb and ws NULL */
	bool kept;   /* ... named by a record: only stopped when the server stops */
	char *image; /* the image it was made in, as the caller named it, or NULL */
	char digest[SRV_DIGEST_LEN]; /* ... resolved once, at create: its digest */
	wd_spec *spec;		     /* what it was made from (in-process ones): policy.check's */
	struct srv *srv;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int refs;	   /* under lock */
	int running;	   /* execs in progress, under lock */
	struct live *next; /* in the owner's table (loop thread) */
};

struct live *live_get(struct live *l);
/* A live sandbox over library session id (restore.c). */
struct live *live_new_session(struct srv *s, const char *id, bool cow, bool kept);
/* An ordinary user's anonymous cow sandbox (a library session no record
 * names): its name says which server made it ("serve.lk.ID.RND", ID the
 * server's lock, srv_anon_lock; "serve.PID.START.RND" when it has none),
 * so that a server started later on the state directory removes those
 * whose server is gone (srv_sweep_anon, at start). */
void srv_anon_name(struct srv *s, char *buf, size_t n, const char *rnd);
/* An ordinary user's server: take STATE/serve-anon/ID.lock (a new random
 * ID), flocked for the server's life; logged and left without (the
 * pid-and-start-time names) when the directory cannot have it. */
void srv_anon_lock(struct srv *s);
/* One server per --state-dir: DIR/serve/lock, flocked (exclusive) for
 * the server's life, before anything is made on the directory; -EBUSY
 * (logged, naming the option, the path and the holder's pid) when
 * another server holds it. */
int srv_state_lock(struct srv *s);
void srv_sweep_anon(struct srv *s);
/* What a live sandbox offers, for an in-process sandbox or a session
 * alike (dispatch.c).  live_view: its workspace view; close it with
 * live_view_done. */
int live_diff(struct live *l, const char *const *paths, size_t n, unsigned flags, char **out,
	      struct wd_err *err);
int live_apply(struct live *l, const char *const *paths, size_t n, const char *expect,
	       unsigned flags, char **report, struct wd_err *err);
int live_discard(struct live *l, const char *const *paths, size_t n, struct wd_err *err);
wd_workspace *live_view(struct live *l, struct wd_err *err);
/* A session whose monitor is gone: start it again over its files. */
int live_session_start(struct live *l, struct wd_err *err);
/* file_tool() on l's view (harness.c). */
json_t *live_file_tool(struct call *c, struct live *l, const char *tool, json_t *args,
		       bool for_model, struct rpc_err *e);
void live_view_done(struct live *l, wd_workspace *ws);
void live_put(struct live *l);
/* End it: cancel what runs in it, wait for the other holders, destroy,
 * free.  The caller holds the last table reference.  May block: workers
 * and destroyer threads only. */
void live_end(struct live *l);

/* restore.c: sessions that come back after a restart on --state-dir */
int srv_records_open(struct srv *s);
/* Whether p's new cow sandboxes are library sessions written down. */
bool srv_persists(const struct peer *p);
/* Write p's record (its session sandboxes), or remove it when it has
 * none; nothing while the server stops (the records stay). */
void record_save(struct srv *s, struct peer *p);
/* Take back the sessions of the records (at start; after activation). */
void srv_restore(struct srv *s);

/* pool.c: the warm pool (--pool, sandbox.pool).  start: at the end of
 * srv_init (a pool that cannot work is an error); stop: when every call
 * has ended, logging the pool's stats. */
int srv_pool_start(struct srv *s);
void srv_pool_stop(struct srv *s);
/* Should an ephemeral run take a pooled sandbox?  judged: the command goes
 * through the policy stage; rt: its tool's route (NULL: no tool).  false
 * without a pool, or when the run's sandbox would differ from the pool's. */
bool srv_pool_fits(struct srv *s, bool judged, const struct route *rt);
int srv_pool_run(struct srv *s, const wd_cmd *cmd, wd_result **out, struct wd_err *err);

#endif
