/* fuzz_ws_baseline: the reader of a cow sandbox's baseline file (the host
 * workspace as the sandbox first saw it; workspace/baseline.c), which
 * every diff and apply loads from the state directory to tell the host's
 * edits from the sandbox's (docs/threat-model.md).  Input: the file's bytes.
 *
 * Invariants: a load either fails with a message or gives entries that
 * are sorted, NUL-free, each found by ws_baseline_find; such a baseline,
 * changed as apply's rebase changes it (one entry removed, one added),
 * saved and loaded again, is the same to the byte. */
#include "workspace/workspace.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static int dfd = -1;

static void
cleanup(void)
{
	unlinkat(dfd, "baseline", 0);
	unlinkat(dfd, "baseline.new", 0);
	close(dfd);
	rmdir(dir);
}

static bool
same(const struct ws_baseline *a, const struct ws_baseline *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct ws_entry *x = &a->e[i], *y = &b->e[i];
		if (strcmp(x->path, y->path) || x->mode != y->mode || x->size != y->size ||
		    x->mtime_ns != y->mtime_ns || x->ino != y->ino)
			return false;
	}
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (dfd < 0) {
		/* tmpfs where there is one: millions of rewrites */
		snprintf(dir, sizeof(dir), "%s/wd-fuzz-base-XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir) || (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			abort();
		atexit(cleanup);
	}
	int fd = openat(dfd, "baseline", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && wd_write_all(fd, data, size) < 0))
		abort();
	close(fd);
	struct wd_err err = {0};
	struct ws_baseline *b = NULL;
	if (ws_baseline_load(dfd, &b, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a refusal says why */
		return 0;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (strlen(b->e[i].path) == 0 || (i && strcmp(b->e[i - 1].path, b->e[i].path) >= 0))
			abort();
		if (ws_baseline_find(b, b->e[i].path) != &b->e[i])
			abort();
	}
	/* what apply's rebase does: forget one path, learn another */
	struct stat st = {.st_mode = S_IFREG | 0644, .st_size = 7, .st_ino = 42};
	if (b->n)
		ws_baseline_set(b, b->e[b->n / 2].path, NULL);
	ws_baseline_set(b, "fuzz/added", &st);
	if (!ws_baseline_find(b, "fuzz/added"))
		abort();
	struct ws_baseline *again = NULL;
	if (ws_baseline_save(dfd, b, &err) < 0 || ws_baseline_load(dfd, &again, &err) < 0 ||
	    !same(b, again))
		abort();
	ws_baseline_free(again);
	ws_baseline_free(b);
	return 0;
}
