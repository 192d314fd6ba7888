/* util: cleanup attributes, struct wd_err helpers, logging, small fd and
 * string helpers shared by every module.  Nothing here touches the jail. */
#ifndef WD_UTIL_H
#define WD_UTIL_H

#include "warden.h"
#include "util/sha256.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define WD_API __attribute__((visibility("default")))
#define WD_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define WD_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define WD_UNUSED __attribute__((unused))

/* 1 in builds with AddressSanitizer or ThreadSanitizer (gcc's and clang's
 * spellings).  Their runtimes keep per-thread state in process memory, so
 * code that lets a child share our memory (CLONE_VM) forks instead there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WD_SANITIZED 1
#endif
#endif
#ifndef WD_SANITIZED
#define WD_SANITIZED 0
#endif

/* ---- cleanup attributes (bubblewrap's and crun's pattern) ---- */
static inline void
wd_freep(void *p)
{
	free(*(void **)p);
}
static inline void
wd_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define wd_autofree __attribute__((cleanup(wd_freep)))
#define wd_autoclose __attribute__((cleanup(wd_closep)))
#define wd_autoptr(type) __attribute__((cleanup(type##_freep))) type *
#define WD_DEFINE_AUTOPTR(type, fn)                                                                \
	static inline void type##_freep(type **p)                                                  \
	{                                                                                          \
		if (*p)                                                                            \
			fn(*p);                                                                    \
	}

static inline void *
wd_steal_ptr_impl(void **p)
{
	void *v = *p;
	*p = NULL;
	return v;
}
#define wd_steal_ptr(pp) wd_steal_ptr_impl((void **)(pp))
static inline int
wd_steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}
static inline void
wd_close_reset(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- allocation: abort on failure, never return NULL ---- */
void *wd_xmalloc(size_t n);
void *wd_xcalloc(size_t n, size_t size);
void *wd_xrealloc(void *p, size_t n);
char *wd_xstrdup(const char *s);
char *wd_xasprintf(const char *fmt, ...) WD_PRINTF(1, 2);

/* ---- errors (CONTRIBUTING.md, "Code") ----
 * Each returns a negative errno value so failing is one line:
 *     return wd_err_sys(err, errno, "open %s", path);
 * wd_err_set's follows the code: -EINVAL for WD_E_INVAL, -ENOTSUP for
 * WD_E_UNSUPPORTED (what a caller tests to tell "the host cannot" from
 * "it failed"), else -EIO; wd_err_sys's is -sys_errno.
 * err may be NULL.  wd_err_step() formats nothing and is safe after clone(). */
int wd_err_set(struct wd_err *err, int code, const char *fmt, ...) WD_PRINTF(3, 4);
int wd_err_sys(struct wd_err *err, int sys_errno, const char *fmt, ...) WD_PRINTF(3, 4);
int wd_err_prefix(struct wd_err *err, const char *fmt, ...) WD_PRINTF(2, 3);
static inline int
wd_err_step(struct wd_err *err, int step, int sys_errno)
{
	if (err) {
		err->code = WD_E_SYS;
		err->sys_errno = sys_errno;
		err->step = step;
		err->msg[0] = '\0';
	}
	return -(sys_errno ? sys_errno : EIO);
}

/* ---- logging (CONTRIBUTING.md, "Code"): the level is checked before formatting ----
 * Messages go to the sink of the context the calling thread works for
 * (set by the public entry points of a wd_ctx, and by the threads a
 * context starts), else to the process-wide handler of
 * wd_set_log_handler(). */
struct wd_log_sink {
	wd_log_fn fn;
	void *data;
	int level;
};
extern int wd_log_level;
/* The name of a level as logs print it ("error" .. "trace"); "level N"
 * style "?" for a value outside enum wd_log_level, never another level's
 * name (a trace line shown as "error" sends an operator the wrong way). */
const char *wd_log_level_name(int level);
extern __thread const struct wd_log_sink *wd_log_tls;
static inline bool
wd_log_enabled(int level)
{
	const struct wd_log_sink *s = wd_log_tls;
	return level <= (s ? s->level : wd_log_level);
}
/* Make s this thread's sink; returns the previous one for wd_log_leave(). */
static inline const struct wd_log_sink *
wd_log_enter(const struct wd_log_sink *s)
{
	const struct wd_log_sink *prev = wd_log_tls;
	wd_log_tls = s;
	return prev;
}
static inline void
wd_log_leave(const struct wd_log_sink *prev)
{
	wd_log_tls = prev;
}
void wd_log_emit(int level, const char *func, const char *fmt, ...) WD_PRINTF(3, 4);
#define wd_log(level, ...)                                                                         \
	do {                                                                                       \
		if (wd_log_enabled(level))                                                         \
			wd_log_emit((level), __func__, __VA_ARGS__);                               \
	} while (0)

/* ---- memory for secret values (secure.c) ----
 * A mapping of its own, mlock()ed, excluded from core dumps and wiped in
 * children (MADV_DONTDUMP, MADV_WIPEONFORK); wd_secure_free() wipes it
 * before unmapping.  n is the size asked for (pass the same to free).
 * NULL with err set if any of that fails. */
void *wd_secure_alloc(size_t n, struct wd_err *err);
void wd_secure_free(void *p, size_t n);

/* ---- parsing helpers: wd_parse_size/u64/fixed6 are public (warden.h) ---- */

/* ---- environment lists ---- */
/* A portable variable name: a letter or '_', then letters, digits and
 * '_', at most 255 bytes.  Anything else (spaces, '=', control bytes) is
 * how a value smuggles itself into another variable or a log line. */
bool wd_env_name_ok(const char *name);
/* Set NAME=VALUE in *env (n entries, kept NULL-terminated), replacing an
 * earlier entry of the same name.  -EINVAL (err filled) for a bad name. */
int wd_env_set(char ***env, size_t *n, const char *name, const char *value, struct wd_err *err);

/* ---- fd helpers ---- */
/* write all of buf, retrying on EINTR and short writes. 0 or -errno. */
int wd_write_all(int fd, const void *buf, size_t len);
/* read a small file at dirfd/path into buf (NUL-terminated); returns length or -errno. */
ssize_t wd_read_file_at(int dirfd, const char *path, char *buf, size_t cap);
/* write a string to dirfd/path (O_WRONLY, no create); 0 or -errno. */
int wd_write_file_at(int dirfd, const char *path, const char *s);
/* One of warden's helper programs (warden-monitor, warden-init): $env_var
 * when it names an absolute executable; else name next to the running
 * program (a build tree, or an installation whose libexec is the same
 * directory); else installed.  0 with out holding the path, or -ENOENT
 * with out holding installed (not executable). */
int wd_helper_program(const char *env_var, const char *name, const char *installed, char *out,
		      size_t cap);

/* ---- trees (fs.c; supervisor side: never after a raw clone) ---- */
/* rm -r of dfd/name (dfd may be AT_FDCWD), following no link anywhere:
 * a link is removed as a link.  Directories being removed that their
 * owner cannot read or empty get mode 0700 first.  Removes all it can;
 * 0 (also when name does not exist) or the first -errno; -ELOOP past
 * WD_RM_TREE_DEPTH levels. */
#define WD_RM_TREE_DEPTH 512
int wd_rm_tree_at(int dfd, const char *name);

/* The real path of directory dir, with no window between resolving it and
 * naming it: dir is opened (links in it followed, as realpath() does, and
 * /proc/self/fd/N is directory N itself, no path walked), the kernel's
 * name for the open directory read back, and that name opened again
 * following no link and checked to be the same directory (device and
 * inode).  So a link planted in the path while it is resolved is never
 * followed into the result, as it was between a caller's check of a path
 * and realpath()'s walk of it.  Without /proc, realpath().  0 with *out a
 * new string; -errno (-ENOTDIR, -ENOENT, -ESTALE: the name no longer
 * leads, link-free, to the directory). */
int wd_dir_realpath(const char *dir, char **out);

/* ---- the state of a tree, for approvals (tree.c) ----
 * A SHA-256 over every entry below the directories added, in name order:
 * path, mode, owner, size, inode, links, device number, mtime and ctime,
 * a link's target; no content (a write always moves ctime, which no
 * process can set back).  Nothing is followed.  A walk that could not see
 * everything (unlistable, vanished, too deep) folds in random bytes, so
 * it matches no other walk: complete is false and unseen names the first
 * place (the model's name: escape it before showing it). */
struct wd_tree_print {
	struct wd_sha256 sha;
	uint64_t entries;
	/* at most this many entries over every tree added (0: no bound):
	 * past it the walk stops and is incomplete ("more than N entries") */
	uint64_t max_entries;
	bool complete;
	bool stopped; /* incomplete (below): nothing more is walked */
	bool bounded; /* stopped because max_entries was reached */
	char unseen[256];
};
void wd_tree_print_init(struct wd_tree_print *t);
/* label: what the tree is ("workspace", "home"), part of the print;
 * dirfd: the directory (O_PATH is enough), -1 for one that is missing */
void wd_tree_print_add(struct wd_tree_print *t, const char *label, int dirfd);
/* The directory path as process pid sees it (its root, its mounts: a
 * sandbox's own tmpfs home, /tmp, /dev/shm), O_PATH, no link followed on
 * the way; -errno. */
int wd_tree_open_in(pid_t pid, const char *path);
void wd_tree_print_final(struct wd_tree_print *t, char hex[65]);

/* ---- the state directory (util.c) ----
 * Where warden keeps sandboxes, approvals and images when the caller
 * names none (wd_ctx_set_state_dir): $WARDEN_STATE_DIR, else
 * $XDG_STATE_HOME/warden, else /var/lib/warden for root, else
 * $HOME/.local/state/warden, into out.  Neither checked nor created here
 * (ws_state_root checks it is the caller's own, 0700).  -EINVAL with err
 * set when none applies or the path does not fit. */
int wd_state_dir(char *out, size_t cap, struct wd_err *err);

/* The monotonic clock, the one warden measures durations and deadlines
 * with (the jail's pid 1 reads it with raw_clock_gettime instead: no libc
 * wrapper after clone). */
uint64_t wd_now_ns(void);
static inline uint64_t
wd_now_ms(void)
{
	return wd_now_ns() / 1000000;
}

#endif
