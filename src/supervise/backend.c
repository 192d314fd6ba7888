/* supervise/backend: the isolation levels behind one interface
 * (struct backend_ops, supervise.h).  The caller never asks which level
 * it has: it calls the table, and asks the table what the level can
 * (backend_can: enum backend_cap).  container and process share the local
 * monitor (local.c); gvisor runs commands through runsc (gvisor.c) and
 * has its table there. */
#include "supervise/supervise.h"
#include "supervise/probe.h"
#include "jail/jail.h"

static void
probe_container(struct backend_probe *out)
{
	doctor_level_probe(WD_ISOLATION_CONTAINER, out);
}

static void
probe_process(struct backend_probe *out)
{
	doctor_level_probe(WD_ISOLATION_PROCESS, out);
}

static const struct backend_ops container_ops = {
    .name = "container",
    .level = WD_ISOLATION_CONTAINER,
    .caps = BACKEND_CAP_MOUNTS | BACKEND_CAP_NAMESPACES | BACKEND_CAP_POOL,
    .probe = probe_container,
    .prepare = local_prepare,
    .spawn = local_spawn,
    .ready = local_ready,
    .exec = local_exec,
    .kill = local_kill,
    .describe = local_describe,
    .destroy = local_destroy,
    .plan_text = local_plan_text,
    .attach = local_attach,
    .attach_uid = WD_NOBODY, /* the sandbox user is host nobody in its user namespace */
};

static const struct backend_ops process_ops = {
    .name = "process",
    .level = WD_ISOLATION_PROCESS,
    .caps = BACKEND_CAP_HOST_TMP,
    .probe = probe_process,
    .prepare = local_prepare,
    .spawn = local_spawn,
    .ready = local_ready,
    .exec = local_exec,
    .kill = local_kill,
    .describe = local_describe,
    .destroy = local_destroy,
    .plan_text = local_plan_text,
};

static const struct backend_ops *const backends[] = {
    [WD_ISOLATION_CONTAINER] = &container_ops,
    [WD_ISOLATION_PROCESS] = &process_ops,
    [WD_ISOLATION_GVISOR] = &gvisor_ops,
};

const struct backend_ops *
backend_for(enum wd_isolation level)
{
	return (unsigned)level < WD_ARRAY_SIZE(backends) ? backends[level] : NULL;
}

bool
backend_can(enum wd_isolation level, unsigned caps)
{
	const struct backend_ops *ops = backend_for(level);
	return ops && (ops->caps & caps) == caps;
}
