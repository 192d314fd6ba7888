/* server/diff: the change set of a workspace.
 *
 *   sandbox.diff      a live sandbox's changes
 *   sandbox.apply     a cow sandbox's changes written into the directory
 *   sandbox.discard   a cow sandbox's changes dropped
 *   workspace_diff    (MCP) the server's workspace
 *
 * A copy-on-write sandbox keeps what it wrote in an upper layer: its
 * change set is the library's (wd_sandbox_diff, _apply, _discard), exact
 * whatever the directory is, with conflicts (files the host changed since
 * the sandbox first saw them) and protected paths marked.
 *
 * A direct sandbox, and the MCP tools, which work on the server's
 * workspace itself, have no change set of their own: what they wrote is
 * in the directory already, mixed with everyone else's edits.  There the
 * only account of "what changed" is the repository's, so the diff is
 * git's, run in a sandbox (never on the host: a planted .git/config could
 * make git run programs, core.fsmonitor or diff.external, and inside the
 * jail those reach nothing), with warden's own argv:
 *
 *   git status --porcelain=v1 --untracked-files=all [-- PATH...]
 *   git diff --no-ext-diff --no-textconv [--stat | --name-status] HEAD [-- PATH...]
 *
 * core.fsmonitor is switched off and colour and pagers too, on the
 * command line, where the repository's configuration cannot override
 * them.  apply and discard have no meaning there: -32006. */
#include "server/run.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/sanitize.h"
#include "server/srv.h"
#include "server/sandbox.h"
#include "server/mcp.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DIFF_OUTPUT (256u << 10)
#define DIFF_MAX_PATHS 256
#define DIFF_LINE_MAX 4096u /* bytes of a line of the model's diff text (capped as a whole too) */

/* ---- parameters ---- */

enum fmt { F_UNIFIED, F_STAT, F_NAMES, F_JSON };
static const char *const fmt_names[] = {"unified", "stat", "names", "json", NULL};

/* "path" (a string) or "paths" (an array of strings), not both: *paths
 * (a new array of borrowed strings, NULL when none) and *n. */
static bool
p_paths(json_t *params, const char ***paths, size_t *n, struct rpc_err *e)
{
	const char *one = NULL;
	json_t *many = json_object_get(params, "paths");
	*paths = NULL;
	*n = 0;
	if (!p_str(params, "path", false, &one, e))
		return false;
	if (one && many)
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: give 'path' (a string) or 'paths' (an array), "
				   "not both") == 0;
	if (one) {
		*paths = xcalloc(2, sizeof(char *));
		(*paths)[(*n)++] = one;
		return true;
	}
	if (!many)
		return true;
	size_t k = json_is_array(many) ? json_array_size(many) : 0;
	if (!json_is_array(many) || k > DIFF_MAX_PATHS)
		return rpc_err_set(e, RPC_INVALID_PARAMS,
				   "Invalid params: 'paths' must be an array of at most %d strings",
				   DIFF_MAX_PATHS) == 0;
	*paths = xcalloc(k + 1, sizeof(char *));
	for (size_t i = 0; i < k; i++) {
		(*paths)[i] = json_string_value(json_array_get(many, i));
		if (!(*paths)[i] || !(*paths)[i][0]) {
			free(*paths);
			*paths = NULL;
			return rpc_err_set(e, RPC_INVALID_PARAMS,
					   "Invalid params: paths[%zu] must be a non-empty string",
					   i) == 0;
		}
	}
	*n = k;
	return true;
}

static bool
p_format(json_t *params, enum fmt *out, struct rpc_err *e)
{
	const char *f = "unified";
	if (!p_str(params, "format", false, &f, e))
		return false;
	for (int i = 0; fmt_names[i]; i++)
		if (!strcmp(f, fmt_names[i])) {
			*out = (enum fmt)i;
			return true;
		}
	return rpc_err_set(e, RPC_INVALID_PARAMS,
			   "Invalid params: 'format' must be \"unified\", \"stat\", \"names\" or "
			   "\"json\"") == 0;
}

/* A failure of the library on a cow sandbox's change set: bad paths (a
 * path with no change, an absolute one) are the caller's; the rest is
 * warden's. */
static void
lib_failed(struct rpc_err *e, const struct live *l, const struct wd_err *err)
{
	rpc_err_set(e, err->code == WD_E_INVAL ? RPC_INVALID_PARAMS : SRV_E_FAILED, "%s%s: %s",
		    err->code == WD_E_INVAL ? "Invalid params: " : "", l->id, err->msg);
}

static bool
need_cow(const struct live *l, const char *method, struct rpc_err *e)
{
	if (l->cow)
		return true;
	return rpc_err_set(e, SRV_E_NOT_AVAILABLE,
			   "not available: sandbox %s has a direct workspace: what it wrote is in "
			   "the directory already, so there is no change set to %s (create the "
			   "sandbox with \"workspace_mode\": \"cow\" to keep one)",
			   l->id, method) == 0;
}

/* ---- a cow sandbox: the library's change set ---- */

static json_t *
cow_diff(struct call *c, const char *const *paths, size_t n, enum fmt f, bool all,
	 struct rpc_err *e)
{
	struct live *l = c->live;
	struct wd_err err = {0};
	char *js = NULL, *text = NULL;
	static const unsigned flags[] = {0, WD_DIFF_STAT, WD_DIFF_NAMES};
	unsigned sel = all ? WD_DIFF_ALL : 0;
	/* the file list always, the text in the format asked: two reads of
	 * the upper layer, each consistent in itself */
	if (live_diff(l, paths, n, WD_DIFF_JSON | sel, &js, &err) < 0 ||
	    (f != F_JSON && live_diff(l, paths, n, flags[f] | sel, &text, &err) < 0)) {
		free(js);
		lib_failed(e, l, &err);
		return NULL;
	}
	wd_report *rep = NULL;
	if (wd_report_new(js, &rep, &err) < 0) {
		free(js);
		free(text);
		rpc_err_set(e, SRV_E_FAILED, "%s: %s", l->id, err.msg);
		return NULL;
	}
	free(js);
	json_t *r = report_embed(rep, 0);
	wd_report_free(rep);
	json_object_set_new(r, "sandbox", json_string(l->id));
	json_object_set_new(r, "mode", json_string("cow"));
	json_object_set_new(r, "source", json_string("overlay"));
	json_object_set_new(r, "format", json_string(fmt_names[f]));
	if (text) {
		char *vis = utf8_visible(text, strlen(text), true, NULL, NULL);
		json_object_set_new(r, "diff", json_string(vis));
		free(vis);
		free(text);
	}
	return r;
}

/* The paths of a report's files whose result is what, as the visible
 * text (a byte that is not UTF-8 as \xNN) a JSON string holds. */
static json_t *
report_paths(const wd_report *rep, const char *what)
{
	json_t *out = json_array();
	for (size_t i = 0; i < wd_report_files(rep); i++) {
		const char *res = wd_report_result(rep, i), *path = wd_report_path(rep, i);
		if (res && !strcmp(res, what)) {
			char *vis = utf8_visible(path, strlen(path), true, NULL, NULL);
			json_array_append_new(out, json_string(vis));
			free(vis);
		}
	}
	return out;
}

/* "a (why), b (why), ..." for the error message, the files whose result
 * is what, bounded (the full lists are in data). */
static void
list_text(char *buf, size_t cap, const wd_report *rep, const char *what, const char *why)
{
	size_t len = strlen(buf);
	for (size_t i = 0; i < wd_report_files(rep); i++) {
		const char *res = wd_report_result(rep, i);
		if (!res || strcmp(res, what))
			continue;
		if (len + 8 >= cap)
			break;
		/* a client prints the message to a human: the sandbox's name
		 * quoted as warden diff quotes it (util/escape.h) */
		char *name = wd_esc_path(wd_report_path(rep, i));
		int w = snprintf(buf + len, cap - len, "%s%s (%s)", len ? ", " : "", name, why);
		free(name);
		if (w < 0 || (size_t)w >= cap - len) {
			snprintf(buf + (cap > 4 ? cap - 4 : 0), 4, "...");
			break;
		}
		len += (size_t)w;
	}
}

json_t *
apply_harness(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"sandbox", "path", "paths", "expect", "all", NULL};
	struct live *l = c->live;
	const char **paths = NULL;
	size_t n = 0;
	bool all = false;
	/* all: the ignored changes too, as sandbox.diff's "all" showed them
	 * (its digest is that selection's) */
	if (!p_only(c->params, keys, e) || !p_bool(c->params, "all", &all, e))
		return NULL;
	/* expect: the digest of the change set the human reviewed (the
	 * diff's "digest"); another set applies nothing (docs/threat-model.md) */
	json_t *ex = json_object_get(c->params, "expect");
	if (ex && !json_is_string(ex)) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "'expect' must be a string: the \"digest\" of sandbox.diff");
		return NULL;
	}
	if (!p_paths(c->params, &paths, &n, e))
		return NULL;
	if (!need_cow(l, "apply", e)) {
		free(paths);
		return NULL;
	}
	struct wd_err err = {0};
	char *rep = NULL;
	int rc = live_apply(l, paths, n, ex ? json_string_value(ex) : NULL,
			    WD_DIFF_JSON | (all ? WD_DIFF_ALL : 0), &rep, &err);
	free(paths);
	if (rc < 0) {
		free(rep);
		lib_failed(e, l, &err);
		return NULL;
	}
	wd_report *wr = NULL;
	if (wd_report_new(rep, &wr, &err) < 0) {
		free(rep);
		rpc_err_set(e, SRV_E_FAILED, "%s: %s", l->id, err.msg);
		return NULL;
	}
	free(rep);
	json_t *r = report_embed(wr, 0);
	json_object_set_new(r, "sandbox", json_string(l->id));
	if (rc == 0) {
		wd_report_free(wr);
		return r;
	}
	/* 1: a conflict or a protected path stopped it, and nothing at all
	 * was written; the caller names the other paths to apply the rest */
	json_t *conflicts = report_paths(wr, "conflict"), *prot = report_paths(wr, "refused");
	char list[400] = "";
	list_text(list, sizeof(list), wr, "refused", "protected");
	list_text(list, sizeof(list), wr, "conflict", "conflict: changed on the host");
	wd_report_free(wr);
	rpc_err_set(e, SRV_E_APPLY_REFUSED,
		    "apply refused, nothing applied: %s; name the other paths to apply them", list);
	e->data =
	    json_pack("{s:o, s:o, s:o}", "conflicts", conflicts, "protected", prot, "report", r);
	return NULL;
}

json_t *
discard_harness(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"sandbox", "path", "paths", NULL};
	struct live *l = c->live;
	const char **paths = NULL;
	size_t n = 0;
	if (!p_only(c->params, keys, e) || !p_paths(c->params, &paths, &n, e))
		return NULL;
	if (!need_cow(l, "discard", e)) {
		free(paths);
		return NULL;
	}
	struct wd_err err = {0};
	int rc = live_discard(l, paths, n, &err);
	free(paths);
	if (rc < 0) {
		lib_failed(e, l, &err);
		return NULL;
	}
	return json_pack("{s:s, s:i}", "sandbox", l->id, "discarded", rc);
}

/* ---- a direct workspace: git's account ---- */

struct git_out {
	int status;
	char *out, *err;
};

static int
git(wd_sandbox *sb, const char *const *args, const char *const *paths, size_t n, struct git_out *g,
    struct wd_err *err)
{
	static const char *const pre[] = {"git", "--no-pager",	   "-c", "core.fsmonitor=false",
					  "-c",	 "color.ui=never", "-c", "core.quotepath=false",
					  NULL};
	const char **argv = xcalloc(ARRAY_SIZE(pre) + 8 + n + 2, sizeof(char *));
	int k = 0;
	for (int i = 0; pre[i]; i++)
		argv[k++] = pre[i];
	for (int i = 0; args[i]; i++)
		argv[k++] = args[i];
	if (n) {
		argv[k++] = "--";
		for (size_t i = 0; i < n; i++)
			argv[k++] = paths[i];
	}
	wd_cmd *cmd = wd_cmd_new();
	wd_result *r = NULL;
	int rc = wd_cmd_set_argv(cmd, k, argv, err);
	free(argv);
	if (rc == 0) {
		wd_cmd_set_output_limit(cmd, DIFF_OUTPUT);
		rc = wd_sandbox_exec(sb, cmd, &r, err);
	}
	if (rc == 0) {
		size_t len = 0;
		const char *o = wd_result_output(r, 1, &len);
		g->out = utf8_visible(o ? o : "", len, true, NULL, NULL);
		o = wd_result_output(r, 2, &len);
		g->err = utf8_visible(o ? o : "", len, true, NULL, NULL);
		g->status = wd_result_status(r);
	}
	wd_result_free(r);
	wd_cmd_free(cmd);
	return rc;
}

/* git status, then (unless F_JSON) git diff in format f, of the server's
 * workspace (or of paths in it), in a fresh sandbox.  -1 with e (or *why
 * for the model) on failure. */
static int
git_diff(struct call *c, const char *const *paths, size_t n, enum fmt f, struct git_out *st,
	 struct git_out *df, char **why, struct rpc_err *e)
{
	struct srv *s = c->srv;
	struct wd_err err = {0};
	for (size_t i = 0; i < n; i++) {
		int fd = wd_workspace_openat(s->ws, paths[i], O_PATH, &err);
		if (fd < 0) {
			*why = xasprintf("workspace_diff: %s", err.msg);
			return -1;
		}
		close(fd);
	}
	/* git of the host, as warden's own tool: never the image's (which
	 * may hold none) */
	wd_spec *spec = run_spec(s, NULL, NULL, NULL, &err);
	wd_sandbox *sb = NULL;
	if (!spec || wd_sandbox_create(s->ctx, spec, &sb, &err) < 0) {
		wd_spec_free(spec);
		return rpc_err_set(e, SRV_E_FAILED, "%s", err.msg);
	}
	wd_spec_free(spec);
	pthread_mutex_lock(&c->lock);
	if (!c->cancelled)
		c->running_in = sb;
	pthread_mutex_unlock(&c->lock);
	static const char *const status_args[] = {"status", "--porcelain=v1",
						  "--untracked-files=all", NULL};
	const char *diff_args[8] = {"diff", "--no-ext-diff", "--no-textconv"}, *root_args[8];
	int k = 3;
	if (f == F_STAT || f == F_NAMES)
		diff_args[k++] = f == F_STAT ? "--stat" : "--name-status";
	memcpy(root_args, diff_args, sizeof(root_args));
	root_args[k] = "--cached";
	diff_args[k++] = "HEAD";
	int rc = git(sb, status_args, paths, n, st, &err);
	if (rc == 0 && st->status == 0 && f != F_JSON) {
		rc = git(sb, diff_args, paths, n, df, &err);
		/* a repository without a commit has no HEAD: what is staged */
		if (rc == 0 && df->status != 0) {
			free(df->out);
			free(df->err);
			rc = git(sb, root_args, paths, n, df, &err);
		}
	}
	pthread_mutex_lock(&c->lock);
	c->running_in = NULL;
	pthread_mutex_unlock(&c->lock);
	wd_sandbox_destroy(sb);
	if (rc < 0)
		return rpc_err_set(e, SRV_E_FAILED, "%s", err.msg);
	if (st->status != 0) {
		*why = xasprintf("workspace_diff: git status failed (status %d): %s\nThe "
				 "workspace is used directly (no copy-on-write change set), so "
				 "what changed is what git sees: it must be a git repository.",
				 st->status, st->err);
		return -1;
	}
	return 0;
}

static void
git_out_fini(struct git_out *g)
{
	free(g->out);
	free(g->err);
}

/* A model's context is the budget here: the other tools give it at most
 * 64 KiB per call with a marker (read_file, run_command's windows), and
 * a diff of a tree of generated files would otherwise be the whole of it
 * (150 hard links of a 20 MB file made a 1.2 GB answer). */
char *
diff_text_capped(const char *text)
{
	size_t len = strlen(text);
	if (len <= MODEL_TEXT_CAP)
		return xstrdup(text);
	size_t cut = MODEL_TEXT_CAP;
	const char *nl = memrchr(text, '\n', cut);
	if (nl && (size_t)(nl - text) > cut / 2)
		cut = (size_t)(nl - text) + 1;
	while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
		cut--; /* never half a UTF-8 character */
	return xasprintf("%.*s\n[... %zu more bytes of the diff not shown (at most %u KiB per "
			 "call): ask for one file with \"path\" ...]\n",
			 (int)cut, text, len - cut, MODEL_TEXT_CAP >> 10);
}

json_t *
diff_tool(struct call *c, json_t *args, struct rpc_err *e)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	struct git_out st = {0}, df = {0};
	char *why = NULL;
	json_t *res = NULL;
	if (git_diff(c, path ? &path : NULL, path ? 1 : 0, F_UNIFIED, &st, &df, &why, e) < 0) {
		if (why)
			res = mcp_tool_result(c->srv, why, NULL, true);
	} else if (!st.out[0]) {
		res = mcp_tool_result(c->srv, "no changes: git sees nothing changed", NULL, false);
	} else {
		char *text = xasprintf("changed files (git status --porcelain):\n%s\n%s", st.out,
				       df.out ? df.out : "");
		/* git quotes a name with control bytes, but not a bidi or
		 * zero-width character (core.quotepath=false), and prints
		 * hunks raw: a client shows this text to a human, so it is
		 * made visible as warden diff's is (util/escape.h); then
		 * bounded like every text a model gets */
		char *vis = wd_esc_text(text, strlen(text), WD_ESC_LINES, DIFF_LINE_MAX);
		char *capped = diff_text_capped(vis);
		res = mcp_tool_result(c->srv, capped, NULL, false);
		free(capped);
		free(vis);
		free(text);
	}
	free(why);
	git_out_fini(&st);
	git_out_fini(&df);
	return res;
}

static json_t *
direct_diff(struct call *c, const char *const *paths, size_t n, enum fmt f, struct rpc_err *e)
{
	struct git_out st = {0}, df = {0};
	char *why = NULL;
	json_t *res = NULL;
	if (git_diff(c, paths, n, f, &st, &df, &why, e) < 0) {
		if (why)
			rpc_err_set(e, SRV_E_FAILED, "%s", why);
	} else {
		json_t *files = json_array();
		for (char *line = st.out; line && *line;) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			if (strlen(line) > 3)
				json_array_append_new(files,
						      json_pack("{s:s%, s:s}", "code", line,
								(size_t)2, "path", line + 3));
			line = nl ? nl + 1 : NULL;
		}
		res = json_pack("{s:s, s:s, s:s, s:s, s:o}", "sandbox", c->live->id, "mode",
				"direct", "source", "git", "format", fmt_names[f], "files", files);
		if (f != F_JSON) {
			/* the text a client shows the human, made visible as
			 * above, every line whole (as warden diff's hunks: a cut
			 * line hides what apply would write) */
			const char *d = df.out ? df.out : "";
			char *vis = wd_esc_text(d, strlen(d), WD_ESC_LINES, 0);
			json_object_set_new(res, "diff", json_string(vis));
			free(vis);
		}
	}
	free(why);
	git_out_fini(&st);
	git_out_fini(&df);
	return res;
}

json_t *
diff_harness(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"sandbox", "path", "paths", "format", "all", NULL};
	const char **paths = NULL;
	size_t n = 0;
	enum fmt f = F_UNIFIED;
	bool all = false;
	if (!p_only(c->params, keys, e) || !p_format(c->params, &f, e) ||
	    !p_bool(c->params, "all", &all, e) || !p_paths(c->params, &paths, &n, e))
		return NULL;
	if (all && !c->live->cow) {
		free(paths);
		/* git's account of a direct workspace has no change set to
		 * select from: refused rather than ignored */
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: 'all' selects from a cow sandbox's change set; "
			    "sandbox %s has a direct workspace (git status lists what it sees)",
			    c->live->id);
		return NULL;
	}
	json_t *r =
	    c->live->cow ? cow_diff(c, paths, n, f, all, e) : direct_diff(c, paths, n, f, e);
	free(paths);
	return r;
}
