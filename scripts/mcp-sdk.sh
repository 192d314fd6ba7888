#!/usr/bin/env bash
# Print the directory holding node_modules/@modelcontextprotocol/sdk,
# installing the official MCP TypeScript SDK from npm into a cache
# directory first when it is missing.  The version is pinned: a test
# against a real client should not change under us.
#   WARDEN_NODE_CACHE  the cache (default: ${XDG_CACHE_HOME:-~/.cache}/warden/node)
# Exit status 1 (with the reason on stderr) when node/npm are missing or
# npm cannot install it.
set -euo pipefail
version=1.32.2
cache=${WARDEN_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/warden/node}
dir=$cache/mcp-sdk-$version
if [ -f "$dir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
	echo "$dir"
	exit 0
fi
command -v node >/dev/null || { echo "mcp-sdk: node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "mcp-sdk: npm is not installed" >&2; exit 1; }
mkdir -p "$dir"
# a lock, so that two tests starting at once do not install twice
exec 9>"$dir/.lock"
flock 9
if [ ! -f "$dir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
	[ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
		"@modelcontextprotocol/sdk@$version" >&2 ||
		{ echo "mcp-sdk: npm install failed" >&2; exit 1; }
fi
echo "$dir"
