#!/bin/bash
# locked RMWs per op: callgrind per-instruction counts (n and 2n ops) joined
# with objdump's lock-prefixed / xchg instructions of the binary.
# usage: locks.sh mode n [ops_per_iter]
# INSN (an awk regex of the instruction text) and WHAT (the label) count
# other instructions the same way, e.g. INSN='rdtsc' WHAT='rdtsc'.
B=/work/prof/target/release/prof
INSN=${INSN:-(lock |xchg)}
WHAT=${WHAT:-locked RMWs}
objdump -d --no-show-raw-insn $B | awk -v insn="^ *[0-9a-f]+:\t$INSN" '$0 ~ insn {a=$1; sub(":","",a); print a}' | sort -u > /tmp/lockaddrs.txt
for k in 1 2; do
  valgrind --tool=callgrind --dump-instr=yes --dump-line=no --callgrind-out-file=/tmp/cgl.$k $B $1 $(( $2 * k )) > /dev/null 2>&1
done
for k in 1 2; do
  # callgrind_annotate can't give per-address; parse the raw file: lines "0xADDR count" or "+N count"
  python3 - /tmp/cgl.$k > /tmp/cgl.$k.txt <<'PY'
import sys,re
cnt={}
addr=0
skip=False
for line in open(sys.argv[1]):
    if line.startswith('calls='):
        skip=True; continue
    if not line or not (line[0].isdigit() or line[0] in '+-*0'):
        continue
    if skip:
        skip=False
        parts=line.split(); a=parts[0]
        if a.startswith('0x'): addr=int(a,16)
        elif a.startswith('+'): addr+=int(a[1:])
        elif a.startswith('-'): addr-=int(a[1:])
        continue
    parts=line.split()
    if len(parts)<2: continue
    a=parts[0]
    if a.startswith('0x'): addr=int(a,16)
    elif a.startswith('+'): addr+=int(a[1:])
    elif a.startswith('-'): addr-=int(a[1:])
    elif a=='*': pass
    else: continue
    try: c=int(parts[1])
    except: continue
    cnt[addr]=cnt.get(addr,0)+c
for a,c in cnt.items(): print("%x %d"%(a,c))
PY
done
python3 - <<PY
locks=set(int(l,16) for l in open('/tmp/lockaddrs.txt'))
def load(f):
    d={}
    for l in open(f):
        a,c=l.split(); d[int(a,16)]=int(c)
    return d
a=load('/tmp/cgl.1.txt'); b=load('/tmp/cgl.2.txt')
tot=0
rows=[]
for ad in locks:
    diff=b.get(ad,0)-a.get(ad,0)
    if diff>0: rows.append((diff,ad)); tot+=diff
n=$2*${3:-1}
print("$WHAT per op: %.2f"%(tot/n))
for d,ad in sorted(rows,reverse=True):
    print("%6.2f %x"%(d/n,ad))
PY
