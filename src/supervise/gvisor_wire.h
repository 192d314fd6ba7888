/* supervise/gvisor_wire: the resident executor's protocol, between warden
 * (gvisor_exec.c) and `warden-init serve` (gvisor_init.c), the init of a
 * gVisor session.
 *
 * The channel is the init's stdin (requests, warden -> executor) and
 * stdout (replies), two host pipes given to `runsc create`: no name in
 * the sandbox's file system or network leads to it, and the sandbox's
 * commands run as another uid (1000) than the executor (0), so that
 * /proc/1/fd, ptrace and kill are refused to them (gvisor_init.c says
 * why this holds in gVisor).
 *
 * Every message is a frame: a 12-byte header, then len bytes.  Both sides
 * check every field before use: the type is known, len is within the
 * type's bound, id names a command the reader knows (warden: one it
 * started; executor: one it runs), and a payload parses exactly.  Warden
 * treats a frame that fails a check as the executor lost: it ends the
 * sandbox.  Integers are in host byte order (both ends on one host). */
#ifndef WD_SUPERVISE_GVISOR_WIRE_H
#define WD_SUPERVISE_GVISOR_WIRE_H

#include <stdint.h>

struct gvw_hdr {
	uint32_t len;  /* payload bytes after the header */
	uint16_t type; /* enum gvw_type */
	uint16_t aux;  /* OUT: the stream (1 or 2); else 0 */
	uint32_t id;   /* the command (warden's number, never 0); HELLO: 0 */
};

enum gvw_type {
	/* warden -> executor */
	GVW_RUN = 1,	/* u32 argc, u32 envc, cwd NUL, argc strings NUL, envc strings NUL */
	GVW_KILL = 2,	/* u32 signal: to the command's process group */
	GVW_CLOSE = 3,	/* stop relaying the command's output (warden's drain grace ran out) */
	GVW_ATTACH = 4, /* no payload; a vacant sandbox only (`serve vacant`), once, before any
			 * RUN: GVW_STAGE_WS bound onto /workspace, GVW_STAGE detached,
			 * CAP_SYS_ADMIN dropped; replies EXIT (0) and DONE, or FAIL */
	GVW_PAUSE = 5,	/* no payload: stop reading the command's output (warden holds
			 * GVW_PAUSE_AT bytes of it that its reader has not taken) */
	GVW_RESUME = 6, /* no payload: read it again */
	/* executor -> warden */
	GVW_HELLO = 10, /* GVW_MAGIC: the executor listens */
	GVW_OUT = 11,	/* aux = stream; the command's bytes */
	GVW_EXIT = 12,	/* i32 wait status of the command's own process */
	GVW_DONE = 13,	/* the command's output ended (EOF on both, or CLOSE); id is free */
	GVW_FAIL = 14,	/* i32 errno: the command could not be started (pipe, fork) */
};

#define GVW_MAGIC "warden-init serve 1"
/* A vacant sandbox's (warm pool's) staging mount: a host directory of
 * warden's, root's and empty; at attach warden mounts the workspace on
 * its subdirectory w in the gofer's mount namespace (the gofer walks by
 * name from the mount's root, so it sees a mount below that root, never
 * one on it), and the executor binds GVW_STAGE_WS onto /workspace. */
#define GVW_STAGE "/.warden-stage"
#define GVW_STAGE_WS GVW_STAGE "/w"
/* Bounds: a request's argument and environment text (the kernel's
 * ARG_MAX-like bound at the container level is larger; a command past
 * this one goes through runsc exec), counts, and an output chunk. */
#define GVW_MAX_REQUEST (512u << 10)
#define GVW_MAX_STRINGS 8192u
#define GVW_MAX_OUT (64u << 10)
/* Output warden holds for one command whose reader is behind: past
 * this it sends PAUSE, and RESUME once all of it is taken.  What can
 * still arrive after a PAUSE is what the executor had written into the
 * reply pipe (1 MiB) and one chunk, so a command's held output stays
 * below GVW_PAUSE_AT + 1 MiB + GVW_MAX_OUT. */
#define GVW_PAUSE_AT (256u << 10)
/* Commands at once in one sandbox through the executor (more: runsc exec). */
#define GVW_MAX_CMDS 64

#endif
