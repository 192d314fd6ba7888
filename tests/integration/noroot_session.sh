#!/bin/bash
# Copy-on-write sessions for an ordinary user, without root: the overlay is
# mounted by the session's monitor inside a user namespace of the caller's
# (userxattr), the layers live in the user's state directory
# (~/.local/state/warden/sandboxes/ID/layers).  A uid with no account runs
# every command through setpriv, HOME in the test's directory.  On a
# cgroup-v1 host an ordinary user has no cgroup: --best-effort.
#
# Proves: create, exec (writes, deletes, renames, a directory replaced:
# user.overlay.opaque), the host untouched until apply; diff lists each
# change, the deletions included, and reads a file the sandbox made mode
# 000; the sandbox cannot forge an opaque mark; apply --expect with another
# digest writes nothing; apply of a running session with a command still
# running is refused (no freezer), then writes exactly the reviewed set;
# .git stays out; a partial discard of a stopped session; snapshot and
# create --from; cp in (into the change set) and out, logs, snapshot rm;
# discard and rm leave nothing; --disk refused (125, naming
# it) unless --best-effort; a one-shot `run --workspace-mode cow` (the CLI in
# a user namespace of its own) leaves the real directory and the state
# directory as they were, and refuses --disk; doctor names what needs root;
# no process of the user is left.
. "$(dirname "$0")/lib.sh"

require_root
require_userns
command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"

# a uid with no account and no process on this host
U=23456
while getent passwd "$U" >/dev/null || pgrep -u "$U" >/dev/null; do
	U=$((U + 1))
done
UH=$T/home
UWS=$T/uws
mkdir -p "$UH" "$UWS/d" "$UWS/dir2" "$UWS/keepdir" "$UWS/.git"
echo hello >"$UWS/a.txt"
echo keep >"$UWS/del.txt"
echo old >"$UWS/d/old"
echo x >"$UWS/dir2/x"
echo stays >"$UWS/keepdir/stays"
printf '[core]\n' >"$UWS/.git/config"
chown -R "$U:$U" "$UH" "$UWS"
chmod 700 "$UH"

# the built tree must be executable by that uid; else a copy of it
BIN=$(dirname "$WARDEN")
if ! setpriv --reuid "$U" --regid "$U" --clear-groups test -x "$WARDEN"; then
	mkdir "$T/bin" && cp "$WARDEN" "$BIN/warden-monitor" "$T/bin/" && chmod 755 "$T/bin"
	BIN=$T/bin
fi
W=$BIN/warden
[ -x "$BIN/warden-monitor" ] || skip "no warden-monitor beside $WARDEN"

# as_user ARGS...: warden as $U in $UWS; stdout, stderr, status in OUT, ERR, RC
as_user() {
	(cd "$UWS" && env -i PATH=/usr/bin:/bin HOME="$UH" WARDEN_MONITOR="$BIN/warden-monitor" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		setpriv --reuid "$U" --regid "$U" --clear-groups "$W" "$@") \
		>"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
at_exit 'pkill -KILL -u '"$U"' 2>/dev/null'

STATE=$UH/.local/state/warden/sandboxes

# ---- create
as_user create s --workspace-mode cow --best-effort --workspace "$UWS"
expect_rc 0 "an ordinary user creates a cow session"
id=$(tr -d '\n' <"$OUT")
check "  ... its layers are a directory in ~/.local/state/warden, owned by the user" \
	test -d "$STATE/$id/layers/upper" -a "$(stat -c %u "$STATE/$id/layers/upper" 2>/dev/null)" = "$U"
check "  ... and no disk image" test ! -e "$STATE/$id/disk.img"

# ---- exec: writes, a deletion, a rename, a directory replaced, a mode-000 file
as_user exec s -- sh -c 'echo changed > a.txt && rm del.txt && mv d/old d/new &&
	echo new > n.txt && rm -r dir2 && mkdir dir2 && echo z > dir2/z &&
	echo secret > locked.txt && chmod 000 locked.txt && cat a.txt'
expect_rc 0 "exec writes, deletes and renames in the session"
check "  ... and reads its own write back" grep -qx changed "$OUT"
# the sandbox sets user.overlay.opaque on keepdir: overlayfs refuses it or
# (Linux 6.7) stores it escaped (user.overlay.overlay.opaque), never as the
# mark the diff reads, so no deletion of keepdir/stays can be forged
as_user exec s -- python3 -c '
import os
try:
    os.setxattr("keepdir", "user.overlay.opaque", b"y")
except OSError as e:
    print("refused", e.errno)
print(os.listdir("keepdir"))'
check "the sandbox's own opaque mark hides nothing from it" grep -qF "['stays']" "$OUT"
as_user exec s -- sh -c 'echo "[x]" >> .git/config'
check "the protected .git cannot be written in the session (status $RC)" test "$RC" != 0
check "the host workspace is untouched before apply" \
	test "$(cat "$UWS/a.txt")" = hello -a -e "$UWS/del.txt" -a -e "$UWS/d/old" -a ! -e "$UWS/n.txt"

# ---- diff
as_user diff s --name-status
expect_rc 0 "diff of the running session"
for want in 'modified  a.txt' 'deleted   del.txt' 'renamed   d/old -> d/new' 'added     n.txt' \
	'deleted   dir2/x' 'added     dir2/z' 'added     locked.txt'; do
	check "  ... lists '$want'" grep -qF "$want" "$OUT"
done
check "  ... nothing of keepdir (no forged deletion) nor .git" \
	bash -c '! grep -qe keepdir -e "\.git" "$1"' _ "$OUT"
as_user diff s
digest=$(sed -n 's/^change set \([0-9a-f]\{64\}\)$/\1/p' "$OUT")
check "diff's first line is the change set's digest" test -n "$digest"

# ---- apply refused while a command runs (nothing can freeze it here)
as_user exec --detach s -- sleep 600
expect_rc 0 "a detached command runs"
as_user doctor
nocgroup=$(grep -cE '^  limits +no:' "$OUT")
# (a path of no change: where a cgroup froze the session, the apply gets
# past the freeze and writes nothing either)
as_user apply s zz-no-change --expect "$digest"
if [ "$nocgroup" = 1 ]; then
	expect_rc 125 "apply with a command running and no cgroup to freeze it: refused"
	check "  ... saying why" grep -q 'cannot be frozen' "$ERR"
else
	check "apply with a command running, frozen by the user's cgroup: not refused for it" \
		bash -c '! grep -q "cannot be frozen" "$1"' _ "$ERR"
fi
check "  ... and nothing was written" test "$(cat "$UWS/a.txt")" = hello -a ! -e "$UWS/n.txt"
if [ "$nocgroup" = 1 ]; then
	as_user snapshot s t0
	expect_rc 125 "a snapshot with a command running and no cgroup: refused"
	check "  ... saying why, and keeping no half copy" \
		test -n "$(grep 'cannot be frozen' "$ERR")" -a ! -e "$STATE/$id/snapshots/t0"
fi
as_user discard s n.txt
expect_rc 0 "discard one path of the running session (through its overlay)"
as_user exec s -- sh -c 'test ! -e n.txt && echo new > n.txt'
expect_rc 0 "  ... the session no longer sees it, and writes it again"
as_user stop s
expect_rc 0 "stop"

# ---- a stopped session: partial discard (the overlay mounted in a user namespace)
as_user discard s locked.txt
expect_rc 0 "discard one path of the stopped session"
as_user diff s --name-status
check "  ... it is gone from the set, the rest stays" \
	bash -c '! grep -q locked.txt "$1" && grep -q "n.txt" "$1"' _ "$OUT"
as_user diff s
digest=$(sed -n 's/^change set \([0-9a-f]\{64\}\)$/\1/p' "$OUT")

as_user apply s --expect 0000000000000000000000000000000000000000000000000000000000000000
expect_rc 125 "apply --expect with another digest"
check "  ... writes nothing" test "$(cat "$UWS/a.txt")" = hello -a -e "$UWS/del.txt"

# ---- started again: the layers persist; snapshot and apply go through the monitor
as_user start s
expect_rc 0 "start the session again"
as_user exec s -- cat a.txt
check "  ... it still sees its change" grep -qx changed "$OUT"
as_user ls
check "ls lists it running" grep -qE '^[0-9a-f]{16} +s +running +cow' "$OUT"

# ---- snapshot, then create --from it
as_user snapshot s t1
expect_rc 0 "snapshot of the running session (nothing runs in it)"
as_user create s2 --from s@t1 --best-effort
expect_rc 0 "create --from the snapshot"
as_user diff s2 --name-status
check "  ... the copy has the same change set" grep -qF 'renamed   d/old -> d/new' "$OUT"

# ---- warden cp, logs, snapshot ls / rm as the user (the monitor in its
# user namespace)
echo copied-in >"$UH/cpin.txt" && chown "$U:$U" "$UH/cpin.txt"
as_user cp "$UH/cpin.txt" s2:cpin.txt
expect_rc 0 "cp into the user's cow session"
as_user diff s2 --name-status
check "  ... in its change set" grep -qE 'added +cpin\.txt' "$OUT"
check "  ... not in the real directory" test ! -e "$UWS/cpin.txt"
as_user cp s2:a.txt "$UH/a-out.txt"
expect_rc 0 "cp out of it"
check "  ... the session's version" test "$(cat "$UH/a-out.txt" 2>/dev/null)" = changed
as_user exec --detach s2 -- sh -c 'echo from-detached; exit 0'
as_user logs s2 1
check "logs of the user's detached command" grep -qx from-detached "$OUT"
as_user snapshot rm s@t1
expect_rc 0 "snapshot rm s@t1 (s2 has its own copy)"
as_user snapshot ls s --json
check "  ... gone from snapshot ls" test "$(cat "$OUT")" = '[]'

# ---- apply the reviewed set
as_user apply s --expect "$digest"
expect_rc 0 "apply --expect the reviewed digest"
check "  ... a.txt written" test "$(cat "$UWS/a.txt")" = changed
check "  ... del.txt deleted" test ! -e "$UWS/del.txt"
check "  ... d/old renamed to d/new" test ! -e "$UWS/d/old" -a "$(cat "$UWS/d/new" 2>/dev/null)" = old
check "  ... dir2 replaced" test ! -e "$UWS/dir2/x" -a -e "$UWS/dir2/z"
check "  ... n.txt added, owned by the user" test "$(stat -c %u "$UWS/n.txt" 2>/dev/null)" = "$U"
check "  ... the discarded path not applied" test ! -e "$UWS/locked.txt"
check "  ... keepdir and .git untouched" \
	test -e "$UWS/keepdir/stays" -a "$(cat "$UWS/.git/config")" = '[core]'

# ---- discard everything, rm: nothing left
as_user discard s2
expect_rc 0 "discard everything of s2"
as_user diff s2 --name-status
check "  ... its diff is empty" test ! -s "$OUT"
as_user exec s2 -- sh -c 'mkdir -p ro/sub && echo f > ro/sub/f && chmod 555 ro/sub && chmod 000 ro'
as_user rm s s2
expect_rc 0 "rm both sessions (one left a mode-000 directory)"
check "  ... leaves nothing in the state directory" \
	test -z "$(ls -A "$STATE" 2>/dev/null | grep -v '^names$')"

# ---- egress through the proxy from a session whose monitor is in a user
# namespace (the proxy stays in the host's network namespace)
require_python
mkdir "$T/srv" && echo served >"$T/srv/f.txt"
port=$(free_port)
(cd "$T/srv" && exec python3 -m http.server "$port" --bind 127.0.0.1) >/dev/null 2>&1 &
srv=$!
at_exit "kill $srv"
wait_until "$(scaled 10)" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
as_user create net --workspace-mode cow --best-effort --workspace "$UWS" --net allow \
	--allow-host "reg.test:$port" --add-host reg.test=127.0.0.1 --allow-range 127.0.0.1/32
expect_rc 0 "a cow session with egress to one host"
as_user exec net -- sh -c "curl -sS http://reg.test:$port/f.txt -o got.txt && cat got.txt"
check "  ... fetches through the proxy into its layer" grep -qx served "$OUT"
as_user diff net --name-status
check "  ... which the diff lists" grep -qF 'added     got.txt' "$OUT"
as_user exec net -- curl -s -o /dev/null -w '%{http_code}' \
	"http://reg.test:$((port == 65535 ? port - 1 : port + 1))/"
check "  ... and another port is refused by the proxy (HTTP $(cat "$OUT"))" grep -qx 403 "$OUT"
as_user rm net
expect_rc 0 "rm it"

# ---- --disk needs root
as_user create s3 --workspace-mode cow --disk 64M --workspace "$UWS"
expect_rc 125 "--disk as an ordinary user is refused"
check "  ... naming --disk and --best-effort" grep -q -- '--disk needs root.*--best-effort' "$ERR"
check "  ... and creates nothing" test -z "$(ls -A "$STATE" 2>/dev/null | grep -v '^names$')"

# ---- a one-shot cow run: the CLI enters a user namespace of its own
before=$(cd "$UWS" && find . -printf '%p %s %m\n' | sort | sha256sum)
as_user run --workspace-mode cow --best-effort --workspace "$UWS" -- sh -c \
	'rm -rf -- * && echo one-shot > a.txt && mkdir -p locked/sub && echo s > locked/sub/f &&
	chmod 000 locked/sub locked && cat a.txt'
expect_rc 0 "run --workspace-mode cow as an ordinary user"
check "  ... the command saw its own write" grep -qx one-shot "$OUT"
check "  ... the real directory is untouched" \
	test "$(cd "$UWS" && find . -printf '%p %s %m\n' | sort | sha256sum)" = "$before"
check "  ... and its layers (a mode-000 directory too) are gone" \
	test -z "$(ls -A "$STATE" 2>/dev/null | grep -v '^names$')"
check "  ... no mount of the workspace is left on the host" \
	bash -c '! grep -qF "$1" /proc/self/mountinfo' _ "$UWS"
as_user run --workspace-mode cow --disk 64M --workspace "$UWS" -- touch ran.txt
expect_rc 125 "run --workspace-mode cow --disk as an ordinary user is refused"
check "  ... naming --disk and --best-effort, nothing run" \
	bash -c 'grep -q -- "--disk needs root.*--best-effort" "$1" && ! test -e "$2/ran.txt"' \
	_ "$ERR" "$UWS"

# ---- doctor names the root-only features
as_user doctor
check "doctor as a user: cow sessions yes" grep -qE '^  cow sessions +yes' "$OUT"
check "doctor as a user: --disk needs root" grep -qE '^  --disk +no: needs root' "$OUT"
check "doctor as a user: one-shot cow runs yes" grep -qE '^  run --workspace-mode cow +yes' "$OUT"
check "doctor as a user: the server's cow sandboxes yes" \
	grep -qE '^  serve cow sandboxes +yes' "$OUT"
check "doctor as a user: the warm pool needs root" grep -qE '^  warm pool +no: needs root' "$OUT"

check "no process of the user is left" wait_until "$(scaled 10)" bash -c "! pgrep -u $U >/dev/null"
finish
