#!/usr/bin/env bash
# Regressions from the review of the jail and the supervisor: each check
# reproduces an escape or a hang that was found, and fails if it returns.
source "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (idmapped workspaces, cgroups)"

# 1. No setuid/setgid bit from inside the jail: as root, a root-owned
#    workspace is idmapped to the sandbox user, so a "chmod 4755" there
#    would be a setuid-root file on the host.
wd -- sh -c 'cp /usr/bin/id /workspace/sid; chmod 4755 /workspace/sid; chmod 2755 /workspace/sid;
	python3 -c "import os; os.open(\"/workspace/sid2\", os.O_CREAT|os.O_WRONLY, 0o4755)"; exit 0'
check "chmod u+s/g+s refused in the jail" \
	test "$(stat -c %a "$WS/sid")" = 755
check "open(O_CREAT, 04755) refused in the jail" test ! -e "$WS/sid2"
wd -- sh -c 'chmod 700 /workspace/sid && python3 -c "import os; os.close(os.open(\"/workspace/plain\", os.O_CREAT|os.O_WRONLY, 0o644))"'
expect_rc 0 "ordinary chmod and create still work"
check "ordinary mode applied on the host" test "$(stat -c %a "$WS/sid")" = 700

# 2. Trees cloned by the supervisor are private: on a host whose / is
#    shared, nothing mounted in the jail may propagate back.
mkdir -p "$T/bindsrc"
before=$(grep -c " $T" /proc/self/mountinfo)
unshare -m --propagation shared "$WARDEN" run --workspace "$WS" --bind "$T/bindsrc:/opt/cache" \
	-- sh -c 'grep -c "shared:" /proc/self/mountinfo' >"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_rc 1 "no mount in the jail is shared (grep -c found none)"
check "no mount left on the host" test "$(grep -c " $T" /proc/self/mountinfo)" = "$before"

# 3. A bind source through a symlink the sandbox planted in the workspace
#    is refused, not followed with root's privileges.
echo topsecret >"$T/secret"
chmod 600 "$T/secret"
mkdir -p "$WS/data"
wd -- ln -sf "$T/secret" /workspace/data/config
wd --ro-bind "$WS/data/config:/data/config" -- cat /data/config
expect_rc 125 "bind source through a workspace symlink refused"
check "the secret did not reach the jail" sh -c "! grep -q topsecret '$OUT'"
expect_out "symlink" "the refusal names the symlink" "$ERR"

# 4. Bind destinations may not lie in /workspace or a writable bind, in
#    any spelling.
for d in /workspace/x //workspace/x /workspace/ //proc/x /dev//x; do
	wd --ro-bind "/etc/hostname:$d" -- true
	expect_rc 125 "destination '$d' refused"
done
wd --bind "$T/bindsrc:/opt/a" --ro-bind /etc:/opt/a/b -- true
expect_rc 125 "destination inside a writable bind refused"

# 5. A stalled reader of warden's stdout does not stop the timeout.
start=$SECONDS
("$WARDEN" run --workspace "$WS" --timeout 2 -- sh -c \
	'head -c 100000 /dev/zero; while :; do date >>/workspace/tick; sleep 0.5; done' |
	sleep 6) 2>/dev/null
ticks=$(wc -l <"$WS/tick" 2>/dev/null || echo 0)
check "sandbox killed at its deadline with the reader stalled ($ticks ticks)" test "$ticks" -le 6

# 6. Process level: an orphan that daemonised is killed at the command's end.
# The command waits until the orphan is `sleep` (setsid(1) execs it after
# setsid()), so the check below cannot pass because it never started.
wd --isolation process --timeout 8 -- sh -c 'setsid sleep 3471 & p=$!; i=0; n=
while [ $i -lt 500 ] && [ "$n" != sleep ]; do i=$((i+1)); sleep 0.01; read n </proc/$p/comm || n=; done
echo "started $n"'
expect_out 'started sleep' "the daemonised orphan was running when the command ended"
expect_rc 0 "process level returns when the command ends"
check "the daemonised orphan is gone" wait_until "$(scaled 3)" sh -c '! pgrep -f "[s]leep 3471" >/dev/null'

# 7. Process level as root: every capability set, bounding included, empty.
mkdir -p "$T/rootws"
"$WARDEN" run --isolation process --workspace "$T/rootws" -- grep CapBnd /proc/self/status \
	>"$OUT" 2>"$ERR" </dev/null
RC=$?
expect_out 'CapBnd:\s+0000000000000000' "process level drops the bounding set"

finish
