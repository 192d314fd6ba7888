/* supervise/gvisor_run: starting runsc (supervisor side, and the launcher
 * child between clone3 and execve).
 *
 * runsc run and runsc create start gVisor's processes (the gofer, which
 * serves host files, and the sandbox, the sentry with its ptrace stubs)
 * as their own children, in the namespaces runsc itself is in.  So the
 * launcher, a clone3 child of warden, first puts itself where those
 * processes must live, then becomes runsc:
 *
 *   a. the sandbox's cgroup (v1: it writes "0" into each tasks file the
 *      supervisor opened; v2: clone3 put it there, CLONE_INTO_CGROUP);
 *      everything runsc starts inherits it, so warden's limits, statistics,
 *      kill-all and keeper cover gVisor whole, and runsc's own cgroup code
 *      stays off (--ignore-cgroups);
 *   b. with egress, the network namespace warden prepared (loopback and
 *      the proxy's three listeners only; runsc --network=host then makes
 *      it the sandbox's network, gvisor.c);
 *   c. a private mount namespace where each host tree of the plan (cloned,
 *      read-only or idmapped, by jail_build_host) is mounted on
 *      dir/mnt/<k>, and each protected path's own tree (cloned from the
 *      workspace's, gv_oci_open_protected) on dir/mnt/p<k>: the bind
 *      sources of config.json.  Nothing of it is
 *      ever visible on the host, and it goes when gVisor's processes do;
 *   d. stdio, every other descriptor close-on-exec, execve.
 *
 * Clients (runsc start, exec, kill) do b only: this runsc's control
 * server listens on an abstract unix socket (@runsc-sandbox.<id>), and
 * abstract names are per network namespace, so a client outside the
 * sandbox's namespace is refused (ECONNREFUSED) at --net allow.  runsc run
 * never met it: the launcher is inside.  --version needs none of a-d's
 * sandbox steps.
 * After clone3 the launcher allocates nothing: warden may be multithreaded.
 * A failed step is reported over a close-on-exec pipe as {step, errno}. */
#include "supervise/gvisor.h"
#include "cgroup/cgroup.h"
#include "jail/jail.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

enum launch_step {
	LS_CGROUP = 1,
	LS_NETNS,
	LS_MOUNTNS,
	LS_TREE,
	LS_STDIO,
	LS_EXEC,
};

static const char *
launch_step_name(int s)
{
	static const char *const names[] = {
	    [LS_CGROUP] = "join the sandbox's cgroup",
	    [LS_NETNS] = "enter the sandbox's network namespace",
	    [LS_MOUNTNS] = "private mount namespace",
	    [LS_TREE] = "mount a host tree for the bundle",
	    [LS_STDIO] = "stdio",
	    [LS_EXEC] = "execve runsc",
	};
	return s > 0 && (size_t)s < WD_ARRAY_SIZE(names) ? names[s] : "?";
}

/* Everything the launcher needs, made before clone3. */
struct launch {
	const char *const *argv;
	int in, out, err;
	int report; /* write end of the status pipe */
	int tasks[8];
	int ntasks;
	int netns;
	struct {
		int fd;
		const char *path;
	} trees[GV_MAX_TREES];
	int ntrees;
};

static const char *const runsc_env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
					NULL};

__attribute__((noreturn)) static void
fail(const struct launch *l, int step, int e)
{
	int rec[2] = {step, e};
	(void)!write(l->report, rec, sizeof(rec));
	_exit(127);
}

__attribute__((noreturn)) static void
launcher(const struct launch *l)
{
	/* a. the cgroup: moving oneself skips the threadgroup lock's RCU
	 * grace period that attaching another pid costs (cgroup/cgroup.h) */
	for (int i = 0; i < l->ntasks; i++)
		if (write(l->tasks[i], "0", 1) != 1)
			fail(l, LS_CGROUP, errno);
	/* b. the prepared network namespace */
	if (l->netns >= 0 && setns(l->netns, CLONE_NEWNET) < 0)
		fail(l, LS_NETNS, errno);
	/* c. the trees, in a mount namespace of our own; private, so nothing
	 * mounted here propagates back to the host's peers */
	if (l->ntrees > 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			fail(l, LS_MOUNTNS, errno);
		for (int i = 0; i < l->ntrees; i++)
			if (syscall(SYS_move_mount, l->trees[i].fd, "", AT_FDCWD, l->trees[i].path,
				    MOVE_MOUNT_F_EMPTY_PATH) < 0)
				fail(l, LS_TREE, errno);
	}
	/* d. stdio (moved above 2 first, so that one cannot overwrite
	 * another), the rest close-on-exec, a clean signal state for Go */
	int fds[3] = {l->in, l->out, l->err};
	for (int i = 0; i < 3; i++)
		if ((fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0)
			fail(l, LS_STDIO, errno);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			fail(l, LS_STDIO, errno);
	syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	execve(l->argv[0], (char *const *)(const void *)l->argv,
	       (char *const *)(const void *)runsc_env);
	fail(l, LS_EXEC, errno);
}

/* v1: each hierarchy's tasks file, opened here (the launcher moves itself). */
static int
open_tasks(struct sandbox *sb, struct launch *l, struct wd_err *err)
{
	if (!sb->cg || cgroup_dirfd(sb->cg) >= 0)
		return 0;
	const char *const *dirs = cgroup_dirs(sb->cg);
	for (; dirs[l->ntasks] && l->ntasks < (int)WD_ARRAY_SIZE(l->tasks); l->ntasks++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/tasks", dirs[l->ntasks]);
		l->tasks[l->ntasks] = open(path, O_WRONLY | O_CLOEXEC);
		if (l->tasks[l->ntasks] < 0)
			return wd_err_sys(err, errno, "open %s", path);
	}
	return 0;
}

int
gv_spawn(const struct gv_proc *p, int *pidfd, struct wd_err *err)
{
	struct launch l = {.argv = p->argv, .in = p->in, .out = p->out, .err = p->err, .netns = -1};
	int rep[2] = {-1, -1}, devnull = -1, rc = 0;
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	if (p->in < 0 || p->out < 0 || p->err < 0) {
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull < 0)
			return wd_err_sys(err, errno, "open /dev/null");
		l.in = p->in < 0 ? devnull : p->in;
		l.out = p->out < 0 ? devnull : p->out;
		l.err = p->err < 0 ? devnull : p->err;
	}
	if (p->peer)
		l.netns = p->peer->netns_fd;
	if (p->sb) {
		struct sandbox *sb = p->sb;
		const struct gv *g = sb->priv;
		if ((rc = open_tasks(sb, &l, err)) < 0)
			goto out;
		if (sb->cg && cgroup_dirfd(sb->cg) >= 0) {
			ca.flags |= CLONE_INTO_CGROUP;
			ca.cgroup = (uint64_t)cgroup_dirfd(sb->cg);
		}
		l.netns = g->netns_fd;
		for (size_t i = 0; i < g->nmounts; i++) {
			const struct gv_mount *m = &g->mounts[i];
			if (m->tree < 0 && !m->rel)
				continue;
			/* gv_oci_plan refused more than GV_MAX_TREES */
			if (l.ntrees >= GV_MAX_TREES || (m->rel && m->fd < 0)) {
				rc = wd_err_set(err, WD_E_INTERNAL, "gvisor: tree of %s not open",
						m->dst);
				goto out;
			}
			/* a protected entry's own tree (gv_oci_open_protected) */
			l.trees[l.ntrees].fd = m->rel ? m->fd : sb->prep->plan.ops[m->tree].fd;
			l.trees[l.ntrees++].path = m->src;
		}
	}
	if (pipe2(rep, O_CLOEXEC) < 0) {
		rc = wd_err_sys(err, errno, "pipe");
		goto out;
	}
	l.report = rep[1];
	ca.flags |= CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)pidfd;
	ca.exit_signal = 0; /* reaped through the pidfd, no SIGCHLD for the caller */
	pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		rc = wd_err_sys(err, errno, "clone3 for runsc");
		goto out;
	}
	if (pid == 0)
		launcher(&l);
	close(rep[1]);
	rep[1] = -1;
	/* EOF: execve worked (the pipe was close-on-exec); a record: it failed */
	int rec[2];
	ssize_t n;
	while ((n = read(rep[0], rec, sizeof(rec))) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(rec)) {
		gv_wait(*pidfd, -1);
		close(*pidfd);
		*pidfd = -1;
		rc = wd_err_sys(err, rec[1], "runsc launcher: %s", launch_step_name(rec[0]));
	}
out:
	for (int i = 0; i < l.ntasks; i++)
		close(l.tasks[i]);
	if (rep[0] >= 0)
		close(rep[0]);
	if (rep[1] >= 0)
		close(rep[1]);
	if (devnull >= 0)
		close(devnull);
	return rc;
}

int
gv_wait(int pidfd, int timeout_ms)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	if (timeout_ms >= 0) {
		int n;
		while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		if (n == 0)
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	}
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	while (syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED | __WALL, NULL) < 0)
		if (errno != EINTR)
			return -errno;
	if (si.si_code == CLD_EXITED)
		return (si.si_status & 0xff) << 8;
	return si.si_status & 0x7f; /* killed or dumped: the signal */
}

const char **
gv_argv(const struct sandbox *sb, const struct gv *g, const char *const *more)
{
	(void)sb;
	size_t n = 0;
	while (more && more[n])
		n++;
	const char **v = wd_xcalloc(n + 9, sizeof(char *));
	size_t k = 0;
	v[k++] = gv_runsc()->path;
	v[k++] = g->opt_root;
	v[k++] = g->opt_platform;
	v[k++] = g->opt_net;
	/* warden's cgroup holds all of gVisor (the launcher joined it) */
	v[k++] = "--ignore-cgroups";
	/* the sentry applies config.json's seccomp profile (warden's table)
	 * to the command's system calls */
	v[k++] = "--oci-seccomp";
	v[k++] = g->opt_log;
	for (size_t i = 0; i < n; i++)
		v[k++] = more[i];
	v[k] = NULL;
	return v;
}

void
gv_last_line(const struct gv *g, const char *name, char *out, size_t cap)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", g->dir, name);
	out[0] = '\0';
	wd_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096];
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	char *line = strrchr(buf, '\n');
	snprintf(out, cap, "%s", line ? line + 1 : buf);
}

off_t
gv_log_size(const struct gv *g)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/runsc.log", g->dir);
	return stat(path, &st) == 0 ? st.st_size : 0;
}

bool
gv_runsc_error(const struct gv *g, off_t from, char *out, size_t cap)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/runsc.log", g->dir);
	wd_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	off_t size = lseek(fd, 0, SEEK_END);
	if (size - from > 65536)
		from = size - 65536;
	if (size <= from)
		return false;
	wd_autofree char *buf = wd_xmalloc((size_t)(size - from) + 1);
	ssize_t n = pread(fd, buf, (size_t)(size - from), from);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* runsc --log writes one JSON object per record: {"msg":"...",
	 * "level":"error",...}; the last error record is the reason */
	const char *found = NULL;
	for (char *rec = strstr(buf, "{\"msg\":\""); rec; rec = strstr(rec + 1, "{\"msg\":\"")) {
		char *end = strstr(rec + 1, "{\"msg\":\"");
		char *lvl = strstr(rec, "\"level\":\"error\"");
		if (lvl && (!end || lvl < end))
			found = rec + strlen("{\"msg\":\"");
	}
	if (!found)
		return false;
	size_t k = 0;
	for (const char *c = found; *c && *c != '"' && k + 1 < cap; c++) {
		if (*c == '\\' && c[1]) {
			c++;
			out[k++] = *c == 'n' ? ' ' : *c;
		} else {
			out[k++] = *c;
		}
	}
	out[k] = '\0';
	return true;
}

/* What a client printed: the last line of memfd fd. */
static void
memfd_last_line(int fd, char *out, size_t cap)
{
	char buf[2048];
	out[0] = '\0';
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	char *line = strrchr(buf, '\n');
	snprintf(out, cap, "%s", line ? line + 1 : buf);
}

int
gv_client(struct sandbox *sb, const struct gv *g, const char *const *more, int timeout_ms,
	  struct wd_err *err)
{
	const char **argv = gv_argv(sb, g, more);
	wd_autoclose int log = memfd_create("runsc-client", MFD_CLOEXEC);
	int pidfd = -1;
	struct gv_proc p = {.argv = argv, .in = -1, .out = log, .err = log, .peer = g};
	int rc = log < 0 ? wd_err_sys(err, errno, "memfd_create") : gv_spawn(&p, &pidfd, err);
	free(argv);
	if (rc < 0)
		return rc;
	int st = gv_wait(pidfd, timeout_ms);
	close(pidfd);
	if (st < 0)
		return wd_err_sys(err, -st, "wait for runsc %s", more[0]);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char line[200];
		memfd_last_line(log, line, sizeof(line));
		return wd_err_set(err, WD_E_SYS, "runsc %s failed (%s %d)%s%s", more[0],
				  WIFEXITED(st) ? "status" : "signal",
				  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
				  line[0] ? ": " : "", line);
	}
	return 0;
}

/* ---- what runsc is here ---- */

static struct gv_runsc runsc;
static pthread_once_t runsc_once = PTHREAD_ONCE_INIT;

static void
find_runsc(void)
{
	/* WARDEN_RUNSC names another build (an absolute path); else the
	 * system's, never a PATH entry the caller controls */
	const char *env = getenv("WARDEN_RUNSC");
	static const char *const dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
					   "/usr/bin",	      "/sbin",		"/bin"};
	if (env && env[0]) {
		snprintf(runsc.path, sizeof(runsc.path), "%s", env);
	} else {
		for (size_t i = 0; i < WD_ARRAY_SIZE(dirs) && !runsc.path[0]; i++) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "%s/runsc", dirs[i]);
			if (access(p, X_OK) == 0)
				snprintf(runsc.path, sizeof(runsc.path), "%s", p);
		}
	}
	if (!runsc.path[0] || access(runsc.path, X_OK) < 0) {
		snprintf(runsc.why, sizeof(runsc.why),
			 "runsc (gVisor) is not installed%s%s (Debian: apt-get install runsc)",
			 env && env[0] ? ": WARDEN_RUNSC=" : "", env && env[0] ? env : "");
		return;
	}
	/* its version, which also shows it runs at all; asking costs a Go
	 * program's start (~25 ms here), so the answer is kept in a file
	 * keyed by the binary's identity (root's: as root only) */
	struct stat st;
	char cache[PATH_MAX + 64], key[128], buf[256] = "";
	if (stat(runsc.path, &st) < 0) {
		snprintf(runsc.why, sizeof(runsc.why), "%s: %s", runsc.path, strerror(errno));
		return;
	}
	snprintf(key, sizeof(key), "%llu:%llu:%lld:%lld\n", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtime);
	snprintf(cache, sizeof(cache), "%s/runsc.version", GV_RUN_DIR);
	if (geteuid() == 0 && wd_read_file_at(AT_FDCWD, cache, buf, sizeof(buf)) > 0 &&
	    !strncmp(buf, key, strlen(key))) {
		const char *v = buf + strlen(key);
		snprintf(runsc.version, sizeof(runsc.version), "%.*s", (int)strcspn(v, "\n"), v);
		runsc.found = runsc.version[0] != '\0';
		if (runsc.found)
			return;
	}
	wd_autoclose int out = memfd_create("runsc-version", MFD_CLOEXEC);
	const char *argv[] = {runsc.path, "--version", NULL};
	struct gv_proc p = {.argv = argv, .in = -1, .out = out, .err = -1};
	int pidfd = -1;
	struct wd_err e = {0};
	if (out < 0 || gv_spawn(&p, &pidfd, &e) < 0) {
		snprintf(runsc.why, sizeof(runsc.why), "%s cannot be started: %s", runsc.path,
			 out < 0 ? strerror(errno) : e.msg);
		return;
	}
	int wst = gv_wait(pidfd, 10000);
	close(pidfd);
	ssize_t n = pread(out, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	const char *v = strstr(buf, "runsc version ");
	if (wst != 0 || !v) {
		snprintf(runsc.why, sizeof(runsc.why), "%s --version did not answer as runsc does",
			 runsc.path);
		return;
	}
	v += strlen("runsc version ");
	snprintf(runsc.version, sizeof(runsc.version), "%.*s", (int)strcspn(v, "\n "), v);
	runsc.found = true;
	if (geteuid() == 0 && (mkdir("/run/warden", 0700) == 0 || errno == EEXIST) &&
	    (mkdir(GV_RUN_DIR, 0700) == 0 || errno == EEXIST)) {
		/* written whole to a temporary name, then renamed: a reader sees
		 * the old answer or the new one */
		char tmp[PATH_MAX + 80];
		snprintf(tmp, sizeof(tmp), "%s.%d", cache, (int)getpid());
		wd_autoclose int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		char line[256];
		int len = snprintf(line, sizeof(line), "%s%s\n", key, runsc.version);
		if (fd >= 0 && wd_write_all(fd, line, (size_t)len) == 0)
			rename(tmp, cache);
		else
			unlink(tmp);
	}
}

const struct gv_runsc *
gv_runsc(void)
{
	pthread_once(&runsc_once, find_runsc);
	return &runsc;
}

const char *
gv_platform(struct wd_err *err)
{
	/* ptrace runs wherever ptrace does; kvm needs a usable /dev/kvm
	 * (`warden doctor` tries it).  Debian 12's runsc has no systrap. */
	const char *p = getenv("WARDEN_GVISOR_PLATFORM");
	if (!p || !p[0] || !strcmp(p, "ptrace"))
		return "ptrace";
	if (!strcmp(p, "kvm"))
		return "kvm";
	wd_err_set(err, WD_E_INVAL, "WARDEN_GVISOR_PLATFORM='%s': expected ptrace or kvm", p);
	return NULL;
}
