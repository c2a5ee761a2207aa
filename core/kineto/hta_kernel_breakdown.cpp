#include "kineto/hta_kernel_breakdown.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "kineto/hta_describe.h"

namespace shardscope::kineto {

namespace {

// sum, max, min, mean, std (ddof 1, 0 for one value: HTA's fillna(0)) of values.
HtaKernelRow aggregateKernelRow(std::string name, const std::vector<double>& v) {
  HtaKernelRow r;
  r.name = std::move(name);
  double sum = 0;
  r.max_ns = v.front();
  r.min_ns = v.front();
  for (double x : v) {
    sum += x;
    r.max_ns = std::max(r.max_ns, x);
    r.min_ns = std::min(r.min_ns, x);
  }
  r.sum_ns = sum;
  r.mean_ns = sum / double(v.size());
  if (v.size() >= 2) {
    double sq = 0;
    for (double x : v) sq += (x - r.mean_ns) * (x - r.mean_ns);
    r.std_ns = std::sqrt(sq / double(v.size() - 1));
  }
  return r;
}

HtaKernelTypeBreakdown kernelTypeBreakdown(const RankTrace& t, const HtaSelection& s, HtaKernelType type, int num_kernels,
                                   double ratio) {
  HtaKernelTypeBreakdown b;
  b.type = type;
  std::map<std::string_view, std::vector<double>> by_name;  // HTA's groupby("name"): sorted by name
  for (const HtaKernel& k : s.kernels)
    if (k.type == type) by_name[t.str(t.events[k.event].name)].push_back(double(k.end_ns - k.ts_ns));
  for (const auto& [name, durs] : by_name) {
    HtaKernelRow r = aggregateKernelRow(std::string(name), durs);
    r.kernels = static_cast<int64_t>(durs.size());
    b.rows.push_back(std::move(r));
  }
  // sort_values("sum", ascending=False); ties keep the name order.
  std::stable_sort(b.rows.begin(), b.rows.end(), [](const auto& a, const auto& c) { return a.sum_ns > c.sum_ns; });
  if (static_cast<int64_t>(b.rows.size()) <= num_kernels) return b;

  b.grouped = true;
  std::vector<double> cumsum;
  double running = 0;
  for (const HtaKernelRow& r : b.rows) cumsum.push_back(running += r.sum_ns);
  const double q = quantileLinear(cumsum, ratio);  // cumsum is ascending: already sorted
  std::vector<HtaKernelRow> kept;
  std::vector<double> other_sums;
  int64_t other_kernels = 0;
  for (size_t i = 0; i < b.rows.size(); ++i) {
    if (cumsum[i] > q || static_cast<int64_t>(i) >= num_kernels) {
      other_sums.push_back(b.rows[i].sum_ns);
      other_kernels += b.rows[i].kernels;
      continue;
    }
    HtaKernelRow r = aggregateKernelRow(b.rows[i].name, {b.rows[i].sum_ns});
    r.kernels = b.rows[i].kernels;
    kept.push_back(std::move(r));
  }
  if (!other_sums.empty()) {
    HtaKernelRow o = aggregateKernelRow("others", other_sums);
    o.names = static_cast<int64_t>(other_sums.size());
    o.kernels = other_kernels;
    kept.push_back(std::move(o));
  }
  b.rows = std::move(kept);
  return b;
}

}  // namespace

HtaKernelBreakdown computeHtaKernelBreakdown(const RankTrace& t, const HtaSelection& s, int num_kernels,
                                             double duration_ratio) {
  HtaKernelBreakdown out;
  for (HtaKernelType type : {HtaKernelType::Computation, HtaKernelType::Communication, HtaKernelType::Memory}) {
    HtaKernelTypeBreakdown b = kernelTypeBreakdown(t, s, type, num_kernels, duration_ratio);
    if (!b.rows.empty()) out.types.push_back(std::move(b));
  }
  return out;
}

}  // namespace shardscope::kineto
