/* supervise/keeper: removes the cgroups of a context's sandboxes if the
 * program holding the context dies.
 *
 * pid 1 of a container ends when warden does (EOF on its sandbox channel)
 * and takes its pid namespace along; mounts live only in the sandbox's
 * mount namespace.  The
 * cgroup directories are the one thing on the host that would stay.  So
 * each context starts one small process, once (not per sandbox), that
 * holds the read end of a pipe and hears of every cgroup made and removed:
 *
 *     "+DIR\n"   watch DIR (a sandbox's cgroup, one line per hierarchy)
 *     "-DIR\n"   DIR is gone, forget it
 *     "q\n"      goodbye: the context is freed and cleaned up itself
 *
 * EOF without the goodbye means the program died: the keeper kills
 * whatever is left in each watched directory and removes it, retrying
 * while the kernel drains exiting tasks, then exits.
 *
 * It is a raw clone of a possibly multithreaded program (an embedder's
 * threads, the proxy's), so after the clone it uses system calls only: no
 * malloc (a lock may have been copied held), no stdio, and not even libc's
 * wrappers for them: a sanitizer intercepts open(), read() and mmap() and
 * takes its own locks there, which a raw clone (unlike fork(), which the
 * sanitizer brackets) may have copied held (a keeper hung on a futex under
 * TSan).  Its table lives in an anonymous mapping.  exit_signal 0 keeps it
 * out of the caller's waitpid(-1) and SIGCHLD; keeper_stop() reaps it
 * through its pidfd.
 *
 * On x86-64 (not in sanitizer builds) it shares the program's memory
 * (CLONE_VM, jail_clone_vm) on a stack of its own, as the idmap holder
 * does (jail/hostpath.c): no page tables copied at the start, none torn down
 * at the end, no copy-on-write faults for the program after.  Measured
 * with bench/spawn.sh (200 alternating runs of `warden run -- /bin/true`):
 * see keeper_start.  Sharing memory is safe because the keeper writes only
 * its stack and its own mapping, and touches nothing of the creating
 * thread's, whose TLS its %fs still names (that thread may exit and its
 * TLS be freed): its system calls are inline `syscall` instructions that
 * return -errno (libc's wrapper writes errno, in that TLS), its functions
 * carry no stack protector (the canary is read from that TLS), and it
 * blocks every signal (a handler of the program's would run on the
 * program's data).  Its mapping is unmapped before it exits. */
#include "supervise/supervise.h"
#include "jail/jail.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#if defined(__x86_64__) && !WD_SANITIZED
#define KEEPER_SHARES_MEMORY 1
/* No canary: it is read from the creating thread's TLS (see above). */
#define KEEPER_FN __attribute__((no_stack_protector, noinline))

/* A system call with no libc in between: the result, or -errno. */
static inline long
k_sys(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
#define KEEPER_SHARES_MEMORY 0
#define KEEPER_FN
/* The keeper has a copy of the program's memory here: errno is its own. */
static inline long
k_sys(long n, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(n, a, b, c, d, e, f);
	return r < 0 ? -errno : r;
}
#endif

#define K0(n) k_sys((n), 0, 0, 0, 0, 0, 0)
#define K1(n, a) k_sys((n), (long)(a), 0, 0, 0, 0, 0)
#define K2(n, a, b) k_sys((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define K3(n, a, b, c) k_sys((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define K4(n, a, b, c, d) k_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

#define k_open(path, flags) ((int)K4(SYS_openat, AT_FDCWD, (path), (flags), 0))
#define k_read(fd, buf, n) K3(SYS_read, (fd), (buf), (n))
#define k_write(fd, buf, n) K3(SYS_write, (fd), (buf), (n))
#define k_close(fd) K1(SYS_close, (fd))
#define k_dup2(a, b) ((a) == (b) ? 0 : (int)K3(SYS_dup3, (a), (b), 0))
#define k_rmdir(path) K3(SYS_unlinkat, AT_FDCWD, (path), AT_REMOVEDIR)

__attribute__((noreturn)) static void
k_exit(int status)
{
	for (;;)
		K1(SYS_exit_group, status);
}

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct keeper {
	pthread_mutex_t lock;
	int fd; /* write end of the pipe */
	int pidfd;
	void *stack; /* jail_clone_vm's, unmapped once the keeper is reaped */
};

/* ---- the keeper process: system calls only ---- */

#define KT_FN KEEPER_FN
#include "supervise/keeper_table.h"

KEEPER_FN static void
sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	K4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

/* Kill every process listed in dir/cgroup.procs; returns how many. */
KEEPER_FN static int
kill_procs(char *path, size_t dlen)
{
	memcpy(path + dlen, "/cgroup.procs", 14);
	int fd = k_open(path, O_RDONLY | O_CLOEXEC);
	path[dlen] = '\0';
	if (fd < 0)
		return 0;
	char buf[4096];
	ssize_t n = k_read(fd, buf, sizeof(buf) - 1);
	k_close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	int k = 0;
	for (const char *s = buf; *s;) {
		pid_t v = jail_next_pid(&s);
		if (v > 0 && K2(SYS_kill, v, SIGKILL) == 0)
			k++;
	}
	return k;
}

/* Empty dir and remove it: v2's cgroup.kill where it exists, else kill
 * what cgroup.procs lists, in passes (the pids limit bounds a fork loop);
 * rmdir retries while exiting tasks drain, for about ten seconds. */
KEEPER_FN static void
remove_dir(const char *dir)
{
	char path[4096];
	size_t dlen = strlen(dir);
	if (dlen + 16 > sizeof(path))
		return;
	memcpy(path, dir, dlen + 1);
	memcpy(path + dlen, "/cgroup.kill", 13);
	int fd = k_open(path, O_WRONLY | O_CLOEXEC);
	path[dlen] = '\0';
	if (fd >= 0) {
		(void)!k_write(fd, "1", 1);
		k_close(fd);
	}
	for (int i = 0; i < 1000; i++) {
		long r = k_rmdir(path);
		if (r != -EBUSY)
			return; /* removed, already gone, or not ours to retry */
		kill_procs(path, dlen);
		sleep_ms(10);
	}
}

/* Thaw dir: v1's freezer.state, v2's cgroup.freeze (the file that is not
 * there fails to open, nothing else).  A frozen cgroup's processes cannot
 * die under v1's freezer: a sandbox the program froze (a diff freezes it
 * until the apply that follows) and then left by dying would keep its
 * processes, and every directory they are in, for ever. */
KEEPER_FN static void
thaw_dir(const char *dir)
{
	char path[4096];
	size_t dlen = strlen(dir);
	if (dlen + 16 > sizeof(path))
		return;
	memcpy(path, dir, dlen);
	memcpy(path + dlen, "/freezer.state", 15);
	int fd = k_open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!k_write(fd, "THAWED", 6);
		k_close(fd);
	}
	memcpy(path + dlen, "/cgroup.freeze", 15);
	fd = k_open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!k_write(fd, "0", 1);
		k_close(fd);
	}
}

KEEPER_FN __attribute__((noreturn)) static void
keeper_main(int rfd)
{
	/* Keep nothing of the program's but the pipe: holding its output
	 * pipes or sockets would delay EOFs elsewhere, and $(warden ...)
	 * must not wait for us. */
	int null = k_open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || k_dup2(rfd, 3) < 0)
		k_exit(1);
	k_dup2(null, 0);
	k_dup2(null, 1);
	k_dup2(null, 2);
	K3(SYS_close_range, 4U, ~0U, 0U);
	K1(SYS_chdir, "/");
	/* Own session: a terminal's ^C to the program's group spares us; we
	 * end when the pipe says so.  Every signal blocked (SIGKILL still
	 * ends us): a handler the program installed would run on its data. */
	K0(SYS_setsid);
	unsigned long all = ~0UL;
	K4(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof(all));
	K2(SYS_prctl, 15 /* PR_SET_NAME */, "warden-keeper");

	char *map = (char *)k_sys(SYS_mmap, 0, KT_MAP_SIZE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if ((unsigned long)map > -4096UL)
		k_exit(1);
	/* the program's forks need none of it (see keeper_start) */
	K3(SYS_madvise, map, KT_MAP_SIZE, MADV_DONTFORK);
	struct kt t;
	kt_init(&t, map);
	char buf[8192];
	size_t have = 0;
	bool goodbye = false;
	while (!goodbye) {
		long n = k_read(3, buf + have, sizeof(buf) - have);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			break; /* EOF: the program is gone without a goodbye */
		have += (size_t)n;
		char *line = buf, *nl;
		while (!goodbye && (nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			size_t len = (size_t)(nl - line);
			if (len == 1 && line[0] == 'q')
				goodbye = true;
			else if (len > 1 && line[0] == '+')
				(void)kt_add(&t, line + 1, len - 1);
			else if (len > 1 && line[0] == '-')
				kt_del(&t, line + 1, len - 1);
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf))
			have = 0; /* a line longer than any path: drop it */
	}
	/* every directory thawed first: the freezer's may come after the
	 * memory controller's in the table, whose removal waits for the
	 * processes to die */
	const char *dir;
	size_t at = 0;
	while (!goodbye && (dir = kt_next(&t, &at)))
		thaw_dir(dir);
	at = 0;
	while (!goodbye && (dir = kt_next(&t, &at)))
		remove_dir(dir);
	/* the mapping is the program's too when memory is shared */
	K2(SYS_munmap, map, KT_MAP_SIZE);
	k_exit(0);
}

#if KEEPER_SHARES_MEMORY
/* arg: the pipe's read end in the low 32 bits, its write end (the
 * program's, copied into our descriptor table) in the high */
KEEPER_FN static int
keeper_entry(void *arg)
{
	uintptr_t fds = (uintptr_t)arg;
	k_close((int)(fds >> 32));
	keeper_main((int)(fds & 0xffffffffu));
}
#endif

/* ---- the program's side ---- */

/* KEEPER_SHARES_MEMORY, measured: `warden run -- /bin/true` against the
 * build with the forked keeper, alternating, 2-CPU VM at load ~2:
 * bench/spawn.sh (3 series of 200) 0.95, 0.95 and 1.00 of the added time
 * (-0.14, -0.14, 0.00 ms); farm-bench (100 pairs) 0.975 of the whole
 * run's wall time, 0.97 of its CPU.  Checked: no %fs reference in the
 * keeper's functions (gdb disassemble), the library calls they make
 * (memchr, memcpy, memmove, memcmp, strlen) use no TLS. */
int
keeper_start(struct keeper **out, struct wd_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "keeper pipe");
	int pidfd = -1;
	void *stack = NULL;
	pid_t pid;
#if KEEPER_SHARES_MEMORY
	/* exit signal 0: invisible to the caller's waitpid(-1) and SIGCHLD */
	pid = jail_clone_vm(keeper_entry,
			    (void *)((uintptr_t)(unsigned)p[0] | (uintptr_t)(unsigned)p[1] << 32),
			    0, &pidfd, &stack);
#else
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = 0; /* invisible to the caller's waitpid(-1) */
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		jail_child_sanitizer();
		k_close(p[1]);
		keeper_main(p[0]);
	}
#endif
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return wd_err_sys(err, e, "start the cgroup keeper");
	}
	close(p[0]);
	struct keeper *k = wd_xcalloc(1, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
	k->fd = p[1];
	k->pidfd = pidfd;
	k->stack = stack;
	*out = k;
	return 0;
}

/* All of dirs' lines in one write where they fit in PIPE_BUF (a write that
 * size is atomic, never interleaved with another thread's), so the keeper
 * wakes once per sandbox rather than once per hierarchy. */
static void
say(struct keeper *k, char op, const char *const *dirs)
{
	if (!k || !dirs)
		return;
	char buf[PIPE_BUF];
	size_t len = 0;
	pthread_mutex_lock(&k->lock);
	for (size_t i = 0; dirs[i]; i++) {
		size_t n = strlen(dirs[i]);
		if (n + 2 > sizeof(buf))
			continue; /* longer than any cgroup path */
		if (len + n + 2 > sizeof(buf)) {
			(void)!wd_write_all(k->fd, buf, len);
			len = 0;
		}
		buf[len] = op;
		memcpy(buf + len + 1, dirs[i], n);
		buf[len + n + 1] = '\n';
		len += n + 2;
	}
	if (len)
		(void)!wd_write_all(k->fd, buf, len);
	pthread_mutex_unlock(&k->lock);
}

void
keeper_watch(struct keeper *k, const char *const *dirs)
{
	say(k, '+', dirs);
}

void
keeper_release(struct keeper *k, const char *const *dirs)
{
	say(k, '-', dirs);
}

void
keeper_stop(struct keeper *k)
{
	if (!k)
		return;
	(void)!wd_write_all(k->fd, "q\n", 2);
	close(k->fd);
	if (k->pidfd >= 0) {
		siginfo_t si;
		while (syscall(SYS_waitid, P_PIDFD, k->pidfd, &si, WEXITED | __WALL, NULL) < 0 &&
		       errno == EINTR)
			;
		close(k->pidfd);
	}
	/* only once the keeper is gone: it ran on this stack */
	if (k->stack)
		munmap(k->stack, JAIL_VM_STACK);
	pthread_mutex_destroy(&k->lock);
	free(k);
}
