#!/usr/bin/env python3
"""--allow-range everywhere a sandbox's egress is set (docs/threat-model.md):
warden run had the flag, but a policy had no key for it and warden serve
no flag, so an MCP server could never reach a loopback or private service
its policy's network.allow names.  Now the policy's network.allow_ranges
and `warden serve --allow-range` do what `warden run --allow-range` does;
bad values are refused with FILE:LINE:COLUMN or the option's name, status
125.  A loopback web server on the host is the private destination; curl
in the sandbox reaches it through warden's proxy."""
import http.server
import json
import os
import subprocess
import threading

from srvlib import WARDEN, Env, LineClient, Server, done, ok

env = Env()
env.require_sandboxes()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


os.makedirs(os.path.join(env.top, "www"))
with open(os.path.join(env.top, "www", "page.txt"), "w") as f:
    f.write("hello from a loopback service\n")
web = http.server.ThreadingHTTPServer(
    ("127.0.0.1", 0), lambda *a: Quiet(*a, directory=os.path.join(env.top, "www")))
threading.Thread(target=web.serve_forever, daemon=True).start()
port = web.server_address[1]
URL = "http://web.test:%d/page.txt" % port
GOT = "hello from a loopback service"


def policy(name, ranges=None, raw=None):
    path = os.path.join(env.top, name)
    net = {"allow": ["web.test:%d" % port], "hosts": ["web.test=127.0.0.1"]}
    if ranges is not None:
        net["allow_ranges"] = ranges
    with open(path, "w") as f:
        # one member per line, so an error's line:column is predictable
        f.write(raw if raw is not None else
                '{"version": 1,\n "programs": {"curl": {}},\n "network": %s\n}\n' %
                json.dumps(net))
    return path


def run(pol, *extra):
    return subprocess.run([WARDEN, "run", "-w", env.ws, "-p", pol, *extra, "--", "curl", "-s",
                           "-m", "20", URL], capture_output=True, text=True, env=env.env,
                          timeout=120)


# ---- the policy key ----
plain = policy("plain.json")
r = run(plain)
# (curl -s prints the proxy's 403 page: the refusal is in stdout)
ok(GOT not in r.stdout and "refused (address-range)" in r.stdout,
   "control: network.allow alone does not reach a loopback service (%s)" %
   (r.stdout + r.stderr).strip()[-160:])
r = run(policy("ranged.json", ["127.0.0.1/32"]))
ok(r.returncode == 0 and GOT in r.stdout,
   "warden run -p with network.allow_ranges [127.0.0.1/32]: the service answers (%s)" %
   (r.stdout + r.stderr).strip()[-160:])
r = run(policy("other.json", ["127.0.0.2/32"]))
ok(GOT not in r.stdout and "refused (address-range)" in r.stdout,
   "a range that does not contain the destination lifts nothing")
r = run(policy("v6.json", ["::1/128", "[fd00::]/8", "10.0.0.0/8"]))
ok(r.returncode == 0 and "refused (address-range)" in r.stdout,
   "IPv6, bracketed and private ranges load (and do not cover 127.0.0.1): %s" %
   (r.stdout + r.stderr).strip()[-160:])
r = subprocess.run([WARDEN, "policy", "show", "--policy", policy("show.json", ["127.0.0.1/32"])],
                   capture_output=True, text=True, env=env.env)
ok(r.returncode == 0 and '"allow_ranges"' in r.stdout and "127.0.0.1/32" in r.stdout,
   "warden policy show: the key is part of the effective policy (and its digest)")

for bad, why in [("127.0.0.1/33", "prefix length"), ("web.test", "not an address or CIDR"),
                 ("127.0.0.1:8080", "not an address or CIDR"),
                 ("0.0.0.0/0", "shorter than /8"), ("10.0.0.0/x", "prefix length"),
                 ("", "non-empty")]:
    pol = policy("bad.json", [bad])
    r = run(pol)
    # the network object is line 3 of the file (see policy())
    ok(r.returncode == 125 and "bad.json:3:" in r.stderr and "network.allow_ranges[0]" in r.stderr
       and why in r.stderr and GOT not in r.stdout,
       "network.allow_ranges %r: refused with file:line:column, 125, nothing run (%s)" %
       (bad, r.stderr.strip()[-200:]))
pol = policy("notarray.json", raw='{"version": 1, "programs": {"curl": {}},\n'
             ' "network": {"allow_ranges": "127.0.0.1/32"}}\n')
r = run(pol)
ok(r.returncode == 125 and "notarray.json:2:" in r.stderr,
   "network.allow_ranges as a string, not an array: refused (%s)" % r.stderr.strip()[-160:])


# ---- warden serve --allow-range ----
def serve_run(*args):
    srv = Server(env, "--policy", plain, *args, stdio=True)
    m = LineClient(srv)
    m.initialize()
    r = m.call("tools/call", {"name": "run_command", "arguments": {"command": "curl -s -m 20 " +
                                                                     URL}}, timeout=120)
    m.close()
    srv.p.stdin.close()
    srv.stop()
    r = r.get("result", {})
    return "".join(c.get("text", "") for c in r.get("content", []))


t = serve_run()
ok(GOT not in t, "control: warden serve without --allow-range does not reach it")
t = serve_run("--allow-range", "127.0.0.1/32")
ok(GOT in t, "warden serve --allow-range 127.0.0.1/32: run_command reaches it (%s)" % t[-200:])
for bad in ["nope", "0.0.0.0/0", "127.0.0.1/32:80"]:
    r = subprocess.run([WARDEN, "serve", "-w", env.ws, "--stdio", "--allow-range", bad],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env.env,
                       timeout=60)
    ok(r.returncode == 125 and "--allow-range" in r.stderr,
       "warden serve --allow-range %r: refused before serving, 125 (%s)" %
       (bad, r.stderr.strip()[-160:]))
r = subprocess.run([WARDEN, "serve", "--help"], capture_output=True, text=True)
ok("--allow-range" in r.stdout, "serve --help lists --allow-range")

web.shutdown()
env.close()
done()
