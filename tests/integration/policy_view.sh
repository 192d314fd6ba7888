#!/usr/bin/env bash
# The policy's containment of the paths a command names is judged in the
# workspace the command will see: in a cow session that is the session's
# overlay, where the model may have made a link out (build.py ->
# /etc/passwd) that the host directory does not hold.  Judged on the host
# directory, `cat build.py` was allowed, and a human reading the decision
# or the audit was told the path was contained.  The reverse too: a link
# out on the host that the model replaced in its overlay is no longer a
# link the command sees.  `warden check --session` decides as the exec
# does; a view that cannot be had refuses the path (never judged on the
# host directory instead).
. "$(dirname "$0")/policy_lib.sh"
need_run
cd "$WS"
cat >"$T/p.json" <<'J'
{"version": 1, "programs": {"cat": {}, "python3": {},
 "head": {"approve": [["new.txt"]]}}}
J
P=(--policy "$T/p.json" --audit "$T/audit.jsonl")
printf 'print("host copy")\n' >build.py
S=pview$$
"$WARDEN" create "$S" -w "$WS" --workspace-mode cow >"$T/out" 2>"$T/err" </dev/null ||
	skip "cannot create a cow session: $(head -c 300 "$T/err")"
trap '"$WARDEN" rm "$S" >/dev/null 2>&1; rm -rf "$T"' EXIT
ok "cow session created"
# in the session the model makes links out in its overlay (python3 -c:
# the code is data, not a path), and replaces the host's link-out (a link
# to $T/outside) with a directory of its own, and writes a new file
expect_rc 0 "the model makes build.py a link to /etc/passwd in its overlay" \
	"$WARDEN" exec "${P[@]}" "$S" -- python3 -c \
	'import os; os.remove("build.py"); os.symlink("/etc/passwd", "build.py"); os.makedirs("d"); os.symlink("/etc", "d/up"); os.remove("link-out"); os.mkdir("link-out"); open("link-out/secret", "w").write("mine\n"); open("new.txt", "w").write("made in the overlay\n")'
[ -f build.py ] && [ ! -L build.py ] && [ ! -e d ] && [ -L link-out ] &&
	ok "... the host directory holds none of it" || not_ok "the overlay reached the host"

# 1. a link out made in the overlay: refused, as it is in a host workspace
expect_rc 126 "session: cat build.py (a link to /etc/passwd in the overlay) is refused" \
	"$WARDEN" exec "${P[@]}" "$S" -- cat build.py
expect_in "$T/err" "path 'build.py' resolves to /etc/passwd, outside the workspace" \
	"... saying where the overlay's link leads"
expect_not_in "$T/out" "root:" "... and nothing of /etc/passwd was printed"
expect_rc 126 "session: a directory made only in the overlay, a link in it: refused" \
	"$WARDEN" exec "${P[@]}" "$S" -- cat d/up/passwd
expect_in "$T/err" "path 'd/up/passwd' resolves to /etc/passwd" "... where it leads"
expect_rc 126 "session: the absolute form /workspace/build.py: refused" \
	"$WARDEN" exec "${P[@]}" "$S" -- cat /workspace/build.py
expect_rc 126 "session: python3 build.py: refused" \
	"$WARDEN" exec "${P[@]}" "$S" -- python3 build.py
# warden check --session decides as the exec does
expect_rc 126 "check --session: the same refusal" \
	"$WARDEN" check --policy "$T/p.json" --session "$S" -- cat build.py
expect_in "$T/out" "resolves to /etc/passwd" "... for the same reason"
# the audit record says what was decided, in the session's view
expect_in "$T/audit.jsonl" "resolves to /etc/passwd, outside the workspace" \
	"the audit records the refusal in the view"
# the same words in a one-shot run (the host directory, a plain file) run
expect_rc 0 "one-shot: cat build.py (the host's plain file) runs" \
	"$WARDEN" run "${P[@]}" -- cat build.py
expect_in "$T/out" 'print("host copy")' "... the host's copy"

# 2. the reverse: the host's link out, replaced by the model's own
# directory in the overlay, is not what the command sees
expect_rc 126 "one-shot: cat link-out/secret (the host's link out) is refused" \
	"$WARDEN" run "${P[@]}" -- cat link-out/secret
expect_rc 0 "session: cat link-out/secret (a directory in the overlay) runs" \
	"$WARDEN" exec "${P[@]}" "$S" -- cat link-out/secret
expect_in "$T/out" "mine" "... and read the overlay's file, not the host's"

# 3. a file made only in the overlay: contained (the user expects to
# read what the command wrote), judged in the view where it exists
expect_rc 0 "session: cat new.txt (only in the overlay) runs" \
	"$WARDEN" exec "${P[@]}" "$S" -- cat new.txt
expect_in "$T/out" "made in the overlay" "... and printed it"
expect_rc 0 "check --session: allowed too" \
	"$WARDEN" check --policy "$T/p.json" --session "$S" -- cat new.txt

# the approval id check gives is the exec's (the same view, the same
# state), and a pause on a path in the overlay names no other
expect_rc 123 "check --session --json: head new.txt pauses" \
	"$WARDEN" check --policy "$T/p.json" --session "$S" --json -- head new.txt
cid=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["decision"], d["approval_id"])' "$T/out")
expect_rc 123 "exec: head new.txt pauses" "$WARDEN" exec "${P[@]}" "$S" -- head new.txt
eid=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1)
[ "$cid" = "pause $eid" ] && [ -n "$eid" ] && ok "... under the id check gave ($eid)" ||
	not_ok "check said '$cid', exec paused as '$eid'"

# 4. no view to judge in (the session stopped, its monitor gone): the
# path is refused, naming the session, not judged on the host directory
if "$WARDEN" stop "$S" >"$T/out" 2>"$T/err"; then
	expect_rc 126 "stopped session: check --session with a path refuses" \
		"$WARDEN" check --policy "$T/p.json" --session "$S" -- cat new.txt
	expect_in "$T/out" "the workspace of session" "... saying the session's view could not be had"
	expect_in "$T/out" "refused rather than judged on the host directory" "... and why"
	expect_rc 0 "stopped session: a command without a path is still judged (no view needed)" \
		"$WARDEN" check --policy "$T/p.json" --session "$S" -- cat
else
	not_ok "warden stop: $(head -c 300 "$T/err")"
fi
[ "$failures" = 0 ]
