#!/usr/bin/env bash
# warden's image under a real container runtime: Debian's containerd and
# runc, with the OCI spec a Kubernetes pod's security context makes
# (containerd_spec.py: hostUsers: false, CAP_SYS_ADMIN, procMount:
# Unmasked, containerd's default seccomp profile with the permission
# nested sandboxes need).
#
#   - a private containerd: its own root, state, socket and config under
#     this test's directory, no CRI plugin, stopped at exit; a system
#     containerd is never touched
#   - warden's image written by `warden image export --add` (the built
#     warden, its monitor and wd-probe over a base of the programs the
#     checks run and their shared objects: containerd_image.py), through
#     `ctr images import`; the root is containerd's remapped snapshot of
#     it (ctr --uidmap/--gidmap: files owned by the pod's root, host uid
#     100000)
#   - inside the pod: wd-probe all in warden's jail; warden serve --stdio
#     (initialize, tools/list, run_command); egress through warden's proxy
#     to an upstream on the pod's own loopback, one host allowed and one
#     refused
#   - each requirement removed in turn: warden refuses, 125, and the message
#     names what is missing
#
# About 8-13 s here, 10-12 s under ASan (suites integration and
# containerd: it runs in both trees, since the read-only cgroup path and
# confine_hint.c run in no other test).  The image is the closure of the
# built tree's files, made in 1.5 s: no cache needed.
. "$(dirname "$0")/lib.sh"
require_root
require_userns
require_python
HERE=$(cd "$(dirname "$0")" && pwd)
for c in containerd ctr runc; do
	command -v $c >/dev/null || skip "$c is not installed (scripts/deps.sh installs containerd and runc)"
done

SOCK=$T/containerd.sock
# a containerd namespace of its own: runc's cgroups go to /sys/fs/cgroup/*/NS/ID
NS=wdit-$$
C=(ctr -a "$SOCK" -n "$NS")
IMG=warden.test/warden:it
ID=wdit-$$ # container ids: unique on the host, since runc names cgroups by them
# 0711: the pod's root (host uid 100000) must reach its root file system
mkdir -m 711 "$T/cd"
cat >"$T/cd/config.toml" <<EOF
version = 2
root = "$T/cd/root"
state = "$T/cd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing",
  "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
EOF
# containerd under a subreaper that reaps what it orphans: the shims
# daemonize, and this machine's pid 1 may not reap them when they end.
python3 -c '
import ctypes, os, signal, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
p = subprocess.Popen(sys.argv[1:])
signal.signal(signal.SIGTERM, lambda *a: p.terminate())
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
    except InterruptedError:
        pass
' containerd --config "$T/cd/config.toml" >"$T/cd/log" 2>&1 &
cd_pid=$!
# Stop what this containerd runs first (its shims outlive it), then it.
stop_containerd() {
	local c
	for c in $("${C[@]}" tasks ls -q 2>/dev/null); do
		"${C[@]}" tasks kill -s KILL "$c" >/dev/null 2>&1
		wait_until "$(scaled 10)" "${C[@]}" tasks delete "$c" >/dev/null 2>&1
	done
	for c in $("${C[@]}" containers ls -q 2>/dev/null); do
		"${C[@]}" containers delete "$c" >/dev/null 2>&1
	done
	umount "$T/rootfs" 2>/dev/null
	kill "$cd_pid" 2>/dev/null
	wait "$cd_pid" 2>/dev/null
	# runc leaves the namespace's parent cgroups, empty
	find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name "$NS" -exec rmdir {} + 2>/dev/null
	# whatever the snapshotter left mounted under our root
	awk -v r="$T/cd/root" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | xargs -r -n1 umount -l
}
at_exit stop_containerd
if ! wait_until "$(scaled 20)" "${C[@]}" version >/dev/null 2>&1; then
	tail -5 "$T/cd/log"
	not_ok "the private containerd did not come up"
	finish
fi
ok "a private containerd serves $SOCK"

# ---- the image: made, imported, unpacked for the pod's user namespace.
# warden image export writes it, as `make image` does: a base (here the
# closure of what warden runs, standing in for a Debian root file system)
# imported into a store of the test's own, with warden's files added.
export WARDEN_STATE_DIR=$T/store
mkdir -m 700 "$WARDEN_STATE_DIR"
python3 "$HERE/containerd_image.py" "$T/base" "$T/tree" "$WARDEN" \
	"$(dirname "$WARDEN")/warden-monitor" "$WD_PROBE" sleep env ls cat cp rm curl >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "a base layout and warden's files written"
"$WARDEN" image import wdbase "$T/base" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "warden image import of the base"
"$WARDEN" image export wdbase "$T/layout" --add "$T/tree" \
	--entrypoint /usr/local/bin/warden --entrypoint serve --entrypoint --stdio >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "warden image export --add warden's files: warden's image"
tar -C "$T/layout" -cf "$T/image.tar" .
"${C[@]}" images import --index-name "$IMG" "$T/image.tar" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "ctr images import takes the exported layout"
# containerd's own spec and default seccomp profile for a container in a
# user namespace holding CAP_SYS_ADMIN, and its snapshot chowned to the
# namespace's root (WithRemappedSnapshot)
"${C[@]}" run --uidmap 0:100000:65536 --gidmap 0:100000:65536 --seccomp \
	--cap-add CAP_SYS_ADMIN "$IMG" "$ID-base" /usr/bin/env >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "the image runs under containerd (user namespace, default seccomp)"
"${C[@]}" containers info "$ID-base" >"$T/base.json"
mkdir "$T/rootfs"
mnt=$("${C[@]}" snapshots mounts "$T/rootfs" "$ID-base")
case $mnt in
"mount -t overlay overlay $T/rootfs -o "*) $mnt ;;
*) not_ok "unexpected snapshot mount: $mnt" ;;
esac
if [ "$(stat -c %u "$T/rootfs/usr/local/bin/warden" 2>/dev/null)" = 100000 ]; then
	ok "the pod's root file system belongs to the pod's root (host uid 100000)"
else
	not_ok "the remapped snapshot is not mounted or not remapped"
	finish
fi

# spec CASE ARGV...: the OCI spec of CASE (containerd_spec.py) in $T/CASE.json
spec() {
	local c=$1
	shift
	python3 "$HERE/containerd_spec.py" "$T/base.json" "$c" "$T/rootfs" "$@" >"$T/$c.json"
}
# inpod ARGV...: run ARGV in the running pod; output in $OUT/$ERR, status $RC
n_exec=0
inpod() {
	n_exec=$((n_exec + 1))
	"${C[@]}" tasks exec --exec-id "e$n_exec" "$ID-pod" "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}

# ---- the pod: everything it needs
spec pod /usr/bin/sleep 100000
"${C[@]}" run -d --config "$T/pod.json" "$ID-pod" >"$OUT" 2>"$ERR"
RC=$?
expect_rc 0 "the pod starts (its spec: user namespace, CAP_SYS_ADMIN, /proc unmasked, seccomp)"
pod_pid=$("${C[@]}" tasks ls | awk -v id="$ID-pod" '$1 == id { print $2 }')
check "the pod's process is in a user namespace of its own" \
	test "$(readlink "/proc/$pod_pid/ns/user")" != "$(readlink /proc/self/ns/user)"
check "  ... whose root is host uid 100000" \
	grep -q '^ *0 *100000 *65536$' "/proc/$pod_pid/uid_map"
check "  ... under a seccomp filter (containerd's default profile)" \
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$pod_pid/status"

WDP=(/usr/local/bin/warden run --workspace /work)

# The pod's cgroup file system is read-only (not privileged): warden's
# own limits cannot be made, and warden says so rather than run without them.
inpod "${WDP[@]}" -- /usr/local/bin/wd-probe ids
expect_rc 125 "without --best-effort: refused, the pod's cgroups are read-only"
expect_err() {
	if grep -Eq -- "$1" "$ERR"; then
		ok "$2"
	else
		not_ok "$2: stderr does not match /$1/"
		show
	fi
}
expect_err "read-only.*--best-effort runs without them" \
	"  ... naming the read-only cgroup file system and --best-effort"

# the jail probe suite inside the pod
inpod /usr/local/bin/wd-probe ia32
ia32=$(cat "$OUT")
inpod "${WDP[@]}" --best-effort -- /usr/local/bin/wd-probe all \
	--uid 1000 --canary /etc/wd-canary --canary /workspace/../wd-canary \
	--ro / --ro /usr --ro /etc --ro /bin --ro /dev \
	--rw /workspace --rw /tmp --rw /home/sandbox --cwd /workspace --host-ia32 "${ia32:-unknown}" \
	--env PATH,HOME=/home/sandbox,LANG=C.UTF-8,TZ=UTC
expect_rc 0 "wd-probe all passes in warden's jail inside the pod"
probe_report "in the pod"

# A command writes the workspace: /work is the pod's (an emptyDir), which
# cannot be idmapped there (warden warns and binds it as it is)
inpod "${WDP[@]}" --best-effort -- /usr/local/bin/wd-probe writable /workspace /tmp
expect_rc 0 "a command in warden's jail in the pod writes the workspace and /tmp"
probe_report "writes in the pod"

# ---- warden serve --stdio as the pod's process: MCP basics
timeout "$(scaled 60)" python3 - "$SOCK" "$NS" "$ID-pod" >"$OUT" 2>"$ERR" <<'PY'
import json, subprocess, sys
sock, ns, cid = sys.argv[1:4]
p = subprocess.Popen(["ctr", "-a", sock, "-n", ns, "tasks", "exec", "--exec-id", "mcp", cid,
                      "/usr/local/bin/warden", "serve", "--stdio", "--best-effort",
                      "--workspace", "/work"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                              "params": params}) + "\n")
    p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit("the server closed stdout")
        m = json.loads(line)
        if m.get("id") == i:
            return m
r = call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "containerd.sh", "version": "1"}})
print("server", r["result"]["serverInfo"]["name"])
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
r = call(2, "tools/list", {})
print("tools", " ".join(sorted(t["name"] for t in r["result"]["tools"])))
r = call(3, "tools/call", {"name": "write_file",
                           "arguments": {"path": "hello.txt", "content": "from MCP\n"}})
print("write_file error", r["result"].get("isError", False))
r = call(4, "tools/call", {"name": "run_command", "arguments": {"command": "cat hello.txt"}})
print("run_command", json.dumps(r["result"]))
r = call(5, "tools/call", {"name": "run_command", "arguments": {"command": "cat /etc/shadow; ls"}})
print("composed", json.dumps(r["result"]))
p.stdin.close()
print("exit", p.wait())
PY
RC=$?
expect_rc 0 "warden serve --stdio in the pod answers an MCP client"
expect_out '^server warden' "  ... initialize names the server"
expect_out '^tools .*run_command' "  ... tools/list lists run_command"
expect_out '^write_file error False' "  ... write_file writes in the workspace"
expect_out '^run_command .*from MCP' "  ... run_command runs cat in a sandbox and returns its output"
expect_out '^composed .*"isError": true' "  ... a composed command string is refused by the policy"
expect_out '^exit 0' "  ... and the server ends at EOF, status 0"

# ---- egress: warden's proxy in the pod, an upstream on the pod's loopback
# (in the pod's network namespace, never the host's)
nsenter --net="/proc/$pod_pid/ns/net" python3 "$HERE/net_tool.py" serve /dev/null >"$T/up.port" &
up_pid=$!
at_exit "kill $up_pid 2>/dev/null"
wait_until "$(scaled 10)" test -s "$T/up.port"
UP=$(cat "$T/up.port")
NET=(--net allow --allow-host "web.test:$UP" --allow-host "127.0.0.1:$UP"
	--add-host web.test=127.0.0.1 --add-host other.test=127.0.0.1)
inpod "${WDP[@]}" --best-effort "${NET[@]}" -- /usr/bin/curl -sS --max-time 20 "http://web.test:$UP/hi"
expect_rc 0 "egress in the pod: an allowed host is reached through warden's proxy"
expect_out "GET /hi host=web.test:$UP" "  ... the upstream on the pod's loopback answered"
inpod "${WDP[@]}" --best-effort "${NET[@]}" -- /usr/bin/curl -sS --max-time 20 \
	-o /dev/null -w '%{http_code}\n' "http://other.test:$UP/no"
expect_out '^403$' "  ... another host on the same loopback is refused by the proxy (403)"
# the same port on the host's loopback is not the pod's upstream (nothing
# there, or another program's server, which does not echo this path)
check "the pod's upstream is not on the host's loopback" python3 -c '
import http.client, sys
try:
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=2)
    c.request("GET", sys.argv[2])
    sys.exit(sys.argv[2].encode() in c.getresponse().read())
except OSError:
    sys.exit(0)' "$UP" "/only-in-the-pod-$$"

# ---- a cow session through diff/apply.  As the pod's root, a session's
# disk is a loop device and an ext4 mount: neither exists in a pod (no
# /dev/loop-control; ext4 mounts need the host's CAP_SYS_ADMIN).
inpod /usr/local/bin/warden create cow0 --workspace /work --workspace-mode cow --best-effort
expect_rc 125 "a cow session as the pod's root is refused"
expect_err "loop-control" "  ... naming the loop device a pod lacks"
# As uid 1000 (ctr exec --user: no capabilities), warden takes an ordinary
# user's path: the overlay's layers in its state directory, mounted in a
# user namespace of its own.  /agent is its home, /agent-work the project.
# asagent ARGV...: ARGV as uid 1000 in the pod, HOME=/agent
asagent() {
	n_exec=$((n_exec + 1))
	"${C[@]}" tasks exec --user 1000:1000 --exec-id "e$n_exec" "$ID-pod" \
		/usr/bin/env HOME=/agent "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
WA=/usr/local/bin/warden
asagent /usr/bin/cp /etc/hosts /agent-work/kept
asagent /usr/bin/cp /etc/hosts /agent-work/doomed
asagent "$WA" create cow1 --workspace /agent-work --workspace-mode cow --best-effort
expect_rc 0 "a cow session as uid 1000 in the pod"
asagent "$WA" exec cow1 -- /usr/bin/cp /etc/passwd /workspace/added
expect_rc 0 "  ... a command in it writes a file"
asagent "$WA" exec cow1 -- /usr/bin/rm /workspace/doomed
expect_rc 0 "  ... and deletes one"
asagent /usr/bin/ls /agent-work
check "  ... the project is untouched before apply" \
	bash -c "grep -qx doomed '$OUT' && ! grep -qx added '$OUT'"
asagent "$WA" diff cow1 --name-status
expect_rc 0 "  ... warden diff"
expect_out '^added +added \(new file 0644\)$' "  ... shows the added file"
expect_out '^deleted +doomed$' "  ... and the deleted one"
check "  ... and nothing else" test "$(grep -c . "$OUT")" = 2
asagent "$WA" apply cow1
expect_rc 0 "  ... warden apply"
asagent /usr/bin/ls /agent-work
check "  ... writes exactly the reviewed set into the project" \
	bash -c "printf 'added\nkept\n' | cmp -s - '$OUT'"
asagent "$WA" rm cow1
expect_rc 0 "  ... and warden rm ends the session"
# the same user with no capability in the pod's spec at all (runAsUser:
# 1000, drop ALL): warden's jail needs none
spec user /usr/bin/env HOME=/agent /usr/local/bin/warden run --workspace /agent-work \
	--best-effort -- /usr/local/bin/wd-probe all --uid 1000 --ro / --ro /usr --ro /etc \
	--rw /workspace --rw /tmp --rw /home/sandbox --cwd /workspace --host-ia32 "${ia32:-unknown}"
"${C[@]}" run --rm --config "$T/user.json" "$ID-user" >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 0 "as uid 1000 with no capability (drop ALL) the jail is built and probed"
probe_report "uid 1000, no capability"

"${C[@]}" tasks kill -s KILL "$ID-pod" >/dev/null 2>&1
wait_until "$(scaled 10)" "${C[@]}" tasks delete "$ID-pod" >/dev/null 2>&1

# ---- each requirement removed: warden refuses (125) and names what lacks
# refused CASE REGEX DESCRIPTION
n_ref=0
refused() {
	local c=$1 re=$2 desc=$3
	n_ref=$((n_ref + 1))
	if [[ $c == user* ]]; then
		spec "$c" /usr/bin/env HOME=/agent /usr/local/bin/warden run --workspace /agent-work \
			--best-effort -- /usr/local/bin/wd-probe ids
	else
		spec "$c" "${WDP[@]}" --best-effort -- /usr/local/bin/wd-probe ids
	fi
	"${C[@]}" run --rm --config "$T/$c.json" "$ID-r$n_ref" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	expect_rc 125 "$desc: warden refuses"
	expect_err "$re" "  ... and says why: $(head -c 300 "$ERR" | tr '\n' ' ')"
}
refused nocap 'lacks CAP_SYS_ADMIN' "no CAP_SYS_ADMIN"
refused adminonly 'lacks CAP_SETUID or CAP_SETGID' "only CAP_SYS_ADMIN (capabilities: drop ALL)"
refused masked 'procMount: Unmasked' "/proc masked (procMount: Default)"
refused nouserns 'procMount: Unmasked' "no user namespace (hostUsers: true, so /proc masked)"
refused noperm 'seccomp filter' "containerd's default seccomp profile without namespace creation"
refused nopivot 'seccomp filter' "containerd's default seccomp profile as it is (no pivot_root)"
refused user+masked 'procMount: Unmasked' "as uid 1000: /proc masked"
refused user+noperm 'seccomp filter' "as uid 1000: the default profile without namespace creation"

finish
