#!/usr/bin/env bash
# DNS filter on host loopback: A/AAAA for allowed names only,
# NXDOMAIN otherwise, REFUSED for other types and oversized labels, a rate
# limit, and an event per query.  Usage: net_dns.sh NET_PROXYD SRCDIR.
set -uo pipefail
PROXYD=$1
HERE=$2
TOOL="python3 $HERE/net_tool.py"
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
T=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
fails=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ $# -gt 1 ] && echo "# $2"; }
check() { if [[ "$3" == *"$2"* ]]; then ok "$1"; else nok "$1" "want '$2', got '$3'"; fi; }

# Hosts entries give the addresses: no query ever leaves the host.  The
# public-looking address is only answered, never connected to.
mkfifo "$T/in"
"$PROXYD" --events "$T/events" \
	--allow "pub.test" --allow "*.wild.test" --allow "lo.test" --allow "127.0.0.1" \
	--allow "dark.test" --deny "no.wild.test" --allow "rng.test" --range 10.9.0.0/16 \
	--host pub.test=93.184.216.34 --host pub.test=2606:2800:220:1::1 \
	--host a.wild.test=93.184.216.35 --host lo.test=127.0.0.1 --host dark.test=10.1.2.3 \
	--host rng.test=10.9.9.9 --host norule.test=10.9.9.8 \
	--dns-max-label 20 --dns-rate 1 --dns-burst 20 \
	<"$T/in" >"$T/ports" 2>"$T/err" &
pid=$!
exec 3>"$T/in"
for _ in $(seq 50); do [ -s "$T/ports" ] && break; sleep 0.1; done
eval "$(tr ' ' '\n' <"$T/ports")"

check "A for an allowed name" "NOERROR 93.184.216.34" "$($TOOL dns "$dns" pub.test 1)"
check "AAAA for an allowed name" "NOERROR 2606:2800:220:1::1" "$($TOOL dns "$dns" pub.test 28)"
check "case and trailing dot do not matter" "NOERROR 93.184.216.34" "$($TOOL dns "$dns" PUB.Test 1)"
check "wildcard rule answers a subdomain" "NOERROR 93.184.216.35" "$($TOOL dns "$dns" a.wild.test 1)"
check "unlisted name is NXDOMAIN" "NXDOMAIN" "$($TOOL dns "$dns" other.test 1)"
check "deny rule wins in DNS too" "NXDOMAIN" "$($TOOL dns "$dns" no.wild.test 1)"
check "other query types are REFUSED" "REFUSED" "$($TOOL dns "$dns" pub.test 16)"
check "oversized label is REFUSED" "REFUSED" \
	"$($TOOL dns "$dns" aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.wild.test 1)"
check "loopback answer with an address rule" "NOERROR 127.0.0.1" "$($TOOL dns "$dns" lo.test 1)"
r=$($TOOL dns "$dns" dark.test 1)
check "private answer without an address rule is withheld" "NOERROR" "$r"
[[ "$r" == *10.1.2.3* ]] && nok "... no address shown" "$r" || ok "... no address shown"
check "private answer inside an --allow-range range is given out" "NOERROR 10.9.9.9" \
	"$($TOOL dns "$dns" rng.test 1)"
check "a range admits no name by itself" "NXDOMAIN" "$($TOOL dns "$dns" norule.test 1)"

sleep 1.1 # a token more
r=$($TOOL dns-burst "$dns" pub.test 60)
check "rate limit: some of a burst of 60 are REFUSED" "5=" "$r"
check "... and the first ones answered" "0=" "$r"

grep -q '"proto":"dns","host":"other.test","port":1,.*"allowed":false,"reason":"no-rule"' "$T/events" &&
	ok "refused query event" || nok "refused query event" "$(grep other.test "$T/events")"
grep -q '"reason":"oversized-label"' "$T/events" && ok "label event" || nok "label event"
grep -q '"reason":"rate-limit"' "$T/events" && ok "rate-limit event" || nok "rate-limit event"
grep -q '"reason":"query-type"' "$T/events" && ok "query-type event" || nok "query-type event"

# the proxy ran clean (matters when it is built with sanitizers)
exec 3>&-
wait "$pid" 2>/dev/null
pid=

# Every query is on the record: one event each, except a flood past the
# rate limit, which is one event per second with the count of the rest.
total=$(python3 - "$T/events" <<'PY'
import json, re, sys
total = 0
for line in open(sys.argv[1]):
    ev = json.loads(line)
    m = re.match(r"(\d+) (more queries|DNS queries)", ev["advice"] or "")
    if ev["host"] is not None:
        total += 1
    if m:
        total += int(m.group(1))
print(total)
PY
)
check "every query is accounted for in the events (72 sent)" "72" "$total"
[ "$(grep -c '"reason":"rate-limit"' "$T/events")" -le 6 ] &&
	ok "a flood past the rate limit is a few events, not one per query" ||
	nok "rate-limit events aggregated" "$(grep -c rate-limit "$T/events")"
if grep -l "Sanitizer\|runtime error" "$T/err" 2>/dev/null; then nok "no sanitizer reports"; else ok "no sanitizer reports"; fi

echo "1..$n"
[ $fails -eq 0 ]
