#!/bin/bash
# Seconds `shardscope-cli analyze` takes on a PyTorch memory snapshot of N
# trace entries (default 1000000), generated here by
# tests/data/postmortem/make_fixtures.py --big (stdlib pickle, protocol 4):
# read, unpickle, rebuild allocated/reserved over the trace, categories, report.
# Usage: tests/bench/postmortem_analyze_seconds.sh [BUILD_DIR] [RUNS] [ENTRIES]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
runs=${2:-3}
entries=${3:-1000000}
snap=/tmp/shardscope_bench_snapshot_${entries}.pickle
[ -f "$snap" ] || /usr/bin/python3 tests/data/postmortem/make_fixtures.py --big "$entries" "$snap"
for ((i = 1; i <= runs; ++i)); do
  t0=$(date +%s.%N)
  "$build/app/shardscope-cli" analyze "$snap" >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v i="$i" -v n="$entries" -v mb="$(du -m "$snap" | cut -f1)" \
    'BEGIN { printf "run %d: %d-entry snapshot (%d MB) analyzed in %.2f s\n", i, n, mb, b - a }'
done
