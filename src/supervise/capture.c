/* supervise/capture: head and tail windows over an output stream.
 *
 *   bytes:  [ head (cap/2) ][ ...... counted, dropped ...... ][ tail ring (cap/2) ]
 *
 * The head is streamed the moment it arrives; the tail can only be known
 * at the end, so it is streamed then, after one marker line telling the
 * reader (often a model) how much was cut and how to narrow the command.
 * Memory is two fixed buffers, whatever the command prints. */
#include "supervise/supervise.h"

#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <string.h>

/* Write to the caller's stream without blocking past the deadline or a
 * pending signal: wait for room with poll, then write at most PIPE_BUF
 * bytes, which a pipe with room takes whole.  If the reader stalls (a
 * `| sleep`, a terminal on ^S) or the deadline passes with no room,
 * streaming stops; the kept windows are unaffected. */
static void
stream_out(struct capture *c, const char *buf, size_t n)
{
	while (n && c->stream_fd >= 0) {
		struct pollfd p[2] = {{.fd = c->stream_fd, .events = POLLOUT},
				      {.fd = c->abort_fd, .events = POLLIN}};
		int ms = 0;
		if (c->deadline_ns) {
			uint64_t now = wd_now_ns();
			ms =
			    now >= c->deadline_ns ? 0 : (int)((c->deadline_ns - now) / 1000000 + 1);
		} else {
			ms = -1;
		}
		int r = poll(p, c->abort_fd >= 0 ? 2 : 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (p[1].revents & POLLIN) ||
		    (p[0].revents & (POLLERR | POLLHUP | POLLNVAL))) {
			c->stream_fd = -1;
			return;
		}
		size_t k = n < PIPE_BUF ? n : PIPE_BUF;
		ssize_t w = write(c->stream_fd, buf, k);
		if (w < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			c->stream_fd = -1;
			return;
		}
		buf += w;
		n -= (size_t)w;
	}
}

void
capture_init(struct capture *c, uint64_t limit, int stream, int stream_fd)
{
	memset(c, 0, sizeof(*c));
	c->abort_fd = -1;
	c->head_cap = (size_t)(limit / 2);
	c->ring_cap = (size_t)(limit - limit / 2);
	c->head = wd_xmalloc(c->head_cap);
	c->ring = wd_xmalloc(c->ring_cap);
	c->stream = stream;
	c->stream_fd = stream_fd;
}

void
capture_fini(struct capture *c)
{
	free(c->head);
	free(c->ring);
	c->head = c->ring = NULL;
}

void
capture_feed(struct capture *c, const char *buf, size_t n)
{
	c->total += n;
	if (c->head_len < c->head_cap) {
		size_t k = c->head_cap - c->head_len;
		if (k > n)
			k = n;
		memcpy(c->head + c->head_len, buf, k);
		c->head_len += k;
		if (c->stream_fd >= 0)
			stream_out(c, buf, k);
		/* the output events (WD_EVENT_OUTPUT) carry the head as it
		 * arrives, as the stream does */
		if (c->on_head)
			c->on_head(c->on_head_data, c->stream, buf, k);
		buf += k;
		n -= k;
	}
	if (!n || !c->ring_cap)
		return;
	if (n >= c->ring_cap) { /* the chunk alone fills the ring */
		memcpy(c->ring, buf + n - c->ring_cap, c->ring_cap);
		c->ring_start = 0;
		c->ring_len = c->ring_cap;
		return;
	}
	size_t end = (c->ring_start + c->ring_len) % c->ring_cap;
	size_t first = c->ring_cap - end < n ? c->ring_cap - end : n;
	memcpy(c->ring + end, buf, first);
	memcpy(c->ring, buf + first, n - first);
	c->ring_len += n;
	if (c->ring_len > c->ring_cap) {
		c->ring_start = (c->ring_start + (c->ring_len - c->ring_cap)) % c->ring_cap;
		c->ring_len = c->ring_cap;
	}
}

/* Where the kept windows break.  A cut falls at a line boundary when one
 * is near: the head ends after its last newline and the tail starts
 * after its first, if that costs at most NEAR bytes each, so the marker
 * never sits in the middle of a line.  The head that was
 * already streamed live cannot be taken back: the streamed copy keeps it
 * whole (its marker starts on a new line). */
#define NEAR 512

struct layout {
	size_t head; /* bytes of head kept */
	size_t skip; /* bytes skipped at the start of the ring */
	size_t tail; /* bytes of the ring kept */
	uint64_t omitted;
};

static size_t
near_limit(const struct capture *c)
{
	size_t half = c->head_cap < c->ring_cap ? c->head_cap : c->ring_cap;
	return half / 4 < NEAR ? half / 4 : NEAR;
}

static char
ring_at(const struct capture *c, size_t i)
{
	return c->ring[(c->ring_start + i) % c->ring_cap];
}

static void
layout(const struct capture *c, bool head_streamed, struct layout *l)
{
	uint64_t cut = c->total - c->head_len - c->ring_len;
	l->head = c->head_len;
	l->skip = 0;
	l->tail = c->ring_len;
	if (cut) {
		size_t lim = near_limit(c);
		if (!head_streamed && c->head_len && c->head[c->head_len - 1] != '\n') {
			for (size_t k = 1; k <= lim && k < c->head_len; k++)
				if (c->head[c->head_len - 1 - k] == '\n') {
					l->head = c->head_len - k;
					break;
				}
		}
		for (size_t k = 0; k < lim && k < c->ring_len; k++)
			if (ring_at(c, k) == '\n') {
				l->skip = k + 1;
				break;
			}
		l->tail = c->ring_len - l->skip;
	}
	l->omitted = c->total - l->head - l->tail;
}

uint64_t
capture_omitted(const struct capture *c)
{
	struct layout l;
	layout(c, false, &l);
	return l.omitted;
}

char *
capture_marker(int stream, uint64_t omitted, bool at_line_start)
{
	return wd_xasprintf("%s[warden: %" PRIu64 " bytes omitted from %s; narrow the command: "
			    "grep for what you need, use head or tail, or read a smaller file]\n",
			    at_line_start ? "" : "\n", omitted, stream == 2 ? "stderr" : "stdout");
}

static size_t
ring_copy(const struct capture *c, size_t from, size_t n, char *dst)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = ring_at(c, from + i);
	return n;
}

char *
capture_window(const struct capture *c, size_t *len)
{
	struct layout l;
	layout(c, false, &l);
	bool line_start = l.head == 0 || c->head[l.head - 1] == '\n';
	char *marker = l.omitted ? capture_marker(c->stream, l.omitted, line_start) : NULL;
	size_t ml = marker ? strlen(marker) : 0;
	char *w = wd_xmalloc(l.head + ml + l.tail + 1);
	memcpy(w, c->head, l.head);
	if (ml)
		memcpy(w + l.head, marker, ml);
	size_t n = l.head + ml + ring_copy(c, l.skip, l.tail, w + l.head + ml);
	w[n] = '\0';
	free(marker);
	*len = n;
	return w;
}

void
capture_flush(struct capture *c)
{
	if (c->stream_fd < 0)
		return;
	struct layout l;
	layout(c, true, &l);
	if (l.omitted) {
		bool line_start = c->head_len == 0 || c->head[c->head_len - 1] == '\n';
		char *m = capture_marker(c->stream, l.omitted, line_start);
		stream_out(c, m, strlen(m));
		free(m);
	}
	char *t = wd_xmalloc(l.tail + 1);
	size_t n = ring_copy(c, l.skip, l.tail, t);
	stream_out(c, t, n);
	free(t);
}
