#include "common/errors.h"
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

}  // namespace shardscope
