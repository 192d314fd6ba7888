/* jail/landlock: Landlock as a second fence behind the mounts (landlock.h).
 *
 * The mounts already decide what the jail can see; Landlock decides what it
 * may do with it, enforced by the kernel on every path walk and socket call
 * whatever the mount table says.  It matters most where the mounts are
 * missing (`--isolation process`) or wrong (a bind that should have been
 * read-only), and its scopes close two channels mounts cannot: abstract
 * unix sockets (named in the network namespace, not the filesystem, so in
 * process-level isolation the host's are all reachable) and signals to
 * processes outside the domain.
 *
 * Rights are negotiated the way the kernel's sample (samples/landlock/
 * sandboxer.c) does: start from everything this file knows and remove what
 * the running ABI lacks, so one binary handles every kernel from 5.13 on.
 * Everything here runs in the child between clone() and execve(): raw
 * syscalls, no allocation, no formatting (CONTRIBUTING.md, "Code"). */
#include "jail/landlock.h"

#include "jail/jail.h"
#include "jail/raw.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* Debian 12's linux-libc-dev (6.1) stops at ABI 2; the values are ABI. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3, Linux 6.2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5, Linux 6.10 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP /* ABI 4, Linux 6.7 */
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define LANDLOCK_RULE_NET_PORT 2
struct landlock_net_port_attr {
	__u64 allowed_access;
	__u64 port;
};
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET /* ABI 6, Linux 6.12 */
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef SYS_landlock_create_ruleset /* the same on every architecture */
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* The ruleset attribute as of ABI 6.  The kernel copies only the size we
 * pass, so older kernels get the prefix they know (ABI 1-3: fs only;
 * ABI 4-5: + net; ABI 6+: + scoped) and never see a field they would
 * reject. */
struct ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;
	__u64 scoped;
};

/* clang-format off */
#define ACCESS_FS_ROUGHLY_READ ( \
	LANDLOCK_ACCESS_FS_EXECUTE | \
	LANDLOCK_ACCESS_FS_READ_FILE | \
	LANDLOCK_ACCESS_FS_READ_DIR)

#define ACCESS_FS_ABI1 ( \
	LANDLOCK_ACCESS_FS_EXECUTE | \
	LANDLOCK_ACCESS_FS_WRITE_FILE | \
	LANDLOCK_ACCESS_FS_READ_FILE | \
	LANDLOCK_ACCESS_FS_READ_DIR | \
	LANDLOCK_ACCESS_FS_REMOVE_DIR | \
	LANDLOCK_ACCESS_FS_REMOVE_FILE | \
	LANDLOCK_ACCESS_FS_MAKE_CHAR | \
	LANDLOCK_ACCESS_FS_MAKE_DIR | \
	LANDLOCK_ACCESS_FS_MAKE_REG | \
	LANDLOCK_ACCESS_FS_MAKE_SOCK | \
	LANDLOCK_ACCESS_FS_MAKE_FIFO | \
	LANDLOCK_ACCESS_FS_MAKE_BLOCK | \
	LANDLOCK_ACCESS_FS_MAKE_SYM)

#define ACCESS_FS_ALL ( \
	ACCESS_FS_ABI1 | \
	LANDLOCK_ACCESS_FS_REFER | \
	LANDLOCK_ACCESS_FS_TRUNCATE | \
	LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* The rights that make sense on a file, as opposed to a directory (the
 * kernel's ACCESS_FILE in security/landlock/fs.c). */
#define ACCESS_FILE ( \
	LANDLOCK_ACCESS_FS_EXECUTE | \
	LANDLOCK_ACCESS_FS_WRITE_FILE | \
	LANDLOCK_ACCESS_FS_READ_FILE | \
	LANDLOCK_ACCESS_FS_TRUNCATE | \
	LANDLOCK_ACCESS_FS_IOCTL_DEV)

#define ACCESS_DEV ( \
	LANDLOCK_ACCESS_FS_READ_FILE | \
	LANDLOCK_ACCESS_FS_WRITE_FILE | \
	LANDLOCK_ACCESS_FS_IOCTL_DEV | \
	LANDLOCK_ACCESS_FS_TRUNCATE)
/* clang-format on */

int
jail_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	/* ENOSYS: built without CONFIG_SECURITY_LANDLOCK; EOPNOTSUPP: built in
	 * but not in the lsm= list at boot.  Either way: no Landlock. */
	return abi > 0 ? (int)abi : 0;
}

int
jail_landlock_required(bool container, int abi, bool best_effort, struct wd_err *err)
{
	/* Why: at the process level the command runs in the host's mount
	 * namespace as a host uid; Landlock is what keeps its writes to the
	 * workspace, /tmp and /dev/shm.  Without it every directory that uid
	 * may write (the caller's home, other projects, warden's state) is
	 * open, so running silently unfenced is worse than an error, as for
	 * a missing cgroup (supervise/local.c). */
	if (container || abi > 0 || best_effort)
		return 0;
	return wd_err_set(err, WD_E_UNSUPPORTED,
			  "--isolation process needs Landlock to fence the command's writes, and "
			  "this kernel has none (built without CONFIG_SECURITY_LANDLOCK, or "
			  "'landlock' not in its lsm= list); use --isolation container, or "
			  "--best-effort to run without the write fence");
}

/* The filesystem rights ABI abi can handle (the sample's switch).
 *
 * ABI 1 cannot handle REFER, and the kernel then refuses every rename or
 * link across directories with EXDEV, even inside rw_paths (landlock(7),
 * "Previous limitations"): tools fall back to copy+unlink, as across
 * filesystems.  From ABI 2, REFER is handled and granted on rw_paths. */
static __u64
fs_rights_for(int abi)
{
	__u64 fs = ACCESS_FS_ALL;
	if (abi < 2)
		fs &= ~LANDLOCK_ACCESS_FS_REFER; /* ABI 2: cross-directory rename/link */
	if (abi < 3)
		fs &= ~LANDLOCK_ACCESS_FS_TRUNCATE; /* ABI 3: truncate(2), O_TRUNC */
	if (abi < 5)
		fs &= ~LANDLOCK_ACCESS_FS_IOCTL_DEV; /* ABI 5: ioctl on device files */
	return fs;
}

/* Add one path-beneath rule for each path of list with rights (already
 * masked to the handled set).
 *
 * What a rule accepts depends on what the path is.  A rule on a directory
 * grants its rights on the directory and everything beneath it, and may
 * carry any filesystem right (the MAKE_* and REMOVE_* rights act on the
 * directory's entries).  A rule on any other file grants rights on that
 * file alone and may carry only file rights (ACCESS_FILE: execute, read,
 * write, truncate, ioctl_dev); a directory right on a file makes
 * landlock_add_rule fail with EINVAL.  So a non-directory's rights are
 * masked to ACCESS_FILE, and a rule left with nothing is not added (an
 * empty allowed_access is ENOMSG). */
static int
add_paths(int ruleset, const char *const *list, __u64 rights, struct wd_err *err)
{
	for (; list && *list; list++) {
		int fd = raw_open(*list, O_PATH | O_CLOEXEC, 0);
		if (fd < 0) {
			/* Tolerated: the caller lists paths that exist on some hosts
			 * only (/lib64, /etc/alternatives); a rule for nothing is
			 * nothing to grant. */
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			return wd_err_step(err, JAIL_STEP_6F_LANDLOCK, errno);
		}
		struct stat st;
		if (raw_fstat(fd, &st) < 0) {
			int e = errno;
			raw_close(fd);
			return wd_err_step(err, JAIL_STEP_6F_LANDLOCK, e);
		}
		struct landlock_path_beneath_attr pb = {
		    .allowed_access = S_ISDIR(st.st_mode) ? rights : rights & ACCESS_FILE,
		    .parent_fd = fd,
		};
		long rc = 0;
		if (pb.allowed_access)
			rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH,
				     &pb, 0);
		int e = errno;
		raw_close(fd);
		if (rc < 0)
			return wd_err_step(err, JAIL_STEP_6F_LANDLOCK, e);
	}
	return 0;
}

int
jail_landlock_ruleset(const struct jail_landlock_rules *rules, int abi, struct wd_err *err)
{
	if (abi <= 0)
		return wd_err_step(err, JAIL_STEP_6F_LANDLOCK, EOPNOTSUPP);

	struct ruleset_attr attr = {.handled_access_fs = fs_rights_for(abi)};
	size_t attr_size = sizeof(attr.handled_access_fs);
	/* TCP bind and connect (ABI 4).  Handled means denied unless a port
	 * rule allows it; UDP and other protocols are not covered by Landlock
	 * (the network namespace and seccomp's family list fence those). */
	if (rules->handle_net && abi >= 4) {
		attr.handled_access_net =
		    LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
		attr_size = offsetof(struct ruleset_attr, scoped);
	}
	/* Scopes (ABI 6): the domain may not connect to an abstract unix
	 * socket created outside it (a host's D-Bus or X11 abstract socket
	 * in process-level isolation) nor signal a process outside it (the
	 * supervisor, the user's shell). */
	if (rules->scope && abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		attr_size = sizeof(attr);
	}

	int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (ruleset < 0)
		return wd_err_step(err, JAIL_STEP_6F_LANDLOCK, errno);

	const __u64 fs = attr.handled_access_fs;
	int rc = add_paths(ruleset, rules->ro_paths, ACCESS_FS_ROUGHLY_READ & fs, err);
	if (rc == 0)
		rc = add_paths(ruleset, rules->rw_paths, fs, err);
	if (rc == 0)
		rc = add_paths(ruleset, rules->dev_paths, ACCESS_DEV & fs, err);
	for (size_t i = 0; rc == 0 && attr.handled_access_net && i < rules->nports; i++) {
		struct landlock_net_port_attr np = {
		    .allowed_access = attr.handled_access_net,
		    .port = rules->ports[i],
		};
		if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_NET_PORT, &np, 0) < 0)
			rc = wd_err_step(err, JAIL_STEP_6F_LANDLOCK, errno);
	}
	if (rc < 0) {
		raw_close(ruleset);
		return rc;
	}
	return ruleset;
}

int
jail_landlock_restrict(int ruleset)
{
	/* landlock_restrict_self needs NoNewPrivs unless the caller holds
	 * CAP_SYS_ADMIN (like seccomp: a restricted process must not exec a
	 * setuid program that would run confused by the restriction).  The
	 * jail has set it already (step 6e); setting it again is a no-op and
	 * keeps this function correct on its own.
	 *
	 * No restrict_self flags (ABI 7's LOG_*): the defaults log denials of
	 * warden's own code before execve (there should be none) and not the
	 * command's, which would only flood the audit log. */
	if (jail_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		return -errno;
	return 0;
}

int
jail_landlock_apply(const struct jail_landlock_rules *rules, int abi, struct wd_err *err)
{
	int ruleset = jail_landlock_ruleset(rules, abi, err);
	if (ruleset < 0)
		return ruleset;
	int rc = jail_landlock_restrict(ruleset);
	if (rc < 0)
		wd_err_step(err, JAIL_STEP_6F_LANDLOCK, -rc);
	close(ruleset);
	return rc;
}
