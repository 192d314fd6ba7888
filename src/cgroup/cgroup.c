/* cgroup lifecycle shared by v1 and v2: create, attach, kill, stats,
 * destroy, sweep.  Limits, kill and stats details live in v1.c and v2.c.
 *
 * The create path runs on every `warden run`, so it is kept to the bare
 * syscalls: per hierarchy one mkdir, one open (kept as a dirfd for the
 * cgroup's life), one flock, then one openat+write+close per limit file.
 * The persistent `warden/` parent is created only when missing. */
#include "cgroup/cgroup-internal.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

/* A leftover cgroup younger than this is never swept: it may belong to a
 * warden between its mkdir and its flock (microseconds in practice). */
#define SWEEP_GRACE_S 5

/* cgroup_destroy() gives exiting tasks this long to leave (see there). */
#define DESTROY_TIMEOUT_NS (2 * 1000000000ULL)

/* cg_kill_loop() gives up after this long (a task stuck in D state). */
#define KILL_TIMEOUT_NS (5 * 1000000000ULL)

static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ULL),
			      .tv_nsec = (long)(ns % 1000000000ULL)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int
cg_dir_of(const struct cgroup *cg, enum cg_ctrl c)
{
	for (int i = 0; i < cg->ndirs; i++)
		if (cg->ctrls[i] & CG_BIT(c))
			return i;
	return -1;
}

int
cg_write_u64(int dfd, const char *file, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return wd_write_file_at(dfd, file, buf);
}

/* A number, or "max" (v2's spelling of no limit) as UINT64_MAX. */
int
cg_read_u64(int dfd, const char *file, uint64_t *out)
{
	char buf[64];
	ssize_t n = wd_read_file_at(dfd, file, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	if (strcmp(buf, "max") == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	return wd_parse_u64(buf, out);
}

int
cg_read_keyed(int dfd, const char *file, const char *key, uint64_t *out)
{
	char buf[2048];
	ssize_t n = wd_read_file_at(dfd, file, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	size_t kl = strlen(key);
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
			return wd_parse_u64(line + kl + 1, out);
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* Statistics of a live sandbox are read after each of its commands: the
 * files are opened once, when the cgroup is made, and re-read from offset
 * 0 (kernfs regenerates a file's text at every read from its start).  The
 * table is not changed after that, so commands finishing at once on
 * several threads read it without a lock.  Measured (bench/step_bench):
 * cgroup_stats() 1.2 us against 5.1 us opening its four files each time
 * (v1), a few us of every exec into a live sandbox. */
static void
stat_keep(struct cgroup *cg, int i, const char *file)
{
	if (i < 0 || cg->nstat >= CG_STAT_FILES)
		return;
	int fd = openat(cg->fd[i], file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* not on this kernel (memory.peak before 5.19): read as missing */
	cg->stat[cg->nstat].file = file;
	cg->stat[cg->nstat].dir = i;
	cg->stat[cg->nstat++].fd = fd;
}

static void
stat_open(struct cgroup *cg)
{
	if (cg->version == 1) {
		int m = cg_dir_of(cg, CG_MEMORY);
		stat_keep(cg, m, "memory.max_usage_in_bytes");
		stat_keep(cg, m, "memory.oom_control");
		stat_keep(cg, cg_dir_of(cg, CG_CPUACCT), "cpuacct.usage");
		stat_keep(cg, cg_dir_of(cg, CG_PIDS), "pids.events");
	} else {
		if (cg->ctrls[0] & CG_BIT(CG_MEMORY)) {
			stat_keep(cg, 0, "memory.peak");
			stat_keep(cg, 0, "memory.events");
		}
		stat_keep(cg, 0, "cpu.stat");
		if (cg->ctrls[0] & CG_BIT(CG_PIDS))
			stat_keep(cg, 0, "pids.events");
	}
}

static ssize_t
stat_read(struct cgroup *cg, int i, const char *file, char *buf, size_t cap)
{
	int fd = -1;
	for (int k = 0; k < cg->nstat && fd < 0; k++)
		if (cg->stat[k].dir == i && strcmp(cg->stat[k].file, file) == 0)
			fd = cg->stat[k].fd;
	bool kept = fd >= 0;
	if (!kept && cg->parked) {
		/* by path: see cgroup_park for why that reaches this cgroup */
		char path[PATH_MAX];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", cg->dirs[i], file) >=
		    sizeof(path))
			return -ENAMETOOLONG;
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return -errno;
	} else if (!kept && (fd = openat(cg->fd[i], file, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	ssize_t n = pread(fd, buf, cap - 1, 0);
	int e = errno;
	if (!kept)
		close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}

int
cg_stat_u64(struct cgroup *cg, int i, const char *file, uint64_t *out)
{
	char buf[64];
	ssize_t n = stat_read(cg, i, file, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	if (strcmp(buf, "max") == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	return wd_parse_u64(buf, out);
}

int
cg_stat_keyed(struct cgroup *cg, int i, const char *file, const char *key, uint64_t *out)
{
	char buf[2048];
	ssize_t n = stat_read(cg, i, file, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	size_t kl = strlen(key);
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
			return wd_parse_u64(line + kl + 1, out);
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* cgroup.procs, whole; returns the number of pids and a malloc'd array. */
static int
read_procs(int dfd, pid_t **out)
{
	wd_autoclose int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 4096, len = 0;
	wd_autofree char *buf = wd_xmalloc(cap);
	for (;;) {
		if (cap - len < 2) {
			cap *= 2;
			buf = wd_xrealloc(buf, cap);
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	int count = 0;
	pid_t *pids = wd_xmalloc((len / 2 + 1) * sizeof(*pids));
	for (char *p = buf; *p;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		if (v > 0)
			pids[count++] = (pid_t)v;
		p = end;
		while (*p == '\n')
			p++;
	}
	*out = pids;
	return count;
}

/* Wait until every pidfd reports its process exited, up to timeout_ms. */
static void
wait_pidfds(struct pollfd *pfd, int n, int timeout_ms)
{
	uint64_t deadline = wd_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	int left = n;
	while (left > 0) {
		uint64_t now = wd_now_ns();
		if (now >= deadline)
			return;
		int rc = poll(pfd, (nfds_t)n, (int)((deadline - now) / 1000000ULL) + 1);
		if (rc < 0 && errno != EINTR)
			return;
		for (int i = 0; i < n && rc > 0; i++)
			if (pfd[i].fd >= 0 && pfd[i].revents) {
				close(pfd[i].fd);
				pfd[i].fd = -1; /* poll() skips negative fds */
				left--;
			}
	}
}

/* Kill everything in the cgroup without cgroup.kill (v1, and v2 before 5.14).
 *
 * Why freeze: a plain "read cgroup.procs, kill each pid" loop races a
 * forking process, which can create a child after the list was read; a fork
 * bomb can outrun the loop indefinitely.  Frozen tasks cannot fork, so one
 * pass over a frozen cgroup kills everything in it; the SIGKILLs take effect
 * when we thaw.  Without a freezer we loop until the list stays empty, which
 * the pids limit bounds.
 *
 * Why pidfds: a pid read from cgroup.procs could exit and be reused by an
 * unrelated process before kill(); the freezer keeps frozen tasks from
 * exiting, and a pidfd then pins the process we signal.  poll() on the
 * pidfds also tells us when they are gone without sleeping in steps (a
 * 20 us nanosleep costs ~80 us on a VM), so a pass ends as soon as the
 * kernel is done.  pidfd_open is 5.3+; before, or out of fds, plain kill. */
int
cg_kill_loop(int dfd, int (*freeze)(int dfd, bool on))
{
	uint64_t deadline = wd_now_ns() + KILL_TIMEOUT_NS;
	for (;;) {
		pid_t *pids = NULL;
		int n = read_procs(dfd, &pids);
		if (n <= 0) {
			free(pids);
			return n == -ENOENT ? 0 : n; /* ENOENT: the cgroup is gone */
		}
		if (wd_now_ns() > deadline) {
			free(pids);
			return -EBUSY;
		}
		bool frozen = freeze && freeze(dfd, true) == 0;
		if (frozen) { /* the list of the frozen set, children included */
			free(pids);
			pids = NULL;
			n = read_procs(dfd, &pids);
		}
		struct pollfd *pfd = wd_xcalloc(n > 0 ? (size_t)n : 1, sizeof(*pfd));
		int np = 0;
		for (int i = 0; i < n; i++) {
			int fd = (int)syscall(SYS_pidfd_open, pids[i], 0);
			if (fd < 0) {
				if (errno != ESRCH)
					kill(pids[i], SIGKILL);
				continue;
			}
			if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0 &&
			    errno != ESRCH)
				kill(pids[i], SIGKILL);
			pfd[np++] = (struct pollfd){.fd = fd, .events = POLLIN};
		}
		free(pids);
		if (frozen)
			freeze(dfd, false);
		wait_pidfds(pfd, np, 100);
		for (int i = 0; i < np; i++)
			wd_close_reset(&pfd[i].fd);
		free(pfd);
		/* An exited task can linger in cgroup.procs for a moment; do
		 * not spin on it. */
		sched_yield();
	}
}

void
cg_wait_frozen(int dfd, bool (*frozen)(int dfd))
{
	/* Freezing waits for each task to reach the refrigerator, usually
	 * within microseconds; a task in uninterruptible sleep can hold it
	 * up, then give up after ~50 ms: partially frozen beats not killing. */
	uint64_t deadline = wd_now_ns() + 50000000ULL;
	for (int i = 0; !frozen(dfd) && wd_now_ns() < deadline; i++) {
		if (i < 64)
			sched_yield();
		else
			sleep_ns(200000);
	}
}

int
cg_open_dir(const struct cgroup *cg, int i)
{
	int fd = open(cg->dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Ids become directory names: no '/', no '.', so no traversal and no
 * collision with interface files ("memory.max", "cgroup.procs"). */
static bool
valid_id(const char *id)
{
	size_t n = 0;
	if (!id)
		return false;
	for (const char *p = id; *p; p++, n++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return false;
	return n > 0 && n <= 128;
}

static int
mkdir_failed(struct wd_err *err, const char *path)
{
	int e = errno;
	wd_err_sys(err, e, "cgroup: mkdir %s", path);
	/* Not ours to write (a user namespace's root, a read-only cgroupfs):
	 * the same answer as cgroup_host_check()'s. */
	return e == EACCES || e == EROFS ? -EPERM : -e;
}

/* mkdir <base>/warden/<id> and open it.  The dirfd takes a shared flock for
 * the cgroup's life: cgroup_sweep_stale() in another warden process takes
 * an exclusive one before removing a directory, so it never removes a live
 * sandbox's cgroup between create and attach, when it is still empty. */
static int
make_dir(struct cgroup *cg, int i, const char *base, const char *id, struct wd_err *err)
{
	wd_autofree char *path = wd_xasprintf("%s/warden/%s", base, id);
	for (int attempt = 0;; attempt++) {
		if (mkdir(path, 0755) == 0)
			break;
		/* ENOENT: first run on this host, or an administrator (or a test)
		 * removed the empty parent; retry in case that races us. */
		if (errno == ENOENT && attempt < 4) {
			wd_autofree char *parent = wd_xasprintf("%s/warden", base);
			if (mkdir(parent, 0755) == 0 || errno == EEXIST)
				continue;
			return mkdir_failed(err, parent);
		}
		return mkdir_failed(err, path);
	}
	cg->dirs[i] = wd_steal_ptr(&path);
	cg->ndirs = i + 1;
	cg->fd[i] = open(cg->dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->fd[i] < 0)
		return wd_err_sys(err, errno, "cgroup: open %s", cg->dirs[i]);
	if (flock(cg->fd[i], LOCK_SH) < 0)
		return wd_err_sys(err, errno, "cgroup: flock %s", cg->dirs[i]);
	return 0;
}

int
cgroup_create(const char *id, const struct cgroup_limits *lim, struct cgroup **out,
	      struct wd_err *err)
{
	return cgroup_create_flags(id, lim, 0, out, err);
}

int
cgroup_create_flags(const char *id, const struct cgroup_limits *lim, unsigned flags,
		    struct cgroup **out, struct wd_err *err)
{
	static const struct cgroup_limits none;
	struct cg_host *h = cg_host_get();
	if (!valid_id(id))
		return wd_err_set(err, WD_E_INVAL,
				  "cgroup: invalid sandbox id '%s' (1-128 of A-Z a-z 0-9 - _)",
				  id ? id : "(null)");
	if (h->unusable)
		return cgroup_host_check(err);
	if (!lim)
		lim = &none;

	struct cgroup *cg = wd_xcalloc(1, sizeof(*cg));
	cg->version = h->version;
	for (int i = 0; i < CG_NCTRL; i++)
		cg->fd[i] = -1;
	int rc = 0;
	for (int i = 0; i < h->nhier && rc == 0; i++) {
		if (h->hier[i].ctrls == CG_BIT(CG_CPUACCT) && (flags & CGROUP_NO_CPUACCT))
			continue;
		if (h->hier[i].ctrls == CG_BIT(CG_FREEZER) && (flags & CGROUP_NO_FREEZER))
			continue;
		cg->ctrls[cg->ndirs] = h->hier[i].ctrls;
		rc = make_dir(cg, cg->ndirs, h->hier[i].base, id, err);
	}
	if (rc == 0)
		rc = h->version == 1 ? cg_v1_apply(cg, lim, err) : cg_v2_apply(cg, lim, err);
	if (rc == 0)
		stat_open(cg);
	if (rc < 0) {
		/* Roll back what we made (only dirs we created are listed). */
		cgroup_destroy(cg);
		cgroup_free(cg);
		return rc;
	}
	*out = cg;
	return 0;
}

static int update_limits(struct cgroup *cg, const struct cgroup_limits *lim, struct wd_err *err);

int
cgroup_update_limits(struct cgroup *cg, const struct cgroup_limits *lim, struct wd_err *err)
{
	if (!cg->parked)
		return update_limits(cg, lim, err);
	/* Parked: the directories opened by path for this update and closed
	 * after it (see cgroup_park).  Updates are serialized by the caller
	 * (the sandbox's lock); statistics read concurrently go by path
	 * whatever fd[] holds (stat_read checks parked), so they never see
	 * these descriptors. */
	int rc = 0;
	for (int i = 0; i < cg->ndirs && rc == 0; i++)
		if ((cg->fd[i] = cg_open_dir(cg, i)) < 0)
			rc = wd_err_sys(err, -cg->fd[i], "cgroup: open %s", cg->dirs[i]);
	if (rc == 0)
		rc = update_limits(cg, lim, err);
	for (int i = 0; i < cg->ndirs; i++)
		wd_close_reset(&cg->fd[i]);
	return rc;
}

static int
update_limits(struct cgroup *cg, const struct cgroup_limits *lim, struct wd_err *err)
{
	int m = lim->memory_bytes ? cg_dir_of(cg, CG_MEMORY) : -1;
	if (m >= 0) {
		/* A limit below what the sandbox holds and cannot give back
		 * (its processes' anonymous memory and its tmpfs files: no swap)
		 * would have the kernel OOM-kill a command that was within its
		 * limit when it started: refused, with the figures.  Page cache
		 * above the limit is reclaimed by the kernel on the write; on v1
		 * a write it cannot meet fails with EBUSY, as docker update
		 * reports it. */
		uint64_t anon = 0, shmem = 0;
		bool v1 = cg->version == 1;
		if (cg_read_keyed(cg->fd[m], "memory.stat", v1 ? "total_rss" : "anon", &anon) ==
			0 &&
		    (cg_read_keyed(cg->fd[m], "memory.stat", v1 ? "total_shmem" : "shmem", &shmem),
		     anon + shmem > lim->memory_bytes)) {
			wd_err_set(err, WD_E_INVAL,
				   "--memory %" PRIu64
				   "M is below what the session holds now (%" PRIu64
				   "M of process memory and tmpfs files): stop what runs in it, or "
				   "choose a larger limit",
				   lim->memory_bytes >> 20, (anon + shmem + (1 << 20) - 1) >> 20);
			return -EBUSY;
		}
		/* v1 keeps memsw >= limit_in_bytes: raising, memsw goes first
		 * (cg_v1_apply writes limit_in_bytes, then memsw) */
		uint64_t old = 0;
		if (cg->version == 1 &&
		    cg_read_u64(cg->fd[m], "memory.limit_in_bytes", &old) == 0 &&
		    lim->memory_bytes > old) {
			int rc = cg_write_u64(cg->fd[m], "memory.memsw.limit_in_bytes",
					      lim->memory_bytes);
			if (rc < 0 && rc != -ENOENT)
				return wd_err_sys(err, -rc, "cgroup: write %s/%s", cg->dirs[m],
						  "memory.memsw.limit_in_bytes");
		}
	}
	return cg->version == 1 ? cg_v1_apply(cg, lim, err) : cg_v2_apply(cg, lim, err);
}

char **
cgroup_planned_dirs(const char *id, unsigned flags)
{
	struct cg_host *h = cg_host_get();
	if (!valid_id(id) || h->unusable)
		return NULL;
	char **dirs = wd_xcalloc((size_t)h->nhier + 1, sizeof(char *));
	int n = 0;
	for (int i = 0; i < h->nhier; i++) {
		if (h->hier[i].ctrls == CG_BIT(CG_CPUACCT) && (flags & CGROUP_NO_CPUACCT))
			continue;
		if (h->hier[i].ctrls == CG_BIT(CG_FREEZER) && (flags & CGROUP_NO_FREEZER))
			continue;
		dirs[n++] = wd_xasprintf("%s/warden/%s", h->hier[i].base, id);
	}
	return dirs;
}

void
cgroup_dirs_free(char **dirs)
{
	for (size_t i = 0; dirs && dirs[i]; i++)
		free(dirs[i]);
	free(dirs);
}

int
cgroup_dirfd(const struct cgroup *cg)
{
	return cg && cg->version == 2 ? cg->fd[0] : -1;
}

int
cgroup_version(const struct cgroup *cg)
{
	return cg ? cg->version : 0;
}

bool
cgroup_swap_limited(const struct cgroup *cg)
{
	return cg && cg->swap_limited;
}

int
cgroup_tasks_fds(const struct cgroup *cg, int *fds, int max)
{
	if (!cg || cg->version != 1)
		return 0;
	int n = 0;
	for (int i = 0; i < cg->ndirs && n < max; i++) {
		/* relative to the directory we hold: no walk from / per file */
		fds[n] = openat(cg->fd[i], "tasks", O_WRONLY | O_CLOEXEC);
		if (fds[n] < 0) {
			int e = errno;
			while (n > 0)
				close(fds[--n]);
			return -e;
		}
		n++;
	}
	return n;
}

int
cgroup_attach(struct cgroup *cg, pid_t pid, struct wd_err *err)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	for (int i = 0; i < cg->ndirs; i++) {
		int rc = wd_write_file_at(cg->fd[i], "cgroup.procs", buf);
		if (rc < 0)
			return wd_err_sys(err, -rc, "cgroup: attach pid %d to %s", (int)pid,
					  cg->dirs[i]);
	}
	return 0;
}

int
cgroup_kill(struct cgroup *cg)
{
	if (!cg || cg->ndirs == 0)
		return 0;
	return cg->version == 2 ? cg_v2_kill(cg) : cg_v1_kill(cg);
}

/* Send sig to every process of dfd's cgroup.procs, until a pass finds
 * none it has not signalled (a thaw: SIGCONT; a stop is stop_all's). */
static int
signal_all(int dfd, int sig)
{
	pid_t *done = NULL;
	int ndone = 0, rc = 0;
	for (int pass = 0; pass < 64; pass++) {
		pid_t *pids = NULL;
		int n = read_procs(dfd, &pids), fresh = 0;
		if (n < 0) {
			rc = n;
			break;
		}
		for (int i = 0; i < n; i++) {
			bool seen = false;
			for (int k = 0; k < ndone && !seen; k++)
				seen = done[k] == pids[i];
			if (seen)
				continue;
			kill(pids[i], sig);
			done = wd_xrealloc(done, (size_t)(ndone + 1) * sizeof(*done));
			done[ndone++] = pids[i];
			fresh++;
		}
		free(pids);
		if (!fresh)
			break;
	}
	free(done);
	return rc;
}

/* Whether a task of pid is neither stopped nor gone (a process stops
 * as a whole, but each of its threads goes to T on its own). */
static bool
not_stopped(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return false; /* gone */
	bool running = false;
	struct dirent *e;
	while (!running && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char sp[96], buf[512];
		snprintf(sp, sizeof(sp), "%s/%s/stat", path, e->d_name);
		if (wd_read_file_at(AT_FDCWD, sp, buf, sizeof(buf)) <= 0)
			continue;
		const char *p = strrchr(buf, ')');
		char st = p && p[1] == ' ' ? p[2] : 'T';
		running = st != 'T' && st != 't' && st != 'Z' && st != 'X';
	}
	closedir(d);
	return running;
}

/* Stop every process of dfd's cgroup by SIGSTOP.  Why not one SIGSTOP
 * each: SIGCONT undoes it, and any process of the sandbox may send it to
 * another (same uid, same pid namespace), so the last ones signalled of
 * a pass continued the first (four processes continuing each other all
 * ran on through a "frozen" review, unit-cgroup).  So each pass stops
 * every process with a task not stopped, and the freeze holds only after
 * two passes in a row that found every task of every process stopped (a
 * stopped process sends nothing).  A sandbox that keeps continuing
 * itself past the bound is thawed and the freeze fails: the review is
 * then not said to be held (fail closed), never claimed. */
#define STOP_TIMEOUT_NS (2 * 1000000000ULL)

static int
stop_all(int dfd)
{
	uint64_t deadline = wd_now_ns() + STOP_TIMEOUT_NS;
	for (int clean = 0; clean < 2;) {
		pid_t *pids = NULL;
		int n = read_procs(dfd, &pids), sent = 0;
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++)
			if (not_stopped(pids[i])) {
				kill(pids[i], SIGSTOP);
				sent++;
			}
		free(pids);
		clean = sent ? 0 : clean + 1;
		if (clean < 2 && wd_now_ns() > deadline) {
			signal_all(dfd, SIGCONT);
			return -EAGAIN;
		}
		if (sent)
			sleep_ns(200000); /* for the stops to land */
	}
	return 0;
}

int
cgroup_freeze(struct cgroup *cg, bool on, int *how)
{
	if (!cg || cg->ndirs == 0)
		return -ENOENT;
	if (on || *how == 1) {
		int rc = cg->version == 2 ? cg_v2_freeze(cg, on) : cg_v1_freeze(cg, on);
		if (rc != -ENOTSUP) {
			if (rc == 0)
				*how = on ? 1 : 0;
			return rc;
		}
	}
	/* no freezer here: stopped by signal (a process may catch SIGCONT,
	 * never SIGSTOP) */
	wd_autoclose int dfd = cg_open_dir(cg, 0);
	if (dfd < 0)
		return dfd;
	int rc = on ? stop_all(dfd) : signal_all(dfd, SIGCONT);
	if (rc == 0)
		*how = on ? 2 : 0;
	return rc;
}

int
cgroup_stats(struct cgroup *cg, struct cgroup_stats *out)
{
	*out = (struct cgroup_stats){0};
	if (!cg || cg->ndirs == 0)
		return -ENOENT;
	if (cg->version == 2)
		cg_v2_stats(cg, out);
	else
		cg_v1_stats(cg, out);
	return 0;
}

/* rmdir fails with EBUSY while the cgroup has tasks.  Right after a kill the
 * tasks are still exiting (and since 6.18 a task stays linked to its cgroup
 * until its final context switch), so retry with a short backoff.  If tasks
 * are still there after a moment they are alive: nothing may outlive its
 * sandbox, so kill them once and keep waiting. */
static int
rmdir_retry(struct cgroup *cg, const char *path)
{
	uint64_t start = wd_now_ns();
	uint64_t pause = 100000; /* 0.1 ms, doubling to 10 ms */
	bool killed = false;
	for (int attempt = 0;; attempt++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		uint64_t spent = wd_now_ns() - start;
		if (spent > DESTROY_TIMEOUT_NS)
			return -EBUSY;
		if (!killed && spent > 20000000) {
			killed = true;
			cgroup_kill(cg);
		}
		/* Exiting tasks are usually gone within tens of microseconds;
		 * a short sleep costs ~80 us on a VM, so yield first. */
		if (attempt < 32) {
			sched_yield();
			continue;
		}
		sleep_ns(pause);
		if (pause < 10000000)
			pause *= 2;
	}
}

int
cgroup_destroy(struct cgroup *cg)
{
	int rc = 0;
	if (!cg)
		return 0;
	for (int i = cg->ndirs - 1; i >= 0; i--) {
		if (!cg->dirs[i])
			continue;
		int r = rmdir_retry(cg, cg->dirs[i]);
		if (r < 0) {
			wd_log(WD_LOG_WARN, "cgroup: rmdir %s: %s", cg->dirs[i], strerror(-r));
			if (rc == 0)
				rc = r;
		}
	}
	return rc;
}

/* Safe to reach the cgroup by path from here on: dirs[] are absolute
 * paths in the host's cgroup hierarchies, <base>/warden/<id>, whose
 * directories only root (or, delegated, the user warden runs as) may
 * rename or remove, and no sandbox can: its processes see no host cgroupfs
 * (a new mount namespace over a new root; mount(2) and the new mount API
 * refused by seccomp; and a cgroup namespace rooted at the sandbox's own
 * directory, whose parent, where a rename or rmdir would be decided, is
 * outside its view), and their user namespace grants nothing over the
 * host's directories (owned by the host's root).  Nothing can take the path
 * over either: ids are random and never reused, and the flock dropped
 * here guarded only the window before pid 1 joined (cgroup_sweep_stale's
 * rmdir fails with EBUSY on a directory with a task in it).  If pid 1
 * dies and another warden's sweep removes the empty directory, a read by
 * path fails (the statistics read as missing) rather than reaching
 * anything else. */
void
cgroup_park(struct cgroup *cg)
{
	if (!cg || cg->parked)
		return;
	for (int k = 0; k < cg->nstat; k++)
		wd_close_reset(&cg->stat[k].fd);
	cg->nstat = 0;
	for (int i = 0; i < CG_NCTRL; i++)
		wd_close_reset(&cg->fd[i]);
	cg->parked = true;
}

void
cgroup_free(struct cgroup *cg)
{
	if (!cg)
		return;
	for (int i = 0; i < CG_NCTRL; i++) {
		wd_close_reset(&cg->fd[i]);
		free(cg->dirs[i]);
	}
	for (int k = 0; k < cg->nstat; k++)
		wd_close_reset(&cg->stat[k].fd);
	free(cg);
}

const char *const *
cgroup_dirs(const struct cgroup *cg)
{
	return (const char *const *)cg->dirs;
}

/* An entry of <base>/warden is stale when it is older than the grace period
 * and nobody holds its flock (make_dir); rmdir itself refuses one that
 * still has tasks, so a sandbox whose warden died keeps its cgroup until
 * its processes are gone. */
static void
sweep_dir(const char *parent)
{
	DIR *d = opendir(parent);
	if (!d)
		return;
	int pfd = dirfd(d);
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		wd_autoclose int fd = openat(pfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || now - st.st_mtime < SWEEP_GRACE_S)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue; /* a live warden's cgroup */
		if (unlinkat(pfd, de->d_name, AT_REMOVEDIR) == 0)
			wd_log(WD_LOG_DEBUG, "cgroup: removed stale %s/%s", parent, de->d_name);
	}
	closedir(d);
}

void
cgroup_sweep_stale(void)
{
	struct cg_host *h = cg_host_get();
	if (h->unusable)
		return;
	for (int i = 0; i < h->nhier; i++) {
		wd_autofree char *parent = wd_xasprintf("%s/warden", h->hier[i].base);
		sweep_dir(parent);
	}
}

int
cgroup_remove_id(const char *id)
{
	struct cg_host *h = cg_host_get();
	if (h->unusable || !id[0] || strchr(id, '/') || id[0] == '.')
		return 0;
	int rc = 0;
	for (int i = 0; i < h->nhier; i++) {
		wd_autofree char *dir = wd_xasprintf("%s/warden/%s", h->hier[i].base, id);
		uint64_t deadline = wd_now_ns() + 10000000000ULL;
		for (;;) {
			if (rmdir(dir) == 0 || errno == ENOENT)
				break;
			if (errno != EBUSY || wd_now_ns() > deadline) {
				rc = -EBUSY;
				break;
			}
			/* still has tasks: kill them, let them exit, retry */
			wd_autofree char *procs = wd_xasprintf("%s/cgroup.procs", dir);
			FILE *f = fopen(procs, "re");
			if (f) {
				int pid;
				while (fscanf(f, "%d", &pid) == 1)
					kill(pid, SIGKILL);
				fclose(f);
			}
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	return rc;
}
