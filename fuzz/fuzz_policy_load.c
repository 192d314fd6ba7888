/* fuzz_policy_load: the policy document loader.  Errors must carry
 * NAME:LINE:COLUMN; an accepted document's effective form must load again
 * to the same digest. */
#include "config/config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_policy *p = NULL, *q = NULL;
	struct wd_err e = {0};
	if (config_load_buffer((const char *)data, size, "f", &p, &e) < 0) {
		if (strncmp(e.msg, "f:", 2) != 0)
			abort();
		return 0;
	}
	json_t *j = config_policy_to_json(p);
	/* built-in profiles are output only */
	json_t *profs = json_object_get(j, "profiles");
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe(profs, tmp, k, v)
	{
		if (json_is_true(json_object_get(v, "builtin")))
			json_object_del(profs, k);
	}
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		abort();
	if (config_load_buffer(s, strlen(s), "g", &q, &e) < 0) {
		fprintf(stderr, "effective policy does not reload: %s\n%s\n", e.msg, s);
		abort();
	}
	if (strcmp(p->digest, q->digest))
		abort();
	free(s);
	config_policy_free(p);
	config_policy_free(q);
	return 0;
}
