/*
 * warden.h - the public C API of libwarden.
 *
 * warden runs the commands and tools of an AI agent inside a kernel-enforced
 * sandbox, behind a deterministic policy, with every decision on the record.
 *
 * Conventions (CONTRIBUTING.md, "Code"):
 *  - every function that can fail returns int: 0 (or a count) on success, a
 *    negative errno value on failure, and fills the caller-owned struct wd_err;
 *  - objects come back through **out, set only on success; _new/_free pairs;
 *  - nothing here is thread-safe on a shared object unless said so; distinct
 *    objects may be used from distinct threads.  A wd_ctx is the exception:
 *    it is shared by design, and sandboxes of one context may be created,
 *    used and destroyed from any number of threads at once.
 *
 * The objects:
 *   wd_ctx      what outlives one sandbox: log, audit and event sinks, the
 *               policy, the state directory, the cgroup keeper.  One per
 *               program (or per tenant).
 *   wd_spec     what a sandbox is: workspace, isolation level, limits,
 *               binds, environment, network.
 *   wd_sandbox  a built jail whose pid 1 stays up and runs commands.
 *   wd_cmd      one command for a sandbox: argv or a command string, tool,
 *               cwd, environment, timeout, output bound, stdio.
 *   wd_result   what a command did: ran (status, output windows, usage,
 *               protections), or was denied or paused by the policy.
 *   wd_event    one typed event of the context's stream: decisions,
 *               approvals, lifecycle, network, output, results.
 *
 * The pipeline (wd_ctx_run, wd_sandbox_exec): classify the tool -> decide
 * -> audit -> create (ephemeral) -> exec -> audit.  A command given as a
 * string, or with a tool name, always goes through the policy; an explicit
 * argv does when wd_cmd_set_policy() says so, and its result says which
 * ("policy": "off" or the policy's digest).
 */
#ifndef WARDEN_H
#define WARDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

enum wd_err_code {
	WD_E_OK = 0,
	WD_E_INVAL = 1,	      /* bad input: an option, a value, a file */
	WD_E_SYS = 2,	      /* a system call failed; sys_errno says which errno */
	WD_E_UNSUPPORTED = 3, /* the host lacks a kernel feature the request needs */
	WD_E_INTERNAL = 4,    /* anything else */
};

/* Caller-owned, fixed size, no heap: safe to fill after clone() and to copy
 * over a socket.  step is a jail step (enum in src/jail) or 0. */
struct wd_err {
	int code;
	int sys_errno;
	int step;
	char msg[256];
};

/* ----------------------------------------------------------------- logging */

enum wd_log_level {
	WD_LOG_ERROR = 0,
	WD_LOG_WARN = 1,
	WD_LOG_INFO = 2,
	WD_LOG_DEBUG = 3,
	WD_LOG_TRACE = 4,
};
typedef void (*wd_log_fn)(int level, const char *func, const char *msg, void *data);
/* The library never writes to stderr itself; it calls this handler for
 * messages at or below level.  Not thread-safe: call once at start-up. */
void wd_set_log_handler(wd_log_fn fn, void *data, int level);

/* ------------------------------------------------------------- run: spec */

enum wd_isolation {
	WD_ISOLATION_CONTAINER = 0, /* namespaces + everything below (default) */
	WD_ISOLATION_PROCESS = 1,   /* seccomp + Landlock + rlimits + env + timeout */
	WD_ISOLATION_GVISOR = 2,    /* gVisor's user-space kernel (Debian's runsc), as root;
				     * -ENOTSUP naming what is missing where it cannot run */
};

/* A level's name as options, policies and results spell it ("container",
 * "process", "gvisor"); "?" for a value outside the enum.  And the
 * reverse: 0 and *level set, or -EINVAL for any other name. */
const char *wd_isolation_name(enum wd_isolation level);
int wd_isolation_parse(const char *name, enum wd_isolation *level);

/* Resource limits; 0 means "warden's default" for every field. */
struct wd_limits {
	uint64_t memory_bytes;	 /* cgroup memory limit, no swap (default 512 MiB) */
	uint64_t pids;		 /* cgroup pids limit (default 128) */
	uint64_t cpu_millionths; /* CPUs x 1e6 (default 1.0 CPU) */
	uint64_t tmp_bytes;	 /* size of the /tmp tmpfs (default 128 MiB) */
	uint64_t timeout_ms;	 /* wall-clock deadline (default 30 s) */
	uint64_t output_limit;	 /* bytes kept per stream, half head half tail (64 KiB) */
	uint64_t nofile;	 /* RLIMIT_NOFILE (default 1024) */
	uint64_t fsize;		 /* RLIMIT_FSIZE (default 1 GiB) */
};

/* The library's defaults, what a 0 field of struct wd_limits means: for a
 * front end that states or caps limits without spelling the numbers
 * again. */
void wd_limits_defaults(struct wd_limits *out);

/* A description of one run.  Opaque; create with wd_spec_new(), free with
 * wd_spec_free().  Setters copy their arguments. */
typedef struct wd_spec wd_spec;

wd_spec *wd_spec_new(void);
void wd_spec_free(wd_spec *spec);
/* The program and its arguments.  argv[0] without a slash is looked up in the
 * jail's PATH; it is never handed to a shell. */
int wd_spec_set_argv(wd_spec *spec, int argc, const char *const argv[], struct wd_err *err);
/* The workspace directory on the host (bound at /workspace, the working
 * directory).  Must exist.  Default: the current directory. */
int wd_spec_set_workspace(wd_spec *spec, const char *dir, struct wd_err *err);
void wd_spec_set_isolation(wd_spec *spec, enum wd_isolation level);
void wd_spec_set_limits(wd_spec *spec, const struct wd_limits *limits);
/* Extra bind mount: host src at dst in the jail (dst defaults to src),
 * read-only unless rw.  src must exist. */
int wd_spec_add_bind(wd_spec *spec, const char *src, const char *dst, bool rw, struct wd_err *err);
/* Add NAME=VALUE to the command's environment (replacing an earlier one). */
int wd_spec_setenv(wd_spec *spec, const char *name, const char *value, struct wd_err *err);
/* Allow TCP bind and connect on port inside the jail (Landlock). */
int wd_spec_allow_port(wd_spec *spec, unsigned port, struct wd_err *err);
/* stdin of the command: an fd handed to the command as its stdin (not
 * owned; warden does not read it), or -1 for /dev/null (the default). */
void wd_spec_set_stdin(wd_spec *spec, int fd);
/* Where the kept windows stream while the command runs: fds (not owned) or
 * -1 to keep them only in the result (the default). */
void wd_spec_set_stream(wd_spec *spec, int out_fd, int err_fd);
/* A terminal is attached: TERM is passed on. */
void wd_spec_set_term(wd_spec *spec, const char *term);
/* Limits the host cannot enforce (no cgroup for an unprivileged caller on
 * a cgroup v1 host) make creating the sandbox fail (-ENOTSUP) unless
 * best effort is on: then it runs without them, and --json says
 * "cgroup": "none". */
void wd_spec_set_best_effort(wd_spec *spec, bool on);
/* Reproducible runs: SOURCE_DATE_EPOCH=315532800 (1980-01-01, the zip
 * epoch), PYTHONHASHSEED=0, LC_ALL=C.UTF-8 and TZ=UTC in the environment,
 * on top of the time namespace. */
void wd_spec_set_reproducible(wd_spec *spec, bool on);
/* A time namespace whose monotonic and boot clocks start near zero, so
 * the host's uptime does not show (container level; default on). */
void wd_spec_set_time_namespace(wd_spec *spec, bool on);

/* Network.  WD_NET_NONE (the default): a network namespace with loopback
 * only.  WD_NET_PROXY: still no route anywhere, but warden serves an HTTP
 * proxy (127.0.0.1:3128), SOCKS5 (127.0.0.1:1080) and a DNS filter
 * (127.0.0.1:53) inside the namespace from outside the jail, allowing only
 * what the rules name (docs/network.md).  Container and gvisor isolation. */
enum wd_net_mode {
	WD_NET_NONE = 0,
	WD_NET_PROXY = 1,
};
enum wd_net_rule {
	WD_NET_ALLOW = 0, /* HOST[:PORT][/PATH][=METHOD,...] */
	WD_NET_DENY = 1,  /* HOST[:PORT] */
	WD_NET_HOST = 2,  /* NAME=ADDRESS, a static name */
	WD_NET_RANGE = 3, /* CIDR: destinations in it are not refused for being
			   * loopback/private; admits no host by itself */
};
void wd_spec_set_net(wd_spec *spec, enum wd_net_mode mode);
/* Add one rule; -EINVAL with a message naming the rule when it is bad (a
 * bare "*", a public suffix alone, a malformed host or method). */
int wd_spec_add_net_rule(wd_spec *spec, enum wd_net_rule kind, const char *rule,
			 struct wd_err *err);
/* TLS interception: an ephemeral CA per sandbox (its key stays in warden),
 * installed into the jail's trust; every request in a tunnel is checked.
 * upstream_ca_file (or NULL: the host's store) verifies the real servers. */
void wd_spec_set_tls_intercept(wd_spec *spec, bool on, const char *upstream_ca_file);
/* Secrets the sandbox never holds (docs/network.md "Secrets").
 * Declare a secret: warden reads its value now, outside any jail, from
 * source "@FILE" (a regular file of at most 4 KiB plus one trailing
 * newline, which is dropped; a FIFO, device or directory is refused
 * without being opened for long) or "env:VAR" (this process's
 * environment), into memory that is locked, kept out of core dumps and
 * out of child processes, and wiped when the last spec or sandbox using it
 * is freed.  name: a letter or _, then letters, digits and _ (at most 64).
 * The value: 8 to 4096 bytes, no control characters (it goes into a
 * header).  It never appears in an error message, a log line, an event,
 * the audit trail or a result; only its name does.  -EINVAL with err
 * naming the option's source and what is wrong (never the content),
 * -ENOMEM if the memory cannot be locked (RLIMIT_MEMLOCK).  Every secret
 * must be used by an inject rule, and the sandbox needs WD_NET_PROXY: both
 * checked when the sandbox is created (-EINVAL, nothing started). */
int wd_spec_add_secret(wd_spec *spec, const char *name, const char *source, struct wd_err *err);
/* Bind secrets to a destination: warden's proxy adds (or replaces) a
 * header on the requests to it, and only to it, inside intercepted HTTPS
 * (wd_spec_set_tls_intercept) or, for a rule starting "http://", plain
 * HTTP.  A request carrying a secret's placeholder or value anywhere else
 * (the URL, a header, Basic credentials, the body, a host name, a DNS
 * query) is refused and audited as "secret-exfiltration".
 *   WD_INJECT_HEADER  "[http://]HOST[:PORT][/PATH] HEADER=TEMPLATE"
 *                     ("api.example.com Authorization=Bearer {GITHUB_TOKEN}")
 *   WD_INJECT_BASIC   "[http://]HOST[:PORT][/PATH] USER:PASSWORD", both
 *                     templates ("git.example.com x-access-token:{TOKEN}"),
 *                     sent as Authorization: Basic
 * HOST is one exact name or address, PORT defaults to 443 (80 for
 * http://), PATH is a prefix; {NAME} in a template is secret NAME's value.
 * An allow rule must admit the destination (checked at creation).
 * -EINVAL with a message naming the rule. */
enum wd_inject_kind {
	WD_INJECT_HEADER = 0,
	WD_INJECT_BASIC = 1,
};
int wd_spec_add_inject(wd_spec *spec, enum wd_inject_kind kind, const char *rule,
		       struct wd_err *err);
/* Put secret name's placeholder ("warden-placeholder-" and 32 random hex
 * digits, fixed when the secret was declared) in the sandbox's environment
 * variable var, for tools that will not start without one; the proxy
 * replaces it with the value in the header a rule sets, and refuses it
 * everywhere else.  The secret must be declared first; var must not also
 * be set with wd_spec_setenv (checked at creation). */
int wd_spec_add_placeholder(wd_spec *spec, const char *var, const char *name, struct wd_err *err);

/* Called for every proxy and DNS decision with one JSON object (fields:
 * sandbox_id, protocol, host, port, method, path, rule, allowed, reason,
 * advice, address, status, bytes_up, bytes_down, duration_us; and
 * "inject" and "secrets" where credentials were added or a secret was
 * found on its way out: rule texts and names, never a value).  Called on
 * warden's proxy thread, never concurrently with itself; wd_run() returns
 * only after the last call. */
typedef void (*wd_net_event_fn)(const char *json, void *data);
void wd_spec_set_event_handler(wd_spec *spec, wd_net_event_fn fn, void *data);

/* Workspaces.  WD_WORKSPACE_DIRECT (the default): the directory
 * is bound read-write at /workspace and what the sandbox writes lands in
 * it at once.  WD_WORKSPACE_COW: an overlay whose lower layer is the
 * directory (read-only) and whose upper layer lives on the sandbox's disk
 * in warden's state directory; the directory is written only by
 * wd_sandbox_apply() / wd_session_apply().  Container level, as root
 * (creating the sandbox fails with -ENOTSUP otherwise). */
enum wd_workspace_mode {
	WD_WORKSPACE_DIRECT = 0,
	WD_WORKSPACE_COW = 1,
};
void wd_spec_set_workspace_mode(wd_spec *spec, enum wd_workspace_mode mode);
/* The bound of what a sandbox with a disk (a cow workspace, a session)
 * can write: its upper layer, home directory and /tmp share one ext4
 * image of this many bytes (default 1 GiB); past it, writes fail with
 * ENOSPC inside.  -EINVAL outside 32 MiB .. 1 PiB. */
int wd_spec_set_disk(wd_spec *spec, uint64_t bytes, struct wd_err *err);
/* Add a protected path (relative to the workspace, normal form) to
 * warden's own (.git/hooks, .git/config, .gitmodules, .envrc, .vscode,
 * .idea): read-only inside the sandbox where it exists, never written by
 * apply.  -EINVAL for an absolute path or one with "." or "..". */
int wd_spec_add_protected(wd_spec *spec, const char *path, struct wd_err *err);
/* The environment: run in image ref (a name given to
 * wd_image_build(), or "sha256:" and the full digest) instead of the host's
 * /usr and /etc.  Resolved now, in the default state directory
 * (WARDEN_STATE_DIR, $XDG_STATE_HOME/warden, /var/lib/warden as root); the
 * image's env entries join the spec's where it sets no such variable.
 * -EINVAL for a malformed ref, -ENOENT for an image not built. */
int wd_spec_set_image(wd_spec *spec, const char *ref, struct wd_err *err);

/* ----------------------------------------------------------- run: result */

typedef struct wd_result wd_result;
typedef struct wd_decision wd_decision;

/* Run the spec's program in a fresh jail and wait for it: wd_ctx_run() in
 * a context made for this one call, without the policy stage.  On success
 * *out is a new result (free with wd_result_free()), whatever the command
 * did; a negative return means warden itself failed and nothing, or
 * nothing more, ran. */
int wd_run(const wd_spec *spec, wd_result **out, struct wd_err *err);
void wd_result_free(wd_result *r);

enum wd_outcome {
	WD_OUTCOME_RAN = 0,    /* the command ran; the fields below describe it */
	WD_OUTCOME_DENIED = 1, /* refused by the policy: status 126, nothing ran */
	WD_OUTCOME_PAUSED = 2, /* waits for a human approval: status 123, nothing ran */
};
enum wd_outcome wd_result_outcome(const wd_result *r);
/* The decision that let it run, or refused or paused it; NULL when the
 * policy stage was off.  Valid while r lives. */
const wd_decision *wd_result_decision(const wd_result *r);
/* "off", or the SHA-256 of the policy that decided. */
const char *wd_result_policy(const wd_result *r);
const char *wd_result_sandbox_id(const wd_result *r);
/* For a denial or a pause: why, in one sentence (the decision's reason,
 * or the tool route's or the approver's refusal).  NULL when it ran. */
const char *wd_result_refusal(const wd_result *r);
/* Why the command could not start (execve's or a set-up step's errno), or 0. */
int wd_result_exec_errno(const wd_result *r);
/* Which step of the command's set-up failed with wd_result_exec_errno()
 * (such as "6b working directory"), or NULL: execve itself failed, or
 * nothing did. */
const char *wd_result_exec_step(const wd_result *r);
/* The i-th distinct network request the egress proxy refused during the
 * command (0, 1, ... until NULL), as one line for a human, escaped:
 * "HOST:PORT refused (REASON, rule RULE), N times: ADVICE".  The JSON
 * result lists the same under protections.egress.refusals. */
const char *wd_result_net_refusal(const wd_result *r, size_t i);

/* Exit status as a shell reports it: the command's own; 128+N for signal N;
 * 124 timed out; 126 could not execute; 127 not found. */
int wd_result_status(const wd_result *r);
int wd_result_exit_code(const wd_result *r); /* -1 if killed by a signal */
int wd_result_signal(const wd_result *r);    /* 0 unless killed by a signal */
bool wd_result_timed_out(const wd_result *r);
bool wd_result_oom_killed(const wd_result *r);
/* The kept window of stream 1 (stdout) or 2 (stderr), with the omission
 * marker in place when bytes were cut.  Valid while r lives. */
const char *wd_result_output(const wd_result *r, int stream, size_t *len);
uint64_t wd_result_output_total(const wd_result *r, int stream);
uint64_t wd_result_output_omitted(const wd_result *r, int stream);
/* Wall-clock and CPU time of the command in nanoseconds, and the peak
 * memory of its sandbox in bytes (0 where the host cannot say). */
uint64_t wd_result_wall_ns(const wd_result *r);
uint64_t wd_result_cpu_ns(const wd_result *r);
uint64_t wd_result_peak_memory(const wd_result *r);
/* One JSON object describing the result, including the protections in
 * force (for a denial or a pause: the decision).  Returns a new string,
 * free with free(). */
char *wd_result_json(const wd_result *r);
/* wd_result_json()'s "protections" object alone, as JSON text in which a
 * byte that is not UTF-8 is the text \xNN (any JSON parser reads it).
 * Returns a new string, free with free(). */
char *wd_result_protections_json(const wd_result *r);

/* ------------------------------------------------------- text for a human */

/* Everything a person reads and decides on (a diff, an apply report, an
 * approval prompt, a refusal) may hold bytes a sandboxed program chose: a
 * file name, a line of a file, an argument.  A terminal obeys them (ESC[2K
 * erases a line, CR returns over it, U+202E reverses what follows, a
 * newline in a name forges a line).  These make such bytes visible; the
 * library's own texts use them, and a front end uses them for what it
 * prints.
 *
 * wd_esc_path: name as git's core.quotePath prints it: bare when harmless,
 * else C-quoted in double quotes (\t \n \r \" \\, octal for other
 * bytes); also quoted for a C1, bidi or zero-width character, a leading
 * or trailing space, or the separators " -> " and "  (".
 *
 * wd_esc_text: len bytes of s with control bytes shown as \xNN, C1, bidi,
 * zero-width and other invisible characters (tag characters, variation
 * selectors, the soft hyphen) as <U+XXXX>, invalid UTF-8 bytes as \xNN;
 * tabs kept (but in a word).  flags: WD_ESC_LINES keeps newlines,
 * WD_ESC_WORD renders one argument in single quotes, a tab as \x09.
 * max: bytes of a line kept before "... (N more bytes)" ends it; 0 for
 * no cap.
 *
 * Both return a new string, free with free(); thread-safe. */
#define WD_ESC_LINES 0x1u /* keep '\n' (text of several lines); else shown as \x0a */
#define WD_ESC_WORD 0x2u  /* one argv word: in single quotes, ' \ and tab as \x27 \x5c \x09 */
char *wd_esc_path(const char *name);
char *wd_esc_text(const char *s, size_t len, unsigned flags, size_t max);

/* ---------------------------------------------------------------- context */

typedef struct wd_ctx wd_ctx;
typedef struct wd_cmd wd_cmd;
typedef struct wd_sandbox wd_sandbox;
typedef struct wd_event wd_event;

/* A new context (free with wd_ctx_free()).  Nothing is started yet: the
 * cgroup keeper (a small process that removes a sandbox's cgroup should
 * this program die mid-run) starts with the first sandbox that has a
 * cgroup.  Thread-safe: every wd_ctx_* setter may be called at any time,
 * and the context may serve many threads at once. */
int wd_ctx_new(wd_ctx **out, struct wd_err *err);
/* Free the context.  Every sandbox of it must have been destroyed.  Waits
 * for the keeper to finish (a fraction of a millisecond). */
void wd_ctx_free(wd_ctx *ctx);
/* This context's log handler (instead of wd_set_log_handler()'s) for
 * messages at or below level, from every thread working for it. */
void wd_ctx_set_log_handler(wd_ctx *ctx, wd_log_fn fn, void *data, int level);
/* The policy for commands: a file, or NULL for the built-in default.  The
 * file is loaded now (-EINVAL with "FILE:LINE:COLUMN: ..." when bad) and
 * again whenever an approval is consumed, so the decision that lets an
 * approved command run is made under the policy as it is then. */
int wd_ctx_set_policy_file(wd_ctx *ctx, const char *path, struct wd_err *err);
/* The same with the policy already loaded by the caller (p, from
 * wd_policy_load() of path; path NULL: the built-in default), so that a
 * front end that reads the policy itself loads the file once.  p is
 * borrowed: free it after wd_ctx_free() (or after another
 * wd_ctx_set_policy*() call has replaced it and no command is running).
 * As with wd_ctx_set_policy_file(), path is loaded again whenever an
 * approval is consumed.  -EINVAL when p is NULL. */
struct wd_policy;
int wd_ctx_set_policy(wd_ctx *ctx, const char *path, struct wd_policy *p, struct wd_err *err);
/* Where warden keeps sandboxes' state (cow layers, sessions, snapshots):
 * dir, which must be the caller's with no permission for others (created
 * 0700 if missing).  Default: $WARDEN_STATE_DIR, else
 * $XDG_STATE_HOME/warden, else /var/lib/warden (root) or
 * ~/.local/state/warden.  -EINVAL naming what is wrong with dir. */
int wd_ctx_set_state_dir(wd_ctx *ctx, const char *dir, struct wd_err *err);
/* The context's state directory as it is used now (the one set, else the
 * default above, made if missing), into out (cap bytes): for a front end
 * that keeps files of its own beside the sessions.  -EINVAL as above. */
int wd_ctx_state_dir(wd_ctx *ctx, char *out, size_t cap, struct wd_err *err);

/* ---------------------------------------------------------------- images
 * A root filesystem built from Debian packages with mmdebstrap, stored
 * read-only and content-addressed under the state directory's images/
 * (docs/architecture.md).  A recipe says what goes in. */
typedef struct wd_image_recipe wd_image_recipe;
wd_image_recipe *wd_image_recipe_new(void);
void wd_image_recipe_free(wd_image_recipe *r);
/* Read a recipe file (key = value lines: suite, packages, env, from, user) into
 * r; -EINVAL with err naming PATH:LINE:COLUMN for a bad line. */
int wd_image_recipe_load(wd_image_recipe *r, const char *path, struct wd_err *err);
/* Setters; -EINVAL for a malformed suite, package, NAME=VALUE or name. */
int wd_image_recipe_set_suite(wd_image_recipe *r, const char *suite, struct wd_err *err);
int wd_image_recipe_add_packages(wd_image_recipe *r, const char *list, struct wd_err *err);
int wd_image_recipe_add_env(wd_image_recipe *r, const char *kv, struct wd_err *err);
int wd_image_recipe_set_from(wd_image_recipe *r, const char *name, struct wd_err *err);
/* The image's user: the name of warden's passwd and group entries for
 * the sandbox's uid 1000 (which stays 1000; never root).  -EINVAL for a
 * name that is not [a-z_][a-z0-9_-]* (32 bytes at most), root or nobody. */
int wd_image_recipe_set_user(wd_image_recipe *r, const char *user, struct wd_err *err);
/* Build image name from r (as root: mmdebstrap needs it); *json (new,
 * free()) is its metadata.  Logs mmdebstrap's progress at INFO. */
int wd_image_build(wd_ctx *ctx, const char *name, const wd_image_recipe *r, char **json,
		   struct wd_err *err);
/* Import an OCI image layout (a directory with oci-layout and
 * index.json) or a docker save tarball (a file: manifest.json and layer
 * tars, Docker's legacy form or its OCI form) as image name, with umoci
 * (as root): tag names the image in a layout (NULL: its only tagged one;
 * a tarball holds one image).  Layers are applied beneath the image's
 * root; a device node, FIFO or socket, a file past 4 GiB or more than
 * 1,000,000 entries is refused (-EINVAL) and nothing stored.  The image
 * config's Env joins the image's env; its User and WorkingDir are
 * recorded. */
int wd_image_import(wd_ctx *ctx, const char *name, const char *path, const char *tag, char **json,
		    struct wd_err *err);
/* Write image ref as a new OCI image layout at dir (which must not
 * exist), reproducibly: the same image gives the same manifest digest.
 * tag (may be NULL: ref's name, "latest" for a digest) is the image's
 * org.opencontainers.image.ref.name in index.json.  config (may be NULL): a JSON object of OCI
 * config keys (Entrypoint, Cmd, User, WorkingDir, Env, Labels) set over the image's own; add (may
 * be NULL): a directory whose tree becomes a second layer, owned by root.
 * *json (new, free()): the manifest digest, path, config and layers. */
int wd_image_export(wd_ctx *ctx, const char *ref, const char *dir, const char *tag,
		    const char *config, const char *add, char **json, struct wd_err *err);
/* The images as a JSON array of metadata objects, or one image's
 * metadata (-ENOENT: none by that name); *json is new, free(). */
int wd_image_list(wd_ctx *ctx, char **json, struct wd_err *err);
int wd_image_inspect(wd_ctx *ctx, const char *ref, char **json, struct wd_err *err);
/* Remove the name, and the image's files when no other name holds them.
 * -EBUSY while a sandbox runs in it or a session was made with it. */
int wd_image_remove(wd_ctx *ctx, const char *ref, struct wd_err *err);
/* Append every event but output to this hash-chained audit trail (created
 * 0600).  Without it, the policy's audit.path is used when the policy
 * stage runs. */
int wd_ctx_set_audit_file(wd_ctx *ctx, const char *path, struct wd_err *err);
/* Whether a sandbox of spec could write the context's records: the audit
 * trail (this function's, or the policy's audit.path), the policy file
 * (read again after an approval) and the state directory, when one lies
 * in spec's workspace, a writable bind, or (process level) the host's /tmp
 * or /dev/shm where the command's uid could write it.  0, or -EINVAL
 * (WD_E_INVAL) naming the option and the path.  Every run makes this
 * check before its decision is recorded; a program calls it to refuse
 * such a set-up at its start.  Thread-safe. */
int wd_ctx_check_spec(wd_ctx *ctx, const wd_spec *spec, struct wd_err *err);

/* ---- the event stream ---- */
enum wd_event_kind {
	WD_EVENT_DECISION = 0, /* the policy decided on a command */
	WD_EVENT_APPROVAL = 1, /* approval.granted|consumed|expired|mismatched|refused */
	WD_EVENT_ROUTE = 2,    /* a tool's route and resource profile */
	WD_EVENT_SANDBOX = 3,  /* lifecycle: sandbox.created|ready|destroyed */
	WD_EVENT_NETWORK = 4,  /* a proxy or DNS decision */
	WD_EVENT_OUTPUT = 5,   /* a chunk of a command's kept output, as it arrives */
	WD_EVENT_RESULT = 6,   /* a command's result (or warden's failure to run it) */
	WD_EVENT_FILE = 7,     /* copy|copied|copy_failed: wd_session_copy_in / _out */
	WD_EVENT_START = 8,    /* "start": a command about to run without the policy stage
				* (an explicit argv); its argv, workspace, cwd, env names */
};
#define WD_EVENTS_ALL 0x1ffu
#define WD_EVENT_BIT(kind) (1u << (kind))
/* Called for each event whose kind is in kinds (WD_EVENT_BIT()s), on the
 * thread that caused it (a proxy thread for network events), possibly
 * concurrently from several threads; ev is valid during the call only. */
typedef void (*wd_ctx_event_fn)(const wd_event *ev, void *data);
void wd_ctx_set_event_handler(wd_ctx *ctx, wd_ctx_event_fn fn, void *data, unsigned kinds);
/* The two handler types' earlier names, kept so that code written
 * against them still compiles: wd_event_fn is wd_net_event_fn (a spec's
 * network decisions as JSON), wd_event_cb is wd_ctx_event_fn (a
 * context's events). */
typedef wd_net_event_fn wd_event_fn;
typedef wd_ctx_event_fn wd_event_cb;
enum wd_event_kind wd_event_kind(const wd_event *ev);
/* "decision", "approval.consumed", "route", "sandbox.created", "network",
 * "output", "result", ... */
const char *wd_event_name(const wd_event *ev);
/* The sandbox the event belongs to: one id for a command's decision, its
 * sandbox's lifecycle, its network traffic and its result. */
const char *wd_event_sandbox_id(const wd_event *ev);
/* DECISION and RESULT (when the policy stage ran): the decision. */
const wd_decision *wd_event_decision(const wd_event *ev);
/* RESULT: the result (NULL when warden failed before anything ran). */
const wd_result *wd_event_result(const wd_event *ev);
/* OUTPUT: the bytes (len), and the stream (1 stdout, 2 stderr). */
const char *wd_event_output(const wd_event *ev, int *stream, size_t *len);
/* One JSON object for the event, as the audit trail records it (output
 * events: with the bytes, which the audit trail never records).  A
 * command's start, decision, approval and result events, and the network
 * events of a sandbox made for one command, carry "policy_stage": "on" or
 * "off" (whether the policy judged the command).  A new string, free with
 * free(). */
char *wd_event_json(const wd_event *ev);

/* ---- commands ---- */

wd_cmd *wd_cmd_new(void);
void wd_cmd_free(wd_cmd *cmd);
/* The program and its arguments, as given (never through a shell). */
int wd_cmd_set_argv(wd_cmd *cmd, int argc, const char *const argv[], struct wd_err *err);
/* The command as one string: split with POSIX quoting, never given to a
 * shell, and always judged by the policy. */
int wd_cmd_set_command(wd_cmd *cmd, const char *command, struct wd_err *err);
/* The tool this command is for: its route (blocked, direct, sandbox) and
 * resource profile come from the policy; implies the policy stage. */
int wd_cmd_set_tool(wd_cmd *cmd, const char *tool, struct wd_err *err);
/* Put an explicit argv through the policy too (strings and tools always
 * are).  Default off: the harness's own argv. */
void wd_cmd_set_policy(wd_cmd *cmd, bool on);
/* Ask at the approver (wd_ctx_set_approver) when the policy pauses and no
 * recorded approval covers the command. */
void wd_cmd_set_interactive(wd_cmd *cmd, bool on);
/* Working directory, relative to the workspace (default: its root). */
int wd_cmd_set_cwd(wd_cmd *cmd, const char *cwd, struct wd_err *err);
/* NAME=VALUE for this command only (on top of the sandbox's environment;
 * covered by an approval id, never written to the audit trail). */
int wd_cmd_setenv(wd_cmd *cmd, const char *name, const char *value, struct wd_err *err);
/* 0 keeps the spec's (or the tool profile's) value. */
void wd_cmd_set_timeout(wd_cmd *cmd, uint64_t timeout_ms);
void wd_cmd_set_output_limit(wd_cmd *cmd, uint64_t bytes);
/* stdin of the command (not owned; -1: /dev/null, the default).  A
 * terminal is relayed, never handed over. */
void wd_cmd_set_stdin(wd_cmd *cmd, int fd);
/* Where the kept windows stream while the command runs (not owned; -1:
 * keep them only in the result, the default). */
void wd_cmd_set_stream(wd_cmd *cmd, int out_fd, int err_fd);
/* Cancel this command alone: fd (not owned; an eventfd or a pipe's read
 * end) is watched while the command runs, and once it is readable the
 * command is killed as by SIGKILL (status 137; the sandbox of a
 * wd_ctx_run() ends with it).  Readable before the command starts: it
 * is killed at once.  Making it readable (a write to the eventfd) is
 * async-signal-safe.  -1, the default: only wd_ctx_cancel() and
 * wd_sandbox_cancel() cancel it.  For a server that runs many one-shot
 * commands and must end one of them. */
void wd_cmd_set_cancel_fd(wd_cmd *cmd, int fd);

/* Approvals asked for interactively: 1 yes (run it once), 0 no, -1
 * cannot ask (the command stays paused).  Called on the thread running
 * the command. */
typedef int (*wd_approve_fn)(const wd_decision *d, void *data);
void wd_ctx_set_approver(wd_ctx *ctx, wd_approve_fn fn, void *data);

/* ---- sandboxes ---- */

/* For an ordinary user's process, while it is still single-threaded and
 * before it makes a cow sandbox (wd_ctx_run, wd_sandbox_create): enter a
 * user namespace mapping only the caller's uid and gid to themselves, and
 * a private mount namespace.  Its cow sandboxes then keep their layers in
 * a directory of the state directory (no disk), the overlay mounted there
 * with userxattr.  Irreversible for the process.  -EPERM as root (a root
 * caller's cow sandboxes have a disk), -ENOTSUP the kernel lacks it
 * (before Linux 5.11, user namespaces off), -EINVAL the process has
 * threads, else -errno. */
int wd_userns_enter(struct wd_err *err);

/* Build a sandbox from spec (copied) and wait until its pid 1 is ready
 * for commands.  The spec's program, if any, is not run.  *out is new;
 * end it with wd_sandbox_destroy().  -EINVAL bad input (nothing started),
 * -ENOTSUP the host lacks what the level needs, else -errno with the jail
 * step in err->step. */
int wd_sandbox_create(wd_ctx *ctx, const wd_spec *spec, wd_sandbox **out, struct wd_err *err);
/* Run one command in the sandbox and wait for it: the policy stage when
 * the command asks for it, then the whole of step 6 in a fresh process
 * of the sandbox, its own timeout (which ends the command's process
 * group, not the sandbox), output windows and result.  Commands may run
 * concurrently from several threads.  On success *out is a new result,
 * whatever the command did (ran, denied, paused); a negative return means
 * warden failed and the command did not run (or not to its end). */
int wd_sandbox_exec(wd_sandbox *sb, const wd_cmd *cmd, wd_result **out, struct wd_err *err);
struct wd_request;
/* What wd_sandbox_exec() judges a command in sb against, set on req: its
 * workspace, image and environment (wd_request_set_spec()) and the state
 * an approval would cover (this sandbox's view of its workspace, its
 * writable binds), so the decision and approval id wd_policy_decide()
 * then gives are the exec's.  sb must outlive req's decisions. */
int wd_sandbox_request(wd_sandbox *sb, struct wd_request *req, struct wd_err *err);
/* End the sandbox: every process in it, its cgroup, its egress proxy.
 * No process of it is left to the caller once this returns. */
void wd_sandbox_destroy(wd_sandbox *sb);
const char *wd_sandbox_id(const wd_sandbox *sb);
/* Kill the sandbox because of signal signo (reported as 128+signo by
 * every command it was running).  Async-signal-safe: a signal handler
 * may call it. */
void wd_sandbox_cancel(wd_sandbox *sb, int signo);

/* The change set of a cow sandbox (paths, npaths: only what is at or
 * below them; 0 for all), as text: a line per change then unified diffs
 * (binary files named), or per flags: WD_DIFF_STAT (git's --stat),
 * WD_DIFF_JSON (the file list with modes, sizes, SHA-256 of contents,
 * conflict and protected flags, and the set's "digest"), WD_DIFF_NAMES
 * (the lines only).  Changes the workspace's ignore rules ignore (git's:
 * .gitignore, .git/info/exclude, as the real directory holds them, never
 * as the sandbox wrote them) are left out and summarised, a line per
 * top-level entry with counts and bytes ("ignored" in JSON), unless
 * WD_DIFF_ALL lists them as any other change.  The text's first line is
 * "change set DIGEST"; the digest names the selection too.  *out
 * is a new string, free with free().  -EINVAL for a direct workspace or a
 * path with no change.  Thread-safe with commands running. */
#define WD_DIFF_STAT 0x1u
#define WD_DIFF_JSON 0x2u
#define WD_DIFF_NAMES 0x4u
#define WD_DIFF_ALL 0x8u
int wd_sandbox_diff(wd_sandbox *sb, const char *const *paths, size_t npaths, unsigned flags,
		    char **out, struct wd_err *err);
/* Write the change set (or what is at or below paths) into the real
 * directory, each file atomically (a temporary file renamed over it),
 * modes kept but set-id bits, owners kept.  A change to a file the host
 * changed since the sandbox first saw it (a conflict), or to a protected
 * path, applies nothing at all: returns 1 and the report names them.
 * Returns 0 when everything was applied; negative when warden failed
 * (-ENOSPC: the host's disk; nothing is left half-written).  *report (if
 * not NULL) is a new string: a line per file, or JSON if flags has
 * WD_DIFF_JSON.  Ignored changes (see wd_sandbox_diff) stay in the
 * sandbox unless flags has WD_DIFF_ALL: the selection the diff reviewed.
 *
 * What is applied is what was reviewed: expect (NULL: any) is the digest
 * wd_sandbox_diff() showed; a set that is not that one now applies
 * nothing and returns -ESTALE (-EINVAL: expect is not a digest).  Every
 * file is re-hashed as it is copied and must be the set's (else -ESTALE,
 * nothing written).  Hard links of the sandbox are written once and
 * linked; a set that would write more bytes than the sandbox's disk holds
 * is refused (-EFBIG).  The sandbox's processes are frozen from a diff
 * through the apply that follows (see wd_sandbox_diff). */
int wd_sandbox_apply(wd_sandbox *sb, const char *const *paths, size_t npaths, const char *expect,
		     unsigned flags, char **report, struct wd_err *err);
/* Drop the change set (or what is at or below paths): the sandbox sees
 * the real directory's files again.  Returns the number of changes
 * dropped, or a negative errno value. */
int wd_sandbox_discard(wd_sandbox *sb, const char *const *paths, size_t npaths, struct wd_err *err);

/* A change set or an apply report as types: text is what
 * wd_sandbox_diff(), wd_sandbox_apply() or their session forms wrote with
 * WD_DIFF_JSON.  *out is new, free with wd_report_free().  -EINVAL when
 * text is not one.  A front end reads the files through the accessors
 * and embeds wd_report_json() whole, so it never parses the library's
 * text. */
typedef struct wd_report wd_report;
int wd_report_new(const char *text, wd_report **out, struct wd_err *err);
void wd_report_free(wd_report *r);
/* The number of files listed (the changes of a diff, the files an apply
 * wrote, refused or found in conflict). */
size_t wd_report_files(const wd_report *r);
/* File i's path, relative to the workspace, as its bytes (a byte that is
 * not UTF-8 included); NULL past the end.  Valid while r lives. */
const char *wd_report_path(const wd_report *r, size_t i);
/* An apply report's result for file i ("applied", "conflict",
 * "refused", ...); NULL in a diff and past the end.  Valid while r
 * lives. */
const char *wd_report_result(const wd_report *r, size_t i);
/* The number of ignored entries summarised (see wd_sandbox_diff). */
size_t wd_report_ignored(const wd_report *r);
/* The report as JSON a strict parser reads (RFC 8259 with valid UTF-8:
 * jansson, Go): a byte of a name that is not UTF-8 is the text \xNN;
 * with max_files (0: all) only the first max_files files.  New string,
 * free with free(). */
char *wd_report_json(const wd_report *r, size_t max_files);

/* ---- sessions: sandboxes that outlive the caller ----
 *
 * A session is a sandbox kept in warden's state directory (see
 * wd_ctx_set_state_dir) whose processes are owned by a monitor: a small
 * process of its own (the warden-monitor program, detached, as conmon is
 * for podman), reached over a unix socket in the state directory that
 * only its owner can open.  Files, the home directory and installed
 * packages persist across commands; wd_session_stop() ends the processes
 * and keeps the files; wd_session_start() builds a new jail over them.
 * Killing the monitor (even with SIGKILL) ends every process, cgroup and
 * mount of the session; its files stay.  ref, everywhere: a name, an id,
 * or a unique prefix (4+ digits) of an id; -ENOENT when there is none.
 * Thread-safe: any number of threads and processes may use sessions at
 * once. */
struct wd_session_params {
	const char *name;	  /* NULL: none (the id only) */
	const char *from;	  /* "NAME@TAG": start from that snapshot's files */
	uint64_t idle_timeout_ms; /* stop after this long without a command
				   * (default 30 min); UINT64_MAX: never */
};
/* Create a session from spec (its workspace, mode, limits, network...)
 * and start its monitor; id gets its id (16 hex digits).  -EEXIST when
 * the name is taken, -EINVAL bad input, -ENOTSUP the host cannot. */
int wd_session_create(wd_ctx *ctx, const wd_spec *spec, const struct wd_session_params *p,
		      char id[17], struct wd_err *err);
/* Change a session's limits, egress, published ports, protected paths
 * and secrets (warden update), whether it runs or not.  u->set holds what
 * to set or add, filled with the wd_spec setters: the limits given
 * (memory, pids, cpu, tmp, timeout, output), wd_spec_set_net(), network
 * rules, ports, protected paths, TLS interception, secrets, inject rules
 * and placeholders (added to the session's); anything else set there (a
 * workspace, binds, the isolation level, an image...) is -EINVAL.
 * u->remove lists "OPTION=VALUE" to take away (allow-host, deny-host,
 * add-host, allow-range, allow-port, protect, secret (by name), inject,
 * inject-basic, placeholder (by variable)); u->idle_timeout_ms as in
 * wd_session_params (0: unchanged).  Every value is checked as
 * wd_session_create() checks it; all or nothing: on any error (-EINVAL
 * bad input or a value the running session cannot take, such as memory
 * below what it uses now; -ENOENT no such session) nothing is changed.
 * Audited first ("session.update": the changes, old and new).  A running
 * session's memory, pids and cpu limits are rewritten in its cgroup and
 * its network rules swapped in its proxy at once; the rest takes effect
 * at its next start, or the timeout and output bound at its next command.
 * *report (if not NULL, free()) is a JSON object: {"id", "name",
 * "running", "changes": [{"field", "old", "new", "applied": "now" |
 * "next command" | "next start"}]}.  Not offered to the model by warden
 * serve: it is the operator's. */
struct wd_session_update {
	const wd_spec *set;	   /* NULL: nothing to set */
	const char *const *remove; /* NULL-terminated, or NULL */
	uint64_t idle_timeout_ms;  /* 0: unchanged; UINT64_MAX: never */
};
int wd_session_update(wd_ctx *ctx, const char *ref, const struct wd_session_update *u,
		      char **report, struct wd_err *err);
struct wd_request; /* wd_request, below (policy) */
/* What wd_session_exec() judges a command of session ref against, set
 * on req: the session's workspace, its image's rootfs as the system root
 * and its environment (wd_request_set_spec()); the command's own words,
 * cwd and variables are the caller's to set after.  The decision and
 * approval id wd_policy_decide() then gives are the exec's.  -ENOENT no
 * such session. */
int wd_session_request(wd_ctx *ctx, const char *ref, struct wd_request *req, struct wd_err *err);
/* Run cmd in the session and wait for it: the policy stage, audit and
 * timeout as for wd_ctx_run(), in the caller's context; the command runs
 * in the session's jail.  The stream descriptors of cmd get the output
 * live.  Returns as wd_sandbox_exec(); -ESRCH when the session is not
 * running (wd_session_start()). */
int wd_session_exec(wd_ctx *ctx, const char *ref, const wd_cmd *cmd, wd_result **out,
		    struct wd_err *err);
/* Start cmd in the background (a dev server): it and what it starts live
 * until the session stops, inside its cgroup; its output goes to
 * ~/.warden/detached-N.log in the session's home (wd_session_log_read).
 * *seq gets N.  It waits for the command's exit for a grace period (1 s,
 * longer on a loaded host): one that ended at once with a non-zero status
 * fails the call, err->msg ending with its last line of output.
 * Container level. */
int wd_session_exec_detached(wd_ctx *ctx, const char *ref, const wd_cmd *cmd, unsigned *seq,
			     struct wd_err *err);
/* The detached commands of running session ref (the last 64 started):
 * a table for people (ID, STATE, STATUS, STARTED, COMMAND; every argument
 * escaped for a terminal), or (json) a JSON array of objects (id, argv,
 * started, state "running" or "exited", status: null while it runs).
 * *out is new, free with free().  -ESRCH when the session is not
 * running (its detached commands ended with it). */
int wd_session_logs(wd_ctx *ctx, const char *ref, bool json, char **out, struct wd_err *err);
/* Up to max bytes (at most 1 MiB) of detached command id's output from
 * offset: *data (new, free with free(); raw, the sandbox's bytes: escape
 * them for a terminal, wd_esc_text), *len.  *size gets the log's size
 * now, *status -1 while the command runs, else its exit status.  -EINVAL
 * (err->msg says why) no such command, or its log is gone or is no
 * regular file (a link is never followed). */
int wd_session_log_read(wd_ctx *ctx, const char *ref, unsigned id, uint64_t offset, size_t max,
			char **data, size_t *len, uint64_t *size, int *status, struct wd_err *err);
/* Every session of the state directory: a table for people, or (json) a
 * JSON array of objects (id, name, state "running" or "stopped",
 * workspace, workspace_mode, created, and for a running one its monitor's
 * pid, commands and detached commands running, idle_ms; idle_timeout_ms,
 * disk_bytes_used, snapshots).  *out is new, free with free(). */
int wd_session_list(wd_ctx *ctx, bool json, char **out, struct wd_err *err);
int wd_session_stop(wd_ctx *ctx, const char *ref, struct wd_err *err);
int wd_session_start(wd_ctx *ctx, const char *ref, struct wd_err *err);
/* Stop if running, then remove the session's state (files, snapshots). */
int wd_session_remove(wd_ctx *ctx, const char *ref, struct wd_err *err);
/* Keep a copy of the session's files as NAME@tag (a sparse copy of its
 * disk; a running session's disk is frozen for the copy). */
int wd_session_snapshot(wd_ctx *ctx, const char *ref, const char *tag, struct wd_err *err);
/* The snapshots of session ref (NULL: of every session): a table for
 * people (SNAPSHOT, AGE, SIZE), or (json) a JSON array of objects
 * (session: its id, name, tag, snapshot "NAME@TAG", created, bytes: the
 * disk space it takes).  *out is new, free with free(). */
int wd_session_snapshot_list(wd_ctx *ctx, const char *ref, bool json, char **out,
			     struct wd_err *err);
/* Remove snapshot ref@tag.  A session created from it does not depend on
 * it (it got a copy).  -ENOENT (err->msg names it) when there is none. */
int wd_session_snapshot_remove(wd_ctx *ctx, const char *ref, const char *tag, struct wd_err *err);
/* Copy the regular file or directory host_path into running session
 * ref at path (relative to its workspace, or below /workspace), as
 * docker cp does: into path when it is a directory, else as path.  The
 * session's side goes through its workspace view with the checks of
 * wd_workspace_write() (no "..", nothing outside, no protected path, a
 * link replaced, never written through; for cow, the upper layer: what
 * wd_session_diff() shows); on the host no link is followed.  Only
 * regular files and directories, each file at most 256 MiB, 1 GiB and
 * 100,000 entries in all; a link, a special file or a bound refuses the
 * copy (-EINVAL, err->msg names the entry) before anything is written.
 * Permission bits are kept, set-id bits never.  Audited ("copy", then
 * "copied" or "copy_failed") when the context has an audit trail.
 * *stats (if not NULL) gets what was copied, a failure midway included. */
struct wd_copy_stats {
	uint64_t files, dirs, bytes;
};
int wd_session_copy_in(wd_ctx *ctx, const char *ref, const char *host_path, const char *path,
		       struct wd_copy_stats *stats, struct wd_err *err);
/* The other way: path of the session (its merged view for cow) to
 * host_path, into it when it is a directory (not a link to one), else as
 * that name in its directory; host files are replaced by rename. */
int wd_session_copy_out(wd_ctx *ctx, const char *ref, const char *path, const char *host_path,
			struct wd_copy_stats *stats, struct wd_err *err);
/* wd_sandbox_diff, _apply and _discard for a session, running or not. */
int wd_session_diff(wd_ctx *ctx, const char *ref, const char *const *paths, size_t npaths,
		    unsigned flags, char **out, struct wd_err *err);
int wd_session_apply(wd_ctx *ctx, const char *ref, const char *const *paths, size_t npaths,
		     const char *expect, unsigned flags, char **report, struct wd_err *err);
int wd_session_discard(wd_ctx *ctx, const char *ref, const char *const *paths, size_t npaths,
		       struct wd_err *err);
/* Running session ref's workspace view in this process, as
 * wd_sandbox_workspace() gives a sandbox's: the monitor hands over the
 * view its own file requests use (a cow session's overlay), with its
 * protected paths; close it with wd_workspace_close().  A session started
 * again has a new view.  -ESRCH when it is not running. */
struct wd_workspace;
int wd_session_workspace(wd_ctx *ctx, const char *ref, struct wd_workspace **out,
			 struct wd_err *err);

/* ---- the warm pool ----
 *
 * Sandboxes built ahead from a template spec (namespaces, root file
 * system, cgroup, a ready pid 1; no workspace), each used for exactly one
 * command: taking one hands it its workspace (an idmapped clone of the
 * directory, moved into place by pid 1), runs the command and destroys
 * it; a replacement is built in the background.  An instance is never
 * handed out twice.  Container level, as root.  Thread-safe: any number of
 * threads may run commands through one pool. */
typedef struct wd_pool wd_pool;
/* A pool of size ready sandboxes (1..64) from tmpl (copied; its
 * workspace is ignored).  Building starts at once, on threads of the pool;
 * the call does not wait for it. */
int wd_pool_new(wd_ctx *ctx, const wd_spec *tmpl, unsigned size, wd_pool **out, struct wd_err *err);
/* Run cmd with workspace as /workspace (direct) in a pooled sandbox: as
 * wd_ctx_run() (policy stage included), waiting for an instance if none
 * is ready.  Returns as wd_ctx_run(); -ECANCELED when cmd's cancel fd (or
 * wd_ctx_cancel) fired while it waited.  A policy or tool profile that asks
 * for another sandbox than the template (limits, protected paths, egress,
 * secrets) is refused with -EINVAL, nothing run: use wd_ctx_run() for it. */
int wd_pool_run(wd_pool *pool, const char *workspace, const wd_cmd *cmd, wd_result **out,
		struct wd_err *err);
struct wd_pool_stats {
	unsigned size;	   /* instances kept ready */
	unsigned ready;	   /* ready now */
	uint64_t built;	   /* instances built so far */
	uint64_t taken;	   /* commands run */
	uint64_t waited;   /* of them, how many waited for an instance */
	uint64_t failed;   /* builds that failed */
	uint64_t build_ns; /* time spent building, summed over the builders */
};
void wd_pool_stats(wd_pool *pool, struct wd_pool_stats *out);
/* Destroy every ready instance and stop building.  No wd_pool_run() may
 * be in progress. */
void wd_pool_free(wd_pool *pool);

/* The whole pipeline in a fresh sandbox: decide, and only if allowed
 * create, run cmd, destroy.  The sandbox, the decision, the network
 * events and the result share one id.  Returns as wd_sandbox_exec(). */
int wd_ctx_run(wd_ctx *ctx, const wd_spec *spec, const wd_cmd *cmd, wd_result **out,
	       struct wd_err *err);
/* End every command in progress in this context, and every later one,
 * as killed by signo: for shutting down.  Async-signal-safe. */
void wd_ctx_cancel(wd_ctx *ctx, int signo);

/* The plan a spec gives (mount operations, environment names, Landlock,
 * seccomp, limits), as text, without building anything: what
 * `warden run --print-plan` prints.  *out is new, free with free(). */
int wd_spec_plan(const wd_spec *spec, char **out, struct wd_err *err);

/* ---- policy ---- */

/* The policy layer (docs/policy.md): decide allow / deny / pause for a
 * command before anything runs, record approvals, and keep the audit trail.
 * All objects are opaque; nothing here is thread-safe on a shared object
 * except wd_policy_decide(), which only reads the policy. */

typedef struct wd_policy wd_policy;
typedef struct wd_request wd_request;
typedef struct wd_audit wd_audit;

enum wd_decision_kind {
	WD_DECISION_ALLOW = 0,
	WD_DECISION_DENY = 1,  /* refused: reason and advice say why and what instead */
	WD_DECISION_PAUSE = 2, /* needs a human: approval_id names the exact request */
};

enum wd_tool_class {
	WD_TOOL_BLOCKED = 0, /* never runs */
	WD_TOOL_DIRECT = 1,  /* runs in warden itself (no jail) */
	WD_TOOL_SANDBOX = 2, /* runs in a jail with the tool's profile */
};

/* Load a policy document (JSON, "version": 1), or the built-in default when
 * path is NULL.  On bad input returns -EINVAL with err->msg
 * "FILE:LINE:COLUMN: member: what"; -errno if the file cannot be read.
 * *out is a new policy, free with wd_policy_free(). */
int wd_policy_load(const char *path, wd_policy **out, struct wd_err *err);
void wd_policy_free(wd_policy *p);
/* The effective policy, defaults filled in, as indented JSON.  Returns a
 * new string, free with free(). */
char *wd_policy_json(const wd_policy *p);
/* SHA-256 (hex) of the effective policy; part of every approval id.  Valid
 * while p lives. */
const char *wd_policy_digest(const wd_policy *p);
/* The policy's audit.path, or NULL.  Valid while p lives. */
const char *wd_policy_audit_path(const wd_policy *p);
/* Seconds an approval stays valid unless `warden approve --ttl` says. */
unsigned wd_policy_approval_ttl(const wd_policy *p);
/* The policy's network.allow host patterns ("pypi.org", "*.github.com"),
 * for the egress layer; *n gets the count.  Valid while p lives. */
const char *const *wd_policy_network_allow(const wd_policy *p, size_t *n);

/* Protections a policy can require of every run ("sandbox.require"): a
 * run on a host (or at an isolation level) without one must fail closed,
 * before the command starts. */
enum wd_require {
	WD_REQUIRE_CGROUP = 1 << 0,   /* cgroup limits (memory, pids, cpu) enforced */
	WD_REQUIRE_LANDLOCK = 1 << 1, /* a Landlock ruleset applied */
	WD_REQUIRE_SECCOMP = 1 << 2,  /* warden's seccomp filter loaded */
	WD_REQUIRE_NETNS = 1 << 3,    /* a network namespace of its own */
	WD_REQUIRE_USERNS = 1 << 4,   /* a user namespace of its own */
};

/* One entry of a policy's "secrets": where warden reads the
 * value ("env:VAR" or "@/path"), the variable that gets its placeholder
 * (or NULL), and its inject rules, as wd_spec_add_secret(),
 * wd_spec_add_placeholder() and wd_spec_add_inject() take them. */
struct wd_policy_secret {
	const char *name;
	const char *source;
	const char *placeholder;
	const char *const *inject; /* WD_INJECT_HEADER rules */
	size_t ninject;
	const char *const *inject_basic; /* WD_INJECT_BASIC rules */
	size_t ninject_basic;
};

/* What a policy says about the sandbox of a run: the "sandbox" and
 * "network" objects of the document (docs/policy.md).  A field the policy
 * does not set is 0, false or NULL (and *_set false): the run's own
 * options, then warden's defaults, decide it.  Strings and arrays point
 * into the policy and are valid while it lives. */
struct wd_policy_sandbox {
	struct wd_limits limits; /* memory, pids, cpu, tmp, timeout, output; 0: unset */
	bool isolation_set;
	enum wd_isolation isolation;
	unsigned require; /* WD_REQUIRE_* bits */
	bool reproducible;
	bool net_mode_set; /* network.mode given; else allow rules imply WD_NET_PROXY */
	enum wd_net_mode net_mode;
	const char *const *net_allow; /* network.allow: --allow-host rules */
	size_t net_nallow;
	const char *const *net_deny; /* network.deny: --deny-host rules */
	size_t net_ndeny;
	const char *const *net_hosts; /* network.hosts: --add-host NAME=ADDRESS */
	size_t net_nhosts;
	const unsigned *allow_ports; /* network.allow_ports: --allow-port */
	size_t nallow_ports;
	bool tls_intercept;	    /* network.tls_intercept */
	const char *upstream_ca;    /* network.upstream_ca (absolute), or NULL */
	const char *const *protect; /* workspace.protect: paths kept read-only */
	size_t nprotect;
	const struct wd_policy_secret *secrets; /* "secrets", in document order */
	size_t nsecrets;
	unsigned pool; /* sandbox.pool: warden serve's warm pool size, 0-64 (0: none) */
	const char *const *net_ranges; /* network.allow_ranges: --allow-range CIDR */
	size_t net_nranges;
	const char *image; /* sandbox.image: the environment (an image reference), or NULL */
};
/* Fill *out from the policy.  Never fails. */
void wd_policy_sandbox(const wd_policy *p, struct wd_policy_sandbox *out);

/* The static route of a tool: its class and, for sandbox tools, the
 * resource limits of its profile (limits zeroed otherwise; *profile NULL
 * when it has none; valid while p lives).  -ENOENT if the policy does not
 * define the tool (such a tool is blocked). */
int wd_policy_route(const wd_policy *p, const char *tool, enum wd_tool_class *klass,
		    const char **profile, struct wd_limits *limits, struct wd_err *err);
/* The limits a judged command of tool (NULL: none) runs with under p, as
 * the policy stage sets them: for each of memory, pids, cpu, tmp, timeout
 * and output, given's (the caller's; NULL: none) when not 0, else the
 * tool's profile's, else the policy's sandbox object's, else 0 (the
 * library's default, wd_limits_defaults); the other fields are given's.
 * -ENOENT if the policy does not define tool (such a tool is blocked). */
int wd_policy_limits(const wd_policy *p, const char *tool, const struct wd_limits *given,
		     struct wd_limits *out, struct wd_err *err);
/* The image a sandbox tool runs in (tools.NAME.image: a name or
 * sha256:HEX, valid while p lives), or NULL: none, or no such tool. */
const char *wd_policy_tool_image(const wd_policy *p, const char *tool);

/* A request to judge.  Setters copy their arguments. */
wd_request *wd_request_new(void);
void wd_request_free(wd_request *req);
/* The command as one string: split with POSIX quoting, never given to a
 * shell; composition and expansion are refused by wd_policy_decide(). */
int wd_request_set_command(wd_request *req, const char *command, struct wd_err *err);
int wd_request_set_argv(wd_request *req, int argc, const char *const argv[], struct wd_err *err);
/* The workspace on the host (must be a directory; default: the current
 * directory).  Path arguments are resolved beneath it with openat2(). */
int wd_request_set_workspace(wd_request *req, const char *dir, struct wd_err *err);
/* Working directory relative to the workspace (default "."). */
int wd_request_set_cwd(wd_request *req, const char *cwd, struct wd_err *err);
/* The tree the jail's /usr, /bin, /sbin, /lib* and /etc/alternatives come
 * from (an image's rootfs; default: the host's /): programs are
 * looked up and resolved there, as the jail will run them.  -EINVAL
 * unless an absolute directory. */
int wd_request_set_system_root(wd_request *req, const char *root, struct wd_err *err);
/* NAME=VALUE passed to the command: covered by the approval id, never
 * written to the audit log (names only). */
int wd_request_setenv(wd_request *req, const char *name, const char *value, struct wd_err *err);
/* What spec gives the command, as a run's policy stage sets it: the
 * system root (spec's image's rootfs, wd_spec_set_image(); none: the
 * host's) and spec's environment in its order (the image's variables
 * among the caller's).  A front end that only asks (warden check) judges
 * with the decision and approval id the run of that spec would get.
 * The workspace is not taken from spec (wd_request_set_workspace). */
int wd_request_set_spec(wd_request *req, const wd_spec *spec, struct wd_err *err);

/* Decide.  *out is a new decision (free with wd_decision_free()); a
 * negative return means no decision could be made (bad request). */
int wd_policy_decide(const wd_policy *p, const wd_request *req, wd_decision **out,
		     struct wd_err *err);
void wd_decision_free(wd_decision *d);
enum wd_decision_kind wd_decision_kind(const wd_decision *d);
/* The rule that decided ("shell.and", "programs.git.approve[0]",
 * "workspace.containment"), the reason (one sentence), the advice for the
 * model (one line, "" on allow) and, for a pause, the approval id (64 hex,
 * "" otherwise).  Valid while d lives. */
const char *wd_decision_rule(const wd_decision *d);
const char *wd_decision_reason(const wd_decision *d);
const char *wd_decision_advice(const wd_decision *d);
const char *wd_decision_approval_id(const wd_decision *d);
/* The argv that was judged (the tokenized string); NULL-terminated, valid
 * while d lives.  Empty when a string was refused before splitting. */
const char *const *wd_decision_argv(const wd_decision *d, int *argc);
/* The SHA-256 (hex) of the policy that decided.  Valid while d lives. */
const char *wd_decision_policy(const wd_decision *d);
/* One JSON object describing the decision.  New string, free with free(). */
char *wd_decision_json(const wd_decision *d);

/* ---- approvals: single use, expiring, never widening ----
 * State lives under $WARDEN_STATE_DIR, else $XDG_STATE_HOME/warden, else
 * /var/lib/warden (root) or ~/.local/state/warden. */

/* Record that d (a pause for req) is waiting for a human, so that
 * `warden approve ID` can show what it approves.  Logs nothing. */
int wd_approval_pending(const wd_policy *p, const wd_request *req, const wd_decision *d,
			const char *audit_path, struct wd_err *err);
/* Grant the paused request id (or a unique prefix of 8+ digits) for
 * ttl_s seconds (0: the policy's default recorded with the pause).  On
 * success *summary (if not NULL) is a new string describing the request,
 * free with free(); an "approval.granted" event goes to audit if not NULL,
 * else to the audit log recorded with the pause, if any. */
int wd_approval_grant(const char *id, unsigned ttl_s, wd_audit *audit, char **summary,
		      struct wd_err *err);
/* The same grant; *json (new, free with free()) is one object: "id",
 * "argv", "cwd", "workspace", "system" (an image's rootfs, or "host"),
 * "policy", "policy_source", "rule", "reason",
 * "granted" and "expires" (Unix seconds), "ttl" (seconds). */
int wd_approval_grant_json(const char *id, unsigned ttl_s, wd_audit *audit, char **json,
			   struct wd_err *err);
/* At execution: for a pause d, take (consume) a recorded approval.
 * Returns 1 if a valid approval was consumed: the caller must then decide
 * again with the policy as loaded now and run only if that decision is the
 * same pause (same id).  Returns 0 when there is none (or it expired, or a
 * near approval does not cover this request: those are audited as
 * approval.expired / approval.mismatched).  Negative on error. */
int wd_approval_consume(const wd_policy *p, const wd_request *req, const wd_decision *d,
			wd_audit *audit, struct wd_err *err);
/* Whether an unexpired approval is recorded for d, without consuming it. */
bool wd_approval_recorded(const wd_decision *d);
/* The paused commands waiting for a human, oldest first, as a JSON array
 * of {"id", "argv", "cwd", "workspace", "system", "rule", "reason", "policy",
 * "policy_source", "created", "ttl", "approved"} ("approved": an
 * unexpired approval is recorded and not yet consumed).  For a human's
 * channel only: it shows what the agent tried.  *out is new, free with
 * free(); -errno when the state directory cannot be read. */
int wd_approval_list(char **out, struct wd_err *err);
/* A human's channel must not be reachable from a sandbox: a command that
 * runs as the caller's uid (an unprivileged caller's sandboxes map to it;
 * the process level shares the host's file system) would otherwise speak
 * as the human and approve its own requests.  For a connected unix socket
 * fd: 0 when its peer is not inside a sandbox; -EPERM with err->msg saying
 * why when it is: its pid or user namespace is not the caller's, it is in
 * a sandbox's cgroup (<base>/warden/<id>), or it descends from the calling
 * process (which ran it).  The peer is named by SO_PEERPIDFD where the
 * kernel has it (Linux 6.5) and checked alive after the look, so a reused
 * pid cannot pass for it; elsewhere SO_PEERCRED's pid, with that race.  A
 * peer that cannot be looked at (gone, /proc unreadable) is refused.
 * Thread-safe; reads /proc only. */
int wd_peer_check(int fd, struct wd_err *err);

/* ---- audit trail: hash-chained JSON Lines ---- */

/* Open (create, 0600, append-only) the log at path.  *out is new; close
 * with wd_audit_close().  Each handle has a random sandbox id.  Anything
 * but a regular file (a FIFO, a device, a directory) is refused at once
 * with -EINVAL and a message naming it.  An event longer than 16 MiB is
 * refused (-EINVAL), so every line written can be verified. */
int wd_audit_open(const char *path, wd_audit **out, struct wd_err *err);
void wd_audit_close(wd_audit *a);
const char *wd_audit_sandbox_id(const wd_audit *a);
/* Append a "decision" event (request without environment values, the
 * decision, rule, reason, policy digest). */
int wd_audit_decision(wd_audit *a, const wd_request *req, const wd_decision *d, struct wd_err *err);
/* Append an "approval.granted|consumed|expired|mismatched" event. */
int wd_audit_approval(wd_audit *a, const char *what, const char *id, const char *detail,
		      struct wd_err *err);
/* Append a "result" event; result_json is wd_result_json()'s output (or
 * any JSON object), embedded as "result". */
int wd_audit_result(wd_audit *a, const wd_decision *d, const char *result_json, struct wd_err *err);
/* Append an event of another kind: fields_json is a JSON object (or NULL)
 * whose members are added after "event"; seq, time, sandbox and prev are
 * warden's.  -EINVAL if fields_json is not an object. */
int wd_audit_event(wd_audit *a, const char *event, const char *fields_json, struct wd_err *err);
/* Verify the chain of the log at path (and path.head), reading it as a
 * stream: memory is bounded by the longest line allowed (16 MiB), not by
 * the log; a longer line breaks the chain at that line.  Returns 0 if
 * intact, 1 if broken, negative if the log or its head cannot be read or is
 * not a regular file (-EINVAL: a FIFO or device is refused before reading);
 * *report (if not NULL) is a new one-line description, free with free(). */
int wd_audit_verify(const char *path, char **report, struct wd_err *err);

/* ------------------------------------------------------- workspace files */

/* The workspace as direct file tools (read_file, write_file, ...) see it:
 * they run in the harness, outside every jail, under the same containment
 * as the policy's path check: every path is opened with openat2() and
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS on the workspace's directory fd,
 * so the check and the use are one system call (docs/policy.md).  Paths
 * are relative to the workspace, or absolute below "/workspace" (the
 * jail's view) or below the workspace's host path; any other absolute
 * path is outside.  Protected paths are read-only: warden's own
 * (.git/hooks, .git/config, .gitmodules, .envrc, .vscode, .idea: host
 * tools run what they hold, and pid 1 makes them read-only in every jail)
 * and those added with wd_workspace_protect().  Once its protected paths
 * are added, a wd_workspace does not change: any number of threads may use
 * it at once. */
typedef struct wd_workspace wd_workspace;

/* Open the directory dir.  *out is new, close with wd_workspace_close().
 * -EINVAL (err->msg names dir) when it does not exist or is not a
 * directory. */
int wd_workspace_open(const char *dir, wd_workspace **out, struct wd_err *err);
void wd_workspace_close(wd_workspace *ws);
/* The workspace's resolved host path.  Valid while ws lives. */
const char *wd_workspace_path(const wd_workspace *ws);
/* Open path beneath the workspace for reading: flags is O_RDONLY with any
 * of O_DIRECTORY, O_NOFOLLOW, O_PATH, O_NONBLOCK (O_CLOEXEC is added).
 * Returns a new fd or a negative errno with err->msg saying why: -EXDEV
 * the path resolves outside the workspace, -ELOOP a symlink loop or a
 * magic link, -ENOENT, -ENOTDIR, -EINVAL other flags. */
int wd_workspace_openat(const wd_workspace *ws, const char *path, int flags, struct wd_err *err);
/* Whether relpath (relative to the workspace) is one of warden's own
 * protected paths or below one, or has a .git component at any depth.  For listing; writes check
 * where the file really is, against the workspace's whole list. */
bool wd_workspace_protected(const char *relpath);
/* Protect path (relative to the workspace, normal form, as
 * wd_spec_add_protected() takes it) too: writes to it or below it are
 * refused (-EACCES).  For a policy's workspace.protect and a front end's
 * own list, so that the tools refuse what pid 1 makes read-only.  Not
 * thread-safe: add every path before ws is shared.  -EINVAL for an
 * absolute path or one with "." or "..". */
int wd_workspace_protect(wd_workspace *ws, const char *path, struct wd_err *err);
/* git's ignore rules of ws as it holds them now (.gitignore in every
 * directory, .git/info/exclude; read as needed, beneath ws, no link
 * followed; no git is run), for a tool that skips what a project ignores
 * (search_files).  wd_ignore_match(): whether git would ignore relpath
 * (as wd_workspace_openat() takes it; isdir: a directory), as git
 * check-ignore --no-index answers.  A wd_ignore keeps what it read: one
 * per walk, not shared between threads; ws must outlive it.  wd_sandbox_diff() uses the same rules,
 * read from the real directory only. */
typedef struct wd_ignore wd_ignore;
int wd_workspace_ignore(const wd_workspace *ws, wd_ignore **out, struct wd_err *err);
bool wd_ignore_match(wd_ignore *ig, const char *relpath, bool isdir);
void wd_ignore_free(wd_ignore *ig);
/* The workspace as sandbox sb sees it at /workspace, for direct tools
 * working on a live sandbox: for a cow sandbox its overlay (reads see what
 * the sandbox wrote; writes land in its change set, for wd_sandbox_diff,
 * _apply and _discard, never in the real directory), for a direct one the
 * directory itself.  Protected as its jail is: warden's paths, the
 * policy's workspace.protect and the spec's (wd_spec_add_protected()).
 * *out is new, close with wd_workspace_close() before
 * wd_sandbox_destroy(sb) (a cow view keeps the sandbox's disk mounted
 * while it is open).  Thread-safe with commands running in sb. */
int wd_sandbox_workspace(wd_sandbox *sb, wd_workspace **out, struct wd_err *err);

#define WD_WRITE_MKDIRS 0x1u   /* create missing parent directories (0755) */
#define WD_WRITE_NEW 0x2u      /* fail with -EEXIST if path exists */
#define WD_WRITE_EXISTING 0x4u /* fail with -ENOENT unless path exists */
/* Replace (or create) the regular file path with len bytes of data,
 * atomically: a temporary file beside it, then rename(2).  The old file's
 * mode is kept (new files: 0644; as root, owned by the workspace's
 * owner).  A symlink, a directory or a protected path is never written:
 * -ELOOP, -EISDIR, -EACCES (also any .git component, and a file above a
 * protected path); -EINVAL a ".." component, before anything is made;
 * -EXDEV outside the workspace; -EEXIST or
 * -ENOENT for WD_WRITE_NEW / WD_WRITE_EXISTING; else -errno.  err->msg
 * names the path. */
int wd_workspace_write(const wd_workspace *ws, const char *path, const void *data, size_t len,
		       unsigned flags, struct wd_err *err);

/* ----------------------------------------------------------------- parsing */

/* Strict, whole-string parsers for what front ends read from users (the
 * CLI's options, a server's parameters).  Each returns 0, -EINVAL (not the
 * form), -ERANGE (too large) or, for wd_parse_fixed6, -EDOM (more than six
 * decimals: never rounded silently). */
/* "512M", "1G", "64k", "1GiB", "65536": binary K M G T, optionally "iB";
 * "MB" and the like are refused (decimal or binary?).  At most 2^63 - 1. */
int wd_parse_size(const char *s, uint64_t *out);
/* A decimal unsigned integer: no sign, no suffix. */
int wd_parse_u64(const char *s, uint64_t *out);
/* A non-negative decimal with up to six decimals ("1.5", "0.25", "30"),
 * in millionths. */
int wd_parse_fixed6(const char *s, uint64_t *out_millionths);

/* ------------------------------------------------------------------ doctor */

/* Probe this host: which isolation levels can run and why not.  Returns a
 * new string (JSON if json, else text), free with free(); *ok_levels gets a
 * bit per runnable level (1 << WD_ISOLATION_*). */
char *wd_doctor(bool json, unsigned *ok_levels);

/* Probe this process's environment as a Kubernetes pod (docs/kubernetes.md):
 * a user namespace of its own, CAP_SYS_ADMIN, a new /proc mountable, clone3
 * and unshare with namespace flags past the pod's seccomp profile, cgroup
 * delegation and the pod's own limits, Landlock, runsc; each with what
 * lacking it costs.  Returns a new string (JSON if json), free with free();
 * *ok_levels as for wd_doctor, for this pod. */
char *wd_doctor_pod(bool json, unsigned *ok_levels);

#ifdef __cplusplus
}
#endif
#endif /* WARDEN_H */
