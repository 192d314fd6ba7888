/* jail/seccomp_rules: what the jail's seccomp filter refuses, and why.
 *
 * The filter is a deny list over a default of ALLOW, like Docker's and
 * bubblewrap's: the command is an ordinary program (a compiler, a test
 * suite, python) and must keep every ordinary syscall, while the calls below
 * either reach kernel state shared with the host, widen the kernel attack
 * surface far beyond what a build needs, or undo the jail's other fences.
 * The refusal is ERRNO, not KILL: programs probe for features (glibc tries
 * clone3 before clone, libuv tries io_uring before epoll) and must see a
 * clean failure, not die.  EPERM reads as "not allowed here"; ENOSYS is used
 * where the caller must take a fallback path.
 *
 * A default-allow list goes stale as the kernel grows, so the hand-written
 * prelude (jail_seccomp_prelude) also refuses every syscall number above
 * JAIL_SECCOMP_MAX_NR with ENOSYS: a syscall added after this table was
 * reviewed stays off until someone reviews it (Linux 6.15's open_tree_attr
 * is the example: a mount-API call libseccomp 2.5.4 has never heard of).
 *
 * The table is compiled to BPF at build time by gen-seccomp.c; the jail only
 * loads the result (seccomp.c).  The unit tests rebuild it here and check
 * the libseccomp rendering (sim layer) and load the generated program on
 * themselves (live layer). */
#include "jail/seccomp_rules.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sys/stat.h>

/* clang-format off */
/* Syscalls libseccomp 2.5.4 cannot name, by number.  Numbers from 424 up
 * are the same on every architecture (the syscall tables were unified at
 * pidfd_send_signal), except alpha, which adds 110. */
#if defined(__alpha__)
#error "seccomp_rules.c: alpha numbers new syscalls differently; add them"
#endif
#define NR_OPEN_TREE_ATTR 467

struct refusal {
	const char *name; /* libseccomp's name */
	int nr;           /* used when libseccomp does not know the name, else 0 */
	int err;          /* errno returned */
};

/* Refused whatever the arguments.  One line of "why" each; the longer story
 * is in the group comment. */
static const struct refusal refusals[] = {
	/* -- Mounts.  A jailed command never needs to mount: the mount plan is
	 * finished before it starts.  Inside a user namespace it owns, mount
	 * syscalls reach filesystem parsers that are otherwise root-only, which
	 * is how CVE-2022-0185 (fsconfig heap overflow) became an escape. */
	{ "mount", 0, EPERM },            /* legacy mount(2): binds, remounts, new filesystems */
	{ "umount", 0, EPERM },           /* unmounting a mask would reveal what it hides */
	{ "umount2", 0, EPERM },          /* same, with flags (MNT_DETACH) */
	{ "fsopen", 0, EPERM },           /* new mount API: filesystem context (CVE-2022-0185) */
	{ "fsconfig", 0, EPERM },         /* new mount API: feeds the fs parser (CVE-2022-0185) */
	{ "fsmount", 0, EPERM },          /* new mount API: turns a context into a mount */
	{ "fspick", 0, EPERM },           /* new mount API: reconfigures an existing mount */
	{ "move_mount", 0, EPERM },       /* new mount API: attaches/moves mounts */
	{ "open_tree", 0, EPERM },        /* clones mount trees (OPEN_TREE_CLONE) */
	{ "open_tree_attr", NR_OPEN_TREE_ATTR, EPERM }, /* Linux 6.15: open_tree + mount_setattr */
	{ "mount_setattr", 0, EPERM },    /* would clear MOUNT_ATTR_RDONLY/NOSUID or idmap */
	{ "pivot_root", 0, EPERM },       /* changing the root is the jail's job, done once */
	{ "chroot", 0, EPERM },           /* chroot-in-chroot is the classic breakout pattern */

	/* -- Namespaces.  New namespaces give the command a user namespace in
	 * which it is root, so every CAP_SYS_ADMIN-in-userns code path (netfilter,
	 * mounts, ...) becomes reachable; most unprivileged-userns kernel exploits
	 * start there.  clone() is filtered on its flags below. */
	{ "unshare", 0, EPERM },          /* new namespaces for the caller itself */
	{ "setns", 0, EPERM },            /* joining another namespace (e.g. via a leaked fd) */
	/* clone3 takes its flags inside struct clone_args in user memory, which
	 * a seccomp filter cannot dereference (seccomp_data holds only register
	 * arguments), so CLONE_NEW* cannot be checked there.  ENOSYS, not EPERM:
	 * glibc >= 2.34 (pthread_create, posix_spawn) then falls back to clone(),
	 * whose flags are a register we do filter. */
	{ "clone3", 0, ENOSYS },

	/* -- Other processes.  Everything in the jail runs as one uid, warden's
	 * pid 1 included; ptrace-class access would let the command read and
	 * steer it, and before Linux 4.8 a tracer could rewrite a syscall after
	 * the seccomp check, bypassing the filter entirely. */
	{ "ptrace", 0, EPERM },           /* read/write registers and memory of a process */
	{ "process_vm_readv", 0, EPERM }, /* ptrace-class memory read */
	{ "process_vm_writev", 0, EPERM },/* ptrace-class memory write */
	{ "process_madvise", 0, EPERM },  /* advice on another process's memory (ptrace-class) */
	{ "pidfd_getfd", 0, EPERM },      /* duplicates another process's fd (ptrace-class) */
	{ "kcmp", 0, EPERM },             /* compares kernel pointers of two processes: ptrace-class, leaks ordering */

	/* -- Large kernel attack surface no build or test needs. */
	{ "bpf", 0, EPERM },              /* verifier bugs are routine local roots (CVE-2021-3490) */
	{ "perf_event_open", 0, EPERM },  /* CVE-2013-2094 and hardware side channels */
	{ "userfaultfd", 0, EPERM },      /* pauses kernel copy_from_user at will: the tool for winning kernel races */
	{ "io_uring_setup", 0, EPERM },   /* its operations bypass this filter; many CVEs (CVE-2022-29582) */
	{ "io_uring_enter", 0, EPERM },   /* same */
	{ "io_uring_register", 0, EPERM },/* same */
	{ "keyctl", 0, EPERM },           /* keyrings are not namespaced (CVE-2016-0728) */
	{ "add_key", 0, EPERM },          /* same */
	{ "request_key", 0, EPERM },      /* same; can also upcall to a host helper */
	{ "uselib", 0, EPERM },           /* a.out-era library loader, pure attack surface (CVE-2004-1235) */
	{ "modify_ldt", 0, EPERM },       /* x86 16-bit segments, the CVE-2015-3290 (espfix64) vector */
	{ "lookup_dcookie", 0, EPERM },   /* oprofile relic: resolves dentry cookies to paths */
	{ "nfsservctl", 0, EPERM },       /* removed in Linux 3.1; refused should an old kernel have it */
	/* NUMA: migrate_pages and move_pages move pages of *another* pid (and
	 * shared page-cache pages) between nodes; only numactl-style admin tools
	 * use them and Docker reserves them for CAP_SYS_NICE.  mbind,
	 * set_mempolicy and get_mempolicy stay allowed: they act on the caller's
	 * own allocations, and JVMs and OpenMP runtimes call them. */
	{ "migrate_pages", 0, EPERM },
	{ "move_pages", 0, EPERM },

	/* -- Host-wide state.  Most need a capability the command lacks; they
	 * are refused anyway so that a capability leak (a setuid file the mounts
	 * missed, a kernel bug) does not turn into control of the host. */
	{ "kexec_load", 0, EPERM },       /* loads a new kernel */
	{ "kexec_file_load", 0, EPERM },  /* same */
	{ "init_module", 0, EPERM },      /* loads kernel code */
	{ "finit_module", 0, EPERM },     /* same, from an fd */
	{ "delete_module", 0, EPERM },    /* unloads kernel code */
	{ "reboot", 0, EPERM },           /* reboot/halt the host (in a pid ns: kill its pid 1) */
	{ "swapon", 0, EPERM },           /* host memory configuration */
	{ "swapoff", 0, EPERM },          /* same */
	{ "acct", 0, EPERM },             /* writes a record to a file of its choosing at every exit */
	{ "quotactl", 0, EPERM },         /* host quota configuration */
	{ "quotactl_fd", 0, EPERM },      /* same, by fd */
	{ "syslog", 0, EPERM },           /* kernel log: kernel addresses, other users' activity */
	{ "iopl", 0, EPERM },             /* raw I/O ports */
	{ "ioperm", 0, EPERM },           /* same */
	/* The clock is global: time namespaces offset only the monotonic and
	 * boot clocks.  The read-only forms (adjtimex with modes 0) go too;
	 * only NTP tools use them. */
	{ "settimeofday", 0, EPERM },
	{ "clock_settime", 0, EPERM },
	{ "clock_adjtime", 0, EPERM },
	{ "adjtimex", 0, EPERM },
	/* File handles bypass path lookup, so bind mounts, masks and Landlock's
	 * path rules do not apply: the 2014 "shocker" Docker escape read the
	 * host's /etc/shadow with open_by_handle_at. */
	{ "open_by_handle_at", 0, EPERM },
	{ "name_to_handle_at", 0, EPERM }, /* produces the handles; refused with its partner */
	{ "vhangup", 0, EPERM },          /* hangs up the controlling terminal, warden's own included */
};

/* clone() flags creating a namespace.  CLONE_NEWTIME is absent on purpose:
 * its bit (0x80) lies in clone()'s exit-signal byte, so clone() cannot ask
 * for it (only clone3 and unshare can, both refused above). */
static const unsigned long clone_ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

/* ioctl commands refused on every fd.  The kernel takes the command as an
 * unsigned int, so the rule compares the low 32 bits only: a caller setting
 * high bits would otherwise slip past an exact 64-bit comparison while the
 * kernel still runs TIOCSTI (flatpak's CVE-2019-10063). */
static const struct {
	unsigned long cmd;
} ioctl_refusals[] = {
	/* Pushes bytes into the input of the terminal the fd names: with the
	 * caller's tty inherited, the command types into the user's shell after
	 * warden exits (CVE-2017-5226, bubblewrap).  setsid() in the jail is the
	 * first fence, this is the second. */
	{ TIOCSTI },
	/* Linux virtual consoles: TIOCL_PASTESEL and friends inject text into
	 * the console the same way (CVE-2023-1523, snapd). */
	{ TIOCLINUX },
	/* Sets a tty line discipline, autoloading rarely-used ldisc modules
	 * (n_hdlc's double free was CVE-2017-2636); only pppd/slattach use it. */
	{ TIOCSETD },
};
/* clang-format on */

/* The argument index of clone()'s flags: s390 swaps the first two. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

/* Where the rules go: libseccomp (jail_seccomp_build) or another renderer
 * (jail_seccomp_walk).  Every rule is a refusal with an errno. */
struct sink {
	jail_seccomp_rule_fn fn;
	void *data;
};

static int
add(const struct sink *s, int err, int nr, unsigned nargs, const struct scmp_arg_cmp *cmp)
{
	return s->fn(s->data, err, nr, nargs, cmp);
}

/* Resolve r to a native syscall number: > 0, or 0 when this architecture
 * does not have it (iopl on arm64, umount on x86_64), which is not an
 * error: there is nothing to refuse. */
static int
resolve(const struct refusal *r)
{
	int nr = seccomp_syscall_resolve_name(r->name);
	if (nr >= 0)
		return nr;
	if (nr == __NR_SCMP_ERROR && r->nr > 0)
		return r->nr; /* newer than libseccomp: the shared number */
	return -1;
}

/* socket() and socketpair(): only AF_UNIX, AF_INET and AF_INET6.  Everything
 * else (netlink, packet, vsock, bluetooth, alg, rds, tipc, ...) is kernel
 * attack surface a build does not need; AF_PACKET alone was CVE-2016-8655
 * and CVE-2017-7308, AF_ALG CVE-2015-8970.  The filter sees the 64-bit
 * register while the kernel reads an int, so "refuse unless exactly 1, 2 or
 * 10" is written as: every value in 0..AF_INET6 but the three, and anything
 * greater than AF_INET6 (which covers values with high bits set, negative
 * ints included, at the price of refusing some the kernel would truncate to
 * an allowed family: no honest caller passes those).  EPERM like the rest;
 * glibc's one netlink user (getaddrinfo's interface check) treats any
 * failure as "no information" and carries on.
 *
 * With JAIL_SECCOMP_NO_INET, AF_INET and AF_INET6 go too.  That variant is
 * for the process level without network: there is no network namespace,
 * and Landlock fences only TCP bind/connect, so UDP (DNS tunnelling), ping
 * sockets and raw sockets would otherwise reach the host's network. */
static int
add_socket_rules(const struct sink *ctx, const char *name, bool no_inet)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr < 0)
		return 0; /* socketcall architectures: see the bad-arch note below */
	for (unsigned long fam = 0; fam <= AF_INET6; fam++) {
		if (fam == AF_UNIX || (!no_inet && (fam == AF_INET || fam == AF_INET6)))
			continue;
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, fam);
		int rc = add(ctx, EPERM, nr, 1, &c);
		if (rc < 0)
			return rc;
	}
	struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_GT, AF_INET6);
	return add(ctx, EPERM, nr, 1, &c);
}

/* No setuid or setgid bit may be set from inside the jail.  As root, a
 * root-owned workspace is idmapped so that the sandbox user (host nobody)
 * owns it and what it creates belongs to root on the host, as the
 * workspace's owner: the jail's nosuid mount stops such a bit working
 * inside, but on the host a "chmod 4755" file in the workspace would be a
 * setuid-root binary for anyone who can reach it.  So every way of setting
 * a mode carries a check of S_ISUID and S_ISGID: chmod, fchmod, fchmodat,
 * fchmodat2 (mode), open/openat/creat when creating (O_CREAT or
 * O_TMPFILE), mknod/mknodat.  openat2 hides its mode in a struct seccomp
 * cannot read, so it is refused with ENOSYS and callers fall back to
 * openat.  Directories inherit setgid from a setgid parent without any of
 * these calls; the kernel does that, not the command. */
#define NR_FCHMODAT2 452
#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif
static int
add_setid_rules(const struct sink *ctx, unsigned *count)
{
	static const struct {
		const char *name;
		int nr;
		int mode_arg;  /* index of the mode argument */
		int flags_arg; /* index of open flags, or -1 */
	} calls[] = {
	    {"chmod", 0, 1, -1},    {"fchmod", 0, 1, -1},
	    {"fchmodat", 0, 2, -1}, {"fchmodat2", NR_FCHMODAT2, 2, -1},
	    {"creat", 0, 1, -1},    {"mknod", 0, 1, -1},
	    {"mknodat", 0, 2, -1},  {"open", 0, 2, 1},
	    {"openat", 0, 3, 2},
	};
	static const unsigned long bits[] = {S_ISUID, S_ISGID};
	static const unsigned long creating[] = {O_CREAT, __O_TMPFILE};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		struct refusal r = {calls[i].name, calls[i].nr, EPERM};
		int nr = resolve(&r);
		if (nr < 0)
			continue;
		for (size_t b = 0; b < 2; b++) {
			struct scmp_arg_cmp c[2] = {{
			    .arg = (unsigned)calls[i].mode_arg,
			    .op = SCMP_CMP_MASKED_EQ,
			    .datum_a = bits[b],
			    .datum_b = bits[b],
			}};
			if (calls[i].flags_arg < 0) {
				int rc = add(ctx, EPERM, nr, 1, c);
				if (rc < 0)
					return rc;
				continue;
			}
			for (size_t f = 0; f < 2; f++) {
				c[1] = (struct scmp_arg_cmp){
				    .arg = (unsigned)calls[i].flags_arg,
				    .op = SCMP_CMP_MASKED_EQ,
				    .datum_a = creating[f],
				    .datum_b = creating[f],
				};
				int rc = add(ctx, EPERM, nr, 2, c);
				if (rc < 0)
					return rc;
			}
		}
		(*count)++;
	}
	int nr = seccomp_syscall_resolve_name("openat2");
	if (nr < 0)
		nr = 437; /* the shared number, for libseccomp without the name */
	int rc = add(ctx, ENOSYS, nr, 0, NULL);
	if (rc == 0)
		(*count)++;
	return rc;
}

/* The whole table, in order, into s. */
static int
walk(const struct sink *s, unsigned flags, unsigned *nsyscalls)
{
	const bool no_inet = flags & JAIL_SECCOMP_NO_INET;
	unsigned count = 0;
	int rc;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		int nr = resolve(&refusals[i]);
		if (nr < 0)
			continue;
		if ((rc = add(s, refusals[i].err, nr, 0, NULL)) < 0)
			return rc;
		count++;
	}

	/* clone() with any namespace flag: one rule per flag, since libseccomp
	 * compares (arg & mask) == datum and "any of these bits" is their OR. */
	for (size_t i = 0; i < sizeof(clone_ns_flags) / sizeof(clone_ns_flags[0]); i++) {
		struct scmp_arg_cmp c = {
		    .arg = CLONE_FLAGS_ARG,
		    .op = SCMP_CMP_MASKED_EQ,
		    .datum_a = clone_ns_flags[i],
		    .datum_b = clone_ns_flags[i],
		};
		if ((rc = add(s, EPERM, SCMP_SYS(clone), 1, &c)) < 0)
			return rc;
	}
	count++;

	for (size_t i = 0; i < sizeof(ioctl_refusals) / sizeof(ioctl_refusals[0]); i++) {
		struct scmp_arg_cmp c =
		    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, ioctl_refusals[i].cmd);
		if ((rc = add(s, EPERM, SCMP_SYS(ioctl), 1, &c)) < 0)
			return rc;
	}
	count++;

	rc = add_socket_rules(s, "socket", no_inet);
	if (rc == 0)
		rc = add_socket_rules(s, "socketpair", no_inet);
	if (rc < 0)
		return rc;
	count += 2;

	count++; /* personality, in the prelude */

	if ((rc = add_setid_rules(s, &count)) < 0)
		return rc;
	*nsyscalls = count;
	return 0;
}

int
jail_seccomp_walk(unsigned flags, jail_seccomp_rule_fn fn, void *data, unsigned *nsyscalls)
{
	struct sink s = {fn, data};
	return walk(&s, flags, nsyscalls);
}

static int
add_to_ctx(void *data, int err, int nr, unsigned nargs, const struct scmp_arg_cmp *cmp)
{
	return seccomp_rule_add_array(data, SCMP_ACT_ERRNO((uint32_t)err), nr, nargs, cmp);
}

int
jail_seccomp_build(scmp_filter_ctx *out, unsigned *nsyscalls, unsigned flags)
{
	int rc;

	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;

	/* Only the native architecture is added, so a syscall made through
	 * another ABI (int 0x80 i386 calls from an x86_64 process, or x32
	 * numbers with bit 30 set, which libseccomp routes to this action on
	 * x86_64 filters) meets the bad-arch action.  Their numbers differ
	 * (i386's 21 is mount, x86_64's 21 is access), so a per-name deny list
	 * would be blind to them: refusing the whole ABI is the only safe
	 * answer.  EPERM rather than KILL so a 32-bit helper fails cleanly. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM));
	/* Binary search over syscall numbers: a default-allow filter is
	 * evaluated on every syscall, so a linear chain would cost each call
	 * the length of the table. */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	/* NoNewPrivs is the jail's business (step 6e); the context never loads
	 * itself anyway, it is only exported. */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (rc < 0)
		goto fail;

	struct sink sink = {add_to_ctx, ctx};
	if ((rc = walk(&sink, flags, nsyscalls)) < 0)
		goto fail;
	*out = ctx;
	return 0;
fail:
	seccomp_release(ctx);
	return rc;
}

/* The prelude, in classic BPF ahead of libseccomp's program (which starts
 * again from scratch by loading the arch, so the prelude may leave any value
 * in the accumulator).  Written by hand because libseccomp cannot say either
 * thing: it allows one comparison per argument per rule, and has no
 * comparison on the syscall number itself.
 *
 *   0  A = arch
 *   1  if A != native              goto out   (libseccomp's bad-arch path)
 *   2  A = nr
 *   3  if A >= 0x40000000          goto out   (x32 and -1: libseccomp's)
 *   4  if A > JAIL_SECCOMP_MAX_NR  goto enosys
 *   5  if A != __NR_personality    goto out
 *   6  A = low 32 bits of args[0]
 *   7  if A == 0 (PER_LINUX)       goto out
 *   8  if A == 0xffffffff (query)  goto out
 *   9  return ERRNO(EPERM)
 *  10  enosys: return ERRNO(ENOSYS)
 *  out: libseccomp's program
 *
 * personality(): only the default persona and the query are allowed.  Other
 * personas change kernel behaviour for the process: READ_IMPLIES_EXEC makes
 * every readable mapping executable, ADDR_NO_RANDOMIZE switches off ASLR for
 * what it execs, MMAP_PAGE_ZERO maps page 0 (the kernel NULL-dereference
 * exploit primitive, cf. CVE-2009-1895: setuid exec kept it).  The kernel
 * reads an unsigned int, hence the low 32 bits. */
size_t
jail_seccomp_prelude(struct sock_filter *buf, size_t cap, uint32_t arch)
{
	enum { N = 11 };
	const uint32_t arg0_lo = offsetof(struct seccomp_data, args[0]) +
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
				 4;
#else
				 0;
#endif
	const struct sock_filter p[N] = {
	    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, N - 1 - 1),
	    /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    /* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, N - 3 - 1, 0),
	    /* 4 */ BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, JAIL_SECCOMP_MAX_NR, 10 - 4 - 1, 0),
	    /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_personality, 0, N - 5 - 1),
	    /* 6 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg0_lo),
	    /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PER_LINUX, N - 7 - 1, 0),
	    /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffU, N - 8 - 1, 0),
	    /* 9 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
	    /* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
	};
	if (cap < N)
		return 0;
	for (size_t i = 0; i < N; i++)
		buf[i] = p[i];
	return N;
}
