#!/usr/bin/env bash
# --timeout: a command that ignores SIGTERM and forks (children and
# grandchildren in sessions of their own) is killed at the deadline with
# everything it started; status 124.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python

marker=wd-stubborn-$RANDOM$RANDOM
start=$(date +%s%N)
wd --timeout 2 --json "${PROBE_BIND[@]}" -- "$PROBE" stubborn 4 "$marker"
end=$(date +%s%N)
left=$(count_sandbox "$marker")
elapsed=$(((end - start) / 1000000))
expect_rc 124 "--timeout 2: stubborn process tree"
check "--json: timed_out true, status 124" test "$(json_get '[j["timed_out"], j["status"]]')" = '[true, 124]'
check "the tree had started (children forked)" grep -q 'children forked' <(json_data stdout)
# The upper end is the 2 s deadline plus a teardown allowance stretched
# for a loaded host (3 s when idle).
upper=$((2000 + $(scaled 3) * 1000))
check "killed at the deadline: ${elapsed} ms in [2000, $upper)" test "$elapsed" -ge 2000 -a "$elapsed" -lt "$upper"
check "no process of the tree survives warden ($left left)" test "$left" = 0
if [ "$left" != 0 ]; then
	pgrep -af -- "$marker" | sed 's/^/  | /'
fi
none_marked() {
	[ "$(count_marked "$marker")" = 0 ]
}
check "nothing with the marker (warden's janitor included) within $(scaled 3) s" wait_until "$(scaled 3)" none_marked

# Without --json, same status, and a message on stderr.
marker=wd-stubborn-$RANDOM$RANDOM
wd --timeout 1 "${PROBE_BIND[@]}" -- "$PROBE" stubborn 2 "$marker"
expect_rc 124 "--timeout 1 without --json"
check "warden says it timed out" grep -qi 'timed out' "$ERR"
check "no process of the tree survives warden" test "$(count_sandbox "$marker")" = 0

# A command flooding its output is still stopped at the deadline, and the
# windows kept up to then are reported.
wd --timeout 1 --json -- /usr/bin/yes
expect_rc 124 "--timeout 1 on yes(1)"
check "the flood was captured up to the deadline" \
	python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["stdout"]; sys.exit(not (o["total_bytes"] > 1 << 20 and o["data"].startswith("y\ny\n") and o["total_bytes"] - 65536 <= o["omitted_bytes"] <= o["total_bytes"] - 65536 + 1024))' "$OUT"

# The command's end ends the sandbox: a background child holding stdout
# open neither keeps warden waiting nor survives.
for level in container process; do
	marker=wd-bg-$RANDOM$RANDOM
	probe=$PROBE bind=("${PROBE_BIND[@]}")
	# (no binds at the process level: it sees the host's files)
	[ "$level" = process ] && probe=$WD_PROBE bind=()
	start=$(date +%s%N)
	wd --isolation "$level" --timeout 20 "${bind[@]}" -- \
		/bin/sh -c "$probe stubborn 1 $marker & sleep 0.2; exit 3"
	ms=$((($(date +%s%N) - start) / 1000000))
	expect_rc 3 "$level: the command exits 3 with a child in the background"
	check "$level: warden returned at once (${ms} ms)" test "$ms" -lt 3000
	none_bg() {
		[ "$(count_marked "$marker")" = 0 ]
	}
	check "$level: the background child does not survive" wait_until "$(scaled 3)" none_bg
done

# A command that stops itself (SIGSTOP) still meets the deadline.
wd --timeout 1 -- /bin/sh -c 'kill -STOP $$'
expect_rc 124 "a stopped command is killed at the timeout"

# A command that ends before the deadline is not a timeout.
wd --timeout 5 --json -- /bin/sleep 0.2
expect_rc 0 "sleep 0.2 under --timeout 5"
check "timed_out false" test "$(json_get 'j["timed_out"]')" = false

# The default deadline is 30 s: not tested by waiting; a 1 s command passes.
wd -- /bin/sleep 1
expect_rc 0 "sleep 1 under the default timeout"

finish
