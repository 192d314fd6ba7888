/*
 * step_bench: what single steps of a sandbox's start and of an exec cost,
 * each timed alone in this process (medians of RUNS), so that the
 * "Measured" comments in src/jail and src/supervise can be checked:
 *
 *   fork / vfork          a process with 8 MiB of touched heap (about the
 *                         supervisor's, whose copy pid 1 is) forks a child
 *                         that exits, or starts it with CLONE_VM|CLONE_VFORK
 *   cow                   64 page writes in a parent whose child still
 *                         holds the pages (what each fork costs afterwards)
 *   sigaction             64 rt_sigaction calls (resetting dispositions)
 *   seccomp               loading warden's filter (convert + JIT)
 *   landlock-build/enter  a ruleset like a command's, built; entered
 *   mount ops             in a fresh user and mount namespace: a tmpfs
 *                         mount, a bind of /dev/null over a file followed
 *                         by a read-only setattr, and the same bind from a
 *                         source already read-only (one call); pivot_root
 *                         and the detach of the old root
 *   cgroup mkdir/rmdir    (root, cgroup v1 or v2) one sandbox cgroup made
 *                         and removed in every hierarchy warden uses;
 *                         cgroup_stats with its files kept open or not
 *
 *   step_bench [-n RUNS]
 */
#include "cgroup/cgroup-internal.h"
#include "jail/jail.h"
#include "jail/seccomp.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static int runs = 200;
static uint64_t *t;

static uint64_t
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void
report(const char *what)
{
	qsort(t, (size_t)runs, sizeof(*t), cmp);
	printf("%-34s median %8.1f us  p10 %8.1f  p90 %8.1f\n", what, (double)t[runs / 2] / 1e3,
	       (double)t[runs / 10] / 1e3, (double)t[runs * 9 / 10] / 1e3);
}

static int
child_exit(void *arg)
{
	(void)arg;
	_exit(0);
}

/* Run fn in a child, which reports one duration through a pipe. */
static void
in_child(void (*fn)(int wfd, void *), void *arg)
{
	for (int i = 0; i < runs; i++) {
		int p[2];
		if (pipe(p) < 0)
			exit(1);
		pid_t pid = fork();
		if (pid == 0) {
			close(p[0]);
			fn(p[1], arg);
			_exit(0);
		}
		close(p[1]);
		/* a child that failed wrote nothing: 0 */
		if (read(p[0], &t[i], sizeof(t[i])) != sizeof(t[i]))
			t[i] = 0;
		close(p[0]);
		waitpid(pid, NULL, 0);
	}
}

static void
put(int wfd, uint64_t v)
{
	if (write(wfd, &v, sizeof(v)) != sizeof(v))
		_exit(1);
}

static void
seccomp_once(int wfd, void *arg)
{
	(void)arg;
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	uint64_t t0 = now();
	jail_seccomp_load(&jail_seccomp_prog);
	put(wfd, now() - t0);
}

static void
landlock_enter(int wfd, void *arg)
{
	int rs = *(int *)arg;
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	uint64_t t0 = now();
	jail_landlock_restrict(rs);
	put(wfd, now() - t0);
}

/* In a new user and mount namespace (root of it), time one mount step. */
enum mstep { M_TMPFS, M_MASK_SETATTR, M_MASK_RO_SOURCE, M_PIVOT, M_DETACH };

static void
mount_step(int wfd, void *arg)
{
	enum mstep s = *(enum mstep *)arg;
	char map[32], gmap[32];
	snprintf(map, sizeof(map), "0 %d 1\n", (int)geteuid());
	snprintf(gmap, sizeof(gmap), "0 %d 1\n", (int)getegid());
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 ||
	    wd_write_file_at(AT_FDCWD, "/proc/self/setgroups", "deny") < 0 ||
	    wd_write_file_at(AT_FDCWD, "/proc/self/uid_map", map) < 0 ||
	    wd_write_file_at(AT_FDCWD, "/proc/self/gid_map", gmap) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") < 0)
		_exit(1);
	mkdir("/tmp/ro", 0755);
	int fd = open("/tmp/target", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(fd);
	fd = open("/tmp/ro/null", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(fd);
	/* a read-only source: /dev/null bound on /tmp/ro/null, then read-only */
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID};
	if (mount("/dev/null", "/tmp/ro/null", NULL, MS_BIND, NULL) < 0 ||
	    syscall(SYS_mount_setattr, AT_FDCWD, "/tmp/ro/null", 0, &ro, sizeof(ro)) < 0)
		_exit(1);
	uint64_t t0 = now();
	switch (s) {
	case M_TMPFS:
		mount("tmpfs", "/tmp/ro", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k");
		break;
	case M_MASK_SETATTR:
		mount("/dev/null", "/tmp/target", NULL, MS_BIND, NULL);
		syscall(SYS_mount_setattr, AT_FDCWD, "/tmp/target", 0, &ro, sizeof(ro));
		break;
	case M_MASK_RO_SOURCE:
		mount("/tmp/ro/null", "/tmp/target", NULL, MS_BIND, NULL);
		break;
	case M_PIVOT:
	case M_DETACH:
		if (chdir("/tmp") < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
			_exit(1);
		if (s == M_DETACH) {
			t0 = now();
			umount2(".", MNT_DETACH);
		}
		break;
	}
	put(wfd, now() - t0);
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "-n"))
		runs = atoi(argv[2]);
	if (runs < 10)
		runs = 10;
	t = calloc((size_t)runs, sizeof(*t));
	size_t big = 8 << 20;
	char *heap = malloc(big);
	memset(heap, 1, big);
	size_t stack_len = 256 << 10;
	char *stack = mmap(NULL, stack_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	for (int i = 0; i < runs; i++) {
		uint64_t t0 = now();
		pid_t p = (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
		if (p == 0)
			_exit(0);
		waitpid(p, NULL, 0);
		t[i] = now() - t0;
	}
	report("fork + exit + wait (8 MiB heap)");
	for (int i = 0; i < runs; i++) {
		uint64_t t0 = now();
		pid_t p =
		    clone(child_exit, stack + stack_len, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
		waitpid(p, NULL, 0);
		t[i] = now() - t0;
	}
	report("vfork + exit + wait");
	for (int i = 0; i < runs; i++) {
		pid_t p = (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
		if (p == 0) {
			pause();
			_exit(0);
		}
		uint64_t t0 = now();
		for (int k = 0; k < 64; k++)
			heap[k * 4096]++;
		t[i] = now() - t0;
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	report("64 copy-on-write faults");
	for (int i = 0; i < runs; i++) {
		uint64_t t0 = now();
		jail_default_signals();
		t[i] = now() - t0;
	}
	report("64 rt_sigaction");
	in_child(seccomp_once, NULL);
	report("seccomp load (warden's filter)");

	static const char *const ro[] = {"/", NULL};
	static const char *const rw[] = {"/tmp", "/dev/shm", NULL};
	static const char *const dev[] = {"/dev/null",	 "/dev/zero",	 "/dev/full", "/dev/tty",
					  "/dev/random", "/dev/urandom", "/dev/pts",  NULL};
	struct jail_landlock_rules rules = {ro, rw, dev, NULL, 0, true, true};
	int abi = jail_landlock_abi();
	if (abi > 0) {
		for (int i = 0; i < runs; i++) {
			struct wd_err e = {0};
			uint64_t t0 = now();
			int fd = jail_landlock_ruleset(&rules, abi, &e);
			t[i] = now() - t0;
			close(fd);
		}
		report("landlock ruleset build (10 rules)");
		int rs = jail_landlock_ruleset(&rules, abi, NULL);
		in_child(landlock_enter, &rs);
		report("landlock restrict_self");
		close(rs);
	}

	static const struct {
		enum mstep s;
		const char *name;
	} ms[] = {
	    {M_TMPFS, "mount tmpfs"},
	    {M_MASK_SETATTR, "mask: bind + setattr read-only"},
	    {M_MASK_RO_SOURCE, "mask: bind of a read-only source"},
	    {M_PIVOT, "pivot_root"},
	    {M_DETACH, "umount2 old root, MNT_DETACH"},
	};
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		enum mstep s = ms[i].s;
		in_child(mount_step, &s);
		report(ms[i].name);
	}

	if (geteuid() == 0 && cgroup_host_check(NULL) == 0) {
		for (int i = 0; i < runs; i++) {
			char id[32];
			snprintf(id, sizeof(id), "step-bench-%d-%d", (int)getpid(), i);
			struct cgroup *cg = NULL;
			struct cgroup_limits lim = {512u << 20, 128, 1000000};
			uint64_t t0 = now();
			if (cgroup_create_flags(id, &lim, CGROUP_NO_FREEZER, &cg, NULL) < 0) {
				t[i] = 0;
				continue;
			}
			t[i] = now() - t0;
			cgroup_destroy(cg);
			cgroup_free(cg);
		}
		report("cgroup create with limits (v1: 4 dirs)");
		for (int i = 0; i < runs; i++) {
			char id[32];
			snprintf(id, sizeof(id), "step-bench-%d-%d", (int)getpid(), i);
			struct cgroup *cg = NULL;
			struct cgroup_limits lim = {512u << 20, 128, 1000000};
			if (cgroup_create_flags(id, &lim, CGROUP_NO_FREEZER, &cg, NULL) < 0) {
				t[i] = 0;
				continue;
			}
			uint64_t t0 = now();
			cgroup_destroy(cg);
			t[i] = now() - t0;
			cgroup_free(cg);
		}
		report("cgroup destroy (empty)");
		struct cgroup *cg = NULL;
		struct cgroup_limits lim = {512u << 20, 128, 1000000};
		char id[32];
		snprintf(id, sizeof(id), "step-bench-%d", (int)getpid());
		if (cgroup_create_flags(id, &lim, CGROUP_NO_FREEZER, &cg, NULL) == 0) {
			struct cgroup_stats st;
			for (int i = 0; i < runs; i++) {
				uint64_t t0 = now();
				cgroup_stats(cg, &st);
				t[i] = now() - t0;
			}
			report("cgroup_stats, files kept open");
			int kept = cg->nstat;
			cg->nstat = 0; /* as before: open, read, close each file */
			for (int i = 0; i < runs; i++) {
				uint64_t t0 = now();
				cgroup_stats(cg, &st);
				t[i] = now() - t0;
			}
			report("cgroup_stats, files opened each time");
			cg->nstat = kept;
			cgroup_destroy(cg);
			cgroup_free(cg);
		}
	}
	free(heap);
	free(t);
	return 0;
}
