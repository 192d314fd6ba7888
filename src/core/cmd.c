/* core/cmd: one command for a sandbox.  Setters copy their arguments. */
#include "core/core.h"

#include <string.h>

WD_API wd_cmd *
wd_cmd_new(void)
{
	wd_cmd *c = wd_xcalloc(1, sizeof(*c));
	c->stdin_fd = -1;
	c->cancel_fd = -1;
	c->stream_fd[0] = c->stream_fd[1] = c->stream_fd[2] = -1;
	return c;
}

static void
free_argv(wd_cmd *c)
{
	for (int i = 0; i < c->argc; i++)
		free(c->argv[i]);
	free(c->argv);
	c->argv = NULL;
	c->argc = 0;
}

WD_API void
wd_cmd_free(wd_cmd *c)
{
	if (!c)
		return;
	free_argv(c);
	free(c->command);
	free(c->tool);
	free(c->cwd);
	for (size_t i = 0; i < c->nenv; i++)
		free(c->env[i]);
	free(c->env);
	free(c);
}

WD_API int
wd_cmd_set_argv(wd_cmd *c, int argc, const char *const argv[], struct wd_err *err)
{
	if (argc < 1 || !argv || !argv[0] || !argv[0][0])
		return wd_err_set(err, WD_E_INVAL, "no program given");
	free_argv(c);
	c->argv = wd_xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = 0; i < argc; i++)
		c->argv[i] = wd_xstrdup(argv[i]);
	c->argc = argc;
	return 0;
}

WD_API int
wd_cmd_set_command(wd_cmd *c, const char *command, struct wd_err *err)
{
	if (!command)
		return wd_err_set(err, WD_E_INVAL, "no command given");
	free(c->command);
	c->command = wd_xstrdup(command);
	return 0;
}

WD_API int
wd_cmd_set_tool(wd_cmd *c, const char *tool, struct wd_err *err)
{
	if (!tool || !tool[0])
		return wd_err_set(err, WD_E_INVAL, "no tool name given");
	free(c->tool);
	c->tool = wd_xstrdup(tool);
	return 0;
}

WD_API void
wd_cmd_set_policy(wd_cmd *c, bool on)
{
	c->policy = on;
}

WD_API void
wd_cmd_set_interactive(wd_cmd *c, bool on)
{
	c->interactive = on;
}

WD_API int
wd_cmd_set_cwd(wd_cmd *c, const char *cwd, struct wd_err *err)
{
	if (!cwd || cwd[0] == '/')
		return wd_err_set(err, WD_E_INVAL,
				  "working directory '%s': give a path relative to the workspace",
				  cwd ? cwd : "");
	free(c->cwd);
	c->cwd = wd_xstrdup(cwd);
	return 0;
}

WD_API int
wd_cmd_setenv(wd_cmd *c, const char *name, const char *value, struct wd_err *err)
{
	return wd_env_set(&c->env, &c->nenv, name, value, err);
}

WD_API void
wd_cmd_set_timeout(wd_cmd *c, uint64_t timeout_ms)
{
	c->timeout_ms = timeout_ms;
}

WD_API void
wd_cmd_set_output_limit(wd_cmd *c, uint64_t bytes)
{
	c->output_limit = bytes;
}

WD_API void
wd_cmd_set_stdin(wd_cmd *c, int fd)
{
	c->stdin_fd = fd;
}

WD_API void
wd_cmd_set_stream(wd_cmd *c, int out_fd, int err_fd)
{
	c->stream_fd[1] = out_fd;
	c->stream_fd[2] = err_fd;
}

WD_API void
wd_cmd_set_cancel_fd(wd_cmd *c, int fd)
{
	c->cancel_fd = fd;
}
