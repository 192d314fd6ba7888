/*
 * warden.h - the public C API of libwarden.
 *
 * warden runs the commands and tools of an AI agent inside a kernel-enforced
 * sandbox, behind a deterministic policy, with every decision on the record.
 *
 * Conventions (see shared STYLE.md):
 *  - every function that can fail returns int: 0 (or a count) on success, a
 *    negative errno value on failure, and fills the caller-owned struct wd_err;
 *  - objects come back through **out, set only on success; _new/_free pairs;
 *  - nothing here is thread-safe on a shared object unless said so; distinct
 *    objects may be used from distinct threads.
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
	WD_E_INVAL = 1,       /* bad input: an option, a value, a file */
	WD_E_SYS = 2,         /* a system call failed; sys_errno says which errno */
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
};

/* Resource limits; 0 means "warden's default" for every field. */
struct wd_limits {
	uint64_t memory_bytes;   /* cgroup memory limit, no swap (default 512 MiB) */
	uint64_t pids;           /* cgroup pids limit (default 128) */
	uint64_t cpu_millionths; /* CPUs x 1e6 (default 1.0 CPU) */
	uint64_t tmp_bytes;      /* size of the /tmp tmpfs (default 128 MiB) */
	uint64_t timeout_ms;     /* wall-clock deadline (default 30 s) */
	uint64_t output_limit;   /* bytes kept per stream, half head half tail (64 KiB) */
	uint64_t nofile;         /* RLIMIT_NOFILE (default 1024) */
	uint64_t fsize;          /* RLIMIT_FSIZE (default 1 GiB) */
};

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
int wd_spec_add_bind(wd_spec *spec, const char *src, const char *dst, bool rw,
		     struct wd_err *err);
/* Add NAME=VALUE to the command's environment (replacing an earlier one). */
int wd_spec_setenv(wd_spec *spec, const char *name, const char *value, struct wd_err *err);
/* Allow TCP bind and connect on port inside the jail (Landlock). */
int wd_spec_allow_port(wd_spec *spec, unsigned port, struct wd_err *err);
/* stdin of the command: an fd warden reads from (not owned), or -1 for
 * /dev/null (the default). */
void wd_spec_set_stdin(wd_spec *spec, int fd);
/* Where the kept windows stream while the command runs: fds (not owned) or
 * -1 to keep them only in the result (the default). */
void wd_spec_set_stream(wd_spec *spec, int out_fd, int err_fd);
/* A terminal is attached: TERM is passed on. */
void wd_spec_set_term(wd_spec *spec, const char *term);

/* ----------------------------------------------------------- run: result */

typedef struct wd_result wd_result;

/* Run the spec in a fresh jail and wait for it.  On success *out is a new
 * result (free with wd_result_free()), whatever the command did; a negative
 * return means warden itself failed and nothing, or nothing more, ran. */
int wd_run(const wd_spec *spec, wd_result **out, struct wd_err *err);
void wd_result_free(wd_result *r);

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
/* One JSON object describing the result, including the protections in force.
 * Returns a new string, free with free(). */
char *wd_result_json(const wd_result *r);

/* ------------------------------------------------------------------ doctor */

/* Probe this host: which isolation levels can run and why not.  Returns a
 * new string (JSON if json, else text), free with free(); *ok_levels gets a
 * bit per runnable level (1 << WD_ISOLATION_*). */
char *wd_doctor(bool json, unsigned *ok_levels);

#ifdef __cplusplus
}
#endif
#endif /* WARDEN_H */
