/* audit: the record of every decision, approval and run result.
 *
 * JSON Lines, one event per line:
 *   {"seq":1,"time":"2026-11-29T07:25:10.123Z","sandbox":"3f9c...","event":"decision",
 *    ...event fields...,"prev":"<SHA-256 hex of the previous line>"}
 * seq counts from 1; the first event's prev is 64 zeros.  A sidecar file
 * FILE.head holds the seq and SHA-256 of the last line, so removing events
 * from the end is detected too.  Appends take an exclusive flock() on the
 * log, so concurrent wardens interleave whole events with a consistent chain.
 *
 * The log is opened by warden, outside every jail, O_APPEND; no fd of it is
 * ever passed to a sandbox (O_CLOEXEC, and the jail closes fds >= 3).
 * Events never contain environment values, only names.
 */
#ifndef WD_AUDIT_H
#define WD_AUDIT_H

#include "util/util.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define AUDIT_ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"

struct audit_log {
	int fd;
	char *path;
	char sandbox[33]; /* random id of this warden invocation, 32 hex */
};

/* The public handle (include/warden.h) wraps one log.  A context's handle
 * (hook set) sends approval events into the context's event stream, which
 * records them, instead of writing them itself. */
struct wd_audit {
	struct audit_log *log;
	void (*hook)(void *data, const char *what, const char *id, const char *detail);
	void *hook_data;
};

/* Open (creating, mode 0600) an audit log for appending.  *out is new;
 * close with audit_close(). */
int audit_open(const char *path, struct audit_log **out, struct wd_err *err);
void audit_close(struct audit_log *a);

/* Append one event.  ev is an object of event fields (borrowed, not
 * modified); seq, time, sandbox and prev are added around it.  If ev has a
 * "sandbox" string it overrides the log's id.  Returns the event's seq. */
int audit_append(struct audit_log *a, json_t *ev, struct wd_err *err);

/* Append one event given as JSON members without braces ("\"event\":...,
 * ..."), ASCII only; sandbox (or the log's own id when NULL) goes first.
 * The one place an audit line is written. */
int audit_append_text(struct audit_log *a, const char *sandbox, const char *members,
		      struct wd_err *err);

/* Verification of a whole log. */
struct audit_verify {
	bool ok;
	size_t events;	 /* intact events read */
	size_t bad_line; /* first broken line (1-based), 0 if none or if at the end */
	bool head_checked;
	char message[320];
};

/* Verify text (the log's bytes) against an optional head (the .head file's
 * bytes, NULL if absent).  Pure: used by the fuzzer and by the file form. */
void audit_verify_buffer(const char *buf, size_t len, const char *head, size_t head_len,
			 struct audit_verify *r);
/* Verify the file at path (and path.head).  0 with r filled (r->ok says
 * whether the chain holds), or -errno if the log cannot be read. */
int audit_verify_file(const char *path, struct audit_verify *r, struct wd_err *err);

/* 32 random hex digits + NUL. */
void audit_random_id(char out[33]);
/* Current UTC time as 2026-11-29T07:25:10.123Z. */
void audit_now(char out[32]);

#endif
