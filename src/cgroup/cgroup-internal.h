/* cgroup internals shared by host.c (discovery), cgroup.c (lifecycle), v1.c
 * and v2.c (limits, kill, stats).  Nothing outside src/cgroup includes this.
 *
 * Layout on the host (both versions):
 *
 *     <base>/warden/            persistent parent, never holds a process;
 *                               on v2 it distributes memory/pids/cpu
 *     <base>/warden/<id>/       one per sandbox, removed by cgroup_destroy()
 *
 * <base> is chosen once per process (host.c) and is per hierarchy on v1. */
#ifndef WD_CGROUP_INTERNAL_H
#define WD_CGROUP_INTERNAL_H

#include "cgroup/cgroup.h"

#include <pthread.h>

/* The controllers warden uses.  On v1 each may be its own hierarchy or be
 * co-mounted with others ("cpu,cpuacct"); on v2 they share one directory. */
enum cg_ctrl {
	CG_MEMORY,
	CG_PIDS,
	CG_CPU,
	CG_CPUACCT, /* v1 only: cpu time (v2 has cpu.stat in every cgroup) */
	CG_FREEZER, /* v1 only: stop a forking tree before killing it */
	CG_NCTRL,
};
#define CG_BIT(c) (1u << (c))
#define CG_V1_REQUIRED (CG_BIT(CG_MEMORY) | CG_BIT(CG_PIDS) | CG_BIT(CG_CPU))
#define CG_V2_WANTED (CG_BIT(CG_MEMORY) | CG_BIT(CG_PIDS) | CG_BIT(CG_CPU))

extern const char *const cg_ctrl_names[CG_NCTRL];

/* One directory tree warden creates sandboxes in. */
struct cg_hier {
	char *base;	/* absolute; sandboxes are <base>/warden/<id> */
	unsigned ctrls; /* v1: controllers of interest on this hierarchy */
};

/* Host facts, discovered once per process from /proc/self/mountinfo and
 * /proc/self/cgroup (host.c).  Read-only after discovery except the v2
 * fields under `lock`. */
struct cg_host {
	int version; /* 0, 1 or 2: what cgroup_create() will use */
	int nhier;   /* v1: distinct hierarchies in use; v2: 1 */
	struct cg_hier hier[CG_NCTRL];
	/* 0, or the negative errno cgroup_create() fails with, and why */
	int unusable;
	char why[200];
	/* what is mounted, used or not (for cgroup_host_info and doctor) */
	char *v1_mount[CG_NCTRL];
	char *v2_mount;

	/* v2 only */
	bool v2_base_is_own; /* base is the cgroup warden started in */
	pthread_mutex_t lock;
	bool v2_probed;	     /* v2_enabled is known (the slow path ran) */
	unsigned v2_enabled; /* CG_V2_WANTED bits usable in <base>/warden/<id> */
};

#define CG_STAT_FILES 6
struct cgroup {
	int version;
	int ndirs;
	int fd[CG_NCTRL];	  /* O_DIRECTORY fds, one per hierarchy */
	unsigned ctrls[CG_NCTRL]; /* controllers usable in dirs[i] */
	char *dirs[CG_NCTRL + 1]; /* absolute paths, NULL-terminated */
	bool swap_limited;	  /* swap is capped (memsw / memory.swap.max) */
	/* statistics files kept open after their first read (cg_stat_read) */
	struct {
		const char *file; /* a string literal */
		int dir;	  /* index into fd[] */
		int fd;
	} stat[CG_STAT_FILES];
	int nstat;
	/* cgroup_park: fd[] and stat[] closed for good; what is read or
	 * written later is opened by path (dirs[]) for that read or write */
	bool parked;
};

/* host.c */
struct cg_host *cg_host_get(void);

/* cgroup.c helpers used by v1.c and v2.c */
int cg_dir_of(const struct cgroup *cg, enum cg_ctrl c); /* index into fd[] or -1 */
int cg_write_u64(int dfd, const char *file, uint64_t v);
int cg_read_u64(int dfd, const char *file, uint64_t *out);
/* "key value" lines (memory.events, cpu.stat, memory.oom_control, pids.events) */
int cg_read_keyed(int dfd, const char *file, const char *key, uint64_t *out);
/* The same two for statistics read after every command: the file (a string
 * literal) of hierarchy i is opened once and re-read with pread(). */
int cg_stat_u64(struct cgroup *cg, int i, const char *file, uint64_t *out);
int cg_stat_keyed(struct cgroup *cg, int i, const char *file, const char *key, uint64_t *out);
/* Freeze/kill/thaw loop over cgroup.procs of dfd (cgroup.c).  freeze(dfd,
 * true/false) brackets each pass; NULL without a freezer. */
int cg_kill_loop(int dfd, int (*freeze)(int dfd, bool on));
/* Wait for a freezer state file to read `want`, spinning briefly first. */
void cg_wait_frozen(int dfd, bool (*frozen)(int dfd));
/* An O_DIRECTORY fd for cg->dirs[i], opened afresh: kill and destroy work
 * by path, so a forked janitor that closed its fds can still use them. */
int cg_open_dir(const struct cgroup *cg, int i);

/* v1.c */
int cg_v1_apply(struct cgroup *cg, const struct cgroup_limits *lim, struct wd_err *err);
int cg_v1_kill(struct cgroup *cg);
/* freezer.state FROZEN/THAWED; -ENOTSUP without a freezer hierarchy */
int cg_v1_freeze(struct cgroup *cg, bool on);
void cg_v1_stats(struct cgroup *cg, struct cgroup_stats *st);

/* v2.c */
int cg_v2_apply(struct cgroup *cg, const struct cgroup_limits *lim, struct wd_err *err);
int cg_v2_kill(struct cgroup *cg);
/* cgroup.freeze (5.2+); -ENOTSUP without it */
int cg_v2_freeze(struct cgroup *cg, bool on);
void cg_v2_stats(struct cgroup *cg, struct cgroup_stats *st);

#endif
