#!/usr/bin/env python3
"""Prints the medians of a scripts/measure.sh results folder as Markdown.

    scripts/summarize.py results/2026-11-30
"""
import json
import re
import signal
import statistics
import sys
from pathlib import Path


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=0):
    if x is None:
        return "-"
    return f"{x:,.{nd}f}"


def schbench(d: Path):
    print("## schbench (medians of runs; --workers 2)\n")
    for args_file in sorted(d.glob("schbench-w*.args")):
        w = args_file.stem
        args = args_file.read_text().strip()
        rows = {}
        for j in sorted(d.glob(f"{w}-r*.json")):
            for line in j.read_text().splitlines():
                o = json.loads(line)
                r = rows.setdefault(o["backend"], {"rps": [], "wp50": [], "wp99": [], "rp50": [], "rp99": []})
                r["rps"].append(o["average_rps"])
                r["wp50"].append(o["wakeup_latency"]["p50"])
                r["wp99"].append(o["wakeup_latency"]["p99"])
                r["rp50"].append(o["request_latency"]["p50"])
                r["rp99"].append(o["request_latency"]["p99"])
        if not rows:
            continue
        n = len(list(d.glob(f"{w}-r*.json")))
        print(f"`schbench --backend all --workers 2 {args}` ({n} runs)\n")
        print("| backend | average RPS | vs threads | vs tokio | wakeup p50 / p99 (µs) | request p50 / p99 (µs) |")
        print("|---|---|---|---|---|---|")
        base = med(rows.get("threads", {}).get("rps", []))
        tok = med(rows.get("tokio", {}).get("rps", []))
        for b in ["threads", "green", "tokio"]:
            if b not in rows:
                continue
            r = rows[b]
            rps = med(r["rps"])
            print(f"| {b} | {fmt(rps)} | {rps / base:.2f}× | {rps / tok:.2f}× | "
                  f"{fmt(med(r['wp50']))} / {fmt(med(r['wp99']))} | {fmt(med(r['rp50']))} / {fmt(med(r['rp99']))} |")
        print()


def stats_total(txt: str, name: str):
    m = re.search(rf"^{name}\s+(.*)$", txt, re.M)
    return int(m.group(1).split()[-1]) if m else None


def features(d: Path):
    files = sorted(d.glob("features-*-r*.json"))
    if not files:
        return
    print("## Feature experiment: green, `-L -m 1 -M auto -t 64 -n 0 -s 0 -r 10` (medians)\n")
    counters = ["context_switches", "wakeups_remote_queued", "wakeups_remote_inline", "delayed_dequeues",
                "delayed_wakeups", "kicks", "preemptions"]
    print("| features | average RPS | wakeup p50 / p99 (µs) | " + " | ".join(counters) + " |")
    print("|---|---|---|" + "---|" * len(counters))
    for f in ["default", "NO_TTWU_QUEUE_DEFAULT", "NO_TTWU_QUEUE", "NO_DELAY_DEQUEUE", "NO_TTWU_QUEUE_DELAYED"]:
        rps, w50, w99 = [], [], []
        cs = {c: [] for c in counters}
        for j in sorted(d.glob(f"features-{f}-r*.json")):
            o = json.loads(j.read_text().splitlines()[0])
            rps.append(o["average_rps"])
            w50.append(o["wakeup_latency"]["p50"])
            w99.append(o["wakeup_latency"]["p99"])
            txt = j.with_suffix(".txt").read_text()
            for c in counters:
                cs[c].append(stats_total(txt, c))
        if rps:
            print(f"| {f} | {fmt(med(rps))} | {fmt(med(w50))} / {fmt(med(w99))} | "
                  + " | ".join(fmt(med(cs[c])) for c in counters) + " |")
    print()


def comparison_rows(txt: str):
    """Rows of a hackbench 'Comparison' table: name -> first numeric column."""
    out = {}
    lines = txt.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("Comparison"):
            for row in lines[i + 2:]:
                parts = row.split()
                if len(parts) < 2:
                    break
                # the name may have a space (green SPAWN_LOCAL)
                k = 1
                while k < len(parts) and not re.match(r"^[0-9.]+$", parts[k]):
                    k += 1
                if k < len(parts):
                    out[" ".join(parts[:k])] = float(parts[k])
    return out


def hackbench(d: Path):
    any_ = False
    for t in ["sockets", "pipes"]:
        runs = [comparison_rows(f.read_text()) for f in sorted(d.glob(f"hackbench-{t}-r*.txt"))]
        if not runs:
            continue
        if not any_:
            print("## hackbench `-g 4 -l 1000 --workers 2` (time in s, medians)\n")
            print("| transport | processes | threads | green | tokio | green speedup vs threads | vs tokio |")
            print("|---|---|---|---|---|---|---|")
            any_ = True
        m = {b: med([r.get(b) for r in runs]) for b in ["processes", "threads", "green", "tokio"]}
        print(f"| {t} | {fmt(m['processes'], 3)} | {fmt(m['threads'], 3)} | {fmt(m['green'], 3)} | "
              f"{fmt(m['tokio'], 3)} | {m['threads'] / m['green']:.2f}× | {m['tokio'] / m['green']:.2f}× |")
    ch = []
    for f in sorted(d.glob("hackbench-channel-r*.txt")):
        m = re.search(r"Time: ([0-9.]+)", f.read_text())
        if m:
            ch.append(float(m.group(1)))
    if ch:
        print(f"| green channels | - | - | {fmt(med(ch), 3)} | - | - | - |")
    if any_:
        print()


def spawn(d: Path):
    runs = [comparison_rows(f.read_text()) for f in sorted(d.glob("spawn-r*.txt"))]
    if not runs:
        return
    print("## Spawn test `--spawn --duration 3 --workers 2` (spawns/s, medians)\n")
    names = sorted({k for r in runs for k in r}, key=lambda k: ["processes", "threads", "green SPAWN_LOCAL", "green NO_SPAWN_LOCAL", "tokio"].index(k) if k in ["processes", "threads", "green SPAWN_LOCAL", "green NO_SPAWN_LOCAL", "tokio"] else 9)
    base = med([r.get("threads") for r in runs])
    tok = med([r.get("tokio") for r in runs])
    print("| backend | spawns/s | vs threads | vs tokio |")
    print("|---|---|---|---|")
    for n in names:
        v = med([r.get(n) for r in runs])
        print(f"| {n} | {fmt(v)} | {v / base:.2f}× | {v / tok:.2f}× |")
    print()


def criterion(d: Path):
    for f in sorted(d.glob("criterion-*.txt")):
        print(f"## criterion: {f.stem.split('-', 1)[1]} (median estimate)\n")
        print("| benchmark | time |")
        print("|---|---|")
        name = None
        for line in f.read_text().splitlines():
            # a result block starts with the benchmark's name alone on a
            # line (or followed by its time when the name is short)
            m = re.match(r"^([A-Za-z0-9_+./-]+)\s*(time:.*)?$", line)
            if m and not line.startswith(("Benchmarking", "Found", "Performance", "change")):
                name = m.group(1)
            t = re.search(r"time:\s+\[\S+ \S+ (\S+ \S+) \S+ \S+\]", line)
            if t and name:
                print(f"| {name} | {t.group(1)} |")
                name = None
        print()


def cache_line(d: Path):
    """The cache-line probe's median before each run (scripts/measure.sh)."""
    f = d / "cache-line.txt"
    if not f.exists():
        return
    print("## Cache-line round trip between the first two CPUs before each run\n")
    print("| before | median |")
    print("|---|---|")
    label = None
    for line in f.read_text().splitlines():
        m = re.match(r"== before (\S+)", line)
        if m:
            label = m.group(1)
            continue
        m = re.match(r"median: (\S+ ns)", line)
        if m and label:
            print(f"| {label} | {m.group(1)} |")
            label = None
    print()


def main():
    d = Path(sys.argv[1] if len(sys.argv) > 1 else sorted(Path("results").iterdir())[-1])
    cache_line(d)
    schbench(d)
    features(d)
    hackbench(d)
    spawn(d)
    criterion(d)
    for name, title in [
        ("latency.txt", "Latency table (green, docs/kernel-discussions.md §3 columns)"),
        ("latency-backends.txt", "Latency probes: threads, green, tokio"),
    ]:
        lat = d / name
        if lat.exists():
            print(f"## {title}\n")
            txt = lat.read_text()
            table = [l for l in txt.splitlines() if l.startswith("|")]
            print("\n".join(table))
            print()


if __name__ == "__main__":
    # A closed reader (`summarize.py DIR | head`) ends the script quietly,
    # like the benchmarks' own reports.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
