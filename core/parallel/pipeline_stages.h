// Where the model's segments go in a pipeline: S·V contiguous model chunks
// (S stages, V chunks each under the interleaved schedule; chunk c on stage
// c mod S), the input segment (embedding) in chunk 0 and the head in the
// last. The split balances the chunks' forward cost under the run's model
// (a min-max contiguous partition of the segments' FLOPs), so a head with a
// large vocabulary costs its stage blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "model/model_spec.h"

namespace shardscope {

struct PipelineChunk {
  int index = 0;          // global chunk, 0 .. S·V − 1
  int stage = 0;          // index mod S
  int first_segment = 0;  // segments [first_segment, last_segment)
  int last_segment = 0;
  double flops = 0;       // forward FLOPs of one microbatch through it
};

class PipelineStages {
 public:
  // segment_flops: forward FLOPs of each segment (Model::forwardFlops).
  PipelineStages(int stages, int virtual_stages, const std::vector<double>& segment_flops);
  int stages() const { return m_stages; }
  int chunkCount() const { return static_cast<int>(m_chunks.size()); }
  const PipelineChunk& chunk(int index) const { return m_chunks.at(static_cast<size_t>(index)); }
  // The chunks stage s holds, in model order.
  std::vector<PipelineChunk> chunksOf(int stage) const;
  // The chunk holding a segment.
  int chunkOfSegment(int segment) const;
  // "blocks 0–11 and the embedding", for the window and the summary.
  std::string describe(int chunk, int layers) const;

 private:
  int m_stages;
  std::vector<PipelineChunk> m_chunks;
};

// The split a run uses: `spec` (one TP rank's slice) priced for one
// microbatch of the run's model; the engine, the summary and the views all
// take the split from here.
PipelineStages pipelineStagesFor(const RunConfig& config, const ModelSpec& spec);

}  // namespace shardscope
