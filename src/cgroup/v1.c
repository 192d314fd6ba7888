/* cgroup v1: one directory per hierarchy (memory, pids, cpu, and cpuacct and
 * freezer when mounted; co-mounted controllers share a directory).  v1 has no
 * cgroup.kill, no clone-into-cgroup and no oom.group, so: attach writes the
 * pid into every hierarchy, kill freezes first, and an OOM kill takes one
 * victim (the supervisor's kill of pid 1 takes the rest). */
#include "cgroup/cgroup-internal.h"

#include <stdio.h>
#include <string.h>

#define CPU_PERIOD_US 100000
/* The kernel refuses a cfs quota under 1 ms. */
#define CPU_MIN_QUOTA_US 1000

int
cg_v1_apply(struct cgroup *cg, const struct cgroup_limits *lim, struct wd_err *err)
{
	int rc = 0, i = 0;
	const char *file = NULL;

	if (lim->memory_bytes && (i = cg_dir_of(cg, CG_MEMORY)) >= 0) {
		file = "memory.limit_in_bytes";
		if ((rc = cg_write_u64(cg->fd[i], file, lim->memory_bytes)) < 0)
			goto fail;
		/* No swap: memsw is memory+swap, so equal limits leave no
		 * room for swap.  It must be written after limit_in_bytes
		 * (the kernel keeps memsw >= limit).  memsw exists only with
		 * swap accounting (CONFIG_MEMCG_SWAP, swapaccount=1); without
		 * it, swappiness 0 stops reclaim from swapping this cgroup's
		 * anonymous memory, so the hog meets the OOM killer instead
		 * of the disk.  Softer than a limit: cgroup_swap_limited()
		 * reports which one is in force. */
		file = "memory.memsw.limit_in_bytes";
		rc = cg_write_u64(cg->fd[i], file, lim->memory_bytes);
		if (rc == -ENOENT) {
			file = "memory.swappiness";
			rc = wd_write_file_at(cg->fd[i], file, "0");
		} else if (rc == 0) {
			cg->swap_limited = true;
		}
		if (rc < 0)
			goto fail;
		/* memory.oom_control is left as created: the OOM killer
		 * enabled (oom_kill_disable 0).  Disabling it would make a hog
		 * hang in the allocator instead of dying. */
	}
	if (lim->pids && (i = cg_dir_of(cg, CG_PIDS)) >= 0) {
		file = "pids.max";
		if ((rc = cg_write_u64(cg->fd[i], file, lim->pids)) < 0)
			goto fail;
	}
	if (lim->cpu_millionths && (i = cg_dir_of(cg, CG_CPU)) >= 0) {
		uint64_t quota = lim->cpu_millionths * CPU_PERIOD_US / 1000000;
		if (quota < CPU_MIN_QUOTA_US)
			quota = CPU_MIN_QUOTA_US;
		/* cpu.cfs_period_us is not written: a new cgroup starts at
		 * the kernel's default period, 100000 us (default_bw_period_us
		 * in kernel/sched, not inherited from the parent), which is
		 * what the quota is computed for.  One write fewer per run. */
		file = "cpu.cfs_quota_us";
		if ((rc = cg_write_u64(cg->fd[i], file, quota)) < 0)
			goto fail;
	}
	return 0;
fail:
	return wd_err_sys(err, -rc, "cgroup: write %s/%s", cg->dirs[i], file);
}

static bool
v1_frozen(int dfd)
{
	char buf[32];
	return wd_read_file_at(dfd, "freezer.state", buf, sizeof(buf)) > 0 &&
	       strncmp(buf, "FROZEN", 6) == 0;
}

/* freezer.state: FROZEN freezes, and reads FREEZING until every task has
 * stopped; THAWED lets them run (and die of their pending SIGKILL). */
static int
v1_freeze(int dfd, bool on)
{
	int rc = wd_write_file_at(dfd, "freezer.state", on ? "FROZEN" : "THAWED");
	if (rc == 0 && on)
		cg_wait_frozen(dfd, v1_frozen);
	return rc;
}

int
cg_v1_freeze(struct cgroup *cg, bool on)
{
	int i = cg_dir_of(cg, CG_FREEZER);
	if (i < 0)
		return -ENOTSUP;
	wd_autoclose int dfd = cg_open_dir(cg, i);
	if (dfd < 0)
		return dfd;
	return v1_freeze(dfd, on);
}

int
cg_v1_kill(struct cgroup *cg)
{
	int fz = cg_dir_of(cg, CG_FREEZER);
	int i = fz >= 0 ? fz : cg_dir_of(cg, CG_PIDS);
	if (i < 0)
		return -ENOENT;
	wd_autoclose int dfd = cg_open_dir(cg, i);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd; /* already removed */
	return cg_kill_loop(dfd, fz >= 0 ? v1_freeze : NULL);
}

void
cg_v1_stats(struct cgroup *cg, struct cgroup_stats *st)
{
	uint64_t v;
	int i;
	if ((i = cg_dir_of(cg, CG_MEMORY)) >= 0) {
		if (cg_stat_u64(cg, i, "memory.max_usage_in_bytes", &v) == 0)
			st->memory_peak = v;
		/* "oom_kill N" since 4.13 */
		if (cg_stat_keyed(cg, i, "memory.oom_control", "oom_kill", &v) == 0)
			st->oom_killed = v > 0;
	}
	if ((i = cg_dir_of(cg, CG_CPUACCT)) >= 0 && cg_stat_u64(cg, i, "cpuacct.usage", &v) == 0)
		st->cpu_ns = v;
	if ((i = cg_dir_of(cg, CG_PIDS)) >= 0 &&
	    cg_stat_keyed(cg, i, "pids.events", "max", &v) == 0)
		st->pids_peak_hit = v;
}
