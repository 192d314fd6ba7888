#!/usr/bin/env bash
# An image's /etc, prepared once per image (jail/etctree.c) and bound
# read-only in one mount, shows what the entry-by-entry plan shows:
#
#   - an imported image (oci_layout.py probe-etc: nested directories and
#     their modes, links relative, absolute and pointing out of the tree,
#     ssl, and its own passwd, group, hosts, shadow, gshadow, machine-id)
#     runs from a read-only bind of its store without the tree, where
#     none can be written: the entry-by-entry plan (a mount per directory); then from
#     the store itself: one mount on /etc, and the same entries, modes,
#     sizes, contents and link targets (owners aside: the tree is the
#     store owner's, never the sandbox user's)
#   - warden's identity files, never the image's; no shadow, gshadow or
#     machine-id; /etc read-only
#   - the tree is made by the import (so a store baked read-only has it),
#     or by the first start, once (the next start reuses it, two starts at
#     once leave one tree and no half-made one), and goes with `image rm`
#   - the gVisor level (when runsc works here) shows the same /etc
#
# Cost: an import of a few kilobytes and a dozen starts, a few seconds.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
command -v umoci >/dev/null || skip "umoci is not installed (scripts/deps.sh installs it)"

export WARDEN_STATE_DIR=$T/state
mkdir -m 700 "$WARDEN_STATE_DIR"
export WARDEN_IMAGE_DIR=$T/store
mkdir -m 700 "$WARDEN_IMAGE_DIR" "$T/ro"

python3 "$(dirname "$0")/oci_layout.py" "$T/oci" probe-etc "$WD_PROBE"
"$WARDEN" image import etc "$T/oci" >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "import of an image with a full /etc"
IDIR=$(readlink -f "$WARDEN_IMAGE_DIR/names/etc")

trees() {
	find "$IDIR" -mindepth 1 -maxdepth 1 -name 'etc-*' | wc -l
}
# in_ro ARGS...: warden ARGS with the store bound read-only (in a mount
# namespace of its own), where the tree cannot be written
in_ro() {
	unshare -m sh -c 'mount -o bind,ro "$1" "$2" && shift 2 && exec "$@"' sh \
		"$WARDEN_IMAGE_DIR" "$T/ro" env WARDEN_IMAGE_DIR="$T/ro" \
		"$WARDEN" run --workspace "$WS" --image etc "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
# the tree's lines without owners (field 3)
no_owner() {
	awk '{ $3 = ""; print }' "$1"
}

check "the import prepared the tree" test "$(trees)" = 1
imported_tree=$(basename "$IDIR"/etc-*)

# ---- entry by entry (a read-only store without the tree) ----
rm -rf "$IDIR"/etc-*
in_ro -- wd-probe tree /etc
expect_rc 0 "a read-only store: the image's /etc entry by entry"
cp "$OUT" "$T/entries"
in_ro -- wd-probe mountpoints /etc
expect_out "^/etc/deep$" "... one mount per directory of the image's etc"
check "no tree was written into the read-only store" test "$(trees)" = 0

# ---- the prepared tree ----
wd --image etc -- wd-probe tree /etc
expect_rc 0 "the image's /etc from the prepared tree"
cp "$OUT" "$T/tree"
check "one tree beside the rootfs" test "$(trees)" = 1
check "the one the import prepares ($imported_tree)" test -d "$IDIR/$imported_tree"
if diff <(no_owner "$T/entries") <(no_owner "$T/tree") >"$T/diff"; then
	ok "the same /etc either way: entries, modes, sizes, contents, link targets"
else
	not_ok "the views differ"
	sed 's/^/  | /' "$T/diff"
fi
# the lines were printed: a run that showed nothing would compare equal
for line in '^/etc/deep/a 40750 ' '^/etc/deep/rel 120777 .* -> \.\./imported$' \
	'^/etc/abs 120777 .* -> /etc/shadow$' '^/etc/out 120777 .* -> \.\./\.\./\.\./\.\./\.\./root$' \
	'^/etc/ssl/private 40700 ' '^/etc/ssl/openssl.cnf 100644 ' '^/etc/imported 100644 ' \
	'^/etc/alternatives/pager 120777 .* -> /bin/wd-probe$' '^/etc/wd-open 40777 '; do
	expect_out "$line" "the tree shows ${line//\\/}" "$T/tree"
done
for name in shadow gshadow machine-id; do
	check "no /etc/$name of the image's" sh -c "! grep -q '^/etc/$name ' '$T/tree'"
done
check "/etc/ssl/private/ and /etc/deep/a/ stay closed to the sandbox user" \
	sh -c "grep -q '^/etc/deep/a unreadable' '$T/tree' && grep -q '^/etc/ssl/private unreadable' '$T/tree'"
check "no entry of /etc is the sandbox user's (uid 1000)" \
	sh -c "! awk '{ print \$3 }' '$T/tree' | grep -q '^1000:'"
wd --image etc -- wd-probe mountpoints /etc
expect_rc 0 "mount points under /etc"
if [ "$(cat "$OUT")" = /etc ]; then
	ok "one mount on /etc, none below it"
else
	not_ok "mounts under /etc: $(tr '\n' ' ' <"$OUT")"
fi
in_ro -- wd-probe mountpoints /etc
if [ "$RC" = 0 ] && [ "$(cat "$OUT")" = /etc ]; then
	ok "a read-only store with the tree (a pod's, baked after the import) binds it"
else
	not_ok "a read-only store with the tree: status $RC, mounts $(tr '\n' ' ' <"$OUT")"
fi
wd --image etc -- wd-probe passwd
expect_rc 0 "warden's /etc/passwd, not the image's (mallory, uid 0)"
wd --image etc -- wd-probe readonly /etc /etc/ssl /etc/deep
expect_rc 0 "/etc and its directories read-only"
wd --image etc -- wd-probe nowrite /etc/wd-open/x /etc/passwd /etc/ssl/certs/x
expect_rc 0 "nothing of /etc writable, not even the image's 0777 directory"
check "the hosts file is warden's" grep -q '^/etc/hosts 100644 .* 69 ' "$T/tree"

# ---- made once ----
before=$(stat -c %i "$IDIR"/etc-*)
wd --image etc -- wd-probe ids
after=$(stat -c %i "$IDIR"/etc-*)
check "the next start reuses the tree (inode $before, then $after)" test "$before" = "$after"
rm -rf "$IDIR"/etc-*
"$WARDEN" run --workspace "$WS" --image etc -- wd-probe ids >"$T/p1" 2>&1 </dev/null &
p1=$!
"$WARDEN" run --workspace "$WS" --image etc -- wd-probe ids >"$T/p2" 2>&1 </dev/null &
p2=$!
wait "$p1"
r1=$?
wait "$p2"
r2=$?
check "two starts at once both run (status $r1, $r2)" test "$r1$r2" = 00
check "... and leave one tree" test "$(trees)" = 1
check "... and no half-made one" test -z "$(find "$IDIR" -maxdepth 1 -name '.etc-*')"

# ---- the gVisor level ----
if command -v runsc >/dev/null &&
	"$WARDEN" run --isolation gvisor --workspace "$WS" -- /bin/true >/dev/null 2>&1 </dev/null; then
	wd --isolation gvisor --image etc -- wd-probe tree /etc
	expect_rc 0 "gVisor: the image's /etc from the tree"
	# gVisor shows its own owners and the tree's link and directory
	# sizes: entries, modes, contents and targets are what count
	if diff <(awk '{ $3 = ""; print }' "$T/tree") <(awk '{ $3 = ""; print }' "$OUT") >"$T/diff"; then
		ok "gVisor: the same /etc"
	else
		not_ok "gVisor: the views differ"
		sed 's/^/  | /' "$T/diff"
	fi
else
	echo "# runsc does not run here: the gVisor level is gvisor_image.sh's"
fi

# ---- rm ----
"$WARDEN" image rm etc >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "image rm"
check "the image's directory is gone, tree and all" test ! -e "$IDIR"
finish
