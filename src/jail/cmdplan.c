/* jail/cmdplan: the plan of one command, built by the supervisor and read
 * by the command's own process inside the jail.
 *
 * A sandbox outlives its first command, so a command's argv, environment
 * and execve candidates cannot be part of the plan pid 1 was cloned with.
 * They travel as a sealed memfd in SYNC_EXEC: one flat, self-describing
 * block (no pointers), mapped copy-on-write by pid 1, which builds the
 * argv/envp arrays in a fresh anonymous mapping.  The reader, pid 1,
 * allocates nothing through malloc (it is a raw clone of a
 * possibly multithreaded supervisor) and checks every offset, although
 * only warden writes the block; the command's process, which shares pid
 * 1's memory until its execve, uses the mapping, and pid 1 unmaps it once
 * the command has exec'd or died.
 *
 * Layout: struct jail_cmd_hdr, then NUL-terminated strings in order:
 * argc argv words, nenv NAME=VALUE entries, npaths execve candidates, and
 * the working directory. */
#include "jail/jail.h"
#include "jail/raw.h"

#include <fcntl.h>
#include <linux/memfd.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define CMD_MAGIC 0x50434457u /* "WDCP" */
/* The kernel's own bound for argv + envp is a quarter of the stack limit
 * (2 MiB by default); a plan this size is refused before it is sent. */
#define CMD_MAX_BYTES (4u << 20)
#define CMD_MAX_WORDS 65536u

struct jail_cmd_hdr {
	uint32_t magic;
	uint32_t size; /* whole block, header included */
	uint32_t argc, nenv, npaths;
	uint32_t reserved;
};

static const char *const jail_path_dirs[] = {
    "/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin",
};

struct blob {
	char *p;
	size_t len, cap;
};

static void
put(struct blob *b, const char *s)
{
	size_t n = strlen(s) + 1;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = wd_xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* Whether name=... appears in env (NAME= prefix match). */
static bool
env_has(const char *const *env, size_t n, const char *entry)
{
	size_t nl = strcspn(entry, "=");
	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], entry, nl + 1))
			return true;
	return false;
}

int
jail_cmd_plan_build(const struct jail_cmd_spec *cs, struct wd_err *err)
{
	struct blob b = {0};
	struct jail_cmd_hdr h = {.magic = CMD_MAGIC};
	int fd = -1, rc;

	b.cap = 4096;
	b.p = wd_xmalloc(b.cap);
	b.len = sizeof(h);
	for (h.argc = 0; cs->argv[h.argc]; h.argc++)
		put(&b, cs->argv[h.argc]);
	if (h.argc == 0) {
		rc = wd_err_set(err, WD_E_INVAL, "no program given");
		goto out;
	}
	/* The command's additions replace a sandbox default of the same name:
	 * base entries that an addition names are skipped. */
	size_t nadd = 0;
	while (cs->env_add && cs->env_add[nadd])
		nadd++;
	for (size_t i = 0; cs->env_base && cs->env_base[i]; i++) {
		if (env_has(cs->env_add, nadd, cs->env_base[i]))
			continue;
		put(&b, cs->env_base[i]);
		h.nenv++;
	}
	for (size_t i = 0; i < nadd; i++) {
		put(&b, cs->env_add[i]);
		h.nenv++;
	}
	/* execve candidates along the jail's PATH: no execvp, whose PATH
	 * would be warden's own, and no shell. */
	const char *prog = cs->argv[0];
	if (strchr(prog, '/')) {
		put(&b, prog);
		h.npaths = 1;
	} else {
		for (size_t i = 0; i < WD_ARRAY_SIZE(jail_path_dirs); i++) {
			char path[4096];
			if (snprintf(path, sizeof(path), "%s/%s", jail_path_dirs[i], prog) >=
			    (int)sizeof(path)) {
				rc = wd_err_set(err, WD_E_INVAL, "program name too long");
				goto out;
			}
			put(&b, path);
			h.npaths++;
		}
	}
	put(&b, cs->cwd);
	if (b.len > CMD_MAX_BYTES || h.argc + h.nenv > CMD_MAX_WORDS) {
		rc = wd_err_set(err, WD_E_INVAL,
				"the command and its environment are too large (%zu bytes, at "
				"most %u)",
				b.len, CMD_MAX_BYTES);
		goto out;
	}
	h.size = (uint32_t)b.len;
	memcpy(b.p, &h, sizeof(h));

	fd = (int)syscall(SYS_memfd_create, "warden-cmd", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		rc = wd_err_sys(err, errno, "memfd_create");
		goto out;
	}
	if ((rc = wd_write_all(fd, b.p, b.len)) < 0) {
		rc = wd_err_sys(err, -rc, "write the command's plan");
		goto out;
	}
	/* Sealed: whoever holds a copy of the descriptor reads what was
	 * written here, and nothing else. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = wd_err_sys(err, errno, "seal the command's plan");
		goto out;
	}
	rc = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	free(b.p);
	return rc;
}

/* Child side from here on: system calls only. */

static const char *
next_string(const char **cur, const char *end)
{
	const char *s = *cur;
	if (s >= end)
		return NULL;
	const char *nul = memchr(s, '\0', (size_t)(end - s));
	if (!nul)
		return NULL;
	*cur = nul + 1;
	return s;
}

int
jail_cmd_plan_map(int fd, struct jail_cmd *out)
{
	struct stat st;
	if (raw_fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < (off_t)sizeof(struct jail_cmd_hdr) || st.st_size > (off_t)CMD_MAX_BYTES)
		return -EINVAL;
	size_t size = (size_t)st.st_size;
	/* MAP_PRIVATE: the strings must be writable for execve's char *const
	 * argv[], and a private copy leaves the sealed original alone. */
	memset(out, 0, sizeof(*out));
	char *base = raw_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	out->map = base;
	out->map_len = size;
	struct jail_cmd_hdr h;
	memcpy(&h, base, sizeof(h));
	if (h.magic != CMD_MAGIC || h.size != size || h.argc == 0 ||
	    h.npaths > JAIL_MAX_PATH_CANDIDATES || h.argc + h.nenv > CMD_MAX_WORDS)
		return -EINVAL;
	size_t nptr = (size_t)h.argc + 1 + h.nenv + 1;
	char **ptrs = raw_mmap(NULL, nptr * sizeof(char *), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ptrs == MAP_FAILED)
		return -errno;
	out->ptrs = ptrs;
	out->ptrs_len = nptr * sizeof(char *);
	const char *cur = base + sizeof(h), *end = base + size;
	out->argv = ptrs;
	for (uint32_t i = 0; i < h.argc; i++)
		if (!(out->argv[i] = (char *)(uintptr_t)next_string(&cur, end)))
			return -EINVAL;
	out->argv[h.argc] = NULL;
	out->envp = ptrs + h.argc + 1;
	for (uint32_t i = 0; i < h.nenv; i++)
		if (!(out->envp[i] = (char *)(uintptr_t)next_string(&cur, end)))
			return -EINVAL;
	out->envp[h.nenv] = NULL;
	for (uint32_t i = 0; i < h.npaths; i++)
		if (!(out->paths[i] = next_string(&cur, end)))
			return -EINVAL;
	out->paths[h.npaths] = NULL;
	if (!(out->cwd = next_string(&cur, end)))
		return -EINVAL;
	return 0;
}

void
jail_cmd_plan_unmap(struct jail_cmd *cmd)
{
	if (cmd->map)
		raw_munmap(cmd->map, cmd->map_len);
	if (cmd->ptrs)
		raw_munmap(cmd->ptrs, cmd->ptrs_len);
	cmd->map = cmd->ptrs = NULL;
}
