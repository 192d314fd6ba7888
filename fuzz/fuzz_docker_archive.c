/* fuzz_docker_archive: warden's reader of a docker save tarball
 * (core/image_oci.c), which `warden image import` runs on a file from
 * anywhere before umoci sees it.  Input: the tarball's bytes.
 *
 * Invariants: the reader either fails with a message or writes an OCI
 * layout whose only files are oci-layout, index.json and blobs/sha256/HEX,
 * each blob's content hashing to its name: no name from the archive
 * became a path, and nothing is written outside the output directory. */
#include "core/image-internal.h"
#include "util/sha256.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void
cleanup(void)
{
	wd_rm_tree_at(AT_FDCWD, dir);
}

static void
check_blobs(const char *out)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/blobs/sha256", out);
	DIR *d = opendir(p);
	if (!d)
		abort();
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char f[PATH_MAX];
		snprintf(f, sizeof(f), "%s/%s", p, e->d_name);
		struct stat st;
		if (lstat(f, &st) < 0 || !S_ISREG(st.st_mode))
			abort();
		int fd = open(f, O_RDONLY | O_CLOEXEC);
		struct wd_sha256 h;
		wd_sha256_init(&h);
		char buf[65536];
		ssize_t k;
		while (fd >= 0 && (k = read(fd, buf, sizeof(buf))) > 0)
			wd_sha256_update(&h, buf, (size_t)k);
		if (fd >= 0)
			close(fd);
		unsigned char md[32];
		char hex[65];
		wd_sha256_final(&h, md);
		wd_sha256_hex(md, hex);
		if (strcmp(hex, e->d_name))
			abort(); /* a blob not named by its digest */
	}
	closedir(d);
	d = opendir(out);
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "blobs") && strcmp(e->d_name, "index.json") &&
		    strcmp(e->d_name, "oci-layout"))
			abort(); /* something else in the layout */
	if (d)
		closedir(d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s/wd-fuzz-docker-XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	char tar[PATH_MAX], out[PATH_MAX];
	snprintf(tar, sizeof(tar), "%s/archive.tar", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	int fd = open(tar, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && wd_write_all(fd, data, size) < 0))
		abort();
	close(fd);
	wd_rm_tree_at(AT_FDCWD, out);
	if (mkdir(out, 0700) < 0)
		abort();
	struct wd_err err = {0};
	int rc = image_docker_to_oci(tar, out, &err);
	if (rc < 0 && !err.msg[0])
		abort(); /* a failure without a message */
	if (rc == 0) {
		char p[PATH_MAX];
		struct stat st;
		snprintf(p, sizeof(p), "%s/index.json", out);
		if (stat(p, &st) < 0)
			abort();
		check_blobs(out);
	}
	/* the directory holds the archive and the layout only */
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, "archive.tar") && strcmp(e->d_name, "out"))
			abort();
	if (d)
		closedir(d);
	return 0;
}
