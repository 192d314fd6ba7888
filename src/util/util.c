#include "util/util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void *
wd_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

void *
wd_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		abort();
	return p;
}

void *
wd_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort();
	return q;
}

char *
wd_xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		abort();
	return p;
}

char *
wd_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

int
wd_err_set(struct wd_err *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		err->sys_errno = 0;
		err->step = 0;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code == WD_E_INVAL ? -EINVAL : code == WD_E_UNSUPPORTED ? -ENOTSUP : -EIO;
}

int
wd_err_sys(struct wd_err *err, int sys_errno, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		char head[200];
		err->code = WD_E_SYS;
		err->sys_errno = sys_errno;
		err->step = 0;
		va_start(ap, fmt);
		vsnprintf(head, sizeof(head), fmt, ap);
		va_end(ap);
		snprintf(err->msg, sizeof(err->msg), "%s: %s", head, strerror(sys_errno));
	}
	return -(sys_errno ? sys_errno : EIO);
}

int
wd_err_prefix(struct wd_err *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		char head[256], old[256];
		memcpy(old, err->msg, sizeof(old));
		va_start(ap, fmt);
		vsnprintf(head, sizeof(head), fmt, ap);
		va_end(ap);
		snprintf(err->msg, sizeof(err->msg), "%s: %s", head, old);
	}
	return -(err && err->sys_errno ? err->sys_errno : EIO);
}

WD_API int
wd_parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return -EINVAL;
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

WD_API int
wd_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return -EINVAL;
	const char *p = s;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	unsigned shift = 0;
	switch (*p) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		p++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		p++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		p++;
		break;
	case 't':
	case 'T':
		shift = 40;
		p++;
		break;
	case 'b':
	case 'B':
		break;
	default:
		return -EINVAL;
	}
	/* "MiB" is binary and "M" is taken as binary; "MB" is refused: in SI
	 * it means 10^6, and guessing either way would surprise someone. */
	if (shift && (*p == 'i' || *p == 'I')) {
		p++;
		if (*p != 'b' && *p != 'B')
			return -EINVAL;
		p++;
	} else if (!shift && (*p == 'b' || *p == 'B')) {
		p++;
	}
	if (*p)
		return -EINVAL;
	/* within int64 (2^63 - 1): a size also lives in signed fields (JSON
	 * integers, off_t), where more would turn negative */
	if (v > ((uint64_t)INT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

WD_API int
wd_parse_fixed6(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return -EINVAL;
	const char *p = s;
	uint64_t whole = 0, frac = 0;
	int digits = 0, fdigits = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (whole > 1000000000000ULL)
			return -ERANGE;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		for (; *p >= '0' && *p <= '9'; p++, fdigits++) {
			if (fdigits < 6)
				frac = frac * 10 + (uint64_t)(*p - '0');
			else if (*p != '0')
				return -EDOM; /* finer than kept: never rounded silently */
		}
		if (fdigits == 0)
			return -EINVAL;
	}
	if (*p || digits == 0)
		return -EINVAL;
	for (int i = fdigits < 6 ? fdigits : 6; i < 6; i++)
		frac *= 10;
	*out = whole * 1000000ULL + frac;
	return 0;
}

int
wd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t
wd_read_file_at(int dirfd, const char *path, char *buf, size_t cap)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off + 1 < cap) {
		ssize_t n = read(fd, buf + off, cap - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	return (ssize_t)off;
}

int
wd_write_file_at(int dirfd, const char *path, const char *s)
{
	int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = wd_write_all(fd, s, strlen(s));
	close(fd);
	return rc;
}

uint64_t
wd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int
wd_state_dir(char *out, size_t cap, struct wd_err *err)
{
	const char *s = getenv("WARDEN_STATE_DIR");
	int n;
	if (s && *s)
		n = snprintf(out, cap, "%s", s);
	else if ((s = getenv("XDG_STATE_HOME")) && *s)
		n = snprintf(out, cap, "%s/warden", s);
	else if (geteuid() == 0)
		n = snprintf(out, cap, "/var/lib/warden");
	else if ((s = getenv("HOME")) && *s)
		n = snprintf(out, cap, "%s/.local/state/warden", s);
	else
		return wd_err_set(err, WD_E_INVAL,
				  "no state directory: set XDG_STATE_HOME or WARDEN_STATE_DIR");
	if (n < 0 || (size_t)n >= cap)
		return wd_err_set(err, WD_E_INVAL, "state directory path too long");
	return 0;
}

bool
wd_env_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 255 || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return true;
}

int
wd_env_set(char ***env, size_t *n, const char *name, const char *value, struct wd_err *err)
{
	if (!wd_env_name_ok(name) || !value)
		return wd_err_set(err, WD_E_INVAL,
				  "bad environment variable name (a letter or _, then letters, "
				  "digits and _, at most 255)");
	size_t nl = strlen(name);
	char *kv = wd_xasprintf("%s=%s", name, value);
	for (size_t i = 0; i < *n; i++) {
		if (!strncmp((*env)[i], name, nl) && (*env)[i][nl] == '=') {
			free((*env)[i]);
			(*env)[i] = kv;
			return 0;
		}
	}
	*env = wd_xrealloc(*env, (*n + 2) * sizeof(char *));
	(*env)[(*n)++] = kv;
	(*env)[*n] = NULL;
	return 0;
}

int
wd_helper_program(const char *env_var, const char *name, const char *installed, char *out,
		  size_t cap)
{
	const char *env = getenv(env_var);
	if (env && env[0] == '/' && access(env, X_OK) == 0) {
		snprintf(out, cap, "%s", env);
		return 0;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
	if (slash) {
		*slash = '\0';
		snprintf(out, cap, "%s/%s", self, name);
		if (access(out, X_OK) == 0)
			return 0;
	}
	snprintf(out, cap, "%s", installed);
	return access(out, X_OK) == 0 ? 0 : -ENOENT;
}
