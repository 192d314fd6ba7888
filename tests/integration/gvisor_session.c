/*
 * gvisor_session: a live gVisor sandbox through the public API:
 * wd_sandbox_create (runsc create + start, the resident executor as its
 * init), many wd_sandbox_exec (messages to the executor; runsc exec for a
 * command with stdin), concurrently from threads, each with its own
 * timeout that ends the command's process group and not the sandbox,
 * state kept between commands, output windows, a flood into a caller
 * that stopped reading holding up no other command, cancellation, a command
 * that goes for the executor (its channel, ptrace, kill) and fails, and
 * nothing left after wd_sandbox_destroy.
 *
 *   gvisor_session SCRATCH-DIR
 *
 * Prints "ok ..." / "not ok ..." lines; exits 1 on any failure, 77 when
 * the host cannot run gVisor (runsc missing: scripts/deps.sh installs it).
 */
#include "warden.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void
check(int ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "not ok", what);
	if (!ok)
		failures++;
}

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Run sh -c SCRIPT in sb; the result (NULL when warden failed). */
static wd_result *
sh(wd_sandbox *sb, const char *script, uint64_t timeout_ms)
{
	wd_cmd *c = wd_cmd_new();
	struct wd_err e = {0};
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	wd_result *r = NULL;
	wd_cmd_set_argv(c, 3, argv, &e);
	if (timeout_ms)
		wd_cmd_set_timeout(c, timeout_ms);
	if (wd_sandbox_exec(sb, c, &r, &e) < 0) {
		printf("# exec '%s': %s\n", script, e.msg);
		r = NULL;
	}
	wd_cmd_free(c);
	return r;
}

static int
out_is(const wd_result *r, const char *want)
{
	size_t n;
	const char *o = r ? wd_result_output(r, 1, &n) : "";
	if (!r)
		return 0;
	if (n == strlen(want) && !memcmp(o, want, n))
		return 1;
	printf("# stdout %.*s (want %s)\n", (int)n, o, want);
	return 0;
}

struct job {
	wd_sandbox *sb;
	int i;
	int ok;
};

static void *
parallel(void *arg)
{
	struct job *j = arg;
	char script[128], want[64];
	snprintf(script, sizeof(script), "sleep 0.3; echo job %d", j->i);
	snprintf(want, sizeof(want), "job %d\n", j->i);
	wd_result *r = sh(j->sb, script, 0);
	j->ok = r && wd_result_status(r) == 0 && out_is(r, want);
	wd_result_free(r);
	return NULL;
}

/* Whether r's JSON says the command went through path ("resident",
 * "runsc-exec"). */
static int
went_through(const wd_result *r, const char *path)
{
	char *j = r ? wd_result_json(r) : NULL;
	char want[64];
	snprintf(want, sizeof(want), "\"exec_path\":\"%s\"", path);
	int ok = j && strstr(j, want) != NULL;
	if (!ok)
		printf("# want %s in %s\n", want, j ? j : "(no result)");
	free(j);
	return ok;
}

/* Processes whose command line names this sandbox's runsc state (other
 * sandboxes of other users of the machine are not ours to count). */
static int
runsc_procs(const char *id)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "pgrep -f -- '[-]-root=/run/warden/gvisor/%s/' | wc -l", id);
	FILE *p = popen(cmd, "r");
	int n = -1;
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n;
}

/* A command whose output streams into a pipe nobody reads (a caller that
 * stopped reading): its loop waits on the pipe, and the output it has
 * not taken piles up on warden's side of the executor. */
struct stalled {
	wd_sandbox *sb;
	int stream_fd;
	int status;
	volatile int finished;
};

static void *
stalled_run(void *arg)
{
	struct stalled *st = arg;
	wd_cmd *c = wd_cmd_new();
	struct wd_err e = {0};
	const char *argv[] = {"/bin/sh", "-c", "head -c 8388608 /dev/zero; echo end >&2", NULL};
	wd_result *r = NULL;
	wd_cmd_set_argv(c, 3, argv, &e);
	wd_cmd_set_stream(c, st->stream_fd, -1);
	/* all of it in the kept window (the head: half the limit), and the
	 * stream waits for room until the deadline */
	wd_cmd_set_output_limit(c, 16 << 20);
	wd_cmd_set_timeout(c, 600 * 1000);
	st->status = wd_sandbox_exec(st->sb, c, &r, &e) < 0 ? -1 : wd_result_status(r);
	wd_result_free(r);
	wd_cmd_free(c);
	st->finished = 1;
	return NULL;
}

struct quick {
	wd_sandbox *sb;
	int ok;
	volatile int finished;
};

static void *
quick_run(void *arg)
{
	struct quick *q = arg;
	wd_result *r = sh(q->sb, "echo beside", 0);
	q->ok =
	    r && wd_result_status(r) == 0 && out_is(r, "beside\n") && went_through(r, "resident");
	wd_result_free(r);
	q->finished = 1;
	return NULL;
}

/* A deadline for a wait on an event, stretched for this host as lib.sh's
 * scaled does (1 + load / CPUs, 3x under a sanitizer): it bounds a
 * failure only, a wait that passes ends at its event. */
static double
scaled_ms(double d)
{
	double load = 0, f;
	FILE *l = fopen("/proc/loadavg", "r");
	if (!l || fscanf(l, "%lf", &load) != 1)
		load = 0;
	if (l)
		fclose(l);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	f = 1 + load / (double)(cpus > 0 ? cpus : 1);
#if defined(__SANITIZE_ADDRESS__)
	f *= 3;
#endif
	return d * 1e3 * (f > 20 ? 20 : f);
}

static wd_sandbox *canceled;

static void *
cancel_later(void *arg)
{
	(void)arg;
	usleep(500 * 1000);
	wd_sandbox_cancel(canceled, SIGTERM);
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gvisor_session SCRATCH-DIR\n");
		return 2;
	}
	if (access("/usr/bin/runsc", X_OK) != 0 && !getenv("WARDEN_RUNSC")) {
		printf("SKIP: runsc is not installed\n");
		return getenv("WD_MUST_WORK") && !strcmp(getenv("WD_MUST_WORK"), "1") ? 1 : 77;
	}
	char ws[4096];
	snprintf(ws, sizeof(ws), "%s/gvisor-session-ws", argv[1]);
	mkdir(ws, 0755);

	wd_ctx *ctx = NULL;
	struct wd_err e = {0};
	if (wd_ctx_new(&ctx, &e) < 0) {
		printf("not ok - wd_ctx_new: %s\n", e.msg);
		return 1;
	}
	wd_spec *spec = wd_spec_new();
	wd_spec_set_isolation(spec, WD_ISOLATION_GVISOR);
	wd_spec_set_workspace(spec, ws, &e);
	wd_sandbox *sb = NULL;
	double t0 = now_ms();
	int rc = wd_sandbox_create(ctx, spec, &sb, &e);
	double created = now_ms() - t0;
	if (rc < 0) {
		printf("not ok - wd_sandbox_create at gvisor: %s\n", e.msg);
		return 1;
	}
	printf("# created in %.0f ms\n", created);
	check(1, "wd_sandbox_create at gvisor");

	wd_result *r =
	    sh(sb, "echo kept > /tmp/state; cd /workspace && echo file > made; id -u", 0);
	check(r && wd_result_status(r) == 0 && out_is(r, "1000\n"),
	      "first command runs as uid 1000");
	wd_result_free(r);
	/* the executor is root with four capabilities: none reaches a command */
	r = sh(sb,
	       "grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' "
	       "/proc/self/status | tr -s '\t ' ' '",
	       0);
	{
		size_t n;
		const char *o = r ? wd_result_output(r, 1, &n) : "";
		char buf[1024];
		snprintf(buf, sizeof(buf), "%.*s", (int)(r ? n : 0), o);
		int ok = strstr(buf, "Uid: 1000 1000 1000 1000") &&
			 strstr(buf, "Gid: 1000 1000 1000 1000") &&
			 strstr(buf, "CapPrm: 0000000000000000") &&
			 strstr(buf, "CapEff: 0000000000000000") &&
			 strstr(buf, "CapBnd: 0000000000000000") &&
			 strstr(buf, "CapInh: 0000000000000000");
		if (!ok)
			printf("# %s", buf);
		check(ok, "a command: uid and gid 1000, no capability, bounding set empty");
	}
	wd_result_free(r);
	r = sh(sb, "cat /tmp/state /workspace/made", 0);
	check(out_is(r, "kept\nfile\n"), "/tmp and the workspace persist between commands");
	wd_result_free(r);
	r = sh(sb, "exit 7", 0);
	check(r && wd_result_status(r) == 7, "a command's own status");
	check(went_through(r, "resident"), "... through the resident executor");
	wd_result_free(r);
	/* wait4's status, not runsc's 128+N: an exit of 137 is an exit */
	r = sh(sb, "exit 137", 0);
	check(r && wd_result_status(r) == 137 && wd_result_exit_code(r) == 137 &&
		  wd_result_signal(r) == 0,
	      "an exit of 137 is exit code 137, not a signal");
	wd_result_free(r);
	r = sh(sb, "kill -s TERM $$", 0);
	check(r && wd_result_status(r) == 128 + SIGTERM && wd_result_signal(r) == SIGTERM,
	      "a command killed by SIGTERM: signal 15");
	wd_result_free(r);
	r = sh(sb, "echo out; echo err >&2; cd /workspace && pwd", 0);
	size_t en;
	const char *eo = r ? wd_result_output(r, 2, &en) : "";
	check(out_is(r, "out\n/workspace\n") && r && en == 4 && !memcmp(eo, "err\n", 4),
	      "stdout and stderr apart");
	wd_result_free(r);
	/* Output windows: 3 MB through the executor's frames, a 64 KiB limit */
	{
		wd_cmd *c = wd_cmd_new();
		const char *a[] = {"/bin/sh", "-c",
				   "head -c 3000000 /dev/zero | tr '\\0' a; echo END; "
				   "head -c 100000 /dev/zero >&2",
				   NULL};
		wd_cmd_set_argv(c, 3, a, &e);
		wd_cmd_set_output_limit(c, 64 << 10);
		r = NULL;
		if (wd_sandbox_exec(sb, c, &r, &e) < 0)
			printf("# exec: %s\n", e.msg);
		size_t n = 0;
		const char *o = r ? wd_result_output(r, 1, &n) : "";
		check(r && wd_result_status(r) == 0 && wd_result_output_total(r, 1) == 3000004 &&
			  wd_result_output_total(r, 2) == 100000,
		      "3 MB of stdout and 100 kB of stderr counted whole");
		check(r && wd_result_output_omitted(r, 1) > 0 && n <= (64 << 10) + 256 && n >= 4 &&
			  !memcmp(o + n - 4, "END\n", 4),
		      "... kept in a window with the end in it");
		wd_result_free(r);
		wd_cmd_free(c);
	}
	/* stdin goes through runsc exec (the executor relays output only) */
	{
		int pfd[2];
		if (pipe(pfd) == 0) {
			(void)!write(pfd[1], "from stdin\n", 11);
			close(pfd[1]);
			wd_cmd *c = wd_cmd_new();
			const char *a[] = {"/bin/cat", NULL};
			wd_cmd_set_argv(c, 1, a, &e);
			wd_cmd_set_stdin(c, pfd[0]);
			r = NULL;
			if (wd_sandbox_exec(sb, c, &r, &e) < 0)
				printf("# exec: %s\n", e.msg);
			check(out_is(r, "from stdin\n") && went_through(r, "runsc-exec"),
			      "a command with stdin: runsc exec, said so in exec_path");
			wd_result_free(r);
			wd_cmd_free(c);
			close(pfd[0]);
		}
	}

	/* The command beside the executor (pid 1, uid 0 inside gVisor) can
	 * neither reach its channel (/proc/1/fd), read its memory, trace it,
	 * nor signal it; the next command still goes through it. */
	/* each open is non-blocking (a pipe's end opened through /proc must
	 * not wait for a peer): a success of any is counted */
	r = sh(sb,
	       "python3 -c '\n"
	       "import ctypes, os, signal\n"
	       "n = 0\n"
	       "for path in [\"/proc/1/fd/%d\" % f for f in (0, 1, 2)] + [\"/proc/1/mem\"]:\n"
	       "    for mode in (os.O_RDONLY, os.O_WRONLY):\n"
	       "        try:\n"
	       "            os.close(os.open(path, mode | os.O_NONBLOCK)); n += 1\n"
	       "        except OSError:\n"
	       "            pass\n"
	       "for sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):\n"
	       "    try:\n"
	       "        os.kill(1, sig); n += 1\n"
	       "    except OSError:\n"
	       "        pass\n"
	       "libc = ctypes.CDLL(None, use_errno=True)\n"
	       "n += libc.ptrace(16, 1, 0, 0) == 0\n"
	       "print(n)'",
	       0);
	check(out_is(r, "0\n"),
	      "the executor's fds, memory, ptrace and signals refused to a command");
	wd_result_free(r);
	r = sh(sb, "echo still", 0);
	check(out_is(r, "still\n") && went_through(r, "resident"),
	      "... and the next command goes through it");
	wd_result_free(r);
	r = sh(sb, "no-such-program-here", 0);
	check(r && wd_result_status(r) == 127, "not found is 127");
	wd_result_free(r);

	/* A command's timeout ends its process group, not the sandbox. */
	t0 = now_ms();
	r = sh(sb, "sleep 30 & sleep 30 & echo started; wait", 1000);
	double took = now_ms() - t0;
	check(r && wd_result_status(r) == 124 && wd_result_timed_out(r),
	      "a command past its timeout: 124");
	check(took < 5000, "... ended at its deadline");
	check(out_is(r, "started\n"), "... its output up to then is kept");
	check(went_through(r, "resident"), "... the executor killed its group");
	wd_result_free(r);
	r = sh(sb, "ps -e -o comm= | grep -c '^sleep$'", 0);
	/* none left: the idle init (warden-init) has no sleep of its own */
	check(out_is(r, "0\n"), "its background children went with it");
	wd_result_free(r);
	r = sh(sb, "cat /tmp/state", 0);
	check(out_is(r, "kept\n") && went_through(r, "resident"),
	      "the sandbox and its executor live on after a command's timeout");
	wd_result_free(r);

	/* Concurrent commands from threads. */
	enum { N = 4 };
	pthread_t th[N];
	struct job jobs[N];
	t0 = now_ms();
	for (int i = 0; i < N; i++) {
		jobs[i] = (struct job){sb, i, 0};
		pthread_create(&th[i], NULL, parallel, &jobs[i]);
	}
	int all = 1;
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		all &= jobs[i].ok;
	}
	took = now_ms() - t0;
	check(all, "four commands at once from four threads");
	printf("# four concurrent 0.3 s commands took %.0f ms\n", took);

	/* A background process that keeps the command's stdout: the result
	 * comes after the drain grace (warden's CLOSE to the executor), not
	 * when the process ends; the executor serves the next command. */
	t0 = now_ms();
	r = sh(sb, "sleep 3 & echo held", 0);
	took = now_ms() - t0;
	check(r && wd_result_status(r) == 0 && out_is(r, "held\n") && took < 2500,
	      "output held by a background process: the result after the drain grace");
	printf("# took %.0f ms\n", took);
	wd_result_free(r);
	r = sh(sb, "echo after", 0);
	check(out_is(r, "after\n") && went_through(r, "resident"), "... and the next command runs");
	wd_result_free(r);

	/* A flood into a caller that stopped reading holds up its own
	 * command only: another command beside it runs and ends, and once
	 * the caller reads again all of the flood arrives. */
	{
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0) {
			check(0, "pipe");
		} else {
			struct stalled st = {sb, p[1], -2, 0};
			pthread_t a, b;
			pthread_create(&a, NULL, stalled_run, &st);
			/* the pipe full: the command's loop waits on it, and
			 * the flood goes on arriving from the executor */
			int have = 0;
			for (int i = 0; i < 600 && have < 65536; i++) {
				usleep(50 * 1000);
				ioctl(p[0], FIONREAD, &have);
			}
			usleep(500 * 1000);
			struct quick q = {sb, 0, 0};
			t0 = now_ms();
			pthread_create(&b, NULL, quick_run, &q);
			while (!q.finished && now_ms() - t0 < scaled_ms(15))
				usleep(20 * 1000);
			check(q.finished && q.ok,
			      "a command beside one whose caller stopped reading runs and ends");
			printf("# it took %.0f ms (the stalled one %s)\n", now_ms() - t0,
			       st.finished ? "finished" : "still waits");
			/* the caller reads again: every byte arrives */
			char buf[65536];
			size_t got = 0;
			fcntl(p[0], F_SETFL, O_NONBLOCK);
			t0 = now_ms();
			while (now_ms() - t0 < scaled_ms(60)) {
				ssize_t n = read(p[0], buf, sizeof(buf));
				if (n > 0) {
					got += (size_t)n;
					continue;
				}
				if (st.finished)
					break;
				usleep(5 * 1000);
			}
			pthread_join(a, NULL);
			pthread_join(b, NULL);
			check(st.status == 0 && got == 8388608,
			      "... and the stalled one, read again, delivers all of its output");
			printf("# %zu bytes, status %d\n", got, st.status);
			close(p[0]);
			close(p[1]);
		}
	}

	/* An orphan left by a command is reaped by the init, not kept. */
	r = sh(sb, "sh -c 'sleep 0.1 &'; sleep 0.5; ps -e -o stat= | grep -c Z", 0);
	check(out_is(r, "0\n"), "orphans are reaped (no zombie)");
	wd_result_free(r);

	/* Cancellation: the command in progress ends as killed by the signal. */
	canceled = sb;
	pthread_t ct;
	pthread_create(&ct, NULL, cancel_later, NULL);
	r = sh(sb, "sleep 20", 0);
	pthread_join(ct, NULL);
	check(r && wd_result_status(r) == 128 + SIGTERM, "wd_sandbox_cancel: 128+15");
	wd_result_free(r);

	char dir[256], id[64];
	snprintf(id, sizeof(id), "%s", wd_sandbox_id(sb));
	snprintf(dir, sizeof(dir), "/run/warden/gvisor/%s", id);
	struct stat st;
	check(stat(dir, &st) == 0, "the sandbox's bundle exists while it lives");
	t0 = now_ms();
	wd_sandbox_destroy(sb);
	printf("# destroyed in %.0f ms\n", now_ms() - t0);
	check(stat(dir, &st) < 0, "wd_sandbox_destroy removes the bundle");
	check(runsc_procs(id) == 0, "no runsc process of it left");

	/* The OOM killer in a session: the sentry goes with the command, which
	 * is reported as OOM-killed; the sandbox has ended. */
	struct wd_limits lim = {.memory_bytes = 64 << 20};
	wd_spec_set_limits(spec, &lim);
	if (wd_sandbox_create(ctx, spec, &sb, &e) < 0) {
		check(0, "a second sandbox with --memory 64M");
	} else {
		r = sh(sb, "python3 -c 'b = bytearray(400 << 20)'", 0);
		check(r && wd_result_status(r) == 137 && wd_result_oom_killed(r),
		      "a session command over the memory limit: 137, oom_killed");
		wd_result_free(r);
		wd_cmd *c = wd_cmd_new();
		const char *t[] = {"/bin/true", NULL};
		wd_cmd_set_argv(c, 1, t, &e);
		check(wd_sandbox_exec(sb, c, &r, &e) < 0 && strstr(e.msg, "ended"),
		      "... and the sandbox has ended");
		wd_cmd_free(c);
		wd_sandbox_destroy(sb);
	}

	wd_spec_free(spec);
	wd_ctx_free(ctx);
	char made[4200];
	snprintf(made, sizeof(made), "%s/made", ws);
	unlink(made);
	rmdir(ws);
	printf("%s\n", failures ? "# failures" : "# all passed");
	return failures ? 1 : 0;
}
