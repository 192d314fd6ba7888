#!/usr/bin/env bash
# The suite's two environments, built here from Debian packages (once per
# checkout, in the shared store: lib.sh image_fixture):
#
#   - python (images/python.recipe): python3, curl and lua5.4, which the
#     host lacks: lua5.4 runs inside with --image and is absent without;
#     python3 and curl run and are the versions the image's package list
#     records
#   - node (images/node.recipe): a `node -e` program runs inside, and the
#     node that runs is the image's: its version is the one the image's
#     package list records (bookworm's nodejs), not the host's node; the
#     host's npm (not in the image) is absent inside
#
# Each build costs 1-3 min here, once per checkout (the release and ASan
# runs share it); every check after the builds takes seconds.
. "$(dirname "$0")/lib.sh"
require_root
require_userns

# installed_version PACKAGE: its version in the image's package list
# (warden image inspect --json, "installed": ["name version", ...])
installed_version() {
	"$WARDEN" image inspect "$IMG" --json |
		python3 -c 'import json,sys
for e in json.load(sys.stdin)["installed"]:
    n, v = e.split(" ", 1)
    if n == sys.argv[1]:
        print(v)' "$1"
}

# ---- python3, curl, lua5.4 ----
image_fixture python
IMG=$WD_FIXTURE
echo "# python image: $IMG"
if command -v lua5.4 >/dev/null; then
	skip "this host has lua5.4: the test needs a program the host lacks"
fi
wd --image "$IMG" -- lua5.4 -e 'print(_VERSION, 6 * 7)'
expect_rc 0 "lua5.4 runs with --image $IMG"
expect_out "^Lua 5\.4	42$" "and computes"
wd -- lua5.4 -v
expect_rc 127 "lua5.4 is absent without --image"
pyv=$(installed_version python3.11)
wd --image "$IMG" -- python3 -c 'import sys, json; print(sys.version.split()[0], json.dumps({"a": 1}))'
expect_rc 0 "python3 runs in the image"
# the package version is "3.11.2-6+deb12u5": the interpreter says 3.11.2
expect_out "^${pyv%%-*} \{\"a\": 1\}$" "it is the image's python3.11 ($pyv)"
curlv=$(installed_version curl)
wd --image "$IMG" -- curl --version
expect_rc 0 "curl runs in the image"
expect_out "^curl ${curlv%%-*} " "it is the image's curl ($curlv)"
wd --image "$IMG" -- curl -s file:///etc/debian_version
expect_out "^12\." "curl reads the image's /etc/debian_version"

# ---- nodejs ----
image_fixture node
IMG=$WD_FIXTURE
echo "# node image: $IMG"
nodev=$(installed_version nodejs)
wd --image "$IMG" -- node -e 'let s = 0; for (let i = 1; i <= 10; i++) s += i; console.log(s, process.version)'
expect_rc 0 "a node -e program runs with --image $IMG"
expect_out "^55 v${nodev%%[+~-]*}$" "it runs on the image's node ($nodev)"
if command -v node >/dev/null; then
	hostv=$(node --version)
	wd -- node --version
	expect_out "^$hostv$" "without the image, node is the host's ($hostv)"
	if [ "$hostv" != "v${nodev%%[+~-]*}" ]; then
		ok "the host's node ($hostv) and the image's (v${nodev%%[+~-]*}) differ"
	else
		echo "# the host's node is the image's version: the version proves nothing here"
	fi
fi
if command -v npm >/dev/null; then
	wd --image "$IMG" -- npm --version
	expect_rc 127 "the host's npm is absent in the image"
	wd -- npm --version
	expect_rc 0 "and present without it"
fi
wd --image "$IMG" -- python3 -c pass
expect_rc 127 "python3 is absent in the node image (the host's /usr is not seen)"

finish
