#!/usr/bin/env bash
# Criterion micro-benchmarks of several builds, interleaved round by round
# (this VM's speed drifts by tens of percent within minutes, so only
# figures from the same round compare).
#
# usage: measure.sh OUT_DIR NAME=DIR [NAME=DIR ...]
#   each DIR holds release binaries of one build:
#     bench-runtime  (target/release/deps/runtime-*, from `cargo bench -p eevdf-rt --no-run`)
#     bench-sync     (target/release/deps/sync-*)
set -u
out=${1:?out dir}; shift
mkdir -p "$out"
crit() { "$2" --bench "$3" 2>/dev/null | awk -v n="$1" '/time:/ {print n, prev, $0} {prev=$1}' ; }
for r in 1 2 3; do
  for b in "$@"; do
    name=${b%%=*}; d=${b#*=}
    crit "$name r$r" "$d/bench-runtime" 'switch/|spawn_join/(green|tokio_current)|wake_round_trip/green' >> "$out/criterion-runtime.txt"
    crit "$name r$r" "$d/bench-sync" 'channel_ping_pong/(green|tokio_current)' >> "$out/criterion-sync.txt"
  done
done
