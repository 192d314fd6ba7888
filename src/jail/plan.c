/* jail/plan: what a sandbox will be, decided before anything is cloned
 * (supervisor side).  The result is data: a flat list of mount operations
 * (bubblewrap's setup ops) with final strings, the environment, the
 * Landlock rules and the limits.  Nothing here keeps a descriptor or
 * changes the kernel's state; jail/build.c then opens and clones what the
 * plan names on the host, and pid 1 walks it after clone(). */
#include "jail/jail.h"
#include "jail/seccomp.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SANDBOX_ID 1000

/* HOME of a sandbox without a home tree (plan_oneshot_home) */
#define JAIL_ONESHOT_HOME "/home/sandbox"
#define JAIL_PATH "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

static const char *const step_names[JAIL_STEP_COUNT] = {
    [JAIL_STEP_NONE] = "none",
    [JAIL_STEP_1_CLONE] = "1 clone namespaces",
    [JAIL_STEP_2_MAPS] = "2 uid/gid maps",
    [JAIL_STEP_2B_IDS] = "2b drop groups and switch ids",
    [JAIL_STEP_2C_TIME] = "2c time namespace",
    [JAIL_STEP_3A_ROOT] = "3a tmpfs root",
    [JAIL_STEP_3B_MOUNTS] = "3b mounts",
    [JAIL_STEP_3C_PIVOT] = "3c pivot_root",
    [JAIL_STEP_3D_ROOT_RO] = "3d read-only root",
    [JAIL_STEP_3E_ATTACH] = "3e attach the workspace",
    [JAIL_STEP_4_NET] = "4 loopback",
    [JAIL_STEP_4B_CGROUP] = "4b join cgroup",
    [JAIL_STEP_5_PID1] = "5 pid 1",
    [JAIL_STEP_6A_SESSION] = "6a setsid",
    [JAIL_STEP_6B_FDS] = "6b stdio",
    [JAIL_STEP_6B_CWD] = "6b working directory",
    [JAIL_STEP_6C_RLIMITS] = "6c rlimits",
    [JAIL_STEP_6D_CAPS] = "6d drop capabilities",
    [JAIL_STEP_6E_NNP] = "6e no_new_privs",
    [JAIL_STEP_6F_LANDLOCK] = "6f landlock",
    [JAIL_STEP_6G_CLOSE_FDS] = "6g close fds",
    [JAIL_STEP_6H_SECCOMP] = "6h seccomp",
    [JAIL_STEP_6I_EXEC] = "6i execve",
};

const char *
jail_step_name(int step)
{
	if (step < 0 || step >= JAIL_STEP_COUNT || !step_names[step])
		return "?";
	return step_names[step];
}

const char *
jail_op_name(enum jail_op_kind kind)
{
	static const char *const names[] = {
	    [JAIL_OP_MKDIR] = "mkdir",	   [JAIL_OP_MKFILE] = "create",
	    [JAIL_OP_SYMLINK] = "symlink", [JAIL_OP_WRITE] = "write",
	    [JAIL_OP_COPY] = "copy",	   [JAIL_OP_BIND] = "bind",
	    [JAIL_OP_MOVE] = "move mount", [JAIL_OP_MOUNT] = "mount",
	    [JAIL_OP_SETATTR] = "setattr", [JAIL_OP_MASK] = "mask",
	    [JAIL_OP_PROTECT] = "protect",
	};
	return (unsigned)kind < WD_ARRAY_SIZE(names) ? names[kind] : "?";
}

/* ---- storage owned by the prep: mappings of its own ----
 *
 * The prep (~30 KiB, nearly all of it the operations) and every string and
 * array its plan points to live in anonymous mappings of their own rather
 * than on the heap, so that jail_prep_dontfork() can keep them out of every
 * process cloned later without CLONE_VM.  On the heap, each live sandbox's
 * plan was copied (page tables and copy-on-write pages) into every later
 * pid 1 for that pid 1's whole life: ~30 KiB per live sandbox in each new
 * one, quadratic in the host's memory over a server's sandboxes. */

struct prep_chunk {
	struct prep_chunk *next;
	size_t len, used;
};
#define PREP_CHUNK_MIN (16u * 1024u)

static size_t
page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

static void *
map_anon(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		abort(); /* as wd_xcalloc on exhaustion */
	return m;
}

/* n zeroed bytes owned by the prep, 16-aligned, freed with it. */
static void *
prep_alloc(struct jail_prep *p, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct prep_chunk *c = p->chunks;
	size_t hdr = (sizeof(*c) + 15) & ~(size_t)15;
	if (!c || c->len - c->used < n) {
		size_t len = page_round(hdr + n > PREP_CHUNK_MIN ? hdr + n : PREP_CHUNK_MIN);
		c = map_anon(len);
		c->len = len;
		c->used = hdr;
		c->next = p->chunks;
		p->chunks = c;
		/* the same fate as the rest once the prep is kept from forks */
		if (p->dontfork)
			madvise(c, len, MADV_DONTFORK);
	}
	void *r = (char *)c + c->used;
	c->used += n;
	return r;
}

/* A copy of s owned by the prep; s is freed. */
static char *
keep(struct jail_prep *p, char *s)
{
	size_t n = strlen(s) + 1;
	char *d = prep_alloc(p, n);
	memcpy(d, s, n);
	free(s);
	return d;
}

/* A formatted string owned by the prep, writable (execve's argv type). */
static char *sdup(struct jail_prep *p, const char *f, ...) WD_PRINTF(2, 3);
static char *
sdup(struct jail_prep *p, const char *f, ...)
{
	va_list ap, ap2;
	va_start(ap, f);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	if (n < 0)
		abort();
	char *s = prep_alloc(p, (size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, f, ap2);
	va_end(ap2);
	return s;
}

/* Append an operation.  Past JAIL_MAX_OPS it returns the prep's scratch
 * slot and counts the overflow, which jail_plan_build() turns into an
 * error. */
static struct jail_op *
add_op(struct jail_prep *p, enum jail_op_kind kind, const char *path)
{
	struct jail_plan *pl = &p->plan;
	struct jail_op *op = &p->scratch;
	if (pl->nops < JAIL_MAX_OPS)
		op = &pl->ops[pl->nops++];
	else
		p->overflow = true;
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->path = path;
	op->fd = -1;
	op->tree = -1;
	return op;
}

/* ---- the container mount plan ---- */

static const char hosts_text[] = "127.0.0.1\tlocalhost sandbox\n"
				 "::1\tlocalhost ip6-localhost ip6-loopback\n";
/* No network: a resolver that fails at once rather than after timeouts. */
static const char resolv_text[] = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n";
static const char nsswitch_text[] = "passwd: files\ngroup: files\nshadow: files\n"
				    "hosts: files dns\nnetworks: files\nprotocols: files\n"
				    "services: files\nethers: files\nrpc: files\n";
static const char hostname_text[] = "sandbox\n";

/* Small host files copied into the jail's /etc (a copy is cheaper than a
 * mount and leaves no host inode reachable).  Not the host's shadow, not
 * machine-id, not ssh keys: an allowlist, never a filter. */
static const char *const etc_copies[] = {
    "ld.so.cache", "protocols", "services", "ssl/openssl.cnf", "debian_version",
};
/* Directories bound read-only. */
static const char *const etc_dirs[] = {"ssl/certs", "alternatives", "ca-certificates"};

/* The index of the provided tree at dst, or -1. */
static int
find_tree(const struct jail_config *cfg, const char *dst)
{
	for (size_t i = 0; i < cfg->ntrees; i++)
		if (!strcmp(cfg->trees[i].dst, dst))
			return (int)i;
	return -1;
}

/* A provided tree (jail_config.trees[t]) at its place: a BIND the build
 * turns into a MOVE of its own copy of the descriptor. */
static struct jail_op *
add_tree(struct jail_prep *p, const struct jail_config *cfg, int t)
{
	const char *R = p->plan.new_root;
	char *dst = sdup(p, "%s%s", R, cfg->trees[t].dst);
	for (char *c = dst + strlen(R) + 1; (c = strchr(c, '/')); c++) {
		*c = '\0';
		add_op(p, JAIL_OP_MKDIR, sdup(p, "%s", dst));
		*c = '/';
	}
	add_op(p, JAIL_OP_MKDIR, dst);
	struct jail_op *op = add_op(p, JAIL_OP_BIND, dst);
	op->flags = JAIL_OPF_PROVIDED;
	op->tree = t;
	op->data = cfg->trees[t].what;
	op->attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	return op;
}

/* /tmp: a size-limited tmpfs, the jail's only scratch space; or a tree
 * the caller provides (a directory of the sandbox's disk image, so --disk
 * bounds it). */
static int
plan_tmp(struct jail_prep *p, const struct jail_config *cfg, struct wd_err *err)
{
	const char *R = p->plan.new_root;
	int t = find_tree(cfg, "/tmp");
	if (t >= 0) {
		add_tree(p, cfg, t);
		return 0;
	}
	add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/tmp", R));
	struct jail_op *op = add_op(p, JAIL_OP_MOUNT, sdup(p, "%s/tmp", R));
	op->src = "tmpfs";
	op->mflags = MS_NOSUID | MS_NODEV;
	op->data = sdup(p, "mode=1777,size=%llu", (unsigned long long)cfg->tmp_bytes);
	return 0;
}

/* HOME for a sandbox without a home tree (a one-shot run, the server's
 * run_command): a tmpfs of its own at /home/sandbox, as large as /tmp may
 * be, gone with the sandbox.  Why: with HOME in the workspace, npm's
 * ~/.npm, pip's ~/.cache and user site, and every tool's dotfiles landed
 * in the project (and in `warden diff`), and a later host tool could read
 * what the model left there as its configuration.  Mounted before the
 * binds, so a --bind below it is not hidden. */
static void
plan_oneshot_home(struct jail_prep *p, const struct jail_config *cfg)
{
	if (cfg->home)
		return;
	const char *R = p->plan.new_root;
	add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/home", R));
	add_op(p, JAIL_OP_MKDIR, sdup(p, "%s" JAIL_ONESHOT_HOME, R));
	struct jail_op *op = add_op(p, JAIL_OP_MOUNT, sdup(p, "%s" JAIL_ONESHOT_HOME, R));
	op->src = "tmpfs";
	op->mflags = MS_NOSUID | MS_NODEV;
	op->data = sdup(p, "mode=0700,uid=%d,gid=%d,size=%llu", SANDBOX_ID, SANDBOX_ID,
			(unsigned long long)cfg->tmp_bytes);
}

/* Bind host path src at dst (a path under the new root), read-only unless
 * rw: one BIND operation naming the host path.  jail/build.c decides how
 * it reaches the jail (a tree cloned by the supervisor as root, or opened
 * by the child otherwise); what labels the source in messages. */
static struct jail_op *
add_host_bind(struct jail_prep *p, const char *what, const char *src, const char *dst, bool rw)
{
	struct jail_op *op = add_op(p, JAIL_OP_BIND, dst);
	op->src = sdup(p, "%s", src); /* src may not outlive this call */
	op->data = what;
	op->flags = JAIL_OPF_HOSTPATH | JAIL_OPF_RECURSIVE;
	op->attr = rw ? MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
		      : MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	return op;
}

/* The home directory (a provided tree), then the protected paths of the
 * workspace: each made read-only over itself by pid 1 where it exists.
 * Why: `git status` on the host runs .git/config's
 * core.fsmonitor and the .git/hooks scripts, direnv runs .envrc, editors run tasks
 * from .vscode and .idea: a sandbox that can write them runs code on the
 * host the next time its owner looks at the project.  A vacant sandbox
 * (warm pool) does them after SYNC_ATTACH, in the view after pivot. */
static void
plan_home_protect(struct jail_prep *p, const struct jail_config *cfg)
{
	const char *R = p->plan.new_root;
	int t = cfg->home ? find_tree(cfg, cfg->home) : -1;
	if (t >= 0)
		add_tree(p, cfg, t);
	const char *ws = cfg->vacant ? "/workspace" : sdup(p, "%s/workspace", R);
	for (size_t i = 0; i < cfg->nprotect; i++) {
		struct jail_op *op = add_op(p, JAIL_OP_PROTECT, ws);
		op->data = sdup(p, "%s", cfg->protect[i]);
		op->src = sdup(p, "%s/%s", ws, cfg->protect[i]); /* the whole path, for views */
		/* where a worktree's absolute gitfile may point (unknown for
		 * a vacant sandbox: only relative ones are followed there) */
		op->host = cfg->vacant || !cfg->workspace ? NULL : sdup(p, "%s", cfg->workspace);
		if (cfg->vacant)
			op->flags |= JAIL_OPF_LATE;
	}
}

/* /usr read-only; the usrmerge links (/bin -> usr/bin, ...) copied as
 * links, or bound read-only where the source has real directories.  The
 * source is the host's root, or an image's rootfs: the one
 * place that chooses where the jail's programs and libraries come from
 * (policy/resolve.c looks programs up in the same tree). */
static void
plan_system(struct jail_prep *p, const struct jail_config *cfg)
{
	const char *R = p->plan.new_root;
	const char *base = cfg->image_root ? cfg->image_root : "";
	const char *what = cfg->image_root ? "image directory" : "system directory";
	const char *top[] = {"usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32"};
	char buf[PATH_MAX], src[PATH_MAX];
	for (size_t i = 0; i < WD_ARRAY_SIZE(top); i++) {
		struct stat st;
		snprintf(src, sizeof(src), "%s/%s", base, top[i]);
		ssize_t n = readlink(src, buf, sizeof(buf) - 1);
		if (n > 0) {
			/* a link is copied as text, never followed here: an
			 * image's /bin -> /etc/... resolves in the jail's view */
			buf[n] = '\0';
			struct jail_op *op =
			    add_op(p, JAIL_OP_SYMLINK, sdup(p, "%s/%s", R, top[i]));
			op->data = sdup(p, "%s", buf);
			continue;
		}
		if (lstat(src, &st) < 0 || !S_ISDIR(st.st_mode))
			continue; /* no /lib32 here: nothing to show */
		const char *dst = sdup(p, "%s/%s", R, top[i]);
		add_op(p, JAIL_OP_MKDIR, dst);
		add_host_bind(p, what, src, dst, false);
	}
}

/* The host's /etc, curated: a few copies, three directories. */
static void
plan_etc_host(struct jail_prep *p)
{
	const char *R = p->plan.new_root;
	struct jail_op *op;
	char buf[PATH_MAX];
	for (size_t i = 0; i < WD_ARRAY_SIZE(etc_copies); i++) {
		struct stat st;
		snprintf(buf, sizeof(buf), "/etc/%s", etc_copies[i]);
		if (lstat(buf, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		op = add_op(p, JAIL_OP_COPY, sdup(p, "%s/etc/%s", R, etc_copies[i]));
		op->src = sdup(p, "%s", buf);
		op->flags = JAIL_OPF_HOSTFILE; /* opened by jail_build_host() */
	}
	for (size_t i = 0; i < WD_ARRAY_SIZE(etc_dirs); i++) {
		struct stat st;
		snprintf(buf, sizeof(buf), "/etc/%s", etc_dirs[i]);
		if (lstat(buf, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		const char *dst = sdup(p, "%s/etc/%s", R, etc_dirs[i]);
		char real[PATH_MAX];
		if (!realpath(buf, real))
			continue;
		add_op(p, JAIL_OP_MKDIR, dst);
		add_host_bind(p, "/etc directory", real, dst, false);
	}
}

/* Names of /etc that warden writes itself (plan_container) or that an
 * image must not bring: the identity files, and the image's shadow files
 * (warden's passwd has no password entries to match them).  A change
 * here must bump ETC_TREE_FORMAT (jail/etctree.c): the trees prepared
 * in image stores were filtered by this list. */
bool
jail_etc_reserved(const char *name)
{
	static const char *const names[] = {
	    "passwd",	 "group",      "hosts",	 "resolv.conf", "nsswitch.conf", "hostname",
	    "localtime", "os-release", "shadow", "gshadow",	"machine-id",	 "ssl"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(names); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* One directory of an image's /etc into the jail's (a tmpfs directory):
 * links copied as links, files copied, directories bound read-only.  The
 * jail's /etc stays warden's tmpfs, so the identity files written on it
 * are warden's whatever the image holds (the curated entries on
 * top), and nothing in it is the image's writable file. */
static void
plan_etc_dir(struct jail_prep *p, const char *src_dir, const char *dst_dir, bool top)
{
	struct dirent **ents = NULL;
	int n = scandir(src_dir, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		char src[PATH_MAX], target[PATH_MAX];
		struct stat st;
		snprintf(src, sizeof(src), "%s/%s", src_dir, name);
		if (!strcmp(name, ".") || !strcmp(name, "..") || (top && jail_etc_reserved(name)) ||
		    lstat(src, &st) < 0)
			goto next;
		const char *dst = sdup(p, "%s/%s", dst_dir, name);
		struct jail_op *op;
		if (S_ISLNK(st.st_mode)) {
			ssize_t k = readlink(src, target, sizeof(target) - 1);
			if (k <= 0)
				goto next;
			target[k] = '\0';
			op = add_op(p, JAIL_OP_SYMLINK, dst);
			op->data = sdup(p, "%s", target);
		} else if (S_ISREG(st.st_mode)) {
			op = add_op(p, JAIL_OP_COPY, dst);
			op->src = sdup(p, "%s", src);
			op->flags = JAIL_OPF_HOSTFILE;
		} else if (S_ISDIR(st.st_mode)) {
			add_op(p, JAIL_OP_MKDIR, dst);
			add_host_bind(p, "image /etc directory", src, dst, false);
		}
	next:
		free(ents[i]);
	}
	free(ents);
}

/* An image's etc or etc/ssl that is a link would be followed on the
 * host's side, toward the host's /etc (its ssh keys): refused, as an image
 * that is not what it claims.  Below them, links are copied as links
 * (resolved in the jail's view).  0: real directories (or absent). */
static int
check_etc_image(const char *image_root, struct wd_err *err)
{
	char src[PATH_MAX];
	struct stat st;
	const char *const dirs[] = {"etc", "etc/ssl"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(dirs); i++) {
		snprintf(src, sizeof(src), "%s/%s", image_root, dirs[i]);
		if (lstat(src, &st) < 0) {
			if (errno == ENOENT)
				return 0; /* nothing of the image's: warden's entries only */
			return wd_err_sys(err, errno, "image %s", src);
		}
		if (!S_ISDIR(st.st_mode))
			return wd_err_set(err, WD_E_INVAL,
					  "image %s is not a directory (a link is never followed "
					  "out of an image)",
					  src);
	}
	return 0;
}

/* The image's /etc entry by entry on warden's tmpfs /etc (where the
 * prepared tree cannot be written: a store this user cannot write, a full
 * disk; and with TLS interception, whose CA files are written beside the
 * image's certificates). */
static void
plan_etc_image(struct jail_prep *p, const char *image_root)
{
	const char *R = p->plan.new_root;
	char src[PATH_MAX];
	const char *const dirs[] = {"etc", "etc/ssl"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(dirs); i++) {
		snprintf(src, sizeof(src), "%s/%s", image_root, dirs[i]);
		/* ssl entry by entry, so warden's CA bundle can be written
		 * beside the image's certificates (TLS interception) */
		plan_etc_dir(p, src, sdup(p, "%s/%s", R, dirs[i]), i == 0);
	}
}

/* warden's entries of a jail's /etc: the identity files and two links.
 * The sandbox user's (uid 1000) name is the image's user when it has one,
 * its home where HOME points; pw and gr hold passwd's and group's text. */
#define ETC_NENTS 8
static void
etc_entries(struct jail_etc_entry e[ETC_NENTS], char *pw, size_t pwcap, char *gr, size_t grcap,
	    const char *user, const char *home)
{
	const char *u = user ? user : "sandbox";
	snprintf(pw, pwcap,
		 "root:x:0:0:root:/root:/usr/sbin/nologin\n"
		 "%s:x:1000:1000:%s:%s:/bin/sh\n"
		 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		 u, u, home ? home : JAIL_ONESHOT_HOME);
	snprintf(gr, grcap, "root:x:0:\n%s:x:1000:\nnogroup:x:65534:\n", u);
	static const char zone[] = "/usr/share/zoneinfo/Etc/UTC", osrel[] = "../usr/lib/os-release";
	const struct jail_etc_entry all[ETC_NENTS] = {
	    {"passwd", pw, strlen(pw), false},
	    {"group", gr, strlen(gr), false},
	    {"hosts", hosts_text, sizeof(hosts_text) - 1, false},
	    {"resolv.conf", resolv_text, sizeof(resolv_text) - 1, false},
	    {"nsswitch.conf", nsswitch_text, sizeof(nsswitch_text) - 1, false},
	    {"hostname", hostname_text, sizeof(hostname_text) - 1, false},
	    {"localtime", zone, sizeof(zone) - 1, true},
	    {"os-release", osrel, sizeof(osrel) - 1, true},
	};
	memcpy(e, all, sizeof(all));
}

int
jail_etc_prepare(const char *image_root, const char *user)
{
	struct wd_err err = {0};
	if (check_etc_image(image_root, &err) < 0)
		return -EINVAL; /* refused at every start, with its message */
	char pw[PATH_MAX + 256], gr[256], tree[PATH_MAX];
	struct jail_etc_entry ents[ETC_NENTS];
	etc_entries(ents, pw, sizeof(pw), gr, sizeof(gr), user, NULL);
	return jail_etc_tree(image_root, ents, ETC_NENTS, tree, sizeof(tree));
}

static int
plan_container(struct jail_prep *p, const struct jail_config *cfg, struct wd_err *err)
{
	struct jail_plan *pl = &p->plan;
	struct jail_op *op;
	const char *R = pl->new_root;
	char buf[PATH_MAX];
	int rc = 0;

	/* 3a. A fresh tmpfs becomes the root: only mount points and the
	 * curated /etc live there, and it turns read-only after the pivot. */
	op = add_op(p, JAIL_OP_MOUNT, R);
	op->src = "tmpfs";
	op->mflags = MS_NOSUID | MS_NODEV;
	op->data = "mode=0755,size=16m";

	/* The system trees: the host's, or the image's. */
	plan_system(p, cfg);

	/* A curated /etc: synthetic identity files, a few copies, two dirs. */
	add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/etc", R));
	char pw[PATH_MAX + 256], gr[256];
	struct jail_etc_entry ents[ETC_NENTS];
	etc_entries(ents, pw, sizeof(pw), gr, sizeof(gr), cfg->user_name, cfg->home);
	ents[0].text = sdup(p, "%s", pw); /* the plan's strings outlive this frame */
	ents[1].text = sdup(p, "%s", gr);
	if (cfg->image_root && (rc = check_etc_image(cfg->image_root, err)) < 0)
		goto fail;
	/* An image's /etc without TLS interception: the tree prepared once
	 * per image (jail/etctree.c) bound read-only, one mount instead of
	 * one per directory and file.  It holds warden's entries, never the
	 * image's under those names, and is read-only like the tmpfs /etc. */
	char tree[PATH_MAX];
	if (cfg->image_root && !cfg->ca_pem &&
	    jail_etc_tree(cfg->image_root, ents, WD_ARRAY_SIZE(ents), tree, sizeof(tree)) == 0) {
		op = add_host_bind(p, "image /etc", tree, sdup(p, "%s/etc", R), false);
		op->flags &= ~JAIL_OPF_RECURSIVE; /* the tree has no mounts */
	} else {
		for (size_t i = 0; i < WD_ARRAY_SIZE(ents); i++) {
			op = add_op(p, ents[i].link ? JAIL_OP_SYMLINK : JAIL_OP_WRITE,
				    sdup(p, "%s/etc/%s", R, ents[i].name));
			op->data = ents[i].text;
			op->len = ents[i].link ? 0 : ents[i].len;
		}
		add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/etc/ssl", R));
		if (!cfg->image_root)
			plan_etc_host(p);
		else
			plan_etc_image(p, cfg->image_root);
	}

	/* TLS interception: warden's per-sandbox CA joins the trust store.
	 * The bundle (the host's plus the CA) is what the *_CA_* variables
	 * name, and it also covers ca-certificates.crt for tools that read
	 * the default path only. */
	if (cfg->ca_pem) {
		char *host_bundle = NULL;
		size_t hl = 0;
		/* the trust store the jail shows: the image's, or the host's */
		snprintf(buf, sizeof(buf), "%s/etc/ssl/certs/ca-certificates.crt",
			 cfg->image_root ? cfg->image_root : "");
		FILE *f = fopen(buf, "re");
		if (f) {
			FILE *m = open_memstream(&host_bundle, &hl);
			char chunk[8192];
			size_t n;
			while (m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
				fwrite(chunk, 1, n, m);
			if (m)
				fclose(m);
			fclose(f);
		}
		char *bundle = wd_xasprintf("%s%s", host_bundle ? host_bundle : "", cfg->ca_pem);
		free(host_bundle);
		bundle = keep(p, bundle);
		op = add_op(p, JAIL_OP_WRITE, sdup(p, "%s/etc/ssl/warden-ca.pem", R));
		op->data = cfg->ca_pem;
		op->len = strlen(cfg->ca_pem);
		const char *bpath = sdup(p, "%s/etc/ssl/warden-bundle.crt", R);
		op = add_op(p, JAIL_OP_WRITE, bpath);
		op->data = bundle;
		op->len = strlen(bundle);
		op = add_op(p, JAIL_OP_MASK, sdup(p, "%s/etc/ssl/certs/ca-certificates.crt", R));
		op->src = bpath;
		op->flags = JAIL_OPF_OPTIONAL;
	}

	/* The workspace, read-write, then /tmp, then the extra binds.  As
	 * root the workspace (and rw binds) get idmapped by the build, so the
	 * sandbox user (host nobody) owns them and its creations belong to
	 * the owner on the host. */
	const char *roots[65];	 /* host trees the sandbox can write */
	const char *rw_dsts[65]; /* and where they appear in the jail */
	size_t nroots = 0;
	for (size_t i = 0; i <= cfg->nbinds; i++) {
		const char *src = i == 0 ? cfg->workspace : cfg->binds[i - 1].src;
		const char *jdst = i == 0 ? "/workspace" : cfg->binds[i - 1].dst;
		bool rw = i == 0 ? true : cfg->binds[i - 1].rw;
		const char *what = i == 0 ? "workspace" : (rw ? "--bind" : "--ro-bind");
		if (i == 0 && cfg->vacant) {
			/* the workspace comes later, with SYNC_ATTACH: only its
			 * mount point now */
			add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/workspace", R));
			continue;
		}
		if (i > 0) {
			char resolved[PATH_MAX];
			/* Why no resolve for an exact source: it was checked
			 * link-free when the session started (spec_from_json); a
			 * link on it now was planted since by a sandbox writing a
			 * directory above, which jail_safe_resolve would follow
			 * outside the writable roots.  Taken as it is: the build
			 * opens every bind source with RESOLVE_NO_SYMLINKS
			 * (build_bind), which refuses such a link. */
			if (cfg->binds[i - 1].exact)
				snprintf(resolved, sizeof(resolved), "%s", src);
			else if ((rc = jail_safe_resolve(src, roots, nroots, resolved, err)) < 0) {
				wd_err_prefix(err, "%s source", what);
				if (err)
					err->code = WD_E_INVAL;
				goto fail;
			}
			src = sdup(p, "%s", resolved);
			/* a mount point inside a writable bind would be made
			 * (and the mount placed) through whatever the sandbox
			 * left there: refuse, as for /workspace */
			for (size_t k = 0; k < nroots; k++) {
				if (jail_path_within(jdst, rw_dsts[k])) {
					rc = wd_err_set(err, WD_E_INVAL,
							"%s: destination '%s' lies in the writable "
							"bind '%s'",
							what, jdst, rw_dsts[k]);
					goto fail;
				}
			}
		}
		if (rw && nroots < WD_ARRAY_SIZE(roots)) {
			roots[nroots] = src;
			rw_dsts[nroots++] = jdst;
		}
		struct stat st;
		if (stat(src, &st) < 0) {
			rc = wd_err_sys(err, errno, "%s source '%s'", what, src);
			if (err)
				err->code = WD_E_INVAL;
			goto fail;
		}
		if (i == 0 && !S_ISDIR(st.st_mode)) {
			rc = wd_err_set(err, WD_E_INVAL, "workspace '%s' is not a directory", src);
			goto fail;
		}
		/* /tmp right after the workspace: before the extra binds, so
		 * one may land in it. */
		if (i == 1 && (rc = plan_tmp(p, cfg, err)) < 0)
			goto fail;
		if (i == 1)
			plan_oneshot_home(p, cfg);
		if (i == 0 && find_tree(cfg, "/workspace") >= 0) {
			/* a cow overlay (or another tree) made by the caller */
			op = add_tree(p, cfg, find_tree(cfg, "/workspace"));
			op->flags |= JAIL_OPF_WORKSPACE;
			continue;
		}
		/* mount points on the way to dst: mkdir -p on the tmpfs root */
		char *dst = sdup(p, "%s%s", R, jdst);
		for (char *c = dst + strlen(R) + 1; (c = strchr(c, '/')); c++) {
			*c = '\0';
			add_op(p, JAIL_OP_MKDIR, sdup(p, "%s", dst));
			*c = '/';
		}
		add_op(p, S_ISDIR(st.st_mode) ? JAIL_OP_MKDIR : JAIL_OP_MKFILE, dst);
		op = add_host_bind(p, what, src, dst, rw);
		if (rw && pl->root_mode && S_ISDIR(st.st_mode))
			op->flags |= JAIL_OPF_IDMAP;
		if (i == 0)
			op->flags |= JAIL_OPF_WORKSPACE;
	}
	if (cfg->nbinds == 0 && (rc = plan_tmp(p, cfg, err)) < 0)
		return rc;
	if (cfg->nbinds == 0)
		plan_oneshot_home(p, cfg);
	plan_home_protect(p, cfg);

	/* /dev: a small tmpfs with the six harmless devices bound from the
	 * host, a private devpts instance, shm, and the fd links. */
	add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/dev", R));
	op = add_op(p, JAIL_OP_MOUNT, sdup(p, "%s/dev", R));
	op->src = "tmpfs";
	op->mflags = MS_NOSUID | MS_NOEXEC;
	op->data = "mode=0755,size=64k";
	const char *devs[] = {"null", "zero", "full", "random", "urandom", "tty"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(devs); i++) {
		const char *dst = sdup(p, "%s/dev/%s", R, devs[i]);
		add_op(p, JAIL_OP_MKFILE, dst);
		/* device nodes keep working: the bind keeps the host mount's
		 * (dev-allowing) flags; only nosuid is added */
		op = add_op(p, JAIL_OP_BIND, dst);
		op->src = sdup(p, "/dev/%s", devs[i]);
		op->flags = JAIL_OPF_HOSTPATH;
		op->data = "device";
		op->attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
	}
	add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/dev/pts", R));
	op = add_op(p, JAIL_OP_MOUNT, sdup(p, "%s/dev/pts", R));
	op->src = "devpts";
	op->mflags = MS_NOSUID | MS_NOEXEC;
	op->data = "newinstance,ptmxmode=0666,mode=0620";
	const struct {
		const char *name, *target;
	} links[] = {{"ptmx", "pts/ptmx"},
		     {"fd", "/proc/self/fd"},
		     {"stdin", "/proc/self/fd/0"},
		     {"stdout", "/proc/self/fd/1"},
		     {"stderr", "/proc/self/fd/2"}};
	for (size_t i = 0; i < WD_ARRAY_SIZE(links); i++) {
		op = add_op(p, JAIL_OP_SYMLINK, sdup(p, "%s/dev/%s", R, links[i].name));
		op->data = links[i].target;
	}
	add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/dev/shm", R));
	op = add_op(p, JAIL_OP_MOUNT, sdup(p, "%s/dev/shm", R));
	op->src = "tmpfs";
	op->mflags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	op->data = sdup(p, "mode=1777,size=%llu", (unsigned long long)(cfg->tmp_bytes / 2));

	/* /proc: a fresh instance for the new pid namespace, then what Docker
	 * and runc hide: kernel memory and keys, sysrq, scheduler and timer
	 * internals masked with /dev/null; kernel tunables read-only. */
	add_op(p, JAIL_OP_MKDIR, sdup(p, "%s/proc", R));
	op = add_op(p, JAIL_OP_MOUNT, sdup(p, "%s/proc", R));
	op->src = "proc";
	op->mflags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	const char *devnull = sdup(p, "%s/dev/null", R);
	const char *masked_files[] = {"kcore",	    "sysrq-trigger", "timer_list",  "sched_debug",
				      "keys",	    "latency_stats", "kmsg",	    "kallsyms",
				      "kpageflags", "kpagecount",    "kpagecgroup", "config.gz"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(masked_files); i++) {
		op = add_op(p, JAIL_OP_MASK, sdup(p, "%s/proc/%s", R, masked_files[i]));
		op->src = devnull;
		op->flags = JAIL_OPF_OPTIONAL;
	}
	/* an empty, read-only directory to hide /proc/acpi and friends */
	const char *empty = sdup(p, "%s/.empty", R);
	add_op(p, JAIL_OP_MKDIR, empty);
	const char *masked_dirs[] = {"acpi", "scsi", "asound", "firmware"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(masked_dirs); i++) {
		op = add_op(p, JAIL_OP_MASK, sdup(p, "%s/proc/%s", R, masked_dirs[i]));
		op->src = empty;
		op->flags = JAIL_OPF_OPTIONAL;
	}
	const char *ro_dirs[] = {"sys", "bus", "fs", "irq"};
	for (size_t i = 0; i < WD_ARRAY_SIZE(ro_dirs); i++) {
		const char *d = sdup(p, "%s/proc/%s", R, ro_dirs[i]);
		op = add_op(p, JAIL_OP_MASK, d); /* bind onto itself, then read-only */
		op->src = d;
		op->flags = JAIL_OPF_OPTIONAL;
	}

	/* /dev itself read-only: nothing new can appear beside the devices */
	op = add_op(p, JAIL_OP_SETATTR, sdup(p, "%s/dev", R));
	op->attr = MOUNT_ATTR_RDONLY;
	return 0;
fail:
	return rc;
}

/* ---- uid/gid maps ---- */

int
jail_write_maps(const struct jail_prep *prep, pid_t pid, struct wd_err *err)
{
	char path[64], map[64];
	int rc;
	/* Unprivileged callers must deny setgroups before writing gid_map
	 * (CVE-2014-8989: dropping groups could grant access that negative
	 * group permissions denied).  As root we keep it allowed so pid 1 can
	 * drop warden's own supplementary groups. */
	if (!prep->plan.root_mode) {
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		rc = wd_write_file_at(AT_FDCWD, path, "deny");
		if (rc < 0 && rc != -ENOENT) /* ENOENT: kernels before 3.19 */
			return wd_err_sys(err, -rc, "write %s", path);
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "%d %u 1\n", SANDBOX_ID, (unsigned)prep->host_uid);
	if ((rc = wd_write_file_at(AT_FDCWD, path, map)) < 0)
		return wd_err_sys(err, -rc, "write %s", path);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "%d %u 1\n", SANDBOX_ID, (unsigned)prep->host_gid);
	if ((rc = wd_write_file_at(AT_FDCWD, path, map)) < 0)
		return wd_err_sys(err, -rc, "write %s", path);
	return 0;
}

/* ---- the whole plan ---- */

static int
read_wipe_range(struct jail_plan *pl)
{
	/* fields 48-51 of /proc/self/stat: arg_start arg_end env_start env_end */
	char buf[1024];
	ssize_t n = wd_read_file_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf));
	if (n <= 0)
		return -EIO;
	char *s = strrchr(buf, ')');
	if (!s)
		return -EIO;
	unsigned long long v[4];
	int field = 2;
	char *save = NULL; /* strtok_r: plans are built from many threads at once */
	for (char *tok = strtok_r(s + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		field++;
		if (field >= 48 && field <= 51)
			v[field - 48] = strtoull(tok, NULL, 10);
	}
	if (field < 51)
		return -EIO;
	pl->wipe_start = (uintptr_t)v[0];
	pl->wipe_end = (uintptr_t)v[3];
	return 0;
}

/* The sandbox's base environment: empty but for these (no host value
 * leaks in); a command's own variables are merged in its cmdplan. */
static void
plan_env(struct jail_prep *p, const struct jail_config *cfg)
{
	struct jail_plan *pl = &p->plan;
	size_t ne = 0, cap = 6 + 16 + 4 + cfg->nenv + 1;
	pl->envp = prep_alloc(p, cap * sizeof(char *));
	/* the process level has no mount namespace to put a home in: the
	 * workspace, as before */
	const char *home = cfg->home	    ? cfg->home
			   : cfg->container ? JAIL_ONESHOT_HOME
					    : cfg->workspace;
	pl->envp[ne++] = sdup(p, "PATH=" JAIL_PATH);
	pl->envp[ne++] = sdup(p, "HOME=%s", home);
	pl->envp[ne++] = sdup(p, "LANG=C.UTF-8");
	pl->envp[ne++] = sdup(p, "TZ=UTC");
	if (cfg->term)
		pl->envp[ne++] = sdup(p, "TERM=%s", cfg->term);
	if (cfg->reproducible) {
		/* the same inputs give the same bytes: a fixed build date (the
		 * zip format's epoch, which every archiver can represent), no
		 * hash randomisation, one locale */
		pl->envp[ne++] = sdup(p, "SOURCE_DATE_EPOCH=315532800");
		pl->envp[ne++] = sdup(p, "PYTHONHASHSEED=0");
		pl->envp[ne++] = sdup(p, "LC_ALL=C.UTF-8");
	}
	if (cfg->net_proxy) {
		/* the only way out: warden's proxy in the jail's namespace
		 * (both spellings: curl reads lower case, most others upper) */
		static const char *const proxy_env[] = {
		    "HTTP_PROXY=http://127.0.0.1:3128",	  "http_proxy=http://127.0.0.1:3128",
		    "HTTPS_PROXY=http://127.0.0.1:3128",  "https_proxy=http://127.0.0.1:3128",
		    "ALL_PROXY=socks5h://127.0.0.1:1080", "all_proxy=socks5h://127.0.0.1:1080",
		};
		for (size_t i = 0; i < WD_ARRAY_SIZE(proxy_env); i++)
			pl->envp[ne++] = sdup(p, "%s", proxy_env[i]);
		/* the names of the jail's own loopback go direct; a loopback
		 * name an allow rule names is the host's service, reached
		 * only through the proxy (local.c) */
		const char *np = cfg->no_proxy ? cfg->no_proxy : "localhost,127.0.0.1,::1";
		pl->envp[ne++] = sdup(p, "NO_PROXY=%s", np);
		pl->envp[ne++] = sdup(p, "no_proxy=%s", np);
		if (cfg->ca_pem) {
			static const char *const ca_env[] = {
			    "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
			    "PIP_CERT",	     "GIT_SSL_CAINFO",
			};
			for (size_t i = 0; i < WD_ARRAY_SIZE(ca_env); i++)
				pl->envp[ne++] =
				    sdup(p, "%s=/etc/ssl/warden-bundle.crt", ca_env[i]);
			pl->envp[ne++] = sdup(p, "NODE_EXTRA_CA_CERTS=/etc/ssl/warden-ca.pem");
		}
	}
	for (size_t i = 0; i < cfg->nenv; i++) {
		size_t nl = strcspn(cfg->env[i], "=");
		size_t j;
		for (j = 0; j < ne; j++) /* --setenv replaces a default */
			if (!strncmp(pl->envp[j], cfg->env[i], nl + 1))
				break;
		pl->envp[j] = sdup(p, "%s", cfg->env[i]);
		if (j == ne)
			ne++;
	}
	pl->envp[ne] = NULL;
}

/* Landlock: read and execute everywhere in the jail's view, write only
 * where the jail is writable anyway; no TCP but the ports asked for; no
 * abstract sockets or signals across the sandbox boundary. */
static void
plan_landlock(struct jail_prep *p, const struct jail_config *cfg)
{
	struct jail_plan *pl = &p->plan;
	pl->landlock_abi = jail_landlock_abi();
	static const char *const ro_paths[] = {"/", NULL};
	static const char *const dev_paths[] = {"/dev/null", "/dev/zero",   "/dev/full",
						"/dev/tty",  "/dev/random", "/dev/urandom",
						"/dev/pts",  NULL};
	const char **rw = prep_alloc(p, (cfg->nbinds + 6) * sizeof(char *));
	size_t nrw = 0;
	rw[nrw++] = cfg->container ? "/workspace" : sdup(p, "%s", cfg->workspace);
	rw[nrw++] = "/tmp";
	rw[nrw++] = "/dev/shm";
	if (cfg->container)
		rw[nrw++] = sdup(p, "%s", cfg->home ? cfg->home : JAIL_ONESHOT_HOME);
	for (size_t i = 0; i < cfg->nbinds; i++)
		if (cfg->binds[i].rw)
			rw[nrw++] = sdup(p, "%s", cfg->binds[i].dst);
	/* Without a network namespace and no port asked for, sockets are
	 * AF_UNIX only: Landlock fences TCP, but UDP, ICMP and raw sockets
	 * would reach the host's network. */
	pl->seccomp =
	    (!cfg->container && cfg->nports == 0) ? &jail_seccomp_prog_nonet : &jail_seccomp_prog;
	pl->landlock.ro_paths = ro_paths;
	pl->landlock.rw_paths = rw;
	pl->landlock.dev_paths = dev_paths;
	uint16_t *ports = prep_alloc(p, (cfg->nports + 2) * sizeof(uint16_t));
	if (cfg->nports) /* memcpy from a NULL source is undefined even for 0 bytes */
		memcpy(ports, cfg->ports, cfg->nports * sizeof(uint16_t));
	size_t nports = cfg->nports;
	if (cfg->net_proxy) {
		ports[nports++] = JAIL_PROXY_HTTP_PORT;
		ports[nports++] = JAIL_PROXY_SOCKS_PORT;
	}
	pl->landlock.ports = ports;
	pl->landlock.nports = nports;
	pl->landlock.handle_net = true;
	pl->landlock.scope = true;
}

int
jail_plan_build(const struct jail_config *cfg, struct jail_prep **out, struct wd_err *err)
{
	struct jail_prep *p = map_anon(page_round(sizeof(*p))); /* zeroed */
	struct jail_plan *pl = &p->plan;
	int rc;

	pl->container = cfg->container;
	pl->net_proxy = cfg->net_proxy;
	pl->time_ns = cfg->container && cfg->time_ns;
	pl->vacant = cfg->container && cfg->vacant;
	pl->root_mode = geteuid() == 0;
	pl->sync_fd = -1;
	pl->devnull_fd = -1;
	pl->run_uid = (uid_t)-1;
	pl->run_gid = (gid_t)-1;
	p->host_uid = pl->root_mode ? WD_NOBODY : geteuid();
	p->host_gid = pl->root_mode ? WD_NOBODY : getegid();
	p->idmap = (struct jail_idmap){p->host_uid, p->host_gid, false};
	p->idmap_cache = (struct jail_idmap_cache)JAIL_IDMAP_CACHE_INIT;
	for (size_t i = 0; i < WD_ARRAY_SIZE(p->fds); i++)
		p->fds[i] = -1;
	if (cfg->ntrees > JAIL_MAX_TREES) {
		rc = wd_err_set(err, WD_E_INVAL, "too many provided trees");
		goto fail;
	}
	for (size_t i = 0; i < cfg->ntrees; i++)
		p->trees[p->ntrees++] = cfg->trees[i].fd;

	char lc[16];
	pl->last_cap = 40;
	if (wd_read_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", lc, sizeof(lc)) > 0)
		pl->last_cap = atoi(lc);

	pl->rl_core = (struct rlimit){0, 0};
	pl->rl_nofile = (struct rlimit){cfg->nofile, cfg->nofile};
	pl->rl_fsize = (struct rlimit){cfg->fsize, cfg->fsize};

	plan_env(p, cfg);
	plan_landlock(p, cfg);

	if (cfg->container) {
		pl->cwd = "/workspace";
		/* The new root is mounted over a directory of the (private,
		 * slave) copy of the host tree before the pivot. */
		static const char *const bases[] = {"/tmp", "/mnt", "/run", "/var/tmp"};
		struct stat st;
		for (size_t i = 0; i < WD_ARRAY_SIZE(bases) && !pl->new_root; i++)
			if (lstat(bases[i], &st) == 0 && S_ISDIR(st.st_mode))
				pl->new_root = bases[i];
		if (!pl->new_root) {
			rc = wd_err_set(err, WD_E_UNSUPPORTED,
					"no directory to build the jail root on (/tmp, /mnt)");
			goto fail;
		}
		if ((rc = plan_container(p, cfg, err)) < 0)
			goto fail;
		if (p->overflow) {
			rc =
			    wd_err_set(err, WD_E_INVAL, "too many mounts (limit %d)", JAIL_MAX_OPS);
			goto fail;
		}
		if (read_wipe_range(pl) < 0)
			pl->wipe_start = pl->wipe_end = 0;
	} else {
		struct stat st;
		int serr = stat(cfg->workspace, &st) < 0 ? errno : 0;
		if (serr || !S_ISDIR(st.st_mode)) {
			rc = wd_err_sys(err, serr ? serr : ENOTDIR, "workspace '%s'",
					cfg->workspace);
			if (err)
				err->code = WD_E_INVAL;
			goto fail;
		}
		pl->cwd = sdup(p, "%s", cfg->workspace);
		if (pl->root_mode) {
			/* No user namespace to hide root in: run as the
			 * workspace's owner, or nobody when that is root. */
			pl->run_uid = st.st_uid ? st.st_uid : WD_NOBODY;
			pl->run_gid = st.st_uid ? st.st_gid : WD_NOBODY;
			p->host_uid = pl->run_uid;
			p->host_gid = pl->run_gid;
		}
		for (size_t i = 0; i < cfg->nbinds; i++) {
			rc = wd_err_set(err, WD_E_INVAL,
					"--bind/--ro-bind need --isolation container ('%s')",
					cfg->binds[i].src);
			goto fail;
		}
	}
	*out = p;
	return 0;
fail:
	jail_prep_free(p);
	return rc;
}

void
jail_prep_release_sources(struct jail_prep *p)
{
	if (!p || !p->built)
		return;
	/* /dev/null too: pid 1 has its own copy, and a later command
	 * without stdin gets one opened for it (local_exec) */
	for (int i = 0; i < p->nfds; i++)
		close(p->fds[i]);
	p->nfds = 0;
	p->plan.devnull_fd = -1;
	/* no stale numbers: a later open() may reuse them */
	for (int i = 0; i < p->plan.nops; i++)
		p->plan.ops[i].fd = -1;
}

void
jail_prep_free(struct jail_prep *p)
{
	if (!p)
		return;
	jail_build_reap(p);
	for (int i = 0; i < p->nfds; i++)
		close(p->fds[i]);

	for (struct prep_chunk *c = p->chunks, *next; c; c = next) {
		next = c->next;
		munmap(c, c->len);
	}
	munmap(p, page_round(sizeof(*p)));
}

void
jail_prep_dontfork(struct jail_prep *p)
{
	if (!p || p->dontfork)
		return;
	/* Best effort: madvise fails only for a range that is not a
	 * mapping of ours, and then the prep is merely copied as before. */
	madvise(p, page_round(sizeof(*p)), MADV_DONTFORK);
	for (struct prep_chunk *c = p->chunks; c; c = c->next)
		madvise(c, c->len, MADV_DONTFORK);
	p->dontfork = true;
}

/* ---- the plan as text (warden run --print-plan) ---- */

static const char *
jail_view(const struct jail_plan *pl, const char *path)
{
	size_t n = pl->new_root ? strlen(pl->new_root) : 0;
	if (path && n && !strncmp(path, pl->new_root, n))
		return path[n] ? path + n : "/";
	return path ? path : "";
}

static void
attr_text(FILE *f, uint64_t attr, unsigned flags)
{
	fputs((attr & MOUNT_ATTR_RDONLY) ? "ro" : "rw", f);
	if (attr & MOUNT_ATTR_NOSUID)
		fputs(",nosuid", f);
	if (attr & MOUNT_ATTR_NODEV)
		fputs(",nodev", f);
	if (attr & MOUNT_ATTR_NOEXEC)
		fputs(",noexec", f);
	if (flags & JAIL_OPF_IDMAP)
		fputs(",idmapped", f);
	if (flags & JAIL_OPF_RECURSIVE)
		fputs(",recursive", f);
}

char *
jail_plan_text(const struct jail_prep *prep)
{
	const struct jail_plan *pl = &prep->plan;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		abort();
	fprintf(f, "isolation %s%s\n", pl->container ? "container" : "process",
		pl->root_mode ? " (as root: the sandbox user is host nobody)" : "");
	for (int i = 0; i < pl->nops; i++) {
		const struct jail_op *op = &pl->ops[i];
		const char *path = jail_view(pl, op->path);
		switch (op->kind) {
		case JAIL_OP_MKDIR:
			fprintf(f, "mkdir %s\n", path);
			break;
		case JAIL_OP_MKFILE:
			fprintf(f, "create %s\n", path);
			break;
		case JAIL_OP_SYMLINK:
			fprintf(f, "symlink %s -> %s\n", path, op->data);
			break;
		case JAIL_OP_WRITE:
			fprintf(f, "write %s (%zu bytes)\n", path, op->len);
			break;
		case JAIL_OP_COPY:
			fprintf(f, "copy %s from host %s\n", path, op->src ? op->src : "?");
			break;
		case JAIL_OP_BIND:
		case JAIL_OP_MOVE:
			/* a host source is a host path: shown as it is */
			if (op->flags & JAIL_OPF_PROVIDED) {
				fprintf(f, "bind %s (detached tree) on %s (", op->data, path);
				attr_text(f, op->attr, op->flags);
				fputs(")\n", f);
				break;
			}
			fprintf(f, "bind %s%s on %s (",
				(op->flags & JAIL_OPF_HOSTPATH) ? "host " : "",
				op->src ? ((op->flags & JAIL_OPF_HOSTPATH) ? op->src
									   : jail_view(pl, op->src))
					: "(detached tree)",
				path);
			attr_text(f, op->attr, op->flags);
			fputs(")\n", f);
			break;
		case JAIL_OP_MOUNT:
			fprintf(f, "mount %s on %s%s%s\n", op->src, path, op->data ? " " : "",
				op->data ? op->data : "");
			break;
		case JAIL_OP_SETATTR:
			fprintf(f, "setattr %s (", path);
			attr_text(f, op->attr, op->flags);
			fputs(")\n", f);
			break;
		case JAIL_OP_MASK:
			fprintf(f, "mask %s with %s%s\n", path, jail_view(pl, op->src),
				(op->flags & JAIL_OPF_OPTIONAL) ? " (if present)" : "");
			break;
		case JAIL_OP_PROTECT:
			fprintf(f, "protect %s/%s read-only (if present)%s\n", path, op->data,
				(op->flags & JAIL_OPF_LATE) ? " after the workspace is attached"
							    : "");
			break;
		}
	}
	if (pl->container)
		fprintf(f, "pivot_root to the new root; / read-only\n");
	if (pl->vacant)
		fprintf(f, "/workspace empty until a workspace is attached (warm pool)\n");
	fprintf(f, "cwd %s\n", pl->cwd ? pl->cwd : "");
	for (size_t i = 0; pl->envp && pl->envp[i]; i++) {
		size_t nl = strcspn(pl->envp[i], "=");
		/* names only: values can be secrets */
		fprintf(f, "env %.*s\n", (int)nl, pl->envp[i]);
	}
	fprintf(f, "landlock abi %d: read everywhere, write", pl->landlock_abi);
	for (size_t i = 0; pl->landlock.rw_paths && pl->landlock.rw_paths[i]; i++)
		fprintf(f, " %s", pl->landlock.rw_paths[i]);
	fprintf(f, "; tcp ports");
	for (size_t i = 0; i < pl->landlock.nports; i++)
		fprintf(f, " %u", (unsigned)pl->landlock.ports[i]);
	fprintf(f, pl->landlock.nports ? "\n" : " none\n");
	fprintf(f, "seccomp %s\n",
		pl->seccomp == &jail_seccomp_prog_nonet ? "default, sockets AF_UNIX only"
							: "default");
	fprintf(f, "rlimits core 0, nofile %llu, fsize %llu\n",
		(unsigned long long)pl->rl_nofile.rlim_cur,
		(unsigned long long)pl->rl_fsize.rlim_cur);
	if (pl->run_uid != (uid_t)-1)
		fprintf(f, "commands run as uid %u gid %u\n", (unsigned)pl->run_uid,
			(unsigned)pl->run_gid);
	if (pl->time_ns)
		fprintf(f, "time namespace: monotonic and boot clocks start near 1 s\n");
	if (pl->net_proxy)
		fprintf(f, "network: loopback, warden's proxy at 127.0.0.1:%d (SOCKS %d, DNS %d)\n",
			JAIL_PROXY_HTTP_PORT, JAIL_PROXY_SOCKS_PORT, JAIL_DNS_PORT);
	else if (pl->container)
		fprintf(f, "network: loopback only\n");
	fclose(f);
	return text;
}
