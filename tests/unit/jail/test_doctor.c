/* Unit tests for wd_doctor (src/doctor/doctor.c): its probes are the
 * jail's seccomp and Landlock code, so they live with the jail's tests.
 * The report must be consistent with itself and with what the jail layer
 * sees directly: the level bits with the JSON, the Landlock ABI with
 * jail_landlock_abi(), the seccomp verdict with a load of the filter. */
#include "jail/landlock.h"
#include "jail/seccomp.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

static const char *const probe_names[] = {
    "userns", "seccomp", "landlock", "cgroup", "overlayfs", "idmap", "kernel-config", "gvisor",
};

Test(wd_doctor, json_is_one_consistent_object)
{
	unsigned ok = ~0u;
	char *s = wd_doctor(true, &ok);
	cr_assert(s);
	json_error_t je;
	json_t *root = json_loads(s, 0, &je);
	cr_assert(root, "doctor --json is not JSON: %s at %d:%d", je.text, je.line, je.column);
	cr_assert(json_is_object(root));

	json_t *probes = json_object_get(root, "probes");
	cr_assert(json_is_object(probes));
	for (size_t i = 0; i < sizeof(probe_names) / sizeof(probe_names[0]); i++) {
		json_t *p = json_object_get(probes, probe_names[i]);
		cr_assert(json_is_object(p), "no probe %s", probe_names[i]);
		const char *st = json_string_value(json_object_get(p, "status"));
		cr_assert(st, "probe %s has no status", probe_names[i]);
		cr_expect(!strcmp(st, "ok") || !strcmp(st, "warn") || !strcmp(st, "missing"),
			  "probe %s: status %s", probe_names[i], st);
		cr_expect(json_is_string(json_object_get(p, "detail")));
	}

	json_t *levels = json_object_get(root, "levels");
	bool c = json_is_true(json_object_get(json_object_get(levels, "container"), "ok"));
	bool p = json_is_true(json_object_get(json_object_get(levels, "process"), "ok"));
	bool g = json_is_true(json_object_get(json_object_get(levels, "gvisor"), "ok"));
	cr_expect_eq(!!(ok & (1u << WD_ISOLATION_CONTAINER)), c);
	cr_expect_eq(!!(ok & (1u << WD_ISOLATION_PROCESS)), p);
	cr_expect_eq(!!(ok & (1u << WD_ISOLATION_GVISOR)), g);
	cr_expect_eq(json_array_size(json_object_get(root, "ok_levels")), (size_t)c + p + g);
	/* gvisor is a level only where its probe saw a sandbox run */
	json_t *gp = json_object_get(probes, "gvisor");
	cr_expect_eq(!strcmp(json_string_value(json_object_get(gp, "status")), "ok"), g);

	/* seccomp is what both levels stand on; this kernel has it */
	json_t *sec = json_object_get(probes, "seccomp");
	cr_expect_str_eq(json_string_value(json_object_get(sec, "status")), "ok");
	cr_expect(p, "process level refused although seccomp works");
	cr_expect_eq(json_integer_value(json_object_get(sec, "refused_syscalls")),
		     (json_int_t)jail_seccomp_rule_count);

	json_t *ll = json_object_get(probes, "landlock");
	cr_expect_eq(json_integer_value(json_object_get(ll, "abi")), jail_landlock_abi());
	cr_expect_eq(json_is_true(json_object_get(ll, "enabled")), jail_landlock_abi() > 0);

	/* the container level needs user namespaces and vice versa */
	json_t *un = json_object_get(probes, "userns");
	cr_expect_eq(json_is_true(json_object_get(un, "usable")), c);

	json_decref(root);
	free(s);
}

Test(wd_doctor, text_has_a_line_per_probe_and_the_levels)
{
	unsigned ok = 0;
	char *s = wd_doctor(false, &ok);
	cr_assert(s);
	char want[64];
	for (size_t i = 0; i < sizeof(probe_names) / sizeof(probe_names[0]); i++) {
		snprintf(want, sizeof(want), " %s ", probe_names[i]);
		cr_expect(strstr(s, want), "no line for %s in:\n%s", probe_names[i], s);
	}
	cr_expect(strstr(s, "\nisolation levels:\n"));
	cr_expect(strstr(s, "\n  container  "));
	cr_expect(strstr(s, "\n  process    "));
	cr_expect(strstr(s, "\n  gvisor     "));
	cr_expect(ok & (1u << WD_ISOLATION_PROCESS));
	free(s);
}
