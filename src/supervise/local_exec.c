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

struct xrun {
	struct cmd_loop c; /* the output, the clock, the cancellations */
	struct sandbox *sb;
	const struct exec_req *x;
	struct sync_chan chan; /* the command's channel */
	bool got_exit, exec_failed, sandbox_dead, setup_watched;
	int exec_errno, exec_step, status, start_err;
	uint64_t cpu_us, maxrss_kb;
	uint32_t seq; /* the command's number in the sandbox */
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
	if (r->got_exit)
		return;
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
			epoll_ctl(r->c.ep, EPOLL_CTL_DEL, r->chan.fd, NULL);
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
			r->c.exit_ns = wd_now_ns();
			wd_log(WD_LOG_DEBUG,
			       "sandbox %s: +%.3f ms 6-7 command %u ended (SYNC_EXIT)", r->sb->id,
			       (double)(r->c.exit_ns - r->sb->t0) / 1e6, r->seq);
			r->status = m.status;
			r->start_err = m.err;
			r->cpu_us = m.cpu_us;
			r->maxrss_kb = m.maxrss_kb;
			epoll_ctl(r->c.ep, EPOLL_CTL_DEL, r->chan.fd, NULL);
		}
	}
}

/* pid 1's pidfd is readable: it exited.  In a one-shot run that is the
 * expected end; otherwise the sandbox died under the command. */
static void
on_pid1_exit(struct xrun *r)
{
	struct sandbox *sb = r->sb;
	epoll_ctl(r->c.ep, EPOLL_CTL_DEL, sb->pidfd, NULL);
	pthread_mutex_lock(&sb->lock);
	local_read_setup(sb);
	if (sb->state != SB_DEAD)
		sb->state = SB_DEAD;
	pthread_mutex_unlock(&sb->lock);
	on_channel(r); /* what pid 1 said before it went */
	if (!r->got_exit)
		r->sandbox_dead = true;
}

/* ---- the loop's ops (cmd_loop.c) ---- */

static enum cmd_phase
op_phase(const struct cmd_loop *c)
{
	const struct xrun *r = c->priv;
	if (r->got_exit || r->sandbox_dead)
		return CMD_ENDED;
	/* a cancellation leaves the deadline counting: past it the
	 * command's group is killed again (the result still says
	 * cancelled, cmd_loop_run) */
	return c->past_deadline ? CMD_STOPPING : CMD_RUNNING;
}

static void
op_stop(struct cmd_loop *c)
{
	stop_command(c->priv);
}

/* Set-up messages: whoever runs a command while the sandbox is still
 * being built reads them (under the sandbox's lock). */
static void
op_prepare(struct cmd_loop *c)
{
	struct xrun *r = c->priv;
	struct sandbox *sb = r->sb;
	if (!r->setup_watched && sb->state == SB_SPAWNED) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = sb->chan.fd};
		if (epoll_ctl(r->c.ep, EPOLL_CTL_ADD, sb->chan.fd, &ev) == 0)
			r->setup_watched = true;
	}
}

/* The command's channel, pid 1's pidfd, and the sandbox's set-up channel
 * while it is being built. */
static bool
op_on_fd(struct cmd_loop *c, int fd)
{
	struct xrun *r = c->priv;
	struct sandbox *sb = r->sb;
	if (fd == r->chan.fd) {
		on_channel(r);
		return true;
	}
	if (fd == sb->pidfd) {
		on_pid1_exit(r);
		return true;
	}
	if (fd != sb->chan.fd)
		return false;
	pthread_mutex_lock(&sb->lock);
	local_read_setup(sb);
	bool done = sb->state != SB_SPAWNED;
	pthread_mutex_unlock(&sb->lock);
	if (done) {
		epoll_ctl(r->c.ep, EPOLL_CTL_DEL, sb->chan.fd, NULL);
		r->setup_watched = false;
	}
	if (sb->state == SB_DEAD && !r->got_exit)
		r->sandbox_dead = true;
	return true;
}

static const struct cmd_loop_ops local_loop_ops = {
    .prepare = op_prepare,
    .on_fd = op_on_fd,
    .phase = op_phase,
    .stop = op_stop,
};

/* Pipes, the plan and the channel; then SYNC_EXEC.  The descriptors the
 * command gets are closed here once pid 1 has its copies. */
static int
send_exec(struct xrun *r, struct wd_err *err)
{
	struct sandbox *sb = r->sb;
	const struct exec_req *x = r->x;
	struct cmd_stdio io;
	int cp[2] = {-1, -1}, plan = -1;
	wd_autofree char *cwd = NULL;
	int rc;

	if ((rc = cmd_stdio_open(&r->c, &io, err)) < 0)
		goto out;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cp) < 0) {
		rc = wd_err_sys(err, errno, "create the command's channel");
		goto out;
	}
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
	/* a detached command writes its log itself: a pipe would outlive our
	 * reading it (the drain grace) and break its writers with EPIPE */
	bool logged = (x->flags & SYNC_EXEC_DETACH) && x->log_fd >= 0;
	int fds[SYNC_EXEC_NFDS] = {io.in, logged ? x->log_fd : io.outp[1],
				   logged ? x->log_fd : io.errp[1], plan, cp[1]};

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
	cmd_stdio_take(&r->c, &io);
	sync_chan_init(&r->chan, cp[0], SYNC_SUPERVISOR, SYNC_S_SENT);
	cp[0] = -1;
	r->seq = m.seq;
	wd_log(WD_LOG_DEBUG, "sandbox %s: +%.3f ms 5 command %u sent (SYNC_EXEC)", sb->id,
	       (double)(wd_now_ns() - sb->t0) / 1e6, r->seq);
	rc = 0;
out:
	cmd_stdio_close(&io);
	for (int i = 0; i < 2; i++)
		if (cp[i] >= 0)
			close(cp[i]);
	if (plan >= 0)
		close(plan);
	return rc;
}

/* The command's status as a shell reports it. */
static void
set_status(struct xrun *r, wd_result *res)
{
	int st = r->status;
	if (cmd_loop_forced_status(&r->c, res)) {
		/* a timeout or a cancellation */
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
		res->signal = SIGKILL;
		res->status = 128 + res->signal;
	}
	if (r->exec_failed) {
		res->exec_errno = r->exec_errno;
		res->exec_step = r->exec_step;
	}
}

static wd_result *
collect(struct xrun *r)
{
	struct sandbox *sb = r->sb;
	wd_result *res = cmd_loop_result(&r->c, local_describe);
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
	cmd_output_collect(&r->c.io, res);
	set_status(r, res);
	return res;
}

int
local_exec(struct sandbox *sb, const struct exec_req *x, wd_result **out, struct wd_err *err)
{
	struct xrun r = {.sb = sb, .x = x};
	cmd_loop_init(&r.c, sb, x);
	r.c.ops = &local_loop_ops;
	r.c.priv = &r;
	r.c.drain_grace = !last(&r);
	bool sent = false;
	sync_chan_init(&r.chan, -1, SYNC_SUPERVISOR, SYNC_S_SENT);
	int rc = send_exec(&r, err);
	if (rc < 0)
		goto out;
	sent = true;
	int fds[] = {r.chan.fd, sb->pidfd};
	rc = cmd_loop_watch(&r.c, fds, WD_ARRAY_SIZE(fds), err);
	if (rc < 0 || (rc = cmd_loop_run(&r.c, err)) < 0)
		goto out;

	if (!r.got_exit && !r.c.killed_by && !r.c.timed_out) {
		/* pid 1 failed a jail step with a one-shot command queued
		 * behind it: its exit closed the command's channel, queued
		 * unread with the command, and the loop may have seen that EOF
		 * before pid 1's pidfd.  Its SYNC_ERROR, sent before it went,
		 * says why (it was once reported as the command killed, 137). */
		pthread_mutex_lock(&sb->lock);
		local_read_setup(sb);
		pthread_mutex_unlock(&sb->lock);
	}
	if (!r.got_exit && sb->setup_step && !r.c.killed_by && !r.c.timed_out) {
		/* the jail could not be built: warden's own failure */
		rc = local_setup_error(sb, err);
		goto out;
	}
	if (r.got_exit && r.start_err) {
		rc = wd_err_sys(err, r.start_err, "start the command in the sandbox");
		goto out;
	}
	*out = collect(&r);
	rc = 0;
out:
	cmd_loop_fini(&r.c);
	if (r.chan.fd >= 0)
		close(r.chan.fd);
	if (sent) {
		pthread_mutex_lock(&sb->lock);
		sb->running--;
		pthread_mutex_unlock(&sb->lock);
	}
	return rc;
}
