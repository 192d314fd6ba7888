#!/usr/bin/env bash
# 200 create/exec/rm cycles of cow sessions leave nothing behind:
# no process (monitor, jail, keeper), no descriptor in the caller, no
# cgroup, no mount, no loop device, no state directory.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"

export WARDEN_STATE_DIR=$T/state
cycles=${WD_LEAK_CYCLES:-200}

our_loops() {
	losetup -a 2>/dev/null | grep -cF "$WARDEN_STATE_DIR" || true
}
our_monitors() {
	local p n=0
	for p in $(pgrep -f "[w]arden-monitor $WARDEN_STATE_DIR"); do
		st=$(ps -o stat= -p "$p" 2>/dev/null)
		[ -n "$st" ] && [ "${st#Z}" = "$st" ] && n=$((n + 1))
	done
	echo $n
}
# Mounts of ours: naming this test's directory (the state directory and
# the sessions' disks are under it) or one of its sessions.  Not the whole
# host table: other users' sandboxes mount and unmount meanwhile on a
# shared host (this check once failed on one of theirs).
our_mounts() {
	host_mounts | grep -F -e "$T" $(sed 's/^/-e /' "$ids" 2>/dev/null) | sort
}
fds_before=$(ls /proc/$$/fd | wc -l)
ids=$T/ids
: >"$ids"
mounts_before=$(our_mounts)
fails=0
start=$(date +%s%N)
for ((i = 0; i < cycles; i++)); do
	id=$("$WARDEN" create --workspace "$WS" --workspace-mode cow 2>>"$ERR" </dev/null) || {
		fails=$((fails + 1))
		continue
	}
	echo "$id" >>"$ids"
	"$WARDEN" exec "$id" -- /bin/sh -c "echo $i > f$((i % 3)).txt" >/dev/null 2>>"$ERR" </dev/null ||
		fails=$((fails + 1))
	"$WARDEN" rm "$id" >/dev/null 2>>"$ERR" </dev/null || fails=$((fails + 1))
done
end=$(date +%s%N)
echo "# $cycles cycles in $(((end - start) / 1000000)) ms ($(((end - start) / cycles / 1000)) us each)"
check "all $cycles create/exec/rm cycles succeeded ($fails failed)" test "$fails" = 0
[ "$fails" = 0 ] || head -5 "$ERR"
check "$cycles distinct ids" test "$(sort -u "$ids" | wc -l)" = "$cycles"
check "no monitor is left" wait_until "$(scaled 10)" test "$(our_monitors)" = 0
check "no loop device of ours is left" wait_until "$(scaled 10)" test "$(our_loops)" = 0
cg_left() {
	local id
	while read -r id; do
		find /sys/fs/cgroup -maxdepth 8 -type d -name "$id" 2>/dev/null
	done <"$ids"
}
if wait_until "$(scaled 10)" test -z "$(cg_left)"; then
	ok "no cgroup of the $cycles sessions is left"
else
	not_ok "cgroups left: $(cg_left | head -n 5 | tr '\n' ' ')"
fi
jail_left() {
	local id
	while read -r id; do
		grep -ls "$id" /proc/[0-9]*/cgroup 2>/dev/null
	done <"$ids"
}
check "no process of the sessions' jails is left" wait_until "$(scaled 10)" test -z "$(jail_left)"
check "the shell's descriptors are unchanged" test "$(ls /proc/$$/fd | wc -l)" = "$fds_before"
check "no mount of ours is left on the host" test "$(our_mounts)" = "$mounts_before"
check "no state directory is left" test -z "$(ls -A "$WARDEN_STATE_DIR/sandboxes")"
check "no name is left" test -z "$(ls -A "$WARDEN_STATE_DIR/names")"
check "the real directory was never written" test -z "$(ls -A "$WS")"
finish
