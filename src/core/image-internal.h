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
/* remove a tree, never following a link; 0 or -errno */
int image_rm_tree_at(int dfd, const char *name, int depth);
int image_rm_tree(const char *path);
/* qsort comparator of char * */
int image_cmp_str(const void *a, const void *b);
/* the digest of root's sorted walk and env; -EINVAL for a device node,
 * FIFO, socket or too many entries (err names the entry) */
int image_digest_tree(const char *root, char *const *env, size_t nenv, char hex[65],
		      uint64_t *bytes, uint64_t *files, struct wd_err *err);
/* json_dumps, indented and sorted; aborts on allocation failure */
char *image_dump(json_t *j);
/* move tmp (rootfs/) into the store as sha256-hex with meta, name it;
 * tmp is gone afterwards; *out: the metadata */
int image_store(const char *dir, const char *tmp, const char *name, const char *hex, json_t *meta,
		uint64_t ms, char **out, struct wd_err *err);

#endif
