/* jail: the privileged steps of docs/architecture.md's step order.
 *
 * Which side of clone() each file runs on:
 *   supervisor, before clone   plan.c (the plan), build.c (host side of the
 *                              build), hostpath.c, cmdplan.c (building),
 *                              sync.c;
 *   pid 1, after clone         pid1.c (set-up and the command loop),
 *                              mounts.c, sync.c;
 *   a command's process        exec.c (step 6), cmdplan.c (mapping),
 *                              landlock.c, seccomp.c, sync.c;
 *   build time                 gen-seccomp.c.
 * After clone() nothing allocates or formats (CONTRIBUTING.md, "Code"): failures
 * travel to the supervisor as struct sync_msg records (jail/sync.h), and
 * the supervisor writes the text. */
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
#include <sys/syscall.h>
#include <sys/types.h>

/* Steps, numbered as docs/architecture.md's step table (letters for sub-steps).  Used in
 * errors and in the audit trail. */
enum jail_step {
	JAIL_STEP_NONE = 0,
	JAIL_STEP_1_CLONE,	/* 1: clone3 into new namespaces */
	JAIL_STEP_2_MAPS,	/* 2: uid/gid maps written by the supervisor */
	JAIL_STEP_2B_IDS,	/* 2b: drop supplementary groups, become uid 1000 */
	JAIL_STEP_2C_TIME,	/* 2c: a time namespace, clocks near zero */
	JAIL_STEP_3A_ROOT,	/* 3a: fresh tmpfs root */
	JAIL_STEP_3B_MOUNTS,	/* 3b: binds, /etc, /workspace, /tmp, /proc, /dev */
	JAIL_STEP_3C_PIVOT,	/* 3c: pivot_root, detach the old root */
	JAIL_STEP_3D_ROOT_RO,	/* 3d: root read-only */
	JAIL_STEP_3E_ATTACH,	/* 3e: a vacant sandbox's workspace attached (warm pool) */
	JAIL_STEP_4_NET,	/* 4: loopback up (4a: the proxy's sockets) */
	JAIL_STEP_4B_CGROUP,	/* 4b: join the sandbox's cgroup, cgroup namespace */
	JAIL_STEP_5_PID1,	/* 5: pid 1 reaper */
	JAIL_STEP_6A_SESSION,	/* 6a: setsid */
	JAIL_STEP_6B_FDS,	/* 6b: stdin/stdout/stderr */
	JAIL_STEP_6B_CWD,	/* 6b: the working directory */
	JAIL_STEP_6C_RLIMITS,	/* 6c: rlimits */
	JAIL_STEP_6D_CAPS,	/* 6d: clear every capability set */
	JAIL_STEP_6E_NNP,	/* 6e: PR_SET_NO_NEW_PRIVS */
	JAIL_STEP_6F_LANDLOCK,	/* 6f: Landlock */
	JAIL_STEP_6G_CLOSE_FDS, /* 6g: close_range */
	JAIL_STEP_6H_SECCOMP,	/* 6h: seccomp, last */
	JAIL_STEP_6I_EXEC,	/* 6i: execve */
	JAIL_STEP_COUNT,
};
const char *jail_step_name(int step);

/* One mount-plan operation, executed in order by the child. */
enum jail_op_kind {
	JAIL_OP_MKDIR,	 /* path */
	JAIL_OP_MKFILE,	 /* path: empty file, a mount point for a file bind */
	JAIL_OP_SYMLINK, /* data -> path */
	JAIL_OP_WRITE,	 /* write data (len) to new file path, mode 0644 */
	JAIL_OP_COPY,	 /* copy fd into new file path, mode 0644 */
	JAIL_OP_BIND,	 /* bind src on path (HOSTPATH: a host path, cloned with attr) */
	JAIL_OP_MOVE,	 /* move the detached mount tree fd onto path */
	JAIL_OP_MOUNT,	 /* mount fstype (src) on path with flags and data */
	JAIL_OP_SETATTR, /* mount_setattr(path, attr_set, recursive?) */
	JAIL_OP_MASK,	 /* bind src (/dev/null or an empty ro dir) on path if path exists */
	JAIL_OP_PROTECT, /* data (relative to the workspace mounted at path): read-only over
			  * itself if it exists (protected paths), its ancestors
			  * pinned, a .git's gitfile and commondir targets too
			  * (docs/threat-model.md, 3) */
};

#define JAIL_OPF_RECURSIVE 0x1 /* AT_RECURSIVE / MS_REC */
#define JAIL_OPF_OPTIONAL 0x2  /* skip when the path does not exist */
#define JAIL_OPF_HOSTPATH 0x4  /* BIND: src is a host path, opened before the new root */
#define JAIL_OPF_IDMAP                                                                             \
	0x8			/* BIND (root): a writable host tree, idmapped to the              \
				 * sandbox user by jail_build_host() */
#define JAIL_OPF_WORKSPACE 0x10 /* BIND: this is the workspace (its idmapping is reported) */
#define JAIL_OPF_HOSTFILE 0x20	/* COPY: src is a host file, opened by jail_build_host() */
#define JAIL_OPF_PROVIDED                                                                          \
	0x40 /* BIND: a detached tree the caller provides                                          \
	      * (jail_config.trees[op->tree]); the build makes it a MOVE */
#define JAIL_OPF_LATE                                                                              \
	0x80 /* done by pid 1 after SYNC_ATTACH (a vacant sandbox of the                           \
	      * warm pool), in the view after pivot_root; skipped at set-up */

struct jail_op {
	enum jail_op_kind kind;
	unsigned flags;
	const char *path; /* absolute, in the pre-pivot view (under the new root) */
	const char *src;
	const char *data;
	size_t len;
	int fd;
	unsigned long mflags; /* mount(2) flags */
	uint64_t attr;	      /* MOUNT_ATTR_* for SETATTR */
	int tree;	      /* PROVIDED: index into jail_config.trees */
	const char *host;     /* PROTECT: the workspace's host path (absolute gitfiles), or NULL */
};

const char *jail_op_name(enum jail_op_kind kind);

#include "jail/sync.h"

#define JAIL_MAX_OPS 320 /* the default plan is ~90; 64 binds take 3 each */
#define JAIL_MAX_PATH_CANDIDATES 8

/* ---- the plan: pure data, built before anything is cloned ----
 *
 * jail_plan_build() turns a struct jail_config into the operations pid 1
 * will perform, the environment, the Landlock rules and the limits: strings
 * and numbers only, no descriptor, nothing done to the kernel (it reads host
 * paths to decide what to show: which usrmerge links exist, whether a bind
 * source is a file).  `warden run --print-plan` prints it.
 *
 * jail_build_host() is the supervisor's part of building (step 1): it opens
 * what the plan names on the host, and as root clones the host trees
 * (open_tree) with their attributes and idmappings, turning those BIND
 * operations into MOVE operations of detached trees. */
struct jail_plan {
	bool container; /* namespaces; false for --isolation process */
	bool root_mode; /* warden runs as root: ids map to nobody */
	bool net_proxy; /* step 4a: make the proxy's sockets */
	bool time_ns;	/* step 2c: clocks start near zero (container) */
	bool vacant;	/* no workspace until SYNC_ATTACH (warm pool); pid 1
			 * keeps its capabilities until then */
	int sync_fd;	/* pid 1's end of the sandbox channel */
	int devnull_fd; /* host /dev/null, read-write (build) */

	/* container: the mount plan */
	struct jail_op ops[JAIL_MAX_OPS];
	int nops;
	const char *new_root; /* where the tmpfs root is mounted before pivot */
	const char *cwd;      /* default working directory of commands */

	/* process level: commands drop to these ids when root (else -1) */
	uid_t run_uid;
	gid_t run_gid;

	/* every command's base environment, NULL-terminated (the supervisor
	 * merges a command's own variables into its cmdplan) */
	char **envp;
	int last_cap;

	struct rlimit rl_core, rl_nofile, rl_fsize;
	const struct sock_fprog *seccomp;
	struct jail_landlock_rules landlock;
	int landlock_abi;

	/* pid 1 wipes warden's argv/environ pages so /proc/1/cmdline and
	 * /proc/1/environ show nothing of the caller's. */
	uintptr_t wipe_start, wipe_end;
};

/* What the supervisor asks for; jail_plan_build() turns it into a plan. */
struct jail_bind {
	const char *src; /* host path (must exist) */
	const char *dst; /* path in the jail */
	bool rw;
	bool exact; /* src is link-free as checked: any link on it is refused */
};

/* A detached mount tree the caller made (the workspace module: a cow
 * overlay, a home or /tmp on the sandbox's disk image), placed at dst. */
struct jail_tree {
	const char *dst;  /* in the jail: "/workspace", "/tmp", "/home/sandbox" */
	int fd;		  /* open_tree()/fsmount() descriptor; not owned: the build
			   * keeps its own copy */
	const char *what; /* label for messages and --print-plan */
};
#define JAIL_MAX_TREES 4

struct jail_config {
	bool container;
	const char *workspace; /* host directory */
	/* trees the caller provides: one at /workspace replaces the bind of
	 * workspace (which still names the host directory), one at /tmp the
	 * tmpfs */
	const struct jail_tree *trees;
	size_t ntrees;
	const char *home; /* HOME in the jail (a tree's dst); NULL: a tmpfs at
			   * JAIL_ONESHOT_HOME (container level), the workspace
			   * (process level) */
	/* paths relative to the workspace made read-only over themselves
	 * (container level): .git/hooks, .envrc, ... */
	const char *const *protect;
	size_t nprotect;
	bool vacant; /* build without a workspace; it comes with SYNC_ATTACH */
	const struct jail_bind *binds;
	size_t nbinds;
	const char *const *env; /* NAME=VALUE added after the defaults */
	size_t nenv;
	const char *term; /* TERM value, or NULL */
	uint64_t tmp_bytes, nofile, fsize;
	const uint16_t *ports;
	size_t nports;
	/* egress through warden's proxy: proxy variables in the environment,
	 * TCP to the proxy ports allowed; with interception, ca_pem joins the
	 * jail's trust store */
	bool net_proxy;
	const char *ca_pem;
	/* NO_PROXY's value with net_proxy: the names that mean the jail's own
	 * loopback (NULL: localhost,127.0.0.1,::1) */
	const char *no_proxy;
	bool time_ns;	   /* give the sandbox its own monotonic and boot clocks */
	bool reproducible; /* fixed build epoch and hash seeds in the environment */
	/* an image's rootfs (host path): its /usr, usrmerge links
	 * and /etc instead of the host's; NULL: the host's */
	const char *image_root;
	/* the name of uid 1000's passwd and group entries (an image's user,
	 * checked by spec_user_name_ok); NULL: sandbox */
	const char *user_name;
};

/* Host id of the sandbox user when warden runs as root: nobody.  A
 * process that escapes the user namespace lands as nobody, not as root (a
 * sandbox uid that is host root could, e.g., write host sysctls such as
 * /proc/sys/kernel/core_pattern through owner permissions). */
#define WD_NOBODY 65534

/* One of warden's entries of a jail's /etc: a file (text, len) or a link
 * (text). */
struct jail_etc_entry {
	const char *name, *text;
	size_t len;
	bool link;
};
/* Names of /etc that warden writes itself or that an image must not bring
 * (the identity files, shadow, gshadow, machine-id, ssl: see plan.c) */
bool jail_etc_reserved(const char *name);
/* An image's /etc as the jail shows it (jail/etctree.c): the image's etc
 * minus the reserved names, its etc/ssl's entries, and ents, prepared once
 * beside image_root in the store; its path into out.  The caller checked
 * that image_root/etc and etc/ssl are no links.  0 or -errno. */
int jail_etc_tree(const char *image_root, const struct jail_etc_entry *ents, size_t n, char *out,
		  size_t cap);
/* The tree of an image whose sandbox user is named user (NULL: sandbox)
 * and whose HOME is the workspace, prepared ahead of its first start (an
 * import or build: a store baked read-only into a pod then has it).  0 or
 * -errno; -EINVAL: an etc or etc/ssl that is a link. */
int jail_etc_prepare(const char *image_root, const char *user);

#define JAIL_PROXY_HTTP_PORT 3128
#define JAIL_PROXY_SOCKS_PORT 1080
#define JAIL_DNS_PORT 53

/* An idmapping for writable host trees: the owner appears as uid/gid;
 * root_creates: host root may create files through the mount too (they
 * land as host nobody until chowned; see jail/hostpath.c). */
struct jail_idmap {
	uid_t uid;
	gid_t gid;
	bool root_creates;
};

/* The idmapping namespace between calls (for one owner uid/gid), and the
 * process that held it until its fd was open: killed, not yet reaped.
 * Initialise with JAIL_IDMAP_CACHE_INIT; jail_idmap_reap() waits for that
 * process (dead by then) and frees its stack. */
struct jail_idmap_cache {
	int userns;
	uid_t uid;
	gid_t gid;
	int holder_pidfd;
	void *holder_stack;
};
#define JAIL_IDMAP_CACHE_INIT                                                                      \
	{                                                                                          \
		.userns = -1, .holder_pidfd = -1                                                   \
	}

/* The plan plus everything it points to (strings; after jail_build_host,
 * descriptors).  Free with jail_prep_free() once pid 1 has its copy. */
struct jail_prep {
	struct jail_plan plan;
	struct prep_chunk *chunks; /* the plan's strings and arrays (plan.c) */
	bool dontfork;		   /* jail_prep_dontfork() ran */
	int fds[JAIL_MAX_OPS + 8];
	int nfds;
	struct jail_op scratch;		     /* where operations past JAIL_MAX_OPS go */
	bool idmapped;			     /* the workspace is an idmapped mount (after build) */
	struct jail_idmap_cache idmap_cache; /* jail_build_host(); jail_build_reap() */
	bool overflow;			     /* more than JAIL_MAX_OPS operations */
	bool built;			     /* jail_build_host() ran */
	uid_t host_uid;			     /* host id of the sandbox user */
	gid_t host_gid;
	/* how jail_build_host() idmaps writable trees (root mode); the plan
	 * sets the owner to appear as host_uid/gid (the container's sandbox
	 * user); another backend may change it before the build */
	struct jail_idmap idmap;
	/* the provided trees (jail_config.trees), not owned until the build
	 * dups them into fds[] */
	int trees[JAIL_MAX_TREES];
	int ntrees;
};

/* Plan (pure: strings and numbers; reads host paths, opens nothing that
 * stays open).  *out is new, free with jail_prep_free(). */
int jail_plan_build(const struct jail_config *cfg, struct jail_prep **out, struct wd_err *err);
/* Host side of the build, before clone: open the plan's host sources and,
 * as root, turn binds into detached (idmapped where writable) trees. */
int jail_build_host(struct jail_prep *prep, struct wd_err *err);
/* After clone: reap what the build left to reap (the idmap holder), off
 * the path to pid 1.  jail_prep_free() does it too. */
void jail_build_reap(struct jail_prep *prep);
/* After pid 1 said it is ready: close the host sources the build opened
 * (bind sources, detached trees, copied files, devnull_fd: a later
 * command's stdin is opened for it).  pid 1 was cloned without
 * CLONE_FILES, so it holds its own copies; the supervisor's are dead
 * weight, about 18 descriptors per live sandbox.  The operations' fds are set to -1; the
 * plan's strings stay (errors and --print-plan read them). */
void jail_prep_release_sources(struct jail_prep *prep);
void jail_prep_free(struct jail_prep *prep);
/* Once pid 1 exists (it has its copy): keep the prep and everything its
 * plan points to out of every process cloned later without CLONE_VM
 * (MADV_DONTFORK).  The caller still reads it; such a later child must
 * never touch it (it is not mapped there). */
void jail_prep_dontfork(struct jail_prep *prep);
/* The plan as text, one operation per line, paths as the jail sees them:
 * what `warden run --print-plan` shows.  A new string, free with free(). */
char *jail_plan_text(const struct jail_prep *prep);
/* Write uid_map/gid_map (and setgroups) for the container child pid. */
int jail_write_maps(const struct jail_prep *prep, pid_t pid, struct wd_err *err);

/* ---- one command (jail/cmdplan.c) ---- */
struct jail_cmd_spec {
	const char *const *argv;     /* NULL-terminated */
	const char *const *env_base; /* the plan's envp */
	const char *const *env_add;  /* the command's own NAME=VALUE, NULL-terminated or NULL */
	const char *cwd;	     /* in the jail's view */
};
/* Supervisor: the command's plan as a sealed memfd (returned), or -errno. */
int jail_cmd_plan_build(const struct jail_cmd_spec *cs, struct wd_err *err);
/* pid 1: map the plan from fd without malloc, for the command's process
 * (which shares pid 1's memory until its execve); unmap it once the
 * command has gone its own way. */
struct jail_cmd {
	char **argv;
	char **envp;
	const char *paths[JAIL_MAX_PATH_CANDIDATES + 1]; /* execve candidates, in order */
	const char *cwd;
	void *map, *ptrs; /* the two mappings, for jail_cmd_plan_unmap() */
	size_t map_len, ptrs_len;
};
int jail_cmd_plan_map(int fd, struct jail_cmd *out);
void jail_cmd_plan_unmap(struct jail_cmd *cmd);

/* ---- jail/hostpath.c (supervisor side) ---- */
void jail_idmap_reap(struct jail_idmap_cache *c);
/* A detached, idmapped copy of directory dirfd (owner st) in which the
 * owner appears as to->uid/gid.  Returns the tree fd or -errno. */
int jail_idmapped_tree(int dirfd, const struct stat *st, const struct jail_idmap *to,
		       struct jail_idmap_cache *c, struct wd_err *err);
/* A detached clone of directory dirfd (recursive), nosuid, nodev,
 * private: for a tree that cannot be idmapped.  what names it in a
 * failure.  Returns the tree fd or -errno. */
int jail_clone_tree(int dirfd, const char *what, struct wd_err *err);
/* Resolve given into out (PATH_MAX bytes) component by component,
 * refusing a symlink inside any of roots (trees the sandbox can write). */
int jail_safe_resolve(const char *given, const char *const *roots, size_t nroots, char *out,
		      struct wd_err *err);
/* O_PATH fd of a symlink-free path, refusing any symlink now on it. */
int jail_open_nofollow(const char *path);
bool jail_path_within(const char *path, const char *root);

/* ---- child side (after clone): pid 1 and the command's process ---- */

/* pid 1 of a sandbox (container: in its new namespaces; process level: a
 * monitor without namespaces): build the jail from the plan, report READY,
 * then run each SYNC_EXEC's command until the sandbox channel closes or a
 * command marked SYNC_EXEC_LAST has ended.  Never returns. */
__attribute__((noreturn)) void jail_pid1_main(struct jail_plan *plan);

/* The command's process (jail/exec.c): step 6 from setsid to execve, with
 * its stdio and channel from SYNC_EXEC and its plan as pid 1 mapped it.
 * Runs on pid 1's memory (CLONE_VM|CLONE_VFORK, pid 1 waits) and on a
 * stack of its own: it writes nothing but its stack.  Never returns. */
struct jail_exec_args {
	int in, out, err;	    /* stdin (-1: /dev/null), stdout, stderr */
	int chan;		    /* the exec channel */
	int landlock;		    /* pid 1's Landlock ruleset, or -1 */
	const struct jail_cmd *cmd; /* the command's plan, mapped by pid 1 */
	int cmd_err;		    /* errno of mapping it, or 0 */
};
__attribute__((noreturn)) void jail_exec_main(const struct jail_plan *plan,
					      const struct jail_exec_args *x);

/* Ids after clone, as raw system calls (jail/exec.c).  glibc's setgroups,
 * setresuid and setresgid apply the change to every thread of the
 * process (POSIX), signalling each one it knows of and waiting: in a raw
 * clone of a multithreaded supervisor those threads do not exist, and the
 * wait never ends.  The kernel's calls change only the calling thread,
 * which here is the whole process. */
int jail_set_ids(uid_t uid, gid_t gid);

/* Capabilities (jail/exec.c, used by pid 1 too): drop the bounding set
 * (must: fail on EPERM), then ambient and the other sets. */
int jail_drop_bounding(int last_cap, bool must);
int jail_drop_caps(int last_cap, bool need_bounding);
/* Re-arm PDEATHSIG after an id change and exit if the peer of chan_fd
 * (the parent's end) is gone already. */
void jail_rearm_pdeathsig(int chan_fd);

/* One mount-plan operation (jail/mounts.c).  0 or -errno. */
int jail_op_do(const struct jail_op *op);
/* mount_setattr read-only (and nosuid, nodev), or the bind-remount fallback. */
int jail_make_readonly(const char *path, bool recursive);

/* What jail_protect_walk() does with what it finds, each called with an
 * O_PATH descriptor of the entry (not kept) and its path relative to the
 * workspace; a negative errno stops the walk.  pin: a directory above a
 * protected entry, which must not be renamed or removed; ro: a protected
 * entry (never a symbolic link: the walk refuses one with -ELOOP), which
 * must be read-only; absent: see the field.  Called outermost first. */
struct jail_protect_ops {
	int (*pin)(void *ctx, int fd, const char *rel);
	int (*ro)(void *ctx, int fd, const char *rel, bool dir);
	void *ctx;
	/* optional (NULL): a path git would follow (a gitfile's, commondir's,
	 * core.hooksPath or include.path target) that does not exist */
	int (*absent)(void *ctx, const char *rel);
};

/* The protected path rel of the workspace ws (a directory fd) and what it
 * implies (docs/threat-model.md): its ancestors, and for a ".git" what a gitfile or
 * commondir points to inside the workspace (host: the workspace's host
 * path, for absolute gitfiles, or NULL), and for the root's ".git" the
 * submodules .gitmodules names and nested repositories two directories
 * down.  No allocation: pid 1 runs it (its mounts), and the gVisor
 * backend (its OCI binds).  0, or the first callback's negative errno. */
int jail_protect_walk(int ws, const char *rel, const char *host,
		      const struct jail_protect_ops *ops);
/* The walk with pid 1's mounts (each pinned directory bound over itself,
 * each entry read-only over itself) in the caller's mount namespace: a
 * vacant gVisor sandbox's, made in its gofer's (supervise/gvisor.c). */
int jail_protect_here(int ws, const char *rel, const char *host);

/* First thing after clone, in the child: a ThreadSanitizer build keeps
 * its parent's view of the threads it copied, and would report this new
 * process's writes (its own copy of memory) as races with threads that
 * do not exist here.  Tells TSan to ignore this thread; nothing in other
 * builds. */
void jail_child_sanitizer(void);

/* prctl and signal dispositions after clone, as raw system calls: the
 * libc wrappers may be interposed (a sanitizer's runtime, which takes
 * locks a raw clone may have copied held: ThreadSanitizer's thread
 * registry on PR_SET_NAME).  The kernel's calls take none. */
#define jail_prctl(op, a, b, c, d)                                                                 \
	syscall(SYS_prctl, (long)(op), (unsigned long)(a), (unsigned long)(b), (unsigned long)(c), \
		(unsigned long)(d))
/* Block every signal (pid 1, which reads them from a signalfd). */
void jail_block_signals(void);
/* Unblock every signal and reset every disposition to the default. */
void jail_reset_signals(void);
/* The two halves: every disposition to the default (pid 1, once), and the
 * blocked mask emptied (each command). */
void jail_default_signals(void);
void jail_unblock_signals(void);
/* A child that shares this process's memory (CLONE_VM | CLONE_PIDFD |
 * flags, exit signal 0) running fn(arg) on a JAIL_VM_STACK stack of its
 * own, which *stack returns: unmap it only once the child is reaped.  The
 * stack is MADV_DONTFORK and the child starts with every signal blocked.
 * fn may touch nothing of the creating thread's (its TLS, errno included:
 * supervise/keeper.c and jail/hostpath.c say how each child keeps to
 * that).  The pid, or -1 with errno (no stack left mapped). */
#define JAIL_VM_STACK (64 << 10)
pid_t jail_clone_vm(int (*fn)(void *), void *arg, unsigned long flags, int *pidfd, void **stack);

/* The next decimal pid of a list such as cgroup.procs or a task's
 * children file, advancing *s past it and what follows; 0 at the end.
 * No library call: safe after clone. */
static inline pid_t
jail_next_pid(const char **s)
{
	pid_t v = 0;
	while (**s >= '0' && **s <= '9')
		v = v * 10 + (*(*s)++ - '0');
	while (**s && (**s < '0' || **s > '9'))
		(*s)++;
	return v;
}

/* Child-side report of a failed step on the sandbox channel (no formatting). */
void jail_report_error(struct sync_chan *c, int step, int err, int op_index);

#endif
