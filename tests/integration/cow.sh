#!/usr/bin/env bash
# Copy-on-write workspaces through the CLI, with real overlayfs,
# real processes and real files: an agent-like session (files, a venv with
# a local wheel installed by pip, git), diff in every form, apply, conflicts
# refused with nothing half-applied, protected paths in both modes,
# discard, the disk bound, a full host disk during apply, and bad input.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
command -v git >/dev/null || skip "git is missing"
[ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 for the sandbox"
/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || skip "no python3-venv (ensurepip)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	skip "no overlayfs in this kernel"
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"

export WARDEN_STATE_DIR=$T/state
at_exit 'for s in $("$WARDEN" ls --json 2>/dev/null | python3 -c "import json,sys; [print(x[\"id\"]) for x in json.load(sys.stdin)]" 2>/dev/null); do "$WARDEN" rm "$s" >/dev/null 2>&1; done'

# w ARGS...: warden ARGS; stdout, stderr, status in $OUT, $ERR, $RC.
w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# ---- a project: a git repository with a hook directory and .envrc
cd "$WS" || exit 1
git init -q . && git config user.email t@example.com && git config user.name t
printf 'def hello():\n    return "hello"\n' >lib.py
printf 'one\ntwo\nthree\n' >notes.txt
printf 'old\n' >old.txt
printf '#!/bin/sh\necho run\n' >run.sh
printf 'gone\n' >gone.txt
printf 'export A=1\n' >.envrc
git add -A && git commit -qm init
cd - >/dev/null || exit 1

# a local wheel, made by hand (a wheel is a zip with a dist-info)
python3 - "$T/dist" <<'EOF'
import os, sys, zipfile, hashlib, base64
d = sys.argv[1]; os.makedirs(d, exist_ok=True)
files = {"wdpkg/__init__.py": b"VALUE = 42\n",
         "wdpkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: wdpkg\nVersion: 1.0\n",
         "wdpkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = []
for n, b in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
    rec.append(f"{n},sha256={h},{len(b)}")
rec.append("wdpkg-1.0.dist-info/RECORD,,")
with zipfile.ZipFile(os.path.join(d, "wdpkg-1.0-py3-none-any.whl"), "w") as z:
    for n, b in files.items():
        z.writestr(n, b)
    z.writestr("wdpkg-1.0.dist-info/RECORD", "\n".join(rec) + "\n")
EOF

# ---- create a cow session
w create agent --workspace "$WS" --workspace-mode cow --ro-bind "$T/dist:/opt/dist" --timeout 120
expect_rc 0 "create a cow session"
id=$(cat "$OUT")
check "create printed a 16-digit id" grep -Eqx '[0-9a-f]{16}' "$OUT"

# ---- an agent's turn: edit, add, delete, rename, chmod, link, binary, dirs
w exec agent -- /bin/sh -c '
	set -e
	printf "def hello():\n    return \"hello, world\"\n" > lib.py
	printf "one\nTWO\nthree\nfour\n" > notes.txt
	mkdir -p src/pkg && printf "x = 1\n" > src/pkg/mod.py
	rm gone.txt
	mv old.txt renamed.txt
	chmod +x run.sh
	ln -s lib.py link.py
	head -c 300 /dev/urandom > blob.bin
	printf "\0\1\2" > zeros.bin'
expect_rc 0 "the agent's edits run in the session"
check "the real directory is untouched: lib.py" grep -q '"hello"$' "$WS/lib.py"
check "the real directory is untouched: gone.txt is there" test -f "$WS/gone.txt"
check "the real directory is untouched: no src/" test ! -e "$WS/src"

# ---- pip install of a local wheel into a venv, seen by a later exec
w exec agent -- /bin/sh -c 'python3 -m venv $HOME/venv && $HOME/venv/bin/pip install --no-index --no-cache-dir -q /opt/dist/wdpkg-1.0-py3-none-any.whl'
expect_rc 0 "pip installs a local wheel into a venv in the session's home"
w exec agent -- /bin/sh -c '$HOME/venv/bin/python -c "import wdpkg; print(wdpkg.VALUE)"'
expect_rc 0 "a later exec imports the installed package"
expect_out '^42$' "the package works"
w exec agent --command 'git status --short'
expect_rc 0 "git runs in the session"
expect_out '^ M lib.py' "git sees the agent's edit"
expect_out '^ D gone.txt' "git sees the deletion"

# ---- diff
w diff agent
expect_rc 0 "warden diff"
expect_out '^modified +lib.py$' "diff: modified file"
expect_out '^added +src/pkg/mod.py \(new file 0644\)$' "diff: added file in new directories, its mode in octal"
expect_out '^added +src/pkg/ \(new directory 0755\)$' "diff: a new directory with its mode"
expect_out '^deleted +gone.txt$' "diff: deleted file"
expect_out '^renamed +old.txt -> renamed.txt$' "diff: rename paired by content"
expect_out '^mode +run.sh 0644 -> 0755$' "diff: mode change"
expect_out '^added +link.py \(symlink -> lib.py\)$' "diff: symbolic link, with its target"
expect_out '^\+    return "hello, world"$' "diff: unified text hunk"
expect_out '^Binary files (/dev/null|a/zeros.bin) and b/zeros.bin differ$' "diff: binary file named, not dumped"
expect_out '^new file mode 120000$' "diff: the link as git shows it"
check "diff: binary bytes not dumped" bash -c "! grep -q \$'\\x01\\x02' '$OUT'"
# the patch applies with git itself, to a copy of the repository (git
# refuses any patch touching .git/, which `git status` in the session
# changed: the project's files only)
rm -rf "$T/copy" && cp -a "$WS" "$T/copy"
"$WARDEN" diff agent lib.py notes.txt src gone.txt old.txt run.sh link.py >"$T/patch" 2>&1
if (cd "$T/copy" && sed -n '/^diff --git/,$p' "$T/patch" | git apply 2>"$T/gitapply.err") &&
	cmp -s "$T/copy/notes.txt" <(printf 'one\nTWO\nthree\nfour\n') && test -x "$T/copy/run.sh" &&
	test -f "$T/copy/renamed.txt" && test ! -e "$T/copy/gone.txt"; then
	ok "git apply accepts warden's diff"
else
	not_ok "git apply refuses warden's diff: $(head -3 "$T/gitapply.err")"
fi
w diff agent --stat
expect_out '^ notes.txt +\| 3 \+\+-$' "diff --stat: git's counts"
expect_out 'files? changed, [0-9]+ insertions?\(\+\), [0-9]+ deletions?\(-\)' "diff --stat: totals"
w diff agent --json
expect_rc 0 "diff --json"
check "diff --json: sizes and SHA-256 of lib.py" test "$(json_get '[f for f in j["files"] if f["path"]=="lib.py"][0]["new_sha256"]')" = \
	"$(sha256sum <<<"$(printf 'def hello():\n    return "hello, world"')" | cut -d' ' -f1)"
check "diff --json: the binary flag" test "$(json_get '[f["binary"] for f in j["files"] if f["path"]=="zeros.bin"][0]')" = true
check "diff --json: the rename's old path" test "$(json_get '[f["old_path"] for f in j["files"] if f["status"]=="renamed"][0]')" = old.txt
w diff agent notes.txt
check "diff PATH: only that file" test "$(grep -c '^diff --git' "$OUT")" = 1

# ---- protected paths: read-only inside (cow)
w exec agent -- /bin/sh -c 'echo evil > .git/hooks/pre-commit'
check "cow: .git/hooks is read-only inside (EROFS)" bash -c "[ $RC != 0 ] && grep -q 'Read-only file system' '$ERR'"
w exec agent -- /bin/sh -c 'echo "[core] fsmonitor = evil" >> .git/config'
check "cow: .git/config is read-only inside" bash -c "[ $RC != 0 ] && grep -q 'Read-only' '$ERR'"
w exec agent -- /bin/sh -c 'rm -f .envrc; echo evil > .envrc'
check "cow: .envrc cannot be removed or rewritten" bash -c "[ $RC != 0 ]"

# ---- apply
w apply agent
expect_rc 0 "apply"
check "apply: lib.py written" grep -q 'hello, world' "$WS/lib.py"
check "apply: new file in new directories" test -f "$WS/src/pkg/mod.py"
check "apply: deletion" test ! -e "$WS/gone.txt"
check "apply: rename" bash -c "[ -f '$WS/renamed.txt' ] && [ ! -e '$WS/old.txt' ]"
check "apply: mode kept (run.sh executable)" test -x "$WS/run.sh"
check "apply: symlink" test "$(readlink "$WS/link.py")" = lib.py
check "apply: binary bytes" cmp -s "$WS/zeros.bin" <(printf '\0\1\2')
check "apply: no temporary file left" bash -c "! find '$WS' -name '.warden-*' | grep -q ."
check "apply: the venv stays in the session's home, not the project" test ! -e "$WS/venv"
w diff agent --name-status
check "after apply, the diff is empty" test ! -s "$OUT"

# ---- conflicts: the host edits a file, then the sandbox does
echo "host edit" >>"$WS/notes.txt"
w exec agent -- /bin/sh -c 'echo "agent edit" >> notes.txt; echo fine > other.txt'
w diff agent
expect_out 'notes.txt.*conflict' "diff marks the conflict"
before=$(sha256sum "$WS/notes.txt")
w apply agent
expect_rc 1 "apply with a conflict exits 1"
expect_out '^conflict +notes.txt' "apply names the conflict" "$ERR"
check "the host's edit is kept" grep -q 'host edit' "$WS/notes.txt"
check "nothing half-applied: notes.txt unchanged" test "$(sha256sum "$WS/notes.txt")" = "$before"
check "nothing half-applied: other.txt not written either" test ! -e "$WS/other.txt"
w apply agent other.txt
expect_rc 0 "apply PATH applies the change without a conflict"
check "other.txt applied" test "$(cat "$WS/other.txt")" = fine
w apply agent nowhere.txt
expect_rc 125 "apply of a path with no change: 125"

# ---- discard (live): the session sees the real files again
w discard agent notes.txt
expect_rc 0 "discard a path"
w exec agent -- cat notes.txt
expect_out 'host edit' "after discard the session sees the host's notes.txt"
w diff agent --name-status
check "nothing left to diff" test ! -s "$OUT"

# ---- stop keeps the files; start brings a new jail over them
w exec agent -- /bin/sh -c 'echo kept > kept.txt'
w stop agent
expect_rc 0 "stop"
w diff agent --name-status
expect_out '^added +kept.txt \(new file 0644\)$' "a stopped session's diff (offline)"
w start agent
expect_rc 0 "start"
w exec agent -- /bin/sh -c 'cat kept.txt; $HOME/venv/bin/python -c "import wdpkg; print(wdpkg.VALUE)"'
expect_out '^kept$' "files persist across stop/start"
expect_out '^42$' "the venv persists across stop/start"
w stop agent
w discard agent
expect_rc 0 "discard everything of a stopped session"
w start agent
w exec agent -- ls kept.txt
check "after discard the file is gone from the session" test "$RC" != 0

# ---- the disk bound: ENOSPC inside, not a full host disk
w create small --workspace "$WS" --workspace-mode cow --disk 64M
expect_rc 0 "create with --disk 64M"
w exec small -- /bin/sh -c 'head -c 100M /dev/zero > big; echo rc=$?'
expect_out 'rc=1' "writing 100M into a 64M disk fails"
expect_out 'No space left on device' "with ENOSPC" "$ERR"
w exec small -- /bin/sh -c 'head -c 100M /dev/zero > /tmp/big; echo rc=$?'
expect_out 'rc=1' "/tmp shares the bound"
used=$(du -k "$WARDEN_STATE_DIR/sandboxes/$(cat "$OUT" >/dev/null; "$WARDEN" ls --json | python3 -c 'import json,sys; print([x["id"] for x in json.load(sys.stdin) if x["name"]=="small"][0])')/disk.img" | cut -f1)
check "the disk image costs the host at most its size ($used KiB)" test "$used" -le $((66 * 1024))
w rm small

# ---- direct mode: protected paths too, and no diff
w create direct --workspace "$WS"
expect_rc 0 "create a direct session"
w exec direct -- /bin/sh -c 'echo evil > .git/hooks/pre-commit'
check "direct: .git/hooks is read-only inside" bash -c "[ $RC != 0 ] && grep -q 'Read-only' '$ERR'"
w exec direct -- /bin/sh -c 'echo direct > direct.txt'
check "direct: writes land in the real directory" test "$(cat "$WS/direct.txt")" = direct
w diff direct
expect_rc 125 "diff of a direct session: 125"
expect_out 'direct' "with a message saying why" "$ERR"
w rm direct

# ---- a full host disk during apply: nothing half-written
mkdir -p "$T/small"
if mount -t tmpfs -o size=1m tmpfs "$T/small"; then
	at_exit "umount -l '$T/small'"
	printf 'a\n' >"$T/small/a.txt"
	w create full --workspace "$T/small" --workspace-mode cow
	w exec full -- /bin/sh -c 'echo changed > a.txt; head -c 3M /dev/urandom > huge.bin'
	w apply full
	expect_rc 125 "apply onto a full host disk: 125"
	expect_out 'No space left|nothing applied' "the message says so" "$ERR"
	check "a.txt unchanged on the host" test "$(cat "$T/small/a.txt")" = a
	check "no partial huge.bin, no temporary file" bash -c "[ -z \"\$(ls -A '$T/small' | grep -v '^a.txt$')\" ]"
	w rm full
else
	echo "# no tmpfs for the full-disk case"
fi

# ---- bad input
w create agent --workspace "$WS"
expect_rc 125 "a name already taken: 125"
expect_out 'already taken' "says the name is taken" "$ERR"
w exec nosuch -- true
expect_rc 125 "exec in an unknown sandbox: 125"
expect_out "no sandbox 'nosuch'" "names it" "$ERR"
w diff nosuch
expect_rc 125 "diff of an unknown sandbox: 125"
w create --workspace-mode sideways
expect_rc 125 "a bad --workspace-mode: 125"
w create --disk 1M --workspace "$WS"
expect_rc 125 "a --disk below 32M: 125"
w create 'bad/name' --workspace "$WS"
expect_rc 125 "a bad name: 125"
w create --workspace "$HOME"
expect_rc 125 "a home directory as a workspace: 125"
w create --workspace / --workspace-mode cow
expect_rc 125 "/ as a workspace: 125"
w create x --workspace "$WS" --workspace-mode cow --isolation process
expect_rc 125 "cow at the process level: 125"
w run --workspace "$WS" --workspace-mode cow -- /bin/sh -c 'echo t > run-cow.txt'
expect_rc 0 "run --workspace-mode cow"
check "a cow run leaves the real directory alone" test ! -e "$WS/run-cow.txt"
check "and leaves no state behind" test -z "$(ls -A "$WARDEN_STATE_DIR/sandboxes" | while read -r d; do python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print("x") if m.get("ephemeral") else None' "$WARDEN_STATE_DIR/sandboxes/$d/meta.json"; done)"

w rm agent
expect_rc 0 "rm"
w ls --json
check "ls is empty after rm" test "$(json_get 'len(j)')" = 0
check "no loop device of ours is left" bash -c "! losetup -a | grep -q '$WARDEN_STATE_DIR'"
finish
