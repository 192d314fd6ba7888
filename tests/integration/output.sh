#!/usr/bin/env bash
# Output windows (head + tail, one marker line with advice, exact counts),
# streaming without --json, and stdin (/dev/null unless --stdin).
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python

# A known output: lines "1".."20000" on stdout (108894 bytes).
seq 1 20000 >"$T/full"
size=$(stat -c %s "$T/full")

# Under the limit: everything, no marker.
wd --output-limit 1M --json -- /usr/bin/seq 1 20000
expect_rc 0 "output under the limit"
json_data stdout >"$T/got"
check "under the limit: the whole output is kept" cmp -s "$T/got" "$T/full"
check "under the limit: omitted 0, total exact" \
	test "$(json_get '[j["stdout"]["total_bytes"], j["stdout"]["omitted_bytes"]]')" = "[$size, 0]"

# window_ok FILE LIMIT [streamed]: FILE is a head of $T/full (at most
# LIMIT/2 bytes), one marker line, and a tail of $T/full (at most LIMIT/2
# bytes).  The windows break at a line boundary when one is within 512
# bytes: the kept head then ends with a newline and the tail
# starts a line, so the marker never splits a line.  A streamed head went
# out live and is kept whole (LIMIT/2 bytes).  The marker's count is what
# lies between.
window_ok() {
	python3 - "$1" "$2" "$T/full" "${3:-}" <<'PY'
import sys
got = open(sys.argv[1], "rb").read()
limit = int(sys.argv[2])
full = open(sys.argv[3], "rb").read()
streamed = sys.argv[4] == "streamed"
half = limit // 2
near = min(512, half // 4)
lines = [l for l in got.split(b"\n") if b"bytes omitted" in l]
if len(lines) != 1:
    sys.exit(f"{len(lines)} marker lines")
marker = lines[0]
if not any(w in marker.lower() for w in (b"narrow", b"grep", b"head", b"tail")):
    sys.exit(f"marker gives no advice: {marker!r}")
head, _, tail = got.partition(marker + b"\n")
if not head.endswith(b"\n"):
    sys.exit(f"the marker does not start a line: {head[-40:]!r}")
kept_head = head if (streamed or full.startswith(head)) else head[:-1]
if streamed and not full.startswith(head) and full.startswith(head[:-1]):
    kept_head = head[:-1]  # the newline warden put before the marker
if not full.startswith(kept_head):
    sys.exit(f"head is not a prefix: {head[-40:]!r}")
if streamed and len(kept_head) != half:
    sys.exit(f"streamed head is {len(kept_head)} bytes, not {half}")
if not streamed and not (half - near <= len(kept_head) <= half and kept_head.endswith(b"\n")):
    sys.exit(f"head of {len(kept_head)} bytes does not end a line near {half}")
if not full.endswith(tail) or not (half - near <= len(tail) <= half):
    sys.exit(f"tail of {len(tail)} bytes is not a suffix near {half}: {tail[:40]!r}")
if full[len(full) - len(tail) - 1:len(full) - len(tail)] != b"\n":
    sys.exit(f"tail does not start a line: {tail[:40]!r}")
if str(len(full) - len(kept_head) - len(tail)).encode() not in marker:
    sys.exit(f"marker does not count what lies between: {marker!r}")
PY
}

# Over the limit, --json: head + marker + tail, counts exact.
wd --output-limit 4096 --json -- /usr/bin/seq 1 20000
expect_rc 0 "output over --output-limit 4096"
json_data stdout >"$T/got"
check "--json window: head 2048 + one marker line with the count and advice + tail 2048" \
	window_ok "$T/got" 4096
check "--json window: total and omitted bytes (what the marker counts)" \
	python3 -c 'import json,sys,re; s=json.load(open(sys.argv[1]))["stdout"]; n=int(re.search(r"(\d+) bytes omitted", s["data"]).group(1)); sys.exit(not (s["total_bytes"] == int(sys.argv[2]) and s["omitted_bytes"] == n and int(sys.argv[2]) - 4096 <= n <= int(sys.argv[2]) - 4096 + 1024))' "$OUT" "$size"

# Without --json the kept windows stream to warden's own stdout.
wd --output-limit 4096 -- /usr/bin/seq 1 20000
expect_rc 0 "streamed output over the limit"
check "streamed window: head + marker + tail on warden's stdout" window_ok "$OUT" 4096 streamed

# stderr has its own window and goes to warden's stderr.
wd --output-limit 4096 -- /bin/sh -c 'seq 1 20000 >&2; echo only-stdout'
check "stderr window streams to warden's stderr" window_ok "$ERR" 4096 streamed
check "stdout is separate from stderr" test "$(cat "$OUT")" = only-stdout

# The default limit is 64 KiB per stream.
wd --json -- /usr/bin/seq 1 20000
check "default --output-limit is 64 KiB" window_ok <(json_data stdout) 65536

# The marker names the stream.
wd --output-limit 1K --json -- /bin/sh -c 'seq 1 20000 >&2'
check "the stderr marker says stderr" python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["stderr"]["data"]; sys.exit("stderr" not in [l for l in d.splitlines() if "bytes omitted" in l][0])' "$OUT"

# A command that closes its stdout and stderr early is still waited for.
start=$SECONDS
wd --timeout 10 -- /bin/sh -c 'exec >&- 2>&-; sleep 1; exit 4'
expect_rc 4 "stdout and stderr closed early: the command's own status"
check "stdout and stderr closed early: not held to the timeout" test $((SECONDS - start)) -lt 5

# ---- stdin
echo "host-stdin-data" >"$T/in"
"$WARDEN" run --workspace "$WS" -- /bin/cat <"$T/in" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "without --stdin: cat reads nothing"
check "without --stdin: no data passes" test ! -s "$OUT"
"$WARDEN" run --workspace "$WS" -- /usr/bin/readlink /proc/self/fd/0 <"$T/in" >"$OUT" 2>"$ERR"
check "without --stdin: fd 0 is /dev/null" test "$(cat "$OUT")" = /dev/null

head -c 3000000 /dev/urandom >"$T/rnd"
"$WARDEN" run --workspace "$WS" --stdin -- /usr/bin/sha256sum <"$T/rnd" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "--stdin: 3 MB through sha256sum"
check "--stdin: the data arrives intact" \
	test "$(cut -d' ' -f1 "$OUT")" = "$(sha256sum "$T/rnd" | cut -d' ' -f1)"

# A command that stops reading early must not hang warden or kill it.
yes | head -c 50000000 >"$T/big"
timeout 20 "$WARDEN" run --workspace "$WS" --stdin -- /usr/bin/head -c 10 <"$T/big" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "--stdin: a command reading 10 bytes of 50 MB ends promptly"
check "--stdin: it got its 10 bytes" test "$(wc -c <"$OUT")" = 10
timeout 20 "$WARDEN" run --workspace "$WS" --stdin -- /bin/true <"$T/big" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "--stdin: a command that never reads ends promptly"

# A stdin pipe that stays open and silent must not hold warden once the
# command has exited.
exec {silent}< <(exec sleep 30)
silent_pid=$!
at_exit "kill $silent_pid 2>/dev/null"
start=$SECONDS
timeout 20 "$WARDEN" run --workspace "$WS" --stdin -- /bin/true >"$OUT" 2>"$ERR" <&"$silent"
RC=$?
exec {silent}<&-
expect_rc 0 "--stdin: an open, silent pipe"
check "--stdin: warden returned while the pipe was still open ($((SECONDS - start)) s)" \
	test $((SECONDS - start)) -lt 10

finish
