#!/usr/bin/env bash
# hackbench --workers 2 -g 4 -l 1000 on sockets and pipes, 3 interleaved rounds:
# threads, green on epoll, green on io_uring, tokio (one time per line).
# Run from the repository root after `cargo build --release -p bench-hackbench`.
set -euo pipefail
H=./target/release/hackbench
for round in 1 2 3; do
  for t in "" "-p"; do
    tn=${t:-sock}
    echo "$round $tn threads $($H -g 4 -l 1000 $t --backend threads | awk '/^Time/{print $2}')"
    echo "$round $tn green-epoll $($H --workers 2 -g 4 -l 1000 $t --backend green --io epoll | awk '/^Time/{print $2}')"
    echo "$round $tn green-uring $($H --workers 2 -g 4 -l 1000 $t --backend green --io uring | awk '/^Time/{print $2}')"
    echo "$round $tn tokio $($H --workers 2 -g 4 -l 1000 $t --backend tokio | awk '/^Time/{print $2}')"
  done
done
