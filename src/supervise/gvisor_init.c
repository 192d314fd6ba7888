/* warden-init: the first program of every gVisor sandbox (a program of
 * its own, static, no sanitizers; meson.build), copied by warden into
 * the bundle's root, read-only there.
 *
 * runsc given a missing program fails the whole request with 128, so a
 * command needs a starter that makes it 127 (126: not executable).  That
 * was the host's /bin/sh (`exec "$0" "$@"`), which has two faults: an
 * image need not hold a shell (a distroless one does not), and the
 * shell's exec searches the command's own PATH, which the caller, the
 * image's env or a model's sandbox.create env may set to /workspace/bin:
 * the policy had judged `cat` as the system's cat, and the model's
 * /workspace/bin/cat ran under its rule.  This program searches the
 * jail's fixed PATH, as pid 1 does at the container level
 * (jail/cmdplan.c, jail/exec.c):
 *
 *   warden-init exec PROG ARG...   PROG with a slash: execve of it; else
 *                                  execve along JAIL_PATH (ENOENT and
 *                                  ENOTDIR move on, any other error is
 *                                  kept); 127 when not found, else 126,
 *                                  with the container level's message
 *                                  (PROG escaped)
 *   warden-init idle               a session's init: reaps every child
 *                                  (orphans of runsc exec included) and
 *                                  exits 0 on SIGTERM
 *
 * It runs as the sandbox user under warden's seccomp profile, inside the
 * sentry: execve, wait4, rt_sigtimedwait, write, exit. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void
put(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(2, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* A name the model chose, for a human's terminal: printable ASCII as is,
 * every other byte as \xHH (no escape sequence reaches the reader). */
static void
put_escaped(const char *s)
{
	static const char hex[] = "0123456789abcdef";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			put(s, 1);
			continue;
		}
		char b[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
		put(b, 4);
	}
}

static int
idle(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig == SIGTERM)
			return 0;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

int
main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "idle"))
		return idle();
	if (argc >= 3 && !strcmp(argv[1], "exec")) {
		/* jail/cmdplan.c's jail_path_dirs: the policy judged the name
		 * there (policy/decide.c), whatever PATH the command has */
		static const char *const dirs[] = {"/usr/local/bin",  "/usr/bin",  "/bin",
						   "/usr/local/sbin", "/usr/sbin", "/sbin"};
		const char *prog = argv[2];
		int e = ENOENT;
		if (strchr(prog, '/')) {
			execve(prog, argv + 2, environ);
			e = errno;
		} else {
			for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
				char path[4096];
				size_t d = strlen(dirs[i]), n = strlen(prog);
				if (d + 1 + n >= sizeof(path)) {
					e = ENAMETOOLONG;
					break;
				}
				memcpy(path, dirs[i], d);
				path[d] = '/';
				memcpy(path + d + 1, prog, n + 1);
				execve(path, argv + 2, environ);
				if (errno != ENOENT && errno != ENOTDIR)
					e = errno;
			}
		}
		/* the container level's words (cli/run.c) */
		const char *why = strerror(e);
		put("warden: cannot execute '", 24);
		put_escaped(argv[2]);
		put("': ", 3);
		put(why, strlen(why));
		put("\n", 1);
		return e == ENOENT ? 127 : 126;
	}
	static const char usage[] = "usage: warden-init exec PROGRAM [ARG...] | warden-init idle\n"
				    "(started by warden inside a gVisor sandbox)\n";
	put(usage, sizeof(usage) - 1);
	return 2;
}
