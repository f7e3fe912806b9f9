#!/bin/bash
callgrind_annotate --auto=no $1 2>/dev/null | sed -n '/^Ir *file:function/,$p' | tail -n +3 | awk -v ops=$2 'NF>=3 {n=$1; gsub(",","",n); f=$0; sub(/^[^\/]*\)  /,"",f); sub(/^[^:]*:/,"",f); sub(/ \[.*/,"",f); sub(/'"'"'2$/,"",f); s[f]+=n} END {for (f in s) if (s[f]/ops > 2) printf "%7.1f %s\n", s[f]/ops, substr(f,1,120)}' | sort -rn | head -${3:-40}
