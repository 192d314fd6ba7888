/* core: the context and the one request pipeline of the library.
 *
 *   wd_ctx     log, audit and event sinks, the policy, the cgroup keeper,
 *              cancellation (ctx.c)
 *   events     the fan-out and the one writer of event JSON (event.c)
 *   wd_cmd     one command (cmd.c)
 *   pipeline   classify -> decide -> audit -> create -> exec -> audit
 *              (pipeline.c, gate.c)
 *   wd_sandbox the public sandbox over supervise/ (sandbox.c)
 *
 * Front ends (the CLI, the server, an embedding program) call only
 * include/warden.h, which lands here.  Dependencies point down: core ->
 * supervise, policy, audit, net. */
#ifndef WD_CORE_H
#define WD_CORE_H

#include "supervise/supervise.h"
#include "spec/spec.h"
#include "result/result.h"

#include <pthread.h>
#include <stdatomic.h>

struct audit_log;
struct jw;

struct wd_ctx {
	pthread_mutex_t lock; /* everything below that changes after set-up */
	struct wd_log_sink log;
	bool log_set;
	wd_ctx_event_fn ev_fn;
	void *ev_data;
	unsigned ev_kinds;
	/* the audit trail: explicit (wd_ctx_set_audit_file), or the policy's
	 * audit.path once the policy stage runs */
	struct audit_log *audit;
	pthread_mutex_t audit_lock; /* one event at a time into the chain */
	char *audit_path;
	/* the policy: a file (reloaded for re-decisions) or the default;
	 * each run holds a reference to the one it decided under */
	char *policy_path;
	struct policy_ref *policy;
	wd_approve_fn approver;
	void *approver_data;
	struct keeper *keeper;
	struct event_sink sink; /* what sandboxes emit through */
	int cancel_fd;		/* eventfd, readable once cancelled */
	atomic_int cancel_sig;
	atomic_int live; /* sandboxes not yet destroyed */
	char *state_dir; /* wd_ctx_set_state_dir, or NULL: the default */
};

struct wd_cmd {
	char **argv;
	int argc;
	char *command;
	char *tool;
	char *cwd;
	char **env; /* NAME=VALUE, NULL-terminated */
	size_t nenv;
	bool policy, interactive;
	uint64_t timeout_ms, output_limit;
	int stdin_fd;
	int cancel_fd; /* wd_cmd_set_cancel_fd: readable -> killed, or -1 */
	int stream_fd[3];
};

struct box;

struct wd_sandbox {
	wd_ctx *ctx;
	struct sandbox *sb;
	struct box *box; /* its state (a cow workspace, a disk), or NULL */
};

/* Make this thread log to the context's sink (if it has one) for the
 * duration of a public call: CTX_ENTER(ctx) ... CTX_LEAVE(). */
#define CTX_ENTER(ctx) const struct wd_log_sink *ctx_prev_log_ = ctx_log_enter(ctx)
#define CTX_LEAVE() wd_log_leave(ctx_prev_log_)
const struct wd_log_sink *ctx_log_enter(wd_ctx *ctx);

/* Fan an event out: the audit trail (all but output), the callback (if
 * its kinds include it), the log (debug). */
void ctx_emit(wd_ctx *ctx, const struct wd_event *ev);
/* The same, failing when the audit trail cannot record it (a decision
 * that cannot be recorded must not be acted on). */
int ctx_emit_checked(wd_ctx *ctx, const struct wd_event *ev, struct wd_err *err);
/* The policy for the pipeline (loaded on first use), referenced: release
 * with ctx_policy_put().  NULL with err when it cannot be loaded. */
struct policy_ref {
	wd_policy *p;
	atomic_int refs;
	bool borrowed; /* wd_ctx_set_policy's: the caller frees p */
};
struct policy_ref *ctx_policy_get(wd_ctx *ctx, struct wd_err *err);
void ctx_policy_put(struct policy_ref *ref);
/* Load the policy file again (after an approval): later gets see the new
 * one; holders of the old keep it until they put it. */
int ctx_policy_reload(wd_ctx *ctx, struct wd_err *err);
/* The audit log for events, opening the policy's audit.path if needed
 * (-errno when it cannot be written: nothing runs unrecorded). */
int ctx_audit_ready(wd_ctx *ctx, struct wd_err *err);
const char *ctx_audit_path(wd_ctx *ctx);
/* The cgroup keeper, started on first use (sandbox.get_keeper). */
struct keeper *ctx_keeper(void *ctx, struct wd_err *err);

/* event.c: the members of an event's JSON (without braces), ASCII when
 * for the audit trail (which never records output bytes). */
void event_write_members(struct jw *w, const struct wd_event *ev, bool for_audit);

/* gate.c: the policy stage for one command.  On an allow, *argv is the
 * judged argv (a new NULL-terminated copy) and spec (a copy made here,
 * when the policy changes it) carries the tool profile's limits and the
 * policy's network rules.  Returns 0 and sets *verdict; a refusal or pause
 * comes back as a result in *out. */
struct gate {
	wd_decision *decision;	  /* owned until moved into the result */
	char **argv;		  /* judged argv to run */
	wd_spec *spec;		  /* NULL: the caller's spec is unchanged */
	struct wd_limits profile; /* a sandbox tool's profile, 0s otherwise */
	struct wd_limits limits;  /* what the policy gives the command where the
				   * caller set nothing: the profile's, else the
				   * policy's "sandbox" (0: warden's default) */
	unsigned require;	  /* WD_REQUIRE_* the policy asks for */
	char digest[65];
	bool audited; /* the decision is in the audit trail: a result must follow */
	/* where the state a paused command's approval covers is (the
	 * placement's state_roots, with its door); NULL: the workspace */
	int (*state_roots)(void *arg, const char **labels, int *fds, int max);
	void *state_arg;
	/* the workspace as the command sees it, for the path checks (the
	 * placement's view, with state_arg, its door); NULL: the workspace */
	int (*view)(void *arg, char *why, size_t cap);
};
/* Fail closed when the sandbox lacks a protection the policy requires
 * (require: WD_REQUIRE_* bits): -ENOTSUP naming it, nothing run. */
int gate_require(unsigned require, struct sandbox *sb, struct wd_err *err);
/* 0 when the sandbox made from spec built runs in the image the decision
 * was made in (the policy's sandbox.image set one on g->spec), else
 * -EINVAL: a live sandbox cannot change its /usr. */
int gate_image_check(const wd_spec *built, const struct gate *g, struct wd_err *err);
void gate_fini(struct gate *g);
/* The policy's "network" object added to spec's (g->spec: a copy, made
 * only when something changes). */
struct wd_policy_sandbox;
int gate_network(const struct wd_policy_sandbox *ps, const wd_spec *spec, struct gate *g,
		 struct wd_err *err);
int gate_run(wd_ctx *ctx, const wd_spec *spec, const char *workspace, const wd_cmd *cmd,
	     const char *sandbox_id, struct gate *g, wd_result **refusal, struct wd_err *err);

/* pipeline.c: the one door every command goes through (see its header).
 * A placement says where the command runs; the door runs the stages. */
struct door {
	wd_ctx *ctx;
	const wd_cmd *cmd;
	void *p;	     /* the placement's state */
	char id[17];	     /* set by prepare: the decision's and result's id */
	const wd_spec *spec; /* set by prepare: what the command is judged against */
	const wd_spec *eff;  /* spec with the policy applied (the gate's copy or spec) */
	struct gate g;
	struct exec_req x;    /* the judged command with the policy's limits */
	struct sandbox *sb;   /* set by acquire when the sandbox is in this process:
			       * sandbox.require is checked on it */
	const char *detached; /* set by exec for a background command: the
			       * result event says so instead of a result */
	int (*state_hook)(struct door *d, const char **labels, int *fds, int max);
	int (*view_hook)(struct door *d, char *why, size_t cap);
	const char *placement; /* the placement's name */
	char state_where[96];  /* "workspace (live ID)": the state's first label */
};
struct placement {
	const char *name;
	unsigned exec_flags; /* SYNC_EXEC_* for the exec_req */
	int (*prepare)(struct door *d, struct wd_err *err);
	/* after an allow: a sandbox for d->eff, or a failure (audited) */
	int (*acquire)(struct door *d, struct wd_err *err);
	/* 0 with *r (or with d->detached set and *r NULL) */
	int (*exec)(struct door *d, wd_result **r, struct wd_err *err);
	void (*release)(struct door *d); /* whatever prepare and acquire took */
	/* optional, after prepare: the trees whose state a paused
	 * command's approval covers, when the command sees more than the
	 * host workspace (a cow view, a session's home and /tmp): up to max
	 * directory descriptors (the caller's to close) with their labels,
	 * their count, or -errno (then no approval can match) */
	int (*state_roots)(struct door *d, const char **labels, int *fds, int max);
	/* optional, after prepare: the workspace as the command will see it
	 * (a cow view, which holds what the model wrote), for the policy's
	 * path checks: an O_PATH directory fd the caller closes, or -errno
	 * with why filled; NULL: the host workspace is what it sees */
	int (*view)(struct door *d, char *why, size_t cap);
};
/* The state a paused command's approval covers in a live sandbox or a
 * session, shared with `warden check --session` and policy.check
 * (session.c, sandbox.c) so that their id is the exec's: the n trees
 * in fds (n < 0: returned as is), the first one's label named with the
 * sandbox it belongs to (into where: "workspace (session ID)"), then
 * the spec's writable --bind sources.  The new count, or -EIO with
 * every fd closed. */
int core_state_sandbox(int n, const char **labels, int *fds, int max, char *where, size_t cap,
		       const char *placement, const char *id, const wd_spec *spec);
/* A container-level sandbox's own trees that outlive a command (home,
 * /tmp, /dev/shm), opened through its pid 1's root, as labels and fds (-1
 * for one that could not be opened: no approval matches); their count,
 * 0 at other levels (sandbox.c). */
int core_own_trees(const struct sandbox *sb, const char **labels, int *fds, int max);
/* The label core_own_trees gives (with -1) while a process other than
 * pid 1 runs in the sandbox: no approval can cover it then. */
extern const char core_running_label[];
/* Run cmd through the stages in the placement pl (state: its own).  0 with
 * *out: a result (ran, denied or paused; NULL for a detached command);
 * -errno with err. */
int pipeline_run(wd_ctx *ctx, const struct placement *pl, void *state, const wd_cmd *cmd,
		 wd_result **out, struct wd_err *err);
/* The refusal a built sandbox gives a command whose policy wants egress
 * it was made without (what: "sandbox", "session", "pool"). */
int pipeline_net_fits(const struct door *d, const wd_spec *built, const char *what,
		      struct wd_err *err);

/* ---- state (state.c, box.c) ---- */

/* The policy's workspace.protect and network object into *spec (replaced
 * when changed) when the context has a policy file: what a sandbox built
 * before its first command must get at creation (state.c). */
int ctx_policy_create(wd_ctx *ctx, wd_spec **spec, struct wd_err *err);
/* The context's state directory, checked (ws_state_root): out PATH_MAX. */
int ctx_state_root(wd_ctx *ctx, char *out, size_t cap, struct wd_err *err);
/* Whether the host's records the context writes or reads again later
 * (the audit log, the policy file, the state directory) lie where a
 * sandbox of spec could write them: 0, or -EINVAL naming the option and
 * the path. */
int ctx_records_check(wd_ctx *ctx, const wd_spec *spec, struct wd_err *err);
/* The spec's image (its rootfs) must not lie in the workspace or a
 * writable bind (ctx_records_check's rule); wd_session_create checks it
 * too, before a session's sandbox starts. */
int ctx_image_check(const wd_spec *spec, struct wd_err *err);

/* A sandbox's state: its directory under sandboxes/, its disk and
 * layers (workspace/).  Ephemeral boxes (a cow wd_sandbox or run) go with
 * the sandbox; a session's stay until it is removed. */
struct box {
	char id[17];
	char root[4096];
	int sbdir; /* sandboxes/ */
	struct ws *ws;
	bool ephemeral;
	bool cow;
	pthread_mutex_t lock; /* one diff, apply or discard at a time */
};
/* Whether spec needs a box of its own (a cow workspace) when it is not
 * a session. */
bool box_needed(const wd_spec *spec);
/* Make the state of sandbox id for spec: its directory, meta.json, a disk
 * of spec's size, the baseline of a cow workspace; then open it.
 * -ENOTSUP where the host cannot (not root, not the container level). */
int box_create(wd_ctx *ctx, const wd_spec *spec, const char *id, bool ephemeral, struct box **out,
	       struct wd_err *err);
/* Open the existing state of sandbox id (root: a checked state dir) for
 * spec (its workspace and mode). */
int box_open(const char *root, const char *id, const wd_spec *spec, struct box **out,
	     struct wd_err *err);
/* Close; an ephemeral box's directory is removed. */
void box_close(struct box *b);
/* Fresh trees for one jail into spec (a copy made for it); the caller
 * closes t once the sandbox is started. */
struct ws_trees;
int box_trees(struct box *b, wd_spec *spec, struct ws_trees *t, struct wd_err *err);
/* Remove ephemeral boxes whose process is gone (warden killed mid-run). */
void box_sweep(const char *root);
/* The change set operations on a box (live: its overlay is in a jail). */
int box_diff(struct box *b, const char *const *paths, size_t np, unsigned flags, char **out,
	     struct wd_err *err);
/* Freeze (on) or thaw a sandbox for a review of its change set; a
 * failure is logged (sandbox.c). */
void sandbox_review(struct sandbox *sb, bool on);
/* expect: the reviewed set's digest, or NULL (ws_apply) */
int box_apply(struct box *b, const char *const *paths, size_t np, const char *expect,
	      unsigned flags, char **report, struct wd_err *err);
int box_discard(struct box *b, const char *const *paths, size_t np, bool live, struct wd_err *err);

/* wd_peer_check as done for another process: the sandboxed commands are
 * pid's descendants (a session monitor's peer checker, session/monitor.c). */
void peer_set_ancestor(long pid);

/* A wd_sandbox over a box (b may be NULL): create as wd_sandbox_create
 * does; the sandbox owns b from then on. */
int sandbox_create_boxed(wd_ctx *ctx, const wd_spec *spec, struct box *b, const char *id,
			 wd_sandbox **out, struct wd_err *err);

#endif
