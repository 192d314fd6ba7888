/* server/diff: workspace_diff (MCP) and sandbox.diff (harness).
 *
 * Until copy-on-write workspaces exist (issue 9), a sandbox's workspace
 * is the directory itself, bound read-write: what a sandbox changed is
 * what git sees as changed there.  So the diff is git's, run in a
 * sandbox (never on the host: a planted .git/config could make git run
 * programs, core.fsmonitor or diff.external, and inside the jail those
 * reach nothing), with warden's own argv:
 *
 *   git status --porcelain=v1 --untracked-files=all [-- PATH]
 *   git diff --no-ext-diff --no-textconv HEAD [-- PATH]
 *
 * core.fsmonitor is switched off and colour and pagers too, on the
 * command line, where the repository's configuration cannot override
 * them. */
#include "server/server-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define DIFF_OUTPUT (256u << 10)

struct git_out {
	int status;
	char *out, *err;
};

static int
git(wd_sandbox *sb, const char *const *args, const char *path, struct git_out *g,
    struct wd_err *err)
{
	const char *argv[24];
	int n = 0;
	static const char *const pre[] = {"git", "--no-pager",	   "-c", "core.fsmonitor=false",
					  "-c",	 "color.ui=never", "-c", "core.quotepath=false",
					  NULL};
	for (int i = 0; pre[i]; i++)
		argv[n++] = pre[i];
	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	if (path) {
		argv[n++] = "--";
		argv[n++] = path;
	}
	argv[n] = NULL;
	wd_cmd *cmd = wd_cmd_new();
	wd_result *r = NULL;
	int rc = wd_cmd_set_argv(cmd, n, argv, err);
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

/* The diff of the workspace (or of path in it): *status_out and *diff_out
 * (new strings).  -1 with e (or *why for the model) on failure. */
static int
workspace_diff(struct call *c, const char *path, struct git_out *st, struct git_out *df, char **why,
	       struct rpc_err *e)
{
	struct srv *s = c->srv;
	struct wd_err err = {0};
	if (path) {
		int fd = wd_workspace_openat(s->ws, path, O_PATH, &err);
		if (fd < 0) {
			*why = xasprintf("workspace_diff: %s", err.msg);
			return -1;
		}
		close(fd);
	}
	wd_spec *spec = run_spec(s, NULL, &err);
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
	static const char *const diff_args[] = {"diff", "--no-ext-diff", "--no-textconv", "HEAD",
						NULL};
	static const char *const diff_root[] = {"diff", "--no-ext-diff", "--no-textconv",
						"--cached", NULL};
	int rc = git(sb, status_args, path, st, &err);
	if (rc == 0 && st->status == 0) {
		rc = git(sb, diff_args, path, df, &err);
		/* a repository without a commit has no HEAD: what is staged */
		if (rc == 0 && df->status != 0) {
			free(df->out);
			free(df->err);
			rc = git(sb, diff_root, path, df, &err);
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
				 "workspace must be a git repository: until copy-on-write "
				 "workspaces exist, the change set is what git sees.",
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

json_t *
diff_tool(struct call *c, json_t *args, struct rpc_err *e)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	struct git_out st = {0}, df = {0};
	char *why = NULL;
	json_t *res = NULL;
	if (workspace_diff(c, path, &st, &df, &why, e) < 0) {
		if (why)
			res = mcp_tool_result(c->srv, why, NULL, true);
	} else if (!st.out[0]) {
		res = mcp_tool_result(c->srv, "no changes: git sees nothing changed", NULL, false);
	} else {
		char *text = xasprintf("changed files (git status --porcelain):\n%s\n%s", st.out,
				       df.out ? df.out : "");
		res = mcp_tool_result(c->srv, text, NULL, false);
		free(text);
	}
	free(why);
	git_out_fini(&st);
	git_out_fini(&df);
	return res;
}

json_t *
diff_harness(struct call *c, struct rpc_err *e)
{
	static const char *const keys[] = {"sandbox", "path", NULL};
	const char *path = NULL;
	if (!p_only(c->params, keys, e) || !p_str(c->params, "path", false, &path, e))
		return NULL;
	struct git_out st = {0}, df = {0};
	char *why = NULL;
	json_t *res = NULL;
	if (workspace_diff(c, path, &st, &df, &why, e) < 0) {
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
		res = json_pack("{s:s, s:s, s:o, s:s}", "mode", "direct", "source", "git", "files",
				files, "diff", df.out ? df.out : "");
	}
	free(why);
	git_out_fini(&st);
	git_out_fini(&df);
	return res;
}
