/* supervise/run: wd_run(), the supervisor of one sandbox (DESIGN.md §5
 * steps 1, 2 and 7).  warden stays outside the jail; it owns the cgroup,
 * the output pipes, the clock and the decision to kill. */
#include "supervise/supervise.h"
#include "cgroup/cgroup.h"
#include "jail/jail.h"
#include "net/net.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static int
sys_clone3(struct clone_args *a)
{
	return (int)syscall(SYS_clone3, a, sizeof(*a));
}

static void
make_id(char out[17])
{
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t t = wd_now_ns() ^ ((uint64_t)getpid() << 32);
		memcpy(r, &t, sizeof(r));
	}
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
}

/* ---- the janitor: removes the cgroup if warden dies mid-run ----
 * pid 1 dies with warden (PDEATHSIG), and with it the whole pid namespace;
 * mounts live only in the sandbox's mount namespace and vanish with it.
 * The cgroup directories are the one thing on the host that would stay.
 * A small forked process, started before the cgroup exists and knowing
 * only its id, waits on a pipe: one byte means warden cleaned up itself,
 * EOF means warden is gone (or handed the clean-up over) and the janitor
 * removes whatever exists of warden/<id>. */
static pid_t
janitor_start(const char *id, int *notify_fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t j = fork();
	if (j < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (j == 0) {
		/* Keep nothing of warden's but the pipe: holding the output
		 * pipes or the sync socket would delay EOFs elsewhere. */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (dup2(p[0], 3) < 0 || null < 0)
			_exit(1);
		/* nor the caller's stdio: $(warden ...) must not wait for us */
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		syscall(SYS_close_range, 4U, ~0U, 0U);
		(void)!chdir("/");
		/* Own session: a terminal's ^C to warden's group spares it. */
		setsid();
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		char c;
		ssize_t n;
		while ((n = read(3, &c, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(0);
		cgroup_remove_id(id);
		/* and what earlier, killed runs may have left (only empty,
		 * unlocked directories go) */
		cgroup_sweep_stale();
		_exit(0);
	}
	close(p[0]);
	*notify_fd = p[1];
	return j;
}

static void
janitor_done(pid_t j, int notify_fd)
{
	if (j <= 0)
		return;
	(void)!write(notify_fd, "x", 1);
	close(notify_fd);
	while (waitpid(j, NULL, 0) < 0 && errno == EINTR)
		;
}

/* ---- process level: nothing may outlive the command ---- */

/* Children the calling process had before the run: an embedding program's
 * own, never the sandbox's; kill_descendants spares them. */
struct kids {
	pid_t pid[256];
	int n;
};

static void
children_of_self(struct kids *k)
{
	char path[64], buf[4096];
	k->n = 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
	if (wd_read_file_at(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return;
	for (char *t = strtok(buf, " \n"); t && k->n < (int)WD_ARRAY_SIZE(k->pid);
	     t = strtok(NULL, " \n"))
		k->pid[k->n++] = (pid_t)atoi(t);
}

/* Kill every descendant left behind (warden is their subreaper, so orphans
 * come back to us): read our children lists and SIGKILL, until none.  The
 * janitor and the children we had before the run are spared. */
static void
kill_descendants(pid_t spare, const struct kids *before)
{
	for (int round = 0; round < 64; round++) {
		struct kids now;
		children_of_self(&now);
		bool any = false;
		for (int k = 0; k < now.n; k++) {
			pid_t p = now.pid[k];
			bool old = false;
			for (int i = 0; before && i < before->n && !old; i++)
				old = before->pid[i] == p;
			if (p <= 0 || p == spare || old)
				continue;
			kill(p, SIGKILL);
			waitpid(p, NULL, 0);
			any = true;
		}
		if (!any)
			return;
	}
}

struct sup {
	const wd_spec *spec;
	struct cgroup *cg;
	int pidfd;
	pid_t pid;
	int out_r, err_r, sync_fd;
	struct capture cap[3];
	bool pid_done, timed_out, exec_failed;
	int exec_errno;
	int got_exit;      /* pid 1 reported the command's wait status */
	int cmd_status;    /* raw wait status */
	uint64_t cmd_cpu_us, cmd_maxrss_kb;
	int setup_step, setup_errno, setup_op;
	int killed_by;     /* signal warden received and acted on */
	bool closed_late;
	pid_t janitor;
	struct kids before; /* process level: children we must not touch */
	struct net_proxy *proxy;
	bool proxy_running;
	/* --stdin from a terminal: warden relays, the sandbox never gets the
	 * terminal itself (see wd_run) */
	int tty_in, relay_w;
	char relay_buf[4096];
	size_t relay_len, relay_off;
	siginfo_t info;
	struct rusage ru;
};

static void
sandbox_kill(struct sup *s)
{
	/* pid 1's death takes the whole pid namespace (grandchildren
	 * included); the cgroup kill catches anything in process mode. */
	syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
	if (s->cg)
		cgroup_kill(s->cg);
	else if (s->spec->isolation == WD_ISOLATION_PROCESS)
		kill(-s->pid, SIGKILL);
}

static void
drain(struct sup *s, int fd, int stream, char *buf, size_t cap, int *fdp, int ep)
{
	/* a bounded number of reads per wake-up, so a command that writes
	 * faster than we read cannot starve the deadline and signal checks */
	for (int round = 0; round < 16; round++) {
		ssize_t n = read(fd, buf, cap);
		if (n > 0) {
			capture_feed(&s->cap[stream], buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* EOF or error: this stream is done */
		epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
		close(fd);
		*fdp = -1;
		return;
	}
}

/* SYNC_NET_READY: serve the sockets pid 1 made in the sandbox's network
 * namespace from here, on the proxy's own thread. */
static void
net_ready(struct sup *s, const int *fds, int n)
{
	struct wd_err e = {0};
	if (!s->proxy || n != 3 || net_proxy_serve(s->proxy, fds[0], fds[1], fds[2], &e) < 0 ||
	    net_proxy_start(s->proxy, &e) < 0) {
		for (int i = 0; i < n; i++)
			close(fds[i]);
		wd_log(WD_LOG_ERROR, "egress proxy: %s", e.msg);
		if (!s->setup_step) {
			s->setup_step = JAIL_STEP_4_NET;
			s->setup_errno = e.sys_errno ? e.sys_errno : EIO;
		}
		sandbox_kill(s);
		return;
	}
	s->proxy_running = true;
}

static void
read_sync(struct sup *s)
{
	for (;;) {
		struct jail_msg m;
		int fds[JAIL_MAX_MSG_FDS], nfds;
		if (jail_msg_recv(s->sync_fd, &m, fds, &nfds, MSG_DONTWAIT) < 0)
			return;
		switch (m.kind) {
		case JAIL_MSG_EXIT:
			s->got_exit = 1;
			s->cmd_status = m.status;
			s->cmd_cpu_us = m.cpu_us;
			s->cmd_maxrss_kb = m.maxrss_kb;
			break;
		case JAIL_MSG_EXEC_FAILED:
			s->exec_failed = true;
			s->exec_errno = m.err;
			break;
		case JAIL_MSG_ERROR:
			if (!s->setup_step) {
				s->setup_step = m.step;
				s->setup_errno = m.err;
				s->setup_op = m.status;
			}
			break;
		case JAIL_MSG_NET_READY:
			net_ready(s, fds, nfds);
			nfds = 0; /* net_ready owns them */
			break;
		default:
			break;
		}
		for (int i = 0; i < nfds; i++) /* fds nobody asked for */
			close(fds[i]);
	}
}

/* Every proxy and DNS decision, as one JSON object, to the caller's
 * handler (on the proxy thread; wd_run joins it before returning). */
static void
net_event_cb(const struct net_event *ev, void *data)
{
	const struct sup *s = data;
	const wd_spec *spec = s->spec;
	if (!spec->event_fn)
		return;
	char *j = result_net_event_json(ev);
	spec->event_fn(j, spec->event_data);
	free(j);
}

/* Move what the person types to the command: read the terminal only
 * while nothing is pending, wait for room on the socket otherwise.  EOF
 * (^D) or the command closing its stdin ends the relay. */
static void
relay_stop(struct sup *s, int ep)
{
	if (s->tty_in >= 0)
		epoll_ctl(ep, EPOLL_CTL_DEL, s->tty_in, NULL);
	if (s->relay_w >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, s->relay_w, NULL);
		close(s->relay_w);
	}
	s->tty_in = s->relay_w = -1;
}

static void
relay(struct sup *s, int ep)
{
	if (s->relay_len == 0) {
		ssize_t n = read(s->tty_in, s->relay_buf, sizeof(s->relay_buf));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			relay_stop(s, ep);
			return;
		}
		s->relay_len = (size_t)n;
		s->relay_off = 0;
	}
	while (s->relay_off < s->relay_len) {
		ssize_t w = send(s->relay_w, s->relay_buf + s->relay_off,
				 s->relay_len - s->relay_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			/* full: stop reading the terminal, wait for room */
			struct epoll_event out = {.events = EPOLLOUT, .data.fd = s->relay_w};
			epoll_ctl(ep, EPOLL_CTL_DEL, s->tty_in, NULL);
			epoll_ctl(ep, EPOLL_CTL_ADD, s->relay_w, &out);
			return;
		}
		if (w < 0) {
			relay_stop(s, ep); /* the command closed its stdin */
			return;
		}
		s->relay_off += (size_t)w;
	}
	s->relay_len = 0;
	struct epoll_event in = {.events = EPOLLIN, .data.fd = s->tty_in};
	if (epoll_ctl(ep, EPOLL_CTL_DEL, s->relay_w, NULL) == 0)
		epoll_ctl(ep, EPOLL_CTL_ADD, s->tty_in, &in);
}

static int
event_loop(struct sup *s, uint64_t deadline_ns, sigset_t *sigs, struct wd_err *err)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return wd_err_sys(err, errno, "epoll_create1");
	int sfd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	s->cap[1].abort_fd = s->cap[2].abort_fd = sfd;
	struct epoll_event ev = {.events = EPOLLIN};
	int fds[] = {s->out_r, s->err_r, s->sync_fd, s->pidfd, sfd};
	for (size_t i = 0; i < WD_ARRAY_SIZE(fds); i++) {
		if (fds[i] < 0)
			continue;
		ev.data.fd = fds[i];
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	if (s->tty_in >= 0) {
		ev.data.fd = s->tty_in;
		epoll_ctl(ep, EPOLL_CTL_ADD, s->tty_in, &ev);
	}
	size_t cap = 256 << 10;
	char *buf = wd_xmalloc(cap);

	/* Done when the command's end is known (pid 1's report in a
	 * container, the process itself otherwise) and both pipes hit EOF. */
	while (!(s->pid_done || s->got_exit) || s->out_r >= 0 || s->err_r >= 0) {
		int timeout = -1;
		if (!s->pid_done && !s->got_exit && !s->timed_out) {
			uint64_t now = wd_now_ns();
			timeout = now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000 + 1);
		} else if (s->pid_done && !s->got_exit) {
			timeout = 100; /* process level: watch for the late close */
		}
		struct epoll_event evs[8];
		int n = epoll_wait(ep, evs, 8, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (wd_now_ns() >= deadline_ns) {
			if (!s->pid_done && !s->got_exit && !s->timed_out) {
				s->timed_out = true;
				sandbox_kill(s);
			} else if (s->pid_done && !s->closed_late &&
				   wd_now_ns() >= deadline_ns + 1000000000ULL) {
				/* process level, the command long gone and the pipes
				 * still open a second past the deadline: whatever
				 * holds them escaped every kill; stop reading */
				s->closed_late = true;
				if (s->out_r >= 0)
					close(s->out_r);
				if (s->err_r >= 0)
					close(s->err_r);
				s->out_r = s->err_r = -1;
				break;
			}
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if ((fd == s->tty_in && s->tty_in >= 0) || (fd == s->relay_w && s->relay_w >= 0))
				relay(s, ep);
			else if (fd == s->out_r && s->out_r >= 0)
				drain(s, fd, 1, buf, cap, &s->out_r, ep);
			else if (fd == s->err_r && s->err_r >= 0)
				drain(s, fd, 2, buf, cap, &s->err_r, ep);
			else if (fd == s->sync_fd)
				read_sync(s);
			else if (fd == sfd) {
				struct signalfd_siginfo si;
				while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
					if (!s->killed_by)
						s->killed_by = (int)si.ssi_signo;
				sandbox_kill(s);
			} else if (fd == s->pidfd && !s->pid_done) {
				memset(&s->info, 0, sizeof(s->info));
				if (syscall(SYS_waitid, P_PIDFD, s->pidfd, &s->info, WEXITED,
					    &s->ru) == 0) {
					s->pid_done = true;
					epoll_ctl(ep, EPOLL_CTL_DEL, s->pidfd, NULL);
					read_sync(s);
					/* Nothing outlives the command: in a container
					 * the namespace is already gone; in process mode
					 * kill what it left behind so the pipes close. */
					if (s->spec->isolation == WD_ISOLATION_PROCESS) {
						if (s->cg)
							cgroup_kill(s->cg);
						kill(-s->pid, SIGKILL);
						kill_descendants(s->janitor, &s->before);
					}
				}
			}
		}
	}
	read_sync(s);
	free(buf);
	s->cap[1].abort_fd = s->cap[2].abort_fd = -1;
	if (sfd >= 0)
		close(sfd);
	close(ep);
	return 0;
}

static const char *const *
env_list(const wd_spec *spec)
{
	return (const char *const *)(const void *)spec->env;
}

/* pid 1 processes whose namespaces the kernel is still tearing down when
 * wd_run() returns (see "async teardown" below): reaped on the next call,
 * or by init when the CLI exits. */
static pid_t pending[64];

static void
reap_pending(void)
{
	for (size_t i = 0; i < WD_ARRAY_SIZE(pending); i++)
		if (pending[i] > 0 && waitpid(pending[i], NULL, WNOHANG) != 0)
			pending[i] = 0;
}

static void
add_pending(pid_t pid)
{
	for (size_t i = 0; i < WD_ARRAY_SIZE(pending); i++)
		if (pending[i] <= 0) {
			pending[i] = pid;
			return;
		}
	waitpid(pid, NULL, 0); /* full: reap now rather than leak */
}

static int
make_cgroup(const wd_spec *spec, const char *id, struct cgroup **cg, struct wd_err *err)
{
	struct cgroup_limits cl = {spec->lim.memory_bytes, spec->lim.pids,
				   spec->lim.cpu_millionths};
	/* cpuacct stays: it counts the CPU of processes killed at a timeout,
	 * which no rusage sees.  No freezer in a container: pid 1's death
	 * takes the pid namespace with it, so kill-all needs no freezing. */
	unsigned flags = 0;
	if (spec->isolation == WD_ISOLATION_CONTAINER)
		flags |= CGROUP_NO_FREEZER;
	int rc = cgroup_create_flags(id, &cl, flags, cg, err);
	if (rc < 0 && geteuid() != 0) {
		/* An unprivileged caller on a host without a delegated
		 * subtree: run with rlimits only; --json says cgroup "none". */
		wd_log(WD_LOG_WARN, "no cgroup for the sandbox (%s): limits not enforced",
		       err ? err->msg : "");
		*cg = NULL;
		return 0;
	}
	return rc;
}

/* SYNC_CGROUP_READY: v1 hands the child each hierarchy's tasks file so it
 * moves itself (jail/child.c join_cgroup); v2 and "none" send no fds. */
static int
send_cgroup(struct sup *s, struct wd_err *err)
{
	int fds[JAIL_MAX_MSG_FDS], n = 0, rc = 0;
	if (s->cg && cgroup_dirfd(s->cg) < 0) {
		const char *const *dirs = cgroup_dirs(s->cg);
		for (; dirs[n] && n < JAIL_MAX_MSG_FDS; n++) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/tasks", dirs[n]);
			fds[n] = open(path, O_WRONLY | O_CLOEXEC);
			if (fds[n] < 0) {
				rc = wd_err_sys(err, errno, "open %s", path);
				break;
			}
		}
	}
	struct jail_msg m = {.kind = JAIL_MSG_CGROUP, .status = n};
	if (rc == 0 && (rc = jail_msg_send(s->sync_fd, &m, fds, n)) < 0)
		wd_err_sys(err, -rc, "hand the cgroup to the sandbox");
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

/* One debug line per supervisor step with the time since the start
 * (warden run -v): the level is checked before anything is formatted. */
#define STEP(what) wd_log(WD_LOG_DEBUG, "+%.3f ms %s", (double)(wd_now_ns() - t0) / 1e6, what)

WD_API int
wd_run(const wd_spec *spec, wd_result **out, struct wd_err *err)
{
	int rc;
	uint64_t t0 = wd_now_ns();
	bool container = spec->isolation == WD_ISOLATION_CONTAINER;
	struct sup s = {.spec = spec, .pidfd = -1, .out_r = -1, .err_r = -1, .sync_fd = -1,
			.tty_in = -1, .relay_w = -1};
	int relay_r = -1;
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, sp[2] = {-1, -1};
	struct jail_prep *prep = NULL;
	int janitor_fd = -1;
	pid_t janitor = 0;
	sigset_t sigs, oldmask;
	bool subreaper = false, sigs_blocked = false, handed_off = false;
	char id[17];
	wd_result *r = NULL;
	struct net_rules *own_rules = NULL;

	struct wd_err scratch;
	if (!err)
		err = &scratch; /* failure paths below fill err->step */
	if (!spec->argv)
		return wd_err_set(err, WD_E_INVAL, "no program given");
	reap_pending();
	make_id(id);

	/* 1. Pipes for output, the sync socket, then the plan. */
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		rc = wd_err_sys(err, errno, "create pipes");
		goto out;
	}
	/* Bigger pipes: fewer wake-ups when a command floods its output. */
	fcntl(outp[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(errp[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);

	/* stdin from a terminal is relayed, never handed over: with the
	 * terminal itself the sandbox could change its modes (stty -echo
	 * outlives the run), read what is typed after it, or push input
	 * (TIOCSTI, refused by seccomp too). */
	if (spec->stdin_fd >= 0 && isatty(spec->stdin_fd)) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			rc = wd_err_sys(err, errno, "stdin relay");
			goto out;
		}
		shutdown(sv[0], SHUT_WR);
		shutdown(sv[1], SHUT_RD);
		relay_r = sv[0];
		s.relay_w = sv[1];
		s.tty_in = spec->stdin_fd;
	}

	struct jail_bind *binds = wd_xcalloc(spec->nbinds + 1, sizeof(*binds));
	for (size_t i = 0; i < spec->nbinds; i++)
		binds[i] = (struct jail_bind){spec->binds[i].src, spec->binds[i].dst,
					      spec->binds[i].rw};
	char *cwd = NULL;
	const char *ws = spec->workspace;
	if (!ws)
		ws = cwd = getcwd(NULL, 0);
	struct jail_config cfg = {
		.container = container,
		.workspace = ws ? ws : ".",
		.binds = binds,
		.nbinds = spec->nbinds,
		.argv = (const char *const *)(const void *)spec->argv,
		.env = env_list(spec),
		.nenv = spec->nenv,
		.term = spec->term,
		.tmp_bytes = spec->lim.tmp_bytes,
		.nofile = spec->lim.nofile,
		.fsize = spec->lim.fsize,
		.ports = spec->ports,
		.nports = spec->nports,
		.stdin_fd = relay_r >= 0 ? relay_r : spec->stdin_fd,
		.stdout_fd = outp[1],
		.stderr_fd = errp[1],
		.sync_fd = sp[1],
	};
	/* Egress: the proxy exists before the plan, which needs its CA for
	 * the jail's trust store; it starts serving at SYNC_NET_READY. */
	if (spec->net == WD_NET_PROXY) {
		if (!container) {
			rc = wd_err_set(err, WD_E_INVAL,
					"--net allow needs --isolation container (a network "
					"namespace with warden's proxy as its only way out)");
			goto out;
		}
		if (!spec->net_rules && net_rules_new(&own_rules) < 0) {
			rc = wd_err_set(err, WD_E_INTERNAL, "out of memory");
			goto out;
		}
		struct net_config nc;
		net_config_init(&nc);
		nc.sandbox_id = id;
		nc.rules = spec->net_rules ? spec->net_rules : own_rules;
		nc.tls_intercept = spec->tls_intercept;
		nc.upstream_ca_file = spec->upstream_ca;
		if ((rc = net_proxy_new(&nc, net_event_cb, &s, &s.proxy, err)) < 0)
			goto out;
		cfg.net_proxy = true;
		cfg.ca_pem = spec->tls_intercept ? net_proxy_ca_pem(s.proxy) : NULL;
	}
	rc = jail_prep_new(&cfg, &prep, err);
	STEP("1 plan ready");
	free(binds);
	free(cwd);
	if (rc < 0)
		goto out;

	/* 1b. On cgroup v2 the cgroup exists before clone3 so the child is
	 * born in it (CLONE_INTO_CGROUP).  On v1 it is made after clone3,
	 * while the child builds its mounts, and the child joins it itself
	 * before anything of the command runs (step 4b). */
	int host_cg = cgroup_host_version();
	if (host_cg == 2) {
		janitor = janitor_start(id, &janitor_fd);
		if ((rc = make_cgroup(spec, id, &s.cg, err)) < 0)
			goto out;
	}

	/* Signals that end warden end the sandbox first (read via signalfd). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigprocmask(SIG_BLOCK, &sigs, &oldmask);
	sigs_blocked = true;

	if (!container) {
		/* Orphans of the command come back to warden, so none escapes
		 * the end-of-run sweep even without a cgroup. */
		subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
		children_of_self(&s.before);
	}

	/* 1c. clone3: new namespaces and a pidfd.  The cgroup namespace is
	 * unshared by pid 1 once it sits in its cgroup. */
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD;
	if (container)
		ca.flags |= CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
			    CLONE_NEWIPC | CLONE_NEWUTS;
	ca.pidfd = (uint64_t)(uintptr_t)&s.pidfd;
	ca.exit_signal = SIGCHLD;
	if (s.cg && cgroup_dirfd(s.cg) >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgroup_dirfd(s.cg);
	}
	STEP("1b cgroup (v2) and signals");
	pid_t pid = sys_clone3(&ca);
	if (pid < 0) {
		rc = wd_err_sys(err, errno, "clone3 (step %s)", jail_step_name(JAIL_STEP_1_CLONE));
		err->step = JAIL_STEP_1_CLONE;
		goto out;
	}
	if (pid == 0) {
		close(sp[0]);
		if (container)
			jail_pid1_main(&prep->plan);
		jail_process_main(&prep->plan);
	}
	s.pid = pid;
	s.sync_fd = sp[0];
	sp[0] = -1;
	wd_close_reset(&sp[1]);
	wd_close_reset(&outp[1]);
	wd_close_reset(&errp[1]);
	s.out_r = outp[0];
	s.err_r = errp[0];
	outp[0] = errp[0] = -1;
	wd_close_reset(&relay_r);

	STEP("1c clone3");
	/* 2. The maps, then SYNC_MAPS_WRITTEN: the child may go on. */
	if (container && (rc = jail_write_maps(prep, pid, err)) < 0) {
		err->step = JAIL_STEP_2_MAPS;
		goto out_kill;
	}
	struct jail_msg go = {.kind = JAIL_MSG_GO};
	if (send(s.sync_fd, &go, sizeof(go), MSG_NOSIGNAL) != (ssize_t)sizeof(go)) {
		rc = wd_err_sys(err, errno, "release the sandbox");
		goto out_kill;
	}
	/* 2c. v1: the cgroup, overlapping the child's mount work, then
	 * SYNC_CGROUP_READY; the janitor watches over it from now on. */
	STEP("2 maps written, child released");
	if (host_cg == 1) {
		janitor = janitor_start(id, &janitor_fd);
		STEP("2b janitor");
		if ((rc = make_cgroup(spec, id, &s.cg, err)) < 0)
			goto out_kill;
	}
	s.janitor = janitor;
	if ((rc = send_cgroup(&s, err)) < 0)
		goto out_kill;
	STEP("2c cgroup (v1) sent");

	/* 7. Supervise: output, the clock, signals, pid 1's end. */
	for (int i = 1; i <= 2; i++)
		capture_init(&s.cap[i], spec->lim.output_limit, i, spec->stream_fd[i]);
	for (int i = 1; i <= 2; i++)
		s.cap[i].deadline_ns = t0 + spec->lim.timeout_ms * 1000000ULL;
	rc = event_loop(&s, t0 + spec->lim.timeout_ms * 1000000ULL, &sigs, err);
	if (rc < 0)
		goto out_kill;
	STEP("7 command done, output drained");

	/* The proxy ends with the command: listeners, tunnels, connections. */
	struct net_stats ns = {0};
	if (s.proxy) {
		net_proxy_stop(s.proxy);
		net_proxy_stats(s.proxy, &ns);
	}

	r = wd_xcalloc(1, sizeof(*r));
	memcpy(r->sandbox_id, id, sizeof(id));
	r->net_proxy = s.proxy != NULL;
	r->tls_intercept = s.proxy && spec->tls_intercept;
	r->net_requests = ns.requests;
	r->net_refused = ns.refused;
	r->net_dns = ns.dns_queries;
	r->net_bytes = ns.bytes_total;
	r->isolation = spec->isolation;
	r->seccomp = true;
	r->landlock_abi = prep->plan.landlock_abi;
	r->cgroup_version = s.cg ? cgroup_version(s.cg) : 0;
	r->idmapped = prep->idmapped;
	r->bounding_dropped = container || geteuid() == 0;
	r->host_uid = prep->host_uid;
	r->wall_ns = wd_now_ns() - t0;
	r->cpu_ns = (uint64_t)(s.ru.ru_utime.tv_sec + s.ru.ru_stime.tv_sec) * 1000000000ULL +
		    (uint64_t)(s.ru.ru_utime.tv_usec + s.ru.ru_stime.tv_usec) * 1000ULL;
	r->peak_memory = (uint64_t)s.ru.ru_maxrss * 1024;
	if (container && s.got_exit) {
		r->cpu_ns = s.cmd_cpu_us * 1000ULL;
		r->peak_memory = s.cmd_maxrss_kb * 1024;
	}
	if (s.cg) {
		struct cgroup_stats st = {0};
		if (cgroup_stats(s.cg, &st) == 0) {
			if (st.memory_peak)
				r->peak_memory = st.memory_peak;
			if (st.cpu_ns)
				r->cpu_ns = st.cpu_ns;
			r->oom_killed = st.oom_killed;
		}
	}
	for (int i = 1; i <= 2; i++) {
		r->out[i] = capture_window(&s.cap[i], &r->out_len[i]);
		r->total[i] = s.cap[i].total;
		r->omitted[i] = capture_omitted(&s.cap[i]);
		capture_flush(&s.cap[i]);
	}

	/* The command's status: reported by pid 1 in a container, pid 1's
	 * own in process mode. */
	int st = 0;
	bool have = false;
	if (container && s.got_exit) {
		st = s.cmd_status;
		have = true;
	} else if (!container && s.pid_done) {
		if (s.info.si_code == CLD_EXITED)
			st = (s.info.si_status & 0xff) << 8;
		else
			st = s.info.si_status & 0x7f;
		have = true;
	}
	if (s.setup_step && !s.exec_failed) {
		/* the jail could not be built: warden's own failure */
		const struct jail_plan *pl = &prep->plan;
		if (s.setup_op > 0 && s.setup_op <= pl->nops)
			rc = wd_err_sys(err, s.setup_errno, "jail step %s: %s %s",
					jail_step_name(s.setup_step),
					jail_op_name(pl->ops[s.setup_op - 1].kind),
					pl->ops[s.setup_op - 1].path);
		else
			rc = wd_err_sys(err, s.setup_errno, "jail step %s",
					jail_step_name(s.setup_step));
		err->step = s.setup_step;
		wd_result_free(r);
		r = NULL;
		goto out_kill;
	}
	if (s.timed_out) {
		r->timed_out = true;
		r->status = 124;
		r->exit_code = -1;
		r->signal = SIGKILL;
	} else if (have && WIFEXITED(st)) {
		r->exit_code = WEXITSTATUS(st);
		r->status = r->exit_code;
	} else if (have && WIFSIGNALED(st)) {
		r->exit_code = -1;
		r->signal = WTERMSIG(st);
		r->status = 128 + r->signal;
	} else {
		/* pid 1 died without a report: killed by warden on a signal */
		r->exit_code = -1;
		r->signal = SIGKILL;
		r->status = 128 + (s.killed_by ? s.killed_by : SIGKILL);
	}
	if (s.killed_by && !s.timed_out)
		r->status = 128 + s.killed_by;
	if (s.exec_failed)
		wd_log(WD_LOG_ERROR, "cannot execute '%s': %s", spec->argv[0],
		       strerror(s.exec_errno));

	/* Async teardown: pid 1 reported the command's end and every pipe
	 * is closed, so nothing of the sandbox can run any more; the kernel
	 * is still dismantling its namespaces (the mount namespace's teardown
	 * waits for an RCU grace period, several ms).  Nobody needs to wait
	 * for that: pid 1 is reaped later, and the janitor removes the cgroup
	 * once its last task is gone. */
	if (container && !s.pid_done) {
		syscall(SYS_pidfd_send_signal, s.pidfd, SIGKILL, NULL, 0);
		if (janitor > 0) {
			add_pending(s.pid);
			wd_close_reset(&janitor_fd); /* EOF: the janitor cleans up */
			handed_off = true;
		} else {
			siginfo_t si;
			syscall(SYS_waitid, P_PIDFD, s.pidfd, &si, WEXITED, NULL);
		}
	}
	*out = r;
	r = NULL;
	rc = 0;
	goto out;

out_kill:
	if (s.pidfd >= 0) {
		syscall(SYS_pidfd_send_signal, s.pidfd, SIGKILL, NULL, 0);
		if (!s.pid_done) {
			siginfo_t si;
			syscall(SYS_waitid, P_PIDFD, s.pidfd, &si, WEXITED, NULL);
		}
	}
out:
	for (int i = 1; i <= 2; i++)
		capture_fini(&s.cap[i]);
	if (!container && s.pid > 0)
		kill_descendants(janitor, &s.before);
	if (sigs_blocked)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	if (subreaper)
		prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
	if (s.cg && !handed_off) {
		cgroup_kill(s.cg);
		cgroup_destroy(s.cg);
	}
	if (s.cg)
		cgroup_free(s.cg);
	if (handed_off)
		add_pending(janitor);
	else
		janitor_done(janitor, janitor_fd);
	if (s.proxy) {
		net_proxy_stop(s.proxy);
		net_proxy_free(s.proxy);
	}
	net_rules_free(own_rules);
	jail_prep_free(prep);
	STEP("cleanup done");
	int fds[] = {outp[0], outp[1], errp[0], errp[1], sp[0],	  sp[1],
		     s.out_r, s.err_r, s.sync_fd, s.pidfd, relay_r, s.relay_w};
	for (size_t i = 0; i < WD_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	wd_result_free(r);
	return rc;
}
