/* warden-init: the first program of a gVisor sandbox whose root is an
 * image (a program of its own, static, no sanitizers; meson.build).
 *
 * Without an image, the bundle starts a command through the host's
 * /bin/sh (gvisor_oci.c: `exec "$0" "$@"`, so a missing program is 127
 * and a non-executable one 126, where runsc itself would fail the whole
 * request with 128) and a session's idle init is a shell loop.  An image
 * need not hold a shell (a distroless one does not), and the one it
 * holds is the image's, not warden's: so warden copies this program into
 * the bundle's root (read-only there) and starts through it instead:
 *
 *   warden-init exec PROG ARG...   execvp, as the shell's exec: 127 when
 *                                  PROG is not found, 126 when it cannot
 *                                  be run, with the container level's
 *                                  message (PROG escaped)
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
		execvp(argv[2], argv + 2);
		/* the container level's words (supervise/result.c) */
		int e = errno;
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
