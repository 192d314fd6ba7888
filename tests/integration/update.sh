#!/usr/bin/env bash
# warden update and session secrets, on one running cow session: a
# memory limit lowered live and met by a probe inside (the OOM killer),
# one below what the session uses refused; a host the proxy refused let
# through by an added rule without a restart (the cow workspace's file
# still there); a secret injected upstream into a request of warden exec,
# its value nowhere under the state directory, a start refused when its
# source is gone, its source changed by update; every bad input 125 with
# meta.json byte for byte unchanged (an allow rule an inject rule needs
# kept, running or stopped); what the policy a session was made under
# added (a protected path, egress rules, a port) never removed, only the
# session's own, and its sandbox limits applied; the audit trail verifies.
# Loopback only: the upstream is secrets_tool.py's plain HTTP server.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
[ -e /dev/loop-control ] || skip "no loop devices (a cow session's disk)"
command -v curl >/dev/null || skip "curl missing"
HERE=$(dirname "$(readlink -f "$0")")

export WARDEN_STATE_DIR=$T/state
at_exit '"$WARDEN" rm u >/dev/null 2>&1'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
# nowhere VALUE DIR: VALUE in no file under DIR, every byte of data read
# (a sparse disk image's holes skipped: grep -r reads 1G of zeros)
nowhere() {
	python3 - "$1" "$2" <<'PY'
import os, sys
needle, found = sys.argv[1].encode(), []
for d, _, files in os.walk(sys.argv[2]):
    for f in files:
        p = os.path.join(d, f)
        if not os.path.isfile(p) or os.path.islink(p):
            continue
        with open(p, "rb") as fh:
            fd, end, off = fh.fileno(), os.fstat(fh.fileno()).st_size, 0
            while off < end:
                try:
                    off = os.lseek(fd, off, os.SEEK_DATA)
                except OSError:
                    break
                hole = os.lseek(fd, off, os.SEEK_HOLE)
                os.lseek(fd, off, os.SEEK_SET)
                tail = b""
                while off < hole:
                    b = os.read(fd, min(1 << 20, hole - off))
                    if not b:
                        break
                    if needle in tail + b:
                        found.append(p)
                    tail, off = b[-len(needle):], off + len(b)
sys.exit(1 if found else 0)
PY
}

# ---- the upstream: plain HTTP, /data needs X-Api-Key: PLAIN_KEY ----
PLAIN_KEY="key-$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')"
printf '{"PLAIN_KEY": "%s"}\n' "$PLAIN_KEY" >"$T/secrets.json"
mkdir -p "$T/www"
python3 "$HERE/secrets_tool.py" serve - - "$T/www" "$T/up.log" "$T/secrets.json" plain \
	>"$T/port" 2>/dev/null &
UP=$!
at_exit "kill $UP 2>/dev/null"
wait_until "$(scaled 10)" test -s "$T/port" || skip "the upstream did not start"
PP=$(cat "$T/port")

export WD_TEST_PLAIN_KEY=$PLAIN_KEY
echo "keep me" >"$WS/base.txt"
w create u --workspace "$WS" --workspace-mode cow --memory 256M --timeout 60 \
	--net allow --allow-range 127.0.0.1/32 --add-host plain.test=127.0.0.1 \
	--add-host late.test=127.0.0.1 --allow-host "plain.test:$PP" \
	--secret PLAIN_KEY=env:WD_TEST_PLAIN_KEY --inject "http://plain.test:$PP/data X-Api-Key={PLAIN_KEY}" \
	--ro-bind "$WD_PROBE:$PROBE"
expect_rc 0 "create a cow session with a secret from env:, egress to plain.test only"
META=$WARDEN_STATE_DIR/sandboxes/$(cat "$OUT")/meta.json

# ---- secrets: injected upstream, never on disk ----
w exec u -- curl -s -m 20 "http://plain.test:$PP/data"
expect_out '^plain: key accepted$' "curl in the session: the upstream got the key the proxy injected"
w exec u -- sh -c 'echo "$PLAIN_KEY"; cat /proc/self/environ | tr "\0" "\n" | grep -c "$0" || true' "$PLAIN_KEY"
expect_out '^0$' "the value is not in the sandbox's environment"
check "the value is nowhere under the state directory (every file of the tree)" \
	nowhere "$PLAIN_KEY" "$WARDEN_STATE_DIR"
check "meta.json records the source, env:WD_TEST_PLAIN_KEY" grep -q '"env:WD_TEST_PLAIN_KEY"' "$META"

# ---- a running session's memory limit, lowered live ----
w exec u -- "$PROBE" memhog 150
expect_rc 0 "150 MiB fit under --memory 256M"
w exec u -- sh -c 'echo written >/workspace/new.txt'
w update u --memory 100M --json
expect_rc 0 "update --memory 100M of the running session"
check "--json: memory 256M -> 100M, applied now" test \
	"$(json_get '[(c["old"], c["new"], c["applied"]) for c in j["changes"] if c["field"] == "memory"]')" \
	= '[[268435456, 104857600, "now"]]'
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$META")
lim=$(cat /sys/fs/cgroup/memory/warden/"$id"/memory.limit_in_bytes /sys/fs/cgroup/warden/"$id"/memory.max 2>/dev/null | head -1)
check "the session's cgroup says 100M (was $lim)" test "$lim" = 104857600
w exec u --json -- "$PROBE" memhog 150
check "the probe's 150 MiB now meets the OOM killer inside" test \
	"$(json_get '[j["status"] != 0, j.get("oom_killed", j.get("resources", {}).get("oom_killed"))]')" = '[true, true]'

# memory below what the session uses: refused, nothing changed
"$WARDEN" exec u -- python3 -c 'import time; b = bytearray(70 << 20); b[::4096] = b"x" * len(b[::4096]); open("/tmp/held", "w").close()
import os
while not os.path.exists("/tmp/release"): time.sleep(0.05)' >/dev/null 2>&1 </dev/null &
HOLD=$!
wait_until "$(scaled 20)" "$WARDEN" exec u -- test -e /tmp/held
cp "$META" "$T/meta.before"
w update u --memory 40M
expect_rc 125 "--memory 40M below what the session holds now is refused"
expect_out 'below what the session holds now \([0-9]+M' "... saying why, with the figure" "$ERR"
check "... and meta.json is unchanged" cmp -s "$META" "$T/meta.before"
# (not a signal: SIGTERM to warden exec ends the whole session's sandbox)
w exec u -- touch /tmp/release
wait "$HOLD"

# ---- a network rule added live: late.test refused, then let through ----
w exec u -- curl -s -m 20 -o /dev/null -w '%{http_connect}%{http_code}' "http://late.test:$PP/x"
expect_out '403' "late.test is refused by the session's proxy"
pid0=$("$WARDEN" ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["pid"])')
w update u --allow-host "late.test:$PP" --json
expect_rc 0 "update --allow-host late.test"
check "--json: allow-host applied now" test \
	"$(json_get '[c["applied"] for c in j["changes"] if c["field"] == "allow-host"]')" = '["now"]'
w exec u -- curl -s -m 20 "http://late.test:$PP/x"
expect_out '^other: got it$' "late.test gets through without a restart"
pid1=$("$WARDEN" ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["pid"])')
check "the same monitor (no restart: $pid0, $pid1)" test "$pid0" = "$pid1"
w exec u -- cat /workspace/new.txt /workspace/base.txt
expect_out '^written$' "the file written in the cow workspace is still there"
w update u --remove "allow-host=late.test:$PP"
expect_rc 0 "--remove allow-host=late.test"
w exec u -- curl -s -m 20 -o /dev/null -w '%{http_connect}%{http_code}' "http://late.test:$PP/x"
expect_out '403' "... refused again"

# ---- bad input: 125, meta.json byte for byte unchanged ----
cp "$META" "$T/meta.before"
bad() { # bad DESCRIPTION REGEX ARGS...
	local d=$1 re=$2
	shift 2
	w "$@"
	expect_rc 125 "$d"
	expect_out "$re" "... naming it" "$ERR"
	check "... meta.json unchanged" cmp -s "$META" "$T/meta.before"
}
bad "an unknown option" "unrecognized option|unknown option.*--workspace" update u --workspace /tmp
bad "a bad value" "--memory: invalid value" update u --memory 12Q
bad "--cpus above the host's" "--cpus: invalid value" update u --cpus 4096
bad "a bad rule" "--allow-host: invalid value" update u --allow-host 'a b'
bad "an unknown session" "no sandbox 'nosuch'" update nosuch --memory 64M
bad "no session named" "no sandbox given" update --memory 64M
bad "no change asked for" "nothing to change" update u --json
bad "removing what is not there" "no such allow-host" update u --remove allow-host=nothere.test
bad "a --remove of an unknown option" "expected allow-host" update u --remove workspace=/x
bad "--net none with allow rules left" "contradicts" update u --net none
bad "a secret whose source is not set" "WD_NO_SUCH_VAR" update u --secret X_KEY=env:WD_NO_SUCH_VAR
bad "a secret no rule uses" "X_KEY" update u --secret X_KEY=env:WD_TEST_PLAIN_KEY
printf '%s\n' "$PLAIN_KEY" >"$WS/token"
bad "a secret's file in the workspace the sandbox writes" "can write" update u --secret "PLAIN_KEY=@$WS/token"
rm "$WS/token"
bad "two changes, the second bad: neither made" "--pids: invalid value" update u --memory 300M --pids 0
bad "the allow rule the inject rule needs" "no allow rule admits plain.test" \
	update u --remove "allow-host=plain.test:$PP"

# ---- the policy's part is a floor: only the session's own is removed ----
# (a session made under --policy gets its workspace.protect and network
# object; update has no --policy, so meta.json keeps which they were)
at_exit '"$WARDEN" rm pu >/dev/null 2>&1'
printf '%s\n' '{"version": 1, "workspace": {"protect": ["keep.d"]},' \
	' "sandbox": {"memory": "96M", "pids": 77},' \
	' "network": {"allow": ["pol.test"], "deny": ["evil.test"], "hosts": ["pol.test=127.0.0.1"],' \
	'             "allow_ranges": ["127.0.0.2/32"], "allow_ports": [8080]}}' >"$T/floor.json"
w create pu --workspace "$WS" --policy "$T/floor.json" --protect mine.d \
	--allow-host own.test --deny-host bad.test --allow-port 9090 --pids 50
expect_rc 0 "create a session under a policy with protect, egress rules and a port"
META_U=$META
META=$WARDEN_STATE_DIR/sandboxes/$(cat "$OUT")/meta.json
# the policy's sandbox limits for what create left unset, as a one-shot
# run under it gets them (they were dropped: the library's 256M ran)
check "the policy's memory limit, and --pids over the policy's" python3 -c '
import json, sys
l = json.load(open(sys.argv[1]))["spec"]["limits"]
assert l.get("memory") == 96 << 20 and l.get("pids") == 50, l' "$META"
lim=$(cat /sys/fs/cgroup/memory/warden/"$(cat "$OUT")"/memory.limit_in_bytes \
	/sys/fs/cgroup/warden/"$(cat "$OUT")"/memory.max 2>/dev/null | head -1)
check "the session's cgroup holds the policy's 96M (was $lim)" test "$lim" = 100663296
cp "$META" "$T/meta.before"
bad "--remove of the policy's protected path" "--remove 'protect=keep.d'.*policy" \
	update pu --remove protect=keep.d
bad "--remove of the policy's allow rule" "--remove 'allow-host=pol.test'.*policy" \
	update pu --remove allow-host=pol.test
bad "--remove of the policy's deny rule" "--remove 'deny-host=evil.test'.*policy" \
	update pu --remove deny-host=evil.test
bad "--remove of the policy's hosts entry" "--remove 'add-host=pol.test=127.0.0.1'.*policy" \
	update pu --remove add-host=pol.test=127.0.0.1
bad "--remove of the policy's range" "--remove 'allow-range=127.0.0.2/32'.*policy" \
	update pu --remove allow-range=127.0.0.2/32
bad "--remove of the policy's port" "--remove 'allow-port=8080'.*policy" \
	update pu --remove allow-port=8080
bad "the session's own removal, then the policy's: neither made" "protect=keep.d" \
	update pu --remove protect=mine.d --remove protect=keep.d
w update pu --remove protect=mine.d --remove allow-host=own.test --remove deny-host=bad.test \
	--remove allow-port=9090 --json
expect_rc 0 "the session's own path, rules and port are removed"
check "meta.json keeps the policy's path, rules and port, and only them" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["spec"]
assert s["protect"] == ["keep.d"], s["protect"]
assert sorted(r["rule"] for r in s["net_rules"]) == ["127.0.0.2/32", "evil.test", "pol.test", "pol.test=127.0.0.1"], s["net_rules"]
assert s["ports"] == [8080], s["ports"]' "$META"
w rm pu
META=$META_U

# ---- secrets at start: re-read, refused when the source is gone ----
w stop u
expect_rc 0 "stop"
unset WD_TEST_PLAIN_KEY
w start u
expect_rc 125 "start with the secret's env: source unset is refused"
expect_out 'PLAIN_KEY.*env:WD_TEST_PLAIN_KEY' "... naming the secret and its source" "$ERR"
# a stopped session has no monitor to refuse a rule change: update checks
# the inject rules against the new rules itself (the secret's source
# unreadable here: the names are checked, not the values)
cp "$META" "$T/meta.before"
bad "the stopped session: the allow rule the inject rule needs" "no allow rule admits plain.test" \
	update u --remove "allow-host=plain.test:$PP"
printf '%s\n' "$PLAIN_KEY" >"$T/key"
chmod 600 "$T/key"
# named through a link in the workspace: the file it leads to is what is
# kept, so the link swapped later (a write of the sandbox in a rw
# workspace, or an apply) leads nowhere the next start reads
ln -s "$T/key" "$WS/key-link"
w update u --secret "PLAIN_KEY=@$WS/key-link" --pids 64 --audit "$T/audit.log" --json
expect_rc 0 "update of the stopped session: the secret from a file now, --pids 64"
check "--json: both at the next start" test \
	"$(json_get '[c["applied"] for c in j["changes"]]')" = '["next start", "next start"]'
check "--json: the source, not the value" bash -c "grep -q 'PLAIN_KEY=file:$T/key' '$OUT' && ! grep -qF '$PLAIN_KEY' '$OUT'"
printf 'decoy-%s\n' "$PLAIN_KEY" >"$T/decoy"
ln -sfn "$T/decoy" "$WS/key-link"
w start u
expect_rc 0 "start reads the secret from its file"
w exec u -- curl -s -m 20 "http://plain.test:$PP/data"
expect_out '^plain: key accepted$' "... and the proxy injects it (the file, not the swapped link's decoy)"
rm "$WS/key-link"
w exec u -- cat /workspace/new.txt
expect_out '^written$' "the cow workspace survived the restart"
check "the value is still nowhere under the state directory" \
	nowhere "$PLAIN_KEY" "$WARDEN_STATE_DIR"
w stop u
rm "$T/key"
w start u
expect_rc 125 "start with the secret's file removed is refused"
expect_out "PLAIN_KEY.*$T/key" "... naming the secret and the file" "$ERR"

# ---- the model cannot call it: no MCP tool, no JSON-RPC method ----
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
	'{"jsonrpc":"2.0","id":3,"method":"sandbox.update","params":{"sandbox":"u","memory":"1G"}}' |
	timeout "$(scaled 20)" "$WARDEN" serve --stdio -w "$WS" >"$OUT" 2>"$ERR"
check "warden serve's tools/list offers no update tool" python3 -c '
import json, sys
r = {j.get("id"): j for j in map(json.loads, open(sys.argv[1]))}
names = [t["name"] for t in r[2]["result"]["tools"]]
assert "run_command" in names and not [n for n in names if "update" in n], names
assert r[3]["error"]["code"] == -32601, r[3]' "$OUT"

# ---- the audit trail ----
check "the audit trail has the change, old and new" grep -q '"event":"session.update".*"field":"pids","old":null,"new":64' "$T/audit.log"
check "... never the secret's value" bash -c "! grep -qF -- '$PLAIN_KEY' '$T/audit.log'"
w audit verify "$T/audit.log"
expect_rc 0 "warden audit verify passes"
finish
