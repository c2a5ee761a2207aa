#include "parallel/pipeline_stages.h"

#include <algorithm>
#include <limits>

#include "common/errors.h"
#include "model/model.h"

namespace shardscope {

PipelineStages::PipelineStages(int stages, int virtual_stages, const std::vector<double>& segment_flops)
    : m_stages(stages) {
  const int parts = stages * virtual_stages;
  const int n = static_cast<int>(segment_flops.size());
  if (parts < 1 || parts > n)
    throw ConfigError(std::to_string(parts) + " pipeline chunks need at least as many model segments; the model has " +
                      std::to_string(n));
  // best[k][i]: the least possible largest chunk when segments [0, i) form k chunks.
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + segment_flops[static_cast<size_t>(i)];
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(static_cast<size_t>(parts) + 1, std::vector<double>(static_cast<size_t>(n) + 1, kInf));
  std::vector<std::vector<int>> cut(best.size(), std::vector<int>(static_cast<size_t>(n) + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= parts; ++k)
    for (int i = k; i <= n - (parts - k); ++i)
      for (int j = k - 1; j < i; ++j) {
        const double cost = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        // Ties keep the earliest cut: earlier chunks no larger than later ones
        // (the first stage holds the most microbatches in flight under 1F1B).
        if (cost < best[k][i] * (1 - 1e-12)) {
          best[k][i] = cost;
          cut[k][i] = j;
        }
      }
  std::vector<int> bounds(static_cast<size_t>(parts) + 1);
  bounds[parts] = n;
  for (int k = parts; k > 0; --k) bounds[k - 1] = cut[k][bounds[k]];
  for (int c = 0; c < parts; ++c)
    m_chunks.push_back({c, c % stages, bounds[c], bounds[c + 1], prefix[bounds[c + 1]] - prefix[bounds[c]]});
}

std::vector<PipelineChunk> PipelineStages::chunksOf(int stage) const {
  std::vector<PipelineChunk> out;
  for (const PipelineChunk& c : m_chunks)
    if (c.stage == stage) out.push_back(c);
  return out;
}

int PipelineStages::chunkOfSegment(int segment) const {
  for (const PipelineChunk& c : m_chunks)
    if (segment >= c.first_segment && segment < c.last_segment) return c.index;
  return -1;
}

std::string PipelineStages::describe(int chunk, int layers) const {
  const PipelineChunk& c = this->chunk(chunk);
  // Segment 0 is the embedding, 1..L the blocks, L + 1 the head.
  const int first_block = std::max(c.first_segment, 1) - 1, last_block = std::min(c.last_segment - 1, layers) - 1;
  std::string text;
  if (last_block >= first_block)
    text = first_block == last_block ? "block " + std::to_string(first_block)
                                     : "blocks " + std::to_string(first_block) + "–" + std::to_string(last_block);
  const bool input = c.first_segment == 0, head = c.last_segment == layers + 2;
  if (input) text = text.empty() ? "the embedding" : "the embedding, " + text;
  if (head) text = text.empty() ? "the head" : text + " and the head";
  return text;
}

PipelineStages pipelineStagesFor(const RunConfig& config, const ModelSpec& spec) {
  MemoryLedger scratch(0, nullptr, nullptr, /*meta=*/true);
  const auto model = makeModel(spec, scratch, std::max(1, config.microBatchSize()), config.seed);
  std::vector<double> flops;
  for (int s = 0; s < spec.segmentCount(); ++s) flops.push_back(model->forwardFlops(s));
  const int v = config.pipelineSchedule() == PipelineSchedule::Interleaved && config.pp > 1 ? config.virtualStages() : 1;
  return PipelineStages(config.pp, v, flops);
}

}  // namespace shardscope
