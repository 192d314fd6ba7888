/* fake_monitor.c - warden-monitor (session/monitor.c) with the fake backend:
 *
 *     fake-monitor STATE_DIR ID
 *
 * wd_session_create() starts it with a fixed environment, so what reached
 * the fake is written to STATE_DIR/fake-trace (fake_backend.h). */
#include "session/session.h"
#include "fake_backend.h"

#include <stdio.h>

int
main(int argc, char **argv)
{
	static char path[4096];
	if (argc > 1) {
		snprintf(path, sizeof(path), "%s/fake-trace", argv[1]);
		fake_trace_path = path;
	}
	return session_monitor_main(argc, argv);
}
