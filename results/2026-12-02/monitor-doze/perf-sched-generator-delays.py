# usage: an.py timehist.txt  -> generator wakeup-to-run delays, attribution
import sys,collections
ev=[]
for l in open(sys.argv[1]):
    p=l.split()
    if len(p)<3: continue
    try: t=float(p[0])
    except: continue
    ev.append(l)
n=0; big=0; cause=collections.Counter(); delays=[]
for i,l in enumerate(ev):
    if 'generator[' in l and 'awakened' not in l:
        p=l.split()
        try: sd=float(p[-2])
        except: continue
        n+=1; delays.append(sd)
        if sd>0.3:
            big+=1
            j=i-1
            while j>0 and 'awakened: generator' not in ev[j]: j-=1
            prev=' '.join(ev[max(0,j-3):j])
            if 'monito' in prev: cause['monitor']+=1
            elif 'kdamond' in prev or 'kworker' in prev or 'ksoftirq' in prev: cause['kernel thread']+=1
            else: cause['other']+=1
delays.sort()
q=lambda f: delays[min(len(delays)-1,int(f*len(delays)))] if delays else 0
mon=sum(1 for l in ev if 'awakened: ' in l and 'monito' in l.split('awakened: ')[1])
print(f"gen runs {n} delays>0.3ms {big} p99 {q(0.99)*1000:.0f}us p999 {q(0.999)*1000:.0f}us causes {dict(cause)} monitor wakeups {mon}")
