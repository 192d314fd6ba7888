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
#include "util/sha256.h"

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

/* Length of the UTF-8 sequence at s, or 0 if it is not one.  Strict, as
 * jansson checks (RFC 3629): no overlong forms, no surrogates, nothing past
 * U+10FFFF.  Stops at the first byte that does not fit, so never reads past
 * a NUL. */
static size_t
utf8_seq(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (n == 0 || s[0] > 0xf4)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

json_t *
audit_json_text(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	static const char hex[] = "0123456789abcdef";
	wd_autofree char *out = wd_xmalloc(4 * strlen(s) + 1);
	char *o = out;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_seq(p);
		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			*o++ = '\\';
			*o++ = 'x';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
			p++;
		}
	}
	*o = '\0';
	j = json_string(out);
	if (!j)
		abort(); /* broken invariant: what is left is UTF-8 */
	return j;
}

json_t *
audit_json_bytes(const char *s)
{
	json_t *j = json_stringn_nocheck(s, strlen(s));
	if (!j)
		abort(); /* allocation */
	return j;
}

void
audit_write_value(struct jw *w, json_t *v)
{
	size_t i;
	const char *k;
	json_t *m;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		jw_obj_begin(w);
		json_object_foreach(v, k, m)
		{
			jw_key(w, k);
			audit_write_value(w, m);
		}
		jw_obj_end(w);
		return;
	case JSON_ARRAY:
		jw_arr_begin(w);
		json_array_foreach(v, i, m) audit_write_value(w, m);
		jw_arr_end(w);
		return;
	case JSON_STRING:
		jw_strn(w, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		jw_int(w, json_integer_value(v));
		return;
	case JSON_REAL: {
		/* as jansson writes it (%.17g), as the trail always had it */
		char *t = json_dumps(v, JSON_ENCODE_ANY);
		if (!t)
			abort();
		jw_json(w, t);
		free(t);
		return;
	}
	case JSON_TRUE:
	case JSON_FALSE:
		jw_bool(w, json_is_true(v));
		return;
	case JSON_NULL:
		jw_null(w);
		return;
	}
}

void
audit_write_members(struct jw *w, json_t *obj)
{
	const char *k;
	json_t *m;
	json_object_foreach(obj, k, m)
	{
		jw_key(w, k);
		audit_write_value(w, m);
	}
}

json_t *
audit_line_load(const char *line, size_t len, size_t flags, json_error_t *je)
{
	size_t n = 0;
	wd_autofree char *t = jw_surrogates_to_nul(line, len, &n);
	return json_loadb(t, n, flags | JSON_ALLOW_NUL, je);
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

static int
not_regular(struct wd_err *err, const char *what, const char *path, mode_t mode)
{
	const char *kind;
	switch (mode & S_IFMT) {
	case S_IFIFO:
		kind = " (a FIFO)";
		break;
	case S_IFSOCK:
		kind = " (a socket)";
		break;
	case S_IFCHR:
		kind = " (a character device)";
		break;
	case S_IFBLK:
		kind = " (a block device)";
		break;
	case S_IFDIR:
		kind = " (a directory)";
		break;
	default:
		kind = "";
		break;
	}
	return wd_err_set(err, WD_E_INVAL, "%s %s: not a regular file%s", what, path, kind);
}

int
audit_open_regular(const char *path, int flags, const char *what, struct wd_err *err)
{
	/* O_NONBLOCK for the open only (`warden audit verify FIFO`
	 * and `--audit FIFO` hung): without it, opening a FIFO for reading
	 * waits for a writer and for writing waits for a reader.  With it, the
	 * read side opens at once and fstat() refuses it; the write side fails
	 * with ENXIO when no one reads (so does a unix socket). */
	wd_autoclose int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
	struct stat st;
	if (fd < 0) {
		int e = errno;
		if (e == ENXIO && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return not_regular(err, what, path, st.st_mode);
		return wd_err_sys(err, e, "%s %s", what, path);
	}
	if (fstat(fd, &st) < 0)
		return wd_err_sys(err, errno, "%s %s", what, path);
	/* A device (/dev/zero never ends), a directory or a FIFO is no log. */
	if (!S_ISREG(st.st_mode))
		return not_regular(err, what, path, st.st_mode);
	/* Regular files ignore O_NONBLOCK on Linux today; clear it anyway so
	 * reads and writes keep their ordinary meaning on any filesystem. */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return wd_err_sys(err, errno, "%s %s", what, path);
	return wd_steal_fd(&fd);
}

int
audit_open(const char *path, struct audit_log **out, struct wd_err *err)
{
	int fd =
	    audit_open_regular(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, "audit log", err);
	if (fd < 0)
		return fd;
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
 * read-only fd: the append fd is O_WRONLY.  The window grows from the end
 * until the line before the final '\n' starts inside it: at most
 * AUDIT_LINE_MAX + 2 bytes (the line and the newlines around it). */
static int
last_line(const struct audit_log *a, long long *seq, char hash[65], struct wd_err *err)
{
	const char *path = a->path;
	wd_autoclose int fd = audit_open_regular(path, O_RDONLY | O_NOFOLLOW, "audit log", err);
	if (fd < 0)
		return fd;
	struct stat st, ours;
	if (fstat(fd, &st) < 0 || fstat(a->fd, &ours) < 0)
		return wd_err_sys(err, errno, "audit log %s", path);
	/* Read back by path, written through our fd: if the path now names
	 * another file (moved, rotated, replaced), chaining onto that file's
	 * last line while appending to ours would break both chains. */
	if (st.st_dev != ours.st_dev || st.st_ino != ours.st_ino)
		return wd_err_set(err, WD_E_INVAL,
				  "audit log %s was replaced or moved since warden opened it",
				  path);
	if (st.st_size == 0) {
		*seq = 0;
		strcpy(hash, AUDIT_ZERO_HASH);
		return 0;
	}
	const size_t most = (size_t)AUDIT_LINE_MAX + 2;
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
		if (start == 0 && n < (size_t)st.st_size && want < most) {
			want = want * 4 < most ? want * 4 : most;
			continue;
		}
		if ((start == 0 && n < (size_t)st.st_size) || end - start > AUDIT_LINE_MAX)
			return wd_err_set(err, WD_E_INVAL,
					  "audit log %s: the last line is longer than %u bytes, "
					  "more than any event; run 'warden audit verify %s'",
					  path, AUDIT_LINE_MAX, path);
		json_error_t je;
		json_t *ev = audit_line_load(buf + start, end - start, 0, &je);
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
		wd_sha256_hex_of(buf + start, end - start, hash);
		return 0;
	}
}

static int
write_head(const char *path, long long seq, const char hash[65], struct wd_err *err)
{
	wd_autofree char *head = wd_xasprintf("%s.head", path);
	wd_autofree char *tmp = wd_xasprintf("%s.head.%d.tmp", path, (int)getpid());
	wd_autofree char *text = wd_xasprintf("{\"seq\":%lld,\"hash\":\"%s\"}\n", seq, hash);
	/* A fresh temporary, created exclusively: whatever was left or planted
	 * at this name (a FIFO would block the open) is not opened. */
	if (unlink(tmp) < 0 && errno != ENOENT)
		return wd_err_sys(err, errno, "audit head %s", tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
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
audit_append_text(struct audit_log *a, const char *sandbox, const char *members, struct wd_err *err)
{
	while (flock(a->fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return wd_err_sys(err, errno, "lock audit log %s", a->path);
	long long seq = 0;
	char prev[65], now[32];
	int rc = last_line(a, &seq, prev, err);
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
	/* Nothing is written that verification would refuse to read back. */
	if (w.len > AUDIT_LINE_MAX) {
		rc = wd_err_set(err, WD_E_INVAL,
				"audit log %s: an event of %zu bytes is longer than the %u a "
				"line may take",
				a->path, w.len, AUDIT_LINE_MAX);
		jw_fini(&w);
		goto out;
	}
	char hash[65];
	wd_sha256_hex_of(w.p, w.len, hash);
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
	/* the members without the object's braces, ASCII, a byte that is not
	 * UTF-8 as util/json.h writes it (audit_json_bytes) */
	struct jw w;
	jw_init(&w, JW_ASCII);
	audit_write_members(&w, fields);
	json_decref(fields);
	json_t *sb = json_object_get(ev, "sandbox");
	int rc = audit_append_text(a, json_is_string(sb) ? json_string_value(sb) : NULL,
				   w.p ? w.p : "", err);
	jw_fini(&w);
	return rc;
}
