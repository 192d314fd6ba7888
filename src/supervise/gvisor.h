/* supervise/gvisor: the gvisor isolation level, private to gvisor*.c.
 *
 * A sandbox is a gVisor sandbox run by Debian's runsc, as root, on the
 * ptrace platform: the command's system calls are served by gVisor's
 * user-space kernel (the sentry), not by the host's.  warden keeps what it
 * does at every level: the policy gate, the audit trail, the cgroup and
 * its keeper, the egress proxy, the bounded capture, the timeout.
 *
 *   gvisor.c        the backend table: probe, prepare, spawn, ready, exec,
 *                   kill, destroy, describe; the session's lifecycle.
 *   gvisor_oci.c    the bundle: a root filesystem directory and the OCI
 *                   config.json / process.json, both from the jail plan
 *                   (jail/plan.c) that the container level executes itself.
 *   gvisor_run.c    runsc processes: the launcher (cgroup, mount and
 *                   network namespaces, then execve of runsc) and clients.
 *   gvisor_exec.c   one command: pipes, runsc run, runsc exec or the
 *                   resident executor, the loop over output, deadline
 *                   and cancellation, the result.
 *   gvisor_resident.c  warden's end of the resident executor (the
 *                   session's init, gvisor_init.c; gvisor_wire.h).
 *
 * Files of a sandbox live in GV_RUN_DIR/<id> (a tmpfs as root), locked
 * while warden holds the sandbox: rootfs/, mnt/<k> (where the launcher
 * mounts the host trees the plan binds), config.json, p<seq>.json (a
 * command's process), state/ (runsc --root), runsc.log. */
#ifndef WD_SUPERVISE_GVISOR_H
#define WD_SUPERVISE_GVISOR_H

#include "supervise/supervise.h"
#include "spec/spec.h"

#include <limits.h>
#include <sys/types.h>

#define GV_RUN_DIR "/run/warden/gvisor"
/* Host trees the launcher mounts: the plan's (binds, the workspace) and one
 * per protected entry and pinned parent (gv_oci_open_protected); past it
 * the sandbox is refused (gv_oci_plan). */
#define GV_MAX_TREES 256

/* What runsc is on this host (found once per process). */
struct gv_runsc {
	bool found;
	char path[PATH_MAX];
	char version[48];
	char why[256]; /* when not found or unusable: what is missing */
};
const struct gv_runsc *gv_runsc(void);
/* The platform: $WARDEN_GVISOR_PLATFORM (ptrace or kvm), else ptrace;
 * NULL with err set when the variable names another. */
const char *gv_platform(struct wd_err *err);

/* An OCI mount, from the plan. */
struct gv_mount {
	const char *dst;     /* in the sandbox */
	const char *type;    /* "bind", "tmpfs", "proc" */
	char *src;	     /* bind: host path (for a tree: dir/mnt/<k>); owned */
	const char *options; /* comma-separated OCI options */
	int tree;	     /* index into the plan's ops of a MOVE tree, or -1 */
	bool file;	     /* the mount point is a file */
	char *dst_owned;     /* dst when it was made for this mount (a protected path), or NULL */
	/* a protected entry or a pinned parent: its path relative to the
	 * workspace (owned), and, once gv_oci_open_protected ran, its own
	 * detached tree (owned) that the launcher mounts on src; rel NULL:
	 * not one, fd unused */
	char *rel;
	int fd;
	bool ro; /* rel: a protected entry (read-only), else a pinned parent */
};

/* The sandbox's backend state (sandbox.priv). */
struct gv {
	char dir[PATH_MAX]; /* GV_RUN_DIR/<id> */
	int lock_fd;	    /* flock on dir/lock while warden holds the sandbox */
	bool dir_made;
	struct gv_mount *mounts;
	size_t nmounts;
	char *rootfs_text;  /* plan summary for --print-plan */
	int netns_fd;	    /* prepared network namespace (egress), or -1 */
	uint64_t host_pids; /* the host pids backstop written to the cgroup */
	/* the session: runsc's sandbox process, once created */
	pid_t sentry_pid;
	int sentry_pidfd;
	int run_pidfd; /* a one-shot `runsc run` (the launcher), or -1 */
	bool started;  /* runsc run, or create + start, was launched */
	bool session;  /* create + start: commands go through runsc exec */
	char cid[32];  /* runsc's container id */
	/* runsc's global options for this sandbox (gv_argv) */
	char opt_root[PATH_MAX + 16], opt_log[PATH_MAX + 16], opt_platform[32];
	const char *opt_net;
	const char *platform; /* "ptrace" (default) or "kvm" */
	/* warden-init on the host, copied to GV_INIT in rootfs/: it starts
	 * every command and is a session's init */
	char init_path[PATH_MAX];
	/* the session's resident executor (gvisor_resident.c), or NULL */
	struct gv_res *res;
	/* a vacant sandbox (warm pool), once started: the gofer's mount
	 * namespace and, opened through it, the staging mount's w (where
	 * gv_attach mounts the workspace); -1 otherwise */
	int gofer_mntns, stage_w;
};

/* Where warden-init (supervise/gvisor_init.c) is in a sandbox: a file of
 * warden's rootfs/, read-only to the sandbox. */
#define GV_INIT "/.warden-init"
/* Find warden-init: $WARDEN_INIT, next to the running program, else
 * where it is installed; 0 with its path in out, or -ENOENT. */
int gv_init_find(char *out, size_t cap);

/* ---- gvisor_oci.c ---- */
/* From sb->prep's ops: the mounts (gv->mounts) and nothing on disk. */
int gv_oci_plan(struct sandbox *sb, struct gv *g, struct wd_err *err);
/* After jail_build_host(): each protected entry and pinned parent of the
 * plan opened beneath the workspace's tree (no symbolic link, no "..")
 * and cloned as its own detached tree, read-only for an entry. */
int gv_oci_open_protected(struct sandbox *sb, struct gv *g, struct wd_err *err);
/* Write dir/rootfs (the plan's files, links and mount points) and the
 * mount points of dir/mnt. */
int gv_oci_write_rootfs(struct sandbox *sb, struct gv *g, struct wd_err *err);
/* A process object: argv run through GV_INIT's exec (126/127 and the
 * jail's fixed PATH, as at the container level), env (NULL-terminated lists merged: base, then
 * add), cwd. Appended to w. */
struct jw;
void gv_oci_process(struct jw *w, const struct sandbox *sb, const char *const *argv,
		    const char *const *env_add, const char *cwd, bool terminal, bool executor);
/* The whole config.json with process as the container's init; executor:
 * the init is the resident executor (root inside gVisor with CAP_SETUID,
 * CAP_SETGID, CAP_SETPCAP and CAP_KILL only, gvisor_init.c says why). */
char *gv_oci_config(const struct sandbox *sb, const struct gv *g, const char *const *argv,
		    const char *const *env_add, const char *cwd, bool executor);
/* NAME=VALUE lists merged (a later name replaces an earlier one), into a
 * new NULL-terminated array of the same strings (free with free()). */
const char **gv_env_merge(const char *const *base, const char *const *add);
/* Write s to dir/name (0600, replaced atomically). */
int gv_write_file(const struct gv *g, const char *name, const char *s, struct wd_err *err);

/* ---- gvisor_run.c ---- */
/* A runsc process: argv[0] the runsc path; its stdio; with a sandbox
 * (launch), it first joins the sandbox's cgroup, its network namespace (if
 * netns_fd >= 0), and a private mount namespace where the plan's trees are
 * mounted on dir/mnt/<k>.  Returns 0 with *pidfd (a clone3 pidfd; the
 * child's exit_signal is 0, so reap it with gv_wait()), or -errno. */
struct gv_proc {
	const char *const *argv;
	int in, out, err;   /* -1: /dev/null */
	struct sandbox *sb; /* NULL: a plain client (start, exec, kill) */
	/* a client of this sandbox's control server (start, exec, kill):
	 * it joins the sandbox's network namespace, if it has one, because
	 * this runsc's control socket is an abstract unix socket, which is
	 * per network namespace; NULL: none (--version) */
	const struct gv *peer;
};
int gv_spawn(const struct gv_proc *p, int *pidfd, struct wd_err *err);
/* Wait for the process of pidfd (timeout_ms < 0: for ever; else SIGKILL it
 * at the timeout).  Returns its wait status, or -errno. */
int gv_wait(int pidfd, int timeout_ms);
/* runsc's global options for this sandbox, then more, into a new
 * NULL-terminated array (free with free(); strings point into g and
 * the arguments). */
const char **gv_argv(const struct sandbox *sb, const struct gv *g, const char *const *more);
/* Run a runsc client to its end (stdout/stderr to dir/<log>); its exit
 * status, or -errno.  On failure err says what runsc printed last. */
int gv_client(struct sandbox *sb, const struct gv *g, const char *const *more, int timeout_ms,
	      struct wd_err *err);
/* The size of dir/runsc.log (runsc --log), and whether runsc logged an
 * error after offset from: its message in out. */
off_t gv_log_size(const struct gv *g);
bool gv_runsc_error(const struct gv *g, off_t from, char *out, size_t cap);
/* The last line runsc wrote to dir/name (for error messages). */
void gv_last_line(const struct gv *g, const char *name, char *out, size_t cap);

/* ---- gvisor_resident.c ---- */
/* A record on a command's note pipe. */
enum { GV_NOTE_EXIT = 1, GV_NOTE_FAIL = 2 };
struct gv_note {
	int kind;  /* GV_NOTE_* */
	int value; /* EXIT: the wait status; FAIL: errno */
};
/* The channel's pipes (g->res): init_fds[0] and [1] become the init's
 * stdin and stdout (runsc create's), the caller closes them after it. */
int gv_res_pipes(struct gv *g, int init_fds[2], struct wd_err *err);
/* After runsc start: the executor's HELLO, then the reader thread. */
int gv_res_ready(struct sandbox *sb, struct gv *g, struct wd_err *err);
/* Whether commands can go through it (it answered and is not lost). */
bool gv_res_usable(const struct gv *g);
/* Start command id: out_r[1], out_r[2] (nonblocking) get its output and
 * *note_r its gv_note records, EOF at its end (with no EXIT record: the
 * executor was lost).  -E2BIG or -EAGAIN (too large, too many at once,
 * lost): the caller takes runsc exec. */
int gv_res_run(struct gv *g, uint32_t id, const char *const *argv, const char *const *env,
	       const char *cwd, int out_r[3], int *note_r, struct wd_err *err);
/* A vacant sandbox's GVW_ATTACH (id: a command number of the sandbox's,
 * unused), waited for: 0 once /workspace is the workspace, else -errno. */
int gv_res_attach(struct gv *g, uint32_t id, struct wd_err *err);
/* Signal the command's process group; stop relaying its output. */
void gv_res_kill(struct gv *g, uint32_t id, int sig);
void gv_res_close(struct gv *g, uint32_t id);
/* After gVisor's processes are gone: the thread joined, all closed. */
void gv_res_free(struct gv *g);

/* ---- gvisor_exec.c ---- */
int gv_exec(struct sandbox *sb, const struct exec_req *x, wd_result **out, struct wd_err *err);
/* Launch the session (runsc create + start with an idle init). */
int gv_start_session(struct sandbox *sb, struct wd_err *err);
void gv_describe(struct sandbox *sb, wd_result *r);

#endif
