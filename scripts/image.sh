#!/usr/bin/env bash
# make image: warden's own image, an OCI image layout for a Kubernetes pod.
#
#   1. the runtime: `warden image build` of Debian's essential set plus
#      IMAGE_PACKAGES (mmdebstrap, the host's apt sources, reproducible as
#      every image build is), in a store of its own (IMAGE_STATE); its name
#      carries a digest of the suite and package list, so it is built once
#      per list and reused after;
#   2. warden itself: a release build configured with --prefix=/usr
#      (IMAGE_BUILD), `meson install --strip --destdir` into a staging tree
#      (the binaries, warden-monitor, libwarden, the header, the man pages,
#      where an install puts them), plus the empty /workspace and
#      /var/lib/warden the defaults use;
#   3. `warden image export` of the runtime with the staging tree as a
#      second layer and the pod's defaults, those of deploy/kubernetes
#      (docs/images.md, "warden's own image"), into IMAGE_OUT, which is replaced.
#
# Two runs from the same commit and package list give the same manifest
# digest (printed, and in IMAGE_OUT/index.json).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
WARDEN=${1:?usage: scripts/image.sh BUILD-DIR (the build whose warden exports)}/warden
OUT=${IMAGE_OUT:-$SRC/build/image}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
IBUILD=${IMAGE_BUILD:-$SRC/build-image}
STATE=${IMAGE_STATE:-$SRC/build-image-state}
SUITE=${IMAGE_SUITE:-bookworm}
# What warden loads or runs besides libc (libseccomp and jansson are
# linked in): libssl3 (dlopen'ed for TLS interception), libgit2-1.5
# (dlopen'ed for diffs), e2fsprogs (mke2fs: a session's disk),
# ca-certificates (the egress proxy's upstream trust).  Not runsc: a pod
# that wants gVisor runs under a gVisor runtimeClass; add it here to use
# --isolation gvisor inside.  Commands the agent runs see this image's
# /usr (or an --image): add their packages (git, python3, ...) here too.
PACKAGES=${IMAGE_PACKAGES:-ca-certificates e2fsprogs libgit2-1.5 libssl3}

[ "$(id -u)" -eq 0 ] || { echo "make image: runs mmdebstrap and meson install as root" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "make image: mmdebstrap is missing (scripts/deps.sh)" >&2; exit 1; }

mkdir -p -m 700 "$STATE"
STATE=$(cd "$STATE" && pwd)
export WARDEN_STATE_DIR=$STATE

# 1. the runtime, once per suite and package list
sorted=$(printf '%s\n' $PACKAGES | LC_ALL=C sort -u | paste -sd, -)
key=$(printf '%s %s' "$SUITE" "$sorted" | sha256sum | cut -c1-16)
runtime=runtime-$key
if "$WARDEN" image inspect "$runtime" >/dev/null 2>&1; then
	echo "image: runtime $runtime ($sorted) from the cache in $STATE"
else
	echo "image: building the runtime $runtime: $SUITE, essential + $sorted (mmdebstrap)"
	"$WARDEN" image build "$runtime" --suite "$SUITE" --packages "$sorted"
fi

# 2. warden, installed under /usr into a staging tree
if [ ! -f "$IBUILD/build.ninja" ]; then
	meson setup "$IBUILD" "$SRC" --prefix=/usr --buildtype=release -Dwerror=true >/dev/null
fi
ninja -C "$IBUILD" warden warden-monitor libwarden.so >/dev/null 2>&1 || ninja -C "$IBUILD"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/warden-image.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
meson install -C "$IBUILD" --destdir "$STAGE" --strip --quiet --no-rebuild
mkdir -p "$STAGE/workspace" "$STAGE/var/lib/warden"
chmod 0700 "$STAGE/var/lib/warden"

# 3. the layout
VERSION=$(meson introspect "$IBUILD" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
# the commit, marked -dirty when the tree differs from it (the binaries
# were built from something no commit names)
REVISION=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	REVISION=$REVISION-dirty
fi
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
"$WARDEN" image export "$runtime" "$OUT" --add "$STAGE" --tag "$VERSION" \
	--entrypoint /usr/bin/warden \
	--cmd serve --cmd --listen --cmd 0.0.0.0:8765 --cmd --behind-tls-proxy \
	--cmd --token-file --cmd /var/run/secrets/warden/token \
	--cmd --state-dir --cmd /var/lib/warden --cmd --workspace --cmd /workspace \
	--user 0:0 --workdir /workspace \
	--label org.opencontainers.image.title=warden \
	--label "org.opencontainers.image.description=a sandbox for the commands an AI agent runs" \
	--label "org.opencontainers.image.version=$VERSION" \
	--label "org.opencontainers.image.revision=$REVISION" \
	--label "org.opencontainers.image.base.name=debian:$SUITE ($sorted)"
