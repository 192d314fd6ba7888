/* fuzz_mproto: the session monitor's protocol (src/session/mproto.c), both
 * ends, as bytes arrive from a peer: the record a monitor reads from a
 * client (mp_recv on a SOCK_SEQPACKET socket, inline or "@" with the
 * record in a memfd, with descriptors attached), and the reply a client
 * reads back (the "result" object and the output windows of its memfd,
 * result_wire_read, as session.c reads them).
 *
 * Input: byte 0 chooses the shape (bit 0: the record goes in a memfd
 * behind "@"; bit 1: a descriptor rides along; bit 2: "@" with no memfd
 * at all); the rest is the record.  Whatever the bytes, mp_recv must end
 * in 0 with a NUL-terminated record or a negative errno, close every
 * descriptor it does not hand back, and the reply parser must not read
 * past the windows it is given. */
#include "session/session.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
reply(const char *rec, size_t len)
{
	/* the client's side: {"ok":true,"result":{...}} and windows whose
	 * lengths the record claims (session.c checks them against the
	 * memfd's size; here the record's bytes stand for the memfd) */
	json_t *o = json_loadb(rec, len, 0, NULL);
	json_t *res = json_object_get(o, "result");
	if (json_is_object(res)) {
		size_t l1 = (size_t)json_integer_value(json_object_get(res, "out_len"));
		size_t l2 = (size_t)json_integer_value(json_object_get(res, "err_len"));
		if (l1 > len || l2 > len - l1)
			l1 = l2 = 0;
		wd_result *r = result_wire_read(res, rec, l1, rec + l1, l2);
		wd_result_free(r);
	}
	json_decref(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 17))
		return 0;
	unsigned shape = data[0];
	const char *rec = (const char *)data + 1;
	size_t len = size - 1;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	int fds[MP_MAX_FDS], nfds = 0, memfd = -1;
	if (shape & 2)
		fds[nfds++] = dup(sv[0]);
	if ((shape & 1) && !(shape & 4)) {
		memfd = mp_memfd("fuzz", rec, len);
		fds[nfds++] = memfd;
	}
	struct iovec iov = {.iov_base = (void *)(uintptr_t)((shape & 5) ? "@" : rec),
			    .iov_len = (shape & 5) ? 1 : len};
	union {
		char b[CMSG_SPACE(sizeof(int) * MP_MAX_FDS)];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds) {
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	/* an empty record is a zero-length datagram: mp_recv reads it as the
	 * peer's end, as it must */
	bool sent = sendmsg(sv[1], &mh, MSG_NOSIGNAL) >= 0;
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (!sent)
		shutdown(sv[1], SHUT_WR);
	char *json = NULL;
	int got[MP_MAX_FDS], ngot = 0;
	int rc = mp_recv(sv[0], &json, got, &ngot, 0);
	if (rc == 0) {
		if (!json)
			abort();
		size_t n = strlen(json);
		/* the monitor's side: one JSON object, its "op" */
		json_t *q = json_loads(json, 0, NULL);
		(void)json_string_value(json_object_get(q, "op"));
		json_decref(q);
		reply(json, n);
		free(json);
		for (int i = 0; i < ngot; i++)
			close(got[i]);
	} else if (json || ngot) {
		abort(); /* a failure hands back nothing */
	}
	close(sv[0]);
	close(sv[1]);
	return 0;
}
