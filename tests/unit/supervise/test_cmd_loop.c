/* cmd_loop: the per-command loop both backends run a command through,
 * driven by a fake backend whose command is a real host process (a shell
 * started here, its stdout and stderr the loop's pipes, its end learnt
 * from its pidfd): output captured to its end, the deadline, the
 * cancellation descriptors, the drain grace, and the forced status. */
#include "supervise/supervise.h"
#include "spec/spec.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct fake {
	struct cmd_loop c;
	struct sandbox sb;
	wd_spec spec;
	struct exec_req x;
	pid_t pid;
	int pidfd;
	bool exited;
	int status, stops;
	/* a backend like the local one: a cancellation's stop leaves the
	 * deadline counting (only the clock's stop moves it on), and the
	 * command may outlive that stop (it ignores SIGTERM) */
	bool local_like, ignore_term;
	int clock_stops;
};

static enum cmd_phase
fake_phase(const struct cmd_loop *c)
{
	const struct fake *f = c->priv;
	if (f->local_like)
		return f->exited ? CMD_ENDED : f->clock_stops ? CMD_STOPPING : CMD_RUNNING;
	return f->exited ? CMD_ENDED : f->stops ? CMD_STOPPING : CMD_RUNNING;
}

static void
fake_stop(struct cmd_loop *c)
{
	struct fake *f = c->priv;
	if (f->exited)
		return;
	f->stops++;
	bool clock = f->local_like && wd_now_ns() >= c->deadline_ns;
	f->clock_stops += clock;
	/* the local-like backend's stop for a cancellation sends its signal,
	 * the clock's SIGKILL */
	kill(f->pid, f->local_like && !clock && c->killed_by ? c->killed_by : SIGKILL);
}

static bool
fake_on_fd(struct cmd_loop *c, int fd)
{
	struct fake *f = c->priv;
	if (fd != f->pidfd)
		return false;
	epoll_ctl(c->ep, EPOLL_CTL_DEL, fd, NULL);
	cr_assert_eq(waitpid(f->pid, &f->status, 0), f->pid);
	f->exited = true;
	c->exit_ns = wd_now_ns();
	return true;
}

static void
fake_describe(struct sandbox *sb, wd_result *r)
{
	(void)sb;
	r->uid = 4242;
}

static const struct cmd_loop_ops fake_ops = {
    .phase = fake_phase,
    .stop = fake_stop,
    .on_fd = fake_on_fd,
};

static void
setup(struct fake *f, uint64_t timeout_ms)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->sb.id, sizeof(f->sb.id), "unitloop");
	f->spec.lim.timeout_ms = timeout_ms;
	f->spec.lim.output_limit = 1 << 20;
	f->sb.spec = &f->spec;
	f->sb.cancel_fd = -1;
	atomic_init(&f->sb.cancel_sig, 0);
	f->x.stdin_fd = -1;
	f->x.stream_fd[1] = f->x.stream_fd[2] = -1;
	f->x.log_fd = f->x.cancel_fd = f->x.cmd_cancel_fd = -1;
	f->pidfd = -1;
	cmd_loop_init(&f->c, &f->sb, &f->x);
	f->c.ops = &fake_ops;
	f->c.priv = f;
}

/* Start `sh -c script` with the loop's stdio, then run the loop. */
static wd_result *
run(struct fake *f, const char *script)
{
	struct cmd_stdio io;
	struct wd_err e = {0};
	cr_assert_eq(cmd_stdio_open(&f->c, &io, &e), 0, "%s", e.msg);
	/* ignored from the fork on (set in the child, a SIGTERM sent at
	 * once could come first), kept across exec */
	void (*was)(int) = f->ignore_term ? signal(SIGTERM, SIG_IGN) : SIG_DFL;
	f->pid = fork();
	cr_assert_geq(f->pid, 0);
	if (f->pid == 0) {
		dup2(io.in, 0);
		dup2(io.outp[1], 1);
		dup2(io.errp[1], 2);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	if (f->ignore_term)
		signal(SIGTERM, was);
	cmd_stdio_take(&f->c, &io);
	cmd_stdio_close(&io);
	f->pidfd = (int)syscall(SYS_pidfd_open, f->pid, 0);
	cr_assert_geq(f->pidfd, 0);
	int extra[] = {f->pidfd};
	cr_assert_eq(cmd_loop_watch(&f->c, extra, 1, &e), 0, "%s", e.msg);
	cr_assert_eq(cmd_loop_run(&f->c, &e), 0, "%s", e.msg);
	wd_result *res = cmd_loop_result(&f->c, fake_describe);
	cmd_output_collect(&f->c.io, res);
	if (!cmd_loop_forced_status(&f->c, res)) {
		res->exit_code = WIFEXITED(f->status) ? WEXITSTATUS(f->status) : -1;
		res->status = res->exit_code;
	}
	cmd_loop_fini(&f->c);
	close(f->pidfd);
	return res;
}

Test(cmd_loop, output_to_its_end_and_the_status)
{
	struct fake f;
	setup(&f, 60000);
	wd_result *r = run(&f, "printf out; printf err >&2; read x; exit 3");
	cr_assert(f.exited);
	cr_assert_eq(f.stops, 0);
	cr_assert_str_eq(r->out[1], "out");
	cr_assert_str_eq(r->out[2], "err");
	cr_assert_eq(r->status, 3);
	cr_assert(!r->timed_out);
	cr_assert_str_eq(r->sandbox_id, "unitloop");
	cr_assert_eq(r->uid, 4242, "the backend's describe was not called");
	cr_assert_gt(r->wall_ns, 0);
	wd_result_free(r);
}

Test(cmd_loop, the_deadline_stops_the_command_and_says_124)
{
	struct fake f;
	setup(&f, 100);
	wd_result *r = run(&f, "exec sleep 30");
	cr_assert(f.c.timed_out);
	cr_assert_eq(f.stops, 1);
	cr_assert(WIFSIGNALED(f.status) && WTERMSIG(f.status) == SIGKILL);
	cr_assert_eq(r->status, 124);
	cr_assert(r->timed_out);
	cr_assert_eq(r->signal, SIGKILL);
	wd_result_free(r);
}

Test(cmd_loop, a_cancellation_before_the_start_stops_it_at_once)
{
	struct fake f;
	setup(&f, 60000);
	f.x.cmd_cancel_fd = eventfd(1, EFD_CLOEXEC);
	wd_result *r = run(&f, "exec sleep 30");
	cr_assert_eq(f.c.killed_by, SIGKILL);
	cr_assert_eq(f.stops, 1);
	cr_assert_eq(r->status, 128 + SIGKILL);
	cr_assert(!r->timed_out);
	close(f.x.cmd_cancel_fd);
	wd_result_free(r);
}

Test(cmd_loop, the_contexts_signal_before_the_start)
{
	struct fake f;
	setup(&f, 60000);
	atomic_int sig;
	atomic_init(&sig, SIGTERM);
	f.x.cancel_fd = eventfd(1, EFD_CLOEXEC);
	f.x.cancel_sig = &sig;
	wd_result *r = run(&f, "exec sleep 30");
	cr_assert_eq(f.c.killed_by, SIGTERM);
	cr_assert_eq(r->status, 128 + SIGTERM);
	cr_assert_eq(r->signal, SIGTERM);
	close(f.x.cancel_fd);
	wd_result_free(r);
}

/* A cancel descriptor readable once the loop runs (no signal said
 * before): seen through epoll, SIGKILL, and acted on once although it
 * stays readable. */
Test(cmd_loop, a_readable_cancel_fd_in_the_loop_is_acted_on_once)
{
	struct fake f;
	setup(&f, 60000);
	atomic_int sig;
	atomic_init(&sig, 0);
	f.x.cancel_fd = eventfd(1, EFD_CLOEXEC);
	f.x.cancel_sig = &sig;
	wd_result *r = run(&f, "exec sleep 30");
	cr_assert_eq(f.c.killed_by, SIGKILL);
	cr_assert_eq(f.stops, 1, "stopped %d times", f.stops);
	cr_assert_eq(r->status, 128 + SIGKILL);
	close(f.x.cancel_fd);
	wd_result_free(r);
}

/* A command cancelled (SIGTERM) that outlives the cancellation's stop
 * until the deadline: the deadline still kills it (the cancellation's
 * stop did not end it), but the result says what happened first, the
 * cancellation (128 + SIGTERM), not a timeout (124). */
Test(cmd_loop, a_cancelled_command_outliving_the_kill_past_the_deadline_stays_cancelled)
{
	struct fake f;
	setup(&f, 200);
	f.local_like = f.ignore_term = true;
	atomic_int sig;
	atomic_init(&sig, SIGTERM);
	f.x.cancel_fd = eventfd(1, EFD_CLOEXEC);
	f.x.cancel_sig = &sig;
	wd_result *r = run(&f, "exec sleep 30");
	cr_assert_eq(f.c.killed_by, SIGTERM);
	cr_assert_eq(f.clock_stops, 1, "the deadline stopped it %d times", f.clock_stops);
	cr_assert(WIFSIGNALED(f.status) && WTERMSIG(f.status) == SIGKILL,
		  "it outlived the SIGTERM until the deadline's kill");
	cr_assert(!r->timed_out, "a cancelled command reported as timed out");
	cr_assert_eq(r->status, 128 + SIGTERM, "status %d", r->status);
	cr_assert_eq(r->signal, SIGTERM);
	close(f.x.cancel_fd);
	wd_result_free(r);
}

Test(cmd_loop, the_drain_grace_stops_reading_pipes_held_after_the_end)
{
	struct fake f;
	setup(&f, 60000);
	f.c.drain_grace = true;
	/* the background sleep holds stdout and stderr after sh's exit;
	 * without the grace the loop would wait for it */
	wd_result *r = run(&f, "printf held; sleep 600 & echo $! >&2; exit 0");
	cr_assert(f.c.closed_late);
	cr_assert_eq(r->status, 0);
	cr_assert_str_eq(r->out[1], "held");
	int held = atoi(r->out[2]);
	cr_assert_gt(held, 1);
	kill(held, SIGKILL);
	wd_result_free(r);
}
