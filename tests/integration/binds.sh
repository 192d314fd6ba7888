#!/usr/bin/env bash
# --ro-bind and --bind: directories and files, with and without a
# destination; read-only really is read-only, read-write writes through to
# the host; every mount keeps nosuid/nodev; the UTS namespace has its own
# hostname.
. "$(dirname "$0")/lib.sh"
require_root
require_userns

src=$T/src
mkdir -p "$src/sub"
echo ro-content >"$src/sub/file"
chmod -R a+rX "$src"
rwsrc=$T/rwsrc
mkdir "$rwsrc"
chown 1234:1234 "$rwsrc"
echo single >"$T/single-file"
chmod 644 "$T/single-file"

wd --ro-bind "$src:/opt/data" "${PROBE_BIND[@]}" -- /bin/cat /opt/data/sub/file
expect_rc 0 "--ro-bind SRC:DST: readable"
check "--ro-bind: the host content" test "$(cat "$OUT")" = ro-content
wd --ro-bind "$src:/opt/data" "${PROBE_BIND[@]}" -- "$PROBE" readonly /opt/data /opt/data/sub
expect_rc 0 "--ro-bind: EROFS on create"
probe_report "ro-bind"

wd --ro-bind "$src" -- /bin/cat "$src/sub/file"
expect_rc 0 "--ro-bind SRC: mounted at the same path"
check "--ro-bind SRC: the host content" test "$(cat "$OUT")" = ro-content

wd --ro-bind "$T/single-file:/etc/wd-single" -- /bin/cat /etc/wd-single
expect_rc 0 "--ro-bind of a single file"
check "--ro-bind file: the host content" test "$(cat "$OUT")" = single

wd --bind "$rwsrc:/mnt/rw" "${PROBE_BIND[@]}" -- /bin/sh -c 'echo written > /mnt/rw/out; mkdir /mnt/rw/d'
expect_rc 0 "--bind SRC:DST: writable"
check "--bind: the write reached the host" test "$(cat "$rwsrc/out" 2>/dev/null)" = written
check "--bind: owned on the host by the source's owner" test "$(stat -c %u "$rwsrc/out" 2>/dev/null)" = 1234

wd --bind "$rwsrc:/mnt/rw" --ro-bind "$src:/opt/data" "${PROBE_BIND[@]}" -- \
	"$PROBE" mounts /workspace,/tmp,/home/sandbox,/mnt/rw
expect_rc 0 "mount flags with binds: nosuid, nodev, ro except the rw ones"
probe_report "mounts"

# Binds do not open the rest of the host: the sibling of a bound directory
# stays invisible.
echo sibling >"$T/sibling"
wd --ro-bind "$src:/opt/data" -- /bin/ls -A /opt
check "only the bound entries appear under /opt" test "$(cat "$OUT")" = data

# UTS namespace: a hostname of its own.
wd -- /bin/hostname
expect_rc 0 "hostname runs"
check "the jail's hostname is not the host's" test "$(cat "$OUT")" != "$(hostname)"

finish
