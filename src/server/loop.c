/* server/loop: one epoll loop for every transport.
 *
 *   listeners   the unix socket (SO_PEERCRED checked on accept), the TCP
 *               socket of --listen
 *   connections stdio (fds 0 and 1), unix-socket and HTTP connections:
 *               non-blocking reads into a buffer, newline framing for the
 *               line transports, non-blocking writes from a buffer
 *   wake_fd     an eventfd: workers posted messages to the out-queue
 *   sig_fd      SIGINT, SIGTERM, SIGHUP: stop
 *   timer_fd    once a second: idle HTTP sessions, the stop deadline
 *
 * Backpressure: a connection whose unread output passes CONN_SOFT_LIMIT
 * is not read from (its client is not reading what it asked for) and its
 * progress notifications are dropped; past CONN_HARD_LIMIT it is closed.
 * Other clients never wait for a slow one: every write is non-blocking,
 * and a line connection gets at most LINE_BUDGET messages per turn of the
 * loop (the rest wait in its buffer, and its socket is not read, until a
 * later turn): a client that floods pings and never reads the answers
 * made the server answer ~100,000 of them (4 MB of answers, the soft
 * limit) in turns of 16 x 64 KiB of input before anyone else's, and other
 * clients' pings waited 2.7-4 s on a slow machine (docs/threat-model.md). */
#include "server/conn.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/sanitize.h"
#include "server/srv.h"
#include "server/health.h"
#include "server/dispatch.h"
#include "server/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>

/* messages a line connection may have dispatched in one turn of the loop */
#define LINE_BUDGET 64

/* epoll tags below this are not connections */
enum { TAG_UNIX = 1, TAG_TCP, TAG_WAKE, TAG_SIG, TAG_TIMER, TAG_MAX = 16 };

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* One JSON object per line (--log-format json): what a log collector
 * reads.  jansson escapes every control byte and quote; msg was made
 * plain text already. */
static void
log_json_line(struct srv *s, const char *level, const char *msg, json_t *fields)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[40];
	size_t w = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + w, sizeof(when) - w, ".%03ldZ", ts.tv_nsec / 1000000);
	json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "time", when, "level", level, "msg", msg,
			      "fields", fields ? json_incref(fields) : json_object());
	char *line =
	    o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII) : NULL;
	json_decref(o);
	if (!line)
		return;
	/* stdout, as a container's log is read; with --stdio stdout is the
	 * protocol, so stderr */
	FILE *f = s->o.stdio ? stderr : stdout;
	fputs(line, f);
	fputc('\n', f);
	fflush(f);
	free(line);
}

static void log_v(struct srv *s, int level, json_t *fields, const char *fmt, va_list ap)
    SRV_PRINTF(4, 0);

static void
log_v(struct srv *s, int level, json_t *fields, const char *fmt, va_list ap)
{
	static const char *const names[] = {"error", "warning", "info", "debug", "trace"};
	bool json = s && s->o.log_json;
	/* JSON logs are read by a collector, not a terminal: the events of
	 * the server's life (info) are in them by default */
	int max = s && s->o.verbose ? WD_LOG_DEBUG : json ? WD_LOG_INFO : WD_LOG_WARN;
	if (level > max) {
		json_decref(fields);
		return;
	}
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* an activation's reason goes to its caller (loop thread, as is the
	 * activation), and to the log as one warning (server.c), not as the
	 * start-up error it would be at start */
	if (s && s->capture && level <= WD_LOG_ERROR) {
		if (!s->capture[0])
			snprintf(s->capture, s->capture_cap, "%s", msg);
		json_decref(fields);
		return;
	}
	/* the log is for an operator's terminal: no byte of it may drive it */
	size_t n = 0;
	char *clean = sanitize_text(msg, strlen(msg), true, NULL, &n);
	/* one event, one line: a newline in a client's name (a model may
	 * choose it) would otherwise start a line that reads as the server's */
	if (!json && strpbrk(clean, "\n\r")) {
		char *one = xmalloc(2 * n + 1), *q = one;
		for (const char *c = clean; *c; c++)
			if (*c == '\n' || *c == '\r') {
				*q++ = '\\';
				*q++ = *c == '\n' ? 'n' : 'r';
			} else {
				*q++ = *c;
			}
		*q = '\0';
		free(clean);
		clean = one;
	}
	pthread_mutex_lock(&log_lock);
	if (json)
		log_json_line(s, names[level > 4 ? 4 : level < 0 ? 0 : level], clean, fields);
	/* errors read as the CLI's do ("warden: serve: --listen: ..."),
	 * everything else says its level */
	else if (level <= WD_LOG_ERROR)
		fprintf(stderr, "warden: serve: %s\n", clean);
	else
		fprintf(stderr, "warden: serve: %s: %s\n", names[level > 4 ? 4 : level], clean);
	pthread_mutex_unlock(&log_lock);
	free(clean);
	json_decref(fields);
}

void
srv_log(struct srv *s, int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_v(s, level, NULL, fmt, ap);
	va_end(ap);
}

void
srv_logf(struct srv *s, int level, json_t *fields, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_v(s, level, fields, fmt, ap);
	va_end(ap);
}

static void
lib_log(int level, const char *func, const char *msg, void *data)
{
	srv_log(data, level, "%s", msg);
	(void)func;
}

void
srv_attach_lib_log(struct srv *s)
{
	wd_ctx_set_log_handler(s->ctx, lib_log, s, s->o.verbose ? WD_LOG_DEBUG : WD_LOG_WARN);
}

/* ---- buffers and connections ---- */

void
buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->len + n + 1 > b->cap) {
		if (b->off) {
			memmove(b->p, b->p + b->off, b->len - b->off);
			b->len -= b->off;
			b->off = 0;
		}
		if (b->len + n + 1 > b->cap) {
			b->cap = (b->len + n + 1) * 2 < 65536 ? 65536 : (b->len + n + 1) * 2;
			b->p = xrealloc(b->p, b->cap);
		}
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
buf_fini(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

size_t
conn_backlog(const struct conn *c)
{
	return c->out.len - c->out.off;
}

static void
set_rmask(struct conn *c, uint32_t mask)
{
	if (c->rfd < 0 || c->rmask == mask)
		return;
	struct epoll_event ev = {.events = mask, .data.ptr = c};
	if (c->rfd == c->wfd && c->wout)
		ev.events |= EPOLLOUT;
	epoll_ctl(c->srv->ep, EPOLL_CTL_MOD, c->rfd, &ev);
	c->rmask = mask;
}

static void
want_out(struct conn *c, bool on)
{
	if (c->wout == on || c->wfd < 0 || !c->wfd_poll)
		return;
	c->wout = on;
	struct epoll_event ev = {.events = on ? EPOLLOUT : 0, .data.ptr = c};
	if (c->wfd == c->rfd) {
		ev.events |= c->rmask;
		epoll_ctl(c->srv->ep, EPOLL_CTL_MOD, c->wfd, &ev);
	} else {
		epoll_ctl(c->srv->ep, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, c->wfd, &ev);
	}
}

static void conn_close_now(struct conn *c);

/* Messages are waiting in c's input buffer: served on a later turn of the
 * loop (serve_pending), and the socket is not read meanwhile, so the
 * buffer does not grow. */
static void
mark_inq(struct conn *c)
{
	if (!c->inq) {
		c->inq = true;
		c->srv->ninq++;
	}
	set_rmask(c, 0);
}

/* Read from c again, or first serve the whole messages its buffer holds
 * (a partial line waits for more input: marking it would spin). */
static void
conn_resume(struct conn *c)
{
	if (c->dead || c->closing || c->paused)
		return;
	const struct buf *b = &c->in;
	size_t from = b->off + c->scanned;
	if (c->kind != T_HTTP && from < b->len && memchr(b->p + from, '\n', b->len - from))
		mark_inq(c);
	else
		set_rmask(c, EPOLLIN | EPOLLRDHUP);
}

void
conn_flush(struct conn *c)
{
	while (!c->dead && conn_backlog(c) > 0) {
		ssize_t w;
		if (c->kind == T_STDIO)
			w = write(c->wfd, c->out.p + c->out.off, conn_backlog(c));
		else
			w = send(c->wfd, c->out.p + c->out.off, conn_backlog(c), MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			want_out(c, true);
			return;
		}
		if (w <= 0) {
			/* the client is gone: EPIPE, ECONNRESET */
			conn_kill(c);
			return;
		}
		c->out.off += (size_t)w;
	}
	if (c->dead)
		return;
	want_out(c, false);
	if (c->paused && conn_backlog(c) < CONN_SOFT_LIMIT / 2) {
		c->paused = false;
		conn_resume(c);
	}
	if (c->closing && conn_backlog(c) == 0 && (!c->peer || !c->peer->calls))
		conn_close_now(c);
}

bool
conn_send_line(struct conn *c, const char *s, size_t n, bool droppable)
{
	if (c->dead || c->closing)
		return false;
	if (droppable && conn_backlog(c) > CONN_SOFT_LIMIT)
		return false;
	if (conn_backlog(c) > CONN_HARD_LIMIT) {
		srv_log(c->srv, WD_LOG_WARN, "connection %llu: not reading its answers; closed",
			(unsigned long long)c->id);
		conn_kill(c);
		return false;
	}
	buf_add(&c->out, s, n);
	buf_add(&c->out, "\n", 1);
	if (!c->wout)
		conn_flush(c);
	return !c->dead;
}

void
conn_finish(struct conn *c)
{
	if (c->dead)
		return;
	c->closing = true;
	set_rmask(c, 0);
	conn_flush(c);
}

static void
unregister(struct conn *c)
{
	if (c->rfd >= 0)
		epoll_ctl(c->srv->ep, EPOLL_CTL_DEL, c->rfd, NULL);
	if (c->wfd >= 0 && c->wfd != c->rfd && c->wout)
		epoll_ctl(c->srv->ep, EPOLL_CTL_DEL, c->wfd, NULL);
}

/* The connection is gone: its peer's calls are cancelled (line
 * transports) or its exchange detached (HTTP); the memory goes when the
 * last exchange lets go of it. */
void
conn_kill(struct conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	struct srv *s = c->srv;
	if (c->inq) {
		c->inq = false;
		s->ninq--;
	}
	unregister(c);
	if (c->kind == T_HTTP) {
		http_conn_closed(s, c);
		s->nhttp--;
	}
	if (c->peer) {
		struct peer *p = c->peer;
		c->peer = NULL;
		p->conn = NULL;
		if (s->stopping || !peer_detach(s, p))
			peer_close(s, p);
		peer_put(p);
		if (c->kind == T_STDIO && !s->stopping) {
			srv_log(s, WD_LOG_INFO, "stdin closed: stopping");
			s->stopping = true;
		}
	}
	if (c->rfd >= 0)
		close(c->rfd);
	if (c->wfd >= 0 && c->wfd != c->rfd)
		close(c->wfd);
	c->rfd = c->wfd = -1;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
	conn_put(c);
}

static void
conn_close_now(struct conn *c)
{
	conn_kill(c);
}

void
conn_put(struct conn *c)
{
	if (c && --c->refs == 0) {
		buf_fini(&c->in);
		buf_fini(&c->out);
		free(c);
	}
}

static struct conn *
conn_new(struct srv *s, enum transport kind, int rfd, int wfd)
{
	struct conn *c = xcalloc(1, sizeof(*c));
	c->srv = s;
	c->kind = kind;
	c->rfd = rfd;
	c->wfd = wfd;
	c->wfd_poll = true;
	c->refs = 1;
	c->id = atomic_fetch_add(&s->seq, 1) + 1;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, rfd, &ev) == 0)
		c->rmask = ev.events;
	return c;
}

/* ---- line transports: one JSON-RPC text per line ---- */

static void
line_input(struct srv *s, struct conn *c)
{
	struct buf *b = &c->in;
	unsigned budget = LINE_BUDGET;
	while (!c->dead && c->peer && b->off < b->len) {
		if (budget == 0) {
			mark_inq(c);
			return;
		}
		char *start = b->p + b->off;
		/* the bytes scanned already hold no newline: a message that
		 * arrives in many reads is scanned once, not once per read */
		char *nl = memchr(start + c->scanned, '\n', b->len - b->off - c->scanned);
		if (!nl) {
			c->scanned = b->len - b->off;
			if (b->len - b->off > s->o.max_message)
				goto too_large;
			break;
		}
		c->scanned = 0;
		size_t n = (size_t)(nl - start);
		b->off += n + 1;
		if (n > s->o.max_message)
			goto too_large;
		if (n && start[n - 1] == '\r')
			n--;
		/* blank lines between messages are tolerated */
		size_t k = 0;
		while (k < n && (start[k] == ' ' || start[k] == '\t'))
			k++;
		if (k < n) {
			dispatch_text(s, c->peer, NULL, start, n);
			budget--;
		}
		if (conn_backlog(c) > CONN_SOFT_LIMIT) {
			c->paused = true;
			set_rmask(c, 0);
			break;
		}
	}
	if (b->off == b->len)
		b->off = b->len = 0;
	return;
too_large : {
	/* The rest of an oversize line cannot be told from the next
	 * message: answer once and close. */
	char msg[160];
	snprintf(msg, sizeof(msg), "message too large: more than %zu bytes (--max-message)",
		 s->o.max_message);
	json_t *e = rpc_error(NULL, SRV_E_TOO_LARGE, msg, NULL);
	size_t len;
	char *t = rpc_dump(e, &len);
	conn_send_line(c, t, len, false);
	free(t);
	json_decref(e);
	srv_log(s, WD_LOG_WARN, "connection %llu: %s; closed", (unsigned long long)c->id, msg);
	b->off = b->len = 0;
	c->scanned = 0;
	conn_finish(c);
}
}

/* events: what epoll said.  EOF on a unix socket with EPOLLHUP is a
 * client that closed the connection (its calls are cancelled); without it,
 * a half-close (shutdown(SHUT_WR)): the client still reads its answers.
 * EOF on stdin is always taken as a half-close: the calls in flight
 * finish and are answered, then the server stops. */
static void
conn_readable(struct srv *s, struct conn *c, uint32_t events)
{
	char tmp[65536];
	for (int rounds = 0; rounds < 16 && !c->dead && !c->paused && !c->closing && !c->inq;
	     rounds++) {
		ssize_t n = read(c->rfd, tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			c->eof = true;
			break;
		}
		buf_add(&c->in, tmp, (size_t)n);
		if (c->kind == T_HTTP) {
			if (http_conn_input(s, c) < 0)
				return;
		} else {
			line_input(s, c);
		}
	}
	if (!c->eof || c->dead)
		return;
	if (c->kind == T_HTTP || (c->kind == T_UNIX && (events & EPOLLHUP))) {
		conn_kill(c);
		return;
	}
	if (c->kind == T_STDIO) {
		/* a pipe's HUP is reported whatever the mask: leave epoll */
		epoll_ctl(s->ep, EPOLL_CTL_DEL, c->rfd, NULL);
		c->rmask = 0;
	} else {
		set_rmask(c, 0);
	}
	c->closing = true;
	conn_flush(c);
}

/* ---- listeners ---- */

static bool
in_groups(struct srv *s, int fd, gid_t gid)
{
	for (size_t i = 0; i < s->o.nallow_gids; i++)
		if (s->o.allow_gids[i] == gid)
			return true;
	gid_t groups[256];
	socklen_t len = sizeof(groups);
	if (s->o.nallow_gids && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		for (size_t i = 0; i < len / sizeof(gid_t); i++)
			for (size_t j = 0; j < s->o.nallow_gids; j++)
				if (groups[i] == s->o.allow_gids[j])
					return true;
	return false;
}

/* accept4() on the listener lfd, with the descriptor reserve: at EMFILE
 * (or ENFILE) the pending connection stays in the backlog and the
 * level-triggered listener is reported again at once, so the loop spun at
 * 100 % CPU serving nobody (docs/threat-model.md).  The spare descriptor is given up
 * to accept the connection and close it, so the backlog drains and the
 * client learns at once; it is taken back after.  -1 when there is
 * nothing (more) to accept. */
static int
accept_fd(struct srv *s, int lfd, const char *what)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if ((errno != EMFILE && errno != ENFILE) || s->spare_fd < 0)
			return -1;
		close(s->spare_fd);
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			if (lfd == s->tcp_fd)
				http_refuse(s, fd, "warden serve is out of file descriptors");
			else
				close(fd);
		}
		s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		uint64_t now = now_ns();
		if (now - s->emfile_log_ns > 10ull * 1000000000ull) {
			s->emfile_log_ns = now;
			srv_log(s, WD_LOG_WARN,
				"%s: out of file descriptors (RLIMIT_NOFILE): a connection was "
				"refused",
				what);
		}
		if (fd < 0)
			return -1;
	}
}

static void
accept_unix(struct srv *s)
{
	for (;;) {
		int fd = accept_fd(s, s->unix_fd, "socket");
		if (fd < 0)
			return;
		struct ucred cr;
		socklen_t len = sizeof(cr);
		/* SO_PEERCRED is the peer's identity at connect(): who it is,
		 * not what it claims.  Owner, or a member of --allow-group. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ||
		    (cr.uid != s->owner_uid && !in_groups(s, fd, cr.gid))) {
			srv_log(s, WD_LOG_WARN, "socket: refused uid %d (pid %d)", (int)cr.uid,
				(int)cr.pid);
			close(fd);
			continue;
		}
		/* Why: a sandboxed command running as the owner must not
		 * speak on the human's channel (approval.grant) */
		struct wd_err pe = {0};
		if (wd_peer_check(fd, &pe) < 0) {
			srv_log(s, WD_LOG_WARN, "socket: refused uid %d: %s", (int)cr.uid, pe.msg);
			close(fd);
			continue;
		}
		struct conn *c = conn_new(s, T_UNIX, fd, fd);
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->pid = cr.pid;
		c->peer = peer_new(s, T_UNIX);
		c->peer->conn = c;
		c->peer->owner = cr.uid == s->owner_uid;
		c->peer->uid = cr.uid;
		srv_log(s, WD_LOG_DEBUG, "socket: connection %llu from uid %d pid %d%s",
			(unsigned long long)c->id, (int)cr.uid, (int)cr.pid,
			c->peer->owner ? " (owner)" : "");
	}
}

static void
accept_tcp(struct srv *s)
{
	for (;;) {
		int fd = accept_fd(s, s->tcp_fd, "http");
		if (fd < 0)
			return;
		/* the cap counts every connection: before its head is read,
		 * nothing tells a client with the token from one without */
		if (s->nhttp >= HTTP_MAX_CONNS) {
			uint64_t now = now_ns();
			if (now - s->cap_log_ns > 10ull * 1000000000ull) {
				s->cap_log_ns = now;
				srv_log(s, WD_LOG_WARN,
					"http: %u connections open: more are refused (503)",
					s->nhttp);
			}
			http_refuse(s, fd, "too many connections");
			continue;
		}
		struct conn *c = conn_new(s, T_HTTP, fd, fd);
		s->nhttp++;
		srv_log(s, WD_LOG_DEBUG, "http: connection %llu", (unsigned long long)c->id);
	}
}

/* ---- the out-queue: workers -> loop ---- */

void
srv_post(struct srv *s, struct call *c, json_t *msg, bool final)
{
	struct outmsg *m = xcalloc(1, sizeof(*m));
	m->c = call_get(c);
	m->msg = msg;
	m->final = final;
	pthread_mutex_lock(&s->qlock);
	if (s->qtail)
		s->qtail->next = m;
	else
		s->qhead = m;
	s->qtail = m;
	pthread_mutex_unlock(&s->qlock);
	uint64_t one = 1;
	(void)!write(s->wake_fd, &one, sizeof(one));
}

static void
drain_queue(struct srv *s)
{
	uint64_t v;
	(void)!read(s->wake_fd, &v, sizeof(v));
	pthread_mutex_lock(&s->qlock);
	struct outmsg *m = s->qhead;
	s->qhead = s->qtail = NULL;
	pthread_mutex_unlock(&s->qlock);
	while (m) {
		struct outmsg *next = m->next;
		dispatch_deliver(s, m);
		call_put(m->c);
		free(m);
		m = next;
	}
}

/* ---- set-up ---- */

static int
setup_stdio(struct srv *s)
{
	/* Not a tty: the client's pipes are ours alone, so non-blocking is
	 * safe; a regular file cannot be polled and is read by a relay. */
	for (int fd = 0; fd <= 1; fd++) {
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0 && !isatty(fd))
			fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	}
	int rfd = fcntl(0, F_DUPFD_CLOEXEC, 3);
	int wfd = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (rfd < 0 || wfd < 0)
		return -errno;
	struct conn *c = conn_new(s, T_STDIO, rfd, wfd);
	if (!c->rmask) {
		srv_log(s, WD_LOG_ERROR,
			"--stdio: stdin cannot be polled (a regular file?); "
			"pipe the requests in");
		return -EINVAL;
	}
	struct epoll_event probe = {.events = EPOLLOUT, .data.ptr = c};
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, wfd, &probe) < 0) {
		c->wfd_poll = false; /* a regular file: writes do not block */
		fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) & ~O_NONBLOCK);
	} else {
		epoll_ctl(s->ep, EPOLL_CTL_DEL, wfd, NULL);
	}
	c->peer = peer_new(s, T_STDIO);
	c->peer->conn = c;
	return 0;
}

static int
setup_unix(struct srv *s)
{
	const char *path = s->o.socket_path;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(a.sun_path)) {
		srv_log(s, WD_LOG_ERROR, "--socket: path too long (at most %zu bytes)",
			sizeof(a.sun_path) - 1);
		return -EINVAL;
	}
	strcpy(a.sun_path, path);
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			srv_log(s, WD_LOG_ERROR, "--socket: %s exists and is not a socket", path);
			return -EEXIST;
		}
		/* a socket nobody listens on is a leftover of a crashed server */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int rc = connect(probe, (struct sockaddr *)&a, sizeof(a));
		close(probe);
		if (rc == 0) {
			srv_log(s, WD_LOG_ERROR, "--socket: %s is in use by another server", path);
			return -EADDRINUSE;
		}
		unlink(path);
	}
	/* Bound under a temporary name beside PATH, listening (and given its
	 * group), then renamed onto PATH: a client that waits for PATH to
	 * appear never meets a socket that is bound but not yet listening,
	 * which refuses with ECONNREFUSED (the agent_loop example met it under
	 * ASan).  A PATH too long for the temporary name is bound directly. */
	struct sockaddr_un t = a;
	int tl = snprintf(t.sun_path, sizeof(t.sun_path), "%s.%ld.tmp", path, (long)getpid());
	bool staged = tl > 0 && (size_t)tl < sizeof(t.sun_path);
	if (!staged)
		t = a;
	else
		unlink(t.sun_path); /* a leftover of a crashed server with our pid */
	s->unix_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* 0600 from the start (umask around bind): no window in which another
	 * user could connect before a chmod */
	mode_t old = umask(s->o.nallow_gids ? 0117 : 0177);
	int rc = bind(s->unix_fd, (struct sockaddr *)&t, sizeof(t));
	umask(old);
	if (rc < 0 || listen(s->unix_fd, 128) < 0) {
		int e = errno;
		if (rc == 0 && staged)
			unlink(t.sun_path);
		srv_log(s, WD_LOG_ERROR, "--socket: %s: %s", path, strerror(e));
		return -e;
	}
	if (s->o.nallow_gids && chown(t.sun_path, (uid_t)-1, s->o.allow_gids[0]) < 0) {
		int e = errno;
		if (staged)
			unlink(t.sun_path);
		srv_log(s, WD_LOG_ERROR, "--allow-group: chown %s: %s", path, strerror(e));
		return -e;
	}
	if (staged && rename(t.sun_path, path) < 0) {
		int e = errno;
		unlink(t.sun_path);
		srv_log(s, WD_LOG_ERROR, "--socket: %s: %s", path, strerror(e));
		return -e;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_UNIX};
	epoll_ctl(s->ep, EPOLL_CTL_ADD, s->unix_fd, &ev);
	srv_log(s, WD_LOG_INFO, "listening on unix socket %s", path);
	return 0;
}

static int
setup(struct srv *s)
{
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	/* blocked before any thread exists, so every worker inherits it and
	 * only the signalfd sees these signals */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	s->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	s->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->ep < 0 || s->wake_fd < 0 || s->sig_fd < 0 || s->timer_fd < 0)
		return -errno;
	struct itimerspec its = {{1, 0}, {1, 0}};
	timerfd_settime(s->timer_fd, 0, &its, NULL);
	struct {
		int fd;
		int tag;
	} fixed[] = {{s->wake_fd, TAG_WAKE}, {s->sig_fd, TAG_SIG}, {s->timer_fd, TAG_TIMER}};
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)fixed[i].tag};
		epoll_ctl(s->ep, EPOLL_CTL_ADD, fixed[i].fd, &ev);
	}
	int rc;
	if (s->o.socket_path && (rc = setup_unix(s)) < 0)
		return rc;
	if (s->o.listen && (rc = http_listen(s, TAG_TCP)) < 0)
		return rc;
	if (s->o.stdio && (rc = setup_stdio(s)) < 0)
		return rc;
	return 0;
}

static void
stop_listening(struct srv *s)
{
	if (s->unix_fd >= 0) {
		close(s->unix_fd);
		s->unix_fd = -1;
		unlink(s->o.socket_path);
	}
	if (s->tcp_fd >= 0) {
		close(s->tcp_fd);
		s->tcp_fd = -1;
	}
}

static bool
quiet(struct srv *s)
{
	pthread_mutex_lock(&s->wlock);
	bool idle = s->nbusy == 0 && s->njobs == 0;
	pthread_mutex_unlock(&s->wlock);
	pthread_mutex_lock(&s->qlock);
	bool empty = s->qhead == NULL;
	pthread_mutex_unlock(&s->qlock);
	return idle && empty && atomic_load(&s->ending) == 0;
}

/* SIGTERM (an orchestrator ending the pod, systemd, docker stop): drain.
 * No new connections (the listeners close: a client meets a refusal and
 * goes to another instance), no new calls on the open ones (-32010), and
 * the calls in flight get --drain-timeout seconds to finish; then
 * whatever still runs is cancelled and the server stops as below.  A
 * second SIGTERM, SIGINT or SIGHUP: stop now (cancel, end the sandboxes,
 * close the audit log). */
static void
on_signal(struct srv *s, int sig)
{
	if (sig == SIGTERM && !s->draining && !s->stopping) {
		s->draining = true;
		s->drain_deadline_ns = now_ns() + s->o.drain_timeout_s * 1000000000ull;
		srv_logf(s, WD_LOG_INFO,
			 json_pack("{s:i,s:I}", "signal", sig, "drain_timeout_s",
				   (json_int_t)s->o.drain_timeout_s),
			 "signal %d: draining: no new connections or calls; the calls in "
			 "flight have %llu s to finish",
			 sig, (unsigned long long)s->o.drain_timeout_s);
		stop_listening(s);
		return;
	}
	if (!s->stopping)
		srv_logf(s, WD_LOG_INFO, json_pack("{s:i}", "signal", sig), "signal %d: stopping",
			 sig);
	s->stopping = true;
}

static void
handle(struct srv *s, struct epoll_event *ev)
{
	uint64_t tag = ev->data.u64;
	if (tag == TAG_UNIX) {
		accept_unix(s);
	} else if (tag == TAG_TCP) {
		accept_tcp(s);
	} else if (tag == TAG_WAKE) {
		drain_queue(s);
	} else if (tag == TAG_SIG) {
		struct signalfd_siginfo si;
		while (read(s->sig_fd, &si, sizeof(si)) == sizeof(si))
			on_signal(s, (int)si.ssi_signo);
	} else if (tag == TAG_TIMER) {
		uint64_t n;
		(void)!read(s->timer_fd, &n, sizeof(n));
		srv_token_watch(s);
		health_tick(s);
		http_sessions_tick(s);
		http_conns_tick(s);
	} else {
		struct conn *c = ev->data.ptr;
		c->refs++;
		if (ev->events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			conn_flush(c);
		if (!c->dead && (ev->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
			conn_readable(s, c, ev->events);
		conn_put(c);
	}
}

/* One more budget of messages for each connection that had more than its
 * budget buffered (mark_inq), after every connection's events of this
 * turn: round robin, so nobody's flood delays another's messages by more
 * than a turn. */
static void
serve_pending(struct srv *s)
{
	if (!s->ninq)
		return;
	struct conn **v = xcalloc(s->ninq, sizeof(*v));
	size_t n = 0;
	for (struct conn *c = s->conns; c && n < s->ninq; c = c->next)
		if (c->inq) {
			c->refs++;
			v[n++] = c;
		}
	for (size_t i = 0; i < n; i++) {
		struct conn *c = v[i];
		if (c->inq) {
			c->inq = false;
			s->ninq--;
			line_input(s, c);
			if (!c->inq)
				conn_resume(c);
		}
		conn_put(c);
	}
	free(v);
}

/* Run the loop until stopped, then until every call has ended (or a
 * deadline passed), answering what can be answered. */
static void
run(struct srv *s)
{
	bool stopped = false;
	uint64_t deadline = 0;
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(s->ep, evs, 64,
				   s->ninq		      ? 0
				   : (stopped || s->draining) ? 100
							      : -1);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++)
			handle(s, &evs[i]);
		serve_pending(s);
		if (s->draining && !s->stopping) {
			if (quiet(s)) {
				srv_log(s, WD_LOG_INFO, "drained: every call has ended; stopping");
				s->stopping = true;
			} else if (now_ns() > s->drain_deadline_ns) {
				srv_log(s, WD_LOG_WARN,
					"drain: --drain-timeout passed with calls still running: "
					"cancelled");
				s->stopping = true;
			}
		}
		if (s->stopping && !stopped) {
			stopped = true;
			deadline = now_ns() + 10ull * 1000000000ull;
			stop_listening(s);
			dispatch_stop(s);
		}
		if (stopped && (quiet(s) || now_ns() > deadline))
			break;
	}
	drain_queue(s);
	/* a last chance for the answers to go out */
	for (struct conn *c = s->conns; c; c = c->next)
		if (!c->dead && conn_backlog(c) && c->wfd >= 0) {
			int fl = fcntl(c->wfd, F_GETFL);
			fcntl(c->wfd, F_SETFL, fl & ~O_NONBLOCK);
			conn_flush(c);
		}
}

void
server_opts_init(struct server_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->isolation = WD_ISOLATION_CONTAINER;
	o->max_calls = 64;
	o->max_queue = 4096;
	o->max_live = 64;
	o->max_message = 16u << 20;
	o->session_idle_s = 1800;
	/* Kubernetes gives a pod 30 s (terminationGracePeriodSeconds) from
	 * SIGTERM to SIGKILL: 20 for the calls, the rest to end sandboxes */
	o->drain_timeout_s = 20;
}

/* Each running call holds a sandbox's descriptors (pidfd, pipes, the
 * sync socket, eventfds, cgroup files: about twenty), and each client a
 * connection: the default soft limit of 1024 runs out near fifty calls.
 * The soft limit goes up to the hard one, as servers do; commands get
 * their own RLIMIT_NOFILE in the jail (step 6), so nothing leaks into a
 * sandbox.  An idle live sandbox holds about a dozen (bench/density.py).
 * *from gets the soft limit found, *to the one in force after. */
static void
raise_nofile(rlim_t *from, rlim_t *to)
{
	struct rlimit rl;
	*from = *to = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	*from = *to = rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			*to = rl.rlim_cur;
	}
}

static void
log_nofile(struct srv *s, rlim_t from, rlim_t to)
{
	if (from == to)
		srv_log(s, WD_LOG_INFO, "RLIMIT_NOFILE: soft limit %llu, already the hard limit",
			(unsigned long long)to);
	else
		srv_log(s, WD_LOG_INFO,
			"RLIMIT_NOFILE: soft limit raised from %llu to %llu (the hard limit)",
			(unsigned long long)from, (unsigned long long)to);
}

/* --max-sandboxes against RLIMIT_NOFILE, once everything else is open: a
 * value the limit cannot hold is refused when given, and the default is
 * lowered to what fits (each live sandbox SRV_FDS_PER_SANDBOX, beside the
 * reserve of srv_fd_reserve). */
static int
check_fd_room(struct srv *s)
{
	long used = 0, limit = 0;
	if (srv_fds(&used, &limit, 0) < 0)
		return 0; /* no /proc: sandbox.create checks again, and fails the same */
	long room = limit - used - (long)srv_fd_reserve(s);
	unsigned long fits = room > 0 ? (unsigned long)room / SRV_FDS_PER_SANDBOX : 0;
	if (s->o.max_live <= fits)
		return 0;
	if (s->o.max_live_set) {
		srv_log(s, WD_LOG_ERROR,
			"--max-sandboxes %u: RLIMIT_NOFILE (%ld, %ld in use) holds at most %lu "
			"live sandboxes (about %d descriptors each, beside %lu kept for "
			"--max-calls %u); give at most %lu, or raise the limit (ulimit -n)%s",
			s->o.max_live, limit, used, fits, SRV_FDS_PER_SANDBOX, srv_fd_reserve(s),
			s->o.max_calls, fits, fits ? "" : " or lower --max-calls");
		return -EMFILE;
	}
	if (fits == 0)
		srv_log(s, WD_LOG_WARN,
			"RLIMIT_NOFILE (%ld) leaves no room for a live sandbox beside the %lu "
			"descriptors kept for --max-calls %u: sandbox.create will be refused; "
			"raise the limit (ulimit -n) or lower --max-calls",
			limit, srv_fd_reserve(s), s->o.max_calls);
	else
		srv_log(s, WD_LOG_WARN,
			"RLIMIT_NOFILE (%ld) holds %lu live sandboxes, not %u: --max-sandboxes "
			"lowered to %lu",
			limit, fits, s->o.max_live, fits);
	s->o.max_live = (unsigned)fits;
	return 0;
}

int
server_run(const struct server_opts *o)
{
	rlim_t nofile_from, nofile_to;
	raise_nofile(&nofile_from, &nofile_to);
	struct srv *s = xcalloc(1, sizeof(*s));
	s->unix_fd = s->tcp_fd = s->ep = s->wake_fd = s->sig_fd = s->timer_fd = s->spare_fd = -1;
	int rc = srv_init(s, o);
	if (rc == 0)
		rc = srv_records_open(s); /* before listening: a bad one starts nothing */
	if (rc == 0) {
		srv_attach_lib_log(s);
		log_nofile(s, nofile_from, nofile_to);
		/* the sessions of a server before this one, before anything
		 * listens: a client that sees the socket or the port finds them */
		if (s->activated)
			srv_restore(s);
		if (geteuid() != 0) {
			srv_anon_lock(s);  /* before the sweep: another's sees it */
			srv_sweep_anon(s); /* an ordinary user's, of a server killed */
		}
		rc = setup(s);
	}
	if (rc == 0)
		rc = check_fd_room(s);
	if (rc == 0 && (rc = workers_start(s)) == 0) {
		/* /readyz is served on --listen only: no probe sandbox (nor
		 * the library's keeper it starts) for the other transports */
		if (s->o.listen)
			health_start(s);
		run(s);
		health_stop(s);
		workers_stop(s);
	}
	stop_listening(s);
	while (s->conns)
		conn_kill(s->conns);
	/* the sandboxes ended by those closes (an ordinary user's anonymous
	 * cow sessions are removed, files and all) finish on their enders'
	 * threads: exiting under them would leave their state behind.  A
	 * session's removal is bounded (its monitor's stop: 10 s). */
	for (int i = 0; atomic_load(&s->ending) > 0 && i < 3000; i++) {
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
	srv_fini(s);
	return rc < 0 ? 125 : 0;
}
