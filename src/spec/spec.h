/* spec: the public run description (wd_spec, include/warden.h) as the
 * library holds it: its setters (spec.c), a deep copy, the checks every
 * setter makes, and the spec as JSON and back for what outlives the
 * process (a session's meta.json, spec_json.c).
 *
 * Below supervise (whose sandboxes keep a copy) and above net (its egress
 * rules and secrets) and policy (workspace containment): it starts no
 * process; it resolves and stats paths, and reads a secret's file
 * through net (net_secret_read). */
#ifndef WD_SPEC_H
#define WD_SPEC_H

#include "util/util.h"

struct net_rules;
struct net_secrets;

struct spec_bind {
	char *src, *dst;
	bool rw;
	/* where src led, link-free, when a session's start checked it
	 * (spec_from_json); the jail then binds this path and refuses any
	 * link met on it.  NULL: src, resolved by the jail's rules. */
	char *real;
};

struct wd_spec {
	char **argv; /* NULL-terminated; the program of wd_run() */
	int argc;
	char *workspace;
	enum wd_isolation isolation;
	bool isolation_given, net_given; /* set by the caller, not defaults */
	struct wd_limits lim;		 /* defaults filled in */
	struct wd_limits lim_given;	 /* what the caller set (0: not set) */
	struct spec_bind *binds;
	size_t nbinds;
	char **env; /* NAME=VALUE */
	size_t nenv;
	uint16_t *ports;
	size_t nports;
	int stdin_fd;
	int stream_fd[3]; /* [1] stdout, [2] stderr */
	char *term;
	/* network: proxy mode, its rules (net/net.h), interception; the
	 * rules' text is kept too, so a copy can build its own set */
	enum wd_net_mode net;
	struct net_rules *net_rules;
	struct spec_rule {
		enum wd_net_rule kind;
		char *text;
	} * rules;
	size_t nrules;
	bool tls_intercept;
	char *upstream_ca;
	/* credentials for the proxy to inject (net/net.h): shared between
	 * copies (a reference each), copied before a change */
	struct net_secrets *secrets;
	/* where each secret's value was read from ("env:VAR", "@/abs/path")
	 * and the --placeholder VAR=NAME pairs: what a session keeps in its
	 * meta.json instead of the values; pending: sources known, values not
	 * read (spec_secrets_load), and no sandbox can be built */
	struct spec_secret_src {
		char *name, *source;
	} * secret_src;
	size_t nsecret_src;
	char **placeholder_src;
	size_t nplaceholder_src;
	bool secrets_pending;
	bool time_ns;
	bool best_effort;	  /* run without limits the host cannot enforce */
	bool reproducible;	  /* SOURCE_DATE_EPOCH, PYTHONHASHSEED=0, ... */
	wd_net_event_fn event_fn; /* wd_spec_set_event_handler: network events as JSON */
	void *event_data;
	/* the workspace */
	enum wd_workspace_mode ws_mode;
	uint64_t disk_bytes; /* --disk; 0: warden's default (1G) */
	char **protect;	     /* protected paths beyond the defaults */
	size_t nprotect;
	/* the environment: the image's reference as given, the
	 * rootfs it resolved to (host path) and its digest; NULL: the host's
	 * /usr and /etc (core/image.c resolves, wd_spec_set_image) */
	char *image, *image_root, *image_digest;
	/* the image's user: the name of warden's passwd entry for uid 1000
	 * (NULL: sandbox) */
	char *image_user;
	/* set by core for one sandbox, never by the caller: detached trees
	 * from workspace/ (not owned; -1 none), and a vacant build */
	int tree_ws, tree_home, tree_tmp;
	bool vacant;
};

/* A deep copy (the sandbox keeps its own). */
wd_spec *spec_copy(const wd_spec *s);
/* "/", /root, /var and the system trees (/etc, /usr, /proc, ...), which
 * must never be writable by a sandbox; real is a resolved path. */
bool spec_is_system_dir(const char *real);
/* The spec as JSON (what the caller set; a new jansson object) and back
 * (through the public setters, so everything is checked again). */
struct json_t;
struct json_t *spec_to_json(const wd_spec *s);
int spec_from_json(struct json_t *j, wd_spec **out, struct wd_err *err);
/* Set a stored image by its rootfs path (a session's meta.json): root
 * must be an existing ".../sha256-HEX/rootfs" directory whose HEX is the
 * digest of ref ("sha256:HEX").  -EINVAL otherwise. */
/* A name for uid 1000's passwd entry (an image's user): [a-z_][a-z0-9_-]*,
 * at most 32 bytes, not root or nobody (warden's passwd keeps those). */
bool spec_user_name_ok(const char *u);
int spec_set_image_root(wd_spec *s, const char *ref, const char *root, struct wd_err *err);
/* A protected path in normal form (relative, no "", "." or ".."
 * component): a new copy, or NULL when it is not one. */
char *spec_protect_path(const char *p);

/* Read the values of a spec whose secrets are pending (from its
 * meta.json): get (NULL: each secret's own source, read by this process)
 * fills buf with secret name's value; then the placeholders.  0, or
 * -EINVAL naming the secret and its source. */
typedef int (*spec_secret_get)(void *data, const char *name, const char *source, char *buf,
			       size_t cap, size_t *len, struct wd_err *err);
int spec_secrets_load(wd_spec *s, spec_secret_get get, void *data, struct wd_err *err);
/* Record secret name's source (a file made absolute). */
void spec_secret_src_add(wd_spec *s, const char *name, const char *source);

/* The sandbox's base environment: the spec's variables and the secrets'
 * placeholders, as a new NULL-terminated array of pointers
 * into spec (free the array only); *n gets the count.  -EINVAL when the
 * spec has secrets without the proxy, or a placeholder's variable is also
 * set with wd_spec_setenv(). */
int spec_jail_env(const wd_spec *spec, const char ***out, size_t *n, struct wd_err *err);
/* The secrets' lines of a plan (names, rules, placeholder variables;
 * never a value): a new string, "" without secrets. */
char *spec_plan_secrets(const wd_spec *spec);

#endif
