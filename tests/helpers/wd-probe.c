/*
 * wd-probe: reports what a process sees from inside a warden jail.
 *
 *   wd-probe CHECK [ARGS...]      one check
 *   wd-probe all [OPTIONS]        every check that applies, with parameters
 *
 * Each check prints one line per assertion, "ok NAME [detail]" or
 * "FAIL NAME detail", and the probe exits 1 if any assertion failed, 2 on a
 * usage error.  It is linked statically and built without sanitizers, since
 * it runs under warden's seccomp filter with nothing of the host's libraries
 * guaranteed inside (bubblewrap's tests/try-syscall.c, crun's tests/init.c).
 *
 * Syscall checks (probe-syscalls.c) run in a forked child each, so that a
 * call the filter wrongly lets through (personality, unshare, ptrace)
 * cannot change the probe itself, and a filter that kills with SIGSYS is
 * reported as such.
 * Arguments are chosen so that, without the filter, the call either succeeds
 * harmlessly or fails with an errno other than EPERM: a pass then means the
 * filter refused it, not that the sandbox merely lacked a capability.  Where
 * no such argument exists (reboot, kexec_load, iopl, ...) the check still
 * asserts the call fails, which is what the jail must guarantee.
 *
 * A few subcommands are workloads rather than checks (forkbomb, memhog,
 * fill, flood, stubborn): the limit tests run them inside the jail.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <unistd.h>

#include "probe.h"

extern char **environ;

static int failures;

void
say(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s", ok ? "ok" : "FAIL", name);
	if (fmt && *fmt) {
		putchar(' ');
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
	fflush(stdout);
	if (!ok)
		failures++;
}

/* ------------------------------------------------------------ /proc status */

/* The value after "Key:" in /proc/self/status, or NULL. */
static char *
status_field(const char *key, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[512];
	size_t klen = strlen(key);
	char *res = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			char *v = line + klen + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(buf, len, "%s", v);
			res = buf;
			break;
		}
	}
	fclose(f);
	return res;
}

static void
check_status_eq(const char *key, const char *want)
{
	char buf[256];
	char name[64];
	const char *v = status_field(key, buf, sizeof(buf));

	snprintf(name, sizeof(name), "status-%s", key);
	if (!v)
		say(false, name, "field missing from /proc/self/status");
	else
		say(strcmp(v, want) == 0, name, "%s (want %s)", v, want);
}

static void
check_caps(void)
{
	static const char *const keys[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		check_status_eq(keys[i], "0000000000000000");
}

static void
check_ids(unsigned want)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	gid_t groups[64];
	int n;

	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	say(r == want && e == want && s == want, "uid", "%u/%u/%u (want %u)", r, e, s, want);
	say(gr == want && ge == want && gs == want, "gid", "%u/%u/%u (want %u)", gr, ge, gs, want);
	n = getgroups(64, groups);
	/* Supplementary groups: none, or only the primary group. */
	say(n == 0 || (n == 1 && groups[0] == want), "groups", "%d supplementary", n);
}

/* ---------------------------------------------------------------- paths */

static void
check_absent(const char *path)
{
	struct stat st;
	char name[PATH_MAX + 16];

	snprintf(name, sizeof(name), "absent:%s", path);
	if (lstat(path, &st) == 0)
		say(false, name, "exists (mode %o, size %lld)", st.st_mode, (long long)st.st_size);
	else
		say(errno == ENOENT || errno == EACCES, name, "%s", strerror(errno));
}

/* Creating a file in dir must fail.  want_errno 0 accepts any error. */
static void
check_nowrite(const char *dir, int want_errno)
{
	char path[PATH_MAX];
	char name[PATH_MAX + 16];
	int fd;

	snprintf(name, sizeof(name), "%s:%s", want_errno == EROFS ? "readonly" : "nowrite", dir);
	snprintf(path, sizeof(path), "%s/.wd-probe-%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		unlink(path);
		say(false, name, "created %s", path);
		return;
	}
	if (want_errno && errno != want_errno)
		say(false, name, "%s (want %s)", strerror(errno), strerror(want_errno));
	else
		say(true, name, "%s", strerror(errno));
}

static void
check_writable(const char *dir)
{
	char path[PATH_MAX];
	char name[PATH_MAX + 16];
	char back[16] = {0};
	int fd;

	snprintf(name, sizeof(name), "writable:%s", dir);
	snprintf(path, sizeof(path), "%s/.wd-probe-%d", dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		say(false, name, "create: %s", strerror(errno));
		return;
	}
	if (write(fd, "probe", 5) != 5 || pread(fd, back, 5, 0) != 5 || strcmp(back, "probe")) {
		say(false, name, "write/read back: %s", strerror(errno));
		close(fd);
		unlink(path);
		return;
	}
	close(fd);
	if (unlink(path) < 0)
		say(false, name, "unlink: %s", strerror(errno));
	else
		say(true, name, NULL);
}

/* Opening path must fail, or give content without token. */
static bool
reaches(const char *path, const char *token, char *why, size_t len)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(why, len, "open: %s", strerror(errno));
		return false;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		snprintf(why, len, "read: %s", strerror(errno));
		return false;
	}
	buf[n] = '\0';
	if (strstr(buf, token)) {
		snprintf(why, len, "read the canary token through %s", path);
		return true;
	}
	snprintf(why, len, "opened, but not the canary (%zd bytes)", n);
	return false;
}

static void
check_noreach(const char *path, const char *token)
{
	char why[PATH_MAX + 64];
	char name[PATH_MAX + 16];

	snprintf(name, sizeof(name), "noreach:%s", path);
	say(!reaches(path, token, why, sizeof(why)), name, "%s", why);
}

/* Plant a symlink dir/link -> target from inside and try to read through it. */
static void
check_symlink(const char *dir, const char *target, const char *token)
{
	char link[PATH_MAX];
	char why[PATH_MAX + 64];
	char name[PATH_MAX + 16];

	snprintf(name, sizeof(name), "symlink:%s", target);
	snprintf(link, sizeof(link), "%s/.wd-probe-link-%d", dir, (int)getpid());
	if (symlink(target, link) < 0) {
		say(false, name, "symlink in %s: %s", dir, strerror(errno));
		return;
	}
	say(!reaches(link, token, why, sizeof(why)), name, "%s", why);
	unlink(link);
}

static void
check_cwd(const char *want)
{
	char buf[PATH_MAX];

	if (!getcwd(buf, sizeof(buf)))
		say(false, "cwd", "%s", strerror(errno));
	else
		say(strcmp(buf, want) == 0, "cwd", "%s (want %s)", buf, want);
}

static void
check_passwd(void)
{
	char line[1024];
	bool user = false, group = false;
	FILE *f = fopen("/etc/passwd", "re");

	if (!f) {
		say(false, "passwd", "/etc/passwd: %s", strerror(errno));
	} else {
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "sandbox:x:1000:1000:", 20) == 0)
				user = true;
		}
		fclose(f);
		say(user, "passwd", "%s",
		    user ? "sandbox is uid 1000" : "no sandbox:x:1000:1000 line");
	}
	f = fopen("/etc/group", "re");
	if (!f) {
		say(false, "group", "/etc/group: %s", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "sandbox:x:1000:", 15) == 0)
			group = true;
	fclose(f);
	say(group, "group", "%s", group ? "sandbox is gid 1000" : "no sandbox:x:1000 line");
}

/* /proc/sys, /proc/sysrq-trigger, /proc/kcore: masked or read-only. */
static void
check_procmask(void)
{
	static const struct {
		const char *path;
		int flags;
	} paths[] = {
	    {"/proc/sys/kernel/core_pattern", O_WRONLY},
	    {"/proc/sys/kernel/hostname", O_WRONLY},
	    {"/proc/sysrq-trigger", O_WRONLY},
	    {"/proc/kcore", O_RDONLY},
	    {"/proc/kmsg", O_RDONLY},
	};
	char name[128];

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int fd = open(paths[i].path, paths[i].flags | O_CLOEXEC | O_NONBLOCK);

		snprintf(name, sizeof(name), "procmask:%s", paths[i].path);
		if (fd >= 0) {
			close(fd);
			say(false, name, "opened %s",
			    paths[i].flags == O_WRONLY ? "for writing" : "");
		} else {
			say(true, name, "%s", strerror(errno));
		}
	}
}

/* Mount flags of every mount in /proc/self/mountinfo: nosuid everywhere;
 * nodev everywhere but the device nodes and devpts; read-only everywhere but
 * the comma-separated rw list, /tmp-like scratch (/dev/shm), devpts, the
 * device nodes and /proc itself (its sensitive parts are checked by
 * procmask). */
static bool
in_list(const char *list, const char *item)
{
	size_t n = strlen(item);

	for (const char *p = list; p && *p;) {
		size_t l = strcspn(p, ",");

		if (l == n && strncmp(p, item, n) == 0)
			return true;
		p += l + (p[l] == ',');
	}
	return false;
}

static bool
has_opt(const char *opts, const char *opt)
{
	return in_list(opts, opt);
}

static void
check_mounts(const char *rw)
{
	static const char devnodes[] =
	    "/dev/null,/dev/zero,/dev/full,/dev/random,/dev/urandom,/dev/tty,/dev/console";
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int n = 0;

	if (!f) {
		say(false, "mounts", "/proc/self/mountinfo: %s", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char mnt[1024], opts[512], name[1100];
		bool dev, want_rw;

		if (sscanf(line, "%*s %*s %*s %*s %1023s %511s", mnt, opts) != 2)
			continue;
		n++;
		dev = in_list(devnodes, mnt) || strcmp(mnt, "/dev/pts") == 0;
		want_rw = in_list(rw, mnt) || dev || strcmp(mnt, "/dev/shm") == 0 ||
			  strcmp(mnt, "/proc") == 0;
		snprintf(name, sizeof(name), "mount:%s", mnt);
		if (!has_opt(opts, "nosuid"))
			say(false, name, "%s: not nosuid", opts);
		else if (!dev && !has_opt(opts, "nodev"))
			say(false, name, "%s: not nodev", opts);
		else if (!want_rw && !has_opt(opts, "ro"))
			say(false, name, "%s: writable", opts);
		else if (in_list(rw, mnt) && !has_opt(opts, "rw"))
			say(false, name, "%s: read-only", opts);
		else
			say(true, name, "%s", opts);
	}
	fclose(f);
	if (n == 0)
		say(false, "mounts", "no mount listed");
}

/* Only a minimal /dev: no block devices, no memory, no kernel log. */
static void
check_dev(void)
{
	static const char *const want[] = {"/dev/null", "/dev/zero", "/dev/urandom"};
	static const char *const gone[] = {"/dev/mem",	 "/dev/kmsg",  "/dev/sda", "/dev/vda",
					   "/dev/nvme0", "/dev/loop0", "/dev/fuse"};
	char name[64];
	struct stat st;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(name, sizeof(name), "dev:%s", want[i]);
		say(stat(want[i], &st) == 0 && S_ISCHR(st.st_mode), name, "present");
	}
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		snprintf(name, sizeof(name), "dev-absent:%s", gone[i]);
		if (lstat(gone[i], &st) == 0)
			say(false, name, "exists");
		else
			say(true, name, "%s", strerror(errno));
	}
}

/* ----------------------------------------------------------- credentials */

/* names: comma-separated NAME or NAME=VALUE; the environment must hold
 * exactly those names (values checked where given).  Values never printed. */
static void
check_env(const char *spec)
{
	char *copy = strdup(spec);
	char *want[128];
	size_t nwant = 0;
	bool seen[128] = {false};
	char *save = NULL;

	for (char *t = strtok_r(copy, ",", &save); t && nwant < 128; t = strtok_r(NULL, ",", &save))
		want[nwant++] = t;
	for (char **e = environ; *e; e++) {
		size_t nlen = strcspn(*e, "=");
		bool known = false;

		for (size_t i = 0; i < nwant; i++) {
			size_t wlen = strcspn(want[i], "=");

			if (wlen != nlen || strncmp(want[i], *e, nlen) != 0)
				continue;
			known = true;
			if (seen[i])
				say(false, "env-duplicate", "%.*s is set twice", (int)nlen, *e);
			seen[i] = true;
			if (want[i][wlen] == '=' && strcmp(want[i] + wlen + 1, *e + nlen + 1) != 0)
				say(false, "env-value", "%.*s has another value", (int)nlen, *e);
		}
		if (!known)
			say(false, "env-unexpected", "%.*s is set", (int)nlen, *e);
	}
	for (size_t i = 0; i < nwant; i++)
		if (!seen[i])
			say(false, "env-missing", "%.*s", (int)strcspn(want[i], "="), want[i]);
	say(true, "env-checked", "%zu names", nwant);
	free(copy);
}

/* Read a whole small file; returns bytes read or -errno. */
static ssize_t
slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = read(fd, buf + off, len - off);

		if (n < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	return (ssize_t)off;
}

static bool
memmem_str(const char *hay, size_t n, const char *needle)
{
	return memmem(hay, n, needle, strlen(needle)) != NULL;
}

/* The secret comes in hex so that it is not in our own argv. */
static char *
unhex(const char *hex)
{
	size_t n = strlen(hex) / 2;
	char *out = calloc(1, n + 1);

	for (size_t i = 0; out && i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
			fprintf(stderr, "wd-probe: secret is not hex\n");
			exit(2);
		}
		out[i] = (char)v;
	}
	return out;
}

/* The secret (a value set in warden's own environment) must be nowhere:
 * not in our environment, not in any /proc/PID/environ or cmdline we can
 * read, pid 1 included. */
static void
check_secret(const char *secret)
{
	static char buf[1 << 16];
	DIR *d;
	struct dirent *de;
	int readable = 0, found = 0;
	char where[128] = "";

	for (char **e = environ; *e; e++)
		if (strstr(*e, secret))
			found++, snprintf(where, sizeof(where), "own environment");
	d = opendir("/proc");
	if (!d) {
		say(false, "secret", "opendir /proc: %s", strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		static const char *const files[] = {"environ", "cmdline"};
		char path[300];

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		for (size_t i = 0; i < 2; i++) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%s/%s", de->d_name, files[i]);
			n = slurp(path, buf, sizeof(buf));
			if (n < 0)
				continue;
			readable++;
			if (memmem_str(buf, (size_t)n, secret))
				found++, snprintf(where, sizeof(where), "%s", path);
		}
	}
	closedir(d);
	if (found)
		say(false, "secret", "found in %s", where);
	else
		say(true, "secret", "absent (%d proc files read)", readable);
}

static void
check_proc1_environ(const char *secret)
{
	static char buf[1 << 16];
	ssize_t n = slurp("/proc/1/environ", buf, sizeof(buf));

	if (n < 0)
		say(true, "proc1-environ", "unreadable: %s", strerror((int)-n));
	else if (secret && memmem_str(buf, (size_t)n, secret))
		say(false, "proc1-environ", "holds the secret");
	else
		say(true, "proc1-environ", "%zd bytes, no secret", n);
}

static void
check_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int extra = 0;
	char list[256] = "";

	if (!d) {
		say(false, "fds", "opendir /proc/self/fd: %s", strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (de->d_name[0] == '.' || *end || fd == dirfd(d) || fd <= 2)
			continue;
		extra++;
		char target[PATH_MAX] = "";
		char path[64];
		size_t l = strlen(list);

		snprintf(path, sizeof(path), "/proc/self/fd/%ld", fd);
		if (readlink(path, target, sizeof(target) - 1) < 0)
			snprintf(target, sizeof(target), "?");
		snprintf(list + l, sizeof(list) - l, " %ld->%s", fd, target);
	}
	closedir(d);
	say(extra == 0, "fds", extra ? "open above 2:%s" : "only 0-2", list);
}

/* ------------------------------------------------------------ network */

static void
check_noconnect(const char *host, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = 3};
	char name[80];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(name, sizeof(name), "noconnect:%s:%d", host, port);
	if (fd < 0) {
		say(true, name, "socket: %s", strerror(errno));
		return;
	}
	inet_pton(AF_INET, host, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		say(false, name, "connected");
	else
		say(true, name, "%s", strerror(errno));
	close(fd);
}

/* Only "lo" in /proc/net/dev, and it is up. */
static void
check_netif(void)
{
	char buf[8192];
	ssize_t n = slurp("/proc/net/dev", buf, sizeof(buf) - 1);
	int others = 0;
	bool lo = false;
	char names[256] = "";

	if (n < 0) {
		say(false, "netif", "/proc/net/dev: %s", strerror((int)-n));
		return;
	}
	buf[n] = '\0';
	for (char *line = buf, *next; line && *line; line = next) {
		char *colon;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		colon = strchr(line, ':');
		if (!colon || strchr(line, '|'))
			continue;
		*colon = '\0';
		line += strspn(line, " ");
		if (strcmp(line, "lo") == 0) {
			lo = true;
		} else {
			size_t l = strlen(names);

			others++;
			snprintf(names + l, sizeof(names) - l, " %s", line);
		}
	}
	if (others)
		say(false, "netif", "other interfaces:%s", names);
	else
		say(lo, "netif", "%s", lo ? "lo only" : "no lo");

	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		say(false, "lo-up", "SIOCGIFFLAGS: %s", strerror(errno));
	else
		say(ifr.ifr_flags & IFF_UP, "lo-up", "flags %#x", (unsigned)ifr.ifr_flags);
	if (fd >= 0)
		close(fd);
}

/* ------------------------------------------------------------- workloads */

static char chunk[1 << 16];

static void
chunk_init(void)
{
	memset(chunk, 'x', sizeof(chunk) - 1);
	chunk[sizeof(chunk) - 1] = '\n';
}

/* Write bytes of 'x' lines to stdout; the first line says HEAD, the last TAIL. */
static int
do_flood(unsigned long long bytes)
{
	static const char head[] = "WD-FLOOD-HEAD\n";
	static const char tail[] = "WD-FLOOD-TAIL\n";
	unsigned long long left = bytes;

	if (bytes < sizeof(head) + sizeof(tail))
		return 2;
	if (write(1, head, sizeof(head) - 1) < 0)
		return 1;
	left -= (sizeof(head) - 1) + (sizeof(tail) - 1);
	while (left) {
		size_t n = left < sizeof(chunk) ? (size_t)left : sizeof(chunk);
		ssize_t w = write(1, chunk, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		left -= (size_t)w;
	}
	return write(1, tail, sizeof(tail) - 1) < 0;
}

/* Touch memory until something stops us; report how far we got on stderr
 * only if the allocator says no (the OOM killer will not let us print). */
static int
do_memhog(unsigned long mib)
{
	for (unsigned long i = 0; !mib || i < mib; i++) {
		char *p =
		    mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			fprintf(stderr, "memhog: mmap failed after %lu MiB: %s\n", i,
				strerror(errno));
			return 3;
		}
		memset(p, (int)i | 1, 1 << 20);
	}
	printf("memhog: allocated %lu MiB\n", mib);
	return 0;
}

/* Fork until fork fails; report the errno.  The children sleep, so the
 * sandbox is full of processes until it ends. */
static int
do_forkbomb(unsigned long max)
{
	unsigned long n = 0;

	for (;;) {
		pid_t pid = fork();

		if (pid == 0) {
			pause();
			_exit(0);
		}
		if (pid < 0) {
			printf("forkbomb: fork failed after %lu: %s\n", n, strerrorname_np(errno));
			fflush(stdout);
			return errno == EAGAIN ? 0 : 1;
		}
		if (++n >= max) {
			printf("forkbomb: reached %lu processes without a limit\n", n);
			fflush(stdout);
			return 4;
		}
	}
}

/* Write to path until the write fails; print the errno. */
static int
do_fill(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	unsigned long long total = 0;

	if (fd < 0) {
		printf("fill: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (;;) {
		ssize_t w = write(fd, chunk, sizeof(chunk));

		if (w < 0) {
			printf("fill: %s after %llu bytes\n", strerrorname_np(errno), total);
			fflush(stdout);
			close(fd);
			return errno == ENOSPC ? 0 : 1;
		}
		total += (unsigned long long)w;
	}
}

/* Ignore SIGTERM, fork n children that do the same, and sleep forever.
 * argv carries the caller's marker, so the test can look for survivors. */
static int
do_stubborn(unsigned long n)
{
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	for (unsigned long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			/* Grandchildren too, in a new session of their own. */
			setsid();
			if (fork() == 0)
				for (;;)
					pause();
			for (;;)
				pause();
		}
	}
	printf("stubborn: %lu children forked\n", n);
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

/* Spin until this process has used MS of CPU time by its own clock: a
 * fixed amount of CPU work on any machine, where a fixed count of loop
 * turns is ~0.2 s on a fast one and ~0.7 s on a slow one. */
static int
do_burn(unsigned long ms)
{
	struct timespec t;
	volatile unsigned long spin = 0;

	for (;;) {
		for (int i = 0; i < 100000; i++)
			spin++;
		if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) {
			perror("clock_gettime");
			return 1;
		}
		if ((unsigned long)t.tv_sec * 1000 + (unsigned long)t.tv_nsec / 1000000 >= ms)
			break;
	}
	printf("burn: %lu ms of CPU used\n", ms);
	return 0;
}

/* --------------------------------------------------------------- driver */

static void
usage(void)
{
	fputs("usage: wd-probe CHECK [ARGS]\n"
	      "checks:\n"
	      "  ids [UID]            real/effective/saved uid and gid are UID (1000)\n"
	      "  caps                 every capability set in /proc/self/status is empty\n"
	      "  nnp                  NoNewPrivs is 1\n"
	      "  seccomp              Seccomp is 2 (filter)\n"
	      "  absent PATH...       each PATH does not exist\n"
	      "  readonly DIR...      creating a file in DIR fails with EROFS\n"
	      "  nowrite DIR...       creating a file in DIR fails (any errno)\n"
	      "  writable DIR...      a file can be created, written, read, removed in DIR\n"
	      "  noreach PATH TOKEN   opening PATH fails or does not yield TOKEN\n"
	      "  symlink DIR TARGET TOKEN  a link DIR/x -> TARGET does not yield TOKEN\n"
	      "  cwd DIR              the working directory is DIR\n"
	      "  noconnect PORT [IP]  TCP connect to IP (127.0.0.1):PORT fails\n"
	      "  netif                only lo in /proc/net/dev, and lo is up\n"
	      "  syscalls [PREFIX]    each refused syscall fails with EPERM\n"
	      "  env NAME[=VAL],...   the environment holds exactly these names\n"
	      "  secret HEX           the hex-encoded string is in no environment or\n"
	      "                       cmdline we can read\n"
	      "  proc1-environ [HEX]  /proc/1/environ unreadable or without the string\n"
	      "  fds                  no descriptor above 2 is open\n"
	      "  passwd               /etc/passwd and /etc/group name sandbox as 1000\n"
	      "  procmask             /proc/sys, sysrq-trigger, kcore, kmsg masked\n"
	      "  dev                  /dev is minimal\n"
	      "  tiocsti-stdin        ioctl(0, TIOCSTI) fails with EPERM\n"
	      "  mounts [RW,...]      every mount nosuid, nodev and read-only but the\n"
	      "                       listed ones (and devices, devpts, /dev/shm, /proc)\n"
	      "  tree DIR             every entry below DIR: mode, owner, size and hash\n"
	      "                       or link target (a report, not a check)\n"
	      "  mountpoints PREFIX   the mount points at or below PREFIX\n"
	      "  all [--uid N] [--canary PATH]... [--token T] [--link PATH]... [--port N]\n"
	      "      [--env LIST] [--secret HEX] [--ro DIR]... [--rw DIR]... [--cwd DIR]\n"
	      "      [--no-netif] [--no-passwd] [--no-mounts] [--host-ia32 works|faults]\n"
	      "  ia32                 what int 0x80 does here: works, faults or refused\n"
	      "workloads:\n"
	      "  flood BYTES  memhog [MIB]  forkbomb [MAX]  fill PATH  stubborn [N] [MARKER]\n"
	      "  burn MS (spin until MS of CPU time is used)\n",
	      stderr);
}

static unsigned long long
num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s) {
		fprintf(stderr, "wd-probe: bad number '%s'\n", s);
		exit(2);
	}
	switch (*end) {
	case 'K':
		return v << 10;
	case 'M':
		return v << 20;
	case 'G':
		return v << 30;
	default:
		return v;
	}
}

#define MAXLIST 16

struct all_opts {
	unsigned uid;
	const char *canary[MAXLIST];
	int ncanary;
	const char *link[MAXLIST];
	int nlink;
	const char *ro[MAXLIST];
	int nro;
	const char *rw[MAXLIST];
	int nrw;
	const char *token;
	const char *env;
	const char *secret;
	const char *cwd;
	int port;
	bool netif, passwd, mounts;
};

static int
run_all(int argc, char **argv)
{
	struct all_opts o = {
	    .uid = 1000, .netif = true, .passwd = true, .mounts = true, .port = -1};

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool flag = strcmp(a, "--no-netif") == 0 || strcmp(a, "--no-passwd") == 0 ||
			    strcmp(a, "--no-mounts") == 0;

		if (!flag && !v) {
			fprintf(stderr, "wd-probe all: %s needs a value\n", a);
			return 2;
		}
		if (strcmp(a, "--uid") == 0)
			o.uid = (unsigned)num(v);
		else if (strcmp(a, "--canary") == 0 && o.ncanary < MAXLIST)
			o.canary[o.ncanary++] = v;
		else if (strcmp(a, "--link") == 0 && o.nlink < MAXLIST)
			o.link[o.nlink++] = v;
		else if (strcmp(a, "--ro") == 0 && o.nro < MAXLIST)
			o.ro[o.nro++] = v;
		else if (strcmp(a, "--rw") == 0 && o.nrw < MAXLIST)
			o.rw[o.nrw++] = v;
		else if (strcmp(a, "--token") == 0)
			o.token = v;
		else if (strcmp(a, "--env") == 0)
			o.env = v;
		else if (strcmp(a, "--secret") == 0)
			o.secret = unhex(v);
		else if (strcmp(a, "--cwd") == 0)
			o.cwd = v;
		else if (strcmp(a, "--port") == 0)
			o.port = (int)num(v);
		else if (strcmp(a, "--host-ia32") == 0)
			ia32_faults_on_host = strcmp(v, "faults") == 0;
		else if (strcmp(a, "--no-netif") == 0)
			o.netif = false;
		else if (strcmp(a, "--no-passwd") == 0)
			o.passwd = false;
		else if (strcmp(a, "--no-mounts") == 0)
			o.mounts = false;
		else {
			fprintf(stderr, "wd-probe all: bad option '%s'\n", a);
			usage();
			return 2;
		}
		if (!flag)
			i++;
	}

	check_ids(o.uid);
	check_caps();
	check_status_eq("NoNewPrivs", "1");
	check_status_eq("Seccomp", "2");
	for (int i = 0; i < o.ncanary; i++)
		check_absent(o.canary[i]);
	check_absent("/etc/shadow");
	for (int i = 0; i < o.nro; i++)
		check_nowrite(o.ro[i], EROFS);
	for (int i = 0; i < o.nrw; i++)
		check_writable(o.rw[i]);
	if (o.token) {
		for (int i = 0; i < o.nlink; i++)
			check_noreach(o.link[i], o.token);
		for (int i = 0; i < o.ncanary; i++)
			if (o.nrw)
				check_symlink(o.rw[0], o.canary[i], o.token);
	}
	if (o.cwd)
		check_cwd(o.cwd);
	if (o.port >= 0)
		check_noconnect("127.0.0.1", o.port);
	if (o.netif)
		check_netif();
	check_syscalls(NULL);
	if (o.env)
		check_env(o.env);
	if (o.secret)
		check_secret(o.secret);
	check_proc1_environ(o.secret);
	check_fds();
	if (o.passwd)
		check_passwd();
	check_procmask();
	check_dev();
	if (o.mounts) {
		char rw[1024] = "";

		for (int i = 0; i < o.nrw; i++) {
			size_t l = strlen(rw);

			snprintf(rw + l, sizeof(rw) - l, "%s%s", l ? "," : "", o.rw[i]);
		}
		check_mounts(rw);
	}
	return failures ? 1 : 0;
}

/* tree DIR: one line per entry below DIR, sorted: path, type, mode,
 * owner, and a file's size and FNV-1a hash or a link's target; what two
 * ways of showing the same tree must print alike. */
static void
tree_walk(const char *dir, int depth)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);

	if (n < 0) {
		printf("%s unreadable errno=%d\n", dir, errno);
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		char path[PATH_MAX], target[PATH_MAX];
		struct stat st;

		if (!strcmp(name, ".") || !strcmp(name, "..") || depth > 32)
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (lstat(path, &st) < 0) {
			printf("%s lstat errno=%d\n", path, errno);
			goto next;
		}
		printf("%s %04o %u:%u", path, (unsigned)st.st_mode, (unsigned)st.st_uid,
		       (unsigned)st.st_gid);
		if (S_ISLNK(st.st_mode)) {
			ssize_t k = readlink(path, target, sizeof(target) - 1);

			target[k > 0 ? k : 0] = '\0';
			printf(" -> %s\n", target);
		} else if (S_ISREG(st.st_mode)) {
			uint64_t h = 1469598103934665603ULL;
			unsigned char buf[4096];
			ssize_t r;
			int fd = open(path, O_RDONLY | O_CLOEXEC);

			while (fd >= 0 && (r = read(fd, buf, sizeof(buf))) > 0)
				for (ssize_t j = 0; j < r; j++)
					h = (h ^ buf[j]) * 1099511628211ULL;
			printf(" %lld %s%016llx\n", (long long)st.st_size,
			       fd < 0 ? "unreadable-" : "", (unsigned long long)h);
			if (fd >= 0)
				close(fd);
		} else {
			printf("\n");
			if (S_ISDIR(st.st_mode))
				tree_walk(path, depth + 1);
		}
	next:
		free(ents[i]);
	}
	free(ents);
}

/* mountpoints PREFIX: the mount points of /proc/self/mountinfo at or
 * below PREFIX, one a line. */
static int
print_mountpoints(const char *prefix)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	size_t pl = strlen(prefix);

	if (!f) {
		printf("FAIL mountpoints mountinfo errno=%d\n", errno);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		char mp[4096];

		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && !strncmp(mp, prefix, pl) &&
		    (mp[pl] == '\0' || mp[pl] == '/'))
			printf("%s\n", mp);
	}
	fclose(f);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	char **a = argv + 2;
	int n = argc - 2;

	/* Line-buffered so a test sees every line even if a workload is killed. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	chunk_init();
	if (strcmp(cmd, "ids") == 0)
		check_ids(n > 0 ? (unsigned)num(a[0]) : 1000);
	else if (strcmp(cmd, "caps") == 0)
		check_caps();
	else if (strcmp(cmd, "nnp") == 0)
		check_status_eq("NoNewPrivs", "1");
	else if (strcmp(cmd, "seccomp") == 0)
		check_status_eq("Seccomp", "2");
	else if (strcmp(cmd, "absent") == 0 && n > 0)
		for (int i = 0; i < n; i++)
			check_absent(a[i]);
	else if (strcmp(cmd, "readonly") == 0 && n > 0)
		for (int i = 0; i < n; i++)
			check_nowrite(a[i], EROFS);
	else if (strcmp(cmd, "nowrite") == 0 && n > 0)
		for (int i = 0; i < n; i++)
			check_nowrite(a[i], 0);
	else if (strcmp(cmd, "writable") == 0 && n > 0)
		for (int i = 0; i < n; i++)
			check_writable(a[i]);
	else if (strcmp(cmd, "noreach") == 0 && n == 2)
		check_noreach(a[0], a[1]);
	else if (strcmp(cmd, "symlink") == 0 && n == 3)
		check_symlink(a[0], a[1], a[2]);
	else if (strcmp(cmd, "cwd") == 0 && n == 1)
		check_cwd(a[0]);
	else if (strcmp(cmd, "noconnect") == 0 && n >= 1)
		check_noconnect(n > 1 ? a[1] : "127.0.0.1", (int)num(a[0]));
	else if (strcmp(cmd, "netif") == 0)
		check_netif();
	else if (strcmp(cmd, "ia32") == 0)
		return probe_ia32_host();
	else if (strcmp(cmd, "syscalls") == 0) {
		if (check_syscalls(n > 0 ? a[0] : NULL) == 0) {
			fprintf(stderr, "wd-probe: no syscall check matches '%s'\n", a[0]);
			return 2;
		}
	} else if (strcmp(cmd, "env") == 0 && n == 1)
		check_env(a[0]);
	else if (strcmp(cmd, "secret") == 0 && n == 1)
		check_secret(unhex(a[0]));
	else if (strcmp(cmd, "proc1-environ") == 0)
		check_proc1_environ(n > 0 ? unhex(a[0]) : NULL);
	else if (strcmp(cmd, "fds") == 0)
		check_fds();
	else if (strcmp(cmd, "passwd") == 0)
		check_passwd();
	else if (strcmp(cmd, "procmask") == 0)
		check_procmask();
	else if (strcmp(cmd, "dev") == 0)
		check_dev();
	else if (strcmp(cmd, "tiocsti-stdin") == 0)
		check_tiocsti_stdin();
	else if (strcmp(cmd, "tree") == 0 && n == 1)
		tree_walk(a[0], 0);
	else if (strcmp(cmd, "mountpoints") == 0 && n == 1)
		return print_mountpoints(a[0]);
	else if (strcmp(cmd, "mounts") == 0)
		check_mounts(n > 0 ? a[0] : "");
	else if (strcmp(cmd, "all") == 0)
		return run_all(n, a);
	else if (strcmp(cmd, "flood") == 0 && n == 1)
		return do_flood(num(a[0]));
	else if (strcmp(cmd, "memhog") == 0)
		return do_memhog(n > 0 ? (unsigned long)num(a[0]) : 0);
	else if (strcmp(cmd, "forkbomb") == 0)
		return do_forkbomb(n > 0 ? (unsigned long)num(a[0]) : 100000);
	else if (strcmp(cmd, "fill") == 0 && n == 1)
		return do_fill(a[0]);
	else if (strcmp(cmd, "burn") == 0 && n == 1)
		return do_burn((unsigned long)num(a[0]));
	else if (strcmp(cmd, "stubborn") == 0)
		return do_stubborn(n > 0 ? (unsigned long)num(a[0]) : 4);
	else {
		usage();
		return 2;
	}
	return failures ? 1 : 0;
}
