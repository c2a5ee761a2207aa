// pandas' Series.describe() as HTA's summaries print it: count, mean, std
// (sample, ddof 1: NaN below two values), min, the 25/50/75 % quantiles
// (linear interpolation between the sorted values) and max. NaN when empty.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace shardscope::kineto {

inline constexpr double kHtaNoValue = std::numeric_limits<double>::quiet_NaN();

struct HtaStats {
  int64_t count = 0;
  // NaN where undefined; stddev is pandas' "std".
  double mean = kHtaNoValue, stddev = kHtaNoValue, min = kHtaNoValue, p25 = kHtaNoValue, p50 = kHtaNoValue,
         p75 = kHtaNoValue, max = kHtaNoValue;
};

// pandas' Series.quantile(q) (interpolation "linear") of sorted values; NaN when empty.
double quantileLinear(const std::vector<double>& sorted, double q);

HtaStats describeValues(std::vector<double> values);

}  // namespace shardscope::kineto
