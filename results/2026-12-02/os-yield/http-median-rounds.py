# usage: python3 http-median-rounds.py FILE -> per (features, runtime): the median over
# all rounds of http_service's per-round latency-route p99, p99 from the write and
# server-side p99 (the "mixed phase, per round" lines).
import re, sys
cur = None; d = {}
us = lambda x: float(x.split()[0]) * (1000 if x.split()[1] == 'ms' else 1)
for l in open(sys.argv[1]):
    if l.startswith('###'): cur = l.split(':')[0][4:]; continue
    m = re.match(r'\s+(eevdf-rt|tokio)\s+(\d.*)', l)
    if m:
        for p99, rest in re.findall(r'([\d.]+ (?:µs|ms)) \(([^)]*)\)', m.group(2)):
            f = rest.split('; ')
            d.setdefault((cur, m.group(1)), []).append((us(p99), us(f[1]), us(f[2])))
med = lambda v: sorted(v)[len(v) // 2]
for k, v in sorted(d.items()):
    print(k, len(v), 'rounds; median round: p99 %.0f us, from the write %.0f us, server side %.0f us'
          % (med([x[0] for x in v]), med([x[1] for x in v]), med([x[2] for x in v])))
