#!/usr/bin/env python3
"""make bench's tables (bench/summary.py) from crafted benchmark output:

- the table of peers shows warden's figure, the peer's, the ratio, each
  with its spread, one line per peer;
- a ratio more than 20 % worse than the baseline is flagged (status 1),
  one within 20 % is not;
- an absolute figure (microseconds, kB) is never compared with the
  baseline, even when far off it, and a baseline that still holds one
  does not count it missing;
- `--save` writes ratios only;
- a ratio the baseline has and the run lacks is reported missing;
- bench/spawn.sh refuses an unknown SPAWN_PEERS runtime with status 125
  before running anything.

  bench_summary.py SOURCE_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile

FAILED = 0


def check(cond, what):
    global FAILED
    print("%s %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        FAILED += 1


def main(root):
    summary = os.path.join(root, "bench", "summary.py")
    with tempfile.TemporaryDirectory(prefix="wd-bench-summary.") as d:
        results = os.path.join(d, "results.txt")
        base = os.path.join(d, "baseline.txt")
        with open(results, "w") as f:
            f.write("# crafted\n")
            f.write("peer\tcold `run -- /bin/true`, added over bare\tms\tlow\tbubblewrap\t"
                    "5.1\t5.0\t5.3\t4.7\t4.6\t4.9\t1.08\t1.06\t1.1\n")
            f.write("peer\tcold `run -- /bin/true`, added over bare\tms\tlow\trunc\t"
                    "5.1\t5.0\t5.3\t70.1\t68\t75\t0.073\t0.07\t0.076\n")
            f.write("peer\tTLS interception: added p50 latency\tus\tlow\tSquid ssl_bump\t"
                    "60\t50\t70\t0\t0\t0\t-\t-\t-\n")
            f.write("summary\tcold_true_vs_bwrap\t1.5\n")   # 1.5 / 1.08: worse by 39 %
            f.write("summary\tlive_ratio\t1.1\n")           # 1.1 / 1.03: within 20 %
            f.write("summary\tlive_added_us\t900\n")        # absolute, 9x the baseline's
            f.write("summary\trss_per_sandbox_kb\t5000\n")  # absolute
        with open(base, "w") as f:
            f.write("summary\tcold_true_vs_bwrap\t1.08\n")
            f.write("summary\tlive_ratio\t1.03\n")
            f.write("summary\tlive_added_us\t24\n")
            f.write("summary\tproxy_added_us_1cpu\t12.5\n")  # absolute, not in the run
            f.write("summary\ttunnel_vs_relay\t1.0\n")      # a ratio, not in the run
        p = subprocess.run([sys.executable, summary, results, base], capture_output=True,
                           text=True)
        out = p.stdout
        print(out)
        lines = out.splitlines()
        # the table of peers: the lines before the table of figures
        peers = lines[:next(i for i, l in enumerate(lines) if l.startswith("figure"))]
        bw = [l for l in peers if "bubblewrap" in l]
        check(len(bw) == 1 and "5.1 [5.0-5.3]" in bw[0] and "4.7 [4.6-4.9]" in bw[0]
              and "1.08 [1.06-1.1]" in bw[0], "the bubblewrap row: warden, peer, ratio, spreads")
        rc = [l for l in peers if "runc" in l]
        check(len(rc) == 1 and "70.1 [68-75]" in rc[0] and "0.073 [0.07-0.076]" in rc[0],
              "the runc row under the same figure")
        sq = [l for l in peers if "Squid" in l]
        check(len(sq) == 1 and re.search(r"\s-\s+lower$", sq[0]) is not None,
              "a peer with no ratio shows '-'")
        cold = [l for l in lines if l.startswith("cold `run -- /bin/true`: added time /")]
        check(len(cold) == 1 and "WORSE" in cold[0], "a ratio 39 % worse is flagged")
        live = [l for l in lines if l.startswith("exec into a live sandbox / bare")]
        check(len(live) == 1 and "WORSE" not in live[0], "a ratio 7 % worse is not")
        added = [l for l in lines if l.startswith("exec into a live sandbox: added us")]
        check(len(added) == 1 and "WORSE" not in added[0] and "not compared" in added[0],
              "an absolute figure 9x its baseline is shown, not compared")
        check(not any("keep-alive request via proxy: added us (one CPU)" in l and "MISSING" in l
                      for l in lines), "an absolute baseline key absent from the run is not missing")
        check(any("CONNECT tunnel / two-hop splice relay" in l and "MISSING" in l for l in lines),
              "a baseline ratio absent from the run is reported missing")
        check("1 figure(s) worse" in out and p.returncode == 1, "status 1, one figure worse")

        saved = os.path.join(d, "saved.txt")
        p = subprocess.run([sys.executable, summary, "--save", results, saved],
                           capture_output=True, text=True)
        keys = [l.split("\t")[1] for l in open(saved) if l.startswith("summary\t")]
        check(p.returncode == 0 and sorted(keys) == ["cold_true_vs_bwrap", "live_ratio"],
              "--save writes the ratios only (got %s)" % keys)

    env = dict(os.environ, SPAWN_PEERS="runc,docker")
    p = subprocess.run(["bash", os.path.join(root, "bench", "spawn.sh"), "/bin/false",
                        "/bin/false"], env=env, capture_output=True, text=True)
    check(p.returncode == 125 and "SPAWN_PEERS" in p.stderr and "docker" in p.stderr
          and p.stdout == "", "spawn.sh: an unknown SPAWN_PEERS runtime is refused, 125")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
