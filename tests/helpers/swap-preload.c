/* swap-preload: LD_PRELOAD into `warden diff/apply` of a stopped session
 * (the CLI then reads the upper layer itself) to make the review->apply
 * race (docs/threat-model.md, 4) happen at a chosen moment instead of by
 * luck: what a process left in a session does between warden's look at a
 * file and its read of it.
 *
 *   WD_SWAP_NAME=f      the file name (last component) to act on
 *   WD_SWAP_AT=N        at the Nth open of it for reading (openat or
 *                       openat2, O_PATH ones not counted), before the
 *                       open runs
 *   WD_SWAP_HOST=DIR    the host workspace: opens beneath it are never
 *                       counted nor touched (only the upper layer is)
 *   WD_SWAP_DO=fifo     replace it by a FIFO (no writer: an open for
 *                       reading without O_NONBLOCK waits for ever)
 *   WD_SWAP_DO=rewrite  rewrite its bytes in place, same size (one byte
 *                       flipped), as a rewriter in the sandbox would
 *
 * The file system, the FIFO and the open are real; only the timing is
 * forced.  Built without sanitizers: it is preloaded into whatever the
 * test runs. */
/* fortify's inline openat() would stand in for the one defined here */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int count;

static const char *
base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static void
act(int dirfd, const char *path, int flags)
{
	const char *name = getenv("WD_SWAP_NAME"), *at = getenv("WD_SWAP_AT"),
		   *what = getenv("WD_SWAP_DO"), *host = getenv("WD_SWAP_HOST");
	if (!name || !at || !what || !path || strcmp(base(path), name) || (flags & O_PATH))
		return;
	char link[64], dir[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(link, dir, sizeof(dir) - 1);
	if (n < 0 || !host || (dir[n] = '\0', !strncmp(dir, host, strlen(host))))
		return;
	if (++count != atoi(at))
		return;
	if (!strcmp(what, "fifo")) {
		unlinkat(dirfd, path, 0);
		mknodat(dirfd, path, S_IFIFO | 0644, 0);
	} else if (!strcmp(what, "rewrite")) {
		int fd = openat(dirfd, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		unsigned char c;
		if (fd >= 0 && pread(fd, &c, 1, 0) == 1) {
			c ^= 1;
			(void)!pwrite(fd, &c, 1, 0);
		}
		if (fd >= 0)
			close(fd);
	}
}

__attribute__((visibility("default"))) int
openat(int dirfd, const char *path, int flags, ...)
{
	static int (*real)(int, const char *, int, ...);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "openat");
	mode_t mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	act(dirfd, path, flags);
	return real(dirfd, path, flags, mode);
}

__attribute__((visibility("default"))) long
syscall(long nr, ...)
{
	static long (*real)(long, ...);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "syscall");
	va_list ap;
	va_start(ap, nr);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_openat2)
		act((int)a[0], (const char *)a[1], (int)((const struct open_how *)a[2])->flags);
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
