# shellcheck shell=bash
# Shared helpers for the integration tests: sourced, never run.
#
# Environment (set by tests/integration/meson.build):
#   WARDEN      the built warden CLI
#   WD_PROBE    the static wd-probe helper
#   WD_MUST_WORK=1 turns a skip (exit 77) into a failure, as in CI.
#   WD_IMAGE_RECIPE=NAME  run every `wd` in the image of
#               tests/integration/images/NAME.recipe (--image), built
#               once by image_fixture; WD_IMAGE is then its name.
#
# Each test prints "ok - ..." / "not ok - ..." lines (TAP-like, for the log)
# and exits 0, 1 on any failure, or 77 when the host cannot run it.

set -uo pipefail

WARDEN=${WARDEN:?set WARDEN to the built warden}
WD_PROBE=${WD_PROBE:?set WD_PROBE to the built wd-probe}
WARDEN=$(readlink -f "$WARDEN")
WD_PROBE=$(readlink -f "$WD_PROBE")

# Where the probe appears inside the jail.
PROBE=/opt/wd-probe
PROBE_BIND=(--ro-bind "$WD_PROBE:$PROBE")

# A private scratch directory; the workspace is $T/ws.  Its parent is $T, so
# a canary in $T is "in the workspace's parent".
T=$(mktemp -d /tmp/wd-it.XXXXXXXX)
chmod 755 "$T"
WS=$T/ws
mkdir "$WS"
chmod 755 "$WS"

failures=0
cleanup_hooks=()

at_exit() {
	cleanup_hooks+=("$1")
}

_cleanup() {
	local h
	for h in "${cleanup_hooks[@]}"; do
		eval "$h" || true
	done
	rm -rf "$T"
}
trap _cleanup EXIT
# meson's timeout sends SIGTERM: still clean up (listeners, canaries, files).
trap 'exit 143' TERM
trap 'exit 130' INT

ok() {
	echo "ok - $*"
}

not_ok() {
	echo "not ok - $*"
	failures=$((failures + 1))
}

# check DESCRIPTION COMMAND...: ok if COMMAND succeeds.
check() {
	local desc=$1
	shift
	if "$@"; then
		ok "$desc"
	else
		not_ok "$desc"
	fi
}

# todo DESCRIPTION COMMAND...: a check that fails on a known, reported bug
# of warden (TAP's TODO): printed, not counted, unless WD_STRICT=1.  When it
# starts passing, the output says so and the check should become a plain
# check.
todo() {
	local desc=$1
	shift
	if "$@"; then
		ok "$desc (TODO check now passes: make it a plain check)"
	elif [ "${WD_STRICT:-0}" = 1 ]; then
		not_ok "$desc"
	else
		echo "not ok - $desc # TODO known bug"
	fi
}

skip() {
	echo "SKIP: $*"
	if [ "$failures" -gt 0 ]; then
		echo "# but $failures check(s) failed before the skip"
		exit 1
	fi
	if [ "${WD_MUST_WORK:-0}" = 1 ]; then
		echo "WD_MUST_WORK=1: a skip is a failure here"
		exit 1
	fi
	exit 77
}

finish() {
	if [ "$failures" -gt 0 ]; then
		echo "# $failures failure(s)"
		exit 1
	fi
	echo "# all passed"
	exit 0
}

# wd ARGS...: warden run --workspace $WS ARGS, stdin /dev/null; stdout and
# stderr in $OUT and $ERR, status in $RC.  Never fails itself.
OUT=$T/out
ERR=$T/err
RC=0
# What int 0x80 does on this host outside any sandbox: works, faults (no
# IA-32 entry in this kernel) or refused.  The probe is told, so that a
# fault in the jail counts as a refusal only where the host faults too.
host_ia32() {
	"$WD_PROBE" ia32 2>/dev/null || echo unknown
}

wd() {
	"$WARDEN" run --workspace "$WS" ${WD_IMAGE:+--image "$WD_IMAGE"} "$@" \
		>"$OUT" 2>"$ERR" </dev/null
	RC=$?
	return 0
}

# Show the tail of what the last wd printed, indented, for a failing check.
show() {
	echo "  --- status $RC; stdout (tail):"
	tail -c 1500 "$OUT" | sed 's/^/  | /'
	echo "  --- stderr (tail):"
	tail -c 1500 "$ERR" | sed 's/^/  | /'
}

# expect_rc WANT DESCRIPTION: check the status of the last wd.
expect_rc() {
	if [ "$RC" = "$1" ]; then
		ok "$2 (status $RC)"
	else
		not_ok "$2: status $RC, want $1"
		show
	fi
}

# expect_out REGEX DESCRIPTION [FILE]: the last wd's stdout (or FILE) matches.
expect_out() {
	local f=${3:-$OUT}
	if grep -Eq -- "$1" "$f"; then
		ok "$2"
	else
		not_ok "$2: no line matching /$1/"
		show
	fi
}

# probe_report: turn each probe "FAIL" line into a not_ok, each "ok" into ok.
probe_report() {
	local prefix=$1 line
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "$prefix: ${line#ok }" ;;
		"FAIL "*) not_ok "$prefix: ${line#FAIL }" ;;
		esac
	done <"$OUT"
	if ! grep -q '^ok ' "$OUT"; then
		not_ok "$prefix: the probe reported nothing"
		show
	fi
}

# gvisor_known_differences: the probe's FAIL lines that are gVisor's own
# (a user-space kernel), said and set aside; $OUT keeps the rest for
# probe_report.  Shared by gvisor.sh and gvisor_pool.sh:
#  - its /proc/self/status has no CapAmb or NoNewPrivs line;
#  - a root-owned directory refuses uid 1000 with EACCES before the
#    read-only mount can say EROFS (gvisor.sh checks the mounts otherwise);
#  - personality(PER_BSD) is EINVAL and mount_setattr ENOSYS: refused by
#    the sentry itself, which implements neither;
#  - /dev/fuse is the sentry's own device (mounting is refused anyway).
gvisor_known_differences() {
	local known='^FAIL (status-CapAmb field missing|status-NoNewPrivs field missing|readonly:/[a-z]* Permission denied|syscall:personality\(PER_BSD\) EINVAL|syscall:mount_setattr ENOSYS|dev-absent:/dev/fuse exists)'
	grep -E "$known" "$OUT" | sed 's/^FAIL /  gVisor differs: /'
	grep -Ev "$known" "$OUT" >"$T/probe-rest"
	cp "$T/probe-rest" "$OUT"
}

# json_get EXPR [FILE]: evaluate a python expression over the JSON object j
# read from FILE (default $OUT); prints the result.
json_get() {
	python3 -c 'import json,sys
j = json.load(open(sys.argv[2]))
r = eval(sys.argv[1])
print(json.dumps(r) if not isinstance(r, str) else r)' "$1" "${2:-$OUT}"
}

# json_data STREAM [FILE]: the kept window of stdout or stderr, byte for byte.
json_data() {
	python3 -c 'import json,sys
sys.stdout.write(json.load(open(sys.argv[2]))[sys.argv[1]]["data"])' "$1" "${2:-$OUT}"
}

# A free TCP port on 127.0.0.1 (racy by nature; good enough for a test).
free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Processes whose command line holds MARKER (excluding this shell's pgrep).
count_marked() {
	pgrep -f -- "$1" | grep -cvx "$$"
}

# The same, but only the sandbox's own processes: warden's janitor carries
# warden's argv (and so the marker) for a moment after warden returns.
count_sandbox() {
	local p n=0
	for p in $(pgrep -f -- "$1"); do
		[ "$p" = $$ ] && continue
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = warden ] && continue
		n=$((n + 1))
	done
	echo "$n"
}

# scaled SECONDS: a deadline for a wait on an event, stretched for this
# host: by 1 + load/CPUs (the 1-minute load average when the test
# started) and 3x for a sanitizer build of warden.  It bounds a failure
# only: a wait that passes returns as soon as its event happens.
WD_SLOWDOWN=$(awk -v cpus="$(nproc)" '{ f = 1 + $1 / cpus; print (f > 20 ? 20 : f) }' /proc/loadavg)
if grep -qa -e __asan_init -e __tsan_init "$WARDEN" 2>/dev/null ||
	ldd "$WARDEN" 2>/dev/null | grep -e libasan -e libtsan >/dev/null; then
	WD_SLOWDOWN=$(awk -v f="$WD_SLOWDOWN" 'BEGIN { print 3 * f }')
fi
scaled() {
	awk -v s="$1" -v f="$WD_SLOWDOWN" 'BEGIN { printf "%d\n", s * f + 0.999 }'
}

# wait_until SECONDS COMMAND...: poll every 0.1 s until COMMAND succeeds.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	while ! "$@"; do
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.1
	done
	return 0
}

# Sandbox cgroups: one line per <hierarchy>/warden/<id> directory.
sandbox_cgroups() {
	find /sys/fs/cgroup -mindepth 2 -maxdepth 8 -type d -path '*/warden/*' \
		-not -path '*/warden/*/*' 2>/dev/null | sort
}

# The host's mount table without the per-mount ids, which change.
# The host's mounts that could be warden's: naming this test's scratch
# directory (the state directory, workspaces, disks live there) or warden
# (/run/warden: gVisor bundles).  Not the whole table: another program on
# the host may mount something meanwhile (a parallel build's test, an
# automounter), which says nothing about warden.
host_mounts() {
	awk '{ $1 = ""; $2 = ""; print }' /proc/self/mountinfo | grep -e "$T" -e warden | sort
}

# The host must give warden what it needs, or the test is skipped.
require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (the tests run as root here and in CI)"
}

require_userns() {
	if ! unshare --user --map-root-user true 2>/dev/null; then
		skip "user namespaces are not available on this host"
	fi
}

require_cgroup_controller() {
	local c=$1
	if [ -d /sys/fs/cgroup/"$c" ] || grep -qw "$c" /sys/fs/cgroup/cgroup.controllers 2>/dev/null ||
		grep -qw "$c" /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null; then
		return 0
	fi
	skip "the cgroup $c controller is not available"
}

require_python() {
	command -v python3 >/dev/null || skip "python3 is missing"
}

# hexstr STRING: the probe takes secrets in hex so they are not in its argv.
hexstr() {
	printf %s "$1" | od -An -tx1 | tr -d ' \n'
}

# image_fixture RECIPE: the image of tests/integration/images/RECIPE.recipe
# in the suite's shared store ($top/build-cache/images, WARDEN_IMAGE_DIR,
# exported), built there by image_fixture.sh if absent; sets WD_FIXTURE
# to its name.  The store is shared by every test and by the release and
# ASan runs (one build per recipe and checkout, under a flock).  Skips
# when the Debian mirror is unreachable, even under WD_MUST_WORK=1: that
# is the network, not warden; a host without mmdebstrap skips, or fails
# under WD_MUST_WORK=1.
WD_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
image_fixture() {
	local recipe=$WD_SRC/tests/integration/images/$1.recipe rc
	command -v mmdebstrap >/dev/null || skip "mmdebstrap is not installed (scripts/deps.sh installs it)"
	export WARDEN_IMAGE_DIR=${WD_IMAGE_STORE:-$WD_SRC/build-cache/images}
	WD_FIXTURE=$(bash "$WD_SRC/tests/integration/image_fixture.sh" "$WARDEN" \
		"$WARDEN_IMAGE_DIR" "$recipe")
	rc=$?
	if [ "$rc" = 77 ]; then
		echo "SKIP: the Debian mirror is unreachable (image $1)"
		exit 77
	fi
	[ "$rc" = 0 ] || {
		echo "Bail out! image_fixture $1 failed (status $rc)"
		exit 1
	}
}

# WD_IMAGE_RECIPE: the whole test in that image (see the top).
WD_IMAGE_ARGS=
if [ -n "${WD_IMAGE_RECIPE:-}" ]; then
	image_fixture "$WD_IMAGE_RECIPE"
	WD_IMAGE=$WD_FIXTURE
	# for a warden command line in a string (script -c); a fixture's
	# name is [a-z0-9-]: nothing to quote
	WD_IMAGE_ARGS="--image $WD_IMAGE"
	echo "# every wd runs with --image $WD_IMAGE ($WARDEN_IMAGE_DIR)"
fi
