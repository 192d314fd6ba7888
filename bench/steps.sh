#!/usr/bin/env bash
# Per-step breakdown of `warden run -- PROGRAM`: the STEP lines of -v (the
# supervisor's steps and pid 1's own, whose times SYNC_READY carries), each
# as milliseconds since the sandbox object was made, median and p90 over
# RUNS runs, in the order they happen.
#
#   bench/steps.sh WARDEN [RUNS] [-- PROGRAM ARGS...]   (default: 60, /bin/true)
set -euo pipefail
WARDEN=$(readlink -f "${1:?usage: steps.sh WARDEN [RUNS] [-- PROGRAM ARGS...]}")
shift
RUNS=60
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	RUNS=$1
	shift
fi
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || set -- /bin/true
ws=$(mktemp -d /tmp/wd-steps.XXXXXXXX)
trap 'rm -rf "$ws"' EXIT
for ((i = 0; i < RUNS; i++)); do
	"$WARDEN" run -v --workspace "$ws" -- "$@" 2>&1 >/dev/null |
		sed -n 's/^warden: debug: [a-z0-9_]*: sandbox [0-9a-f]*: +\([0-9.]*\) ms \(.*\)$/\1\t\2/p'
done | python3 -c '
import sys, statistics
steps = {}
order = []
for line in sys.stdin:
    t, what = line.rstrip("\n").split("\t", 1)
    if what not in steps:
        steps[what] = []
        order.append(what)
    steps[what].append(float(t))
rows = sorted(order, key=lambda w: statistics.median(steps[w]))
print(f"# {sys.argv[1]} runs; ms since the sandbox object was made")
print("%8s %8s  step" % ("median", "p90"))
for w in rows:
    v = sorted(steps[w])
    m = statistics.median(v)
    p90 = v[min(len(v) - 1, int(len(v) * 0.9))]
    print(f"{m:8.3f} {p90:8.3f}  {w}")
' "$RUNS"
