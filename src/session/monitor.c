/* session/monitor: a session's monitor, the body of the
 * warden-monitor program (as conmon is podman's).
 *
 * One per running session, detached from whoever started it (its own
 * session and process group, stdio on /dev/null, its log in the session's
 * monitor.log).  It holds everything the session's processes depend on:
 * the sandbox (pid 1's channel), its cgroup keeper, its disk and overlay
 * (detached mounts: their last descriptors are here).  So its death, even
 * by SIGKILL, takes all of it along: pid 1 reads EOF and exits (the pid
 * namespace dies with it), the keeper reads EOF and removes the cgroup,
 * and the mounts and loop device go with their last descriptors.  Only
 * files stay: the session is then "stopped" and can be started again.
 *
 * It serves the protocol of mproto.c, one thread per connection (commands
 * run concurrently), and ends the session after idle_timeout_ms without a
 * request (a background command started with --detach does not keep it
 * alive: an idle session with a forgotten dev server is what the timeout
 * is for). */
#include "session/session.h"
#include "net/net.h"
#include "util/escape.h"
#include "util/fdpass.h"
#include "util/json.h"
#include "workspace/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

struct mon {
	char root[4096];
	char id[17];
	int dirfd; /* sandboxes/<id> */
	wd_ctx *ctx;
	wd_spec *spec;
	wd_sandbox *sb;
	int lsock;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int active;   /* requests being served, detached commands included */
	int detached; /* detached commands running */
	int execs;    /* commands running for an exec request */
	int working;  /* requests that count as use (not info) being served */
	unsigned seq; /* detached commands started */
	uint64_t last_ns;
	uint64_t idle_ns; /* 0: never */
	bool stopping;
	int wake[2]; /* the main loop's: stop now */
	FILE *log;
	/* the detached commands started, for warden logs: the last HIST_MAX,
	 * by seq % HIST_MAX (under lock) */
	struct hist {
		unsigned seq; /* 0: free */
		char **argv;
		long long started;
		bool done;
		int status;
	} hist[64];
};

#define HIST_MAX (sizeof(M.hist) / sizeof(M.hist[0]))

static struct mon M;

static void
mon_log(int level, const char *func, const char *msg, void *data)
{
	(void)data;
	(void)func;
	if (!M.log)
		return;
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	fprintf(M.log, "%04d-%02d-%02dT%02d:%02d:%02dZ %s: ", tm.tm_year + 1900, tm.tm_mon + 1,
		tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, wd_log_level_name(level));
	/* A message can carry bytes a model chose (a detached command's
	 * error, a file name in an apply error), and a human reads this file
	 * with cat or less: control bytes, bidi characters and newlines are
	 * shown escaped, so a name can neither drive the terminal nor forge
	 * a line of its own. */
	wd_esc_text_put(M.log, msg, strlen(msg), 0, 0);
	fputc('\n', M.log);
	fflush(M.log);
}

/* ---- replies ---- */

static void
reply_error(int conn, int code, const char *msg)
{
	struct jw w;
	jw_init(&w, 0);
	jw_obj_begin(&w);
	jw_kbool(&w, "ok", false);
	jw_kint(&w, "code", code);
	jw_kstr(&w, "error", msg);
	jw_obj_end(&w);
	char *s = jw_steal(&w);
	mp_send(conn, s, NULL, 0);
	free(s);
}

static void
reply_err(int conn, int rc, const struct wd_err *e)
{
	reply_error(conn, rc < 0 ? -rc : EIO, e->msg[0] ? e->msg : strerror(rc < 0 ? -rc : EIO));
}

/* {"ok":true, ...members} (members: JSON text without braces, or NULL)
 * with a memfd of data if data is not NULL. */
static void
reply_ok(int conn, const char *members, const char *data, size_t len)
{
	char *s = wd_xasprintf("{\"ok\":true%s%s}", members ? "," : "", members ? members : "");
	int fd = data ? mp_memfd("warden-reply", data, len) : -1;
	mp_send(conn, s, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
	if (fd >= 0)
		close(fd);
	free(s);
}

/* ---- requests ---- */

static char **
strv(json_t *a)
{
	if (!json_is_array(a))
		return NULL;
	char **v = wd_xcalloc(json_array_size(a) + 1, sizeof(char *));
	for (size_t i = 0; i < json_array_size(a); i++) {
		const char *s = json_string_value(json_array_get(a, i));
		v[i] = wd_xstrdup(s ? s : "");
	}
	return v;
}

static void
strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static uint64_t
ju(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
							       : 0;
}

/* Build the command of an exec or detach request.  fds: stdin, stdout,
 * stderr as the request's flags say which came. */
static int
exec_req_of(json_t *q, char ***argv, char ***env, struct exec_req *x, struct wd_err *err)
{
	*argv = strv(json_object_get(q, "argv"));
	*env = strv(json_object_get(q, "env"));
	if (!*argv || !(*argv)[0] || !(*argv)[0][0])
		return wd_err_set(err, WD_E_INVAL, "no program given");
	memset(x, 0, sizeof(*x));
	x->argv = (const char *const *)*argv;
	x->env = *env && (*env)[0] ? (const char *const *)*env : NULL;
	x->cwd = json_string_value(json_object_get(q, "cwd"));
	x->timeout_ms = ju(q, "timeout_ms");
	x->output_limit = ju(q, "output_limit");
	x->stdin_fd = -1;
	x->stream_fd[0] = x->stream_fd[1] = x->stream_fd[2] = -1;
	x->log_fd = -1;
	x->cancel_fd = -1;
	x->cmd_cancel_fd = -1;
	return 0;
}

static void
do_exec(int conn, json_t *q, int *fds, int nfds)
{
	struct wd_err e = {0};
	char **argv = NULL, **env = NULL;
	struct exec_req x;
	int rc = exec_req_of(q, &argv, &env, &x, &e);
	/* the client's stdio, in order, as far as it sent them */
	int k = 0;
	if (json_is_true(json_object_get(q, "stdin")) && k < nfds)
		x.stdin_fd = fds[k++];
	if (json_is_true(json_object_get(q, "stdout")) && k < nfds)
		x.stream_fd[1] = fds[k++];
	if (json_is_true(json_object_get(q, "stderr")) && k < nfds)
		x.stream_fd[2] = fds[k++];
	/* a cancellation: the client's record, or its end (readable
	 * either way); the signal is read after */
	atomic_int sig;
	atomic_init(&sig, 0);
	x.cancel_fd = conn;
	x.cancel_sig = &sig;
	wd_result *r = NULL;
	if (rc == 0)
		rc = gate_require((unsigned)ju(q, "require"), M.sb->sb, &e);
	if (rc == 0) {
		pthread_mutex_lock(&M.lock);
		M.execs++;
		pthread_mutex_unlock(&M.lock);
		rc = sandbox_exec(M.sb->sb, &x, &r, &e);
		pthread_mutex_lock(&M.lock);
		M.execs--;
		pthread_mutex_unlock(&M.lock);
	}
	if (rc < 0) {
		reply_err(conn, rc, &e);
	} else {
		/* a cancel record says which signal the client wanted */
		char *c = NULL;
		int cf[MP_MAX_FDS], cn = 0;
		if (mp_recv(conn, &c, cf, &cn, 0) == 0) {
			json_t *cj = json_loads(c, 0, NULL);
			int s = (int)json_integer_value(json_object_get(cj, "signal"));
			if (s > 0 && s < 65 && r->signal == SIGKILL && !r->timed_out) {
				r->signal = s;
				r->status = 128 + s;
			}
			json_decref(cj);
			for (int i = 0; i < cn; i++)
				close(cf[i]);
		}
		free(c);
		struct jw w;
		jw_init(&w, 0);
		result_wire_write(&w, r);
		char *obj = jw_steal(&w);
		char *members = wd_xasprintf("\"result\":%s", obj);
		free(obj);
		/* the windows, out then err, raw */
		size_t l1 = r->out_len[1], l2 = r->out_len[2];
		char *data = wd_xmalloc(l1 + l2 + 1);
		if (l1)
			memcpy(data, r->out[1], l1);
		if (l2)
			memcpy(data + l1, r->out[2], l2);
		reply_ok(conn, members, data, l1 + l2);
		free(data);
		free(members);
		wd_result_free(r);
	}
	strv_free(argv);
	strv_free(env);
}

/* ---- detached commands ---- */

struct detached {
	char **argv, **env;
	struct exec_req x;
	unsigned seq;
	unsigned hseq; /* seq, kept when the request gives up waiting */
	bool done;
	int status;
};

static char **
strv_dup(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **c = wd_xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		c[i] = wd_xstrdup(v[i]);
	return c;
}

/* Record detached command seq's start (lock held). */
static void
hist_start(unsigned seq, char *const *argv)
{
	struct hist *h = &M.hist[seq % HIST_MAX];
	strv_free(h->argv);
	h->seq = seq;
	h->argv = strv_dup(argv);
	h->started = (long long)time(NULL);
	h->done = false;
	h->status = 0;
}

/* Its end (lock held); the slot may hold a newer command by now. */
static void
hist_end(unsigned seq, int status)
{
	struct hist *h = &M.hist[seq % HIST_MAX];
	if (h->seq != seq)
		return;
	h->done = true;
	h->status = status;
}

static void
detached_free(struct detached *d)
{
	strv_free(d->argv);
	strv_free(d->env);
	if (d->x.log_fd >= 0)
		close(d->x.log_fd);
	free(d);
}

static void *
detached_thread(void *arg)
{
	struct detached *d = arg;
	struct wd_err e = {0};
	wd_result *r = NULL;
	CTX_ENTER(M.ctx);
	int rc = sandbox_exec(M.sb->sb, &d->x, &r, &e);
	/* the program as the caller (a model) named it: mon_log escapes it */
	const char *prog = d->argv && d->argv[0] ? d->argv[0] : "?";
	if (rc < 0)
		wd_log(WD_LOG_WARN, "detached command %u (%.200s): %s", d->seq, prog, e.msg);
	else
		wd_log(WD_LOG_INFO, "detached command %u (%.200s) ended: status %d", d->seq, prog,
		       wd_result_status(r));
	CTX_LEAVE();
	pthread_mutex_lock(&M.lock);
	d->done = true;
	d->status = rc < 0 ? 127 : wd_result_status(r);
	hist_end(d->hseq, d->status);
	M.detached--;
	M.active--;
	pthread_cond_broadcast(&M.cond);
	bool owner_gone = d->seq == 0; /* the request gave up waiting: ours to free */
	pthread_mutex_unlock(&M.lock);
	wd_result_free(r);
	if (owner_gone)
		detached_free(d);
	return NULL;
}

/* The command's stdout and stderr: ~/.warden/detached-N.log on the
 * session's disk (bounded by --disk, readable in the sandbox), else
 * /dev/null. */
static int
detached_log(unsigned seq)
{
	struct ws *w = M.sb->box ? M.sb->box->ws : NULL;
	if (!w || w->disk < 0)
		return open("/dev/null", O_WRONLY | O_CLOEXEC);
	wd_autoclose int home = ws_open_beneath(w->disk, "home", O_RDONLY | O_DIRECTORY);
	if (home < 0)
		return -1;
	if (mkdirat(home, ".warden", 0755) == 0)
		(void)!fchownat(home, ".warden", w->uid, w->gid, AT_SYMLINK_NOFOLLOW);
	wd_autoclose int dir = ws_open_beneath(home, ".warden", O_RDONLY | O_DIRECTORY);
	if (dir < 0)
		return -1;
	char name[48];
	snprintf(name, sizeof(name), "detached-%u.log", seq);
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
			0644);
	if (fd >= 0)
		(void)!fchown(fd, w->uid, w->gid);
	return fd;
}

/* 1 s, times the load per CPU above 1, at most 5 s. */
static uint64_t
detach_grace_ns(void)
{
	double load[1] = {0};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double f = 1.0;
	if (getloadavg(load, 1) == 1 && ncpu > 0 && load[0] / (double)ncpu > 1.0)
		f = load[0] / (double)ncpu;
	if (f > 5.0)
		f = 5.0;
	return (uint64_t)(f * 1e9);
}

static void
do_detach(int conn, json_t *q)
{
	struct wd_err e = {0};
	struct detached *d = wd_xcalloc(1, sizeof(*d));
	int rc = exec_req_of(q, &d->argv, &d->env, &d->x, &e);
	/* the policy's sandbox.require holds for a background command too */
	if (rc == 0)
		rc = gate_require((unsigned)ju(q, "require"), M.sb->sb, &e);
	if (rc < 0) {
		reply_err(conn, rc, &e);
		detached_free(d);
		return;
	}
	pthread_mutex_lock(&M.lock);
	d->seq = d->hseq = ++M.seq;
	hist_start(d->seq, d->argv);
	pthread_mutex_unlock(&M.lock);
	d->x.flags = SYNC_EXEC_DETACH;
	/* until the session ends: 20 days is the most one epoll wait can say */
	d->x.timeout_ms = 20ULL * 86400 * 1000;
	d->x.log_fd = detached_log(d->seq);
	pthread_t t;
	pthread_mutex_lock(&M.lock);
	M.detached++;
	M.active++;
	pthread_mutex_unlock(&M.lock);
	if (pthread_create(&t, NULL, detached_thread, d) != 0) {
		pthread_mutex_lock(&M.lock);
		M.detached--;
		M.active--;
		pthread_mutex_unlock(&M.lock);
		reply_error(conn, EAGAIN, "cannot start a thread for the detached command");
		detached_free(d);
		return;
	}
	pthread_detach(t);
	/* A grace period for a command that fails right after start-up (not
	 * found; a server that cannot bind its port) to say so to exec
	 * --detach: the wait ends at its exit, the event, or at the deadline,
	 * which grows with the host's load so that a slow start on a busy
	 * host is still seen. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	uint64_t grace_ns = detach_grace_ns();
	until.tv_sec += (time_t)(grace_ns / 1000000000ULL);
	until.tv_nsec += (long)(grace_ns % 1000000000ULL);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&M.lock);
	while (!d->done && pthread_cond_timedwait(&M.cond, &M.lock, &until) == 0)
		;
	bool done = d->done;
	int status = d->status;
	unsigned seq = d->seq;
	if (!done)
		d->seq = 0; /* the thread frees it */
	pthread_mutex_unlock(&M.lock);
	char *m = done ? wd_xasprintf("\"seq\":%u,\"running\":false,\"status\":%d", seq, status)
		       : wd_xasprintf("\"seq\":%u,\"running\":true", seq);
	reply_ok(conn, m, NULL, 0);
	free(m);
	if (done)
		detached_free(d);
}

/* ---- warden logs ---- */

static void
do_logs(int conn)
{
	struct jw w;
	jw_init(&w, 0);
	jw_key(&w, "commands");
	jw_arr_begin(&w);
	pthread_mutex_lock(&M.lock);
	unsigned first = M.seq > HIST_MAX ? M.seq - (unsigned)HIST_MAX + 1 : 1;
	for (unsigned seq = first; seq <= M.seq; seq++) {
		const struct hist *h = &M.hist[seq % HIST_MAX];
		if (h->seq != seq)
			continue;
		jw_obj_begin(&w);
		jw_kuint(&w, "id", seq);
		jw_key(&w, "argv");
		jw_arr_begin(&w);
		for (size_t i = 0; h->argv && h->argv[i]; i++)
			jw_str(&w, h->argv[i]);
		jw_arr_end(&w);
		jw_kint(&w, "started", h->started);
		jw_kstr(&w, "state", h->done ? "exited" : "running");
		if (h->done)
			jw_kint(&w, "status", h->status);
		else
			jw_kstr(&w, "status", NULL);
		jw_obj_end(&w);
	}
	pthread_mutex_unlock(&M.lock);
	jw_arr_end(&w);
	char *m = jw_steal(&w);
	reply_ok(conn, m, NULL, 0);
	free(m);
}

/* Bytes [offset, offset + max) of detached command seq's log, with its
 * size and state.  The log is on the session's disk, in a directory the
 * sandbox writes: opened beneath the disk's root, never through a link
 * (a model's symlink to a host file is refused, not followed), and read
 * only if it is a regular file (a FIFO would hang the reader). */
static void
do_log(int conn, json_t *q)
{
	unsigned seq = (unsigned)ju(q, "id");
	uint64_t off = ju(q, "offset"), max = ju(q, "max");
	if (max > (1u << 20))
		max = 1u << 20;
	pthread_mutex_lock(&M.lock);
	const struct hist *h = seq ? &M.hist[seq % HIST_MAX] : NULL;
	bool known = h && h->seq == seq;
	bool done = known && h->done;
	int status = known ? h->status : 0;
	pthread_mutex_unlock(&M.lock);
	if (!known) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "no detached command %u in this session (warden logs SESSION lists them)",
			 seq);
		reply_error(conn, EINVAL, msg);
		return;
	}
	struct ws *w = M.sb->box ? M.sb->box->ws : NULL;
	if (!w || w->disk < 0) {
		reply_error(conn, EINVAL,
			    "this session keeps no output of its detached commands (it has no "
			    "disk: a direct workspace at namespace level)");
		return;
	}
	char name[64];
	snprintf(name, sizeof(name), "home/.warden/detached-%u.log", seq);
	int fd = ws_open_beneath(w->disk, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		char msg[200];
		snprintf(msg, sizeof(msg),
			 "the log of detached command %u (~/.warden/detached-%u.log) is %s", seq,
			 seq,
			 fd == -ENOENT ? "gone (removed in the sandbox)"
			 : fd < 0      ? "not a file warden reads (a link or unreadable)"
				       : "not a regular file");
		if (fd >= 0)
			close(fd);
		reply_error(conn, EINVAL, msg);
		return;
	}
	uint64_t size = (uint64_t)st.st_size;
	size_t n = off < size ? (size_t)(size - off < max ? size - off : max) : 0;
	char *data = wd_xmalloc(n + 1);
	ssize_t got = n ? pread(fd, data, n, (off_t)off) : 0;
	close(fd);
	if (got < 0)
		got = 0;
	char *m = done ? wd_xasprintf("\"size\":%llu,\"running\":false,\"status\":%d",
				      (unsigned long long)size, status)
		       : wd_xasprintf("\"size\":%llu,\"running\":true", (unsigned long long)size);
	reply_ok(conn, m, data, (size_t)got);
	free(m);
	free(data);
}

/* ---- warden cp: the session's workspace as the file tools see it ----
 *
 * Every path goes through the sandbox's view (wd_sandbox_workspace: for
 * cow its overlay, so a copy in lands in the upper layer and shows in the
 * diff, a copy out reads the merged tree): openat2 beneath the workspace
 * (a ".." or a link that leaves it is refused), the protected paths
 * read-only, writes by rename so that a link the sandbox planted is
 * replaced, never written through (src/files/files.c). */

#define CP_FILE_MAX (256ULL << 20)

static wd_workspace *
cp_view(int conn)
{
	wd_workspace *v = NULL;
	struct wd_err e = {0};
	int rc = wd_sandbox_workspace(M.sb, &v, &e);
	if (rc < 0) {
		reply_err(conn, rc, &e);
		return NULL;
	}
	return v;
}

static const char *
type_of(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "link" : "other";
}

/* {"op":"put","path":P,"mode":M} with the host file's fd (the client
 * opened it, no link followed): its bytes, at most CP_FILE_MAX, become
 * P; {"op":"mkdir","path":P}. */
static void
do_put(int conn, json_t *q, int *fds, int nfds)
{
	struct wd_err e = {0};
	const char *path = json_string_value(json_object_get(q, "path"));
	const char *op = json_string_value(json_object_get(q, "op"));
	bool mkdir = !strcmp(op, "mkdir");
	int rc = 0;
	char *data = NULL;
	size_t len = 0;
	struct stat st;
	if (!path)
		rc = wd_err_set(&e, WD_E_INVAL, "no path");
	else if (!mkdir && (nfds < 1 || fstat(fds[0], &st) < 0 || !S_ISREG(st.st_mode)))
		rc = wd_err_set(&e, WD_E_INVAL, "'%s': no regular file sent", path);
	else if (!mkdir && (uint64_t)st.st_size > CP_FILE_MAX)
		rc = wd_err_set(&e, WD_E_INVAL, "'%s': larger than 256 MiB", path);
	if (rc == 0 && !mkdir) {
		data = wd_xmalloc((size_t)st.st_size + 1);
		while (len < (size_t)st.st_size) {
			ssize_t r = pread(fds[0], data + len, (size_t)st.st_size - len, (off_t)len);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			len += (size_t)r;
		}
	}
	wd_workspace *v = rc == 0 ? cp_view(conn) : NULL;
	if (rc == 0 && !v) {
		free(data);
		return;
	}
	if (rc == 0)
		rc = mkdir ? ws_files_mkdir(v, path, &e)
			   : ws_files_write_mode(
				 v, path, data, len, WD_WRITE_MKDIRS,
				 (mode_t)json_integer_value(json_object_get(q, "mode")), &e);
	if (v)
		wd_workspace_close(v);
	free(data);
	if (rc < 0)
		reply_err(conn, rc, &e);
	else
		reply_ok(conn, NULL, NULL, 0);
}

/* {"op":"view"}: the workspace view the file methods work on (a cow
 * session's overlay mount), for the server's file tools on a session
 * (wd_session_workspace): its directory descriptor (O_PATH), the host
 * path it stands for and its protected list.  Only the session's owner
 * reaches this socket (peer-checked: no sandboxed process), and the view
 * is what warden cp and the diff already work on for that owner. */
static void
do_view(int conn)
{
	wd_workspace *v = cp_view(conn);
	if (!v)
		return;
	const char *real = NULL;
	const char *const *protect = NULL;
	size_t n = 0;
	int fd = ws_files_parts(v, &real, &protect, &n);
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(protect[i]));
	json_t *r = json_pack("{s:b, s:s, s:o}", "ok", 1, "path", real, "protect", a);
	char *t = r ? json_dumps(r, JSON_COMPACT) : NULL;
	if (t)
		mp_send(conn, t, &fd, 1);
	else
		reply_error(conn, ENOMEM, "view");
	free(t);
	json_decref(r);
	wd_workspace_close(v);
}

/* {"op":"state"}: the session's own trees that outlive a command and
 * that a paused command's approval covers besides the workspace view
 * (its state print, walked by the caller; the view is "view"'s): at the
 * container level its home, /tmp and /dev/shm as its processes see them
 * (core_own_trees: its disk's, or its own tmpfs), else home and /tmp on
 * its disk or in an ordinary user's layers.  The labels in the reply,
 * the descriptors (O_PATH) with it; one that could not be opened is
 * named in "missing" (then no approval can match).  Peer-checked as
 * every request: only the owner, never a sandboxed process. */
static void
do_state(int conn)
{
	const char *labels[MP_MAX_FDS];
	int fds[MP_MAX_FDS], n = core_own_trees(M.sb->sb, labels, fds, MP_MAX_FDS);
	struct ws *w = M.sb->box ? M.sb->box->ws : NULL;
	static const char *const disk[] = {"home", "tmp"};
	for (size_t i = 0; n == 0 && w && w->disk >= 0 && i < WD_ARRAY_SIZE(disk); i++) {
		labels[i] = disk[i];
		fds[i] = ws_open_beneath(w->disk, disk[i], O_PATH | O_DIRECTORY);
	}
	if (n == 0 && w && w->disk >= 0)
		n = (int)WD_ARRAY_SIZE(disk);
	json_t *have = json_array(), *missing = json_array();
	int send[MP_MAX_FDS], ns = 0;
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0) {
			json_array_append_new(have, json_string(labels[i]));
			send[ns++] = fds[i];
		} else {
			json_array_append_new(missing, json_string(labels[i]));
		}
	}
	json_t *r = json_pack("{s:b, s:o, s:o}", "ok", 1, "roots", have, "missing", missing);
	char *t = r ? json_dumps(r, JSON_COMPACT) : NULL;
	if (t)
		mp_send(conn, t, send, ns);
	else
		reply_error(conn, ENOMEM, "state");
	free(t);
	json_decref(r);
	for (int i = 0; i < ns; i++)
		close(send[i]);
}

/* {"op":"get","path":P,"stat":bool}: P's type, size and mode; a regular
 * file's fd (opened O_NOFOLLOW | O_NONBLOCK: a FIFO never blocks the
 * monitor, and is no regular file) unless stat; a directory's entries
 * (name, type, size, mode; lstat: a link is named, never followed). */
static void
do_get(int conn, json_t *q)
{
	struct wd_err e = {0};
	const char *path = json_string_value(json_object_get(q, "path"));
	bool stat_only = json_is_true(json_object_get(q, "stat"));
	if (!path) {
		reply_error(conn, EINVAL, "no path");
		return;
	}
	wd_workspace *v = cp_view(conn);
	if (!v)
		return;
	int fd = wd_workspace_openat(v, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, &e);
	struct stat st;
	if (fd == -ELOOP) {
		/* the last component is a link (or a magic link): named */
		wd_workspace_close(v);
		reply_ok(conn, "\"type\":\"link\"", NULL, 0);
		return;
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		int rc = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		wd_workspace_close(v);
		if (rc == -ENOENT && stat_only)
			reply_ok(conn, "\"type\":null", NULL, 0);
		else
			reply_err(conn, rc, &e);
		return;
	}
	wd_workspace_close(v);
	struct jw w;
	jw_init(&w, 0);
	w.first = true;
	jw_kstr(&w, "type", type_of(st.st_mode));
	jw_kuint(&w, "size", (uint64_t)st.st_size);
	jw_kuint(&w, "mode", st.st_mode & 07777);
	if (S_ISDIR(st.st_mode) && !stat_only) {
		jw_key(&w, "entries");
		jw_arr_begin(&w);
		DIR *d = fdopendir(fd);
		struct dirent *de;
		size_t n = 0;
		while (d && (de = readdir(d)) && n < 100001) {
			struct stat es;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (fstatat(dirfd(d), de->d_name, &es, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			jw_obj_begin(&w);
			jw_kstr(&w, "name", de->d_name);
			jw_kstr(&w, "type", type_of(es.st_mode));
			jw_kuint(&w, "size", (uint64_t)es.st_size);
			jw_kuint(&w, "mode", es.st_mode & 07777);
			jw_obj_end(&w);
			n++;
		}
		if (d)
			closedir(d);
		else
			close(fd);
		fd = -1;
		jw_arr_end(&w);
	}
	char *m = jw_steal(&w);
	if (S_ISREG(st.st_mode) && !stat_only) {
		char *r = wd_xasprintf("{\"ok\":true,%s}", m);
		mp_send(conn, r, &fd, 1);
		free(r);
	} else {
		reply_ok(conn, m, NULL, 0);
	}
	free(m);
	if (fd >= 0)
		close(fd);
}

/* ---- the rest ---- */

static const char **
paths_of(json_t *q, size_t *n)
{
	json_t *a = json_object_get(q, "paths");
	*n = json_is_array(a) ? json_array_size(a) : 0;
	const char **p = wd_xcalloc(*n + 1, sizeof(char *));
	for (size_t i = 0; i < *n; i++)
		p[i] = json_string_value(json_array_get(a, i));
	for (size_t i = 0; i < *n; i++)
		if (!p[i])
			p[i] = "";
	return p;
}

/* Whether the session's change set holds still while it is written
 * (apply) or copied (snapshot): its processes are frozen for the review,
 * or none runs.  An ordinary user on a cgroup-v1 host runs with
 * --best-effort and no cgroup, so nothing can freeze them; a command
 * still running could then rewrite a file between the --expect check and
 * its copy, and what is applied would not be what was reviewed.  So that
 * case is refused (fail closed) rather than applied unfrozen. */
static int
review_held(const char *what, struct wd_err *e)
{
	if (!M.sb->sb || atomic_load(&M.sb->sb->review_frozen))
		return 0;
	/* Why: a cgroup and still not frozen is a freeze that failed (a
	 * sandbox whose processes keep continuing each other defeats a stop
	 * by signal, cgroup_freeze), and a process left by an ended command
	 * is not counted below: refused whatever runs */
	if (M.sb->sb->cg)
		return wd_err_set(e, WD_E_UNSUPPORTED,
				  "%s refused: the session's processes could not be frozen, so "
				  "the files could change while they are %s; stop the session "
				  "(warden stop), then %s again",
				  what, !strcmp(what, "apply") ? "written" : "copied", what);
	pthread_mutex_lock(&M.lock);
	int others = M.execs + M.detached;
	pthread_mutex_unlock(&M.lock);
	if (others <= 0)
		return 0;
	wd_err_set(e, WD_E_UNSUPPORTED,
		   "%s refused: %d command%s of the session still run%s and cannot be frozen "
		   "here (no cgroup to freeze them in: an ordinary user with --best-effort), "
		   "so the files could change while they are %s; wait for %s to end or "
		   "stop the session (warden stop), then %s again",
		   what, others, others == 1 ? "" : "s", others == 1 ? "s" : "",
		   !strcmp(what, "apply") ? "written" : "copied", others == 1 ? "it" : "them",
		   what);
	return -EBUSY;
}

static void
do_changes(int conn, const char *op, json_t *q)
{
	struct wd_err e = {0};
	size_t np;
	const char **paths = paths_of(q, &np);
	char *out = NULL;
	int rc;
	if (!M.sb->box || !M.sb->box->cow) {
		rc = wd_err_set(&e, WD_E_INVAL,
				"sandbox %s has a direct workspace: what it wrote is on the host "
				"already",
				M.id);
	} else if (!strcmp(op, "diff")) {
		/* frozen until the apply, discard or command that follows */
		sandbox_review(M.sb->sb, true);
		rc = box_diff(M.sb->box, paths, np, (unsigned)ju(q, "flags"), &out, &e);
		if (rc == 0)
			reply_ok(conn, NULL, out, strlen(out));
	} else if (!strcmp(op, "apply")) {
		sandbox_review(M.sb->sb, true);
		rc = review_held("apply", &e);
		if (rc == 0)
			rc = box_apply(M.sb->box, paths, np,
				       json_string_value(json_object_get(q, "expect")),
				       (unsigned)ju(q, "flags"), &out, &e);
		sandbox_review(M.sb->sb, false);
		if (rc >= 0) {
			char *m = wd_xasprintf("\"status\":%d", rc);
			reply_ok(conn, m, out ? out : "", out ? strlen(out) : 0);
			free(m);
		}
	} else {
		rc = box_discard(M.sb->box, paths, np, true, &e);
		sandbox_review(M.sb->sb, false);
		if (rc >= 0) {
			char *m = wd_xasprintf("\"dropped\":%d", rc);
			reply_ok(conn, m, NULL, 0);
			free(m);
		}
	}
	if (rc < 0)
		reply_err(conn, rc, &e);
	free(out);
	free(paths);
}

static void
do_info(int conn)
{
	pthread_mutex_lock(&M.lock);
	uint64_t idle = (wd_now_ns() - M.last_ns) / 1000000;
	char *m = wd_xasprintf("\"id\":\"%s\",\"pid\":%d,\"running\":%d,\"detached\":%d,"
			       "\"idle_ms\":%llu,\"idle_timeout_ms\":%llu",
			       M.id, (int)getpid(), M.active - M.detached - 1, M.detached,
			       (unsigned long long)idle, (unsigned long long)(M.idle_ns / 1000000));
	pthread_mutex_unlock(&M.lock);
	reply_ok(conn, m, NULL, 0);
	free(m);
}

static void
do_snapshot(int conn, json_t *q)
{
	struct wd_err e = {0};
	const char *tag = json_string_value(json_object_get(q, "tag"));
	struct ws *w = M.sb->box ? M.sb->box->ws : NULL;
	/* an ordinary user's layers are no file system to freeze: the
	 * session's processes are (or none may run) */
	int disk = w && !w->user_layers ? w->disk : -1;
	int rc = tag ? 0 : wd_err_set(&e, WD_E_INVAL, "no tag");
	if (rc == 0 && w && w->user_layers) {
		sandbox_review(M.sb->sb, true);
		rc = review_held("snapshot", &e);
	}
	if (rc == 0)
		rc = session_snapshot_copy(M.dirfd, tag, disk, &e);
	if (w && w->user_layers)
		sandbox_review(M.sb->sb, false);
	if (rc < 0)
		reply_err(conn, rc, &e);
	else
		reply_ok(conn, NULL, NULL, 0);
}

/* {"op":"update","limits":{"memory":N,"pids":N,"cpu":N},"net_rules":[
 * {"kind":K,"rule":R},...]}: warden update of the running session (its
 * caller checked everything and writes meta.json once this answers).  The
 * limits go to the cgroup in place; net_rules, when present, is the whole
 * new rule set for the proxy.  Replies which were applied now. */
static void
do_update(int conn, json_t *q)
{
	struct wd_err e = {0};
	json_t *lim = json_object_get(q, "limits"), *rules = json_object_get(q, "net_rules");
	struct wd_limits l = {.memory_bytes = ju(lim, "memory"),
			      .pids = ju(lim, "pids"),
			      .cpu_millionths = ju(lim, "cpu")};
	wd_spec *tmp = NULL;
	struct net_rules *set = NULL;
	int rc = 0;
	if (json_is_array(rules)) {
		/* parsed again here, as every rule is where it is used */
		tmp = wd_spec_new();
		size_t i;
		json_t *v;
		json_array_foreach(rules, i, v)
		{
			const char *r = json_string_value(json_object_get(v, "rule"));
			if (!r) {
				rc = wd_err_set(&e, WD_E_INVAL, "bad request");
				break;
			}
			if ((rc = wd_spec_add_net_rule(
				 tmp,
				 (enum wd_net_rule)json_integer_value(json_object_get(v, "kind")),
				 r, &e)) < 0)
				break;
		}
		if (rc == 0 && !tmp->net_rules && net_rules_new(&tmp->net_rules) < 0)
			rc = wd_err_set(&e, WD_E_INTERNAL, "out of memory");
		set = tmp->net_rules;
	}
	unsigned applied = 0;
	if (rc == 0)
		rc = sandbox_update(M.sb->sb, &l, set, &applied, &e);
	if (rc == 0 && (applied & SANDBOX_UPDATED_RULES))
		tmp->net_rules = NULL; /* the proxy's now */
	wd_spec_free(tmp);
	if (rc < 0) {
		reply_err(conn, rc, &e);
		return;
	}
	wd_log(WD_LOG_INFO, "updated:%s%s", applied & SANDBOX_UPDATED_LIMITS ? " limits" : "",
	       applied & SANDBOX_UPDATED_RULES ? " network rules" : "");
	char *m = wd_xasprintf("\"limits\":%s,\"rules\":%s",
			       applied & SANDBOX_UPDATED_LIMITS ? "true" : "false",
			       applied & SANDBOX_UPDATED_RULES ? "true" : "false");
	reply_ok(conn, m, NULL, 0);
	free(m);
}

/* Record the session's state in meta.json (running, stopped). */
static void
set_state(const char *state)
{
	json_t *meta = NULL;
	/* warden update rewrites meta.json too: one writer at a time */
	wd_autoclose int lk = openat(M.dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lk >= 0)
		flock(lk, LOCK_EX);
	if (ws_meta_read(M.dirfd, &meta, NULL) < 0)
		return;
	json_object_set_new(meta, "state", json_string(state));
	if (!strcmp(state, "running")) {
		json_object_set_new(meta, "monitor_pid", json_integer(getpid()));
		json_object_set_new(meta, "started", json_integer((json_int_t)time(NULL)));
	} else {
		json_object_del(meta, "monitor_pid");
		json_object_set_new(meta, "stopped", json_integer((json_int_t)time(NULL)));
	}
	ws_meta_write(M.dirfd, meta, NULL);
	json_decref(meta);
}

/* End the session: every command (they reply with their results), the
 * sandbox, its layers; then the record says stopped.  Called once. */
static void
teardown(const char *why, int self)
{
	wd_log(WD_LOG_INFO, "stopping: %s", why);
	pthread_mutex_lock(&M.lock);
	M.stopping = true;
	pthread_mutex_unlock(&M.lock);
	wd_sandbox_cancel(M.sb, SIGKILL);
	/* wait for the other requests and the detached commands */
	pthread_mutex_lock(&M.lock);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	while (M.active > self && pthread_cond_timedwait(&M.cond, &M.lock, &until) == 0)
		;
	pthread_mutex_unlock(&M.lock);
	wd_sandbox_destroy(M.sb);
	M.sb = NULL;
	unlinkat(M.dirfd, "monitor.sock", 0);
	set_state("stopped");
}

struct conn_arg {
	int fd;
};

/* m, if it is a string holding a NUL (an escaped byte, below), as a
 * string of its bytes in *out: 1; 0 if it is not one; -1 if it holds a NUL
 * that is no such escape. */
static int
string_bytes(json_t *m, json_t **out)
{
	if (!json_is_string(m) || !memchr(json_string_value(m), 0, json_string_length(m)))
		return 0;
	char *b = jw_nul_undo(json_string_value(m), json_string_length(m), true);
	if (!b)
		return -1;
	*out = json_stringn_nocheck(b, strlen(b));
	free(b);
	return 1;
}

/* Every string of v made its bytes again; false if one cannot be. */
static bool
bytes_again(json_t *v)
{
	const char *k;
	json_t *m, *b;
	size_t i;
	int rc;
	if (json_is_object(v)) {
		json_object_foreach(v, k, m)
		{
			if ((rc = string_bytes(m, &b)) < 0 || (rc == 0 && !bytes_again(m)))
				return false;
			if (rc > 0)
				json_object_set_new(v, k, b);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			if ((rc = string_bytes(m, &b)) < 0 || (rc == 0 && !bytes_again(m)))
				return false;
			if (rc > 0)
				json_array_set_new(v, i, b);
		}
	}
	return true;
}

/* A request as the client wrote it (util/json.h's writer): a byte of an
 * argument, a variable or a path that is not UTF-8 is the escape
 * "\udcXX", which jansson refuses alone (`warden exec s -- cat $'\xff'`
 * failed as "bad request").  Read as a NUL and two hex digits
 * (jw_surrogates_to_nul), then each such string made its bytes again:
 * jansson keeps a string made with _nocheck as it is.  NULL if it is not
 * JSON, or holds a "\u0000" of its own. */
static json_t *
load_request(const char *text)
{
	size_t n = 0;
	wd_autofree char *t = jw_surrogates_to_nul(text, strlen(text), &n);
	json_t *q = json_loadb(t, n, JSON_ALLOW_NUL, NULL);
	if (q && !bytes_again(q)) {
		json_decref(q);
		q = NULL;
	}
	return q;
}

static void *
conn_thread(void *arg)
{
	struct conn_arg *ca = arg;
	int conn = ca->fd;
	free(ca);
	CTX_ENTER(M.ctx);
	char *text = NULL;
	int fds[MP_MAX_FDS], nfds = 0;
	json_t *q = NULL;
	bool activity = false;
	if (mp_recv(conn, &text, fds, &nfds, 5000) < 0)
		goto out;
	q = load_request(text);
	const char *op = json_string_value(json_object_get(q, "op"));
	/* what keeps a session from its idle timeout: anything but a look at
	 * it (warden ls asks every running session for its info; warden logs
	 * --follow reads a log until its command ends) */
	activity = op && strcmp(op, "info") != 0 && strcmp(op, "logs") != 0 &&
		   strcmp(op, "log") != 0 && strcmp(op, "state") != 0;
	if (activity) {
		pthread_mutex_lock(&M.lock);
		M.working++;
		pthread_mutex_unlock(&M.lock);
	}
	pthread_mutex_lock(&M.lock);
	bool stopping = M.stopping;
	pthread_mutex_unlock(&M.lock);
	if (!op) {
		reply_error(conn, EINVAL, "bad request");
	} else if (stopping) {
		reply_error(conn, ESRCH, "the session is stopping");
	} else if (!strcmp(op, "exec")) {
		do_exec(conn, q, fds, nfds);
	} else if (!strcmp(op, "detach")) {
		do_detach(conn, q);
	} else if (!strcmp(op, "info")) {
		do_info(conn);
	} else if (!strcmp(op, "put") || !strcmp(op, "mkdir")) {
		do_put(conn, q, fds, nfds);
	} else if (!strcmp(op, "get")) {
		do_get(conn, q);
	} else if (!strcmp(op, "view")) {
		do_view(conn);
	} else if (!strcmp(op, "state")) {
		do_state(conn);
	} else if (!strcmp(op, "logs")) {
		do_logs(conn);
	} else if (!strcmp(op, "log")) {
		do_log(conn, q);
	} else if (!strcmp(op, "diff") || !strcmp(op, "apply") || !strcmp(op, "discard")) {
		do_changes(conn, op, q);
	} else if (!strcmp(op, "snapshot")) {
		do_snapshot(conn, q);
	} else if (!strcmp(op, "update")) {
		do_update(conn, q);
	} else if (!strcmp(op, "stop")) {
		teardown("asked to", 1);
		CTX_LEAVE();
		wd_ctx_free(M.ctx); /* the keeper's goodbye */
		reply_ok(conn, NULL, NULL, 0);
		_exit(0);
	} else {
		reply_error(conn, EINVAL, "unknown request");
	}
out:
	json_decref(q);
	free(text);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	close(conn);
	pthread_mutex_lock(&M.lock);
	if (activity) {
		M.last_ns = wd_now_ns();
		M.working--;
	}
	M.active--;
	pthread_cond_broadcast(&M.cond);
	pthread_mutex_unlock(&M.lock);
	CTX_LEAVE();
	return NULL;
}

/* An ordinary user's cow monitor lives in a user namespace of its own
 * (ws_userns_enter), from where the kernel lets it read neither the
 * namespaces of a client in the host's (its parent) nor tell them from a
 * sandbox's: /proc/PID/ns needs ptrace access, which a parent namespace's
 * process denies.  So the checks are made by a process forked before the
 * unshare, in the host's namespaces as a root-mode monitor is, which
 * judges each connection sent to it (SCM_RIGHTS) with wd_peer_check as
 * if it were the monitor (its sandboxed commands descend from the
 * monitor).  It owns the monitor's namespace, so it may inspect the
 * jails nested there.  It ends when the monitor's end of the pair
 * closes. */
static int peer_checker = -1;
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;

static void
peer_checker_main(int sock)
{
	peer_set_ancestor((long)getppid());
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_NAME, "warden-peercheck", 0, 0, 0);
	for (;;) {
		char c;
		WD_FDPASS_BUF(1) u;
		struct iovec iov = {&c, 1};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		wd_fdpass_room(&mh, &u, sizeof(u));
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n <= 0)
			_exit(0);
		int fd = -1;
		wd_fdpass_take(&mh, &fd, 1, close);
		struct wd_err e = {0};
		char reply[sizeof(e.msg) + 1];
		if (fd >= 0 && wd_peer_check(fd, &e) == 0)
			snprintf(reply, sizeof(reply), "+");
		else
			snprintf(reply, sizeof(reply), "-%s", fd < 0 ? "no connection" : e.msg);
		if (fd >= 0)
			close(fd);
		if (send(sock, reply, strlen(reply), MSG_NOSIGNAL) < 0)
			_exit(0);
	}
}

static int
peer_checker_start(int *keep, size_t nkeep)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sp[0]);
		close(sp[1]);
		return -e;
	}
	if (pid == 0) {
		/* nothing of the monitor's but the pair: not its lock (a
		 * session would look running), not the starter's pipe */
		for (size_t i = 0; i < nkeep; i++)
			if (keep[i] >= 0)
				close(keep[i]);
		close(3);
		close(sp[0]);
		peer_checker_main(sp[1]);
		_exit(0);
	}
	close(sp[1]);
	peer_checker = sp[0];
	return 0;
}

/* The checker's verdict on conn (false when it is gone: fail closed). */
static bool
peer_checked(int conn, struct wd_err *e)
{
	char c = 'c';
	WD_FDPASS_BUF(1) u;
	struct iovec iov = {&c, 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	wd_fdpass_put(&mh, &u, sizeof(u), &conn, 1);
	char reply[sizeof(e->msg) + 1];
	ssize_t n = -1;
	/* one question and its answer at a time: connections come from
	 * several threads */
	pthread_mutex_lock(&peer_lock);
	if (sendmsg(peer_checker, &mh, MSG_NOSIGNAL) == 1)
		n = recv(peer_checker, reply, sizeof(reply) - 1, 0);
	pthread_mutex_unlock(&peer_lock);
	if (n <= 0) {
		wd_err_set(e, WD_E_SYS, "the peer checker is gone");
		return false;
	}
	reply[n] = '\0';
	if (reply[0] == '+')
		return true;
	wd_err_set(e, WD_E_INVAL, "%s", reply + 1);
	return false;
}

/* Only our own user (or root) may talk to us: the directory's 0700 says
 * so already; the peer's credentials say it again, whatever the
 * directory's mode became. */
static bool
peer_ok(int conn)
{
	struct ucred uc;
	socklen_t l = sizeof(uc);
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0)
		return false;
	if (uc.uid != geteuid() && uc.uid != 0)
		return false;
	if (peer_checker >= 0) {
		struct wd_err e = {0};
		if (peer_checked(conn, &e))
			return true;
		wd_log(WD_LOG_WARN, "monitor.sock: refused: %s", e.msg);
		return false;
	}
	/* Why: the requests here run with no policy stage (the caller's
	 * context judged them), so a session's own command must not send
	 * them: at the process level it sees the state directory and runs as
	 * its owner, and it reached this socket and ran "exec" unjudged
	 * (docs/threat-model.md).  Its commands descend from this monitor, and every
	 * container-level one is in other namespaces: wd_peer_check refuses
	 * both. */
	struct wd_err e = {0};
	if (wd_peer_check(conn, &e) < 0) {
		wd_log(WD_LOG_WARN, "monitor.sock: refused: %s", e.msg);
		return false;
	}
	return true;
}

static int
listen_socket(struct wd_err *err)
{
	unlinkat(M.dirfd, "monitor.sock", 0);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return wd_err_sys(err, errno, "socket");
	/* through the directory's descriptor: the state directory's path may
	 * be longer than sun_path's 108 bytes */
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/monitor.sock", M.dirfd);
	mode_t old = umask(0177);
	int rc = bind(s, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (rc < 0 || listen(s, 128) < 0) {
		rc = wd_err_sys(err, errno, "listen on monitor.sock");
		close(s);
		return rc;
	}
	return s;
}

static void
serve(void)
{
	for (;;) {
		int timeout = -1;
		if (M.idle_ns) {
			pthread_mutex_lock(&M.lock);
			uint64_t now = wd_now_ns(), due = M.last_ns + M.idle_ns;
			bool busy = M.working > 0;
			pthread_mutex_unlock(&M.lock);
			if (!busy && now >= due) {
				teardown("idle timeout", 0);
				return;
			}
			timeout = busy ? 1000 : (int)((due - now) / 1000000 + 1);
			if (timeout > 60000)
				timeout = 60000;
		}
		struct pollfd p[2] = {{.fd = M.lsock, .events = POLLIN},
				      {.fd = M.wake[0], .events = POLLIN}};
		int n = poll(p, 2, timeout);
		if (n < 0 && errno != EINTR)
			return;
		if (n > 0 && p[1].revents) {
			teardown("signalled", 0);
			return;
		}
		if (n <= 0 || !(p[0].revents & POLLIN))
			continue;
		int conn = accept4(M.lsock, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue;
		if (!peer_ok(conn)) {
			wd_log(WD_LOG_WARN, "refused a connection from another user");
			close(conn);
			continue;
		}
		struct conn_arg *ca = wd_xmalloc(sizeof(*ca));
		ca->fd = conn;
		pthread_mutex_lock(&M.lock);
		M.active++;
		pthread_mutex_unlock(&M.lock);
		pthread_t t;
		if (pthread_create(&t, NULL, conn_thread, ca) != 0) {
			close(conn);
			free(ca);
			pthread_mutex_lock(&M.lock);
			M.active--;
			pthread_mutex_unlock(&M.lock);
			continue;
		}
		pthread_detach(t);
	}
}

static void
on_term(int sig)
{
	(void)sig;
	(void)!write(M.wake[1], "x", 1);
}

/* The readiness pipe: "ok", or "error CODE MESSAGE". */
static void
ready(int fd, int rc, const struct wd_err *e)
{
	char buf[400];
	int n = rc == 0 ? snprintf(buf, sizeof(buf), "ok\n")
			: snprintf(buf, sizeof(buf), "error %d %s\n", -rc, e->msg);
	(void)!write(fd, buf, (size_t)n);
	close(fd);
}

/* The values its starter sent (fd 4) until EOF, in locked memory; wiped
 * once the sandbox's proxy has its own copy. */
#define SECRETS_CAP (NET_SECRETS_MAX * (64 + NET_SECRET_MAX + 2) + 1)
static char *secrets_buf;
static size_t secrets_len;

static void
secrets_receive(int fd)
{
	struct wd_err e = {0};
	secrets_buf = wd_secure_alloc(SECRETS_CAP, &e);
	while (secrets_buf && secrets_len < SECRETS_CAP - 1) {
		ssize_t r = read(fd, secrets_buf + secrets_len, SECRETS_CAP - 1 - secrets_len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		secrets_len += (size_t)r;
	}
	close(fd);
}

int
monitor_secret_get(void *data, const char *name, const char *source, char *buf, size_t cap,
		   size_t *len, struct wd_err *err)
{
	(void)data;
	size_t nl = strlen(name);
	for (size_t at = 0; secrets_buf && at < secrets_len;) {
		char *end = memchr(secrets_buf + at, '\n', secrets_len - at);
		if (!end)
			break;
		const char *line = secrets_buf + at;
		size_t ll = (size_t)(end - line);
		if (ll > nl && !memcmp(line, name, nl) && line[nl] == '=' && ll - nl - 1 < cap) {
			*len = ll - nl - 1;
			memcpy(buf, line + nl + 1, *len);
			return 0;
		}
		at = ll + 1 + at;
	}
	return wd_err_set(err, WD_E_INVAL, "not handed to the session's monitor (%s)", source);
}

static int
start(int readyfd)
{
	struct wd_err e = {0};
	json_t *meta = NULL;
	int rc = ws_meta_read(M.dirfd, &meta, &e);
	if (rc == 0)
		rc = spec_from_json(json_object_get(meta, "spec"), &M.spec, &e);
	if (rc == 0)
		rc = spec_secrets_load(M.spec, monitor_secret_get, NULL, &e);
	if (secrets_buf) {
		wd_secure_free(secrets_buf, SECRETS_CAP);
		secrets_buf = NULL;
	}
	if (rc == 0) {
		json_t *it = json_object_get(meta, "idle_timeout_ms");
		uint64_t ms = json_is_integer(it) ? (uint64_t)json_integer_value(it) : 1800000;
		M.idle_ns = ms * 1000000ULL;
	}
	json_decref(meta);
	struct stat st;
	bool disk = fstatat(M.dirfd, "disk.img", &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		    fstatat(M.dirfd, WS_LAYERS, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (rc == 0 && (rc = wd_ctx_new(&M.ctx, &e)) == 0) {
		wd_ctx_set_log_handler(M.ctx, mon_log, NULL, WD_LOG_INFO);
		rc = wd_ctx_set_state_dir(M.ctx, M.root, &e);
	}
	struct box *b = NULL;
	if (rc == 0 && disk)
		rc = box_open(M.root, M.id, M.spec, &b, &e);
	CTX_ENTER(M.ctx);
	if (rc == 0 && (rc = sandbox_create_boxed(M.ctx, M.spec, b, M.id, &M.sb, &e)) < 0)
		box_close(b);
	CTX_LEAVE();
	if (rc == 0 && (M.lsock = listen_socket(&e)) < 0)
		rc = M.lsock;
	if (rc == 0) {
		M.last_ns = wd_now_ns();
		set_state("running");
		wd_log(WD_LOG_INFO, "running (pid %d)", (int)getpid());
	} else {
		wd_log(WD_LOG_ERROR, "cannot start: %s", e.msg);
	}
	ready(readyfd, rc, &e);
	return rc;
}

int
session_monitor_main(int argc, char **argv)
{
	if (argc != 3 || strlen(argv[2]) != 16)
		return 2;
	/* A daemon: the parent (our starter's child) exits at once, so the
	 * starter reaps it and never holds a zombie of ours; we are nobody's
	 * child but init's (or a subreaper's). */
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0)
		_exit(0);
	setsid();
	/* the sandbox's processes inherit it: the usual one (every file of
	 * ours is made with an explicit mode) */
	umask(022);
	if (chdir("/") < 0)
		_exit(1);
	prctl(PR_SET_NAME, "warden-monitor", 0, 0, 0);
	snprintf(M.root, sizeof(M.root), "%s", argv[1]);
	snprintf(M.id, sizeof(M.id), "%s", argv[2]);
	pthread_mutex_init(&M.lock, NULL);
	pthread_cond_init(&M.cond, NULL);
	M.lsock = -1;
	/* first: the starter waits for nothing of ours before it sends them */
	secrets_receive(4);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd <= 2; fd++)
		dup2(null, fd);
	char path[4200];
	snprintf(path, sizeof(path), "%s/sandboxes/%s", M.root, M.id);
	M.dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (M.dirfd < 0) {
		struct wd_err e = {0};
		ready(3, wd_err_sys(&e, errno, "%s", path), &e);
		return 1;
	}
	/* one monitor per session: a second start waits for nothing, it
	 * fails here (the lock goes with our death) */
	int lk = openat(M.dirfd, "monitor.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lk < 0 || flock(lk, LOCK_EX | LOCK_NB) < 0) {
		struct wd_err e = {0};
		wd_err_set(&e, WD_E_INVAL, "the session %s is running already", M.id);
		ready(3, -EBUSY, &e);
		return 1;
	}
	int lf = openat(M.dirfd, "monitor.log",
			O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	struct stat st;
	if (lf >= 0 && fstat(lf, &st) == 0 && st.st_size > (1 << 20))
		(void)!ftruncate(lf, 0);
	M.log = lf >= 0 ? fdopen(lf, "a") : NULL;
	wd_set_log_handler(mon_log, NULL, WD_LOG_INFO);
	struct stat lst;
	if (geteuid() != 0 && fstatat(M.dirfd, WS_LAYERS, &lst, AT_SYMLINK_NOFOLLOW) == 0) {
		/* An ordinary user's cow session: the overlay is mounted in a
		 * user namespace of ours (still single-threaded here, as
		 * unshare requires), and each jail's namespaces nest in it.
		 * Everything opened from here on resolves in its mount
		 * namespace (overlayfs takes layers from the mounter's). */
		struct wd_err e = {0};
		int keep[] = {lk, M.dirfd, lf};
		int prc = peer_checker_start(keep, WD_ARRAY_SIZE(keep));
		if (prc < 0)
			wd_err_sys(&e, -prc, "start the peer checker");
		if (prc < 0 || ws_userns_enter(&e) < 0) {
			wd_log(WD_LOG_ERROR, "cannot start: %s", e.msg);
			ready(3, -ENOTSUP, &e);
			return 1;
		}
	}
	if (pipe2(M.wake, O_CLOEXEC) < 0)
		return 1;
	struct sigaction sa = {.sa_handler = on_term};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (start(3) < 0)
		return 1;
	serve();
	wd_ctx_free(M.ctx);
	return 0;
}
