/* workspace: what a sandbox writes, kept outside every jail.
 *
 *   state.c     warden's state directory: its checks (the caller's, 0700),
 *               one directory per sandbox, names, metadata
 *   disk.c      a sandbox's disk: a sparse ext4 image of --disk bytes,
 *               loop-mounted as a detached tree (never in the host's mount
 *               table), frozen for snapshots, copied sparsely
 *   layers.c    the layers of one sandbox: the disk's upper/, work/, home/
 *               and tmp/, and for a cow workspace the overlay (lower: an
 *               idmapped clone of the real directory, read-only); fresh
 *               detached clones of them for each jail
 *   baseline.c  what the host workspace held when the sandbox first saw it
 *               (path, type, mode, size, mtime, inode), for conflicts
 *   changes.c   the change set: the upper layer against the host directory
 *               (added, modified, deleted, renamed, mode, symlinks)
 *   patch.c     the change set as text (libgit2's patches), --stat, JSON
 *   apply.c     apply (atomic per file, conflicts refused) and discard
 *
 * Layout of a state directory ($XDG_STATE_HOME/warden, /var/lib/warden):
 *
 *   sandboxes/<id>/meta.json     what it is: name, spec, mode, state
 *                  disk.img      the sparse ext4 image: upper/ work/ home/ tmp/
 *                  baseline      the host workspace as first seen
 *                  monitor.sock  the session monitor's socket (0600, in a 0700 dir)
 *                  snapshots/<tag>/disk.img, baseline, meta.json
 *   names/<name> -> <id>         a symbolic link per name: taken atomically
 *
 * The direct file tools, protected paths, the beneath-open every path
 * here goes through and git's ignore rules are src/files/ (files.h,
 * included here).
 *
 * Everything here runs in the supervisor (or the session monitor), never
 * in a jail; every path inside the host workspace is reached with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) on its descriptor. */
#ifndef WD_WORKSPACE_H
#define WD_WORKSPACE_H

#include "files/files.h"
#include "util/util.h"

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

struct json_t;

/* ---- state.c ---- */

/* The state directory: wd_ctx_set_state_dir()'s, else $WARDEN_STATE_DIR,
 * else $XDG_STATE_HOME/warden, else /var/lib/warden (root) or
 * ~/.local/state/warden.  Created 0700 if missing; refused (-EINVAL, a
 * message saying how to fix it) when it is not a directory owned by the
 * caller with no group or other permissions.  out: PATH_MAX bytes. */
int ws_state_root(const char *given, char *out, size_t cap, struct wd_err *err);
/* sandboxes/ and names/ under root, checked the same way; returns an
 * O_DIRECTORY fd of sandboxes/ (or -errno). */
int ws_state_sandboxes(const char *root, struct wd_err *err);

/* A name or tag: [A-Za-z0-9][A-Za-z0-9_.-]{0,62}. */
bool ws_name_ok(const char *name);
/* Take name for id (a symbolic link names/<name> -> id): -EEXIST when
 * taken. */
int ws_name_take(const char *root, const char *name, const char *id, struct wd_err *err);
void ws_name_release(const char *root, const char *name);
/* The id for a name, an id, or a unique prefix of 4+ digits of one; id:
 * 17 bytes.  -ENOENT "no sandbox NAME", -EINVAL ambiguous. */
int ws_resolve(const char *root, const char *ref, char id[17], struct wd_err *err);

/* meta.json of a sandbox: read (a jansson object, new reference) and
 * written atomically (temp + rename, 0600). */
int ws_meta_read(int sbdir, struct json_t **out, struct wd_err *err);
int ws_meta_write(int sbdir, struct json_t *meta, struct wd_err *err);

/* ---- disk.c ---- */

#define WS_DISK_DEFAULT (1ULL << 30)
#define WS_DISK_MIN (32ULL << 20)

/* A new sparse image dirfd/name of bytes, formatted ext4 (mke2fs), with
 * upper/ work/ home/ tmp/ owned by the sandbox user's host ids. */
int ws_disk_create(int dirfd, const char *name, uint64_t bytes, uid_t uid, gid_t gid,
		   struct wd_err *err);
/* Attach the image to a loop device (autoclear) and mount it as a
 * detached tree: returns the mount's fd (or -errno).  The loop device
 * and the mount go when the last descriptor of the tree closes. */
int ws_disk_mount(int dirfd, const char *name, struct wd_err *err);
/* Freeze a mounted disk for a consistent copy (a guard process thaws it
 * should this process die first), then thaw it. */
struct ws_freeze {
	int fd, pipe_w;
	pid_t pid;
};
int ws_disk_freeze(int mnt, struct ws_freeze *fz, struct wd_err *err);
void ws_disk_thaw(struct ws_freeze *fz);
/* Copy a file sparsely (holes stay holes; data by copy_file_range). */
int ws_copy_sparse(int from_dir, const char *from, int to_dir, const char *to, struct wd_err *err);
/* Whether this host can give sandboxes a disk (root, loop devices, ext4):
 * 0, or -ENOTSUP with why. */
int ws_disk_supported(struct wd_err *err);
/* An ordinary user's layers (no loop device, no ext4 mount): a plain
 * directory dirfd/"layers" in the state directory with upper/ work/ home/
 * tmp/, unbounded (the user's own disk and quota bound it).  The overlay
 * over it is mounted inside a user namespace of the caller's
 * (ws_userns_enter), with userxattr. */
#define WS_LAYERS "layers"
int ws_layers_create(int dirfd, struct wd_err *err);
/* Whether an ordinary user can have cow layers here (Linux >= 5.11 for
 * overlayfs in a user namespace, user namespaces allowed): 0, or
 * -ENOTSUP with why. */
int ws_layers_supported(struct wd_err *err);
/* Enter a new user namespace mapping only our uid and gid to themselves,
 * and a private mount namespace it owns: the caller then mounts an
 * overlay (ws_open) and clones trees for jails as root does.  The
 * process must be single-threaded. */
int ws_userns_enter(struct wd_err *err);
/* Whether ws_userns_enter succeeded in this process (an ordinary user's
 * one-shot cow sandboxes then have layers/, not a disk). */
bool ws_userns_entered(void);
/* fn(arg, out, err) run in a forked child inside such a namespace, its
 * result, error and text (*out, malloc'd) brought back: how an ordinary
 * user's process reads and writes layers the sandbox may have left
 * unreadable to its owner (mode 000), with the namespace's
 * CAP_DAC_OVERRIDE, which reaches only our own files. */
int ws_userns_run(int (*fn)(void *arg, char **out, struct wd_err *err), void *arg, char **out,
		  struct wd_err *err);
/* Copy an ordinary user's layers (a snapshot): directories with their
 * user.overlay.opaque marks, files, links, whiteouts and FIFOs, no link
 * followed, modes kept. */
int ws_copy_tree(int from_dir, const char *from, int to_dir, const char *to, struct wd_err *err);

/* ---- layers.c ---- */

struct ws_params {
	const char *workspace; /* the host directory (resolved) */
	bool cow;	       /* an overlay over it; else the jail binds it */
	uid_t uid;	       /* host ids of the sandbox user (root: nobody) */
	gid_t gid;
	const char *const *protect; /* extra protected paths (policy, spec) */
	size_t nprotect;
};

/* One sandbox's layers, open.  Thread-safe for diff/apply/discard (one
 * at a time, under lock); the trees are made for one jail each. */
struct ws {
	int dirfd;	 /* the sandbox's state directory */
	char *workspace; /* host path */
	int wsfd;	 /* O_PATH of the host workspace */
	bool cow;
	int disk;	  /* the disk's mount (-1: none) */
	int upper;	  /* disk: upper/ (cow) */
	int ovl;	  /* the overlay's mount (cow), for live discards (-1: none
			   * mounted here, an ordinary user's stopped session) */
	bool user_layers; /* layers/ of an ordinary user, not a disk */
	uid_t uid;
	gid_t gid;
	char **protect; /* defaults + extras, NULL-terminated */
	size_t nprotect;
	struct ws_baseline *base; /* loaded on demand */
};

/* Open the layers of the sandbox whose state directory is dirfd (taken:
 * closed by ws_close): mount its disk (if it has one) and, for cow, the
 * overlay.  *out is new. */
int ws_open(int dirfd, const struct ws_params *p, struct ws **out, struct wd_err *err);
void ws_close(struct ws *w);

/* Fresh detached trees for one jail (each -1 when there is none): the
 * workspace (cow: a clone of the overlay), the home directory and /tmp
 * (emptied first).  The caller closes them. */
struct ws_trees {
	int workspace, home, tmp;
};
int ws_trees(struct ws *w, struct ws_trees *t, struct wd_err *err);
void ws_trees_close(struct ws_trees *t);

/* ---- baseline.c ---- */

struct ws_entry {
	char *path;  /* relative, no leading "./" */
	mode_t mode; /* type and permission bits */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t ino;
};
struct ws_baseline {
	struct ws_entry *e; /* sorted by path */
	size_t n, cap;
};

/* Walk the host workspace (no symlink followed, no other mount entered)
 * and write dirfd/baseline. */
int ws_baseline_record(int dirfd, int wsfd, struct wd_err *err);
int ws_baseline_load(int dirfd, struct ws_baseline **out, struct wd_err *err);
int ws_baseline_save(int dirfd, const struct ws_baseline *b, struct wd_err *err);
void ws_baseline_free(struct ws_baseline *b);
const struct ws_entry *ws_baseline_find(const struct ws_baseline *b, const char *path);
/* Set (or, st NULL, remove) the entry for path. */
void ws_baseline_set(struct ws_baseline *b, const char *path, const struct stat *st);

/* ---- changes.c ---- */

enum ws_status {
	WS_ADDED = 0,
	WS_MODIFIED,
	WS_DELETED,
	WS_RENAMED, /* old_path -> path, same content (maybe another mode) */
	WS_MODE,    /* only the permission bits */
};

struct ws_change {
	enum ws_status status;
	char *path;
	char *old_path;		   /* RENAMED */
	mode_t old_mode, new_mode; /* 0: absent on that side */
	uint64_t old_size, new_size;
	char old_hash[65], new_hash[65]; /* SHA-256 of contents (link target), "" none */
	bool protect;			 /* a protected path: never applied */
	bool conflict;			 /* the host changed it since the sandbox first saw it */
	bool unsupported;		 /* a FIFO, socket or device: listed, never applied */
	uint64_t ino;			 /* the upper file's inode when it has other links */
	const char *link_to;		 /* another change's path, same inode: written once,
					  * linked (points into that change) */
	bool ignored;			 /* by the host's ignore rules: listed and applied
					  * only with WS_CHANGES_ALL */
};

/* The ignored changes left out of a set, one per top-level entry. */
struct ws_ignored {
	char *name;   /* "node_modules/" (a directory) or "debug.log" */
	size_t files; /* changes below it (directories not counted) */
	uint64_t bytes;
};

struct ws_changes {
	struct ws_change *c; /* sorted by path */
	size_t n, cap;
	char digest[65];       /* SHA-256 of the set as reviewed: see ws_changes_digest */
	uint64_t bytes;	       /* what an apply writes: a hard-linked inode counted once */
	bool all;	       /* ignored changes are in c[], not summarised */
	struct ws_ignored *ig; /* without all: what was left out, by name */
	size_t nig;
};

/* The change set of a cow sandbox: upper/ against the host directory,
 * with hashes, conflicts (against the baseline) and protected flags.
 * paths (n, may be 0): only changes at or below them; a path that
 * matches none is -ENOENT naming it.  Changes the host's ignore rules
 * ignore are left out and summarised (ig), unless flags has
 * WS_CHANGES_ALL.  *out is new. */
#define WS_CHANGES_ALL 0x1u
int ws_changes(struct ws *w, const char *const *paths, size_t npaths, unsigned flags,
	       struct ws_changes **out, struct wd_err *err);
void ws_changes_free(struct ws_changes *cs);
/* The digest of a change set (cs->digest, set by ws_changes): SHA-256 of
 * one canonical line per change (status, paths, modes, sizes, SHA-256 of
 * both sides, flags, hard link), so two sets with one digest write the
 * same bytes.  What `warden diff --json` prints and `apply --expect`
 * compares. */
void ws_changes_digest(const struct ws_changes *cs, char out[65]);
/* Incremental SHA-256 of file contents (libcrypto's when it loads, else
 * warden's own): the same hash as the change set's. */
struct ws_hasher;
struct ws_hasher *ws_hasher_new(void);
void ws_hasher_update(struct ws_hasher *h, const void *p, size_t n);
/* Frees h. */
void ws_hasher_final(struct ws_hasher *h, char out[65]);
/* ---- patch.c ---- */

#define WS_DIFF_STAT 0x1u  /* git's --stat */
#define WS_DIFF_JSON 0x2u  /* the file list with sizes and hashes */
#define WS_DIFF_NAMES 0x4u /* one line per file: status and path */
/* Write the change set to f: a summary line per file then unified diffs
 * (binary files named), or per flags. */
int ws_diff_write(struct ws *w, const struct ws_changes *cs, unsigned flags, FILE *f,
		  struct wd_err *err);
/* " (new file 0644)", " (new directory 0700)", " (mode 0644 -> 0777)" or
 * nothing: the change's permission bits in octal, for a human. */
void ws_change_mode_note(const struct ws_change *c, FILE *f);
/* The summary of cs's ignored changes, a line per top-level entry:
 * "node_modules/  1,204 files, 14 MiB, " then tail. */
void ws_ignored_write(const struct ws_changes *cs, const char *tail, FILE *f);

/* ---- apply.c ---- */

struct ws_apply_report {
	size_t applied, conflicts, refused;
	char *text; /* one line per file: what happened; new string */
	char *json; /* the same as a JSON object; new string */
};
/* Apply the change set (or the changes at or below paths) to the host
 * directory: nothing at all when a selected change conflicts or touches a
 * protected path (returns 1, the report says which); each file atomically
 * (written next to its place, renamed over it), modes kept (set-id bits
 * dropped), owner kept (new files: the workspace owner's).  -ENOSPC and
 * other failures while writing leave the host as it was.  0 when all was
 * applied. */
/* expect (NULL: any): the digest the human reviewed; another set is
 * refused with -ESTALE and nothing written.  Every file is re-hashed as it
 * is copied and must match the set (else -ESTALE, nothing written); the
 * bytes written are bounded by the sandbox disk's used bytes. */
/* flags: WS_CHANGES_ALL applies ignored changes too (else they are
 * left in the sandbox), the same selection as the diff reviewed. */
int ws_apply(struct ws *w, const char *const *paths, size_t npaths, unsigned flags,
	     const char *expect, struct ws_apply_report *rep, struct wd_err *err);
void ws_apply_report_fini(struct ws_apply_report *rep);
/* Drop the change set (or the changes at or below paths).  live: the
 * overlay is mounted in a jail, so the host's version is written back
 * through it rather than under it.  Returns the number of changes
 * dropped. */
int ws_discard(struct ws *w, const char *const *paths, size_t npaths, bool live,
	       struct wd_err *err);

#endif
