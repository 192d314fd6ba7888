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
# pty_answer STDIN ANSWER CMD...: run CMD under a pty (its controlling
# terminal; STDIN "null" gives it /dev/null for stdin, "tty" the pty),
# answer the first [y/N] question, print the transcript, exit as CMD did
pty_answer() {
	python3 - "$@" <<'PY'
import os, pty, sys, time, select
stdin, answer = sys.argv[1], sys.argv[2].encode()
pid, fd = pty.fork()
if pid == 0:
    if stdin == "null":
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
    os.execv(sys.argv[3], sys.argv[3:])
out = b""
sent = False
deadline = time.time() + 20
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    if not sent and b"[y/N]" in out:
        os.write(fd, answer + b"\n")
        sent = True
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(st))
PY
}
finish() {
	[ "$failures" = 0 ] && exit 0
	echo "$failures failed"
	exit 1
}
