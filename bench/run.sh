#!/usr/bin/env bash
# make bench: every benchmark against the build in BUILD (default build/).
# The spawn benchmark first (bench/spawn.sh), then the benchmark() entries
# other modules register in meson.  A copy of the output is kept in
# bench/results/ (not in git) for comparison with earlier runs.
set -uo pipefail
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
mkdir -p bench/results
log=bench/results/$(date -u +%Y%m%dT%H%M%SZ).txt
status=0
{
	echo "# warden benchmarks, $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u)"
	if [ -x "$BUILD/bench/spawn_bench" ]; then
		bench/spawn.sh "$BUILD/warden" "$BUILD/bench/spawn_bench" || status=1
	fi
	echo
	# The rest: meson benchmark() entries, spawn excluded (it ran above).
	meson test -C "$BUILD" --benchmark --verbose --no-rebuild \
		$(meson introspect "$BUILD" --benchmarks 2>/dev/null |
			python3 -c 'import json,sys; print(" ".join(b["name"] for b in json.load(sys.stdin) if b["name"] != "spawn"))') ||
		status=1
} 2>&1 | tee "$log"
echo "# saved in $log"
exit $status
