#!/usr/bin/env bash
# Sandboxes side by side: many concurrent runs, some warden processes killed
# meanwhile (their janitors sweep stale cgroups), and each sandbox still
# gets its own limits, output and status; nothing is left afterwards.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_cgroup_controller pids

n=${WD_PARALLEL:-12}
marker=wd-par-$RANDOM$RANDOM
pids=()
for i in $(seq 1 "$n"); do
	# Each one sleeps past 5 s (the age a stale-cgroup sweep looks for),
	# then forks until its own --pids limit stops it.
	"$WARDEN" run --workspace "$WS" --pids $((8 + i)) --timeout 60 "${PROBE_BIND[@]}" -- \
		/bin/sh -c "sleep 6; exec $PROBE forkbomb 1000 # $marker $i" \
		>"$T/par.$i.out" 2>"$T/par.$i.err" </dev/null &
	pids+=($!)
done
# Meanwhile, wardens killed at assorted moments (0, 0.5, 2, 5.5, 6.2 s).
kpids=()
for i in 1 2 3 4 5; do
	"$WARDEN" run --workspace "$WS" --timeout 60 -- /bin/sh -c "sleep 30; : $marker-k" \
		>/dev/null 2>&1 </dev/null &
	kpids+=($!)
done
i=0
for d in 0.01 0.49 1.5 3.5 0.7; do
	sleep "$d"
	kill -KILL "${kpids[$i]}" 2>/dev/null
	wait "${kpids[$i]}" 2>/dev/null
	i=$((i + 1))
done
fails=0
for i in $(seq 1 "$n"); do
	wait "${pids[$((i - 1))]}"
	rc=$?
	limit=$((8 + i))
	got=$(sed -n 's/.*fork failed after \([0-9]*\): EAGAIN.*/\1/p' "$T/par.$i.out")
	# pid 1, sh (exec'd into the probe) and the children: below the limit.
	if [ "$rc" != 0 ] || [ -z "$got" ] || [ "$got" -ge "$limit" ]; then
		fails=$((fails + 1))
		echo "  | run $i: status $rc, --pids $limit, forks ${got:-?}: $(head -c 300 "$T/par.$i.out" "$T/par.$i.err" | tr '\n' ' ')"
	fi
done
check "$n concurrent sandboxes each held to their own --pids ($fails wrong)" test "$fails" = 0

none_left() {
	[ "$(count_marked "$marker")" = 0 ]
}
check "nothing of the concurrent or killed runs is left" wait_until "$(scaled 10)" none_left

finish
