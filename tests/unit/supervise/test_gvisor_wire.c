/* gvisor_resident: warden's end of the resident executor's protocol,
 * against a fake executor (this test) on the channel's other ends: the
 * RUN frame warden writes, replies handed to the right command, and each
 * malformed reply taken as the executor lost (every command in flight
 * ends without a status, no further command goes through it). */
#include "supervise/gvisor.h"
#include "supervise/gvisor_wire.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct fake {
	struct sandbox sb;
	struct gv g;
	int req_r, rep_w; /* the executor's ends */
};

static void
reply(struct fake *f, uint16_t type, uint16_t aux, uint32_t id, const void *p, uint32_t n)
{
	struct gvw_hdr h = {n, type, aux, id};
	cr_assert_eq(write(f->rep_w, &h, sizeof(h)), (ssize_t)sizeof(h));
	if (n)
		cr_assert_eq(write(f->rep_w, p, n), (ssize_t)n);
}

static void
start(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->sb.id, sizeof(f->sb.id), "unitwire");
	f->sb.priv = &f->g;
	f->g.sentry_pidfd = -1;
	struct wd_err e = {0};
	int fds[2];
	cr_assert_eq(gv_res_pipes(&f->g, fds, &e), 0, "%s", e.msg);
	f->req_r = fds[0];
	f->rep_w = fds[1];
	reply(f, GVW_HELLO, 0, 0, GVW_MAGIC, sizeof(GVW_MAGIC) - 1);
	cr_assert_eq(gv_res_ready(&f->sb, &f->g, &e), 0, "%s", e.msg);
	cr_assert(gv_res_usable(&f->g));
}

static void
stop(struct fake *f)
{
	close(f->rep_w);
	gv_res_free(&f->g);
	close(f->req_r);
}

/* Wait for fd to be readable (or at EOF), 5 s at most. */
static void
readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 5000), 1, "fd %d never became readable", fd);
}

static int
run(struct fake *f, uint32_t id, int out[3], int *note)
{
	const char *argv[] = {"/bin/echo", "a b", NULL};
	const char *env[] = {"PATH=/bin", NULL};
	struct wd_err e = {0};
	return gv_res_run(&f->g, id, argv, env, "/workspace", out, note, &e);
}

Test(gvisor_wire, run_frame_and_replies_to_their_command)
{
	struct fake f;
	start(&f);
	int out[3] = {-1, -1, -1}, note = -1;
	cr_assert_eq(run(&f, 7, out, &note), 0);
	/* the RUN frame: counts, cwd, argv, env, each NUL-terminated */
	char buf[256];
	struct gvw_hdr h;
	cr_assert_eq(read(f.req_r, &h, sizeof(h)), (ssize_t)sizeof(h));
	cr_expect_eq(h.type, GVW_RUN);
	cr_expect_eq(h.id, 7u);
	static const char want[] = "\2\0\0\0\1\0\0\0/workspace\0/bin/echo\0a b\0PATH=/bin";
	cr_assert_eq(h.len, sizeof(want));
	cr_assert_eq(read(f.req_r, buf, h.len), (ssize_t)h.len);
	cr_expect(!memcmp(buf, want, sizeof(want)));
	reply(&f, GVW_OUT, 1, 7, "out", 3);
	reply(&f, GVW_OUT, 2, 7, "err", 3);
	int st = 3 << 8;
	reply(&f, GVW_EXIT, 0, 7, &st, 4);
	readable(out[1]);
	cr_expect_eq(read(out[1], buf, sizeof(buf)), 3);
	cr_expect(!memcmp(buf, "out", 3));
	readable(out[2]);
	cr_expect_eq(read(out[2], buf, sizeof(buf)), 3);
	struct gv_note n;
	readable(note);
	cr_assert_eq(read(note, &n, sizeof(n)), (ssize_t)sizeof(n));
	cr_expect_eq(n.kind, GV_NOTE_EXIT);
	cr_expect_eq(n.value, 3 << 8);
	/* DONE: the output and the note end */
	reply(&f, GVW_DONE, 0, 7, NULL, 0);
	readable(out[1]);
	cr_expect_eq(read(out[1], buf, sizeof(buf)), 0);
	readable(note);
	cr_expect_eq(read(note, &n, sizeof(n)), 0);
	cr_expect(gv_res_usable(&f.g));
	close(out[1]);
	close(out[2]);
	close(note);
	stop(&f);
}

/* One malformed reply with a command in flight: the command's note ends
 * with no EXIT record and the executor is not used again. */
static void
lost_after(const struct gvw_hdr *bad, const void *payload)
{
	struct fake f;
	start(&f);
	int out[3] = {-1, -1, -1}, note = -1;
	cr_assert_eq(run(&f, 9, out, &note), 0);
	cr_assert_eq(write(f.rep_w, bad, sizeof(*bad)), (ssize_t)sizeof(*bad));
	if (payload && bad->len)
		cr_assert_eq(write(f.rep_w, payload, bad->len), (ssize_t)bad->len);
	readable(note);
	struct gv_note n;
	cr_expect_eq(read(note, &n, sizeof(n)), 0, "the note ends without a status");
	cr_expect(!gv_res_usable(&f.g), "the executor is not used again");
	int out2[3] = {-1, -1, -1}, note2 = -1;
	cr_expect_eq(run(&f, 10, out2, &note2), -EAGAIN, "a new command goes elsewhere");
	close(out[1]);
	close(out[2]);
	close(note);
	stop(&f);
}

Test(gvisor_wire, out_for_a_stream_that_is_not_1_or_2)
{
	struct gvw_hdr h = {3, GVW_OUT, 3, 9};
	lost_after(&h, "abc");
}

Test(gvisor_wire, out_past_its_bound)
{
	struct gvw_hdr h = {GVW_MAX_OUT + 1, GVW_OUT, 1, 9};
	lost_after(&h, NULL);
}

Test(gvisor_wire, a_reply_for_no_command_of_ours)
{
	int st = 0;
	struct gvw_hdr h = {4, GVW_EXIT, 0, 12345};
	lost_after(&h, &st);
}

Test(gvisor_wire, exit_of_the_wrong_length)
{
	struct gvw_hdr h = {2, GVW_EXIT, 0, 9};
	lost_after(&h, "xx");
}

Test(gvisor_wire, an_unknown_type)
{
	struct gvw_hdr h = {0, 99, 0, 9};
	lost_after(&h, NULL);
}

Test(gvisor_wire, a_request_type_as_a_reply)
{
	struct gvw_hdr h = {0, GVW_HELLO, 0, 9};
	lost_after(&h, NULL);
}

Test(gvisor_wire, eof_of_the_channel)
{
	struct fake f;
	start(&f);
	int out[3] = {-1, -1, -1}, note = -1;
	cr_assert_eq(run(&f, 9, out, &note), 0);
	close(f.rep_w);
	f.rep_w = open("/dev/null", O_WRONLY);
	readable(note);
	struct gv_note n;
	cr_expect_eq(read(note, &n, sizeof(n)), 0);
	cr_expect(!gv_res_usable(&f.g));
	close(out[1]);
	close(out[2]);
	close(note);
	stop(&f);
}

Test(gvisor_wire, no_hello_is_an_error)
{
	struct gv g = {0};
	struct sandbox sb = {0};
	g.sentry_pidfd = -1;
	sb.priv = &g;
	struct wd_err e = {0};
	int fds[2];
	cr_assert_eq(gv_res_pipes(&g, fds, &e), 0);
	struct gvw_hdr h = {5, GVW_HELLO, 0, 0};
	cr_assert_eq(write(fds[1], &h, sizeof(h)), (ssize_t)sizeof(h));
	cr_assert_eq(write(fds[1], "hello", 5), 5);
	cr_expect_lt(gv_res_ready(&sb, &g, &e), 0);
	cr_expect(strstr(e.msg, "did not answer") != NULL, "%s", e.msg);
	cr_expect(!gv_res_usable(&g));
	close(fds[0]);
	close(fds[1]);
	gv_res_free(&g);
}

/* A second status for one command, after its caller has read the first
 * and gone (its note closed): warden wrote it into a pipe with no reader,
 * and SIGPIPE ended the process (a library caller's: the server and the
 * monitor ignore it).  One EXIT (or FAIL) per command: a second is a
 * malformed reply, and the executor is lost, whenever it comes. */
Test(gvisor_wire, a_second_exit_for_one_command)
{
	struct fake f;
	start(&f);
	int out[3] = {-1, -1, -1}, note = -1;
	cr_assert_eq(run(&f, 9, out, &note), 0);
	int st = 0;
	reply(&f, GVW_EXIT, 0, 9, &st, 4);
	readable(note);
	struct gv_note n;
	cr_assert_eq(read(note, &n, sizeof(n)), (ssize_t)sizeof(n));
	cr_expect_eq(n.kind, GV_NOTE_EXIT);
	/* the caller is done with the command (its drain grace ran out) */
	close(note);
	close(out[1]);
	close(out[2]);
	reply(&f, GVW_EXIT, 0, 9, &st, 4);
	/* the reader takes it as the executor lost; nothing else happens */
	for (int t = 0; t < 5000 && gv_res_usable(&f.g); t += 10)
		usleep(10000);
	cr_expect(!gv_res_usable(&f.g), "a second EXIT for one command is a malformed reply");
	stop(&f);
}

Test(gvisor_wire, fail_after_exit)
{
	struct fake f;
	start(&f);
	int out[3] = {-1, -1, -1}, note = -1;
	cr_assert_eq(run(&f, 9, out, &note), 0);
	int st = 0, e = 12;
	reply(&f, GVW_EXIT, 0, 9, &st, 4);
	reply(&f, GVW_FAIL, 0, 9, &e, 4);
	readable(note);
	struct gv_note n;
	cr_assert_eq(read(note, &n, sizeof(n)), (ssize_t)sizeof(n));
	cr_expect_eq(n.kind, GV_NOTE_EXIT);
	readable(note);
	cr_expect_eq(read(note, &n, sizeof(n)), 0, "no second record: the executor is lost");
	cr_expect(!gv_res_usable(&f.g));
	close(note);
	close(out[1]);
	close(out[2]);
	stop(&f);
}

/* The executor gone (the sentry ended: OOM in the sandbox's cgroup, a
 * crash) before the reader has seen its end: a KILL, a CLOSE or a RUN
 * written to the channel met a pipe with no reader, and SIGPIPE ended the
 * caller's process (a library caller's; the server and the monitor ignore
 * it).  It is an error, and the command ends as with a lost executor. */
Test(gvisor_wire, a_request_to_an_executor_that_is_gone)
{
	struct fake f;
	start(&f);
	int out[3] = {-1, -1, -1}, note = -1;
	cr_assert_eq(run(&f, 9, out, &note), 0);
	close(f.req_r);
	f.req_r = -1;
	gv_res_kill(&f.g, 9, SIGKILL);
	gv_res_close(&f.g, 9);
	int out2[3] = {-1, -1, -1}, note2 = -1;
	int rc = run(&f, 10, out2, &note2);
	if (rc == 0) {
		/* taken, then its frame failed: its note ends without a status */
		readable(note2);
		struct gv_note n;
		cr_expect_eq(read(note2, &n, sizeof(n)), 0);
		close(out2[1]);
		close(out2[2]);
		close(note2);
	}
	close(out[1]);
	close(out[2]);
	close(note);
	close(f.rep_w);
	f.rep_w = -1;
	gv_res_free(&f.g);
}
