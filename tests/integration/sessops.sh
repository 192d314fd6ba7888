#!/usr/bin/env bash
# Working with a session: warden logs (its detached commands, their
# output escaped for the terminal, --follow, --tail, --raw, --json; a log
# the sandbox swapped for a link or a FIFO), exec --detach reporting a
# command that dies at start-up, monitor.log naming its program escaped, warden snapshot ls / rm, warden cp in and
# out (a cow session's upper layer and merged view; "..", protected paths,
# links on either side, a FIFO, set-id bits, the audit trail).
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"

export WARDEN_STATE_DIR=$T/state
at_exit 'for s in $("$WARDEN" ls --json 2>/dev/null | python3 -c "import json,sys; [print(x[\"id\"]) for x in json.load(sys.stdin)]" 2>/dev/null); do "$WARDEN" rm "$s" >/dev/null 2>&1; done'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
ESC=$(printf '\033')
BEL=$(printf '\007')

w create s --workspace "$WS"
expect_rc 0 "create s"

# ---- a detached command whose output drives a terminal, waiting for a file
w exec s --detach -- /bin/sh -c 'printf "start\033]0;owned\007\033[2Jx\n"; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo done; exit 3' "arg$ESC]0;argv$BEL"
expect_rc 0 "exec --detach of a command that keeps running"
w logs s
expect_rc 0 "logs lists the detached commands"
expect_out '^1 +running +- ' "the list: id 1, running, no status yet"
check "the list's command is escaped (no ESC or BEL byte reaches the terminal)" \
	bash -c "! grep -q -e '$ESC' -e '$BEL' '$OUT'"
expect_out 'arg\\x1b\]0;argv\\x07' "the list shows the escapes visibly"
w logs s --json
check "logs --json: id, state, status null, argv" test \
	"$(json_get '[j[0]["id"], j[0]["state"], j[0]["status"], j[0]["argv"][0]]')" = '[1, "running", null, "/bin/sh"]'
check "logs --json: the argv's ESC is JSON-escaped" bash -c "! grep -q '$ESC' '$OUT'"

# the output, escaped
w logs s 1
expect_rc 0 "logs s 1"
expect_out '^start\\x1b\]0;owned\\x07\\x1b\[2Jx$' "the output is escaped: ESC and BEL as \\xNN"
check "no ESC byte of the output reaches stdout" bash -c "! grep -q '$ESC' '$OUT'"
w logs s 1 --raw
expect_rc 0 "--raw to a file"
check "--raw writes the bytes as they are" grep -q "$ESC\]0;owned$BEL" "$OUT"
script -qec "'$WARDEN' logs s 1 --raw" /dev/null >"$OUT" 2>&1 </dev/null
RC=$?
expect_rc 125 "--raw with stdout on a terminal is refused"
check "... and prints no raw ESC of the output" bash -c "! grep -q '$ESC\]0;owned' '$OUT'"

# --follow until the command ends
"$WARDEN" logs s 1 --follow >"$T/follow" 2>"$T/follow.err" &
fpid=$!
wait_until "$(scaled 10)" grep -q '^start' "$T/follow"
check "--follow prints what is there" grep -q '^start' "$T/follow"
touch "$WS/go"
following() { kill -0 "$fpid" 2>/dev/null; }
if wait_until "$(scaled 20)" bash -c "! kill -0 $fpid 2>/dev/null"; then
	wait "$fpid"
	frc=$?
	check "--follow ends with the command, status 0 (was $frc)" test "$frc" = 0
	check "--follow printed the rest" grep -q '^done$' "$T/follow"
else
	kill "$fpid"
	not_ok "--follow did not end when the command did"
fi
w logs s --json
check "logs --json after the end: exited, status 3" test \
	"$(json_get '[j[0]["state"], j[0]["status"]]')" = '["exited", 3]'
w logs s 1 --tail 1
expect_rc 0 "--tail 1"
check "--tail 1 is the last line only" test "$(cat "$OUT")" = done
w logs s 1 -n 0
check "--tail 0 prints nothing" test ! -s "$OUT"

# ---- bad input: 125, naming what is wrong
w logs s 99
expect_rc 125 "an unknown command id"
expect_out 'no detached command 99' "... named" "$ERR"
w logs s x
expect_rc 125 "ID not a number"
expect_out "ID: invalid value 'x'" "... named" "$ERR"
w logs s --tail 3
expect_rc 125 "--tail without an ID"
w logs s 1 --tail -1
expect_rc 125 "--tail -1"
expect_out '\-\-tail' "... names --tail" "$ERR"
w logs nosuch
expect_rc 125 "an unknown session"
w logs s 1 --bogus
expect_rc 125 "an unknown option"

# ---- the log is the sandbox's file: a link or a FIFO is not followed
w exec s -- /bin/sh -c 'rm -f $HOME/.warden/detached-1.log; ln -s /etc/shadow $HOME/.warden/detached-1.log'
expect_rc 0 "the sandbox swaps its log for a link to /etc/shadow"
w logs s 1
expect_rc 125 "a log that is a link is refused"
check "... and nothing of the host's /etc/shadow is printed" bash -c "! grep -q '^root:' '$OUT'"
w exec s -- /bin/sh -c 'rm -f $HOME/.warden/detached-1.log; mkfifo $HOME/.warden/detached-1.log'
timeout "$(scaled 20)" "$WARDEN" logs s 1 >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 125 "a log that is a FIFO is refused, without hanging"

# ---- a detached command that dies at start-up is reported
port=$(free_port)
w exec s --detach -- python3 -m http.server "$port" --bind 127.0.0.1
expect_rc 125 "exec --detach of a server refused its port (no --allow-port): 125"
expect_out 'ended at once with status 1 \(warden logs s 2\)' "... with the command and where its output is" "$ERR"
expect_out 'Error' "... and the last line of its output" "$ERR"
# one that fails half a second in (a server's start-up): past the 150 ms
# exec --detach used to wait, inside the grace period it waits now
w exec s --detach -- /bin/sh -c 'sleep 0.5; echo "cannot bind: port refused" >&2; exit 4'
expect_rc 125 "exec --detach of a command that fails 0.5 s after start-up: 125"
expect_out 'status 4 .*cannot bind: port refused' "... with its status and last line" "$ERR"
w exec s --detach -- nosuchprogram
expect_rc 125 "exec --detach of a program not found: 125"
# the program a model named reaches the monitor's log, which a human
# reads with cat: a screen clear, a newline forging a line of its own, a
# right-to-left override, all shown escaped
RLO=$(printf '\342\200\256')
w exec s --detach -- "/nope/x$ESC[2J
2026-01-01T00:00:00Z info: FORGED ${RLO}gpj.exe"
expect_rc 125 "exec --detach of a program whose name holds control bytes: 125"
sid=$("$WARDEN" ls --json | python3 -c 'import json,sys; print([x["id"] for x in json.load(sys.stdin) if x["name"] == "s"][0])')
mlog=$WARDEN_STATE_DIR/sandboxes/$sid/monitor.log
expect_out '^[-0-9T:]+Z info: detached command [0-9]+ \(/nope/x\\x1b\[2J\\x0a2026-01-01T00:00:00Z info: FORGED <U\+202E>gpj\.exe\) ended: status 127$' \
	"monitor.log names the program, escaped, on its own line" "$mlog"
check "... no ESC byte, no right-to-left override reaches it" \
	bash -c "! grep -q -e '$ESC' -e '$RLO' '$mlog'"
check "... and no line is forged" bash -c "! grep -q '^2026-01-01T00:00:00Z' '$mlog'"
w exec s --detach -- sleep 600
expect_rc 0 "a command still running after the grace period: 0"

# ---- an argument, a variable or a working directory that is not UTF-8
# crosses to the session's monitor as the bytes it is (it failed as "bad
# request": the JSON escape of such a byte is one jansson refuses alone)
printf 'ff-content\n' >"$WS/$(printf 'n\377')"
w exec s -- cat "$(printf 'n\377')"
expect_rc 0 "exec of cat naming a file whose name is not UTF-8: 0"
expect_out '^ff-content$' "... and the file is read" "$OUT"
w exec s --setenv "$(printf 'V=a\376b')" -- printenv V
check "... a variable's value that is not UTF-8 arrives byte for byte" \
	test "$(od -An -tx1 "$OUT" | tr -d ' \n')" = "61fe620a"

# ---- snapshots: ls and rm
w exec s -- /bin/sh -c 'echo one > $HOME/v.txt'
w snapshot s t1
expect_rc 0 "snapshot s t1"
w snapshot s t2
w snapshot ls s --json
expect_rc 0 "snapshot ls s --json"
check "snapshot ls --json: both, with their names and sizes" test \
	"$(json_get '[(x["snapshot"], x["tag"], x["bytes"] > 0) for x in j]')" = '[["s@t1", "t1", true], ["s@t2", "t2", true]]'
w snapshot ls
expect_out '^s@t1 +[0-9]+s +[0-9.]+ (B|KiB|MiB|GiB)$' "snapshot ls (every session): a table"
w create s2 --from s@t1
expect_rc 0 "create s2 --from s@t1"
w snapshot rm s@t1
expect_rc 0 "snapshot rm s@t1 (s2 holds its own copy)"
w snapshot ls s --json
check "t1 is gone, t2 stays" test "$(json_get '[x["tag"] for x in j]')" = '["t2"]'
check "its files are gone" test ! -e "$WARDEN_STATE_DIR/sandboxes/$(json_get 'j[0]["session"]')/snapshots/t1"
w exec s2 -- cat /home/sandbox/v.txt
expect_out '^one$' "the session made from it still has the files"
w snapshot rm s@t1
expect_rc 125 "rm of a snapshot that is gone"
expect_out "no snapshot 's@t1'" "... named" "$ERR"
w snapshot rm 's@../t2'
expect_rc 125 "a tag with .. is refused"
w snapshot ls s --json
check "... and t2 is untouched" test "$(json_get '[x["tag"] for x in j]')" = '["t2"]'
w snapshot rm s
expect_rc 125 "SANDBOX without @TAG"
w snapshot ls nosuch
expect_rc 125 "snapshot ls of an unknown session"
w snapshot rm s@t2 --json
check "snapshot rm --json" test "$(json_get 'j["removed"]')" = true

# ---- warden cp, into and out of a cow session
CW=$T/cw
mkdir -p "$CW" "$T/src/sub" "$T/dst"
echo base >"$CW/base.txt"
git -C "$CW" init -q 2>/dev/null || mkdir -p "$CW/.git/hooks"
echo hello >"$T/src/a.txt"
printf '#!/bin/sh\necho x\n' >"$T/src/sub/run.sh"
chmod 4755 "$T/src/sub/run.sh"
w create c --workspace "$CW" --workspace-mode cow
expect_rc 0 "create a cow session"
w cp --json --audit "$T/audit.log" "$T/src" c:/workspace
expect_rc 0 "cp HOST_DIR SESSION:/workspace"
check "cp --json: 2 files, 2 directories, 23 bytes" test \
	"$(json_get '[j["files"], j["dirs"], j["bytes"]]')" = '[2, 2, 23]'
w exec c -- stat -c %a /workspace/src/sub/run.sh
expect_out '^755$' "the mode is kept, the set-uid bit is not"
w exec c -- cat /workspace/src/a.txt
expect_out '^hello$' "the session sees the copy"
check "it landed in the upper layer, not in the real directory" test ! -e "$CW/src"
w diff c --stat
expect_out 'src/a\.txt' "warden diff shows the copied files"
check "cp --audit recorded the copy and its outcome" bash -c \
	"grep -q '\"event\":\"copy\",\"direction\":\"in\"' '$T/audit.log' && grep -q '\"event\":\"copied\".*\"files\":2,\"dirs\":2,\"bytes\":23' '$T/audit.log'"
w audit verify "$T/audit.log"
expect_rc 0 "the audit trail verifies"

w exec c -- /bin/sh -c 'echo changed > /workspace/base.txt; chmod 750 /workspace/base.txt'
w cp c:base.txt "$T/dst/"
expect_rc 0 "cp SESSION:FILE HOST_DIR/"
check "a copy out reads the merged view (the session's change)" test "$(cat "$T/dst/base.txt")" = changed
check "... with its permission bits" test "$(stat -c %a "$T/dst/base.txt")" = 750
check "... and the real directory is unchanged" test "$(cat "$CW/base.txt")" = base
w cp c:src "$T/dst/tree"
expect_rc 0 "cp SESSION:DIR HOST_NEWNAME"
check "the tree came out whole" test "$(cat "$T/dst/tree/a.txt")$(stat -c %a "$T/dst/tree/sub/run.sh")" = hello755

# refusals: 125, the path named, nothing written
before=$("$WARDEN" diff c --stat 2>&1)
w cp "$T/src/a.txt" c:../escape.txt
expect_rc 125 "cp to SESSION:../x (outside the workspace)"
expect_out "'\.\./escape\.txt'" "... names the path" "$ERR"
check "... and nothing was written beside the workspace" test ! -e "$T/escape.txt"
w cp "$T/src/a.txt" c:.git/hooks/x
expect_rc 125 "cp to .git/hooks/x (protected)"
expect_out "'\.git/hooks/x' is protected" "... names the path" "$ERR"
w cp "$T/src" c:.vscode
expect_rc 125 "cp a directory to .vscode (protected)"
check "the refusals left the change set as it was" test "$("$WARDEN" diff c --stat 2>&1)" = "$before"
w exec c -- ln -s /etc/shadow /workspace/shadow
w cp c:shadow "$T/dst/"
expect_rc 125 "cp out of a symlink to /etc/shadow in the session"
expect_out "'shadow' of the session is a symbolic link" "... named" "$ERR"
check "... and nothing of it reached the host" test ! -e "$T/dst/shadow"
w cp c:/etc/shadow "$T/dst/"
expect_rc 125 "cp out of SESSION:/etc/shadow (outside the workspace)"
w exec c -- /bin/sh -c 'mkdir -p /workspace/t/d && echo x > /workspace/t/d/f && ln -s /etc /workspace/t/etc'
w cp c:t "$T/dst/t"
expect_rc 125 "a tree holding a link is refused"
check "... before anything is written" test ! -e "$T/dst/t"
w exec c -- mkfifo /workspace/fifo
timeout "$(scaled 20)" "$WARDEN" cp c:fifo "$T/dst/" >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 125 "a FIFO is refused, without hanging"
w exec c -- truncate -s 300M /workspace/big
w cp c:big "$T/dst/"
expect_rc 125 "a file over 256 MiB (sparse) is refused on the way out"
expect_out "^warden: cp: 'big' of the session is larger than 256 MiB" "... named" "$ERR"
check "... and nothing was written" test ! -e "$T/dst/big"
truncate -s 300M "$T/big"
w cp "$T/big" c:big2
expect_rc 125 "a file over 256 MiB is refused on the way in"
ln -s /etc/passwd "$T/hostlink"
w cp "$T/hostlink" c:hl
expect_rc 125 "a host symlink as the source is refused (not followed)"
ln -s "$T/elsewhere" "$T/linkdir"
mkdir "$T/elsewhere"
w cp c:base.txt "$T/linkdir"
expect_rc 125 "a host symlink as the destination is refused"
check "... and nothing was written through it" test -z "$(ls -A "$T/elsewhere")"
w cp "$T/src/a.txt" "$T/dst/x"
expect_rc 125 "no SESSION:PATH on either side"
w cp c:a c:b
expect_rc 125 "SESSION:PATH on both sides"
w cp nosuch:a "$T/dst/"
expect_rc 125 "an unknown session"

# a direct session: the copy is the workspace's file at once
w cp "$T/src/a.txt" s:copied.txt
expect_rc 0 "cp into a direct session"
check "... lands in its workspace" test "$(cat "$WS/copied.txt")" = hello

# ---- a stopped session: its detached commands ended with it
w stop s
w logs s
expect_rc 125 "logs of a stopped session"
expect_out 'not running' "... says why" "$ERR"
w cp "$T/src/a.txt" s:again.txt
expect_rc 125 "cp into a stopped session"

finish
