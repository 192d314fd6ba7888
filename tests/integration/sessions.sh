#!/usr/bin/env bash
# Sessions: create, exec, ls, stop, start, rm, snapshot and
# create --from; a --detach server reachable from a later exec on the
# session's loopback; the idle timeout; SIGKILL of the monitor leaving no
# process, cgroup, mount or loop device; the state directory's checks.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"
command -v curl >/dev/null || skip "curl is missing"

export WARDEN_STATE_DIR=$T/state
at_exit 'for s in $("$WARDEN" ls --json 2>/dev/null | python3 -c "import json,sys; [print(x[\"id\"]) for x in json.load(sys.stdin)]" 2>/dev/null); do "$WARDEN" rm "$s" >/dev/null 2>&1; done'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# the session's id for a name
sid() {
	"$WARDEN" ls --json | python3 -c 'import json,sys; print([x["id"] for x in json.load(sys.stdin) if x["name"]==sys.argv[1]][0])' "$1"
}
# a process that exists and is not a zombie (the monitor's parent is init,
# which may reap late)
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st#Z}" = "$st" ]
}
monitor_pid() {
	"$WARDEN" ls --json | python3 -c 'import json,sys; print([x.get("pid",0) for x in json.load(sys.stdin) if x["name"]==sys.argv[1]][0])' "$1"
}
# Everything of one session on the host: its jail's processes (in its
# cgroup), cgroups named after it, mounts of its disk, its loop device.
leftovers() {
	local id=$1
	find /sys/fs/cgroup -maxdepth 8 -type d -name "$id" 2>/dev/null
	grep -F "$WARDEN_STATE_DIR/sandboxes/$id" /proc/self/mountinfo
	losetup -a 2>/dev/null | grep -F "$WARDEN_STATE_DIR/sandboxes/$id"
	local p
	for p in $(pgrep -f "warden-monitor $WARDEN_STATE_DIR $id"); do
		alive "$p" && echo "monitor $p"
	done
}

# ---- create, exec, ls
w create s1 --workspace "$WS" --allow-port 8123 --timeout 60
expect_rc 0 "create s1"
id=$(cat "$OUT")
w exec s1 -- /bin/sh -c 'echo hi > hello.txt; echo home > $HOME/h.txt; id -u'
expect_rc 0 "exec"
expect_out '^1000$' "runs as the sandbox user"
check "direct: the file is on the host" test "$(cat "$WS/hello.txt")" = hi
w exec "${id:0:6}" -- cat /home/sandbox/h.txt
expect_out '^home$' "an id prefix names the session; the home directory persists"
w exec s1 --json -- /bin/sh -c 'echo out; echo err >&2; exit 3'
expect_rc 3 "exec's status is the command's"
check "exec --json: stdout window" test "$(json_data stdout)" = out
check "exec --json: the session's id" test "$(json_get 'j["sandbox_id"]')" = "$id"
w exec s1 --timeout 1 -- sleep 10
expect_rc 124 "exec --timeout ends the command (124)"
w exec s1 -- true
expect_rc 0 "the session survives a command's timeout"
w exec s1 --command 'ls nonexistent-dir'
check "exec --command goes through the policy (ls allowed; status 2)" test "$RC" = 2
w exec s1 --command 'rm -rf / ; echo'
expect_rc 126 "exec --command: shell composition refused by the policy (126)"
w exec s1 -- nosuchprogram
expect_rc 127 "not found: 127"
w ls
expect_out "^$id +s1 +running +direct" "ls shows it running"
w ls --json
check "ls --json: state" test "$(json_get '[x["state"] for x in j if x["id"]=="'"$id"'"][0]')" = running

# ---- a detached server, reachable from a later exec on the loopback
w exec s1 --detach -- python3 -m http.server 8123 --bind 127.0.0.1
expect_rc 0 "exec --detach starts a server"
fetch() {
	"$WARDEN" exec s1 -- curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8123/hello.txt >"$OUT" 2>"$ERR"
	[ "$(cat "$OUT")" = 200 ]
}
if wait_until "$(scaled 15)" fetch; then
	ok "a later exec reaches the detached server on the session's loopback"
else
	not_ok "the detached server is not reachable: $(cat "$OUT" "$ERR")"
fi
w exec s1 -- cat /home/sandbox/.warden/detached-1.log
expect_out 'GET /hello.txt' "the detached command's output is in ~/.warden/detached-1.log"
check "the detached server is in the session's cgroup" bash -c \
	"grep -l 'http.server' /proc/*/cmdline 2>/dev/null | while read f; do p=\${f#/proc/}; p=\${p%/cmdline}; grep -qs '$id' /proc/\$p/cgroup && echo yes; done | grep -q yes"
w exec s1 -- /bin/sh -c 'sleep 30 & echo started'
w exec s1 -- /bin/sh -c 'pgrep -c -x sleep || true'
expect_out '^0$' "a plain exec's background processes end with it"

# ---- stop keeps files; start builds a new jail over them
mpid=$(monitor_pid s1)
w stop s1
expect_rc 0 "stop"
check "stop ended the monitor" bash -c "! ps -o stat= -p $mpid | grep -qv Z"
check "stop ended the detached server" bash -c "! pgrep -f '[h]ttp.server 8123' >/dev/null"
check "nothing of s1 is left on the host while stopped" test -z "$(leftovers "$id")"
w ls
expect_out "^$id +s1 +stopped" "ls shows it stopped"
w exec s1 -- true
expect_rc 125 "exec in a stopped session: 125"
expect_out 'not running' "says it is not running" "$ERR"
w start s1
expect_rc 0 "start"
w exec s1 -- cat /home/sandbox/h.txt
expect_out '^home$' "the home directory survived stop/start"
w start s1
expect_rc 125 "start of a running session: 125"

# ---- snapshot and create --from
w exec s1 -- /bin/sh -c 'echo snap > $HOME/snap.txt'
w snapshot s1 v1
expect_rc 0 "snapshot a running session"
w exec s1 -- /bin/sh -c 'echo after > $HOME/snap.txt'
w create s2 --from s1@v1
expect_rc 0 "create --from NAME@TAG"
w exec s2 -- cat /home/sandbox/snap.txt
expect_out '^snap$' "the new session has the snapshot's files"
w exec s1 -- cat /home/sandbox/snap.txt
expect_out '^after$' "the source kept its own"
w snapshot s1 v1
expect_rc 125 "a tag taken: 125"
w create s3 --from s1@nope
expect_rc 125 "--from an unknown tag: 125"
w rm s2

# ---- the idle timeout ends a forgotten session
w create idle --workspace "$WS" --idle-timeout 2s
expect_rc 0 "create --idle-timeout 2s"
idle_id=$(cat "$OUT")
w exec idle -- true
stopped() {
	"$WARDEN" ls --json | python3 -c 'import json,sys; sys.exit(0 if [x["state"] for x in json.load(sys.stdin) if x["name"]=="idle"][0]=="stopped" else 1)'
}
if wait_until "$(scaled 10)" stopped; then
	ok "the idle session stopped by itself"
else
	not_ok "the idle session is still running after 10 s"
	"$WARDEN" ls
	sed 's/^/  | /' "$WARDEN_STATE_DIR/sandboxes/$idle_id/monitor.log"
fi
check "nothing of the idle session is left" test -z "$(leftovers "$idle_id")"
w rm idle

# ---- SIGKILL of the monitor: no process, cgroup, mount or loop device left
w create victim --workspace "$WS" --workspace-mode cow
expect_rc 0 "create a cow session to kill"
vid=$(cat "$OUT")
w exec victim --detach -- sleep 1000
w exec victim -- /bin/sh -c 'echo x > f.txt'
mpid=$(monitor_pid victim)
check "its monitor, jail and disk are up" test -n "$(leftovers "$vid")"
kill -KILL "$mpid"
gone() {
	[ -z "$(leftovers "$vid")" ] && ! pgrep -f 'sleep 1000' >/dev/null
}
if wait_until "$(scaled 10)" gone; then
	ok "after SIGKILL of the monitor nothing is left (processes, cgroups, mounts, loop device)"
else
	not_ok "left after SIGKILL: $(leftovers "$vid" | tr '\n' ' ') $(pgrep -af 'sleep 1000')"
fi
w ls
expect_out "^$vid +victim +stopped" "the killed session shows as stopped"
w diff victim --name-status
expect_out '^added +f\.txt \(new file 0[0-7]{3}\)$' "its files survived"
w start victim
expect_rc 0 "and it starts again"
w rm victim

# ---- the state directory must be the caller's, 0700
chmod 755 "$WARDEN_STATE_DIR"
w ls
expect_rc 125 "a state directory open to others: 125"
expect_out 'chmod 700' "says how to fix it" "$ERR"
chmod 700 "$WARDEN_STATE_DIR"
mkdir -p "$T/other" && chown 65534:65534 "$T/other" && chmod 700 "$T/other"
WARDEN_STATE_DIR=$T/other "$WARDEN" ls >"$OUT" 2>"$ERR"
RC=$?
expect_rc 125 "a state directory of another user: 125"
expect_out 'not to you' "says whose it is" "$ERR"

# ---- the socket: only the owner (SO_PEERCRED) and 0700 directories
check "the monitor's socket is in a 0700 directory" test "$(stat -c %a "$WARDEN_STATE_DIR/sandboxes/$id")" = 700
check "the socket itself is 0600" test "$(stat -c %a "$WARDEN_STATE_DIR/sandboxes/$id/monitor.sock")" = 600
if command -v setpriv >/dev/null; then
	chmod 755 "$WARDEN_STATE_DIR" "$WARDEN_STATE_DIR/sandboxes" "$WARDEN_STATE_DIR/sandboxes/$id"
	chmod 666 "$WARDEN_STATE_DIR/sandboxes/$id/monitor.sock"
	out=$(setpriv --reuid 65534 --regid 65534 --clear-groups python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(b"{\"op\":\"info\"}")
print(s.recv(4096) or b"closed")' "$WARDEN_STATE_DIR/sandboxes/$id/monitor.sock" 2>&1)
	chmod 700 "$WARDEN_STATE_DIR" "$WARDEN_STATE_DIR/sandboxes" "$WARDEN_STATE_DIR/sandboxes/$id"
	chmod 600 "$WARDEN_STATE_DIR/sandboxes/$id/monitor.sock"
	check "another user is refused by SO_PEERCRED even when the modes let it connect ($out)" \
		bash -c "! grep -q '\"ok\":true' <<<'$out'"
fi

# ---- a session at the gvisor level (runsc create/start, runsc exec per
# command): files persist across commands and across stop/start
if command -v runsc >/dev/null; then
	GWS=$T/gws
	mkdir -p "$GWS"
	chown 1000:1000 "$GWS"
	w create g1 --isolation gvisor --workspace "$GWS" --timeout 60
	expect_rc 0 "gvisor: create"
	gid=$(cat "$OUT")
	w exec g1 -- /bin/sh -c 'echo one > /workspace/g.txt; uname -r'
	expect_rc 0 "gvisor: exec"
	expect_out '^4\.4\.0$' "gvisor: the command runs on gVisor's kernel"
	w exec g1 -- cat /workspace/g.txt
	expect_out '^one$' "gvisor: a second exec sees the first one's file"
	w exec --json g1 -- /bin/true
	check "gvisor: through the session's monitor, the resident executor ran it (exec_path)" \
		test "$(json_get 'j["protections"]["runtime"]["exec_path"]')" = resident
	w stop g1
	expect_rc 0 "gvisor: stop"
	w start g1
	expect_rc 0 "gvisor: start"
	w exec g1 -- cat /workspace/g.txt
	expect_out '^one$' "gvisor: the files survive stop/start"
	w rm g1
	expect_rc 0 "gvisor: rm"
	check "gvisor: nothing of g1 is left" test -z "$(leftovers "$gid")"
	check "gvisor: no runsc process of it left" test -z "$(pgrep -f "runsc.*$gid")"
else
	echo "# no runsc: the gvisor session checks did not run (gvisor.sh fails under WD_MUST_WORK)"
fi

w rm s1
expect_rc 0 "rm"
w rm s1
expect_rc 125 "rm of an unknown sandbox: 125"
check "nothing of s1 is left" test -z "$(leftovers "$id")"
[ -n "${WD_KEEP:-}" ] && { trap - EXIT; echo "kept $T"; }
finish
