#!/usr/bin/env bash
# The before/after measurement behind this folder: criterion micro-benchmarks
# and latency_service, two builds interleaved, three rounds.
#
# usage: measure.sh BEFORE_DIR AFTER_DIR OUT_DIR
#   each *_DIR holds release binaries of one commit:
#     bench-runtime  (target/release/deps/runtime-*, from `cargo bench -p eevdf-rt --no-run`)
#     bench-sync     (target/release/deps/sync-*)
#     latency_service (target/release/examples/latency_service)
set -u
B=${1:?before dir}; A=${2:?after dir}; out=${3:?out dir}
mkdir -p "$out"
crit() { "$2" --bench "$3" 2>/dev/null | awk -v n="$1" '/time:/ {print n, prev, $0} {prev=$1}' ; }
for r in 1 2 3; do
  for v in before after; do
    d=$B; [ $v = after ] && d=$A
    crit "$v r$r" "$d/bench-runtime" 'switch/|spawn_join/(green|tokio_current)|wake_round_trip/green' >> "$out/criterion-runtime.txt"
    crit "$v r$r" "$d/bench-sync" 'channel_ping_pong/(green|tokio_current)' >> "$out/criterion-sync.txt"
  done
done
for t in channel tcp; do
  for v in before after; do
    d=$B; [ $v = after ] && d=$A
    echo "== $v" >> "$out/latency-$t.txt"
    setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
      "$d/latency_service" --workers 2 --transport $t --rounds 3 >> "$out/latency-$t.txt" 2>&1
  done
done
