#include "common/errors.h"
#include "memory/buffer.h"
#include "parallel/ddp_strategy.h"
#include "parallel/fsdp_strategy.h"
#include "parallel/strategy.h"
#include "parallel/zero_strategy.h"

namespace shardscope {

std::unique_ptr<Strategy> makeStrategy(RankEnv& env) {
  const std::string& s = env.config.strategy;
  if (s == "ddp") return std::make_unique<DdpStrategy>(env);
  if (s == "zero1") return std::make_unique<ZeroStrategy>(env, 1);
  if (s == "zero2") return std::make_unique<ZeroStrategy>(env, 2);
  if (s == "zero3" || s == "fsdp" || s == "hsdp") return std::make_unique<FsdpStrategy>(env);
  throw ConfigError("--strategy " + s + " is not yet available");
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
