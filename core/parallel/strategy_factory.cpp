#include <string>

#include "common/errors.h"
#include "memory/buffer.h"
#include "parallel/ddp_strategy.h"
#include "parallel/fsdp_strategy.h"
#include "parallel/pipeline_strategy.h"
#include "parallel/strategy.h"
#include "parallel/tensor_parallel.h"
#include "parallel/zero_strategy.h"

namespace shardscope {

std::unique_ptr<ParallelStrategy> makeStrategy(RankEnv& env) {
  if (env.config.pipelined()) return std::make_unique<PipelineStrategy>(env);
  switch (zeroStage(env.config.strategy)) {
    case 0: return std::make_unique<DdpStrategy>(env);
    case 1: return std::make_unique<ZeroStrategy>(env, 1);
    case 2: return std::make_unique<ZeroStrategy>(env, 2);
    default: return std::make_unique<FsdpStrategy>(env);  // zero3, fsdp, hsdp
  }
}

std::unique_ptr<Model> makeRankModel(RankEnv& env) {
  const int local_batch = env.config.batch / env.dp_size;  // a TP group's ranks share their samples
  if (env.ctx.device) {
    // The CUDA models have no tensor-parallel kernels (validate() refuses --tp there too).
    if (env.spec.tp() > 1)
      throw ConfigError("--tp " + std::to_string(env.spec.tp()) + " runs on --backend cpu or meta only: the " +
                        "CUDA models have no tensor-parallel path yet");
    return env.ctx.device->makeModel(env.spec, env.ctx.ledger, local_batch, env.config.seed);
  }
  std::unique_ptr<Model> model = makeModel(env.spec, env.ctx.ledger, local_batch, env.config.seed);
  model->setTensorParallel(env.tensor);
  return model;
}

std::vector<float> broadcastInitialWeights(RankEnv& env) {
  const auto n = static_cast<size_t>(env.spec.numParams());
  RankContext& ctx = env.ctx;
  std::vector<float> host(ctx.meta() ? 0 : n, 0.0f);
  // Data-parallel rank 0 of each axis initialises; under TP it takes its
  // slice of the full model's weights (the same numbers as without TP).
  if (env.dp_rank == 0 && !ctx.meta()) {
    if (env.tp_layout) {
      std::vector<float> full(static_cast<size_t>(env.tp_layout->global().numParams()));
      initModelParams(env.tp_layout->global(), env.config.seed, full.data());
      env.tp_layout->slice(full.data(), host.data());
    } else {
      initModelParams(env.spec, env.config.seed, host.data());
    }
  }
  if (!ctx.device) {
    env.world.broadcast(host.data(), n, DType::F32, 0, Lane::Comm);
    return host;
  }
  Buffer<float> staged(ctx.ledger, Category::Workspace, n);
  if (env.dp_rank == 0) ctx.ops().upload(staged.data(), host.data(), staged.bytes());
  env.world.broadcast(staged.data(), n, DType::F32, 0, Lane::Comm);
  ctx.ops().download(host.data(), staged.data(), staged.bytes());
  return host;
}

}  // namespace shardscope
