# shellcheck shell=bash
# Helpers for the policy integration tests (policy_*.sh): sourced.
# WARDEN is the built CLI; each test prints ok/not ok lines and exits 0, 1,
# or 77 when the host cannot run it (WD_MUST_WORK=1 makes that a failure).
set -uo pipefail
WARDEN=${WARDEN:?set WARDEN to the built warden}
WARDEN=$(readlink -f "$WARDEN")
T=$(mktemp -d /tmp/wd-pol-it.XXXXXXXX)
trap 'rm -rf "$T"' EXIT
WS=$T/ws
mkdir -p "$WS/tests" "$WS/sub" "$T/outside"
echo 'def test_a(): assert True' >"$WS/tests/test_a.py"
echo data >"$WS/file.txt"
echo "host secret" >"$T/outside/secret"
ln -s "$T/outside" "$WS/link-out"
export WARDEN_STATE_DIR=$T/state
failures=0

ok() { echo "ok - $*"; }
not_ok() {
	echo "not ok - $*"
	failures=$((failures + 1))
}
# expect_rc WANT DESC CMD...: run CMD (output to $T/out, $T/err), compare status
expect_rc() {
	local want=$1 desc=$2 rc
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" = "$want" ]; then
		ok "$desc (exit $rc)"
	else
		not_ok "$desc: exit $rc, expected $want"
		sed 's/^/#   /' "$T/out" "$T/err" | head -n 20
	fi
}
# expect_in FILE TEXT DESC
expect_in() {
	if grep -qF -- "$2" "$1"; then ok "$3"; else
		not_ok "$3: '$2' not in $(basename "$1")"
		sed 's/^/#   /' "$1" | head -n 10
	fi
}
expect_not_in() {
	if grep -qF -- "$2" "$1"; then
		not_ok "$3: '$2' found in $(basename "$1")"
	else ok "$3"; fi
}
skip() {
	echo "skip: $*"
	[ "${WD_MUST_WORK:-0}" = 1 ] && exit 1
	exit 77
}
need_run() {
	"$WARDEN" run -w "$WS" -- /bin/true >/dev/null 2>&1 ||
		skip "warden run does not work on this host ('warden doctor' says why)"
}
finish() {
	[ "$failures" = 0 ] && exit 0
	echo "$failures failed"
	exit 1
}
