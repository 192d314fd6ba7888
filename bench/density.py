#!/usr/bin/env python3
"""density: how cost grows with the number of live sandboxes in one server.

  bench/density.py WARDEN [--sizes 100,1000,5000] [--runs 3] [--sample 40]
                   [--churn K]

Through `warden serve --stdio` (a harness's JSON-RPC: sandbox.create,
sandbox.exec with an argv, sandbox.destroy), each run creates live
sandboxes up to each size in turn and, at each size, measures

  create      the last --sample sandbox.create calls before reaching it
  exec        --sample sandbox.exec of /bin/true into live sandboxes
              picked at random among those alive
  memory      the server's PSS plus the PSS of every process under it (the
              sandboxes' pid 1s and their commands), from smaps_rollup,
              minus the same with one sandbox: KiB per sandbox; and the
              drop of the host's MemAvailable (kernel memory too: the
              namespaces, mount tables, cgroups; noisier on a shared host)
  page tables the VmPTE of the server and every process under it, minus
              the same with one sandbox: KiB per sandbox (kernel memory
              PSS does not show: a pid 1 cloned from a big server copies
              its page tables)
  fds         /proc/SERVER/fd, minus the count with one sandbox

then, with --churn K, at the largest size K times destroys a random
sandbox, creates one in its place and runs /bin/true in a random one (a
server's life: pid 1s that were copies of it keep stale copies of the
pages it writes afterwards) and measures memory again; then destroys them
all and checks nothing is left (no process under the
server).  Prints medians and 90th percentiles per size, the spread over the
runs, and summary lines for bench/summary.py:

  density_create_ratio_1000   create at 1,000 / at 100 (median of runs)
  density_exec_ratio_1000     exec at 1,000 / at 100
  density_kib_per_sandbox     PSS per sandbox at the largest size
  density_fds_per_sandbox     descriptors per sandbox at the largest size
  density_pte_kib_per_sandbox page tables per sandbox at the largest size
  (and _5000 for the ratios when that size ran)

Where this process may (CAP_SYS_RESOURCE), it raises RLIMIT_NOFILE, soft
and hard, to what the largest size needs, as a service manager would
(LimitNOFILE=), and the server inherits it; a size the limit cannot hold
(3 descriptors a sandbox, the server's own estimate, and its reserve for
--max-calls 4) is skipped with a message.  Exits 1 if a call failed or a
sandbox outlived its destroy.
"""
import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

FDS_PER_SANDBOX_BUDGET = 3  # must agree with SRV_FDS_PER_SANDBOX
MAX_CALLS = 4  # one call at a time: a smaller reserve (40 per call)


class Server:
    def __init__(self, warden, top, max_live, nofile):
        ws = os.path.join(top, "ws")
        os.makedirs(ws, exist_ok=True)
        pol = os.path.join(top, "policy.json")
        with open(pol, "w") as f:
            f.write('{"version": 1, "programs": {"true": {}}}\n')
        env = dict(os.environ, WARDEN_STATE_DIR=os.path.join(top, "state"))

        def limits():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.err = open(os.path.join(top, "serve.err"), "w+")
        self.p = subprocess.Popen(
            [warden, "serve", "--stdio", "-v", "-w", ws, "-p", pol, "--max-sandboxes",
             str(max_live), "--max-calls", str(MAX_CALLS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, env=env,
            preexec_fn=limits, bufsize=0)
        self.rd = self.p.stdout
        self.buf = b""
        self.id = 0

    def call(self, method, params):
        self.id += 1
        msg = {"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl], self.buf[nl + 1:]
                m = json.loads(line)
                if m.get("id") == self.id:
                    return m
                continue
            chunk = os.read(self.rd.fileno(), 1 << 16)
            if not chunk:
                self.err.seek(0)
                sys.exit("density: the server went away:\n" + self.err.read()[-2000:])
            self.buf += chunk

    def stop(self):
        self.p.stdin.close()
        self.p.wait()
        self.err.seek(0)
        return self.err.read()


def descendants(pid):
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out


def pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pte_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmPTE:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def mem_available_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def snapshot(srv):
    pid = srv.p.pid
    kids = descendants(pid)
    return {
        "pss": pss_kib(pid) + sum(pss_kib(k) for k in kids),
        "pte": pte_kib(pid) + sum(pte_kib(k) for k in kids),
        "procs": len(kids),
        "fds": len(os.listdir("/proc/%d/fd" % pid)),
        "avail": mem_available_kib(),
    }


def pct(v, p):
    v = sorted(v)
    return v[int((len(v) - 1) * p)]


def one_run(args, sizes, nofile, failures):
    top = tempfile.mkdtemp(prefix="wd-density.")
    os.chmod(top, 0o755)
    try:
        srv = Server(args.warden, top, sizes[-1] + 1, nofile)
    except BaseException:
        shutil.rmtree(top, ignore_errors=True)
        raise
    out = {}
    try:
        ids = []

        def create():
            t0 = time.perf_counter()
            m = srv.call("sandbox.create", {})
            dt = time.perf_counter() - t0
            if "result" not in m:
                failures.append(m)
                return None
            ids.append(m["result"]["sandbox"])
            return dt

        create()
        time.sleep(0.3)
        base = snapshot(srv)
        # the library's own helpers (the cgroup keeper) started with the
        # first sandbox and stay: not a sandbox's
        helpers = set(descendants(srv.p.pid))
        for n in sizes:
            ct = []
            while len(ids) < n:
                dt = create()
                if dt is None:
                    sys.exit("density: sandbox.create failed at %d: %s" % (len(ids), failures[-1]))
                if len(ids) > n - args.sample:
                    ct.append(dt)
            et = []
            for _ in range(args.sample):
                sb = random.choice(ids)
                t0 = time.perf_counter()
                m = srv.call("sandbox.exec", {"sandbox": sb, "argv": ["/bin/true"]})
                et.append(time.perf_counter() - t0)
                if m.get("result", {}).get("status") != 0:
                    failures.append(m)
            time.sleep(0.3)
            s = snapshot(srv)
            k = len(ids) - 1
            out[n] = {
                "create": ct, "exec": et,
                "kib": (s["pss"] - base["pss"]) / k,
                "avail_kib": (base["avail"] - s["avail"]) / k,
                "pte_kib": (s["pte"] - base["pte"]) / k,
                "fds": (s["fds"] - base["fds"]) / k,
                "procs": s["procs"],
            }
        if args.churn:
            for _ in range(args.churn):
                k = random.randrange(1, len(ids))
                m = srv.call("sandbox.destroy", {"sandbox": ids.pop(k)})
                if "result" not in m:
                    failures.append(m)
                if create() is None:
                    sys.exit("density: sandbox.create failed in the churn: %s" % failures[-1])
                m = srv.call("sandbox.exec", {"sandbox": random.choice(ids), "argv": ["/bin/true"]})
                if m.get("result", {}).get("status") != 0:
                    failures.append(m)
            time.sleep(0.3)
            s = snapshot(srv)
            k = len(ids) - 1
            out["churn"] = {"kib": (s["pss"] - base["pss"]) / k,
                            "pte_kib": (s["pte"] - base["pte"]) / k}
        dt = []
        for sb in ids:
            t0 = time.perf_counter()
            m = srv.call("sandbox.destroy", {"sandbox": sb})
            dt.append(time.perf_counter() - t0)
            if "result" not in m:
                failures.append(m)
        time.sleep(0.3)
        left = set(descendants(srv.p.pid))
        # every process of a sandbox is new since the first one's pid 1,
        # which is itself one of the helpers' set: at most that many stay
        left = [p for p in left if p not in helpers] + (
            [0] if len(left & helpers) > len(helpers) - 1 else [])
        out["destroy"] = dt
        out["left"] = len(left)
        if left:
            failures.append("%d process(es) left under the server after destroy" % len(left))
    finally:
        log = srv.stop()
        shutil.rmtree(top, ignore_errors=True)
    out["log"] = [l for l in log.splitlines() if "RLIMIT_NOFILE" in l]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("warden")
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sample", type=int, default=40)
    ap.add_argument("--churn", type=int, default=0)
    args = ap.parse_args()
    sizes = sorted(int(x) for x in args.sizes.split(","))
    # What the server can hold: root raises the limit for it (a service
    # manager's LimitNOFILE=) up to fs.nr_open; others have their own.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = lambda n: (n + 1) * FDS_PER_SANDBOX_BUDGET + 256 + 40 * MAX_CALLS + 64
    have = hard
    if need(sizes[-1]) > hard:
        with open("/proc/sys/fs/nr_open") as f:
            want = min(int(f.read()), need(sizes[-1]))
        try:  # CAP_SYS_RESOURCE: the server inherits it
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            have = want
        except (ValueError, OSError) as e:
            print("density: the hard RLIMIT_NOFILE stays %d (raising it to %d: %s)"
                  % (hard, want, e))
    nofile = None
    keep = [n for n in sizes if need(n) <= have]
    for n in sizes:
        if n not in keep:
            print("density: %d sandboxes skipped: they need about %d descriptors in the "
                  "server, RLIMIT_NOFILE allows %d" % (n, need(n), have))
    if not keep:
        return 1
    sizes = keep
    print("# density: %d run(s), sizes %s, %d creates and execs sampled at each, load %s" %
          (args.runs, ",".join(map(str, sizes)), args.sample,
           open("/proc/loadavg").read().split()[:3]))
    failures, runs = [], []
    for r in range(args.runs):
        runs.append(one_run(args, sizes, nofile, failures))
    for line in runs[0]["log"]:
        print("# server: " + line.strip())
    ms = lambda v: 1000 * statistics.median(v)

    def spread(f):
        v = [f(run) for run in runs]
        return "%.3g (%.3g-%.3g)" % (statistics.median(v), min(v), max(v))

    print("%-6s %-26s %-26s %-20s %-20s %-20s %s" % (
        "N", "create ms median (range)", "exec ms median (range)", "KiB PSS/sandbox",
        "page tables KiB/sb", "MemAvailable KiB/sb", "fds/sandbox"))
    for i, run in enumerate(runs):  # each run's own figures, for a table across invocations
        for n in sizes:
            print("# run %d: %d sandboxes: create %.2f ms, exec %.2f ms (medians), %.0f KiB PSS, "
                  "%.1f KiB page tables, %.0f KiB MemAvailable, %.2f fds each" % (
                      i + 1, n, ms(run[n]["create"]), ms(run[n]["exec"]), run[n]["kib"],
                      run[n]["pte_kib"], run[n]["avail_kib"], run[n]["fds"]))
    for n in sizes:
        print("%-6d %-26s %-26s %-20s %-20s %-20s %s" % (
            n, spread(lambda r: ms(r[n]["create"])), spread(lambda r: ms(r[n]["exec"])),
            spread(lambda r: r[n]["kib"]), spread(lambda r: r[n]["pte_kib"]),
            spread(lambda r: r[n]["avail_kib"]), spread(lambda r: r[n]["fds"])))
    if args.churn:
        print("after %d destroy+create+exec at %d: %s KiB PSS, %s KiB page tables per sandbox" % (
            args.churn, sizes[-1], spread(lambda r: r["churn"]["kib"]),
            spread(lambda r: r["churn"]["pte_kib"])))
    print("p90 at %d: create %.2f ms, exec %.2f ms; destroy median %.2f ms; left after: %s" % (
        sizes[-1], 1000 * pct(runs[0][sizes[-1]]["create"], .9),
        1000 * pct(runs[0][sizes[-1]]["exec"], .9), ms(runs[0]["destroy"]),
        ",".join(str(r["left"]) for r in runs)))
    med = lambda f: statistics.median(f(r) for r in runs)
    for n in sizes:
        if n > sizes[0]:
            print("summary\tdensity_create_ratio_%d\t%.3f" % (
                n, med(lambda r: ms(r[n]["create"]) / ms(r[sizes[0]]["create"]))))
            print("summary\tdensity_exec_ratio_%d\t%.3f" % (
                n, med(lambda r: ms(r[n]["exec"]) / ms(r[sizes[0]]["exec"]))))
    print("summary\tdensity_kib_per_sandbox\t%.1f" % med(lambda r: r[sizes[-1]]["kib"]))
    print("summary\tdensity_fds_per_sandbox\t%.2f" % med(lambda r: r[sizes[-1]]["fds"]))
    print("summary\tdensity_pte_kib_per_sandbox\t%.1f" % med(lambda r: r[sizes[-1]]["pte_kib"]))
    if failures:
        print("density: %d failure(s), first: %s" % (len(failures), failures[0]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
