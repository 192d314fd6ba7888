/* jail/raw: the system calls of the child side of clone() (pid 1, the
 * command's process up to execve, the keeper, the idmap holder) without
 * libc's wrappers.
 *
 * Why: those processes are raw clones of a possibly multithreaded program,
 * and in a sanitizer build libc's wrapper is the runtime's interceptor.
 * An interceptor may take a lock of the runtime's (TSan's descriptor
 * bookkeeping on recvmsg, close and dup2 allocates under spin locks; its
 * _exit runs the race report's finalisation), and a raw clone copies such a
 * lock held if another thread had it at that instant: two pid 1s of
 * api-concurrent under TSan spun in sched_yield inside
 * __interceptor_recvmsg -> StaticSpinMutex::Lock until the 600 s timeout.
 * syscall(2) itself is intercepted by no sanitizer.  The kernel's calls
 * take no lock of ours.
 *
 * Each keeps libc's convention (-1 and errno), so callers read as before;
 * tests/integration/child_calls.py checks from the objects that nothing
 * reachable after clone calls an interceptor. */
#ifndef WD_JAIL_RAW_H
#define WD_JAIL_RAW_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline int
raw_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}
static inline ssize_t
raw_read(int fd, void *buf, size_t n)
{
	return syscall(SYS_read, fd, buf, n);
}
static inline ssize_t
raw_write(int fd, const void *buf, size_t n)
{
	return syscall(SYS_write, fd, buf, n);
}
static inline int
raw_open(const char *path, int flags, mode_t mode)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}
static inline int
raw_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}
static inline int
raw_fstatat(int dfd, const char *path, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dfd, path, st, flags);
}

static inline int
raw_fcntl(int fd, int cmd, long arg)
{
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}
static inline int
raw_socket(int domain, int type, int proto)
{
	return (int)syscall(SYS_socket, domain, type, proto);
}
static inline int
raw_bind(int fd, const void *sa, socklen_t len)
{
	return (int)syscall(SYS_bind, fd, sa, len);
}
static inline int
raw_listen(int fd, int backlog)
{
	return (int)syscall(SYS_listen, fd, backlog);
}
static inline int
raw_setsockopt(int fd, int level, int opt, const void *v, socklen_t len)
{
	return (int)syscall(SYS_setsockopt, fd, level, opt, v, len);
}
static inline int
raw_ioctl(int fd, unsigned long req, void *arg)
{
	return (int)syscall(SYS_ioctl, fd, req, arg);
}
static inline ssize_t
raw_sendmsg(int fd, const struct msghdr *mh, int flags)
{
	return syscall(SYS_sendmsg, fd, mh, flags);
}
static inline ssize_t
raw_recvmsg(int fd, struct msghdr *mh, int flags)
{
	return syscall(SYS_recvmsg, fd, mh, flags);
}
static inline int
raw_epoll_create1(int flags)
{
	return (int)syscall(SYS_epoll_create1, flags);
}
static inline int
raw_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
	return (int)syscall(SYS_epoll_ctl, ep, op, fd, ev);
}
/* epoll_pwait with no mask: epoll_wait is not in every architecture's table */
static inline int
raw_epoll_wait(int ep, struct epoll_event *evs, int n, int ms)
{
	return (int)syscall(SYS_epoll_pwait, ep, evs, n, ms, NULL, (size_t)(_NSIG / 8));
}
static inline int
raw_kill(pid_t pid, int sig)
{
	return (int)syscall(SYS_kill, pid, sig);
}
static inline pid_t
raw_wait4(pid_t pid, int *status, int flags, struct rusage *ru)
{
	return (pid_t)syscall(SYS_wait4, pid, status, flags, ru);
}
static inline void *
raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
static inline int
raw_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}
static inline int
raw_mprotect(void *addr, size_t len, int prot)
{
	return (int)syscall(SYS_mprotect, addr, len, prot);
}
/* a system call where libc would use the vDSO: pid 1 reads the clock a
 * handful of times per sandbox, not per command */
static inline int
raw_clock_gettime(clockid_t clk, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

/* dup2 through dup3, which refuses equal descriptors where dup2 checks
 * the old one and returns it (dup2 is not in every architecture's table) */
static inline int
raw_dup2(int from, int to)
{
	if (from == to)
		return raw_fcntl(from, F_GETFD, 0) < 0 ? -1 : to;
	return (int)syscall(SYS_dup3, from, to, 0);
}

/* poll of one descriptor without waiting: ppoll, with a zero timeout */
static inline int
raw_poll_now(struct pollfd *p, nfds_t n)
{
	struct timespec zero = {0, 0};
	return (int)syscall(SYS_ppoll, p, n, &zero, NULL, (size_t)(_NSIG / 8));
}

/* _exit: libc's is TSan's interceptor, which finalises the race report */
__attribute__((noreturn)) static inline void
raw_exit(int status)
{
	for (;;)
		syscall(SYS_exit_group, status);
}

#endif
