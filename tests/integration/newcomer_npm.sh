#!/bin/bash
# The newcomer's npm task, end to end, as an ordinary user: a small npm
# project depending on one package, a copy-on-write session, `npm install`
# through warden's proxy from a registry served on the host's loopback
# (a static one: python3 http.server over the package's metadata and a
# tarball made by `npm pack`), an edit inside the session, `npm test`, a
# review (`warden diff`: the edit listed, node_modules/ summarised as
# ignored by the project's .gitignore), `warden apply`: the edit lands in
# the real directory, node_modules does not (unless --all).
#
# The project's .npmrc names the registry as http://127.0.0.1:PORT/ and
# the session allows that host:port only; a request to another port is
# refused and named at the end of the exec.  cgroup v1 gives an ordinary
# user no limits: --best-effort.
. "$(dirname "$0")/lib.sh"

require_root
require_userns
require_python
command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"
command -v npm >/dev/null && command -v node >/dev/null || skip "npm or node is missing"

U=24567
while getent passwd "$U" >/dev/null || pgrep -u "$U" >/dev/null; do
	U=$((U + 1))
done
UH=$T/home
P=$T/proj
REG=$T/reg
mkdir -p "$UH" "$P" "$REG/tarballs" "$T/pkg"
chmod 700 "$UH"

# ---- the package the project depends on, packed by npm itself
cat >"$T/pkg/package.json" <<'JSON'
{"name": "wd-pad", "version": "1.0.0", "main": "index.js", "license": "MIT"}
JSON
echo 'module.exports = (s, n) => String(s).padStart(n, "0");' >"$T/pkg/index.js"
(cd "$T/pkg" && npm pack --silent --json --pack-destination "$REG/tarballs") >"$T/pack.json" 2>"$T/pack.err" ||
	{ cat "$T/pack.err"; { not_ok "npm pack failed"; finish; }; }
port=$(free_port)
other=$((port == 65535 ? port - 1 : port + 1))
python3 - "$T/pack.json" "$REG/wd-pad" "$port" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))[0]
url = "http://127.0.0.1:%s/tarballs/%s" % (sys.argv[3], p["filename"])
meta = {"name": "wd-pad", "dist-tags": {"latest": "1.0.0"},
        "versions": {"1.0.0": {"name": "wd-pad", "version": "1.0.0", "main": "index.js",
                               "dist": {"tarball": url, "shasum": p["shasum"],
                                        "integrity": p["integrity"]}}}}
json.dump(meta, open(sys.argv[2], "w"))
PY
(cd "$REG" && exec python3 -m http.server "$port" --bind 127.0.0.1) >"$T/reg.log" 2>&1 &
srv=$!
at_exit "kill $srv"
wait_until "$(scaled 10)" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null ||
	{ not_ok "the registry did not start"; finish; }

# ---- the project
cat >"$P/package.json" <<'JSON'
{"name": "demo", "version": "0.1.0", "private": true,
 "dependencies": {"wd-pad": "^1.0.0"},
 "scripts": {"test": "node test.js"}}
JSON
echo "registry=http://127.0.0.1:$port/" >"$P/.npmrc"
printf 'node_modules/\n' >"$P/.gitignore"
echo 'module.exports = (n) => require("wd-pad")(n, 3);' >"$P/lib.js"
cat >"$P/test.js" <<'JS'
const assert = require("assert");
assert.strictEqual(require("./lib.js")(7), "007");
console.log("tests passed");
JS
chown -R "$U:$U" "$UH" "$P"

BIN=$(dirname "$WARDEN")
if ! setpriv --reuid "$U" --regid "$U" --clear-groups test -x "$WARDEN"; then
	mkdir "$T/bin" && cp "$WARDEN" "$BIN/warden-monitor" "$T/bin/" && chmod 755 "$T/bin"
	BIN=$T/bin
fi
[ -x "$BIN/warden-monitor" ] || skip "no warden-monitor beside $WARDEN"

# as_user ARGS...: warden as $U in the project; OUT, ERR, RC
as_user() {
	(cd "$P" && env -i PATH=/usr/bin:/bin HOME="$UH" WARDEN_MONITOR="$BIN/warden-monitor" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		setpriv --reuid "$U" --regid "$U" --clear-groups "$BIN/warden" "$@") \
		>"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
at_exit 'pkill -KILL -u '"$U"' 2>/dev/null'

as_user create app --workspace-mode cow --best-effort --net allow \
	--allow-host "127.0.0.1:$port"
expect_rc 0 "an ordinary user creates a cow session allowed one registry"

as_user exec app -- npm install --no-audit --no-fund --fetch-retries=0 --loglevel=http
expect_rc 0 "npm install through the proxy from the loopback registry"
check "  ... from the registry the project names" grep -q "GET 200 http://127.0.0.1:$port/wd-pad" "$ERR"
as_user exec app -- node -e 'console.log(require("wd-pad")(5, 3))'
check "  ... the dependency is installed in the session" grep -qx 005 "$OUT"
check "  ... and not in the real directory" test ! -e "$P/node_modules"

# another port of the same address: refused by the proxy, and the exec's
# last lines say which host, which rule and what would allow it
as_user exec app -- npm view wd-pad version --fetch-retries=0 --registry "http://127.0.0.1:$other/"
check "a registry on another port is refused (status $RC)" test "$RC" != 0
check "  ... and the refusal is named at the end (host and the option that allows it)" \
	grep -q "^warden: exec: network: 127.0.0.1:$other refused (port.*--allow-host 127.0.0.1:$other" "$ERR"

# ---- an edit inside the session, then the project's tests
as_user exec app -- sed -i 's/n, 3/n, 4/' lib.js
expect_rc 0 "an edit inside the session (sed -i)"
as_user exec app -- node -e 'const fs = require("fs");
fs.writeFileSync("test.js", fs.readFileSync("test.js", "utf8").replace("\"007\"", "\"0007\""))'
expect_rc 0 "  ... and one by node"
as_user exec app -- npm test
expect_rc 0 "npm test runs the package's test script in the session"
check "  ... which passes" grep -qx "tests passed" "$OUT"

# ---- review
as_user diff app --name-status
expect_rc 0 "diff"
for want in 'modified  lib.js' 'modified  test.js' 'added     package-lock.json'; do
	check "  ... lists '$want'" grep -qF "$want" "$OUT"
done
check "  ... summarises node_modules/ as ignored, in one line" \
	grep -qE '^node_modules/ .*ignored' "$OUT"
check "  ... and nothing else (no npm cache or HOME file in the project)" \
	test "$(grep -vc -e '^modified  lib.js$' -e '^modified  test.js$' \
		-e '^added     package-lock.json' -e '^node_modules/ ' "$OUT")" = 0
as_user diff app --all --name-status
check "diff --all lists the ignored files too" grep -qF 'node_modules/wd-pad/index.js' "$OUT"

# ---- apply: the reviewed edit lands, the ignored node_modules does not
as_user apply app
expect_rc 0 "apply"
check "  ... the edit is in the real directory" grep -qF 'n, 4' "$P/lib.js"
check "  ... with the lock file" test -s "$P/package-lock.json"
check "  ... node_modules is not" test ! -e "$P/node_modules"
as_user apply app --all
expect_rc 0 "apply --all"
check "  ... takes node_modules too" test -s "$P/node_modules/wd-pad/index.js"
(cd "$P" && node test.js) >"$OUT" 2>&1
check "the applied project passes its tests on the host" grep -qx "tests passed" "$OUT"

as_user rm app
expect_rc 0 "rm the session"
check "no process of the user is left" wait_until "$(scaled 10)" bash -c "! pgrep -u $U >/dev/null"
finish
