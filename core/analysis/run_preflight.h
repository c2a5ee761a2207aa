// What would stop a run before its first step, found without starting it: a
// hardware profile that does not load (modeled clock) and a run bigger than
// this machine. A preset's runs are all checked before the first one starts,
// so a bad profile in its second run is not found after the first has run.
#pragma once

#include <string>

#include "analysis/run_memory.h"
#include "common/errors.h"
#include "config/run_config.h"

namespace shardscope {

// A refused run: field() is the config key at fault ("profile"), or "" when it
// is the run as a whole (its memory).
class RunRefused : public ConfigError {
 public:
  RunRefused(std::string field, const std::string& what) : ConfigError(what), m_field(std::move(field)) {}
  const std::string& field() const { return m_field; }

 private:
  std::string m_field;
};

// Throws RunRefused. force_hint ends the memory message (the CLI's "--force
// tries anyway"; "" where there is no such switch).
void preflightRun(const RunConfig& config, const MachineMemory& machine, const std::string& force_hint = "");

}  // namespace shardscope
