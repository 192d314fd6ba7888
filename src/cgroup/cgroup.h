/* cgroup: one cgroup per sandbox, on cgroup v2 or v1, with memory (no
 * swap), pids and cpu limits, peak usage, OOM detection and kill-all.
 *
 * Where: <base>/warden/<id>, per hierarchy on v1.  <base> is chosen once per
 * process: as root the hierarchy root (v2: warden's own cgroup instead when
 * it is already delegated: it distributes controllers, or is the root of a
 * container's cgroup namespace); as another user warden's own cgroup if it
 * is writable (a delegated v2 subtree), else cgroup_create() fails with
 * -EPERM.  <base>/warden persists between runs; only <id> is removed.
 *
 * Typical use by the supervisor:
 *
 *     cgroup_sweep_stale();   (~0.05-0.1 ms: off the hot path, e.g. janitor)
 *     rc = cgroup_create(id, &lim, &cg, &err);       -EPERM/-ENOTSUP: "cgroup: none"
 *     v2: clone3 with CLONE_INTO_CGROUP, cgroup = cgroup_dirfd(cg)
 *     v1: the child joins before it runs anything (and before it unshares
 *         its cgroup namespace, so that namespace's root is the sandbox
 *         cgroup): it writes "0" to <dir>/tasks for each of cgroup_dirs(),
 *         fds opened by the supervisor.  Moving oneself skips the kernel's
 *         global threadgroup lock; cgroup_attach() of another pid takes it
 *         and, when idle, waits an RCU grace period: ~5-10 ms on a cold VM.
 *     ... wait ...
 *     cgroup_stats(cg, &st);                         (before destroy)
 *     cgroup_kill(cg);                               (cheap when already empty)
 *     cgroup_destroy(cg); cgroup_free(cg);
 *
 * All fds held by a cgroup are O_CLOEXEC; a child must still close them
 * before it runs sandboxed code (close_range).  cgroup_kill() and
 * cgroup_destroy() work by path, so a forked janitor that closed every fd
 * can call them on its inherited copy of cg; cgroup_stats() needs the fds.
 *
 * Cost on this project's VM (cgroup v1, 5 hierarchies, one run per process,
 * tests/unit/cgroup/bench_cgroup.c -c): discovery ~0.15 ms once per process
 * (mostly the kernel generating /proc/self/mountinfo), create ~0.45 ms and
 * destroy ~0.2 ms, nearly all of it the kernel's mkdir and rmdir of cgroups
 * (a memory cgroup's mkdir alone ~0.15 ms).  The CGROUP_NO_* flags drop two
 * of the five hierarchies.
 *
 * Thread safety: distinct objects may be used from distinct threads; the
 * host discovery behind every call is done once, under pthread_once. */
#ifndef WD_CGROUP_H
#define WD_CGROUP_H

#include "util/util.h"

#include <sys/types.h>

struct cgroup_limits {
	uint64_t memory_bytes;	 /* 0 = no limit */
	uint64_t pids;		 /* 0 = no limit */
	uint64_t cpu_millionths; /* CPUs x 1e6; 0 = no limit */
};

struct cgroup_stats {
	uint64_t memory_peak;	/* bytes, 0 if unknown */
	uint64_t cpu_ns;	/* 0 if unknown */
	bool oom_killed;	/* the kernel OOM-killed a process of this cgroup */
	uint64_t pids_peak_hit; /* times the pids limit refused a fork (0 if unknown) */
};

struct cgroup;

/* 2 on a pure unified host, 1 when the v1 memory, pids and cpu controllers
 * are mounted (a hybrid host counts as 1: the controllers live in v1),
 * 0 otherwise.  Found from /proc/self/mountinfo once per process.  Says
 * nothing about permission: see cgroup_host_check(). */
int cgroup_host_version(void);

/* Whether cgroup_host_version() would say 1, known without the discovery
 * (which parses /proc/self/mountinfo: ~0.15 ms): true when the memory,
 * pids and cpu controllers are v1 hierarchies at their usual places under
 * /sys/fs/cgroup (three statfs calls).  false means "not known": ask
 * cgroup_host_version().  A v1 sandbox cgroup is made after clone3, so its
 * caller can leave the discovery until then. */
bool cgroup_host_surely_v1(void);

/* 0 if this process can create sandbox cgroups, else -EPERM (not root and
 * no writable delegated subtree) or -ENOTSUP (no usable hierarchy), with the
 * reason in err (for `warden doctor`). */
int cgroup_host_check(struct wd_err *err);

/* What discovery found, for `warden doctor` (the one discovery: doctor
 * has no copy of its own).  Strings point into the process-wide host
 * facts and live as long as the process. */
#define CGROUP_NCTRL 5 /* memory, pids, cpu, cpuacct, freezer */
struct cgroup_host_info {
	int version;  /* 0, 1 or 2: what sandboxes get */
	int unusable; /* 0, or why cgroup_create() will fail (-EPERM, -ENOTSUP) */
	char why[200];
	int nhier;
	struct {
		const char *base;     /* sandboxes are <base>/warden/<id> */
		char controllers[64]; /* the ones warden uses there, comma-separated */
	} hier[CGROUP_NCTRL];
	/* mounted, in the order memory, pids, cpu, cpuacct, freezer; NULL: not */
	const char *v1_mount[CGROUP_NCTRL];
	const char *v2_mount; /* NULL: no cgroup2 mount */
	char v2_controllers[256];
	int swap_accounting; /* 1, 0, -1 unknown */
};
void cgroup_host_info(struct cgroup_host_info *out);

/* The directory sandbox cgroups are created under (…/warden/<id> below
 * it), for hierarchy i (v1: one per distinct hierarchy; v2: only 0), or
 * NULL past the end.  Valid for the life of the process. */
const char *cgroup_host_base(int i);

/* Create the sandbox's cgroup <base>/warden/<id> (id: 1-128 characters of
 * A-Z a-z 0-9 - _, unique per live sandbox) and apply lim (NULL: no
 * limits).  Returns 0 or -errno: -EINVAL bad id, -EEXIST id in use,
 * -EPERM/-ENOTSUP see cgroup_host_check() (also -ENOTSUP when a limit
 * needs a v2 controller that is not available).  On failure nothing is
 * left behind.  *out is a new object, free with cgroup_free(). */
int cgroup_create(const char *id, const struct cgroup_limits *lim, struct cgroup **out,
		  struct wd_err *err);

/* cgroup_create() with flags:
 * CGROUP_NO_CPUACCT: v1 with cpuacct mounted apart from cpu: skip that
 *   hierarchy.  Saves ~0.1 ms per sandbox (a mkdir, an attach, an rmdir);
 *   cgroup_stats() then reports cpu_ns 0 and the supervisor takes cpu time
 *   from pid 1's rusage.  No effect on v2 or a co-mounted "cpu,cpuacct". */
#define CGROUP_NO_CPUACCT 0x1u
/* CGROUP_NO_FREEZER: v1 with a freezer hierarchy: skip it (~0.06 ms per
 *   sandbox).  Only for a sandbox in its own pid namespace, whose processes
 *   all die with its pid 1 (the kernel refuses forks in a namespace whose
 *   init is exiting), so cgroup_kill() needs no freezer to win against a
 *   fork loop.  Without it, cgroup_kill() kills in passes, which the pids
 *   limit bounds.  Keep the freezer for the process isolation level. */
#define CGROUP_NO_FREEZER 0x2u
int cgroup_create_flags(const char *id, const struct cgroup_limits *lim, unsigned flags,
			struct cgroup **out, struct wd_err *err);
/* The directories cgroup_create_flags(id, flags) would make, before it
 * makes them (so a keeper can be told first): a new NULL-terminated list,
 * free with cgroup_dirs_free(); NULL when no cgroup can be made here. */
char **cgroup_planned_dirs(const char *id, unsigned flags);
void cgroup_dirs_free(char **dirs);
/* v2: an O_DIRECTORY fd for clone3(CLONE_INTO_CGROUP), else -1.  Owned by
 * cg: do not close. */
int cgroup_dirfd(const struct cgroup *cg);
int cgroup_version(const struct cgroup *cg);
/* Whether swap is capped at zero (v2 memory.swap.max, v1 memsw) rather
 * than only discouraged (v1 swappiness 0) or unlimited (no swap accounting,
 * or v1 without a memory limit, where memsw has no value to take). */
bool cgroup_swap_limited(const struct cgroup *cg);
/* v1: an O_WRONLY|O_CLOEXEC descriptor on each hierarchy's tasks file,
 * for a child to move itself (it writes "0"), opened relative to the
 * cgroup's directory descriptors; at most max.  Returns how many, 0 on v2
 * (clone3 joins there), or -errno (none left open). */
int cgroup_tasks_fds(const struct cgroup *cg, int *fds, int max);
/* Move pid (its whole thread group) into the cgroup: every v1 hierarchy;
 * on v2 only needed when the child was not cloned into it. */
int cgroup_attach(struct cgroup *cg, pid_t pid, struct wd_err *err);
/* Change a live cgroup's limits in place (warden update): the fields of
 * lim that are not 0, on v1 and v2.  A memory limit below what the
 * cgroup cannot give back (anonymous memory and tmpfs files) is refused
 * with -EBUSY (nothing written).  0 or -errno;
 * a failure after the first write may leave that write in force. */
int cgroup_update_limits(struct cgroup *cg, const struct cgroup_limits *lim, struct wd_err *err);
/* SIGKILL every process in the cgroup, grandchildren and forking trees
 * included.  v2: cgroup.kill, which returns once the signals are sent;
 * otherwise freeze, kill, thaw, until cgroup.procs is empty.  0 or -errno
 * (-EBUSY if something survived 5 s). */
int cgroup_kill(struct cgroup *cg);
/* Stop (on) or let run again every process of the cgroup, for a review of
 * what they wrote (docs/threat-model.md): v1's freezer, v2's cgroup.freeze, else
 * SIGSTOP/SIGCONT of each process in cgroup.procs, passes until no new one
 * appears (a process stopped cannot fork; the pids limit bounds the
 * passes).  *how: 1 frozen, 2 stopped by signal (thaw with the same how).
 * 0 or -errno. */
int cgroup_freeze(struct cgroup *cg, bool on, int *how);
/* Peak memory, cpu time, OOM kills; fields the host cannot tell stay 0.
 * Read before cgroup_destroy(). */
int cgroup_stats(struct cgroup *cg, struct cgroup_stats *out);
/* Remove the cgroup directories, retrying on EBUSY while the kernel drains
 * exiting tasks; processes still alive after 20 ms are killed.  0 or the
 * first -errno (-EBUSY after 2 s).  Idempotent. */
int cgroup_destroy(struct cgroup *cg);
/* Once the sandbox's pid 1 is in every directory of the cgroup: close the
 * descriptors held for its life (each directory, flocked, and the
 * statistics files; 8 on a v1 host), so an idle live sandbox costs its
 * server none of them.  Statistics, limit updates, kill and freeze open
 * what they use by path from then on.  Call it before the cgroup is used
 * from more than one thread.  NULL is a no-op. */
void cgroup_park(struct cgroup *cg);
/* Close and free; does not remove the directories.  NULL is a no-op. */
void cgroup_free(struct cgroup *cg);
/* The directories of this cgroup, absolute, NULL-terminated, valid while
 * cg lives (the janitor removes them if warden is killed). */
const char *const *cgroup_dirs(const struct cgroup *cg);
/* Kill whatever is left in the sandbox cgroup named id and remove its
 * directories, in every hierarchy where it exists (nothing to do where it
 * does not).  For the janitor, which knows the id before the cgroup
 * exists: warden can die between creating the cgroup and handing over the
 * object.  Returns 0, or -EBUSY when a directory would not go within about
 * ten seconds (exiting tasks can be slow to leave on a loaded host). */
int cgroup_remove_id(const char *id);
/* Remove leftover <base>/warden/<id> directories of killed runs: only
 * empty ones, older than 5 s and not locked by a live warden. */
void cgroup_sweep_stale(void);

/* Tests only: use the cgroup2 hierarchy directory path as the v2 base
 * (…/warden/<id> below it) instead of what discovery found, e.g. this
 * hybrid host's controller-less /sys/fs/cgroup/unified.  Not thread-safe.
 * 0, or -errno / -ENOTSUP if path is not a writable cgroup2 directory. */
int cgroup_test_force_v2_root(const char *path);
/* Tests only: the same, with path taken as warden's own delegated cgroup
 * (the base that may hold warden's process and get it moved aside). */
int cgroup_test_force_v2_own(const char *path);
/* Tests only: run the v2 slow path that enables controllers down to
 * <base>/warden, with extra_controller (e.g. "hugetlb", which a hybrid
 * host's v2 hierarchy offers) wanted besides memory/pids/cpu. */
int cgroup_test_v2_enable(const char *extra_controller, struct wd_err *err);

#endif
