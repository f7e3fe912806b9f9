#!/usr/bin/env bash
# hackbench --workers 2 -g 4 -l 1000 on sockets and pipes, interleaved rounds:
# threads, green on epoll, green on io_uring, tokio (one time per line).
# ROUNDS=N (default 3) sets the number of rounds; EXTRA_FEATURES=LIST adds a
# fifth line per round, green on io_uring with `--features LIST`
# (e.g. EXTRA_FEATURES=NO_WAKEUP_PREEMPTION), named green-uring-LIST;
# BATCH=1 adds threads-batch and green-uring-batch (`--policy batch`).
# Run from the repository root after `cargo build --release -p bench-hackbench`.
set -euo pipefail
H=./target/release/hackbench
ROUNDS=${ROUNDS:-3}
EXTRA_FEATURES=${EXTRA_FEATURES:-}
BATCH=${BATCH:-0}
for round in $(seq 1 "$ROUNDS"); do
  for t in "" "-p"; do
    tn=${t:-sock}
    echo "$round $tn threads $($H -g 4 -l 1000 $t --backend threads | awk '/^Time/{print $2}')"
    if [ "$BATCH" = 1 ]; then
      echo "$round $tn threads-batch $($H -g 4 -l 1000 $t --backend threads --policy batch | awk '/^Time/{print $2}')"
    fi
    echo "$round $tn green-epoll $($H --workers 2 -g 4 -l 1000 $t --backend green --io epoll | awk '/^Time/{print $2}')"
    echo "$round $tn green-uring $($H --workers 2 -g 4 -l 1000 $t --backend green --io uring | awk '/^Time/{print $2}')"
    if [ "$BATCH" = 1 ]; then
      echo "$round $tn green-uring-batch $($H --workers 2 -g 4 -l 1000 $t --backend green --io uring --policy batch | awk '/^Time/{print $2}')"
    fi
    if [ -n "$EXTRA_FEATURES" ]; then
      echo "$round $tn green-uring-$EXTRA_FEATURES $($H --workers 2 -g 4 -l 1000 $t --backend green --io uring --features "$EXTRA_FEATURES" | awk '/^Time/{print $2}')"
    fi
    echo "$round $tn tokio $($H --workers 2 -g 4 -l 1000 $t --backend tokio | awk '/^Time/{print $2}')"
  done
done
