/* config: the policy document.  Loads and validates policy JSON (jansson,
 * JSON_REJECT_DUPLICATES) into plain structs, with every error reported as
 * file:line:column; holds the built-in default policy and the built-in
 * resource profiles.  No kernel, no decisions: src/policy/ decides. */
#ifndef WD_CONFIG_H
#define WD_CONFIG_H

#include "util/util.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_VERSION 1
#define CONFIG_MAX_FILE (1u << 20)	 /* a policy larger than 1 MiB is a mistake */
#define CONFIG_MAX_STATE_ENTRIES 1000000 /* approvals.max_state_entries: 2-5 s of walk */

/* A list of owned strings. */
struct config_strv {
	char **v;
	size_t n;
};

/* Which arguments of a program name files (docs/policy.md "paths"). */
enum config_paths {
	CONFIG_PATHS_OPERANDS = 0,   /* every operand and every option value */
	CONFIG_PATHS_NONE = 1,	     /* nothing: the program's rules are all there is */
	CONFIG_PATHS_SKIP_FIRST = 2, /* like operands, but the first operand is data (grep) */
};

/* An argument pattern that turns an allowed command into a pause. */
struct config_approve {
	struct config_strv match; /* words that must all appear, in order */
	char *reason;		  /* shown to the human; may be NULL */
};

/* Option lists of a program (docs/policy.md "Programs and their rules").
 * Every option is written as the program spells it ("-n", "--max-count",
 * "-name"), without "=value". */
struct config_options {
	struct config_strv deny;  /* refuse the command */
	struct config_strv value; /* take a value that names a file: judged as a path */
	struct config_strv
	    data; /* take a value that is data (code, pattern, count): never a path */
	/* take a suffix the program appends to a file's name (sed -i, cp -S):
	 * a '/' in it is refused; attached only unless also in data */
	struct config_strv suffix;
	/* take a directory the program changes into before it resolves its
	 * other relative paths (patch -d, make -C): each also a value_option */
	struct config_strv chdir;
};

struct config_program {
	char *name;	/* basename; for a workspace program, its path in the workspace */
	char *rule;	/* "programs.git" or "workspace.programs[.venv/bin/pytest]" */
	bool workspace; /* from workspace.programs: a file of the workspace */
	bool interpreter;
	bool has_subcommands; /* "subcommands" present: first operand must be one */
	struct config_strv subcommands;
	bool options_listed; /* "allow_options" present: only those options */
	struct config_strv allow_options;
	struct config_options opts;
	/* "before_subcommand": lists for the options before the subcommand
	 * (git's own -c, -C, -p); deny adds to opts.deny there, value and data
	 * replace opts' lists there.  has_before: the key was given. */
	bool has_before;
	struct config_options before;
	struct config_strv deny_env; /* NAME or PREFIX*: refuse the command if set */
	enum config_paths paths;
	struct config_approve *approve;
	size_t napprove;
	char *advice; /* one line for the model when refused; may be NULL */
};

/* Resource limits; 0 means not set (the next source decides: the run's own
 * options, a tool's profile, the policy's "sandbox", warden's defaults). */
struct config_limits {
	uint64_t timeout_ms;
	uint64_t memory_bytes;
	uint64_t cpu_millionths;
	uint64_t output_bytes;
	uint64_t pids;
	uint64_t tmp_bytes;
};

struct config_profile {
	char *name;
	bool builtin;
	struct config_limits lim;
};

/* "sandbox": what the jail of every run under this policy is like. */
struct config_sandbox {
	bool isolation_set;
	enum wd_isolation isolation;
	struct config_limits lim;
	unsigned require; /* WD_REQUIRE_* bits: protections a run must have */
	bool reproducible;
	unsigned pool; /* warden serve's warm pool: instances kept ready (0: none) */
	char *image;   /* sandbox.image: an image name or sha256:HEX */
};

/* "network": egress, as the run options --net, --allow-host, --deny-host,
 * --add-host, --allow-port, --tls-intercept and --upstream-ca say it. */
struct config_network {
	bool mode_set;
	enum wd_net_mode mode; /* allow rules imply WD_NET_PROXY */
	struct config_strv allow;
	struct config_strv deny;
	struct config_strv hosts;  /* NAME=ADDRESS */
	struct config_strv ranges; /* allow_ranges: --allow-range ADDRESS[/PREFIX] */
	unsigned *ports;	   /* allow_ports */
	size_t nports;
	bool tls_intercept;
	char *upstream_ca; /* absolute path, or NULL: the host's store */
};

/* "secrets": a credential by name: where warden reads it ("env:VAR" or
 * "@/abs/path"), the variable that gets its placeholder, and where the
 * proxy adds it.  Never a value. */
struct config_secret {
	char *name;
	char *from;
	char *placeholder;		 /* or NULL */
	struct config_strv inject;	 /* "DEST HEADER=TEMPLATE" */
	struct config_strv inject_basic; /* "DEST USER:PASSWORD" */
};

enum config_tool_class {
	CONFIG_TOOL_BLOCKED = 0, /* never runs */
	CONFIG_TOOL_DIRECT = 1,	 /* runs in the harness (e.g. a file read through openat2) */
	CONFIG_TOOL_SANDBOX = 2, /* runs in a jail with its profile */
};

struct config_tool {
	char *name;
	enum config_tool_class klass;
	char *profile; /* a profile name, NULL for blocked/direct without one */
	char *description;
	char *image; /* tools.NAME.image: the environment a sandbox tool runs in, or NULL */
};

/* A loaded, validated policy.  Programs, tools and profiles are sorted by
 * name (bsearch).  Free with config_policy_free(). */
struct config_policy {
	int version;
	char *source; /* file name, or "<built-in>" */
	char *mount;  /* where the workspace appears in the jail ("/workspace") */
	struct config_program *programs;
	size_t nprograms;
	struct config_program *wprograms; /* workspace.programs, sorted by path */
	size_t nwprograms;
	struct config_strv wprotect; /* workspace.protect: paths kept read-only inside */
	struct config_tool *tools;
	size_t ntools;
	struct config_profile *profiles; /* built-ins first, then the document's */
	size_t nprofiles;
	uint64_t approval_ttl_s;
	uint64_t approval_max_state_entries; /* approvals.max_state_entries */
	char *audit_path;		     /* NULL: no audit unless --audit */
	struct config_network net;
	struct config_secret *secrets; /* in document order */
	size_t nsecrets;
	struct config_sandbox sandbox;
	struct config_strv env_deny; /* "env.deny": NAME or PREFIX*, for every program */
	char *allowed_names;	     /* "cat, diff, find, ..." for advice */
	char digest[65];	     /* SHA-256 of the canonical effective policy */
};

/* Load from a file / a buffer (name is used in error messages).  On error
 * err->msg is "NAME:LINE:COLUMN: what" and -EINVAL is returned (or -errno
 * when the file cannot be read).  *out is a new policy on success. */
int config_load_file(const char *path, struct config_policy **out, struct wd_err *err);
int config_load_buffer(const char *buf, size_t len, const char *name, struct config_policy **out,
		       struct wd_err *err);
/* The built-in default policy (a coding allowlist), loaded through the same
 * validator. */
int config_load_default(struct config_policy **out, struct wd_err *err);
extern const char *const config_default_json_parts[]; /* joined: the JSON */
/* "preset:NAME" names a built-in preset (presets.c) wherever a policy file
 * is named; a file of that name is ./preset:NAME. */
#define CONFIG_PRESET_PREFIX "preset:"
const char *config_preset_name(const char *path); /* NAME, or NULL: a file */
int config_load_preset(const char *name, struct config_policy **out, struct wd_err *err);

typedef struct config_policy config_policy;
void config_policy_free(struct config_policy *p);
WD_DEFINE_AUTOPTR(config_policy, config_policy_free)

/* The effective policy (defaults filled in) as a new JSON object; the
 * digest is SHA-256 over its compact, key-sorted serialisation. */
json_t *config_policy_to_json(const struct config_policy *p);

/* Lookups by name; NULL when absent.  len lets a caller look up a basename
 * inside a longer string without copying. */
const struct config_program *config_program_find(const struct config_policy *p, const char *name,
						 size_t len);
/* A workspace program by its normalized path relative to the workspace. */
const struct config_program *config_wprogram_find(const struct config_policy *p, const char *rel);
const struct config_tool *config_tool_find(const struct config_policy *p, const char *name);
const struct config_profile *config_profile_find(const struct config_policy *p, const char *name);
const char *config_tool_class_name(enum config_tool_class c);
const char *config_paths_name(enum config_paths m);
/* The names of the WD_REQUIRE_* bits, in bit order ("cgroup", ...). */
extern const char *const config_require_names[];
#define CONFIG_NREQUIRE 5

/* Whether env pattern pat ("NAME" or "PREFIX*") matches the NAME of the
 * NAME=VALUE entry (len is the length of NAME). */
bool config_env_match(const char *pat, const char *name, size_t len);

/* ---- position index (error path only) ----
 * jansson keeps no position per value, so on an error the validator asks
 * this small scanner where a member sits: path is a list of object keys and
 * array indexes from the root; key selects the member's key rather than its
 * value.  Returns 0 and sets line and col (1-based, characters), or -1 if the
 * path is not in the text. */
struct config_path_elem {
	const char *key; /* NULL: index */
	size_t index;
};
int config_json_locate(const char *text, size_t len, const struct config_path_elem *path,
		       size_t depth, bool key, int *line, int *col);

#endif
