/* core/sandbox: the public sandbox (create, exec many times, destroy), the
 * one-call wd_run(), and the plan printer. */
#include "core/core.h"
#include "policy/policy.h"
#include "jail/jail.h"
#include "workspace/workspace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int
sandbox_create_boxed(wd_ctx *ctx, const wd_spec *spec, struct box *b, const char *id,
		     wd_sandbox **out, struct wd_err *err)
{
	struct sandbox *sb = NULL;
	struct ws_trees t = {-1, -1, -1};
	wd_spec *own = NULL;
	int rc = 0;
	if (b) {
		/* the jail gets its own clones of the box's trees */
		own = spec_copy(spec);
		rc = box_trees(b, own, &t, err);
		spec = own;
	}
	if (rc == 0)
		rc = sandbox_new(spec, b ? b->id : id, &ctx->sink, &sb, err);
	if (rc == 0) {
		sb->get_keeper = ctx_keeper;
		sb->keeper_data = ctx;
		rc = sandbox_start(sb, err);
	}
	if (rc == 0)
		rc = sandbox_wait_ready(sb, err);
	ws_trees_close(&t); /* the sandbox's build holds its copies */
	wd_spec_free(own);
	if (rc < 0) {
		sandbox_free(sb);
		return rc;
	}
	wd_sandbox *s = wd_xcalloc(1, sizeof(*s));
	s->ctx = ctx;
	s->sb = sb;
	s->box = b;
	atomic_fetch_add(&ctx->live, 1);
	*out = s;
	return 0;
}

WD_API int
wd_userns_enter(struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	/* Why refused as root: a root caller's cow sandboxes have a disk and
	 * an idmapped lower layer; in a namespace of its own it would lose
	 * the host's CAP_SYS_ADMIN they need */
	if (geteuid() == 0) {
		wd_err_set(err, WD_E_INVAL,
			   "wd_userns_enter: for an ordinary user (root's cow sandboxes have a "
			   "disk)");
		return -EPERM;
	}
	int rc = ws_layers_supported(err);
	if (rc < 0)
		return rc;
	if ((rc = ws_userns_enter(err)) == -EINVAL)
		err->code = WD_E_INVAL;
	return rc;
}

WD_API int
wd_sandbox_create(wd_ctx *ctx, const wd_spec *spec, wd_sandbox **out, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct box *b = NULL;
	char id[17];
	sandbox_make_id(id);
	wd_spec *own = spec_copy(spec);
	int rc = ctx_policy_create(ctx, &own, err);
	/* a cow workspace: its layers live in the state directory while the
	 * sandbox does */
	if (rc == 0 && box_needed(own))
		rc = box_create(ctx, own, id, true, &b, err);
	if (rc == 0 && (rc = sandbox_create_boxed(ctx, own, b, id, out, err)) < 0)
		box_close(b);
	wd_spec_free(own);
	CTX_LEAVE();
	return rc;
}

/* ---- live: a command in a sandbox that outlives it ---- */

static int
live_prepare(struct door *d, struct wd_err *err)
{
	struct sandbox *sb = ((wd_sandbox *)d->p)->sb;
	(void)err;
	snprintf(d->id, sizeof(d->id), "%s", sb->id);
	d->spec = sb->spec;
	return 0;
}

static int
live_acquire(struct door *d, struct wd_err *err)
{
	/* its limits and mounts were fixed when it was built; its egress
	 * is checked against what the policy asks now */
	d->sb = ((wd_sandbox *)d->p)->sb;
	return pipeline_net_fits(d, d->sb->spec, "sandbox", err);
}

static const struct placement live;

const char core_running_label[] = "a process still running in the sandbox, whose writes "
				  "through a shared mapping would not be seen";

/* Does a process besides pid 1 live in the sandbox?  Every process there
 * is a descendant of its pid 1 (an orphan is given to the namespace's
 * init), so pid 1 having a child says so.  A list that cannot be read
 * counts as one (fail closed). */
static bool
core_running(pid_t pid)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return true;
	bool any = false;
	struct dirent *e;
	while (!any && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		char b[16];
		any = fd < 0 || read(fd, b, sizeof(b)) != 0;
		if (fd >= 0)
			close(fd);
	}
	closedir(d);
	return any;
}

/* A container-level sandbox's own trees that outlive a command: its home,
 * /tmp and /dev/shm (tmpfs mounts of its own, or a session's disk),
 * walked as its processes see them, through its pid 1's root.  A
 * usercustomize.py there, or a link to one, is code python runs; a
 * failure to open one is returned as -1 (no approval can match).  Other
 * levels: none (the process level's /tmp and /dev/shm are the host's,
 * gVisor's are inside its own kernel; docs/threat-model.md). */
int
core_own_trees(const struct sandbox *sb, const char **labels, int *fds, int max)
{
	static const char *const trees[][2] = {
	    {"home", "/home/sandbox"}, {"tmp", "/tmp"}, {"shm", "/dev/shm"}};
	if (!sb->spec || sb->spec->isolation != WD_ISOLATION_CONTAINER || sb->pid <= 0)
		return 0;
	/* Why a running process makes the state unprintable: a write through
	 * a shared mapping (mmap MAP_SHARED) changes a file's bytes without
	 * moving its change time (on tmpfs never; on ext4 not until the page
	 * is written back), and the print reads times, not bytes.  A process
	 * left running (a detached command, one that called setsid) could
	 * change a file after the human approved it and the retry's print
	 * would still match: an attack pass ran code nobody reviewed that
	 * way.  So no approval covers a sandbox while a process other than
	 * its pid 1 runs in it (fail closed: the retry pauses again). */
	if (max > 0 && core_running(sb->pid)) {
		labels[0] = core_running_label;
		fds[0] = -1;
		return 1;
	}
	/* An ordinary user's server or monitor may not enter its pid 1's
	 * root (pid 1 is not dumpable to it): then none, and the caller
	 * walks what it holds (a session's layers: home and /tmp); the
	 * rest is in docs/threat-model.md's "not covered" */
	int probe = wd_tree_open_in(sb->pid, "/");
	if (probe == -EACCES || probe == -EPERM)
		return 0;
	if (probe >= 0)
		close(probe);
	int n = 0;
	for (size_t i = 0; i < WD_ARRAY_SIZE(trees) && n < max; i++) {
		labels[n] = trees[i][0];
		fds[n++] = wd_tree_open_in(sb->pid, trees[i][1]);
	}
	return n;
}

/* A paused command's approval covers the workspace as the sandbox sees
 * it (a cow sandbox's overlay holds what the model wrote, which the host
 * directory does not show; policy/approval.c) and its own trees. */
static int
live_roots(wd_sandbox *s, const char **labels, int *fds, int max)
{
	wd_workspace *v = NULL;
	if (max < 1 || wd_sandbox_workspace(s, &v, NULL) < 0)
		return -EIO;
	const char *real = NULL;
	const char *const *protect = NULL;
	size_t n = 0;
	int fd = fcntl(ws_files_parts(v, &real, &protect, &n), F_DUPFD_CLOEXEC, 3);
	wd_workspace_close(v);
	if (fd < 0)
		return -errno;
	labels[0] = "workspace";
	fds[0] = fd;
	return 1 + core_own_trees(s->sb, labels + 1, fds + 1, max - 1);
}

static int
live_state_roots(struct door *d, const char **labels, int *fds, int max)
{
	return live_roots(d->p, labels, fds, max);
}

/* The workspace as the sandbox's commands see it (its cow overlay, or
 * the host directory in direct mode), for the policy's path checks: a
 * link the model made in the overlay is judged there. */
static int
live_view_fd(wd_sandbox *s, char *why, size_t cap)
{
	wd_workspace *v = NULL;
	struct wd_err e = {0};
	if (wd_sandbox_workspace(s, &v, &e) < 0) {
		snprintf(why, cap, "the workspace of sandbox %s cannot be opened: %s", s->sb->id,
			 e.msg[0] ? e.msg : "no view");
		return -EIO;
	}
	const char *real = NULL;
	const char *const *protect = NULL;
	size_t n = 0;
	int fd = fcntl(ws_files_parts(v, &real, &protect, &n), F_DUPFD_CLOEXEC, 3);
	int e2 = errno;
	wd_workspace_close(v);
	if (fd < 0) {
		snprintf(why, cap, "the workspace of sandbox %s cannot be opened: %s", s->sb->id,
			 strerror(e2));
		return -e2;
	}
	return fd;
}

static int
live_view(struct door *d, char *why, size_t cap)
{
	return live_view_fd(d->p, why, cap);
}

/* A request's hold on a live sandbox's state (wd_sandbox_request): the
 * trees and label the exec's door gives (live_state_roots,
 * door_state_roots), so that the id is the exec's. */
struct sb_state {
	wd_sandbox *s;
	char where[96];
};

static int
sb_request_roots(void *arg, const char **labels, int *fds, int max)
{
	struct sb_state *st = arg;
	return core_state_sandbox(live_roots(st->s, labels, fds, max), labels, fds, max, st->where,
				  sizeof(st->where), live.name, st->s->sb->id, st->s->sb->spec);
}

static int
sb_request_view(void *arg, char *why, size_t cap)
{
	struct sb_state *st = arg;
	return live_view_fd(st->s, why, cap);
}

WD_API int
wd_sandbox_request(wd_sandbox *s, wd_request *req, struct wd_err *err)
{
	const wd_spec *spec = s->sb->spec;
	int rc = 0;
	/* the workspace the gate judges against: the spec's (pipeline.c) */
	if (spec->workspace && (rc = wd_request_set_workspace(req, spec->workspace, err)) < 0)
		wd_err_prefix(err, "the sandbox's workspace");
	if (rc == 0)
		rc = wd_request_set_spec(req, spec, err);
	if (rc == 0) {
		struct sb_state *st = wd_xcalloc(1, sizeof(*st));
		st->s = s;
		policy_request_state_roots(req, sb_request_roots, st, free);
		/* its paths judged in the sandbox's view, as the exec's are */
		policy_request_view_hook(req, sb_request_view, st);
	}
	return rc;
}

static int
live_exec(struct door *d, wd_result **r, struct wd_err *err)
{
	return sandbox_exec(d->sb, &d->x, r, err);
}

static const struct placement live = {
    .name = "live",
    .prepare = live_prepare,
    .acquire = live_acquire,
    .exec = live_exec,
    .state_roots = live_state_roots,
    .view = live_view,
};

WD_API int
wd_sandbox_exec(wd_sandbox *s, const wd_cmd *cmd, wd_result **out, struct wd_err *err)
{
	return pipeline_run(s->ctx, &live, s, cmd, out, err);
}

WD_API void
wd_sandbox_destroy(wd_sandbox *s)
{
	if (!s)
		return;
	wd_ctx *ctx = s->ctx;
	CTX_ENTER(ctx);
	sandbox_free(s->sb);
	box_close(s->box); /* after the jail: its mounts held the layers */
	atomic_fetch_sub(&ctx->live, 1);
	free(s);
	CTX_LEAVE();
}

WD_API const char *
wd_sandbox_id(const wd_sandbox *s)
{
	return s->sb->id;
}

WD_API void
wd_sandbox_cancel(wd_sandbox *s, int signo)
{
	sandbox_cancel(s->sb, signo);
}

/* ---- the change set of a cow sandbox ---- */

static int
need_cow(const wd_sandbox *s, struct wd_err *err)
{
	if (!s->box || !s->box->cow)
		return wd_err_set(err, WD_E_INVAL,
				  "sandbox %s has a direct workspace: what it wrote is on the host "
				  "already (--workspace-mode cow keeps a change set)",
				  s->sb->id);
	return 0;
}

/* Review and apply are one transaction (docs/threat-model.md): a diff freezes the
 * sandbox's processes and leaves them frozen, so what the human reads is
 * what an apply then writes; apply and discard end the review, and so does
 * a new command (sandbox_exec).  A host where nothing can be frozen still
 * has the digest (--expect) and apply's re-hashing of every file. */
void
sandbox_review(struct sandbox *sb, bool on)
{
	struct wd_err e = {0};
	if (sb && sandbox_freeze(sb, on, &e) < 0)
		wd_log(WD_LOG_WARN, "review: %s", e.msg);
}

WD_API int
wd_sandbox_diff(wd_sandbox *s, const char *const *paths, size_t npaths, unsigned flags, char **out,
		struct wd_err *err)
{
	CTX_ENTER(s->ctx);
	int rc = need_cow(s, err);
	if (rc == 0)
		sandbox_review(s->sb, true);
	if (rc == 0)
		rc = box_diff(s->box, paths, npaths, flags, out, err);
	CTX_LEAVE();
	return rc;
}

WD_API int
wd_sandbox_apply(wd_sandbox *s, const char *const *paths, size_t npaths, const char *expect,
		 unsigned flags, char **report, struct wd_err *err)
{
	CTX_ENTER(s->ctx);
	int rc = need_cow(s, err);
	if (rc == 0) {
		/* Why: a sandbox with a cgroup whose processes could not be
		 * frozen (they keep continuing each other against a stop by
		 * signal, cgroup_freeze) could change a file while it is
		 * written: refused rather than applied unfrozen */
		struct wd_err fe = {0};
		if (sandbox_freeze(s->sb, true, &fe) < 0 && s->sb->cg)
			rc = wd_err_set(err, WD_E_UNSUPPORTED,
					"apply refused: the sandbox's processes could not be "
					"frozen (%s), so the files could change while they are "
					"written; end its commands, then apply again",
					fe.msg);
		else
			rc = box_apply(s->box, paths, npaths, expect, flags, report, err);
		sandbox_review(s->sb, false);
	}
	CTX_LEAVE();
	return rc;
}

WD_API int
wd_sandbox_discard(wd_sandbox *s, const char *const *paths, size_t npaths, struct wd_err *err)
{
	CTX_ENTER(s->ctx);
	int rc = need_cow(s, err);
	if (rc == 0)
		rc = box_discard(s->box, paths, npaths, true, err);
	if (rc >= 0)
		sandbox_review(s->sb, false);
	CTX_LEAVE();
	return rc;
}

/* The workspace as the sandbox sees it, for direct tools: a cow
 * sandbox's overlay (so a tool's write joins its change set, as the
 * sandbox's own writes do), or the directory; protected as the jail is
 * (its spec's list holds the policy's and the caller's paths, and the
 * layers' list warden's as well). */
WD_API int
wd_sandbox_workspace(wd_sandbox *s, wd_workspace **out, struct wd_err *err)
{
	CTX_ENTER(s->ctx);
	const wd_spec *spec = s->sb->spec;
	int rc;
	if (s->box && s->box->cow) {
		const struct ws *w = s->box->ws;
		rc = ws_files_view(w->ovl, w->workspace, (const char *const *)w->protect,
				   w->nprotect, out, err);
	} else {
		wd_autofree char *cwd = spec->workspace ? NULL : getcwd(NULL, 0);
		const char *dir = spec->workspace ? spec->workspace : cwd;
		/* No link followed on the way: the path is canonical (realpath
		 * when the spec was made, getcwd), so a link in it was put there
		 * since, by whatever writes a directory above (another sandbox
		 * over the parent); followed, `warden cp` and the file tools
		 * wrote into the host directory it named */
		struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		wd_autoclose int fd =
		    dir ? (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how)) : -1;
		if (fd < 0 && errno == ELOOP)
			rc = wd_err_set(err, WD_E_INVAL,
					"workspace '%s': a symbolic link in its path appeared "
					"after the sandbox was made; refused rather than followed",
					dir);
		else
			rc = fd < 0 ? wd_err_sys(err, errno, "workspace '%s'", dir ? dir : ".")
				    : ws_files_view(fd, dir, (const char *const *)spec->protect,
						    spec->nprotect, out, err);
	}
	CTX_LEAVE();
	return rc;
}

/* ---- one call ---- */

WD_API int
wd_run(const wd_spec *spec, wd_result **out, struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	if (!spec->argv)
		return wd_err_set(err, WD_E_INVAL, "no program given");
	wd_ctx *ctx = NULL;
	int rc = wd_ctx_new(&ctx, err);
	if (rc < 0)
		return rc;
	wd_cmd *cmd = wd_cmd_new();
	rc = wd_cmd_set_argv(cmd, spec->argc, (const char *const *)spec->argv, err);
	if (rc == 0) {
		wd_cmd_set_stdin(cmd, spec->stdin_fd);
		wd_cmd_set_stream(cmd, spec->stream_fd[1], spec->stream_fd[2]);
		rc = wd_ctx_run(ctx, spec, cmd, out, err);
	}
	wd_cmd_free(cmd);
	wd_ctx_free(ctx);
	return rc;
}

WD_API int
wd_spec_plan(const wd_spec *spec, char **out, struct wd_err *err)
{
	/* the plan of the spec's sandbox, prepared (so bad input shows) but
	 * never started */
	struct sandbox *sb = NULL;
	wd_spec *own = NULL;
	if (box_needed(spec) && backend_can(spec->isolation, BACKEND_CAP_MOUNTS)) {
		/* a cow sandbox's trees are made only when it is built: the
		 * plan shows where they go (the descriptors are never used:
		 * nothing is built here) */
		own = spec_copy(spec);
		own->tree_ws = own->tree_home = own->tree_tmp = 0;
		spec = own;
	}
	int rc = sandbox_new(spec, NULL, NULL, &sb, err);
	wd_spec_free(own);
	if (rc < 0)
		return rc;
	char *plan = sb->ops->plan_text(sb), *secrets = spec_plan_secrets(sb->spec);
	*out = wd_xasprintf("%s%s", plan, secrets);
	free(plan);
	free(secrets);
	sandbox_free(sb);
	return 0;
}
