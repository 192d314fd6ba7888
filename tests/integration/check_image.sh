#!/usr/bin/env bash
# warden check under an image: the decision and the approval id it
# reports are the ones the run in that image gets.
#
#   - check --image X -- CMD prints the approval id run --image X -- CMD
#     pauses with (the image's Env in it, --setenv in the options' order),
#     and that id, approved, lets the run run; check without --image
#     prints another (the host's system)
#   - the policy's sandbox.image and a tool's tools.NAME.image: check with
#     no --image judges in it, as the run does; --image of another image
#     than the tool's is refused (125) as the run refuses it
#   - a program the image's /usr/bin links into the workspace: check
#     --image refuses it with the run's rule, where the host's check
#     allows it
#   - check --session NAME: the id `warden exec NAME` pauses with (the
#     session's image, environment and workspace)
#   - a bad --image (no such image, a name that is a path) or --session:
#     125, the option named, no approval recorded
#
# No mmdebstrap: the images are made by oci_layout.py, as image_export.sh's.
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

# cmd NAME ARGS...: run warden NAME ARGS, status in RC
cmd() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	return 0
}
# the approval id check printed / a run's pause named
check_id() { sed -n 's/^  approval: \([0-9a-f]\{64\}\).*/\1/p' "$OUT" | head -n 1; }
run_id() { sed -n 's/.*warden approve \([0-9a-f]\{64\}\).*/\1/p' "$ERR" | head -n 1; }
same_id() {
	if [ -n "$1" ] && [ "$1" = "$2" ]; then
		ok "$3 ($1)"
	else
		not_ok "$3: '$1' vs '$2'"
	fi
}
pending() { ls "$WARDEN_STATE_DIR/pending" 2>/dev/null | wc -l; }

# the probe-config image: its config's Env joins the command's
# environment, so the id covers it as well as the image's rootfs
python3 "$OCI" "$T/oci" probe-config "$WD_PROBE"
cmd image import pc "$T/oci"
expect_rc 0 "import of an OCI layout whose config sets Env"
python3 "$OCI" "$T/oci-alias" probe-alias "$WD_PROBE"
cmd image import alias "$T/oci-alias"
expect_rc 0 "import of an image whose /usr/bin/cat links to /workspace/cat"
cat >"$T/p.json" <<'J'
{"version": 1, "programs": {"wd-probe": {"approve": [["ids"]]}, "cat": {}}}
J
P=(--policy "$T/p.json" --workspace "$WS")

# ---- the id: the run's ----
cmd check "${P[@]}" --image pc -- wd-probe ids
expect_rc 123 "check --image pc: a pause"
id_check=$(check_id)
cmd run "${P[@]}" --image pc -- wd-probe ids
expect_rc 123 "run --image pc: a pause"
id_run=$(run_id)
same_id "$id_check" "$id_run" "check --image prints the id the run in the image pauses with"
cmd check "${P[@]}" -- wd-probe ids
expect_rc 123 "check without --image: a pause"
id_host=$(check_id)
check "... with the host's id, another ($id_host)" test -n "$id_host" -a "$id_host" != "$id_run"
cmd check "${P[@]}" --setenv WD_A=1 --image pc --setenv WD_B=2 -- wd-probe ids
id_check=$(check_id)
cmd run "${P[@]}" --setenv WD_A=1 --image pc --setenv WD_B=2 -- wd-probe ids
same_id "$id_check" "$(run_id)" "with --setenv around --image, the same id again (the same order)"
check "... another than without them" test "$id_check" != "$id_run"
cmd approve --yes "$id_run"
expect_rc 0 "the id check printed, approved"
expect_out "^  system    $WARDEN_STATE_DIR/images/sha256-[0-9a-f]{64}/rootfs$" "the approval names the image's rootfs"
cmd run "${P[@]}" --image pc -- wd-probe ids
expect_rc 0 "the run in the image takes it and runs"
expect_out "^ok uid 1000" "... the approved command ran"

# ---- the policy's sandbox.image: the run's image without --image ----
cat >"$T/pimg.json" <<'J'
{"version": 1, "programs": {"wd-probe": {"approve": [["ids"]]}}, "sandbox": {"image": "pc"}}
J
cmd check --policy "$T/pimg.json" --workspace "$WS" -- wd-probe ids
id_check=$(check_id)
cmd run --policy "$T/pimg.json" --workspace "$WS" -- wd-probe ids
expect_rc 123 "run under a policy with sandbox.image: a pause"
same_id "$id_check" "$(run_id)" "check under sandbox.image prints the run's id"
check "... not the host's" test "$id_check" != "$id_host"

# ---- a tool's image (tools.NAME.image): the run's without --image, and
# --image of another refused as the run refuses it ----
cat >"$T/tool.json" <<'J'
{"version": 1, "programs": {"wd-probe": {"approve": [["ids"]]}},
 "tools": {"tb": {"class": "sandbox", "image": "pc"}}}
J
T_=(--policy "$T/tool.json" --workspace "$WS" --tool tb)
cmd check "${T_[@]}" -- wd-probe ids
id_check=$(check_id)
cmd run "${T_[@]}" -- wd-probe ids
expect_rc 123 "run --tool tb (its image pc): a pause"
same_id "$id_check" "$(run_id)" "check --tool tb prints the id the run in the tool's image pauses with"
cmd run "${T_[@]}" --image alias -- wd-probe ids
expect_rc 125 "run --tool tb --image alias: refused"
cmd check "${T_[@]}" --image alias -- wd-probe ids
expect_rc 125 "check --tool tb --image alias: refused as the run is"
expect_out "^warden: check: --image: tool 'tb' runs in image pc" "... naming --image and the tool's image" "$ERR"
check "... before printing anything" test ! -s "$OUT"

# ---- the decision: programs are looked up in the image ----
cmd check "${P[@]}" -- cat notes
expect_rc 0 "check on the host: cat allowed"
cmd check "${P[@]}" --image alias -- cat notes
expect_rc 126 "check --image alias: cat refused"
expect_out "^  rule:     programs.path$" "... by programs.path (a file of the workspace)"
cmd run "${P[@]}" --image alias -- cat notes
expect_rc 126 "run --image alias: refused as check said"
expect_out "refused by the policy \(programs.path\)" "... by the same rule" "$ERR"

# ---- a session: its image, environment and workspace ----
cmd create chk --image pc --workspace "$WS" --setenv WD_S=1
if [ "$RC" = 0 ]; then
	cmd check --policy "$T/p.json" --session chk -- wd-probe ids
	expect_rc 123 "check --session: a pause"
	id_check=$(check_id)
	cmd exec chk --policy "$T/p.json" -- wd-probe ids
	expect_rc 123 "exec in the session: a pause"
	same_id "$id_check" "$(run_id)" "check --session prints the id exec in the session pauses with"
	check "... not the one-shot run's (the session's WD_S)" test "$id_check" != "$id_run"
	cmd check --policy "$T/p.json" --session chk --image pc -- wd-probe ids
	expect_rc 125 "--session with --image: refused"
	expect_out "--session" "... naming --session" "$ERR"
	cmd rm chk
else
	not_ok "warden create chk --image pc failed"
	show
fi

# ---- bad input: 125, the option named, nothing recorded ----
before=$(pending)
cmd check "${P[@]}" --image nosuch -- wd-probe ids
expect_rc 125 "--image of no image"
expect_out "^warden: check: --image: no image 'nosuch'" "... naming --image" "$ERR"
cmd check "${P[@]}" --image ../pc -- wd-probe ids
expect_rc 125 "--image ../pc (a path, not a name)"
expect_out "^warden: check: --image: " "... naming --image" "$ERR"
cmd check "${P[@]}" --image -- wd-probe ids
expect_rc 125 "--image taking '--' as its name"
cmd check --policy "$T/p.json" --session nosuch -- wd-probe ids
expect_rc 125 "--session of no session"
expect_out "^warden: check: --session: " "... naming --session" "$ERR"
check "no pending approval recorded by them" test "$(pending)" = "$before"
finish
