/* server/harness: the JSON-RPC methods for programs (harnesses, SDKs):
 * the same operations as the MCP tools, shaped as data, plus live
 * sandboxes, the policy's answers and the human side of approvals.
 *
 *   sandbox.create / destroy          a live sandbox owned by the connection,
 *                                     direct or copy-on-write (workspace_mode)
 *   sandbox.read_file / write_file / edit_file / list_dir / search_files
 *                                     on the sandbox's view of the workspace
 *   (sandbox.diff / apply / discard: diff.c)
 *   policy.check, tool.route          what the policy would decide, nothing run
 *   approval.list, approval.grant     the owner's socket only (M_HUMAN)
 *   audit.verify                      the server's audit trail */
#include "server/harness.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/srv.h"
#include "server/sandbox.h"
#include "server/run.h"
#include "server/mcp.h"

#include <errno.h>
#include <sys/random.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- sandbox.create ---- */

/* One limit: at most the server's (its own or the library's default). */
static bool
limit(json_t *lim, const char *key, uint64_t scale, uint64_t server, uint64_t def, uint64_t *out,
      struct rpc_err *e)
{
	json_t *v = json_object_get(lim, key);
	if (!v)
		return true;
	uint64_t ceiling = server ? server : def;
	double d = json_number_value(v);
	if (!json_is_number(v) || d <= 0 || d * (double)scale > (double)ceiling)
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: limits.%s must be a number above 0 and at most "
				   "the server's %g",
				   key, (double)ceiling / (double)scale) == 0;
	*out = (uint64_t)(d * (double)scale);
	if (!*out)
		*out = 1;
	return true;
}

static bool
create_limits(struct srv *s, json_t *params, struct wd_limits *l, struct rpc_err *e)
{
	static const char *const keys[] = {"memory",	   "pids",     "cpus", "timeout",
					   "output_limit", "tmp_size", NULL};
	struct wd_limits lib_defaults;
	wd_limits_defaults(&lib_defaults);
	const struct wd_limits *sl = &s->o.limits, *d = &lib_defaults;
	*l = *sl;
	json_t *lim = json_object_get(params, "limits");
	if (!lim)
		return true;
	if (!json_is_object(lim))
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: 'limits' must be an object") == 0;
	return p_only(lim, keys, e) &&
	       limit(lim, "memory", 1, sl->memory_bytes, d->memory_bytes, &l->memory_bytes, e) &&
	       limit(lim, "pids", 1, sl->pids, d->pids, &l->pids, e) &&
	       limit(lim, "cpus", 1000000, sl->cpu_millionths, d->cpu_millionths,
		     &l->cpu_millionths, e) &&
	       limit(lim, "timeout", 1000, sl->timeout_ms, d->timeout_ms, &l->timeout_ms, e) &&
	       limit(lim, "output_limit", 1, sl->output_limit, d->output_limit, &l->output_limit,
		     e) &&
	       limit(lim, "tmp_size", 1, sl->tmp_bytes, d->tmp_bytes, &l->tmp_bytes, e);
}

/* The workspace of a new sandbox: "workspace_mode" ("direct", the
 * default, or "cow"), "disk" (a cow sandbox's, bytes or a size string
 * such as "2G", at most the server's --disk) and "protect" (more paths
 * kept read-only, as `warden create --protect`).  Bad input is -32602
 * naming the member, as the CLI names the option. */
static bool
create_workspace(struct srv *s, json_t *params, wd_spec *spec, bool *cow, uint64_t *disk,
		 struct rpc_err *e)
{
	const char *mode = "direct";
	struct wd_err err = {0};
	if (!p_str(params, "workspace_mode", false, &mode, e))
		return false;
	if (strcmp(mode, "direct") && strcmp(mode, "cow"))
		return rpc_err_set(
			   e, RPC_INVALID_PARAMS,
			   "Invalid params: 'workspace_mode' must be \"direct\" or \"cow\"") == 0;
	*cow = !strcmp(mode, "cow");
	wd_spec_set_workspace_mode(spec, *cow ? WD_WORKSPACE_COW : WD_WORKSPACE_DIRECT);
	uint64_t ceiling = s->o.disk_bytes ? s->o.disk_bytes : 1ull << 30;
	json_t *dv = json_object_get(params, "disk");
	/* An ordinary user's cow sandbox has no disk (a loop device and an
	 * ext4 mount need root): its layers are a directory in the state
	 * directory.  A bound asked for (the caller's "disk", the server's
	 * --disk) still goes to the library, which refuses it unless
	 * --best-effort: a limit asked for and not enforced fails closed. */
	bool root = geteuid() == 0;
	*disk = *cow ? ceiling : 0;
	if (dv) {
		/* a direct sandbox has no disk: nothing would bound (the CLI
		 * refuses --disk without --workspace-mode cow the same way) */
		if (!*cow)
			return rpc_err_set(
				   e, RPC_INVALID_PARAMS,
				   "Invalid params: 'disk' bounds a cow workspace's layers: "
				   "give it with \"workspace_mode\": \"cow\"") == 0;
		int rc = json_is_string(dv) ? wd_parse_size(json_string_value(dv), disk)
			 : json_is_integer(dv) && json_integer_value(dv) > 0
			     ? (*disk = (uint64_t)json_integer_value(dv), 0)
			     : -EINVAL;
		if (rc < 0 || *disk > ceiling || wd_spec_set_disk(spec, *disk, &err) < 0)
			return rpc_err_set(e, RPC_INVALID_PARAMS,
					   "Invalid params: 'disk' must be bytes (an integer) or a "
					   "size such as \"512M\", from 32M to the server's %llu "
					   "(--disk)",
					   (unsigned long long)ceiling) == 0;
	} else if (*cow && (root || s->o.disk_bytes) && wd_spec_set_disk(spec, ceiling, &err) < 0) {
		return rpc_err_set(e, SRV_E_FAILED, "%s", err.msg) == 0;
	}
	if (!root)
		*disk = 0; /* unbounded (with --best-effort, a bound asked is not kept) */
	json_t *pv = json_object_get(params, "protect");
	if (pv && !json_is_array(pv))
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: 'protect' must be an array of paths") == 0;
	size_t i;
	json_t *v;
	json_array_foreach(pv, i, v)
	{
		if (!json_is_string(v) ||
		    wd_spec_add_protected(spec, json_string_value(v), &err) < 0)
			return rpc_err_set(e, RPC_INVALID_PARAMS,
					   "Invalid params: protect[%zu]: %s", i,
					   json_is_string(v) ? err.msg : "must be a string") == 0;
	}
	return true;
}

static bool
create_env(json_t *params, wd_spec *spec, struct rpc_err *e)
{
	json_t *env = json_object_get(params, "env");
	if (env && !json_is_object(env))
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: 'env' must be an object") == 0;
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v)
	{
		struct wd_err err = {0};
		if (!json_is_string(v) || wd_spec_setenv(spec, k, json_string_value(v), &err) < 0)
			return rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: env.%.100s: %s",
					   k,
					   json_is_string(v) ? err.msg : "must be a string") == 0;
	}
	return true;
}

/* A live sandbox around sb (taken) and its view of the workspace. */
static struct live *
live_new(struct srv *s, wd_sandbox *sb, bool cow, struct rpc_err *e)
{
	struct wd_err err = {0};
	wd_workspace *ws = NULL;
	struct stat st;
	/* The view is opened once here for its identity, then closed: each
	 * file method opens it again (live_view), so an idle sandbox holds
	 * no descriptor for it. */
	int fd = -1;
	if (wd_sandbox_workspace(sb, &ws, &err) < 0 ||
	    (fd = wd_workspace_openat(ws, ".", O_PATH, &err)) < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0) {
			err.code = WD_E_SYS;
			err.sys_errno = errno;
			snprintf(err.msg, sizeof(err.msg), "workspace: %s", strerror(errno));
			close(fd);
		}
		wd_workspace_close(ws);
		wd_sandbox_destroy(sb);
		rpc_err_set(e, SRV_E_FAILED, "%s", err.msg);
		return NULL;
	}
	close(fd);
	wd_workspace_close(ws);
	struct live *lv = xcalloc(1, sizeof(*lv));
	snprintf(lv->id, sizeof(lv->id), "%s", wd_sandbox_id(sb));
	lv->sb = sb;
	lv->ws_dev = st.st_dev;
	lv->ws_ino = st.st_ino;
	lv->cow = cow;
	lv->srv = s;
	lv->refs = 1;
	pthread_mutex_init(&lv->lock, NULL);
	pthread_cond_init(&lv->cv, NULL);
	return lv;
}

/* The images a caller may choose: the server's --image and each
 * --allow-image, by the name the operator gave.  A JSON array. */
json_t *
srv_images_offered(const struct srv *s)
{
	json_t *a = json_array();
	if (s->o.image)
		json_array_append_new(a, json_string(s->o.image));
	for (size_t i = 0; i < s->o.nallow_images; i++)
		json_array_append_new(a, json_string(s->o.allow_images[i]));
	return a;
}

/* "image": the environment of a new sandbox.  Only what the operator
 * offers (--image, --allow-image): the store may hold images the operator
 * never meant a model to run in (another project's, one with tools it
 * must not have), and a name is a path component in the store, so a
 * caller's string is compared with the operator's names and never looked
 * up itself.  *out: the image (NULL: the host's /usr). */
static bool
create_image(struct srv *s, json_t *params, const char *nothing, const char **out,
	     struct rpc_err *e)
{
	const char *want = NULL;
	*out = s->o.image;
	if (!p_str(params, "image", false, &want, e))
		return false;
	if (!want)
		return true;
	bool ok = s->o.image && !strcmp(want, s->o.image);
	for (size_t i = 0; !ok && i < s->o.nallow_images; i++)
		ok = !strcmp(want, s->o.allow_images[i]);
	if (ok) {
		*out = want;
		return true;
	}
	/* the name is the caller's: quoted as JSON (escapes, ASCII), cut */
	json_t *js = json_string(want);
	char *q = js ? json_dumps(js, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
	json_decref(js);
	json_t *offered = srv_images_offered(s);
	char *list = json_array_size(offered) ? json_dumps(offered, JSON_COMPACT) : NULL;
	json_decref(offered);
	rpc_err_set(e, RPC_INVALID_PARAMS,
		    "Invalid params: image %.120s%s is not offered by this server; nothing was "
		    "%s. The operator offers an image with warden serve --image NAME (the "
		    "default) or --allow-image NAME; this server offers %s",
		    q ? q : "(not a string)", q && strlen(q) > 120 ? "..." : "", nothing,
		    list ? list : "none: every sandbox runs on the host's /usr");
	free(q);
	free(list);
	return false;
}

json_t *
h_sandbox_create(struct call *c, struct rpc_err *e)
{
	return sandbox_create_with(c, c->params, e);
}

json_t *
sandbox_create_with(struct call *c, json_t *params, struct rpc_err *e)
{
	static const char *const keys[] = {"limits", "env",	"reproducible", "workspace_mode",
					   "disk",   "protect", "image",	NULL};
	struct srv *s = c->srv;
	struct wd_err err = {0};
	struct wd_limits l;
	bool repro = false, cow = false;
	uint64_t disk = 0;
	const char *image = NULL;
	char digest[SRV_DIGEST_LEN] = "";
	if (!p_only(params, keys, e) || !create_limits(s, params, &l, e) ||
	    !p_bool(params, "reproducible", &repro, e) ||
	    !create_image(s, params, "created", &image, e))
		return NULL;
	wd_spec *spec = run_spec(s, &l, image, digest, &err);
	if (!spec) {
		rpc_err_set(e, SRV_E_FAILED, "%s", err.msg);
		return NULL;
	}
	wd_spec_set_reproducible(spec, repro);
	if (!create_workspace(s, params, spec, &cow, &disk, e) || !create_env(params, spec, e)) {
		wd_spec_free(spec);
		return NULL;
	}
	if (atomic_fetch_add(&s->nlive, 1) >= (int)s->o.max_live) {
		atomic_fetch_sub(&s->nlive, 1);
		wd_spec_free(spec);
		rpc_err_set(e, SRV_E_BUSY, "too many live sandboxes (%u, --max-sandboxes)",
			    s->o.max_live);
		return NULL;
	}
	/* Refused while the reserve is still free, not when open() fails
	 * half-way through the set-up: the sandboxes already live keep the
	 * descriptors their commands need (srv_fd_reserve). */
	long used = 0, limit = 0;
	unsigned long reserve = srv_fd_reserve(s);
	if (srv_fds(&used, &limit, (long)(SRV_FDS_PER_CALL + reserve)) < 0 ||
	    (unsigned long)(limit - used) < SRV_FDS_PER_CALL + reserve) {
		atomic_fetch_sub(&s->nlive, 1);
		wd_spec_free(spec);
		rpc_err_set(e, SRV_E_BUSY,
			    "not enough file descriptors for another sandbox: %ld of %ld "
			    "(RLIMIT_NOFILE) in use, %lu kept for the calls and the commands of "
			    "the %d live sandboxes; destroy one, or raise the limit (ulimit -n)",
			    used, limit, reserve, atomic_load(&s->nlive));
		return NULL;
	}
	wd_sandbox *sb = NULL;
	char sid[17] = "";
	int rc;
	/* A cow sandbox of a session that comes back after a restart
	 * (restore.c) is a library session: its monitor, not this process,
	 * holds its processes, and its layers are on a disk in the state
	 * directory.  A direct sandbox's changes are in the project already,
	 * and a one-connection sandbox ends with its connection: both stay
	 * in this process. */
	/* An ordinary user's cow sandbox is always a library session: its
	 * overlay is mounted in a user namespace (userxattr), which only a
	 * single-threaded process can enter, and this server has threads;
	 * the session's monitor enters one before it builds the sandbox.
	 * Without a record (c->persist false) it is anonymous: removed on
	 * destroy, when its connection ends and when the server stops
	 * (l->kept false), and a server started again removes one whose
	 * server is gone (srv_sweep_anon). */
	bool anon = cow && !c->persist && geteuid() != 0;
	if (cow && (c->persist || anon)) {
		/* named "serve-...": a session the server made, which a server
		 * restarted on the directory removes when no record names it
		 * (one made just before a crash: restore.c) */
		char name[64];
		unsigned char r[8];
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			abort();
		char rnd[17];
		snprintf(rnd, sizeof(rnd), "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
			 r[3], r[4], r[5], r[6], r[7]);
		if (anon)
			srv_anon_name(s, name, sizeof(name), rnd);
		else
			snprintf(name, sizeof(name), "serve-%s", rnd);
		struct wd_session_params sp = {
		    .name = name,
		    /* its monitor stops it (files kept) when no server uses it
		     * for as long as a session may idle: a server that never
		     * comes back leaves no processes for ever */
		    .idle_timeout_ms = s->o.session_idle_s * 1000ull + 60000,
		};
		rc = wd_session_create(s->ctx, spec, &sp, sid, &err);
	} else {
		rc = wd_sandbox_create(s->ctx, spec, &sb, &err);
	}
	/* -ENOTSUP: the host cannot give this sandbox what it asks (a cow
	 * workspace needs container isolation and overlayfs, and as root loop
	 * devices; a disk needs root) */
	if (rc < 0)
		rpc_err_set(e, rc == -ENOTSUP ? SRV_E_NOT_AVAILABLE : SRV_E_FAILED, "%s%s",
			    rc == -ENOTSUP ? "not available: " : "", err.msg);
	struct live *lv = rc < 0   ? NULL
			  : sid[0] ? live_new_session(s, sid, cow, !anon)
				   : live_new(s, sb, cow, e);
	if (!lv) {
		wd_spec_free(spec);
		atomic_fetch_sub(&s->nlive, 1);
		return NULL;
	}
	/* a session's is in its meta.json (wd_session_request) */
	if (sid[0])
		wd_spec_free(spec);
	else
		lv->spec = spec;
	lv->image = image ? xstrdup(image) : NULL;
	snprintf(lv->digest, sizeof(lv->digest), "%s", digest);
	c->created = lv; /* the loop puts it in the peer's table (dispatch_deliver) */
	json_t *r =
	    json_pack("{s:s, s:s, s:s, s:s}", "sandbox", lv->id, "workspace",
		      wd_workspace_path(s->ws), "isolation", wd_isolation_name(s->o.isolation),
		      "workspace_mode", cow ? "cow" : "direct");
	if (cow)
		json_object_set_new(r, "disk", json_integer((json_int_t)disk));
	json_object_set_new(r, "image", image ? json_string(image) : json_null());
	json_object_set_new(r, "image_digest", image ? json_string(digest) : json_null());
	return r;
}

json_t *
h_sandbox_destroy(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"sandbox", NULL};
	if (!p_only(c->params, keys, e))
		return NULL;
	struct live *l = c->live;
	c->live = NULL;
	json_t *r = json_pack("{s:s, s:b}", "sandbox", l->id, "destroyed", 1);
	live_end(l);
	return r;
}

json_t *
h_sandbox_files(struct call *c, struct rpc_err *e)
{
	/* the sandbox's own view: a direct sandbox's is the directory, a cow
	 * sandbox's its overlay (what it wrote, and where a write joins its
	 * change set); protected as its jail is */
	const char *tool = c->method + strlen("sandbox.");
	return live_file_tool(c, c->live, tool, c->params, false, e);
}

json_t *
live_file_tool(struct call *c, struct live *l, const char *tool, json_t *args, bool for_model,
	       struct rpc_err *e)
{
	struct wd_err err = {0};
	wd_workspace *ws = live_view(l, &err);
	if (!ws) {
		if (for_model) {
			char *text = xasprintf("sandbox %s: %s", l->id, err.msg);
			json_t *r = mcp_tool_result(c->srv, text, NULL, true);
			free(text);
			return r;
		}
		rpc_err_set(e, SRV_E_FAILED, "sandbox %s: %s", l->id, err.msg);
		return NULL;
	}
	json_t *r = file_tool(c, ws, tool, args, for_model, e);
	live_view_done(l, ws);
	return r;
}

/* ---- the policy's answers ---- */

static wd_policy *
load_policy(struct srv *s, struct rpc_err *e)
{
	struct wd_err err = {0};
	wd_policy *p = NULL;
	/* loaded again for each question: the answer is the file's as it is now */
	if (wd_policy_load(s->o.policy, &p, &err) < 0) {
		rpc_err_set(e, SRV_E_FAILED, "policy: %s", err.msg);
		return NULL;
	}
	return p;
}

static json_t *
parse_json_text(char *text)
{
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	free(text);
	return o ? o : json_object();
}

/* What the command would run in, on req: the live sandbox "sandbox" names
 * (its image and environment; a session's from its meta.json), else
 * image (the caller's "image", an offered one as sandbox.create takes it,
 * or the server's --image), else the policy's sandbox.image, as a run's
 * policy stage chooses.  Without it the answer was the host's: another
 * decision (programs looked up in another /usr) and an approval id no run
 * in the image ever pauses with. */
static int
check_sandbox(struct call *c, const wd_policy *p, const char *image, wd_request *req,
	      struct wd_err *err)
{
	struct srv *s = c->srv;
	struct live *l = c->live;
	if (l && l->sess)
		return wd_session_request(s->ctx, l->id, req, err);
	/* an in-process sandbox: also the state an approval would cover
	 * there (its own view and label), or the id is not its exec's */
	if (l && l->sb)
		return wd_sandbox_request(l->sb, req, err);
	if (l)
		return l->spec ? wd_request_set_spec(req, l->spec, err)
			       : err_set(err, EINVAL,
					 "sandbox %s: what it was made from is not "
					 "known here",
					 l->id);
	wd_spec *spec = run_spec(s, NULL, image, NULL, err);
	if (!spec)
		return -EINVAL;
	struct wd_policy_sandbox ps;
	wd_policy_sandbox(p, &ps);
	int rc = 0;
	struct wd_err ie = {0};
	if (!image && ps.image && (rc = wd_spec_set_image(spec, ps.image, &ie)) < 0)
		err_set(err, EINVAL, "policy sandbox.image: %s", ie.msg);
	if (rc == 0)
		rc = wd_request_set_spec(req, spec, err);
	wd_spec_free(spec);
	return rc;
}

json_t *
h_policy_check(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"command", "argv", "cwd", "sandbox", "image", NULL};
	struct srv *s = c->srv;
	struct wd_err err = {0};
	const char *command = NULL, *cwd = NULL, *image = NULL;
	json_t *argv = json_object_get(c->params, "argv");
	if (!p_only(c->params, keys, e) || !p_str(c->params, "command", false, &command, e) ||
	    !p_str(c->params, "cwd", false, &cwd, e))
		return NULL;
	if (!!command == !!argv) {
		rpc_err_set(
		    e, RPC_INVALID_PARAMS,
		    "Invalid params: give either 'command' (a string) or 'argv' (an array)");
		return NULL;
	}
	/* a live sandbox has its image: another named here would answer for
	 * a sandbox that is not the one its commands run in */
	if (c->live && json_object_get(c->params, "image")) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: give 'sandbox' or 'image', not both (a sandbox runs "
			    "in the image it was created with)");
		return NULL;
	}
	if (!c->live && !create_image(s, c->params, "judged", &image, e))
		return NULL;
	wd_request *req = wd_request_new();
	int rc = 0;
	if (command) {
		rc = wd_request_set_command(req, command, &err);
	} else {
		size_t n = json_is_array(argv) ? json_array_size(argv) : 0;
		const char **v = xcalloc(n + 1, sizeof(char *));
		bool ok = n > 0;
		for (size_t i = 0; i < n; i++)
			ok = ok && (v[i] = json_string_value(json_array_get(argv, i)));
		rc = ok ? wd_request_set_argv(req, (int)n, v, &err)
			: err_set(&err, EINVAL, "'argv' must be a non-empty array of strings");
		free(v);
	}
	if (rc == 0) {
		/* the directory the server holds, as its sandboxes get it (run.c) */
		char held[32];
		int hfd = rc = srv_workspace_hold(s, held, &err);
		if (hfd >= 0) {
			rc = wd_request_set_workspace(req, held, &err);
			close(hfd);
		}
	}
	if (rc == 0 && cwd)
		rc = wd_request_set_cwd(req, cwd, &err);
	json_t *res = NULL;
	wd_policy *p = rc == 0 ? load_policy(s, e) : NULL;
	wd_decision *d = NULL;
	if (rc < 0)
		rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: %s", err.msg);
	else if (p && check_sandbox(c, p, image, req, &err) < 0)
		rpc_err_set(e, SRV_E_FAILED, "%s", err.msg);
	else if (p && wd_policy_decide(p, req, &d, &err) < 0)
		rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: %s", err.msg);
	else if (p) {
		res = decision_json(d);
		json_object_set_new(res, "approved", json_boolean(wd_approval_recorded(d)));
	}
	wd_decision_free(d);
	wd_policy_free(p);
	wd_request_free(req);
	return res;
}

json_t *
h_tool_route(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"tool", NULL};
	static const char *const classes[] = {"blocked", "direct", "sandbox"};
	const char *tool = NULL;
	if (!p_only(c->params, keys, e) || !p_str(c->params, "tool", true, &tool, e))
		return NULL;
	wd_policy *p = load_policy(c->srv, e);
	if (!p)
		return NULL;
	enum wd_tool_class k = WD_TOOL_BLOCKED;
	const char *profile = NULL;
	struct wd_limits l = {0};
	struct wd_err err = {0};
	bool defined = wd_policy_route(p, tool, &k, &profile, &l, &err) == 0;
	json_t *r = json_pack("{s:s, s:s, s:b, s:s*, s:{s:I, s:I, s:I, s:I}}", "tool", tool,
			      "class", classes[k], "defined", defined, "profile", profile, "limits",
			      "timeout_ms", (json_int_t)l.timeout_ms, "memory",
			      (json_int_t)l.memory_bytes, "cpu_millionths",
			      (json_int_t)l.cpu_millionths, "output", (json_int_t)l.output_limit);
	wd_policy_free(p);
	return r;
}

/* ---- approvals: the human side ---- */

json_t *
h_approval_list(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {NULL};
	if (!p_only(c->params, keys, e))
		return NULL;
	char *out = NULL;
	struct wd_err err = {0};
	if (wd_approval_list(&out, &err) < 0) {
		rpc_err_set(e, SRV_E_FAILED, "%s", err.msg);
		return NULL;
	}
	return json_pack("{s:o}", "pending", parse_json_text(out));
}

json_t *
h_approval_grant(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"id", "ttl", NULL};
	const char *id = NULL;
	uint64_t ttl = 0;
	if (!p_only(c->params, keys, e) || !p_str(c->params, "id", true, &id, e) ||
	    !p_uint(c->params, "ttl", 7 * 86400, &ttl, e))
		return NULL;
	char *summary = NULL;
	struct wd_err err = {0};
	if (wd_approval_grant(id, (unsigned)ttl, NULL, &summary, &err) < 0) {
		rpc_err_set(e, err.code == WD_E_INVAL ? RPC_INVALID_PARAMS : SRV_E_FAILED, "%s",
			    err.msg);
		return NULL;
	}
	srv_log(c->srv, WD_LOG_INFO, "approval granted on the owner's socket: %.16s...", id);
	json_t *r = json_pack("{s:b, s:s}", "granted", 1, "summary", summary ? summary : "");
	free(summary);
	return r;
}

json_t *
h_audit_verify(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {NULL};
	struct srv *s = c->srv;
	if (!p_only(c->params, keys, e))
		return NULL;
	const char *path = s->o.audit ? s->o.audit : wd_policy_audit_path(s->policy);
	if (!path) {
		rpc_err_set(e, SRV_E_NOT_AVAILABLE,
			    "not available: this server keeps no audit trail (--audit FILE or the "
			    "policy's audit.path)");
		return NULL;
	}
	char *report = NULL;
	struct wd_err err = {0};
	int rc = wd_audit_verify(path, &report, &err);
	if (rc < 0) {
		rpc_err_set(e, SRV_E_FAILED, "%s", err.msg);
		free(report);
		return NULL;
	}
	json_t *r = json_pack("{s:s, s:b, s:s}", "path", path, "intact", rc == 0, "report",
			      report ? report : "");
	free(report);
	return r;
}
