/* test_dispatch.c - warden serve's dispatch in-process: server_run() over
 * a socketpair as its stdio, in a forked child, with the fake backend
 * behind the seam.  JSON-RPC errors with the right codes and ids, MCP's
 * initialize and tools/list, tools/call's argument checks, and
 * run_command reaching the backend through the library's one door (or
 * not at all when the policy refuses it).  Replies are awaited (poll with
 * a generous deadline), never timed. */
#include "fake_backend.h"
#include "server/server.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

static char root[PATH_MAX], ws[PATH_MAX];
static int srv_fd = -1;
static pid_t srv_pid = -1;
static struct fake_seen *shared;
static char inbuf[1 << 20];
static size_t inlen;

static void
start(void)
{
	char tmpl[] = "/tmp/wd-unit-server-XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, root));
	snprintf(ws, sizeof(ws), "%s/ws", root);
	cr_assert_eq(mkdir(ws, 0755), 0);
	char st[PATH_MAX + 8], log[PATH_MAX + 8];
	snprintf(st, sizeof(st), "%s/state", root);
	snprintf(log, sizeof(log), "%s/server.log", root);
	shared =
	    mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(shared, MAP_FAILED);
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fflush(NULL);
	srv_pid = fork();
	cr_assert_geq(srv_pid, 0);
	if (srv_pid == 0) {
		int fe = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fe < 0 || dup2(sv[1], 0) < 0 || dup2(sv[1], 1) < 0 || dup2(fe, 2) < 0)
			_exit(99);
		fake_reset();
		struct server_opts o;
		server_opts_init(&o);
		o.stdio = true;
		o.workspace = ws;
		o.state_dir = st;
		int rc = server_run(&o);
		*shared = fake;
		_exit(rc);
	}
	close(sv[1]);
	srv_fd = sv[0];
	inlen = 0;
}

static int
stop(void)
{
	if (srv_pid < 0)
		return -1;
	shutdown(srv_fd, SHUT_WR); /* EOF on its stdin: the server ends */
	int st = 0;
	cr_assert_eq(waitpid(srv_pid, &st, 0), srv_pid);
	srv_pid = -1;
	close(srv_fd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void
finish(void)
{
	if (srv_pid > 0) {
		kill(srv_pid, SIGKILL);
		waitpid(srv_pid, NULL, 0);
	}
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

static void
send_line(const char *text)
{
	size_t n = strlen(text);
	cr_assert_eq(write(srv_fd, text, n), (ssize_t)n);
	cr_assert_eq(write(srv_fd, "\n", 1), 1);
}

/* The next line from the server, parsed (a notification is skipped). */
static json_t *
reply(void)
{
	for (;;) {
		char *nl = memchr(inbuf, '\n', inlen);
		if (nl) {
			*nl = '\0';
			json_error_t je;
			json_t *m = json_loads(inbuf, 0, &je);
			cr_assert_not_null(m, "not JSON (%s): %s", je.text, inbuf);
			size_t used = (size_t)(nl - inbuf) + 1;
			memmove(inbuf, nl + 1, inlen - used);
			inlen -= used;
			if (json_object_get(m, "method") && !json_object_get(m, "id")) {
				json_decref(m);
				continue;
			}
			return m;
		}
		/* a deadline only for a server that hangs: 60 s on a loaded
		 * machine is far past a reply that takes milliseconds */
		struct pollfd p = {.fd = srv_fd, .events = POLLIN};
		int r = poll(&p, 1, 60000);
		cr_assert_gt(r, 0, "no reply from the server");
		ssize_t n = read(srv_fd, inbuf + inlen, sizeof(inbuf) - inlen - 1);
		cr_assert_gt(n, 0, "the server closed its output");
		inlen += (size_t)n;
	}
}

static json_t *
call(const char *text)
{
	send_line(text);
	return reply();
}

static int
err_code(json_t *m)
{
	return (int)json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

static const char *
err_msg(json_t *m)
{
	return json_string_value(json_object_get(json_object_get(m, "error"), "message"));
}

static void
initialize(void)
{
	json_t *m = call("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
			 "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
			 "\"clientInfo\":{\"name\":\"unit\"}}}");
	json_t *res = json_object_get(m, "result");
	cr_assert_not_null(res, "initialize: %s", err_msg(m));
	cr_expect_str_eq(json_string_value(json_object_get(res, "protocolVersion")), "2025-06-18");
	cr_expect_str_eq(
	    json_string_value(json_object_get(json_object_get(res, "serverInfo"), "name")),
	    "warden");
	json_decref(m);
	send_line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

TestSuite(dispatch, .init = start, .fini = finish);

Test(dispatch, jsonrpc_errors_with_their_ids)
{
	json_t *m = call("{not json");
	cr_expect_eq(err_code(m), -32700);
	cr_expect(json_is_null(json_object_get(m, "id")));
	json_decref(m);

	m = call("{\"jsonrpc\":\"2.0\",\"id\":41,\"method\":\"no.such.method\"}");
	cr_expect_eq(err_code(m), -32601);
	cr_expect_eq(json_integer_value(json_object_get(m, "id")), 41);
	cr_expect(strstr(err_msg(m), "no.such.method") != NULL, "%s", err_msg(m));
	json_decref(m);

	m = call("{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":7}");
	cr_expect_eq(err_code(m), -32600);
	cr_expect_str_eq(json_string_value(json_object_get(m, "id")), "s");
	json_decref(m);

	/* an MCP method before initialize */
	m = call("{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/list\"}");
	cr_expect_eq(err_code(m), -32002, "%s", err_msg(m));
	cr_expect_eq(json_integer_value(json_object_get(m, "id")), 42);
	json_decref(m);

	/* initialize without its protocolVersion: invalid params, named */
	m = call("{\"jsonrpc\":\"2.0\",\"id\":43,\"method\":\"initialize\",\"params\":{}}");
	cr_expect_eq(err_code(m), -32602);
	cr_expect(strstr(err_msg(m), "protocolVersion") != NULL, "%s", err_msg(m));
	json_decref(m);

	/* a batch: one answer per request, in one array */
	send_line("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"},5]");
	m = reply();
	cr_assert(json_is_array(m), "a batch's answers are one array");
	cr_expect_eq(json_array_size(m), 2);
	json_decref(m);
	cr_expect_eq(stop(), 0);
	cr_expect_eq(shared->prepare, 0);
}

Test(dispatch, tools_list_and_argument_checks)
{
	initialize();
	json_t *m = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	json_t *tools = json_object_get(json_object_get(m, "result"), "tools");
	cr_assert(json_array_size(tools) >= 8, "%s", err_msg(m));
	size_t i;
	json_t *t;
	bool run = false;
	json_array_foreach(tools, i, t)
	{
		const char *name = json_string_value(json_object_get(t, "name"));
		cr_assert_not_null(name);
		run |= !strcmp(name, "run_command");
		cr_expect(json_is_object(json_object_get(t, "inputSchema")), "%s", name);
		cr_expect(json_is_object(json_object_get(t, "annotations")), "%s", name);
	}
	cr_expect(run);
	json_decref(m);

	m = call("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"no_such_tool\",\"arguments\":{}}}");
	cr_expect_eq(err_code(m), -32602);
	cr_expect(strstr(err_msg(m), "no_such_tool") != NULL, "%s", err_msg(m));
	json_decref(m);

	/* arguments that fail the schema: a tool result with isError, the
	 * field named, and nothing built */
	const char *bad[][2] = {
	    {"{}", "command"},
	    {"{\"command\":\"ls\",\"extra\":1}", "extra"},
	    {"{\"command\":[\"ls\"]}", "command"},
	};
	for (size_t k = 0; k < 3; k++) {
		char req[512];
		snprintf(req, sizeof(req),
			 "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"tools/call\",\"params\":"
			 "{\"name\":\"run_command\",\"arguments\":%s}}",
			 10 + k, bad[k][0]);
		m = call(req);
		json_t *res = json_object_get(m, "result");
		cr_assert_not_null(res, "%s: %s", bad[k][0], err_msg(m));
		cr_expect(json_is_true(json_object_get(res, "isError")), "%s", bad[k][0]);
		const char *text = json_string_value(
		    json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
		cr_expect(text && strstr(text, bad[k][1]), "%s: %s", bad[k][0], text);
		json_decref(m);
	}
	cr_expect_eq(stop(), 0);
	cr_expect_eq(shared->prepare, 0, "%s", shared->trace);
}

/* run_command goes through the one door: the policy refuses rm before
 * the backend is asked; ls (the built-in policy allows it) reaches it
 * once, with the words judged (the quoted pair one word). */
Test(dispatch, run_command_through_the_door)
{
	initialize();
	json_t *m = call("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			 "{\"name\":\"run_command\",\"arguments\":{\"command\":\"rm -rf /\"}}}");
	json_t *sc = json_object_get(json_object_get(m, "result"), "structuredContent");
	cr_expect_str_eq(json_string_value(json_object_get(sc, "outcome")), "denied", "%s",
			 err_msg(m));
	cr_expect_eq(json_integer_value(json_object_get(sc, "status")), 126);
	json_decref(m);

	m = call("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":\"run_command\",\"arguments\":{\"command\":\"ls -la 'a b'\"}}}");
	sc = json_object_get(json_object_get(m, "result"), "structuredContent");
	char *dump = json_dumps(m, 0);
	cr_expect_str_eq(json_string_value(json_object_get(sc, "outcome")), "ran", "%s", dump);
	free(dump);
	json_decref(m);
	cr_expect_eq(stop(), 0);
	cr_expect_eq(shared->exec, 1, "%s", shared->trace);
	cr_expect_str_eq(shared->argv, "ls -la a b");
	cr_expect_str_eq(shared->workspace, ws);
	cr_expect_str_eq(shared->trace, "prepare,spawn,exec,destroy");
}
