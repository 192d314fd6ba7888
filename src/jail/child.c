/* jail/child: everything that runs after clone(), in the sandbox's own
 * processes.  Nothing here allocates or formats (STYLE.md §3): the plan was
 * finished by the supervisor, failures go back as struct jail_msg records.
 *
 * Process roles (STYLE.md §5):
 *   jail_pid1_main     pid 1 of the new pid namespace: ids, mounts, pivot,
 *                      loopback, drop privileges, fork the command, reap;
 *   exec_main          the command's process: session, fds, rlimits,
 *                      Landlock, close fds, seccomp, execve;
 *   jail_process_main  --isolation process: exec_main without namespaces. */
#include "jail/jail.h"
#include "jail/seccomp.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

void
jail_report(int sync_fd, int kind, int step, int err, int status)
{
	struct jail_msg m = {.kind = kind, .step = step, .err = err, .status = status};
	/* SOCK_SEQPACKET: one record, or nothing if the supervisor is gone. */
	(void)!send(sync_fd, &m, sizeof(m), MSG_NOSIGNAL);
}

__attribute__((noreturn)) static void
fail(const struct jail_plan *plan, int step, int err)
{
	jail_report(plan->sync_fd, JAIL_MSG_ERROR, step, err, 0);
	_exit(125);
}

static int
sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}

/* Make a mount read-only (and nosuid, nodev): mount_setattr when the kernel
 * has it (one call, and AT_RECURSIVE reaches submounts a remount would
 * miss), else the classic bind remount of that one mount. */
static int
make_readonly(const char *path, bool recursive)
{
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					   MOUNT_ATTR_NODEV};
	if (sys_mount_setattr(AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &a) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) < 0)
		return -errno;
	return 0;
}

static int
do_op(const struct jail_op *op)
{
	int fd;
	switch (op->kind) {
	case JAIL_OP_MKDIR:
		if (mkdir(op->path, 0755) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	case JAIL_OP_MKFILE:
		fd = open(op->path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -errno;
		close(fd);
		return 0;
	case JAIL_OP_SYMLINK:
		if (symlink(op->data, op->path) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	case JAIL_OP_WRITE:
		fd = open(op->path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -errno;
		if (wd_write_all(fd, op->data, op->len) < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		close(fd);
		return 0;
	case JAIL_OP_COPY: {
		fd = open(op->path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0)
			return -errno;
		off_t off = 0;
		for (;;) {
			ssize_t n = sendfile(fd, op->fd, &off, 1 << 20);
			if (n < 0) {
				int e = errno;
				close(fd);
				return -e;
			}
			if (n == 0)
				break;
		}
		close(fd);
		return 0;
	}
	case JAIL_OP_BIND:
		if (op->flags & JAIL_OPF_HOSTPATH) {
			/* a private copy of the host tree opened before the new
			 * root, with its attributes, moved into place */
			int tree = (int)syscall(SYS_open_tree, op->fd, "",
						OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
							((op->flags & JAIL_OPF_RECURSIVE) ? AT_RECURSIVE
											  : 0));
			if (tree < 0)
				return -errno;
			struct mount_attr ta = {.attr_set = op->attr, .propagation = MS_PRIVATE};
			int rc = 0;
			if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ta) < 0 ||
			    syscall(SYS_move_mount, tree, "", AT_FDCWD, op->path,
				    MOVE_MOUNT_F_EMPTY_PATH) < 0)
				rc = -errno;
			close(tree);
			return rc;
		}
		if (mount(op->src, op->path, NULL,
			  MS_BIND | ((op->flags & JAIL_OPF_RECURSIVE) ? MS_REC : 0), NULL) < 0)
			return -errno;
		if (op->mflags & MS_RDONLY)
			return make_readonly(op->path, op->flags & JAIL_OPF_RECURSIVE);
		/* rw binds still lose setuid and device files (a workspace is data) */
		struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
		if (sys_mount_setattr(AT_FDCWD, op->path, AT_RECURSIVE, &a) < 0 && errno != ENOSYS)
			return -errno;
		return 0;
	case JAIL_OP_MOVE:
		if (syscall(SYS_move_mount, op->fd, "", AT_FDCWD, op->path,
			    MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
		return 0;
	case JAIL_OP_MOUNT:
		if (mount(op->src, op->path, op->src, op->mflags, op->data) < 0)
			return -errno;
		return 0;
	case JAIL_OP_SETATTR: {
		if (op->attr & MOUNT_ATTR_RDONLY)
			return make_readonly(op->path, op->flags & JAIL_OPF_RECURSIVE);
		struct mount_attr set = {.attr_set = op->attr};
		if (sys_mount_setattr(AT_FDCWD, op->path,
				      (op->flags & JAIL_OPF_RECURSIVE) ? AT_RECURSIVE : 0, &set) < 0)
			return -errno;
		return 0;
	}
	case JAIL_OP_MASK:
		/* Hide a /proc entry: /dev/null over files, an empty read-only
		 * directory over directories (what Docker and runc mask). */
		if (mount(op->src, op->path, NULL, MS_BIND, NULL) < 0)
			return (errno == ENOENT) ? 0 : -errno;
		return make_readonly(op->path, false);
	}
	return -EINVAL;
}

/* 6d. Clear every capability set: bounding first (dropping it needs
 * CAP_SETPCAP, which the capset below removes), then ambient, then
 * effective/permitted/inheritable.  The command runs as uid 1000, so
 * execve would clear permitted anyway, but the bounding set survives exec
 * and a later setuid binary (none exist: nosuid) or file caps could use it. */
static int
drop_bounding(int last_cap, bool must)
{
	for (int c = 0; c <= last_cap; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL &&
		    (errno != EPERM || must))
			return -errno;
	return 0;
}

static int
clear_caps(void)
{
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

/* 6d. Clear every capability set: bounding first (dropping it needs
 * CAP_SETPCAP, which the capset removes), then ambient, then
 * effective/permitted/inheritable.  The command runs as uid 1000, so
 * execve would clear permitted anyway, but the bounding set survives exec
 * and a later setuid binary (none work: nosuid) or file caps could use it. */
static int
drop_caps(int last_cap, bool need_bounding)
{
	int rc = drop_bounding(last_cap, need_bounding);
	return rc < 0 ? rc : clear_caps();
}

/* Bring up lo in the new network namespace: the only interface there. */
static int
loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
	int rc = ioctl(s, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
	close(s);
	return rc;
}

/* A change of uid or gid clears the parent-death signal (prctl(2)), so
 * arm it again, then make sure the supervisor did not die in between: its
 * end of the sync socket closing reads as EOF here. */
static void
rearm_pdeathsig(const struct jail_plan *plan)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* POLLRDHUP, not a peek: a queued message would hide the hang-up */
	struct pollfd pfd = {.fd = plan->sync_fd, .events = POLLRDHUP};
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP)))
		_exit(125);
}

/* 4a. Egress mode: the proxy's sockets, made here so they belong to the
 * sandbox's network namespace (its loopback is the only interface), then
 * handed to the supervisor, which serves them from outside the jail
 * (SYNC_NET_READY).  Connections that arrive before it starts wait in the
 * listen backlog, so the command need not wait for it.  Binding port 53
 * needs CAP_NET_BIND_SERVICE, which we still hold over this namespace. */
static int
net_socket(int type, uint16_t port)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 256) < 0)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int
net_sockets(const struct jail_plan *plan)
{
	int fds[3] = {net_socket(SOCK_STREAM, JAIL_PROXY_HTTP_PORT),
		      net_socket(SOCK_STREAM, JAIL_PROXY_SOCKS_PORT),
		      net_socket(SOCK_DGRAM, JAIL_DNS_PORT)};
	int rc = 0;
	for (int i = 0; i < 3; i++)
		if (fds[i] < 0 && rc == 0)
			rc = fds[i];
	if (rc == 0) {
		struct jail_msg m = {.kind = JAIL_MSG_NET_READY, .status = 3};
		rc = jail_msg_send(plan->sync_fd, &m, fds, 3);
	}
	for (int i = 0; i < 3; i++) /* the supervisor holds them now */
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

/* The command's process, common to both levels.  Order matters: */
__attribute__((noreturn)) static void
exec_main(struct jail_plan *plan)
{
	int rc;

	/* 6a. A new session: no controlling terminal, so TIOCSTI cannot push
	 * keystrokes into the caller's terminal (CVE-2017-5226); seccomp
	 * refuses TIOCSTI too. */
	if (setsid() < 0)
		fail(plan, JAIL_STEP_6A_SESSION, errno);

	/* Signals start clean: warden's blocked mask and ignored signals
	 * (SIG_IGN survives execve) are not the command's business. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);

	/* 6b. stdin is /dev/null unless the caller passed one. */
	int in = plan->stdin_fd >= 0 ? plan->stdin_fd : plan->devnull_fd;
	if (dup2(in, 0) < 0 || dup2(plan->stdout_fd, 1) < 0 || dup2(plan->stderr_fd, 2) < 0)
		fail(plan, JAIL_STEP_6B_FDS, errno);

	/* 6c. rlimits: no core dumps (they would land in the workspace),
	 * bounded fds and file size. */
	if (setrlimit(RLIMIT_CORE, &plan->rl_core) < 0 ||
	    setrlimit(RLIMIT_NOFILE, &plan->rl_nofile) < 0 ||
	    setrlimit(RLIMIT_FSIZE, &plan->rl_fsize) < 0)
		fail(plan, JAIL_STEP_6C_RLIMITS, errno);

	if (!plan->container) {
		/* process level: when warden is root, leave root behind.
		 * setgroups first: supplementary groups survive setuid. */
		if (plan->run_uid != (uid_t)-1) {
			/* the bounding set first: dropping it needs CAP_SETPCAP,
			 * which the uid change below takes away */
			if ((rc = drop_bounding(plan->last_cap, true)) < 0)
				fail(plan, JAIL_STEP_6D_CAPS, -rc);
			if (setgroups(0, NULL) < 0 || setresgid(plan->run_gid, plan->run_gid,
								 plan->run_gid) < 0 ||
			    setresuid(plan->run_uid, plan->run_uid, plan->run_uid) < 0)
				fail(plan, JAIL_STEP_2B_IDS, errno);
			rearm_pdeathsig(plan);
		}
		/* an unprivileged caller cannot shrink its bounding set (no
		 * CAP_SETPCAP); it holds no capability and NoNewPrivs keeps it
		 * from gaining one */
		if ((rc = drop_caps(plan->last_cap, false)) < 0)
			fail(plan, JAIL_STEP_6D_CAPS, -rc);
		/* 6e. NoNewPrivs: setuid binaries and file caps grant nothing,
		 * and unprivileged seccomp and Landlock need it. */
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			fail(plan, JAIL_STEP_6E_NNP, errno);
		if (chdir(plan->cwd) < 0)
			fail(plan, JAIL_STEP_6B_FDS, errno);
	}

	/* 6f. Landlock, a second fence behind the mounts. */
	if (plan->landlock_abi > 0) {
		struct wd_err e = {0};
		if (jail_landlock_apply(&plan->landlock, plan->landlock_abi, &e) < 0)
			fail(plan, JAIL_STEP_6F_LANDLOCK, e.sys_errno ? e.sys_errno : EPERM);
	}

	/* 6g. Nothing of warden's crosses into the command: every fd above 2
	 * closes at execve (CLOEXEC rather than close, so the sync socket can
	 * still report an execve failure). */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		fail(plan, JAIL_STEP_6G_CLOSE_FDS, errno);

	/* 6h. Seccomp last: setrlimit, capset, landlock_restrict_self and
	 * close_range above would otherwise have to be on the allow list. */
	if ((rc = jail_seccomp_load(plan->seccomp)) < 0)
		fail(plan, JAIL_STEP_6H_SECCOMP, -rc);

	/* 6i. execve with an explicit argv and environment, never a shell.
	 * Candidates were resolved against the jail's PATH by the supervisor;
	 * ENOENT moves on, any other error is remembered (execvp's rule). */
	int err = ENOENT;
	for (int i = 0; plan->exec_paths[i]; i++) {
		execve(plan->exec_paths[i], plan->argv, plan->envp);
		if (errno != ENOENT && errno != ENOTDIR)
			err = errno;
	}
	jail_report(plan->sync_fd, JAIL_MSG_EXEC_FAILED, JAIL_STEP_6I_EXEC, err, 0);
	_exit(err == ENOENT ? 127 : 126);
}

int
jail_msg_send(int sync_fd, const struct jail_msg *m, const int *fds, int nfds)
{
	struct iovec iov = {.iov_base = (void *)(uintptr_t)m, .iov_len = sizeof(*m)};
	union {
		char buf[CMSG_SPACE(sizeof(int) * JAIL_MAX_MSG_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > JAIL_MAX_MSG_FDS)
		return -EINVAL;
	if (nfds > 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(sync_fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -errno;
}

int
jail_msg_recv(int sync_fd, struct jail_msg *m, int *fds, int *nfds, int flags)
{
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	union {
		char buf[CMSG_SPACE(sizeof(int) * JAIL_MAX_MSG_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	*nfds = 0;
	while ((n = recvmsg(sync_fd, &mh, flags | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -errno;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		*nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)*nfds);
	}
	return n == (ssize_t)sizeof(*m) ? 0 : -EPIPE; /* EOF or a torn record */
}

/* 4b. Join the sandbox's cgroup.  The supervisor creates it while we build
 * the mounts (it overlaps with our setup), then sends SYNC_CGROUP_READY.
 * On v1 the message carries each hierarchy's tasks file and we move
 * ourselves by writing "0": moving oneself, single-threaded, skips the
 * global cgroup_threadgroup_rwsem write lock (cgroup_procs_write_start's
 * pid == 0 case), whose RCU grace period makes a supervisor-side write of
 * our pid cost ~10 ms.  On v2 clone3 already put us there
 * (CLONE_INTO_CGROUP).  Then a cgroup namespace rooted here, so
 * /proc/self/cgroup shows "/" and nothing of the host's layout; it needs
 * CAP_SYS_ADMIN, so it comes before the capabilities go. */
static void
join_cgroup(const struct jail_plan *plan)
{
	struct jail_msg m;
	int fds[JAIL_MAX_MSG_FDS], nfds;
	if (jail_msg_recv(plan->sync_fd, &m, fds, &nfds, 0) < 0 || m.kind != JAIL_MSG_CGROUP)
		_exit(125); /* the supervisor is gone or gave up on us */
	for (int i = 0; i < nfds; i++) {
		if (write(fds[i], "0", 1) != 1)
			fail(plan, JAIL_STEP_4B_CGROUP, errno);
		close(fds[i]);
	}
	if (plan->container && unshare(CLONE_NEWCGROUP) < 0)
		fail(plan, JAIL_STEP_4B_CGROUP, errno);
}

__attribute__((noreturn)) void
jail_process_main(struct jail_plan *plan)
{
	/* Die with warden: the supervisor holds the other end of sync_fd, so
	 * a parent that died before the prctl is seen too (getppid changes). */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	struct jail_msg m;
	if (recv(plan->sync_fd, &m, sizeof(m), 0) != (ssize_t)sizeof(m) || m.kind != JAIL_MSG_GO)
		_exit(125);
	join_cgroup(plan);
	exec_main(plan);
}

/* 5. pid 1: reap everything, forward signals to the command, report its
 * status and leave.  When pid 1 exits the kernel kills every other process
 * of the namespace, so nothing outlives the command. */
__attribute__((noreturn)) static void
reap_loop(struct jail_plan *plan, pid_t cmd)
{
	sigset_t all;
	sigfillset(&all);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&all, &si);
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			kill(cmd, sig);
			continue;
		}
		for (;;) {
			int st;
			pid_t p = waitpid(-1, &st, WNOHANG);
			if (p <= 0)
				break;
			if (p == cmd) {
				/* usage of everything pid 1 reaped, the command
				 * included: the supervisor does not wait for us */
				struct rusage ru;
				getrusage(RUSAGE_CHILDREN, &ru);
				struct jail_msg m = {
					.kind = JAIL_MSG_EXIT,
					.step = JAIL_STEP_5_PID1,
					.status = st,
					.cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
							  1000000ULL +
						  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec),
					.maxrss_kb = (uint64_t)ru.ru_maxrss,
				};
				(void)!send(plan->sync_fd, &m, sizeof(m), MSG_NOSIGNAL);
				_exit(0);
			}
		}
	}
}

__attribute__((noreturn)) void
jail_pid1_main(struct jail_plan *plan)
{
	int rc;
	sigset_t all;

	/* The jail dies with warden: SIGKILL when the supervisor goes, and
	 * pid 1's death takes the whole pid namespace with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_NAME, "warden-init", 0, 0, 0);

	/* 2. Wait until the supervisor has written uid_map/gid_map
	 * (SYNC_MAPS_WRITTEN).  EOF means warden died before that. */
	struct jail_msg m;
	if (recv(plan->sync_fd, &m, sizeof(m), 0) != (ssize_t)sizeof(m) || m.kind != JAIL_MSG_GO)
		_exit(125);

	/* Non-dumpable: /proc/1/{environ,mem,maps,...} need ptrace access,
	 * which the sandbox user (no CAP_SYS_PTRACE over warden's mm) lacks.
	 * Only now: a non-dumpable process's /proc files belong to root, and
	 * an unprivileged supervisor could no longer write our uid_map. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* /proc/1/cmdline is readable by anyone regardless of dumpable: wipe
	 * warden's argv and environment strings from this copy of memory. */
	if (plan->wipe_end > plan->wipe_start)
		memset((void *)plan->wipe_start, 0, plan->wipe_end - plan->wipe_start);

	/* 2b. Root mode: we are still host uid 0 (unmapped here) with the
	 * namespace's capabilities.  Drop the caller's supplementary groups
	 * (they would survive into the namespace: root's group 0 could read
	 * group-root files; cf. CVE-2014-8989 for the setgroups side), then
	 * become uid/gid 1000, which maps to host nobody.  The uid change
	 * keeps our capabilities in this namespace: the old uid was not this
	 * namespace's root (0 is unmapped), so the setuid fixup does not
	 * clear them.  Files we create below need a mapped fsuid anyway. */
	if (plan->root_mode) {
		if (setgroups(0, NULL) < 0)
			fail(plan, JAIL_STEP_2B_IDS, errno);
		if (setresgid(1000, 1000, 1000) < 0 || setresuid(1000, 1000, 1000) < 0)
			fail(plan, JAIL_STEP_2B_IDS, errno);
		rearm_pdeathsig(plan);
	}

	/* 3. The mount plan: tmpfs root, binds, /etc, /workspace, /tmp,
	 * /proc, /dev.  The new mount namespace belongs to our new user
	 * namespace, so the kernel already turned every shared mount into a
	 * slave (CL_SHARED_TO_SLAVE): nothing below propagates to the host. */
	for (int i = 0; i < plan->nops; i++) {
		/* host sources first, while the host tree is still in view */
		struct jail_op *op = &plan->ops[i];
		if (op->kind == JAIL_OP_BIND && (op->flags & JAIL_OPF_HOSTPATH)) {
			/* symlink-free by construction (jail/plan.c
			 * safe_resolve): refuse one that appeared since */
			struct open_how how = {.flags = O_PATH | O_CLOEXEC,
					       .resolve = RESOLVE_NO_SYMLINKS |
							  RESOLVE_NO_MAGICLINKS};
			op->fd = (int)syscall(SYS_openat2, AT_FDCWD, op->src, &how, sizeof(how));
			if (op->fd < 0) {
				jail_report(plan->sync_fd, JAIL_MSG_ERROR, JAIL_STEP_3B_MOUNTS,
					    errno, i + 1);
				_exit(125);
			}
		}
	}
	for (int i = 0; i < plan->nops; i++) {
		const struct jail_op *op = &plan->ops[i];
		rc = do_op(op);
		if (rc < 0 && !((op->flags & JAIL_OPF_OPTIONAL) && rc == -ENOENT)) {
			/* status carries the operation's index + 1, so the
			 * supervisor can name the path */
			jail_report(plan->sync_fd, JAIL_MSG_ERROR,
				    i == 0 ? JAIL_STEP_3A_ROOT : JAIL_STEP_3B_MOUNTS, -rc, i + 1);
			_exit(125);
		}
		if (op->fd >= 0)
			close(op->fd);
	}
	if (sethostname("sandbox", 7) < 0)
		fail(plan, JAIL_STEP_3B_MOUNTS, errno);

	/* 3c. pivot_root(".", "."): the old root ends up stacked on the new
	 * one and is detached right away, so no host path stays reachable and
	 * no old-root directory is needed (runc's approach). */
	if (chdir(plan->new_root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		fail(plan, JAIL_STEP_3C_PIVOT, errno);

	/* 3d. Everything but the workspace, /tmp and /dev/shm read-only. */
	if ((rc = make_readonly("/", false)) < 0)
		fail(plan, JAIL_STEP_3D_ROOT_RO, -rc);
	if (chdir(plan->cwd) < 0)
		fail(plan, JAIL_STEP_3D_ROOT_RO, errno);

	/* 4. Network: loopback only. */
	if ((rc = loopback_up()) < 0)
		fail(plan, JAIL_STEP_4_NET, -rc);
	if (plan->net_proxy && (rc = net_sockets(plan)) < 0)
		fail(plan, JAIL_STEP_4_NET, -rc);

	join_cgroup(plan);

	/* 6d-6e for pid 1 too: from here on it needs no privilege, so the
	 * command inherits empty capability sets and NoNewPrivs. */
	if ((rc = drop_caps(plan->last_cap, true)) < 0)
		fail(plan, JAIL_STEP_6D_CAPS, -rc);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(plan, JAIL_STEP_6E_NNP, errno);

	/* 5. Fork the command with every signal blocked, so none is lost
	 * between fork and sigwaitinfo; the child restores the mask.  A raw
	 * clone, not glibc's fork(): we are the child of a raw clone3 from a
	 * possibly multithreaded supervisor (the proxy's threads, a server's
	 * other sandboxes), so a malloc arena lock may have been copied held,
	 * and fork() takes every one of them for its atfork handlers. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	pid_t cmd = (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
	if (cmd < 0)
		fail(plan, JAIL_STEP_5_PID1, errno);
	if (cmd == 0)
		exec_main(plan); /* resets the signal mask itself */
	/* pid 1 keeps no copy of the output pipes: EOF must follow the
	 * command and its descendants, not pid 1. */
	close(plan->stdout_fd);
	close(plan->stderr_fd);
	reap_loop(plan, cmd);
}
