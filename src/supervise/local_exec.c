/* supervise/local_exec: one command in a local sandbox (docs/architecture.md's
 * step 7): its pipes, its plan and its channel go to pid 1 in SYNC_EXEC; then
 * one epoll loop over the output pipes, the command's channel, pid 1's
 * pidfd, the cancellation descriptors and the clock, until the command has
 * ended and its output is drained.  Each command has its own state here
 * (struct xrun), so any number run at once, from any threads. */
#include "supervise/supervise.h"
#include "spec/spec.h"
#include "cgroup/cgroup.h"
#include "jail/jail.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* After a command's end, how long its output pipes may stay open (held by
 * something it started that escaped its process group) before we stop
 * reading them.  A one-shot run's sandbox ends with the command, so there
 * EOF comes at once. */
#define DRAIN_GRACE_NS (200ULL * 1000000ULL)

struct xrun {
	struct sandbox *sb;
	const struct exec_req *x;
	struct cmd_output io;  /* io.fd[1], io.fd[2]: the output pipes */
	struct sync_chan chan; /* the command's channel */
	int ep;
	bool got_exit, exec_failed, sandbox_dead, timed_out, closed_late;
	int exec_errno, exec_step, status, start_err;
	uint64_t cpu_us, maxrss_kb;
	int killed_by; /* the signal of a cancellation */
	uint32_t seq;  /* the command's number in the sandbox */
	uint64_t exit_ns;
	/* stdin from a terminal: relayed, never handed over */
	struct stdin_relay relay;
};

static bool
last(const struct xrun *r)
{
	return r->x->flags & SYNC_EXEC_LAST;
}

/* End the command: a one-shot run's whole sandbox (pid 1's death takes
 * the pid namespace; the cgroup kill the rest), else the command's
 * process group, through pid 1. */
static void
stop_command(struct xrun *r)
{
	if (last(r) || r->sandbox_dead) {
		local_kill(r->sb);
		return;
	}
	struct sync_msg k = {.kind = SYNC_KILL, .status = SIGKILL};
	if (sync_send(&r->chan, &k, NULL, 0) < 0)
		local_kill(r->sb);
}

static void
on_channel(struct xrun *r)
{
	for (;;) {
		struct sync_msg m;
		int fds[SYNC_MAX_FDS], nfds;
		int rc = sync_recv(&r->chan, &m, fds, &nfds, MSG_DONTWAIT);
		if (rc == -EAGAIN)
			return;
		if (rc == -EPROTO)
			continue; /* refused and dropped by the protocol */
		if (rc < 0) {
			/* EOF before EXIT: pid 1 is gone */
			epoll_ctl(r->ep, EPOLL_CTL_DEL, r->chan.fd, NULL);
			if (!r->got_exit)
				r->sandbox_dead = true;
			return;
		}
		if (m.kind == SYNC_EXEC_FAILED) {
			r->exec_failed = true;
			r->exec_errno = m.err;
			r->exec_step = m.step;
		} else if (m.kind == SYNC_EXIT) {
			r->got_exit = true;
			r->exit_ns = wd_now_ns();
			wd_log(WD_LOG_DEBUG,
			       "sandbox %s: +%.3f ms 6-7 command %u ended (SYNC_EXIT)", r->sb->id,
			       (double)(r->exit_ns - r->sb->t0) / 1e6, r->seq);
			r->status = m.status;
			r->start_err = m.err;
			r->cpu_us = m.cpu_us;
			r->maxrss_kb = m.maxrss_kb;
			epoll_ctl(r->ep, EPOLL_CTL_DEL, r->chan.fd, NULL);
		}
	}
}

/* pid 1's pidfd is readable: it exited.  In a one-shot run that is the
 * expected end; otherwise the sandbox died under the command. */
static void
on_pid1_exit(struct xrun *r)
{
	struct sandbox *sb = r->sb;
	epoll_ctl(r->ep, EPOLL_CTL_DEL, sb->pidfd, NULL);
	pthread_mutex_lock(&sb->lock);
	local_read_setup(sb);
	if (sb->state != SB_DEAD)
		sb->state = SB_DEAD;
	pthread_mutex_unlock(&sb->lock);
	on_channel(r); /* what pid 1 said before it went */
	if (!r->got_exit)
		r->sandbox_dead = true;
}

static void
on_cancel(struct xrun *r, int sig)
{
	if (!r->killed_by)
		r->killed_by = sig > 0 ? sig : SIGKILL;
	if (!r->got_exit)
		stop_command(r);
}

static int
loop(struct xrun *r, uint64_t deadline_ns, struct wd_err *err)
{
	struct sandbox *sb = r->sb;
	size_t cap = 256 << 10;
	char *buf = wd_xmalloc(cap);
	bool setup_watched = false;

	/* Done when the command's end is known and both pipes are drained;
	 * or the sandbox died (then its pipes close by themselves). */
	while (!((r->got_exit || r->sandbox_dead) && r->io.fd[1] < 0 && r->io.fd[2] < 0)) {
		uint64_t now = wd_now_ns();
		int timeout = -1;
		if (!r->got_exit && !r->sandbox_dead && !r->timed_out)
			timeout = now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000 + 1);
		else if (r->got_exit && !last(r))
			timeout = 20; /* watch the drain grace */
		/* Set-up messages: whoever runs a command while the sandbox is
		 * still being built reads them (under the sandbox's lock). */
		if (!setup_watched && sb->state == SB_SPAWNED) {
			struct epoll_event ev = {.events = EPOLLIN, .data.fd = sb->chan.fd};
			if (epoll_ctl(r->ep, EPOLL_CTL_ADD, sb->chan.fd, &ev) == 0)
				setup_watched = true;
		}
		struct epoll_event evs[8];
		int n = epoll_wait(r->ep, evs, 8, timeout);
		if (n < 0 && errno != EINTR) {
			free(buf);
			return wd_err_sys(err, errno, "epoll_wait");
		}
		now = wd_now_ns();
		if (!r->got_exit && !r->sandbox_dead && !r->timed_out && now >= deadline_ns) {
			r->timed_out = true;
			stop_command(r);
		}
		if (r->got_exit && !last(r) && now >= r->exit_ns + DRAIN_GRACE_NS &&
		    (r->io.fd[1] >= 0 || r->io.fd[2] >= 0)) {
			/* something the command started outside its process group
			 * still holds the pipes: stop reading them */
			r->closed_late = true;
			cmd_output_close(&r->io);
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (stdin_relay_owns(&r->relay, fd))
				stdin_relay_pump(&r->relay);
			else if (fd == r->io.fd[1] && r->io.fd[1] >= 0)
				cmd_output_drain(&r->io, 1, r->ep, buf, cap);
			else if (fd == r->io.fd[2] && r->io.fd[2] >= 0)
				cmd_output_drain(&r->io, 2, r->ep, buf, cap);
			else if (fd == r->chan.fd)
				on_channel(r);
			else if (fd == sb->pidfd)
				on_pid1_exit(r);
			else if (fd == sb->chan.fd) {
				pthread_mutex_lock(&sb->lock);
				local_read_setup(sb);
				bool done = sb->state != SB_SPAWNED;
				pthread_mutex_unlock(&sb->lock);
				if (done) {
					epoll_ctl(r->ep, EPOLL_CTL_DEL, sb->chan.fd, NULL);
					setup_watched = false;
				}
				if (sb->state == SB_DEAD && !r->got_exit)
					r->sandbox_dead = true;
			} else if (fd == sb->cancel_fd) {
				epoll_ctl(r->ep, EPOLL_CTL_DEL, fd, NULL);
				on_cancel(r, atomic_load(&sb->cancel_sig));
			} else if (fd == r->x->cancel_fd) {
				/* watched once too: it stays readable (a session's
				 * client connection with its cancel record unread),
				 * and each turn sent pid 1 another kill until the
				 * channel was full and the whole sandbox was killed
				 * instead of the command */
				epoll_ctl(r->ep, EPOLL_CTL_DEL, fd, NULL);
				on_cancel(r, r->x->cancel_sig ? atomic_load(r->x->cancel_sig) : 0);
			} else if (fd == r->x->cmd_cancel_fd) {
				/* the caller's fd stays readable: watched once */
				epoll_ctl(r->ep, EPOLL_CTL_DEL, fd, NULL);
				on_cancel(r, SIGKILL);
			}
		}
	}
	free(buf);
	return 0;
}

/* Pipes, the plan and the channel; then SYNC_EXEC.  The descriptors the
 * command gets are closed here once pid 1 has its copies. */
static int
send_exec(struct xrun *r, struct wd_err *err)
{
	struct sandbox *sb = r->sb;
	const struct exec_req *x = r->x;
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, cp[2] = {-1, -1}, plan = -1, relay_r = -1,
	    devnull = -1;
	wd_autofree char *cwd = NULL;
	int rc;

	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cp) < 0) {
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
	if (x->stdin_fd >= 0 && isatty(x->stdin_fd) &&
	    (rc = stdin_relay_open(&r->relay, x->stdin_fd, &relay_r, err)) < 0)
		goto out;
	if ((x->flags & SYNC_EXEC_DETACH) && !sb->prep->plan.container) {
		/* the process level's monitor kills the orphans of every command
		 * that ends: nothing could stay in the background */
		rc = wd_err_set(err, WD_E_UNSUPPORTED,
				"a detached command needs --isolation container");
		goto out;
	}
	if (!(cwd = sandbox_command_cwd(sb, x->cwd, err))) {
		rc = -EINVAL;
		goto out;
	}
	struct jail_cmd_spec cs = {x->argv, (const char *const *)sb->prep->plan.envp, x->env, cwd};
	if ((plan = jail_cmd_plan_build(&cs, err)) < 0) {
		rc = plan;
		goto out;
	}
	/* No stdin: the host's /dev/null, opened for this command (the
	 * build's copy is closed once pid 1 is ready: one descriptor less per
	 * idle sandbox, jail_prep_release_sources).  A path in the server's
	 * own mount namespace, which no sandbox can reach. */
	if (relay_r < 0 && x->stdin_fd < 0 &&
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		rc = wd_err_sys(err, errno, "open /dev/null");
		goto out;
	}
	int in = relay_r >= 0 ? relay_r : x->stdin_fd >= 0 ? x->stdin_fd : devnull;
	/* a detached command writes its log itself: a pipe would outlive our
	 * reading it (the drain grace) and break its writers with EPIPE */
	bool logged = (x->flags & SYNC_EXEC_DETACH) && x->log_fd >= 0;
	int fds[SYNC_EXEC_NFDS] = {in, logged ? x->log_fd : outp[1], logged ? x->log_fd : errp[1],
				   plan, cp[1]};

	pthread_mutex_lock(&sb->lock);
	struct sync_msg m = {.kind = SYNC_EXEC, .flags = x->flags, .seq = ++sb->seq};
	if (sb->state == SB_DEAD)
		rc = sb->setup_step ? local_setup_error(sb, err)
				    : wd_err_set(err, WD_E_INVAL, "the sandbox has ended");
	else if ((rc = sync_send(&sb->chan, &m, fds, SYNC_EXEC_NFDS)) < 0)
		rc = rc == -EPROTO
			 ? wd_err_set(err, WD_E_INVAL, "the sandbox takes no command now")
			 : local_send_failed(sb, rc, "send the command to the sandbox", err);
	else
		sb->running++;
	pthread_mutex_unlock(&sb->lock);
	if (rc < 0)
		goto out;
	r->io.fd[1] = outp[0];
	r->io.fd[2] = errp[0];
	outp[0] = errp[0] = -1;
	sync_chan_init(&r->chan, cp[0], SYNC_SUPERVISOR, SYNC_S_SENT);
	cp[0] = -1;
	r->seq = m.seq;
	wd_log(WD_LOG_DEBUG, "sandbox %s: +%.3f ms 5 command %u sent (SYNC_EXEC)", sb->id,
	       (double)(wd_now_ns() - sb->t0) / 1e6, r->seq);
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
		if (cp[i] >= 0)
			close(cp[i]);
	}
	if (plan >= 0)
		close(plan);
	if (relay_r >= 0)
		close(relay_r);
	if (devnull >= 0)
		close(devnull);
	return rc;
}

static void
watch(struct xrun *r, int fd)
{
	if (fd < 0)
		return;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* The command's status as a shell reports it. */
static void
set_status(struct xrun *r, wd_result *res)
{
	int st = r->status;
	if (r->timed_out) {
		res->timed_out = true;
		res->status = 124;
		res->exit_code = -1;
		res->signal = SIGKILL;
	} else if (r->got_exit && WIFEXITED(st)) {
		res->exit_code = WEXITSTATUS(st);
		res->status = res->exit_code;
	} else if (r->got_exit && WIFSIGNALED(st)) {
		res->exit_code = -1;
		res->signal = WTERMSIG(st);
		res->status = 128 + res->signal;
	} else {
		/* the sandbox died without a report: killed by warden */
		res->exit_code = -1;
		res->signal = r->killed_by ? r->killed_by : SIGKILL;
		res->status = 128 + res->signal;
	}
	if (r->killed_by && !r->timed_out) {
		res->status = 128 + r->killed_by;
		res->signal = r->killed_by;
		res->exit_code = -1;
	}
	if (r->exec_failed) {
		res->exec_errno = r->exec_errno;
		res->exec_step = r->exec_step;
	}
}

static wd_result *
collect(struct xrun *r, uint64_t t0)
{
	struct sandbox *sb = r->sb;
	wd_result *res = result_new(sb->id);
	local_describe(sb, res);
	res->wall_ns = wd_now_ns() - t0;
	res->cpu_ns = r->cpu_us * 1000ULL;
	res->peak_memory = r->maxrss_kb * 1024;
	if (sb->cg) {
		/* The cgroup's figures cover the whole sandbox: for a one-shot
		 * run that is the command and everything it started. */
		struct cgroup_stats st = {0};
		if (cgroup_stats(sb->cg, &st) == 0) {
			if (st.memory_peak)
				res->peak_memory = st.memory_peak;
			if (st.cpu_ns && last(r))
				res->cpu_ns = st.cpu_ns;
			res->oom_killed = st.oom_killed;
		}
	}
	cmd_output_collect(&r->io, res);
	set_status(r, res);
	return res;
}

int
local_exec(struct sandbox *sb, const struct exec_req *x, wd_result **out, struct wd_err *err)
{
	struct xrun r = {.sb = sb, .x = x, .io.fd = {-1, -1, -1}, .ep = -1};
	stdin_relay_init(&r.relay);
	bool sent = false;
	uint64_t t0 = wd_now_ns();
	uint64_t timeout_ms = x->timeout_ms ? x->timeout_ms : sb->spec->lim.timeout_ms;
	uint64_t deadline = t0 + timeout_ms * 1000000ULL;
	sync_chan_init(&r.chan, -1, SYNC_SUPERVISOR, SYNC_S_SENT);
	int rc = send_exec(&r, err);
	if (rc < 0)
		goto out;
	sent = true;
	cmd_output_init(&r.io, sb, x, deadline);
	r.ep = epoll_create1(EPOLL_CLOEXEC);
	if (r.ep < 0) {
		rc = wd_err_sys(err, errno, "epoll_create1");
		goto out;
	}
	int fds[] = {r.io.fd[1],    r.io.fd[2],	  r.chan.fd,	   sb->pidfd,
		     sb->cancel_fd, x->cancel_fd, x->cmd_cancel_fd};
	for (size_t i = 0; i < WD_ARRAY_SIZE(fds); i++)
		watch(&r, fds[i]);
	r.relay.ep = r.ep;
	stdin_relay_watch(&r.relay);
	/* a cancellation that came before the command was sent */
	if (atomic_load(&sb->cancel_sig) || (x->cancel_sig && atomic_load(x->cancel_sig)))
		on_cancel(&r, atomic_load(&sb->cancel_sig) ? atomic_load(&sb->cancel_sig)
							   : atomic_load(x->cancel_sig));
	struct pollfd cp = {.fd = x->cmd_cancel_fd, .events = POLLIN};
	if (x->cmd_cancel_fd >= 0 && poll(&cp, 1, 0) == 1) {
		epoll_ctl(r.ep, EPOLL_CTL_DEL, x->cmd_cancel_fd, NULL);
		on_cancel(&r, SIGKILL);
	}
	if ((rc = loop(&r, deadline, err)) < 0)
		goto out;

	if (!r.got_exit && !r.killed_by && !r.timed_out) {
		/* pid 1 failed a jail step with a one-shot command queued
		 * behind it: its exit closed the command's channel, queued
		 * unread with the command, and the loop may have seen that EOF
		 * before pid 1's pidfd.  Its SYNC_ERROR, sent before it went,
		 * says why (it was once reported as the command killed, 137). */
		pthread_mutex_lock(&sb->lock);
		local_read_setup(sb);
		pthread_mutex_unlock(&sb->lock);
	}
	if (!r.got_exit && sb->setup_step && !r.killed_by && !r.timed_out) {
		/* the jail could not be built: warden's own failure */
		rc = local_setup_error(sb, err);
		goto out;
	}
	if (r.got_exit && r.start_err) {
		rc = wd_err_sys(err, r.start_err, "start the command in the sandbox");
		goto out;
	}
	*out = collect(&r, t0);
	if (r.closed_late)
		wd_log(WD_LOG_WARN,
		       "sandbox %s: a process the command started still held its "
		       "output %.0f ms after it ended; stopped reading",
		       sb->id, DRAIN_GRACE_NS / 1e6);
	rc = 0;
out:
	cmd_output_fini(&r.io);
	stdin_relay_stop(&r.relay);
	int own[] = {r.chan.fd, r.ep};
	for (size_t i = 0; i < WD_ARRAY_SIZE(own); i++)
		if (own[i] >= 0)
			close(own[i]);
	if (sent) {
		pthread_mutex_lock(&sb->lock);
		sb->running--;
		pthread_mutex_unlock(&sb->lock);
	}
	return rc;
}
