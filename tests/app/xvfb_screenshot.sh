#!/usr/bin/env bash
# Starts the real shardscope GUI on the xcb platform under Xvfb, runs a preset
# to the end, grabs the window and checks the PNG is not blank (png_check).
# Exit 77 (ctest SKIP) when xvfb-run is missing: a machine without it cannot
# say anything about the GUI, which is not a failure of the GUI.
# Usage: xvfb_screenshot.sh SHARDSCOPE PNG_CHECK XVFB_RUN OUT.png [PRESET]
set -euo pipefail

shardscope=$1 png_check=$2 xvfb_run=$3 out=$4 preset=${5:-fsdp-prefetch-on-off}
width=1600 height=1000

if [[ -z $xvfb_run || ! -x $xvfb_run ]]; then
  echo "SKIP: xvfb-run not found (Debian: apt-get install xvfb xauth)"
  exit 77
fi

# A private home: saved window state or a last-used preset must not change the picture.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/runtime" && chmod 700 "$scratch/runtime"
rm -f "$out"

status=0
HOME=$scratch XDG_CONFIG_HOME=$scratch/config XDG_RUNTIME_DIR=$scratch/runtime QT_QPA_PLATFORM=xcb \
  timeout 60 "$xvfb_run" -a -s "-screen 0 ${width}x${height}x24" \
  "$shardscope" --screenshot "$out" --run --preset "$preset" --size "${width}x${height}" || status=$?
if ((status != 0)); then
  echo "FAIL: shardscope --screenshot exited with $status (124: it ran past 60 s)"
  exit 1
fi
"$png_check" "$out" "$width" "$height"
