/* server/session: the MCP tools on live sandboxes.
 *
 *   sandbox_create     a live sandbox for this peer (sandbox.create's
 *                      machinery: the same limits, the --max-sandboxes cap),
 *                      copy-on-write by default where the host can make one
 *   sandbox_list       this peer's live sandboxes
 *   sandbox_destroy    ends one
 *   workspace_discard  drops a cow sandbox's changes (all, or some paths)
 *   run_command, read_file, write_file, edit_file, list_dir, search_files,
 *   workspace_diff     with a "sandbox" argument: in that sandbox (a
 *                      policy-checked exec, as sandbox.exec with a command
 *                      string), on its view of the workspace (a cow
 *                      sandbox's overlay, protected as its jail is), its
 *                      change set
 *
 * There is no tool to apply a change set: what reaches the project is a
 * human's decision, made on the human's channel (sandbox.apply on the
 * owner's unix socket, which may name any peer's sandbox: dispatch.c,
 * M_ANY_PEER), never on the channel the model speaks on.
 *
 * Which sandbox a call names is settled on the loop thread, which owns
 * the peers' tables (session_admit): a reference goes to the call, so
 * the sandbox stays whole while the call runs.  An id this peer does not
 * have is not a JSON-RPC error but a tool error naming it: the model reads
 * it and can correct itself (it may have been destroyed, or belong to
 * another connection, which it must not reach). */
#include "server/mcp.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/schema.h"
#include "server/tools.h"
#include "server/srv.h"
#include "server/sandbox.h"
#include "server/run.h"
#include "server/harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static json_t *
list_lives(const struct peer *p)
{
	json_t *a = json_array();
	for (const struct live *l = p->lives; l; l = l->next)
		json_array_append_new(
		    a, json_pack("{s:s, s:s, s:s, s:s?, s:s?}", "sandbox", l->id, "workspace_mode",
				 l->cow ? "cow" : "direct", "created_by",
				 l->by_mcp ? "sandbox_create" : "sandbox.create", "image", l->image,
				 "image_digest", l->image ? l->digest : NULL));
	return a;
}

void
session_admit(struct peer *p, struct call *c)
{
	const char *name = json_string_value(json_object_get(c->params, "name"));
	json_t *args = json_object_get(c->params, "arguments");
	const struct mcp_tool *t = name ? mcp_tool_find(name) : NULL;
	if (!t)
		return; /* tools/call says it is unknown */
	if (t->flags & MCP_T_LISTS) {
		c->lives = list_lives(p);
		return;
	}
	const char *id = json_string_value(json_object_get(args, "sandbox"));
	if (!id)
		return;
	struct live **lp = &p->lives;
	while (*lp && strcmp((*lp)->id, id))
		lp = &(*lp)->next;
	if (!*lp)
		return; /* the tool says so (session_tool) */
	if (!(t->flags & MCP_T_TAKES)) {
		c->live = live_get(*lp);
		return;
	}
	/* sandbox_destroy takes it out of the table now, so that nothing
	 * admitted after it can reach it; only when the call will run, that
	 * is when its arguments are what the schema says and the tool is
	 * offered (else the table keeps it) */
	char why[8];
	const json_t *schema = mcp_tool_schema(name);
	if (!schema || !json_is_object(args) || schema_check(schema, args, why, sizeof(why)) < 0 ||
	    mcp_tool_blocked(p->srv, name))
		return;
	c->live = *lp; /* the table's reference moves to the call */
	*lp = (*lp)->next;
	c->live->next = NULL;
	if (c->live->sess)
		record_save(p->srv, p);
}

static json_t *tool_error(struct srv *s, const char *fmt, ...) SRV_PRINTF(2, 3);

static json_t *
tool_error(struct srv *s, const char *fmt, ...)
{
	char text[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return mcp_tool_result(s, text, NULL, true);
}

/* ---- sandbox_create ---- */

json_t *
session_create(struct call *c, const char *name, json_t *args, struct rpc_err *e)
{
	(void)name;
	(void)e;
	struct srv *s = c->srv;
	const char *mode = json_string_value(json_object_get(args, "workspace_mode"));
	json_t *params = json_pack("{s:s}", "workspace_mode", mode ? mode : "cow");
	json_t *lim = json_object_get(args, "limits");
	if (lim)
		json_object_set(params, "limits", lim);
	json_t *img = json_object_get(args, "image");
	if (img)
		json_object_set(params, "image", img);
	struct rpc_err ce = {0};
	json_t *r = sandbox_create_with(c, params, &ce);
	char fallback[700] = "";
	if (!r && !mode && ce.code == SRV_E_NOT_AVAILABLE) {
		/* the default is cow where the host can make one (container
		 * isolation and overlayfs; as root, loop devices); elsewhere a
		 * direct sandbox, and the model is told its writes are real */
		snprintf(
		    fallback, sizeof(fallback),
		    "\nA copy-on-write workspace is not available on this host (%.400s), so this "
		    "sandbox is direct: what it writes goes to the project at once.",
		    ce.msg);
		json_decref(ce.data);
		ce = (struct rpc_err){0};
		json_object_set_new(params, "workspace_mode", json_string("direct"));
		r = sandbox_create_with(c, params, &ce);
	}
	json_decref(params);
	if (!r) {
		json_decref(ce.data);
		if (ce.code == SRV_E_BUSY)
			return tool_error(
			    s,
			    "%s. Destroy a sandbox you no longer need (sandbox_destroy; "
			    "sandbox_list shows yours), or run without one.",
			    ce.msg);
		if (ce.code == RPC_INVALID_PARAMS || ce.code == SRV_E_NOT_AVAILABLE)
			return tool_error(s, "sandbox_create: %s", ce.msg);
		/* warden failed: still a tool result, as run_command's are */
		return tool_error(s, "warden could not create the sandbox: %s", ce.msg);
	}
	c->created->by_mcp = true;
	bool cow = c->created->cow;
	char in_image[200] = "";
	if (c->created->image)
		snprintf(in_image, sizeof(in_image), ", image %s", c->created->image);
	char *text = xasprintf(
	    "sandbox %s created (workspace_mode %s%s). Pass \"sandbox\": \"%s\" to run_command, "
	    "the file tools and workspace_diff to work in it; packages you install and files in "
	    "/tmp stay between commands.%s%s",
	    c->created->id, cow ? "cow" : "direct", in_image, c->created->id,
	    cow ? " Its workspace is a copy-on-write layer: your changes reach the project only "
		  "when a human reviews and applies them (workspace_diff shows them; "
		  "workspace_discard drops them)."
		: " Its workspace is the project itself: writes are real at once.",
	    fallback);
	json_t *res = mcp_tool_result(s, text, r, false);
	free(text);
	return res;
}

/* ---- run_command in a live sandbox ---- */

static json_t *
run_tool(struct call *c, struct live *l, json_t *args, struct rpc_err *e)
{
	struct srv *s = c->srv;
	struct wd_err err = {0};
	json_t *tv = json_object_get(args, "timeout");
	wd_cmd *cmd = wd_cmd_new();
	wd_result *r = NULL;
	json_t *res = NULL;
	/* a command string: always judged by the policy, as in a fresh
	 * sandbox, with the policy's "run_command" tool route if it has one */
	int rc = run_command_cmd(args, &c->route, cmd, &err);
	if (rc < 0) {
		res = tool_error(s, "invalid arguments for run_command: %s", err.msg);
		goto out;
	}
	/* no timeout: the sandbox's own (sandbox_create's limits, at most the
	 * server's); one given is capped at the server's */
	if (tv) {
		uint64_t most = server_timeout_ms(s);
		double ms = json_number_value(tv) * 1000.0;
		wd_cmd_set_timeout(cmd, ms < (double)most ? (ms >= 1 ? (uint64_t)ms : 1) : most);
	}
	rc = live_exec(c, l, cmd, &r, &err);
	if (rc < 0) {
		if (!call_cancelled(c))
			res = tool_error(s, "warden could not run the command in sandbox %s: %s",
					 l->id, err.msg);
		goto out;
	}
	res = result_for_model(s, r);
	/* the same fields as run_command without a sandbox: a live sandbox
	 * is never the pool's */
	json_object_set_new(json_object_get(res, "structuredContent"), "pooled", json_false());
out:
	(void)e;
	wd_result_free(r);
	wd_cmd_free(cmd);
	return res;
}

/* ---- a cow sandbox's change set ---- */

static bool
need_cow(struct srv *s, const struct live *l, const char *what, json_t **res)
{
	if (l->cow)
		return true;
	*res = tool_error(s,
			  "sandbox %s has a direct workspace: what it wrote is in the project "
			  "already, so there is no change set to %s (create a sandbox with "
			  "workspace_mode cow to keep one)",
			  l->id, what);
	return false;
}

/* The "paths" argument (schema-checked: an array of strings) as an
 * array of borrowed strings, *n of them. */
static const char **
arg_paths(json_t *args, size_t *n)
{
	json_t *a = json_object_get(args, "paths");
	*n = json_array_size(a);
	const char **v = xcalloc(*n + 1, sizeof(char *));
	for (size_t i = 0; i < *n; i++)
		v[i] = json_string_value(json_array_get(a, i));
	return v;
}

static json_t *
cow_diff_tool(struct call *c, struct live *l, json_t *args)
{
	struct srv *s = c->srv;
	struct wd_err err = {0};
	const char *path = json_string_value(json_object_get(args, "path"));
	const char *const *paths = path ? &path : NULL;
	size_t n = path ? 1 : 0;
	char *js = NULL, *text = NULL;
	if (live_diff(l, paths, n, WD_DIFF_JSON, &js, &err) < 0 ||
	    live_diff(l, paths, n, 0, &text, &err) < 0) {
		free(js);
		return tool_error(s, "workspace_diff of sandbox %s: %s", l->id, err.msg);
	}
	wd_report *rep = NULL;
	if (wd_report_new(js, &rep, &err) < 0) {
		free(js);
		free(text);
		return tool_error(s, "workspace_diff of sandbox %s: %s", l->id, err.msg);
	}
	free(js);
	/* the list is bounded for a model as the text is (diff_text_capped) */
	json_t *sc = report_embed(rep, DIFF_MODEL_FILES);
	json_object_set_new(sc, "sandbox", json_string(l->id));
	json_object_set_new(sc, "mode", json_string("cow"));
	size_t changes = wd_report_files(rep);
	if (changes > DIFF_MODEL_FILES)
		json_object_set_new(sc, "files_omitted",
				    json_integer((json_int_t)(changes - DIFF_MODEL_FILES)));
	/* only ignored changes: the summary lines are the text */
	if (!changes && wd_report_ignored(rep))
		changes = 1;
	wd_report_free(rep);
	char *out = changes ? xasprintf("changes in sandbox %s, not in the project until a human "
					"applies them:\n%s",
					l->id, text)
			    : xasprintf("no changes in sandbox %s", l->id);
	free(text);
	char *capped = diff_text_capped(out);
	free(out);
	json_t *res = mcp_tool_result(s, capped, sc, false);
	free(capped);
	return res;
}

static json_t *
discard_tool(struct call *c, struct live *l, json_t *args)
{
	struct srv *s = c->srv;
	json_t *res = NULL;
	if (!need_cow(s, l, "discard", &res))
		return res;
	size_t n = 0;
	const char **paths = arg_paths(args, &n);
	struct wd_err err = {0};
	int rc = live_discard(l, paths, n, &err);
	free(paths);
	if (rc < 0)
		return tool_error(s, "workspace_discard of sandbox %s: %s", l->id, err.msg);
	char *text = xasprintf("%d change%s dropped from sandbox %s: it sees the project's files "
			       "there again",
			       rc, rc == 1 ? "" : "s", l->id);
	res = mcp_tool_result(s, text, json_pack("{s:s, s:i}", "sandbox", l->id, "discarded", rc),
			      false);
	free(text);
	return res;
}

/* ---- sandbox_list, sandbox_destroy ---- */

json_t *
session_list(struct call *c, const char *name, json_t *args, struct rpc_err *e)
{
	struct srv *s = c->srv;
	(void)name;
	(void)args;
	(void)e;
	json_t *a = c->lives ? json_incref(c->lives) : json_array();
	size_t n = json_array_size(a);
	char *text = n ? xasprintf("%zu live sandbox%s: ", n, n == 1 ? "" : "es")
		       : xstrdup("no live sandboxes (sandbox_create makes one)");
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		const char *im = json_string_value(json_object_get(v, "image"));
		char *more = xasprintf("%s%s%s (%s%s%s)", text, i ? ", " : "",
				       json_string_value(json_object_get(v, "sandbox")),
				       json_string_value(json_object_get(v, "workspace_mode")),
				       im ? ", image " : "", im ? im : "");
		free(text);
		text = more;
	}
	json_t *res = mcp_tool_result(s, text, json_pack("{s:o}", "sandboxes", a), false);
	free(text);
	return res;
}

json_t *
session_destroy(struct call *c, struct live *l, const char *name, json_t *args, struct rpc_err *e)
{
	(void)name;
	(void)args;
	(void)e;
	c->live = NULL;
	bool cow = l->cow;
	char *text = xasprintf("sandbox %s destroyed%s", l->id,
			       cow ? ": its unapplied changes are gone" : "");
	json_t *sc = json_pack("{s:s, s:b}", "sandbox", l->id, "destroyed", 1);
	live_end(l);
	json_t *res = mcp_tool_result(c->srv, text, sc, false);
	free(text);
	return res;
}

/* ---- the table's handlers for a tool given a sandbox ---- */

json_t *
session_run(struct call *c, struct live *l, const char *name, json_t *args, struct rpc_err *e)
{
	(void)name;
	return run_tool(c, l, args, e);
}

json_t *
session_file(struct call *c, struct live *l, const char *name, json_t *args, struct rpc_err *e)
{
	return live_file_tool(c, l, name, args, true, e);
}

json_t *
session_diff(struct call *c, struct live *l, const char *name, json_t *args, struct rpc_err *e)
{
	(void)name;
	/* a direct sandbox's view is the project itself: git's account */
	return l->cow ? cow_diff_tool(c, l, args) : diff_tool(c, args, e);
}

json_t *
session_discard(struct call *c, struct live *l, const char *name, json_t *args, struct rpc_err *e)
{
	(void)name;
	(void)e;
	return discard_tool(c, l, args);
}

/* ---- the dispatcher ---- */

json_t *
session_tool(struct call *c, const struct mcp_tool *t, json_t *args, struct rpc_err *e)
{
	const char *id = json_string_value(json_object_get(args, "sandbox"));
	struct live *l = c->live;
	if (!l)
		return tool_error(c->srv,
				  "no sandbox '%.64s' on this connection: it was destroyed, never "
				  "existed, or belongs to another connection (sandboxes belong to "
				  "the connection that created them). sandbox_list shows yours; "
				  "sandbox_create makes one.",
				  id ? id : "");
	return t->live(c, l, t->name, args, e);
}
