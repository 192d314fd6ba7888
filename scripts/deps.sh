#!/usr/bin/env bash
# Install the Debian packages warden builds, tests and demos with, but only
# those that are missing: a machine that has them all runs no apt-get.
set -euo pipefail

pkgs=(
	gcc clang make pkg-config meson ninja-build binutils
	libseccomp-dev libjansson-dev libssl-dev libldns-dev libcriterion-dev
	python3 python3-pytest git iproute2 curl openssl bubblewrap procps
	groff-base man-db
	# make check's format test: clang-format over every C file
	clang-format
	# the server's socket test reads the order of bind, listen, rename
	strace
	# the gvisor isolation level: Debian's gVisor build
	runsc
	# sessions and cow workspaces: diffs (libgit2, dlopen'ed),
	# sandbox disks (mke2fs), and the tests' venv and pip
	libgit2-dev libgit2-1.5 e2fsprogs python3-venv
	# images: root filesystems from Debian packages, OCI
	# layouts imported (and made by the tests)
	mmdebstrap umoci
	# deploy/kubernetes: the manifests' validator reads YAML
	python3-yaml
	# the containerd test: warden's image under Debian's container
	# runtime, with the OCI spec a Kubernetes pod's security context makes
	containerd runc
)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
# The tests of warden serve drive it with the official MCP TypeScript SDK
# (scripts/mcp-sdk.sh installs it from npm): node and npm, from Debian when
# the host has neither (a node from elsewhere, with its npm, is fine).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	missing+=(nodejs npm)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
