#!/bin/bash
# alternate base/new green hackbench, plus tokio and threads, sockets and pipes
for r in $(seq 1 ${ROUNDS:-3}); do
  for t in unix pipe; do
    for side in ${ORDER:-base new tokio threads}; do
      case $side in
        base) X="/tmp/base-hackbench --backend green";;
        new) X="/tmp/new-hackbench --backend green";;
        tokio) X="/tmp/new-hackbench --backend tokio";;
        threads) X="/tmp/new-hackbench --backend threads";;
      esac
      W="--workers 2"; if [ $side = threads ]; then W=""; fi
      tm=$($X $W -g 4 -l 1000 --transport $t 2>&1 | grep -E '^Time' | awk '{print $2}')
      echo "round $r $t $side $tm"
    done
  done
done
