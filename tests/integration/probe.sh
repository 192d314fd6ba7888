#!/usr/bin/env bash
# The jail as seen from inside: wd-probe checks one assertion per line
# (ids, capability sets, NoNewPrivs, seccomp mode and each refused syscall,
# canaries of the host, read-only system dirs, writable workspace and /tmp,
# symlink escapes, network, environment, descriptors, /proc/1, /etc).
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python

token=wd-canary-token-$RANDOM$RANDOM

# Canaries: one in the host's /tmp, one in the workspace's parent.
host_canary=$(mktemp /tmp/wd-canary.XXXXXXXX)
echo "$token" >"$host_canary"
chmod 644 "$host_canary"
at_exit "rm -f '$host_canary'"
parent_canary=$T/canary
echo "$token" >"$parent_canary"

# Symlinks planted on the host side of the workspace, pointing out of it.
ln -s "$host_canary" "$WS/escape-abs"
ln -s ../canary "$WS/escape-rel"
ln -s /etc/shadow "$WS/escape-shadow"

# A secret-looking variable in warden's own environment.
secret=sk-wd-$RANDOM$RANDOM$RANDOM-secret
export WD_IT_API_KEY=$secret

# A TCP listener on the host's loopback; it records any connection.
port=$(free_port)
hits=$T/listener-hits
python3 - "$port" "$hits" <<'PY' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f:
        f.write("hit\n")
    c.close()
PY
listener=$!
at_exit "kill $listener 2>/dev/null"
if wait_until "$(scaled 5)" python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null; then
	rm -f "$hits" # the host's own check connected once
	ok "host listener on 127.0.0.1:$port reachable from the host"
else
	not_ok "host listener on 127.0.0.1:$port did not come up"
fi

env_list=PATH,HOME=/home/sandbox,LANG=C.UTF-8,TZ=UTC

wd "${PROBE_BIND[@]}" -- "$PROBE" all \
	--uid 1000 \
	--canary "$host_canary" --canary "$parent_canary" --canary /workspace/../canary \
	--token "$token" \
	--link /workspace/escape-abs --link /workspace/escape-rel --link /workspace/escape-shadow \
	--ro / --ro /usr --ro /etc --ro /bin --ro /dev --ro /opt \
	--rw /workspace --rw /tmp --rw /home/sandbox \
	--cwd /workspace \
	--port "$port" \
	--host-ia32 "$(host_ia32)" \
	--env "$env_list" \
	--secret "$(hexstr "$secret")"
expect_rc 0 "wd-probe all passes in the default jail"
probe_report "default jail"

# Descriptors warden inherits (not close-on-exec) stay outside: a file, a
# directory, a pipe, at low and high numbers.
echo "$token" >"$T/fd-secret"
exec 5<"$T/fd-secret" 6<"$T" 101<"$T/fd-secret"
exec 7< <(exec sleep 30 >/dev/null 2>&1)
fd7_pid=$!
at_exit "kill $fd7_pid 2>/dev/null"
wd "${PROBE_BIND[@]}" -- "$PROBE" fds
exec 5<&- 6<&- 7<&- 101<&-
kill "$fd7_pid" 2>/dev/null
expect_rc 0 "descriptors 5, 6, 7 and 101 of warden's caller are not in the jail"
probe_report "inherited fds"

# The network namespace on its own: with --allow-port, Landlock permits the
# connect, so only the empty namespace stands between the probe and the
# host's listener.
wd --allow-port "$port" "${PROBE_BIND[@]}" -- "$PROBE" noconnect "$port"
expect_rc 0 "host listener unreachable even with --allow-port $port (network namespace)"
probe_report "allow-port"
wd "${PROBE_BIND[@]}" -- "$PROBE" netif
expect_rc 0 "only lo, and up"

if [ -s "$hits" ]; then
	not_ok "the host listener saw $(wc -l <"$hits") connection(s) from the jail"
else
	ok "the host listener saw no connection from the jail"
fi

# The secret must not reach the jail by name either, and the environment is
# exactly what was set: --setenv adds, --pass-env copies, nothing else.
export WD_IT_PASSED=passed-value
wd --setenv FOO=bar --setenv EMPTY= --pass-env WD_IT_PASSED "${PROBE_BIND[@]}" -- \
	"$PROBE" env "$env_list,FOO=bar,EMPTY=,WD_IT_PASSED=passed-value"
expect_rc 0 "environment is exactly PATH HOME LANG TZ + --setenv + --pass-env"
probe_report "env"

# With a terminal (script(1) gives warden a pty): TERM is passed on, and
# with --stdin the terminal is not handed over at all: warden relays what
# is typed, so fd 0 inside is no terminal and neither TIOCSTI
# (CVE-2017-5226) nor stty can reach the caller's terminal.
if command -v script >/dev/null; then
	TERM=xterm-256color script -qec "'$WARDEN' run --workspace '$WS' $WD_IMAGE_ARGS -- /usr/bin/env" /dev/null \
		</dev/null >"$OUT" 2>"$ERR"
	check "with a terminal: TERM is passed on" grep -q '^TERM=xterm-256color' "$OUT"
	TERM=xterm script -qec "'$WARDEN' run --workspace '$WS' $WD_IMAGE_ARGS --stdin ${PROBE_BIND[*]} -- $PROBE tiocsti-stdin" \
		/dev/null </dev/null >"$OUT" 2>"$ERR"
	check "--stdin on a terminal: fd 0 inside is not the terminal (TIOCSTI finds none)" \
		grep -q 'tiocsti-stdin ENOTTY (isatty 0)' "$OUT"
	TERM=xterm script -qec "'$WARDEN' run --workspace '$WS' $WD_IMAGE_ARGS --stdin -- /bin/stty -echo; stty -a" \
		/dev/null </dev/null >"$OUT" 2>"$ERR"
	check "--stdin on a terminal: stty inside leaves the caller's terminal alone" \
		sh -c "! grep -q ' -echo ' '$OUT'"
	(sleep 0.5; printf 'typed-line\n') | TERM=xterm timeout 20 script -qec \
		"'$WARDEN' run --workspace '$WS' $WD_IMAGE_ARGS --stdin -- head -n 1" /dev/null >"$OUT" 2>"$ERR"
	check "--stdin on a terminal: what is typed reaches the command" \
		test "$(grep -c typed-line "$OUT")" -ge 2
fi
wd -- /usr/bin/env
check "without a terminal: no TERM" sh -c "! grep -q '^TERM=' '$OUT'"

# Landlock is a second fence behind the mounts: /proc is a rw mount and a
# process may write its own /proc/self/comm by permission, yet Landlock
# allows writes only beneath the workspace, /tmp and the devices.
wd -- /bin/sh -c 'echo renamed > /proc/self/comm'
check "Landlock: a write the mounts and permissions allow is refused (/proc/self/comm)" \
	grep -q 'Permission denied' "$ERR"

# pid namespace: only the jail's processes; cgroup namespace: the sandbox's
# cgroup is its root; pid 1 (warden's reaper) keeps its memory and root to
# itself and shows no argv.
wd -- /bin/sh -c 'ls /proc | grep -c "^[0-9]"'
check "pid namespace: a handful of processes in /proc ($(cat "$OUT"))" test "$(cat "$OUT")" -le 5
wd -- /bin/cat /proc/self/cgroup
check "cgroup namespace: every hierarchy shows /" sh -c "! grep -v ':/\$' '$OUT'"
wd -- /bin/cat /proc/1/maps
check "pid 1's /proc/1/maps is unreadable" test "$RC" != 0
wd -- /bin/cat /proc/1/mem
check "pid 1's /proc/1/mem is unreadable" test "$RC" != 0
wd -- /bin/ls /proc/1/root/
check "pid 1's /proc/1/root is unreachable" test "$RC" != 0
wd -- /bin/sh -c 'tr -d "\000" </proc/1/cmdline'
check "pid 1's cmdline shows nothing of warden's argv" test ! -s "$OUT"

# pid 1 cannot be signalled from inside (it would take the jail down or
# make the reaper misbehave).
for sig in TERM KILL STOP INT SEGV; do
	wd --timeout 10 -- /bin/sh -c "kill -$sig 1; sleep 0.2; echo alive"
	check "kill -$sig 1 from inside: refused, the jail goes on" \
		test "$RC" = 0 -a "$(cat "$OUT")" = alive
done

# --setenv replaces: the defaults and an earlier --setenv, never twice.
wd --setenv PATH=/usr/bin --setenv HOME=/tmp --setenv A=1 --setenv A=2 "${PROBE_BIND[@]}" -- \
	"$PROBE" env PATH=/usr/bin,HOME=/tmp,LANG=C.UTF-8,TZ=UTC,A=2
expect_rc 0 "--setenv replaces PATH, HOME and an earlier --setenv"

# Nothing inside can take pid 1's descriptors (its sync socket to warden).
wd -- /usr/bin/python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pfd = os.pidfd_open(1)
got = [fd for fd in range(64) if libc.syscall(438, pfd, fd, 0) >= 0]  # pidfd_getfd
print("got", got)'
check "pidfd_getfd on pid 1 yields nothing" grep -qx 'got \[\]' "$OUT"

# The host's own /etc/passwd and shadow stay out; sandbox is uid 1000.
wd "${PROBE_BIND[@]}" -- "$PROBE" passwd
expect_rc 0 "/etc/passwd and /etc/group name sandbox"
wd -- /bin/cat /etc/passwd
if grep -q '^root:.*:/root:' "$OUT" && ! grep -q '^sandbox:' "$OUT"; then
	not_ok "/etc/passwd in the jail is the host's"
else
	ok "/etc/passwd in the jail is synthetic"
fi

# --allow-port opens exactly that TCP port inside the jail (Landlock), on
# the jail's own loopback.
selfconn='import socket,sys
p = int(sys.argv[1]); s = socket.socket()
try:
    s.bind(("127.0.0.1", p)); s.listen(1)
except OSError as e:
    print("bind-refused", e.errno); sys.exit(0)
c = socket.create_connection(("127.0.0.1", p)); a, _ = s.accept(); c.send(b"hi")
print("echo", a.recv(2).decode())'
wd --allow-port 8080 -- /usr/bin/python3 -c "$selfconn" 8080
check "--allow-port 8080: a server on 8080 inside is reachable inside" grep -qx 'echo hi' "$OUT"
wd -- /usr/bin/python3 -c "$selfconn" 8080
check "without --allow-port: bind on 8080 refused" grep -q '^bind-refused' "$OUT"
wd --allow-port 8080 -- /usr/bin/python3 -c "$selfconn" 8081
check "--allow-port 8080: bind on 8081 refused" grep -q '^bind-refused' "$OUT"

# An abstract unix socket on the host is out of reach (it belongs to the
# host's network namespace; Landlock's scoping is a second fence).
abstract=wd-it-abstract-$RANDOM$RANDOM
python3 -c 'import socket,sys,time
s = socket.socket(socket.AF_UNIX); s.bind("\0" + sys.argv[1]); s.listen(4); time.sleep(60)' "$abstract" &
abs_pid=$!
at_exit "kill $abs_pid 2>/dev/null"
sleep 0.3
wd -- /usr/bin/python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0" + sys.argv[1])
except OSError as e:
    print("refused", e.errno)
else:
    print("connected")' "$abstract"
check "the host's abstract unix socket is unreachable" grep -q '^refused' "$OUT"

# SysV IPC: the host's segments are invisible (IPC namespace).
if command -v ipcmk >/dev/null; then
	shmid=$(ipcmk -M 4096 2>/dev/null | awk '{ print $NF }')
	if [ -n "$shmid" ]; then
		at_exit "ipcrm -m $shmid"
		wd -- /bin/cat /proc/sysvipc/shm
		check "the host's SysV shared memory is invisible" test "$(grep -c . "$OUT")" -le 1
	fi
fi

# Every entry of /etc in the jail is one the issue lists as curated.
wd -- /bin/ls -A /etc
for f in shadow gshadow sudoers ssh machine-id; do
	if grep -qx "$f" "$OUT"; then
		not_ok "/etc/$f is visible in the jail"
	else
		ok "/etc/$f is not visible in the jail"
	fi
done

finish
