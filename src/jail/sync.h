/* jail/sync: the protocol between the supervisor and a sandbox's pid 1.
 *
 * Two kinds of channel, both SOCK_SEQPACKET socketpairs (one record per
 * message, descriptors as SCM_RIGHTS):
 *
 *   the sandbox channel   made before clone3; pid 1 holds one end for its
 *                         whole life, so EOF on either side means the other
 *                         is gone (warden died, or the sandbox did);
 *   an exec channel       one per command, made by the supervisor and sent
 *                         to pid 1 inside SYNC_EXEC; it carries that
 *                         command's start, failure, kill and end.
 *
 * Each message is legal only in some states of its channel, travels in one
 * direction and carries a fixed number of descriptors.  The table in
 * sync.c is the whole protocol (OpenSSH's monitor table is the model):
 * sync_send() refuses to send, and sync_recv() refuses to accept, anything
 * the table does not allow in the channel's current state, so a confused
 * or compromised peer gets -EPROTO instead of an action.
 *
 * Sandbox channel, states and messages:
 *
 *     CLONED --GO (s>p)--> MAPPED --CGROUP (s>p, 0..8 fds)--> SETUP
 *     MAPPED|SETUP --NET_READY (p>s, 3 fds)--> (same)   egress mode only; pid 1
 *                                                        makes its listeners before
 *                                                        it joins the cgroup
 *     SETUP  --READY (p>s)--> IDLE                       the jail is built
 *     SETUP  --ERROR (p>s)--> DEAD                       a step failed
 *     IDLE   --EXEC (s>p, 5 fds)--> IDLE                 may repeat
 *
 *   A vacant sandbox (the warm pool's: its plan says vacant) is built
 *   without a workspace and is told its workspace once, before any command:
 *
 *     SETUP  --VACANT (p>s)--> VACANT                    built, /workspace empty;
 *                                                        pid 1 still holds its
 *                                                        capabilities
 *     VACANT --ATTACH (s>p, 1 fd)--> ATTACHING           a detached tree: pid 1
 *                                                        moves it to /workspace,
 *                                                        protects paths in it,
 *                                                        drops its capabilities
 *     ATTACHING --ATTACHED (p>s)--> IDLE
 *     ATTACHING --ERROR (p>s)--> DEAD                    the attach failed
 *
 *   EXEC may be sent behind ATTACH (the pool pipelines its one command):
 *   legal to send in ATTACHING, read by pid 1 only once it is IDLE.
 *
 *   s>p: supervisor to pid 1; p>s: pid 1 to supervisor.  The supervisor may
 *   queue EXEC before READY arrives (a one-shot run pipelines its only
 *   command behind the set-up): pid 1 reads it only once it is IDLE, so
 *   EXEC is legal to send from MAPPED on, and to receive in IDLE.
 *
 * Exec channel (one command):
 *
 *     SENT --EXEC_FAILED (x>s)--> SENT                   execve or a step failed
 *     SENT --KILL (s>p)--> SENT                          signal the command
 *     SENT --EXIT (p>s)--> DONE                          its wait status, usage
 *
 *   x>s: the command's own process before execve, on its inherited copy.
 *
 *   SYNC_EXEC_DETACH (a session's `warden exec --detach`): when the
 *   command's own process ends, pid 1 reports EXIT as usual but leaves its
 *   process group alone: what it started in the background (a dev server)
 *   lives until the sandbox ends.  Without the flag the group is killed.
 *
 * Nothing here allocates or formats: both sides use it, the child side
 * after clone(). */
#ifndef WD_JAIL_SYNC_H
#define WD_JAIL_SYNC_H

#include <stdbool.h>
#include <stdint.h>

enum sync_kind {
	SYNC_GO = 1,	  /* maps written: go on with the set-up */
	SYNC_CGROUP,	  /* the cgroup exists; v1: its tasks files to join */
	SYNC_NET_READY,	  /* the proxy's listeners, made in the sandbox's netns */
	SYNC_READY,	  /* the jail is built, pid 1 waits for commands */
	SYNC_ERROR,	  /* a set-up step failed: step, errno, operation */
	SYNC_EXEC,	  /* run a command: stdin, stdout, stderr, its plan, its channel */
	SYNC_EXEC_FAILED, /* a step of the command's set-up or execve failed */
	SYNC_KILL,	  /* signal the command's process group (status: signal) */
	SYNC_EXIT,	  /* the command ended: wait status and usage */
	SYNC_VACANT,	  /* the jail is built without a workspace (warm pool) */
	SYNC_ATTACH,	  /* the workspace: a detached mount tree for /workspace */
	SYNC_ATTACHED,	  /* the workspace is in place: commands may run */
	SYNC__COUNT
};

enum sync_state {
	/* sandbox channel */
	SYNC_S_CLONED = 0,
	SYNC_S_MAPPED,
	SYNC_S_SETUP,
	SYNC_S_IDLE,
	SYNC_S_DEAD,
	SYNC_S_VACANT,
	SYNC_S_ATTACHING,
	/* exec channel */
	SYNC_S_SENT,
	SYNC_S_DONE,
	SYNC_S__COUNT
};

/* Which end of a channel this process holds. */
enum sync_role {
	SYNC_SUPERVISOR = 0,
	SYNC_PID1 = 1,
	SYNC_COMMAND = 2, /* the command's process, before execve */
};

/* SYNC_READY status bits: what pid 1 could put in force */
#define SYNC_READY_TIME_NS 0x1 /* a time namespace (kernels without CONFIG_TIME_NS: 0) */

/* SYNC_READY t_ns[]: when pid 1 finished each part of its set-up
 * (CLOCK_MONOTONIC of the host: pid 1 itself stays outside the time
 * namespace it makes), for the step breakdown of `warden run -v`. */
enum {
	SYNC_T_GO,	 /* SYNC_GO received */
	SYNC_T_MOUNTS,	 /* 2b-3b: ids, time namespace, the mount plan */
	SYNC_T_ROOT,	 /* 3c-3d: pivot_root, old root detached, / read-only */
	SYNC_T_NET,	 /* 4-4a: loopback, the proxy's sockets */
	SYNC_T_CGROUP,	 /* 4b: SYNC_CGROUP received and the cgroup joined */
	SYNC_T_COMMANDS, /* 6: Landlock ruleset, seccomp: ready for commands */
	SYNC_T__COUNT
};

/* SYNC_EXEC flags */
#define SYNC_EXEC_LAST 0x1u   /* pid 1 exits once this command has ended */
#define SYNC_EXEC_DETACH 0x2u /* at its end, its process group is left running */

/* Descriptor slots of SYNC_EXEC, in order. */
enum {
	SYNC_FD_STDIN,
	SYNC_FD_STDOUT,
	SYNC_FD_STDERR,
	SYNC_FD_PLAN,
	SYNC_FD_CHANNEL,
	SYNC_EXEC_NFDS
};

#define SYNC_MAX_FDS 8

/* One record.  Fixed size, no pointers: it crosses a process boundary. */
struct sync_msg {
	uint32_t kind;
	int32_t step;	    /* jail step (enum jail_step) of an error */
	int32_t err;	    /* errno of an error */
	int32_t status;	    /* EXIT: wait status; KILL: signal; ERROR: operation index + 1;
			     * CGROUP: descriptors */
	uint32_t flags;	    /* EXEC: SYNC_EXEC_* */
	uint32_t seq;	    /* EXEC: the command's number in this sandbox */
	uint64_t cpu_us;    /* EXIT: the command's and its reaped children's CPU */
	uint64_t maxrss_kb; /* EXIT: their peak resident set */
	uint64_t t_ns[SYNC_T__COUNT]; /* READY: see SYNC_T_* */
};

/* One end of one channel. */
struct sync_chan {
	int fd;
	enum sync_role role;
	enum sync_state state;
};

void sync_chan_init(struct sync_chan *c, int fd, enum sync_role role, enum sync_state state);

/* Send m with nfds descriptors if the table allows it from this end in
 * this state, and move to the next state.  0, -EPROTO (not allowed here:
 * nothing sent), or -errno from sendmsg (-EPIPE: the peer is gone). */
int sync_send(struct sync_chan *c, const struct sync_msg *m, const int *fds, int nfds);

/* Receive one record (blocking unless flags has MSG_DONTWAIT).  fds needs
 * room for SYNC_MAX_FDS; received descriptors are close-on-exec.  A record
 * the table refuses is dropped with its descriptors closed: -EPROTO.
 * -EAGAIN: nothing queued; -EPIPE: EOF or a torn record (the peer is gone).
 * On success the channel moves to the message's next state. */
int sync_recv(struct sync_chan *c, struct sync_msg *m, int *fds, int *nfds, int flags);

/* Whether kind may be sent from this end in this state (for callers that
 * want to know before building a message). */
bool sync_allowed(const struct sync_chan *c, enum sync_kind kind);

const char *sync_kind_name(unsigned kind);
const char *sync_state_name(unsigned state);

#endif
