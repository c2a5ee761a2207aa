#!/bin/bash
# Seconds the GUI takes to show a large Kineto trace: `shardscope --open FILE
# --screenshot` offscreen at 1920x1080 (start, read, parse, import, every view
# built and painted, the PNG written, exit), against the same for a two-event
# trace; the difference is the trace's own cost. The trace is the one
# bench_kineto_parse generates (SHARDSCOPE_BENCH_KINETO_MB, default 1000).
# Usage: tests/bench/gui_open_seconds.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
runs=${2:-3}
mb=${SHARDSCOPE_BENCH_KINETO_MB:-1000}
big=/tmp/shardscope_bench_kineto_v2_${mb}MB.json
small=tests/data/kineto/base_relative.json
# The memcpy row reads the trace, so it writes the file first when missing.
[ -f "$big" ] || SHARDSCOPE_BENCH_KINETO_MB=$mb "$build/tests/bench/bench_kineto_parse" --benchmark_filter=MemcpyTrace >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
seconds() {  # one GUI start on $1, wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  QT_QPA_PLATFORM=offscreen "$build/app/shardscope" --open "$1" --screenshot "$out/shot.png" --view timeline \
    --size 1920x1080 >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
for ((i = 1; i <= runs; ++i)); do
  s=$(seconds "$small")
  b=$(seconds "$big")
  printf 'run %d: two-event trace %.2f s, %s MB trace %.2f s, the trace itself %.2f s\n' "$i" "$s" "$mb" "$b" \
    "$(awk -v a="$s" -v b="$b" 'BEGIN { printf "%.3f", b - a }')"
done
