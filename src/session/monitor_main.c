/* warden-monitor: a session's monitor (session/monitor.c), started by
 * wd_session_create() and wd_session_start() as conmon is by podman:
 *
 *     warden-monitor STATE_DIR ID        (fd 3: where it says it is ready)
 *
 * Not for people: `warden create` and `warden start` run it. */
#include "session/session.h"

int
main(int argc, char **argv)
{
	return session_monitor_main(argc, argv);
}
