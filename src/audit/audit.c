/* audit.c - hash-chained JSON Lines.
 *
 * Each line carries the SHA-256 of the line before it, so editing an event
 * breaks the next event's "prev", deleting or reordering breaks "seq" and
 * "prev", and cutting events off the end is caught by FILE.head (the seq
 * and hash of the last line, rewritten atomically after every append).
 * The chain is not a signature: someone who can rewrite the whole file and
 * its head can forge a consistent log.  It makes tampering evident to
 * whoever kept an earlier head (or ships lines elsewhere as they are
 * written), and it makes accidental damage obvious.
 */
#include "audit/audit.h"
#include "util/json.h"

#include "config/config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

void
audit_random_id(char out[33])
{
	unsigned char b[16];
	static const char hex[] = "0123456789abcdef";
	size_t got = 0;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			abort(); /* no entropy is a broken host */
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[32] = '\0';
}

void
audit_now(char out[32])
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	char base[24];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

int
audit_open(const char *path, struct audit_log **out, struct wd_err *err)
{
	int fd =
	    open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
	if (fd < 0)
		return wd_err_sys(err, errno, "audit log %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return wd_err_set(err, WD_E_INVAL, "audit log %s: not a regular file", path);
	}
	struct audit_log *a = wd_xcalloc(1, sizeof(*a));
	a->fd = fd;
	a->path = wd_xstrdup(path);
	audit_random_id(a->sandbox);
	*out = a;
	return 0;
}

void
audit_close(struct audit_log *a)
{
	if (!a)
		return;
	if (a->fd >= 0)
		close(a->fd);
	free(a->path);
	free(a);
}

/* Read the last line of the log (under the lock) through a separate
 * read-only fd: the append fd is O_WRONLY. */
static int
last_line(const char *path, long long *seq, char hash[65], struct wd_err *err)
{
	wd_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return wd_err_sys(err, errno, "audit log %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return wd_err_sys(err, errno, "audit log %s", path);
	if (st.st_size == 0) {
		*seq = 0;
		strcpy(hash, AUDIT_ZERO_HASH);
		return 0;
	}
	size_t want = 4096;
	for (;;) {
		size_t n = (size_t)st.st_size < want ? (size_t)st.st_size : want;
		wd_autofree char *buf = wd_xmalloc(n + 1);
		ssize_t got = pread(fd, buf, n, st.st_size - (off_t)n);
		if (got != (ssize_t)n)
			return wd_err_sys(err, got < 0 ? errno : EIO, "read audit log %s", path);
		if (buf[n - 1] != '\n')
			return wd_err_set(
			    err, WD_E_INVAL,
			    "audit log %s ends with a partial line; run 'warden audit "
			    "verify %s'",
			    path, path);
		size_t end = n - 1, start = end;
		while (start > 0 && buf[start - 1] != '\n')
			start--;
		if (start == 0 && n < (size_t)st.st_size) {
			if (want > (64u << 20))
				return wd_err_set(err, WD_E_INVAL, "audit log %s: line too long",
						  path);
			want *= 4;
			continue;
		}
		json_error_t je;
		json_t *ev = json_loadb(buf + start, end - start, 0, &je);
		json_t *js = ev ? json_object_get(ev, "seq") : NULL;
		if (!js || !json_is_integer(js)) {
			json_decref(ev);
			return wd_err_set(
			    err, WD_E_INVAL,
			    "audit log %s: the last line is not an event; run 'warden "
			    "audit verify %s'",
			    path, path);
		}
		*seq = json_integer_value(js);
		json_decref(ev);
		config_sha256_hex(buf + start, end - start, hash);
		return 0;
	}
}

static int
write_head(const char *path, long long seq, const char hash[65], struct wd_err *err)
{
	wd_autofree char *head = wd_xasprintf("%s.head", path);
	wd_autofree char *tmp = wd_xasprintf("%s.head.%d.tmp", path, (int)getpid());
	wd_autofree char *text = wd_xasprintf("{\"seq\":%lld,\"hash\":\"%s\"}\n", seq, hash);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return wd_err_sys(err, errno, "audit head %s", tmp);
	int rc = wd_write_all(fd, text, strlen(text));
	close(fd);
	if (rc < 0 || rename(tmp, head) < 0) {
		int e = rc < 0 ? -rc : errno;
		unlink(tmp);
		return wd_err_sys(err, e, "audit head %s", head);
	}
	return 0;
}

int
audit_append_text(struct audit_log *a, const char *sandbox, const char *members,
		  struct wd_err *err)
{
	while (flock(a->fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return wd_err_sys(err, errno, "lock audit log %s", a->path);
	long long seq = 0;
	char prev[65], now[32];
	int rc = last_line(a->path, &seq, prev, err);
	if (rc < 0)
		goto out;
	audit_now(now);
	/* {"seq":N,"time":"...","sandbox":"...",<members>,"prev":"..."}: one
	 * ASCII line, whose bytes are what the next line's prev hashes */
	struct jw w;
	jw_init(&w, JW_ASCII);
	jw_obj_begin(&w);
	jw_kint(&w, "seq", seq + 1);
	jw_kstr(&w, "time", now);
	jw_kstr(&w, "sandbox", sandbox && sandbox[0] ? sandbox : a->sandbox);
	if (members && members[0]) {
		jw_raw(&w, ",", 1);
		jw_raw(&w, members, strlen(members));
	}
	jw_kstr(&w, "prev", prev);
	jw_obj_end(&w);
	char hash[65];
	config_sha256_hex(w.p, w.len, hash);
	jw_raw(&w, "\n", 1);
	/* One write(2) per event: with O_APPEND the kernel places it at the end
	 * atomically with respect to other appenders. */
	rc = wd_write_all(a->fd, w.p, w.len);
	jw_fini(&w);
	if (rc < 0) {
		rc = wd_err_sys(err, -rc, "write audit log %s", a->path);
		goto out;
	}
	rc = write_head(a->path, seq + 1, hash, err);
	if (rc == 0)
		rc = (int)(seq + 1);
out:
	flock(a->fd, LOCK_UN);
	return rc;
}

int
audit_append(struct audit_log *a, json_t *ev, struct wd_err *err)
{
	if (!json_is_object(ev))
		return wd_err_set(err, WD_E_INVAL, "audit event is not an object");
	json_t *fields = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(ev, k, v)
	{
		if (strcmp(k, "seq") && strcmp(k, "time") && strcmp(k, "sandbox") &&
		    strcmp(k, "prev"))
			json_object_set(fields, k, v);
	}
	char *text = json_dumps(fields, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	json_decref(fields);
	if (!text)
		abort();
	/* the members without the object's braces */
	size_t n = strlen(text);
	text[n - 1] = '\0';
	json_t *sb = json_object_get(ev, "sandbox");
	int rc = audit_append_text(a, json_is_string(sb) ? json_string_value(sb) : NULL, text + 1,
				   err);
	free(text);
	return rc;
}

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

void
audit_verify_buffer(const char *buf, size_t len, const char *head, size_t head_len,
		    struct audit_verify *r)
{
	memset(r, 0, sizeof(*r));
	r->ok = true;
	char prev[65];
	strcpy(prev, AUDIT_ZERO_HASH);
	size_t pos = 0, lineno = 0;
	long long last_seq = 0;
	while (pos < len) {
		lineno++;
		const char *nl = memchr(buf + pos, '\n', len - pos);
		if (!nl) {
			broken(r, lineno,
			       "line %zu: incomplete last line (the log was cut mid-event)",
			       lineno);
			return;
		}
		size_t ll = (size_t)(nl - (buf + pos));
		const char *ln = buf + pos;
		pos += ll + 1;
		json_error_t je;
		json_t *ev = ll ? json_loadb(ln, ll, JSON_REJECT_DUPLICATES, &je) : NULL;
		if (!ev || !json_is_object(ev)) {
			json_decref(ev);
			broken(r, lineno, "line %zu: not a JSON event (edited or damaged)", lineno);
			return;
		}
		json_t *js = json_object_get(ev, "seq"), *jp = json_object_get(ev, "prev");
		if (!json_is_integer(js) || !json_is_string(jp)) {
			json_decref(ev);
			broken(r, lineno, "line %zu: event without seq or prev (edited)", lineno);
			return;
		}
		long long seq = json_integer_value(js);
		bool prev_ok = !strcmp(json_string_value(jp), prev);
		json_decref(ev);
		if (seq != (long long)lineno) {
			broken(r, lineno,
			       "line %zu: seq %lld where %zu was expected (an event was deleted, "
			       "inserted or reordered)",
			       lineno, seq, lineno);
			return;
		}
		if (!prev_ok) {
			if (lineno == 1)
				broken(r, lineno,
				       "line 1: prev is not the zero hash (events before it were "
				       "removed, or it was edited)");
			else
				broken(
				    r, lineno,
				    "line %zu: prev does not match the SHA-256 of line %zu (line "
				    "%zu was edited, or events were removed or reordered)",
				    lineno, lineno - 1, lineno - 1);
			return;
		}
		config_sha256_hex(ln, ll, prev);
		last_seq = seq;
		r->events++;
	}
	if (!head)
		return;
	r->head_checked = true;
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
	bool same = !strcmp(json_string_value(hh), prev);
	json_decref(h);
	if (want > last_seq)
		broken(r, 0,
		       "truncated: the head records %lld events, the log ends after %lld (events "
		       "were removed from the end)",
		       want, last_seq);
	else if (want < last_seq)
		broken(r, 0,
		       "the head records %lld events but the log has %lld (events appended "
		       "without warden, or an old head)",
		       want, last_seq);
	else if (!same)
		broken(r, (size_t)last_seq,
		       "line %lld: the last event does not match the head's hash (edited)",
		       last_seq);
}

static int
slurp(const char *path, char **out, size_t *len, struct wd_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t cap = 65536, n = 0;
	char *buf = wd_xmalloc(cap);
	for (;;) {
		if (n == cap)
			buf = wd_xrealloc(buf, cap *= 2);
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return wd_err_sys(err, e, "read %s", path);
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	*out = buf;
	*len = n;
	return 0;
}

int
audit_verify_file(const char *path, struct audit_verify *r, struct wd_err *err)
{
	wd_autofree char *buf = NULL, *head = NULL;
	wd_autofree char *hp = wd_xasprintf("%s.head", path);
	size_t len = 0, hlen = 0;
	int rc = slurp(path, &buf, &len, err);
	if (rc < 0)
		return rc == -ENOENT || rc == -EACCES ? wd_err_sys(err, -rc, "audit log %s", path)
						      : rc;
	rc = slurp(hp, &head, &hlen, err);
	if (rc < 0 && rc != -ENOENT)
		return wd_err_sys(err, -rc, "audit head %s", hp);
	audit_verify_buffer(buf, len, head, hlen, r);
	return 0;
}
