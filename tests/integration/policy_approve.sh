#!/usr/bin/env bash
# Approvals through warden run: pause (123, id), warden approve, single use,
# mismatch, expiry, the policy changing after the approval, and the tty path
# (--approve=tty asks on the controlling terminal, never on stdin).
. "$(dirname "$0")/policy_lib.sh"
need_run
cd "$WS"
cat >"$T/p.json" <<'J'
{"version": 1, "programs": {"echo": {"approve": [["publish"]]}}}
J
P=(--policy "$T/p.json" --audit "$T/audit.jsonl")

expect_rc 123 "pause without a terminal" "$WARDEN" run "${P[@]}" -- echo publish now </dev/null
expect_in "$T/err" "warden approve " "prints how to approve"
id=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1)
[ ${#id} = 64 ] && ok "id is 64 hex digits" || not_ok "id is 64 hex digits: '$id'"
expect_not_in "$T/out" "publish now" "nothing ran"

expect_rc 123 "--json: a decision object on stdout" "$WARDEN" run "${P[@]}" --json -- echo publish now
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["decision"]=="pause" and len(d["approval_id"])==64' "$T/out" &&
	ok "json pause object" || not_ok "json pause object"

expect_rc 125 "approve: unknown id" "$WARDEN" approve 0123456789abcdef
expect_rc 125 "approve: bad ttl" "$WARDEN" approve "$id" --ttl 0
expect_rc 0 "approve the id" "$WARDEN" approve "${id:0:12}"
expect_in "$T/out" "'echo' 'publish' 'now'" "shows the exact argv approved"

expect_rc 123 "another argument is not covered" "$WARDEN" run "${P[@]}" -- echo publish later
expect_rc 0 "the identical command runs" "$WARDEN" run "${P[@]}" -- echo publish now
expect_in "$T/out" "publish now" "  ... and its output is there"
expect_rc 123 "single use: it pauses again" "$WARDEN" run "${P[@]}" -- echo publish now

# the policy changes after the approval: the digest differs, not covered
"$WARDEN" approve "$id" >/dev/null 2>&1
cat >"$T/p.json" <<'J'
{"version": 1, "programs": {"echo": {"approve": [["publish"]]}, "true": {}}}
J
expect_rc 123 "policy changed: pauses again" "$WARDEN" run "${P[@]}" -- echo publish now

# expiry
id2=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1)
expect_rc 0 "approve with --ttl 1" "$WARDEN" approve "$id2" --ttl 1
sleep 2.2
expect_rc 123 "expired approval pauses" "$WARDEN" run "${P[@]}" -- echo publish now

# the audit trail tells it
for ev in approval.granted approval.consumed approval.expired approval.mismatched; do
	expect_in "$T/audit.jsonl" "\"$ev\"" "audit has $ev"
done
expect_rc 0 "audit chain intact" "$WARDEN" audit verify "$T/audit.jsonl"


# --approve=tty: a pty is the controlling terminal; stdin is /dev/null
tty_run() { # ANSWER [RUN OPTION...]: run under a pty, answer, print the transcript
	local answer=$1
	shift
	pty_answer null "$answer" "$WARDEN" run "${P[@]}" --approve=tty "$@" -- echo publish now
}
tty_run y >"$T/tty" 2>&1
rc=$?
[ $rc = 0 ] && ok "tty: yes runs it (exit 0)" || not_ok "tty: yes runs it: exit $rc"
expect_in "$T/tty" "'echo' 'publish' 'now'" "tty: shows the exact argv"
expect_in "$T/tty" "cwd:     '.'" "tty: shows where it runs (the workspace's root)"
# the approval covers the working directory, and the same words run
# elsewhere mean another thing (a nested repository's remote): shown
mkdir -p "$WS/nested"
tty_run n --cwd nested >"$T/tty" 2>&1
expect_in "$T/tty" "cwd:     'nested'" "tty: shows a --cwd the command runs in"
expect_in "$T/tty" "publish now" "tty: the command ran"
tty_run n >"$T/tty" 2>&1
rc=$?
[ $rc = 126 ] && ok "tty: no refuses (exit 126)" || not_ok "tty: no refuses: exit $rc"
expect_in "$T/tty" "not approved" "tty: says nothing ran"
expect_rc 123 "--approve=tty without a terminal falls back to the id" setsid "$WARDEN" run "${P[@]}" --approve=tty -- echo publish now
expect_in "$T/audit.jsonl" '"approval.refused"' "audit has approval.refused"

# warden approve ID at a terminal shows what the id stands for and asks
# before anything is recorded: the id is what the model hands the human
approve_tty() { # ANSWER ARG...: warden approve under a pty (stdin the terminal)
	local answer=$1
	shift
	pty_answer tty "$answer" "$WARDEN" approve "$@"
}
"$WARDEN" run "${P[@]}" -- echo publish "$(printf 'x\033[2Jy')" 2>"$T/err"
id3=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1)
approve_tty n "${id3:0:12}" >"$T/tty" 2>&1
rc=$?
[ $rc = 1 ] && ok "approve at a terminal, answered no: exit 1" || not_ok "approve answered no: exit $rc"
expect_in "$T/tty" "'echo' 'publish' 'x\\x1b[2Jy'" "approve: shows the argv the id stands for, escaped, before granting"
expect_in "$T/tty" "nothing recorded" "approve: says nothing was recorded"
expect_rc 123 "... and the command still pauses" "$WARDEN" run "${P[@]}" -- echo publish "$(printf 'x\033[2Jy')"
approve_tty y "${id3:0:12}" >"$T/tty" 2>&1
rc=$?
[ $rc = 0 ] && ok "approve at a terminal, answered yes: exit 0" || not_ok "approve answered yes: exit $rc"
expect_rc 0 "... and the command runs once" "$WARDEN" run "${P[@]}" -- echo publish "$(printf 'x\033[2Jy')"
expect_not_in "$T/tty" "scrolled off" "approve: a command that fits the screen gets no scroll note"
# A model can make the command longer than the screen: the argv line
# scrolls off and only the reason is left above the question.  And a tab
# in a word, shown raw, reads as spaces: another file name.
# (a hundred words of 200 bytes: a word longer than a path is refused)
long=()
for i in $(seq 100); do long+=("$(head -c 200 /dev/zero | tr '\0' z)"); done
"$WARDEN" run "${P[@]}" -- echo publish "$(printf 'a\tb')" "${long[@]}" 2>"$T/err"
id7=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1)
approve_tty n "$id7" >"$T/tty" 2>&1
expect_in "$T/tty" "its start has scrolled off: scroll back and read it all" "approve: a command longer than the screen is said to have scrolled off, by the question"
expect_in "$T/tty" "'a\\x09b'" "approve: a tab in a word is shown as \\x09"
pty_answer null n "$WARDEN" run "${P[@]}" --approve=tty -- echo publish "${long[@]}" >"$T/tty" 2>&1
expect_in "$T/tty" "its start has scrolled off" "--approve=tty: the same note by its question"
# The id covers the environment the request set as well (git reads
# XDG_CONFIG_HOME/git/config, where url.*.pushInsteadOf sends a push
# elsewhere): two pauses that differ only in it looked the same, and the
# human approved the one the model named without seeing what it sets
"$WARDEN" run "${P[@]}" --setenv "XDG_CONFIG_HOME=/workspace/$(printf 'c\033[2Kfg')" -- echo publish env 2>"$T/err"
id5=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1)
approve_tty n "$id5" >"$T/tty" 2>&1
expect_in "$T/tty" "env:" "approve: shows the environment the id covers"
expect_in "$T/tty" "'XDG_CONFIG_HOME=/workspace/c\\x1b[2Kfg'" "... each variable and its value, escaped"
expect_rc 0 "approve without a terminal" "$WARDEN" approve "$id5" </dev/null
expect_in "$T/out" "XDG_CONFIG_HOME=/workspace/c" "... its summary shows the environment too"
"$WARDEN" run "${P[@]}" --setenv HOME=/workspace -- echo publish env 2>"$T/err"
id6=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1)
expect_rc 0 "approve --json" "$WARDEN" approve --json "$id6" </dev/null
expect_in "$T/out" '"env":["HOME=/workspace"]' "... its object has the environment"
"$WARDEN" run "${P[@]}" -- echo publish again 2>"$T/err"
id4=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1)
approve_tty n --yes "$id4" >"$T/tty" 2>&1
rc=$?
[ $rc = 0 ] && ok "approve --yes at a terminal grants without asking: exit 0" || not_ok "approve --yes: exit $rc"
expect_not_in "$T/tty" "y/N" "... no question asked"
expect_rc 0 "... and the command runs" "$WARDEN" run "${P[@]}" -- echo publish again
finish
