#include "analysis/run_preflight.h"

#include "model/hardware_profile.h"

namespace shardscope {

void preflightRun(const RunConfig& config, const MachineMemory& machine, const std::string& force_hint) {
  if (config.clock == ClockKind::Modeled) {
    try {
      loadProfile(config.profileName());
    } catch (const ConfigError& e) {
      throw RunRefused("profile", e.what());
    }
  }
  try {
    checkRunFitsMachine(config, machine, force_hint);
  } catch (const ConfigError& e) {
    throw RunRefused("", e.what());
  }
}

}  // namespace shardscope
