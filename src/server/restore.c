/* server/restore: sessions that come back after a restart.
 *
 * With --state-dir, a cow sandbox made on a session (an HTTP session, or
 * a unix socket connection that named its session with session.open) is
 * a library session (wd_session_create: a monitor process of its own,
 * its layers on a disk in the state directory), not a sandbox of the
 * server's process, and the session is written down in DIR/serve/ID.json
 * (its transport, its owner, its sandboxes).  A server started again on
 * DIR (after SIGKILL, or a pod restarted on its volume) reads those
 * records and takes the sessions back: an HTTP client sending its old
 * Mcp-Session-Id, or a socket client resuming with session.open, finds
 * its sandboxes with their change sets.  A monitor that died with the
 * old server (a pod's processes all do) is started again over the stored
 * files at the next command or file call; what ran in it is gone, its
 * files are not.
 *
 * The owner stays the owner: a socket session is bound to the uid that
 * opened it (session.open's check), an HTTP session to the tenant the
 * server was activated for (none: the server's one token), and a record
 * of another tenant is left alone, not restored.  The records are the
 * server's: the state directory is its user's, mode 0700 (checked at
 * start), out of every sandbox's reach; each is still read as untrusted
 * (a regular file of the server's user, bounded, every field checked).
 *
 * Loop thread only (records are written where the tables change). */
#include "server/sandbox.h"
#include "server/base.h"
#include "server/srv.h"
#include "server/conn.h"
#include "server/dispatch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_MAX (1 << 20)

static bool
hex_id(const char *s, size_t n)
{
	if (!s || strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* DIR/serve made (mode 0700) and checked, as a new string; NULL when it
 * cannot be (logged when loud). */
static char *
serve_dir(struct srv *s, bool loud)
{
	char *dir = xasprintf("%s/serve", s->o.state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		if (loud)
			srv_log(s, WD_LOG_ERROR, "--state-dir: %s: %s", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	/* Why: the records say who owns which sandbox; a directory another
	 * user could write (or a link to one) would let them hand a session
	 * to whoever they like */
	struct stat st;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		if (loud)
			srv_log(s, WD_LOG_ERROR,
				"--state-dir: %s must be a directory of the server's user with "
				"mode 0700",
				dir);
		free(dir);
		return NULL;
	}
	return dir;
}

/* The lock, taken early (srv_init, quiet) when DIR is already one the
 * context accepts; otherwise the context's check or srv_records_open
 * refuses DIR with its reason, or srv_records_open takes the lock once
 * the context has made DIR (loud). */
static int
state_lock(struct srv *s, bool loud)
{
	if (!s->o.state_dir || s->state_lock >= 0)
		return 0;
	/* early, nothing is made in a directory the context's check will
	 * refuse (another's, or one others can write): it is left as it was */
	struct stat top;
	if (!loud && (stat(s->o.state_dir, &top) < 0 || !S_ISDIR(top.st_mode) ||
		      top.st_uid != geteuid() || (top.st_mode & 077)))
		return 0;
	char *dir = serve_dir(s, loud);
	if (!dir)
		return loud ? -EINVAL : 0;
	char *path = xasprintf("%s/lock", dir);
	free(dir);
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		srv_log(s, WD_LOG_ERROR, "--state-dir: %s: %s", path,
			fd < 0 ? strerror(errno) : "not a regular file of the server's user");
		if (fd >= 0)
			close(fd);
		free(path);
		return -EINVAL;
	}
	/* Why one server per directory: each takes back, at start, the
	 * sessions its records name and removes the server-made sessions
	 * none names; two would adopt (and serve twice) or remove each
	 * other's live sandboxes.  Why flock and not a pid file: the lock
	 * goes with the process however it dies (SIGKILL, a pod's end), so
	 * the next server starts and adopts without a stale-pid guess, and
	 * it holds across pid namespaces (two pods on one volume).  The
	 * descriptor is close-on-exec: no sandbox or monitor keeps it. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		char buf[32] = "";
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		char *end = NULL;
		long pid = strtol(buf, &end, 10);
		bool known = end != buf && *end == '\n' && pid > 0;
		if (e == EWOULDBLOCK)
			srv_log(s, WD_LOG_ERROR,
				"--state-dir: %s is in use by another warden serve (pid %ld%s, "
				"holding %s): one server per state directory, or two would "
				"take each other's sessions; give this one a --state-dir of "
				"its own",
				s->o.state_dir, known ? pid : 0L, known ? "" : ": not written yet",
				path);
		else
			srv_log(s, WD_LOG_ERROR, "--state-dir: flock %s: %s", path, strerror(e));
		close(fd);
		free(path);
		return -EBUSY;
	}
	/* the holder's pid, for the refusal above (as this pid namespace
	 * numbers it); only ever read as a number */
	char pid[24];
	int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len)
		srv_log(s, WD_LOG_WARN,
			"--state-dir: %s: %s (a second server's refusal will "
			"not name this one's pid)",
			path, strerror(errno));
	free(path);
	s->state_lock = fd;
	return 0;
}

int
srv_state_lock(struct srv *s)
{
	return state_lock(s, false);
}

int
srv_records_open(struct srv *s)
{
	if (!s->o.state_dir)
		return 0;
	char *dir = serve_dir(s, true);
	if (!dir)
		return -EINVAL;
	s->rec_dir = dir;
	return state_lock(s, true);
}

bool
srv_persists(const struct peer *p)
{
	return p->srv->rec_dir && (p->kind == T_HTTP || (p->kind == T_UNIX && p->named));
}

static char *
rec_path(const struct srv *s, const char *session)
{
	return xasprintf("%s/%s.json", s->rec_dir, session);
}

void
record_save(struct srv *s, struct peer *p)
{
	if (!s->rec_dir || !hex_id(p->session, 32) || s->keep_sessions)
		return;
	json_t *a = json_array();
	for (struct live *l = p->lives; l; l = l->next)
		if (l->sess)
			json_array_append_new(
			    a, json_pack("{s:s, s:b, s:o, s:s}", "id", l->id, "by_mcp", l->by_mcp,
					 "image", l->image ? json_string(l->image) : json_null(),
					 "digest", l->digest));
	char *path = rec_path(s, p->session);
	if (json_array_size(a) == 0) {
		json_decref(a);
		if (unlink(path) < 0 && errno != ENOENT)
			srv_log(s, WD_LOG_WARN, "session record %s: %s", path, strerror(errno));
		free(path);
		return;
	}
	json_t *r = json_pack("{s:i, s:s, s:s, s:o}", "version", 1, "session", p->session,
			      "transport", p->kind == T_HTTP ? "http" : "unix", "sandboxes", a);
	if (p->kind == T_UNIX)
		json_object_set_new(r, "uid", json_integer((json_int_t)p->uid));
	else
		json_object_set_new(r, "tenant",
				    s->act_tenant ? json_string(s->act_tenant) : json_null());
	json_object_set_new(r, "proto", json_string(p->proto));
	json_object_set_new(r, "mcp", json_boolean(p->mcp));
	char *text = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	char *tmp = xasprintf("%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t n = strlen(text);
	bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
	ok = fd >= 0 && fsync(fd) == 0 && ok;
	if (fd >= 0)
		close(fd);
	if (!ok || rename(tmp, path) < 0) {
		srv_log(s, WD_LOG_WARN,
			"session record %s: %s (its sandboxes will not come back "
			"after a restart)",
			path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	free(text);
	free(path);
}

/* The library's sessions: id -> its name (or null), a JSON object; or
 * NULL. */
static json_t *
library_sessions(struct srv *s)
{
	struct wd_err err = {0};
	char *out = NULL;
	if (wd_session_list(s->ctx, true, &out, &err) < 0) {
		srv_log(s, WD_LOG_WARN, "restore: the state directory's sessions: %s", err.msg);
		return NULL;
	}
	json_t *a = json_loads(out, 0, NULL), *m = json_object();
	free(out);
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		const char *id = json_string_value(json_object_get(v, "id"));
		json_t *name = json_object_get(v, "name");
		if (id)
			json_object_set(m, id, name ? name : json_null());
	}
	json_decref(a);
	return m;
}

static json_t *
read_record(struct srv *s, int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	json_t *r = NULL;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    st.st_size < REC_MAX) {
		json_error_t je;
		r = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	}
	if (fd >= 0)
		close(fd);
	if (!r)
		srv_log(s, WD_LOG_WARN,
			"restore: %s/%s: not a session record of this server; "
			"left alone",
			s->rec_dir, name);
	return r;
}

/* Every sandbox id a record names (restored or not) goes into named;
 * false when the record has no list of them. */
static bool
note_named(json_t *r, json_t *named)
{
	json_t *a = json_object_get(r, "sandboxes");
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		const char *id = json_string_value(json_object_get(v, "id"));
		if (id)
			json_object_set_new(named, id, json_true());
	}
	return json_is_array(a);
}

/* A session the server made ("serve-" name) that no record names and no
 * peer holds: made or dropped by a server that died before its record
 * said so.  Nobody can reach it; its disk would stay on the volume.
 * Why the whole shape ("serve-" and 16 hex digits, as harness.c names
 * them) and not the prefix: the state directory is the CLI's too, and a
 * human's `warden create serve-frontend` was removed with its unapplied
 * changes by the next server start (serve-sweep-names). */
static void
remove_orphans(struct srv *s, json_t *known, json_t *named)
{
	const char *id;
	json_t *name;
	json_object_foreach(known, id, name)
	{
		const char *n = json_string_value(name);
		if (!n || strncmp(n, "serve-", 6) || !hex_id(n + 6, 16) ||
		    json_object_get(named, id))
			continue;
		bool held = false;
		for (struct peer *q = s->peers; q && !held; q = q->next)
			for (struct live *l = q->lives; l && !held; l = l->next)
				held = !strcmp(l->id, id);
		struct wd_err err = {0};
		if (held)
			continue;
		if (wd_session_remove(s->ctx, id, &err) < 0)
			srv_log(s, WD_LOG_WARN, "restore: sandbox %s of no session: %s", id,
				err.msg);
		else
			srv_log(s, WD_LOG_INFO, "restore: sandbox %s of no session removed", id);
	}
}

static void
restore_one(struct srv *s, const char *session, json_t *r, json_t *known)
{
	const char *transport = json_string_value(json_object_get(r, "transport"));
	json_t *sbs = json_object_get(r, "sandboxes");
	bool http = transport && !strcmp(transport, "http");
	bool unix_ = transport && !strcmp(transport, "unix");
	json_t *uidv = json_object_get(r, "uid");
	const char *proto = json_string_value(json_object_get(r, "proto"));
	if (!(http || unix_) || !json_is_array(sbs) || (unix_ && !json_is_integer(uidv)) ||
	    !json_is_string(json_object_get(r, "session")) ||
	    strcmp(json_string_value(json_object_get(r, "session")), session)) {
		srv_log(s, WD_LOG_WARN, "restore: session record %s: malformed; left alone",
			session);
		return;
	}
	if (http) {
		/* Why: an HTTP session is its tenant's; a pod activated for
		 * another tenant on the same volume must not serve it */
		const char *t = json_string_value(json_object_get(r, "tenant"));
		const char *mine = s->act_tenant;
		if ((t == NULL) != (mine == NULL) || (t && strcmp(t, mine))) {
			srv_log(s, WD_LOG_WARN,
				"restore: HTTP session %.8s... belongs to another tenant; not "
				"restored",
				session);
			return;
		}
	}
	struct peer *p = peer_new(s, http ? T_HTTP : T_UNIX);
	snprintf(p->session, sizeof(p->session), "%s", session);
	if (http) {
		p->mcp = json_is_true(json_object_get(r, "mcp"));
		p->initialized = p->mcp;
		snprintf(p->proto, sizeof(p->proto), "%s", proto ? proto : "");
	} else {
		p->uid = (uid_t)json_integer_value(uidv);
		p->named = true;
		p->detached = true; /* peer_new's reference is the session table's */
	}
	size_t i, n = 0;
	json_t *v;
	json_array_foreach(sbs, i, v)
	{
		const char *id = json_string_value(json_object_get(v, "id"));
		const char *image = json_string_value(json_object_get(v, "image"));
		const char *digest = json_string_value(json_object_get(v, "digest"));
		if (!hex_id(id, 16) || !json_object_get(known, id)) {
			srv_log(s, WD_LOG_WARN, "restore: sandbox %.16s of a session is gone",
				id ? id : "?");
			continue;
		}
		struct live *l = live_new_session(s, id, true, true);
		l->by_mcp = json_is_true(json_object_get(v, "by_mcp"));
		l->image = image ? xstrdup(image) : NULL;
		snprintf(l->digest, sizeof(l->digest), "%s", digest ? digest : "");
		atomic_fetch_add(&s->nlive, 1);
		l->next = p->lives;
		p->lives = l;
		n++;
	}
	srv_log(s, WD_LOG_INFO, "%s session %llu restored with %zu sandbox%s",
		http ? "HTTP" : "socket", (unsigned long long)p->seq, n, n == 1 ? "" : "es");
	if (n == 0)
		session_end(s, p, "none of its sandboxes is left"); /* drops the record */
	else
		record_save(s, p);
}

void
srv_restore(struct srv *s)
{
	if (!s->rec_dir)
		return;
	DIR *d = opendir(s->rec_dir);
	if (!d)
		return;
	json_t *known = library_sessions(s), *named = json_object();
	bool unreadable = false;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char session[33];
		if (n != 37 || strcmp(de->d_name + 32, ".json"))
			continue;
		memcpy(session, de->d_name, 32);
		session[32] = '\0';
		if (!hex_id(session, 32))
			continue;
		json_t *r = known ? read_record(s, dirfd(d), de->d_name) : NULL;
		if (!r || !note_named(r, named)) {
			unreadable = true;
			json_decref(r);
			continue;
		}
		bool taken = false;
		for (struct peer *q = s->peers; q && !taken; q = q->next)
			taken = !q->closed && !strcmp(q->session, session);
		if (!taken)
			restore_one(s, session, r, known);
		json_decref(r);
	}
	closedir(d);
	/* only when every record was read: one that could not be (left
	 * alone) might name what looks orphaned */
	if (known && !unreadable)
		remove_orphans(s, known, named);
	json_decref(known);
	json_decref(named);
}

/* ---- an ordinary user's anonymous cow sandboxes ---- */

/* start time of pid (field 22 of /proc/PID/stat), 0 if it is gone */
static unsigned long long
proc_start(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	for (int field = 2; p && *p; p++)
		if (*p == ' ' && ++field == 22)
			return strtoull(p + 1, NULL, 10);
	return 0;
}

/* Whether s starts with n lowercase hex digits (hex_id: is exactly them). */
static bool
hex_head(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* STATE/serve-anon: the ordinary user's servers' locks, beside the
 * sessions they name; NULL (logged) when it cannot be used. */
static char *
anon_dir(struct srv *s)
{
	char state[PATH_MAX];
	struct wd_err err = {0};
	if (wd_ctx_state_dir(s->ctx, state, sizeof(state), &err) < 0) {
		srv_log(s, WD_LOG_WARN, "the state directory: %s", err.msg);
		return NULL;
	}
	char *dir = xasprintf("%s/serve-anon", state);
	struct stat st;
	/* Why the owner and mode: whoever could write it could make a live
	 * server's sandboxes look orphaned (no lock file) or keep a dead
	 * one's for ever */
	if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || lstat(dir, &st) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		srv_log(s, WD_LOG_WARN,
			"%s: not a directory of the server's user with mode 0700; "
			"sandboxes are told from orphans by pid and start time",
			dir);
		free(dir);
		return NULL;
	}
	return dir;
}

void
srv_anon_lock(struct srv *s)
{
	/* Why a lock and not only the pid and start time in the name: a
	 * server in another pid namespace (a container of the same user, a
	 * pod on the same volume) has pids this one cannot see, or sees as
	 * another process, so each took the other's live sandboxes for
	 * orphans.  A flock is on the file, whatever the namespace, and
	 * goes with the process however it dies (SIGKILL). */
	char *dir = anon_dir(s);
	if (!dir)
		return;
	unsigned char r[8];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		abort();
	char id[17];
	for (int i = 0; i < 8; i++)
		snprintf(id + 2 * i, 3, "%02x", r[i]);
	/* locked under a name the sweep ignores, then renamed into place: a
	 * sweep never finds an ID.lock that is not locked by a live server,
	 * nor unlinks one in the instant between its creation and flock */
	char *tmp = xasprintf("%s/.%s.tmp", dir, id), *final = xasprintf("%s/%s.lock", dir, id);
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || rename(tmp, final) < 0) {
		srv_log(s, WD_LOG_WARN,
			"%s: %s; sandboxes are told from orphans by pid and start time", final,
			strerror(errno));
		if (fd >= 0) {
			unlink(tmp);
			close(fd);
		}
		free(tmp);
		free(final);
		free(dir);
		return;
	}
	free(tmp);
	free(dir);
	s->anon_lock = fd;
	s->anon_lock_path = final;
	memcpy(s->anon_id, id, sizeof(id));
}

void
srv_anon_name(struct srv *s, char *buf, size_t n, const char *rnd)
{
	if (s->anon_lock >= 0)
		snprintf(buf, n, "serve.lk.%s.%s", s->anon_id, rnd);
	else
		snprintf(buf, n, "serve.%d.%llu.%s", (int)getpid(), proc_start(getpid()), rnd);
}

/* Whether the server of lock ID lives: its lock file is there and held.
 * Unsure (the file cannot be opened for another reason): alive, left. */
static bool
anon_alive(const char *dir, const char *id)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%.16s.lock", dir, id);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	bool held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

/* Lock files no server holds (a server SIGKILLed, its sandboxes swept):
 * removed.  One another sweep has just locked to test is only unlinked
 * if free; a live server's never is (it holds it from before its name). */
static void
anon_tidy(struct srv *s, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		bool lock = strlen(n) == 21 && hex_head(n, 16) && !strcmp(n + 16, ".lock");
		bool tmp = strlen(n) == 21 && n[0] == '.' && hex_head(n + 1, 16) &&
			   !strcmp(n + 17, ".tmp");
		if (!(lock || tmp) || (s->anon_lock >= 0 && !memcmp(n + !lock, s->anon_id, 16)))
			continue;
		int fd = openat(dirfd(d), n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dirfd(d), n, 0);
		close(fd);
	}
	closedir(d);
}

void
srv_sweep_anon(struct srv *s)
{
	json_t *known = library_sessions(s);
	char *dir = anon_dir(s);
	const char *id;
	json_t *name;
	json_object_foreach(known, id, name)
	{
		const char *nm = json_string_value(name);
		int pid = 0, end = 0;
		unsigned long long start = 0;
		if (nm && !strncmp(nm, "serve.lk.", 9) && strlen(nm) == 42 &&
		    hex_head(nm + 9, 16) && nm[25] == '.' && hex_id(nm + 26, 16)) {
			/* a server with a lock: alive while it holds it (this
			 * one's own included), in whatever pid namespace */
			if (!dir || anon_alive(dir, nm + 9))
				continue;
		} else {
			/* the whole shape srv_anon_name writes, 16 hex digits
			 * last: a human's session of the same directory named
			 * "serve.1.1.notes" is not one (remove_orphans says why) */
			if (!nm || sscanf(nm, "serve.%d.%llu.%n", &pid, &start, &end) != 2 ||
			    end == 0 || pid <= 0 || !hex_id(nm + end, 16))
				continue;
			/* a server without a lock (an older one, or a state
			 * directory that could not have one).  Why both: a pid
			 * is reused; its start time tells a live server from a
			 * new process that got the number */
			if (proc_start((pid_t)pid) == start)
				continue;
		}
		struct wd_err err = {0};
		if (wd_session_remove(s->ctx, id, &err) < 0)
			srv_log(s, WD_LOG_WARN, "sandbox %s of a server that is gone: %s", id,
				err.msg);
		else
			srv_log(s, WD_LOG_INFO, "sandbox %s of a server that is gone: removed", id);
	}
	json_decref(known);
	if (dir)
		anon_tidy(s, dir);
	free(dir);
}
