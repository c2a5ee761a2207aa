#include "parallel/bucket_plan.h"

#include "common/units.h"
#include "tensor/bf16.h"

namespace shardscope {

std::vector<Bucket> planBuckets(const ModelSpec& spec, int64_t cap_bytes, int64_t first_cap_bytes,
                                int elem_bytes) {
  std::vector<Bucket> buckets;
  Bucket current;
  const auto& params = spec.params();
  for (int i = static_cast<int>(params.size()) - 1; i >= 0; --i) {
    current.entries.push_back({i, current.elements});
    current.elements += params[i].numel();
    const int64_t cap = buckets.empty() ? first_cap_bytes : cap_bytes;
    if (current.elements * elem_bytes >= cap) {
      current.index = static_cast<int>(buckets.size());
      buckets.push_back(std::move(current));
      current = Bucket{};
    }
  }
  if (!current.entries.empty()) {
    current.index = static_cast<int>(buckets.size());
    buckets.push_back(std::move(current));
  }
  return buckets;
}

std::vector<Bucket> planBuckets(const RunConfig& c, const ModelSpec& spec) {
  return planBuckets(spec, mibToBytes(c.bucket_mb), mibToBytes(c.first_bucket_mb), static_cast<int>(sizeof(bf16)));
}

}  // namespace shardscope
