#include "analysis/local_validation.h"

#include <algorithm>

#include "common/units.h"
#include "engine/run.h"
#include "model/cpu_calibration.h"

namespace shardscope {

namespace {

double lastStepSeconds(const RunResult& result) {
  int64_t wall = 0;
  for (const StepMetrics& m : result.last_step) wall = std::max(wall, m.wall_ns);
  return nsToSeconds(wall);
}

LocalCheck localCheck(std::string name, Strategy strategy, ModelKind kind) {
  RunConfig c;
  c.strategy = strategy;
  c.ranks = 2;
  c.steps = 3;  // the last is timed: the first pays for warm caches
  c.model.kind = kind;
  if (kind == ModelKind::Gpt) {
    c.model.layers = 2;
    c.model.hidden = 128;
    c.model.heads = 4;
    c.model.seq = 64;
    c.batch = 8;
  } else {
    c.model.layers = 4;
    c.model.hidden = 256;
    c.batch = 64;
  }
  return {std::move(name), c};
}

}  // namespace

std::vector<LocalCheck> localChecks() {
  return {localCheck("ddp, 2 ranks, residual MLP 4 x 256", Strategy::Ddp, ModelKind::Mlp),
          localCheck("zero3, 2 ranks, residual MLP 4 x 256", Strategy::Zero3, ModelKind::Mlp),
          localCheck("ddp, 2 ranks, GPT 2 x 128, seq 64", Strategy::Ddp, ModelKind::Gpt)};
}

void runLocalChecks(std::vector<LocalCheck>& checks, const std::string& profile) {
  for (LocalCheck& check : checks) {
    std::vector<double> measured;
    for (int i = 0; i < kLocalMeasuredRuns; ++i) measured.push_back(lastStepSeconds(Run(check.config).execute()));
    std::sort(measured.begin(), measured.end());
    check.measured_s = measured[measured.size() / 2];
    RunConfig modeled = check.config;
    modeled.backend = Backend::Meta;
    modeled.clock = ClockKind::Modeled;
    modeled.profile = profile;
    check.modeled_s = lastStepSeconds(Run(modeled).execute());
  }
}

}  // namespace shardscope
