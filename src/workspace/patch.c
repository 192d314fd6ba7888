/* workspace/patch: the change set as people and programs read it.
 *
 * The text diff comes from libgit2's buffer patches (git_patch_from_buffers):
 * Debian's libgit2 is git's own diff machinery as a library (Myers diff,
 * binary detection on NUL bytes as git does, "\ No newline at end of
 * file"), so the hunks are what `git diff` shows and `git apply` takes.
 * warden writes the headers itself, because a buffer patch knows no file
 * modes: "new file mode 100755", "old mode"/"new mode", symbolic links as
 * mode 120000 with their target as content, renames as git's "rename
 * from/to".  Files over 8 MiB are named, not diffed.
 *
 *   (default)   one line per change (status, path, notes), then the diffs
 *   --stat      git's: " path | N +++--" and the totals
 *   --json      {"files": [{path, status, type, modes, sizes, SHA-256s,
 *               binary, insertions, deletions, conflict, protected}], ...} */
#include "workspace/workspace.h"
#include "util/escape.h"
#include "util/json.h"

#include <fcntl.h>
#include <dlfcn.h>
#include <limits.h>
#include <git2.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>

#define DIFF_MAX (8u << 20)
/* A hunk line is shown whole, however long (0: no cap).  A cut with
 * "... (N more bytes)" once hid what followed 4,000 spaces on a comment
 * line ("; curl ... | sh"), and apply wrote it: what a human reviews is
 * every byte apply writes (docs/threat-model.md, boundary 5). */
#define HUNK_LINE_MAX 0u

/* libgit2 is loaded on the first diff (dlopen of Debian's libgit2-1.5),
 * not linked: warden's start is on every command's path, and a shared
 * libgit2 brings its own dependencies (mbedTLS, libssh2, PCRE2, zlib) to
 * every start for the few commands that diff. */
static struct {
	int (*init)(void);
	int (*from_buffers)(git_patch **, const void *, size_t, const char *, const void *, size_t,
			    const char *, const git_diff_options *);
	int (*to_buf)(git_buf *, git_patch *);
	int (*line_stats)(size_t *, size_t *, size_t *, const git_patch *);
	const git_diff_delta *(*get_delta)(const git_patch *);
	void (*patch_free)(git_patch *);
	void (*buf_dispose)(git_buf *);
	bool ok;
	char why[160];
} lg;
static pthread_once_t git_once = PTHREAD_ONCE_INIT;

static void
git_load(void)
{
	static const char *const names[] = {"libgit2.so.1.5", "libgit2.so", NULL};
	void *h = NULL;
	for (size_t i = 0; names[i] && !h; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(lg.why, sizeof(lg.why),
			 "libgit2 (Debian's libgit2-1.5) cannot be loaded: %s", dlerror());
		return;
	}
#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&lg.field = dlsym(h, name);                                              \
		if (!lg.field) {                                                                   \
			snprintf(lg.why, sizeof(lg.why), "libgit2 lacks %s", name);                \
			return;                                                                    \
		}                                                                                  \
	} while (0)
	SYM(init, "git_libgit2_init");
	SYM(from_buffers, "git_patch_from_buffers");
	SYM(to_buf, "git_patch_to_buf");
	SYM(line_stats, "git_patch_line_stats");
	SYM(get_delta, "git_patch_get_delta");
	SYM(patch_free, "git_patch_free");
	SYM(buf_dispose, "git_buf_dispose");
#undef SYM
	lg.init();
	lg.ok = true;
}

static const char *
status_name(const struct ws_change *c)
{
	static const char *const n[] = {"added", "modified", "deleted", "renamed", "mode"};
	return n[c->status];
}

static const char *
type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISLNK(m) ? "symlink" : S_ISDIR(m) ? "directory" : "other";
}

static mode_t
cur_mode(const struct ws_change *c)
{
	return c->new_mode ? c->new_mode : c->old_mode;
}

/* git's mode word: 100644, 100755, 120000, 040000 */
static unsigned
git_mode(mode_t m)
{
	if (S_ISLNK(m))
		return 0120000;
	if (S_ISDIR(m))
		return 040000;
	return (m & 0111) ? 0100755 : 0100644;
}

/* Read up to DIFF_MAX bytes of a side: the upper layer's or the host's
 * file, or a link's target.  *len = (size_t)-1 when too large. */
static char *
read_side(struct ws *w, bool upper, const char *path, mode_t mode, size_t *len)
{
	*len = 0;
	/* O_NONBLOCK, and a regular file checked after the open: the sandbox
	 * may swap a FIFO in, whose open would wait for a writer (docs/threat-model.md) */
	int fd = ws_open_beneath(upper ? w->upper : w->wsfd, path,
				 S_ISLNK(mode) ? O_PATH : O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	char *buf = NULL;
	if (S_ISLNK(mode)) {
		buf = wd_xmalloc(4097);
		ssize_t n = readlinkat(fd, "", buf, 4096);
		*len = n > 0 ? (size_t)n : 0;
		buf[*len] = '\0'; /* readlinkat does not end it; the summary prints it */
		close(fd);
		return buf;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > DIFF_MAX) {
		*len = (size_t)-1;
		close(fd);
		return NULL;
	}
	buf = wd_xmalloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	buf[got] = '\0';
	return buf;
}

struct file_diff {
	git_patch *patch; /* NULL: no text diff (directory, other, too large) */
	char *ob, *nb;	  /* its buffers: a buffer patch points into them */
	bool binary, large;
	size_t adds, dels;
};

static void
diff_free(struct file_diff *d)
{
	if (d->patch && lg.ok)
		lg.patch_free(d->patch);
	free(d->ob);
	free(d->nb);
	d->patch = NULL;
	d->ob = d->nb = NULL;
}

static void
make_diff(struct ws *w, const struct ws_change *c, struct file_diff *fd)
{
	memset(fd, 0, sizeof(*fd));
	mode_t m = cur_mode(c);
	if (c->unsupported || S_ISDIR(m) || (c->status == WS_MODE) || c->link_to ||
	    (c->status == WS_RENAMED && !strcmp(c->old_hash, c->new_hash)))
		return;
	size_t ol = 0, nl = 0;
	char *ob = NULL, *nb = NULL;
	if (c->old_mode && !S_ISDIR(c->old_mode))
		ob = read_side(w, false, c->old_path ? c->old_path : c->path, c->old_mode, &ol);
	if (c->new_mode && !S_ISDIR(c->new_mode))
		nb = read_side(w, true, c->path, c->new_mode, &nl);
	if (ol == (size_t)-1 || nl == (size_t)-1) {
		fd->large = true;
		free(ob);
		free(nb);
		return;
	}
	pthread_once(&git_once, git_load);
	fd->ob = ob;
	fd->nb = nb;
	if (!lg.ok ||
	    lg.from_buffers(&fd->patch, ob, ob ? ol : 0, c->old_path ? c->old_path : c->path, nb,
			    nb ? nl : 0, c->path, NULL) < 0)
		fd->patch = NULL;
	if (!fd->patch)
		return;
	const git_diff_delta *d = lg.get_delta(fd->patch);
	fd->binary = d && (d->flags & GIT_DIFF_FLAG_BINARY);
	size_t ctx;
	lg.line_stats(&ctx, &fd->adds, &fd->dels, fd->patch);
}

/* prefix and path as git names a side ("a/x", or "\"a/x\\ny\"" quoted
 * when the name needs it): a name is the sandbox's choice, and a newline
 * in it would forge a header or a line of the summary. */
static void
put_name(FILE *f, const char *prefix, const char *path)
{
	wd_autofree char *full = wd_xasprintf("%s%s", prefix, path);
	wd_esc_path_put(f, full);
}

/* libgit2's body (from "---" or "Binary files" on): its headers rewritten
 * with the names quoted (libgit2 prints them raw), every other line made
 * visible: the lines are the sandbox's bytes, and a CR, ESC[2K or an OSC
 * in one would hide or recolour what the human reviews (docs/threat-model.md). */
static void
write_body(const struct ws_change *c, const char *p, size_t n, FILE *f)
{
	const char *op = c->old_path ? c->old_path : c->path, *end = p + n;
	bool hunks = false;
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t l = e ? (size_t)(e - p) : (size_t)(end - p);
		if (!hunks && l >= 2 && !strncmp(p, "@@", 2))
			hunks = true;
		if (!hunks && l >= 4 && (!strncmp(p, "--- ", 4) || !strncmp(p, "+++ ", 4))) {
			bool old = p[0] == '-';
			fwrite(p, 1, 4, f);
			if (l == 13 && !strncmp(p + 4, "/dev/null", 9))
				fputs("/dev/null", f);
			else
				put_name(f, old ? "a/" : "b/", old ? op : c->path);
		} else if (!hunks && l >= 12 && !strncmp(p, "Binary files", 12)) {
			fputs("Binary files ", f);
			if (l >= 22 && !strncmp(p, "Binary files /dev/null", 22))
				fputs("/dev/null", f);
			else
				put_name(f, "a/", op);
			fputs(" and ", f);
			if (l >= 20 && !strncmp(p + l - 20, " and /dev/null differ", 20))
				fputs("/dev/null", f);
			else
				put_name(f, "b/", c->path);
			fputs(" differ", f);
		} else {
			wd_esc_text_put(f, p, l, 0, HUNK_LINE_MAX);
		}
		if (e)
			fputc('\n', f);
		p = e ? e + 1 : end;
	}
}

/* git's header for the change, then the body of libgit2's patch (from
 * its "---" or "Binary files" line on), keeping its blob ids. */
static void
write_patch(const struct ws_change *c, struct file_diff *fd, FILE *f)
{
	const char *op = c->old_path ? c->old_path : c->path;
	git_buf b = {0};
	if (fd->patch && lg.to_buf(&b, fd->patch) < 0)
		b.size = 0;
	const char *body = NULL, *ids = NULL;
	size_t idn = 0;
	for (const char *l = b.ptr; l && l < b.ptr + b.size;) {
		const char *e = memchr(l, '\n', (size_t)(b.ptr + b.size - l));
		size_t n = e ? (size_t)(e - l) : (size_t)(b.ptr + b.size - l);
		if (n > 6 && !strncmp(l, "index ", 6)) {
			ids = l + 6;
			idn = strcspn(ids, " \n");
		}
		if (!strncmp(l, "--- ", 4) || !strncmp(l, "Binary files", 12)) {
			body = l;
			break;
		}
		l = e ? e + 1 : b.ptr + b.size;
	}
	fputs("diff --git ", f);
	put_name(f, "a/", op);
	fputc(' ', f);
	put_name(f, "b/", c->path);
	fputc('\n', f);
	if (c->status == WS_ADDED)
		fprintf(f, "new file mode %06o\n", git_mode(c->new_mode));
	else if (c->status == WS_DELETED)
		fprintf(f, "deleted file mode %06o\n", git_mode(c->old_mode));
	else if (git_mode(c->old_mode) != git_mode(c->new_mode))
		fprintf(f, "old mode %06o\nnew mode %06o\n", git_mode(c->old_mode),
			git_mode(c->new_mode));
	if (c->status == WS_RENAMED) {
		fprintf(f, "similarity index %d%%\nrename from ",
			strcmp(c->old_hash, c->new_hash) ? 50 : 100);
		wd_esc_path_put(f, op);
		fputs("\nrename to ", f);
		wd_esc_path_put(f, c->path);
		fputc('\n', f);
	}
	if (ids && body) {
		bool same = git_mode(c->old_mode) == git_mode(c->new_mode) &&
			    c->status != WS_ADDED && c->status != WS_DELETED;
		fprintf(f, "index %.*s", (int)idn, ids);
		if (same)
			fprintf(f, " %06o", git_mode(c->new_mode));
		fputc('\n', f);
		write_body(c, body, (size_t)(b.ptr + b.size - body), f);
	} else if (fd->large) {
		fprintf(f, "Large file (over %u bytes) ", DIFF_MAX);
		put_name(f, "a/", op);
		fputs(" and ", f);
		put_name(f, "b/", c->path);
		fputs(" differ\n", f);
	}
	if (fd->patch)
		lg.buf_dispose(&b);
}

static void
notes(const struct ws_change *c, FILE *f)
{
	if (c->conflict)
		fputs("  (conflict: changed on the host since the sandbox first saw it)", f);
	if (c->protect)
		fputs("  (protected: never applied)", f);
	if (c->unsupported)
		fputs("  (not a file, link or directory: never applied)", f);
	if (c->ignored)
		fputs("  (ignored: applied only with --all)", f);
	if (c->link_to) {
		/* the other name is the sandbox's too: quoted as every name is */
		fputs("  (hard link to ", f);
		wd_esc_path_put(f, c->link_to);
		fputs(": same content, shown once)", f);
	}
}

/* Every permission change in octal: git's "old mode 100644 / new mode
 * 100755" only tells the execute bit, so a content change hid a chmod
 * 0777, and a new directory's mode was never shown (docs/threat-model.md). */
void
ws_change_mode_note(const struct ws_change *c, FILE *f)
{
	if (c->status == WS_ADDED && S_ISDIR(c->new_mode))
		fprintf(f, " (new directory %04o)", (unsigned)(c->new_mode & 07777));
	else if (c->status == WS_ADDED && S_ISREG(c->new_mode))
		fprintf(f, " (new file %04o)", (unsigned)(c->new_mode & 07777));
	else if ((c->status == WS_MODIFIED || c->status == WS_RENAMED || c->status == WS_MODE) &&
		 c->old_mode && c->new_mode && !S_ISLNK(c->old_mode) && !S_ISLNK(c->new_mode) &&
		 (c->old_mode & 07777) != (c->new_mode & 07777))
		fprintf(f, " (mode %04o -> %04o)", (unsigned)(c->old_mode & 07777),
			(unsigned)(c->new_mode & 07777));
}

static void
summary_line(struct ws *w, const struct ws_change *c, FILE *f)
{
	const char *slash = S_ISDIR(cur_mode(c)) ? "/" : "";
	fprintf(f, "%-9s ", status_name(c));
	if (c->status == WS_RENAMED) {
		wd_esc_path_put(f, c->old_path);
		fputs(" -> ", f);
	}
	wd_esc_path_put(f, c->path);
	fputs(slash, f);
	if (c->status == WS_MODE)
		fprintf(f, " %04o -> %04o", (unsigned)(c->old_mode & 07777),
			(unsigned)(c->new_mode & 07777));
	else if (S_ISLNK(cur_mode(c))) {
		/* where the link points, on the line itself: --name-status
		 * shows no hunk, and a link out of the project is what a
		 * human must see before applying it (quoted as a name) */
		size_t len = 0;
		char *t =
		    c->status == WS_DELETED ? NULL : read_side(w, true, c->path, cur_mode(c), &len);
		if (t && len != (size_t)-1) {
			fputs(" (symlink -> ", f);
			wd_esc_path_put(f, t);
			fputc(')', f);
		} else {
			fputs(" (symlink)", f);
		}
		free(t);
	}
	if (c->status != WS_MODE)
		ws_change_mode_note(c, f);
	notes(c, f);
	fputc('\n', f);
}

/* 1204 -> "1,204" */
static void
put_count(FILE *f, uint64_t n)
{
	char d[32];
	int len = snprintf(d, sizeof(d), "%llu", (unsigned long long)n);
	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			fputc(',', f);
		fputc(d[i], f);
	}
}

/* 14680064 -> "14 MiB", 1536 -> "1.5 KiB", 10 -> "10 bytes" */
static void
put_bytes(FILE *f, uint64_t n)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	if (n < 1024) {
		fprintf(f, "%llu byte%s", (unsigned long long)n, n == 1 ? "" : "s");
		return;
	}
	double v = (double)n / 1024;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(*units)) {
		v /= 1024;
		u++;
	}
	fprintf(f, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* What the host's ignore rules left out: a line per top-level entry.
 * The name is the sandbox's: quoted as every name is. */
void
ws_ignored_write(const struct ws_changes *cs, const char *tail, FILE *f)
{
	size_t width = 0;
	for (size_t i = 0; i < cs->nig; i++) {
		size_t l = strlen(cs->ig[i].name);
		width = l > width ? l : width;
	}
	if (width > 40)
		width = 40;
	for (size_t i = 0; i < cs->nig; i++) {
		const struct ws_ignored *g = &cs->ig[i];
		size_t nl = strlen(g->name);
		bool dir = nl && g->name[nl - 1] == '/';
		wd_autofree char *base = wd_xasprintf("%.*s", (int)(nl - dir), g->name);
		wd_autofree char *q = wd_esc_path(base);
		wd_autofree char *name = wd_xasprintf("%s%s", q, dir ? "/" : "");
		fprintf(f, "%-*s  ", (int)width, name);
		put_count(f, g->files);
		fprintf(f, " file%s, ", g->files == 1 ? "" : "s");
		put_bytes(f, g->bytes);
		fprintf(f, ", %s\n", tail);
	}
}

static void
write_stat(struct ws *w, const struct ws_changes *cs, FILE *f)
{
	size_t width = 0, files = 0, adds = 0, dels = 0, maxn = 0;
	struct file_diff *fds = wd_xcalloc(cs->n + 1, sizeof(*fds));
	for (size_t i = 0; i < cs->n; i++) {
		const struct ws_change *c = &cs->c[i];
		if (S_ISDIR(cur_mode(c)))
			continue;
		make_diff(w, c, &fds[i]);
		size_t l = strlen(c->path) + (c->old_path ? strlen(c->old_path) + 4 : 0);
		width = l > width ? l : width;
		if (fds[i].adds + fds[i].dels > maxn)
			maxn = fds[i].adds + fds[i].dels;
	}
	if (width > 60)
		width = 60;
	for (size_t i = 0; i < cs->n; i++) {
		const struct ws_change *c = &cs->c[i];
		if (S_ISDIR(cur_mode(c)))
			continue;
		files++;
		/* quoted as the summary's names are */
		wd_autofree char *np = wd_esc_path(c->path);
		wd_autofree char *op = c->old_path ? wd_esc_path(c->old_path) : NULL;
		wd_autofree char *name = op ? wd_xasprintf("%s => %s", op, np) : wd_steal_ptr(&np);
		fprintf(f, " %-*s | ", (int)width, name);
		struct file_diff *d = &fds[i];
		if (d->binary || d->large) {
			fprintf(f, "Bin %llu -> %llu bytes\n", (unsigned long long)c->old_size,
				(unsigned long long)c->new_size);
		} else {
			size_t n = d->adds + d->dels, bar = 40;
			size_t pa = maxn > bar ? d->adds * bar / maxn : d->adds;
			size_t pd = maxn > bar ? d->dels * bar / maxn : d->dels;
			if (d->adds && !pa)
				pa = 1;
			if (d->dels && !pd)
				pd = 1;
			fprintf(f, "%zu ", n);
			for (size_t k = 0; k < pa; k++)
				fputc('+', f);
			for (size_t k = 0; k < pd; k++)
				fputc('-', f);
			fputc('\n', f);
		}
		adds += d->adds;
		dels += d->dels;
		diff_free(d);
	}
	/* nothing changed: nothing at all, as git's --stat */
	if (files)
		fprintf(f, " %zu file%s changed, %zu insertion%s(+), %zu deletion%s(-)\n", files,
			files == 1 ? "" : "s", adds, adds == 1 ? "" : "s", dels,
			dels == 1 ? "" : "s");
	ws_ignored_write(cs, "ignored (warden diff --all lists them)", f);
	free(fds);
}

static void
write_json(struct ws *w, const struct ws_changes *cs, FILE *f)
{
	struct jw j;
	jw_init(&j, 0);
	jw_obj_begin(&j);
	jw_kstr(&j, "workspace", w->workspace);
	jw_key(&j, "files");
	jw_arr_begin(&j);
	size_t adds = 0, dels = 0, conflicts = 0;
	for (size_t i = 0; i < cs->n; i++) {
		const struct ws_change *c = &cs->c[i];
		struct file_diff d;
		make_diff(w, c, &d);
		char mode[8];
		jw_obj_begin(&j);
		jw_kstr(&j, "path", c->path);
		if (c->old_path)
			jw_kstr(&j, "old_path", c->old_path);
		jw_kstr(&j, "status", status_name(c));
		jw_kstr(&j, "type", type_name(cur_mode(c)));
		if (c->old_mode) {
			snprintf(mode, sizeof(mode), "%06o", (unsigned)c->old_mode);
			jw_kstr(&j, "old_mode", mode);
			jw_kuint(&j, "old_size", c->old_size);
			if (c->old_hash[0])
				jw_kstr(&j, "old_sha256", c->old_hash);
		}
		if (c->new_mode) {
			snprintf(mode, sizeof(mode), "%06o", (unsigned)c->new_mode);
			jw_kstr(&j, "new_mode", mode);
			jw_kuint(&j, "new_size", c->new_size);
			if (c->new_hash[0])
				jw_kstr(&j, "new_sha256", c->new_hash);
		}
		jw_kbool(&j, "binary", d.binary);
		if (d.patch) {
			jw_kuint(&j, "insertions", d.adds);
			jw_kuint(&j, "deletions", d.dels);
		}
		jw_kbool(&j, "conflict", c->conflict);
		jw_kbool(&j, "protected", c->protect);
		if (c->unsupported)
			jw_kbool(&j, "unsupported", true);
		if (c->link_to)
			jw_kstr(&j, "link_to", c->link_to);
		if (cs->all)
			jw_kbool(&j, "ignored", c->ignored);
		jw_obj_end(&j);
		adds += d.adds;
		dels += d.dels;
		conflicts += c->conflict;
		diff_free(&d);
	}
	jw_arr_end(&j);
	jw_kuint(&j, "changes", cs->n);
	jw_kuint(&j, "insertions", adds);
	jw_kuint(&j, "deletions", dels);
	jw_kuint(&j, "conflicts", conflicts);
	jw_kuint(&j, "bytes", cs->bytes);
	/* what the host's ignore rules left out (none with --all, where each
	 * file says "ignored") */
	jw_kbool(&j, "all", cs->all);
	jw_key(&j, "ignored");
	jw_arr_begin(&j);
	for (size_t i = 0; i < cs->nig; i++) {
		jw_obj_begin(&j);
		jw_kstr(&j, "path", cs->ig[i].name);
		jw_kuint(&j, "files", cs->ig[i].files);
		jw_kuint(&j, "bytes", cs->ig[i].bytes);
		jw_obj_end(&j);
	}
	jw_arr_end(&j);
	/* what `warden apply --expect` takes: the set as reviewed */
	jw_kstr(&j, "digest", cs->digest);
	jw_obj_end(&j);
	char *s = jw_steal(&j);
	fputs(s, f);
	fputc('\n', f);
	free(s);
}

int
ws_diff_write(struct ws *w, const struct ws_changes *cs, unsigned flags, FILE *f,
	      struct wd_err *err)
{
	pthread_once(&git_once, git_load);
	if (!lg.ok && !(flags & WS_DIFF_NAMES))
		return wd_err_set(err, WD_E_UNSUPPORTED, "%s", lg.why);
	if (flags & WS_DIFF_JSON) {
		write_json(w, cs, f);
	} else if (flags & WS_DIFF_STAT) {
		write_stat(w, cs, f);
	} else {
		/* the header names the set: `warden apply --expect DIGEST` then
		 * applies exactly what is shown below, or nothing */
		if ((cs->n || cs->nig) && !(flags & WS_DIFF_NAMES))
			fprintf(f, "change set %s\n", cs->digest);
		for (size_t i = 0; i < cs->n; i++)
			summary_line(w, &cs->c[i], f);
		ws_ignored_write(cs, "ignored (warden diff --all lists them)", f);
		if (!(flags & WS_DIFF_NAMES)) {
			bool first = true;
			for (size_t i = 0; i < cs->n; i++) {
				struct file_diff d;
				const struct ws_change *c = &cs->c[i];
				/* a hard link's content is its first path's */
				if (S_ISDIR(cur_mode(c)) || c->unsupported || c->link_to)
					continue;
				make_diff(w, c, &d);
				if (first)
					fputc('\n', f); /* between the list and the diffs */
				first = false;
				write_patch(c, &d, f);
				diff_free(&d);
			}
		}
	}
	if (fflush(f) != 0)
		return wd_err_sys(err, errno, "write the diff");
	return 0;
}
