"""warden serve as a pod's process (docs/server.md, "Running in a pod"):
/healthz and /readyz without the token, readiness from a sandbox really
built at the required level (and never a weaker one), the drain on
SIGTERM (a call in flight finishes, new connections and calls are
refused, nothing is left behind, the audit chain is intact), the drain
deadline, sessions that outlive their connections (HTTP's
Mcp-Session-Id, the socket's session.open, bound to its uid) until
--session-idle, --token-file through a Secret volume's symbolic links
and its rotation (failing closed), --log-format json and the text log's
newlines, --state-dir, and the bad values of each (125).
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

from srvlib import WARDEN, Env, LineClient, Server, done, http_post, ok, scaled, skip

env = Env()
env.require_sandboxes()
if os.geteuid() != 0:
    skip("the drain's leftovers are checked in cgroups: root")


def get(port, path, method="GET", body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body)
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out.decode()


def wait_ready(port, want, timeout=120):
    """Poll /readyz until it answers want (a status): the probe is a
    sandbox being built, which takes what the machine's load makes it."""
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = get(port, "/readyz")
        if last[0] == want:
            return last
        time.sleep(0.05)
    return last


def until(cond, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def state_dir(name):
    d = os.path.join(env.top, name)
    os.mkdir(d, 0o700)
    return d


def sandbox_cgroups(pid):
    """The cgroup directories of process pid (v1 and v2 lines)."""
    out = []
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if "/warden/" not in path:
                continue
            if ctrls == "":
                for top in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
                    if os.path.isdir(top + path):
                        out.append(top + path)
                        break
            else:
                for c in ctrls.split(","):
                    d = "/sys/fs/cgroup/%s%s" % (c.replace("name=", ""), path)
                    if os.path.isdir(d):
                        out.append(d)
    return out


def init_pids(srv):
    r = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(srv.p.pid)],
                       capture_output=True, text=True)
    return [int(l.split()[0]) for l in r.stdout.splitlines() if l.split()[1:] == ["warden-init"]]


def wait_children(srv, n, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        pids = init_pids(srv)
        if len(pids) >= n:
            return pids
        time.sleep(0.02)
    return init_pids(srv)


def refused(port=None, path=None, timeout=30):
    """A new connection is refused (the listener closed) within timeout."""
    end = time.time() + timeout
    while time.time() < end:
        s = socket.socket(socket.AF_UNIX if path else socket.AF_INET)
        s.settimeout(5)
        try:
            s.connect(path if path else ("127.0.0.1", port))
        except (ConnectionRefusedError, FileNotFoundError):
            return True
        except (ConnectionResetError, socket.timeout):
            pass  # taken into the backlog as the listener closed: try again
        finally:
            s.close()
        time.sleep(0.02)
    return False


# ---- health and readiness ----
st = state_dir("state-a")
sock = os.path.join(env.top, "a.sock")
srv = Server(env, "--listen", "127.0.0.1:0", "--token-file", env.token, "--socket", sock,
             "--state-dir", st, "--drain-timeout", "120")
status, body = get(srv.port, "/healthz")
ok(status == 200 and body == "ok\n", "/healthz without the token: 200 ok (%d %r)" % (status, body))
status, body = wait_ready(srv.port, 200)
ok(status == 200 and body == "ok\n",
   "/readyz without the token: 200 once a container sandbox was built (%d %r)" % (status, body))
ok(get(srv.port, "/readyz?verbose=1")[0] == 200, "... a query string changes nothing")
status, body = get(srv.port, "/readyz", method="POST", body=b"")
ok(status == 405, "POST /readyz: 405 (GET only)")
status, _, _ = http_post(srv.port, None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
ok(status == 401, "/mcp still needs the token (%d)" % status)
# Connection: close with an answer ready at once: the connection closed
# under the exchange answering it, which was used after it was freed
# (the ASan build aborted; found by the drain, which closes every answer)
for i in range(3):
    status, hdr, _ = http_post(srv.port, env.token_value(),
                               {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "1"}}},
                               headers={"Connection": "close"})
ok(status == 200 and hdr.get("connection") == "close" and srv.p.poll() is None and
   get(srv.port, "/healthz")[0] == 200,
   "requests with Connection: close are answered and the server serves on")
status, body = get(srv.port, "/metrics")
ok(status == 401, "any other path without the token: 401, not a health answer (%d)" % status)

# ---- the drain: a call in flight finishes, new ones are refused ----
a = LineClient(path=sock)
b = LineClient(path=sock)
r = b.call("sandbox.create", {"workspace_mode": "cow"})
ok("result" in r, "a live cow sandbox before SIGTERM: %s" % json.dumps(r)[:200])
cow_id = r.get("result", {}).get("sandbox", "?")
ok(os.path.isdir(os.path.join(st, "sandboxes", cow_id)),
   "... its change set lives under --state-dir (%s)" % sorted(os.listdir(st)))


def loops_on(path):
    """Loop devices whose backing file is under path."""
    r = subprocess.run(["losetup", "-a"], capture_output=True, text=True)
    return [l for l in r.stdout.splitlines() if path in l]


loops = loops_on(st)
ok(len(loops) == 1, "... on a loop device while it lives (%s)" % loops)
a.send({"jsonrpc": "2.0", "id": 7, "method": "sandbox.run",
        "params": {"argv": ["/bin/sh", "-c",
                            "while [ ! -e go ]; do sleep 0.05; done; echo finished"]}})
pids = wait_children(srv, 2)
ok(len(pids) == 2, "the long call and the live sandbox run (%d sandboxes)" % len(pids))
cgroups = [d for p in pids for d in sandbox_cgroups(p)]
ok(len(cgroups) >= 2, "their cgroups, seen on the host: %d directories" % len(cgroups))
# an HTTP client on keep-alive, its session open before the signal
hc = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
HH = {"Authorization": "Bearer " + env.token_value(), "Content-Type": "application/json",
      "Accept": "application/json, text/event-stream"}
hc.request("POST", "/mcp", body=json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}).encode(), headers=HH)
hr = hc.getresponse()
hr.read()
HH["Mcp-Session-Id"] = hr.getheader("Mcp-Session-Id")
t0 = time.time()
srv.p.send_signal(15)
ok(refused(port=srv.port), "after SIGTERM a new HTTP connection is refused")
hc.request("POST", "/mcp", body=b'{"jsonrpc":"2.0","id":2,"method":"ping"}', headers=HH)
hr = hc.getresponse()
hb = json.loads(hr.read())
ok(hb.get("error", {}).get("code") == -32010 and hr.getheader("Connection") == "close",
   "a call on an HTTP connection kept alive: -32010, and Connection: close (%s)" % hb)
hc.close()
ok(refused(path=sock), "... and a new socket connection too")
r = b.call("ping")
ok(r.get("error", {}).get("code") == -32010,
   "a new call on an open connection: -32010 (%s)" % json.dumps(r)[:200])
# the call in flight is released only now: it ran through all of the above
with open(os.path.join(env.ws, "go"), "w"):
    pass
r = a.answer(7, timeout=120)
os.unlink(os.path.join(env.ws, "go"))
res = r.get("result", {})
ok(res.get("exit_code") == 0 and res.get("stdout", {}).get("data") == "finished\n",
   "the call in flight finished and was answered (%s)" % json.dumps(r)[:300])
rc = srv.p.wait(timeout=120)
ok(rc == 0, "the server exited 0 after the drain (%d, %.1f s)" % (rc, time.time() - t0))
ok(not [d for d in cgroups if os.path.exists(d)], "no cgroup of its sandboxes is left")
ok(not [p for p in pids if os.path.exists("/proc/%d" % p)], "no process of them is left")
ok(until(lambda: not loops_on(st), timeout=60), "no loop device on its state directory is left")
ok(not os.path.exists(os.path.join(st, "sandboxes", cow_id)),
   "... nor the cow sandbox's directory in it")
audit = os.path.join(st, "audit.log")
v = subprocess.run([WARDEN, "audit", "verify", audit], capture_output=True, text=True)
ok(v.returncode == 0, "the audit log in --state-dir is flushed and its chain intact: %s"
   % (v.stdout + v.stderr).strip()[:200])
with open(audit) as f:
    events = [json.loads(line) for line in f if line.strip()]
drained = [e for e in events if e.get("event") == "result" and
           e.get("sandbox") == res.get("sandbox_id")]
ok(len(drained) == 1 and drained[0]["result"]["exit_code"] == 0,
   "... and holds the drained call's result (%d of %d events)" % (len(drained), len(events)))
a.close()
b.close()

# ---- the drain's deadline: what still runs is cancelled ----
sock = os.path.join(env.top, "b.sock")
srv = Server(env, "--socket", sock, "--drain-timeout", "1")
a = LineClient(path=sock)
a.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.run",
        "params": {"argv": ["/bin/sleep", "600"]}})
pids = wait_children(srv, 1)
cgroups = [d for p in pids for d in sandbox_cgroups(p)]
t0 = time.time()
srv.p.send_signal(15)
r = a.answer(1, timeout=120)
rc = srv.p.wait(timeout=120)
took = time.time() - t0
res = r.get("result", {})
ok(rc == 0 and took < 60, "--drain-timeout 1: the server stopped, 0, in %.1f s" % took)
ok(res.get("exit_code") != 0 or "error" in r,
   "... the call past the deadline was cancelled (%s)" % json.dumps(r)[:200])
ok(pids and not [d for d in cgroups if os.path.exists(d)] and
   not [p for p in pids if os.path.exists("/proc/%d" % p)], "... and nothing of it is left")
a.close()

# ---- an HTTP session's sandboxes outlive its connections, within --session-idle ----
# Each idle window below must outlast the checks the test makes inside it
# (beside a parallel build, those between an HTTP connection's close and
# the look at its sandbox took over 3 s, and the sandbox had ended): each
# is stretched for a loaded host or a sanitizer build (srvlib.scaled).
IDLE_HTTP, IDLE_SOCK, IDLE_RESTART = scaled(5), scaled(3), scaled(2)
srv = Server(env, "--listen", "127.0.0.1:0", "--token-file", env.token,
             "--session-idle", str(IDLE_HTTP))
tok = env.token_value()
V = {"MCP-Protocol-Version": "2025-06-18"}


def session():
    _, h, _ = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                        "params": {"protocolVersion": "2025-06-18",
                                                   "capabilities": {},
                                                   "clientInfo": {"name": "t", "version": "1"}}})
    return h.get("mcp-session-id")


def tool(sid, name, args):
    """One tools/call on a connection of its own (http_post closes it)."""
    st, _, out = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                           "params": {"name": name, "arguments": args}},
                           session=sid, headers=V)
    return st, (json.loads(out).get("result", {}) if st == 200 else {})


sa, sb = session(), session()
st, r = tool(sa, "sandbox_create", {"workspace_mode": "direct"})
box = r.get("structuredContent", {}).get("sandbox")
ok(st == 200 and box, "session A made a sandbox, and its connection closed (%s)" % box)
st, r = tool(sa, "run_command", {"sandbox": box, "command": "ls"})
ok(r.get("structuredContent", {}).get("sandbox_id") == box,
   "a new connection with A's Mcp-Session-Id finds it and runs in it")
ok(len(init_pids(srv)) == 1, "... its sandbox lives with no connection open")
st, r = tool(sb, "sandbox_list", {})
ok(st == 200 and box not in json.dumps(r), "session B does not see it in sandbox_list")
st, r = tool(sb, "run_command", {"sandbox": box, "command": "ls"})
ok(r.get("isError") is True and r.get("structuredContent", {}).get("sandbox_id") != box,
   "... nor run in it")
ok(until(lambda: not init_pids(srv), timeout=60 + IDLE_HTTP),
   "idle past --session-idle %d: the session's sandbox ended" % IDLE_HTTP)
st, r = tool(sa, "sandbox_list", {})
ok(st == 404, "... and the session with it: 404 (%d)" % st)
ok(srv.stop() == 0, "... stopped with 0")

# ---- a named socket session: its sandboxes outlive the connection ----
sock = os.path.join(env.top, "c.sock")
os.chmod(env.top, 0o755)
srv = Server(env, "--socket", sock, "--session-idle", str(IDLE_SOCK), "--allow-group", "nogroup",
             "-v")
a = LineClient(path=sock)
r = a.call("session.open")
sname = r.get("result", {}).get("session", "")
ok(len(sname) == 32 and r["result"]["sandboxes"] == [], "session.open names the connection's "
   "session (%s)" % sname)
box = a.call("sandbox.create").get("result", {}).get("sandbox")
r = a.call("sandbox.write_file", {"sandbox": box, "path": "kept.txt", "content": "kept\n"})
ok(box and "result" in r, "... a sandbox made on it, a file written in it")
a.close()
ok(until(lambda: "its sandboxes are kept" in srv.stderr()) and len(init_pids(srv)) == 1,
   "the connection closed: its sandbox lives on")
c = LineClient(path=sock)
r = c.call("sandbox.read_file", {"sandbox": box, "path": "kept.txt"})
ok(r.get("error", {}).get("code") == -32001, "another connection cannot reach it (-32001)")
r = c.call("session.open", {"session": "0" * 32})
ok(r.get("error", {}).get("code") == -32602, "an unknown session id: -32602")
nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
          "import socket,json,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
          "s.sendall(json.dumps({'jsonrpc':'2.0','id':1,'method':'session.open',"
          "'params':{'session':sys.argv[2]}}).encode()+b'\\n'); "
          "print(s.makefile().readline())", sock, sname]
r = subprocess.run(nobody, capture_output=True, text=True, timeout=60)
ok('"code": -32602' in r.stdout or '"code":-32602' in r.stdout,
   "another user (--allow-group) with the id: refused (%s)" % (r.stdout + r.stderr).strip()[:160])
r = c.call("session.open", {"session": sname})
ok(r.get("result", {}).get("sandboxes") == [box],
   "a new connection naming the session takes its sandboxes back (%s)" % json.dumps(r)[:160])
r = c.call("sandbox.read_file", {"sandbox": box, "path": "kept.txt"})
ok("kept" in json.dumps(r.get("result", {})), "... with what was written in it")
c.close()
ok(until(lambda: not init_pids(srv), timeout=60 + IDLE_SOCK),
   "no connection for --session-idle %d: the sandbox ended" % IDLE_SOCK)
d = LineClient(path=sock)
r = d.call("session.open", {"session": sname})
ok(r.get("error", {}).get("code") == -32602, "... and the session with it")
d.close()
ok(srv.stop() == 0, "... stopped with 0")

# ---- a named socket session's cow sandbox across SIGTERM and a restart ----
st2 = state_dir("state-restart")
sock2 = os.path.join(env.top, "r.sock")
senv = dict(env.env, WARDEN_STATE_DIR=st2)


def session_state(sid):
    r = subprocess.run([WARDEN, "ls", "--json"], capture_output=True, text=True, env=senv)
    return {e["id"]: e["state"] for e in json.loads(r.stdout or "[]")}.get(sid)


srv = Server(env, "--socket", sock2, "--state-dir", st2, "--allow-group", "nogroup")
a = LineClient(path=sock2)
sname = a.call("session.open").get("result", {}).get("session", "")
box = a.call("sandbox.create", {"workspace_mode": "cow"}).get("result", {}).get("sandbox")
r = a.call("sandbox.write_file", {"sandbox": box, "path": "across.txt", "content": "across\n"})
d1 = a.call("sandbox.diff", {"sandbox": box, "format": "json"}).get("result", {})
ok(box and "result" in r and d1.get("changes") == 1,
   "a named socket session's cow sandbox with a file written (%s)" % json.dumps(d1)[:120])
a.close()
# a second session, never resumed: the restarted server ends it after
# --session-idle, as any
e = LineClient(path=sock2)
idle_name = e.call("session.open").get("result", {}).get("session", "")
idle_box = e.call("sandbox.create", {"workspace_mode": "cow"}).get("result", {}).get("sandbox")
e.close()
record = os.path.join(st2, "serve", sname + ".json")
ok(srv.stop() == 0 and session_state(box) == "stopped" and os.path.isfile(record),
   "SIGTERM: the server drains, the sandbox is stopped (%s), its record kept"
   % session_state(box))
# what a server that died between making a session and writing it down
# leaves: a "serve-" session no record names (removed at the restart);
# a session of the user's own beside it (kept)
made = {}
for n in ("serve-0123456789abcdef", "mine"):
    r = subprocess.run([WARDEN, "create", n, "-w", env.ws, "--json"], capture_output=True,
                       text=True, env=senv, timeout=120)
    made[n] = json.loads(r.stdout or "{}").get("id")
srv = Server(env, "--socket", sock2, "--state-dir", st2, "--allow-group", "nogroup",
             "--session-idle", str(IDLE_RESTART))
ok(all(made.values()) and session_state(made["serve-0123456789abcdef"]) is None and
   session_state(made["mine"]) is not None,
   "a new server on the directory removes a server's session no record names, keeps the "
   "user's (%s)" % made)
subprocess.run([WARDEN, "rm", "mine"], capture_output=True, env=senv, timeout=120)
r = subprocess.run(nobody[:-2] + [sock2, sname], capture_output=True, text=True, timeout=60)
ok('"code": -32602' in r.stdout or '"code":-32602' in r.stdout,
   "a new server on the directory: another user (--allow-group) with the id is refused (%s)"
   % (r.stdout + r.stderr).strip()[:160])
c = LineClient(path=sock2)
r = c.call("session.open", {"session": sname})
ok(r.get("result", {}).get("sandboxes") == [box],
   "... its owner resumes the session with its sandbox (%s)" % json.dumps(r)[:160])
d2 = c.call("sandbox.diff", {"sandbox": box, "format": "json"}).get("result", {})
ok(d2.get("digest") == d1.get("digest") and d2.get("files") == d1.get("files"),
   "... the same change set (digest %s)" % d2.get("digest"))
r = c.call("sandbox.exec", {"sandbox": box, "argv": ["cat", "across.txt"]})
ok(r.get("result", {}).get("stdout", {}).get("data") == "across\n",
   "... a command runs in it, started again over its files (%s)" % json.dumps(r)[:160])
streamed = [n["params"] for n in c.notes if n.get("method") == "sandbox.output"]
ok(streamed == [{"id": 3, "sandbox": box, "stream": "stdout", "data": "across\n"}],
   "... its output streamed as sandbox.output while it ran (%s)" % streamed)
c.send({"jsonrpc": "2.0", "id": 40, "method": "sandbox.exec",
        "params": {"sandbox": box, "argv": ["sleep", "60"], "stream": False}})
time.sleep(0.3)
t0 = time.time()
c.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 40}})
r = c.answer(40)
r2 = c.call("sandbox.exec", {"sandbox": box, "argv": ["cat", "across.txt"]})
ok(r.get("error", {}).get("code") == -32800 and time.time() - t0 < 30 and
   r2.get("result", {}).get("stdout", {}).get("data") == "across\n",
   "... a cancelled command ends (-32800, %.1f s), the sandbox lives on (%s %s)"
   % (time.time() - t0, json.dumps(r)[:200], json.dumps(r2)[:300]))
r = c.call("sandbox.destroy", {"sandbox": box})
ok(r.get("result", {}).get("destroyed") is True and session_state(box) is None and
   not os.path.exists(record), "... destroyed: no session and no record left")
c.close()
idle_record = os.path.join(st2, "serve", idle_name + ".json")
ok(idle_box and until(lambda: session_state(idle_box) is None and
                      not os.path.exists(idle_record), timeout=60 + IDLE_RESTART),
   "the session never resumed ends after --session-idle: its sandbox and record removed")
ok(srv.stop() == 0 and not [l for l in open("/proc/self/mountinfo") if st2 in l],
   "... stopped with 0, nothing mounted from its state directory")

# ---- a required level that does not work keeps the server unready ----
env.env["WARDEN_RUNSC"] = os.path.join(env.top, "no-runsc")
srv = Server(env, "--listen", "127.0.0.1:0", "--token-file", env.token,
             "--isolation", "gvisor")
# wait for the probe's verdict (503 "probing" first, then 503 with why)
ok(until(lambda: "probing" not in get(srv.port, "/readyz")[1], timeout=120),
   "--isolation gvisor without runsc: the probe finished")
status, body = get(srv.port, "/readyz")
ok(status == 503 and "isolation gvisor" in body and "runsc" in body,
   "--isolation gvisor without runsc: /readyz 503 with the reason (%r)" % body)
ok(get(srv.port, "/healthz")[0] == 200, "... while /healthz says the process serves")
tok = env.token_value()
hdr = {"MCP-Protocol-Version": "2025-06-18"}
status, h, out = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                           "params": {"protocolVersion": "2025-06-18",
                                                      "capabilities": {},
                                                      "clientInfo": {"name": "t", "version": "1"}}})
sid = h.get("mcp-session-id")
status, h, out = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                           "params": {"name": "run_command",
                                                      "arguments": {"command": "ls"}}},
                           session=sid, headers=hdr)
msg = json.loads(out)
res = msg.get("result", {})
ok(res.get("isError") is True and res.get("structuredContent", {}).get("outcome") != "ran",
   "... and a command is not run at a weaker level (%s)" % out[:200])
ok(srv.stop() == 0, "... stopped with 0")
del env.env["WARDEN_RUNSC"]

# ---- JSON logs: one object per line, the model's bytes escaped ----
srv = Server(env, "--listen", "127.0.0.1:0", "--token-file", env.token, "--log-format", "json",
             stdio=True)
lc = LineClient(server=srv)
evil = "ev\x1b[31mil\"}\n{\"level\":\"error\"\u202e"
lc.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": evil, "version": "1"}})
wait_ready(srv.port, 200)
srv.p.stdin.close()
rc = srv.p.wait(timeout=120)
lines = srv.stderr().splitlines()
objs = []
for line in lines:
    try:
        objs.append(json.loads(line))
    except ValueError:
        objs.append(None)
ok(lines and None not in objs, "--log-format json (with --stdio, on stderr): every line is a "
   "JSON object (%d lines)" % len(lines))
ok(all(set(o) == {"time", "level", "msg", "fields"} for o in objs if o),
   "... with time, level, msg and fields")
ok(not any("\x1b" in line for line in lines), "... no escape byte reaches the log raw")
named = [o for o in objs if o and "client" in o["msg"]]
ok(len(named) == 1 and named[0]["level"] == "info" and "\x1b" not in named[0]["msg"],
   "... the client's name stays inside one event's msg, made visible (%s)"
   % (named[0]["msg"][:120] if named else None))
listen = [o for o in objs if o and o["msg"].startswith("listening on ")]
ok(listen and listen[0]["fields"].get("port") == srv.port, "... the listening event has the port")
ok(any(o and o["msg"].startswith("ready: ") for o in objs), "... and the readiness event")
ok(rc == 0, "... the server stopped at EOF with 0")

# ---- the text log: a client's name cannot start a line of its own ----
srv = Server(env, "-v", stdio=True)
lc = LineClient(server=srv)
lc.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "x\nwarden: serve: error: forged", "version": "1"}})
srv.p.stdin.close()
srv.p.wait(timeout=120)
ok(not [l for l in srv.stderr().splitlines() if l.startswith("warden: serve: error: forged")],
   "text log: a newline in a client's name is shown as \\n, not a new line (%s)"
   % [l for l in srv.stderr().splitlines() if "forged" in l])

# ---- --token-file through a Secret volume's links ----
secret = os.path.join(env.top, "secret")
ts = os.path.join(secret, "..2026_01_01_00_00_00.1")
os.makedirs(ts)
with open(os.path.join(ts, "token"), "w") as f:
    f.write("s3cret-token-for-the-pod-0123\n")
os.chmod(os.path.join(ts, "token"), 0o400)
os.symlink("..2026_01_01_00_00_00.1", os.path.join(secret, "..data"))
os.symlink("..data/token", os.path.join(secret, "token"))
srv = Server(env, "--listen", "127.0.0.1:0", "--token-file", os.path.join(secret, "token"))
status, _, _ = http_post(srv.port, "s3cret-token-for-the-pod-0123",
                         {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}}})
ok(status == 200, "a token file behind Secret-volume links (mode 0400): its token, trailing "
   "newline stripped, is accepted (%d)" % status)
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


def rotate(n, token, mode=0o400):
    """Update the Secret as the kubelet does: a new timestamped directory,
    then ..data swapped to it in one rename."""
    d = "..2026_01_01_00_00_0%d.1" % n
    os.makedirs(os.path.join(secret, d))
    with open(os.path.join(secret, d, "token"), "w") as f:
        f.write(token + "\n")
    os.chmod(os.path.join(secret, d, "token"), mode)
    os.symlink(d, os.path.join(secret, "..data_tmp"))
    os.rename(os.path.join(secret, "..data_tmp"), os.path.join(secret, "..data"))


def accepted(token):
    return http_post(srv.port, token, INIT)[0] == 200


rotate(2, "rotated-token-number-two-456")
ok(until(lambda: accepted("rotated-token-number-two-456")),
   "the Secret updated (..data swapped): the new token is accepted")
ok(not accepted("s3cret-token-for-the-pod-0123"), "... and the old one refused from then on")
rotate(3, "a-token-others-could-read-789", mode=0o644)
# one condition: a 503 of another cause (a loaded machine) is not this one
last_ready = [None]


def bad_token_ready():
    last_ready[0] = get(srv.port, "/readyz")
    return last_ready[0][0] == 503 and "--token-file" in last_ready[0][1]


ok(until(bad_token_ready),
   "updated to a file others can read: /readyz goes 503 naming --token-file (%r)" %
   (last_ready[0],))
ok(not accepted("rotated-token-number-two-456") and not accepted("a-token-others-could-read-789"),
   "... and every token is refused (fails closed; the previous one is not kept)")
rotate(4, "the-fourth-token-is-good-000")
ok(until(lambda: accepted("the-fourth-token-is-good-000")) and
   until(lambda: get(srv.port, "/readyz")[0] == 200),
   "a good token again: accepted, and ready")
ok(srv.stop() == 0, "... stopped with 0")

# ---- bad values: 125, naming the option, nothing served ----
def refused_start(args, want, what):
    r = subprocess.run([WARDEN, "serve", "-w", env.ws, *args], capture_output=True, text=True,
                       env=env.env, timeout=60, stdin=subprocess.DEVNULL)
    ok(r.returncode == 125 and want in r.stderr,
       "%s: 125 naming %s (%d: %s)" % (what, want, r.returncode, r.stderr.strip()[:200]))


loose = os.path.join(env.top, "loose-token")
with open(loose, "w") as f:
    f.write("0123456789abcdef0123\n")
os.chmod(loose, 0o644)
empty = os.path.join(env.top, "empty-token")
fd = os.open(empty, os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, b"\n")
os.close(fd)
open_dir = os.path.join(env.top, "open-state")
os.mkdir(open_dir)
os.chmod(open_dir, 0o755)
L = ["--listen", "127.0.0.1:0", "--token-file", env.token]
refused_start(["--stdio", "--drain-timeout", "soon"], "--drain-timeout", "--drain-timeout soon")
refused_start(["--stdio", "--drain-timeout", "-1"], "--drain-timeout", "--drain-timeout -1")
refused_start(["--stdio", "--log-format", "xml"], "--log-format", "--log-format xml")
refused_start(["--stdio", "--state-dir", ""], "--state-dir", "--state-dir ''")
refused_start(["--stdio", "--state-dir", open_dir], "--state-dir",
              "--state-dir that others can write")
refused_start(["--listen", "127.0.0.1:0", "--token-file", loose], "--token-file",
              "a world-readable token file")
refused_start(["--listen", "127.0.0.1:0", "--token-file", empty], "--token-file",
              "an empty token file")
ok(not os.listdir(open_dir), "... the refused --state-dir was left as it was")
# the records of the sessions a restarted server takes back say who owns
# which sandbox: a serve/ directory others can write is refused too
open_rec = state_dir("open-records")
os.mkdir(os.path.join(open_rec, "serve"))
os.chmod(os.path.join(open_rec, "serve"), 0o777)
refused_start(["--socket", os.path.join(env.top, "rec.sock"), "--state-dir", open_rec], "/serve must be a directory of the server's "
              "user with mode 0700", "--state-dir whose serve/ others can write")

env.close()
done()
