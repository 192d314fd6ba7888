#!/usr/bin/env bash
# What is applied is what was reviewed (docs/threat-model.md), through the CLI
# with real sessions, overlayfs, cgroup freezer, FIFOs and hard links:
#   - a process left running in the session (exec --detach) rewrites a file
#     in a loop: the diff freezes it, so apply writes what the diff showed;
#     apply --expect refuses a set that changed since (a command thawed it)
#   - a FIFO swapped in between warden's look and its read: no hang, diff
#     or apply, and nothing applied
#   - a file rewritten between the change set and the copy: refused
#   - warden killed during apply: no temporary file left in the project
#   - 30 hard links to one file: one content in the diff, one inode on the
#     host; a sparse file larger than the disk: refused
# The stopped-session cases preload swap-preload.so (SWAP_PRELOAD) into the
# CLI, which then reads the upper layer itself, to make a race happen at a
# chosen open instead of by luck.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	skip "no overlayfs in this kernel"
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"
SWAP_PRELOAD=${SWAP_PRELOAD:?set SWAP_PRELOAD to the built swap-preload.so}
# an ASan build's runtime must come first in the preload list
asan=$(ldd "$WARDEN" 2>/dev/null | awk '/libasan/ { print $3 }')
[ -n "$asan" ] && SWAP_PRELOAD=$asan:$SWAP_PRELOAD
command -v strace >/dev/null || skip "no strace (scripts/deps.sh installs it)"

export WARDEN_STATE_DIR=$T/state
at_exit 'for s in rw off hl; do "$WARDEN" rm "$s" >/dev/null 2>&1; done'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
export WD_SWAP_HOST=$WS
no_temps() { [ -z "$(find "$WS" -name '.warden-*' -print -quit)" ]; }

# ---- 1. the racing rewriter: a detached process in the session
printf 'orig\n' >"$WS/f.txt"
mkdir -m 755 "$T/tick"
w create rw --workspace "$WS" --workspace-mode cow --bind "$T/tick:/tick" --timeout 120
expect_rc 0 "create a cow session"
w exec rw --detach -- /bin/sh -c \
	'i=0; while :; do i=$((i+1)); echo "v$i" >f.txt; echo $i >/tick/n.new; mv /tick/n.new /tick/n; done'
expect_rc 0 "a rewriter left running in the session (exec --detach)"
wait_until 60 test -s "$T/tick/n" || not_ok "the rewriter never ran"
tick() { cat "$T/tick/n" 2>/dev/null; }

w diff rw --json
expect_rc 0 "diff --json while the rewriter runs"
cp "$OUT" "$T/diff1.json"
d1=$(json_get 'j["digest"]' "$T/diff1.json")
h1=$(json_get '[f["new_sha256"] for f in j["files"] if f["path"]=="f.txt"][0]' "$T/diff1.json")
check "diff --json prints the change set's digest" bash -c "[[ '$d1' =~ ^[0-9a-f]{64}$ ]]"
# The rewriter had its chance between the diff and the apply (on the old
# code it ran on: waiting for its counter to move made that sure); frozen,
# its counter stays.
t0=$(tick)
if wait_until 3 bash -c "[ \"\$(cat '$T/tick/n' 2>/dev/null)\" != '$t0' ]"; then
	not_ok "the session ran on after the diff (counter $t0 -> $(tick))"
else
	ok "the session is frozen from the diff on (counter stays at $t0)"
fi
w diff rw
check "the human diff names the same digest in its header" grep -qx "change set $d1" "$OUT"
w apply rw
expect_rc 0 "apply without --expect"
check "what was applied is what the diff showed (sha256 $h1)" test "$(sha "$WS/f.txt")" = "$h1"

# --expect: a command thaws the session, the rewriter moves on; the digest
# of the earlier review no longer matches, and nothing is written.
w diff rw --json
d2=$(json_get 'j["digest"]')
before=$(sha "$WS/f.txt")
w exec rw -- /bin/sh -c 'a=$(cat f.txt); while [ "$(cat f.txt)" = "$a" ]; do :; done'
expect_rc 0 "a command thaws the session (the rewriter moved on)"
w apply rw --expect "$d2"
expect_rc 125 "apply --expect of a set that changed since: refused"
expect_out 'not the one reviewed' "the refusal says the set is not the one reviewed" "$ERR"
check "refused: the host's file is untouched" test "$(sha "$WS/f.txt")" = "$before"
check "refused: no temporary file in the project" no_temps
w diff rw --json
d3=$(json_get 'j["digest"]')
h3=$(json_get '[f["new_sha256"] for f in j["files"] if f["path"]=="f.txt"][0]')
w apply rw --expect "$d3"
expect_rc 0 "apply --expect of the set just reviewed"
check "--expect: what was applied is what the diff showed" test "$(sha "$WS/f.txt")" = "$h3"
w apply rw --expect nothex
expect_rc 125 "apply --expect with a bad digest: 125"
expect_out 'expect .*not a change set digest' "the error names --expect" "$ERR"
w stop rw
w rm rw

# ---- 2-4. a stopped session: the CLI reads the upper layer; the preload
# swaps or rewrites a file at a chosen open
rm -f "$WS/f.txt"
printf 'a file on the host\n' >"$WS/tc"
w create off --workspace "$WS" --workspace-mode cow --timeout 120
expect_rc 0 "create a second cow session"
w exec off -- /bin/sh -c 'for f in swap1 swap2 rewr k1 k2 k3 k4 k5; do head -c 4096 /dev/zero | tr "\0" x >$f.txt; done &&
	rm tc && mkdir tc && echo inside >tc/in.txt'
expect_rc 0 "the session writes its files (and replaces the file tc by a directory)"
w stop off
expect_rc 0 "stop the session (diff and apply run in the CLI now)"

# a FIFO swapped in after the change set saw a regular file, before apply
# copies it (the 2nd open): apply must neither hang nor apply anything
WD_SWAP_NAME=swap1.txt WD_SWAP_AT=2 WD_SWAP_DO=fifo LD_PRELOAD=$SWAP_PRELOAD \
	timeout 120 "$WARDEN" apply off swap1.txt >"$OUT" 2>"$ERR" </dev/null
RC=$?
check "FIFO swapped in before the copy: apply does not hang" test "$RC" != 124
expect_rc 125 "FIFO swapped in before the copy: apply refuses"
check "FIFO: nothing applied" test ! -e "$WS/swap1.txt"
check "FIFO: no temporary file in the project" no_temps
# ... and while the diff reads it (the 1st open): listed, never read
WD_SWAP_NAME=swap2.txt WD_SWAP_AT=1 WD_SWAP_DO=fifo LD_PRELOAD=$SWAP_PRELOAD \
	timeout 120 "$WARDEN" diff off --name-status >"$OUT" 2>"$ERR" </dev/null
RC=$?
check "FIFO swapped in while diff hashes: no hang" test "$RC" != 124
expect_rc 0 "FIFO swapped in while diff hashes: the diff works"
expect_out 'swap2.txt.*never applied' "the FIFO is listed as never applied"
timeout 120 "$WARDEN" diff off >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "a later diff of the session works (no hang on the FIFOs)"

# a file rewritten (same size) between the change set and the copy
WD_SWAP_NAME=rewr.txt WD_SWAP_AT=2 WD_SWAP_DO=rewrite LD_PRELOAD=$SWAP_PRELOAD \
	timeout 120 "$WARDEN" apply off rewr.txt >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 125 "rewritten after the change set was read: apply refuses"
expect_out 'rewr.txt changed in the sandbox since' "the refusal names the file" "$ERR"
check "rewritten: nothing applied" test ! -e "$WS/rewr.txt"
check "rewritten: no temporary file in the project" no_temps

# the same for a file written only after the deletions (tc/in.txt: its
# directory is the host's file tc until then): checked before anything
WD_SWAP_NAME=in.txt WD_SWAP_AT=2 WD_SWAP_DO=rewrite LD_PRELOAD=$SWAP_PRELOAD \
	timeout 120 "$WARDEN" apply off tc >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 125 "rewritten below a file replaced by a directory: apply refuses"
check "... and the host's file tc is still there (nothing deleted)" test -f "$WS/tc"

# warden killed in the middle of an apply (at its syncfs: every content
# written, none linked in yet): nothing of it stays in the project
timeout 120 strace -f -o /dev/null -e trace=syncfs -e inject=syncfs:signal=SIGKILL:when=1 \
	"$WARDEN" apply off k1.txt k2.txt k3.txt k4.txt k5.txt >"$OUT" 2>"$ERR" </dev/null
RC=$?
check "strace killed warden during the apply (status $RC)" test "$RC" != 0
check "killed during apply: no temporary file in the project" no_temps
check "killed during apply: nothing applied" bash -c "! ls '$WS'/k?.txt 2>/dev/null"
w apply off k1.txt k2.txt k3.txt k4.txt k5.txt
expect_rc 0 "the same apply, not killed"
check "all five applied" test "$(ls "$WS"/k?.txt | wc -l)" = 5
w rm off
rm -f "$WS"/*.txt

# ---- 5. hard links: one change's content, one inode, bytes bounded
w create hl --workspace "$WS" --workspace-mode cow --disk 64M --timeout 120
expect_rc 0 "create a session with a 64 MB disk"
w exec hl -- /bin/sh -c 'head -c 1500000 /dev/urandom | od -An -tx1 | head -c 2000000 >big.txt &&
	for i in $(seq 1 30); do ln big.txt link$i.txt; done'
expect_rc 0 "30 hard links to a 2 MB text file in the session"
w diff hl --json
expect_rc 0 "diff --json of the links"
cp "$OUT" "$T/hl.json"
check "diff --json: the bytes counted once ($(json_get 'j["bytes"]'))" \
	test "$(json_get 'j["bytes"]')" -le 2100000
check "diff --json: 30 changes are links to big.txt" \
	test "$(json_get 'sum(1 for f in j["files"] if f.get("link_to")=="big.txt")')" = 30
w diff hl
check "the text diff shows the content once ($(stat -c %s "$OUT") bytes)" \
	test "$(stat -c %s "$OUT")" -lt 6000000
w apply hl
expect_rc 0 "apply the links"
check "the host has 31 names" test "$(ls "$WS"/*.txt | wc -l)" = 31
check "... of one inode (written once, linked)" \
	test "$(stat -c %i "$WS"/*.txt | sort -u | wc -l)" = 1
check "... with the reviewed content" \
	test "$(sha "$WS/link30.txt")" = "$(json_get '[f["new_sha256"] for f in j["files"] if f["path"]=="big.txt"][0]' "$T/hl.json")"
# a sparse file claims more bytes than the disk holds: writing it out
# would fill the host's disk with zeros
w exec hl -- /bin/sh -c 'truncate -s 200M sparse.bin'
expect_rc 0 "a 200 MB sparse file on a 64 MB disk"
w apply hl
expect_rc 125 "apply of more bytes than the disk holds: refused"
expect_out 'more than the sandbox.s disk holds' "the refusal says why" "$ERR"
check "sparse: nothing applied" test ! -e "$WS/sparse.bin"
check "sparse: no temporary file in the project" no_temps
w rm hl

finish
