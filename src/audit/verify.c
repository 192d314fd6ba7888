/* verify.c - checking the hash chain of an audit log, in constant memory.
 *
 * The state carried from one line to the next is small (the SHA-256 of the
 * previous line, the line number, the last seq), so a log is read as a
 * stream: memory depends on the longest line, which is bounded
 * (AUDIT_LINE_MAX), never on the log (a 500 MB log took 491 MB,
 * /dev/zero grew without bound).  A line longer than the bound is not one
 * warden wrote (audit_append refuses such an event): verification stops
 * there and reports the line as broken, by number, after reading at most
 * AUDIT_LINE_MAX + 1 bytes of it.  The log and its head must be regular
 * files; a FIFO or a device is refused before a byte is read.
 *
 * The buffer form (audit_verify_buffer, used by the fuzzer) and the file
 * form share every check through struct chain, so they cannot disagree.
 */
#include "audit/audit.h"

#include "config/config.h"
#include "util/sha256.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

/* The stream's first buffer; it doubles up to AUDIT_LINE_MAX + 1 when a
 * line needs it.  The fuzz build sets a tiny one (fuzz/meson.build). */
#ifndef AUDIT_VERIFY_BUF
#define AUDIT_VERIFY_BUF (64 * 1024)
#endif

struct chain {
	char prev[65];	    /* SHA-256 of the last intact line */
	size_t lineno;	    /* lines seen */
	long long last_seq; /* seq of the last intact line */
};

WD_PRINTF(3, 4)
static void
broken(struct audit_verify *r, size_t line, const char *fmt, ...)
{
	va_list ap;
	r->ok = false;
	r->bad_line = line;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
}

static void
chain_init(struct chain *c, struct audit_verify *r)
{
	memset(r, 0, sizeof(*r));
	r->ok = true;
	strcpy(c->prev, AUDIT_ZERO_HASH);
	c->lineno = 0;
	c->last_seq = 0;
}

static void
chain_too_long(struct chain *c, struct audit_verify *r)
{
	c->lineno++;
	broken(r, c->lineno,
	       "line %zu: longer than %u bytes, more than any event (not written by warden)",
	       c->lineno, AUDIT_LINE_MAX);
}

static void
chain_cut(struct chain *c, struct audit_verify *r)
{
	c->lineno++;
	broken(r, c->lineno, "line %zu: incomplete last line (the log was cut mid-event)",
	       c->lineno);
}

/* One complete line, without its '\n'.  Returns false when the chain
 * breaks here (r says how). */
static bool
chain_line(struct chain *c, const char *ln, size_t ll, struct audit_verify *r)
{
	size_t lineno = ++c->lineno;
	if (ll > AUDIT_LINE_MAX) {
		c->lineno--;
		chain_too_long(c, r);
		return false;
	}
	json_error_t je;
	json_t *ev = ll ? audit_line_load(ln, ll, JSON_REJECT_DUPLICATES, &je) : NULL;
	if (!ev || !json_is_object(ev)) {
		json_decref(ev);
		broken(r, lineno, "line %zu: not a JSON event (edited or damaged)", lineno);
		return false;
	}
	json_t *js = json_object_get(ev, "seq"), *jp = json_object_get(ev, "prev");
	if (!json_is_integer(js) || !json_is_string(jp)) {
		json_decref(ev);
		broken(r, lineno, "line %zu: event without seq or prev (edited)", lineno);
		return false;
	}
	long long seq = json_integer_value(js);
	bool prev_ok = !strcmp(json_string_value(jp), c->prev);
	json_decref(ev);
	if (seq < 0 || (unsigned long long)seq != lineno) {
		broken(r, lineno,
		       "line %zu: seq %lld where %zu was expected (an event was deleted, "
		       "inserted or reordered)",
		       lineno, seq, lineno);
		return false;
	}
	if (!prev_ok) {
		if (lineno == 1)
			broken(r, lineno,
			       "line 1: prev is not the zero hash (events before it were "
			       "removed, or it was edited)");
		else
			broken(r, lineno,
			       "line %zu: prev does not match the SHA-256 of line %zu (line "
			       "%zu was edited, or events were removed or reordered)",
			       lineno, lineno - 1, lineno - 1);
		return false;
	}
	wd_sha256_hex_of(ln, ll, c->prev);
	c->last_seq = seq;
	r->events++;
	return true;
}

/* The head, after an intact chain: it must name the last line. */
static void
chain_head(struct chain *c, const char *head, size_t head_len, struct audit_verify *r)
{
	r->head_checked = true;
	if (head_len > AUDIT_HEAD_MAX) {
		broken(r, 0, "the head file is damaged (longer than %u bytes)", AUDIT_HEAD_MAX);
		return;
	}
	json_error_t je;
	json_t *h = json_loadb(head, head_len, 0, &je);
	json_t *hs = h ? json_object_get(h, "seq") : NULL,
	       *hh = h ? json_object_get(h, "hash") : NULL;
	if (!json_is_integer(hs) || !json_is_string(hh)) {
		json_decref(h);
		broken(r, 0, "the head file is damaged");
		return;
	}
	long long want = json_integer_value(hs);
	bool same = !strcmp(json_string_value(hh), c->prev);
	json_decref(h);
	if (want > c->last_seq)
		broken(r, 0,
		       "truncated: the head records %lld events, the log ends after %lld (events "
		       "were removed from the end)",
		       want, c->last_seq);
	else if (want < c->last_seq)
		broken(r, 0,
		       "the head records %lld events but the log has %lld (events appended "
		       "without warden, or an old head)",
		       want, c->last_seq);
	else if (!same)
		broken(r, (size_t)c->last_seq,
		       "line %lld: the last event does not match the head's hash (edited)",
		       c->last_seq);
}

void
audit_verify_buffer(const char *buf, size_t len, const char *head, size_t head_len,
		    struct audit_verify *r)
{
	struct chain c;
	chain_init(&c, r);
	size_t pos = 0;
	while (pos < len) {
		/* look no further than a line may reach, as the file form does */
		size_t look = len - pos;
		if (look > (size_t)AUDIT_LINE_MAX + 1)
			look = (size_t)AUDIT_LINE_MAX + 1;
		const char *nl = memchr(buf + pos, '\n', look);
		if (!nl) {
			if (len - pos > AUDIT_LINE_MAX)
				chain_too_long(&c, r);
			else
				chain_cut(&c, r);
			return;
		}
		size_t ll = (size_t)(nl - (buf + pos));
		if (!chain_line(&c, buf + pos, ll, r))
			return;
		pos += ll + 1;
	}
	if (head)
		chain_head(&c, head, head_len, r);
}

/* Stream the log through a buffer that grows to at most AUDIT_LINE_MAX + 1
 * bytes: complete lines are checked and dropped, the partial one moved to
 * the front.  Returns 0 (r says whether the chain holds) or -errno. */
static int
verify_stream(int fd, const char *path, struct chain *c, struct audit_verify *r, struct wd_err *err)
{
	const size_t most = (size_t)AUDIT_LINE_MAX + 1;
	size_t cap = AUDIT_VERIFY_BUF, have = 0, scanned = 0;
	wd_autofree char *buf = wd_xmalloc(cap);
	for (;;) {
		/* check every complete line in buf[0, have) */
		size_t start = 0;
		const char *nl;
		while ((nl = memchr(buf + scanned, '\n', have - scanned))) {
			size_t ll = (size_t)(nl - (buf + start));
			if (!chain_line(c, buf + start, ll, r))
				return 0;
			start = scanned = ll + 1 + start;
		}
		if (have - start > AUDIT_LINE_MAX) {
			chain_too_long(c, r);
			return 0;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		scanned = have;
		if (have == cap) {
			cap = cap * 2 < most ? cap * 2 : most;
			buf = wd_xrealloc(buf, cap);
		}
		ssize_t got = read(fd, buf + have, cap - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return wd_err_sys(err, errno, "read audit log %s", path);
		if (got == 0)
			break;
		have += (size_t)got;
	}
	if (have > 0)
		chain_cut(c, r);
	return 0;
}

/* Read the head file (absent: *len = 0, *present = false).  Reads at most
 * AUDIT_HEAD_MAX + 1 bytes: more means damaged, which the caller reports. */
static int
read_head(const char *hp, char *buf, size_t *len, bool *present, struct wd_err *err)
{
	*len = 0;
	*present = false;
	struct wd_err e2 = {0};
	wd_autoclose int fd = audit_open_regular(hp, O_RDONLY, "audit head", &e2);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0) {
		if (err)
			*err = e2;
		return fd;
	}
	*present = true;
	while (*len < AUDIT_HEAD_MAX + 1) {
		ssize_t got = read(fd, buf + *len, AUDIT_HEAD_MAX + 1 - *len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return wd_err_sys(err, errno, "read audit head %s", hp);
		if (got == 0)
			break;
		*len += (size_t)got;
	}
	return 0;
}

int
audit_verify_file(const char *path, struct audit_verify *r, struct wd_err *err)
{
	wd_autoclose int fd = audit_open_regular(path, O_RDONLY, "audit log", err);
	if (fd < 0)
		return fd;
	struct chain c;
	chain_init(&c, r);
	int rc = verify_stream(fd, path, &c, r, err);
	if (rc < 0 || !r->ok)
		return rc;
	/* The head is read after the log, as appends write it after the line. */
	wd_autofree char *hp = wd_xasprintf("%s.head", path);
	char head[AUDIT_HEAD_MAX + 1];
	size_t hlen = 0;
	bool present = false;
	rc = read_head(hp, head, &hlen, &present, err);
	if (rc < 0)
		return rc;
	if (present)
		chain_head(&c, head, hlen, r);
	return 0;
}
