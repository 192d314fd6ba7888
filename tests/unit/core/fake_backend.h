/* fake_backend.h - a backend that runs nothing, behind the seam every
 * isolation level plugs into (struct backend_ops, supervise/backend.c).
 *
 * fake_backend.c defines backend_for(): linked before libwarden_core.a,
 * it is the definition the linker takes, so supervise/backend.o (which
 * holds nothing else) is never pulled from the archive and every
 * sandbox the library makes in the test process gets this table.  It
 * records what reached it, in order, with the fields of each command's
 * exec request, so a test sees which stages ran and what the pipeline
 * handed the isolation layer.
 *
 * fake-monitor (fake_monitor.c) is warden-monitor linked with it: a
 * session's commands reach the fake in that process, which writes each
 * note, and "exec-req ARGV|TIMEOUT_MS|OUTPUT_LIMIT|CWD" for an exec, as
 * lines of the file fake_trace_path (STATE_DIR/fake-trace there). */
#ifndef WD_TEST_FAKE_BACKEND_H
#define WD_TEST_FAKE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fake_seen {
	int prepare, spawn, ready, exec, destroy;
	/* the last exec request: argv joined with spaces, the limits, cwd */
	char argv[512];
	uint64_t timeout_ms, output_limit;
	char cwd[256];
	unsigned flags;
	int isolation;	     /* the spec's level the sandbox was made for */
	char workspace[512]; /* the spec's workspace */
	/* every stage that reached the fake and every event the test's
	 * handler saw (fake_note), comma-separated, in order */
	char trace[2048];
};
extern struct fake_seen fake;

/* NULL (the default): notes are kept in memory only. */
extern const char *fake_trace_path;

/* Forget everything seen. */
void fake_reset(void);
/* Append what to the trace (thread-safe). */
void fake_note(const char *what);
/* What the next exec prints on stdout and how long it says it ran
 * (the result the fake returns: RAN, exit 0). */
void fake_set_output(const char *text);

#endif
