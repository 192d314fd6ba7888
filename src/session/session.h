/* session: sessions, a sandbox that outlives its caller in a monitor
 * process of its own (internal to src/session/).
 *
 *   session.c          the caller's side: create, start, exec (the
 *                      pipeline's session placements), logs, list, stop,
 *                      remove
 *   session_changes.c  snapshots, and the change set of a running or
 *                      stopped session (diff, apply, discard)
 *   session_copy.c     warden cp's host side
 *   session_update.c   warden update: the spec changed, re-checked,
 *                      audited, applied live by the monitor where it can
 *   monitor.c          warden-monitor's body (monitor_main.c its entry)
 *   mproto.c           the protocol between them
 *
 * Above core: a session's commands go through core's one door
 * (pipeline_run) and its state is a core box; nothing in core calls here. */
#ifndef WD_SESSION_H
#define WD_SESSION_H

#include "core/core.h"
#include "spec/spec.h"
#include "result/result.h"

#define MP_MAX_FDS 4
/* One JSON record with descriptors each way (large ones in a memfd). */
int mp_send(int sock, const char *json, const int *fds, int nfds);
/* *json is new (free it), fds get up to MP_MAX_FDS; timeout_ms < 0 waits. */
int mp_recv(int sock, char **json, int *fds, int *nfds, int timeout_ms);
/* A sealed memfd holding data, or -errno. */
int mp_memfd(const char *name, const void *data, size_t len);
/* The content of a memfd (at most max bytes): a new NUL-terminated copy. */
char *mp_read_memfd(int fd, size_t max, size_t *len);
/* The monitor program's body: warden-monitor ROOT ID (fd 3: readiness). */
int session_monitor_main(int argc, char **argv);
/* session.c, for session_changes.c: a session by reference (its state
 * directory open), a request to its monitor. */
struct where {
	char root[4096];
	char id[17];
	int sbdir; /* sandboxes/<id> */
};
int session_locate(wd_ctx *ctx, const char *ref, struct where *w, struct wd_err *err);
void session_where_fini(struct where *w);
/* The names in the directory dfd (left open) that keep accepts, sorted:
 * their count, and in *out a new array of new strings (free each, then
 * it).  session_is_id accepts a sandbox's id (sandboxes/ holds others). */
size_t session_dir_names(int dfd, bool (*keep)(const char *name), char ***out);
bool session_is_id(const char *name);
/* One request, one reply: 0 with *resp (if not NULL) and the reply's
 * memfd read into *data (if not NULL); -ESRCH when it is not running. */
int session_call(int sbdir, const char *req, const int *fds, int nfds, struct json_t **resp,
		 char **data, size_t *dlen, struct wd_err *err);
/* The same, the reply's descriptor (or -1) in *rfd, the caller's. */
int session_call_fd(int sbdir, const char *req, const int *fds, int nfds, struct json_t **resp,
		    int *rfd, struct wd_err *err);
/* A session's snapshot of its disk and baseline as tag (sbdir: its state
 * directory; disk: its mounted disk to freeze, or -1 when stopped). */
int session_snapshot_copy(int sbdir, const char *tag, int disk, struct wd_err *err);
/* The session's spec from its meta.json (its secrets pending), and the
 * meta object itself if meta is not NULL (a reference, the caller's). */
int session_spec_read(int sbdir, wd_spec **spec, struct json_t **meta, struct wd_err *err);
/* -EINVAL when a secret's file lies where the session's sandbox can
 * write (its workspace, a read-write bind): re-read at each start. */
int session_secrets_check(const wd_spec *spec, struct wd_err *err);
/* What the context's policy adds to every session it makes (its
 * workspace.protect paths, its network rules and ports), in spec_to_json's
 * form, for meta.json's "policy": the floor warden update keeps.  NULL
 * (and 0) when the context has no policy file; -errno on a bad policy. */
int session_policy_floor(wd_ctx *ctx, struct json_t **floor, struct wd_err *err);
/* The secrets' values handed to a monitor at its start (fd 4), read by
 * it before anything else: a getter for spec_secrets_load. */
int monitor_secret_get(void *data, const char *name, const char *source, char *buf, size_t cap,
		       size_t *len, struct wd_err *err);

#endif
