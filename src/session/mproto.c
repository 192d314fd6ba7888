/* session/mproto: the session monitor's protocol, both ends.
 *
 * A SOCK_SEQPACKET unix socket, monitor.sock, in the session's state
 * directory (sandboxes/<id>/, 0700 in a 0700 state directory: only its
 * owner can reach it).  The monitor checks SO_PEERCRED too: a peer that is
 * neither its own uid nor root is refused before anything is read, and so
 * is a peer inside a sandbox (wd_peer_check: its requests run unjudged).
 *
 * One request per connection, one record each way (a record is a JSON
 * object, written with util/json.h and read with jansson), descriptors as
 * SCM_RIGHTS; a record over 60 KiB travels in a sealed memfd instead, the
 * record itself being "@" with the memfd as its last descriptor:
 *
 *   client                                     monitor
 *   {"op":"exec", argv, env, cwd, timeout_ms,   runs it in the sandbox: the
 *    output_limit, require, stdin, stdout,      command's stdin, stdout and
 *    stderr} + its stdio descriptors            stderr are the client's own
 *   ... {"op":"cancel","signal":N} (optional)   kills it as signal N
 *                                <-  {"ok":true, "result":{...}} + a memfd
 *                                    holding the output windows
 *   {"op":"detach", argv, env, cwd}        <-  {"ok":true, "seq":N, ...}
 *   {"op":"info"}                          <-  {"ok":true, id, pid, running, ...}
 *   {"op":"stop"}                          <-  {"ok":true} once everything is gone
 *   {"op":"diff", paths, flags}            <-  {"ok":true} + a memfd with the text
 *   {"op":"apply", paths, json}            <-  {"ok":true, "status":0|1} + report
 *   {"op":"discard", paths}                <-  {"ok":true, "dropped":N}
 *   {"op":"snapshot", "tag":T}             <-  {"ok":true}
 *
 *   Any failure: {"ok":false, "code":ERRNO, "error":"message"}. */
#include "session/session.h"
#include "util/fdpass.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define MP_INLINE_MAX (60u << 10)

static int
send_record(int sock, const char *buf, size_t len, const int *fds, int nfds)
{
	struct iovec iov = {.iov_base = (void *)(uintptr_t)buf, .iov_len = len};
	WD_FDPASS_BUF(MP_MAX_FDS) u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (wd_fdpass_put(&mh, &u, sizeof(u), fds, nfds) < 0)
		return -EINVAL;
	ssize_t n;
	while ((n = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

int
mp_memfd(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if ((len && wd_write_all(fd, data, len) < 0) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int
mp_send(int sock, const char *json, const int *fds, int nfds)
{
	size_t len = strlen(json);
	if (nfds > MP_MAX_FDS - 1)
		return -EINVAL;
	if (len <= MP_INLINE_MAX)
		return send_record(sock, json, len, fds, nfds);
	int all[MP_MAX_FDS];
	for (int i = 0; i < nfds; i++)
		all[i] = fds[i];
	int m = mp_memfd("warden-request", json, len);
	if (m < 0)
		return m;
	all[nfds] = m;
	int rc = send_record(sock, "@", 1, all, nfds + 1);
	close(m);
	return rc;
}

char *
mp_read_memfd(int fd, size_t max, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > max)
		return NULL;
	char *buf = wd_xmalloc((size_t)st.st_size + 1);
	ssize_t n = pread(fd, buf, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (len)
		*len = (size_t)n;
	return buf;
}

int
mp_recv(int sock, char **json, int *fds, int *nfds, int timeout_ms)
{
	*json = NULL;
	*nfds = 0;
	if (timeout_ms >= 0) {
		struct pollfd p = {.fd = sock, .events = POLLIN};
		int r;
		while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		if (r == 0)
			return -ETIMEDOUT;
	}
	char *buf = wd_xmalloc(MP_INLINE_MAX + 1);
	struct iovec iov = {.iov_base = buf, .iov_len = MP_INLINE_MAX};
	WD_FDPASS_BUF(MP_MAX_FDS) u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	wd_fdpass_room(&mh, &u, sizeof(u));
	ssize_t n;
	while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n >= 0)
		*nfds = wd_fdpass_take(&mh, fds, MP_MAX_FDS, close);
	int rc = 0;
	if (n < 0)
		rc = -errno;
	else if (n == 0)
		rc = -EPIPE; /* the peer closed */
	else if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		rc = -EMSGSIZE;
	if (rc == 0 && n == 1 && buf[0] == '@') {
		/* the record is in a memfd, the last descriptor */
		char *big = *nfds ? mp_read_memfd(fds[*nfds - 1], 64u << 20, NULL) : NULL;
		if (*nfds)
			close(fds[--*nfds]);
		free(buf);
		buf = big;
		if (!buf)
			rc = -EMSGSIZE;
	} else if (rc == 0) {
		buf[n] = '\0';
	}
	if (rc < 0) {
		free(buf);
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		return rc;
	}
	*json = buf;
	return 0;
}
