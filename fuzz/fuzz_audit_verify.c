/* fuzz_audit_verify: the audit chain verifier over arbitrary logs.  Input:
 * the log, optionally followed by a NUL byte and a head file.
 *
 * Both forms run and must agree to the byte: audit_verify_buffer (the log
 * in memory) and audit_verify_file (the log and its head written to files,
 * streamed back).  The fuzz build compiles verify.c with a 7-byte initial
 * read buffer (AUDIT_VERIFY_BUF), so that nearly every line crosses a read,
 * a compaction and a growth of the stream's buffer. */
#include "audit/audit.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], logp[96], headp[104];

static void
cleanup(void)
{
	unlink(logp);
	unlink(headp);
	rmdir(dir);
}

static void
put(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || wd_write_all(fd, buf, len) < 0)
		abort();
	close(fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		/* tmpfs where there is one: millions of rewrites */
		snprintf(dir, sizeof(dir), "%s/wd-fuzz-audit-XXXXXX",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
		if (!mkdtemp(dir))
			abort();
		snprintf(logp, sizeof(logp), "%s/log", dir);
		snprintf(headp, sizeof(headp), "%s/log.head", dir);
		atexit(cleanup);
	}
	const char *buf = (const char *)data;
	const char *nul = memchr(buf, '\0', size);
	size_t log_len = nul ? (size_t)(nul - buf) : size;
	struct audit_verify r, f;
	if (nul)
		audit_verify_buffer(buf, log_len, nul + 1, size - log_len - 1, &r);
	else
		audit_verify_buffer(buf, size, NULL, 0, &r);
	if (!r.ok && !r.message[0])
		abort();

	put(logp, buf, log_len);
	if (nul)
		put(headp, nul + 1, size - log_len - 1);
	else
		unlink(headp);
	struct wd_err e = {0};
	if (audit_verify_file(logp, &f, &e) < 0) {
		fprintf(stderr, "audit_verify_file: %s\n", e.msg);
		abort();
	}
	if (r.ok != f.ok || r.events != f.events || r.bad_line != f.bad_line ||
	    r.head_checked != f.head_checked || strcmp(r.message, f.message)) {
		fprintf(stderr,
			"buffer and file disagree:\n  buffer: ok %d events %zu line %zu head %d "
			"'%s'\n  file:   ok %d events %zu line %zu head %d '%s'\n",
			r.ok, r.events, r.bad_line, r.head_checked, r.message, f.ok, f.events,
			f.bad_line, f.head_checked, f.message);
		abort();
	}
	return 0;
}
