/* session/session: sessions from the caller's side: their state in
 * the state directory, their monitors (started, asked, stopped), and what
 * can be done without one (a stopped session's diff, apply, discard,
 * snapshot).
 *
 * The policy stage and the audit trail stay with the caller: a command
 * for a session is judged, recorded and its result audited in the
 * caller's context, exactly as a run's; the monitor only runs what it is
 * sent.  (It never sees the policy file or the audit trail: those belong
 * to whoever asks, and different callers may use one session under
 * different policies.) */
#include "session/session.h"
#include "jail/jail.h"
#include "net/net.h"
#include "policy/policy.h"
#include "util/escape.h"
#include "util/json.h"
#include "workspace/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#ifndef WD_MONITOR_PATH
#define WD_MONITOR_PATH "/usr/local/libexec/warden/warden-monitor"
#endif

#define DEFAULT_IDLE_MS (30ULL * 60 * 1000)

/* ---- where things are ---- */

void
session_where_fini(struct where *w)
{
	if (w->sbdir >= 0)
		close(w->sbdir);
	w->sbdir = -1;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t
session_dir_names(int dfd, bool (*keep)(const char *name), char ***out)
{
	int fd = dup(dfd); /* fdopendir takes it, closedir closes it */
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (keep(de->d_name)) {
			names = wd_xrealloc(names, (n + 1) * sizeof(char *));
			names[n++] = wd_xstrdup(de->d_name);
		}
	if (d)
		closedir(d);
	if (n)
		qsort(names, n, sizeof(char *), cmp_str);
	*out = names;
	return n;
}

bool
session_is_id(const char *name)
{
	return strlen(name) == 16;
}

int
session_locate(wd_ctx *ctx, const char *ref, struct where *w, struct wd_err *err)
{
	w->sbdir = -1;
	if (!ref || !ref[0])
		return wd_err_set(err, WD_E_INVAL, "no sandbox named");
	int rc = ctx_state_root(ctx, w->root, sizeof(w->root), err);
	if (rc < 0)
		return rc;
	int sfd = ws_state_sandboxes(w->root, err);
	if (sfd < 0)
		return sfd;
	if ((rc = ws_resolve(w->root, ref, w->id, err)) == 0) {
		w->sbdir = openat(sfd, w->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (w->sbdir < 0) {
			wd_err_set(err, WD_E_INVAL, "no sandbox '%s' (warden ls lists them)", ref);
			rc = -ENOENT;
		}
	}
	close(sfd);
	return rc;
}

/* ---- talking to the monitor ---- */

static int
connect_monitor(int sbdir, struct wd_err *err)
{
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return wd_err_sys(err, errno, "socket");
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/monitor.sock", sbdir);
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		close(s);
		if (e == ENOENT || e == ECONNREFUSED) {
			wd_err_set(err, WD_E_INVAL, "the sandbox is not running (warden start)");
			return -ESRCH;
		}
		return wd_err_sys(err, e, "connect to the sandbox's monitor");
	}
	return s;
}

/* The reply of a request: 0 with *resp (and *rfd, a memfd or -1), or the
 * monitor's error as -code with its message.  cancel_fd readable while
 * waiting: a cancel record goes to the monitor with *cancel_sig. */
static int
await_reply(int s, json_t **resp, int *rfd, int cancel_fd, const atomic_int *cancel_sig,
	    int cmd_cancel_fd, struct wd_err *err)
{
	bool cancelled = false;
	*rfd = -1;
	for (;;) {
		/* the context's cancellation (its signal), and the command's own
		 * (wd_cmd_set_cancel_fd: as SIGKILL) */
		struct pollfd p[3] = {{.fd = s, .events = POLLIN},
				      {.fd = cancelled ? -1 : cancel_fd, .events = POLLIN},
				      {.fd = cancelled ? -1 : cmd_cancel_fd, .events = POLLIN}};
		int n = poll(p, 3, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return wd_err_sys(err, errno, "poll");
		if (n > 0 && !cancelled && (p[1].revents || p[2].revents)) {
			int sig = p[1].revents && cancel_sig ? atomic_load(cancel_sig) : 9;
			char *c = wd_xasprintf("{\"op\":\"cancel\",\"signal\":%d}", sig ? sig : 9);
			mp_send(s, c, NULL, 0);
			free(c);
			cancelled = true;
		}
		if (p[0].revents)
			break;
	}
	char *text = NULL;
	int fds[MP_MAX_FDS], nfds = 0;
	int rc = mp_recv(s, &text, fds, &nfds, -1);
	if (rc < 0)
		return wd_err_sys(err, -rc, "the sandbox's monitor did not answer (it died?)");
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	free(text);
	for (int i = 1; i < nfds; i++)
		close(fds[i]);
	if (nfds)
		*rfd = fds[0];
	if (!j)
		return wd_err_set(err, WD_E_INTERNAL, "the monitor's reply: %s", je.text);
	if (!json_is_true(json_object_get(j, "ok"))) {
		int code = (int)json_integer_value(json_object_get(j, "code"));
		const char *msg = json_string_value(json_object_get(j, "error"));
		wd_err_set(err, code == EINVAL ? WD_E_INVAL : WD_E_SYS, "%s", msg ? msg : "failed");
		if (err && code != EINVAL)
			err->sys_errno = code;
		json_decref(j);
		wd_close_reset(rfd);
		return -(code > 0 ? code : EIO);
	}
	*resp = j;
	return 0;
}

int
session_call(int sbdir, const char *req, const int *fds, int nfds, json_t **resp, char **data,
	     size_t *dlen, struct wd_err *err)
{
	int s = connect_monitor(sbdir, err);
	if (s < 0)
		return s;
	int rc = mp_send(s, req, fds, nfds);
	if (rc < 0) {
		close(s);
		return wd_err_sys(err, -rc, "send to the sandbox's monitor");
	}
	int rfd = -1;
	json_t *j = NULL;
	rc = await_reply(s, &j, &rfd, -1, NULL, -1, err);
	close(s);
	if (rc == 0 && data) {
		*data = rfd >= 0 ? mp_read_memfd(rfd, 1ULL << 32, dlen) : wd_xstrdup("");
		if (rfd < 0 && dlen)
			*dlen = 0;
	}
	if (rfd >= 0)
		close(rfd);
	if (rc == 0 && resp)
		*resp = j;
	else
		json_decref(j);
	return rc;
}

int
session_call_fd(int sbdir, const char *req, const int *fds, int nfds, json_t **resp, int *rfd,
		struct wd_err *err)
{
	int s = connect_monitor(sbdir, err);
	if (s < 0)
		return s;
	int rc = mp_send(s, req, fds, nfds);
	if (rc < 0) {
		close(s);
		return wd_err_sys(err, -rc, "send to the sandbox's monitor");
	}
	rc = await_reply(s, resp, rfd, -1, NULL, -1, err);
	close(s);
	return rc;
}

/* ---- the monitor program ---- */

static const char *
monitor_program(char *buf, size_t cap)
{
	/* the installed path when none is found: its absence is then the
	 * error the caller reports */
	wd_helper_program("WARDEN_MONITOR", "warden-monitor", WD_MONITOR_PATH, buf, cap);
	return buf;
}

extern char **environ;

/* Start the session's monitor and wait until it says ready (or why not). */
/* The secrets' values for the monitor, over fd 4 (a socket: kernel
 * memory, never a file): "NAME=VALUE\n" each (a value holds no control
 * character, a name no '='), then EOF. */
static void
send_secrets(int fd, const wd_spec *spec)
{
	size_t n = spec ? net_secrets_count(spec->secrets) : 0;
	for (unsigned i = 0; i < n; i++) {
		size_t len = 0;
		const char *name = net_secrets_name(spec->secrets, i);
		const char *v = net_secrets_value(spec->secrets, i, &len);
		static char eq[] = "=", nl[] = "\n";
		struct iovec iov[4] = {{(void *)(uintptr_t)name, strlen(name)},
				       {eq, 1},
				       {(void *)(uintptr_t)v, len},
				       {nl, 1}};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 4};
		/* a monitor that died early: its readiness says why */
		if (!v || sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
			break;
	}
}

static int
spawn_monitor(const char *root, const char *id, const wd_spec *spec, struct wd_err *err)
{
	char pbuf[PATH_MAX];
	const char *prog = monitor_program(pbuf, sizeof(pbuf));
	if (access(prog, X_OK) < 0)
		return wd_err_sys(err, errno,
				  "the session monitor %s (set WARDEN_MONITOR to warden-monitor's "
				  "path)",
				  prog);
	int p[2], sv[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "pipe");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		close(p[0]);
		close(p[1]);
		return wd_err_sys(err, errno, "socketpair");
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 3);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 4);
	/* nothing of ours but fds 3 and 4: an embedding program's
	 * descriptors stay */
	posix_spawn_file_actions_addclosefrom_np(&fa, 5);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_RDWR, 0);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSID);
	const char *argv[] = {"warden-monitor", root, id, NULL};
	static const char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
					   NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, prog, &fa, &at, (char *const *)(uintptr_t)argv,
			     (char *const *)(uintptr_t)envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	close(sv[1]);
	if (rc != 0) {
		close(p[0]);
		close(sv[0]);
		return wd_err_sys(err, rc, "start %s", prog);
	}
	/* it forks its daemon and exits at once: reap it */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	send_secrets(sv[0], spec);
	close(sv[0]);
	char buf[512];
	size_t got = 0;
	for (;;) {
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int n = poll(&pf, 1, 120000);
		if (n == 0) {
			close(p[0]);
			return wd_err_set(err, WD_E_SYS,
					  "the session monitor did not start in 120 s");
		}
		if (n < 0 && errno == EINTR)
			continue;
		ssize_t r = read(p[0], buf + got, sizeof(buf) - 1 - got);
		if (r <= 0 || (got += (size_t)r) >= sizeof(buf) - 1)
			break;
	}
	close(p[0]);
	buf[got] = '\0';
	if (!strncmp(buf, "ok", 2))
		return 0;
	int code = EIO;
	char *msg = buf;
	if (!strncmp(buf, "error ", 6)) {
		code = (int)strtol(buf + 6, &msg, 10);
		msg += *msg == ' ';
	}
	msg[strcspn(msg, "\n")] = '\0';
	wd_err_set(err,
		   code == EINVAL    ? WD_E_INVAL
		   : code == ENOTSUP ? WD_E_UNSUPPORTED
				     : WD_E_SYS,
		   "%s", msg[0] ? msg : "the session monitor ended before it was ready");
	return -(code > 0 ? code : EIO);
}

/* ---- create ---- */

static bool
wants_disk(const wd_spec *spec)
{
	/* a home and /tmp that persist, bounded: where the host can (root,
	 * container level) */
	return spec->ws_mode == WD_WORKSPACE_COW ||
	       (geteuid() == 0 && backend_can(spec->isolation, BACKEND_CAP_MOUNTS));
}

/* NAME@TAG: the snapshot's directory (sandboxes/<id>/snapshots/<tag>). */
static int
open_snapshot(wd_ctx *ctx, const char *from, json_t **spec_json, struct wd_err *err)
{
	const char *at = strrchr(from, '@');
	if (!at || at == from || !at[1])
		return wd_err_set(err, WD_E_INVAL, "--from '%s': expected NAME@TAG", from);
	char *name = strndup(from, (size_t)(at - from));
	struct where w;
	int rc = session_locate(ctx, name, &w, err);
	free(name);
	if (rc < 0)
		return rc;
	char path[64];
	snprintf(path, sizeof(path), "snapshots/%s", at + 1);
	int fd = ws_name_ok(at + 1)
		     ? openat(w.sbdir, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
		     : -1;
	session_where_fini(&w);
	if (fd < 0) {
		wd_err_set(err, WD_E_INVAL, "--from: no snapshot '%s' (warden snapshot makes one)",
			   from);
		return -ENOENT;
	}
	/* held while it is copied: warden snapshot rm waits its turn */
	if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		close(fd);
		wd_err_set(err, WD_E_INVAL, "--from: the snapshot '%s' is being removed", from);
		return -EBUSY;
	}
	json_t *meta = NULL;
	if (ws_meta_read(fd, &meta, NULL) == 0) {
		*spec_json = json_incref(json_object_get(meta, "spec"));
		json_decref(meta);
	}
	return fd;
}

static int
copy_layers(void *arg, char **out, struct wd_err *err)
{
	const int *fds = arg;
	(void)out;
	return ws_copy_tree(fds[0], WS_LAYERS, fds[1], WS_LAYERS, err);
}

static int
make_state(wd_ctx *ctx, const wd_spec *spec, const struct wd_session_params *p, struct where *w,
	   int snap, struct wd_err *err)
{
	json_t *meta =
	    json_pack("{s:s, s:I, s:b, s:s, s:I, s:o}", "id", w->id, "created",
		      (json_int_t)time(NULL), "session", 1, "state", "stopped", "idle_timeout_ms",
		      (json_int_t)(p && p->idle_timeout_ms
				       ? (p->idle_timeout_ms == UINT64_MAX ? 0 : p->idle_timeout_ms)
				       : DEFAULT_IDLE_MS),
		      "spec", spec_to_json(spec));
	if (p && p->name)
		json_object_set_new(meta, "name", json_string(p->name));
	if (p && p->from)
		json_object_set_new(meta, "from", json_string(p->from));
	/* what the policy added, kept apart: warden update removes only
	 * what the session's own create or update added */
	json_t *floor = NULL;
	int rc = session_policy_floor(ctx, &floor, err);
	if (rc < 0) {
		json_decref(meta);
		return rc;
	}
	if (floor)
		json_object_set_new(meta, "policy", floor);
	rc = ws_meta_write(w->sbdir, meta, err);
	json_decref(meta);
	if (rc < 0)
		return rc;
	bool root = geteuid() == 0;
	if (snap >= 0) {
		/* the snapshot's files: a sparse copy of its disk, its baseline */
		if (faccessat(snap, WS_LAYERS, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			/* an ordinary user's: layers/, not a disk, copied where
			 * a file the sandbox made mode 000 is still readable */
			int fds[2] = {snap, w->sbdir};
			rc = root ? copy_layers(fds, NULL, err)
				  : ws_userns_run(copy_layers, fds, NULL, err);
			if (rc < 0)
				return rc;
		} else if ((rc = ws_copy_sparse(snap, "disk.img", w->sbdir, "disk.img", err)) < 0) {
			return rc;
		}
		if (faccessat(snap, "baseline", F_OK, 0) == 0 &&
		    (rc = ws_copy_sparse(snap, "baseline", w->sbdir, "baseline", err)) < 0)
			return rc;
	} else if (wants_disk(spec) && !root) {
		if ((rc = ws_layers_supported(err)) < 0)
			return rc;
		/* --disk bounds what the sandbox writes with an ext4 image of
		 * that size; an ordinary user cannot mount one, and a limit
		 * asked for and not enforced fails closed, as --memory does */
		if (spec->disk_bytes && !spec->best_effort)
			return wd_err_set(err, WD_E_UNSUPPORTED,
					  "--disk needs root (a loop device and an ext4 mount); as "
					  "an ordinary user a session's layers are a directory in "
					  "your state directory, bounded only by its file system: "
					  "drop --disk, or add --best-effort to run without the "
					  "bound");
		if ((rc = ws_layers_create(w->sbdir, err)) < 0)
			return rc;
	} else if (wants_disk(spec)) {
		if ((rc = ws_disk_supported(err)) < 0)
			return rc;
		uint64_t size = spec->disk_bytes ? spec->disk_bytes : WS_DISK_DEFAULT;
		rc = ws_disk_create(w->sbdir, "disk.img", size, root ? WD_NOBODY : geteuid(),
				    root ? WD_NOBODY : getegid(), err);
		if (rc < 0)
			return rc;
	}
	if (spec->ws_mode == WD_WORKSPACE_COW && faccessat(w->sbdir, "baseline", F_OK, 0) < 0) {
		wd_autofree char *cwd = spec->workspace ? NULL : realpath(".", NULL);
		wd_autoclose int wsfd =
		    open(spec->workspace ? spec->workspace : cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
		rc = wsfd < 0 ? wd_err_sys(err, errno, "the workspace")
			      : ws_baseline_record(w->sbdir, wsfd, err);
	}
	return rc;
}

WD_API int
wd_session_create(wd_ctx *ctx, const wd_spec *spec_in, const struct wd_session_params *p,
		  char id[17], struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	CTX_ENTER(ctx);
	struct where w = {.sbdir = -1};
	json_t *from_spec = NULL;
	wd_spec *spec = NULL;
	int snap = -1, sfd = -1, rc;
	bool named = false, made = false;
	if (p && p->name && !ws_name_ok(p->name)) {
		rc = wd_err_set(
		    err, WD_E_INVAL,
		    "bad name '%s': a letter or digit, then letters, digits, '_', '.' or "
		    "'-', at most 63",
		    p->name);
		goto out;
	}
	if ((rc = ctx_state_root(ctx, w.root, sizeof(w.root), err)) < 0)
		goto out;
	if ((sfd = ws_state_sandboxes(w.root, err)) < 0) {
		rc = sfd;
		goto out;
	}
	if (p && p->from && (snap = rc = open_snapshot(ctx, p->from, &from_spec, err)) < 0)
		goto out;
	spec = spec_copy(spec_in);
	if ((rc = ctx_policy_create(ctx, &spec, err)) < 0)
		goto out;
	if (from_spec && !spec_in->workspace) {
		/* the snapshot's workspace and mode, unless given anew */
		wd_spec *fs = NULL;
		if ((rc = spec_from_json(from_spec, &fs, err)) < 0)
			goto out;
		if (fs->workspace && (rc = wd_spec_set_workspace(spec, fs->workspace, err)) < 0) {
			wd_spec_free(fs);
			goto out;
		}
		spec->ws_mode = fs->ws_mode;
		wd_spec_free(fs);
	}
	if (spec->ws_mode == WD_WORKSPACE_COW &&
	    !backend_can(spec->isolation, BACKEND_CAP_MOUNTS)) {
		rc = wd_err_set(err, WD_E_UNSUPPORTED,
				"--workspace-mode cow needs --isolation container (a mount "
				"namespace to show the overlay in)");
		goto out;
	}
	/* an image store the session's sandbox could write: refused before
	 * its sandbox starts (each exec would be refused anyway) */
	if ((rc = ctx_image_check(spec, err)) < 0)
		goto out;
	if ((rc = session_secrets_check(spec, err)) < 0)
		goto out;
	sandbox_make_id(w.id);
	if (p && p->name) {
		if ((rc = ws_name_take(w.root, p->name, w.id, err)) < 0)
			goto out;
		named = true;
	}
	if (mkdirat(sfd, w.id, 0700) < 0) {
		rc = wd_err_sys(err, errno, "create the session's state");
		goto out;
	}
	made = true;
	w.sbdir = openat(sfd, w.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w.sbdir < 0) {
		rc = wd_err_sys(err, errno, "open the session's state");
		goto out;
	}
	if ((rc = make_state(ctx, spec, p, &w, snap, err)) < 0)
		goto out;
	if ((rc = spawn_monitor(w.root, w.id, spec, err)) < 0)
		goto out;
	memcpy(id, w.id, 17);
out:
	if (rc < 0 && made)
		wd_rm_tree_at(sfd, w.id);
	if (rc < 0 && named)
		ws_name_release(w.root, p->name);
	if (sfd >= 0)
		close(sfd);
	if (snap >= 0)
		close(snap);
	json_decref(from_spec);
	wd_spec_free(spec);
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

/* ---- exec ---- */

static void
jw_strv(struct jw *j, const char *k, const char *const *v, int n)
{
	jw_key(j, k);
	jw_arr_begin(j);
	for (int i = 0; v && (n < 0 ? v[i] != NULL : i < n); i++)
		jw_str(j, v[i]);
	jw_arr_end(j);
}

static char *
exec_request(const char *op, const wd_cmd *cmd, const char *const *argv, const struct exec_req *x,
	     unsigned require, int *fds, int *nfds)
{
	struct jw j;
	jw_init(&j, 0);
	jw_obj_begin(&j);
	jw_kstr(&j, "op", op);
	jw_strv(&j, "argv", argv, -1);
	jw_strv(&j, "env", (const char *const *)cmd->env, -1);
	if (cmd->cwd)
		jw_kstr(&j, "cwd", cmd->cwd);
	jw_kuint(&j, "timeout_ms", x->timeout_ms);
	jw_kuint(&j, "output_limit", x->output_limit);
	jw_kuint(&j, "require", require);
	if (nfds)
		*nfds = 0;
	const struct {
		const char *name;
		int fd;
	} io[] = {
	    {"stdin", cmd->stdin_fd}, {"stdout", cmd->stream_fd[1]}, {"stderr", cmd->stream_fd[2]}};
	for (size_t i = 0; i < WD_ARRAY_SIZE(io) && fds; i++) {
		jw_kbool(&j, io[i].name, io[i].fd >= 0);
		if (io[i].fd >= 0)
			fds[(*nfds)++] = io[i].fd;
	}
	jw_obj_end(&j);
	return jw_steal(&j);
}

/* ---- session: a command sent to the session's monitor ----
 *
 * The policy stage and the result event stay here, in the caller's
 * context (see the header); the monitor runs the judged argv with the
 * limits and the sandbox.require bits it is sent. */

struct sess {
	const char *ref;
	struct where w;
	wd_spec *spec; /* the session's, from its meta.json */
	char *req;
	int s, rfd;
	json_t *resp;
	unsigned seq;
	char detail[64];
};

static int
sess_prepare(struct door *d, struct wd_err *err)
{
	struct sess *q = d->p;
	json_t *meta = NULL;
	int rc = session_locate(d->ctx, q->ref, &q->w, err);
	if (rc < 0)
		return rc;
	/* its spec: the workspace the command's paths are judged against,
	 * the egress it was built with */
	if ((rc = ws_meta_read(q->w.sbdir, &meta, err)) == 0)
		rc = spec_from_json(json_object_get(meta, "spec"), &q->spec, err);
	json_decref(meta);
	if (rc < 0)
		return rc;
	snprintf(d->id, sizeof(d->id), "%s", q->w.id);
	d->spec = q->spec;
	return 0;
}

static int
sess_acquire(struct door *d, struct wd_err *err)
{
	struct sess *q = d->p;
	return pipeline_net_fits(d, q->spec, "session", err);
}

static int
sess_exec(struct door *d, wd_result **r, struct wd_err *err)
{
	struct sess *q = d->p;
	wd_ctx *ctx = d->ctx;
	const wd_cmd *cmd = d->cmd;
	const char *const *argv = d->x.argv;
	int rc;
	int fds[MP_MAX_FDS], nfds = 0;
	q->req = exec_request("exec", cmd, argv, &d->x, d->g.require, fds, &nfds);
	if ((q->s = rc = connect_monitor(q->w.sbdir, err)) < 0)
		return rc;
	if ((rc = mp_send(q->s, q->req, fds, nfds)) < 0)
		return wd_err_sys(err, -rc, "send the command to the sandbox's monitor");
	if ((rc = await_reply(q->s, &q->resp, &q->rfd, ctx->cancel_fd, &ctx->cancel_sig,
			      cmd->cancel_fd, err)) < 0)
		return rc;
	size_t dlen = 0;
	char *data = q->rfd >= 0 ? mp_read_memfd(q->rfd, 1ULL << 31, &dlen) : NULL;
	json_t *res = json_object_get(q->resp, "result");
	size_t l1 = (size_t)json_integer_value(json_object_get(res, "out_len"));
	size_t l2 = (size_t)json_integer_value(json_object_get(res, "err_len"));
	if (!data || l1 + l2 != dlen)
		l1 = l2 = 0; /* no windows rather than wrong ones */
	*r = result_wire_read(res, data ? data : "", l1, data ? data + l1 : "", l2);
	free(data);
	if (*r)
		(*r)->refusals_unaudited = true; /* the monitor's proxy saw them */
	return 0;
}

static int
sess_detach(struct door *d, wd_result **r, struct wd_err *err)
{
	struct sess *q = d->p;
	const char *const *argv = d->x.argv;
	int rc;
	*r = NULL;
	q->req = exec_request("detach", d->cmd, argv, &d->x, d->g.require, NULL, NULL);
	if ((rc = session_call(q->w.sbdir, q->req, NULL, 0, &q->resp, NULL, NULL, err)) < 0)
		return rc;
	q->seq = (unsigned)json_integer_value(json_object_get(q->resp, "seq"));
	if (json_is_false(json_object_get(q->resp, "running")) &&
	    json_integer_value(json_object_get(q->resp, "status")) != 0) {
		/* why, in its own words: the end of its log (escaped where it
		 * is printed: cli_fail, the server's JSON) */
		char *req =
		    wd_xasprintf("{\"op\":\"log\",\"id\":%u,\"offset\":0,\"max\":1048576}", q->seq);
		char *log = NULL;
		size_t n = 0;
		struct wd_err e2 = {0};
		json_t *lr = NULL;
		if (session_call(q->w.sbdir, req, NULL, 0, &lr, &log, &n, &e2) < 0)
			n = 0;
		json_decref(lr);
		free(req);
		while (n && (log[n - 1] == '\n' || log[n - 1] == '\r'))
			n--;
		/* its last line, which says why more often than not (a
		 * traceback's), cut to what a message holds */
		size_t from = n;
		while (from && log[from - 1] != '\n')
			from--;
		if (n - from > 120)
			from = n - 120;
		rc = wd_err_set(err, WD_E_SYS,
				"detached command %u ended at once with status %d (warden logs %s "
				"%u)%s%.*s",
				q->seq, (int)json_integer_value(json_object_get(q->resp, "status")),
				q->ref, q->seq, n ? ": " : ", with no output", (int)(n - from),
				log ? log + from : "");
		free(log);
		return rc;
	}
	snprintf(q->detail, sizeof(q->detail), "started as background command %u", q->seq);
	d->detached = q->detail;
	return 0;
}

static void
sess_release(struct door *d)
{
	struct sess *q = d->p;
	if (q->s >= 0)
		close(q->s);
	if (q->rfd >= 0)
		close(q->rfd);
	json_decref(q->resp);
	free(q->req);
	wd_spec_free(q->spec);
	session_where_fini(&q->w);
}

/* A paused command's approval covers what the session keeps that the
 * command reads (policy/approval.c): its workspace view (a cow session's
 * overlay holds what the model wrote), and its home and /tmp where they
 * persist (its disk, an ordinary user's layers).  The monitor hands each
 * over as a descriptor (its "state" request). */
static const char *
tree_label(const char *name)
{
	static const char *const known[] = {"home", "tmp", "shm", core_running_label};
	for (size_t i = 0; name && i < WD_ARRAY_SIZE(known); i++)
		if (!strcmp(name, known[i]))
			return known[i];
	return NULL;
}

static int
monitor_state_roots(int sbdir, const char **labels, int *fds, int max)
{
	int n = 0, fd = -1;
	json_t *resp = NULL;
	struct wd_err e = {0};
	/* the workspace: the view the command sees (a cow overlay) */
	int rc = session_call_fd(sbdir, "{\"op\":\"view\"}", NULL, 0, &resp, &fd, &e);
	json_decref(resp);
	if (rc < 0 || fd < 0 || max < 1) {
		if (fd >= 0)
			close(fd);
		return rc < 0 ? rc : -EIO;
	}
	labels[n] = "workspace";
	fds[n++] = fd;
	/* its own trees (home, /tmp, /dev/shm), several descriptors in one
	 * reply; one it could not open is named "missing": kept as -1, so
	 * no approval matches */
	int s = connect_monitor(sbdir, &e), got[MP_MAX_FDS], ng = 0;
	char *text = NULL;
	if (s < 0 || mp_send(s, "{\"op\":\"state\"}", NULL, 0) < 0 ||
	    mp_recv(s, &text, got, &ng, 30000) < 0) {
		if (s >= 0)
			close(s);
		goto fail;
	}
	close(s);
	json_t *j = json_loads(text, 0, NULL);
	free(text);
	json_t *have = json_object_get(j, "roots"), *missing = json_object_get(j, "missing");
	bool good = json_is_true(json_object_get(j, "ok")) && json_array_size(have) == (size_t)ng &&
		    n + ng + (int)json_array_size(missing) <= max;
	for (int i = 0; i < ng; i++) {
		const char *l = tree_label(json_string_value(json_array_get(have, (size_t)i)));
		if (!good || !l) {
			good = false;
			close(got[i]);
			continue;
		}
		labels[n] = l;
		fds[n++] = got[i];
	}
	for (size_t i = 0; good && i < json_array_size(missing); i++) {
		const char *l = tree_label(json_string_value(json_array_get(missing, i)));
		labels[n] = l ? l : "(unknown)";
		fds[n++] = -1;
	}
	json_decref(j);
	if (good)
		return n;
fail:
	for (int k = 0; k < n; k++)
		if (fds[k] >= 0)
			close(fds[k]);
	return -EIO;
}

static int
sess_state_roots(struct door *d, const char **labels, int *fds, int max)
{
	struct sess *q = d->p;
	return monitor_state_roots(q->w.sbdir, labels, fds, max);
}

/* The workspace as the session's commands see it (a cow session's
 * overlay, else the host directory), for the policy's path checks: the
 * monitor's "view", the descriptor its file methods work on.  One round
 * trip, paid only by a command whose policy checks a path it names. */
static int
monitor_view(int sbdir, const char *id, char *why, size_t cap)
{
	json_t *resp = NULL;
	struct wd_err e = {0};
	int fd = -1;
	int rc = session_call_fd(sbdir, "{\"op\":\"view\"}", NULL, 0, &resp, &fd, &e);
	json_decref(resp);
	struct stat st;
	if (rc == 0 && fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return fd;
	if (fd >= 0)
		close(fd);
	snprintf(why, cap, "the workspace of session %s cannot be had from its monitor: %s", id,
		 rc < 0 && e.msg[0] ? e.msg : "no directory in its reply");
	return rc < 0 ? rc : -EIO;
}

static int
sess_view(struct door *d, char *why, size_t cap)
{
	struct sess *q = d->p;
	return monitor_view(q->w.sbdir, q->w.id, why, cap);
}

static const struct placement session = {
    .name = "session",
    .prepare = sess_prepare,
    .acquire = sess_acquire,
    .exec = sess_exec,
    .release = sess_release,
    .state_roots = sess_state_roots,
    .view = sess_view,
};

/* A background command: the same stages; the result event records that
 * it started (its end is the session's, in monitor.log). */
static const struct placement detached = {
    .name = "detached",
    .prepare = sess_prepare,
    .acquire = sess_acquire,
    .exec = sess_detach,
    .release = sess_release,
    .state_roots = sess_state_roots,
    .view = sess_view,
};

WD_API int
wd_session_exec(wd_ctx *ctx, const char *ref, const wd_cmd *cmd, wd_result **out,
		struct wd_err *err)
{
	struct sess q = {.ref = ref, .w = {.sbdir = -1}, .s = -1, .rfd = -1};
	return pipeline_run(ctx, &session, &q, cmd, out, err);
}

WD_API int
wd_session_exec_detached(wd_ctx *ctx, const char *ref, const wd_cmd *cmd, unsigned *seq,
			 struct wd_err *err)
{
	struct wd_err scratch = {0};
	if (!err)
		err = &scratch;
	struct sess q = {.ref = ref, .w = {.sbdir = -1}, .s = -1, .rfd = -1};
	wd_result *refused = NULL;
	int rc = pipeline_run(ctx, &detached, &q, cmd, &refused, err);
	if (rc == 0 && refused) {
		/* denied or paused: nothing started, and the caller has no
		 * result to read it from */
		rc = wd_err_set(err, WD_E_INVAL, "refused by the policy: %s",
				wd_result_refusal(refused) ? wd_result_refusal(refused) : "denied");
	}
	wd_result_free(refused);
	if (rc == 0 && seq)
		*seq = q.seq;
	return rc;
}

/* ---- warden logs ---- */

static const char *age(long long created, char *buf, size_t cap);

/* The list as a table for people: the argv is the sandbox's choice, so
 * each word is escaped (wd_esc_text) before it reaches a terminal. */
static char *
logs_text(json_t *a)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	fprintf(f, "%-4s  %-7s  %-6s  %-7s  %s\n", "ID", "STATE", "STATUS", "STARTED", "COMMAND");
	size_t i, k;
	json_t *c, *arg;
	json_array_foreach(a, i, c)
	{
		char buf[32], st[16] = "-";
		json_t *status = json_object_get(c, "status");
		if (json_is_integer(status))
			snprintf(st, sizeof(st), "%d", (int)json_integer_value(status));
		fprintf(f, "%-4lld  %-7s  %-6s  %-7s ",
			json_integer_value(json_object_get(c, "id")),
			json_string_value(json_object_get(c, "state")), st,
			age(json_integer_value(json_object_get(c, "started")), buf, sizeof(buf)));
		json_array_foreach(json_object_get(c, "argv"), k, arg)
		{
			const char *v = json_string_value(arg);
			fputc(' ', f);
			wd_esc_text_put(f, v, strlen(v), 0, 200);
		}
		fputc('\n', f);
	}
	fclose(f);
	return text;
}

WD_API int
wd_session_logs(wd_ctx *ctx, const char *ref, bool json, char **out, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	json_t *r = NULL;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0)
		rc = session_call(w.sbdir, "{\"op\":\"logs\"}", NULL, 0, &r, NULL, NULL, err);
	if (rc == -ESRCH)
		wd_err_set(err, WD_E_INVAL,
			   "sandbox '%s' is not running: its detached commands ended with it, and "
			   "their output stays in ~/.warden/detached-N.log in its home",
			   ref);
	if (rc == 0) {
		json_t *a = json_object_get(r, "commands");
		if (json) {
			char *t = json_dumps(a, JSON_COMPACT | JSON_ENSURE_ASCII);
			*out = wd_xasprintf("%s\n", t ? t : "[]");
			free(t);
		} else {
			*out = logs_text(a);
		}
	}
	json_decref(r);
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

WD_API int
wd_session_log_read(wd_ctx *ctx, const char *ref, unsigned id, uint64_t offset, size_t max,
		    char **data, size_t *len, uint64_t *size, int *status, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	json_t *r = NULL;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0) {
		char *req = wd_xasprintf("{\"op\":\"log\",\"id\":%u,\"offset\":%llu,\"max\":%zu}",
					 id, (unsigned long long)offset, max);
		rc = session_call(w.sbdir, req, NULL, 0, &r, data, len, err);
		free(req);
	}
	if (rc == -ESRCH)
		wd_err_set(err, WD_E_INVAL,
			   "sandbox '%s' is not running: its detached commands ended with it, and "
			   "their output stays in ~/.warden/detached-N.log in its home",
			   ref);
	if (rc == 0) {
		if (size)
			*size = (uint64_t)json_integer_value(json_object_get(r, "size"));
		if (status)
			*status = json_is_true(json_object_get(r, "running"))
				      ? -1
				      : (int)json_integer_value(json_object_get(r, "status"));
	}
	json_decref(r);
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

/* ---- list, stop, start, remove ---- */

/* Whether the session's monitor answers (and its info if so). */
static bool
running(int sbdir, json_t **info)
{
	json_t *r = NULL;
	struct wd_err e = {0};
	int rc = session_call(sbdir, "{\"op\":\"info\"}", NULL, 0, &r, NULL, NULL, &e);
	if (rc == 0 && info)
		*info = r;
	else
		json_decref(r);
	return rc == 0;
}

static void
list_one(struct jw *j, int sfd, const char *id)
{
	int fd = openat(sfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	json_t *meta = NULL, *info = NULL;
	if (ws_meta_read(fd, &meta, NULL) < 0 || !json_is_true(json_object_get(meta, "session"))) {
		json_decref(meta);
		close(fd);
		return;
	}
	bool up = running(fd, &info);
	json_t *spec = json_object_get(meta, "spec");
	jw_obj_begin(j);
	jw_kstr(j, "id", id);
	jw_kstr(j, "name", json_string_value(json_object_get(meta, "name")));
	jw_kstr(j, "state", up ? "running" : "stopped");
	jw_kstr(j, "workspace", json_string_value(json_object_get(spec, "workspace")));
	jw_kstr(j, "workspace_mode", json_string_value(json_object_get(spec, "workspace_mode")));
	jw_kint(j, "created", json_integer_value(json_object_get(meta, "created")));
	if (up) {
		jw_kint(j, "pid", json_integer_value(json_object_get(info, "pid")));
		jw_kint(j, "commands", json_integer_value(json_object_get(info, "running")));
		jw_kint(j, "detached", json_integer_value(json_object_get(info, "detached")));
		jw_kint(j, "idle_ms", json_integer_value(json_object_get(info, "idle_ms")));
	}
	jw_kint(j, "idle_timeout_ms", json_integer_value(json_object_get(meta, "idle_timeout_ms")));
	struct stat st;
	jw_kuint(j, "disk_bytes_used",
		 fstatat(fd, "disk.img", &st, 0) == 0 ? (uint64_t)st.st_blocks * 512 : 0);
	jw_key(j, "snapshots");
	jw_arr_begin(j);
	int sn = openat(fd, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = sn >= 0 ? fdopendir(sn) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			jw_str(j, de->d_name);
	if (d)
		closedir(d);
	else if (sn >= 0)
		close(sn);
	jw_arr_end(j);
	jw_obj_end(j);
	json_decref(meta);
	json_decref(info);
	close(fd);
}

static const char *
age(long long created, char *buf, size_t cap)
{
	long long d = (long long)time(NULL) - created;
	if (d < 120)
		snprintf(buf, cap, "%llds", d < 0 ? 0 : d);
	else if (d < 7200)
		snprintf(buf, cap, "%lldm", d / 60);
	else if (d < 172800)
		snprintf(buf, cap, "%lldh", d / 3600);
	else
		snprintf(buf, cap, "%lldd", d / 86400);
	return buf;
}

/* The list as a table for people. */
static char *
list_text(const char *json)
{
	json_t *a = json_loads(json, 0, NULL);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	fprintf(f, "%-16s  %-16s  %-7s  %-6s  %-4s  %s\n", "ID", "NAME", "STATE", "MODE", "AGE",
		"WORKSPACE");
	size_t i;
	json_t *s;
	json_array_foreach(a, i, s)
	{
		char buf[32];
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *ws = json_string_value(json_object_get(s, "workspace"));
		const char *mode = json_string_value(json_object_get(s, "workspace_mode"));
		fprintf(f, "%-16s  %-16s  %-7s  %-6s  %-4s  %s\n",
			json_string_value(json_object_get(s, "id")), name ? name : "-",
			json_string_value(json_object_get(s, "state")), mode ? mode : "-",
			age(json_integer_value(json_object_get(s, "created")), buf, sizeof(buf)),
			ws ? ws : "-");
	}
	fclose(f);
	json_decref(a);
	return text;
}

WD_API int
wd_session_list(wd_ctx *ctx, bool json, char **out, struct wd_err *err)
{
	CTX_ENTER(ctx);
	char root[4096];
	int rc = ctx_state_root(ctx, root, sizeof(root), err);
	int sfd = rc < 0 ? rc : ws_state_sandboxes(root, err);
	if (sfd < 0) {
		CTX_LEAVE();
		return sfd;
	}
	char **ids = NULL;
	size_t n = session_dir_names(sfd, session_is_id, &ids);
	struct jw j;
	jw_init(&j, 0);
	jw_arr_begin(&j);
	for (size_t i = 0; i < n; i++) {
		list_one(&j, sfd, ids[i]);
		free(ids[i]);
	}
	free(ids);
	jw_arr_end(&j);
	jw_raw(&j, "\n", 1);
	close(sfd);
	char *list = jw_steal(&j);
	if (json) {
		*out = list;
	} else {
		*out = list_text(list);
		free(list);
	}
	CTX_LEAVE();
	return 0;
}

/* Ask the monitor to stop and wait until it is gone: its reply comes
 * once the jail and its layers are, then it exits, and its lock (held for
 * its life) is free.  A stopped session: nothing to do. */
static int
stop(int sbdir, struct wd_err *err)
{
	int rc = session_call(sbdir, "{\"op\":\"stop\"}", NULL, 0, NULL, NULL, NULL, err);
	if (rc == -ESRCH)
		return 0;
	if (rc < 0)
		return rc;
	int lk = openat(sbdir, "monitor.lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	for (int i = 0; lk >= 0 && i < 1000; i++) {
		if (flock(lk, LOCK_EX | LOCK_NB) == 0)
			break;
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (lk >= 0)
		close(lk);
	return 0;
}

WD_API int
wd_session_stop(wd_ctx *ctx, const char *ref, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0)
		rc = stop(w.sbdir, err);
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

WD_API int
wd_session_start(wd_ctx *ctx, const char *ref, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0 && running(w.sbdir, NULL)) {
		wd_err_set(err, WD_E_INVAL, "sandbox '%s' is running already", ref);
		rc = -EBUSY;
	}
	/* its secrets, read again from their sources by whoever starts it
	 * (the values were never kept): a source gone refuses the start */
	wd_spec *spec = NULL;
	if (rc == 0)
		rc = session_spec_read(w.sbdir, &spec, NULL, err);
	if (rc == 0 && ((rc = session_secrets_check(spec, err)) < 0 ||
			(rc = spec_secrets_load(spec, NULL, NULL, err)) < 0))
		wd_err_prefix(err, "cannot start '%s'", ref);
	if (rc == 0)
		rc = spawn_monitor(w.root, w.id, spec, err);
	wd_spec_free(spec);
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

int
session_secrets_check(const wd_spec *spec, struct wd_err *err)
{
	/* A session reads its secrets' files again at every start, after
	 * its sandbox has run: a file the sandbox can write (its workspace,
	 * a read-write bind) could by then be a link to any file warden can
	 * read, which the proxy would send upstream as the credential.  So
	 * such a file is refused when the session is made or changed, and
	 * checked again at each start. */
	for (size_t i = 0; i < spec->nsecret_src; i++) {
		const char *src = spec->secret_src[i].source;
		if (src[0] != '@')
			continue;
		wd_autofree char *real = realpath(src + 1, NULL);
		const char *path = real ? real : src + 1;
		for (size_t k = 0; k <= spec->nbinds; k++) {
			const char *dir = k < spec->nbinds ? spec->binds[k].src : spec->workspace;
			if (!dir || (k < spec->nbinds && !spec->binds[k].rw))
				continue;
			wd_autofree char *rdir = realpath(dir, NULL);
			size_t n = rdir ? strlen(rdir) : 0;
			if (n && !strncmp(path, rdir, n) && (path[n] == '/' || !path[n] || n == 1))
				return wd_err_set(err, WD_E_INVAL,
						  "secret %s: its file %s is in %s, which the "
						  "session's sandbox can write (keep it outside)",
						  spec->secret_src[i].name, path, rdir);
		}
	}
	return 0;
}

/* A request's hold on a session's state (wd_session_request). */
struct req_state {
	int sbdir;
	wd_spec *spec;
	char id[17];
	char where[96];
};

static int
req_state_roots(void *arg, const char **labels, int *fds, int max)
{
	struct req_state *st = arg;
	return core_state_sandbox(monitor_state_roots(st->sbdir, labels, fds, max), labels, fds,
				  max, st->where, sizeof(st->where), session.name, st->id,
				  st->spec);
}

static int
req_view(void *arg, char *why, size_t cap)
{
	struct req_state *st = arg;
	return monitor_view(st->sbdir, st->id, why, cap);
}

static void
req_state_free(void *arg)
{
	struct req_state *st = arg;
	if (st->sbdir >= 0)
		close(st->sbdir);
	wd_spec_free(st->spec);
	free(st);
}

/* warden check --session: the request `warden exec REF` judges, from
 * the session's meta.json as the exec's policy stage reads it
 * (sess_prepare), so the decision and the approval id are the exec's. */
WD_API int
wd_session_request(wd_ctx *ctx, const char *ref, wd_request *req, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	wd_spec *spec = NULL;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc < 0) {
		CTX_LEAVE();
		return rc;
	}
	rc = session_spec_read(w.sbdir, &spec, NULL, err);
	/* the workspace the gate judges against: the spec's (pipeline.c) */
	if (rc == 0 && spec->workspace &&
	    (rc = wd_request_set_workspace(req, spec->workspace, err)) < 0)
		wd_err_prefix(err, "the session's workspace");
	if (rc == 0)
		rc = wd_request_set_spec(req, spec, err);
	/* the state an approval covers, as the exec's door gives it
	 * (sess_state_roots, door_state_roots): the same id */
	if (rc == 0) {
		struct req_state *st = wd_xcalloc(1, sizeof(*st));
		st->sbdir = fcntl(w.sbdir, F_DUPFD_CLOEXEC, 3);
		st->spec = spec;
		snprintf(st->id, sizeof(st->id), "%s", w.id);
		spec = NULL;
		policy_request_state_roots(req, req_state_roots, st, req_state_free);
		/* its paths judged in the session's view, as the exec's are */
		policy_request_view_hook(req, req_view, st);
	}
	session_where_fini(&w);
	wd_spec_free(spec);
	CTX_LEAVE();
	return rc;
}

int
session_spec_read(int sbdir, wd_spec **spec, json_t **meta_out, struct wd_err *err)
{
	json_t *meta = NULL;
	int rc = ws_meta_read(sbdir, &meta, err);
	if (rc == 0)
		rc = spec_from_json(json_object_get(meta, "spec"), spec, err);
	if (rc == 0 && meta_out)
		*meta_out = json_incref(meta);
	json_decref(meta);
	return rc;
}

WD_API int
wd_session_remove(wd_ctx *ctx, const char *ref, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0)
		rc = stop(w.sbdir, err);
	if (rc == 0) {
		json_t *meta = NULL;
		const char *name = NULL;
		if (ws_meta_read(w.sbdir, &meta, NULL) == 0)
			name = json_string_value(json_object_get(meta, "name"));
		int sfd = ws_state_sandboxes(w.root, err);
		if (sfd >= 0) {
			rc = wd_rm_tree_at(sfd, w.id);
			if (rc < 0)
				wd_err_sys(err, -rc, "remove the state of sandbox %s", w.id);
			close(sfd);
		} else {
			rc = sfd;
		}
		if (rc == 0 && name)
			ws_name_release(w.root, name);
		json_decref(meta);
	}
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}
