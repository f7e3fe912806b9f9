# usage: python3 client-wake-delays.py timehist.txt [CLIENTS]
# From `perf sched timehist` of one `http_service --rounds 1` run: the
# scheduling delay (runnable -> running) of each load-generator thread,
# grouped by the phase it belongs to. Threads are told apart by when they
# live: the run goes throughput (eevdf-rt), mixed (eevdf-rt), throughput
# (tokio), mixed (tokio), after a 100 ms warm-up of each runtime; latency
# clients of a mixed phase run ~2 times per request.
import sys, re, collections
NCL = int(sys.argv[2]) if len(sys.argv) > 2 else 20  # --clients
per = collections.defaultdict(list); first = {}; last = {}
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) < 6 or '[' not in p[2]: continue
    m = re.match(r'(.+)\[(\d+)/(\d+)\]', p[2])
    if not m or m.group(2) == m.group(3): continue
    if m.group(1).startswith(('eevdf', 'tokio')): continue  # runtime threads
    try: t = float(p[0]); sd = float(p[-2])
    except ValueError: continue
    tid = m.group(2); per[tid].append(sd); first.setdefault(tid, t); last[tid] = t
q = lambda v, f: sorted(v)[min(len(v) - 1, int(f * len(v)))]
t0 = min(first.values())
groups = collections.defaultdict(list)
for tid in sorted(per, key=lambda k: first[k]):
    v = per[tid]
    if len(v) < 50: continue
    key = round(first[tid] - t0, 1)
    groups[key].append((tid, v))
def show(name, ts):
    allv = [x for _, v in ts for x in v]
    print(f"  {name}: {len(ts)} threads, {len(allv)} runs, "
          f"sch delay p50 {q(allv,.5)*1e3:.0f} us, p99 {q(allv,.99)*1e3:.0f} us, "
          f"p99.9 {q(allv,.999)*1e3:.0f} us, runs delayed > 200 us: {sum(1 for x in allv if x > 0.2)}")
for key, ts in sorted(groups.items()):
    print(f"threads starting at +{key:.1f} s:")
    ts.sort(key=lambda x: int(x[0]))
    if len(ts) > NCL:
        # a mixed phase: the heavy clients are spawned first
        show("heavy clients", ts[:len(ts) - NCL])
        show("latency clients", ts[len(ts) - NCL:])
    else:
        show("clients", ts)
