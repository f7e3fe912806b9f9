#!/bin/bash
# attr2.sh: "count addr" -> count, atomic op, first runtime frames
while read c a; do
  addr2line -f -i -C -e /work/prof/target/release/prof 0x$a | paste - - | awk -v c="$c" '
    BEGIN{op=""; n=0; out=""}
    { fn=$1; loc=$2; sub(/.*\//,"",loc);
      if (op=="" && fn ~ /atomic|raw_mutex|RawMutex/) { f=fn; sub(/.*>::/,"",f); sub(/.*::/,"",f); if (fn ~ /RawMutex|raw_mutex/) op="mutex." f; else op=f }
      if (fn ~ /eevdf_rt::|prof::/ && n<3) { g=fn; gsub(/<[^<>]*>/,"",g); gsub(/<[^<>]*>/,"",g); out=out " < " g " (" loc ")"; n++ } }
    END{ printf "%s %-22s%s\n", c, op, out }'
done
