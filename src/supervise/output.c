/* supervise/output: a command's output pipes, drained into head and tail
 * windows, and its working directory: what every backend's command loop
 * shares (local_exec.c, gvisor_exec.c). */
#include "supervise/supervise.h"
#include "spec/spec.h"
#include "jail/jail.h"

#include <string.h>
#include <sys/epoll.h>

static void
on_head(void *data, int stream, const char *buf, size_t n)
{
	struct cmd_output *o = data;
	struct wd_event e = {.kind = WD_EVENT_OUTPUT,
			     .name = "output",
			     .sandbox_id = o->sb->id,
			     .data = buf,
			     .len = n,
			     .stream = stream};
	event_emit(o->sb->events, &e);
}

void
cmd_output_init(struct cmd_output *o, struct sandbox *sb, const struct exec_req *x,
		uint64_t deadline_ns)
{
	uint64_t limit = x->output_limit ? x->output_limit : sb->spec->lim.output_limit;
	bool events = event_wanted(sb->events, WD_EVENT_OUTPUT);
	o->sb = sb;
	for (int i = 1; i <= 2; i++) {
		capture_init(&o->cap[i], limit, i, x->stream_fd[i]);
		o->cap[i].deadline_ns = deadline_ns;
		o->cap[i].abort_fd = sb->cancel_fd;
		if (events) {
			o->cap[i].on_head = on_head;
			o->cap[i].on_head_data = o;
		}
	}
}

void
cmd_output_drain(struct cmd_output *o, int stream, int ep, char *buf, size_t cap)
{
	int *fdp = &o->fd[stream];
	/* a bounded number of reads per wake-up, so a command that writes
	 * faster than we read cannot starve the deadline and signal checks */
	for (int round = 0; round < 16; round++) {
		ssize_t n = read(*fdp, buf, cap);
		if (n > 0) {
			capture_feed(&o->cap[stream], buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* EOF or error: this stream is done */
		epoll_ctl(ep, EPOLL_CTL_DEL, *fdp, NULL);
		close(*fdp);
		*fdp = -1;
		return;
	}
}

void
cmd_output_close(struct cmd_output *o)
{
	for (int i = 1; i <= 2; i++) {
		if (o->fd[i] >= 0)
			close(o->fd[i]);
		o->fd[i] = -1;
	}
}

void
cmd_output_collect(struct cmd_output *o, wd_result *res)
{
	for (int i = 1; i <= 2; i++) {
		res->out[i] = capture_window(&o->cap[i], &res->out_len[i]);
		res->total[i] = o->cap[i].total;
		res->omitted[i] = capture_omitted(&o->cap[i]);
		capture_flush(&o->cap[i]);
	}
}

void
cmd_output_fini(struct cmd_output *o)
{
	for (int i = 1; i <= 2; i++)
		capture_fini(&o->cap[i]);
	cmd_output_close(o);
}

char *
sandbox_command_cwd(const struct sandbox *sb, const char *cwd, struct wd_err *err)
{
	const char *base = sb->prep->plan.cwd;
	if (!cwd || !cwd[0] || !strcmp(cwd, "."))
		return wd_xstrdup(base);
	if (cwd[0] == '/')
		goto bad;
	for (const char *c = cwd; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.')
			goto bad;
		c += n;
		c += strspn(c, "/");
	}
	return wd_xasprintf("%s/%s", base, cwd);
bad:
	wd_err_set(err, WD_E_INVAL,
		   "working directory '%s': give a path relative to the workspace, without ..",
		   cwd);
	return NULL;
}
