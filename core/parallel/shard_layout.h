// Where a rank's flat shard lives in the model. ZeRO-1/2 shard every bucket
// (padded to a multiple of P) into P equal chunks; rank r owns chunk r of each
// bucket, and its shard is those chunks concatenated in bucket order — so one
// bucket's reduce-scatter output and all-gather input are contiguous in it.
// Spans map shard elements back to the flat parameter vector; padding maps nowhere.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_spec.h"
#include "parallel/bucket_plan.h"

namespace shardscope {

struct ShardSpan {
  int64_t shard_offset = 0;  // elements into the rank's shard
  int64_t flat_offset = 0;   // elements into the flat parameter vector
  int64_t count = 0;
};

class BucketShardLayout {
 public:
  BucketShardLayout(const ModelSpec& spec, const std::vector<Bucket>& buckets, int shards, int rank);

  int64_t shardElements() const { return m_shardElements; }            // incl. padding
  int64_t chunk(int bucket) const { return m_chunk[bucket]; }            // elements per rank
  int64_t shardOffset(int bucket) const { return m_shardOffset[bucket]; }
  const std::vector<ShardSpan>& spans() const { return m_spans; }
  // Spans of one bucket only (a contiguous range of spans()).
  std::pair<size_t, size_t> bucketSpans(int bucket) const { return m_bucketSpans[bucket]; }

  // shard[s] = full[flat] over the spans (padding left untouched).
  template <class T>
  void gather(const T* full, T* shard) const {
    for (const ShardSpan& s : m_spans)
      for (int64_t i = 0; i < s.count; ++i) shard[s.shard_offset + i] = full[s.flat_offset + i];
  }
  template <class T>
  void scatter(const T* shard, T* full) const {
    for (const ShardSpan& s : m_spans)
      for (int64_t i = 0; i < s.count; ++i) full[s.flat_offset + i] = shard[s.shard_offset + i];
  }

 private:
  int64_t m_shardElements = 0;
  std::vector<int64_t> m_chunk, m_shardOffset;
  std::vector<ShardSpan> m_spans;
  std::vector<std::pair<size_t, size_t>> m_bucketSpans;
};

}  // namespace shardscope
