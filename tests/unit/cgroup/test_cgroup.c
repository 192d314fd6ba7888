/* cgroup module tests against the real kernel: they create cgroups, run
 * processes in them, OOM-kill, fork-bomb and kill.  Run as root (CI does);
 * otherwise, or on a host without a usable hierarchy, they skip.
 *
 * Suite `cgroup` runs on whatever the host has (v1 on a hybrid host, v2 on
 * a unified one).  Suite `cgroup_v2` forces the v2 code paths onto a cgroup2
 * mount; on a hybrid host that is /sys/fs/cgroup/unified, which has no
 * controllers, so it checks create, attach, clone-into, cgroup.kill and
 * destroy, and that a limit needing a missing controller is refused.
 *
 * Every cgroup and process a test makes is recorded and removed in the
 * suite's fini, which Criterion runs even when an assertion aborts the test. */
#include "cgroup/cgroup.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#define MiB (1024ULL * 1024ULL)

/* ---- per-test state, cleaned up by fini ---- */

static struct cgroup *cg;
static pid_t kids[8];
static int nkids;
static char *extra_dirs[8]; /* directories made by hand (sweep test) */
static int nextra;
static char forced_parent[4096]; /* v2 suite: <forced root>/warden */
/* delegation test: the cgroup2 root, our fake delegated base, whether we
 * enabled hugetlb at the root (and must take it back), the lock fd */
static char deleg_root[4096], deleg_base[4096], deleg_home[4096];
static bool deleg_restore;
static int deleg_lock = -1;

static int
write_at(const char *dir, const char *file, const char *s)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return wd_write_file_at(AT_FDCWD, path, s);
}

static void
deleg_cleanup(void)
{
	char pid[24], sub[8192];
	if (deleg_base[0]) {
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		/* move ourselves back where we were */
		if (write_at(deleg_home, "cgroup.procs", pid) < 0)
			write_at(deleg_root, "cgroup.procs", pid);
		snprintf(sub, sizeof(sub), "%s/warden", deleg_base);
		write_at(sub, "cgroup.subtree_control", "-hugetlb");
		rmdir(sub);
		write_at(deleg_base, "cgroup.subtree_control", "-hugetlb");
		snprintf(sub, sizeof(sub), "%s/warden-supervisor", deleg_base);
		rmdir(sub);
		rmdir(deleg_base);
		deleg_base[0] = '\0';
	}
	if (deleg_restore)
		write_at(deleg_root, "cgroup.subtree_control", "-hugetlb");
	deleg_restore = false;
	wd_close_reset(&deleg_lock);
}

static void
track(pid_t pid)
{
	if (nkids < (int)WD_ARRAY_SIZE(kids))
		kids[nkids++] = pid;
}

static void
setup(void)
{
	/* Orphaned grandchildren come back to us, so fini can reap them. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static void
reap_all(void)
{
	for (int i = 0; i < 200; i++) {
		pid_t p = waitpid(-1, NULL, WNOHANG);
		if (p < 0 && errno == ECHILD)
			return;
		if (p == 0)
			usleep(5000);
	}
}

static void
teardown(void)
{
	for (int i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	if (cg) {
		cgroup_kill(cg);
		cgroup_destroy(cg);
		cgroup_free(cg);
		cg = NULL;
	}
	for (int i = 0; i < nextra; i++) {
		rmdir(extra_dirs[i]);
		free(extra_dirs[i]);
	}
	nextra = 0;
	reap_all();
	nkids = 0;
	deleg_cleanup();
	/* The v2 suite's parent on a hierarchy warden does not otherwise use;
	 * best effort (another test process may be using it right now). */
	if (forced_parent[0])
		rmdir(forced_parent);
}

static void
need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (cgroup creation)");
	struct wd_err err = {0};
	if (cgroup_host_version() == 0 || cgroup_host_check(&err) < 0)
		cr_skip_test("no usable cgroup hierarchy: %s", err.msg);
}

static const char *
test_id(const char *name)
{
	static char id[96];
	snprintf(id, sizeof(id), "test-%s-%d", name, (int)getpid());
	return id;
}

/* Read file from the first of cg's directories that has it. */
static bool
read_cg(const char *file, char *buf, size_t cap)
{
	for (const char *const *d = cgroup_dirs(cg); *d; d++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", *d, file);
		if (wd_read_file_at(AT_FDCWD, path, buf, cap) >= 0) {
			buf[strcspn(buf, "\n")] = '\0';
			return true;
		}
	}
	return false;
}

/* Does every directory's cgroup.procs list pid? */
static bool
in_all_procs(pid_t pid)
{
	for (const char *const *d = cgroup_dirs(cg); *d; d++) {
		char path[4096], buf[8192], needle[32];
		snprintf(path, sizeof(path), "%s/cgroup.procs", *d);
		snprintf(needle, sizeof(needle), "\n%d\n", (int)pid);
		buf[0] = '\n';
		if (wd_read_file_at(AT_FDCWD, path, buf + 1, sizeof(buf) - 1) < 0)
			return false;
		if (!strstr(buf, needle))
			return false;
	}
	return true;
}

/* Number of processes in the first directory. */
static int
count_procs(void)
{
	char path[4096], buf[16384];
	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup_dirs(cg)[0]);
	if (wd_read_file_at(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -1;
	int n = 0;
	for (char *p = buf; *p; p++)
		n += *p == '\n';
	return n;
}

static bool
wait_empty(int ms)
{
	for (int i = 0; i < ms; i++) {
		if (count_procs() == 0)
			return true;
		usleep(1000);
	}
	return false;
}

/* A child that waits for a byte on a pipe, then runs fn (or just exits).
 * The parent attaches it to cg in between, so fn runs inside. */
struct gate {
	pid_t pid;
	int go; /* write end */
};

static struct gate
spawn(void (*fn)(void))
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c;
		close(p[1]);
		ssize_t n = read(p[0], &c, 1);
		if (n == 1 && fn)
			fn();
		_exit(0);
	}
	close(p[0]);
	track(pid);
	return (struct gate){pid, p[1]};
}

static void
release(struct gate *g)
{
	cr_assert_eq(write(g->go, "x", 1), 1);
	close(g->go);
}

static int
wait_status(pid_t pid)
{
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

/* ---- child bodies ---- */

static void
touch_memory(size_t bytes)
{
	char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		_exit(2);
	for (size_t off = 0; off < bytes; off += 4096)
		m[off] = (char)off | 1;
}

static void
hog(void)
{
	touch_memory(512 * MiB); /* far past the 32M limit */
	_exit(3);		 /* survived: no limit */
}

static void
eat_8m(void)
{
	touch_memory(8 * MiB);
	for (volatile unsigned i = 0; i < 20000000; i++)
		; /* some cpu time */
}

static void
fork_until_refused(void)
{
	for (int i = 0; i < 1000; i++) {
		pid_t p = fork();
		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p < 0)
			_exit(errno == EAGAIN ? 0 : 4);
	}
	_exit(5); /* never refused */
}

/* A tree that keeps forking, with churn (parents exiting, pids turning
 * over) and SIGTERM ignored: the case a plain kill loop races. */
static void
churn(void)
{
	for (unsigned n = 0;; n++) {
		pid_t p = fork();
		if (p < 0)
			usleep(200);
		else if (p > 0 && (n & 1))
			_exit(0);
	}
}

static void
forking_tree(void)
{
	signal(SIGTERM, SIG_IGN);
	signal(SIGCHLD, SIG_IGN); /* no zombies holding pids */
	for (;;) {
		if (fork() == 0)
			churn();
		usleep(1000);
	}
}

/* ---- suite cgroup: the host's own version ---- */

TestSuite(cgroup, .init = setup, .fini = teardown, .timeout = 60);

Test(cgroup, host_version_matches_mounts)
{
	int v = cgroup_host_version();
	cr_assert(v >= 0 && v <= 2);
	char buf[65536];
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/self/mountinfo", buf, sizeof(buf));
	cr_assert_gt(n, 0);
	bool v1mem = false, v2 = false;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *sep = strstr(line, " - ");
		if (!sep)
			continue;
		if (strncmp(sep + 3, "cgroup2 ", 8) == 0)
			v2 = true;
		else if (strncmp(sep + 3, "cgroup ", 7) == 0 && strstr(sep, ",memory"))
			v1mem = true;
	}
	if (v1mem)
		cr_expect_eq(v, 1, "v1 memory is mounted: expected 1, got %d", v);
	else if (v2)
		cr_expect_eq(v, 2, "only cgroup2: expected 2, got %d", v);
	else
		cr_expect_eq(v, 0);
}

Test(cgroup, rejects_bad_ids)
{
	const char *bad[] = {"", "..", "a/b", "a.b", "../../x", "with space"};
	struct cgroup_limits lim = {0};
	for (size_t i = 0; i < WD_ARRAY_SIZE(bad); i++) {
		struct wd_err err = {0};
		struct cgroup *c = NULL;
		cr_expect_eq(cgroup_create(bad[i], &lim, &c, &err), -EINVAL, "id '%s'", bad[i]);
		cr_expect_null(c);
	}
	struct wd_err err = {0};
	cr_expect_eq(cgroup_create(NULL, &lim, &cg, &err), -EINVAL);
}

Test(cgroup, create_applies_limits)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {64 * MiB, 50, 500000};
	cr_assert_eq(cgroup_create(test_id("limits"), &lim, &cg, &err), 0, "%s", err.msg);
	cr_assert_eq(cgroup_version(cg), cgroup_host_version());
	char buf[256];
	if (cgroup_version(cg) == 1) {
		cr_assert_eq(cgroup_dirfd(cg), -1);
		cr_assert(read_cg("memory.limit_in_bytes", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "67108864");
		if (read_cg("memory.memsw.limit_in_bytes", buf, sizeof(buf))) {
			cr_expect_str_eq(buf, "67108864");
			cr_expect(cgroup_swap_limited(cg));
		} else {
			cr_assert(read_cg("memory.swappiness", buf, sizeof(buf)));
			cr_expect_str_eq(buf, "0");
		}
		cr_assert(read_cg("memory.oom_control", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "oom_kill_disable 0");
		cr_assert(read_cg("pids.max", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "50");
		cr_assert(read_cg("cpu.cfs_period_us", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "100000");
		cr_assert(read_cg("cpu.cfs_quota_us", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "50000");
	} else {
		cr_assert_geq(cgroup_dirfd(cg), 0);
		cr_assert(read_cg("memory.max", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "67108864");
		if (read_cg("memory.swap.max", buf, sizeof(buf)))
			cr_expect_str_eq(buf, "0");
		cr_assert(read_cg("memory.oom.group", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "1");
		cr_assert(read_cg("pids.max", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "50");
		cr_assert(read_cg("cpu.max", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "50000 100000");
	}
	/* Every directory is <base>/warden/<id>. */
	for (const char *const *d = cgroup_dirs(cg); *d; d++) {
		char want[256];
		snprintf(want, sizeof(want), "/warden/%s", test_id("limits"));
		cr_expect(strstr(*d, want) && strcmp(strstr(*d, want), want) == 0, "%s", *d);
	}
}

Test(cgroup, tiny_cpu_quota_is_clamped_to_kernel_minimum)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {0, 0, 1000}; /* 0.001 CPU: 100 us < 1 ms minimum */
	cr_assert_eq(cgroup_create(test_id("tinycpu"), &lim, &cg, &err), 0, "%s", err.msg);
	char buf[64];
	if (cgroup_version(cg) == 1) {
		cr_assert(read_cg("cpu.cfs_quota_us", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "1000");
	} else {
		cr_assert(read_cg("cpu.max", buf, sizeof(buf)));
		cr_expect_str_eq(buf, "1000 100000");
	}
}

Test(cgroup, duplicate_id_is_eexist_and_leaves_original)
{
	need_root();
	struct wd_err err = {0};
	cr_assert_eq(cgroup_create(test_id("dup"), NULL, &cg, &err), 0, "%s", err.msg);
	struct cgroup *second = NULL;
	cr_expect_eq(cgroup_create(test_id("dup"), NULL, &second, &err), -EEXIST);
	cr_expect_null(second);
	struct stat st;
	for (const char *const *d = cgroup_dirs(cg); *d; d++)
		cr_expect_eq(stat(*d, &st), 0, "%s removed by the failed create", *d);
}

Test(cgroup, attach_puts_child_in_every_hierarchy)
{
	need_root();
	struct wd_err err = {0};
	cr_assert_eq(cgroup_create(test_id("attach"), NULL, &cg, &err), 0, "%s", err.msg);
	struct gate g = spawn(NULL);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	cr_expect(in_all_procs(g.pid));
	/* and the kernel agrees from the process's side */
	char path[64], buf[4096], want[128];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)g.pid);
	cr_assert_gt(wd_read_file_at(AT_FDCWD, path, buf, sizeof(buf)), 0);
	snprintf(want, sizeof(want), "/warden/%s\n", test_id("attach"));
	cr_expect(strstr(buf, want), "%s", buf);
	release(&g);
	int st = wait_status(g.pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	nkids = 0;
	cr_expect_eq(cgroup_destroy(cg), 0);
}

Test(cgroup, attach_of_missing_pid_fails_with_message)
{
	need_root();
	struct wd_err err = {0};
	cr_assert_eq(cgroup_create(test_id("nopid"), NULL, &cg, &err), 0, "%s", err.msg);
	cr_expect_eq(cgroup_attach(cg, 0x3ffffff, &err), -ESRCH);
	cr_expect(strstr(err.msg, "attach pid"), "%s", err.msg);
}

Test(cgroup, memory_hog_is_oom_killed_and_reported)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {32 * MiB, 64, 0};
	cr_assert_eq(cgroup_create(test_id("oom"), &lim, &cg, &err), 0, "%s", err.msg);
	struct gate g = spawn(hog);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	release(&g);
	int st = wait_status(g.pid);
	nkids = 0;
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	struct cgroup_stats s;
	cr_assert_eq(cgroup_stats(cg, &s), 0);
	cr_expect(s.oom_killed);
	cr_expect_gt(s.memory_peak, 16 * MiB, "peak %llu", (unsigned long long)s.memory_peak);
	cr_expect_leq(s.memory_peak, 40 * MiB, "peak %llu", (unsigned long long)s.memory_peak);
	cr_expect_eq(cgroup_destroy(cg), 0);
}

Test(cgroup, stats_report_peak_memory_and_cpu)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {256 * MiB, 64, 0};
	cr_assert_eq(cgroup_create(test_id("stats"), &lim, &cg, &err), 0, "%s", err.msg);
	struct gate g = spawn(eat_8m);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	release(&g);
	int st = wait_status(g.pid);
	nkids = 0;
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	struct cgroup_stats s;
	cr_assert_eq(cgroup_stats(cg, &s), 0);
	cr_expect_geq(s.memory_peak, 8 * MiB, "peak %llu", (unsigned long long)s.memory_peak);
	cr_expect_gt(s.cpu_ns, 0);
	cr_expect(!s.oom_killed);
	cr_expect_eq(s.pids_peak_hit, 0);
}

/* v1 with cpuacct apart from cpu: CGROUP_NO_CPUACCT skips that hierarchy. */
Test(cgroup, no_cpuacct_flag_skips_separate_hierarchy)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {0};
	cr_assert_eq(cgroup_create_flags(test_id("acct"), &lim, CGROUP_NO_CPUACCT, &cg, &err), 0,
		     "%s", err.msg);
	int without = 0;
	for (const char *const *d = cgroup_dirs(cg); *d; d++)
		without++;
	char buf[64];
	bool acct_without = read_cg("cpuacct.usage", buf, sizeof(buf));
	cr_assert_eq(cgroup_destroy(cg), 0);
	cgroup_free(cg);
	cg = NULL;
	cr_assert_eq(cgroup_create(test_id("acct"), &lim, &cg, &err), 0, "%s", err.msg);
	int with = 0;
	for (const char *const *d = cgroup_dirs(cg); *d; d++)
		with++;
	if (cgroup_version(cg) == 2) {
		cr_expect_eq(with, 1);
		cr_expect_eq(without, 1);
		return;
	}
	cr_expect(read_cg("cpuacct.usage", buf, sizeof(buf)), "cpuacct missing by default");
	if (acct_without)
		cr_expect_eq(with, without, "co-mounted cpu,cpuacct: same directories");
	else
		cr_expect_eq(with, without + 1,
			     "separate cpuacct: one directory fewer with the flag");
}

/* Without the freezer (CGROUP_NO_FREEZER), kill still wins against a
 * forking tree: passes, bounded by the pids limit. */
Test(cgroup, kill_without_freezer_stops_a_forking_tree)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {128 * MiB, 64, 0};
	cr_assert_eq(cgroup_create_flags(test_id("nofz"), &lim, CGROUP_NO_FREEZER, &cg, &err), 0,
		     "%s", err.msg);
	char buf[64];
	cr_expect(!read_cg("freezer.state", buf, sizeof(buf)) || cgroup_version(cg) == 2,
		  "freezer hierarchy used despite CGROUP_NO_FREEZER");
	struct gate g = spawn(forking_tree);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	release(&g);
	usleep(200000);
	cr_expect_gt(count_procs(), 2, "the tree should be growing");
	cr_expect_eq(cgroup_kill(cg), 0);
	int st = wait_status(g.pid);
	nkids = 0;
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	cr_expect(wait_empty(2000), "%d processes survived", count_procs());
	cr_expect_eq(cgroup_destroy(cg), 0);
}

Test(cgroup, fork_loop_hits_pids_limit)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {0, 16, 0};
	cr_assert_eq(cgroup_create(test_id("pids"), &lim, &cg, &err), 0, "%s", err.msg);
	struct gate g = spawn(fork_until_refused);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	release(&g);
	int st = wait_status(g.pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "fork should fail with EAGAIN inside (status %#x)", st);
	struct cgroup_stats s;
	cr_assert_eq(cgroup_stats(cg, &s), 0);
	cr_expect_gt(s.pids_peak_hit, 0);
	/* the paused grandchildren: 15 of them, all killed */
	cr_expect_eq(count_procs(), 15);
	cr_expect_eq(cgroup_kill(cg), 0);
	cr_expect(wait_empty(2000));
	cr_expect_eq(cgroup_destroy(cg), 0);
}

Test(cgroup, kill_stops_a_forking_tree)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {128 * MiB, 64, 0};
	cr_assert_eq(cgroup_create(test_id("tree"), &lim, &cg, &err), 0, "%s", err.msg);
	struct gate g = spawn(forking_tree);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	release(&g);
	usleep(200000);
	cr_expect_gt(count_procs(), 2, "the tree should be growing");
	cr_expect_eq(cgroup_kill(cg), 0);
	int st = wait_status(g.pid);
	nkids = 0;
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	cr_expect(wait_empty(2000), "%d processes survived", count_procs());
	cr_expect_eq(cgroup_destroy(cg), 0);
}

Test(cgroup, destroy_leaves_no_directory)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {64 * MiB, 32, 1000000};
	cr_assert_eq(cgroup_create(test_id("destroy"), &lim, &cg, &err), 0, "%s", err.msg);
	char paths[8][4096];
	int n = 0;
	for (const char *const *d = cgroup_dirs(cg); *d && n < 8; d++)
		snprintf(paths[n++], sizeof(paths[0]), "%s", *d);
	cr_assert_gt(n, 0);
	/* a live process too: destroy must kill it and still remove the dirs */
	struct gate g = spawn(NULL);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	cr_expect_eq(cgroup_destroy(cg), 0);
	int st = wait_status(g.pid);
	nkids = 0;
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	close(g.go);
	struct stat sb;
	for (int i = 0; i < n; i++)
		cr_expect(stat(paths[i], &sb) < 0 && errno == ENOENT, "%s still exists", paths[i]);
	cr_expect_eq(cgroup_destroy(cg), 0, "destroy is idempotent");
}

Test(cgroup, sweep_removes_only_stale_dirs)
{
	need_root();
	struct wd_err err = {0};
	cr_assert_eq(cgroup_create(test_id("live"), NULL, &cg, &err), 0, "%s", err.msg);
	const char *base = cgroup_host_base(0);
	cr_assert_not_null(base);
	char stale[4096], fresh[4096];
	snprintf(stale, sizeof(stale), "%s/warden/%s", base, test_id("stale"));
	snprintf(fresh, sizeof(fresh), "%s/warden/%s", base, test_id("fresh"));
	cr_assert_eq(mkdir(stale, 0755), 0);
	extra_dirs[nextra++] = wd_xstrdup(stale);
	cr_assert_eq(mkdir(fresh, 0755), 0);
	extra_dirs[nextra++] = wd_xstrdup(fresh);
	/* age the stale one and the live one: only the lock protects the latter */
	struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
	cr_assert_eq(utimensat(AT_FDCWD, stale, old, 0), 0);
	for (const char *const *d = cgroup_dirs(cg); *d; d++)
		cr_assert_eq(utimensat(AT_FDCWD, *d, old, 0), 0);
	cgroup_sweep_stale();
	struct stat sb;
	cr_expect(stat(stale, &sb) < 0 && errno == ENOENT, "stale dir not swept");
	cr_expect_eq(stat(fresh, &sb), 0, "dir inside the grace period swept");
	for (const char *const *d = cgroup_dirs(cg); *d; d++)
		cr_expect_eq(stat(*d, &sb), 0, "live cgroup %s swept", *d);
}

/* As nobody, with no delegated subtree: a clear error, EPERM or ENOTSUP,
 * nothing created.  In a child, before anything cached discovery. */
Test(cgroup, non_root_fails_clearly)
{
	/* not need_root(): that would run discovery as root in this process */
	if (geteuid() != 0)
		cr_skip_test("needs root to become nobody");
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(10);
		struct wd_err err = {0};
		struct cgroup *c = NULL;
		int rc = cgroup_create("test-nobody", NULL, &c, &err);
		if (rc == 0) {
			cgroup_destroy(c);
			_exit(11);
		}
		if (rc != -EPERM && rc != -ENOTSUP)
			_exit(12);
		if (!strstr(err.msg, "cgroup"))
			_exit(13);
		if (cgroup_host_check(&err) != rc)
			_exit(14);
		_exit(0);
	}
	int st = wait_status(pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* ---- suite cgroup_v2: v2 code paths on a cgroup2 mount ---- */

/* A cgroup2 mount point, preferring one without controllers in use. */
static bool
find_cgroup2(char *out, size_t cap)
{
	char buf[65536];
	if (wd_read_file_at(AT_FDCWD, "/proc/self/mountinfo", buf, sizeof(buf)) <= 0)
		return false;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		char point[4096];
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
			continue;
		snprintf(out, cap, "%s", point);
		return true;
	}
	return false;
}

static void
need_v2(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (cgroup creation)");
	char root[4096];
	if (!find_cgroup2(root, sizeof(root)))
		cr_skip_test("no cgroup2 mount");
	int rc = cgroup_test_force_v2_root(root);
	cr_assert_eq(rc, 0, "force v2 root %s: %s", root, strerror(-rc));
	snprintf(forced_parent, sizeof(forced_parent), "%s/warden", root);
}

static bool
v2_has(const char *ctrl)
{
	char path[4096], buf[512];
	snprintf(path, sizeof(path), "%s/cgroup.controllers", cgroup_host_base(0));
	if (wd_read_file_at(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return false;
	for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n"))
		if (strcmp(t, ctrl) == 0)
			return true;
	return false;
}

TestSuite(cgroup_v2, .init = setup, .fini = teardown, .timeout = 60);

Test(cgroup_v2, create_attach_kill_destroy)
{
	need_v2();
	struct wd_err err = {0};
	cr_assert_eq(cgroup_create(test_id("v2basic"), NULL, &cg, &err), 0, "%s", err.msg);
	cr_assert_eq(cgroup_version(cg), 2);
	cr_assert_geq(cgroup_dirfd(cg), 0);
	cr_assert_not_null(cgroup_dirs(cg)[0]);
	cr_assert_null(cgroup_dirs(cg)[1]);
	struct gate g = spawn(NULL);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	cr_expect(in_all_procs(g.pid));
	cr_expect_eq(cgroup_kill(cg), 0);
	int st = wait_status(g.pid);
	nkids = 0;
	close(g.go);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	struct cgroup_stats s;
	cr_expect_eq(cgroup_stats(cg, &s), 0);
	char path[4096];
	snprintf(path, sizeof(path), "%s", cgroup_dirs(cg)[0]);
	cr_expect_eq(cgroup_destroy(cg), 0);
	struct stat sb;
	cr_expect(stat(path, &sb) < 0 && errno == ENOENT);
}

Test(cgroup_v2, clone_into_cgroup)
{
	need_v2();
	struct wd_err err = {0};
	cr_assert_eq(cgroup_create(test_id("v2clone"), NULL, &cg, &err), 0, "%s", err.msg);
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	struct clone_args args = {
	    .flags = CLONE_INTO_CGROUP,
	    .exit_signal = SIGCHLD,
	    .cgroup = (uint64_t)cgroup_dirfd(cg),
	};
	long pid = syscall(SYS_clone3, &args, sizeof(args));
	cr_assert_geq(pid, 0, "clone3: %s", strerror(errno));
	if (pid == 0) {
		char c;
		close(p[1]);
		ssize_t n = read(p[0], &c, 1);
		_exit(n == 1 ? 0 : 1);
	}
	close(p[0]);
	track((pid_t)pid);
	cr_expect(in_all_procs((pid_t)pid), "the child was born in the cgroup");
	cr_expect_eq(cgroup_kill(cg), 0);
	int st = wait_status((pid_t)pid);
	nkids = 0;
	close(p[1]);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	cr_expect_eq(cgroup_destroy(cg), 0);
}

Test(cgroup_v2, kill_stops_a_forking_tree)
{
	need_v2();
	struct wd_err err = {0};
	struct cgroup_limits lim = {0};
	if (v2_has("pids"))
		lim.pids = 64;
	cr_assert_eq(cgroup_create(test_id("v2tree"), &lim, &cg, &err), 0, "%s", err.msg);
	struct gate g = spawn(forking_tree);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	release(&g);
	usleep(100000);
	cr_expect_gt(count_procs(), 2, "the tree should be growing");
	cr_expect_eq(cgroup_kill(cg), 0);
	int st = wait_status(g.pid);
	nkids = 0;
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	cr_expect(wait_empty(2000), "%d processes survived", count_procs());
	cr_expect_eq(cgroup_destroy(cg), 0);
}

Test(cgroup_v2, limit_without_controller_is_refused)
{
	need_v2();
	if (v2_has("memory"))
		cr_skip_test("this cgroup2 hierarchy has the memory controller");
	struct wd_err err = {0};
	struct cgroup_limits lim = {64 * MiB, 0, 0};
	cr_expect_eq(cgroup_create(test_id("v2nomem"), &lim, &cg, &err), -ENOTSUP);
	cr_expect_null(cg);
	cr_expect_eq(err.code, WD_E_UNSUPPORTED);
	cr_expect(strstr(err.msg, "memory controller"), "%s", err.msg);
	char path[4096];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/warden/%s", cgroup_host_base(0), test_id("v2nomem"));
	cr_expect(stat(path, &sb) < 0 && errno == ENOENT, "%s left behind", path);
}

static bool
list_has_word(const char *dir, const char *file, const char *word)
{
	char path[8192], buf[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (wd_read_file_at(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return false;
	for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n"))
		if (strcmp(t, word) == 0)
			return true;
	return false;
}

/* The delegated-subtree path: warden's own cgroup is the base and holds
 * warden's process, so enabling a controller there hits the no-internal-
 * process rule (EBUSY); warden moves itself into <base>/warden-supervisor
 * and enables it in <base> and <base>/warden, and the sandbox gets it.
 * Run with hugetlb, the one controller a hybrid host's v2 hierarchy has. */
Test(cgroup_v2, delegated_base_holding_warden_moves_it_aside)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (cgroup creation)");
	if (!find_cgroup2(deleg_root, sizeof(deleg_root)))
		cr_skip_test("no cgroup2 mount");
	if (!list_has_word(deleg_root, "cgroup.controllers", "hugetlb"))
		cr_skip_test("no hugetlb controller in %s", deleg_root);
	/* Serialise with a concurrent run of this test (the ASan build):
	 * both touch the root's subtree_control. */
	deleg_lock = open(deleg_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(deleg_lock, 0);
	cr_assert_eq(flock(deleg_lock, LOCK_EX), 0);
	if (!list_has_word(deleg_root, "cgroup.subtree_control", "hugetlb")) {
		cr_assert_eq(write_at(deleg_root, "cgroup.subtree_control", "+hugetlb"), 0);
		deleg_restore = true;
	}
	/* where we are now, to come back to (assumes the mount shows the
	 * hierarchy from its root, as on a host or in a cgroup namespace) */
	char self0[4096];
	cr_assert_gt(wd_read_file_at(AT_FDCWD, "/proc/self/cgroup", self0, sizeof(self0)), 0);
	char *v2line = strstr(self0, "0::");
	cr_assert_not_null(v2line);
	v2line[strcspn(v2line, "\n")] = '\0';
	snprintf(deleg_home, sizeof(deleg_home), "%s%s", deleg_root, v2line + 3);
	snprintf(deleg_base, sizeof(deleg_base), "%s/%s", deleg_root, test_id("deleg"));
	cr_assert_eq(mkdir(deleg_base, 0755), 0, "%s: %s", deleg_base, strerror(errno));
	/* we are "warden", living in our delegated cgroup */
	cr_assert_eq(write_at(deleg_base, "cgroup.procs", "0"), 0);
	cr_assert_eq(cgroup_test_force_v2_own(deleg_base), 0);

	struct wd_err err = {0};
	cr_assert_eq(cgroup_test_v2_enable("hugetlb", &err), 0, "%s", err.msg);
	char self[4096], want[4096];
	cr_assert_gt(wd_read_file_at(AT_FDCWD, "/proc/self/cgroup", self, sizeof(self)), 0);
	snprintf(want, sizeof(want), "0::/%s/warden-supervisor\n", test_id("deleg"));
	cr_expect(strstr(self, want), "not moved aside: %s", self);
	cr_expect(list_has_word(deleg_base, "cgroup.subtree_control", "hugetlb"));
	char parent[8192];
	snprintf(parent, sizeof(parent), "%s/warden", deleg_base);
	cr_expect(list_has_word(parent, "cgroup.subtree_control", "hugetlb"));

	/* and a sandbox cgroup there has the controller's files */
	cr_assert_eq(cgroup_create(test_id("delegleaf"), NULL, &cg, &err), 0, "%s", err.msg);
	cr_expect(list_has_word(cgroup_dirs(cg)[0], "cgroup.controllers", "hugetlb"));
	struct gate g = spawn(NULL);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	cr_expect(in_all_procs(g.pid));
	cr_expect_eq(cgroup_kill(cg), 0);
	int st = wait_status(g.pid);
	nkids = 0;
	close(g.go);
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	cr_expect_eq(cgroup_destroy(cg), 0);
}

/* ---- cgroup_freeze (docs/threat-model.md): a review of a sandbox's change set stops
 * every process of it, children included, until the apply ---- */

static volatile uint64_t *spins; /* shared: [0] the child, [1] its child */

static void
spin_pair(void)
{
	int i = fork() == 0 ? 1 : 0;
	for (;;)
		spins[i]++;
}

/* Both counters move, within a generous deadline. */
static bool
both_move(int ms)
{
	uint64_t a = spins[0], b = spins[1];
	for (int t = 0; t < ms; t += 10) {
		if (spins[0] != a && spins[1] != b)
			return true;
		usleep(10000);
	}
	return false;
}

static void
freeze_case(unsigned flags, int want_how)
{
	struct wd_err err = {0};
	struct cgroup_limits lim = {128 * MiB, 64, 0};
	void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(map, MAP_FAILED);
	spins = map;
	cr_assert_eq(cgroup_create_flags(test_id(flags ? "fznone" : "fz"), &lim, flags, &cg, &err),
		     0, "%s", err.msg);
	struct gate g = spawn(spin_pair);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	release(&g);
	cr_assert(both_move(20000), "the pair never ran");
	int how = 0;
	cr_assert_eq(cgroup_freeze(cg, true, &how), 0);
	cr_expect_eq(how, want_how, "frozen by %d, want %d", how, want_how);
	/* frozen: no counter moves, however long we look (a short look can
	 * only miss a failure, never make one) */
	uint64_t a = spins[0], b = spins[1];
	usleep(200000);
	cr_expect(spins[0] == a && spins[1] == b, "ran while frozen: %llu->%llu, %llu->%llu",
		  (unsigned long long)a, (unsigned long long)spins[0], (unsigned long long)b,
		  (unsigned long long)spins[1]);
	cr_assert_eq(cgroup_freeze(cg, false, &how), 0);
	cr_expect_eq(how, 0);
	cr_expect(both_move(20000), "the pair did not run again after the thaw");
	cr_expect_eq(cgroup_kill(cg), 0);
	wait_status(g.pid);
	nkids = 0;
	cr_expect(wait_empty(2000), "%d processes survived", count_procs());
	cr_expect_eq(cgroup_destroy(cg), 0);
	munmap(map, 4096);
}

Test(cgroup, freeze_stops_the_whole_tree)
{
	need_root();
	freeze_case(0, 1);
}

/* No freezer hierarchy (v1 with CGROUP_NO_FREEZER; the same path as a
 * host without one): SIGSTOP/SIGCONT of every process in cgroup.procs. */
Test(cgroup, freeze_without_freezer_stops_by_signal)
{
	need_root();
	freeze_case(CGROUP_NO_FREEZER, cgroup_host_version() == 2 ? 1 : 2);
}

/* Without a freezer, a stop by signal is undone by SIGCONT, which any
 * process of the sandbox may send to another (same uid, same pid
 * namespace; a stopped process cannot, a running one can).  Four
 * processes each keep continuing the other three: one pass of SIGSTOP,
 * each pid signalled once, left the first ones continued by the last
 * (all four ran on while "frozen": the review of a change set then read
 * files a process went on writing).  The freeze must see every task
 * stopped, or fail (and thaw) rather than claim it. */
#define RING 4
static volatile pid_t *ring_pids; /* shared: [RING] pids, then counters */

static void
sigcont_ring(void)
{
	volatile uint64_t *n = (volatile uint64_t *)(ring_pids + RING);
	int i = 0;
	for (int k = 1; k < RING; k++)
		if (fork() == 0) {
			i = k;
			break;
		}
	ring_pids[i] = getpid();
	for (;;) {
		n[i]++;
		for (int k = 0; k < RING; k++)
			if (k != i && ring_pids[k] > 0)
				kill(ring_pids[k], SIGCONT);
	}
}

Test(cgroup, freeze_without_freezer_holds_against_sigcont)
{
	need_root();
	struct wd_err err = {0};
	struct cgroup_limits lim = {128 * MiB, 64, 0};
	void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(map, MAP_FAILED);
	ring_pids = map;
	volatile uint64_t *n = (volatile uint64_t *)(ring_pids + RING);
	cr_assert_eq(cgroup_create_flags(test_id("fzring"), &lim, CGROUP_NO_FREEZER, &cg, &err), 0,
		     "%s", err.msg);
	struct gate g = spawn(sigcont_ring);
	cr_assert_eq(cgroup_attach(cg, g.pid, &err), 0, "%s", err.msg);
	release(&g);
	/* all four started and run */
	uint64_t before[RING];
	for (int t = 0; t < 20000; t += 10) {
		bool all = true;
		for (int k = 0; k < RING; k++)
			all = all && ring_pids[k] > 0 && n[k] > 0;
		if (all)
			break;
		usleep(10000);
	}
	for (int k = 0; k < RING; k++)
		cr_assert(ring_pids[k] > 0 && n[k] > 0, "ring member %d never ran", k);
	int how = 0;
	int rc = cgroup_freeze(cg, true, &how);
	cr_assert_eq(rc, 0, "freeze: %s", strerror(-rc));
	cr_expect_neq(how, 0);
	for (int k = 0; k < RING; k++)
		before[k] = n[k];
	usleep(300000);
	int moved = 0;
	for (int k = 0; k < RING; k++)
		moved += n[k] != before[k];
	cr_expect_eq(moved, 0, "%d of %d processes ran on while frozen", moved, RING);
	cr_assert_eq(cgroup_freeze(cg, false, &how), 0);
	cr_expect_eq(cgroup_kill(cg), 0);
	wait_status(g.pid);
	nkids = 0;
	cr_expect(wait_empty(2000), "%d processes survived", count_procs());
	cr_expect_eq(cgroup_destroy(cg), 0);
	munmap(map, 4096);
}
