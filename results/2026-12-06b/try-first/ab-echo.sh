#!/bin/bash
# alternate base and new net benches; print one line per bench per binary per round
A=/tmp/base-net
B=/tmp/new-net
for r in $(seq 1 ${ROUNDS:-3}); do
  for side in base new; do
    if [ $side = base ]; then X=$A; else X=$B; fi
    cl=$(/work/main/target/release/examples/cache_line --samples 1 --pause-ms 0 2>&1 | tail -1 | awk '{print $2}')
    $X --bench --output-format bencher "${FILTER:-uring|tokio}" 2>/dev/null | grep "bench:" | awk -v s=$side -v r=$r -v cl=$cl '{print "round " r " " s " cl=" cl "ns " $0}'
  done
done
