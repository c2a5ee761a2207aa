// Error types that reach the user. ConfigError: bad input (exit code 2), its
// message names the field, the rule and a hint. RunError: a run stopped (a
// collective mismatch or hang, exit code 3). RunAborted unwinds the other
// threads of a run that has already failed or was cancelled: never reported.
#pragma once

#include <stdexcept>
#include <string>

namespace shardscope {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RunAborted : public std::runtime_error {
 public:
  RunAborted() : std::runtime_error("run aborted") {}
};

}  // namespace shardscope
