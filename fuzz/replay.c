/* replay: without -Dfuzz=enabled, each fuzz target links this main and
 * replays its corpus (fuzz/corpus/<target>/) as an ordinary test, every
 * file whole and cut at each of its first 256 lengths.  Prints TAP. */
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	char *names[4096];
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < 4096)
		if (de->d_name[0] != '.')
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp);
	printf("TAP version 13\n1..%zu\n", n);
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]);
		FILE *f = fopen(path, "rb");
		if (!f) {
			printf("not ok %zu - %s: cannot open\n", i + 1, names[i]);
			continue;
		}
		size_t cap = 1 << 16, len = 0, got;
		uint8_t *buf = malloc(cap);
		while ((got = fread(buf + len, 1, cap - len, f)) > 0)
			if ((len += got) == cap)
				buf = realloc(buf, cap *= 2);
		fclose(f);
		/* each input at an exact-size allocation, so ASan sees overreads */
		for (size_t cut = 0; cut <= len && cut < 256; cut++) {
			uint8_t *c = malloc(cut ? cut : 1);
			memcpy(c, buf, cut);
			LLVMFuzzerTestOneInput(c, cut);
			free(c);
		}
		uint8_t *whole = malloc(len ? len : 1);
		memcpy(whole, buf, len);
		LLVMFuzzerTestOneInput(whole, len);
		free(whole);
		free(buf);
		printf("ok %zu - %s\n", i + 1, names[i]);
		free(names[i]);
	}
	return 0;
}
