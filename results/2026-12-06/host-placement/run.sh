#!/usr/bin/env bash
# schbench -s 0 on two workers, green and tokio interleaved, each run
# preceded by the host's cache-line round trip between CPUs 0 and 1.
# Run from the repository root after
#   cargo build --release -p bench-schbench -p examples --examples --bins
# Usage: run.sh ROUNDS [extra green features, e.g. NO_WAKE_IDLE]
set -euo pipefail
sb=target/release/schbench
args="--workers 2 -L -m 1 -t 4 -n 0 -s 0 -r 3"
feat="${2:-}"
rps() { awk '/average rps/ {printf "%.0f", $3}'; }
line() { target/release/examples/cache_line --samples 3 --pause-ms 0 | awk '/median/ {print $2}'; }
for r in $(seq 1 "${1:-8}"); do
  lg=$(line)
  # shellcheck disable=SC2086
  g=$($sb --backend green --features "$feat" $args 2>&1 | rps)
  lt=$(line)
  # shellcheck disable=SC2086
  t=$($sb --backend tokio $args 2>&1 | rps)
  echo "round $r  green${feat:+ $feat} $g (line ${lg} ns)  tokio $t (line ${lt} ns)  green/tokio $(echo "scale=2; $g/$t" | bc)"
done
