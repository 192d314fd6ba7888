#!/usr/bin/env python3
"""The figures of bench/spawn.sh from its series: each figure is computed
within one alternating series (spawn_bench -t: "summary LABEL MEDIAN_US
P10_US P90_US CPU_US"), then given as the median over the series with
their range.

  spawn_figures.py KEY BEFORE IMAGE SERIES-OUTPUT...

Prints the figures for a human, "summary KEY VALUE" lines for
bench/summary.py, and "median LABEL MEDIAN_US P10_US" lines (each
command's median and p10, medians over the series) for the baseline.
"""
import statistics
import sys


def read(path):
    m, p10 = {}, {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4 and parts[0] == "summary":
                m[parts[1]] = float(parts[2])
                p10[parts[1]] = float(parts[3])
    return m, p10


def spread(values, fmt):
    """median [min-max] of the per-series values"""
    med = statistics.median(values)
    if len(values) == 1:
        return fmt % med
    return (fmt + " [" + fmt + "-" + fmt + "]") % (med, min(values), max(values))


def spread3(values):
    """median, min, max as text"""
    return tuple("%.4g" % x for x in (statistics.median(values), min(values), max(values)))


def main(argv):
    key, before, image = argv[1], argv[2], argv[3]
    series = [read(p) for p in argv[4:]]
    series = [s for s in series if "warden" in s[0] and "bare" in s[0]]
    if not series:
        print("no series measured both warden and bare execution")
        return 1

    def per(fn, need):
        return [fn(m, p) for m, p in series if all(n in m for n in need)]

    def added(label):
        return per(lambda m, p: (m[label] - m["bare"]) / 1000, [label])

    n = len(series)
    print("# over %d series: median [min-max] of the per-series figures" % n)
    print("warden overhead over bare: %s ms" % spread(added("warden"), "%.3f"))
    if all("bwrap" in m for m, _ in series):
        print("bwrap overhead over bare:  %s ms" % spread(added("bwrap"), "%.3f"))
        # warden's added time over bubblewrap's, each over bare execution in
        # the same series: the figure the cold-start target is set on
        r = per(lambda m, p: (m["warden"] - m["bare"]) / (m["bwrap"] - m["bare"]), ["bwrap"])
        whole = per(lambda m, p: m["warden"] / m["bwrap"], ["bwrap"])
        # the 10th percentiles move less when other work shares the CPUs
        r10 = per(lambda m, p: (p["warden"] - p["bare"]) / (p["bwrap"] - p["bare"]), ["bwrap"])
        print("ratio warden/bwrap: %s of the added times (target <= 1.0), %s of the medians, "
              "%s at p10" % (spread(r, "%.3f"), spread(whole, "%.3f"), spread(r10, "%.3f")))
        print("summary\tcold_%s_vs_bwrap\t%.3f" % (key, statistics.median(r)))
    if all("ns-floor" in m for m, _ in series):
        r = per(lambda m, p: (m["warden"] - m["bare"]) / (m["ns-floor"] - m["bare"]),
                ["ns-floor"])
        r10 = per(lambda m, p: (p["warden"] - p["bare"]) / (p["ns-floor"] - p["bare"]),
                  ["ns-floor"])
        print("namespace floor (clone with the same namespaces, maps, fork): +%s ms"
              % spread(added("ns-floor"), "%.3f"))
        print("added time warden / floor: %s of the medians (target <= 1.3), %s at p10"
              % (spread(r, "%.2f"), spread(r10, "%.2f")))
        print("summary\tcold_%s_ratio\t%.3f" % (key, statistics.median(r)))
    if image and all("image" in m for m, _ in series):
        # the same cold start, /usr and /etc from an image rather than the
        # host: whole times (target: within 5 %)
        r = per(lambda m, p: m["image"] / m["warden"], ["image"])
        print("image (%s) / host /usr: %s of the medians; added time over bare %s ms"
              % (image, spread(r, "%.3f"), spread(added("image"), "%.3f")))
        print("summary\tcold_%s_image_vs_host\t%.3f" % (key, statistics.median(r)))
    if before and all("before" in m for m, _ in series):
        r = per(lambda m, p: (m["warden"] - m["bare"]) / (m["before"] - m["bare"]), ["before"])
        print("before (%s): +%s ms over bare; warden now / before: %s of the added times"
              % (before, spread(added("before"), "%.3f"), spread(r, "%.3f")))
        print("summary\tcold_%s_vs_before\t%.3f" % (key, statistics.median(r)))
    # warden beside each peer that ran in every series, for make bench's
    # table (bench/summary.py): "peer ROW UNIT BETTER PEER" and warden's,
    # the peer's and the per-series ratio, each as median, min, max
    row = "cold `run -- %s`, added over bare" % ("/bin/true" if key == "true"
                                                   else "python3 -c pass")
    names = {"bwrap": "bubblewrap", "runc": "runc", "crun": "crun"}
    for label, name in names.items():
        if not all(label in m for m, _ in series):
            continue
        w, q = added("warden"), added(label)
        r = [a / b for a, b in zip(w, q) if b > 0]
        cells = [spread3(w), spread3(q), spread3(r) if r else ("-", "-", "-")]
        print("peer\t%s\tms\tlow\t%s\t%s" % (row, name,
                                               "\t".join("\t".join(c) for c in cells)))
        if label != "bwrap":
            print("%s: +%s ms over bare; warden / %s: %s of the added times"
                  % (name, spread(q, "%.3f"), name, spread(r, "%.3f") if r else "-"))
    for label in series[0][0]:
        if all(label in m for m, _ in series):
            print("median\t%s\t%.1f\t%.1f" % (label, statistics.median(m[label] for m, _ in series),
                                              statistics.median(p[label] for _, p in series)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
