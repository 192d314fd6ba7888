#!/usr/bin/env bash
# The secret hold is not an oracle (docs/threat-model.md).  warden's proxy masks
# a secret's value in responses, holding back the end of what has arrived
# in case a value spans reads.  It once held a tail only when the tail began
# a value, so a sandbox could send a guess through any allowed host that
# reflects bytes and pauses, and learn from what arrived before the pause
# whether the guess was a prefix of the value.  Here a sandbox does exactly
# that against a loopback echo server, with a right and a wrong prefix of
# the same length, and compares what arrived before the pause (never a
# timing; secrets_oracle.py says how it knows the proxy is done).  Then
# repeated secret-exfiltration refusals raise an audited secret-probe alert.
# Usage: secrets_oracle.sh WARDEN SRCDIR [LEVEL].  Loopback only.
set -uo pipefail
WARDEN=$1
HERE=$2
LEVEL=${3:-container}
TOOL="python3 $HERE/secrets_oracle.py"
command -v python3 >/dev/null || { echo "skip: python3 missing"; [ "${WD_MUST_WORK:-0}" = 1 ] && exit 1; exit 77; }
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
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ $# -gt 1 ] && echo "# ${2:0:3000}"; }

$TOOL serve >"$T/port" &
pids+=($!)
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
P=$(cat "$T/port")
[ -n "$P" ] || { echo "Bail out! the echo server did not start"; exit 1; }

# A random value of 27 unreserved characters (its percent-encoding is
# itself), in a file only warden reads.
VALUE="sk-$(head -c 18 /dev/urandom | base64 | tr '+/' 'xy' | head -c 24)"
mkdir -m 700 "$T/secrets"
printf '%s' "$VALUE" >"$T/secrets/tok"
WS=$T/ws
mkdir -m 777 "$WS"
cp "$HERE/secrets_oracle.py" "$WS/"
chmod 644 "$WS/secrets_oracle.py"
printf '{"version": 1, "programs": {"python3": {"paths": "none"}}}\n' >"$T/policy.json"
NET=(--net allow --allow-range 127.0.0.1/32
	--allow-host "echo.test:$P" --add-host echo.test=127.0.0.1
	--allow-host "sink.test:$P" --add-host sink.test=127.0.0.1)
SEC=(--secret "TOK=@$T/secrets/tok" --inject "http://sink.test:$P/ X-Token={TOK}" --placeholder TOK)
run() {
	"$WARDEN" run --isolation "$LEVEL" --timeout 300 -w "$WS" "${NET[@]}" "${SEC[@]}" \
		-p "$T/policy.json" --audit "$T/audit.$1.log" -- python3 /workspace/secrets_oracle.py \
		"${@:2}" 2>"$T/stderr"
}
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }

# ---- the window: a right and a wrong prefix arrive alike ----
# Guesses of the value's length minus one (the most the old window held)
# and of 8; each wrong guess is dots, which no suffix of the value begins.
L=$((${#VALUE} - 1))
RIGHT_L=${VALUE:0:$L}
WRONG_L=$(printf '%*s' "$L" '' | tr ' ' '.')
RIGHT_8=${VALUE:0:8}
WRONG_8=........
r=$(run window probe "$P" "$(hex "$RIGHT_L")" "$(hex "$WRONG_L")" "$(hex "$RIGHT_8")" "$(hex "$WRONG_8")")
rc=$?
if [ $rc -ne 0 ]; then
	nok "the probe ran" "exit $rc: $r $(cat "$T/stderr")"
else
	ok "the probe ran (an echo server that pauses, reached through the proxy)"
fi
py() { python3 -c "import json, sys; d = json.loads(sys.argv[1]); $1" "$r" 2>&1; }
for pair in "0 1 $L" "2 3 8"; do
	set -- $pair
	got=$(py "a, b = d[$1], d[$2]; print(a['before'], b['before'])")
	read -r br bw <<<"$got"
	if [ -n "$bw" ] && [ "$br" = "$bw" ]; then
		ok "guesses of $3 characters: a prefix of the value and a wrong one arrive alike before the pause ($br body bytes each)"
	else
		nok "guesses of $3 characters: a prefix of the value and a wrong one arrive alike before the pause" \
			"right prefix: ${br:-?} bytes, wrong: ${bw:-?} bytes ($got)"
	fi
done
# what was held is the same number of bytes for every guess, and not the
# value's length: a window of the value's length minus one (the first fix
# of the oracle) told a reflecting host the length
got=$(py "print(' '.join(str(600 + len(x['guess']) - x['before']) for x in d))")
want="255 255 255 255"
[ "$got" = "$want" ] && ok "each response held back the same 255 bytes, not the value's length minus one ($L)" ||
	nok "each response held back the same 255 bytes, not the value's length minus one ($L)" "held: $got, want $want"
# a value of another length (11 characters): the same bytes are held
printf '%s' "${VALUE:0:11}" >"$T/secrets/tok"
r=$(run window-short probe "$P" "$(hex "$WRONG_8")")
printf '%s' "$VALUE" >"$T/secrets/tok"
got2=$(py "print(600 + len(d[0]['guess']) - d[0]['before'])")
[ "$got2" = 255 ] && ok "an 11-character value: the same 255 bytes held (the length is not learnable)" ||
	nok "an 11-character value: the same 255 bytes held (the length is not learnable)" \
		"held: $got2 ($r $(cat "$T/stderr"))"
got=$(py "print(all(x['body'] == 'A' * 600 + x['guess'] + '|END' for x in d))")
[ "$got" = True ] && ok "after the pause every byte arrives, unmasked (a prefix is not the value)" ||
	nok "after the pause every byte arrives" "$got: $r"
# the same with a Content-Length that counts what is still to come (the
# proxy knows the body goes on; the old window held a matching tail here too)
r=$(run window-cl probe "$P" cl "$(hex "$RIGHT_L")" "$(hex "$WRONG_L")")
got=$(py "print(d[0]['before'], d[1]['before'], all(x['body'] == 'A' * 600 + x['guess'] + '|END' for x in d))")
read -r br bw whole <<<"$got"
if [ -n "$bw" ] && [ "$br" = "$bw" ] && [ "$whole" = True ]; then
	ok "with a Content-Length: a prefix and a wrong guess arrive alike before the pause ($br body bytes each), whole after"
else
	nok "with a Content-Length: a prefix and a wrong guess arrive alike before the pause" \
		"right prefix: ${br:-?} bytes, wrong: ${bw:-?} bytes, whole after: ${whole:-?} ($r $(cat "$T/stderr"))"
fi
# the value itself, reflected, is still masked (the window is wide enough)
r=$(run masked probe "$P" "$(hex "$VALUE")" "$(hex "$RIGHT_L")+$(hex "${VALUE:$L}")")
got=$(py "print(d[0]['body'] == 'A' * 600 + '*' * len(d[0]['guess']) + '|END', d[1]['body'] == 'A' * 600 + '*' * $((L + 1)) + '|END')")
[ "$got" = "True True" ] && ok "the value reflected whole, and split across the pause, arrives masked" ||
	nok "the value reflected whole, and split across the pause, arrives masked" "$got: $r $(cat "$T/stderr")"
if grep -rqF -- "$VALUE" "$T"/audit.*.log; then
	nok "no value in the audit trail"
else
	ok "no value in the audit trail"
fi

# ---- repeated refusals: an audited secret-probe alert ----
alerts() { grep -c '"reason":"secret-probe"' "$T/audit.$1.log" 2>/dev/null || true; }
r=$(run two leak "$P" 2)
if [[ "$r" == *403*403* ]] && [ "$(grep -c '"reason":"secret-exfiltration"' "$T/audit.two.log")" = 2 ]; then
	ok "two requests carrying the placeholder: each refused and audited"
else
	nok "two requests carrying the placeholder: each refused and audited" "$r $(cat "$T/stderr")"
fi
[ "$(alerts two)" = 0 ] && ok "... and two refusals raise no alert" ||
	nok "... and two refusals raise no alert" "$(grep secret-probe "$T/audit.two.log")"
r=$(run three leak "$P" 2 dns)
line=$(grep '"reason":"secret-probe"' "$T/audit.three.log")
if [ "$(alerts three)" = 1 ] && [[ "$line" == *'"refusals":3'* ]] && [[ "$line" == *'"secrets":"TOK"'* ]] &&
	[[ "$line" == *'"allowed":false'* ]]; then
	ok "a DNS query and two requests carrying the placeholder: one secret-probe alert, audited with the count and the secret"
else
	nok "three refusals: one secret-probe alert, audited" "$r | $line | $(grep -c secret-exfiltration "$T/audit.three.log")"
fi
r=$(run seven leak "$P" 7)
got=$(grep '"reason":"secret-probe"' "$T/audit.seven.log" | grep -o '"refusals":[0-9]*' | tr '\n' ' ')
[ "$got" = '"refusals":3 "refusals":6 ' ] && ok "seven refusals: alerts at 3 and 6 (each doubling), not one per refusal" ||
	nok "seven refusals: alerts at 3 and 6" "got: $got"
r=$("$WARDEN" audit verify "$T/audit.seven.log" 2>&1)
[[ "$r" == *intact* ]] && ok "the trail with the alerts verifies" || nok "the trail with the alerts verifies" "$r"

echo "1..$n"
[ $fails -eq 0 ]
