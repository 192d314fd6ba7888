#!/usr/bin/env bash
# Egress proxy with real clients on host loopback: curl over the
# HTTP proxy and SOCKS5 against a local upstream reached through hosts
# entries.  Usage: net_proxy.sh NET_PROXYD SRCDIR.  Loopback only.
set -uo pipefail
PROXYD=$1
HERE=$2
TOOL="python3 $HERE/net_tool.py"
command -v curl >/dev/null || { echo "skip: curl missing"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }

T=$(mktemp -d)
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
check() { # check NAME EXPECTED ACTUAL
	if [[ "$3" == *"$2"* ]]; then ok "$1"; else nok "$1" "want '$2', got '$3'"; fi
}

# upstream
$TOOL serve "$T/up.log" >"$T/up.port" &
pids+=($!)
for _ in $(seq 50); do [ -s "$T/up.port" ] && break; sleep 0.1; done
UP=$(cat "$T/up.port")
[ -n "$UP" ] || { echo "upstream did not start"; exit 1; }

# proxy: the proxy's stdin is a fifo kept open by this script; closing it
# (or SIGTERM) stops the proxy.
start_proxy() { # start_proxy NAME ARGS...
	local name=$1
	shift
	mkfifo "$T/$name.in"
	"$PROXYD" --events "$T/$name.events" "$@" <"$T/$name.in" >"$T/$name.ports" 2>"$T/$name.err" &
	local pid=$!
	pids+=($pid)
	exec {fd}>"$T/$name.in"
	eval "${name}_fd=$fd ${name}_pid=$pid"
	for _ in $(seq 50); do [ -s "$T/$name.ports" ] && break; sleep 0.1; done
	eval "$(tr ' ' '\n' <"$T/$name.ports" | sed "s/^/${name}_/")"
}

start_proxy p \
	--allow "web.test:$UP=GET,HEAD" \
	--allow "put.test:$UP=PUT,POST,GET;max_request_bytes=100" \
	--allow "tun.test:$UP" \
	--allow "internal.test:$UP" \
	--allow "meta.test:80" \
	--allow "127.0.0.1:$UP" \
	--deny "evil.tun.test" \
	--host web.test=127.0.0.1 --host put.test=127.0.0.1 --host tun.test=127.0.0.1 \
	--host internal.test=127.0.0.2 --host meta.test=169.254.169.254 \
	--header-timeout-ms 1000
X="-s -m 10 -x http://127.0.0.1:$p_http"

r=$(curl $X "http://web.test:$UP/hello")
check "allowed GET through the HTTP proxy" "GET /hello host=web.test:$UP" "$r"

r=$(curl $X -o /dev/null -w '%{http_code}' -I "http://web.test:$UP/hello")
check "allowed HEAD" "200" "$r"

r=$(curl $X -i -X PUT -d abc "http://web.test:$UP/x")
check "PUT to a GET-only host is 403" "HTTP/1.1 403" "$r"
check "... with X-Warden-Denied naming the reason and rule" \
	"X-Warden-Denied: method; rule=\"allow web.test:$UP=GET,HEAD\"" "$r"
check "... and a one-line body saying what to do" "use an allowed method" "$r"

r=$(curl $X -i "http://other.test:$UP/")
check "unlisted host is 403 no-rule" "X-Warden-Denied: no-rule" "$r"

r=$(curl $X -i "http://evil.tun.test:$UP/")
check "deny rule wins" "X-Warden-Denied: deny-rule" "$r"

r=$(curl $X -p -o /dev/null -w '%{http_connect}' "http://web.test:$UP/" 2>&1)
check "CONNECT to a method-restricted host without interception is 403" "403" "$r"
r=$(curl $X -p -v "http://web.test:$UP/" 2>&1)
check "... reason tunnel-hides-method" "X-Warden-Denied: tunnel-hides-method" "$r"

r=$(curl $X -p "http://tun.test:$UP/tunnel")
check "CONNECT tunnel to an unrestricted host works" "GET /tunnel host=tun.test:$UP" "$r"

r=$(curl -s -m 10 --socks5-hostname "127.0.0.1:$p_socks" "http://tun.test:$UP/socks")
check "SOCKS5 with a domain name works" "GET /socks host=tun.test:$UP" "$r"
r=$(curl -s -m 10 --socks5 "127.0.0.1:$p_socks" "http://127.0.0.1:$UP/socksip")
check "SOCKS5 with an address and an address rule works" "GET /socksip" "$r"
curl -s -m 10 --socks5-hostname "127.0.0.1:$p_socks" "http://web.test:$UP/" >/dev/null 2>&1
check "SOCKS5 to a method-restricted host is refused" "97" "$?"
curl -s -m 10 --socks5-hostname "127.0.0.1:$p_socks" "http://other.test:$UP/" >/dev/null 2>&1
check "SOCKS5 to an unlisted host is refused" "97" "$?"

r=$(curl $X -i "http://internal.test:$UP/")
check "hosts entry into a refused range without an address rule: 403" \
	"X-Warden-Denied: address-range" "$r"
r=$(curl $X -i "http://meta.test/latest/meta-data/")
check "metadata address refused even when a hosts entry points at it" \
	"X-Warden-Denied: address-range" "$r"
check "... advice names the address class" "link-local" "$r"

r=$(curl $X -X PUT --data-binary @<(head -c 50 /dev/zero) "http://put.test:$UP/small")
check "body under max_request_bytes passes" "PUT 50" "$r"
r=$(curl $X -i -X PUT --data-binary @<(head -c 500 /dev/zero) "http://put.test:$UP/big")
check "Content-Length over max_request_bytes is 413" "X-Warden-Denied: max-request-bytes" "$r"
r=$(curl $X -i -X POST -H 'Transfer-Encoding: chunked' --data-binary @<(head -c 5000 /dev/zero) \
	"http://put.test:$UP/chunked")
check "chunked body over max_request_bytes is cut with 413" "HTTP/1.1 413" "$r"
if grep -q "/big\|/chunked" "$T/up.log" 2>/dev/null; then
	nok "the upstream never saw an over-cap body" "$(cat "$T/up.log")"
else
	ok "the upstream never saw an over-cap body"
fi

r=$(curl $X "http://web.test:$UP/a" "http://web.test:$UP/b" -v 2>&1 | grep -c "Re-using existing connection")
check "keep-alive: the second request reuses the proxy connection" "1" "$r"

r=$($TOOL raw "$p_http" 'GET /relative HTTP/1.1\r\nHost: web.test\r\n\r\n')
check "origin-form request to the proxy is 400 not-a-proxy-request" "not-a-proxy-request" "$r"
r=$($TOOL raw "$p_http" 'GET http://web.test:'"$UP"'/ HTTP/1.1\nHost: x\n\n')
check "bare-LF request head is 400" "HTTP/1.1 400" "$r"
r=$($TOOL raw "$p_http" 'POST http://put.test:'"$UP"'/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n')
check "Content-Length with Transfer-Encoding is 400" "HTTP/1.1 400" "$r"
r=$($TOOL raw "$p_http" 'GET http://user@web.test:'"$UP"'/ HTTP/1.1\r\n\r\n')
check "userinfo in the URL is 400" "HTTP/1.1 400" "$r"

# Request smuggling.  A Connection header naming the framing
# field: obeyed, it strips the Content-Length (or Transfer-Encoding) while
# the body is still forwarded, and the upstream reads the body as a PUT
# that no rule checked, on a GET-only host.
r=$($TOOL smuggle "$p_http" web.test "$UP" Content-Length)
check "Connection: Content-Length is 400" "HTTP/1.1 400" "$r"
check "... reason ambiguous-framing" "X-Warden-Denied: ambiguous-framing" "$r"
r=$($TOOL smuggle "$p_http" web.test "$UP" Transfer-Encoding)
check "Connection: Transfer-Encoding is 400 ambiguous-framing" "X-Warden-Denied: ambiguous-framing" "$r"
sleep 0.2
if grep -q "/smuggled" "$T/up.log" 2>/dev/null; then
	nok "no smuggled PUT reached the GET-only upstream" "$(cat "$T/up.log")"
else
	ok "no smuggled PUT reached the GET-only upstream"
fi
r=$($TOOL raw "$p_http" 'GET http://web.test:'"$UP"'/ HTTP/1.1\r\nConnection: Host\r\n\r\n')
check "Connection: Host is 400 ambiguous-framing" "X-Warden-Denied: ambiguous-framing" "$r"
r=$(curl $X -H 'Connection: TE' -H 'TE: trailers' "http://web.test:$UP/te")
check "Connection: TE (a field the proxy always drops) still passes" "GET /te" "$r"
r=$(curl $X -i -m 5 "http://web.test:$UP/conn-cl" 2>&1)
check "a response whose Connection names Content-Length is 502" "HTTP/1.1 502" "$r"
check "... bad-upstream-response" "X-Warden-Denied: bad-upstream-response" "$r"
# the other smuggling shapes, each refused with its reason
P="POST http://put.test:$UP/s HTTP/1.1"'\r\n'
for c in \
	'Content-Length: 3\r\nContent-Length: 4|duplicate Content-Length' \
	'Content-Length: 3, 4|Content-Length list' \
	'Transfer-Encoding: chunked, identity|Transfer-Encoding: chunked, identity' \
	'Transfer-Encoding: xchunked|obfuscated Transfer-Encoding' \
	'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked|two Transfer-Encoding fields' \
	'Transfer_Encoding: chunked|Transfer_Encoding with an underscore' \
	'X: y\r\n Transfer-Encoding: chunked|obs-fold continuation line' \
	'Transfer-Encoding : chunked|whitespace before the colon' \
	'Content-Length: 3\nX: y|bare LF line ending'; do
	r=$($TOOL raw "$p_http" "$P${c%%|*}"'\r\n\r\nabc')
	check "${c#*|} is 400 ambiguous-framing" "X-Warden-Denied: ambiguous-framing" "$r"
done
r=$($TOOL raw "$p_http" "$P"'Transfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n')
check "chunk-size overflow is 400" "HTTP/1.1 400" "$r"

r=$($TOOL concurrent "$p_http" tun.test "$UP" 100)
check "100 concurrent CONNECT tunnels from one sandbox" "tunnels=100 served=100" "$r"

r=$($TOOL slow "$p_http")
check "a slow client is cut at the header timeout with 408" "HTTP/1.1 408" "$r"
case "$r" in *"after "[0-4]"."*) ok "... at the 1 s timeout (+ sweep, + load)" ;; *) nok "... promptly" "$r" ;; esac

# Events: every decision is on the record with its fields.
ev="$T/p.events"
grep -q '"proto":"http","host":"web.test","port":'"$UP"',"method":"GET","path":"/hello","rule":"allow web.test:'"$UP"'=GET,HEAD","allowed":true' "$ev" &&
	ok "allowed request event has method, path, rule" || nok "allowed request event" "$(head -3 "$ev")"
grep -q '"method":"PUT".*"allowed":false,"reason":"method"' "$ev" &&
	ok "refusal event has the reason" || nok "refusal event"
grep -q '"proto":"socks5","host":"tun.test".*"allowed":true' "$ev" &&
	ok "SOCKS5 tunnel event" || nok "SOCKS5 tunnel event"
grep -q '"reason":"timeout"' "$ev" && ok "timeout event" || nok "timeout event"
grep '"path":"/hello"' "$ev" | grep '"bytes_up":[1-9][0-9]*,"bytes_down":[1-9]' >/dev/null &&
	ok "events count bytes each way" || nok "bytes in events"

# Stop closes tunnels: hold one open, stop the proxy, see it end.
$TOOL hold "$p_http" tun.test "$UP" >"$T/hold.out" &
hold=$!
pids+=($hold)
for _ in $(seq 50); do grep -q open "$T/hold.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$p_pid"
wait "$hold"
r=$(cat "$T/hold.out")
check "stopping the proxy closes open tunnels" "closed" "$r"
wait "$p_pid" 2>/dev/null
grep -q '"proto":"connect","host":"tun.test".*"allowed":true' "$T/p.events" &&
	ok "the closed tunnel got its event" || nok "tunnel event at stop"
grep -q "open=0" "$T/p.err" && ok "no connection left open after stop" || nok "open after stop" "$(cat "$T/p.err")"

# Ranges: an address allow rule written so that web.test may reach
# a loopback upstream also admits the address itself with every method;
# --range lifts only the loopback refusal, and the name's rule decides.
$TOOL serve "$T/up2.log" 127.0.0.2 >"$T/up2.port" &
pids+=($!)
for _ in $(seq 50); do [ -s "$T/up2.port" ] && break; sleep 0.1; done
UP2=$(cat "$T/up2.port")
start_proxy g --allow "web.test:$UP2=GET,HEAD" --allow "lo.test:$UP2" --range 127.0.0.2/32 \
	--host web.test=127.0.0.2 --host lo.test=127.0.0.3
Y="-s -m 10 -x http://127.0.0.1:$g_http"
r=$(curl $Y "http://web.test:$UP2/ranged")
check "--range: a GET-only name reaches its loopback upstream" "GET /ranged host=web.test:$UP2" "$r"
r=$(curl $Y -i -X PUT -d abc "http://127.0.0.2:$UP2/x")
check "--range: PUT to the address itself is 403 no-rule" "X-Warden-Denied: no-rule" "$r"
r=$(curl $Y -i "http://127.0.0.2:$UP2/x")
check "--range: GET to the address itself is 403 too" "X-Warden-Denied: no-rule" "$r"
r=$(curl $Y -i -X PUT -d abc "http://web.test:$UP2/x")
check "--range: PUT to the GET-only name is 403 method" "X-Warden-Denied: method" "$r"
r=$(curl $Y -p -o /dev/null -w '%{http_connect}' "http://127.0.0.2:$UP2/" 2>&1)
check "--range: CONNECT to the address is 403" "403" "$r"
r=$(curl -s -m 10 --socks5 "127.0.0.1:$g_socks" "http://127.0.0.2:$UP2/" 2>&1; echo "rc=$?")
check "--range: SOCKS5 to the address is refused" "rc=97" "$r"
r=$(curl $Y -i "http://lo.test:$UP2/")
check "--range: a name resolving outside the range is still 403 address-range" \
	"X-Warden-Denied: address-range" "$r"
check "... and the advice suggests a range, not an allow rule" "--allow-range 127.0.0.3/32" "$r"
grep -q "/x" "$T/up2.log" 2>/dev/null && nok "no PUT reached the ranged upstream" "$(cat "$T/up2.log")" ||
	ok "no PUT reached the ranged upstream"
eval "exec ${g_fd}>&-"
wait "$g_pid" 2>/dev/null

# Connection limit and byte budget, on a second proxy.
start_proxy q --allow "tun.test:$UP" --host tun.test=127.0.0.1 --allow "127.0.0.1:$UP" \
	--max-conns 5 --max-bytes 300000
r=$($TOOL concurrent "$q_http" tun.test "$UP" 8 2>&1)
check "max connections: the extra ones are refused" "tunnels=5" "$r"
grep -q '"reason":"max-connections"' "$T/q.events" && ok "... with events" || nok "max-connections event"
r=$(curl -s -m 10 -x "http://127.0.0.1:$q_http" -p -o /dev/null -w '%{size_download}' "http://tun.test:$UP/big/1000000")
if [ "${r:-0}" -lt 300000 ]; then ok "byte budget cuts a tunnel ($r bytes)"; else nok "byte budget" "$r"; fi
grep -q '"reason":"max-total-bytes"' "$T/q.events" && ok "... with a max-total-bytes event" || nok "budget event"

# Out of descriptors: refusals, no spinning, and service once they free up.
mkfifo "$T/f.in"
(ulimit -n 40 && exec "$PROXYD" --allow "tun.test:$UP" --host tun.test=127.0.0.1 \
	--allow "127.0.0.1:$UP" --events "$T/f.events") <"$T/f.in" >"$T/f.ports" 2>"$T/f.err" &
f_pid=$!
pids+=($f_pid)
exec {f_fd}>"$T/f.in"
for _ in $(seq 50); do [ -s "$T/f.ports" ] && break; sleep 0.1; done
f_http=$(tr ' ' '\n' <"$T/f.ports" | sed -n 's/^http=//p')
$TOOL concurrent "$f_http" tun.test "$UP" 30 >/dev/null 2>&1
r=$(curl -s -m 10 -x "http://127.0.0.1:$f_http" -p "http://tun.test:$UP/after")
check "after running out of descriptors the proxy serves again" "GET /after" "$r"
ticks=$(awk '{print $14 + $15}' "/proc/$f_pid/stat" 2>/dev/null || echo 0)
[ "${ticks:-0}" -lt 200 ] && ok "... without spinning ($ticks ticks of CPU)" || nok "spinning" "$ticks ticks"
eval "exec ${f_fd}>&-"
wait "$f_pid" 2>/dev/null

# the proxy ran clean (matters when it is built with sanitizers)
eval "exec ${q_fd}>&-"
wait "$q_pid" 2>/dev/null
if grep -l "Sanitizer\|runtime error" "$T"/*.err 2>/dev/null; then nok "no sanitizer reports"; else ok "no sanitizer reports"; fi

echo "1..$n"
[ $fails -eq 0 ]
