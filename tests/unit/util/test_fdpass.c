/* util/fdpass.h: SCM_RIGHTS written and read through a real socket pair. */
#include "util/fdpass.h"
#include "util/util.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static int closed_by_helper;

static int
count_close(int fd)
{
	closed_by_helper++;
	return close(fd);
}

static void
send_fds(int sock, const int *fds, int n)
{
	char c = 'x';
	struct iovec iov = {&c, 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	WD_FDPASS_BUF(8) u;
	cr_assert_eq(wd_fdpass_put(&mh, &u, sizeof(u), fds, n), 0);
	cr_assert_eq(sendmsg(sock, &mh, MSG_NOSIGNAL), 1);
}

static int
recv_fds(int sock, int *fds, int max)
{
	char c;
	struct iovec iov = {&c, 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	WD_FDPASS_BUF(8) u;
	wd_fdpass_room(&mh, &u, sizeof(u));
	cr_assert_eq(recvmsg(sock, &mh, MSG_CMSG_CLOEXEC), 1);
	return wd_fdpass_take(&mh, fds, max, count_close);
}

static bool
same_file(int a, int b)
{
	struct stat x, y;
	return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

/* Three pipes' read ends sent, room for two taken: the two arrive as the
 * same files, close-on-exec, and the third is closed in the receiver
 * (its pipe has no reader left once the sender's copy is closed too). */
Test(wd_fdpass, more_than_room_are_closed)
{
	signal(SIGPIPE, SIG_IGN);
	int sp[2], p[3][2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	int r[3];
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pipe2(p[i], O_CLOEXEC), 0);
		r[i] = p[i][0];
	}
	send_fds(sp[0], r, 3);
	int got[2] = {-1, -1};
	closed_by_helper = 0;
	cr_assert_eq(recv_fds(sp[1], got, 2), 2);
	cr_expect_eq(closed_by_helper, 1);
	cr_expect(same_file(got[0], r[0]) && same_file(got[1], r[1]));
	cr_expect(fcntl(got[0], F_GETFD) & FD_CLOEXEC);
	close(r[2]);
	cr_expect_eq(write(p[2][1], "x", 1), -1, "the third read end is closed everywhere");
	cr_expect_eq(errno, EPIPE);
	for (int i = 0; i < 2; i++) {
		close(got[i]);
		close(r[i]);
	}
	for (int i = 0; i < 3; i++)
		close(p[i][1]);
	close(sp[0]);
	close(sp[1]);
}

/* No descriptors: no control message at all, and none taken. */
Test(wd_fdpass, none)
{
	int sp[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	send_fds(sp[0], NULL, 0);
	int got[1] = {-1};
	cr_expect_eq(recv_fds(sp[1], got, 1), 0);
	cr_expect_eq(got[0], -1);
	close(sp[0]);
	close(sp[1]);
}

/* A buffer too small for the descriptors asked is refused, not overrun. */
Test(wd_fdpass, small_buffer_refused)
{
	int fds[3] = {0, 1, 2};
	struct msghdr mh = {0};
	WD_FDPASS_BUF(2) u;
	cr_expect_eq(wd_fdpass_put(&mh, &u, sizeof(u), fds, 3), -EINVAL);
	cr_expect_null(mh.msg_control);
	cr_expect_eq(wd_fdpass_put(&mh, &u, sizeof(u), fds, 2), 0);
	cr_expect_eq(mh.msg_controllen, CMSG_SPACE(2 * sizeof(int)));
}
