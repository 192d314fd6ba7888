#!/usr/bin/env bash
# The gVisor warm pool: the probe's red-team checks (gvisor.sh's, with
# the same known differences of a user-space kernel) in a pooled gVisor
# sandbox, whose workspace was attached at take time through the gofer's
# mount namespace and the resident executor; then nothing of the pool's
# sandboxes left on the host.  One pooled sandbox, ~3 s.
#   POOL_REUSE  the built tests/integration/pool_reuse (its probe mode)
. "$(dirname "$0")/lib.sh"
require_root
require_python
POOL_REUSE=${POOL_REUSE:?set POOL_REUSE to the built pool_reuse}
[ -n "$(command -v runsc || true)" ] || skip "runsc is not installed (scripts/deps.sh installs it)"
if ! "$WARDEN" run --isolation gvisor --workspace "$WS" -- /bin/true >"$OUT" 2>"$ERR"; then
	cat "$ERR"
	skip "warden run --isolation gvisor does not work here (see warden doctor)"
fi

token=wd-canary-token-$RANDOM$RANDOM
host_canary=$(mktemp /tmp/wd-canary.XXXXXXXX)
echo "$token" >"$host_canary"
chmod 644 "$host_canary"
at_exit "rm -f '$host_canary'"
echo "$token" >"$T/canary"
ln -s "$host_canary" "$WS/escape-abs"
ln -s ../canary "$WS/escape-rel"
secret=sk-wd-$RANDOM$RANDOM-secret
export WD_IT_API_KEY=$secret
port=$(free_port)
python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4); time.sleep(120)' "$port" &
at_exit "kill $! 2>/dev/null"
"$POOL_REUSE" probe gvisor "$WS" "$WD_PROBE" all --no-mounts \
	--uid 1000 --canary "$host_canary" --canary "$T/canary" --canary /workspace/../canary \
	--token "$token" --link /workspace/escape-abs --link /workspace/escape-rel \
	--ro / --ro /usr --ro /etc --ro /bin --ro /opt --rw /workspace --rw /tmp --rw /home/sandbox \
	--cwd /workspace --port "$port" --env PATH,HOME=/home/sandbox,LANG=C.UTF-8,TZ=UTC \
	--host-ia32 "$(host_ia32)" --secret "$(hexstr "$secret")" >"$OUT" 2>"$ERR"
# (wd_pool_run: a pooled sandbox's command goes through its executor)
check "the probe ran in a pooled gVisor sandbox, through its executor" \
	grep -q '"isolation":"gvisor".*"exec_path":"resident"' "$ERR"
# gVisor's known differences, as gvisor.sh sets them aside (lib.sh)
gvisor_known_differences
probe_report "pooled gvisor jail"
check "no refused syscall succeeds" sh -c "! grep -q 'syscall:.*succeeded' '$T/probe-rest'"
# (mount and umount2: the probe's syscall:mount and syscall:umount2 above
# say EPERM, but inside gVisor the capability check answers first, so they
# pass with or without the executor's own filter for the two, which the
# vacant sandbox's table leaves out; gvisor-wire tests that filter where
# it shows: the executor on the host after ATTACH, mount EPERM where the
# unfiltered control gets EFAULT)

sandbox_cgroups_of() {
	sandbox_cgroups | grep "/warden/$1\$"
}
export -f sandbox_cgroups sandbox_cgroups_of
# nothing of the sandbox that ran is left (judged by its id: other users'
# gVisor sandboxes come and go on a shared host)
id=$(sed -n 's/.*"sandbox_id":"\([0-9a-f]\{16\}\)".*/\1/p' "$ERR" | head -n 1)
check "the result names its sandbox ($id)" test -n "$id"
left=$(pgrep -f -- "[-]-root=/run/warden/gvisor/$id/" || true)
check "no runsc process of it is left (${left:-none})" test -z "$left"
check "no bundle of it is left" test ! -e "/run/warden/gvisor/$id"
check "no cgroup of it is left" bash -c "! sandbox_cgroups_of '$id' | grep -q ."
check "no mount naming it is left" sh -c "! grep -q '$id' /proc/self/mountinfo"
finish
