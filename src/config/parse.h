/* parse.h - private to src/config: the validation walk's context and the
 * typed getters every part of the document uses (parse.c).  Each getter
 * reports an error at the member being read, as NAME:LINE:COLUMN: PATH:
 * what, and returns -EINVAL; on success it returns 0. */
#ifndef WD_CONFIG_PARSE_H
#define WD_CONFIG_PARSE_H

#include "config/config.h"

#define CONFIG_MAX_DEPTH 16

struct vctx {
	const char *name; /* file name for messages */
	const char *text;
	size_t len;
	struct config_path_elem path[CONFIG_MAX_DEPTH];
	size_t depth;
	struct wd_err *err;
};

void vctx_push_key(struct vctx *v, const char *k);
void vctx_push_idx(struct vctx *v, size_t i);
void vctx_pop(struct vctx *v);

/* Report an error at the current member (its key if key, else its value). */
int vctx_fail(struct vctx *v, bool key, const char *fmt, ...) WD_PRINTF(3, 4);
/* "unknown key 'k' (did you mean ...?)"; known is NULL-terminated. */
int vctx_unknown_key(struct vctx *v, const char *k, const char *const *known);

const char *config_type_name(json_t *j);
int config_want_type(struct vctx *v, json_t *j, json_type t, const char *what);
int config_get_string(struct vctx *v, json_t *j, char **out);
int config_get_bool(struct vctx *v, json_t *j, bool *out);
/* An integer in [lo, hi]. */
int config_get_int(struct vctx *v, json_t *j, int64_t lo, int64_t hi, int64_t *out);
/* A size: an integer number of bytes or a string like "512KiB", in [lo, hi]. */
int config_get_size(struct vctx *v, json_t *j, uint64_t lo, uint64_t hi, uint64_t *out);
/* A number of units with a fixed precision: x in [lo, hi], a whole number
 * of 1/scale (timeout in ms: scale 1000; CPUs in millionths: 1e6), so a
 * value is never silently rounded.  *out is x * scale. */
int config_get_fixed(struct vctx *v, json_t *j, double lo, double hi, double scale, uint64_t *out);
/* An array of strings; check(word) returns NULL if acceptable or why not. */
int config_get_strv(struct vctx *v, json_t *j, struct config_strv *out, bool nonempty,
		    const char *(*check)(const char *));
void config_strv_free(struct config_strv *s);

/* Word checks for config_get_strv. */
const char *config_check_option(const char *s);
const char *config_check_word(const char *s);
const char *config_check_subcommand(const char *s);
const char *config_check_env_pattern(const char *s);

/* Parts of the document (program.c, sandbox.c). */
int config_load_program(struct vctx *v, const char *name, bool workspace, json_t *j,
			struct config_program *pg);
void config_program_fini(struct config_program *pg);
/* Limits shared by profiles and "sandbox": one member k of object j. */
int config_load_limit(struct vctx *v, const char *k, json_t *val, struct config_limits *lim,
		      bool *known);
int config_load_profile(struct vctx *v, const char *name, json_t *j, struct config_profile *pr);
int config_load_sandbox(struct vctx *v, json_t *j, struct config_sandbox *sb);
/* An image reference as wd_spec_set_image() takes it: NAME or sha256:HEX. */
bool config_image_ref_ok(const char *s);
int config_load_network(struct vctx *v, json_t *j, struct config_network *net);
int config_load_workspace(struct vctx *v, json_t *j, struct config_policy *p);
int config_load_env(struct vctx *v, json_t *j, struct config_strv *deny);
/* secrets.c */
int config_load_secrets(struct vctx *v, json_t *j, struct config_policy *p);
void config_secrets_free(struct config_policy *p);
json_t *config_secrets_json(const struct config_policy *p);

/* The built-in profiles (shell_commands is the base of a custom one). */
struct config_builtin_profile {
	const char *name;
	struct config_limits lim;
};
extern const struct config_builtin_profile config_builtin_profiles[];
extern const size_t config_nbuiltin_profiles;

#endif
