/* Unit tests for jail/landlock: each test forks a child that applies a
 * domain to itself, tries accesses and records the results in shared
 * memory; the parent (outside the domain) asserts.  The child ends with
 * _exit() so no sanitizer exit hook runs inside the domain.  A test skips
 * only when the running kernel's ABI lacks the feature (WD_MUST_WORK=1
 * turns those skips into failures). */
#include "jail/jail.h"
#include "jail/landlock.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct res {
	char name[64];
	long ret;
	int err;
	int want; /* 0: must succeed; else the errno */
};
struct results {
	int apply_rc;
	unsigned n;
	struct res r[32];
};

static void
rec(struct results *R, const char *name, long ret, int want)
{
	int e = errno;
	if (R->n >= sizeof(R->r) / sizeof(R->r[0]))
		return;
	struct res *r = &R->r[R->n++];
	strncpy(r->name, name, sizeof(r->name) - 1);
	r->ret = ret;
	r->err = ret < 0 ? e : 0;
	r->want = want;
}

static void
need_abi(int min, const char *what)
{
	int abi = jail_landlock_abi();
	if (abi >= min)
		return;
	if (getenv("WD_MUST_WORK"))
		cr_assert_fail("Landlock ABI %d < %d (%s) and WD_MUST_WORK is set", abi, min, what);
	cr_skip_test("Landlock ABI %d < %d: the kernel cannot %s", abi, min, what);
}

/* Run body(R, arg) in a child restricted by rules; assert the results. */
static void
run_restricted(const struct jail_landlock_rules *rules, void (*body)(struct results *, void *),
	       void *arg)
{
	struct results *R =
	    mmap(NULL, sizeof(*R), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert(R != MAP_FAILED);
	memset(R, 0, sizeof(*R));
	int abi = jail_landlock_abi();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct wd_err err = {0};
		R->apply_rc = jail_landlock_apply(rules, abi, &err);
		if (R->apply_rc == 0)
			body(R, arg);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "restricted child failed");
	cr_assert_eq(R->apply_rc, 0, "jail_landlock_apply: %s", strerror(-R->apply_rc));
	cr_assert_gt(R->n, 0);
	for (unsigned i = 0; i < R->n; i++) {
		const struct res *r = &R->r[i];
		if (r->want)
			cr_expect(r->ret == -1 && r->err == r->want, "%s: want -1/%s, got %ld/%s",
				  r->name, strerror(r->want), r->ret, strerror(r->err));
		else
			cr_expect(r->ret >= 0, "%s: want success, got %ld/%s", r->name, r->ret,
				  strerror(r->err));
	}
	munmap(R, sizeof(*R));
}

Test(jail_landlock_abi, reports_the_kernel_abi)
{
	need_abi(1, "do Landlock at all");
	cr_expect_geq(jail_landlock_abi(), 1);
}

Test(jail_landlock_apply, refuses_abi_zero_without_formatting)
{
	struct jail_landlock_rules rules = {0};
	struct wd_err err = {.msg = "x"};
	cr_expect_eq(jail_landlock_apply(&rules, 0, &err), -EOPNOTSUPP);
	cr_expect_eq(err.step, JAIL_STEP_6F_LANDLOCK);
	cr_expect_eq(err.sys_errno, EOPNOTSUPP);
	cr_expect_eq(err.msg[0], '\0');
}

/* The process level without Landlock has no write fence at all (no mount
 * namespace): refused unless --best-effort.  This machine kind has
 * Landlock, so the kernel without it is given as ABI 0 to the decision
 * function rather than run; the refusal's path to exit 125 is the same
 * WD_E_UNSUPPORTED a missing cgroup takes. */
Test(jail_landlock_required, process_level_without_landlock_is_refused)
{
	struct wd_err err = {0};
	cr_expect_eq(jail_landlock_required(false, 0, false, &err), -ENOTSUP);
	cr_expect_eq(err.code, WD_E_UNSUPPORTED);
	cr_expect(strstr(err.msg, "Landlock") != NULL, "names Landlock: %s", err.msg);
	cr_expect(strstr(err.msg, "--best-effort") != NULL, "names --best-effort: %s", err.msg);
	struct wd_err ok = {0};
	cr_expect_eq(jail_landlock_required(false, 0, true, &ok), 0, "--best-effort runs it");
	cr_expect_eq(jail_landlock_required(true, 0, false, &ok), 0,
		     "the container level has its mounts as the fence");
	for (int abi = 1; abi <= 7; abi++)
		cr_expect_eq(jail_landlock_required(false, abi, false, &ok), 0, "ABI %d", abi);
	cr_expect_eq(ok.msg[0], '\0');
}

/* ------------------------------------------------------------- filesystem */

struct fs_dirs {
	char rw[64], out[64];
};

static void
path(char *buf, size_t cap, const char *dir, const char *name)
{
	snprintf(buf, cap, "%s/%s", dir, name);
}

static void
fs_body(struct results *R, void *arg)
{
	const struct fs_dirs *d = arg;
	char p[128], q[128];
	int abi = jail_landlock_abi();

	path(p, sizeof(p), d->rw, "new");
	long fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	rec(R, "create in rw", fd, 0);
	path(p, sizeof(p), d->rw, "d");
	rec(R, "mkdir in rw", mkdir(p, 0700), 0);
	path(p, sizeof(p), d->rw, "new");
	path(q, sizeof(q), d->rw, "d/new");
	rec(R, "rename across dirs in rw (REFER)", rename(p, q), 0);

	path(p, sizeof(p), d->out, "new");
	rec(R, "create outside", open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600), EACCES);
	path(p, sizeof(p), d->out, "existing");
	rec(R, "write existing outside", open(p, O_WRONLY | O_CLOEXEC), EACCES);
	rec(R, "unlink outside", unlink(p), EACCES);
	if (abi >= 3)
		rec(R, "truncate outside", truncate(p, 0), EACCES);
	rec(R, "read existing outside (ro /)", open(p, O_RDONLY | O_CLOEXEC), 0);
	path(p, sizeof(p), d->out, "d");
	rec(R, "mkdir outside", mkdir(p, 0700), EACCES);
	path(p, sizeof(p), d->out, "link");
	rec(R, "symlink outside", symlink("/etc/passwd", p), EACCES);
	path(p, sizeof(p), d->rw, "d/new");
	path(q, sizeof(q), d->out, "moved");
	errno = 0;
	long rc = rename(p, q);
	/* EXDEV when REFER is what is missing, EACCES for MAKE_REG */
	rec(R, "rename rw -> outside", rc, rc < 0 && errno == EXDEV ? EXDEV : EACCES);

	/* a rule on a single file (rights masked to file rights) */
	path(p, sizeof(p), d->out, "single");
	rec(R, "write the rw file rule", open(p, O_WRONLY | O_CLOEXEC), 0);
	rec(R, "read /etc/passwd", open("/etc/passwd", O_RDONLY | O_CLOEXEC), 0);
	rec(R, "write /dev/null (dev rule)", open("/dev/null", O_WRONLY | O_CLOEXEC), 0);
	rec(R, "write /etc/passwd", open("/etc/passwd", O_WRONLY | O_CLOEXEC), EACCES);
}

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

Test(jail_landlock_apply, fences_the_filesystem)
{
	need_abi(1, "fence the filesystem");
	struct fs_dirs *d =
	    mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert(d != MAP_FAILED);
	strcpy(d->rw, "/tmp/wd-ll-rw-XXXXXX");
	strcpy(d->out, "/tmp/wd-ll-out-XXXXXX");
	cr_assert(mkdtemp(d->rw) && mkdtemp(d->out));
	char p[128], single[128];
	path(p, sizeof(p), d->out, "existing");
	close(open(p, O_CREAT | O_WRONLY, 0600));
	path(single, sizeof(single), d->out, "single");
	close(open(single, O_CREAT | O_WRONLY, 0600));

	const char *ro[] = {"/", NULL};
	/* a missing path must be skipped, a file rule must not be EINVAL */
	const char *rw[] = {d->rw, "/nonexistent/wd-landlock-test", single, NULL};
	const char *dev[] = {"/dev/null", NULL};
	struct jail_landlock_rules rules = {
	    .ro_paths = ro,
	    .rw_paths = rw,
	    .dev_paths = dev,
	};
	run_restricted(&rules, fs_body, d);
	nftw(d->rw, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	nftw(d->out, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* -------------------------------------------------------------------- TCP */

static int
tcp_listener(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 4), 0);
	socklen_t len = sizeof(sa);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static long
tcp_connect(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	long rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

static void
tcp_body(struct results *R, void *arg)
{
	const uint16_t *ports = arg;
	rec(R, "connect to the allowed port", tcp_connect(ports[0]), 0);
	rec(R, "connect to another port", tcp_connect(ports[1]), EACCES);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(ports[1]),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	rec(R, "bind another port", bind(fd, (struct sockaddr *)&sa, sizeof(sa)), EACCES);
	close(fd);
}

Test(jail_landlock_apply, fences_tcp_ports)
{
	need_abi(4, "fence TCP");
	uint16_t ports[2];
	int a = tcp_listener(&ports[0]);
	int b = tcp_listener(&ports[1]);
	const char *ro[] = {"/", NULL};
	struct jail_landlock_rules rules = {
	    .ro_paths = ro,
	    .ports = ports,
	    .nports = 1,
	    .handle_net = true,
	};
	run_restricted(&rules, tcp_body, ports);
	close(a);
	close(b);
}

/* ----------------------------------------------------------------- scopes */

static socklen_t
abstract_addr(struct sockaddr_un *sa, const char *tag)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "warden-ll-%s-%d", tag,
			 (int)getpid());
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int
abstract_listener(const char *tag)
{
	struct sockaddr_un sa;
	socklen_t len = abstract_addr(&sa, tag);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 4) < 0)
		return -1;
	return fd;
}

static long
abstract_connect(const char *tag, pid_t owner)
{
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	int n =
	    snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "warden-ll-%s-%d", tag, (int)owner);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	long rc = connect(fd, (struct sockaddr *)&sa, len);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

static void
unix_body(struct results *R, void *arg)
{
	pid_t outer = *(pid_t *)arg;
	rec(R, "connect to an abstract socket outside", abstract_connect("out", outer), EPERM);
	int in = abstract_listener("in");
	rec(R, "listen on an abstract socket inside", in, 0);
	rec(R, "connect to an abstract socket inside", abstract_connect("in", getpid()), 0);
}

Test(jail_landlock_apply, scopes_abstract_unix_sockets)
{
	need_abi(6, "scope abstract unix sockets");
	int l = abstract_listener("out");
	cr_assert_geq(l, 0, "abstract listener: %s", strerror(errno));
	pid_t me = getpid();
	/* control: unrestricted, the connect works */
	cr_assert_eq(abstract_connect("out", me), 0, "control connect: %s", strerror(errno));
	const char *ro[] = {"/", NULL};
	struct jail_landlock_rules rules = {.ro_paths = ro, .scope = true};
	run_restricted(&rules, unix_body, &me);
	close(l);
}

static void
signal_body(struct results *R, void *arg)
{
	pid_t outside = *(pid_t *)arg;
	rec(R, "kill(outside, SIGTERM)", kill(outside, SIGTERM), EPERM);
	rec(R, "kill(outside, 0)", kill(outside, 0), EPERM);
	pid_t inside = fork();
	if (inside == 0) {
		pause();
		_exit(0);
	}
	rec(R, "fork inside", inside, 0);
	if (inside > 0) {
		rec(R, "kill(inside, SIGKILL)", kill(inside, SIGKILL), 0);
		waitpid(inside, NULL, 0);
	}
}

Test(jail_landlock_apply, scopes_signals)
{
	need_abi(6, "scope signals");
	pid_t sleeper = fork();
	cr_assert_geq(sleeper, 0);
	if (sleeper == 0) {
		pause();
		_exit(0);
	}
	const char *ro[] = {"/", NULL};
	struct jail_landlock_rules rules = {.ro_paths = ro, .scope = true};
	run_restricted(&rules, signal_body, &sleeper);
	/* the sleeper must have survived the restricted child's SIGTERM */
	int st = 0;
	cr_expect_eq(waitpid(sleeper, &st, WNOHANG), 0, "the outside process was signalled");
	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
}
