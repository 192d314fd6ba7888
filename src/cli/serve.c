/* cli/serve: warden serve [OPTIONS] (--stdio | --socket PATH | --listen ADDR:PORT)...
 *
 * Parse the options into struct server_opts and hand over to src/server
 * (docs/server.md). */
#include "cli/cli.h"
#include "server/server.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: warden serve [OPTIONS] (--stdio | --socket PATH | --listen ADDR:PORT)...\n"
    "\n"
    "Serve MCP (for agents) and JSON-RPC 2.0 (for harnesses): commands run in sandboxes\n"
    "behind the policy, file tools run in warden on the workspace (docs/server.md).\n"
    "\n"
    "Transports (any combination):\n"
    "      --stdio              newline-delimited JSON-RPC on stdin/stdout (an MCP\n"
    "                           client starts warden); EOF on stdin stops the server\n"
    "      --socket PATH        a unix socket, created 0600; the owner's connections may\n"
    "                           grant approvals (approval.grant)\n"
    "      --allow-group GROUP  also accept socket connections from GROUP's members\n"
    "      --listen ADDR:PORT   MCP Streamable HTTP at http://ADDR:PORT/mcp (loopback)\n"
    "      --token-file FILE    the bearer token for --listen (a file only you can read;\n"
    "                           symbolic links followed, as in a Secret volume)\n"
    "      --behind-tls-proxy   allow a non-loopback --listen: a proxy in front ends TLS\n"
    "      --allow-origin URL   an HTTP Origin to accept besides loopback ones\n"
    "Sandboxes:\n"
    "  -w, --workspace DIR      the workspace (default: .)\n"
    "  -p, --policy FILE        the policy, or preset:coding|python|node (default:\n"
    "                           the built-in policy)\n"
    "      --audit FILE         append every decision and result to FILE\n"
    "      --isolation LEVEL    container (default), process or gvisor\n"
    "      --memory SIZE  --pids N  --cpus N  --tmp-size SIZE\n"
    "      --timeout SECONDS    per command; also the most a caller may ask (default 30)\n"
    "      --output-limit SIZE  bytes kept per stream (default 64K)\n"
    "      --best-effort        run where the limits cannot be enforced\n"
    "      --protect PATH       keep PATH (relative to the workspace) read-only in every\n"
    "                           sandbox and to the file tools, like .git\n"
    "      --allow-range CIDR   egress to loopback or private addresses in CIDR is not\n"
    "                           refused (repeatable; admits no host by itself: the\n"
    "                           policy's network.allow names hosts; docs/network.md)\n"
    "      --disk SIZE          a cow sandbox's disk (sandbox.create's workspace_mode\n"
    "                           \"cow\"), and the most a caller may ask (default 1G;\n"
    "                           root, else only with --best-effort: no bound)\n"
    "      --pool N             keep N sandboxes built ahead for run_command and\n"
    "                           sandbox.run (0-64; default: the policy's sandbox.pool,\n"
    "                           else 0); container level, as root\n"
    "      --image NAME         every sandbox runs in image NAME (warden image ls)\n"
    "                           unless a caller chooses another; the pool's too\n"
    "      --allow-image NAME   sandbox.create / sandbox_create may also choose\n"
    "                           image NAME (repeatable)\n"
    "Server:\n"
    "      --max-calls N        calls running at once (default 64)\n"
    "      --max-queue N        calls waiting for a worker (default 4096)\n"
    "      --max-sandboxes N    live sandboxes from sandbox.create (default 64)\n"
    "      --max-message SIZE   bytes in one message (default 16M)\n"
    "      --session-idle SECS  an idle HTTP session, or a named socket session with no\n"
    "                           connection, ends with its sandboxes (default 1800)\n"
    "      --drain-timeout SECS on SIGTERM the calls in flight get SECS to finish,\n"
    "                           then are cancelled (default 20; 0: cancel at once)\n"
    "      --state-dir DIR      sessions, change sets, approvals and (without --audit)\n"
    "                           DIR/audit.log under DIR (default: WARDEN_STATE_DIR)\n"
    "      --log-format FORMAT  text (default, stderr) or json (one object per line\n"
    "                           on stdout; stderr with --stdio)\n"
    "      --sanitize-images    neutralise markdown images to hosts outside the\n"
    "                           policy's network.allow in text for the model\n"
    "  -v, --verbose            log each call\n";

enum {
	OPT_STDIO = 256,
	OPT_SOCKET,
	OPT_ALLOW_GROUP,
	OPT_LISTEN,
	OPT_TOKEN_FILE,
	OPT_BEHIND_PROXY,
	OPT_ALLOW_ORIGIN,
	OPT_AUDIT,
	OPT_ISOLATION,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPUS,
	OPT_TMP_SIZE,
	OPT_TIMEOUT,
	OPT_OUTPUT_LIMIT,
	OPT_BEST_EFFORT,
	OPT_PROTECT,
	OPT_ALLOW_RANGE,
	OPT_DISK,
	OPT_POOL,
	OPT_IMAGE,
	OPT_ALLOW_IMAGE,
	OPT_MAX_CALLS,
	OPT_MAX_QUEUE,
	OPT_MAX_SANDBOXES,
	OPT_MAX_MESSAGE,
	OPT_SESSION_IDLE,
	OPT_SANITIZE_IMAGES,
	OPT_DRAIN_TIMEOUT,
	OPT_STATE_DIR,
	OPT_LOG_FORMAT,
	OPT_AWAIT_ACTIVATION,
	OPT_HELP,
};

static const struct option long_opts[] = {
    {"stdio", no_argument, NULL, OPT_STDIO},
    {"socket", required_argument, NULL, OPT_SOCKET},
    {"allow-group", required_argument, NULL, OPT_ALLOW_GROUP},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"behind-tls-proxy", no_argument, NULL, OPT_BEHIND_PROXY},
    {"allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN},
    {"workspace", required_argument, NULL, 'w'},
    {"policy", required_argument, NULL, 'p'},
    {"audit", required_argument, NULL, OPT_AUDIT},
    {"isolation", required_argument, NULL, OPT_ISOLATION},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"tmp-size", required_argument, NULL, OPT_TMP_SIZE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
    {"best-effort", no_argument, NULL, OPT_BEST_EFFORT},
    {"protect", required_argument, NULL, OPT_PROTECT},
    {"allow-range", required_argument, NULL, OPT_ALLOW_RANGE},
    {"disk", required_argument, NULL, OPT_DISK},
    {"pool", required_argument, NULL, OPT_POOL},
    {"image", required_argument, NULL, OPT_IMAGE},
    {"allow-image", required_argument, NULL, OPT_ALLOW_IMAGE},
    {"max-calls", required_argument, NULL, OPT_MAX_CALLS},
    {"max-queue", required_argument, NULL, OPT_MAX_QUEUE},
    {"max-sandboxes", required_argument, NULL, OPT_MAX_SANDBOXES},
    {"max-message", required_argument, NULL, OPT_MAX_MESSAGE},
    {"session-idle", required_argument, NULL, OPT_SESSION_IDLE},
    {"sanitize-images", no_argument, NULL, OPT_SANITIZE_IMAGES},
    {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"await-activation", no_argument, NULL, OPT_AWAIT_ACTIVATION},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static int
bad(const char *opt, const char *val, const char *why)
{
	return cli_fail("serve", "--%s: invalid value %s: %s", opt, cli_quote(val), why);
}

static int
number(const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out)
{
	char why[80];
	snprintf(why, sizeof(why), "expected a whole number from %llu to %llu",
		 (unsigned long long)min, (unsigned long long)max);
	if (wd_parse_u64(val, out) < 0 || *out < min || *out > max)
		return bad(opt, val, why);
	return 0;
}

static int
size(const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out)
{
	int rc = wd_parse_size(val, out);
	if (rc < 0)
		return bad(opt, val, "expected a size such as 512M, 1G or 65536 (binary units)");
	if (*out < min || *out > max)
		return bad(opt, val, "out of range");
	return 0;
}

static int
group(struct server_opts *o, const char *val)
{
	if (o->nallow_gids == SERVER_MAX_GROUPS)
		return bad("allow-group", val, "too many groups");
	struct group *g = getgrnam(val);
	uint64_t gid;
	if (g)
		o->allow_gids[o->nallow_gids++] = g->gr_gid;
	else if (wd_parse_u64(val, &gid) == 0 && gid < 0xffffffffu)
		o->allow_gids[o->nallow_gids++] = (gid_t)gid;
	else
		return bad("allow-group", val, "no such group");
	return 0;
}

/* --protect: checked now, in the form every sandbox's spec takes it */
static int
protect_opt(struct server_opts *o, const char *name, const char *val)
{
	struct wd_err e = {0};
	wd_spec *probe = wd_spec_new();
	int rc = wd_spec_add_protected(probe, val, &e);
	wd_spec_free(probe);
	if (rc < 0)
		return bad(name, val, e.msg);
	if (o->nprotect == SERVER_MAX_PROTECT)
		return bad(name, val, "too many protected paths");
	o->protect[o->nprotect++] = val;
	return 0;
}

/* --allow-range: checked now by the network layer's own parser, in the
 * form every sandbox's spec takes it, so a bad range stops the server
 * before it serves (125) rather than failing each run */
static int
range_opt(struct server_opts *o, const char *name, const char *val)
{
	struct wd_err e = {0};
	wd_spec *probe = wd_spec_new();
	int rc = wd_spec_add_net_rule(probe, WD_NET_RANGE, val, &e);
	wd_spec_free(probe);
	if (rc < 0)
		return bad(name, val, e.msg);
	if (o->nranges == SERVER_MAX_RANGES)
		return bad(name, val, "too many ranges");
	o->ranges[o->nranges++] = val;
	return 0;
}

static int
limit_opt(int c, const char *name, const char *val, struct server_opts *o)
{
	uint64_t v;
	int rc;
	struct wd_limits *l = &o->limits;
	switch (c) {
	case OPT_MEMORY:
		return size(name, val, 4 << 20, 1ull << 50, &l->memory_bytes);
	case OPT_TMP_SIZE:
		return size(name, val, 64 << 10, 1ull << 50, &l->tmp_bytes);
	case OPT_OUTPUT_LIMIT:
		return size(name, val, 64, 16 << 20, &l->output_limit);
	case OPT_PIDS:
		return number(name, val, 1, 4194304, &l->pids);
	case OPT_CPUS:
		rc = wd_parse_fixed6(val, &v);
		if (rc < 0 || v < 10000 || v > 1024000000)
			return bad(name, val, "expected a number of CPUs from 0.01 to 1024");
		l->cpu_millionths = v;
		return 0;
	case OPT_TIMEOUT:
		rc = wd_parse_fixed6(val, &v);
		if (rc < 0 || v % 1000 || v < 1000 || v > 86400ull * 1000000)
			return bad(name, val, "expected seconds such as 30 or 0.5 (1 ms to a day)");
		l->timeout_ms = v / 1000;
		return 0;
	}
	return -1;
}

static int
server_opt(int c, const char *name, const char *val, struct server_opts *o)
{
	uint64_t v;
	int rc;
	switch (c) {
	case OPT_MAX_CALLS:
		rc = number(name, val, 1, 1024, &v);
		o->max_calls = (unsigned)v;
		return rc;
	case OPT_MAX_QUEUE:
		rc = number(name, val, 1, 1000000, &v);
		o->max_queue = (unsigned)v;
		return rc;
	case OPT_MAX_SANDBOXES:
		/* what RLIMIT_NOFILE and the host's pids allow is checked at
		 * start (check_fd_room) and at each create: 5,000 fit here */
		rc = number(name, val, 1, 65536, &v);
		o->max_live = (unsigned)v;
		o->max_live_set = true;
		return rc;
	case OPT_MAX_MESSAGE:
		rc = size(name, val, 4096, 1ull << 30, &v);
		o->max_message = (size_t)v;
		return rc;
	case OPT_SESSION_IDLE:
		return number(name, val, 1, 7 * 86400, &o->session_idle_s);
	case OPT_DRAIN_TIMEOUT:
		return number(name, val, 0, 86400, &o->drain_timeout_s);
	case OPT_STATE_DIR:
		if (!val[0])
			return bad(name, val, "empty path");
		o->state_dir = val;
		return 0;
	case OPT_LOG_FORMAT:
		if (strcmp(val, "text") && strcmp(val, "json"))
			return bad(name, val, "expected text or json");
		o->log_json = !strcmp(val, "json");
		return 0;
	case OPT_POOL:
		/* 64: the library's limit (wd_pool_new) */
		rc = number(name, val, 0, 64, &v);
		o->pool = (unsigned)v;
		o->pool_set = true;
		return rc;
	}
	return -1;
}

/* A socket path that is empty or directly in / is what a shell passes for
 * --socket "$XDG_RUNTIME_DIR/warden.sock" with the variable unset or
 * empty: refused, never bound as /warden.sock (root would create it in the
 * host's root directory, where every user looks; an ordinary user would
 * fail with a bare EACCES that does not say why). */
static int
socket_path_ok(const char *name, const char *val)
{
	static const char hint[] = "give a path in a directory of yours, e.g. --socket "
				   "\"${XDG_RUNTIME_DIR:-$HOME}/warden.sock\"";
	char why[200];
	if (!val[0]) {
		snprintf(why, sizeof(why), "empty path (an unset variable?); %s", hint);
		return bad(name, val, why);
	}
	const char *slash = strrchr(val, '/');
	char dir[PATH_MAX], real[PATH_MAX];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)(slash - val) >= sizeof(dir))
		return 0; /* too long for a directory: bind() says so */
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - val), val);
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	if (slash && !slash[1]) {
		snprintf(why, sizeof(why), "a directory, not a socket file; %s", hint);
		return bad(name, val, why);
	}
	/* The directory as the kernel will resolve it (., .., links): one
	 * that does not exist yet is left to bind(), which names it. */
	if (realpath(dir, real) && !strcmp(real, "/")) {
		snprintf(why, sizeof(why),
			 "a socket directly in / (an unset variable such as $XDG_RUNTIME_DIR?); %s",
			 hint);
		return bad(name, val, why);
	}
	return 0;
}

static int
one_opt(int c, const char *name, const char *val, struct server_opts *o)
{
	int rc;
	if ((rc = limit_opt(c, name, val, o)) >= 0 || (rc = server_opt(c, name, val, o)) >= 0)
		return rc;
	switch (c) {
	case OPT_STDIO:
		o->stdio = true;
		return 0;
	case OPT_SOCKET:
		o->socket_path = val;
		return socket_path_ok(name, val);
	case OPT_ALLOW_GROUP:
		return group(o, val);
	case OPT_LISTEN:
		o->listen = val;
		return 0;
	case OPT_TOKEN_FILE:
		o->token_file = val;
		return 0;
	case OPT_BEHIND_PROXY:
		o->behind_proxy = true;
		return 0;
	case OPT_ALLOW_ORIGIN:
		if (o->nallow_origins == SERVER_MAX_ORIGINS)
			return bad(name, val, "too many origins");
		if (strncmp(val, "http://", 7) && strncmp(val, "https://", 8))
			return bad(name, val, "expected an origin such as https://app.example");
		o->allow_origins[o->nallow_origins++] = val;
		return 0;
	case 'w':
		o->workspace = val;
		return 0;
	case 'p':
		o->policy = val;
		return 0;
	case OPT_AUDIT:
		o->audit = val;
		return 0;
	case OPT_ISOLATION:
		if (wd_isolation_parse(val, &o->isolation) < 0)
			return bad(name, val, "expected container, process or gvisor");
		return 0;
	case OPT_BEST_EFFORT:
		o->best_effort = true;
		return 0;
	case OPT_PROTECT:
		return protect_opt(o, name, val);
	case OPT_ALLOW_RANGE:
		return range_opt(o, name, val);
	case OPT_DISK:
		return size(name, val, 32 << 20, 1ull << 50, &o->disk_bytes);
	case OPT_SANITIZE_IMAGES:
		o->sanitize_images = true;
		return 0;
	/* the names are looked up in the store when the server starts
	 * (server.c: 125 naming the option for one that is not there) */
	case OPT_IMAGE:
		if (o->image)
			return bad(name, val, "given twice (one default; --allow-image adds more)");
		o->image = val;
		return 0;
	case OPT_ALLOW_IMAGE:
		if (o->nallow_images == SERVER_MAX_IMAGES)
			return bad(name, val, "too many images");
		o->allow_images[o->nallow_images++] = val;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	case OPT_AWAIT_ACTIVATION:
		o->await_activation = true;
		return 0;
	}
	return -1;
}

/* --await-activation: what the activation brings may not be given now
 * (one source for each), and the owner's socket must exist, as the
 * activation arrives there and nowhere else. */
static int
check_await(const struct server_opts *o)
{
	if (!o->await_activation)
		return 0;
	if (!o->socket_path)
		return cli_fail("serve", "--await-activation needs --socket PATH: the activation "
					 "arrives on the owner's socket");
	if (o->stdio)
		return cli_fail("serve", "--await-activation: not with --stdio (a model's "
					 "channel, with no owner's socket behind it)");
	if (o->workspace)
		return cli_fail("serve", "--await-activation: --workspace is the activation's "
					 "(server.activate's \"workspace\")");
	if (o->token_file)
		return cli_fail("serve", "--await-activation: --token-file is the activation's "
					 "(server.activate's \"token\")");
	return 0;
}

/* Options that only make sense together. */
static int
check(const struct server_opts *o, int extra)
{
	if (extra)
		return cli_fail("serve", "unexpected argument (warden serve takes only options)");
	if (!o->stdio && !o->socket_path && !o->listen)
		return cli_fail("serve", "no transport: give --stdio, --socket PATH or --listen "
					 "ADDR:PORT (see warden serve --help)");
	int rc = check_await(o);
	if (rc)
		return rc;
	if (o->listen && !o->token_file && !o->await_activation)
		return cli_fail("serve", "--listen needs --token-file FILE: HTTP clients are "
					 "authenticated with a bearer token");
	if (o->token_file && !o->listen)
		return cli_fail("serve", "--token-file is for --listen");
	if ((o->behind_proxy || o->nallow_origins) && !o->listen)
		return cli_fail("serve", "--behind-tls-proxy and --allow-origin are for --listen");
	if (o->nallow_gids && !o->socket_path)
		return cli_fail("serve", "--allow-group is for --socket");
	/* a bound asked for and not enforced fails closed, as a session's
	 * --disk does: an ordinary user's cow sandboxes have no disk */
	if (o->disk_bytes && geteuid() != 0 && !o->best_effort)
		return cli_fail("serve",
				"--disk needs root (a loop device and an ext4 mount); as "
				"an ordinary user a cow sandbox's layers are a directory "
				"in your state directory, bounded only by its file system: "
				"drop --disk, or add --best-effort to serve without the "
				"bound");
	return 0;
}

int
cli_serve(int argc, char **argv)
{
	struct server_opts o;
	server_opts_init(&o);
	int c, rc;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:w:p:v", long_opts, NULL)) != -1) {
		const char *name = NULL;
		for (const struct option *lo = long_opts; lo->name; lo++)
			if (lo->val == c)
				name = lo->name;
		if (c == OPT_HELP) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (c == ':' || c == '?')
			return cli_bad_option("serve", argc, argv, long_opts);
		if ((rc = one_opt(c, name, optarg, &o)))
			return rc;
	}
	if ((rc = check(&o, argc - optind)))
		return rc;
	/* --state-dir for every part of the library that finds the state
	 * directory itself (approvals, images): set before any thread */
	if (o.state_dir && setenv("WARDEN_STATE_DIR", o.state_dir, 1) < 0)
		return cli_fail("serve", "--state-dir: %s", strerror(errno));
	return server_run(&o);
}
