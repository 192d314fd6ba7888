/*
 * spawn_bench: launch latency of several commands, measured alternately.
 *
 *   spawn_bench [-n RUNS] [-w WARMUP] [-t] -- LABEL CMD [ARGS...] [:: LABEL CMD [ARGS...]]...
 *
 * Each run is fork + execve + waitpid, timed with CLOCK_MONOTONIC from just
 * before fork() to the return of waitpid(): the whole cost a caller of the
 * command pays, including the program's own start-up.  Runs alternate
 * between the commands (round r starts at command r mod N), so drift in the
 * machine's load, caches and frequency is shared evenly instead of landing
 * on whichever command ran last.  hyperfine's resolution and shell-free
 * mode are close, but it runs one command's series at a time.
 *
 * The children's stdin, stdout and stderr are /dev/null.  A run whose
 * command exits non-zero is counted as a failure and left out.
 *
 * Output: one line per command with the median, the 10th and 90th
 * percentiles, min and mean in milliseconds, the median's overhead over
 * the first command (the baseline, usually the bare program), and the
 * median CPU time of the run (user + system of the command and every
 * descendant it or they waited for, from wait4: on a shared machine CPU
 * time moves less with other people's load than wall time does; what a
 * command leaves to init, like warden's container pid 1, is not in it); with
 * -t, also tab-separated "summary LABEL MEDIAN_US P10_US P90_US CPU_US"
 * lines for scripts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAXCMDS 16

struct cmd {
	const char *label;
	char **argv;
	uint64_t *ns;
	uint64_t *cpu; /* us, same order of runs as ns until sorted */
	int n;
	int failed;
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One launch; returns the elapsed ns, or 0 if the command failed; *cpu_us
 * gets its CPU time (user + system, the waited-for tree). */
static uint64_t
run_once(char **argv, int devnull, uint64_t *cpu_us)
{
	struct rusage ru;
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	int status;

	if (pid < 0) {
		perror("spawn_bench: fork");
		exit(1);
	}
	if (pid == 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("spawn_bench: wait4");
			exit(1);
		}
	uint64_t t1 = now_ns();
	if (cpu_us)
		*cpu_us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
			  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 0;
	return t1 - t0 ? t1 - t0 : 1;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array; p in [0, 100]. */
static double
pct(const uint64_t *v, int n, double p)
{
	double rank = p / 100.0 * (n - 1);
	int lo = (int)rank;
	double frac = rank - lo;

	if (lo + 1 >= n)
		return (double)v[n - 1];
	return (double)v[lo] * (1 - frac) + (double)v[lo + 1] * frac;
}

static void
usage(void)
{
	fputs("usage: spawn_bench [-n RUNS] [-w WARMUP] [-t] -- LABEL CMD [ARGS...] "
	      "[:: LABEL CMD [ARGS...]]...\n"
	      "  CMD is an absolute path (no PATH lookup, no shell).\n",
	      stderr);
	exit(2);
}

int
main(int argc, char **argv)
{
	struct cmd cmds[MAXCMDS];
	int ncmds = 0, runs = 200, warmup = 10, tsv = 0, opt;

	while ((opt = getopt(argc, argv, "n:w:t")) != -1) {
		switch (opt) {
		case 'n':
			runs = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 't':
			tsv = 1;
			break;
		default:
			usage();
		}
	}
	if (runs < 1 || warmup < 0 || optind >= argc)
		usage();

	/* Split the rest at "::" into LABEL CMD ARGS groups (in place). */
	for (int i = optind; i < argc;) {
		int j = i;

		while (j < argc && strcmp(argv[j], "::") != 0)
			j++;
		if (j - i < 2 || ncmds == MAXCMDS)
			usage();
		cmds[ncmds] = (struct cmd){.label = argv[i], .argv = argv + i + 1};
		if (argv[i + 1][0] != '/') {
			fprintf(stderr, "spawn_bench: %s: '%s' is not an absolute path\n", argv[i],
				argv[i + 1]);
			return 2;
		}
		cmds[ncmds].ns = calloc((size_t)runs, sizeof(uint64_t));
		cmds[ncmds].cpu = calloc((size_t)runs, sizeof(uint64_t));
		if (!cmds[ncmds].ns || !cmds[ncmds].cpu)
			return 1;
		argv[j < argc ? j : argc] = NULL; /* argv[argc] is NULL already */
		ncmds++;
		i = j + 1;
	}

	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (devnull < 0) {
		perror("spawn_bench: /dev/null");
		return 1;
	}
	/* Warm-up: page cache, dentries, the dynamic linker's caches. */
	for (int w = 0; w < warmup; w++)
		for (int c = 0; c < ncmds; c++)
			if (!run_once(cmds[c].argv, devnull, NULL) && w == 0)
				fprintf(stderr, "spawn_bench: warning: %s fails\n", cmds[c].label);

	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < ncmds; k++) {
			struct cmd *c = &cmds[(r + k) % ncmds];
			uint64_t cpu = 0, t = run_once(c->argv, devnull, &cpu);

			if (t) {
				c->cpu[c->n] = cpu;
				c->ns[c->n++] = t;
			} else {
				c->failed++;
			}
		}
	}

	double base = 0;

	printf("%-14s %6s %9s %9s %9s %9s %9s %10s %9s\n", "command", "runs", "median", "p10",
	       "p90", "min", "mean", "overhead", "cpu");
	for (int c = 0; c < ncmds; c++) {
		struct cmd *m = &cmds[c];
		double sum = 0, med;

		if (m->n == 0) {
			printf("%-14s %6d   all runs failed\n", m->label, 0);
			continue;
		}
		qsort(m->ns, (size_t)m->n, sizeof(uint64_t), cmp_u64);
		qsort(m->cpu, (size_t)m->n, sizeof(uint64_t), cmp_u64);
		for (int i = 0; i < m->n; i++)
			sum += (double)m->ns[i];
		med = pct(m->ns, m->n, 50);
		if (c == 0)
			base = med;
		printf("%-14s %6d %7.3fms %7.3fms %7.3fms %7.3fms %7.3fms %+8.3fms %7.3fms",
		       m->label, m->n, med / 1e6, pct(m->ns, m->n, 10) / 1e6,
		       pct(m->ns, m->n, 90) / 1e6, (double)m->ns[0] / 1e6, sum / m->n / 1e6,
		       (med - base) / 1e6, pct(m->cpu, m->n, 50) / 1e3);
		if (m->failed)
			printf("  (%d failed)", m->failed);
		putchar('\n');
	}
	if (tsv)
		for (int c = 0; c < ncmds; c++)
			if (cmds[c].n)
				printf("summary\t%s\t%.1f\t%.1f\t%.1f\t%.1f\n", cmds[c].label,
				       pct(cmds[c].ns, cmds[c].n, 50) / 1e3,
				       pct(cmds[c].ns, cmds[c].n, 10) / 1e3,
				       pct(cmds[c].ns, cmds[c].n, 90) / 1e3,
				       pct(cmds[c].cpu, cmds[c].n, 50));
	return 0;
}
