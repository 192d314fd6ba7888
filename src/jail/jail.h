/* jail: the privileged steps of DESIGN.md §5.
 *
 * The supervisor builds a struct jail_plan (jail_plan_build: opens every
 * host path the jail needs, formats every string, lists the mount
 * operations); after clone() the child only walks the plan with system
 * calls, allocating and formatting nothing (STYLE.md §3, §5).  Failures in
 * the child travel to the supervisor as struct jail_msg records over the
 * sync socket, which formats the text. */
#ifndef WD_JAIL_H
#define WD_JAIL_H

#include "util/util.h"
#include "jail/landlock.h"

#include <fcntl.h>
#include <linux/filter.h>

/* open_tree(2) flags, for C libraries whose headers predate them */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Steps, numbered after DESIGN.md §5 (letters for sub-steps).  Used in
 * errors and in the audit trail. */
enum jail_step {
	JAIL_STEP_NONE = 0,
	JAIL_STEP_1_CLONE,         /* 1: clone3 into new namespaces */
	JAIL_STEP_2_MAPS,          /* 2: uid/gid maps written by the supervisor */
	JAIL_STEP_2B_IDS,          /* 2b: drop supplementary groups, become uid 1000 */
	JAIL_STEP_3A_ROOT,         /* 3a: fresh tmpfs root */
	JAIL_STEP_3B_MOUNTS,       /* 3b: binds, /etc, /workspace, /tmp, /proc, /dev */
	JAIL_STEP_3C_PIVOT,        /* 3c: pivot_root, detach the old root */
	JAIL_STEP_3D_ROOT_RO,      /* 3d: root read-only */
	JAIL_STEP_4_NET,           /* 4: loopback up */
	JAIL_STEP_4B_CGROUP,       /* 4b: join the sandbox's cgroup, cgroup namespace */
	JAIL_STEP_5_PID1,          /* 5: pid 1 reaper */
	JAIL_STEP_6A_SESSION,      /* 6a: setsid */
	JAIL_STEP_6B_FDS,          /* 6b: stdin/stdout/stderr */
	JAIL_STEP_6C_RLIMITS,      /* 6c: rlimits */
	JAIL_STEP_6D_CAPS,         /* 6d: clear every capability set */
	JAIL_STEP_6E_NNP,          /* 6e: PR_SET_NO_NEW_PRIVS */
	JAIL_STEP_6F_LANDLOCK,     /* 6f: Landlock */
	JAIL_STEP_6G_CLOSE_FDS,    /* 6g: close_range */
	JAIL_STEP_6H_SECCOMP,      /* 6h: seccomp, last */
	JAIL_STEP_6I_EXEC,         /* 6i: execve */
	JAIL_STEP_COUNT,
};
const char *jail_step_name(int step);

/* One mount-plan operation, executed in order by the child. */
enum jail_op_kind {
	JAIL_OP_MKDIR,     /* path */
	JAIL_OP_MKFILE,    /* path: empty file, a mount point for a file bind */
	JAIL_OP_SYMLINK,   /* data -> path */
	JAIL_OP_WRITE,     /* write data (len) to new file path, mode 0644 */
	JAIL_OP_COPY,      /* copy fd into new file path, mode 0644 */
	JAIL_OP_BIND,      /* bind src on path (HOSTPATH: a host path, cloned with attr) */
	JAIL_OP_MOVE,      /* move the detached mount tree fd onto path */
	JAIL_OP_MOUNT,     /* mount fstype (src) on path with flags and data */
	JAIL_OP_SETATTR,   /* mount_setattr(path, attr_set, recursive?) */
	JAIL_OP_MASK,      /* bind src (/dev/null or an empty ro dir) on path if path exists */
};

#define JAIL_OPF_RECURSIVE 0x1 /* AT_RECURSIVE / MS_REC */
#define JAIL_OPF_OPTIONAL 0x2  /* skip when the path does not exist */
#define JAIL_OPF_HOSTPATH 0x4  /* BIND: src is a host path, opened before the new root */

struct jail_op {
	enum jail_op_kind kind;
	unsigned flags;
	const char *path; /* absolute, in the pre-pivot view (under the new root) */
	const char *src;
	const char *data;
	size_t len;
	int fd;
	unsigned long mflags;  /* mount(2) flags */
	uint64_t attr;         /* MOUNT_ATTR_* for SETATTR */
};

const char *jail_op_name(enum jail_op_kind kind);

/* Records on the sync socket (SOCK_SEQPACKET, one record per message). */
enum jail_msg_kind {
	JAIL_MSG_GO = 1,      /* supervisor -> child: SYNC_MAPS_WRITTEN, go on */
	JAIL_MSG_ERROR,       /* child -> supervisor: step failed with errno */
	JAIL_MSG_EXEC_FAILED, /* exec child -> supervisor: execve failed with errno */
	JAIL_MSG_EXIT,        /* pid 1 -> supervisor: the command's wait status */
	JAIL_MSG_CGROUP,      /* supervisor -> child: SYNC_CGROUP_READY, with the
			       * v1 tasks files as SCM_RIGHTS (none on v2/none) */
	JAIL_MSG_NET_READY,   /* pid 1 -> supervisor: SYNC_NET_READY, with the
			       * proxy's three sockets (HTTP, SOCKS, DNS) as
			       * SCM_RIGHTS, made inside the network namespace */
};
#define JAIL_MAX_MSG_FDS 8 /* the most descriptors a record carries */
struct jail_msg;

/* One record on the sync socket, with up to JAIL_MAX_MSG_FDS descriptors
 * as SCM_RIGHTS.  Both sides use these; they allocate nothing, so the
 * child may too.  Returns 0 or -errno (-EPIPE: the other end is gone). */
int jail_msg_send(int sync_fd, const struct jail_msg *m, const int *fds, int nfds);
/* fds needs room for JAIL_MAX_MSG_FDS; received ones are close-on-exec. */
int jail_msg_recv(int sync_fd, struct jail_msg *m, int *fds, int *nfds, int flags);
struct jail_msg {
	int kind;
	int step;
	int err;
	int status;
	/* JAIL_MSG_EXIT: the command's and its reaped descendants' usage */
	uint64_t cpu_us;
	uint64_t maxrss_kb;
};

#define JAIL_MAX_OPS 320 /* the default plan is ~90; 64 binds take 3 each */
#define JAIL_MAX_PATH_CANDIDATES 8

struct jail_plan {
	bool container;            /* namespaces; false for --isolation process */
	bool root_mode;            /* warden runs as root: ids map to nobody */
	int sync_fd;               /* child's end of the sync socket */
	int stdin_fd, stdout_fd, stderr_fd; /* for the command; stdin -1: /dev/null */
	int devnull_fd;            /* host /dev/null, read-write */

	/* container: the mount plan */
	struct jail_op ops[JAIL_MAX_OPS];
	int nops;
	const char *new_root;      /* where the tmpfs root is mounted before pivot */
	const char *cwd;           /* working directory of the command */

	bool net_proxy;            /* step 4b: make the proxy's sockets */

	/* process level: drop to these ids when root (else -1) */
	uid_t run_uid;
	gid_t run_gid;

	/* command */
	char **argv;
	char **envp;
	const char *exec_paths[JAIL_MAX_PATH_CANDIDATES + 1]; /* tried in order */
	int last_cap;

	struct rlimit rl_core, rl_nofile, rl_fsize;
	const struct sock_fprog *seccomp;
	struct jail_landlock_rules landlock;
	int landlock_abi;

	/* pid 1 wipes warden's argv/environ pages so /proc/1/cmdline and
	 * /proc/1/environ show nothing of the caller's. */
	uintptr_t wipe_start, wipe_end;
};

/* What the supervisor asks for; jail_prep_new() turns it into a plan. */
struct jail_bind {
	const char *src; /* host path (must exist) */
	const char *dst; /* path in the jail */
	bool rw;
};

struct jail_config {
	bool container;
	const char *workspace; /* host directory */
	const struct jail_bind *binds;
	size_t nbinds;
	const char *const *argv;
	const char *const *env; /* NAME=VALUE added after the defaults */
	size_t nenv;
	const char *term;       /* TERM value, or NULL */
	uint64_t tmp_bytes, nofile, fsize;
	const uint16_t *ports;
	size_t nports;
	int stdin_fd, stdout_fd, stderr_fd;
	int sync_fd;
	/* egress through warden's proxy: proxy variables in the environment,
	 * TCP to the proxy ports allowed; with interception, ca_pem joins the
	 * jail's trust store */
	bool net_proxy;
	const char *ca_pem;
};

/* Host id of the sandbox user when warden runs as root: nobody.  A
 * process that escapes the user namespace lands as nobody, not as root (a
 * sandbox uid that is host root could, e.g., write host sysctls such as
 * /proc/sys/kernel/core_pattern through owner permissions). */
#define WD_NOBODY 65534

#define JAIL_PROXY_HTTP_PORT 3128
#define JAIL_PROXY_SOCKS_PORT 1080
#define JAIL_DNS_PORT 53

/* The plan plus everything it points to (strings, fds).  Built in the
 * supervisor before clone(); free with jail_prep_free() after the child is
 * gone (or has its copy). */
struct jail_prep {
	struct jail_plan plan;
	char **strings;
	size_t nstrings, capstrings;
	int fds[JAIL_MAX_OPS + 8];
	int nfds;
	bool idmapped;      /* the workspace is an idmapped mount */
	bool overflow;      /* more than JAIL_MAX_OPS operations */
	uid_t host_uid;     /* host id of the sandbox user */
	gid_t host_gid;
};

int jail_prep_new(const struct jail_config *cfg, struct jail_prep **out, struct wd_err *err);
void jail_prep_free(struct jail_prep *prep);
/* Write uid_map/gid_map (and setgroups) for the container child pid. */
int jail_write_maps(const struct jail_prep *prep, pid_t pid, struct wd_err *err);

/* ---- jail/hostpath.c (supervisor side) ---- */
/* A detached, idmapped copy of directory dirfd (owner st) for the sandbox
 * user (host nobody); *userns_cache holds the idmapping namespace between
 * calls.  Returns the tree fd or -errno. */
int jail_idmapped_tree(int dirfd, const struct stat *st, int *userns_cache, uid_t *cache_uid,
		       gid_t *cache_gid, struct wd_err *err);
/* Resolve given into out (PATH_MAX bytes) component by component,
 * refusing a symlink inside any of roots (trees the sandbox can write). */
int jail_safe_resolve(const char *given, const char *const *roots, size_t nroots, char *out,
		      struct wd_err *err);
/* O_PATH fd of a symlink-free path, refusing any symlink now on it. */
int jail_open_nofollow(const char *path);
bool jail_path_within(const char *path, const char *root);

/* pid 1 of a container jail; never returns. */
__attribute__((noreturn)) void jail_pid1_main(struct jail_plan *plan);
/* The command's own process in process mode (a direct child of the
 * supervisor); never returns. */
__attribute__((noreturn)) void jail_process_main(struct jail_plan *plan);

/* Child-side report: send a JAIL_MSG_ERROR for step/err (no formatting). */
void jail_report(int sync_fd, int kind, int step, int err, int status);

#endif
