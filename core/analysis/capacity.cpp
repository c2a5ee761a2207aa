#include "analysis/capacity.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "analysis/formulas.h"
#include "common/checked_math.h"
#include "common/errors.h"

namespace shardscope {

namespace {

// Up to this many params, 16 N stays far inside int64 (1.6e16 < 9.2e18).
constexpr int64_t kMaxParams = 1'000'000'000'000'000;

}  // namespace

int64_t parseParamCount(const std::string& flag, const std::string& text) {
  const std::string hint = " (e.g. 124M, 7B, 7e9, 70B, 1.5T or a plain count)";
  std::string digits = text;
  double scale = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k': case 'K': scale = 1e3; break;
      case 'm': case 'M': scale = 1e6; break;
      case 'b': case 'B': scale = 1e9; break;
      case 't': case 'T': scale = 1e12; break;
      default: break;
    }
    if (scale != 1) digits.pop_back();
  }
  double v = 0;
  const char* end = digits.data() + digits.size();
  const auto [stop, ec] = std::from_chars(digits.data(), end, v);
  // from_chars also reads "inf" and "nan"; they are rejected here, a '-' below.
  if (digits.empty() || ec != std::errc() || stop != end || !std::isfinite(v))
    throw ConfigError(flag + " expects a parameter count, got '" + text + "'" + hint);
  const double n = v * scale;
  if (!(n >= 1) || n > static_cast<double>(kMaxParams))
    throw ConfigError(flag + " must be in 1..1e15 parameters, got '" + text + "'");
  const double whole = std::round(n);
  if (std::abs(n - whole) > 1e-6 * std::max(1.0, n))
    throw ConfigError(flag + " must be a whole number of parameters, got '" + text + "'");
  return static_cast<int64_t>(whole);
}

CapacityReport computeCapacity(const CapacityInput& in) {
  if (in.params < 1 || in.params > kMaxParams) {
    std::ostringstream os;
    os << "--params must be in 1..1e15, got " << in.params;
    throw ConfigError(os.str());
  }
  if (in.ranks < 1) throw ConfigError("--ranks must be at least 1, got " + std::to_string(in.ranks));
  if (!(in.capacity_bytes > 0) || !std::isfinite(in.capacity_bytes)) {
    std::ostringstream os;
    os << "--capacity-gb must be a positive number of GB, got " << in.capacity_bytes / kBytesPerGb;
    throw ConfigError(os.str());
  }
  if (in.shard_group < 0 || (in.shard_group > 0 && in.ranks % in.shard_group != 0)) {
    std::ostringstream os;
    os << "--shard-group " << in.shard_group << " must divide --ranks " << in.ranks
       << " (hsdp shards within groups of G ranks and replicates across P/G groups); divisors:";
    for (int g = 1; g <= in.ranks && g <= 1024; ++g)
      if (in.ranks % g == 0) os << " " << g;
    throw ConfigError(os.str());
  }

  CapacityReport r;
  r.input = in;
  std::vector<Strategy> order = {Strategy::Ddp, Strategy::Zero1, Strategy::Zero2};
  if (in.shard_group > 0) order.push_back(Strategy::Hsdp);
  order.push_back(Strategy::Zero3);
  for (Strategy stage : order) {
    StageCapacity s;
    s.stage = stage;
    const RunConfig stage_run = formulaConfig(stage, in.ranks, in.shard_group);
    s.bytes_per_param = expectedBytesPerParam(stage_run);
    RunConfig whole = stage_run;  // the job: P·T ranks, each holding a 1/T slice
    whole.ranks = in.ranks * in.tp;
    whole.tp = in.tp;
    s.bytes_per_model_param = expectedBytesPerParam(whole);
    s.bytes_per_rank = expectedModelStateBytesRoundedUp(stage_run, in.params);
    s.fits = static_cast<double>(s.bytes_per_rank) <= in.capacity_bytes;
    if (s.fits && !r.smallest_fitting_stage) r.smallest_fitting_stage = stage;
    r.stages.push_back(s);
  }
  // zero3 fits on P ranks when 16 ceil(N/P) <= C, i.e. ceil(N/P) <= floor(C/16).
  const double max_shard = std::floor(in.capacity_bytes / 16.0);
  r.zero3_min_ranks =
      max_shard < 1 ? 0 : (max_shard >= static_cast<double>(in.params) ? 1 : ceilDiv(in.params, static_cast<int64_t>(max_shard)));
  return r;
}

}  // namespace shardscope
