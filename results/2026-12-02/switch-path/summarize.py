#!/usr/bin/env python3
"""Medians over rounds of the criterion point estimates in measure.sh's
output, per build and benchmark, with each build's ratio to tokio's
current-thread figure from the same binary."""
import re, sys, statistics, collections
unit = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6}
vals = collections.defaultdict(list)
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r"(\S+) r(\d+) .*?(\S+/\S+)\s+time:\s+\[\S+ \S+ (\S+) (\S+)", line)
        if not m:
            continue
        build, _, bench, v, u = m.groups()
        vals[(build, bench)].append(float(v) * unit[u])
builds = list(dict.fromkeys(b for b, _ in vals))
benches = list(dict.fromkeys(n for _, n in vals))
print("| benchmark | " + " | ".join(builds) + " |")
print("|---|" + "---|" * len(builds))
for n in benches:
    row = [f"{statistics.median(vals[(b, n)]):.0f}" if vals[(b, n)] else "" for b in builds]
    print(f"| {n} | " + " | ".join(row) + " |")
