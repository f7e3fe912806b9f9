import json,sys,bisect,collections
d=json.load(open(sys.argv[1])); ev=d['traceEvents']
runs=collections.defaultdict(list); byw=collections.defaultdict(list)
wakes=[]
for e in ev:
    if e.get('ph')=='X':
        runs[e['args']['id']].append((e['ts'],e['dur'],e['tid']))
        byw[e['tid']].append((e['ts'],e['dur'],e['name'],e['args'].get('out')))
    elif e.get('ph')=='i' and e.get('name','').startswith('wakeup handler'):
        wakes.append(e)
for k in runs: runs[k].sort()
for k in byw: byw[k].sort()
lat=[]
for w in wakes:
    tid=int(w['name'].split('#')[1]); ts=w['ts']
    r=runs[tid]; i=bisect.bisect_left(r,(ts-40,))
    if i<len(r): lat.append((r[i][0]-ts, ts, r[i][2], w))
lat.sort(key=lambda x:-x[0])
n=len(lat); s=sorted(x[0] for x in lat)
print("wakes",n,"wake-to-run p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f us"%(s[n//2],s[int(n*.9)],s[int(n*.99)],s[int(n*.999)],s[-1]))
for d_,ts,wk,w in lat[:int(sys.argv[2]) if len(sys.argv)>2 else 8]:
    print("-- delay %.1f us, woken at %.1f from track %s args %s, ran on worker %d"%(d_,ts,w.get('tid'),w.get('args'),wk))
    for (t0,du,nm,out) in byw[wk]:
        if t0+du>=ts-60 and t0<=ts+d_:
            print("     %.1f +%.1f %s (%s)"%(t0-ts,du,nm,out))
