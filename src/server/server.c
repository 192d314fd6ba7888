/* server/server: the server object (the library's context, the
 * workspace, the policy, the token) and the table of methods. */
#include "server/srv.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/tools.h"
#include "server/health.h"
#include "server/dispatch.h"
#include "server/sandbox.h"
#include "server/run.h"
#include "server/mcp.h"
#include "server/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *
m_ping(struct call *c, struct rpc_err *e)
{
	(void)c;
	(void)e;
	return json_object();
}

static json_t *
m_sandbox_list(struct call *c, struct rpc_err *e)
{
	(void)e;
	json_t *a = json_array(), *d = json_array();
	for (struct live *l = c->peer->lives; l; l = l->next) {
		json_array_append_new(a, json_string(l->id));
		json_array_append_new(
		    d, json_pack("{s:s, s:s, s:o, s:o}", "sandbox", l->id, "workspace_mode",
				 l->cow ? "cow" : "direct", "image",
				 l->image ? json_string(l->image) : json_null(), "image_digest",
				 l->image ? json_string(l->digest) : json_null()));
	}
	return json_pack("{s:o, s:o}", "sandboxes", a, "details", d);
}

/* clang-format off */
static const struct method methods[] = {
	{"initialize", M_INLINE, mcp_initialize},
	{"ping", M_INLINE, m_ping},
	{"tools/list", M_INLINE | M_MCP, mcp_tools_list},
	{"tools/call", M_MCP, mcp_tools_call},
	{"sandbox.create", 0, h_sandbox_create},
	{"sandbox.list", M_INLINE, m_sandbox_list},
	{"session.open", M_INLINE, m_session_open},
	{"server.activate", M_INLINE | M_HUMAN, m_server_activate},
	{"sandbox.run", M_ARGV, run_harness},
	{"sandbox.exec", M_LIVE | M_ARGV, exec_harness},
	{"sandbox.read_file", M_LIVE, h_sandbox_files},
	{"sandbox.write_file", M_LIVE, h_sandbox_files},
	{"sandbox.edit_file", M_LIVE, h_sandbox_files},
	{"sandbox.list_dir", M_LIVE, h_sandbox_files},
	{"sandbox.search_files", M_LIVE, h_sandbox_files},
	{"sandbox.diff", M_LIVE | M_ANY_PEER, diff_harness},
	{"sandbox.apply", M_LIVE | M_ANY_PEER | M_NOT_MODEL, apply_harness},
	{"sandbox.discard", M_LIVE | M_ANY_PEER, discard_harness},
	{"sandbox.destroy", M_LIVE | M_TAKE_LIVE, h_sandbox_destroy},
	{"policy.check", M_LIVE_OPT, h_policy_check},
	{"tool.route", 0, h_tool_route},
	{"approval.list", M_HUMAN, h_approval_list},
	{"approval.grant", M_HUMAN, h_approval_grant},
	{"audit.verify", 0, h_audit_verify},
};
/* clang-format on */

const struct method *
method_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (!strcmp(methods[i].name, name))
			return &methods[i];
	return NULL;
}

/* ---- parameters ---- */

bool
p_str(json_t *params, const char *key, bool required, const char **out, struct rpc_err *e)
{
	json_t *v = json_object_get(params, key);
	if (!v) {
		if (required)
			return rpc_err_set(e, RPC_INVALID_PARAMS,
					   "Invalid params: '%s' is required", key) == 0;
		return true;
	}
	if (!json_is_string(v))
		return rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: '%s' must be a string",
				   key) == 0;
	*out = json_string_value(v);
	return true;
}

bool
p_bool(json_t *params, const char *key, bool *out, struct rpc_err *e)
{
	json_t *v = json_object_get(params, key);
	if (!v)
		return true;
	if (!json_is_boolean(v))
		return rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: '%s' must be a boolean",
				   key) == 0;
	*out = json_is_true(v);
	return true;
}

bool
p_uint(json_t *params, const char *key, uint64_t max, uint64_t *out, struct rpc_err *e)
{
	json_t *v = json_object_get(params, key);
	if (!v)
		return true;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: '%s' must be an integer from 0 to %llu", key,
				   (unsigned long long)max) == 0;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

bool
p_only(json_t *params, const char *const *keys, struct rpc_err *e)
{
	const char *k;
	json_t *v;
	json_object_foreach(params, k, v)
	{
		bool ok = !strcmp(k, "_meta");
		for (size_t i = 0; keys[i] && !ok; i++)
			ok = !strcmp(k, keys[i]);
		if (!ok)
			return rpc_err_set(e, RPC_INVALID_PARAMS,
					   "Invalid params: unknown member '%.100s'", k) == 0;
	}
	return true;
}

/* ---- set-up ---- */

/* The bearer token: a file only its owner can read (the token is the
 * only thing between the network and the sandboxes), at least 16
 * characters, trailing whitespace trimmed.  Never logged.  *id gets the
 * identity of the file read (srv_token_watch).  Symbolic links
 * are followed (a Kubernetes Secret volume is PATH -> ..data/PATH ->
 * ..TIMESTAMP/PATH): the path is the operator's, and the checks are on
 * the file reached, opened once (fstat on that descriptor). */
static int
load_token(struct srv *s, const char *path, struct token_id *id)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		srv_log(s, WD_LOG_ERROR, "--token-file: %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	int rc = -EINVAL;
	char buf[4097];
	ssize_t n = 0;
	if (!S_ISREG(st.st_mode)) {
		srv_log(s, WD_LOG_ERROR, "--token-file: %s is not a regular file", path);
	} else if (st.st_mode & 077) {
		srv_log(s, WD_LOG_ERROR,
			"--token-file: %s is readable by others (mode %04o); chmod 600 it "
			"(a Kubernetes Secret: defaultMode 0400)",
			path, (unsigned)(st.st_mode & 07777));
	} else if ((n = read(fd, buf, sizeof(buf) - 1)) < 0 || n == (ssize_t)sizeof(buf) - 1) {
		srv_log(s, WD_LOG_ERROR, "--token-file: %s: unreadable or over 4 KiB", path);
	} else {
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
				 buf[n - 1] == '\t'))
			n--;
		buf[n] = '\0';
		bool printable = true;
		for (ssize_t i = 0; i < n; i++)
			printable = printable && buf[i] > 0x20 && buf[i] < 0x7f;
		if (n < 16 || !printable)
			srv_log(s, WD_LOG_ERROR,
				"--token-file: %s: the token must be at least 16 printable "
				"characters without spaces",
				path);
		else
			rc = 0;
	}
	close(fd);
	if (rc == 0) {
		if (s->token) {
			explicit_bzero(s->token, strlen(s->token));
			free(s->token);
		}
		s->token = xstrdup(buf);
	}
	if (id)
		*id = (struct token_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
	explicit_bzero(buf, sizeof(buf));
	return rc;
}

static bool
same_file(const struct token_id *a, const struct token_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Once a second (the loop's timer): the token file changed (a Secret's
 * update swaps its ..data link, so the file reached is another; an edit
 * changes its times) -> read it again with the same checks.  A new token
 * replaces the old at once.  A file that fails the checks leaves the
 * server with no token: every request is refused (401) and /readyz says
 * why until a good one appears.  Why not keep the old token: a rotation
 * is how a leaked token is revoked, and a botched one must not leave the
 * leaked token working. */
void
srv_token_watch(struct srv *s)
{
	if (!s->o.token_file)
		return;
	struct stat st;
	struct token_id now = {0};
	if (stat(s->o.token_file, &st) == 0)
		now = (struct token_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
	if (same_file(&now, &s->token_id))
		return;
	struct token_id got = now;
	if (load_token(s, s->o.token_file, &got) == 0) {
		s->token_id = got;
		s->token_bad = false;
		srv_log(s, WD_LOG_INFO, "--token-file: %s changed: the new token is in force",
			s->o.token_file);
		return;
	}
	s->token_id = now;
	if (s->token) {
		explicit_bzero(s->token, strlen(s->token));
		free(s->token);
		s->token = NULL;
	}
	s->token_bad = true;
	srv_log(s, WD_LOG_ERROR,
		"--token-file: %s changed and cannot be used: every request is refused until "
		"it holds a good token",
		s->o.token_file);
}

/* Refuse a --socket inside the workspace.  Why: every sandbox of this
 * server has the workspace (a bind mount), so a sandboxed command could
 * connect to the socket there; running as the owner's uid (an
 * unprivileged server maps its sandboxes to it) it would pass the
 * SO_PEERCRED check and could grant its own approvals.  The peer check at
 * accept (peer.c) refuses sandboxed processes too: this is the first of
 * two locks.  The workspace is the only host directory the server's
 * sandboxes share (it has no --bind; their /tmp and home are their own). */
/* --image and --allow-image: stored images, at the container or gVisor
 * level (the process level has no root of its own to put one in), or the
 * server does not start (125): a name that is not there would fail every
 * call instead. */
static int
check_images(struct srv *s)
{
	const struct server_opts *o = &s->o;
	if ((o->image || o->nallow_images) && o->isolation == WD_ISOLATION_PROCESS) {
		srv_log(s, WD_LOG_ERROR,
			"--%s: an image needs --isolation container or gvisor (the process level "
			"has no root of its own)",
			o->image ? "image" : "allow-image");
		return -EINVAL;
	}
	for (size_t i = 0; i <= o->nallow_images; i++) {
		const char *name = i == 0 ? o->image : o->allow_images[i - 1];
		char d[SRV_DIGEST_LEN];
		struct wd_err err = {0};
		if (name && srv_image_digest(s, name, d, &err) < 0) {
			srv_log(s, WD_LOG_ERROR, "--%s: %s", i == 0 ? "image" : "allow-image",
				err.msg);
			return -EINVAL;
		}
		if (name)
			srv_log(s, WD_LOG_INFO, "image %s (%s)%s", name, d,
				i == 0 ? ": every sandbox's unless a caller chooses another"
				       : ": a caller may choose it");
	}
	return 0;
}

static int
socket_in_workspace(struct srv *s, const char *path)
{
	char *copy = xstrdup(path), *slash = strrchr(copy, '/');
	const char *dir = !slash ? "." : slash == copy ? "/" : (*slash = '\0', copy);
	char *rdir = realpath(dir, NULL), *rws = realpath(wd_workspace_path(s->ws), NULL);
	int rc = 0;
	if (!rdir) {
		srv_log(s, WD_LOG_ERROR, "--socket: %s: %s", dir, strerror(errno));
		rc = -EINVAL;
	} else if (rws) {
		size_t n = strlen(rws);
		if (!strncmp(rdir, rws, n) && (rdir[n] == '\0' || rdir[n] == '/' || n == 1)) {
			srv_log(s, WD_LOG_ERROR,
				"--socket: %s is inside the workspace %s, where a sandboxed "
				"command could connect to it as you (and grant its own "
				"approvals); put it outside, e.g. in $XDG_RUNTIME_DIR",
				path, rws);
			rc = -EINVAL;
		}
	}
	free(rdir);
	free(rws);
	free(copy);
	return rc;
}

/* sandbox_create's "image": the names this server offers, in its
 * description, so that the model can choose without a failed call (the
 * names are the operator's, checked against the store at start). */
void
mcp_offer_images(struct srv *s, json_t *tool)
{
	json_t *prop = json_object_get(
	    json_object_get(json_object_get(tool, "inputSchema"), "properties"), "image");
	const char *d = json_string_value(json_object_get(prop, "description"));
	if (!d)
		return;
	json_t *offered = srv_images_offered(s);
	char *list = json_dumps(offered, JSON_COMPACT);
	char *text = json_array_size(offered)
			 ? xasprintf("%s. Offered here: %s%s", d, list,
				     s->o.image ? " (the first is the default)" : "")
			 : xasprintf("%s. This server offers none: sandboxes run on the host's "
				     "programs",
				     d);
	json_object_set_new(prop, "description", json_string(text));
	free(text);
	free(list);
	json_decref(offered);
}

/* run_command reaches beyond the workspace when the policy allows hosts */
void
mcp_offer_network(struct srv *s, json_t *def)
{
	size_t na = 0;
	if (s->policy)
		wd_policy_network_allow(s->policy, &na);
	json_object_set_new(json_object_get(def, "annotations"), "openWorldHint",
			    json_boolean(na > 0));
}

/* The tools this server offers: the built-in table without the tools
 * the policy blocks, each fitted to this server by its entry's offer. */
static json_t *
offered_tools(struct srv *s)
{
	json_t *all = tooldefs_load(), *out = json_array();
	size_t i;
	json_t *t;
	json_array_foreach(all, i, t)
	{
		if (mcp_tool_blocked(s, mcp_tools[i].name))
			continue;
		if (mcp_tools[i].offer)
			mcp_tools[i].offer(s, t);
		json_array_append(out, t);
	}
	json_decref(all);
	return out;
}

unsigned long
srv_fd_reserve(const struct srv *s)
{
	return SRV_FDS_SLACK + (unsigned long)s->o.max_calls * SRV_FDS_PER_CALL;
}

/* The descriptor table's size (FDSize in /proc/self/status), or -1: no
 * open descriptor is at or above it, so it bounds their count from above,
 * in constant time, where counting /proc/self/fd costs a dentry lookup per
 * descriptor: with 700 idle sandboxes (9,000 descriptors) that readdir was
 * 40 % of the server's CPU in sandbox.create (perf record), and the
 * reason create slowed as sandboxes accumulated. */
static long
fd_table_size(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return -1;
	char line[256];
	long n = -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "FDSize:", 7)) {
			n = strtol(line + 7, NULL, 10);
			break;
		}
	fclose(f);
	return n > 0 ? n : -1;
}

int
srv_fds(long *in_use, long *limit, long want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	*limit = rl.rlim_cur == RLIM_INFINITY ? (long)(1l << 30) : (long)rl.rlim_cur;
	long size = want > 0 ? fd_table_size() : -1;
	if (size > 0 && *limit - size >= want) {
		*in_use = size; /* at most: room enough without counting */
		return 0;
	}
	/* opendir() itself needs a descriptor: at EMFILE there is no room */
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	long n = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	*in_use = n - 1; /* the directory's own descriptor */
	return 0;
}

/* The part of the set-up the tenant's options decide: the context, the
 * workspace, the policy, the audit log, the token, the tools, the pool.
 * warm: the warm state of --await-activation, which serves only the
 * readiness probe: its workspace is warm_dir (empty, the server's own),
 * and it has no token, no audit log and no pool (a pooled sandbox holds
 * the workspace it was built with). */
static int
srv_setup(struct srv *s, const struct server_opts *o, bool warm)
{
	struct wd_err err = {0};
	if (wd_ctx_new(&s->ctx, &err) < 0) {
		srv_log(s, WD_LOG_ERROR, "%s", err.msg);
		return -EINVAL;
	}
	const char *ws = warm ? s->warm_dir : o->workspace ? o->workspace : ".";
	wd_spec *probe = wd_spec_new();
	int rc = wd_spec_set_workspace(probe, ws, &err);
	wd_spec_free(probe);
	if (rc < 0 || wd_workspace_open(ws, &s->ws, &err) < 0) {
		srv_log(s, WD_LOG_ERROR, "--workspace: %s", err.msg);
		return -EINVAL;
	}
	if (o->socket_path && !warm && socket_in_workspace(s, o->socket_path) < 0)
		return -EINVAL;
	/* loaded once: the context borrows the server's (freed after it) */
	if (wd_policy_load(o->policy, &s->policy, &err) < 0 ||
	    wd_ctx_set_policy(s->ctx, o->policy, s->policy, &err) < 0) {
		srv_log(s, WD_LOG_ERROR, "--policy: %s", err.msg);
		return -EINVAL;
	}
	/* The file tools refuse what every jail of this server makes
	 * read-only: warden's paths (the workspace starts with them), the
	 * policy's workspace.protect and --protect.  Both lists were checked
	 * already (the policy's loader, the CLI), in the same form. */
	struct wd_policy_sandbox ps;
	wd_policy_sandbox(s->policy, &ps);
	for (size_t i = 0; i < ps.nprotect; i++)
		if (wd_workspace_protect(s->ws, ps.protect[i], &err) < 0) {
			srv_log(s, WD_LOG_ERROR, "--policy: workspace.protect: %s", err.msg);
			return -EINVAL;
		}
	for (size_t i = 0; i < o->nprotect; i++)
		if (wd_workspace_protect(s->ws, o->protect[i], &err) < 0) {
			srv_log(s, WD_LOG_ERROR, "--protect: %s", err.msg);
			return -EINVAL;
		}
	/* --state-dir: the context's (cow layers, sessions, change sets) and,
	 * through WARDEN_STATE_DIR (set by the CLI before any thread), the
	 * approvals' and images'; the audit log too unless one is named */
	if (o->state_dir && wd_ctx_set_state_dir(s->ctx, o->state_dir, &err) < 0) {
		srv_log(s, WD_LOG_ERROR, "--state-dir: %s", err.msg);
		return -EINVAL;
	}
	if (check_images(s) < 0)
		return -EINVAL;
	char *audit = NULL;
	if (warm)
		audit = NULL; /* the warm state runs no command: nothing to audit */
	else if (o->audit)
		audit = xstrdup(o->audit);
	else if (o->state_dir && !wd_policy_audit_path(s->policy))
		audit = xasprintf("%s/audit.log", o->state_dir);
	if (audit && wd_ctx_set_audit_file(s->ctx, audit, &err) < 0) {
		srv_log(s, WD_LOG_ERROR, "%s: %s", o->audit ? "--audit" : "--state-dir", err.msg);
		free(audit);
		return -EINVAL;
	}
	free(audit);
	/* The audit log and the policy file out of every sandbox's reach
	 * (docs/threat-model.md, boundary 6): every run checks it, and a
	 * server refuses to start on it (125) rather than fail each call. */
	wd_spec *reach = run_spec(s, NULL, NULL, NULL, &err);
	int reach_rc = reach ? wd_ctx_check_spec(s->ctx, reach, &err) : -EINVAL;
	wd_spec_free(reach);
	if (reach_rc < 0) {
		srv_log(s, WD_LOG_ERROR, "%s", err.msg);
		return -EINVAL;
	}
	if (o->listen && o->token_file && load_token(s, o->token_file, &s->token_id) < 0)
		return -EINVAL;
	wd_ctx_set_event_handler(s->ctx, run_on_event, s, WD_EVENT_BIT(WD_EVENT_OUTPUT));
	s->tools = offered_tools(s);
	return warm ? 0 : srv_pool_start(s);
}

int
srv_init(struct srv *s, const struct server_opts *o)
{
	s->o = *o;
	s->state_lock = -1;
	s->anon_lock = -1;
	s->owner_uid = geteuid();
	pthread_mutex_init(&s->qlock, NULL);
	pthread_mutex_init(&s->wlock, NULL);
	pthread_cond_init(&s->wcv, NULL);
	pthread_cond_init(&s->idle_cv, NULL);
	pthread_mutex_init(&s->health_lock, NULL);
	atomic_init(&s->probe_done, false);
	atomic_init(&s->ending, 0);
	atomic_init(&s->seq, 0);
	if (o->await_activation) {
		/* the readiness probe's workspace until the tenant's arrives:
		 * empty, 0700, the server's own; removed at activation */
		const char *tmp = getenv("TMPDIR");
		s->warm_dir =
		    xasprintf("%s/warden-warm.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
		if (!mkdtemp(s->warm_dir)) {
			srv_log(s, WD_LOG_ERROR, "--await-activation: %s: %s", s->warm_dir,
				strerror(errno));
			free(s->warm_dir);
			s->warm_dir = NULL;
			return -EINVAL;
		}
	} else {
		s->activated = true;
	}
	/* first: a second server on the directory makes nothing there (its
	 * pool, its sweep) before it is refused */
	if (srv_state_lock(s) < 0)
		return -EBUSY;
	return srv_setup(s, o, o->await_activation);
}

/* What srv_setup made (an activation that failed, or the warm state
 * once the tenant's replaced it). */
static void
tenant_drop(struct srv *s)
{
	srv_pool_stop(s);
	wd_ctx_free(s->ctx);
	wd_workspace_close(s->ws);
	wd_policy_free(s->policy);
	json_decref(s->tools);
	s->ctx = NULL;
	s->ws = NULL;
	s->policy = NULL;
	s->tools = NULL;
}

/* The token of an activation: the --token-file rules (load_token). */
static bool
token_fits(const char *t)
{
	size_t n = strlen(t);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
			return false;
	return n >= 16 && n <= 4096;
}

static bool
tenant_fits(const char *t)
{
	size_t n = strlen(t);
	for (size_t i = 0; i < n; i++)
		if (!(t[i] >= 'a' && t[i] <= 'z') && !(t[i] >= 'A' && t[i] <= 'Z') &&
		    !(t[i] >= '0' && t[i] <= '9') && !strchr("._-", t[i]))
			return false;
	return n >= 1 && n <= 63;
}

/* server.activate: {"workspace", "token" or "token_file" (with --listen),
 * "policy"?, "tenant"?}.  A token_file is read with --token-file's checks
 * and watched as --token-file is (srv_token_watch): a Secret mounted in
 * the pod rotates the tenant's token; an inline token has no file to
 * watch (a new pod, or a token_file, rotates it).  On the loop thread (M_INLINE): nothing else runs
 * on the server's state meanwhile (before activation every other call is refused, and a readiness
 * probe running makes it refuse).  The tenant's state is built beside the warm one and replaces it
 * only when all of it worked; a refusal leaves the server warm, with the reason.
 *
 * Why the model cannot activate: M_HUMAN admits only the owner's unix
 * socket (SO_PEERCRED's uid, and wd_peer_check refusing a sandboxed
 * process) on a connection that never sent initialize; before activation
 * there is no sandbox and no model channel (stdio is refused with
 * --await-activation, HTTP answers 503); after it, a second activation
 * is refused whoever asks, so the tenant's token and workspace cannot be
 * swapped by anyone who reaches the socket later. */
json_t *
m_server_activate(struct call *c, struct rpc_err *e)
{
	struct srv *s = c->srv;
	static const char *const keys[] = {"workspace", "token",  "token_file",
					   "policy",	"tenant", NULL};
	const char *ws = NULL, *token = NULL, *tfile = NULL, *policy = NULL, *tenant = NULL;
	if (!s->o.await_activation) {
		rpc_err_set(e, SRV_E_FORBIDDEN,
			    "server.activate: this server was started with its workspace (it has "
			    "no --await-activation)");
		return NULL;
	}
	if (s->activated) {
		rpc_err_set(e, SRV_E_FORBIDDEN,
			    "server.activate: already activated (once only: a pod serves one "
			    "tenant for its life)");
		return NULL;
	}
	if (!p_only(c->params, keys, e) || !p_str(c->params, "workspace", true, &ws, e) ||
	    !p_str(c->params, "token", false, &token, e) ||
	    !p_str(c->params, "token_file", false, &tfile, e) ||
	    !p_str(c->params, "policy", false, &policy, e) ||
	    !p_str(c->params, "tenant", false, &tenant, e))
		return NULL;
	if (token && tfile) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: 'token' and 'token_file': give one");
		return NULL;
	}
	if (!s->o.listen && (token || tfile)) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: '%s': this server has no --listen (the token is "
			    "HTTP's bearer token)",
			    token ? "token" : "token_file");
		return NULL;
	}
	if (s->o.listen && !token && !tfile) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: 'token' is required (this server has --listen)");
		return NULL;
	}
	if (token && !token_fits(token)) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: 'token': must be 16 to 4096 printable characters "
			    "without spaces");
		return NULL;
	}
	if (tenant && !tenant_fits(tenant)) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: 'tenant': 1 to 63 of A-Z a-z 0-9 . _ -");
		return NULL;
	}
	if (ws[0] != '/' || (policy && policy[0] != '/') || (tfile && tfile[0] != '/')) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: '%s': an absolute path is required",
			    ws[0] != '/'	       ? "workspace"
			    : tfile && tfile[0] != '/' ? "token_file"
						       : "policy");
		return NULL;
	}
	/* the warm state's probe uses the context and the workspace: not
	 * swapped under it; and a pod whose level does not work is not
	 * claimed (it stays warm, unready, with the reason) */
	health_reap(s);
	pthread_mutex_lock(&s->health_lock);
	int h = s->health;
	char hwhy[sizeof(s->health_why)];
	memcpy(hwhy, s->health_why, sizeof(hwhy));
	pthread_mutex_unlock(&s->health_lock);
	if (s->probe_running || (s->o.listen && h != HEALTH_READY)) {
		rpc_err_set(e, SRV_E_NOT_AVAILABLE,
			    "server.activate: not ready: %s; activate when /readyz says ready",
			    h == HEALTH_UNREADY && !s->probe_running
				? hwhy
				: "the isolation level is being "
				  "probed");
		return NULL;
	}
	struct srv saved = {.ctx = s->ctx, .ws = s->ws, .policy = s->policy, .tools = s->tools};
	struct server_opts old_o = s->o;
	char *aws = xstrdup(ws), *apol = policy ? xstrdup(policy) : NULL;
	char *atok = tfile ? xstrdup(tfile) : NULL;
	s->ctx = NULL;
	s->ws = NULL;
	s->policy = NULL;
	s->tools = NULL;
	s->o.workspace = aws;
	if (apol)
		s->o.policy = apol;
	s->o.token_file = atok; /* srv_setup reads it (load_token), then it is watched */
	char why[512] = "";
	s->capture = why;
	s->capture_cap = sizeof(why);
	int rc = srv_setup(s, &s->o, false);
	s->capture = NULL;
	if (rc < 0) {
		tenant_drop(s);
		s->ctx = saved.ctx;
		s->ws = saved.ws;
		s->policy = saved.policy;
		s->tools = saved.tools;
		s->o = old_o;
		free(aws);
		free(apol);
		free(atok);
		if (s->token) {
			explicit_bzero(s->token, strlen(s->token));
			free(s->token);
			s->token = NULL;
		}
		/* the option's name is the parameter's here */
		const char *r = why[0] ? why : "the set-up failed (see the server's log)";
		if (!strncmp(r, "--workspace: ", 13) || !strncmp(r, "--policy: ", 10) ||
		    !strncmp(r, "--socket: ", 10))
			r += 2;
		else if (!strncmp(r, "--token-file: ", 14))
			r = (why[7] = '_', why + 2); /* "token_file: ...", the parameter */
		rpc_err_set(e, RPC_INVALID_PARAMS, "server.activate refused: %s", r);
		srv_log(s, WD_LOG_WARN, "server.activate refused: %s (still awaiting activation)",
			r);
		return NULL;
	}
	struct srv warm = {
	    .ctx = saved.ctx, .ws = saved.ws, .policy = saved.policy, .tools = saved.tools};
	tenant_drop(&warm);
	srv_attach_lib_log(s);
	if (rmdir(s->warm_dir) < 0)
		srv_log(s, WD_LOG_WARN, "--await-activation: %s: %s", s->warm_dir, strerror(errno));
	free(s->warm_dir);
	s->warm_dir = NULL;
	if (token)
		s->token = xstrdup(token);
	s->act_workspace = aws;
	s->act_token_file = atok;
	s->act_policy = apol;
	s->act_tenant = tenant ? xstrdup(tenant) : NULL;
	s->activated = true;
	srv_restore(s); /* this tenant's sessions of a server before this one */
	/* ready again only once the tenant's workspace, policy and image
	 * were seen to work: the warm probe built none of them */
	health_recheck(s);
	const char *path = wd_workspace_path(s->ws);
	srv_logf(s, WD_LOG_INFO,
		 json_pack("{s:s, s:o, s:o}", "workspace", path, "tenant",
			   tenant ? json_string(tenant) : json_null(), "policy",
			   s->o.policy ? json_string(s->o.policy) : json_null()),
		 "activated: workspace %s%s%s", path, tenant ? ", tenant " : "",
		 tenant ? tenant : "");
	return json_pack("{s:b, s:s, s:o, s:o}", "activated", 1, "workspace", path, "tenant",
			 tenant ? json_string(tenant) : json_null(), "policy",
			 s->o.policy ? json_string(s->o.policy) : json_null());
}

void
srv_fini(struct srv *s)
{
	srv_pool_stop(s); /* before its context */
	wd_ctx_free(s->ctx);
	wd_workspace_close(s->ws);
	wd_policy_free(s->policy);
	json_decref(s->tools);
	if (s->token) {
		explicit_bzero(s->token, strlen(s->token));
		free(s->token);
	}
	if (s->warm_dir)
		rmdir(s->warm_dir);
	free(s->warm_dir);
	free(s->act_workspace);
	free(s->act_policy);
	free(s->act_tenant);
	free(s->act_token_file);
	free(s->rec_dir);
	if (s->state_lock >= 0)
		close(s->state_lock);
	/* its sandboxes are gone (or, left by a failure, orphans the next
	 * server's sweep takes: no lock file is no server) */
	if (s->anon_lock >= 0) {
		unlink(s->anon_lock_path);
		close(s->anon_lock);
	}
	free(s->anon_lock_path);
	int fds[] = {s->ep, s->wake_fd, s->sig_fd, s->timer_fd};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pthread_mutex_destroy(&s->qlock);
	pthread_mutex_destroy(&s->wlock);
	pthread_cond_destroy(&s->wcv);
	pthread_cond_destroy(&s->idle_cv);
	pthread_mutex_destroy(&s->health_lock);
	free(s);
}
