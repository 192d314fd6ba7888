/* proc_stats.h: what an embedding program can see of itself, for the
 * tests that run sandboxes through the library (descriptors, children,
 * resident memory), from /proc. */
#ifndef WD_TEST_PROC_STATS_H
#define WD_TEST_PROC_STATS_H

#include <dirent.h>
#include <stdio.h>

/* Open descriptors of this process (the directory's own not counted). */
static inline int
proc_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

/* Children of any thread of this process, zombies included. */
static inline int
proc_count_children(void)
{
	char path[300], buf[4096];
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		while (fscanf(f, "%4095s", buf) == 1)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static inline long
proc_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kb = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

#endif
