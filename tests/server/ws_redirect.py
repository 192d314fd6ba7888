#!/usr/bin/env python3
"""A server's workspace cannot be redirected by another sandbox.

`warden serve -w PROJ/a/sub` keeps its workspace as a path, and every
sandbox it makes (a fresh run_command, a pooled one) names that path,
which the library resolved again.  A sandbox over PROJ (a one-shot
`warden run`, another server over the project) can rename `a` and leave
a link to any host directory in its place; followed, the server's next
command ran with that directory bound read-write as /workspace (as root).

Proves (each write landed in the linked host directory before the fix):
with the link in place, run_command (fresh, and from --pool) is refused
with an error naming the workspace, and the host directory the link
names is byte for byte as it was; put back, run_command writes the
server's own workspace again.  And the library is handed the directory
the server holds (/proc/self/fd/N), not the path it would walk again:
what it records (the audit's start and decision events) still names the
real workspace, never /proc."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok, skip  # noqa: E402

env = Env()
if os.geteuid() != 0:
    skip("the sandbox over the parent writes as the owner only as root")
env.require_sandboxes()
proj = os.path.join(env.top, "proj")
sub = os.path.join(proj, "a", "sub")
outside = os.path.join(env.top, "outside")  # a host directory no sandbox is given
for d in (sub, os.path.join(outside, "sub")):
    os.makedirs(d)
for d in (proj, os.path.join(proj, "a"), sub):
    os.chmod(d, 0o777)
with open(os.path.join(sub, "mine.txt"), "w") as f:
    f.write("the server's own\n")
with open(os.path.join(outside, "sub", "keep"), "w") as f:
    f.write("canary\n")


def outside_state():
    out = []
    for root, dirs, files in os.walk(outside):
        for n in sorted(dirs + files):
            p = os.path.join(root, n)
            st = os.lstat(p)
            out.append((p, st.st_size, st.st_mode))
    return sorted(out)


before = outside_state()


def parent_sandbox(script):
    """The model, in a one-shot sandbox over the project."""
    r = subprocess.run([WARDEN, "run", "-w", proj, "--", "/bin/sh", "-c", script],
                       capture_output=True, text=True, env=env.env, timeout=60,
                       stdin=subprocess.DEVNULL)
    return r.returncode == 0


def tool(c, command):
    r = c.call("tools/call", {"name": "run_command", "arguments": {"command": command}})
    res = r.get("result") or {}
    text = " ".join(x.get("text", "") for x in res.get("content", []))
    return res, text + str(r.get("error") or "")


def workspaces(path):
    """Every "workspace" value of the audit log's events."""
    found = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "workspace" and isinstance(v, str):
                    found.append(v)
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    with open(path) as f:
        for line in f:
            walk(json.loads(line))
    return found


def main():
    write = "python3 -c \"open('planted.txt', 'w').write(open('mine.txt').read())\""
    for args, what in (((), "fresh"), (("--pool", "1"), "pooled")):
        audit = os.path.join(env.top, "audit-%s.jsonl" % what)
        srv = Server(env, "-w", sub, "--audit", audit, *args, stdio=True, workspace=False)
        mcp = LineClient(srv)
        mcp.initialize()
        res, text = tool(mcp, "cat mine.txt")
        ok(res.get("structuredContent", {}).get("stdout") == "the server's own\n",
           "%s: run_command reads the server's workspace (%s)" % (what, text[:200]))
        named = workspaces(audit)
        ok(named and set(named) == {sub},
           "%s: the audit names the real workspace (%s)" % (what, sorted(set(named))))
        ok(parent_sandbox("mv a a.old && ln -s '%s' a" % outside) and os.path.islink(
            os.path.join(proj, "a")), "%s: a sandbox over the parent swapped a for a link" % what)
        res, text = tool(mcp, write)
        ok(res.get("isError") is True and "no longer leads to the directory" in text
           and sub in text, "%s: run_command refused, naming the workspace (%s)" % (what, text[:300]))
        ok(outside_state() == before,
           "%s: ... the host directory the link names is untouched" % what)
        os.unlink(os.path.join(proj, "a"))
        os.rename(os.path.join(proj, "a.old"), os.path.join(proj, "a"))
        res, text = tool(mcp, write)
        ok(res.get("structuredContent", {}).get("exit_code") == 0
           and os.path.exists(os.path.join(sub, "planted.txt")),
           "%s: put back, run_command writes the server's own workspace (%s)" % (what, text[:200]))
        os.unlink(os.path.join(sub, "planted.txt"))
        mcp.close()
        srv.p.stdin.close()
        ok(srv.stop() == 0, "%s: the server stops cleanly" % what)
        ok(srv.no_sandbox_left(), "%s: no sandbox is left" % what)


try:
    main()
finally:
    env.close()
done()
