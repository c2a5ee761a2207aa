# Shared by scripts/test and scripts/run (sourced, never run): the Debian
# packages ShardScope needs, listed only here, and the helpers both scripts use.
# Installs only what dpkg says is missing, so a ready machine costs no apt call.
# shellcheck shell=bash

SHARDSCOPE_DEB_PACKAGES=(
  build-essential          # g++ 12 with its libtsan/libasan/libubsan runtimes
  clang libclang-rt-dev    # the asan preset and tests/fuzz: clang with libFuzzer and its sanitizers
  lld                      # links the many test executables several times faster than ld.bfd
  cmake ninja-build pkg-config
  qt6-base-dev qt6-svg-dev # Core, Gui, Widgets, PrintSupport, Test; Svg
  libgl1-mesa-dev          # Qt6Gui's CMake package needs OpenGL
  libxkbcommon-dev         # and looks for XKB (optional, but says "Could NOT find")
  libqcustomplot-dev libqcustomplot2.1-qt6
  libspdlog-dev libgloo-dev libopenblas-dev
  libhiredis-dev           # Gloo's RedisStore header (--rdzv redis://)
  libzmq3-dev cppzmq-dev   # --launch processes: the ranks' events travel to the launcher
  redis-server             # tests: a two-node rendezvous on loopback
  openmpi-bin              # tests: --launch env under mpirun
  nlohmann-json3-dev       # the one JSON library (traces, profiles, summaries, presets)
  libbenchmark-dev         # tests/bench
  libsimdjson-dev zlib1g-dev # core/kineto: PyTorch profiler traces, .json.gz
  libdeflate-dev           # and a whole .json.gz inflated about twice as fast as zlib
  xvfb xauth               # xvfb-run, for the GUI on a machine without a display
  fonts-dejavu-core        # offscreen Qt still needs one font to lay out text
  dpkg-dev                 # the .deb: dpkg-shlibdeps writes its Depends (cpack DEB, SHLIBDEPS ON)
  help2man                 # the package's man pages, from each program's --help
  desktop-file-utils       # tests/package: desktop-file-validate on the .desktop entry
  lintian                  # tests/package: the .deb must have no lintian errors
  appstream                # tests/package: appstreamcli validate on the AppStream metainfo
)

shardscope_log() { printf '==> %s\n' "$*" >&2; }

shardscope_die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# Parallel build and test jobs; checked here so a bad value stops at once.
SHARDSCOPE_JOBS=${SHARDSCOPE_JOBS:-$(nproc 2>/dev/null || echo 2)}
[[ $SHARDSCOPE_JOBS =~ ^[1-9][0-9]*$ ]] ||
  shardscope_die "SHARDSCOPE_JOBS must be a positive integer, not '$SHARDSCOPE_JOBS'"

# Prints the packages of SHARDSCOPE_DEB_PACKAGES that are not installed.
shardscope_missing_packages() {
  local pkg
  for pkg in "${SHARDSCOPE_DEB_PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null) == ii* ]] || echo "$pkg"
  done
}

# Installs missing packages as root; elsewhere names them and exits 1. Off
# Debian (no dpkg-query) it trusts the machine and lets CMake name what lacks.
shardscope_ensure_deps() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    shardscope_log "no dpkg-query: not a Debian system, skipping the package check"
    return 0
  fi
  local missing
  mapfile -t missing < <(shardscope_missing_packages)
  ((${#missing[@]} == 0)) && return 0
  if ((EUID != 0)); then
    printf 'error: missing Debian packages: %s\n' "${missing[*]}" >&2
    printf 'install them with:\n  sudo apt-get update && sudo apt-get install --no-install-recommends %s\n' \
      "${missing[*]}" >&2
    exit 1
  fi
  shardscope_log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Wait for another apt (e.g. a boot-time update) instead of failing at once.
  local lock=(-o DPkg::Lock::Timeout=300)
  apt-get "${lock[@]}" update -q
  apt-get "${lock[@]}" install -y -q --no-install-recommends "${missing[@]}" </dev/null
}

SHARDSCOPE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Configures and builds one preset of CMakePresets.json; extra arguments go to
# cmake --build. With --reuse, an existing build dir newer than the presets is
# not reconfigured (ninja still re-runs CMake when a CMakeLists.txt changes).
shardscope_build_preset() {
  local reuse=0
  if [[ $1 == --reuse ]]; then reuse=1; shift; fi
  local preset=$1
  shift
  local dir=$SHARDSCOPE_ROOT/build/$preset
  if ((!reuse)) || [[ ! -f $dir/build.ninja || $SHARDSCOPE_ROOT/CMakePresets.json -nt $dir/CMakeCache.txt ]]; then
    (cd "$SHARDSCOPE_ROOT" && cmake --preset "$preset") || return 1
  fi
  (cd "$SHARDSCOPE_ROOT" && cmake --build --preset "$preset" -j "$SHARDSCOPE_JOBS" "$@")
}
