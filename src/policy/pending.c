/* pending.c - the list of paused commands waiting for a human, for a
 * human's channel (warden serve's approval.list, a UI).  Reads the store
 * of approval.c: pending/<id>.json, approvals/<id>.json. */
#include "policy/policy.h"
#include "policy/store.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* One pending record as listed: what would run and why it paused; never
 * the audit path or the field digests. */
static json_t *
listed(const char *state, const char *id, json_t *rec)
{
	static const char *const keep[] = {"argv",   "env",	      "cwd",	 "workspace",
					   "system", "state",	      "rule",	 "reason",
					   "policy", "policy_source", "created", "ttl"};
	json_t *o = json_object();
	json_object_set_new(o, "id", json_string(id));
	for (size_t i = 0; i < WD_ARRAY_SIZE(keep); i++) {
		json_t *v = json_object_get(rec, keep[i]);
		if (v)
			json_object_set(o, keep[i], v);
	}
	int st = policy_approval_peek(state, id);
	json_object_set_new(o, "approved", json_boolean(st == POLICY_APPROVAL_OK));
	return o;
}

static int
by_created(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "created"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "created"));
	return x < y ? -1 : x > y;
}

WD_API int
wd_approval_list(char **out, struct wd_err *err)
{
	char state[PATH_MAX], d[PATH_MAX + 16];
	int rc = wd_state_dir(state, sizeof(state), err);
	if (rc < 0)
		return rc;
	snprintf(d, sizeof(d), "%s/pending", state);
	json_t *arr = json_array();
	DIR *dir = opendir(d);
	if (!dir && errno != ENOENT) {
		json_decref(arr);
		return wd_err_sys(err, errno, "%s", d);
	}
	struct dirent *de;
	while (dir && (de = readdir(dir))) {
		const char *n = de->d_name;
		if (strlen(n) != 69 || strcmp(n + 64, ".json") ||
		    strspn(n, "0123456789abcdef") != 64)
			continue;
		char path[PATH_MAX + 96], id[65];
		snprintf(path, sizeof(path), "%s/%s", d, n);
		memcpy(id, n, 64);
		id[64] = '\0';
		json_error_t je;
		json_t *rec = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(rec)) {
			/* a damaged record is skipped, as `warden approve` would
			 * refuse it */
			json_decref(rec);
			continue;
		}
		json_array_append_new(arr, listed(state, id, rec));
		json_decref(rec);
	}
	if (dir)
		closedir(dir);
	size_t n = json_array_size(arr);
	json_t **v = wd_xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(arr, i));
	qsort(v, n, sizeof(*v), by_created);
	json_array_clear(arr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, v[i]);
	free(v);
	*out = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	if (!*out)
		abort();
	return 0;
}
