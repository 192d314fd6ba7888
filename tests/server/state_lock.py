#!/usr/bin/env python3
"""One warden serve per --state-dir.

A server started on a state directory takes back the sessions its records
name and removes the server-made sessions none names.  A second server on
the same directory adopted the first's live sessions (two servers serving
one sandbox).  Proves: a second server on the directory is refused at
start with 125, naming --state-dir, the directory, the lock and the first
server's pid, and it made nothing there (the first's session, its sandbox
and its change set are untouched and still served); once the first is
killed with SIGKILL (its lock goes with it), a new server starts on the
directory and its owner resumes the session with the same change set.
(root: a cow session needs it here; ~3 s)."""
import json
import os
import re
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
sock = os.path.join(env.top, "a.sock")


def sessions():
    r = subprocess.run([WARDEN, "ls", "--json"], capture_output=True, text=True, env=env.env,
                       timeout=60)
    return {e["id"]: e["state"] for e in json.loads(r.stdout or "[]")}


first = Server(env, "--socket", sock, "--state-dir", env.state)
a = LineClient(path=sock)
sname = a.call("session.open").get("result", {}).get("session", "")
box = a.call("sandbox.create", {"workspace_mode": "cow"}).get("result", {}).get("sandbox")
r = a.call("sandbox.write_file", {"sandbox": box, "path": "mine.txt", "content": "mine\n"})
d1 = a.call("sandbox.diff", {"sandbox": box, "format": "json"}).get("result", {})
ok(box and "result" in r and d1.get("changes") == 1,
   "the first server: a named session's cow sandbox with a file written (%s)"
   % json.dumps(d1)[:120])
before = sessions()
record = os.path.join(env.state, "serve", sname + ".json")
with open(record) as f:
    rec_before = f.read()

sock2 = os.path.join(env.top, "b.sock")
# the second server on the same directory, on a socket of its own; waited for until it exits or listens (a server
# that listens was not refused: it is killed, and the test fails)
errf = open(os.path.join(env.top, "second.err"), "w+")
second = subprocess.Popen([WARDEN, "serve", "-w", env.ws, "--socket", sock2, "--state-dir",
                           env.state], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=errf, env=env.env)
while second.poll() is None and not os.path.exists(sock2):
    time.sleep(0.02)
listened = os.path.exists(sock2)
if second.poll() is None:
    second.kill()
second.wait()
errf.seek(0)
err = errf.read()
lock = os.path.join(env.state, "serve", "lock")
ok(second.returncode == 125, "a second server on the directory: 125 (%d)" % second.returncode)
ok("--state-dir" in err and env.state in err and lock in err and
   re.search(r"\bpid %d\b" % first.p.pid, err),
   "... naming --state-dir, the directory, its lock and the first server's pid %d (%s)"
   % (first.p.pid, err.strip()[-400:]))
ok(not listened, "... it listened on nothing")
ok(sessions() == before, "... and made or removed no session (%s)" % sessions())
with open(record) as f:
    ok(f.read() == rec_before, "... the first server's record is untouched")
r = a.call("sandbox.exec", {"sandbox": box, "argv": ["cat", "mine.txt"]})
ok(r.get("result", {}).get("stdout", {}).get("data") == "mine\n",
   "the first server still serves its sandbox (%s)" % json.dumps(r)[:160])
d2 = a.call("sandbox.diff", {"sandbox": box, "format": "json"}).get("result", {})
ok(d2.get("digest") == d1.get("digest"), "... with the same change set")
a.close()

# the first killed: its lock goes with it, the next server adopts
first.stop(9)
third = Server(env, "--socket", sock2, "--state-dir", env.state)
c = LineClient(path=sock2)
r = c.call("session.open", {"session": sname})
ok(r.get("result", {}).get("sandboxes") == [box],
   "the first killed with SIGKILL: a new server on the directory starts and its owner "
   "resumes the session (%s; %s)" % (json.dumps(r)[:160], third.stderr()[-300:]))
d3 = c.call("sandbox.diff", {"sandbox": box, "format": "json"}).get("result", {})
ok(d3.get("digest") == d1.get("digest"), "... with the same change set")
r = c.call("sandbox.destroy", {"sandbox": box})
ok("result" in r, "... destroyed (%s)" % json.dumps(r)[:160])
c.close()
ok(third.stop() == 0, "the new server stops with 0")
left = sessions()
for sid in left:
    subprocess.run([WARDEN, "rm", sid], capture_output=True, env=env.env, timeout=60)
ok(left == {}, "nothing left (%s)" % left)
env.close()
done()
