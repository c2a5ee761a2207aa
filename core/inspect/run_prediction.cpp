#include "inspect/run_prediction.h"

#include "inspect/event_store.h"

namespace shardscope {

std::optional<RunPrediction> predictRun(const EventStore& store) {
  const RunTrace& meta = store.meta();
  const std::optional<Strategy> strategy = store.strategy();
  if (!strategy || meta.params <= 0 || meta.ranks <= 0) return std::nullopt;
  RunPrediction p;
  p.params = meta.params;
  if (const RunConfig* c = store.config()) {
    p.config = *c;
    p.model_state_bytes = expectedModelStateBytes(p.config);
    p.traffic = expectedTraffic(p.config);
    p.gathered = expectedGatheredPeak(p.config);
  } else {
    // An older trace: its strategy and ranks, no model shape; the trace's own parameter count.
    p.config = formulaConfig(*strategy, meta.ranks, store.shardGroup());
    p.model_state_bytes = expectedModelStateBytes(p.config, meta.params);
    p.traffic = expectedTraffic(p.config, meta.params);
  }
  p.bytes_per_param = expectedBytesPerParam(p.config);
  p.model_state_formula = modelStateFormulaText(p.config);
  return p;
}

}  // namespace shardscope
