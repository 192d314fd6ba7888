#!/usr/bin/env python3
"""Bad input to `warden serve`: every case gets the JSON-RPC error the
spec names (or, for oversize input, an error and a closed connection),
the server keeps serving other clients, and no sandbox is left behind.

  malformed JSON, not an object, an empty batch, a batch of 10,000,
  a mixed batch, unknown methods, wrong parameter types, a request id
  reused while in flight, a 100 MB line, a client that disconnects
  mid-call, a slow reader that never reads, bad HTTP requests."""
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, http_post, ok  # noqa: E402

env = Env()
env.require_sandboxes()

# ---- bad options: refused before anything starts, naming the option ----
for args, opt in ((["--protect", "../x"], "--protect"), (["--protect", "/etc"], "--protect"),
                  (["--disk", "1M"], "--disk"), (["--disk", "lots"], "--disk")):
    r = subprocess.run([WARDEN, "serve", "--stdio", "-w", env.ws] + args, capture_output=True,
                       text=True, env=env.env, stdin=subprocess.DEVNULL, timeout=30)
    ok(r.returncode == 125 and opt in r.stderr,
       "serve %s: exit 125 naming %s (%d: %s)" % (" ".join(args), opt, r.returncode,
                                                  r.stderr.strip()))
sock = os.path.join(env.top, "s.sock")
srv = Server(env, "--socket", sock, "--listen", "127.0.0.1:0", "--token-file", env.token,
             "--max-message", "16M", stdio=True)
io = LineClient(srv)


def err_code(m):
    return m.get("error", {}).get("code")


# ---- framing and the envelope ----
io.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
m = io.recv()
ok(err_code(m) == -32700 and m["id"] is None, "malformed JSON: -32700 with id null")
io.send_raw(b"42\n")
ok(err_code(io.recv()) == -32600, "a number is not a request: -32600")
io.send_raw(b"[]\n")
ok(err_code(io.recv()) == -32600, "an empty batch: -32600")
io.send_raw(b'{"jsonrpc":"1.0","id":5,"method":"ping"}\n')
m = io.recv()
ok(err_code(m) == -32600 and m["id"] == 5, "jsonrpc 1.0: -32600 with the id")
io.send_raw(b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}\n')
m = io.recv()
ok(err_code(m) == -32600 and m["id"] is None, "an object as id: -32600 with id null")
io.send_raw(b'{"jsonrpc":"2.0","id":6,"method":"ping","method":"x"}\n')
ok(err_code(io.recv()) == -32700, "duplicate keys: -32700")
io.send_raw(b'\xff\xfe{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
ok(err_code(io.recv()) == -32700, "invalid UTF-8: -32700")

big = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(10000)]
t0 = time.time()
io.send(big)
m = io.recv()
ok(isinstance(m, dict) and err_code(m) == -32600 and "batch" in m["error"]["message"],
   "a batch of 10,000: refused whole with -32600 (%.0f ms)" % ((time.time() - t0) * 1000))

io.send([{"jsonrpc": "2.0", "id": "a", "method": "ping"}, 7,
         {"jsonrpc": "2.0", "method": "notifications/initialized"},
         {"jsonrpc": "2.0", "id": "b", "method": "no.such"}])
m = io.recv()
ok(isinstance(m, list) and len(m) == 3, "a mixed batch: one array, no answer to the notification")
by = {str(x.get("id")): err_code(x) for x in m} if isinstance(m, list) else {}
ok(by.get("a") is None and by.get("None") == -32600 and by.get("b") == -32601,
   "... ping answered, 7 is -32600, an unknown method -32601: %s" % by)

# ---- methods and parameters ----
r = io.call("no.such.method")
ok(err_code(r) == -32601, "unknown method: -32601")
r = io.call("rpc.discover")
ok(err_code(r) == -32601, "rpc.* is not ours: -32601")
r = io.call("tools/list")
ok(err_code(r) == -32002, "tools/list before initialize: -32002")
r = io.call("initialize", {"capabilities": {}})
ok(err_code(r) == -32602, "initialize without protocolVersion: -32602")
r = io.call("initialize", [1, 2])
ok(err_code(r) == -32602, "positional params: -32602")
io.initialize()
r = io.call("tools/call", {"name": 5})
ok(err_code(r) == -32602, "tools/call with a number as name: -32602")
r = io.call("tools/call", {"name": "no_such_tool", "arguments": {}})
ok(err_code(r) == -32602, "an unknown tool: -32602")
r = io.call("tools/call", {"name": "run_command", "arguments": {"command": 7}})
ok(r.get("result", {}).get("isError") is True and
   "command: expected a string" in r["result"]["content"][0]["text"],
   "run_command with a number: a tool error naming the argument")
r = io.call("tools/call", {"name": "read_file", "arguments": {"path": "x", "bogus": 1}})
ok(r.get("result", {}).get("isError") is True, "an unknown argument: a tool error")
r = io.call("sandbox.run", {"argv": "not-an-array"})
ok(err_code(r) == -32003, "sandbox.run on an MCP session: -32003 (a model's channel)")
# the harness's bad params, on the owner's socket (not an MCP session)
hs = LineClient(path=sock)
r = hs.call("sandbox.run", {"argv": "not-an-array"})
ok(err_code(r) == -32602, "sandbox.run with argv a string: -32602")
r = hs.call("sandbox.run", {"command": "ls", "timeout": "soon"})
ok(err_code(r) == -32602, "sandbox.run with timeout a string: -32602")
r = io.call("sandbox.exec", {"sandbox": "0123456789abcdef", "command": "ls"})
ok(err_code(r) == -32001, "sandbox.exec on an unknown sandbox: -32001")
r = io.call("sandbox.create", {"limits": {"memory": 1 << 50}})
ok(err_code(r) == -32602, "sandbox.create above the server's memory: -32602")
# the workspace of sandbox.create: refused before anything is built,
# naming the member (as the CLI names the option)
for params, what, needle in (
        ({"workspace_mode": "overlay"}, "an unknown workspace_mode", "workspace_mode"),
        ({"workspace_mode": 1}, "workspace_mode a number", "workspace_mode"),
        ({"disk": "64M"}, "disk without workspace_mode cow", "workspace_mode"),
        ({"workspace_mode": "cow", "disk": "16M"}, "a disk under 32M", "disk"),
        ({"workspace_mode": "cow", "disk": "lots"}, "a disk that is not a size", "disk"),
        ({"workspace_mode": "cow", "disk": -1}, "a negative disk", "disk"),
        ({"workspace_mode": "cow", "disk": 1 << 40}, "a disk over the server's", "--disk"),
        ({"protect": "x"}, "protect a string", "protect"),
        ({"protect": ["../x"]}, "a protected path with ..", "protect[0]"),
        ({"protect": ["/etc"]}, "an absolute protected path", "protect[0]"),
        ({"protect": ["ok", 7]}, "a protected path that is a number", "protect[1]")):
    r = io.call("sandbox.create", params)
    ok(err_code(r) == -32602 and needle in r["error"]["message"],
       "sandbox.create with %s: -32602 naming %s" % (what, needle))
r = io.call("sandbox.create", {})
sid = r.get("result", {}).get("sandbox")
for method, params, what in (
        ("sandbox.diff", {"format": "patch"}, "an unknown format"),
        ("sandbox.diff", {"path": "a", "paths": ["b"]}, "path and paths"),
        ("sandbox.diff", {"paths": "a"}, "paths a string"),
        ("sandbox.diff", {"paths": [""]}, "an empty path"),
        ("sandbox.discard", {"paths": [1]}, "a path that is a number"),
        ("sandbox.discard", {"bogus": True}, "an unknown member")):
    r = io.call(method, dict(params, sandbox=sid))
    ok(err_code(r) == -32602, "%s with %s: -32602" % (method, what))
r = io.call("sandbox.discard", {"sandbox": sid})
ok(err_code(r) == -32006 and "direct workspace" in r["error"]["message"],
   "sandbox.discard of a direct sandbox: -32006 (nothing to drop)")
# io is an MCP session: applying is a human's decision, never its own
r = io.call("sandbox.apply", {"sandbox": sid})
ok(err_code(r) == -32003 and "human" in r["error"]["message"],
   "sandbox.apply on an MCP session: -32003")
# the library's message (256 bytes) cut inside a UTF-8 character: the
# error keeps its "message" (the cut byte shown as \xNN)
r = io.call("sandbox.read_file", {"sandbox": sid, "path": "a" + "\u00e9" * 300})
ok(err_code(r) == -32007 and isinstance(r["error"].get("message"), str) and
   "\\x" in r["error"]["message"], "an error message cut inside a character keeps its message")
io.call("sandbox.destroy", {"sandbox": sid})

# ---- a request id reused while the first is in flight ----
hs.send({"jsonrpc": "2.0", "id": "dup", "method": "sandbox.run", "params": {
    "argv": ["/bin/sleep", "1"]}})
time.sleep(0.2)
hs.send({"jsonrpc": "2.0", "id": "dup", "method": "ping"})
first = hs.recv()
second = hs.recv(10)
ok(err_code(first) == -32004 and second.get("result", {}).get("status") == 0,
   "an id in flight reused: -32004, and the first call still answers")

# ---- a 100 MB line on the socket: an error, the connection closed ----
big = socket.socket(socket.AF_UNIX)
big.connect(sock)
chunk = b"x" * (1 << 20)
sent = 0
closed = False
try:
    for _ in range(100):
        big.sendall(chunk)
        sent += len(chunk)
except (BrokenPipeError, ConnectionResetError):
    closed = True
data = b""
big.settimeout(10)
try:
    while b"\n" not in data:
        got = big.recv(65536)
        if not got:
            break
        data += got
except (ConnectionResetError, socket.timeout):
    pass
m = json.loads(data.split(b"\n")[0]) if b"\n" in data else {}
ok(err_code(m) == -32008, "a 100 MB line: -32008 (sent %d MiB, closed: %s)" % (sent >> 20, closed))
big.close()
r = io.call("ping")
ok("result" in r, "the server still serves other clients")

# ---- a connection the server closes is closed for its client, even when
# a sandbox was created while it was open (pid 1 must not keep a copy of
# the server's descriptors) ----
b = socket.socket(socket.AF_UNIX)
b.connect(sock)
a2 = LineClient(path=sock)
a2.call("sandbox.create")
b.settimeout(10)
try:
    b.sendall(b"y" * (17 << 20))
except OSError:
    pass
eof = False
try:
    while True:
        got = b.recv(65536)
        if not got:
            eof = True
            break
except (socket.timeout, ConnectionResetError):
    eof = not isinstance(sys.exc_info()[1], socket.timeout)
ok(eof, "the server closed a connection while a sandbox lives: its client sees EOF")
b.close()
a2.close()
ok(srv.no_sandbox_left(), "... and the sandbox ends with its connection")

# ---- a client that disconnects mid-call ----
a = LineClient(path=sock)
a.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.run",
        "params": {"argv": ["/bin/sleep", "60"]}})
a.send({"jsonrpc": "2.0", "id": 2, "method": "sandbox.create"})
a.answer(2)
end = time.time() + 10
while len(srv.children()) < 2 and time.time() < end:
    time.sleep(0.02)
ok(len(srv.children()) == 2, "two sandboxes while the client is there")
a.close()
ok(srv.no_sandbox_left(), "the client went away: its call's sandbox and its live sandbox ended")

# ---- a slow reader: never reads, the server keeps serving others ----
slow = socket.socket(socket.AF_UNIX)
slow.connect(sock)
slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
stop = threading.Event()
pings = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(2000))


def flood():
    slow.settimeout(0.5)
    while not stop.is_set():
        try:
            slow.sendall(pings)
        except socket.timeout:
            continue
        except OSError:
            return


th = threading.Thread(target=flood, daemon=True)
th.start()
time.sleep(2)
worst = 0.0
for _ in range(20):
    t0 = time.time()
    r = io.call("ping", timeout=10)
    worst = max(worst, time.time() - t0)
ok("result" in r and worst < 1.0,
   "a client that never reads its answers does not slow the others (worst ping %.1f ms)"
   % (worst * 1000))
stop.set()
slow.close()
th.join(5)

# ---- HTTP ----
tok = env.token_value()
st, _, _ = http_post(srv.port, None, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
ok(st == 401, "HTTP without a token: 401")
st, h, _ = http_post(srv.port, "wrong-token-0123456789", {"jsonrpc": "2.0", "id": 1,
                                                          "method": "ping"})
ok(st == 401 and "bearer" in h.get("www-authenticate", "").lower(), "a wrong token: 401")
st, _, _ = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
ok(st == 400, "no session: 400")
st, _, _ = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                     session="00" * 16)
ok(st == 404, "an unknown session: 404")
st, h, body = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                        "params": {"protocolVersion": "2025-06-18",
                                                   "capabilities": {}}})
sid = h.get("mcp-session-id")
ok(st == 200 and sid and len(sid) == 32, "initialize opens a session")
st, _, body = http_post(srv.port, tok, None, session=sid, raw=b'{"jsonrpc": "2.0", "id": ')
ok(st == 200 and json.loads(body)["error"]["code"] == -32700, "malformed JSON over HTTP: -32700")
st, _, _ = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=sid,
                     headers={"Origin": "https://evil.example"})
ok(st == 403, "a foreign Origin: 403")
st, _, _ = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=sid,
                     headers={"MCP-Protocol-Version": "1999-01-01"})
ok(st == 400, "an unknown MCP-Protocol-Version: 400")
st, _, _ = http_post(srv.port, tok, None, session=sid, method="GET")
ok(st == 405, "GET (no server stream): 405")
st, _, _ = http_post(srv.port, tok, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     session=sid)
ok(st == 202, "a notification: 202")
raw = socket.create_connection(("127.0.0.1", srv.port))
raw.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nAuthorization: Bearer %s\r\n\r\n" % (17 << 20, tok.encode()))
ok(raw.recv(100).startswith(b"HTTP/1.1 413"), "a body over --max-message: 413")
raw.close()
raw = socket.create_connection(("127.0.0.1", srv.port))
raw.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
            b"Authorization: Bearer " + tok.encode() + b"\r\n\r\n0\r\n\r\n")
ok(raw.recv(100).startswith(b"HTTP/1.1 411"), "a chunked body: 411")
raw.close()
raw = socket.create_connection(("127.0.0.1", srv.port))
raw.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n"
            b"\r\nhello!")
ok(raw.recv(100).startswith(b"HTTP/1.1 400"), "two Content-Lengths: 400 (request smuggling)")
raw.close()
st, _, _ = http_post(srv.port, tok, None, session=sid, method="DELETE")
ok(st == 200, "DELETE ends the session")
st, _, _ = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=sid)
ok(st == 404, "... after which it is unknown: 404")

r = io.call("ping")
ok("result" in r, "after all of it, the server answers")
ok(srv.no_sandbox_left(), "no sandbox is left")
io.close()
srv.p.stdin.close()
ok(srv.stop() == 0, "EOF on stdin: the server stops cleanly")
ok(not os.path.exists(sock), "the socket is removed")

# The socket path appears only once it is listening: bound under a
# temporary name, listening, then renamed into place, so a client that
# connects the moment it sees the path is never refused (bound, not yet
# listening: ECONNREFUSED, which the agent_loop example met under ASan).
# The window is microseconds, so the order is read from strace rather
# than raced for.
if shutil.which("strace"):
    path = os.path.join(env.top, "order.sock")
    trace = os.path.join(env.top, "order.trace")
    p = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=bind,listen,rename", "-o", trace,
                          WARDEN, "serve", "--stdio", "--socket", path, "-w", env.ws],
                         env=env.env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not os.path.exists(path) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.01)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        c.connect(path)
        connected = True
    except OSError:
        connected = False
    c.close()
    p.stdin.close()
    p.wait(timeout=60)
    calls = [ln.split(None, 1)[1] for ln in open(trace).read().splitlines() if " " in ln]
    bound = [i for i, ln in enumerate(calls) if ln.startswith("bind(") and "sun_path=" in ln]
    bpath = calls[bound[0]].split('sun_path="', 1)[1].split('"', 1)[0] if bound else ""
    listened = [i for i, ln in enumerate(calls) if ln.startswith("listen(")]
    renamed = [i for i, ln in enumerate(calls)
               if ln.startswith('rename("%s", "%s")' % (bpath, path)) and ln.endswith("= 0")]
    ok(connected, "the socket accepts a connection once its path is there")
    ok(bound and bpath != path and listened and renamed and
       bound[0] < listened[0] < renamed[0],
       "bound under a temporary name (%s), listening, then renamed onto the path" % bpath)
else:
    ok(True, "# SKIP strace is not installed: the bind/listen/rename order is not read")
ok(not [f for f in os.listdir(env.top) if f.endswith(".tmp")], "no temporary socket name left")
env.close()
done()
