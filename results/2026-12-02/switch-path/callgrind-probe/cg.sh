#!/bin/bash
# instructions per op: callgrind difference between n and 2n ops
# usage: cg.sh mode n ops_per_iter
cd /work/prof && cargo build --release 2>&1 | grep -E "^error" -A5
a=$(valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$1.a ./target/release/prof $1 $2 2>&1 | grep refs | awk '{gsub(",","",$4); print $4}')
b=$(valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$1.b ./target/release/prof $1 $(( $2 * 2 )) 2>&1 | grep refs | awk '{gsub(",","",$4); print $4}')
echo "$1: $(( (b - a) / ($2 * ${3:-1}) )) instructions per op"
