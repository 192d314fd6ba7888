/* approval.c - approval ids and the single-use approval store.
 *
 * An escape (a "pause") never widens the policy: a human approves one exact
 * request, once, for a while.  The id is a SHA-256 over six field digests:
 *
 *   id = SHA-256("warden-approval-v3" 0x00 || H(argv) || H(cwd) || H(env)
 *                || H(workspace identity) || policy digest
 *                || H(system identity) || state print)
 *
 * Each H() is over length-prefixed items (8-byte little-endian length, then
 * the bytes), so ["ab","c"] and ["a","bc"] differ.  Any change to one
 * argument, the working directory, the environment passed in, the workspace
 * (device, inode and path), the effective policy or the system the command
 * runs on (an image's rootfs by device, inode and path, or "host") gives
 * another id, which the recorded approval does not cover: the same words
 * under another image run other programs (its git, its python3's
 * site-packages), so a grant under one image must not be spent under
 * another the model picks.  v2: v1 ids had no system field; an approval
 * or pending record from v1 no longer matches anything.
 *
 * v3: the state.  The human reads build.py and approves `python3
 * build.py`; between the pause and the retry the model could rewrite
 * build.py (another allowed command, a file tool, a detached command, a
 * sitecustomize.py in a session's home), and the words alone still
 * matched.  The state print (util/tree.c) covers every entry of the trees
 * the command reads that persist and that the model can write: the
 * workspace as the command sees it and, in a session, its home and /tmp.
 * Any change between the pause and the retry is another id: it pauses
 * again.  A walk that could not see everything matches nothing.
 *
 * The store is a directory (0700) under $WARDEN_STATE_DIR, else
 * $XDG_STATE_HOME/warden, else /var/lib/warden for root, else
 * ~/.local/state/warden:
 *   pending/<id>.json    written when a command pauses: what would run
 *   approvals/<id>.json  written by `warden approve`: the pending record
 *                        plus "granted" and "expires" (Unix seconds)
 * Consumption is a rename() of approvals/<id>.json to a unique name, which
 * exactly one of several concurrent runs can win; the winner then checks
 * expiry and deletes it.  Single use holds without any lock.
 */
#include "policy/policy.h"
#include "policy/store.h"

#include "audit/audit.h"
#include "util/sha256.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const policy_id_field_names[POLICY_ID_FIELDS] = {
    "argv", "cwd", "env", "workspace", "policy", "system", "state"};

const struct policy_state *
policy_request_state(const struct policy_request *req, uint64_t max_entries,
		     struct policy_state *scratch)
{
	struct policy_state *st = req->state ? req->state : scratch;
	if (st->done)
		return st;
	struct wd_tree_print t;
	wd_tree_print_init(&t);
	t.max_entries = max_entries;
	if (req->state_roots) {
		const char *labels[POLICY_STATE_ROOTS_MAX];
		int fds[POLICY_STATE_ROOTS_MAX];
		int n = req->state_roots(req->state_arg, labels, fds, POLICY_STATE_ROOTS_MAX);
		if (n < 0)
			wd_tree_print_add(&t, "(the sandbox's state)", -1);
		if (n > 0)
			snprintf(st->where, sizeof(st->where), "%s", labels[0]);
		for (int i = 0; i < n; i++) {
			wd_tree_print_add(&t, labels[i], fds[i]);
			if (fds[i] >= 0)
				close(fds[i]);
		}
	} else if (req->workspace_fd >= 0) {
		snprintf(st->where, sizeof(st->where), "workspace");
		wd_tree_print_add(&t, "workspace", req->workspace_fd);
	}
	wd_tree_print_final(&t, st->hex);
	st->entries = t.entries;
	st->complete = t.complete;
	st->bound = t.bounded ? max_entries : 0;
	snprintf(st->unseen, sizeof(st->unseen), "%s", t.unseen);
	st->done = true;
	return st;
}

static void
feed_item(struct wd_sha256 *c, const char *s)
{
	uint64_t n = strlen(s);
	unsigned char le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(n >> (8 * i));
	wd_sha256_update(c, le, sizeof(le));
	wd_sha256_update(c, s, (size_t)n);
}

static void
finish(struct wd_sha256 *c, char out[65])
{
	unsigned char md[32];
	wd_sha256_final(c, md);
	wd_sha256_hex(md, out);
}

void
policy_approval_id(const struct config_policy *p, const struct policy_request *req, int argc,
		   const char *const *argv, char id[65], char fields[POLICY_ID_FIELDS][65])
{
	char f[POLICY_ID_FIELDS][65];
	struct wd_sha256 c[1];

	wd_sha256_init(c);
	for (int i = 0; i < argc; i++)
		feed_item(c, argv[i]);
	finish(c, f[0]);

	wd_sha256_init(c);
	feed_item(c, req->cwd && *req->cwd ? req->cwd : ".");
	finish(c, f[1]);

	wd_sha256_init(c);
	for (size_t i = 0; i < req->nenv; i++)
		feed_item(c, req->env[i]);
	finish(c, f[2]);

	wd_sha256_init(c);
	feed_item(c, req->workspace_id ? req->workspace_id : req->workspace ? req->workspace : "");
	finish(c, f[3]);

	memcpy(f[4], p->digest, 65);

	wd_sha256_init(c);
	feed_item(c, req->system_id	? req->system_id
		     : req->system_root ? req->system_root
					: "host");
	finish(c, f[5]);

	struct policy_state scratch = {0};
	memcpy(f[6], policy_request_state(req, p->approval_max_state_entries, &scratch)->hex, 65);

	wd_sha256_init(c);
	wd_sha256_update(c, "warden-approval-v3", sizeof("warden-approval-v3"));
	for (int i = 0; i < POLICY_ID_FIELDS; i++)
		wd_sha256_update(c, f[i], 64);
	finish(c, id);
	if (fields)
		memcpy(fields, f, sizeof(f));
}

/* ---- the store ---- */

static int
mkdir_p(const char *dir, struct wd_err *err)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp))
		return wd_err_set(err, WD_E_INVAL, "path too long: %s", dir);
	for (char *p = tmp + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
				return wd_err_sys(err, errno, "mkdir %s", tmp);
			*p = c;
			if (!c)
				break;
		}
	}
	return 0;
}

static bool
valid_id(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

static int
write_json(const char *dir, const char *sub, const char *id, json_t *obj, struct wd_err *err)
{
	char d[PATH_MAX], path[PATH_MAX + 80], tmp[PATH_MAX + 100];
	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	int rc = mkdir_p(d, err);
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/%s.json", d, id);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", d, id, (int)getpid());
	if (json_dump_file(obj, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
		return wd_err_sys(err, errno ? errno : EIO, "write %s", tmp);
	chmod(tmp, 0600);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return wd_err_sys(err, e, "rename %s", path);
	}
	return 0;
}

int
policy_pending_record(const char *state, const char *id, json_t *info, struct wd_err *err)
{
	return write_json(state, "pending", id, info, err);
}

int
policy_pending_find(const char *state, const char *prefix, char id[65], json_t **info,
		    struct wd_err *err)
{
	char d[PATH_MAX];
	if (!valid_id(prefix))
		return wd_err_set(err, WD_E_INVAL,
				  "'%s' is not an approval id (64 hex digits, or a unique prefix)",
				  prefix);
	if (strlen(prefix) < 8)
		return wd_err_set(err, WD_E_INVAL,
				  "approval id '%s' is too short (8 digits or more)", prefix);
	snprintf(d, sizeof(d), "%s/pending", state);
	DIR *dir = opendir(d);
	if (!dir)
		return wd_err_set(err, WD_E_INVAL, "no paused command with id %s", prefix);
	size_t pl = strlen(prefix), found = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		const char *n = de->d_name;
		if (strlen(n) == 69 && !strcmp(n + 64, ".json") && !strncmp(n, prefix, pl)) {
			if (found++ == 0) {
				memcpy(id, n, 64);
				id[64] = '\0';
			}
		}
	}
	closedir(dir);
	if (found == 0)
		return wd_err_set(err, WD_E_INVAL, "no paused command with id %s", prefix);
	if (found > 1)
		return wd_err_set(err, WD_E_INVAL, "approval id prefix %s is ambiguous", prefix);
	char path[PATH_MAX + 80];
	snprintf(path, sizeof(path), "%s/%s.json", d, id);
	json_error_t je;
	*info = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!*info || !json_is_object(*info)) {
		json_decref(*info);
		*info = NULL;
		return wd_err_set(err, WD_E_INVAL, "%s: damaged pending record", path);
	}
	return 0;
}

int
policy_approval_grant(const char *state, const char *id, json_t *info, uint64_t ttl_s,
		      struct wd_err *err)
{
	time_t now = time(NULL);
	/* Recorded in info too, so that the caller reports the very expiry
	 * written here (warden approve --json), not a second reading of the
	 * clock. */
	json_object_set_new(info, "granted", json_integer((json_int_t)now));
	json_object_set_new(info, "expires", json_integer((json_int_t)now + (json_int_t)ttl_s));
	return write_json(state, "approvals", id, info, err);
}

int
policy_approval_take(const char *state, const char *id, json_t **info, struct wd_err *err)
{
	char path[PATH_MAX + 80], taken[PATH_MAX + 120];
	*info = NULL;
	if (!valid_id(id))
		return POLICY_APPROVAL_NONE;
	snprintf(path, sizeof(path), "%s/approvals/%s.json", state, id);
	char rnd[33];
	audit_random_id(rnd);
	snprintf(taken, sizeof(taken), "%s/approvals/.%s.taken.%s", state, id, rnd);
	/* rename() is the single-use gate: only one taker can move the file. */
	if (rename(path, taken) < 0) {
		if (errno == ENOENT)
			return POLICY_APPROVAL_NONE;
		return wd_err_sys(err, errno, "take approval %s", path);
	}
	json_error_t je;
	json_t *o = json_load_file(taken, JSON_REJECT_DUPLICATES, &je);
	unlink(taken);
	if (!o || !json_is_integer(json_object_get(o, "expires"))) {
		json_decref(o);
		return wd_err_set(err, WD_E_INVAL, "%s: damaged approval record", path);
	}
	*info = o;
	if ((json_int_t)time(NULL) > json_integer_value(json_object_get(o, "expires")))
		return POLICY_APPROVAL_EXPIRED;
	/* The pending record is done with: the approval covered it. */
	snprintf(path, sizeof(path), "%s/pending/%s.json", state, id);
	unlink(path);
	return POLICY_APPROVAL_OK;
}

int
policy_approval_peek(const char *state, const char *id)
{
	char path[PATH_MAX + 80];
	if (!valid_id(id))
		return POLICY_APPROVAL_NONE;
	snprintf(path, sizeof(path), "%s/approvals/%s.json", state, id);
	json_error_t je;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return POLICY_APPROVAL_NONE;
	json_t *e = json_object_get(o, "expires");
	int rc = json_is_integer(e) && (json_int_t)time(NULL) <= json_integer_value(e)
		     ? POLICY_APPROVAL_OK
		     : POLICY_APPROVAL_EXPIRED;
	json_decref(o);
	return rc;
}

/* Whether the recorded argv is the same command with other arguments: same
 * program, same number of words. */
static bool
same_shape(json_t *rec, int argc, const char *const *argv)
{
	json_t *a = json_object_get(rec, "argv");
	if (!json_is_array(a) || json_array_size(a) != (size_t)argc || argc < 1)
		return false;
	const char *p0 = json_string_value(json_array_get(a, 0));
	return p0 && !strcmp(p0, argv[0]);
}

int
policy_approval_near(const char *state, char fields[POLICY_ID_FIELDS][65], int argc,
		     const char *const *argv, char near_id[65], char *differs, size_t cap)
{
	char d[PATH_MAX];
	snprintf(d, sizeof(d), "%s/approvals", state);
	DIR *dir = opendir(d);
	if (!dir)
		return 0;
	int best = -1;
	struct dirent *de;
	while ((de = readdir(dir))) {
		const char *n = de->d_name;
		if (strlen(n) != 69 || strcmp(n + 64, ".json"))
			continue;
		char path[PATH_MAX + 80];
		snprintf(path, sizeof(path), "%s/%s", d, n);
		json_error_t je;
		json_t *o = json_load_file(path, 0, &je);
		json_t *f = o ? json_object_get(o, "fields") : NULL;
		if (!json_is_object(f)) {
			json_decref(o);
			continue;
		}
		int same = 0;
		char diff[128] = "";
		for (int i = 0; i < POLICY_ID_FIELDS; i++) {
			const char *v =
			    json_string_value(json_object_get(f, policy_id_field_names[i]));
			if (v && !strcmp(v, fields[i]))
				same++;
			else
				snprintf(diff + strlen(diff), sizeof(diff) - strlen(diff), "%s%s",
					 diff[0] ? ", " : "", policy_id_field_names[i]);
		}
		bool argv_same = !strncmp(diff, "argv", 4) ? false : true;
		bool shape =
		    argv_same || (same == POLICY_ID_FIELDS - 1 && same_shape(o, argc, argv));
		json_decref(o);
		/* "Near": all but one or two fields agree.  The argv must agree
		 * unless it is the only difference and the command has the same
		 * shape (one argument changed): an approval for `git push` is not
		 * reported against every other paused command. */
		if (shape && same >= POLICY_ID_FIELDS - 2 && same < POLICY_ID_FIELDS &&
		    same > best) {
			best = same;
			memcpy(near_id, n, 64);
			near_id[64] = '\0';
			snprintf(differs, cap, "%s", diff);
		}
	}
	closedir(dir);
	return best >= 0;
}
