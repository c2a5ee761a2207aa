#!/usr/bin/env bash
# Run HERE (a CPU machine with Debian's registry), once per GPU session: downloads
# the Debian packages that shardscope_core links and the GPU machine lacks (no
# spdlog, Gloo or OpenBLAS there, no registry to fetch them), into .gpu_deps/ at
# the repository root, which check.sh unpacks into /tmp/shardscope-deps there.
# Then call the device tool with carry [".gpu_deps"] and `bash tests/gpu/check.sh`.
# Usage: bash tests/gpu/fetch_deps.sh [DIR]     (DIR default: <repo>/.gpu_deps)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:-$root/.gpu_deps}

# What core links (cmake/Dependencies.cmake, core/CMakeLists.txt) and what those
# shared libraries need at link and run time (their NEEDED entries), by package:
packages=(
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9            # spdlog::spdlog -> libfmt.so.9
  libgloo-dev libgloo0                                       # gloo (GlooConfig.cmake)
  libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200  # NEEDED by libgloo.so.0
  libopenblas-pthread-dev libopenblas0-pthread               # openblas.pc, cblas.h, libopenblas
  libgfortran5 libquadmath0                                  # NEEDED by libopenblas.so.0
  pkgconf-bin libpkgconf3                                    # pkg-config, if the image has none
)

mkdir -p "$dir"
rm -f "$dir"/*.deb
(cd "$dir" && apt-get download "${packages[@]}")
ls -l "$dir"
du -sh "$dir"

# Carried, never committed: the device tool carries ignored paths named in `carry`.
if [ "$dir" = "$root/.gpu_deps" ] && [ -d "$root/.git" ] &&
   ! grep -qx '/.gpu_deps/' "$root/.git/info/exclude" 2>/dev/null; then
  echo '/.gpu_deps/' >> "$root/.git/info/exclude"
  echo "added /.gpu_deps/ to .git/info/exclude"
fi
