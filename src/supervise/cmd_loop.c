/* supervise/cmd_loop: one command's loop, the part every backend shares
 * (local_exec.c, gvisor_exec.c): one epoll set over the output pipes, a
 * terminal's relay, the cancellation descriptors and the backend's own
 * descriptors; the deadline; the drain grace; the result's wall clock,
 * output and forced status.  How a command's end is learnt and how it is
 * stopped are the backend's (struct cmd_loop_ops). */
#include "supervise/supervise.h"
#include "spec/spec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>

/* After a command's end, how long its output pipes may stay open (held by
 * something it started that escaped its process group, or left running)
 * before we stop reading them.  A one-shot run's sandbox ends with the
 * command, so there EOF comes at once (drain_grace false). */
#define DRAIN_GRACE_NS (200ULL * 1000000ULL)
/* The wake-up period while the drain grace runs. */
#define DRAIN_POLL_MS 20

void
cmd_loop_init(struct cmd_loop *l, struct sandbox *sb, const struct exec_req *x)
{
	l->sb = sb;
	l->x = x;
	l->io.fd[0] = l->io.fd[1] = l->io.fd[2] = -1;
	l->ep = -1;
	stdin_relay_init(&l->relay);
	l->t0 = wd_now_ns();
	uint64_t timeout_ms = x->timeout_ms ? x->timeout_ms : sb->spec->lim.timeout_ms;
	l->deadline_ns = l->t0 + timeout_ms * 1000000ULL;
}

int
cmd_stdio_open(struct cmd_loop *l, struct cmd_stdio *s, struct wd_err *err)
{
	const struct exec_req *x = l->x;
	*s = (struct cmd_stdio){-1, -1, -1, {-1, -1}, {-1, -1}};
	if (pipe2(s->outp, O_CLOEXEC) < 0 || pipe2(s->errp, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "create pipes");
	fcntl(s->outp[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(s->errp[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(s->outp[0], F_SETFL, O_NONBLOCK);
	fcntl(s->errp[0], F_SETFL, O_NONBLOCK);
	/* stdin from a terminal is relayed, never handed over: with the
	 * terminal itself the sandbox could change its modes (stty -echo
	 * outlives the run), read what is typed after it, or push input
	 * (TIOCSTI, refused by seccomp too); gVisor would forward the
	 * sandbox's ioctls on it to the real one. */
	int rc;
	if (x->stdin_fd >= 0 && isatty(x->stdin_fd) &&
	    (rc = stdin_relay_open(&l->relay, x->stdin_fd, &s->relay_r, err)) < 0)
		return rc;
	/* No stdin: the host's /dev/null, opened for this command (the
	 * build's copy is closed once pid 1 is ready: one descriptor less per
	 * idle sandbox, jail_prep_release_sources).  A path in the server's
	 * own mount namespace, which no sandbox can reach. */
	if (s->relay_r < 0 && x->stdin_fd < 0 &&
	    (s->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return wd_err_sys(err, errno, "open /dev/null");
	s->in = s->relay_r >= 0 ? s->relay_r : x->stdin_fd >= 0 ? x->stdin_fd : s->devnull;
	return 0;
}

void
cmd_stdio_take(struct cmd_loop *l, struct cmd_stdio *s)
{
	l->io.fd[1] = wd_steal_fd(&s->outp[0]);
	l->io.fd[2] = wd_steal_fd(&s->errp[0]);
}

void
cmd_stdio_close(struct cmd_stdio *s)
{
	int *fds[] = {&s->relay_r, &s->devnull, &s->outp[0], &s->outp[1], &s->errp[0], &s->errp[1]};
	for (size_t i = 0; i < WD_ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	s->in = -1;
}

static void
watch(struct cmd_loop *l, int fd)
{
	if (fd < 0)
		return;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev);
}

void
cmd_loop_cancel(struct cmd_loop *l, int sig)
{
	if (!l->killed_by)
		l->killed_by = sig > 0 ? sig : SIGKILL;
	l->ops->stop(l);
}

int
cmd_loop_watch(struct cmd_loop *l, const int *extra, size_t n, struct wd_err *err)
{
	struct sandbox *sb = l->sb;
	const struct exec_req *x = l->x;
	cmd_output_init(&l->io, sb, x, l->deadline_ns);
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	if (l->ep < 0)
		return wd_err_sys(err, errno, "epoll_create1");
	watch(l, l->io.fd[1]);
	watch(l, l->io.fd[2]);
	for (size_t i = 0; i < n; i++)
		watch(l, extra[i]);
	int cancels[] = {sb->cancel_fd, x->cancel_fd, x->cmd_cancel_fd};
	for (size_t i = 0; i < WD_ARRAY_SIZE(cancels); i++)
		watch(l, cancels[i]);
	l->relay.ep = l->ep;
	stdin_relay_watch(&l->relay);
	/* a cancellation that came before the command was sent */
	if (atomic_load(&sb->cancel_sig) || (x->cancel_sig && atomic_load(x->cancel_sig)))
		cmd_loop_cancel(l, atomic_load(&sb->cancel_sig) ? atomic_load(&sb->cancel_sig)
								: atomic_load(x->cancel_sig));
	struct pollfd cp = {.fd = x->cmd_cancel_fd, .events = POLLIN};
	if (x->cmd_cancel_fd >= 0 && poll(&cp, 1, 0) == 1) {
		epoll_ctl(l->ep, EPOLL_CTL_DEL, x->cmd_cancel_fd, NULL);
		cmd_loop_cancel(l, SIGKILL);
	}
	return 0;
}

static int
next_timeout(const struct cmd_loop *l, uint64_t now)
{
	enum cmd_phase ph = l->ops->phase(l);
	if (ph == CMD_RUNNING && !l->past_deadline)
		return now >= l->deadline_ns ? 0 : (int)((l->deadline_ns - now) / 1000000 + 1);
	if (ph == CMD_STOPPING && l->ops->stop_poll_ms)
		return l->ops->stop_poll_ms;
	if (ph == CMD_ENDED && l->drain_grace && l->exit_ns)
		return DRAIN_POLL_MS;
	return -1;
}

/* The cancellation descriptors, each watched once: they stay readable (a
 * session's client connection with its cancel record unread, the
 * caller's fd), and each turn would stop the command again (at the local
 * levels, another kill to pid 1 until its channel was full and the whole
 * sandbox was killed instead of the command). */
static bool
on_cancel_fd(struct cmd_loop *l, int fd)
{
	struct sandbox *sb = l->sb;
	const struct exec_req *x = l->x;
	int sig;
	if (fd == sb->cancel_fd)
		sig = atomic_load(&sb->cancel_sig);
	else if (fd == x->cancel_fd)
		sig = x->cancel_sig ? atomic_load(x->cancel_sig) : 0;
	else if (fd == x->cmd_cancel_fd)
		sig = SIGKILL;
	else
		return false;
	epoll_ctl(l->ep, EPOLL_CTL_DEL, fd, NULL);
	cmd_loop_cancel(l, sig);
	return true;
}

int
cmd_loop_run(struct cmd_loop *l, struct wd_err *err)
{
	const struct cmd_loop_ops *ops = l->ops;
	size_t cap = 256 << 10;
	wd_autofree char *buf = wd_xmalloc(cap);

	while (!(ops->phase(l) == CMD_ENDED && l->io.fd[1] < 0 && l->io.fd[2] < 0)) {
		int timeout = next_timeout(l, wd_now_ns());
		if (ops->prepare)
			ops->prepare(l);
		struct epoll_event evs[8];
		int n = epoll_wait(l->ep, evs, 8, timeout);
		if (n < 0 && errno != EINTR)
			return wd_err_sys(err, errno, "epoll_wait");
		uint64_t now = wd_now_ns();
		if (ops->phase(l) == CMD_RUNNING && !l->past_deadline && now >= l->deadline_ns) {
			/* once.  A command cancelled before its deadline is
			 * stopped again here (the cancellation's stop did not end
			 * it yet: pid 1 still reaping, a signal it ignores) but
			 * stays cancelled: the result says what asked first
			 * (128 + the signal), not a timeout (124) */
			l->past_deadline = true;
			if (!l->killed_by)
				l->timed_out = true;
			ops->stop(l);
		}
		if (ops->tick)
			ops->tick(l, now);
		if (ops->phase(l) == CMD_ENDED && l->drain_grace && l->exit_ns &&
		    now >= l->exit_ns + DRAIN_GRACE_NS && (l->io.fd[1] >= 0 || l->io.fd[2] >= 0)) {
			/* something the command started still holds the pipes:
			 * stop reading them */
			l->closed_late = true;
			cmd_output_close(&l->io);
			if (ops->closed_late)
				ops->closed_late(l);
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (stdin_relay_owns(&l->relay, fd))
				stdin_relay_pump(&l->relay);
			else if (fd == l->io.fd[1] && l->io.fd[1] >= 0)
				cmd_output_drain(&l->io, 1, l->ep, buf, cap);
			else if (fd == l->io.fd[2] && l->io.fd[2] >= 0)
				cmd_output_drain(&l->io, 2, l->ep, buf, cap);
			else if (!ops->on_fd(l, fd))
				on_cancel_fd(l, fd);
		}
	}
	if (l->closed_late)
		wd_log(WD_LOG_WARN,
		       "sandbox %s: a process the command started still held its "
		       "output %.0f ms after it ended; stopped reading",
		       l->sb->id, DRAIN_GRACE_NS / 1e6);
	return 0;
}

wd_result *
cmd_loop_result(struct cmd_loop *l, void (*describe)(struct sandbox *, wd_result *))
{
	wd_result *res = result_new(l->sb->id);
	describe(l->sb, res);
	res->wall_ns = wd_now_ns() - l->t0;
	return res;
}

bool
cmd_loop_forced_status(const struct cmd_loop *l, wd_result *res)
{
	if (l->timed_out) {
		res->timed_out = true;
		res->status = 124;
		res->exit_code = -1;
		res->signal = SIGKILL;
		return true;
	}
	if (l->killed_by) {
		res->status = 128 + l->killed_by;
		res->signal = l->killed_by;
		res->exit_code = -1;
		return true;
	}
	return false;
}

void
cmd_loop_fini(struct cmd_loop *l)
{
	cmd_output_fini(&l->io);
	stdin_relay_stop(&l->relay);
	if (l->ep >= 0)
		close(l->ep);
	l->ep = -1;
}
