/* server/run: commands.
 *
 *   run_command (MCP) and sandbox.run (harness): the library's one-shot
 *     pipeline (wd_ctx_run), so the policy's sandbox and network objects
 *     and tool profiles apply as for `warden run`, and a refused command
 *     costs no sandbox; notifications/cancelled kills the command and its
 *     sandbox through wd_cmd_set_cancel_fd().
 *   sandbox.exec (harness): one exec in a live sandbox of the peer
 *     (live_exec, which run_command with a "sandbox" uses too: session.c).
 *
 * Output streams while a command runs: the context's event handler gets
 * WD_EVENT_OUTPUT on the thread running the command, which is the
 * worker running the call (call_current()); each chunk becomes an MCP
 * progress notification (when the client sent a progressToken) or a
 * sandbox.output notification (harness, unless "stream": false). */
#include "server/run.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/sanitize.h"
#include "server/srv.h"
#include "server/sandbox.h"
#include "server/mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <stdio.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* ---- output streaming ---- */

static void stream_out(struct call *c, int stream, const char *buf, size_t len, const char *sid);

void
run_on_event(const wd_event *ev, void *data)
{
	struct call *c = call_current();
	if (!c || wd_event_kind(ev) != WD_EVENT_OUTPUT || (!c->progress && !c->stream))
		return;
	int stream = 1;
	size_t len = 0;
	const char *buf = wd_event_output(ev, &stream, &len);
	if (stream != 1 && stream != 2)
		return;
	stream_out(c, stream, buf, len, wd_event_sandbox_id(ev));
	(void)data;
}

/* A chunk of a command's output, as a notification of call c. */
static void
stream_out(struct call *c, int stream, const char *buf, size_t len, const char *sid)
{
	/* the unfinished tail of the last chunk (a UTF-8 character or an
	 * escape sequence cut in two) goes in front of this one */
	size_t total = c->carry_len[stream] + len;
	char *joined = xmalloc(total + 1);
	if (c->carry_len[stream])
		memcpy(joined, c->carry[stream], c->carry_len[stream]);
	memcpy(joined + c->carry_len[stream], buf, len);
	joined[total] = '\0';
	size_t used = 0, n = 0;
	char *text = c->progress ? sanitize_text(joined, total, false, &used, &n)
				 : utf8_visible(joined, total, false, &used, &n);
	free(c->carry[stream]);
	c->carry[stream] = NULL;
	c->carry_len[stream] = total - used;
	if (total > used) {
		/* bytes, not a string: the output may hold a NUL */
		c->carry[stream] = xmalloc(total - used);
		memcpy(c->carry[stream], joined + used, total - used);
	}
	free(joined);
	c->progress_n += len;
	json_t *msg = NULL;
	if (n && c->progress) {
		msg = rpc_notification("notifications/progress",
				       json_pack("{s:O, s:I, s:s}", "progressToken", c->progress,
						 "progress", (json_int_t)c->progress_n, "message",
						 text));
	} else if (n) {
		msg = rpc_notification("sandbox.output",
				       json_pack("{s:O, s:s, s:s, s:s%}", "id", c->id, "sandbox",
						 sid, "stream", stream == 1 ? "stdout" : "stderr",
						 "data", text, n));
	}
	free(text);
	if (msg)
		call_notify(c, msg);
}

/* A session's command streams through descriptors (wd_cmd_set_stream:
 * its monitor writes what the command prints), not through the
 * context's events: a thread turns them into notifications while it
 * runs, and reads what is left once it is done. */
struct pump {
	struct call *c;
	const char *sid;
	int rfd[2];
	int stop_efd;
};

static void *
pump_main(void *arg)
{
	struct pump *p = arg;
	struct pollfd f[3] = {{.fd = p->rfd[0], .events = POLLIN},
			      {.fd = p->rfd[1], .events = POLLIN},
			      {.fd = p->stop_efd, .events = POLLIN}};
	bool stopping = false;
	int open = 2;
	char buf[16384];
	while (open > 0) {
		int n = poll(f, 3, stopping ? 0 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* stopping, and nothing more to read */
		if (f[2].revents) {
			stopping = true;
			f[2].fd = -1;
		}
		for (int i = 0; i < 2; i++) {
			if (f[i].fd < 0 || !(f[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = read(f[i].fd, buf, sizeof(buf));
			if (r > 0)
				stream_out(p->c, i + 1, buf, (size_t)r, p->sid);
			else if (r == 0 || errno != EAGAIN) {
				f[i].fd = -1;
				open--;
			}
		}
	}
	return NULL;
}

static int
session_exec(struct call *c, struct live *l, wd_cmd *cmd, wd_result **out, struct wd_err *err)
{
	struct pump p = {.c = c, .sid = l->id, .rfd = {-1, -1}, .stop_efd = -1};
	int wfd[2] = {-1, -1};
	pthread_t t;
	bool pumping = false;
	if (c->progress || c->stream) {
		int a[2], b[2];
		if (pipe2(a, O_CLOEXEC) == 0) {
			if (pipe2(b, O_CLOEXEC) == 0) {
				p.rfd[0] = a[0], wfd[0] = a[1];
				p.rfd[1] = b[0], wfd[1] = b[1];
			} else {
				close(a[0]);
				close(a[1]);
			}
		}
		p.stop_efd = eventfd(0, EFD_CLOEXEC);
		if (p.rfd[0] >= 0 && p.stop_efd >= 0) {
			fcntl(p.rfd[0], F_SETFL, O_NONBLOCK);
			fcntl(p.rfd[1], F_SETFL, O_NONBLOCK);
			pumping = pthread_create(&t, NULL, pump_main, &p) == 0;
		}
		if (pumping)
			wd_cmd_set_stream(cmd, wfd[0], wfd[1]);
	}
	int rc = wd_session_exec(c->srv->ctx, l->id, cmd, out, err);
	if (rc == -ESRCH && live_session_start(l, err) == 0)
		rc = wd_session_exec(c->srv->ctx, l->id, cmd, out, err);
	for (int i = 0; i < 2; i++)
		if (wfd[i] >= 0)
			close(wfd[i]);
	if (pumping) {
		uint64_t one = 1;
		(void)!write(p.stop_efd, &one, sizeof(one));
		pthread_join(t, NULL);
	}
	for (int i = 0; i < 2; i++)
		if (p.rfd[i] >= 0)
			close(p.rfd[i]);
	if (p.stop_efd >= 0)
		close(p.stop_efd);
	return rc;
}

/* ---- specs and commands ---- */

uint64_t
server_timeout_ms(const struct srv *s)
{
	struct wd_limits d;
	wd_limits_defaults(&d);
	return s->o.limits.timeout_ms ? s->o.limits.timeout_ms : d.timeout_ms;
}

int
srv_image_digest(struct srv *s, const char *ref, char *out, struct wd_err *err)
{
	char *js = NULL;
	if (wd_image_inspect(s->ctx, ref, &js, err) < 0)
		return -EINVAL;
	json_t *j = json_loads(js, 0, NULL);
	free(js);
	const char *d = json_string_value(json_object_get(j, "digest"));
	int rc = 0;
	if (!d || strlen(d) != 64)
		rc = err_set(err, EINVAL, "image %s: its metadata names no digest", ref);
	else
		snprintf(out, SRV_DIGEST_LEN, "sha256:%s", d);
	json_decref(j);
	return rc;
}

const char *
srv_run_image(const struct srv *s, const struct route *rt)
{
	return rt && rt->image ? rt->image : s->o.image;
}

int
srv_workspace_hold(struct srv *s, char name[static 32], struct wd_err *err)
{
	/* Why: the server keeps its workspace as a path, canonical at start,
	 * and each sandbox it makes names the workspace to the library.  A
	 * sandbox over a directory above it (a one-shot `warden run` over
	 * the project, another server) can rename a component and leave a
	 * link to any host directory in its place: followed, every later
	 * command ran with that directory bound read-write as /workspace.
	 * So the path must still lead, link-free, to the very directory the
	 * server holds (its file tools' view), else the call is refused with
	 * a message a human can act on.  And what the library gets is that
	 * held directory (/proc/self/fd/N), not the path: the library used
	 * to walk the path again after this check, following a link planted
	 * in between; from the descriptor it takes the directory's own name
	 * and checks that it leads there link-free (wd_spec_set_workspace);
	 * the jail then opens that name without following links either
	 * (jail/build.c). */
	const char *path = wd_workspace_path(s->ws);
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int now = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	int e = errno;
	int held = wd_workspace_openat(s->ws, ".", O_PATH, NULL);
	struct stat a, b;
	bool same = now >= 0 && held >= 0 && fstat(now, &a) == 0 && fstat(held, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	if (now >= 0)
		close(now);
	if (same) {
		snprintf(name, 32, "/proc/self/fd/%d", held);
		return held;
	}
	if (held >= 0)
		close(held);
	err_set(err, now < 0 ? e : 0,
		"the server's workspace '%s' no longer leads to the directory the server "
		"started on (%s); refused rather than followed: put the directory back or "
		"restart the server",
		path,
		now < 0 && e == ELOOP ? "a symbolic link in its path"
		: now < 0	      ? strerror(e)
				      : "another directory in its place");
	return -EINVAL;
}

wd_spec *
run_spec(struct srv *s, const struct wd_limits *lim, const char *image, char *digest,
	 struct wd_err *err)
{
	char d[SRV_DIGEST_LEN];
	/* The name is resolved here, once, and the spec names the digest: a
	 * later `warden image build` that points the name at another tree
	 * changes no sandbox made from this spec (and what create reports is
	 * what it runs in). */
	if (image && srv_image_digest(s, image, d, err) < 0)
		return NULL;
	wd_spec *spec = wd_spec_new();
	if (image && wd_spec_set_image(spec, d, err) < 0) {
		wd_spec_free(spec);
		return NULL;
	}
	if (digest)
		snprintf(digest, SRV_DIGEST_LEN, "%s", image ? d : "");
	char held[32];
	int hfd = srv_workspace_hold(s, held, err);
	int rc = hfd < 0 ? hfd : wd_spec_set_workspace(spec, held, err);
	if (hfd >= 0)
		close(hfd);
	if (rc < 0) {
		wd_spec_free(spec);
		return NULL;
	}
	wd_spec_set_isolation(spec, s->o.isolation);
	wd_spec_set_limits(spec, lim ? lim : &s->o.limits);
	wd_spec_set_best_effort(spec, s->o.best_effort);
	/* --protect (checked by the CLI); the policy's workspace.protect is
	 * the library's to add, from the context's policy */
	for (size_t i = 0; i < s->o.nprotect; i++)
		if (wd_spec_add_protected(spec, s->o.protect[i], err) < 0) {
			wd_spec_free(spec);
			return NULL;
		}
	/* --allow-range (checked by the CLI), as warden run's: the policy's
	 * network.allow_ranges are the library's to add */
	for (size_t i = 0; i < s->o.nranges; i++)
		if (wd_spec_add_net_rule(spec, WD_NET_RANGE, s->o.ranges[i], err) < 0) {
			wd_spec_free(spec);
			return NULL;
		}
	return spec;
}

/* Arm the call's cancellation for cmd: an eventfd the canceller writes
 * to (wd_cmd_set_cancel_fd).  -1: already cancelled, or no eventfd. */
static int
arm_cancel(struct call *c, wd_cmd *cmd, struct wd_err *err)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return err_set(err, errno, "eventfd: %s", strerror(errno));
	pthread_mutex_lock(&c->lock);
	bool cancelled = c->cancelled;
	if (!cancelled)
		c->cancel_efd = efd;
	pthread_mutex_unlock(&c->lock);
	if (cancelled) {
		close(efd);
		return err_set(err, ECANCELED, "cancelled");
	}
	wd_cmd_set_cancel_fd(cmd, efd);
	return efd;
}

static void
disarm_cancel(struct call *c, int efd)
{
	pthread_mutex_lock(&c->lock);
	c->cancel_efd = -1;
	pthread_mutex_unlock(&c->lock);
	close(efd);
}

/* Run cmd through the library's one-shot pipeline (wd_ctx_run: decide,
 * and only if allowed build the sandbox the policy says, run, tear down),
 * cancellable: the call's cancellation kills the command at once, and
 * its sandbox with it.  0 with *out, or -errno with err (-ECANCELED:
 * cancelled before it started). */
int
run_oneshot(struct call *c, const wd_spec *spec, wd_cmd *cmd, wd_result **out, struct wd_err *err)
{
	int efd = arm_cancel(c, cmd, err);
	if (efd < 0)
		return efd;
	int rc = wd_ctx_run(c->srv->ctx, spec, cmd, out, err);
	disarm_cancel(c, efd);
	return rc;
}

/* The same from the warm pool (pool.c): wd_pool_run() honours the cancel
 * fd while it waits for an instance and while the command runs. */
int
run_pooled(struct call *c, wd_cmd *cmd, wd_result **out, struct wd_err *err)
{
	int efd = arm_cancel(c, cmd, err);
	if (efd < 0)
		return efd;
	int rc = srv_pool_run(c->srv, cmd, out, err);
	disarm_cancel(c, efd);
	return rc;
}

/* ---- run_command (MCP) ---- */

/* run_command's command and cwd as a command for the policy stage (a
 * command string: always judged, in a fresh sandbox or a live one); a
 * policy that defines a "run_command" tool gives its route and resource
 * profile (*routed), otherwise the command alone is judged.  0, or -errno
 * with err naming what is wrong. */
int
run_command_cmd(json_t *args, const struct route *rt, wd_cmd *cmd, struct wd_err *err)
{
	const char *command = json_string_value(json_object_get(args, "command"));
	const char *cwd = json_string_value(json_object_get(args, "cwd"));
	int rc = wd_cmd_set_command(cmd, command, err);
	if (rc == 0 && cwd)
		rc = wd_cmd_set_cwd(cmd, cwd, err);
	if (rc == 0 && rt->defined)
		rc = wd_cmd_set_tool(cmd, rt->tool, err);
	return rc;
}

json_t *
run_command_tool(struct call *c, json_t *args, struct rpc_err *e)
{
	struct srv *s = c->srv;
	struct wd_err err = {0};
	json_t *tv = json_object_get(args, "timeout");
	uint64_t timeout = server_timeout_ms(s);
	if (tv && json_number_value(tv) * 1000.0 < (double)timeout)
		timeout = (uint64_t)(json_number_value(tv) * 1000.0);
	if (timeout < 1)
		timeout = 1;
	wd_cmd *cmd = wd_cmd_new();
	wd_spec *spec = NULL;
	wd_result *r = NULL;
	json_t *res = NULL;
	if (run_command_cmd(args, &c->route, cmd, &err) < 0) {
		char text[400];
		snprintf(text, sizeof(text), "invalid arguments for run_command: %s", err.msg);
		res = mcp_tool_result(s, text, NULL, true);
		goto out;
	}
	wd_cmd_set_timeout(cmd, timeout);
	/* the tool's image, or the server's: a name that is gone is the
	 * operator's to fix, said to the model as a tool error */
	const char *image = srv_run_image(s, &c->route);
	if (!(spec = run_spec(s, NULL, image, NULL, &err))) {
		char text[400];
		snprintf(text, sizeof(text), "warden could not run the command: %s", err.msg);
		res = mcp_tool_result(s, text, NULL, true);
		goto out;
	}
	/* The warm pool when this call's sandbox is the pool's template; a
	 * call the policy or its tool profile gives another sandbox (other
	 * limits, egress) runs fresh, deliberately: never in an instance built
	 * for other limits (srv_pool_fits says why, pool.c) */
	bool pooled = srv_pool_fits(s, true, &c->route);
	int rc = pooled ? run_pooled(c, cmd, &r, &err) : run_oneshot(c, spec, cmd, &r, &err);
	if (rc < 0) {
		if (call_cancelled(c))
			goto out;
		char text[400];
		snprintf(text, sizeof(text), "warden could not run the command: %s", err.msg);
		res = mcp_tool_result(s, text, NULL, true);
		goto out;
	}
	res = result_for_model(s, r);
	json_object_set_new(json_object_get(res, "structuredContent"), "pooled",
			    json_boolean(pooled));
out:
	(void)e; /* every failure is a tool result, for the model to read */
	wd_result_free(r);
	wd_spec_free(spec);
	wd_cmd_free(cmd);
	return res;
}

/* ---- the harness: sandbox.run and sandbox.exec ---- */

static bool
env_params(json_t *params, wd_cmd *cmd, struct rpc_err *e)
{
	json_t *env = json_object_get(params, "env");
	if (!env)
		return true;
	if (!json_is_object(env))
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: 'env' must be an object of strings") == 0;
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v)
	{
		struct wd_err err = {0};
		if (!json_is_string(v))
			return rpc_err_set(e, RPC_INVALID_PARAMS,
					   "Invalid params: env.%.100s must be a string", k) == 0;
		if (wd_cmd_setenv(cmd, k, json_string_value(v), &err) < 0)
			return rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: env: %s",
					   err.msg) == 0;
	}
	return true;
}

/* The command of a harness request: "command" (a string, always judged)
 * or "argv" (judged when "policy" is true), cwd, env, timeout (seconds,
 * at most the server's), output_limit, tool, stream. */
static wd_cmd *
harness_cmd(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"sandbox", "command",      "argv",	"cwd",
					   "env",     "timeout",      "policy", "tool",
					   "stream",  "output_limit", NULL};
	struct srv *s = c->srv;
	struct wd_err err = {0};
	const char *command = NULL, *cwd = NULL, *tool = NULL;
	bool policy = false, stream = true;
	uint64_t output = 0;
	json_t *argv = json_object_get(c->params, "argv");
	json_t *tv = json_object_get(c->params, "timeout");
	if (!p_only(c->params, keys, e) || !p_str(c->params, "command", false, &command, e) ||
	    !p_str(c->params, "cwd", false, &cwd, e) ||
	    !p_str(c->params, "tool", false, &tool, e) ||
	    !p_bool(c->params, "policy", &policy, e) || !p_bool(c->params, "stream", &stream, e) ||
	    !p_uint(c->params, "output_limit", 16u << 20, &output, e))
		return NULL;
	if (!!command == !!argv) {
		rpc_err_set(
		    e, RPC_INVALID_PARAMS,
		    "Invalid params: give either 'command' (a string) or 'argv' (an array)");
		return NULL;
	}
	if (tv && (!json_is_number(tv) || json_number_value(tv) <= 0)) {
		rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: 'timeout' must be seconds > 0");
		return NULL;
	}
	wd_cmd *cmd = wd_cmd_new();
	int rc = 0;
	if (command) {
		rc = wd_cmd_set_command(cmd, command, &err);
	} else {
		size_t n = json_is_array(argv) ? json_array_size(argv) : 0;
		const char **v = xcalloc(n + 1, sizeof(char *));
		for (size_t i = 0; i < n; i++)
			v[i] = json_string_value(json_array_get(argv, i));
		bool ok = n > 0 && n < 65536;
		for (size_t i = 0; i < n; i++)
			ok = ok && v[i];
		if (!ok)
			rc = err_set(&err, EINVAL, "'argv' must be a non-empty array of strings");
		else
			rc = wd_cmd_set_argv(cmd, (int)n, v, &err);
		free(v);
		/* an MCP session never gets here with an argv (admit); if it
		 * did, the policy would judge it all the same */
		wd_cmd_set_policy(cmd, policy || c->mcp);
	}
	if (rc == 0 && cwd)
		rc = wd_cmd_set_cwd(cmd, cwd, &err);
	if (rc == 0 && tool)
		rc = wd_cmd_set_tool(cmd, tool, &err);
	if (rc < 0 || !env_params(c->params, cmd, e)) {
		if (rc < 0)
			rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: %s", err.msg);
		wd_cmd_free(cmd);
		return NULL;
	}
	uint64_t timeout = server_timeout_ms(s);
	if (tv && json_number_value(tv) * 1000.0 < (double)timeout)
		timeout = (uint64_t)(json_number_value(tv) * 1000.0);
	wd_cmd_set_timeout(cmd, timeout ? timeout : 1);
	if (output)
		wd_cmd_set_output_limit(cmd, output);
	c->stream = stream;
	return cmd;
}

json_t *
run_harness(struct call *c, struct rpc_err *e)
{
	struct wd_err err = {0};
	if (json_object_get(c->params, "sandbox")) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: sandbox.run makes its own sandbox; use sandbox.exec");
		return NULL;
	}
	wd_cmd *cmd = harness_cmd(c, e);
	if (!cmd)
		return NULL;
	const char *tool = json_string_value(json_object_get(c->params, "tool"));
	/* its route, once for the call */
	struct route rt;
	route_lookup(c->srv, tool, &rt);
	wd_spec *spec = run_spec(c->srv, NULL, srv_run_image(c->srv, &rt), NULL, &err);
	wd_result *r = NULL;
	json_t *res = NULL;
	/* from the warm pool when the run's sandbox is its template (a
	 * command string, a tool or "policy": true go through the policy
	 * stage), else fresh, as for run_command */
	bool judged = json_object_get(c->params, "command") || tool ||
		      json_is_true(json_object_get(c->params, "policy"));
	bool pooled = spec && srv_pool_fits(c->srv, judged, tool ? &rt : NULL);
	int rc = -EINVAL;
	if (pooled)
		rc = run_pooled(c, cmd, &r, &err);
	else if (spec)
		rc = run_oneshot(c, spec, cmd, &r, &err);
	if (rc == 0) {
		res = result_for_harness(r);
		json_object_set_new(res, "pooled", json_boolean(pooled));
	} else
		rpc_err_set(e, SRV_E_FAILED, "%s", err.msg);
	wd_result_free(r);
	wd_spec_free(spec);
	wd_cmd_free(cmd);
	return res;
}

int
live_exec(struct call *c, struct live *l, wd_cmd *cmd, wd_result **out, struct wd_err *err)
{
	pthread_mutex_lock(&l->lock);
	l->running++;
	pthread_mutex_unlock(&l->lock);
	/* a cancel ends this command (its process group), not the sandbox */
	int efd = arm_cancel(c, cmd, err);
	int rc = efd;
	if (efd >= 0) {
		rc = l->sess ? session_exec(c, l, cmd, out, err)
			     : wd_sandbox_exec(l->sb, cmd, out, err);
		disarm_cancel(c, efd);
	}
	pthread_mutex_lock(&l->lock);
	l->running--;
	pthread_mutex_unlock(&l->lock);
	return rc;
}

json_t *
exec_harness(struct call *c, struct rpc_err *e)
{
	struct wd_err err = {0};
	wd_cmd *cmd = harness_cmd(c, e);
	if (!cmd)
		return NULL;
	struct live *l = c->live;
	wd_result *r = NULL;
	int rc = live_exec(c, l, cmd, &r, &err);
	json_t *res = NULL;
	if (rc == 0)
		res = result_for_harness(r);
	else
		rpc_err_set(e, SRV_E_FAILED, "sandbox %s: %s", l->id, err.msg);
	wd_result_free(r);
	wd_cmd_free(cmd);
	return res;
}
