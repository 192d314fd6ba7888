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

/* How long a session command may take to die after its group was killed
 * before its runsc exec client is killed instead. */
#define STOP_GRACE_NS (3000ULL * 1000000ULL)

struct grun {
	struct cmd_loop c; /* the output, the clock, the cancellations */
	struct sandbox *sb;
	struct gv *g;
	const struct exec_req *x;
	bool oneshot;
	bool resident; /* through the resident executor: note_fd, no pidfd */
	int note_fd;
	uint32_t seq;
	int pidfd; /* runsc run (the launcher) or the runsc exec client */
	bool exited, sandbox_dead, stopped;
	int wstatus;
	uint64_t stop_ns;
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
		r->c.exit_ns = wd_now_ns();
		return;
	}
	if (k == (ssize_t)sizeof(n) && n.kind == GV_NOTE_FAIL && !r->exited) {
		/* fork or pipe failed inside gVisor: as a failed start */
		r->wstatus = (126 & 0xff) << 8;
		r->exited = true;
		r->c.exit_ns = wd_now_ns();
		wd_log(WD_LOG_WARN, "sandbox %s: command %u could not be started in gVisor: %s",
		       r->sb->id, r->seq, strerror(n.value));
		return;
	}
	if (k == (ssize_t)sizeof(n))
		return;
	epoll_ctl(r->c.ep, EPOLL_CTL_DEL, r->note_fd, NULL);
	close(r->note_fd);
	r->note_fd = -1;
	if (!r->exited) {
		r->sandbox_dead = true;
		r->exited = true;
		r->wstatus = SIGKILL;
		r->c.exit_ns = wd_now_ns();
	}
}

static void
on_exit_of_runsc(struct grun *r)
{
	epoll_ctl(r->c.ep, EPOLL_CTL_DEL, r->pidfd, NULL);
	int st = gv_wait(r->pidfd, -1);
	r->wstatus = st < 0 ? SIGKILL : st;
	r->exited = true;
	r->c.exit_ns = wd_now_ns();
}

static void
on_sandbox_exit(struct grun *r)
{
	epoll_ctl(r->c.ep, EPOLL_CTL_DEL, r->g->sentry_pidfd, NULL);
	pthread_mutex_lock(&r->sb->lock);
	r->sb->state = SB_DEAD;
	pthread_mutex_unlock(&r->sb->lock);
	if (!r->exited)
		r->sandbox_dead = true;
}

/* ---- the loop's ops (cmd_loop.c) ---- */

static enum cmd_phase
op_phase(const struct cmd_loop *c)
{
	const struct grun *r = c->priv;
	return r->exited ? CMD_ENDED : r->stopped ? CMD_STOPPING : CMD_RUNNING;
}

static void
op_stop(struct cmd_loop *c)
{
	stop_command(c->priv);
}

static bool
op_on_fd(struct cmd_loop *c, int fd)
{
	struct grun *r = c->priv;
	if (fd == r->pidfd && r->pidfd >= 0 && !r->exited)
		on_exit_of_runsc(r);
	else if (fd == r->note_fd && r->note_fd >= 0)
		on_note(r);
	else if (fd == r->g->sentry_pidfd && r->g->sentry_pidfd >= 0)
		on_sandbox_exit(r);
	else
		return false;
	return true;
}

/* The stop grace: a command that outlived its kill loses its runsc
 * client, or (through the executor) the whole sandbox. */
static void
op_tick(struct cmd_loop *c, uint64_t now)
{
	struct grun *r = c->priv;
	if (!r->exited && r->stopped && now >= r->stop_ns + STOP_GRACE_NS) {
		wd_log(WD_LOG_WARN, "sandbox %s: command %u outlived its kill; its %s goes instead",
		       r->sb->id, r->seq, r->resident ? "sandbox" : "runsc client");
		if (r->resident)
			kill_sandbox(r->sb);
		else
			syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
		r->stop_ns = UINT64_MAX / 2;
	}
}

static void
op_closed_late(struct cmd_loop *c)
{
	struct grun *r = c->priv;
	if (r->resident)
		gv_res_close(r->g, r->seq);
}

static const struct cmd_loop_ops gv_loop_ops = {
    .phase = op_phase,
    .stop = op_stop,
    .on_fd = op_on_fd,
    .tick = op_tick,
    .closed_late = op_closed_late,
    .stop_poll_ms = 50, /* watch the stop grace */
};

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
	r->c.io.fd[1] = out[1];
	r->c.io.fd[2] = out[2];
	return 0;
}

static int
launch(struct grun *r, struct wd_err *err)
{
	int rc;
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
	/* the write ends go to runsc (which hands them to the sentry) and
	 * are closed here */
	struct cmd_stdio io;
	if ((rc = cmd_stdio_open(&r->c, &io, err)) == 0 &&
	    (rc = start_command(r, io.in, io.outp[1], io.errp[1], err)) == 0)
		cmd_stdio_take(&r->c, &io);
	cmd_stdio_close(&io);
	return rc;
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
	if (cmd_loop_forced_status(&r->c, res))
		return; /* a timeout or a cancellation */
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
collect(struct grun *r, const struct cgroup_stats *before)
{
	struct sandbox *sb = r->sb;
	wd_result *res = cmd_loop_result(&r->c, gv_describe);
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
	cmd_output_collect(&r->c.io, res);
	set_status(r, res);
	if (res->oom_killed && !r->c.timed_out && !r->c.killed_by) {
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
	struct grun r = {.sb = sb, .g = g, .x = x, .pidfd = -1, .note_fd = -1};
	cmd_loop_init(&r.c, sb, x);
	r.c.ops = &gv_loop_ops;
	r.c.priv = &r;
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
	r.c.drain_grace = !r.oneshot;
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
	int fds[] = {r.pidfd, r.note_fd, r.oneshot ? -1 : g->sentry_pidfd};
	if ((rc = cmd_loop_watch(&r.c, fds, WD_ARRAY_SIZE(fds), err)) < 0 ||
	    (rc = cmd_loop_run(&r.c, err)) < 0)
		goto out;
	if (r.resident) {
		/* no runsc between: its 128 is not to be read */
	} else if (r.exited && WIFEXITED(r.wstatus) && WEXITSTATUS(r.wstatus) == 128 &&
		   !r.c.timed_out && !r.c.killed_by && sandbox_died(&r, &before)) {
		/* runsc exec lost the sandbox under the command (the OOM
		 * killer took the sentry): the command's result says so */
		r.sandbox_dead = true;
	} else if (r.exited && WIFEXITED(r.wstatus) && WEXITSTATUS(r.wstatus) == 128 &&
		   !r.c.timed_out && !r.c.killed_by) {
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
	*out = collect(&r, &before);
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
	rc = 0;
out:
	cmd_loop_fini(&r.c);
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
