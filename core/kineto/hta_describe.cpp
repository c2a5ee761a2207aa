#include "kineto/hta_describe.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardscope::kineto {

double quantileLinear(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

HtaStats describeValues(std::vector<double> v) {
  HtaStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.count = static_cast<int64_t>(v.size());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  if (v.size() >= 2) {
    double sq = 0;
    for (double x : v) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / double(v.size() - 1));
  }
  s.min = v.front();
  s.max = v.back();
  s.p25 = quantileLinear(v, 0.25);
  s.p50 = quantileLinear(v, 0.50);
  s.p75 = quantileLinear(v, 0.75);
  return s;
}

}  // namespace shardscope::kineto
