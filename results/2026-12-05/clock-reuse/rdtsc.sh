#!/bin/bash
# rdtsc instructions executed per operation: locks.sh of the atomics
# folder, counting `rdtsc` instead of locked instructions.
# usage: rdtsc.sh mode n [ops_per_iter]
INSN='rdtsc' WHAT='rdtsc' exec "$(dirname "$0")/../../2026-12-04/atomics/locks.sh" "$@"
