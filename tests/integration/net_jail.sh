#!/usr/bin/env bash
# Egress from inside a real sandbox: `warden run --net allow`
# with curl, python3 urllib, the resolver, git over HTTPS and pip from a
# local PEP 503 index, against upstreams on host loopback reached through
# --add-host names.  Usage: net_jail.sh WARDEN SRCDIR [LEVEL].  Loopback
# only.  LEVEL (default container) is the isolation level: gvisor runs the
# same checks through runsc.
set -uo pipefail
WARDEN=$1
HERE=$2
LEVEL=${3:-container}
TOOL="python3 $HERE/net_tool.py"
for c in curl python3 openssl git; do command -v $c >/dev/null || { echo "skip: $c missing"; exit 77; }; done
# WD_IMAGE_RECIPE=NAME: every sandbox in the image of
# images/NAME.recipe (built once into the suite's shared store by
# image_fixture.sh), not on the host's /usr
IMG=()
if [ -n "${WD_IMAGE_RECIPE:-}" ]; then
	if ! command -v mmdebstrap >/dev/null; then
		echo "skip: mmdebstrap is not installed (scripts/deps.sh installs it)"
		[ "${WD_MUST_WORK:-0}" = 1 ] && exit 1
		exit 77
	fi
	export WARDEN_IMAGE_DIR=${WD_IMAGE_STORE:-$HERE/../../build-cache/images}
	name=$(bash "$HERE/image_fixture.sh" "$WARDEN" "$WARDEN_IMAGE_DIR" "$HERE/images/$WD_IMAGE_RECIPE.recipe")
	rc=$?
	[ $rc = 0 ] || { echo "image_fixture $WD_IMAGE_RECIPE: status $rc"; exit $rc; }
	IMG=(--image "$name")
	echo "# every sandbox runs with --image $name"
fi
if ! "$WARDEN" run --isolation "$LEVEL" "${IMG[@]}" --net allow --allow-host probe.test -- true >/dev/null 2>&1; then
	echo "skip: warden run --isolation $LEVEL --net allow does not work here"
	[ "${WD_MUST_WORK:-0}" = 1 ] && exit 1
	exit 77
fi

T=$(mktemp -d)
chmod 755 "$T"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ $# -gt 1 ] && echo "# $2"; }
check() { if [[ "$3" == *"$2"* ]]; then ok "$1"; else nok "$1" "want '$2', got '$3'"; fi; }
bg() { # bg PORTFILE CMD...: start a server that prints its port
	local f=$1
	shift
	"$@" >"$f" &
	pids+=($!)
	for _ in $(seq 50); do [ -s "$f" ] && break; sleep 0.1; done
}

# Upstreams: plain HTTP; HTTPS (test CA) serving a PEP 503 index and a
# dumb-HTTP git repository.
bg "$T/up.port" $TOOL serve "$T/up.log"
UP=$(cat "$T/up.port")
(
	cd "$T"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=warden test CA" -keyout ca.key -out ca.pem
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=files.test" \
		-keyout srv.key -out srv.csr
	printf 'subjectAltName=DNS:pypi.test,DNS:git.test\n' >srv.ext
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile srv.ext -out srv.pem
) >/dev/null 2>&1
mkdir -p "$T/www"
$TOOL make-index "$T/www"
git init -q --bare "$T/www/repo.git"
git clone -q "$T/www/repo.git" "$T/work" 2>/dev/null
(cd "$T/work" && echo "egress ok" >README && git add README &&
	git -c user.email=t@t -c user.name=t commit -q -m init && git push -q origin HEAD:master) 2>/dev/null
git -C "$T/www/repo.git" symbolic-ref HEAD refs/heads/master
git -C "$T/www/repo.git" update-server-info
chmod -R a+rX "$T"
bg "$T/tls.port" $TOOL serve-dir "$T/www" "$T/srv.pem" "$T/srv.key"
TLS=$(cat "$T/tls.port")
bg "$T/hold.port" $TOOL serve-hold "$T/hold.log"
HOLD=$(cat "$T/hold.port")
cp "$HERE/net_tool.py" "$T/www/"

NET=(--net allow
	--allow-host "web.test:$UP=GET,HEAD" --allow-host "127.0.0.1:$UP"
	--allow-host "pub.test" --add-host pub.test=93.184.216.34
	--allow-host "pypi.test:$TLS=GET" --allow-host "git.test:$TLS=GET" --allow-host "127.0.0.1:$TLS"
	--add-host web.test=127.0.0.1 --add-host pypi.test=127.0.0.1 --add-host git.test=127.0.0.1
	--add-host internal.test=127.0.0.1 --allow-host "internal.test:9"
	--allow-host "tun.test:$UP" --add-host tun.test=127.0.0.1
	--allow-host "put.test:$UP=PUT;max_request_bytes=100" --add-host put.test=127.0.0.1
	--allow-host "hold.test:$HOLD" --allow-host "127.0.0.1:$HOLD" --add-host hold.test=127.0.0.1)
run() { "$WARDEN" run --isolation "$LEVEL" "${IMG[@]}" --timeout 60 "${NET[@]}" "$@"; }

r=$(run -- curl -s -m 10 "http://web.test:$UP/hello")
check "curl: allowed GET through the proxy" "GET /hello host=web.test:$UP" "$r"
r=$(run -- curl -s -m 10 -i -X PUT -d x "http://web.test:$UP/hello")
check "curl: PUT to a GET-only host is 403 with the reason" "X-Warden-Denied: method" "$r"
r=$(run -- curl -s -m 10 -i "http://other.test:$UP/")
check "curl: unlisted host is refused" "X-Warden-Denied: no-rule" "$r"
# the reason at the end of the run, not only in a header the client hides
# (npm says E403, curl "CONNECT tunnel failed")
r=$(run -- curl -s -m 10 "http://other.test:$UP/" "http://other.test:$UP/again" 2>&1 >/dev/null)
check "the refusal is explained at the end of the run, once with a count" \
	"warden: run: network: other.test:$UP refused (no-rule), 2 times" "$r"
check "... with the option that would allow it" "--allow-host other.test:$UP" "$r"
r=$(run -- curl -s -m 10 "http://web.test:$UP/fine" 2>&1 >/dev/null)
check "a run with no refusal prints no refusal line" "" "$r"
[ -z "$r" ] && ok "... (stderr empty)" || nok "... stderr empty" "got '$r'"
r=$(run -- curl -s -m 10 -x "" "http://other.test:$UP/" 2>&1 >/dev/null)
check "a name the resolver refuses is explained too (A and AAAA: one line)" \
	"warden: run: network: other.test (DNS) refused (no-rule), 2 times: no rule allows this name" "$r"
r=$(run --json -- curl -s -m 10 "http://other.test:$UP/")
check "--json lists the refusal with its reason and advice" \
	'"refusals":[{"protocol":"http","host":"other.test","port":'"$UP"',"reason":"no-rule","rule":null,"advice":"no rule allows' "$r"
r=$(run -- python3 -c '
import os, socket, urllib.parse
p = urllib.parse.urlparse(os.environ["http_proxy"])
for head in (b"GET http://ev\x1b[2Kil.test/ HTTP/1.1\r\nHost: ev\x1b[2Kil.test\r\n\r\n",
             b"CONNECT a\xe2\x80\xaeb.test:443 HTTP/1.1\r\nHost: x\r\n\r\n"):
    s = socket.create_connection((p.hostname, p.port))
    s.sendall(head)
    s.recv(200)
' 2>&1 >/dev/null)
check "a host with ESC and U+202E reaches the terminal as one escaped line" \
	"warden: run: network: (no host) refused (malformed-request), 2 times" "$r"
[[ "$r" != *$'\e'* && "$r" != *$'\xe2\x80\xae'* ]] && ok "... with no ESC or U+202E byte in it" ||
	nok "no raw ESC or U+202E in the refusal lines" "$(printf %q "$r")"
S=nj$$
# (container level: a gVisor session with --net allow does not start on
# this machine kind, before this check as after: runsc's sandbox exits
# before its control server answers; the one-shot runs above cover gVisor)
if [ "$LEVEL" != container ]; then
	:
elif "$WARDEN" create "$S" -w "$T/www" --isolation "$LEVEL" "${IMG[@]}" "${NET[@]}" >/dev/null 2>"$T/create.err"; then
	"$WARDEN" exec "$S" -- curl -s -m 10 "http://web.test:$UP/one" >/dev/null 2>&1
	r=$("$WARDEN" exec "$S" -- curl -s -m 10 "http://other.test:$UP/" 2>&1 >/dev/null)
	check "exec in a session explains its refusal too" \
		"warden: exec: network: other.test:$UP refused (no-rule)" "$r"
	r=$("$WARDEN" exec "$S" -- curl -s -m 10 "http://web.test:$UP/two" 2>&1 >/dev/null)
	[ -z "$r" ] && ok "... and the next command, which was refused nothing, prints none" ||
		nok "the next exec has no refusal line" "got '$r'"
	# exec --audit: the session's proxy is its monitor's, so the exec's
	# trail has the refusal in its result; the stage stays off
	"$WARDEN" exec --audit "$T/exec.jsonl" "$S" -- curl -s -m 10 "http://other.test:$UP/x" \
		>/dev/null 2>"$T/exec.err"
	r=$(python3 -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["event"] for e in ev] == ["start", "result"], ev
assert all(e["policy_stage"] == "off" for e in ev), ev
f = ev[1]["result"]["protections"]["egress"]["refusals"]
assert [(x["host"], x["reason"]) for x in f] == [("other.test", "no-rule")], f
print("ok")' "$T/exec.jsonl" 2>&1)
	check "exec --audit in a session: start, and a result listing the refusal, stage off" "ok" "$r"
	check "... and the terminal says so" "warden: exec: audited to" "$(tail -n 1 "$T/exec.err")"
	"$WARDEN" rm "$S" >/dev/null 2>&1
else
	nok "warden create for the exec case" "$(tr "\n" " " <"$T/create.err")"
fi
r=$(run -- curl -s -m 10 -i "http://internal.test:9/")
check "curl: a hosts entry into loopback without an address rule is refused" \
	"X-Warden-Denied: address-range" "$r"
run -- curl -s -m 5 --noproxy '*' "http://127.0.0.1:$UP/direct" >/dev/null 2>&1
r=$?
[ $r -ne 0 ] && ok "a direct connection that ignores the proxy fails (curl exit $r)" ||
	nok "direct connection fails"
grep -q "/direct" "$T/up.log" 2>/dev/null && nok "... and never arrives" || ok "... and never arrives"

r=$(run -- python3 -c "import urllib.request; print(urllib.request.urlopen('http://web.test:$UP/py', timeout=10).read().decode().strip())")
check "python3 urllib: allowed GET" "GET /py" "$r"
r=$(run -- python3 -c "
import socket
print(socket.gethostbyname('pub.test'))
try:
    socket.gethostbyname('other.test'); print('resolved')
except socket.gaierror as e:
    print('refused', e.errno)")
check "DNS inside the sandbox answers an allowed name" "93.184.216.34" "$r"
check "... and refuses an unlisted one" "refused" "$r"

r=$(run -- curl -s -m 10 -o /dev/null -w '%{http_connect}' "https://pypi.test:$TLS/simple/")
check "HTTPS to a GET-only host without interception: CONNECT refused" "403" "$r"

TI=(--tls-intercept --upstream-ca "$T/ca.pem")
r=$(run "${TI[@]}" -- curl -s -m 10 "https://pypi.test:$TLS/simple/")
check "curl over intercepted HTTPS trusts the sandbox CA" "wardendemo" "$r"
r=$(run "${TI[@]}" -- curl -s -m 10 -i -X PUT -d x "https://pypi.test:$TLS/simple/")
check "intercepted HTTPS: PUT to a GET-only host is 403" "X-Warden-Denied: method" "$r"
r=$(run "${TI[@]}" -- sh -c "git clone -q https://git.test:$TLS/repo.git /tmp/repo && cat /tmp/repo/README" 2>&1)
check "git clone over intercepted HTTPS" "egress ok" "$r"
r=$(run "${TI[@]}" -- sh -c "python3 -m pip install -q --no-cache-dir --disable-pip-version-check \
	--index-url https://pypi.test:$TLS/simple/ --target /tmp/site wardendemo &&
	PYTHONPATH=/tmp/site python3 -c 'import wardendemo; print(wardendemo.GREETING)'" 2>&1)
check "pip installs from a local PEP 503 index over intercepted HTTPS" "hello from the local index" "$r"

r=$(run -- sh -c "head -c 50 /dev/zero | curl -s -m 10 -X PUT --data-binary @- http://put.test:$UP/ok")
check "a body under the rule's cap passes" "PUT 50" "$r"
r=$(run -- sh -c "head -c 500 /dev/zero | curl -s -m 10 -i -X PUT --data-binary @- http://put.test:$UP/big")
check "a body over the rule's cap is 413" "X-Warden-Denied: max-request-bytes" "$r"

r=$(run -w "$T/www" -- python3 /workspace/net_tool.py concurrent 3128 tun.test "$UP" 100 2>&1)
check "100 concurrent tunnels from one sandbox" "tunnels=100 served=100" "$r"

# The sandbox ending closes its tunnels: hold one open until the timeout.
"$WARDEN" run --isolation "$LEVEL" "${IMG[@]}" --timeout 2 "${NET[@]}" -w "$T/www" -- \
	python3 /workspace/net_tool.py hold 3128 hold.test "$HOLD" >/dev/null 2>&1
for _ in $(seq 30); do grep -q closed "$T/hold.log" 2>/dev/null && break; sleep 0.1; done
r=$(tr '\n' ' ' <"$T/hold.log" 2>/dev/null)
check "the sandbox ending closes its tunnels" "open closed" "$r"

j=$(run --json -- sh -c "curl -s -m 5 http://web.test:$UP/a; curl -s -m 5 http://other.test:$UP/b" 2>/dev/null)
check "the run result counts egress requests" '"requests":2' "$j"
check "... and refusals" '"refused":1' "$j"

# --audit records an explicit argv's egress without judging it: the
# policy stage stays off (the argv is the caller's own), so a program the
# built-in policy refuses still runs, and the trail holds the run's start,
# each egress decision (allowed and refused) and its result, each saying
# "policy_stage":"off"; the terminal's last line says so too.
"$WARDEN" check -- sh -c true >/dev/null 2>&1
check "the built-in policy refuses sh (status 126)" "126" "$?"
A=$T/egress.jsonl
r=$(run --audit "$A" -- sh -c "curl -s -m 10 http://127.0.0.1:$UP/audited;
	curl -s -m 10 -o /dev/null http://other.test:$UP/audit-refused; echo ran" 2>"$T/audit.err")
check "--audit, explicit argv: sh runs (the policy stage is off)" "ran" "$r"
check "... the allowed request reached the loopback upstream by its address" \
	"GET /audited host=127.0.0.1:$UP" "$r"
check "... the terminal's last line says the stage was off" \
	"policy stage off (an explicit argv is recorded, not judged" "$(tail -n 1 "$T/audit.err")"
check "... the trail verifies" "chain intact" "$("$WARDEN" audit verify "$A" 2>&1)"
r=$(python3 - "$A" "$UP" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
port = int(sys.argv[2])
kinds = [e["event"] for e in ev]
assert kinds == ["start", "network", "network", "result"], kinds
assert all(e["policy_stage"] == "off" for e in ev), ev
assert ev[0]["argv"][:2] == ["sh", "-c"], ev[0]
ok, no = ev[1], ev[2]
assert (ok["host"], ok["port"], ok["allowed"]) == ("127.0.0.1", port, True), ok
assert ok["rule"] == "allow 127.0.0.1:%d" % port and ok["status"] == 200, ok
assert (no["host"], no["allowed"], no["reason"]) == ("other.test", False, "no-rule"), no
assert "--allow-host other.test:%d" % port in no["advice"], no
assert ev[3]["result"]["policy"] == "off" and ev[3]["result"]["status"] == 0, ev[3]
assert len({e["sandbox"] for e in ev}) == 1
print("ok")
PY
)
check "... start, the allowed and the refused request, result; all policy_stage off" "ok" "$r"
# the same trail with the stage on: a command string is judged, and the
# decision record says so
run --audit "$A" --command "rm -rf /tmp/x" >/dev/null 2>"$T/audit.err"
check "--audit with --command: judged and refused" "policy stage on" "$(tail -n 1 "$T/audit.err")"
check "... the decision recorded with policy_stage on" '"policy_stage":"on"' "$(tail -n 1 "$A")"
check "... the trail still verifies" "chain intact" "$("$WARDEN" audit verify "$A" 2>&1)"

echo "1..$n"
[ $fails -eq 0 ]
