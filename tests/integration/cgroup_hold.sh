#!/bin/bash
# A sandbox cannot create, rename, remove or leave its cgroup, so the path
# warden reaches it by later is still its own.  A live sandbox's cgroup
# descriptors are closed once pid 1 is ready (cgroup_park) and `warden
# update`, statistics and destroy reopen <hierarchy>/warden/<id> by path:
# a model that could rename that directory, or make one of its name
# elsewhere, would have warden write limits to, or read statistics from, a
# cgroup of its choosing.
#
# Proves, at the container level (a session of root's, its cgroup parked):
# the command sees no cgroup file system, mounting one (v1 or v2) and a new
# user or cgroup namespace are refused, its cgroup paths all read "/"; the
# host directory keeps its inode; `warden update --memory` then lands in
# that directory by path and a later command still reports its memory.
# And at the process level, where the command sees the host's /sys: with a
# v1 subtree delegated to an ordinary user (the command's uid then owns its
# own cgroup directory), mkdir, rename, rmdir, moving itself to the parent
# and raising its own memory limit are all refused (Landlock), where the
# same uid outside warden does each of them (the control: the attack is
# real without the jail).
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_cgroup_controller memory

export WARDEN_STATE_DIR=$T/state
at_exit '"$WARDEN" rm c >/dev/null 2>&1'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# ---- container level: a session, its cgroup parked once pid 1 is ready
w create c --workspace "$WS" --memory 128M
expect_rc 0 "create a session with --memory 128M"
id=$(tr -d '\n' <"$OUT")
# the memory hierarchy's directory of this sandbox: v1 memory/, or v2
mem=$(sandbox_cgroups | grep "/warden/$id\$" | grep -e '/memory/' -e '^/sys/fs/cgroup/warden/' |
	head -n1)
if [ -z "$mem" ] || { [ ! -e "$mem/memory.limit_in_bytes" ] && [ ! -e "$mem/memory.max" ]; }; then
	not_ok "the session's memory cgroup is found on the host (${mem:-none})"
	finish
fi
limit_file=$mem/memory.limit_in_bytes
[ -e "$limit_file" ] || limit_file=$mem/memory.max
ino=$(stat -c %i "$mem")

w exec c -- /bin/sh -c '
	[ -e /sys/fs/cgroup ] && echo SEES-CGROUPFS
	mkdir -p /tmp/m
	mount -t cgroup2 none /tmp/m 2>/dev/null && echo MOUNTED-V2
	mount -t cgroup -o memory none /tmp/m 2>/dev/null && echo MOUNTED-V1
	unshare -Urm sh -c "mount -t cgroup2 none /tmp/m" 2>/dev/null && echo MOUNTED-IN-USERNS
	unshare -UrC true 2>/dev/null && echo NEW-CGROUP-NS
	cut -d: -f3 /proc/self/cgroup | sort -u | tr "\n" " "; echo
	echo done'
expect_rc 0 "the attempts ran in the session"
check "  ... no cgroup file system in the jail" bash -c "! grep -q SEES-CGROUPFS '$OUT'"
check "  ... mounting cgroup2 or a v1 memory hierarchy refused" \
	bash -c "! grep -q -e MOUNTED-V2 -e MOUNTED-V1 '$OUT'"
check "  ... no new user namespace to mount one in, no new cgroup namespace" \
	bash -c "! grep -q -e MOUNTED-IN-USERNS -e NEW-CGROUP-NS '$OUT'"
check "  ... every cgroup path the command sees is its own root" grep -qx '/ ' "$OUT"
check "  ... and the command ran to its end" grep -qx "done" "$OUT"
check "the session's cgroup directory is the same (inode $ino)" \
	test "$(stat -c %i "$mem" 2>/dev/null)" = "$ino"

w update c --memory 96M
expect_rc 0 "warden update --memory 96M of the running session (its cgroup reopened by path)"
check "  ... the limit is in the sandbox's own directory ($(cat "$limit_file" 2>/dev/null))" \
	test "$(cat "$limit_file" 2>/dev/null)" = $((96 << 20))
w exec c --json -- /bin/sh -c 'x=$(head -c 12000000 /dev/zero | tr "\\0" a); echo ${#x}'
expect_rc 0 "a later command runs"
check "  ... and its memory (12 MB and more) is still read from the cgroup" \
	test "$(json_get '(j.get("peak_memory_bytes") or 0) > 12000000')" = true
w rm c
expect_rc 0 "rm"
check "  ... its cgroup directory is gone" test ! -e "$mem"

# ---- process level, a v1 subtree delegated to an ordinary user
if [ ! -d /sys/fs/cgroup/memory ] || [ ! -d /sys/fs/cgroup/pids ]; then
	ok "# SKIP process level: delegation is tried on cgroup v1 hierarchies only (none here)"
	finish
fi
command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"
U=23456
while getent passwd "$U" >/dev/null || pgrep -u "$U" >/dev/null; do
	U=$((U + 1))
done
D=wd-it-deleg.$$
CTRLS=()
for c in memory pids cpu cpuacct freezer; do
	[ -d "/sys/fs/cgroup/$c" ] && CTRLS+=("$c")
done
for c in "${CTRLS[@]}"; do
	mkdir "/sys/fs/cgroup/$c/$D" && chown "$U:$U" "/sys/fs/cgroup/$c/$D" \
		"/sys/fs/cgroup/$c/$D/cgroup.procs" "/sys/fs/cgroup/$c/$D/tasks"
done
# removed deepest first, whatever a failed check left in them
at_exit 'for c in '"${CTRLS[*]}"'; do find "/sys/fs/cgroup/$c/'"$D"'" -depth -type d -exec rmdir {} + 2>/dev/null; done'
# the state directory outside /tmp: at the process level the command
# writes the host's /tmp, and warden refuses a state directory there
PS=$(mktemp -d /var/tmp/wd-it-cg.XXXXXXXX)
at_exit 'rm -rf "'"$PS"'"'
mkdir "$PS/ws" "$PS/home"
chown "$U:$U" "$PS/ws" "$PS/home"
chmod 755 "$PS"
BIN=$(dirname "$WARDEN")
if ! setpriv --reuid "$U" --regid "$U" --clear-groups test -x "$WARDEN"; then
	cp "$WARDEN" "$PS/" && chmod 755 "$PS/warden"
	BIN=$PS
fi
# as_deleg CMD...: CMD as $U, in the delegated cgroups
as_deleg() {
	(
		for c in "${CTRLS[@]}"; do
			echo "$BASHPID" >"/sys/fs/cgroup/$c/$D/cgroup.procs" || exit 99
		done
		exec env -i PATH=/usr/bin:/bin HOME="$PS/home" WARDEN_STATE_DIR="$PS/home/state" \
			ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
			setpriv --reuid "$U" --regid "$U" --clear-groups "$@"
	) >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
# ATTACK: run in the command's own memory cgroup directory, as its owner
# shellcheck disable=SC2016
ATTACK='c=$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup); d=/sys/fs/cgroup/memory$c
echo "in $c owned by $(stat -c %u "$d")"
mkdir "$d/sub" 2>/dev/null && echo MKDIR
mv "$d" "$d.moved" 2>/dev/null && echo RENAME && d=$d.moved
echo -1 > "$d/memory.limit_in_bytes" 2>/dev/null && echo LIMIT
echo $$ > "$d/../cgroup.procs" 2>/dev/null && echo LEFT
rmdir "$d/sub" 2>/dev/null && echo RMDIR
true'

# the control: the same uid, in a directory of the subtree, outside warden
for c in "${CTRLS[@]}"; do
	mkdir "/sys/fs/cgroup/$c/$D/ctl" && chown -R "$U:$U" "/sys/fs/cgroup/$c/$D/ctl"
done
(
	for c in "${CTRLS[@]}"; do echo "$BASHPID" >"/sys/fs/cgroup/$c/$D/ctl/cgroup.procs"; done
	exec setpriv --reuid "$U" --regid "$U" --clear-groups /bin/sh -c "$ATTACK"
) >"$OUT" 2>"$ERR" </dev/null
check "control: outside warden the owner makes, renames and leaves its cgroup" \
	bash -c "grep -qx MKDIR '$OUT' && grep -qx RENAME '$OUT' && grep -qx LEFT '$OUT'"
for c in "${CTRLS[@]}"; do
	find "/sys/fs/cgroup/$c/$D" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
done

as_deleg "$BIN/warden" run --isolation process --workspace "$PS/ws" -- /bin/sh -c "$ATTACK"
expect_rc 0 "process level, delegated: the attack ran"
check "  ... in a cgroup directory of warden's that the command's uid owns" \
	grep -q "^in /$D/warden/[0-9a-f]\{16\} owned by $U\$" "$OUT"
for a in MKDIR RENAME LIMIT LEFT RMDIR; do
	check "  ... $a refused" bash -c "! grep -qx $a '$OUT'"
done
left=$(for c in "${CTRLS[@]}"; do find "/sys/fs/cgroup/$c/$D" -mindepth 1 -type d; done 2>/dev/null |
	grep -v "/$D/warden\$")
check "  ... and nothing is left in the subtree (${left:-nothing})" test -z "$left"
finish
