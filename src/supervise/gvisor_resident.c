/* supervise/gvisor_resident: warden's end of the resident executor (the
 * session's init, `warden-init serve`, gvisor_init.c; the protocol in
 * gvisor_wire.h).
 *
 * A session's commands are messages on two host pipes that are the init's
 * stdin and stdout: no Go program starts per command (runsc exec, ~30 ms
 * here).  One reader thread per sandbox takes the replies and hands each
 * command its own: output bytes into the command's socket pairs (read by
 * gv_exec's loop and the bounded capture as before), the exit status and
 * the end into its note pipe.  The reader owns the write ends of a
 * registered command and closes them at its DONE, or at the loss of the
 * executor (EOF or a frame that fails a check: the sandbox is then ended,
 * never trusted further).  The reader never blocks on a command: its
 * socket pairs are non-blocking, what one has no room for is held, and
 * past GVW_PAUSE_AT held bytes the executor is told to stop reading that
 * command's output until all of it is taken (PAUSE, RESUME), so a flood
 * or a caller that stops reading holds up only its own command.  Writes
 * to the executor are serialised by a mutex; every frame is whole. */
#include "supervise/gvisor.h"
#include "supervise/gvisor_wire.h"
#include "cgroup/cgroup.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

/* How long the executor may take to say HELLO after runsc start. */
#define HELLO_TIMEOUT_MS 30000

struct gv_rcmd {
	uint32_t id;
	int out_w[3]; /* [1], [2]: write ends of the command's output socket pairs
		       * (non-blocking: the reader never waits for one command) */
	int note_w;   /* write end of its note pipe: struct gv_note records */
	bool status;  /* its EXIT came: one status per command */
	struct gv_held {
		char *b;
		size_t off, len; /* held bytes: b[off, len) */
	} held[3];		 /* [1], [2]: output its socket pair had no room for */
	bool paused;		 /* GVW_PAUSE sent, RESUME not yet */
	bool done;		 /* GVW_DONE seen: ends once its held output is taken */
};

struct gv_res {
	int req_w, rep_r, stop_fd;
	pthread_mutex_t wlock, tlock;
	pthread_t reader;
	bool reader_on;
	bool lost; /* EOF or a bad frame: no more commands through it */
	struct gv_rcmd *cmds[GVW_MAX_CMDS];
	struct sandbox *sb;
};

static void
rcmd_end(struct gv_rcmd *c)
{
	for (int s = 1; s <= 2; s++) {
		if (c->out_w[s] >= 0)
			close(c->out_w[s]);
		free(c->held[s].b);
	}
	if (c->note_w >= 0)
		close(c->note_w);
	free(c);
}

static void
note(struct gv_rcmd *c, int kind, int value)
{
	struct gv_note n = {kind, value};
	/* 8 bytes into an empty pipe: whole, never blocks */
	(void)!write(c->note_w, &n, sizeof(n));
}

int
gv_res_pipes(struct gv *g, int init_fds[2], struct wd_err *err)
{
	int req[2], rep[2];
	if (pipe2(req, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "executor pipes");
	if (pipe2(rep, O_CLOEXEC) < 0) {
		close(req[0]);
		close(req[1]);
		return wd_err_sys(err, errno, "executor pipes");
	}
	fcntl(rep[0], F_SETPIPE_SZ, 1 << 20);
	struct gv_res *r = wd_xcalloc(1, sizeof(*r));
	r->req_w = req[1];
	r->rep_r = rep[0];
	r->stop_fd = -1;
	pthread_mutex_init(&r->wlock, NULL);
	pthread_mutex_init(&r->tlock, NULL);
	g->res = r;
	init_fds[0] = req[0];
	init_fds[1] = rep[1];
	return 0;
}

/* Read exactly n bytes of rep_r, or fail; waits for stop_fd too. */
static int
read_full(struct gv_res *r, void *buf, size_t n, int timeout_ms)
{
	char *p = buf;
	while (n > 0) {
		struct pollfd pf[2] = {{.fd = r->rep_r, .events = POLLIN},
				       {.fd = r->stop_fd, .events = POLLIN}};
		int k = poll(pf, r->stop_fd >= 0 ? 2 : 1, timeout_ms);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (r->stop_fd >= 0 && pf[1].revents))
			return -1;
		ssize_t got = read(r->rep_r, p, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

/* The executor is lost: every command in flight ends (EOF on its note
 * without a status: gv_exec reports the sandbox dead). */
static void
lose(struct gv_res *r, const char *why)
{
	pthread_mutex_lock(&r->tlock);
	if (!r->lost && why)
		wd_log(WD_LOG_WARN, "sandbox %s: gVisor's resident executor: %s; the sandbox ends",
		       r->sb->id, why);
	r->lost = true;
	for (int i = 0; i < GVW_MAX_CMDS; i++)
		if (r->cmds[i]) {
			rcmd_end(r->cmds[i]);
			r->cmds[i] = NULL;
		}
	pthread_mutex_unlock(&r->tlock);
}

static struct gv_rcmd *
find(struct gv_res *r, uint32_t id)
{
	/* a command past its DONE is no longer the executor's (its id is
	 * free there): only its held output is left to hand on */
	for (int i = 0; i < GVW_MAX_CMDS; i++)
		if (r->cmds[i] && r->cmds[i]->id == id && !r->cmds[i]->done)
			return r->cmds[i];
	return NULL;
}

static size_t
held_bytes(const struct gv_rcmd *c)
{
	return c->held[1].len - c->held[1].off + c->held[2].len - c->held[2].off;
}

/* Send p[0, n) to stream s's socket pair as far as it takes it now
 * (non-blocking); the count sent.  A reader that has gone (EPIPE: the
 * command's loop closed its end) closes our end: out_w[s] is -1 after. */
static size_t
send_some(struct gv_rcmd *c, int s, const char *p, size_t n)
{
	size_t sent = 0;
	while (c->out_w[s] >= 0 && sent < n) {
		ssize_t w = send(c->out_w[s], p + sent, n - sent, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			close(c->out_w[s]);
			c->out_w[s] = -1;
			break;
		}
		sent += (size_t)w;
	}
	return sent;
}

/* Hand on what stream s of c holds, as far as its socket pair takes it
 * now; then the bytes p[0, n) (none: n 0), the rest held.  A reader that
 * has gone takes nothing more: its bytes are dropped, as a closed pipe
 * drops them. */
static void
hand_on(struct gv_rcmd *c, int s, const char *p, size_t n)
{
	struct gv_held *h = &c->held[s];
	if (h->off < h->len)
		h->off += send_some(c, s, h->b + h->off, h->len - h->off);
	if (c->out_w[s] < 0) {
		free(h->b);
		h->b = NULL;
		h->off = h->len = 0;
		return;
	}
	if (h->off == h->len)
		h->off = h->len = 0;
	if (h->len == 0 && n > 0) {
		size_t sent = send_some(c, s, p, n);
		if (c->out_w[s] < 0)
			return;
		p += sent;
		n -= sent;
	}
	if (n == 0)
		return;
	/* bounded: the executor is told to pause past GVW_PAUSE_AT, and
	 * what arrives after that is bounded by the reply pipe */
	if (h->off > 0) {
		memmove(h->b, h->b + h->off, h->len - h->off);
		h->len -= h->off;
		h->off = 0;
	}
	h->b = wd_xrealloc(h->b, h->len + n);
	memcpy(h->b + h->len, p, n);
	h->len += n;
}

static void
forget(struct gv_res *r, struct gv_rcmd *c)
{
	for (int i = 0; i < GVW_MAX_CMDS; i++)
		if (r->cmds[i] == c)
			r->cmds[i] = NULL;
	rcmd_end(c);
}

static int send_frame(struct gv_res *r, uint16_t type, uint32_t id, const void *p, uint32_t n);

/* After output was handed on or held: PAUSE a command that holds too
 * much, RESUME one that holds nothing, end one past its DONE whose
 * output is all taken.  Under tlock. */
static void
settle(struct gv_res *r, struct gv_rcmd *c)
{
	size_t held = held_bytes(c);
	if (c->done) {
		if (!held)
			forget(r, c);
		return;
	}
	if (!c->paused && held >= GVW_PAUSE_AT) {
		c->paused = true;
		send_frame(r, GVW_PAUSE, c->id, NULL, 0);
	} else if (c->paused && !held) {
		c->paused = false;
		send_frame(r, GVW_RESUME, c->id, NULL, 0);
	}
}

/* Wait until a reply can be read (1), or the stop (0), handing on held
 * output as the commands' socket pairs make room meanwhile. */
static int
wait_reply(struct gv_res *r)
{
	for (;;) {
		struct pollfd pf[2 + 2 * GVW_MAX_CMDS];
		struct gv_rcmd *who[2 + 2 * GVW_MAX_CMDS];
		int stream[2 + 2 * GVW_MAX_CMDS], n = 0;
		pf[n++] = (struct pollfd){.fd = r->rep_r, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = r->stop_fd, .events = POLLIN};
		pthread_mutex_lock(&r->tlock);
		for (int i = 0; i < GVW_MAX_CMDS; i++)
			for (int s = 1; s <= 2 && r->cmds[i]; s++)
				if (r->cmds[i]->out_w[s] >= 0 &&
				    r->cmds[i]->held[s].off < r->cmds[i]->held[s].len) {
					who[n] = r->cmds[i];
					stream[n] = s;
					pf[n++] = (struct pollfd){.fd = r->cmds[i]->out_w[s],
								  .events = POLLOUT};
				}
		pthread_mutex_unlock(&r->tlock);
		int k = poll(pf, (nfds_t)n, -1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 || pf[1].revents)
			return 0;
		pthread_mutex_lock(&r->tlock);
		for (int i = 2; i < n; i++) {
			/* still registered (lose() may have ended it meanwhile) */
			bool live = false;
			for (int j = 0; j < GVW_MAX_CMDS; j++)
				live |= r->cmds[j] == who[i];
			if (live && pf[i].revents && who[i]->out_w[stream[i]] == pf[i].fd) {
				hand_on(who[i], stream[i], NULL, 0);
				settle(r, who[i]);
			}
		}
		pthread_mutex_unlock(&r->tlock);
		if (pf[0].revents)
			return 1;
	}
}

static void *
reader(void *arg)
{
	struct gv_res *r = arg;
	/* a thread of a library's host process: a note or an output pair
	 * whose reader is gone is EPIPE here, never SIGPIPE to that process */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	char *buf = wd_xmalloc(GVW_MAX_OUT);
	const char *why = NULL;
	for (;;) {
		struct gvw_hdr h;
		if (wait_reply(r) <= 0 || read_full(r, &h, sizeof(h), -1) < 0)
			break; /* the sandbox's end, or destroy */
		/* checked before the payload is read: a type we know, a length
		 * within its bound, a command we started */
		bool ok =
		    (h.type == GVW_OUT && h.len <= GVW_MAX_OUT && (h.aux == 1 || h.aux == 2)) ||
		    ((h.type == GVW_EXIT || h.type == GVW_FAIL) && h.len == 4 && !h.aux) ||
		    (h.type == GVW_DONE && h.len == 0 && !h.aux);
		if (!ok) {
			why = "a malformed reply";
			break;
		}
		if (h.len && read_full(r, buf, h.len, -1) < 0)
			break;
		pthread_mutex_lock(&r->tlock);
		struct gv_rcmd *c = find(r, h.id);
		if (!c) {
			pthread_mutex_unlock(&r->tlock);
			why = "a reply for no command of ours";
			break;
		}
		/* Why: one status per command.  After the first the caller may
		 * have read it and gone (its note closed): a second, a forged
		 * one, would be written into a pipe with no reader */
		if ((h.type == GVW_EXIT || h.type == GVW_FAIL) && c->status) {
			pthread_mutex_unlock(&r->tlock);
			why = "a second status for one command";
			break;
		}
		int v = 0;
		if (h.len == 4)
			memcpy(&v, buf, 4);
		if (h.type == GVW_OUT) {
			/* never waits: a command whose loop is behind (its
			 * caller not reading, a flood) has the rest held and
			 * the executor paused for it, so the other commands'
			 * replies and destroy's stop are never stuck behind
			 * one socket pair */
			hand_on(c, h.aux, buf, h.len);
			settle(r, c);
		} else if (h.type == GVW_EXIT) {
			c->status = true;
			note(c, GV_NOTE_EXIT, v);
		} else if (h.type == GVW_FAIL) {
			note(c, GV_NOTE_FAIL, v);
			forget(r, c);
		} else {
			/* DONE: the end of the output once what is held is
			 * taken */
			c->done = true;
			settle(r, c);
		}
		pthread_mutex_unlock(&r->tlock);
	}
	free(buf);
	lose(r, why);
	if (why)
		syscall(SYS_pidfd_send_signal, ((struct gv *)r->sb->priv)->sentry_pidfd, SIGKILL,
			NULL, 0);
	return NULL;
}

int
gv_res_ready(struct sandbox *sb, struct gv *g, struct wd_err *err)
{
	struct gv_res *r = g->res;
	r->sb = sb;
	struct gvw_hdr h;
	char magic[sizeof(GVW_MAGIC)] = "";
	if (read_full(r, &h, sizeof(h), HELLO_TIMEOUT_MS) < 0 || h.type != GVW_HELLO ||
	    h.len != sizeof(GVW_MAGIC) - 1 || h.id != 0 ||
	    read_full(r, magic, h.len, HELLO_TIMEOUT_MS) < 0 || memcmp(magic, GVW_MAGIC, h.len))
		return wd_err_set(err, WD_E_SYS,
				  "gVisor's resident executor (warden-init serve) did not answer");
	r->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (r->stop_fd < 0)
		return wd_err_sys(err, errno, "eventfd");
	int rc = pthread_create(&r->reader, NULL, reader, r);
	if (rc != 0)
		return wd_err_sys(err, rc, "executor reader thread");
	r->reader_on = true;
	return 0;
}

void
gv_res_free(struct gv *g)
{
	struct gv_res *r = g->res;
	if (!r)
		return;
	if (r->reader_on) {
		uint64_t one = 1;
		(void)!write(r->stop_fd, &one, sizeof(one));
		pthread_join(r->reader, NULL);
	}
	lose(r, NULL);
	int fds[] = {r->req_w, r->rep_r, r->stop_fd};
	for (size_t i = 0; i < WD_ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pthread_mutex_destroy(&r->wlock);
	pthread_mutex_destroy(&r->tlock);
	free(r);
	g->res = NULL;
}

bool
gv_res_usable(const struct gv *g)
{
	struct gv_res *r = g->res;
	if (!r || !r->reader_on)
		return false;
	pthread_mutex_lock(&r->tlock);
	bool ok = !r->lost;
	pthread_mutex_unlock(&r->tlock);
	return ok;
}

/* One whole frame to the executor.  Why SIGPIPE is held: the executor
 * can be gone (the sentry killed in the sandbox's cgroup at its memory
 * limit, which the sandbox's own commands reach) before the reader has
 * seen its end; the write then meets a pipe with no reader, and SIGPIPE
 * would end a library caller's process (the server and the monitor
 * ignore it).  EPIPE is the error; the reader's EOF ends the commands. */
static int
send_frame(struct gv_res *r, uint16_t type, uint32_t id, const void *p, uint32_t n)
{
	struct gvw_hdr h = {n, type, 0, id};
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	pthread_mutex_lock(&r->wlock);
	int rc = wd_write_all(r->req_w, &h, sizeof(h));
	if (rc == 0 && n)
		rc = wd_write_all(r->req_w, p, n);
	pthread_mutex_unlock(&r->wlock);
	if (rc == -EPIPE && !was_pending) {
		struct timespec zero = {0, 0};
		sigtimedwait(&pipe_set, NULL, &zero); /* ours, taken back */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int
gv_res_run(struct gv *g, uint32_t id, const char *const *argv, const char *const *env,
	   const char *cwd, int out_r[3], int *note_r, struct wd_err *err)
{
	struct gv_res *r = g->res;
	uint32_t argc = 0, envc = 0;
	size_t len = 8 + strlen(cwd) + 1;
	for (; argv[argc]; argc++)
		len += strlen(argv[argc]) + 1;
	for (; env && env[envc]; envc++)
		len += strlen(env[envc]) + 1;
	if (len > GVW_MAX_REQUEST || argc > GVW_MAX_STRINGS || envc > GVW_MAX_STRINGS)
		return -E2BIG; /* the caller takes runsc exec */
	int sp[2][2] = {{-1, -1}, {-1, -1}}, np[2] = {-1, -1}, rc = 0;
	for (int s = 0; s < 2; s++)
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp[s]) < 0) {
			rc = wd_err_sys(err, errno, "socketpair");
			goto fail;
		}
	if (pipe2(np, O_CLOEXEC) < 0) {
		rc = wd_err_sys(err, errno, "pipe");
		goto fail;
	}
	int big = 1 << 20;
	for (int s = 0; s < 2; s++) {
		setsockopt(sp[s][1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		fcntl(sp[s][0], F_SETFL, O_NONBLOCK);
		fcntl(sp[s][1], F_SETFL, O_NONBLOCK);
		shutdown(sp[s][0], SHUT_WR);
	}
	char *msg = wd_xmalloc(len), *p = msg + 8;
	memcpy(msg, &argc, 4);
	memcpy(msg + 4, &envc, 4);
	p = stpcpy(p, cwd) + 1;
	for (uint32_t i = 0; i < argc; i++)
		p = stpcpy(p, argv[i]) + 1;
	for (uint32_t i = 0; i < envc; i++)
		p = stpcpy(p, env[i]) + 1;
	struct gv_rcmd *c = wd_xcalloc(1, sizeof(*c));
	*c = (struct gv_rcmd){.id = id, .out_w = {-1, sp[0][1], sp[1][1]}, .note_w = np[1]};
	pthread_mutex_lock(&r->tlock);
	int slot = -1;
	for (int i = 0; i < GVW_MAX_CMDS && slot < 0 && !r->lost; i++)
		if (!r->cmds[i])
			slot = i;
	if (slot >= 0)
		r->cmds[slot] = c;
	pthread_mutex_unlock(&r->tlock);
	if (slot < 0) {
		free(c);
		free(msg);
		rc = -EAGAIN; /* busy or lost: the caller takes runsc exec */
		goto fail;
	}
	/* the reader owns the write ends from here */
	out_r[1] = sp[0][0];
	out_r[2] = sp[1][0];
	*note_r = np[0];
	if (send_frame(r, GVW_RUN, id, msg, (uint32_t)len) < 0) {
		/* the executor is gone: the note's EOF says so to the caller */
		pthread_mutex_lock(&r->tlock);
		if (find(r, id))
			forget(r, c);
		pthread_mutex_unlock(&r->tlock);
	}
	free(msg);
	return 0;
fail:
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < 2; k++)
			if (sp[s][k] >= 0)
				close(sp[s][k]);
	for (int k = 0; k < 2; k++)
		if (np[k] >= 0)
			close(np[k]);
	return rc;
}

int
gv_res_attach(struct gv *g, uint32_t id, struct wd_err *err)
{
	struct gv_res *r = g->res;
	int np[2];
	if (pipe2(np, O_CLOEXEC) < 0)
		return wd_err_sys(err, errno, "pipe");
	struct gv_rcmd *c = wd_xcalloc(1, sizeof(*c));
	*c = (struct gv_rcmd){.id = id, .out_w = {-1, -1, -1}, .note_w = np[1]};
	pthread_mutex_lock(&r->tlock);
	int slot = -1;
	for (int i = 0; i < GVW_MAX_CMDS && slot < 0 && !r->lost; i++)
		if (!r->cmds[i])
			slot = i;
	if (slot >= 0)
		r->cmds[slot] = c;
	pthread_mutex_unlock(&r->tlock);
	if (slot < 0) {
		rcmd_end(c);
		close(np[0]);
		return wd_err_set(err, WD_E_SYS, "gVisor's resident executor is lost or busy");
	}
	if (send_frame(r, GVW_ATTACH, id, NULL, 0) < 0) {
		pthread_mutex_lock(&r->tlock);
		if (find(r, id))
			forget(r, c);
		pthread_mutex_unlock(&r->tlock);
	}
	/* the executor's answer: EXIT 0 is the workspace in place; FAIL or
	 * the end of the note without a record is no workspace, and the
	 * sandbox is not used (the caller discards it) */
	struct gv_note n = {0, 0};
	struct pollfd pf = {.fd = np[0], .events = POLLIN};
	ssize_t got = poll(&pf, 1, HELLO_TIMEOUT_MS) == 1 ? read(np[0], &n, sizeof(n)) : -1;
	close(np[0]);
	if (got == (ssize_t)sizeof(n) && n.kind == GV_NOTE_EXIT && n.value == 0)
		return 0;
	if (got == (ssize_t)sizeof(n) && n.kind == GV_NOTE_FAIL)
		return wd_err_sys(err, n.value, "gVisor: the workspace's bind onto /workspace");
	return wd_err_set(err, WD_E_SYS, "gVisor's resident executor did not attach the workspace");
}

void
gv_res_kill(struct gv *g, uint32_t id, int sig)
{
	uint32_t s = (uint32_t)sig;
	send_frame(g->res, GVW_KILL, id, &s, sizeof(s));
}

void
gv_res_close(struct gv *g, uint32_t id)
{
	send_frame(g->res, GVW_CLOSE, id, NULL, 0);
}
