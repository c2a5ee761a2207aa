// The "this-cpu" hardware profile: this machine measured, so modeled times of
// CPU runs can be set beside what the engine measures. The figures are
// achieved rates (compute_efficiency is 1), single-threaded per rank like the
// engine's streams, and fp32 sgemm stands in for "bf16" (CPUs have no bf16
// GEMM units the engine uses). Measured once (about a second), cached as JSON.
#pragma once

#include <string>

#include "model/hardware_profile.h"

namespace shardscope {

inline constexpr const char* kThisCpuProfile = "this-cpu";

// Measures this machine: single-thread OpenBLAS sgemm 512^3 (best of 5),
// memcpy of 64 MiB (best of 5; bytes read + written, as HBM figures count);
// then the CPU pricing (a `calibration` object, see rank/cost_model.h): the
// engine's own kernels of one residual MLP block (GEMMs, element-wise ops,
// weight conversions) and its AdamW on every core at once for 0.25 s each, as
// ranks sharing the cores run them; and a 2-rank Gloo group over TCP loopback
// beside busy cores (4 MiB f32 all-reduces for bandwidth, 100 two-element
// ones through a comm stream thread for the per-step latency). About three seconds; one calibration per machine, the same
// for every run. Touches no files. Throws std::runtime_error if the loopback
// group cannot connect.
HardwareProfile calibrateThisCpu();

// $XDG_CACHE_HOME/shardscope/this-cpu.json, else ~/.cache/shardscope/this-cpu.json;
// empty when neither XDG_CACHE_HOME nor HOME is set.
std::string thisCpuCachePath();

// Writes `profile` to thisCpuCachePath() (atomically, via rename) and returns
// the path. Throws ConfigError when there is no cache folder or it is not writable.
std::string writeThisCpuCache(const HardwareProfile& profile);

// The cached profile when there is one with the CPU pricing; else calibrates
// and caches (a cache that cannot be written is skipped). A cache that fails validation is a
// ConfigError naming the file: delete it or run `shardscope-cli profiles --calibrate`.
HardwareProfile loadOrCalibrateThisCpu();

// calibrateThisCpu(), then writeThisCpuCache() (a cache that cannot be written is skipped).
HardwareProfile calibrateAndCacheThisCpu();

}  // namespace shardscope
