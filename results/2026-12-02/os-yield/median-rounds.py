# usage: python3 median-rounds.py FILE  -> median of the per-round p99s per (features, runtime)
import re, sys
cur = None; d = {}
for l in open(sys.argv[1]):
    if l.startswith('###'): cur = l.split(':')[0][4:]; continue
    m = re.match(r'\s+(eevdf-rt|tokio)\s+(.*)', l)
    if m:
        for v, u in re.findall(r'([\d.]+) (µs|ms) \(', m.group(2)):
            d.setdefault((cur, m.group(1)), []).append(float(v) * (1000 if u == 'ms' else 1))
for k, v in sorted(d.items()):
    print(k, len(v), 'rounds, median round p99 %.0f us' % sorted(v)[len(v) // 2])
