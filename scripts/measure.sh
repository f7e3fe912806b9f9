#!/usr/bin/env bash
# Runs every measurement the README reports, side by side, and keeps the raw
# outputs, JSON and SVG plots under results/<date>/. Needs a quiet machine:
# the ratios are only meaningful when nothing else competes for the CPUs.
#
#   scripts/measure.sh            # everything (about 25 minutes on 2 vCPUs)
#   scripts/measure.sh schbench   # one part: schbench | features | hackbench | latency | spawn |
#                                 #   examples | pairs | validate | unprivileged | criterion
#
# scripts/summarize.py results/<date> prints the medians as Markdown tables.
set -euo pipefail
cd "$(dirname "$0")/.."
out="results/$(date +%Y-%m-%d)"
mkdir -p "$out"
part="${1:-all}"
runs=3
cargo build --release -p bench-schbench -p bench-hackbench -p examples --examples --bins >/dev/null

sb=target/release/schbench
hb=target/release/hackbench

# The host's cache-line round trip between the first two CPUs, appended to
# $out/cache-line.txt before each two-worker schbench and hackbench run: on
# a VM it can move several-fold when the hypervisor moves the vCPUs
# (examples/examples/cache_line.rs), and two-worker results move with it.
# Never fails the script; gives up after 30 s.
probe() {
  { echo "== before $1 ($(date +%H:%M:%S))"
    timeout 30 target/release/examples/cache_line --samples 3 --pause-ms 0
  } >> "$out/cache-line.txt" 2>&1 || true
}

if [[ $part == all || $part == schbench ]]; then
  i=0
  for args in "-L -m 1 -t 4 -n 0 -s 0 -r 10" "-L -m 1 -t 4 -n 0 -r 10" \
              "-L -m 1 -M auto -t 64 -n 0 -s 0 -r 10" "-m 2 -t 4 -r 10"; do
    i=$((i + 1))
    for r in $(seq 1 $runs); do
      echo "== schbench $args (run $r)"
      probe "schbench-w$i-r$r"
      # shellcheck disable=SC2086
      $sb --backend all --workers 2 $args -J "w$i" -j "$out/schbench-w$i-r$r.json" \
          --plot "$out/schbench-w$i.svg" > "$out/schbench-w$i-r$r.txt" 2>&1
      echo "$args" > "$out/schbench-w$i.args"
    done
  done
fi

if [[ $part == all || $part == features ]]; then
  for f in default NO_TTWU_QUEUE_DEFAULT NO_TTWU_QUEUE NO_DELAY_DEQUEUE NO_TTWU_QUEUE_DELAYED; do
    spec=$f; [[ $f == default ]] && spec=""
    for r in $(seq 1 $runs); do
      echo "== schbench features $f (run $r)"
      probe "features-$f-r$r"
      $sb --backend green --workers 2 --features "$spec" --stats -L -m 1 -M auto -t 64 -n 0 -s 0 -r 10 \
          -J "$f" -j "$out/features-$f-r$r.json" > "$out/features-$f-r$r.txt" 2>&1
    done
  done
fi

if [[ $part == all || $part == hackbench ]]; then
  for t in sockets pipes; do
    flag=""; [[ $t == pipes ]] && flag="-p"
    for r in $(seq 1 $runs); do
      echo "== hackbench -g 4 -l 1000 $t (run $r)"
      probe "hackbench-$t-r$r"
      # shellcheck disable=SC2086
      $hb -g 4 -l 1000 --backend all --workers 2 $flag --plot "$out/hackbench-$t.svg" \
          > "$out/hackbench-$t-r$r.txt" 2>&1
    done
  done
  for r in $(seq 1 $runs); do
    echo "== hackbench -g 4 -l 1000 channel (run $r)"
    probe "hackbench-channel-r$r"
    $hb -g 4 -l 1000 --backend green --workers 2 --transport channel > "$out/hackbench-channel-r$r.txt" 2>&1
  done
fi

if [[ $part == all || $part == latency ]]; then
  echo "== hackbench --latency (green, docs/kernel-discussions.md §3 columns)"
  $hb --latency --backend green --workers 2 --columns bg3 --duration 5 -g 4 \
      --plot "$out/latency.svg" > "$out/latency.txt" 2>&1
  echo "== hackbench --latency (threads, green, tokio side by side)"
  $hb --latency --backend all --workers 2 --duration 5 -g 4 \
      --plot "$out/latency-backends.svg" > "$out/latency-backends.txt" 2>&1
fi

if [[ $part == all || $part == spawn ]]; then
  for r in $(seq 1 $runs); do
    echo "== hackbench --spawn (run $r)"
    $hb --spawn --duration 3 --backend all --workers 2 --plot "$out/spawn.svg" > "$out/spawn-r$r.txt" 2>&1
  done
fi

if [[ $part == all || $part == examples ]]; then
  echo "== latency_service"
  target/release/examples/latency_service --plot "$out/latency_service.svg" > "$out/latency_service.txt" 2>&1
  target/release/examples/latency_service --workers 1 > "$out/latency_service-1worker.txt" 2>&1
  target/release/examples/latency_service --transport tcp > "$out/latency_service-tcp.txt" 2>&1
  echo "== echo_server"
  for r in $(seq 1 $runs); do
    target/release/examples/echo_server > "$out/echo_server-r$r.txt" 2>&1
  done
  echo "== feature_ab"
  target/release/examples/feature_ab --rounds 3 > "$out/feature_ab.txt" 2>&1
fi

if [[ $part == all || $part == pairs ]]; then
  # The TTWU_QUEUE_DELAYED decision: interleaved off/on pairs of the scaled
  # regression workload (more samples than the feature table's three).
  mkdir -p "$out/ttwu-delayed"
  for r in 1 2 3 4 5; do
    for f in NO_TTWU_QUEUE_DELAYED TTWU_QUEUE_DELAYED; do
      echo "== schbench pair $f (run $r)"
      probe "pair-$f-r$r"
      $sb --backend green --workers 2 --features "$f" --stats -L -m 1 -M auto -t 64 -n 0 -s 0 -r 10 \
          -J "$f" -j "$out/ttwu-delayed/$f-r$r.json" > "$out/ttwu-delayed/$f-r$r.txt" 2>&1
    done
  done
fi

if [[ $part == all || $part == validate ]]; then
  # The OS backends against the original tool, interleaved. rt-tests is not
  # a dependency: `apt-get download rt-tests && dpkg -x rt-tests_*.deb DIR`
  # and set RT_HACKBENCH=DIR/usr/bin/hackbench (or have it on PATH).
  rt="${RT_HACKBENCH:-$(command -v hackbench || true)}"
  if [[ -z $rt ]]; then
    echo "== validate: rt-tests hackbench not found (set RT_HACKBENCH); skipped"
  else
    echo "== validate: $rt vs the port"
    : > "$out/validation-hackbench.txt"
    for r in 1 2 3; do
      for mode in "-P:processes:" "-T:threads:" "-P -p:processes:-p" "-T -p:threads:-p"; do
        IFS=: read -r rtargs backend extra <<< "$mode"
        # shellcheck disable=SC2086
        a=$("$rt" -g 4 -l 1000 $rtargs | awk '/Time/ {print $2}')
        # shellcheck disable=SC2086
        o=$($hb -g 4 -l 1000 --backend "$backend" $extra | awk '/Time/ {print $2}')
        echo "run $r  rt-tests hackbench -g 4 -l 1000 $rtargs: $a   port --backend $backend $extra: $o" \
          | tee -a "$out/validation-hackbench.txt"
      done
    done
  fi
fi

if [[ $part == all || $part == unprivileged ]]; then
  # latency_service as an unprivileged user (no CAP_SYS_NICE), both
  # transports, eevdf-rt beside tokio in each round.
  for t in channel tcp; do
    echo "== latency_service --transport $t (unprivileged)"
    setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
      target/release/examples/latency_service --workers 2 --transport "$t" --rounds "$runs" \
      > "$out/latency-service-unprivileged-$t.txt" 2>&1
  done
fi

if [[ $part == all || $part == criterion ]]; then
  for b in sched runtime sync net; do
    echo "== cargo bench --bench $b"
    cargo bench -p eevdf-rt --bench "$b" > "$out/criterion-$b.txt" 2>&1
  done
fi
echo "results in $out"
