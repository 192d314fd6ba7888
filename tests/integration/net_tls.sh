#!/usr/bin/env bash
# TLS interception (--tls-intercept) with real clients on host loopback:
# an HTTPS upstream with a test CA made here with openssl, curl and python3
# urllib trusting only the proxy's per-sandbox CA.  Usage: net_tls.sh
# NET_PROXYD SRCDIR.  Loopback only.
set -uo pipefail
PROXYD=$1
HERE=$2
TOOL="python3 $HERE/net_tool.py"
for c in curl python3 openssl; do command -v $c >/dev/null || { echo "skip: $c missing"; exit 77; }; done

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
check() { if [[ "$3" == *"$2"* ]]; then ok "$1"; else nok "$1" "want '$2', got '$3'"; fi; }

# A test CA, a certificate for secure.test and open.test, and one for the
# wrong name.
cd "$T"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=warden test upstream CA" -keyout ca.key -out ca.pem 2>/dev/null
for name in secure.test other.test; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
		-keyout "$name.key" -out "$name.csr" 2>/dev/null
	san="DNS:$name"
	[ "$name" = secure.test ] && san="$san,DNS:open.test"
	printf 'subjectAltName=%s\n' "$san" >"$name.ext"
	openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile "$name.ext" -out "$name.pem" 2>/dev/null
done
cd - >/dev/null

start_up() { # start_up NAME CERT
	$TOOL serve-tls "$T/up.log" "$T/$2.pem" "$T/$2.key" >"$T/$1.port" &
	pids+=($!)
	for _ in $(seq 50); do [ -s "$T/$1.port" ] && break; sleep 0.1; done
}
start_up good secure.test
start_up bad other.test
UP=$(cat "$T/good.port")
BAD=$(cat "$T/bad.port")

mkfifo "$T/in"
"$PROXYD" --events "$T/events" --tls-intercept --upstream-ca "$T/ca.pem" --ca-out "$T/sandbox-ca.pem" \
	--allow "secure.test:$UP=GET,HEAD" --allow "open.test:$UP" --allow "wrong.test:$BAD" \
	--allow "127.0.0.1:$UP" --allow "127.0.0.1:$BAD" \
	--host secure.test=127.0.0.1 --host open.test=127.0.0.1 --host wrong.test=127.0.0.1 \
	<"$T/in" >"$T/ports" 2>"$T/err" &
pid=$!
pids+=($pid)
exec 3>"$T/in"
for _ in $(seq 50); do [ -s "$T/ports" ] && break; sleep 0.1; done
eval "$(tr ' ' '\n' <"$T/ports")"
[ -s "$T/sandbox-ca.pem" ] && ok "the proxy hands out its CA certificate" || nok "CA certificate"
grep -q "PRIVATE KEY" "$T/sandbox-ca.pem" && nok "the CA key stays in the proxy" || ok "the CA key stays in the proxy"

X="-s -m 10 -x http://127.0.0.1:$http --cacert $T/sandbox-ca.pem"
r=$(curl $X "https://secure.test:$UP/hello")
check "intercepted GET to a GET-only HTTPS host works" "GET /hello host=secure.test:$UP" "$r"
r=$(curl $X -i -X PUT -d abc "https://secure.test:$UP/x")
check "intercepted PUT to a GET-only host is 403 inside TLS" "X-Warden-Denied: method" "$r"
grep -q "PUT /x" "$T/up.log" 2>/dev/null && nok "... and never reached the upstream" || ok "... and never reached the upstream"
r=$(curl $X -X POST -d hello "https://open.test:$UP/post")
check "unrestricted HTTPS host through interception" "POST 5" "$r"
r=$(curl $X -i "https://wrong.test:$BAD/")
check "upstream certificate for another name: 502 tls-failed" "X-Warden-Denied: tls-failed" "$r"
r=$(curl $X -i -H "Host: open.test:$UP" "https://secure.test:$UP/")
check "Host naming another site inside the tunnel: 421 misdirected" "HTTP/1.1 421" "$r"
curl -s -m 10 -x "http://127.0.0.1:$http" "https://secure.test:$UP/" >/dev/null 2>&1
check "a client that does not trust the sandbox CA fails TLS" "60" "$?"
r=$(curl $X --http2 -o /dev/null -w '%{http_version}' "https://secure.test:$UP/")
check "ALPN: an h2-capable client gets http/1.1" "1.1" "$r"
r=$(curl -s -m 10 --socks5-hostname "127.0.0.1:$socks" --cacert "$T/sandbox-ca.pem" "https://secure.test:$UP/socks")
check "SOCKS5 tunnels are intercepted too" "GET /socks" "$r"
r=$(curl $X "https://secure.test:$UP/a" "https://secure.test:$UP/b" -v 2>&1 | grep -c "Re-using existing connection")
check "keep-alive inside the intercepted tunnel" "1" "$r"
r=$(SSL_CERT_FILE="$T/sandbox-ca.pem" $TOOL urllib "$http" "https://secure.test:$UP/py")
check "python3 urllib with HTTPS_PROXY and SSL_CERT_FILE" "200 GET /py" "$r"
r=$(SSL_CERT_FILE="$T/sandbox-ca.pem" $TOOL urllib "$http" "https://secure.test:$UP/py" PUT)
check "python3 urllib PUT refused" "403 method" "$r"

# Request smuggling inside the intercepted tunnel: a GET whose
# Connection names its framing field and whose body is a PUT.
r=$(SSL_CERT_FILE="$T/sandbox-ca.pem" $TOOL smuggle "$http" secure.test "$UP" Content-Length tls)
check "inside TLS: Connection: Content-Length is 400 ambiguous-framing" \
	"X-Warden-Denied: ambiguous-framing" "$r"
r=$(SSL_CERT_FILE="$T/sandbox-ca.pem" $TOOL smuggle "$http" secure.test "$UP" Transfer-Encoding tls)
check "inside TLS: Connection: Transfer-Encoding is 400 ambiguous-framing" \
	"X-Warden-Denied: ambiguous-framing" "$r"
sleep 0.2
grep -q "/smuggled" "$T/up.log" 2>/dev/null && nok "... no smuggled PUT reached the GET-only upstream" "$(cat "$T/up.log")" ||
	ok "... no smuggled PUT reached the GET-only upstream"
r=$(curl $X -i -m 5 "https://secure.test:$UP/conn-cl" 2>&1)
check "inside TLS: a response whose Connection names Content-Length is 502" \
	"X-Warden-Denied: bad-upstream-response" "$r"

grep -q '"proto":"https","host":"secure.test","port":'"$UP"',"method":"GET","path":"/hello".*"allowed":true' "$T/events" &&
	ok "intercepted request event has method and path" || nok "https event" "$(head -3 "$T/events")"
grep -q '"proto":"connect","host":"secure.test".*"advice":"TLS intercepted' "$T/events" &&
	ok "the tunnel itself is an event" || nok "tunnel event"

# Without interception a method-restricted HTTPS host stays closed.
mkfifo "$T/in2"
"$PROXYD" --allow "secure.test:$UP=GET" --host secure.test=127.0.0.1 --allow "127.0.0.1:$UP" \
	<"$T/in2" >"$T/ports2" 2>"$T/err2" &
pids+=($!)
exec 4>"$T/in2"
for _ in $(seq 50); do [ -s "$T/ports2" ] && break; sleep 0.1; done
p2=$(tr ' ' '\n' <"$T/ports2" | sed -n 's/^http=//p')
r=$(curl -s -m 10 -x "http://127.0.0.1:$p2" -o /dev/null -w '%{http_connect}' "https://secure.test:$UP/")
check "without --tls-intercept: CONNECT to a GET-only host is 403" "403" "$r"

exec 3>&- 4>&-
wait "$pid" 2>/dev/null
if grep -l "Sanitizer\|runtime error" "$T/err" "$T/err2" 2>/dev/null; then nok "no sanitizer reports"; else ok "no sanitizer reports"; fi
echo "1..$n"
[ $fails -eq 0 ]
