/* bench.h: what the C benchmarks share: a monotonic clock, a sleep, and the
 * baseline every ratio is taken against, a bare fork+exec with its output
 * to /dev/null. */
#ifndef WD_BENCH_H
#define WD_BENCH_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
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

/* The median of v[0..n) (n <= 64), its smallest and largest. */
static inline double
bench_spread(const double *v, int n, double *lo, double *hi)
{
	double s[64];
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		int j = i;
		for (; j > 0 && s[j - 1] > v[i]; j--)
			s[j] = s[j - 1];
		s[j] = v[i];
	}
	if (n <= 0) {
		*lo = *hi = 0;
		return 0;
	}
	*lo = s[0];
	*hi = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* One row of `make bench`'s table of warden beside its peers
 * (bench/summary.py): warden's figure and the peer's in each of n series
 * of the same run, and warden / peer taken series by series (a series
 * whose peer figure is not above zero gives no ratio: an added latency
 * can come out at zero under the noise).  Tab-separated:
 *   peer ROW UNIT BETTER PEER  W W_LO W_HI  P P_LO P_HI  R R_LO R_HI
 * each figure as median, min, max over the series; BETTER is "low" or
 * "high"; R is "-" when no series gave a ratio. */
static inline void
bench_peer_line(const char *row, const char *unit, const char *better, const char *peer,
		const double *w, const double *p, int n)
{
	double r[64], wl, wh, pl, ph, rl, rh;
	int nr = 0;
	for (int i = 0; i < n && i < 64; i++)
		if (p[i] > 0)
			r[nr++] = w[i] / p[i];
	double wm = bench_spread(w, n, &wl, &wh), pm = bench_spread(p, n, &pl, &ph);
	printf("peer\t%s\t%s\t%s\t%s\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g", row, unit, better, peer,
	       wm, wl, wh, pm, pl, ph);
	if (nr) {
		double rm = bench_spread(r, nr, &rl, &rh);
		printf("\t%.4g\t%.4g\t%.4g\n", rm, rl, rh);
	} else {
		printf("\t-\t-\t-\n");
	}
}

#endif
