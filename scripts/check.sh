#!/usr/bin/env bash
# make check: unit and integration tests on the release build, unit tests
# again under ASan+UBSan, then one closing line "N passed, N failed".
set -uo pipefail
BUILD=${1:-build}
ASAN=${2:-build-asan}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

fail=0
meson test -C "$BUILD" --print-errorlogs --num-processes 2 || fail=1

if [ ! -f "$ASAN/build.ninja" ]; then
	meson setup "$ASAN" -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug >/dev/null || exit 125
fi
ninja -C "$ASAN" >/dev/null || { echo "check: ASan build failed"; ninja -C "$ASAN" | tail -30; exit 1; }
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	meson test -C "$ASAN" --suite unit --print-errorlogs --num-processes 2 || fail=1
# warden serve is a long-lived multi-threaded process: its tests run again
# with the server built with ASan+UBSan (a leak or a race on a call's
# memory shows there first).
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	meson test -C "$ASAN" --suite server --logbase testlog-server --print-errorlogs \
	--num-processes 2 || fail=1

python3 - "$BUILD" "$ASAN" <<'PY'
import json, sys
passed = failed = skipped = 0
logs = [f"{b}/meson-logs/testlog.json" for b in sys.argv[1:]]
logs.append(f"{sys.argv[2]}/meson-logs/testlog-server.json")
for log in logs:
    try:
        lines = open(log).read().splitlines()
    except OSError:
        continue
    for line in lines:
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
[ "${WD_MUST_WORK:-0}" = 1 ] && grep -q '"result": "SKIP"' "$BUILD/meson-logs/testlog.json" 2>/dev/null && { echo "check: skips are failures under WD_MUST_WORK=1"; fail=1; }
exit $fail
