/* core/image-internal.h: what image.c (the store: names, digests, ls,
 * inspect, rm, wd_spec_set_image) shares with image_build.c (recipes,
 * mmdebstrap builds, umoci imports).  Private to src/core. */
#ifndef WD_CORE_IMAGE_INTERNAL_H
#define WD_CORE_IMAGE_INTERNAL_H

#include "core/core.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define IMAGE_NAME_MAX 64
/* An image holds at most this many entries: a layer of millions of empty
 * files is refused (counted before unpacking, and again in the walk)
 * rather than written and walked for hours. */
#define IMAGE_MAX_ENTRIES 1000000

/* [a-z0-9][a-z0-9._-]*, at most IMAGE_NAME_MAX bytes */
bool image_name_ok(const char *n);
/* $WARDEN_IMAGE_DIR, else STATE/images (made 0700 with names/ if
 * missing) into out */
int image_dir(wd_ctx *ctx, char *out, size_t cap, struct wd_err *err);
/* NAME or sha256:HEX of a stored image: its digest (64 hex digits) */
int image_resolve(const char *dir, const char *ref, char digest[65], struct wd_err *err);
/* sha256-digest/image.json: a new object, or NULL with err set */
json_t *image_read_meta(const char *dir, const char *digest, struct wd_err *err);
/* the names pointing at digest: a new array */
json_t *image_names_of(const char *dir, const char *digest);
/* qsort comparator of char * */
int image_cmp_str(const void *a, const void *b);
/* the digest of root's sorted walk and env; -EINVAL for a device node,
 * FIFO, socket or too many entries (err names the entry) */
int image_digest_tree(const char *root, char *const *env, size_t nenv, const char *user,
		      char hex[65], uint64_t *bytes, uint64_t *files, struct wd_err *err);
/* a user name warden can write as its sandbox user's passwd entry:
 * [a-z_][a-z0-9_-]*, at most 32 bytes, not root or nobody (warden's
 * passwd has those, and uid 1000 is never root) */
bool image_user_ok(const char *u);
/* json_dumps, indented and sorted; aborts on allocation failure */
char *image_dump(json_t *j);
/* move tmp (rootfs/) into the store as sha256-hex with meta, name it;
 * tmp is gone afterwards; *out: the metadata */
int image_store(const char *dir, const char *tmp, const char *name, const char *hex, json_t *meta,
		uint64_t ms, char **out, struct wd_err *err);

/* A file bigger than this stops a build or an import: a layer's 10 GB
 * (sparse) entry would otherwise fill the state directory's disk. */
#define IMAGE_MAX_FILE (4ULL << 30)
/* Every build's file times and dpkg's records come from this moment
 * (mmdebstrap honours SOURCE_DATE_EPOCH; export's tar and config too):
 * 2023-06-10, bookworm's release. */
#define IMAGE_EPOCH "1686355200"
#define IMAGE_EPOCH_ISO "2023-06-10T00:00:00Z"

/* run argv with SOURCE_DATE_EPOCH, LC_ALL and TZ fixed, its output into
 * the log; each file it writes bounded at fsize bytes; pkg: the Debian
 * package that has argv[0] (named when it is missing) */
int image_run_tool(char *const argv[], const char *pkg, uint64_t fsize, struct wd_err *err);
/* a locked build directory dir/tmp.XXXXXX (removing those of builds that
 * ended); *lockfd: the lock, inherited by the tools run */
int image_make_tmp(const char *dir, char *tmp, size_t cap, int *lockfd, struct wd_err *err);
/* an OCI image layout (or the layout inside an OCI-in-docker archive):
 * the config object of the manifest tagged tag, or NULL with err set */
json_t *image_oci_config(const char *layout, const char *tag, struct wd_err *err);
/* -EINVAL (err naming the layer) when the layers of the image tagged tag
 * in an OCI layout hold more than max entries in all, counted from their
 * tar headers (gzip'd ones through gzip -dc) before anything is written */
int image_oci_count(const char *layout, const char *tag, uint64_t max, struct wd_err *err);
/* a docker save tarball at path, written as an OCI image layout in out
 * (a directory that exists, empty) with its one image tagged "t" */
int image_docker_to_oci(const char *path, const char *out, struct wd_err *err);
/* manifest, index.json (the one image tagged tag) and oci-layout of an
 * OCI image layout in out, whose blobs hold config_desc's and layers';
 * digest (may be NULL): the manifest's */
int image_oci_write(const char *out, json_t *config_desc, json_t *layers, const char *tag,
		    char digest[65], struct wd_err *err);

#endif
