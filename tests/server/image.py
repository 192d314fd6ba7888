#!/usr/bin/env python3
"""Images in `warden serve`: --image, --allow-image, the per-sandbox
"image" of sandbox.create / sandbox_create, tools.NAME.image, the pool.

Three images imported from OCI layouts made here (oci_layout.py, a few
milliseconds each): imga holds /usr/bin/probe-a, imgb /usr/bin/probe-b,
imgc /usr/bin/probe-c (wd-probe under three names; a program only that
image holds).

  - start-up refusals, 125 naming the option: --image of an image not
    stored, --allow-image ../x, --image at the process level; a policy
    whose tools.NAME.image is not a name, or sits on a direct tool:
    FILE:LINE:COLUMN, 125;
  - sandbox.create without "image" runs in the default (imga: probe-a
    runs, probe-b is absent) and reports its name and digest (the
    store's); with "image": "imgb" (allowed) probe-b runs and probe-a
    does not; "imgc" (stored, not allowed) and "../x" are -32602 naming
    the image and --allow-image, and nothing is created (no sandbox
    process, none listed); sandbox.list and MCP sandbox_list report the
    images; MCP sandbox_create takes "image" too, and refuses imgc as a
    tool error;
  - the pool (--pool 1) holds imga's instances: run_command takes one
    (pooled, probe-a there, probe-b absent); sandbox.run with a tool whose
    image is imgb runs fresh (pooled false) in imgb: probe-b runs, probe-a
    is absent (never an imga instance);
  - that tool in a live imga sandbox is refused (it runs in imgb), nothing
    run; warden run --tool tb runs in imgb, and with --image imga is
    refused (125) naming both;
  - imga imported again (another digest): a live sandbox made before keeps
    the old tree (its digest was resolved at create); run_command no longer
    takes the pool's old-digest instances (fresh, the new tree), a new
    sandbox reports the new digest;
  - warden image rm imgb is refused while a server's sandbox uses it, and
    works once that sandbox is destroyed.

Root and the container level (the only one that takes an image): elsewhere
this test skips (77), or fails under WD_MUST_WORK=1."""
import json
import os
import subprocess
import sys
import time

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


def import_image(name, prog, tag=""):
    d = os.path.join(env.top, "oci-%s%s" % (name, tag))
    subprocess.run([sys.executable, OCI, d, "probe", PROBE, prog], check=True)
    p = wd("image", "import", name, d, "--json")
    if not ok(p.returncode == 0, "warden image import %s (%s)" % (name, p.stderr.strip())):
        done()
    return "sha256:" + json.loads(p.stdout)["digest"]


dig = {n: import_image("img" + n, "probe-" + n) for n in "abc"}

policy = os.path.join(env.top, "policy.json")
with open(policy, "w") as f:
    json.dump({"version": 1,
               "programs": {"probe-a": {"paths": "none"}, "probe-b": {"paths": "none"},
                            "probe-c": {"paths": "none"}, "probe-a2": {"paths": "none"}},
               "tools": {"tb": {"class": "sandbox", "image": "imgb"}}}, f)


def refused(args, want, what):
    p = subprocess.run([WARDEN, "serve", "-w", env.ws, "--stdio", *args], capture_output=True,
                       text=True, env=env.env, stdin=subprocess.DEVNULL, timeout=60)
    ok(p.returncode == 125 and want in p.stderr,
       "%s: 125, naming it (%d: %s)" % (what, p.returncode, p.stderr.strip()))


# ---- start-up refusals ----
refused(["--image", "nosuch"], "--image: no image 'nosuch'", "--image of an image not stored")
refused(["--image", "imga", "--allow-image", "../x"], "--allow-image: image name ../x is not",
        "--allow-image ../x")
refused(["--image", "imga", "--isolation", "process"], "--image: an image needs --isolation "
        "container", "--image at the process level")
badpol = os.path.join(env.top, "bad.json")
with open(badpol, "w") as f:
    f.write('{"version": 1,\n "tools": {"t": {"class": "sandbox",\n   "image": "../x"}}}\n')
refused(["--policy", badpol], badpol + ":3:13: tools.t.image: expected an image name",
        "tools.t.image ../x in a policy")
with open(badpol, "w") as f:
    f.write('{"version": 1,\n "tools": {"t": {"class": "direct", "image": "imga"}}}\n')
refused(["--policy", badpol], badpol + ":2:", "an image on a direct tool")
p = wd("check", "--policy", badpol, "--", "true")
ok(p.returncode == 125 and "tools.t.image: only a sandbox tool runs in an image" in p.stderr,
   "warden check says so too (%d: %s)" % (p.returncode, p.stderr.strip()))

# ---- a server: default imga, imgb allowed, a pool of imga ----
sock = os.path.join(env.top, "s.sock")
# the server's own limits: a tool's profile then changes none of them, so
# only the image keeps tool tb's commands out of the pool (pool.c)
srv = Server(env, "--socket", sock, "--policy", policy, "--image", "imga", "--allow-image",
             "imgb", "--pool", "1", "--memory", "256M", "--cpus", "1", "--pids", "128",
             "--tmp-size", "64M")
h = LineClient(path=sock)


def create(params):
    r = h.call("sandbox.create", params)
    return r.get("result"), r.get("error")


def exec_in(sb, command, tool=None):
    p = {"sandbox": sb, "command": command, "stream": False}
    if tool:
        p["tool"] = tool
    r = h.call("sandbox.exec", p)
    return r.get("result") or {"error": r.get("error")}


res, err = create({"workspace_mode": "direct"})
ok(res and res.get("image") == "imga" and res.get("image_digest") == dig["a"],
   "sandbox.create without image: the default, with the store's digest (%s)" % (res or err))
sa = res["sandbox"]
r = exec_in(sa, "probe-a absent /usr/bin/probe-b")
ok(r.get("exit_code") == 0, "probe-a runs in it, probe-b is absent (%s)" % r)

res, err = create({"workspace_mode": "direct", "image": "imgb"})
ok(res and res.get("image") == "imgb" and res.get("image_digest") == dig["b"],
   "sandbox.create with the allowed imgb (%s)" % (res or err))
sb = res["sandbox"]
r = exec_in(sb, "probe-b absent /usr/bin/probe-a")
ok(r.get("exit_code") == 0, "probe-b, only imgb holds, runs in it (%s)" % r)
r = exec_in(sb, "probe-a ids")
ok(r.get("exit_code") != 0, "probe-a does not run there (%s)" % r.get("exit_code"))

before = len(srv.children())
for name in ("imgc", "../x"):
    res, err = create({"workspace_mode": "direct", "image": name})
    ok(res is None and err and err["code"] == -32602 and json.dumps(name) in err["message"]
       and "--allow-image" in err["message"],
       "sandbox.create with image %s: -32602 naming it and --allow-image (%s)" % (name, err))
ok(len(srv.children()) == before, "nothing was created for them")
lst = h.call("sandbox.list", {})["result"]
ok(sorted(lst["sandboxes"]) == sorted([sa, sb]), "sandbox.list: the two sandboxes only")
imgs = {d["sandbox"]: (d["image"], d["image_digest"]) for d in lst["details"]}
ok(imgs.get(sa) == ("imga", dig["a"]) and imgs.get(sb) == ("imgb", dig["b"]),
   "sandbox.list's details name each one's image and digest (%s)" % imgs)

# ---- the pool and a tool's image ----
m = LineClient(path=sock)
m.initialize()


def tool(name, args):
    r = m.call("tools/call", {"name": name, "arguments": args})
    return r.get("result") or {"error": r.get("error")}


r = tool("run_command", {"command": "probe-a absent /usr/bin/probe-b"})
sc = r.get("structuredContent", {})
ok(sc.get("exit_code") == 0 and sc.get("pooled") is True,
   "run_command takes the pool's imga instance: probe-a there, probe-b absent (%s)" % sc)
r = h.call("sandbox.run", {"command": "probe-b absent /usr/bin/probe-a", "tool": "tb",
                           "stream": False}).get("result", {})
ok(r.get("exit_code") == 0 and r.get("pooled") is False,
   "sandbox.run with tool tb (image imgb): fresh, probe-b runs, probe-a absent (%s)" % r)
r = h.call("sandbox.run", {"command": "probe-a ids", "tool": "tb",
                           "stream": False}).get("result", {})
ok(r.get("exit_code") != 0 and r.get("pooled") is False,
   "probe-a through tool tb does not run: never an imga instance (%s)" % r.get("exit_code"))
r = exec_in(sa, "probe-a ids", tool="tb")
e = r.get("error") or {}
ok("tool 'tb' runs in image imgb" in e.get("message", ""),
   "tool tb in a live imga sandbox: refused, it runs in imgb (%s)" % e)

# the library's side of a tool's image, through warden run
p = wd("run", "-w", env.ws, "--policy", policy, "--tool", "tb", "--", "probe-b", "absent",
       "/usr/bin/probe-a")
ok(p.returncode == 0, "warden run --tool tb runs in the tool's image imgb (%d: %s)"
   % (p.returncode, p.stderr.strip()))
p = wd("run", "-w", env.ws, "--policy", policy, "--image", "imga", "--tool", "tb", "--",
       "probe-a", "ids")
ok(p.returncode == 125 and "tool 'tb' runs in image imgb (the policy's tools.tb.image), not "
   "in imga" in p.stderr, "warden run --image imga --tool tb: 125, naming both, nothing ran "
   "(%d: %s)" % (p.returncode, p.stderr.strip()))
tl = m.call("tools/list", {})["result"]["tools"]
desc = [t for t in tl if t["name"] == "sandbox_create"][0]["inputSchema"]["properties"]["image"]
ok('Offered here: ["imga","imgb"] (the first is the default)' in desc["description"],
   "tools/list: sandbox_create's image names the images offered (%s)" % desc["description"])
r = tool("sandbox_create", {"workspace_mode": "direct", "image": "imgb"})
sc = r.get("structuredContent", {})
ok(not r.get("isError") and sc.get("image") == "imgb" and "image imgb" in
   r["content"][0]["text"], "MCP sandbox_create with image imgb (%s)" % r)
r = tool("sandbox_create", {"workspace_mode": "direct", "image": "imgc"})
ok(r.get("isError") and "--allow-image" in r["content"][0]["text"],
   "MCP sandbox_create with imgc: a tool error naming --allow-image (%s)" % r)
r = tool("sandbox_list", {})
ims = [s.get("image") for s in r.get("structuredContent", {}).get("sandboxes", [])]
ok(ims == ["imgb"], "MCP sandbox_list reports the image (%s)" % ims)

# ---- the name pointed elsewhere: live sandboxes keep their digest ----
new_a = import_image("imga", "probe-a2", tag=".2")
ok(new_a != dig["a"], "imga imported again: another digest")
r = exec_in(sa, "probe-a absent /usr/bin/probe-a2")
ok(r.get("exit_code") == 0, "the live sandbox made before still runs the old imga (%s)" % r)
r = tool("run_command", {"command": "probe-a2 absent /usr/bin/probe-a"})
sc = r.get("structuredContent", {})
ok(sc.get("exit_code") == 0 and sc.get("pooled") is False,
   "run_command runs in the new imga, fresh: not the pool's old-digest instance (%s)" % sc)
res, err = create({"workspace_mode": "direct"})
ok(res and res.get("image_digest") == new_a, "a new sandbox reports the new digest")

# ---- rm while a server's sandbox uses the image ----
p = wd("image", "rm", "imgb")
ok(p.returncode == 125 and "in use" in p.stderr,
   "warden image rm imgb while a server's sandbox runs in it: refused (%d: %s)"
   % (p.returncode, p.stderr.strip()))
h.call("sandbox.destroy", {"sandbox": sb})
m.close()  # its sandbox_create's sandbox ends with the connection
ended = False
for _ in range(200):
    p = wd("image", "rm", "imgb")
    if p.returncode == 0:
        ended = True
        break
    time.sleep(0.05)
ok(ended, "and removed once no sandbox uses it (%s)" % p.stderr.strip())

h.close()
rc = srv.stop()
ok(rc == 0, "the server stops cleanly (%d)" % rc)
env.close()
done()
