#!/usr/bin/env bash
# Bad input: exit 125, a message naming the option and the value, and
# nothing started (the command would have created a marker file).
. "$(dirname "$0")/lib.sh"
require_root

n=0
# bad DESCRIPTION OPTION-NAME VALUE-IN-MESSAGE -- WARDEN-RUN-ARGS...
# The command after the options touches a marker; it must never run.
bad() {
	local desc=$1 opt=$2 val=$3
	shift 4
	n=$((n + 1))
	local marker=marker-$n
	"$WARDEN" run "$@" -- /usr/bin/touch "/workspace/$marker" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	expect_rc 125 "$desc"
	if [ -n "$opt" ]; then
		check "$desc: message names $opt" grep -qF -- "$opt" "$ERR"
	fi
	if [ -n "$val" ]; then
		check "$desc: message names '$val'" grep -qF -- "$val" "$ERR"
	fi
	check "$desc: nothing ran" test ! -e "$WS/$marker"
	check "$desc: nothing on stdout" test ! -s "$OUT"
}

W=(--workspace "$WS")
bad "unknown option" --bogus-option '' -- "${W[@]}" --bogus-option
bad "unknown option with a value" --frobnicate '' -- "${W[@]}" --frobnicate=1
bad "bad size" --memory 12X -- "${W[@]}" --memory 12X
bad "size with junk" --memory 512Mx -- "${W[@]}" --memory 512Mx
bad "zero memory" --memory 0 -- "${W[@]}" --memory 0
bad "negative pids" --pids -1 -- "${W[@]}" --pids -1
bad "pids not a number" --pids many -- "${W[@]}" --pids many
bad "pids overflow" --pids 99999999999999999999 -- "${W[@]}" --pids 99999999999999999999
bad "timeout not a number" --timeout abc -- "${W[@]}" --timeout abc
bad "negative timeout" --timeout -5 -- "${W[@]}" --timeout -5
bad "cpus not a number" --cpus lots -- "${W[@]}" --cpus lots
bad "zero cpus" --cpus 0 -- "${W[@]}" --cpus 0
bad "bad tmp size" --tmp-size 1Q -- "${W[@]}" --tmp-size 1Q
bad "bad output limit" --output-limit x -- "${W[@]}" --output-limit x
bad "bad isolation" --isolation vm-please -- "${W[@]}" --isolation vm-please
bad "bad port" --allow-port 70000 -- "${W[@]}" --allow-port 70000
bad "setenv without =" --setenv NOEQUALS -- "${W[@]}" --setenv NOEQUALS
bad "missing workspace" --workspace "$T/no-such-dir" -- --workspace "$T/no-such-dir"
bad "ro-bind source missing" --ro-bind "$T/no-such-src" -- "${W[@]}" --ro-bind "$T/no-such-src"
bad "bind source missing" --bind "$T/no-such-src" -- "${W[@]}" --bind "$T/no-such-src:/mnt/x"
bad "bind destination relative" --ro-bind relative/dst -- "${W[@]}" --ro-bind "/usr:relative/dst"
bad "option missing its value" --memory '' -- "${W[@]}" --memory
bad "output limit beyond its cap" --output-limit 1G -- "${W[@]}" --output-limit 1G
bad "timeout beyond a day" --timeout 86401 -- "${W[@]}" --timeout 86401
bad "binds at the process level" --ro-bind /usr -- "${W[@]}" --isolation process --ro-bind /usr:/opt/usr

# No program: nothing to run at all.
for args in "" "--"; do
	# shellcheck disable=SC2086
	"$WARDEN" run --workspace "$WS" $args >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	expect_rc 125 "no program ('warden run $args')"
	check "no program: the message says so" grep -qi 'program' "$ERR"
done

# A workspace that is a file, not a directory.
touch "$T/a-file"
"$WARDEN" run --workspace "$T/a-file" -- /usr/bin/touch /workspace/x >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 125 "workspace is a file"
check "workspace is a file: message names the value" grep -qF -- "$T/a-file" "$ERR"
check "workspace is a file: message names --workspace" grep -qF -- "--workspace" "$ERR"

# The unknown subcommand and a bad global option are bad input too.
"$WARDEN" frobnicate >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 125 "unknown subcommand"


# OpenSSL is loaded only when a run needs it (src/net/ossl.h).  Where it
# cannot be loaded (here: libssl.so.3 hidden by a bind mount of /dev/null
# in a mount namespace of this test's own), a run with network is refused
# with 125 naming the library, and nothing runs; a run without network
# never needs it and runs.
libssl=$(ldconfig -p | awk '/libssl\.so\.3 .*x86-64/ { print $NF; exit }')
if [ -z "$libssl" ]; then
	not_ok "network without libssl: ldconfig knows no libssl.so.3 (the build needs it)"
elif [ "$(uname -m)" != x86_64 ]; then
	ok "# SKIP OpenSSL is linked, not loaded late, on $(uname -m)"
else
	hide() { unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$libssl" "$@"; }
	hide "$WARDEN" run --workspace "$WS" --net allow --allow-host example.invalid -- \
		/usr/bin/touch /workspace/ossl-marker >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	expect_rc 125 "network without a loadable libssl.so.3"
	check "network without libssl: message names libssl.so.3" grep -qF -- "libssl.so.3" "$ERR"
	check "network without libssl: nothing ran" test ! -e "$WS/ossl-marker"
	hide "$WARDEN" run --workspace "$WS" -- /usr/bin/touch /workspace/ossl-marker \
		>"$OUT" 2>"$ERR" </dev/null
	RC=$?
	expect_rc 0 "no network: runs without libssl.so.3"
	rm -f "$WS/ossl-marker"
fi

finish
