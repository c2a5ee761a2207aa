# Sourced by scripts/test (never run): the bounded libFuzzer campaign over the
# fuzz targets of a build made with SHARDSCOPE_FUZZ (the asan preset).
# shellcheck shell=bash

# Limits every target runs under: one input may take 10 s (more is a hang),
# one allocation 256 MiB and the process 2 GiB. Inputs are a few KB, so an
# allocation that size means a count read from the input sized a container.
SHARDSCOPE_FUZZ_FLAGS=(-timeout=10 -malloc_limit_mb=256 -rss_limit_mb=2048 -print_final_stats=1)

# Runs a fuzz target with the sanitizer options of the campaign.
shardscope_fuzz_run() {
  ASAN_OPTIONS="halt_on_error=1 detect_leaks=1 ${ASAN_OPTIONS:-}" \
    UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 ${UBSAN_OPTIONS:-}" "$@"
}

# The libFuzzer dictionary of a target: tests/fuzz/<name>.dict, else json.dict.
shardscope_fuzz_dict() {
  local dir=$SHARDSCOPE_ROOT/tests/fuzz name=${1#fuzz_}
  if [[ -f $dir/$name.dict ]]; then echo "$dir/$name.dict"; else echo "$dir/json.dict"; fi
}

# One target for at most `seconds` and `runs` executions: new inputs go to
# the build's corpus (kept between runs; libFuzzer writes into the first
# directory only), seeds come from the source tree; the log and any crash
# input go under $out. Prints one line of figures; returns libFuzzer's status.
shardscope_fuzz_one() {
  local bin=$1 seconds=$2 runs=$3 out=$4 name
  name=$(basename "$bin")
  local corpus=$out/corpus/$name artifacts=$out/artifacts/$name/ log=$out/$name.log
  mkdir -p "$corpus" "$artifacts"
  rm -f "$artifacts"/*
  local seeds=("$SHARDSCOPE_ROOT/tests/fuzz/corpus/$name")
  [[ -d $SHARDSCOPE_ROOT/tests/fuzz/regressions/$name ]] && seeds+=("$SHARDSCOPE_ROOT/tests/fuzz/regressions/$name")
  local status=0 started=$SECONDS
  shardscope_fuzz_run "$bin" "${SHARDSCOPE_FUZZ_FLAGS[@]}" -max_total_time="$seconds" -runs="$runs" -dict="$(shardscope_fuzz_dict "$name")" \
    -artifact_prefix="$artifacts" "$corpus" "${seeds[@]}" >"$log" 2>&1 || status=$?
  local execs rate rss took
  took=$((SECONDS - started))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
  printf '%-16s %5ss %11s %8s %7s %8s MB\n' "$name" "$took" "${execs:-?}" "${rate:-?}" \
    "$(find "$corpus" -type f | wc -l)" "${rss:-?}"
  return "$status"
}

# Runs every fuzz target of build_dir, `jobs` at a time, within total_seconds
# of wall time, then prints the figures. A target stops at `runs` executions
# (the aim), so a fast one leaves its time to those still to start: each gets
# its share of the time left when it starts. Sets fuzz_passed and fuzz_failed
# (targets); for each failure prints the input and how to rerun it.
shardscope_fuzz_campaign() {
  local build=$1 total=$2 jobs=$3 runs=$4
  local out=$build/fuzz bins=() bin
  for bin in "$build"/tests/fuzz/fuzz_*; do
    [[ -x $bin && -f $bin ]] && bins+=("$bin")
  done
  fuzz_passed=0 fuzz_failed=0
  if ((${#bins[@]} == 0)); then
    shardscope_log "fuzz: no fuzz targets in $build/tests/fuzz"
    fuzz_failed=1
    return
  fi
  ((jobs > ${#bins[@]})) && jobs=${#bins[@]}
  shardscope_log "fuzz: ${#bins[@]} targets, $jobs at a time, ${total} s in all, each up to $runs executions"
  mkdir -p "$out"
  rm -f "$out"/*.line "$out"/*.status
  local names=() name deadline=$((SECONDS + total)) left=${#bins[@]} running seconds
  for bin in "${bins[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
    running=$(jobs -rp | wc -l)
    # This target's share of the core-seconds left, never past the deadline.
    seconds=$(((deadline - SECONDS) * jobs / (left + running)))
    ((seconds > deadline - SECONDS)) && seconds=$((deadline - SECONDS))
    ((seconds < 1)) && seconds=1
    left=$((left - 1))
    name=$(basename "$bin")
    names+=("$name")
    # Each job leaves its figures and its status in files: wait -n reaps jobs.
    (
      status=0
      shardscope_fuzz_one "$bin" "$seconds" "$runs" "$out" >"$out/$name.line" || status=$?
      echo "$status" >"$out/$name.status"
    ) &
  done
  wait
  printf '%-16s %6s %11s %8s %7s %11s\n' target time executions "per s" corpus "peak RSS"
  for name in "${names[@]}"; do cat "$out/$name.line"; done
  for name in "${names[@]}"; do
    local status
    status=$(cat "$out/$name.status" 2>/dev/null || echo 1)
    if ((status == 0)); then
      fuzz_passed=$((fuzz_passed + 1))
      continue
    fi
    local found
    found=$(find "$out/artifacts/$name" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | head -n 1)
    # The timeout is wall time: on a machine busy with other builds a quick
    # input can exceed it. A real hang times out again when run alone.
    if [[ $found == */timeout-* ]] &&
      shardscope_fuzz_run "$build/tests/fuzz/$name" "${SHARDSCOPE_FUZZ_FLAGS[@]}" "$found" >"$out/$name.rerun.log" 2>&1; then
      shardscope_log "fuzz: $name: an input timed out but ran in time alone (a busy machine): $found"
      fuzz_passed=$((fuzz_passed + 1))
      continue
    fi
    fuzz_failed=$((fuzz_failed + 1))
    shardscope_log "fuzz: $name failed (libFuzzer exit $status); its log: $out/$name.log"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz_[a-z_]+: )' "$out/$name.log" | head -n 5 >&2 || true
    if [[ -n $found ]]; then
      printf '  reproduce: %s %s\n' "$build/tests/fuzz/$name" "$found" >&2
      printf '  keep it:   cp %s tests/fuzz/regressions/%s/<what-it-is>.json  (a named ctest then replays it)\n' \
        "$found" "$name" >&2
    fi
  done
}
