/* test_cli.c - the command line in-process (cli_main, the same code as
 * the warden program), with the fake backend (tests/unit/core) behind the
 * seam: every subcommand's unknown option and missing operand, the value
 * parsers and their messages, exit status 125 and nothing run; and
 * `warden run` reaching the backend through the library's one door.
 *
 * Each call runs in a forked child with stdout and stderr in files; the
 * child copies what the fake saw into a shared page before it exits. */
#include "cli/cli.h"
#include "fake_backend.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[PATH_MAX], ws[PATH_MAX];

struct outcome {
	int rc;
	char out[16384];
	char err[16384];
	struct fake_seen seen;
};

static void
setup(void)
{
	char tmpl[] = "/tmp/wd-unit-cli-XXXXXX";
	cr_assert_not_null(mkdtemp(tmpl));
	cr_assert_not_null(realpath(tmpl, root));
	snprintf(ws, sizeof(ws), "%s/ws", root);
	cr_assert_eq(mkdir(ws, 0755), 0);
	char st[PATH_MAX + 8];
	snprintf(st, sizeof(st), "%s/state", root);
	/* nothing of a test reaches the machine's state or images */
	setenv("WARDEN_STATE_DIR", st, 1);
	setenv("WARDEN_IMAGE_DIR", st, 1);
	cr_assert_eq(chdir(ws), 0);
}

static void
teardown(void)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(chdir("/"), 0);
	cr_assert_eq(system(cmd), 0);
}

static void
slurp(const char *path, char *buf, size_t cap)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* warden ARGS... (NULL-terminated) in a child; its status, output, and
 * what the fake backend saw there. */
static struct outcome *
warden(const char *first, ...)
{
	static struct outcome *o;
	if (!o) {
		o = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
			 0);
		cr_assert_neq(o, MAP_FAILED);
	}
	memset(o, 0, sizeof(*o));
	/* getopt may permute argv: each word a copy the call owns */
	static char words[64][512];
	char *argv[64] = {words[0]};
	snprintf(words[0], sizeof(words[0]), "warden");
	int argc = 1;
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *)) {
		snprintf(words[argc], sizeof(words[argc]), "%s", a);
		argv[argc] = words[argc];
		argc++;
	}
	va_end(ap);
	argv[argc] = NULL;
	char outp[PATH_MAX + 8], errp[PATH_MAX + 8];
	snprintf(outp, sizeof(outp), "%s/out", root);
	snprintf(errp, sizeof(errp), "%s/err", root);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int fi = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fo < 0 || fe < 0 || fi < 0 || dup2(fi, 0) < 0 || dup2(fo, 1) < 0 ||
		    dup2(fe, 2) < 0)
			_exit(99);
		fake_reset();
		int rc = cli_main(argc, argv);
		fflush(NULL);
		o->seen = fake;
		_exit(rc);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "warden %s: killed by signal %d", first, WTERMSIG(st));
	o->rc = WEXITSTATUS(st);
	slurp(outp, o->out, sizeof(o->out));
	slurp(errp, o->err, sizeof(o->err));
	return o;
}

/* 125, a message naming what and sub, nothing built */
#define expect_refused(o, sub, what)                                                               \
	do {                                                                                       \
		cr_expect_eq((o)->rc, 125, "status %d, stderr: %s", (o)->rc, (o)->err);            \
		cr_expect(strncmp((o)->err, "warden: " sub, strlen("warden: " sub)) == 0,          \
			  "the message does not name '%s': %s", sub, (o)->err);                    \
		cr_expect(strstr((o)->err, what) != NULL, "the message does not name '%s': %s",    \
			  what, (o)->err);                                                         \
		cr_expect_eq((o)->seen.prepare + (o)->seen.exec, 0, "the backend saw: %s",         \
			     (o)->seen.trace);                                                     \
	} while (0)

TestSuite(cli, .init = setup, .fini = teardown);

/* Every subcommand in the table: an unknown option names itself and the
 * subcommand, 125, nothing run. */
Test(cli, every_subcommand_refuses_an_unknown_option)
{
	size_t n = 0;
	for (size_t i = 0; cli_command_name(i); i++, n++) {
		const char *sub = cli_command_name(i);
		struct outcome *o = warden(sub, "--no-such-option", NULL);
		char named[64];
		snprintf(named, sizeof(named), "warden: %s", sub);
		cr_expect_eq(o->rc, 125, "warden %s --no-such-option: status %d, stderr: %s", sub,
			     o->rc, o->err);
		cr_expect(strstr(o->err, named) != NULL, "warden %s: %s", sub, o->err);
		cr_expect(strstr(o->err, "--no-such-option") != NULL, "warden %s: %s", sub, o->err);
		cr_expect_eq(o->seen.prepare, 0, "warden %s built a sandbox", sub);
	}
	cr_expect_geq(n, 20, "the table has %zu subcommands", n);
}

Test(cli, unknown_command_escaped)
{
	struct outcome *o = warden("nosuch\x1b[31m", NULL);
	cr_expect_eq(o->rc, 125);
	cr_expect(strstr(o->err, "unknown command") != NULL, "%s", o->err);
	cr_expect_null(strchr(o->err, '\x1b'), "an escape byte reached the terminal: %s", o->err);
	cr_expect(strstr(o->err, "\\x1b") != NULL, "%s", o->err);
	o = warden(NULL);
	cr_expect_eq(o->rc, 125);
	cr_expect(strstr(o->err, "usage: warden COMMAND") != NULL, "%s", o->err);
	o = warden("--help", NULL);
	cr_expect_eq(o->rc, 0);
	cr_expect(strstr(o->out, "usage: warden COMMAND") != NULL, "%s", o->out);
}

/* a short option unknown, in a cluster, and a value missing */
Test(cli, option_messages)
{
	struct outcome *o = warden("run", "-Z", "--", "true", NULL);
	expect_refused(o, "run", "unknown option '-Z'");
	o = warden("run", "--memory", NULL);
	expect_refused(o, "run", "'--memory' needs a value");
	o = warden("run", "--net=none=x", "--", "true", NULL);
	expect_refused(o, "run", "--net");
	o = warden("run", "-v", "--json=1", "--", "true", NULL);
	expect_refused(o, "run", "'--json' takes no value");
	/* docker's spellings get a hint naming warden's option */
	o = warden("run", "--pids-limit", "5", "--", "true", NULL);
	cr_expect_eq(o->rc, 125, "%s", o->err);
	cr_expect(strstr(o->err, "--pids") != NULL, "%s", o->err);
}

Test(cli, missing_operands)
{
	struct outcome *o = warden("run", NULL);
	expect_refused(o, "run", "");
	o = warden("exec", NULL);
	expect_refused(o, "exec", "");
	o = warden("cp", NULL);
	expect_refused(o, "cp", "");
	o = warden("approve", NULL);
	expect_refused(o, "approve", "");
	o = warden("audit", NULL);
	expect_refused(o, "audit", "");
	o = warden("audit", "verify", NULL);
	expect_refused(o, "audit", "");
	o = warden("check", NULL);
	expect_refused(o, "check", "");
	o = warden("image", NULL);
	expect_refused(o, "image", "");
	o = warden("image", "rm", NULL);
	expect_refused(o, "image", "");
	o = warden("snapshot", NULL);
	expect_refused(o, "snapshot", "");
	o = warden("logs", NULL);
	expect_refused(o, "logs", "");
}

/* sizes with units */
Test(cli, size_values)
{
	struct outcome *o = warden("run", "--memory", "512MB", "--", "true", NULL);
	expect_refused(o, "run", "--memory: invalid value '512MB'");
	cr_expect(strstr(o->err, "\"MB\" is ambiguous") != NULL, "%s", o->err);
	o = warden("run", "--memory", "1K", "--", "true", NULL);
	expect_refused(o, "run", "must be at least 4M");
	o = warden("run", "--memory", "99999999999999999999", "--", "true", NULL);
	expect_refused(o, "run", "too large");
	o = warden("run", "--output-limit", "17M", "--", "true", NULL);
	expect_refused(o, "run", "at most 16M");
	o = warden("run", "--tmp-size", "-1", "--", "true", NULL);
	expect_refused(o, "run", "--tmp-size");
	o = warden("run", "--pids", "0", "--", "true", NULL);
	expect_refused(o, "run", "from 1 to 4194304");
}

/* durations and --cpus */
Test(cli, duration_and_cpus_values)
{
	struct outcome *o = warden("run", "--timeout", "abc", "--", "true", NULL);
	expect_refused(o, "run", "--timeout: invalid value 'abc'");
	o = warden("run", "--timeout", "0.0001", "--", "true", NULL);
	expect_refused(o, "run", "millisecond precision");
	o = warden("run", "--timeout", "86401", "--", "true", NULL);
	expect_refused(o, "run", "1 ms to a day");
	o = warden("run", "--cpus", "0", "--", "true", NULL);
	expect_refused(o, "run", "from 0.01 to 1024");
	o = warden("run", "--cpus", "0.1234567", "--", "true", NULL);
	expect_refused(o, "run", "six decimals");
	o = warden("run", "--cpus", "1000", "--", "true", NULL);
	expect_refused(o, "run", "this host has");
	/* a value that is the next option: the option before it had none */
	o = warden("run", "--timeout", "--memory", "1G", "--", "true", NULL);
	cr_expect_eq(o->rc, 125, "%s", o->err);
	cr_expect(strstr(o->err, "--timeout") != NULL, "%s", o->err);
}

/* A policy document's error names FILE:LINE:COLUMN. */
Test(cli, policy_file_position)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/bad.json", root);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs("{\"version\": 1,\n  \"programs\": {\"echo\": {\"bogus_key\": 1}}}\n", f);
	fclose(f);
	struct outcome *o = warden("run", "--policy", p, "--command", "echo hi", NULL);
	char where[PATH_MAX + 32];
	snprintf(where, sizeof(where), "%s:2:", p);
	expect_refused(o, "run", where);
	cr_expect(strstr(o->err, "bogus_key") != NULL, "%s", o->err);
	o = warden("check", "--policy", p, "--", "echo", "hi", NULL);
	expect_refused(o, "check", where);
}

/* `warden run` reaches the isolation layer through the library's door:
 * the backend gets the workspace, the argv and the limits given, once. */
Test(cli, run_reaches_the_backend_through_the_door)
{
	struct outcome *o = warden("run", "-w", ws, "--timeout", "3", "--output-limit", "64K", "--",
				   "echo", "hi", NULL);
	cr_expect_eq(o->rc, 0, "status %d: %s", o->rc, o->err);
	cr_expect_eq(o->seen.exec, 1, "%s", o->seen.trace);
	cr_expect_str_eq(o->seen.argv, "echo hi");
	cr_expect_str_eq(o->seen.workspace, ws);
	cr_expect_str_eq(o->seen.trace, "prepare,spawn,exec,destroy");
	/* the spec's limits are the sandbox's; the command's are 0 (the spec's) */
	o = warden("run", "-w", ws, "--command", "rm -rf /", NULL);
	cr_expect_eq(o->rc, 126, "status %d: %s", o->rc, o->err);
	cr_expect_eq(o->seen.prepare, 0, "%s", o->seen.trace);
	cr_expect(strstr(o->err, "deny") != NULL || strstr(o->err, "denied") != NULL ||
		      strstr(o->err, "refused") != NULL,
		  "%s", o->err);
}

/* warden exec in a session goes through the same door as warden run: the
 * session's monitor (fake-monitor, warden-monitor with the fake backend,
 * tests/unit/core) gets the same judged command with the same limits, and
 * a refused one never reaches it. */
static void
read_file(const char *path, char *out, size_t cap)
{
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	fclose(f);
}

Test(cli, exec_in_a_session_is_the_same_door)
{
	if (!getenv("WARDEN_MONITOR")) {
		/* run by hand: fake-monitor is built in ../core */
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 32);
		cr_assert_gt(n, 0);
		self[n] = '\0';
		strcpy(strrchr(self, '/'), "/../core/fake-monitor");
		setenv("WARDEN_MONITOR", self, 1);
	}
	char trace[PATH_MAX + 32], seen[4096];
	snprintf(trace, sizeof(trace), "%s/state/fake-trace", root);

	struct outcome *o = warden("run", "-w", ws, "--isolation", "process", "--timeout", "5",
				   "--command", "ls -la 'a b'", NULL);
	cr_assert_eq(o->rc, 0, "status %d: %s", o->rc, o->err);
	char oneshot[700];
	snprintf(oneshot, sizeof(oneshot), "exec-req %s|%llu|%llu|%s\n", o->seen.argv,
		 (unsigned long long)o->seen.timeout_ms, (unsigned long long)o->seen.output_limit,
		 o->seen.cwd);
	cr_expect_str_eq(o->seen.argv, "ls -la a b");

	o = warden("create", "s1", "-w", ws, "--isolation", "process", "--timeout", "5", NULL);
	cr_assert_eq(o->rc, 0, "status %d: %s", o->rc, o->err);
	read_file(trace, seen, sizeof(seen));
	cr_expect_str_eq(seen, "prepare\nspawn\nready\n", "the monitor built: %s", seen);
	unlink(trace);

	o = warden("exec", "s1", "--command", "ls -la 'a b'", NULL);
	cr_expect_eq(o->rc, 0, "status %d: %s", o->rc, o->err);
	read_file(trace, seen, sizeof(seen));
	cr_expect(strstr(seen, oneshot) != NULL, "warden exec's request differs:\n%s\nvs %s", seen,
		  oneshot);
	unlink(trace);

	o = warden("exec", "s1", "--command", "rm -rf /", NULL);
	cr_expect_eq(o->rc, 126, "status %d: %s", o->rc, o->err);
	read_file(trace, seen, sizeof(seen));
	cr_expect_str_eq(seen, "", "a refused command reached the monitor's backend: %s", seen);

	o = warden("rm", "s1", NULL);
	cr_expect_eq(o->rc, 0, "status %d: %s", o->rc, o->err);
}
