/* server_bench: what `warden serve` adds over the library.
 *
 *   server_bench WARDEN [ROUNDS [pool]]
 *
 *   roundtrip   run_command "true" through MCP over stdio, against the
 *               same command through the library in the same process:
 *               wd_ctx_run() (the library's pipelined one-shot, which the
 *               server calls) and, for reference, create + exec + destroy
 *               (a live sandbox used once).  Rounds alternate between the
 *               three, so the machine's load lands on each alike.
 *   concurrent  calls/s with 16 clients, each its own socket connection
 *               calling run_command in a loop; against 16 threads calling
 *               wd_ctx_run() in one process.
 *   rss         the server's resident memory per live sandbox
 *               (sandbox.create) and per idle MCP connection.
 *   first byte  from sending sandbox.run of `sh -c 'echo x; sleep 0.2'`
 *               to its first sandbox.output notification, against the
 *               library's first WD_EVENT_OUTPUT for the same command.
 *   pool        run_command "true" through MCP over stdio to a server with
 *               --pool 2 against one without, rounds alternating between
 *               the two (root only: the pool's condition).  Alone with
 *               `server_bench WARDEN ROUNDS pool`.
 *
 * The command string goes through the policy in every variant (a policy
 * file allowing `true` and `sh`), so both sides decide, audit nothing,
 * build a sandbox, run, tear down.  Prints medians and 90th percentiles;
 * exits 1 if a call failed. */
#include "warden.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *warden;
static char top[] = "/tmp/wd-sbench.XXXXXX";
static char ws[256], policy[256], sock[256];
static int failures;

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double
pct(uint64_t *v, size_t n, double p)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[(size_t)((double)(n - 1) * p)] / 1e6;
}

/* ---- a line client: a pipe pair or a socket ---- */

struct conn {
	int rfd, wfd;
	char buf[1 << 16];
	size_t len;
	pid_t pid;
};

static void
send_line(struct conn *c, const char *s)
{
	size_t n = strlen(s);
	if (write(c->wfd, s, n) != (ssize_t)n || write(c->wfd, "\n", 1) != 1)
		abort();
}

/* The next message (a new jansson object). */
static json_t *
recv_msg(struct conn *c)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (nl) {
			json_error_t je;
			json_t *m = json_loadb(c->buf, (size_t)(nl - c->buf), 0, &je);
			c->len -= (size_t)(nl + 1 - c->buf);
			memmove(c->buf, nl + 1, c->len);
			if (!m)
				abort();
			return m;
		}
		if (c->len == sizeof(c->buf))
			abort();
		ssize_t r = read(c->rfd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (r <= 0) {
			fprintf(stderr, "server_bench: the server went away\n");
			exit(1);
		}
		c->len += (size_t)r;
	}
}

/* Send a request and wait for its answer; notifications are skipped
 * (*first_note, if given, gets the time of the first one). */
static json_t *
call(struct conn *c, int id, const char *method, const char *params, uint64_t *first_note)
{
	char line[1024];
	snprintf(line, sizeof(line),
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}", id, method,
		 params);
	send_line(c, line);
	for (;;) {
		json_t *m = recv_msg(c);
		if (json_object_get(m, "method")) {
			if (first_note && !*first_note)
				*first_note = now_ns();
			json_decref(m);
			continue;
		}
		if (json_integer_value(json_object_get(m, "id")) == id)
			return m;
		json_decref(m);
	}
}

static bool
tool_ok(json_t *m)
{
	json_t *r = json_object_get(m, "result");
	json_t *sc = json_object_get(r, "structuredContent");
	return sc && json_integer_value(json_object_get(sc, "status")) == 0;
}

static void
initialize(struct conn *c)
{
	json_decref(call(c, 0, "initialize",
			 "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
			 "\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}",
			 NULL));
	send_line(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static void
spawn_server(struct conn *c, bool stdio, const char *extra)
{
	int in[2], out[2];
	if (pipe(in) < 0 || pipe(out) < 0)
		abort();
	c->pid = fork();
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		int dn = open("/dev/null", O_WRONLY);
		dup2(dn, 2);
		if (stdio)
			execl(warden, warden, "serve", "--stdio", "-w", ws, "-p", policy,
			      (char *)NULL);
		else
			execl(warden, warden, "serve", "--socket", sock, "-w", ws, "-p", policy,
			      "--max-sandboxes", "200", extra, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->rfd = out[0];
	c->wfd = in[1];
	c->len = 0;
	if (!stdio)
		for (int i = 0; i < 500 && access(sock, F_OK) < 0; i++)
			usleep(10000);
}

static void
stop_server(struct conn *c)
{
	kill(c->pid, SIGTERM);
	waitpid(c->pid, NULL, 0);
	close(c->rfd);
	close(c->wfd);
	unlink(sock);
}

static void
connect_sock(struct conn *c)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		abort();
	c->rfd = c->wfd = fd;
	c->len = 0;
}

/* ---- the library's side ---- */

static wd_ctx *
lib_ctx(void)
{
	struct wd_err e = {0};
	wd_ctx *ctx = NULL;
	if (wd_ctx_new(&ctx, &e) < 0 || wd_ctx_set_policy_file(ctx, policy, &e) < 0) {
		fprintf(stderr, "server_bench: %s\n", e.msg);
		exit(1);
	}
	return ctx;
}

static wd_spec *
lib_spec(void)
{
	struct wd_err e = {0};
	wd_spec *s = wd_spec_new();
	if (wd_spec_set_workspace(s, ws, &e) < 0)
		abort();
	return s;
}

static bool
lib_run(wd_ctx *ctx, const wd_spec *spec, const char *command, bool explicit_sandbox)
{
	struct wd_err e = {0};
	wd_cmd *cmd = wd_cmd_new();
	wd_result *r = NULL;
	wd_cmd_set_command(cmd, command, &e);
	int rc;
	if (explicit_sandbox) {
		wd_sandbox *sb = NULL;
		rc = wd_sandbox_create(ctx, spec, &sb, &e);
		if (rc == 0) {
			rc = wd_sandbox_exec(sb, cmd, &r, &e);
			wd_sandbox_destroy(sb);
		}
	} else {
		rc = wd_ctx_run(ctx, spec, cmd, &r, &e);
	}
	bool ok = rc == 0 && wd_result_status(r) == 0;
	wd_result_free(r);
	wd_cmd_free(cmd);
	return ok;
}

/* ---- 1. round trip ---- */

static void
roundtrip(int rounds)
{
	wd_ctx *ctx = lib_ctx();
	wd_spec *spec = lib_spec();
	struct conn srv;
	spawn_server(&srv, true, NULL);
	initialize(&srv);
	uint64_t *a = calloc((size_t)rounds, 8), *b = calloc((size_t)rounds, 8),
		 *s = calloc((size_t)rounds, 8);
	const char *params = "{\"name\":\"run_command\",\"arguments\":{\"command\":\"true\"}}";
	for (int i = -10; i < rounds; i++) { /* 10 warm-up rounds */
		uint64_t t0 = now_ns();
		failures += !lib_run(ctx, spec, "true", false);
		uint64_t t1 = now_ns();
		failures += !lib_run(ctx, spec, "true", true);
		uint64_t t2 = now_ns();
		json_t *m = call(&srv, i + 100, "tools/call", params, NULL);
		uint64_t t3 = now_ns();
		failures += !tool_ok(m);
		json_decref(m);
		if (i >= 0) {
			a[i] = t1 - t0;
			b[i] = t2 - t1;
			s[i] = t3 - t2;
		}
	}
	double am = pct(a, (size_t)rounds, .5), bm = pct(b, (size_t)rounds, .5),
	       sm = pct(s, (size_t)rounds, .5);
	printf("roundtrip (%d rounds, `true` through the policy; median / p90 ms)\n", rounds);
	printf("  library wd_ctx_run                 %7.3f / %7.3f\n", am,
	       pct(a, (size_t)rounds, .9));
	printf("  library create + exec + destroy    %7.3f / %7.3f\n", bm,
	       pct(b, (size_t)rounds, .9));
	printf("  MCP stdio tools/call run_command   %7.3f / %7.3f\n", sm,
	       pct(s, (size_t)rounds, .9));
	printf("  added by the server over wd_ctx_run: %.3f ms\n", sm - am);
	/* the server's own fixed cost, without a sandbox's noise: ping (the
	 * loop alone) and read_file (a worker hand-off and a file) */
	for (int i = 0; i < rounds; i++) {
		uint64_t t0 = now_ns();
		json_decref(call(&srv, 100000 + i, "ping", "{}", NULL));
		uint64_t t1 = now_ns();
		json_t *m =
		    call(&srv, 200000 + i, "tools/call",
			 "{\"name\":\"read_file\",\"arguments\":{\"path\":\"f.txt\"}}", NULL);
		uint64_t t2 = now_ns();
		failures += json_is_true(json_object_get(json_object_get(m, "result"), "isError"));
		json_decref(m);
		a[i] = t1 - t0;
		b[i] = t2 - t1;
	}
	printf("  ping over MCP stdio (the loop alone) %7.3f / %7.3f\n", pct(a, (size_t)rounds, .5),
	       pct(a, (size_t)rounds, .9));
	printf("  read_file over MCP stdio (a worker)  %7.3f / %7.3f\n", pct(b, (size_t)rounds, .5),
	       pct(b, (size_t)rounds, .9));
	stop_server(&srv);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
	free(a);
	free(b);
	free(s);
}

/* ---- 2. 16 concurrent clients ---- */

#define CLIENTS 16
static atomic_int done_calls;
static int per_client;

static void *
client_main(void *arg)
{
	struct conn *c = arg;
	for (int i = 0; i < per_client; i++) {
		json_t *m =
		    call(c, i + 1, "tools/call",
			 "{\"name\":\"run_command\",\"arguments\":{\"command\":\"true\"}}", NULL);
		if (tool_ok(m))
			atomic_fetch_add(&done_calls, 1);
		json_decref(m);
	}
	return NULL;
}

struct libarg {
	wd_ctx *ctx;
	wd_spec *spec;
};

static void *
lib_main(void *arg)
{
	struct libarg *l = arg;
	for (int i = 0; i < per_client; i++)
		if (lib_run(l->ctx, l->spec, "true", false))
			atomic_fetch_add(&done_calls, 1);
	return NULL;
}

static void
concurrent(int rounds)
{
	per_client = rounds / 4 > 10 ? rounds / 4 : 10;
	struct conn srv, cl[CLIENTS];
	pthread_t th[CLIENTS];
	spawn_server(&srv, false, "--max-calls=64");
	for (int i = 0; i < CLIENTS; i++) {
		connect_sock(&cl[i]);
		initialize(&cl[i]);
	}
	atomic_store(&done_calls, 0);
	uint64_t t0 = now_ns();
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&th[i], NULL, client_main, &cl[i]);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(th[i], NULL);
	double srv_s = (double)(now_ns() - t0) / 1e9;
	int srv_done = atomic_load(&done_calls);
	for (int i = 0; i < CLIENTS; i++)
		close(cl[i].rfd);
	stop_server(&srv);

	wd_ctx *ctx = lib_ctx();
	struct libarg la = {ctx, lib_spec()};
	atomic_store(&done_calls, 0);
	t0 = now_ns();
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&th[i], NULL, lib_main, &la);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(th[i], NULL);
	double lib_s = (double)(now_ns() - t0) / 1e9;
	int lib_done = atomic_load(&done_calls);
	wd_spec_free(la.spec);
	wd_ctx_free(ctx);
	int want = CLIENTS * per_client;
	failures += (srv_done != want) + (lib_done != want);
	printf("concurrent (%d clients x %d calls of `true`)\n", CLIENTS, per_client);
	printf("  server, 16 socket connections      %7.1f calls/s (%d ok)\n", srv_done / srv_s,
	       srv_done);
	printf("  library, 16 threads wd_ctx_run     %7.1f calls/s (%d ok)\n", lib_done / lib_s,
	       lib_done);
	printf("  server / library                   %7.2f\n",
	       (srv_done / srv_s) / (lib_done / lib_s));
}

/* ---- 3. resident memory ---- */

static long
rss_kib(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

static void
rss(void)
{
	enum { LIVE = 100, CONNS = 100 };
	struct conn srv, c, extra[CONNS];
	spawn_server(&srv, false, "--max-calls=64");
	connect_sock(&c);
	json_decref(call(&c, 1, "sandbox.create", "{}", NULL)); /* warm: keeper, workers */
	usleep(200000);
	long before = rss_kib(srv.pid);
	for (int i = 0; i < LIVE; i++) {
		json_t *m = call(&c, 10 + i, "sandbox.create", "{}", NULL);
		failures += !json_object_get(m, "result");
		json_decref(m);
	}
	usleep(200000);
	long after = rss_kib(srv.pid);
	for (int i = 0; i < CONNS; i++) {
		connect_sock(&extra[i]);
		initialize(&extra[i]);
	}
	usleep(200000);
	long conns = rss_kib(srv.pid);
	printf("rss of the server (VmRSS)\n");
	printf("  after one sandbox                  %7ld KiB\n", before);
	printf("  per live sandbox (%d more)        %7.1f KiB\n", LIVE,
	       (double)(after - before) / LIVE);
	printf("  per idle MCP connection (%d)      %7.1f KiB\n", CONNS,
	       (double)(conns - after) / CONNS);
	for (int i = 0; i < CONNS; i++)
		close(extra[i].rfd);
	close(c.rfd);
	stop_server(&srv);
}

/* ---- 4. first byte of streamed output ---- */

static _Atomic uint64_t lib_first;

static void
on_event(const wd_event *ev, void *data)
{
	uint64_t zero = 0;
	if (wd_event_kind(ev) == WD_EVENT_OUTPUT)
		atomic_compare_exchange_strong(&lib_first, &zero, now_ns());
	(void)data;
}

static void
first_byte(int rounds)
{
	rounds = rounds / 4 > 10 ? rounds / 4 : 10;
	wd_ctx *ctx = lib_ctx();
	wd_ctx_set_event_handler(ctx, on_event, NULL, WD_EVENT_BIT(WD_EVENT_OUTPUT));
	wd_spec *spec = lib_spec();
	struct conn srv, c;
	spawn_server(&srv, false, "--max-calls=64");
	connect_sock(&c);
	uint64_t *l = calloc((size_t)rounds, 8), *s = calloc((size_t)rounds, 8);
	const char *cmd = "sh -c 'echo x; sleep 0.2'";
	char params[256];
	snprintf(params, sizeof(params), "{\"command\":\"%s\",\"stream\":true}",
		 "sh -c 'echo x; sleep 0.2'");
	for (int i = -3; i < rounds; i++) {
		atomic_store(&lib_first, 0);
		uint64_t t0 = now_ns();
		failures += !lib_run(ctx, spec, cmd, true);
		uint64_t t1 = now_ns(), first = 0;
		json_t *m = call(&c, 100 + i, "sandbox.run", params, &first);
		failures += json_integer_value(
				json_object_get(json_object_get(m, "result"), "status")) != 0;
		json_decref(m);
		if (i >= 0) {
			l[i] = atomic_load(&lib_first) - t0;
			s[i] = first - t1;
		}
	}
	double lm = pct(l, (size_t)rounds, .5), sm = pct(s, (size_t)rounds, .5);
	printf("first byte of streamed output (%d rounds; median / p90 ms from the call)\n",
	       rounds);
	printf("  library WD_EVENT_OUTPUT            %7.3f / %7.3f\n", lm,
	       pct(l, (size_t)rounds, .9));
	printf("  server sandbox.output notification %7.3f / %7.3f\n", sm,
	       pct(s, (size_t)rounds, .9));
	printf("  added by the server                %7.3f\n", sm - lm);
	close(c.rfd);
	stop_server(&srv);
	wd_spec_free(spec);
	wd_ctx_free(ctx);
	free(l);
	free(s);
}

/* ---- 5. the warm pool ---- */

/* A stdio server with --pool pool, its stderr into errpath.  The pipes
 * are close-on-exec (dup2 clears it on 0 and 1): a second server must not
 * hold the first one's stdin open, or closing it would not stop it. */
static void
spawn_stdio(struct conn *c, const char *pool, const char *errpath)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		abort();
	c->pid = fork();
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		int ef = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		dup2(ef, 2);
		execl(warden, warden, "serve", "--stdio", "-w", ws, "-p", policy, "--pool", pool,
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->rfd = out[0];
	c->wfd = in[1];
	c->len = 0;
}

static void
pool_roundtrip(int rounds)
{
	if (geteuid() != 0) {
		printf("pool: skipped (the warm pool needs root)\n");
		return;
	}
	char errs[2][300];
	struct conn srv[2]; /* [0] fresh sandboxes, [1] --pool 2 */
	for (int k = 0; k < 2; k++) {
		snprintf(errs[k], sizeof(errs[k]), "%s/serve%d.err", top, k);
		spawn_stdio(&srv[k], k ? "2" : "0", errs[k]);
		initialize(&srv[k]);
	}
	uint64_t *v[2] = {calloc((size_t)rounds, 8), calloc((size_t)rounds, 8)};
	const char *params = "{\"name\":\"run_command\",\"arguments\":{\"command\":\"true\"}}";
	int pooled = 0;
	for (int i = -10; i < rounds; i++) { /* 10 warm-up rounds */
		for (int k = 0; k < 2; k++) {
			uint64_t t0 = now_ns();
			json_t *m = call(&srv[k], i + 100, "tools/call", params, NULL);
			uint64_t t1 = now_ns();
			failures += !tool_ok(m);
			json_t *sc =
			    json_object_get(json_object_get(m, "result"), "structuredContent");
			pooled += k == 1 && i >= 0 && json_is_true(json_object_get(sc, "pooled"));
			json_decref(m);
			if (i >= 0)
				v[k][i] = t1 - t0;
		}
	}
	double fm = pct(v[0], (size_t)rounds, .5), pm = pct(v[1], (size_t)rounds, .5);
	printf("pool (%d rounds alternating, run_command `true` over MCP stdio; median / p90 ms)\n",
	       rounds);
	printf("  fresh sandbox (no --pool)          %7.3f / %7.3f\n", fm,
	       pct(v[0], (size_t)rounds, .9));
	printf("  --pool 2                           %7.3f / %7.3f  (%d of %d pooled)\n", pm,
	       pct(v[1], (size_t)rounds, .9), pooled, rounds);
	printf("  pooled / fresh                     %7.2fx\n", pm / fm);
	for (int k = 0; k < 2; k++) {
		close(srv[k].wfd); /* EOF on stdin: a clean stop, stats logged */
		waitpid(srv[k].pid, NULL, 0);
		close(srv[k].rfd);
	}
	char line[512];
	FILE *ef = fopen(errs[1], "r");
	while (ef && fgets(line, sizeof(line), ef))
		if (strstr(line, "pool: size"))
			printf("  %s", line);
	if (ef)
		fclose(ef);
	free(v[0]);
	free(v[1]);
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: server_bench WARDEN [ROUNDS [pool]]\n");
		return 2;
	}
	warden = argv[1];
	int rounds = argc > 2 ? atoi(argv[2]) : 200;
	if (!mkdtemp(top))
		return 1;
	snprintf(ws, sizeof(ws), "%s/ws", top);
	snprintf(policy, sizeof(policy), "%s/policy.json", top);
	snprintf(sock, sizeof(sock), "%s/s.sock", top);
	mkdir(ws, 0755);
	chmod(top, 0755);
	char fpath[300];
	snprintf(fpath, sizeof(fpath), "%s/f.txt", ws);
	FILE *ff = fopen(fpath, "w");
	fputs("hello\n", ff);
	fclose(ff);
	FILE *f = fopen(policy, "w");
	fputs("{\"version\": 1, \"programs\": {\"true\": {}, \"sh\": {\"interpreter\": true,"
	      " \"paths\": \"none\"}}}\n",
	      f);
	fclose(f);
	char state[300];
	snprintf(state, sizeof(state), "%s/state", top);
	setenv("WARDEN_STATE_DIR", state, 1);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 3 && !strcmp(argv[3], "pool")) {
		pool_roundtrip(rounds);
	} else {
		roundtrip(rounds);
		concurrent(rounds);
		rss();
		first_byte(rounds);
		pool_roundtrip(rounds);
	}
	char rm[400];
	snprintf(rm, sizeof(rm), "rm -rf %s", top);
	if (system(rm) != 0)
		return 1;
	if (failures)
		printf("server_bench: %d call(s) failed\n", failures);
	return failures ? 1 : 0;
}
