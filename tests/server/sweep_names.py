#!/usr/bin/env python3
"""A server's sweep of its own orphaned sandboxes leaves a human's sessions alone.

warden serve --state-dir DIR removes, at start, a library session it made
("serve-" and 16 hex digits) that no record in DIR/serve names: one made
just before the last server was killed.  The state directory is also the
CLI's (warden create): a human's session named "serve-frontend", with
changes not yet applied, was removed with its layers by the next server
start, and the work was gone.  Proves: a human's "serve-frontend" and
"serve.1.1.notes" (the shape of an ordinary user's anonymous server
sandbox) outlive a server start on the directory, their changes intact;
a session of the server's own shape no record names is still removed.
(root: a cow session needs it here; ~2 s)."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok, skip  # noqa: E402

if os.geteuid() != 0:
    skip("needs root (a cow session with a disk)")

env = Env()
env.require_sandboxes()
os.makedirs(env.state, mode=0o700, exist_ok=True)


def cli(*args):
    return subprocess.run([WARDEN, *args], capture_output=True, text=True, env=env.env,
                          cwd=env.ws, timeout=120)


def names():
    r = cli("ls")
    return sorted(line.split()[1] for line in r.stdout.splitlines()[1:] if line.split())


human = ["serve-frontend", "serve.1.1.notes"]
orphan = "serve-0123456789abcdef"
for n in human + [orphan]:
    r = cli("create", n, "--workspace-mode", "cow", "--workspace", env.ws)
    ok(r.returncode == 0, "warden create %s (%s)" % (n, r.stderr.strip()))
r = cli("exec", "serve-frontend", "--", "sh", "-c", "echo work > unapplied.txt")
ok(r.returncode == 0, "the human's session holds a change not yet applied")
ok(names() == sorted(human + [orphan]), "three sessions before the server (%s)" % names())

srv = Server(env, "--state-dir", env.state, stdio=True)
mcp = LineClient(srv)
mcp.initialize()
end = time.time() + 30
while time.time() < end and orphan in names():
    time.sleep(0.1)
ok(orphan not in names(), "a session of the server's shape no record names is removed")
ok(all(n in names() for n in human),
   "the human's sessions outlive the server's start (%s; %s)" % (names(), srv.stderr()[-300:]))
r = cli("diff", "serve-frontend")
ok(r.returncode == 0 and "unapplied.txt" in r.stdout,
   "... with their changes (%s)" % (r.stdout + r.stderr).strip()[-200:])
mcp.close()
srv.p.stdin.close()
ok(srv.stop() == 0, "the server stops")
for n in names():
    cli("rm", n)
ok(names() == [], "nothing left")
env.close()
done()
