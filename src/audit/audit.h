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

/* The longest line (event) warden writes or reads back, without its '\n':
 * 16 MiB, eight times the 2 MiB that execve(2) takes in argv and
 * environment together under the default 8 MiB stack limit, so that the
 * largest command a harness can run fits as JSON even where most of its
 * bytes are escaped (\uXXXX).  audit_append() refuses a longer event;
 * verification stops at a longer line and reports it as broken, by number,
 * having read at most AUDIT_LINE_MAX + 1 bytes of it.  Memory use of both
 * is bounded by this, never by the size of the log. */
#define AUDIT_LINE_MAX (16u << 20)
/* The head file is one short object; more than this is not warden's. */
#define AUDIT_HEAD_MAX 4096

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
 * close with audit_close().  Anything but a regular file is refused
 * (-EINVAL, the message names the file), a FIFO without waiting for a
 * reader. */
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
/* Verify the file at path (and path.head), streaming it line by line:
 * memory is bounded by AUDIT_LINE_MAX, not by the log.  0 with r filled
 * (r->ok says whether the chain holds), or a negative errno value with err
 * naming the file if the log or its head cannot be read or is not a regular
 * file (-EINVAL; a FIFO or a device is refused before anything is read). */
int audit_verify_file(const char *path, struct audit_verify *r, struct wd_err *err);

/* Open path with flags (O_RDONLY, or O_WRONLY|O_APPEND|O_CREAT...; O_CLOEXEC,
 * O_NOCTTY and, for the duration of the open, O_NONBLOCK are added) and
 * require a regular file: a FIFO would block the open or the first read,
 * a device may never end.  what names the file in errors ("audit log").
 * Returns a new blocking fd, or a negative errno value (-EINVAL when it is
 * not a regular file). */
int audit_open_regular(const char *path, int flags, const char *what, struct wd_err *err);

/* A JSON string for s, never NULL.  jansson refuses bytes that are not
 * UTF-8 (json_string() returns NULL, and json_object_set_new() then drops
 * the member silently); here each such byte is written visibly as \xNN and
 * valid UTF-8 is kept byte for byte.  For every text that reaches an event
 * or a front end's JSON from outside: argv, paths, reasons. */
json_t *audit_json_text(const char *s);
/* A JSON string holding s's bytes as they are (json_stringn_nocheck), for
 * a record of the audit trail: audit_write_value() writes a byte that is
 * not UTF-8 as util/json.h does, "\udcXX", so the byte 0xff and the four
 * characters \xff are two records, each reading back to its own bytes
 * (Python: surrogateescape).  json_dumps() refuses such a string: for a
 * front end's JSON use audit_json_text(). */
json_t *audit_json_bytes(const char *s);
struct jw;
/* v into w as util/json.h writes JSON (strings by their bytes, as above);
 * audit_write_members: an object's members without its braces, the first
 * after a comma unless w is at the start of an object's members. */
void audit_write_value(struct jw *w, json_t *v);
void audit_write_members(struct jw *w, json_t *obj);
/* One line of the trail parsed (json_loadb with flags), a "\udcXX" the
 * writer made of a byte included (jw_surrogates_to_nul): jansson alone
 * refuses the line. */
json_t *audit_line_load(const char *line, size_t len, size_t flags, json_error_t *je);

/* 32 random hex digits + NUL. */
void audit_random_id(char out[33]);
/* Current UTC time as 2026-11-29T07:25:10.123Z. */
void audit_now(char out[32]);

#endif
