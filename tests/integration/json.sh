#!/usr/bin/env bash
# --json: one valid JSON object on stdout with every documented field, the
# protections actually in force, and a status that follows the command.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python

wd --json -- /bin/sh -c 'echo out; echo err >&2; exit 3'
expect_rc 3 "--json: warden's status follows the command"
check "--json: stdout is one valid JSON object" \
	python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); sys.exit(not isinstance(o, dict))' "$OUT"
check "--json: nothing else on stdout (one line)" test "$(wc -l <"$OUT")" -le 1

# fields NAME TYPE...: each field exists with that python type name.
python3 - "$OUT" <<'PY' >"$T/fields" 2>&1
import json, sys
j = json.load(open(sys.argv[1]))
want = {
    "status": int, "exit_code": (int, type(None)), "signal": (int, type(None)),
    "timed_out": bool, "oom_killed": bool, "stdout": dict, "stderr": dict,
    "wall_ms": (int, float), "cpu_ms": (int, float), "peak_memory_bytes": int,
    "protections": dict, "sandbox_id": str,
}
for k, t in want.items():
    if k not in j:
        print(f"FAIL field {k} missing")
    elif not isinstance(j[k], t):
        print(f"FAIL field {k} has type {type(j[k]).__name__}")
    else:
        print(f"ok field {k}")
for s in ("stdout", "stderr"):
    for k, t in (("data", str), ("total_bytes", int), ("omitted_bytes", int)):
        v = j.get(s, {}).get(k)
        print(("ok" if isinstance(v, t) else "FAIL") + f" field {s}.{k}")
p = j.get("protections", {})
for k, t in (("isolation", str), ("namespaces", list), ("seccomp", bool),
             ("landlock_abi", int), ("cgroup", str), ("uid", int), ("host_uid", int)):
    print(("ok" if isinstance(p.get(k), t) else "FAIL") + f" field protections.{k}")
PY
while IFS= read -r line; do
	case $line in
	"ok "*) ok "--json: ${line#ok }" ;;
	*) not_ok "--json: $line" ;;
	esac
done <"$T/fields"

check "--json: status 3, exit_code 3, signal null" \
	test "$(json_get '[j["status"], j["exit_code"], j["signal"], j["timed_out"], j["oom_killed"]]')" = '[3, 3, null, false, false]'
check "--json: stdout window" test "$(json_get 'j["stdout"]["data"]')" = out
check "--json: stderr window" test "$(json_get 'j["stderr"]["data"]')" = err
check "--json: byte counts" test "$(json_get '[j["stdout"]["total_bytes"], j["stdout"]["omitted_bytes"], j["stderr"]["total_bytes"]]')" = '[4, 0, 4]'
check "--json: stderr of warden is quiet on success" test ! -s "$ERR"

# Protections in force, as the default jail has them.
check "--json: isolation container" test "$(json_get 'j["protections"]["isolation"]')" = container
# the time namespace where the kernel has one (CONFIG_TIME_NS)
if [ -e /proc/self/ns/time ]; then
	want_ns='["cgroup", "ipc", "mount", "net", "pid", "time", "user", "uts"]'
else
	want_ns='["cgroup", "ipc", "mount", "net", "pid", "user", "uts"]'
fi
check "--json: the namespaces ($want_ns)" \
	test "$(json_get 'sorted(j["protections"]["namespaces"])')" = "$want_ns"
check "--json: seccomp on" test "$(json_get 'j["protections"]["seccomp"]')" = true
abi=$(json_get 'j["protections"]["landlock_abi"]')
check "--json: a Landlock ABI is in force ($abi)" test "$abi" -ge 1
cgv=$(json_get 'j["protections"]["cgroup"]')
if [ -d /sys/fs/cgroup/memory ]; then want_cg=v1; else want_cg=v2; fi
check "--json: cgroup $cgv is the host's ($want_cg)" test "$cgv" = "$want_cg"
check "--json: uid 1000 inside" test "$(json_get 'j["protections"]["uid"]')" = 1000
check "--json: host uid is not root" test "$(json_get 'j["protections"]["host_uid"]')" -ne 0
check "--json: wall and cpu times are plausible" \
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (0 < j["wall_ms"] < 10000 and 0 <= j["cpu_ms"] < 10000))' "$OUT"
check "--json: peak memory is plausible (0 < peak < 512 MiB)" \
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not 0 < j["peak_memory_bytes"] < 512 << 20)' "$OUT"

# Bytes that are not UTF-8, NUL and control characters still give valid JSON.
wd --json -- /bin/sh -c 'printf "a\377b\000c\033[31m\n"; head -c 3000 /dev/urandom >&2'
check "--json: binary output still gives valid JSON" \
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT"
check "--json: binary byte count is exact" test "$(json_get '[j["stdout"]["total_bytes"], j["stderr"]["total_bytes"]]')" = '[11, 3000]'

# Two runs get two sandbox ids.
wd --json -- /bin/true
id1=$(json_get 'j["sandbox_id"]')
wd --json -- /bin/true
id2=$(json_get 'j["sandbox_id"]')
check "--json: each run has its own sandbox id" test -n "$id1" -a "$id1" != "$id2"

finish
