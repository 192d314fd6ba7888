/* server/run.h - what a call does with the library: run a command
 * (run.c), a result and a decision as replies (result.c), the change set
 * (diff.c), the file tools (files.c). */
#ifndef WD_SERVER_RUN_H
#define WD_SERVER_RUN_H

#include "server/srv.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct live;

/* result.c */
/* A change set or apply report as the library writes it for a strict
 * parser (wd_report_json: a byte that is not UTF-8 as the text \xNN),
 * with only its first max_files files (0: all), embedded whole.  Results
 * and decisions are read through their accessors. */
json_t *report_embed(const wd_report *r, size_t max_files);
/* A decision as wd_decision_json() describes it, built from its
 * accessors (a byte that is not UTF-8 as the text \xNN); NULL for NULL. */
json_t *decision_json(const wd_decision *d);
json_t *result_for_harness(const wd_result *r);
json_t *result_for_model(struct srv *s, const wd_result *r);

/* run.c */
/* The sandbox spec of this server: its workspace, isolation, limits (lim,
 * or the server's), --protect, --allow-range; and image (a name: resolved
 * to its digest now, once, and set by the digest, which *digest receives
 * when not NULL; NULL: the host's /usr). */
wd_spec *run_spec(struct srv *s, const struct wd_limits *lim, const char *image, char *digest,
		  struct wd_err *err);
/* When the server's workspace path still leads, with no symbolic link
 * on the way, to the directory the server started on (the one its file
 * tools hold): a descriptor of that directory (the caller closes it) and
 * name set to "/proc/self/fd/N", what the server hands the library for
 * the workspace, which resolves it from the directory itself, never by
 * walking the path again; else -EINVAL with err saying so. */
int srv_workspace_hold(struct srv *s, char name[static 32], struct wd_err *err);
/* ref's digest in the store now, as "sha256:HEX" (wd_image_inspect). */
int srv_image_digest(struct srv *s, const char *ref, char *out, struct wd_err *err);
/* A command's wall clock when none is asked: the server's --timeout, else
 * the library's default (wd_limits_defaults). */
uint64_t server_timeout_ms(const struct srv *s);
/* The image a judged command of route rt (NULL: none) runs in: the
 * tool's (the policy's tools.NAME.image), else the server's --image, else
 * NULL. */
const char *srv_run_image(const struct srv *s, const struct route *rt);
int run_oneshot(struct call *c, const wd_spec *spec, wd_cmd *cmd, wd_result **out,
		struct wd_err *err);
/* run_command's arguments as a wd_cmd for the policy stage (run.c), under
 * rt, run_command's route (the call's) */
int run_command_cmd(json_t *args, const struct route *rt, wd_cmd *cmd, struct wd_err *err);
json_t *run_command_tool(struct call *c, json_t *args, struct rpc_err *e);
json_t *run_harness(struct call *c, struct rpc_err *e);	 /* sandbox.run */
json_t *exec_harness(struct call *c, struct rpc_err *e); /* sandbox.exec */
/* cmd in the live sandbox l (held by the caller), cancellable by c's
 * cancellation (which ends the command, not the sandbox).  0 with *out. */
int live_exec(struct call *c, struct live *l, wd_cmd *cmd, wd_result **out, struct wd_err *err);
/* An ephemeral run from the warm pool (pool.c), cancellable as run_oneshot. */
int run_pooled(struct call *c, wd_cmd *cmd, wd_result **out, struct wd_err *err);

json_t *diff_tool(struct call *c, json_t *args, struct rpc_err *e);
/* The text of a diff for a model (diff.c): at most MODEL_TEXT_CAP bytes of
 * text, cut at a line (or character) boundary, then a marker saying how
 * many bytes were left out and how to see them (a new string). */
#define MODEL_TEXT_CAP (64u << 10)
#define DIFF_MODEL_FILES 1000 /* structuredContent.files, the rest counted */
char *diff_text_capped(const char *text);
json_t *diff_harness(struct call *c, struct rpc_err *e);    /* sandbox.diff */
json_t *apply_harness(struct call *c, struct rpc_err *e);   /* sandbox.apply */
json_t *discard_harness(struct call *c, struct rpc_err *e); /* sandbox.discard */
/* The event handler of the context: output events to the running call. */
void run_on_event(const wd_event *ev, void *data);

/* files.c: the file tools, shared by MCP (text for a model) and the
 * harness methods (data for a program), on ws: the server's workspace,
 * or a live sandbox's view of it. */
json_t *file_tool(struct call *c, wd_workspace *ws, const char *tool, json_t *args, bool for_model,
		  struct rpc_err *e);

#endif
