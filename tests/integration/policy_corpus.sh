#!/usr/bin/env bash
# The over-refusal corpus: every ordinary agent command of
# corpus/ordinary.txt is allowed by preset:coding (zero refusals), every
# command of corpus/refused.txt is refused by the rule it names (the
# checker is not permissive), and a glob in a data option's value is passed
# to the program as written whatever files exist.
. "$(dirname "$0")/policy_lib.sh"
CORPUS=$(dirname "$(readlink -f "$0")")/corpus
cd "$WS"
mkdir -p src tests
echo 'print(1)' >src/app.py
echo 'def test_x(): pass' >tests/test_app.py

n=0 refused=0
while IFS= read -r line; do
	case "$line" in '' | '#'*) continue ;; esac
	n=$((n + 1))
	if ! "$WARDEN" check --policy preset:coding --command "$line" >"$T/out" 2>&1; then
		refused=$((refused + 1))
		not_ok "over-refusal: $line"
		sed 's/^/#   /' "$T/out" | head -n 3
	fi
done <"$CORPUS/ordinary.txt"
if [ "$n" -ge 150 ] && [ "$refused" = 0 ]; then
	ok "preset:coding allows all $n ordinary commands"
else not_ok "corpus: $refused of $n refused (at least 150 needed)"; fi

# The same corpus under the built-in default: the preset is what makes the
# difference (if the default allowed them all, the preset proved nothing).
# It stops at 51 refusals: each check costs a process (ASan: ~50 ms).
dflt=0
while IFS= read -r line; do
	case "$line" in '' | '#'*) continue ;; esac
	"$WARDEN" check --command "$line" >/dev/null 2>&1 || dflt=$((dflt + 1))
	[ "$dflt" -gt 50 ] && break
done <"$CORPUS/ordinary.txt"
if [ "$dflt" -gt 50 ]; then ok "the default policy refuses more than 50 of them"; else
	not_ok "the default refuses only $dflt of the corpus"; fi

m=0
while IFS=$'\t' read -r rule line; do
	case "$rule" in '' | '#'*) continue ;; esac
	m=$((m + 1))
	"$WARDEN" check --policy preset:coding --json --command "$line" >"$T/out" 2>"$T/err"
	rc=$?
	want=126
	case "$rule" in *.approve*) want=123 ;; esac
	# the compact object names the rule once ("rule":"...")
	if [ "$rc" = "$want" ] && grep -qF "\"rule\":\"$rule\"" "$T/out"; then :; else
		not_ok "must be refused by $rule (exit $want): $line: exit $rc: $(head -c 300 "$T/out")"
	fi
done <"$CORPUS/refused.txt"
ok "$m commands checked against refused.txt"

# A glob in a data option's value is data: with matching files present the
# word the program gets is still the pattern, never the file names.
touch a.py b.py
expect_rc 0 "find -name *.py with .py files present" "$WARDEN" check --policy preset:coding --json --command 'find . -name *.py'
expect_in "$T/out" '"argv":["find",".","-name","*.py"]' "the pattern is passed as written"
expect_rc 0 "grep --include=*.py" "$WARDEN" check --policy preset:coding --json --command 'grep -rn --include=*.py x .'
expect_in "$T/out" '"--include=*.py"' "the value is passed as written"
expect_rc 126 "a glob in an operand is still refused" "$WARDEN" check --policy preset:coding --command 'cat *.py'
expect_in "$T/out" "rule:     shell.glob" "as shell.glob"
# and the jail's find gets the pattern: it matches in the program, not here
mkdir -p deep/er && touch deep/er/c.py
if "$WARDEN" run --policy preset:coding -w "$WS" --command 'find deep -name *.py' >"$T/out" 2>"$T/err"; then
	expect_in "$T/out" "deep/er/c.py" "find in the jail matched the pattern itself"
else
	rc=$?
	if [ "$rc" = 125 ] && grep -qi "namespace\|not permitted\|unsupported" "$T/err" && [ "${WD_MUST_WORK:-0}" != 1 ]; then
		ok "# SKIP no jail here: $(head -n1 "$T/err")"
	else not_ok "warden run find: exit $rc: $(head -n2 "$T/err")"; fi
fi

# Presets: bad names, show, the file of that name
expect_rc 125 "unknown preset" "$WARDEN" check --policy preset:nope --command ls
expect_in "$T/err" "preset:nope: unknown preset (known: coding, node, python)" "names it and the known ones"
expect_rc 125 "unknown preset in policy show" "$WARDEN" policy show --policy preset:
for p in coding python node; do
	expect_rc 0 "policy show preset:$p" "$WARDEN" policy show --policy "preset:$p"
	expect_in "$T/out" "\"source\": \"preset:$p\"" "  its source is named"
done
"$WARDEN" policy show --policy preset:python >"$T/py.json"
if grep -q '"pip"' "$T/py.json" && ! grep -q '"npm"' "$T/py.json"; then ok "preset:python has pip, not npm"; else
	not_ok "preset:python's programs"; fi
expect_rc 126 "preset:node has no pip" "$WARDEN" check --policy preset:node --command 'pip install x'
# the printed preset (less the built-in profiles, marked so) is a policy
# file that decides the same (same digest)
"$WARDEN" policy show --policy preset:coding | python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("digest"); d.pop("source"); d["profiles"]={k: v for k, v in d.get("profiles", {}).items() if not v.get("builtin")}; json.dump(d, open(sys.argv[1], "w"))' "$T/coding.json"
d1=$("$WARDEN" policy show --policy preset:coding | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
d2=$("$WARDEN" policy show --policy "$T/coding.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then ok "policy show preset:coding round-trips (digest $d1)"; else
	not_ok "round trip: $d1 vs $d2"; fi
# a file named preset:x is reached as ./preset:x
cp "$T/coding.json" "./preset:mine"
expect_rc 0 "./preset:mine is a file" "$WARDEN" check --policy ./preset:mine --command 'make test'

# serve --policy preset:coding: the server's run_command judges under the
# preset (sed is allowed, npm publish is not) and runs with HOME off the
# workspace.  One request at a time, each answer awaited: no fixed window.
cat >"$T/mcp.py" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "serve", "--stdio", "--policy", "preset:coding", "-w", sys.argv[2]],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    for line in p.stdout:
        m = json.loads(line)
        if m.get("id") == i:
            return m
    sys.exit("server closed")
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
for i, cmd in enumerate(["sed -n 1p src/app.py", "npm publish", "python3 -c 'import os; print(os.environ[\"HOME\"])'"], 2):
    r = call(i, "tools/call", {"name": "run_command", "arguments": {"command": cmd}})["result"]
    print(cmd, "=>", "error" if r.get("isError") else "ok", json.dumps(r["content"][0]["text"]))
p.stdin.close()
p.wait()
PY
if python3 "$T/mcp.py" "$WARDEN" "$WS" >"$T/out" 2>"$T/err"; then
	expect_in "$T/out" 'sed -n 1p src/app.py => ok "exit status 0\n--- stdout ---\nprint(1)\n"' "serve --policy preset:coding: run_command runs sed"
	expect_in "$T/out" 'npm publish => error' "  and refuses npm publish"
	expect_in "$T/out" '--- stdout ---\n/home/sandbox\n' "  with HOME=/home/sandbox"
else
	not_ok "serve --policy preset:coding: $(tail -n 3 "$T/err")"
fi

exit $((failures > 0))
