#!/usr/bin/env bash
# Exit statuses: the command's own, 128+N for signal N, 124 timeout, 126
# cannot execute, 127 not found; --json agrees with the status.
. "$(dirname "$0")/lib.sh"
require_root
require_userns

for n in 0 1 42 255; do
	wd -- /bin/sh -c "exit $n"
	expect_rc "$n" "the command's own status $n"
done

wd -- /bin/sh -c 'kill -TERM $$'
expect_rc 143 "killed by SIGTERM: 128+15"
wd -- /bin/sh -c 'kill -KILL $$'
expect_rc 137 "killed by SIGKILL: 128+9"
wd -- /bin/sh -c 'kill -SEGV $$'
expect_rc 139 "killed by SIGSEGV: 128+11"
wd --json -- /bin/sh -c 'kill -TERM $$'
check "--json: signal 15, exit_code null, status 143" \
	test "$(json_get '[j["signal"], j["exit_code"], j["status"], j["timed_out"]]')" = '[15, null, 143, false]'

wd --timeout 1 -- /bin/sleep 30
expect_rc 124 "--timeout 1 on sleep 30"
wd --timeout 0.3 --json -- /bin/sleep 30
expect_rc 124 "--timeout 0.3 --json"
check "--json: timed_out true, status 124" \
	test "$(json_get '[j["timed_out"], j["status"]]')" = '[true, 124]'
upper=$((300 + $(scaled 5) * 1000))
check "--json: the timeout fired near 0.3 s (250 <= wall_ms < $upper)" \
	python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["wall_ms"]; sys.exit(not 250 <= w < int(sys.argv[2]))' "$OUT" "$upper"

wd -- wd-no-such-program
expect_rc 127 "program not on PATH"
expect_out 'wd-no-such-program' "the message names the program" "$ERR"
wd -- /usr/bin/wd-no-such-program
expect_rc 127 "absolute path that does not exist"
wd --json -- wd-no-such-program
expect_rc 127 "program not found, --json"
check "--json: status 127" test "$(json_get 'j["status"]')" = 127

printf '#!/bin/sh\necho hi\n' >"$WS/not-exec"
chmod 644 "$WS/not-exec"
wd -- /workspace/not-exec
expect_rc 126 "a file without the execute bit"
mkdir -p "$WS/a-dir"
wd -- /workspace/a-dir
expect_rc 126 "a directory"
printf '\x7fELF garbage' >"$WS/bad-elf"
chmod 755 "$WS/bad-elf"
wd -- /workspace/bad-elf
expect_rc 126 "a corrupt executable"

# argv goes to the program verbatim: no shell, no expansion.
wd -- /usr/bin/printf '[%s]\n' 'a;b' '$(id)' '*' 'x y' '' "\`id\`"
check "argv passes verbatim (no shell)" \
	test "$(cat "$OUT")" = "$(printf '[%s]\n' 'a;b' '$(id)' '*' 'x y' '' '`id`')"

# A workspace path with a space and a colon, and a relative one.
mkdir -p "$T/my ws:1"
wd --workspace "$T/my ws:1" -- /usr/bin/touch /workspace/made
check "a workspace path with a space and a colon" test -e "$T/my ws:1/made"
(cd "$T" && "$WARDEN" run --workspace ws -- /usr/bin/touch /workspace/rel) >/dev/null 2>&1 </dev/null
check "a relative --workspace" test -e "$WS/rel"
(cd "$WS" && "$WARDEN" run -- /usr/bin/touch /workspace/default) >/dev/null 2>&1 </dev/null
check "the default workspace is the current directory" test -e "$WS/default"

# A relative program name with a slash resolves against /workspace.
printf '#!/bin/sh\nexit 7\n' >"$WS/seven"
chmod 755 "$WS/seven"
wd -- ./seven
expect_rc 7 "./seven runs from /workspace"

finish
