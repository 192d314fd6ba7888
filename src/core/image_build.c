/* core/image_build: the recipe (a small KEY = VALUE file, errors with
 * FILE:LINE:COLUMN), building an image from Debian packages with
 * mmdebstrap, and importing an OCI image layout with umoci.
 * Both work in a locked tmp.XXXXXX under the store, scrub or check what
 * the tool wrote, digest it and hand it to image_store() (image.c, which
 * describes the store). */
#include "core/core.h"
#include "supervise/supervise.h"
#include "workspace/workspace.h"
#include "util/escape.h"
#include "util/sha256.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/image-internal.h"

struct wd_image_recipe {
	char *suite;
	char **packages;
	size_t npackages;
	char **env;
	size_t nenv;
	char *from;
	char *user;
};

WD_API wd_image_recipe *
wd_image_recipe_new(void)
{
	return wd_xcalloc(1, sizeof(wd_image_recipe));
}

static void
strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

WD_API void
wd_image_recipe_free(wd_image_recipe *r)
{
	if (!r)
		return;
	free(r->suite);
	strv_free(r->packages, r->npackages);
	strv_free(r->env, r->nenv);
	free(r->from);
	free(r->user);
	free(r);
}

static void
strv_add(char ***v, size_t *n, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], s))
			return; /* a set: once is enough */
	*v = wd_xrealloc(*v, (*n + 1) * sizeof(char *));
	(*v)[(*n)++] = wd_xstrdup(s);
}

/* An image name: a lowercase letter or digit, then letters, digits, '.',
 * '_', '-': it becomes a file name under names/ and appears in listings,
 * so nothing else (no '/', no control bytes, never '.' or '..'). */
static bool
package_ok(const char *p)
{
	const char *eq = strchr(p, '=');
	size_t n = eq ? (size_t)(eq - p) : strlen(p);
	if (n < 2 || n > 128 || !(islower((unsigned char)p[0]) || isdigit((unsigned char)p[0])))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)p[i]) && !isdigit((unsigned char)p[i]) &&
		    !strchr("+.-", p[i]))
			return false;
	if (!eq)
		return true;
	if (!eq[1] || strlen(eq + 1) > 128)
		return false;
	for (const char *c = eq + 1; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr(".+~:-", *c))
			return false;
	return true;
}

static bool
suite_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 32 || !islower((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool
env_ok(const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv || !(isalpha((unsigned char)kv[0]) || kv[0] == '_'))
		return false;
	for (const char *c = kv; c < eq; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			return false;
	for (const char *c = eq + 1; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return strlen(kv) <= 4096;
}

WD_API int
wd_image_recipe_set_suite(wd_image_recipe *r, const char *suite, struct wd_err *err)
{
	if (!suite_ok(suite))
		return wd_err_set(err, WD_E_INVAL,
				  "suite '%s' is not a Debian suite name (bookworm, trixie, ...)",
				  suite);
	free(r->suite);
	r->suite = wd_xstrdup(suite);
	return 0;
}

/* list: package names separated by commas or blanks. */
WD_API int
wd_image_recipe_add_packages(wd_image_recipe *r, const char *list, struct wd_err *err)
{
	char *dup = wd_xstrdup(list), *save = NULL;
	int rc = 0;
	for (char *w = strtok_r(dup, ", \t", &save); w; w = strtok_r(NULL, ", \t", &save)) {
		if (!package_ok(w)) {
			wd_autofree char *q = wd_esc_path(w);
			rc = wd_err_set(
			    err, WD_E_INVAL,
			    "package %s is not a Debian package name ([a-z0-9][a-z0-9+.-]+, "
			    "optionally =VERSION)",
			    q);
			break;
		}
		strv_add(&r->packages, &r->npackages, w);
	}
	free(dup);
	return rc;
}

WD_API int
wd_image_recipe_add_env(wd_image_recipe *r, const char *kv, struct wd_err *err)
{
	if (!env_ok(kv))
		return wd_err_set(err, WD_E_INVAL,
				  "env entry is not NAME=VALUE (a name of letters, "
				  "digits and '_', a value without control bytes)");
	/* one value a name, the last given: the list is sorted for the
	 * digest, so order must not decide between two values */
	size_t n = (size_t)(strchr(kv, '=') - kv) + 1;
	for (size_t i = 0; i < r->nenv; i++)
		if (!strncmp(r->env[i], kv, n)) {
			free(r->env[i]);
			r->env[i] = wd_xstrdup(kv);
			return 0;
		}
	strv_add(&r->env, &r->nenv, kv);
	return 0;
}

WD_API int
wd_image_recipe_set_from(wd_image_recipe *r, const char *name, struct wd_err *err)
{
	if (!image_name_ok(name))
		return wd_err_set(err, WD_E_INVAL,
				  "image name '%s' is not [a-z0-9][a-z0-9._-]* (at most %d bytes)",
				  name, IMAGE_NAME_MAX);
	free(r->from);
	r->from = wd_xstrdup(name);
	return 0;
}

/* The sandbox user's name in the image: warden's passwd and group entry
 * for uid 1000 (the command's uid is warden's, whatever the name). */
WD_API int
wd_image_recipe_set_user(wd_image_recipe *r, const char *user, struct wd_err *err)
{
	if (!image_user_ok(user)) {
		wd_autofree char *q = wd_esc_path(user);
		return wd_err_set(err, WD_E_INVAL,
				  "user %s is not a user name ([a-z_][a-z0-9_-]*, at most 32 "
				  "bytes) other than root and nobody: it names uid 1000, which is "
				  "never root",
				  q);
	}
	free(r->user);
	r->user = wd_xstrdup(user);
	return 0;
}

/* ---- the recipe file ----
 *
 *   # an environment with Lua
 *   suite = bookworm
 *   packages = lua5.4, ca-certificates
 *   env = LANG=C.UTF-8
 *   user = lua
 *
 * One key a line; packages and env may repeat (they add).  Errors name
 * PATH:LINE:COLUMN of what is wrong, as the policy's do. */
WD_API int
wd_image_recipe_load(wd_image_recipe *r, const char *path, struct wd_err *err)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return wd_err_sys(err, errno, "recipe %s", path);
	wd_autofree char *qpath = wd_esc_path(path);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0, lineno = 0;
	while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if ((size_t)len != strlen(line)) {
			rc = wd_err_set(err, WD_E_INVAL, "%s:%d:%zu: a NUL byte", qpath, lineno,
					strlen(line) + 1);
			break;
		}
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		char *k = line;
		while (*k == ' ' || *k == '\t')
			k++;
		if (!*k || *k == '#')
			continue;
		int col = (int)(k - line) + 1;
		char *eq = strchr(k, '=');
		if (!eq) {
			rc = wd_err_set(err, WD_E_INVAL, "%s:%d:%d: expected KEY = VALUE", qpath,
					lineno, col);
			break;
		}
		char *ke = eq;
		while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
			ke--;
		*ke = '\0';
		char *v = eq + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		int vcol = (int)(v - line) + 1;
		char *ve = v + strlen(v);
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			*--ve = '\0';
		struct wd_err e = {0};
		if (!strcmp(k, "suite"))
			rc = wd_image_recipe_set_suite(r, v, &e);
		else if (!strcmp(k, "packages"))
			rc = wd_image_recipe_add_packages(r, v, &e);
		else if (!strcmp(k, "env"))
			rc = wd_image_recipe_add_env(r, v, &e);
		else if (!strcmp(k, "from"))
			rc = wd_image_recipe_set_from(r, v, &e);
		else if (!strcmp(k, "user"))
			rc = wd_image_recipe_set_user(r, v, &e);
		else {
			wd_autofree char *qk = wd_esc_path(k);
			rc = wd_err_set(
			    err, WD_E_INVAL,
			    "%s:%d:%d: unknown key %s (suite, packages, env, from, user)", qpath,
			    lineno, col, qk);
			break;
		}
		if (rc < 0)
			rc = wd_err_set(err, WD_E_INVAL, "%s:%d:%d: %s: %s", qpath, lineno, vcol, k,
					e.msg);
	}
	free(line);
	fclose(f);
	return rc;
}

/* ---- building ---- */

/* What varies between two builds of the same recipe, or must not be in an
 * image: removed before the digest.  Paths relative to the rootfs; a
 * trailing slash empties the directory and keeps it. */
static const char *const volatile_paths[] = {
    "dev/",			    /* the jail makes its own /dev */
    "var/log/",			    /* dpkg.log, apt's term.log: times */
    "var/cache/apt/",		    /* pkgcache.bin, downloaded .debs */
    "var/lib/apt/lists/",	    /* the mirror's indexes */
    "var/cache/ldconfig/aux-cache", /* inode numbers and times */
    "var/cache/debconf/config.dat-old",
    "var/cache/debconf/templates.dat-old",
    "var/lib/dpkg/status-old",
    "var/lib/dpkg/diversions-old",
    "var/lib/dpkg/available-old",
    "etc/machine-id", /* one per machine, never shared by an image */
    "var/lib/dbus/machine-id",
    "etc/hostname",    /* the build host's; warden writes its own */
    "etc/resolv.conf", /* likewise */
    "etc/shadow-",
    "etc/gshadow-",
    "etc/passwd-",
    "etc/group-",
    "etc/subuid-",
    "etc/subgid-",
};

static int
scrub(const char *rootfs)
{
	for (size_t i = 0; i < WD_ARRAY_SIZE(volatile_paths); i++) {
		char p[PATH_MAX];
		const char *v = volatile_paths[i];
		size_t n = strlen(v);
		snprintf(p, sizeof(p), "%s/%.*s", rootfs, (int)(v[n - 1] == '/' ? n - 1 : n), v);
		if (v[n - 1] != '/') {
			int rc = wd_rm_tree_at(AT_FDCWD, p);
			if (rc < 0)
				return rc;
			continue;
		}
		DIR *d = opendir(p);
		if (!d)
			continue; /* not in this image: nothing to scrub */
		struct dirent *e;
		int rc = 0;
		while (rc == 0 && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				rc = wd_rm_tree_at(dirfd(d), e->d_name);
		closedir(d);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The installed packages, from dpkg's status file: "name version" each. */
static json_t *
installed(const char *rootfs)
{
	json_t *a = json_array();
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/var/lib/dpkg/status", rootfs);
	FILE *f = fopen(p, "re");
	if (!f)
		return a;
	char *line = NULL, pkg[256] = "", ver[256] = "";
	size_t cap = 0;
	bool ok = false;
	for (;;) {
		ssize_t len = getline(&line, &cap, f);
		if (len <= 1) {
			if (pkg[0] && ok)
				json_array_append_new(a, json_sprintf("%s %s", pkg, ver));
			pkg[0] = ver[0] = '\0';
			ok = false;
			if (len < 0)
				break;
			continue;
		}
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "Package: ", 9))
			snprintf(pkg, sizeof(pkg), "%s", line + 9);
		else if (!strncmp(line, "Version: ", 9))
			snprintf(ver, sizeof(ver), "%s", line + 9);
		else if (!strncmp(line, "Status: ", 8))
			ok = strstr(line, " installed") != NULL;
	}
	free(line);
	fclose(f);
	return a;
}

/* Run a tool (mmdebstrap, umoci, tar), its output into the log at INFO,
 * line by line; pkg names the Debian package that has it; each file it
 * writes is bounded at fsize bytes. */
int
image_run_tool(char *const argv[], const char *pkg, uint64_t fsize, struct wd_err *err)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return wd_err_sys(err, errno, "fork");
	}
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		/* the build is reproducible only with a fixed epoch and locale */
		setenv("SOURCE_DATE_EPOCH", IMAGE_EPOCH, 1);
		setenv("LC_ALL", "C.UTF-8", 1);
		setenv("TZ", "UTC", 1);
		/* each file it writes is bounded: past it, write() fails
		 * with EFBIG (not SIGXFSZ) and the tool gives up */
		struct rlimit rl;
		if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur > fsize)
			rl.rlim_cur = rl.rlim_max = fsize; /* a lower one stays */
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	FILE *f = fdopen(pipefd[0], "r");
	char *line = NULL, last[256] = "";
	size_t cap = 0;
	ssize_t len;
	while (f && (len = getline(&line, &cap, f)) >= 0) {
		line[strcspn(line, "\n")] = '\0';
		wd_autofree char *q = wd_esc_text(line, strlen(line), 0, 512);
		wd_log(WD_LOG_INFO, "%s: %s", argv[0], q);
		snprintf(last, sizeof(last), "%s", q);
	}
	free(line);
	if (f)
		fclose(f);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return wd_err_set(err, WD_E_UNSUPPORTED, "%s is not installed (apt-get install %s)",
				  argv[0], pkg);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return wd_err_set(err, WD_E_INTERNAL, "%s failed (status %d): %s", argv[0],
				  WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
				  last);
	return 0;
}

int
image_make_tmp(const char *dir, char *tmp, size_t cap, int *lockfd, struct wd_err *err)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (!strncmp(ents[i]->d_name, "tmp.", 4)) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "%s/%s", dir, ents[i]->d_name);
			int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
				wd_log(WD_LOG_INFO, "removing %s, left by a build that ended", p);
				wd_rm_tree_at(AT_FDCWD, p);
			}
			if (fd >= 0)
				close(fd);
		}
		free(ents[i]);
	}
	free(ents);
	snprintf(tmp, cap, "%s/tmp.XXXXXX", dir);
	if (!mkdtemp(tmp))
		return wd_err_sys(err, errno, "create a build directory in %s", dir);
	/* not O_CLOEXEC: mmdebstrap, umoci and their children hold it too */
	*lockfd = open(tmp, O_RDONLY | O_DIRECTORY);
	if (*lockfd < 0 || flock(*lockfd, LOCK_EX) < 0) {
		int rc = wd_err_sys(err, errno, "lock %s", tmp);
		wd_rm_tree_at(AT_FDCWD, tmp);
		return rc;
	}
	return 0;
}

WD_API int
wd_image_build(wd_ctx *ctx, const char *name, const wd_image_recipe *r_in, char **out,
	       struct wd_err *err)
{
	char dir[PATH_MAX];
	int rc;
	wd_autofree char *include = NULL, *suite_copy = NULL;
	wd_autoclose int lockfd = -1;
	if (!image_name_ok(name)) {
		wd_autofree char *q = wd_esc_path(name);
		return wd_err_set(err, WD_E_INVAL,
				  "image name %s is not [a-z0-9][a-z0-9._-]* (at most %d bytes)", q,
				  IMAGE_NAME_MAX);
	}
	if (geteuid() != 0)
		return wd_err_set(err, WD_E_UNSUPPORTED,
				  "warden image build runs mmdebstrap as root (its unshare mode "
				  "for other users is not supported yet)");
	if ((rc = image_dir(ctx, dir, sizeof(dir), err)) < 0)
		return rc;

	/* The recipe, with --from's packages, env and suite under it. */
	wd_image_recipe r = {0};
	const char *suite = r_in->suite;
	json_t *base = NULL;
	if (r_in->from) {
		char bd[65];
		if ((rc = image_resolve(dir, r_in->from, bd, err)) < 0)
			return wd_err_prefix(err, "--from");
		if (!(base = image_read_meta(dir, bd, err)))
			return -EINVAL;
		const char *bs = json_string_value(json_object_get(base, "suite"));
		if (suite && bs && strcmp(suite, bs)) {
			json_decref(base);
			return wd_err_set(err, WD_E_INVAL,
					  "--suite %s differs from --from %s's suite %s", suite,
					  r_in->from, bs);
		}
		suite = bs;
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(base, "packages"), i, v)
		    strv_add(&r.packages, &r.npackages, json_string_value(v));
		json_array_foreach(json_object_get(base, "env"), i, v)
		    strv_add(&r.env, &r.nenv, json_string_value(v));
		const char *bu = json_string_value(json_object_get(base, "user"));
		if (bu && image_user_ok(bu))
			r.user = wd_xstrdup(bu);
	}
	if (r_in->user) {
		free(r.user);
		r.user = wd_xstrdup(r_in->user);
	}
	for (size_t i = 0; i < r_in->npackages; i++)
		strv_add(&r.packages, &r.npackages, r_in->packages[i]);
	for (size_t i = 0; i < r_in->nenv; i++)
		strv_add(&r.env, &r.nenv, r_in->env[i]);
	if (!suite)
		suite = "bookworm";
	/* sorted: the same set in another order is the same image */
	/* qsort's base must not be NULL, even for no element */
	if (r.npackages)
		qsort(r.packages, r.npackages, sizeof(char *), image_cmp_str);
	if (r.nenv)
		qsort(r.env, r.nenv, sizeof(char *), image_cmp_str);
	suite_copy = wd_xstrdup(suite);
	json_decref(base);

	char tmp[PATH_MAX], rootfs[PATH_MAX];
	if ((rc = image_make_tmp(dir, tmp, sizeof(tmp), &lockfd, err)) < 0)
		goto out;
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmp);

	/* mmdebstrap: the essential packages and the recipe's, with apt's
	 * choices only (no recommends), from the host's apt sources. */
	size_t plen = 1;
	for (size_t i = 0; i < r.npackages; i++)
		plen += strlen(r.packages[i]) + 1;
	include = wd_xcalloc(1, plen + 16);
	strcpy(include, "--include=");
	for (size_t i = 0; i < r.npackages; i++) {
		if (i)
			strcat(include, ",");
		strcat(include, r.packages[i]);
	}
	char a_prog[] = "mmdebstrap", a_mode[] = "--mode=root", a_var[] = "--variant=essential",
	     a_fmt[] = "--format=directory", a_rec[] = "--aptopt=APT::Install-Recommends \"false\"",
	     a_doc[] = "--dpkgopt=path-exclude=/usr/share/doc/*",
	     a_man[] = "--dpkgopt=path-exclude=/usr/share/man/*",
	     a_loc[] = "--dpkgopt=path-exclude=/usr/share/locale/*",
	     a_cpy[] = "--dpkgopt=path-include=/usr/share/doc/*/copyright";
	char *argv[] = {a_prog, a_mode, a_var,	 a_fmt,	     a_rec,  a_doc, a_man,
			a_loc,	a_cpy,	include, suite_copy, rootfs, NULL};
	if (!r.npackages) /* nothing beyond the essential set */
		memmove(&argv[9], &argv[10], 3 * sizeof(char *));
	uint64_t t0 = wd_now_ms();
	if ((rc = image_run_tool(argv, "mmdebstrap", IMAGE_MAX_FILE, err)) < 0)
		goto out_rm;
	if ((rc = scrub(rootfs)) < 0) {
		wd_err_sys(err, -rc, "clean the image's volatile files");
		goto out_rm;
	}
	char hex[65];
	uint64_t bytes = 0, files = 0;
	if ((rc = image_digest_tree(rootfs, r.env, r.nenv, r.user, hex, &bytes, &files, err)) < 0)
		goto out_rm;
	uint64_t ms = wd_now_ms() - t0;

	json_t *pk = json_array(), *env = json_array();
	for (size_t i = 0; i < r.npackages; i++)
		json_array_append_new(pk, json_string(r.packages[i]));
	for (size_t i = 0; i < r.nenv; i++)
		json_array_append_new(env, json_string(r.env[i]));
	json_t *meta =
	    json_pack("{s:s, s:s, s:o, s:o, s:o, s:I, s:I, s:s, s:I}", "digest", hex, "suite",
		      suite_copy, "packages", pk, "env", env, "installed", installed(rootfs),
		      "size_bytes", (json_int_t)bytes, "files", (json_int_t)files,
		      "source_date_epoch", IMAGE_EPOCH, "build_ms", (json_int_t)ms);
	if (r.user)
		json_object_set_new(meta, "user", json_string(r.user));
	rc = image_store(dir, tmp, name, hex, meta, ms, out, err);
	json_decref(meta);
	goto out;
out_rm:
	wd_rm_tree_at(AT_FDCWD, tmp);
out:
	strv_free(r.packages, r.npackages);
	strv_free(r.env, r.nenv);
	free(r.user);
	return rc;
}

/* ---- import: an OCI image layout ---- */

/* A tag of an OCI layout: the annotation org.opencontainers.image.ref.name,
 * kept to what a tag is (it becomes part of umoci's --image argument). */
static bool
tag_ok(const char *t)
{
	size_t n = strlen(t);
	return n > 0 && n <= 128 && isalnum((unsigned char)t[0]) &&
	       strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* The layout's one tag when tag is NULL: its index.json must name exactly
 * one manifest with a ref.name. */
static int
layout_tag(const char *layout, const char *tag, char *out, size_t cap, struct wd_err *err)
{
	if (tag) {
		if (!tag_ok(tag))
			return wd_err_set(err, WD_E_INVAL,
					  "--tag: '%s' is not a tag ([A-Za-z0-9][A-Za-z0-9_.-]*)",
					  tag);
		snprintf(out, cap, "%s", tag);
		return 0;
	}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/index.json", layout);
	json_error_t je;
	json_t *j = json_load_file(p, 0, &je);
	if (!j)
		return wd_err_set(err, WD_E_INVAL, "%s:%d:%d: %s", p, je.line, je.column, je.text);
	size_t i, n = 0;
	json_t *m;
	const char *found = NULL;
	json_array_foreach(json_object_get(j, "manifests"), i, m)
	{
		const char *t = json_string_value(json_object_get(
		    json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));
		if (t) {
			n++;
			found = t;
		}
	}
	int rc = 0;
	if (n != 1)
		rc = wd_err_set(err, WD_E_INVAL,
				"%s names %zu tagged images: choose one with --tag", p, n);
	else if (!tag_ok(found))
		rc =
		    wd_err_set(err, WD_E_INVAL, "%s: its tag is not [A-Za-z0-9][A-Za-z0-9_.-]*", p);
	else
		snprintf(out, cap, "%s", found);
	json_decref(j);
	return rc;
}

/* The image config's Env, User and WorkingDir into meta (env also into
 * *env, sorted, for the digest).  An Env entry that is not NAME=VALUE (a
 * name of letters, digits and '_', a value without control bytes) is
 * refused, named: it would reach every command of the image. */
static int
config_to_meta(json_t *cfg, json_t *meta, char ***env, size_t *nenv, struct wd_err *err)
{
	size_t i;
	json_t *v;
	json_t *ea = json_array();
	json_array_foreach(json_object_get(cfg, "Env"), i, v)
	{
		const char *kv = json_string_value(v);
		if (!kv || !env_ok(kv)) {
			wd_autofree char *q = wd_esc_path(kv ? kv : "(not a string)");
			json_decref(ea);
			return wd_err_set(
			    err, WD_E_INVAL,
			    "the image config's Env entry %.200s is not NAME=VALUE (a "
			    "name of letters, digits and '_', a value without control "
			    "bytes)",
			    q);
		}
		/* one value a name, the last (as the runtimes do) */
		size_t n = (size_t)(strchr(kv, '=') - kv) + 1;
		bool dup = false;
		for (size_t k = 0; k < *nenv && !dup; k++)
			if (!strncmp((*env)[k], kv, n)) {
				free((*env)[k]);
				(*env)[k] = wd_xstrdup(kv);
				dup = true;
			}
		if (!dup)
			strv_add(env, nenv, kv);
	}
	if (*nenv)
		qsort(*env, *nenv, sizeof(char *), image_cmp_str);
	for (size_t k = 0; k < *nenv; k++)
		json_array_append_new(ea, json_string((*env)[k]));
	json_object_set_new(meta, "env", ea);
	const char *f[][2] = {{"User", "user"}, {"WorkingDir", "workdir"}};
	for (size_t k = 0; k < WD_ARRAY_SIZE(f); k++) {
		const char *s = json_string_value(json_object_get(cfg, f[k][0]));
		if (!s || !*s)
			continue;
		if (strlen(s) > 4096)
			return wd_err_set(err, WD_E_INVAL,
					  "the image config's %s is longer than "
					  "4096 bytes",
					  f[k][0]);
		json_object_set_new(meta, f[k][1], json_string(s));
	}
	return 0;
}

WD_API int
wd_image_import(wd_ctx *ctx, const char *name, const char *path, const char *tag_in, char **out,
		struct wd_err *err)
{
	char dir[PATH_MAX], layout[PATH_MAX], tag[160], src[PATH_MAX + 32];
	int rc;
	if (!image_name_ok(name)) {
		wd_autofree char *q = wd_esc_path(name);
		return wd_err_set(err, WD_E_INVAL,
				  "image name %s is not [a-z0-9][a-z0-9._-]* (at most %d bytes)", q,
				  IMAGE_NAME_MAX);
	}
	if (geteuid() != 0)
		return wd_err_set(
		    err, WD_E_UNSUPPORTED,
		    "warden image import runs umoci as root (its rootless mode is not "
		    "supported yet)");
	struct stat st;
	char probe[PATH_MAX], real[PATH_MAX];
	if (!realpath(path, real))
		return wd_err_sys(err, errno, "image %s", path);
	/* the format, from the file: a directory with oci-layout is an OCI
	 * layout, a regular file a docker save tarball (checked as it is read) */
	bool docker = stat(real, &st) == 0 && S_ISREG(st.st_mode);
	snprintf(probe, sizeof(probe), "%s/oci-layout", real);
	if (docker) {
		if (tag_in)
			return wd_err_set(err, WD_E_INVAL,
					  "--tag chooses an image of an OCI layout; a docker save "
					  "tarball holds one");
	} else if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode) || stat(probe, &st) < 0 ||
		   !S_ISREG(st.st_mode)) {
		return wd_err_set(err, WD_E_INVAL,
				  "%s is neither an OCI image layout (a directory with oci-layout "
				  "and index.json) nor a docker save tarball (a file)",
				  path);
	}
	if (!docker && strchr(real, ':'))
		return wd_err_set(err, WD_E_INVAL,
				  "image layout %s: a ':' in its path would be read as a tag",
				  real);
	if (!docker && (rc = layout_tag(real, tag_in, tag, sizeof(tag), err)) < 0)
		return rc;
	if ((rc = image_dir(ctx, dir, sizeof(dir), err)) < 0)
		return rc;
	char tmp[PATH_MAX], rootfs[PATH_MAX];
	wd_autoclose int lockfd = -1;
	wd_autofree char *image_arg = NULL;
	if ((rc = image_make_tmp(dir, tmp, sizeof(tmp), &lockfd, err)) < 0)
		return rc;
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmp);
	char **env = NULL;
	size_t nenv = 0;
	json_t *cfg = NULL, *meta = NULL;
	uint64_t t0 = wd_now_ms();
	if (docker) {
		/* converted to an OCI layout in the build directory, then
		 * unpacked as any layout; removed before the image is stored */
		snprintf(layout, sizeof(layout), "%s/layout", tmp);
		if (mkdir(layout, 0700) < 0) {
			rc = wd_err_sys(err, errno, "create %s", layout);
			goto fail;
		}
		if ((rc = image_docker_to_oci(real, layout, err)) < 0)
			goto fail;
		snprintf(tag, sizeof(tag), "t");
		snprintf(src, sizeof(src), "docker-archive:%s", real);
	} else {
		snprintf(layout, sizeof(layout), "%s", real);
		snprintf(src, sizeof(src), "%s:%s", real, tag);
	}
	if (!(cfg = image_oci_config(layout, tag, err))) {
		rc = -EINVAL;
		goto fail;
	}
	/* the entries, counted from the layers' headers: a layer of millions
	 * of empty files is refused before umoci writes one of them */
	if ((rc = image_oci_count(layout, tag, IMAGE_MAX_ENTRIES, err)) < 0)
		goto fail;

	/* umoci applies the layers in order with their whiteouts, each path
	 * resolved beneath rootfs (filepath-securejoin: "../", absolute
	 * names and links followed while extracting stay inside); every file
	 * is bounded by RLIMIT_FSIZE (image_run_tool).  What it leaves is
	 * checked by the walk below: no device node, FIFO or socket, at most
	 * IMAGE_MAX_ENTRIES entries. */
	image_arg = wd_xasprintf("--image=%s:%s", layout, tag);
	char a_prog[] = "umoci", a_raw[] = "raw", a_unpack[] = "unpack";
	char *argv[] = {a_prog, a_raw, a_unpack, image_arg, rootfs, NULL};
	if ((rc = image_run_tool(argv, "umoci", IMAGE_MAX_FILE, err)) < 0)
		goto fail;
	if (docker && (rc = wd_rm_tree_at(AT_FDCWD, layout)) < 0) {
		rc = wd_err_sys(err, -rc, "remove %s", layout);
		goto fail;
	}
	/* the jail makes its own /dev (as for a build) */
	char devp[PATH_MAX];
	snprintf(devp, sizeof(devp), "%s/dev", rootfs);
	if (lstat(devp, &st) == 0 && S_ISDIR(st.st_mode)) {
		DIR *d = opendir(devp);
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				wd_rm_tree_at(dirfd(d), e->d_name);
		if (d)
			closedir(d);
	}
	meta = json_pack("{s:s, s:o}", "source", src, "packages", json_array());
	if ((rc = config_to_meta(cfg, meta, &env, &nenv, err)) < 0)
		goto fail;
	char hex[65];
	uint64_t bytes = 0, files = 0;
	if ((rc = image_digest_tree(rootfs, env, nenv,
				    json_string_value(json_object_get(meta, "user")), hex, &bytes,
				    &files, err)) < 0)
		goto fail;
	uint64_t ms = wd_now_ms() - t0;
	json_object_set_new(meta, "digest", json_string(hex));
	json_object_set_new(meta, "installed", installed(rootfs));
	json_object_set_new(meta, "size_bytes", json_integer((json_int_t)bytes));
	json_object_set_new(meta, "files", json_integer((json_int_t)files));
	json_object_set_new(meta, "build_ms", json_integer((json_int_t)ms));
	rc = image_store(dir, tmp, name, hex, meta, ms, out, err);
	json_decref(meta);
	json_decref(cfg);
	strv_free(env, nenv);
	return rc;
fail:
	wd_err_prefix(err, "import %s", path);
	wd_rm_tree_at(AT_FDCWD, tmp);
	json_decref(meta);
	json_decref(cfg);
	strv_free(env, nenv);
	return rc;
}
