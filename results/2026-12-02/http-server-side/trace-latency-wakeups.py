# usage: python3 trace-latency-wakeups.py trace.json  (http_service --rounds 1 --trace trace.json)
# wake-to-run delay of the latency route's tasks (nice 0, not task 1) in the eevdf-rt trace,
# in the first 5 ms after the first latency wakeup, the next 15 ms, and after that.
# A wakeup is matched with the task's first run that starts no earlier than 5 us before it
# (a preemption point's switch uses the clock it read before its poll woke the task).
import json,bisect,collections,sys
d=json.load(open(sys.argv[1]))['traceEvents']
runs=collections.defaultdict(list); wakes=[]; nice={}
for e in d:
    if e.get('pid')!=1: continue
    if e.get('ph')=='X': runs[e['args']['id']].append(e['ts']); nice[e['args']['id']]=e['args']['nice']
    elif e.get('ph')=='i' and e['name'].startswith('wakeup task#'): wakes.append(e)
for k in runs: runs[k].sort()
heavy={i for i,v in nice.items() if v==10}
def pct(v,p): v=sorted(v); return v[min(len(v)-1,int(p*len(v)))]
lat=[w for w in wakes if w['args']['wakee'] not in heavy and w['args']['wakee']!=1]
first=min(w['ts'] for w in lat if w['ts']>10000)
print('first latency wake',first)
for lo,hi in [(0,5000),(5000,20000),(20000,2e9)]:
    v=[]
    for w in lat:
        t=w['args']['wakee']
        if not (lo <= w['ts']-first < hi): continue
        rs=runs[t]; k=bisect.bisect_left(rs,w['ts']-5)
        if k<len(rs): v.append(rs[k]-w['ts'])
    if v: print(lo,hi,len(v),'p50 %.1f p90 %.1f p99 %.1f p999 %.1f max %.1f'%(pct(v,.5),pct(v,.9),pct(v,.99),pct(v,.999),max(v)))
