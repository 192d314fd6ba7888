/* jail/landlock: Landlock as a second fence behind the mounts.
 *
 * The ABI is negotiated (landlock_create_ruleset with
 * LANDLOCK_CREATE_RULESET_VERSION) and every right that ABI offers is
 * handled; rules then grant back what the jail needs.  Applied in the
 * command's process after NoNewPrivs and before seccomp. */
#ifndef WD_JAIL_LANDLOCK_H
#define WD_JAIL_LANDLOCK_H

#include "util/util.h"

struct jail_landlock_rules {
	const char *const *ro_paths;  /* read files, read dirs, execute (NULL-terminated) */
	const char *const *rw_paths;  /* every filesystem right (NULL-terminated) */
	const char *const *dev_paths; /* read/write files and ioctl on devices (NULL-terminated) */
	const uint16_t *ports;	      /* TCP ports allowed for bind and connect */
	size_t nports;
	bool handle_net; /* fence TCP bind/connect (ABI >= 4) */
	bool scope;	 /* abstract unix sockets and signals (ABI >= 6) */
};

/* The host's Landlock ABI: > 0, or 0 when Landlock is unavailable/disabled. */
int jail_landlock_abi(void);

/* Whether a sandbox may run on a host whose Landlock ABI is abi.  At
 * the process level Landlock is the only write fence (no mount namespace:
 * the command sees the host's file system with its uid's rights), so ABI
 * 0 is refused (WD_E_UNSUPPORTED, naming Landlock and --best-effort)
 * unless best_effort; the container level has its mounts as the fence and
 * runs either way.  0 or -ENOTSUP. */
int jail_landlock_required(bool container, int abi, bool best_effort, struct wd_err *err);

/* Restrict the calling thread.  abi is the value from jail_landlock_abi()
 * (taken in the supervisor before clone).  Paths that do not exist are
 * skipped; a path that is not a directory gets only the file rights of its
 * list (execute, read, write, truncate, ioctl_dev).  handle_net takes
 * effect from ABI 4 and scope from ABI 6; below that they are silently not
 * enforced, so the caller reports the ABI (or refuses) as its policy says.
 * Sets NoNewPrivs itself (landlock_restrict_self requires it).  No
 * allocation, no formatting: safe between clone() and execve().
 * Returns 0 or -errno (-EOPNOTSUPP when abi <= 0); err gets only code,
 * errno and step (JAIL_STEP_6F_LANDLOCK). */
int jail_landlock_apply(const struct jail_landlock_rules *rules, int abi, struct wd_err *err);

/* The two halves of jail_landlock_apply(), for a ruleset made once and
 * entered by many processes (pid 1 builds it, each command restricts
 * itself with it: every landlock_restrict_self() makes a new domain).
 * jail_landlock_ruleset returns the ruleset fd (close-on-exec) or -errno;
 * jail_landlock_restrict sets NoNewPrivs and enters it: 0 or -errno.
 * No allocation, no formatting. */
int jail_landlock_ruleset(const struct jail_landlock_rules *rules, int abi, struct wd_err *err);
int jail_landlock_restrict(int ruleset);

#endif
