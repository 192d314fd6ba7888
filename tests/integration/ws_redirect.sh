#!/bin/bash
# A session's workspace cannot be redirected by another sandbox.  A
# session keeps its workspace as a path (meta.json), reopened by `warden
# cp`, the file tools and every start.  Sessions over a project's
# subdirectory are common (a package of a monorepo) while another sandbox
# writes the project (a one-shot `warden run`, a session over the root):
# that sandbox can rename the subdirectory and leave a symbolic link to
# any host directory in its place.  Followed, `warden cp` wrote into (and
# read out of) the directory the link named, the next `start` bound it
# read-write as the session's /workspace, and a stopped cow session's
# `apply` wrote its change set there, all as root.
#
# Proves (each failed before the fix, the apply by writing the planted
# file into the host directory): with the link in place, cp in and out,
# start, exec and a stopped cow session's apply are refused (125, naming
# the workspace and where it now leads), and the host directory the link
# names is byte for byte as it was; once the directory is put back, start, cp and apply work
# again and write the session's own workspace; rm works throughout.  The
# same for a session's --bind source below the parent (start and update
# refused, naming the source; put back, it works).
. "$(dirname "$0")/lib.sh"
require_root
require_userns

export WARDEN_STATE_DIR=$T/state
at_exit 'for s in d c b; do "$WARDEN" rm "$s" >/dev/null 2>&1; done'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
OUTSIDE=$T/outside # a host directory no sandbox is given
mkdir -p "$WS/sub" "$OUTSIDE"
echo canary >"$OUTSIDE/keep"
echo hello >"$T/note.txt"
outside_sum() { (cd "$OUTSIDE" && find . -printf '%p %s %m\n' | sort && cat keep); }
before=$(outside_sum)

# the model, in a sandbox over the parent: sub becomes a link to $OUTSIDE
swap() {
	"$WARDEN" run --workspace "$WS" -- /bin/sh -c \
		"mv sub sub.old && ln -s '$OUTSIDE' sub" >/dev/null 2>&1 </dev/null
}
unswap() {
	rm "$WS/sub" && mv "$WS/sub.old" "$WS/sub"
}
refused() { # DESCRIPTION: status 125, the workspace named, $OUTSIDE as it was
	expect_rc 125 "$1"
	check "  ... naming the workspace" grep -q "workspace '$WS/sub'" "$ERR"
	check "  ... and the host directory the link names is untouched" \
		test "$(outside_sum)" = "$before"
}

# ---- a direct session
w create d --workspace "$WS/sub"
expect_rc 0 "a direct session over a subdirectory"
swap
check "the sandbox over the parent swapped sub for a link" test -L "$WS/sub"
w cp "$T/note.txt" d:note.txt
refused "cp into the session, its path now a link"
w cp d:keep "$T/got"
refused "cp out of the session"
check "  ... nothing copied out" test ! -e "$T/got"
w exec d -- /bin/sh -c 'touch /workspace/escaped'
refused "exec in the running session (its spec read again: the human is told)"
w stop d
expect_rc 0 "stop"
w start d
refused "start after the swap"
check "  ... saying where it now leads" grep -q "now leads to '$OUTSIDE'" "$ERR"
w exec d -- /bin/sh -c 'touch /workspace/escaped'
refused "exec after the refused start"
unswap
w start d
expect_rc 0 "the directory put back: start works"
w cp "$T/note.txt" d:note.txt
expect_rc 0 "  ... and cp writes the session's own workspace"
check "  ... there" test -e "$WS/sub/note.txt"
w rm d
expect_rc 0 "rm"

# ---- a stopped cow session's apply
rm -rf "${WS:?}/sub" && mkdir "$WS/sub"
w create c --workspace-mode cow --workspace "$WS/sub"
expect_rc 0 "a cow session over the subdirectory"
w exec c -- /bin/sh -c 'echo x >/workspace/planted'
w stop c
expect_rc 0 "stop"
swap
w apply c
refused "apply of the stopped session, its path now a link"
unswap
w apply c
expect_rc 0 "the directory put back: apply works"
check "  ... into the session's own workspace" test -e "$WS/sub/planted"
check "the host directory the link named was never written" test "$(outside_sum)" = "$before"
w rm c
expect_rc 0 "rm"

# ---- a session's --bind source below the parent
mkdir -p "$T/bws" "$WS/data"
w create b --workspace "$T/bws" --bind "$WS/data:/data"
expect_rc 0 "a session with --bind of a directory in the project"
w stop b
"$WARDEN" run --workspace "$WS" -- /bin/sh -c "mv data data.old && ln -s '$OUTSIDE' data" \
	>/dev/null 2>&1 </dev/null
w start b
expect_rc 125 "start after the bind source was swapped for a link"
check "  ... naming the source and where it now leads" \
	grep -q "bind source '$WS/data' now leads to '$OUTSIDE'" "$ERR"
w update b --pids 64
expect_rc 125 "update of the stopped session"
check "  ... naming the source" grep -q "bind source '$WS/data' now leads to" "$ERR"
check "  ... and the host directory the link names is untouched" \
	test "$(outside_sum)" = "$before"
rm "$WS/data" && mv "$WS/data.old" "$WS/data"
w start b
expect_rc 0 "the directory put back: start works"
w exec b -- /bin/sh -c 'echo x >/data/mine'
expect_rc 0 "  ... and the session writes its bind"
check "  ... there" test -e "$WS/data/mine"
w rm b
expect_rc 0 "rm"

# ---- the same with the link at a middle component of the source: the
# start refuses it, and the jail binds the link-free path it checked
# (spec.h's spec_bind.real) rather than resolving the source again
mkdir -p "$WS/mid/data" "$OUTSIDE/data"
echo canary >"$OUTSIDE/data/keep"
before=$(outside_sum)
w create b --workspace "$T/bws" --bind "$WS/mid/data:/data"
expect_rc 0 "a session with --bind of a directory two levels into the project"
w stop b
"$WARDEN" run --workspace "$WS" -- /bin/sh -c "mv mid mid.old && ln -s '$OUTSIDE' mid" \
	>/dev/null 2>&1 </dev/null
check "the sandbox over the parent swapped mid for a link" test -L "$WS/mid"
w start b
expect_rc 125 "start after a middle component of the bind source became a link"
check "  ... naming the source" grep -q "bind source '$WS/mid/data' now leads to" "$ERR"
w exec b -- /bin/sh -c 'echo x >/data/planted'
check "  ... nothing runs" test "$RC" -ne 0
check "  ... and the host directory the link names is untouched" \
	test "$(outside_sum)" = "$before"
rm "$WS/mid" && mv "$WS/mid.old" "$WS/mid"
w start b
expect_rc 0 "the directory put back: start works"
w exec b -- /bin/sh -c 'echo x >/data/mine'
expect_rc 0 "  ... and the session writes its bind"
check "  ... there" test -e "$WS/mid/data/mine"
w rm b
expect_rc 0 "rm"
finish
