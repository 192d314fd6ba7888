#!/usr/bin/env bash
# Spawn-to-exit latency of `warden run` against bare execution and against
# bubblewrap with the equivalent configuration, alternating, many runs.
#
#   bench/spawn.sh WARDEN SPAWN_BENCH        (or: bench/spawn.sh BUILD-DIR)
#   SPAWN_RUNS=200 SPAWN_WARMUP=10           runs per command, warm-up rounds
#   SPAWN_SERIES=3                           alternating series, one after
#                                            another; each figure is the
#                                            median over them, [min-max]
#   SPAWN_BEFORE=/path/to/older/warden       one more series, "before": an
#                                            older build (e.g. the commit before
#                                            the redesign) in the same run
#   SPAWN_PEERS=runc,crun                    the OCI runtimes beside bubblewrap,
#                                            each where installed (make bench
#                                            asks for both; a missing one is
#                                            said and left out): RUNTIME run of
#                                            a bundle showing the same host /usr
#                                            read-only and the workspace, with
#                                            the runtime's defaults otherwise
#                                            (its cgroup, no user namespace)
#   SPAWN_IMAGE=NAME                         one more series, "image": the
#                                            same `warden run` with --image NAME
#                                            (WARDEN_IMAGE_DIR: its store), and
#                                            its ratio to the host's /usr
#
# For /bin/true and for python3 -c pass it prints the medians, each one's
# overhead over bare execution, and warden/bwrap ratios (of the medians and
# of the overheads: `summary cold_true_vs_bwrap`, `cold_python_vs_bwrap`,
# warden's added time over bare / bubblewrap's); ns-floor (bench/ns_floor.c) is the kernel's cost of the
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
SERIES=${SPAWN_SERIES:-3}
BWRAP=$(command -v bwrap || true)
PEERS=${SPAWN_PEERS:-}
for rt in ${PEERS//,/ }; do
	case $rt in
	runc | crun) ;;
	*)
		echo "spawn.sh: SPAWN_PEERS: unknown runtime '$rt' (runc, crun, comma-separated)" >&2
		exit 125
		;;
	esac
done
# The namespaces alone (bench/ns_floor.c), next to the driver.
FLOOR=$(dirname "$DRIVER")/ns_floor
PY=/usr/bin/python3

ws=$(mktemp -d /tmp/wd-bench.XXXXXXXX)
trap 'rm -rf "$ws"' EXIT

echo "# spawn latency: $SERIES series of $RUNS runs each, alternating, after $WARMUP warm-up rounds"
echo "# $(uname -sr), $(nproc) CPUs, $(id -un), cgroup $(if [ -d /sys/fs/cgroup/memory ]; then echo v1; else echo v2; fi), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$WARDEN" run --workspace "$ws" --json -- /bin/true |
	python3 -c 'import json,sys; p=json.load(sys.stdin)["protections"]; print("# warden protections:", json.dumps(p, separators=(",", ":")))' ||
	true

bwrap_args=(--unshare-all --die-with-parent --new-session
	--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
	--symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
	--proc /proc --dev /dev --tmpfs /tmp --bind "$ws" /workspace --chdir /workspace
	--clearenv --setenv PATH /usr/bin:/bin --cap-drop ALL)

# oci_bundle DIR PROGRAM ARGS...: an OCI bundle whose process is PROGRAM
# ARGS in /workspace, with bubblewrap's view: the host's /usr read-only and
# its /bin, /lib, /lib64 and /sbin links, /proc, a /dev and a /tmp of the
# runtime's, the workspace read-write; namespaces as --unshare-all bar the
# user namespace (neither runtime makes one by default).
oci_bundle() {
	local dir=$1
	shift
	mkdir -p "$dir/rootfs/usr" "$dir/rootfs/proc" "$dir/rootfs/dev" "$dir/rootfs/tmp" \
		"$dir/rootfs/workspace"
	local l
	for l in bin lib lib64 sbin; do
		ln -sfn "usr/$l" "$dir/rootfs/$l"
	done
	python3 - "$dir/config.json" "$ws" "$@" <<'PY'
import json, sys
out, ws, args = sys.argv[1], sys.argv[2], sys.argv[3:]
json.dump({
    "ociVersion": "1.0.2",
    "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "args": args,
                "env": ["PATH=/usr/bin:/bin"], "cwd": "/workspace",
                "capabilities": {}, "noNewPrivileges": True},
    "root": {"path": "rootfs", "readonly": True},
    "hostname": "sandbox",
    "mounts": [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "mode=755", "size=64k"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]},
        {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]},
        {"destination": "/workspace", "type": "bind", "source": ws, "options": ["rbind", "rw"]},
    ],
    "linux": {"namespaces": [{"type": t} for t in
                             ("pid", "network", "ipc", "uts", "mount", "cgroup")]},
}, open(out, "w"))
PY
}

# The recorded baseline (bench/spawn.baseline: "SERIES COMMAND MEDIAN_US
# P10_US" lines) is compared with each run; SPAWN_SAVE_BASELINE=1 rewrites it
# from this run.
baseline=$(dirname "$0")/spawn.baseline
if [ "${SPAWN_SAVE_BASELINE:-0}" = 1 ]; then
	echo "# spawn.sh baseline: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)" >"$baseline.new"
fi

# bench NAME KEY PROGRAM [ARGS...]: SERIES alternating series of RUNS
# rounds each (bench/spawn_bench interleaves the commands within a
# series); prints each series' table, then every figure as the median over
# the series with its range, the summary lines and the comparison with the
# baseline.
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
	local rt
	for rt in ${PEERS//,/ }; do
		local rtbin
		rtbin=$(command -v "$rt" || true)
		if [ -z "$rtbin" ] || [ "$(id -u)" != 0 ]; then
			echo "# $rt: left out (not installed, or not root)"
			continue
		fi
		oci_bundle "$ws/.oci-$key-$rt" "$@"
		# one probe run: a runtime that cannot run the bundle on this
		# host is left out with its own words (crun 1.8 refuses a v1
		# host whose v2 hierarchy holds a controller: "hybrid mode")
		local why
		if ! why=$("$rtbin" --root "$ws/.oci-state-$rt" run --bundle "$ws/.oci-$key-$rt" \
			"wd-spawn-$$-$key" </dev/null 2>&1 >/dev/null); then
			echo "# $rt: left out, its probe run failed: $(printf '%s' "$why" | head -c 300 | tr -c '[:print:]' ' ')"
			continue
		fi
		sets+=(:: "$rt" "$rtbin" --root "$ws/.oci-state-$rt" run --bundle "$ws/.oci-$key-$rt"
			"wd-spawn-$$-$key")
	done
	if [ -x "$FLOOR" ]; then
		sets+=(:: ns-floor "$FLOOR" "$@")
	fi
	echo
	echo "## $name"
	local s outs=()
	for ((s = 1; s <= SERIES; s++)); do
		echo "### series $s of $SERIES"
		"$DRIVER" -n "$RUNS" -w "$WARMUP" -t -- "${sets[@]}" >"$ws/.out.$s"
		grep -v '^summary' "$ws/.out.$s"
		outs+=("$ws/.out.$s")
	done
	python3 "$(dirname "$0")/spawn_figures.py" "$key" "${SPAWN_BEFORE:-}" "${SPAWN_IMAGE:-}" "${outs[@]}" >"$ws/.fig"
	grep -v '^median' "$ws/.fig"
	if [ -f "$baseline" ]; then
		awk -F'\t' -v key="$key" '
			FILENAME == ARGV[1] && $1 == key { base[$2] = $3; bp10[$2] = $4; next }
			FILENAME == ARGV[2] && $1 == "median" && ($2 in base) {
				printf "vs baseline: %-8s median %.3f ms (was %.3f), p10 %.3f ms (was %.3f)\n",
					$2, $3 / 1000, base[$2] / 1000, $4 / 1000, bp10[$2] / 1000
			}' "$baseline" "$ws/.fig"
	fi
	if [ "${SPAWN_SAVE_BASELINE:-0}" = 1 ]; then
		awk -F'\t' -v key="$key" '$1 == "median" { printf "%s\t%s\t%s\t%s\n", key, $2, $3, $4 }' \
			"$ws/.fig" >>"$baseline.new"
	fi
}

bench "/bin/true" true /bin/true
bench "python3 -c pass" python "$PY" -c pass
if [ "${SPAWN_SAVE_BASELINE:-0}" = 1 ]; then
	mv "$baseline.new" "$baseline"
	echo "# baseline saved in $baseline"
fi
