#!/usr/bin/env bash
# make bench: the benchmarks against the build in BUILD (default build/),
# then one summary table compared with the committed baseline of ratios
# (bench/baseline.txt, bench/summary.py): a figure worse by more than 20 %
# is flagged and the status is 1.
#
#   cold start       bench/spawn.sh: `warden run` against bare execution,
#                    bubblewrap, runc and crun (where installed), and the
#                    namespace floor (bench/ns_floor),
#                    with --image (the suite's python3 image) against the
#                    host's /usr, and SPAWN_BEFORE (an older warden) when
#                    given
#   step breakdown   bench/steps.sh: the -v STEP lines as medians
#   exec-into-live   live_bench: one sandbox, then execs against bare
#                    fork+exec, execs per second, memory per sandbox
#   gVisor exec      gvisor_exec_bench: /bin/true into a live gVisor
#                    session, the resident executor against runsc exec
#                    and bare fork+exec, three repeats
#   gVisor pool      gvisor_pool_bench: a pooled gVisor one-shot of
#                    /bin/true against a cold one (runsc run) and bare
#                    fork+exec, three repeats
#   policy stage     policy_bench
#   egress           net_bench: tunnel vs a two-hop splice relay and direct,
#                    added latency, TLS interception
#   TLS peers        tls_bench: warden's TLS interception against Squid
#                    (squid-openssl, ssl_bump) and mitmproxy, same client,
#                    upstream, suite and bodies, interleaved; the peers are
#                    installed from Debian when missing (as root, unless
#                    WD_BENCH_NO_INSTALL=1), else skipped with the reason;
#                    TLS_BENCH_MIB, _BODIES, _REQS, _SERIES size it
#   density          bench/density.py: 100, 1,000 and 5,000 live sandboxes in
#                    one server: create and exec at N against at 100, memory
#                    and descriptors per sandbox (DENSITY_SIZES to change)
#   WD_BENCH_IMAGE=0 no cold start with --image (it builds the suite's
#                    python3 image first when this checkout has none:
#                    mmdebstrap and the Debian mirror, ~2 min)
#   WD_BENCH_ALL=1   also every other meson benchmark() (gvisor: ~15 min)
#
# A copy of the output is kept in bench/results/ (not in git).
set -uo pipefail
BUILD=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
mkdir -p bench/results
log=bench/results/$(date -u +%Y%m%dT%H%M%SZ).txt
ws=$(mktemp -d /tmp/wd-bench.XXXXXXXX)
trap 'rm -rf "$ws"' EXIT
status=0
{
	echo "# warden benchmarks, $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u)"
	# the machine, for the figures' reader (docs/performance.md pastes it)
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
	cgv=v2
	[ -d /sys/fs/cgroup/memory ] && cgv=v1
	echo "# machine: ${cpu:-unknown CPU}, $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr), cgroup $cgv, load $(cut -d' ' -f1-3 /proc/loadavg)"
	# the cold start in an image as well (SPAWN_IMAGE): the test suite's
	# python3 image, built once per checkout into build-cache/images
	# (tests/integration/image_fixture.sh); without mmdebstrap or the
	# mirror, the series is left out and said so
	if [ "${WD_BENCH_IMAGE:-1}" = 0 ]; then
		echo "# no cold start with --image (WD_BENCH_IMAGE=0)"
	elif img=$(bash tests/integration/image_fixture.sh "$BUILD/warden" "$top/build-cache/images" \
		tests/integration/images/python.recipe); then
		export WARDEN_IMAGE_DIR=$top/build-cache/images SPAWN_IMAGE=$img
	else
		echo "# no image for the cold start with --image (image_fixture.sh failed)"
	fi
	# the OCI runtimes beside bubblewrap, where installed (SPAWN_PEERS
	# overrides; a runc run is ~70 ms, so ~1.5 min of the whole)
	SPAWN_PEERS=${SPAWN_PEERS-runc,crun} bench/spawn.sh "$BUILD/warden" "$BUILD/bench/spawn_bench" ||
		status=1
	unset SPAWN_IMAGE
	echo
	echo "## per-step breakdown of warden run -- /bin/true"
	bench/steps.sh "$BUILD/warden" 40 || status=1
	echo
	echo "## exec into a live sandbox"
	"$BUILD/bench/live_bench" -n 300 -t 2 -k 8 "$ws" -- /bin/true || status=1
	echo
	echo "## exec into a live gVisor session: resident executor vs runsc exec"
	# three repeats of alternating rounds in one sandbox; the library
	# takes warden-init from WARDEN_INIT, an absolute path only (make
	# bench's BUILD is relative: both gVisor benchmarks failed on it)
	if command -v runsc >/dev/null && [ "$(id -u)" = 0 ]; then
		WARDEN_INIT=$(readlink -f "$BUILD/warden-init") "$BUILD/bench/gvisor_exec_bench" -n 60 -r 3 "$ws" ||
			status=1
	else
		echo "# skipped: needs root and runsc (scripts/deps.sh)"
	fi
	echo
	echo "## a pooled gVisor one-shot against a cold one (runsc run)"
	if command -v runsc >/dev/null && [ "$(id -u)" = 0 ]; then
		WARDEN_INIT=$(readlink -f "$BUILD/warden-init") "$BUILD/bench/gvisor_pool_bench" -n 15 -r 3 "$ws" ||
			status=1
	else
		echo "# skipped: needs root and runsc (scripts/deps.sh)"
	fi
	echo
	echo "## policy stage"
	"$BUILD/bench/policy_bench" "$BUILD/warden" || status=1
	echo
	echo "## egress"
	"$BUILD/bench/net_bench" 512 2000 7 || status=1
	# The same with every thread on one CPU: the proxy's own added
	# latency.  Spread over CPUs, a quiet VM of this project's kind adds
	# ~35-40 us per wake-up of an idle vCPU (guest halt polling is off:
	# haltpoll.guest_halt_poll_ns=0), and a proxy hop is two more
	# wake-ups than a direct request: +75-85 us there against +8-13 us
	# here, while under load (no idle vCPU) the two agree.
	echo
	echo "## egress latency, every party on CPU 0"
	taskset -c 0 "$BUILD/bench/net_bench" 16 2000 1 |
		sed -E 's/^summary\t([a-z_]+)/summary\t\1_1cpu/' || status=1
	echo
	echo "## TLS interception against Squid and mitmproxy"
	if ! command -v squid >/dev/null || ! command -v mitmdump >/dev/null; then
		if [ "$(id -u)" = 0 ] && [ "${WD_BENCH_NO_INSTALL:-0}" != 1 ]; then
			echo "# installing the peers from Debian: squid-openssl mitmproxy"
			DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
				squid-openssl mitmproxy >/dev/null 2>&1 ||
				echo "# apt-get install squid-openssl mitmproxy failed: a missing peer is skipped"
		fi
	fi
	"$BUILD/bench/tls_bench" || status=1
	# The same parties with every process on CPU 0: spread over the two
	# vCPUs of a quiet VM, a keep-alive request's added latency is mostly
	# the wake-ups of an idle vCPU (35-40 us each, docs/performance.md);
	# on one CPU it is each proxy's own work.  Small bodies: the
	# throughput there is each pipeline's CPU per MiB, shown as such.
	echo
	echo "## TLS interception against Squid and mitmproxy, every party on CPU 0"
	TLS_BENCH_BODIES=${TLS_BENCH_BODIES:-8} taskset -c 0 "$BUILD/bench/tls_bench" |
		sed -E -e 's/^summary\t([a-z_]+)/summary\t\1_1cpu/' \
			-e 's/^peer\t([^\t]+)/peer\t\1, one CPU/' || status=1
	echo
	echo "## density: live sandboxes in one warden serve --stdio"
	# 100 and 1,000 live sandboxes, and 5,000 where the descriptor limit
	# holds them (root raises it for the server); three runs
	bench/density.py "$BUILD/warden" --sizes "${DENSITY_SIZES:-100,1000,5000}" --runs 3 || status=1
	if [ "${WD_BENCH_ALL:-0}" = 1 ]; then
		echo
		meson test -C "$BUILD" --benchmark --verbose --no-rebuild \
			$(meson introspect "$BUILD" --benchmarks 2>/dev/null |
				python3 -c 'import json,sys; print(" ".join(b["name"] for b in json.load(sys.stdin) if b["name"] not in ("spawn", "net-proxy", "policy-decisions", "density")))') ||
			status=1
	fi
} 2>&1 | tee "$log"
bench/summary.py "$log" bench/baseline.txt | tee -a "$log" || status=1
echo "# saved in $log"
exit $status
