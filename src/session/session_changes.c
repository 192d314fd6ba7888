/* session/session_changes: a session's snapshots, and its change set
 * (diff, apply, discard) through its monitor when it runs, or in the
 * calling process when it is stopped.  See session.c. */
#include "session/session.h"
#include "util/json.h"
#include "workspace/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <jansson.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

/* ---- snapshots ---- */

int
session_snapshot_copy(int sbdir, const char *tag, int disk, struct wd_err *err)
{
	if (!ws_name_ok(tag))
		return wd_err_set(err, WD_E_INVAL,
				  "bad tag '%s': a letter or digit, then letters, digits, '_', '.' "
				  "or '-', at most 63",
				  tag);
	if (mkdirat(sbdir, "snapshots", 0700) < 0 && errno != EEXIST)
		return wd_err_sys(err, errno, "create snapshots/");
	wd_autoclose int sn =
	    openat(sbdir, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sn < 0)
		return wd_err_sys(err, errno, "snapshots/");
	if (mkdirat(sn, tag, 0700) < 0) {
		if (errno == EEXIST) {
			wd_err_set(err, WD_E_INVAL, "the snapshot '%s' exists already", tag);
			return -EEXIST;
		}
		return wd_err_sys(err, errno, "create the snapshot");
	}
	wd_autoclose int to = openat(sn, tag, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc = to < 0 ? wd_err_sys(err, errno, "the snapshot") : 0;
	struct ws_freeze fz = {-1, -1, -1};
	if (rc == 0 && disk >= 0)
		rc = ws_disk_freeze(disk, &fz, err);
	if (rc == 0 && faccessat(sbdir, "disk.img", F_OK, 0) == 0)
		rc = ws_copy_sparse(sbdir, "disk.img", to, "disk.img", err);
	if (rc == 0 && faccessat(sbdir, WS_LAYERS, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		rc = ws_copy_tree(sbdir, WS_LAYERS, to, WS_LAYERS, err);
	if (disk >= 0)
		ws_disk_thaw(&fz);
	if (rc == 0 && faccessat(sbdir, "baseline", F_OK, 0) == 0)
		rc = ws_copy_sparse(sbdir, "baseline", to, "baseline", err);
	if (rc == 0)
		rc = ws_copy_sparse(sbdir, "meta.json", to, "meta.json", err);
	if (rc < 0)
		wd_rm_tree_at(sn, tag);
	return rc;
}

/* A stopped session's layers, opened here; lock: the session's monitor
 * lock, so that no monitor mounts the same disk meanwhile. */
static int
open_offline(struct where *w, struct box **b, int *lock, struct wd_err *err)
{
	*lock = openat(w->sbdir, "monitor.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (*lock < 0)
		return wd_err_sys(err, errno, "monitor.lock");
	if (flock(*lock, LOCK_EX | LOCK_NB) < 0) {
		wd_close_reset(lock);
		wd_err_set(err, WD_E_INVAL, "the sandbox is busy (starting or running)");
		return -EBUSY;
	}
	json_t *meta = NULL;
	wd_spec *spec = NULL;
	int rc = ws_meta_read(w->sbdir, &meta, err);
	if (rc == 0)
		rc = spec_from_json(json_object_get(meta, "spec"), &spec, err);
	json_decref(meta);
	if (rc == 0 && spec->ws_mode != WD_WORKSPACE_COW)
		rc = wd_err_set(err, WD_E_INVAL,
				"sandbox %s has a direct workspace: what it wrote is on the host "
				"already",
				w->id);
	if (rc == 0)
		rc = box_open(w->root, w->id, spec, b, err);
	wd_spec_free(spec);
	if (rc < 0)
		wd_close_reset(lock);
	return rc;
}

/* An ordinary user's session: its layers are read and written from a
 * user namespace of ours (ws_userns_run), where the files the sandbox
 * made unreadable to us are not, and the overlay can be mounted (a
 * partial discard writes through it). */
static bool
user_layers(const struct where *w)
{
	return geteuid() != 0 && faccessat(w->sbdir, WS_LAYERS, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

struct offline_op {
	struct where *w;
	const char *op, *tag, *expect;
	const char *const *paths;
	size_t np;
	unsigned flags;
};

static int
snapshot_in_ns(void *arg, char **out, struct wd_err *err)
{
	struct offline_op *o = arg;
	(void)out;
	/* the state directory again, from this mount namespace */
	wd_autoclose int sb = ws_state_sandboxes(o->w->root, err);
	if (sb < 0)
		return sb;
	wd_autoclose int dir =
	    openat(sb, o->w->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return wd_err_sys(err, errno, "the session's state");
	return session_snapshot_copy(dir, o->tag, -1, err);
}

static int
snapshot_user(struct where *w, const char *tag, struct wd_err *err)
{
	struct offline_op o = {.w = w, .tag = tag};
	return ws_userns_run(snapshot_in_ns, &o, NULL, err);
}

static int open_offline(struct where *w, struct box **b, int *lock, struct wd_err *err);

static int
changes_in_ns(void *arg, char **out, struct wd_err *err)
{
	struct offline_op *o = arg;
	struct box *b = NULL;
	int lock = -1;
	int rc = open_offline(o->w, &b, &lock, err);
	if (rc < 0)
		return rc;
	if (!strcmp(o->op, "diff"))
		rc = box_diff(b, o->paths, o->np, o->flags, out, err);
	else if (!strcmp(o->op, "apply"))
		rc = box_apply(b, o->paths, o->np, o->expect, o->flags, out, err);
	else
		rc = box_discard(b, o->paths, o->np, false, err);
	box_close(b);
	close(lock);
	return rc;
}

/* diff, apply or discard of a stopped session, here or (an ordinary
 * user's) in a user namespace */
static int
offline(struct offline_op *o, char **out, struct wd_err *err)
{
	if (user_layers(o->w))
		return ws_userns_run(changes_in_ns, o, out, err);
	return changes_in_ns(o, out, err);
}

WD_API int
wd_session_snapshot(wd_ctx *ctx, const char *ref, const char *tag, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0) {
		struct jw j;
		jw_init(&j, 0);
		jw_obj_begin(&j);
		jw_kstr(&j, "op", "snapshot");
		jw_kstr(&j, "tag", tag);
		jw_obj_end(&j);
		char *req = jw_steal(&j);
		rc = session_call(w.sbdir, req, NULL, 0, NULL, NULL, NULL, err);
		free(req);
		if (rc == -ESRCH) {
			int lk = openat(w.sbdir, "monitor.lock",
					O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
			if (lk >= 0 && flock(lk, LOCK_EX | LOCK_NB) == 0)
				rc = user_layers(&w) ? snapshot_user(&w, tag, err)
						     : session_snapshot_copy(w.sbdir, tag, -1, err);
			else
				rc = wd_err_set(err, WD_E_INVAL, "the sandbox is busy (starting)");
			if (lk >= 0)
				close(lk);
		}
	}
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

/* The disk space of the tree at name in dir: blocks, not sizes (a disk
 * image is sparse).  Never follows a link; what cannot be read (a
 * directory the sandbox made mode 000) counts as nothing. */
static uint64_t
tree_bytes(int dir, const char *name, int depth)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	uint64_t n = (uint64_t)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode) || depth > 64)
		return n;
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return n;
	}
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n += tree_bytes(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	return n;
}

/* The snapshots of the session in sbdir (id, name) as objects of j. */
static void
snapshots_of(struct jw *j, int sbdir, const char *id)
{
	json_t *meta = NULL;
	if (ws_meta_read(sbdir, &meta, NULL) < 0 ||
	    !json_is_true(json_object_get(meta, "session"))) {
		json_decref(meta);
		return;
	}
	const char *name = json_string_value(json_object_get(meta, "name"));
	int sn = openat(sbdir, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **tags = NULL;
	size_t n = sn >= 0 ? session_dir_names(sn, ws_name_ok, &tags) : 0;
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		jw_obj_begin(j);
		jw_kstr(j, "session", id);
		jw_kstr(j, "name", name);
		jw_kstr(j, "tag", tags[i]);
		char *full = wd_xasprintf("%s@%s", name ? name : id, tags[i]);
		jw_kstr(j, "snapshot", full);
		free(full);
		jw_kint(j, "created",
			fstatat(sn, tags[i], &st, AT_SYMLINK_NOFOLLOW) == 0 ? (long long)st.st_mtime
									    : 0);
		jw_kuint(j, "bytes", tree_bytes(sn, tags[i], 0));
		jw_obj_end(j);
		free(tags[i]);
	}
	free(tags);
	if (sn >= 0)
		close(sn);
	json_decref(meta);
}

static char *
snapshots_text(const char *json)
{
	json_t *a = json_loads(json, 0, NULL);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	fprintf(f, "%-40s  %-5s  %s\n", "SNAPSHOT", "AGE", "SIZE");
	size_t i;
	json_t *s;
	json_array_foreach(a, i, s)
	{
		long long d =
		    (long long)time(NULL) - json_integer_value(json_object_get(s, "created"));
		char agebuf[32], size[32];
		if (d < 0)
			d = 0;
		if (d < 120)
			snprintf(agebuf, sizeof(agebuf), "%llds", d);
		else if (d < 7200)
			snprintf(agebuf, sizeof(agebuf), "%lldm", d / 60);
		else if (d < 172800)
			snprintf(agebuf, sizeof(agebuf), "%lldh", d / 3600);
		else
			snprintf(agebuf, sizeof(agebuf), "%lldd", d / 86400);
		double b = (double)json_integer_value(json_object_get(s, "bytes"));
		const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
		int k = 0;
		while (b >= 1024 && k < 4) {
			b /= 1024;
			k++;
		}
		snprintf(size, sizeof(size), k ? "%.1f %s" : "%.0f %s", b, u[k]);
		fprintf(f, "%-40s  %-5s  %s\n", json_string_value(json_object_get(s, "snapshot")),
			agebuf, size);
	}
	fclose(f);
	json_decref(a);
	return text;
}

WD_API int
wd_session_snapshot_list(wd_ctx *ctx, const char *ref, bool json, char **out, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct jw j;
	jw_init(&j, 0);
	jw_arr_begin(&j);
	int rc = 0;
	if (ref) {
		struct where w;
		if ((rc = session_locate(ctx, ref, &w, err)) == 0)
			snapshots_of(&j, w.sbdir, w.id);
		session_where_fini(&w);
	} else {
		char root[4096];
		rc = ctx_state_root(ctx, root, sizeof(root), err);
		int sfd = rc < 0 ? rc : ws_state_sandboxes(root, err);
		if (sfd < 0) {
			rc = sfd;
		} else {
			char **ids = NULL;
			size_t n = session_dir_names(sfd, session_is_id, &ids);
			for (size_t i = 0; i < n; i++) {
				int fd = openat(sfd, ids[i],
						O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (fd >= 0) {
					snapshots_of(&j, fd, ids[i]);
					close(fd);
				}
				free(ids[i]);
			}
			free(ids);
			close(sfd);
		}
	}
	jw_arr_end(&j);
	jw_raw(&j, "\n", 1);
	char *list = jw_steal(&j);
	if (rc < 0) {
		free(list);
	} else if (json) {
		*out = list;
	} else {
		*out = snapshots_text(list);
		free(list);
	}
	CTX_LEAVE();
	return rc;
}

WD_API int
wd_session_snapshot_remove(wd_ctx *ctx, const char *ref, const char *tag, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	int rc = session_locate(ctx, ref, &w, err);
	int sn = -1, snap = -1;
	if (rc == 0 && !ws_name_ok(tag)) {
		rc = wd_err_set(err, WD_E_INVAL, "bad tag '%s' (warden snapshot ls lists them)",
				tag);
	} else if (rc == 0) {
		sn = openat(w.sbdir, "snapshots", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		snap =
		    sn < 0 ? -1 : openat(sn, tag, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (snap < 0) {
			wd_err_set(err, WD_E_INVAL,
				   "no snapshot '%s@%s' (warden snapshot ls lists them)", ref, tag);
			rc = -ENOENT;
		} else if (flock(snap, LOCK_EX | LOCK_NB) < 0) {
			/* warden create --from holds it shared while it copies */
			wd_err_set(err, WD_E_INVAL,
				   "the snapshot '%s@%s' is being copied (warden create --from): "
				   "try again when that is done",
				   ref, tag);
			rc = -EBUSY;
		} else if ((rc = wd_rm_tree_at(sn, tag)) < 0) {
			wd_err_sys(err, -rc, "remove the snapshot '%s@%s'", ref, tag);
		}
	}
	if (snap >= 0)
		close(snap);
	if (sn >= 0)
		close(sn);
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

/* ---- diff, apply, discard ---- */

static char *
changes_request(const char *op, const char *const *paths, size_t np, const char *key, unsigned v,
		const char *expect)
{
	struct jw j;
	jw_init(&j, 0);
	jw_obj_begin(&j);
	jw_kstr(&j, "op", op);
	jw_key(&j, "paths");
	jw_arr_begin(&j);
	for (size_t i = 0; i < np; i++)
		jw_str(&j, paths[i]);
	jw_arr_end(&j);
	if (key)
		jw_kuint(&j, key, v);
	if (expect)
		jw_kstr(&j, "expect", expect);
	jw_obj_end(&j);
	return jw_steal(&j);
}

WD_API int
wd_session_diff(wd_ctx *ctx, const char *ref, const char *const *paths, size_t np, unsigned flags,
		char **out, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0) {
		char *req = changes_request("diff", paths, np, "flags", flags, NULL);
		rc = session_call(w.sbdir, req, NULL, 0, NULL, out, NULL, err);
		free(req);
		if (rc == -ESRCH) {
			struct offline_op o = {
			    .w = &w, .op = "diff", .paths = paths, .np = np, .flags = flags};
			rc = offline(&o, out, err);
		}
	}
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

WD_API int
wd_session_apply(wd_ctx *ctx, const char *ref, const char *const *paths, size_t np,
		 const char *expect, unsigned flags, char **report, struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0) {
		char *req = changes_request("apply", paths, np, "flags", flags, expect);
		json_t *resp = NULL;
		char *rep = NULL;
		rc = session_call(w.sbdir, req, NULL, 0, &resp, &rep, NULL, err);
		free(req);
		if (rc == 0) {
			rc = (int)json_integer_value(json_object_get(resp, "status"));
			if (report)
				*report = wd_steal_ptr(&rep);
		} else if (rc == -ESRCH) {
			struct offline_op o = {.w = &w,
					       .op = "apply",
					       .paths = paths,
					       .np = np,
					       .expect = expect,
					       .flags = flags};
			char *text = NULL;
			rc = offline(&o, &text, err);
			if (report)
				*report = text;
			else
				free(text);
		}
		free(rep);
		json_decref(resp);
	}
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}

WD_API int
wd_session_discard(wd_ctx *ctx, const char *ref, const char *const *paths, size_t np,
		   struct wd_err *err)
{
	CTX_ENTER(ctx);
	struct where w;
	int rc = session_locate(ctx, ref, &w, err);
	if (rc == 0) {
		char *req = changes_request("discard", paths, np, NULL, 0, NULL);
		json_t *resp = NULL;
		rc = session_call(w.sbdir, req, NULL, 0, &resp, NULL, NULL, err);
		free(req);
		if (rc == 0) {
			rc = (int)json_integer_value(json_object_get(resp, "dropped"));
		} else if (rc == -ESRCH) {
			struct offline_op o = {.w = &w, .op = "discard", .paths = paths, .np = np};
			rc = offline(&o, NULL, err);
		}
		json_decref(resp);
	}
	session_where_fini(&w);
	CTX_LEAVE();
	return rc;
}
