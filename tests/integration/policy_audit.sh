#!/usr/bin/env bash
# The audit trail of warden run: one event per decision and result, a
# chain that `warden audit verify` checks, each kind of tampering detected,
# no environment values, and the log invisible inside the jail.
. "$(dirname "$0")/policy_lib.sh"
need_run
cd "$WS"
A=$T/audit.jsonl
cat >"$T/p.json" <<'J'
{"version": 1, "programs": {"echo": {}, "cat": {}, "ls": {}}}
J
P=(--policy "$T/p.json" --audit "$A")

echo "content-of-the-file" >"$WS/notes.txt"
expect_rc 0 "allowed run" "$WARDEN" run "${P[@]}" --setenv API_TOKEN=s3cr3t-value -- cat notes.txt
expect_rc 126 "denied run" "$WARDEN" run "${P[@]}" --command 'rm -rf x'
expect_rc 126 "composition" "$WARDEN" run "${P[@]}" --command 'echo a; echo b'
expect_rc 0 "string command" "$WARDEN" run "${P[@]}" --command 'echo "two words"'
expect_in "$T/out" "two words" "  ... ran the tokenized words"
# the log is outside the jail: by policy (outside the workspace) ...
expect_rc 126 "the log is not a workspace path" "$WARDEN" run "${P[@]}" -- cat "$A"
# ... and by the jail's view (even with no policy in the way)
"$WARDEN" run -w "$WS" -- /bin/cat "$A" >"$T/out" 2>"$T/err"
expect_not_in "$T/out" '"event"' "the jail cannot read the audit log"

n=$(wc -l <"$A")
[ "$n" = 7 ] && ok "7 events (4 decisions, 2 results... and the refusal)" || not_ok "event count: $n, expected 7"
expect_in "$A" '"event":"decision"' "decision events"
expect_in "$A" '"event":"result"' "result events"
expect_in "$A" '"rule":"programs"' "the rule is recorded"
expect_in "$A" '"API_TOKEN"' "environment names are recorded"
expect_not_in "$A" 's3cr3t-value' "environment values are not"
expect_not_in "$A" 'content-of-the-file' "output is not recorded"
python3 - "$A" <<'PY' && ok "seq, time, sandbox, prev on every event" || not_ok "event fields"
import json, sys, re
for i, line in enumerate(open(sys.argv[1]), 1):
    e = json.loads(line)
    assert e["seq"] == i
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["time"])
    assert len(e["sandbox"]) >= 16 and len(e["prev"]) == 64
PY

expect_rc 0 "verify: intact" "$WARDEN" audit verify "$A"
expect_in "$T/out" "ok, 7 events, chain intact, head matches" "reports the count"

tamper() { # DESC SED-SCRIPT
	cp "$A" "$T/t.jsonl"
	cp "$A.head" "$T/t.jsonl.head"
	sed -i "$2" "$T/t.jsonl"
	expect_rc 1 "verify detects: $1" "$WARDEN" audit verify "$T/t.jsonl"
	expect_in "$T/out" "BROKEN" "  ... and says where: $(cut -c1-100 "$T/out")"
}
tamper "an edited decision" '3s/"deny"/"allow"/'
tamper "a deleted event" '3d'
tamper "reordered events" '2{h;d};3{G}'
tamper "a removed last event" '$d'
tamper "removed first events" '1d'
tamper "a duplicated event" '2p'
cp "$A" "$T/t.jsonl"
cp "$A.head" "$T/t.jsonl.head"
truncate -s -5 "$T/t.jsonl"
expect_rc 1 "verify detects: a cut mid-line" "$WARDEN" audit verify "$T/t.jsonl"
expect_rc 125 "verify: missing file" "$WARDEN" audit verify "$T/none.jsonl"
expect_rc 125 "audit: usage" "$WARDEN" audit check "$A"
# a torn log refuses further appends: nothing runs unrecorded
expect_rc 125 "a damaged log stops the run" "$WARDEN" run --policy "$T/p.json" --audit "$T/t.jsonl" -- echo x
expect_not_in "$T/out" "x" "  ... and nothing ran"

# tool routing in run: the class is the policy's, the profile gives limits
B=$T/route.jsonl
expect_rc 126 "run --tool: a blocked tool" "$WARDEN" run --tool delete_workspace --audit "$B" -- ls
expect_rc 126 "run --tool: an undefined tool" "$WARDEN" run --tool nope --audit "$B" -- ls
expect_rc 126 "run --tool: a direct tool does not run in a jail" "$WARDEN" run --tool read_file -- ls
head -c 2000000 /dev/zero | tr '\0' x >"$WS/big.txt"
expect_rc 0 "run --tool shell" "$WARDEN" run --tool shell --audit "$B" --json -- cat big.txt
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["stdout"]; assert s["total_bytes"]==2000000 and 500000 < len(s["data"]) < 530000, (s["total_bytes"], len(s["data"]))' "$T/out" &&
	ok "  ... keeps shell_commands' 512 KiB of output" || not_ok "  ... keeps shell_commands' 512 KiB of output"
expect_rc 0 "run --tool shell --output-limit 1K" "$WARDEN" run --tool shell --output-limit 1K --json -- cat big.txt
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["stdout"]["data"]) < 2000' "$T/out" &&
	ok "  ... the run's own option wins" || not_ok "  ... the run's own option wins"
expect_in "$B" '"event":"route","tool":"delete_workspace","decision":"deny"' "route refusals are audited"
expect_in "$B" '"profile":"shell_commands","timeout_ms":15000' "the applied profile is audited"
expect_rc 0 "route log verifies" "$WARDEN" audit verify "$B"

# an argument a model chose: the byte 0xff and the four characters \xff are
# two different records, each of which reads back to its own bytes (the
# trail escapes a byte that is not UTF-8 as util/json.h does, \udcXX, which
# Python reads back with surrogateescape); without a policy (the start
# record) and with one (decision and result)
E=$T/bytes.jsonl
expect_rc 0 "run with the byte 0xff" "$WARDEN" run --audit "$E" -- /bin/echo "$(printf 'a\377')"
expect_rc 0 "run with the text \\xff" "$WARDEN" run --audit "$E" -- /bin/echo 'a\xff'
expect_rc 0 "policy run with the byte 0xff" "$WARDEN" run "${P[@]/$A/$E}" -- echo "$(printf 'a\377')"
expect_rc 0 "policy run with the text \\xff" "$WARDEN" run "${P[@]/$A/$E}" -- echo 'a\xff'
python3 - "$E" >"$T/py" 2>&1 <<'PY' && ok "the byte and its text are two records, each its own bytes" || not_ok "byte records: $(cat "$T/py")"
import json, sys
want = [b"a\xff", b"a\\xff"]
got = {}
for line in open(sys.argv[1], "rb"):
    e = json.loads(line)
    for field, a in (("argv", e.get("argv")), ("request.argv", (e.get("request") or {}).get("argv"))):
        if a:
            got.setdefault((e["event"], field), []).append(a[-1].encode("utf-8", "surrogateescape"))
print(got)
assert got, "no argv recorded"
for kind, args in got.items():
    assert args == want, (kind, args)
PY
expect_rc 0 "a trail with a byte that is not UTF-8 verifies" "$WARDEN" audit verify "$E"
expect_in "$T/out" "ok, 8 events" "  ... all its events"
# a trail written before (a byte as the text \xNN, as every line it holds
# was hashed) still verifies: the chain hashes the lines' bytes
python3 - "$T/old.jsonl" <<'PY'
import hashlib, sys
prev, lines = "0" * 64, []
for i, arg in enumerate(["l\\\\xffs", "x"], 1):
    ln = ('{"seq":%d,"time":"2026-12-01T10:00:00.000Z","sandbox":"0123456789abcdef",'
          '"event":"start","argv":["%s"],"prev":"%s"}' % (i, arg, prev))
    lines.append(ln)
    prev = hashlib.sha256(ln.encode()).hexdigest()
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
open(sys.argv[1] + ".head", "w").write('{"seq":2,"hash":"%s"}\n' % prev)
PY
expect_rc 0 "a trail of the former \\xNN form verifies" "$WARDEN" audit verify "$T/old.jsonl"
finish
