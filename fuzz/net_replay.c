/* Replay main for the net fuzz targets when libFuzzer is not used: run
 * every file of the corpus directories given as arguments through
 * LLVMFuzzerTestOneInput, one TAP line each.  A crash fails the test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
main(int argc, char **argv)
{
	int n = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			printf("Bail out! cannot open %s\n", argv[i]);
			return 1;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			FILE *f = fopen(path, "rb");
			if (!f)
				continue;
			uint8_t *buf = malloc(1 << 20);
			size_t len = buf ? fread(buf, 1, 1 << 20, f) : 0;
			fclose(f);
			/* an exact-size copy, so ASan sees reads past the end */
			uint8_t *exact = malloc(len ? len : 1);
			if (exact && len)
				memcpy(exact, buf, len);
			LLVMFuzzerTestOneInput(exact, len);
			free(exact);
			free(buf);
			printf("ok %d - %s\n", ++n, e->d_name);
		}
		closedir(d);
	}
	printf("1..%d\n", n);
	return 0;
}
