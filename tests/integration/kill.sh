#!/usr/bin/env bash
# warden killed mid-run (SIGKILL, and SIGTERM) leaves no sandbox process,
# no sandbox cgroup and no mount behind; so does a kill during set-up.
. "$(dirname "$0")/lib.sh"
require_root
require_userns

# Mounts warden could leave on the host: anything naming our scratch dir or
# warden (other sessions may mount unrelated things meanwhile).
our_mounts() {
	grep -e "$T" -e warden /proc/self/mountinfo | awk '{ $1 = ""; $2 = ""; print }' | sort
}
mounts_before=$(our_mounts)

# cgroups_of PID: the sandbox cgroup directories PID is in (v1: one per
# hierarchy, mounted at /sys/fs/cgroup/<controllers>; v2: the unified tree,
# at /sys/fs/cgroup or /sys/fs/cgroup/unified on hybrid hosts).
cgroups_of() {
	local ctrl rel d
	while IFS=: read -r _ ctrl rel; do
		case $rel in */warden/*) ;; *) continue ;; esac
		if [ -n "$ctrl" ]; then
			d=/sys/fs/cgroup/${ctrl#name=}$rel
		elif [ -d "/sys/fs/cgroup/unified$rel" ]; then
			d=/sys/fs/cgroup/unified$rel
		else
			d=/sys/fs/cgroup$rel
		fi
		[ -d "$d" ] && echo "$d"
	done <"/proc/$1/cgroup" 2>/dev/null | sort -u
}

none_marked() {
	[ "$(count_marked "$1")" = 0 ]
}

no_dirs() {
	local d
	for d in "$@"; do
		[ -d "$d" ] && return 1
	done
	return 0
}

# kill_case SIGNAL: start a stubborn tree, kill warden with SIGNAL, check.
kill_case() {
	local sig=$1 marker=wd-kill-$RANDOM$RANDOM pid p cgs=()
	"$WARDEN" run --workspace "$WS" --timeout 120 "${PROBE_BIND[@]}" -- \
		"$PROBE" stubborn 3 "$marker" >"$T/k.out" 2>"$T/k.err" </dev/null &
	pid=$!
	if ! wait_until 10 grep -q 'children forked' "$T/k.out"; then
		not_ok "SIG$sig: the sandbox did not start"
		kill -KILL "$pid" 2>/dev/null
		return
	fi
	sleep 0.2
	# The command's own process: uid 65534 on the host, marker in argv.
	p=$(pgrep -u 65534 -f -- "$marker" | head -n1)
	if [ -n "$p" ]; then
		mapfile -t cgs < <(cgroups_of "$p")
	fi
	check "SIG$sig: found the sandbox's cgroups (${cgs[*]})" test "${#cgs[@]}" -gt 0
	kill -"$sig" "$pid"
	wait "$pid" 2>/dev/null
	if wait_until 5 none_marked "$marker"; then
		ok "SIG$sig: no process of the sandbox survives warden"
	else
		not_ok "SIG$sig: $(count_marked "$marker") process(es) survive warden after 5 s"
		ps -o pid,ppid,user,stat,args -p "$(pgrep -d, -f -- "$marker")" | sed 's/^/  | /'
		pgrep -f -- "$marker" | xargs -r kill -KILL
	fi
	if wait_until 5 no_dirs "${cgs[@]}"; then
		ok "SIG$sig: the sandbox's cgroups are removed"
	else
		not_ok "SIG$sig: cgroups left after 5 s: ${cgs[*]}"
	fi
	check "SIG$sig: no mount left on the host" test "$(our_mounts)" = "$mounts_before"
}

kill_case KILL
kill_case TERM
kill_case INT

# Killed during set-up, at assorted moments: nothing may be left either.
cg_before=$(sandbox_cgroups)
marker=wd-early-$RANDOM$RANDOM
for delay in 0 0.001 0.002 0.004 0.006 0.008 0.010 0.015 0.020 0.030 0.050; do
	"$WARDEN" run --workspace "$WS" --timeout 120 -- /bin/sh -c "sleep 100; : $marker" \
		>/dev/null 2>&1 </dev/null &
	sleep "$delay"
	kill -KILL $! 2>/dev/null
	wait $! 2>/dev/null
done
if wait_until 5 none_marked "$marker"; then
	ok "warden killed during set-up (11 moments): no process left"
else
	not_ok "warden killed during set-up: $(count_marked "$marker") process(es) left after 5 s"
	ps -o pid,ppid,user,stat,args -p "$(pgrep -d, -f -- "$marker")" | sed 's/^/  | /'
	pgrep -f -- "$marker" | xargs -r kill -KILL
fi
check "warden killed during set-up: no mount left on the host" test "$(our_mounts)" = "$mounts_before"
# New sandbox cgroups that are still there, and empty, 6 s later and 15 s
# after that are ours (other users' sandboxes come and go much faster; a
# janitor's sweep may take a few seconds).
sleep 6
leftover=$(comm -13 <(echo "$cg_before") <(sandbox_cgroups) | while read -r d; do
	[ -s "$d/cgroup.procs" ] || echo "$d"
done)
gone() {
	local d
	for d in $leftover; do
		[ -d "$d" ] && return 1
	done
	return 0
}
if [ -n "$leftover" ] && ! wait_until 15 gone; then
	not_ok "warden killed during set-up: empty sandbox cgroups left after 21 s: $leftover"
else
	ok "warden killed during set-up: no empty sandbox cgroup left${leftover:+ (some took over 6 s to go)}"
fi

finish
