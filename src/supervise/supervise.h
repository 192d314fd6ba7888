/* supervise: sandboxes as objects the supervisor holds, behind one backend
 * interface; commands run in them with pipes, bounded capture, timeouts
 * and a result.
 *
 *   struct backend_ops    one table per isolation level (backend.c):
 *                         probe, prepare, spawn, ready, exec, kill, destroy;
 *                         container and process share the local monitor
 *                         (local.c, local_exec.c), gvisor plugs in here.
 *   struct sandbox        one built (or building) sandbox: its spec, plan,
 *                         cgroup, egress proxy and pid 1 (sandbox.c).
 *   struct exec_req       one command for a sandbox, already decided on.
 *   struct keeper         per context: the process that removes sandbox
 *                         cgroups if warden dies (keeper.c).
 *   struct wd_event       the one event type (defined here, below core/,
 *                         which serialises it); sandboxes emit lifecycle,
 *                         network and output events through a hook.
 *
 * Thread safety: distinct sandboxes are independent; one sandbox may run
 * commands from several threads at once (sandbox.lock guards its shared
 * state).  Nothing here touches process-wide state (signal masks,
 * subreaper flags, statics): the process level's subreaper is its own
 * monitor process, and a signal for warden is the front end's business
 * (wd_sandbox_cancel). */
#ifndef WD_SUPERVISE_H
#define WD_SUPERVISE_H

#include "util/util.h"
#include "jail/sync.h"
#include "result/result.h"

#include <pthread.h>
#include <stdatomic.h>

struct net_rules;
struct net_event;
struct net_proxy;
struct cgroup;
struct jail_prep;

/* ---- events ---- */
struct wd_event {
	enum wd_event_kind kind;
	const char *name;
	const char *sandbox_id;
	const wd_decision *decision;	  /* DECISION, RESULT */
	const struct wd_request *request; /* DECISION */
	const wd_result *result;	  /* RESULT */
	const char *failure;		  /* RESULT when warden failed: the message */
	const struct net_event *net;	  /* NETWORK */
	const char *data;		  /* OUTPUT: bytes; APPROVAL: approval id */
	size_t len;			  /* OUTPUT */
	int stream;			  /* OUTPUT */
	const char *detail;		  /* APPROVAL, SANDBOX: one line */
	struct json_t *fields;		  /* ROUTE, FILE, START: members (a jansson object) */
	const char *policy_stage;	  /* "on", "off", or NULL: not one command's */
};

/* Where a sandbox sends its events (the context's fan-out). */
struct event_sink {
	void (*emit)(void *data, const struct wd_event *ev);
	void *data;
	bool (*wants)(void *data, enum wd_event_kind kind);
};

static inline void
event_emit(const struct event_sink *s, const struct wd_event *ev)
{
	if (s && s->emit)
		s->emit(s->data, ev);
}

static inline bool
event_wanted(const struct event_sink *s, enum wd_event_kind k)
{
	return s && s->wants && s->wants(s->data, k);
}

/* ---- bounded capture: head + tail windows, constant memory ----
 * The first cap/2 bytes are kept (and streamed as they arrive), the last
 * cap/2 bytes live in a ring; everything between is counted, not kept. */
struct capture {
	char *head;
	size_t head_cap, head_len;
	char *ring;
	size_t ring_cap, ring_start, ring_len;
	uint64_t total;
	int stream_fd; /* -1: keep only */
	int stream;    /* 1 or 2, for the marker text */
	/* Streaming never blocks past the deadline or a cancellation
	 * (abort_fd readable): a reader that stalls only loses the live copy. */
	uint64_t deadline_ns;
	int abort_fd;
	/* called with each part of the head as it arrives (output events) */
	void (*on_head)(void *data, int stream, const char *buf, size_t n);
	void *on_head_data;
};

void capture_init(struct capture *c, uint64_t limit, int stream, int stream_fd);
void capture_fini(struct capture *c);
void capture_feed(struct capture *c, const char *buf, size_t n);
uint64_t capture_omitted(const struct capture *c);
/* The kept window with the marker line where bytes were cut: a new string
 * (free with free()), its length in *len. */
char *capture_window(const struct capture *c, size_t *len);
/* Stream what is still unstreamed (marker + tail) to stream_fd. */
void capture_flush(struct capture *c);
/* The marker line for n omitted bytes (a new string), with a leading
 * newline unless the kept head ends a line. */
char *capture_marker(int stream, uint64_t omitted, bool at_line_start);

/* ---- a terminal as stdin, relayed (relay.c) ----
 * Usage: init; open (gives the socket end the command gets as stdin);
 * set ep, watch; pump on events for which owns() is true; stop. */
struct stdin_relay {
	int tty_in, relay_w, ep;
	char buf[4096];
	size_t len, off;
};
void stdin_relay_init(struct stdin_relay *r);
int stdin_relay_open(struct stdin_relay *r, int tty_fd, int *read_end, struct wd_err *err);
void stdin_relay_watch(struct stdin_relay *r);
bool stdin_relay_owns(const struct stdin_relay *r, int fd);
void stdin_relay_pump(struct stdin_relay *r);
void stdin_relay_stop(struct stdin_relay *r);

/* ---- a command's output (output.c), shared by every backend's loop ---- */
struct sandbox;
struct exec_req;
struct cmd_output {
	struct sandbox *sb;
	int fd[3]; /* [1] stdout, [2] stderr read ends; -1: drained */
	struct capture cap[3];
};
/* Windows of the command's (or the spec's) output limit, live copies to
 * x's stream fds, output events when the sandbox's sink wants them.  The
 * fds are the caller's to set. */
void cmd_output_init(struct cmd_output *o, struct sandbox *sb, const struct exec_req *x,
		     uint64_t deadline_ns);
/* Read what stream (1 or 2) has, a bounded number of reads; at EOF the fd
 * leaves ep and is closed. */
void cmd_output_drain(struct cmd_output *o, int stream, int ep, char *buf, size_t cap);
/* Stop reading (close what is left open). */
void cmd_output_close(struct cmd_output *o);
/* The kept windows, counts and the rest of the live copy, into res. */
void cmd_output_collect(struct cmd_output *o, wd_result *res);
void cmd_output_fini(struct cmd_output *o);

/* ---- one command's loop (cmd_loop.c), shared by every backend ----
 * The output pipes, a terminal's relay, the cancellation descriptors and
 * the clock are the same for every backend; what differs (how the
 * command's end is learnt, how it is stopped, the backend's own
 * descriptors) comes through ops.  Usage: fill sb, x, io.fd, ops, priv
 * (cmd_loop_init first); cmd_loop_watch; cmd_loop_run; the result with
 * cmd_loop_result and cmd_loop_forced_status; cmd_loop_fini. */
struct cmd_loop;
/* Where a command is, as its backend sees it. */
enum cmd_phase {
	CMD_RUNNING,  /* the deadline counts */
	CMD_STOPPING, /* asked to stop (by the clock, or otherwise): no deadline */
	CMD_ENDED,    /* its end is known (its status, or its sandbox's death) */
};
struct cmd_loop_ops {
	enum cmd_phase (*phase)(const struct cmd_loop *l);
	/* end the command (the deadline, a cancellation); the backend
	 * ignores a call once the command has ended */
	void (*stop)(struct cmd_loop *l);
	/* a readable descriptor of the backend's: false when not its own */
	bool (*on_fd)(struct cmd_loop *l, int fd);
	/* optional: before each wait (descriptors the backend adds late) */
	void (*prepare)(struct cmd_loop *l);
	/* optional: after each wait, with the time (the backend's own
	 * graces) */
	void (*tick)(struct cmd_loop *l, uint64_t now);
	/* optional: the output was stopped being read (the drain grace) */
	void (*closed_late)(struct cmd_loop *l);
	/* while stopping and not ended: the wake-up period, 0 for none */
	int stop_poll_ms;
};
struct cmd_loop {
	struct sandbox *sb;
	const struct exec_req *x;
	const struct cmd_loop_ops *ops;
	void *priv;
	struct cmd_output io; /* io.fd[1], io.fd[2]: the output pipes */
	struct stdin_relay relay;
	int ep;
	uint64_t t0, deadline_ns;
	uint64_t exit_ns; /* when its status came (the backend's; 0: none, no drain grace) */
	bool drain_grace; /* the sandbox outlives the command: its pipes may stay open */
	bool timed_out, closed_late;
	bool past_deadline; /* the clock's stop was made (timed out, or cancelled first) */
	int killed_by;	    /* the signal of a cancellation */
};
/* Start the clock: t0 now, the deadline from x's or the spec's timeout. */
void cmd_loop_init(struct cmd_loop *l, struct sandbox *sb, const struct exec_req *x);
/* The descriptors a command is started with, the host's ends: its stdin
 * (a terminal's relay, the caller's descriptor, or /dev/null) and two
 * output pipes. */
struct cmd_stdio {
	int in; /* the command's stdin (one of the three below, or x's) */
	int relay_r, devnull;
	int outp[2], errp[2]; /* [1]: the command's; [0]: ours */
};
/* Open them: pipes with non-blocking, enlarged read ends (fewer wake-ups
 * when a command floods its output), all close-on-exec. */
int cmd_stdio_open(struct cmd_loop *l, struct cmd_stdio *s, struct wd_err *err);
/* Once the command has its copies: the read ends into l->io. */
void cmd_stdio_take(struct cmd_loop *l, struct cmd_stdio *s);
/* Close what is still open (always, success or not). */
void cmd_stdio_close(struct cmd_stdio *s);
/* The output windows, the epoll set over the pipes, the relay, extra (the
 * backend's, -1 skipped) and the cancellation descriptors; a cancellation
 * that came before the command was sent is acted on now. */
int cmd_loop_watch(struct cmd_loop *l, const int *extra, size_t n, struct wd_err *err);
/* Until the command has ended and its output is drained (or, after the
 * drain grace, stopped being read). */
int cmd_loop_run(struct cmd_loop *l, struct wd_err *err);
/* A cancellation: the signal recorded once, the command stopped. */
void cmd_loop_cancel(struct cmd_loop *l, int sig);
/* A result with the wall clock and the output (status is the caller's). */
wd_result *cmd_loop_result(struct cmd_loop *l, void (*describe)(struct sandbox *, wd_result *));
/* A timeout (124) or a cancellation (128+signal) decides the status
 * whatever the command reported: true when one did. */
bool cmd_loop_forced_status(const struct cmd_loop *l, wd_result *res);
void cmd_loop_fini(struct cmd_loop *l);

/* A command's working directory in the sandbox's view: the workspace, or
 * cwd below it (relative, no ".."); NULL with err otherwise. */
char *sandbox_command_cwd(const struct sandbox *sb, const char *cwd, struct wd_err *err);

/* ---- one command ---- */
struct exec_req {
	const char *const *argv;      /* NULL-terminated */
	const char *const *env;	      /* the command's own NAME=VALUE, NULL-terminated, or NULL */
	const char *cwd;	      /* relative to the workspace; NULL: its root */
	uint64_t timeout_ms;	      /* 0: the spec's */
	uint64_t output_limit;	      /* 0: the spec's */
	int stdin_fd;		      /* -1: /dev/null */
	int stream_fd[3];	      /* [1], [2]: live copies, or -1 */
	unsigned flags;		      /* SYNC_EXEC_LAST: the sandbox ends with it;
				       * SYNC_EXEC_DETACH: a session's background command */
	int log_fd;		      /* with SYNC_EXEC_DETACH: its stdout and stderr (a
				       * file), instead of the capture's pipes */
	int cancel_fd;		      /* readable: stop (the context's), or -1 */
	const atomic_int *cancel_sig; /* the signal behind cancel_fd */
	int cmd_cancel_fd;	      /* this command's own: readable -> SIGKILL, or -1 */
};

/* ---- the keeper (keeper.c) ---- */
struct keeper;
/* Start the keeper process: a raw clone that holds the read end of a pipe
 * and knows the cgroups of live sandboxes.  EOF without a goodbye means
 * warden died: it kills what is left in them and removes them. */
int keeper_start(struct keeper **out, struct wd_err *err);
/* Tell it about a sandbox's cgroup directories (watch) or that they are
 * gone (release).  Thread-safe. */
void keeper_watch(struct keeper *k, const char *const *dirs);
void keeper_release(struct keeper *k, const char *const *dirs);
/* Say goodbye, wait for it to exit, free. */
void keeper_stop(struct keeper *k);

/* ---- sandboxes and backends ---- */
struct sandbox;

struct backend_probe {
	bool ok;
	char why[256];	/* when not ok: what is missing */
	char warn[256]; /* when ok: what it runs without here */
	char note[128]; /* when ok: one fact worth showing ("Landlock ABI 7") */
};

/* What a level can do.  Core asks these, never which level it has: a
 * new level says what it can in its table, and every question about it
 * is answered there (backend_can). */
enum backend_cap {
	/* warden builds the sandbox's mount namespace itself, so a cow
	 * overlay, a sandbox disk and a warm pool's detached workspace can
	 * be shown in it (runsc builds gVisor's; the process level has none) */
	BACKEND_CAP_MOUNTS = 1u << 0,
	/* user and network namespaces of warden's own around the command:
	 * what a policy's sandbox.require userns / netns asks for */
	BACKEND_CAP_NAMESPACES = 1u << 1,
	/* the command shares the host's /tmp and /dev/shm (the process
	 * level): a workspace there is writable by it from outside */
	BACKEND_CAP_HOST_TMP = 1u << 2,
	/* a warm pool: vacant sandboxes, each given its workspace at take
	 * time by attach() (the container level: pid 1 moves the tree in;
	 * gvisor: mounted in the gofer's namespace, bound by the executor) */
	BACKEND_CAP_POOL = 1u << 3,
};

struct backend_ops {
	const char *name;
	enum wd_isolation level;
	unsigned caps; /* enum backend_cap */
	/* Can this host run the level?  From real probes, cheap enough to
	 * call once per context. */
	void (*probe)(struct backend_probe *out);
	/* Plan and build what needs no process: the jail plan, host trees,
	 * the egress proxy.  Bad input fails here (-EINVAL), nothing started. */
	int (*prepare)(struct sandbox *sb, struct wd_err *err);
	/* Start the sandbox's processes; returns once they exist (the jail
	 * may still be building: ready() or the first exec waits for it). */
	int (*spawn)(struct sandbox *sb, struct wd_err *err);
	/* Wait until the sandbox can run commands. */
	int (*ready)(struct sandbox *sb, struct wd_err *err);
	/* Run one command; fills *out (a new result) unless warden failed. */
	int (*exec)(struct sandbox *sb, const struct exec_req *x, wd_result **out,
		    struct wd_err *err);
	/* Kill every process of the sandbox. */
	void (*kill)(struct sandbox *sb);
	/* The protections in force, into r's protection fields. */
	void (*describe)(struct sandbox *sb, wd_result *r);
	/* Reap, remove, free what prepare and spawn made (not sb itself). */
	void (*destroy)(struct sandbox *sb);
	/* What the sandbox would be, as text, from a prepared sandbox that
	 * was never started (`warden run --print-plan`): a new string. */
	char *(*plan_text)(struct sandbox *sb);
	/* A vacant sandbox (warm pool): hand it its workspace, a detached
	 * tree (not owned), before its first command.  NULL: the level
	 * cannot (sandbox_attach() says -ENOTSUP). */
	int (*attach)(struct sandbox *sb, int tree_fd, struct wd_err *err);
	/* The tree attach() gets is idmapped so that its owner appears as
	 * this uid and gid (the sandbox user as the level's file server sees
	 * it); attach_root_creates: host root may create files through it
	 * (gVisor's gofer creates as root, then chowns) */
	uid_t attach_uid;
	bool attach_root_creates;
};

const struct backend_ops *backend_for(enum wd_isolation level);
/* Whether level's backend has every bit of caps (false for an unknown
 * level). */
bool backend_can(enum wd_isolation level, unsigned caps);

enum sandbox_state {
	SB_NEW = 0, /* prepared, nothing started */
	SB_SPAWNED, /* pid 1 exists and is building the jail */
	SB_READY,   /* pid 1 waits for commands */
	SB_DEAD,    /* pid 1 is gone (or set-up failed) */
};

struct sandbox {
	char id[17];
	/* "on"/"off" for a sandbox made for one command (its network events
	 * say whether the policy judged that command); NULL when shared */
	const char *policy_stage;
	const struct backend_ops *ops;
	wd_spec *spec; /* own copy */
	const struct event_sink *events;
	struct keeper *(*get_keeper)(void *data, struct wd_err *err);
	void *keeper_data;
	struct keeper *keeper; /* when the cgroup is watched */

	pthread_mutex_t lock; /* state, the sandbox channel, setup errors */
	enum sandbox_state state;
	uint64_t t0;
	uint32_t seq; /* commands sent */
	int running;  /* commands in progress */

	/* the local monitor (container and process levels) */
	struct jail_prep *prep;
	int image_fd; /* the image's directory, flock(LOCK_SH) while we live */
	struct cgroup *cg;
	/* sandbox_freeze: 0 running, else cgroup_freeze's how (read
	 * unlocked by sandbox_exec) */
	atomic_int review_frozen;
	struct net_proxy *proxy;
	struct net_rules *own_rules;
	int pidfd;
	pid_t pid;
	struct sync_chan chan; /* the sandbox channel (supervisor's end) */
	int setup_step, setup_errno, setup_op;
	bool time_ns_active; /* pid 1 made the time namespace (SYNC_READY) */
	bool reaped;
	bool vacant; /* built without a workspace (SYNC_VACANT), not attached yet */

	/* a backend's own state (gvisor.c), freed by its destroy */
	void *priv;

	/* cancellation: wd_sandbox_cancel() writes the eventfd */
	int cancel_fd;
	atomic_int cancel_sig;

	/* distinct network refusals, written on the proxy's thread: the
	 * least recent one makes room for a new one */
	pthread_mutex_t ref_lock;
	struct net_refusal refs[NET_REFUSALS_MAX];
	size_t nrefs;
	uint64_t ref_seq, ref_evicted_seq;
};

/* Record a refused network event of sb (the proxy's thread). */
void sandbox_note_refusal(struct sandbox *sb, const struct net_event *ev);
/* The refusal counter now: a command's results take the refusals after it. */
uint64_t sandbox_refusal_mark(struct sandbox *sb);
/* The distinct refusals after mark, into r. */
void sandbox_refusals_collect(struct sandbox *sb, uint64_t mark, wd_result *r);

/* Make a sandbox object for spec (copied) with a fresh id (or the given
 * one), prepare it (no process yet).  events may be NULL. */
/* After a failure to build a container-level sandbox: append to err's
 * message the requirement warden's own confinement lacks (a capability,
 * an unmasked /proc, a seccomp filter's permission), if it can tell
 * (confine_hint.c). */
void confine_hint(const wd_spec *spec, int rc, struct wd_err *err);
int sandbox_new(const wd_spec *spec, const char *id, const struct event_sink *events,
		struct sandbox **out, struct wd_err *err);
int sandbox_start(struct sandbox *sb, struct wd_err *err); /* spawn */
int sandbox_wait_ready(struct sandbox *sb, struct wd_err *err);
/* Freeze (on) the sandbox's processes for a review of its change set, or
 * let them run again; a command sent to it thaws it first.  Under lock.
 * 0, or -errno (-ENOENT: the sandbox has no cgroup to freeze). */
int sandbox_freeze(struct sandbox *sb, bool on, struct wd_err *err);
int sandbox_exec(struct sandbox *sb, const struct exec_req *x, wd_result **out, struct wd_err *err);
/* warden update of a running sandbox: lim's non-zero memory, pids and cpu
 * written to its cgroup in place (a memory limit below its usage: -EBUSY),
 * and rules (taken on success when the proxy took it: *applied has
 * SANDBOX_UPDATED_RULES) made its proxy's.  What the sandbox has no
 * cgroup or proxy for is left (its bit not set).  All or nothing: 0, or
 * -errno with nothing changed. */
#define SANDBOX_UPDATED_LIMITS 1u
#define SANDBOX_UPDATED_RULES 2u
int sandbox_update(struct sandbox *sb, const struct wd_limits *lim, struct net_rules *rules,
		   unsigned *applied, struct wd_err *err);
void sandbox_cancel(struct sandbox *sb, int signo);
void sandbox_free(struct sandbox *sb); /* destroys what is left first */
/* What every backend's destroy ends with, once the sandbox's processes
 * are gone: its egress proxy, its own network rules, its cgroup (killed,
 * removed, released from the keeper).  True when it had a cgroup. */
bool sandbox_release_host(struct sandbox *sb);
/* The egress proxy's part of a result (every backend's describe). */
void sandbox_describe_net(struct sandbox *sb, wd_result *r);
/* A ready vacant sandbox's workspace (tree_fd not owned): sent to pid 1,
 * which moves it into place; a command may be sent right behind it.
 * -ENOTSUP at a level that cannot, -EINVAL when not vacant. */
int sandbox_attach(struct sandbox *sb, int tree_fd, struct wd_err *err);
/* Lifecycle event "sandbox.<what>" with an optional detail line. */
void sandbox_event(struct sandbox *sb, const char *what, const char *detail);
/* A new random 16-hex id. */
void sandbox_make_id(char out[17]);

/* The sandbox's jail plan from its spec, and its egress proxy (whose CA
 * the plan needs) when the spec asks for egress: any backend's prepare
 * (local.c).  container: namespaces and mounts in the plan. */
int sandbox_plan(struct sandbox *sb, bool container, bool time_ns, struct wd_err *err);

/* ---- the local backend (container, process): local.c, local_exec.c ---- */
int local_prepare(struct sandbox *sb, struct wd_err *err);
int local_spawn(struct sandbox *sb, struct wd_err *err);
int local_ready(struct sandbox *sb, struct wd_err *err);
int local_exec(struct sandbox *sb, const struct exec_req *x, wd_result **out, struct wd_err *err);
void local_kill(struct sandbox *sb);
void local_destroy(struct sandbox *sb);
int local_attach(struct sandbox *sb, int tree_fd, struct wd_err *err);
/* Handle what pid 1 sent on the sandbox channel (under sb->lock). */
void local_read_setup(struct sandbox *sb);
/* The error a failed set-up reported, as err (returns -errno). */
int local_setup_error(struct sandbox *sb, struct wd_err *err);
/* A write to pid 1 failed (rc): the jail step that ended it, if pid 1 said
 * which before it went, else WHAT and the error. */
int local_send_failed(struct sandbox *sb, int rc, const char *what, struct wd_err *err);
/* Fill the protections of r from the sandbox. */
void local_describe(struct sandbox *sb, wd_result *r);
/* The sandbox's cgroup (sb->cg) with limits cl and cgroup_create_flags()'
 * flags, watched by the context's keeper from before it exists; an
 * unprivileged caller without cgroups gets -ENOTSUP unless best effort
 * (then sb->cg stays NULL).  Shared by every backend. */
struct cgroup_limits;
int sandbox_cgroup_create(struct sandbox *sb, const struct cgroup_limits *cl, unsigned flags,
			  struct wd_err *err);
/* The jail plan as text (struct backend_ops.plan_text). */
char *local_plan_text(struct sandbox *sb);

/* ---- the gvisor backend (gvisor*.c) ---- */
extern const struct backend_ops gvisor_ops;

#endif
