/* fake_backend.c - see fake_backend.h.  Nothing here touches the kernel:
 * no process, namespace or cgroup; exec returns a result that says it
 * ran. */
#include "fake_backend.h"
#include "supervise/supervise.h"
#include "spec/spec.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct fake_seen fake;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static char fake_out[256];

void
fake_reset(void)
{
	pthread_mutex_lock(&fake_lock);
	memset(&fake, 0, sizeof(fake));
	fake_out[0] = '\0';
	pthread_mutex_unlock(&fake_lock);
}

const char *fake_trace_path;

/* In another process (a session's monitor, fake-monitor): each note is
 * also a line of the file fake_trace_path, for the test to read. */
static void
trace_line(const char *line)
{
	FILE *f = fake_trace_path ? fopen(fake_trace_path, "ae") : NULL;
	if (f) {
		fprintf(f, "%s\n", line);
		fclose(f);
	}
}

void
fake_note(const char *what)
{
	pthread_mutex_lock(&fake_lock);
	size_t n = strlen(fake.trace);
	snprintf(fake.trace + n, sizeof(fake.trace) - n, "%s%s", n ? "," : "", what);
	trace_line(what);
	pthread_mutex_unlock(&fake_lock);
}

void
fake_set_output(const char *text)
{
	snprintf(fake_out, sizeof(fake_out), "%s", text);
}

static int
f_prepare(struct sandbox *sb, struct wd_err *err)
{
	(void)err;
	fake.prepare++;
	fake.isolation = (int)sb->spec->isolation;
	snprintf(fake.workspace, sizeof(fake.workspace), "%s",
		 sb->spec->workspace ? sb->spec->workspace : "");
	fake_note("prepare");
	return 0;
}

static int
f_spawn(struct sandbox *sb, struct wd_err *err)
{
	(void)err;
	fake.spawn++;
	sb->state = SB_SPAWNED;
	fake_note("spawn");
	return 0;
}

static int
f_ready(struct sandbox *sb, struct wd_err *err)
{
	(void)err;
	fake.ready++;
	sb->state = SB_READY;
	fake_note("ready");
	return 0;
}

static int
f_exec(struct sandbox *sb, const struct exec_req *x, wd_result **out, struct wd_err *err)
{
	(void)err;
	fake.exec++;
	fake.argv[0] = '\0';
	for (size_t i = 0; x->argv[i]; i++) {
		size_t n = strlen(fake.argv);
		snprintf(fake.argv + n, sizeof(fake.argv) - n, "%s%s", i ? " " : "", x->argv[i]);
	}
	fake.timeout_ms = x->timeout_ms;
	fake.output_limit = x->output_limit;
	fake.flags = x->flags;
	snprintf(fake.cwd, sizeof(fake.cwd), "%s", x->cwd ? x->cwd : "");
	fake_note("exec");
	char line[800];
	snprintf(line, sizeof(line), "exec-req %s|%llu|%llu|%s", fake.argv,
		 (unsigned long long)x->timeout_ms, (unsigned long long)x->output_limit, fake.cwd);
	trace_line(line);
	wd_result *r = result_new(sb->id);
	r->outcome = WD_OUTCOME_RAN;
	r->status = 0;
	r->exit_code = 0;
	r->isolation = sb->spec->isolation;
	if (fake_out[0]) {
		r->out[1] = strdup(fake_out);
		r->out_len[1] = strlen(fake_out);
		r->total[1] = r->out_len[1];
	}
	*out = r;
	return 0;
}

static void
f_kill(struct sandbox *sb)
{
	(void)sb;
	fake_note("kill");
}

static void
f_describe(struct sandbox *sb, wd_result *r)
{
	/* the protections of a container-level jail without Landlock: what
	 * a policy's sandbox.require is checked against */
	r->isolation = sb->spec->isolation;
	r->seccomp = true;
	r->cgroup_version = 2;
	r->landlock_abi = 0;
}

static void
f_destroy(struct sandbox *sb)
{
	(void)sb;
	fake.destroy++;
	fake_note("destroy");
}

static void
f_probe(struct backend_probe *out)
{
	/* a host that can run the level: what warden doctor and the
	 * server's readiness ask first */
	memset(out, 0, sizeof(*out));
	out->ok = true;
}

static const struct backend_ops fake_ops = {
    .name = "fake",
    .level = WD_ISOLATION_CONTAINER,
    .caps = BACKEND_CAP_MOUNTS | BACKEND_CAP_NAMESPACES,
    .probe = f_probe,
    .prepare = f_prepare,
    .spawn = f_spawn,
    .ready = f_ready,
    .exec = f_exec,
    .kill = f_kill,
    .describe = f_describe,
    .destroy = f_destroy,
};

const struct backend_ops *
backend_for(enum wd_isolation level)
{
	return (unsigned)level <= WD_ISOLATION_GVISOR ? &fake_ops : NULL;
}

bool
backend_can(enum wd_isolation level, unsigned caps)
{
	const struct backend_ops *ops = backend_for(level);
	return ops && (ops->caps & caps) == caps;
}
