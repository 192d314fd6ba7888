#!/usr/bin/env bash
# The command line: messages that name the
# right argument and quote and cut values, refusals of what a user would
# expect refused, Docker's spellings pointed at warden's, --json for every
# outcome, a signal reported as itself, invalid UTF-8 escaped visibly,
# fail-closed limits, the time namespace, --reproducible, --print-plan.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python

W=(--workspace "$WS")

# refused NAME EXPECT-IN-STDERR -- ARGS...: exit 125, stderr has EXPECT,
# nothing ran (the command would create a marker), stdout empty.
n=0
refused() {
	local desc=$1 want=$2
	shift 3
	n=$((n + 1))
	"$WARDEN" run "$@" -- /usr/bin/touch "/workspace/cli-marker-$n" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	expect_rc 125 "$desc"
	check "$desc: says $(printf %q "$want")" grep -qF -- "$want" "$ERR"
	check "$desc: nothing ran" test ! -e "$WS/cli-marker-$n"
	check "$desc: nothing on stdout" test ! -s "$OUT"
}

# ---- item 5: the right argument, quoted and cut
refused "a missing value is not an unknown option" "option '--memory' needs a value" -- "${W[@]}" --memory
refused "a missing short value" "option '-w' needs a value" -- -w
refused "an unknown short option in a cluster names that option" "unknown option '-Q'" -- "${W[@]}" -vQ
refused "a flag given a value" "'--stdin' takes no value" -- "${W[@]}" --stdin=yes
big=$(head -c 100000 /dev/zero | tr '\0' a)
refused "a 100 KB value is cut in the message" "(100000 bytes)" -- "${W[@]}" --memory "$big"
check "  ... to a short line" test "$(wc -c <"$ERR")" -lt 400
refused "an escape sequence in a value does not reach the terminal" '\x1b' -- "${W[@]}" --isolation $'\e[31mred'
check "  ... no raw ESC byte in the message" sh -c "! grep -q \"$(printf '\033')\" '$ERR'"

# ---- item 5: refusals a user would expect
refused "a size that overflows" "too large" -- "${W[@]}" --memory 18446744073709551615
refused "a size past 2^63" "too large" -- "${W[@]}" --tmp-size 9223372036854775808
refused "an ambiguous MB suffix" '"MB" is ambiguous' -- "${W[@]}" --memory 1MB
refused "CPUs finer than six decimals" "six decimals" -- "${W[@]}" --cpus 0.0000001
refused "a timeout finer than a millisecond" "millisecond" -- "${W[@]}" --timeout 0.0005
refused "an environment name with a space" "environment variable name" -- "${W[@]}" --setenv 'A B=1'
refused "an environment name starting with a digit" "environment variable name" -- "${W[@]}" --setenv '1A=1'
refused "an environment name with a control byte" "environment variable name" -- "${W[@]}" --setenv $'A\tB=1'
refused "a 100 KB environment name" "environment variable name" -- "${W[@]}" --setenv "$big=1"
refused "/ bound read-write" "system directory" -- "${W[@]}" --bind /:/host
refused "/etc bound read-write" "system directory" -- "${W[@]}" --bind /etc:/x
mkfifo "$T/fifo"
refused "a FIFO as a bind source" "not a regular file or a directory" -- "${W[@]}" --ro-bind "$T/fifo:/x"
refused "two colons in a bind" "SRC[:DST]" -- "${W[@]}" --bind /tmp:/x:/y
refused "a host rule with an unknown method" "--allow-host" -- "${W[@]}" --allow-host 'example.com=FROB'
refused "a host rule with a leading dash" "--allow-host" -- "${W[@]}" --allow-host=-example.com

# ---- item 5: Docker's spellings
refused "docker -v SRC:DST" "did you mean --bind" -- "${W[@]}" -v /tmp:/mnt
refused "docker -e" "--setenv" -- "${W[@]}" -e A=1
refused "docker --network" "warden's: --net" -- "${W[@]}" --network none
refused "docker --pids-limit" "--pids" -- "${W[@]}" --pids-limit 10
refused "docker --user" "uid 1000" -- "${W[@]}" --user 0

# ---- item 5: --help names every option and every exit status
"$WARDEN" run --help >"$OUT" 2>"$ERR"
for opt in --policy --command --audit --approve --tool --print-plan --best-effort --reproducible \
	--allow-range --json --stdin; do
	check "run --help names $opt" grep -qF -- "$opt" "$OUT"
done
for st in 123 124 125 126 127; do
	check "run --help names exit $st" grep -q "$st" "$OUT"
done
"$WARDEN" doctor --help >"$OUT" 2>"$ERR"
check "doctor --help says what doctor does" grep -qi 'isolation level' "$OUT"

# ---- item 5: --json for every outcome
"$WARDEN" run --json "${W[@]}" --memory 12X -- /bin/true >"$OUT" 2>"$ERR"
RC=$?
expect_rc 125 "--json bad input"
check "--json bad input: one JSON object with status 125 and the message" \
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["status"] == 125 and "--memory" in d["error"]))' "$OUT"
wd --json -- /no/such/program
expect_rc 127 "--json not found: 127"
check "--json not found: the reason is in the result" \
	test "$(json_get '[j["error"]["errno"], j["error"]["step"]]')" = '["ENOENT", "6i execve"]'
wd --json -- /bin/sh -c 'printf "a\377b\n"'
check "--json invalid UTF-8 is escaped visibly (\\udcff), not replaced" \
	grep -qF 'a\udcffb' "$OUT"
check "--json: the policy stage is reported off for an explicit argv" \
	test "$(json_get 'j["policy"]')" = off

# SIGTERM to warden: the sandbox ends and the status says 15, not 9
"$WARDEN" run "${W[@]}" --json -- /bin/sleep 30 >"$OUT" 2>"$ERR" </dev/null &
wpid=$!
sleep 1
kill -TERM "$wpid"
wait "$wpid"
RC=$?
expect_rc 143 "SIGTERM to warden: 128+15"
check "SIGTERM to warden: --json says signal 15" test "$(json_get 'j["signal"]')" = 15

# ---- item 6: fail closed
if command -v setpriv >/dev/null; then
	uws=$T/uws
	mkdir "$uws"
	chown 1234:1234 "$uws"
	(cd "$uws" && setpriv --reuid 1234 --regid 1234 --clear-groups \
		"$WARDEN" run --workspace "$uws" --memory 64M -- /bin/true) >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	if [ "$RC" = 125 ]; then
		check "an ordinary user's limit that cannot be enforced: refused, naming --best-effort" \
			grep -q -- '--best-effort' "$ERR"
		(cd "$uws" && setpriv --reuid 1234 --regid 1234 --clear-groups \
			"$WARDEN" run --workspace "$uws" --memory 64M --best-effort --json -- /bin/true) \
			>"$OUT" 2>"$ERR" </dev/null
		RC=$?
		expect_rc 0 "  ... and with --best-effort it runs"
		check "  ... saying cgroup none" test "$(json_get 'j["protections"]["cgroup"]')" = none
	else
		expect_rc 0 "an ordinary user has a delegated cgroup here: the limit is enforced"
	fi
	# doctor as an ordinary user leaves nothing in /tmp
	before=$(ls -d /tmp/warden-doctor-* 2>/dev/null | sort)
	(cd "$uws" && setpriv --reuid 1234 --regid 1234 --clear-groups "$WARDEN" doctor) >/dev/null 2>&1
	after=$(ls -d /tmp/warden-doctor-* 2>/dev/null | sort)
	check "doctor as an ordinary user leaves no /tmp/warden-doctor-*" test "$before" = "$after"
fi
cat >"$T/require.json" <<'J'
{"version": 1, "programs": {"true": {}}, "sandbox": {"require": ["netns"]}}
J
"$WARDEN" run "${W[@]}" --policy "$T/require.json" --isolation process -- /bin/true >"$OUT" 2>"$ERR"
RC=$?
expect_rc 125 "a policy requiring netns refuses the process level"
check "  ... naming what is missing" grep -q 'requires netns' "$ERR"

# ---- item 8: time and entropy
if [ -e /proc/self/ns/time ]; then
	wd -- /bin/cat /proc/uptime
	up=$(cut -d. -f1 "$OUT")
	host_up=$(cut -d. -f1 /proc/uptime)
	check "the sandbox's boot clock starts near zero ($up s inside, $host_up s on the host)" \
		test "${up:-999999}" -lt 10 -a "$host_up" -gt "${up:-0}"
fi
wd --reproducible -- /usr/bin/env
check "--reproducible sets SOURCE_DATE_EPOCH" grep -q '^SOURCE_DATE_EPOCH=315532800$' "$OUT"
check "--reproducible sets PYTHONHASHSEED=0" grep -q '^PYTHONHASHSEED=0$' "$OUT"
check "--reproducible keeps TZ=UTC" grep -q '^TZ=UTC$' "$OUT"
wd --reproducible -- /usr/bin/python3 -c 'print(hash("warden"))'
first=$(cat "$OUT")
wd --reproducible -- /usr/bin/python3 -c 'print(hash("warden"))'
check "--reproducible: Python's string hash is the same run to run" test "$first" = "$(cat "$OUT")"

# ---- --print-plan: what the sandbox would be, nothing run
"$WARDEN" run "${W[@]}" --print-plan -- /usr/bin/touch /workspace/plan-marker >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "--print-plan"
check "--print-plan shows the workspace bind" grep -q "on /workspace" "$OUT"
check "--print-plan shows the workspace as a host path" grep -qF "$WS" "$OUT"
check "--print-plan shows seccomp and Landlock" grep -q "^seccomp" "$OUT"
check "--print-plan ran nothing" test ! -e "$WS/plan-marker"

# ---- a newcomer's day: sizes in units, CPUs the host has, --cwd, audit --json
refused "a memory size below the floor is said in units" "must be at least 4M" -- "${W[@]}" --memory 1
refused "a /tmp size below the floor is said in units" "must be at least 64K" -- "${W[@]}" --tmp-size 1
ncpu=$(getconf _NPROCESSORS_ONLN)
refused "more CPUs than the host has are no limit: refused" "this host has $ncpu CPU" -- "${W[@]}" --cpus $((ncpu + 1))
wd --cpus "$ncpu" -- /bin/true
expect_rc 0 "--cpus equal to the host's CPUs runs"
mkdir -p "$WS/sub/dir"
wd --cwd sub/dir -- /bin/pwd
expect_rc 0 "run --cwd DIR"
check "  ... runs in /workspace/DIR" grep -qx /workspace/sub/dir "$OUT"
wd --cwd no-such-dir -- /bin/pwd
expect_rc 126 "run --cwd with a directory the workspace lacks"
check "  ... names the working directory, not the program" grep -q "working directory 'no-such-dir': No such file" "$ERR"
"$WARDEN" run "${W[@]}" --json --cwd no-such-dir -- /bin/pwd >"$OUT" 2>"$ERR" </dev/null
check "  ... --json names the step" grep -q '"step":"6b working directory"' "$OUT"
refused "run --cwd with an absolute path" "relative to the workspace" -- "${W[@]}" --cwd /etc
A=$T/audit.log
"$WARDEN" run "${W[@]}" --audit "$A" -- /bin/cat /dev/null >"$OUT" 2>"$ERR" </dev/null
"$WARDEN" audit verify --json "$A" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "audit verify --json of an intact log"
check "  ... one JSON object saying intact" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["intact"] is True and d["file"]' "$OUT"
"$WARDEN" audit verify --bogus "$A" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 125 "audit verify with an unknown option"
check "  ... names the option, not 'expected one FILE'" grep -q "unknown option '--bogus'" "$ERR"
"$WARDEN" audit verify --json /nonexistent/log >"$OUT" 2>"$ERR"
RC=$?
expect_rc 125 "audit verify --json of a missing log"
check "  ... the error in JSON on stdout" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["status"] == 125' "$OUT"

# warden under a realtime policy (chrt -f): a cgroup v1 cpu group without
# a realtime budget refuses the task with a bare EINVAL at step 4b.  Where
# the host takes it (no cpu controller, or a budget), the run just works;
# where it refuses, the message must say why.
if command -v chrt >/dev/null; then
	chrt -f 10 "$WARDEN" run "${W[@]}" -- /bin/true >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	if [ "$RC" = 0 ]; then
		ok "a run under chrt -f: this host takes a realtime task into the sandbox's cgroup"
	else
		expect_rc 125 "a run under chrt -f refused"
		check "  ... naming the realtime policy, not a bare 'Invalid argument'" \
			grep -q "realtime scheduling policy" "$ERR"
	fi
fi

finish
