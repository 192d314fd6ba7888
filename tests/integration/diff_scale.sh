#!/usr/bin/env bash
# A change set of many files costs the review linear work (docs/threat-model.md,
# "Review -> apply").  A cow session's command makes tens of thousands of
# empty files, half of them hard-linked pairs, as a model can in a second.
# warden diff pairs renames and hard links: each used to scan the whole set
# for every file, so a diff of 45,500 files (a 512 MB disk's inodes) took
# 5.6 s of the monitor's CPU and a larger disk quadratically more, for every
# diff and apply the human runs.  The check is on the monitor's CPU time
# (not the wall clock, which the machine's load moves): 16 times the files
# must cost about 16 times the CPU, not 44 times as it did.  And the set of
# 64,000 files applies: each file held its directory's descriptor until
# commit, so the apply failed with EMFILE ("nothing applied"), and its
# cost is linear too: each new file's baseline entry sorted the whole
# table again (an apply of 60,000 files took 400 s of CPU).  Then the
# renames and hard links are still paired.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	skip "no overlayfs in this kernel"
[ -e /dev/loop-control ] || skip "no loop devices (sandbox disks)"

export WARDEN_STATE_DIR=$T/state
at_exit '"$WARDEN" rm ds >/dev/null 2>&1'

w() {
	"$WARDEN" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# monitor_cpu: the clock ticks (user + system, all its threads) of the
# session's monitor processes, found by their command line (this test's
# own state directory).  One pgrep: a loop over /proc forking tr, sed and
# awk per process took minutes of a loaded host's 3,000 processes, most
# of this test's time.
monitor_cpu() {
	local t=0 p
	for p in $(pgrep -f -- "^warden-monitor $WARDEN_STATE_DIR "); do
		# fields 14 and 15 after the ")" that ends the name
		t=$((t + $(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }')))
	done
	echo "$t"
}

# diff_cpu, apply_cpu ARGS...: `warden diff ds --stat`, `warden apply ds
# ARGS`, and the monitor's ticks for it in TICKS (not a $(...): RC would
# be the subshell's, and expect_rc would check the one before)
diff_cpu() {
	local a
	a=$(monitor_cpu)
	w diff ds --stat
	TICKS=$(($(monitor_cpu) - a))
}
apply_cpu() {
	local a
	a=$(monitor_cpu)
	w apply ds "$@"
	TICKS=$(($(monitor_cpu) - a))
}

cd "$WS" || exit 1
for i in $(seq 1 50); do echo "old $i" >"old$i.txt"; done
cd - >/dev/null || exit 1

w create ds --workspace "$WS" --workspace-mode cow --disk 2G --timeout 600
expect_rc 0 "create a cow session with a 2 GB disk"

# N files in dir $1, each second one a hard link of the one before: one
# python3 in the session makes them (a shell loop forked an `ln` per pair,
# most of this test's 115 s; the files and links are the same)
make_files() {
	w exec ds -- /usr/bin/python3 -c '
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
for i in range(n):
    open(f"{d}/f{i}", "w").close()
    os.link(f"{d}/f{i}", f"{d}/l{i}")
' "$1" "$2"
}

make_files small 2000
expect_rc 0 "the session makes 4,000 files (2,000 linked pairs)"
w exec ds -- /bin/sh -c 'for i in $(seq 1 50); do mv old$i.txt moved$i.txt; done'
expect_rc 0 "the session renames 50 files"
diff_cpu
small=$TICKS
expect_rc 0 "warden diff of 4,050 changes"
check "the 4,000 new files listed" test "$(grep -c '^ small/' "$OUT")" -ge 4000
# the smallest measurable cost: at least one tick
[ "$small" -ge 1 ] || small=1
# the small set's files applied alone (the renames wait for the big set)
apply_cpu small
small_apply=$TICKS
expect_rc 0 "apply small/ (4,000 files)"
[ "$small_apply" -ge 1 ] || small_apply=1

make_files big 30000
expect_rc 0 "the session makes 60,000 more files (30,000 linked pairs)"
diff_cpu
big=$TICKS
expect_rc 0 "warden diff of 64,050 changes"
echo "# monitor CPU: $small ticks for 4,050 changes, $big ticks for 64,050"
# 16 times the changes: linear work is about 16 times the ticks (measured
# 17 -> 244), the old quadratic pairing 44 times (16 -> 706): the line is
# at 25, with 20 ticks for the one-tick resolution of the small diff.
check "16x the changes cost less than 25x the monitor's CPU ($small -> $big ticks)" \
	test "$big" -lt $((25 * small + 20))

w diff ds --name-status
check "a rename is still paired with its deletion" grep -qxF 'renamed   old1.txt -> moved1.txt' "$OUT"
check "a hard link is still shown once" grep -qF 'big/l0 (new file 0644)  (hard link to big/f0: same' "$OUT"

w diff ds --json
digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$OUT")
apply_cpu --expect "$digest"
big_apply=$TICKS
expect_rc 0 "apply the reviewed set"
echo "# monitor CPU: $small_apply ticks to apply 4,000 files, $big_apply to apply 60,050 changes"
# 15 times the files: measured 25 -> 927 ticks (37x: the kernel's work in
# one directory of 60,000 entries grows faster than the count); the
# baseline sorted again after each new entry was n^2 log n (the apply
# alone took 400 s here): the line is at 100x, with 20 ticks of resolution
check "15x the files applied cost less than 100x the monitor's CPU ($small_apply -> $big_apply ticks)" \
	test "$big_apply" -lt $((100 * small_apply + 20))
check "the host has the renamed file" test -f "$WS/moved7.txt" -a ! -e "$WS/old7.txt"
check "the host has a linked pair as one inode" \
	test "$(stat -c %i "$WS/big/f29999")" = "$(stat -c %i "$WS/big/l29999")"
check "the host has all 64,000 new files" test "$(find "$WS/big" "$WS/small" -type f | wc -l)" = 64000
finish
