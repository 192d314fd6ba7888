/* supervise: spawning, pipes, bounded capture, timeouts, the result. */
#ifndef WD_SUPERVISE_H
#define WD_SUPERVISE_H

#include "util/util.h"

struct net_rules;

struct spec_bind {
	char *src, *dst;
	bool rw;
};

struct wd_spec {
	char **argv; /* NULL-terminated */
	int argc;
	char *workspace;
	enum wd_isolation isolation;
	struct wd_limits lim; /* defaults filled in */
	struct spec_bind *binds;
	size_t nbinds;
	char **env; /* NAME=VALUE */
	size_t nenv;
	uint16_t *ports;
	size_t nports;
	int stdin_fd;
	int stream_fd[3]; /* [1] stdout, [2] stderr */
	char *term;
	/* network: proxy mode, its rules (net/net.h), interception */
	enum wd_net_mode net;
	struct net_rules *net_rules;
	bool tls_intercept;
	char *upstream_ca;
	wd_event_fn event_fn;
	void *event_data;
};

/* ---- bounded capture: head + tail windows, constant memory ----
 * The first cap/2 bytes are kept (and streamed as they arrive), the last
 * cap/2 bytes live in a ring; everything between is counted, not kept. */
struct capture {
	char *head;
	size_t head_cap, head_len;
	char *ring;
	size_t ring_cap, ring_start, ring_len;
	uint64_t total;
	int stream_fd; /* -1: keep only */
	int stream;    /* 1 or 2, for the marker text */
	/* Streaming never blocks past the deadline or a signal (abort_fd
	 * readable): a reader that stalls only loses the live copy. */
	uint64_t deadline_ns;
	int abort_fd;
};

void capture_init(struct capture *c, uint64_t limit, int stream, int stream_fd);
void capture_fini(struct capture *c);
void capture_feed(struct capture *c, const char *buf, size_t n);
uint64_t capture_omitted(const struct capture *c);
/* The kept window with the marker line where bytes were cut: a new string
 * (free with free()), its length in *len. */
char *capture_window(const struct capture *c, size_t *len);
/* Stream what is still unstreamed (marker + tail) to stream_fd. */
void capture_flush(struct capture *c);
/* The marker line for n omitted bytes (a new string), with a leading
 * newline unless the kept head ends a line. */
char *capture_marker(int stream, uint64_t omitted, bool at_line_start);

struct wd_result {
	int status;
	int exit_code; /* -1 when signalled */
	int signal;
	bool timed_out, oom_killed;
	char *out[3];
	size_t out_len[3];
	uint64_t total[3], omitted[3];
	uint64_t wall_ns, cpu_ns, peak_memory;
	/* protections in force */
	enum wd_isolation isolation;
	bool seccomp;
	int landlock_abi;
	int cgroup_version; /* 0 none */
	bool idmapped;
	bool bounding_dropped; /* false: unprivileged process level */
	bool net_proxy;
	bool tls_intercept;
	uint64_t net_requests, net_refused, net_dns, net_bytes;
	unsigned host_uid;
	char sandbox_id[17];
};

/* One JSON object for a proxy or DNS decision (a new string). */
struct net_event;
char *result_net_event_json(const struct net_event *ev);

#endif
