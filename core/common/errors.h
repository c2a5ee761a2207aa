// Error types that reach the user. ConfigError: bad input (exit code 2), its
// message names the field, the rule and a hint. RunError: a run stopped (a
// collective mismatch or hang, exit code 3). ResourceError: the machine or the
// process's limits refused what a run needs (a thread, memory); inside a run
// it stops the run like any other error. RunAborted unwinds the other
// threads of a run that has already failed or was cancelled: never reported.
#pragma once

#include <new>
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

class ResourceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RunAborted : public std::runtime_error {
 public:
  RunAborted() : std::runtime_error("run aborted") {}
};

// An exception's message for a user: std::bad_alloc says only "std::bad_alloc".
inline std::string failureText(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr)
    return std::string("out of memory (") + e.what() +
           "): the run needs more than the machine (or ulimit -v) gives this process; lower --hidden, --layers or "
           "--batch, or shard the model state (--strategy zero3)";
  return e.what();
}

}  // namespace shardscope
