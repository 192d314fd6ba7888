#!/usr/bin/env python3
"""warden serve --await-activation: a warm pod holds no tenant's state
until its owner activates it, once.

Proves:
  - bad option combinations stop the server (125) naming the option, and
    warden activate's own bad input is 125 too;
  - a warm server is ready ("ready (awaiting activation)", 200) once its
    isolation level was built, /healthz answers, every other HTTP path
    answers 503 "not activated" with or without a token, and every call on
    the owner's socket but server.activate is refused (-32011);
  - bad activations (no workspace, no token, a short token, a relative
    path, a missing directory, a workspace holding the socket, a policy
    with an error, an unknown member, a bad tenant name) are refused with
    the reason, and the server stays warm;
  - a connection that sent initialize (the model's channel) cannot
    activate, before or after the activation;
  - after activation: /readyz "ok", the token is required on HTTP, a
    run_command sees the tenant's workspace, the warm directory is gone;
    a second activation is refused, from the owner too;
  - a sandboxed command that reaches a warm server's socket (a hard link
    in its workspace) gets no answer (the peer check), and that server
    stays warm until warden activate (the CLI, with --token-file) works.
"""
import json
import os
import pwd
import re
import shutil
import tempfile
import subprocess
import sys
import time
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, http_post, ok, skip  # noqa: E402

env = Env()
env.require_sandboxes()
if os.geteuid() != 0:
    skip("the peer check's case runs servers as another user (setpriv, chown): root")
# the warm directory (TMPDIR/warden-warm.*) where the test can see it
env.env["TMPDIR"] = env.top
V = {"MCP-Protocol-Version": "2025-06-18"}
NOT_ACTIVATED = -32011
FORBIDDEN = -32003


def get(port, path, method="GET", body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    out = r.read()
    c.close()
    return r.status, out.decode()


def until(cond, timeout=120):
    """Wait for an event (a probe sandbox built under the machine's load)."""
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def warm_dirs():
    return [n for n in os.listdir(env.top) if n.startswith("warden-warm.")]


# ---- 1. option combinations (nothing starts: 125 naming the option) ----
def serve_rc(*args):
    r = subprocess.run([WARDEN, "serve", *args], capture_output=True, text=True, env=env.env,
                       timeout=60, stdin=subprocess.DEVNULL)
    return r.returncode, r.stderr


# the socket in a directory of its own: a workspace holding it is refused
os.mkdir(os.path.join(env.top, "run"))
sock = os.path.join(env.top, "run", "w.sock")
for args, word in ((["--await-activation", "--listen", "127.0.0.1:0"], "--socket"),
                   (["--await-activation", "--socket", sock, "-w", env.ws], "--workspace"),
                   (["--await-activation", "--socket", sock, "--stdio"], "--stdio"),
                   (["--await-activation", "--socket", sock, "--listen", "127.0.0.1:0",
                     "--token-file", env.token], "--token-file")):
    rc, err = serve_rc(*args)
    ok(rc == 125 and word in err and not os.path.exists(sock),
       "serve %s: 125 naming %s (%s: %s)" % (" ".join(args[2:] or args), word, rc,
                                            err.strip()[:160]))
rc, err = serve_rc("--socket", sock, "--listen", "127.0.0.1:0")
ok(rc == 125 and "--token-file" in err,
   "without --await-activation --listen still needs --token-file (%s)" % rc)
r = subprocess.run([WARDEN, "activate", "--socket", sock], capture_output=True, text=True,
                   timeout=60)
ok(r.returncode == 125 and "--workspace" in r.stderr,
   "warden activate without --workspace: 125 naming it (%s)" % r.stderr.strip())

# ---- 2. the warm server ----
srv = Server(env, "--await-activation", "--socket", sock, "--listen", "127.0.0.1:0",
             workspace=False)
ok(until(lambda: get(srv.port, "/readyz")[0] == 200),
   "a warm server becomes ready once its isolation level was built")
st, body = get(srv.port, "/readyz")
ok(st == 200 and body == "ready (awaiting activation)\n",
   "/readyz: 200 'ready (awaiting activation)' (%d %r)" % (st, body))
ok(get(srv.port, "/healthz") == (200, "ok\n"), "/healthz: 200 ok")
ok(len(warm_dirs()) == 1, "the readiness probe's workspace is an empty directory of its own "
   "(%s)" % warm_dirs())
tok = env.token_value()
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


def run_http(port, token, command):
    """run_command over a new MCP session: its structuredContent.outcome."""
    st, h, _ = http_post(port, token, INIT)
    sid = h.get("mcp-session-id")
    st, _, out = http_post(port, token, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                         "params": {"name": "run_command",
                                                    "arguments": {"command": command}}},
                           session=sid, headers=V)
    r = json.loads(out).get("result", {}) if st == 200 else {}
    run_http.text = json.dumps(r)
    return r.get("structuredContent", {}).get("outcome")


def http_not_activated(what):
    for t in (None, tok, "x" * 32):
        st, _, out = http_post(srv.port, t, INIT)
        err = json.loads(out).get("error", {}) if out else {}
        ok(st == 503 and err.get("code") == NOT_ACTIVATED and "not activated" in
           err.get("message", ""),
           "%s: POST /mcp (%s token): 503 not activated (%d %s)"
           % (what, "no" if t is None else "the" if t == tok else "another", st, out[:100]))
    st, body = get(srv.port, "/elsewhere", headers={"Authorization": "Bearer " + tok})
    ok(st == 503 and "not activated" in body, "%s: any other path: 503 (%d)" % (what, st))


http_not_activated("warm")
owner = LineClient(path=sock)
for m, p in (("tools/list", {}), ("sandbox.run", {"argv": ["/bin/true"]}),
             ("approval.list", {}), ("sandbox.create", {})):
    r = owner.call(m, p)
    ok(r.get("error", {}).get("code") == NOT_ACTIVATED,
       "warm: %s on the owner's socket refused, not activated (%s)" % (m, r.get("error")))

# ---- 3. bad activations: refused with the reason, still warm ----
bad_policy = os.path.join(env.top, "bad.yaml")
with open(bad_policy, "w") as f:
    f.write("version: 1\ncommands:\n  allow: [ls\n")
good = {"workspace": env.ws, "token": tok}
# the token as a file the server reads and watches (a Secret in the pod)
alice_tok = os.path.join(env.top, "alice-token")
fd = os.open(alice_tok, os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, tok.encode() + b"\n")
os.close(fd)
loose_tok = os.path.join(env.top, "loose-token")
with open(loose_tok, "w") as f:
    f.write(tok + "\n")
os.chmod(loose_tok, 0o644)
# a good policy, but in the workspace: a sandboxed command could rewrite it
ws_policy = os.path.join(env.ws, "policy.json")
with open(ws_policy, "w") as f:
    json.dump({"version": 1, "programs": {"cat": {}}}, f)
cases = [
    ({"token": tok}, "'workspace' is required"),
    ({"workspace": env.ws}, "'token' is required"),
    ({"workspace": env.ws, "token": "short"}, "'token': must be 16"),
    ({"workspace": "ws", "token": tok}, "'workspace': an absolute path"),
    ({"workspace": env.ws + "/missing", "token": tok}, "workspace: "),
    # the socket inside the workspace: a sandboxed command could reach it
    ({"workspace": os.path.dirname(sock), "token": tok}, "inside the workspace"),
    (dict(good, policy=bad_policy), "policy: " + bad_policy + ":"),
    (dict(good, policy="rel.yaml"), "'policy': an absolute path"),
    (dict(good, policy=ws_policy), "policy.json is in the workspace where a sandbox could"),
    (dict(good, extra=1), "unknown member 'extra'"),
    (dict(good, tenant="a/b"), "'tenant'"),
    (dict(good, token=7), "'token' must be a string"),
    (dict(good, token_file=alice_tok), "'token' and 'token_file': give one"),
    ({"workspace": env.ws, "token_file": "alice-token"}, "'token_file': an absolute path"),
    ({"workspace": env.ws, "token_file": loose_tok},
     "token_file: " + loose_tok + " is readable by others"),
]
for params, want in cases:
    r = owner.call("server.activate", params)
    e = r.get("error", {})
    ok(e.get("code") == -32602 and want in e.get("message", ""),
       "refused: %s -> %r (%s)" % (sorted(params), want, e.get("message", r)[:200]))
ok(get(srv.port, "/readyz") == (200, "ready (awaiting activation)\n") and
   len(warm_dirs()) == 1, "after every refusal the server is still warm")
http_not_activated("after the refusals")
log = srv.stderr()
ok("server.activate refused: policy: " in log and "still awaiting activation" in log,
   "the log says each refusal, as a warning")
ok(tok not in log, "the token is never in the log")

# ---- 4. the model's channel cannot activate ----
model = LineClient(path=sock)
r = model.initialize()
ok(r.get("error", {}).get("code") == NOT_ACTIVATED, "warm: initialize refused (%s)"
   % r.get("error"))
r = model.call("server.activate", good)
ok(r.get("error", {}).get("code") == FORBIDDEN and
   get(srv.port, "/readyz")[1] == "ready (awaiting activation)\n",
   "a connection that sent initialize cannot activate: -32003, still warm (%s)"
   % r.get("error", {}).get("message", "")[:120])

# ---- 5. the activation ----
r = owner.call("server.activate", {"workspace": env.ws, "token_file": alice_tok,
                                   "tenant": "alice"})
res = r.get("result", {})
ok(res.get("activated") is True and res.get("workspace") == os.path.realpath(env.ws) and
   res.get("tenant") == "alice", "the owner activates (token_file): %s" % r)
ok(until(lambda: get(srv.port, "/readyz") == (200, "ok\n")) and
   "probing again with the tenant's workspace and policy" in srv.stderr(),
   "/readyz: ok once the level was probed again with the tenant's workspace and policy (%s)"
   % [l for l in srv.stderr().splitlines() if "ready" in l or "probing" in l])
ok(warm_dirs() == [], "the warm directory is gone")
st, _, out = http_post(srv.port, None, INIT)
ok(st == 401, "HTTP now needs the token: 401 without (%d)" % st)
st, _, out = http_post(srv.port, "y" * 32, INIT)
ok(st == 401, "... 401 with another (%d)" % st)
st, h, out = http_post(srv.port, tok, INIT)
sid = h.get("mcp-session-id")
ok(st == 200 and sid, "initialize with the activation's token (%d)" % st)
st, _, out = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                       "params": {"name": "run_command",
                                                  "arguments": {"command": "cat hello.txt"}}},
                       session=sid, headers=V)
text = json.dumps(json.loads(out)) if st == 200 else out.decode(errors="replace")
ok(st == 200 and "hello from the workspace" in text,
   "run_command runs in the tenant's workspace (%s)" % text[:200])
st, _, out = http_post(srv.port, tok, {"jsonrpc": "2.0", "id": 3, "method": "server.activate",
                                       "params": good}, session=sid, headers=V)
e = json.loads(out).get("error", {}) if st == 200 else {}
ok(e.get("code") == FORBIDDEN, "an MCP session over HTTP cannot activate again (%s)" % e)
r = model.call("server.activate", good)
ok(r.get("error", {}).get("code") == FORBIDDEN, "nor the socket's MCP connection")
r = owner.call("server.activate", dict(good, workspace=env.top + "/other"))
ok(r.get("error", {}).get("code") == FORBIDDEN and
   "already activated" in r["error"]["message"],
   "a second activation is refused, from the owner too (%s)" % r.get("error"))
ok(run_http(srv.port, tok, "ls") == "ran", "the built-in policy runs ls")
r = owner.call("sandbox.list", {})
ok("result" in r, "the owner's calls are served now")

# the activation's token file is watched as --token-file is: a rotation
# (a Secret's update: a new file renamed over the name) is in force at
# once; one that fails the checks refuses everything until a good one
tok_new = os.urandom(24).hex()
fd = os.open(alice_tok + ".new", os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, tok_new.encode() + b"\n")
os.close(fd)
os.rename(alice_tok + ".new", alice_tok)
ok(until(lambda: http_post(srv.port, tok_new, INIT)[0] == 200, timeout=60) and
   http_post(srv.port, tok, INIT)[0] == 401,
   "the token file rotated: the new token is in force, the old one refused (401)")
os.chmod(alice_tok, 0o644)
ok(until(lambda: http_post(srv.port, tok_new, INIT)[0] == 401, timeout=60) and
   get(srv.port, "/readyz")[0] == 503 and "token" in get(srv.port, "/readyz")[1],
   "... turned readable by others: every request refused, /readyz says why (%r)"
   % get(srv.port, "/readyz")[1])
os.chmod(alice_tok, 0o600)
ok(until(lambda: http_post(srv.port, tok_new, INIT)[0] == 200, timeout=60) and
   get(srv.port, "/readyz") == (200, "ok\n"), "... and good again: served, ready")
tok = tok_new

# a tenant whose policy needs an image this pod does not hold: activated,
# and unready with the reason (its every run_command would fail)
sock5 = os.path.join(env.top, "run", "w5.sock")
srv5 = Server(env, "--await-activation", "--socket", sock5, "--listen", "127.0.0.1:0",
              workspace=False)
ok(until(lambda: get(srv5.port, "/readyz")[0] == 200), "another warm server is ready")
img_pol = os.path.join(env.top, "image-policy.json")
with open(img_pol, "w") as f:
    json.dump({"version": 1, "programs": {"cat": {}},
               "tools": {"run_command": {"class": "sandbox", "image": "nosuchimage"}}}, f)
o5 = LineClient(path=sock5)
r = o5.call("server.activate", {"workspace": env.ws, "token": tok, "policy": img_pol})
ok(r.get("result", {}).get("activated") is True, "activated with it: %s" % r)
ok(until(lambda: get(srv5.port, "/readyz")[0] == 503 and
         "nosuchimage" in get(srv5.port, "/readyz")[1]),
   "/readyz: 503 naming the missing image (%r)" % get(srv5.port, "/readyz")[1])
o5.close()
ok(srv5.stop() == 0, "... and it stops cleanly")

# ---- 6. a sandboxed command cannot activate a warm server ----
# Servers of an unprivileged user (nobody): a warm one, and one at the
# process level whose commands run as nobody too, on the whole host.
# SO_PEERCRED says "the owner", and only the peer check (the process is
# a sandbox's) stands between the command and the activation.
nobody = pwd.getpwnam("nobody")
AS_NOBODY = ["setpriv", "--reuid=%d" % nobody.pw_uid, "--regid=%d" % nobody.pw_gid,
             "--clear-groups"]
utop = os.path.join(env.top, "u")
os.makedirs(os.path.join(utop, "ws"))
# the process level's state directory outside /tmp, which its commands
# write as the same uid (approval_store.py)
ustate = tempfile.mkdtemp(prefix="wd-act.", dir="/var/tmp")
CLIENT = r'''
import json, os, socket, sys
print("uid", os.getuid(), end=" ")
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": sys.argv[2],
                           "params": json.loads(sys.argv[3])}) + "\n").encode())
    s.settimeout(60)
    print(s.recv(1 << 20).decode().strip() or "EOF")
except OSError as e:
    print("EOF " + str(e))
'''
for d in (utop, os.path.join(utop, "ws")):
    with open(os.path.join(d, "client.py"), "w") as f:
        f.write(CLIENT)
subprocess.run(["chown", "-R", "%d:%d" % (nobody.pw_uid, nobody.pw_gid), utop, ustate],
               check=True)


class UEnv:
    top = utop
    ws = os.path.join(utop, "ws")
    env = dict(os.environ, HOME=utop, TMPDIR=utop, WARDEN_STATE_DIR=os.path.join(ustate, "a"))


class UEnv3(UEnv):
    env = dict(UEnv.env, WARDEN_STATE_DIR=os.path.join(ustate, "b"))


sock2 = os.path.join(utop, "w2.sock")
sock3 = os.path.join(utop, "p.sock")
srv2 = Server(UEnv, "--await-activation", "--socket", sock2, "--listen", "127.0.0.1:0",
              "--best-effort", workspace=False, prefix=AS_NOBODY)
srv3 = Server(UEnv3, "--isolation", "process", "--best-effort", "--socket", sock3,
              prefix=AS_NOBODY)
ok(until(lambda: get(srv2.port, "/readyz")[0] == 200),
   "an unprivileged warm server is ready (%s)" % get(srv2.port, "/readyz")[1].strip())
evil = {"workspace": "/", "token": "z" * 32}
run = {"argv": ["python3", "client.py", sock2, "server.activate", json.dumps(evil)],
       "stream": False}
r = subprocess.run(AS_NOBODY + ["python3", os.path.join(utop, "client.py"), sock3,
                                "sandbox.run", json.dumps(run)],
                   capture_output=True, text=True, timeout=120, env=UEnv.env)
ans = r.stdout.split(" ", 2)[2] if r.stdout.count(" ") >= 2 else r.stdout
try:
    out = json.loads(ans)["result"]["stdout"]["data"]
except (ValueError, KeyError, TypeError):
    out = r.stdout + r.stderr
ok(out.startswith("uid %d EOF" % nobody.pw_uid),
   "a sandboxed command running as the warm server's owner gets no answer on its socket "
   "(%s)" % out.strip()[:160])
ok(get(srv2.port, "/readyz")[1] == "ready (awaiting activation)\n",
   "... and that server is still warm")
log2 = srv2.stderr()
ok("refused uid %d: " % nobody.pw_uid in log2 and "sandboxed command" in log2,
   "... refused by the peer check, which says why (%s)"
   % [ln for ln in log2.splitlines() if "refused" in ln][:1])
ok(srv3.stop() == 0, "the process-level server stops cleanly")
# warden activate as another user than the server's: no answer
r = subprocess.run([WARDEN, "activate", "--socket", sock2, "-w", UEnv.ws],
                   capture_output=True, text=True, timeout=60)
ok(r.returncode == 125 and "no answer" in r.stderr,
   "warden activate by another user (root): 125, no answer (%s %s %s)" % (r.returncode, r.stdout.strip(), r.stderr.strip()))
ok(srv2.stop() == 0, "a server stopped while warm stops cleanly")

# ---- 7. warden activate ----
sock4 = os.path.join(env.top, "run", "w4.sock")
# --pool 1: the pool is the tenant's, built at the activation (a pooled
# sandbox holds the workspace it was built with: never the warm directory)
srv4 = Server(env, "--await-activation", "--socket", sock4, "--listen", "127.0.0.1:0",
              "--pool", "1", workspace=False)
ok(until(lambda: get(srv4.port, "/readyz")[0] == 200), "a third warm server is ready")
tok2 = os.path.join(env.top, "token2")
fd = os.open(tok2, os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, os.urandom(24).hex().encode() + b"\n")
os.close(fd)
os.chmod(tok2, 0o644)
r = subprocess.run([WARDEN, "activate", "--socket", sock4, "-w", env.ws, "--token-file", tok2],
                   capture_output=True, text=True, timeout=60)
ok(r.returncode == 125 and "--token-file" in r.stderr and "0644" in r.stderr,
   "warden activate --token-file others can read: 125 naming it (%s)" % r.stderr.strip())
os.chmod(tok2, 0o600)
r = subprocess.run([WARDEN, "activate", "--socket", sock4, "-w", env.ws, "--token-file", "-"],
                   input="short\n", capture_output=True, text=True, timeout=60)
ok(r.returncode == 125 and "'token': must be 16" in r.stderr and
   get(srv4.port, "/readyz")[1] == "ready (awaiting activation)\n",
   "warden activate with a short token: 125 with the server's reason, still warm (%s)"
   % r.stderr.strip())
with open(tok2) as f:
    t2 = f.read().strip()
# the token on standard input, as `kubectl exec -i POD -- warden activate ... < FILE`
# the tenant's policy: cat only
pol = os.path.join(env.top, "cat-only.json")
with open(pol, "w") as f:
    json.dump({"version": 1, "programs": {"cat": {}}}, f)
r = subprocess.run([WARDEN, "activate", "--socket", sock4, "-w", os.path.relpath(env.ws),
                    "-p", os.path.relpath(pol), "--token-file", "-", "--tenant", "bob"],
                   input=t2 + "\n",
                   capture_output=True, text=True, timeout=60)
ok(r.returncode == 0 and "activated: workspace " + os.path.realpath(env.ws) in r.stdout,
   "warden activate (a relative --workspace, --token-file -): 0 (%s %s)"
   % (r.stdout.strip(), r.stderr.strip()))
st, _, _ = http_post(srv4.port, t2, INIT)
ok(st == 200, "the token from standard input is the server's (%d)" % st)
ok(run_http(srv4.port, t2, "cat hello.txt") == "ran" and
   "hello from the workspace" in run_http.text and run_http(srv4.port, t2, "ls") != "ran",
   "the activation's policy is in force: cat runs, ls does not (%s)"
   % run_http(srv4.port, t2, "ls"))
st, _, _ = http_post(srv4.port, tok, INIT)
ok(st == 401, "the other server's token is not (%d)" % st)
r = subprocess.run([WARDEN, "activate", "--socket", sock4, "-w", env.ws, "--token-file", tok2],
                   capture_output=True, text=True, timeout=60)
ok(r.returncode == 125 and "already activated" in r.stderr,
   "warden activate again: 125, already activated (%s)" % r.stderr.strip())

for c in (owner, model):
    c.close()
ok(srv.stop() == 0 and srv4.stop() == 0, "the servers stop cleanly")
pooled = re.search(r"calls pooled (\d+)", srv4.stderr())
ok(pooled and int(pooled.group(1)) >= 1,
   "--pool: the activated server's runs came from its pool (%s), the tenant's workspace in "
   "them (cat hello.txt ran)" % (pooled.group(0) if pooled else srv4.stderr()[-200:]))
shutil.rmtree(ustate, ignore_errors=True)
ok(warm_dirs() == [], "no warm directory left")
env.close()
done()
