#!/usr/bin/env bash
# Identity: as root, the sandbox user is host uid 65534 (never host root),
# yet the workspace appears owned by the sandbox user and what it creates
# belongs on the host to the workspace's owner (idmapped mount).  As an
# ordinary user, the sandbox user maps to the caller.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python

owner=1234
chown "$owner:$owner" "$WS"
echo other >"$WS/others-file"
chown 4321:4321 "$WS/others-file"
chmod 644 "$WS/others-file"
echo mine >"$WS/owners-file"
chown "$owner:$owner" "$WS/owners-file"
chmod 644 "$WS/owners-file"

wd --json -- /bin/sh -c 'stat -c "%u:%g" /workspace /workspace/owners-file /workspace/others-file; touch new-file; mkdir new-dir; echo more >> owners-file; id -u; id -g'
expect_rc 0 "create files in a workspace owned by $owner"
if grep -q '"idmapped_workspace":false' "$OUT"; then
	skip "this kernel or filesystem cannot idmap the workspace"
fi
json_data stdout >"$T/inside"
check "inside: /workspace is owned by the sandbox user" test "$(sed -n 1p "$T/inside")" = 1000:1000
check "inside: the owner's file is the sandbox user's" test "$(sed -n 2p "$T/inside")" = 1000:1000
check "inside: another host user's file is nobody's" test "$(sed -n 3p "$T/inside")" = 65534:65534
check "inside: uid and gid 1000" test "$(sed -n 4,5p "$T/inside" | paste -sd:)" = 1000:1000
check "host: a new file belongs to the workspace owner" test "$(stat -c %u:%g "$WS/new-file")" = "$owner:$owner"
check "host: a new directory belongs to the workspace owner" test "$(stat -c %u:%g "$WS/new-dir")" = "$owner:$owner"
check "host: the owner's file was written" test "$(tail -n1 "$WS/owners-file")" = more
check "host: the owner's file still belongs to the owner" test "$(stat -c %u:%g "$WS/owners-file")" = "$owner:$owner"
check "--json: idmapped_workspace true" test "$(json_get 'j["protections"]["idmapped_workspace"]')" = true

wd -- /bin/sh -c 'echo x >> others-file'
check "another host user's 0644 file is not writable inside" test "$RC" != 0
check "host: it is unchanged" test "$(cat "$WS/others-file")" = other

# A root-owned workspace: new files are root's on the host.
ws_root=$T/ws-root
mkdir "$ws_root"
"$WARDEN" run --workspace "$ws_root" -- /usr/bin/touch /workspace/f >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "create a file in a root-owned workspace"
check "host: it belongs to root, the workspace owner" test "$(stat -c %u:%g "$ws_root/f")" = 0:0

# On the host, the sandbox's processes run as nobody, in their own user
# namespace that maps only 1000 -> 65534.
marker=wd-idmap-$RANDOM$RANDOM
"$WARDEN" run --workspace "$WS" --timeout 30 -- /bin/sh -c "sleep 20; : $marker" >/dev/null 2>&1 </dev/null &
wpid=$!
wait_until "$(scaled 10)" pgrep -u 65534 -f -- "$marker" >/dev/null
p=$(pgrep -f -- "sleep 20; : $marker" | while read -r q; do
	[ "$(awk '/^Uid:/ { print $2 }' "/proc/$q/status")" != 0 ] && echo "$q"
done | head -n1)
if [ -n "$p" ]; then
	check "host: the command runs as uid 65534" \
		test "$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$p/status")" = "65534 65534 65534 65534"
	check "host: and gid 65534" \
		test "$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "/proc/$p/status")" = "65534 65534 65534 65534"
	check "host: its uid_map is exactly 1000 -> 65534" \
		test "$(awk '{ print $1, $2, $3 }' "/proc/$p/uid_map")" = "1000 65534 1"
	check "host: its gid_map is exactly 1000 -> 65534" \
		test "$(awk '{ print $1, $2, $3 }' "/proc/$p/gid_map")" = "1000 65534 1"
	# As root, setgroups stays "allow" in the namespace so that pid 1 can
	# drop warden's supplementary groups (src/jail/plan.c); the sandbox
	# itself has no capability to call it.  What matters: no group left.
	check "host: the command has no supplementary group" \
		test -z "$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$p/status" | tr -d ' ')"
	# pid 1 of the jail too
	init=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status")
	check "host: pid 1 of the jail runs as 65534 too" \
		test "$(awk '/^Uid:/ { print $2 }' "/proc/$init/status")" = 65534
	check "host: pid 1 does not show warden's environment" \
		test "$(tr '\0' '\n' <"/proc/$init/environ" 2>/dev/null | grep -c .)" = 0
else
	not_ok "could not find the sandboxed command on the host"
fi
{
	kill -TERM "$wpid"
	wait "$wpid"
} 2>/dev/null

# ---- an ordinary user: the sandbox user is the caller.
if command -v setpriv >/dev/null; then
	ws_user=$T/ws-user
	mkdir "$ws_user"
	chown "$owner:$owner" "$ws_user"
	# Without a cgroup it may make (v1, or v2 without a delegated
	# subtree) an ordinary user's run fails closed unless --best-effort
	# says limits may go unenforced.
	setpriv --reuid "$owner" --regid "$owner" --clear-groups \
		"$WARDEN" run --workspace "$ws_user" -- /bin/true >"$T/u.out" 2>"$T/u.err" </dev/null
	RC=$?
	best=()
	if [ "$RC" = 125 ] && grep -q -- '--best-effort' "$T/u.err"; then
		ok "as uid $owner: limits that cannot be enforced are refused (125, names --best-effort)"
		best=(--best-effort)
	else
		expect_rc 0 "as uid $owner: this host lets an ordinary user have a cgroup"
	fi
	# Several runs: writing the child's maps once raced with the child
	# turning itself non-dumpable (EACCES on /proc/PID/setgroups).
	bad=0
	good=
	for i in $(seq 1 20); do
		setpriv --reuid "$owner" --regid "$owner" --clear-groups \
			"$WARDEN" run --workspace "$ws_user" "${best[@]}" --json -- /bin/sh -c 'id -u; touch f' \
			>"$T/u.out" 2>"$T/u.err" </dev/null
		RC=$?
		if [ "$RC" = 0 ]; then
			[ -z "$good" ] && good=1 && cp "$T/u.out" "$OUT" && cp "$T/u.err" "$ERR"
		else
			bad=$((bad + 1))
			[ "$bad" = 1 ] && sed 's/^/  | /' "$T/u.err"
		fi
	done
	if [ "$RC" = 125 ] && [ -z "$good" ] && grep -qi 'namespace' "$T/u.err"; then
		skip "unprivileged user namespaces are disabled"
	fi
	check "as uid $owner: 20 runs in a row all start ($bad failed)" test "$bad" = 0
	RC=$([ -n "$good" ] && echo 0 || echo 125)
	expect_rc 0 "as uid $owner"
	check "as uid $owner: uid 1000 inside" test "$(json_data stdout | head -n1)" = 1000
	check "as uid $owner: host_uid is the caller" test "$(json_get 'j["protections"]["host_uid"]')" = "$owner"
	check "as uid $owner: the new file is the caller's" test "$(stat -c %u "$ws_user/f")" = "$owner"
fi

finish
