#include "common/errors.h"
#include "memory/buffer.h"
#include "parallel/ddp_strategy.h"
#include "parallel/fsdp_strategy.h"
#include "parallel/strategy.h"
#include "parallel/zero_strategy.h"

namespace shardscope {

std::unique_ptr<ParallelStrategy> makeStrategy(RankEnv& env) {
  switch (zeroStage(env.config.strategy)) {
    case 0: return std::make_unique<DdpStrategy>(env);
    case 1: return std::make_unique<ZeroStrategy>(env, 1);
    case 2: return std::make_unique<ZeroStrategy>(env, 2);
    default: return std::make_unique<FsdpStrategy>(env);  // zero3, fsdp, hsdp
  }
}

std::unique_ptr<Model> makeRankModel(RankEnv& env) {
  const int local_batch = env.config.batch / env.config.ranks;
  if (env.ctx.device) return env.ctx.device->makeModel(env.spec, env.ctx.ledger, local_batch, env.config.seed);
  return makeModel(env.spec, env.ctx.ledger, local_batch, env.config.seed);
}

std::vector<float> broadcastInitialWeights(RankEnv& env) {
  const auto n = static_cast<size_t>(env.spec.numParams());
  RankContext& ctx = env.ctx;
  std::vector<float> host(ctx.meta() ? 0 : n, 0.0f);
  if (ctx.rank == 0 && !ctx.meta()) initModelParams(env.spec, env.config.seed, host.data());
  if (!ctx.device) {
    env.world.broadcast(host.data(), n, DType::F32, 0, Lane::Comm);
    return host;
  }
  Buffer<float> staged(ctx.ledger, Category::Workspace, n);
  if (ctx.rank == 0) ctx.ops().upload(staged.data(), host.data(), staged.bytes());
  env.world.broadcast(staged.data(), n, DType::F32, 0, Lane::Comm);
  ctx.ops().download(host.data(), staged.data(), staged.bytes());
  return host;
}

}  // namespace shardscope
