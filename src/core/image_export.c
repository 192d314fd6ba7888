/* core/image_export: an image of the store written as an OCI image
 * layout (wd_image_export), for a registry, a pod or another warden.
 *
 * Reproducible as a build is: each layer is an uncompressed tar written
 * by GNU tar with names sorted, every mtime SOURCE_DATE_EPOCH, numeric
 * owners, no atime/ctime and a pax header name without a process id; the
 * config's created time is the same epoch; every JSON is compact with
 * sorted keys.  So two exports of the same image (and the same --add
 * tree) give the same manifest digest, whatever the clock.  The layout
 * is written in DIR.tmp.XXXXXX beside DIR and renamed into place: DIR
 * must not exist, so nothing of the caller's is overwritten. */
#include "core/core.h"
#include "util/escape.h"
#include "util/sha256.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/image-internal.h"

/* A layer of an export is bounded by this (the store's images are
 * bounded by IMAGE_MAX_FILE a file and IMAGE_MAX_ENTRIES entries). */
#define EXPORT_MAX_LAYER (64ULL << 30)

#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#if defined(__x86_64__)
#define OCI_ARCH "amd64"
#elif defined(__aarch64__)
#define OCI_ARCH "arm64"
#elif defined(__i386__)
#define OCI_ARCH "386"
#elif defined(__riscv) && __riscv_xlen == 64
#define OCI_ARCH "riscv64"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define OCI_ARCH "ppc64le"
#elif defined(__s390x__)
#define OCI_ARCH "s390x"
#else
#error "the OCI architecture name of this target is unknown"
#endif

static int
hash_file(const char *p, char hex[65], uint64_t *size, struct wd_err *err)
{
	wd_autoclose int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return wd_err_sys(err, errno, "%s", p);
	struct wd_sha256 h;
	wd_sha256_init(&h);
	char buf[65536];
	ssize_t k;
	*size = 0;
	while ((k = read(fd, buf, sizeof(buf))) > 0) {
		wd_sha256_update(&h, buf, (size_t)k);
		*size += (uint64_t)k;
	}
	if (k < 0)
		return wd_err_sys(err, errno, "read %s", p);
	unsigned char md[32];
	wd_sha256_final(&h, md);
	wd_sha256_hex(md, hex);
	return 0;
}

/* The tree root as a layer: a blob of out and its descriptor appended to
 * layers, its uncompressed digest to diff_ids.  root_owned: every entry
 * owned by 0:0 (--add's tree, a build's output owned by whoever built it);
 * otherwise the store's owners are kept (the image's digest covers them). */
static int
add_layer(const char *out, const char *root, bool root_owned, json_t *layers, json_t *diff_ids,
	  struct wd_err *err)
{
	char tarp[PATH_MAX];
	snprintf(tarp, sizeof(tarp), "%s/layer.tar", out);
	wd_autofree char *a_file = wd_xasprintf("--file=%s", tarp);
	wd_autofree char *a_dir = wd_xasprintf("--directory=%s", root);
	char a_prog[] = "tar", a_create[] = "--create", a_sort[] = "--sort=name",
	     a_fmt[] = "--format=posix",
	     a_pax[] = "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
	     a_mtime[] = "--mtime=@" IMAGE_EPOCH, a_num[] = "--numeric-owner",
	     a_own[] = "--owner=0", a_grp[] = "--group=0", a_xattr[] = "--no-xattrs",
	     a_acl[] = "--no-acls", a_sel[] = "--no-selinux", a_one[] = "--one-file-system",
	     a_dot[] = ".";
	char *argv[] = {a_prog,	 a_create, a_file, a_dir, a_sort, a_fmt, a_pax, a_mtime, a_num,
			a_xattr, a_acl,	   a_sel,  a_one, a_own,  a_grp, NULL,	NULL};
	/* the tree itself, after the options */
	if (root_owned)
		argv[15] = a_dot;
	else
		argv[13] = a_dot, argv[14] = NULL;
	int rc = image_run_tool(argv, "tar", EXPORT_MAX_LAYER, err);
	if (rc < 0)
		return wd_err_prefix(err, "layer of %s", root);
	char hex[65];
	uint64_t size = 0;
	if ((rc = hash_file(tarp, hex, &size, err)) < 0)
		return rc;
	char final[PATH_MAX];
	snprintf(final, sizeof(final), "%s/blobs/sha256/%s", out, hex);
	if (rename(tarp, final) < 0)
		return wd_err_sys(err, errno, "rename %s", tarp);
	json_t *d =
	    json_pack("{s:s, s:s, s:I}", "mediaType", "application/vnd.oci.image.layer.v1.tar",
		      "digest", "", "size", (json_int_t)size);
	json_object_set_new(d, "digest", json_sprintf("sha256:%s", hex));
	json_array_append_new(layers, d);
	json_array_append_new(diff_ids, json_sprintf("sha256:%s", hex));
	return 0;
}

static bool
strings_ok(json_t *a)
{
	size_t i;
	json_t *v;
	if (!json_is_array(a))
		return false;
	json_array_foreach(a, i, v) if (!json_is_string(v)) return false;
	return true;
}

/* The config's "config": the image's Env (its image.json env, PATH if it
 * sets none), User and WorkingDir, then the caller's over them. */
static json_t *
config_of(json_t *meta, const char *digest, json_t *over, struct wd_err *err)
{
	json_t *c = json_object();
	json_t *env = json_array();
	size_t i;
	json_t *v;
	bool path = false;
	json_array_foreach(json_object_get(meta, "env"), i, v)
	{
		if (!json_is_string(v))
			continue;
		path = path || !strncmp(json_string_value(v), "PATH=", 5);
		json_array_append(env, v);
	}
	if (!path)
		json_array_append_new(env, json_string(DEFAULT_PATH));
	json_object_set_new(c, "Env", env);
	const char *u = json_string_value(json_object_get(meta, "user"));
	const char *w = json_string_value(json_object_get(meta, "workdir"));
	if (u)
		json_object_set_new(c, "User", json_string(u));
	if (w)
		json_object_set_new(c, "WorkingDir", json_string(w));
	json_t *labels = json_pack("{s:s, s:s}", "org.opencontainers.image.created",
				   IMAGE_EPOCH_ISO, "org.warden.image.digest", "");
	json_object_set_new(labels, "org.warden.image.digest", json_sprintf("sha256:%s", digest));
	json_object_set_new(c, "Labels", labels);
	if (!over)
		return c;
	const char *k;
	json_object_foreach(over, k, v)
	{
		bool ok = true;
		if (!strcmp(k, "Entrypoint") || !strcmp(k, "Cmd"))
			ok = strings_ok(v);
		else if (!strcmp(k, "User") || !strcmp(k, "WorkingDir"))
			ok = json_is_string(v);
		else if (!strcmp(k, "Env")) {
			ok = strings_ok(v);
			/* NAME=VALUE each, replacing the image's NAME */
			size_t j;
			json_t *e;
			json_array_foreach(v, j, e)
			{
				const char *kv = json_string_value(e),
					   *eq = kv ? strchr(kv, '=') : NULL;
				if (!eq || eq == kv) {
					ok = false;
					break;
				}
				size_t n = (size_t)(eq - kv) + 1;
				for (size_t x = 0; x < json_array_size(env); x++)
					if (!strncmp(json_string_value(json_array_get(env, x)), kv,
						     n))
						json_array_remove(env, x--);
				json_array_append(env, e);
			}
			if (ok)
				continue;
		} else if (!strcmp(k, "Labels")) {
			const char *lk;
			json_t *lv;
			ok = json_is_object(v);
			json_object_foreach(v, lk, lv)
			{
				if (!json_is_string(lv)) {
					ok = false;
					break;
				}
				json_object_set(labels, lk, lv);
			}
			if (ok)
				continue;
		} else {
			wd_autofree char *q = wd_esc_path(k);
			wd_err_set(err, WD_E_INVAL,
				   "config key %s is not one export sets (Entrypoint, Cmd, User, "
				   "WorkingDir, Env, Labels)",
				   q);
			json_decref(c);
			return NULL;
		}
		if (!ok) {
			wd_err_set(err, WD_E_INVAL, "config %s: not of the type the OCI config has",
				   k);
			json_decref(c);
			return NULL;
		}
		json_object_set(c, k, v);
	}
	return c;
}

WD_API int
wd_image_export(wd_ctx *ctx, const char *ref, const char *dest, const char *tag_in,
		const char *config, const char *add, char **json, struct wd_err *err)
{
	char dir[PATH_MAX], digest[65];
	/* the tag: what a reader's --tag and image references match; the
	 * characters a tag has (the OCI distribution spec's) */
	if (tag_in && (!*tag_in || strlen(tag_in) > 128 || !isalnum((unsigned char)tag_in[0]) ||
		       strspn(tag_in, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789_.-") != strlen(tag_in))) {
		wd_autofree char *q = wd_esc_path(tag_in);
		return wd_err_set(err, WD_E_INVAL,
				  "--tag %s is not a tag ([A-Za-z0-9][A-Za-z0-9_.-]*, at most 128 "
				  "bytes)",
				  q);
	}
	int rc = image_dir(ctx, dir, sizeof(dir), err);
	if (rc < 0 || (rc = image_resolve(dir, ref, digest, err)) < 0)
		return rc;
	json_t *over = NULL;
	if (config) {
		json_error_t je;
		over = json_loads(config, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(over)) {
			json_decref(over);
			return wd_err_set(err, WD_E_INVAL, "config:%d:%d: %s", je.line, je.column,
					  over ? "not an object" : je.text);
		}
	}
	char addp[PATH_MAX] = "";
	struct stat st;
	if (add && (!realpath(add, addp) || stat(addp, &st) < 0 || !S_ISDIR(st.st_mode))) {
		json_decref(over);
		wd_autofree char *q = wd_esc_path(add);
		return wd_err_set(err, WD_E_INVAL, "--add %s is not a directory", q);
	}
	if (lstat(dest, &st) == 0 || errno != ENOENT) {
		json_decref(over);
		wd_autofree char *q = wd_esc_path(dest);
		return wd_err_set(err, WD_E_INVAL,
				  "%s exists: export writes a new directory (remove it, or name "
				  "another)",
				  q);
	}
	json_t *meta = image_read_meta(dir, digest, err);
	if (!meta) {
		json_decref(over);
		return -EINVAL;
	}
	json_t *cfg = config_of(meta, digest, over, err);
	json_decref(over);
	json_decref(meta);
	if (!cfg)
		return -EINVAL;

	/* the image stays while it is read: rm takes the exclusive lock */
	char idir[PATH_MAX], rootfs[PATH_MAX];
	snprintf(idir, sizeof(idir), "%s/sha256-%s", dir, digest);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", idir);
	wd_autoclose int ifd = open(idir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ifd < 0 || flock(ifd, LOCK_SH) < 0) {
		json_decref(cfg);
		return wd_err_sys(err, errno, "%s", idir);
	}
	wd_autofree char *tmp = wd_xasprintf("%s.tmp.XXXXXX", dest);
	if (!mkdtemp(tmp)) {
		json_decref(cfg);
		return wd_err_sys(err, errno, "create %s", tmp);
	}
	chmod(tmp, 0755); /* a layout is for others to read, as a build dir is */
	json_t *layers = json_array(), *diff_ids = json_array(), *cdesc = NULL;
	char blobs[PATH_MAX], man[65];
	snprintf(blobs, sizeof(blobs), "%s/blobs", tmp);
	uint64_t t0 = wd_now_ms();
	if (mkdir(blobs, 0755) < 0 || (strcat(blobs, "/sha256"), mkdir(blobs, 0755) < 0)) {
		rc = wd_err_sys(err, errno, "create %s", blobs);
		goto fail;
	}
	if ((rc = add_layer(tmp, rootfs, false, layers, diff_ids, err)) < 0 ||
	    (addp[0] && (rc = add_layer(tmp, addp, true, layers, diff_ids, err)) < 0))
		goto fail;
	json_t *image = json_pack("{s:s, s:s, s:s, s:O, s:{s:s, s:O}}", "architecture", OCI_ARCH,
				  "os", "linux", "created", IMAGE_EPOCH_ISO, "config", cfg,
				  "rootfs", "type", "layers", "diff_ids", diff_ids);
	char *text = json_dumps(image, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(image);
	if (!text)
		abort();
	char chex[65], cpath[PATH_MAX];
	wd_sha256_hex_of(text, strlen(text), chex);
	snprintf(cpath, sizeof(cpath), "%s/%s", blobs, chex);
	FILE *f = fopen(cpath, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		rc = wd_err_sys(err, errno, "write %s", cpath);
		free(text);
		goto fail;
	}
	cdesc =
	    json_pack("{s:s, s:s, s:I}", "mediaType", "application/vnd.oci.image.config.v1+json",
		      "digest", "", "size", (json_int_t)strlen(text));
	json_object_set_new(cdesc, "digest", json_sprintf("sha256:%s", chex));
	free(text);
	/* the tag: the name exported, or "latest" for a digest */
	const char *tag = tag_in ? tag_in : strncmp(ref, "sha256:", 7) ? ref : "latest";
	if ((rc = image_oci_write(tmp, cdesc, layers, tag, man, err)) < 0)
		goto fail;
	if (rename(tmp, dest) < 0) {
		rc = wd_err_sys(err, errno, "rename %s to %s", tmp, dest);
		goto fail;
	}
	uint64_t total = 0;
	size_t i;
	json_t *v;
	json_array_foreach(layers, i, v) total +=
	    (uint64_t)json_integer_value(json_object_get(v, "size"));
	json_t *res = json_pack("{s:s, s:s, s:s, s:O, s:I, s:O, s:I}", "image", ref, "path", dest,
				"manifest", "", "config", cfg, "size_bytes", (json_int_t)total,
				"layers", layers, "export_ms", (json_int_t)(wd_now_ms() - t0));
	json_object_set_new(res, "manifest", json_sprintf("sha256:%s", man));
	json_object_set_new(res, "tag", json_string(tag));
	*json = image_dump(res);
	json_decref(res);
	json_decref(layers);
	json_decref(diff_ids);
	json_decref(cdesc);
	json_decref(cfg);
	return 0;
fail:
	wd_rm_tree_at(AT_FDCWD, tmp);
	json_decref(layers);
	json_decref(diff_ids);
	json_decref(cdesc);
	json_decref(cfg);
	return rc;
}
