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
 * through its pidfd. */
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

/* System calls without libc's wrappers (see above). */
#define k_open(path, flags) ((int)syscall(SYS_openat, AT_FDCWD, (path), (flags), 0))
#define k_read(fd, buf, n) ((ssize_t)syscall(SYS_read, (fd), (buf), (n)))
#define k_write(fd, buf, n) ((ssize_t)syscall(SYS_write, (fd), (buf), (n)))
#define k_close(fd) syscall(SYS_close, (fd))
#define k_dup2(a, b) ((a) == (b) ? 0 : (int)syscall(SYS_dup3, (a), (b), 0))
#define k_rmdir(path) syscall(SYS_unlinkat, AT_FDCWD, (path), AT_REMOVEDIR)

__attribute__((noreturn)) static void
k_exit(int status)
{
	for (;;)
		syscall(SYS_exit_group, status);
}

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct keeper {
	pthread_mutex_t lock;
	int fd; /* write end of the pipe */
	int pidfd;
};

/* ---- the keeper process: system calls only ---- */

#define KEEP_TABLE (1u << 20) /* NUL-separated directory names, append-only */

struct table {
	char *p;
	size_t len;
};

static void
table_add(struct table *t, const char *dir, size_t n)
{
	if (t->len + n + 1 > KEEP_TABLE)
		return; /* more live cgroups than we can note: the next start sweeps */
	memcpy(t->p + t->len, dir, n);
	t->p[t->len + n] = '\0';
	t->len += n + 1;
}

/* Forget dir: blank its entry (the first byte becomes NUL). */
static void
table_del(struct table *t, const char *dir, size_t n)
{
	for (size_t i = 0; i < t->len;) {
		size_t l = strlen(t->p + i);
		if (l == n && !memcmp(t->p + i, dir, n)) {
			memset(t->p + i, 0, l);
			return;
		}
		i += l + 1;
	}
}

static void
sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

/* Kill every process listed in dir/cgroup.procs; returns how many. */
static int
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
		if (v > 0 && syscall(SYS_kill, v, SIGKILL) == 0)
			k++;
	}
	return k;
}

/* Empty dir and remove it: v2's cgroup.kill where it exists, else kill
 * what cgroup.procs lists, in passes (the pids limit bounds a fork loop);
 * rmdir retries while exiting tasks drain, for about ten seconds. */
static void
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
		if (k_rmdir(path) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			return;
		kill_procs(path, dlen);
		sleep_ms(10);
	}
}

__attribute__((noreturn)) static void
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
	syscall(SYS_close_range, 4U, ~0U, 0U);
	(void)!syscall(SYS_chdir, "/");
	/* Own session: a terminal's ^C to the program's group spares us;
	 * we end when the pipe says so. */
	syscall(SYS_setsid);
	jail_ignore_signal(SIGINT);
	jail_ignore_signal(SIGTERM);
	jail_ignore_signal(SIGHUP);
	jail_ignore_signal(SIGQUIT);
	syscall(SYS_prctl, 15 /* PR_SET_NAME */, "warden-keeper", 0, 0, 0);

	struct table t = {(char *)syscall(SYS_mmap, NULL, KEEP_TABLE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
			  0};
	if (t.p == MAP_FAILED)
		k_exit(1);
	char buf[8192];
	size_t have = 0;
	for (;;) {
		ssize_t n = k_read(3, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EOF: the program is gone without a goodbye */
		have += (size_t)n;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			size_t len = (size_t)(nl - line);
			if (len == 1 && line[0] == 'q')
				k_exit(0);
			if (len > 1 && line[0] == '+')
				table_add(&t, line + 1, len - 1);
			else if (len > 1 && line[0] == '-')
				table_del(&t, line + 1, len - 1);
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf))
			have = 0; /* a line longer than any path: drop it */
	}
	for (size_t i = 0; i < t.len;) {
		size_t l = strlen(t.p + i);
		if (l)
			remove_dir(t.p + i);
		i += l ? l + 1 : 1;
	}
	k_exit(0);
}

/* ---- the program's side ---- */

int
keeper_start(struct keeper **out, struct wd_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "keeper pipe");
	int pidfd = -1;
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
	ca.exit_signal = 0; /* invisible to the caller's waitpid(-1) */
	pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return wd_err_sys(err, e, "start the cgroup keeper");
	}
	if (pid == 0) {
		jail_child_sanitizer();
		k_close(p[1]);
		keeper_main(p[0]);
	}
	close(p[0]);
	struct keeper *k = wd_xcalloc(1, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
	k->fd = p[1];
	k->pidfd = pidfd;
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
	pthread_mutex_destroy(&k->lock);
	free(k);
}
