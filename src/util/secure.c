/* util/secure: memory for secret values.
 *
 * A secret (a token, a registry password) lives in warden, never in the
 * sandbox, so its copies in warden's memory are what an attacker would go
 * for.  Each allocation here is a mapping of its own:
 *
 *   - mlock()ed: never written to swap, where it would outlive the run;
 *   - MADV_DONTDUMP: not in a core dump of warden (a crash report, or
 *     systemd-coredump's archive, would otherwise keep the value);
 *   - MADV_WIPEONFORK (Linux 4.14): a child made by fork() or by clone()
 *     without CLONE_VM sees zeroes.  The sandbox's pid 1 is such a child
 *     of warden (jail/pid1.c runs in a copy of warden's memory, inside the
 *     sandbox's namespaces), so without this every sandbox started after a
 *     secret was read would carry a copy of it;
 *   - wiped with explicit_bzero() before munmap(), which the compiler may
 *     not remove as a dead store.
 *
 * A failure to lock or to advise is an error, not a warning: the caller
 * asked for these properties and gets them or nothing (RLIMIT_MEMLOCK is
 * 8 MiB by default since Linux 5.16; a secret is at most a few KiB). */
#include "util/util.h"

#include <string.h>
#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

static size_t
round_page(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

void *
wd_secure_alloc(size_t n, struct wd_err *err)
{
	size_t len = round_page(n ? n : 1);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		wd_err_sys(err, errno, "secret memory: mmap");
		return NULL;
	}
	const char *what = NULL;
	if (madvise(p, len, MADV_DONTDUMP) < 0)
		what = "madvise(MADV_DONTDUMP)";
	else if (madvise(p, len, MADV_WIPEONFORK) < 0)
		what = "madvise(MADV_WIPEONFORK)";
	else if (mlock(p, len) < 0)
		what = "mlock (raise RLIMIT_MEMLOCK, ulimit -l)";
	if (what) {
		int e = errno;
		munmap(p, len);
		wd_err_sys(err, e, "secret memory: %s", what);
		return NULL;
	}
	return p;
}

void
wd_secure_free(void *p, size_t n)
{
	if (!p)
		return;
	size_t len = round_page(n ? n : 1);
	explicit_bzero(p, len);
	munlock(p, len);
	munmap(p, len);
}
