/* util/fdpass: descriptors over a unix socket (SCM_RIGHTS), the control
 * message only: the caller sends and receives the message itself (the
 * jail with its raw system calls, jail/raw.h; the session monitor's
 * protocol with libc's).
 *
 * Used on both sides of clone() (jail/sync.c): static inline, nothing
 * allocated, no libc function but memset and memcpy (whose sanitizer
 * interceptors take no lock; tests/integration/child_calls.py), and the
 * descriptors dropped are closed by the caller's own close. */
#ifndef WD_UTIL_FDPASS_H
#define WD_UTIL_FDPASS_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

/* Room for n descriptors, aligned for a struct cmsghdr:
 *     WD_FDPASS_BUF(4) u;  ... wd_fdpass_put(&mh, &u, sizeof(u), fds, n) */
#define WD_FDPASS_BUF(n)                                                                           \
	union {                                                                                    \
		char b[CMSG_SPACE(sizeof(int) * (n))];                                             \
		struct cmsghdr align;                                                              \
	}

/* Attach fds[0..nfds) to mh as one SCM_RIGHTS message written in buf (cap
 * bytes, a WD_FDPASS_BUF); with nfds 0, no control message.  0, or
 * -EINVAL when buf is too small. */
static inline int
wd_fdpass_put(struct msghdr *mh, void *buf, size_t cap, const int *fds, int nfds)
{
	mh->msg_control = NULL;
	mh->msg_controllen = 0;
	if (nfds <= 0)
		return 0;
	size_t len = sizeof(int) * (size_t)nfds;
	if (CMSG_SPACE(len) > cap)
		return -EINVAL;
	memset(buf, 0, CMSG_SPACE(len));
	mh->msg_control = buf;
	mh->msg_controllen = CMSG_SPACE(len);
	struct cmsghdr *cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(cm), fds, len);
	return 0;
}

/* Before recvmsg: room in buf (cap bytes, a WD_FDPASS_BUF) for the
 * descriptors that come. */
static inline void
wd_fdpass_room(struct msghdr *mh, void *buf, size_t cap)
{
	mh->msg_control = buf;
	mh->msg_controllen = cap;
}

/* After a recvmsg that succeeded on mh: the descriptors of its SCM_RIGHTS
 * messages into fds, at most max; any beyond are closed with close_fn (a
 * peer may send more than the protocol allows, and an unread descriptor
 * would stay open in us).  Returns how many are in fds. */
static inline int
wd_fdpass_take(struct msghdr *mh, int *fds, int max, int (*close_fn)(int))
{
	int n = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + sizeof(int) * i, sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close_fn(fd);
		}
	}
	return n;
}

#endif
