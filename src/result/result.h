/* result: the public result object (wd_result, include/warden.h): its
 * accessors and --json object (result.c), and the same result across a
 * process boundary (result_wire.c: a session's monitor to its caller).
 *
 * Below supervise (whose backends fill results) and above jail (a failed
 * set-up step's name, jail_step_name), net (a refusal's protocol and
 * reason names, a network event's members) and policy (the decision a
 * result owns): it only holds and writes data. */
#ifndef WD_RESULT_H
#define WD_RESULT_H

#include "util/util.h"

struct net_event;
struct json_t;
struct jw;

/* One distinct network refusal (host, port, protocol, reason, rule): what a
 * run or exec prints at its end and lists in its result, so the reason is
 * not only in a 403's header. */
struct net_refusal {
	char *host, *rule, *advice; /* owned; rule and advice may be NULL */
	char proto[8], reason[32];  /* net_proto_name, net_reason_name */
	unsigned port;
	uint64_t count; /* times refused in this sandbox so far */
	uint64_t seq;	/* the sandbox's refusal counter at the last one */
};
#define NET_REFUSALS_MAX 16
void net_refusal_fini(struct net_refusal *f);
/* r->net_refusal_lines from r->net_refusals. */
void result_refusal_lines(struct wd_result *r);
void result_refusals_write(struct jw *w, const struct wd_result *r);

struct wd_result {
	enum wd_outcome outcome;
	int status;
	int exit_code; /* -1 when signalled */
	int signal;
	bool timed_out, oom_killed;
	int exec_errno; /* execve or a step of the command's set-up failed */
	int exec_step;
	char *out[3];
	size_t out_len[3];
	uint64_t total[3], omitted[3];
	uint64_t wall_ns, cpu_ns, peak_memory;
	/* protections in force, filled by the backend's describe */
	enum wd_isolation isolation;
	unsigned namespaces; /* RESULT_NS_*: the namespaces the command runs in */
	int uid;	     /* the command's uid as it sees it */
	const char *network; /* "loopback", "proxy" or "host" (a static string) */
	/* a user-space kernel: its runtime, version, platform ("" otherwise) */
	char runtime[16], runtime_version[48], platform[16];
	/* gvisor: how the command was started: "resident" (the session's
	 * executor), "runsc-exec", "runsc-run" (one-shot); else "" */
	char exec_path[16];
	bool seccomp;
	int landlock_abi;
	int cgroup_version; /* 0 none */
	bool idmapped;
	bool bounding_dropped; /* false: unprivileged process level */
	bool time_ns;
	bool net_proxy;
	bool tls_intercept;
	uint64_t net_requests, net_refused, net_dns, net_bytes;
	/* the distinct refusals of this command (at most NET_REFUSALS_MAX;
	 * net_refusals_more: distinct ones past that) */
	struct net_refusal *net_refusals;
	size_t n_net_refusals;
	uint64_t net_refusals_more;
	/* the refusals' network events went to another process's trail (a
	 * session's monitor): the audit trail's result lists them itself */
	bool refusals_unaudited;
	char **net_refusal_lines; /* one escaped line each, for a human */
	unsigned host_uid;
	char sandbox_id[17];
	/* the policy stage */
	wd_decision *decision; /* owned; NULL: off */
	char policy[65];       /* "off" or the digest */
	char *refusal;	       /* why nothing ran, when no decision says it */
};

/* wd_result.namespaces bits */
#define RESULT_NS_USER 0x1u
#define RESULT_NS_MOUNT 0x2u
#define RESULT_NS_PID 0x4u
#define RESULT_NS_NET 0x8u
#define RESULT_NS_IPC 0x10u
#define RESULT_NS_UTS 0x20u
#define RESULT_NS_CGROUP 0x40u
#define RESULT_NS_TIME 0x80u

wd_result *result_new(const char *sandbox_id);
/* Write the result as one JSON object into w (with_data: the output
 * windows; the audit trail keeps only the counts). */
void result_write(struct jw *w, const wd_result *r, bool with_data);

/* A result across a process boundary (result_wire.c): every field by
 * name into w; back from the object with the output windows apart. */
void result_wire_write(struct jw *w, const wd_result *r);
wd_result *result_wire_read(struct json_t *o, const char *out, size_t out_len, const char *err,
			    size_t err_len);

/* One JSON object for a proxy or DNS decision (compat: spec event handler). */
char *result_net_event_json(const struct net_event *ev);
void result_net_members(struct jw *w, const struct net_event *ev);

#endif
