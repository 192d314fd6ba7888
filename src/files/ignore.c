/* files/ignore: git's ignore rules, read from one directory tree.
 *
 * What `git check-ignore --no-index` answers, by warden's own matcher: no
 * git is run on the host (git reads configuration, and configuration can
 * run programs: core.fsmonitor, a filter).  The rules are git's
 * (gitignore(5)): a .gitignore in every directory, its patterns relative
 * to that directory; .git/info/exclude relative to the root; '#' comments,
 * '\' escapes, trailing spaces trimmed unless escaped, '!' negation, a
 * trailing '/' for directories only, a '/' anywhere else anchoring the
 * pattern, '*' '?' '[...]' never matching '/', '**' as git defines it.
 * Deeper files override shallower ones, a later line an earlier one, and
 * a path under an excluded directory is excluded whatever a deeper
 * pattern says (git does not read below an excluded directory).  The
 * matching function follows git's wildmatch.c case by case, so that the
 * two agree on every pattern; tests/integration/ignore_git.py compares them
 * on a generated corpus.
 *
 * Which tree the rules are read from is the caller's decision: for a
 * review, the host's (changes.c says why). */
#include "files/files.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A .gitignore larger than this is read to this size (git's own limit is
 * 100 MB); the host's files, not the model's, but a bound all the same. */
#define IGNORE_FILE_MAX (4u << 20)

enum { PAT_NEG = 1, PAT_DIR = 2, PAT_NODIR = 4 };

struct pat {
	char *p;
	unsigned flags;
};

struct plist {
	struct pat *v;
	size_t n, cap;
	char *base; /* the directory of the file, relative ("" the root) */
};

struct dnode {
	char *path; /* relative, "" for the root */
	struct plist rules;
	int excluded; /* -1 not known yet */
	bool loaded;  /* rules read */
	struct dnode *next;
};

#define NBUCKETS 1024u

struct ws_ignore {
	int root;
	struct plist info; /* .git/info/exclude */
	struct dnode *b[NBUCKETS];
};

/* ---- wildmatch: git's wildmatch.c with WM_PATHNAME, case-sensitive ---- */

enum { WM_MATCH = 0, WM_NOMATCH = 1, WM_ABORT_ALL = -1, WM_ABORT_TO_STARSTAR = -2 };

static bool
glob_special(unsigned char c)
{
	return c == '*' || c == '?' || c == '[' || c == '\\';
}

static bool
cc_is(const unsigned char *s, size_t n, const char *name)
{
	return strlen(name) == n && !memcmp(s, name, n);
}

/* [:class:] of s (n bytes) against t: 1, 0, or -1 for an unknown class */
static int
cclass(const unsigned char *s, size_t n, unsigned char t)
{
	if (cc_is(s, n, "alnum"))
		return isalnum(t) != 0;
	if (cc_is(s, n, "alpha"))
		return isalpha(t) != 0;
	if (cc_is(s, n, "blank"))
		return t == ' ' || t == '\t';
	if (cc_is(s, n, "cntrl"))
		return iscntrl(t) != 0;
	if (cc_is(s, n, "digit"))
		return isdigit(t) != 0;
	if (cc_is(s, n, "graph"))
		return isgraph(t) != 0;
	if (cc_is(s, n, "lower"))
		return islower(t) != 0;
	if (cc_is(s, n, "print"))
		return isprint(t) != 0;
	if (cc_is(s, n, "punct"))
		return ispunct(t) != 0;
	if (cc_is(s, n, "space"))
		return isspace(t) != 0;
	if (cc_is(s, n, "upper"))
		return isupper(t) != 0;
	if (cc_is(s, n, "xdigit"))
		return isxdigit(t) != 0;
	return -1;
}

/* Bounded: a '*' that fails at a '/' gives up its whole search
 * (WM_ABORT_TO_STARSTAR), and one that runs out of text gives up every
 * enclosing one (WM_ABORT_ALL), as git's does.  The patterns are the
 * host's; the names may be the model's. */
static int
wild(const unsigned char *p, const unsigned char *text, const unsigned char *pstart)
{
	unsigned char pc, tc;
	for (; (pc = *p) != '\0'; text++, p++) {
		if ((tc = *text) == '\0' && pc != '*')
			return WM_ABORT_ALL;
		switch (pc) {
		case '\\':
			pc = *++p;
			if (tc != pc)
				return WM_NOMATCH;
			continue;
		default:
			if (tc != pc)
				return WM_NOMATCH;
			continue;
		case '?':
			if (tc == '/')
				return WM_NOMATCH;
			continue;
		case '*': {
			bool slash = false;
			if (*++p == '*') {
				const unsigned char *prev = p - 2;
				while (*++p == '*')
					;
				if ((prev < pstart || *prev == '/') &&
				    (*p == '\0' || *p == '/' || (p[0] == '\\' && p[1] == '/'))) {
					/* "**" as a whole component: zero directories first */
					if (p[0] == '/' && wild(p + 1, text, pstart) == WM_MATCH)
						return WM_MATCH;
					slash = true;
				}
			}
			if (*p == '\0')
				return !slash && strchr((const char *)text, '/') ? WM_NOMATCH
										 : WM_MATCH;
			if (!slash && *p == '/') {
				/* one '*' then '/': the rest of this component */
				const char *s = strchr((const char *)text, '/');
				if (!s)
					return WM_NOMATCH;
				text = (const unsigned char *)s;
				break; /* the loop steps over both slashes */
			}
			for (;;) {
				if (tc == '\0')
					break;
				if (!glob_special(*p)) {
					/* skip to the next place the literal after '*' occurs */
					pc = *p;
					while ((tc = *text) != '\0' && (slash || tc != '/')) {
						if (tc == pc)
							break;
						text++;
					}
					if (tc != pc)
						return WM_NOMATCH;
				}
				int m = wild(p, text, pstart);
				if (m != WM_NOMATCH) {
					if (!slash || m != WM_ABORT_TO_STARSTAR)
						return m;
				} else if (!slash && tc == '/') {
					return WM_ABORT_TO_STARSTAR;
				}
				tc = *++text;
			}
			return WM_ABORT_ALL;
		}
		case '[': {
			pc = *++p;
			if (pc == '^')
				pc = '!';
			bool neg = pc == '!', matched = false;
			if (neg)
				pc = *++p;
			unsigned char prev = 0;
			do {
				if (!pc)
					return WM_ABORT_ALL;
				if (pc == '\\') {
					pc = *++p;
					if (!pc)
						return WM_ABORT_ALL;
					if (tc == pc)
						matched = true;
				} else if (pc == '-' && prev && p[1] && p[1] != ']') {
					pc = *++p;
					if (pc == '\\') {
						pc = *++p;
						if (!pc)
							return WM_ABORT_ALL;
					}
					if (tc <= pc && tc >= prev)
						matched = true;
					pc = 0; /* no range from the end of this one */
				} else if (pc == '[' && p[1] == ':') {
					const unsigned char *s = p += 2;
					while ((pc = *p) && pc != ']')
						p++;
					if (!pc)
						return WM_ABORT_ALL;
					if (p - s - 1 < 0 || p[-1] != ':') {
						/* no ":]": a plain '[' in the set */
						p = s - 2;
						pc = '[';
						if (tc == pc)
							matched = true;
						continue;
					}
					int r = cclass(s, (size_t)(p - s - 1), tc);
					if (r < 0)
						return WM_ABORT_ALL;
					if (r)
						matched = true;
					pc = 0;
				} else if (tc == pc) {
					matched = true;
				}
			} while (prev = pc, (pc = *++p) != ']');
			if (matched == neg || tc == '/')
				return WM_NOMATCH;
			continue;
		}
		}
	}
	return *text ? WM_NOMATCH : WM_MATCH;
}

static bool
wildmatch(const char *pat, const char *text)
{
	return wild((const unsigned char *)pat, (const unsigned char *)text,
		    (const unsigned char *)pat) == WM_MATCH;
}

/* ---- parsing ---- */

/* git's trim_trailing_spaces: spaces at the end go, unless escaped */
static void
trim_spaces(char *s)
{
	char *last = NULL;
	for (char *p = s; *p; p++) {
		if (*p == ' ') {
			if (!last)
				last = p;
			continue;
		}
		if (*p == '\\' && !*++p)
			return;
		last = NULL;
	}
	if (last)
		*last = '\0';
}

static void
add_line(struct plist *l, char *line)
{
	if (!line[0] || line[0] == '#')
		return;
	trim_spaces(line);
	unsigned flags = 0;
	if (line[0] == '!') {
		flags |= PAT_NEG;
		line++;
	}
	size_t n = strlen(line);
	if (n && line[n - 1] == '/') {
		flags |= PAT_DIR;
		line[--n] = '\0';
	}
	if (!n)
		return;
	if (!memchr(line, '/', n))
		flags |= PAT_NODIR;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = wd_xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct pat){wd_xstrdup(line), flags};
}

/* The file path (beneath root, no link followed) into l; missing, not a
 * regular file or unreadable: no rules. */
static void
load(int root, const char *path, struct plist *l)
{
	int fd = ws_open_beneath(root, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	char *buf = wd_xcalloc(1, IGNORE_FILE_MAX + 1);
	size_t len = 0;
	ssize_t r;
	while (len < IGNORE_FILE_MAX && (r = read(fd, buf + len, IGNORE_FILE_MAX - len)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	char *s = buf;
	if (len >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
		s += 3; /* git skips a UTF-8 byte order mark */
	while (s < buf + len) {
		char *nl = memchr(s, '\n', (size_t)(buf + len - s));
		char *end = nl ? nl : buf + len;
		if (nl && end > s && end[-1] == '\r')
			end--; /* git drops the CR of a CRLF line */
		*end = '\0';
		if (memchr(s, '\0', (size_t)(end - s)) == NULL)
			add_line(l, s);
		if (!nl)
			break;
		s = nl + 1;
	}
	free(buf);
}

static void
plist_fini(struct plist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].p);
	free(l->v);
	free(l->base);
}

/* ---- matching ---- */

static char *
xstrndup(const char *s, size_t n)
{
	char *d = wd_xcalloc(1, n + 1);
	memcpy(d, s, n);
	return d;
}

static unsigned
hash(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % NBUCKETS;
}

static struct dnode *
dir_node(struct ws_ignore *ig, const char *dir)
{
	unsigned h = hash(dir);
	for (struct dnode *d = ig->b[h]; d; d = d->next)
		if (!strcmp(d->path, dir))
			return d;
	struct dnode *d = wd_xcalloc(1, sizeof(*d));
	d->path = wd_xstrdup(dir);
	d->rules.base = wd_xstrdup(dir);
	d->excluded = -1;
	d->next = ig->b[h];
	ig->b[h] = d;
	return d;
}

/* The last pattern of l that matches path (relative to the root; base
 * its last component), or NULL. */
static const struct pat *
last_match(const struct plist *l, const char *path, const char *base, bool isdir)
{
	size_t bl = strlen(l->base);
	for (size_t i = l->n; i-- > 0;) {
		const struct pat *p = &l->v[i];
		if ((p->flags & PAT_DIR) && !isdir)
			continue;
		if (p->flags & PAT_NODIR) {
			if (wildmatch(p->p, base))
				return p;
			continue;
		}
		/* relative to the file's directory; a leading '/' only anchors */
		const char *name = path;
		if (bl) {
			if (strncmp(path, l->base, bl) || path[bl] != '/')
				continue;
			name = path + bl + 1;
		}
		/* git compares the pattern's literal start as a prefix first and
		 * matches only the rest, so that a '**' right after it counts as
		 * at the pattern's start (a, two stars, a slash, two stars ignores "abc", in
		 * git 2.39 as in later ones): the same here */
		const char *pat = p->p[0] == '/' ? p->p + 1 : p->p;
		size_t lit = 0;
		while (pat[lit] && !glob_special((unsigned char)pat[lit]))
			lit++;
		if (strncmp(pat, name, lit))
			continue;
		if (!pat[lit] ? !name[lit] : wildmatch(pat + lit, name + lit))
			return p;
	}
	return NULL;
}

static bool excluded_dir(struct ws_ignore *ig, const char *dir);

/* path excluded by the rules of its ancestors (none of them excluded),
 * deepest file first, then .git/info/exclude */
static bool
match_rules(struct ws_ignore *ig, const char *path, bool isdir)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t dl = base > path ? (size_t)(base - path - 1) : 0;
	char *dir = xstrndup(path, dl);
	bool res = false, found = false;
	for (;;) {
		struct dnode *d = dir_node(ig, dir);
		if (!d->loaded) {
			char *f =
			    dir[0] ? wd_xasprintf("%s/.gitignore", dir) : wd_xstrdup(".gitignore");
			load(ig->root, f, &d->rules);
			free(f);
			d->loaded = true;
		}
		const struct pat *p = last_match(&d->rules, path, base, isdir);
		if (p) {
			res = !(p->flags & PAT_NEG);
			found = true;
			break;
		}
		if (!dir[0])
			break;
		char *s = strrchr(dir, '/');
		if (s)
			*s = '\0';
		else
			dir[0] = '\0';
	}
	free(dir);
	if (!found) {
		const struct pat *p = last_match(&ig->info, path, base, isdir);
		res = p && !(p->flags & PAT_NEG);
	}
	return res;
}

/* Is the directory dir excluded, itself or through an ancestor? */
static bool
excluded_dir(struct ws_ignore *ig, const char *dir)
{
	if (!dir[0])
		return false;
	struct dnode *d = dir_node(ig, dir);
	if (d->excluded >= 0)
		return d->excluded;
	const char *s = strrchr(dir, '/');
	char *parent = xstrndup(dir, s ? (size_t)(s - dir) : 0);
	bool ex = excluded_dir(ig, parent) || match_rules(ig, dir, true);
	free(parent);
	d = dir_node(ig, dir); /* (the table only grows: d stays valid) */
	d->excluded = ex;
	return ex;
}

struct ws_ignore *
ws_ignore_new(int root)
{
	struct ws_ignore *ig = wd_xcalloc(1, sizeof(*ig));
	ig->root = root;
	ig->info.base = wd_xstrdup("");
	load(root, ".git/info/exclude", &ig->info);
	return ig;
}

bool
ws_ignore_match(struct ws_ignore *ig, const char *rel, bool isdir)
{
	const char *s = strrchr(rel, '/');
	if (s) {
		char *parent = xstrndup(rel, (size_t)(s - rel));
		bool ex = excluded_dir(ig, parent);
		free(parent);
		if (ex)
			return true;
	}
	return isdir ? excluded_dir(ig, rel) : match_rules(ig, rel, false);
}

void
ws_ignore_free(struct ws_ignore *ig)
{
	if (!ig)
		return;
	for (unsigned i = 0; i < NBUCKETS; i++)
		for (struct dnode *d = ig->b[i], *n; d; d = n) {
			n = d->next;
			plist_fini(&d->rules);
			free(d->path);
			free(d);
		}
	plist_fini(&ig->info);
	free(ig);
}
