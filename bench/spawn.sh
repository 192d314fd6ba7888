#!/usr/bin/env bash
# Spawn-to-exit latency of `warden run` against bare execution and against
# bubblewrap with the equivalent configuration, alternating, many runs.
#
#   bench/spawn.sh WARDEN SPAWN_BENCH        (or: bench/spawn.sh BUILD-DIR)
#   SPAWN_RUNS=200 SPAWN_WARMUP=10           runs per command, warm-up rounds
#   SPAWN_BEFORE=/path/to/older/warden       one more series, "before": an
#                                            older build (e.g. the commit before
#                                            the redesign) in the same run
#   SPAWN_IMAGE=NAME                         one more series, "image": the
#                                            same `warden run` with --image NAME
#                                            (WARDEN_IMAGE_DIR: its store), and
#                                            its ratio to the host's /usr
#
# For /bin/true and for python3 -c pass it prints the medians, each one's
# overhead over bare execution, and warden/bwrap ratios (of the medians and
# of the overheads); ns-floor (bench/ns_floor.c) is the kernel's cost of the
# same namespaces with no set-up at all.  warden runs with its defaults: every namespace, the
# cgroup limits, seccomp and Landlock; bwrap does namespaces and mounts only.
set -euo pipefail

if [ $# -eq 1 ]; then
	set -- "$1/warden" "$1/bench/spawn_bench"
fi
WARDEN=$(readlink -f "${1:?usage: spawn.sh WARDEN SPAWN_BENCH | spawn.sh BUILD}")
DRIVER=$(readlink -f "${2:?usage: spawn.sh WARDEN SPAWN_BENCH}")
RUNS=${SPAWN_RUNS:-200}
WARMUP=${SPAWN_WARMUP:-10}
BWRAP=$(command -v bwrap || true)
# The namespaces alone (bench/ns_floor.c), next to the driver.
FLOOR=$(dirname "$DRIVER")/ns_floor
PY=/usr/bin/python3

ws=$(mktemp -d /tmp/wd-bench.XXXXXXXX)
trap 'rm -rf "$ws"' EXIT

echo "# spawn latency: $RUNS runs each, alternating, after $WARMUP warm-up rounds"
echo "# $(uname -sr), $(nproc) CPUs, $(id -un), cgroup $(if [ -d /sys/fs/cgroup/memory ]; then echo v1; else echo v2; fi), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$WARDEN" run --workspace "$ws" --json -- /bin/true |
	python3 -c 'import json,sys; p=json.load(sys.stdin)["protections"]; print("# warden protections:", json.dumps(p, separators=(",", ":")))' ||
	true

bwrap_args=(--unshare-all --die-with-parent --new-session
	--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
	--symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
	--proc /proc --dev /dev --tmpfs /tmp --bind "$ws" /workspace --chdir /workspace
	--clearenv --setenv PATH /usr/bin:/bin --cap-drop ALL)

# The recorded baseline (bench/spawn.baseline: "SERIES COMMAND MEDIAN_US
# P10_US" lines) is compared with each run; SPAWN_SAVE_BASELINE=1 rewrites it
# from this run.
baseline=$(dirname "$0")/spawn.baseline
if [ "${SPAWN_SAVE_BASELINE:-0}" = 1 ]; then
	echo "# spawn.sh baseline: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)" >"$baseline.new"
fi

# bench NAME KEY PROGRAM [ARGS...]: one alternating series; prints the
# table, the ratios and the comparison with the baseline.
bench() {
	local name=$1 key=$2
	shift 2
	local sets=(bare "$@" :: warden "$WARDEN" run --workspace "$ws" -- "$@")
	if [ -n "${SPAWN_BEFORE:-}" ]; then
		sets+=(:: before "$(readlink -f "$SPAWN_BEFORE")" run --workspace "$ws" -- "$@")
	fi
	if [ -n "${SPAWN_IMAGE:-}" ]; then
		sets+=(:: image "$WARDEN" run --workspace "$ws" --image "$SPAWN_IMAGE" -- "$@")
	fi
	if [ -n "$BWRAP" ]; then
		sets+=(:: bwrap "$BWRAP" "${bwrap_args[@]}" -- "$@")
	fi
	if [ -x "$FLOOR" ]; then
		sets+=(:: ns-floor "$FLOOR" "$@")
	fi
	echo
	echo "## $name"
	"$DRIVER" -n "$RUNS" -w "$WARMUP" -t -- "${sets[@]}" >"$ws/.out"
	grep -v '^summary' "$ws/.out"
	awk -F'\t' '
		$1 == "summary" { m[$2] = $3; p10[$2] = $4; cpu[$2] = $6 }
		END {
			if (!("warden" in m) || !("bare" in m)) exit
			printf "warden overhead over bare: %.3f ms (target <= 2.0 ms)\n", (m["warden"] - m["bare"]) / 1000
			if ("bwrap" in m) {
				printf "bwrap overhead over bare:  %.3f ms\n", (m["bwrap"] - m["bare"]) / 1000
				printf "ratio warden/bwrap: %.2f of the medians, %.2f of the overheads\n",
					m["warden"] / m["bwrap"], (m["warden"] - m["bare"]) / (m["bwrap"] - m["bare"])
				# The 10th percentiles move less when other work shares the CPUs.
				printf "at p10: warden +%.3f ms, bwrap +%.3f ms over bare (ratio %.2f)\n",
					(p10["warden"] - p10["bare"]) / 1000, (p10["bwrap"] - p10["bare"]) / 1000,
					(p10["warden"] - p10["bare"]) / (p10["bwrap"] - p10["bare"])
			}
			if ("ns-floor" in m) {
				printf "namespace floor (clone with the same namespaces, maps, fork): +%.3f ms; warden above it: %.3f ms\n",
					(m["ns-floor"] - m["bare"]) / 1000, (m["warden"] - m["ns-floor"]) / 1000
				# (time only: the CPU of the floor and that of
				# warden are not measured alike)
				r = (m["warden"] - m["bare"]) / (m["ns-floor"] - m["bare"])
				printf "added time warden / floor: %.2f of the medians (target <= 1.3), %.2f at p10 (less moved by other load)\n", r,
					(p10["warden"] - p10["bare"]) / (p10["ns-floor"] - p10["bare"])
				printf "summary\tcold_%s_ratio\t%.3f\n", key, r
			}
			if ("image" in m) {
				# the same cold start, /usr and /etc from an image
				# rather than the host: whole times (target: within 5 %)
				printf "image (%s) / host /usr: %.3f of the medians, %.3f at p10; added time over bare %.3f ms against %.3f ms\n",
					image, m["image"] / m["warden"], p10["image"] / p10["warden"],
					(m["image"] - m["bare"]) / 1000, (m["warden"] - m["bare"]) / 1000
				printf "summary\tcold_%s_image_vs_host\t%.3f\n", key, m["image"] / m["warden"]
			}
			if ("before" in m) {
				printf "before (%s): +%.3f ms over bare; warden now / before: %.2f of the added times\n",
					before, (m["before"] - m["bare"]) / 1000, (m["warden"] - m["bare"]) / (m["before"] - m["bare"])
				printf "summary\tcold_%s_vs_before\t%.3f\n", key, (m["warden"] - m["bare"]) / (m["before"] - m["bare"])
			}
		}' key="$key" before="${SPAWN_BEFORE:-}" image="${SPAWN_IMAGE:-}" "$ws/.out"
	if [ -f "$baseline" ]; then
		awk -F'\t' -v key="$key" '
			FILENAME == ARGV[1] && $1 == key { base[$2] = $3; bp10[$2] = $4; next }
			FILENAME == ARGV[2] && $1 == "summary" && ($2 in base) {
				printf "vs baseline: %-6s median %.3f ms (was %.3f), p10 %.3f ms (was %.3f)\n",
					$2, $3 / 1000, base[$2] / 1000, $4 / 1000, bp10[$2] / 1000
			}' "$baseline" "$ws/.out"
	fi
	if [ "${SPAWN_SAVE_BASELINE:-0}" = 1 ]; then
		awk -F'\t' -v key="$key" '$1 == "summary" { printf "%s\t%s\t%s\t%s\n", key, $2, $3, $4 }' \
			"$ws/.out" >>"$baseline.new"
	fi
}

bench "/bin/true" true /bin/true
bench "python3 -c pass" python "$PY" -c pass
if [ "${SPAWN_SAVE_BASELINE:-0}" = 1 ]; then
	mv "$baseline.new" "$baseline"
	echo "# baseline saved in $baseline"
fi
