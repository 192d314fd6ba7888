#!/usr/bin/env bash
# A layer of 100,000 entries (empty files in one directory): contained,
# under the 1,000,000-entry limit, counted, and removed again; the time
# and the store's size are printed.  A gzip'd layer of 1,000,001: refused
# from its headers before anything is unpacked.  Suite 'scale' (the release build
# only, as diff_scale): umoci writes 100,000 files, 15 s on this machine
# idle and 57 s at a load of 14, and ASan adds nothing to that.
. "$(dirname "$0")/lib.sh"
require_root
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
python3 "$OCI" "$T/h-many" many 100000
t0=$(date +%s%N)
img import h-many "$T/h-many" --json
ms=$((($(date +%s%N) - t0) / 1000000))
expect_rc 0 "100,000 entries in one layer: contained, under the 1,000,000 limit ($ms ms)"
echo "# 100,000 entries: import in $ms ms, $(du -sk "$STORE/sha256-$(json_get 'j["digest"]')" | cut -f1) KiB in the store"
check "all 100,000 counted" test "$(json_get 'j["files"]')" -ge 100000
img rm h-many
expect_rc 0 "image rm of the 100,000 entries"

# one past the limit, gzip'd (512 MB of headers in a few MB): refused
# from the layer's headers before umoci writes a file
python3 "$OCI" "$T/h-toomany" toomany 1000001
t0=$(date +%s%N)
img import h-toomany "$T/h-toomany"
ms=$((($(date +%s%N) - t0) / 1000000))
expect_rc 125 "1,000,001 entries in a gzip'd layer: refused ($ms ms)"
echo "# 1,000,001 entries: refused in $ms ms"
expect_err "more than 1000000 entries in the layers \(at layer 1, sha256:[0-9a-f]{64}\): refused before unpacking" \
	"the message names the limit and the layer"
check "nothing was unpacked (no build directory, no name)" \
	test -z "$(ls -d "$STORE"/tmp.* 2>/dev/null)" -a ! -e "$STORE/names/h-toomany"
check "nothing left in the store" test -z "$(ls -A "$STORE" | grep -v '^names$')"
finish
