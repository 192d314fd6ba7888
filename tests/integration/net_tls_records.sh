#!/usr/bin/env bash
# TLS interception with read-ahead (net/tls.c): records the proxy has
# already read from a socket, and that no later event will announce, are
# still acted on.  Two requests as two TLS records in one segment (the
# second waits inside the proxy's TLS buffer while the first is answered),
# then a 4 MiB download with the client pausing after 64 KiB (the proxy's
# buffers fill while its upstream side holds records read ahead).  Real
# upstream (python3 http.server over TLS), loopback only.
# Usage: net_tls_records.sh NET_PROXYD SRCDIR.
set -uo pipefail
PROXYD=$1
HERE=$2
TOOL="python3 $HERE/net_tool.py"
for c in python3 openssl; do command -v $c >/dev/null || { echo "skip: $c missing"; exit 77; }; done

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
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ $# -gt 1 ] && printf "%s\n" "$2" | sed "s/^/# /"; }
check() { if [[ "$3" == *"$2"* ]]; then ok "$1"; else nok "$1" "want '$2', got '$3'"; fi; }

cd "$T"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=warden test upstream CA" -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=secure.test" \
	-keyout up.key -out up.csr 2>/dev/null
printf 'subjectAltName=DNS:secure.test\n' >up.ext
openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
	-extfile up.ext -out up.pem 2>/dev/null
cd - >/dev/null

$TOOL serve-tls "$T/up.log" "$T/up.pem" "$T/up.key" >"$T/up.port" &
pids+=($!)
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.1; done
UP=$(cat "$T/up.port")

mkfifo "$T/in"
"$PROXYD" --events "$T/events" --tls-intercept --upstream-ca "$T/ca.pem" --ca-out "$T/sandbox-ca.pem" \
	--allow "secure.test:$UP=GET" --allow "127.0.0.1:$UP" --host secure.test=127.0.0.1 \
	<"$T/in" >"$T/ports" 2>"$T/err" &
pid=$!
pids+=($pid)
exec 3>"$T/in"
for _ in $(seq 100); do [ -s "$T/ports" ] && break; sleep 0.1; done
eval "$(tr ' ' '\n' <"$T/ports")"

# timeout: a record left waiting for an edge would hang the client
r=$(SSL_CERT_FILE="$T/sandbox-ca.pem" timeout 60 $TOOL tls-records "$http" secure.test "$UP" 4194304 2>&1)
check "first of two records sent in one segment answered" "HTTP/1.1 200 OK GET /one" "$r"
check "second record, already read ahead by the proxy, answered" "HTTP/1.1 200 OK GET /two" "$r"
check "4 MiB through interception with the client pausing: every byte" "HTTP/1.1 200 OK 4194304" "$r"
grep -c '"method":"GET","path":"/\(one\|two\)".*"allowed":true' "$T/events" | grep -qx 2 &&
	ok "each request inside the tunnel is its own checked event" ||
	nok "two events" "$(grep -c '"path"' "$T/events")"

exec 3>&-
wait "$pid" 2>/dev/null
if grep -l "Sanitizer\|runtime error" "$T/err" 2>/dev/null; then nok "no sanitizer reports"; else ok "no sanitizer reports"; fi
echo "1..$n"
[ $fails -eq 0 ]
