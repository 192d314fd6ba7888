#!/usr/bin/env bash
# Images in and out without a build: warden image import of a docker save
# tarball (both forms), the image config (Env, User, WorkingDir), warden
# image export to an OCI image layout, and hostile layers across layers.
#
#   - a docker save tarball in Docker's legacy form (a repeated layer
#     stored as a symlink to its first copy) and in Docker 25's OCI form
#     import to the same digest as the OCI layout they hold, and run
#   - the config's Env reaches the command; Env, User, WorkingDir are in
#     image.json and inspect; an Env entry with an escape byte is refused,
#     named with the byte escaped
#   - bad input (a gzip'd tarball, a file that is no tar, --tag with a
#     tarball, export over an existing directory, a bad --label): 125, a
#     message naming it, nothing stored or overwritten
#   - export: two exports give the same manifest digest; umoci unpacks it
#     and its config.json has the Entrypoint, Cmd, Env and User set; warden
#     imports it again and runs it; --add is a second layer owned by root
#   - an approval granted for a command under one image does not cover it
#     under another image or the host (the audit names the system), and
#     does under another name of the same image
#   - hostile layers: a link in one layer and a file through it in the
#     next, whiteouts of a host file (relative, absolute, opaque), a hard
#     link in layer 2 through a layer-1 link to /etc: nothing outside the
#     store changes (100,000 entries: image_scale.sh)
#
# No mmdebstrap: every image is made here by oci_layout.py (about 15 s in
# all here).
. "$(dirname "$0")/lib.sh"
require_root
require_userns
command -v umoci >/dev/null || {
	not_ok "umoci is not installed (scripts/deps.sh installs it)"
	finish
}

export WARDEN_STATE_DIR=$T/state
mkdir -m 700 "$WARDEN_STATE_DIR"
OCI=$(dirname "$0")/oci_layout.py
STORE=$WARDEN_STATE_DIR/images

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
names() {
	ls "$STORE/names" 2>/dev/null | tr '\n' ' '
}

# ---- import: an OCI layout and the docker save forms ----
python3 "$OCI" "$T/oci" probe-config "$WD_PROBE"
python3 "$OCI" --docker "$T/legacy.tar" probe-config "$WD_PROBE"
python3 "$OCI" --docker-oci "$T/dockeroci.tar" probe-config "$WD_PROBE"
img import fromoci "$T/oci" --json
expect_rc 0 "import of an OCI layout whose config sets Env, User, WorkingDir"
d_oci=$(json_get 'j["digest"]')
check "image.json records the config's Env" \
	test "$(json_get 'j["env"]')" = '["PATH=/usr/bin:/bin", "WD_OCI_ENV=from-the-config"]'
check "and its User and WorkingDir" \
	test "$(json_get '[j["user"], j["workdir"]]')" = '["1001:1001", "/srv/app"]'
img inspect fromoci
expect_out "^user: 1001:1001$" "inspect shows the User"
expect_out "^workdir: /srv/app$" "inspect shows the WorkingDir"
expect_out "^env: WD_OCI_ENV=from-the-config$" "inspect shows the Env"
wd --image fromoci -- wd-probe env PATH
expect_out "WD_OCI_ENV is set" "the config's Env reaches the command"
wd --image fromoci -- wd-probe ids
expect_out "^ok uid 1000/1000/1000" "the command runs as warden's uid 1000, not the config's User 1001"

img import legacy "$T/legacy.tar" --json
expect_rc 0 "import of a docker save tarball, legacy form (a repeated layer as a symlink)"
check "the same digest as the OCI layout" test "$(json_get 'j["digest"]')" = "$d_oci"
check "one image, named by both" test "$(json_get 'j["names"]')" = '["fromoci", "legacy"]'
img import dockeroci "$T/dockeroci.tar" --json
expect_rc 0 "import of a docker save tarball, Docker 25's OCI form"
check "the same digest again" test "$(json_get 'j["digest"]')" = "$d_oci"
wd --image dockeroci -- wd-probe readonly / /usr /etc
expect_rc 0 "the docker-archive image runs (read-only root, /usr, /etc)"
check "no import left a build directory" test -z "$(ls -d "$STORE"/tmp.* 2>/dev/null)"

# ---- the user: a name for uid 1000, never root ----
python3 "$OCI" "$T/oci-user" probe-user "$WD_PROBE"
img import withuser "$T/oci-user" --json
expect_rc 0 "import of an image whose config's User is node"
check "image.json records it" test "$(json_get 'j["user"]')" = node
wd --image withuser -- cat /etc/passwd
expect_out "^node:x:1000:1000:node:/home/sandbox:/bin/sh$" "warden's passwd names uid 1000 node (its home the one-shot tmpfs)"
check "and no sandbox entry" test -z "$(grep '^sandbox:' "$OUT")"
wd --image withuser -- cat /etc/group
expect_out "^node:x:1000:$" "its group too"
wd --image withuser -- wd-probe ids
expect_out "^ok uid 1000/1000/1000" "the command still runs as uid 1000"
"$WARDEN" create usersess --image withuser -w "$WS" >/dev/null 2>&1
"$WARDEN" exec usersess -- cat /etc/passwd >"$OUT" 2>"$ERR"
RC=$?
expect_out "^node:x:1000:1000:" "a session made with the image keeps the name (its meta.json)"
"$WARDEN" rm usersess >/dev/null 2>&1

# ---- an approval covers the image: the same words under another image
# run other programs.  Two images with the same (empty) config Env, so the
# system is the only difference: the probe alone, and the probe with an etc/
python3 "$OCI" "$T/oci-pa" probe "$WD_PROBE"
python3 "$OCI" "$T/oci-pb" probe-etc "$WD_PROBE"
img import appr-a "$T/oci-pa" --json
d_pa=$(json_get 'j["digest"]')
img import appr-b "$T/oci-pb" --json
check "two images" test -n "$d_pa" -a "$(json_get 'j["digest"]')" != "$d_pa"
cat >"$T/appr.json" <<'J'
{"version": 1, "programs": {"wd-probe": {"approve": [["ids"]]}}}
J
AP=(--policy "$T/appr.json" --audit "$T/appr.jsonl")
wd "${AP[@]}" --image appr-a -- wd-probe ids
expect_rc 123 "a paused command under image appr-a"
appr_id=$(sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$ERR" | head -n 1)
"$WARDEN" approve --yes "$appr_id" >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "approved"
expect_out "^  system    $STORE/sha256-$d_pa/rootfs$" "the summary names the image's rootfs"
wd "${AP[@]}" --image appr-b -- wd-probe ids
expect_rc 123 "not covered under image appr-b: it pauses again"
expect_out 'differ in system"' "the audit names the system, and only it, as the difference" "$T/appr.jsonl"
wd "${AP[@]}" -- wd-probe ids
expect_rc 123 "nor on the host's system"
img import appr-a2 "$T/oci-pa" --json
check "appr-a2 is appr-a" test "$(json_get 'j["digest"]')" = "$d_pa"
wd "${AP[@]}" --image appr-a2 -- wd-probe ids
expect_rc 0 "under another name of the same image it runs"
expect_out "^ok uid 1000" "... the approved command ran"
python3 "$OCI" "$T/oci-root" probe-root "$WD_PROBE"
img import rootuser "$T/oci-root"
wd --image rootuser -- cat /etc/passwd
expect_out "^sandbox:x:1000:1000:" "a config User root names nothing: uid 1000 stays sandbox"
check "and root is uid 0's entry only" test "$(grep -c ':x:0:' "$OUT")" = 1
img inspect rootuser
expect_out '^workdir: "/srv/\\033\[31mred"$' "inspect shows a WorkingDir with an escape byte escaped"
if grep -q $'\033' "$OUT"; then
	not_ok "inspect printed the raw escape byte"
else
	ok "inspect printed no raw escape byte"
fi
img build x --user root
expect_rc 125 "image build --user root"
expect_err "--user: user root is not a user name .* other than root and nobody" "the message says why"
img build x --user 'a:b'
expect_rc 125 "image build --user with a ':' (a passwd field separator)"
printf 'packages = lua5.4\nuser =  nobody\n' >"$T/user.recipe"
img build x -f "$T/user.recipe"
expect_rc 125 "a recipe whose user is nobody"
expect_err "user.recipe:2:9: user: user nobody is not" "its message is FILE:LINE:COLUMN"

# ---- bad input: 125, named, nothing stored ----
before=$(names)
gzip -c "$T/legacy.tar" >"$T/legacy.tar.gz"
img import x "$T/legacy.tar.gz"
expect_rc 125 "a gzip-compressed tarball"
expect_err "is gzip-compressed: gunzip it first" "the message says what to do"
head -c 4096 /dev/urandom >"$T/noise"
img import x "$T/noise"
expect_rc 125 "a file that is no tar"
expect_err "noise: a member at byte 0 is not a tar header" "the message names the file and place"
tar -cf "$T/notdocker.tar" -C "$T" noise
img import x "$T/notdocker.tar"
expect_rc 125 "a tar without manifest.json"
expect_err "neither an OCI image layout nor a docker save tarball" "the message says what PATH must be"
img import x "$T/legacy.tar" --tag t
expect_rc 125 "--tag with a tarball"
expect_err "--tag chooses an image of an OCI layout" "the message names --tag"
python3 "$OCI" "$T/oci-badenv" badenv
img import x "$T/oci-badenv"
expect_rc 125 "a config Env entry with an escape byte"
expect_err 'Env entry "BAD=\\033\[31mred" is not NAME=VALUE' "named, with the byte escaped"
if grep -q $'\033' "$ERR"; then
	not_ok "the raw escape byte reached the terminal"
else
	ok "the raw escape byte did not reach the terminal"
fi
check "nothing was named by the refused imports" test "$(names)" = "$before"
check "nor left a build directory" test -z "$(ls -d "$STORE"/tmp.* 2>/dev/null)"

# ---- export ----
img export fromoci "$T/e1" --entrypoint /usr/bin/wd-probe --cmd ids \
	--label org.opencontainers.image.title=probe --env EXTRA=1 --json
expect_rc 0 "image export to an OCI layout"
m1=$(json_get 'j["manifest"]')
img export fromoci "$T/e2" --entrypoint /usr/bin/wd-probe --cmd ids \
	--label org.opencontainers.image.title=probe --env EXTRA=1 --json
m2=$(json_get 'j["manifest"]')
if [ -n "$m1" ] && [ "$m1" = "$m2" ]; then
	ok "two exports give the same manifest digest ($m1)"
else
	not_ok "two exports: $m1 and $m2"
fi
img export fromoci "$T/e3" --entrypoint /usr/bin/wd-probe --cmd ids --json
check "another config, another manifest" test "$(json_get 'j["manifest"]')" != "$m1"
cp -a "$T/e1/index.json" "$T/index.before"
img export fromoci "$T/e1"
expect_rc 125 "export over an existing directory"
expect_err "e1 exists: export writes a new directory" "the message names it"
check "and it is left as it was" cmp -s "$T/e1/index.json" "$T/index.before"
img export nosuch "$T/e4"
expect_rc 125 "export of an image never made"
expect_err "no image 'nosuch'" "the message names it"
img export fromoci "$T/e5" --label nokey
expect_rc 125 "a --label without '='"
expect_err "--label 'nokey': expected KEY=VALUE" "the message names the option"
check "the refused exports wrote nothing" test ! -e "$T/e4" -a ! -e "$T/e5"
check "nor a temporary directory" test -z "$(ls -d "$T"/e*.tmp.* 2>/dev/null)"

# umoci (another reader) unpacks it as a runtime bundle
if umoci unpack --image "$T/e1:fromoci" "$T/bundle" >"$T/umoci.log" 2>&1; then
	ok "umoci unpacks the exported layout"
else
	not_ok "umoci unpack: $(tail -3 "$T/umoci.log")"
fi
check "its rootfs holds the image's program" cmp -s "$T/bundle/rootfs/usr/bin/wd-probe" "$WD_PROBE"
check "config.json runs the Entrypoint and Cmd" \
	test "$(json_get 'j["process"]["args"]' "$T/bundle/config.json")" = '["/usr/bin/wd-probe", "ids"]'
check "with the image's Env and --env's" \
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["process"]["env"]; sys.exit(not {"WD_OCI_ENV=from-the-config","PATH=/usr/bin:/bin","EXTRA=1"} <= set(e))' "$T/bundle/config.json"
check "as the image's User (1001:1001)" \
	test "$(json_get '[j["process"]["user"]["uid"], j["process"]["user"]["gid"]]' "$T/bundle/config.json")" = '[1001, 1001]'
check "in its WorkingDir" test "$(json_get 'j["process"]["cwd"]' "$T/bundle/config.json")" = /srv/app
check "the labels are the config's" python3 -c '
import json, sys
idx = json.load(open(sys.argv[1] + "/index.json"))
blob = lambda d: json.load(open(sys.argv[1] + "/blobs/sha256/" + d[7:]))
cfg = blob(blob(idx["manifests"][0]["digest"])["config"]["digest"])
l = cfg["config"]["Labels"]
sys.exit(not (l["org.opencontainers.image.title"] == "probe" and
              l["org.opencontainers.image.created"] == "2023-06-10T00:00:00Z" and
              l["org.warden.image.digest"] == "sha256:" + sys.argv[2]))' "$T/e1" "$d_oci"

# warden reads it back
img import again "$T/e1" --json
expect_rc 0 "warden image import of the exported layout"
wd --image again -- wd-probe env PATH
expect_out "EXTRA is set" "it runs, with the exported Env"

# --add: a tree as a second layer, owned by root whoever owns the files
mkdir -p "$T/add/usr/share/extra"
echo added >"$T/add/usr/share/extra/file"
chown -R 4242:4242 "$T/add"
img export fromoci "$T/e6" --add "$T/add" --json
expect_rc 0 "export --add TREE"
check "two layers" test "$(json_get 'len(j["layers"])')" = 2
layer2=$(json_get 'j["layers"][1]["digest"][7:]')
check "the second layer's entries are owned by root" \
	test -z "$(tar --numeric-owner -tvf "$T/e6/blobs/sha256/$layer2" | awk '$2 != "0/0"')"
check "every entry's time is the epoch" \
	test -z "$(tar --full-time -tvf "$T/e6/blobs/sha256/$layer2" | grep -v ' 2023-06-10 00:00:00 ')"
img export fromoci "$T/e7" --add "$T/nowhere"
expect_rc 125 "--add of a directory that is not there"
expect_err "--add .*nowhere is not a directory" "the message names --add"

# ---- hostile layers ----
mkdir -p "$T/outside"
echo victim >"$T/outside/victim"
shadow_links=$(stat -c %h /etc/shadow)
python3 "$OCI" "$T/h-link" link-layers "$T/outside/x"
img import h-link "$T/h-link"
check "a link in layer 1, a file through it in layer 2: nothing written outside (status $RC)" \
	test "$(ls -A "$T/outside")" = victim
python3 "$OCI" "$T/h-wh" whiteout "$T/outside/victim"
img import h-wh "$T/h-wh"
check "whiteouts of ../..HOST, /HOST and an opaque ../.wh..wh..opq delete nothing outside (status $RC)" \
	test "$(cat "$T/outside/victim" 2>/dev/null)" = victim
check "the store's own files are whole (a whiteout .wh.etc through usr/../..)" \
	test -e "$STORE/names/fromoci" -a -d "$STORE/sha256-$d_oci/rootfs/etc"
python3 "$OCI" "$T/h-hl" hardlink-layers
img import h-hl "$T/h-hl"
check "a hard link in layer 2 through layer 1's link to /etc: /etc/shadow's link count stays $shadow_links (status $RC)" \
	test "$(stat -c %h /etc/shadow)" = "$shadow_links"
check "and no file of the store is /etc/shadow" \
	test -z "$(find "$STORE" -xdev -samefile /etc/shadow 2>/dev/null)"
for n in h-link h-wh h-hl; do
	[ -e "$STORE/names/$n" ] && "$WARDEN" image rm "$n" >/dev/null 2>&1
done
check "no build directory left" test -z "$(ls -d "$STORE"/tmp.* 2>/dev/null)"

finish
