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
#include "policy/store.h"

#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* A path as the kernel will resolve it, in out: realpath of the longest
 * part that exists, the rest as written (a file made later, such as the
 * store at the first pause or an audit log at the first event, lands
 * exactly there).  -1 when want is not absolute or too long. */
int
policy_path_real(const char *want, char *out, size_t cap)
{
	char head[PATH_MAX], real[PATH_MAX];
	if (!want || want[0] != '/' || strlen(want) >= sizeof(head))
		return -1;
	snprintf(head, sizeof(head), "%s", want);
	for (;;) {
		if (realpath(head, real)) {
			const char *tail = want + strlen(head);
			while (*tail == '/')
				tail++;
			int n = snprintf(out, cap, "%s%s%s", real,
					 *tail && strcmp(real, "/") ? "/" : "", tail);
			return n < 0 || (size_t)n >= cap ? -1 : 0;
		}
		char *slash = strrchr(head, '/');
		if (!slash)
			return -1;
		if (slash == head) {
			head[1] = '\0';
			continue;
		}
		*slash = '\0';
	}
}

/* The approval store as the kernel will resolve it, in out. */
static int
store_real(char *out, size_t cap)
{
	char want[PATH_MAX];
	if (wd_state_dir(want, sizeof(want), NULL) < 0)
		return -1;
	return policy_path_real(want, out, cap);
}

bool
policy_path_within(const char *path, const char *real)
{
	return path && real && at_or_below(path, real);
}

int
policy_store_within(const char *real, char *store, size_t cap)
{
	/* Why: a paused command runs once approvals/<id>.json exists in the
	 * store with a future "expires" (approval.c): the file *is* the
	 * human's yes.  A sandbox that can write the store (it lies in the
	 * workspace, or in a writable bind) writes that file for its own
	 * pause, and the model approves itself with its own write_file or a
	 * command (an attack pass; docs/threat-model.md, boundary 6).  The store cannot
	 * tell who wrote it, so it must be out of every sandbox's reach. */
	return store_real(store, cap) == 0 && real && at_or_below(store, real);
}

bool
policy_path_exposed(const char *path, const char *const *dirs, uid_t uid)
{
	const char *top = NULL;
	for (size_t i = 0; dirs[i] && !top; i++)
		if (at_or_below(path, dirs[i]))
			top = dirs[i];
	if (!top)
		return false;
	/* Why: at the process level the command writes what its uid may in
	 * these trees (Landlock allows them, and they are the host's).  A
	 * path there is out of its reach only if every existing entry from
	 * the path up to the tree belongs to someone else and is not
	 * writable by others (the path itself may be a file: an audit log);
	 * a path whose first directory below the tree does not exist yet is
	 * taken by whoever makes it first (in a sticky /tmp too: an attack
	 * pass wrote approvals/<id>.json into WARDEN_STATE_DIR=/tmp/...
	 * from an allowed command). */
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", path);
	bool seen = false;
	while (strcmp(p, top) && strlen(p) > strlen(top)) {
		struct stat st;
		if (lstat(p, &st) == 0) {
			if (st.st_uid == uid || (st.st_mode & S_IWOTH) ||
			    (seen ? !S_ISDIR(st.st_mode)
				  : !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
				return true;
			seen = true;
		} else if (seen) {
			return true; /* a parent vanished under a child: not ours to trust */
		}
		char *slash = strrchr(p, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	return !seen;
}

bool
policy_store_exposed(const char *const *dirs, uid_t uid, char *store, size_t cap)
{
	if (store_real(store, cap) < 0)
		return false;
	return policy_path_exposed(store, dirs, uid);
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
	char store[PATH_MAX];
	if (policy_store_within(real, store, sizeof(store)))
		return wd_err_set(err, WD_E_INVAL,
				  "workspace %s holds warden's state directory %s, where a sandbox "
				  "could write its own approvals; set WARDEN_STATE_DIR (or "
				  "XDG_STATE_HOME) outside the workspace",
				  real, store);
	return 0;
}
