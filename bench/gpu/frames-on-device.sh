#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool) with FLA bc3b101d exported into .fla/ (carried),
# after bench/gpu/prepare-device.sh. What reading entries alone costs in size (issue 41): FLA's
# chunk_kda smoke benchmark fills a Triton cache cold, then the cache is compressed as one zstd stream
# (a pack today) and as one frame per entry (what a ranged read of one entry needs), at level 3 and 19.
# Lands in $OUT/frames.json and $OUT/entries.txt (each entry: bytes, bytes alone at -3, files).
set -uo pipefail
OUT=${OUT:-/tmp/o}; W=/tmp/ff; rm -rf $W; mkdir -p $W
Z=$(pwd)/.device/tools/zstd
cp -r .fla $W/fla && cd $W/fla
export PYTHONPATH=$W/fla PYTHONUNBUFFERED=1 FLA_CI_ENV=1 FLA_DISABLE_BACKEND_DISPATCH=1 TRITON_CACHE_DIR=$W/c
t0=$(date +%s)
python -m benchmarks.ops.run --op chunk_kda --base '' --modes fwd fwdbwd --custom-shapes '{"smoke": {"B": 1, "T": 1024, "H": 4, "D": 64}}' --json $W/r.json > $OUT/cold.log 2>&1; echo "cold rc=$? $(( $(date +%s) - t0 )) s"
cd $W/c
n=$(ls | wc -l); total=$(du -sb . | cut -f1)
t0=$(date +%s%N); tar -cf - . | $Z -q -3 -c > $W/whole.zst; t1=$(date +%s%N)
per=0; for e in *; do s=$(tar -cf - "$e" | $Z -q -3 -c | wc -c); per=$((per + s)); done; t2=$(date +%s%N)
per19=0; whole19=$(tar -cf - . | $Z -q -19 -c | wc -c)
echo "{\"entries\": $n, \"bytes\": $total, \"whole3\": $(stat -c %s $W/whole.zst), \"perEntry3\": $per, \"whole19\": $whole19, \"wholeMs\": $(( (t1-t0)/1000000 )), \"perEntryMs\": $(( (t2-t1)/1000000 ))}" | tee $OUT/frames.json
for e in *; do echo "$e $(du -sb $e | cut -f1) $(tar -cf - "$e" | $Z -q -3 -c | wc -c) $(ls $e | tr '\n' ',')"; done > $OUT/entries.txt
