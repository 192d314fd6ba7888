#!/usr/bin/env bash
# The gvisor isolation level against the container level and the
# bare program, as ratios measured in one run (alternating series, so load
# drift is shared):
#
#   1. cold start: `warden run` of /bin/true and python3 -c pass;
#   2. exec into a live sandbox: wd_sandbox_exec of the same (exec_bench);
#   3. workloads: CPU-bound (python arithmetic), syscall-heavy (a C compile,
#      and 200k stat calls), in a fresh sandbox each run.
#
#   bench/gvisor.sh BUILD-DIR          (or: WARDEN SPAWN_BENCH EXEC_BENCH)
#   GVISOR_RUNS=40 GVISOR_WORK_RUNS=7  runs per series
#
# Each table gives median, p10 and p90 (the spread) in ms; the ratio lines
# compare medians.  Needs root and runsc.
set -euo pipefail

if [ $# -eq 1 ]; then
	set -- "$1/warden" "$1/bench/spawn_bench" "$1/bench/exec_bench"
fi
WARDEN=$(readlink -f "${1:?usage: gvisor.sh BUILD-DIR}")
DRIVER=$(readlink -f "${2:?}")
EXEC=$(readlink -f "${3:?}")
# exec_bench embeds libwarden: warden-init (the first program of a gVisor
# sandbox) is the one next to the warden under test
export WARDEN_INIT=${WARDEN_INIT:-$(dirname "$WARDEN")/warden-init}
RUNS=${GVISOR_RUNS:-40}
WORK_RUNS=${GVISOR_WORK_RUNS:-7}

if ! command -v runsc >/dev/null || [ "$(id -u)" != 0 ]; then
	echo "# gvisor benchmark skipped: needs root and runsc (scripts/deps.sh)"
	exit 0
fi

ws=$(mktemp -d /tmp/wd-gvbench.XXXXXXXX)
trap 'rm -rf "$ws"' EXIT
chmod 755 "$ws"
cd "$ws"
# the compile: a translation unit that pulls in the usual headers
cat >w.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <math.h>
int main(void) { printf("%f\n", sqrt(2.0)); return 0; }
EOF

echo "# gvisor vs container vs bare: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(runsc --version | head -n 1), platform ${WARDEN_GVISOR_PLATFORM:-ptrace}"

# ratios FILE: gvisor/container and gvisor/bare of the medians
ratios() {
	awk -F'\t' '$1 == "summary" { m[$2] = $3 }
		END {
			if (("gvisor" in m) && ("container" in m) && ("bare" in m))
				printf "ratio of medians: gvisor/container %.2f, gvisor/bare %.1f, container/bare %.1f\n",
					m["gvisor"] / m["container"], m["gvisor"] / m["bare"], m["container"] / m["bare"]
		}' "$1"
}

# series NAME RUNS PROGRAM [ARGS...]: bare, container and gvisor, alternating
series() {
	local name=$1 n=$2
	shift 2
	echo
	echo "## $name ($n runs each)"
	"$DRIVER" -n "$n" -w 2 -t -- bare "$@" \
		:: container "$WARDEN" run --workspace "$ws" -- "$@" \
		:: gvisor "$WARDEN" run --isolation gvisor --workspace "$ws" -- "$@" >"$ws/.out"
	grep -v '^summary' "$ws/.out"
	ratios "$ws/.out"
}

echo
echo "# 1. cold start: warden run, fresh sandbox per run"
series "cold start: /bin/true" "$RUNS" /bin/true
series "cold start: python3 -c pass" "$RUNS" /usr/bin/python3 -c pass

echo
echo "# 2. exec into a live sandbox (wd_sandbox_exec; creation not counted)"
for cmd in "/bin/true" "/usr/bin/python3 -c pass"; do
	echo
	echo "## exec: $cmd ($RUNS runs each)"
	# shellcheck disable=SC2086
	"$EXEC" -n "$RUNS" -w 3 "$ws" -- $cmd | grep -v '^summary'
done

echo
echo "# 3. workloads, fresh sandbox per run (start-up included)"
series "CPU-bound: python3, 20M multiplications" "$WORK_RUNS" \
	/usr/bin/python3 -c 'print(sum(i * i for i in range(20000000)))'
series "syscall-heavy: python3, 200k stat()" "$WORK_RUNS" \
	/usr/bin/python3 -c 'import os
for _ in range(200000): os.stat(".")'
series "syscall-heavy: 5 x gcc -c (cc1, as: execs, opens, mmaps)" "$WORK_RUNS" \
	/bin/sh -c 'for i in 1 2 3 4 5; do gcc -O0 -c w.c -o /dev/null || exit 1; done'
