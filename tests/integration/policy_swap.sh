#!/usr/bin/env bash
# A symlink swapped after the check.  `warden check` judged data (a plain
# file) inside the workspace; then data becomes a link to a host file.
#  - the gate of `warden run` checks again at execution and refuses it;
#  - even a run that was never checked (no policy) cannot follow the link
#    to the host: in the jail, the workspace is /workspace and nothing of
#    the host but read-only system directories exists, so the link's target
#    is not there.  The check (openat2 BENEATH on the workspace) and the use
#    (a path lookup in a root that holds only the workspace) agree.
. "$(dirname "$0")/policy_lib.sh"
need_run
cd "$WS"
cat >"$T/p.json" <<'J'
{"version": 1, "programs": {"cat": {}}}
J
echo fine >"$WS/data"
expect_rc 0 "check: data is inside" "$WARDEN" check --policy "$T/p.json" -- cat data
rm "$WS/data"
ln -s "$T/outside/secret" "$WS/data"
expect_rc 126 "run re-checks: the swapped link is refused" "$WARDEN" run --policy "$T/p.json" -- cat data
expect_in "$T/err" "resolves to $T/outside/secret" "  ... naming the host target"
"$WARDEN" run -w "$WS" -- /bin/cat data >"$T/out" 2>"$T/err"
expect_not_in "$T/out" "host secret" "unchecked run: the jail does not reach the host file"
# relative link climbing out of the workspace
rm "$WS/data"
ln -s ../outside/secret "$WS/data"
"$WARDEN" run -w "$WS" -- /bin/cat data >"$T/out" 2>"$T/err"
expect_not_in "$T/out" "host secret" "unchecked run: '..' stops at the jail's root"
# /proc/self/root inside the jail is the jail's root, not the host's
"$WARDEN" run -w "$WS" -- /bin/cat "/proc/self/root$T/outside/secret" >"$T/out" 2>"$T/err"
expect_not_in "$T/out" "host secret" "unchecked run: /proc/self/root is the jail's root"
finish
