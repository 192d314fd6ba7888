/* audit: files that are not files, and logs too large to hold in memory.
 *
 * A FIFO given as the log or its head must be refused at once (an open or a
 * read of one blocks until a writer comes, possibly never), a device such
 * as /dev/zero refused before a byte is read, and verification must run in
 * memory bounded by the longest line, not by the log: each test that could
 * hang has a deadline, each that could grow without bound a memory cap. */
#include "audit/audit.h"
#include "config/config.h"
#include "util/sha256.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static char dir[64];
static char logp[PATH_MAX];
static char headp[PATH_MAX + 8];

static void
setup(void)
{
	strcpy(dir, "/tmp/wd-auditf-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(logp, sizeof(logp), "%s/audit.jsonl", dir);
	snprintf(headp, sizeof(headp), "%s.head", logp);
}

static void
teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed\n");
}

TestSuite(audit_files, .init = setup, .fini = teardown);

/* Cap this test process's address space, so that reading a whole endless
 * or huge file fails (an abort in wd_xmalloc) instead of eating the host.
 * Not under ASan, whose shadow memory needs terabytes of address space. */
static void
cap_memory(size_t bytes)
{
	if (UNDER_ASAN)
		return;
	struct rlimit rl = {bytes, bytes};
	cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
}

/* A hang fails the test (SIGALRM kills its process) instead of stalling
 * the suite.  Not Criterion's .timeout: with timed tests its runner
 * leaks (Criterion 2.4.1: 96 bytes in 2 calloc'd objects), which fails the ASan run. */
static void
deadline(unsigned seconds)
{
	alarm(UNDER_ASAN ? 3 * seconds : seconds);
}

static long
maxrss_kib(void)
{
	struct rusage ru;
	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

static void
append_n(const char *path, int n)
{
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_assert_eq(audit_open(path, &a, &e), 0, "%s", e.msg);
	for (int i = 0; i < n; i++) {
		json_t *ev = json_pack("{s:s,s:i}", "event", "decision", "n", i);
		int rc = audit_append(a, ev, &e);
		json_decref(ev);
		cr_assert_gt(rc, 0, "%s", e.msg);
	}
	audit_close(a);
}

/* Writes a valid chain of n events of about line_len bytes each, without
 * going through audit_append (a million appends would take minutes). */
static void
write_chain(FILE *f, size_t n, size_t line_len, char last_hash[65])
{
	char prev[65] = AUDIT_ZERO_HASH;
	size_t pad = line_len > 120 ? line_len - 120 : 1;
	char *padding = malloc(pad + 1);
	cr_assert_not_null(padding);
	memset(padding, 'p', pad);
	padding[pad] = '\0';
	size_t cap = pad + 256;
	char *line = malloc(cap);
	cr_assert_not_null(line);
	for (size_t i = 1; i <= n; i++) {
		int len = snprintf(line, cap,
				   "{\"seq\":%zu,\"event\":\"x\",\"pad\":\"%s\",\"prev\":\"%s\"}",
				   i, padding, prev);
		cr_assert(len > 0 && (size_t)len < cap);
		wd_sha256_hex_of(line, (size_t)len, prev);
		line[len] = '\n';
		cr_assert_eq(fwrite(line, 1, (size_t)len + 1, f), (size_t)len + 1);
	}
	memcpy(last_hash, prev, 65);
	free(line);
	free(padding);
}

static void
write_head(size_t seq, const char hash[65])
{
	FILE *f = fopen(headp, "w");
	cr_assert_not_null(f);
	fprintf(f, "{\"seq\":%zu,\"hash\":\"%s\"}\n", seq, hash);
	fclose(f);
}

static bool
has(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

/* ---- verify ---- */

Test(audit_files, verify_refuses_a_fifo_at_once)
{
	deadline(10);
	cr_assert_eq(mkfifo(logp, 0600), 0);
	struct audit_verify r;
	struct wd_err e = {0};
	cr_expect_lt(audit_verify_file(logp, &r, &e), 0);
	cr_expect(has(e.msg, logp), "%s", e.msg);
	cr_expect(has(e.msg, "not a regular file"), "%s", e.msg);
	cr_expect_eq(e.code, WD_E_INVAL);
}

Test(audit_files, verify_refuses_a_device_before_reading)
{
	deadline(10);
	cap_memory(1u << 30);
	struct audit_verify r;
	struct wd_err e = {0};
	cr_expect_lt(audit_verify_file("/dev/zero", &r, &e), 0);
	cr_expect(has(e.msg, "/dev/zero"), "%s", e.msg);
	cr_expect(has(e.msg, "not a regular file"), "%s", e.msg);
}

Test(audit_files, verify_refuses_a_directory)
{
	struct audit_verify r;
	struct wd_err e = {0};
	cr_expect_lt(audit_verify_file(dir, &r, &e), 0);
	cr_expect(has(e.msg, "not a regular file"), "%s", e.msg);
}

Test(audit_files, verify_refuses_a_fifo_as_the_head)
{
	deadline(10);
	append_n(logp, 2);
	cr_assert_eq(unlink(headp), 0);
	cr_assert_eq(mkfifo(headp, 0600), 0);
	struct audit_verify r;
	struct wd_err e = {0};
	cr_expect_lt(audit_verify_file(logp, &r, &e), 0);
	cr_expect(has(e.msg, headp), "%s", e.msg);
	cr_expect(has(e.msg, "not a regular file"), "%s", e.msg);
}

Test(audit_files, verify_reports_a_missing_log_by_name)
{
	struct audit_verify r;
	struct wd_err e = {0};
	cr_expect_eq(audit_verify_file(logp, &r, &e), -ENOENT);
	cr_expect(has(e.msg, logp), "%s", e.msg);
}

/* 128 MiB of valid events: holding the file would take 128 MiB or more;
 * streaming takes a line's worth plus jansson's parse of it. */
Test(audit_files, verify_runs_in_constant_memory)
{
	deadline(120);
	if (UNDER_ASAN) {
		teardown(); /* a skipped test's .fini does not run */
		cr_skip_test("ASan's quarantine keeps up to 256 MiB of freed memory "
			     "resident; the release build measures this");
	}
	enum { LINE = 1024, EVENTS = 128 * 1024 };
	char last[65];
	FILE *f = fopen(logp, "w");
	cr_assert_not_null(f);
	write_chain(f, EVENTS, LINE, last);
	cr_assert_eq(fclose(f), 0);
	write_head(EVENTS, last);
	struct stat st;
	cr_assert_eq(stat(logp, &st), 0);
	cr_assert_geq(st.st_size, 120 << 20);

	long before = maxrss_kib();
	struct audit_verify r;
	struct wd_err e = {0};
	cr_assert_eq(audit_verify_file(logp, &r, &e), 0, "%s", e.msg);
	long grew = maxrss_kib() - before;
	cr_expect(r.ok, "%s", r.message);
	cr_expect(r.head_checked);
	cr_expect_eq(r.events, EVENTS);
	cr_expect_lt(grew, 16 * 1024, "verifying a %lld-byte log grew the peak RSS by %ld KiB",
		     (long long)st.st_size, grew);
}

/* A regular file of zeros with no newline: one endless line.  Reading
 * stops at the bound; before it, the whole gigabyte was read into memory. */
Test(audit_files, verify_stops_at_the_line_limit_in_a_huge_file)
{
	deadline(30);
	cap_memory(512u << 20);
	int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)4 << 30), 0);
	close(fd);
	struct audit_verify r;
	struct wd_err e = {0};
	cr_assert_eq(audit_verify_file(logp, &r, &e), 0, "%s", e.msg);
	cr_expect_not(r.ok);
	cr_expect_eq(r.bad_line, 1);
	cr_expect(has(r.message, "line 1: longer than"), "%s", r.message);
}

/* An event of exactly AUDIT_LINE_MAX bytes is read; one byte more is not,
 * in the file form and the buffer form (the fuzzer's) alike. */
static char *
event_of_length(size_t len, size_t seq, const char *prev)
{
	char *s = malloc(len + 2);
	cr_assert_not_null(s);
	int head = snprintf(s, len + 2, "{\"seq\":%zu,\"prev\":\"%s\",\"pad\":\"", seq, prev);
	cr_assert(head > 0 && (size_t)head + 2 < len);
	memset(s + head, 'p', len - (size_t)head - 2);
	memcpy(s + len - 2, "\"}", 2);
	s[len] = '\n';
	s[len + 1] = '\0';
	return s;
}

/* A log of two chained events, the second of len bytes; no head. */
static void
write_two_lines(size_t len, char **first, char **second)
{
	*first = event_of_length(200, 1, AUDIT_ZERO_HASH);
	char h[65];
	wd_sha256_hex_of(*first, 200, h);
	*second = event_of_length(len, 2, h);
	FILE *f = fopen(logp, "w");
	cr_assert_not_null(f);
	fwrite(*first, 1, 201, f);
	fwrite(*second, 1, len + 1, f);
	fclose(f);
	unlink(headp);
}

static void
check_line_limit(size_t len, bool want_ok)
{
	char *first, *second;
	write_two_lines(len, &first, &second);

	struct audit_verify r;
	struct wd_err e = {0};
	cr_assert_eq(audit_verify_file(logp, &r, &e), 0, "%s", e.msg);
	cr_expect_eq(r.ok, want_ok, "file, %zu bytes: %s", len, r.message);
	size_t blen = 201 + len + 1;
	char *buf = malloc(blen);
	cr_assert_not_null(buf);
	memcpy(buf, first, 201);
	memcpy(buf + 201, second, len + 1);
	struct audit_verify rb;
	audit_verify_buffer(buf, blen, NULL, 0, &rb);
	cr_expect_eq(rb.ok, want_ok, "buffer, %zu bytes: %s", len, rb.message);
	if (!want_ok) {
		cr_expect_eq(r.bad_line, 2);
		cr_expect(has(r.message, "line 2: longer than"), "%s", r.message);
		cr_expect_str_eq(r.message, rb.message);
	} else {
		cr_expect_eq(r.events, 2);
	}
	free(buf);
	free(first);
	free(second);
}

Test(audit_files, verify_reads_a_line_of_the_maximum_length)
{
	deadline(60);
	check_line_limit(AUDIT_LINE_MAX, true);
}

Test(audit_files, verify_refuses_a_line_one_byte_longer)
{
	deadline(60);
	check_line_limit(AUDIT_LINE_MAX + 1, false);
}

/* Appending reads the last line back: as long as the verifier may. */
Test(audit_files, append_after_a_last_line_of_the_maximum_length)
{
	deadline(60);
	char *first, *second;
	write_two_lines(AUDIT_LINE_MAX, &first, &second);
	append_n(logp, 1);
	struct audit_verify r;
	struct wd_err e = {0};
	cr_assert_eq(audit_verify_file(logp, &r, &e), 0, "%s", e.msg);
	cr_expect(r.ok, "%s", r.message);
	cr_expect_eq(r.events, 3);
	free(first);
	free(second);
}

Test(audit_files, append_refuses_after_a_last_line_too_long)
{
	deadline(60);
	char *first, *second;
	write_two_lines(AUDIT_LINE_MAX + 1, &first, &second);
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_assert_eq(audit_open(logp, &a, &e), 0, "%s", e.msg);
	json_t *ev = json_pack("{s:s}", "event", "x");
	cr_expect_lt(audit_append(a, ev, &e), 0);
	cr_expect(has(e.msg, "longer than"), "%s", e.msg);
	json_decref(ev);
	audit_close(a);
	free(first);
	free(second);
}

Test(audit_files, verify_refuses_an_oversized_head)
{
	append_n(logp, 1);
	FILE *f = fopen(headp, "a");
	cr_assert_not_null(f);
	for (int i = 0; i < 100000; i++)
		fputs("          ", f);
	fclose(f);
	struct audit_verify r;
	struct wd_err e = {0};
	cr_assert_eq(audit_verify_file(logp, &r, &e), 0, "%s", e.msg);
	cr_expect_not(r.ok);
	cr_expect(has(r.message, "head"), "%s", r.message);
}

/* ---- open and append ---- */

Test(audit_files, open_refuses_a_fifo_without_a_reader)
{
	deadline(10);
	cr_assert_eq(mkfifo(logp, 0600), 0);
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_expect_lt(audit_open(logp, &a, &e), 0);
	cr_expect_null(a);
	cr_expect(has(e.msg, logp), "%s", e.msg);
	cr_expect(has(e.msg, "not a regular file"), "%s", e.msg);
	cr_expect_eq(e.code, WD_E_INVAL);
}

Test(audit_files, open_refuses_a_fifo_with_a_reader)
{
	deadline(10);
	cr_assert_eq(mkfifo(logp, 0600), 0);
	int rd = open(logp, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(rd, 0);
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_expect_lt(audit_open(logp, &a, &e), 0);
	cr_expect(has(e.msg, "not a regular file"), "%s", e.msg);
	close(rd);
}

Test(audit_files, open_refuses_a_device)
{
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_expect_lt(audit_open("/dev/null", &a, &e), 0);
	cr_expect(has(e.msg, "/dev/null"), "%s", e.msg);
	cr_expect(has(e.msg, "not a regular file"), "%s", e.msg);
}

Test(audit_files, opened_log_is_blocking_and_cloexec)
{
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_assert_eq(audit_open(logp, &a, &e), 0, "%s", e.msg);
	int fl = fcntl(a->fd, F_GETFL), fdfl = fcntl(a->fd, F_GETFD);
	cr_expect_eq(fl & O_NONBLOCK, 0);
	cr_expect(fl & O_APPEND);
	cr_expect(fdfl & FD_CLOEXEC);
	audit_close(a);
}

/* The path swapped for a FIFO after the open: the append reads the last
 * line back by path, which must neither block nor chain onto another file. */
Test(audit_files, append_refuses_a_log_replaced_by_a_fifo)
{
	deadline(10);
	append_n(logp, 1);
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_assert_eq(audit_open(logp, &a, &e), 0, "%s", e.msg);
	char fifo[PATH_MAX + 8];
	snprintf(fifo, sizeof(fifo), "%s.fifo", logp);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(rename(fifo, logp), 0);
	json_t *ev = json_pack("{s:s}", "event", "x");
	cr_expect_lt(audit_append(a, ev, &e), 0);
	cr_expect(has(e.msg, logp), "%s", e.msg);
	json_decref(ev);
	audit_close(a);
}

Test(audit_files, append_refuses_a_log_replaced_by_another_file)
{
	append_n(logp, 2);
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_assert_eq(audit_open(logp, &a, &e), 0, "%s", e.msg);
	char other[PATH_MAX + 8];
	snprintf(other, sizeof(other), "%s.other", logp);
	append_n(other, 1);
	cr_assert_eq(rename(other, logp), 0);
	json_t *ev = json_pack("{s:s}", "event", "x");
	cr_expect_lt(audit_append(a, ev, &e), 0);
	cr_expect(has(e.msg, "replaced"), "%s", e.msg);
	json_decref(ev);
	audit_close(a);
}

/* A FIFO planted where the head's temporary file goes: the head is still
 * written (the temporary is created afresh), the append never blocks. */
Test(audit_files, append_is_not_blocked_by_a_fifo_at_the_head_temporary)
{
	deadline(10);
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.head.%d.tmp", logp, (int)getpid());
	cr_assert_eq(mkfifo(tmp, 0600), 0);
	append_n(logp, 2);
	struct audit_verify r;
	struct wd_err e = {0};
	cr_assert_eq(audit_verify_file(logp, &r, &e), 0, "%s", e.msg);
	cr_expect(r.ok, "%s", r.message);
	cr_expect(r.head_checked);
}

/* Nothing is written that the verifier would refuse to read back. */
Test(audit_files, append_refuses_an_event_longer_than_a_line)
{
	deadline(60);
	append_n(logp, 1);
	size_t n = AUDIT_LINE_MAX;
	char *big = malloc(n + 1);
	cr_assert_not_null(big);
	memset(big, 'b', n);
	big[n] = '\0';
	struct audit_log *a = NULL;
	struct wd_err e = {0};
	cr_assert_eq(audit_open(logp, &a, &e), 0, "%s", e.msg);
	json_t *ev = json_pack("{s:s,s:s}", "event", "x", "big", big);
	cr_expect_lt(audit_append(a, ev, &e), 0);
	cr_expect(has(e.msg, "longer than"), "%s", e.msg);
	json_decref(ev);
	audit_close(a);
	free(big);
	struct audit_verify r;
	cr_assert_eq(audit_verify_file(logp, &r, &e), 0, "%s", e.msg);
	cr_expect(r.ok, "%s", r.message);
	cr_expect_eq(r.events, 1);
}
