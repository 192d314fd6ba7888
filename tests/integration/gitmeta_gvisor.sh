#!/usr/bin/env bash
# Repository metadata is code, at the gVisor level too (docs/threat-model.md,
# boundary 3).  runsc gets the workspace's protected paths as OCI binds made by
# the supervisor, not by pid 1's walk: this checks that the whole walk
# reaches it.  Before, only the workspace's own .git was bound read-only
# there, so a nested repository's commondir, a submodule's gitfile, the
# repository a worktree's gitfile and commondir name, and the parent of a
# protected path (renamed, then re-planted) were all the sandbox's to
# write, and the host's next `git status` ran the planted core.fsmonitor.
. "$(dirname "$0")/lib.sh"
require_root
require_python
command -v git >/dev/null || skip "git is missing"
command -v runsc >/dev/null || skip "runsc is not installed (scripts/deps.sh installs it)"
if ! "$WARDEN" run --isolation gvisor --workspace "$WS" -- /bin/true >"$OUT" 2>"$ERR"; then
	cat "$ERR"
	skip "warden run --isolation gvisor does not work here (see warden doctor)"
fi
G=(--isolation gvisor)
HHOME=$T/home
mkdir -p "$HHOME"
MARK=$T/pwned

# gv ARGS...: warden run at the gVisor level; $OUT, $ERR, $RC.
gv() {
	"$WARDEN" run "${G[@]}" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
hgit() {
	local d=$1
	shift
	(cd "$d" && env -i PATH=/usr/bin:/bin HOME="$HHOME" GIT_CONFIG_NOSYSTEM=1 \
		GIT_CEILING_DIRECTORIES="$T" git "$@")
}
pwned() {
	rm -f "$MARK"
	hgit "$1" status --short >/dev/null 2>&1
	test -e "$MARK"
}
not_pwned() {
	! pwned "$1"
}
mkrepo() {
	mkdir -p "$1" && chmod 755 "$1"
	(cd "$1" && git init -q . && git config user.email t@example.com &&
		git config user.name t && printf 'hello\n' >a.txt && mkdir -p ci &&
		printf '#!/bin/sh\necho deploy\n' >ci/deploy.sh && git add -A &&
		git commit -qm init) >/dev/null
}
PLANT='mkdir -p evil/objects evil/refs/heads && printf "ref: refs/heads/x\n" > evil/HEAD &&
	printf "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch '"$MARK"'\"\n" > evil/config'

# ---- the harness detects the attack: planted on the host by hand
mkrepo "$T/control"
(cd "$T/control" && sh -c "$PLANT" && printf '../evil\n' >.git/commondir)
check "control: a planted commondir runs the fsmonitor on the host's git status" pwned "$T/control"

# G1. the workspace's own .git: read-only, not renamable (held before too)
rm -rf "$WS" && mkrepo "$WS"
gv --workspace "$WS" -- /bin/sh -c "$PLANT; printf '../evil\n' > .git/commondir; mv .git .git-old"
check "gvisor: .git/commondir not written, .git not renamed" \
	bash -c "test ! -e '$WS/.git/commondir' && test ! -e '$WS/.git-old' && test -d '$WS/.git/objects'"
check "gvisor: the host's git status runs nothing" not_pwned "$WS"

# G2. a nested repository two directories down: its commondir read-only,
# and its parents cannot be renamed away and re-planted
rm -rf "$WS" && mkrepo "$WS" && mkrepo "$WS/vendor/lib"
gv --workspace "$WS" -- /bin/sh -c "cd vendor/lib && $PLANT; printf '../evil\n' > .git/commondir"
check "gvisor (nested vendor/lib/.git): writing its commondir fails inside" \
	bash -c "[ $RC != 0 ] && test ! -e '$WS/vendor/lib/.git/commondir'"
check "gvisor (nested vendor/lib/.git): the host's git status there runs nothing" \
	not_pwned "$WS/vendor/lib"
gv --workspace "$WS" -- /bin/sh -c "mv vendor v2 && mkdir -p vendor/lib && cd vendor/lib && $PLANT && mv evil .git"
check "gvisor: renaming vendor/ (above a nested .git) fails (EBUSY)" \
	bash -c "[ $RC != 0 ] && grep -qi 'busy' '$ERR' && test ! -e '$WS/v2'"
check "gvisor: vendor/lib/.git is still the nested repository" test -d "$WS/vendor/lib/.git/objects"
check "gvisor: ... and the host's git status there runs nothing" not_pwned "$WS/vendor/lib"
gv --workspace "$WS" -- /bin/sh -c 'echo new > vendor/new.txt && echo more >> a.txt'
expect_rc 0 "gvisor: a pinned directory (vendor/) stays writable by the sandbox"
check "gvisor: vendor/new.txt written" test -f "$WS/vendor/new.txt"

# G3. the parent of a --protect path: not renamable, the path read-only
rm -rf "$WS" && mkrepo "$WS"
gv --workspace "$WS" --protect ci/deploy.sh -- /bin/sh -c \
	'mv ci ci2 && mkdir ci && echo "echo evil" > ci/deploy.sh'
check "gvisor: renaming the directory above a protected path fails (EBUSY)" \
	bash -c "[ $RC != 0 ] && grep -qi 'busy' '$ERR'"
check "gvisor: ci/deploy.sh is still the project's" grep -q 'echo deploy' "$WS/ci/deploy.sh"

# G4. a submodule: sub/.git is a gitfile into .git/modules
mkrepo "$T/subsrc"
mkrepo "$T/super"
(cd "$T/super" && git -c protocol.file.allow=always submodule add -q "$T/subsrc" sub &&
	git commit -qm sub) >/dev/null 2>&1
gv --workspace "$T/super" -- /bin/sh -c "cd sub && $PLANT; printf 'gitdir: evil\n' > .git; mv ../sub ../sub2"
check "gvisor (submodule): sub/.git unchanged, sub not renamed" \
	bash -c "grep -q '^gitdir: ../.git/modules/sub' '$T/super/sub/.git' && test ! -e '$T/super/sub2'"
check "gvisor (submodule): the host's git status runs nothing" not_pwned "$T/super"

# G5. a project of worktrees: the worktree's gitdir and the commondir it
# names are inside the workspace, and read-only
mkdir -p "$T/proj" && chmod 755 "$T/proj"
mkrepo "$T/proj/main"
git -C "$T/proj/main" worktree add -q "$T/proj/wt" 2>/dev/null
gv --workspace "$T/proj" -- /bin/sh -c \
	"cd wt && $PLANT; printf '../../../../wt/evil\n' > ../main/.git/worktrees/wt/commondir"
check "gvisor (project of worktrees): main/.git/worktrees/wt/commondir unchanged" \
	test "$(cat "$T/proj/main/.git/worktrees/wt/commondir")" = "../.."
check "gvisor (project of worktrees): the host's git status in wt runs nothing" \
	not_pwned "$T/proj/wt"

# G6. a workspace that is a worktree whose absolute gitfile points into
# itself (git writes absolute gitdir lines): the target read-only
mkrepo "$T/abs"
mkdir -p "$T/abs/inner" && cp -r "$T/abs/.git" "$T/abs/inner/repo.git"
printf 'gitdir: %s/inner/repo.git\n' "$T/abs" >"$T/abs/sub.git.tmp"
mkdir -p "$T/abs/sub" && mv "$T/abs/sub.git.tmp" "$T/abs/sub/.git"
gv --workspace "$T/abs" -- /bin/sh -c \
	"printf '[core]\n\tfsmonitor = \"touch $MARK\"\n' >> inner/repo.git/config"
check "gvisor (absolute gitfile sub/.git -> inner/repo.git): its config not written" \
	bash -c "! grep -q fsmonitor '$T/abs/inner/repo.git/config'"

# G7. a symbolic link where a protected path is: refused, exit 125
rm -rf "$WS" && mkrepo "$WS" && ln -s /etc "$WS/.envrc"
gv --workspace "$WS" -- /bin/true
expect_rc 125 "gvisor: a protected path that is a symbolic link is refused"
check "gvisor: ... naming it" grep -q '\.envrc.*symbolic link' "$ERR"

# G9. a bare repository not called .git (a fixture two directories down)
rm -rf "$WS" && mkdir -p "$WS" && chmod 755 "$WS" && git init -q --bare "$WS/fixtures/repo.git"
gv --workspace "$WS" -- /bin/sh -c "printf '[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch $MARK\"\n' >> fixtures/repo.git/config; mv fixtures f2"
check "gvisor (bare fixtures/repo.git): its config not written, fixtures/ not renamed" \
	bash -c "! grep -q fsmonitor '$WS/fixtures/repo.git/config' && test ! -e '$WS/f2'"
check "gvisor (bare fixtures/repo.git): the host's git status there runs nothing" \
	not_pwned "$WS/fixtures/repo.git"

# G10. editor configuration below the root: frontend/.vscode read-only
rm -rf "$WS" && mkrepo "$WS" && mkdir -p "$WS/frontend/.vscode" && printf '{}\n' >"$WS/frontend/.vscode/tasks.json"
gv --workspace "$WS" -- /bin/sh -c 'echo evil > frontend/.vscode/tasks.json; mv frontend f2; echo ok > frontend/app.js'
check "gvisor: frontend/.vscode/tasks.json unchanged, frontend/ not renamed, still writable" \
	bash -c "grep -qx '{}' '$WS/frontend/.vscode/tasks.json' && test ! -e '$WS/f2' && test -f '$WS/frontend/app.js'"

# G11. core.hooksPath and include.path targets in the worktree
rm -rf "$WS" && mkrepo "$WS" && git -C "$WS" config core.hooksPath .husky &&
	git -C "$WS" config include.path ../.gitconfig.shared && mkdir -p "$WS/.husky" &&
	printf '#!/bin/sh\ntrue\n' >"$WS/.husky/pre-commit" && printf '[user]\n' >"$WS/.gitconfig.shared"
gv --workspace "$WS" -- /bin/sh -c "printf '#!/bin/sh\ntouch $MARK\n' > .husky/pre-commit; printf '[core]\n\tfsmonitor = \"touch $MARK\"\n' >> .gitconfig.shared"
check "gvisor (core.hooksPath, include.path): both read-only" \
	bash -c "grep -qx true '$WS/.husky/pre-commit' && ! grep -q fsmonitor '$WS/.gitconfig.shared'"
check "gvisor (include.path): the host's git status runs nothing" not_pwned "$WS"

# G8. git keeps working read-only inside
rm -rf "$WS" && mkrepo "$WS" && mkrepo "$WS/vendor/lib"
printf 'hello, world\n' >"$WS/a.txt"
gv --workspace "$WS" -- /bin/sh -c 'git status --short && git log --oneline && git -C vendor/lib log --oneline'
expect_rc 0 "gvisor: git status and log run inside (also in a nested repository)"
expect_out '^ M a.txt' "gvisor: git status sees the change"

# G12. runsc is never handed a host path to a protected entry or a pinned
# parent: it opens a bind source by name, following symbolic links, when it
# starts, and another sandbox on the same workspace can turn a directory of
# the chain into a link in between (a writable bind of any host directory).
# Each is its own tree, opened beneath the workspace's with no link
# followed, mounted by the launcher on dir/mnt/p<k>: check the config.json.
rm -rf "$WS" && mkrepo "$WS" && mkrepo "$WS/vendor/lib"
"$WARDEN" run "${G[@]}" --workspace "$WS" --print-plan -- /bin/true >"$OUT" 2>"$ERR" </dev/null
check "gvisor: every protected entry and pinned parent is bound from a tree of its own (dir/mnt/p<k>)" \
	python3 - "$OUT" "$WS" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
cfg = json.loads(text[text.index("{", text.index("config.json:")):text.rindex("}") + 1])
ws = sys.argv[2]
want = {"/workspace/.git", "/workspace/vendor", "/workspace/vendor/lib", "/workspace/vendor/lib/.git"}
seen = set()
for m in cfg["mounts"]:
    d, s = m["destination"], m.get("source", "")
    if not d.startswith("/workspace/"):
        continue
    seen.add(d)
    if not re.search(r"/mnt/p[0-9]+$", s) or s.startswith(ws):
        sys.exit("%s is bound from %s, a path runsc resolves" % (d, s))
sys.exit(0 if want <= seen else "missing: %s" % sorted(want - seen))
PY

# G13. the race itself, made deterministic with gdb outside the product:
# warden stops where it has planned (the walk saw vendor/ as a directory)
# and is about to build the host trees; a host process (standing for a
# second sandbox on the workspace) turns vendor/ into a link to a
# directory outside the workspace laid out alike; gdb detaches and warden
# goes on.  Before, runsc bound $T/outside writable at the link's target
# (seen on runsc 20221219: the sandbox wrote $T/outside/x on the host);
# now the sandbox is refused before runsc starts.
gone() { ! kill -0 "$1" 2>/dev/null; }
if command -v gdb >/dev/null; then
	rm -rf "$WS" "$T/outside" "$T/vendor.planned" && mkrepo "$WS" && mkrepo "$WS/vendor/lib"
	# one argument without spaces: gdb re-quotes those of its --args
	printf 'echo escaped > vendor/x\n' >"$WS/attack.sh"
	mkdir -p "$T/outside/lib/.git" && chmod -R 777 "$T/outside"
	SWAP="mv '$WS/vendor' '$T/vendor.planned' && ln -s '$T/outside' '$WS/vendor'"
	# gdb follows warden's clone3 children badly, so it detaches right
	# after the swap; warden's output goes where gdb's does
	gdb -q -batch -nx -ex 'set pagination off' -ex 'set confirm off' \
		-ex 'set startup-with-shell off' \
		-ex 'handle SIGCHLD SIGPIPE SIGUSR1 SIGUSR2 SIGALRM SIGTERM SIGWINCH SIGURG nostop noprint pass' \
		-ex 'break jail_build_host' -ex run -ex "shell $SWAP" -ex 'info inferiors' -ex detach \
		--args "$WARDEN" run "${G[@]}" --workspace "$WS" -- /bin/sh attack.sh \
		>"$T/gdb.out" 2>&1 </dev/null
	WPID=$(awk '$1 == "*" && $3 == "process" { print $4 }' "$T/gdb.out")
	if grep -q 'Breakpoint 1, .*jail_build_host' "$T/gdb.out" && test -L "$WS/vendor" &&
		[ -n "$WPID" ] && wait_until "$(scaled 120)" gone "$WPID"; then
		check "gvisor race: vendor/ swapped for a link after planning: nothing written outside the workspace" \
			test ! -e "$T/outside/x"
		check "gvisor race: ... the sandbox is refused, naming the path that became a link" \
			grep -q 'protected path vendor .*became a symbolic link' "$T/gdb.out"
	else
		cat "$T/gdb.out"
		not_ok "gvisor race: gdb stopped warden at jail_build_host, the swap was made, warden ended"
	fi
	rm -f "$WS/vendor" && mv "$T/vendor.planned" "$WS/vendor" 2>/dev/null
else
	if [ "${WD_MUST_WORK:-0}" = 1 ]; then
		not_ok "gvisor race: gdb is missing (WD_MUST_WORK=1)"
	else
		echo "# gvisor race: gdb is missing, the swap after planning is not run (G12 checks the property)"
	fi
fi

finish
