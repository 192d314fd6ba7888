/* server: `warden serve`, JSON-RPC 2.0 and MCP for agents and harnesses.
 *
 * A thin front end over include/warden.h (it includes nothing of jail/,
 * supervise/ or core/): one epoll loop for every transport (stdio, a unix
 * socket, MCP Streamable HTTP), a worker thread per running call, the
 * library's context for policy, audit and sandboxes, and wd_workspace for
 * the direct file tools.  docs/server.md is the user's manual. */
#ifndef WD_SERVER_H
#define WD_SERVER_H

#include "warden.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SERVER_MAX_GROUPS 16
#define SERVER_MAX_ORIGINS 16
#define SERVER_MAX_PROTECT 64
#define SERVER_MAX_RANGES 64
#define SERVER_MAX_IMAGES 32

struct server_opts {
	bool stdio;		 /* newline-delimited JSON-RPC on stdin/stdout */
	const char *socket_path; /* a unix socket, created 0600 */
	const char *listen;	 /* ADDR:PORT for MCP Streamable HTTP at /mcp */
	const char *token_file;	 /* the bearer token for --listen */
	bool behind_proxy;	 /* a non-loopback --listen: TLS ends in a proxy in front */
	gid_t allow_gids[SERVER_MAX_GROUPS]; /* socket peers in these groups too */
	size_t nallow_gids;
	const char *allow_origins[SERVER_MAX_ORIGINS]; /* HTTP Origin values accepted */
	size_t nallow_origins;
	const char *workspace; /* the workspace (default: the current directory) */
	const char *policy;    /* NULL: the built-in policy */
	const char *audit;     /* NULL: the policy's audit.path, if any */
	enum wd_isolation isolation;
	struct wd_limits limits; /* each sandbox's, and the ceiling of what callers ask */
	bool best_effort;
	const char *protect[SERVER_MAX_PROTECT]; /* more protected paths: every jail, the tools */
	size_t nprotect;
	/* --allow-range: every sandbox's egress proxy does not refuse these
	 * loopback or private destinations (admits no host by itself) */
	const char *ranges[SERVER_MAX_RANGES];
	size_t nranges;
	uint64_t disk_bytes; /* a cow sandbox's disk, and the most a caller may ask (0: 1G) */
	/* --image: every sandbox's environment unless a caller chooses
	 * another (NULL: the host's /usr); --allow-image: the others a
	 * caller may choose in sandbox.create */
	const char *image;
	const char *allow_images[SERVER_MAX_IMAGES];
	size_t nallow_images;
	unsigned pool;		 /* --pool: sandboxes kept ready (0: none) */
	bool pool_set;		 /* --pool given: it wins over the policy's sandbox.pool */
	unsigned max_calls;	 /* calls running at once (worker threads) */
	unsigned max_queue;	 /* calls waiting for a worker */
	unsigned max_live;	 /* live sandboxes (sandbox.create) at once */
	size_t max_message;	 /* bytes in one message (line or body) */
	bool sanitize_images;	 /* markdown images to hosts outside network.allow */
	uint64_t session_idle_s; /* an idle HTTP session ends (its sandboxes too) */
	/* SIGTERM: seconds the calls in flight get to finish before they are
	 * cancelled (--drain-timeout) */
	uint64_t drain_timeout_s;
	const char *state_dir; /* --state-dir: sessions, change sets, approvals, the audit log */
	bool log_json;	       /* --log-format json: one JSON object per line */
	bool verbose;
	/* --max-sandboxes given: refused if RLIMIT_NOFILE cannot hold it */
	bool max_live_set;
	/* --await-activation: no workspace, token or tenant policy until
	 * server.activate on the owner's socket (a warm pod) */
	bool await_activation;
};

/* Defaults for every field. */
void server_opts_init(struct server_opts *o);
/* Run until EOF on stdin (with --stdio) or SIGINT/SIGTERM.  Start-up
 * problems are printed on stderr and return 125; 0 after a clean stop. */
int server_run(const struct server_opts *o);

#endif
