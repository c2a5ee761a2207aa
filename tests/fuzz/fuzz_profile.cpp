// A hardware profile as `--profile FILE.json` reads it: the strict reader,
// then the cost model the modeled clock prices ops with. A bad profile must
// end in one ConfigError naming the field. A profile that loads must price
// ops of a real size (up to a 1 TFLOP GEMM, a 10 GB collective) as a
// non-negative time in range (no out-of-range rounding), and must write out
// (as the this-cpu cache is written) to a document that loads.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "model/hardware_profile.h"
#include "rank/cost_model.h"

using namespace shardscope;

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_profile: %s: %s\n", what, detail.c_str());
  std::abort();
}

// Ten years in ns: far above any op, far below where int64 ns overflow.
constexpr int64_t kMaxOpNs = int64_t(10) * 365 * 24 * 3600 * 1'000'000'000;

void requireTime(int64_t ns, const char* op) {
  if (ns < 0 || ns > kMaxOpNs) finding("the cost model prices an op out of range", std::string(op) + " = " + std::to_string(ns) + " ns");
}

void priceOps(const HardwareProfile& profile) {
  const CostModel cost(profile);
  // From one tiny op to a large GEMM (1 TFLOP over 1 GB).
  for (double scale : {1.0, 1e6, 1e12}) {
    requireTime(cost.computeNs(scale, scale / 1000), "computeNs");
    requireTime(cost.memoryNs(scale / 1000), "memoryNs");
  }
  const int per_node = profile.gpus_per_node;
  const std::vector<int> intra = {0, per_node > 1 ? 1 : 0};
  const std::vector<int> inter = {0, per_node};
  for (const auto* members : {&intra, &inter})
    for (EventKind kind : {EventKind::AllReduce, EventKind::AllGather, EventKind::ReduceScatter})
      for (double bytes : {1.0, 1e6, 1e10}) requireTime(cost.collectiveNs(kind, bytes, *members), "collectiveNs");
  // A calibrated profile prices GEMMs by shape: a skinny, a batched and a big
  // one make a block whose rate must be a positive finite FLOP/s (an absurd
  // profile may make it so slow that a run's op ends in a RunError naming
  // the profile, as any op past the modeled clock's range does).
  if (!profile.calibration) return;
  BlockWork work;
  work.gemms = {{1, 1, 1}, {2048, 2048, 128, 64, false}, {16384, 64, 8192}, {65536, 65536, 8192}};
  work.memory_bytes = 1e9;
  for (const GemmShape& g : work.gemms) {
    const double seconds = cost.gemmSeconds(g);
    if (!(seconds > 0) || !std::isfinite(seconds)) finding("a GEMM's price is not a positive finite time", std::to_string(seconds));
    work.flops += g.flops();
  }
  CostModel priced(profile);
  priced.priceComputeBy(work);
  if (!(priced.computeRate() > 0) || !std::isfinite(priced.computeRate()))
    finding("a block's rate is not a positive finite FLOP/s", std::to_string(priced.computeRate()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  HardwareProfile profile;
  try {
    // No ".json" ending: the name need not match a file's stem.
    profile = parseProfile(json, "fuzz-profile");
  } catch (const ConfigError&) {
    return 0;
  }
  priceOps(profile);
  std::ostringstream written;
  writeProfileJson(profile, written);
  try {
    (void)parseProfile(written.str(), "fuzz-profile");
  } catch (const ConfigError& e) {
    finding("a loaded profile, written out, does not load again", e.what());
  }
  return 0;
}
