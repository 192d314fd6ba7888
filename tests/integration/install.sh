#!/usr/bin/env bash
# install: warden as a library, from the installed tree only.
#
#   1. `meson install --destdir` puts every file where it belongs: the
#      header, libwarden.so (versioned), warden.pc, the CLI, its helpers in
#      libexec (warden-monitor, warden-init) and every manual page (listed
#      here one by one);
#   2. every function of the installed warden.h has a manual page, every
#      .so link leads to a page that names the function, and every page
#      renders without a single groff warning (and through man-db);
#   3. warden-policy(5) names every key of the policy document, and
#      warden(1) every option of every subcommand's --help;
#   4. libwarden.so exports the wd_* functions of the header and nothing
#      else;
#   5. a C program built with `pkg-config --cflags --libs warden` against
#      the installed tree runs sandboxes through the public API
#      (install_consumer.c), and so do the examples of libwarden(3) and of
#      README.md, copied from the page and the file as a reader would;
#   6. the CLI's own sources build against the installed libwarden.so alone
#      (nothing internal), and that CLI runs.
#
# Environment: WARDEN, WD_PROBE (lib.sh), WD_BUILD_ROOT (the meson build
# directory), WD_SOURCE_ROOT.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C # one sort order for sort and comm
BUILD=${WD_BUILD_ROOT:?set WD_BUILD_ROOT to the meson build directory}
SRC=${WD_SOURCE_ROOT:?set WD_SOURCE_ROOT to the source tree}

for tool in meson pkg-config cc nm readelf groff man python3; do
	if ! command -v "$tool" >/dev/null; then
		not_ok "$tool is missing (scripts/deps.sh installs it)"
		finish
	fi
done

# ---- 1. the install ----
DEST=$T/dest
if ! meson install -C "$BUILD" --destdir "$DEST" --no-rebuild --quiet >"$T/install.log" 2>&1; then
	not_ok "meson install --destdir"
	cat "$T/install.log"
	finish
fi
ok "meson install --destdir"

# Where meson put things (prefix /usr/local and Debian's multiarch libdir
# by default): asked of the build, not assumed.
eval "$(meson introspect "$BUILD" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
for k in ("prefix", "bindir", "libdir", "libexecdir", "includedir", "mandir"):
    v = o[k] if o[k].startswith("/") else o["prefix"] + "/" + o[k]
    print(f"{k.upper()}={v}")
')"
VERSION=$(meson introspect "$BUILD" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
SOVERSION=${VERSION%%.*}
MAN=$DEST$MANDIR
LIB=$DEST$LIBDIR

# Every manual page warden installs, by name: a page missing from the
# install (or from docs/man/meson.build) fails here.
MAN1=(warden)
MAN5=(warden-policy)
MAN3=(
	libwarden
	wd_approval_consume wd_approval_grant wd_approval_grant_json wd_approval_list wd_approval_pending
	wd_approval_recorded
	wd_audit_approval wd_audit_close wd_audit_decision wd_audit_event wd_audit_open
	wd_audit_result wd_audit_sandbox_id wd_audit_verify
	wd_cmd_free wd_cmd_new wd_cmd_set_argv wd_cmd_set_cancel_fd wd_cmd_set_command
	wd_cmd_set_cwd
	wd_cmd_set_interactive wd_cmd_set_output_limit wd_cmd_set_policy wd_cmd_set_stdin
	wd_cmd_set_stream wd_cmd_set_timeout wd_cmd_set_tool wd_cmd_setenv
	wd_ctx_cancel wd_ctx_check_spec wd_ctx_free wd_ctx_new wd_ctx_run wd_ctx_set_approver
	wd_ctx_set_audit_file wd_ctx_set_event_handler wd_ctx_set_log_handler
	wd_ctx_set_policy wd_ctx_set_policy_file wd_ctx_set_state_dir wd_ctx_state_dir
	wd_decision_advice wd_decision_approval_id wd_decision_argv wd_decision_free
	wd_decision_json wd_decision_kind wd_decision_policy wd_decision_reason wd_decision_rule
	wd_doctor wd_doctor_pod
	wd_esc_path wd_esc_text
	wd_event_decision wd_event_json wd_event_kind wd_event_name wd_event_output
	wd_event_result wd_event_sandbox_id
	wd_image_build wd_image_export wd_image_import wd_image_inspect wd_image_list
	wd_image_recipe_add_env wd_image_recipe_add_packages wd_image_recipe_free
	wd_image_recipe_load wd_image_recipe_new wd_image_recipe_set_from
	wd_image_recipe_set_suite wd_image_recipe_set_user wd_image_remove
	wd_parse_fixed6 wd_parse_size wd_parse_u64
	wd_peer_check
	wd_policy_approval_ttl wd_policy_audit_path wd_policy_decide wd_policy_digest
	wd_policy_free wd_policy_json wd_policy_limits wd_policy_load wd_policy_network_allow wd_policy_route
	wd_policy_sandbox wd_policy_tool_image
	wd_pool_free wd_pool_new wd_pool_run wd_pool_stats
	wd_report_files wd_report_free wd_report_ignored wd_report_json wd_report_new wd_report_path
	wd_report_result
	wd_request_free wd_request_new wd_request_set_argv wd_request_set_command
	wd_request_set_cwd wd_request_set_spec wd_request_set_system_root wd_request_set_workspace wd_request_setenv
	wd_result_decision wd_result_exec_errno wd_result_exec_step wd_result_net_refusal wd_result_exit_code wd_result_free
	wd_result_json wd_result_oom_killed wd_result_outcome wd_result_output
	wd_result_output_omitted wd_result_output_total wd_result_policy wd_result_refusal
	wd_result_sandbox_id wd_result_signal wd_result_status wd_result_timed_out
	wd_result_wall_ns wd_result_cpu_ns wd_result_peak_memory wd_result_protections_json
	wd_run
	wd_sandbox_apply wd_sandbox_cancel wd_sandbox_create wd_sandbox_destroy wd_sandbox_diff
	wd_sandbox_discard wd_sandbox_exec wd_sandbox_id wd_sandbox_request wd_sandbox_workspace
	wd_session_apply wd_session_copy_in wd_session_copy_out wd_session_create wd_session_diff wd_session_discard wd_session_exec
	wd_session_exec_detached wd_session_list wd_session_log_read wd_session_logs
	wd_session_remove wd_session_request wd_session_snapshot wd_session_snapshot_list wd_session_snapshot_remove
	wd_session_start wd_session_stop wd_session_update wd_session_workspace
	wd_set_log_handler
	wd_spec_add_bind wd_spec_add_inject wd_spec_add_net_rule wd_spec_add_placeholder
	wd_spec_add_protected wd_spec_add_secret wd_spec_allow_port wd_spec_free wd_spec_new
	wd_spec_plan wd_spec_set_argv wd_spec_set_best_effort wd_spec_set_disk
	wd_spec_set_event_handler wd_spec_set_image
	wd_isolation_name wd_isolation_parse wd_limits_defaults
	wd_spec_set_isolation wd_spec_set_limits wd_spec_set_net wd_spec_set_reproducible
	wd_spec_set_stdin wd_spec_set_stream wd_spec_set_term wd_spec_set_time_namespace
	wd_spec_set_tls_intercept wd_spec_set_workspace wd_spec_set_workspace_mode wd_spec_setenv
	wd_userns_enter
	wd_workspace_close wd_workspace_open wd_workspace_openat wd_workspace_path
	wd_workspace_protect wd_workspace_protected wd_workspace_write
	wd_workspace_ignore wd_ignore_match wd_ignore_free
)

expect_file() {
	if [ -f "$DEST$1" ]; then
		ok "installed: $1"
	else
		not_ok "not installed: $1"
	fi
}

expect_file "$INCLUDEDIR/warden.h"
expect_file "$LIBDIR/libwarden.so.$VERSION"
expect_file "$LIBDIR/pkgconfig/warden.pc"
expect_file "$BINDIR/warden"
# the session monitor, and the first program of a gVisor sandbox in an image
expect_file "$LIBEXECDIR/warden/warden-monitor"
expect_file "$LIBEXECDIR/warden/warden-init"
check "libwarden.so -> libwarden.so.$SOVERSION -> libwarden.so.$VERSION" \
	test "$(readlink "$LIB/libwarden.so")" = "libwarden.so.$SOVERSION" -a \
	"$(readlink "$LIB/libwarden.so.$SOVERSION")" = "libwarden.so.$VERSION"
check "SONAME libwarden.so.$SOVERSION" \
	grep -q "Library soname: \[libwarden.so.$SOVERSION\]" <(readelf -d "$LIB/libwarden.so.$VERSION")
missing=()
for p in "${MAN1[@]/%/.1}" "${MAN5[@]/%/.5}"; do
	[ -f "$MAN/man${p##*.}/$p" ] || missing+=("$p")
done
for p in "${MAN3[@]}"; do
	[ -f "$MAN/man3/$p.3" ] || missing+=("$p.3")
done
check "all $((${#MAN1[@]} + ${#MAN5[@]} + ${#MAN3[@]})) manual pages installed${missing[*]:+ (missing: ${missing[*]})}" \
	test ${#missing[@]} -eq 0
extra=$(cd "$MAN" && find . -type f | sed 's|^\./||' | sort | comm -23 - <(
	{
		printf 'man1/%s.1\n' "${MAN1[@]}"
		printf 'man5/%s.5\n' "${MAN5[@]}"
		printf 'man3/%s.3\n' "${MAN3[@]}"
	} | sort
) | tr '\n' ' ')
check "no installed page missing from this test's list${extra:+ (unlisted: $extra)}" test -z "$extra"

# ---- 2. manual pages: one per function, and every one renders ----
# Each function the installed header declares (a name followed by '(' at
# the start of a declaration).
mapfile -t FUNCS < <(grep -oE '^[a-z][a-z0-9_ *]*[ *](wd_[a-z0-9_]+)\(' "$DEST$INCLUDEDIR/warden.h" |
	grep -oE 'wd_[a-z0-9_]+\($' | tr -d '(' | sort -u)
check "the header declares functions (${#FUNCS[@]})" test ${#FUNCS[@]} -gt 50
nopage=()
for f in "${FUNCS[@]}"; do
	[ -f "$MAN/man3/$f.3" ] || nopage+=("$f")
done
check "every function of warden.h has a page${nopage[*]:+ (none for: ${nopage[*]})}" \
	test ${#nopage[@]} -eq 0

# A .so link points at a page that exists and lists the function in NAME.
badlink=()
for f in "${MAN3[@]}"; do
	first=$(head -n1 "$MAN/man3/$f.3")
	case $first in
	".so "*)
		target=${first#.so }
		if [ ! -f "$MAN/$target" ] ||
			! sed -n '/^\.SH NAME/,/^\.SH/p' "$MAN/$target" | grep -qw -- "$f"; then
			badlink+=("$f -> $target")
		fi
		[ "$(wc -l <"$MAN/man3/$f.3")" = 1 ] || badlink+=("$f: more than the .so line")
		;;
	esac
done
check "every .so link leads to a page naming the function${badlink[*]:+ (${badlink[*]})}" \
	test ${#badlink[@]} -eq 0

# groff with every warning on (-ww), from the man directory so .so
# requests resolve; then man-db itself, by name, as a reader would open it.
warned=0
for page in $(cd "$MAN" && find . -type f | sed 's|^\./||' | sort); do
	out=$(cd "$MAN" && groff -s -t -man -Tutf8 -ww -z "$page" 2>&1)
	if [ -n "$out" ]; then
		not_ok "$page renders with warnings"
		printf '%s\n' "$out" | head -5 | sed 's/^/  | /'
		warned=$((warned + 1))
	fi
	name=${page##*/}
	sect=${name##*.}
	txt=$(MANPATH=$MAN MANWIDTH=80 man --warnings=w,all "$sect" "${name%.*}" 2>"$T/man.err")
	if [ -s "$T/man.err" ] || ! grep -q '^NAME' <<<"$txt"; then
		not_ok "man $sect ${name%.*}: $(head -c 300 "$T/man.err")"
		warned=$((warned + 1))
	fi
done
check "every installed page renders without a warning (groff -ww, man)" test "$warned" -eq 0

# ---- 3. the pages say what the code does ----
# Plain text, one long line per paragraph, no hyphenation: a key or an
# option is never split.
render() {
	(cd "$MAN" && groff -s -t -man -Tascii -rLL=400n -rHY=0 -P-cbou "man$1/$2.$1" 2>/dev/null)
}
policy_txt=$(render 5 warden-policy)
keys=$(grep -oE '^\| `[a-z_]+(\.[A-Za-z_]+)*` \|' "$SRC/docs/policy.md" | grep -oE '`[^`]+`' | tr -d '`')
nokey=()
for k in $keys; do
	grep -qF -- "$k" <<<"$policy_txt" || nokey+=("$k")
done
check "warden-policy(5) names every key of docs/policy.md's table ($(wc -w <<<"$keys"))${nokey[*]:+ (missing: ${nokey[*]})}" \
	test -n "$keys" -a ${#nokey[@]} -eq 0
cli_txt=$(render 1 warden)
noopt=()
for sub in run check approve audit policy doctor serve create exec update ls stop start rm snapshot diff \
	apply discard image; do
	for o in $("$WARDEN" "$sub" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
		grep -qF -- "$o" <<<"$cli_txt" || noopt+=("$sub $o")
	done
	grep -qE "^ +warden $sub" <<<"$cli_txt" || noopt+=("$sub (no synopsis)")
done
check "warden(1) has every subcommand and every option of their --help${noopt[*]:+ (missing: ${noopt[*]})}" \
	test ${#noopt[@]} -eq 0

# ---- 4. exported symbols: the header's wd_* functions, nothing else ----
nm -D --defined-only "$LIB/libwarden.so.$VERSION" | awk '{print $3}' | sed 's/@.*//' |
	sort -u >"$T/exported"
# the version node of src/libwarden.sym is an absolute symbol, not code
foreign=$(grep -vE '^(wd_[a-z0-9_]+|WARDEN_[0-9.]+)$' "$T/exported" | tr '\n' ' ')
check "libwarden.so exports only wd_* symbols${foreign:+ (also: $foreign)}" test -z "$foreign"
check "libwarden.so exports the symbol version WARDEN_0.1" grep -qx 'WARDEN_0.1' "$T/exported"
for f in "${FUNCS[@]}"; do
	if ! grep -qx "$f" "$T/exported"; then
		not_ok "libwarden.so does not export $f, which warden.h declares"
	fi
done
notdecl=$(comm -23 <(grep '^wd_' "$T/exported") <(printf '%s\n' "${FUNCS[@]}") | tr '\n' ' ')
check "every exported function is declared in warden.h${notdecl:+ (not: $notdecl)}" test -z "$notdecl"

# ---- 5. a program built against the installed tree ----
export PKG_CONFIG_LIBDIR=$LIB/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST
check "pkg-config --modversion warden is $VERSION" test "$(pkg-config --modversion warden)" = "$VERSION"
check "pkg-config --validate warden" pkg-config --validate warden
flags=$(pkg-config --cflags --libs warden)
check "pkg-config --cflags --libs warden points into the install ($flags)" \
	grep -q -- "-I$DEST$INCLUDEDIR .*-L$LIB -lwarden" <<<"$flags"
# In the ASan tree the installed library is instrumented: a program linked
# with it must load the sanitizer runtime first.
if nm -D "$LIB/libwarden.so.$SOVERSION" 2>/dev/null | grep __asan_init >/dev/null; then
	flags="$flags -fsanitize=address,undefined"
fi
# shellcheck disable=SC2086 # flags are words
if cc -std=c17 -Wall -Wextra -Wpedantic -Werror "$SRC/tests/integration/install_consumer.c" \
	$flags -o "$T/consumer" 2>"$T/cc.err"; then
	ok "install_consumer.c builds with the installed warden.h and libwarden.so"
else
	not_ok "install_consumer.c does not build against the installed tree"
	sed 's/^/  | /' "$T/cc.err"
fi
check "the program loads libwarden.so from the install" \
	grep -q "libwarden.so.$SOVERSION => $LIB/" <(LD_LIBRARY_PATH=$LIB ldd "$T/consumer")
if [ -x "$T/consumer" ]; then
	LD_LIBRARY_PATH=$LIB "$T/consumer" "$WS" >"$T/consumer.out" 2>&1
	rc=$?
	sed 's/^/  | /' "$T/consumer.out"
	case $rc in
	0) ok "the program ran sandboxes through the public API" ;;
	77) skip "this host cannot create a sandbox (see above)" ;;
	*) not_ok "the program failed (status $rc)" ;;
	esac
fi

wso() {
	(cd "$WS" && LD_LIBRARY_PATH=$LIB "$T/warden-so" "$@")
}
# the same answers as the CLI meson built (static archives, wd_core)
same_check() {
	local a b
	a=$(cd "$WS" && "$WARDEN" check "$@" 2>&1; echo "status $?")
	b=$(wso check "$@" 2>&1; echo "status $?")
	check "warden check $*: the same from both builds" test "$a" = "$b"
}
# The checks of the CLI built by section 6.
cli_so() {
	# (a sanitizer build's own runtimes are not the CLI's dependencies)
	needed=$(readelf -d "$T/warden-so" 2>/dev/null | grep -oE 'NEEDED.*\[[^]]+\]' | grep -oE '\[[^]]+\]' |
		tr -d '[]' | grep -vE '^lib(asan|ubsan|tsan)\.so' | sort | tr '
' ' ')
	check "that CLI needs libwarden.so.$SOVERSION, jansson (warden serve) and libc only (needs: $needed)" \
		test "$needed" = "libc.so.6 libjansson.so.4 libwarden.so.$SOVERSION "
	check "warden-so --version" test "$(wso --version)" = "warden $VERSION"
	wso run -- /bin/true >"$OUT" 2>"$ERR"
	RC=$?
	expect_rc 0 "warden-so run -- /bin/true"
	wso run --json -- /bin/sh -c 'echo hi' >"$OUT" 2>"$ERR"
	RC=$?
	expect_rc 0 "warden-so run --json"
	check "  its result: stdout 'hi', policy off" \
		test "$(json_get 'j["stdout"]["data"] + j["policy"]')" = $'hi\noff'
	same_check --tool shell --json
	same_check --tool nope --json
	same_check --command 'ls -l' --json
	same_check --command 'cat /etc/shadow'
	# jansson is gone from check.c: a tool name that is not UTF-8 used to
	# crash `warden check --tool --json` (jansson refused the string)
	for w in "$T/warden-so" "$WARDEN"; do
		out=$(cd "$WS" && LD_LIBRARY_PATH=$LIB "$w" check --tool $'\xff' --json)
		rc=$?
		check "${w##*/} check --tool <not UTF-8> --json: status 126, the byte as \\udcff" \
			test $rc = 126 -a "$out" = '{"tool":"\udcff","class":"blocked","defined":false}'
	done
}

# libwarden(3)'s example, as a reader would copy it from the page.
render 3 libwarden | python3 -c '
import sys, textwrap
lines = sys.stdin.read().split("\n")
start = next(i for i, l in enumerate(lines) if l.strip() == "#include <err.h>")
end = next(i for i in range(start, len(lines)) if lines[i].rstrip() == lines[start][:len(lines[start]) - len(lines[start].lstrip())] + "}")
print(textwrap.dedent("\n".join(lines[start:end + 1])))' >"$T/example.c" 2>"$T/example.err"
# shellcheck disable=SC2086
if [ -s "$T/example.c" ] && cc -std=c17 -Wall -Wextra -Werror "$T/example.c" $flags \
	-o "$T/example" 2>"$T/cc.err"; then
	LD_LIBRARY_PATH=$LIB "$T/example" "$WS" 'ls -a' >"$OUT" 2>"$ERR"
	RC=$?
	expect_rc 0 "libwarden(3)'s example builds and runs a command through the policy"
	check "  it prints the result's JSON" test "$(json_get 'j["status"], j["policy"] != "off"')" = '[0, true]'
else
	not_ok "libwarden(3)'s example does not build"
	sed 's/^/  | /' "$T/example.err" "$T/cc.err" "$T/example.c" 2>/dev/null | head -40
fi

# README.md's example ("Using the library"), the same way.
python3 -c '
import re, sys
text = open(sys.argv[1]).read()
part = text[text.index("## Using the library"):]
print(re.search(r"```c\n(.*?)```", part, re.S).group(1))' "$SRC/README.md" >"$T/readme.c" 2>"$T/example.err"
# shellcheck disable=SC2086
if [ -s "$T/readme.c" ] && cc -std=c17 -Wall -Wextra -Wpedantic -Werror "$T/readme.c" $flags \
	-o "$T/readme" 2>"$T/cc.err"; then
	(cd "$WS" && LD_LIBRARY_PATH=$LIB "$T/readme") >"$OUT" 2>"$ERR"
	RC=$?
	expect_rc 0 "README.md's example builds and runs"
	expect_out '^ls -a: status 0$' "  its first command ran in the sandbox"
	expect_out '^cat \.\./\.\./etc/passwd: refused: path .* outside the workspace' \
		"  its second was refused by the policy"
else
	not_ok "README.md's example does not build"
	sed 's/^/  | /' "$T/example.err" "$T/cc.err" 2>/dev/null | head -40
fi

# ---- 6. the CLI from its sources, against libwarden.so only ----
# Only the installed include directory and the front ends' own headers
# are on the include path: an internal header (util/, jail/, ...) fails
# to compile, an internal function fails to link (libwarden.so hides
# them).  The front ends are src/cli and src/server (warden serve), which
# parses JSON-RPC with jansson, as libwarden itself does.
mkdir -p "$T/cli/cli" "$T/cli/server"
cp "$SRC"/src/cli/*.c "$SRC"/src/cli/*.h "$T/cli/cli/"
cp "$SRC"/src/server/*.c "$SRC"/src/server/*.h "$T/cli/server/"
# shellcheck disable=SC2086
if cc -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$T/cli" "$T"/cli/cli/*.c \
	"$T"/cli/server/*.c $flags -ljansson -pthread \
	-o "$T/warden-so" 2>"$T/cc.err"; then
	ok "the CLI builds from src/cli against the installed libwarden.so alone"
	cli_so
else
	not_ok "the CLI does not build against the public API alone"
	sed 's/^/  | /' "$T/cc.err"
fi
check "the installed CLI runs: $BINDIR/warden --version" \
	test "$("$DEST$BINDIR/warden" --version)" = "warden $VERSION"

finish
