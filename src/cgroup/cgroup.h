/* cgroup: one cgroup per sandbox, on cgroup v2 or v1, with memory (no
 * swap), pids and cpu limits, peak usage, OOM detection and kill-all. */
#ifndef WD_CGROUP_H
#define WD_CGROUP_H

#include "util/util.h"

#include <sys/types.h>

struct cgroup_limits {
	uint64_t memory_bytes;   /* 0 = no limit */
	uint64_t pids;           /* 0 = no limit */
	uint64_t cpu_millionths; /* CPUs x 1e6; 0 = no limit */
};

struct cgroup_stats {
	uint64_t memory_peak; /* bytes, 0 if unknown */
	uint64_t cpu_ns;      /* 0 if unknown */
	bool oom_killed;      /* the kernel OOM-killed a process of this cgroup */
	uint64_t pids_peak_hit; /* times the pids limit refused a fork (0 if unknown) */
};

struct cgroup;

/* 2 for a v2 (unified) host, 1 for v1 with the needed controllers mounted,
 * 0 if neither can be used by this process. */
int cgroup_host_version(void);

/* Create the sandbox's cgroup named id (e.g. "warden/<id>") and apply lim.
 * Returns 0 or -errno; *out is a new object, free with cgroup_free(). */
int cgroup_create(const char *id, const struct cgroup_limits *lim, struct cgroup **out,
		  struct wd_err *err);
/* v2: an O_DIRECTORY fd for clone3(CLONE_INTO_CGROUP), else -1. */
int cgroup_dirfd(const struct cgroup *cg);
int cgroup_version(const struct cgroup *cg);
/* Move pid into the cgroup (every v1 hierarchy; v2 when not cloned into). */
int cgroup_attach(struct cgroup *cg, pid_t pid, struct wd_err *err);
/* SIGKILL every process in the cgroup (v2 cgroup.kill, else a loop). */
int cgroup_kill(struct cgroup *cg);
int cgroup_stats(struct cgroup *cg, struct cgroup_stats *out);
/* Remove the cgroup directories (retrying while the kernel drains them). */
int cgroup_destroy(struct cgroup *cg);
void cgroup_free(struct cgroup *cg);
/* The directories of this cgroup, NULL-terminated, valid while cg lives
 * (the janitor removes them if warden is killed). */
const char *const *cgroup_dirs(const struct cgroup *cg);
/* Remove leftover sandbox cgroups whose processes are all gone. */
void cgroup_sweep_stale(void);

#endif
