#!/usr/bin/env bash
# --isolation process: no namespaces, but seccomp, Landlock (writes only in
# the workspace, /tmp and /dev/shm; no TCP), no capabilities, NoNewPrivs,
# the empty environment, rlimits, the timeout (whole tree) and output bounds.
. "$(dirname "$0")/lib.sh"
require_root
require_python

# As root, the command runs as the workspace's owner: give it one.
owner=1234
chown "$owner:$owner" "$WS"
cp "$WD_PROBE" "$WS/wd-probe"
chmod 755 "$WS/wd-probe"
P=$WS/wd-probe

# A directory outside the workspace and /tmp that the owner could write
# without Landlock (mode 1777, on the host's disk).
outside=$(mktemp -d /var/tmp/wd-it-outside.XXXXXXXX)
chmod 1777 "$outside"
at_exit "rm -rf '$outside'"

secret=sk-wd-proc-$RANDOM$RANDOM
export WD_IT_PROC_SECRET=$secret

port=$(free_port)
python3 -c 'import socket,sys,time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4); time.sleep(120)' "$port" &
listener=$!
at_exit "kill $listener 2>/dev/null"
wait_until "$(scaled 5)" python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null

# (with descriptors of the caller open that must not cross)
exec 5<"$T" 101<"$T"
wd --isolation process --json -- "$P" all --uid "$owner" \
	--rw "$WS" --rw /tmp --port "$port" --host-ia32 "$(host_ia32)" \
	--env "PATH,HOME=$WS,LANG=C.UTF-8,TZ=UTC" --secret "$(hexstr "$secret")" \
	--cwd "$WS" --no-netif --no-passwd --no-mounts
exec 5<&- 101<&-
cp "$OUT" "$T/probe.json"
json_data stdout >"$T/probe"
cgroup=$(json_get 'j["protections"]["cgroup"]')
# Not expected at this level (no mount or pid namespace, no curated /etc):
# the host's /dev, /etc/shadow (unreadable, but present) and /proc/1.
grep -v -e '^FAIL dev-absent:' -e '^FAIL absent:/etc/shadow' -e '^ok' "$T/probe" >"$T/unexpected"
check "process level: every probe check that applies passes" test ! -s "$T/unexpected"
sed 's/^/  | /' "$T/unexpected"
check "process level: seccomp mode 2" grep -q '^ok status-Seccomp 2' "$T/probe"
check "process level: NoNewPrivs" grep -q '^ok status-NoNewPrivs 1' "$T/probe"
check "process level: bounding set empty" grep -q '^ok status-CapBnd 0000000000000000' "$T/probe"
check "process level: runs as the workspace owner" grep -q "^ok uid $owner/$owner/$owner" "$T/probe"
check "process level: every refused syscall fails" \
	test "$(grep -c '^ok syscall:' "$T/probe")" -ge 50 -a "$(grep -c '^FAIL syscall:' "$T/probe")" = 0
check "process level: the environment is exactly PATH HOME LANG TZ" grep -q '^ok env-checked' "$T/probe"
check "process level: the caller's descriptors 5 and 101 are closed" grep -q '^ok fds only 0-2' "$T/probe"
check "process level: no TCP to the host's listener" grep -q "^ok noconnect:127.0.0.1:$port" "$T/probe"
check "--json: isolation process, no namespaces, seccomp, Landlock" \
	test "$(json_get '[j["protections"]["isolation"], j["protections"]["namespaces"], j["protections"]["seccomp"], j["protections"]["landlock_abi"] > 0]')" = '["process", [], true, true]'

# Landlock: writes outside the workspace and /tmp are refused even where
# the file mode allows them.
wd --isolation process -- "$P" nowrite "$outside" / /usr /etc "$T"
expect_rc 0 "Landlock refuses writes in a 1777 directory outside, /usr, /etc, the workspace's parent"
check "refused by Landlock (EACCES), not by the mode" \
	grep -q "^ok nowrite:$outside Permission denied" "$OUT"
check "nothing was created outside" test -z "$(ls -A "$outside")"
wd --isolation process -- "$P" writable "$WS" /tmp
expect_rc 0 "the workspace and /tmp are writable"

# Landlock scoping (ABI 6+): no signal to a host process of the same user,
# no connection to the host's abstract unix sockets.
abi=$(json_get 'j["protections"]["landlock_abi"]' "$T/probe.json" 2>/dev/null || echo 0)
if [ "${abi:-0}" -ge 6 ]; then
	setpriv --reuid "$owner" --regid "$owner" --clear-groups sleep 60 >/dev/null 2>&1 &
	victim=$!
	at_exit "kill $victim 2>/dev/null"
	abstract=wd-it-proc-abstract-$RANDOM$RANDOM
	python3 -c 'import socket,sys,time
s = socket.socket(socket.AF_UNIX); s.bind("\0" + sys.argv[1]); s.listen(4); time.sleep(60)' "$abstract" >/dev/null 2>&1 &
	at_exit "kill $! 2>/dev/null"
	sleep 0.3
	wd --isolation process -- /bin/sh -c "kill -0 $victim"
	check "process level: no signal to a host process of the same uid" test "$RC" != 0
	wd --isolation process -- /usr/bin/python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0" + sys.argv[1]); print("connected")
except OSError as e:
    print("refused", e.errno)' "$abstract"
	check "process level: the host's abstract unix socket is refused" grep -q '^refused' "$OUT"
fi

# Files created belong to the workspace owner.
wd --isolation process -- /usr/bin/touch "$WS/made-here"
check "a new file belongs to the workspace owner" test "$(stat -c %u "$WS/made-here")" = "$owner"

# stdin, output bounds and exit statuses work the same.
wd --isolation process -- /bin/cat
check "stdin is /dev/null" test ! -s "$OUT"
wd --isolation process --output-limit 1K -- /usr/bin/seq 1 10000
check "output window with one marker line" test "$(grep -c 'bytes omitted' "$OUT")" = 1
wd --isolation process -- /bin/sh -c 'exit 9'
expect_rc 9 "the command's status"
wd --isolation process -- wd-no-such-program
expect_rc 127 "not found"

# The timeout kills the whole tree, including children in new sessions.
marker=wd-proc-stubborn-$RANDOM$RANDOM
start=$SECONDS
wd --isolation process --timeout 1 -- "$P" stubborn 3 "$marker"
expect_rc 124 "--timeout 1 on a stubborn tree"
check "returned promptly ($((SECONDS - start)) s)" test $((SECONDS - start)) -le 5
none_left() {
	[ "$(count_marked "$marker")" = 0 ]
}
check "no process of the tree is left" wait_until "$(scaled 3)" none_left

# Limits from the cgroup, when one exists.
if [ "$cgroup" != none ]; then
	wd --isolation process --pids 20 -- "$P" forkbomb 1000
	expect_out 'fork failed after [0-9]+: EAGAIN' "--pids 20 holds at the process level"
	wd --isolation process --memory 64M --json -- "$P" memhog 1024
	expect_rc 137 "--memory 64M holds at the process level"
	check "oom_killed reported" test "$(json_get 'j["oom_killed"]')" = true
fi

finish
