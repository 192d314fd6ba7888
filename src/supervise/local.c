/* supervise/local: the backend of the container and process levels: a
 * sandbox is a pid 1 of our own (jail/pid1.c) cloned from this process,
 * with its cgroup and egress proxy held here (docs/architecture.md's step order: 1, 2, 7).
 *
 * The two levels differ in the plan (namespaces and mounts or none) and in
 * three places below, each marked: the clone flags and the uid maps, when
 * the cgroup is made, and how the sandbox is ended.  Everything else, the
 * protocol and the command loop (local_exec.c), is one code path. */
#include "supervise/supervise.h"
#include "spec/spec.h"
#include "cgroup/cgroup.h"
#include "jail/jail.h"
#include "net/net.h"
#include "policy/policy.h"
#include "files/files.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static bool
is_container(const struct sandbox *sb)
{
	return sb->ops->level == WD_ISOLATION_CONTAINER;
}

/* ---- prepare: plan, host build, egress proxy (no process yet) ---- */

/* Every proxy and DNS decision: an event of this sandbox, and the spec's
 * JSON handler (wd_spec_set_event_handler) if one is set.  Called on the
 * proxy's thread. */
static void
net_event_cb(const struct net_event *ev, void *data)
{
	struct sandbox *sb = data;
	struct wd_event e = {.kind = WD_EVENT_NETWORK,
			     .name = "network",
			     .sandbox_id = sb->id,
			     .net = ev,
			     .policy_stage = sb->policy_stage};
	event_emit(sb->events, &e);
	if (!ev->allowed)
		sandbox_note_refusal(sb, ev);
	if (sb->spec->event_fn) {
		char *j = result_net_event_json(ev);
		sb->spec->event_fn(j, sb->spec->event_data);
		free(j);
	}
}

static int
prepare_proxy(struct sandbox *sb, struct wd_err *err)
{
	const wd_spec *spec = sb->spec;
	if (!spec->net_rules && net_rules_new(&sb->own_rules) < 0)
		return wd_err_set(err, WD_E_INTERNAL, "out of memory");
	struct net_config nc;
	net_config_init(&nc);
	nc.sandbox_id = sb->id;
	nc.rules = spec->net_rules ? spec->net_rules : sb->own_rules;
	nc.tls_intercept = spec->tls_intercept;
	nc.upstream_ca_file = spec->upstream_ca;
	nc.secrets = spec->secrets; /* checked against the rules there */
	return net_proxy_new(&nc, net_event_cb, sb, &sb->proxy, err);
}

int
sandbox_plan(struct sandbox *sb, bool container, bool time_ns, struct wd_err *err)
{
	const wd_spec *spec = sb->spec;
	int rc;
	/* Egress: the proxy exists before the plan, which needs its CA for
	 * the jail's trust store; it serves once its sockets exist. */
	if (spec->net == WD_NET_PROXY && (rc = prepare_proxy(sb, err)) < 0)
		return rc;
	/* the spec's variables and the secrets' placeholders; never a
	 * secret's value, which stays in warden */
	const char **env = NULL;
	size_t nenv = 0;
	if ((rc = spec_jail_env(spec, &env, &nenv, err)) < 0)
		return rc;
	struct jail_bind *binds = wd_xcalloc(spec->nbinds + 1, sizeof(*binds));
	for (size_t i = 0; i < spec->nbinds; i++)
		binds[i] = (struct jail_bind){
		    spec->binds[i].real ? spec->binds[i].real : spec->binds[i].src,
		    spec->binds[i].dst, spec->binds[i].rw, spec->binds[i].real != NULL};
	wd_autofree char *cwd = NULL;
	const char *ws = spec->workspace;
	if (!ws)
		ws = cwd = getcwd(NULL, 0);
	/* trees workspace/ made for this sandbox: a cow overlay, the home and
	 * /tmp of its disk */
	struct jail_tree trees[3];
	size_t ntrees = 0;
	if (spec->tree_ws >= 0)
		trees[ntrees++] = (struct jail_tree){"/workspace", spec->tree_ws, "cow workspace"};
	if (spec->tree_home >= 0)
		trees[ntrees++] =
		    (struct jail_tree){"/home/sandbox", spec->tree_home, "home (sandbox disk)"};
	if (spec->tree_tmp >= 0)
		trees[ntrees++] = (struct jail_tree){"/tmp", spec->tree_tmp, "/tmp (sandbox disk)"};
	/* protected paths: warden's, then the spec's (and the policy's) */
	size_t nd = 0;
	while (ws_default_protect[nd])
		nd++;
	const char **protect = wd_xcalloc(nd + spec->nprotect + 1, sizeof(char *));
	for (size_t i = 0; i < nd; i++)
		protect[i] = ws_default_protect[i];
	for (size_t i = 0; i < spec->nprotect; i++)
		protect[nd + i] = spec->protect[i];
	/* NO_PROXY: the jail's own loopback names, less any an allow rule
	 * names (--allow-host 127.0.0.1:4873 means the host's registry on
	 * that port; left in NO_PROXY, npm, curl and pip would connect to
	 * the jail's own loopback, where nothing listens, and fail with
	 * EACCES instead of reaching the proxy).  Still only what the rule
	 * admits gets through: the proxy judges every request. */
	char no_proxy[32] = "";
	if (sb->proxy) {
		static const char *const names[] = {"localhost", "127.0.0.1", "::1"};
		const struct net_rules *rules = spec->net_rules ? spec->net_rules : sb->own_rules;
		for (size_t i = 0; i < WD_ARRAY_SIZE(names); i++)
			if (!net_rules_admits_name(rules, names[i]))
				snprintf(no_proxy + strlen(no_proxy),
					 sizeof(no_proxy) - strlen(no_proxy), "%s%s",
					 no_proxy[0] ? "," : "", names[i]);
	}
	struct jail_config cfg = {
	    .container = container,
	    .workspace = ws ? ws : ".",
	    .binds = binds,
	    .nbinds = spec->nbinds,
	    .env = env,
	    .nenv = nenv,
	    .term = spec->term,
	    .tmp_bytes = spec->lim.tmp_bytes,
	    .nofile = spec->lim.nofile,
	    .fsize = spec->lim.fsize,
	    .ports = spec->ports,
	    .nports = spec->nports,
	    .net_proxy = sb->proxy != NULL,
	    .ca_pem = sb->proxy && spec->tls_intercept ? net_proxy_ca_pem(sb->proxy) : NULL,
	    .no_proxy = no_proxy,
	    .time_ns = time_ns,
	    .reproducible = spec->reproducible,
	    .trees = trees,
	    .ntrees = ntrees,
	    .home = spec->tree_home >= 0 ? "/home/sandbox" : NULL,
	    .protect = protect,
	    .nprotect = container ? nd + spec->nprotect : 0,
	    .vacant = spec->vacant,
	    .image_root = spec->image_root,
	    .user_name = spec->image_user,
	};
	rc = jail_plan_build(&cfg, &sb->prep, err);
	if (rc == 0)
		rc = jail_landlock_required(container, sb->prep->plan.landlock_abi,
					    spec->best_effort, err);
	if (rc == 0 && !container && sb->prep->plan.landlock_abi == 0)
		wd_log(WD_LOG_WARN, "no Landlock on this kernel: the command's writes are not "
				    "fenced (--best-effort)");
	/* The process level: the command also writes the host's /tmp and
	 * /dev/shm (the workspace and binds were checked when the spec was
	 * made): an approval store there, writable by the command's uid,
	 * lets it approve its own pauses (policy/workspace.c). */
	static const char *const host_rw[] = {"/tmp", "/dev/shm", NULL};
	char store[PATH_MAX];
	if (rc == 0 && !container &&
	    policy_store_exposed(host_rw, sb->prep->host_uid, store, sizeof(store)))
		rc = wd_err_set(
		    err, WD_E_INVAL,
		    "--isolation process: warden's state directory %s is in the host's "
		    "/tmp or /dev/shm, where the command (uid %u) could write its own "
		    "approvals; set WARDEN_STATE_DIR to a directory of yours outside them",
		    store, (unsigned)sb->prep->host_uid);
	free(binds);
	free(protect);
	free(env);
	return rc;
}

int
local_prepare(struct sandbox *sb, struct wd_err *err)
{
	if (sb->spec->net == WD_NET_PROXY && !is_container(sb))
		return wd_err_set(err, WD_E_INVAL,
				  "--net allow needs --isolation container or gvisor (a network "
				  "namespace with warden's proxy as its only way out)");
	return sandbox_plan(sb, is_container(sb), sb->spec->time_ns, err);
}

/* ---- spawn ---- */

int
sandbox_cgroup_create(struct sandbox *sb, const struct cgroup_limits *cl, unsigned flags,
		      struct wd_err *err)
{
	const wd_spec *spec = sb->spec;
	/* The keeper hears of the directories before they exist: warden may
	 * die between the mkdir and the next line. */
	char **dirs = cgroup_planned_dirs(sb->id, flags);
	if (dirs && sb->get_keeper && !sb->keeper) {
		struct wd_err ke = {0};
		sb->keeper = sb->get_keeper(sb->keeper_data, &ke);
		if (!sb->keeper)
			wd_log(WD_LOG_WARN,
			       "no cgroup keeper (%s): a killed warden may leave "
			       "the sandbox's cgroup behind",
			       ke.msg);
	}
	keeper_watch(sb->keeper, (const char *const *)dirs);
	int rc = cgroup_create_flags(sb->id, cl, flags, &sb->cg, err);
	if (rc < 0) {
		keeper_release(sb->keeper, (const char *const *)dirs);
		sb->cg = NULL;
	}
	cgroup_dirs_free(dirs);
	bool denied = rc == -EPERM || rc == -ENOTSUP || rc == -EACCES || rc == -EROFS;
	if (rc < 0 && denied) {
		/* An unprivileged caller on a host without a delegated
		 * subtree cannot have memory, pids or CPU limits; nor can root
		 * in a container whose cgroup file system is read-only or not
		 * its own (a Kubernetes pod that is not privileged, root of the
		 * pod's user namespace: its cgroup is the pod's, set by the
		 * kubelet, whose limits then bound every command:
		 * docs/kubernetes.md).  Fail closed: a limit asked for and not
		 * enforced is worse than an error, unless the caller said best
		 * effort will do. */
		if (!spec->best_effort) {
			char why[sizeof(err->msg) / 2];
			snprintf(why, sizeof(why), "%s", err ? err->msg : "");
			return wd_err_set(err, WD_E_UNSUPPORTED,
					  "memory, pids and CPU limits cannot be enforced here (no "
					  "cgroup: %s); --best-effort runs without them",
					  geteuid() != 0 ? "not root, no delegated v2 subtree"
							 : why);
		}
		wd_log(WD_LOG_WARN,
		       "no cgroup for the sandbox (%s): limits not enforced "
		       "(--best-effort)",
		       err ? err->msg : "");
		return 0;
	}
	return rc;
}

static int
make_cgroup(struct sandbox *sb, struct wd_err *err)
{
	const wd_spec *spec = sb->spec;
	struct cgroup_limits cl = {spec->lim.memory_bytes, spec->lim.pids,
				   spec->lim.cpu_millionths};
	/* cpuacct stays: it counts the CPU of processes killed at a timeout,
	 * which no rusage sees.  No freezer in a container: pid 1's death
	 * takes the pid namespace with it, so kill-all needs no freezing.
	 * (level difference 2 of 3)  But a cow workspace keeps it: its
	 * processes are frozen from a review of the change set through the
	 * apply (a process left running rewrote a file between the
	 * two), and SIGSTOP, the fallback, can be undone by a SIGCONT from
	 * a sibling that was not stopped yet. */
	unsigned flags =
	    is_container(sb) && spec->ws_mode != WD_WORKSPACE_COW ? CGROUP_NO_FREEZER : 0;
	return sandbox_cgroup_create(sb, &cl, flags, err);
}

/* SYNC_CGROUP: v1 hands pid 1 each hierarchy's tasks file so it moves
 * itself (jail/pid1.c join_cgroup); v2 and "none" send no descriptors. */
static int
send_cgroup(struct sandbox *sb, struct wd_err *err)
{
	int fds[SYNC_MAX_FDS], n = 0, rc = 0;
	if (sb->cg && (n = cgroup_tasks_fds(sb->cg, fds, SYNC_MAX_FDS)) < 0)
		return wd_err_sys(err, -n, "open the tasks files of the sandbox's cgroup");
	struct sync_msg m = {.kind = SYNC_CGROUP, .status = n};
	if ((rc = sync_send(&sb->chan, &m, fds, n)) < 0)
		rc = local_send_failed(sb, rc, "hand the cgroup to the sandbox", err);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}

#define STEP(what)                                                                                 \
	wd_log(WD_LOG_DEBUG, "sandbox %s: +%.3f ms %s", sb->id,                                    \
	       (double)(wd_now_ns() - sb->t0) / 1e6, what)

int
local_spawn(struct sandbox *sb, struct wd_err *err)
{
	struct jail_plan *plan = &sb->prep->plan;
	int sp[2] = {-1, -1}, rc;
	bool container = is_container(sb);

	STEP("1 planned");
	/* 1a. The host side of the build: what the plan names on the host,
	 * opened and, as root, cloned into detached trees. */
	if ((rc = jail_build_host(sb->prep, err)) < 0)
		return rc;
	STEP("1a host trees");
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return wd_err_sys(err, errno, "sandbox channel");
	/* 1b. On cgroup v2 the cgroup exists before clone3 so pid 1 is born
	 * in it (CLONE_INTO_CGROUP).  On v1 it is made after clone3, while
	 * pid 1 builds its mounts, and pid 1 joins it itself before anything
	 * of a command runs (step 4b); so is the discovery of the host's
	 * hierarchies when three statfs calls show a v1 host.  Measured (STEP
	 * "1b" of `warden run -v`, 60 runs): 0.19 ms less before clone3.
	 * (level difference 2 of 3) */
	int host_cg = cgroup_host_surely_v1() ? 1 : cgroup_host_version();
	if (host_cg == 2 && (rc = make_cgroup(sb, err)) < 0)
		goto fail;
	STEP("1b cgroup (v2)");

	/* 1c. clone3: new namespaces (container) and a pidfd.  exit_signal 0:
	 * pid 1 is none of the caller's waitpid(-1) business, and sends it
	 * no SIGCHLD; it is reaped through the pidfd.  No PDEATHSIG: that
	 * fires when the creating *thread* exits, and a sandbox may outlive
	 * the thread that made it; pid 1 ends on EOF of the sandbox channel
	 * instead, which only the process's death (or destroy) closes.
	 * (level difference 1 of 3) */
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD;
	if (container)
		ca.flags |= CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
			    CLONE_NEWIPC | CLONE_NEWUTS;
	ca.pidfd = (uint64_t)(uintptr_t)&sb->pidfd;
	ca.exit_signal = 0;
	if (sb->cg && cgroup_dirfd(sb->cg) >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgroup_dirfd(sb->cg);
	}
	plan->sync_fd = sp[1];
	pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		rc = wd_err_sys(err, errno, "clone3 (step %s)", jail_step_name(JAIL_STEP_1_CLONE));
		if (err)
			err->step = JAIL_STEP_1_CLONE;
		goto fail;
	}
	if (pid == 0) {
		/* raw: libc's close() is a sanitizer's interceptor (jail/raw.h) */
		syscall(SYS_close, sp[0]);
		jail_pid1_main(plan);
	}
	sb->pid = pid;
	/* pid 1 has its copy of the plan; no later child needs ours.  Every
	 * process the server makes later without CLONE_VM is another
	 * sandbox's pid 1 (which reads only its own prep, not yet kept from
	 * forks when it is cloned), the gVisor launcher (only its own
	 * struct, filled before its clone3), the file search's child (its
	 * pattern) or, in sanitizer builds, the keeper and the idmap holder
	 * (their pipes); the rest share our memory (CLONE_VM).  So none
	 * touches this prep, and each later pid 1 is spared a copy of it:
	 * page tables and pages that grew with the number of live sandboxes
	 * (~30 KiB each in every new pid 1; serve-density). */
	jail_prep_dontfork(sb->prep);
	close(sp[1]);
	sp[1] = -1;
	plan->sync_fd = -1;
	sync_chan_init(&sb->chan, sp[0], SYNC_SUPERVISOR, SYNC_S_CLONED);
	sp[0] = -1;
	sb->state = SB_SPAWNED;
	STEP("1c clone3");

	/* 2. The maps, then SYNC_GO: pid 1 may go on. */
	if (container && (rc = jail_write_maps(sb->prep, pid, err)) < 0) {
		if (err)
			err->step = JAIL_STEP_2_MAPS;
		return rc;
	}
	struct sync_msg go = {.kind = SYNC_GO};
	if ((rc = sync_send(&sb->chan, &go, NULL, 0)) < 0)
		return local_send_failed(sb, rc, "release the sandbox", err);
	STEP("2 maps written, pid 1 released");
	/* 2c. v1: the cgroup, overlapping pid 1's mount work, then
	 * SYNC_CGROUP. */
	if (host_cg != 2 && (rc = make_cgroup(sb, err)) < 0)
		return rc;
	if ((rc = send_cgroup(sb, err)) < 0)
		return rc;
	STEP("2c cgroup sent");
	/* The idmap holder was killed in 1a; reap it now that pid 1 works. */
	jail_build_reap(sb->prep);
	return 0;
fail:
	if (sp[0] >= 0)
		close(sp[0]);
	if (sp[1] >= 0)
		close(sp[1]);
	return rc;
}

/* ---- set-up messages and readiness ---- */

/* pid 1's own steps, from the times SYNC_READY carries (the same clock as
 * ours), as STEP lines in order. */
static void
pid1_steps(struct sandbox *sb, const struct sync_msg *m)
{
	static const char *const what[SYNC_T__COUNT] = {
	    [SYNC_T_GO] = "pid 1: SYNC_GO received",
	    [SYNC_T_MOUNTS] = "pid 1: 2b-3b ids, time namespace, mounts",
	    [SYNC_T_ROOT] = "pid 1: 3c-3d pivot_root, old root detached, / read-only",
	    [SYNC_T_NET] = "pid 1: 4 loopback (4a proxy sockets)",
	    [SYNC_T_CGROUP] = "pid 1: 4b cgroup joined",
	    [SYNC_T_COMMANDS] = "pid 1: 6 Landlock ruleset, seccomp; ready",
	};
	if (!wd_log_enabled(WD_LOG_DEBUG))
		return;
	for (int i = 0; i < SYNC_T__COUNT; i++)
		if (m->t_ns[i] >= sb->t0)
			wd_log(WD_LOG_DEBUG, "sandbox %s: +%.3f ms %s", sb->id,
			       (double)(m->t_ns[i] - sb->t0) / 1e6, what[i]);
}

/* SYNC_NET_READY: serve the sockets pid 1 made in the sandbox's network
 * namespace from here, on the proxy's own thread. */
static void
net_ready(struct sandbox *sb, const int *fds, int n)
{
	struct wd_err e = {0};
	if (!sb->proxy || n != 3 || net_proxy_serve(sb->proxy, fds[0], fds[1], fds[2], &e) < 0 ||
	    net_proxy_start(sb->proxy, &e) < 0) {
		for (int i = 0; i < n; i++)
			close(fds[i]);
		wd_log(WD_LOG_ERROR, "egress proxy: %s", e.msg);
		if (!sb->setup_step) {
			sb->setup_step = JAIL_STEP_4_NET;
			sb->setup_errno = e.sys_errno ? e.sys_errno : EIO;
		}
		sb->state = SB_DEAD;
		syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
	}
}

void
local_read_setup(struct sandbox *sb)
{
	while (sb->state == SB_SPAWNED) {
		struct sync_msg m;
		int fds[SYNC_MAX_FDS], nfds;
		int rc = sync_recv(&sb->chan, &m, fds, &nfds, MSG_DONTWAIT);
		if (rc == -EAGAIN)
			return;
		if (rc == -EPROTO) {
			wd_log(WD_LOG_ERROR,
			       "sandbox %s: pid 1 sent a message the protocol "
			       "refuses in state %s",
			       sb->id, sync_state_name(sb->chan.state));
			continue;
		}
		if (rc == -ECONNRESET)
			/* pid 1 went with a message of ours unread (a one-shot
			 * run's command, queued behind the set-up): the kernel
			 * reports that once, before what pid 1 sent us, which
			 * may be the SYNC_ERROR that says why */
			continue;
		if (rc < 0) {
			sb->state = SB_DEAD; /* EOF: pid 1 is gone */
			return;
		}
		switch (m.kind) {
		case SYNC_NET_READY:
			net_ready(sb, fds, nfds);
			break;
		case SYNC_READY:
		case SYNC_VACANT:
			sb->state = SB_READY;
			sb->vacant = m.kind == SYNC_VACANT;
			sb->time_ns_active = m.status & SYNC_READY_TIME_NS;
			pid1_steps(sb, &m);
			/* pid 1 has built its mounts from its own copies of
			 * the host sources (clone3 without CLONE_FILES); a
			 * vacant one's late operations use its copies too, and
			 * an attach sends the workspace afresh.  Ours would
			 * only cost the server descriptors for as long as the
			 * sandbox lives (17 of 29 per idle sandbox). */
			jail_prep_release_sources(sb->prep);
			/* pid 1 is in every directory of its cgroup now (it
			 * joined before SYNC_READY, step 4b; born in it on v2),
			 * so the cgroup's own descriptors go too: 8 of 13 per
			 * idle sandbox on a v1 host.  Why a path reaches the
			 * same cgroup later: cgroup_park. */
			cgroup_park(sb->cg);
			STEP(sb->vacant ? "3-6 jail ready, vacant (SYNC_VACANT read)"
					: "3-6 jail ready (SYNC_READY read)");
			break;
		case SYNC_ATTACHED:
			sb->state = SB_READY;
			STEP("3e workspace attached");
			break;
		case SYNC_ERROR:
			sb->setup_step = m.step;
			sb->setup_errno = m.err;
			sb->setup_op = m.status;
			sb->state = SB_DEAD;
			break;
		default:
			break;
		}
	}
}

int
local_setup_error(struct sandbox *sb, struct wd_err *err)
{
	const struct jail_plan *pl = &sb->prep->plan;
	int rc;
	if (!sb->setup_step)
		return wd_err_set(err, WD_E_SYS, "the sandbox ended before it was ready");
	if (sb->setup_op > 0 && sb->setup_op <= pl->nops)
		rc = wd_err_sys(
		    err, sb->setup_errno, "jail step %s: %s %s", jail_step_name(sb->setup_step),
		    jail_op_name(pl->ops[sb->setup_op - 1].kind), pl->ops[sb->setup_op - 1].path);
	else
		rc = wd_err_sys(err, sb->setup_errno, "jail step %s",
				jail_step_name(sb->setup_step));
	if (err)
		err->step = sb->setup_step;
	confine_hint(sb->spec, rc, err);
	return rc;
}

int
local_send_failed(struct sandbox *sb, int rc, const char *what, struct wd_err *err)
{
	/* pid 1 may have failed a jail step and gone while we wrote to it
	 * (the cgroup, the release and a one-shot run's command are sent
	 * before it says ready): its SYNC_ERROR waits in our queue and says
	 * why, where EPIPE or ECONNRESET does not */
	if (rc == -EPIPE || rc == -ECONNRESET) {
		local_read_setup(sb);
		if (sb->setup_step)
			return local_setup_error(sb, err);
	}
	return wd_err_sys(err, -rc, "%s", what);
}

int
local_ready(struct sandbox *sb, struct wd_err *err)
{
	for (;;) {
		pthread_mutex_lock(&sb->lock);
		local_read_setup(sb);
		enum sandbox_state st = sb->state;
		pthread_mutex_unlock(&sb->lock);
		if (st == SB_READY)
			return 0;
		if (st == SB_DEAD)
			return local_setup_error(sb, err);
		struct pollfd p[2] = {{.fd = sb->chan.fd, .events = POLLIN},
				      {.fd = sb->pidfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return wd_err_sys(err, errno, "poll");
		if (p[1].revents) {
			/* pid 1 exited: read what it said before it went */
			pthread_mutex_lock(&sb->lock);
			local_read_setup(sb);
			if (sb->state != SB_READY)
				sb->state = SB_DEAD;
			pthread_mutex_unlock(&sb->lock);
		}
	}
}

/* SYNC_ATTACH: a vacant sandbox's workspace.  The sandbox goes back to
 * SB_SPAWNED until SYNC_ATTACHED comes, so whoever waits (ready, or a
 * command sent right behind: the sync table allows EXEC in ATTACHING)
 * reads the answer, or the error, as it would a set-up's. */
int
local_attach(struct sandbox *sb, int tree_fd, struct wd_err *err)
{
	int rc;
	pthread_mutex_lock(&sb->lock);
	if (sb->state != SB_READY || !sb->vacant) {
		pthread_mutex_unlock(&sb->lock);
		return wd_err_set(err, WD_E_INVAL, "sandbox %s is not waiting for a workspace",
				  sb->id);
	}
	struct sync_msg m = {.kind = SYNC_ATTACH};
	rc = sync_send(&sb->chan, &m, &tree_fd, 1);
	if (rc == 0) {
		sb->vacant = false;
		sb->state = SB_SPAWNED;
	}
	pthread_mutex_unlock(&sb->lock);
	if (rc < 0)
		return wd_err_sys(err, -rc, "attach the workspace to sandbox %s", sb->id);
	return 0;
}

/* ---- kill, destroy, describe ---- */

void
local_kill(struct sandbox *sb)
{
	/* pid 1's death takes the whole pid namespace (grandchildren
	 * included); the cgroup kill catches anything at the process level. */
	if (sb->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
	if (sb->cg)
		cgroup_kill(sb->cg);
}

static void
reap(struct sandbox *sb, int timeout_ms)
{
	if (sb->pidfd < 0 || sb->reaped)
		return;
	struct pollfd p = {.fd = sb->pidfd, .events = POLLIN};
	if (timeout_ms >= 0 && poll(&p, 1, timeout_ms) == 0)
		syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
	siginfo_t si;
	while (syscall(SYS_waitid, P_PIDFD, sb->pidfd, &si, WEXITED | __WALL, NULL) < 0 &&
	       errno == EINTR)
		;
	sb->reaped = true;
}

void
local_destroy(struct sandbox *sb)
{
	STEP("7 destroy");
	/* How the sandbox ends (level difference 3 of 3): a container's pid 1
	 * is killed, and the kernel kills the rest of its pid namespace;
	 * the process level's monitor is asked to go (EOF on its channel), so
	 * it kills its commands' descendants, which have no namespace to die
	 * with, before it exits. */
	if (sb->pidfd >= 0 && !sb->reaped) {
		if (is_container(sb)) {
			syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
			reap(sb, -1);
		} else {
			shutdown(sb->chan.fd, SHUT_RDWR);
			reap(sb, 2000);
		}
	}
	STEP("7a pid 1 reaped");
	if (sb->chan.fd >= 0)
		close(sb->chan.fd);
	sb->chan.fd = -1;
	if (sandbox_release_host(sb))
		STEP("7b cgroup removed");
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	sb->pidfd = -1;
	jail_prep_free(sb->prep);
	sb->prep = NULL;
	sb->state = SB_DEAD;
}

void
local_describe(struct sandbox *sb, wd_result *r)
{
	const struct jail_prep *prep = sb->prep;
	sandbox_describe_net(sb, r);
	r->isolation = sb->ops->level;
	if (is_container(sb)) {
		r->namespaces = RESULT_NS_USER | RESULT_NS_MOUNT | RESULT_NS_PID | RESULT_NS_NET |
				RESULT_NS_IPC | RESULT_NS_UTS | RESULT_NS_CGROUP;
		if (sb->time_ns_active)
			r->namespaces |= RESULT_NS_TIME;
	}
	r->network = sb->proxy ? "proxy" : is_container(sb) ? "loopback" : "host";
	r->uid = is_container(sb) ? 1000 : (int)(prep ? prep->host_uid : 0);
	r->seccomp = true;
	r->landlock_abi = prep ? prep->plan.landlock_abi : 0;
	r->cgroup_version = sb->cg ? cgroup_version(sb->cg) : 0;
	r->idmapped = prep && prep->idmapped;
	r->bounding_dropped = is_container(sb) || geteuid() == 0;
	r->time_ns = sb->time_ns_active;
	r->host_uid = prep ? prep->host_uid : 0;
}

char *
local_plan_text(struct sandbox *sb)
{
	return sb->prep ? jail_plan_text(sb->prep) : wd_xstrdup("");
}
