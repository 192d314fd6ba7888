#!/usr/bin/env bash
# Sessions, copy-on-write workspaces and the warm pool, measured.
#
#   bench/session.sh WARDEN POOL_BENCH SPAWN_BENCH   (or: bench/session.sh BUILD-DIR)
#   SESSION_RUNS=200                                  runs per latency series
#
#  1. the warm pool (pool_bench): a pooled one-shot run while the pool is
#     warm against bare fork+exec of /bin/true and exec into a live
#     sandbox, alternating; the burst a pool absorbs; sustained runs/s
#  2. `warden exec` into a live session against bare /bin/true and a
#     one-shot `warden run`, alternating (spawn_bench); then execs/s with
#     two clients at once
#  3. a cow session on a 10,000-file git repository: create, an exec that
#     changes 100 files, diff, diff --stat, diff --json, apply
#  4. cow against direct on the same data: `git status` on the 10,000
#     files, and a build of a generated C project (240 files, make -j2),
#     alternating
#  5. snapshot (a sparse copy of the disk) and create --from
set -euo pipefail

if [ $# -eq 1 ]; then
	set -- "$1/warden" "$1/bench/pool_bench" "$1/bench/spawn_bench"
fi
WARDEN=$(readlink -f "${1:?usage: session.sh WARDEN POOL_BENCH SPAWN_BENCH}")
POOL=$(readlink -f "${2:?}")
DRIVER=$(readlink -f "${3:?}")
RUNS=${SESSION_RUNS:-200}

[ "$(id -u)" = 0 ] || {
	echo "session.sh: needs root (sandbox disks, the pool)"
	exit 77
}
base=$(mktemp -d /tmp/wd-sbench.XXXXXXXX)
chmod 755 "$base"
export WARDEN_STATE_DIR=$base/state
# pool_bench's sessions start the monitor built next to warden
export WARDEN_MONITOR=${WARDEN_MONITOR:-$(dirname "$WARDEN")/warden-monitor}
cleanup() {
	for s in $("$WARDEN" ls --json 2>/dev/null | python3 -c 'import json,sys; [print(x["id"]) for x in json.load(sys.stdin)]' 2>/dev/null); do
		"$WARDEN" rm "$s" >/dev/null 2>&1 || true
	done
	rm -rf "$base"
}
trap cleanup EXIT

ms() { # ms START_NS: milliseconds since
	echo $((($(date +%s%N) - $1) / 1000000))
}

echo "# sessions, cow workspaces, the warm pool: $(uname -sr), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "## 1. the warm pool"
mkdir -p "$base/pool"
"$POOL" -n "$RUNS" "$base/pool"

echo
echo "## 2. warden exec into a live session"
mkdir -p "$base/ws"
"$WARDEN" create bench --workspace "$base/ws" >/dev/null
"$DRIVER" -t -n "$RUNS" -w 10 -- bare /bin/true :: exec "$WARDEN" exec bench -- /bin/true \
	:: run "$WARDEN" run --workspace "$base/ws" -- /bin/true
n=$((RUNS * 2))
t0=$(date +%s%N)
seq "$n" | xargs -P 2 -I{} "$WARDEN" exec bench -- /bin/true
dt=$(ms "$t0")
echo "throughput: $n warden exec with 2 clients at once in $dt ms: $((n * 1000 / (dt > 0 ? dt : 1))) execs/s"

echo
echo "## 3. a cow session on a 10,000-file repository, 100 files changed"
repo=$base/repo
mkdir -p "$repo"
python3 - "$repo" <<'EOF'
import os, sys
r = sys.argv[1]
for d in range(100):
    os.makedirs(f"{r}/d{d:02d}", exist_ok=True)
    for f in range(100):
        with open(f"{r}/d{d:02d}/f{f:02d}.txt", "w") as fh:
            fh.write("".join(f"line {i} of file {d}/{f}\n" for i in range(40)))
EOF
(cd "$repo" && git init -q . && git add -A && git -c user.email=b@b -c user.name=b commit -qm base)
echo "# $(find "$repo" -type f -not -path '*/.git/*' | wc -l) files, $(du -sh "$repo" | cut -f1)"
t0=$(date +%s%N)
"$WARDEN" create big --workspace "$repo" --workspace-mode cow >/dev/null
echo "create (cow, baseline of the repository, disk, overlay, jail): $(ms "$t0") ms"
t0=$(date +%s%N)
"$WARDEN" exec big -- /bin/sh -c 'for d in $(seq -w 0 99); do sed -i "s/line 7 /LINE 7 /" d$d/f07.txt; done'
echo "exec changing 100 files: $(ms "$t0") ms"
for form in "" --stat --json; do
	t0=$(date +%s%N)
	"$WARDEN" diff big $form >"$base/diff.out"
	echo "diff ${form:-(text)}: $(ms "$t0") ms, $(wc -l <"$base/diff.out") lines"
done
t0=$(date +%s%N)
"$WARDEN" apply big >/dev/null
echo "apply (100 files, each written next to its place, synced, renamed): $(ms "$t0") ms"
grep -c 'LINE 7' "$repo"/d*/f07.txt | awk -F: '{s+=$2} END {print "# applied: " s " files changed on the host"}'

echo
echo "## 4. cow against direct: git status on 10,000 files, a C build"
proj=$base/cproj
mkdir -p "$proj"
python3 - "$proj" <<'EOF'
import os, sys
p = sys.argv[1]
n = 240
for i in range(n):
    with open(f"{p}/m{i}.c", "w") as f:
        f.write(f'#include "common.h"\n')
        for k in range(30):
            f.write(f"int f{i}_{k}(int x) {{ int s = 0; for (int j = 0; j < x; j++) s += j * {k} ^ {i}; return s; }}\n")
with open(f"{p}/common.h", "w") as f:
    f.write("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n")
with open(f"{p}/main.c", "w") as f:
    f.write('#include "common.h"\nint main(void) { return 0; }\n')
with open(f"{p}/Makefile", "w") as f:
    objs = " ".join(f"m{i}.o" for i in range(n))
    f.write(f"CFLAGS = -O1\nprog: main.o {objs}\n\tcc -o $@ $^\n%.o: %.c common.h\n\tcc $(CFLAGS) -c $<\nclean:\n\trm -f *.o prog\n")
EOF
"$WARDEN" create gd --workspace "$repo" --timeout 600 >/dev/null
"$WARDEN" create gc --workspace "$repo" --workspace-mode cow --timeout 600 >/dev/null
"$WARDEN" create cd --workspace "$proj" --timeout 600 --cpus 2 --memory 1G >/dev/null
"$WARDEN" create cc --workspace "$proj" --workspace-mode cow --timeout 600 --cpus 2 --memory 1G >/dev/null
for round in 1 2 3; do
	for m in d c; do
		t0=$(date +%s%N)
		"$WARDEN" exec g$m --command 'git status --short' >/dev/null
		echo "round $round git status, $([ $m = d ] && echo direct || echo cow): $(ms "$t0") ms"
		"$WARDEN" exec c$m -- make -s clean >/dev/null
		t0=$(date +%s%N)
		"$WARDEN" exec c$m -- make -s -j2 >/dev/null
		echo "round $round make -j2 of 241 files, $([ $m = d ] && echo direct || echo cow): $(ms "$t0") ms"
	done
done
"$WARDEN" exec cd -- make -s clean >/dev/null

echo
echo "## 5. snapshot and create --from"
"$WARDEN" exec bench -- /bin/sh -c 'head -c 50M /dev/urandom > $HOME/blob'
t0=$(date +%s%N)
"$WARDEN" snapshot bench v1 >/dev/null
echo "snapshot of a running session with 50 MB in its home (disk frozen, sparse copy): $(ms "$t0") ms"
t0=$(date +%s%N)
"$WARDEN" create fork --from bench@v1 >/dev/null
echo "create --from (sparse copy of the snapshot, new jail): $(ms "$t0") ms"
du -k "$WARDEN_STATE_DIR/sandboxes"/*/disk.img | awk '{s+=$1} END {print "# disks on the host: " s " KiB for " NR " sessions of 1 GiB each"}'
