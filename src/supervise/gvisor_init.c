/* warden-init: the first program of every gVisor sandbox (a program of
 * its own, static, no sanitizers; meson.build), copied by warden into
 * the bundle's root, read-only there.
 *
 * runsc given a missing program fails the whole request with 128, so a
 * command needs a starter that makes it 127 (126: not executable).  That
 * was the host's /bin/sh (`exec "$0" "$@"`), which has two faults: an
 * image need not hold a shell (a distroless one does not), and the
 * shell's exec searches the command's own PATH, which the caller, the
 * image's env or a model's sandbox.create env may set to /workspace/bin:
 * the policy had judged `cat` as the system's cat, and the model's
 * /workspace/bin/cat ran under its rule.  This program searches the
 * jail's fixed PATH, as pid 1 does at the container level
 * (jail/cmdplan.c, jail/exec.c):
 *
 *   warden-init exec PROG ARG...   PROG with a slash: execve of it; else
 *                                  execve along JAIL_PATH (ENOENT and
 *                                  ENOTDIR move on, any other error is
 *                                  kept); 127 when not found, else 126,
 *                                  with the container level's message
 *                                  (PROG escaped)
 *   warden-init idle               a session's init: reaps every child
 *                                  (orphans of runsc exec included) and
 *                                  exits 0 on SIGTERM
 *   warden-init serve              a session's init and its resident
 *                                  executor: the same reaping, and each
 *                                  command a message on stdin (requests)
 *                                  and stdout (replies), gvisor_wire.h
 *   warden-init serve vacant       the same for a warm pool's sandbox
 *                                  (first a warm-up, warm_up()):
 *                                  no command until GVW_ATTACH has put
 *                                  the workspace on /workspace (it holds
 *                                  CAP_SYS_ADMIN for that bind only and
 *                                  drops it before any command exists)
 *
 * exec and idle run as the sandbox user (1000) under warden's seccomp
 * profile, inside the sentry.  serve runs as root *inside gVisor* (the
 * sentry's own user namespace; on the host the sentry is nobody) with
 * CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL only, and runs each
 * command as 1000 with every capability gone (bounding set included)
 * and no_new_privs.  Why a different uid is what holds the executor
 * against the command beside it:
 *  - its channel is two host pipes in its own fd table, named nowhere;
 *    the only other way in, /proc/1/fd/N (and /proc/1/mem, environ), is
 *    refused by gVisor's ptrace-access check to another uid without
 *    CAP_SYS_PTRACE, and the executor is also not dumpable;
 *  - ptrace(2) of it is refused by the same check;
 *  - kill(2) of it needs the same uid or CAP_KILL, and pid 1 of a pid
 *    namespace takes no signal it has no handler for anyway;
 *  - its program is /.warden-init, a file of warden's read-only rootfs.
 * What a command writes reaches the executor only as the bytes of its own
 * output pipes, which the executor frames with their length: a command
 * cannot forge a frame.  Its exit status comes from wait4, not from it. */
#include "gvisor_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void
put(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(2, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* A name the model chose, for a human's terminal: printable ASCII as is,
 * every other byte as \xHH (no escape sequence reaches the reader). */
static void
put_escaped(const char *s)
{
	static const char hex[] = "0123456789abcdef";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			put(s, 1);
			continue;
		}
		char b[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
		put(b, 4);
	}
}

static int
idle(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig == SIGTERM)
			return 0;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

/* PROG along the jail's fixed PATH (jail/cmdplan.c's jail_path_dirs:
 * the policy judged the name there, policy/decide.c, whatever PATH the
 * command has); returns only on failure: 127 not found, else 126, with
 * the container level's message (cli/run.c). */
static int
exec_jail(char **argv, char **envp)
{
	static const char *const dirs[] = {"/usr/local/bin",  "/usr/bin",  "/bin",
					   "/usr/local/sbin", "/usr/sbin", "/sbin"};
	const char *prog = argv[0];
	int e = ENOENT;
	if (strchr(prog, '/')) {
		execve(prog, argv, envp);
		e = errno;
	} else {
		for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
			char path[4096];
			size_t d = strlen(dirs[i]), n = strlen(prog);
			if (d + 1 + n >= sizeof(path)) {
				e = ENAMETOOLONG;
				break;
			}
			memcpy(path, dirs[i], d);
			path[d] = '/';
			memcpy(path + d + 1, prog, n + 1);
			execve(path, argv, envp);
			if (errno != ENOENT && errno != ENOTDIR)
				e = errno;
		}
	}
	const char *why = strerror(e);
	put("warden: cannot execute '", 24);
	put_escaped(prog);
	put("': ", 3);
	put(why, strlen(why));
	put("\n", 1);
	return e == ENOENT ? 127 : 126;
}

/* ---- serve: the resident executor ---- */

#define SANDBOX_UID 1000

/* The executor's capability bounding set, from /proc/self/status. */
static unsigned long long bounding;

static int
read_bounding(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *p = strstr(buf, "\nCapBnd:");
	if (!p)
		return -1;
	char *end;
	bounding = strtoull(p + 9, &end, 16);
	return end == p + 9 ? -1 : 0;
}

struct cmd {
	uint32_t id; /* 0: a free slot */
	pid_t pid;   /* the command's process, leader of its own group */
	int fd[3];   /* [1], [2]: read ends of its output pipes; -1: ended */
	int exited;
	int paused; /* GVW_PAUSE: its pipes not read until GVW_RESUME */
};

static struct cmd cmds[GVW_MAX_CMDS];

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "gVisor runs on x86_64 and arm64 only"
#endif

/* serve vacant: the workspace is not attached yet; a RUN now is refused
 * (warden never sends one: it would run in an empty /workspace) */
static int vacant;

/* A reply, whole or not at all: warden gone is the end of the sandbox. */
static void
reply(uint16_t type, uint16_t aux, uint32_t id, const void *p, uint32_t n)
{
	struct gvw_hdr h = {n, type, aux, id};
	const char *parts[2] = {(const char *)&h, p};
	size_t lens[2] = {sizeof(h), n};
	for (int k = 0; k < 2; k++) {
		const char *b = parts[k];
		size_t left = lens[k];
		while (left > 0) {
			ssize_t w = write(1, b, left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				_exit(0);
			b += w;
			left -= (size_t)w;
		}
	}
}

static void
die(const char *msg)
{
	put("warden-init serve: ", 19);
	put(msg, strlen(msg));
	put("\n", 1);
	_exit(3);
}

static struct cmd *
find(uint32_t id)
{
	for (int i = 0; i < GVW_MAX_CMDS; i++)
		if (cmds[i].id == id && id != 0)
			return &cmds[i];
	return NULL;
}

static void
maybe_done(struct cmd *c)
{
	if (c->exited && c->fd[1] < 0 && c->fd[2] < 0) {
		reply(GVW_DONE, 0, c->id, NULL, 0);
		c->id = 0;
	}
}

static void
close_out(struct cmd *c, int s)
{
	if (c->fd[s] >= 0)
		close(c->fd[s]);
	c->fd[s] = -1;
}

/* In the child: become the sandbox user with nothing, then the command.
 * Every step is checked; a failed drop is never a command run as root.
 * The child is vfork's (the sentry copies no address space for it, as
 * for posix_spawn): it shares the executor's memory until execve, so it
 * writes none (envp is passed, not set) and calls only system calls and
 * _exit.  Credentials are per task, so its
 * drop is its own. */
__attribute__((noreturn)) static void
child(char **argv, char **envp, const char *cwd, int out, int err)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL); /* an ignored signal would survive execve */
	setpgid(0, 0);		  /* its own group: KILL ends what it started */
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(126);
	/* The executor's bounding set (read once, serve()): inside gVisor
	 * the four of config.json, so four system calls rather than one per
	 * capability number (each a trip through the sentry on the ptrace
	 * platform).  gvisor_session and gvisor_wire check CapBnd is 0. */
	for (int c = 0; c < 64; c++)
		if ((bounding >> c) & 1 && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
			die("cannot drop the bounding set");
	/* setresuid from 0 to 1000 clears the permitted and effective sets
	 * (no SECBIT_KEEP_CAPS); inheritable and ambient were never set */
	uid_t ru, eu, su;
	if (setgroups(0, NULL) < 0 || setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0 ||
	    setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0 || getresuid(&ru, &eu, &su) < 0 ||
	    ru != SANDBOX_UID || eu != SANDBOX_UID || su != SANDBOX_UID ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("cannot become the sandbox user");
	if (chdir(cwd) < 0) {
		const char *why = strerror(errno);
		put("warden: cannot change to '", 26);
		put_escaped(cwd);
		put("': ", 3);
		put(why, strlen(why));
		put("\n", 1);
		_exit(126);
	}
	_exit(exec_jail(argv, envp));
}

/* The next NUL-terminated string of p[*off..n), or NULL. */
static char *
next_str(char *p, uint32_t n, uint32_t *off)
{
	if (*off >= n)
		return NULL;
	char *s = p + *off;
	char *z = memchr(s, '\0', n - *off);
	if (!z)
		return NULL;
	*off += (uint32_t)(z - s) + 1;
	return s;
}

static void
run(uint32_t id, char *p, uint32_t n)
{
	uint32_t argc, envc, off = 8;
	if (n < 8)
		die("RUN: short");
	memcpy(&argc, p, 4);
	memcpy(&envc, p + 4, 4);
	if (argc < 1 || argc > GVW_MAX_STRINGS || envc > GVW_MAX_STRINGS || find(id))
		die("RUN: bad counts or a known id");
	char *cwd = next_str(p, n, &off);
	if (!cwd || cwd[0] != '/')
		die("RUN: bad cwd");
	char **v = calloc((size_t)argc + envc + 2, sizeof(char *));
	if (!v) {
		int e = ENOMEM;
		reply(GVW_FAIL, 0, id, &e, sizeof(e));
		return;
	}
	for (uint32_t i = 0; i < argc + envc; i++) {
		/* argv then NULL, then env then NULL */
		char *str = next_str(p, n, &off);
		if (!str)
			die("RUN: bad strings");
		v[i < argc ? i : i + 1] = str;
	}
	if (off != n)
		die("RUN: trailing bytes");
	struct cmd *c = find(0);
	for (int i = 0; i < GVW_MAX_CMDS && !c; i++)
		if (cmds[i].id == 0)
			c = &cmds[i];
	int outp[2] = {-1, -1}, errp[2] = {-1, -1};
	if (!c || pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		int e = c ? errno : EAGAIN;
		reply(GVW_FAIL, 0, id, &e, sizeof(e));
		goto out;
	}
	pid_t pid = vfork();
	if (pid == 0)
		child(v, v + argc + 1, cwd, outp[1], errp[1]);
	if (pid < 0) {
		int e = errno;
		reply(GVW_FAIL, 0, id, &e, sizeof(e));
		goto out;
	}
	*c = (struct cmd){.id = id, .pid = pid, .fd = {-1, outp[0], errp[0]}};
	outp[0] = errp[0] = -1;
out:
	for (int k = 0; k < 2; k++) {
		if (outp[k] >= 0)
			close(outp[k]);
		if (errp[k] >= 0)
			close(errp[k]);
	}
	free(v);
}

/* GVW_ATTACH: warden has mounted the workspace on the staging mount's
 * w (in the gofer's mount namespace, with its protected paths read-only
 * there); shown at /workspace by a bind inside gVisor, the staging mount
 * detached and hidden so that the workspace has one path, and CAP_SYS_ADMIN, held
 * for this bind only, dropped from every set before any command runs. */
static int
attach(void)
{
	/* the staging mount detached, and an empty read-only tmpfs over its
	 * mount point: the root file system's gofer has the staging
	 * directory bound at that path on its side, so without it the root
	 * mount would still show the workspace there */
	if (mount(GVW_STAGE_WS, "/workspace", NULL, MS_BIND, NULL) < 0 ||
	    umount2(GVW_STAGE, MNT_DETACH) < 0 ||
	    mount("none", GVW_STAGE, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0555,size=4096") < 0)
		return errno;
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) < 0 ||
	    syscall(SYS_capget, &hdr, data) < 0)
		return errno;
	data[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	data[CAP_SYS_ADMIN / 32].permitted &= ~(1u << (CAP_SYS_ADMIN % 32));
	data[CAP_SYS_ADMIN / 32].inheritable &= ~(1u << (CAP_SYS_ADMIN % 32));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return errno;
	/* the set each command drops, without the one just dropped */
	if (read_bounding() < 0 || (bounding >> CAP_SYS_ADMIN) & 1)
		return EPERM;
	/* mount and umount2, which the sandbox's table left to this bind
	 * (gvisor_oci.c), refused from here on to the executor and, by
	 * inheritance, to every command (EPERM, as the table's rules; a
	 * call of another architecture is refused whole: gVisor serves the
	 * native one only) */
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mount, 2, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_umount2, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return errno;
	vacant = 0;
	return 0;
}

static void
request(const struct gvw_hdr *h, char *p)
{
	struct cmd *c = h->type == GVW_RUN ? NULL : find(h->id);
	switch (h->type) {
	case GVW_RUN:
		if (vacant)
			die("RUN before ATTACH");
		run(h->id, p, h->len);
		return;
	case GVW_ATTACH: {
		if (h->len != 0 || !vacant || find(h->id))
			die("ATTACH: not vacant, or a bad frame");
		int e = attach();
		if (e) {
			reply(GVW_FAIL, 0, h->id, &e, sizeof(e));
			die("ATTACH failed");
		}
		int st = 0;
		reply(GVW_EXIT, 0, h->id, &st, sizeof(st));
		reply(GVW_DONE, 0, h->id, NULL, 0);
		return;
	}
	case GVW_KILL: {
		uint32_t sig;
		if (h->len != 4)
			die("KILL: bad length");
		memcpy(&sig, p, 4);
		if (sig < 1 || sig > 64)
			die("KILL: bad signal");
		/* its group, while the slot is live: the leader's pid is the
		 * group's id until the last member is gone */
		if (c)
			kill(-c->pid, (int)sig);
		return;
	}
	case GVW_PAUSE:
	case GVW_RESUME:
		if (h->len != 0)
			die("PAUSE/RESUME: bad length");
		/* the command's writes then fill its pipe and wait: its own
		 * flood stops it, not the other commands' replies */
		if (c)
			c->paused = h->type == GVW_PAUSE;
		return;
	case GVW_CLOSE:
		if (h->len != 0)
			die("CLOSE: bad length");
		if (c) {
			close_out(c, 1);
			close_out(c, 2);
			maybe_done(c);
		}
		return;
	default:
		die("unknown request");
	}
}

/* A warm pool's sandbox, before it says HELLO (so while it is built, off
 * any caller's path): one command of warden's own, /bin/true as the
 * sandbox user with nothing (the path every command takes, child()),
 * its output to /dev/null, waited for.  The first process a new gVisor
 * sandbox starts pays for the sentry's first address space and ptrace
 * stub and the first loads of the loader and libc through the gofer
 * (~20 ms here, bench/gvisor_pool_bench -v); the caller's command would
 * otherwise pay it.  No workspace exists yet and nothing the model wrote
 * is read; a missing /bin/true (an image without one) is only no warm-up. */
static void
warm_up(void)
{
	static char prog[] = "/bin/true";
	char *argv[] = {prog, NULL};
	char *envp[] = {NULL};
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0)
		return;
	pid_t pid = vfork();
	if (pid == 0)
		child(argv, envp, "/", null, null);
	close(null);
	int st;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

static int
serve(void)
{
	/* not dumpable: no core, and /proc/1's files stay root's even to a
	 * process that somehow shared our uid */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* no command runs unless the set to drop is known */
	if (read_bounding() < 0)
		die("cannot read the capability bounding set");
	signal(SIGPIPE, SIG_IGN);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("signalfd");
	/* fds 0 and 1 are the channel: close-on-exec, so that nothing the
	 * child keeps past its dup2s reaches a command */
	fcntl(0, F_SETFD, FD_CLOEXEC);
	fcntl(1, F_SETFD, FD_CLOEXEC);
	for (int i = 0; i < GVW_MAX_CMDS; i++)
		cmds[i].fd[0] = cmds[i].fd[1] = cmds[i].fd[2] = -1;
	static char rbuf[sizeof(struct gvw_hdr) + GVW_MAX_REQUEST];
	static char obuf[GVW_MAX_OUT];
	size_t have = 0;
	if (vacant)
		warm_up();
	reply(GVW_HELLO, 0, 0, GVW_MAGIC, sizeof(GVW_MAGIC) - 1);
	for (;;) {
		struct pollfd pf[2 + 2 * GVW_MAX_CMDS];
		struct cmd *who[2 + 2 * GVW_MAX_CMDS];
		int stream[2 + 2 * GVW_MAX_CMDS];
		int n = 0;
		pf[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		for (int i = 0; i < GVW_MAX_CMDS; i++)
			for (int s = 1; s <= 2; s++)
				if (cmds[i].id && cmds[i].fd[s] >= 0 && !cmds[i].paused) {
					who[n] = &cmds[i];
					stream[n] = s;
					pf[n++] =
					    (struct pollfd){.fd = cmds[i].fd[s], .events = POLLIN};
				}
		if (poll(pf, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (int k = 2; k < n; k++) {
			if (!pf[k].revents || who[k]->fd[stream[k]] != pf[k].fd)
				continue;
			ssize_t r = read(pf[k].fd, obuf, sizeof(obuf));
			if (r < 0 && errno == EINTR)
				continue;
			if (r > 0) {
				reply(GVW_OUT, (uint16_t)stream[k], who[k]->id, obuf, (uint32_t)r);
			} else {
				close_out(who[k], stream[k]);
				maybe_done(who[k]);
			}
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				if (si.ssi_signo == SIGTERM)
					return 0;
			int st;
			pid_t pid;
			while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
				for (int i = 0; i < GVW_MAX_CMDS; i++)
					if (cmds[i].id && cmds[i].pid == pid && !cmds[i].exited) {
						cmds[i].exited = 1;
						reply(GVW_EXIT, 0, cmds[i].id, &st, sizeof(st));
						maybe_done(&cmds[i]);
					}
		}
		if (pf[0].revents) {
			ssize_t r = read(0, rbuf + have, sizeof(rbuf) - have);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return 0; /* warden closed the channel: the session ends */
			have += (size_t)r;
			for (;;) {
				struct gvw_hdr h;
				if (have < sizeof(h))
					break;
				memcpy(&h, rbuf, sizeof(h));
				if (h.len > GVW_MAX_REQUEST || h.id == 0)
					die("bad frame header");
				if (have < sizeof(h) + h.len)
					break;
				request(&h, rbuf + sizeof(h));
				memmove(rbuf, rbuf + sizeof(h) + h.len, have - sizeof(h) - h.len);
				have -= sizeof(h) + h.len;
			}
		}
	}
}

int
main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "idle"))
		return idle();
	if (argc == 2 && !strcmp(argv[1], "serve"))
		return serve();
	if (argc == 3 && !strcmp(argv[1], "serve") && !strcmp(argv[2], "vacant")) {
		vacant = 1;
		return serve();
	}
	if (argc >= 3 && !strcmp(argv[1], "exec"))
		return exec_jail(argv + 2, environ);
	static const char usage[] = "usage: warden-init exec PROGRAM [ARG...] | warden-init idle | "
				    "warden-init serve [vacant]\n"
				    "(started by warden inside a gVisor sandbox)\n";
	put(usage, sizeof(usage) - 1);
	return 2;
}
