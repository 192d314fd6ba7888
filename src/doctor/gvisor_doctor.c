/* doctor/gvisor_doctor: can gVisor run here, and on which platform?
 *
 * As for the other levels, the answer comes from doing it: a sandbox is
 * built through this backend (the bundle, the cgroup, runsc run) and runs
 * /bin/true, once per platform.  ptrace needs nothing but ptrace; kvm
 * needs /dev/kvm, and a /dev/kvm that opens (even one that creates a VM)
 * is no proof: on this project's VM runsc --platform=kvm spins without
 * ever starting the command, hence the short deadline. */
#include "supervise/gvisor.h"
#include "doctor/doctor-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* How long a platform may take to run /bin/true before it counts as not
 * working (a cold start is ~0.3 s with ptrace here). */
#define TRIAL_MS 4000

/* One sandbox on platform: 0 and its wall time, or why not in why. */
static int
trial(const char *platform, double *ms, char *why, size_t cap)
{
	char ws[] = "/tmp/wd-doctor-gvisor.XXXXXX";
	if (!mkdtemp(ws)) {
		snprintf(why, cap, "mkdtemp: %s", strerror(errno));
		return -1;
	}
	const char *old = getenv("WARDEN_GVISOR_PLATFORM");
	char *saved = old ? wd_xstrdup(old) : NULL;
	setenv("WARDEN_GVISOR_PLATFORM", platform, 1);
	wd_spec *spec = wd_spec_new();
	struct wd_err e = {0};
	struct sandbox *sb = NULL;
	wd_result *r = NULL;
	int rc = wd_spec_set_workspace(spec, ws, &e);
	wd_spec_set_isolation(spec, WD_ISOLATION_GVISOR);
	uint64_t t0 = wd_now_ns();
	if (rc == 0)
		rc = sandbox_new(spec, NULL, NULL, &sb, &e);
	if (saved)
		setenv("WARDEN_GVISOR_PLATFORM", saved, 1);
	else
		unsetenv("WARDEN_GVISOR_PLATFORM");
	free(saved);
	if (rc == 0)
		rc = sandbox_start(sb, &e);
	if (rc == 0) {
		static const char *const argv[] = {"/bin/true", NULL};
		struct exec_req x = {.argv = argv,
				     .timeout_ms = TRIAL_MS,
				     .stdin_fd = -1,
				     .stream_fd = {-1, -1, -1},
				     .flags = SYNC_EXEC_LAST,
				     /* every descriptor named: a field left
				      * out is 0, stdin, and a doctor run
				      * with stdin at EOF had its probe
				      * cancelled (docs/threat-model.md) */
				     .log_fd = -1,
				     .cancel_fd = -1,
				     .cmd_cancel_fd = -1};
		rc = sandbox_exec(sb, &x, &r, &e);
	}
	*ms = (double)(wd_now_ns() - t0) / 1e6;
	if (rc < 0)
		snprintf(why, cap, "%s", e.msg);
	else if (r->timed_out)
		snprintf(why, cap,
			 "no answer in %d ms (runsc spins: the host's KVM is unusable "
			 "for gVisor)",
			 TRIAL_MS);
	else if (r->status != 0)
		snprintf(why, cap, "/bin/true exited %d", r->status);
	bool ok = rc == 0 && !r->timed_out && r->status == 0;
	wd_result_free(r);
	sandbox_free(sb);
	wd_spec_free(spec);
	rmdir(ws);
	return ok ? 0 : -1;
}

void
doctor_probe_gvisor(struct probe *p, bool *ok)
{
	p->name = "gvisor";
	*ok = false;
	const struct gv_runsc *rs = gv_runsc();
	json_object_set_new(p->data, "runsc", rs->found ? json_string(rs->path) : json_null());
	json_object_set_new(p->data, "version", rs->found ? json_string(rs->version) : json_null());
	struct backend_probe bp;
	gvisor_ops.probe(&bp);
	if (!bp.ok) {
		p->st = ST_MISSING;
		doctor_detail(p, "%s", bp.why);
		return;
	}
	json_t *plat = json_object();
	doctor_detail(p, "runsc %s:", rs->version);
	static const char *const platforms[] = {"ptrace", "kvm"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(platforms); i++) {
		const char *name = platforms[i];
		json_t *o = json_object();
		char why[256] = "";
		double ms = 0;
		int fd = -1;
		if (!strcmp(name, "kvm") && (fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) < 0)
			snprintf(why, sizeof(why), "/dev/kvm: %s", strerror(errno));
		else if (trial(name, &ms, why, sizeof(why)) == 0)
			why[0] = '\0';
		if (fd >= 0)
			close(fd);
		bool works = !why[0];
		json_object_set_new(o, "works", json_boolean(works));
		json_object_set_new(o, "why_not", works ? json_null() : json_string(why));
		if (ms > 0)
			json_object_set_new(o, "trial_ms", json_real(ms));
		json_object_set_new(plat, name, o);
		if (works)
			doctor_detail(p, " %s works (/bin/true in %.0f ms)%s", name, ms,
				      !strcmp(name, "ptrace") ? " [used];"
							      : " [WARDEN_GVISOR_PLATFORM=kvm];");
		else
			doctor_detail(p, " %s: %s;", name, why);
		if (!strcmp(name, "ptrace"))
			*ok = works;
	}
	json_object_set_new(p->data, "platforms", plat);
	p->st = *ok ? ST_OK : ST_MISSING;
}
