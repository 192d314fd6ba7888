/* cgroup v2 (unified hierarchy): limits, kill, stats.
 *
 * Controllers reach <base>/warden/<id> only if every ancestor below the
 * hierarchy root enables them in cgroup.subtree_control.  The kernel's "no
 * internal processes" rule (cgroup-v2.rst) forbids enabling a domain
 * controller in a non-root cgroup that has processes of its own, so:
 *
 *   <base>             hierarchy root (exempt from the rule), or warden's own
 *                      delegated cgroup: if that still holds warden's
 *                      process, warden moves itself into the leaf
 *                      <base>/warden-supervisor first, as systemd's
 *                      delegation docs and nsjail do.  Other processes there
 *                      are not ours to move: then we fail with EBUSY.
 *   <base>/warden      created by us, never holds a process: always allowed.
 *   <base>/warden/<id> leaf; the sandbox's processes live here.
 *
 * Enabling is a slow path taken once per host (the setting persists in the
 * directories): the fast path writes the limit files directly and only an
 * ENOENT on a controller's file sends us to enable_controllers(). */
#include "cgroup/cgroup-internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define CPU_PERIOD_US 100000
/* The kernel refuses a cpu.max quota under 1 ms. */
#define CPU_MIN_QUOTA_US 1000

/* Tests only (cgroup_test_v2_enable): one more controller to distribute,
 * so the delegation path can run on a host whose v2 hierarchy has none of
 * ours (a hybrid host's, which offers hugetlb).  Bit CG_NCTRL. */
static const char *test_extra;
#define CG_EXTRA_BIT CG_BIT(CG_NCTRL)

static const char *
bit_name(int c)
{
	return c < CG_NCTRL ? cg_ctrl_names[c] : test_extra;
}

/* Controller names in a space-separated list (cgroup.controllers). */
static unsigned
parse_ctrls(const char *list)
{
	unsigned bits = 0;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", list);
	char *save = NULL;
	for (char *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
		for (int c = 0; c <= CG_NCTRL; c++)
			if (bit_name(c) && strcmp(t, bit_name(c)) == 0)
				bits |= CG_BIT(c);
	return bits;
}

static int
read_ctrls(const char *dir, const char *file, unsigned *out)
{
	char buf[512];
	wd_autofree char *p = wd_xasprintf("%s/%s", dir, file);
	ssize_t n = wd_read_file_at(AT_FDCWD, p, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	*out = parse_ctrls(buf);
	return 0;
}

/* "+memory +pids +cpu" for bits into dir/cgroup.subtree_control. */
static int
enable_in(const char *dir, unsigned bits)
{
	char buf[64] = "";
	size_t len = 0;
	for (int c = 0; c <= CG_NCTRL; c++)
		if ((bits & CG_BIT(c)) && bit_name(c))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s+%s",
						len ? " " : "", bit_name(c));
	wd_autofree char *p = wd_xasprintf("%s/cgroup.subtree_control", dir);
	return wd_write_file_at(AT_FDCWD, p, buf);
}

/* Move this whole process (writing "0" moves the writer's thread group)
 * into <base>/warden-supervisor, leaving base free of processes. */
static int
move_self(const char *base)
{
	wd_autofree char *leaf = wd_xasprintf("%s/warden-supervisor", base);
	if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
		return -errno;
	wd_autofree char *procs = wd_xasprintf("%s/cgroup.procs", leaf);
	wd_log(WD_LOG_INFO, "cgroup: moving warden into %s to delegate controllers", leaf);
	return wd_write_file_at(AT_FDCWD, procs, "0");
}

/* The slow path: make memory/pids/cpu (those the host has) reach
 * <base>/warden/<id>, and record what does.  Idempotent. */
static int
enable_controllers_locked(struct cg_host *h, struct wd_err *err)
{
	const char *base = h->hier[0].base;
	unsigned avail = 0, on = 0;
	int rc = read_ctrls(base, "cgroup.controllers", &avail);
	if (rc < 0)
		return wd_err_sys(err, -rc, "cgroup: read %s/cgroup.controllers", base);
	unsigned want = avail & (CG_V2_WANTED | (test_extra ? CG_EXTRA_BIT : 0));
	if (read_ctrls(base, "cgroup.subtree_control", &on) == 0 && (want & ~on)) {
		rc = enable_in(base, want & ~on);
		if (rc == -EBUSY && h->v2_base_is_own) {
			rc = move_self(base);
			if (rc == 0)
				rc = enable_in(base, want & ~on);
		}
		if (rc < 0)
			return wd_err_sys(
			    err, -rc, "cgroup: enable controllers in %s/cgroup.subtree_control%s",
			    base,
			    rc == -EBUSY
				? " (it holds other processes; give warden a cgroup of its own)"
				: "");
	}
	wd_autofree char *parent = wd_xasprintf("%s/warden", base);
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return wd_err_sys(err, errno, "cgroup: mkdir %s", parent);
	on = 0;
	if (read_ctrls(parent, "cgroup.subtree_control", &on) == 0 && (want & ~on)) {
		rc = enable_in(parent, want & ~on);
		if (rc < 0)
			return wd_err_sys(err, -rc,
					  "cgroup: enable controllers in %s/cgroup.subtree_control",
					  parent);
	}
	h->v2_enabled = want;
	__atomic_store_n(&h->v2_probed, true, __ATOMIC_RELEASE);
	return 0;
}

static int
enable_controllers(struct cg_host *h, struct wd_err *err)
{
	pthread_mutex_lock(&h->lock);
	int rc = enable_controllers_locked(h, err);
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* Write the limit files of the controllers in `have`.  -ENOENT on a
 * controller's first file means it is not enabled here. */
static int
write_limits(struct cgroup *cg, const struct cgroup_limits *lim, unsigned have, const char **failed)
{
	int dfd = cg->fd[0];
	int rc;
	char buf[48];
	if (have & CG_BIT(CG_MEMORY)) {
		/* oom.group: an OOM kill takes the whole sandbox, not one
		 * victim that leaves a half-dead process tree behind.  Always
		 * written: it doubles as the probe for the controller. */
		*failed = "memory.oom.group";
		if ((rc = wd_write_file_at(dfd, "memory.oom.group", "1")) < 0)
			return rc;
		if (lim->memory_bytes) {
			*failed = "memory.max";
			if ((rc = cg_write_u64(dfd, "memory.max", lim->memory_bytes)) < 0)
				return rc;
		}
		/* No swap, limit or not: with swap a limit only slows a hog
		 * down, and the sandbox's memory should not reach the disk.
		 * memory.swap.max is absent without swap accounting
		 * (CONFIG_SWAP off, cgroup.memory=noswap); then there is no
		 * knob and nothing to do, which cgroup_swap_limited() reports. */
		rc = wd_write_file_at(dfd, "memory.swap.max", "0");
		if (rc < 0 && rc != -ENOENT) {
			*failed = "memory.swap.max";
			return rc;
		}
		cg->swap_limited = rc == 0;
	}
	if ((have & CG_BIT(CG_PIDS)) && lim->pids) {
		*failed = "pids.max";
		if ((rc = cg_write_u64(dfd, "pids.max", lim->pids)) < 0)
			return rc;
	}
	if ((have & CG_BIT(CG_CPU)) && lim->cpu_millionths) {
		uint64_t quota = lim->cpu_millionths * CPU_PERIOD_US / 1000000;
		if (quota < CPU_MIN_QUOTA_US)
			quota = CPU_MIN_QUOTA_US;
		snprintf(buf, sizeof(buf), "%" PRIu64 " %u", quota, CPU_PERIOD_US);
		*failed = "cpu.max";
		if ((rc = wd_write_file_at(dfd, "cpu.max", buf)) < 0)
			return rc;
	}
	return 0;
}

int
cg_v2_apply(struct cgroup *cg, const struct cgroup_limits *lim, struct wd_err *err)
{
	struct cg_host *h = cg_host_get();
	unsigned need = (lim->memory_bytes ? CG_BIT(CG_MEMORY) : 0) |
			(lim->pids ? CG_BIT(CG_PIDS) : 0) |
			(lim->cpu_millionths ? CG_BIT(CG_CPU) : 0);
	bool probed = __atomic_load_n(&h->v2_probed, __ATOMIC_ACQUIRE);
	/* Optimistic: on a prepared host every controller is there. */
	unsigned have = probed ? h->v2_enabled : CG_V2_WANTED;
	const char *failed = "";
	int rc = write_limits(cg, lim, have & (need | CG_BIT(CG_MEMORY)), &failed);
	/* ENOENT after a probe too: someone removed and recreated warden/,
	 * which lost its subtree_control. */
	if (rc == -ENOENT) {
		rc = enable_controllers(h, err);
		if (rc < 0)
			return rc;
		have = h->v2_enabled;
		rc = write_limits(cg, lim, have & (need | CG_BIT(CG_MEMORY)), &failed);
	}
	if (rc < 0)
		return wd_err_sys(err, -rc, "cgroup: write %s/%s", cg->dirs[0], failed);
	for (int c = 0; c < CG_NCTRL; c++)
		if (need & ~have & CG_BIT(c))
			return wd_err_set(err, WD_E_UNSUPPORTED,
					  "cgroup v2: the %s controller is not available in %s "
					  "(bound to a v1 hierarchy, or not delegated)",
					  cg_ctrl_names[c], h->hier[0].base);
	cg->ctrls[0] = have;
	return 0;
}

static bool
v2_frozen(int dfd)
{
	uint64_t frozen = 0;
	return cg_read_keyed(dfd, "cgroup.events", "frozen", &frozen) == 0 && frozen;
}

/* cgroup.freeze (5.2+): 1 freezes; the freeze is complete when
 * cgroup.events says "frozen 1". */
static int
v2_freeze(int dfd, bool on)
{
	int rc = wd_write_file_at(dfd, "cgroup.freeze", on ? "1" : "0");
	if (rc == 0 && on)
		cg_wait_frozen(dfd, v2_frozen);
	return rc;
}

int
cg_v2_freeze(struct cgroup *cg, bool on)
{
	wd_autoclose int dfd = cg_open_dir(cg, 0);
	if (dfd < 0)
		return dfd;
	if (faccessat(dfd, "cgroup.freeze", W_OK, 0) < 0)
		return -ENOTSUP;
	return v2_freeze(dfd, on);
}

int
cg_v2_kill(struct cgroup *cg)
{
	wd_autoclose int dfd = cg_open_dir(cg, 0);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd; /* already removed */
	/* cgroup.kill (5.14+) kills every task atomically with respect to
	 * fork: a task forked during the kill is killed too.  It returns once
	 * the signals are sent; cgroup_destroy() waits for the exits. */
	int rc = wd_write_file_at(dfd, "cgroup.kill", "1");
	if (rc != -ENOENT)
		return rc;
	return cg_kill_loop(dfd, v2_freeze);
}

void
cg_v2_stats(struct cgroup *cg, struct cgroup_stats *st)
{
	uint64_t v;
	if (cg->ctrls[0] & CG_BIT(CG_MEMORY)) {
		if (cg_stat_u64(cg, 0, "memory.peak", &v) == 0) /* 5.19+ */
			st->memory_peak = v;
		if (cg_stat_keyed(cg, 0, "memory.events", "oom_kill", &v) == 0)
			st->oom_killed = v > 0;
	}
	/* cpu.stat's usage_usec exists in every v2 cgroup, cpu controller or not. */
	if (cg_stat_keyed(cg, 0, "cpu.stat", "usage_usec", &v) == 0)
		st->cpu_ns = v * 1000;
	if ((cg->ctrls[0] & CG_BIT(CG_PIDS)) && cg_stat_keyed(cg, 0, "pids.events", "max", &v) == 0)
		st->pids_peak_hit = v;
}

int
cgroup_test_v2_enable(const char *extra_controller, struct wd_err *err)
{
	struct cg_host *h = cg_host_get();
	if (h->version != 2)
		return -ENOTSUP;
	test_extra = extra_controller;
	return enable_controllers(h, err);
}
