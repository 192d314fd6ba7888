#!/usr/bin/env bash
# --image at --isolation gvisor: the image is the OCI bundle's root.
#
#   - an image imported from an OCI layout (oci_layout.py: a static
#     wd-probe at /usr/bin, no shell): wd-probe runs by its name through
#     warden-init; the host's /usr is absent (a host-only program is not
#     found: 127 and the container level's message); warden's
#     /etc/passwd over the image's /etc; the image's /etc entries shown
#   - the image is never written: a directory and a file of mode 0777 and
#     0666 in its /usr and /etc refuse a write (EROFS, the read-only
#     mounts, gofer included), and the image's files on the host are the
#     same before and after
#   - the workspace's .git stays read-only, the workspace writable; the
#     egress proxy reachable and nothing else, --pids enforced
#   - warden serve: run_command under a policy's sandbox.image
#   - hostile images: /usr/bin/cat a link into the workspace (the policy's
#     cat is looked up in the image, refused 126); /usr itself a link to
#     /workspace (it was judged as `cat` by name, the host having
#     followed the link, and ran the model's file, at both levels);
#     etc a link to the host's /etc (refused 125); a PATH of
#     /workspace/bin first, from --setenv or the image's env (a bare name
#     is looked up along the jail's fixed PATH, as the policy judged it)
#   - a session (warden create --isolation gvisor --image): exec by name,
#     127 for a missing program, image rm refused while it runs
#
# About 15 gVisor starts and one import: seconds.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
RUNSC=$(command -v runsc || true)
[ -n "$RUNSC" ] || skip "runsc is not installed (scripts/deps.sh installs it)"
command -v umoci >/dev/null || skip "umoci is not installed (scripts/deps.sh installs it)"

export WARDEN_STATE_DIR=$T/state
mkdir -m 700 "$WARDEN_STATE_DIR"
G=(--isolation gvisor)
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
if ! "$WARDEN" run "${G[@]}" --workspace "$WS" -- /bin/true >"$OUT" 2>"$ERR"; then
	cat "$ERR"
	skip "warden run --isolation gvisor does not work here (see warden doctor)"
fi

python3 "$(dirname "$0")/oci_layout.py" "$T/oci-probe" probe "$WD_PROBE"
img import probe "$T/oci-probe"
expect_rc 0 "image import of an OCI layout (wd-probe at /usr/bin, no shell)"
IROOT=$(readlink -f "$WARDEN_STATE_DIR/images/names/probe")/rootfs
# what the image holds on the host, to compare after the sandboxes ran
tree_sum() {
	(cd "$IROOT" && find . -printf '%p %y %m %s %l\n' | sort && find . -type f -exec cat {} +) |
		sha256sum
}
sum0=$(tree_sum)

# ---- the image is the root ----
wd "${G[@]}" --image probe -- wd-probe ids
expect_rc 0 "wd-probe runs by its name in the image at the gVisor level"
expect_out "^ok uid 1000/1000/1000" "as the sandbox user"
wd "${G[@]}" --image probe -- wd-probe passwd
expect_rc 0 "/etc/passwd and /etc/group are warden's over the image's /etc"
wd "${G[@]}" --image probe -- cat /etc/passwd
expect_rc 127 "a program of the host's /usr (cat) is not found in the image"
expect_err "^warden: cannot execute 'cat': No such file or directory" \
	"with the container level's message"
wd "${G[@]}" -- cat /etc/hostname
expect_rc 0 "without --image the same cat runs (the host's /usr)"
wd "${G[@]}" --image probe -- wd-probe absent /usr/bin/python3 /usr/lib/x86_64-linux-gnu /bin/sh /etc/ssh
expect_rc 0 "the host's /usr, /bin/sh and /etc/ssh are absent"
wd "${G[@]}" --image probe -- /bin/wd-probe ids
expect_rc 0 "the image's usrmerge link /bin -> usr/bin is there"
# a file of the image's /etc is copied into warden's /etc (as at the
# container level); shown to the command
wd "${G[@]}" --image probe -- wd-probe absent /etc/imported
expect_out "^FAIL absent:/etc/imported exists" "the image's /etc/imported is shown"

# ---- never written: open modes, read-only mounts ----
wd "${G[@]}" --image probe -- wd-probe readonly /usr/share/wd-open /etc/wd-open
expect_rc 0 "a mode 0777 directory of the image's /usr and /etc refuses a new file (EROFS)"
wd "${G[@]}" --image probe -- wd-probe nowrite / /usr /usr/bin /etc
expect_rc 0 "the root, /usr, /usr/bin and /etc refuse a new file"
wd "${G[@]}" --image probe -- /usr/bin/wd-probe writable /workspace /tmp
expect_rc 0 "the workspace and /tmp are writable"
# the image's 0666 file, opened for writing by the command
wd "${G[@]}" --image probe -- wd-probe fill /usr/share/wd-open/file
expect_rc 1 "the image's mode 0666 file cannot be opened for writing"
expect_out "^fill: open /usr/share/wd-open/file: Read-only file system" "EROFS: the mount, not the mode"
check "the image's files on the host are unchanged" test "$(tree_sum)" = "$sum0"

# ---- the egress proxy and the limits, unchanged in an image ----
NET=(--net allow --allow-host probe.test)
wd "${G[@]}" --image probe "${NET[@]}" -- wd-probe noconnect 3128 127.0.0.1
expect_out "^FAIL noconnect:127.0.0.1:3128 connected" \
	"--net allow: warden's proxy (127.0.0.1:3128) is reachable from the image"
wd "${G[@]}" --image probe "${NET[@]}" -- wd-probe noconnect 80 192.0.2.1
expect_rc 0 "--net allow: nothing else is (a direct connection fails)"
wd "${G[@]}" --image probe --pids 20 -- wd-probe forkbomb 1000
expect_out 'fork failed after [0-9]+: EAGAIN' "--pids 20: fork fails with EAGAIN in the image"

# ---- the workspace's repository metadata ----
mkdir -p "$WS/.git/hooks"
echo '[core]' >"$WS/.git/config"
wd "${G[@]}" --image probe -- wd-probe readonly /workspace/.git /workspace/.git/hooks
expect_rc 0 ".git and its hooks are read-only in an image sandbox"
rm -rf "$WS/.git"

# ---- hostile images (made in the store by hand, as an import places them) ----
hostile() { # NAME DIGEST-LETTER: an image with bin -> usr/bin and an etc/
	local d
	d=$(printf '%064d' 0 | tr 0 "$2")
	HROOT=$WARDEN_STATE_DIR/images/sha256-$d/rootfs
	mkdir -p "$HROOT"
	printf '{"digest": "%s", "env": []}\n' "$d" >"$WARDEN_STATE_DIR/images/sha256-$d/image.json"
	ln -s "../sha256-$d" "$WARDEN_STATE_DIR/images/names/$1"
}
cat >"$T/catpol.json" <<'EOF'
{"version": 1, "programs": {"cat": {}}}
EOF
mkdir -p "$WS/bin"
cp "$WD_PROBE" "$WS/evil"
cp "$WD_PROBE" "$WS/bin/cat"

hostile catlink e
mkdir -p "$HROOT/usr/bin" "$HROOT/etc"
ln -s usr/bin "$HROOT/bin"
ln -s /workspace/evil "$HROOT/usr/bin/cat"
wd "${G[@]}" -p "$T/catpol.json" --image catlink -- cat ids
expect_rc 126 "the image's cat (a link to /workspace/evil) is not judged as cat"
expect_err "resolves to /workspace/evil, a file of the workspace" "the refusal says where it leads"
check "and the model's file did not run" sh -c "! grep -q '^ok uid' '$OUT'"

hostile usrlink d
mkdir -p "$HROOT/etc"
ln -s /workspace "$HROOT/usr"
ln -s usr/bin "$HROOT/bin"
for lv in container gvisor; do
	wd --isolation "$lv" -p "$T/catpol.json" --image usrlink -- cat ids
	expect_rc 126 "$lv: an image whose usr links to /workspace: cat is not judged by name"
	expect_err "resolves to /workspace/" "$lv: the refusal names the workspace"
	check "$lv: and the model's /workspace/bin/cat did not run" sh -c "! grep -q '^ok uid' '$OUT'"
done

# PATH set by the caller or by the image's env: a bare name is still
# looked up along the jail's fixed PATH, where the policy judged it (the
# shell's exec that started commands before warden-init searched the
# command's PATH, and ran the model's /workspace/bin/cat under cat's rule)
wd "${G[@]}" -p "$T/catpol.json" --setenv PATH=/workspace/bin:/usr/bin:/bin -- cat ids
check "--setenv PATH=/workspace/bin:...: cat is the system's (status $RC)" sh -c "! grep -q '^ok uid' '$OUT'"
expect_err "^cat: ids: No such file" "and it ran (the host's cat, no image)"
hostile envpath a
mkdir -p "$HROOT/usr/bin" "$HROOT/etc"
ln -s usr/bin "$HROOT/bin"
printf '{"digest": "%s", "env": ["PATH=/workspace/bin:/usr/bin"]}\n' "$(printf '%064d' 0 | tr 0 a)" \
	>"$HROOT/../image.json"
for lv in container gvisor; do
	wd --isolation "$lv" -p "$T/catpol.json" --image envpath -- cat ids
	expect_rc 127 "$lv: an image whose env puts /workspace/bin first: cat is not found in the image"
	check "$lv: and the model's /workspace/bin/cat did not run" sh -c "! grep -q '^ok uid' '$OUT'"
done

hostile etclink f
mkdir -p "$HROOT/usr/bin"
ln -s /etc "$HROOT/etc"
cp "$WD_PROBE" "$HROOT/usr/bin/wd-probe"
wd "${G[@]}" --image etclink -- wd-probe absent /etc/ssh /etc/shadow
expect_rc 125 "an image whose etc links to the host's /etc is refused"
expect_err "rootfs/etc is not a directory \(a link is never followed out of an image\)" \
	"the message says why"
check "nothing of the refused run reached runsc" sh -c "! grep -q '^ok ' '$OUT'"
for n in catlink usrlink envpath etclink; do img rm "$n"; done
rm -rf "${WS:?}/bin" "${WS:?}/evil"

# ---- warden serve: the policy's sandbox.image, at the gVisor level ----
cat >"$T/imgpol.json" <<'EOF'
{"version": 1, "programs": {"wd-probe": {}}, "sandbox": {"image": "probe"}}
EOF
# one run_command over MCP (stdio); the reply to it, read as it comes
python3 - "$WARDEN" "$WS" "$T/imgpol.json" >"$OUT" 2>"$ERR" <<'PY'
import json, subprocess, sys
warden, ws, pol = sys.argv[1:4]
p = subprocess.Popen([warden, "serve", "--stdio", "--isolation", "gvisor", "-w", ws, "-p", pol],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(m):
    p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {},
    "clientInfo": {"name": "gvisor_image", "version": "1"}}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "run_command", "arguments": {"command": "wd-probe ids"}}})
for line in p.stdout:
    m = json.loads(line)
    if m.get("id") == 2:
        s = m["result"].get("structuredContent", {})
        print("status", s.get("status"), "isolation", s.get("protections", {}).get("isolation"))
        print(m["result"]["content"][0]["text"])
        break
p.stdin.close()
p.wait()
PY
expect_out "^status 0 isolation gvisor$" "serve: run_command in the policy's image at the gVisor level"
expect_out "ok uid 1000/1000/1000" "and wd-probe (only in the image) ran by its name"

# ---- a session ----
"$WARDEN" create gvimg "${G[@]}" --image probe -w "$WS" >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "warden create --isolation gvisor --image probe"
at_exit "'$WARDEN' rm gvimg >/dev/null 2>&1"
"$WARDEN" exec gvimg -- wd-probe ids >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "exec runs the image's wd-probe by its name"
"$WARDEN" exec gvimg -- wd-probe absent /usr/bin/python3 >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "the session's /usr is the image's"
"$WARDEN" exec gvimg -- sh -c true >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 127 "a program the image lacks is 127 in the session"
img rm probe
expect_rc 125 "image rm refused while the gVisor session runs in it"
expect_err "in use by a running sandbox" "the message says so"
"$WARDEN" rm gvimg >/dev/null 2>&1
check "the image's files on the host are still unchanged" test "$(tree_sum)" = "$sum0"
img rm probe
expect_rc 0 "image rm once the session is gone"

finish
