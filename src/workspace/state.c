/* workspace/state: warden's state directory, one directory per sandbox,
 * names, and the metadata file (see workspace.h for the layout).
 *
 * The state directory holds what sandboxes wrote and the sockets of their
 * monitors: whoever can write it can change a sandbox's files before they
 * are applied to a project, or stand in for a monitor.  So it must be the
 * caller's own, with no permission for anyone else (like ~/.ssh for ssh),
 * and warden refuses to use it otherwise rather than fixing it silently. */
#include "workspace/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* dir must be a directory owned by us, without group or other bits. */
static int
check_private(const char *dir, const struct stat *st, struct wd_err *err)
{
	if (!S_ISDIR(st->st_mode))
		return wd_err_set(err, WD_E_INVAL, "state directory %s is not a directory", dir);
	if (st->st_uid != geteuid())
		return wd_err_set(err, WD_E_INVAL,
				  "state directory %s belongs to uid %u, not to you (uid %u): "
				  "use your own (WARDEN_STATE_DIR or XDG_STATE_HOME)",
				  dir, (unsigned)st->st_uid, (unsigned)geteuid());
	if (st->st_mode & 077)
		return wd_err_set(err, WD_E_INVAL,
				  "state directory %s has mode %04o: others could change what "
				  "sandboxes wrote; it must be 0700 (chmod 700 %s)",
				  dir, (unsigned)(st->st_mode & 07777), dir);
	return 0;
}

static int
mkdir_parents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int rc = mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
		*p = '/';
		if (rc < 0)
			return rc;
	}
	return 0;
}

int
ws_state_root(const char *given, char *out, size_t cap, struct wd_err *err)
{
	int rc;
	if (given) {
		if (snprintf(out, cap, "%s", given) >= (int)cap)
			return wd_err_set(err, WD_E_INVAL, "state directory path too long");
	} else if ((rc = wd_state_dir(out, cap, err)) < 0) {
		return rc;
	}
	if (out[0] != '/')
		return wd_err_set(err, WD_E_INVAL, "state directory %s is not an absolute path",
				  out);
	struct stat st;
	if (stat(out, &st) < 0) {
		if (errno != ENOENT)
			return wd_err_sys(err, errno, "state directory %s", out);
		char tmp[PATH_MAX];
		snprintf(tmp, sizeof(tmp), "%s", out);
		if ((rc = mkdir_parents(tmp)) < 0 || (mkdir(out, 0700) < 0 && errno != EEXIST))
			return wd_err_sys(err, rc < 0 ? -rc : errno, "create state directory %s",
					  out);
		if (stat(out, &st) < 0)
			return wd_err_sys(err, errno, "state directory %s", out);
	}
	return check_private(out, &st, err);
}

int
ws_state_sandboxes(const char *root, struct wd_err *err)
{
	wd_autoclose int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return wd_err_sys(err, errno, "state directory %s", root);
	static const char *const subs[] = {"sandboxes", "names"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(subs); i++) {
		if (mkdirat(rfd, subs[i], 0700) < 0 && errno != EEXIST)
			return wd_err_sys(err, errno, "create %s/%s", root, subs[i]);
		struct stat st;
		if (fstatat(rfd, subs[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			return wd_err_sys(err, errno, "%s/%s", root, subs[i]);
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", root, subs[i]);
		int rc = check_private(path, &st, err);
		if (rc < 0)
			return rc;
	}
	int fd = openat(rfd, "sandboxes", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "%s/sandboxes", root);
	return fd;
}

bool
ws_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum =
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return false;
	}
	return true;
}

static int
open_names(const char *root, struct wd_err *err)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/names", root);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "%s", path);
	return fd;
}

int
ws_name_take(const char *root, const char *name, const char *id, struct wd_err *err)
{
	if (!ws_name_ok(name))
		return wd_err_set(err, WD_E_INVAL,
				  "bad name '%s': a letter or digit, then letters, digits, '_', "
				  "'.' or '-', at most 63",
				  name);
	wd_autoclose int nfd = open_names(root, err);
	if (nfd < 0)
		return nfd;
	/* a symbolic link is made atomically or not at all: two creates of
	 * one name cannot both win */
	if (symlinkat(id, nfd, name) < 0) {
		if (errno == EEXIST) {
			wd_err_set(err, WD_E_INVAL, "the name '%s' is already taken", name);
			return -EEXIST;
		}
		return wd_err_sys(err, errno, "take the name '%s'", name);
	}
	return 0;
}

void
ws_name_release(const char *root, const char *name)
{
	int nfd = open_names(root, NULL);
	if (nfd >= 0) {
		unlinkat(nfd, name, 0);
		close(nfd);
	}
}

static bool
is_hex(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int
ws_resolve(const char *root, const char *ref, char id[17], struct wd_err *err)
{
	if (ws_name_ok(ref)) {
		wd_autoclose int nfd = open_names(root, err);
		if (nfd < 0)
			return nfd;
		char buf[32];
		ssize_t n = readlinkat(nfd, ref, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			if (is_hex(buf, 16) && n == 16) {
				memcpy(id, buf, 17);
				return 0;
			}
		}
	}
	if (is_hex(ref, 16) && strlen(ref) >= 4) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/sandboxes", root);
		DIR *d = opendir(path);
		if (!d)
			return wd_err_sys(err, errno, "%s", path);
		int found = 0;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (strlen(de->d_name) == 16 && !strncmp(de->d_name, ref, strlen(ref))) {
				if (found++ == 0)
					memcpy(id, de->d_name, 17);
			}
		}
		closedir(d);
		if (found == 1)
			return 0;
		if (found > 1)
			return wd_err_set(err, WD_E_INVAL,
					  "'%s' is the start of %d sandbox ids: give more digits",
					  ref, found);
	}
	wd_err_set(err, WD_E_INVAL, "no sandbox '%s' (warden ls lists them)", ref);
	return -ENOENT;
}

int
ws_meta_read(int sbdir, json_t **out, struct wd_err *err)
{
	wd_autoclose int fd = openat(sbdir, "meta.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "open meta.json");
	json_error_t je;
	json_t *j = json_loadfd(fd, 0, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return wd_err_set(err, WD_E_INVAL, "meta.json:%d:%d: %s", je.line, je.column,
				  j ? "not an object" : je.text);
	}
	*out = j;
	return 0;
}

int
ws_meta_write(int sbdir, json_t *meta, struct wd_err *err)
{
	char *text = json_dumps(meta, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!text)
		return wd_err_set(err, WD_E_INTERNAL, "meta.json: cannot serialise");
	int rc = 0;
	{
		wd_autoclose int fd =
		    openat(sbdir, "meta.json.new",
			   O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			rc = wd_err_sys(err, errno, "write meta.json");
		else if ((rc = wd_write_all(fd, text, strlen(text))) < 0 ||
			 (rc = wd_write_all(fd, "\n", 1)) < 0 || (rc = fsync(fd) < 0 ? -errno : 0))
			wd_err_sys(err, -rc, "write meta.json");
	}
	free(text);
	if (rc == 0 && renameat(sbdir, "meta.json.new", sbdir, "meta.json") < 0)
		rc = wd_err_sys(err, errno, "write meta.json");
	return rc;
}
