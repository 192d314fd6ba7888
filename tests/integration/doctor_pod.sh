#!/usr/bin/env bash
# warden doctor --pod, inside what a pod's security context makes
# (podlike.py builds each from the kernel's parts: a user namespace whose
# root is uid 100000 here, runc's read-only /proc paths, the namespace rules
# of the default seccomp profile without CAP_SYS_ADMIN, CAP_SYS_ADMIN
# dropped, no user namespace).  For each: the requirement at fault is
# reported missing with its cost, the exit status says whether the
# container level runs, and the verdict for the container and process
# levels is what a real `warden run` at that level then does, so the
# report cannot drift from the jail.  Root only.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (user namespace maps for another uid)"
# Debian's python3 where there is one: a version manager's shim costs ~0.2 s a call
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
PODLIKE=$(dirname "$(readlink -f "$0")")/podlike.py
PODWS=$T/podws
mkdir "$PODWS"
chown 100000:100000 "$PODWS"

# A pod-like environment the host cannot make is a skip (77), not a result.
"$PY" "$PODLIKE" -- true || skip "podlike.py cannot make a user namespace here"

# jget FILE.json KEY: a value of the report, KEY as "probes.proc.status"
# (one python3 per report flattens it into FILE.kv: KEY=repr-less value).
jget() {
	if [ ! -f "${1%.json}.kv" ]; then
		"$PY" -c '
import json, sys
def flat(p, v):
    if isinstance(v, dict):
        for k, x in v.items():
            flat(p + [k], x)
    else:
        print(".".join(p) + "=" + str(v).replace("\n", " "))
flat([], json.load(open(sys.argv[1])))' "$1" >"${1%.json}.kv" 2>/dev/null
	fi
	sed -n "s|^$2=||p" "${1%.json}.kv"
}

# variant NAME OPTIONS...: doctor --pod --json and real runs at both
# levels in that environment; results in $T/NAME.json, $T/NAME.rc,
# $T/NAME.container, $T/NAME.process (exit statuses).
variant() {
	local name=$1
	shift
	(cd "$PODWS" && env "${VENV[@]}" "$PY" "$PODLIKE" "$@" -- "$WARDEN" doctor --pod --json) \
		>"$T/$name.json" 2>"$T/$name.err" </dev/null
	echo $? >"$T/$name.rc"
	local lvl
	for lvl in container process; do
		(cd "$PODWS" && env "${VENV[@]}" "$PY" "$PODLIKE" "$@" -- "$WARDEN" run --workspace "$PODWS" \
			--isolation "$lvl" --best-effort -- /bin/true) \
			>"$T/$name.$lvl.out" 2>&1 </dev/null
		echo $? >"$T/$name.$lvl"
	done
}

# extra environment for the variant's warden (see the profile's variants)
VENV=()

# verdicts NAME: doctor's verdict per level agrees with the real run.
verdicts() {
	local name=$1 lvl said ran
	for lvl in container process; do
		said=$(jget "$T/$name.json" levels.$lvl.ok)
		ran=$(cat "$T/$name.$lvl")
		if { [ "$said" = True ] && [ "$ran" = 0 ]; } ||
			{ [ "$said" = False ] && [ "$ran" != 0 ]; }; then
			ok "$name: doctor says $lvl ok=$said, and a $lvl run exits $ran"
		else
			not_ok "$name: doctor says $lvl ok=$said, but a $lvl run exits $ran"
			sed 's/^/  | /' "$T/$name.$lvl.out" | tail -5
		fi
	done
	# exit 0 exactly when the container level runs
	local rc want=1
	rc=$(cat "$T/$name.rc")
	[ "$(jget "$T/$name.json" levels.container.ok)" = True ] && want=0
	check "$name: doctor --pod exits $want (got $rc)" [ "$rc" = "$want" ]
}

# status NAME PROBE WANT: the probe's status
status() {
	local got
	got=$(jget "$T/$1.json" probes.$2.status)
	if [ "$got" = "$3" ]; then
		ok "$1: $2 is $3"
	else
		not_ok "$1: $2 is $got, not $3: $(jget "$T/$1.json" probes.$2.detail)"
	fi
}

# missing NAME PROBE COST-WORDS: missing, and its cost says what is lost
missing() {
	status "$1" "$2" missing
	local cost
	cost=$(jget "$T/$1.json" probes.$2.cost)
	check "$1: $2's cost names '$3'" grep -qF -- "$3" <<<"$cost"
}

# ---- hostUsers: false, CAP_SYS_ADMIN, an unmasked /proc, no seccomp: the
# pod the manifests ask for.  Everything but cgroup delegation is there.
variant pod
status pod pod-userns ok
check "pod: the map read is the one made (0 -> 100000, 65536 ids)" \
	[ "$(jget "$T/pod.json" probes.pod-userns.uid_map_first)" = "[0, 100000, 65536]" ]
status pod sys-admin ok
status pod proc ok
status pod seccomp-ns ok
# the cgroup tree belongs to the host's root: no per-command cgroup, and
# the report says what that becomes
status pod cgroup warn
check "pod: the per-command cgroup is none, its cost names the pod's limits" \
	grep -q "shares the pod's limits" <<<"$(jget "$T/pod.json" probes.cgroup.cost)"
check "pod: a probe that is ok has no cost" \
	[ "$(jget "$T/pod.json" probes.proc.cost)" = None ]
verdicts pod
# what that costs a run: without --best-effort, refused before anything runs
# (root of the pod's namespace is not root of the cgroup tree); with it, run
# within the pod's limits, and said so
check "pod: --best-effort runs without a cgroup, and says so" \
	grep -q "limits not enforced (--best-effort)" "$T/pod.container.out"
rm -f "$PODWS/ran"
(cd "$PODWS" && "$PY" "$PODLIKE" -- "$WARDEN" run --workspace "$PODWS" -- /bin/touch ran) \
	>"$T/strict.out" 2>&1 </dev/null
rc=$?
check "pod: without --best-effort a run is refused (125, got $rc), nothing ran" \
	test "$rc" = 125 -a ! -e "$PODWS/ran"

# ---- procMount: Default (runc's read-only /proc paths)
variant masked --mask-proc
missing masked proc "container level does not run"
check "masked: the covered paths are listed" \
	grep -q "/proc/sys" <<<"$(jget "$T/masked.json" probes.proc.covered)"
status masked seccomp-ns ok
verdicts masked

# ---- the default seccomp profile without CAP_SYS_ADMIN
variant seccomp --seccomp-no-sysadmin
missing seccomp seccomp-ns "starts no sandbox at any level"
check "seccomp: clone3 ENOSYS and unshare EPERM are told apart" \
	[ "$(jget "$T/seccomp.json" probes.seccomp-ns.clone3)/$(jget "$T/seccomp.json" probes.seccomp-ns.unshare)" = ENOSYS/EPERM ]
check "seccomp: the pod's filter is seen" \
	[ "$(jget "$T/seccomp.json" probes.seccomp-ns.seccomp_mode)" = 2 ]
verdicts seccomp

# ---- CAP_SYS_ADMIN dropped
variant nocap --drop-sys-admin
missing nocap sys-admin "open_tree"
verdicts nocap

# ---- hostUsers: true (no user namespace): the container level runs, and
# the report says the pod's root is the node's.
variant hostusers --no-userns
missing hostusers pod-userns "root on the node"
status hostusers sys-admin ok
verdicts hostusers

# ---- the pod's shipped Localhost profile (deploy/kubernetes/seccomp), and
# the same with pivot_root refused as containerd's and Docker's default
# profiles refuse it (why RuntimeDefault is not enough)
PROFILE=$(dirname "$(readlink -f "$0")")/../../deploy/kubernetes/seccomp/warden.json
if [ "$(uname -m)" = x86_64 ]; then
	# An ASan build's LeakSanitizer stops the world with ptrace at exit,
	# which the pod's profile refuses, as it should: no leak check there.
	if grep -q __asan_init "$WARDEN"; then
		VENV=(ASAN_OPTIONS=detect_leaks=0)
	fi
	variant profile --seccomp-profile "$PROFILE"
	status profile seccomp-ns ok
	check "profile: the pod's filter is seen" \
		[ "$(jget "$T/profile.json" probes.seccomp-ns.seccomp_mode)" = 2 ]
	status profile proc ok
	verdicts profile
	(cd "$PODWS" && "$PY" "$PODLIKE" --seccomp-profile "$PROFILE" -- "$PY" -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print(libc.syscall(101, 0, 0, 0, 0), ctypes.get_errno())  # ptrace(PTRACE_TRACEME)
') >"$T/ptrace.out" 2>&1
	check "profile: ptrace is refused in the pod (EPERM)" grep -qx -- "-1 1" "$T/ptrace.out"

	variant rtdefault --seccomp-profile "$PROFILE" --deny pivot_root
	missing rtdefault seccomp-ns "pivot_root"
	check "rtdefault: pivot_root's EPERM is named" \
		[ "$(jget "$T/rtdefault.json" probes.seccomp-ns.pivot_root)" = EPERM ]
	verdicts rtdefault
	check "rtdefault: the real run fails at pivot_root, as doctor said" \
		grep -q "pivot_root" "$T/rtdefault.container.out"
	VENV=()
else
	echo "# not x86-64: the shipped profile is compiled for x86-64 only here"
fi

# ---- the text form names each missing requirement's cost
(cd "$PODWS" && "$PY" "$PODLIKE" --mask-proc -- "$WARDEN" doctor --pod) >"$T/text" 2>&1
check "text: exit 1 when the container level cannot run" [ $? = 1 ]
check "text: the proc line, then its cost" \
	grep -A1 -q "^missing  proc " "$T/text"
check "text: the cost line" grep -q "costs: procMount: Unmasked is missing" "$T/text"
check "text: the levels in this pod" grep -q "^  container  no: no new /proc mounts" "$T/text"

# ---- bad input
"$WARDEN" doctor --pod --bogus >"$T/bad.out" 2>"$T/bad.err"
check "an unknown option: exit 125" [ $? = 125 ]
check "an unknown option is named" grep -q "'--bogus'" "$T/bad.err"
check "an unknown option: nothing probed" [ ! -s "$T/bad.out" ]

finish
