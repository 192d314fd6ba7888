/* policy: pure decisions about what is even handed to the jail.
 *
 *   command string --policy_tokenize--> argv   (or a shell.* refusal)
 *   argv --program rules--> allow | deny | pause
 *   every file argument --policy_path_check (openat2 BENEATH)--> inside | outside
 *   pause --policy_approval_id--> SHA-256 over argv, cwd, env, workspace, policy
 *
 * Nothing here allocates on the common path: words live in inline buffers
 * of struct policy_words (the heap is used only for long commands), and the
 * decision is caller storage.  The only system calls are the openat2()
 * containment checks, one per path argument.
 */
#ifndef WD_POLICY_H
#define WD_POLICY_H

#include "config/config.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* ---- words: the result of tokenizing ---- */

#define POLICY_WORDS_INLINE_ARGS 32
#define POLICY_WORDS_INLINE_BYTES 1024

/* An unquoted glob character ('*', '?', '[') the tokenizer let through
 * for the decision to place: in a data option's value (`--include=*.py`,
 * `-name *.py`) it is the program's own pattern and passes as written;
 * anywhere else it is refused as shell.glob.  Only the first in a word. */
struct policy_glob {
	int word;      /* index into argv */
	size_t at;     /* byte offset of the character in that word */
	size_t offset; /* byte offset in the command string */
	char c;
	bool data; /* set by the decision: it lies in a data option's value */
};
#define POLICY_WORDS_GLOBS 16

struct policy_words {
	int argc;
	size_t nglobs;
	struct policy_glob globs[POLICY_WORDS_GLOBS];
	char **argv; /* argv[argc] == NULL; points into buf */
	char *buf;
	size_t cap_args;
	size_t cap_bytes;
	char *argv_inline[POLICY_WORDS_INLINE_ARGS];
	char buf_inline[POLICY_WORDS_INLINE_BYTES];
};

void policy_words_init(struct policy_words *w);
void policy_words_fini(struct policy_words *w);

/* Why a string was refused.  rule is a static "shell.<kind>"; token is the
 * offending text as written ("&&", "$HOME", "2>"); offset its byte offset. */
struct policy_refusal {
	const char *rule;
	const char *what; /* static: what the shell would have done */
	char token[40];
	size_t offset;
};

/* Split s (len bytes, NUL bytes refused) into words with POSIX quoting and
 * refuse any shell composition or expansion.  Returns 0 and fills w, or -1
 * and fills r.  w must have been initialised; it is reset first. */
int policy_tokenize(const char *s, size_t len, struct policy_words *w, struct policy_refusal *r);
/* The same, but unquoted glob characters are recorded in w->globs instead
 * of refused (up to POLICY_WORDS_GLOBS words; more are refused): the
 * decision refuses those that are not in a data option's value. */
int policy_tokenize_globs(const char *s, size_t len, struct policy_words *w,
			  struct policy_refusal *r);

/* ---- decisions ---- */

enum policy_kind {
	POLICY_ALLOW = 0,
	POLICY_DENY = 1,
	POLICY_PAUSE = 2,
};

const char *policy_kind_name(enum policy_kind k);

struct policy_request {
	const char *command; /* the string form, or NULL when argv is given */
	int argc;
	const char *const *argv;
	int workspace_fd;	/* O_PATH|O_DIRECTORY fd of the workspace, -1: no path checks */
	const char *workspace;	/* host path of the workspace (messages, identity) */
	const char *cwd;	/* relative to the workspace; NULL or "." for its root */
	const char *const *env; /* NAME=VALUE entries passed to the command; may be NULL */
	size_t nenv;
	const char *workspace_id; /* identity for approvals ("dev:ino:path"); NULL: workspace */
	/* host path of the tree the jail's system directories come from (an
	 * image's rootfs); NULL: the host's own */
	const char *system_root;
	/* its identity for approvals ("dev:ino:realpath" of the rootfs: a
	 * store's path names the content digest, and an image rebuilt or
	 * imported again is another directory); NULL: system_root, or "host"
	 * when that is NULL too */
	const char *system_id;
	/* The state the command will read (the approval field "state"),
	 * walked only when an approval id is computed (a pause, a retry):
	 * the trees state_roots hands out (each fd is closed after its
	 * walk; a negative return: none could be had, which no approval
	 * matches), or, with no state_roots, the workspace.  state, when
	 * not NULL, keeps the print for the rest of the request. */
	int (*state_roots)(void *arg, const char **labels, int *fds, int max);
	void *state_arg;
	struct policy_state *state;
	/* The workspace as the command will see it, for the path checks
	 * (containment of its operands, a program given by a path): a cow
	 * sandbox's or session's overlay, where the model may have put a
	 * link the host directory does not hold (or removed one it does).
	 * NULL: workspace_fd is what the command sees (a one-shot sandbox
	 * starts from the host directory).  Asked at most once per decision
	 * (view_cache), and only when a path is checked: a round trip to a
	 * session's monitor is paid by the requests that need it.  Returns
	 * an O_PATH directory fd, or -errno with why filled (naming the
	 * session or sandbox); then every path check is refused, never made
	 * on the host directory instead. */
	int (*view)(void *arg, char *why, size_t cap);
	void *view_arg;
	struct policy_view *view_cache; /* required with view; closed by its owner */
};

/* What a request's view hook gave, once per decision (policy_request). */
struct policy_view {
	bool done;
	int fd; /* -1 until done, or when it failed */
	int err;
	char why[256];
};

/* The directory the path checks of req judge in: its view when it has
 * one (obtained now if not yet), else workspace_fd (-1: no workspace,
 * no path checks).  0 with *fd set, or -errno with *why (the view could
 * not be had: refuse, do not judge on the host directory). */
int policy_request_view(const struct policy_request *req, int *fd, const char **why);

/* What the walk of a request's state found (see policy_request). */
struct policy_state {
	bool done;
	bool complete;	  /* every entry seen (else no approval can match) */
	uint64_t entries; /* entries walked */
	uint64_t bound;	  /* approvals.max_state_entries when the walk stopped there, else 0 */
	char unseen[256]; /* the first place not seen when !complete (model's name) */
	char where[128];  /* the first tree's label: "workspace", or with the
			   * sandbox or session it belongs to */
	char hex[65];
};
#define POLICY_STATE_ROOTS_MAX 16

struct policy_decision {
	enum policy_kind kind;
	char rule[96];	  /* the rule that decided: "shell.and", "programs.git.approve[0]" */
	char reason[512]; /* one sentence for the log and the human */
	char advice[256]; /* one line for the model: what to do instead ("" for allow) */
	char approval_id[65];
	const struct config_program *program; /* NULL when refused before lookup */
	struct policy_words words;	      /* the argv that was judged */
};

void policy_decision_init(struct policy_decision *d);
void policy_decision_fini(struct policy_decision *d);

/* Decide.  d must have been initialised (it may be reused without fini in
 * between: words are reset).  Returns 0 with d filled, or a negative errno
 * only when a decision could not be made at all (never for refusals). */
int policy_decide(const struct config_policy *p, const struct policy_request *req,
		  struct policy_decision *d, struct wd_err *err);

/* ---- workspaces ----
 * Whether the host directory real (a realpath()) may be a workspace: not
 * /, /root, /var, a system directory or below one (/etc /usr /bin /sbin
 * /lib* /boot /proc /sys /dev /run), nor the caller's home directory or a
 * directory containing it.  0, or -EINVAL with err->msg naming real and
 * why.  The one rule for `warden check` (wd_request_set_workspace) and
 * `warden run` (the spec). */
int policy_workspace_validate(const char *real, struct wd_err *err);
/* Whether the approval store (wd_state_dir, resolved) is at or below
 * the real directory `real`; the store's path goes into store. */
int policy_store_within(const char *real, char *store, size_t cap);
/* Whether the approval store lies in one of dirs (a NULL-terminated list
 * of real directories a command may write) where uid could write it or
 * make it first; the store's path goes into store. */
bool policy_store_exposed(const char *const *dirs, uid_t uid, char *store, size_t cap);
/* A path (absolute, maybe not there yet) as the kernel will resolve it:
 * the realpath of its longest existing part, the rest as written.  0, or
 * -1 when it is not absolute or too long. */
int policy_path_real(const char *want, char *out, size_t cap);
/* Whether the resolved path is at or below the real directory real. */
bool policy_path_within(const char *path, const char *real);
/* Whether the resolved path lies in one of dirs where uid could write it
 * or make it (or a directory above it) first: policy_store_exposed's rule
 * for any of the host's records (an audit log, a policy file). */
bool policy_path_exposed(const char *path, const char *const *dirs, uid_t uid);

/* ---- programs given by a path (resolve.c) ---- */
enum policy_prog_kind {
	POLICY_PROG_SYSTEM = 0,	   /* a file in a directory of the jail's PATH: name */
	POLICY_PROG_WORKSPACE = 1, /* a file of the workspace: rel, its normalized path */
	POLICY_PROG_OTHER = 2,	   /* anywhere else, or not resolvable: why */
};
struct policy_prog {
	enum policy_prog_kind kind;
	char name[NAME_MAX + 1];
	char rel[PATH_MAX];
	char where[PATH_MAX]; /* what it resolves to, in the jail's view */
	const char *why;      /* static, or the request's view_cache->why */
	bool no_view;	      /* why: the sandbox's view could not be had */
	/* the walk ended at a name that does not exist in a system
	 * directory (never set once it entered the workspace) */
	bool missing;
	bool via_workspace; /* a component on the way was the workspace's */
};
/* Resolve prog (a word with a slash) as the jail will: relative to
 * mount/cwd, symlinks followed from where they lie.  Never fails. */
void policy_program_resolve(const struct policy_request *req, const char *mount, const char *prog,
			    struct policy_prog *out);

/* ---- option words (options.c) ---- */
enum policy_opt_takes {
	POLICY_OPT_FLAG = 0,  /* no value (as far as the policy knows) */
	POLICY_OPT_VALUE = 1, /* a value that names a file: judged as a path */
	POLICY_OPT_DATA = 2,  /* a value that is data: never judged */
};
struct policy_opt {
	const char *denied; /* the refused option the word is, abbreviates or holds */
	bool unlisted;	    /* allow_options given and the word is not among them */
	enum policy_opt_takes takes;
	const char *value; /* the attached value; NULL: the next word (if takes) */
	const char *judge; /* the "=value" of an option not listed: judged as a path */
	bool suffix;	   /* a suffix_options option: value (attached, or the next word
			    * if it takes DATA) is a file name suffix */
	bool chdir;	   /* a chdir_options option: its value is the directory the
			    * program resolves its other relative paths from */
	bool eq_short;	   /* spelled "-o=x": "=x" to getopt, "x" to argparse */
};
/* What option word w (starting with '-', not "-" or "--") means under pg's
 * lists; before_sub: it comes before the subcommand. */
void policy_option_scan(const struct config_program *pg, bool before_sub, const char *w,
			struct policy_opt *out);
/* Whether argument arg matches the approval pattern word want. */
bool policy_option_matches(const char *want, const char *arg);

/* ---- containment ----
 * Judge one path argument: 0 inside, 1 outside (d->reason filled with what
 * it resolves to), 2 refused for another reason (loop, magic link, error).
 * mount is the workspace's path in the jail: absolute arguments below it
 * (or below the host workspace path) are taken relative to the workspace. */
int policy_path_check(int workspace_fd, const char *workspace, const char *mount, const char *cwd,
		      const char *arg, char *reason, size_t reason_cap);
/* The same, in a sandbox's view of the workspace (view_fd: its cow
 * overlay): a link there is read there, for the message too, never in
 * the host directory, which need not hold it. */
int policy_path_check_view(int view_fd, const char *workspace, const char *mount, const char *cwd,
			   const char *arg, char *reason, size_t reason_cap);

/* For an absolute arg below mount (the jail's view) or workspace (the
 * host's), the rest of it, relative to the workspace ("" for the
 * workspace itself); NULL otherwise. */
const char *policy_path_below(const char *mount, const char *workspace, const char *arg);

/* Open path beneath the workspace with the same resolution the check uses
 * (RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS): for direct file tools, so the
 * check and the use are one operation.  Returns an fd or -errno. */
int policy_open_beneath(int workspace_fd, const char *path, int flags, mode_t mode);

/* ---- approvals ---- */

/* The approval id of a request: SHA-256 (hex) over the length-prefixed
 * argv, cwd, environment (names and values, in order), workspace identity,
 * policy digest and system identity (the image, or the host).  Also
 * returns the per-field digests (each 64 hex + NUL) if fields is not NULL,
 * in the order argv, cwd, env, workspace, policy, system, state, so a
 * mismatch can say which field differs. */
#define POLICY_ID_FIELDS 7
extern const char *const policy_id_field_names[POLICY_ID_FIELDS];
void policy_approval_id(const struct config_policy *p, const struct policy_request *req, int argc,
			const char *const *argv, char id[65], char fields[POLICY_ID_FIELDS][65]);
/* The print of req's state (walked once per request when req->state is
 * set): what policy_approval_id folds in as "state".  max_entries bounds
 * the walk (approvals.max_state_entries); past it the state is incomplete. */
const struct policy_state *policy_request_state(const struct policy_request *req,
						uint64_t max_entries, struct policy_state *scratch);
/* Where a request's state is (core: a session's view, home and /tmp);
 * without it, the workspace.  free_arg, when not NULL, makes arg the
 * request's, freed with it. */
void policy_request_state_roots(struct wd_request *r,
				int (*fn)(void *arg, const char **labels, int *fds, int max),
				void *arg, void (*free_arg)(void *arg));
/* The workspace as the command sees it (policy_request's view); arg is
 * not owned (the state's arg, or the caller's door, outlives r's use) */
void policy_request_view_hook(struct wd_request *r, int (*fn)(void *arg, char *why, size_t cap),
			      void *arg);

/* ---- for the context's event stream (src/core) ---- */
/* The members of a "decision" event (the request without environment
 * values, the decision, rule, reason, policy digest): a new object. */
json_t *policy_decision_event(const struct wd_request *r, const struct wd_decision *d);
/* The argv a decision judged as a JSON array (a new reference). */
json_t *policy_decision_argv_json(const struct wd_decision *d);
/* The limit precedence of the policy stage (docs/policy.md: option >
 * tool profile > the policy's sandbox object > the library's defaults):
 * out is given, each of memory, pids, cpu, tmp, timeout and output that
 * given leaves 0 taken from profile, else from sandbox (NULL: none).
 * Every front end asks here (wd_policy_limits) rather than spelling it. */
struct wd_limits;
void policy_limits_merge(const struct wd_limits *given, const struct wd_limits *profile,
			 const struct wd_limits *sandbox, struct wd_limits *out);

#endif
