/* jail/pid1: a sandbox's first process, after clone().
 *
 * In a container it is pid 1 of the new pid namespace: it builds the jail
 * (steps 2b-4c), drops its privileges, reports SYNC_READY, then serves
 * SYNC_EXEC: each command gets a process of its own (jail/exec.c), its own
 * channel, and an EXIT report when it ends.  At the process level it is a
 * monitor without namespaces (the child subreaper of its commands), with
 * the same protocol, so both levels share the supervisor's code.
 *
 * The sandbox lives as long as pid 1: when the supervisor's end of the
 * sandbox channel closes (warden destroyed the sandbox, or died), pid 1
 * exits and the kernel kills everything else in the pid namespace.  A
 * command marked SYNC_EXEC_LAST (a one-shot run) ends the sandbox the same
 * way once it has ended.
 *
 * Nothing here allocates or formats (CONTRIBUTING.md, "Code"): pid 1 is a raw clone of
 * a possibly multithreaded supervisor, where a malloc lock may have been
 * copied held; for the same reason it calls no libc wrapper that a
 * sanitizer intercepts (jail/raw.h; tests/integration/child_calls.py).
 * Failures travel as struct sync_msg records. */
#include "jail/jail.h"
#include "jail/seccomp.h"
#include "jail/raw.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The most commands one sandbox runs at once (a session's detached
 * processes included); SYNC_EXEC beyond it is answered with EXIT, err
 * EAGAIN, and nothing runs. */
#define PID1_MAX_RUNNING 64

void
jail_report_error(struct sync_chan *c, int step, int err, int op_index)
{
	struct sync_msg m = {.kind = SYNC_ERROR, .step = step, .err = err, .status = op_index};
	/* one record, or nothing if the supervisor is gone */
	sync_send(c, &m, NULL, 0);
}

__attribute__((noreturn)) static void
fail(struct sync_chan *c, int step, int err)
{
	jail_report_error(c, step, err, 0);
	raw_exit(125);
}

/* ---- set-up ---- */

/* Bring up lo in the new network namespace: the only interface there. */
static int
loopback_up(void)
{
	int s = raw_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
	int rc = raw_ioctl(s, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
	raw_close(s);
	return rc;
}

/* 4a. Egress mode: the proxy's sockets, made here so they belong to the
 * sandbox's network namespace (its loopback is the only interface), then
 * handed to the supervisor, which serves them from outside the jail
 * (SYNC_NET_READY).  Connections that arrive before it starts wait in the
 * listen backlog, so commands need not wait for it.  Binding port 53
 * needs CAP_NET_BIND_SERVICE, which we still hold over this namespace. */
static int
net_socket(int type, uint16_t port)
{
	int fd = raw_socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	raw_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (raw_bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && raw_listen(fd, 256) < 0)) {
		int e = errno;
		raw_close(fd);
		return -e;
	}
	return fd;
}

static int
net_sockets(struct sync_chan *c)
{
	int fds[3] = {net_socket(SOCK_STREAM, JAIL_PROXY_HTTP_PORT),
		      net_socket(SOCK_STREAM, JAIL_PROXY_SOCKS_PORT),
		      net_socket(SOCK_DGRAM, JAIL_DNS_PORT)};
	int rc = 0;
	for (int i = 0; i < 3; i++)
		if (fds[i] < 0 && rc == 0)
			rc = fds[i];
	if (rc == 0) {
		struct sync_msg m = {.kind = SYNC_NET_READY};
		rc = sync_send(c, &m, fds, 3);
	}
	for (int i = 0; i < 3; i++) /* the supervisor holds them now */
		if (fds[i] >= 0)
			raw_close(fds[i]);
	return rc;
}

/* 4b. Join the sandbox's cgroup.  The supervisor creates it while we build
 * the mounts (it overlaps with our set-up), then sends SYNC_CGROUP.  On v1
 * the message carries each hierarchy's tasks file and we move ourselves by
 * writing "0": moving oneself, single-threaded, skips the global
 * cgroup_threadgroup_rwsem write lock (cgroup_procs_write_start's pid == 0
 * case), whose RCU grace period makes a supervisor-side write of our pid
 * cost ~10 ms.  On v2 clone3 already put us there (CLONE_INTO_CGROUP).
 * Then a cgroup namespace rooted here, so /proc/self/cgroup shows "/" and
 * nothing of the host's layout; it needs CAP_SYS_ADMIN, so it comes before
 * the capabilities go. */
static void
join_cgroup(const struct jail_plan *plan, struct sync_chan *c)
{
	struct sync_msg m;
	int fds[SYNC_MAX_FDS], nfds;
	if (sync_recv(c, &m, fds, &nfds, 0) < 0 || m.kind != SYNC_CGROUP)
		raw_exit(125); /* the supervisor is gone or gave up on us */
	for (int i = 0; i < nfds; i++) {
		if (raw_write(fds[i], "0", 1) != 1)
			fail(c, JAIL_STEP_4B_CGROUP, errno);
		raw_close(fds[i]);
	}
	if (plan->container && unshare(CLONE_NEWCGROUP) < 0)
		fail(c, JAIL_STEP_4B_CGROUP, errno);
}

/* Decimal digits of v into p (no formatting library after clone). */
static char *
put_dec(char *p, long long v)
{
	char tmp[24];
	int n = 0;
	bool neg = v < 0;
	unsigned long long u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (neg)
		*p++ = '-';
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* 2c. A time namespace: commands (created after this unshare) see the
 * monotonic and boot clocks start near one second, so the host's uptime,
 * and with it when the host booted, does not leak into the sandbox
 * (time_namespaces(7)).  The offsets may only be written before any
 * process enters the namespace, and need CAP_SYS_TIME over our user
 * namespace; and /proc/self/timens_offsets must still be ours to open:
 * so right after SYNC_GO, while pid 1 is dumpable and has its ids (a
 * non-dumpable process's /proc files belong to host root).  A kernel
 * without CONFIG_TIME_NS (EINVAL) runs without; SYNC_READY says which. */
static int
time_namespace(void)
{
	if (unshare(CLONE_NEWTIME) < 0)
		return errno == EINVAL ? 0 : -errno;
	int applied = 1;
	struct timespec mono, boot;
	raw_clock_gettime(CLOCK_MONOTONIC, &mono);
	raw_clock_gettime(CLOCK_BOOTTIME, &boot);
	char buf[128], *p = buf;
	static const char m[] = "monotonic ", b[] = "boottime ";
	memcpy(p, m, sizeof(m) - 1);
	p = put_dec(p + sizeof(m) - 1, -(long long)mono.tv_sec + 1);
	memcpy(p, " 0\n", 3);
	p += 3;
	memcpy(p, b, sizeof(b) - 1);
	p = put_dec(p + sizeof(b) - 1, -(long long)boot.tv_sec + 1);
	memcpy(p, " 0\n", 3);
	p += 3;
	int fd = raw_open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = raw_write(fd, buf, (size_t)(p - buf)) == p - buf ? applied : -errno;
	raw_close(fd);
	return rc;
}

/* CLOCK_MONOTONIC in ns (the vDSO: no system call, nothing allocated). */
static uint64_t
now_ns(void)
{
	struct timespec ts;
	raw_clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Steps 2b-3d: ids, the mount plan, pivot_root, read-only root. */
static void
build_root(struct jail_plan *plan, struct sync_chan *c, uint64_t *t)
{
	int rc;
	/* 2b. Root mode: we are still host uid 0 (unmapped here) with the
	 * namespace's capabilities.  Drop the caller's supplementary groups
	 * (they would survive into the namespace: root's group 0 could read
	 * group-root files; cf. CVE-2014-8989 for the setgroups side), then
	 * become uid/gid 1000, which maps to host nobody.  The uid change
	 * keeps our capabilities in this namespace: the old uid was not this
	 * namespace's root (0 is unmapped), so the setuid fixup does not
	 * clear them.  Files we create below need a mapped fsuid anyway. */
	if (plan->root_mode) {
		if ((rc = jail_set_ids(1000, 1000)) < 0)
			fail(c, JAIL_STEP_2B_IDS, -rc);
		jail_rearm_pdeathsig(c->fd);
	}

	/* 3. The mount plan: tmpfs root, binds, /etc, /workspace, /tmp,
	 * /proc, /dev.  The new mount namespace belongs to our new user
	 * namespace, so the kernel already turned every shared mount into a
	 * slave (CL_SHARED_TO_SLAVE): nothing below propagates to the host. */
	for (int i = 0; i < plan->nops; i++) {
		/* host sources first, while the host tree is still in view */
		struct jail_op *op = &plan->ops[i];
		if (op->kind == JAIL_OP_BIND && (op->flags & JAIL_OPF_HOSTPATH)) {
			/* symlink-free by construction (jail/plan.c resolves
			 * every source): refuse one that appeared since */
			struct open_how how = {.flags = O_PATH | O_CLOEXEC,
					       .resolve =
						   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
			op->fd = (int)syscall(SYS_openat2, AT_FDCWD, op->src, &how, sizeof(how));
			if (op->fd < 0) {
				jail_report_error(c, JAIL_STEP_3B_MOUNTS, errno, i + 1);
				raw_exit(125);
			}
		}
	}
	for (int i = 0; i < plan->nops; i++) {
		const struct jail_op *op = &plan->ops[i];
		if (op->flags & JAIL_OPF_LATE)
			continue; /* after SYNC_ATTACH (attach_workspace) */
		rc = jail_op_do(op);
		if (rc < 0 && !((op->flags & JAIL_OPF_OPTIONAL) && rc == -ENOENT)) {
			/* the operation's index + 1, so the supervisor can name
			 * the path */
			jail_report_error(c, i == 0 ? JAIL_STEP_3A_ROOT : JAIL_STEP_3B_MOUNTS, -rc,
					  i + 1);
			raw_exit(125);
		}
		if (op->fd >= 0)
			raw_close(op->fd);
	}
	if (sethostname("sandbox", 7) < 0)
		fail(c, JAIL_STEP_3B_MOUNTS, errno);
	t[SYNC_T_MOUNTS] = now_ns();

	/* 3c. pivot_root(".", "."): the old root ends up stacked on the new
	 * one and is detached right away, so no host path stays reachable and
	 * no old-root directory is needed (runc's approach). */
	if (chdir(plan->new_root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		fail(c, JAIL_STEP_3C_PIVOT, errno);

	/* 3d. Everything but the workspace, /tmp and /dev/shm read-only. */
	if ((rc = jail_make_readonly("/", false)) < 0)
		fail(c, JAIL_STEP_3D_ROOT_RO, -rc);
}

/* 6d-6e for pid 1 too: from here on it needs no privilege, so every
 * command inherits empty capability sets and NoNewPrivs. */
static void
drop_privileges(const struct jail_plan *plan, struct sync_chan *c)
{
	int rc;
	if ((rc = jail_drop_caps(plan->last_cap, true)) < 0)
		fail(c, JAIL_STEP_6D_CAPS, -rc);
	if (jail_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(c, JAIL_STEP_6E_NNP, errno);
}

/* 3e. A vacant sandbox's workspace (SYNC_ATTACH): the detached tree the
 * supervisor made (an idmapped clone of the host directory) moved onto
 * /workspace, which the plan left empty; the plan's late operations (the
 * protected paths), then the capabilities go as they would have at
 * set-up, and SYNC_ATTACHED.  The root is read-only already: mounting
 * over its directory writes nothing to it. */
struct pid1;
static void commands_ready(struct pid1 *p);

static void
attach_workspace(struct pid1 *p, struct jail_plan *plan, struct sync_chan *c, int tree)
{
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, "/workspace", MOVE_MOUNT_F_EMPTY_PATH) <
	    0) {
		jail_report_error(c, JAIL_STEP_3E_ATTACH, errno, 0);
		raw_exit(125);
	}
	raw_close(tree);
	for (int i = 0; i < plan->nops; i++) {
		const struct jail_op *op = &plan->ops[i];
		if (!(op->flags & JAIL_OPF_LATE))
			continue;
		int rc = jail_op_do(op);
		if (rc < 0) {
			jail_report_error(c, JAIL_STEP_3E_ATTACH, -rc, i + 1);
			raw_exit(125);
		}
	}
	drop_privileges(plan, c);
	/* what every command enters (seccomp on pid 1, the Landlock ruleset)
	 * only now: the ruleset opens /workspace, which must be the attached
	 * tree, and move_mount above is a call the filter refuses */
	commands_ready(p);
	plan->vacant = false;
	struct sync_msg m = {.kind = SYNC_ATTACHED};
	if (sync_send(c, &m, NULL, 0) < 0)
		raw_exit(125);
}

/* Returns SYNC_READY_* bits of what is in force; t gets the step times. */
static int
setup(struct jail_plan *plan, struct sync_chan *c, uint64_t *t)
{
	int rc, in_force = 0;
	if (plan->container && plan->time_ns) {
		if ((rc = time_namespace()) < 0)
			fail(c, JAIL_STEP_2C_TIME, -rc);
		if (rc > 0)
			in_force |= SYNC_READY_TIME_NS;
	}
	/* Non-dumpable: /proc/1/{environ,mem,maps,...} need ptrace access,
	 * which the sandbox user (no CAP_SYS_PTRACE over warden's mm) lacks.
	 * Only now: a non-dumpable process's /proc files belong to root, and
	 * an unprivileged supervisor could no longer write our uid_map. */
	jail_prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* /proc/PID/cmdline is readable by anyone regardless of dumpable:
	 * wipe warden's argv and environment strings from this copy. */
	if (plan->wipe_end > plan->wipe_start)
		memset((void *)plan->wipe_start, 0, plan->wipe_end - plan->wipe_start);
	if (plan->container) {
		build_root(plan, c, t);
		t[SYNC_T_ROOT] = now_ns();
		/* 4. Network: loopback only; 4a the proxy's listeners. */
		if ((rc = loopback_up()) < 0)
			fail(c, JAIL_STEP_4_NET, -rc);
		if (plan->net_proxy && (rc = net_sockets(c)) < 0)
			fail(c, JAIL_STEP_4_NET, -rc);
		t[SYNC_T_NET] = now_ns();
	} else {
		/* The process level has no pid namespace: orphans of the
		 * commands come back to this monitor (it is their subreaper),
		 * so none escapes the end of its command unseen. */
		if (jail_prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
			fail(c, JAIL_STEP_5_PID1, errno);
	}
	join_cgroup(plan, c);
	t[SYNC_T_CGROUP] = now_ns();
	/* A vacant sandbox keeps CAP_SYS_ADMIN over its namespaces until its
	 * workspace is attached (move_mount needs it); no command runs
	 * before that (the protocol refuses EXEC in VACANT). */
	if (plan->container && !plan->vacant)
		drop_privileges(plan, c);
	return in_force;
}

/* ---- commands ---- */

struct running {
	pid_t pid; /* 0: free slot */
	unsigned flags;
	struct sync_chan chan;
};

struct pid1 {
	struct jail_plan *plan;
	struct sync_chan sb; /* the sandbox channel */
	int ep, sigfd;
	int landlock; /* the commands' Landlock ruleset, or -1 */
	char *stack;  /* where a command's process runs until its execve */
	size_t stack_len;
	struct running run[PID1_MAX_RUNNING];
};

static struct running *
find_pid(struct pid1 *p, pid_t pid)
{
	for (int i = 0; i < PID1_MAX_RUNNING; i++)
		if (p->run[i].pid == pid && pid > 0)
			return &p->run[i];
	return NULL;
}

static bool
is_running(const struct pid1 *p, pid_t pid)
{
	for (int i = 0; i < PID1_MAX_RUNNING; i++)
		if (p->run[i].pid == pid)
			return true;
	return false;
}

/* Process level: kill what ended commands left behind.  Their orphans
 * were reparented to us (the subreaper): our children that are not a
 * running command are such leftovers.  Each is killed and reaped here by
 * its own pid (never a running command's), and the list read again until
 * empty, so a leftover's own orphans come back and go too.  Read into a
 * stack buffer: no allocation after clone. */
static void
kill_leftovers(struct pid1 *p)
{
	char path[64] = "/proc/self/task/", *q = path + 16, buf[4096];
	pid_t self = (pid_t)syscall(SYS_gettid);
	char digits[16];
	int nd = 0;
	do {
		digits[nd++] = (char)('0' + self % 10);
		self /= 10;
	} while (self);
	while (nd)
		*q++ = digits[--nd];
	memcpy(q, "/children", 10);
	for (int round = 0; round < 256; round++) {
		int fd = raw_open(path, O_RDONLY | O_CLOEXEC, 0);
		if (fd < 0)
			return;
		ssize_t n = raw_read(fd, buf, sizeof(buf) - 1);
		raw_close(fd);
		if (n <= 0)
			return;
		buf[n] = '\0';
		bool any = false;
		for (const char *s = buf; *s;) {
			pid_t v = jail_next_pid(&s);
			if (v > 0 && !is_running(p, v)) {
				raw_kill(v, SIGKILL);
				raw_wait4(v, NULL, __WALL, NULL);
				any = true;
			}
		}
		if (!any)
			return;
	}
}

/* The command's process starts here, on pid 1's spare stack. */
struct spawn {
	const struct jail_plan *plan;
	struct jail_exec_args x;
};

static int
command_entry(void *arg)
{
	const struct spawn *s = arg;
	jail_exec_main(s->plan, &s->x);
}

/* Start the command's process.  It shares pid 1's memory and pid 1 waits
 * (CLONE_VM|CLONE_VFORK, what posix_spawn does) until it has exec'd or
 * died: no page tables to copy and no copy-on-write faults on either
 * side.  Measured (bench/step_bench, a process with 8 MiB of heap like
 * the supervisor whose copy pid 1 is): ~140 us for fork, exit and wait
 * against ~10 us, and pid 1's later writes fault no more (~1.5 us a
 * page).  The process writes only
 * its own stack (errno aside, which pid 1 does not read across the
 * call); it is a raw clone, not glibc's fork(): we are a raw clone of a
 * possibly multithreaded supervisor, and fork() would take malloc locks
 * that may have been copied held.
 *
 * Sanitizer builds fork instead: their runtimes keep per-thread state
 * (TSan's fd table, ASan's stack bounds) in memory the command's process
 * would share and change under pid 1. */
#if WD_SANITIZED
#define PID1_SPAWN_FLAGS SIGCHLD
#else
#define PID1_SPAWN_FLAGS (CLONE_VM | CLONE_VFORK | SIGCHLD)
#endif

static pid_t
spawn_command(struct pid1 *p, const int *fds)
{
	struct jail_cmd cmd;
	struct spawn s = {
	    .plan = p->plan,
	    .x = {fds[SYNC_FD_STDIN], fds[SYNC_FD_STDOUT], fds[SYNC_FD_STDERR],
		  fds[SYNC_FD_CHANNEL], p->landlock, &cmd, 0},
	};
	int rc = jail_cmd_plan_map(fds[SYNC_FD_PLAN], &cmd);
	if (rc < 0)
		s.x.cmd_err = -rc; /* the command's process reports it */
#if WD_SANITIZED
	/* a raw fork, not glibc's clone(): TSan's interceptor of clone() takes
	 * its thread registry lock, which this raw clone of a multithreaded
	 * supervisor may hold copied (pid 1 hung there under TSan) */
	pid_t pid = (pid_t)syscall(SYS_clone, PID1_SPAWN_FLAGS, 0, 0, 0, 0);
	if (pid == 0)
		syscall(SYS_exit_group, command_entry(&s));
#else
	pid_t pid = clone(command_entry, p->stack + p->stack_len, PID1_SPAWN_FLAGS, &s);
#endif
	if (pid < 0)
		pid = -errno;
	jail_cmd_plan_unmap(&cmd);
	return pid;
}

static void
start_command(struct pid1 *p, const struct sync_msg *m, int *fds)
{
	struct running *r = NULL;
	for (int i = 0; !r && i < PID1_MAX_RUNNING; i++)
		if (p->run[i].pid == 0)
			r = &p->run[i];
	struct sync_chan chan;
	sync_chan_init(&chan, fds[SYNC_FD_CHANNEL], SYNC_PID1, SYNC_S_SENT);
	/* Every signal is blocked here; the command restores its mask. */
	pid_t pid = r ? spawn_command(p, fds) : -EAGAIN;
	/* pid 1 keeps no copy of the command's stdio: EOF must follow the
	 * command and its descendants, not pid 1. */
	for (int i = 0; i < SYNC_FD_CHANNEL; i++)
		if (fds[i] >= 0)
			raw_close(fds[i]);
	if (pid < 0) {
		struct sync_msg x = {.kind = SYNC_EXIT, .err = -pid, .seq = m->seq};
		sync_send(&chan, &x, NULL, 0);
		raw_close(chan.fd);
		if (m->flags & SYNC_EXEC_LAST)
			raw_exit(0);
		return;
	}
	r->pid = pid;
	r->flags = m->flags;
	r->chan = chan;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = chan.fd};
	raw_epoll_ctl(p->ep, EPOLL_CTL_ADD, chan.fd, &ev);
}

static void
end_command(struct pid1 *p, struct running *r, int status, const struct rusage *ru)
{
	struct sync_msg x = {
	    .kind = SYNC_EXIT,
	    .status = status,
	    .cpu_us = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000ULL +
		      (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec),
	    .maxrss_kb = (uint64_t)ru->ru_maxrss,
	};
	pid_t pgid = r->pid;
	unsigned flags = r->flags;
	/* The report goes out first: the supervisor is waiting for it. */
	sync_send(&r->chan, &x, NULL, 0);
	raw_epoll_ctl(p->ep, EPOLL_CTL_DEL, r->chan.fd, NULL);
	raw_close(r->chan.fd);
	r->pid = 0;
	if (flags & SYNC_EXEC_LAST && p->plan->container)
		raw_exit(0); /* the whole pid namespace goes with pid 1 */
	/* A detached command's background processes live on until the
	 * sandbox ends (sync.h, SYNC_EXEC_DETACH). */
	if (flags & SYNC_EXEC_DETACH)
		return;
	/* What the command started ends with it: its process group, and at
	 * the process level whatever it orphaned. */
	raw_kill(-pgid, SIGKILL);
	if (!p->plan->container)
		kill_leftovers(p);
	if (flags & SYNC_EXEC_LAST)
		raw_exit(0);
}

static void
reap(struct pid1 *p)
{
	for (;;) {
		int st;
		struct rusage ru;
		pid_t pid = raw_wait4(-1, &st, WNOHANG | __WALL, &ru);
		if (pid <= 0)
			return;
		struct running *r = find_pid(p, pid);
		if (r)
			end_command(p, r, st, &ru);
	}
}

static void
on_signal(struct pid1 *p)
{
	struct signalfd_siginfo si;
	bool child = false;
	while (raw_read(p->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			child = true;
			continue;
		}
		/* anything else sent to pid 1 goes on to the commands */
		for (int i = 0; i < PID1_MAX_RUNNING; i++)
			if (p->run[i].pid > 0)
				raw_kill(p->run[i].pid, (int)si.ssi_signo);
	}
	if (child)
		reap(p);
}

static void
on_sandbox_channel(struct pid1 *p)
{
	struct sync_msg m;
	int fds[SYNC_MAX_FDS], nfds;
	int rc = sync_recv(&p->sb, &m, fds, &nfds, MSG_DONTWAIT);
	if (rc == -EAGAIN || rc == -EPROTO)
		return; /* nothing, or a record the protocol refuses (dropped) */
	if (rc < 0) {
		/* The supervisor is gone (or destroys the sandbox): it ends with
		 * pid 1.  A container's namespace takes everything along; the
		 * process level has none, so its monitor ends what the commands
		 * started first. */
		if (!p->plan->container) {
			for (int i = 0; i < PID1_MAX_RUNNING; i++)
				if (p->run[i].pid > 0) {
					raw_kill(-p->run[i].pid, SIGKILL);
					raw_kill(p->run[i].pid, SIGKILL);
					p->run[i].pid = 0;
				}
			kill_leftovers(p);
		}
		raw_exit(0);
	}
	if (m.kind == SYNC_EXEC)
		start_command(p, &m, fds);
	else if (m.kind == SYNC_ATTACH)
		attach_workspace(p, p->plan, &p->sb, fds[0]);
}

static void
on_exec_channel(struct pid1 *p, int fd)
{
	struct running *r = NULL;
	for (int i = 0; i < PID1_MAX_RUNNING && !r; i++)
		if (p->run[i].pid > 0 && p->run[i].chan.fd == fd)
			r = &p->run[i];
	if (!r)
		return;
	struct sync_msg m;
	int fds[SYNC_MAX_FDS], nfds;
	int rc = sync_recv(&r->chan, &m, fds, &nfds, MSG_DONTWAIT);
	if (rc == -EAGAIN || rc == -EPROTO)
		return;
	if (rc < 0) {
		/* the supervisor gave the command up: end it */
		raw_epoll_ctl(p->ep, EPOLL_CTL_DEL, fd, NULL);
		raw_kill(-r->pid, SIGKILL);
		raw_kill(r->pid, SIGKILL);
		return;
	}
	if (m.kind == SYNC_KILL && m.status > 0 && m.status < NSIG) {
		raw_kill(-r->pid, m.status);
		raw_kill(r->pid, m.status);
	}
}

__attribute__((noreturn)) static void
serve(struct pid1 *p)
{
	struct epoll_event ev = {.events = EPOLLIN};
	p->ep = raw_epoll_create1(EPOLL_CLOEXEC);
	unsigned long all = ~0UL; /* raw: see jail_prctl */
	p->sigfd = (int)syscall(SYS_signalfd4, -1, &all, sizeof(all), SFD_CLOEXEC | SFD_NONBLOCK);
	if (p->ep < 0 || p->sigfd < 0)
		raw_exit(125);
	ev.data.fd = p->sb.fd;
	raw_epoll_ctl(p->ep, EPOLL_CTL_ADD, p->sb.fd, &ev);
	ev.data.fd = p->sigfd;
	raw_epoll_ctl(p->ep, EPOLL_CTL_ADD, p->sigfd, &ev);
	for (;;) {
		struct epoll_event evs[16];
		int n = raw_epoll_wait(p->ep, evs, 16, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == p->sigfd)
				on_signal(p);
			else if (fd == p->sb.fd)
				on_sandbox_channel(p);
			else
				on_exec_channel(p, fd);
		}
	}
}

/* What every command would otherwise redo, done once before READY: the
 * signal dispositions back to the default (SIG_IGN survives execve), the
 * Landlock ruleset, a stack for the commands' processes, and the seccomp
 * filter, which pid 1 takes on itself so that every command inherits it.
 * pid 1's own work from here on (epoll, sendmsg, clone without namespace
 * flags, wait4, kill, reading /proc) is nothing the filter refuses. */
static void
commands_ready(struct pid1 *p)
{
	struct jail_plan *plan = p->plan;
	int rc;
	jail_default_signals();
	p->landlock = -1;
	if (plan->landlock_abi > 0) {
		struct wd_err e = {0};
		p->landlock = jail_landlock_ruleset(&plan->landlock, plan->landlock_abi, &e);
		if (p->landlock < 0)
			fail(&p->sb, JAIL_STEP_6F_LANDLOCK, e.sys_errno ? e.sys_errno : EPERM);
	}
	/* 256 KiB and a guard page below it: step 6 needs a few KiB. */
	p->stack_len = 256 << 10;
	char *st = raw_mmap(NULL, p->stack_len + 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (st == MAP_FAILED || raw_mprotect(st, 4096, PROT_NONE) < 0)
		fail(&p->sb, JAIL_STEP_5_PID1, errno);
	p->stack = st + 4096;
	/* 6e-6h for every command: seccomp needs NoNewPrivs (a container's
	 * pid 1 has it already; the process level's monitor takes it here,
	 * which its commands would take at step 6e anyway). */
	if (jail_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(&p->sb, JAIL_STEP_6E_NNP, errno);
	if ((rc = jail_seccomp_load(plan->seccomp)) < 0)
		fail(&p->sb, JAIL_STEP_6H_SECCOMP, -rc);
}

/* Keep only what pid 1 needs: its channel, /dev/null and the plan's
 * descriptors.  A raw clone copies every descriptor of the supervisor,
 * and a library supervisor has many: other sandboxes' channels, other
 * commands' output pipes, the keeper's pipe.  Held here, they would keep
 * another command's output from reaching EOF, or another sandbox alive
 * after warden died (each holding the other's channel open).  No
 * allocation: the list lives on the stack. */
static void
close_others(const struct jail_plan *plan)
{
	int keep[JAIL_MAX_OPS + 2], n = 0;
	keep[n++] = plan->sync_fd;
	if (plan->devnull_fd >= 0)
		keep[n++] = plan->devnull_fd;
	for (int i = 0; i < plan->nops; i++)
		if (plan->ops[i].fd >= 0)
			keep[n++] = plan->ops[i].fd;
	for (int i = 1; i < n; i++) /* insertion sort: n is small */
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned lo = 0;
	for (int i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0U);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0U);
}

__attribute__((noreturn)) void
jail_pid1_main(struct jail_plan *plan)
{
	jail_child_sanitizer();
	close_others(plan);
	/* 0, 1 and 2 taken (by /dev/null), so that no descriptor pid 1 keeps
	 * or receives lands there: a command's process dup2()s its stdio onto
	 * them, which would otherwise close its own channel or the Landlock
	 * ruleset first. */
	for (int fd = 0; fd < 3 && plan->devnull_fd >= 0; fd++)
		if (raw_fcntl(fd, F_GETFD, 0) < 0) /* free: not one close_others kept */
			raw_dup2(plan->devnull_fd, fd);
	struct pid1 p;
	memset(&p, 0, sizeof(p));
	p.plan = plan;
	sync_chan_init(&p.sb, plan->sync_fd, SYNC_PID1, SYNC_S_CLONED);

	/* Every signal blocked from the start (read later through a
	 * signalfd), so none is lost and none kills pid 1 by default. */
	jail_block_signals();
	/* No PDEATHSIG: it fires when the *thread* that cloned us exits, and
	 * a sandbox may outlive the thread that created it.  pid 1 ends on
	 * EOF of the sandbox channel instead, which only warden's death (or
	 * destroying the sandbox) brings, and its death takes the whole pid
	 * namespace with it. */
	jail_prctl(PR_SET_NAME, "warden-init", 0, 0, 0);

	/* 2. Wait until the supervisor has written uid_map/gid_map
	 * (SYNC_GO).  EOF means warden died before that. */
	struct sync_msg m;
	int fds[SYNC_MAX_FDS], nfds;
	if (sync_recv(&p.sb, &m, fds, &nfds, 0) < 0 || m.kind != SYNC_GO)
		raw_exit(125);

	/* a vacant sandbox says so instead: it waits for SYNC_ATTACH, and
	 * makes its commands' seccomp and Landlock state then */
	struct sync_msg ready = {.kind = plan->vacant ? SYNC_VACANT : SYNC_READY};
	ready.t_ns[SYNC_T_GO] = now_ns();
	ready.status = setup(plan, &p.sb, ready.t_ns);
	if (!plan->vacant)
		commands_ready(&p);
	ready.t_ns[SYNC_T_COMMANDS] = now_ns();
	if (sync_send(&p.sb, &ready, NULL, 0) < 0)
		raw_exit(125);
	serve(&p);
}
