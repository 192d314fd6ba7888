/* files: the workspace as direct file tools see it, and what every
 * reader of a workspace shares with them.
 *
 *   files.c     wd_workspace: read, write, edit, list beneath the
 *               workspace's fd (openat2), atomic writes, protected paths
 *               (the default list, the policy's, what the jail's walk
 *               implies); the beneath-open and path normal form every
 *               workspace path goes through
 *   ignore.c    git's ignore rules, warden's own matcher
 *
 * The copy-on-write machinery (src/workspace/: the state directory,
 * disks, layers, the change set, apply) is above it and asks it the same
 * questions of every change. */
#ifndef WD_FILES_H
#define WD_FILES_H

#include "util/util.h"

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The protected paths of every workspace (relative to its root): read-only
 * inside in every mode, never written by apply.  NULL-terminated. */
extern const char *const ws_default_protect[];

/* ---- files.c (wd_workspace) ---- */

/* A wd_workspace over the directory fd (not taken: duplicated), standing
 * for the host path real (messages, absolute paths given), protected by
 * warden's list and protect (n of them, in wd_spec_add_protected()'s
 * form).  For a sandbox's view of its workspace: a cow overlay's mount.
 * *out is new, close with wd_workspace_close(). */
/* warden cp into a sandbox's view: wd_workspace_write() with the file's
 * permission bits (mode & 0777; never a set-id bit), and a directory made
 * (with its parents) under the same checks: no "..", nothing protected,
 * nothing through a link. */
int ws_files_write_mode(const wd_workspace *ws, const char *path, const void *data, size_t len,
			unsigned flags, mode_t mode, struct wd_err *err);
int ws_files_mkdir(const wd_workspace *ws, const char *path, struct wd_err *err);
int ws_files_view(int fd, const char *real, const char *const *protect, size_t nprotect,
		  wd_workspace **out, struct wd_err *err);
/* What a view is made of, for handing it to another process (a session's
 * monitor to its client, wd_session_workspace): its directory descriptor
 * (the view's own, not a copy), the host path it stands for and its
 * protected list. */
int ws_files_parts(const wd_workspace *ws, const char **real, const char *const **protect,
		   size_t *nprotect);

/* Does a change at rel (relative to the workspace, normal form) touch a
 * protected path of list (n entries)?  At or below an entry; any component
 * named .git (repository metadata, at any depth: a gitfile too); or, unless
 * dir_stays (a directory stays a directory at rel: a new one, a mode
 * change), a strict ancestor of an entry, whose removal or replacement
 * would change what the entry names (*ancestor set).  The entry (".git"
 * for a .git component) or NULL.  What the file tools and apply ask of
 * every change (files.c). */
const char *ws_path_protected(const char *const *list, size_t n, const char *rel, bool dir_stays,
			      bool *ancestor);

/* Is rel inside a git directory that is not called .git: a directory D
 * that is one by git's own test (HEAD, and objects/ and refs/ or a
 * commondir) in any of the views fds (the host, the sandbox's upper
 * layer and overlay), counting rel's own first component below D as
 * there, and rel one of the names git reads in it (HEAD, config,
 * objects/, refs/, hooks/, ...)?  Why: git finds a repository in the
 * directory a command runs in, and in each parent, when it has such a
 * layout, not only under ".git" (an "embedded bare repository"): a
 * HEAD, config (core.worktree, core.fsmonitor), objects/ and refs/
 * applied to a project without .git made the host's next git status run
 * the sandbox's command (an attack pass; docs/threat-model.md).  1 with D ("." for the
 * root) in out, or 0. */
int ws_path_in_gitdir(const int *fds, size_t nfds, const char *rel, char *out, size_t cap);

/* What list implies in the workspace wsfd (host path real) as it is now,
 * found by the jail's own walk (jail_protect_walk): where a gitfile or a
 * commondir points inside it, whatever its name ("repo.git" of a bare
 * repository beside its worktrees, a --separate-git-dir), which the
 * jail makes read-only but ws_path_protected cannot know by name.  1
 * when rel is at or below such an entry (or, unless dir_stays, above it:
 * *ancestor), the entry in out; 0 when not; or -errno when the walk
 * failed (a protected path that is a symbolic link: -ELOOP). */
int ws_path_implied(int wsfd, const char *real, const char *const *list, size_t n, const char *rel,
		    bool dir_stays, bool *ancestor, char *out, size_t cap);

/* The same walk once, for many paths (a change set: a walk per change of
 * 64,000 read up to 1,024 directories each time).  Collect the entries,
 * then ws_implied_match() answers as ws_path_implied() would; a walk
 * that failed makes every answer not found in it its -errno. */
struct ws_implied {
	char **e; /* the entries, in the walk's order */
	size_t n;
	int rc; /* 0, or the walk's -errno */
};
void ws_implied_collect(int wsfd, const char *real, const char *const *list, size_t n,
			struct ws_implied *im);
int ws_implied_match(const struct ws_implied *im, const char *rel, bool dir_stays, bool *ancestor,
		     char *out, size_t cap);
void ws_implied_fini(struct ws_implied *im);

/* ---- ignore.c ---- */

/* git's ignore rules (.gitignore in every directory, .git/info/exclude)
 * as the tree root holds them (not taken; every file opened beneath it,
 * no link followed), read as they are needed and kept.  Not thread-safe:
 * one per walk. */
struct ws_ignore;
struct ws_ignore *ws_ignore_new(int root);
/* Would git ignore rel (normal form, relative to root; isdir: a
 * directory)?  As `git check-ignore --no-index`: excluded by the last
 * matching pattern of the deepest file that has one, or under an
 * excluded directory. */
bool ws_ignore_match(struct ws_ignore *ig, const char *rel, bool isdir);
void ws_ignore_free(struct ws_ignore *ig);

/* ---- files.c: paths ---- */

/* openat2(dirfd, path, flags | O_NOFOLLOW) beneath dirfd with no symbolic
 * link followed anywhere on the way: how every path of a workspace, of an
 * upper layer or of an overlay is opened (the sandbox may have made any of
 * its components a link).  The fd or -errno. */
int ws_open_beneath(int dirfd, const char *path, int flags);
/* Normalize a user's path relative to the workspace ("./a//b/" -> "a/b");
 * NULL for absolute paths, "..", or the empty path. */
char *ws_relpath(const char *p);

#endif
