#include "parallel/shard_layout.h"

#include <algorithm>

namespace shardscope {

BucketShardLayout::BucketShardLayout(const ModelSpec& spec, const std::vector<Bucket>& buckets,
                                     int shards, int rank) {
  for (const Bucket& b : buckets) {
    const int64_t chunk = (b.elements + shards - 1) / shards;
    const int64_t lo = rank * chunk, hi = lo + chunk;  // owned range in bucket coordinates
    m_chunk.push_back(chunk);
    m_shardOffset.push_back(m_shardElements);
    const size_t first_span = m_spans.size();
    for (const BucketPlanEntry& e : b.entries) {
      const ParamInfo& p = spec.params()[e.param];
      const int64_t a = std::max(lo, e.offset), z = std::min(hi, e.offset + p.numel());
      if (a >= z) continue;
      m_spans.push_back({m_shardElements + (a - lo), p.offset + (a - e.offset), z - a});
    }
    m_bucketSpans.emplace_back(first_span, m_spans.size());
    m_shardElements += chunk;
  }
}

}  // namespace shardscope
