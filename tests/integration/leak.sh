#!/usr/bin/env bash
# 200 runs in a row leave nothing behind: no process, no descriptor in the
# caller, no cgroup, no mount, no temporary file or directory.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python

runs=${WD_LEAK_RUNS:-200}
marker=wd-leak-$RANDOM$RANDOM

our_mounts() {
	grep -e "$T" -e warden /proc/self/mountinfo | awk '{ $1 = ""; $2 = ""; print }' | sort
}
tmp_entries() {
	ls -A /tmp /var/tmp /dev/shm /run 2>/dev/null | grep -v '^wd-it\.' | sort
}
# Sandbox-side processes on the host: pid 1 of a jail and the sandbox user.
# Other sessions' sandboxes come and go; ours must not stay.
njail() {
	echo $(($(pgrep -c -x warden-init) + $(pgrep -c -u 65534)))
}

fds_before=$(ls /proc/$$/fd | wc -l)
mounts_before=$(our_mounts)
tmp_before=$(tmp_entries)
procs_before=$(njail)

ids=$T/ids
: >"$ids"
start=$(date +%s%N)
fails=0
for ((i = 0; i < runs; i++)); do
	"$WARDEN" run --workspace "$WS" --json -- /bin/sh -c ": $marker" >"$OUT" 2>"$ERR" </dev/null ||
		fails=$((fails + 1))
	sed -n 's/.*"sandbox_id":"\([^"]*\)".*/\1/p' "$OUT" >>"$ids"
done
end=$(date +%s%N)
echo "# $runs runs in $(((end - start) / 1000000)) ms ($(((end - start) / runs / 1000)) us each)"
check "all $runs runs succeeded ($fails failed)" test "$fails" = 0
check "$runs distinct sandbox ids" test "$(sort -u "$ids" | wc -l)" = "$runs"

# Janitors and namespace teardown may finish a moment after warden returns.
none_marked() {
	[ "$(count_marked "$marker")" = 0 ]
}
if wait_until "$(scaled 10)" none_marked; then
	ok "no process of the runs is left (warden, janitor or sandbox)"
else
	not_ok "$(count_marked "$marker") process(es) left after 10 s"
	ps -o pid,ppid,user,stat,args -p "$(pgrep -d, -f -- "$marker")" | sed 's/^/  | /'
fi

cg_left() {
	local id
	while read -r id; do
		find /sys/fs/cgroup -maxdepth 8 -type d -name "$id" 2>/dev/null
	done <"$ids"
}
if wait_until "$(scaled 10)" test -z "$(cg_left)"; then
	ok "no cgroup of the $runs sandboxes is left"
else
	not_ok "cgroups left: $(cg_left | head -n 5 | tr '\n' ' ')"
fi

check "the test shell's descriptors are unchanged" test "$(ls /proc/$$/fd | wc -l)" = "$fds_before"
check "no mount left on the host" test "$(our_mounts)" = "$mounts_before"

new_tmp=$(comm -13 <(echo "$tmp_before") <(tmp_entries))
suspect=$(echo "$new_tmp" | grep -i -e warden -F -f "$ids" || true)
check "no temporary entry named after warden or a sandbox${suspect:+: $suspect}" test -z "$suspect"
# Other sessions may create a few files meanwhile; one per run is a leak.
check "no growth in /tmp /var/tmp /dev/shm /run ($(echo -n "$new_tmp" | grep -c '^') new)" \
	test "$(echo -n "$new_tmp" | grep -c '^')" -lt $((runs / 4))
no_growth() {
	[ "$(njail)" -le "$procs_before" ]
}
if wait_until "$(scaled 10)" no_growth; then
	ok "no jail pid 1 or sandbox-user process left ($procs_before before, $(njail) after)"
else
	not_ok "jail processes grew: $procs_before before, $(njail) after 10 s"
	ps -o pid,ppid,user,stat,etimes,args -p "$( (pgrep -x warden-init; pgrep -u 65534) | paste -sd,)" | sed 's/^/  | /'
fi

finish
