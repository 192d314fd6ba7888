#!/usr/bin/env bash
# The official MCP TypeScript SDK against warden serve (stdio and HTTP):
# installs the SDK into a cache directory when missing (scripts/mcp-sdk.sh),
# makes a workspace that is a git repository, runs mcp_sdk.cjs (or the
# script named by $1: mcp_sdk_sessions.cjs).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WARDEN=$(readlink -f "${WARDEN:?}")
skip() {
	echo "# skip: $*"
	[ "${WD_MUST_WORK:-0}" = 1 ] && exit 1
	exit 77
}
command -v node >/dev/null || skip "node is not installed"
sdk=$("$here/../../scripts/mcp-sdk.sh") || skip "the MCP SDK cannot be installed from npm"
T=$(mktemp -d /tmp/wd-mcp.XXXXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
mkdir "$T/ws" "$T/state"
chmod 755 "$T/ws"
echo "hello from the workspace" >"$T/ws/hello.txt"
git -C "$T/ws" init -q
git -C "$T/ws" -c user.email=t@t -c user.name=t add hello.txt
git -C "$T/ws" -c user.email=t@t -c user.name=t commit -qm init
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
chmod 600 "$T/token"
"$WARDEN" run -w "$T/ws" -- /bin/true >/dev/null 2>&1 || skip "this host cannot run a sandbox"
exec node "$here/${1:-mcp_sdk.cjs}" "$sdk" "$WARDEN" "$T/ws" "$T/state" "$T/token"
