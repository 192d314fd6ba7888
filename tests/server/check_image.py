#!/usr/bin/env python3
"""policy.check answers for the sandbox the command would run in: the
decision and the approval id are the run's.

Two images imported from OCI layouts made here (oci_layout.py, a few
milliseconds each): imga holds /usr/bin/probe-a, imgb /usr/bin/probe-b
(wd-probe under two names).  The server: --image imga (the default),
--allow-image imgb; the policy pauses `probe-a ids`.

  - policy.check with no sandbox and no image: the id sandbox.run (in the
    server's image) pauses with, not the host's (warden check without
    --image);
  - "image": "imgb" (offered): the id of a run in imgb, another; a live
    sandbox made in imgb with "env": "sandbox" gives the id sandbox.exec
    in it pauses with (its image and its variables), another again; so
    does a cow sandbox of a named socket session (a library session: its
    meta.json);
  - "image" not offered (imgc, stored; "../x"): -32602 naming it and
    --allow-image; "sandbox" with "image": -32602; a sandbox not of this
    connection: -32001.

Root and the container level (the only one that takes an image): elsewhere
this test skips (77), or fails under WD_MUST_WORK=1."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OCI = os.path.join(HERE, "..", "integration", "oci_layout.py")
PROBE = os.environ.get("WD_PROBE", "")

env = Env()
if os.geteuid() != 0:
    skip("images are bound at the container level, as root here")
if not os.path.exists(PROBE):
    skip("no wd-probe (WD_PROBE)")
env.require_sandboxes()
r = subprocess.run([WARDEN, "run", "--json", "-w", env.ws, "--", "/bin/true"],
                   capture_output=True, text=True, env=env.env, timeout=60)
try:
    level = json.loads(r.stdout)["protections"]["isolation"]
except (ValueError, KeyError):
    level = None
if level != "container":
    skip("sandboxes here are not at the container level (%s)" % level)
os.makedirs(env.state, mode=0o700, exist_ok=True)


def wd(*args):
    return subprocess.run([WARDEN, *args], capture_output=True, text=True, env=env.env,
                          stdin=subprocess.DEVNULL, timeout=120)


def import_image(name, prog):
    d = os.path.join(env.top, "oci-%s" % name)
    subprocess.run([sys.executable, OCI, d, "probe", PROBE, prog], check=True)
    p = wd("image", "import", name, d, "--json")
    if not ok(p.returncode == 0, "warden image import %s (%s)" % (name, p.stderr.strip())):
        done()


for n in "abc":
    import_image("img" + n, "probe-" + n)

policy = os.path.join(env.top, "policy.json")
with open(policy, "w") as f:
    json.dump({"version": 1, "programs": {"probe-a": {"approve": [["ids"]]}}}, f)

sock = os.path.join(env.top, "s.sock")
srv = Server(env, "--socket", sock, "--policy", policy, "--image", "imga", "--allow-image",
             "imgb")
h = LineClient(path=sock)


def check(params):
    r = h.call("policy.check", params)
    return r.get("result"), r.get("error")


def paused_id(res, what):
    """The approval id of a paused result of sandbox.run / sandbox.exec."""
    res = res or {}
    d = res.get("decision") or {}
    i = d.get("approval_id")
    ok(res.get("outcome") == "paused" and i, "%s: paused (%s)" % (what, res))
    return i


def same(a, b, what):
    ok(a and a == b, "%s (%s vs %s)" % (what, a, b))


CMD = {"command": "probe-a ids"}

# ---- the server's image: the run's id ----
res, err = check(CMD)
ok(res and res.get("decision") == "pause", "policy.check: a pause (%s)" % (res or err))
id_default = (res or {}).get("approval_id")
run = h.call("sandbox.run", dict(CMD, stream=False)).get("result")
same(id_default, paused_id(run, "sandbox.run in the server's image imga"),
     "policy.check gives the id sandbox.run pauses with (the server's --image)")
p = wd("check", "--policy", policy, "-w", env.ws, "--", "probe-a", "ids")
host = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("  approval:")]
ok(host and host[0] != id_default, "the host's id (warden check, no --image) is another (%s)"
   % (host or p.stderr.strip()))
p = wd("check", "--policy", policy, "-w", env.ws, "--image", "imga", "--", "probe-a", "ids")
same(id_default, ([ln.split()[1] for ln in p.stdout.splitlines()
                   if ln.startswith("  approval:")] or [None])[0],
     "warden check --image imga on the server's workspace gives it too")

# ---- "image": an offered one ----
res, err = check(dict(CMD, image="imgb"))
id_b = (res or {}).get("approval_id")
ok(id_b and id_b != id_default, "policy.check with image imgb: another id (%s)" % (res or err))

# ---- "sandbox": a live one, its image and its variables ----
r = h.call("sandbox.create", {"workspace_mode": "direct", "image": "imgb",
                              "env": {"WD_CHECK": "1"}})
sb = (r.get("result") or {}).get("sandbox")
ok(sb, "sandbox.create in imgb with env (%s)" % r)
res, err = check(dict(CMD, sandbox=sb))
id_sb = (res or {}).get("approval_id")
ex = h.call("sandbox.exec", dict(CMD, sandbox=sb, stream=False)).get("result")
same(id_sb, paused_id(ex, "sandbox.exec in it"),
     "policy.check with the sandbox gives the id sandbox.exec in it pauses with")
ok(id_sb != id_b, "... not the bare image's (the sandbox's WD_CHECK is in it)")

# ---- a library session (a cow sandbox of a named socket session): its
# image and variables from its meta.json ----
k = LineClient(path=sock)
k.call("session.open")
r = k.call("sandbox.create", {"workspace_mode": "cow", "image": "imgb",
                              "env": {"WD_CHECK": "2"}})
ks = (r.get("result") or {}).get("sandbox")
if ks:
    r = k.call("policy.check", dict(CMD, sandbox=ks))
    id_ks = (r.get("result") or {}).get("approval_id")
    ex = k.call("sandbox.exec", dict(CMD, sandbox=ks, stream=False)).get("result")
    same(id_ks, paused_id(ex, "sandbox.exec in the session's cow sandbox"),
         "policy.check with a session's sandbox gives the id its exec pauses with")
    ok(id_ks not in (id_sb, id_b), "... its own (WD_CHECK=2)")
    k.call("sandbox.destroy", {"sandbox": ks})
else:
    # a cow workspace needs overlayfs and, as root, loop devices
    print("# a cow sandbox cannot be made here (%s): the session's side not run" % r)
k.close()

# ---- bad input ----
for name in ("imgc", "../x"):
    res, err = check(dict(CMD, image=name))
    ok(res is None and err and err["code"] == -32602 and json.dumps(name) in err["message"]
       and "--allow-image" in err["message"] and "nothing was judged" in err["message"],
       "policy.check with image %s: -32602 naming it and --allow-image (%s)" % (name, err))
res, err = check(dict(CMD, image="imgb", sandbox=sb))
ok(res is None and err and err["code"] == -32602 and "'sandbox' or 'image'" in err["message"],
   "'sandbox' and 'image' together: -32602 (%s)" % err)
res, err = check(dict(CMD, sandbox="0123456789abcdef"))
ok(res is None and err and err["code"] == -32001, "a sandbox not of this connection: -32001 (%s)"
   % err)

h.call("sandbox.destroy", {"sandbox": sb})
h.close()
rc = srv.stop()
ok(rc == 0, "the server stops cleanly (%d)" % rc)
env.close()
done()
