/* core/box: a sandbox's state in warden's state directory: its
 * directory under sandboxes/, meta.json, its disk, the baseline of a cow
 * workspace, and its layers opened (workspace/).
 *
 * A wd_sandbox with a cow workspace has an ephemeral box, removed with it;
 * should the process die first, the next box_create of the same state
 * directory sweeps it (meta.json names the process and its start time, so
 * a reused pid is not mistaken for it).  A session's box stays until the
 * session is removed. */
#include "core/core.h"
#include "jail/jail.h"
#include "workspace/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

bool
box_needed(const wd_spec *spec)
{
	return spec->ws_mode == WD_WORKSPACE_COW;
}

/* start time of pid (field 22 of /proc/PID/stat), 0 if it is gone */
static unsigned long long
proc_start(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ssize_t n = wd_read_file_at(AT_FDCWD, path, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	char *s = strrchr(buf, ')');
	if (!s)
		return 0;
	int field = 2;
	char *save = NULL; /* strtok_r: the library is called from many threads */
	for (char *tok = strtok_r(s + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		if (++field == 22)
			return strtoull(tok, NULL, 10);
	return 0;
}

void
box_sweep(const char *root)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/sandboxes", root);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 16)
			continue;
		int fd =
		    openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		json_t *m = NULL;
		bool stale = false;
		if (ws_meta_read(fd, &m, NULL) == 0 &&
		    json_is_true(json_object_get(m, "ephemeral"))) {
			json_int_t pid = json_integer_value(json_object_get(m, "pid"));
			json_int_t st = json_integer_value(json_object_get(m, "pid_start"));
			stale = pid > 0 && proc_start((pid_t)pid) != (unsigned long long)st;
		}
		json_decref(m);
		close(fd);
		if (stale) {
			wd_log(WD_LOG_INFO,
			       "removing the state of sandbox %s (its process is gone)",
			       de->d_name);
			wd_rm_tree_at(dirfd(d), de->d_name);
		}
	}
	closedir(d);
}

static int
unsupported(struct wd_err *err, const char *why)
{
	return wd_err_set(err, WD_E_UNSUPPORTED, "%s", why);
}

static int
params(const wd_spec *spec, struct ws_params *p, char **cwd, struct wd_err *err)
{
	memset(p, 0, sizeof(*p));
	p->workspace = spec->workspace;
	if (!p->workspace) {
		*cwd = realpath(".", NULL);
		if (!*cwd)
			return wd_err_sys(err, errno, "the current directory");
		p->workspace = *cwd;
	}
	p->cow = spec->ws_mode == WD_WORKSPACE_COW;
	bool root = geteuid() == 0;
	p->uid = root ? WD_NOBODY : geteuid();
	p->gid = root ? WD_NOBODY : getegid();
	p->protect = (const char *const *)spec->protect;
	p->nprotect = spec->nprotect;
	return 0;
}

static int
open_layers(struct box *b, int dfd, const wd_spec *spec, struct wd_err *err)
{
	struct ws_params p;
	wd_autofree char *cwd = NULL;
	int rc = params(spec, &p, &cwd, err);
	if (rc < 0) {
		close(dfd);
		return rc;
	}
	b->cow = p.cow;
	return ws_open(dfd, &p, &b->ws, err);
}

static struct box *
box_new(const char *root, const char *id)
{
	struct box *b = wd_xcalloc(1, sizeof(*b));
	snprintf(b->id, sizeof(b->id), "%s", id);
	snprintf(b->root, sizeof(b->root), "%s", root);
	b->sbdir = -1;
	pthread_mutex_init(&b->lock, NULL);
	return b;
}

int
box_create(wd_ctx *ctx, const wd_spec *spec, const char *id, bool ephemeral, struct box **out,
	   struct wd_err *err)
{
	if (!backend_can(spec->isolation, BACKEND_CAP_MOUNTS))
		return unsupported(err, "a cow workspace or a sandbox disk needs --isolation "
					"container (a mount namespace to show it in)");
	/* An ordinary user's sandbox has no disk (a loop device and an ext4
	 * mount need root): its layers are a directory, and the overlay over
	 * them is mounted in a user namespace of ours, which only a process
	 * that was single-threaded could enter (wd_userns_enter: warden run
	 * does; a server's cow sandboxes are sessions, whose monitors do).
	 * A bound asked for and not kept fails closed unless best effort. */
	bool root_mode = geteuid() == 0;
	int rc = 0;
	if (root_mode)
		rc = ws_disk_supported(err);
	else if ((rc = ws_layers_supported(err)) == 0 && !ws_userns_entered())
		rc = unsupported(err, "a cow sandbox of an ordinary user needs a process in a "
				      "user namespace of its own (warden run enters one; a "
				      "library caller, wd_userns_enter), or a session (warden "
				      "create --workspace-mode cow)");
	else if (rc == 0 && spec->disk_bytes && !spec->best_effort)
		rc = unsupported(err, "--disk needs root (a loop device and an ext4 mount); as "
				      "an ordinary user a cow sandbox's layers are a directory in "
				      "your state directory, bounded only by its file system: "
				      "drop --disk, or add --best-effort to run without the bound");
	if (rc < 0)
		return rc;
	char root[4096];
	if ((rc = ctx_state_root(ctx, root, sizeof(root), err)) < 0)
		return rc;
	struct box *b = box_new(root, id);
	b->ephemeral = ephemeral;
	if ((b->sbdir = ws_state_sandboxes(root, err)) < 0) {
		rc = b->sbdir;
		goto fail;
	}
	if (ephemeral)
		box_sweep(root);
	if (mkdirat(b->sbdir, id, 0700) < 0) {
		rc = wd_err_sys(err, errno, "create the sandbox's state %s/sandboxes/%s", root, id);
		goto fail;
	}
	int dfd = openat(b->sbdir, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		rc = wd_err_sys(err, errno, "open the sandbox's state");
		goto fail_dir;
	}
	json_t *meta =
	    json_pack("{s:s, s:I, s:b, s:I, s:I, s:o}", "id", id, "created", (json_int_t)time(NULL),
		      "ephemeral", ephemeral, "pid", (json_int_t)getpid(), "pid_start",
		      (json_int_t)proc_start(getpid()), "spec", spec_to_json(spec));
	rc = ws_meta_write(dfd, meta, err);
	json_decref(meta);
	uint64_t size = spec->disk_bytes ? spec->disk_bytes : WS_DISK_DEFAULT;
	if (rc == 0 && !root_mode)
		rc = ws_layers_create(dfd, err);
	else if (rc == 0)
		rc = ws_disk_create(dfd, "disk.img", size, WD_NOBODY, WD_NOBODY, err);
	if (rc == 0 && spec->ws_mode == WD_WORKSPACE_COW) {
		/* what the host holds now is what the sandbox first sees */
		wd_autofree char *cwd = spec->workspace ? NULL : realpath(".", NULL);
		wd_autoclose int wsfd =
		    open(spec->workspace ? spec->workspace : cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
		rc = wsfd < 0 ? wd_err_sys(err, errno, "the workspace")
			      : ws_baseline_record(dfd, wsfd, err);
	}
	if (rc < 0) {
		close(dfd);
		goto fail_dir;
	}
	if ((rc = open_layers(b, dfd, spec, err)) < 0)
		goto fail_dir;
	*out = b;
	return 0;
fail_dir:
	wd_rm_tree_at(b->sbdir, id);
fail:
	b->ephemeral = false;
	box_close(b);
	return rc;
}

int
box_open(const char *root, const char *id, const wd_spec *spec, struct box **out,
	 struct wd_err *err)
{
	struct box *b = box_new(root, id);
	int rc;
	if ((b->sbdir = ws_state_sandboxes(root, err)) < 0) {
		rc = b->sbdir;
		goto fail;
	}
	int dfd = openat(b->sbdir, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		rc = wd_err_sys(err, errno, "the state of sandbox %s", id);
		goto fail;
	}
	if ((rc = open_layers(b, dfd, spec, err)) < 0)
		goto fail;
	*out = b;
	return 0;
fail:
	box_close(b);
	return rc;
}

void
box_close(struct box *b)
{
	if (!b)
		return;
	/* the layers first: the disk's mount goes with its last descriptor */
	ws_close(b->ws);
	if (b->ephemeral && b->sbdir >= 0) {
		int rc = wd_rm_tree_at(b->sbdir, b->id);
		if (rc < 0)
			wd_log(WD_LOG_WARN, "remove the state of sandbox %s: %s", b->id,
			       strerror(-rc));
	}
	if (b->sbdir >= 0)
		close(b->sbdir);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

int
box_trees(struct box *b, wd_spec *spec, struct ws_trees *t, struct wd_err *err)
{
	int rc = ws_trees(b->ws, t, err);
	if (rc < 0)
		return rc;
	spec->tree_ws = t->workspace;
	spec->tree_home = t->home;
	spec->tree_tmp = t->tmp;
	return 0;
}

int
box_diff(struct box *b, const char *const *paths, size_t np, unsigned flags, char **out,
	 struct wd_err *err)
{
	pthread_mutex_lock(&b->lock);
	struct ws_changes *cs = NULL;
	int rc = ws_changes(b->ws, paths, np, flags & WD_DIFF_ALL ? WS_CHANGES_ALL : 0, &cs, err);
	if (rc == 0) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		if (!f)
			abort();
		rc = ws_diff_write(b->ws, cs, flags, f, err);
		fclose(f);
		if (rc == 0)
			*out = text;
		else
			free(text);
	}
	ws_changes_free(cs);
	pthread_mutex_unlock(&b->lock);
	return rc;
}

int
box_apply(struct box *b, const char *const *paths, size_t np, const char *expect, unsigned flags,
	  char **report, struct wd_err *err)
{
	pthread_mutex_lock(&b->lock);
	struct ws_apply_report rep;
	bool json = flags & WD_DIFF_JSON;
	int rc =
	    ws_apply(b->ws, paths, np, flags & WD_DIFF_ALL ? WS_CHANGES_ALL : 0, expect, &rep, err);
	if (rc >= 0 && report) {
		*report = json ? rep.json : rep.text;
		if (json)
			rep.json = NULL;
		else
			rep.text = NULL;
	}
	ws_apply_report_fini(&rep);
	pthread_mutex_unlock(&b->lock);
	return rc;
}

int
box_discard(struct box *b, const char *const *paths, size_t np, bool live, struct wd_err *err)
{
	pthread_mutex_lock(&b->lock);
	int rc = ws_discard(b->ws, paths, np, live, err);
	pthread_mutex_unlock(&b->lock);
	return rc;
}
