/* supervise/gvisor_exec: one command in a gvisor sandbox.
 *
 * A one-shot run (the sandbox's first command is also its last) is the
 * container's init: config.json gets the command as its process and the
 * launcher becomes `runsc run`, whose exit is the command's.  Anything
 * else goes through a session: `runsc create` + `runsc start` with the
 * resident executor as init (once, gv_start_session), then per command a
 * RUN message to it (gvisor_resident.c): its output comes back framed
 * and is written into socket pairs that this loop reads as before.  A
 * command with stdin, or past the executor's bounds (GVW_MAX_CMDS at
 * once, GVW_MAX_REQUEST of text), takes `runsc exec --process p<seq>.json`
 * instead, whose stdio are our pipes, handed to gVisor as host
 * descriptors.  The result says which (exec_path).
 *
 * One loop per command (struct grun), over the output pipes, the runsc
 * process, the session's sandbox process, the cancellation descriptors
 * and the clock.  A timeout or a cancellation ends a one-shot run's whole
 * sandbox (every process of its cgroup) and a session command's process
 * group (a `kill` run inside the sandbox: runsc's own kill reaches one
 * pid only, and each exec'd process leads its own session and group). */
#include "supervise/gvisor.h"
#include "supervise/gvisor_wire.h"
#include "cgroup/cgroup.h"
#include "jail/jail.h"
#include "util/json.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* After a session command's end, how long its output pipes may stay open
 * (held by something it left running) before we stop reading them; as at
 * the local levels. */
#define DRAIN_GRACE_NS (200ULL * 1000000ULL)
/* How long a session command may take to die after its group was killed
 * before its runsc exec client is killed instead. */
#define STOP_GRACE_NS (3000ULL * 1000000ULL)

struct grun {
	struct sandbox *sb;
	struct gv *g;
	const struct exec_req *x;
	bool oneshot;
	bool resident; /* through the resident executor: note_fd, no pidfd */
	int note_fd;
	uint32_t seq;
	struct cmd_output io; /* io.fd[1], io.fd[2]: the output pipes */
	int pidfd;	      /* runsc run (the launcher) or the runsc exec client */
	int ep;
	bool exited, timed_out, sandbox_dead, closed_late, stopped;
	int wstatus;
	int killed_by;
	uint64_t exit_ns, stop_ns;
	struct stdin_relay relay;
};

/* The whole sandbox: gVisor's processes are all in its cgroup. */
static void
kill_sandbox(struct sandbox *sb)
{
	struct gv *g = sb->priv;
	if (sb->cg)
		cgroup_kill(sb->cg);
	else if (g->sentry_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, g->sentry_pidfd, SIGKILL, NULL, 0);
}

/* A session command's process group, by a kill inside the sandbox (as the
 * sandbox user, who owns it): the exec'd process leads its own group. */
static void
kill_group(struct grun *r)
{
	char name[32], pid[24] = "";
	snprintf(name, sizeof(name), "p%u.pid", r->seq);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", r->g->dir, name);
	if (wd_read_file_at(AT_FDCWD, path, pid, sizeof(pid)) <= 0 || atoi(pid) <= 1) {
		/* runsc has not said which pid it is (yet): its client goes,
		 * which ends the command when the sentry notices */
		syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
		return;
	}
	pid[strcspn(pid, "\n")] = '\0';
	const char *more[] = {
	    "exec", "--user", "1000:1000", r->g->cid, "/bin/sh", "-c", "kill -s KILL -- -\"$0\"",
	    pid,    NULL};
	struct wd_err e = {0};
	if (gv_client(r->sb, r->g, more, 5000, &e) < 0)
		wd_log(WD_LOG_WARN, "sandbox %s: killing command %u: %s", r->sb->id, r->seq, e.msg);
}

static void
stop_command(struct grun *r)
{
	if (r->stopped || r->exited)
		return;
	r->stopped = true;
	r->stop_ns = wd_now_ns();
	if (r->oneshot || r->sandbox_dead)
		kill_sandbox(r->sb);
	else if (r->resident)
		gv_res_kill(r->g, r->seq, SIGKILL);
	else
		kill_group(r);
}

/* A record of the executor about the command, or its note's EOF: the
 * executor is lost (the sandbox with it). */
static void
on_note(struct grun *r)
{
	struct gv_note n;
	ssize_t k;
	while ((k = read(r->note_fd, &n, sizeof(n))) < 0 && errno == EINTR)
		;
	if (k == (ssize_t)sizeof(n) && n.kind == GV_NOTE_EXIT && !r->exited) {
		r->wstatus = n.value;
		r->exited = true;
		r->exit_ns = wd_now_ns();
		return;
	}
	if (k == (ssize_t)sizeof(n) && n.kind == GV_NOTE_FAIL && !r->exited) {
		/* fork or pipe failed inside gVisor: as a failed start */
		r->wstatus = (126 & 0xff) << 8;
		r->exited = true;
		r->exit_ns = wd_now_ns();
		wd_log(WD_LOG_WARN, "sandbox %s: command %u could not be started in gVisor: %s",
		       r->sb->id, r->seq, strerror(n.value));
		return;
	}
	if (k == (ssize_t)sizeof(n))
		return;
	epoll_ctl(r->ep, EPOLL_CTL_DEL, r->note_fd, NULL);
	close(r->note_fd);
	r->note_fd = -1;
	if (!r->exited) {
		r->sandbox_dead = true;
		r->exited = true;
		r->wstatus = SIGKILL;
		r->exit_ns = wd_now_ns();
	}
}

static void
on_cancel(struct grun *r, int sig)
{
	if (!r->killed_by)
		r->killed_by = sig > 0 ? sig : SIGKILL;
	stop_command(r);
}

static void
on_exit_of_runsc(struct grun *r)
{
	epoll_ctl(r->ep, EPOLL_CTL_DEL, r->pidfd, NULL);
	int st = gv_wait(r->pidfd, -1);
	r->wstatus = st < 0 ? SIGKILL : st;
	r->exited = true;
	r->exit_ns = wd_now_ns();
}

static void
on_sandbox_exit(struct grun *r)
{
	epoll_ctl(r->ep, EPOLL_CTL_DEL, r->g->sentry_pidfd, NULL);
	pthread_mutex_lock(&r->sb->lock);
	r->sb->state = SB_DEAD;
	pthread_mutex_unlock(&r->sb->lock);
	if (!r->exited)
		r->sandbox_dead = true;
}

static int
loop(struct grun *r, uint64_t deadline_ns, struct wd_err *err)
{
	struct sandbox *sb = r->sb;
	size_t cap = 256 << 10;
	char *buf = wd_xmalloc(cap);
	while (!(r->exited && r->io.fd[1] < 0 && r->io.fd[2] < 0)) {
		uint64_t now = wd_now_ns();
		int timeout = -1;
		if (!r->exited && !r->stopped)
			timeout = now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000 + 1);
		else if (!r->exited)
			timeout = 50; /* watch the stop grace */
		else if (!r->oneshot)
			timeout = 20; /* watch the drain grace */
		struct epoll_event evs[8];
		int n = epoll_wait(r->ep, evs, 8, timeout);
		if (n < 0 && errno != EINTR) {
			free(buf);
			return wd_err_sys(err, errno, "epoll_wait");
		}
		now = wd_now_ns();
		if (!r->exited && !r->stopped && now >= deadline_ns) {
			r->timed_out = true;
			stop_command(r);
		}
		if (!r->exited && r->stopped && now >= r->stop_ns + STOP_GRACE_NS) {
			wd_log(WD_LOG_WARN,
			       "sandbox %s: command %u outlived its kill; its %s goes instead",
			       sb->id, r->seq, r->resident ? "sandbox" : "runsc client");
			if (r->resident)
				kill_sandbox(sb);
			else
				syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
			r->stop_ns = UINT64_MAX / 2;
		}
		if (r->exited && !r->oneshot && now >= r->exit_ns + DRAIN_GRACE_NS &&
		    (r->io.fd[1] >= 0 || r->io.fd[2] >= 0)) {
			r->closed_late = true;
			cmd_output_close(&r->io);
			if (r->resident)
				gv_res_close(r->g, r->seq);
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (stdin_relay_owns(&r->relay, fd))
				stdin_relay_pump(&r->relay);
			else if (fd == r->io.fd[1] && r->io.fd[1] >= 0)
				cmd_output_drain(&r->io, 1, r->ep, buf, cap);
			else if (fd == r->io.fd[2] && r->io.fd[2] >= 0)
				cmd_output_drain(&r->io, 2, r->ep, buf, cap);
			else if (fd == r->pidfd && r->pidfd >= 0 && !r->exited)
				on_exit_of_runsc(r);
			else if (fd == r->note_fd && r->note_fd >= 0)
				on_note(r);
			else if (fd == r->g->sentry_pidfd && r->g->sentry_pidfd >= 0)
				on_sandbox_exit(r);
			else if (fd == sb->cancel_fd || fd == r->x->cancel_fd) {
				/* watched once: they stay readable, and the loop
				 * would spin on them until the command ended */
				epoll_ctl(r->ep, EPOLL_CTL_DEL, fd, NULL);
				on_cancel(r, fd == sb->cancel_fd ? atomic_load(&sb->cancel_sig)
					     : r->x->cancel_sig	 ? atomic_load(r->x->cancel_sig)
								 : 0);
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

/* Write the command's process (one-shot: the whole config.json) and start
 * runsc with stdio in, out_w, err_w. */
static int
start_command(struct grun *r, int in, int out_w, int err_w, struct wd_err *err)
{
	struct sandbox *sb = r->sb;
	struct gv *g = r->g;
	const struct exec_req *x = r->x;
	wd_autofree char *cwd = sandbox_command_cwd(sb, x->cwd, err);
	if (!cwd)
		return -EINVAL;
	const char **argv = NULL;
	struct gv_proc p = {.in = in, .out = out_w, .err = err_w, .peer = g};
	int rc;
	char dir_opt[PATH_MAX], proc[PATH_MAX], pidf[PATH_MAX];
	if (r->oneshot) {
		wd_autofree char *cfg = gv_oci_config(sb, g, x->argv, x->env, cwd, false);
		if ((rc = gv_write_file(g, "config.json", cfg, err)) < 0)
			return rc;
		snprintf(dir_opt, sizeof(dir_opt), "%s", g->dir);
		const char *more[] = {"run", "--bundle", dir_opt, g->cid, NULL};
		argv = gv_argv(sb, g, more);
		p.sb = sb; /* the launcher: cgroup, namespaces, trees */
	} else {
		struct jw w;
		jw_init(&w, 0);
		gv_oci_process(&w, sb, x->argv, x->env, cwd, false, false);
		wd_autofree char *json = jw_steal(&w);
		char name[32];
		snprintf(name, sizeof(name), "p%u.json", r->seq);
		if ((rc = gv_write_file(g, name, json, err)) < 0)
			return rc;
		snprintf(proc, sizeof(proc), "%s/p%u.json", g->dir, r->seq);
		snprintf(pidf, sizeof(pidf), "%s/p%u.pid", g->dir, r->seq);
		const char *more[] = {"exec", "--process", proc, "--internal-pid-file",
				      pidf,   g->cid,	   NULL};
		argv = gv_argv(sb, g, more);
	}
	p.argv = argv;
	rc = gv_spawn(&p, &r->pidfd, err);
	free(argv);
	if (rc == 0 && r->oneshot) {
		pthread_mutex_lock(&sb->lock);
		g->started = true;
		g->run_pidfd = r->pidfd;
		sb->state = SB_READY;
		pthread_mutex_unlock(&sb->lock);
	}
	return rc;
}

/* Pipes, then runsc.  The write ends go to runsc (which hands them to the
 * sentry) and are closed here. */
/* Through the resident executor: 0 (r->resident), 1 when it cannot take
 * this command (the caller takes runsc exec), or -errno. */
static int
launch_resident(struct grun *r, struct wd_err *err)
{
	const struct exec_req *x = r->x;
	/* stdin is runsc exec's: the executor relays output only */
	if (r->oneshot || x->stdin_fd >= 0 || !gv_res_usable(r->g))
		return 1;
	wd_autofree char *cwd = sandbox_command_cwd(r->sb, x->cwd, err);
	if (!cwd)
		return -EINVAL;
	const struct jail_plan *pl = &r->sb->prep->plan;
	const char **env = gv_env_merge((const char *const *)pl->envp, x->env);
	int out[3] = {-1, -1, -1};
	int rc = gv_res_run(r->g, r->seq, x->argv, env, cwd, out, &r->note_fd, err);
	free(env);
	if (rc == -E2BIG || rc == -EAGAIN)
		return 1;
	if (rc < 0)
		return rc;
	r->resident = true;
	r->io.fd[1] = out[1];
	r->io.fd[2] = out[2];
	return 0;
}

static int
launch(struct grun *r, struct wd_err *err)
{
	const struct exec_req *x = r->x;
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, relay_r = -1, rc;
	if ((rc = launch_resident(r, err)) <= 0)
		return rc;
	/* a warm pool's sandbox: its sandbox-wide seccomp table lacks mount
	 * and umount2, which the executor's own filter refuses to what it
	 * starts (gvisor_oci.c); runsc exec would start a command outside
	 * that filter */
	if (r->sb->spec->vacant)
		return wd_err_set(err, WD_E_UNSUPPORTED,
				  "a pooled gVisor sandbox runs commands through its executor "
				  "only: a command with stdin, or with more than %u KiB of "
				  "arguments and environment, runs outside the pool",
				  GVW_MAX_REQUEST >> 10);
	wd_autoclose int devnull = -1;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = wd_err_sys(err, errno, "create pipes");
		goto out;
	}
	fcntl(outp[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(errp[0], F_SETPIPE_SZ, 1 << 20);
	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	/* A terminal is relayed, never handed over: gVisor would forward
	 * the sandbox's ioctls on it (stty, TIOCSTI) to the real one. */
	if (x->stdin_fd >= 0 && isatty(x->stdin_fd)) {
		if ((rc = stdin_relay_open(&r->relay, x->stdin_fd, &relay_r, err)) < 0)
			goto out;
	}
	int in = relay_r >= 0 ? relay_r : x->stdin_fd;
	if (in < 0) {
		in = devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (in < 0) {
			rc = wd_err_sys(err, errno, "open /dev/null");
			goto out;
		}
	}
	if ((rc = start_command(r, in, outp[1], errp[1], err)) < 0)
		goto out;
	r->io.fd[1] = wd_steal_fd(&outp[0]);
	r->io.fd[2] = wd_steal_fd(&errp[0]);
out:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	if (relay_r >= 0)
		close(relay_r);
	return rc;
}

static void
watch(struct grun *r, int fd)
{
	if (fd < 0)
		return;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Whether the sandbox died during the command: the sentry is gone, or the
 * cgroup saw an OOM kill since the command started. */
static bool
sandbox_died(struct grun *r, const struct cgroup_stats *before)
{
	if (r->sandbox_dead)
		return true;
	struct pollfd p = {.fd = r->g->sentry_pidfd, .events = POLLIN};
	if (r->g->sentry_pidfd >= 0 && poll(&p, 1, 0) == 1)
		return true;
	struct cgroup_stats st = {0};
	return r->sb->cg && cgroup_stats(r->sb->cg, &st) == 0 && st.oom_killed &&
	       !before->oom_killed;
}

/* The command's status.  runsc reports a command killed by signal N as
 * exit status 128+N (there is no other channel for the wait status), so
 * 129..192 is read as a signal: a command that exits 137 by itself is
 * indistinguishable from one SIGKILLed (docs/isolation.md, gvisor). */
static void
set_status(struct grun *r, wd_result *res)
{
	int st = r->wstatus;
	if (r->timed_out) {
		res->timed_out = true;
		res->status = 124;
		res->exit_code = -1;
		res->signal = SIGKILL;
		return;
	}
	if (r->killed_by) {
		res->status = 128 + r->killed_by;
		res->signal = r->killed_by;
		res->exit_code = -1;
		return;
	}
	if (r->exited && WIFEXITED(st) && !r->sandbox_dead) {
		int c = WEXITSTATUS(st);
		/* the executor's status is wait4's own: 137 is an exit of 137 */
		if (c > 128 && c <= 128 + 64 && !r->resident) {
			res->exit_code = -1;
			res->signal = c - 128;
		} else {
			res->exit_code = c;
		}
		res->status = c;
		return;
	}
	/* runsc itself was killed, or the sandbox died (OOM, warden) */
	res->exit_code = -1;
	res->signal = WIFSIGNALED(st) && !r->sandbox_dead ? WTERMSIG(st) : SIGKILL;
	res->status = 128 + res->signal;
}

static wd_result *
collect(struct grun *r, uint64_t t0, const struct cgroup_stats *before)
{
	struct sandbox *sb = r->sb;
	wd_result *res = result_new(sb->id);
	gv_describe(sb, res);
	res->wall_ns = wd_now_ns() - t0;
	if (sb->cg) {
		/* gVisor's processes are all in the cgroup: the sentry's own
		 * work counts with the command's (docs/isolation.md) */
		struct cgroup_stats st = {0};
		if (cgroup_stats(sb->cg, &st) == 0) {
			res->peak_memory = st.memory_peak;
			res->cpu_ns = st.cpu_ns >= before->cpu_ns ? st.cpu_ns - before->cpu_ns : 0;
			res->oom_killed = st.oom_killed && !before->oom_killed;
		}
	}
	cmd_output_collect(&r->io, res);
	set_status(r, res);
	if (res->oom_killed && !r->timed_out && !r->killed_by) {
		res->exit_code = -1;
		res->signal = SIGKILL;
		res->status = 128 + SIGKILL;
	}
	return res;
}

int
gv_exec(struct sandbox *sb, const struct exec_req *x, wd_result **out, struct wd_err *err)
{
	struct gv *g = sb->priv;
	struct grun r = {
	    .sb = sb, .g = g, .x = x, .io.fd = {-1, -1, -1}, .pidfd = -1, .ep = -1, .note_fd = -1};
	stdin_relay_init(&r.relay);
	uint64_t t0 = wd_now_ns();
	uint64_t timeout_ms = x->timeout_ms ? x->timeout_ms : sb->spec->lim.timeout_ms;
	uint64_t deadline = t0 + timeout_ms * 1000000ULL;
	struct cgroup_stats before = {0};
	int rc;

	/* The first command of a sandbox nobody waited for, and its last:
	 * runsc run, the cheapest start.  Otherwise a session. */
	pthread_mutex_lock(&sb->lock);
	bool dead = sb->state == SB_DEAD;
	r.oneshot = !g->started && (x->flags & SYNC_EXEC_LAST);
	r.seq = ++sb->seq;
	if (!dead)
		sb->running++;
	pthread_mutex_unlock(&sb->lock);
	if (dead)
		return wd_err_set(err, WD_E_INVAL, "the sandbox has ended");
	if (!r.oneshot && (rc = sb->ops->ready(sb, err)) < 0)
		goto out;
	if (sb->cg && !r.oneshot)
		cgroup_stats(sb->cg, &before);
	off_t log_from = gv_log_size(g);
	if ((rc = launch(&r, err)) < 0)
		goto out;
	wd_log(WD_LOG_DEBUG, "sandbox %s: +%.3f ms 6 %s started", sb->id,
	       (double)(wd_now_ns() - sb->t0) / 1e6,
	       r.oneshot    ? "runsc run"
	       : r.resident ? "resident exec"
			    : "runsc exec");
	cmd_output_init(&r.io, sb, x, deadline);
	r.ep = epoll_create1(EPOLL_CLOEXEC);
	if (r.ep < 0) {
		rc = wd_err_sys(err, errno, "epoll_create1");
		goto out;
	}
	r.relay.ep = r.ep;
	int fds[] = {r.io.fd[1],
		     r.io.fd[2],
		     r.pidfd,
		     r.note_fd,
		     r.oneshot ? -1 : g->sentry_pidfd,
		     sb->cancel_fd,
		     x->cancel_fd,
		     x->cmd_cancel_fd};
	for (size_t i = 0; i < WD_ARRAY_SIZE(fds); i++)
		watch(&r, fds[i]);
	stdin_relay_watch(&r.relay);
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
	if (r.resident) {
		/* no runsc between: its 128 is not to be read */
	} else if (r.exited && WIFEXITED(r.wstatus) && WEXITSTATUS(r.wstatus) == 128 &&
		   !r.timed_out && !r.killed_by && sandbox_died(&r, &before)) {
		/* runsc exec lost the sandbox under the command (the OOM
		 * killer took the sentry): the command's result says so */
		r.sandbox_dead = true;
	} else if (r.exited && WIFEXITED(r.wstatus) && WEXITSTATUS(r.wstatus) == 128 &&
		   !r.timed_out && !r.killed_by) {
		/* 128 is runsc's own failure (the sandbox or the process could
		 * not start; its message went to the command's stderr), unless
		 * the command itself exited 128: runsc's log says which */
		char why[200];
		if (gv_runsc_error(g, log_from, why, sizeof(why))) {
			rc = wd_err_set(err, WD_E_SYS, "runsc %s: %s", r.oneshot ? "run" : "exec",
					why);
			goto out;
		}
	}
	wd_log(WD_LOG_DEBUG, "sandbox %s: +%.3f ms 7 command ended", sb->id,
	       (double)(wd_now_ns() - sb->t0) / 1e6);
	*out = collect(&r, t0, &before);
	snprintf((*out)->exec_path, sizeof((*out)->exec_path), "%s",
		 r.oneshot    ? "runsc-run"
		 : r.resident ? "resident"
			      : "runsc-exec");
	if (!r.oneshot && (*out)->oom_killed) {
		/* Under gVisor the host's OOM killer can only have taken one
		 * of gVisor's own processes (the command's memory is the
		 * sentry's), and runsc exec may return before the sentry's
		 * exit shows: the sandbox is lost either way, so end it now
		 * rather than let the next command find it half dead. */
		kill_sandbox(sb);
		pthread_mutex_lock(&sb->lock);
		sb->state = SB_DEAD;
		pthread_mutex_unlock(&sb->lock);
	}
	if (r.closed_late)
		wd_log(WD_LOG_WARN,
		       "sandbox %s: a process the command started still held its "
		       "output %.0f ms after it ended; stopped reading",
		       sb->id, DRAIN_GRACE_NS / 1e6);
	rc = 0;
out:
	cmd_output_fini(&r.io);
	stdin_relay_stop(&r.relay);
	int own[] = {r.ep};
	for (size_t i = 0; i < WD_ARRAY_SIZE(own); i++)
		if (own[i] >= 0)
			close(own[i]);
	if (!r.oneshot && r.pidfd >= 0) {
		if (!r.exited)
			gv_wait(r.pidfd, 0);
		close(r.pidfd);
	}
	if (r.note_fd >= 0)
		close(r.note_fd);
	if (!r.oneshot && !r.resident) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/p%u.json", g->dir, r.seq);
		unlink(path);
		snprintf(path, sizeof(path), "%s/p%u.pid", g->dir, r.seq);
		unlink(path);
	}
	pthread_mutex_lock(&sb->lock);
	sb->running--;
	pthread_mutex_unlock(&sb->lock);
	return rc;
}
