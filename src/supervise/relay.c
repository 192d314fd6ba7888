/* supervise/relay: a terminal as a command's stdin, relayed through a
 * socket and never handed over (every backend).  With the terminal itself
 * the sandbox could change its modes (stty -echo outlives the run), read
 * what is typed after it, or push input (TIOCSTI); gVisor would forward
 * those ioctls to the real terminal.  The relay reads the terminal only
 * while nothing is pending and waits for room on the socket otherwise;
 * EOF (^D) or the command closing its stdin ends it. */
#include "supervise/supervise.h"

#include <sys/epoll.h>
#include <sys/socket.h>

void
stdin_relay_init(struct stdin_relay *r)
{
	r->tty_in = r->relay_w = r->ep = -1;
	r->len = r->off = 0;
}

int
stdin_relay_open(struct stdin_relay *r, int tty_fd, int *read_end, struct wd_err *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return wd_err_sys(err, errno, "stdin relay");
	shutdown(sv[0], SHUT_WR);
	shutdown(sv[1], SHUT_RD);
	*read_end = sv[0];
	r->relay_w = sv[1];
	r->tty_in = tty_fd;
	return 0;
}

void
stdin_relay_watch(struct stdin_relay *r)
{
	if (r->tty_in < 0)
		return;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = r->tty_in};
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->tty_in, &ev);
}

bool
stdin_relay_owns(const struct stdin_relay *r, int fd)
{
	return fd >= 0 && (fd == r->tty_in || fd == r->relay_w);
}

void
stdin_relay_stop(struct stdin_relay *r)
{
	if (r->tty_in >= 0 && r->ep >= 0)
		epoll_ctl(r->ep, EPOLL_CTL_DEL, r->tty_in, NULL);
	if (r->relay_w >= 0) {
		if (r->ep >= 0)
			epoll_ctl(r->ep, EPOLL_CTL_DEL, r->relay_w, NULL);
		close(r->relay_w);
	}
	r->tty_in = r->relay_w = -1;
}

void
stdin_relay_pump(struct stdin_relay *r)
{
	if (r->len == 0) {
		ssize_t n = read(r->tty_in, r->buf, sizeof(r->buf));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			stdin_relay_stop(r);
			return;
		}
		r->len = (size_t)n;
		r->off = 0;
	}
	while (r->off < r->len) {
		ssize_t w =
		    send(r->relay_w, r->buf + r->off, r->len - r->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			/* full: stop reading the terminal, wait for room */
			struct epoll_event out = {.events = EPOLLOUT, .data.fd = r->relay_w};
			epoll_ctl(r->ep, EPOLL_CTL_DEL, r->tty_in, NULL);
			epoll_ctl(r->ep, EPOLL_CTL_ADD, r->relay_w, &out);
			return;
		}
		if (w < 0) {
			stdin_relay_stop(r); /* the command closed its stdin */
			return;
		}
		r->off += (size_t)w;
	}
	r->len = 0;
	struct epoll_event in = {.events = EPOLLIN, .data.fd = r->tty_in};
	if (epoll_ctl(r->ep, EPOLL_CTL_DEL, r->relay_w, NULL) == 0)
		epoll_ctl(r->ep, EPOLL_CTL_ADD, r->tty_in, &in);
}
