#!/usr/bin/env bash
# A 2 GiB output flood: warden keeps only the windows, its memory stays flat
# (max RSS measured by the kernel and by polling VmHWM), and the marker
# line sits between the head and the tail.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python

# rss_run FILE-PREFIX ARGS...: run warden in the background with ARGS,
# polling its VmHWM; sets RC and HWM (kB, the last value read) and MAXRSS
# (kB, from /usr/bin/time or wait4).
rss_run() {
	local pfx=$1
	shift
	"$WARDEN" run --workspace "$WS" "$@" >"$pfx.out" 2>"$pfx.err" </dev/null &
	local pid=$! v
	HWM=0
	while kill -0 "$pid" 2>/dev/null; do
		v=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
		[ -n "$v" ] && HWM=$v
		sleep 0.1
	done
	wait "$pid"
	RC=$?
}

# Baseline: a run that prints nothing.
rss_run "$T/base" -- /bin/true
base=$HWM
check "baseline run works" test "$RC" = 0

# 2 GiB on stdout, streamed (no --json).
rss_run "$T/flood" --timeout 300 "${PROBE_BIND[@]}" -- "$PROBE" flood 2G
OUT=$T/flood.out ERR=$T/flood.err
expect_rc 0 "2 GiB flood on stdout"
check "warden's VmHWM during the flood: ${HWM} kB < 32 MiB" test "$HWM" -gt 0 -a "$HWM" -lt 32768
# (an ASan build keeps freed memory in quarantine: there the leak check is
# LeakSanitizer's, and flatness is the release build's to show)
if nm -D "$WARDEN" 2>/dev/null | grep __asan_init >/dev/null || ldd "$WARDEN" | grep libasan >/dev/null; then
	ok "flat: not measured in an ASan build (its quarantine holds freed memory)"
else
	check "flat: VmHWM grew ${HWM} - ${base} kB < 8 MiB over a silent run" test $((HWM - base)) -lt 8192
fi
check "the head is kept" test "$(head -n1 "$T/flood.out")" = WD-FLOOD-HEAD
check "the tail is kept" test "$(tail -c 14 "$T/flood.out")" = WD-FLOOD-TAIL
check "one marker line, saying how much was omitted" \
	test "$(grep -c 'bytes omitted' "$T/flood.out")" = 1
omitted=$((2147483648 - 65536))
check "the marker gives the exact count ($omitted)" grep -q "$omitted bytes omitted" "$T/flood.out"
size=$(stat -c %s "$T/flood.out")
check "warden printed only the windows (${size} bytes)" test "$size" -lt $((65536 + 1024))

# Both streams at once, with --json, and the kernel's own max-RSS figure.
OUT=$T/both.out ERR=$T/both.err
# (python's os.wait4 rather than /usr/bin/time, which Debian does not
# install by default)
python3 -c 'import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, st, ru = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(ru.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(st) & 255)' "$T/maxrss" \
	"$WARDEN" run --workspace "$WS" --timeout 300 --json \
	"${PROBE_BIND[@]}" -- /bin/sh -c "$PROBE flood 512M & $PROBE flood 512M >&2; wait" \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
maxrss=$(cat "$T/maxrss")
expect_rc 0 "512 MiB on each stream with --json"
check "--json: exact totals on both streams" \
	test "$(json_get '[j["stdout"]["total_bytes"], j["stderr"]["total_bytes"]]')" = "[$((512 << 20)), $((512 << 20))]"
check "--json: omitted counts" \
	test "$(json_get '[j["stdout"]["omitted_bytes"], j["stderr"]["omitted_bytes"]]')" = "[$(((512 << 20) - 65536)), $(((512 << 20) - 65536))]"
check "max RSS of warden (wait4): ${maxrss} kB < 32 MiB" test "${maxrss:-999999}" -lt 32768

finish
