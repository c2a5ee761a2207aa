#!/usr/bin/env bash
# The GPU session's one call on the device machine (CUDA 13, cmake, ninja, g++,
# PyTorch; no Qt, spdlog, Gloo, OpenBLAS or registry): unpack the carried Debian
# packages (tests/gpu/fetch_deps.sh), find NCCL and cuBLAS, configure the
# core-only preset's settings with CUDA ON for sm_90 only, build
# shardscope_gpu_check and shardscope-cli and run: the self-test table, the
# GEMM and collective benchmark tables, the engine checks (every strategy on
# cuda-emulated P=4: equivalence, ledger, timestamps, step times), the CLI's
# zero3 run with its trace, --backend cuda --launch processes at --ranks 1 (and
# at the GPU count when >= 2) against threads, and PyTorch's step at world size 1 for the ratio.
# Everything before the run also works on a CPU machine, where the check
# prints "skipped" and exits 0.
#
# Device tool call (from the repo root):
#   command: bash tests/gpu/check.sh     carry: [".gpu_deps"]     timeout_s: 420
# Options: --configure-only | --build-only; anything after -- goes to the check
# (e.g. -- --no-bench, -- --only gemm_lt_NN_bf16). Environment: SHARDSCOPE_GPU_BUILD
# (build dir), SHARDSCOPE_GPU_DEPS (.deb dir), SHARDSCOPE_CUDA_ARCHITECTURES, OUT.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${SHARDSCOPE_GPU_BUILD:-/tmp/shardscope-gpu-build}
debs=${SHARDSCOPE_GPU_DEPS:-$root/.gpu_deps}
prefix=/tmp/shardscope-deps
arch=${SHARDSCOPE_CUDA_ARCHITECTURES:-90-real}
out=${OUT:-$build/out}
mode=all
check_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --configure-only) mode=configure ;;
    --build-only) mode=build ;;
    --) shift; check_args=("$@"); break ;;
    *) echo "check.sh: unknown option $1 (see the header)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$build" "$out"
step() { printf '\n== %s\n' "$*"; }
t0=$(date +%s)

step "environment"
uname -srm
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>/dev/null ||
  echo "nvidia-smi: no GPU visible"
for tool in cmake ninja g++ nvcc pkg-config python3; do
  printf '  %-11s %s\n' "$tool" "$(command -v "$tool" || echo missing)"
done
cmake --version | head -1

cuda_root=""
if command -v nvcc >/dev/null; then cuda_root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")"); fi
if [ -z "$cuda_root" ] && [ -x /usr/local/cuda/bin/nvcc ]; then cuda_root=/usr/local/cuda; fi
[ -n "$cuda_root" ] || { echo "no nvcc found (PATH, /usr/local/cuda)"; exit 1; }
"$cuda_root/bin/nvcc" --version | tail -2
cmake_args=(-DCUDAToolkit_ROOT="$cuda_root")

# Python site-packages hold NCCL (nvidia-nccl-cu13) and maybe cuBLAS when the
# toolkit does not.
mapfile -t site_dirs < <(python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null || true)
find_one() {  # find_one NAME DIR...: the first file matching NAME, searching the dirs in order
  local name=$1 dir hit
  shift
  for dir in "$@"; do
    hit=$(find -H "$dir" -name "$name" \( -type f -o -type l \) 2>/dev/null | sort | head -1)
    if [ -n "$hit" ]; then echo "$hit"; return; fi
  done
}
extra_libdirs=""

step "cuBLAS"
find "$cuda_root"/lib64/ "$cuda_root"/targets/ -name 'libcublas*.so*' 2>/dev/null | sort | head -4
if [ -z "$(find_one 'libcublasLt.so*' "$cuda_root/lib64" "$cuda_root/targets")" ]; then
  lt=$(find_one 'libcublasLt.so*' "${site_dirs[@]}")
  blas=$(find_one 'libcublas.so*' "${site_dirs[@]}")
  echo "toolkit has no libcublasLt; python packages: ${lt:-none} ${blas:-none}"
  if [ -n "$lt" ] && [ -n "$blas" ]; then
    cmake_args+=(-DCUDA_cublasLt_LIBRARY="$lt" -DCUDA_cublas_LIBRARY="$blas")
    extra_libdirs="$extra_libdirs:$(dirname "$lt")"
  fi
fi

step "NCCL"
# Header and library from the same install, so their versions agree.
candidates=("$cuda_root/include:$cuda_root/lib64" "$cuda_root/include:$cuda_root/lib"
            "/usr/include:/usr/lib/x86_64-linux-gnu")
for dir in "${site_dirs[@]}"; do candidates+=("$dir/nvidia/nccl/include:$dir/nvidia/nccl/lib"); done
nccl_h="" nccl_so=""
for candidate in "${candidates[@]}"; do
  inc=${candidate%%:*} lib=${candidate#*:}
  so=$(find "$lib" -maxdepth 1 -name 'libnccl.so*' 2>/dev/null | sort | head -1)
  if [ -f "$inc/nccl.h" ] && [ -n "$so" ]; then nccl_h=$inc/nccl.h nccl_so=$so; break; fi
done
if [ -z "$nccl_h" ]; then echo "NCCL not found (${candidates[*]}): the CUDA backend needs it"; exit 1; fi
echo "  header  $nccl_h"
echo "  library $nccl_so"
grep -m1 'define NCCL_VERSION_CODE' "$nccl_h" || true
cmake_args+=(-DNCCL_INCLUDE_DIR="$(dirname "$nccl_h")" -DNCCL_LIBRARY="$nccl_so")
extra_libdirs="$extra_libdirs:$(dirname "$nccl_so")"

step "carried Debian packages (${debs})"
if compgen -G "$debs/*.deb" >/dev/null; then
  rm -rf "$prefix" && mkdir -p "$prefix"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
  # Gloo's export names its library by absolute path (/usr/lib/libgloo.so.0.5.0);
  # openblas.pc names /usr paths. Point both into the prefix.
  sed -i "s|\"/usr/lib/libgloo|\"$prefix/usr/lib/libgloo|g" "$prefix"/usr/share/cmake/Gloo/GlooTargets-*.cmake
  sed -i "s|=/usr/|=$prefix/usr/|" "$prefix"/usr/lib/x86_64-linux-gnu/openblas-pthread/pkgconfig/openblas.pc
  dep_libdirs="$prefix/usr/lib/x86_64-linux-gnu:$prefix/usr/lib:$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread"
  extra_libdirs="$extra_libdirs:$dep_libdirs"
  export PKG_CONFIG_PATH="$prefix/usr/lib/x86_64-linux-gnu/openblas-pthread/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  cmake_args+=(-DCMAKE_PREFIX_PATH="$prefix/usr"
               "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$dep_libdirs")
  if ! command -v pkg-config >/dev/null && [ -x "$prefix/usr/bin/pkgconf" ]; then
    cmake_args+=(-DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf")
  fi
  echo "unpacked $(find "$debs" -maxdepth 1 -name '*.deb' | wc -l) packages into $prefix"
else
  echo "none: spdlog, Gloo and OpenBLAS must already be installed"
fi
export LD_LIBRARY_PATH="${extra_libdirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

step "configure (core-only preset + CUDA ON, architectures $arch)"
# CMake 4 (pip's) refuses packages' old cmake_policy ranges without this.
export CMAKE_POLICY_VERSION_MINIMUM=3.5
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DSHARDSCOPE_BUILD_UI=OFF -DSHARDSCOPE_BUILD_TESTS=OFF \
  -DSHARDSCOPE_BUILD_BENCH=OFF -DSHARDSCOPE_CUDA=ON \
  -DSHARDSCOPE_CUDA_ARCHITECTURES="$arch" "${cmake_args[@]}" 2>&1 | tee "$out/configure.log" |
  grep -E 'ShardScope|CUDA|Error|error|Warning' || true
grep -q 'Build files have been written' "$out/configure.log" || { tail -30 "$out/configure.log"; exit 1; }
grep -E '^(spdlog_DIR|Gloo_DIR|fmt_DIR|NCCL_LIBRARY|CUDA_cublasLt_LIBRARY|PKG_CONFIG_EXECUTABLE)' "$build/CMakeCache.txt" || true
echo "configure took $(( $(date +%s) - t0 )) s"
[ "$mode" = configure ] && exit 0

step "build shardscope_gpu_check and shardscope-cli"
if ! ninja -C "$build" shardscope_gpu_check shardscope-cli >"$out/build.log" 2>&1; then
  grep -E -A5 'error|FAILED' "$out/build.log" | head -60
  tail -20 "$out/build.log"
  exit 1
fi
grep -E 'warning' "$out/build.log" || echo "no warnings"
echo "build done at $(( $(date +%s) - t0 )) s"
[ "$mode" = build ] && exit 0

step "run: self-tests, benchmarks, the engine on cuda-emulated P=4"
set +e
"$build/core/cuda/gpu_check/shardscope_gpu_check" --out "$out" "${check_args[@]}" 2>&1 | tee "$out/gpu_check.log"
rc=${PIPESTATUS[0]}
set -e
echo "check exit code $rc after $(( $(date +%s) - t0 )) s"

if grep -q '^GPU check skipped' "$out/gpu_check.log"; then exit "$rc"; fi

step "the CLI: zero3 on 4 emulated ranks, trace and summary"
set +e
"$build/app/shardscope-cli" run --backend cuda-emulated --strategy zero3 --ranks 4 --steps 3 \
  --trace "$out/t.json" --summary "$out/summary.json" 2>&1 | tee "$out/cli.log" | tail -40
cli_rc=${PIPESTATUS[0]}
set -e
echo "cli exit code $cli_rc"
[ "$cli_rc" = 0 ] || rc=1

step "the CLI: --backend cuda --launch processes (a worker per GPU, NCCL ids through the store)"
# Each rank process joins its groups with ncclCommInitRank under an id the
# group's first member put in the rendezvous store. One GPU still runs the
# whole path at --ranks 1; the cross-process comparison with threads needs two.
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
proc_runs=("1")
if [ "$gpus" -ge 2 ]; then proc_runs+=("$gpus"); else echo "only $gpus GPU: the multi-rank cross-process NCCL run is skipped (it needs >= 2 GPUs); --ranks 1 still runs"; fi
for n in "${proc_runs[@]}"; do
  for launch in threads processes; do
    set +e
    "$build/app/shardscope-cli" run --backend cuda --strategy zero3 --ranks "$n" --steps 3 --launch "$launch" \
      --summary "$out/cuda_${launch}_$n.json" >"$out/cuda_${launch}_$n.log" 2>&1
    prc=$?
    set -e
    tail -5 "$out/cuda_${launch}_$n.log"
    echo "cuda --ranks $n --launch $launch: exit code $prc"
    [ "$prc" = 0 ] || rc=1
  done
  # Losses of the two launches, side by side (the same NCCL reductions).
  python3 - "$out/cuda_threads_$n.json" "$out/cuda_processes_$n.json" <<'PY' || rc=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
la = [s["loss"] for s in a["steps"]]
lb = [s["loss"] for s in b["steps"]]
print("losses threads", la, "processes", lb)
ok = len(la) == len(lb) and all(abs(x - y) <= 1e-3 * max(1.0, abs(x)) for x, y in zip(la, lb))
print("processes match threads" if ok else "MISMATCH between processes and threads")
sys.exit(0 if ok else 1)
PY
done

step "PyTorch at world size 1 (same MLP, batch and precision)"
ws1=$(sed -n 's/^SHARDSCOPE_WS1_STEP_MS //p' "$out/gpu_check.log" | tail -1)
if [ -n "$ws1" ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  python3 "$root/tests/gpu/torch_mlp_step.py" 2>&1 | tee "$out/torch.log"
  torch_ms=$(awk '/^TORCH_STEP_MS/ { if (best == "" || $3 < best) best = $3 } END { print best }' "$out/torch.log")
  if [ -n "$torch_ms" ]; then
    awk -v s="$ws1" -v t="$torch_ms" 'BEGIN { printf "ShardScope %.3f ms, PyTorch (faster mode) %.3f ms: %.2fx (target <= 1.2x)\n", s, t, s / t }' |
      tee -a "$out/torch.log"
  fi
else
  echo "skipped: no world-size-1 figure from the check, or no PyTorch with CUDA"
fi
echo "done after $(( $(date +%s) - t0 )) s"
exit "$rc"
