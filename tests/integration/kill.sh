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
	if ! wait_until "$(scaled 10)" grep -q 'children forked' "$T/k.out"; then
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
	if wait_until "$(scaled 5)" none_marked "$marker"; then
		ok "SIG$sig: no process of the sandbox survives warden"
	else
		not_ok "SIG$sig: $(count_marked "$marker") process(es) survive warden after $(scaled 5) s"
		ps -o pid,ppid,user,stat,args -p "$(pgrep -d, -f -- "$marker")" | sed 's/^/  | /'
		pgrep -f -- "$marker" | xargs -r kill -KILL
	fi
	if wait_until "$(scaled 5)" no_dirs "${cgs[@]}"; then
		ok "SIG$sig: the sandbox's cgroups are removed"
	else
		not_ok "SIG$sig: cgroups left after $(scaled 5) s: ${cgs[*]}"
	fi
	check "SIG$sig: no mount left on the host" test "$(our_mounts)" = "$mounts_before"
}

kill_case KILL
kill_case TERM
kill_case INT

# Killed during set-up, at assorted moments: nothing may be left either.
# Which cgroups are ours: each run's first -v line ("1 planned") names its
# sandbox id before any cgroup is made, and the directories are
# <hierarchy>/warden/<id>.  (Not "new since the start of this test": other
# users' and other tests' sandboxes come and go on a shared host, and a
# session or a pool of theirs outlives any fixed wait; that is what this
# test once blamed on warden, "empty sandbox cgroups left after 21 s".)
# The moments: fixed delays after the start (on a loaded host most land
# before the sandbox is planned), then delays after its "1 planned" line,
# so that some always land in the cgroup's and pid 1's set-up.
marker=wd-early-$RANDOM$RANDOM
n=0
planned() {
	grep -q ' 1 planned' "$1"
}
for delay in 0 0.001 0.002 0.004 0.008 0.015 0.030 0.050 @0 @0.002 @0.005 @0.010 @0.020; do
	n=$((n + 1))
	"$WARDEN" run -v --workspace "$WS" --timeout 120 -- /bin/sh -c "sleep 100; : $marker" \
		>/dev/null 2>"$T/early-$n.err" </dev/null &
	case $delay in
	@*)
		deadline=$((SECONDS + $(scaled 10)))
		until planned "$T/early-$n.err" || [ "$SECONDS" -ge "$deadline" ]; do
			sleep 0.002
		done
		delay=${delay#@}
		;;
	esac
	sleep "$delay"
	kill -KILL $! 2>/dev/null
	wait $! 2>/dev/null
done
if wait_until "$(scaled 5)" none_marked "$marker"; then
	ok "warden killed during set-up ($n moments): no process left"
else
	not_ok "warden killed during set-up: $(count_marked "$marker") process(es) left after $(scaled 5) s"
	ps -o pid,ppid,user,stat,args -p "$(pgrep -d, -f -- "$marker")" | sed 's/^/  | /'
	pgrep -f -- "$marker" | xargs -r kill -KILL
fi
check "warden killed during set-up: no mount left on the host" test "$(our_mounts)" = "$mounts_before"
ids=$(cat "$T"/early-*.err | sed -n 's/.*: sandbox \([0-9a-f]\{16\}\): .*/\1/p' | sort -u)
ours=()
for id in $ids; do
	for h in /sys/fs/cgroup/*/warden /sys/fs/cgroup/warden /sys/fs/cgroup/unified/warden; do
		ours+=("$h/$id")
	done
done
check "warden killed during set-up: the runs named their sandboxes ($(echo $ids | wc -w) of $n)" \
	test "$(echo $ids | wc -w)" -ge 5
# The keeper (supervise/keeper.c) removes them once warden's end of its
# pipe closes; it retries while exiting tasks drain.  Waited for, not
# slept: the deadline only bounds a failure.
if wait_until "$(scaled 20)" no_dirs "${ours[@]}"; then
	ok "warden killed during set-up: no sandbox cgroup of these runs left"
else
	left=$(for d in "${ours[@]}"; do [ -d "$d" ] && echo "$d"; done)
	not_ok "warden killed during set-up: sandbox cgroups left after $(scaled 20) s: $left"
	for d in $left; do
		echo "  | $d: tasks $(tr '\n' ' ' <"$d/cgroup.procs" 2>/dev/null)"
	done
fi

finish
