#!/usr/bin/env python3
"""An idle live sandbox costs its server a handful of descriptors: with N
sandboxes made through sandbox.create, /proc/SERVER/fd grows by at most
FDS_PER_SANDBOX each (the pidfd, the sandbox channel, the cancellation
eventfd; it was 13 on a v1 host while the server kept the cgroup's
directories and statistics files, /dev/null and the workspace view open).
What was closed is reopened when used, and still works: a command's
statistics (peak memory, CPU time) from the cgroup by path, the file
methods through a view opened per call, which must be the directory the
sandbox was made over (a directory renamed into its place is refused).
Each new pid 1 is spared the server's memory for the sandboxes already
alive: its anonymous memory (a copy-on-write copy of the server's, as it is
cloned without CLONE_VM) grows by at most PID1_KIB_PER_SANDBOX per live
sandbox.  Each sandbox's jail plan (~30 KiB) is kept from later forks
(MADV_DONTFORK); before, the newest pid 1 held ~21 KiB more per live
sandbox, for its whole life.  Nothing is left after destroy."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from srvlib import WARDEN, Env, LineClient, Server, done, ok, proc_children  # noqa: E402

N = 24
FDS_PER_SANDBOX = 3
# 3-9 KiB measured (the server's own records of each sandbox, on its heap);
# 21-29 KiB before the plans were kept from forks
PID1_KIB_PER_SANDBOX = 14

env = Env()
env.require_sandboxes()
with open(os.path.join(env.top, "policy.json"), "w") as f:
    f.write('{"version": 1, "programs": {"true": {}, "cat": {}}}\n')
srv = Server(env, "-p", os.path.join(env.top, "policy.json"), stdio=True)
cl = LineClient(srv)


def nfds():
    return len(os.listdir("/proc/%d/fd" % srv.p.pid))


def pid1s():
    """The server's children that are a sandbox's pid 1 (warden-init)."""
    return set(proc_children(srv.p.pid, "warden-init"))


def rss_anon_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


newest_pid1 = None


def create():
    global newest_pid1
    before = pid1s()
    r = cl.call("sandbox.create", {})
    ok("result" in r, "sandbox.create%s" % ("" if "result" in r else " (%s)" % str(r)[:200]))
    new = pid1s() - before
    ok(len(new) == 1, "one new pid 1 under the server (%s)" % sorted(new))
    newest_pid1 = new.pop()
    return r["result"]["sandbox"]


def run(sb, argv):
    r = cl.call("sandbox.exec", {"sandbox": sb, "argv": argv})
    good = "result" in r and r["result"]["exit_code"] == 0
    ok(good, "sandbox.exec %s%s" % (argv, "" if good else " (%s)" % str(r)[:300]))
    return r["result"]


# the first sandbox and a command in it: the server's one-time descriptors
# (the cgroup hierarchies' discovery, the audit log) are open after it
first = create()
anon_first = rss_anon_kib(newest_pid1)
run(first, ["/bin/true"])
base = nfds()
ids = [create() for _ in range(N)]
anon_last = rss_anon_kib(newest_pid1)
# A sanitizer's allocator keeps freed blocks in quarantine rather than
# reusing them, so the server's heap (and each pid 1's copy of it) grows
# with every call there: the bound holds for the release build only.
with open(WARDEN, "rb") as f:
    sanitized = b"__asan_init" in f.read()
if sanitized:
    print("# sanitizer build: the newest pid 1's anonymous memory grew %d KiB over %d "
          "sandboxes (not checked)" % (anon_last - anon_first, N))
else:
    ok(anon_last - anon_first <= PID1_KIB_PER_SANDBOX * N,
       "the newest pid 1's anonymous memory grew %d KiB over %d more live sandboxes "
       "(%.1f KiB each, at most %d; %d KiB with one)"
       % (anon_last - anon_first, N, (anon_last - anon_first) / N, PID1_KIB_PER_SANDBOX,
          anon_first))
for sb in ids:
    run(sb, ["/bin/true"])
grew = nfds() - base
ok(grew <= FDS_PER_SANDBOX * N,
   "%d idle sandboxes hold %d of the server's descriptors (%.2f each, at most %d)"
   % (N, grew, grew / N, FDS_PER_SANDBOX))

# what the server closed is reopened when used
res = run(ids[0], ["/bin/cat", "/workspace/hello.txt"])
ok(res["stdout"]["data"] == "hello from the workspace\n", "the workspace is the sandbox's")
ok(res.get("peak_memory_bytes", 0) > 0 and res.get("cpu_ms", 0) > 0,
   "the cgroup's statistics are read after it closed them (peak %s B, cpu %s ms)"
   % (res.get("peak_memory_bytes"), res.get("cpu_ms")))
r = cl.call("sandbox.write_file", {"sandbox": ids[1], "path": "new.txt", "content": "x\n"})
ok("result" in r and open(os.path.join(env.ws, "new.txt")).read() == "x\n",
   "sandbox.write_file through a view opened for the call (%s)" % str(r)[:200])
r = cl.call("sandbox.read_file", {"sandbox": ids[1], "path": "hello.txt"})
ok("hello from the workspace" in str(r), "sandbox.read_file (%s)" % str(r)[:200])
ok(nfds() - base <= FDS_PER_SANDBOX * N, "the calls left no descriptor open")

# a directory renamed into the workspace's place is not the sandbox's:
# its file methods are refused rather than served from it
os.rename(env.ws, env.ws + ".moved")
os.mkdir(env.ws)
with open(os.path.join(env.ws, "hello.txt"), "w") as f:
    f.write("an impostor\n")
r = cl.call("sandbox.read_file", {"sandbox": ids[2], "path": "hello.txt"})
ok("error" in r and "no longer the directory" in r["error"].get("message", "")
   and "impostor" not in str(r),
   "a directory put in the workspace's place is refused (%s)" % str(r)[:200])
r = cl.call("sandbox.write_file", {"sandbox": ids[2], "path": "w.txt", "content": "y\n"})
ok("error" in r and not os.path.exists(os.path.join(env.ws, "w.txt"))
   and not os.path.exists(os.path.join(env.ws + ".moved", "w.txt")),
   "... and nothing is written to either (%s)" % str(r)[:200])
os.unlink(os.path.join(env.ws, "hello.txt"))
os.rmdir(env.ws)
os.rename(env.ws + ".moved", env.ws)

for sb in [first] + ids:
    r = cl.call("sandbox.destroy", {"sandbox": sb})
    ok("result" in r, "sandbox.destroy %s" % sb)
ok(srv.no_sandbox_left(), "no sandbox process is left after destroy")
ok(nfds() <= base, "the descriptors are closed with them (%d, %d with one sandbox)"
   % (nfds(), base))
cl.close()
srv.stop()
env.close()
done()
