#!/usr/bin/env bash
# make fuzz: build every libFuzzer target (clang, -Dfuzz=enabled) and run
# each in turn from its corpus, one fuzzer process at a time, niced.
#
#   scripts/fuzz.sh [BUILD_DIR]          (default build-fuzz)
#
# Environment:
#   FUZZ_SECONDS  time budget per target, seconds (default 60; 0: none)
#   FUZZ_RUNS     stop a target after this many executions instead (whichever
#                 of the two comes first)
#   FUZZ_TARGETS  targets to run, space-separated (default: every directory
#                 of fuzz/corpus/, each of which names a target)
#   FUZZ_OUT      work directory (default BUILD_DIR/fuzz-out): corpus/<t>/
#                 (new inputs), crashes/<t>/ (crash-*, leak-*, timeout-*,
#                 oom-*), logs/<t>.log, summary.tsv
#   FUZZ_TIMEOUT  seconds one input may take before it counts as a hang (10)
#   FUZZ_RSS_MB   memory limit of a fuzzer process, MB (2048)
#   FUZZ_MERGE=1  afterwards, merge inputs that add coverage into
#                 fuzz/corpus/<t>/ (the corpus `make check` replays)
#   FUZZ_NICE     nice level (19: the machine is shared)
#
# Exit status: 0 when every target ran its budget with no crash, leak,
# timeout or out-of-memory; 1 otherwise (the artifacts are listed); 125 when
# the build fails.  Reproduce an artifact with BUILD_DIR/fuzz/fuzz_<t> FILE;
# once fixed, copy it into fuzz/corpus/<t>/ so `make check` replays it.
set -uo pipefail
BUILD=${1:-build-fuzz}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 125

SECONDS_PER=${FUZZ_SECONDS:-60}
RUNS=${FUZZ_RUNS:-}
OUT=${FUZZ_OUT:-$BUILD/fuzz-out}
HANG=${FUZZ_TIMEOUT:-10}
RSS=${FUZZ_RSS_MB:-2048}
NICE=${FUZZ_NICE:-19}
if [ -n "${FUZZ_TARGETS:-}" ]; then
	read -r -a targets <<<"$FUZZ_TARGETS"
else
	targets=()
	for d in fuzz/corpus/*/; do
		targets+=("$(basename "$d")")
	done
fi
for t in "${targets[@]}"; do
	[ -d "fuzz/corpus/$t" ] || { echo "fuzz: no target '$t' (no fuzz/corpus/$t)" >&2; exit 125; }
done
case "$SECONDS_PER$RUNS" in *[!0-9]*)
	echo "fuzz: FUZZ_SECONDS and FUZZ_RUNS take a whole number" >&2
	exit 125
	;;
esac

if [ ! -f "$BUILD/build.ninja" ]; then
	CC=${FUZZ_CC:-clang} meson setup "$BUILD" -Dfuzz=enabled >/dev/null || exit 125
fi
grep -q 'fuzz_' "$BUILD/build.ninja" && meson introspect --buildoptions "$BUILD" |
	python3 -c 'import json,sys; o={x["name"]:x["value"] for x in json.load(sys.stdin)}; sys.exit(o["fuzz"]!="enabled")' ||
	{ echo "fuzz: $BUILD is not configured with -Dfuzz=enabled" >&2; exit 125; }
# Only the fuzz targets: the rest of the tree is not what is measured here.
bins=()
for t in "${targets[@]}"; do bins+=("fuzz/fuzz_$t"); done
nice -n "$NICE" ninja -C "$BUILD" "${bins[@]}" >"$BUILD/fuzz-build.log" 2>&1 ||
	{ echo "fuzz: build failed (see $BUILD/fuzz-build.log)" >&2; tail -20 "$BUILD/fuzz-build.log" >&2; exit 125; }

mkdir -p "$OUT/logs"
# UBSan only reports unless told to stop: a report must count as a crash.
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
summary=$OUT/summary.tsv
printf 'target\texecs\texec_per_s\tseconds\tseeds\tcorpus\tcov\tresult\n' >"$summary"
fail=0
for t in "${targets[@]}"; do
	mkdir -p "$OUT/corpus/$t" "$OUT/crashes/$t"
	args=(-max_total_time="$SECONDS_PER" -timeout="$HANG" -rss_limit_mb="$RSS"
		-print_final_stats=1 -artifact_prefix="$OUT/crashes/$t/")
	[ -n "$RUNS" ] && args+=(-runs="$RUNS")
	log=$OUT/logs/$t.log
	echo "fuzz: $t (${RUNS:+$RUNS runs or }${SECONDS_PER} s) ..."
	start=$(date +%s)
	nice -n "$NICE" "$BUILD/fuzz/fuzz_$t" "${args[@]}" "$OUT/corpus/$t" "fuzz/corpus/$t" \
		>"$log" 2>&1
	rc=$?
	took=$(($(date +%s) - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	# the fuzzer's last status line: "#N DONE cov: C ft: F corp: UNITS/SIZE ..."
	done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
	corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$done_line")
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
	seeds=$(find "fuzz/corpus/$t" -type f | wc -l)
	found=$(find "$OUT/crashes/$t" -type f | wc -l)
	result=ok
	if [ "$rc" != 0 ] || [ "$found" != 0 ]; then
		result="FAILED (exit $rc, $found artifacts)"
		fail=1
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "${execs:-?}" "${rate:-?}" "$took" \
		"$seeds" "${corp:-?}" "${cov:-?}" "$result" >>"$summary"
	echo "fuzz: $t: ${execs:-?} executions, ${rate:-?}/s, ${took} s, corpus ${corp:-?}: $result"
	if [ "$result" != ok ]; then
		grep -m1 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|ALARM|==[0-9]+== ERROR)' "$log" |
			sed 's/^/fuzz:   /'
		find "$OUT/crashes/$t" -type f | sed 's/^/fuzz:   artifact /'
	fi
	if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$rc" = 0 ]; then
		# a merge runs every input again: anything that crashes now is
		# saved with the others, never in the current directory
		nice -n "$NICE" "$BUILD/fuzz/fuzz_$t" -merge=1 -artifact_prefix="$OUT/crashes/$t/" \
			"fuzz/corpus/$t" "$OUT/corpus/$t" \
			>"$OUT/logs/$t.merge.log" 2>&1 ||
			{ echo "fuzz: $t: merge failed (see $OUT/logs/$t.merge.log)"; fail=1; }
	fi
done
column -t -s $'\t' "$summary"
exit $fail
