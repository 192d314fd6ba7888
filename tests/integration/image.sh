#!/usr/bin/env bash
# Environments: warden image build / ls / inspect / rm, --image
# on run and create, the policy's sandbox.image.
#
#   - bad names, packages, suites, recipes (FILE:LINE:COLUMN) and image
#     references: 125 with a message naming what is wrong
#   - an image holding lua5.4, which the host lacks: it runs inside with
#     --image, is absent without; the recipe's env reaches the command
#   - wd-probe (static) sees the same jail with --image: read-only root,
#     caps, seccomp, masked /proc, mounts, warden's /etc/passwd
#   - two builds from the same inputs give the same digest
#   - a hostile image whose /usr/bin/cat links into the workspace: the
#     policy's `cat` is looked up in the image, so the model's file is not
#     run under cat's rule (it was, while programs were looked up on the
#     host)
#   - an image whose etc links to the host's /etc: refused (125), never
#     followed on the host's side
#   - warden image import of an OCI layout made here (oci_layout.py): it
#     runs; hostile layers (a device node, a hard link to /etc/shadow,
#     ../ and absolute names and a file through a link, a 10 GB sparse
#     file) are refused or contained, nothing written outside the store
#   - rm refused while a session was made with the image or a sandbox
#     runs in it
#
# Two real builds (mmdebstrap, the host's apt sources): about 80-100 s
# each here.  If the mirror is unreachable the test skips (77) even under
# WD_MUST_WORK=1: that is the network, not warden; a host without
# mmdebstrap (scripts/deps.sh installs it) fails under WD_MUST_WORK=1.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
command -v mmdebstrap >/dev/null || skip "mmdebstrap is not installed (scripts/deps.sh installs it)"

export WARDEN_STATE_DIR=$T/state
mkdir -m 700 "$WARDEN_STATE_DIR"

# img ARGS...: warden image ARGS, output in $OUT/$ERR, status in $RC
img() {
	"$WARDEN" image "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	return 0
}
expect_err() {
	if grep -Eq -- "$1" "$ERR"; then
		ok "$2"
	else
		not_ok "$2: stderr does not match /$1/"
		show
	fi
}

# ---- bad input: 125 and a message naming it (nothing built) ----
img build 'Bad/Name' --packages lua5.4
expect_rc 125 "image build refuses the name Bad/Name"
expect_err "image name Bad/Name is not" "the message names the bad name"
img build ok1 --packages '-oops'
expect_rc 125 "image build refuses a package that would be an mmdebstrap option"
expect_err "packages: package -oops is not a Debian package name" "the message names --packages and the package"
img build ok1 --suite 'book worm'
expect_rc 125 "image build refuses a suite with a blank"
img build
expect_rc 125 "image build without a name"
printf 'suite = bookworm\npackages = lua5.4\n\n  colour = blue\n' >"$T/bad.recipe"
img build ok1 -f "$T/bad.recipe"
expect_rc 125 "a recipe with an unknown key"
expect_err "bad.recipe:4:3: unknown key colour" "its message is FILE:LINE:COLUMN"
printf 'packages = lua5.4, Evil;rm\n' >"$T/bad2.recipe"
img build ok1 -f "$T/bad2.recipe"
expect_rc 125 "a recipe with a bad package"
expect_err "bad2.recipe:1:12: packages: package Evil;rm is not" "its message points at the value"
printf 'just words\n' >"$T/bad3.recipe"
img build ok1 -f "$T/bad3.recipe"
expect_rc 125 "a recipe line without '='"
expect_err "bad3.recipe:1:1: expected KEY = VALUE" "its message says what a line is"
img inspect nosuch
expect_rc 125 "inspect of an image never built"
expect_err "no image 'nosuch'" "the message names it"
img rm nosuch
expect_rc 125 "rm of an image never built"
wd --image nosuch -- true
expect_rc 125 "warden run --image nosuch"
expect_err "no image 'nosuch'" "run's message names the image"
wd --image '../../etc' -- true
expect_rc 125 "warden run --image with a path"
if [ -z "$(ls -A "$WARDEN_STATE_DIR/images/names" 2>/dev/null)" ]; then
	ok "nothing was named by the refused builds"
else
	not_ok "refused builds left names: $(ls "$WARDEN_STATE_DIR/images/names")"
fi

# ---- import: an OCI image layout (umoci), and hostile layers ----
if command -v umoci >/dev/null; then
	OCI=$(dirname "$0")/oci_layout.py
	python3 "$OCI" "$T/oci-probe" probe "$WD_PROBE"
	img import imported "$T/oci-probe" --json
	expect_rc 0 "image import of an OCI layout (wd-probe at /usr/bin)"
	wd --image imported -- wd-probe ids
	expect_rc 0 "the imported image's program runs by its name"
	wd --image imported -- wd-probe readonly / /usr /etc
	expect_rc 0 "and sees a read-only root, /usr and /etc"
	img import x "$T/oci-probe" --tag nosuch
	expect_rc 125 "import of a tag the layout lacks"
	img import x "$T"
	expect_rc 125 "import of a directory that is no OCI layout"
	expect_err "is neither an OCI image layout .* nor a docker save tarball" "the message says what PATH must be"
	python3 "$OCI" "$T/oci-device" device
	img import hostile-dev "$T/oci-device"
	expect_rc 125 "a layer with a character device node is refused"
	expect_err "etc/null2 is a device node, FIFO or socket" "the message names the entry"
	python3 "$OCI" "$T/oci-hardlink" hardlink
	img import hostile-hl "$T/oci-hardlink"
	expect_rc 125 "a layer with a hard link to /etc/shadow is refused"
	mkdir -p "$T/outside"
	python3 "$OCI" "$T/oci-escape" escape "$T/outside/esc"
	img import hostile-esc "$T/oci-escape"
	if [ -z "$(ls -A "$T/outside")" ] && [ ! -e "$T/outside/esc-abs" ]; then
		ok "../, absolute names and a link then a file through it wrote nothing outside (status $RC)"
	else
		not_ok "a hostile layer wrote outside the store: $(ls -A "$T/outside")"
	fi
	# contained, not refused: the entries landed inside the image's root
	[ "$RC" = 0 ] && img rm hostile-esc
	python3 "$OCI" "$T/oci-sparse" sparse
	# the limit is 4 GiB a file; a lower one of the caller's stays, so
	# this proof writes 100 MB, not 4 GiB
	(
		ulimit -f 102400
		"$WARDEN" image import hostile-sparse "$T/oci-sparse" >"$OUT" 2>"$ERR" </dev/null
	)
	RC=$?
	expect_rc 125 "a layer with a 10 GB sparse file is refused at the file size limit"
	expect_err "file too large" "the message says why"
	# build directories: one of a build that ended (unlocked) is removed
	# by the next build or import, one whose build runs (locked) stays
	I=$WARDEN_STATE_DIR/images
	mkdir -p "$I/tmp.stale/rootfs/usr" "$I/tmp.live"
	flock -x "$I/tmp.live" -c "touch '$I/tmp.live/held'; exec sleep 60" &
	locker=$!
	at_exit "kill $locker 2>/dev/null"
	wait_until 10 test -e "$I/tmp.live/held"
	img import imported2 "$T/oci-probe"
	expect_rc 0 "a second import"
	check "it removed the directory of a build that ended" test ! -e "$I/tmp.stale"
	check "and kept the one a running build holds" test -e "$I/tmp.live/held"
	kill "$locker" 2>/dev/null
	wait "$locker" 2>/dev/null
	rm -rf "$I/tmp.live"
	img rm imported2
	img ls --json
	check "only the good import is named" \
		python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); sys.exit(not (len(a)==1 and a[0]["names"]==["imported"]))' "$OUT"
	check "no import left a build directory" test -z "$(ls -d "$WARDEN_STATE_DIR"/images/tmp.* 2>/dev/null)"
	img rm imported
	expect_rc 0 "image rm imported"
else
	not_ok "umoci is not installed (scripts/deps.sh installs it)"
fi

# ---- an image with a program the host lacks ----
if command -v lua5.4 >/dev/null; then
	skip "this host has lua5.4: the test needs a program the host lacks"
fi
cat >"$T/lua.recipe" <<'EOF'
# the issue's example: a program the host does not have
suite = bookworm
packages = lua5.4
env = WD_IMAGE_TEST=from-the-recipe
user = luauser
EOF
t0=$SECONDS
img build lua1 -f "$T/lua.recipe" --json
if [ "$RC" != 0 ] && grep -Eqi "apt-get update|failed to download|Temporary failure resolving|Could not resolve|unable to connect" "$ERR"; then
	echo "SKIP: the Debian mirror is unreachable from here (not a warden failure):"
	tail -3 "$ERR"
	exit 77
fi
expect_rc 0 "image build lua1 -f recipe ($((SECONDS - t0)) s)"
d1=$(json_get 'j["digest"]')
size=$(json_get 'j["size_bytes"]')
echo "# lua1: sha256:$d1, $size bytes, $((SECONDS - t0)) s"
check "the metadata records the recipe's packages" grep -q '"lua5.4"' "$OUT"
check "the metadata records the installed packages" grep -Eq '"lua5.4 5\.4' "$OUT"
check "the metadata records the env" grep -q 'WD_IMAGE_TEST=from-the-recipe' "$OUT"
check "the image is stored under its digest" test -d "$WARDEN_STATE_DIR/images/sha256-$d1/rootfs"
check "no machine-id in the image" test ! -e "$WARDEN_STATE_DIR/images/sha256-$d1/rootfs/etc/machine-id"
check "no apt lists in the image" \
	test -z "$(ls -A "$WARDEN_STATE_DIR/images/sha256-$d1/rootfs/var/lib/apt/lists" 2>/dev/null)"

wd --image lua1 -- lua5.4 -v
expect_rc 0 "lua5.4 runs with --image lua1"
expect_out "Lua 5\.4" "and prints its version"
wd -- lua5.4 -v
expect_rc 127 "lua5.4 is absent without --image"
wd --image lua1 -- printenv WD_IMAGE_TEST
expect_out "^from-the-recipe$" "the recipe's env reaches the command"
wd --image lua1 -- cat /etc/debian_version
expect_out "^12\." "/etc is the image's (debian_version)"
wd --image lua1 -- cat /etc/passwd
expect_out "^luauser:x:1000:1000:" "/etc/passwd is warden's on top of the image's, uid 1000 named by the recipe's user"
check "the metadata records the user" grep -q '"user": "luauser"' "$WARDEN_STATE_DIR/images/sha256-$d1/image.json"
wd --image lua1 --isolation process -- true
expect_rc 125 "--image with --isolation process is refused, not run on the host's /usr"

# ---- the jail is the same jail: wd-probe with --image ----
wd --image lua1 "${PROBE_BIND[@]}" -- "$PROBE" all \
	--uid 1000 --no-passwd --ro / --ro /usr --ro /etc --ro /bin --ro /dev --ro /opt \
	--rw /workspace --rw /tmp --cwd /workspace --host-ia32 "$(host_ia32)"
expect_rc 0 "wd-probe all passes with --image (read-only root, caps, seccomp, /proc, mounts)"
probe_report "image jail"

# ---- the policy: sandbox.image, and a bad value ----
cat >"$T/pol.json" <<'EOF'
{"version": 1, "programs": {"lua": {}, "lua5.4": {}, "cat": {}},
 "sandbox": {"image": "lua1"}}
EOF
wd -p "$T/pol.json" -- lua -v
expect_rc 0 "policy sandbox.image: lua (a link through the image's /etc/alternatives) runs"
expect_out "Lua 5\.4" "in the image"
cat >"$T/badpol.json" <<'EOF'
{"version": 1, "programs": {"lua": {}},
 "sandbox": {"image": "../lua1"}}
EOF
wd -p "$T/badpol.json" -- lua -v
expect_rc 125 "policy sandbox.image with a path"
expect_err "badpol.json:2:23: sandbox.image: expected an image name" "the message is FILE:LINE:COLUMN"

# a session made without the image: its /usr is the host's, so a command
# judged in the policy's image is refused rather than run there
"$WARDEN" create plainsess -w "$WS" >/dev/null 2>&1
"$WARDEN" exec plainsess -p "$T/pol.json" -- lua -v >"$OUT" 2>"$ERR"
RC=$?
expect_rc 125 "policy sandbox.image in a session made without it"
expect_err "is not the image this sandbox was made with" "the message says why"
"$WARDEN" rm plainsess >/dev/null 2>&1

# ---- the same inputs, the same digest ----
t0=$SECONDS
img build lua2 --packages lua5.4 --env WD_IMAGE_TEST=from-the-recipe --user luauser --json
expect_rc 0 "image build lua2 from the same inputs as flags ($((SECONDS - t0)) s)"
d2=$(json_get 'j["digest"]')
echo "# lua2: sha256:$d2, $((SECONDS - t0)) s"
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then
	ok "two builds give the same digest"
else
	not_ok "two builds: sha256:$d1 and sha256:$d2"
fi
img ls --json
check "ls --json lists one image with both names" \
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); sys.exit(not (len(a)==1 and sorted(a[0]["names"])==["lua1","lua2"]))' "$OUT"
img inspect lua2 --json
check "inspect --json gives the path of its rootfs" grep -q "sha256-$d2/rootfs" "$OUT"

# ---- a hostile image: /usr/bin/cat is a link into the workspace ----
# (what an image from elsewhere may hold; made by hand in the store, as an
# import would place it)
hd=$(printf 'h%.0s' {1..64} | tr h e)
hroot=$WARDEN_STATE_DIR/images/sha256-$hd/rootfs
mkdir -p "$hroot/usr/bin" "$hroot/etc"
ln -s usr/bin "$hroot/bin"
ln -s /workspace/evil "$hroot/usr/bin/cat"
printf '{"digest": "%s", "env": []}\n' "$hd" >"$WARDEN_STATE_DIR/images/sha256-$hd/image.json"
ln -s "../sha256-$hd" "$WARDEN_STATE_DIR/images/names/hostile"
cp "$WD_PROBE" "$WS/evil"
cat >"$T/catpol.json" <<'EOF'
{"version": 1, "programs": {"cat": {}}}
EOF
wd -p "$T/catpol.json" --image hostile -- cat
expect_rc 126 "policy: the image's cat (a link to /workspace/evil) is not judged as cat"
expect_err "resolves to /workspace/evil, a file of the workspace" "the refusal says where it leads"
wd -p "$T/catpol.json" --image hostile -- /usr/bin/cat
expect_rc 126 "the same by its path"
wd -p "$T/catpol.json" -- cat
expect_rc 0 "without the image, cat is the host's and runs"
img rm hostile
# ... and one whose etc is a link to the host's /etc: never followed
hd2=$(printf 'h%.0s' {1..64} | tr h f)
mkdir -p "$WARDEN_STATE_DIR/images/sha256-$hd2/rootfs/usr/bin"
ln -s /etc "$WARDEN_STATE_DIR/images/sha256-$hd2/rootfs/etc"
printf '{"digest": "%s", "env": []}\n' "$hd2" >"$WARDEN_STATE_DIR/images/sha256-$hd2/image.json"
ln -s "../sha256-$hd2" "$WARDEN_STATE_DIR/images/names/etclink"
wd --image etclink -- /workspace/evil absent /etc/ssh /etc/hostname
expect_rc 125 "an image whose etc links to the host's /etc is refused"
expect_err "rootfs/etc is not a directory \(a link is never followed out of an image\)" \
	"the message says why"
img rm etclink

# ---- rm refused while in use ----
"$WARDEN" create imgsess --image lua1 -w "$WS" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "warden create --image lua1"
"$WARDEN" exec imgsess -- lua5.4 -e 'print(1+1)' >"$OUT" 2>"$ERR"
RC=$?
expect_out "^2$" "the session runs lua5.4 from the image"
img rm lua1
expect_rc 125 "image rm refused while the session's sandbox runs in it"
expect_err "in use by a running sandbox" "the message says so"
"$WARDEN" stop imgsess >/dev/null 2>&1
img rm lua1
expect_rc 125 "image rm refused while a stopped session was made with it"
expect_err "in use by session imgsess" "the message names the session"
"$WARDEN" rm imgsess >/dev/null 2>&1
img rm lua1
expect_rc 0 "image rm lua1 once the session is gone (lua2 still names the files)"
check "the files stay while lua2 names them" test -d "$WARDEN_STATE_DIR/images/sha256-$d2/rootfs"

rm -f "$WS/started"
"$WARDEN" run -w "$WS" --image lua2 --timeout 120 -- sh -c 'touch /workspace/started; exec sleep 100' \
	>/dev/null 2>&1 </dev/null &
runner=$!
at_exit "kill $runner 2>/dev/null"
if wait_until 60 test -e "$WS/started"; then
	img rm lua2
	expect_rc 125 "image rm refused while a sandbox runs in it"
	expect_err "in use by a running sandbox" "the message says so"
else
	not_ok "the sandbox in lua2 did not start"
fi
kill "$runner" 2>/dev/null
wait "$runner" 2>/dev/null
img rm lua2 --json
expect_rc 0 "image rm lua2 once the sandbox ended"
check "the image's files are gone" test ! -e "$WARDEN_STATE_DIR/images/sha256-$d2"
img ls --json
expect_out '^\[\]$' "ls --json is empty"

finish
