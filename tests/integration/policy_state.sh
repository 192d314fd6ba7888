#!/usr/bin/env bash
# An approval covers the state of the files the command reads, not only its
# words: the human reads build.py and approves `cat build.py` (think
# `python3 build.py`); the model rewrites build.py before the retry (another
# allowed command, same size, its old mtime put back).  The retry pauses
# again, and the audit says the state differs.  In a cow session the change
# lives in the session's overlay, and in its home directory (a
# sitecustomize.py under ~/.local), which the host directory never shows.
. "$(dirname "$0")/policy_lib.sh"
need_run
cd "$WS"
cat >"$T/p.json" <<'J'
{"version": 1, "programs": {"cat": {"approve": [["build.py"]]},
 "python3": {}}}
J
P=(--policy "$T/p.json" --audit "$T/audit.jsonl")
printf 'print("reviewed")\n' >build.py
# rewrite NAME TEXT: as the model would (an allowed command in the
# sandbox), the same size, the old modification time put back
rewrite='import os,sys; p=sys.argv[1]; st=os.stat(p); open(p,"w").write(sys.argv[2]); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))'
pause_id() { sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$T/err" | head -n 1; }

# ---- a one-shot run in the workspace ----
expect_rc 123 "one-shot: cat build.py pauses" "$WARDEN" run "${P[@]}" -- cat build.py
id=$(pause_id)
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["state"]; assert s["complete"] and s["entries"] >= 1, s' \
	"$WARDEN_STATE_DIR/pending/$id.json" && ok "the pending record says what state it covers" ||
	not_ok "the pending record's state"
# at a terminal the human is told what else the approval covers
pty_answer tty n "$WARDEN" approve "$id" >"$T/tty" 2>&1
expect_in "$T/tty" "state:     the files it can read as they are now ($(find "$WS" -mindepth 1 | wc -l) entries)" \
	"approve at a terminal: says the approval covers the files as they are, with their count"
expect_rc 0 "approved" "$WARDEN" approve --yes "$id"
expect_rc 0 "... the retry with nothing changed runs" "$WARDEN" run "${P[@]}" -- cat build.py
expect_in "$T/out" 'print("reviewed")' "... and printed what was reviewed"
expect_rc 123 "it pauses again (single use)" "$WARDEN" run "${P[@]}" -- cat build.py
id=$(pause_id)
expect_rc 0 "approved again" "$WARDEN" approve --yes "$id"
expect_rc 0 "the model rewrites build.py, same size, old mtime" \
	"$WARDEN" run "${P[@]}" -- python3 -c "$rewrite" build.py 'print("rewrite!!")'
[ "$(stat -c %s build.py)" = 18 ] && ok "... the same size" || not_ok "size changed"
expect_rc 123 "the retry after the rewrite pauses again" "$WARDEN" run "${P[@]}" -- cat build.py
expect_not_in "$T/out" 'rewrite!' "... and nothing the human did not read ran"
expect_in "$T/audit.jsonl" 'they differ in state (a file the command can read changed' \
	"the audit says the approval does not cover it: the state differs"

# ---- a writable --bind: the command reads it as it reads the workspace ----
mkdir -p "$T/lib"
printf 'x = 1\n' >"$T/lib/helper.py"
B=(--bind "$T/lib:/home/sandbox/lib")
expect_rc 123 "with a writable --bind: pauses" "$WARDEN" run "${P[@]}" "${B[@]}" -- cat build.py
id=$(pause_id)
expect_rc 0 "approved" "$WARDEN" approve --yes "$id"
expect_rc 0 "the model rewrites the bound helper.py (same size, old mtime)" \
	"$WARDEN" run "${P[@]}" "${B[@]}" -- python3 -c 'import os; p=os.path.expanduser("~/lib/helper.py"); st=os.stat(p); open(p,"w").write("x = 2\n"); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))'
expect_rc 123 "the retry pauses again: the bound tree changed" \
	"$WARDEN" run "${P[@]}" "${B[@]}" -- cat build.py

# ---- a cow session: the change lives in its overlay and its home ----
printf 'print("reviewed")\n' >build.py
S=pstate$$
# a process of the session whose command line holds TEXT: a python3 run
# in the session (the policy allows it) scans its /proc
running='import os, sys
me = str(os.getpid())
sys.exit(not any(p != me and sys.argv[1].encode() in open("/proc/%s/cmdline" % p, "rb").read()
                 for p in os.listdir("/proc") if p.isdigit()))'
# (a name, not a path: an argument outside the workspace is refused)
exists='import os, sys; sys.exit(not os.path.exists("/dev/shm/" + sys.argv[1]))'
# until_true CODE ARG / until_gone TEXT: wait for the event, at most 120 s
# (a bound on a failure only: each returns when the event happens)
until_true() {
	local end=$((SECONDS + 120))
	until "$WARDEN" exec "${P[@]}" "$S" -- python3 -c "$1" "$2" >/dev/null 2>&1; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.2
	done
}
until_gone() {
	local end=$((SECONDS + 120))
	while "$WARDEN" exec "${P[@]}" "$S" -- python3 -c "$running" "$1" >/dev/null 2>&1; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.2
	done
}
if "$WARDEN" create "$S" -w "$WS" --workspace-mode cow >"$T/out" 2>"$T/err" </dev/null; then
	trap '"$WARDEN" rm "$S" >/dev/null 2>&1; rm -rf "$T"' EXIT
	ok "cow session created"
	# an approval is bound to where it paused: a session keeps its own
	# home (a .gitconfig there redirects an approved push), so a pause in
	# a fresh sandbox is not spent in the session
	expect_rc 123 "one-shot pause" "$WARDEN" run "${P[@]}" -- cat build.py
	id=$(pause_id)
	expect_rc 0 "approved for the one-shot run" "$WARDEN" approve --yes "$id"
	expect_rc 123 "the same words in the session pause: another sandbox" \
		"$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	expect_in "$T/audit.jsonl" "they differ in state" "... the audit says the approval does not cover it"
	expect_rc 0 "... and the approval still covers the one-shot run" "$WARDEN" run "${P[@]}" -- cat build.py
	expect_rc 123 "session: cat build.py pauses" "$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	id=$(pause_id)
	expect_rc 0 "approved" "$WARDEN" approve --yes "$id"
	expect_rc 0 "... the retry with nothing changed runs" "$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	expect_rc 123 "pauses again" "$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	id=$(pause_id)
	python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["state"]["where"]; assert w.startswith("workspace (session "), w' \
		"$WARDEN_STATE_DIR/pending/$id.json" && ok "the pending record names the session the approval is for" ||
		not_ok "the pending record's state.where"
	id=$(pause_id)
	expect_rc 0 "approved again" "$WARDEN" approve --yes "$id"
	expect_rc 0 "the model rewrites build.py in the session (its overlay)" \
		"$WARDEN" exec "${P[@]}" "$S" -- python3 -c "$rewrite" build.py 'print("rewrite!!")'
	grep -q reviewed build.py && ok "... the host's build.py is unchanged (cow)" || not_ok "host file changed"
	expect_rc 123 "the retry pauses again: the session's view changed" \
		"$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	expect_not_in "$T/out" 'rewrite!' "... and nothing the human did not read ran"
	id=$(pause_id)
	expect_rc 0 "approved as it is now" "$WARDEN" approve --yes "$id"
	expect_rc 0 "the model writes ~/.local/lib/sitecustomize.py in the session's home" \
		"$WARDEN" exec "${P[@]}" "$S" -- python3 -c 'import os; d=os.path.expanduser("~/.local/lib"); os.makedirs(d, exist_ok=True); open(d+"/sitecustomize.py","w").write("x=1\n")'
	expect_rc 123 "the retry pauses again: the session's home changed" \
		"$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	# /dev/shm is the session's own and outlives a command: a
	# usercustomize.py that links there is code python runs (an attack
	# pass): covered as the home and /tmp are
	expect_rc 123 "pause" "$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	id=$(pause_id)
	expect_rc 0 "approved" "$WARDEN" approve --yes "$id"
	expect_rc 0 "the model writes /dev/shm/u.py in the session" \
		"$WARDEN" exec "${P[@]}" "$S" -- python3 -c 'open("/dev/shm/u.py", "w").write("pass\n")'
	expect_rc 123 "the retry pauses again: the session's /dev/shm changed" \
		"$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	# a detached command's output lands in ~/.warden/detached-N.log, in
	# the walked home: a link there from a usercustomize.py runs it, so it
	# counts as every file does (a running writer pauses approvals again)
	expect_rc 0 "a detached command writes a line and ends" "$WARDEN" exec "${P[@]}" --detach "$S" -- \
		python3 -c 'print("x = 1")'
	# (ended: a process still running would make the state unprintable,
	# below, and this is about the log)
	until_gone 'print("x = 1")' && ok "... it ended" || not_ok "the detached command did not end"
	expect_rc 123 "pause" "$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	id=$(pause_id)
	expect_rc 0 "approved" "$WARDEN" approve --yes "$id"
	expect_rc 0 "the model rewrites the detached command's log in place" \
		"$WARDEN" exec "${P[@]}" "$S" -- python3 -c 'import glob, os; p = glob.glob(os.path.expanduser("~/.warden/detached-*.log"))[0]; open(p, "r+").write("y")'
	expect_rc 123 "the retry pauses again: the log is walked in full" \
		"$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	# A write through a shared mapping moves a file's change time at the
	# page's first write fault only: once the page is dirty and writable,
	# later writes change its bytes and no time (until writeback, on ext4;
	# never, on tmpfs), and the print reads times.  An attack pass: a
	# detached process maps a file and dirties it, the human approves, the
	# process writes through the mapping again, the retry's print matched
	# and ran code nobody read.  While a
	# process other than pid 1 runs in the session, no approval covers
	# it.  The process is set off by a read (the access time of
	# /dev/shm/go1, then go2, moves; no other command can signal it:
	# Landlock scopes signals to each command), which the print does not
	# see, as the model would do it.
	expect_rc 0 "a detached command maps /dev/shm/m.py shared and waits" \
		"$WARDEN" exec "${P[@]}" --detach "$S" -- python3 -c 'import mmap, os, time
def made(n):
    open(n, "w").close(); return os.stat(n).st_atime_ns
def until_read(n, t):
    while os.stat(n).st_atime_ns == t: time.sleep(0.05)
f = open("/dev/shm/m.py", "w+b"); f.write(b"pass  #\n"); f.flush()
m = mmap.mmap(f.fileno(), 8)
m[7:8] = b"\n"  # the first write fault: the times move now, not later
t1, t2 = made("/dev/shm/go1"), made("/dev/shm/go2")
until_read("/dev/shm/go1", t1)
m[0:8] = b"EVIL=1\n\n"
until_read("/dev/shm/go2", t2)  # mapped-writer'
	until_true "$exists" go2 && ok "... it runs, the page dirty" || not_ok "the mapped writer did not start"
	expect_rc 123 "pause while it runs" "$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	id=$(pause_id)
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["state"]; assert not s["complete"] and "still running" in s["unseen"] and "bound" not in s, s' \
		"$WARDEN_STATE_DIR/pending/$id.json" && ok "the pending record says a process still runs there" ||
		not_ok "the pending state: $(head -c 400 "$WARDEN_STATE_DIR/pending/$id.json")"
	pty_answer tty n "$WARDEN" approve "$id" >"$T/tty" 2>&1
	expect_in "$T/tty" "a process still running in the sandbox" "approve at a terminal: says why no approval can cover it"
	expect_rc 0 "approved anyway" "$WARDEN" approve --yes "$id"
	expect_rc 0 "the model reads /dev/shm/go1: the process writes through its mapping" \
		"$WARDEN" exec "${P[@]}" "$S" -- python3 -c 'import sys, time
open("/dev/shm/go1").read()
for _ in range(2400):
    if b"EVIL" in open("/dev/shm/m.py", "rb").read(): sys.exit(0)
    time.sleep(0.05)
sys.exit(1)'
	expect_rc 123 "the retry pauses again: a process runs in the session" \
		"$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	expect_rc 0 "the model reads /dev/shm/go2: the process ends" "$WARDEN" exec "${P[@]}" "$S" -- \
		python3 -c 'open("/dev/shm/go2").read()'
	until_gone mapped-writer && ok "... it ended" || not_ok "the mapped writer did not end"
	expect_rc 123 "nothing runs there now: pause" "$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	id=$(pause_id)
	expect_rc 0 "approved" "$WARDEN" approve --yes "$id"
	expect_rc 0 "... and the retry runs" "$WARDEN" exec "${P[@]}" "$S" -- cat build.py
	"$WARDEN" rm "$S" >/dev/null 2>&1
else
	not_ok "cow session: $(head -c 300 "$T/err")"
fi

# ---- the walk is bounded: the model chooses how many files there are ----
# every pause and retry walks them on the host; past
# approvals.max_state_entries the walk stops and no approval can cover
# the state (fail closed), whatever the model makes
cat >"$T/pb.json" <<'J'
{"version": 1, "approvals": {"max_state_entries": 1000},
 "programs": {"cat": {"approve": [["build.py"]]}, "python3": {}}}
J
PB=(--policy "$T/pb.json" --audit "$T/audit.jsonl")
expect_rc 0 "the model makes 1,500 files in the workspace" "$WARDEN" run "${PB[@]}" -- \
	python3 -c 'import os; os.makedirs("many", exist_ok=True); [open("many/f%04d" % i, "w").close() for i in range(1500)]'
expect_rc 123 "bounded: cat build.py pauses" "$WARDEN" run "${PB[@]}" -- cat build.py
id=$(pause_id)
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["state"]; assert not s["complete"] and s["bound"] == 1000 and s["entries"] <= 1000, s' \
	"$WARDEN_STATE_DIR/pending/$id.json" && ok "the walk stopped at the bound and says so" ||
	not_ok "the bounded walk's state: $(head -c 400 "$WARDEN_STATE_DIR/pending/$id.json")"
pty_answer tty n "$WARDEN" approve "$id" >"$T/tty" 2>&1
expect_in "$T/tty" "state:     more than 1000 entries, the policy's approvals.max_state_entries: no approval can cover it" \
	"approve at a terminal: says no approval can cover a state past the bound"
expect_rc 0 "approved anyway" "$WARDEN" approve --yes "$id"
expect_rc 123 "the retry pauses again: a state past the bound matches nothing" \
	"$WARDEN" run "${PB[@]}" -- cat build.py
expect_not_in "$T/out" 'reviewed' "... and nothing ran"
rm -rf many
expect_rc 123 "below the bound again: pauses" "$WARDEN" run "${PB[@]}" -- cat build.py
id=$(pause_id)
expect_rc 0 "approved" "$WARDEN" approve --yes "$id"
expect_rc 0 "... and the retry runs" "$WARDEN" run "${PB[@]}" -- cat build.py
finish
