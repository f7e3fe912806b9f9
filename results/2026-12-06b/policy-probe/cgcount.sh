#!/bin/bash
# usage: cgcount.sh BIN mode... : instructions per op (2N minus N, N=50000)
B=$1; shift
for m in "$@"; do
a=$(valgrind --tool=callgrind --callgrind-out-file=/tmp/cgc.$m.a $B $m 50000 2>&1 | grep refs | awk '{gsub(",","",$4); print $4}')
b=$(valgrind --tool=callgrind --callgrind-out-file=/tmp/cgc.$m.b $B $m 100000 2>&1 | grep refs | awk '{gsub(",","",$4); print $4}')
echo "$m $(( (b-a)/50000 ))"
done
