/* supervise/gvisor: the gvisor isolation level behind struct backend_ops
 * (gvisor.h has the map of the files).
 *
 * Why these choices (docs/isolation.md, "gvisor"):
 *  - root mode, ptrace platform: Debian 12's runsc (2022-12-19) has ptrace
 *    and kvm; systrap is newer.  KVM needs a usable /dev/kvm (doctor
 *    tries it); ptrace works wherever ptrace does.
 *  - warden's cgroup, not runsc's (--ignore-cgroups): the keeper, the
 *    statistics and kill-all then cover gVisor whole, and a warden killed
 *    mid-run leaves nothing (runsc's own cgroups outlive a killed runsc).
 *  - the pids limit is RLIMIT_NPROC inside gVisor (gvisor_oci.c); the
 *    host's pids cgroup gets a backstop sized for the sentry's threads.
 *  - the memory limit covers the sentry and the gofer too, with
 *    GV_MEMORY_HEADROOM on top of what the caller asked for.
 *  - network: --net none is runsc --network=none (gVisor's own netstack,
 *    loopback only, no host socket at all).  --net allow runs runsc
 *    --network=host inside a network namespace warden made with nothing
 *    but loopback and the proxy's three listeners: the sandbox's
 *    127.0.0.1:3128 is warden's proxy and there is no route anywhere else.
 *    (runsc --network=sandbox, gVisor's netstack over the namespace's
 *    interfaces, refuses to start on Linux 6.x: this runsc takes any
 *    network namespace for the root one, since its test is whether
 *    /proc/sys/net/core/rmem_default exists.  Its loopback is its own too:
 *    reaching warden's listeners would take a veth pair.  docs/isolation.md.)
 *  - the workspace is idmapped so that its owner appears as uid 1000 to
 *    runsc's gofer, which creates files as root and then chowns them to
 *    the sandbox user (jail/hostpath.c): files made in the sandbox belong
 *    on the host to the workspace's owner, as at the container level. */
#include "supervise/gvisor.h"
#include "supervise/gvisor_wire.h"
#include "cgroup/cgroup.h"
#include "jail/jail.h"
#include "net/net.h"

#include <dirent.h>
#include <jansson.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/mount.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* The sentry, the gofer and their Go runtimes, measured at ~40-60 MiB
 * resident for a small command (bench/gvisor.sh): added to the memory
 * limit so that the command keeps what it was given. */
#define GV_MEMORY_HEADROOM (64ULL << 20)
/* The host pids backstop: the sentry's and gofer's threads plus about
 * five host tasks (ptrace stubs) per guest process, measured here. */
#define GV_HOST_PIDS(pids) (256 + 8 * (pids))

#ifndef WD_INIT_PATH
#define WD_INIT_PATH "/usr/local/libexec/warden/warden-init"
#endif

/* ---- probe ---- */

static void
gv_probe(struct backend_probe *out)
{
	const struct gv_runsc *rs = gv_runsc();
	out->ok = false;
	if (!rs->found) {
		snprintf(out->why, sizeof(out->why), "%s", rs->why);
		return;
	}
	if (geteuid() != 0) {
		snprintf(out->why, sizeof(out->why),
			 "gvisor isolation runs runsc as root (its rootless mode is not "
			 "supported by warden): run warden as root");
		return;
	}
	char init[PATH_MAX];
	if (gv_init_find(init, sizeof(init)) < 0) {
		snprintf(out->why, sizeof(out->why),
			 "warden-init, which starts each command inside gVisor, is missing "
			 "(installed with warden in %s)",
			 WD_INIT_PATH);
		return;
	}
	struct wd_err e = {0};
	if (cgroup_host_check(&e) < 0) {
		snprintf(out->why, sizeof(out->why), "no cgroup for gVisor's limits: %s", e.msg);
		return;
	}
	out->ok = true;
	out->why[0] = '\0';
}

/* ---- prepare ---- */

static int
gv_prepare(struct sandbox *sb, struct wd_err *err)
{
	const wd_spec *spec = sb->spec;
	struct backend_probe pr;
	int rc;
	/* Never a silent fallback to a weaker level: say what is missing. */
	gv_probe(&pr);
	if (!pr.ok) {
		return wd_err_set(err, WD_E_UNSUPPORTED, "--isolation gvisor: %s", pr.why);
	}
	const char *platform = gv_platform(err);
	if (!platform)
		return -EINVAL;
	/* --allow-port opens a port in the container level's Landlock fence;
	 * gVisor has no such fence (its network stack is the sandbox's own,
	 * loopback TCP always works), so the option would do nothing. */
	if (spec->nports)
		return wd_err_set(err, WD_E_INVAL,
				  "--allow-port %u: at --isolation gvisor TCP on the sandbox's own "
				  "loopback always works (gVisor's network stack is its own); the "
				  "option is for the container and process levels",
				  (unsigned)spec->ports[0]);
	struct gv *g = wd_xcalloc(1, sizeof(*g));
	sb->priv = g;
	g->platform = platform;
	snprintf(g->opt_platform, sizeof(g->opt_platform), "--platform=%s", platform);
	g->lock_fd = g->netns_fd = g->sentry_pidfd = g->run_pidfd = -1;
	g->gofer_mntns = g->stage_w = -1;
	snprintf(g->dir, sizeof(g->dir), "%s/%s", GV_RUN_DIR, sb->id);
	snprintf(g->cid, sizeof(g->cid), "wd-%s", sb->id);
	snprintf(g->opt_root, sizeof(g->opt_root), "--root=%s/state", g->dir);
	snprintf(g->opt_log, sizeof(g->opt_log), "--log=%s/runsc.log", g->dir);
	g->opt_net = spec->net == WD_NET_PROXY ? "--network=host" : "--network=none";

	/* The container's plan: its mounts, /etc, environment and limits are
	 * what the sandbox gets, through the OCI bundle (gvisor_oci.c); no
	 * time namespace (gVisor keeps its own clocks). */
	if ((rc = sandbox_plan(sb, true, false, err)) < 0)
		return rc;
	/* Commands start through warden-init (gv_probe found it). */
	if (gv_init_find(g->init_path, sizeof(g->init_path)) < 0)
		return wd_err_set(err, WD_E_UNSUPPORTED,
				  "--isolation gvisor: warden-init (installed with warden in %s) "
				  "is missing",
				  WD_INIT_PATH);
	/* The workspace's owner appears as the sandbox user to gVisor's
	 * gofer, which creates as root and then chowns (jail/hostpath.c). */
	sb->prep->idmap = (struct jail_idmap){1000, 1000, true};
	return gv_oci_plan(sb, g, err);
}

/* ---- spawn: the bundle, the cgroup, the network; no process yet ---- */

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* Remove a sandbox directory: never following a link, never crossing
 * into another file system (a mount left visible by mistake is not
 * emptied through). */
static void
remove_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* GV_RUN_DIR/.lock: held shared while a sandbox's directory is made and
 * its own lock taken, exclusive by a sweep.  Without it a sweep (of
 * another sandbox starting, in this process or another) could take a
 * new directory's lock between its creation and its owner's flock, and
 * remove the directory under it (seen with a warm pool's two builders:
 * "mkdir .../state: No such file or directory"). */
static int
run_dir_lock(int how)
{
	int fd = open(GV_RUN_DIR "/.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0 && flock(fd, how) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Directories of sandboxes whose warden died (nobody holds their lock). */
static void
sweep_stale(void)
{
	wd_autoclose int gl = run_dir_lock(LOCK_EX);
	if (gl < 0)
		return;
	DIR *d = opendir(GV_RUN_DIR);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s/lock", GV_RUN_DIR, e->d_name);
		wd_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue; /* held, or being made (the lock comes first) */
		snprintf(path, sizeof(path), "%s/%s", GV_RUN_DIR, e->d_name);
		wd_log(WD_LOG_DEBUG, "removing %s, left by a warden that died", path);
		remove_tree(path);
	}
	closedir(d);
}

static int
make_dir(struct sandbox *sb, struct gv *g, struct wd_err *err)
{
	/* /run/warden is root's (0700): nothing in it is another user's */
	if ((mkdir("/run/warden", 0700) < 0 && errno != EEXIST) ||
	    (mkdir(GV_RUN_DIR, 0700) < 0 && errno != EEXIST))
		return wd_err_sys(err, errno, "mkdir %s", GV_RUN_DIR);
	sweep_stale();
	wd_autoclose int gl = run_dir_lock(LOCK_SH);
	if (gl < 0)
		return wd_err_sys(err, errno, "lock %s/.lock", GV_RUN_DIR);
	if (mkdir(g->dir, 0700) < 0)
		return wd_err_sys(err, errno, "mkdir %s", g->dir);
	g->dir_made = true;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/lock", g->dir);
	g->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (g->lock_fd < 0 || flock(g->lock_fd, LOCK_EX) < 0)
		return wd_err_sys(err, errno, "lock %s", path);
	snprintf(path, sizeof(path), "%s/state", g->dir);
	if (mkdir(path, 0700) < 0)
		return wd_err_sys(err, errno, "mkdir %s", path);
	(void)sb;
	return 0;
}

/* A network namespace of our own with loopback only, made on a thread
 * that exits right after (the namespace is per thread). */
struct netns_job {
	int fd, err;
};

static void *
netns_thread(void *arg)
{
	struct netns_job *j = arg;
	if (unshare(CLONE_NEWNET) < 0) {
		j->err = errno;
		return NULL;
	}
	j->fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (j->fd < 0)
		j->err = errno;
	return NULL;
}

static int
make_netns(struct sandbox *sb, struct gv *g, struct wd_err *err)
{
	struct netns_job j = {.fd = -1};
	pthread_t t;
	int rc = pthread_create(&t, NULL, netns_thread, &j);
	if (rc != 0)
		return wd_err_sys(err, rc, "network namespace thread");
	pthread_join(t, NULL);
	if (j.fd < 0)
		return wd_err_sys(err, j.err, "new network namespace");
	g->netns_fd = j.fd;
	/* the proxy's listeners on its loopback, served from here */
	struct net_listen_addrs a;
	net_listen_addrs_init(&a);
	struct net_listeners l;
	if ((rc = net_listeners_open(g->netns_fd, &a, &l, err)) < 0)
		return rc;
	if ((rc = net_proxy_serve(sb->proxy, l.http_fd, l.socks_fd, l.dns_fd, err)) < 0) {
		close(l.http_fd);
		close(l.socks_fd);
		close(l.dns_fd);
		return rc;
	}
	return net_proxy_start(sb->proxy, err);
}

#define STEP(what)                                                                                 \
	wd_log(WD_LOG_DEBUG, "sandbox %s: +%.3f ms %s", sb->id,                                    \
	       (double)(wd_now_ns() - sb->t0) / 1e6, what)

static int
gv_spawn_sb(struct sandbox *sb, struct wd_err *err)
{
	struct gv *g = sb->priv;
	const wd_spec *spec = sb->spec;
	int rc;
	STEP("1 planned");
	if ((rc = make_dir(sb, g, err)) < 0)
		return rc;
	/* the host trees (read-only clones, the idmapped workspace) */
	if ((rc = jail_build_host(sb->prep, err)) < 0)
		return rc;
	/* after the workspace's tree exists: the protected paths are opened
	 * beneath it, not named to runsc as host paths */
	if ((rc = gv_oci_open_protected(sb, g, err)) < 0)
		return rc;
	if ((rc = gv_oci_write_rootfs(sb, g, err)) < 0)
		return rc;
	STEP("1a bundle");
	g->host_pids = spec->lim.pids ? GV_HOST_PIDS(spec->lim.pids) : 0;
	struct cgroup_limits cl = {
	    spec->lim.memory_bytes ? spec->lim.memory_bytes + GV_MEMORY_HEADROOM : 0, g->host_pids,
	    spec->lim.cpu_millionths};
	/* the freezer stays: gVisor's processes are not in a pid namespace
	 * of ours, so kill-all must win against whatever still forks */
	if ((rc = sandbox_cgroup_create(sb, &cl, 0, err)) < 0)
		return rc;
	STEP("1b cgroup");
	if (sb->proxy && (rc = make_netns(sb, g, err)) < 0)
		return rc;
	sb->state = SB_SPAWNED;
	return 0;
}

/* ---- the session ---- */

/* The session's init: it reaps every child, orphans the sandbox's
 * commands leave included, and is the resident executor, each command a
 * message on its stdin and stdout (supervise/gvisor_init.c,
 * gvisor_resident.c). */
static const char *const serve_init[] = {GV_INIT, "serve", NULL};
static const char *const serve_vacant[] = {GV_INIT, "serve", "vacant", NULL};

int
gv_init_find(char *out, size_t cap)
{
	/* $WARDEN_INIT (an embedder's build tree, as WARDEN_MONITOR); next
	 * to the running program; else the installed one.  Whoever
	 * sets the variable chooses a program that runs inside gVisor as
	 * the sandbox user, under the policy's decision: nothing of the
	 * host's is at stake that the caller does not already hold. */
	if (wd_helper_program("WARDEN_INIT", "warden-init", WD_INIT_PATH, out, cap) == 0)
		return 0;
	out[0] = '\0';
	return -ENOENT;
}

/* A vacant sandbox, once started: the gofer's mount namespace and the
 * staging directory's w in it, for gv_attach (off the take's path).  The
 * gofer's pid is in runsc's state file (runsc --root is dir/state,
 * root's); what is opened through /proc/<pid> is then checked to be this
 * sandbox's own staging directory (the same inode as dir/stage/w) and the
 * gofer still alive after it, so a pid reused meanwhile is refused. */
static int
open_stage(struct sandbox *sb, struct gv *g, struct wd_err *err)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/state/%s_sandbox:%s.state", g->dir, g->cid, g->cid);
	json_error_t je;
	json_t *st = json_load_file(path, 0, &je);
	json_int_t pid = json_integer_value(json_object_get(st, "goferPid"));
	json_decref(st);
	if (pid <= 1 || pid > INT32_MAX)
		return wd_err_set(err, WD_E_SYS, "runsc's state file %s names no gofer", path);
	wd_autoclose int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pidfd < 0)
		return wd_err_sys(err, errno, "pidfd_open of gVisor's gofer");
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	g->gofer_mntns = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/root" GVW_STAGE_WS, (int)pid);
	g->stage_w = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (g->gofer_mntns < 0 || g->stage_w < 0)
		return wd_err_sys(err, errno, "gVisor's gofer: open %s", path);
	struct stat a, b;
	snprintf(path, sizeof(path), "%s/stage/w", g->dir);
	if (fstat(g->stage_w, &a) < 0 || stat(path, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
		return wd_err_set(err, WD_E_SYS,
				  "gVisor's gofer (pid %d) ended, or does not show this sandbox's "
				  "staging directory",
				  (int)pid);
	return 0;
}

int
gv_start_session(struct sandbox *sb, struct wd_err *err)
{
	struct gv *g = sb->priv;
	int rc, pidfd = -1;
	wd_autofree char *cfg =
	    gv_oci_config(sb, g, sb->spec->vacant ? serve_vacant : serve_init, NULL, NULL, true);
	if ((rc = gv_write_file(g, "config.json", cfg, err)) < 0)
		return rc;
	/* the executor's channel: the init's stdin and stdout */
	int init_fds[2] = {-1, -1};
	if (g->res)
		gv_res_free(g);
	if ((rc = gv_res_pipes(g, init_fds, err)) < 0)
		return rc;
	char bundle[PATH_MAX], pidfile[PATH_MAX];
	snprintf(bundle, sizeof(bundle), "%s", g->dir);
	snprintf(pidfile, sizeof(pidfile), "%s/sandbox.pid", g->dir);
	const char *more[] = {"create", "--bundle", bundle, "--pid-file", pidfile, g->cid, NULL};
	const char **argv = gv_argv(sb, g, more);
	wd_autoclose int log = -1;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/create.log", g->dir);
	log = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	struct gv_proc p = {
	    .argv = argv, .in = init_fds[0], .out = init_fds[1], .err = log, .sb = sb};
	rc = log < 0 ? wd_err_sys(err, errno, "create %s", path) : gv_spawn(&p, &pidfd, err);
	free(argv);
	/* the sandbox process holds them now (runsc create hands its stdio
	 * to the init): the executor's end of the channel is its alone */
	close(init_fds[0]);
	close(init_fds[1]);
	if (rc < 0)
		return rc;
	g->started = g->session = true;
	int st = gv_wait(pidfd, 60000);
	close(pidfd);
	if (st != 0) {
		char line[200];
		if (!gv_runsc_error(g, 0, line, sizeof(line)))
			gv_last_line(g, "create.log", line, sizeof(line));
		return wd_err_set(err, WD_E_SYS, "runsc create failed (%s %d)%s%s",
				  WIFEXITED(st) ? "status" : "signal",
				  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
				  line[0] ? ": " : "", line);
	}
	char buf[32];
	if (wd_read_file_at(AT_FDCWD, pidfile, buf, sizeof(buf)) <= 0 || atoi(buf) <= 1)
		return wd_err_set(err, WD_E_SYS, "runsc create wrote no sandbox pid");
	g->sentry_pid = (pid_t)atoi(buf);
	g->sentry_pidfd = (int)syscall(SYS_pidfd_open, g->sentry_pid, 0);
	if (g->sentry_pidfd < 0)
		return wd_err_sys(err, errno, "pidfd_open of gVisor's sandbox process");
	const char *start[] = {"start", g->cid, NULL};
	if ((rc = gv_client(sb, g, start, 60000, err)) < 0)
		return rc;
	if ((rc = gv_res_ready(sb, g, err)) < 0)
		return rc;
	return sb->spec->vacant ? open_stage(sb, g, err) : 0;
}

static int
gv_ready(struct sandbox *sb, struct wd_err *err)
{
	struct gv *g = sb->priv;
	pthread_mutex_lock(&sb->lock);
	int rc = 0;
	if (sb->state == SB_DEAD)
		rc = wd_err_set(err, WD_E_INVAL, "the sandbox has ended");
	else if (!g->started) {
		rc = gv_start_session(sb, err);
		sb->state = rc == 0 ? SB_READY : SB_DEAD;
		/* a warm pool's: its executor runs nothing until gv_attach */
		sb->vacant = rc == 0 && sb->spec->vacant;
		if (rc == 0)
			STEP("3-4 gVisor sandbox ready");
	} else if (!g->session)
		rc = wd_err_set(err, WD_E_INVAL, "the sandbox ran its one command");
	pthread_mutex_unlock(&sb->lock);
	return rc;
}

/* ---- kill, destroy, describe ---- */

static void
gv_kill(struct sandbox *sb)
{
	/* async-signal-safe: signals only.  The sandbox process's death ends
	 * the gofer (its channel closes) and the stubs (they are its
	 * tracees); the cgroup catches the rest in destroy. */
	struct gv *g = sb->priv;
	if (!g)
		return;
	if (g->sentry_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, g->sentry_pidfd, SIGKILL, NULL, 0);
	if (g->run_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, g->run_pidfd, SIGKILL, NULL, 0);
}

static void
gv_destroy(struct sandbox *sb)
{
	struct gv *g = sb->priv;
	if (g && g->started)
		STEP("7 destroy");
	if (sb->cg)
		cgroup_kill(sb->cg);
	else
		gv_kill(sb);
	if (g && g->res)
		gv_res_free(g); /* after the kill: the reader sees the channel end */
	if (g && g->run_pidfd >= 0) {
		gv_wait(g->run_pidfd, 0); /* reaped already by the command's loop */
		close(g->run_pidfd);
		g->run_pidfd = -1;
	}
	sandbox_release_host(sb);
	if (g && g->started)
		STEP("7a gVisor's processes gone, cgroup removed");
	if (g) {
		if (g->sentry_pidfd >= 0)
			close(g->sentry_pidfd);
		if (g->netns_fd >= 0)
			close(g->netns_fd);
		if (g->gofer_mntns >= 0)
			close(g->gofer_mntns);
		if (g->stage_w >= 0)
			close(g->stage_w);
		/* the mount namespace of the trees died with gVisor's
		 * processes: dir holds plain files and directories */
		if (g->dir_made)
			remove_tree(g->dir);
		if (g->lock_fd >= 0)
			close(g->lock_fd);
		for (size_t i = 0; i < g->nmounts; i++) {
			free(g->mounts[i].src);
			free(g->mounts[i].dst_owned);
			if (g->mounts[i].rel && g->mounts[i].fd >= 0)
				close(g->mounts[i].fd);
			free(g->mounts[i].rel);
		}
		free(g->mounts);
		free(g);
		sb->priv = NULL;
	}
	jail_prep_free(sb->prep);
	sb->prep = NULL;
	sb->state = SB_DEAD;
}

/* ---- attach: a vacant sandbox's workspace (warm pool) ---- */

struct attach_job {
	const struct sandbox *sb;
	const struct gv *g;
	int tree;
	int rc;
	char what[PATH_MAX];
};

/* On a thread of its own (a thread that shares its fs_struct cannot
 * setns into a mount namespace; this one unshares it and then exits):
 * into the gofer's mount namespace, the workspace's tree onto the
 * staging directory's w, then its protected paths (the plan's late
 * protect operations) walked beneath the attached tree and made
 * read-only there, pid 1's way (jail_protect_here): the gofer, root on
 * the host, cannot write through a read-only mount, whatever the sentry
 * asks of it.  No command of the sandbox has run yet. */
static void *
attach_thread(void *arg)
{
	struct attach_job *j = arg;
	if (unshare(CLONE_FS) < 0 || setns(j->g->gofer_mntns, CLONE_NEWNS) < 0) {
		j->rc = -errno;
		snprintf(j->what, sizeof(j->what), "enter gVisor's gofer's mount namespace");
		return NULL;
	}
	if (syscall(SYS_move_mount, j->tree, "", j->g->stage_w, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		j->rc = -errno;
		snprintf(j->what, sizeof(j->what), "mount the workspace in gVisor's gofer");
		return NULL;
	}
	const struct jail_plan *pl = &j->sb->prep->plan;
	for (int i = 0; i < pl->nops; i++) {
		const struct jail_op *op = &pl->ops[i];
		if (op->kind != JAIL_OP_PROTECT || !(op->flags & JAIL_OPF_LATE))
			continue;
		if ((j->rc = jail_protect_here(j->tree, op->data, NULL)) < 0) {
			snprintf(j->what, sizeof(j->what), "protected path %s", op->data);
			return NULL;
		}
	}
	return NULL;
}

static int
gv_attach(struct sandbox *sb, int tree_fd, struct wd_err *err)
{
	struct gv *g = sb->priv;
	pthread_mutex_lock(&sb->lock);
	bool ok = sb->state == SB_READY && sb->vacant && g && g->stage_w >= 0;
	uint32_t id = ++sb->seq;
	if (ok)
		sb->vacant = false; /* one attach, whatever its outcome */
	pthread_mutex_unlock(&sb->lock);
	if (!ok)
		return wd_err_set(err, WD_E_INVAL, "sandbox %s is not waiting for a workspace",
				  sb->id);
	/* the tree is the caller's: a copy of the descriptor is moved */
	struct attach_job j = {.sb = sb, .g = g, .tree = fcntl(tree_fd, F_DUPFD_CLOEXEC, 3)};
	if (j.tree < 0)
		return wd_err_sys(err, errno, "dup");
	pthread_t t;
	int rc = pthread_create(&t, NULL, attach_thread, &j);
	if (rc != 0) {
		close(j.tree);
		return wd_err_sys(err, rc, "attach thread");
	}
	pthread_join(t, NULL);
	close(j.tree);
	if (j.rc == -ELOOP)
		return wd_err_set(err, WD_E_INVAL,
				  "%s (or one it implies) is a symbolic link, which cannot be "
				  "made read-only",
				  j.what);
	if (j.rc < 0)
		return wd_err_sys(err, -j.rc, "%s", j.what);
	/* the executor binds it onto /workspace and drops CAP_SYS_ADMIN;
	 * waited for, so that no command (runsc exec's either) starts
	 * before /workspace is the workspace */
	if ((rc = gv_res_attach(g, id, err)) < 0)
		return rc;
	STEP("3e workspace attached");
	return 0;
}

void
gv_describe(struct sandbox *sb, wd_result *r)
{
	r->isolation = WD_ISOLATION_GVISOR;
	/* the guest's namespaces, each implemented by the sentry */
	r->namespaces =
	    RESULT_NS_MOUNT | RESULT_NS_PID | RESULT_NS_NET | RESULT_NS_IPC | RESULT_NS_UTS;
	r->network = sb->proxy ? "proxy" : "loopback";
	r->uid = 1000;
	/* on the host, the sentry runs as nobody in its own user namespace */
	r->host_uid = WD_NOBODY;
	sandbox_describe_net(sb, r);
	/* warden's seccomp table, applied by the sentry (gvisor_oci.c); no
	 * system call of the command reaches the host kernel, and the
	 * sentry's own host filter is runsc's.  No Landlock in gVisor. */
	r->seccomp = true;
	r->landlock_abi = 0;
	r->cgroup_version = sb->cg ? cgroup_version(sb->cg) : 0;
	r->idmapped = sb->prep && sb->prep->idmapped;
	r->bounding_dropped = true;
	snprintf(r->runtime, sizeof(r->runtime), "runsc");
	snprintf(r->runtime_version, sizeof(r->runtime_version), "%s", gv_runsc()->version);
	const struct gv *g = sb->priv;
	snprintf(r->platform, sizeof(r->platform), "%s", g ? g->platform : "");
}

static char *
gv_plan_text(struct sandbox *sb)
{
	struct gv *g = sb->priv;
	static const char *const placeholder[] = {"PROGRAM", NULL};
	const char *const *argv =
	    sb->spec->argv ? (const char *const *)sb->spec->argv : placeholder;
	wd_autofree char *compact = gv_oci_config(sb, g, argv, NULL, NULL, false);
	/* indented for a reader (the file runsc gets is compact) */
	json_t *j = json_loads(compact, 0, NULL);
	wd_autofree char *cfg = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(j);
	if (!cfg)
		cfg = wd_steal_ptr(&compact);
	return wd_xasprintf("isolation gvisor: runsc %s --platform=%s %s, as root\n"
			    "bundle %s (rootfs/: the curated /etc, links, mount points)\n"
			    "memory limit +%llu MiB for gVisor itself; pids as RLIMIT_NPROC "
			    "inside\n"
			    "config.json:\n%s\n",
			    gv_runsc()->version, g->platform, g->opt_net, g->dir,
			    (unsigned long long)(GV_MEMORY_HEADROOM >> 20), cfg);
}

const struct backend_ops gvisor_ops = {
    .name = "gvisor",
    .level = WD_ISOLATION_GVISOR,
    /* runsc builds the sandbox's mounts (no overlay or disk of warden's
     * can be shown in them) and its user namespace (sandbox.require
     * userns/netns ask for warden's own); a vacant sandbox takes its
     * workspace through the gofer's namespace at attach (gv_attach) */
    .caps = BACKEND_CAP_POOL,
    .probe = gv_probe,
    .prepare = gv_prepare,
    .spawn = gv_spawn_sb,
    .ready = gv_ready,
    .exec = gv_exec,
    .kill = gv_kill,
    .destroy = gv_destroy,
    .plan_text = gv_plan_text,
    .attach = gv_attach,
    /* the workspace's owner appears as the sandbox user to the gofer,
     * which creates as root and then chowns (as gv_prepare's idmap) */
    .attach_uid = 1000,
    .attach_root_creates = true,
};
