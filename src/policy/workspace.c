/* workspace.c - which host directories may be a workspace.
 *
 * One rule for every front end: `warden check` and `warden run` judged the
 * workspace differently (`check --workspace /` allowed what `run`
 * refused), so the rule lives here, below both, and the run side calls it
 * too.  The workspace is writable by the sandbox (and, as root, idmapped
 * so the sandbox writes as its owner), and the policy's containment check
 * allows every path below it: whatever it contains, the command may read
 * and write.
 */
#include "policy/policy.h"

#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a is b, or below it */
static bool
at_or_below(const char *a, const char *b)
{
	size_t n = strlen(b);
	if (n == 1 && b[0] == '/')
		return true;
	return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/');
}

static int
home_of_caller(char *out, size_t cap)
{
	const char *h = getenv("HOME");
	if (!h || h[0] != '/') {
		/* no usable $HOME: the account's home directory */
		struct passwd *pw = getpwuid(getuid());
		h = pw ? pw->pw_dir : NULL;
	}
	char real[PATH_MAX];
	if (!h || h[0] != '/')
		return -1;
	/* A home that does not exist (yet) is compared as written. */
	if (realpath(h, real))
		h = real;
	int n = snprintf(out, cap, "%s", h);
	if (n < 0 || (size_t)n >= cap)
		return -1;
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

int
policy_workspace_validate(const char *real, struct wd_err *err)
{
	/* A system directory there would hand the sandbox the host: /etc's
	 * passwd and sudoers, /usr/bin's programs, /proc and /sys of the
	 * host.  / contains all of them; /root and /var hold credentials,
	 * logs and other services' state. */
	static const char *const system_dirs[] = {"/etc",   "/usr",   "/bin",	 "/sbin", "/lib",
						  "/lib32", "/lib64", "/libx32", "/boot", "/proc",
						  "/sys",   "/dev",   "/run"};
	if (!real || real[0] != '/')
		return wd_err_set(err, WD_E_INVAL, "workspace '%s' is not an absolute path",
				  real ? real : "");
	bool system = !strcmp(real, "/") || !strcmp(real, "/root") || !strcmp(real, "/var");
	for (size_t i = 0; i < WD_ARRAY_SIZE(system_dirs) && !system; i++)
		system = at_or_below(real, system_dirs[i]);
	if (system)
		return wd_err_set(err, WD_E_INVAL,
				  "workspace %s is a system directory; use a project directory",
				  real);
	/* A home directory holds the caller's credentials and start-up files
	 * (.ssh, .bashrc, .gitconfig, tokens): a sandbox that can write them
	 * reaches the caller's next login.  A directory containing it
	 * (/home) contains them too. */
	char home[PATH_MAX];
	if (home_of_caller(home, sizeof(home)) == 0 && at_or_below(home, real))
		return wd_err_set(err, WD_E_INVAL,
				  "workspace %s %s your home directory %s, with your credentials "
				  "and start-up files; use a project directory below it",
				  real, strcmp(home, real) ? "contains" : "is", home);
	return 0;
}
