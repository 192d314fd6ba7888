/* core/peer: whether the other end of a unix socket is inside a sandbox
 * (wd_peer_check, for warden serve's socket and a session's monitor).
 *
 * SO_PEERCRED says which user connected, and the owner's connections are
 * the human's channel (warden serve's approval.grant and sandbox.apply; a
 * session monitor's exec, apply and stop, which run what they are sent
 * with no policy stage).  A command warden
 * runs for a model can be that user too: an unprivileged server's
 * sandboxes map to its own uid, and at the process level a command shares
 * the host's filesystem, so it can reach any --socket whose file it may
 * write.  A model that can connect as the owner approves its own
 * requests (docs/threat-model.md).  So a connection is also refused when its
 * process is inside a sandbox:
 *
 *   - its pid namespace or user namespace is not the server's (every
 *     container-level and gVisor jail has both of its own; SO_PEERCRED's
 *     pid is 0 for a process whose pid namespace is not ours or below);
 *   - it is in a sandbox's cgroup (<base>/warden/<16 hex>, cgroup/cgroup.c);
 *   - it descends from the server itself (the process level: commands
 *     are the server's children; a daemonised one comes back to warden,
 *     the subreaper);
 *   - it runs under more seccomp filters than the server (the process
 *     level of any warden, with or without a cgroup: every jail's
 *     command carries one, for good).
 *
 * The pid is checked against reuse: with SO_PEERPIDFD (Linux 6.5) the
 * connecting process's pidfd is taken first, its pid read from the pidfd,
 * and after the /proc reads a signal 0 through the pidfd proves the pid
 * still names that process (a dead peer is refused: it cannot be
 * checked).  Without it, SO_PEERCRED's pid is used as it is, with the
 * race that implies (said in docs/server.md). */
#include "core/core.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* The pid a pidfd refers to, in our pid namespace (fdinfo's "Pid:"):
 * -1 when the process has exited, 0 when it is not visible here. */
static long
pidfd_pid(int pidfd)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *p = strstr(buf, "\nPid:");
	return p ? strtol(p + 5, NULL, 10) : -1;
}

/* The process whose descendants are sandboxed commands: ourselves, or
 * (peer_set_ancestor) the session monitor a checker process serves. */
static long peer_ancestor;

void
peer_set_ancestor(long pid)
{
	peer_ancestor = pid;
}

static bool
same_ns(int procfd, const char *name)
{
	char self[64];
	struct stat a, b;
	snprintf(self, sizeof(self), "/proc/self/ns/%s", name);
	char peer[32];
	snprintf(peer, sizeof(peer), "ns/%s", name);
	return stat(self, &a) == 0 && fstatat(procfd, peer, &b, 0) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Whether a /proc/PID/cgroup text names a sandbox's cgroup: a path with a
 * "warden" component followed by a 16-hex-digit sandbox id. */
static bool
in_sandbox_cgroup(const char *text)
{
	for (const char *p = text; (p = strstr(p, "/warden/")); p++) {
		const char *id = p + 8;
		size_t n = strspn(id, "0123456789abcdef");
		if (n == 16 && (id[16] == '\n' || id[16] == '/' || id[16] == '\0'))
			return true;
	}
	return false;
}

static ssize_t
read_at(int dirfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	ssize_t n;
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* The number of seccomp filters a /proc/PID/status text shows
 * ("Seccomp_filters:", Linux 5.9; before it, 1 for filter mode), or -1. */
static long
seccomp_filters(const char *status)
{
	const char *p = strstr(status, "\nSeccomp_filters:");
	if (p)
		return strtol(p + 17, NULL, 10);
	p = strstr(status, "\nSeccomp:");
	return p ? (strtol(p + 9, NULL, 10) == 2 ? 1 : 0) : -1;
}

/* The parent of pid (from /proc/PID/stat, after the last ')' of comm,
 * which may itself hold ") "), or -1. */
static long
parent_of(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	ssize_t n = read_at(AT_FDCWD, path, buf, sizeof(buf));
	const char *p = n > 0 ? strrchr(buf, ')') : NULL;
	long ppid = -1;
	char state;
	if (!p || sscanf(p + 1, " %c %ld", &state, &ppid) != 2)
		return -1;
	return ppid;
}

static bool
descends_from(long pid, long ancestor)
{
	/* bounded: a pid's chain is at most the pid space's depth, and a
	 * chain that changes under us ends at 1 or fails */
	for (int i = 0; i < 4096 && pid > 1; i++) {
		if (pid == ancestor)
			return true;
		pid = parent_of(pid);
	}
	return false;
}

static bool
admit(int fd, char *why, size_t cap)
{
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0) {
		snprintf(why, cap, "SO_PEERCRED: %s", strerror(errno));
		return false;
	}
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);
	long pid = cr.pid;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
		pid = pidfd_pid(pidfd);
	else if (errno == ENOPROTOOPT)
		pidfd = -1; /* a kernel before 6.5: SO_PEERCRED's pid, racy */
	else
		pid = -1; /* the kernel has it and cannot name the peer: gone */
	bool ok = false;
	int procfd = -1;
	char cg[8192], path[64];
	if (pid <= 0) {
		/* 0: not visible in our pid namespace, so in one of its own
		 * (a jail); -1: gone before it could be checked */
		snprintf(why, cap, "its process is %s",
			 pid == 0 ? "in another pid namespace (inside a sandbox)"
				  : "gone (it cannot be checked)");
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	if ((procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(why, cap, "its process %ld cannot be checked: %s", pid, strerror(errno));
		goto out;
	}
	if (!same_ns(procfd, "pid") || !same_ns(procfd, "user")) {
		snprintf(why, cap,
			 "its process %ld is in another pid or user namespace (inside a sandbox)",
			 pid);
		goto out;
	}
	if (read_at(procfd, "cgroup", cg, sizeof(cg)) < 0) {
		snprintf(why, cap, "its process %ld cannot be checked (cgroup)", pid);
		goto out;
	}
	/* (a server that itself runs in a sandbox's cgroup cannot tell) */
	char own[8192];
	if (in_sandbox_cgroup(cg) &&
	    !(read_at(AT_FDCWD, "/proc/self/cgroup", own, sizeof(own)) > 0 &&
	      in_sandbox_cgroup(own))) {
		snprintf(why, cap, "its process %ld is in a sandbox's cgroup", pid);
		goto out;
	}
	/* Why: at the process level without a cgroup (an unprivileged caller
	 * on a cgroup v1 host needs --best-effort), a command of *another*
	 * warden (warden run, a second server) shares our namespaces, has no
	 * sandbox cgroup and does not descend from us: it connected to this
	 * server's socket as the owner and granted its own pause (an attack pass:
	 * docs/threat-model.md, boundary 6).  Every jail loads a seccomp filter into the command,
	 * which it and every process it starts keep for good (a daemonised one
	 * too), so a peer under more filters than this server is inside one.
	 * A human's client confined more than the server is refused too. */
	char st[16384], ownst[16384];
	long pf = read_at(procfd, "status", st, sizeof(st)) > 0 ? seccomp_filters(st) : -1;
	long of = read_at(AT_FDCWD, "/proc/self/status", ownst, sizeof(ownst)) > 0
		      ? seccomp_filters(ownst)
		      : -1;
	if (pf < 0 || of < 0) {
		snprintf(why, cap, "its process %ld cannot be checked (seccomp)", pid);
		goto out;
	}
	if (pf > of) {
		snprintf(why, cap,
			 "its process %ld runs under %ld seccomp filters, this server under %ld "
			 "(a sandboxed command)",
			 pid, pf, of);
		goto out;
	}
	if (descends_from(pid, peer_ancestor ? peer_ancestor : (long)getpid())) {
		snprintf(why, cap,
			 "its process %ld was started by this server (a sandboxed command)", pid);
		goto out;
	}
	/* the reads above were of the process that connected only if it is
	 * still alive now: its pid cannot have been reused meanwhile */
	if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
		snprintf(why, cap, "its process %ld ended while it was checked", pid);
		goto out;
	}
	ok = true;
out:
	if (procfd >= 0)
		close(procfd);
	if (pidfd >= 0)
		close(pidfd);
	return ok;
}

WD_API int
wd_peer_check(int fd, struct wd_err *err)
{
	char why[200];
	if (admit(fd, why, sizeof(why)))
		return 0;
	wd_err_set(err, WD_E_INVAL, "%s", why);
	return -EPERM;
}
