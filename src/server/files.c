/* server/files: the direct file tools, run in warden itself.
 *
 *   read_file  write_file  edit_file  list_dir  search_files
 *
 * Every path goes through wd_workspace (src/files/files.c): openat2()
 * with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS on the workspace's fd, the
 * policy's own containment, so nothing here resolves a path by string;
 * writes are atomic renames that never follow a link and never touch a
 * protected path (warden's, the policy's workspace.protect, --protect and
 * a live sandbox's own: the paths its jail makes read-only).  The MCP
 * tools work on the server's workspace; the harness's sandbox.* file
 * methods on the live sandbox's view (wd_sandbox_workspace): for a cow
 * sandbox its overlay, so what they write joins its change set.
 * Walking a tree opens each entry again through wd_workspace_openat()
 * with O_NOFOLLOW: a symlink is listed, never followed, and a directory
 * swapped for a link mid-walk fails to open.
 *
 * Each tool answers a model (text, sanitised by mcp_tool_result) or a
 * harness (JSON data; errors as -32007 with the errno's name).  Sizes are
 * bounded: a model gets at most READ_MODEL_CAP bytes of a file per call,
 * a harness FILE_CAP; a search stops after SEARCH_FILES files or
 * SEARCH_BUDGET_NS. */
#include "server/run.h"
#include "server/base.h"
#include "server/rpc.h"
#include "server/sanitize.h"
#include "server/srv.h"
#include "server/mcp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define READ_MODEL_CAP (64u << 10)
#define FILE_CAP (16u << 20)
#define EDIT_CAP (8u << 20)
#define LIST_MAX 1000
#define SEARCH_FILE_MAX (8u << 20)
#define SEARCH_FILES 100000
#define SEARCH_BUDGET_NS (10ull * 1000000000ull)
#define LINE_SHOWN 300

struct ftool {
	struct call *c;
	struct srv *s;
	wd_workspace *ws; /* the server's, or a live sandbox's view */
	bool model;
	json_t *args;
	struct rpc_err *e;
};

/* A failure: a tool error for a model, -32007 for a harness. */
static json_t *SRV_PRINTF(3, 4) fail(struct ftool *t, int err_no, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (t->model)
		return mcp_tool_result(t->s, msg, NULL, true);
	rpc_err_set(t->e, SRV_E_FILE, "%s", msg);
	t->e->data = json_pack("{s:s}", "errno", err_no ? strerrorname_np(err_no) : "EINVAL");
	return NULL;
}

static json_t *
fail_wd(struct ftool *t, int rc, const struct wd_err *err)
{
	return fail(t, -rc, "%s", err->msg);
}

static const char *
arg_str(struct ftool *t, const char *key)
{
	return json_string_value(json_object_get(t->args, key));
}

/* ---- reading ---- */

/* Read all of fd (at most cap bytes; *len, *truncated).  NULL on error. */
static char *
slurp(int fd, size_t cap, size_t *len, bool *truncated)
{
	size_t n = 0, sz = cap < 65536 ? cap : 65536;
	char *b = xmalloc(sz + 1);
	for (;;) {
		if (n == sz) {
			if (sz >= cap)
				break;
			sz = sz * 2 > cap ? cap : sz * 2;
			b = xrealloc(b, sz + 1);
		}
		ssize_t r = read(fd, b + n, sz - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(b);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	char probe;
	*truncated = n >= cap && read(fd, &probe, 1) == 1;
	b[n] = '\0';
	*len = n;
	return b;
}

static int
open_regular(struct ftool *t, const char *path, struct stat *st, json_t **failed)
{
	struct wd_err err = {0};
	int fd = wd_workspace_openat(t->ws, path, O_RDONLY | O_NONBLOCK, &err);
	if (fd < 0) {
		*failed = fail_wd(t, fd, &err);
		return -1;
	}
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		bool dir = S_ISDIR(st->st_mode);
		close(fd);
		*failed = fail(t, dir ? EISDIR : EINVAL, "'%s' is %s", path,
			       dir ? "a directory (use list_dir)" : "not a regular file");
		return -1;
	}
	/* a FIFO was refused above; a regular file reads without blocking */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static bool
is_binary(const char *b, size_t n)
{
	return memchr(b, '\0', n < 8192 ? n : 8192) != NULL;
}

/* read_file for a model: lines offset.. (1-based), at most limit lines
 * and READ_MODEL_CAP bytes; the rest counted, with where to go on. */
static json_t *
read_for_model(struct ftool *t, const char *path, const char *b, size_t n, uint64_t size)
{
	json_t *ov = json_object_get(t->args, "offset"), *lv = json_object_get(t->args, "limit");
	uint64_t first = ov ? (uint64_t)json_integer_value(ov) : 1;
	uint64_t limit = lv ? (uint64_t)json_integer_value(lv) : 2000;
	if (is_binary(b, n))
		return fail(t, EINVAL, "'%s' is a binary file (%llu bytes); not shown", path,
			    (unsigned long long)size);
	const char *p = b, *end = b + n;
	uint64_t line = 1;
	while (line < first && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
		line++;
	}
	if (p >= end && n > 0)
		return fail(t, EINVAL, "'%s' has %llu lines; offset %llu is past the end", path,
			    (unsigned long long)(line - 1), (unsigned long long)first);
	const char *start = p;
	uint64_t shown = 0;
	while (p < end && shown < limit) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;
		if ((size_t)(next - start) > READ_MODEL_CAP && shown > 0)
			break;
		p = next;
		shown++;
	}
	size_t kept = (size_t)(p - start);
	if (kept > READ_MODEL_CAP)
		kept = READ_MODEL_CAP; /* one line longer than the cap: cut */
	uint64_t after = size - (uint64_t)(start - b) - kept;
	char *text;
	if (after > 0)
		text = xasprintf("%.*s%s[... %llu more bytes after line %llu: call read_file with "
				 "offset=%llu to go on, or narrow with limit ...]",
				 (int)kept, start, kept && start[kept - 1] != '\n' ? "\n" : "",
				 (unsigned long long)after, (unsigned long long)(first + shown - 1),
				 (unsigned long long)(first + shown));
	else
		text = xasprintf("%.*s", (int)kept, start);
	if (!text[0]) {
		free(text);
		text = xasprintf("(%s is empty)", path);
	}
	json_t *r = mcp_tool_result(t->s, text, NULL, false);
	free(text);
	return r;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *
base64(const unsigned char *p, size_t n)
{
	char *o = xmalloc(4 * ((n + 2) / 3) + 1), *q = o;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		*q++ = b64[(v >> 18) & 63];
		*q++ = b64[(v >> 12) & 63];
		*q++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		*q++ = i + 2 < n ? b64[v & 63] : '=';
	}
	*q = '\0';
	return o;
}

/* Decode base64 (padding optional, no whitespace); -1 if malformed. */
static long
unbase64(const char *s, unsigned char *out)
{
	size_t n = strlen(s);
	while (n && s[n - 1] == '=')
		n--;
	long o = 0;
	unsigned v = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		const char *k = memchr(b64, s[i], 64);
		if (!k || !s[i])
			return -1;
		v = v << 6 | (unsigned)(k - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(v >> bits);
		}
	}
	return o;
}

static bool
valid_utf8(const char *b, size_t n)
{
	size_t used = 0;
	char *t = utf8_visible(b, n, true, &used, NULL);
	bool ok = strlen(t) == n && !memchr(b, '\0', n);
	free(t);
	return ok;
}

static json_t *
read_for_harness(struct ftool *t, const char *path, int fd, uint64_t size)
{
	uint64_t off = 0, len = FILE_CAP;
	const char *enc = "auto";
	if (!p_uint(t->args, "offset", UINT64_MAX >> 1, &off, t->e) ||
	    !p_uint(t->args, "length", FILE_CAP, &len, t->e) ||
	    !p_str(t->args, "encoding", false, &enc, t->e))
		return NULL;
	if (strcmp(enc, "auto") && strcmp(enc, "utf-8") && strcmp(enc, "base64"))
		return fail(t, EINVAL, "encoding must be auto, utf-8 or base64");
	if (off && lseek(fd, (off_t)off, SEEK_SET) < 0)
		return fail(t, errno, "'%s': seek: %s", path, strerror(errno));
	size_t n = 0;
	bool more = false;
	char *b = slurp(fd, len ? len : 1, &n, &more);
	if (!b)
		return fail(t, errno, "'%s': %s", path, strerror(errno));
	if (!len)
		n = 0;
	bool text = strcmp(enc, "base64") && (!strcmp(enc, "utf-8") || valid_utf8(b, n));
	char *content =
	    text ? utf8_visible(b, n, true, NULL, NULL) : base64((const unsigned char *)b, n);
	json_t *r = json_pack("{s:s, s:I, s:I, s:I, s:s, s:s, s:b}", "path", path, "size",
			      (json_int_t)size, "offset", (json_int_t)off, "length", (json_int_t)n,
			      "encoding", text ? "utf-8" : "base64", "content", content, "eof",
			      !more && off + n >= size);
	free(content);
	free(b);
	return r;
}

static json_t *
read_file(struct ftool *t)
{
	const char *path = arg_str(t, "path");
	struct stat st;
	json_t *failed = NULL;
	int fd = open_regular(t, path, &st, &failed);
	if (fd < 0)
		return failed;
	json_t *r;
	if (t->model) {
		size_t n = 0;
		bool more = false;
		/* lines past the cap are counted from st_size, not read */
		char *b = slurp(fd, FILE_CAP, &n, &more);
		r = b ? read_for_model(t, path, b, n, (uint64_t)st.st_size)
		      : fail(t, errno, "'%s': %s", path, strerror(errno));
		free(b);
	} else {
		r = read_for_harness(t, path, fd, (uint64_t)st.st_size);
	}
	close(fd);
	return r;
}

/* ---- writing ---- */

static json_t *
write_file(struct ftool *t)
{
	const char *path = arg_str(t, "path");
	json_t *cv = json_object_get(t->args, "content");
	const char *enc = "utf-8";
	bool mkdirs = true;
	if (!t->model && (!p_str(t->args, "encoding", false, &enc, t->e) ||
			  !p_bool(t->args, "mkdirs", &mkdirs, t->e)))
		return NULL;
	if (strcmp(enc, "utf-8") && strcmp(enc, "base64"))
		return fail(t, EINVAL, "encoding must be utf-8 or base64");
	const char *content = json_string_value(cv);
	size_t len = json_string_length(cv);
	unsigned char *raw = NULL;
	if (!strcmp(enc, "base64")) {
		raw = xmalloc(len * 3 / 4 + 3);
		long n = unbase64(content, raw);
		if (n < 0) {
			free(raw);
			return fail(t, EINVAL, "content is not base64");
		}
		content = (const char *)raw;
		len = (size_t)n;
	}
	if (len > FILE_CAP) {
		free(raw);
		return fail(t, EFBIG, "content over %u bytes", FILE_CAP);
	}
	struct wd_err err = {0};
	int rc = wd_workspace_write(t->ws, path, content, len, mkdirs ? WD_WRITE_MKDIRS : 0, &err);
	free(raw);
	if (rc < 0)
		return fail_wd(t, rc, &err);
	if (!t->model)
		return json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)len);
	char *text = xasprintf("wrote %zu bytes to %s", len, path);
	json_t *r = mcp_tool_result(t->s, text, NULL, false);
	free(text);
	return r;
}

static size_t
count_occurrences(const char *hay, size_t hn, const char *needle, size_t nn)
{
	size_t count = 0;
	for (const char *p = hay; (p = memmem(p, hn - (size_t)(p - hay), needle, nn)); p += nn)
		count++;
	return count;
}

static json_t *
edit_file(struct ftool *t)
{
	const char *path = arg_str(t, "path");
	json_t *ov = json_object_get(t->args, "old_string"),
	       *nv = json_object_get(t->args, "new_string");
	bool all = false;
	if (!p_bool(t->args, "replace_all", &all, t->e))
		return NULL;
	if (!json_is_string(ov) || !json_is_string(nv) || !json_string_length(ov))
		return fail(t, EINVAL, "old_string (not empty) and new_string are strings");
	const char *old = json_string_value(ov), *new = json_string_value(nv);
	size_t on = json_string_length(ov), nn = json_string_length(nv);
	struct stat st;
	json_t *failed = NULL;
	int fd = open_regular(t, path, &st, &failed);
	if (fd < 0)
		return failed;
	size_t n = 0;
	bool more = false;
	char *b = slurp(fd, EDIT_CAP, &n, &more);
	close(fd);
	if (!b || more) {
		free(b);
		return fail(t, EFBIG, "'%s' is over %u bytes: too large to edit", path, EDIT_CAP);
	}
	size_t k = count_occurrences(b, n, old, on);
	if (k == 0 || (k > 1 && !all)) {
		free(b);
		if (k == 0)
			return fail(t, ENOENT,
				    "old_string was not found in '%s' (it must match exactly, "
				    "whitespace included); read the file again",
				    path);
		return fail(t, EEXIST,
			    "old_string occurs %zu times in '%s': give more surrounding text "
			    "to make it unique, or set replace_all",
			    k, path);
	}
	size_t outn = n - k * on + k * nn;
	char *o = xmalloc(outn + 1), *q = o;
	const char *p = b;
	for (const char *hit; (hit = memmem(p, n - (size_t)(p - b), old, on)); p = hit + on) {
		memcpy(q, p, (size_t)(hit - p));
		q += hit - p;
		memcpy(q, new, nn);
		q += nn;
	}
	memcpy(q, p, n - (size_t)(p - b));
	free(b);
	struct wd_err err = {0};
	int rc = wd_workspace_write(t->ws, path, o, outn, WD_WRITE_EXISTING, &err);
	free(o);
	if (rc < 0)
		return fail_wd(t, rc, &err);
	if (!t->model)
		return json_pack("{s:s, s:I}", "path", path, "replacements", (json_int_t)k);
	char *text = xasprintf("edited %s: %zu replacement%s", path, k, k == 1 ? "" : "s");
	json_t *r = mcp_tool_result(t->s, text, NULL, false);
	free(text);
	return r;
}

/* ---- walking ---- */

struct entry {
	char *path;
	char type; /* 'd' 'f' 'l' '?' */
	uint64_t size;
	char *target;
};

static int
entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if ((x->type == 'd') != (y->type == 'd'))
		return x->type == 'd' ? -1 : 1;
	return strcmp(x->path, y->path);
}

static char *
join(const char *dir, const char *name)
{
	if (!dir[0] || !strcmp(dir, "."))
		return xstrdup(name);
	size_t n = strlen(dir);
	return xasprintf("%s%s%s", dir, dir[n - 1] == '/' ? "" : "/", name);
}

/* The entries of directory rel (opened beneath the workspace), sorted;
 * *n entries, or NULL with err. */
static struct entry *
read_dir(wd_workspace *ws, const char *rel, size_t *n, struct wd_err *err)
{
	int fd = wd_workspace_openat(ws, rel, O_RDONLY | O_DIRECTORY | O_NONBLOCK, err);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d) {
		err_set(err, errno, "'%s'", rel);
		close(fd);
		return NULL;
	}
	size_t cap = 64;
	struct entry *v = xcalloc(cap, sizeof(*v));
	*n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (*n == cap)
			v = xrealloc(v, (cap *= 2) * sizeof(*v));
		struct entry *e = &v[(*n)++];
		memset(e, 0, sizeof(*e));
		e->path = join(rel, de->d_name);
		e->type = S_ISDIR(st.st_mode)	? 'd'
			  : S_ISREG(st.st_mode) ? 'f'
			  : S_ISLNK(st.st_mode) ? 'l'
						: '?';
		e->size = (uint64_t)st.st_size;
		if (e->type == 'l') {
			char tgt[4096];
			ssize_t l = readlinkat(dirfd(d), de->d_name, tgt, sizeof(tgt) - 1);
			if (l >= 0) {
				tgt[l] = '\0';
				e->target = xstrdup(tgt);
			}
		}
	}
	closedir(d);
	qsort(v, *n, sizeof(*v), entry_cmp);
	return v;
}

static void
entries_free(struct entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].target);
	}
	free(v);
}

struct listing {
	json_t *arr; /* harness */
	char *text;  /* model */
	size_t len, cap;
	size_t count, omitted;
};

static void
list_add(struct listing *l, bool model, const struct entry *e)
{
	if (l->count >= LIST_MAX) {
		l->omitted++;
		return;
	}
	l->count++;
	if (!model) {
		char *p = utf8_visible(e->path, strlen(e->path), true, NULL, NULL);
		json_t *o = json_pack("{s:s, s:s}", "path", p, "type",
				      e->type == 'd'   ? "dir"
				      : e->type == 'f' ? "file"
				      : e->type == 'l' ? "symlink"
						       : "other");
		free(p);
		if (e->type == 'f')
			json_object_set_new(o, "size", json_integer((json_int_t)e->size));
		if (e->target) {
			char *tg = utf8_visible(e->target, strlen(e->target), true, NULL, NULL);
			json_object_set_new(o, "target", json_string(tg));
			free(tg);
		}
		json_array_append_new(l->arr, o);
		return;
	}
	char *line =
	    e->type == 'd'   ? xasprintf("%s/\n", e->path)
	    : e->type == 'f' ? xasprintf("%s  (%llu bytes)\n", e->path, (unsigned long long)e->size)
	    : e->type == 'l' ? xasprintf("%s -> %s\n", e->path, e->target ? e->target : "?")
			     : xasprintf("%s  (special file)\n", e->path);
	size_t n = strlen(line);
	if (l->len + n + 1 > l->cap)
		l->text = xrealloc(l->text, l->cap = (l->len + n + 1) * 2);
	memcpy(l->text + l->len, line, n + 1);
	l->len += n;
	free(line);
}

static void
list_rec(struct ftool *t, const char *rel, int depth, struct listing *l, struct wd_err *err)
{
	size_t n = 0;
	struct entry *v = read_dir(t->ws, rel, &n, err);
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		list_add(l, t->model, &v[i]);
		if (v[i].type == 'd' && depth > 1 && l->count < LIST_MAX) {
			struct wd_err sub = {0};
			list_rec(t, v[i].path, depth - 1, l, &sub);
		}
	}
	entries_free(v, n);
}

static json_t *
list_dir(struct ftool *t)
{
	const char *path = arg_str(t, "path");
	uint64_t depth = 1;
	if (!path)
		path = ".";
	if (!t->model && !p_uint(t->args, "depth", 5, &depth, t->e))
		return NULL;
	if (t->model && json_object_get(t->args, "depth"))
		depth = (uint64_t)json_integer_value(json_object_get(t->args, "depth"));
	if (depth < 1 || depth > 5)
		return fail(t, EINVAL, "depth must be from 1 to 5");
	struct listing l = {.arr = t->model ? NULL : json_array()};
	struct wd_err err = {0};
	list_rec(t, path, (int)depth, &l, &err);
	if (err.msg[0] && l.count == 0) {
		json_decref(l.arr);
		free(l.text);
		return fail(t, err.sys_errno ? err.sys_errno : EINVAL, "%s", err.msg);
	}
	if (!t->model)
		return json_pack("{s:s, s:o, s:I}", "path", path, "entries", l.arr, "omitted",
				 (json_int_t)l.omitted);
	char *text = l.omitted ? xasprintf("%s[... %zu more entries: list a subdirectory, or "
					   "use a smaller depth ...]",
					   l.text ? l.text : "", l.omitted)
			       : xstrdup(l.text ? l.text : "(empty directory)\n");
	free(l.text);
	json_t *r = mcp_tool_result(t->s, text, NULL, false);
	free(text);
	return r;
}

/* ---- search ---- */

/* A regular expression is compiled and matched in a child process, never
 * in the server.  glibc's matcher is super-linear on bounded repetition:
 * (a{1,100}){1,100}b against a long line of a's ran one regexec() for
 * minutes at 100 % CPU and 1 GB (docs/threat-model.md), and neither the search's
 * budget nor a cancellation can interrupt a function call.  A process can
 * be killed: the server walks the tree and reads the files as before,
 * sends each file's text to the matcher and waits for its answer until
 * the search's deadline or a cancellation, then SIGKILLs it.  The matcher
 * keeps no descriptor of the server's (a sandbox's pipe or a client's
 * socket held by it would delay their EOF), runs under RLIMIT_CPU and
 * (outside sanitizer builds, whose shadow memory is terabytes of address
 * space) RLIMIT_AS, and dies with the server (PR_SET_PDEATHSIG).  A line
 * is matched on its first SEARCH_LINE_MAX bytes only.
 *
 *   server -> matcher   u32 wanted, u32 length, the file's text
 *   matcher -> server   u32 count, count x u64 line numbers (1-based)
 *   at start            u32 0, or u32 length and regcomp's message */
#define SEARCH_LINE_MAX 4096
#define MATCHER_AS_EXTRA (512ull << 20)

struct search {
	struct ftool *t;
	const char *pattern;
	size_t plen;
	bool icase, use_re;
	const char *glob;
	uint64_t max, found, files;
	uint64_t deadline;
	bool truncated, stopped, re_killed;
	pid_t re_pid;  /* the matcher, or 0 */
	wd_ignore *ig; /* the workspace's ignore rules: skipped, as git grep does */
	int re_wfd, re_rfd;
	json_t *arr;
	char *text;
	size_t len, cap;
};

static bool
line_matches(struct search *q, const char *line, size_t n)
{
	if (!q->icase)
		return memmem(line, n, q->pattern, q->plen) != NULL;
	for (size_t i = 0; i + q->plen <= n; i++)
		if (!strncasecmp(line + i, q->pattern, q->plen))
			return true;
	return false;
}

static void
child_io(int fd, void *p, size_t n, bool wr)
{
	for (size_t done = 0; done < n;) {
		ssize_t r = wr ? write(fd, (char *)p + done, n - done)
			       : read(fd, (char *)p + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(0); /* the server went away or killed the search */
		done += (size_t)r;
	}
}

/* The matcher process (fd 0: requests, fd 1: answers); never returns. */
static _Noreturn void
matcher_main(const char *pattern, bool icase)
{
	regex_t re;
	int rc = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0));
	if (rc) {
		char msg[200];
		regerror(rc, &re, msg, sizeof(msg));
		uint32_t l = (uint32_t)strlen(msg);
		child_io(1, &l, sizeof(l), true);
		child_io(1, msg, l, true);
		_exit(0);
	}
	uint32_t zero = 0;
	child_io(1, &zero, sizeof(zero), true);
	char line[SEARCH_LINE_MAX + 1];
	for (;;) {
		uint32_t hdr[2];
		child_io(0, hdr, sizeof(hdr), false);
		char *b = malloc(hdr[1] + 1u);
		uint64_t *hits = malloc(((size_t)hdr[0] + 1) * sizeof(uint64_t));
		if (!b || !hits)
			_exit(1);
		child_io(0, b, hdr[1], false);
		uint32_t count = 0;
		uint64_t lineno = 1;
		for (const char *p = b, *end = b + hdr[1]; p < end && count < hdr[0]; lineno++) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = (size_t)((nl ? nl : end) - p);
			if (n > SEARCH_LINE_MAX)
				n = SEARCH_LINE_MAX;
			memcpy(line, p, n);
			line[n] = '\0';
			int m = regexec(&re, line, 0, NULL, 0);
			if (m == 0)
				hits[1 + count++] = lineno;
			else if (m != REG_NOMATCH)
				_exit(2); /* REG_ESPACE at RLIMIT_AS: no answer, not "no match" */
			p = nl ? nl + 1 : end;
		}
		memcpy(hits, &count, sizeof(count));
		child_io(1, hits, sizeof(count), true);
		child_io(1, hits + 1, count * sizeof(uint64_t), true);
		free(b);
		free(hits);
	}
}

/* Move n bytes to or from the matcher before the search's deadline and
 * while the call is not cancelled; false (the matcher killed) otherwise. */
static bool
matcher_io(struct search *q, int fd, void *rp, const void *wp, size_t n)
{
	bool wr = wp != NULL;
	for (size_t done = 0; done < n;) {
		uint64_t now = now_ns();
		if (now >= q->deadline || (q->t->c && call_cancelled(q->t->c)))
			goto kill;
		uint64_t left_ms = (q->deadline - now) / 1000000 + 1;
		/* short slices: a cancellation is noticed within 100 ms */
		struct pollfd pfd = {.fd = fd, .events = wr ? POLLOUT : POLLIN};
		int rc = poll(&pfd, 1, left_ms < 100 ? (int)left_ms : 100);
		if (rc < 0 && errno != EINTR)
			goto kill;
		if (rc <= 0)
			continue;
		ssize_t r = wr ? write(fd, (const char *)wp + done, n - done)
			       : read(fd, (char *)rp + done, n - done);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			goto kill; /* it died: RLIMIT_CPU, RLIMIT_AS */
		done += (size_t)r;
	}
	return true;
kill:
	kill(q->re_pid, SIGKILL);
	q->re_killed = q->stopped = true;
	return false;
}

static long
vm_bytes(void)
{
	char b[64] = {0};
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, b, sizeof(b) - 1);
	if (fd >= 0)
		close(fd);
	return n > 0 ? atol(b) * sysconf(_SC_PAGESIZE) : -1;
}

/* Start the matcher and compile the pattern in it.  0; or -1 with msg
 * (a bad expression, or the matcher could not start or compile in time). */
static int
matcher_start(struct search *q, char *msg, size_t cap)
{
	int req[2], ans[2];
	if (pipe2(req, O_CLOEXEC) < 0)
		return snprintf(msg, cap, "search: pipe: %s", strerror(errno)), -1;
	if (pipe2(ans, O_CLOEXEC) < 0) {
		int e = errno;
		close(req[0]);
		close(req[1]);
		return snprintf(msg, cap, "search: pipe: %s", strerror(e)), -1;
	}
	long vm = vm_bytes();
	unsigned cpu_s = (unsigned)(SEARCH_BUDGET_NS / 1000000000ull) + 1;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		/* The child of a threaded process: only what is safe after
		 * fork() until the pattern is compiled (glibc's malloc is). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		int r = fcntl(req[0], F_DUPFD, 10), w = fcntl(ans[1], F_DUPFD, 10);
		if (r < 0 || w < 0 || dup2(r, 0) < 0 || dup2(w, 1) < 0)
			_exit(1);
		/* nothing of the server's stays open in it (fd 2: the
		 * server's stderr, for a sanitizer's report) */
		if (close_range(3, ~0u, 0) < 0)
			_exit(1);
		struct rlimit cpu = {cpu_s, cpu_s};
		setrlimit(RLIMIT_CPU, &cpu);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
		if (vm > 0) {
			struct rlimit as = {(rlim_t)vm + MATCHER_AS_EXTRA,
					    (rlim_t)vm + MATCHER_AS_EXTRA};
			setrlimit(RLIMIT_AS, &as);
		}
#else
		(void)vm;
#endif
		matcher_main(q->pattern, q->icase);
	}
	int e = errno;
	close(req[0]);
	close(ans[1]);
	if (pid < 0) {
		close(req[1]);
		close(ans[0]);
		return snprintf(msg, cap, "search: fork: %s", strerror(e)), -1;
	}
	q->re_pid = pid;
	q->re_wfd = req[1];
	q->re_rfd = ans[0];
	fcntl(q->re_wfd, F_SETFL, O_NONBLOCK);
	fcntl(q->re_rfd, F_SETFL, O_NONBLOCK);
	uint32_t l = 0;
	if (!matcher_io(q, q->re_rfd, &l, NULL, sizeof(l)))
		return snprintf(msg, cap,
				"the regular expression could not be compiled within the "
				"search's budget"),
		       -1;
	if (l == 0)
		return 0;
	char why[200] = {0};
	if (!matcher_io(q, q->re_rfd, why, NULL, l < sizeof(why) ? l : sizeof(why) - 1))
		return snprintf(msg, cap, "bad regular expression"), -1;
	return snprintf(msg, cap, "bad regular expression: %s", why), -1;
}

static void
matcher_stop(struct search *q)
{
	if (!q->re_pid)
		return;
	close(q->re_wfd);
	close(q->re_rfd);
	kill(q->re_pid, SIGKILL);
	while (waitpid(q->re_pid, NULL, 0) < 0 && errno == EINTR)
		;
	q->re_pid = 0;
}

/* The line numbers of b's matching lines (at most want), from the
 * matcher; NULL when it was killed (deadline, cancellation, limits). */
static uint64_t *
matcher_lines(struct search *q, const char *b, size_t n, uint32_t want, uint32_t *count)
{
	uint32_t hdr[2] = {want, (uint32_t)n};
	if (q->re_killed || !matcher_io(q, q->re_wfd, NULL, hdr, sizeof(hdr)) ||
	    !matcher_io(q, q->re_wfd, NULL, b, n) ||
	    !matcher_io(q, q->re_rfd, count, NULL, sizeof(*count)))
		return NULL;
	if (*count > want) {
		kill(q->re_pid, SIGKILL);
		q->re_killed = q->stopped = true;
		return NULL;
	}
	uint64_t *v = xcalloc((size_t)*count + 1, sizeof(uint64_t));
	if (!matcher_io(q, q->re_rfd, v, NULL, *count * sizeof(uint64_t))) {
		free(v);
		return NULL;
	}
	return v;
}

static void
add_match(struct search *q, const char *path, uint64_t lineno, const char *line, size_t n)
{
	if (q->found >= q->max) {
		q->truncated = true;
		return;
	}
	q->found++;
	size_t shown = n > LINE_SHOWN ? LINE_SHOWN : n;
	char *vis = utf8_visible(line, shown, true, NULL, NULL);
	if (!q->t->model) {
		char *p = utf8_visible(path, strlen(path), true, NULL, NULL);
		json_array_append_new(q->arr, json_pack("{s:s, s:I, s:s}", "path", p, "line",
							(json_int_t)lineno, "text", vis));
		free(p);
	} else {
		char *l = xasprintf("%s:%llu: %s%s\n", path, (unsigned long long)lineno, vis,
				    n > shown ? " [...]" : "");
		size_t ln = strlen(l);
		if (q->len + ln + 1 > q->cap)
			q->text = xrealloc(q->text, q->cap = (q->len + ln + 1) * 2);
		memcpy(q->text + q->len, l, ln + 1);
		q->len += ln;
		free(l);
	}
	free(vis);
}

static void
search_file(struct search *q, const char *rel)
{
	struct wd_err err = {0};
	int fd = wd_workspace_openat(q->t->ws, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, &err);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SEARCH_FILE_MAX) {
		close(fd);
		return;
	}
	size_t n = 0;
	bool more = false;
	char *b = slurp(fd, SEARCH_FILE_MAX, &n, &more);
	close(fd);
	q->files++;
	if (!b || is_binary(b, n)) {
		free(b);
		return;
	}
	if (q->use_re) {
		uint32_t count = 0;
		uint64_t want = q->max - q->found + 1; /* one more: truncated */
		uint64_t *hits = matcher_lines(q, b, n, (uint32_t)want, &count);
		uint64_t lineno = 1;
		const char *p = b, *end = b + n;
		for (uint32_t i = 0; hits && i < count && !q->truncated; i++) {
			for (; lineno < hits[i] && p < end; lineno++) {
				const char *nl = memchr(p, '\n', (size_t)(end - p));
				p = nl ? nl + 1 : end;
			}
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			add_match(q, rel, lineno, p, (size_t)((nl ? nl : end) - p));
		}
		free(hits);
		free(b);
		return;
	}
	uint64_t lineno = 1;
	for (const char *p = b, *end = b + n; p < end && !q->truncated; lineno++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		if (line_matches(q, p, (size_t)(e - p)))
			add_match(q, rel, lineno, p, (size_t)(e - p));
		p = nl ? nl + 1 : end;
	}
	free(b);
}

static void
search_rec(struct search *q, const char *rel, int depth)
{
	struct wd_err err = {0};
	size_t n = 0;
	if (depth > 64)
		return;
	struct entry *v = read_dir(q->t->ws, rel, &n, &err);
	for (size_t i = 0; v && i < n && !q->truncated; i++) {
		if (q->files >= SEARCH_FILES || now_ns() > q->deadline || q->re_killed ||
		    call_cancelled(q->t->c)) {
			q->stopped = true;
			break;
		}
		const char *base = strrchr(v[i].path, '/');
		base = base ? base + 1 : v[i].path;
		if (q->ig && wd_ignore_match(q->ig, v[i].path, v[i].type == 'd'))
			continue;
		if (v[i].type == 'd' && strcmp(base, ".git"))
			search_rec(q, v[i].path, depth + 1);
		else if (v[i].type == 'f' && (!q->glob || fnmatch(q->glob, base, 0) == 0))
			search_file(q, v[i].path);
	}
	entries_free(v, n);
}

static json_t *
search_files(struct ftool *t)
{
	struct search q = {.t = t, .max = 100};
	const char *path = arg_str(t, "path");
	bool regex = false;
	q.pattern = arg_str(t, "pattern");
	q.glob = arg_str(t, "glob");
	if (!p_bool(t->args, "regex", &regex, t->e) ||
	    !p_bool(t->args, "ignore_case", &q.icase, t->e) ||
	    !p_uint(t->args, "max_results", 1000, &q.max, t->e))
		return NULL;
	if (!q.pattern || !q.pattern[0] || q.max == 0)
		return fail(t, EINVAL,
			    "pattern (not empty) and max_results (1 to 1000) are needed");
	q.plen = strlen(q.pattern);
	/* Back-references make glibc's matcher backtrack, exponentially on a
	 * crafted pattern and line, inside one regexec() that no deadline can
	 * interrupt: refused. */
	for (const char *b = regex ? strchr(q.pattern, '\\') : NULL; b && b[1];
	     b = strchr(b + 2, '\\'))
		if (b[1] >= '1' && b[1] <= '9')
			return fail(t, EINVAL, "back-references (\\%c) are not supported", b[1]);
	q.deadline = now_ns() + SEARCH_BUDGET_NS;
	if (regex) {
		char msg[300];
		if (matcher_start(&q, msg, sizeof(msg)) < 0) {
			matcher_stop(&q);
			return fail(t, EINVAL, "%s", msg);
		}
		q.use_re = true;
	}
	q.arr = t->model ? NULL : json_array();
	struct wd_err err = {0};
	const char *root = path ? path : ".";
	int fd = wd_workspace_openat(t->ws, root, O_PATH, &err);
	json_t *r = NULL;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = fail_wd(t, fd < 0 ? fd : -errno, &err);
	} else {
		/* what the project ignores (node_modules/, build output) is
		 * not searched, as git grep and ripgrep do not: the rules of
		 * the tree searched (a sandbox's view: its own, which can only
		 * hide files from the model itself).  A file named as the path
		 * is searched whatever the rules. */
		if (S_ISDIR(st.st_mode) && wd_workspace_ignore(t->ws, &q.ig, &err) < 0)
			q.ig = NULL;
		/* ... and a directory named as the path, though ignored, is
		 * searched: the caller asked for it (node_modules/react) */
		if (q.ig && strcmp(root, ".") && wd_ignore_match(q.ig, root, true)) {
			wd_ignore_free(q.ig);
			q.ig = NULL;
		}
		if (S_ISDIR(st.st_mode))
			search_rec(&q, root, 0);
		else
			search_file(&q, root);
		const char *why = q.stopped ? q.re_killed
						  ? "the search stopped early: the regular "
						    "expression ran out of its time (10 s) or "
						    "memory budget; simplify it, or narrow the "
						    "search with path or glob"
						  : "the search stopped early (time or file "
						    "budget); narrow it with path or glob"
					    : NULL;
		if (!t->model) {
			r = json_pack("{s:o, s:b, s:I}", "matches", q.arr, "truncated",
				      q.truncated || q.stopped, "files_searched",
				      (json_int_t)q.files);
			q.arr = NULL;
		} else {
			char *text = xasprintf("%s%s%s%s", q.text ? q.text : "no matches\n",
					       q.truncated ? "[... more matches: narrow the "
							     "search, or raise max_results ...]\n"
							   : "",
					       why ? why : "", why ? "\n" : "");
			r = mcp_tool_result(t->s, text, NULL, false);
			free(text);
		}
	}
	if (fd >= 0)
		close(fd);
	matcher_stop(&q);
	wd_ignore_free(q.ig);
	json_decref(q.arr);
	free(q.text);
	return r;
}

/* ---- entry points ---- */

json_t *
file_tool(struct call *c, wd_workspace *ws, const char *tool, json_t *args, bool for_model,
	  struct rpc_err *e)
{
	struct ftool t = {c, c->srv, ws, for_model, args, e};
	if (!for_model) {
		/* the harness's params are not schema-checked: the types here */
		const char *path = NULL;
		bool need_path = strcmp(tool, "list_dir") && strcmp(tool, "search_files");
		if (!p_str(args, "path", need_path, &path, e))
			return NULL;
		if (!strcmp(tool, "search_files") && !p_str(args, "pattern", true, &path, e))
			return NULL;
		if ((!strcmp(tool, "write_file") && !p_str(args, "content", true, &path, e)) ||
		    (!strcmp(tool, "edit_file") && (!p_str(args, "old_string", true, &path, e) ||
						    !p_str(args, "new_string", true, &path, e))))
			return NULL;
		if (!strcmp(tool, "search_files") && !p_str(args, "glob", false, &path, e))
			return NULL;
	}
	if (!strcmp(tool, "read_file"))
		return read_file(&t);
	if (!strcmp(tool, "write_file"))
		return write_file(&t);
	if (!strcmp(tool, "edit_file"))
		return edit_file(&t);
	if (!strcmp(tool, "list_dir"))
		return list_dir(&t);
	if (!strcmp(tool, "search_files"))
		return search_files(&t);
	rpc_err_set(e, RPC_INVALID_PARAMS, "Unknown tool: '%.100s'", tool);
	return NULL;
}
