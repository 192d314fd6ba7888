/* store.h - private to src/policy: the approval store (approval.c). */
#ifndef WD_POLICY_STORE_H
#define WD_POLICY_STORE_H

#include "policy/policy.h"

enum {
	POLICY_APPROVAL_NONE = 0,
	POLICY_APPROVAL_OK = 1,
	POLICY_APPROVAL_EXPIRED = 2,
};

int policy_pending_record(const char *state, const char *id, json_t *info, struct wd_err *err);
/* Find a pending record by id or unique prefix (>= 8 hex digits). */
int policy_pending_find(const char *state, const char *prefix, char id[65], json_t **info,
			struct wd_err *err);
/* Record the approval; also sets "granted" and "expires" in info. */
int policy_approval_grant(const char *state, const char *id, json_t *info, uint64_t ttl_s,
			  struct wd_err *err);
/* Consume the approval for id: POLICY_APPROVAL_NONE, _OK or _EXPIRED (both
 * remove it), or -errno.  *info is the record (new reference) unless NONE. */
int policy_approval_take(const char *state, const char *id, json_t **info, struct wd_err *err);
/* Look without consuming: NONE, OK or EXPIRED. */
int policy_approval_peek(const char *state, const char *id);
/* An unconsumed approval that differs from fields in one or two fields:
 * returns 1 with its id and the differing field names ("policy, cwd"). */
int policy_approval_near(const char *state, char fields[POLICY_ID_FIELDS][65], int argc,
			 const char *const *argv, char near_id[65], char *differs, size_t cap);

#endif
