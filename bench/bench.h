/* bench.h: what the C benchmarks share: a monotonic clock, a sleep, and the
 * baseline every ratio is taken against, a bare fork+exec with its output
 * to /dev/null. */
#ifndef WD_BENCH_H
#define WD_BENCH_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t
bench_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void
bench_sleep_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

/* argv run by fork+execv, no sandbox: its wall time in ns, 0 when it did
 * not exit 0. */
static inline uint64_t
bench_bare(char *const argv[])
{
	uint64_t t0 = bench_now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 0;
	uint64_t t = bench_now_ns() - t0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : 0;
}

static inline uint64_t
bench_bare_true(void)
{
	static char prog[] = "/bin/true";
	char *const argv[] = {prog, NULL};
	return bench_bare(argv);
}

#endif
