// DDP's bucket assignment, as PyTorch's compute_bucket_assignment_by_size:
// parameters in reverse registration order (the order backward produces their
// gradients) fill a bucket until it reaches its cap; the param that crosses the
// cap stays in it. Bucket 0 uses the small first cap so the first all-reduce
// starts early; the rest use bucket_cap.
#pragma once

#include <cstdint>
#include <vector>

#include "config/run_config.h"
#include "model/model_spec.h"

namespace shardscope {

struct BucketPlanEntry {
  int param = 0;        // index into ModelSpec::params()
  int64_t offset = 0;   // elements into the bucket's flat buffer
};

struct Bucket {
  int index = 0;
  std::vector<BucketPlanEntry> entries;  // in gradient-ready order
  int64_t elements = 0;
};

// cap and first_cap in bytes; elem_bytes: gradient element size (2 for bf16).
std::vector<Bucket> planBuckets(const ModelSpec& spec, int64_t cap_bytes, int64_t first_cap_bytes,
                                int elem_bytes);
// A run's plan: --bucket-mb and --first-bucket-mb (MiB) over the bf16
// gradients of `spec` (the run's model, or its TP slice). The engine plans
// once per run and hands the plan to every rank (RankEnv::buckets).
std::vector<Bucket> planBuckets(const RunConfig& c, const ModelSpec& spec);

}  // namespace shardscope
