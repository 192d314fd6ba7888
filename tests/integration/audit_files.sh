#!/usr/bin/env bash
# Files that are not files, for the audit trail: a FIFO or a
# device given as the log, its head or --audit is refused at once with exit
# 125 and a message naming it, whichever subcommand opens it (the refusal
# is audit_open's and audit_verify_file's, not a front end's); verification
# streams, so its memory does not grow with the log; an over-long line is
# reported by number.  Every wait is bounded by timeout(1): a hang fails.
. "$(dirname "$0")/policy_lib.sh"
cd "$WS" || exit 1
FIFO=$T/log.fifo
mkfifo "$FIFO"

# expect_refused DESC NAME CMD...: exit 125 within the timeout, the message
# names NAME and says what is wrong
expect_refused() {
	local desc=$1 name=$2
	shift 2
	expect_rc 125 "$desc" timeout 10 "$@"
	expect_in "$T/err" "$name" "  ... names $(basename "$name")"
	expect_in "$T/err" "not a regular file" "  ... says why"
}

expect_refused "audit verify FIFO" "$FIFO" "$WARDEN" audit verify "$FIFO"
expect_refused "audit verify /dev/zero" /dev/zero "$WARDEN" audit verify /dev/zero
expect_refused "audit verify a directory" "$T" "$WARDEN" audit verify "$T"

# a log whose head is a FIFO
A=$T/a.jsonl
expect_rc 0 "check --audit writes a log" "$WARDEN" check --audit "$A" -- ls
mv "$A.head" "$T/saved.head"
mkfifo "$A.head"
expect_refused "audit verify, the head a FIFO" "$A.head" "$WARDEN" audit verify "$A"
rm "$A.head"
mv "$T/saved.head" "$A.head"
expect_rc 0 "  ... and with the head back, intact" timeout 10 "$WARDEN" audit verify "$A"

# every subcommand that takes --audit, and the policy's audit.path
expect_refused "check --audit FIFO" "$FIFO" "$WARDEN" check --audit "$FIFO" -- ls
expect_refused "check --audit /dev/null" /dev/null "$WARDEN" check --audit /dev/null -- ls
expect_refused "run --audit FIFO" "$FIFO" "$WARDEN" run --audit "$FIFO" -w "$WS" -- /bin/true
expect_refused "run --command ... --audit FIFO" "$FIFO" \
	"$WARDEN" run --audit "$FIFO" -w "$WS" --command 'ls'
printf '{"version": 1, "programs": {"ls": {}}, "audit": {"path": "%s"}}\n' "$FIFO" >"$T/p.json"
expect_refused "run --policy with audit.path a FIFO" "$FIFO" \
	"$WARDEN" run --policy "$T/p.json" -w "$WS" -- ls
expect_refused "approve --audit FIFO" "$FIFO" \
	"$WARDEN" approve 0123456789abcdef0123456789abcdef --audit "$FIFO"
# a reader on the FIFO changes nothing: it is still not a file
exec 3<>"$FIFO"
expect_refused "check --audit FIFO with a reader" "$FIFO" "$WARDEN" check --audit "$FIFO" -- ls
exec 3>&-

# an over-long line is reported by number, without reading on
python3 - "$T/long.jsonl" <<'PY'
import hashlib, sys
line = '{"seq":1,"event":"x","prev":"%s"}' % ("0" * 64)
with open(sys.argv[1], "w") as f:
    f.write(line + "\n")
    f.write('{"seq":2,"pad":"' + "p" * (17 << 20) + '"}\n')
PY
expect_rc 1 "audit verify: a 17 MiB line" timeout 20 "$WARDEN" audit verify "$T/long.jsonl"
expect_in "$T/out" "long.jsonl: BROKEN: line 2: longer than 16777216 bytes" "  ... names the file and the line"

# Memory: the release build's peak stays small however long the log.  Not
# under ASan, whose shadow memory needs more address space than any cap.
if grep -q __asan_init "$WARDEN"; then
	ok "# SKIP memory caps: an ASan build"
	finish
fi
# a sparse 8 GB file of zeros (one endless line): it used to be read whole
truncate -s 8G "$T/zeros.jsonl"
expect_rc 1 "audit verify: 8 GB of zeros, under a 256 MB cap" \
	timeout 20 bash -c 'ulimit -v 262144; exec "$1" audit verify "$2"' _ "$WARDEN" "$T/zeros.jsonl"
expect_in "$T/out" "line 1: longer than" "  ... stops at the line limit"
rm -f "$T/zeros.jsonl"
# a valid 300 MB chain verifies under a 128 MB address-space cap
python3 - "$T/big.jsonl" <<'PY'
import hashlib, sys
prev, pad = "0" * 64, "p" * 900
with open(sys.argv[1], "w") as f:
    for i in range(1, 300001):
        line = '{"seq":%d,"event":"x","pad":"%s","prev":"%s"}' % (i, pad, prev)
        prev = hashlib.sha256(line.encode()).hexdigest()
        f.write(line + "\n")
open(sys.argv[1] + ".head", "w").write('{"seq":300000,"hash":"%s"}\n' % prev)
PY
expect_rc 0 "audit verify: a 300 MB log under a 128 MB cap" \
	timeout 60 bash -c 'ulimit -v 131072; exec "$1" audit verify "$2"' _ "$WARDEN" "$T/big.jsonl"
expect_in "$T/out" "ok, 300000 events, chain intact, head matches" "  ... and finds it intact"
rm -f "$T/big.jsonl"
finish
